"""Slots, configs and the search space.

A ``Slot`` is one tunable decision with an ordered domain; a ``Config`` is an immutable
assignment of a value to every slot, with a stable id that survives save/load; a
``SearchSpace`` is the set of configs that satisfy the restrictions, enumerated lazily
(a 10^7-point cartesian product is never materialised to draw a sample).
A space can also be an explicit list of recorded points (replay of a recording).

How a restricted space stays cheap:

- enumeration is a backtracking over the slots that checks each restriction as soon as the last
  slot it reads is assigned, so invalid subtrees are cut early;
- ``count()`` splits the slots into groups no restriction links, counts each group apart and
  multiplies; a group is counted by a backtracking memoised on the values that pending
  restrictions still read (slots ordered to keep that key small), or, when no memo can help
  (one restriction reads most of the group), with NumPy over the group's product in chunks;
- ``sample()`` draws from the cartesian product and rejects invalid points while that finds
  valid ones often enough, then draws exactly from the group counts (uniform, no rejection),
  and lists what is left only when exclusions leave too few configs to find by drawing.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import keyword
import math
import threading
from dataclasses import dataclass
from types import MappingProxyType
from collections.abc import Mapping as _AbcMapping
from typing import Any, Iterable, Iterator, Mapping, Sequence, Union

import numpy as np

from workbench.core.errors import SpaceError
from workbench.core.expr import Restriction, compile_restriction, kind_of

Value = Union[int, float, bool, str]

GROUPS: tuple[str, ...] = ("launch", "memory", "compute", "reduction")


def canonical_json(mapping: Mapping[str, Value]) -> str:
    """Canonical text of a config: keys sorted, no spaces. ``True`` and ``1`` stay distinct."""
    return json.dumps({k: mapping[k] for k in sorted(mapping)}, separators=(",", ":"), sort_keys=True)


class Config(Mapping[str, Value]):
    """An immutable mapping slot name -> value, hashable, with a stable content-derived ``id``.

    The id is the first 12 hex digits of SHA-1 over the canonical JSON, so the same assignment
    has the same id in every process and after a save/load round trip.
    """

    __slots__ = ("_items", "_id", "_hash")

    def __init__(self, values: Mapping[str, Value] | Sequence[tuple[str, Value]] = ()) -> None:
        items = dict(values)
        for key, value in items.items():
            if not isinstance(key, str):
                raise TypeError(f"slot names must be strings, got {key!r}")
            if isinstance(value, np.generic):
                items[key] = value.item()
        self._items: dict[str, Value] = items
        text = canonical_json(items)
        self._id = hashlib.sha1(text.encode()).hexdigest()[:12]
        self._hash = hash(text)

    @classmethod
    def from_canonical(cls, values: dict[str, Value], text: str) -> Config:
        """A config from plain values whose :func:`canonical_json` the caller already holds.

        For bulk loads (100,000 trials of a session file): hashing text the JSON parser's writer
        produced costs well under a microsecond, against ~10 us for ``Config()``'s own
        ``json.dumps``. ``values`` must be str -> int/float/bool/str (no NumPy scalars) and is
        kept, not copied; ``text`` must equal ``canonical_json(values)``, or ids and equality break.
        """
        config = cls.__new__(cls)
        config._items = values
        config._id = hashlib.sha1(text.encode()).hexdigest()[:12]
        config._hash = hash(text)
        return config

    @property
    def id(self) -> str:
        return self._id

    def __getitem__(self, key: str) -> Value:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Config):
            return self._id == other._id and canonical_json(self._items) == canonical_json(other._items)
        if isinstance(other, Mapping):
            return self == Config(other)
        return NotImplemented

    def replace(self, **changes: Value) -> "Config":
        """A new config with some slots changed."""
        return Config({**self._items, **changes})

    def to_dict(self) -> dict[str, Value]:
        return dict(self._items)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._items.items())
        return f"Config({inner})"

    def __reduce__(self) -> tuple[type[Config], tuple[dict[str, Value]]]:  # pickling across worker processes
        return (Config, (self._items,))


#: Longest text value an identifier slot may hold (values become C identifiers / #define tokens).
MAX_IDENT_LEN = 64
#: Integer slot values and problem parameters lie in this range (a signed or unsigned 64-bit
#: integer): a session file stores and reads them back exactly, and C takes them as literals.
INT_RANGE = (-(2**63), 2**64 - 1)


def int_in_range(value: int) -> bool:
    """True when ``value`` fits :data:`INT_RANGE`."""
    return INT_RANGE[0] <= value <= INT_RANGE[1]
#: Below this valid fraction (when known) sampling skips rejection from the cartesian product.
MIN_REJECTION_FRACTION = 0.01
#: Components with cartesian sizes in this range are counted with NumPy when the memoised
#: backtracking would save less than VECTOR_GAIN times the work.
VECTOR_MIN_POINTS = 4096
VECTOR_MAX_POINTS = 2**28
VECTOR_GAIN = 30
VECTOR_CHUNK = 2**18
#: A NumPy-counted component keeps the positions of up to this many valid points for exact draws.
STORE_MAX_POINTS = 2**22
#: Rejection sampling gives up once fewer than this share of its draws were new valid configs.
REJECTION_MIN_YIELD = 0.02
_MISSING = object()


_KIND_OF_TYPE: dict[type, str] = {bool: "bool", int: "int", float: "float", str: "str"}


def _plain(value: Any) -> Any:
    """NumPy scalars become the Python values they hold (np.int64(4) -> 4)."""
    return value.item() if isinstance(value, np.generic) else value


def _kind(value: Any) -> str | None:
    """The slot kind of one value: ``bool``, ``int``, ``float``, ``str``; None for anything else."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    return None


