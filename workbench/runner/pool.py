"""A pool of worker subprocesses with per-phase timeouts, crash recovery and no lost candidates.

Every candidate submitted comes back exactly once from :meth:`WorkerPool.results`: measured by a
worker, or recorded as ``timeout`` (the worker was killed and replaced) or ``crashed`` (the worker
died and was replaced). The parent never blocks on a single worker: it waits on all connections,
process sentinels and the earliest deadline at once, so one hung candidate delays nobody else.

Workers are started with the *spawn* context (no inherited locks, threads or CUDA state) and load
only the backend they need. Timeouts follow the backend's phases: the compile timeout while the
backend reports ``phase("compile")``, the verify timeout during ``phase("verify")``, the run timeout
otherwise (including before the first phase report), each counted from the start of the current phase.
"""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
import os
import re
import shutil
import signal
import stat
import struct
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Iterator, NamedTuple, Protocol, Self

from workbench.backends.base import BackendSpec, EvalLimits
from workbench.core.errors import WorkbenchError
from workbench.core.fs import process_exists
from workbench.core.domain.measurement import Measurement, Status, Trial
from workbench.core.domain.session import unrecordable
from workbench.core.domain.records import BackendOptions
from workbench.core.restricted_pickle import NUMPY_NAMES, RefusedName, restricted_loads
from workbench.core.domain.space import Config
from workbench.runner.messages import (
    MAX_MESSAGE_BYTES, Evaluate, FromWorker, PhaseStarted, Quit, Ready, Reply, StartupError,
)
from workbench.core.child_processes import children_ignore_interrupts, kill_tree
from workbench.runner.worker import (
    EXIT_AFTER_MEMORY_ERROR,
    EXIT_PIPE_LOST,
    OUTPUT_TAIL_BYTES,
    read_tail,
    with_output,
    worker_main,
)


class Result(NamedTuple):
    """One finished candidate as a pool returns it: the config, its measurement, seconds per
    phase (``compile_s``, ``run_s``, ``verify_s``, ``total_s``) and the worker that measured it."""

    config: Config
    measurement: Measurement
    timings: dict[str, float]
    worker: str


#: Seconds between SIGTERM and SIGKILL for a worker past its timeout.
KILL_GRACE_S = 0.2
#: Most bytes a worker's output file may grow to while a candidate runs (only its tail,
#: ``OUTPUT_TAIL_BYTES``, is ever kept in a log), and how often the pool looks: a candidate that
#: printed in a loop wrote 370 MB a second into the temporary folder, gigabytes before its timeout.
OUTPUT_CAP_BYTES = 16 << 20
OUTPUT_CHECK_S = 0.25


def cap_output(path: str, cap: int = OUTPUT_CAP_BYTES) -> None:
    """Cut a worker's output file beyond ``cap`` bytes to its tail, saying how much went (the worker
    appends to it: what it writes meanwhile lands after the tail)."""
    try:
        size = os.stat(path).st_size
        if size <= cap:
            return
        with open(path, "rb") as handle:
            handle.seek(max(0, size - OUTPUT_TAIL_BYTES))
            tail = handle.read(OUTPUT_TAIL_BYTES)
        os.truncate(path, 0)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, f"[... {size - len(tail):,} bytes of output cut ...]\n".encode() + tail)
        finally:
            os.close(fd)
    except OSError:  # gone with its worker, or not a file the pool can cut: nothing to keep small
        pass


#: Bytes read from one worker's pipe per wake-up (the rest waits for the next step).
_READ_CHUNK = 1 << 20
class _GarbageMessage(Exception):
    """Bytes from a worker's pipe that are not a message of the wire protocol."""


