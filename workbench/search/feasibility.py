"""How likely a config is to meet the run's constraints, learnt from the trials that met or missed them.

Why a model per bound: a limit on registers, shared memory, occupancy or compile time is decided by
a few slots (the tile, the block, the unroll), and a latency limit by the same slots that decide
speed; how far a trial is past (or inside) each bound says more than whether it missed. Each bound's
signed relative miss (Optuna's convention: <= 0 holds) is explained as a sum of per-slot-value
effects, plus value pairs within a concern, with the ridge and smoothness prior of
:class:`workbench.search.utility.UtilityModel`, fitted on absolute values (not ranks within a round:
the limit is a fixed line). The predicted miss and its spread give the chance the bound holds; the
bounds are taken as independent. Before any trial met a bound the model still ranks proposals by how
close they are predicted to come, which is what leads a search into a small feasible region.

Misses are compressed (``sign(r) * log(1 + |r|)``) so one config ten times over a latency limit does
not outweigh the many near the line. Pure: the caller decides which trials are fed in.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from workbench.search.utility import UtilityModel

#: Trials a bound needs before its model predicts (fewer: no opinion, chance 1).
MIN_ROWS = 4
#: Floor on the residual spread of a fitted miss (compressed units), so a model that happens to
#: fit its few trials exactly is not taken as certain.
MIN_NOISE = 0.05


def compress(miss: float) -> float:
    """A relative miss on a scale where near the limit counts most (sign kept: <= 0 holds)."""
    if not math.isfinite(miss):
        return 1.0
    return math.copysign(math.log1p(abs(miss)), miss)


class FeasibilityModel:
    """Per-bound additive models of the compressed miss; :meth:`chance` that every bound holds."""

    def __init__(self, sizes: Sequence[int] | np.ndarray, ordered: Sequence[bool] | np.ndarray,
                 cliques: Sequence[Sequence[int]], interactions: bool = True) -> None:
        self._layout = UtilityModel(sizes, ordered, cliques, interactions)  # features and prior only
        self.rows: list[np.ndarray] = []  # feature columns of each trial fed in
        self.misses: list[list[float]] = []  # compressed miss per bound, per trial
        self._fitted: list[tuple[float, np.ndarray, np.ndarray, np.ndarray, float]] | None = None

    def add(self, vec: Sequence[int], misses: Sequence[float]) -> None:
        """One trial that ran: its index vector and its signed relative miss of each bound."""
        if self.misses and len(misses) != len(self.misses[0]):
            self.rows, self.misses = [], []  # the bounds changed: start over
        self.rows.append(self._layout.features(vec))
        self.misses.append([compress(float(m)) for m in misses])
        self._fitted = None

    def _fit(self) -> list[tuple[float, np.ndarray, np.ndarray, np.ndarray, float]]:
        """Per bound: the mean miss, the feature means, the effects, the inverse precision and the noise."""
        n, dim = len(self.rows), self._layout.dim
        x = np.zeros((n, dim))
        for i, cols in enumerate(self.rows):
            x[i, cols] = 1.0
        centre = x.mean(axis=0)
        xc = x - centre
        precision = xc.T @ xc + self._layout.prior
        inverse = np.linalg.inv(precision)
        out = []
        y_all = np.asarray(self.misses, dtype=float)
        for b in range(y_all.shape[1]):
            y = y_all[:, b]
            mean = float(y.mean())
            effects = inverse @ (xc.T @ (y - mean))
            residual = y - mean - xc @ effects
            noise = max(MIN_NOISE ** 2, float(residual @ residual) / n)
            out.append((mean, centre, effects, inverse, noise))
        return out

    def chance(self, vec: Sequence[int]) -> float:
        """The predicted chance that a config meets every bound (1 while too little is known)."""
        if len(self.rows) < MIN_ROWS:
            return 1.0
        if self._fitted is None:
            self._fitted = self._fit()
        x = np.zeros(self._layout.dim)
        x[self._layout.features(vec)] = 1.0
        p = 1.0
        n = len(self.rows)
        for mean, centre, effects, inverse, noise in self._fitted:
            d = x - centre
            mu = mean + float(d @ effects)
            sd = math.sqrt(noise * (1.0 + 1.0 / n + float(d @ inverse @ d)))
            p *= 0.5 * math.erfc(mu / (sd * math.sqrt(2.0)))
        return p
