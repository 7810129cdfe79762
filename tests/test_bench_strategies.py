"""The strategy benchmark's simulated landscapes: built from the sim backend, cached, exported for Kernel Tuner."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from workbench.backends.base import BackendSpec, EvalLimits
from workbench.backends.sim import SimBackend
from workbench.core.domain.measurement import Measurement, Status

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


def test_load_kt_cache_reads_gzipped_unfinished_files_with_values_only_in_the_keys(
    land: strategies.Landscape, tmp_path: Path
) -> None:
    """Published caches come gzipped, some were left unterminated by a crash, and some records carry
    their parameter values only in the cache key: the benchmark reads all three in place."""
    import gzip
    import json

    plain = tmp_path / "kt.json"
    landscapes_sim.write_kt_cache(land, plain, **land.kt_meta)
    data = json.loads(plain.read_text())
    names = data["tune_params_keys"]
    for record in data["cache"].values():
        for name in names:
            del record[name]
    text = json.dumps(data, indent=1)
    unfinished = text.rstrip()[: -len("}\n}")].rstrip() + ","
    packed = tmp_path / "kt_unfinished.json.gz"
    packed.write_bytes(gzip.compress(unfinished.encode()))
    back = strategies.load_kt_cache(str(packed))
    assert back.name == "kt_unfinished" and back.source == str(packed)
    assert back.latency == land.latency


def test_run_cache_makes_reruns_incremental(tmp_path: Path) -> None:
    cache = strategies.RunCache(str(tmp_path))
    key = cache.key("agents", "v1", "land/10/0/1", 3, 200)
    cache.add(key, [2.0, math.inf, 1.0])
    with open(cache.path, "a") as fh:
        fh.write('{"key": "cut by a kill", "val')  # an interrupted write is ignored, not fatal
    again = strategies.RunCache(str(tmp_path))
    assert again.runs == {key: [2.0, math.inf, 1.0]}
    assert strategies.RunCache("").runs == {} and strategies.RunCache("").path == ""


def test_a_landscape_whose_values_change_away_from_its_optimum_gets_a_new_cache_key(
        land: strategies.Landscape) -> None:
    best = min((cid for cid, v in land.latency.items() if v is not None), key=lambda cid: land.latency[cid])
    other = next(cid for cid, v in land.latency.items() if v is not None and cid != best)
    changed = strategies.Landscape(land.name, land.space, {**land.latency, other: land.latency[other] * 1.05},
                                   land.metrics, simulated=land.simulated)
    assert changed.optimum == land.optimum
    assert strategies.landscape_key(changed) != strategies.landscape_key(land)
    same = strategies.Landscape(land.name, land.space, dict(reversed(list(land.latency.items()))), land.metrics)
    assert strategies.landscape_key(same) == strategies.landscape_key(land)  # the order read does not matter


def test_search_version_follows_the_behaviour_and_the_source(tmp_path, monkeypatch) -> None:
    """Cached runs are keyed by what the strategy proposes on a probe landscape and by the search
    code: the same options give the same key, options that change the proposals give another one,
    and so does a change of the code that the probe's runs do not show (two versions of a late-run
    mechanism proposed the same configs on the probe, and the old one's runs were tabulated as the
    new one's)."""
    import shutil

    assert strategies.search_version("agents", {}) == strategies.search_version("agents", {})
    assert strategies.search_version("agents", {}) != strategies.search_version("agents", {"init": 5})
    assert strategies.search_version("agents", {}) != strategies.search_version("random", {})
    before = strategies.search_version("agents", {})
    copy = tmp_path / "search"
    shutil.copytree(strategies.SEARCH_SOURCES, copy)
    (copy / "agents.py").write_text((copy / "agents.py").read_text() + "\n# a change the probe does not see\n")
    monkeypatch.setattr(strategies, "SEARCH_SOURCES", copy)
    assert strategies.search_version("agents", {}) != before


def test_summary_counts_landscapes_within_one_standard_error() -> None:
    assert strategies.within_one_se(0.90, 0.01, 0.91, 0.01)
    assert not strategies.within_one_se(0.80, 0.01, 0.91, 0.01)
    mean, se = strategies.summarise([[1.0, 0.5], [0.0, 0.5]])
    assert mean == [0.5, 0.5] and se[1] == 0.0 and abs(se[0] - 0.5) < 1e-12


