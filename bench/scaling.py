"""Scaling of evaluations over workers: local worker pool vs Ray actors, candidates of fixed length.

A ``python`` benchmark sleeps a fixed time per candidate (default 200 ms and 50 ms), so ideal
throughput is ``workers / sleep``. For each executor and worker count the pool is started and
warmed (every worker has answered once; start-up is reported separately), then
``per_worker * workers`` candidates are submitted at once and drained.

- efficiency = ideal time / measured time = ``n * sleep / (workers * wall)``;
- overhead per candidate = ``(workers * wall - n * sleep) / n``: what the executor adds to each
  evaluation (dispatch, pickling, pipes; on Ray also the remote call and ``ray.wait``).

Sleeping candidates use no CPU, so 4 workers measure the executor even on a 2-core machine.
Run: ``python bench/scaling.py [--sleeps 200,50] [--workers 1,2,4] [--executors local,ray]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.backends.base import BackendSpec, EvalLimits
from workbench.core.domain.space import Config
from workbench.runner.executors import LocalPool

BENCHMARK = '''
import time
SPACE = {"ms": [0, 20, 50, 100, 200, 500, 1000], "i": list(range(100000))}
def measure(config):
    time.sleep(config["ms"] / 1000.0)
    return {"latency_ms": float(config["ms"])}
'''


def _drain(pool: Any) -> list:
    out = []
    while pool.busy:
        out.extend(pool.results(timeout=60))
    return out


def _warm(pool: Any, workers: int, counter: list[int]) -> None:
    """Until every worker has measured something (so start-up is out of the timed part)."""
    seen: set[str] = set()
    while len(seen) < workers:
        for _ in range(workers):
            counter[0] += 1
            pool.submit(Config({"ms": 20, "i": counter[0]}))
        seen |= {r[3].partition("@")[0] for r in _drain(pool)}


def measure(executor: str, spec: BackendSpec, workers: int, sleep_ms: int, per_worker: int) -> dict[str, float]:
    counter = [0]
    limits = EvalLimits(run_timeout_s=30.0)
    started = time.perf_counter()
    if executor == "ray":
        from workbench.runner.ray_executor import RayPool

        pool: Any = RayPool(spec, workers, limits)
    else:
        pool = LocalPool(spec, workers, limits)
    with pool:
        _warm(pool, workers, counter)
        startup = time.perf_counter() - started
        n = per_worker * workers
        t0 = time.perf_counter()
        for _ in range(n):
            counter[0] += 1
            pool.submit(Config({"ms": sleep_ms, "i": counter[0]}))
        results = _drain(pool)
        wall = time.perf_counter() - t0
    assert len(results) == n and all(r[1].ok for r in results), "every candidate must come back ok"
    ideal = n * sleep_ms / 1000.0
    return {
        "n": n,
        "wall_s": wall,
        "evals_per_s": n / wall,
        "efficiency": ideal / (workers * wall),
        "overhead_ms": (workers * wall - ideal) / n * 1000.0,
        "startup_s": startup,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sleeps", default="200,50", help="milliseconds per candidate, comma-separated")
    parser.add_argument("--workers", default="1,2,4", help="worker counts, comma-separated")
    parser.add_argument("--executors", default="local,ray")
    parser.add_argument("--per-worker", type=int, default=10, help="timed candidates per worker")
    args = parser.parse_args(argv)
    sleeps = [int(s) for s in args.sleeps.split(",")]
    counts = [int(w) for w in args.workers.split(",")]
    executors = args.executors.split(",")
    folder = Path(tempfile.mkdtemp(prefix="workbench-scaling-"))
    bench = folder / "sleep_bench.py"
    bench.write_text(BENCHMARK)
    spec = BackendSpec("python", {"path": str(bench)})
    if "ray" in executors:
        from workbench.runner.ray_executor import ensure_ray

        t0 = time.perf_counter()
        ensure_ray(num_cpus=max(counts))  # one logical CPU per actor; sleeping actors need no core
        print(f"local Ray instance started in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    print("| executor | sleep (ms) | workers | candidates | wall (s) | evals/s | efficiency | overhead / candidate (ms) | start-up (s) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for executor in executors:
        for sleep_ms in sleeps:
            for workers in counts:
                row = measure(executor, spec, workers, sleep_ms, args.per_worker)
                print(f"| {executor} | {sleep_ms} | {workers} | {row['n']} | {row['wall_s']:.2f} | {row['evals_per_s']:.1f} | "
                      f"{row['efficiency']:.1%} | {row['overhead_ms']:.1f} | {row['startup_s']:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
