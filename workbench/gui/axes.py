"""Which metric goes on which chart axis, and how an axis is labelled (Qt-free, tested directly).

A chart that shows the same value for every point says nothing. The device footprint of a kernel
is mostly its input and output arrays, identical for every config; what configs differ in is the
on-chip storage they claim (shared memory and registers per block, per SM) and the workspace some
of them need. So the trade-off chart's y axis defaults to the memory-like metric with the largest
relative spread in the session, and the Explore chart's y to the rate (GB/s or GFLOP/s) that gets
closest to the device's roof for this kernel.
"""

from __future__ import annotations

import itertools
import math
import re
from typing import Any, Callable, Sequence

import numpy as np

from workbench.core.domain.metrics import OTHER_LATENCY_READINGS, known_direction

#: Metrics that say how much memory a config claims, in the order offered.
#: Register spills are traffic, not a footprint, so they are left out.
MEMORY_METRICS: tuple[str, ...] = ("memory_mb", "onchip_kb_per_sm", "onchip_kb_per_block", "smem_bytes")


def relative_spread(values: np.ndarray) -> float:
    """Coefficient of variation of the finite values (0 for fewer than two, or a zero mean)."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if values.size < 2:
        return 0.0
    scale = float(np.max(np.abs(values)))
    values = values / scale if scale > 0 else values  # a ratio: the same unscaled, without overflow near 1e308
    mean = float(np.mean(np.abs(values)))
    return float(np.std(values)) / mean if mean > 0 else 0.0


def has_data(model: Any, name: str) -> bool:
    """True when some successful or aborted trial reports ``name`` (an aborted trial is no failure:
    its compile's figures and the bound its timing stopped above are measured)."""
    if model.n == 0:
        return False
    return bool(np.isfinite(model.metric(name)[model.measured_mask()]).any())


def tradeoff_metrics(model: Any) -> list[str]:
    """What the trade-off chart offers against latency: the memory-like metrics the trials report;
    without any (a Kernel Tuner recording has none), every other metric they report whose direction
    is known (GFLOP/s, GB/s, energy ...) and is no other reading of the latency (Kernel Tuner's
    time), so the chart still shows a trade-off instead of nothing or latency against itself."""
    memory = [name for name in MEMORY_METRICS if has_data(model, name)]
    partner = pareto_partner(model)
    if partner is not None and partner not in memory:
        memory.append(partner)
    if not memory and model.n:
        directions = getattr(getattr(model, "weights", None), "directions", None)
        memory = [name for name in model.metric_names() if not name.startswith(("slot:", "latency"))
                  and name not in OTHER_LATENCY_READINGS
                  and known_direction(name, directions) is not None and has_data(model, name)]
    # a front of other metrics than latency and one more: each of them can be put on the axis
    return memory + [name for name in session_objectives(model)
                     if name != "latency_ms" and name not in memory and has_data(model, name)]


def session_objectives(model: Any) -> list[str]:
    """The metrics a session searched the Pareto front of (``tune --objectives``); empty for a
    session that searched one score."""
    strategy = getattr(getattr(model, "session", None), "strategy", None)
    objectives = strategy.get("objectives") if isinstance(strategy, dict) else None
    return [str(m) for m in objectives] if isinstance(objectives, list) else []


def pareto_partner(model: Any) -> str | None:
    """The other objective of a session searched for the front of latency and one more metric
    (``tune --objectives latency_ms,memory_mb``), when some trial reports it: the trade-off chart
    then plots against it, so the front it draws is the run's own. None for any other session."""
    strategy = getattr(getattr(model, "session", None), "strategy", None)
    objectives = strategy.get("objectives") if isinstance(strategy, dict) else None
    if not isinstance(objectives, list) or len(objectives) != 2 or "latency_ms" not in objectives:
        return None
    other = str(objectives[1] if objectives[0] == "latency_ms" else objectives[0])
    return other if has_data(model, other) else None


#: How many times more a metric must differ between configs than one before it in the chooser's
#: order to be the default instead (see :func:`default_tradeoff_metric`).
SWITCH_FACTOR = 2.0


def default_tradeoff_metric(model: Any, offered: list[str], upto: int | None = None) -> str | None:
    """Of ``offered`` (:func:`tradeoff_metrics`), the run's other objective (:func:`pareto_partner`)
    when it is one, else the offered metric the score weighs most (the recommendation is the best
    trade-off of latency and it: drawn against another, its star sat inside the front), else the
    first, in the chooser's order, of the metrics whose values differ between successful trials
    within :data:`SWITCH_FACTOR` of the most (None: nothing offered).

    A function of the trials alone, not of what was shown before: a session reopened, or
    replayed, gets the axis the run ended with (remembering the axis on show made a run end on
    on-chip storage and the same trials reopen on shared memory, a prepared demonstration that
    looked different when shown). Near-ties do not flip the axis as a run's spreads drift, since
    among metrics that differ alike the order decides; only a metric that comes to differ twice
    as much takes over.
    """
    if not offered:
        return None
    partner = pareto_partner(model)
    if partner in offered:
        return partner
    weights = getattr(model, "weights", None)
    ok = ~model.failed_mask()[:upto]  # ``upto``: the first trials only (the chart's cadence on big sessions)
    # (a weighted figure every config shares ranks nothing, and would draw every point on one line)
    weighted = sorted((weight, name) for name, weight in (weights.active().items() if weights is not None else ())
                      if name in offered and name != "latency_ms" and relative_spread(model.metric(name)[:upto][ok]) > 0)
    if weighted:
        return weighted[-1][1]
    # a rate of fixed work (GFLOP/s of one problem) is the latency read again: every point on one
    # hyperbola, no trade-off to show. What a config costs when it runs comes before what it cost
    # to build: a recording's compile time drew a "Pareto front" of compile seconds against
    # latency, a trade-off nobody makes at run time; it still beats a hyperbola (the chooser offers all)
    readings = [model.metric(name)[:upto][ok] for name in ("latency_ms", *OTHER_LATENCY_READINGS)]
    own = [name for name in offered
           if not any(_reads_the_latency(model.metric(name)[:upto][ok], reading) for reading in readings)]
    running = [name for name in own if "compile" not in name] or own or offered
    # (a spread that does not compute, values near the float maximum in a hostile file, is none)
    spreads = [spread if math.isfinite(spread) else 0.0
               for spread in (relative_spread(model.metric(name)[:upto][ok]) for name in running)]
    top = max(spreads)
    return next((name for name, spread in zip(running, spreads) if spread * SWITCH_FACTOR >= top), running[0])


def _reads_the_latency(values: np.ndarray, latency: np.ndarray) -> bool:
    """Whether ``values`` are the latency in other units: their product with it (a rate of fixed
    work) or their ratio to it (a time) the same for every trial, within rounding."""
    both = np.isfinite(values) & np.isfinite(latency) & (latency > 0) & (values > 0)
    if np.count_nonzero(both) < 3:
        return False
    with np.errstate(all="ignore"):
        return any(relative_spread(combined) < 1e-3 for combined in (values[both] * latency[both],
                                                                      values[both] / latency[both]))


def default_rate_metric(model: Any) -> str:
    """GB/s or GFLOP/s, whichever the best trial drives closer to the device's peak of that rate.

    A matrix multiply is judged by GFLOP/s and a reduction by GB/s; the session's own numbers
    against its device's peaks say which applies, without a list of kernel names.
    """
    if model.n == 0:
        return "throughput_gbs"
    device = getattr(model.session, "device", None) or {}
    ok = ~model.failed_mask()
    best: dict[str, float] = {}
    for name, peak_key in (("throughput_gbs", "peak_bandwidth_gbs"), ("gflops", "peak_fp32_gflops")):
        values = model.metric(name)[ok]
        values = values[np.isfinite(values)]
        peak = float(device.get(peak_key) or 0.0)
        if values.size and values.max() > 0:
            best[name] = float(values.max()) / peak if peak > 0 else 0.0
    if not best:
        return "latency_ms"
    if all(v == 0.0 for v in best.values()):
        return "throughput_gbs" if "throughput_gbs" in best else "gflops"
    return max(best, key=lambda name: best[name])


def _slot_of(model: Any, name: str) -> Any:
    """The slot an axis name (``slot:NAME``) stands for; None for a metric or an unknown slot."""
    if not name.startswith("slot:") or model.session is None or model.session.space is None:
        return None
    return next((s for s in model.session.space.slots if s.name == name[5:]), None)


def category_ticks(model: Any, name: str) -> list[tuple[float, str]] | None:
    """Tick positions and value names of a slot that is plotted by position (text or bool values).

    Numeric slots are plotted at their values and return None; so do metrics.
    """
    slot = _slot_of(model, name)
    if slot is None or slot.ordered:
        return None
    return [(float(i), str(value)) for i, value in enumerate(slot.values)]


#: A numeric slot of at most this many values is labelled at its values; one of more reads as a
#: continuous quantity, with ordinary ticks.
MAX_VALUE_TICKS = 64
#: More values than this are labelled at themselves only when they are about evenly spaced on the
#: axis (the widest gap at most :data:`UNEVEN_GAPS` times the narrowest): the axis thins labels by
#: a fixed step, which on 1, 2, 4, ..., 4096 along a linear axis labelled 2, 32 and 512 and left
#: the right seven eighths, where 1024 to 4096 lie, bare. Fewer values are labelled whatever
#: their spacing (32, 64, 128, 256).
FEW_VALUES = 6
UNEVEN_GAPS = 3.0


def _evenly_spaced(positions: Sequence[float] | np.ndarray) -> bool:
    """Whether the gaps between sorted ``positions`` differ by at most :data:`UNEVEN_GAPS` times."""
    gaps = np.diff(positions)
    return bool(gaps.max() <= UNEVEN_GAPS * gaps.min())


def value_ticks(model: Any, name: str, log: bool) -> list[tuple[float, str]] | None:
    """Tick positions and labels at the values of a numeric slot, in the axis's coordinates (log10
    on a log axis): block sizes 32, 64, ..., 1024 are labelled as themselves, where ordinary ticks
    said 0, 200, 400, ... and left the reader to guess which sizes were tried. The axis thins
    them to what fits. None (ordinary ticks) for metrics, text slots (:func:`category_ticks`),
    slots of more than :data:`MAX_VALUE_TICKS` values or of many unevenly spaced ones, and a log
    axis over a value that is not positive."""
    slot = _slot_of(model, name)
    if slot is None or not slot.ordered or len(slot.values) > MAX_VALUE_TICKS:
        return None
    values = sorted(set(slot.values))
    if log and values[0] <= 0:
        return None
    positions = [math.log10(v) if log else float(v) for v in values]
    if len(values) > FEW_VALUES and not _evenly_spaced(positions):
        return None
    return list(zip(positions, format_ticks(values)))


def geometric_slot(model: Any, name: str) -> bool:
    """Whether ``name`` is a numeric slot whose values grow by a factor rather than a step (32, 64,
    ..., 1024): positive, spanning 16x or more, and about evenly spaced only on a log axis. On a
    linear axis such values crowd into its first few pixels; the Explore chart starts it in log."""
    slot = _slot_of(model, name)
    if slot is None or not slot.ordered:
        return False
    values = sorted(set(float(v) for v in slot.values))
    if len(values) < 3 or values[0] <= 0 or values[-1] < 16 * values[0]:
        return False
    return _evenly_spaced(np.log10(values)) and not _evenly_spaced(values)


def can_log(values: np.ndarray, categorical: bool) -> bool:
    """A log axis only for numeric values that are all positive (and at least one reported)."""
    if categorical:
        return False
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    return bool(values.size) and bool((values > 0).all())



# --- tick labels that fit their axis (Qt-free: the caller measures text) ------------------------
#
# A label is worth drawing only where it can be read: not on top of its neighbour, not cut at the
# axis's end. The functions below choose which ticks to label from pixel positions and a ``measure``
# callable (the text's extent along the axis: its width on a horizontal axis, the line height on a
# vertical one), so the same rule serves every font size, zoom and axis length.

Measure = Callable[[str], float]
LABEL_SHARE = 0.5  # a numeric axis's labels take at most this share of its length (more is a wall of numbers)
EDGE = 2.0  # px kept free at each end of an axis: pyqtgraph measures a label a little wider than we do


def inside(position: float, extent: float, length: float, overhang: float = 0.0) -> bool:
    """True when a label of ``extent`` centred at ``position`` stays on an axis of ``length``, or
    sticks out by at most ``overhang`` (pyqtgraph leaves out a label that sticks out further)."""
    return position - extent / 2 >= EDGE - overhang and position + extent / 2 <= length + overhang - EDGE


def fits(positions: Sequence[float], extents: Sequence[float], length: float, gap: float,
         overhang: float = 0.0) -> bool:
    """True when labels of ``extents`` centred at ``positions`` (pixels along an axis of
    ``length``) keep ``gap`` between neighbours and stay inside the axis."""
    pairs = sorted(zip(positions, extents))
    for (p, e), (q, f) in zip(pairs, pairs[1:]):
        if q - p < (e + f) / 2 + gap:
            return False
    return all(inside(p, e, length, overhang) for p, e in pairs)


def format_ticks(values: Sequence[float]) -> list[str]:
    """Plain numbers with the fewest significant digits that tell every value apart and say it
    exactly (0.05, 0.055, 0.06; never 5e-2 next to 5e-2)."""
    def whole(v: float) -> int:  # digits before the point, so that 10 reads 10, not 1e+01 (up to 999999)
        return min(math.floor(math.log10(abs(v))) + 1, 6) if abs(v) >= 1 else 1

    for digits in range(1, 10):
        texts = [f"{v:.{max(digits, whole(v))}g}" for v in values]
        exact = all(math.isclose(float(t), v, rel_tol=1e-9, abs_tol=1e-300) for t, v in zip(texts, values))
        if exact and len(set(texts)) == len(texts):
            return texts
    return [f"{v:.10g}" for v in values]


def log_tick_sets(low: float, high: float) -> list[list[float]]:
    """Candidate labelled values of a log axis from ``low`` to ``high`` (positive), nicest first:
    every decade (or every second, third... when there are many), 1-2-5 in each decade, 1 to 9 in
    each decade, and, when the range is less than a decade, evenly spaced round values (0.05,
    0.06, 0.07), which a log axis otherwise has none of."""
    if not (math.isfinite(low) and math.isfinite(high) and 0 < low < high):
        return []
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))

    def within(values: Sequence[float]) -> list[float]:
        return [v for v in values if low * (1 - 1e-9) <= v <= high * (1 + 1e-9)]

    sets: list[list[float]] = []
    for every in (10, 5, 3, 2, 1):
        decades = within([10.0 ** k for k in range(first, last + 1) if k % every == 0])
        if decades and decades not in sets:
            sets.append(decades)
    for mantissas in ((1, 2, 5), tuple(range(1, 10))):
        values = within([float(f"{m}e{k}") for k in range(first, last + 1) for m in mantissas])
        if values and values not in sets:
            sets.append(values)
    if high / low < 10:
        top = math.floor(math.log10(high - low))
        for exponent in range(top, top - 3, -1):
            for m in (5, 2, 1):
                step = m * 10.0 ** exponent
                first_k, last_k = math.ceil(low / step - 1e-9), math.floor(high / step + 1e-9)
                if last_k - first_k + 1 > 40:  # more than any axis labels
                    continue
                values = within([float(f"{k * m}e{exponent}") for k in range(first_k, last_k + 1)])
                if 2 <= len(values) <= 40 and values not in sets:
                    sets.append(values)
    return sets


