"""Candidates that misbehave towards the worker itself: children left behind, bytes written into
the worker's pipe. Real spawned workers running a Python benchmark written into the test's folder."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from processes import alive as _alive
from processes import pid_recording_bench
from processes import wait_gone

from workbench.backends.base import BackendSpec, EvalLimits
from workbench.core.domain.measurement import Status
from workbench.core.domain.space import Config
from workbench.runner.pool import WorkerPool

pytestmark = pytest.mark.timeout(60)

BENCH = '''
import gc, os, subprocess, sys, time
from multiprocessing.connection import Connection

SPACE = {"mode": ["ok", "fork", "popen", "double_fork", "popen_session", "session_hang",
                  "flood", "small_garbage", "huge_header", "partial_frame",
                  "fork_returns", "fork_exits", "slow_a", "slow_b", "huge_detail", "close_fds",
                  "crafted_pickle", "forged_negative", "forged_text", "forged_timing", "forged_zero",
                  "forged_renamed"]}
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
    elif mode in ("popen_session", "session_hang"):  # a child that leaves the worker's group on purpose
        _note(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True).pid)
        if mode == "session_hang":
            time.sleep(60)
    elif mode == "flood":  # prints as fast as it can for a while, watching the file it prints into
        chunk, written, largest, end = "x" * (1 << 20), 0, 0, time.monotonic() + 1.5
        while time.monotonic() < end:
            sys.stdout.write(chunk)
            written += len(chunk)
            largest = max(largest, os.fstat(1).st_size)
        return {"latency_ms": 1.0, "written_mb": written / 1e6, "largest_mb": largest / 1e6}
    elif mode in ("fork_returns", "fork_exits"):
        pid = os.fork()
        if pid == 0:  # the child returns into the worker first, or leaves by SystemExit
            if mode == "fork_exits":
                sys.exit(0)
            return {"latency_ms": 999.0}
        _note(pid)
        time.sleep(0.3)
        return {"latency_ms": 5.0}
    elif mode in ("slow_a", "slow_b"):
        time.sleep(0.5)
        return {"latency_ms": 2.0 if mode == "slow_a" else 3.0}
    elif mode == "close_fds":
        os.closerange(3, 1024)  # the worker's pipe among them
    elif mode == "huge_detail":
        # (each detail is bounded, 10,000 characters; 7,000 of them are not)
        return {"latency_ms": 1.0, **{f"note_{i}": "y" * 10_000 for i in range(7_000)}}
    elif mode == "small_garbage":
        os.write(_pipe().fileno(), b"\\x00\\x00\\x00\\x07garbage")
    elif mode == "huge_header":
        os.write(_pipe().fileno(), b"\\x7f\\xff\\xff\\xff")
        time.sleep(30)
    elif mode == "crafted_pickle":  # protocol 4 looks up dotted names: io.FileIO through a workbench module
        def text(value):
            return b"\\x8c" + bytes([len(value)]) + value.encode()
        frame = (b"\\x80\\x04" + text("workbench.core.restricted_pickle") + text("io.FileIO") + b"\\x93("
                 + text(os.environ["WB_TEST_VICTIM"]) + text("w") + b"tR.")
        os.write(_pipe().fileno(), len(frame).to_bytes(4, "big") + frame)
        time.sleep(30)
    elif mode.startswith("forged_"):  # a reply of its own, well-formed, holding what no measurement holds
        from workbench.core.domain.measurement import Measurement, Status
        from workbench.runner.messages import Reply
        from workbench.runner.worker import PhaseClock
        clock = next(o for o in gc.get_objects() if isinstance(o, PhaseClock))
        metrics = {"forged_negative": {"latency_ms": -5.0}, "forged_text": {"latency_ms": "fast"},
                   "forged_zero": {"latency_ms": 0.0},
                   "forged_renamed": {"latency_ms": 2.0, "GB/s": 5.0, "gb_s": 7.0}}.get(mode, {"latency_ms": 1.0})
        timings = {"total_s": "x"} if mode == "forged_timing" else {"total_s": 0.001}
        clock.conn.send(Reply(clock.seq, Measurement(Status.OK, metrics), timings))
        time.sleep(30)
    elif mode == "partial_frame":
        os.write(_pipe().fileno(), b"\\x00\\x00\\x10\\x00abc")
        time.sleep(30)
    return {"latency_ms": 1.0}
'''


@pytest.fixture()
def bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[BackendSpec, Path]:
    path, pids = pid_recording_bench(tmp_path, "hostile_bench.py", BENCH)
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
    """Also those that leave the worker's process group on purpose (``start_new_session``) while they
    are below it: each kill takes every process below the worker, where the group alone left them
    running after the run, a timeout or a Ctrl-C."""
    spec, pids = bench
    results = _run(spec, ["fork", "popen", "double_fork", "popen_session", "session_hang", "ok"])
    assert all(status is Status.OK for mode, (status, _) in results.items() if mode != "session_hang"), results
    assert results["session_hang"][0] is Status.TIMEOUT
    started = [int(line) for line in pids.read_text().split()]
    assert len(started) == 5
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in started if _alive(pid)]


@pytest.mark.parametrize("mode", ["fork_returns", "fork_exits"])
def test_a_candidate_whose_forked_child_returns_too_gets_the_parents_result_and_later_ones_are_unaffected(
        bench, mode: str) -> None:
    """Both sides of the benchmark's ``os.fork()`` returned into the worker: the child's reply was
    recorded for the candidate, then the two processes shared the pipe, and a later good config
    timed out. Now the child leaves at once, and the worker alone answers (``fork_exits``: a child
    that leaves by ``sys.exit`` still leaves without a word on the pipe)."""
    spec, pids = bench
    out: dict[str, tuple[Status, float | None]] = {}
    with WorkerPool(spec, workers=1, limits=EvalLimits(compile_timeout_s=5.0, run_timeout_s=5.0)) as pool:
        for name in (mode, "slow_a", "slow_b"):
            pool.submit(Config({"mode": name}))
        while pool.busy:
            for config, measurement, _, _ in pool.results(timeout=20):
                out[config["mode"]] = (measurement.status, measurement.metrics.get("latency_ms"))
    assert out == {mode: (Status.OK, 5.0), "slow_a": (Status.OK, 2.0), "slow_b": (Status.OK, 3.0)}
    children = [int(line) for line in pids.read_text().split()]
    assert len(children) == 1 and not wait_gone(children, 5.0)


def test_garbage_in_the_workers_pipe_is_that_candidates_crash(bench) -> None:
    spec, _ = bench
    start = time.monotonic()
    results = _run(spec, ["small_garbage", "ok", "huge_header", "ok"], timeout_s=20.0)
    assert results["small_garbage"][0] is Status.CRASHED and "unreadable message" in results["small_garbage"][1]
    assert results["huge_header"][0] is Status.CRASHED and "length" in results["huge_header"][1]
    assert results["ok"][0] is Status.OK
    assert time.monotonic() - start < 15  # neither waited for its 30 s sleep nor its 20 s timeout


def test_a_pickle_naming_what_a_workbench_module_imported_is_refused_not_called(bench, tmp_path, monkeypatch) -> None:
    """The pipe's unpickler followed dotted names through workbench modules: a candidate's bytes
    opened any file for writing in the tuning process, emptying it."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    monkeypatch.setenv("WB_TEST_VICTIM", str(victim))
    spec, _ = bench
    results = _run(spec, ["crafted_pickle", "ok"], timeout_s=20.0)
    assert results["crafted_pickle"][0] is Status.CRASHED
    assert "workbench.core.restricted_pickle.io.FileIO" in results["crafted_pickle"][1]
    assert results["ok"][0] is Status.OK and victim.read_text() == "precious"


