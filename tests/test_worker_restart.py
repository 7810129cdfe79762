"""A backend that marks its process as poisoned makes its worker report and exit, so it is replaced."""

from __future__ import annotations

import multiprocessing as mp
import os

from workbench.core.domain.space import Config
from workbench.runner.messages import Evaluate, Ready, Reply
from workbench.runner.worker import EXIT_AFTER_MEMORY_ERROR


def test_worker_reports_then_exits_when_backend_needs_restart() -> None:
    from fixtures.restart_backend import run_worker

    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    process = ctx.Process(target=run_worker, args=(child, os.getpid()), daemon=True)
    process.start()
    assert parent.poll(60) and isinstance(parent.recv(), Ready)
    parent.send(Evaluate(1, Config({"a": 1})))
    replies = []
    while True:
        assert parent.poll(30)
        reply = parent.recv()
        replies.append(reply)
        if isinstance(reply, Reply):
            break
    last = replies[-1]
    assert (last.fatal, last.seq) == (True, 1)
    assert "illegal memory access" in last.measurement.message
    process.join(30)
    assert process.exitcode == EXIT_AFTER_MEMORY_ERROR
