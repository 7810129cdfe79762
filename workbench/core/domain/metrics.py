"""What each metric means: its unit and whether larger or smaller values are better.

The direction of a metric decides which end of it the score rewards and which way a search
pushes it, so getting it wrong silently recommends the worst config. Directions therefore come
from one registry: the metrics the backends declare, plus the naming conventions of Kernel Tuner
caches (``GFLOP/s``, ``GFLOPS/W``, ``TFLOP/s``, energy, power), which an import turns into
identifiers like ``gflops_w``. A metric the registry does not know has no direction: the user
states one (``--maximize`` / ``--minimize``, the GUI's direction toggle) or it cannot be weighted.
"""

from __future__ import annotations

import difflib
import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Iterable, Mapping

from workbench.core.errors import WorkbenchError

MAXIMIZE = +1
MINIMIZE = -1


@dataclass(frozen=True)
class MetricInfo:
    """One known metric: its name, unit and direction (+1 larger is better, -1 smaller is better)."""

    name: str
    unit: str
    direction: int
    description: str = ""


def _m(name: str, unit: str, direction: int, description: str = "") -> tuple[str, MetricInfo]:
    return name, MetricInfo(name, unit, direction, description)


#: Metrics the workbench's backends report and the views know by name.
METRICS: dict[str, MetricInfo] = dict(
    (
        _m("latency_ms", "ms", MINIMIZE, "median kernel time"),
        _m("latency_p20_ms", "ms", MINIMIZE, "20th percentile of the kernel time"),
        _m("latency_p80_ms", "ms", MINIMIZE, "80th percentile of the kernel time"),
        _m("latency_bound_ms", "ms", MINIMIZE, "lower bound on the latency of an aborted candidate"),
        _m("time", "ms", MINIMIZE, "kernel time (Kernel Tuner)"),
        _m("kt_time_ms", "ms", MINIMIZE, "Kernel Tuner's recorded time (the figure it optimised: by default the mean of its repetitions)"),
        _m("memory_mb", "MB", MINIMIZE, "device memory the config takes"),
        _m("registers", "", MINIMIZE, "registers per thread"),
        _m("smem_bytes", "B", MINIMIZE, "shared memory per block"),
        _m("spill_bytes", "B", MINIMIZE, "register spill loads and stores"),
        _m("power_w", "W", MINIMIZE, "board power while running"),
        _m("energy_j", "J", MINIMIZE, "energy per run"),
        _m("compile_s", "s", MINIMIZE, "compile time"),
        _m("throughput_gbs", "GB/s", MAXIMIZE, "memory throughput"),
        _m("throughput", "", MAXIMIZE, "throughput"),
        _m("gflops", "GFLOP/s", MAXIMIZE, "arithmetic throughput"),
        _m("tflops", "TFLOP/s", MAXIMIZE, "arithmetic throughput"),
        _m("gflops_w", "GFLOPS/W", MAXIMIZE, "energy efficiency"),
        _m("pct_of_peak", "%", MAXIMIZE, "share of the roofline peak"),
        _m("occupancy", "", MAXIMIZE, "achieved share of the SM's warp slots"),
        _m("quality", "", MAXIMIZE, "accuracy against the float64 reference (1 = exact)"),
    )
)

#: What the figures a backend reports to describe a config (not to rate it: no direction of their
#: own) hold, for the views' tool tips.
#: The units of those figures, which a constraint on one may name (``onchip_kb_per_sm <= 200 KiB``).
DESCRIPTIVE_UNITS: dict[str, str] = {"onchip_kb_per_block": "KiB", "onchip_kb_per_sm": "KiB", "dram_mb": "MB",
                                     "work_gflop": "GFLOP"}
DESCRIPTIVE: dict[str, str] = {
    "threads_per_block": "threads in one block",
    "onchip_kb_per_block": "shared memory and registers one block takes (KiB)",
    "onchip_kb_per_sm": "shared memory and registers the blocks resident on one SM take together (KiB)",
    "dram_mb": "DRAM traffic of one launch, re-reads and spills included (MB)",
    "work_gflop": "floating-point work of one launch (GFLOP)",
}


def metric_description(name: str) -> str:
    """What metric ``name`` holds, in a few words; empty for one the workbench does not know."""
    info = METRICS.get(name)
    return info.description if info is not None else DESCRIPTIVE.get(name, "")


#: A recording's rates, which Kernel Tuner computed at its own time (see :func:`rates_time_apart`).
RECORDED_RATES = ("gflops", "throughput_gbs")