def test_a_reply_the_candidate_forged_is_checked_as_a_saved_record_is(bench) -> None:
    """A reply written by the candidate itself was taken as it came: a latency of -5 ms was the
    best and saved into a file that never opened again; a latency in text or a timing in text
    stopped the run with a traceback; one of 0 ms was the best and reopened as a failure."""
    spec, _ = bench
    results = _run(spec, ["forged_negative", "forged_text", "forged_timing", "forged_zero", "forged_renamed", "ok"],
                   timeout_s=20.0)
    for mode, said in (("forged_negative", "latency_ms: -5.0 is negative"), ("forged_text", "'fast' is not a number"),
                       ("forged_timing", "timings"), ("forged_zero", "reads back as runtime_error"),
                       ("forged_renamed", "metrics read back otherwise")):
        status, message = results[mode]
        assert status is Status.CRASHED and "malformed Reply message" in message and said in message, (mode, message)
    assert results["ok"][0] is Status.OK


def test_a_frame_that_never_completes_still_times_out(bench) -> None:
    spec, _ = bench
    start = time.monotonic()
    results = _run(spec, ["partial_frame", "ok"], timeout_s=1.0)
    assert results["partial_frame"][0] is Status.TIMEOUT
    assert results["ok"][0] is Status.OK
    assert time.monotonic() - start < 20


