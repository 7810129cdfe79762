"""Plain events the engine emits. No Qt: the GUI bridges these to signals on its own thread."""

from __future__ import annotations

from dataclasses import dataclass

from workbench.core.domain.measurement import Trial
from workbench.core.domain.space import Config


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


@dataclass(frozen=True)
class TrialRefined:
    """A trial re-measured in place (same index) once what it was waiting for landed."""

    before: Trial
    trial: Trial


@dataclass(frozen=True)
class RunFinished:
    reason: str  # "budget", "time_limit", "exhausted", "stopped", "plateau", "error"
    evaluations: int
    message: str = ""


Event = TrialStarted | TrialFinished | TrialRefined | Progress | RunFinished