def test_tables_summarise_the_measured_landscapes_and_list_the_missed_targets(land: strategies.Landscape) -> None:
    """The summary averages measured landscapes only, counts those within one SE of the best, and the
    target check names every cell where the default is behind a Kernel Tuner strategy by more than one SE."""
    import dataclasses

    a = dataclasses.replace(land, name="a", simulated=False)
    b = dataclasses.replace(land, name="b", simulated=False)
    sim = dataclasses.replace(land, name="s", simulated=True)

    def row(m: float, e: float) -> tuple[list[float], list[float], int]:  # one mean and SE at every budget
        return [m] * 4, [e] * 4, 50

    stats = {
        "a": {"agents": row(0.90, 0.01), "kt:x": row(0.80, 0.01)},
        "b": {"agents": row(0.70, 0.01), "kt:x": row(0.80, 0.01)},
        "s": {"agents": row(0.10, 0.01), "kt:x": row(0.10, 0.01)},
    }
    text = "\n".join(strategies.tables(stats, {}, {"a": a, "b": b, "s": sim}, "agents"))
    assert "Summary over the 2 measured landscapes" in text
    assert "| agents | 0.800 ± 0.007 (1/2) |" in text  # the simulated landscape is not averaged in
    assert "- b, B=25: 0.700 ± 0.010 < kt:x 0.800 ± 0.010 (by 0.100)" in text
    assert "- a, B=25" not in text
    assert "all measured landscapes, B=25: agents 0.800 vs best Kernel Tuner kt:x 0.800: +0.000" in text


