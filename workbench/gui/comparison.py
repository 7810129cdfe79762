"""Two configs side by side, and sessions overlaid (Qt-free, tested directly).

Comparing is how a person learns what a slot does: the same kernel with one value changed, its
metrics and resources next to each other, and the lines of rendered source that differ. Sessions
(the same template on two GPUs, or two strategies) compare by their best latency so far per
evaluation, which needs no common score.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from workbench.core.domain.measurement import LATENCY, Trial
from workbench.core.domain.objective import Constraints, MetricTable
from workbench.core.domain.records import device_info, provenance, provenance_tag
from workbench.core.domain.session import Session, problem_key

#: (with the bound an aborted candidate's latency was stopped above: its latency is blank, and the
#: table's "> 10.36" was lost in the comparison)
COMPARED_METRICS = ("latency_ms", "latency_bound_ms", "latency_p20_ms", "latency_p80_ms", "throughput_gbs", "gflops",
                    "quality", "memory_mb", "onchip_kb_per_sm", "occupancy")
COMPARED_RESOURCES = ("registers", "threads_per_block", "onchip_kb_per_block", "smem_bytes", "spill_bytes")


@dataclass(frozen=True)
class Row:
    section: str  # "slot", "metric" or "resource"
    name: str
    a: Any
    b: Any

    @property
    def differs(self) -> bool:
        if isinstance(self.a, float) and isinstance(self.b, float):
            both_nan = math.isnan(self.a) and math.isnan(self.b)
            return not both_nan and not math.isclose(self.a, self.b, rel_tol=1e-9)
        return self.a != self.b

    @property
    def ratio(self) -> float:
        """b / a for positive numbers (NaN otherwise)."""
        try:
            a, b = float(self.a), float(self.b)
        except (TypeError, ValueError):
            return math.nan
        return b / a if a > 0 and math.isfinite(a) and math.isfinite(b) and not isinstance(self.a, bool) else math.nan


def compare_trials(a: Trial, b: Trial) -> list[Row]:
    """Metrics (with the status), then slot values, then resources (those either trial reports).

    The figures come first: "B is 1.31x slower" is what a comparison is read for, and below eight
    slot rows it was out of sight in a 1440x900 window."""
    metrics = [Row("metric", name, float(a.metric(name)), float(b.metric(name))) for name in COMPARED_METRICS
               if name in a.measurement.metrics or name in b.measurement.metrics]
    metrics.append(Row("metric", "status", a.status.value, b.status.value))
    slots = [Row("slot", name, a.config.get(name), b.config.get(name)) for name in dict.fromkeys([*a.config, *b.config])]
    resources = [Row("resource", name, float(a.metric(name)), float(b.metric(name))) for name in COMPARED_RESOURCES
                 if name in a.measurement.metrics or name in b.measurement.metrics]
    return [*metrics, *slots, *resources]


def source_diff(source_a: str, source_b: str, name_a: str, name_b: str) -> list[str]:
    """Unified diff lines of two rendered sources (empty when they are the same)."""
    return list(difflib.unified_diff(source_a.splitlines(), source_b.splitlines(), name_a, name_b, lineterm="", n=1))


def best_latency_so_far(trials: Sequence[Trial] | MetricTable, constraints: Constraints | None = None) -> np.ndarray:
    """Per evaluation, the lowest latency so far of a successful trial that meets ``constraints``
    (NaN before the first). Sessions overlaid on the open one are held to its constraints: a curve
    that fell to a config they exclude contradicted the recommendation beside it. A caller that
    redraws under many constraints (a slider dragged) passes the trials' table, built once."""
    table = trials if isinstance(trials, MetricTable) else MetricTable.from_trials(trials)
    return running_min(np.where(feasible_under(table, constraints), table.column(LATENCY), np.nan))


def feasible_under(table: MetricTable, constraints: Constraints | None) -> np.ndarray:
    """The successful rows of ``table`` that meet every bound of ``constraints`` (a metric a
    trial does not report never meets one), as :func:`rank` counts them feasible."""
    feasible = table.ok.copy()
    for bound in (constraints.bounds() if constraints is not None else ()):
        feasible &= bound.satisfied(table.column(bound.metric))
    return feasible


def running_min(latency: np.ndarray) -> np.ndarray:
    """Running minimum ignoring NaN (NaN until the first number)."""
    latency = np.where(np.isfinite(latency), latency, np.inf)
    best = np.minimum.accumulate(latency) if latency.size else latency
    return np.where(np.isfinite(best), best, np.nan)


