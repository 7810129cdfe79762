"""A utility model over slot values: rank rewards explained as a sum of per-value utilities.

Why: the slots of a kernel template are partly independent (the best tile size barely depends on
the reduction strategy), so "how good is this value of this slot" is a question every
measurement answers a little. The model is a Bayesian linear regression of rank rewards on
one-hot features (one column per slot value, plus one per value pair of slots that interact),
fitted jointly (value decomposition), with a ridge prior that pulls utilities towards zero and,
on ordered slots, adjacent values together (128 threads usually behave like 96 and 160).

Pure: it holds the normal equations and nothing else; the caller owns the random generator and
decides which rounds are fed in. The agents (``workbench.search.agents``) use it to draw each
concern's values (Thompson sampling) and to screen joint proposals.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import numpy as np


#: Most slot values the utility fit takes (one feature each). The fit factors a dense matrix of the
#: features every round, at a cost cubic in their number: 2,048 take about 32 MB and 130 to 170 ms a fit
#: on a 2-core development machine (``bench/utility_fit.py``); the recorded tuning spaces need a
#: few hundred.
MAX_FEATURES = 2048
#: Value pairs of interacting slots are added only while the features stay within this many (a
#: fit of 512 takes about 5 ms, one of 1,024 20 to 25 ms, once a round of 4 to 8 configs): the pairs
#: refine what the slot values already say, and beyond it their cost would be most of the
#: search's own time per config. The recorded tuning spaces need up to about 300.
PAIRED_FEATURES = 512


_BLAS: Any = None
_BLAS_LOCK = threading.Lock()


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """BLAS on one thread for the block inside: the fit's matrices are small (a few hundred rows),
    and BLAS's threads wait for a core that the workers measuring candidates hold (a 1,000-trial
    simulated run beside two busy processes: 26.9 s, 4.9 s on one thread, with the same proposals).
    The limit is the process's, so one block holds it at a time: two threads limiting and restoring
    it at once left BLAS on one thread for good. (The libraries are found once, after NumPy's and
    SciPy's are loaded.)"""
    global _BLAS
    with _BLAS_LOCK:
        if _BLAS is None:
            import scipy.linalg  # noqa: F401 - loaded, so that its BLAS is among those limited
            from threadpoolctl import ThreadpoolController

            _BLAS = ThreadpoolController()
        with _BLAS.limit(limits=1, user_api="blas"):
            yield


def too_many_values(names: Sequence[str], sizes: Sequence[int]) -> str | None:
    """Why a space's slot values are too many for one utility each (None when they fit)."""
    total = int(sum(int(size) for size in sizes))
    if total <= MAX_FEATURES:
        return None
    widest = max(range(len(sizes)), key=lambda k: int(sizes[k]))
    return (f"{total:,} slot values in all (slot {names[widest]!r} has {int(sizes[widest]):,}), more than the "
            f"{MAX_FEATURES:,} whose utilities it fits")


class Posterior:
    """The Gaussian posterior of a ridge regression from its precision matrix, factored once.

    Why one Cholesky factor: the fit runs every round, and its cost is cubic in the number of
    features (slot values and value pairs, up to :data:`MAX_FEATURES`). Solving for the mean,
    inverting the precision for the covariance and factoring that again took three cubic
    passes (0.7 s at 2,048 features); the factor of the precision alone (a third of one) gives the
    mean by two triangular solves and each draw by one. The precision is factored in reversed
    order because the lower Cholesky factor of the covariance is then the reversed inverse
    transpose of that factor: a draw is exactly ``mean + chol(covariance) @ z`` for the same ``z``,
    the draw of the three-pass fit, so a seed proposes what it did.
    """

    def __init__(self, precision: np.ndarray, xty: np.ndarray, gram: np.ndarray, yy: float, n_rows: int) -> None:
        from scipy.linalg import solve_triangular  # here: SciPy's import (~0.15 s) only once a model is fitted

        self._solve = solve_triangular
        with one_blas_thread():
            self._factor = np.linalg.cholesky(precision[::-1, ::-1])  # L with J A J = L L^T
            inner = solve_triangular(self._factor, xty[::-1], lower=True, check_finite=False)
            self.mean = solve_triangular(self._factor, inner, lower=True, trans="T", check_finite=False)[::-1].copy()
        self.mean.setflags(write=False)  # handed out by UtilityModel.mean(), and every later draw adds to it
        sse = yy - 2.0 * float(self.mean @ xty) + float(self.mean @ gram @ self.mean)
        self.noise = max(0.05, sse / n_rows) if n_rows else 0.25

    def draw(self, z: np.ndarray, scale: float) -> np.ndarray:
        """The mean plus ``scale`` times ``chol(covariance) @ z``: with A = J L L^T J, the
        covariance noise * A^-1 has the lower factor sqrt(noise) * J L^-T J."""
        with one_blas_thread():
            spread = self._solve(self._factor, z[::-1], lower=True, trans="T", check_finite=False)[::-1]
        return self.mean + (scale * np.sqrt(self.noise)) * spread


class UtilityModel:
    """Per-value utilities of a space's slots (and of value pairs within each clique of slots)."""

    def __init__(self, sizes: Sequence[int] | np.ndarray, ordered: Sequence[bool] | np.ndarray,
                 cliques: Sequence[Sequence[int]],
                 interactions: bool = True, max_dim: int = PAIRED_FEATURES) -> None:
        """``sizes``/``ordered``: per slot; ``cliques``: groups of slots whose value pairs get their
        own utilities when ``interactions`` is on (across cliques utilities only add up).

        The fit is dense in the number of features (one per slot value and value pair): when the
        pairs would take it past ``max_dim``, only the pairs with fewest value combinations that
        fit are kept (the others' slots still add up). The slot values alone must fit within
        :data:`MAX_FEATURES` (:func:`too_many_values` says so first); past ``max_dim`` they get no
        pairs."""
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)]).astype(int)
        self.pairs: list[tuple[int, int, int]] = []  # (slot, other slot, first feature column)
        dim = int(self.offsets[-1])
        candidates = [(k1, k2) for slots in cliques for i, k1 in enumerate(slots) for k2 in slots[i + 1 :]] \
            if interactions else []
        kept = set(candidates)
        if dim + sum(int(self.sizes[a] * self.sizes[b]) for a, b in candidates) > max_dim:
            kept, room = set(), max_dim - dim
            for a, b in sorted(candidates, key=lambda pair: int(self.sizes[pair[0]] * self.sizes[pair[1]])):
                if int(self.sizes[a] * self.sizes[b]) <= room:
                    kept.add((a, b))
                    room -= int(self.sizes[a] * self.sizes[b])
        for k1, k2 in candidates:  # in the cliques' order, as without the limit
            if (k1, k2) in kept:
                self.pairs.append((k1, k2, dim))
                dim += int(self.sizes[k1] * self.sizes[k2])
        self.dim = dim
        self.gram, self.xty, self.yy, self.n_rows = np.zeros((dim, dim)), np.zeros(dim), 0.0, 0
        self.prior = np.eye(dim)  # ridge towards zero utility, plus smoothness along ordered slots
        self.prior[int(self.offsets[-1]) :, int(self.offsets[-1]) :] *= 2.0  # interactions: only on evidence
        for k, size in enumerate(self.sizes):
            if ordered[k] and size > 1:
                diff = np.diff(np.eye(int(size)), axis=0)
                lo, hi = self.offsets[k], self.offsets[k + 1]
                self.prior[lo:hi, lo:hi] += 4.0 * diff.T @ diff
        self._posterior: Posterior | None = None  # the fit of the rounds fed in so far

    def features(self, vec: Sequence[int]) -> np.ndarray:
        """Columns set for a config: one per slot value, one per value pair of interacting slots."""
        cols = [int(self.offsets[k]) + int(v) for k, v in enumerate(vec)]
        cols += [first + int(vec[k1]) * int(self.sizes[k2]) + int(vec[k2]) for k1, k2, first in self.pairs]
        return np.asarray(cols, dtype=int)

    def slot(self, values: np.ndarray, k: int) -> np.ndarray:
        """The part of a utility vector (a mean or a draw) that belongs to slot ``k``'s values."""
        return values[self.offsets[k] : self.offsets[k + 1]]

    def accumulate(self, idx: Sequence[Sequence[int]], reward: np.ndarray) -> None:
        """Add one round to the normal equations, with the round's means removed (see :meth:`fit`)."""
        x = np.zeros((len(idx), self.dim))
        for i, vec in enumerate(idx):
            x[i, self.features(vec)] = 1.0
        x -= x.mean(axis=0)
        y = reward - reward.mean()
        with one_blas_thread():
            self.gram += x.T @ x
        self.xty += x.T @ y
        self.yy += float(y @ y)
        self.n_rows += len(idx)
        self._posterior = None

    def fit(self) -> Posterior:
        """The posterior of the utilities given the rounds fed in so far (kept until the next round).

        Rewards are compared only within their round (round means are removed from rewards and
        features alike), so a round of strong configs and a round of weak ones teach the same thing.
        """
        if self._posterior is None:
            self._posterior = Posterior(self.gram + self.prior, self.xty, self.gram, self.yy, self.n_rows)
        return self._posterior

    def mean(self) -> np.ndarray:
        """The fitted utilities (zero before any round was fed in)."""
        return self.fit().mean if self.n_rows else np.zeros(self.dim)

    def sample(self, rng: np.random.Generator, scale: float) -> np.ndarray:
        """One Thompson draw of every utility, the posterior's spread times ``scale``."""
        return self.fit().draw(rng.standard_normal(self.dim), scale)

    def value(self, draw: np.ndarray, vec: Sequence[int]) -> float:
        """What a config is worth under a utility vector: the sum of its features' utilities."""
        return float(draw[self.features(vec)].sum())

    def values(self, draw: np.ndarray, vecs: np.ndarray) -> np.ndarray:
        """:meth:`value` of every row of ``vecs`` (configs as index vectors), in one pass."""
        vecs = np.asarray(vecs, dtype=np.int64).reshape(-1, len(self.sizes))
        total = draw[self.offsets[:-1] + vecs].sum(axis=1)
        for k1, k2, first in self.pairs:
            total += draw[first + vecs[:, k1] * int(self.sizes[k2]) + vecs[:, k2]]
        return total
