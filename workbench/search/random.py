"""Random search: uniform among the valid configs, without repeats, from a seeded generator.

Surprisingly hard to beat on rugged kernel spaces, and the reference for strategy benchmarks.
Sampling is the space's job (it draws valid configs without materialising a huge product); this
strategy only remembers what it has proposed so nothing is measured twice.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from workbench.core.domain.measurement import Trial
from workbench.core.domain.space import Config
from workbench.core.domain.space_sampling import TakenIds
from workbench.search.base import Strategy


class RandomSearch(Strategy):
    """Draws distinct valid configs uniformly at random with its own ``numpy`` generator."""

    name = "random"
    description = "Uniform random sampling of valid configs, without repeats."
    OPTIONS = ()
    uses_objective = False  # proposals ignore costs

    def __init__(self, space: Any, seed: int = 0, **options: Any) -> None:
        super().__init__(space, seed=seed, **options)
        self._proposed: set[str] = set()
        # what each draw excludes (measured or proposed), kept as one set that only grows, so the
        # space updates by what was added since its last draw: a new union per draw made a search
        # of a whole recording quadratic (see space_sampling.TakenIds)
        self._taken = TakenIds()

    def _update(self, trials: Sequence[Trial]) -> None:
        super()._update(trials)
        self._taken.update(t.config.id for t in trials if t.config.id in self.measured)

    def exclude(self, ids: Iterable[str]) -> None:
        ids = set(ids)
        super().exclude(ids)
        self._taken.update(ids)

    def ask(self, n: int) -> list[Config]:
        if n <= 0:
            return []
        configs = self.space.sample(self.rng, n, exclude=self._taken)
        ids = [config.id for config in configs]
        self._proposed.update(ids)
        self._taken.update(ids)
        return list(configs)

    def state(self) -> dict[str, Any]:
        return {"proposed": len(self._proposed)}