def _shown(values: Sequence[Value], limit: int = 16) -> str:
    """Domain values as a user reads them, shortened for very long domains."""
    parts = [json.dumps(v) if isinstance(v, str) else repr(v) for v in values[:limit]]
    if len(values) > limit:
        parts.append(f"... ({len(values)} values)")
    return ", ".join(parts)


@dataclass(frozen=True)
class Slot:
    """One tunable decision.

    ``values`` is the ordered domain (ints, floats, bools or short identifiers, one type per slot);
    ``group`` is the concern it belongs to (one of :data:`GROUPS`); ``doc`` is a one-line
    explanation shown as a tooltip. ``default`` (optional) is the template author's choice.
    Numeric slots are *ordered*: neighbours include the adjacent values.

    A domain mixing ints and floats becomes a float slot (``(1, 2.5)`` -> ``(1.0, 2.5)``), so a
    value has one spelling and one config id. Invalid slots raise :class:`SpaceError`.
    """

    name: str
    values: tuple[Value, ...]
    group: str = "launch"
    doc: str = ""
    default: Value | None = None

    def __post_init__(self) -> None:
        name = self.name
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
            raise SpaceError(f"slot name {name!r} is not a valid identifier (letters, digits, _; not a keyword)")
        raw = self.values
        if isinstance(raw, (str, bytes)) or not isinstance(raw, Iterable):
            raise SpaceError(f"slot {name}: values must be a list of values, got {raw!r}")
        values = tuple(_plain(v) for v in raw)
        if not values:
            raise SpaceError(f"slot {name}: the domain is empty")
        kinds = set()
        for v in values:
            kind = _kind(v)
            if kind is None:
                raise SpaceError(f"slot {name}: {v!r} is not an int, float, bool or identifier")
            kinds.add(kind)
        if kinds == {"int", "float"}:
            values = tuple(float(v) for v in values)
            kinds = {"float"}
        if len(kinds) > 1:
            raise SpaceError(f"slot {name}: values mix types ({', '.join(sorted(kinds))}); use one type per slot")
        (kind,) = kinds
        for v in values:
            if kind == "float" and not math.isfinite(v):
                raise SpaceError(f"slot {name}: {v!r} is not a finite number")
            if kind == "int" and not int_in_range(v):
                raise SpaceError(f"slot {name}: an integer of {v.bit_length()} bits does not fit 64 bits")
            if kind == "str" and (not v.isidentifier() or len(v) > MAX_IDENT_LEN):
                raise SpaceError(f"slot {name}: {v!r} is not a short identifier (letters, digits, _)")
        if len(set(values)) != len(values):
            seen: set[Value] = set()
            dup = next(v for v in values if v in seen or seen.add(v))  # type: ignore[func-returns-value]
            raise SpaceError(f"slot {name}: value {dup!r} appears twice")
        if self.group not in GROUPS:
            raise SpaceError(f"slot {name}: group {self.group!r} is not one of {', '.join(GROUPS)}")
        if not isinstance(self.doc, str):
            raise SpaceError(f"slot {name}: doc must be text")
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "_positions", {v: i for i, v in enumerate(values)})  # O(1) membership
        object.__setattr__(self, "_type", type(values[0]))  # the exact Python type of the values
        object.__setattr__(self, "doc", " ".join(self.doc.split()))
        if self.default is not None:
            object.__setattr__(self, "default", self.normalise(self.default, what="default"))

    @property
    def kind(self) -> str:
        """``int``, ``float``, ``bool`` or ``str``."""
        return _KIND_OF_TYPE[self._type]  # type: ignore[attr-defined]

    @property
    def ordered(self) -> bool:
        """True when the domain is numeric (adjacent values are meaningful neighbours)."""
        return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in self.values)

    def accepts(self, value: Any) -> bool:
        """True when ``value`` is in the domain with the slot's exact type (no normalisation)."""
        if type(value) is not self._type:  # type: ignore[attr-defined]
            value = _plain(value)
            if type(value) is not self._type:  # type: ignore[attr-defined]
                return False
        return value in self._positions  # type: ignore[attr-defined]

    def normalise(self, value: Any, what: str = "value") -> Value:
        """``value`` as the domain spells it (an int is accepted for a float slot); else SpaceError."""
        if type(value) is self._type and value in self._positions:  # type: ignore[attr-defined]
            return value  # the common case, kept cheap: recordings hold 10^5 points
        value = _plain(value)
        if self.kind == "float" and _kind(value) == "int":
            value = float(value)
        if _kind(value) != self.kind or value not in self._positions:  # type: ignore[attr-defined]
            raise SpaceError(f"slot {self.name}: {what} {value!r} is not allowed; allowed: {_shown(self.values)}")
        return value

    def index(self, value: Any) -> int:
        """Position of ``value`` in the domain (SpaceError when absent)."""
        return self._positions[self.normalise(value)]  # type: ignore[attr-defined]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "values": list(self.values),
            "group": self.group,
            "doc": self.doc,
            "default": self.default,
        }

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> "Slot":
        if not isinstance(data, Mapping):
            raise SpaceError(f"a slot must be an object with name and values, got {type(data).__name__}")
        unknown = sorted(set(data) - {"name", "values", "group", "doc", "default"})
        if unknown:
            raise SpaceError(f"slot {data.get('name', '?')}: unknown field {unknown[0]!r}")
        for key in ("name", "values"):
            if key not in data:
                raise SpaceError(f"slot {data.get('name', '?')}: missing field {key!r}")
        if not isinstance(data["values"], (list, tuple)):
            raise SpaceError(f"slot {data['name']}: values must be a list")
        return Slot(
            name=data["name"],
            values=tuple(data["values"]),
            group=data.get("group", "launch"),
            doc=data.get("doc", ""),
            default=data.get("default"),
        )


