"""Facts: what one evaluation of one config produced.

Measurements and trials are immutable records. Everything derived from them (feasibility,
score, ranking) lives in :mod:`workbench.core.domain.objective` and is recomputed on demand, so changing
constraints or weights never rewrites stored data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Iterable, Mapping

from workbench.core.domain.metrics import METRICS, known_direction
from workbench.core.domain.space import Config


class Status(str, Enum):
    """Outcome of one evaluation. Only ``ok`` trials carry meaningful timing metrics."""

    OK = "ok"
    COMPILE_ERROR = "compile_error"
    LAUNCH_ERROR = "launch_error"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    WRONG_RESULT = "wrong_result"
    SKIPPED = "skipped"
    #: Timing stopped early because the first samples were hopeless under the latency constraint
    #: in force; ``latency_bound_ms`` keeps what was seen, so the trial can be re-measured later.
    ABORTED = "aborted"

    @property
    def failed(self) -> bool:
        return self is not Status.OK

    @property
    def is_failure(self) -> bool:
        """Failed, and not abandoned on purpose: what the run, the failure log and the table count
        as failures (an early abort is counted apart, and can be measured again)."""
        return self is not Status.OK and self is not Status.ABORTED


# Canonical metric names. Backends may report others; these are the ones the views know about.
LATENCY = "latency_ms"
MEMORY = "memory_mb"
QUALITY = "quality"
THROUGHPUT = "throughput_gbs"
GFLOPS = "gflops"
#: Metrics a record may never hold below zero: a negative value is a corrupt record.
NON_NEGATIVE_METRICS = frozenset({"latency_ms", "memory_mb", "throughput_gbs", "gflops", "registers",
                                   "smem_bytes", "spill_bytes", "occupancy"})

#: Direction of each known metric: +1 when bigger is better, -1 when smaller is better (the
#: registry in :mod:`workbench.core.domain.metrics`, by name).
METRIC_DIRECTION: dict[str, int] = {name: info.direction for name, info in METRICS.items()}


def metric_direction(name: str, overrides: Mapping[str, int] | None = None) -> int:
    """+1 if larger values of ``name`` are better, else -1: the user's override, the registry, or a
    naming convention; a metric none of them knows counts as smaller-is-better here (views), while
    weighting or constraining it asks for an explicit direction (see ``Objective``)."""
    direction = known_direction(name, overrides)
    return -1 if direction is None else direction


#: The most characters a measurement's one-line ``message`` keeps, and its ``log``: a benchmark
#: that raised with a 30-million-character text made each failed trial 60 MB, its session 420 MB.
MAX_MESSAGE_CHARS = 2_000
MAX_LOG_CHARS = 256 * 1024


#: Room kept within a bound for the note of what was left out.
_NOTE_ROOM = 64


def bounded_text(text: str, limit: int) -> str:
    """``text`` when it has at most ``limit`` characters, else its start and its end (where a log
    says what went wrong) around a note of how much was left out, ``limit`` characters in all: so
    bounding again (a measurement copied, a session reopened) changes nothing, where a note on top
    of the limit was cut out and counted anew ("41 characters left out" of three million)."""
    if len(text) <= limit:
        return text
    kept = max(limit - _NOTE_ROOM, 0)
    head, tail = kept * 3 // 4, kept - kept * 3 // 4
    return f"{text[:head]}\n[... {len(text) - head - tail:,} characters left out ...]\n{text[len(text) - tail:]}"


@dataclass(frozen=True)
class Measurement:
    """Status plus raw metrics of one evaluation, and for failures the reason and full log.

    ``message`` is one line (shown in tables); ``log`` is the full compiler or runtime output,
    both bounded (:data:`MAX_MESSAGE_CHARS`, :data:`MAX_LOG_CHARS`) whatever wrote them.
    ``details`` holds structured, non-numeric facts (occupancy limiter, model terms, device).
    """

    status: Status
    metrics: Mapping[str, float] = field(default_factory=dict)
    message: str = ""
    log: str = ""
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.message) > MAX_MESSAGE_CHARS:
            object.__setattr__(self, "message", bounded_text(self.message, MAX_MESSAGE_CHARS).replace("\n", " "))
        if len(self.log) > MAX_LOG_CHARS:
            object.__setattr__(self, "log", bounded_text(self.log, MAX_LOG_CHARS))

    @property
    def resources_pending(self) -> bool:
        """Simulated with estimated resources while its compile was pending (``details``; only a
        true ``true`` counts: a file's "false" or 1 is not a mark)."""
        return self.details.get("resources_pending") is True

    @property
    def resources_estimated(self) -> bool:
        """Simulated with estimated registers and shared memory, pending or for good."""
        return self.details.get("estimated") is True

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    def metric(self, name: str) -> float:
        """The metric's value, or NaN when it was not reported."""
        value = self.metrics.get(name)
        return float(value) if value is not None else math.nan

    @staticmethod
    def failure(status: Status, message: str, log: str = "", **details: Any) -> "Measurement":
        message = message.replace("\0", "\n")  # a tool's log in parts (a cached compile's among them)
        first = message.strip().splitlines()[0] if message.strip() else status.value
        return Measurement(status=status, message=first, log=log or message, details=details)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status.value, "metrics": dict(self.metrics)}
        if self.message:
            out["message"] = self.message
        if self.log and self.log != self.message:
            out["log"] = self.log
        if self.details:
            out["details"] = dict(self.details)
        return out


@dataclass(frozen=True)
class Trial:
    """One evaluated config in a session: the config, its measurement, and where time went.

    ``index`` is the evaluation order (0-based). ``timings`` holds wall-clock seconds per phase
    (``compile_s``, ``verify_s``, ``benchmark_s``, ``total_s``); ``worker`` names the worker / device;
    ``problem`` the problem parameters it ran at when they differ from the session's.
    """

    index: int
    config: Config
    measurement: Measurement
    started_at: float = 0.0
    finished_at: float = 0.0
    timings: Mapping[str, float] = field(default_factory=dict)
    worker: str = ""
    #: The problem this config was measured at; None: the session's ``problem``. A size sweep
    #: keeps trials of several problem sizes in one session (see :mod:`workbench.core.domain.sizes`).
    problem: Mapping[str, Any] | None = None

    @property
    def status(self) -> Status:
        return self.measurement.status

    @property
    def ok(self) -> bool:
        return self.measurement.ok

    def metric(self, name: str) -> float:
        return self.measurement.metric(name)


def failure_counts(trials: Iterable[Trial]) -> dict[tuple[str, str], int]:
    """How many of ``trials`` failed with each (status, first line of the message), in the order
    met: what a summary names when nothing succeeded ("most often compile_error (40): k.cu(20):
    error: ..."). Successful trials and those stopped early under a latency limit are no failures."""
    counts: dict[tuple[str, str], int] = {}
    for trial in trials:
        if trial.status in (Status.OK, Status.ABORTED):
            continue
        line = next((part.strip() for part in trial.measurement.message.splitlines() if part.strip()), "")
        key = (trial.status.value, line[:200])
        counts[key] = counts.get(key, 0) + 1
    return counts
