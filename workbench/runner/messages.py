"""The wire protocol between the pool (parent) and a worker process, as typed records.

Each message is a frozen dataclass pickled over the worker's pipe. The parent unpickles only
workbench record classes and NumPy values (``core.restricted_pickle``) and accepts only the reply
types below, so bytes a candidate writes to the pipe fail that candidate and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.core.domain.measurement import Measurement
from workbench.core.domain.space import Config


#: Largest message the parent reads from a worker; a longer length header is garbage (a candidate
#: wrote to the pipe), so a worker never sends a longer one (a reply too large says so instead).
MAX_MESSAGE_BYTES = 64 * 1024 * 1024


# --- parent -> worker ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Evaluate:
    """Evaluate ``config``; the replies about it carry ``seq``. ``max_latency_ms`` is the early-abort
    latency threshold in force when it was dispatched (it follows a mid-run change of the limit)."""

    seq: int
    config: Config
    max_latency_ms: float | None = None


@dataclass(frozen=True)
class Quit:
    """Close the backend and exit."""


# --- worker -> parent ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Ready:
    """The backend is built and prepared; the worker takes candidates."""

    pid: int


@dataclass(frozen=True)
class StartupError:
    """Building or preparing the backend failed: no candidate can run in this worker."""

    message: str
    log: str


@dataclass(frozen=True)
class PhaseStarted:
    """Candidate ``seq`` entered ``name`` (compile, run, verify) at ``since`` (monotonic seconds)."""

    seq: int
    name: str
    since: float


@dataclass(frozen=True)
class Reply:
    """Candidate ``seq`` finished. ``fatal``: the worker exits after sending it (its process state
    is no longer trustworthy: out of memory, a poisoned CUDA context)."""

    seq: int
    measurement: Measurement
    timings: dict[str, float]
    fatal: bool = False


# --- Ray actor -> RayPool (the actor answers a call instead of writing to a pipe) --------------
@dataclass(frozen=True)
class HostResult:
    """A candidate measured by a Ray actor's one-worker local pool (or ``StartupError``)."""

    measurement: Measurement
    timings: dict[str, float]
    worker: str


ToWorker = Evaluate | Quit
FromWorker = Ready | StartupError | PhaseStarted | Reply