def _rand_below(rng: np.random.Generator, n: int) -> int:
    """A uniform integer in ``[0, n)``, also for counts beyond 64 bits."""
    if n <= 2**62:
        return int(rng.integers(n))
    bits = n.bit_length()
    nbytes = (bits + 7) // 8
    while True:
        r = int.from_bytes(rng.bytes(nbytes), "little") & ((1 << bits) - 1)
        if r < n:
            return r


def _elimination_order(
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


class _Component:
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
        for i, value in enumerate(self.domains[d]):
            env[name] = value
            if all(r(env) for r in checks):
                self.chosen[d] = i
                total += self._dfs_count(d + 1)
        memo[key] = total
        return total

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
                return self._unravel(int(self.valid_flat[_rand_below(rng, len(self.valid_flat))]))
            while True:  # more than STORE_MAX_POINTS valid: rejection accepts often enough
                local = self._unravel(_rand_below(rng, self.cartesian))
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
            r = _rand_below(rng, sum(weights))
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


class SearchSpace:
    """The valid configs of a set of slots under restrictions (and fixed problem parameters).

    Public contract (used by strategies, engine, GUI, sessions):

    - ``slots``: tuple of :class:`Slot` in declaration order; ``slot(name)``; ``names``.
    - ``restrictions``: tuple of expression strings (see :mod:`workbench.core.expr`).
    - ``params``: problem parameters visible to restrictions by name (read-only mapping).
    - ``config(mapping) -> Config``: validate and normalise a user mapping (raises SpaceError with
      the slot and the allowed values when a value is outside its domain, or the restriction it
      violates).
    - ``is_valid(config) -> bool``; ``violated(config) -> str | None`` (the first failing restriction).
    - ``__iter__``: valid configs lazily, in a stable order (slot order, domain order, last slot fastest).
    - ``count() -> int``: number of valid configs (cached); ``cartesian_size`` for the unrestricted size.
    - ``sample(rng: np.random.Generator, n, exclude: set[str] = ()) -> list[Config]``: up to ``n``
      distinct valid configs uniformly at random, none whose id is in ``exclude``.
    - ``neighbours(config, adjacent_only=False) -> list[Config]``: valid configs that differ in one
      slot; with ``adjacent_only``, ordered slots move only to the adjacent value(s).
    - ``default_config() -> Config | None``: slot defaults if they form a valid config.
    - ``with_domains(...)`` / ``with_restrictions(...)``: derived spaces (the GUI edits spaces this way).
    - ``to_dict()`` / ``SearchSpace.from_dict(data)``: JSON-able round trip.
    - ``SearchSpace.explicit(slots, points)``: a space that is exactly a list of recorded points.

    Additions: ``values_index(config)`` / ``from_indices(indices)`` (domain positions, for
    strategies that work on integer coordinates), ``with_params(...)``, ``is_explicit``,
    ``points`` (explicit spaces), ``in`` (same as ``is_valid``).
    """

    def __init__(
        self,
        slots: Sequence[Slot],
        restrictions: Sequence[str] = (),
        params: Mapping[str, Value] | None = None,
    ) -> None:
        self._setup(slots, restrictions, params)
        self._all_points: tuple[Config, ...] | None = None
        self._points: tuple[Config, ...] | None = None
        self._point_ids: dict[str, int] = {}  # explicit spaces: config id -> position in _points

    # ------------------------------------------------------------------ construction
    def _setup(self, slots: Sequence[Slot], restrictions: Sequence[str], params: Mapping[str, Value] | None) -> None:
        slots = tuple(slots)
        for slot in slots:
            if not isinstance(slot, Slot):
                raise SpaceError(f"expected a Slot, got {type(slot).__name__}")
        names = tuple(s.name for s in slots)
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise SpaceError(f"slot {dup!r} is declared twice")
        clean_params: dict[str, Value] = {}
        for key, value in (params or {}).items():
            value = _plain(value)
            if not isinstance(key, str) or not key.isidentifier():
                raise SpaceError(f"problem parameter name {key!r} is not a valid identifier")
            if key in names:
                raise SpaceError(f"problem parameter {key!r} has the same name as a slot")
            if _kind(value) is None:
                raise SpaceError(f"problem parameter {key}={value!r} is not a number, bool or text")
            if _kind(value) == "float" and not math.isfinite(value):
                raise SpaceError(f"problem parameter {key}={value!r} is not a finite number")
            if _kind(value) == "int" and not int_in_range(value):
                raise SpaceError(f"problem parameter {key}: an integer of {value.bit_length()} bits does not fit 64 bits")
            clean_params[key] = value
        if isinstance(restrictions, str):
            restrictions = [restrictions]
        self._slots = slots
        self._names = names
        self._cartesian = math.prod(len(s.values) for s in slots)
        self._pos = {n: i for i, n in enumerate(names)}
        self._params = MappingProxyType(clean_params)
        kinds = {s.name: ("str" if s.kind == "str" else "num") for s in slots}
        kinds.update({k: kind_of(v) for k, v in clean_params.items()})
        known = (*names, *clean_params)
        compiled = tuple(compile_restriction(text, known, kinds) for text in restrictions)
        self._compiled = compiled
        self._restrictions = tuple(r.text for r in compiled)
        # Restrictions reading no slot are decided by the problem alone.
        self._false_constant: str | None = None
        linked: list[tuple[Restriction, frozenset[int]]] = []
        self._checks_at: list[list[Restriction]] = [[] for _ in slots]
        self._by_slot: list[list[Restriction]] = [[] for _ in slots]
        for r in compiled:
            reads = frozenset(self._pos[n] for n in r.names if n in self._pos)
            if not reads:
                if self._false_constant is None and not r(clean_params):
                    self._false_constant = r.text
                continue
            linked.append((r, reads))
            self._checks_at[max(reads)].append(r)
            for p in reads:
                self._by_slot[p].append(r)
        self._linked = linked
        self._components: list[_Component] | None = None
        self._count: int | None = None
        # components keep scratch state while counting and drawing; one thread at a time
        self._lock = threading.RLock()
        self._neighbour_index: dict[tuple[int, ...], Config] | None = None  # explicit: index vector -> point

    @classmethod
    def explicit(
        cls,
        slots: Sequence[Slot],
        points: Iterable[Mapping[str, Value]],
        restrictions: Sequence[str] = (),
        params: Mapping[str, Value] | None = None,
    ) -> "SearchSpace":
        """A space that is exactly ``points`` (a recording), minus any that break ``restrictions``.

        Every point must assign every slot a value of its domain; repeated points are kept once.
        """
        space = cls.__new__(cls)
        space._setup(slots, restrictions, params)
        unique: dict[str, Config] = {}
        for k, point in enumerate(points):
            if not isinstance(point, Mapping):
                raise SpaceError(f"point {k}: expected a mapping slot -> value, got {type(point).__name__}")
            try:
                config = space._normalised(point)
            except SpaceError as exc:
                raise SpaceError(f"point {k}: {exc}") from None
            unique.setdefault(config.id, config)
        space._all_points = tuple(unique.values())
        space._points = tuple(c for c in space._all_points if space._satisfies(c))
        space._point_ids = {c.id: i for i, c in enumerate(space._points)}
        return space

    # ------------------------------------------------------------------ basic facts
    @property
    def slots(self) -> tuple[Slot, ...]:
        return self._slots

    @property
    def names(self) -> tuple[str, ...]:
        return self._names

    @property
    def restrictions(self) -> tuple[str, ...]:
        return self._restrictions

    @property
    def params(self) -> Mapping[str, Value]:
        return self._params

    @property
    def is_explicit(self) -> bool:
        return self._points is not None

    @property
    def points(self) -> tuple[Config, ...]:
        """The recorded points that satisfy the restrictions (explicit spaces; empty otherwise)."""
        return self._points or ()

    @property
    def cartesian_size(self) -> int:
        """Size of the unrestricted product of the domains."""
        return self._cartesian

    def slot(self, name: str) -> Slot:
        try:
            return self._slots[self._pos[name]]
        except KeyError:
            raise SpaceError(f"unknown slot {name!r}; slots: {', '.join(self._names) or 'none'}") from None

    def __repr__(self) -> str:
        kind = f"explicit, {len(self.points)} points" if self.is_explicit else f"cartesian {self.cartesian_size}"
        return f"SearchSpace({len(self._slots)} slots, {kind}, {len(self._restrictions)} restrictions)"

    # ------------------------------------------------------------------ validation
    def _normalised(self, mapping: Mapping[str, Any]) -> Config:
        """Config with every value as its domain spells it; SpaceError on unknown/missing/out-of-domain."""
        if not isinstance(mapping, _AbcMapping):
            raise SpaceError(f"a config must be a mapping slot -> value, got {type(mapping).__name__}")
        if len(mapping) != len(self._slots) or any(k not in self._pos for k in mapping):
            unknown = [k for k in mapping if k not in self._pos]
            if unknown:
                raise SpaceError(f"unknown slot {unknown[0]!r}; slots: {', '.join(self._names)}")
        values: dict[str, Value] = {}
        for slot in self._slots:
            value = mapping.get(slot.name, _MISSING)
            if value is _MISSING:
                raise SpaceError(f"missing slot {slot.name!r} (allowed: {_shown(slot.values)})")
            values[slot.name] = slot.normalise(value)
        return Config(values)

    def _env(self, config: Mapping[str, Value]) -> dict[str, Any]:
        env: dict[str, Any] = dict(self._params)
        env.update(config)
        return env

    def _satisfies(self, config: Mapping[str, Value]) -> bool:
        if self._false_constant is not None:
            return False
        if not self._linked:
            return True
        env = self._env(config)
        return all(r(env) for r, _ in self._linked)

    def violated(self, config: Mapping[str, Value]) -> str | None:
        """The text of the first restriction ``config`` breaks, or None.

        Only restrictions are checked: domains (and, in explicit spaces, membership) are
        :meth:`is_valid`'s and :meth:`config`'s business.
        """
        if self._false_constant is not None:
            return self._false_constant
        env = self._env(config)
        for r, _ in self._linked:
            if not r(env):
                return r.text
        return None

    def _in_domains(self, config: Mapping[str, Any]) -> bool:
        if len(config) != len(self._slots):
            return False
        for slot in self._slots:
            value = config.get(slot.name, _MISSING)
            if value is _MISSING or not slot.accepts(value):
                return False
        return True

    def is_valid(self, config: Mapping[str, Value]) -> bool:
        """True when ``config`` assigns every slot a domain value (exact type) and is in the space."""
        if not isinstance(config, Mapping):
            return False
        if self._points is not None:
            cid = config.id if isinstance(config, Config) else Config(config).id
            return cid in self._point_ids
        return self._in_domains(config) and self._satisfies(config)

    def __contains__(self, config: object) -> bool:
        return isinstance(config, Mapping) and self.is_valid(config)

    def config(self, mapping: Mapping[str, Any]) -> Config:
        """Validate and normalise a user mapping into a :class:`Config` of this space.

        Exact types are required, except that an int is accepted (and stored as float) for a
        float slot. Raises :class:`SpaceError` naming the unknown or missing slot, the allowed
        values, the violated restriction, or (explicit spaces) that the point was not recorded.
        """
        config = self._normalised(mapping)
        broken = self.violated(config)
        if broken is not None:
            raise SpaceError(f"config {_describe(config)} violates restriction \"{broken}\"")
        if self._points is not None and config.id not in self._point_ids:
            raise SpaceError(f"config {_describe(config)} is not one of the {len(self._points)} recorded points")
        return config

    def default_config(self) -> Config | None:
        """The slot defaults as a config, or None when a slot has no default or they are not valid."""
        if any(s.default is None for s in self._slots):
            return None
        config = Config({s.name: s.default for s in self._slots if s.default is not None})
        return config if self.is_valid(config) else None

    # ------------------------------------------------------------------ indices
    def values_index(self, config: Mapping[str, Value]) -> tuple[int, ...]:
        """Position of each slot's value in its domain, in slot order (SpaceError when outside)."""
        out = []
        for slot in self._slots:
            if slot.name not in config:
                raise SpaceError(f"missing slot {slot.name!r}")
            out.append(slot.index(config[slot.name]))
        return tuple(out)

    def from_indices(self, indices: Sequence[int]) -> Config:
        """The config at the given domain positions (not checked against restrictions)."""
        indices = tuple(int(i) for i in indices)
        if len(indices) != len(self._slots):
            raise SpaceError(f"expected {len(self._slots)} indices, got {len(indices)}")
        values = {}
        for slot, i in zip(self._slots, indices):
            if not 0 <= i < len(slot.values):
                raise SpaceError(f"slot {slot.name}: index {i} outside 0..{len(slot.values) - 1}")
            values[slot.name] = slot.values[i]
        return Config(values)

    # ------------------------------------------------------------------ enumeration and counting
    def _iter_indices(self) -> Iterator[tuple[int, ...]]:
        """Backtracking over slots, last slot fastest, checking each restriction at its last slot."""
        n = len(self._slots)
        if self._false_constant is not None:
            return
        if n == 0:
            yield ()
            return
        domains = [s.values for s in self._slots]
        sizes = [len(d) for d in domains]
        checks = self._checks_at
        env: dict[str, Any] = dict(self._params)
        pos = [-1] * n
        d = 0
        while d >= 0:
            pos[d] += 1
            if pos[d] >= sizes[d]:
                pos[d] = -1
                d -= 1
                continue
            env[self._names[d]] = domains[d][pos[d]]
            if all(r(env) for r in checks[d]):
                if d == n - 1:
                    yield tuple(pos)
                else:
                    d += 1

    def __iter__(self) -> Iterator[Config]:
        if self._points is not None:
            return iter(self._points)
        return (self._make(idx) for idx in self._iter_indices())

    def _make(self, indices: Sequence[int]) -> Config:
        return Config({s.name: s.values[i] for s, i in zip(self._slots, indices)})

    def _get_components(self) -> list[_Component]:
        """Connected groups of slots (slots linked by no restriction are groups of one)."""
        with self._lock:
            return self._build_components()

    def _build_components(self) -> list[_Component]:
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
            self._components = []
            for members in groups.values():
                member_set = set(members)
                mine = [(r, reads) for r, reads in self._linked if reads <= member_set]
                order = _elimination_order(members, [reads for _, reads in mine], self._slots)
                self._components.append(_Component(order, self._slots, mine, self._params))
        return self._components

    def count(self) -> int:
        """Exact number of valid configs (cached): independent slot groups are counted apart."""
        if self._points is not None:
            return len(self._points)
        with self._lock:
            if self._count is None:
                if self._false_constant is not None:
                    self._count = 0
                else:
                    self._count = math.prod(c.count() for c in self._get_components())
            return self._count

    # ------------------------------------------------------------------ sampling
    def _draw_exact(self, rng: np.random.Generator) -> Config:
        """One valid config drawn uniformly using the component counts (space must be non-empty)."""
        indices = [0] * len(self._slots)
        with self._lock:
            for component in self._get_components():
                for p, i in zip(component.positions, component.sample(rng)):
                    indices[p] = i
        return self._make(indices)

    def sample(self, rng: np.random.Generator, n: int, exclude: Iterable[str] = ()) -> list[Config]:
        """Up to ``n`` distinct valid configs, uniformly at random, none whose id is in ``exclude``.

        Draws from the cartesian product and rejects invalid points while the valid fraction is
        reasonable; otherwise draws exactly from the memoised counts; enumerates only when the
        excluded configs leave too few to find by drawing. Returns fewer than ``n`` only when
        fewer remain.
        """
        n = int(n)
        if n <= 0:
            return []
        taken = {e.id if isinstance(e, Config) else e for e in exclude}  # ids; configs tolerated
        if self._points is not None:
            remaining = [c for c in self._points if c.id not in taken]
            if not remaining:
                return []
            picks = rng.choice(len(remaining), size=min(n, len(remaining)), replace=False)
            return [remaining[int(i)] for i in picks]
        if self._false_constant is not None:
            return []
        out: list[Config] = []

        def accept(config: Config) -> None:
            if config.id not in taken:
                taken.add(config.id)
                out.append(config)

        # 1. rejection from the cartesian product, while it finds new configs often enough
        known_fraction = None if self._count is None else self._count / self.cartesian_size
        small = 4 * (len(taken) + n) >= self.cartesian_size  # likely to exhaust: count instead
        if not small and (known_fraction is None or known_fraction >= MIN_REJECTION_FRACTION):
            sizes = [len(s.values) for s in self._slots]
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
                    config = self._make(row)
                    if self._satisfies(config):
                        accept(config)
                        if len(out) == n:
                            break
            if len(out) == n:
                return out
        # 2. exact draws from the counts, when the excluded part leaves plenty
        total = self.count()
        if total == 0:
            return out
        if total > 2 * (len(taken) + n):
            attempts = 0
            while len(out) < n and attempts < 20 * n + 100:
                attempts += 1
                accept(self._draw_exact(rng))
            if len(out) == n:
                return out
        # 3. list what is left (at most a few times what is excluded or asked for) and choose
        rest = [c for c in self._enumerate_unordered() if c.id not in taken]
        if rest:
            picks = rng.choice(len(rest), size=min(n - len(out), len(rest)), replace=False)
            out.extend(rest[int(i)] for i in picks)
        return out

    def _enumerate_unordered(self) -> Iterator[Config]:
        """Every valid config, component by component, visiting only branches the counts say are live."""
        if self._false_constant is not None or self.count() == 0:
            return
        with self._lock:
            components = self._get_components()
            per_component = [list(c.assignments()) for c in components]
        for combo in itertools.product(*per_component):
            indices = [0] * len(self._slots)
            for component, local in zip(components, combo):
                for p, i in zip(component.positions, local):
                    indices[p] = i
            yield self._make(indices)

    # ------------------------------------------------------------------ neighbours
    def neighbours(self, config: Mapping[str, Value], adjacent_only: bool = False) -> list[Config]:
        """Valid configs that differ from ``config`` in exactly one slot.

        With ``adjacent_only``, an ordered (numeric) slot moves only to the next lower and higher
        value of its domain (explicit spaces: the nearest recorded ones); other slots take every
        other value. ``config`` itself need not be valid, but its values must be in the domains.
        """
        origin = self.values_index(config)
        if self._points is not None:
            return self._explicit_neighbours(origin, adjacent_only)
        out = []
        base = self.from_indices(origin)
        base_ok = self._satisfies(base)
        env = self._env(base)
        for p, slot in enumerate(self._slots):
            here = origin[p]
            if adjacent_only and slot.ordered:
                moves = [i for i in (here - 1, here + 1) if 0 <= i < len(slot.values)]
            else:
                moves = [i for i in range(len(slot.values)) if i != here]
            checks = self._by_slot[p] if base_ok else [r for r, _ in self._linked]
            for i in moves:
                env[slot.name] = slot.values[i]
                if self._false_constant is None and all(r(env) for r in checks):
                    out.append(base.replace(**{slot.name: slot.values[i]}))
            env[slot.name] = slot.values[here]
        return out

    def _explicit_neighbours(self, origin: tuple[int, ...], adjacent_only: bool) -> list[Config]:
        """Recorded points one slot away, found by looking up each changed index vector."""
        if self._neighbour_index is None:
            positions = [s._positions for s in self._slots]  # type: ignore[attr-defined]
            self._neighbour_index = {
                tuple(pos[point[name]] for pos, name in zip(positions, self._names)): point for point in self.points
            }
        index = self._neighbour_index
        out: list[Config] = []
        for p, slot in enumerate(self._slots):
            here = origin[p]
            found = []
            for i in range(len(slot.values)):
                if i != here:
                    point = index.get(origin[:p] + (i,) + origin[p + 1 :])
                    if point is not None:
                        found.append((i, point))
            if adjacent_only and slot.ordered:
                below = [m for m in found if m[0] < here]
                above = [m for m in found if m[0] > here]
                found = below[-1:] + above[:1]
            out.extend(point for _, point in found)
        return out

    # ------------------------------------------------------------------ derived spaces
    def _derive(self, slots: Sequence[Slot], restrictions: Sequence[str], params: Mapping[str, Value]) -> "SearchSpace":
        if self._all_points is None:
            return SearchSpace(slots, restrictions, params)
        names = {s.name: s for s in slots}
        kept = [c for c in self._all_points if all(names[k].accepts(v) for k, v in c.items())]
        return SearchSpace.explicit(slots, kept, restrictions, params)

    def with_domains(self, domains: Mapping[str, Sequence[Value]]) -> "SearchSpace":
        """The same space with some slot domains replaced (defaults outside the new domain are dropped).

        For an explicit space, recorded points outside the new domains are left out.
        """
        for name in domains:
            self.slot(name)  # unknown slot -> SpaceError
        slots = []
        for slot in self._slots:
            if slot.name in domains:
                values = tuple(domains[slot.name])
                default = slot.default if slot.default is not None and slot.default in values else None
                slot = Slot(slot.name, values, slot.group, slot.doc, default)
            slots.append(slot)
        return self._derive(slots, self._restrictions, self._params)

    def with_restrictions(self, restrictions: Sequence[str]) -> "SearchSpace":
        """The same slots under a new list of restrictions (replaces the current ones)."""
        return self._derive(self._slots, list(restrictions), self._params)

    def with_params(self, params: Mapping[str, Value]) -> "SearchSpace":
        """The same slots and restrictions for other problem parameters."""
        return self._derive(self._slots, self._restrictions, params)

    # ------------------------------------------------------------------ persistence
    def to_dict(self) -> dict[str, Any]:
        """JSON-able description; explicit spaces store their points as value lists in slot order."""
        data: dict[str, Any] = {
            "slots": [s.to_dict() for s in self._slots],
            "restrictions": list(self._restrictions),
            "params": dict(self._params),
        }
        if self._all_points is not None:
            data["points"] = [[c[name] for name in self._names] for c in self._all_points]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "SearchSpace":
        if not isinstance(data, Mapping):
            raise SpaceError(f"a search space must be an object, got {type(data).__name__}")
        unknown = sorted(set(data) - {"slots", "restrictions", "params", "points"})
        if unknown:
            raise SpaceError(f"search space: unknown field {unknown[0]!r}")
        raw_slots = data.get("slots")
        if not isinstance(raw_slots, (list, tuple)):
            raise SpaceError("search space: 'slots' must be a list of slots")
        slots = [Slot.from_dict(s) for s in raw_slots]
        restrictions = data.get("restrictions", [])
        if not isinstance(restrictions, (list, tuple)) or not all(isinstance(r, str) for r in restrictions):
            raise SpaceError("search space: 'restrictions' must be a list of text expressions")
        params = data.get("params", {})
        if not isinstance(params, Mapping):
            raise SpaceError("search space: 'params' must be an object")
        if "points" not in data:
            return cls(slots, restrictions, params)
        raw_points = data["points"]
        if not isinstance(raw_points, (list, tuple)):
            raise SpaceError("search space: 'points' must be a list")
        names = [s.name for s in slots]
        points = []
        for k, row in enumerate(raw_points):
            if not isinstance(row, (list, tuple)) or len(row) != len(names):
                raise SpaceError(f"search space: point {k} must be a list of {len(names)} values")
            points.append(dict(zip(names, row)))
        return cls.explicit(slots, points, restrictions, params)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:  # restrictions are closures: travel as the description
        if self._all_points is None:
            return (SearchSpace, (self._slots, self._restrictions, dict(self._params)))
        rows = [tuple(c[name] for name in self._names) for c in self._all_points]
        return (_restore_explicit, (self._slots, self._restrictions, dict(self._params), rows))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SearchSpace):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash((self._names, self._restrictions))


def _restore_explicit(
    slots: Sequence[Slot], restrictions: Sequence[str], params: Mapping[str, Value], rows: Sequence[tuple]
) -> SearchSpace:
    """Unpickle an explicit space: its points were validated when it was built, so skip that."""
    space = SearchSpace.__new__(SearchSpace)
    space._setup(slots, restrictions, params)
    names = space.names
    space._all_points = tuple(Config(dict(zip(names, row))) for row in rows)
    space._points = tuple(c for c in space._all_points if space._satisfies(c))
    space._point_ids = {c.id: i for i, c in enumerate(space._points)}
    return space


def _describe(config: Mapping[str, Value]) -> str:
    """A short text of a config for error messages."""
    text = ", ".join(f"{k}={v!r}" for k, v in config.items())
    return text if len(text) <= 120 else text[:117] + "..."
