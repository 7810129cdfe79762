"""How close is the simulator to real GPUs? Compare the model with real measurements, config by config.

Sources of truth:

1. the Kernel Tuner landscape ``convolution_A100.json`` (4,362 configs of the conv2d benchmark measured
   on an A100 PCIe 40GB; read in place from ``../shared/landscapes``, never copied), held against the
   ``conv2d`` template on the ``A100_PCIE`` model;
2. every session recorded on a real GPU under ``resources/sessions/`` whose template and GPU the
   simulator knows (none are shipped yet).

For each: Spearman rank correlation of latencies, the model's error on the real best config's
latency, whether the model's best config is within 10% of the real best, and how the model's
launch refusals line up with recorded failures. Prints a table (the one in ``docs/simulator.md``).

    python bench/sim_calibration.py [--landscape PATH] [--compile nvrtc|estimate|estimate-smem] [--sample N (default 800, 0 = all)]
"""

from __future__ import annotations

import argparse
import glob
import math
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from workbench.backends.base import BackendSpec, EvalLimits  # noqa: E402
from workbench.backends.sim import SimBackend  # noqa: E402
from workbench.core.errors import WorkbenchError  # noqa: E402
from workbench.core.gpus import load_gpu  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LANDSCAPE = os.path.join(os.path.dirname(ROOT), "shared", "landscapes", "convolution_A100.json")
CONV_SLOTS = ("block_size_x", "block_size_y", "tile_size_x", "tile_size_y", "read_only", "use_padding", "use_shmem")


