"""How close is the simulator to real GPUs? Hold the model against recorded landscapes, config by config.

A landscape is a Kernel Tuner cache file (``.json`` or ``.json.gz``, read in place) of a kernel that
a template mirrors (same slot names and domains), or a session of one of our templates measured on
a GPU (``scripts/gpu_check.sh`` with ``GPU_SWEEP`` records every config). Each recorded config is
modelled with the template on the GPU model matched from the recording's device name (or
``--gpu-model``), and the model's ranking is compared with the real one:

- ``spearman``: rank correlation of modelled and real latency over the configs both ran;
- ``pick_fraction``: real optimum / real latency of the model's best config (1.0 = it picks the
  real optimum);
- ``top10_overlap``: share of the real top 10 among the model's top 10;
- ``top1pct_overlap``: the same for the top 1%;
- ``top1pct_kept_at_25pct``: share of the real top 1% among the model's best 25% of all recorded
  configs (the pruning check: ``--prune 0.25`` would keep them);
- failures: real failures, model refusals and both.

Without ``--landscape`` it runs every recorded NVIDIA landscape of a shipped template under
``../shared/landscapes`` and prints the table of ``docs/simulator.md``.

    python bench/sim_calibration.py --landscape CACHE.json[.gz] --template conv2d --gpu-model NAME [--fix SLOT=VALUE] [--json]

``--pairs SLOT [--by SLOT2] [--where SLOT=VALUE]`` prints, for configs that differ in SLOT only, the
median time ratio between neighbouring values, real and modelled (split by SLOT2's values, among
the configs with the given values): the one- and two-slot comparisons the mechanisms of
``docs/simulator.md`` are shown with.

``--fix slot=value`` sets a template slot the recorded kernel does not have (a kernel that always
stages in shared memory: ``--fix use_shmem=1``); ``--gpu-model`` takes a model name or a device
name (default: the cache's ``device_name``, matched as the cost model matches a real device);
``--compile estimate`` (default) sweeps every config with estimated resources in seconds,
``--compile nvrtc`` compiles every config as the sim backend does (slow for unrolled kernels:
combine with ``--sample N``); ``--refine N`` compiles only the model's N best and models them
again with their compiled resources. Noise is off. Exit status 2 with one line on bad input.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from workbench.backends.base import BackendSpec, EvalLimits
from workbench.backends.sim import SimBackend
from workbench.core.domain.assignments import parse_assignments
from workbench.core.errors import WorkbenchError
from workbench.core.model.gpus import match_gpu
from workbench.core.io.interop import import_kt_cache

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LANDSCAPES = os.path.join(os.path.dirname(ROOT), "shared", "landscapes")
#: Recorded kernel name -> the template mirroring it (for the default set and --template's default).
TEMPLATE_OF_KERNEL = {"convolution_kernel": "conv2d"}


@dataclass
class Comparison:
    """Model vs real latencies of one recording (NaN where the real run failed / the model refused)."""

    recording: str
    device: str
    gpu: str
    gpu_note: str
    template: str
    configs: list[dict[str, Any]]
    real: np.ndarray
    model: np.ndarray
    seconds: float
    #: The model's binding pipe per config (its ``bound``: compute, shared memory, memory, ...; "" where
    #: it refuses), when known.
    bounds: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        both = np.isfinite(self.real) & np.isfinite(self.model)
        real, model = self.real[both], self.model[both]
        best_real = int(np.argmin(real))
        best_model = int(np.argmin(model))
        top = max(1, len(real) // 100)
        top_real = set(np.argsort(real, kind="stable")[:top])
        # Pruning check over every recorded config: refused configs rank last in the model's order.
        ranked = np.argsort(np.where(np.isfinite(self.model), self.model, np.inf), kind="stable")
        kept = set(ranked[: math.ceil(0.25 * len(ranked))].tolist())
        real_ok = np.flatnonzero(np.isfinite(self.real))
        real_top = real_ok[np.argsort(self.real[real_ok], kind="stable")[: max(1, len(real_ok) // 100)]]
        real_failed = ~np.isfinite(self.real)
        model_failed = ~np.isfinite(self.model)
        return {
            "recording": self.recording,
            "device": self.device,
            "gpu_model": self.gpu,
            "gpu_note": self.gpu_note,
            "template": self.template,
            "configs": int(both.sum()),
            "spearman": spearman(real, model),
            "pick_fraction": float(real[best_real] / real[best_model]),
            "top10_overlap": len(set(np.argsort(real, kind="stable")[:10]) & set(np.argsort(model, kind="stable")[:10])) / 10,
            "top1pct_overlap": len(top_real & set(np.argsort(model, kind="stable")[:top])) / top,
            "top1pct_kept_at_25pct": sum(int(i) in kept for i in real_top) / len(real_top),
            "best_real_ms": float(real[best_real]),
            "model_at_real_best_ms": float(model[best_real]),
            "model_pick": self.configs[int(np.flatnonzero(both)[best_model])],
            "model_pick_real_ms": float(real[best_model]),
            "median_real_over_model": float(np.median(real / model)),
            "real_failures": int(real_failed.sum()),
            "model_refusals": int(model_failed.sum()),
            "both_failed": int((real_failed & model_failed).sum()),
            "seconds": self.seconds,
        }


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman rank correlation (average ranks for ties): Pearson correlation of the ranks."""

    def ranks(x: np.ndarray) -> np.ndarray:
        order = np.argsort(x, kind="stable")
        r = np.empty(len(x))
        r[order] = np.arange(len(x), dtype=float)
        _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
        sums = np.bincount(inverse, weights=r)
        return (sums / counts)[inverse]

    if len(a) < 2:
        return math.nan
    return float(np.corrcoef(ranks(np.asarray(a, float)), ranks(np.asarray(b, float)))[0, 1])


