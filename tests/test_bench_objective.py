"""The constrained-search benchmark's cases: shaped like real requests, and scored against the feasible optimum."""

from __future__ import annotations

import sys
from pathlib import Path

from workbench.core.domain.space import Config, SearchSpace, Slot

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import objective as bench  # noqa: E402


def _landscape() -> bench.Landscape:
    slots = [Slot("a", tuple(range(6)), group="launch"), Slot("b", (0, 1), group="memory")]
    points = [Config({"a": a, "b": b}) for a in range(6) for b in range(2)]
    records = {}
    for c in points:  # faster with larger a, but larger a needs more registers
        records[c.id] = None if (c["a"], c["b"]) == (0, 1) else {
            "latency_ms": 10.0 - c["a"] - 0.5 * c["b"], "registers": 16.0 * (1 + c["a"]) + c["b"]}
    return bench.Landscape("toy", SearchSpace.explicit(slots, points), records, simulated=True)


def test_cases_exclude_the_unconstrained_optimum_and_score_against_the_feasible_one() -> None:
    land = _landscape()
    cases = {c.name: c for c in bench.build_cases(land, (("registers", -1),))}
    limit = next(c for n, c in cases.items() if "min latency" in n)
    fastest = min((m["latency_ms"], cid) for cid, m in land.records.items() if m)[1]
    assert not limit.objective.constraints.bounds()[0].check(land.records[fastest]["registers"])
    efficient = next(c for n, c in cases.items() if "latency <= 1.2x" in n)
    assert efficient.direction == -1 and efficient.optimum == min(
        m["registers"] for m in land.records.values() if m and m["latency_ms"] <= 1.2 * 4.5)
    assert bench.score([float("nan"), 2 * limit.optimum, limit.optimum], limit, 2) == 0.5
    assert bench.score([float("nan")], limit, 1) == 0.0


def test_the_baselines_cache_keeps_runs_and_refuses_a_file_that_is_not_its_own(tmp_path) -> None:
    import math

    import pytest

    path = str(tmp_path / "runs.json")
    assert bench._load_cache(path) == {}
    key = bench._cache_key("case", "random", 3, 100)
    bench._save_cache(path, {key: [1.5, math.nan, 0.5]})
    back = bench._load_cache(path)
    assert back[key][0] == 1.5 and math.isnan(back[key][1]) and back[key][2] == 0.5
    other = tmp_path / "other.json"
    other.write_text('{"runs": {}}')
    with pytest.raises(SystemExit, match="not a cache of bench/objective.py"):
        bench._load_cache(str(other))


def test_a_new_cache_in_a_new_folder_is_made_rather_than_failing_after_the_runs(tmp_path) -> None:
    path = str(tmp_path / "new" / "folder" / "runs.json")
    bench._save_cache(path, {"k": [1.0]})
    assert bench._load_cache(path) == {"k": [1.0]}


def test_an_output_into_a_missing_folder_is_refused_before_any_run(tmp_path, capsys) -> None:
    import pytest

    for flag in ("--markdown", "--runs-out"):
        with pytest.raises(SystemExit) as ended:
            bench.main([flag, str(tmp_path / "missing" / "x.md"), "--cases", "no-such-case"])
        assert ended.value.code == 2 and "its folder does not exist" in capsys.readouterr().err


def test_a_baseline_run_on_changed_data_is_not_taken_from_the_cache() -> None:
    land = _landscape()
    case = next(c for c in bench.build_cases(land, (("registers", -1),)) if "min latency" in c.name)
    changed = bench.Landscape(land.name, land.space, dict(land.records), simulated=True)
    some = next(cid for cid, m in changed.records.items() if m)
    changed.records[some] = {**changed.records[some], "latency_ms": changed.records[some]["latency_ms"] * 1.05}
    bench._CASES[case.name] = case
    try:
        bench._DIGESTS[land.name] = bench.landscape_digest(land)
        before = bench._cache_key(case.name, "random", 3, 100)
        bench._DIGESTS[land.name] = bench.landscape_digest(changed)
        assert bench._cache_key(case.name, "random", 3, 100) != before
        bench._DIGESTS[land.name] = bench.landscape_digest(land)
        assert bench._cache_key(case.name, "random", 3, 100) == before
    finally:
        bench._CASES.pop(case.name, None)
        bench._DIGESTS.pop(land.name, None)


def test_overhead_times_the_agents_with_and_without_the_bounds() -> None:
    land = _landscape()
    case = next(c for c in bench.build_cases(land, (("registers", -1),)) if "min latency" in c.name)
    bench._LANDS[land.name] = land
    bench._CASES[case.name] = case
    try:
        for constrained in (True, False):
            ms, done = bench.overhead(case.name, 8, constrained)
            assert done == 8 and ms >= 0.0
    finally:
        del bench._CASES[case.name], bench._LANDS[land.name]