def choose_log_ticks(low_log: float, high_log: float, length: float, measure: Measure,
                     gap: float) -> tuple[list[float], list[float]]:
    """The values to label and the unlabelled (grid) values of a log axis showing
    ``10**low_log .. 10**high_log`` over ``length`` pixels: of :func:`log_tick_sets`, the one with
    the most labels that fit and take at most ``LABEL_SHARE`` of the axis (the nicer one on a
    tie), or, when none has two that fit, of every
    second or third value of each; then the finest set at least 6 px apart as minor ticks."""
    if not (math.isfinite(low_log) and math.isfinite(high_log)) or high_log <= low_log or length <= 0:
        return [], []
    scale = length / (high_log - low_log)

    def pixels(values: Sequence[float]) -> list[float]:
        return [(math.log10(v) - low_log) * scale for v in values]

    best: list[float] = []
    candidates = log_tick_sets(10.0 ** low_log, 10.0 ** high_log)
    narrowest = min(measure("1"), measure("0"))
    for step, offset in ((1, 0), (2, 0), (2, 1), (3, 0), (3, 1), (3, 2)):  # every one, every second...
        if step > 1 and len(best) >= 2:  # a whole set reads better than every second value of one
            break
        for candidate in candidates:
            values = candidate[offset::step]
            if len(values) <= len(best):
                continue
            spots = pixels(values)
            inner = spots[1:-1]  # an end's label may be dropped for sticking out; the others must fit
            if any(b - a < gap + narrowest for a, b in zip(inner, inner[1:])):
                continue  # too close for any label: not worth formatting and measuring
            extents = [measure(t) for t in format_ticks(values)]
            keep = [k for k, (p, e) in enumerate(zip(spots, extents)) if inside(p, e, length)]  # the rest: unlabelled
            sparse = len(keep) <= 2 or sum(extents[k] for k in keep) <= LABEL_SHARE * length
            if len(keep) > len(best) and sparse and fits([spots[k] for k in keep], [extents[k] for k in keep],
                                                         length, gap):
                best = [values[k] for k in keep]
    best = _with_edge_labels(best, pixels, measure, length, gap)
    minor: list[float] = []
    for values in candidates:
        spots = sorted(pixels(values))
        if len(values) > len(minor) and all(b - a >= 6 for a, b in zip(spots, spots[1:])):
            minor = values
    labelled = set(best)
    return best, [v for v in minor if v not in labelled]