def model_evaluations(template: str, gpu: str, configs: Sequence[dict[str, Any]], compile_mode: str,
                      problem: dict[str, Any] | None = None) -> tuple[np.ndarray, list[str]]:
    """Each config's modelled latency (ms; NaN where refused) and the pipe the model says binds it."""
    options: dict[str, Any] = {"kernel": template, "gpu_model": gpu, "noise": False, "compile": compile_mode}
    if problem:
        options["problem"] = problem
    spec = BackendSpec("sim", options)
    space = SimBackend.target(spec).space
    backend = SimBackend(spec)
    backend.prepare()
    out = np.full(len(configs), math.nan)
    bounds = [""] * len(configs)
    for i, values in enumerate(configs):
        try:
            config = space.config(values)
        except WorkbenchError:  # outside the template's space (e.g. a --fix value its restrictions refuse)
            continue
        measurement = backend.evaluate(config, EvalLimits())
        if measurement.ok:
            out[i] = measurement.metric("latency_ms")
            bounds[i] = str(measurement.details.get("bound", ""))
    return out, bounds


def compare(path: str, template: str | None = None, gpu_model: str | None = None, fix: dict[str, Any] | None = None,
            compile_mode: str = "estimate", sample: int = 0, seed: int = 0, refine: int = 0) -> Comparison:
    """Model ``template`` on the matched GPU for every config of the Kernel Tuner cache at ``path``,
    or of a workbench session measured on a GPU (``tune --backend cuda``, ``scripts/gpu_check.sh``).

    ``refine``: compile the model's ``refine`` best configs with NVRTC and model them again with
    the compiled registers and shared memory (how a pruned run then measures on the sim backend).
    """
    from workbench.core.domain.session import is_session_file, load_session
    from workbench.core.domain.templates import load_templates

    measured_here = is_session_file(path)  # ours: its problem is the template's; a cache's is Kernel Tuner's
    session = load_session(path) if measured_here else import_kt_cache(path)
    if session.device.get("simulated"):
        raise WorkbenchError(f"{path}: a simulated session; the model is held against measurements only")
    kernel = session.kernel
    templates = load_templates()
    name = template or TEMPLATE_OF_KERNEL.get(kernel) or (kernel if kernel in templates else None)
    if name is None:
        raise WorkbenchError(f"{path}: no template is known to mirror kernel {kernel!r}; give --template")
    if name not in templates:
        raise WorkbenchError(f"unknown template {name!r}; choose one of: {', '.join(sorted(templates))}")
    tpl = templates[name]
    slots = {s.name for s in tpl.slots}
    fix = dict(fix or {})
    unknown = sorted(set(fix) - slots)
    if unknown:
        raise WorkbenchError(f"--fix {unknown[0]}: template {name} has no such slot")
    recorded = [s.name for s in session.space.slots]
    already = sorted(set(fix) & set(recorded))
    if already:
        raise WorkbenchError(f"--fix {already[0]}: the recording has this slot; --fix only sets slots it lacks")
    missing = sorted(slots - set(recorded) - set(fix))
    if missing:
        raise WorkbenchError(f"{path}: the recording has no slot {missing[0]!r} of template {name}; "
                             f"set it with --fix {missing[0]}=VALUE")
    own_problem = dict(session.problem) if measured_here and session.problem else None
    problem = tpl.resolve_problem(own_problem)
    for extra in sorted(set(recorded) - slots):  # recorded parameters that are not slots: problem or constant
        values = set(session.space.slot(extra).values)
        if extra in problem and values != {problem[extra]}:
            raise WorkbenchError(f"{path}: parameter {extra!r} takes {sorted(values)}, the template's problem has "
                                 f"{problem[extra]}")
    device = str(session.device.get("name", "unknown"))
    match = match_gpu(gpu_model or device)
    if gpu_model and not match.exact:
        raise WorkbenchError(f"unknown GPU model {gpu_model!r}: {match.note}")
    trials = list(session.trials)
    if sample and sample < len(trials):
        rng = np.random.default_rng(seed)
        trials = [trials[i] for i in sorted(rng.choice(len(trials), sample, replace=False))]
    configs = [{**{k: t.config[k] for k in slots if k in t.config}, **fix} for t in trials]
    # Kernel Tuner's own time (kt_time_ms), the figure it optimised and these tables have always
    # quoted; the import's latency_ms is the median of the repetitions, which can rank differently
    real = np.array([_kt_time(t) if t.measurement.ok else math.nan for t in trials], float)
    began = time.perf_counter()
    model, bounds = model_evaluations(name, match.spec.name, configs, compile_mode, own_problem)
    if refine and compile_mode != "nvrtc":
        best = np.argsort(np.where(np.isfinite(model), model, np.inf), kind="stable")[:refine]
        model[best], refined = model_evaluations(name, match.spec.name, [configs[i] for i in best], "nvrtc")
        for i, bound in zip(best, refined):
            bounds[int(i)] = bound
    return Comparison(os.path.basename(path), device, match.spec.name, match.note, name, configs, real, model,
                      time.perf_counter() - began, bounds)