def rates_time_apart(metrics: Mapping[str, float]) -> float | None:
    """Kernel Tuner's time (``kt_time_ms``) when a recorded trial's rates (GFLOP/s, GB/s) were
    computed at it more than 1% from the median shown as its latency, else None: a rate beside
    the median read as its work done in that time (18% apart on one point-in-polygon config)."""
    kt_time, latency = metrics.get("kt_time_ms"), metrics.get("latency_ms")
    if (not any(name in metrics for name in RECORDED_RATES) or not isinstance(kt_time, (int, float))
            or not isinstance(latency, (int, float)) or not math.isfinite(kt_time) or not latency > 0):
        return None
    return float(kt_time) if abs(kt_time / latency - 1.0) > 0.01 else None


#: Metrics of the registry that are shares of a whole, 1 at most (a bound asking for more can never hold).
SHARES = frozenset({"occupancy", "quality"})

#: Kernel Tuner's metric names (units as names) -> ours.
KT_METRICS: dict[str, str] = {"GFLOP/s": "gflops", "GB/s": "throughput_gbs", "TFLOP/s": "tflops"}


def metric_name(name: str) -> str:
    """A metric name as a benchmark reports it (``GFLOP/s``, ``error-db``) as one the workbench can
    name in a weight, a bound or a direction: Kernel Tuner's units become ours (``GFLOP/s`` ->
    ``gflops``), a name that is not an identifier becomes a lower-case one (``GFLOPS/W`` ->
    ``gflops_w``, ``my score`` -> ``my_score``), and an identifier is kept as it is (an import of a
    Kernel Tuner cache lower-cases those too, as it always has: ``identifier_of``)."""
    if name in KT_METRICS:
        return KT_METRICS[name]
    return name if name.isidentifier() and name.isascii() else identifier_of(name)


def not_a_metric_name(what: str, name: object) -> str:
    """The refusal of a name no metric can have, with the name it is recorded under when there is one."""
    if isinstance(name, str) and name.strip():
        return f"{what} {name!r}: not a metric name (metrics are recorded under names like {metric_name(name)!r})"
    return f"{what} {name!r}: not a metric name"


def identifier_of(name: str) -> str:
    """``name`` made a lower-case ASCII identifier (runs of other characters become ``_``).

    Letters beyond ASCII are kept as what they are: accents dropped (``énergie`` -> ``energie``),
    a micro sign as ``u`` (``µJ`` -> ``uj``), and any other letter or digit as its code point
    (``時間`` -> ``u6642u9593``). Dropped, ``énergie µJ`` was recorded as ``nergie_j`` and two
    names in Chinese were both ``metric``, so every trial reporting both failed."""
    if not name.isascii():
        plain = "".join(ch for ch in unicodedata.normalize("NFKD", name) if not unicodedata.combining(ch))
        name = "".join(ch if ch.isascii() else "u" if ch in "µμ" else f"u{ord(ch):x}" if ch.isalnum() else "_"
                       for ch in plain)
    clean = re.sub(r"[^A-Za-z0-9_]+", "_", name).strip("_").lower() or "metric"
    return clean if not clean[0].isdigit() else f"m_{clean}"


#: Readings of the kernel time other than ``latency_ms`` that do not start with ``latency``
#: (Kernel Tuner's recorded time): a view that sets metrics against latency does not offer them,
#: since latency plotted against itself is no trade-off.
OTHER_LATENCY_READINGS = frozenset({"kt_time_ms"})

#: Words of a quantity of work (what a rate counts per second, watt or joule).
_WORK = r"(flop|flops|op|ops|points|items|samples|elements|bytes|b|kb|mb|gb|tb|frames|iterations|iters|rows|pixels|" \
        r"perf|instructions|requests|tokens|updates|cells|keys)"
