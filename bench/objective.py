"""Constrained search: how close each strategy gets to the best *feasible* config in B evaluations.

Cases are shaped like the requests people make, built by two general rules from any landscape
(a recorded Kernel Tuner cache, or a simulated landscape of one of our templates) and any
secondary metric it reports:

- ``limit``: minimise latency subject to a limit on the secondary metric that excludes the
  unconstrained optimum (the limit is the 40th percentile of the metric over successful configs,
  counted from the good end, so the 60th for a larger-is-better metric such as occupancy; or just better than the optimum's value when that is tighter);
- ``efficient``: the best value of the secondary metric subject to ``latency <= 1.2 x fastest``.

Secondary metrics: from simulated landscapes ``registers`` (fewer is better) and ``occupancy``
(more is better); from recorded ones ``compile_time_ms`` (the recorded compile time) and
``time_spread`` ((max - min) / median of the recorded repetitions, run-to-run stability).

Metric: the best feasible value found in the first B distinct evaluations divided by the feasible
optimum (``optimum / best`` for smaller-is-better, ``best / optimum`` for larger; 0 when nothing
feasible was found), mean and standard error over seeds.

Methods, all driven through ask / tell with the recorded results (what the replay backend does,
minus worker processes):

- ``random``: uniform sampling;
- ``tpe+constraints``: Optuna's TPE with the constraint values (``constraints_func``);
- ``tpe post-filtered``: Optuna's TPE on the raw objective, constraints applied afterwards;
- ``agents`` (the default strategy) with the run's objective (graded cost).

Usage::

    nice -n 10 python bench/objective.py --seeds 20 --jobs 2 --markdown /tmp/objective.md
    python bench/objective.py --seeds 3 --cases sgemm   # a quick look (substrings of the case names)
    python bench/objective.py --cache ~/ktw-objective.json   # keep the baselines' runs: reruns are incremental

With ``--cache`` every run of a method other than ``agents`` is kept in a JSON file (keyed by case,
method, seed and budget) and read back on the next call, so the slow baselines run once and a
changed default strategy is compared with them paired by seed. ``agents`` runs are never cached:
they are what changes between calls.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from workbench.core.domain.measurement import LATENCY, Measurement, Status, Trial  # noqa: E402
from workbench.core.domain.objective import Bound, Constraints, Weights  # noqa: E402
from workbench.core.domain.search_objective import Objective  # noqa: E402
from workbench.core.domain.space import Config, SearchSpace, Slot  # noqa: E402
from workbench.core.errors import WorkbenchError  # noqa: E402
from workbench.search.base import create_strategy, strategy_class  # noqa: E402

LANDSCAPE_DIR = os.path.join(ROOT, "..", "shared", "landscapes")
BUDGETS = (25, 50, 100)
SIM_TEMPLATES = ("sgemm", "conv2d", "transpose")
#: Secondary metrics and their direction (+1 larger is better), by where they come from.
SIM_SECONDARY = (("registers", -1), ("occupancy", +1))
RECORDED_SECONDARY = (("compile_time_ms", -1), ("time_spread", -1))
METHODS = {
    "random": ("random", {}),
    "tpe+constraints": ("tpe", {"constraints": "optuna"}),
    "tpe post-filtered": ("tpe", {"constraints": "ignore"}),
    "agents": ("agents", {}),
}


@dataclass
class Landscape:
    name: str
    space: SearchSpace
    records: dict[str, dict[str, float] | None]  # config id -> metrics (None: failed)
    simulated: bool


@dataclass
class Case:
    name: str
    landscape: str
    objective: Objective
    target: str  # the metric whose best feasible value is scored
    direction: int
    optimum: float


def _group(name: str) -> str:
    lowered = name.lower()
    for hint, group in (("block", "launch"), ("thread", "launch"), ("tile", "memory"), ("shmem", "memory"),
                        ("padding", "memory"), ("read_only", "memory"), ("cmem", "memory"), ("vector", "memory")):
        if hint in lowered:
            return group
    return "compute"


def load_kt(path: str) -> Landscape:
    """A Kernel Tuner cache (plain or gzipped JSON), read in place, with the recorded extras."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as fh:
        data = json.load(fh)
    keys = data["tune_params_keys"]
    tunable = [k for k in keys if len(data["tune_params"][k]) > 1]
    slots = [Slot(k, tuple(data["tune_params"][k]), group=_group(k)) for k in tunable]
    points, records = [], {}
    for record in data["cache"].values():
        config = Config({k: record[k] for k in tunable})
        if config.id in records:
            continue
        t = record.get("time")
        ok = isinstance(t, (int, float)) and "__error__" not in record and math.isfinite(t) and t > 0
        points.append(config)
        if not ok:
            records[config.id] = None
            continue
        metrics = {LATENCY: float(t)}
        if isinstance(record.get("compile_time"), (int, float)):
            metrics["compile_time_ms"] = float(record["compile_time"])
        times = [x for x in record.get("times") or [] if isinstance(x, (int, float))]
        if len(times) >= 2:
            metrics["time_spread"] = (max(times) - min(times)) / float(np.median(times))
        records[config.id] = metrics
    name = os.path.basename(path).split(".")[0]
    return Landscape(name, SearchSpace.explicit(slots, points), records, simulated=False)


