"""Evolutionary search: tournament selection, uniform crossover, mutation to neighbouring values.

Why: good kernels often combine good choices made independently (a block size that suits the
occupancy with a tile that suits the cache), which crossover recombines; mutation to a
*neighbouring* value keeps offspring close to their parents on ordered slots. Offspring that
break a restriction, or that were already measured, are repaired to the nearest valid
unmeasured config, so no evaluation is wasted. One generation is one batch (parallel friendly).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from workbench.core.domain.measurement import Trial
from workbench.core.domain.space import Config, SearchSpace
from workbench.search._common import IndexedStrategy
from workbench.search.base import Option, OptionsConflict


class Genetic(IndexedStrategy):
    name = "genetic"
    description = "Genetic algorithm: tournament selection, uniform crossover, neighbour mutation, repair"
    OPTIONS = (
        Option("population", 16, "Individuals per generation", low=2, high=1000),
        Option("tournament", 3, "Contestants per tournament (selection pressure)", low=1, high=1000),
        Option("mutation", 0.15, "Chance per slot of moving to a neighbouring value", low=0, high=1),
        Option("elite", 2, "Best configs, each cloned (then mutated) into the next generation with even odds", low=0, high=1000),
    )

    @classmethod
    def options_conflict(cls, options: Mapping[str, Any]) -> OptionsConflict | None:
        population = options["population"]
        for name in ("elite", "tournament"):  # both are drawn from the population: more would be clamped
            if options[name] > population:
                return OptionsConflict(f"{name}={options[name]} cannot exceed population={population}",
                                       (name, "population"))
        return None

    def __init__(self, space: SearchSpace, seed: int = 0, **options: Any) -> None:
        super().__init__(space, seed=seed, **options)
        self.history: list[tuple[float, tuple[int, ...]]] = []  # (score, index vector) of every told config
        self.generation = 0

    def _update(self, trials: Sequence[Trial]) -> None:
        super()._update(trials)
        for trial in trials:
            self.history.append((self.scores[trial.config.id], self.coder.encode(trial.config)))

    def _parents(self) -> list[tuple[float, tuple[int, ...]]]:
        """The current population: the best ``population`` configs measured so far."""
        ranked = sorted(self.history, key=lambda item: item[0])
        return ranked[: int(self.options["population"])]

    def _select(self, pool: list[tuple[float, tuple[int, ...]]]) -> tuple[int, ...]:
        k = min(int(self.options["tournament"]), len(pool))
        picks = self.rng.choice(len(pool), size=k, replace=False)
        return pool[int(min(picks))][1]  # pool is sorted best first

    def _mutate(self, genes: np.ndarray) -> np.ndarray:
        sizes, ordered = self.coder.sizes, self.coder.ordered
        for k in range(len(genes)):
            if sizes[k] < 2 or self.rng.random() >= self.options["mutation"]:
                continue
            if ordered[k]:
                step = 1 if self.rng.random() < 0.5 else -1
                if not 0 <= genes[k] + step < sizes[k]:
                    step = -step  # at the end of the domain the only neighbour is the other way
                genes[k] += step
            else:
                genes[k] = (genes[k] + int(self.rng.integers(1, sizes[k]))) % sizes[k]
        return genes

    def _breed(self, n: int, batch: set[str]) -> list[Config]:
        pool = self._parents()
        out: list[Config] = []
        elite = [genes for _, genes in pool[: int(self.options["elite"])]]
        for _ in range(n):
            if elite and len(out) < len(elite) and self.rng.random() < 0.5:
                a = b = elite[len(out)]  # elite clone: mutation + repair explores right around it
            else:
                a, b = self._select(pool), self._select(pool)
            mask = self.rng.random(len(a)) < 0.5
            child = self._mutate(np.where(mask, a, b).astype(np.int64))
            config = self.repair(child, batch)
            if config is None:
                break
            out.append(config)
            batch.add(config.id)
        return out

    def ask(self, n: int) -> list[Config]:
        return self.ask_from_queue(n, self._next_generation)

    def _next_generation(self, wanted: int, batch: set[str]) -> list[Config]:
        """One generation (random while fewer than two configs are known), whatever ``wanted`` is."""
        size = int(self.options["population"])
        if len(self.history) < 2:
            return self.sample(size, batch)
        self.generation += 1
        return self._breed(size, set(batch))

    def state(self) -> dict[str, Any]:
        return {**super().state(), "generation": self.generation}
