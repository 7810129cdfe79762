"""Worker pool: real spawned subprocesses, per-phase timeouts, crashes recorded, nothing lost."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from workbench.backends.base import BackendSpec, EvalLimits
from workbench.core.domain.measurement import Status
from workbench.core.domain.space import Config
from workbench.runner.messages import PhaseStarted
from workbench.runner.pool import Pool, Result, WorkerPool, WorkerStartupError, describe_exit, worker_spec

FIXTURES = Path(__file__).parent / "fixtures"
FAULTY = BackendSpec("python", {"path": str(FIXTURES / "faulty_bench.py")})
TRIVIAL = BackendSpec("python", {"path": str(FIXTURES / "trivial_bench.py")})

pytestmark = pytest.mark.timeout(60)


def _drain(pool: WorkerPool) -> list:
    out = []
    while pool.busy:
        out.extend(pool.results(timeout=10))
    return out


def test_every_fault_is_recorded_once_with_its_reason():
    modes = ["ok", "hang", "segv", "exit3", "raise", "oom", "nolatency", "notadict"]
    configs = [Config({"mode": m, "k": 0}) for m in modes] + [Config({"mode": "ok", "k": k}) for k in (1, 2)]
    # 2 s: the hang must time out, and the others must not; an out-of-memory candidate fills 64 MiB
    # and formats its traceback, which took over 0.5 s in CI while replacement workers were starting
    limits = EvalLimits(compile_timeout_s=5.0, run_timeout_s=2.0)
    with WorkerPool(FAULTY, workers=2, limits=limits) as pool:
        for config in configs:
            pool.submit(config)
        results = _drain(pool)
        # hang, segv, exit3 and oom each cost a worker: 2 initial + 4 replacements (the worker that
        # retired after MemoryError may exit just after its result came back: give it a moment)
        deadline = time.monotonic() + 10
        while pool.started_workers < 6 and time.monotonic() < deadline:
            pool.poll(0.05)
        assert pool.started_workers == 6 and pool.workers == 2
    by_id = {}
    for config, measurement, timings, worker in results:
        assert config.id not in by_id, f"{config} reported twice"
        by_id[config.id] = (config, measurement, timings, worker)
    assert set(by_id) == {c.id for c in configs}
    status = {c["mode"] + str(c["k"]): m for c, m, _, _ in by_id.values()}
    assert status["ok0"].status is Status.OK and status["ok0"].metrics["latency_ms"] == 1.0
    assert status["ok2"].metrics["latency_ms"] == 3.0
    assert status["hang0"].status is Status.TIMEOUT
    assert status["hang0"].message == "exceeded run timeout of 2.0 s"
    assert status["segv0"].status is Status.CRASHED
    assert status["segv0"].message == "worker died with signal 11 (SIGSEGV)"
    assert status["exit30"].status is Status.CRASHED
    assert status["exit30"].message == "worker exited with code 3"
    assert status["raise0"].status is Status.RUNTIME_ERROR
    assert status["raise0"].message == "ValueError: bad config k=0"
    assert "Traceback" in status["raise0"].log and "faulty_bench.py" in status["raise0"].log
    assert "about to fail for k=0" in status["raise0"].log  # what the candidate printed
    # faulthandler's Python stacks: where it crashed, and where it hung when it was terminated
    assert "Segmentation fault" in status["segv0"].log and "in measure" in status["segv0"].log
    assert "faulty_bench.py" in status["hang0"].log and "in measure" in status["hang0"].log
    assert status["oom0"].status is Status.CRASHED
    assert "out of memory" in status["oom0"].message
    assert status["nolatency0"].status is Status.RUNTIME_ERROR
    assert "latency_ms" in status["nolatency0"].message
    assert status["notadict0"].status is Status.RUNTIME_ERROR


def test_hung_worker_is_killed_within_timeout_plus_one_second():
    limits = EvalLimits(run_timeout_s=0.5)
    with WorkerPool(FAULTY, workers=1, limits=limits) as pool:
        pool.submit(Config({"mode": "ok", "k": 0}))
        _drain(pool)  # worker is up and warm
        victim = pool._workers[0].process
        started = time.monotonic()
        pool.submit(Config({"mode": "hang", "k": 0}))
        (config, measurement, timings, worker), = pool.results(timeout=10)
        assert measurement.status is Status.TIMEOUT
        assert 0.5 <= timings["total_s"] < 1.5
        victim.join(2.0)
        assert not victim.is_alive()
        assert time.monotonic() - started < 1.5 + 0.5
        # the replacement works
        pool.submit(Config({"mode": "ok", "k": 1}))
        (_, again, _, _), = _drain(pool)
        assert again.ok


def test_compile_timeout_applies_to_the_compile_phase(tmp_path):
    bench = tmp_path / "phased_bench.py"
    bench.write_text(
        textwrap.dedent(
            """
            import time
            SPACE = {"t": [0.0, 0.4]}
            def measure(config):
                time.sleep(config["t"])
                return {"latency_ms": 1.0}
            """
        )
    )
    spec = BackendSpec("python", {"path": str(bench)})
    # the python backend reports phase "run": only the run timeout applies
    with WorkerPool(spec, workers=1, limits=EvalLimits(compile_timeout_s=0.1, run_timeout_s=2.0)) as pool:
        pool.submit(Config({"t": 0.4}))
        (_, measurement, timings, _), = _drain(pool)
        assert measurement.ok
        assert timings["benchmark_s"] >= 0.4 and timings["total_s"] >= timings["benchmark_s"]
    with WorkerPool(spec, workers=1, limits=EvalLimits(compile_timeout_s=5.0, run_timeout_s=0.2)) as pool:
        pool.submit(Config({"t": 0.4}))
        (_, measurement, _, _), = _drain(pool)
        assert measurement.status is Status.TIMEOUT
        assert measurement.message == "exceeded run timeout of 0.2 s"


def test_a_worker_told_to_quit_leaves_without_waiting_on_exit_hooks(tmp_path):
    """A worker's exit hooks waited for the simulator's compiles under way (which nobody would
    use), and the pool, which gives a worker a second before killing it, took a second longer to
    close at the end of every run. Here a hook stands for such waiting work: it must not run."""
    marker = tmp_path / "hook-ran"
    bench = tmp_path / "hooked_bench.py"
    bench.write_text(textwrap.dedent(f"""
        import atexit, pathlib
        atexit.register(lambda: pathlib.Path({str(marker)!r}).write_text("ran"))
        SPACE = {{"x": [1]}}
        def measure(config):
            return {{"latency_ms": 1.0}}
        """))
    with WorkerPool(BackendSpec("python", {"path": str(bench)}), workers=1, limits=EvalLimits()) as pool:
        pool.submit(Config({"x": 1}))
        (_, measurement, _, _), = _drain(pool)
        assert measurement.ok
        started = time.monotonic()
    assert time.monotonic() - started < 5 and not marker.exists()


def test_startup_failure_is_an_error_not_a_hang(tmp_path):
    bench = tmp_path / "broken_bench.py"
    bench.write_text("SPACE = {'x': [1]}\nraise RuntimeError('no device here')\n")
    spec = BackendSpec("python", {"path": str(bench)})
    with WorkerPool(spec, workers=2, limits=EvalLimits()) as pool:
        pool.submit(Config({"x": 1}))
        started = time.monotonic()
        with pytest.raises(WorkerStartupError, match="no device here"):
            while True:
                pool.results(timeout=5)
        assert time.monotonic() - started < 10


def test_missing_benchmark_file_is_a_startup_error(tmp_path):
    spec = BackendSpec("python", {"path": str(tmp_path / "nope.py")})
    with WorkerPool(spec, workers=1, limits=EvalLimits()) as pool:
        pool.submit(Config({"x": 1}))
        with pytest.raises(WorkerStartupError, match="not found"):
            pool.results(timeout=10)


def test_idle_count_busy_and_queueing():
    with WorkerPool(TRIVIAL, workers=2, limits=EvalLimits()) as pool:
        assert pool.idle_count == 2 and not pool.busy
        configs = [Config({"x": x, "y": 1, "mode": "a"}) for x in range(5)]
        for config in configs:
            pool.submit(config)
        assert pool.idle_count == 0 and pool.busy and pool.in_flight == 5
        results = list(pool)
        assert sorted(c["x"] for c, *_ in results) == list(range(5))
        assert {w for *_, w in results} <= {"worker-0", "worker-1"}
        assert pool.results(timeout=0.01) == []
        assert pool.idle_count == 2


def test_on_start_names_the_worker():
    seen = []
    with WorkerPool(TRIVIAL, workers=1, limits=EvalLimits(), on_start=lambda c, w: seen.append((c["x"], w))) as pool:
        for x in range(3):
            pool.submit(Config({"x": x, "y": 1, "mode": "a"}))
        _drain(pool)
    assert seen == [(0, "worker-0"), (1, "worker-0"), (2, "worker-0")]


def test_close_leaves_no_process_behind():
    pool = WorkerPool(FAULTY, workers=2, limits=EvalLimits(run_timeout_s=30))
    pool.submit(Config({"mode": "hang", "k": 0}))
    pool.results(timeout=0.5)  # let it start hanging
    processes = [w.process for w in pool._workers]
    pool.close()
    for process in processes:
        assert not process.is_alive()


def test_worker_spec_spreads_workers_over_devices():
    spec = BackendSpec("cuda", {"kernel": "reduce_sum", "devices": [0, 1]})
    assert [worker_spec(spec, i).options["device"] for i in range(3)] == [0, 1, 0]
    assert "devices" not in worker_spec(spec, 0).options and worker_spec(spec, 1).options["kernel"] == "reduce_sum"
    assert worker_spec(TRIVIAL, 5) is TRIVIAL


def test_describe_exit():
    assert describe_exit(-signal.SIGSEGV) == "worker died with signal 11 (SIGSEGV)"
    assert describe_exit(3) == "worker exited with code 3"
    assert describe_exit(-signal.SIGKILL).startswith("worker died with signal 9 (SIGKILL)")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux only")
def test_workers_die_with_their_parent(tmp_path):
    """SIGKILL the process that owns a pool: its workers must not linger."""
    pids = tmp_path / "pids"
    driver = tmp_path / "driver.py"
    driver.write_text(
        textwrap.dedent(
            f"""
            import sys, time
            sys.path.insert(0, {str(Path(__file__).parent.parent)!r})
            from workbench.backends.base import BackendSpec, EvalLimits
            from workbench.core.domain.space import Config
            from workbench.runner.pool import WorkerPool
            if __name__ == "__main__":
                pool = WorkerPool(BackendSpec("python", {{"path": {str(FIXTURES / "faulty_bench.py")!r}}}), 2,
                                  EvalLimits(run_timeout_s=60))
                pool.submit(Config({{"mode": "hang", "k": 0}}))
                pool.submit(Config({{"mode": "ok", "k": 0}}))
                pool.results(timeout=30)
                with open({str(pids)!r}, "w") as f:
                    f.write(" ".join(str(w.process.pid) for w in pool._workers))
                time.sleep(60)
            """
        )
    )
    proc = subprocess.Popen([sys.executable, str(driver)])
    try:
        deadline = time.monotonic() + 30
        while not pids.exists() or not pids.read_text():
            assert time.monotonic() < deadline, "driver never started its workers"
            assert proc.poll() is None, "driver died"
            time.sleep(0.05)
        worker_pids = [int(p) for p in pids.read_text().split()]
        assert len(worker_pids) == 2
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 3
    alive = worker_pids
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if _alive(p)]
        time.sleep(0.05)
    assert not alive, f"workers {alive} outlived their parent"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def test_workers_import_only_what_they_need():
    """A worker loads the backend contract and its backend, never Qt, Optuna, CuPy or the search layer."""
    code = (
        "import sys; import workbench.runner.worker, workbench.backends.python, workbench.backends.replay; "
        "heavy = ('PySide6', 'pyqtgraph', 'cupy', 'optuna', 'workbench.search', 'workbench.gui', 'workbench.runner.engine'); "
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=Path(__file__).parent.parent)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_verify_phase_has_its_own_timeout(tmp_path):
    """A backend that reports ``phase("verify")`` (the CUDA backend, around the comparison with the
    reference) is held to the verify timeout, not the run timeout. The python backend reports only
    "run", so the test sends the worker's own "verify" phase message once the candidate is running."""
    bench = tmp_path / "slow_check_bench.py"
    bench.write_text("import time\nSPACE = {'t': [0.6]}\ndef measure(config):\n    time.sleep(config['t'])\n"
                     "    return {'latency_ms': 1.0}\n")
    spec = BackendSpec("python", {"path": str(bench)})

    def run(limits: EvalLimits):
        with WorkerPool(spec, workers=1, limits=limits) as pool:
            pool.submit(Config({"t": 0.6}))
            worker = pool._workers[0]
            deadline = time.monotonic() + 30
            while worker.job is None or worker.job.phase_since == worker.job.dispatched:  # wait for "run"
                assert time.monotonic() < deadline
                pool.poll(0.01)
            pool._handle(worker, PhaseStarted(worker.job.seq, "verify", time.monotonic()))
            (_, measurement, _, _), = _drain(pool)
            return measurement

    assert run(EvalLimits(run_timeout_s=0.2, verify_timeout_s=5.0)).ok
    late = run(EvalLimits(run_timeout_s=5.0, verify_timeout_s=0.2))
    assert late.status is Status.TIMEOUT and late.message == "exceeded verify timeout of 0.2 s"


