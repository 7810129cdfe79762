"""Which metric goes on which chart axis, and how an axis is labelled (Qt-free, tested directly).

A chart that shows the same value for every point says nothing. The device footprint of a kernel
is mostly its input and output arrays, identical for every config; what configs differ in is the
on-chip storage they claim (shared memory and registers per block, per SM) and the workspace some
of them need. So the trade-off chart's y axis defaults to the memory-like metric with the largest
relative spread in the session, and the Explore chart's y to the rate (GB/s or GFLOP/s) that gets
closest to the device's roof for this kernel.
"""

from __future__ import annotations

from typing import Any

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
    mean = float(np.mean(np.abs(values)))
    return float(np.std(values)) / mean if mean > 0 else 0.0


def has_data(model: Any, name: str) -> bool:
    """True when some successful trial reports ``name``."""
    if model.n == 0:
        return False
    return bool(np.isfinite(model.metric(name)[~model.failed_mask()]).any())


def tradeoff_metrics(model: Any) -> list[str]:
    """What the trade-off chart offers against latency: the memory-like metrics the trials report;
    without any (a Kernel Tuner recording has none), every other metric they report whose direction
    is known (GFLOP/s, GB/s, energy ...) and is no other reading of the latency (Kernel Tuner's
    time), so the chart still shows a trade-off instead of nothing or latency against itself."""
    memory = [name for name in MEMORY_METRICS if has_data(model, name)]
    partner = pareto_partner(model)
    if partner is not None and partner not in memory:
        memory.append(partner)
    if memory or model.n == 0:
        return memory
    directions = getattr(getattr(model, "weights", None), "directions", None)
    return [name for name in model.metric_names() if not name.startswith(("slot:", "latency"))
            and name not in OTHER_LATENCY_READINGS
            and known_direction(name, directions) is not None and has_data(model, name)]


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


def default_tradeoff_metric(model: Any, offered: list[str]) -> str | None:
    """Of ``offered`` (:func:`tradeoff_metrics`), the run's other objective (:func:`pareto_partner`)
    when it is one, else the metric whose values differ most between successful trials (None:
    nothing offered)."""
    if not offered:
        return None
    partner = pareto_partner(model)
    if partner in offered:
        return partner
    ok = ~model.failed_mask()
    spreads = [relative_spread(model.metric(name)[ok]) for name in offered]
    return offered[int(np.argmax(spreads))]  # ties: the first offered (device memory)


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


def category_ticks(model: Any, name: str) -> list[tuple[float, str]] | None:
    """Tick positions and value names of a slot that is plotted by position (text or bool values).

    Numeric slots are plotted at their values and return None; so do metrics.
    """
    if not name.startswith("slot:") or model.session is None:
        return None
    slot = next((s for s in model.session.space.slots if s.name == name[5:]), None)
    if slot is None or slot.ordered:
        return None
    return [(float(i), str(value)) for i, value in enumerate(slot.values)]


def can_log(values: np.ndarray, categorical: bool) -> bool:
    """A log axis only for numeric values that are all positive (and at least one reported)."""
    if categorical:
        return False
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    return bool(values.size) and bool((values > 0).all())