def _kt_time(trial: Any) -> float:
    """A recorded trial's Kernel Tuner ``time`` (ms), or its latency when the import kept none."""
    value = trial.measurement.metric("kt_time_ms")
    return value if math.isfinite(value) else trial.measurement.metric("latency_ms")


def recorded_landscapes(folder: str = LANDSCAPES) -> list[str]:
    """Every cache file under ``folder`` (and ``folder/more``) of a kernel a template mirrors, on an NVIDIA GPU."""
    out = []
    for sub in (folder, os.path.join(folder, "more")):
        if not os.path.isdir(sub):
            continue
        for file_name in sorted(os.listdir(sub)):
            if not (file_name.endswith(".json") or file_name.endswith(".json.gz")):
                continue
            path = os.path.join(sub, file_name)
            try:
                session = import_kt_cache(path)
            except WorkbenchError:
                continue
            nvidia = any(w in str(session.device.get("name", "")).upper() for w in ("NVIDIA", "TESLA", "GEFORCE", "A100"))
            if session.kernel in TEMPLATE_OF_KERNEL and nvidia:
                out.append(path)
    return out


def format_table(rows: list[dict[str, Any]]) -> str:
    """A Markdown table of the summaries (the one in docs/simulator.md)."""
    head = ("| recording | GPU model | configs | Spearman | pick / optimum | top-10 overlap | top-1% overlap | "
            "real top 1% kept by best 25% | real best ms | model's pick, real ms | median real/model | "
            "real failures / model refusals / both |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        lines.append(
            f"| {r['recording']} | {r['gpu_model']} | {r['configs']} | {r['spearman']:.3f} | {r['pick_fraction']:.2f} | "
            f"{r['top10_overlap']:.0%} | {r['top1pct_overlap']:.0%} | {r['top1pct_kept_at_25pct']:.0%} | "
            f"{r['best_real_ms']:.3f} | {r['model_pick_real_ms']:.3f} | {r['median_real_over_model']:.2f} | "
            f"{r['real_failures']} / {r['model_refusals']} / {r['both_failed']} |"
        )
    return "\n".join(lines)


