"""Any strategy, proposing a few given configs first: warm-started retuning.

Why: the best config at one problem size is usually good, often best, at a nearby size. A size
sweep hands a new size the best configs of the nearest sizes already measured; measuring those
first puts a good incumbent in place after a handful of evaluations, and the inner strategy, told
those trials like any others, searches on from there instead of from a random start.

Seeds that are not valid in this space (a restriction reading the problem) or already measured are
skipped; after the seeds, proposals are the inner strategy's.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from workbench.core.domain.measurement import Trial
from workbench.core.domain.space import Config
from workbench.search.base import Strategy


class Seeded(Strategy):
    """``Seeded(strategy, seeds)``: ``seeds`` (in order, each once), then ``strategy``'s proposals."""

    name = "seeded"
    description = "Given configs first, then any strategy"

    def __init__(self, strategy: Strategy, seeds: Sequence[Config]) -> None:
        self.inner = strategy
        super().__init__(strategy.space, seed=strategy.seed)
        self.options = dict(strategy.options)
        self.seeds = [c for c in dict.fromkeys(seeds) if strategy.space.is_valid(c)]
        self._next = 0

    def set_objective(self, objective: Callable[[Trial], float]) -> None:
        """The inner strategy ranks with the run's objective (and re-ranks when it changes)."""
        self._objective = objective
        self.inner.set_objective(objective)

    def exclude(self, ids: Any) -> None:
        ids = list(ids)
        super().exclude(ids)
        self.inner.exclude(ids)

    def handed(self) -> frozenset[str]:
        return frozenset(c.id for c in self.seeds) | self.inner.handed()

    def ask(self, n: int) -> list[Config]:
        out: list[Config] = []
        while self._next < len(self.seeds) and len(out) < n:
            config = self.seeds[self._next]
            self._next += 1
            if config.id not in self.measured:
                out.append(config)
        if len(out) < n:  # every seed handed out, measured or still being measured, is taken
            self.inner.exclude(self.measured | {c.id for c in self.seeds[: self._next]})
            out.extend(c for c in self.inner.ask(n - len(out)) if c not in out)
        return out

    def _update(self, trials: Sequence[Trial]) -> None:
        self.inner.tell(trials)

    def _warm(self, trials: Sequence[Trial]) -> None:
        self.inner.warm_start(trials)

    def state(self) -> dict[str, Any]:
        return {"inner": self.inner.name, "inner_state": self.inner.state(), "seeds": len(self.seeds)}


def with_seeds(strategy: Strategy, seeds: Sequence[Config]) -> Strategy:
    """``strategy`` proposing ``seeds`` first, or unchanged when there are none."""
    return Seeded(strategy, seeds) if seeds else strategy
