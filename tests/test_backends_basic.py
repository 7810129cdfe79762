"""The python and replay backends: declarations, evaluation, errors, and faithful replay."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest

from workbench.backends.base import BackendSpec, EvalLimits, create_backend
from workbench.backends.python import PythonBackend
from workbench.backends.replay import ReplayBackend
from workbench.core.errors import WorkbenchError
from workbench.core.domain.measurement import Measurement, Status, Trial
from workbench.core.domain.session import Journal, save_session
from workbench.core.domain.space import Config
from workbench.runner.engine import Engine, session_for_target
from workbench.runner.inline import InlinePool
from workbench.search.grid import GridSearch

FIXTURES = Path(__file__).parent / "fixtures"
TRIVIAL = FIXTURES / "trivial_bench.py"
FAULTY = FIXTURES / "faulty_bench.py"


def _python(path: Path) -> BackendSpec:
    return BackendSpec("python", {"path": str(path)})


def test_python_target_reads_the_declarations():
    target = PythonBackend.target(_python(TRIVIAL))
    assert target.kernel == "trivial_bench" and target.kind == "python"
    assert [s.name for s in target.space.slots] == ["x", "y", "mode"]
    assert [s.group for s in target.space.slots] == ["launch", "memory", "compute"]
    assert target.space.restrictions == ("x * y <= 40",)
    assert dict(target.problem) == {"n": 1000}
    assert target.default_config == Config({"x": 0, "y": 1, "mode": "a"})
    # its code's identity; the bytes' hash, the identity of sessions made before, is an earlier one
    assert target.earlier_hashes == {hashlib.sha256(TRIVIAL.read_bytes()).hexdigest()[:16]}
    assert len(target.source_hash) == 16 and target.source_hash not in target.earlier_hashes
    assert target.device["simulated"] is False and target.device["backend"] == "python"


def test_python_source_hash_follows_the_file(tmp_path):
    bench = tmp_path / "b.py"
    bench.write_text("SPACE = {'a': [1, 2]}\ndef measure(c):\n    return {'latency_ms': 1.0}\n")
    first = PythonBackend.target(_python(bench)).source_hash
    bench.write_text("SPACE = {'a': [1, 2]}\ndef measure(c):\n    return {'latency_ms': 2.0}\n")
    assert PythonBackend.target(_python(bench)).source_hash != first


@pytest.mark.parametrize(
    "source, complaint",
    [
        ("def measure(c):\n    return {}\n", "must define SPACE"),
        ("SPACE = {'a': [1]}\n", "must define measure"),
        ("SPACE = {'a': [1]}\nGROUPS = {'a': 'gpu'}\ndef measure(c): pass\n", "group 'gpu'"),
        ("SPACE = {'a': [1]}\nGROUPS = {'b': 'memory'}\ndef measure(c): pass\n", "unknown slot 'b'"),
        ("SPACE = {'a': [1]}\nRESTRICTIONS = 'a > 0'\ndef measure(c): pass\n", "RESTRICTIONS"),
        ("SPACE = {'a': [1]}\nRESTRICTIONS = ['__import__(\"os\")']\ndef measure(c): pass\n", "not allowed"),
        ("1/0\n", "ZeroDivisionError"),
        # a number was a TypeError traceback; a generator passed the check by being used up by it
        ("SPACE = {'a': [1]}\nRESTRICTIONS = 5\ndef measure(c): pass\n", "RESTRICTIONS must be a list"),
        ("SPACE = {'a': [1]}\nRESTRICTIONS = (r for r in ['a > 0'])\ndef measure(c): pass\n", "RESTRICTIONS must be"),
        # materialised whole: a MemoryError traceback, and itertools.count() never ended
        ("SPACE = {'a': range(10**12)}\ndef measure(c): pass\n", r"SPACE\['a'\] has more than 1,000,000 values"),
        ("import itertools\nSPACE = {'a': itertools.count()}\ndef measure(c): pass\n", "more than 1,000,000"),
        # a value of 100,000 characters: named by its start and length (it was echoed whole, a 100 KB line)
        ("SPACE = {'s': ['a' * 100000, 'b']}\ndef measure(c): pass\n", r"'aaaa.*\.\.\. \(100,002 characters\) is not a short"),
    ],
)
def test_python_declaration_errors_are_one_line(tmp_path, source, complaint):
    bench = tmp_path / "bad.py"
    bench.write_text(source)
    with pytest.raises(WorkbenchError, match=complaint) as info:
        PythonBackend.target(_python(bench))
    assert "\n" not in str(info.value) and len(str(info.value)) < 1_000


def test_a_candidate_that_changes_folder_leaves_the_next_ones_where_the_worker_started(tmp_path, monkeypatch):
    """A worker measures one candidate after another: one whose measure() called os.chdir made
    every later candidate read its relative files elsewhere, and those configs failed, for good."""
    (tmp_path / "data.txt").write_text("2.0")
    bench = tmp_path / "cwd.py"
    bench.write_text("import os\nSPACE = {'mode': ['read', 'cd'], 'k': [1, 2]}\n"
                     "def measure(c):\n    if c['mode'] == 'cd':\n        os.chdir('/')\n"
                     "        return {'latency_ms': 1.0}\n"
                     "    return {'latency_ms': float(open('data.txt').read()) + c['k']}\n")
    monkeypatch.chdir(tmp_path)
    backend = create_backend(_python(bench))
    backend.prepare()
    assert backend.evaluate(Config({"mode": "cd", "k": 1}), EvalLimits()).status is Status.OK
    after = backend.evaluate(Config({"mode": "read", "k": 2}), EvalLimits())
    assert after.status is Status.OK and after.metrics["latency_ms"] == 4.0, after.message
    assert os.getcwd() == str(tmp_path)
    # a module that moves to its own folder as it loads keeps it; a candidate that leaves the
    # worker in a folder it removed is no one else's problem either
    own = tmp_path / "own"
    own.mkdir()
    (own / "data.txt").write_text("5.0")
    moving = own / "moving.py"
    moving.write_text("import os, shutil, tempfile\nos.chdir(os.path.dirname(os.path.abspath(__file__)))\n"
                      "SPACE = {'mode': ['read', 'cd', 'gone'], 'k': [1, 2]}\n"
                      "def measure(c):\n    if c['mode'] == 'cd':\n        os.chdir('/')\n"
                      "    elif c['mode'] == 'gone':\n        d = tempfile.mkdtemp()\n        os.chdir(d)\n"
                      "        shutil.rmtree(d)\n"
                      "    else:\n        return {'latency_ms': float(open('data.txt').read()) + c['k']}\n"
                      "    return {'latency_ms': 1.0}\n")
    backend = create_backend(_python(moving))
    backend.prepare()
    for mode in ("cd", "read", "gone", "read"):
        done = backend.evaluate(Config({"mode": mode, "k": 1}), EvalLimits())
        assert done.status is Status.OK and (mode != "read" or done.metrics["latency_ms"] == 6.0), done.message


def test_python_missing_path():
    with pytest.raises(WorkbenchError, match="options.path"):
        PythonBackend.target(BackendSpec("python", {}))
    with pytest.raises(WorkbenchError, match="not found"):
        PythonBackend.target(_python(FIXTURES / "does_not_exist.py"))


def test_a_worker_runs_the_benchmark_code_it_checked_not_an_edit_saved_after_the_check(tmp_path, monkeypatch):
    """A worker checks the file's code identity and then imports it: an edit saved between the two
    was imported under the checked identity. The import runs the bytes that were checked."""
    import workbench.backends.python as python_backend

    bench = tmp_path / "b.py"
    bench.write_text("SPACE = {'a': [1, 2]}\ndef measure(c):\n    return {'latency_ms': 5.0}\n")
    identity = PythonBackend.target(_python(bench)).source_hash
    checked = python_backend.code_identities

    def check_then_edit(data: bytes, folder: object = None) -> frozenset[str]:
        identities = checked(data, folder)
        bench.write_text("SPACE = {'a': [1, 2]}\ndef measure(c):\n    return {'latency_ms': 0.001}\n")
        return identities

    monkeypatch.setattr(python_backend, "code_identities", check_then_edit)
    backend = create_backend(BackendSpec("python", {"path": str(bench), python_backend.CODE_HASH_OPTION: identity}))
    backend.prepare()
    assert backend.evaluate(Config({"a": 1}), EvalLimits()).metrics["latency_ms"] == 5.0


def test_the_declarations_record_the_identity_of_the_code_they_imported(tmp_path, monkeypatch):
    """The declarations were read from the module imported, and the identity from a second read of
    the file: an edit saved in between was recorded as the session's code, and its workers then
    passed their check running code the space was not read from."""
    import workbench.backends.python as python_backend

    bench = tmp_path / "b.py"
    first = "SPACE = {'a': [1, 2]}\ndef measure(c):\n    return {'latency_ms': 5.0}\n"
    bench.write_text(first)
    loaded = python_backend.load_module

    def load_then_edit(path, source=None):
        module = loaded(path, source)
        bench.write_text(first.replace("5.0", "0.001"))
        return module

    monkeypatch.setattr(python_backend, "load_module", load_then_edit)
    target = PythonBackend.target_here(_python(bench))
    assert target.source_hash in python_backend.code_identities(first.encode())


def test_python_evaluate_in_process_reports_phases_and_failures():
    backend = create_backend(_python(FAULTY))
    backend.prepare()
    phases: list[str] = []
    ok = backend.evaluate(Config({"mode": "ok", "k": 1}), EvalLimits(), phases.append)
    assert ok.status is Status.OK and ok.metrics == {"latency_ms": 2.0, "memory_mb": 2.0}
    assert phases == ["run"]
    raised = backend.evaluate(Config({"mode": "raise", "k": 0}), EvalLimits())
    assert raised.status is Status.RUNTIME_ERROR and raised.message == "ValueError: bad config k=0"
    assert "Traceback" in raised.log
    missing = backend.evaluate(Config({"mode": "nolatency", "k": 0}), EvalLimits())
    assert missing.status is Status.RUNTIME_ERROR and "no 'latency_ms'" in missing.message


def test_python_zero_latency_is_a_failure_saying_why(tmp_path):
    """0 ms is no measurement (the timer did not resolve the call): recorded as the config's failure,
    so no view ever divides by it and no file holds it as a successful trial."""
    bench = tmp_path / "zero_bench.py"
    bench.write_text('SPACE = {"i": [0, 1]}\n\ndef measure(config):\n    return {"latency_ms": 0.0 if config["i"] == 0 else 0.5}\n')
    backend = create_backend(_python(bench))
    backend.prepare()
    zero = backend.evaluate(Config({"i": 0}), EvalLimits())
    assert zero.status is Status.RUNTIME_ERROR
    assert zero.message.startswith("measure() returned latency_ms=0.0: 0 ms is not a measurement")
    assert backend.evaluate(Config({"i": 1}), EvalLimits()).status is Status.OK


def test_sys_exit_in_measure_is_the_configs_failure_saying_so(tmp_path):
    """``sys.exit(0)`` in measure() ended the worker: "crashed: worker exited with code 0"."""
    bench = tmp_path / "exits.py"
    bench.write_text('import sys\nSPACE = {"i": [0, 1]}\n\ndef measure(config):\n'
                     '    if config["i"] == 0:\n        sys.exit(0)\n    return {"latency_ms": 0.5}\n')
    backend = create_backend(_python(bench))
    backend.prepare()
    ended = backend.evaluate(Config({"i": 0}), EvalLimits())
    assert ended.status is Status.RUNTIME_ERROR
    assert ended.message == "measure() called sys.exit(0) instead of returning its metrics"
    assert backend.evaluate(Config({"i": 1}), EvalLimits()).status is Status.OK


def _recording(tmp_path: Path) -> tuple[Path, list[Trial]]:
    """A small recorded session of the faulty benchmark, with ok and failed trials."""
    spec = _python(FAULTY)
    target = PythonBackend.target(spec)
    session = session_for_target(target, spec)
    session.device = {"name": "NVIDIA H100 80GB HBM3", "simulated": False}
    backend = create_backend(spec)
    backend.prepare()
    configs = [Config({"mode": m, "k": 0}) for m in ("ok", "raise", "nolatency")] + [Config({"mode": "ok", "k": 2})]
    for index, config in enumerate(configs):
        session.add(Trial(index, config, backend.evaluate(config, EvalLimits())))
    session.add(Trial(4, Config({"mode": "hang", "k": 0}), Measurement.failure(Status.TIMEOUT, "exceeded run timeout of 2.0 s")))
    path = tmp_path / "recorded.json"
    save_session(session, path)
    return path, list(session.trials)


def test_replay_space_is_the_recorded_points(tmp_path):
    path, trials = _recording(tmp_path)
    target = ReplayBackend.target(BackendSpec("replay", {"path": str(path)}))
    assert target.kind == "recording" and target.kernel == "faulty_bench"
    assert {c.id for c in target.space} == {t.config.id for t in trials}
    assert target.space.count() == 5
    assert target.device["replayed"] is True and target.device["name"] == "NVIDIA H100 80GB HBM3"


def test_replay_returns_what_was_recorded(tmp_path):
    path, trials = _recording(tmp_path)
    backend = create_backend(BackendSpec("replay", {"path": str(path)}))
    backend.prepare()
    for trial in trials:
        replayed = backend.evaluate(trial.config, EvalLimits())
        assert replayed.status is trial.status
        assert dict(replayed.metrics) == dict(trial.measurement.metrics)
        assert replayed.message == trial.measurement.message
    timeout = backend.evaluate(Config({"mode": "hang", "k": 0}), EvalLimits())
    assert timeout.status is Status.TIMEOUT and timeout.message == "exceeded run timeout of 2.0 s"
    unknown = backend.evaluate(Config({"mode": "ok", "k": 1}), EvalLimits())
    assert unknown.status is Status.SKIPPED and unknown.message == "not in the recording"


def test_replay_through_the_engine_reproduces_the_recording(tmp_path):
    path, trials = _recording(tmp_path)
    spec = BackendSpec("replay", {"path": str(path), "delay_s": 0.05})
    target = ReplayBackend.target(spec)
    session = session_for_target(target, spec)
    started = time.monotonic()
    finished = Engine(session, GridSearch(target.space), spec, workers=1, pool_factory=InlinePool).run()
    assert finished.reason == "exhausted" and finished.evaluations == 5
    assert time.monotonic() - started >= 4 * 0.05  # played back "as if live": the first at once, then one per pace
    recorded = {t.config.id: t.measurement for t in trials}
    for trial in session.trials:
        assert trial.measurement.status is recorded[trial.config.id].status
        assert dict(trial.measurement.metrics) == dict(recorded[trial.config.id].metrics)
    assert session.device["replayed"] is True


def test_a_recording_is_read_once_per_process_until_it_changes(tmp_path):
    """The target and the evaluations of one process share one reading of an unchanged
    recording; a recording written again (the file or its journal) is read again."""
    from workbench.backends.replay import load_recording
    from workbench.core.domain.session import load_session

    path, trials = _recording(tmp_path)
    first = load_recording(str(path))
    assert load_recording(str(path)) is first
    session = load_session(path)
    session.add(Trial(5, Config({"mode": "ok", "k": 1}), Measurement(Status.OK, {"latency_ms": 1.0})))
    save_session(session, path)
    again = load_recording(str(path))
    assert again is not first and len(again.trials) == len(trials) + 1
    journal = Journal(path)
    journal.start(again)
    journal.append(Trial(6, Config({"mode": "raise", "k": 2}), Measurement(Status.OK, {"latency_ms": 2.0})))
    journal.close()
    assert len(load_recording(str(path)).trials) == len(trials) + 2


def test_a_recording_read_by_two_threads_at_once_is_read_once(tmp_path, monkeypatch):
    """The window's Start, while its read-ahead of the same recording was still going, read the
    file a second time on the GUI thread (4 s frozen for an 18,000-config cache): it now waits for
    the read under way. A read that fails is tried again by the next caller."""
    import threading

    from workbench.backends import replay
    from workbench.core.domain import session as session_module

    path, _ = _recording(tmp_path)
    reads, started, release = [], threading.Event(), threading.Event()
    original = session_module.load_session

    def slow(name, *args, **kwargs):
        reads.append(name)
        started.set()
        release.wait(10)
        return original(name, *args, **kwargs)

    monkeypatch.setattr(session_module, "load_session", slow)
    got = []
    first = threading.Thread(target=lambda: got.append(replay.load_recording(str(path))))
    first.start()
    assert started.wait(10)
    second = threading.Thread(target=lambda: got.append(replay.load_recording(str(path))))
    second.start()
    second.join(0.3)
    assert second.is_alive()  # waiting for the first read, not reading beside it
    release.set()
    first.join(10)
    second.join(10)
    assert len(reads) == 1 and len(got) == 2 and got[0] is got[1]

    # a read that fails leaves the next caller to read the file itself
    path.write_text(path.read_text() + " ")  # another stamp: not the reading kept above
    calls = []

    def failing_once(name, *args, **kwargs):
        calls.append(name)
        if len(calls) == 1:
            raise OSError("the disk hiccuped")
        return original(name, *args, **kwargs)

    monkeypatch.setattr(session_module, "load_session", failing_once)
    with pytest.raises(OSError):
        replay.load_recording(str(path))
    assert replay.load_recording(str(path)).trials and len(calls) == 2 and not replay._READING


def test_replay_of_a_journal_only_recording(tmp_path):
    path, trials = _recording(tmp_path)
    from workbench.core.domain.session import load_session

    session = load_session(path)
    live = tmp_path / "live.json"
    journal = Journal(live)
    journal.start(session)
    journal.close()
    assert not live.exists()
    target = ReplayBackend.target(BackendSpec("replay", {"path": str(live)}))
    assert target.space.count() == len(trials)


def test_replay_errors(tmp_path):
    with pytest.raises(WorkbenchError, match="options.path"):
        ReplayBackend.target(BackendSpec("replay", {}))
    with pytest.raises(WorkbenchError, match="not found"):
        ReplayBackend.target(BackendSpec("replay", {"path": str(tmp_path / "none.json")}))
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    with pytest.raises(WorkbenchError):
        ReplayBackend.target(BackendSpec("replay", {"path": str(garbage)}))
    from workbench.backends.base import pace_option

    with pytest.raises(WorkbenchError, match="replay backend: delay_s must be a number of seconds from 0 to 60, got -1"):
        pace_option(BackendSpec("replay", {"path": str(garbage), "delay_s": -1}))


def test_replay_of_a_kernel_tuner_cache_file():
    spec = BackendSpec("replay", {"path": str(FIXTURES / "kt_cache_small.json")})
    target = ReplayBackend.target(spec)
    assert target.kernel == "vector_add" and target.space.count() == 5
    assert target.device["name"] == "NVIDIA A100-PCIE-40GB" and target.device["replayed"] is True
    assert Config({"block_size_x": 256, "tile": 2}) not in target.space  # declared, never recorded
    backend = create_backend(spec)
    backend.prepare()
    best = backend.evaluate(Config({"block_size_x": 256, "tile": 1}), EvalLimits())
    assert best.ok and best.metrics["latency_ms"] == pytest.approx(0.29)
    failed = backend.evaluate(Config({"block_size_x": 128, "tile": 2}), EvalLimits())
    assert failed.status is Status.COMPILE_ERROR and "CompilationFailedConfig" in failed.message
    missing = backend.evaluate(Config({"block_size_x": 256, "tile": 2}), EvalLimits())
    assert missing.status is Status.SKIPPED


def test_replay_of_a_gzipped_kernel_tuner_cache(tmp_path):
    import gzip

    packed = tmp_path / "cache.json.gz"
    packed.write_bytes(gzip.compress((FIXTURES / "kt_cache_small.json").read_bytes()))
    target = ReplayBackend.target(BackendSpec("replay", {"path": str(packed)}))
    assert target.space.count() == 5


_TIMED_CACHE = {
    "device_name": "GPU X", "kernel_name": "timed", "problem_size": 64, "tune_params_keys": ["block_size_x"],
    "tune_params": {"block_size_x": [32, 64, 128]},
    "cache": {
        "32": {"block_size_x": 32, "time": 2.0, "times": [1.9, 2.0, 2.1], "compile_time": 512.0,
               "verification_time": 3.0, "benchmark_time": 41.0, "GFLOP/s": 10.0},
        "64": {"block_size_x": 64, "time": 1.5, "times": [1.4, 1.5, 1.6], "compile_time": 734.0,
               "benchmark_time": 27.0},
        "128": {"block_size_x": 128, "time": "CompilationFailedConfig", "compile_time": 250.0},
    },
}


@pytest.mark.parametrize("executor", ["inline", "local"])
def test_a_replay_reports_the_recorded_timings_not_its_own(tmp_path, executor):
    """Every figure of a replayed trial is the recording's: latency and metrics, and the phase
    timings too (compile, verify, benchmark, total), never the milliseconds the look-up took."""
    import json

    from workbench.cli import main as cli_main
    from workbench.core.domain.session import load_session
    from workbench.core.io.interop import import_kt_cache

    cache = tmp_path / "timed.json"
    cache.write_text(json.dumps(_TIMED_CACHE))
    out = tmp_path / "replayed.json"
    assert cli_main(["tune", "--replay", str(cache), "--strategy", "grid", "--budget", "3", "--workers", "1",
                     "--executor", executor, "--quiet", "--out", str(out)]) == 0
    recorded = {t.config.id: t for t in import_kt_cache(cache).trials}
    replayed = load_session(out).trials
    assert len(replayed) == 3
    for trial in replayed:
        original = recorded[trial.config.id]
        assert trial.status is original.status
        assert dict(trial.measurement.metrics) == dict(original.measurement.metrics)
        assert dict(trial.timings) == pytest.approx(dict(original.timings))
    by_block = {t.config["block_size_x"]: t.timings for t in replayed}
    assert by_block[32] == pytest.approx({"compile_s": 0.512, "verify_s": 0.003, "benchmark_s": 0.041,
                                          "total_s": 0.556})
    assert by_block[128] == pytest.approx({"compile_s": 0.25, "total_s": 0.25})


def test_a_replayed_config_outside_the_recording_has_no_timings(tmp_path):
    """A config the recording lacks is skipped with no figures at all, not the look-up's time."""
    import json

    cache = tmp_path / "timed.json"
    cache.write_text(json.dumps(_TIMED_CACHE))
    backend = create_backend(BackendSpec("replay", {"path": str(cache)}))
    backend.prepare()
    missing = Config({"block_size_x": 256})
    assert backend.evaluate(missing, EvalLimits()).status is Status.SKIPPED
    assert backend.recorded_timings(missing) == {}
    assert backend.recorded_timings(Config({"block_size_x": 64})) == pytest.approx(
        {"compile_s": 0.734, "benchmark_s": 0.027, "total_s": 0.761})