def load_sim(template: str) -> Landscape:
    from landscapes_sim import simulate

    rec = simulate(template, "H200")
    records: dict[str, dict[str, float] | None] = {}
    for cid, latency in rec.latency.items():
        records[cid] = None if latency is None else {LATENCY: float(latency), **rec.metrics.get(cid, {})}
    return Landscape(rec.name, rec.space, records, simulated=True)


def _values(land: Landscape, metric: str) -> dict[str, float]:
    return {cid: m[metric] for cid, m in land.records.items() if m is not None and metric in m}


def build_cases(land: Landscape, secondary: tuple[tuple[str, int], ...]) -> list[Case]:
    """The two request shapes for every secondary metric the landscape reports and that varies."""
    latency = _values(land, LATENCY)
    fastest_id = min(latency, key=latency.__getitem__)
    out: list[Case] = []
    for metric, direction in secondary:
        values = _values(land, metric)
        if len(values) < 0.9 * len(latency) or len(set(values.values())) < 3:
            continue
        word = "max" if direction > 0 else "min"
        weights = Weights({metric: 1.0}, directions={metric: direction})
        # efficient: best secondary metric within 1.2 x the fastest latency
        limit = 1.2 * latency[fastest_id]
        feasible = [values[c] for c in values if latency[c] <= limit]
        optimum = max(feasible) if direction > 0 else min(feasible)
        out.append(Case(f"{land.name}: {word} {metric}, latency <= 1.2x fastest", land.name,
                        Objective(Constraints(max_latency_ms=limit), weights), metric, direction, optimum))
        # limit: fastest latency under a limit on the metric that excludes the unconstrained optimum
        arr = np.array(list(values.values()))
        at_opt = values.get(fastest_id)
        if at_opt is None:
            continue
        if direction < 0:
            q = float(np.quantile(arr, 0.4))
            bound = Bound(metric, "<=", min(q, float(np.max(arr[arr < at_opt]))) if np.any(arr < at_opt) else q)
        else:
            q = float(np.quantile(arr, 0.6))
            bound = Bound(metric, ">=", max(q, float(np.min(arr[arr > at_opt]))) if np.any(arr > at_opt) else q)
        if bound.check(at_opt):
            continue
        feasible = [latency[c] for c in values if bound.check(values[c])]
        if not feasible:
            continue
        out.append(Case(f"{land.name}: min latency, {bound.shown}", land.name,
                        Objective(Constraints(extra=(bound,))), LATENCY, -1, min(feasible)))
    return out


