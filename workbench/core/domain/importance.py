"""Which slots matter: per-slot importance for the score and for latency, and latency per slot value.

Method: Optuna's PED-ANOVA evaluator (``optuna.importance.PedAnovaImportanceEvaluator``, Watanabe
et al., IJCAI 2023). It asks "how differently is each slot distributed among the best trials than
among all trials?" (a Pearson divergence between Parzen estimates of the two), which is exactly the
tuning question: which decisions must be right to land in the top group. Why this one:

- no new dependency: fANOVA and mean-decrease-impurity in Optuna need scikit-learn, which the
  workbench does not otherwise install; PED-ANOVA is plain NumPy inside Optuna (already required);
- deterministic: no random forest, so the same trials give the same shares (a subsample of large
  sessions is drawn with a seeded generator);
- fast: about 0.5 s for 2,000 trials (most of it building the in-memory Optuna study);
- rank based: only the order of the target matters, so latency in ms or its log give the same
  answer, and one huge outlier cannot dominate.

A slot is handed to Optuna as a ``CategoricalDistribution`` of its domain: domains are mostly
short lists, and treating ``block_size`` 32..1024 as categories makes no smoothness assumption. A
numeric slot of more values than :data:`MAX_CATEGORICAL_NUMBERS` is a range instead (see
:func:`_distribution`): each of its values is seen about once, and as categories it looked
uninformative whatever it did.

Targets:

- ``score`` (the ranking's score under the constraints and weights in force, larger is better):
  failed and infeasible trials count as the worst score (0), because a slot whose values make
  configs fail or break a constraint matters for finding a usable config. The top group is the
  best 10% of trials, or fewer when fewer are feasible (at least 2 feasible trials are needed).
- ``latency_ms`` (smaller is better): only ``ok`` trials with a latency; failures have no latency.

Below :data:`MIN_TRIALS` usable trials the result is empty with a ``reason``: PED-ANOVA needs at
least two trials in the top 10%, and with fewer the shares are noise. See ``docs/export.md`` for
how to read the figures honestly.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import numpy as np

from workbench.core.domain.measurement import LATENCY, Status, Trial
from workbench.core.domain.objective import Constraints, Weights, rank
from workbench.core.domain.session import Session

if TYPE_CHECKING:  # (optuna loads lazily, when importance is asked for)
    from optuna.distributions import BaseDistribution

#: Target names accepted by :func:`slot_importance`.
SCORE = "score"
TARGETS: tuple[str, ...] = (SCORE, LATENCY)
#: Usable trials needed before importance is computed (PED-ANOVA needs 2 in the top 10%).
MIN_TRIALS = 20
#: The top group's share of the trials (PED-ANOVA's gamma').
TOP_QUANTILE = 0.1
#: Larger sessions are subsampled (seeded) to keep one computation well under a second.
MAX_TRIALS = 2000
METHOD = "PED-ANOVA (Optuna's importance evaluator)"


@dataclass(frozen=True)
class Importance:
    """Slot -> share of importance (shares sum to 1, largest first); empty with a reason when unknown."""

    target: str
    shares: dict[str, float] = field(default_factory=dict)
    n_trials: int = 0
    reason: str = ""
    method: str = METHOD
    #: Slots whose declared domain holds one value (a recording's parameter it never varied):
    #: left out of the shares, where a 0 % bar read as a finding about a slot nobody tuned.
    fixed: tuple[str, ...] = ()
    #: The usable trials a seeded sample of :attr:`n_trials` was drawn from (None: all were used).
    #: Said wherever the shares are: another sample moves them by a few points and can swap the
    #: first two slots, and "2000 trials" of a 4,362-trial session read as all of them.
    sampled_from: int | None = None

    @property
    def counted(self) -> str:
        """``2000 trials (a seeded sample of the 4362)`` or ``80 trials``: what the shares are of."""
        sample = f" (a seeded sample of the {self.sampled_from})" if self.sampled_from is not None else ""
        return f"{self.n_trials} trials{sample}"

    @property
    def available(self) -> bool:
        return bool(self.shares)

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "shares": dict(self.shares), "n_trials": self.n_trials,
                "sampled_from": self.sampled_from, "reason": self.reason, "method": self.method,
                "fixed": list(self.fixed)}


@dataclass(frozen=True)
class ValueStats:
    """Latencies of the ok trials that gave a slot one value, plus how many trials with it failed
    and how many were stopped early under the latency limit (aborted: not a failure, a candidate
    the limit ruled out, so a view says them apart)."""

    value: Any
    latencies: np.ndarray
    n_trials: int
    n_failed: int
    n_aborted: int = 0

    @property
    def n_ok(self) -> int:
        return int(self.latencies.size)

    def quartiles(self) -> tuple[float, float, float]:
        """(q1, median, q3) of the latencies (NaN when no ok trial has this value)."""
        if self.latencies.size == 0:
            return (math.nan, math.nan, math.nan)
        q1, med, q3 = np.percentile(self.latencies, [25, 50, 75])
        return (float(q1), float(med), float(q3))


def _domains(trials: Sequence[Trial], names: Sequence[str], domains: Mapping[str, Sequence[Any]] | None) -> dict[str, list[Any]]:
    """Each slot's values: the declared domain when given, else the values seen (first-seen order)."""
    out: dict[str, list[Any]] = {}
    for name in names:
        if domains is not None and name in domains:
            out[name] = list(domains[name])
            continue
        seen: dict[Any, None] = {}
        for t in trials:
            if name in t.config:
                seen.setdefault(t.config[name], None)
        out[name] = list(seen)
    return out


