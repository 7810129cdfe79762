"""Why a config is as fast as it is, and where it sits under the GPU's roofs (Qt-free, tested directly).

For a simulated trial the performance model stored its named terms (memory, cache, compute,
shared memory, atomics, sync, launch; in ms, overlapping: the kernel takes the largest plus a share
of the rest), the bound, the occupancy and its limiter, and facts such as waves, coalescing and bank
conflicts. For a measured trial there is no model, only the measured figures; both get the same
ratios against the device's peaks, so the two can be read side by side.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from workbench.core.domain.measurement import Trial
from workbench.core.domain.records import device_info, provenance


@dataclass(frozen=True)
class Breakdown:
    """What the "why is this fast?" panel shows for one trial."""

    simulated: bool
    latency_ms: float
    time_terms: tuple[tuple[str, float, str], ...] = ()  # (name, ms, explanation), model terms only
    facts: tuple[str, ...] = ()  # one line each: bound, occupancy, peaks, waves, coalescing...
    bound: str = ""
    bandwidth_fraction: float = math.nan  # achieved GB/s over the device's peak
    flops_fraction: float = math.nan  # achieved GFLOP/s over the device's peak
    notes: tuple[str, ...] = field(default_factory=tuple)


#: The model's terms as the panel names them: its "shared memory" term is the whole L1/shared-memory
#: pipe, global loads through L1 included, and a config that uses no shared memory at all was said
#: to be "shared memory-bound" in front of a class.
SHOWN_TERMS = {"shared memory": "L1 / shared memory"}


def _shown(name: str) -> str:
    return SHOWN_TERMS.get(name, name)


def _fraction(value: float, peak: Any) -> float:
    peak = _peak(peak)
    return value / peak if math.isfinite(value) and math.isfinite(peak) else math.nan


def _peak(value: Any) -> float:
    """A recorded peak as a positive finite number, else NaN (missing, text, 0, negative)."""
    try:
        peak = float(value)
    except (TypeError, ValueError):
        return math.nan
    return peak if math.isfinite(peak) and peak > 0 else math.nan


def with_known_peaks(device: Mapping[str, Any]) -> tuple[Mapping[str, Any], str]:
    """``device`` with its peak bandwidth and FP32 rate, and where any it lacked come from. A
    recording (another tool's, or a replay of one) names its GPU but not its peaks: a GPU this
    workbench ships a description of, matched by its name with every memory size the name gives
    (an A100 80GB is no A100 40GB: its bandwidth differs by a quarter), lends the peaks the
    recording lacks, said in the note; a peak recorded is kept."""
    missing = [key for key in ("peak_bandwidth_gbs", "peak_fp32_gflops") if math.isnan(_peak(device.get(key)))]
    name = device.get("name")
    if not missing or not (device.get("recorded") or device.get("replayed")) or not isinstance(name, str):
        return device, ""
    from workbench.core.model.gpus import match_gpu

    try:
        found = match_gpu(name)
    except Exception:  # noqa: BLE001 - a description that does not load leaves the device without peaks
        return device, ""
    spec = found.spec
    sizes = re.findall(r"(\d+)\s*GB", name, re.IGNORECASE)
    if not found.exact or any(not re.search(rf"\b{size}\s*GB", spec.full_name, re.IGNORECASE) for size in sizes):
        return device, ""
    known = {"peak_bandwidth_gbs": spec.memory_bandwidth_gbs, "peak_fp32_gflops": spec.peak_flops / 1e9}
    words = {"peak_bandwidth_gbs": "peak bandwidth", "peak_fp32_gflops": "peak FP32 rate"}
    lent = " and ".join(words[key] for key in missing)
    return {**device, **{key: known[key] for key in missing}}, f"{lent} from the shipped description of the {spec.full_name}"


def breakdown(trial: Trial, device: Mapping[str, Any]) -> Breakdown:
    """The panel's content for ``trial`` on ``device`` (the session's device description)."""
    metrics = trial.measurement.metrics
    details = trial.measurement.details or {}
    latency = float(metrics.get("latency_ms", math.nan))
    bandwidth = _fraction(float(metrics.get("throughput_gbs", math.nan)), device.get("peak_bandwidth_gbs"))
    flops = _fraction(float(metrics.get("gflops", math.nan)), device.get("peak_fp32_gflops"))
    terms = [t for t in details.get("terms", ()) if isinstance(t, Mapping)]
    time_terms = tuple((_shown(str(t["name"])), float(t["value"]), str(t.get("explanation", "")))
                       for t in terms if t.get("unit") == "ms")
    simulated = bool(details.get("simulated")) or bool(time_terms)
    facts: list[str] = []
    bound = _shown(str(details.get("bound", "")))
    if bound:
        largest = time_terms[int(np.argmax([t[1] for t in time_terms]))][0] if time_terms else ""
        # ("memory-bound: spills is the largest term" read as if spills were what bound it; the
        # bound is the main loop's dominant pipe, and the largest term may be another cost)
        facts.append(f"{bound}-bound" + ("" if not largest else " (also the largest term)" if largest == bound
                                         else f"; the largest term is {largest}"))
    occupancy = details.get("occupancy") or (f"occupancy {metrics['occupancy']:.0%}" if "occupancy" in metrics else "")
    if occupancy:
        facts.append(str(occupancy))
    if math.isfinite(bandwidth):
        # a recording's GB/s is its own benchmark's count of bytes, not this workbench's; above
        # the peak (a recording's 532 of 448 GB/s) the figure is not all DRAM traffic, said so
        recorded = provenance(device_info(device)) in ("recorded", "replayed")
        counted = "the recording's figure" if recorded else "counting the bytes the operation must move"
        over = "" if bandwidth <= 1 else ("; above the peak, so it counts more than memory traffic" if recorded
                                          else "; above the peak: caches served part of those bytes")
        facts.append(f"{bandwidth:.0%} of the GPU's peak bandwidth ({metrics['throughput_gbs']:.0f} of "
                     f"{float(device['peak_bandwidth_gbs']):.0f} GB/s, {counted}{over})")
    if math.isfinite(flops) and metrics.get("gflops"):
        facts.append(f"{flops:.1%} of the GPU's peak FP32 rate ({metrics['gflops']:.0f} of "
                     f"{float(device['peak_fp32_gflops']):.0f} GFLOP/s)")
    facts += [f"{t['name']}: {t.get('explanation', '')}" for t in terms
              if t.get("unit") != "ms" and not (t.get("name") == "occupancy" and details.get("occupancy"))]
    if not simulated:
        source = provenance(device_info(device))
        # A recording without repetitions has one figure, Kernel Tuner's own: no median to name. A
        # recording read before its latency became the median (no Kernel Tuner time kept beside
        # it) holds Kernel Tuner's time as its latency, repetitions or not.
        if device.get("recorded") and "kt_time_ms" not in metrics:
            latency_name = "latency (ms, Kernel Tuner's time)"
        elif "latency_p20_ms" in metrics or "kt_time_ms" not in metrics:
            latency_name = "median latency (ms)"
        else:
            latency_name = "latency (ms)"
        measured = [f"{name} {metrics[key]:.4g}" for key, name in
                    (("latency_ms", latency_name), ("latency_p20_ms", "p20"),
                     ("latency_p80_ms", "p80"), ("kt_time_ms", "Kernel Tuner time (ms)"))
                    if key in metrics]
        if measured:
            said = {"replayed": "recorded (replayed)", "recorded": "recorded"}.get(source, "measured")
            facts.insert(0, f"{said}: " + ", ".join(measured))
    return Breakdown(simulated=simulated, latency_ms=latency, time_terms=time_terms, facts=tuple(facts), bound=bound,
                     bandwidth_fraction=bandwidth, flops_fraction=flops, notes=tuple(details.get("notes", ()) or ()))


@dataclass(frozen=True)
class Roofline:
    """Trials as (arithmetic intensity, achieved GFLOP/s) under the device's two roofs."""

    intensity: np.ndarray  # FLOP per DRAM byte, NaN where unknown
    gflops: np.ndarray  # achieved GFLOP/s, NaN where unknown
    peak_gflops: float
    peak_gbs: float
    per_config: bool  # True: each config's own traffic and work; False: the operation's minimum for all
    reason: str = ""  # why nothing can be drawn, when nothing can
    peaks_note: str = ""  # where the roofs come from when the session does not record them

    @property
    def ridge(self) -> float:
        """The intensity where the bandwidth roof meets the compute roof (FLOP/B)."""
        return self.peak_gflops / self.peak_gbs if self.peak_gbs > 0 else math.nan

    def roof(self, intensity: np.ndarray) -> np.ndarray:
        return np.minimum(self.peak_gflops, np.asarray(intensity, dtype=float) * self.peak_gbs)


