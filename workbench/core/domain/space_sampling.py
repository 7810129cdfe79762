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
import weakref
from typing import TYPE_CHECKING, AbstractSet, Any, Iterable, Iterator, Self, Sequence

import numpy as np

if TYPE_CHECKING:
    from workbench.core.domain.space import Config, ProductSpace

#: Below this valid fraction (when known) sampling skips rejection from the cartesian product.
MIN_REJECTION_FRACTION = 0.01
#: Rejection sampling gives up once fewer than this share of its draws were new valid configs.
REJECTION_MIN_YIELD = 0.02


class TakenIds(set[str]):
    """A set of config ids that also keeps a log of the ids added (call by call; within one
    ``update`` in no particular order), so a sampler told the same set again updates itself by the
    ids added since its last draw instead of comparing the whole set: a search drawing one config at a time through a whole space otherwise did work that grew
    with everything taken before each draw (quadratic: 17 CPU-s to draw an 18,000-point recording
    out). Every way of removing an id counts in ``shrunk``, and a sampler that sees it changed
    compares the whole set once, as it does any other set."""

    def __init__(self, ids: Iterable[str] = ()) -> None:
        super().__init__()
        self.log: list[str] = []
        self.shrunk = 0
        self.update(ids)

    def __reduce__(self) -> tuple[Any, ...]:
        """Copies and pickles get a log of their own (``set``'s own reduction shares the list, so
        an id added to a copy was logged in the original too)."""
        return _rebuilt_taken_ids, (list(self), list(self.log), self.shrunk)

    def add(self, cid: str) -> None:
        if cid not in self:
            super().add(cid)
            self.log.append(cid)

    def update(self, *others: Iterable[str]) -> None:
        for other in others:
            new = (other if isinstance(other, (set, frozenset)) else set(other)) - self  # (in C)
            super().update(new)
            self.log.extend(new)

    # (typeshed's set.__or__ widens its element type, which an in-place union cannot: mypy's check
    # of the pair does not apply to a set of one element type)
    def __ior__(self, other: AbstractSet[str]) -> Self:  # type: ignore[override,misc]
        if not isinstance(other, AbstractSet):
            return NotImplemented  # as a set's |= (a list is refused)
        self.update(other)
        return self

    def _shrinks(self, change: Any, *args: Any) -> Any:
        self.shrunk += 1
        return change(self, *args)

    def discard(self, cid: object) -> None:
        self._shrinks(set.discard, cid)

    def remove(self, cid: str) -> None:
        self._shrinks(set.remove, cid)

    def pop(self) -> str:
        return str(self._shrinks(set.pop))

    def clear(self) -> None:
        self._shrinks(set.clear)

    def difference_update(self, *others: Iterable[Any]) -> None:
        self._shrinks(set.difference_update, *others)

    def intersection_update(self, *others: Iterable[Any]) -> None:
        self._shrinks(set.intersection_update, *others)

    def symmetric_difference_update(self, other: Iterable[Any]) -> None:
        self.shrunk += 1
        for cid in set(other):  # (what it adds goes through add: logged; an id given twice counts once)
            if cid in self:
                set.discard(self, cid)
            else:
                self.add(cid)

    def __isub__(self, other: AbstractSet[object]) -> Self:
        self.difference_update(other)
        return self

    def __iand__(self, other: AbstractSet[object]) -> Self:
        self.intersection_update(other)
        return self

    def __ixor__(self, other: AbstractSet[str]) -> Self:  # type: ignore[override,misc]
        self.symmetric_difference_update(other)
        return self


class Excluding(AbstractSet[str]):
    """What a draw excludes: a search's ``taken`` ids and a few more (the proposals of the batch it
    is building), as one set, without copying ``taken``. A union made for every draw cost time in
    proportion to everything taken, and a sampler told a set it had not seen compared it whole:
    a long run's repairs, which draw with a batch at hand, grew slower with every trial. A
    :class:`RecordedSampler` takes in ``taken`` by what it added since the last draw and leaves
    ``extra`` out of this draw alone."""

    def __init__(self, taken: TakenIds, extra: AbstractSet[str]) -> None:
        self.taken = taken
        self.extra = frozenset(extra - taken)

    @classmethod
    def _from_iterable(cls, ids: Iterable[Any]) -> AbstractSet[Any]:
        """What ``|``, ``&`` and ``-`` make of it: a plain set (a copy, as they always were)."""
        return frozenset(ids)

    def __contains__(self, cid: object) -> bool:
        return cid in self.taken or cid in self.extra

    def __iter__(self) -> Iterator[str]:
        yield from self.taken
        yield from (cid for cid in self.extra if cid not in self.taken)  # (taken may have grown since)

    def __len__(self) -> int:
        return len(self.taken) + sum(cid not in self.taken for cid in self.extra)

    def joined(self, more: AbstractSet[str]) -> "Excluding":
        """These exclusions and ``more``."""
        return Excluding(self.taken, self.extra | more)


