"""A prepared run (:class:`Run`): its session, its engine and the lock on its output until it ends.

The run controller (:mod:`workbench.runner.controller`) builds one from a request; whoever started
it (the command line, the window, a script) controls it from here: run, pause, stop, subscribe,
and re-target its search with a new objective, checked as the run's start checked its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable, Sequence, cast

from workbench.backends.base import BackendSpec
from workbench.core.errors import WorkbenchError
from workbench.core.domain.metrics import check_metrics
from workbench.core.domain.records import StrategyInfo
from workbench.core.domain.search_objective import Objective
from workbench.core.domain.session import Session
from workbench.core.io.session_lock import SessionLock
from workbench.runner.engine import Engine
from workbench.runner.events import Event, RunFinished
from workbench.runner.running import measuring_into
from workbench.search.base import STRATEGIES, strategy_class


class Run:
    """A prepared run: its session, its engine, and the lock on its output until it ends.

    Control methods (``pause``, ``resume``, ``stop``, ``subscribe``) may be called from any thread;
    :meth:`run` blocks the calling thread until the run ends.
    """

    def __init__(self, session: Session, engine: Engine, spec: BackendSpec, output: Path | None,
                 lock: SessionLock | None, continued: bool) -> None:
        self.session = session
        self.engine = engine
        self.spec = spec
        self.output = output
        self.lock = lock
        self.continued = continued
        #: Things worth telling the person that do not stop the run (a metric only the run will show).
        self.warnings: list[str] = []
        self._started = False
        #: What an objective set mid-run is checked against as the run's start checked its own (see
        #: :meth:`set_objective`): the metrics the backend declares or the trials report (None: a
        #: backend that cannot say ahead), the space's slot names, and whether the strategy searches
        #: a Pareto front.
        self.metrics: frozenset[str] | None = None
        self.slots: tuple[str, ...] = ()
        self.multi_objective = False
        self.strategy_name = str(session.strategy.get("name") or "")
        #: The sweep this run measures one size of (its session is the sweep's: see :mod:`running`).
        self.measured_for: Any = None

    def run(self) -> RunFinished:
        """Run to the end; the engine saves the session; the lock is released however it ends.

        Once only: the lock is gone after the first end, and a second run would write the session
        without it, beside any writer that took the file meanwhile."""
        if self._started:
            raise WorkbenchError("this run was already started; prepare a new one (its lock is gone)")
        with measuring_into(self.session, self.measured_for or self):  # (refused: not started, its lock kept)
            self._started = True
            try:
                return self.engine.run()
            finally:
                self.release()

    def release(self) -> None:
        if self.lock is not None:
            self.lock.release()

    @property
    def saved(self) -> bool:
        """Whether the run's end wrote the session to :attr:`output` (a failed save leaves the journal)."""
        return self.engine.saved

    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        return self.engine.subscribe(callback)

    def save_output(self, save: Callable[[], object]) -> None:
        """Run ``save``, a save of this run's output made elsewhere in this process (see
        :meth:`Engine.save_output`)."""
        self.engine.save_output(save)

    def pause(self) -> None:
        self.engine.pause()

    def resume(self) -> None:
        self.engine.resume()

    def stop(self) -> None:
        """End the run from any thread: no new candidate starts; those running finish or time out
        (each within its run's timeout) and are recorded, so ``run()`` returns after them."""
        self.engine.stop()

    def set_objective(self, objective: Objective) -> None:
        """Re-target the running search (constraints or weights changed), and record the new
        objective in the session, so that what is saved, shown and continued is what was searched.

        Checked as the run's start checked its own: a bound no measurement could meet, a metric the
        backend neither declares nor any trial reports, several objectives for a strategy that
        searches one score, a run that has ended. Any of them is refused with the run left on the
        objective it had: taken, the search followed a typo (nothing feasible for the rest of the
        run) and saved a session no run could continue, and after the end only the session in
        memory changed, which the file and the search never saw.
        """
        if not isinstance(objective, Objective):
            raise WorkbenchError(f"set_objective takes an Objective (its constraints, weights and objectives), "
                                 f"not {type(objective).__name__}")
        if self.engine.finished is not None:
            raise WorkbenchError(f"the run has ended ({self.engine.finished.reason}): its session keeps the "
                                 "objective it was searched for; prepare a new run to search for another")
        self.check_objective(objective)
        self.session.constraints = objective.constraints
        self.session.weights = objective.weights
        # a new record, not an edit of the one the engine's thread may be saving right now
        strategy = cast(StrategyInfo, {k: v for k, v in self.session.strategy.items() if k != "objectives"})
        if objective.objectives:
            strategy["objectives"] = list(objective.objectives)
        self.session.strategy = strategy
        self.engine.set_objective(objective)

    def check_objective(self, objective: Objective) -> None:
        """Refuse ``objective`` where this run's start would have refused it (see :meth:`set_objective`)."""
        check_objective_for(objective, self.metrics, self.slots, self.strategy_name, self.multi_objective)

    @property
    def objective(self) -> Objective | None:
        """The objective the search follows now (the last one set, once the engine took it)."""
        return self.engine.objective

    @property
    def paused(self) -> bool:
        return self.engine.paused

    @property
    def budget(self) -> int | None:
        return self.engine.budget

    @property
    def refined(self) -> int:
        """Trials simulated with estimated resources and refined in place when their compile landed."""
        return self.engine.refined


def check_objective_for(objective: Objective, metrics: Iterable[str] | None, slots: Sequence[str],
                        strategy_name: str, multi_objective: bool) -> None:
    """Refuse an objective a run of ``strategy_name`` over a space of ``slots`` could not search:
    constraints no measurement meets, a metric outside ``metrics`` (what the backend declares and
    the trials report; None: a backend that cannot say ahead, whose names are all taken), several
    objectives for a strategy of one score (``multi_objective``). (A weight without a direction
    cannot be in an :class:`Objective`: building one refuses it.)"""
    objective.constraints.check_possible()
    if metrics is not None:
        objective.constraints.check_declared_amounts(metrics)
    weighted = [m for m, w in objective.weights.values.items() if w > 0]
    named = dict.fromkeys([*weighted, *(b.metric for b in objective.constraints.bounds()), *objective.objectives])
    check_metrics(named, metrics, objective.weights.directions, slots=slots)
    if objective.objectives and not multi_objective:
        multi = sorted(n for n in STRATEGIES if strategy_class(n).multi_objective)
        raise WorkbenchError(f"objectives {', '.join(objective.objectives)}: strategy {strategy_name!r} searches one "
                             f"score; a Pareto front is searched by {', '.join(multi)} (started with it)")
