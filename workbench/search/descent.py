"""A descent over one-slot moves (variable neighbourhood descent), as a component of a strategy.

Why: a model that learns from ranks is misled on a needle (the optimum needs several choices
that each look mediocre alone), while a systematic neighbourhood pass walks into it once it
stands next to it. The descent keeps its base (the best config of the pass so far), moves on
whenever a neighbour beats it, and remembers the bases whose neighbourhood is used up (local
optima), so that the next descent can start away from them. Which neighbour is measured first
is the owner's choice (the agents order them by their utilities).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

from workbench.core.domain.space import Config, SearchSpace
from workbench.search._common import Coder, Index


def changed_slot(a: Sequence[int], b: Sequence[int]) -> int:
    """The first slot where index vectors ``a`` and ``b`` differ (``b`` is a one-slot move of ``a``)."""
    return next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)


def one_slot_moves(space: SearchSpace, coder: Coder, base: Config, fresh: Callable[[Config], bool],
                   short: int) -> list[list[Config]]:
    """The fresh one-slot moves of ``base``, in the three passes of a descent.

    1. the adjacent values of ordered slots and every value of categorical ones (the nearest
       questions);
    2. the ends of ordered domains, and every value of short ones (at most ``short`` values);
    3. every other one-slot move.

    Why the second pass: an integer slot with a handful of values is often a method number, where
    adjacency means nothing, and optima often sit at a domain's end (the largest tile that still
    fits). Both are few evaluations, while the third pass of a 31-value block size is many.
    """
    adjacent = {c.id for c in space.neighbours(base, adjacent_only=True)}
    origin = coder.encode(base)
    passes: list[list[Config]] = [[], [], []]
    for config in space.neighbours(base):
        if not fresh(config):
            continue
        if config.id in adjacent:
            passes[0].append(config)
            continue
        vec = coder.encode(config)
        k = changed_slot(origin, vec)
        size = int(coder.sizes[k])
        passes[1 if size <= short or vec[k] in (0, size - 1) else 2].append(config)
    return passes


def coupled_moves(space: SearchSpace, coder: Coder, base: Config, fresh: Callable[[Config], bool]) -> list[Config]:
    """The fresh two-slot moves of ``base`` that reach a value no valid one-slot move reaches: for
    each slot value whose one-slot move breaks the space's restrictions, the valid config with it
    whose one other changed slot moves least (the first such slot on a tie).

    Why: restrictions couple slots (a block's threads in x times y under a limit, a stride only
    with a tile larger than one), so a value at the coupled edge, often where the optimum sits, is
    no one-slot move away from a config deep on the other side, and a descent ends next to it.
    These moves are few: one per value the restrictions keep out, not every pair of values.
    """
    origin = list(coder.encode(base))
    reachable = set()
    for neighbour in space.neighbours(base):
        vec = coder.encode(neighbour)
        k = changed_slot(origin, vec)
        reachable.add((k, vec[k]))
    out: dict[str, Config] = {}
    for k, size in enumerate(coder.sizes):
        for v in range(int(size)):
            if v == origin[k] or (k, v) in reachable:
                continue
            best: tuple[float, Config] | None = None
            for j, other in enumerate(coder.sizes):
                if j == k:
                    continue
                for w in range(int(other)):
                    if w == origin[j]:
                        continue
                    cost = coder.step_cost(j, origin[j], w)
                    if best is not None and cost >= best[0]:
                        continue
                    genes = list(origin)
                    genes[k], genes[j] = v, w
                    config = coder.decode(genes)
                    if space.is_valid(config):
                        best = (cost, config)
            if best is not None and fresh(best[1]):
                out.setdefault(best[1].id, best[1])
    return list(out.values())


def _positive_numbers(values: Sequence[object]) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in values)


def shape_moves(space: SearchSpace, coder: Coder, base: Config, fresh: Callable[[Config], bool]) -> list[Config]:
    """The fresh two-slot moves of ``base`` that keep the product of two numeric slots, the
    smallest change of shape (ratio of the new value to the old) first.

    Why: a kernel often depends on the product of two slots (threads per block is x times y, a
    thread's work is a tile's width times its height) for what limits it (occupancy, registers),
    and on their split for how it reads memory. A one-slot move changes the product, so a descent
    that found a good product with a poor split ends there, every one-slot move losing, while the
    same product with a better split is one two-slot move away.
    """
    origin = coder.encode(base)
    slots = space.slots
    numeric = [k for k, slot in enumerate(slots) if len(slot.values) > 1 and _positive_numbers(slot.values)]
    found: list[tuple[float, int, Config]] = []
    for a in numeric:
        for b in numeric:
            if b <= a:
                continue
            old_a, old_b = float(slots[a].values[origin[a]]), float(slots[b].values[origin[b]])
            product = old_a * old_b
            for i, value in enumerate(slots[a].values):
                if i == origin[a]:
                    continue
                wanted = product / float(value)
                j = next((j for j, other in enumerate(slots[b].values)
                          if abs(float(other) - wanted) <= 1e-9 * wanted), None)
                if j is None or j == origin[b]:
                    continue
                genes = list(origin)
                genes[a], genes[b] = i, j
                config = coder.decode(genes)
                if space.is_valid(config) and fresh(config):
                    found.append((abs(math.log(float(value) / old_a)), len(found), config))
    found.sort(key=lambda item: item[:2])
    return [config for _, _, config in found]


@dataclass
class Descent:
    """State of the descent: whether one is running, its base, and the local optima found so far."""

    running: bool = False
    base: tuple[float, Config] | None = None
    #: index vectors of bases whose neighbourhood was used up (local optima)
    optima: list[Index] = field(default_factory=list)
    #: coupled moves each base may spend once its one-slot passes are used up (0: none)
    coupled: int = 0
    #: shape moves (:func:`shape_moves`) each base may spend after its coupled moves (0: none)
    shape: int = 0

    #: coupled moves the current base may still spend (see :meth:`next_moves`)
    coupled_left: int = 0
    #: whether the moves last handed out are coupled ones (the owner then spends :attr:`coupled_left`)
    in_coupled: bool = False
    #: shape moves the current base may still spend
    shape_left: int = 0
    #: whether the moves last handed out are shape moves (the owner then spends :attr:`shape_left`)
    in_shape: bool = False

    def start(self, base: tuple[float, Config] | None, coupled: int = 0, shape: int = 0) -> None:
        self.running = True
        self.base = base
        self.coupled, self.coupled_left = coupled, coupled
        self.shape, self.shape_left = shape, shape

    def note(self, score: float, config: Config) -> None:
        """A told result: a running descent moves its base to anything that beats it."""
        if self.running and self.base is not None and score < self.base[0]:
            self.base = (score, config)
            self.coupled_left, self.shape_left = self.coupled, self.shape

    def next_moves(self, space: SearchSpace, coder: Coder, fresh: Callable[[Config], bool], short: int,
                   passes: int) -> list[Config]:
        """The first non-empty pass (of the first ``passes``) around the base, then its
        :func:`coupled_moves` while :attr:`coupled_left` lasts, then its :func:`shape_moves` while
        :attr:`shape_left` lasts (the owner measures at most that many and spends it); none left:
        the base is a local optimum, remembered in :attr:`optima`."""
        if self.base is None:
            return []
        moves = one_slot_moves(space, coder, self.base[1], fresh, short)
        nbrs = next((tier for tier in moves[:passes] if tier), [])
        self.in_coupled = self.in_shape = False
        if not nbrs and self.coupled_left > 0:
            nbrs = coupled_moves(space, coder, self.base[1], fresh)
            self.in_coupled = bool(nbrs)
        if not nbrs and self.shape_left > 0:
            nbrs = shape_moves(space, coder, self.base[1], fresh)
            self.in_shape = bool(nbrs)
        if not nbrs:
            self.optima.append(coder.encode(self.base[1]))
        return nbrs
