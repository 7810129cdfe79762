"""The worker process: build one backend, prepare it once, then evaluate configs sent over a pipe.

Runs in a *spawned* subprocess, so a candidate that hangs, segfaults or exhausts memory takes
down only this process; the pool in the parent records the candidate and starts a replacement.
The module imports only the backend contract (no engine, no search, no Qt) so a worker starts fast.

Wire protocol: the typed records of ``runner/messages.py`` over one duplex ``multiprocessing``
connection (parent -> worker: ``Evaluate``, ``Quit``; worker -> parent: ``Ready``,
``StartupError``, ``PhaseStarted``, ``Reply`` whose ``fatal`` says the worker exits after it).
"""

from __future__ import annotations

import ctypes
import dataclasses
import faulthandler
import os
import signal
import sys
import threading
import time
import traceback
from multiprocessing.reduction import ForkingPickler
from typing import Any, NoReturn

from workbench.backends.base import BackendSpec, EvalLimits, create_backend
from workbench.core.child_processes import kill_tree
from workbench.core.domain.measurement import Measurement, Status
from workbench.core.errors import WorkbenchError, exception_line
from workbench.runner.messages import MAX_MESSAGE_BYTES, Evaluate, PhaseStarted, Ready, Reply, StartupError, ToWorker

#: phase name -> key of the trial timings dict it accumulates into.
PHASE_TIMING_KEYS: dict[str, str] = {"compile": "compile_s", "verify": "verify_s", "run": "benchmark_s"}

_PR_SET_PDEATHSIG = 1
_WATCHDOG_PERIOD_S = 0.5
#: exit code of a worker that gave up after MemoryError (its address space may be capped).
EXIT_AFTER_MEMORY_ERROR = 86
#: exit code of a worker whose end of the pipe broke while its parent lives: a candidate closed
#: descriptors it did not open (``os.closerange``), so no reply can say so.
EXIT_PIPE_LOST = 87
#: At most this much of a candidate's output is attached to its log.
OUTPUT_TAIL_BYTES = 8192


def read_tail(path: str, limit: int = OUTPUT_TAIL_BYTES) -> str:
    """The last ``limit`` bytes of a worker's output file, as text ('' when there is none)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - limit))
            data = handle.read()
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace").strip()
    return ("[...]\n" + text) if size > limit and text else text


def with_output(log: str, output: str) -> str:
    """A failure log with the candidate's own output (prints, native tracebacks) appended."""
    if not output:
        return log
    return f"{log.rstrip()}\n--- worker output ---\n{output}" if log else output


def _capture_output(path: str) -> None:
    """Send this process's stdout and stderr (Python and native) to ``path``.

    The file holds only the current candidate's output (it is emptied before each evaluation),
    so a failure's log can show what the candidate printed, and ``faulthandler`` puts the Python
    stack of a segfault or of a hang (dumped on the pool's SIGTERM) there too.
    """
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    for stream in (sys.stdout, sys.stderr):
        if stream is not None and hasattr(stream, "reconfigure"):
            stream.reconfigure(line_buffering=True, write_through=True)
    faulthandler.enable(all_threads=True)
    if hasattr(faulthandler, "register"):  # not on Windows
        faulthandler.register(signal.SIGTERM, all_threads=True, chain=True)


def _clear_output() -> None:
    try:
        os.ftruncate(1, 0)
    except OSError:
        pass


#: The signal the kernel sends a worker when its parent dies (``PR_SET_PDEATHSIG``). A catchable
#: one, not SIGKILL: the worker's handler kills its whole process group, itself included, so what
#: its candidates started dies with it (SIGKILL would end the worker alone and leave those behind).
PARENT_DEATH_SIGNAL = signal.SIGUSR1


def _end_own_group() -> NoReturn:
    """SIGKILL the process group this worker leads: whatever its candidates started, and itself.

    Only when it does lead its group (:func:`_lead_own_group` made it so); otherwise only this
    process exits, never the group of the program that started it."""
    if hasattr(os, "killpg") and os.getpgrp() == os.getpid():
        kill_tree(os.getpid())  # (those that left the group on purpose too)
        try:
            os.killpg(os.getpid(), signal.SIGKILL)
        except OSError:
            pass
    os._exit(0)


def _exit_leaving_nothing(code: int) -> NoReturn:
    """Exit, first killing what candidates started that left this worker's process group on
    purpose (``setsid``, ``start_new_session``) and is still below it: the pool kills the group
    once this process is gone, and by then those are init's, out of its reach. The group's own
    members are the pool's to kill, as before. (Not a subreaper: adopting the orphans of every
    candidate left them as zombies for the whole run, and a candidate's ``os.wait()`` returned
    another candidate's orphan.)"""
    kill_tree(os.getpid())
    os._exit(code)


