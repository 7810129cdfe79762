"""Cost-model pruning around any strategy: measure only the most promising fraction of its proposals.

Why: a measurement costs a compile and a benchmark (seconds); a cost model's prediction costs
microseconds. Like Triton's ``perf_model`` + ``top_k``, the wrapper asks the inner strategy for
``n / keep_fraction`` candidates, ranks them by predicted latency and returns the best ``n``.

The candidates it drops are told to the inner strategy as ``skipped`` trials ("pruned by the cost
model"), so the inner strategy stops proposing them and avoids their region, exactly as it avoids
a region that fails. They are kept in a reserve (best prediction first): when the inner strategy
has nothing left, the reserve is measured, so pruning never makes part of the space unreachable.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

from workbench.core.errors import WorkbenchError
from workbench.core.domain.measurement import Measurement, Status, Trial
from workbench.core.domain.space import Config
from workbench.search.base import Strategy

Predictor = Callable[[Config], float]


class Pruned(Strategy):
    """``Pruned(strategy, predictor, keep_fraction)``: the inner strategy filtered by a cost model.

    ``predictor(config)`` returns a predicted latency (lower is better; ``inf`` or NaN for a config
    the model expects to fail). ``keep_fraction`` in (0, 1] is the share of proposals measured.
    """

    name = "pruned"
    description = "Any strategy, measuring only the proposals a cost model ranks best"

    def __init__(self, strategy: Strategy, predictor: Predictor, keep_fraction: float = 0.25) -> None:
        if not 0.0 < float(keep_fraction) <= 1.0:
            raise WorkbenchError(f"keep_fraction must be in (0, 1], got {keep_fraction!r}")
        self.inner = strategy
        super().__init__(strategy.space, seed=strategy.seed)
        self.options = {**strategy.options, "keep_fraction": float(keep_fraction)}
        self.predictor = predictor
        self.keep_fraction = float(keep_fraction)
        self.batch_parallel = strategy.batch_parallel
        self.reserve: list[tuple[float, str, Config]] = []  # (prediction, id, config), pruned but measurable
        self.pruned = 0
        self._index = 0

    def set_objective(self, objective: Callable[[Trial], float]) -> None:
        """The inner strategy ranks with the run's objective (and re-ranks when it changes)."""
        self._objective = objective
        self.inner.set_objective(objective)

    def _predict(self, config: Config) -> float:
        value = float(self.predictor(config))
        return math.inf if math.isnan(value) else value

    def _proposals_for(self, n: int) -> int:
        """How many proposals to ask the inner strategy for, so that ``keep_fraction`` of them is
        ``n``: never more than the configs not measured yet, which is also what keeps a tiny
        fraction (1e-320, whose ``n / fraction`` is infinite) from asking for the impossible."""
        left = max(n, self.space.count() - len(self.measured))
        wanted = n / self.keep_fraction
        return left if wanted >= left else max(n, math.ceil(wanted))

    def ask(self, n: int) -> list[Config]:
        if n <= 0:
            return []
        self.inner.exclude(self.measured)  # the engine reports known configs to the wrapper
        want = self._proposals_for(n)
        proposals = [c for c in self.inner.ask(want) if c.id not in self.measured]
        if not proposals:  # the inner strategy is done: measure the pruned reserve, best first
            self.reserve.sort(key=lambda item: (item[0], item[1]))
            out = [c for _, cid, c in self.reserve if cid not in self.measured][:n]
            taken = {c.id for c in out}
            self.reserve = [item for item in self.reserve if item[1] not in taken and item[1] not in self.measured]
            return out
        ranked = sorted(proposals, key=lambda c: (self._predict(c), c.id))
        keep = max(1, min(n, round(len(ranked) * self.keep_fraction))) if len(ranked) > n else len(ranked)
        kept, dropped = ranked[:keep], ranked[keep:]
        if dropped:
            skipped = []
            for config in dropped:
                self.reserve.append((self._predict(config), config.id, config))
                skipped.append(
                    Trial(self._index, config, Measurement.failure(Status.SKIPPED, "pruned by the cost model"))
                )
                self._index += 1
            self.pruned += len(dropped)
            self.inner.tell(skipped)
        return kept

    def tell(self, trials: Sequence[Trial]) -> None:
        super().tell(trials)
        self.inner.exclude(t.config.id for t in trials)
        self.inner.tell(trials)

    def warm_start(self, trials: Sequence[Trial]) -> None:
        super().tell(trials)
        self.inner.warm_start(trials)

    def state(self) -> dict[str, Any]:
        return {"inner": self.inner.name, "inner_state": self.inner.state(), "pruned": self.pruned}


def with_pruning(strategy: Strategy, predictor: Predictor | None, keep_fraction: float = 0.25) -> Strategy:
    """``strategy`` wrapped with pruning, or unchanged when there is no predictor or nothing to prune."""
    if predictor is None or keep_fraction >= 1.0:
        return strategy
    return Pruned(strategy, predictor, keep_fraction)
