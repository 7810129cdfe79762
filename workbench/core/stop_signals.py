"""The signals that stop the program as its own Stop does, in the command line and the window alike.

SIGINT (Ctrl-C), SIGTERM (a kill) and, where the platform has one, SIGHUP (the terminal closed, the
ssh connection dropped), whose default would end the process where it stands, with nothing saved
and the workers left to notice their parent gone. One list, so that what the command line catches,
what the window catches and what is put back after a library (Ray) installs handlers of its own
cannot drift apart.
"""

from __future__ import annotations

import signal

#: The signal of a terminal that closed or an ssh connection that dropped, where there is one.
HANGUP: int | None = getattr(signal, "SIGHUP", None)
#: Every signal that stops a command or closes the window as their Stop and Close do.
STOP_SIGNALS: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM) + ((HANGUP,) if HANGUP is not None else ())
