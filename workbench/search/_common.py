"""What every model-based strategy needs: configs as index vectors, bookkeeping, repair.

The strategies in this package think in *index vectors* (position of each slot's value in its
domain), because that is where "neighbouring value", "distance" and "distribution over values"
make sense. This module translates, remembers what was proposed and measured (so nothing is
proposed twice), and repairs a wished-for index vector into the nearest valid, unmeasured config:
restrictions and recorded spaces have holes, and a strategy must never spend an evaluation on an
invalid or already measured config.
"""

from __future__ import annotations

import math
from typing import AbstractSet, Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from workbench.core.domain.measurement import Trial
from workbench.core.errors import SpaceError
from workbench.core.domain.space import Config, ProductSpace, SearchSpace
from workbench.core.domain.space_sampling import RecordedSampler, TakenIds, excluding
from workbench.search.base import Strategy

Index = tuple[int, ...]

#: Restricted spaces up to this many valid configs are enumerated once for repair's last resort.
SMALL_SPACE = 20_000
#: The most values of one slot that repair's one-slot pass tries (see ``IndexedStrategy._repair_targets``).
REPAIR_VALUES_PER_SLOT = 256


class Coder:
    """Config <-> index vector for one space, plus the normalised distance between vectors."""

    def __init__(self, space: SearchSpace) -> None:
        self._space = space
        self.names: tuple[str, ...] = tuple(s.name for s in space.slots)
        self.values: tuple[tuple[Any, ...], ...] = tuple(tuple(s.values) for s in space.slots)
        self.sizes = np.array([len(v) for v in self.values], dtype=np.int64)
        self.ordered = np.array([bool(s.ordered) for s in space.slots])
        self._lookup = tuple({v: i for i, v in enumerate(vals)} for vals in self.values)
        # Per-slot scale so that a full sweep of any slot costs 1 (categorical: any change costs 1).
        self._scale = np.where(self.ordered, 1.0 / np.maximum(self.sizes - 1, 1), 1.0)

    def encode(self, config: Mapping[str, Any]) -> Index:
        return tuple(self._lookup[k][config[name]] for k, name in enumerate(self.names))

    def decode(self, index: Sequence[int]) -> Config:
        return self._space.config_at([int(i) for i in index])

    def distance(self, a: Sequence[int], b: Sequence[int]) -> float:
        """Distance between two index vectors: ordered slots by normalised step, others by mismatch."""
        diff = np.abs(np.asarray(a) - np.asarray(b))
        return float(np.sum(np.where(self.ordered, diff * self._scale, diff > 0)))

    def distances(self, points: np.ndarray, b: Sequence[int]) -> np.ndarray:
        """:meth:`distance` from each row of ``points`` (index vectors) to ``b``, vectorised."""
        diff = np.abs(np.asarray(points) - np.asarray(b))
        return np.where(self.ordered, diff * self._scale, diff > 0).sum(axis=1)

    def nearest_distances(self, points: np.ndarray, others: np.ndarray) -> np.ndarray:
        """Each row of ``points``' :meth:`distance` to the nearest row of ``others`` (both index
        vectors), all pairs at once: the same sums as :meth:`distances`, row for row."""
        diff = np.abs(np.asarray(points)[:, None, :] - np.asarray(others)[None, :, :])
        return np.where(self.ordered, diff * self._scale, diff > 0).sum(axis=2).min(axis=1)

    def step_cost(self, slot: int, frm: int, to: int) -> float:
        return abs(to - frm) * self._scale[slot] if self.ordered[slot] else 1.0

    def step_costs(self, slots: np.ndarray, frm: np.ndarray, to: np.ndarray) -> np.ndarray:
        """:meth:`step_cost` of many one-slot moves at once (the same products)."""
        return np.where(self.ordered[slots], np.abs(to - frm) * self._scale[slots], 1.0)


