"""Random search: uniform among the valid configs, without repeats, from a seeded generator.

Surprisingly hard to beat on rugged kernel spaces, and the reference for strategy benchmarks.
Sampling is the space's job (it draws valid configs without materialising a huge product); this
strategy only remembers what it has proposed so nothing is measured twice.
"""

from __future__ import annotations

from typing import Any

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
        self._synced: tuple[set[str], int, int] | None = None  # measured as last taken in: set, log length, shrunk

    def _exclusions(self) -> TakenIds:
        """Measured and proposed ids, taking in only what was measured since the last call while
        ``measured`` is the set seen then and has only grown."""
        measured = self.measured
        log, shrunk = (measured.log, measured.shrunk) if isinstance(measured, TakenIds) else (None, 0)
        synced = self._synced
        if log is not None and synced is not None and synced[0] is measured and synced[2] == shrunk:
            self._taken.update(log[synced[1]:])
        else:
            self._taken = TakenIds(measured | self._proposed)
        self._synced = (measured, len(log), shrunk) if log is not None else None
        return self._taken

    def ask(self, n: int) -> list[Config]:
        if n <= 0:
            return []
        taken = self._exclusions()
        configs = self.space.sample(self.rng, n, exclude=taken)
        ids = [config.id for config in configs]
        self._proposed.update(ids)
        taken.update(ids)
        return list(configs)

    def state(self) -> dict[str, Any]:
        return {"proposed": len(self._proposed)}
