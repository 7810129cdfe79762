"""Counting, exact drawing and listing of a product space's valid configs.

A product space (:class:`workbench.core.domain.space.ProductSpace`) hands the restrictions that read
slots to a :class:`Counter`, which splits the slots into groups no restriction links
(:class:`Component`), counts each group apart and multiplies. A group is counted by a backtracking
memoised on the values that pending restrictions still read (slots ordered to keep that key
small), or, when no memo can help (one restriction reads most of the group), with NumPy over the
group's product in chunks. The same counts drive an exact uniform sampler that never rejects and a
listing that skips empty subtrees; :mod:`workbench.core.domain.space_sampling` decides when to use them.
"""

from __future__ import annotations

import itertools
import math
import threading
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

import numpy as np

from workbench.core.domain.expr import Restriction

if TYPE_CHECKING:
    from workbench.core.domain.space import Slot, Value

#: Components with cartesian sizes in this range are counted with NumPy when the memoised
#: backtracking would save less than VECTOR_GAIN times the work.
VECTOR_MIN_POINTS = 4096
VECTOR_MAX_POINTS = 2**28
VECTOR_GAIN = 30
VECTOR_CHUNK = 2**18
#: A NumPy-counted component keeps the positions of up to this many valid points for exact draws.
STORE_MAX_POINTS = 2**22
#: The most slot values the memoised backtracking of one component may check before counting is
#: given up with a one-line error: restrictions that link long domains (three slots of 4,096
#: values in one sum) need tens of billions of checks, and every command that counts the space
#: (listing, tuning, the editor's check) sat silent. The shipped templates need at most a few
#: hundred; a minute of checks on a slow machine is about this many.
MAX_COUNT_CHECKS = 10_000_000


def rand_below(rng: np.random.Generator, n: int) -> int:
    """A uniform integer in ``[0, n)``, also for counts beyond 64 bits."""
    if n <= 2**62:
        return int(rng.integers(n))
    bits = n.bit_length()
    nbytes = (bits + 7) // 8
    while True:
        r = int.from_bytes(rng.bytes(nbytes), "little") & ((1 << bits) - 1)
        if r < n:
            return r


def elimination_order(
    members: Sequence[int], reads: Sequence[frozenset[int]], slots: Sequence[Slot]
) -> tuple[int, ...]:
    """An order of a component's slots that keeps the memo keys of the backtracking small.

    Greedy: place next the slot after which the assigned slots that pending restrictions still
    read (the memo key) span the fewest value combinations; ties go to the slot that completes
    more restrictions, then to declaration order. A chain or a ring then costs the sum, not the
    product, of its domains, whatever order the slots were declared in.
    """
    placed: list[int] = []
    left = list(members)
    while left:
        best: tuple[int, int, int] | None = None
        choice = left[0]
        for slot in left:
            done = set(placed) | {slot}
            pending = [r for r in reads if not r <= done]
            live = {p for r in pending for p in r if p in done}
            width = math.prod(len(slots[p].values) for p in live)
            completed = sum(1 for r in reads if r <= done and slot in r)
            key = (width, -completed, slot)
            if best is None or key < best:
                best, choice = key, slot
        placed.append(choice)
        left.remove(choice)
    return tuple(placed)