def _next_message(buffer: bytearray) -> tuple[FromWorker, int] | None:
    """The first complete message in ``buffer`` and the bytes it used; None while it is incomplete.

    The framing is ``multiprocessing``'s: a signed 4-byte big-endian length (-1 then an 8-byte
    length for huge messages), then a pickle. A length beyond :data:`MAX_MESSAGE_BYTES`, or bytes
    that do not unpickle to one of the worker's reply records, raise :class:`_GarbageMessage`.
    """
    if len(buffer) < 4:
        return None
    (size,) = struct.unpack("!i", buffer[:4])
    start = 4
    if size == -1:
        if len(buffer) < 12:
            return None
        (size,) = struct.unpack("!Q", buffer[4:12])
        start = 12
    if size < 0 or size > MAX_MESSAGE_BYTES:
        raise _GarbageMessage(f"a message length of {size} bytes")
    if len(buffer) < start + size:
        return None
    try:  # a candidate can write to the pipe: what it wrote must only fail that candidate
        message = restricted_loads(bytes(buffer[start:start + size]), NUMPY_NAMES)
    except RefusedName as exc:
        raise _GarbageMessage(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - any unpickling failure means garbage
        raise _GarbageMessage(f"{type(exc).__name__}") from None
    if not isinstance(message, (Ready, StartupError, PhaseStarted, Reply)):
        raise _GarbageMessage("not a protocol message")
    return message, start + size


def kill_group(pid: int | None) -> None:
    """SIGKILL the process group a worker leads (whatever its candidates started), and every process
    still below the worker that left that group on purpose (``setsid``, ``start_new_session``); gone
    is fine."""
    if pid is None or not hasattr(os, "killpg"):
        return
    kill_tree(pid)  # (first: killed, the worker would leave them to init, out of reach)
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass


#: A pool's folder for its workers' output files, in the temporary folder: the owner's pid, then
#: ``mkdtemp``'s random part. The pid is what lets a later pool remove the folder of one whose
#: process was killed outright (SIGKILL leaves it no chance to remove its own).
OUTPUT_DIR_PREFIX = "workbench-workers-"
_OUTPUT_DIR_NAME = re.compile(re.escape(OUTPUT_DIR_PREFIX) + r"(\d{1,10})-[a-z0-9_]{8}")
_OUTPUT_FILE_NAME = re.compile(r"worker-\d+\.\d+\.out")


def remove_stale_output_dirs(folder: str | None = None) -> list[str]:
    """Remove the output folders pools left behind when their process was killed; returns their paths.

    Only a folder named as :class:`WorkerPool` names its own (with the owner's pid), a real
    directory owned by this user, whose owner process is gone, and holding nothing but worker
    output files: anything else in ``folder`` (default: the temporary folder), and any folder of
    a process still running, stays as it is. A pid since reused keeps its folder until it too ends.
    """
    folder = folder if folder is not None else tempfile.gettempdir()
    uid = os.getuid() if hasattr(os, "getuid") else None
    removed: list[str] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        match = _OUTPUT_DIR_NAME.fullmatch(entry.name)
        if match is None:
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or (uid is not None and info.st_uid != uid):
            continue
        if process_exists(int(match.group(1))):  # someone else's counts: its folder is not ours to judge
            continue
        if _remove_output_dir(entry.path):
            removed.append(entry.path)
    return removed


def _remove_output_dir(path: str) -> bool:
    """Remove a pool's output folder holding only worker output files; anything else keeps it."""
    try:
        names = os.listdir(path)
    except OSError:
        return False
    if not all(_OUTPUT_FILE_NAME.fullmatch(name) for name in names):
        return False
    for name in names:
        try:
            os.unlink(os.path.join(path, name))
        except FileNotFoundError:
            pass
        except OSError:  # a folder by that name, or no permission: not the pool's file
            return False
    try:
        os.rmdir(path)
    except OSError:
        return False
    return True


class WorkerStartupError(WorkbenchError):
    """A worker could not create or prepare its backend (bad options, missing device...)."""

    def __init__(self, message: str, log: str = "") -> None:
        super().__init__(message)
        self.log = log


@dataclass
class _Job:
    seq: int
    config: Config
    phase: str
    phase_since: float  # time.monotonic() when the current phase began
    dispatched: float = 0.0  # time.monotonic() when it was handed to the worker


@dataclass
class _Worker:
    name: str
    process: Any  # multiprocessing.process.BaseProcess
    conn: Connection
    started: float
    ready: bool = False
    retiring: bool = False  # reported a fatal result and exits by itself
    failed_startup: bool = False
    conn_open: bool = True
    job: _Job | None = None
    output_path: str = ""  # where the worker's stdout/stderr go (the current candidate's only)
    inbox: bytearray = field(default_factory=bytearray)  # bytes read from the pipe, not yet a whole message


def describe_exit(exitcode: int | None) -> str:
    """Why a worker process ended, in words: ``worker died with signal 11 (SIGSEGV)``."""
    if exitcode is None:
        return "worker vanished"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = "unknown signal"
        hint = " (killed; possibly out of memory)" if -exitcode == signal.SIGKILL else ""
        return f"worker died with signal {-exitcode} ({name}){hint}"
    if exitcode == EXIT_AFTER_MEMORY_ERROR:
        return "worker exited after running out of memory"
    if exitcode == EXIT_PIPE_LOST:
        return "worker lost its pipe to the pool: the candidate closed file descriptors it did not open"
    return f"worker exited with code {exitcode}"


def last_line(output: str, limit: int = 200) -> str:
    """The last non-empty line of a worker's output, cut to ``limit`` characters, for a one-line error."""
    line = next((text.strip() for text in reversed(output.splitlines()) if text.strip()), "")
    return line if len(line) <= limit else line[: limit - 3] + "..."


def worker_spec(spec: BackendSpec, index: int) -> BackendSpec:
    """The spec worker slot ``index`` builds its backend from.

    With ``options["devices"] = [0, 1, ...]`` worker slots are spread over the devices (slot ``i``
    gets ``device = devices[i % len(devices)]``; a replacement keeps its slot's device), which is
    how a pool runs one worker per GPU. Otherwise every worker gets the spec unchanged.
    """
    devices = spec.options.get("devices")
    if not devices:
        return spec
    options = BackendOptions(**spec.options)
    del options["devices"]
    options["device"] = list(devices)[index % len(devices)]
    return BackendSpec(spec.kind, options)


@dataclass
class _Dying:
    """A worker sent SIGTERM (SIGKILL at ``kill_at``). Its timed-out candidate, if any, is recorded
    once the process is gone, so the log holds the stack ``faulthandler`` dumped on SIGTERM."""

    process: Any
    kill_at: float
    killed: bool = field(default=False)
    job: _Job | None = None
    name: str = ""
    reason: str = ""
    output_path: str = ""


class Pool(Protocol):
    """What the engine needs of an executor; the local :class:`WorkerPool` and the Ray executor's
    ``RayPool`` implement it (mypy checks both where they are handed out as a :class:`PoolFactory`'s
    product; ``tests/test_pool.py`` checks the members at run time).

    Every submitted config comes back exactly once from :meth:`results`, measured or failed.
    """

    def submit(self, config: Config) -> None: ...

    def results(self, timeout: float | None = None) -> list[Result]: ...

    def poll(self, timeout: float = 0.0) -> None: ...

    @property
    def idle_count(self) -> int: ...

    @property
    def in_flight(self) -> int: ...

    @property
    def busy(self) -> bool: ...

    @property
    def workers(self) -> int: ...

    @property
    def error(self) -> WorkerStartupError | None: ...

    @property
    def starting_s(self) -> float | None: ...

    def set_abort_threshold(self, max_latency_ms: float | None) -> None: ...

    def close(self) -> None: ...

    def __enter__(self) -> Pool: ...

    def __exit__(self, *exc: object) -> None: ...


class PoolFactory(Protocol):
    """Makes a pool: ``factory(spec, workers, limits, on_start=...)`` (``WorkerPool`` itself is one)."""

    def __call__(self, spec: BackendSpec, workers: int = ..., limits: EvalLimits = ...,
                 on_start: Callable[[Config, str], None] | None = ...) -> Pool: ...


class ResultQueue:
    """What every pool (local processes, Ray actors) shares: waiting for finished candidates.

    Subclasses keep ``_done`` (finished results), ``_pending`` (queued configs) and ``_error`` (a
    startup failure), and implement ``_running()`` (a candidate is in flight) and ``_step(wait_s)``
    (handle replies, deaths and deadlines for up to ``wait_s`` seconds).
    """

    _done: list[Result]
    _pending: Any
    _error: WorkerStartupError | None
    limits: EvalLimits

    def set_abort_threshold(self, max_latency_ms: float | None) -> None:
        """The latency limit a backend may stop timing at (``EvalLimits.max_latency_ms``), for every
        candidate handed to a worker from now on: each carries the threshold in force when it is
        dispatched, so relaxing the constraint mid-run stops aborting new candidates at the old one."""
        self.limits = dataclasses.replace(self.limits, max_latency_ms=max_latency_ms)

    def _running(self) -> bool:
        raise NotImplementedError

    def _step(self, wait_s: float | None) -> None:
        raise NotImplementedError

    def results(self, timeout: float | None = None) -> list[Result]:
        """Finished candidates, waiting up to ``timeout`` seconds (None: until one finishes)."""
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._done:
                out, self._done = self._done, []
                return out
            running = self._running()
            if self._error is not None and not running:
                self._pending.clear()
                raise self._error
            if not running and not self._pending:
                return []
            remaining = None if end is None else end - time.monotonic()
            if remaining is not None and remaining <= 0:
                self._step(0.0)
                out, self._done = self._done, []
                return out
            self._step(remaining)

    def poll(self, timeout: float = 0.0) -> None:
        """Handle messages, deaths, deadlines and replacements for up to ``timeout`` seconds.

        For callers that wait for capacity rather than for results; finished candidates are kept
        for the next :meth:`results`.
        """
        self._step(timeout)

    @property
    def busy(self) -> bool:
        raise NotImplementedError

    def __iter__(self) -> Iterator[Result]:
        """Yield results as they finish until nothing is in flight."""
        while self.busy:
            yield from self.results()

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class WorkerPool(ResultQueue):
    """``workers`` backend processes built from ``spec``, evaluating submitted configs.

    ``on_start(config, worker_name)`` (optional) is called in the caller's thread when a candidate
    is handed to a worker. Use as a context manager, or call :meth:`close`. A pool is used from one
    thread (the one that runs the tuning loop); on Linux, workers die with that thread's process.
    """

    def __init__(
        self,
        spec: BackendSpec,
        workers: int = 1,
        limits: EvalLimits = EvalLimits(),
        on_start: Callable[[Config, str], None] | None = None,
        start_timeout_s: float = 120.0,
        kill_grace_s: float = KILL_GRACE_S,
    ) -> None:
        if workers < 1:
            raise WorkbenchError(f"need at least one worker, got {workers}")
        self.spec = spec
        self.limits = limits
        self.on_start = on_start
        self.start_timeout_s = start_timeout_s
        self.kill_grace_s = kill_grace_s
        self._ctx = mp.get_context("spawn")
        self._pending: deque[Config] = deque()
        self._workers: list[_Worker] = []
        self._dying: list[_Dying] = []
        self._outputs_checked = 0.0  # when the running candidates' output files were last looked at
        self._done: list[Result] = []
        self._error: WorkerStartupError | None = None
        self._seq = 0
        self._closed = False
        remove_stale_output_dirs()
        self._output_dir = tempfile.mkdtemp(prefix=f"{OUTPUT_DIR_PREFIX}{os.getpid()}-")
        self.started_workers = 0  # processes started, replacements included
        for index in range(workers):
            self._start_worker(f"worker-{index}")

    # --- public interface ----------------------------------------------------------------------
    def submit(self, config: Config) -> None:
        """Queue a config; it starts as soon as a worker is free."""
        if self._closed:
            raise WorkbenchError("the worker pool is closed")
        self._pending.append(config)
        self._dispatch()

    @property
    def in_flight(self) -> int:
        """Candidates submitted and not yet returned by :meth:`results`."""
        running = sum(1 for w in self._workers if w.job) + sum(1 for d in self._dying if d.job)
        return len(self._pending) + running + len(self._done)

    @property
    def busy(self) -> bool:
        return self.in_flight > 0

    @property
    def idle_count(self) -> int:
        """How many more candidates would start without waiting for a busy worker.

        Starting workers and workers about to be replaced count as free: what is submitted to
        them waits only for the (new) process to come up.
        """
        free = sum(1 for w in self._workers if w.job is None and not w.failed_startup)
        return max(0, free - len(self._pending))

    @property
    def workers(self) -> int:
        return len(self._workers)

    @property
    def error(self) -> WorkerStartupError | None:
        return self._error

    @property
    def starting_s(self) -> float | None:
        """Seconds since the first worker still starting began, while no worker is ready (None
        once one is): what a run waits on before its first candidate."""
        if any(worker.ready for worker in self._workers):
            return None
        starting = [worker.started for worker in self._workers if not worker.failed_startup]
        return time.monotonic() - min(starting) if starting else None

    def _running(self) -> bool:
        return any(w.job for w in self._workers) or any(d.job for d in self._dying)

    def close(self) -> None:
        """Stop every worker (politely, then by force). Candidates still running are abandoned.

        Whatever cuts the polite part short (a second Ctrl-C while a busy worker is awaited), every
        worker and everything its candidates started are killed before it propagates: otherwise a
        worker whose candidate ignores SIGTERM outlives the pool, and the interpreter's exit waits
        for it forever (``multiprocessing`` joins daemon workers at exit with no timeout). The pool
        counts as closed once that is done, so a close cut short can be called again.
        """
        if self._closed:
            return
        try:
            for worker in self._workers:
                if worker.conn_open:
                    try:
                        worker.conn.send(Quit())
                    except (OSError, ValueError):
                        pass
            end = time.monotonic() + 1.0
            for worker in self._workers:
                worker.process.join(max(0.0, end - time.monotonic()))
        finally:
            self._kill_all()

    def _kill_all(self) -> None:
        """SIGKILL every worker left and the process group each leads, then reap them.

        The kills come first, all of them (each is one system call), the waits after: an interrupt
        during a wait leaves nothing running, only processes to reap. A group is killed while its
        leader is not yet reaped, so its number cannot have been reused by an unrelated group.
        """
        processes = [w.process for w in self._workers] + [d.process for d in self._dying]
        for process in processes:
            kill_group(process.pid)  # what its candidates started (each worker leads a group)
            try:
                if process.is_alive():
                    process.kill()
            except (OSError, ValueError):
                pass
        shutil.rmtree(self._output_dir, ignore_errors=True)
        for process in processes:
            process.join(1.0)
        for worker in self._workers:
            worker.conn.close()
        self._workers.clear()
        self._dying.clear()
        self._pending.clear()
        self._closed = True

    def __del__(self) -> None:  # last resort; never leave processes behind
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass

    # --- internals -----------------------------------------------------------------------------
    def _start_worker(self, name: str) -> None:
        parent_conn, child_conn = self._ctx.Pipe(duplex=True)
        output_path = os.path.join(self._output_dir, f"{name}.{self.started_workers}.out")
        process = self._ctx.Process(
            target=worker_main,
            args=(child_conn, worker_spec(self.spec, int(name.rpartition("-")[2])), self.limits, os.getpid(), output_path),
            name=f"workbench-{name}",
            daemon=True,
        )
        with children_ignore_interrupts():  # see worker_main: the new interpreter must not die of a Ctrl-C as it starts
            process.start()
        child_conn.close()
        self.started_workers += 1
        self._workers.append(
            _Worker(name=name, process=process, conn=parent_conn, started=time.monotonic(), output_path=output_path)
        )

    def _timeout_for(self, phase: str) -> float:
        if phase == "verify":
            return self.limits.verify_timeout_s
        return self.limits.compile_timeout_s if phase == "compile" else self.limits.run_timeout_s

    def _next_deadline(self) -> float | None:
        deadlines = [d.kill_at for d in self._dying if not d.killed]
        for worker in self._workers:
            if worker.job is not None:
                deadlines.append(worker.job.phase_since + self._timeout_for(worker.job.phase))
            elif not worker.ready and not worker.failed_startup:
                deadlines.append(worker.started + self.start_timeout_s)
        if any(worker.job is not None and worker.output_path for worker in self._workers):
            deadlines.append(self._outputs_checked + OUTPUT_CHECK_S)  # (see _cap_outputs)
        return min(deadlines) if deadlines else None

    def _step(self, wait_s: float | None) -> None:
        """Wait for one thing to happen (message, death or deadline) and handle everything due."""
        deadline = self._next_deadline()
        if deadline is not None:
            until = max(0.0, deadline - time.monotonic())
            wait_s = until if wait_s is None else min(wait_s, until)
        waitables: list[Any] = [w.conn for w in self._workers if w.conn_open]
        waitables += [w.process.sentinel for w in self._workers]
        waitables += [d.process.sentinel for d in self._dying if d.job is not None]
        if waitables:
            wait(waitables, timeout=wait_s)
        elif wait_s:
            time.sleep(min(wait_s, 0.05))
        for worker in list(self._workers):
            self._drain(worker)
        for worker in list(self._workers):
            if not worker.process.is_alive():
                self._on_death(worker)
        self._enforce_deadlines()
        self._cap_outputs()
        self._reap_dying()
        self._dispatch()

    def _cap_outputs(self) -> None:
        """Keep the output files of running candidates small (see :func:`cap_output`)."""
        now = time.monotonic()
        if now - self._outputs_checked < OUTPUT_CHECK_S:
            return
        self._outputs_checked = now
        for worker in self._workers:
            if worker.job is not None and worker.output_path:
                cap_output(worker.output_path)

    def _drain(self, worker: _Worker) -> None:
        """Handle every whole message waiting on the worker's pipe, without ever blocking.

        Reads only what is there (a length header promising more bytes than arrive cannot hang
        the parent: the candidate's timeout still runs) and at most one chunk per message; bytes
        that are not a protocol message make the candidate a crash and the worker is replaced.
        """
        while worker.conn_open:
            try:
                if not worker.conn.poll():
                    return
                chunk = os.read(worker.conn.fileno(), _READ_CHUNK)
            except (EOFError, OSError):
                worker.conn_open = False
                return
            if not chunk:
                worker.conn_open = False
                return
            worker.inbox += chunk
            while worker in self._workers:
                try:
                    found = _next_message(worker.inbox)
                except _GarbageMessage as exc:
                    self._on_garbage(worker, str(exc))
                    return
                if found is None:
                    break
                message, used = found
                del worker.inbox[:used]
                try:
                    self._handle(worker, message)
                except (ValueError, TypeError, IndexError) as exc:  # a record holding the wrong types
                    said = f": {str(exc)[:300]}" if str(exc) else ""
                    self._on_garbage(worker, f"malformed {type(message).__name__} message ({type(exc).__name__}{said})")
                    return

    def _on_garbage(self, worker: _Worker, what: str) -> None:
        """The worker's pipe carried something else than the protocol: its candidate crashed."""
        reason = f"worker sent an unreadable message ({what}); the candidate probably wrote to the worker's pipe"
        job, worker.job = worker.job, None
        if job is not None:
            self._record_failure(job, worker.name, Status.CRASHED, reason, worker.output_path)
        worker.conn_open = False
        if self._workers.count(worker):
            self._kill(worker, replace=worker.ready)

    def _handle(self, worker: _Worker, message: FromWorker) -> None:
        if isinstance(message, Ready):
            worker.ready = True
        elif isinstance(message, StartupError):
            worker.failed_startup = True
            if self._error is None:
                self._error = WorkerStartupError(
                    f"{self.spec.kind} backend failed to start: {message.message}", log=message.log
                )
        elif isinstance(message, PhaseStarted):
            if not isinstance(message.name, str) or not isinstance(message.since, float):
                raise TypeError("phase")
            if worker.job is not None and worker.job.seq == message.seq:
                worker.job.phase, worker.job.phase_since = message.name, message.since
        elif isinstance(message, Reply):
            if not isinstance(message.measurement, Measurement) or not isinstance(message.timings, dict):
                raise TypeError("result")
            if worker.job is not None and worker.job.seq == message.seq:
                # (what the candidate could have written in the worker's stead: kept only if it reads back)
                problem = unrecordable(Trial(0, worker.job.config, message.measurement, timings=message.timings))
                if problem is not None:
                    raise ValueError(problem)
                self._done.append(Result(worker.job.config, message.measurement, dict(message.timings), worker.name))
                worker.job = None
            if message.fatal:
                worker.retiring = True

    def _record_failure(self, job: _Job, worker_name: str, status: Status, reason: str, output_path: str) -> None:
        """Record a candidate the worker could not report itself, with whatever it printed."""
        timings = {"total_s": time.monotonic() - job.dispatched}
        log = with_output(reason, read_tail(output_path)) if output_path else reason
        self._done.append(Result(job.config, Measurement.failure(status, reason, log=log), timings, worker_name))

    def _on_death(self, worker: _Worker) -> None:
        self._drain(worker)  # a result sent just before exiting still counts
        if worker not in self._workers:  # the drain found garbage and replaced it
            return
        worker.process.join(0)
        kill_group(worker.process.pid)
        reason = describe_exit(worker.process.exitcode)
        if worker.job is not None:
            self._record_failure(worker.job, worker.name, Status.CRASHED, reason, worker.output_path)
            worker.job = None
        self._workers.remove(worker)
        worker.conn.close()
        if not worker.ready and not worker.failed_startup and self._error is None:
            output = read_tail(worker.output_path)
            said = last_line(output)  # a worker that exits without reporting may still have said why
            detail = f"{reason}; its last output: {said}" if said else reason
            self._error = WorkerStartupError(f"{self.spec.kind} backend failed to start: {detail}",
                                             log=with_output(reason, output))
        if worker.ready and not self._closed:
            self._start_worker(worker.name)

    def _enforce_deadlines(self) -> None:
        now = time.monotonic()
        for worker in list(self._workers):
            job = worker.job
            if job is not None:
                limit = self._timeout_for(job.phase)
                if now - job.phase_since >= limit:
                    worker.job = None
                    self._kill(worker, job=job, reason=f"exceeded {job.phase} timeout of {float(limit)} s")
            elif not worker.ready and not worker.failed_startup and now - worker.started >= self.start_timeout_s:
                if self._error is None:
                    self._error = WorkerStartupError(
                        f"{self.spec.kind} backend did not start within {self.start_timeout_s:g} s: its start runs "
                        "code of the kernel's own (a template's Python reference, a benchmark module as it "
                        "loads), and a start that never ends is most often that code waiting or looping"
                    )
                worker.failed_startup = True
                self._kill(worker, replace=False)

    def _kill(self, worker: _Worker, replace: bool = True, job: _Job | None = None, reason: str = "") -> None:
        """SIGTERM now, SIGKILL after the grace period (see :meth:`_reap_dying`); start a replacement.

        ``job`` (the timed-out candidate) is recorded with ``reason`` when the process is gone.
        """
        if worker.process.pid is not None:
            kill_tree(worker.process.pid)  # while the worker lives: dead, it leaves them to init (see kill_group)
        try:
            worker.process.terminate()
        except (OSError, ValueError):
            pass
        self._workers.remove(worker)
        worker.conn.close()
        self._dying.append(
            _Dying(worker.process, time.monotonic() + self.kill_grace_s, False, job, worker.name, reason, worker.output_path)
        )
        if replace and not self._closed:
            self._start_worker(worker.name)

    def _reap_dying(self) -> None:
        now = time.monotonic()
        for dying in list(self._dying):
            if not dying.process.is_alive():
                dying.process.join(0)
                kill_group(dying.process.pid)  # children of a timed-out candidate die with it
                self._dying.remove(dying)
                if dying.job is not None:
                    self._record_failure(dying.job, dying.name, Status.TIMEOUT, dying.reason, dying.output_path)
            elif not dying.killed and now >= dying.kill_at:
                kill_group(dying.process.pid)  # (first: see kill_group)
                dying.process.kill()
                dying.killed = True

    def _dispatch(self) -> None:
        for worker in self._workers:
            if not self._pending:
                return
            if not worker.ready or worker.retiring or worker.job is not None or not worker.conn_open:
                continue
            config = self._pending.popleft()
            self._seq += 1
            try:
                worker.conn.send(Evaluate(self._seq, config, self.limits.max_latency_ms))
            except (OSError, ValueError):
                self._pending.appendleft(config)  # the worker died; its death is handled next step
                worker.conn_open = False
                continue
            now = time.monotonic()
            worker.job = _Job(self._seq, config, "run", now, now)
            if self.on_start is not None:
                self.on_start(config, worker.name)
