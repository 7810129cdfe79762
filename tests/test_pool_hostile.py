"""Candidates that misbehave towards the worker itself: children left behind, bytes written into
the worker's pipe. Real spawned workers running a Python benchmark written into the test's folder."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

import pytest
from processes import alive as _alive

from workbench.backends.base import BackendSpec, EvalLimits
from workbench.core.domain.measurement import Status
from workbench.core.domain.space import Config
from workbench.runner.pool import WorkerPool

pytestmark = pytest.mark.timeout(60)

BENCH = '''
import gc, os, subprocess, sys, time
from multiprocessing.connection import Connection

SPACE = {"mode": ["ok", "fork", "popen", "double_fork", "small_garbage", "huge_header", "partial_frame"]}
PIDS = os.environ.get("WB_TEST_PIDS", "")


def _note(pid):
    with open(PIDS, "a") as handle:
        handle.write(f"{pid}\\n")


def _pipe():
    return next(o for o in gc.get_objects() if isinstance(o, Connection) and not o.closed)


def measure(config):
    mode = config["mode"]
    if mode == "fork":
        pid = os.fork()
        if pid == 0:
            time.sleep(120)
            os._exit(0)
        _note(pid)
    elif mode == "popen":
        _note(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"]).pid)
    elif mode == "double_fork":
        read, write = os.pipe()
        if os.fork() == 0:
            grandchild = os.fork()
            if grandchild == 0:
                time.sleep(120)
                os._exit(0)
            os.write(write, str(grandchild).encode())
            os._exit(0)
        _note(int(os.read(read, 32)))
    elif mode == "small_garbage":
        os.write(_pipe().fileno(), b"\\x00\\x00\\x00\\x07garbage")
    elif mode == "huge_header":
        os.write(_pipe().fileno(), b"\\x7f\\xff\\xff\\xff")
        time.sleep(30)
    elif mode == "partial_frame":
        os.write(_pipe().fileno(), b"\\x00\\x00\\x10\\x00abc")
        time.sleep(30)
    return {"latency_ms": 1.0}
'''


@pytest.fixture()
def bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[BackendSpec, Path]:
    path = tmp_path / "hostile_bench.py"
    path.write_text(textwrap.dedent(BENCH))
    pids = tmp_path / "pids.txt"
    pids.write_text("")
    monkeypatch.setenv("WB_TEST_PIDS", str(pids))
    return BackendSpec("python", {"path": str(path)}), pids


def _run(spec: BackendSpec, modes: list[str], timeout_s: float = 2.0) -> dict[str, tuple[Status, str]]:
    out: dict[str, tuple[Status, str]] = {}
    with WorkerPool(spec, workers=1, limits=EvalLimits(compile_timeout_s=5.0, run_timeout_s=timeout_s)) as pool:
        for mode in modes:
            pool.submit(Config({"mode": mode}))
        while pool.busy:
            for config, measurement, _, _ in pool.results(timeout=20):
                out[config["mode"]] = (measurement.status, measurement.message)
    return out


def test_children_a_candidate_starts_do_not_outlive_the_pool(bench) -> None:
    spec, pids = bench
    results = _run(spec, ["fork", "popen", "double_fork", "ok"])
    assert all(status is Status.OK for status, _ in results.values()), results
    started = [int(line) for line in pids.read_text().split()]
    assert len(started) == 3
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in started if _alive(pid)]


def test_garbage_in_the_workers_pipe_is_that_candidates_crash(bench) -> None:
    spec, _ = bench
    start = time.monotonic()
    results = _run(spec, ["small_garbage", "ok", "huge_header", "ok"], timeout_s=20.0)
    assert results["small_garbage"][0] is Status.CRASHED and "unreadable message" in results["small_garbage"][1]
    assert results["huge_header"][0] is Status.CRASHED and "length" in results["huge_header"][1]
    assert results["ok"][0] is Status.OK
    assert time.monotonic() - start < 15  # neither waited for its 30 s sleep nor its 20 s timeout


def test_a_frame_that_never_completes_still_times_out(bench) -> None:
    spec, _ = bench
    start = time.monotonic()
    results = _run(spec, ["partial_frame", "ok"], timeout_s=1.0)
    assert results["partial_frame"][0] is Status.TIMEOUT
    assert results["ok"][0] is Status.OK
    assert time.monotonic() - start < 20
