"""The strategy benchmark's simulated landscapes: built from the sim backend, cached, exported for Kernel Tuner."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from workbench.backends.base import BackendSpec, EvalLimits
from workbench.backends.sim import SimBackend
from workbench.core.measurement import Measurement, Status

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import landscapes_sim  # noqa: E402
import strategies  # noqa: E402

TEMPLATE = "vector_add"
_evaluate = SimBackend.evaluate


def _refuse_big_blocks(self, config, limits, phase=None):  # stands in for SimBackend.evaluate
    """The simulator, except that 1024-thread blocks are refused: a landscape with failures."""
    if config["block_size"] == 1024:
        return Measurement.failure(Status.LAUNCH_ERROR, "refused (test)")
    return _evaluate(self, config, limits)


@pytest.fixture
def land(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> strategies.Landscape:
    monkeypatch.setenv("KERNEL_WORKBENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(SimBackend, "evaluate", _refuse_big_blocks)
    return strategies.simulated_landscape(TEMPLATE, "H200")


def test_simulated_landscape_is_the_simulator_on_every_valid_config(land: strategies.Landscape) -> None:
    direct = SimBackend(BackendSpec("sim", {"kernel": TEMPLATE, "gpu_model": "H200", "noise": False, "compile": "estimate"}))
    direct.prepare()
    expected = {}
    for config in direct.space:
        m = _evaluate(direct, config, EvalLimits())
        expected[config.id] = None if config["block_size"] == 1024 else m.metric("latency_ms")
    assert land.name == "sim_H200_vector_add" and land.simulated
    assert land.latency == expected  # noise off: the same numbers
    assert land.space.count() == len(expected)
    assert 0 < sum(v is None for v in land.latency.values()) < len(expected)
    assert land.optimum == min(v for v in expected.values() if v is not None)


def test_simulated_landscape_comes_from_the_cache_the_second_time(land: strategies.Landscape) -> None:
    again = landscapes_sim.simulate(TEMPLATE, "H200")
    assert again.seconds == 0.0  # loaded, not rebuilt
    assert again.latency == land.latency


def test_random_search_on_a_simulated_landscape_makes_the_budget_of_distinct_evaluations(
    land: strategies.Landscape,
) -> None:
    seen: list[str] = []
    measure = land.measure
    land.measure = lambda index, config: (seen.append(config.id), measure(index, config))[1]  # type: ignore[method-assign]
    values, _ = strategies.run_once(land, "random", seed=3, budget=40, options={})
    assert len(values) == 40 and len(set(seen)) == 40
    assert all(v == land.latency[cid] or (math.isinf(v) and land.latency[cid] is None) for v, cid in zip(values, seen))


def test_kt_cache_export_round_trips_through_load_kt_cache(land: strategies.Landscape, tmp_path: Path) -> None:
    path = tmp_path / "kt.json"
    written = landscapes_sim.write_kt_cache(land, path, **land.kt_meta)
    back = strategies.load_kt_cache(str(path))
    assert written == land.space.count() == back.space.count()
    assert back.latency == land.latency  # same configs (ids), same latencies, failures still None
    assert {c.id for c in back.space} == {c.id for c in land.space}
