"""The user's objective as one number per trial, for whatever steers the search.

The views rank trials by a score relative to the best seen (``objective.rank``), which moves as
the run finds better configs; a search needs a cost that does not move. :class:`Objective` is
built once per run from the constraints, the weights and the metric directions, and gives every
trial a cost, lower is better, in three tiers:

1. **feasible** trials: the weighted geometric mean of their metrics, each oriented so that
   smaller is better (``latency`` as it is, ``throughput`` as ``1 / throughput``). With latency the
   only weighted metric the cost *is* the latency. Scale-free and positive, so "1% better" means
   the same for every kernel and strategies may compare costs by ratio. A metric value of zero or
   below (no spills, a margin or an error in dB) has no logarithm; it stands for a tiny positive
   number that keeps the order of such values (:func:`_positive_log`), so they rank by their value,
   behind or ahead of every positive one as the direction says.
2. **infeasible** trials: ``INFEASIBLE * (1 + violation)``, where ``violation`` sums how far each
   bound is missed relative to its limit. Every infeasible trial ranks behind every feasible one,
   but a near miss ranks ahead of a far one, so a search learns where the boundary is instead of
   seeing a flat wall. An aborted candidate counts with the lower bound on its latency.
3. **failed** trials (compile error, wrong result, timeout ...): ``+inf``.

The object is immutable and cheap to build; changing constraints or weights during a run means
building a new one and handing it to the engine (``Engine.set_objective``).
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from workbench.core.errors import WorkbenchError
from workbench.core.domain.measurement import LATENCY, Status, Trial
from workbench.core.domain.metrics import METRICS, known_direction
from workbench.core.domain.objective import LATENCY_BOUND, Bound, Constraints, Weights, settled_misses
from workbench.core.domain.pareto import pareto_ranks

#: Cost of an infeasible trial that misses its bounds by nothing measurable; every feasible cost
#: (a latency in ms, an inverse throughput, a count of cycles ...) is far below it, so that no
#: feasible value is ever clipped into the infeasible tier (at 1e9, cycle counts of 2e9 and 9e9
#: tied with each other and with a near miss).
INFEASIBLE = 1e100
#: ``log`` of the number that a metric value of 0 stands for in the cost (values below it
#: follow in their order): far below any positive figure a kernel reports.
_LOG_ZERO = math.log(1e-30)
#: The largest log cost of a feasible trial that reports every weighted metric (costs beyond +-it,
#: e.g. the inverse of a rate of 1e-60, are held there: still feasible, never 0, which strategies
#: divide by, and no strategy tells such values apart usefully).
_LOG_FEASIBLE_MAX = math.log(1e49)
#: A feasible trial that leaves a weighted metric out costs, by its other metrics, between 1e50 and
#: 1e98: behind every trial that reports them all, ahead of every infeasible one, and ordered among
#: its kind, so a run in which no trial reports a weighted metric still searches by the others.
_LOG_PARTIAL_CENTRE = math.log(1e74)
_LOG_PARTIAL_HALF = math.log(1e24)
#: How much a bound on a metric the trial did not report counts as violated (relative units).
MISSING_VIOLATION = 1.0


def _positive_log(value: float) -> float:
    """``log(value)`` for a positive value (at least ``log(1e-30)``: smaller positive figures tie
    with it rather than rank past zero); for zero and below, a log under that which still rises
    with the value (``log(1e-30) - log(1 - value)``), so order is kept and no value, however
    negative, overflows."""
    return max(math.log(value), _LOG_ZERO) if value > 0 else _LOG_ZERO - math.log1p(-value)


def _relative_miss(bound: Bound, value: float) -> float:
    """How far ``value`` is past ``bound`` relative to its limit (<= 0: the bound holds). A value
    that is no finite number holds or misses the bound as :meth:`Bound.satisfied` says (what the
    views' ranking goes by: the two must not disagree about which trials are feasible), and a miss
    then counts as a missing figure's."""
    if not math.isfinite(value):
        return 0.0 if bound.check(value) else MISSING_VIOLATION
    scale = abs(bound.value) if bound.value != 0 else 1.0
    return (value - bound.value) / scale if bound.op == "<=" else (bound.value - value) / scale


@dataclass(frozen=True)
class Objective:
    """Constraints, weights and directions of one run, as a per-trial cost (see the module doc)."""

    constraints: Constraints = field(default_factory=Constraints)
    weights: Weights = field(default_factory=Weights)
    #: Two or more metrics searched for their Pareto front instead of one weighted score
    #: (a multi-objective run); empty for the usual single cost.
    objectives: tuple[str, ...] = ()
    # Derived once in __post_init__ from the fields above (not arguments, not compared).
    _bounds: tuple[Bound, ...] = field(init=False, repr=False, compare=False)
    _terms: tuple[tuple[str, float, int], ...] = field(init=False, repr=False, compare=False)
    _only_latency: bool = field(init=False, repr=False, compare=False)
    _directions: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "objectives", tuple(self.objectives))
        if len(self.objectives) == 1 or len(set(self.objectives)) != len(self.objectives):
            raise WorkbenchError(f"objectives: give two or more different metrics, got {', '.join(self.objectives)}")
        active = self.weights.active()
        directions: dict[str, int] = {}
        for metric in (*active, *self.objectives):
            direction = known_direction(metric, self.weights.directions)
            if direction is None:
                # a misspelt known metric is far likelier than a new one: say so before asking for
                # a direction, which would confirm the typo
                close = difflib.get_close_matches(metric.lower(), METRICS, n=1, cutoff=0.75)
                guess = f" (did you mean {close[0]!r}?)" if close else ""
                raise WorkbenchError(
                    f"metric {metric!r} has no known direction{guess}: say --maximize {metric} or --minimize {metric}"
                )
            directions[metric] = direction
        top = max(active.values(), default=0.0)  # weights are relative: summing them as given can overflow
        total = sum(w / top for w in active.values())
        object.__setattr__(self, "_bounds", tuple(self.constraints.bounds()))
        object.__setattr__(self, "_terms", tuple((m, w / top / total, directions[m]) for m, w in active.items()))
        object.__setattr__(self, "_only_latency", list(active) == [LATENCY])
        object.__setattr__(self, "_directions", directions)

    # --- the cost ---------------------------------------------------------------------------------
    def __call__(self, trial: Trial) -> float:
        return self.trial_cost(trial)

    def trial_cost(self, trial: Trial) -> float:
        """Lower is better: feasible < infeasible (graded by violation) < failed (``+inf``)."""
        if trial.status is Status.ABORTED:
            return INFEASIBLE * (1.0 + self.violation(trial))
        if not trial.ok:
            return math.inf
        violation = self.violation(trial)
        if violation > 0:
            return INFEASIBLE * (1.0 + violation)
        return self.value(trial)

    def value(self, trial: Trial) -> float:
        """The weighted geometric mean of the oriented metrics, ignoring constraints. Values of
        zero or below keep their order (see the module doc); a cost beyond the feasible tier's range
        is held at its edge.

        A trial that does not report a weighted metric is costed by the others (their weights
        sharing its part) in a tier of its own behind every trial that reports them all. The views
        leave out a metric no trial reports (a weight on quality for a kernel without a reference),
        as this tier's order does; where some trials report it, they score it the worst value for
        one that does not, so a trial far better on the other metrics can still rank above one that
        reports it there, while the search keeps the stricter order (the recommendation is the
        views'). Counted as infinite, every trial of a run without that metric cost the same as a
        failure, a blind search while the views ranked by the other metrics. ``inf`` only when the
        trial reports none of the weighted metrics (the views cannot score it either)."""
        if self._only_latency:
            latency = trial.metric(LATENCY)
            return latency if math.isfinite(latency) else math.inf
        log_cost = 0.0
        reported = 0.0
        for metric, share, direction in self._terms:
            value = trial.metric(metric)
            if math.isfinite(value):
                log_cost -= share * direction * _positive_log(value)
                reported += share
        if reported <= 0.0:
            return math.inf
        if reported < 1.0 - 1e-9:  # (the shares sum to 1)
            spread = min(max(log_cost / reported, -_LOG_PARTIAL_HALF), _LOG_PARTIAL_HALF)
            return math.exp(_LOG_PARTIAL_CENTRE + spread)
        return math.exp(min(max(log_cost, -_LOG_FEASIBLE_MAX), _LOG_FEASIBLE_MAX))

    def values(self, trial: Trial) -> list[float]:
        """A multi-objective run's metrics of one trial, each oriented so smaller is better
        (``inf`` for a failed trial or a metric it did not report)."""
        out = []
        for metric in self.objectives:
            value = trial.metric(metric) if trial.ok else math.nan
            out.append(-self._directions[metric] * value if math.isfinite(value) else math.inf)
        return out

    def pareto(self, trials: Sequence[Trial]) -> list[int]:
        """Positions of the feasible trials on the Pareto front of the objectives (first found
        kept among equal points), in order of the first objective."""
        rows = [(i, self.values(t)) for i, t in enumerate(trials) if self.feasible(t)]
        rows = [(i, v) for i, v in rows if all(math.isfinite(x) for x in v)]
        if not rows:
            return []
        points = np.array([v for _, v in rows], dtype=float)
        front: dict[tuple[float, ...], int] = {}
        for r, rank in enumerate(pareto_ranks(points)):
            if rank == 0:
                front.setdefault(tuple(points[r]), r)  # equal points: the first stays
        return [rows[front[point]][0] for point in sorted(front)]

    # --- constraints ----------------------------------------------------------------------------
    @property
    def bounds(self) -> tuple[Bound, ...]:
        return self._bounds

    @staticmethod
    def bound_metric(trial: Trial, metric: str) -> float:
        """The value a bound on ``metric`` judges: an aborted trial's latency is the bound it was
        aborted at (a lower bound on its latency)."""
        if metric == LATENCY and trial.status is Status.ABORTED:
            return trial.metric(LATENCY_BOUND)
        return trial.metric(metric)

    def violations(self, trial: Trial) -> list[float]:
        """One number per bound, Optuna's convention: <= 0 holds, > 0 is the relative miss."""
        return [_relative_miss(b, self.bound_metric(trial, b.metric)) for b in self._bounds]

    def violation(self, trial: Trial) -> float:
        """The summed relative miss over all bounds (0 when every bound holds)."""
        return float(sum(max(0.0, v) for v in self.violations(trial)))

    def feasible(self, trial: Trial) -> bool:
        return trial.ok and self.violation(trial) == 0.0

    @property
    def max_latency_ms(self) -> float | None:
        """The tightest latency limit in force (what a backend may abort timing at), or None."""
        limits = [b.value for b in self._bounds if b.metric == LATENCY and b.op == "<="]
        return min(limits) if limits else None

    def worth_remeasuring(self, trial: Trial) -> bool:
        """An aborted trial whose latency bound no longer rules it out under this objective, and
        whose kept figures miss none of its other bounds (:func:`settled_misses`)."""
        if trial.status is not Status.ABORTED or settled_misses(trial, self.constraints):
            return False
        limit = self.max_latency_ms
        bound = trial.metric(LATENCY_BOUND)
        return limit is None or not math.isfinite(bound) or bound <= limit

    def describe(self) -> dict[str, Any]:
        """What it optimises, for logs and events."""
        return {
            "constraints": [b.label for b in self._bounds],
            "terms": {m: {"share": s, "direction": d} for m, s, d in self._terms},
            "objectives": list(self.objectives),
        }


def check_stored_directions(weights: Weights, objectives: Sequence[str], source: str,
                            given: Sequence[str] = ()) -> None:
    """Refuse, naming the file ``source``, a metric its session weighs (or searches a front of) that
    has no known direction: the person continuing or showing it never typed that name, and the
    objective's own refusal ("say --maximize M") did not say where M came from. ``given``: the
    metrics the command line weighs itself, which are its own to answer for."""
    for metric, weight in weights.values.items():
        if weight > 0 and metric not in given and known_direction(metric, weights.directions) is None:
            raise WorkbenchError(f"{source}: the session weighs metric {metric!r}, which has no known direction: "
                                 f"say --maximize {metric} or --minimize {metric}")
    for metric in objectives:
        if metric not in given and known_direction(metric, weights.directions) is None:
            raise WorkbenchError(f"{source}: the session searches a front of metric {metric!r}, which has no known "
                                 f"direction: say --maximize {metric} or --minimize {metric}")


def default_objective() -> Objective:
    """Latency alone, no constraints: what a run optimises when nobody says otherwise."""
    return Objective()