def _with_edge_labels(best: list[float], pixels: Callable[[Sequence[float]], list[float]], measure: Measure,
                      length: float, gap: float) -> list[float]:
    """Evenly spaced labels ``best`` with one more label at either end where one fits on the axis:
    a one-digit value (3 below 5, 10, 15; the one nearest the axis's end), else half a step (3.5
    below 4, 5 ... 9; 0.053 below 0.054, 0.056). Sets that are not evenly spaced (decades, 1-2-5)
    get a one-digit value below their lowest label only (0.2 below 0.5, 1, 2).

    Why: a set is chosen for its spacing, and a log axis from 3.2 to 10 got 4, 5 ... 9, leaving its
    lowest points, often the best latencies, below the last label with nothing to read them by."""
    if len(best) < 2:
        return best
    steps = [b - a for a, b in zip(best, best[1:])]
    # A set that is not evenly spaced (decades, 1-2-5) gets a one-digit value at its low end only,
    # where the best latencies are (0.2 below 0.5, 1, 2 over points at 0.24 ms): half its step is no
    # round value, and 9,000 beside 1,000 at the top end reads as a misprint.
    even = all(math.isclose(step, steps[0], rel_tol=1e-6) for step in steps)
    half = steps[0] / 2
    digits = max(_significant_digits(v) for v in best)
    for low_end in (True, False) if even else (True,):
        end = best[0] if low_end else best[-1]
        # a one-digit value first (3 below 5, 10, 15), the one nearest the axis's end; else half a
        # step, when it has at most one digit more than the labels (3.5 beside 4, 5; not 1.25 beside 0.5, 1)
        digit = 10.0 ** math.floor(math.log10(end))
        ones = [float(f"{m * scale:.12g}") for scale in (digit / 10, digit) for m in range(1, 10)]
        beyond = sorted((v for v in ones if (v < end if low_end else v > end)), reverse=not low_end)
        step = float(f"{end - half if low_end else end + half:.12g}")  # 3.5, not 3.4999999999999996
        if even and step > 0 and _significant_digits(step) <= digits + 1:
            beyond.append(step)
        for value in beyond:
            if value <= 0 or value in best:
                continue
            trial = sorted([*best, value])
            extents = [measure(t) for t in format_ticks(trial)]
            if sum(extents) <= LABEL_SHARE * length and fits(pixels(trial), extents, length, gap):
                best = trial
                break
    return best