def best_so_far_steps(best: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The vertices of a best-so-far curve (:func:`running_min`'s) drawn as the staircase it is: each
    best holds until the evaluation that beats it, then drops straight down (a line from point to
    point sloped from the evaluation before). From its change points only: a handful of vertices,
    not one per trial. x is the evaluation's position in ``best``."""
    n = len(best)
    finite = np.isfinite(best)
    if not finite.any():
        return np.empty(0), np.empty(0)
    start = int(np.argmax(finite))
    changes = start + np.flatnonzero(np.diff(best[start:], prepend=np.nan) != 0)
    x = np.repeat(changes, 2)[1:]
    y = np.repeat(best[changes], 2)[:-1]
    return np.append(x, n - 1).astype(float), np.append(y, best[-1])


def _label_parts(session: Session) -> tuple[str, str, str]:
    """(kernel, device, strategy) of a legend's label (``sgemm``, ``Simulated NVIDIA H200``,
    ``agents``); a session no strategy of ours measured (an import of a recording) says so instead
    of a strategy's name, and a recording's device is tagged as one (``A100 [replayed]``), as a
    simulated GPU's name says what it is."""
    device = (session.device or {}).get("name", "?")
    kind = provenance(device_info(session.device or {}))
    if kind in ("replayed", "recorded"):
        device += provenance_tag(kind)
    strategy = (session.strategy or {}).get("name") if isinstance(session.strategy, dict) else None
    if not strategy:
        strategy = "imported" if (session.device or {}).get("recorded") else "?"
    return session.kernel, device, strategy


def legend_labels(sessions: Sequence[Session]) -> tuple[str, list[str]]:
    """What the sessions of one legend share, said once (``sgemm · Simulated NVIDIA H200``; "" for
    one session or none shared), and each session's label without it (``tpe``). Each line said
    the kernel and the device again, so in a narrow legend the lines were three rows each and
    the second session's strategy and best latency, the figures compared, fell below its edge."""
    parts = [_label_parts(session) for session in sessions]
    if len(parts) < 2:
        return "", [" · ".join(p) for p in parts]
    shared = [i for i in (0, 1) if all(p[i] == parts[0][i] for p in parts)]
    common = " · ".join(parts[0][i] for i in shared)
    return common, [" · ".join(part for i, part in enumerate(p) if i not in shared) for p in parts]


#: How an exported comparison labels the sessions of one provenance (the window's banner words).
_KIND_LABELS = {"simulated": ("SIMULATED", "modelled, not measured"),
                "replayed": ("REPLAY", "recorded earlier, not measured now"),
                "recorded": ("RECORDED", "measured earlier, not now")}


def comparison_timing_label(sessions: Sequence[Session], shown: str) -> str:
    """The label of a picture of ``sessions`` overlaid (the open one first, numbered from 1 as the
    legend numbers them): ``shown``, the open session's own label, when every session's timings
    are of its kind; else each kind that is not a measurement with the sessions it covers
    ("SIMULATED: session 2 modelled, not measured; REPLAY: session 1 recorded earlier, ..."). A
    simulated curve exported under the open replay's "REPLAY" label passed for a recording."""
    # (the device's flags, as the legend reads them: a session's load sets them from its backend,
    # and an import, of the replay backend, is a recording, not a replay)
    kinds = [provenance(device_info(session.device or {})) for session in sessions]
    if len(set(kinds)) <= 1:
        return shown
    parts = []
    for kind, (tag, what) in _KIND_LABELS.items():
        numbers = [str(k + 1) for k, other in enumerate(kinds) if other == kind]
        if numbers:
            parts.append(f"{tag}: session{'s' if len(numbers) > 1 else ''} {', '.join(numbers)} {what}")
    return "; ".join(parts)


def overlay_trials(session: Session, problem: Mapping[str, Any] | None) -> tuple[list[Trial], dict[str, Any] | None]:
    """The trials of ``session`` whose best latency so far is overlaid on a view of ``problem``
    (None: no problem is shown), and the problem they were measured at when it is another one
    (None when it is ``problem``).

    Latencies at different problem sizes measure different work, so a curve never mixes sizes: a
    running minimum over a sweep's trials was the smallest size's optimum, and a curve of another
    size looked faster or slower for no reason of its configs. The trials at ``problem`` when the
    session measured it, else those at its own problem, else at the size it measured last."""
    if problem is not None:
        there = session.trials_at(problem)
        if there:
            return there, None
    chosen = dict(session.problem)
    trials = session.trials_at(chosen)
    if not trials and session.trials:
        chosen = session.problem_of(session.trials[-1])
        trials = session.trials_at(chosen)
    other = None if problem is None or problem_key(chosen) == problem_key(problem) else chosen
    return trials, other
