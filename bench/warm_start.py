"""Warm-started retuning across problem sizes: evaluations to reach 95% of each size's optimum.

A size sweep (``tune KERNEL --sizes NAME=...``) tunes sizes one after another; a new size first
measures the best configs of the nearest sizes already measured, then the strategy continues, told
those trials. This script measures what that saves against starting every size cold.

For each template, a sweep of five sizes (ascending, as the plan lists them) is simulated on the
workbench's simulated GPU landscapes (every valid config of the size's space evaluated by the
simulator, noise off; see ``bench/landscapes_sim.py``). Each size is tuned exactly like the engine
does it: its default config first, then (warm) the seeds :func:`workbench.core.domain.sizes.warm_start_configs`
picks from the sizes measured before it in this sweep, wrapped around the strategy by
:class:`workbench.search.seeded.Seeded`, then the strategy's proposals, ``--budget`` distinct
evaluations in all. Cold runs the same without seeds. The first size has no neighbour and is left
out of the comparison. The figure per (template, seed) is the mean over sizes 2..5 of the
evaluations until the best latency found is within 95% of that size's optimum (optimum / best >=
0.95); a size that does not get there within the budget counts as budget + 1 and is reported in the
"reached" columns. Means over seeds with their standard errors.

No recorded landscape holds several sizes of one kernel (each file in ``../shared/landscapes`` is
one problem on one GPU), so this benchmark runs on the simulator only.

Usage: ``python bench/warm_start.py [--seeds 20] [--budget 100] [--strategy agents] [--templates a,b]``
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from landscapes_sim import simulate

from workbench.core.domain.measurement import LATENCY, Measurement, Status, Trial
from workbench.core.domain.session import Session
from workbench.core.domain.sizes import size_grid, warm_start_configs
from workbench.core.domain.space import Config
from workbench.core.domain.templates import load_templates
from workbench.search.base import DEFAULT_STRATEGY, create_strategy
from workbench.search.seeded import Seeded

#: template -> swept values (one parameter, ascending; the other parameters stay at their defaults).
SWEEPS: dict[str, dict[str, list[int]]] = {
    "reduce_sum": {"n": [1 << 18, 1 << 20, 1 << 22, 1 << 24, 1 << 26]},
    "gelu": {"n": [1 << 18, 1 << 20, 1 << 22, 1 << 24, 1 << 26]},
    "softmax": {"cols": [128, 256, 512, 1024, 4096]},
    "layernorm": {"cols": [128, 256, 512, 1024, 4096]},
    "transpose": {"rows": [1024, 2048, 4096, 8192, 16384]},
    "stencil": {"nz": [32, 64, 128, 256, 512]},
    "histogram": {"n": [1 << 18, 1 << 20, 1 << 22, 1 << 24, 1 << 26]},
    "sgemm": {"m": [256, 512, 1024, 2048, 4096]},
}
DEFAULT_TEMPLATES = ("reduce_sum", "softmax", "layernorm", "transpose", "histogram")
TARGET = 0.95
#: A stricter target, reported beside (the simulated landscapes are easy at 95%).
STRICT = 0.99


def landscape(template: str, problem: dict[str, Any], gpu: str) -> Any:
    return simulate(template, gpu, problem)


def measure(rec: Any, index: int, config: Config, problem: dict[str, Any]) -> Trial:
    value = rec.latency.get(config.id)
    if value is None:
        m = Measurement.failure(Status.RUNTIME_ERROR, "predicted failure")
    else:
        m = Measurement(Status.OK, {LATENCY: value, **rec.metrics.get(config.id, {})})
    return Trial(index=index, config=config, measurement=m, problem=problem)


def tune_size(rec: Any, problem: dict[str, Any], strategy: str, seed: int, budget: int,
              seeds: Sequence[Config], first_index: int, stop_at: float | None = None) -> list[Trial]:
    """One size as the engine tunes it: default first, then seeds (if any), then the strategy.
    ``stop_at``: end once the best latency is at most this (the cold runs, whose later trials
    nothing reads)."""
    space = rec.space
    strat = create_strategy(strategy, space, seed=seed)
    if seeds:
        strat = Seeded(strat, seeds)
    trials: list[Trial] = []
    default = space.default_config()
    if default is not None and default.id in rec.latency:
        strat.exclude((default.id,))
        trial = measure(rec, first_index, default, problem)
        trials.append(trial)
        strat.tell([trial])
    seen = {t.config.id for t in trials}
    stale = 0
    best = min((t.metric(LATENCY) for t in trials if t.ok), default=math.inf)
    while len(trials) < budget and stale < 50 and not (stop_at is not None and best <= stop_at):
        proposed = strat.ask(1)
        if not proposed:
            break
        fresh = [c for c in proposed if c.id not in seen and c.id in rec.latency]
        if not fresh:
            strat.exclude(c.id for c in proposed)
            stale += 1
            continue
        stale = 0
        told = []
        for config in fresh[: budget - len(trials)]:
            seen.add(config.id)
            trial = measure(rec, first_index + len(trials), config, problem)
            trials.append(trial)
            told.append(trial)
            if trial.ok and math.isfinite(trial.metric(LATENCY)):
                best = min(best, trial.metric(LATENCY))
        strat.tell(told)
    return trials


def evals_to_target(trials: Sequence[Trial], optimum: float, budget: int, target: float = TARGET) -> int:
    best = math.inf
    for i, trial in enumerate(trials):
        value = trial.metric(LATENCY) if trial.ok else math.inf
        if math.isfinite(value):
            best = min(best, value)
        if optimum / best >= target:
            return i + 1
    return budget + 1


def sweep(template: str, recs: list[Any], problems: list[dict[str, Any]], strategy: str, seed: int, budget: int,
          warm: bool) -> list[tuple[int, int, int]]:
    """(evaluations to 95%, to 99%, seeds measured first) for sizes 2.. of one sweep. Warm sweeps
    run every size to its budget (the next sizes' seeds are what it found); cold sizes stop at 99%."""
    session = Session(kernel=template, problem=dict(problems[0]))
    out: list[tuple[int, int, int]] = []
    for k, (rec, problem) in enumerate(zip(recs, problems)):
        optimum = min(v for v in rec.latency.values() if v is not None)
        if not warm and k == 0:
            continue  # nothing reads the first size of a cold sweep
        seeds = warm_start_configs(session, problem) if warm and k > 0 else []
        stop_at = None if warm else optimum / STRICT
        trials = tune_size(rec, problem, strategy, seed + 1000 * k, budget, seeds, len(session.trials), stop_at)
        session.trials.extend(trials)
        if k > 0:
            out.append((evals_to_target(trials, optimum, budget), evals_to_target(trials, optimum, budget, STRICT),
                        len(seeds)))
    return out


def mean_se(values: Sequence[float]) -> tuple[float, float]:
    m = statistics.fmean(values)
    se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0
    return m, se


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--budget", type=int, default=100, help="evaluations per size")
    parser.add_argument("--strategy", default=DEFAULT_STRATEGY)
    parser.add_argument("--gpu", default="H200")
    parser.add_argument("--templates", default=",".join(DEFAULT_TEMPLATES),
                        help=f"comma-separated, from {', '.join(SWEEPS)} (default: the five whose sweeps take "
                             "about a CPU second each; gelu and stencil take ~10x longer, sgemm's landscapes minutes)")
    args = parser.parse_args(argv)
    templates = [t for t in args.templates.split(",") if t]
    tpls = load_templates()
    print(f"warm vs cold start across sizes: simulated {args.gpu}, strategy {args.strategy}, "
          f"{args.seeds} seeds, budget {args.budget} per size, target {TARGET:.0%} of each size's optimum; "
          f"load average {os.getloadavg()[0]:.1f}")
    print()
    print("| template | sizes (2..5 compared) | configs per size | cold: evals to 95% | warm: evals to 95% | "
          "saved | cold / warm reached 95% | cold: evals to 99% | warm: evals to 99% | saved | cold / warm reached 99% | "
          "warm seeds |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    all_cold: list[float] = []
    all_warm: list[float] = []
    strict_cold: list[float] = []
    strict_warm: list[float] = []
    t0 = time.perf_counter()
    for template in templates:
        sizes = SWEEPS[template]
        problems = [tpls[template].resolve_problem(p) for p in size_grid({}, sizes)]
        recs = [landscape(template, p, args.gpu) for p in problems]
        means: dict[tuple[str, int], list[float]] = {(c, t): [] for c in ("cold", "warm") for t in (0, 1)}
        reached = {"cold": 0, "warm": 0}
        strict_reached = {"cold": 0, "warm": 0}
        count = 0
        seeds_used: list[int] = []
        for seed in range(args.seeds):
            for warm, label in ((False, "cold"), (True, "warm")):
                results = sweep(template, recs, problems, args.strategy, seed, args.budget, warm)
                means[(label, 0)].append(statistics.fmean(r[0] for r in results))
                means[(label, 1)].append(statistics.fmean(r[1] for r in results))
                reached[label] += sum(r[0] <= args.budget for r in results)
                strict_reached[label] += sum(r[1] <= args.budget for r in results)
                if warm:
                    seeds_used.extend(r[2] for r in results)
                    count += len(results)
        (cm, cse), (wm, wse) = mean_se(means[("cold", 0)]), mean_se(means[("warm", 0)])
        (sm, sse), (tm, tse) = mean_se(means[("cold", 1)]), mean_se(means[("warm", 1)])
        all_cold.extend(means[("cold", 0)])
        all_warm.extend(means[("warm", 0)])
        strict_cold.extend(means[("cold", 1)])
        strict_warm.extend(means[("warm", 1)])
        name = next(iter(sizes))
        sizes_text = f"{name} = {', '.join(_short(v) for v in sizes[name])}"
        counts = "-".join(str(sum(v is not None for v in r.latency.values())) for r in recs)
        print(f"| {template} | {sizes_text} | {counts} | {cm:.1f} ± {cse:.1f} | {wm:.1f} ± {wse:.1f} | "
              f"{(1 - wm / cm):.0%} | {reached['cold']}/{count} / {reached['warm']}/{count} | "
              f"{sm:.1f} ± {sse:.1f} | {tm:.1f} ± {tse:.1f} | {(1 - tm / sm):.0%} | "
              f"{strict_reached['cold']}/{count} / {strict_reached['warm']}/{count} | "
              f"{statistics.fmean(seeds_used):.1f} |", flush=True)
    (cm, cse), (wm, wse) = mean_se(all_cold), mean_se(all_warm)
    (sm, sse), (tm, tse) = mean_se(strict_cold), mean_se(strict_warm)
    print(f"| all | | | {cm:.1f} ± {cse:.1f} | {wm:.1f} ± {wse:.1f} | {(1 - wm / cm):.0%} | | "
          f"{sm:.1f} ± {sse:.1f} | {tm:.1f} ± {tse:.1f} | {(1 - tm / sm):.0%} | | |")
    print()
    print(f"({time.perf_counter() - t0:.0f} s; a size not at the target within the budget counts as budget + 1 = "
          f"{args.budget + 1}; ± is the standard error over {args.seeds} seeds, each seed's figure the mean over "
          f"sizes 2..5; 'all' pools the templates' per-seed figures)")
    return 0


def _short(value: int) -> str:
    if value >= 1 << 10 and value & (value - 1) == 0:
        return f"2^{value.bit_length() - 1}"
    return str(value)


if __name__ == "__main__":
    raise SystemExit(main())
