"""The inline executor: candidates evaluated one after another in the calling process.

Worker processes exist for isolation: a candidate that hangs is killed at its timeout, one that
crashes takes down only its worker. The ``sim`` and ``replay`` backends run no kernel (a model or a
table answers) and, with a shipped or declarative template, no user code, so for them a process
per worker buys nothing but start-up time and a pipe per candidate. :class:`InlinePool` builds the backend once in this process and evaluates each
submitted config in the thread that asks for results, with the same surface as
:class:`~workbench.runner.pool.WorkerPool`: every candidate comes back exactly once from
:meth:`results`, with its seconds per phase.

What it gives up is what the worker pool is for: no per-candidate timeout (a slow evaluation
delays the run, it is not cut off) and no crash isolation. Runs planned from a request (the command
line, the window) therefore get it only for ``sim`` and ``replay`` (:func:`check_inline`); code that
builds an engine itself may hand it any backend whose candidates it knows neither hang nor crash.
"""

from __future__ import annotations

import time
from collections import deque
from pathlib import Path
from typing import Any, Callable

from workbench.backends.base import BackendSpec, EvalLimits, create_backend
from workbench.core.errors import WorkbenchError, quoted
from workbench.core.domain.space import Config
from workbench.runner.pool import Result, ResultQueue, WorkerStartupError, worker_spec
from workbench.runner.worker import PhaseClock, evaluate_candidate, startup_reason, trial_timings

#: Backends whose candidates run no kernel, so they need no process of their own (with a template
#: whose spec is not the user's Python: see :func:`check_inline`).
INLINE_BACKENDS = ("sim", "replay")


def check_inline(spec: BackendSpec) -> None:
    """Refuse, in one line, a run whose candidates need a process of their own: a backend that runs
    kernels or benchmark code, or a simulated template whose Python spec (its geometry and work
    profile are called for every candidate) is the user's own rather than the shipped library's
    or a declarative one."""
    kind = spec.kind
    if kind not in INLINE_BACKENDS:
        raise WorkbenchError(template=(
            f"{{executor:inline}} runs candidates in this process, without per-candidate timeouts or crash "
            f"isolation, so it serves only the {' and '.join(INLINE_BACKENDS)} backends, not {quoted(kind)}; "
            "use {executor:local}"
        ))
    if kind == "sim" and spec.options.get("kernel"):  # any template of the person's folders may hold code
        from workbench.backends.templated import load_template_for
        from workbench.core.domain.templates import kernels_dir

        template = load_template_for(spec)
        path = Path(template.path) if template.path else None
        shipped = path is not None and path.resolve().parent == kernels_dir().resolve()
        if path is not None and path.suffix == ".py" and not shipped:
            raise WorkbenchError(template=(
                f"{{executor:inline}}: template {quoted(repr(template.name))} is a Python spec ({quoted(path)}) whose "
                "code runs for every candidate, here without a timeout; use {executor:local}"
            ))
        if template.reference_runs_a_file and not shipped:  # the spec's reference is the user's Python
            raise WorkbenchError(template=(
                f"{{executor:inline}}: template {quoted(repr(template.name))} computes its reference with a Python "
                "file of its own, which runs only in a worker process (with its timeout); use {executor:local}"
            ))


class InlinePool(ResultQueue):
    """``workers`` slots served by one backend in this process, evaluating submitted configs in turn.

    ``workers`` only sets how many candidates the pool accepts at once (its :attr:`idle_count`), so
    a strategy is asked for the same batches as with that many worker processes; evaluations still
    run one at a time, in the thread that calls :meth:`results` or :meth:`poll`. Any backend is
    accepted here; the isolation rule is :func:`check_inline`'s, applied when a run is planned. ``limits`` reach the
    backend as with a worker (no timeout is enforced). ``on_start(config, worker_name)`` is called when
    a candidate begins. A backend that cannot be built or prepared is reported as the worker pool
    reports it: :attr:`error` is set and :meth:`results` raises it.
    """

    def __init__(
        self,
        spec: BackendSpec,
        workers: int = 1,
        limits: EvalLimits = EvalLimits(),
        on_start: Callable[[Config, str], None] | None = None,
        **_ignored: Any,
    ) -> None:
        if workers < 1:
            raise WorkbenchError(f"need at least one worker, got {workers}")
        self.spec = spec
        self.limits = limits
        self.on_start = on_start
        self._slots = workers
        self._pending: deque[Config] = deque()
        self._done: list[Result] = []
        self._error: WorkerStartupError | None = None
        self._closed = False
        self._next_slot = 0
        self._backend: Any = None
        try:
            backend = create_backend(worker_spec(spec, 0))
            backend.prepare()
        except Exception as exc:  # noqa: BLE001 - any failure to build the backend is reported like a worker that could not start
            self._error = WorkerStartupError(f"{spec.kind} backend failed to start: {startup_reason(exc)}")
        else:
            self._backend = backend
        self._clock = PhaseClock(None)

    # --- the pool surface (see WorkerPool) -------------------------------------------------------
    def submit(self, config: Config) -> None:
        """Queue a config; it is evaluated at the next :meth:`results` or :meth:`poll`."""
        if self._closed:
            raise WorkbenchError("the worker pool is closed")
        self._pending.append(config)

    @property
    def in_flight(self) -> int:
        """Candidates submitted and not yet returned by :meth:`results`."""
        return len(self._pending) + len(self._done)

    @property
    def busy(self) -> bool:
        return self.in_flight > 0

    @property
    def idle_count(self) -> int:
        """How many more candidates the pool accepts (its slots less those queued); 0 after an error."""
        if self._error is not None:
            return 0
        return max(0, self._slots - len(self._pending))

    @property
    def workers(self) -> int:
        return self._slots

    @property
    def error(self) -> WorkerStartupError | None:
        return self._error

    @property
    def starting_s(self) -> float | None:
        """None: this process is the worker, started already."""
        return None

    def close(self) -> None:
        """Close the backend; candidates still queued are abandoned."""
        if self._closed:
            return
        self._closed = True
        self._pending.clear()
        if self._backend is not None:
            backend, self._backend = self._backend, None
            backend.close()

    # --- ResultQueue hooks -----------------------------------------------------------------------
    def _running(self) -> bool:
        return False  # an evaluation starts and ends inside one _step

    def _step(self, wait_s: float | None) -> None:
        """Evaluate the next queued config; with nothing queued, wait (a caller polling for capacity)."""
        if not self._pending or self._backend is None:
            if wait_s:
                time.sleep(min(wait_s, 0.05))
            return
        config = self._pending.popleft()
        name = f"inline-{self._next_slot}"
        self._next_slot = (self._next_slot + 1) % self._slots
        if self.on_start is not None:
            self.on_start(config, name)
        self._clock.begin(0)
        started = time.monotonic()
        _, measurement = evaluate_candidate(self._backend, config, self.limits, self._clock)
        timings = trial_timings(self._backend, config, self._clock.finish(started))
        self._done.append(Result(config, measurement, timings, name))