def excluding(taken: AbstractSet[str], extra: AbstractSet[str]) -> AbstractSet[str]:
    """``taken`` and ``extra`` as one set, without copying ``taken`` where it is a search's
    :class:`TakenIds` (or such a set with extra ids already, :class:`Excluding`)."""
    if not extra:
        return taken
    if isinstance(taken, Excluding):
        return taken.joined(extra)
    if isinstance(taken, TakenIds):
        return Excluding(taken, extra)
    return set(taken) | set(extra)


def _rebuilt_taken_ids(ids: list[str], log: list[str], shrunk: int) -> TakenIds:
    """A TakenIds as :meth:`TakenIds.__reduce__` describes it."""
    taken = TakenIds()
    set.update(taken, ids)
    taken.log, taken.shrunk = log, shrunk
    return taken


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
        # the last call's exclusions when they were a TakenIds: that set, how many ids it had
        # logged and how often it had shrunk (see _exclude)
        self._last: tuple[weakref.ref[TakenIds], int, int] | None = None
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

    def _exclude(self, taken: AbstractSet[str]) -> None:
        """Make the tree's exclusions those of ``taken``: by the ids added since the last call when
        ``taken`` is the TakenIds of that call and has only grown since, else by comparing sets."""
        position = self._position
        last = self._last
        grown = (isinstance(taken, TakenIds) and last is not None and last[0]() is taken
                 and last[2] == taken.shrunk and last[1] <= len(taken.log))
        if grown:
            assert isinstance(taken, TakenIds) and last is not None
            added: Iterable[str] = taken.log[last[1]:]
        else:
            for cid in self._excluded_ids - taken:  # excluded last time, free again
                self._add(position[cid], +1)
                self._excluded_ids.discard(cid)
            added = taken - self._excluded_ids
        for cid in added:
            if cid in position and cid not in self._excluded_ids:
                self._add(position[cid], -1)
                self._excluded_ids.add(cid)
        self._last = (weakref.ref(taken), len(taken.log), taken.shrunk) if isinstance(taken, TakenIds) else None

    def sample(self, rng: np.random.Generator, n: int, taken: AbstractSet[str]) -> list[Config]:
        with self._lock:
            # an Excluding's extra ids are left out of this draw alone, after its taken ids are
            # taken in as they grew: the tree then stands as it would for the whole set, and the
            # draw is the same
            self._exclude(taken.taken if isinstance(taken, Excluding) else taken)
            extra = [self._position[cid] for cid in taken.extra if cid in self._position
                     and cid not in self._excluded_ids] if isinstance(taken, Excluding) else []
            for position in extra:
                self._add(position, -1)
            try:
                remaining = len(self._points) - len(self._excluded_ids) - len(extra)
                if not remaining:
                    return []
                picks = rng.choice(remaining, size=min(n, remaining), replace=False)
                return [self._points[self._select(int(i))] for i in picks]
            finally:
                for position in extra:
                    self._add(position, +1)


def sample_product(space: ProductSpace, rng: np.random.Generator, n: int,
                   taken: AbstractSet[str]) -> list[Config]:
    """Up to ``n`` distinct valid configs of ``space`` whose ids are not in ``taken`` (read, never
    changed: copying it for each draw cost a search that drew one config at a time work that grew
    with everything it had taken).

    Returns fewer than ``n`` only when fewer remain.
    """
    out: list[Config] = []
    drawn: set[str] = set()

    def accept(config: Config) -> None:
        if config.id not in taken and config.id not in drawn:
            drawn.add(config.id)
            out.append(config)

    # 1. rejection from the cartesian product, while it finds new configs often enough
    known = space.known_count
    known_fraction = None if known is None else known / space.cartesian_size
    small = 4 * (len(taken) + n) >= space.cartesian_size  # likely to exhaust: count instead
    if not small and (known_fraction is None or known_fraction >= MIN_REJECTION_FRACTION):
        sizes = [len(s.values) for s in space.slots]
        budget = max(2000, 50 * n)
        tried = 0
        while len(out) < n and tried < budget:
            if tried >= 1000 and len(out) < REJECTION_MIN_YIELD * tried:
                break  # too few valid (or too many excluded): draw from the counts instead
            batch = min(budget - tried, max(64, 4 * (n - len(out))))
            columns = [rng.integers(0, size, size=batch) for size in sizes]
            rows = np.stack(columns, axis=1).tolist() if columns else [[]] * batch
            tried += batch
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
    if total > 2 * (len(taken) + len(drawn) + n):
        attempts = 0
        while len(out) < n and attempts < 20 * n + 100:
            attempts += 1
            accept(space.draw_exact(rng))
        if len(out) == n:
            return out
    # 3. choose among what is left of the listing (the space's, kept: a random search past half the
    # space listed it for every proposal, 40 ms each on 5,000 configs), as a recording is drawn
    excluded = excluding(taken, drawn)
    out.extend(space.listing_sampler().sample(rng, n - len(out), excluded))
    return out
