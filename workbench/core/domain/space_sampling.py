"""Drawing distinct valid configs uniformly at random, from a product space or a recording.

A product space is sampled in up to three stages, each used only while it is the cheapest way to
find new configs: rejection from the cartesian product while the valid fraction (when known) and
the yield of new configs stay reasonable; exact draws from the component counts
(:mod:`workbench.core.domain.space_count`) while the excluded configs leave plenty; and a listing of what
is left when exclusions leave too few to find by drawing. A recording is a list: choose from what
is not excluded.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Sequence

import numpy as np

if TYPE_CHECKING:
    from workbench.core.domain.space import Config, ProductSpace

#: Below this valid fraction (when known) sampling skips rejection from the cartesian product.
MIN_REJECTION_FRACTION = 0.01
#: Rejection sampling gives up once fewer than this share of its draws were new valid configs.
REJECTION_MIN_YIELD = 0.02


class RecordedSampler:
    """Up to ``n`` distinct recorded points whose ids are not in ``taken``, uniformly at random: the
    draws of ``rng.choice(len(remaining), size, replace=False)`` on the list of the points that
    remain, in recorded order, in time that grows with the exclusions and the draws instead of
    with the recording.

    Why: a strategy that repairs a wish by sampling calls it once per proposal; listing what
    remains of an 18,000-point recording each time was most of a repair's cost. The points still
    to draw from are counted in a Fenwick tree over their recorded positions; each call updates it
    by the difference between its exclusions and the previous call's, then finds the i-th
    remaining point by a search of the tree. That difference is taken on the ids as sets (in C),
    and only the ids that changed are mapped to positions: mapping every exclusion on every call
    made a random search of a recording quadratic (131 s for 17,956 configs, where a grid took
    10 s). Calls from several threads take turns.
    """

    def __init__(self, points: Sequence[Config]) -> None:
        self._points = points
        self._position = {c.id: i for i, c in enumerate(points)}
        size = len(points)
        self._tree = np.zeros(size + 1, dtype=np.int64)
        for i in range(1, size + 1):  # every point remains: the tree of all ones, built in O(n)
            self._tree[i] += 1
            parent = i + (i & -i)
            if parent <= size:
                self._tree[parent] += self._tree[i]
        self._excluded_ids: set[str] = set()  # the ids of the last call's exclusions that are points
        self._lock = threading.Lock()

    def _add(self, position: int, delta: int) -> None:
        i = position + 1
        size = len(self._points)
        while i <= size:
            self._tree[i] += delta
            i += i & -i

    def _select(self, k: int) -> int:
        """Recorded position of the k-th (0-based) point that remains."""
        position, step = 0, 1 << max(len(self._points).bit_length() - 1, 0)
        while step:
            nxt = position + step
            if nxt <= len(self._points) and self._tree[nxt] <= k:
                position = nxt
                k -= int(self._tree[nxt])
            step >>= 1
        return position

    def sample(self, rng: np.random.Generator, n: int, taken: set[str] | frozenset[str]) -> list[Config]:
        with self._lock:
            position = self._position
            for cid in self._excluded_ids - taken:  # excluded last time, free again
                self._add(position[cid], +1)
                self._excluded_ids.discard(cid)
            for cid in taken - self._excluded_ids:
                if cid in position:
                    self._add(position[cid], -1)
                    self._excluded_ids.add(cid)
            remaining = len(self._points) - len(self._excluded_ids)
            if not remaining:
                return []
            picks = rng.choice(remaining, size=min(n, remaining), replace=False)
            return [self._points[self._select(int(i))] for i in picks]


def sample_product(space: ProductSpace, rng: np.random.Generator, n: int, taken: set[str]) -> list[Config]:
    """Up to ``n`` distinct valid configs of ``space`` whose ids are not in ``taken`` (which grows).

    Returns fewer than ``n`` only when fewer remain.
    """
    out: list[Config] = []

    def accept(config: Config) -> None:
        if config.id not in taken:
            taken.add(config.id)
            out.append(config)

    # 1. rejection from the cartesian product, while it finds new configs often enough
    known = space.known_count
    known_fraction = None if known is None else known / space.cartesian_size
    small = 4 * (len(taken) + n) >= space.cartesian_size  # likely to exhaust: count instead
    if not small and (known_fraction is None or known_fraction >= MIN_REJECTION_FRACTION):
        sizes = [len(s.values) for s in space.slots]
        budget = max(2000, 50 * n)
        drawn = 0
        while len(out) < n and drawn < budget:
            if drawn >= 1000 and len(out) < REJECTION_MIN_YIELD * drawn:
                break  # too few valid (or too many excluded): draw from the counts instead
            batch = min(budget - drawn, max(64, 4 * (n - len(out))))
            columns = [rng.integers(0, size, size=batch) for size in sizes]
            rows = np.stack(columns, axis=1).tolist() if columns else [[]] * batch
            drawn += batch
            for row in rows:
                config = space.config_at(row)
                if space.satisfies(config):
                    accept(config)
                    if len(out) == n:
                        break
        if len(out) == n:
            return out
    # 2. exact draws from the counts, when the excluded part leaves plenty
    total = space.count()
    if total == 0:
        return out
    if total > 2 * (len(taken) + n):
        attempts = 0
        while len(out) < n and attempts < 20 * n + 100:
            attempts += 1
            accept(space.draw_exact(rng))
        if len(out) == n:
            return out
    # 3. list what is left (at most a few times what is excluded or asked for) and choose; the
    # listing is the space's, kept (a random search past half the space listed it for every
    # proposal, 40 ms each on 5,000 configs)
    rest = [c for c in space.enumerated() if c.id not in taken]
    if rest:
        picks = rng.choice(len(rest), size=min(n - len(out), len(rest)), replace=False)
        out.extend(rest[int(i)] for i in picks)
    return out