def _significant_digits(value: float) -> int:
    """The fewest significant digits that write ``value`` exactly (3.5: 2, 0.05: 1)."""
    for digits in range(1, 16):
        if math.isclose(float(f"{value:.{digits}g}"), value, rel_tol=1e-12):
            return digits
    return 16


def elide(text: str, width: float, measure: Measure, mark: str = "…") -> str:
    """``text`` cut at the end (with ``mark``) to fit ``width``; all of it when it fits, "" when
    not even its first character and the mark fit."""
    if measure(text) <= width:
        return text

    def cut(keep: int) -> str:
        return text[:keep].rstrip("_ ") + mark

    low, high = 0, len(text) - 1  # the longest prefix that fits, by halving (a prefix grows with its length)
    while low < high:
        middle = (low + high + 1) // 2
        if measure(cut(middle)) <= width:
            low = middle
        else:
            high = middle - 1
    return cut(low) if low > 0 else ""


def _apart_when_cut_alike(texts: list[str], labels: list[str], measure: Measure, mark: str = "…") -> list[str]:
    """``texts`` (``labels`` cut to their room) with those that read alike but stand for other
    labels cut in the middle instead, keeping the ends that tell them apart in as much width:
    ``block_size_x`` and ``block_size_y`` both read ``block_si…`` on an axis of a presentation."""
    out = list(texts)
    for k, text in enumerate(texts):
        alike = [j for j, other in enumerate(texts) if other == text and labels[j] != labels[k]]
        if not text.endswith(mark) or not alike:
            continue
        width = measure(text)
        tail = next((m for m in range(1, len(labels[k]) + 1)
                     if all(not labels[j].endswith(labels[k][-m:]) for j in alike)), len(labels[k]))
        head = len(text) - len(mark)
        while head > 1 and measure(labels[k][:head] + mark + labels[k][-tail:]) > width:
            head -= 1
        middle = labels[k][:head].rstrip("_ ") + mark + labels[k][-tail:]
        if measure(middle) <= width:  # (an ending too long to tell them apart in the room: as cut)
            out[k] = middle
    return out