@dataclass
class Comparison:
    """Model vs real latencies of one recording."""

    name: str
    gpu: str
    configs: list[dict[str, Any]]
    real: np.ndarray  # ms; NaN where the real run failed
    model: np.ndarray  # ms; NaN where the model refused the launch
    model_status: list[str]
    seconds: float

    def summary(self) -> dict[str, Any]:
        both = np.isfinite(self.real) & np.isfinite(self.model)
        real, model = self.real[both], self.model[both]
        rho = _spearman(real, model)
        best_real = int(np.argmin(real))
        best_model = int(np.argmin(model))
        err_at_best = (model[best_real] - real[best_real]) / real[best_real]
        model_pick_real = real[best_model]
        scale = float(np.median(real / model))
        top = max(1, len(real) // 100)
        top_real = set(np.argsort(real)[:top])
        top_model = set(np.argsort(model)[:top])
        real_failed = ~np.isfinite(self.real)
        model_failed = ~np.isfinite(self.model)
        return {
            "recording": self.name,
            "gpu": self.gpu,
            "configs": int(both.sum()),
            "spearman": rho,
            "best_real_ms": float(real[best_real]),
            "model_at_real_best_ms": float(model[best_real]),
            "err_at_best": float(err_at_best),
            "model_pick_real_ms": float(model_pick_real),
            "pick_within_10pct": bool(model_pick_real <= 1.10 * real[best_real]),
            "pick_fraction_of_optimum": float(real[best_real] / model_pick_real),
            "median_real_over_model": scale,
            "top1pct_overlap": len(top_real & top_model) / top,
            "real_failures": int(real_failed.sum()),
            "model_refusals": int(model_failed.sum()),
            "refusals_matching_failures": int((real_failed & model_failed).sum()),
            "eval_per_s": len(self.configs) / self.seconds if self.seconds else math.nan,
        }


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    try:
        from scipy.stats import spearmanr  # noqa: PLC0415

        return float(spearmanr(a, b).statistic)
    except ImportError:  # rank correlation by hand: Pearson of the ranks
        ra = np.argsort(np.argsort(a)).astype(float)
        rb = np.argsort(np.argsort(b)).astype(float)
        return float(np.corrcoef(ra, rb)[0, 1])


def _run_model(kernel: str, gpu: str, configs: Iterable[dict[str, Any]], compile_mode: str, problem: dict | None = None):
    spec = BackendSpec("sim", {"kernel": kernel, "gpu_model": gpu, "noise": False, "compile": compile_mode,
                               **({"problem": problem} if problem else {})})
    target = SimBackend.target(spec)
    backend = SimBackend(spec)
    backend.prepare()
    latencies, statuses = [], []
    for values in configs:
        measurement = backend.evaluate(target.space.config(values), EvalLimits())
        statuses.append(measurement.status.value)
        latencies.append(measurement.metric("latency_ms") if measurement.ok else math.nan)
    return np.array(latencies), statuses


def _conv_static_smem(problem: dict, values: dict[str, Any]) -> int:
    """Static shared memory of the conv2d source (its ``sh_input`` array), which estimate mode cannot see."""
    if not values["use_shmem"]:
        return 0
    sh_h = values["block_size_y"] * values["tile_size_y"] + int(problem["filter_height"]) - 1
    sh_w = values["block_size_x"] * values["tile_size_x"] + int(problem["filter_width"]) - 1 + values["use_padding"]
    return 4 * sh_h * sh_w


def _run_conv_estimate(configs: Iterable[dict[str, Any]], gpu_name: str = "A100_PCIE"):
    """Estimated resources, plus conv2d's static shared memory from the tile formula: a full sweep in seconds.

    Same profile and model as the backend; only registers are guessed (``estimate_resources``).
    """
    from workbench.core.perfmodel import estimate_resources, launch_check, predict  # noqa: PLC0415
    from workbench.core.templates import load_templates  # noqa: PLC0415

    template = load_templates()["conv2d"]
    problem = template.resolve_problem(None)
    space = template.space(problem)
    gpu = load_gpu(gpu_name)
    latencies, statuses = [], []
    for values in configs:
        config = space.config(values)
        grid, block = template.grid(problem, config), template.block(problem, config)
        profile = template.profile(problem, config)
        res = estimate_resources(profile, int(np.prod(block)), _conv_static_smem(problem, values))
        if launch_check(gpu, block, res["smem_bytes"], res["registers"], grid=grid):
            latencies.append(math.nan)
            statuses.append("launch_error")
            continue
        latencies.append(predict(gpu, profile, grid, block, res).latency_ms)
        statuses.append("ok")
    return np.array(latencies), statuses


def compare_landscape(path: str, compile_mode: str, sample: int | None, seed: int = 0) -> Comparison:
    """The conv2d model on the A100 PCIe against the recorded Kernel Tuner landscape."""
    import json  # noqa: PLC0415

    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    records = list(data["cache"].values())
    if sample and sample < len(records):
        rng = np.random.default_rng(seed)
        records = [records[i] for i in sorted(rng.choice(len(records), sample, replace=False))]
    configs = [{k: int(r[k]) for k in CONV_SLOTS} for r in records]
    real = np.array([float(r["time"]) if isinstance(r.get("time"), (int, float)) else math.nan for r in records])
    began = time.perf_counter()
    if compile_mode == "estimate-smem":
        model, statuses = _run_conv_estimate(configs)
    else:
        model, statuses = _run_model("conv2d", "A100_PCIE", configs, compile_mode)
    return Comparison(f"convolution_A100 ({data.get('device_name', '?')})", "A100_PCIE", configs, real, model, statuses,
                      time.perf_counter() - began)


def compare_sessions(folder: str, compile_mode: str) -> list[Comparison]:
    """Every real-GPU session under ``folder`` whose template and GPU the simulator knows."""
    from workbench.core.session import load_session  # noqa: PLC0415

    out = []
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        try:
            session = load_session(path)
            if session.device.get("simulated") or session.kind != "template":
                continue
            gpu = load_gpu(str(session.device.get("name", "")))
        except WorkbenchError as exc:
            print(f"skipping {os.path.basename(path)}: {exc}")
            continue
        trials = [t for t in session.trials]
        configs = [dict(t.config) for t in trials]
        real = np.array([t.metric("latency_ms") if t.ok else math.nan for t in trials])
        began = time.perf_counter()
        try:
            model, statuses = _run_model(session.kernel, gpu.name, configs, compile_mode, dict(session.problem))
        except WorkbenchError as exc:
            print(f"skipping {os.path.basename(path)}: {exc}")
            continue
        out.append(Comparison(os.path.basename(path), gpu.name, configs, real, model, statuses, time.perf_counter() - began))
    return out


def format_table(rows: list[dict[str, Any]]) -> str:
    """A Markdown table of the summaries (the one pasted into docs/simulator.md)."""
    head = ("| recording | GPU model | configs | Spearman | real best ms | model at it | error at best | "
            "model's pick, real ms | pick within 10% | pick / optimum | median real/model | top-1% overlap | "
            "real failures / model refusals / both |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        lines.append(
            f"| {r['recording']} | {r['gpu']} | {r['configs']} | {r['spearman']:.3f} | {r['best_real_ms']:.3f} | "
            f"{r['model_at_real_best_ms']:.3f} | {r['err_at_best']:+.0%} | {r['model_pick_real_ms']:.3f} | "
            f"{'yes' if r['pick_within_10pct'] else 'no'} | {r['pick_fraction_of_optimum']:.2f} | "
            f"{r['median_real_over_model']:.2f} | {r['top1pct_overlap']:.0%} | "
            f"{r['real_failures']} / {r['model_refusals']} / {r['refusals_matching_failures']} |"
        )
    return "\n".join(lines)


def per_slot_medians(comparison: Comparison) -> str:
    """Median real and modelled latency per slot value: where the model's trends differ from reality."""
    lines = []
    ok = np.isfinite(comparison.real) & np.isfinite(comparison.model)
    for slot in CONV_SLOTS:
        values = sorted({c[slot] for c in comparison.configs})
        parts = []
        for v in values:
            mask = ok & np.array([c[slot] == v for c in comparison.configs])
            if mask.any():
                parts.append(f"{v}: {np.median(comparison.real[mask]):.2f}/{np.median(comparison.model[mask]):.2f}")
        lines.append(f"  {slot:13s} real/model median ms  " + ", ".join(parts))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--landscape", default=LANDSCAPE, help="Kernel Tuner cache of the conv2d benchmark")
    parser.add_argument("--sessions", default=os.path.join(ROOT, "resources", "sessions"))
    parser.add_argument("--compile", default="nvrtc", choices=("nvrtc", "estimate", "estimate-smem"),
                        help="estimate-smem: estimated registers plus conv2d's static shared memory (landscape only, fast)")
    parser.add_argument("--sample", type=int, default=800,
                        help="compare a seeded random subset of this many configs (0: all; NVRTC takes ~1 s per new conv2d source)")
    parser.add_argument("--slots", action="store_true", help="also print per-slot medians")
    args = parser.parse_args(argv)

    comparisons: list[Comparison] = []
    if os.path.isfile(args.landscape):
        comparisons.append(compare_landscape(args.landscape, args.compile, args.sample or None))
    else:
        print(f"landscape not found: {args.landscape}")
    sessions = compare_sessions(args.sessions, args.compile) if os.path.isdir(args.sessions) else []
    if not sessions:
        print(f"no real-GPU sessions with a known template under {args.sessions}")
    comparisons += sessions
    rows = [c.summary() for c in comparisons]
    print(format_table(rows))
    for c, r in zip(comparisons, rows):
        print(f"{c.name}: {r['eval_per_s']:.0f} evaluations/s ({args.compile})")
        if args.slots:
            print(per_slot_medians(c))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
