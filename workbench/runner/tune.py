"""One headless tuning run from start to saved session: the command line, the GPU check script and
tests all go through here, so a run behaves the same whoever starts it."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from workbench.backends.base import BackendSpec, EvalLimits
from workbench.core.objective import Constraints, Weights
from workbench.core.search_objective import Objective
from workbench.core.session import Session, save_session
from workbench.runner.costmodel import sim_predictor
from workbench.runner.engine import Engine
from workbench.runner.events import RunFinished
from workbench.runner.executors import ExecutorChoice, plan_execution
from workbench.runner.plan import new_session, open_target
from workbench.search.pruning import with_pruning
from workbench.search.base import DEFAULT_STRATEGY, create_strategy, strategy_class

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
    engine = Engine(session, strategy, spec, budget=request.budget, time_limit_s=request.time_limit_s,
                    workers=plan.workers, limits=request.limits, patience=request.patience,
                    out_path=Path(out) if out is not None else None, pool_factory=plan.pool_factory,
                    objective=Objective(request.constraints, request.weights))
    for listener in listeners:
        engine.subscribe(listener)
    finished = engine.run()
    if out is not None:
        save_session(session, out)
    return session, finished