def labelled_positions(counts: Sequence[int], step: int) -> set[int]:
    """Which of ``len(counts)`` evenly placed values keep their label when only every ``step``-th
    fits: those with a count (failures under the value, which the label carries) first, most
    first, then from the left each value at least ``step`` from every label kept (without counts,
    every ``step``-th from the first). Every ``step``-th alone dropped the one value that failed."""
    step = max(1, step)
    kept: list[int] = []
    counted = sorted((k for k, n in enumerate(counts) if n), key=lambda k: (-counts[k], k))
    for k in [*counted, *range(len(counts))]:
        if all(abs(k - other) >= step for other in kept):
            kept.append(k)
    return set(kept)


def title_lines(title: str, length: float, measure: Measure, most: int = 3) -> list[str]:
    """An axis title as one line when it fits the axis's ``length`` in pixels, else as few lines
    (at most ``most``) as fit, broken at spaces so that the longest line is shortest. A cut title
    loses its end, where the unit and a "(simulated)" stand; more lines keep it whole. A word
    longer than the axis (a metric named with underscores, ``bytes_moved_per_second_measured``)
    may also break after its underscores; a word that still does not fit is cut. Before the axis
    has a length (0) the title stays on one line."""
    if length <= 0 or measure(title) <= length:
        return [title]
    # (piece, what joins it to the piece before: a space, or nothing inside a word broken at "_")
    pieces: list[tuple[str, str]] = []
    for word in title.split(" "):
        parts = re.findall(r"[^_]*_+|[^_]+$", word) if measure(word) > length else [word]
        pieces += [(part, " " if i == 0 else "") for i, part in enumerate(parts or [word])]
    if len(pieces) < 2:
        return [title]

    def joined(run: Sequence[tuple[str, str]]) -> str:
        return "".join(glue + part if k else part for k, (part, glue) in enumerate(run))

    best: list[str] = [title]
    for count in range(2, min(most, len(pieces)) + 1):
        # every way of cutting the pieces into ``count`` runs; titles are a few words long
        candidates = [[joined(pieces[a:b]) for a, b in zip((0, *cuts), (*cuts, len(pieces)))]
                      for cuts in itertools.combinations(range(1, len(pieces)), count - 1)]
        # the longest line shortest; among equals, the earlier lines fuller (as text is read)
        best = min(candidates, key=lambda lines: (max(measure(line) for line in lines), [-measure(line) for line in lines]))
        if max(measure(line) for line in best) <= length:
            break
    return best