#: Units and words of time, energy and power (what a cost per unit of work is measured in).
_TIME_ENERGY = r"(time|latency|duration|runtime|ns|us|ms|s|sec|seconds|energy|power|j|joule|joules|w|watt|watts)"
#: Naming conventions of metrics that are not registered by name (Kernel Tuner user metrics after
#: import turn ``GFLOPS/W`` into ``gflops_w``, ``Energy (J)`` into ``energy_j``, ``Mpoints/s`` into
#: ``mpoints_s``): the first rule whose pattern matches the lower-case name decides. A trailing
#: ``_s``, ``_w`` or ``_j`` is read by what precedes it: after a quantity of work it is a rate or an
#: efficiency (``mpoints_s``, ``perf_w``, ``bytes_j``: larger is better), after time, energy or power
#: its unit (``compile_time_s``, ``energy_j``: smaller is better), and after anything else a unit
#: too (``wall_s``, ``board_w``: smaller, as sessions saved with such weights were ranked); time or
#: energy per unit of work (``ns_flop``) is smaller-is-better.
CONVENTIONS: tuple[tuple[str, int], ...] = (
    # a unit right after a time, energy or power word is that quantity's: bytes_copy_time_s, gpu_energy_j
    (r"(^|_)(time|latency|duration|runtime|elapsed|energy|power)_(s|sec|ms|us|ns|w|watt|j|joule)$", MINIMIZE),
    (rf"^[gmkt]?{_WORK}(_.*)?_(per_)?(s|sec|second|w|watt|j|joule)$", MAXIMIZE),  # mpoints_s, perf_w, bytes_j
    (rf"^{_TIME_ENERGY}_(per_)?[gmkt]?{_WORK}$", MINIMIZE),  # ns_flop, time_per_flop, j_per_op
    (r"(flop|ops).*_(per_)?(w|watt|j|joule)$", MAXIMIZE),  # gflops_w, flops_per_joule: efficiency
    # an amount of floating-point work, not a rate (work_gflop, flop): a cost, as bytes moved are
    (r"(^|_)[gmkt]?flop$", MINIMIZE),
    (r"(efficiency|speedup)", MAXIMIZE),
    (r"(energy|power|watt|joule)", MINIMIZE),
    (r"(flop|gb_s|gbs|bandwidth|throughput|occupancy|quality)", MAXIMIZE),
    # a bare unit after any other word is read as a unit, as it always was (wall_s, board_w, total_j)
    (r"(time|latency|_ms$|_us$|_ns$|_s$|duration|memory|bytes|_mb$|registers|spill|_w$|_j$)", MINIMIZE),
)


def known_direction(name: str, overrides: Mapping[str, int] | None = None) -> int | None:
    """The direction of ``name``: the user's override, the registry, a naming convention, or None."""
    if overrides and name in overrides:
        return int(overrides[name])
    info = METRICS.get(name)
    if info is not None:
        return info.direction
    lower = name.lower()
    for pattern, direction in CONVENTIONS:
        if re.search(pattern, lower):
            return direction
    return None


def direction_word(direction: int) -> str:
    return "maximize" if direction > 0 else "minimize"


def parse_direction(value: object, what: str) -> int:
    """+1 / -1 from ``"max"``, ``"maximize"``, ``+1`` ... (file and user input)."""
    if isinstance(value, bool):
        raise WorkbenchError(f"{what}: direction {value!r} must be 'maximize' or 'minimize'")
    if isinstance(value, (int, float)) and value in (1, -1):
        return int(value)
    if isinstance(value, str) and value.strip().lower() in ("max", "maximize", "maximise", "larger", "+1", "1"):
        return MAXIMIZE
    if isinstance(value, str) and value.strip().lower() in ("min", "minimize", "minimise", "smaller", "-1"):
        return MINIMIZE
    raise WorkbenchError(f"{what}: direction {value!r} must be 'maximize' or 'minimize'")


class UnknownMetric(WorkbenchError):
    """A metric no trial reports and the backend does not declare (most likely a typo).

    ``metric`` is the name and ``asked`` what asked for it as the message says it (``metric``
    unless a caller named the source, such as a session file): a caller that knows which of its
    inputs named the metric (the command line's ``--min-quality``) says so, where the check
    itself, shared by every caller, cannot."""

    def __init__(self, message: str, metric: str, asked: str) -> None:
        super().__init__(message)
        self.metric = metric
        self.asked = asked


#: The one metric every successful measurement reports (``measurement.LATENCY``).
ALWAYS_REPORTED = "latency_ms"

#: Figures only a trial that is never feasible carries, which no objective can rank by: the
#: latency an aborted candidate was stopped above (a bound on it ranked nothing, and was taken).
NOT_RANKABLE = {"latency_bound_ms": "the bound an aborted candidate's latency was stopped above, which "
                                    "no feasible trial carries; constrain or weigh latency_ms"}


