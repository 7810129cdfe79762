"""The command's standard streams and stop signals: output for a reader that may go away or lack
characters, streams a daemon started closed, and SIGINT / SIGTERM / SIGHUP taken as Ctrl-C is."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import sys
import threading
from typing import Any, Iterator

from workbench.core.fs import silence_hung_up_output
from workbench.core.stop_signals import STOP_SIGNALS


def print_json(document: Any) -> None:
    """``document`` as indented JSON on stdout in one write: ``json.dump`` writes piece by piece
    (1.7 million writes for the trial list of an 18,000-trial session, most of ``show --json``'s time).

    Strict JSON: a NaN or infinity (a file's trial details hold what its writer put there; the
    json module reads ``Infinity``) is written as null, as a session save writes it, never as the
    ``NaN`` / ``Infinity`` literals a strict reader (``jq``, most languages) refuses."""
    try:
        text = json.dumps(document, indent=2, allow_nan=False)
    except ValueError:
        from workbench.core.domain.bounded_json import finite_or_none

        text = json.dumps(finite_or_none(document), indent=2, allow_nan=False)
    sys.stdout.write(text + "\n")


def silence(stream: Any) -> None:
    """Point ``stream``'s file descriptor at /dev/null: nobody reads it any more, and every later
    write (and the interpreter's final flush) would fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


class StdoutForScripts:
    """``sys.stdout`` while a command runs: what it prints is output for a reader that may go away
    or may not take every character, and neither is the command's failure.

    - A reader that stopped reading (``kernels | true``, ``check-kernels | head -1``): the rest of
      the output goes to /dev/null and the command carries on, so its errors still reach stderr
      and its exit status is its own. The closed pipe used to end the command on the spot with
      status 0, before the line on stderr that said a spec was broken, or a table stale.
    - A character the stream's encoding lacks (``PYTHONIOENCODING=ascii``, a path or slot value
      with an accent) is written as a backslash escape, as stderr writes it, instead of ending the
      command with a traceback after its session was saved.
    - A write the machine refuses (stdout sent to a full disk, ``> /dev/full``): as for a closed
      pipe, the rest goes to /dev/null and the command carries on, so its own errors and status
      stay; :attr:`failure` says it, for the command line to report once the command is done.
    """

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        #: "standard output: cannot write (...)" once a write was refused; None until then.
        self.failure: str | None = None

    def write(self, text: str) -> int:
        try:
            written = self._stream.write(text)
            return len(text) if written is None else int(written)  # (a file-like sink may say nothing)
        except UnicodeEncodeError:
            encoding = getattr(self._stream, "encoding", None) or "ascii"
            return self.write(text.encode(encoding, "backslashreplace").decode(encoding))
        except BrokenPipeError:
            silence(self._stream)
            return len(text)
        except OSError as exc:
            self._refused(exc)
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            silence(self._stream)
            self._stream.flush()  # what was left in its buffer goes to /dev/null now
        except OSError as exc:
            self._refused(exc)

    def _refused(self, exc: OSError) -> None:
        """Remember the refusal, named as standard output's (it was "[Errno 28] No space left on
        device", which named no file); what is still buffered goes to /dev/null, so later writes
        and the interpreter's last flush do not fail again."""
        if self.failure is None:
            self.failure = f"standard output: cannot write ({exc.strerror or exc})"
        silence(self._stream)
        with contextlib.suppress(OSError, ValueError):
            self._stream.flush()

    def __getattr__(self, name: str) -> Any:  # fileno, isatty, encoding...: the stream's own
        return getattr(self._stream, name)


def closed_streams_to_devnull() -> None:
    """A program started with stdout or stderr closed (``2>&-``, a daemon) finds None there:
    every message then raised AttributeError, a run ended before saving and ``show`` printed a
    traceback. What it writes there goes nowhere instead, as to a terminal nobody reads."""
    for fd, name in ((1, "stdout"), (2, "stderr")):
        if getattr(sys, name) is not None:
            continue
        try:  # the descriptor too: the worker processes inherit it, and died on a closed one
            os.fstat(fd)
        except OSError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            if devnull != fd:
                os.dup2(devnull, fd)
                os.close(devnull)
            os.set_inheritable(fd, True)  # os.open's descriptors are not: the workers found it closed again
        setattr(sys, name, open(fd, "w", encoding="utf-8", closefd=False))


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, taken the way Ctrl-C is: the run stops at once, keeps its trials and stops its
    workers with everything their candidates started (a KeyboardInterrupt, so that every layer
    that cleans up after Ctrl-C cleans up after it too, and no ``except Exception`` swallows it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"terminated by {signal.Signals(signum).name}")
        self.signum = signum


class StopSignals:
    """SIGINT, SIGTERM and SIGHUP while a command runs.

    The first raises where the program is (KeyboardInterrupt, or :class:`Terminated`), which
    stops a run as Ctrl-C always did. Later ones are ignored, said once: an interrupt raised in
    the middle of that stop (workers being shut down, the journal closed, the lock released)
    would cut it short and could leave workers behind that the interpreter's exit then waits for.
    After SIGHUP, output to a terminal that hung up goes to /dev/null, so that the stop's last
    lines cannot fail it.
    """

    SIGNALS = STOP_SIGNALS

    def __init__(self) -> None:
        self.received: int | None = None
        self._said = False
        self._previous: dict[int, Any] = {}

    def __call__(self, signum: int, frame: Any) -> None:
        if signum == getattr(signal, "SIGHUP", None):
            silence_hung_up_output()
        if self.received is None:
            self.received = signum
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            raise Terminated(signum)
        if not self._said:
            self._said = True
            try:  # not sys.stderr: the signal may have landed inside one of its writes
                os.write(2, b"stopping...\n")
            except OSError:
                pass

    def install(self) -> None:
        """Handle the signals (from the main thread only; one ignored at start stays ignored,
        as under ``nohup`` or in a shell's background job)."""
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in self.SIGNALS:
            previous = signal.getsignal(signum)
            if previous is not signal.SIG_IGN:
                self._previous[signum] = previous
                signal.signal(signum, self)

    def restore(self, exiting: bool = False) -> None:
        """Put back the handlers from before; while a stop is under way they stay ignored until exit.
        ``exiting``: the process ends with the command, whose work is done and said: a stop that
        lands now is ignored. Put back, the default handler killed a finished run that had saved
        and printed everything (status -15, a CI job marked failed with its output complete)."""
        if self.received is not None:
            return
        for signum, previous in self._previous.items():
            signal.signal(signum, signal.SIG_IGN if exiting else previous if previous is not None else signal.SIG_DFL)
        self._previous.clear()


class _StderrLines(logging.Handler):
    """The package's log records on standard error as a command's own lines: ``warning: ...``
    (whatever the record's level: an ``error:`` line means the command failed, and a logged note
    does not make it fail), with the traceback a record carries. Without a handler Python printed
    them bare (its last-resort handler), so a note such as "the file was replaced during the run"
    read as no warning to a script grepping for ``warning:``. The stream is looked up at each
    record: tests, and a closed terminal, replace it."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = f"warning: {record.getMessage()}"
            if record.exc_info:
                text += "\n" + logging.Formatter().formatException(record.exc_info)
            print(text, file=sys.stderr)
        except Exception:  # noqa: BLE001 - a record that cannot be said must not end the command
            self.handleError(record)


@contextlib.contextmanager
def log_records_said() -> Iterator[None]:
    """While a command runs (the window too), the package's warnings (``logging``) are said as
    its own lines, tracebacks included; the handler goes when it returns (a process that calls
    ``main`` several times, tests or a script, does not keep it)."""
    logger = logging.getLogger("workbench")
    handler = _StderrLines(logging.WARNING)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
