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
