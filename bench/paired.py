"""What a change of a strategy's options does, seed by seed: a paired comparison on the benchmark's landscapes.

Both sides run the same seeds on the same landscapes, so each seed gives a difference (variant minus
base) of the fraction of the optimum at every budget, and the luck of a seed (a start that happens
to land near the optimum) is shared by both. The standard error of the mean difference is then
several times smaller than that of either mean, which is what lets a screen of 50 seeds tell a
real +0.005 from noise; comparing two independent tables could not. Every "paired" figure of
docs/strategies.md and docs/objective.md is of this kind.

Two modes:

- the strategy benchmark's landscapes (``bench/strategies.py``: the recorded Kernel Tuner caches,
  read in place, and ``--sim`` templates; metric: optimum / best latency in the first B distinct
  evaluations, B = 25, 50, 100, 200);
- ``--constrained``: the constrained cases of ``bench/objective.py`` (metric: best feasible value /
  feasible optimum, B = 25, 50, 100), for the agents only.

Per landscape (case): the variant's mean and the mean difference ± its standard error. Then the
mean of the per-landscape differences, ± the standard error of that mean (the landscapes' standard
errors combined: sqrt(sum se^2) / n): over the measured landscapes (simulated ones are model
predictions and stay out, as in ``bench/strategies.py``'s summary), or over every constrained case
(as ``docs/objective.md`` averages them).

Usage::

    python bench/paired.py --variant patience=4 --seeds 50
    python bench/paired.py --base design=1 --variant design=4 --seeds 50 --first-seed 50
    python bench/paired.py --strategy genetic --variant population=40 --landscapes convolution --sim none
    python bench/paired.py --constrained --variant feasibility=0 --seeds 20 --cases sgemm
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import objective  # the benchmark modules put the repository on sys.path for what follows
import strategies

from workbench.core.errors import WorkbenchError
from workbench.search.base import STRATEGIES, create_strategy

#: (landscape or case, seed) -> the metric at each budget
Fractions = dict[tuple[str, int], list[float]]


@dataclass(frozen=True)
class Paired:
    """One landscape's comparison at one budget: the variant's mean, and the mean paired difference ± its SE."""

    mean: float
    diff: float
    se: float


def paired(base: Fractions, variant: Fractions, names: Sequence[str], seeds: Sequence[int],
           budgets: int) -> dict[str, list[Paired]]:
    """Per name, per budget index: the variant's mean and the mean of (variant - base) over ``seeds``, ± its SE."""
    out: dict[str, list[Paired]] = {}
    for name in names:
        row = []
        for i in range(budgets):
            diffs = [variant[(name, s)][i] - base[(name, s)][i] for s in seeds]
            n = len(diffs)
            mean_diff = sum(diffs) / n
            se = math.sqrt(sum((d - mean_diff) ** 2 for d in diffs) / (n - 1) / n) if n > 1 else 0.0
            row.append(Paired(sum(variant[(name, s)][i] for s in seeds) / n, mean_diff, se))
        out[name] = row
    return out


def summary(rows: dict[str, list[Paired]], names: Sequence[str]) -> list[tuple[float, float]]:
    """Per budget: the mean over ``names`` of their mean differences, ± the SE of that mean."""
    if not names:
        return []
    width = len(rows[names[0]])
    return [(sum(rows[n][i].diff for n in names) / len(names),
             math.sqrt(sum(rows[n][i].se ** 2 for n in names)) / len(names)) for i in range(width)]


def table(rows: dict[str, list[Paired]], simulated: Sequence[str], summarised: Sequence[str],
          budgets: Sequence[int], label: str) -> str:
    """Markdown: a row per landscape (case), then the summary over ``summarised`` (``label`` names them)."""
    lines = [f"| {label} | " + " | ".join(f"B={b}" for b in budgets) + " |",
             "|---|" + "---|" * len(budgets)]
    for name, row in rows.items():
        shown = f"{name} (simulated)" if name in simulated else name
        lines.append(f"| {shown} | " + " | ".join(f"{p.mean:.3f} ({p.diff:+.4f} ± {p.se:.4f})" for p in row) + " |")
    if summarised:
        cells = " | ".join(f"{d:+.4f} ± {se:.4f}" for d, se in summary(rows, summarised))
        lines.append(f"| mean over the {len(summarised)} {label}s | {cells} |")
    return "\n".join(lines)


# --- the strategy benchmark's landscapes -------------------------------------------------------
_LANDS: dict[str, strategies.Landscape] = {}


def _init_landscapes(lands: dict[str, strategies.Landscape]) -> None:
    _LANDS.clear()
    _LANDS.update(lands)


def _landscape_job(job: tuple[str, str, int, dict[str, Any]]) -> tuple[str, int, list[float]]:
    name, strategy, seed, options = job
    land = _LANDS[name]
    values, _ = strategies.run_once(land, strategy, seed, max(strategies.BUDGETS), options)
    return name, seed, strategies.fractions(values, land.optimum)


def run_landscapes(lands: Sequence[strategies.Landscape], strategy: str, options: dict[str, Any],
                   seeds: Sequence[int], jobs: int) -> Fractions:
    """Every landscape x seed with ``options``: the fraction of the optimum at each of strategies.BUDGETS."""
    work = [(land.name, strategy, seed, options) for land in lands for seed in seeds]
    by_name = {land.name: land for land in lands}
    if jobs <= 1:
        _init_landscapes(by_name)
        return {(n, s): f for n, s, f in map(_landscape_job, work)}
    with ProcessPoolExecutor(jobs, initializer=_init_landscapes, initargs=(by_name,)) as pool:
        return {(n, s): f for n, s, f in pool.map(_landscape_job, work, chunksize=4)}


