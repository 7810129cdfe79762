"""Where failures concentrate: the slot values over-represented among the trials of one status.

A broken corner of a template shows up as "90% of compile errors have unroll=16" while only 25% of
all trials have it. Qt-free so it is tested directly.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from workbench.core.measurement import Status, Trial


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


def status_counts(trials: Sequence[Trial]) -> dict[Status, int]:
    """Number of trials per status, in the order of :class:`Status`."""
    counts = Counter(trial.status for trial in trials)
    return {status: counts[status] for status in Status if counts[status]}


def failure_concentrations(trials: Sequence[Trial], min_share: float = 0.5, min_lift: float = 1.25,
                           min_count: int = 2) -> list[Concentration]:
    """For each failure status, the slot values that a majority of its failures share and that are
    clearly over-represented compared with all trials (``share >= min_lift * baseline``), strongest first."""
    if not trials:
        return []
    n = len(trials)
    overall: dict[str, Counter] = {}
    for trial in trials:
        for slot, value in trial.config.items():
            overall.setdefault(slot, Counter())[value] += 1
    by_status: dict[Status, list[Trial]] = {}
    for trial in trials:
        if trial.status is not Status.OK:
            by_status.setdefault(trial.status, []).append(trial)
    found: list[Concentration] = []
    for status, failed in by_status.items():
        total = len(failed)
        if total < min_count:
            continue
        for slot, counter in overall.items():
            among = Counter(trial.config.get(slot) for trial in failed)
            value, count = among.most_common(1)[0]
            share = count / total
            baseline = counter[value] / n
            if share >= min_share and share >= min_lift * baseline:
                found.append(Concentration(status, slot, value, count, total, share, baseline))
    found.sort(key=lambda c: (-(c.share - c.baseline), -c.count))
    return found