_LANDS: dict[str, Landscape] = {}
_CASES: dict[str, Case] = {}
_DIGESTS: dict[str, str] = {}  # landscape name -> landscape_digest, for the baselines' cache keys


def case_filters(given: list[str]) -> list[str] | None:
    """``--cases`` values as substrings of case names (None: every case): each value split at its
    commas, except a value that holds ", ", which only a case name does ("sgemm: min latency,
    registers <= 80"): split, it selected every case with "min latency" in it."""
    out = [part for value in given for part in ([value] if ", " in value else value.split(",")) if part]
    return out or None


def _init(selected: list[str] | None, variant: dict[str, str] | None = None) -> None:
    """Load the landscapes and build the cases ``selected`` names (all: None); the agents run with
    ``variant``'s options. Called again in one process (a paired comparison), it starts over."""
    METHODS["agents"] = ("agents", dict(variant or {}))
    _LANDS.clear()
    _CASES.clear()
    lands = [load_sim(t) for t in SIM_TEMPLATES]
    paths = sorted(glob.glob(os.path.join(LANDSCAPE_DIR, "*.json")))
    lands += [load_kt(p) for p in paths]
    for land in lands:
        secondary = SIM_SECONDARY if land.simulated else RECORDED_SECONDARY
        _LANDS[land.name] = land
        for case in build_cases(land, secondary):
            if not selected or any(s in case.name for s in selected):
                _CASES[case.name] = case


def run_once(case_name: str, method: str, seed: int, budget: int) -> list[float]:
    """Per evaluation: the target value if the trial is feasible, else NaN (failures count)."""
    case = _CASES[case_name]
    land = _LANDS[case.landscape]
    name, options = METHODS[method]
    strategy = create_strategy(name, land.space, seed=seed, **options)
    strategy.set_objective(case.objective)
    seen: set[str] = set()
    out: list[float] = []
    while len(out) < budget:
        configs = strategy.ask(1)
        if not configs:
            break
        trials = []
        for config in configs:
            if config.id in seen:
                continue
            seen.add(config.id)
            metrics = land.records.get(config.id)
            m = (Measurement.failure(Status.RUNTIME_ERROR, "recorded failure") if metrics is None
                 else Measurement(Status.OK, metrics))
            trial = Trial(len(out), config, m)
            ok = case.objective.feasible(trial) and math.isfinite(trial.metric(case.target))
            out.append(trial.metric(case.target) if ok else math.nan)
            trials.append(trial)
        strategy.tell(trials)
    return out


def overhead(case_name: str, budget: int, constrained: bool = True) -> tuple[float, int]:
    """The agents' own CPU time (ask + tell, ``time.process_time``) per config over one run of
    ``budget`` evaluations (seed 0), with the case's objective or with latency alone."""
    case = _CASES[case_name]
    land = _LANDS[case.landscape]
    name, options = METHODS["agents"]
    strategy = create_strategy(name, land.space, seed=0, **options)
    if constrained:
        strategy.set_objective(case.objective)
    spent, done = 0.0, 0
    while done < budget:
        t0 = time.process_time()
        configs = strategy.ask(1)
        spent += time.process_time() - t0
        if not configs:
            break
        metrics = land.records.get(configs[0].id)
        m = (Measurement.failure(Status.RUNTIME_ERROR, "recorded failure") if metrics is None
             else Measurement(Status.OK, metrics))
        t0 = time.process_time()
        strategy.tell([Trial(done, configs[0], m)])
        spent += time.process_time() - t0
        done += 1
    return 1000.0 * spent / max(done, 1), done


def score(values: list[float], case: Case, budget: int) -> float:
    got = [v for v in values[:budget] if not math.isnan(v)]
    if not got:
        return 0.0
    best = max(got) if case.direction > 0 else min(got)
    if case.direction > 0:
        return best / case.optimum if case.optimum > 0 else 1.0
    return case.optimum / best if best > 0 else 1.0