# --- the constrained cases -----------------------------------------------------------------------
def _case_job(job: tuple[str, int]) -> tuple[str, int, list[float]]:
    case_name, seed = job
    case = objective._CASES[case_name]
    values = objective.run_once(case_name, "agents", seed, max(objective.BUDGETS))
    return case_name, seed, [objective.score(values, case, b) for b in objective.BUDGETS]


def run_cases(selected: list[str] | None, options: dict[str, str], seeds: Sequence[int], jobs: int) -> Fractions:
    """Every constrained case x seed, the agents with ``options``: the score at each of objective.BUDGETS."""
    work = [(c, seed) for c in objective._CASES for seed in seeds]
    if jobs <= 1:
        objective._init(selected, options)
        return {(c, s): f for c, s, f in map(_case_job, work)}
    with ProcessPoolExecutor(jobs, initializer=objective._init, initargs=(selected, options)) as pool:
        return {(c, s): f for c, s, f in pool.map(_case_job, work, chunksize=2)}


def _options(items: list[str], flag: str, error: Callable[[str], Any]) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            error(f"{flag} {item!r}: expected NAME=VALUE")
        out[name] = value
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=VALUE",
                    help="an option of the variant (repeatable); the base is the strategy's defaults plus --base")
    ap.add_argument("--base", action="append", default=[], metavar="NAME=VALUE",
                    help="an option both sides get (repeatable), e.g. to screen against an older default")
    ap.add_argument("--strategy", default="agents", help="the strategy compared with itself (landscape mode)")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=0, help="seeds first..first+seeds-1 (fresh seeds to confirm a screen)")
    ap.add_argument("--landscapes", default="", help="comma-separated name filters (landscape mode)")
    ap.add_argument("--sim", default="none", help="templates added as simulated landscapes (comma-separated; 'none' for none)")
    ap.add_argument("--constrained", action="store_true", help="the constrained cases of bench/objective.py instead")
    ap.add_argument("--cases", action="append", default=[],
                    help="substrings of case names (--constrained), as bench/objective.py takes them")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    base = _options(args.base, "--base", ap.error)
    variant = {**base, **_options(args.variant, "--variant", ap.error)}
    if not args.variant or variant == base:
        ap.error("--variant NAME=VALUE: at least one option that differs from the base")
    if args.seeds < 2:
        ap.error("--seeds: at least 2 (a standard error needs two)")
    if args.first_seed < 0 or args.jobs < 1:
        ap.error("--first-seed: 0 or more; --jobs: at least 1")
    if args.constrained and args.strategy != "agents":
        ap.error("--constrained compares the agents only (bench/objective.py runs the others as baselines)")
    if args.strategy not in STRATEGIES:
        ap.error(f"--strategy {args.strategy}: one of {', '.join(STRATEGIES)}")
    for options in (base, variant):  # said now, once, not as a traceback from every worker
        try:
            create_strategy(args.strategy, strategies._probe_landscape().space, **options)
        except WorkbenchError as exc:
            ap.error(str(exc))
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    t0 = time.perf_counter()
    if args.constrained:
        selected = objective.case_filters(args.cases)
        objective._init(selected, base)
        names = list(objective._CASES)
        if not names:
            ap.error(f"--cases {', '.join(args.cases)}: no constrained case matches")
        before = run_cases(selected, base, seeds, args.jobs)
        after = run_cases(selected, variant, seeds, args.jobs)
        simulated = [n for n in names if objective._LANDS[objective._CASES[n].landscape].simulated]
        summarised = names  # every case, as docs/objective.md averages them
        budgets: Sequence[int] = objective.BUDGETS
        label = "case"
    else:
        selected = [s for s in args.landscapes.split(",") if s] or None
        lands = strategies.landscapes(selected)
        for template in (t for t in args.sim.split(",") if t and t != "none"):
            sim = strategies.simulated_landscape(template)
            if strategies.wanted(sim.name, selected):
                lands.append(sim)
        if not lands:
            ap.error(f"--landscapes {args.landscapes}: no landscape matches")
        names = [land.name for land in lands]
        before = run_landscapes(lands, args.strategy, dict(base), seeds, args.jobs)
        after = run_landscapes(lands, args.strategy, dict(variant), seeds, args.jobs)
        simulated = [land.name for land in lands if land.simulated]
        summarised = [n for n in names if n not in simulated]  # model predictions stay out, as in bench/strategies.py
        budgets = strategies.BUDGETS
        label = "measured landscape"
    rows = paired(before, after, names, seeds, len(budgets))
    changed = ", ".join(f"{k}={v}" for k, v in variant.items() if base.get(k) != v)
    print(f"{args.strategy if not args.constrained else 'agents'}: variant {changed} against "
          f"{', '.join(f'{k}={v}' for k, v in base.items()) or 'the defaults'}; seeds {seeds[0]} to {seeds[-1]}; "
          f"{time.perf_counter() - t0:.0f} s. A cell: the variant's mean (the mean of variant - base, seed by seed, "
          f"± its standard error).\n")
    print(table(rows, simulated, summarised, budgets, label))
    return 0


if __name__ == "__main__":
    sys.exit(main())
