"""Plain events the engine emits. No Qt: the GUI bridges these to signals on its own thread."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Callable, Literal

from workbench.core.domain.measurement import Trial
from workbench.core.domain.space import Config

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrialStarted:
    config: Config
    worker: str


@dataclass(frozen=True)
class TrialFinished:
    trial: Trial


@dataclass(frozen=True)
class Progress:
    done: int  # evaluations finished in this run
    total: int | None  # evaluation budget (None when only a time limit applies)
    failures: int
    elapsed_s: float
    eta_s: float | None
    best_latency_ms: float | None
    #: Trials of this run simulated with estimated resources while their compile runs in the
    #: background, and those since refined with the compiled figures (the sim backend).
    compiles_pending: int = 0
    refined: int = 0
    #: Candidates stopped early as hopeless under the latency limit (status ``aborted``): kept
    #: facts with a latency bound, re-measurable when the limit is relaxed; not counted in
    #: ``failures``, which are candidates that could not be measured.
    aborted: int = 0
    #: Seconds the workers have been starting with none ready yet (None once one is, or before a
    #: start is worth saying): a python benchmark's module loads in each, and a start that hangs
    #: is given up only after the pool's start allowance, whatever the per-candidate timeout.
    starting_s: float | None = None


@dataclass(frozen=True)
class TrialRefined:
    """A trial re-measured in place (same index) once what it was waiting for landed."""

    before: Trial
    trial: Trial


#: Why a run ended ("interrupted": Ctrl-C or a stop signal; "exhausted": the strategy had nothing
#: left to propose).
EndReason = Literal["budget", "time_limit", "exhausted", "stopped", "plateau", "error", "interrupted"]

#: Each end in a word or two, as a status line says it (every reason has one: a test checks).
END_WORDS: dict[EndReason, str] = {
    "budget": "budget", "time_limit": "time limit", "exhausted": "nothing left to measure",
    "stopped": "stopped", "plateau": "no improvement", "error": "error", "interrupted": "interrupted",
}


@dataclass(frozen=True)
class RunFinished:
    reason: EndReason
    evaluations: int
    message: str = ""


Event = TrialStarted | TrialFinished | TrialRefined | Progress | RunFinished


class Subscribers:
    """The observers of a run: subscribed and unsubscribed from any thread, called in the
    emitting thread. One implementation for every kind of run (a single run's engine, a sweep
    over sizes), so that they agree on what unsubscribing mid-event means: a callback removed
    while an event is being delivered still gets that event, none after it."""

    def __init__(self) -> None:
        self._callbacks: list[Callable[[Event], None]] = []
        self._lock = threading.Lock()
        self._failed: set[int] = set()  # ids of callbacks whose error was said (see emit)

    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Call ``callback(event)`` for every event from now on; returns an unsubscriber."""
        with self._lock:
            self._callbacks.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._callbacks:
                    self._callbacks.remove(callback)

        return unsubscribe

    def emit(self, event: Event) -> None:
        """Deliver ``event`` to every callback. One that raises is said once, with its traceback,
        and keeps getting events: raised on through the engine, a script's failing callback ended
        the run at once and skipped its final save (the trials were left in the journal only), and
        a window's would stop the progress it shows. (``KeyboardInterrupt`` and other exits still
        pass: they are the person's, or the program's, to stop the run with.)"""
        with self._lock:
            callbacks = list(self._callbacks)
        for callback in callbacks:
            try:
                callback(event)
            except Exception:  # noqa: BLE001 - an observer's fault is not the run's
                with self._lock:
                    said = id(callback) in self._failed
                    self._failed.add(id(callback))
                if not said:
                    _log.error("a subscriber of the run (%r) raised on %s; the run goes on, and further "
                               "errors of this subscriber are not said", callback, type(event).__name__,
                               exc_info=True)
