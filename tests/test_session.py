"""Sessions: round trips, journal and crash recovery, validation messages (workbench.core.domain.session; speed: bench/session_io.py)."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.core.errors import SessionFormatError, WorkbenchError
from workbench.core.domain.measurement import Measurement, Status, Trial
from workbench.core.domain.objective import Constraints, Weights
from workbench.core.domain.session import (
    FORMAT_NAME,
    FORMAT_VERSION,
    Journal,
    Session,
    journal_path,
    load_session,
    read_journal,
    save_session,
    trial_to_dict,
)
from workbench.core.domain.space import Config, SearchSpace, Slot

ROOT = Path(__file__).resolve().parents[1]

SLOTS = (
    Slot("block_size", (32, 64, 128, 256), "launch", "threads per block", default=128),
    Slot("vector", (1, 2, 4), "memory"),
    Slot("fast_math", (False, True), "compute"),
    Slot("strategy", ("atomic", "shared_tree"), "reduction"),
)


def make_space() -> SearchSpace:
    return SearchSpace(SLOTS, restrictions=("block_size * vector <= 512",))


def make_session(n: int = 10, space: SearchSpace | None = None) -> Session:
    space = space or make_space()
    configs = list(space)
    session = Session(
        kernel="reduce",
        kind="template",
        source_hash="abc123",
        problem={"n": 1 << 20, "dtype": "float32"},
        space=space,
        backend={"kind": "sim", "options": {"gpu_model": "A100", "noise": True}},
        device={"name": "A100 (simulated)", "simulated": True},
        constraints=Constraints(max_latency_ms=5.0, min_quality=0.99, extra=("occupancy >= 0.25",)),
        weights=Weights({"latency_ms": 1.0, "memory_mb": 0.5}),
        strategy={"name": "random", "seed": 7, "options": {}, "state": {"rng": [1, 2, 3]}},
        baselines={"cub": {"latency_ms": 0.8}},
        default_config=space.default_config(),
        notes="first run",
        extra={"gui": {"columns": ["latency_ms"]}},
    )
    for i in range(n):
        config = configs[i % len(configs)] if i < len(configs) else configs[i % len(configs)]
        if i % 4 == 3:
            m = Measurement.failure(Status.COMPILE_ERROR, "error: identifier 'x' is undefined\nline 2 of the log")
        else:
            m = Measurement(Status.OK, {"latency_ms": 1.0 + i, "memory_mb": 64.0, "occupancy": 0.5}, details={"limiter": "registers"})
        session.add(Trial(i, config, m, 1000.0 + i, 1000.5 + i, {"compile_s": 0.25, "total_s": 0.5}, "worker-1"))
    return session


def assert_same_session(a: Session, b: Session) -> None:
    assert a.header_dict() == b.header_dict()
    assert len(a.trials) == len(b.trials)
    for x, y in zip(a.trials, b.trials):
        assert x == y
        assert x.config.id == y.config.id


# --- round trips --------------------------------------------------------------------------------


def test_save_load_round_trip_keeps_everything(tmp_path: Path) -> None:
    session = make_session(12)
    path = tmp_path / "session.json"
    assert save_session(session, path) == path
    loaded = load_session(path)
    assert_same_session(session, loaded)
    assert loaded.space == session.space
    assert loaded.constraints == session.constraints and loaded.weights == session.weights
    assert loaded.default_config == session.default_config
    assert loaded.measured_ids() == session.measured_ids()
    # the file is strict JSON with the documented envelope
    data = json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(f"non-standard constant {c}"))
    assert data["format"] == FORMAT_NAME and data["version"] == FORMAT_VERSION
    assert set(data["trials"][3]) == {"index", "config", "id", "status", "metrics", "message", "log",
                                      "started_at", "finished_at", "timings", "worker"}
    assert not list(tmp_path.glob(".*.tmp"))


@pytest.mark.parametrize("nan", [False, True])  # orjson reads the file; a NaN literal sends it to the json module
def test_how_deep_a_session_may_nest_is_the_same_on_every_python(tmp_path: Path, nan: bool) -> None:
    """The json module's depth was the interpreter's (about 1,000 levels on 3.11, 10,000 on 3.13):
    a file 3.13 opened and saved again was refused on 3.11. Both readings now keep to one limit,
    below what any version can read; orjson's too, which reads 1,024 levels: a file of 600 opened
    or not by whether a NaN or a long run of digits elsewhere in it sent it to the json module."""
    from workbench.core.domain.bounded_json import MAX_JSON_DEPTH

    path = tmp_path / "session.json"
    save_session(make_session(2), path)
    data = json.loads(path.read_text())
    data["extra"] = {"deep": "DEEP"}
    if nan:
        data["trials"][0]["metrics"]["odd"] = "NAN"
    base = json.dumps(data)

    def nested(levels: int) -> str:  # the document and "extra" are two levels, "deep" the rest
        return base.replace('"DEEP"', "[" * (levels - 2) + "]" * (levels - 2)).replace('"NAN"', "NaN")

    path.write_text(nested(MAX_JSON_DEPTH))
    assert '"deep"' in path.read_text() and ("NaN" in path.read_text()) == nan
    assert len(load_session(path).trials) == 2
    for levels in (MAX_JSON_DEPTH + 1, 600, 1_024, 1_200, 5_000):
        path.write_text(nested(levels))
        with pytest.raises(SessionFormatError, match="JSON nested too deeply"):
            load_session(path)


def test_save_refuses_a_header_that_would_not_load_again_and_keeps_the_old_file(tmp_path: Path) -> None:
    """Whatever a header field holds, save never writes a file load_session refuses: the saved file
    stays as it was and the refusal is one line naming the field."""
    path = tmp_path / "s.json"
    session = make_session(4)
    save_session(session, path)
    before = path.read_bytes()
    session.extra["count"] = 2**64  # beyond 64 bits: the loader reads no such integer
    with pytest.raises(WorkbenchError, match="does not fit 64 bits") as refused:
        save_session(session, path)
    assert str(path) in str(refused.value) and "\n" not in str(refused.value)
    del session.extra["count"]
    session.kernel = "k" * 10_000  # longer than any name the loader accepts
    with pytest.raises(WorkbenchError, match="kernel"):
        save_session(session, path)
    assert path.read_bytes() == before and not list(tmp_path.glob(".*.tmp"))
    assert len(load_session(path).trials) == 4


def test_save_never_replaces_a_read_only_file(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    save_session(make_session(2), path)
    path.chmod(0o444)
    before = path.read_bytes()
    with pytest.raises(WorkbenchError, match="is read-only; make it writable or save to another file"):
        save_session(make_session(5), path)
    assert path.read_bytes() == before and not list(tmp_path.glob(".*.tmp"))


def test_run_settings_counts_are_bounded_to_what_a_file_holds() -> None:
    from workbench.core.domain.run_settings import MAX_COUNT, RunSettings

    for name in ("budget", "patience", "workers"):
        assert getattr(RunSettings(**{name: MAX_COUNT}), name) == MAX_COUNT
        with pytest.raises(WorkbenchError, match=f"{name} {MAX_COUNT + 1}: at most {MAX_COUNT}"):
            RunSettings(**{name: MAX_COUNT + 1})
    with pytest.raises(WorkbenchError, match="an integer of 20001 bits"):  # no 6,000-digit message
        RunSettings(budget=2**20000)
    with pytest.raises(WorkbenchError, match="device number"):
        RunSettings(devices=(2**64,))


def test_explicit_space_round_trip(tmp_path: Path) -> None:
    space = SearchSpace.explicit(SLOTS, [{"block_size": 64, "vector": 2, "fast_math": True, "strategy": "atomic"},
                                         {"block_size": 32, "vector": 1, "fast_math": False, "strategy": "atomic"}])
    session = make_session(2, space)
    save_session(session, tmp_path / "s.json")
    loaded = load_session(tmp_path / "s.json")
    assert loaded.space is not None and loaded.space.is_explicit
    assert {c.id for c in loaded.space} == {c.id for c in space}


def test_nan_metrics_are_written_as_null_and_read_as_nan(tmp_path: Path) -> None:
    session = Session(kernel="k")
    session.add(Trial(0, Config({"a": 1}), Measurement(Status.OK, {"latency_ms": 1.0, "spread": math.nan, "x": math.inf})))
    save_session(session, tmp_path / "s.json")
    text = (tmp_path / "s.json").read_text()
    assert "NaN" not in text and "Infinity" not in text
    loaded = load_session(tmp_path / "s.json").trials[0]
    assert loaded.metric("latency_ms") == 1.0 and math.isnan(loaded.metric("spread")) and math.isnan(loaded.metric("x"))


def test_nested_measurement_records_are_accepted(tmp_path: Path) -> None:
    session = make_session(3)
    data = session.to_dict()
    trial = data["trials"][1]
    trial["measurement"] = {k: trial.pop(k) for k in ("status", "metrics", "message", "log", "details") if k in trial}
    (tmp_path / "s.json").write_text(json.dumps(data))
    assert load_session(tmp_path / "s.json").trials[1] == session.trials[1]


def test_session_helpers() -> None:
    session = make_session(6)
    assert session.next_index() == 6
    assert Session(kernel="k").next_index() == 0
    config = session.trials[0].config
    key = session.cache_key(config)
    assert key.endswith(config.id) and key.startswith("abc123:")
    other = make_session(0)
    other.problem = {"n": 1 << 21, "dtype": "float32"}
    assert other.cache_key(config) != key
    ranking = session.rank(constraints=Constraints())
    assert ranking.best == 0  # lowest latency among ok trials


# --- hypothesis: save -> load keeps every trial ---------------------------------------------------

_names = st.sampled_from(["block_size", "vector", "tile", "mode", "unroll", "x"])
_values = st.one_of(
    st.integers(-(2**40), 2**40),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12),
)
_metrics = st.dictionaries(
    st.sampled_from(["latency_ms", "memory_mb", "quality", "gflops", "registers", "custom_metric"]),
    st.one_of(st.floats(min_value=0, allow_infinity=False), st.integers(0, 10**6)),  # amounts are >= 0
    max_size=6,
)


def _measured(status: Status, metrics: dict) -> dict:
    """A successful trial has a latency above 0 ms (no backend records one without; a file's opens
    as a failure): a missing or 0 one becomes 1 ms."""
    if status is Status.OK and not metrics.get("latency_ms", 0) > 0:
        return {**metrics, "latency_ms": 1.0}
    return metrics


_trial = st.builds(
    lambda index, config, status, metrics, message, log, started, worker, timings: Trial(
        index, Config(config), Measurement(status, _measured(status, metrics), message, log), started, started + 1.5,
        timings, worker
    ),
    st.integers(0, 10**6),
    st.dictionaries(_names, _values, min_size=1, max_size=4),
    st.sampled_from(list(Status)),
    _metrics,
    st.text(max_size=30),
    st.text(max_size=60),
    st.floats(0, 2e9),
    st.text(max_size=8),
    st.dictionaries(st.sampled_from(["compile_s", "total_s"]), st.floats(0, 100), max_size=2),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_trial, max_size=25, unique_by=lambda t: t.index))
def test_round_trip_property(tmp_path: Path, trials: list[Trial]) -> None:
    session = Session(kernel="prop", trials=list(trials))
    path = tmp_path / "prop.json"
    save_session(session, path)
    loaded = load_session(path)
    assert [t.index for t in loaded.trials] == [t.index for t in trials]
    for original, back in zip(trials, loaded.trials):
        assert back.config.id == original.config.id
        assert back.config == original.config
        assert back.status is original.status
        assert dict(back.measurement.metrics) == dict(original.measurement.metrics)
        assert back == original


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_trial, min_size=1, max_size=15, unique_by=lambda t: t.index), st.integers(0, 15))
def test_journal_recovery_property(tmp_path: Path, trials: list[Trial], saved: int) -> None:
    """Whatever was saved plus whatever was journalled after it comes back, once each."""
    path = tmp_path / "live.json"
    for leftover in (path, journal_path(path)):
        leftover.unlink(missing_ok=True)
    session = Session(kernel="prop")
    journal = Journal(path, fsync=False)
    journal.start(session)
    for k, trial in enumerate(trials):
        session.add(trial)
        journal.append(trial)
        if k + 1 == saved:
            save_session(session, path, keep_journal=k % 2 == 0)
    journal.close()
    loaded = load_session(path)
    assert sorted(t.index for t in loaded.trials) == sorted(t.index for t in trials)
    assert {t.index: t for t in loaded.trials} == {t.index: t for t in trials}


# --- journal --------------------------------------------------------------------------------------


def test_journal_alone_recovers_a_session_and_ignores_a_torn_last_line(tmp_path: Path) -> None:
    session = make_session(0)
    trials = make_session(8).trials
    out = tmp_path / "out.json"
    with Journal(out) as journal:
        journal.start(session)
        for trial in trials:
            journal.append(trial)
    jp = journal_path(out)
    assert jp == tmp_path / "out.json.journal" and not out.exists()
    full = jp.read_text()
    assert full.count("\n") == 9  # header + 8 trials
    jp.write_text(full[:-25])  # the killed writer's last line, cut short
    recovered = load_session(out)
    assert recovered.header_dict() == session.header_dict()
    assert recovered.trials == trials[:7]
    assert load_session(jp).trials == trials[:7]  # naming the journal itself works too


def test_journal_merge_dedupes_by_index_and_keeps_order(tmp_path: Path) -> None:
    session = make_session(5)
    out = tmp_path / "out.json"
    save_session(session, out)
    journal = Journal(out, fsync=False)
    journal.start(session)  # header + the 5 saved trials
    extra = make_session(9).trials[5:]
    for trial in reversed(extra):
        journal.append(trial)
    journal.append(session.trials[2])  # a duplicate index
    journal.close()
    loaded = load_session(out)
    assert [t.index for t in loaded.trials] == list(range(9))
    assert loaded.trials[5:] == extra


def test_a_journal_older_than_its_file_is_not_read_over_it(tmp_path: Path) -> None:
    """An old journal brought back beside its session by a file sync held the settings of a run
    since continued: read as the newer, it rolled back the limit and weights saved since, and the
    next run saved them so. A journal holding nothing the file lacks, while the file holds more,
    is older than the file; one that adds a trial or a newer record of one is read as before."""
    import dataclasses

    out = tmp_path / "out.json"
    session = make_session(6)
    journal = Journal(out, fsync=False)
    journal.start(session)  # header + the 6 trials, then the run was killed
    journal.close()
    old_journal = journal_path(out).read_bytes()
    later = make_session(9)
    later.id = session.id
    later.constraints = Constraints(max_latency_ms=0.06)
    later.weights = Weights({"latency_ms": 1.0, "memory_mb": 0.25})
    save_session(later, out)  # a continuation, saved: it removes the journal
    assert not journal_path(out).exists()
    journal_path(out).write_bytes(old_journal)  # the sync brings it back
    loaded = load_session(out)
    assert loaded.constraints == later.constraints and loaded.weights == later.weights
    assert len(loaded.trials) == 9 and loaded.journal_read is None
    # a journal with a newer record of a trial the file holds is read, its header with it
    refined = dataclasses.replace(session.trials[2], measurement=Measurement(Status.OK, {"latency_ms": 0.001}))
    with Journal(out, fsync=False) as journal:
        journal.start(Session.from_dict({**session.header_dict(), "trials": []}))
        journal.append(refined)
    loaded = load_session(out)
    assert loaded.trials[2].measurement.metrics["latency_ms"] == 0.001
    assert loaded.constraints == session.constraints and loaded.journal_read == journal_path(out)
    # a run killed before its first trial: its journal holds exactly the file's trials, and its
    # header (what that run was given) is read over the file's
    save_session(later, out)
    with Journal(out, fsync=False) as journal:
        journal.start(dataclasses.replace(later, constraints=Constraints(max_latency_ms=9.0), trials=list(later.trials)))
    assert load_session(out).constraints == Constraints(max_latency_ms=9.0)


def test_a_session_and_its_journal_saved_with_a_byte_order_mark_open(tmp_path: Path) -> None:
    """A session edited in a Windows editor starts with a UTF-8 byte-order mark: it was refused
    as "not valid JSON (... Unexpected UTF-8 BOM (decode using utf-8-sig))", and its journal
    called damaged, where a Kernel Tuner cache with one is read."""
    out = tmp_path / "out.json"
    session = make_session(4)
    save_session(session, out)
    out.write_bytes(b"\xef\xbb\xbf" + out.read_bytes().replace(b"\n", b"\r\n"))
    with Journal(out, fsync=False) as journal:
        journal.start(session)
        journal.append(make_session(5).trials[4])
    journal_path(out).write_bytes(b"\xef\xbb\xbf" + journal_path(out).read_bytes())
    before = out.read_bytes()
    loaded = load_session(out)
    assert [t.index for t in loaded.trials] == [0, 1, 2, 3, 4] and loaded.journal_read == journal_path(out)
    assert loaded.header_dict() == session.header_dict()
    assert out.read_bytes() == before  # opening it writes nothing
    # saved, the file supersedes the journal, which goes (kept, it was merged over the next load)
    import dataclasses

    save_session(dataclasses.replace(loaded, constraints=Constraints(max_latency_ms=0.5)), out)
    assert not journal_path(out).exists()
    assert load_session(out).constraints == Constraints(max_latency_ms=0.5)


def test_an_empty_session_file_beside_its_journal_names_the_journal(tmp_path: Path) -> None:
    """A zero-byte file (a file sync's placeholder) beside a journal said only "the file is empty",
    where the journal opens as the session once the file is out of the way."""
    out = tmp_path / "out.json"
    with Journal(out, fsync=False) as journal:
        journal.start(make_session(0))
        for trial in make_session(3).trials:
            journal.append(trial)
    out.write_bytes(b"")
    with pytest.raises(SessionFormatError) as refused:
        load_session(out)
    assert str(refused.value) == (f"{out}: the file is empty; the journal beside it (out.json.journal) holds "
                                  "3 trials: move the empty file away to open them")
    assert out.read_bytes() == b""
    out.unlink()
    assert len(load_session(out).trials) == 3


def test_a_malformed_session_file_beside_its_journal_names_the_journal(tmp_path: Path) -> None:
    """A file another program wrote over beside a killed run's journal said only "not valid JSON";
    nothing said the run's trials were in the journal, to be opened once the file is moved away."""
    out = tmp_path / "out.json"
    with Journal(out, fsync=False) as journal:
        journal.start(make_session(0))
        for trial in make_session(3).trials:
            journal.append(trial)
    for junk in (b"garbage\n", b'{"format": "kernel-workbench-session", "version": 2, "trials": 7}'):
        out.write_bytes(junk)
        with pytest.raises(SessionFormatError) as refused:
            load_session(out)
        assert str(refused.value).startswith(f"{out}: ")
        assert str(refused.value).endswith("; the journal beside it (out.json.journal) holds 3 trials: move the "
                                           "file away to open them")
    out.unlink()
    assert len(load_session(out).trials) == 3


def _journalling_three_of_six(out: Path) -> tuple[Session, list[Trial], Journal]:
    """An empty session journalled at ``out``, six trials to add and the first three added."""
    session = make_session(0)
    trials = make_session(6).trials
    journal = Journal(out)
    journal.start(session)
    for trial in trials[:3]:
        session.add(trial)
        journal.append(trial)
    return session, trials, journal


def test_save_mid_run_removes_journal_and_later_trials_still_survive(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    session, trials, journal = _journalling_three_of_six(out)
    save_session(session, out)  # removes the journal while it is still open
    assert not journal_path(out).exists()
    for trial in trials[3:]:
        session.add(trial)
        journal.append(trial)  # notices and starts a fresh journal
    journal.close()
    header, journalled = read_journal(out)
    assert header is not None and [t.index for t in journalled] == [3, 4, 5]
    assert load_session(out).trials == trials


def test_a_journal_removed_by_another_hand_mid_run_is_started_again_with_every_trial(tmp_path: Path) -> None:
    """The journal restarted with its header alone wherever its file had gone, as after a save that
    covered it: removed by hand (or a cleaner), the trials it had held and no file had were lost
    at the next kill. A file another program put at its name is not written over."""
    out = tmp_path / "out.json"
    session, trials, journal = _journalling_three_of_six(out)
    journal_path(out).unlink()  # by hand: nothing saved these three
    for trial in trials[3:5]:
        session.add(trial)
        journal.append(trial)
    header, journalled = read_journal(out)
    assert header is not None and [t.index for t in journalled] == [0, 1, 2, 3, 4]  # each once
    assert load_session(journal_path(out)).trials == trials[:5]
    journal.remove_if_covered({0, 1, 2, 3, 4})  # (as a save that covered them does)
    journal_path(out).write_text("someone else's file\n")
    session.add(trials[5])
    with pytest.raises(WorkbenchError, match="another file took the journal's place"):
        journal.append(trials[5])
    assert journal_path(out).read_text() == "someone else's file\n"
    journal.close()


def test_save_keeps_a_live_journal_holding_a_trial_the_file_lacks(tmp_path: Path) -> None:
    """A trial that finishes while the file is being written must survive in the journal."""
    out = tmp_path / "out.json"
    session = make_session(3)
    late = make_session(4).trials[3]
    journal = Journal(out, fsync=False)
    journal.start(session)
    journal.append(late)  # journalled, but not (yet) in the session the save snapshots
    save_session(session, out)
    assert journal_path(out).exists()
    assert [t.index for t in load_session(out).trials] == [0, 1, 2, 3]
    session.add(late)
    save_session(session, out)  # now the file has everything: the journal goes
    assert not journal_path(out).exists()
    journal.close()


def test_a_killed_continuation_comes_back_with_its_own_settings_not_the_files_older_ones(tmp_path: Path) -> None:
    """A continuation given a latency limit, another strategy and a larger budget, killed before its
    final save, came back with the file's older settings: its trials ranked without the limit, and
    resuming said "22 of its 10 evaluations" were done. The journal's header is the newer."""
    from workbench.core.domain.objective import Constraints
    from workbench.core.domain.run_settings import RunSettings

    out = tmp_path / "out.json"
    session = make_session(3)
    save_session(session, out)
    session.constraints = Constraints(max_latency_ms=5.0)
    session.strategy = {"name": "random", "seed": 1}
    session.run = RunSettings(budget=60)
    journal = Journal(out, fsync=False)
    journal.start(session)  # what a continuation writes first
    late = make_session(4).trials[3]
    journal.append(late)
    journal.close()  # killed: no final save
    loaded = load_session(out)
    assert loaded.constraints.max_latency_ms == 5.0 and loaded.strategy["name"] == "random"
    assert loaded.run.budget == 60 and [t.index for t in loaded.trials] == [0, 1, 2, 3]


def test_killed_process_loses_nothing(tmp_path: Path) -> None:
    """A real process appends trials and is SIGKILLed; every acknowledged trial is recovered."""
    out = tmp_path / "killed.json"
    script = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from workbench.core.domain.measurement import Measurement, Status, Trial
        from workbench.core.domain.session import Journal, Session
        from workbench.core.domain.space import Config
        journal = Journal({str(out)!r})
        journal.start(Session(kernel="victim", device={{"name": "sim", "simulated": True}}))
        for i in range(10**6):
            journal.append(Trial(i, Config({{"i": i}}), Measurement(Status.OK, {{"latency_ms": 1.0 + i}})))
            print(i, flush=True)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    acknowledged = -1
    assert proc.stdout is not None
    for line in proc.stdout:
        acknowledged = int(line)
        if acknowledged >= 40:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    session = load_session(out)
    assert session.kernel == "victim" and session.device["simulated"] is True
    indices = [t.index for t in session.trials]
    assert indices == list(range(len(indices))) and len(indices) >= acknowledged + 1


def test_journal_not_started_and_header_rules(tmp_path: Path) -> None:
    with pytest.raises(WorkbenchError, match="not started"):
        Journal(tmp_path / "x.json").append(make_session(1).trials[0])
    jp = tmp_path / "y.json.journal"
    jp.write_text(json.dumps(trial_to_dict(make_session(1).trials[0])) + "\n")
    with pytest.raises(SessionFormatError, match="no header line"):
        load_session(tmp_path / "y.json")
    header = json.dumps({**make_session(0).header_dict()})
    jp.write_text(header + "\n" + "{broken\n" + json.dumps(trial_to_dict(make_session(1).trials[0])) + "\n")
    with pytest.raises(SessionFormatError, match=r"y\.json\.journal: line 2: not valid JSON"):
        load_session(tmp_path / "y.json")


# --- validation -----------------------------------------------------------------------------------


def _write(tmp_path: Path, data, name: str = "session.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def _error(path: Path) -> str:
    with pytest.raises(SessionFormatError) as info:
        load_session(path)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_bad_status_is_named_with_file_field_and_choices(tmp_path: Path) -> None:
    data = make_session(14).to_dict()
    data["trials"][12]["status"] = "okay"
    message = _error(_write(tmp_path, data))
    assert message == (
        f"{tmp_path / 'session.json'}: trials[12].status: 'okay' is not a status "
        "(expected one of ok, compile_error, launch_error, runtime_error, timeout, crashed, wrong_result, skipped, aborted)"
    )
    nested = make_session(14).to_dict()
    record = nested["trials"][12]
    record["measurement"] = {k: record.pop(k) for k in ("status", "metrics", "message", "log", "details") if k in record}
    record["measurement"]["status"] = "okay"
    assert "trials[12].measurement.status: 'okay' is not a status (expected one of ok, compile_error" in _error(
        _write(tmp_path, nested)
    )


def test_newer_version_is_refused(tmp_path: Path) -> None:
    data = make_session(1).to_dict()
    data["version"] = FORMAT_VERSION + 1
    path = _write(tmp_path, data)
    assert _error(path) == (f"{path} was written by format version {FORMAT_VERSION + 1}; "
                            f"this workbench reads up to {FORMAT_VERSION}")


@pytest.mark.parametrize(
    "mutate, fragment",
    [
        (lambda d: d.update(format="something-else"), "format: 'something-else' is not 'kernel-workbench-session'"),
        (lambda d: d.update(version="1"), "version: '1' is not a format version"),
        (lambda d: d.update(kernel=""), "kernel: missing"),
        (lambda d: d.update(kind="magic"), "kind: 'magic' is not one of template, python, recording"),
        (lambda d: d.update(colour="red"), "colour: unknown field"),
        (lambda d: d.update(trials={}), "trials: expected a list, got dict"),
        (lambda d: d["device"].update(simulated="yes"), "device.simulated: expected true or false"),
        (lambda d: d.update(constraints={"max_latency_ms": "fast"}), "constraints: max_latency_ms: 'fast' is not a number"),
        (lambda d: d.update(weights={"latency_ms": -1}), "weights: weight for latency_ms cannot be negative"),
        (lambda d: d["trials"][1].update(index=-2), "trials[1].index: -2 is not an integer from 0 to 2**63-1"),
        (lambda d: d["trials"][1].update(index=0), "trials[1].index: 0 appears twice"),
        (lambda d: d["trials"][1].update(id="000000000000"), "trials[1].id: '000000000000' does not match its config"),
        (lambda d: d["trials"][1]["metrics"].update(latency_ms="1.5"), "trials[1].metrics.latency_ms: '1.5' is not a number"),
        (lambda d: d["trials"][1]["config"].update(block_size=[1]), "trials[1].config.block_size: [1] is not a number"),
        (lambda d: d["trials"][1]["config"].pop("vector"), "trials[1].config: has no value for slot 'vector'"),
        (lambda d: d["trials"][1].update(colour=1), "trials[1].colour: unknown field"),
        (lambda d: d["trials"][1].update(worker=3), "trials[1].worker: expected text, got int"),
        (lambda d: d["trials"].__setitem__(2, [1, 2]), "trials[2]: expected an object, got list"),
        (lambda d: d["space"]["slots"][0].update(group="warp"), "space: slot block_size: group 'warp'"),
        (lambda d: d["baselines"].update(cub={"latency_ms": "x"}), "baselines.cub.latency_ms: 'x' is not a number"),
    ],
)
def test_invalid_fields_are_explained(tmp_path: Path, mutate, fragment: str) -> None:
    data = make_session(4).to_dict()
    mutate(data)
    message = _error(_write(tmp_path, data))
    assert message.startswith(str(tmp_path / "session.json"))
    assert fragment in message, message


def test_unreadable_files(tmp_path: Path) -> None:
    assert _error(tmp_path / "missing.json").endswith("missing.json: no such file")
    assert "the file is empty" in _error(_write(tmp_path, "  \n"))
    assert "not valid JSON (line 1, column 2" in _error(_write(tmp_path, "{oops"))
    assert "expected a JSON object at the top, got list" in _error(_write(tmp_path, "[1, 2]"))
    kt = {"tune_params_keys": ["a"], "tune_params": {"a": [1]}, "cache": {}}
    assert "Kernel Tuner cache file" in _error(_write(tmp_path, kt))
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    assert "not UTF-8" in _error(binary)


def test_file_content_is_never_executed(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    data = make_session(2).to_dict()
    data["space"]["restrictions"] = [f"__import__('os').system('touch {marker}') == 0"]
    message = _error(_write(tmp_path, data))
    assert message.startswith(f"{tmp_path / 'session.json'}: space:")
    data = make_session(2).to_dict()
    data["notes"] = f"__import__('os').system('touch {marker}')"
    data["trials"][0]["message"] = "{{7*7}} $(touch pwned)"
    loaded = load_session(_write(tmp_path, data))
    assert loaded.notes.startswith("__import__") and not marker.exists()


def test_failed_save_leaves_previous_file_intact(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    save_session(make_session(3), path)
    before = path.read_bytes()
    broken = make_session(3)
    broken.add(Trial(3, Config({"block_size": 32, "vector": 1, "fast_math": False, "strategy": "atomic"}),
                     Measurement(Status.OK, {"latency_ms": 1.0}, details={"bad": object()})))
    with pytest.raises(WorkbenchError, match="cannot save session"):
        save_session(broken, path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json"]


def test_save_refuses_what_load_would_refuse(tmp_path: Path) -> None:
    session = make_session(3)
    session.add(Trial(1, session.trials[0].config, Measurement(Status.OK, {"latency_ms": 1.0})))
    with pytest.raises(WorkbenchError, match=r"cannot save session: trials\[3\]\.index: 1 appears twice"):
        save_session(session, tmp_path / "s.json")
    session = make_session(3)
    session.add(Trial(3, Config({"block_size": 32}), Measurement(Status.OK, {"latency_ms": 1.0})))
    with pytest.raises(WorkbenchError, match=r"trials\[3\]\.config: has no value for slot"):
        save_session(session, tmp_path / "s.json")
    assert not (tmp_path / "s.json").exists()


def test_a_large_session_round_trips_trial_for_trial(tmp_path: Path) -> None:
    """Many trials through the fast save and load paths, every one compared. How long that takes is
    a benchmark's business, not a test's (a limit on time fails on a slower or busier machine):
    ``python bench/session_io.py`` prints save and load times up to 100,000 trials."""
    session = make_session(5_000)
    path = tmp_path / "big.json"
    save_session(session, path)
    assert_same_session(load_session(path), session)


def test_session_metadata_records_round_trip_unchanged(tmp_path: Path) -> None:
    """The typed metadata (backend, device, strategy) is stored as the same JSON objects it always
    was: keys the records do not name (a newer backend's facts) survive a save and load."""
    from workbench.core.domain.records import provenance
    from workbench.core.domain.session import Session, load_session, save_session

    device = {"name": "Some GPU", "simulated": True, "sm_count": 132, "future_fact": [1, 2]}
    backend = {"kind": "sim", "options": {"kernel": "vector_add", "gpu_model": "H200", "noise": False, "extra": 3}}
    strategy = {"name": "random", "seed": 7, "options": {"batch": 4}, "state": {"told": 2}}
    session = Session(kernel="k", device=device, backend=backend, strategy=strategy)  # type: ignore[arg-type]
    path = tmp_path / "s.json"
    save_session(session, path)
    raw = json.loads(path.read_text())
    assert (raw["device"], raw["backend"], raw["strategy"]) == (device, backend, strategy)
    loaded = load_session(path)
    assert (loaded.device, loaded.backend, loaded.strategy) == (device, backend, strategy)
    assert provenance(loaded.device) == "simulated"
    assert provenance({"simulated": True, "replayed": True}) == "simulated"
    assert provenance({"replayed": True}) == "replayed" and provenance({}, "replay") == "replayed"
    assert provenance({"recorded": True}) == "recorded"


def test_a_file_written_before_the_typed_records_loads_and_saves_byte_identical(tmp_path: Path) -> None:
    """``fixtures/session_golden.json`` was written by the code before sessions had typed metadata
    records; loading and saving it again gives the same bytes, so the format did not change."""
    from workbench.core.domain.records import provenance
    from workbench.core.domain.session import load_session, save_session

    golden = Path(__file__).parent / "fixtures" / "session_golden.json"
    session = load_session(golden)
    assert session.backend["options"]["gpu_model"] == "H200" and session.strategy["state"] == {"told": 2}
    assert provenance(session.device) == "simulated" and session.device["sm_count"] == 132
    out = tmp_path / "again.json"
    save_session(session, out)
    assert out.read_bytes() == golden.read_bytes()