def test_local_and_ray_pools_implement_the_pool_protocol() -> None:
    """The engine only knows ``Pool``: every member it names exists on both executors' pools."""
    from workbench.runner.executors import LocalPool
    from workbench.runner.inline import InlinePool
    from workbench.runner.ray_executor import RayPool

    members = [name for name in Pool.__dict__ if not name.startswith("_") or name in ("__enter__", "__exit__")]
    assert {"submit", "results", "poll", "idle_count", "busy", "error", "set_abort_threshold", "close"} <= set(members)
    for cls in (WorkerPool, LocalPool, RayPool, InlinePool):
        missing = [name for name in members if not hasattr(cls, name)]
        assert not missing, f"{cls.__name__} lacks {missing}"


def test_results_are_named_records() -> None:
    """A pool's result names its fields (and still unpacks as before)."""
    with WorkerPool(TRIVIAL, workers=1) as pool:
        pool.submit(Config({"x": 1, "y": 2, "mode": "a"}))
        (result,) = _drain(pool)
    assert isinstance(result, Result) and result.measurement.ok
    assert result.config == Config({"x": 1, "y": 2, "mode": "a"}) and result.worker.startswith("worker-") and "total_s" in result.timings
    config, measurement, timings, worker = result
    assert (config, measurement, timings, worker) == (result.config, result.measurement, result.timings, result.worker)


