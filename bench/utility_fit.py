"""What the default strategy's utility fit costs as its feature count grows.

The fit (``workbench.search.utility``) runs once a round and is cubic in the number of features
(one per slot value, plus value pairs of interacting slots). Two tables:

1. the fit alone, ``UtilityModel.fit`` against the three dense passes it replaced (solve for the
   mean, invert the precision, factor the covariance), median of ``--repeats`` fits each;
2. the agents' own time (ask + tell) per config over ``--evaluations`` evaluations of a synthetic
   space of two slots (an ordered one of ``features - 8`` values and one of 8), a smooth landscape
   with 5 % noise, seed 0: what a long run pays per config where a space has that many values.

    python bench/utility_fit.py [--features 309,512,1024,2048] [--evaluations 1000]

Wall-clock times with one BLAS thread, as the other benchmarks (``bench/strategies.py``, imported
first, asks for it before NumPy and SciPy load their BLAS).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from strategies import Landscape, run_once  # first: it sets the BLAS threads before NumPy loads

import numpy as np
from workbench.core.domain.space import SearchSpace, Slot
from workbench.search.utility import Posterior, UtilityModel


def fed_model(features: int, rows: int = 200, seed: int = 0) -> UtilityModel:
    """A model of one ordered slot of ``features`` values, fed ``rows`` random rows in rounds of 8."""
    rng = np.random.default_rng(seed)
    model = UtilityModel([features], [True], [[0]])
    for _ in range(rows // 8):
        model.accumulate([[int(rng.integers(features))] for _ in range(8)], rng.random(8))
    return model


def three_pass_fit(model: UtilityModel) -> tuple[np.ndarray, np.ndarray]:
    """The fit as it was: a solve, an inverse and a second factorisation, each cubic."""
    a = model.gram + model.prior
    mean = np.linalg.solve(a, model.xty)
    sse = model.yy - 2.0 * float(mean @ model.xty) + float(mean @ model.gram @ mean)
    cov = np.linalg.inv(a) * max(0.05, sse / model.n_rows)
    return mean, np.linalg.cholesky(0.5 * (cov + cov.T) + 1e-12 * np.eye(len(mean)))


def median_seconds(call, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def per_config_ms(features: int, evaluations: int, seed: int = 0) -> float:
    """The agents' ask + tell time per config over ``evaluations`` distinct evaluations
    (``bench/strategies.py``'s ``run_once`` on the synthetic landscape)."""
    wide = features - 8
    space = SearchSpace([Slot("x", tuple(range(wide))), Slot("y", tuple(range(8)))])
    noise = np.random.default_rng(seed)
    latency: dict[str, float | None] = {}
    for config in space:
        x, y = config["x"], config["y"]
        latency[config.id] = (1.0 + ((x - 0.6 * wide) / (0.25 * wide)) ** 2 + abs(y - 5) / 8) * (1.0 + 0.05 * noise.random())
    values, spent = run_once(Landscape(f"synthetic_{features}", space, latency, {}), "agents", seed, evaluations, {})
    return 1000.0 * spent / max(len(values), 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--features", default="309,512,1024,2048", help="comma-separated feature counts")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--evaluations", type=int, default=1000, help="0: skip the per-config table")
    args = parser.parse_args(argv)
    counts = [int(x) for x in args.features.split(",") if x.strip()]
    if any(n < 16 for n in counts):
        parser.error("--features: each count must be at least 16")
    print("| features | three passes ms | one factorisation ms | ratio |")
    print("|---|---|---|---|")
    for n in counts:
        model = fed_model(n)
        def fresh(model: UtilityModel = model) -> Posterior:  # model.fit() keeps its fit: timed again, it costs nothing
            return Posterior(model.gram + model.prior, model.xty, model.gram, model.yy, model.n_rows)

        fresh()  # warm: the first fit also imports SciPy's solvers, which a run pays once
        before = median_seconds(lambda: three_pass_fit(model), args.repeats)
        after = median_seconds(fresh, args.repeats)
        print(f"| {n:,} | {1000 * before:.1f} | {1000 * after:.1f} | {before / after:.1f}x |")
    if args.evaluations > 0:
        print()
        print(f"| features | agents ms per config over {args.evaluations:,} evaluations |")
        print("|---|---|")
        for n in counts:
            value = per_config_ms(n, args.evaluations)
            print(f"| {n:,} | {value:.2f} |" if math.isfinite(value) else f"| {n:,} | - |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
