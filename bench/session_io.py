"""How long saving and loading a session takes as it grows.

Builds sessions of realistic trials (7 slots, 7 metrics for ok trials, timings, 5% compile errors
with a two-line log), saves each with ``save_session`` and loads it back with ``load_session``,
and prints a table: trials, file size, save s, load s (wall clock and CPU, best of ``--repeat``). The target is under
2 s each for 100,000 trials.

With ``--import-kt`` it times instead ``import_kt_cache`` on every Kernel Tuner cache file in
``../shared/landscapes`` (read in place): records, file size, import s (wall clock and CPU).

    python bench/session_io.py [--sizes 1000 10000 100000] [--repeat 3]
    python bench/session_io.py --import-kt [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.core.domain.measurement import Measurement, Status, Trial
from workbench.core.domain.session import Journal, Session, load_session, save_session
from workbench.core.domain.space import Config
from workbench.core.io.interop import import_kt_cache

LANDSCAPES = Path(__file__).resolve().parents[2] / "shared" / "landscapes"


def make_session(n: int, seed: int = 0) -> Session:
    """A session with ``n`` trials that look like a simulator run of conv2d."""
    rng = np.random.default_rng(seed)
    session = Session(kernel="conv2d", kind="template", source_hash="0123456789abcdef",
                      problem={"width": 4096, "height": 4096}, device={"name": "A100", "simulated": True})
    bx = rng.choice(np.arange(16, 257, 16), n)
    by = rng.choice([1, 2, 4, 8, 16], n)
    tiles = rng.integers(1, 5, (n, 2))
    flags = rng.integers(0, 2, (n, 3))
    latency = rng.lognormal(0.5, 0.4, n)
    for i in range(n):
        config = Config({
            "block_size_x": int(bx[i]), "block_size_y": int(by[i]), "tile_size_x": int(tiles[i, 0]),
            "tile_size_y": int(tiles[i, 1]), "read_only": bool(flags[i, 0]), "use_padding": bool(flags[i, 1]),
            "use_shmem": bool(flags[i, 2]),
        })
        if i % 20 == 7:
            measurement = Measurement.failure(
                Status.COMPILE_ERROR, "error: too many resources requested for launch\n(registers: 300)"
            )
        else:
            lat = float(latency[i])
            measurement = Measurement(Status.OK, {
                "latency_ms": lat, "latency_p20_ms": lat * 0.98, "latency_p80_ms": lat * 1.03,
                "throughput_gbs": 134.2 / lat, "gflops": 1700.0 / lat, "memory_mb": 128.0, "registers": 40,
            })
        t0 = 1.7e9 + i * 0.05
        session.add(Trial(i, config, measurement, t0, t0 + 0.04,
                          {"compile_s": 0.03, "verify_s": 0.001, "benchmark_s": 0.009, "total_s": 0.04}, "worker-0"))
    return session


def best_of(repeat: int, fn) -> tuple[float, float]:
    """Best wall-clock and best CPU seconds over ``repeat`` runs (CPU time is what other jobs on
    a shared machine cannot inflate; wall time adds fsync and any contention)."""
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus)


def import_table(repeat: int) -> int:
    """``import_kt_cache`` on each recorded cache file: what opening a Kernel Tuner recording costs."""
    files = sorted([*LANDSCAPES.glob("*.json"), *LANDSCAPES.glob("more/*.json.gz")])
    if not files:
        print(f"no Kernel Tuner cache files under {LANDSCAPES}")
        return 1
    print(f"{'file':<28} {'records':>8} {'file MB':>8} {'import s':>9} {'(cpu)':>7}")
    for path in files:
        records = len(import_kt_cache(path).trials)
        wall, cpu = best_of(repeat, lambda: import_kt_cache(path))
        print(f"{path.name:<28} {records:>8} {os.path.getsize(path) / 1e6:>8.1f} {wall:>9.3f} {cpu:>7.3f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--import-kt", action="store_true", help="time import_kt_cache on the recorded cache files")
    args = parser.parse_args(argv)
    if args.import_kt:
        return import_table(args.repeat)
    print(f"{'trials':>8} {'file MB':>8} {'save s':>7} {'(cpu)':>7} {'load s':>7} {'(cpu)':>7} {'journal/trial ms':>17}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            session = make_session(n)
            path = Path(tmp) / f"session_{n}.json"
            save_s = best_of(args.repeat, lambda: save_session(session, path))
            load_s = best_of(args.repeat, lambda: load_session(path))
            loaded = load_session(path)
            assert len(loaded.trials) == n and loaded.trials[-1].config.id == session.trials[-1].config.id
            journal = Journal(Path(tmp) / "live.json")
            journal.start(Session(kernel="conv2d"))
            k = min(n, 200)
            start = time.perf_counter()
            for trial in session.trials[:k]:
                journal.append(trial)
            per_append_ms = (time.perf_counter() - start) / k * 1e3
            journal.close()
            size_mb = os.path.getsize(path) / 1e6
            print(
                f"{n:>8} {size_mb:>8.1f} {save_s[0]:>7.3f} {save_s[1]:>7.3f} {load_s[0]:>7.3f} {load_s[1]:>7.3f}"
                f" {per_append_ms:>17.3f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