def _targets(trials: Sequence[Trial], target: str, constraints: Constraints | None,
             weights: Weights | None) -> tuple[np.ndarray, np.ndarray, int, bool]:
    """(values, usable mask, top count hint, lower_is_better) for the chosen target."""
    if target == SCORE:
        ranking = rank(trials, constraints, weights)
        score = np.where(ranking.feasible, np.nan_to_num(ranking.score, nan=0.0), 0.0)
        return score, np.ones(len(trials), dtype=bool), ranking.n_feasible, False
    if target == LATENCY:
        lat = np.array([t.metric(LATENCY) if t.ok else math.nan for t in trials], dtype=float)
        usable = np.isfinite(lat)
        return lat, usable, int(usable.sum()), True
    raise ValueError(f"unknown importance target {target!r}; choose one of {', '.join(TARGETS)}")


def slot_importance(
    trials: Iterable[Trial],
    names: Sequence[str],
    *,
    target: str = SCORE,
    constraints: Constraints | None = None,
    weights: Weights | None = None,
    domains: Mapping[str, Sequence[Any]] | None = None,
    max_trials: int = MAX_TRIALS,
    seed: int = 0,
) -> Importance:
    """Importance of each slot in ``names`` for ``target`` (``score`` or ``latency_ms``).

    ``domains`` (slot -> declared values) keeps the categories stable as trials arrive; without
    it the values seen are used. Slots that took a single value in the trials analysed get 0;
    slots whose declared domain has one value are left out (:attr:`Importance.fixed`).
    """
    fixed = tuple(n for n in names if domains is not None and len(domains.get(n, ())) == 1)
    names = [n for n in names if n not in fixed]
    trials = [t for t in trials if all(n in t.config for n in names)]
    values, usable, n_good, lower_better = _targets(trials, target, constraints, weights)
    rows = np.flatnonzero(usable)
    if rows.size < MIN_TRIALS:
        what = "trials" if target == SCORE else "successful trials with a latency"
        return Importance(target, n_trials=int(rows.size),
                          reason=f"{rows.size} {what}; importance needs at least {MIN_TRIALS}", fixed=fixed)
    sampled_from = None
    if rows.size > max_trials:  # seeded subsample: deterministic and fast on huge recordings
        sampled_from = int(rows.size)
        rows = np.sort(np.random.default_rng(seed).choice(rows, size=max_trials, replace=False))
        n_good = int(np.count_nonzero(values[rows] > 0)) if target == SCORE else rows.size
    if n_good < 2:
        return Importance(target, n_trials=int(rows.size),
                          reason=f"{n_good} feasible trial(s); importance needs at least 2 to compare", fixed=fixed,
                          sampled_from=sampled_from)
    # the top group as a count, handed to Optuna as a quantile half a trial below it: Optuna keeps
    # ceil(quantile * n) trials, and n_good / n * n can round up past n_good (7 / 100 * 100 =
    # 7.000000000000001), which put a failed trial (score 0) at the cutoff and every trial, tied
    # at 0, in the top group: no slot separated anything
    top = max(2, min(math.ceil(TOP_QUANTILE * rows.size), n_good))
    quantile = (top - 0.5) / rows.size
    varying = [n for n in names if len({trials[i].config[n] for i in rows}) > 1]
    shares = {n: 0.0 for n in names}
    if varying:
        computed = _ped_anova([trials[i] for i in rows], values[rows], varying,
                              _domains(trials, varying, domains), quantile, lower_better)
        shares.update(computed)
    total = sum(shares.values())
    if not total > 0:
        return Importance(target, n_trials=int(rows.size),
                          reason="no slot separates the best trials from the rest", fixed=fixed,
                          sampled_from=sampled_from)
    ordered = dict(sorted(((k, v / total) for k, v in shares.items()), key=lambda kv: -kv[1]))
    return Importance(target, ordered, n_trials=int(rows.size), fixed=fixed, sampled_from=sampled_from)


