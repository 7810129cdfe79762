"""How long each strategy takes per proposal on the spaces that stress what it lists.

Two spaces, one row per strategy and space: ``long``, a slot of two million values beside a short
one (a problem size read from a python benchmark, say), and ``restricted``, seven slots of ten
values of which a restriction over all seven keeps 84 configs (ten million points, 84 valid). A
run asks for ``--asks`` proposals of ``--batch`` each (telling a made-up latency after each ask)
and stops early once ``--cap`` seconds have gone; the table gives the asks made, the median and
the largest wall time of an ask plus its tell, and the total. Strategies a space is unsuited to
(the agents' one utility per slot value on the long slot) are said as such.

Run: ``python bench/strategy_edges.py [--asks 20] [--batch 4] [--cap 60] [--strategies NAME,...]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from workbench.core.domain.measurement import Measurement, Status, Trial
from workbench.core.domain.space import Config, SearchSpace, Slot
from workbench.core.errors import WorkbenchError
from workbench.search.base import STRATEGIES, create_strategy


def long_space() -> SearchSpace:
    return SearchSpace([Slot("n", tuple(range(2_000_000))), Slot("b", (1, 2, 4), "memory")])


def restricted_space() -> SearchSpace:
    groups = ("launch", "memory", "compute", "reduction")
    return SearchSpace([Slot(f"s{i}", tuple(range(10)), groups[i % 4]) for i in range(7)],
                       restrictions=["s0 + s1 + s2 + s3 + s4 + s5 + s6 == 3"])


def latency(config: Config) -> float:
    """A made-up latency with some structure in every slot (values are numbers in both spaces)."""
    return 1.0 + sum((k + 1) * (float(v) % 97) for k, v in enumerate(config.values())) / 500


SPACES: dict[str, Callable[[], SearchSpace]] = {"long": long_space, "restricted": restricted_space}


def run_case(name: str, space: SearchSpace, asks: int, batch: int, cap_s: float) -> str:
    try:
        strategy = create_strategy(name, space, seed=0)
    except WorkbenchError as exc:
        return f"unsuited ({str(exc)[:60]}...)"
    times: list[float] = []
    told = 0
    started = time.perf_counter()
    for _ in range(asks):
        t0 = time.perf_counter()
        proposed = strategy.ask(batch)
        strategy.tell([Trial(told + k, c, Measurement(Status.OK, {"latency_ms": latency(c)}))
                       for k, c in enumerate(proposed)])
        times.append(time.perf_counter() - t0)
        told += len(proposed)
        if not proposed or time.perf_counter() - started > cap_s:
            break
    total = time.perf_counter() - started
    return (f"{len(times):>4} {told:>6} {1000 * statistics.median(times):>11.1f} {1000 * max(times):>10.1f} "
            f"{total:>8.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    parser.add_argument("--asks", type=int, default=20, help="asks per strategy and space (default 20)")
    parser.add_argument("--batch", type=int, default=4, help="configs per ask (default 4)")
    parser.add_argument("--cap", type=float, default=60.0, help="seconds after which a run stops asking (default 60)")
    parser.add_argument("--strategies", default=",".join(sorted(STRATEGIES)), help="comma-separated (default: all)")
    args = parser.parse_args(argv)
    print("wall seconds on this machine; seed 0")
    print(f"{'space':<11} {'strategy':<10} {'asks':>4} {'told':>6} {'median ms':>11} {'max ms':>10} {'total s':>8}")
    for space_name, build in SPACES.items():
        for name in args.strategies.split(","):
            print(f"{space_name:<11} {name:<10} {run_case(name, build(), args.asks, args.batch, args.cap)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
