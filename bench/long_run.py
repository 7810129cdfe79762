"""A strategy's own time per trial over a long run on recorded landscapes.

Runs each strategy by ask/tell on a landscape of ``bench/strategies.py`` (a Kernel Tuner cache,
or a simulated landscape) until the budget or the space runs out, one config per ask, as the
engine asks; prints the strategy's milliseconds per trial over each tenth of the run, so a cost
that grows with what was measured before shows as a rising row, and a digest of the latencies it
found in order (equal digests: the same proposals). No worker, no engine: the strategy alone.

Run: ``python bench/long_run.py [--landscapes dedispersion_A100,gemm_RTX_3090] [--strategies agents]
[--budget 8000] [--seed 0]``
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from strategies import landscapes, run_once  # (bench/strategies.py: the landscapes it reads, its ask/tell loop)


def run(land, strategy: str, budget: int, seed: int) -> tuple[list[tuple[int, float]], str, int]:
    """(trials, strategy seconds) at each tenth of the run, a digest of the latencies found in
    order, and the number of trials."""
    budget = min(budget, land.space.count())
    step = max(1, budget // 10)
    marks: list[tuple[int, float]] = []

    def mark(count: int, spent: float) -> None:
        if count % step == 0:
            marks.append((count, spent))

    values, _ = run_once(land, strategy, seed, budget, {}, progress=mark)
    # (a failure's latency as the landscape holds it, None, so digests compare with earlier runs)
    found = ["None" if math.isinf(value) else repr(value) for value in values]
    digest = hashlib.sha256("\n".join(found).encode()).hexdigest()[:12]
    return marks, digest, len(found)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--landscapes", default="dedispersion_A100,gemm_RTX_3090")
    ap.add_argument("--strategies", default="agents")
    ap.add_argument("--budget", type=int, default=8000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    for land in landscapes(args.landscapes.split(",")):
        for strategy in args.strategies.split(","):
            marks, digest, trials = run(land, strategy, args.budget, args.seed)
            print(f"\n{land.name} ({land.space.count()} configs), {strategy}, seed {args.seed}: {trials} trials, "
                  f"{marks[-1][1] if marks else 0.0:.1f} s in the strategy, digest {digest}")
            print("| trials | ms per trial |")
            print("|---|---|")
            before = (0, 0.0)
            for count, spent in marks:
                print(f"| {before[0] + 1}-{count} | {1000 * (spent - before[1]) / (count - before[0]):.2f} |")
                before = (count, spent)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