def _job(args: tuple) -> tuple[str, str, int, list[float], float]:
    case, method, seed, budget = args
    t0 = time.perf_counter()
    values = run_once(case, method, seed, budget)
    return case, method, seed, values, time.perf_counter() - t0


def landscape_digest(land: Landscape) -> str:
    """A digest of every config's recorded figures: a landscape whose data changed (a simulator
    model edited away from the configs a case's name depends on) gets new cache keys."""
    from landscapes_sim import data_digest

    return data_digest(land.records)


def _cache_key(case: str, method: str, seed: int, budget: int) -> str:
    """Case, the digest of its landscape's data, method, seed and budget."""
    data = ""
    if case in _CASES:  # computed on first use: only the parent process builds cache keys
        name = _CASES[case].landscape
        if name not in _DIGESTS and name in _LANDS:
            _DIGESTS[name] = landscape_digest(_LANDS[name])
        data = _DIGESTS.get(name, "")
    return json.dumps([case, data, method, seed, budget])


def _load_cache(path: str | None) -> dict[str, list[float]]:
    if not path or not os.path.exists(path):
        return {}
    try:
        with open(path) as fh:
            data = json.load(fh)
    except (OSError, ValueError) as exc:
        raise SystemExit(f"cannot read the cache {path}: {exc}") from None
    if not isinstance(data, dict) or data.get("kind") != "bench-objective-runs":
        raise SystemExit(f"{path} is not a cache of bench/objective.py; not touching it")
    return {k: [math.nan if v is None else float(v) for v in vals] for k, vals in data["runs"].items()}