def check_metrics(
    metrics: Iterable[str],
    available: Iterable[str] | None,
    overrides: Mapping[str, int] | None = None,
    what: str = "metric",
    slots: Iterable[str] = (),
) -> list[str]:
    """Refuse metrics that cannot mean anything; return warnings for ones that may appear later.

    ``available`` is what the trials report and the backend declares; None means the backend
    cannot say in advance (a user benchmark), so an unknown name is only a warning. A weighted or
    constrained metric that is neither available nor possible is most likely a typo, or the name of
    one of the space's ``slots``, which an objective cannot bound (its values are the space's).
    """
    warnings: list[str] = []
    # Every successful measurement reports its latency (the engine's contract), so it is never a
    # typo, also in a session none of whose trials has succeeded yet.
    names = sorted((set(available) | {ALWAYS_REPORTED}) - set(NOT_RANKABLE)) if available is not None else None
    for metric in metrics:
        if metric in NOT_RANKABLE:
            raise WorkbenchError(f"{what} {metric!r}: {NOT_RANKABLE[metric]}")
        if names is not None and metric not in names:
            guess = _guess(metric, names)
            if metric_name(metric) != metric and metric_name(metric) in names:  # GFLOP/s: recorded as gflops
                guess = f" (metrics are recorded under names like {metric_name(metric)!r})"
            if metric in set(slots):
                guess = (f" ({metric} is a tunable slot of the kernel, not a measured figure: constraints and weights "
                         "apply to what trials measure, and a slot's values are the search space's)")
            elif metric == "time":  # a Kernel Tuner record's own field name
                guess = (" (an imported Kernel Tuner record's time is 'kt_time_ms', the median of its repetitions "
                         "'latency_ms')" if "kt_time_ms" in names else " (a kernel's time is 'latency_ms')")
            raise UnknownMetric(
                f"{what} {metric!r}: no trial reports it and the backend does not declare it{guess}; "
                f"known metrics: {', '.join(names) or 'none'}", metric, what
            )
        if names is None and metric not in METRICS:
            warnings.append(
                f"{what} {metric!r} is not one of the workbench's metrics, and this backend declares none in "
                "advance (a python benchmark's metrics are what its measure() returns); it counts once trials report it"
            )
    return warnings


def one_slip(typed: str, name: str) -> bool:
    """Whether ``typed`` is ``name`` in other capitals, or with one letter left out, one doubled, or
    two neighbours swapped: the slips of a hand, not another name (``err_l2`` beside ``err_l1``,
    ``merit2`` beside ``merit``)."""
    if typed.lower() == name.lower():
        return typed != name
    typed, name = typed.lower(), name.lower()
    if len(typed) == len(name) - 1:  # a letter left out
        return any(name[:k] + name[k + 1:] == typed for k in range(len(name)))
    if len(typed) == len(name) + 1:  # a letter doubled
        return any(typed[:k] + typed[k + 1:] == name and typed[k] == typed[k - 1] for k in range(1, len(typed)))
    if len(typed) == len(name) and typed != name:
        apart = [k for k, (a, b) in enumerate(zip(typed, name)) if a != b]
        return (len(apart) == 2 and apart[1] == apart[0] + 1
                and typed[apart[0]] == name[apart[1]] and typed[apart[1]] == name[apart[0]])
    return False


def check_slips(names: Iterable[str], reported: Iterable[str]) -> None:
    """Refuse a name, of a backend that declares no metrics ahead (a python benchmark), that no trial
    reports and that is one slip of the hand from one they do report: it was taken with a warning,
    searched under (nothing feasible) and stored. Any other name stays possible (a warning of
    :func:`check_metrics`): such a benchmark may report a figure for some configs only (``err_l2``
    for some, ``err_l1`` for all)."""
    known = sorted(set(reported))
    for name in names:
        if name in known or name in METRICS:
            continue
        slipped = next((other for other in known if one_slip(name, other)), None)
        if slipped is not None:
            raise UnknownMetric(f"metric {name!r}: no trial reports it (did you mean {slipped!r}?); the session's "
                                f"trials report {', '.join(known)}", name, "metric")


def idle_directions(directions: Mapping[str, int], named: Iterable[str], available: Iterable[str] | None) -> list[str]:
    """Warnings for stated directions of metrics no trial reports and the backend does not declare.

    A direction alone changes nothing unless the metric is also weighted, bounded or searched
    (``named``, checked by :func:`check_metrics`); one on a metric nothing reports is most likely
    a typo, said in one line rather than refused, since a session may carry it from another backend.
    """
    if available is None:
        return []
    names = set(available) | {ALWAYS_REPORTED}
    skip = set(named)
    return [
        f"direction for {metric!r}: no trial reports it and the backend does not declare it{_guess(metric, names)}; "
        "it has no effect"
        for metric in directions
        if metric not in names and metric not in skip
    ]


def _guess(metric: str, names: Iterable[str]) -> str:
    """`` (did you mean 'gflops'?)`` for a name close to one of ``names`` (a typo, or a name without
    its unit: latency -> latency_ms), else ''."""
    known = sorted(set(names) - set(NOT_RANKABLE))
    close = difflib.get_close_matches(metric, known, n=1, cutoff=0.6) or [
        name for name in known if name.startswith(metric + "_")][:1]
    return f" (did you mean {close[0]!r}?)" if close else ""