@pytest.mark.parametrize("top_level, complaint", [
    ("import os\nos._exit(6)\n", r"the process ended as it loaded \(exit status 6\)"),  # ended the run, unexplained
    ("import os\nos.close(1)\nos.close(2)\nraise RuntimeError('no output left')\n", "RuntimeError: no output left"),
    ("raise KeyboardInterrupt\n", "KeyboardInterrupt while reading its declarations"),  # read as the user's Ctrl-C
])
def test_a_benchmark_module_that_ends_or_cripples_its_process_as_it_loads_is_one_line(tmp_path, top_level, complaint):
    """The declarations were read by importing the module in the tuning process itself: os._exit
    at its top level ended ``tune`` with the module's status and no word, closing stdout/stderr
    left the run nothing to report with. They are read in a process of their own."""
    import os
    import subprocess
    import sys

    bench = tmp_path / "bench.py"
    bench.write_text("SPACE = {'a': [1, 2]}\ndef measure(c):\n    return {'latency_ms': 1.0}\n" + top_level)
    with pytest.raises(WorkbenchError, match=complaint):
        PythonBackend.target(_python(bench))
    done = subprocess.run([sys.executable, str(Path(__file__).parents[1] / "main.py"), "tune", str(bench), "--budget", "2",
                           "--out", str(tmp_path / "s.json"), "--quiet"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and complaint.replace("\\", "")[:20] in done.stderr
    assert not (tmp_path / "s.json").exists()


def test_a_benchmark_module_that_hangs_or_prints_as_it_loads_neither_stalls_nor_floods_the_run(tmp_path, capfd):
    """A module sleeping at its top level kept the run from ever starting; what one printed as it
    loaded went to the terminal of ``tune``; a process it forked outlived the reading of it."""
    from processes import alive

    from workbench.backends.python import read_target

    pid_file = tmp_path / "pid"
    bench = tmp_path / "bench.py"
    bench.write_text("import os, sys, time\nSPACE = {'a': [1, 2]}\ndef measure(c):\n    return {'latency_ms': 1.0}\n"
                     "sys.stdout.write('x' * 1_000_000)\nsys.stdout.flush()\n"
                     f"pid = os.fork()\nif pid == 0:\n    time.sleep(60)\n    os._exit(0)\nopen({str(pid_file)!r}, 'w').write(str(pid))\n")
    target = read_target(_python(bench))
    assert target.space.count() == 2
    assert "xxxx" not in capfd.readouterr().out
    time.sleep(0.5)
    assert not alive(int(pid_file.read_text()))
    bench.write_text("import time\nSPACE = {'a': [1]}\ndef measure(c):\n    return {'latency_ms': 1.0}\ntime.sleep(60)\n")
    started = time.monotonic()
    with pytest.raises(WorkbenchError, match="still loading after 2 s"):
        read_target(_python(bench), timeout_s=2)
    assert time.monotonic() - started < 20


def test_a_benchmark_module_slow_to_load_is_said_while_it_is_waited_for(tmp_path, monkeypatch, caplog):
    """A module whose import hangs was silent for the whole wait (120 s) before its refusal."""
    import logging

    from workbench.backends import python as python_backend

    monkeypatch.setattr(python_backend, "SLOW_IMPORT_NOTE_S", 0.3)
    bench = tmp_path / "slow.py"
    bench.write_text("import time\nSPACE = {'a': [1]}\ndef measure(c):\n    return {'latency_ms': 1.0}\ntime.sleep(60)\n")
    with caplog.at_level(logging.WARNING), pytest.raises(WorkbenchError, match="still loading after 2 s"):
        python_backend.read_target(_python(bench), timeout_s=2)
    said = [r.getMessage() for r in caplog.records if "still loading after 0.3 s" in r.getMessage()]
    assert said == [f"python benchmark {bench}: its module is still loading after 0.3 s (given up after 2 s)"]


def test_a_benchmark_is_read_with_the_callers_environment_folder_and_path_of_the_moment(tmp_path, monkeypatch):
    """A module is read with the caller's environment, working folder and import path as they are
    at the read, not as they were at an earlier one (a long-lived reading process, such as a
    forkserver, would hand over those of its own start)."""
    from workbench.backends.python import read_target

    bench = tmp_path / "bench.py"
    bench.write_text("import os, helper_mod\n"
                     "SPACE = {'a': [int(os.environ['WB_TEST_SIZE']), int(open('size.txt').read()), helper_mod.SIZE]}\n"
                     "def measure(c):\n    return {'latency_ms': 1.0}\n")
    read_target(_python(TRIVIAL))  # the server is running from here on
    for n in (5, 7):
        folder, lib = tmp_path / f"cwd{n}", tmp_path / f"lib{n}"
        folder.mkdir()
        lib.mkdir()
        (folder / "size.txt").write_text(str(n + 1))
        (lib / "helper_mod.py").write_text(f"SIZE = {n + 2}\n")
        monkeypatch.setenv("WB_TEST_SIZE", str(n))
        monkeypatch.chdir(folder)
        monkeypatch.syspath_prepend(str(lib))
        assert read_target(_python(bench)).space.slots[0].values == (n, n + 1, n + 2)


@pytest.mark.parametrize("declarations, complaint", [
    ("SPACE = {'a': [object()]}", "slot a: <object object"),
    ("SPACE = {'a': [1, 1]}", "slot a: value 1 appears twice"),
    ("SPACE = {'a': [1]}\nDEFAULT = {'b': 1}", "unknown slot 'b'"),
])
def test_a_benchmarks_space_errors_name_its_file(tmp_path, declarations, complaint):
    """The space's own checks said 'slot a: value 1 appears twice' without naming the benchmark."""
    bench = tmp_path / "named.py"
    bench.write_text(declarations + "\ndef measure(c):\n    return {'latency_ms': 1.0}\n")
    with pytest.raises(WorkbenchError) as info:
        PythonBackend.target(_python(bench))
    assert str(info.value).startswith(f"python benchmark {bench}: ") and complaint in str(info.value)


def test_importing_a_users_python_file_writes_nothing_beside_it_and_runs_its_source(tmp_path, monkeypatch):
    """The default import wrote __pycache__/*.pyc into the user's folder (a template spec's, a
    benchmark's) and ran a cached .pyc whose recorded size and time matched the source instead of
    the source that was read and hashed."""
    import os
    import py_compile
    import sys

    from workbench.core.domain.templates import load_templates

    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # as for a user without PYTHONDONTWRITEBYTECODE
    bench = tmp_path / "bench.py"
    bench.write_text("SPACE = {'a': [7]}\ndef measure(c):\n    return {'latency_ms': 1.0}\n")
    stat = bench.stat()
    planted = Path(py_compile.compile(str(bench), doraise=True))  # the cache the import would trust ...
    bench.write_text("SPACE = {'a': [8]}\ndef measure(c):\n    return {'latency_ms': 1.0}\n")
    os.utime(bench, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # ... for a source of the same size and time
    assert [s.values for s in PythonBackend.target_here(_python(bench)).space.slots] == [(8,)]
    planted.unlink()
    planted.parent.rmdir()
    spec_folder = tmp_path / "specs"
    spec_folder.mkdir()
    for name in ("gelu.py", "gelu.cu"):
        (spec_folder / name).write_bytes((Path(__file__).parents[1] / "kernels" / name).read_bytes())
    assert "gelu" in load_templates(spec_folder)
    PythonBackend.target_here(_python(bench))
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["bench.py", "gelu.cu", "gelu.py", "specs"]


def test_what_a_module_writes_into_the_reading_processs_pipe_is_never_run_in_the_tuning_process(tmp_path):
    """The reading process's answer was unpickled with plain pickle.loads: a module writing a pickle
    of its own into that pipe made the tuning process call any function it named."""
    import os

    ran = tmp_path / "ran_in"
    bench = tmp_path / "bench.py"
    payload = f"open({str(ran)!r}, 'w').write(str(__import__('os').getpid()))"
    bench.write_text(
        "import gc, pickle\nfrom multiprocessing.connection import Connection\n"
        "SPACE = {'a': [1]}\ndef measure(c):\n    return {'latency_ms': 1.0}\n"
        f"class P:\n    def __reduce__(self):\n        return (exec, ({payload!r},))\n"
        "for c in gc.get_objects():\n"
        "    if isinstance(c, Connection) and not c.closed and c.writable:\n"
        "        c.send_bytes(pickle.dumps(P()))\n")
    with pytest.raises(WorkbenchError, match="its answer was unreadable"):
        PythonBackend.target(_python(bench))
    assert not ran.exists() or ran.read_text() != str(os.getpid())


def test_a_benchmarks_huge_reason_log_and_detail_are_kept_bounded(tmp_path, cli):
    """A benchmark raising with a 30-million-character text made each failed trial 60 MB (message
    and log) and its session 420 MB; a detail of that size, a 30 MB successful trial."""
    import json

    from workbench.core.domain.measurement import MAX_LOG_CHARS, MAX_MESSAGE_CHARS, bounded_text
    from workbench.core.domain.session import load_session

    bench = tmp_path / "bloat.py"
    bench.write_text("SPACE = {'x': [0, 1, 2]}\n\n\ndef measure(config):\n    if config['x'] == 0:\n"
                     "        return {'latency_ms': 1.0, 'note': 'n' * 3_000_000}\n"
                     "    raise ValueError('boom ' + 'x' * 3_000_000 + ' the end')\n")
    out = tmp_path / "s.json"
    assert cli("tune", bench, "--backend", "python", "--strategy", "grid", "--budget", "3", "--out", out,
               "--quiet").returncode == 0  # worker processes: bounded before it crosses the pipe too
    assert out.stat().st_size < 3 * (MAX_LOG_CHARS + MAX_MESSAGE_CHARS) + 100_000
    session = load_session(out)
    failed = [t for t in session.trials if not t.ok]
    assert len(failed) == 2 and all(len(t.measurement.message) <= MAX_MESSAGE_CHARS for t in failed)
    assert all("characters left out" in t.measurement.log and "the end" in t.measurement.log for t in failed)
    # the count is the text's, through the worker's copy, the save and the load (a note beyond the
    # bound was cut out and counted anew at each: "41 characters left out" of three million)
    import re

    counts = [int(re.search(r"\[\.\.\. ([\d,]+) characters left out", t.measurement.log).group(1).replace(",", ""))
              for t in failed]
    assert all(count > 2_700_000 for count in counts), counts
    assert all(len(t.measurement.log) <= MAX_LOG_CHARS and len(t.measurement.message) <= MAX_MESSAGE_CHARS
               for t in failed)
    note = next(t for t in session.trials if t.ok).measurement.details["note"]
    assert len(note) < 10_100 and "characters left out" in note
    assert bounded_text("short", 10) == "short" and json.dumps(bounded_text("a" * 100, 20)).count("left out") == 1


def test_an_interrupt_or_base_exception_raised_by_measure_is_that_candidates_failure_with_its_name(tmp_path, cli):
    """KeyboardInterrupt, a BaseException subclass, or an exception whose __str__ raises, from
    measure(): each killed the worker, recorded as 'worker exited with code 1', naming nothing."""
    from workbench.core.domain.session import load_session

    bench = tmp_path / "base.py"
    bench.write_text("SPACE = {'x': [1, 2, 3, 4]}\n\n\nclass E(BaseException):\n    pass\n\n\n"
                     "class S(Exception):\n    def __str__(self):\n        raise self\n\n\n"
                     "def measure(config):\n    x = config['x']\n    if x == 1:\n        raise KeyboardInterrupt\n"
                     "    if x == 2:\n        raise E('custom base')\n    if x == 3:\n        raise S()\n"
                     "    return {'latency_ms': 1.0}\n")
    out = tmp_path / "s.json"
    assert cli("tune", bench, "--backend", "python", "--strategy", "grid", "--budget", "4", "--out", out,
               "--quiet").returncode == 0
    said = [(t.status.value, t.measurement.message) for t in load_session(out).trials]
    assert said == [("runtime_error", "KeyboardInterrupt"), ("runtime_error", "E: custom base"),
                    ("runtime_error", "S (its message could not be formatted)"), ("ok", "")]


def test_a_run_whose_workers_are_slow_to_start_says_it_waits_for_them(tmp_path, cli, monkeypatch):
    """A benchmark whose module takes long to load in a worker held the run silent for the whole
    start allowance (120 s), whatever --timeout said: the run says it waits, and for how long."""
    import workbench.runner.engine as engine_module

    monkeypatch.setattr(engine_module, "STARTING_NOTE_EVERY_S", 0.3)
    flag = tmp_path / "declared"
    bench = tmp_path / "slow_start.py"  # quick when its declarations are read, slow in each worker
    bench.write_text(f"import os, time\nif os.path.exists({str(flag)!r}):\n    time.sleep(1.5)\n"
                     f"open({str(flag)!r}, 'w').close()\nSPACE = {{'x': [1, 2]}}\n\n\n"
                     "def measure(config):\n    return {'latency_ms': 1.0}\n")
    done = cli("tune", bench, "--backend", "python", "--strategy", "grid", "--budget", "2",
               "--out", tmp_path / "s.json", "--workers", "1")
    assert done.returncode == 0, done.stderr
    waits = [line for line in done.stderr.splitlines() if "for the workers to start" in line]
    assert waits and waits[0].startswith("[0/2] waiting ") and "python benchmark's module" in waits[0]


def test_a_benchmark_imports_the_modules_beside_it_not_the_workbenchs_folders(cli, tmp_path: Path) -> None:
    """``import helper`` beside the benchmark was not found (the workers' import path is the
    workbench's), and ``import bench`` took the workbench checkout's own ``bench/`` folder instead of
    the person's package of that name: code the person did not name ran."""
    (tmp_path / "helper.py").write_text("def base():\n    return 1.5\n")
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "__init__.py").write_text("OWN = 'mine'\n")
    (tmp_path / "uses_neighbours.py").write_text(
        "import bench\nimport helper\n"
        "SPACE = {'x': [1, 2]}\n"
        "def measure(config):\n"
        "    return {'latency_ms': helper.base() + config['x'], 'own': float(getattr(bench, 'OWN', '') == 'mine')}\n")
    out = tmp_path / "n.json"
    done = cli("tune", tmp_path / "uses_neighbours.py", "--backend", "python", "--strategy", "grid", "--budget", "2",
               "--quiet", "--out", out)
    assert done.returncode == 0, done.stderr
    trials = json.loads(out.read_text())["trials"]
    assert [t["metrics"]["latency_ms"] for t in trials] == [2.5, 3.5]
    assert all(t["metrics"]["own"] == 1.0 for t in trials)


def test_an_edit_of_a_module_beside_the_benchmark_is_other_code(cli, tmp_path: Path) -> None:
    """A benchmark's identity was its own file's code alone: an edit of the ``helper.py`` it imports
    was continued into the session unsaid, and trials of the old and the new code were ranked
    together. A comment there is no edit; a session hashed before helpers counted continues."""
    import workbench.backends.python as python_backend

    (tmp_path / "helper.py").write_text("def cost(a):\n    return 0.1 + a\n")
    bench = tmp_path / "uses_helper.py"
    bench.write_text("from helper import cost\nSPACE = {'a': [1, 2, 3, 4]}\n"
                     "def measure(config):\n    return {'latency_ms': cost(config['a'])}\n")
    out = tmp_path / "s.json"
    assert cli("tune", bench, "--strategy", "grid", "--budget", "1", "--quiet", "--out", out).returncode == 0
    (tmp_path / "helper.py").write_text("# the cost model\ndef cost(a):\n    return 0.1 + a  # per item\n")
    assert cli("tune", bench, "--resume", "--budget", "1", "--quiet", "--out", out).returncode == 0  # a comment
    (tmp_path / "helper.py").write_text("def cost(a):\n    return 5.0 + a\n")
    refused = cli("tune", bench, "--resume", "--budget", "1", "--quiet", "--out", out)
    assert refused.returncode == 2 and "changed" in refused.stderr, refused.stderr
    assert len(json.loads(out.read_text())["trials"]) == 2
    # a session recorded before the modules beside a benchmark counted: its own code's hash
    old = json.loads(out.read_text())
    old["source_hash"] = python_backend._code_hash(bench.read_bytes())
    out.write_text(json.dumps(old))
    assert cli("tune", bench, "--resume", "--budget", "1", "--quiet", "--out", out).returncode == 0
    # what the helper imports from beside it in turn, and a package beside it, count too; a file
    # named like a module of the standard library is never what runs, so it does not
    from workbench.backends.python import _code_hash

    (tmp_path / "inner.py").write_text("def g(x):\n    return 1.0 + x\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("K = 1\n")
    (tmp_path / "time.py").write_text("raise SystemExit('never imported')\n")
    chained = tmp_path / "chained.py"
    chained.write_text("import time\nimport pkg\nfrom middle import h\nSPACE = {'a': [1]}\n"
                       "def measure(c):\n    return {'latency_ms': h(1)}\n")
    (tmp_path / "middle.py").write_text("import inner\ndef h(x):\n    return inner.g(x)\n")
    before = _code_hash(chained.read_bytes(), tmp_path)
    for path, edit in ((tmp_path / "inner.py", "def g(x):\n    return 100.0 - x\n"),
                       (tmp_path / "pkg" / "__init__.py", "K = 2\n")):
        kept = path.read_text()
        path.write_text(edit)
        assert _code_hash(chained.read_bytes(), tmp_path) != before, path
        path.write_text(kept)
    (tmp_path / "time.py").write_text("raise SystemExit('still never imported')\n")
    assert _code_hash(chained.read_bytes(), tmp_path) == before
    # one of the standard library not built in is taken from beside the benchmark (its folder
    # comes first), so it counts; modules importing each other are each counted once
    from workbench.backends.python import _local_imports
    from workbench.core.domain import pysyntax

    (tmp_path / "colorsys.py").write_text("K = 5\n")
    (tmp_path / "ping.py").write_text("import pong\nimport colorsys\n")
    (tmp_path / "pong.py").write_text("import ping\n")
    mutual = pysyntax.parse(b"import ping\nimport pong\n")
    assert [name for name, _ in _local_imports(mutual, tmp_path)] == ["colorsys", "ping", "pong"]
    # the module imports nothing beside it: its identity is what it was
    lone = tmp_path / "lone.py"
    lone.write_text("import os\nSPACE = {'a': [1]}\ndef measure(c):\n    return {'latency_ms': 1.0}\n")
    assert python_backend._code_hash(lone.read_bytes(), tmp_path) == python_backend._code_hash(lone.read_bytes())


def test_a_declarations_answer_sent_as_its_reader_exits_is_read(monkeypatch) -> None:
    """The reader process answers and exits; when both happened between one wait for the answer
    and the check that the process lives, the benchmark was said to have "ended as it loaded"
    (a loaded machine failed a good benchmark, seen once in CI). Made to happen here: the first
    wait returns only once the answer is there and the reader is gone, saying nothing came."""
    from multiprocessing.connection import Connection

    from workbench.backends.python import read_target

    real = Connection.poll
    first = {"wait": True}

    def late(self, timeout=0.0):
        if timeout and first["wait"]:
            first["wait"] = False
            deadline = time.monotonic() + 60
            while not real(self, 0) and time.monotonic() < deadline:  # until the answer is in the pipe
                time.sleep(0.05)
            time.sleep(1.0)  # and the reader has exited
            return False
        return real(self, timeout)

    monkeypatch.setattr(Connection, "poll", late)
    bench = Path(__file__).parent / "fixtures" / "trivial_bench.py"
    target = read_target(_python(bench))
    assert target.space is not None and not first["wait"]


def test_a_benchmark_renamed_since_its_session_is_refused_saying_how_the_session_knows_its_file(cli, tmp_path) -> None:
    """"the session is of 'mybench', not of 'renamed.py'" did not say that the file's name is how
    the session finds it, nor what to do instead."""
    bench = tmp_path / "mybench.py"
    bench.write_text("SPACE = {'a': [1, 2]}\ndef measure(c):\n    return {'latency_ms': 1.0 + c['a']}\n")
    out = tmp_path / "s.json"
    assert cli("tune", bench, "--strategy", "grid", "--budget", "1", "--quiet", "--out", out).returncode == 0
    renamed = tmp_path / "renamed.py"
    bench.rename(renamed)
    refused = cli("tune", renamed, "--resume", "--budget", "1", "--quiet", "--out", out)
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        f"error: the session is of 'mybench', not of '{renamed}' (a python benchmark's session follows its file "
        f"by name: continue it with the file named mybench.py again, at any place; under another name it is another "
        f"benchmark, measured in a session of its own: tune {renamed} --out NEW.json)")


def test_a_pipe_or_a_huge_file_beside_a_benchmark_is_not_read_for_its_identity(tmp_path) -> None:
    """The identity reads the modules a benchmark imports from beside it, and opening a session in
    the window reads them too: a FIFO named like one waited for a writer for ever, a huge file was
    read whole. Either counts as unreadable, unread."""
    import os
    import threading

    import workbench.backends.python as python_backend

    os.mkfifo(tmp_path / "piped.py")
    (tmp_path / "big.py").write_bytes(b"#" * (python_backend.MAX_MODULE_BYTES + 1))
    data = b"import piped\nimport big\nSPACE = {'a': [1]}\ndef measure(c):\n    return {'latency_ms': 1.0}\n"
    result: list[object] = []
    worker = threading.Thread(target=lambda: result.append(python_backend._code_hash(data, tmp_path)), daemon=True)
    worker.start()
    worker.join(10)
    assert result and isinstance(result[0], str), "the identity waited on the pipe"
    tree = python_backend.pysyntax.parse(data)
    assert python_backend._local_imports(tree, tmp_path) == [("big", "unreadable"), ("piped", "unreadable")]
