"""Cost-model pruning wired into a real run: the simulator's prediction picks what gets measured."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.core.errors import WorkbenchError
from workbench.runner.costmodel import sim_predictor
from workbench.runner.plan import make_backend_spec
from workbench.runner.controller import RunRequest, run_to_end


def _latencies(prune: float | None) -> np.ndarray:
    spec = make_backend_spec("reduce_sum", "sim", noise=False, extra={"compile": "estimate"})
    session, _ = run_to_end(RunRequest(spec=spec, strategy="random", seed=4, budget=24, prune_keep=prune,
                                         executor="inline"), None)
    assert len(session.trials) == 24
    if prune is not None:
        assert session.run.prune_keep == prune
    return np.array([t.metric("latency_ms") for t in session.trials if t.ok])


def test_pruning_measures_the_configs_the_model_ranks_best() -> None:
    plain, pruned = _latencies(None), _latencies(0.1)
    # the same seed and budget: pruning spends the budget on predicted-fast configs
    assert np.median(pruned) < 0.8 * np.median(plain)
    assert pruned.min() <= plain.min()


def test_predictor_refuses_non_template_backends(tmp_path) -> None:
    bench = tmp_path / "b.py"
    bench.write_text("SPACE = {'a': [1, 2]}\ndef measure(config):\n    return {'latency_ms': 1.0}\n")
    with pytest.raises(WorkbenchError, match="template"):
        sim_predictor(make_backend_spec(str(bench), "python"))


def test_under_a_limit_pruning_measures_what_the_model_predicts_to_meet_it() -> None:
    """The model's fastest sgemm configs use the most registers: pruning by predicted latency spent
    the budget on configs a register limit excludes (fewer feasible trials than no pruning at all).
    Ranked by the run's objective, the kept proposals are the ones predicted to meet it."""
    from workbench.core.domain.objective import Bound, Constraints

    spec = make_backend_spec("sgemm", "sim", noise=False, extra={"compile": "estimate"})
    limit = Constraints(extra=(Bound("registers", "<=", 48.0),))

    def feasible(prune: float | None, seed: int) -> int:
        session, _ = run_to_end(RunRequest(spec=spec, strategy="random", seed=seed, budget=20, prune_keep=prune,
                                           constraints=limit, executor="inline"), None)
        return sum(1 for t in session.trials if t.ok and t.metric("registers") <= 48)

    plain = [feasible(None, seed) for seed in range(4)]
    pruned = [feasible(0.25, seed) for seed in range(4)]
    assert min(pruned) >= 10 and sum(pruned) >= 2 * sum(plain), (plain, pruned)