def _die_with_parent(parent_pid: int) -> None:
    """Make sure this worker, and all its candidates started, never outlive the process that started it.

    ``PR_SET_PDEATHSIG`` has the kernel signal us when the parent dies (Linux only; note it fires
    when the *thread* that spawned us exits, so the handler acts only once the parent process is
    gone). The handler runs when the interpreter's main thread next gets control, at once when
    it waits for a message or sleeps; the watchdog thread covers a main thread busy in native
    code, other platforms, and the race where the parent died before ``prctl`` ran. Either ends
    the worker's whole process group: the tuning process killed by SIGKILL cannot do it.
    """
    worker_pid = os.getpid()

    def on_parent_death(signum: int, frame: Any) -> None:
        if os.getpid() != worker_pid:  # a process a candidate forked, which inherited the handler
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)  # what the signal does to any other process
        elif os.getppid() != parent_pid:
            _end_own_group()

    if sys.platform.startswith("linux"):
        signal.signal(PARENT_DEATH_SIGNAL, on_parent_death)
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(PARENT_DEATH_SIGNAL), 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:
        os._exit(0)

    def watch() -> None:
        while True:
            time.sleep(_WATCHDOG_PERIOD_S)
            if os.getppid() != parent_pid:
                _end_own_group()

    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()


def _lead_own_group() -> None:
    """Start a new session, so this worker leads a process group of its own.

    Whatever a candidate starts (a ``fork``, a ``subprocess``, a double fork, a multiprocessing
    resource tracker) joins that group unless it leaves on purpose, and the pool kills the whole
    group when it kills or retires the worker: nothing a candidate started outlives the run.
    """
    if hasattr(os, "setsid"):
        try:
            os.setsid()
        except OSError:  # already a group leader
            pass


def _leave_if_forked(worker_pid: int, ending: BaseException | None = None) -> None:
    """End at once a process that a candidate forked and that came back into the worker's code.

    A benchmark that calls ``os.fork()`` and lets both processes return hands the worker's loop to
    two processes sharing one pipe: the child's reply could be recorded for the candidate, and the
    two would then take turns at the next messages, so a later candidate would get a stray reply,
    none, or a torn frame. The child leaves with ``os._exit`` (``ending``'s status when it is
    leaving by an exception): no reply, no interpreter teardown that would run the worker's exit
    hooks, nothing read from or written to the pipe. The worker itself (``worker_pid``) goes on."""
    if os.getpid() == worker_pid:
        return
    code = 0
    if isinstance(ending, SystemExit):
        code = ending.code if isinstance(ending.code, int) else (0 if ending.code is None else 1)
    elif ending is not None:
        code = 1
    os._exit(code)


class PhaseClock:
    """Forwards phase changes to the parent (when there is a pipe to it) and accumulates the time
    spent in each phase. Only the process that made the clock writes to the pipe: a process a
    candidate forked that calls it keeps the timings to itself."""

    def __init__(self, conn: Any | None) -> None:
        self.conn = conn
        self.pid = os.getpid()
        self.seq = -1
        self.current: str | None = None
        self.since = 0.0
        self.timings: dict[str, float] = {}

    def begin(self, seq: int) -> None:
        self.seq, self.current, self.since, self.timings = seq, None, time.monotonic(), {}

    def __call__(self, name: str) -> None:
        now = time.monotonic()
        self._close_current(now)
        self.current, self.since = name, now
        if self.conn is not None and os.getpid() == self.pid:
            self.conn.send(PhaseStarted(self.seq, name, now))

    def _close_current(self, now: float) -> None:
        if self.current is not None:
            key = PHASE_TIMING_KEYS.get(self.current, f"{self.current}_s")
            self.timings[key] = self.timings.get(key, 0.0) + (now - self.since)

    def finish(self, started: float) -> dict[str, float]:
        now = time.monotonic()
        self._close_current(now)
        self.current = None
        self.timings["total_s"] = now - started
        return self.timings


def trial_timings(backend: Any, config: Any, measured: dict[str, float]) -> dict[str, float]:
    """The timings a trial records: the backend's recorded ones when it answers from a recording
    (a replay: the look-up's own time is no phase of the kernel), else the clock's ``measured``."""
    recorded = backend.recorded_timings(config)
    return measured if recorded is None else {str(k): float(v) for k, v in recorded.items()}


def evaluate_candidate(backend: Any, config: Any, limits: EvalLimits, clock: PhaseClock) -> tuple[bool, Measurement]:
    """One evaluation; returns whether the worker must retire after it (fatal) and the measurement."""
    try:
        measurement = backend.evaluate(config, limits, clock)
        if not isinstance(measurement, Measurement):
            raise TypeError(f"backend returned {type(measurement).__name__}, expected Measurement")
        return False, measurement
    except MemoryError as exc:
        # The candidate exhausted memory; this process may hold a lowered address-space limit or a
        # fragmented heap, so it reports and retires instead of serving the next candidate.
        text = f"worker ran out of memory (MemoryError{': ' + str(exc) if str(exc) else ''})"
        return True, Measurement.failure(Status.CRASHED, text, log=traceback.format_exc())
    except Exception as exc:  # noqa: BLE001 - any backend bug becomes a recorded runtime error
        return False, Measurement.failure(Status.RUNTIME_ERROR, exception_line(exc), log=traceback.format_exc())