def test_a_start_that_never_ends_is_one_error_naming_what_runs_at_start(tmp_path):
    """A template's Python reference runs when a worker starts; one that sleeps for ever kept a run
    at [0/N] until the start limit, whose message said nothing of where to look."""
    import json
    import shutil

    example = Path(__file__).resolve().parents[1] / "docs" / "examples" / "saxpy"
    shutil.copy(example / "saxpy.cu", tmp_path / "saxpy.cu")
    spec = json.loads((example / "saxpy.kernel.json").read_text())
    spec["reference"] = {"kind": "python", "file": "_ref.py"}
    (tmp_path / "saxpy.kernel.json").write_text(json.dumps(spec))
    (tmp_path / "_ref.py").write_text("import time\n\ndef reference(inputs, problem):\n    time.sleep(1000)\n")
    sim = BackendSpec("sim", {"kernel": "saxpy", "kernel_dirs": [str(tmp_path)], "compile": "estimate"})
    started = time.monotonic()
    with WorkerPool(sim, workers=1, start_timeout_s=3) as pool:
        pool.submit(Config({"block_size": 256, "items": 1}))
        with pytest.raises(WorkerStartupError, match="did not start within 3 s: its start runs code of the kernel's own "
                                                     r"\(a template's Python reference"):
            while time.monotonic() - started < 60:
                pool.results(timeout=0.2)
    assert time.monotonic() - started < 30


def test_a_ctrl_c_while_a_worker_starts_neither_kills_it_nor_prints_a_traceback(monkeypatch, capfd):
    """A terminal's Ctrl-C reaches every process of its group: one that arrived while a worker's
    interpreter was still importing killed it, or printed a KeyboardInterrupt traceback over the
    run's one-line "interrupted". The parent ends the run; the worker never takes the interrupt."""
    from multiprocessing.context import SpawnProcess

    real_start = SpawnProcess.start

    def start_then_interrupt(self) -> None:
        real_start(self)
        for _ in range(30):  # through the new interpreter's start, as a Ctrl-C at that moment would
            os.kill(self.pid, signal.SIGINT)
            time.sleep(0.01)

    monkeypatch.setattr(SpawnProcess, "start", start_then_interrupt)
    with WorkerPool(TRIVIAL, workers=1, limits=EvalLimits()) as pool:
        pool.submit(Config({"x": 6, "y": 4, "mode": "a"}))
        results = _drain(pool)
        assert pool.started_workers == 1
    assert [m.status for _c, m, _t, _w in results] == [Status.OK]
    assert "KeyboardInterrupt" not in capfd.readouterr().err
