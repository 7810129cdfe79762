"""A portfolio of a model-based and a local strategy that share every measurement.

Why: on real tuning landscapes no single method wins at every budget. A model (Optuna's TPE) finds
the good *region* of a smooth landscape in few evaluations, but it is poor at the last step into
a narrow optimum; a neighbourhood method (annealing, iterated local search) walks into a needle
once it stands next to it, but wastes evaluations while it has no good start. The hybrid runs both
members side by side on one stream of evaluations: each proposal comes from one member (the model
with chance ``model_share`` for the first ``model_until`` evaluations; after that each member's
share follows its recent improvements of the best config, a decayed count, never below
``floor``), and *every* result is told to *both* members, so the local walk continues from whatever the model found, and the
model learns from the local walk's neighbours.

The members are ordinary strategies of this package; the hybrid only keeps their bookkeeping in
step (a config one member hands out is marked as taken in the other, so nothing is proposed twice)
and passes the run's objective on to both.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

import numpy as np

from workbench.core.domain.measurement import Trial
from workbench.core.domain.space import Config, SearchSpace
from workbench.search._common import IndexedStrategy
from workbench.core.errors import WorkbenchError
from workbench.search.base import MAX_SEED, Option, Strategy, create_strategy, strategy_class


#: The members' roles, in the order of ``Hybrid.members`` (each an option naming its strategy).
ROLES = ("model", "walker")


class Hybrid(IndexedStrategy):
    name = "hybrid"
    description = "Portfolio: TPE proposals early, a local walk later; both learn from every evaluation"
    OPTIONS = (
        Option("model", "tpe", "The model-based member", ("tpe", "agents")),
        Option("walker", "annealing", "The neighbourhood member", ("annealing", "local", "agents", "genetic")),
        Option("model_share", 0.7, "Chance that a proposal comes from the model while it leads", low=0, high=1),
        Option("model_until", 20, "Evaluations during which the model leads with model_share", low=0, high=100000),
        Option("late_share", 0.2, "The model's share after model_until evaluations (when not adaptive)", low=0, high=1),
        Option("adaptive", True, "After model_until, share proposals by each member's recent improvements instead"),
        Option("floor", 0.1, "Least share of either member when adaptive", low=0, high=0.5),
    )

    def __init__(self, space: SearchSpace, seed: int = 0, **options: Any) -> None:
        super().__init__(space, seed=seed, **options)
        for role in ROLES:
            _check_member_suits(role, self.options[role], space)
        self.members: list[Strategy] = [
            create_strategy(self.options["model"], space, seed=self.seed),
            create_strategy(self.options["walker"], space, seed=(self.seed + 7919) % (MAX_SEED + 1)),
        ]
        self.picks = [0, 0]
        self.owner: dict[str, int] = {}  # config id -> member that proposed it
        self.wins = np.ones(2)  # decayed count of improvements of the best config, per member

    def set_objective(self, objective: Callable[[Trial], float]) -> None:
        """Both members re-rank what they were told; the portfolio's own bookkeeping follows."""
        self._objective = objective
        for member in self.members:
            member.set_objective(objective)
        self._rescore()

    def exclude(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        super().exclude(ids)
        for member in self.members:
            member.exclude(ids)

    def _update(self, trials: Sequence[Trial]) -> None:
        for trial in trials:
            score = float(self.objective(trial))
            which = self.owner.pop(trial.config.id, None)
            if which is not None and score < self.best_score:
                self.wins *= 0.9
                self.wins[which] += 1.0
        super()._update(trials)
        for member in self.members:
            member.tell(trials)

    def _share(self) -> float:
        done = len(self.taken())
        if self.options["adaptive"] and done >= self.options["model_until"]:
            floor = float(self.options["floor"])
            return float(np.clip(self.wins[0] / self.wins.sum(), floor, 1.0 - floor))
        return float(self.options["model_share"] if done < self.options["model_until"] else self.options["late_share"])

    def _mark(self, member: Strategy, config: Config) -> None:
        """Tell ``member`` that ``config`` was handed out by the other member."""
        if isinstance(member, IndexedStrategy):
            member.take([config])
        else:  # pragma: no cover - every member of this package is indexed
            member.exclude((config.id,))

    def ask(self, n: int) -> list[Config]:
        out: list[Config] = []
        batch: set[str] = set()
        while len(out) < n and not self.exhausted():
            first = 0 if self.rng.random() < self._share() else 1
            config = None
            for which in (first, 1 - first):  # a member with nothing left hands over to the other
                cands = self.members[which].ask(1)
                if cands and self.fresh(cands[0], batch):
                    config = cands[0]
                    self.picks[which] += 1
                    self.owner[config.id] = which
                    self._mark(self.members[1 - which], config)
                    break
            if config is None:
                sample = self.sample(1, batch)
                if not sample:
                    break
                config = sample[0]
                for member in self.members:
                    self._mark(member, config)
            out.append(config)
            batch.add(config.id)
        return self.take(out)

    def state(self) -> dict[str, Any]:
        """Each member's picks and state by its role (its strategy is an option): the same
        strategy may fill both roles, and keyed by name one of them was lost."""
        return {
            **super().state(),
            "picks": {role: int(p) for role, p in zip(ROLES, self.picks)},
            "model_share": round(self._share(), 3),
            "members": {role: m.state() for role, m in zip(ROLES, self.members)},
        }


def _check_member_suits(role: str, name: str, space: SearchSpace) -> None:
    """Refuse, naming the portfolio's option, a member that cannot search ``space``: the member's
    own refusal said "strategy 'agents' cannot search this space ... pick another strategy" to a
    person who had picked ``hybrid``, and another strategy was not the way out."""
    reason = strategy_class(name).unsuited(space)
    if reason is None:
        return
    choices = next(option.choices for option in Hybrid.OPTIONS if option.name == role) or ()
    others = [c for c in choices if c != name and strategy_class(c).unsuited(space) is None]
    instead = f"set its {role} option to {' or '.join(others)}" if others else "pick another strategy"
    raise WorkbenchError(f"strategy 'hybrid': its {role} member {name!r} cannot search this space ({reason}); "
                         f"{instead}, or narrow the domains")
