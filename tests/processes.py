"""Process checks shared by the tests that kill, interrupt or orphan processes on purpose."""

from __future__ import annotations

import os
import select
import sys
import textwrap
import time
from pathlib import Path


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


def describe(pids: list[int]) -> str:
    """What a test needs to know about processes that outlived what should have ended them: each
    one's state, parent and process group, and its parent's (a parent still alive is the process
    that failed to end them; a parent of 1 or a subreaper means their group leader died without
    taking them along)."""
    lines = []
    for pid in pids:
        line = _process_line(pid)
        parent = line.split("ppid ")[-1].split(",")[0] if "ppid " in line else ""
        if parent.isdigit() and int(parent) > 1:
            line += f"; parent: {_process_line(int(parent))}"
        lines.append(line)
    return "; ".join(lines) or "none"


def _process_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[-1].split()
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            command = handle.read().replace(b"\0", b" ").decode(errors="replace").strip()[:120]
    except OSError as exc:
        return f"pid {pid}: unreadable ({type(exc).__name__})"
    return f"pid {pid}: state {fields[0]}, ppid {fields[1]}, pgrp {fields[2]}, session {fields[3]}, {command!r}"


def pid_recording_bench(folder: Path, name: str, source: str) -> tuple[Path, Path]:
    """A python benchmark file ``name`` in ``folder`` from ``source`` (dedented), and the empty file
    whose path ``WB_TEST_PIDS`` must hold: the benchmark's candidates append the pids of the
    processes they start there, so a test can check every one of them is gone afterwards."""
    bench = folder / name
    bench.write_text(textwrap.dedent(source))
    pids = folder / "pids.txt"
    pids.write_text("")
    return bench, pids


#: Prefix of a command line that runs the rest as the leader of a session of its own whose
#: controlling terminal is its stdin (a pseudo-terminal's follower end), as a program started in a
#: terminal window or over ssh is: when the terminal goes, the kernel sends it SIGHUP.
IN_TERMINAL_SESSION = [sys.executable, "-c", "import fcntl, os, sys, termios; os.setsid(); "
                       "fcntl.ioctl(0, termios.TIOCSCTTY, 0); os.execv(sys.executable, sys.argv[1:])"]


class Terminal:
    """A pseudo-terminal for a subprocess (``follower`` as its stdin, stdout and stderr, with
    :data:`IN_TERMINAL_SESSION`). :meth:`drain` reads what it wrote, as a terminal window would,
    so that its writes never block; :meth:`hang_up` closes the terminal as closing its window does."""

    def __init__(self) -> None:
        self.leader, self.follower = os.openpty()
        self.written = bytearray()

    def started(self) -> None:
        """The subprocess has the follower end: ours goes, so that only the leader's close hangs it up."""
        if self.follower >= 0:
            os.close(self.follower)
            self.follower = -1

    def drain(self) -> None:
        while self.leader >= 0 and select.select([self.leader], [], [], 0)[0]:
            try:
                chunk = os.read(self.leader, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.written.extend(chunk)

    def hang_up(self) -> None:
        self.drain()
        self.started()
        if self.leader >= 0:
            os.close(self.leader)
            self.leader = -1

    def tail(self) -> str:
        return bytes(self.written[-2000:]).decode(errors="replace")