def test_a_recorded_session_whose_ok_trial_lacks_a_latency_counts_it_as_a_failure(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(strategies, "MIN_SESSION_CONFIGS", 2)
    from workbench.core.domain.measurement import Trial
    from workbench.core.domain.session import Session, save_session
    from workbench.core.domain.space import SearchSpace, Slot

    space = SearchSpace([Slot("block", (32, 64, 128))])
    session = Session(kernel="k", space=space, device={"name": "Some GPU", "simulated": False})
    session.add(Trial(0, space.config({"block": 32}), Measurement(Status.OK, {"latency_ms": 1.5})))
    session.add(Trial(1, space.config({"block": 64}), Measurement(Status.OK, {"throughput_gbs": 10.0})))
    path = tmp_path / "recorded.json"
    save_session(session, path)
    land = strategies.load_session_landscape(str(path))
    assert land is not None and sorted(land.latency.values(), key=str) == [1.5, None]
    assert strategies.landscape_key(land).startswith("recorded/2/1/1.5/")  # keyed, not a crash on NaN


def test_a_short_recorded_run_is_not_a_landscape_and_a_long_one_is(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A GPU check records 24 configs per template: every strategy would see most of them, so
    such a session would only add ties to the strategy tables."""
    from workbench.core.domain.measurement import Trial
    from workbench.core.domain.session import Session, save_session
    from workbench.core.domain.space import SearchSpace, Slot

    space = SearchSpace([Slot("block", tuple(range(1, 1001)))])
    for count in (24, strategies.MIN_SESSION_CONFIGS):
        session = Session(kernel="k", space=space, device={"name": "Some GPU", "simulated": False})
        for i in range(count):
            session.add(Trial(i, space.config({"block": i + 1}), Measurement(Status.OK, {"latency_ms": 1.0 + i})))
        path = tmp_path / f"recorded_{count}.json"
        save_session(session, path)
        land = strategies.load_session_landscape(str(path))
        assert (land is None) == (count == 24)
    assert "recorded_24.json: 24 configs, fewer than 400" in capsys.readouterr().err


def test_the_run_cache_makes_its_folder_rather_than_failing_at_the_first_finished_run(tmp_path: Path) -> None:
    folder = tmp_path / "new" / "cache"
    cache = strategies.RunCache(str(folder))
    cache.add("key", [1.0, math.inf])
    assert strategies.RunCache(str(folder)).runs == {"key": [1.0, math.inf]}


def test_a_markdown_table_into_a_missing_folder_is_refused_before_any_run(tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as ended:
        strategies.main(["--markdown", str(tmp_path / "missing" / "t.md"), "--landscapes", "none"])
    assert ended.value.code == 2 and "its folder does not exist" in capsys.readouterr().err


def _cache(records: dict, tune_params: dict, objective: str = "time") -> dict:
    return {"device_name": "GPU X", "kernel_name": "k", "problem_size": 64, "objective": objective,
            "tune_params_keys": list(tune_params), "tune_params": tune_params, "cache": records}


def test_load_kt_cache_reads_failures_as_the_importer_does_and_ints_of_float_parameters(tmp_path: Path) -> None:
    """Caches the benchmark had not met: a parameter declared with ints and floats (``[0.5, 1, 2]``;
    a search then crashed with a KeyError, the space storing 1 as 1.0), a failure written into the
    objective's field (Kernel Tuner up to 1.3, ``"GFLOP/s": "RuntimeFailedConfig"``, no time), and a
    time of 0 or below (taken as the optimum, every fraction then 0)."""
    import json

    records = {
        "0.5,1": {"alpha": 0.5, "tile": 1, "time": 2.0},
        "1,1": {"alpha": 1, "tile": 1, "time": 1.5, "GFLOP/s": 10.0},
        "2,1": {"alpha": 2, "tile": 1, "GFLOP/s": "RuntimeFailedConfig"},
        "0.5,2": {"alpha": 0.5, "tile": 2, "time": 0},
        "1,2": {"alpha": 1, "tile": 2, "time": -1.0},
        "2,2": {"alpha": 2, "tile": 2, "time": 3.0, "__error__": "CompilationFailedConfig"},
    }
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps(_cache(records, {"alpha": [0.5, 1, 2], "tile": [1, 2]}, "GFLOP/s")))
    land = strategies.load_kt_cache(str(path))
    assert land.optimum == 1.5 and sorted(v for v in land.latency.values() if v is not None) == [1.5, 2.0]
    for strategy in ("agents", "random"):
        values, _ = strategies.run_once(land, strategy, 0, 6, {})
        assert sorted(values) == [1.5, 2.0] + [math.inf] * 4


def test_a_cache_without_a_success_is_skipped_with_a_line_not_a_traceback(tmp_path: Path, monkeypatch, capsys) -> None:
    import json

    records = {"1": {"tile": 1, "time": "RuntimeFailedConfig"}, "2": {"tile": 2, "__error__": "InvalidConfig"}}
    (tmp_path / "failed.json").write_text(json.dumps(_cache(records, {"tile": [1, 2]})))
    with pytest.raises(ValueError, match="no successful record"):
        strategies.load_kt_cache(str(tmp_path / "failed.json"))
    monkeypatch.setattr(strategies, "LANDSCAPE_DIR", str(tmp_path))
    monkeypatch.setattr(strategies, "SESSION_DIR", str(tmp_path / "none"))
    assert strategies.landscapes() == []
    assert "skipping" in capsys.readouterr().err


def test_parameter_values_a_slot_cannot_hold_stand_for_names_of_their_own(tmp_path: Path) -> None:
    """Kernel Tuner takes any text as a value (``"unsigned int"``, ``"cub::BLOCK_LOAD_DIRECT"``) and
    ints mixed with text; the workbench's slots do not, and the benchmark stopped with a SpaceError
    traceback. It only needs to tell the values apart."""
    import json

    values = ["unsigned int", "cub::BLOCK_LOAD_DIRECT", 3]
    records = {f"{i},{tile}": {"algo": v, "tile": tile, "time": 1.0 + i + tile / 10}
               for i, v in enumerate(values) for tile in (1, 2)}
    path = tmp_path / "text.json"
    path.write_text(json.dumps(_cache(records, {"algo": values, "tile": [1, 2]})))
    land = strategies.load_kt_cache(str(path))
    assert land.space.slot("algo").values == ("v0", "v1", "v2") and land.optimum == 1.1
    values_seen, _ = strategies.run_once(land, "agents", 0, 6, {})
    assert sorted(values_seen) == sorted(1.0 + i + tile / 10 for i in range(3) for tile in (1, 2))


def test_values_the_records_hold_but_tune_params_does_not_declare_join_the_parameter(tmp_path: Path) -> None:
    """As on import: a value only the records hold is one of the parameter's values (the benchmark
    skipped such a cache with "skipping ...: '1.0'", a bare KeyError)."""
    import json

    records = {"1,a b": {"n": 1, "algo": "a b", "time": 2.0}, "2,a b": {"n": 2, "algo": "a b", "time": 1.0},
               "3,w": {"n": 3, "algo": "w", "time": 0.5}, "1,w": {"n": 1.0, "algo": "w", "time": 3.0}}
    path = tmp_path / "undeclared.json"
    path.write_text(json.dumps(_cache(records, {"n": [1, 2], "algo": ["a b", "c"]})))
    land = strategies.load_kt_cache(str(path))
    assert land.optimum == 0.5 and len(land.latency) == 4
    assert land.space.slot("algo").values == ("v0", "v1", "v2")  # "a b", "c", then "w"
    assert land.space.slot("n").values == ("v0", "v1", "v2", "v3")  # 1, 2, then 3 and 1.0, told apart
    # a record whose key names a value tune_params does not hold, and no field: said, not a KeyError
    path.write_text(json.dumps(_cache({"9": {"time": 1.0}, "1": {"time": 2.0}}, {"n": [1, 2]})))
    with pytest.raises(ValueError, match=r"no value for parameter 'n'"):
        strategies.load_kt_cache(str(path))


@pytest.mark.parametrize("argv, said", [
    (["--seeds", "1"], "at least 2"),
    (["--kt", "--kt-seeds", "1"], "at least 2"),
    (["--kt", "--kt-seeds-of", "bayes_opt+fail=1"], "at least 2"),
])
def test_one_seed_is_refused_before_any_run_rather_than_tabulated_as_nan(argv, said, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        strategies.main(argv)
    assert exit_.value.code == 2 and said in capsys.readouterr().err


def test_kernel_tuner_rows_without_kernel_tuner_are_one_line_not_a_crash_per_seed(monkeypatch, capsys) -> None:
    monkeypatch.setattr(strategies, "_kt_version", lambda: "none")
    with pytest.raises(SystemExit) as exit_:
        strategies.main(["--kt", "--strategies", "", "--sim", "none"])
    assert exit_.value.code == 2 and "Kernel Tuner is not installed here: pip install '.[kt]'" in capsys.readouterr().err


@pytest.mark.parametrize("argv, said", [
    (["--strategies", "nosuch"], "unknown strategies nosuch"),
    (["--options", "{bad"], "--options {bad:"),
    (["--options", '{"nosuch": 1}', "--strategies", "agents"], "has no option 'nosuch'"),
    (["--sim", "nosuchtemplate"], "--sim: no template nosuchtemplate"),
    (["--landscapes", "nosuchland", "--sim", "none"], "no landscape matches"),
    (["--first-seed", "-1"], "0 or more"),
    (["--jobs", "0"], "--jobs 1 or more"),
])
def test_bad_arguments_are_one_line_before_any_run(argv, said, capsys) -> None:
    """They were tracebacks, an empty table with exit 0, or every seed 'crashed in Kernel Tuner'."""
    with pytest.raises(SystemExit) as exit_:
        strategies.main(["--seeds", "2", "--no-overhead", *argv])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and said in err and "Traceback" not in err, err


def test_a_failure_of_our_own_strategy_is_a_failure_not_a_kernel_tuner_crash(monkeypatch) -> None:
    """It was counted as 'seeds crashed in Kernel Tuner', and the row quietly had fewer seeds."""
    def broken(*args, **kwargs):
        raise RuntimeError("a defect in the strategy")

    monkeypatch.setattr(strategies, "run_once", broken)
    monkeypatch.setitem(strategies._LANDS, "tiny", None)  # (the broken run never reads it)
    with pytest.raises(RuntimeError, match="a defect in the strategy"):
        strategies._job(("ours", "tiny", "agents", [0], {}, ["key"]))
