"""Starting child processes of the workbench's own: what they inherit at their first instruction.

One rule for now: a process the workbench spawns (a worker of the pool, the reader of a python
benchmark's declarations) starts with SIGINT ignored, so a terminal's Ctrl-C, which reaches every
process of the foreground group, cannot interrupt it while its interpreter is still importing
(that printed a KeyboardInterrupt traceback over the run's one line "interrupted"). The parent
handles the interrupt and ends its children itself.
"""

from __future__ import annotations

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