def test_a_measurement_too_large_to_return_is_that_candidates_failure_not_garbage(bench) -> None:
    """A measurement with a 65 MiB detail went out as a message longer than the parent reads: it
    was taken for bytes the candidate wrote into the pipe, a crash that blamed the candidate for
    it, and the worker was killed. The worker now says what happened and serves the next one."""
    spec, _ = bench
    results = _run(spec, ["huge_detail", "ok"], timeout_s=20.0)
    status, message = results["huge_detail"]
    assert status is Status.RUNTIME_ERROR and "too large to return" in message and "pipe" not in message
    assert results["ok"][0] is Status.OK


def test_a_candidate_that_closes_the_workers_pipe_is_a_crash_that_says_so(bench) -> None:
    """os.closerange(3, ...) in a candidate closed the worker's pipe; the worker then killed its own
    group, and the pool described the SIGKILL as 'possibly out of memory'."""
    spec, _ = bench
    results = _run(spec, ["close_fds", "ok"], timeout_s=20.0)
    status, message = results["close_fds"]
    assert status is Status.CRASHED and "closed file descriptors" in message and "memory" not in message
    assert results["ok"][0] is Status.OK


def test_a_wrong_result_with_an_infinite_error_still_reads_back_as_itself() -> None:
    """A GPU's wrong result (an unwritten output: NaN against the reference) reports an infinite
    error, which a session keeps as NaN: the check of replies took that for a forgery, and the
    candidate for a crash."""
    from workbench.core.domain.measurement import Measurement, Trial
    from workbench.core.domain.session import unrecordable

    wrong = Measurement(Status.WRONG_RESULT, {"max_abs_err": float("inf"), "max_rel_err": float("inf"),
                                              "quality": 0.0}, message="y[1] = nan, expected 2")
    assert unrecordable(Trial(0, Config({"mode": "ok"}), wrong)) is None
    renamed = Measurement(Status.OK, {"latency_ms": 1.0, "GB/s": 5.0})  # (no backend sends a name unnormalised)
    assert "read back otherwise" in unrecordable(Trial(0, Config({"mode": "ok"}), renamed))
    import numpy as np

    # a float32, or an int past 2**53, is written as it reads back, not as float() of it
    close = Measurement(Status.OK, {"latency_ms": np.float32(1.1), "count": 2**60 + 1})
    assert unrecordable(Trial(0, Config({"mode": "ok"}), close)) is None
    nothing = Measurement(Status.OK, {"latency_ms": 1.0, "x": None})  # refused in words, not a TypeError
    assert "read back otherwise" in unrecordable(Trial(0, Config({"mode": "ok"}), nothing))


def test_a_candidate_that_prints_without_end_is_kept_from_filling_the_disk(bench, tmp_path) -> None:
    """A worker's output file (only its tail is kept in a log) grew at disk speed while a candidate
    printed in a loop, gigabytes before its timeout. The pool cuts it to its tail as it grows."""
    from workbench.runner.pool import OUTPUT_CAP_BYTES, cap_output

    spec, _pids = bench
    with WorkerPool(spec, workers=1, limits=EvalLimits(compile_timeout_s=5.0, run_timeout_s=10.0)) as pool:
        pool.submit(Config({"mode": "flood"}))
        (result,) = [r for r in pool]
    metrics = result.measurement.metrics
    assert result.measurement.status is Status.OK and metrics["written_mb"] > 4 * OUTPUT_CAP_BYTES / 1e6, metrics
    assert metrics["largest_mb"] < metrics["written_mb"] / 2, metrics  # cut as it grew, not at the end
    log = tmp_path / "out.txt"
    log.write_bytes(b"a" * 100 + b"b" * 9000)
    cap_output(str(log), cap=1000)
    text = log.read_text()
    assert text.startswith("[... 908 bytes of output cut ...]\n") and text.endswith("b" * 8192)
