"""How fast the search space counts and samples big restricted spaces.

Prints one row per space: cartesian size, valid count, time of the first (uncached) ``count()``,
time to draw 100 distinct valid configs (fresh space, so nothing is cached), time to draw 100 more
while excluding 10,000 already-measured ids (``got``: how many were left to return), and time to list the neighbours of one config.
The aim: 100 configs from a 10^7-point space in well under a second.

A second table draws a space to exhaustion one config at a time, as a random search proposes
(the exclusions grow by one each draw), and prints the milliseconds per draw over the first and
the last tenth: equal when a draw's cost does not grow with what was taken before it. Each space
is drawn with its exclusions in a plain set (compared whole at every draw), in a ``TakenIds``
(the space takes in the ids added since its last draw) and by ``RandomSearch`` itself.
``--exhaust-only`` prints that table alone.

Run: ``python bench/space_sampling.py [--exhaust-only]``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from workbench.core.domain.space import SearchSpace, Slot
from workbench.core.domain.space_sampling import TakenIds
from workbench.search.random import RandomSearch


def _tiled_gemm(restrictions: list[str]) -> SearchSpace:
    """A 10^7-point space shaped like a tiled matrix-multiply kernel's."""
    slots = [
        Slot("block_x", tuple(16 * k for k in range(1, 11)), "launch", "threads per block in x"),
        Slot("block_y", tuple(range(1, 11)), "launch", "threads per block in y"),
        Slot("tile_x", tuple(range(1, 11)), "memory", "outputs per thread in x"),
        Slot("tile_y", tuple(range(1, 11)), "memory", "outputs per thread in y"),
        Slot("vector_width", (1, 2, 3, 4, 5, 6, 7, 8, 9, 10), "memory", "elements per load"),
        Slot("unroll", tuple(range(1, 11)), "compute", "inner loop unroll factor"),
        Slot("stages", tuple(range(1, 11)), "memory", "software pipeline stages"),
    ]
    return SearchSpace(slots, restrictions, {"smem_limit": 49152})


SPACES: dict[str, Callable[[], SearchSpace]] = {
    "gemm-like, loose (chain of pairwise links)": lambda: _tiled_gemm(
        ["block_x * block_y <= 512", "tile_x % vector_width == 0 or vector_width == 1", "unroll <= 2 * tile_y"]
    ),
    "gemm-like, one 5-slot link (shared memory)": lambda: _tiled_gemm(
        [
            "block_x * block_y <= 1024",
            "block_x * tile_x * block_y * tile_y * 4 * stages <= smem_limit * 4",
            "tile_x % vector_width == 0",
        ]
    ),
    "gemm-like, one 7-slot restriction (dense)": lambda: _tiled_gemm(
        ["block_x * block_y * tile_x * tile_y * vector_width * unroll * stages <= 2**20"]
    ),
    "gemm-like, tight (0.1% valid)": lambda: _tiled_gemm(
        ["block_x * block_y in (256, 512)", "tile_x == tile_y", "vector_width <= 2", "unroll == stages"]
    ),
}


def _timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def _recorded(points: int) -> SearchSpace:
    """A recorded space of ``points`` configs (a Kernel Tuner cache's shape: 4 slots, holes)."""
    rng = np.random.default_rng(0)
    grid = [(a, b, c, d) for a in range(12) for b in range(12) for c in range(12) for d in range(12)]
    chosen = sorted(rng.choice(len(grid), size=points, replace=False).tolist())
    slots = [Slot(name, tuple(range(12))) for name in "abcd"]
    return SearchSpace.explicit(slots, [dict(zip("abcd", grid[i])) for i in chosen])


EXHAUSTED: dict[str, Callable[[], SearchSpace]] = {
    "recorded, 18,000 configs": lambda: _recorded(18_000),
    "product, 5,000 of 10,000 valid": lambda: SearchSpace(
        [Slot("x", tuple(range(100))), Slot("y", tuple(range(100)))], ["x + y < 100 or x == y"]),
}


def exhaust_table() -> None:
    header = (f"{'space (drawn to exhaustion, one at a time)':46} {'exclusions':>10} {'configs':>8} "
              f"{'first 10% ms/draw':>18} {'last 10% ms/draw':>17} {'total s':>8}")
    print(header)
    print("-" * len(header))
    for title, build in EXHAUSTED.items():
        for kind in ("set", "TakenIds", "random"):
            space = build()
            total = space.count()
            stamps = [time.perf_counter()]
            if kind == "random":  # the strategy itself: ask one, then hear it was measured
                search = RandomSearch(space, seed=0)
                for _ in range(total):
                    (config,) = search.ask(1)
                    search.exclude([config.id])
                    stamps.append(time.perf_counter())
            else:
                rng = np.random.default_rng(0)
                taken: set[str] = set() if kind == "set" else TakenIds()
                for _ in range(total):
                    (config,) = space.sample(rng, 1, exclude=taken)
                    taken.add(config.id)
                    stamps.append(time.perf_counter())
            tenth = max(1, total // 10)
            first = (stamps[tenth] - stamps[0]) / tenth * 1000
            last = (stamps[-1] - stamps[-1 - tenth]) / tenth * 1000
            print(f"{title:46} {kind:>10} {total:>8} {first:>18.3f} {last:>17.3f} {stamps[-1] - stamps[0]:>8.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--exhaust-only", action="store_true", help="only the table of draws to exhaustion")
    args = parser.parse_args(argv)
    if args.exhaust_only:
        exhaust_table()
        return 0
    header = f"{'space':46} {'cartesian':>10} {'valid':>10} {'count s':>8} {'sample100 s':>11} {'excl10k s':>10} {'got':>4} {'neigh s':>8}"
    print(header)
    print("-" * len(header))
    for title, build in SPACES.items():
        rng = np.random.default_rng(1)
        fresh = build()
        t_sample, first = _timed(lambda: fresh.sample(rng, 100))
        assert len(first) == 100 and len({c.id for c in first}) == 100 and all(fresh.is_valid(c) for c in first)
        space = build()
        t_count, valid = _timed(space.count)
        measured = {c.id for c in space.sample(rng, 10_000)}
        t_excl, more = _timed(lambda: space.sample(rng, 100, exclude=measured))
        assert not measured & {c.id for c in more}
        t_neigh, _ = _timed(lambda: space.neighbours(first[0]))
        print(
            f"{title:46} {space.cartesian_size:>10.1e} {valid:>10} {t_count:>8.3f} {t_sample:>11.3f} "
            f"{t_excl:>10.3f} {len(more):>4} {t_neigh:>8.4f}"
        )
    print()
    exhaust_table()
    return 0


if __name__ == "__main__":
    sys.exit(main())
