"""Work that would stall the window, done on a thread, its result handed back to the GUI thread.

Counting a space of millions of configs or computing slot importance over thousands of trials
takes from a fraction of a second to minutes; on the GUI thread that freezes the window. The work
runs on a daemon thread and its result comes back through a queued signal, so the slot that shows
it runs on the GUI thread; each result carries the request it answers, so the receiver can drop
one a later request has made stale. A window closed while the thread works destroys the receiver:
the late emit then goes nowhere (see :class:`Background`).
"""

from __future__ import annotations

import threading
from typing import Callable

from PySide6.QtCore import QObject, Signal


class Background(QObject):
    """Runs ``work`` on a thread and emits ``done(request, result)`` on the GUI thread.

    Make it without a parent: the thread holds it until it has emitted, so it outlives a receiver
    that is destroyed meanwhile (Qt then drops the connection and the emit goes nowhere). With the
    receiver as its parent, the receiver's destruction deleted it under the running thread, whose
    emit on the deleted object ended the process."""

    done = Signal(object, object)

    def start(self, name: str, request: object, work: Callable[[], object]) -> None:
        """``work()`` on a daemon thread named ``name``; its value is delivered with ``request``.
        What ``work`` cannot compute it should return as a value saying why; should it raise all
        the same, None is delivered (the receiver never waits for ever) and the exception goes to
        the thread's excepthook."""

        def run() -> None:
            result: object = None
            try:
                result = work()
            finally:
                try:
                    self.done.emit(request, result)
                except RuntimeError:  # the interpreter is shutting down around this daemon thread
                    pass

        threading.Thread(target=run, name=name, daemon=True).start()
