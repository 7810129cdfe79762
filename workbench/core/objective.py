"""Views over measurements: feasibility, score, Pareto front, recommendation.

Contract (implemented by the objective module; everything here is a pure function of
(trials, constraints, weights), so moving a slider re-ranks without re-measuring):

- ``Bound(metric, op, value)`` with ``op`` in ``{"<=", ">="}``; ``Bound.parse("latency_ms<=2")``.
- ``Constraints(max_latency_ms=None, max_memory_mb=None, min_quality=None, extra=())``;
  ``.bounds() -> list[Bound]``, ``to_dict()/from_dict()``; ``Constraints.check_possible()`` raises
  WorkbenchError for contradictory input (e.g. ``min_quality > 1``, negative maxima).
- ``Weights(values={"latency_ms": 1.0, ...})``; ``to_dict()/from_dict()``.
- ``rank(trials, constraints, weights) -> Ranking`` with NumPy arrays aligned to ``trials``:
  ``feasible`` (bool), ``score`` (float, NaN for failed trials), ``best`` (index or None),
  ``n_feasible``, ``excluded_by`` (constraint label -> number of ok trials it excludes),
  ``most_excluding`` (label or None), ``pareto`` (indices on the latency/memory front),
  ``order`` (indices of feasible trials, best first), ``explain(i) -> str`` (why it won).
"""