class Component:
    """Slots linked (directly or through others) by restrictions, counted and sampled together.

    Counting is a backtracking over the component's slots that checks each restriction as soon as
    its last slot is assigned, memoised on the assigned values that restrictions still pending
    will read (so a chain a-b, b-c, c-d costs the sum, not the product, of its domains).
    The same counts drive an exact uniform sampler that never rejects.

    When the memo cannot help (one restriction reads most of the component's slots), the
    component is instead counted with NumPy over its cartesian product in chunks
    (:meth:`Restriction.mask`), keeping the positions of its valid points for exact draws.
    """

    def __init__(
        self,
        positions: tuple[int, ...],
        slots: Sequence[Slot],
        restrictions: Sequence[tuple[Restriction, frozenset[int]]],
        params: Mapping[str, Value],
    ) -> None:
        self.positions = positions
        local = {p: d for d, p in enumerate(positions)}
        self.names = tuple(slots[p].name for p in positions)
        self.domains = tuple(slots[p].values for p in positions)
        self.sizes = tuple(len(d) for d in self.domains)
        m = len(positions)
        self.checks: list[list[Restriction]] = [[] for _ in range(m)]
        triggers: list[tuple[int, frozenset[int]]] = []
        for restriction, reads in restrictions:
            local_reads = frozenset(local[p] for p in reads)
            trigger = max(local_reads)
            self.checks[trigger].append(restriction)
            triggers.append((trigger, local_reads))
        self.live: list[tuple[int, ...]] = [
            tuple(sorted({j for trig, reads in triggers if trig >= d for j in reads if j < d})) for d in range(m + 1)
        ]
        self.memo: list[dict[tuple[int, ...], int]] = [{} for _ in range(m + 1)]
        self.params = dict(params)
        self.env: dict[str, Any] = dict(params)
        self.chosen = [0] * m
        # work of the memoised backtracking, at most: per depth, distinct keys x domain size
        self.cartesian = math.prod(self.sizes)
        backtracking = sum(math.prod(self.sizes[j] for j in self.live[d]) * self.sizes[d] for d in range(m))
        self.vector = (
            VECTOR_MIN_POINTS <= self.cartesian <= VECTOR_MAX_POINTS and backtracking * VECTOR_GAIN > self.cartesian
        )
        self.total: int | None = None
        self.valid_flat: np.ndarray | None = None  # vector mode: flat positions of the valid points
        self._checks_left = MAX_COUNT_CHECKS
        #: what a count too costly names: the restriction reading every slot of this component, else
        #: all of them (one of them alone named slots it does not read)
        whole = [r.text for r, reads in restrictions if len(reads) == m]
        self._linking = whole[:1] or [r.text for r, _ in restrictions]

    # -- counting ------------------------------------------------------------------------------
    def count(self) -> int:
        """Number of valid assignments of this component (computed once)."""
        if self.total is None:
            self.total = self._vector_count() if self.vector else self._dfs_count(0)
        return self.total

    def _dfs_count(self, d: int) -> int:
        """Valid completions of depths ``d..`` given ``self.chosen[:d]`` (memoised)."""
        if d == len(self.names):
            return 1
        key = tuple(self.chosen[j] for j in self.live[d])
        memo = self.memo[d]
        hit = memo.get(key)
        if hit is not None:
            return hit
        total = 0
        env, name, checks = self.env, self.names[d], self.checks[d]
        self._checks_left -= len(self.domains[d])
        if self._checks_left < 0:
            self._too_many_checks()
        for i, value in enumerate(self.domains[d]):
            env[name] = value
            if all(r(env) for r in checks):
                self.chosen[d] = i
                total += self._dfs_count(d + 1)
        memo[key] = total
        return total

    def _too_many_checks(self) -> None:
        from workbench.core.errors import SpaceError

        self._checks_left = MAX_COUNT_CHECKS  # a later call starts afresh (the memo keeps what was done)
        sizes = " x ".join(f"{len(d):,}" for d in self.domains)
        texts = self._linking
        named = (f"the restriction {texts[0]!r} links" if len(texts) == 1 else
                 f"the restrictions {', '.join(repr(t) for t in texts[:3])}{' and more' if len(texts) > 3 else ''} link")
        raise SpaceError(f"counting the valid configs needs more than {MAX_COUNT_CHECKS:,} checks: {named} the slots "
                         f"{', '.join(self.names)} ({sizes} values); narrow their domains or split the "
                         f"restriction{'' if len(texts) == 1 else 's'}")

    def _scalar_env(self, local: Sequence[int]) -> dict[str, Any]:
        env = dict(self.params)
        env.update({name: dom[i] for name, dom, i in zip(self.names, self.domains, local)})
        return env

    def _vector_count(self) -> int:
        """Count by evaluating every restriction on chunks of the cartesian product at once."""
        domains = [np.asarray(d) for d in self.domains]
        params = {k: np.asarray(v) for k, v in self.params.items()}
        restrictions = [r for checks in self.checks for r in checks]
        total = 0
        kept: list[np.ndarray] | None = []
        for start in range(0, self.cartesian, VECTOR_CHUNK):
            flat = np.arange(start, min(start + VECTOR_CHUNK, self.cartesian), dtype=np.int64)
            idx = np.unravel_index(flat, self.sizes)
            env = dict(params)
            env.update({name: dom[i] for name, dom, i in zip(self.names, domains, idx)})
            ok = np.ones(len(flat), dtype=bool)
            for r in restrictions:
                mask = r.mask(env)
                if mask is None:  # NumPy could differ from Python here: check these one by one
                    mask = np.zeros(len(flat), dtype=bool)
                    for k in np.flatnonzero(ok):
                        mask[k] = r(self._scalar_env([int(i[k]) for i in idx]))
                ok &= mask
            valid = flat[ok]
            total += len(valid)
            if kept is not None:
                kept.append(valid)
                if total > STORE_MAX_POINTS:
                    kept = None
        if kept is not None:
            self.valid_flat = np.concatenate(kept) if kept else np.zeros(0, dtype=np.int64)
        return total

    # -- drawing and listing -------------------------------------------------------------------
    def _unravel(self, flat: int) -> list[int]:
        return [int(i) for i in np.unravel_index(flat, self.sizes)]

    def sample(self, rng: np.random.Generator) -> list[int]:
        """Domain positions of one uniformly drawn valid assignment (the component must be non-empty)."""
        if self.vector:
            self.count()
            if self.valid_flat is not None:
                return self._unravel(int(self.valid_flat[rand_below(rng, len(self.valid_flat))]))
            while True:  # more than STORE_MAX_POINTS valid: rejection accepts often enough
                local = self._unravel(rand_below(rng, self.cartesian))
                env = self._scalar_env(local)
                if all(r(env) for checks in self.checks for r in checks):
                    return local
        env = self.env
        for d, name in enumerate(self.names):
            weights: list[int] = []
            for i, value in enumerate(self.domains[d]):
                env[name] = value
                if all(r(env) for r in self.checks[d]):
                    self.chosen[d] = i
                    weights.append(self._dfs_count(d + 1))
                else:
                    weights.append(0)
            r = rand_below(rng, sum(weights))
            for i, w in enumerate(weights):
                if r < w:
                    break
                r -= w
            self.chosen[d] = i
            env[name] = self.domains[d][i]
        return list(self.chosen)

    def assignments(self) -> Iterator[tuple[int, ...]]:
        """Domain positions of every valid assignment, skipping subtrees the counts say are empty."""
        if self.vector and self.count() and self.valid_flat is not None:
            for flat in self.valid_flat.tolist():
                yield tuple(self._unravel(flat))
            return
        m = len(self.names)
        env = self.env

        def walk(d: int) -> Iterator[tuple[int, ...]]:
            if d == m:
                yield tuple(self.chosen)
                return
            name, checks = self.names[d], self.checks[d]
            for i, value in enumerate(self.domains[d]):
                env[name] = value
                if all(r(env) for r in checks):
                    self.chosen[d] = i
                    if self._dfs_count(d + 1):
                        yield from walk(d + 1)
                        env[name] = value  # restore after deeper levels reused the env

        if self._dfs_count(0):
            yield from walk(0)




