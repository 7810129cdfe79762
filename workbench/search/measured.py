"""The measured configs of a strategy as arrays, kept up to date as a run goes on.

The agents ask of their measured configs, every round, which is best and which of the good ones lie
away from the local optima found so far. Sorting the history and measuring the distance of each
config to every optimum anew each time cost time in proportion to the trials measured, every round:
a run over a space of 18,000 configs spent seconds per hundred evaluations on it near its end. Here
each config's distance to its nearest optimum is computed once when it is measured and lowered
when an optimum is found, so a question costs one sort in NumPy.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from workbench.search._common import Coder, Index


class MeasuredIndex:
    """Costs and index vectors of measured configs (a history of ``(cost, index vector)``, only
    ever appended to), and each one's :meth:`Coder.distance` to the nearest of a list of optima
    (only ever appended to), synchronised by :meth:`sync`."""

    def __init__(self, coder: Coder, width: int) -> None:
        self.coder = coder
        self.n = 0
        self.scores = np.empty(64)
        self.vecs = np.empty((64, width), dtype=np.int64)
        self.near = np.empty(64)
        self.optima = 0

    def sync(self, history: Sequence[tuple[float, Index]], optima: Sequence[Index]) -> None:
        """Take in the entries of ``history`` and ``optima`` added since the last call."""
        m = len(history)
        if m > len(self.scores):
            size = max(m, 2 * len(self.scores))
            self.scores = np.resize(self.scores, size)
            self.vecs = np.resize(self.vecs, (size, self.vecs.shape[1]))
            self.near = np.resize(self.near, size)
        if m > self.n:
            new = history[self.n : m]
            self.scores[self.n : m] = [score for score, _ in new]
            self.vecs[self.n : m] = [vec for _, vec in new]
            self.near[self.n : m] = (self.coder.nearest_distances(self.vecs[self.n : m], np.asarray(optima[: self.optima]))
                                     if self.optima else np.inf)
            self.n = m
        for optimum in optima[self.optima :]:
            self.near[: self.n] = np.minimum(self.near[: self.n], self.coder.distances(self.vecs[: self.n], optimum))
        self.optima = len(optima)

    def ranked(self) -> np.ndarray:
        """Positions in the history, lowest cost first (ties in the order measured)."""
        return np.argsort(self.scores[: self.n], kind="stable")
