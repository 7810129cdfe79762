"""How few evaluations each strategy needs: the literature metric on replayed landscapes.

For each landscape and each strategy, run the strategy on the replay of the landscape: it asks for
one config at a time and is told the recorded result (that is exactly what the replay backend does,
minus the worker processes, so thousands of runs take minutes). The landscapes:

- real GPU measurements: Kernel Tuner cache files in ``../shared/landscapes/`` and sessions
  recorded on a real GPU under ``resources/sessions/``;
- simulated landscapes of our own templates, named ``sim_<GPU>_<template>`` (``--sim``,
  ``--sim-gpu``): every valid config of the template's space for its default problem, evaluated
  once by the sim backend's performance model (no noise, estimated resources; predicted launch
  refusals and wrong results are failures). They are model predictions, not GPU measurements; see
  ``bench/landscapes_sim.py``. Built in the parent process and cached on disk (keyed by template
  source, GPU and a hash of the model's source), so reruns load them at once.

Metric (Schoonhoven et al. 2022; Kernel Tuner's strategy studies): best = the lowest latency among
valid configs in the first B distinct evaluations (failures count as evaluations); fraction of
optimum = optimum / best (0 when nothing valid was found). Mean over seeds, B = 25, 50, 100, 200.
Overhead = the strategy's own time (ask + tell) per proposed config over a 1,000-trial run.

Usage::

    python bench/strategies.py                       # every strategy, 20 seeds, table on stdout
    python bench/strategies.py --strategies agents,tpe --seeds 30 --markdown docs/bench.md
    python bench/strategies.py --kt                  # also Kernel Tuner's strategies (needs kernel_tuner)
    python bench/strategies.py --sim none            # only the real landscapes
    python bench/strategies.py --sim sgemm --sim-gpu A100_SXM --strategies random,local
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

# One BLAS thread per process: the benchmark runs several processes, and oversubscribed threads
# would inflate the overhead figures of strategies that do small linear algebra.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from workbench.core.measurement import LATENCY, Measurement, Status, Trial  # noqa: E402
from workbench.core.space import Config, SearchSpace, Slot  # noqa: E402
from workbench.search.base import STRATEGIES, create_strategy  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from landscapes_sim import landscape_name, simulate, write_kt_cache  # noqa: E402

LANDSCAPE_DIR = os.path.join(ROOT, "..", "shared", "landscapes")
SESSION_DIR = os.path.join(ROOT, "resources", "sessions")
BUDGETS = (25, 50, 100, 200)
#: Templates whose simulated landscapes are in the default run: the ones where random search does not
#: find the optimum at once (sim H200, random B=25: sgemm 0.79, conv2d 0.89, transpose 0.97; the other
#: templates are 0.98-1.0, too flat to separate strategies).
SIM_DEFAULT = ("sgemm", "conv2d", "transpose")

#: Kernel Tuner 1.5.0's best strategy per budget on these files (../shared/landscapes/SOURCES.md).
KT_PUBLISHED = {
    "convolution_A100": (0.669, 0.753, 0.859, 0.961),
    "pnpoly_RTX_3090": (0.949, 0.978, 0.989, 1.000),
}
KT_RANDOM = {
    "convolution_A100": (0.617, 0.653, 0.709, 0.769),
    "pnpoly_RTX_3090": (0.875, 0.916, 0.952, 0.961),
}

# Concern of a Kernel Tuner parameter, guessed from its name (cache files carry no groups).
_GROUP_HINTS = (
    ("block_size", "launch"), ("grid", "launch"), ("threads", "launch"), ("items_per", "launch"),
    ("tile", "memory"), ("shmem", "memory"), ("shared", "memory"), ("padding", "memory"),
    ("read_only", "memory"), ("vector", "memory"), ("cmem", "memory"),
    ("unroll", "compute"), ("method", "compute"), ("fast", "compute"),
    ("reduc", "reduction"), ("atomic", "reduction"), ("sync", "reduction"),
)


def guess_group(name: str) -> str:
    for hint, group in _GROUP_HINTS:
        if hint in name.lower():
            return group
    return "compute"


@dataclass
class Landscape:
    """A recorded space: the configs and what each one measured (None = failed)."""

    name: str
    space: SearchSpace
    latency: dict[str, float | None]  # config id -> latency_ms, or None for a failure
    metrics: dict[str, dict[str, float]]
    simulated: bool = False  # predicted by the sim backend's model, not measured on a GPU
    kt_meta: dict[str, Any] | None = None  # device_name, kernel_name, problem_size for a Kernel Tuner cache file

    @property
    def optimum(self) -> float:
        return min(v for v in self.latency.values() if v is not None)

    def measure(self, index: int, config: Config) -> Trial:
        value = self.latency[config.id]
        if value is None:
            m = Measurement.failure(Status.RUNTIME_ERROR, "recorded failure")
        else:
            m = Measurement(Status.OK, {LATENCY: value, **self.metrics.get(config.id, {})})
        return Trial(index=index, config=config, measurement=m)


def load_kt_cache(path: str) -> Landscape:
    """Read a Kernel Tuner cache file in place (parameters with one value are dropped)."""
    with open(path) as fh:
        data = json.load(fh)
    keys = data["tune_params_keys"]
    tunable = [k for k in keys if len(data["tune_params"][k]) > 1]
    slots = [Slot(k, tuple(data["tune_params"][k]), group=guess_group(k)) for k in tunable]
    points, latency, metrics = [], {}, {}
    for record in data["cache"].values():
        config = Config({k: record[k] for k in tunable})
        time_ = record.get("time")
        ok = isinstance(time_, (int, float)) and "__error__" not in record and math.isfinite(time_)
        points.append(config)
        latency[config.id] = float(time_) if ok else None
        if ok and isinstance(record.get("GFLOP/s"), (int, float)):
            metrics[config.id] = {"gflops": float(record["GFLOP/s"])}
    space = SearchSpace.explicit(slots, points)
    name = os.path.splitext(os.path.basename(path))[0]
    return Landscape(name, space, latency, metrics)


def load_session_landscape(path: str) -> Landscape | None:
    """A session recorded on a real GPU, as a landscape over its measured configs (None if simulated)."""
    from workbench.core.session import load_session  # optional: lands with the session module

    session = load_session(path)
    if session.device.get("simulated", True) or not session.trials:
        return None
    points, latency, metrics = [], {}, {}
    for trial in session.trials:
        if trial.config.id in latency:
            continue
        points.append(trial.config)
        latency[trial.config.id] = trial.metric(LATENCY) if trial.ok else None
        metrics[trial.config.id] = {k: float(v) for k, v in trial.measurement.metrics.items() if k != LATENCY}
    if not any(v is not None for v in latency.values()):
        return None
    space = SearchSpace.explicit(session.space.slots, points)
    return Landscape(os.path.splitext(os.path.basename(path))[0], space, latency, metrics)


def simulated_landscape(template: str, gpu: str = "H200") -> Landscape:
    """Every valid config of a template in ``kernels/``, as the simulator predicts it on ``gpu`` (cached on disk)."""
    rec = simulate(template, gpu)
    meta = {"device_name": rec.device_name, "kernel_name": template, "problem_size": None}
    return Landscape(rec.name, rec.space, rec.latency, rec.metrics, simulated=True, kt_meta=meta)


def wanted(name: str, selected: list[str] | None) -> bool:
    return not selected or any(s in name for s in selected)


def landscapes(selected: list[str] | None = None) -> list[Landscape]:
    out = [load_kt_cache(p) for p in sorted(glob.glob(os.path.join(LANDSCAPE_DIR, "*.json")))]
    for path in sorted(glob.glob(os.path.join(SESSION_DIR, "*.json"))):
        try:
            land = load_session_landscape(path)
        except Exception as exc:  # noqa: BLE001 - a broken example session must not stop the benchmark
            print(f"skipping {path}: {exc}", file=sys.stderr)
            continue
        if land is not None:
            out.append(land)
    return [land for land in out if wanted(land.name, selected)]


def run_once(land: Landscape, strategy: str, seed: int, budget: int, options: dict[str, Any]) -> tuple[list[float], float]:
    """Latencies (inf for failures) of the first ``budget`` distinct evaluations, and strategy seconds."""
    strat = create_strategy(strategy, land.space, seed=seed, **options)
    seen: set[str] = set()
    values: list[float] = []
    spent = 0.0
    while len(values) < budget:
        t0 = time.perf_counter()
        configs = strat.ask(1)
        spent += time.perf_counter() - t0
        if not configs:
            break
        trials = []
        for config in configs:
            if config.id in seen:  # the engine would drop it; the metric counts distinct configs
                continue
            seen.add(config.id)
            trial = land.measure(len(values), config)
            v = land.latency[config.id]
            values.append(math.inf if v is None else v)
            trials.append(trial)
        t0 = time.perf_counter()
        strat.tell(trials)
        spent += time.perf_counter() - t0
    return values, spent


def fractions(values: list[float], optimum: float, budgets=BUDGETS) -> list[float]:
    out = []
    for b in budgets:
        best = min(values[:b], default=math.inf)
        out.append(optimum / best if math.isfinite(best) else 0.0)
    return out


def _job(args: tuple) -> tuple[str, str, list[float]]:
    land_name, strategy, seeds, options = args
    land = _LANDS[land_name]
    fr = [fractions(run_once(land, strategy, s, max(BUDGETS), options)[0], land.optimum) for s in seeds]
    return land_name, strategy, list(np.mean(fr, axis=0))


def _overhead_job(args: tuple) -> tuple[str, float]:
    land_name, strategy, options = args
    land = _LANDS[land_name]
    values, spent = run_once(land, strategy, 0, 1000, options)
    return strategy, 1000.0 * spent / max(len(values), 1)


_LANDS: dict[str, Landscape] = {}


def _init(selected: list[str] | None, extra: tuple[Landscape, ...] | list[Landscape] = ()) -> None:
    """Load the recorded landscapes; ``extra`` (the simulated ones) come built from the parent."""
    for land in [*landscapes(selected), *extra]:
        _LANDS[land.name] = land


# --- Kernel Tuner in simulation mode (optional extra) -------------------------------------------
KT_STRATEGIES = (
    "random_sample", "genetic_algorithm", "dual_annealing", "greedy_ils", "bayes_opt", "simulated_annealing",
    "pso", "hybrid_vndx",  # the best of Kernel Tuner's published results on these files (SOURCES.md)
)


def run_kt(path: str, strategy: str, seed: int, budget: int) -> list[float]:
    """Kernel Tuner's own strategy on the same file in simulation mode, cut at ``budget`` distinct configs.

    Kernel Tuner's ``dual_annealing`` and ``simulated_annealing`` stop early relative to
    ``max_fevals`` (SOURCES.md), so they get a larger budget and the result is cut at B distinct.
    """
    import warnings

    import kernel_tuner  # optional

    warnings.filterwarnings("ignore")

    with open(path) as fh:
        data = json.load(fh)
    params = {k: v for k, v in data["tune_params"].items()}
    size = data["problem_size"]
    np.random.seed(seed)  # Kernel Tuner's strategies use the global generators
    import random

    random.seed(seed)
    opts = {"max_fevals": budget * 3 if strategy in ("dual_annealing", "simulated_annealing") else budget}
    keys = data["tune_params_keys"]
    recorded = {tuple(r[k] for k in keys) for r in data["cache"].values()}

    def in_recording(p: dict) -> bool:  # the space is the recorded configs (restrictions were applied before)
        return tuple(p[k] for k in keys) in recorded

    results, _ = kernel_tuner.tune_kernel(
        data["kernel_name"], "// simulated", size, [np.zeros(1, np.float32)], params,
        restrictions=in_recording, cache=path, simulation_mode=True, strategy=strategy, strategy_options=opts,
        quiet=True, verbose=False,
    )
    values, seen = [], set()
    for r in results:
        key = tuple(r[k] for k in data["tune_params_keys"])
        if key in seen:
            continue
        seen.add(key)
        t = r.get("time")
        values.append(float(t) if isinstance(t, (int, float)) and math.isfinite(t) else math.inf)
        if len(values) >= budget:
            break
    return values


def _kt_job(args: tuple) -> tuple[str, str, list[float]]:
    land_name, path, strategy, seeds = args
    land = _LANDS[land_name]
    fr, errors = [], []
    for s in seeds:
        try:
            fr.append(fractions(run_kt(path, strategy, s, max(BUDGETS)), land.optimum))
        except Exception as exc:  # noqa: BLE001 - Kernel Tuner 1.5.0 has seed-dependent crashes (neighbour cache)
            errors.append(f"{type(exc).__name__}: {exc}")
    label = "kt:" + strategy
    if errors:  # said in the table, never hidden: the mean is over the seeds that ran
        label += f" ({len(errors)}/{len(seeds)} seeds crashed in Kernel Tuner: {errors[0][:60]})"
    means = list(np.mean(fr, axis=0)) if fr else [math.nan] * len(BUDGETS)
    return land_name, label, means


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--strategies", default=",".join(s for s in STRATEGIES if s != "grid"))
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--landscapes", default="", help="comma-separated name filters")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--options", default="{}", help="JSON options passed to every strategy")
    ap.add_argument("--no-overhead", action="store_true")
    ap.add_argument("--kt", action="store_true", help="also run Kernel Tuner's strategies (simulation mode)")
    ap.add_argument("--kt-seeds", type=int, default=0, help="seeds for --kt (default: --seeds)")
    ap.add_argument("--kt-strategies", default=",".join(KT_STRATEGIES), help="Kernel Tuner strategies for --kt")
    ap.add_argument("--sim", default=",".join(SIM_DEFAULT),
                    help="templates to add as simulated landscapes (comma-separated; 'none' for none)")
    ap.add_argument("--sim-gpu", default="H200", help="GPU model of the simulated landscapes")
    ap.add_argument("--markdown", default="", help="also write the table as Markdown to this file")
    args = ap.parse_args(argv)
    selected = [s for s in args.landscapes.split(",") if s] or None
    strategies = [s for s in args.strategies.split(",") if s]
    kt_strategies = [s for s in args.kt_strategies.split(",") if s]
    options = json.loads(args.options)
    sim_templates = [t for t in args.sim.split(",") if t and t != "none"]
    sims = []
    for template in sim_templates:  # built (or loaded from the cache) once, here; workers get them pickled
        if wanted(landscape_name(template, args.sim_gpu), selected):
            t0 = time.perf_counter()
            sims.append(simulated_landscape(template, args.sim_gpu))
            print(f"{sims[-1].name}: {sims[-1].space.count()} configs, "
                  f"{sum(v is None for v in sims[-1].latency.values())} failures ({time.perf_counter() - t0:.1f} s)",
                  file=sys.stderr)
    _init(selected, sims)
    names = list(_LANDS)
    seeds = list(range(args.seeds))
    t0 = time.perf_counter()
    jobs = [(n, s, seeds, options) for n in names for s in strategies]
    with ProcessPoolExecutor(args.jobs, initializer=_init, initargs=(selected, sims)) as pool, \
            tempfile.TemporaryDirectory(prefix="kt-sim-") as kt_dir:
        results = {(n, s): r for n, s, r in pool.map(_job, jobs)}
        overhead = {}
        if not args.no_overhead and names:  # one at a time, so strategies do not slow each other down
            # on the largest real landscape when there is one, so the figures stay comparable
            measured = [n for n in names if not _LANDS[n].simulated] or names
            big = max(measured, key=lambda n: _LANDS[n].space.count())
            overhead = dict(_overhead_job((big, s, options)) for s in strategies)
        kt_rows: dict[tuple[str, str], list[float]] = {}
        if args.kt:
            kt_seeds = list(range(args.kt_seeds or args.seeds))
            kt_files = {n: os.path.join(LANDSCAPE_DIR, n + ".json") for n in names}
            for land in sims:  # Kernel Tuner reads cache files: write the simulated landscapes as ones
                kt_files[land.name] = os.path.join(kt_dir, land.name + ".json")
                write_kt_cache(land, kt_files[land.name], **land.kt_meta)
            kt_jobs = [(n, kt_files[n], s, kt_seeds) for n in names if os.path.exists(kt_files[n]) for s in kt_strategies]
            kt_rows = {(n, s): r for n, s, r in pool.map(_kt_job, kt_jobs)}
    lines = [f"Mean fraction of optimum over {args.seeds} seeds (optimum / best latency in the first B distinct evaluations)", ""]
    header = "| landscape | strategy | " + " | ".join(f"B={b}" for b in BUDGETS) + " | overhead ms/config |"
    lines += [header, "|" + "---|" * (len(BUDGETS) + 3)]
    for n in names:
        rows = {s: results[(n, s)] for s in strategies}
        rows.update({k[1]: v for k, v in kt_rows.items() if k[0] == n})
        for s, fr in rows.items():
            oh = f"{overhead[s]:.2f}" if s in overhead else ""
            lines.append(f"| {n} | {s} | " + " | ".join(f"{x:.3f}" for x in fr) + f" | {oh} |")
        if n in KT_PUBLISHED:
            lines.append(f"| {n} | KT 1.5 best (published) | " + " | ".join(f"{x:.3f}" for x in KT_PUBLISHED[n]) + " | |")
            lines.append(f"| {n} | KT 1.5 random (published) | " + " | ".join(f"{x:.3f}" for x in KT_RANDOM[n]) + " | |")
    if any(_LANDS[n].simulated for n in names):
        lines += ["", f"sim_* landscapes are simulated ({args.sim_gpu} performance model, no noise), not GPU measurements."]
    lines += ["", f"({time.perf_counter() - t0:.0f} s, {args.jobs} processes)"]
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as fh:
            fh.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
