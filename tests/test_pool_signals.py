"""How a pool ends when its owner is interrupted or killed: nothing a candidate started outlives it,
and the temporary folder of a pool whose process was killed is removed by the next pool."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from processes import pid_recording_bench
from processes import describe
from processes import wait_gone as _wait_gone

from workbench.backends.base import BackendSpec, EvalLimits
from workbench.core.domain.space import Config
from workbench.runner.pool import OUTPUT_DIR_PREFIX, WorkerPool, remove_stale_output_dirs

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.timeout(60),
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups and PR_SET_PDEATHSIG")]

#: ``stubborn`` starts a child, then ignores SIGTERM and never returns; ``child`` starts one and returns.
BENCH = '''
import os, signal, subprocess, sys, time

SPACE = {"mode": ["stubborn", "child"], "k": list(range(50))}


def _child():
    pid = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"]).pid
    with open(os.environ["WB_TEST_PIDS"], "a") as handle:
        handle.write(f"{pid}\\n")


def measure(config):
    _child()
    if config["mode"] == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            time.sleep(1)
    return {"latency_ms": 1.0 + config["k"]}
'''


def _pids(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()]


def _kill(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


@pytest.fixture()
def bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[BackendSpec, Path]:
    path, pids = pid_recording_bench(tmp_path, "signal_bench.py", BENCH)
    monkeypatch.setenv("WB_TEST_PIDS", str(pids))
    return BackendSpec("python", {"path": str(path)}), pids


def test_a_close_cut_short_by_a_second_interrupt_still_kills_every_worker_and_its_children(bench) -> None:
    """Ctrl-C twice: the second lands while close() waits for a worker whose candidate ignores
    SIGTERM. Before, close() gave up there marked closed, and the interpreter's exit waited for that
    worker forever; now the worker and what its candidate started are killed before it propagates."""
    spec, pids = bench
    pool = WorkerPool(spec, workers=1, limits=EvalLimits(compile_timeout_s=60.0, run_timeout_s=60.0))
    worker = pool._workers[0].process
    real_join = worker.join
    calls: list[Any] = []

    def join(timeout: float | None = None) -> None:
        calls.append(timeout)
        if len(calls) == 1:
            raise KeyboardInterrupt  # the second Ctrl-C, during the polite wait
        real_join(timeout)

    try:
        pool.submit(Config({"mode": "stubborn", "k": 0}))
        deadline = time.monotonic() + 30
        while not pids.read_text().strip():
            assert time.monotonic() < deadline, "the candidate never started"
            pool.poll(0.05)
        worker.join = join
        with pytest.raises(KeyboardInterrupt):
            pool.close()
        assert calls, "close() never waited for the worker"
        left = _wait_gone([worker.pid, *_pids(pids)])
        assert not left, f"outlived an interrupted close: {describe(left)}"
        assert not os.path.exists(pool._output_dir)
    finally:
        _kill([worker.pid, *_pids(pids)])
        worker.join = real_join
        pool.close()


def test_the_children_of_candidates_die_with_a_pool_whose_owner_is_killed(bench, tmp_path: Path) -> None:
    """SIGKILL of the tuning process: the kernel signals each worker, which ends its whole process
    group, the children its candidates started included (before, the worker alone died)."""
    spec, pids = bench
    driver = tmp_path / "driver.py"
    workers_file = tmp_path / "workers.txt"
    driver.write_text(textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from workbench.backends.base import BackendSpec, EvalLimits
        from workbench.core.domain.space import Config
        from workbench.runner.pool import WorkerPool
        if __name__ == "__main__":
            pool = WorkerPool(BackendSpec("python", {{"path": {spec.options["path"]!r}}}), 2,
                              EvalLimits(compile_timeout_s=60, run_timeout_s=60))
            pool.submit(Config({{"mode": "stubborn", "k": 0}}))  # busy in Python when its parent dies
            pool.submit(Config({{"mode": "child", "k": 1}}))     # idle, waiting for the next candidate
            while pool.busy and not pool.results(timeout=0.1):
                pass
            with open({str(workers_file)!r}, "w") as f:
                f.write(" ".join(str(w.process.pid) for w in pool._workers))
            time.sleep(120)
        """))
    proc = subprocess.Popen([sys.executable, str(driver)])
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 40
        while not workers_file.exists() or len(_pids(pids)) < 2 or not workers_file.read_text():
            assert time.monotonic() < deadline, "the driver never got both candidates going"
            assert proc.poll() is None, "the driver died"
            time.sleep(0.05)
        workers = [int(pid) for pid in workers_file.read_text().split()]
        proc.kill()
        proc.wait(timeout=30)
        left = _wait_gone(workers + _pids(pids))
        assert not left, f"outlived the killed owner of their pool (workers {workers}): {describe(left)}"
    finally:
        proc.kill()
        proc.wait(timeout=30)
        _kill(workers + _pids(pids))


def _dead_pid() -> int:
    """The pid of a process that has ended (reuse within the test is vanishingly unlikely)."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_a_new_pool_removes_only_the_folders_of_pools_whose_process_is_gone(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    dead = _dead_pid()
    stale = tmp_path / f"{OUTPUT_DIR_PREFIX}{dead}-abcd1234"
    stale.mkdir()
    (stale / "worker-0.0.out").write_text("output")
    (stale / "worker-1.3.out").write_text("")
    empty = tmp_path / f"{OUTPUT_DIR_PREFIX}{dead}-zz_9yy8x"
    empty.mkdir()
    live = tmp_path / f"{OUTPUT_DIR_PREFIX}{os.getpid()}-abcd1234"  # a pool of a process still running
    live.mkdir()
    (live / "worker-0.0.out").write_text("")
    foreign = tmp_path / f"{OUTPUT_DIR_PREFIX}{dead}-efgh5678"  # holds something no pool writes
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    unnamed = tmp_path / f"{OUTPUT_DIR_PREFIX}abcd1234"  # an older pool's name: no owner to check
    unnamed.mkdir()
    other = tmp_path / f"other-{dead}-abcd1234"
    other.mkdir()
    target = tmp_path / "target"
    target.mkdir()
    (target / "worker-0.0.out").write_text("not a pool's")
    link = tmp_path / f"{OUTPUT_DIR_PREFIX}{dead}-link5678"
    link.symlink_to(target)
    plain = tmp_path / f"{OUTPUT_DIR_PREFIX}{dead}-file5678"
    plain.write_text("a file")
    removed = remove_stale_output_dirs(str(tmp_path))
    assert sorted(removed) == sorted([str(stale), str(empty)])
    assert not stale.exists() and not empty.exists()
    for kept in (live, foreign, unnamed, other, target, link, plain):
        assert kept.exists() or kept.is_symlink(), kept
    assert (target / "worker-0.0.out").read_text() == "not a pool's"
    # a pool's start does it in the temporary folder, and names its own folder after its process
    again = tmp_path / f"{OUTPUT_DIR_PREFIX}{dead}-abcd1234"
    again.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with WorkerPool(BackendSpec("python", {"path": str(ROOT / "tests" / "fixtures" / "trivial_bench.py")})) as pool:
        assert not again.exists()
        assert Path(pool._output_dir).parent == tmp_path
        assert Path(pool._output_dir).name.startswith(f"{OUTPUT_DIR_PREFIX}{os.getpid()}-")
