"""Tree-structured Parzen estimator, through Optuna's ask-and-tell API, held to the valid space.

Why Optuna: TPE is a well-tested Bayesian optimiser; writing our own would be worse. What we add
is the part Optuna does not know: the space has restrictions and the session has history.

- Each slot is a categorical distribution (or, with ``ordinal``, an integer over its value index
  so that TPE's kernels see that 128 lies between 64 and 256). A slot with more than
  :data:`CATEGORICAL_LIMIT` values is always an integer over its index: Optuna copies a categorical's
  choices with every trial and weighs every choice in every observation, so a domain of a million
  values costs seconds per proposal and memory that grows with both, while a categorical that
  large can learn nothing from the few trials a run measures anyway.
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
import warnings
from typing import Any, Sequence

import numpy as np
import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, IntDistribution
from optuna.trial import TrialState, create_trial

from workbench.core.domain.measurement import Status, Trial
from workbench.core.domain.search_objective import INFEASIBLE, Objective
from workbench.core.domain.space import Config, SearchSpace
from workbench.search._common import IndexedStrategy
from workbench.search.base import Option

#: What a failed evaluation is worth to TPE: worse than every feasible cost (below 1e99) and every
#: infeasible one (``INFEASIBLE`` times one plus the miss), still a finite number.
FAILURE_VALUE = INFEASIBLE * 1e100
#: What a failed evaluation violates each bound by, for Optuna's constrained TPE (which ranks
#: infeasible trials by their summed violation): more than any measured miss. A failure told the
#: violation of a metric it did not report (1: a miss of 100 %) looked nearer the feasible region
#: than every config missing a latency bound by more, and the search went where configs fail.
FAILURE_VIOLATION = 1e100
#: The most values a slot may have and still be a categorical distribution (see the module docstring).
CATEGORICAL_LIMIT = 1024
#: The user attribute holding a trial's constraint values for Optuna's ``constraints_func``.
CONSTRAINTS_ATTR = "constraints"
#: Optuna >= 5 stores constraint values on the trial (``set_constraint``) and deprecates ``constraints_func``.
_TRIAL_CONSTRAINTS = hasattr(optuna.trial.FrozenTrial, "set_constraint")


def _constraint_values(frozen: optuna.trial.FrozenTrial) -> list[float]:
    """Optuna's ``constraints_func``: the relative misses stored with the trial (module level, so
    the strategy pickles)."""
    return list(frozen.user_attrs.get(CONSTRAINTS_ATTR, [1.0]))

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _store_constraints(trial: Any, attrs: dict[str, Any]) -> None:
    """Put a trial's constraint values where the installed Optuna's TPE reads them."""
    values = attrs.get(CONSTRAINTS_ATTR)
    if values is None:
        return
    trial.set_user_attr(CONSTRAINTS_ATTR, values)
    if _TRIAL_CONSTRAINTS:
        for k, value in enumerate(values):
            trial.set_constraint(f"c{k}", value)


def optuna_seed(seed: int) -> int:
    """``seed`` (any of the run's, 0 to 2**63-1) as the 32-bit seed Optuna's sampler takes: itself
    below 2**32 (those runs stay as they were), a hash of it above. Taken modulo 2**32, seeds 2**32
    apart gave the same run; hashed, a larger seed still shares its run with the one seed below
    2**32 its hash equals, as 32 bits cannot give every seed a run of its own."""
    if 0 <= seed < 2**32:
        return seed
    return int(np.random.SeedSequence(seed).generate_state(1)[0])


class TPE(IndexedStrategy):
    name = "tpe"
    description = "Optuna's TPE sampler, constrained to valid unmeasured configs"
    multi_objective = True  # searches a Pareto front when the objective has several metrics
    OPTIONS = (
        Option("startup", 10, "Random configs before TPE starts modelling", low=1, high=10000),
        Option("multivariate", True, "Model slots jointly (captures interactions) instead of one by one"),
        Option(
            "ordinal", False,
            f"Treat ordered slots as integers over their value index (else categorical; slots of more than "
            f"{CATEGORICAL_LIMIT} values always are)",
        ),
        Option("failures", "worst", "How failed trials are told to TPE", ("worst", "ignore")),
        Option(
            "constraints", "optuna",
            "How constraints reach TPE: Optuna's constraints_func ('optuna'), the graded cost ('penalty'), "
            "or not at all, the best feasible being picked afterwards ('ignore')",
            ("optuna", "penalty", "ignore"),
        ),
    )

    def __init__(self, space: SearchSpace, seed: int = 0, **options: Any) -> None:
        super().__init__(space, seed=seed, **options)
        ordinal = bool(self.options["ordinal"])
        self._ordinal = [
            (ordinal and bool(ordered)) or int(size) > CATEGORICAL_LIMIT
            for ordered, size in zip(self.coder.ordered, self.coder.sizes)
        ]
        self.distributions: dict[str, BaseDistribution] = {}
        for k, name in enumerate(self.coder.names):
            if self._ordinal[k]:
                self.distributions[name] = IntDistribution(0, int(self.coder.sizes[k]) - 1)
            else:
                self.distributions[name] = CategoricalDistribution(self.coder.values[k])
        self._study: optuna.Study | None = None  # built at first use, for the objective then in force
        self.pending: dict[str, optuna.Trial] = {}  # config id -> the Optuna trial that proposed it

    @property
    def study(self) -> optuna.Study:
        """The Optuna study; with constraints in force and ``constraints="optuna"`` its sampler gets
        Optuna's ``constraints_func``, reading each trial's relative misses (<= 0 holds)."""
        if self._study is None:
            constrained = self._constrained()
            with warnings.catch_warnings():
                # Optuna before 4 calls multivariate and constant_liar experimental: four lines on
                # stderr in every run, about the library, not the person's run
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                sampler = optuna.samplers.TPESampler(
                    seed=optuna_seed(int(self.seed)),
                    n_startup_trials=int(self.options["startup"]),
                    multivariate=bool(self.options["multivariate"]),
                    constant_liar=True,  # pending trials count as bad, so a parallel batch spreads out
                    # Optuna >= 5 reads constraint values stored on each trial; older ones call this
                    constraints_func=_constraint_values if constrained and not _TRIAL_CONSTRAINTS else None,
                )
            objectives = self._objectives()
            if objectives:  # a Pareto front: Optuna's multi-objective TPE (MOTPE)
                self._study = optuna.create_study(directions=["minimize"] * objectives, sampler=sampler)
            else:
                self._study = optuna.create_study(direction="minimize", sampler=sampler)
        return self._study

    def _objectives(self) -> int:
        """How many metrics a multi-objective run searches (0: one cost)."""
        return len(getattr(self.objective, "objectives", ()))

    def _constrained(self) -> bool:
        return self.options["constraints"] != "penalty" and bool(getattr(self.objective, "bounds", ()))

    def _full_objective(self) -> Objective:
        """The run's :class:`Objective`: only one has several metrics or bounds, so only the
        branches that found those ask for it."""
        objective = self.objective
        assert isinstance(objective, Objective)
        return objective

    def _told_value(self, trial: Trial) -> tuple[Any, dict[str, Any]]:
        """What TPE is told for a finished trial: the value (values, with several objectives),
        and the trial's constraint values."""
        if self._objectives():
            full = self._full_objective()
            values = [v if math.isfinite(v) else FAILURE_VALUE for v in full.values(trial)]
            if self.options["constraints"] == "penalty" and full.bounds:
                # the graded cost on every objective: an infeasible trial is dominated by every
                # feasible one, a near miss dominates a far one, and failures stay behind both
                if trial.status is Status.ABORTED or (trial.ok and full.violation(trial) > 0):
                    values = [INFEASIBLE * (1.0 + full.violation(trial))] * len(values)
                return values, {}
            if not self._constrained() or self.options["constraints"] == "ignore":
                return values, {}
            return values, {CONSTRAINTS_ATTR: self._violations(full, trial)}
        if not self._constrained():  # the graded cost: infeasible behind feasible, failures last
            score = self.scores[trial.config.id]
            return (FAILURE_VALUE if not math.isfinite(score) else score), {}
        full = self._full_objective()
        value = float(full.value(trial)) if trial.ok else math.inf
        value = value if math.isfinite(value) else FAILURE_VALUE
        if self.options["constraints"] == "ignore":
            return value, {}  # constraints only filter the result afterwards
        return value, {CONSTRAINTS_ATTR: self._violations(full, trial)}

    @staticmethod
    def _violations(full: Objective, trial: Trial) -> list[float]:
        """A trial's constraint values for Optuna: its misses, or :data:`FAILURE_VIOLATION` on every
        bound for a failure (an aborted candidate's latency bound is a measured miss)."""
        if not trial.ok and trial.status is not Status.ABORTED:
            return [FAILURE_VIOLATION] * len(full.violations(trial))
        return [float(v) for v in full.violations(trial)]

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
                self.pending[config.id] = otrial
            else:  # Optuna's wish was invalid or known: close it, measure the repair instead
                self.study.tell(otrial, state=TrialState.FAIL)
            out.append(config)
            batch.add(config.id)
        return self.take(out)

    def _update(self, trials: Sequence[Trial]) -> None:
        super()._update(trials)
        for trial in trials:
            failed = trial.status.is_failure
            attrs: dict[str, Any]
            if failed and self.options["failures"] == "ignore":
                value, attrs, state = None, {}, TrialState.FAIL
            else:
                (value, attrs), state = self._told_value(trial), TrialState.COMPLETE
            number = self.pending.pop(trial.config.id, None)
            if number is not None:
                _store_constraints(number, attrs)  # before telling: a finished trial is frozen
                self.study.tell(number, value, state=state)
            elif state is TrialState.COMPLETE:
                many = isinstance(value, list)
                frozen = create_trial(params=self._params(trial.config), distributions=self.distributions,
                                      value=None if many else value, values=value if many else None)
                _store_constraints(frozen, attrs)
                self.study.add_trial(frozen)

    def state(self) -> dict[str, Any]:
        return {**super().state(), "optuna_trials": len(self.study.trials)}
