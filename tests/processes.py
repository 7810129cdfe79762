"""Process checks shared by the tests that kill, interrupt or orphan processes on purpose."""

from __future__ import annotations

import os
import time


def alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie, waiting only to be reaped, counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def wait_gone(pids: list[int], seconds: float = 10.0) -> list[int]:
    """Those of ``pids`` still alive after waiting up to ``seconds`` for them to end."""
    deadline = time.monotonic() + seconds
    still = list(pids)
    while still and time.monotonic() < deadline:
        time.sleep(0.05)
        still = [pid for pid in still if alive(pid)]
    return still