def roofline(model: Any) -> Roofline:
    """Per trial: intensity from the config's own DRAM traffic and work when the simulator recorded
    them (``dram_mb``, ``work_gflop``), else from the operation's minimum bytes and flops
    (``gflops / throughput_gbs``, the same for every config, as a measured run knows no better)."""
    device = (getattr(model.session, "device", None) or {}) if model.session is not None else {}
    device, peaks_note = with_known_peaks(device)
    peak_gflops = float(np.nan_to_num(_peak(device.get("peak_fp32_gflops"))))  # (missing or unusable: 0, no roof)
    peak_gbs = float(np.nan_to_num(_peak(device.get("peak_bandwidth_gbs"))))
    n = model.n
    latency_s = model.metric("latency_ms") / 1e3
    ok = ~model.failed_mask() if n else np.zeros(0, dtype=bool)
    work, traffic = model.metric("work_gflop"), model.metric("dram_mb")
    per_config = bool(np.isfinite(work[ok]).any() and np.isfinite(traffic[ok]).any()) if n else False
    with np.errstate(divide="ignore", invalid="ignore"):
        if per_config:
            intensity = work * 1e9 / (traffic * 1e6)
            gflops = work / latency_s
        else:
            gflops = model.metric("gflops").copy()
            intensity = gflops / model.metric("throughput_gbs")
    rated = bool((ok & np.isfinite(gflops) & (gflops > 0)).any()) if n else False
    usable = ok & np.isfinite(intensity) & np.isfinite(gflops) & (intensity > 0) & (gflops > 0)
    intensity = np.where(usable, intensity, np.nan)
    gflops = np.where(usable, gflops, np.nan)
    reason = ""
    if peak_gflops <= 0 or peak_gbs <= 0:
        reason = "the session does not record the device's peak bandwidth and FLOP/s"
    elif n == 0:
        reason = "no trials yet"
    elif not usable.any() and rated:
        reason = ("the trials report GFLOP/s but not the bytes they move (GB/s), so their arithmetic intensity "
                  "is not known")
    elif not usable.any() and not bool((ok & np.isfinite(model.metric("throughput_gbs"))).any()):
        # (a recording that holds neither: its kernel's work is not known, not "no FLOPs")
        reason = "the trials report neither GFLOP/s nor GB/s, so where they sit on a roofline is not known"
    elif not usable.any():
        reason = "no trial reports floating-point work (a kernel without FLOPs sits on no roofline: see GB/s)"
    return Roofline(intensity, gflops, peak_gflops, peak_gbs, per_config, reason, peaks_note)
