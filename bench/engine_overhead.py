"""Engine overhead: evaluations per second through the worker pool with a trivial benchmark.

The benchmark's ``measure`` does no work, so the numbers are the cost of the machinery itself:
pickling a config, a pipe round trip, phase reports, and the parent's bookkeeping. Run:
``python bench/engine_overhead.py [--evals N]``. Prints one table row per worker count, for the
bare pool, for the full engine loop (strategy, dedupe, session, events), and for the engine
writing a session file (one fsynced journal line per trial).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from workbench.backends.base import BackendSpec, EvalLimits
from workbench.core.domain.space import Config
from workbench.runner.pool import WorkerPool

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "noop_bench.py")


def pool_rate(workers: int, evals: int) -> tuple[float, float]:
    """(startup seconds, evaluations per second) for the bare pool."""
    spec = BackendSpec("python", {"path": os.path.abspath(BENCH)})
    configs = [Config({"i": i}) for i in range(evals)]
    started = time.perf_counter()
    with WorkerPool(spec, workers, EvalLimits()) as pool:
        pool.submit(configs[0])  # wait for the workers to be up before timing
        pool.results()
        ready = time.perf_counter()
        done = 0
        submitted = 1
        t0 = time.perf_counter()
        while done < evals - 1:
            while submitted < evals and pool.idle_count > 0:
                pool.submit(configs[submitted])
                submitted += 1
            done += len(pool.results())
        elapsed = time.perf_counter() - t0
    return ready - started, (evals - 1) / elapsed


def engine_rate(workers: int, evals: int, output: str | None = None) -> float:
    """Evaluations per second through the full Engine loop (grid strategy; journal when ``output``)."""
    from workbench.backends.python import PythonBackend
    from workbench.runner.engine import Engine, session_for_target
    from workbench.search.grid import GridSearch

    spec = BackendSpec("python", {"path": os.path.abspath(BENCH)})
    target = PythonBackend.target(spec)
    session = session_for_target(target, spec)
    engine = Engine(session, GridSearch(target.space), spec, budget=evals, workers=workers, output=output)
    t0 = time.perf_counter()
    finished = engine.run()
    return finished.evaluations / (time.perf_counter() - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evals", type=int, default=3000)
    parser.add_argument("--no-engine", action="store_true", help="measure only the bare pool")
    args = parser.parse_args()
    print(f"{'workers':>7} {'startup s':>10} {'pool evals/s':>13} {'engine evals/s':>15} {'+journal evals/s':>17}")
    for workers in (1, 2):
        startup, rate = pool_rate(workers, args.evals)
        engine = journaled = ""
        if not args.no_engine:
            engine = f"{engine_rate(workers, args.evals):15.0f}"
            with tempfile.TemporaryDirectory() as folder:
                journaled = f"{engine_rate(workers, args.evals, os.path.join(folder, 'run.json')):17.0f}"
        print(f"{workers:7d} {startup:10.2f} {rate:13.0f} {engine} {journaled}")


if __name__ == "__main__":
    main()
