"""A size sweep as one run: one tuning per problem size, in one session, one size after another.

The run controller builds each size's run (:func:`workbench.runner.controller.start_run` with
``RunRequest.sizes``); this object strings them together behind the surface of a single
:class:`~workbench.runner.run.Run` (``run``, ``pause``, ``resume``, ``stop``, ``subscribe``,
``set_objective``), so the command line and the window drive a sweep exactly as they drive one run.
Each size is prepared only when the one before it has ended, so that its warm start sees what the
earlier sizes found. Listeners see progress over the whole sweep (evaluations done of all sizes'
budgets) and one ``RunFinished`` at its end; the session file is saved after every size, and its
journal carries every trial with its problem, so a killed sweep resumes where it stopped.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from workbench.core.domain.search_objective import Objective
from workbench.core.domain.session import Session
from workbench.core.domain.session import problem_key
from workbench.core.domain.sizes import set_sweep_plan, sweep_plan, trials_by_problem
from workbench.core.errors import WorkbenchError, counted
from workbench.core.io.session_lock import SessionLock
from workbench.runner.running import measuring_into
from workbench.runner.events import EndReason, Event, Progress, RunFinished, Subscribers

#: ``prepare(problem, budget) -> Run``: the controller's builder of one size's run.
PrepareSize = Callable[[Mapping[str, Any], int], Any]


@dataclasses.dataclass(frozen=True)
class SizeRun:
    """One size still to measure in this sweep, and how many evaluations it gets."""

    problem: Mapping[str, Any]
    budget: int


class SweepRun:
    """The sizes of a sweep still to measure, run one after another under one lock."""

    def __init__(self, session: Session, todo: Sequence[SizeRun], prepare: PrepareSize, output: Path | None,
                 lock: SessionLock | None, continued: bool, spec: Any, warnings: Sequence[str] = (),
                 *, searches: bool = False, checked_by: Any = None) -> None:
        self.session = session
        #: Whether each size's run is the sweep's own search (not a refinement, a re-measurement or
        #: missing cells measured): only its end says whether the size ended by its own rule.
        self.searches = searches
        self.todo = list(todo)
        self._prepare = prepare
        self.output = output
        self.lock = lock
        self.continued = continued
        self.spec = spec
        self.warnings: list[str] = list(warnings)
        self.current: Any = None
        #: Index into ``todo`` of the size being measured (-1 before the first).
        self.position = -1
        self.evaluations = 0
        self.refined_total = 0
        self._subscribers = Subscribers()
        self._lock = threading.Lock()
        #: Shared by the sizes' runs and save_output: see Engine.share_output_lock.
        self._output_lock = threading.RLock()
        self._stopped = False
        self._paused = False
        self._objective: Objective | None = None
        #: A run whose checks an objective set on the sweep passes first (see :meth:`set_objective`):
        #: the size measuring now, else the last one, else the run that planned the sweep.
        self._checker: Any = checked_by
        self.finished: RunFinished | None = None
        #: Seconds each size's run waits for background compiles before its end (the engine's
        #: ``refine_wait_s``, None: its default), and the trials left with estimates so far.
        self.refine_wait_s: float | None = None
        self._unrefined = 0
        #: What the sizes measured so far add to the progress of the size being measured (each
        #: size's run counts from zero): failures, aborted candidates, and the seconds they spent
        #: paused. The sweep's running time is its own clock's, less the pauses: preparing each
        #: size (its target, its warm start) and saving it are part of what the sweep takes, and
        #: an ETA from the runs' own clocks left them out.
        self._failures_done = self._aborted_done = 0
        self._paused_done = 0.0
        self._t0: float | None = None
        #: Whether the last size's run wrote the session (a failed save leaves the journal, a
        #: failed start of a size nothing); a sweep with no size to measure leaves its file as it was.
        self.saved = True
        self._started = False

    # --- the Run surface -----------------------------------------------------------------------
    @property
    def engine(self) -> "SweepRun":
        """What callers of a single run reach through ``run.engine`` (``refine_wait_s``,
        ``unrefined``) a sweep answers for all its sizes."""
        return self

    @property
    def unrefined(self) -> int:
        """Trials of this sweep still holding estimated resources (every size so far)."""
        current = self.current.engine.unrefined if self.current is not None else 0
        return self._unrefined + current

    @property
    def budget(self) -> int:
        return sum(item.budget for item in self.todo)

    @property
    def refined(self) -> int:
        current = self.current.refined if self.current is not None else 0
        return self.refined_total + current

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def problem(self) -> Mapping[str, Any] | None:
        """The problem being measured now (None before the first size starts)."""
        return self.todo[self.position].problem if 0 <= self.position < len(self.todo) else None

    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        return self._subscribers.subscribe(callback)

    def save_output(self, save: Callable[[], object]) -> None:
        """Run ``save``, a save of the sweep's output made elsewhere in this process, through the
        size's run measuring now (see :meth:`Engine.save_output`), under the lock the sizes' runs
        share: a save between sizes ends before the next size's run first looks at the file."""
        with self._output_lock:
            with self._lock:
                current = self.current
            if current is not None:
                current.save_output(save)
            else:
                save()

    def pause(self) -> None:
        with self._lock:
            self._paused = True
            current = self.current
        if current is not None:
            current.pause()

    def resume(self) -> None:
        with self._lock:
            self._paused = False
            current = self.current
        if current is not None:
            current.resume()

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            current = self.current
        if current is not None:
            current.stop()

    @property
    def objective(self) -> Objective | None:
        """The objective the size being measured follows (else the last one set, or None)."""
        with self._lock:
            current, objective = self.current, self._objective
        return current.objective if current is not None and current.objective is not None else objective

    def set_objective(self, objective: Objective) -> None:
        """Re-target the size measuring now and every size after it; refused, as a single run's
        :meth:`~workbench.runner.run.Run.set_objective` refuses it, before anything changes
        (stored unchecked, an objective the next size's start refused ended the sweep there)."""
        if not isinstance(objective, Objective):
            raise WorkbenchError(f"set_objective takes an Objective (its constraints, weights and objectives), "
                                 f"not {type(objective).__name__}")
        if self.finished is not None:
            raise WorkbenchError(f"the run has ended ({self.finished.reason}): its session keeps the objective it "
                                 "was searched for; prepare a new run to search for another")
        with self._lock:
            checker = self.current if self.current is not None else self._checker
        if checker is not None:
            checker.check_objective(objective)
        else:
            objective.constraints.check_possible()
        with self._lock:
            self._objective = objective
            current = self.current
        if current is not None and current.engine.finished is None:  # (one that ended: the next size takes it)
            current.set_objective(objective)

    def release(self) -> None:
        if self.lock is not None:
            self.lock.release()

    # --- running -------------------------------------------------------------------------------
    def run(self) -> RunFinished:
        """Measure every size still to do; the lock is released however it ends. Once only, as
        :meth:`workbench.runner.run.Run.run`: a second run would write without the lock."""
        if self._started:
            raise WorkbenchError("this run was already started; prepare a new one (its lock is gone)")
        with measuring_into(self.session, self):  # (refused: not started, its lock kept)
            self._started = True
            return self._run_sizes()

    def _run_sizes(self) -> RunFinished:
        self._t0 = time.monotonic()
        reason: EndReason = "budget"
        message = ""
        ends: list[EndReason] = []
        previous: Any = None
        try:
            for position, item in enumerate(self.todo):
                with self._lock:
                    if self._stopped:
                        reason, message = "stopped", "stopped on request"
                        break
                    self.position = position
                offset = self.evaluations
                self.saved = False  # until this size's run has written the session (its prepare may fail)
                run = self._prepare(item.problem, item.budget)
                run.engine.share_output_lock(self._output_lock)
                run.measured_for = self
                with self._lock:
                    self.current = self._checker = run
                    objective, paused, stopped = self._objective, self._paused, self._stopped
                if self.refine_wait_s is not None:
                    run.engine.refine_wait_s = self.refine_wait_s
                if previous is not None:  # a demonstration's pace holds across sizes
                    run.engine.hand_pace_from(previous.engine)
                if self.searches:
                    run.engine.on_end = lambda end, problem=item.problem: self._note_end(problem, end)
                if objective is not None:
                    run.set_objective(objective)
                if paused:
                    run.pause()
                if stopped:
                    run.stop()
                run.subscribe(lambda event, offset=offset: self._forward(event, offset))
                finished = run.run()
                previous = run
                self.evaluations += finished.evaluations
                self.refined_total += getattr(run, "refined", 0)
                self._unrefined += run.engine.unrefined
                self._failures_done += run.engine.failures
                self._aborted_done += run.engine.aborted
                self._paused_done += run.engine.paused_s
                self.saved = run.engine.saved
                with self._lock:
                    self.current = None
                if finished.reason in ("stopped", "error"):
                    reason, message = finished.reason, finished.message
                    break
                ends.append(finished.reason)
            else:
                # each size ends by its own rule (budget, patience, time limit: all are per size):
                # the sweep's reason is the one most sizes ended by (the earliest size's on a tie), and
                # the summary counts them
                reason = max(ends, key=ends.count) if ends else "budget"
                message = self._summary(ends)
        except KeyboardInterrupt as exc:  # the size's own end is not passed on (_forward): the sweep's is said
            with self._lock:
                current = self.current
            done = self.evaluations + (current.engine.evaluations if current is not None else 0)
            self._emit(RunFinished("interrupted", done, str(exc) or "interrupted"))
            raise
        finally:
            self.release()
        result = self.finished = RunFinished(reason, self.evaluations, message or self._summary())
        self._emit(result)
        return result

    def _note_end(self, problem: Mapping[str, Any], reason: str) -> None:
        """Keep in the session's plan whether this size ended by its own rule, and at how many
        trials (see :attr:`SweepPlan.ended`), before its run saves the session. A plan that does
        not read (a hand-edited file, which opening it said) is left as it is: the save comes first."""
        try:
            plan = sweep_plan(self.session)
        except WorkbenchError:
            return
        if plan is not None:
            trials = len(trials_by_problem(self.session).get(problem_key(problem), ()))
            set_sweep_plan(self.session, plan.with_end(problem, reason, trials))

    def _summary(self, ends: Sequence[str] = ()) -> str:
        text = f"{counted(len(self.todo), 'size')} measured, {counted(self.evaluations, 'evaluation')}"
        if len(set(ends)) > 1:
            text += "; sizes ended by " + ", ".join(f"{r} ({ends.count(r)})" for r in dict.fromkeys(ends))
        return text

    def _emit(self, event: Event) -> None:
        self._subscribers.emit(event)

    def elapsed_s(self) -> float:
        """Seconds since the sweep started, pauses left out (0 before it starts)."""
        if self._t0 is None:
            return 0.0
        with self._lock:
            current = self.current
        paused = self._paused_done + (current.engine.paused_s if current is not None else 0.0)
        return max(0.0, time.monotonic() - self._t0 - paused)

    def _forward(self, event: Event, offset: int) -> None:
        """Pass a size's events on: progress counted over the whole sweep (evaluations, failures,
        aborted candidates, running time; the best latency is the size's own), no per-size end."""
        if isinstance(event, RunFinished):
            return
        if isinstance(event, Progress):
            done = offset + event.done
            total = self.budget
            elapsed = self.elapsed_s()
            eta = event.eta_s
            if done > 0 and elapsed > 0 and total:
                engine = self.current.engine if self.current is not None else None
                rate = max(elapsed / done, engine.pace_s if engine is not None else 0.0)
                eta = rate * max(0, total - done)
                limit = getattr(engine, "time_limit_s", None)
                if limit is not None and event.eta_s is not None:
                    # each size's run ends at its time limit: the size being measured has what its
                    # own run says is left, each later one its evaluations at this rate, or its limit
                    later = self.todo[self.position + 1:]
                    eta = event.eta_s + sum(min(rate * size.budget, limit) for size in later)
            event = dataclasses.replace(event, done=done, total=total, eta_s=eta, elapsed_s=elapsed,
                                        failures=self._failures_done + event.failures,
                                        aborted=self._aborted_done + event.aborted)
        self._emit(event)
