"""A session read from a Kernel Tuner cache under an earlier rule (``latency_ms`` was Kernel
Tuner's ``time``, now the median of the repetitions) is never continued into a mix of both.

The old-rule sessions are written here as JSON, the way the earlier code saved them: no
``kt_time_ms`` beside the latency, no reading recorded in the device record.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from cli_errors import one_line_error

from workbench.core.domain.session import Journal, journal_path, load_session
from workbench.core.errors import WorkbenchError
from workbench.core.io.interop import KT_READING, import_kt_cache
from workbench.core.io.session_lock import lock_path
from workbench.runner.controller import RunRequest, resume_run, run_to_end

pytestmark = pytest.mark.usefixtures("inline_runs")

# Kernel Tuner's time is the mean; b=3's median (1.2) is the best, its mean (3.0) the worst.
CACHE = {"device_name": "GPU", "kernel_name": "k", "problem_size": 100, "tune_params_keys": ["b"],
         "tune_params": {"b": [1, 2, 3, 4]}, "objective": "time",
         "cache": {"1": {"b": 1, "time": 2.0, "times": [2.0, 2.0, 2.0]},
                   "2": {"b": 2, "time": 1.5, "times": [1.4, 1.5, 1.6]},
                   "3": {"b": 3, "time": 3.0, "times": [1.2, 1.2, 6.6]},
                   "4": {"b": 4, "time": 1.6, "times": [1.6, 1.6, 1.6]}}}


def _cache(tmp_path: Path) -> Path:
    path = tmp_path / "c.json"
    path.write_text(json.dumps(CACHE))
    return path


def _as_read_before(data: dict[str, Any]) -> None:
    """``data`` (a session file's JSON) as the earlier code wrote it: latency_ms = Kernel Tuner's time."""
    data["device"].pop("kt_reading")
    for trial in data["trials"]:
        metrics = trial.get("metrics", {})
        if "kt_time_ms" in metrics:
            metrics["latency_ms"] = metrics.pop("kt_time_ms")


def _old_replay(tmp_path: Path) -> tuple[Path, Path]:
    """A replay session of two of the cache's configs, read under the old rule."""
    cache = _cache(tmp_path)
    out = tmp_path / "s.json"
    run_to_end(RunRequest(replay=str(cache), strategy="random", budget=2, seed=1), out)
    data = json.loads(out.read_text())
    _as_read_before(data)
    out.write_text(json.dumps(data))
    return cache, out


def test_the_reading_is_recorded_by_an_import_and_a_replay(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    assert import_kt_cache(cache).device["kt_reading"] == KT_READING
    session, _ = run_to_end(RunRequest(replay=str(cache), strategy="random", budget=2), tmp_path / "s.json")
    assert load_session(tmp_path / "s.json").device["kt_reading"] == KT_READING


def test_an_old_replay_session_is_not_continued_and_is_left_as_it_is(cli, tmp_path: Path) -> None:
    """Continued, its trials keep Kernel Tuner's time while the new ones get medians: the best
    median (b=3, 1.2) was recorded at its mean 3.0 and would never be recommended."""
    _cache_path, out = _old_replay(tmp_path)
    before = out.read_bytes()
    with pytest.raises(WorkbenchError, match=r"1 of its trials were read from c\.json when .* now their median"):
        resume_run(out, RunRequest(budget=2))
    assert out.read_bytes() == before and not lock_path(out).exists()
    line = one_line_error(cli("tune", "--resume", str(out), "--budget", "2", "--quiet"))
    assert "new session" in line and "--replay" in line and "stays as it is" in line
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json", "s.json"]


def test_an_old_interrupted_replay_is_not_continued_from_its_journal(tmp_path: Path) -> None:
    _cache_path, out = _old_replay(tmp_path)
    Journal(out).start(load_session(out))
    out.unlink()  # killed before its first save: only the journal is left
    before = journal_path(out).read_bytes()
    with pytest.raises(WorkbenchError, match="1 of its trials were read from c.json"):
        resume_run(out, RunRequest(budget=2))
    assert journal_path(out).read_bytes() == before and not out.exists()


def test_an_old_import_is_not_continued_and_says_to_import_again(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    out = tmp_path / "imported.json"
    from workbench.core.domain.session import save_session

    save_session(import_kt_cache(cache), out)
    data = json.loads(out.read_text())
    _as_read_before(data)
    out.write_text(json.dumps(data))
    with pytest.raises(WorkbenchError, match=r"1 of its trials .* import c\.json again"):
        resume_run(out, RunRequest(budget=1))


def test_a_session_read_now_continues_to_the_medians_best(tmp_path: Path) -> None:
    """Read today (recorded or not: sessions saved before the reading was recorded keep Kernel
    Tuner's time beside the median), a replay continues and recommends the best median."""
    cache = _cache(tmp_path)
    out = tmp_path / "s.json"
    run_to_end(RunRequest(replay=str(cache), strategy="random", budget=2, seed=1), out)
    data = json.loads(out.read_text())
    data["device"].pop("kt_reading")  # saved between the median rule and its record
    out.write_text(json.dumps(data))
    session, _ = run_to_end(RunRequest(budget=2, strategy="grid"), out, resume=True)
    assert len(session.trials) == 4 and all("kt_time_ms" in t.measurement.metrics for t in session.trials)
    best = min(session.trials, key=lambda t: t.measurement.metrics["latency_ms"])
    assert dict(best.config) == {"b": 3}


def test_a_replay_of_a_session_file_continues_whatever_its_reading(tmp_path: Path) -> None:
    """A session file is replayed as it was saved: an old import's replay is consistent with itself."""
    from workbench.core.domain.session import save_session

    recording = tmp_path / "imported.json"
    save_session(import_kt_cache(_cache(tmp_path)), recording)
    data = json.loads(recording.read_text())
    _as_read_before(data)
    recording.write_text(json.dumps(data))
    out = tmp_path / "s.json"
    run_to_end(RunRequest(replay=str(recording), strategy="random", budget=2), out)
    session, _ = run_to_end(RunRequest(budget=2), out, resume=True)
    assert len(session.trials) == 4


def test_a_recording_path_with_braces_is_named_as_it_is(tmp_path: Path) -> None:
    folder = tmp_path / "a{budget}b"
    folder.mkdir()
    _cache_path, out = _old_replay(folder)
    with pytest.raises(WorkbenchError) as refused:
        resume_run(out, RunRequest(budget=2))
    # as it is, quoted for the shell as a path a message proposes is
    assert f"tune --replay {shlex.quote(str(folder / 'c.json'))})" in str(refused.value), str(refused.value)


def test_an_old_session_whose_figures_read_the_same_now_continues(tmp_path: Path) -> None:
    """Records without repetitions have one figure, Kernel Tuner's, under both rules; so do
    repetitions whose median equals Kernel Tuner's time: nothing would mix, and nothing is refused."""
    data = json.loads(json.dumps(CACHE))
    for record in data["cache"].values():
        record.pop("times")
    cache = tmp_path / "c.json"
    cache.write_text(json.dumps(data))
    out = tmp_path / "imported.json"
    from workbench.core.domain.session import save_session

    save_session(import_kt_cache(cache), out)
    old = json.loads(out.read_text())
    _as_read_before(old)
    out.write_text(json.dumps(old))
    session, _ = run_to_end(RunRequest(budget=1), out, resume=True)
    assert len(session.trials) == 4 and min(t.metric("latency_ms") for t in session.trials) == 1.5


def test_a_replay_whose_recording_changed_says_so_not_that_code_changed(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    out = tmp_path / "s.json"
    run_to_end(RunRequest(replay=str(cache), strategy="random", budget=2, seed=1), out)
    data = json.loads(cache.read_text())
    data["cache"]["5"] = {"b": 5, "time": 1.0, "times": [1.0, 1.0, 1.0]}
    data["tune_params"]["b"].append(5)
    cache.write_text(json.dumps(data))
    with pytest.raises(WorkbenchError, match="the recording changed since the session replayed it") as refused:
        resume_run(out, RunRequest(budget=1))
    assert "code" not in str(refused.value)


def test_a_replay_continues_after_its_recordings_line_endings_or_packing_changed(tmp_path: Path) -> None:
    """A recording whose line endings a checkout changed (git autocrlf), saved with a byte-order
    mark or gzipped is the same recording; hashed as raw bytes it was "the recording changed".
    A session hashed from the bytes (before) continues while they are as they were."""
    import gzip
    import hashlib

    recording = json.loads(json.dumps(CACHE))  # eight configs: one more measured at each step below
    recording["tune_params"]["b"] = list(range(1, 9))
    recording["cache"].update({str(b): {"b": b, "time": 1.0 + b, "times": [1.0 + b] * 3} for b in range(5, 9)})
    cache = tmp_path / "c.json"
    cache.write_text(json.dumps(recording, indent=1))  # on several lines, as Kernel Tuner writes it
    out = tmp_path / "s.json"
    run_to_end(RunRequest(replay=str(cache), strategy="random", budget=1, seed=1), out)
    text = cache.read_bytes()
    cache.write_bytes(b"\xef\xbb\xbf" + text.replace(b"\n", b"\r\n"))
    session, finished = run_to_end(RunRequest(budget=1), out, resume=True)
    assert finished.reason == "budget" and len(session.trials) == 2
    cache.write_text(json.dumps(recording) + "\n")  # laid out anew, with a final newline
    session, _ = run_to_end(RunRequest(budget=1), out, resume=True)
    assert len(session.trials) == 3
    packed = tmp_path / "c.json.gz"
    packed.write_bytes(gzip.compress(text))
    session, _ = run_to_end(RunRequest(budget=1, replay=str(packed)), out, resume=True)
    assert len(session.trials) == 4
    # a session whose hash is of the file's bytes, as every replay was hashed before
    cache.write_bytes(text)
    data = json.loads(out.read_text())
    data["source_hash"] = hashlib.sha256(text).hexdigest()[:16]
    data["backend"]["options"]["path"] = str(cache)
    out.write_text(json.dumps(data))
    session, _ = run_to_end(RunRequest(budget=1), out, resume=True)
    assert len(session.trials) == 5


def test_continuing_a_replay_with_another_gpus_recording_names_the_device(tmp_path: Path) -> None:
    """It said "the recording changed since the session replayed it", which nothing had."""
    cache = _cache(tmp_path)
    out = tmp_path / "s.json"
    run_to_end(RunRequest(replay=str(cache), strategy="random", budget=2, seed=1), out)
    other = tmp_path / "other_gpu.json"
    data = json.loads(cache.read_text())
    data["device_name"] = "Another GPU"
    other.write_text(json.dumps(data))
    with pytest.raises(WorkbenchError, match="the device is 'Another GPU' instead of ") as refused:
        resume_run(out, RunRequest(budget=1, replay=str(other)))
    assert "changed" not in str(refused.value)


def test_a_continued_run_refuses_a_replay_or_a_size_it_would_not_run(tmp_path: Path) -> None:
    """``--replay`` on a simulated session, and ``--set`` on a replayed one, were dropped: the run
    went on with the session's own backend and size, exit 0, where a new run and the window
    refuse both."""
    cache = _cache(tmp_path)
    simulated = tmp_path / "sim.json"
    _, finished = run_to_end(RunRequest(kernel="vector_add", backend="sim", strategy="random", budget=2, seed=1,
                                        backend_options={"compile": "estimate"}), simulated)
    assert finished.reason == "budget", finished.message
    with pytest.raises(WorkbenchError, match=r"measured with the sim backend, not replay; start a new run \(tune KERNEL "
                                             r"or tune --replay FILE\) to replay a recording"):
        resume_run(simulated, RunRequest(budget=1, replay=str(cache)))
    replayed = tmp_path / "replayed.json"
    run_to_end(RunRequest(replay=str(cache), strategy="random", budget=2, seed=1), replayed)
    before = replayed.read_bytes()
    with pytest.raises(WorkbenchError, match=r"^--set bogus: not a problem parameter of the recording \(its problem "
                                             r"parameters: problem_size\)$"):  # (said as "no trials at bogus=7")
        resume_run(replayed, RunRequest(budget=1, problem={"bogus": 7}))
    with pytest.raises(WorkbenchError, match=r"^--set b: a tunable slot of the recording, not a problem "
                                             "parameter: a replay searches the recorded configs"):
        resume_run(replayed, RunRequest(budget=1, problem={"b": 2}))
    with pytest.raises(WorkbenchError, match="has no trials at problem_size=7"):
        resume_run(replayed, RunRequest(budget=1, problem={"problem_size": 7}))
    assert replayed.read_bytes() == before
    own = dict(load_session(replayed).problem)  # its own size, said again, continues
    assert resume_run(replayed, RunRequest(budget=1, problem=own)).run().reason == "budget"
    assert len(load_session(replayed).trials) == 3


def test_a_continued_runs_set_changes_the_sessions_own_problem(tmp_path: Path) -> None:
    """``--set alpha=2.0`` on a session at n=4096 was read as the template's whole problem, so n
    went back to its default and the run was refused as one of another problem."""
    out = tmp_path / "s.json"
    _, finished = run_to_end(RunRequest(kernel="vector_add", backend="sim", strategy="random", budget=2,
                                        problem={"n": 4096}, backend_options={"compile": "estimate"}), out)
    assert finished.reason == "budget", finished.message
    assert resume_run(out, RunRequest(budget=1, problem={"alpha": 2.0})).run().reason == "budget"
    assert len(load_session(out).trials) == 3 and load_session(out).problem == {"n": 4096, "alpha": 2.0}
    with pytest.raises(WorkbenchError, match="the problem is"):
        resume_run(out, RunRequest(budget=1, problem={"alpha": 3.0}))


@pytest.mark.parametrize("where, reason", [
    ("gone.json", "which is not there any more"),
    ("folder", "which is not a regular file"),
    ("a" * 5000, "which cannot be opened (File name too long)"),
])
def test_a_replayed_file_that_cannot_be_read_says_why_in_a_short_line(cli, tmp_path: Path, where: str, reason: str) -> None:
    """A session replaying a folder or a device said its file was "not there any more", and one
    naming a path of 100,000 characters printed the system's error with the whole path in it."""
    cache = _cache(tmp_path)
    out = tmp_path / "s.json"
    run_to_end(RunRequest(replay=str(cache), strategy="random", budget=2), out)
    (tmp_path / "folder").mkdir()
    data = json.loads(out.read_text())
    data["backend"]["options"]["path"] = str(tmp_path / where)
    out.write_text(json.dumps(data))
    line = one_line_error(cli("tune", "--resume", str(out), "--budget", "3", "--quiet"))
    assert reason in line and "--replay" in line and len(line) < 600