class Counter:
    """The components of one product space, built on first use, with one lock for their scratch state.

    Components keep the assignment under construction and the memo tables between calls, so
    counting, drawing and listing run one thread at a time.
    """

    def __init__(
        self,
        slots: Sequence[Slot],
        linked: Sequence[tuple[Restriction, frozenset[int]]],
        params: Mapping[str, Value],
    ) -> None:
        self._slots = tuple(slots)
        self._linked = tuple(linked)
        self._params = params
        self._components: list[Component] | None = None
        self._count: int | None = None
        self._lock = threading.RLock()

    @property
    def known_count(self) -> int | None:
        """The count when it was already computed, else None (never computes)."""
        return self._count

    def _get_components(self) -> list[Component]:
        """Connected groups of slots (slots linked by no restriction are groups of one); lock held."""
        if self._components is None:
            parent = list(range(len(self._slots)))

            def find(i: int) -> int:
                while parent[i] != i:
                    parent[i] = parent[parent[i]]
                    i = parent[i]
                return i

            for _, reads in self._linked:
                first, *rest = sorted(reads)
                for p in rest:
                    parent[find(p)] = find(first)
            groups: dict[int, list[int]] = {}
            for i in range(len(self._slots)):
                groups.setdefault(find(i), []).append(i)
            components = []
            for members in groups.values():
                member_set = set(members)
                mine = [(r, reads) for r, reads in self._linked if reads <= member_set]
                order = elimination_order(members, [reads for _, reads in mine], self._slots)
                components.append(Component(order, self._slots, mine, self._params))
            self._components = components
        return self._components

    def largest_group(self) -> int:
        """Points of the largest group of slots the restrictions link: what a count scans at most
        in one piece (groups are counted apart; a slot no restriction reads is a group of its own)."""
        with self._lock:
            return max((c.cartesian for c in self._get_components()), default=1)

    def count(self) -> int:
        """Exact number of valid assignments (cached): independent groups are counted apart."""
        with self._lock:
            if self._count is None:
                self._count = math.prod(c.count() for c in self._get_components())
            return self._count

    def draw(self, rng: np.random.Generator) -> list[int]:
        """Domain positions, in slot order, of one uniformly drawn valid assignment (count must be > 0)."""
        indices = [0] * len(self._slots)
        with self._lock:
            for component in self._get_components():
                for p, i in zip(component.positions, component.sample(rng)):
                    indices[p] = i
        return indices

    def assignments(self) -> Iterator[list[int]]:
        """Domain positions of every valid assignment, component by component (not in slot order)."""
        with self._lock:
            components = self._get_components()
            per_component = [list(c.assignments()) for c in components]
        for combo in itertools.product(*per_component):
            indices = [0] * len(self._slots)
            for component, local in zip(components, combo):
                for p, i in zip(component.positions, local):
                    indices[p] = i
            yield indices
