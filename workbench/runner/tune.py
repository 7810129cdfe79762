"""One headless tuning run from start to saved session: the command line, the GPU check script and
tests all go through here, so a run behaves the same whoever starts it."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
import dataclasses
from typing import Any, Callable, Iterable, Mapping, Sequence

from workbench.backends.base import BackendSpec, EvalLimits
from workbench.core.objective import Constraints, Weights
from workbench.core.search_objective import Objective
from workbench.core.errors import WorkbenchError
from workbench.core.measurement import Status, Trial
from workbench.core.session import Session, load_session, save_session
from workbench.core.space import Config
from workbench.runner.costmodel import sim_predictor
from workbench.runner.engine import Engine
from workbench.runner.events import RunFinished
from workbench.runner.executors import ExecutorChoice, plan_execution
from workbench.runner.plan import new_session, open_target
from workbench.search.pruning import with_pruning
from workbench.search.base import DEFAULT_STRATEGY, create_strategy, strategy_class
from workbench.search.listed import Listed

log = logging.getLogger(__name__)


@dataclass
class TuneRequest:
    """Everything a run needs besides the backend spec."""

    strategy: str = DEFAULT_STRATEGY
    seed: int = 0
    budget: int | None = 100
    time_limit_s: float | None = None
    #: Worker processes (Ray: actors). None: one per chosen GPU with ``cuda`` (local), one per
    #: cluster GPU/CPU (Ray), else 1.
    workers: int | None = 1
    limits: EvalLimits = field(default_factory=EvalLimits)
    constraints: Constraints = field(default_factory=Constraints)
    weights: Weights = field(default_factory=Weights)
    strategy_options: Mapping[str, Any] = field(default_factory=dict)
    patience: int | None = None
    executor: str = "local"  # "local" or "ray"
    ray_address: str | None = None  # None: a local Ray instance
    devices: tuple[int, ...] | None = None  # cuda, local: the GPUs to use (None: all visible)
    allow_mixed_gpus: bool = False  # rank timings from different GPU models together
    #: Cost-model pruning: measure only this fraction of the strategy's proposals, the ones the
    #: performance model ranks best (None or 1: no pruning). Template backends only.
    prune_keep: float | None = None
    #: Two or more metrics to search a Pareto front of (a multi-objective run); empty: one score.
    objectives: tuple[str, ...] = ()


def run_tune(
    spec: BackendSpec,
    request: TuneRequest,
    out: str | Path | None,
    listeners: Iterable[Callable[[Any], None]] = (),
) -> tuple[Session, RunFinished]:
    """Plan, run and (when ``out`` is given) save a tuning session; the journal covers a crash."""
    choice = ExecutorChoice(request.executor, request.ray_address, request.devices, request.allow_mixed_gpus)
    plan = plan_execution(spec, choice, request.workers, batch_parallel=strategy_class(request.strategy).batch_parallel)
    for note in plan.notes:
        log.warning("%s: %s", request.strategy, note)
    spec = plan.spec
    target = open_target(spec)
    strategy = create_strategy(request.strategy, target.space, seed=request.seed, **dict(request.strategy_options))
    if request.prune_keep is not None and request.prune_keep < 1.0:
        predictor = sim_predictor(spec, str(target.device.get("name", "")))
        strategy = with_pruning(strategy, predictor, request.prune_keep)
    session = new_session(spec, target, strategy=request.strategy, seed=request.seed,
                          strategy_options=request.strategy_options, constraints=request.constraints,
                          weights=request.weights)
    if request.prune_keep is not None and request.prune_keep < 1.0:
        session.strategy["prune_keep"] = request.prune_keep
    if request.objectives:
        session.strategy["objectives"] = list(request.objectives)
    engine = Engine(session, strategy, spec, budget=request.budget, time_limit_s=request.time_limit_s,
                    workers=plan.workers, limits=request.limits, patience=request.patience,
                    out_path=Path(out) if out is not None else None, pool_factory=plan.pool_factory,
                    objective=Objective(request.constraints, request.weights, request.objectives))
    for listener in listeners:
        engine.subscribe(listener)
    finished = engine.run()
    if out is not None:
        save_session(session, out)
    return session, finished


def aborted_worth_remeasuring(trials: Sequence[Trial], objective: Objective) -> list[Config]:
    """Configs whose latest trial was aborted and whose latency bound no longer rules them out
    under ``objective`` (a relaxed latency constraint, or none), in evaluation order."""
    latest: dict[str, Trial] = {}
    for trial in trials:
        latest[trial.config.id] = trial
    return [t.config for t in latest.values() if objective.worth_remeasuring(t)]


def remeasure_aborted(
    path: str | Path,
    constraints: Constraints | None = None,
    weights: Weights | None = None,
    limits: EvalLimits = EvalLimits(),
    workers: int = 1,
    listeners: Iterable[Callable[[Any], None]] = (),
) -> tuple[Session, RunFinished, int]:
    """Measure again, with the session's own backend, every aborted candidate that the objective
    in force (the session's, or the given constraints and weights, which become the session's)
    no longer rules out; the new trials are added beside the aborted ones, and the file updated.
    Returns the session, how the run ended and how many configs were re-measured."""
    session = load_session(path)
    objective = Objective(constraints or session.constraints, weights or session.weights)
    configs = aborted_worth_remeasuring(session.trials, objective)
    if not configs:
        aborted = sum(t.status is Status.ABORTED for t in session.trials)
        why = (f"{aborted} aborted trials, none below the latency limit in force" if aborted
               else "no aborted trials")
        return session, RunFinished("exhausted", 0, f"nothing to re-measure: {why}"), 0
    backend = session.backend if isinstance(session.backend, dict) else {}
    if not backend.get("kind"):
        raise WorkbenchError(f"{path}: the session does not say which backend measured it")
    spec = BackendSpec(str(backend["kind"]), dict(backend.get("options") or {}))
    session.constraints, session.weights = objective.constraints, objective.weights
    strategy = Listed(session.space, configs=configs)
    engine = Engine(session, strategy, spec, budget=len(configs), workers=workers,
                    limits=dataclasses.replace(limits, max_latency_ms=objective.max_latency_ms),
                    output=Path(path), objective=objective, remeasure={c.id for c in configs})
    for listener in listeners:
        engine.subscribe(listener)
    finished = engine.run()
    save_session(session, path)
    return session, finished, len(configs)