def startup_reason(exc: BaseException) -> str:
    """Why a backend could not start, in one line: a WorkbenchError's own message (already worded
    for a person: a template's reference naming its spec field), else the exception's type and text."""
    if isinstance(exc, WorkbenchError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def reply_bytes(reply: Reply) -> bytes:
    """``reply`` pickled as ``conn.send`` would, or, when that is larger than the parent reads
    (:data:`MAX_MESSAGE_BYTES`), a failure of the candidate saying so: a measurement carrying a
    100 MB detail was refused by the parent as garbage in the pipe, recorded as a crash that
    blamed the candidate for writing to it."""
    data = bytes(ForkingPickler.dumps(reply))
    if len(data) <= MAX_MESSAGE_BYTES:
        return data
    failure = Measurement.failure(
        Status.RUNTIME_ERROR,
        f"the measurement is too large to return ({len(data):,} bytes pickled, at most {MAX_MESSAGE_BYTES:,}): "
        "return numbers and short details", log=reply.measurement.log[-OUTPUT_TAIL_BYTES:])
    return bytes(ForkingPickler.dumps(dataclasses.replace(reply, measurement=failure)))


def worker_main(conn: Any, spec: BackendSpec, limits: EvalLimits, parent_pid: int, output_path: str = "") -> None:
    """Entry point of a worker process (the target of ``multiprocessing.Process``).

    ``output_path``: file that receives the worker's stdout and stderr ('' leaves them alone).
    """
    _lead_own_group()  # first: the parent-death handler kills the group this worker leads
    # Ctrl-C is the parent's business. A terminal's Ctrl-C reaches the whole foreground group, and
    # one that arrived while this interpreter was still importing printed a KeyboardInterrupt
    # traceback over the run's one line: the pool starts workers with SIGINT ignored already
    # (children_ignore_interrupts), and it stays so.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    worker_pid = os.getpid()  # any other process found below is one a candidate forked
    _die_with_parent(parent_pid)
    if output_path:
        _capture_output(output_path)
    try:
        backend = create_backend(spec)
        backend.prepare()
    except BaseException as exc:  # noqa: BLE001 - report anything, then exit
        _leave_if_forked(worker_pid, exc)  # a benchmark module that forks as it is loaded
        message = startup_reason(exc)
        log = traceback.format_exc()
        if output_path:
            sys.stdout.flush()
            sys.stderr.flush()
            log = with_output(log, read_tail(output_path))
        conn.send(StartupError(message, log))
        conn.close()
        return
    _leave_if_forked(worker_pid)
    conn.send(Ready(worker_pid))
    clock = PhaseClock(conn)
    while True:
        try:
            received: ToWorker = conn.recv()
        except (EOFError, OSError):  # the pool's end is gone (its process died): no Quit is coming
            _end_own_group()  # at once, with what candidates started; the parent-death signal may come late
        if not isinstance(received, Evaluate):
            break
        seq, config = received.seq, received.config
        # the early-abort threshold in force when the candidate was dispatched (else the start's)
        now_limits = dataclasses.replace(limits, max_latency_ms=received.max_latency_ms)
        if output_path:
            _clear_output()
        clock.begin(seq)
        started = time.monotonic()
        try:
            fatal, measurement = evaluate_candidate(backend, config, now_limits, clock)
        except BaseException as exc:
            _leave_if_forked(worker_pid, exc)
            raise
        _leave_if_forked(worker_pid)  # both sides of a candidate's fork returned: only the worker replies
        if getattr(backend, "needs_restart", False):
            fatal = True  # e.g. a CUDA error poisoned the context: report, then make way for a fresh worker
        timings = trial_timings(backend, config, clock.finish(started))
        if output_path and measurement.status.failed:
            sys.stdout.flush()
            sys.stderr.flush()
            measurement = dataclasses.replace(measurement, log=with_output(measurement.log, read_tail(output_path)))
        try:
            conn.send_bytes(reply_bytes(Reply(seq, measurement, timings, fatal)))
        except OSError:
            if os.getppid() == parent_pid:
                # The pool lives, so the candidate broke this end of the pipe. The exit code tells the
                # pool so (it kills what is left of this group), where SIGKILL read as out of memory.
                _exit_leaving_nothing(EXIT_PIPE_LOST)
            _end_own_group()  # the pool's process is gone
        except Exception as exc:  # noqa: BLE001 - e.g. an unpicklable metric value
            failure = Measurement.failure(Status.RUNTIME_ERROR, f"cannot return the measurement: {exc}")
            conn.send(Reply(seq, failure, timings, fatal))
        if fatal:
            conn.close()
            _exit_leaving_nothing(EXIT_AFTER_MEMORY_ERROR)
    try:
        backend.close()
    finally:
        conn.close()
        # Leave without the interpreter's teardown: its exit hooks would wait for background work
        # (the simulator's compiles under way) that no one will use, while the pool gives a worker
        # a second to end before killing it; everything a reply needed was sent.
        sys.stdout.flush()
        sys.stderr.flush()
        _exit_leaving_nothing(0)