def per_slot_medians(c: Comparison) -> str:
    """Median real and modelled latency per slot value: where the model's trends differ from reality."""
    ok = np.isfinite(c.real) & np.isfinite(c.model)
    lines = []
    for slot in c.configs[0]:
        parts = []
        for v in sorted({cfg[slot] for cfg in c.configs}):
            mask = ok & np.array([cfg[slot] == v for cfg in c.configs])
            if mask.any():
                parts.append(f"{v}: {np.median(c.real[mask]):.2f}/{np.median(c.model[mask]):.2f}")
        lines.append(f"  {slot:13s} real/model median ms  " + ", ".join(parts))
    return "\n".join(lines)


def paired_ratios(c: Comparison, slot: str, by: str | None = None,
                  where: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Median time ratio, real and modelled, of configs that differ in ``slot`` only.

    For each step between neighbouring values of ``slot`` (``a -> b``), every recorded config with
    ``slot = a`` whose twin with ``slot = b`` (all other slots equal) is also recorded gives one pair;
    both ran in reality and in the model. ``by`` splits the pairs by another slot's value, ``where``
    keeps only configs with those slot values. A one-slot effect the model misses shows as a real
    median far from the model's, and ``by`` shows where it interacts with a second slot. The
    ``*_spread`` figures are the median size of a pair's step whatever its direction (median of
    ``|log ratio|``): a step that moves times a lot both ways has a ratio near 1 and a large spread,
    which the median ratio alone hides.
    """
    if slot not in c.configs[0] or (by is not None and by not in c.configs[0]):
        unknown = slot if slot not in c.configs[0] else by
        raise WorkbenchError(f"--pairs/--by: no slot {unknown!r}; slots: {', '.join(c.configs[0])}")
    for name in where or {}:
        if name not in c.configs[0]:
            raise WorkbenchError(f"--where {name}: no such slot; slots: {', '.join(c.configs[0])}")
    names = list(c.configs[0])
    index = {tuple(cfg[n] for n in names): i for i, cfg in enumerate(c.configs)}
    position = names.index(slot)
    values = sorted({cfg[slot] for cfg in c.configs})
    rows = []
    for a, b in zip(values, values[1:]):
        groups: dict[Any, list[tuple[float, float]]] = {}
        for key, i in index.items():
            cfg = c.configs[i]
            if key[position] != a or any(cfg[n] != v for n, v in (where or {}).items()):
                continue
            twin = list(key)
            twin[position] = b
            j = index.get(tuple(twin))
            if j is None:
                continue
            ratios = (c.real[j] / c.real[i], c.model[j] / c.model[i])
            if all(math.isfinite(r) for r in ratios):
                groups.setdefault(cfg[by] if by else "all", []).append(ratios)
        for group, pairs in sorted(groups.items(), key=lambda item: str(item[0])):
            arr = np.array(pairs)
            spread = np.median(np.abs(np.log(arr)), axis=0)
            rows.append({"slot": slot, "from": a, "to": b, "by": by, "group": group, "pairs": len(pairs),
                         "real_ratio": float(np.median(arr[:, 0])), "model_ratio": float(np.median(arr[:, 1])),
                         "real_spread": float(spread[0]), "model_spread": float(spread[1])})
    return rows


def residuals_by_bound(c: Comparison, where: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Mean log residual (log real / model, minus its median over every config both ran) per binding pipe.

    Groups the configs (those with the ``where`` slot values) by the pipe the model says binds them:
    a group far above 0 runs slower on the GPU than the model says, relative to the rest, so what the
    model misses there has to do with that pipe binding.
    """
    for name in where or {}:
        if name not in c.configs[0]:
            raise WorkbenchError(f"--where {name}: no such slot; slots: {', '.join(c.configs[0])}")
    both = np.isfinite(c.real) & np.isfinite(c.model)
    if not both.any() or len(c.bounds) != len(c.configs):
        return []
    residual = np.log(np.where(both, c.real, 1.0) / np.where(both, c.model, 1.0))
    centre = float(np.median(residual[both]))
    groups: dict[str, list[float]] = {}
    for i, cfg in enumerate(c.configs):
        if both[i] and all(cfg[n] == v for n, v in (where or {}).items()):
            groups.setdefault(c.bounds[i] or "unknown", []).append(float(residual[i]) - centre)
    return [{"bound": bound, "configs": len(values), "mean_residual": float(np.mean(values))}
            for bound, values in sorted(groups.items())]