def _ped_anova(trials: Sequence[Trial], values: np.ndarray, names: Sequence[str],
               domains: Mapping[str, list[Any]], quantile: float, lower_better: bool) -> dict[str, float]:
    """Run Optuna's PED-ANOVA on an in-memory study built from the trials (imported lazily)."""
    import optuna  # heavy import, only when importance is asked for
    from optuna.importance import PedAnovaImportanceEvaluator

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    dists: dict[str, BaseDistribution] = {n: _distribution(domains[n]) for n in names}
    frozen = [
        optuna.trial.create_trial(
            params={n: _plain(t.config[n]) for n in names}, distributions=dists, value=float(v)
        )
        for t, v in zip(trials, values)
    ]
    study = optuna.create_study(direction="minimize" if lower_better else "maximize")
    study.add_trials(frozen)
    evaluator = PedAnovaImportanceEvaluator(target_quantile=min(quantile, 0.999))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ExperimentalWarning on older Optuna versions
        raw = evaluator.evaluate(study, params=list(names))
    return {n: max(float(raw.get(n, 0.0)), 0.0) + 0.0 for n in names}  # (+ 0.0: never -0.0, said "-0%")


#: Most values a numeric slot may have to be weighed as categories: beyond it each value is seen
#: about once, and PED-ANOVA as categories found such a slot uninformative whatever it did (a
#: slot of 200,000 values that decided the latency had 0.5% of the importance).
MAX_CATEGORICAL_NUMBERS = 16


def _distribution(domain: Sequence[Any]) -> "BaseDistribution":
    """The Optuna distribution a slot's values are weighed in: categories, except a numeric slot of
    more than :data:`MAX_CATEGORICAL_NUMBERS` values, which is a range (on a log scale when its
    positive values span two decades or more), so that near values count as near."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    plain = [_plain(v) for v in domain]
    numbers = [v for v in plain if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(numbers) <= MAX_CATEGORICAL_NUMBERS or len(numbers) < len(plain) or min(numbers) == max(numbers):
        return CategoricalDistribution(tuple(plain))
    low, high = min(numbers), max(numbers)
    log = low > 0 and high / low >= 100
    if all(isinstance(v, int) for v in numbers):
        return IntDistribution(int(low), int(high), log=log)
    return FloatDistribution(float(low), float(high), log=log)


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def value_distributions(
    trials: Iterable[Trial],
    names: Sequence[str],
    domains: Mapping[str, Sequence[Any]] | None = None,
    metric: str = LATENCY,
) -> dict[str, list[ValueStats]]:
    """For each slot, per value (domain order): the ok trials' ``metric``, the failure count and the
    count of aborted trials.

    Values of the domain that no trial tried are left out (an empty box says nothing).
    """
    trials = list(trials)
    order = _domains(trials, names, domains)
    out: dict[str, list[ValueStats]] = {}
    lat = np.array([t.metric(metric) if t.ok else math.nan for t in trials], dtype=float)
    for name in names:
        by_value: dict[Any, list[int]] = {}
        for i, t in enumerate(trials):
            if name in t.config:
                by_value.setdefault(t.config[name], []).append(i)
        stats = []
        for value in order[name] + [v for v in by_value if v not in order[name]]:
            rows = by_value.get(value)
            if not rows:
                continue
            column = lat[rows]
            failed = sum(trials[i].status.is_failure for i in rows)
            aborted = sum(trials[i].status is Status.ABORTED for i in rows)
            stats.append(ValueStats(value, column[np.isfinite(column)], len(rows), failed, aborted))
        out[name] = stats
    return out


def session_importance(session: Session, constraints: Constraints | None = None,
                       weights: Weights | None = None, seed: int = 0,
                       targets: Sequence[str] = TARGETS,
                       trials: Sequence[Trial] | None = None) -> dict[str, Importance]:
    """Importance of a session's slots for each of ``targets``, under its (or the given) objective.

    ``trials``: the ones to explain (default: all). A sweep passes one size's: latencies of
    different problem sizes ranked together would say which size is fast, not which slot.
    """
    names, domains = session_slots(session)
    constraints = session.constraints if constraints is None else constraints
    weights = session.weights if weights is None else weights
    chosen = list(session.trials if trials is None else trials)
    return {
        target: slot_importance(chosen, names, target=target, constraints=constraints,
                                weights=weights, domains=domains, seed=seed)
        for target in targets
    }


def session_slots(session: Session) -> tuple[list[str], dict[str, list[Any]]]:
    """Slot names and declared domains of a session (from its space, else from its trials)."""
    space = getattr(session, "space", None)
    if space is not None:
        return [s.name for s in space.slots], {s.name: list(s.values) for s in space.slots}
    names: dict[str, None] = {}
    for t in session.trials:
        for key in t.config:
            names.setdefault(key, None)
    return list(names), {}


__all__ = [
    "Importance",
    "MAX_TRIALS",
    "METHOD",
    "MIN_TRIALS",
    "SCORE",
    "TARGETS",
    "ValueStats",
    "session_importance",
    "session_slots",
    "slot_importance",
    "value_distributions",
]
