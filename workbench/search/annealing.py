"""Simulated annealing over the neighbour graph, with restarts.

Why: a greedy climb stops at the first local optimum; annealing sometimes accepts a worse
neighbour (with probability ``exp(-relative_loss / T)``) so it can cross ridges, and a cooling
temperature turns it into a climb as the budget runs. Losses are relative (``f(y) / f(x) - 1``),
so the same temperature works for a 5 us kernel and a 5 ms one.

Measured neighbours are not re-measured: the walk may step onto them using their known score,
which is free. When every neighbour of the current config is known, or the temperature has
cooled out, the walk restarts (from the best config, or from a random one).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from workbench.core.domain.measurement import Trial
from workbench.core.domain.space import Config, SearchSpace
from workbench.search._common import IndexedStrategy
from workbench.search.base import Option, OptionsConflict


class Annealing(IndexedStrategy):
    name = "annealing"
    description = "Simulated annealing over one-slot neighbours with restarts"
    OPTIONS = (
        Option("t_start", 0.3, "Initial temperature, in units of relative latency loss", low=1e-06, high=100),
        Option("t_min", 0.005, "Restart when the temperature cools below this", low=1e-09, high=10),
        Option("cooling", 0.9, "Temperature multiplier per evaluation", low=0.01, high=0.999),
        Option("restart_best", 0.5, "Chance that a restart starts from the best config (else random)", low=0, high=1),
    )

    @classmethod
    def options_conflict(cls, options: Mapping[str, Any]) -> OptionsConflict | None:
        if options["t_min"] >= options["t_start"]:
            return OptionsConflict(f"t_min={options['t_min']:g} must be below t_start={options['t_start']:g} "
                                   "(the search would restart at every step)", ("t_min", "t_start"))
        return None
    batch_parallel = False

    def __init__(self, space: SearchSpace, seed: int = 0, **options: Any) -> None:
        super().__init__(space, seed=seed, **options)
        self.current: Config | None = None
        self.current_score = math.inf
        self.temperature = float(self.options["t_start"])

    def _accept(self, score: float) -> bool:
        if not math.isfinite(score):
            return False
        if score <= self.current_score:
            return True
        if not math.isfinite(self.current_score) or self.current_score <= 0:
            return True
        loss = score / self.current_score - 1.0
        return bool(self.rng.random() < math.exp(-loss / max(self.temperature, 1e-12)))

    def _update(self, trials: Sequence[Trial]) -> None:
        super()._update(trials)
        for trial in trials:
            score = self.scores[trial.config.id]
            if self.current is None or self._accept(score):
                self.current, self.current_score = trial.config, score
            self.temperature *= float(self.options["cooling"])

    def _restart(self, batch: set[str]) -> Config | None:
        self.temperature = float(self.options["t_start"])
        if self.best_config is not None and self.rng.random() < self.options["restart_best"]:
            self.current, self.current_score = self.best_config, self.best_score
            return None
        sample = self.sample(1, batch)
        return sample[0] if sample else None

    def _next(self, batch: set[str]) -> Config | None:
        """A fresh neighbour of the current config, walking over known neighbours for free."""
        if self.current is None:
            sample = self.sample(1, batch)
            return sample[0] if sample else None
        if self.temperature < self.options["t_min"]:
            jump = self._restart(batch)
            if jump is not None:
                return jump
        for _ in range(32):  # free moves over already measured neighbours
            nbrs = self.neighbourhood(self.current)
            fresh = [c for c in nbrs if self.fresh(c, batch)]
            if fresh:
                return fresh[int(self.rng.integers(len(fresh)))]
            known = [c for c in nbrs if c.id in self.scores]
            if not known:
                break
            step = known[int(self.rng.integers(len(known)))]
            if self._accept(self.scores[step.id]):
                self.current, self.current_score = step, self.scores[step.id]
        jump = self._restart(batch)
        if jump is None:  # restarted at the best: try its surroundings, else anywhere
            jump = self.repair(self.coder.encode(self.current), batch)
        return jump

    def ask(self, n: int) -> list[Config]:
        out: list[Config] = []
        batch: set[str] = set()
        while len(out) < n and not self.exhausted():
            config = self._next(batch)
            if config is None or not self.fresh(config, batch):
                break
            out.append(config)
            batch.add(config.id)
        return self.take(out)

    def state(self) -> dict[str, Any]:
        return {**super().state(), "temperature": self.temperature}
