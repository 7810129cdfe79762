"""Cost-model pruning around any strategy: measure only the most promising fraction of its proposals.

Why: a measurement costs a compile and a benchmark (seconds); a cost model's prediction costs
microseconds. Like Triton's ``perf_model`` + ``top_k``, the wrapper asks the inner strategy for
``n / keep_fraction`` candidates, ranks them by the run's objective applied to what the model
predicts, and returns the best ``n``. The objective, not the predicted latency: under a limit on
registers, or with the weight on occupancy, the fastest predictions are often the ones that miss
the limit or score low, and keeping them would spend the measurements the user asked to spare on
configs the user excluded.

The candidates it drops are told to the inner strategy as ``skipped`` trials ("pruned by the cost
model"), so the inner strategy stops proposing them and avoids their region, exactly as it avoids
a region that fails. They are kept in a reserve: when the inner strategy has nothing left, the
reserve is measured, best predicted first under the objective then in force, so pruning never
makes part of the space unreachable.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from workbench.core.errors import SpaceError, WorkbenchError
from workbench.core.domain.measurement import LATENCY, Measurement, Status, Trial
from workbench.core.domain.objective import Bound
from workbench.core.domain.pareto import pareto_ranks
from workbench.core.domain.search_objective import INFEASIBLE, Objective
from workbench.core.domain.space import Config
from workbench.search.base import Strategy

#: What a cost model says of a config: the measurement it predicts (its metrics, or a failure), or
#: just a predicted latency in ms (``inf`` or NaN: the model expects it to fail).
Predictor = Callable[[Config], "Measurement | float"]


class Pruned(Strategy):
    """``Pruned(strategy, predictor, keep_fraction)``: the inner strategy filtered by a cost model.

    ``predictor(config)`` returns the predicted measurement, or a predicted latency (see
    :data:`Predictor`); proposals are ranked by the run's objective of that prediction, as
    :meth:`Strategy.objective` ranks measured trials. ``keep_fraction`` in (0, 1] is the share of
    proposals measured.
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
        self.reserve: dict[str, Config] = {}  # pruned but measurable, ranked when it is used (the objective may change)
        self.pruned = 0
        self._predictions: dict[str, Measurement] = {}  # per config id: what the model said
        self._index = 0

    def set_objective(self, objective: Callable[[Trial], float]) -> None:
        """The inner strategy ranks with the run's objective (and re-ranks when it changes)."""
        self._objective = objective
        self.inner.set_objective(objective)

    def handed(self) -> frozenset[str]:
        return self.inner.handed()

    def _prediction(self, config: Config) -> Trial:
        """What the model predicts for ``config``, as a trial the objective can judge (kept per
        config: the reserve is ranked again whenever it is used).

        A bound on a metric the model does not predict (a device's power, an error measure, a
        metric of the user's own benchmark) is taken as met: the model says nothing about it, and
        counting it as missed gave every prediction the same cost, so pruning kept configs by
        their id instead of by what the model does know."""
        predicted = self._predictions.get(config.id)
        if predicted is None:
            said = self.predictor(config)
            if isinstance(said, Measurement):
                predicted = said
            else:
                latency = float(said)
                predicted = (Measurement(Status.OK, {LATENCY: latency}) if math.isfinite(latency)
                             else Measurement.failure(Status.RUNTIME_ERROR, "predicted to fail"))
            self._predictions[config.id] = predicted
        bounds: Sequence[Bound] = getattr(self.objective, "bounds", ())
        unknown = {b.metric: b.value for b in bounds if predicted.ok and b.metric not in predicted.metrics}
        if unknown:
            predicted = Measurement(predicted.status, {**predicted.metrics, **unknown}, predicted.message)
        return Trial(0, config, predicted)

    def _ranked(self, configs: Sequence[Config]) -> list[Config]:
        """``configs``, best predicted first under the run's objective, ties by predicted latency.

        Searching a Pareto front (an objective with several metrics), the predictions that meet
        the bounds come first by their Pareto rank (how many others dominate them on the
        objectives' values: the predicted front first), in random order within a rank, then the
        others by how far they miss. Ranked by one cost, or with ties broken by latency, pruning
        kept the fastest end of the front only (the fastest of a batch is always on its front)."""
        trials = [self._prediction(c) for c in configs]
        costs = [float(self.objective(t)) for t in trials]
        costs = [math.inf if math.isnan(c) else c for c in costs]
        latencies = [t.metric(LATENCY) if t.ok else math.inf for t in trials]
        latencies = [v if math.isfinite(v) else math.inf for v in latencies]
        tier = costs
        objective = self.objective
        if len(getattr(objective, "objectives", ())) >= 2 and isinstance(objective, Objective):
            front = [k for k, c in enumerate(costs) if c < INFEASIBLE]
            # shaped by the objectives, not the values: a batch none of whose predictions meets the
            # bounds has no row, and reshape(0, -1) raised
            values = np.array([objective.values(trials[k]) for k in front], dtype=float)
            ranks = pareto_ranks(values.reshape(len(front), len(objective.objectives)))
            tier = [INFEASIBLE if c < INFEASIBLE else c for c in costs]  # feasible: one tier, split by rank
            rank = dict(zip(front, ranks))
            shuffle = self.rng.permutation(len(configs))
            keys = [(tier[k], rank.get(k, 0), float(shuffle[k]), c.id) for k, c in enumerate(configs)]
        else:
            keys = [(tier[k], 0, latencies[k], c.id) for k, c in enumerate(configs)]
        order = sorted(range(len(configs)), key=lambda k: keys[k])
        return [configs[k] for k in order]

    def _proposals_for(self, n: int) -> int:
        """How many proposals to ask the inner strategy for, so that ``keep_fraction`` of them is
        ``n``: never more than the configs not measured yet, which is also what keeps a tiny
        fraction (1e-320, whose ``n / fraction`` is infinite) from asking for the impossible."""
        try:
            count = self.space.count()
        except SpaceError:  # restrictions too costly to count: the product of the domains bounds it
            count = self.space.cartesian_size
        left = max(n, count - len(self.measured))
        wanted = n / self.keep_fraction
        return left if wanted >= left else max(n, math.ceil(wanted))

    def ask(self, n: int) -> list[Config]:
        if n <= 0:
            return []
        self.inner.exclude(self.measured)  # the engine reports known configs to the wrapper
        want = self._proposals_for(n)
        proposals = [c for c in self.inner.ask(want) if c.id not in self.measured]
        if not proposals:  # the inner strategy is done: measure the pruned reserve, best first
            left = [c for cid, c in self.reserve.items() if cid not in self.measured]
            out = self._ranked(left)[:n]
            taken = {c.id for c in out}
            self.reserve = {c.id: c for c in left if c.id not in taken}
            return out
        ranked = self._ranked(proposals)
        keep = max(1, min(n, round(len(ranked) * self.keep_fraction))) if len(ranked) > n else len(ranked)
        kept, dropped = ranked[:keep], ranked[keep:]
        if dropped:
            skipped = []
            for config in dropped:
                self.reserve[config.id] = config
                skipped.append(
                    Trial(self._index, config, Measurement.failure(Status.SKIPPED, "pruned by the cost model"))
                )
                self._index += 1
            self.pruned += len(dropped)
            self.inner.tell(skipped)
        return kept

    def _update(self, trials: Sequence[Trial]) -> None:
        self.inner.exclude(t.config.id for t in trials)
        self.inner.tell(trials)

    def _warm(self, trials: Sequence[Trial]) -> None:
        self.inner.warm_start(trials)

    def state(self) -> dict[str, Any]:
        return {"inner": self.inner.name, "inner_state": self.inner.state(), "pruned": self.pruned}


def with_pruning(strategy: Strategy, predictor: Predictor | None, keep_fraction: float = 0.25) -> Strategy:
    """``strategy`` wrapped with pruning, or unchanged when there is no predictor or nothing to prune."""
    if predictor is None or keep_fraction >= 1.0:
        return strategy
    return Pruned(strategy, predictor, keep_fraction)
