"""Iterated greedy local search: first improvement over neighbours, perturbation or restart when stuck.

Why this shape: tuning landscapes are rugged but locally correlated (a block size next to a good
one is usually good), so climbing over one-slot changes finds a good kernel in few evaluations.
First improvement (move as soon as a neighbour is better) spends fewer evaluations than best
improvement. At a local optimum, a random walk of a few steps from the best config (iterated local
search) or, now and then, a random restart escapes it.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from workbench.core.domain.measurement import Trial
from workbench.core.domain.space import Config, SearchSpace
from workbench.search._common import IndexedStrategy
from workbench.search.base import Option


class LocalSearch(IndexedStrategy):
    name = "local"
    description = "Iterated greedy local search (first improvement over one-slot neighbours)"
    OPTIONS = (
        Option("adjacent_only", False, "Ordered slots move only to the adjacent value (smaller neighbourhood)"),
        Option("perturbation", 3, "Random steps taken from the best config when stuck", low=1, high=100),
        Option("restart_probability", 0.2, "Chance that a stuck search restarts at a random config instead", low=0, high=1),
    )
    batch_parallel = False

    def __init__(self, space: SearchSpace, seed: int = 0, **options: Any) -> None:
        super().__init__(space, seed=seed, **options)
        self.current: Config | None = None
        self.current_score = math.inf
        self.queue: list[Config] = []  # unmeasured neighbours of ``current`` still to try
        self.jumps: set[str] = set()  # perturbed configs: the climb continues from them whatever they score

    def _set_current(self, config: Config, score: float) -> None:
        self.current, self.current_score = config, score
        nbrs = self.neighbourhood(config, adjacent_only=self.options["adjacent_only"])
        order = self.rng.permutation(len(nbrs))
        self.queue = [nbrs[i] for i in order]

    def _update(self, trials: Sequence[Trial]) -> None:
        super()._update(trials)
        for trial in trials:
            score = self.scores[trial.config.id]
            jumped = trial.config.id in self.jumps
            if jumped:
                self.jumps.discard(trial.config.id)
            if self.current is None or jumped or score < self.current_score:  # first improvement: move now
                self._set_current(trial.config, score)

    def _perturb(self, batch: set[str]) -> Config | None:
        """A fresh config a few random steps from the best one (or a random restart)."""
        if self.best_config is None or self.rng.random() < self.options["restart_probability"]:
            sample = self.sample(1, batch)
            return sample[0] if sample else None
        walk = self.best_config
        for _ in range(max(1, int(self.options["perturbation"]))):
            nbrs = self.neighbourhood(walk)
            if not nbrs:
                break
            walk = nbrs[int(self.rng.integers(len(nbrs)))]
        return self.repair(self.coder.encode(walk), batch)

    def ask(self, n: int) -> list[Config]:
        out: list[Config] = []
        batch: set[str] = set()
        while len(out) < n and not self.exhausted():
            config: Config | None = None
            while self.queue:
                cand = self.queue.pop()
                if self.fresh(cand, batch):
                    config = cand
                    break
            if config is None:
                if self.current is not None:
                    config = self._perturb(batch)
                else:
                    fresh = self.sample(1, batch)
                    config = fresh[0] if fresh else None
                if config is not None:
                    self.jumps.add(config.id)
            if config is None or not self.fresh(config, batch):
                break
            out.append(config)
            batch.add(config.id)
        return self.take(out)
