"""How numbers, metrics and trials are written in the window (one place, so every view agrees)."""

from __future__ import annotations

import html
import math
from typing import Any

from PySide6.QtGui import Qt

from workbench.core.domain.figures import fmt
from workbench.core.errors import WorkbenchError, Wording
from workbench.core.io.export import SUFFIXES

#: Text that warns (a refused entry, a failed trial's row): an orange with 5.5:1 contrast on white
#: (WCAG AA asks 4.5). The charts' orange (#d55e00), used for text too, had 3.9:1.
WARNING_TEXT = "#b34700"
#: Text of rows that are there but out of the running (infeasible trials): 5.1:1 on white.
MUTED_TEXT = "#6e6e6e"

METRIC_LABELS: dict[str, str] = {
    "latency_ms": "latency (ms)",
    "latency_p20_ms": "latency p20 (ms)",
    "latency_p80_ms": "latency p80 (ms)",
    "kt_time_ms": "Kernel Tuner time (ms)",
    "memory_mb": "memory (MB)",
    "quality": "quality",
    "throughput_gbs": "throughput (GB/s)",
    "throughput": "throughput",
    "gflops": "GFLOP/s",
    "pct_of_peak": "% of peak",
    "registers": "registers / thread",
    "smem_bytes": "shared memory (B)",
    "spill_bytes": "spills (B)",
    "occupancy": "occupancy",
    # (binary kilobytes, as a GPU's shared memory and register file are counted: 48 KiB = 49,152 B;
    # device memory is in decimal MB, as memory_mb is computed)
    "onchip_kb_per_sm": "on-chip per SM (KiB)",
    "onchip_kb_per_block": "on-chip per block (KiB)",
    "threads_per_block": "threads / block",
    "power_w": "power (W)",
    "latency_bound_ms": "aborted above (ms)",
    "compile_s": "compile time (s)",
}


def plain_tip(text: str) -> str:
    """``text`` as a tool tip that shows it as written. Qt renders a tip that looks like markup as
    rich text, so a name from a file (``<img src=...>``, ``<font size=7>``) would draw instead:
    such text is escaped (its line breaks kept), by the very test Qt applies; any other text is
    left as it is, which Qt shows as written. Every tip whose text comes from a file, a person or a
    compiler goes through it."""
    if not Qt.mightBeRichText(text):
        return text
    return "<p>" + html.escape(text).replace("\n", "<br>") + "</p>"


#: How the window re-measures candidates stopped early under the latency limit, for the texts that
#: say so (the command line's ``tune --remeasure-aborted`` means nothing on a window's chart).
REMEASURE_HERE = "the Re-measure aborted button under the constraints"


def remeasure_way(session: Any) -> str | None:
    """How the window re-measures ``session``'s aborted candidates (:data:`REMEASURE_HERE`), or
    None for a replay, whose recording holds only where each stopped: the button refuses it, and
    the notes then say to re-measure them in the session that recorded them."""
    backend = getattr(session, "backend", None)
    return None if isinstance(backend, dict) and backend.get("kind") == "replay" else REMEASURE_HERE


#: Most decimals a limit is written with (a latency limit of 1e-9 ms has 9).
LIMIT_DECIMALS = 10


def dragged_limit(value: float, step: float) -> float:
    """The limit a drag sets: its point rounded to the decimal place of ``step``, the resolution of
    what was dragged there (one step of a slider, one pixel of a chart's limit line).

    Why: a drag lands on a point of a scale (8.73367621144256 ms), which the limit's box and the
    line's label showed rounded, and the number shown, typed into the box or given to ``show``,
    kept another set of trials than the window did. Rounded to the scale's own resolution, the
    limit is a short number that is exactly the one shown, and every step still sets its own
    limit: a fixed count of figures made a slider over qualities of 0.99986 to 0.99987 one limit
    that kept no trial at any position."""
    if not (step > 0 and math.isfinite(step) and math.isfinite(value)):
        return value
    return round(value, min(LIMIT_DECIMALS, -math.floor(math.log10(step))))  # (as many as the box shows)


def limit_text(value: float) -> str:
    """A limit as the window writes it, in its box and on a chart's limit line: every decimal it
    has (up to :data:`LIMIT_DECIMALS`), no trailing zeros, so the figure read off the chart is the
    one in force."""
    text = f"{value:.{LIMIT_DECIMALS}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def limit_decimals(value: float | None) -> int:
    """How many decimals :func:`limit_text` writes ``value`` with (0 for None)."""
    if value is None or not math.isfinite(value):
        return 0
    return len(limit_text(value).partition(".")[2])


def metric_label(name: str) -> str:
    if name.startswith("slot:"):
        return f"{name[5:]} (slot)"
    return METRIC_LABELS.get(name, name)


