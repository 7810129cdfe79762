"""Random search: uniform among the valid configs, without repeats, from a seeded generator.

Surprisingly hard to beat on rugged kernel spaces, and the reference for strategy benchmarks.
Sampling is the space's job (it draws valid configs without materialising a huge product); this
strategy only remembers what it has proposed so nothing is measured twice.
"""

from __future__ import annotations

from typing import Any

from workbench.core.domain.space import Config
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

    def ask(self, n: int) -> list[Config]:
        if n <= 0:
            return []
        configs = self.space.sample(self.rng, n, exclude=self.measured | self._proposed)
        self._proposed.update(config.id for config in configs)
        return list(configs)

    def state(self) -> dict[str, Any]:
        return {"proposed": len(self._proposed)}
