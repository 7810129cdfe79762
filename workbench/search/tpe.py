"""Tree-structured Parzen estimator, through Optuna's ask-and-tell API, held to the valid space.

Why Optuna: TPE is a well-tested Bayesian optimiser; writing our own would be worse. What we add
is the part Optuna does not know: the space has restrictions and the session has history.

- Each slot is a categorical distribution (or, with ``ordinal``, an integer over its value index
  so that TPE's kernels see that 128 lies between 64 and 256).
- When Optuna suggests a config that is invalid or already measured, its trial is closed as FAIL
  (Optuna then ignores it) and we measure the nearest valid unmeasured config instead; that
  config's result is added to the study with ``add_trial`` under its *own* parameters, so TPE
  learns from what was actually measured, never from a wish.
- Failed measurements are told as a very large value (``failures="worst"``): TPE ranks them into
  its "bad" density and steers away from the region; ``failures="ignore"`` closes them as FAIL.
- Trials measured before this strategy existed (a reopened session) are added the same way.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, IntDistribution
from optuna.trial import TrialState, create_trial

from workbench.core.measurement import Trial
from workbench.core.space import Config, SearchSpace
from workbench.search._common import IndexedStrategy
from workbench.search.base import Option

#: What a failed evaluation is worth to TPE: worse than any real latency, still a finite number.
FAILURE_VALUE = 1e30

optuna.logging.set_verbosity(optuna.logging.WARNING)


class TPE(IndexedStrategy):
    name = "tpe"
    description = "Optuna's TPE sampler, constrained to valid unmeasured configs"
    OPTIONS = (
        Option("startup", 10, "Random configs before TPE starts modelling"),
        Option("multivariate", True, "Model slots jointly (captures interactions) instead of one by one"),
        Option("ordinal", False, "Treat ordered slots as integers over their value index (else categorical)"),
        Option("failures", "worst", "How failed trials are told to TPE", ("worst", "ignore")),
    )

    def __init__(self, space: SearchSpace, seed: int = 0, **options: Any) -> None:
        super().__init__(space, seed=seed, **options)
        self._ordinal = [bool(self.options["ordinal"]) and bool(o) for o in self.coder.ordered]
        self.distributions: dict[str, BaseDistribution] = {}
        for k, name in enumerate(self.coder.names):
            if self._ordinal[k]:
                self.distributions[name] = IntDistribution(0, int(self.coder.sizes[k]) - 1)
            else:
                self.distributions[name] = CategoricalDistribution(self.coder.values[k])
        sampler = optuna.samplers.TPESampler(
            seed=int(seed) % (2**32),
            n_startup_trials=int(self.options["startup"]),
            multivariate=bool(self.options["multivariate"]),
            constant_liar=True,  # pending trials count as bad, so a parallel batch spreads out
        )
        self.study = optuna.create_study(direction="minimize", sampler=sampler)
        self.pending: dict[str, int] = {}  # config id -> number of the Optuna trial that proposed it

    # --- translation -------------------------------------------------------------------------
    def _params(self, config: Config) -> dict[str, Any]:
        idx = self.coder.encode(config)
        return {
            name: (int(idx[k]) if self._ordinal[k] else config[name]) for k, name in enumerate(self.coder.names)
        }

    def _index(self, params: dict[str, Any]) -> tuple[int, ...]:
        return tuple(
            int(params[name]) if self._ordinal[k] else self.coder.values[k].index(params[name])
            for k, name in enumerate(self.coder.names)
        )

    # --- ask / tell ----------------------------------------------------------------------------
    def ask(self, n: int) -> list[Config]:
        out: list[Config] = []
        batch: set[str] = set()
        while len(out) < n and not self.exhausted():
            otrial = self.study.ask(self.distributions)
            wished = self._index(otrial.params)
            config = self.repair(wished, batch)
            if config is None:
                self.study.tell(otrial, state=TrialState.FAIL)
                break
            if self.coder.encode(config) == wished:
                self.pending[config.id] = otrial.number
            else:  # Optuna's wish was invalid or known: close it, measure the repair instead
                self.study.tell(otrial, state=TrialState.FAIL)
            out.append(config)
            batch.add(config.id)
        return self.take(out)

    def tell(self, trials: Sequence[Trial]) -> None:
        super().tell(trials)
        for trial in trials:
            score = self.scores[trial.config.id]
            failed = not math.isfinite(score)
            if failed and self.options["failures"] == "ignore":
                value, state = None, TrialState.FAIL
            else:
                value, state = (FAILURE_VALUE if failed else score), TrialState.COMPLETE
            number = self.pending.pop(trial.config.id, None)
            if number is not None:
                self.study.tell(number, value, state=state)
            elif state is TrialState.COMPLETE:
                self.study.add_trial(
                    create_trial(params=self._params(trial.config), distributions=self.distributions, value=value)
                )

    def state(self) -> dict[str, Any]:
        return {**super().state(), "optuna_trials": len(self.study.trials)}
