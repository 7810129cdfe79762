"""Fronts and ranks of ``workbench.core.domain.pareto``: the front count agrees with the ranks."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.core.domain.pareto import front_size, pareto_ranks


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 40), st.integers(1, 4), st.integers(0, 2**32 - 1))
def test_the_front_count_is_the_number_of_distinct_finite_rows_of_rank_zero(rows: int, columns: int, seed: int) -> None:
    """Whatever the columns (one, two, or the general pass for more), with ties and infinities."""
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 4, size=(rows, columns)).astype(float)
    values[rng.random(values.shape) < 0.05] = np.inf
    finite = values[np.all(np.isfinite(values), axis=1)]
    distinct = np.unique(finite, axis=0) if len(finite) else finite
    expected = sum(rank == 0 for rank in pareto_ranks(distinct)) if len(distinct) else 0
    assert front_size(values) == expected


def test_a_large_three_objective_front_is_counted_right() -> None:
    """Every one of 20,000 points on a simplex's face is on the front (none dominates another),
    and copies of some of them shifted up by positive amounts are all dominated by the face."""
    rng = np.random.default_rng(0)
    face = rng.dirichlet(np.ones(3), size=20_000)
    above = face[:5_000] + 0.001 + rng.random((5_000, 3)) * 0.1
    assert front_size(np.vstack([face, above])) == len(np.unique(face, axis=0))
    assert front_size(np.vstack([above, face])[:, [2, 0, 1]]) == len(np.unique(face, axis=0))  # any order of columns