def _save_cache(path: str, cache: dict[str, list[float]]) -> None:
    """Write atomically (a crash keeps the previous file); NaN is stored as null."""
    runs = {k: [None if math.isnan(v) else v for v in vals] for k, vals in cache.items()}
    tmp = path + ".tmp"
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)  # a new --cache in a new folder: made rather than losing the runs
    with open(tmp, "w") as fh:
        json.dump({"kind": "bench-objective-runs", "runs": runs}, fh)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--cases", action="append", default=[],
                        help="substrings of case names, comma-separated or repeated; a whole case name "
                             "(it holds ', ') is one")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--markdown", default=None)
    parser.add_argument("--agents-option", action="append", default=[], metavar="NAME=VALUE",
                        help="an option of the agents for this call (a variant; repeatable)")
    parser.add_argument("--runs-out", default=None, help="write every run's per-evaluation values to this JSON file")
    parser.add_argument("--cache", default=None, help="JSON file keeping the baselines' runs (not agents)")
    parser.add_argument("--overhead", type=int, default=0, metavar="N",
                        help="instead: the agents' CPU ms per config over N evaluations per case, with and without its bounds")
    args = parser.parse_args(argv)
    for flag, path in (("--markdown", args.markdown), ("--runs-out", args.runs_out)):
        if path and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            parser.error(f"{flag} {path}: its folder does not exist")  # said now, not after the runs
    selected = case_filters(args.cases)
    methods = args.methods.split(",")
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        parser.error(f"--methods: no method {', '.join(unknown)} (there are: {', '.join(METHODS)})")
    if args.seeds < 2 or args.jobs < 1:
        parser.error("--seeds: at least 2 (a standard error needs two); --jobs: at least 1")
    bad = [item for item in args.agents_option if "=" not in item]
    if bad:
        parser.error(f"--agents-option {bad[0]}: NAME=VALUE")
    variant = dict(item.split("=", 1) for item in args.agents_option)
    try:  # said now, once, not as a traceback from every worker
        strategy_class("agents").validate_options(variant)
    except WorkbenchError as exc:
        parser.error(f"--agents-option: {exc}")
    if not os.path.isdir(LANDSCAPE_DIR):
        print(f"warning: {os.path.normpath(LANDSCAPE_DIR)} is missing: only the simulated landscapes' cases run "
              "(the recorded landscapes are read from ../shared/landscapes beside the checkout)", file=sys.stderr)
    _init(selected, variant)
    if not _CASES:
        parser.error(f"--cases {', '.join(args.cases)}: no case name contains any of these (names are like "
                     f"'sim_H200_sgemm: min latency, registers <= 80')")
    if args.overhead:
        print("| case | evaluations | constrained ms/config | latency alone ms/config |")
        print("|---|---|---|---|")
        for c in _CASES:
            with_bounds, done = overhead(c, args.overhead)
            without, _ = overhead(c, args.overhead, constrained=False)
            print(f"| {c} | {done} | {with_bounds:.2f} | {without:.2f} |", flush=True)
        return 0
    budget = max(BUDGETS)
    cache = _load_cache(args.cache)
    runs: dict[tuple[str, str, int], list[float]] = {}
    jobs = []
    for c in _CASES:
        for m in methods:
            for s in range(args.seeds):
                key = _cache_key(c, m, s, budget)
                if m != "agents" and key in cache:
                    runs[(c, m, s)] = cache[key]
                else:
                    jobs.append((c, m, s, budget))
    print(f"{len(_CASES)} cases x {len(methods)} methods x {args.seeds} seeds: {len(jobs)} runs to do, "
          f"{len(runs)} from the cache", file=sys.stderr)
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    with ProcessPoolExecutor(args.jobs, initializer=_init, initargs=(selected, variant)) as pool:
        for done, (case, method, seed, values, spent) in enumerate(pool.map(_job, jobs, chunksize=1), 1):
            runs[(case, method, seed)] = values
            seconds[method] = seconds.get(method, 0.0) + spent
            if args.cache and method != "agents":
                cache[_cache_key(case, method, seed, budget)] = values
                if done % 20 == 0:
                    _save_cache(args.cache, cache)
            if done % 50 == 0:
                print(f"  {done}/{len(jobs)} runs, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    if args.cache:
        _save_cache(args.cache, cache)
    if args.runs_out:
        with open(args.runs_out, "x") as fh:  # never over another file
            json.dump({"budgets": BUDGETS, "cases": {
                c: {"optimum": case.optimum, "direction": case.direction,
                    "runs": {m: [[None if math.isnan(v) else v for v in runs[(c, m, s)]] for s in range(args.seeds)]
                             for m in methods}}
                for c, case in _CASES.items()}}, fh)
    results: dict[tuple[str, str], list[list[float]]] = {}
    for c in _CASES:
        for m in methods:
            results[(c, m)] = [runs[(c, m, s)] for s in range(args.seeds)]
    lines = ["| case | feasible | method | " + " | ".join(f"B={b}" for b in BUDGETS) + " |",
             "|---|---|---|" + "---|" * len(BUDGETS)]
    for case_name, case in _CASES.items():
        land = _LANDS[case.landscape]
        n_ok = sum(m is not None for m in land.records.values())
        n_feasible = sum(
            case.objective.feasible(Trial(0, Config({}), Measurement(Status.OK, m))) for m in land.records.values() if m
        )
        label = f"{n_feasible}/{len(land.records)}" + (" (simulated)" if land.simulated else "")
        for method in methods:
            runs = results[(case_name, method)]
            cells = []
            for b in BUDGETS:
                s = np.array([score(v, case, b) for v in runs])
                cells.append(f"{s.mean():.3f} ± {s.std(ddof=1) / math.sqrt(len(s)) if len(s) > 1 else 0:.3f}")
            lines.append(f"| {case_name} | {label} | {method} | " + " | ".join(cells) + " |")
        del n_ok
    lines.append("")
    ran = {m: sum(1 for j in jobs if j[1] == m) for m in methods}
    lines.append("strategy seconds per run (mean, runs done now): " + ", ".join(
        f"{m} {seconds[m] / ran[m]:.2f}" for m in methods if ran[m]))
    table = "\n".join(lines)
    print(table)
    if args.markdown:
        with open(args.markdown, "w") as fh:
            fh.write(f"{args.seeds} seeds, {time.perf_counter() - t0:.0f} s\n\n{table}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
