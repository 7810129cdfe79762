"""Starting child processes of the workbench's own, and ending what they started.

What they inherit at their first instruction: a process the workbench spawns (a worker of the
pool, the reader of a python benchmark's declarations) starts with SIGINT ignored, so a
terminal's Ctrl-C, which reaches every process of the foreground group, cannot interrupt it
while its interpreter is still importing (that printed a KeyboardInterrupt traceback over the
run's one line "interrupted"). The parent handles the interrupt and ends its children itself,
with whatever they started (:func:`kill_tree`, beside the process group each worker leads).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def children_ignore_interrupts() -> Iterator[None]:
    """Child processes started inside this block start with SIGINT ignored, so that a Ctrl-C
    cannot interrupt their interpreter's start (a pool worker's main keeps ignoring it).

    An ignored signal stays ignored through fork and exec, and Python then installs no handler of
    its own (a blocked mask would not do: the spawn resets the child's mask). The disposition is
    the process's, so the parent ignores SIGINT for the moment of the start (a few milliseconds).
    SIGINT is blocked in this thread meanwhile, so a Ctrl-C the kernel hands to it stays pending
    and reaches the parent's handler when both are put back; one handed to another thread in that
    moment is lost (pressing Ctrl-C again works). A handler installed from C, which Python cannot
    put back, is replaced by the default one. Only the main thread may change a disposition; a
    child started from another thread (the window's engine thread, which a terminal's Ctrl-C
    rarely reaches) starts as before: a pool worker then ignores SIGINT from its first line."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        handler = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, signal.SIG_DFL if handler is None else handler)  # None: not Python's
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def descendants(pid: int) -> list[int]:
    """The living processes below ``pid``, from the parent links in ``/proc`` (Linux; empty where
    there is no ``/proc``). Read at once, so a process started after the reading is not among them."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    children: dict[int, list[int]] = {}
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        fields = stat[stat.rfind(b")") + 2:].split()  # (the command name, in parentheses, may hold either)
        if len(fields) > 1 and fields[1].isdigit():
            children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def kill_tree(pid: int) -> None:
    """SIGKILL every process below ``pid`` (see :func:`descendants`): those in its process group and
    those that left it. ``pid`` itself is left to its owner."""
    for child in descendants(pid):
        try:
            os.kill(child, signal.SIGKILL)
        except OSError:
            pass
