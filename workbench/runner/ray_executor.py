"""Run candidates on Ray actors: all the GPUs of a cluster, with the local pool's guarantees.

Each actor holds one GPU (``num_gpus=1`` for the ``cuda`` backend; one CPU for ``sim`` and
``python``) and runs, inside itself, a one-worker :class:`~workbench.runner.pool.WorkerPool`. So a
candidate is measured in a spawned subprocess of its actor exactly as on a workstation: the same
per-phase timeouts, the same failure classes (``timeout``, ``crashed`` with the signal, ``MemoryError``
retiring the worker), the same captured output in the log. A hang or crash of a candidate costs a
worker subprocess on the node, never the actor or the run.

What only Ray can lose is the actor itself (its node went away, it was OOM-killed, the network
dropped): its in-flight candidate is retried once on a fresh actor (Ray places it where resources
are free) and, if that actor is lost too, recorded as ``crashed`` with the reason. An actor that
stops answering (past the candidate's timeouts plus :data:`ACTOR_SLACK_S`) is killed with
``ray.kill``, replaced, and its candidate recorded as ``timeout``. Nothing is dropped silently.

Ray is an optional extra (``pip install 'kernel-workbench[ray]'``); it is imported only when a
:class:`RayPool` is created.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import signal
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from workbench.backends.base import BackendSpec, EvalLimits
from workbench.core.errors import WorkbenchError, quoted
from workbench.core.stop_signals import STOP_SIGNALS
from workbench.core.domain.measurement import Measurement, Status
from workbench.core.domain.records import BackendOptions
from workbench.core.domain.space import Config
from workbench.runner.pool import PoolFactory, Result, ResultQueue, WorkerPool, WorkerStartupError
from workbench.runner.messages import HostResult, StartupError

#: Seconds an actor may overrun its candidate's compile + run + verify timeouts before it counts as lost.
ACTOR_SLACK_S = 30.0
#: Seconds a new actor may take to be placed and to start its worker.
ACTOR_START_TIMEOUT_S = 120.0
#: Seconds between checks of actor deadlines while waiting for results.
_WAIT_SLICE_S = 0.5


def import_ray() -> Any:
    """The ``ray`` module, or a one-line error saying how to install it."""
    try:
        import ray  # optional extra
    except ImportError:
        raise WorkbenchError(template="{executor:ray} needs Ray: pip install 'kernel-workbench[ray]' "
                                      "(or pip install 'ray>=2.9')") from None
    return ray


def _source_root() -> str:
    """The folder holding the ``workbench`` package (so actors of a local Ray instance import it)."""
    return str(Path(__file__).resolve().parents[2])


def check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """Fail fast, in one line, when nothing listens at a ``host:port`` or ``ray://host:port``
    address, or what listens does not answer as Ray's gRPC servers do (``ray.init`` itself retries
    for minutes). Other forms (``auto``) are left to Ray."""
    text = address[len("ray://"):] if address.startswith("ray://") else address
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not host:
        if address != "auto":
            raise WorkbenchError(template=f"{{ray_address}} {quoted(repr(address))}: expected HOST:PORT, ray://HOST:PORT or auto")
        return
    started = time.monotonic()
    try:
        connection = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s)
    except OSError as exc:
        raise WorkbenchError(f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}") from None
    with connection:
        if os.environ.get("RAY_USE_TLS", "0").lower() in ("", "0", "false"):  # (TLS: the port alone is checked)
            connection.settimeout(max(0.1, timeout_s - (time.monotonic() - started)))
            if not _answers_grpc(connection):
                raise WorkbenchError(f"cannot connect to the Ray cluster at {address}: something listens there but "
                                     f"does not answer as a Ray cluster does (no gRPC reply within {timeout_s:g} s); "
                                     "give the address `ray start --head` printed")


#: What an HTTP/2 client sends first: the connection preface and an empty SETTINGS frame.
_HTTP2_HELLO = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def _answers_grpc(connection: socket.socket) -> bool:
    """Whether the server on ``connection`` speaks HTTP/2, as every Ray endpoint does (the GCS and
    the Ray Client server are gRPC servers): its first frame is a SETTINGS frame (type 4). A port of
    another service (or a wrong one that accepts and stays silent) passed the connection check, and
    ``ray.init`` then retried for minutes, printing Ray's own lines."""
    try:
        connection.sendall(_HTTP2_HELLO)
        head = b""
        while len(head) < 9:
            chunk = connection.recv(9 - len(head))
            if not chunk:
                return False
            head += chunk
    except OSError:  # a timeout, or the connection reset
        return False
    return head[3] == 4


