"""Where failures concentrate: the slot values over-represented among the trials of one status.

A broken corner of a template shows up as "90% of compile errors have unroll=16" while only 25% of
all trials have it. Vectorised over the session model's columns (status codes, one code column per
slot) so 20,000 trials cost a few milliseconds; Qt-free so it is tested directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from workbench.core.domain.measurement import Status, Trial

STATUSES: tuple[Status, ...] = tuple(Status)


@dataclass(frozen=True)
class Concentration:
    status: Status
    slot: str
    value: object
    count: int  # failures of this status with slot == value
    total: int  # failures of this status
    share: float  # count / total
    baseline: float  # share of all trials with slot == value

    def text(self) -> str:
        return (f"{self.share:.0%} of {self.status.value} ({self.count}/{self.total}) have "
                f"{self.slot}={self.value} (vs {self.baseline:.0%} of all trials)")


def status_counts_from_codes(codes: np.ndarray) -> dict[Status, int]:
    """Trials per status (codes index :data:`STATUSES`), in the order of :class:`Status`."""
    counts = np.bincount(codes[codes >= 0], minlength=len(STATUSES)) if len(codes) else np.zeros(len(STATUSES), int)
    return {status: int(counts[i]) for i, status in enumerate(STATUSES) if counts[i]}


#: Failures of one status needed before a shared slot value means anything: with two failures,
#: "100% have tile_size_x=1" is a coincidence as often as a cause.
MIN_FAILURES = 8


def concentrations_from_columns(codes: np.ndarray, slots: Mapping[str, tuple[np.ndarray, Sequence[Any]]],
                                min_share: float = 0.5, min_lift: float = 1.25,
                                min_count: int = MIN_FAILURES) -> list[Concentration]:
    """``codes``: status code per trial; ``slots``: name -> (value index per trial, the values).

    For each failure status, the slot values that at least ``min_share`` of its failures share and
    that are over-represented against all trials (``share >= min_lift * baseline``), strongest first.
    """
    n = len(codes)
    if n == 0:
        return []
    ok_code = STATUSES.index(Status.OK)
    found: list[Concentration] = []
    overall = {name: np.bincount(index, minlength=len(values)) for name, (index, values) in slots.items()}
    for code in np.unique(codes):
        if code == ok_code or code < 0:
            continue
        mask = codes == code
        total = int(mask.sum())
        if total < min_count:
            continue
        for name, (index, values) in slots.items():
            among = np.bincount(index[mask], minlength=len(values))
            k = int(np.argmax(among))
            share = among[k] / total
            baseline = overall[name][k] / n
            if share >= min_share and share >= min_lift * baseline:
                found.append(Concentration(STATUSES[int(code)], name, values[k], int(among[k]), total,
                                           float(share), float(baseline)))
    found.sort(key=lambda c: (-(c.share - c.baseline), -c.count))
    return found


def failure_concentrations(trials: Sequence[Trial], **options: Any) -> list[Concentration]:
    """The same analysis straight from trials (builds the columns first)."""
    codes = np.array([STATUSES.index(t.status) for t in trials], dtype=np.int64)
    slots: dict[str, tuple[np.ndarray, list[Any]]] = {}
    names = list(trials[0].config) if trials else []
    for name in names:
        raw = [t.config.get(name) for t in trials]
        values = list(dict.fromkeys(raw))
        position = {v: i for i, v in enumerate(values)}
        slots[name] = (np.array([position[v] for v in raw], dtype=np.int64), values)
    return concentrations_from_columns(codes, slots, **options)


def failure_reason(trial: Trial) -> str:
    """What a failure itself says: for a refused launch, the resources it asked for (registers x
    threads, shared memory per block), which is the cause whatever the slot values; else its message."""
    metrics = trial.measurement.metrics
    if trial.status is Status.LAUNCH_ERROR and "registers" in metrics:
        parts = []
        registers, threads = metrics.get("registers"), metrics.get("threads_per_block")
        if registers is not None and threads is not None:
            parts.append(f"{registers:.0f} registers x {threads:.0f} threads = {registers * threads:,.0f} registers per block")
        elif registers is not None:
            parts.append(f"{registers:.0f} registers per thread")
        smem = metrics.get("smem_bytes")
        if smem:
            parts.append(f"{smem / 1024:.1f} KiB shared memory per block")
        if parts:
            return "; ".join(parts)
    message = trial.measurement.message.strip().splitlines()
    return message[0] if message else trial.status.value


def failure_reasons(trials: Sequence[Trial], status: Status, limit: int | None = 3) -> list[tuple[str, int]]:
    """The distinct reasons of the failures of ``status``, most frequent first, with their counts
    (the ``limit`` most frequent; None: all)."""
    counts: dict[str, int] = {}
    for trial in trials:
        if trial.status is status:
            reason = failure_reason(trial)
            counts[reason] = counts.get(reason, 0) + 1
    ordered = sorted(counts.items(), key=lambda item: -item[1])
    return ordered if limit is None else ordered[:limit]
