"""The program's start (``main.py`` and the installed ``kernel-workbench``): the command line,
imported under a guard.

Importing it and building its parser take a few tenths of a second (NumPy, the engine), before any
of its handlers are in place: a Ctrl-C then ended the program with a Python traceback instead of
the ``interrupted`` line and exit status 130 it gives a moment later.
"""

from __future__ import annotations

import importlib
import sys

#: The exit status of a command stopped by Ctrl-C (128 + SIGINT), as the command line's own.
INTERRUPTED = 130


def main() -> int:
    try:
        cli = importlib.import_module("workbench.cli")
        # (the command line's own handlers come after its parser is built, which imports more)
        return int(cli.main())
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return INTERRUPTED