def _init_keeping_stop_signals(ray: Any, **options: Any) -> None:
    """``ray.init`` with the process's own handlers of the stop signals kept. ``ray.init`` puts in
    a SIGTERM handler of its own (``sys.exit(signum)``): a SIGTERM to a run with Ray ended it as
    an error (exit 1, ``error: SystemExit``) and SIGHUP as an interrupt, not as the documented
    stop. One that arrives while Ray starts (Ray's handler raises SystemExit inside ``init``)
    stops what Ray started and is handed to the process's own handler, as if it came just after."""
    ours = ({signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
            if threading.current_thread() is threading.main_thread() else {})

    def restore() -> None:
        for signum, handler in ours.items():
            if handler is not None:
                signal.signal(signum, handler)

    def stop_ray() -> None:
        try:
            ray.shutdown()  # its helper processes (dashboard and runtime-env agents) outlived the command
        except Exception:  # noqa: BLE001 - the stop goes on whatever a half-started Ray says
            pass

    try:
        ray.init(**options)
    except SystemExit as exc:
        restore()
        stop_ray()
        # (Ray's handler exits with the signal's number; only SIGTERM is one it handles)
        if exc.code == signal.SIGTERM and callable(ours.get(signal.SIGTERM)):
            signal.raise_signal(exc.code)  # the process's own handler raises here, as for any stop
        raise
    except KeyboardInterrupt:  # the process's own handler, before Ray put in its own
        stop_ray()
        raise
    finally:
        restore()


def _ray_errors_to_stderr() -> None:
    """Ray's driver prints the cluster's error messages (``(raylet) A worker died or was killed
    ...``, when an actor dies) on standard output, from a thread of its own: a line could follow
    the command's summary, which scripts read as the last line (``tune ... | tail -1``). Ray
    gives no option for it, so its printer is wrapped to send them to standard error, where
    every other line that is not the answer goes. (A Ray without that printer: left as it is.)"""
    try:
        from ray._private import worker as ray_worker  # (private: looked up, not relied on)
    except ImportError:
        return
    printer = getattr(ray_worker, "print_to_stdstream", None)
    if printer is None or getattr(printer, "to_stderr", False):
        return

    def to_stderr(data: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        return printer({**data, "is_err": True}, *args, **kwargs)

    to_stderr.to_stderr = True  # type: ignore[attr-defined]
    ray_worker.print_to_stdstream = to_stderr


def ensure_ray(address: str | None = None, num_cpus: int | None = None) -> Any:
    """Connect to the cluster at ``address``, or start a local Ray instance; reuse one already up."""
    ray = import_ray()
    if not ray.is_initialized():
        _ray_lines_as_ours()
        _ray_errors_to_stderr()
        options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                   "logging_level": logging.WARNING, "logging_format": RAY_LINE_FORMAT}
        if address is None:
            options["num_cpus"] = num_cpus
        else:
            check_reachable(address)
        try:
            _init_keeping_stop_signals(ray, address=address, **options)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = f"the Ray cluster at {address}" if address else "a local Ray instance"
            raise WorkbenchError(f"cannot connect to {where}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    return ray


#: The format ``ray.init`` gives the handlers of Ray's logger: the line :class:`RayLines` made.
RAY_LINE_FORMAT = "%(workbench_line)s"


class RayLines(logging.Filter):
    """A Ray log record as one of the command's own lines, ``warning: ray: ...`` or ``error: ray: ...``
    (what a script reading stderr expects of every line there), instead of Ray's timestamped format.
    A filter on the handlers Ray sets up when imported: ``ray.init`` replaces their formatters, with
    :data:`RAY_LINE_FORMAT`, and keeps them and their filters."""

    def filter(self, record: logging.LogRecord) -> bool:
        word = "error" if record.levelno >= logging.ERROR else "warning"
        record.workbench_line = f"{word}: ray: {' '.join(record.getMessage().split())}"
        return True


def _ray_lines_as_ours() -> None:
    """Ray's log records as :class:`RayLines`, at WARNING and above: its start-up chatter ("Started
    a local Ray instance", INFO) is not the command's to say."""
    logger = logging.getLogger("ray")
    if not logger.handlers:  # (a Ray that sets none up when imported)
        stream = logging.StreamHandler()
        stream.setFormatter(logging.Formatter(RAY_LINE_FORMAT))
        logger.addHandler(stream)
        logger.propagate = False
    for handler in logger.handlers:
        if not any(isinstance(f, RayLines) for f in handler.filters):
            handler.addFilter(RayLines())


def ray_accelerator_type(resources: Mapping[str, float], allow_mixed: bool = False) -> str | None:
    """The single GPU model Ray actors are pinned to, from ``ray.cluster_resources()``.

    Ray advertises ``accelerator_type:<MODEL>`` on GPU nodes. One model: pin to it. Several: refuse
    (their timings must not be ranked together) unless ``allow_mixed``, which pins to none.
    """
    if resources.get("GPU", 0) < 1:
        raise WorkbenchError("the Ray cluster has no GPU; use the sim or python backend, or add GPU nodes")
    types = sorted(k.partition(":")[2] for k in resources if k.startswith("accelerator_type:"))
    if len(types) > 1 and not allow_mixed:
        raise WorkbenchError(
            f"the Ray cluster mixes GPU models ({', '.join(types)}); their timings must not be ranked together: "
            "run on a cluster of one model, or pass --allow-mixed-gpus"
        )
    return types[0] if len(types) == 1 else None


def cluster_workers(spec: BackendSpec, address: str | None = None) -> int:
    """One actor per GPU of the cluster for ``cuda``, else one per CPU (connects to Ray)."""
    resources = ensure_ray(address).cluster_resources()
    return max(1, int(resources.get("GPU" if spec.kind == "cuda" else "CPU", 1)))


#: How long closing waits for the actors to close their pools before it kills them.
SHUTDOWN_WAIT_S = 5.0


class CandidateHost:
    """The body of one Ray actor: a one-worker local pool measuring one candidate at a time."""

    def __init__(self, spec: BackendSpec, limits: EvalLimits, slot: int, start_timeout_s: float) -> None:
        import ray  # runs inside a Ray worker

        node = ray.util.get_node_ip_address()
        gpus = [str(g) for g in ray.get_gpu_ids()]
        self.name = f"ray-{slot}@{node}" + (f"/gpu{','.join(gpus)}" if gpus else "")
        self.info = {"executor": "ray", "node": node, **({"gpu_ids": ",".join(gpus)} if gpus else {})}
        self.pool = WorkerPool(spec, 1, limits, start_timeout_s=start_timeout_s)

    def shutdown(self) -> None:
        """Close the actor's pool: its worker's whole process group goes with it, whatever the
        candidates started there (killed with the actor instead, the worker left such processes
        running after the run, as the local executor never does)."""
        self.pool.close()

    def describe(self) -> dict[str, Any]:
        """The actor's name (node, GPU) and process id; its first call, so it also says "I am up"."""
        return {"name": self.name, "pid": os.getpid(), **self.info}

    def evaluate(self, config: Config, max_latency_ms: float | None = None) -> HostResult | StartupError:
        """The measured candidate, or why this actor's worker cannot start; ``max_latency_ms``: the
        early-abort threshold in force when the candidate was dispatched."""
        try:
            self.pool.set_abort_threshold(max_latency_ms)
            self.pool.submit(config)
            results: list[Result] = []
            while not results:
                results = self.pool.results(None)
        except WorkerStartupError as exc:
            return StartupError(str(exc), exc.log)
        result = results[0]
        measurement = dataclasses.replace(result.measurement, details={**result.measurement.details, **self.info})
        return HostResult(measurement, result.timings, self.name)


@dataclass
class _Job:
    config: Config
    attempt: int  # 0: first try; 1: retry after its actor was lost
    ref: Any = None
    dispatched: float = 0.0
    deadline: float = 0.0
    lost_reason: str = ""


@dataclass
class _Slot:
    index: int
    actor: Any
    name: str
    created: float
    ready_ref: Any = None  # the actor's first call (describe); resolved once the actor is up
    up: bool = False  # its first call answered: the actor holds its CPU/GPU and takes candidates
    deaths: int = 0  # actors of this slot that died before they came up, in a row
    answered: bool = False  # the actor has returned at least one candidate
    failed: bool = False  # its worker cannot start: no more candidates go here
    job: _Job | None = None
    #: Where its actor runs (``executor``, ``node``, ``gpu_ids``), as the actor said when it came up:
    #: what a trial it could not answer for is recorded with, as every trial it measured is.
    info: dict[str, Any] = dataclasses.field(default_factory=dict)


#: Actors of one slot that may die in a row before one comes up; then the slot takes no candidates.
MAX_DEATHS_BEFORE_UP = 2


def _without_colours(text: str) -> str:
    """Ray's error texts without the terminal colour codes they carry (``\\x1b[36m``)."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


class RayPool(ResultQueue):
    """Ray actors evaluating submitted configs, with the interface the engine uses on ``WorkerPool``.

    ``workers``: number of actors (0: one per GPU of the cluster for ``cuda``, else one per CPU).
    ``address``: an existing cluster (``ray://host:10001`` or ``host:6379``; None: local instance,
    ``num_cpus`` CPUs). Every candidate submitted comes back exactly once from :meth:`results`.
    """

    def __init__(
        self,
        spec: BackendSpec,
        workers: int = 0,
        limits: EvalLimits = EvalLimits(),
        on_start: Callable[[Config, str], None] | None = None,
        address: str | None = None,
        num_cpus: int | None = None,
        allow_mixed_gpus: bool = False,
        start_timeout_s: float = ACTOR_START_TIMEOUT_S,
        actor_slack_s: float = ACTOR_SLACK_S,
    ) -> None:
        if workers < 0:
            raise WorkbenchError(f"need at least one worker, got {workers}")
        self._ray = ray = ensure_ray(address, num_cpus)
        self.spec = spec
        self.limits = limits
        self.on_start = on_start
        self.start_timeout_s = start_timeout_s
        self.actor_slack_s = actor_slack_s
        resources = ray.cluster_resources()
        options: dict[str, Any] = {"num_cpus": 1, "max_restarts": 0, "max_task_retries": 0}
        if spec.kind == "cuda":
            accelerator = ray_accelerator_type(resources, allow_mixed_gpus)
            options["num_gpus"] = 1
            if accelerator:
                options["accelerator_type"] = accelerator
            # Ray sets CUDA_VISIBLE_DEVICES per actor: the actor's GPU is device 0 in its worker.
            actor_options = BackendOptions(**spec.options)
            actor_options.pop("devices", None)
            actor_options["device"] = 0
            spec = BackendSpec(spec.kind, actor_options)
        if address is None:  # a local instance: actors import this very source tree
            path = os.pathsep.join(p for p in (_source_root(), os.environ.get("PYTHONPATH", "")) if p)
            options["runtime_env"] = {"env_vars": {"PYTHONPATH": path}}
        if workers == 0:
            workers = cluster_workers(spec, address)
        self._host_spec = spec
        self._actor_class = ray.remote(CandidateHost).options(**options)
        self._pending: deque[_Job] = deque()
        self._slots: list[_Slot] = []
        self._done: list[Result] = []
        self._error: WorkerStartupError | None = None
        self._closed = False
        self.started_workers = 0
        self.retried = 0  # candidates re-run because their actor was lost
        self._last_death: tuple[str, str] | None = None  # why the last actor died before it came up, and its log
        for index in range(workers):
            self._slots.append(self._new_slot(index))

    # --- the engine's interface (same as WorkerPool) -------------------------------------------
    def submit(self, config: Config) -> None:
        """Queue a config; it starts as soon as an actor is free."""
        if self._closed:
            raise WorkbenchError("the Ray pool is closed")
        self._pending.append(_Job(config, 0))
        self._dispatch()

    @property
    def in_flight(self) -> int:
        return len(self._pending) + sum(1 for s in self._slots if s.job) + len(self._done)

    @property
    def busy(self) -> bool:
        return self.in_flight > 0

    @property
    def idle_count(self) -> int:
        """Free actors that have come up, less the candidates waiting: an actor not up may wait
        for good for a CPU or GPU the others hold, and what the engine queued for it overran a
        Stop or a time limit by a candidate per actor."""
        free = sum(1 for s in self._slots if s.job is None and not s.failed and s.up)
        return max(0, free - len(self._pending))

    @property
    def workers(self) -> int:
        return len(self._slots)

    @property
    def error(self) -> WorkerStartupError | None:
        return self._error

    @property
    def starting_s(self) -> float | None:
        """Seconds since the first actor was created, while none has returned a candidate (None
        once one has; the engine asks only until a candidate has started)."""
        if any(slot.answered for slot in self._slots):
            return None
        starting = [slot.created for slot in self._slots if not slot.failed]
        return time.monotonic() - min(starting) if starting else None

    def _running(self) -> bool:
        return any(s.job for s in self._slots)

    def close(self) -> None:
        """Close every idle actor's pool (waiting at most :data:`SHUTDOWN_WAIT_S`), then kill every
        actor. An idle actor's worker ends with its whole process group, as a local pool's does; an
        actor still measuring a candidate (a run stopped mid-way) is killed at once, and what its
        candidate started may then outlive it. Running candidates are abandoned."""
        if self._closed:
            return
        self._closed = True
        try:
            # only idle actors that came up take the call: a busy one would answer after its
            # candidate (a Stop waited the whole allowance for it), one not up never
            calls = []
            for slot in self._slots:
                if slot.job is None and self._actor_started(slot):
                    try:
                        calls.append(slot.actor.shutdown.remote())
                    except Exception:  # noqa: BLE001 - an actor already gone
                        pass
            if calls:
                try:
                    self._ray.wait(calls, num_returns=len(calls), timeout=SHUTDOWN_WAIT_S)
                except Exception:  # noqa: BLE001 - a lost actor answers nothing: killed below all the same
                    pass
        finally:  # whatever interrupts the wait (Ctrl-C), no actor is left running
            for slot in self._slots:
                self._kill(slot.actor)
            self._slots.clear()
            self._pending.clear()

    # --- internals -----------------------------------------------------------------------------
    def _new_slot(self, index: int) -> _Slot:
        actor = self._actor_class.remote(self._host_spec, self.limits, index, self.start_timeout_s)
        self.started_workers += 1
        return _Slot(index, actor, f"ray-{index}", time.monotonic(), ready_ref=actor.describe.remote())

    def _actor_started(self, slot: _Slot) -> bool:
        """Whether the actor came up (its first call answered), even if it has died since. One that
        died before it came up is replaced, once: a slot whose actors die twice in a row before
        coming up (a node's broken environment) takes no more candidates."""
        if slot.up:
            return True
        ray = self._ray
        try:
            described = ray.get(slot.ready_ref, timeout=0)
            slot.name = described["name"]
            slot.info = {key: described[key] for key in ("executor", "node", "gpu_ids") if key in described}
        except ray.exceptions.RayActorError as exc:
            text = _without_colours(str(exc))
            lines = [line.strip() for line in text.splitlines() if line.strip()]
            cause = lines[-1] if len(lines) > 1 else ""  # (the creation task's own error ends the text)
            self._last_death = (f"{type(exc).__name__}: {lines[0] if lines else ''}"
                                + (f" ... {cause}" if cause and cause != lines[0] else ""), text)
            if not self._closed:
                if slot.deaths + 1 >= MAX_DEATHS_BEFORE_UP:
                    slot.failed = True
                else:
                    self._replace(slot, deaths=slot.deaths + 1)
            return False
        except Exception:  # noqa: BLE001 - not up yet
            return False
        slot.up = True
        return True

    def _check_startup(self) -> None:
        """The pool's error once no actor can take candidates: every slot's actors died before
        coming up, or none came up within the start allowance since the newest was made (timed
        from the newest: an actor just made to replace a lost one has had no time yet)."""
        if self._error is not None or self._closed or any(s.up and not s.failed for s in self._slots):
            return
        live = [s for s in self._slots if not s.failed]
        if not live:
            reason, log = self._last_death or ("every actor failed", "")
            self._fail_waiting(f"Ray actors cannot start: {reason}", Status.CRASHED, log)
        elif time.monotonic() - max(s.created for s in live) > self.start_timeout_s:
            self._fail_waiting(f"no Ray actor started within {self.start_timeout_s:g} s (no node with a free "
                               "GPU/CPU for one, or a broken runtime environment)", Status.TIMEOUT)

    def _fail_waiting(self, reason: str, status: Status, log: str = "") -> None:
        """No actor can take candidates: the run's error, and each candidate waiting recorded."""
        self._error = WorkerStartupError(reason, log=log)
        while self._pending:
            job = self._pending.popleft()
            self._finish(job, Measurement.failure(status, reason, log=log), {}, "ray")

    def _kill(self, actor: Any) -> None:
        try:
            self._ray.kill(actor, no_restart=True)
        except Exception:  # noqa: BLE001 - already gone
            pass

    def _replace(self, slot: _Slot, deaths: int = 0) -> None:
        self._kill(slot.actor)
        if not self._closed:
            fresh = self._new_slot(slot.index)
            fresh.deaths = deaths
            self._slots[self._slots.index(slot)] = fresh

    def _step(self, wait_s: float | None) -> None:
        """Wait for a reply or a deadline, then handle replies, lost actors and overdue actors."""
        ray = self._ray
        running = [(s, s.job) for s in self._slots if s.job is not None]
        jobs = {job.ref: s for s, job in running}
        deadline = min((job.deadline for _, job in running), default=None)
        wait = _WAIT_SLICE_S if wait_s is None else wait_s
        if deadline is not None:
            wait = min(wait, max(0.0, deadline - time.monotonic()))
        if jobs:
            refs = list(jobs)
            ready, _ = ray.wait(refs, num_returns=1, timeout=wait)
            if ready:
                ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
            for ref in ready:
                self._on_reply(jobs[ref], ref)
        elif wait:
            time.sleep(min(wait, 0.05))
        for slot in list(self._slots):  # actors coming up (or dying before they do) take effect now
            if not slot.up and not slot.failed:
                self._actor_started(slot)
        self._check_startup()
        self._enforce_deadlines()
        self._dispatch()

    def _on_reply(self, slot: _Slot, ref: Any) -> None:
        ray = self._ray
        job = slot.job
        assert job is not None
        slot.job = None
        try:
            reply = ray.get(ref)
        except ray.exceptions.RayActorError as exc:  # the actor (or its node) is gone
            self._on_lost(slot, job, f"Ray actor {slot.name} was lost ({_one_line(exc)})")
            return
        except ray.exceptions.RayError as exc:  # the call itself failed: record, keep going
            self._finish(job, Measurement.failure(Status.CRASHED, f"Ray call failed: {_one_line(exc)}", log=str(exc)), {},
                         slot.name, slot.info)
            return
        slot.answered = True
        if isinstance(reply, StartupError):
            slot.failed = True
            if self._error is None:
                self._error = WorkerStartupError(reply.message, log=reply.log)
            return
        measurement, timings, name = reply.measurement, reply.timings, reply.worker
        slot.name = name
        if job.attempt:
            measurement = dataclasses.replace(measurement, details={**measurement.details, "retried_after": job.lost_reason})
        self._finish(job, measurement, timings, name)

    def _on_lost(self, slot: _Slot, job: _Job, reason: str) -> None:
        """An actor died under a candidate: retry it once elsewhere, else record it as crashed.
        (Candidates go only to actors that came up: one that never could is :meth:`_check_startup`'s.)"""
        self._replace(slot)
        if job.attempt == 0:
            self.retried += 1
            self._pending.appendleft(_Job(job.config, 1, lost_reason=reason))
        else:
            log = f"{job.lost_reason}\nretried once; {reason}"
            self._finish(job, Measurement.failure(Status.CRASHED, f"{reason}; already retried once", log=log),
                         {"total_s": time.monotonic() - job.dispatched}, slot.name, slot.info)

    def _finish(self, job: _Job, measurement: Measurement, timings: dict[str, float], name: str,
                where: Mapping[str, Any] | None = None) -> None:
        """Record ``job``'s result; ``where``: the actor's place, for a failure this pool records
        itself (a lost actor, one that stopped answering), whose measurement no actor made."""
        if where is not None:
            retried = {"retried_after": job.lost_reason} if job.attempt else {}
            measurement = dataclasses.replace(measurement, details={**where, **retried, **measurement.details})
        self._done.append(Result(job.config, measurement, dict(timings), name))

    def _enforce_deadlines(self) -> None:
        now = time.monotonic()
        for slot in list(self._slots):
            job = slot.job
            if job is None or now < job.deadline:
                continue
            slot.job = None
            waited = now - job.dispatched
            reason = f"Ray actor {slot.name} did not answer for {waited:.0f} s: killed and replaced"
            self._replace(slot)
            self._finish(job, Measurement.failure(Status.TIMEOUT, reason), {"total_s": waited}, slot.name, slot.info)

    def _dispatch(self) -> None:
        """Hand waiting candidates to free actors that have come up. An actor not up yet may wait
        for a CPU or GPU the others hold for good (more workers than the cluster has): a candidate
        handed to it waited there until its deadline, minutes, and ended the run as an actor
        that could not start, where the docs promise a queue."""
        for slot in self._slots:
            if not self._pending:
                return
            if slot.job is not None or slot.failed or not self._actor_started(slot):
                continue
            job = self._pending.popleft()
            now = time.monotonic()
            budget = (self.limits.compile_timeout_s + self.limits.run_timeout_s + self.limits.verify_timeout_s
                      + self.actor_slack_s)
            if not slot.answered:
                budget += self.start_timeout_s
            job.ref = slot.actor.evaluate.remote(job.config, self.limits.max_latency_ms)
            job.dispatched, job.deadline = now, now + budget
            slot.job = job
            if self.on_start is not None:
                self.on_start(job.config, slot.name)


def ray_pool_factory(address: str | None = None, allow_mixed_gpus: bool = False,
                     num_cpus: int | None = None) -> PoolFactory:
    """A pool factory (the engine's ``pool_factory``) that makes :class:`RayPool` s for this cluster."""

    def make(spec: BackendSpec, workers: int = 0, limits: EvalLimits = EvalLimits(),
             on_start: Callable[[Config, str], None] | None = None) -> RayPool:
        return RayPool(spec, workers, limits, on_start=on_start, address=address,
                       num_cpus=num_cpus, allow_mixed_gpus=allow_mixed_gpus)

    return make
