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
not outweigh the many near the line. A trial that did not report a bound's metric (NaN) teaches
that bound nothing. Each bound keeps its normal equations as running sums, so a refit is one solve
whatever the number of trials, and the chances of a whole screen of proposals come from one
vectorised pass. Pure: the caller decides which trials are fed in.
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
    """A relative miss on a scale where near the limit counts most (sign kept: <= 0 holds; a
    missing metric, ``+inf``, counts as a clear miss of 1, ``-inf`` as a clear hit of -1)."""
    if math.isnan(miss):
        return 1.0
    if math.isinf(miss):
        return math.copysign(1.0, miss)
    return math.copysign(math.log1p(abs(miss)), miss)


class _Bound:
    """The normal equations of one bound's miss (sums over the trials that reported it), kept
    incrementally like :class:`UtilityModel`'s, so a refit costs one solve, not a pass over
    every trial."""

    def __init__(self, dim: int) -> None:
        self.n = 0
        self.sx = np.zeros(dim)
        self.gram = np.zeros((dim, dim))
        self.sxy = np.zeros(dim)
        self.sy = 0.0
        self.syy = 0.0

    def add(self, cols: np.ndarray, y: float) -> None:
        self.n += 1
        self.sx[cols] += 1.0
        self.gram[np.ix_(cols, cols)] += 1.0
        self.sxy[cols] += y
        self.sy += y
        self.syy += y * y


class _Fit:
    """One bound's fitted model, with what :meth:`FeasibilityModel.chances` needs precomputed."""

    def __init__(self, stats: _Bound, prior: np.ndarray) -> None:
        n = stats.n
        centre = stats.sx / n
        gram = stats.gram - n * np.outer(centre, centre)  # of the centred features
        self.inverse = np.linalg.inv(gram + prior)
        mean = stats.sy / n
        sxy = stats.sxy - centre * stats.sy  # centred features times centred misses
        self.effects = self.inverse @ sxy
        sse = (stats.syy - n * mean * mean) - 2.0 * float(self.effects @ sxy) + float(self.effects @ gram @ self.effects)
        self.noise = max(MIN_NOISE ** 2, sse / n)
        self.n = n
        self.offset = mean - float(centre @ self.effects)  # the prediction is offset + sum of effects
        self.ic = self.inverse @ centre
        self.cic = float(centre @ self.ic)


class FeasibilityModel:
    """Per-bound additive models of the compressed miss; :meth:`chance` that every bound holds."""

    def __init__(self, sizes: Sequence[int] | np.ndarray, ordered: Sequence[bool] | np.ndarray,
                 cliques: Sequence[Sequence[int]], interactions: bool = True) -> None:
        self._args = (sizes, ordered, cliques, interactions)
        self._layout: UtilityModel | None = None  # features and prior, built on the first trial
        self._bounds: list[_Bound] = []
        self._fitted: list[_Fit | None] | None = None

    @property
    def layout(self) -> UtilityModel:
        """The utility model's features and prior (built when first needed: a run without
        bounds never pays for its dim x dim matrices)."""
        if self._layout is None:
            self._layout = UtilityModel(*self._args)
        return self._layout

    @property
    def n_rows(self) -> int:
        """Trials fed in that reported at least one bound's metric (the most of any bound)."""
        return max((b.n for b in self._bounds), default=0)

    def add(self, vec: Sequence[int], misses: Sequence[float]) -> None:
        """One trial that ran: its index vector and its signed relative miss of each bound
        (NaN: the trial did not report that bound's metric, nothing learnt about it)."""
        if len(misses) != len(self._bounds):
            self._bounds = [_Bound(self.layout.dim) for _ in misses]  # the bounds changed: start over
        cols = self.layout.features(vec)
        for stats, miss in zip(self._bounds, misses):
            if not math.isnan(float(miss)):
                stats.add(cols, compress(float(miss)))
        self._fitted = None

    def _features(self, vecs: Sequence[Sequence[int]]) -> np.ndarray:
        """The feature columns of several configs at once, one row each."""
        layout = self.layout
        idx = np.asarray(vecs, dtype=np.int64).reshape(len(vecs), -1)
        cols = [idx + layout.offsets[:-1][None, :]]
        for k1, k2, first in layout.pairs:
            cols.append((first + idx[:, k1] * int(layout.sizes[k2]) + idx[:, k2])[:, None])
        return np.concatenate(cols, axis=1)

    def chances(self, vecs: Sequence[Sequence[int]]) -> np.ndarray:
        """The predicted chance that each config meets every bound (1 while too little is known)."""
        out = np.ones(len(vecs))
        if not len(vecs) or all(b.n < MIN_ROWS for b in self._bounds):
            return out
        if self._fitted is None:
            prior = self.layout.prior
            self._fitted = [_Fit(b, prior) if b.n >= MIN_ROWS else None for b in self._bounds]
        cols = self._features(vecs)
        for fit in self._fitted:
            if fit is None:
                continue  # too few trials reported this bound's metric: no opinion
            mu = fit.offset + fit.effects[cols].sum(axis=1)
            quad = fit.inverse[cols[:, :, None], cols[:, None, :]].sum(axis=(1, 2))
            quad += fit.cic - 2.0 * fit.ic[cols].sum(axis=1)
            sd = np.sqrt(fit.noise * (1.0 + 1.0 / fit.n + np.maximum(quad, 0.0)))
            out *= 0.5 * _erfc(mu / (sd * math.sqrt(2.0)))
        return out

    def chance(self, vec: Sequence[int]) -> float:
        """The predicted chance that one config meets every bound (see :meth:`chances`)."""
        return float(self.chances([vec])[0])


def _erfc(x: np.ndarray) -> np.ndarray:
    return np.array([math.erfc(float(v)) for v in x])