def format_bounds(rows: list[dict[str, Any]]) -> str:
    """The residuals per binding pipe as one line."""
    return "  mean log residual by the model's binding pipe: " + ", ".join(
        f"{r['bound']} {r['mean_residual']:+.2f} ({r['configs']})" for r in rows)


def format_pairs(rows: list[dict[str, Any]]) -> str:
    """The paired ratios as lines: ``slot a -> b [by = group]: real x / model y (n pairs)``."""
    return "\n".join(
        f"  {r['slot']} {r['from']} -> {r['to']}" + (f" [{r['by']} = {r['group']}]" if r["by"] else "")
        + f": real {r['real_ratio']:.2f} / model {r['model_ratio']:.2f} ({r['pairs']} pairs; "
        f"size |log| real {r['real_spread']:.3f} / model {r['model_spread']:.3f})"
        for r in rows
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--landscape", help="Kernel Tuner cache file (.json or .json.gz); default: every recorded one")
    parser.add_argument("--template", help="the template mirroring the recorded kernel (default: from its kernel name)")
    parser.add_argument("--gpu-model", help="GPU model or device name (default: the cache's device name)")
    parser.add_argument("--fix", action="append", default=[], metavar="SLOT=VALUE",
                        help="set a template slot the recorded kernel does not have (repeatable)")
    parser.add_argument("--compile", default="estimate", choices=("estimate", "nvrtc"))
    parser.add_argument("--sample", type=int, default=0, help="a seeded random subset of this many configs (0: all)")
    parser.add_argument("--refine", type=int, default=0, metavar="N",
                        help="compile the model's N best configs with NVRTC and model them again")
    parser.add_argument("--json", action="store_true", help="print one JSON object per landscape (one line each)")
    parser.add_argument("--slots", action="store_true", help="also print median real/model latency per slot value")
    parser.add_argument("--pairs", metavar="SLOT",
                        help="also print the median time ratio, real and modelled, of configs differing in SLOT only")
    parser.add_argument("--by", metavar="SLOT", help="with --pairs: split the pairs by this slot's value")
    parser.add_argument("--where", action="append", default=[], metavar="SLOT=VALUE",
                        help="with --pairs or --bounds: only configs with this slot value (repeatable)")
    parser.add_argument("--bounds", action="store_true",
                        help="also print the mean log residual (log real/model) per pipe the model says binds")
    args = parser.parse_args(argv)
    try:
        if args.by and not args.pairs:
            raise WorkbenchError("--by goes with --pairs SLOT")
        if args.where and not (args.pairs or args.bounds):
            raise WorkbenchError("--where goes with --pairs SLOT or --bounds")
        fix = parse_assignments(args.fix, "--fix") if args.fix else {}
        where = parse_assignments(args.where, "--where") if args.where else {}
        paths = [args.landscape] if args.landscape else recorded_landscapes()
        if not paths:
            raise WorkbenchError(f"no recorded landscape of a known kernel under {LANDSCAPES}")
        comparisons = [compare(p, args.template, args.gpu_model, fix, args.compile, args.sample, refine=args.refine)
                       for p in paths]
    except WorkbenchError as exc:
        print(f"sim_calibration: {exc}", file=sys.stderr)
        return 2
    rows = [c.summary() for c in comparisons]
    try:
        pairs = [paired_ratios(c, args.pairs, args.by, where) if args.pairs else [] for c in comparisons]
        bounds = [residuals_by_bound(c, where) if args.bounds else [] for c in comparisons]
    except WorkbenchError as exc:
        print(f"sim_calibration: {exc}", file=sys.stderr)
        return 2
    if args.json:
        for r, p, b in zip(rows, pairs, bounds):
            print(json.dumps({**r, **({"pairs": p} if args.pairs else {}), **({"bounds": b} if args.bounds else {})}))
        return 0
    print(format_table(rows))
    for c, r in zip(comparisons, rows):
        note = f"; {c.gpu_note}" if c.gpu_note else ""
        print(f"{c.recording}: {c.device} as {c.gpu}{note}; model's pick {r['model_pick']}; "
              f"{len(c.configs) / c.seconds:.0f} evaluations/s ({args.compile})")
        if args.slots:
            print(per_slot_medians(c))
        if args.pairs:
            print(format_pairs(pairs[comparisons.index(c)]))
        if args.bounds:
            print(format_bounds(bounds[comparisons.index(c)]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
