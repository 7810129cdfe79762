"""Speed of the core computations the views and the simulator lean on, against their targets.

The test suite checks what these functions compute; how fast they do it is measured here, where a
slow or busy machine changes a number in a table instead of failing CI. Each row is timed
``--repeat`` times (after one warm-up call) in CPU seconds of this process and in wall seconds;
the table gives the median, the mean and its standard error, and the target:

- ``rank``: re-rank 20,000 trials under three constraints and four weights (a slider move in the
  window does this): target 25 ms.
- ``predict``: one performance-model prediction with every term active: target 1 ms.
- ``importance``: slot importance of 5,000 trials, subsampled to 2,000 (the analysis view): target
  1 s (the view computes it off the GUI thread).
- ``library``: list the shipped template library again and hash every template (each command,
  each session opened and the window's kernel list do this): target 20 ms.

Session save and load (100,000 trials, target 2 s each) is ``bench/session_io.py``; simulated
evaluations per second ``bench/sim_speed.py``; space counting and sampling ``bench/space_sampling.py``.

    python bench/core_speed.py [--repeat 15] [--seed 0]

(with the package importable: an editable install, or ``PYTHONPATH=.``)
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from dataclasses import replace
from typing import Callable

import numpy as np

from workbench.core.model.gpus import load_gpu
from workbench.core.domain.importance import slot_importance
from workbench.core.domain.measurement import Measurement, Status, Trial
from workbench.core.domain.objective import Constraints, MetricTable, Weights, rank
from workbench.core.model.perfmodel import predict
from workbench.core.domain.space import Config, SearchSpace, Slot
from workbench.core.domain.templates import WorkProfile, load_templates


def rank_case(seed: int) -> Callable[[], object]:
    """20,000 trials, one in 17 failed, four metrics drawn uniformly."""
    rng = np.random.default_rng(seed)
    trials = []
    for i in range(20_000):
        config = Config({"i": i})
        if i % 17 == 0:
            trials.append(Trial(i, config, Measurement.failure(Status.COMPILE_ERROR, "error")))
            continue
        lat, mem, quality, gbs = rng.uniform([0.1, 10, 0.9, 100], [10, 1000, 1.0, 900])
        trials.append(Trial(i, config, Measurement(Status.OK, {
            "latency_ms": lat, "memory_mb": mem, "quality": quality, "throughput_gbs": gbs})))
    table = MetricTable.from_trials(trials)
    constraints = Constraints(max_latency_ms=5, max_memory_mb=800, min_quality=0.95)
    weights = Weights({"latency_ms": 1, "memory_mb": 0.3, "throughput_gbs": 0.5, "quality": 0.1})
    return lambda: rank(table, constraints, weights)


def predict_case(seed: int) -> Callable[[], object]:
    """A streaming kernel with shared memory, bank conflicts, atomics, syncs, spills and transcendentals."""
    del seed  # deterministic
    n = 1 << 24
    gpu = load_gpu("H200")
    profile = replace(WorkProfile(bytes_read=8.0 * n, bytes_written=4.0 * n, flops=2.0 * n), smem_accesses=n,
                      bank_conflict_ways=2, atomics=1000, syncs_per_block=2, transcendentals=n)
    resources = {"registers": 40, "smem_bytes": 4096, "spill_store_bytes": 8, "spill_load_bytes": 8, "estimated": True}
    grid = (-(-n // 256), 1, 1)
    return lambda: predict(gpu, profile, grid, (256, 1, 1), resources)


def importance_case(seed: int) -> Callable[[], object]:
    """5,000 trials over four slots whose latency depends on two of them, subsampled to 2,000."""
    slots = [Slot("block", (32, 64, 128, 256, 512, 1024)), Slot("vec", (1, 2, 4)), Slot("unroll", (False, True)),
             Slot("mode", ("tree", "atomic", "warp"))]
    space = SearchSpace(slots)
    rng = np.random.default_rng(seed)
    trials = []
    for i in range(5000):
        config = space.config({s.name: s.values[rng.integers(len(s.values))] for s in slots})
        block, vec = int(config["block"]), int(config["vec"])
        latency = math.exp(abs(math.log2(block) - 8) * 0.6 + {1: 0.3, 2: 0.1, 4: 0.0}[vec])
        trials.append(Trial(i, config, Measurement(Status.OK, {"latency_ms": latency * (1 + 0.01 * rng.standard_normal())})))
    names = [s.name for s in slots]
    domains = {s.name: list(s.values) for s in slots}
    return lambda: slot_importance(trials, names, domains=domains, max_trials=2000)


def library_case(seed: int) -> Callable[[], object]:
    """Every shipped template loaded (its spec imported) and its source hash taken."""
    del seed  # deterministic
    return lambda: [template.source_hash() for template in load_templates().values()]


#: name, builder, what one call is, target seconds per call, calls per timing.
CASES = (
    ("rank", rank_case, "20,000 trials", 0.025, 1),
    ("predict", predict_case, "one prediction", 0.001, 500),
    ("importance", importance_case, "5,000 trials -> 2,000", 1.0, 1),
    ("library", library_case, "all specs, load + hash", 0.02, 5),
)


def timed(fn: Callable[[], object], calls: int) -> tuple[float, float]:
    """(CPU seconds, wall seconds) per call, over ``calls`` calls."""
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.process_time() - cpu) / calls, (time.perf_counter() - wall) / calls


def summary(values: list[float]) -> tuple[float, float, float]:
    """Median, mean and standard error of the mean."""
    se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else float("nan")
    return statistics.median(values), statistics.fmean(values), se


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(f"{'case':<11} {'one call':<22} {'cpu median':>11} {'cpu mean ± se':>19} {'wall median':>12} "
          f"{'target':>9} {'met':>4}")
    missed = 0
    for name, build, what, target, calls in CASES:
        fn = build(args.seed)
        fn()  # warm-up: imports, caches
        cpus, walls = zip(*(timed(fn, calls) for _ in range(args.repeat)))
        cpu_median, cpu_mean, cpu_se = summary(list(cpus))
        wall_median, _, _ = summary(list(walls))
        met = cpu_median <= target
        missed += not met
        print(f"{name:<11} {what:<22} {cpu_median * 1e3:>8.3f} ms {f'{cpu_mean * 1e3:.3f} ± {cpu_se * 1e3:.3f} ms':>19} "
              f"{wall_median * 1e3:>9.3f} ms {target * 1e3:>6.0f} ms {'yes' if met else 'NO':>4}")
    print(f"repeats {args.repeat}, seed {args.seed}; times per call")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