def score_text(value: Any) -> str:
    """A score (0 to 1) in a column: three decimals always (``0.970``, ``1.000``), so the best
    trial's 1 does not stand out as another kind of number beside ``0.973``."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return fmt(value)
    return f"{number:.3f}" if math.isfinite(number) else "-"


def time_unit(ms: float) -> tuple[float, str]:
    """(milliseconds per unit, unit) that keeps ``ms`` a plain number: the one unit of a chart
    whose largest time is ``ms``, so that its figures are read in one unit (``65.5 µs`` beside
    ``0 ms`` and ``3 µs`` read as three kinds of number)."""
    if not math.isfinite(ms) or ms == 0 or abs(ms) >= 0.9995:
        return 1.0, "ms"
    return (1e-3, "µs") if abs(ms) >= 0.9995e-3 else (1e-6, "ns")


def config_text(config: Any) -> str:
    """``block=64, fast=True``: a config (or any mapping of names to values) in one line."""
    return ", ".join(f"{k}={v}" for k, v in config.items())


def describe_trial(model: Any, index: int, plotted: tuple[str, ...] = ()) -> str:
    """The hover text of a point: the config, status, key metrics, feasibility and score, and the
    ``plotted`` metrics (the chart's axes), so the figures a point is drawn at are among them."""
    trial = model.trials[index]
    lines = [f"trial {trial.index}  [{trial.config.id}]  {trial.status.value}", config_text(trial.config)]
    if trial.ok:
        metrics = trial.measurement.metrics
        usual = ("latency_ms", "memory_mb", "throughput_gbs", "gflops", "quality", "occupancy")
        shown = [k for k in dict.fromkeys((*usual, *plotted)) if k in metrics]
        lines.append("  ".join(f"{metric_label(k)} {fmt(metrics[k])}" for k in shown))
        ranking = model.ranking
        if ranking is not None:
            feasible = bool(ranking.feasible[index])
            lines.append(f"{'feasible' if feasible else 'infeasible'}, score {fmt(float(ranking.score[index]), 3)}")
    else:
        lines.append(trial.measurement.message)
    return "\n".join(lines)


#: The window's export of each ``--format``: the suffix of the file File > Export best config
#: writes it to (the suffix picks the format there).
EXPORT_SUFFIXES = SUFFIXES


def _export_wording(value: str) -> str:
    suffix = EXPORT_SUFFIXES.get(value)
    if suffix is None:  # a format the window does not export: the command line's name is the only one
        return f"--format {value}" if value else "--format"
    return f"a {suffix} export"


#: The backend box's choices: the backend's name on the command line, and its label here.
BACKENDS = (("auto", "auto (GPU if present)"), ("cuda", "CUDA device"), ("sim", "simulated GPU"),
            ("replay", "replay a recording"), ("python", "python benchmark"))


def _backend_wording(value: str) -> str:
    label = dict(BACKENDS).get(value)
    return f"{label} in the backend box" if label else "the backend box"


#: The window's names for the settings a message may name (see ``workbench.core.errors``): the
#: control a person changes here, where the command line names a flag.
WINDOW_SETTINGS: dict[str, Wording] = {
    "budget": lambda value: "the evals box",
    "sizes": lambda value: f"the sizes field's {value}" if value else "the sizes field",
    "problem": lambda value: f"{value} in the problem field" if value else "the problem field",
    "format": _export_wording,
    "replay": lambda value: "the recording field",
    "at": lambda value: f"{value} in the at-size field" if value else "the at-size field",
    "replay_new": lambda value: "File > New session, then Start with the recording",
    "import_kt": lambda value: "File > Import Kernel Tuner cache...",
    "import_cache": lambda value: "import it with File > Import Kernel Tuner cache...",
    "new_session": lambda value: "a new one with File > New session",
    "backend": _backend_wording,
    "kernel_dir": lambda value: f"File > Open kernel folder... on {value}" if value else "File > Open kernel folder...",
    "objectives": lambda value: "File > New session" if value == "none" else "the objectives",
    "strategy": lambda value: f"{value} in the strategy box" if value else "the strategy box",
    "benchmark_code": lambda value: "the window asks before running its code: answer yes to run it",
    # the window has no control for these: a continued session's come from its file's run settings
    "workers": lambda value: "the session's worker count (run.workers in its file)",
    "devices": lambda value: "the session's devices (run.devices in its file)",
    "allow_mixed_gpus": lambda value: "run.allow_mixed_gpus in the session's file",
    "executor": lambda value: (f"run.executor = {value} in the session's file" if value
                               else "run.executor in the session's file"),
    "ray_address": lambda value: "the session's Ray address (run.ray_address in its file)",
}


def window_message(exc: BaseException) -> str:
    """An error's message as the window says it: the settings it names called by their controls."""
    return exc.worded(WINDOW_SETTINGS) if isinstance(exc, WorkbenchError) else str(exc)
