"""How a pool ends when its owner is interrupted or killed: nothing a candidate started outlives it."""

from __future__ import annotations

import os
import signal
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from workbench.backends.base import BackendSpec, EvalLimits
from workbench.core.domain.space import Config
from workbench.runner.pool import WorkerPool

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


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purposes
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def _wait_gone(pids: list[int], seconds: float = 10.0) -> list[int]:
    deadline = time.monotonic() + seconds
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [pid for pid in alive if _alive(pid)]
    return alive


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
    path = tmp_path / "signal_bench.py"
    path.write_text(textwrap.dedent(BENCH))
    pids = tmp_path / "pids.txt"
    pids.write_text("")
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
        assert not left, f"{left} outlived an interrupted close"
        assert not os.path.exists(pool._output_dir)
    finally:
        _kill([worker.pid, *_pids(pids)])
        worker.join = real_join
        pool.close()