def latency_rank(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Centred ranks in [-1, 1], +1 for the lowest value; ties share their mean rank; NaN/inf rank last.

    Ranks instead of raw latencies make rewards robust to timing noise and to the scale of a kernel.
    """
    v = np.asarray(values, dtype=float)
    m = len(v)
    if m < 2:
        return np.zeros(m)
    v = np.where(np.isfinite(v), v, np.inf)
    order = np.argsort(v, kind="stable")
    ranks = np.empty(m)
    ranks[order] = np.arange(m, dtype=float)
    for value in np.unique(v):  # average ties (failures are all tied at +inf)
        same = v == value
        if same.sum() > 1:
            ranks[same] = ranks[same].mean()
    return 1.0 - 2.0 * ranks / (m - 1)


class IndexedStrategy(Strategy):
    """A strategy that remembers scores by config id and proposes each config at most once.

    ``proposed`` holds ids handed out by ``ask`` (pending or measured); ``scores`` maps measured ids
    to the engine's objective (``+inf`` for failures). Subclasses call :meth:`fresh` to check a
    candidate and :meth:`repair` to turn a wish into something measurable.
    """

    def __init__(self, space: SearchSpace, seed: int = 0, **options: Any) -> None:
        super().__init__(space, seed=seed, **options)
        self.coder = Coder(space)
        self.proposed: set[str] = set()
        #: ``proposed | measured``, kept as both grow (they only ever grow): the union, made anew on
        #: every ask, cost time in proportion to the trials, per proposal, late in a long run; a
        #: TakenIds, so a space drawn with it again takes in only what was added since (see _excluding)
        self._taken: set[str] = TakenIds()
        self.scores: dict[str, float] = {}
        self.best_id: str | None = None
        self.best_config: Config | None = None
        self.best_score = math.inf
        self.n_told = 0
        self._count: int | None = None
        self._all: RecordedSampler | None = None  # draws from a small restricted space, listed once (see _fallback)
        #: every (slot, value index) pair in slot order, for repair where no slot is cut short (built once)
        self._every_value: tuple[np.ndarray, np.ndarray] | None = None
        #: index vectors handed out or told (a fast pre-check; ``measured`` ids stay authoritative)
        self.seen_index: set[tuple[int, ...]] = set()
        #: configs planned but not handed out yet, next one last (see :meth:`ask_from_queue`)
        self.queue: list[Config] = []

    # --- bookkeeping ------------------------------------------------------------------------
    def _update(self, trials: Sequence[Trial]) -> None:
        super()._update(trials)
        self._taken.update(t.config.id for t in trials if t.config.id in self.measured)
        for trial in trials:
            score = float(self.objective(trial))
            if math.isnan(score):
                score = math.inf
            self.scores[trial.config.id] = score
            try:
                self.seen_index.add(self.coder.encode(trial.config))
            except KeyError:  # a config from an older space (reopened session): id bookkeeping suffices
                pass
            self.n_told += 1
            if score < self.best_score:
                self.best_score, self.best_id, self.best_config = score, trial.config.id, trial.config

    def _kept_state(self) -> dict[str, Any]:
        return {**super()._kept_state(), "proposed": set(self.proposed), "seen_index": set(self.seen_index)}

    def _restore_state(self, kept: dict[str, Any]) -> None:
        super()._restore_state(kept)
        self.proposed |= kept["proposed"]
        self.seen_index |= kept["seen_index"]
        self._taken = TakenIds(self.proposed | self.measured)

    def exclude(self, ids: Iterable[str]) -> None:
        ids = set(ids)
        super().exclude(ids)
        self._taken |= ids

    def _rescore(self) -> None:
        """Costs and incumbent of everything told, under the objective now in force."""
        self.scores, self.best_id, self.best_config, self.best_score = {}, None, None, math.inf
        for trial in self._told:
            score = float(self.objective(trial))
            score = math.inf if math.isnan(score) else score
            self.scores[trial.config.id] = score
            if score < self.best_score:
                self.best_score, self.best_id, self.best_config = score, trial.config.id, trial.config

    def taken(self) -> set[str]:
        """Ids handed out or measured (the set itself, kept up to date: callers read it, never change it)."""
        return self._taken

    def space_count(self) -> int:
        """How many valid configs the space holds; for one whose restrictions cannot be counted in
        time (slots of thousands of values linked by one restriction), the product of its domains,
        an upper bound: such a space is far from exhausted, and proposals end there when no fresh
        valid config is found. (The count raised, and the run ended after its first evaluation.)"""
        if self._count is None:
            try:
                self._count = int(self.space.count())
            except SpaceError:
                self._count = int(self.space.cartesian_size)
        return self._count

    def exhausted(self) -> bool:
        return len(self.taken()) >= self.space_count()

    def fresh(self, config: Config, batch: Iterable[str] = ()) -> bool:
        """Valid, never proposed or measured, and not already in the batch being built."""
        cid = config.id
        return cid not in self._taken and cid not in batch and self.space.is_valid(config)

    def take(self, configs: Sequence[Config]) -> list[Config]:
        """Mark configs as handed out and return them (every ``ask`` ends here)."""
        for config in configs:
            self.proposed.add(config.id)
            self._taken.add(config.id)
            self.seen_index.add(self.coder.encode(config))
        return list(configs)

    def sample(self, n: int, batch: Iterable[str] = ()) -> list[Config]:
        """Up to ``n`` fresh configs uniformly at random."""
        if n <= 0:
            return []
        return self.space.sample(self.rng, n, exclude=self._excluding(batch))

    def _excluding(self, batch: Iterable[str]) -> AbstractSet[str]:
        """What a draw excludes: everything taken and ``batch`` (this call's proposals so far), as
        one set that does not copy the taken ids (:class:`Excluding`), so the space takes in only
        the ids added since its last draw and leaves the batch out of this draw alone."""
        return excluding(self._taken, set(batch))

    def ask_from_queue(self, n: int, refill: Callable[[int, set[str]], list[Config]]) -> list[Config]:
        """Up to ``n`` fresh configs from the queue of planned ones, refilled when it runs dry.

        Why a queue: strategies plan in rounds (a generation, a round of the agents) larger or
        smaller than what the engine asks for at a time. ``refill(wanted, batch)`` plans the next
        round in order (``wanted``: configs still missing from this call; ``batch``: ids already
        in it); an empty plan ends the call. Planned configs that went stale meanwhile (measured
        elsewhere, told by the engine) are skipped.
        """
        out: list[Config] = []
        batch: set[str] = set()
        while len(out) < n and not self.exhausted():
            if not self.queue:
                self.queue = refill(n - len(out), batch)
                self.queue.reverse()
                if not self.queue:
                    break
            config = self.queue.pop()
            if self.fresh(config, batch):
                out.append(config)
                batch.add(config.id)
        return self.take(out)

    # --- repair -------------------------------------------------------------------------------
    def repair(self, index: Sequence[int] | np.ndarray, batch: Iterable[str] = (), pool: int = 24) -> Config | None:
        """The nearest fresh valid config to ``index`` (itself if it qualifies); None when none is left.

        Tries every single-slot change in order of distance, then random two-slot changes, then the
        nearest of a uniform sample. Cheap for explicit and restricted spaces alike, and it never
        enumerates the space. Index vectors already handed out are skipped before any config is built.
        """
        batch = set(batch)
        index = tuple(int(i) for i in index)

        def check(cand: tuple[int, ...]) -> Config | None:
            if cand in self.seen_index:
                return None
            config = self.space.valid_config_at(cand)
            if config is None:
                return None
            return None if config.id in self._taken or config.id in batch else config

        found = check(index)
        if found is not None:
            return found
        costs, slots, values = self._one_slot_moves(index)
        for k, j in zip(slots.tolist(), values.tolist()):
            found = check(index[:k] + (j,) + index[k + 1 :])
            if found is not None:
                return found
        if len(index) > 1 and len(costs) > 1:
            # random pairs of one-slot moves of two different slots, the 64 nearest (ties by slot and value)
            picks = self.rng.integers(0, len(costs), size=(4 * len(costs), 2))
            first, second = picks[:, 0], picks[:, 1]
            apart = slots[first] != slots[second]
            first, second = first[apart], second[apart]
            order = np.lexsort((values[second], slots[second], values[first], slots[first],
                                costs[first] + costs[second]))[:64]
            for ka, ja, kb, jb in zip(slots[first[order]].tolist(), values[first[order]].tolist(),
                                      slots[second[order]].tolist(), values[second[order]].tolist()):
                cand = list(index)
                cand[ka], cand[kb] = ja, jb
                found = check(tuple(cand))
                if found is not None:
                    return found
        candidates = self._fallback(pool, batch)
        if not candidates:
            return None
        dist = self.coder.distances(np.asarray([self.coder.encode(c) for c in candidates]), index)
        return candidates[int(np.argmin(dist))]

    def _one_slot_moves(self, index: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Repair's one-slot moves from ``index`` nearest first (step cost, ties in random order):
        their costs, slots and new value indices. Built as arrays: a repair runs for most
        proposals, and a list of tuples of every slot value, sorted in Python, was most of the
        strategy's time on spaces with long slots."""
        noise = self.rng.random(int(self.coder.sizes.sum()))
        at_index = np.asarray(index, dtype=np.int64)
        if int(np.max(self.coder.sizes, initial=0)) <= REPAIR_VALUES_PER_SLOT + 1:  # every value of every slot
            if self._every_value is None:
                sizes = self.coder.sizes
                self._every_value = (np.repeat(np.arange(len(sizes), dtype=np.int64), sizes),
                                     np.concatenate([np.arange(n, dtype=np.int64) for n in sizes.tolist()] or
                                                    [np.zeros(0, dtype=np.int64)]))
            slot, value = self._every_value
            moved = value != at_index[slot]
            slot, value = slot[moved], value[moved]
        else:
            slots, values = [], []
            for k in range(len(index)):
                targets = np.asarray(self._repair_targets(k, index[k]), dtype=np.int64)
                targets = targets[targets != index[k]]
                slots.append(np.full(len(targets), k, dtype=np.int64))
                values.append(targets)
            slot = np.concatenate(slots) if slots else np.zeros(0, dtype=np.int64)
            value = np.concatenate(values) if values else np.zeros(0, dtype=np.int64)
        cost = self.coder.step_costs(slot, at_index[slot], value)
        order = np.lexsort((value, slot, noise[: len(cost)], cost))
        return cost[order], slot[order], value[order]

    def _repair_targets(self, k: int, at: int) -> Sequence[int]:
        """The values of slot ``k`` that repair's one-slot pass tries from value index ``at``: all of
        them in a domain of up to :data:`REPAIR_VALUES_PER_SLOT` + 1 values; in a longer one, the
        nearest that many of an ordered slot, or that many drawn at random of a categorical one.
        Why: every value of a slot of a million made each repair build, sort and check a million
        configs (tens of seconds per proposal, where a restriction rules most of them out), while
        the two-slot and sampled passes that follow reach the rest of the domain anyway."""
        size = int(self.coder.sizes[k])
        if size <= REPAIR_VALUES_PER_SLOT + 1:
            return range(size)
        if self.coder.ordered[k]:
            low = min(max(0, at - REPAIR_VALUES_PER_SLOT // 2), size - REPAIR_VALUES_PER_SLOT - 1)
            return range(low, low + REPAIR_VALUES_PER_SLOT + 1)
        return sorted(int(j) for j in self.rng.choice(size, REPAIR_VALUES_PER_SLOT + 1, replace=False))

    def neighbourhood(self, config: Config, adjacent_only: bool = False) -> list[Config]:
        """The valid one-slot moves of ``config`` (:meth:`SearchSpace.neighbours`), with a long
        slot's moves held to the values repair tries from there (:meth:`_repair_targets`: the
        nearest :data:`REPAIR_VALUES_PER_SLOT` of an ordered slot, as many drawn of a categorical
        one). Why: a walk lists its neighbourhood at every step, and a slot of two million values
        made each step build and check two million configs (15 s a proposal); the values beyond
        are still reached, by later steps and by repair's sampled pass. A space without such a slot
        gets exactly the space's own list, so runs on it propose what they did."""
        if self.space.is_explicit or int(np.max(self.coder.sizes, initial=0)) <= REPAIR_VALUES_PER_SLOT + 1:
            return self.space.neighbours(config, adjacent_only=adjacent_only)
        origin = self.coder.encode(config)
        out: list[Config] = []
        for k, size in enumerate(self.coder.sizes.tolist()):
            at = origin[k]
            if adjacent_only and self.coder.ordered[k]:
                targets: Sequence[int] = [i for i in (at - 1, at + 1) if 0 <= i < size]
            else:
                targets = self._repair_targets(k, at)
            for value in targets:
                if value == at:
                    continue
                genes = list(origin)
                genes[k] = int(value)
                moved = self.coder.decode(genes)
                if self.space.is_valid(moved):
                    out.append(moved)
        return out

    def _fallback(self, n: int, batch: set[str]) -> list[Config]:
        """Uniform fresh configs for repair's last resort.

        A small restricted space is enumerated once and drawn from here: late in a run almost
        everything is measured, and the space would otherwise enumerate itself on every draw.
        """
        if getattr(self.space, "is_explicit", True) or self.space_count() > SMALL_SPACE:
            return self.sample(n, batch)
        if self._all is None:
            space = self.space
            self._all = RecordedSampler(space.in_order() if isinstance(space, ProductSpace) else list(space))
        # the draws of rng.choice over the configs left, in listed order, as when they were listed
        # afresh for every call (a scan of the whole space, most of repair's time late in a run)
        return self._all.sample(self.rng, n, self._excluding(batch))

    def state(self) -> dict[str, Any]:
        return {"told": self.n_told, "best_id": self.best_id}