def fit_category_labels(positions: Sequence[float], labels: Sequence[str], length: float, measure: Measure,
                        gap: float, numeric: bool, min_chars: int = 4, rows: int = 1,
                        overhang: float = 0.0) -> list[tuple[str, int]]:
    """The text to draw under each of ``labels`` (centred at ``positions`` along an axis of
    ``length`` pixels, reaching at most ``overhang`` past its ends) and the row it goes on (0 ... ``rows`` - 1: with two rows, neighbouring
    labels take turns, so each has twice the room); "" where a label is left out.

    All labels in full when they fit. Otherwise numbers are thinned (every second, third...
    label: the ones shown still place the others), and words are shortened with an ellipsis to
    the room each has, thinned as well when fewer than ``min_chars`` characters of a word would
    remain. Whoever shows the axis keeps the full names for a tool tip."""
    n = len(labels)
    if n == 0:
        return []
    order = sorted(range(n), key=lambda i: positions[i])
    widths = [measure(t) for t in labels]

    def placed(shown: list[int], texts: Sequence[str]) -> list[tuple[str, int]]:
        out = [("", 0)] * n
        for k, (i, text) in enumerate(zip(shown, texts)):
            out[i] = (text, k % rows)
        return out

    def each_row_fits(shown: list[int]) -> bool:
        return all(fits([positions[i] for i in shown[r::rows]], [widths[i] for i in shown[r::rows]], length, gap,
                        overhang) for r in range(rows))

    if each_row_fits(order):
        return placed(order, [labels[i] for i in order])
    pitch = length / n  # about the room each label has; a step that leaves too little is not tried
    least = min([*widths, *(measure(t[:min_chars] + "…") for t in labels if len(t) > min_chars)])
    first_step = max(1, min(n, math.floor((least + gap) / max(pitch * rows, 1e-9))))
    for step, offset in ((step, offset) for step in range(first_step, n + 1) for offset in range(min(step, 3))):
        shown = order[offset::step]
        if numeric:
            shown = [i for i in shown if inside(positions[i], widths[i], length, overhang)]
            if shown and each_row_fits(shown):
                return placed(shown, [labels[i] for i in shown])
            continue
        texts = []
        for k, i in enumerate(shown):
            before = shown[k - rows] if k >= rows else None
            after = shown[k + rows] if k + rows < len(shown) else None
            # to a neighbour on the same line: the gap between them; to an end of the axis: none
            end = overhang - EDGE  # how far past an end of the axis a label may reach
            left = positions[i] - positions[before] if before is not None else 2 * (positions[i] + end) + gap
            right = positions[after] - positions[i] if after is not None else 2 * (length + end - positions[i]) + gap
            texts.append(elide(labels[i], min(left, right) - gap, measure))
        texts = _apart_when_cut_alike(texts, [labels[i] for i in shown], measure)
        readable = all(len(t) - 1 >= min(min_chars, len(labels[i])) or t == labels[i] for t, i in zip(texts, shown))
        if readable and all(texts):
            return placed(shown, texts)
    first = order[0]  # not even one label in a few characters: the first, cut to the axis
    return placed([first], [elide(labels[first], length, measure)])


def single_value_range(values: np.ndarray, ticks: Sequence[float] | None = None,
                       log: bool = False) -> tuple[float, float] | None:
    """A range for an axis whose points all sit at one value (``values`` in the axis's
    coordinates), or None when they spread or there are none (the automatic range serves).

    Why: pyqtgraph's automatic range around a single value is a hair's width, ticked in steps no
    reader needs ("7366.4, 7366.6, ..." GFLOP/s; "15.6, 15.8, ..." of a slot whose values are
    16 and 32), which is what a class sees a second after Start. The range reaches the
    neighbouring tick values where the axis has them (a slot's values, so at least two are
    labelled), else 10 % either side of the value (a tenth of a decade on a log axis, 1 around 0).
    """
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    if finite.size == 0 or finite.max() != finite.min():
        return None
    value = float(finite[0])
    positions = sorted(float(t) for t in ticks or ())
    below = [t for t in positions if t < value]
    above = [t for t in positions if t > value]
    if below or above:
        low = below[-1] if below else value - (above[0] - value)
        high = above[0] if above else value + (value - below[-1])
        margin = 0.15 * (high - low)
        return low - margin, high + margin
    step = 0.1 if log else (0.1 * abs(value) or 1.0)
    return value - step, value + step
