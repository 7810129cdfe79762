"""Pareto ranks and fronts of points whose every column is smaller-is-better (NaN worst), vectorised.

Shared by what ranks predictions (cost-model pruning) and what counts a session's front in the
window; :meth:`Objective.pareto` keeps the positions of the feasible trials on it.
"""

from __future__ import annotations

import math

import numpy as np


def pareto_ranks(values: np.ndarray, chunk: int = 256) -> list[int]:
    """Each row's Pareto rank as the number of rows that dominate it (0: on the front; Fonseca and
    Fleming's ranking), every column smaller-is-better, NaN worst. Computed in blocks of ``chunk``
    rows, so memory stays ``chunk x rows`` when a tiny keep fraction ranks a whole large space."""
    values = np.where(np.isnan(values), np.inf, np.asarray(values, dtype=float))
    n = len(values)
    dominated_by = np.zeros(n, dtype=np.int64)
    for start in range(0, n, chunk):
        block = values[start:start + chunk]
        no_worse = np.all(block[:, None, :] <= values[None, :, :], axis=2)
        better = np.any(block[:, None, :] < values[None, :, :], axis=2)
        dominated_by += (no_worse & better).sum(axis=0)
    return [int(r) for r in dominated_by]


def front_size(values: np.ndarray) -> int:
    """How many distinct rows no other row dominates. Two columns: one sort and a running minimum,
    so a front of 20,000 trials is counted while a slider moves; three: a Fenwick tree in sorted
    order; more: one pass in sorted order against the front so far."""
    values = np.asarray(values, dtype=float)
    if not values.size:
        return 0
    values = values.reshape(len(values), -1)
    values = values[np.all(np.isfinite(values), axis=1)]
    if not len(values):
        return 0
    unique = np.unique(values, axis=0)  # sorted by the first column, then the second
    if unique.shape[1] == 1:
        return 1
    if unique.shape[1] == 2:
        second = unique[:, 1]
        earlier = np.minimum.accumulate(np.concatenate([[np.inf], second[:-1]]))
        # a row is dominated by an earlier one (no larger first value) with no larger second
        # value; among rows of one first value only the first, of the smallest second, survives
        first_of_value = np.concatenate([[True], unique[1:, 0] != unique[:-1, 0]])
        return int(np.sum((second < earlier) & first_of_value))
    if unique.shape[1] == 3:
        return _front_size_3(unique)
    # More columns: in lexicographic order a row can be dominated only by an earlier one, and by
    # one on the front if by any (dominance is transitive), so each row is checked against the
    # front found so far: rows x front comparisons instead of rows squared (20,000 random points
    # of four objectives: a fraction of a second; every point on the front stays quadratic).
    front = np.empty_like(unique)
    size = 0
    for row in unique:
        if not np.any(np.all(front[:size] <= row, axis=1)):
            front[size] = row
            size += 1
    return size


def _front_size_3(unique: np.ndarray) -> int:
    """The front of distinct rows of three columns in lexicographic order: a row is dominated
    exactly when an earlier row (no larger first value, by the order) has no larger second and
    third values. A Fenwick tree over the ranks of the second value keeps the least third value
    seen at or below each rank, so each row costs two logarithmic walks: a front of all 20,000
    points is counted in hundredths of a second where comparing it with itself took seconds."""
    seconds = np.unique(unique[:, 1])
    ranks = np.searchsorted(seconds, unique[:, 1]) + 1  # 1-based for the tree
    tree = [math.inf] * (len(seconds) + 1)
    count = 0
    for rank, third in zip(ranks.tolist(), unique[:, 2].tolist()):
        least, i = math.inf, rank
        while i > 0:  # the least third value among earlier rows of no larger second value
            least = min(least, tree[i])
            i -= i & -i
        if least > third:
            count += 1
        i = rank
        while i < len(tree):
            if third < tree[i]:
                tree[i] = third
            i += i & -i
    return count
