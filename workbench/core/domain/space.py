"""Slots, configs and the search space.

A ``Slot`` is one tunable decision with an ordered domain; a ``Config`` is an immutable
assignment of a value to every slot, with a stable id that survives save/load; a
``SearchSpace`` is the set of configs that satisfy the restrictions. It comes in two kinds behind
one contract: a ``ProductSpace``, the restricted cartesian product of the domains, enumerated
lazily (a 10^7-point product is never materialised to draw a sample), and a ``RecordedSpace``,
exactly a list of recorded points (replay of a recording).

How a restricted product space stays cheap:

- enumeration is a backtracking over the slots that checks each restriction as soon as the last
  slot it reads is assigned, so invalid subtrees are cut early;
- ``count()`` splits the slots into groups no restriction links and counts each apart
  (:mod:`workbench.core.domain.space_count`);
- ``sample()`` rejects from the cartesian product while that finds valid configs often enough,
  then draws exactly from the group counts, and lists what is left only when exclusions leave
  too few to find by drawing (:mod:`workbench.core.domain.space_sampling`).
"""

from __future__ import annotations

import hashlib
import json
import keyword
import math
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from types import MappingProxyType
from collections.abc import Mapping as _AbcMapping
from typing import AbstractSet, Any, ItemsView, Iterable, Iterator, KeysView, Mapping, Sequence, Union, ValuesView

import numpy as np

from workbench.core.restricted_pickle import pipe_record
from workbench.core.errors import RestrictionError, SpaceError, SpaceSearchTooLong
from workbench.core.domain.expr import Restriction, compile_restriction, kind_of
from workbench.core.domain.space_count import Counter
from workbench.core.domain.space_sampling import Excluding, RecordedSampler, sample_product

Value = Union[int, float, bool, str]

GROUPS: tuple[str, ...] = ("launch", "memory", "compute", "reduction")


def canonical_json(mapping: Mapping[str, Value]) -> str:
    """Canonical text of a config: keys sorted, no spaces. ``True`` and ``1`` stay distinct."""
    return json.dumps({k: mapping[k] for k in sorted(mapping)}, separators=(",", ":"), sort_keys=True)


@pipe_record
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

    # The dict's own views and lookups instead of Mapping's generic ones, which go through
    # __getitem__ and the abc machinery: a session of 10^4 trials compares every config's keys
    # with the space's slots when it opens (read-only views: a config stays immutable).
    def keys(self) -> KeysView[str]:
        return self._items.keys()

    def items(self) -> ItemsView[str, Value]:
        return self._items.items()

    def values(self) -> ValuesView[Value]:
        return self._items.values()

    def get(self, key: str, default: Any = None) -> Any:
        return self._items.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._items

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


def _brief(value: Any, limit: int = 60) -> str:
    """A value as an error line shows it: its repr, cut at ``limit`` characters with the length
    said (a string of 100,000 characters in a SPACE made a 100 KB error "line")."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


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
            raise SpaceError(f"slot {name}: values must be a list of values, got {_brief(raw)}")
        values = tuple(_plain(v) for v in raw)
        if not values:
            raise SpaceError(f"slot {name}: the domain is empty")
        kinds = set()
        for v in values:
            kind = _kind(v)
            if kind is None:
                raise SpaceError(f"slot {name}: {_brief(v)} is not an int, float, bool or identifier")
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
                raise SpaceError(f"slot {name}: {_brief(v)} is not a short identifier (letters, digits, _)")
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
            raise SpaceError(f"slot {self.name}: {what} {_brief(value)} is not allowed; allowed: {_shown(self.values)}")
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



class SearchSpace(ABC):
    """The valid configs of a set of slots under restrictions (and fixed problem parameters).

    Two kinds share this contract: a :class:`ProductSpace` (the restricted cartesian product of
    the slot domains, enumerated lazily) and a :class:`RecordedSpace` (exactly a list of recorded
    points). ``SearchSpace(slots, restrictions, params)`` builds a product space and
    ``SearchSpace.explicit(slots, points, ...)`` a recorded one, so callers need not name the kind.

    Public contract (used by strategies, engine, GUI, sessions):

    - ``slots``: tuple of :class:`Slot` in declaration order; ``slot(name)``; ``names``.
    - ``restrictions``: tuple of expression strings (see :mod:`workbench.core.domain.expr`).
    - ``params``: problem parameters visible to restrictions by name (read-only mapping).
    - ``config(mapping) -> Config``: validate and normalise a user mapping (raises SpaceError with
      the slot and the allowed values when a value is outside its domain, or the restriction it
      violates).
    - ``is_valid(config) -> bool``; ``violated(config) -> str | None`` (the first failing restriction).
    - ``__iter__``: valid configs lazily, in a stable order (slot order, domain order, last slot
      fastest; a recording: its order).
    - ``count() -> int``: number of valid configs (cached); ``cartesian_size`` for the unrestricted size.
    - ``sample(rng: np.random.Generator, n, exclude: set[str] = ()) -> list[Config]``: up to ``n``
      distinct valid configs uniformly at random, none whose id is in ``exclude``.
    - ``neighbours(config, adjacent_only=False) -> list[Config]``: valid configs that differ in one
      slot; with ``adjacent_only``, ordered slots move only to the adjacent value(s).
    - ``default_config() -> Config | None``: slot defaults if they form a valid config.
    - ``with_domains(...)`` / ``with_restrictions(...)``: derived spaces of the same kind (the GUI
      edits spaces this way).
    - ``to_dict()`` / ``SearchSpace.from_dict(data)``: JSON-able round trip.
    - ``SearchSpace.explicit(slots, points)``: a space that is exactly a list of recorded points.

    Additions: ``values_index(config)`` / ``from_indices(indices)`` (domain positions, for
    strategies that work on integer coordinates), ``with_params(...)``, ``is_explicit``,
    ``points`` (recorded spaces), ``in`` (same as ``is_valid``).
    """

    #: True for a recorded space: its configs are a list, not a product.
    is_explicit: bool = False

    def __new__(cls, *args: Any, **kwargs: Any) -> "SearchSpace":
        # ``SearchSpace(slots, ...)`` keeps meaning "the product of these slots".
        return super().__new__(ProductSpace if cls is SearchSpace else cls)

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
                raise SpaceError(f"problem parameter {key}={_brief(value)} is not a number, bool or text")
            if _kind(value) == "float" and not math.isfinite(value):
                raise SpaceError(f"problem parameter {key}={value!r} is not a finite number")
            if _kind(value) == "int" and not int_in_range(value):
                raise SpaceError(f"problem parameter {key}: an integer of {value.bit_length()} bits does not fit 64 bits")
            clean_params[key] = value
        if isinstance(restrictions, str):
            restrictions = [restrictions]
        self._slots = slots
        self._names = names
        self._canonical_order = tuple(sorted(range(len(names)), key=names.__getitem__))
        self._canonical_parts: tuple[dict[int, str], ...] = tuple({} for _ in slots)
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

    @staticmethod
    def explicit(
        slots: Sequence[Slot],
        points: Iterable[Mapping[str, Value]],
        restrictions: Sequence[str] = (),
        params: Mapping[str, Value] | None = None,
    ) -> "RecordedSpace":
        """A space that is exactly ``points`` (a recording), minus any that break ``restrictions``.

        Every point must assign every slot a value of its domain; repeated points are kept once,
        at their first place: :attr:`points` keeps the order given.
        """
        return RecordedSpace(slots, points, restrictions, params)

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

    def uncomputable(self, samples: int = 512, seed: int = 0) -> list[tuple[str, dict[str, Value], str]]:
        """Restrictions that cannot be computed for some assignment of the slots they read (a
        division by zero, a power too large), each with one such assignment and why: those configs
        count as not valid, which a restriction's author rarely means (``block ** (items ** 99999)``
        dropped 17 of 23 configs unsaid). Checked on ``samples`` seeded draws from the slots' domains
        (all of them when there are fewer), so it costs the same for any size of space. An
        assignment another restriction already rules out (``b != 0`` beside ``a % b == 0``) is the
        author's guard, not a finding. One that reads no slot is found with an empty assignment: it
        rules out every config. A recording's points are what was measured: none to check."""
        if self.is_explicit:
            return []
        rng = np.random.default_rng(seed)
        found: list[tuple[str, dict[str, Value], str]] = []
        for restriction in self._compiled:
            slots = [s for s in self._slots if s.name in restriction.names]
            if not slots:  # decided by the problem alone: failing, it leaves no config valid
                try:
                    restriction.evaluate(dict(self._params))
                except ArithmeticError as exc:
                    found.append((restriction.text, {}, str(exc) or type(exc).__name__))
                except RestrictionError:
                    pass
                continue
            guards = [r for r in self._compiled if r is not restriction
                      and r.names <= restriction.names | set(self._params)]
            sizes = [len(s.values) for s in slots]
            total = math.prod(sizes)
            picks = (np.unravel_index(np.arange(total), sizes) if total <= samples
                     else [rng.integers(0, n, size=samples) for n in sizes])
            for row in zip(*picks):
                assignment = {s.name: s.values[int(i)] for s, i in zip(slots, row)}
                env = {**self._params, **assignment}
                try:
                    restriction.evaluate(env)
                    continue
                except ArithmeticError as exc:
                    why = str(exc) or type(exc).__name__
                except RestrictionError:  # (a comparison of text with a number: the space's own checks say it)
                    break
                try:  # (a guard that fails to compute rules the assignment out too)
                    guarded = not all(guard(env) for guard in guards)
                except RestrictionError:
                    guarded = True
                if not guarded:
                    found.append((restriction.text, assignment, why))
                    break
        return found

    @property
    def params(self) -> Mapping[str, Value]:
        return self._params

    @property
    def points(self) -> tuple[Config, ...]:
        """The recorded points that satisfy the restrictions (recorded spaces; empty otherwise)."""
        return ()

    @property
    def cartesian_size(self) -> int:
        """Size of the unrestricted product of the domains."""
        return self._cartesian

    def slot(self, name: str) -> Slot:
        try:
            return self._slots[self._pos[name]]
        except KeyError:
            raise SpaceError(f"unknown slot {name!r}; slots: {', '.join(self._names) or 'none'}") from None

    @abstractmethod
    def _size_text(self) -> str:
        """How big the space is, for ``repr``."""

    def __repr__(self) -> str:
        return f"SearchSpace({len(self._slots)} slots, {self._size_text()}, {len(self._restrictions)} restrictions)"

    # ------------------------------------------------------------------ validation
    def _normalised(self, mapping: Mapping[str, Any]) -> Config:
        """Config with every value as its domain spells it; SpaceError on unknown/missing/out-of-domain."""
        if not isinstance(mapping, _AbcMapping):
            raise SpaceError(f"a config must be a mapping slot -> value, got {type(mapping).__name__}")
        if len(mapping) != len(self._slots) or any(k not in self._pos for k in mapping):
            unknown = [k for k in mapping if k not in self._pos]
            if unknown:
                raise SpaceError(f"unknown slot {unknown[0]!r}; slots: {', '.join(self._names)}")
        positions = []
        for slot in self._slots:
            value = mapping.get(slot.name, _MISSING)
            # a value of the domain's own type, as a recording's 10^5 points spell theirs: looked up
            # here (Slot.index's two calls per value were a fifth of the time such a session took to open)
            at = slot._positions.get(value) if type(value) is slot._type else None  # type: ignore[attr-defined]
            if at is None:
                if value is _MISSING:
                    raise SpaceError(f"missing slot {slot.name!r} (allowed: {_shown(slot.values)})")
                at = slot.index(value)
            positions.append(at)
        return self.config_at(positions)

    def _env(self, config: Mapping[str, Value]) -> dict[str, Any]:
        env: dict[str, Any] = dict(self._params)
        env.update(config)
        return env

    def satisfies(self, config: Mapping[str, Value]) -> bool:
        """True when ``config`` breaks no restriction (domains and membership are not checked)."""
        if self._false_constant is not None:
            return False
        if not self._linked:
            return True
        env = self._env(config)
        return all(r(env) for r, _ in self._linked)

    def violated(self, config: Mapping[str, Value]) -> str | None:
        """The text of the first restriction ``config`` breaks, or None.

        Only restrictions are checked: domains (and, in recorded spaces, membership) are
        :meth:`is_valid`'s and :meth:`config`'s business.
        """
        if self._false_constant is not None:
            return self._false_constant
        env = self._env(config)
        for r, _ in self._linked:
            if not r(env):
                return r.text
        return None

    @abstractmethod
    def is_valid(self, config: Mapping[str, Value]) -> bool:
        """True when ``config`` assigns every slot a domain value (exact type) and is in the space."""

    def __contains__(self, config: object) -> bool:
        return isinstance(config, Mapping) and self.is_valid(config)

    def in_domains(self, config: Mapping[str, Value]) -> bool:
        """True when ``config`` assigns every slot a value of its domain, restrictions aside: what a
        trial measured before the domains were narrowed may not do, and a strategy can encode."""
        return len(config) == len(self._slots) and all(
            slot.name in config and slot.accepts(config[slot.name]) for slot in self._slots)

    def config(self, mapping: Mapping[str, Any]) -> Config:
        """Validate and normalise a user mapping into a :class:`Config` of this space.

        Exact types are required, except that an int is accepted (and stored as float) for a
        float slot. Raises :class:`SpaceError` naming the unknown or missing slot, the allowed
        values, the violated restriction, or (recorded spaces) that the point was not recorded.
        """
        config = self._normalised(mapping)
        broken = self.violated(config)
        if broken is not None:
            raise SpaceError(f"config {_describe(config)} violates restriction \"{broken}\"")
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
        return self.config_at(indices)

    def config_at(self, indices: Sequence[int]) -> Config:
        """The config at domain positions known to be in range (unchecked: the samplers' hot path).

        Built from each slot value's piece of canonical text, written once per space: the same
        text and id as ``Config()`` gives (:func:`canonical_json`), without its ``json.dumps`` of
        the whole config, which was most of the time a recorded space of 10^4 points took to build.
        """
        values: dict[str, Value] = {}
        parts: list[str] = []
        for slot, known, index in zip(self._slots, self._canonical_parts, indices):
            value = slot.values[index]
            values[slot.name] = value
            part = known.get(index)
            if part is None:
                part = known[index] = json.dumps({slot.name: value}, separators=(",", ":"))[1:-1]
            parts.append(part)
        return Config.from_canonical(values, "{" + ",".join([parts[p] for p in self._canonical_order]) + "}")

    def valid_config_at(self, indices: Sequence[int]) -> Config | None:
        """The config at domain positions known to be in range when it is valid, else None (the
        repair of a proposal asks this of dozens of nearby positions, most of them ruled out)."""
        config = self.config_at(indices)
        return config if self.is_valid(config) else None

    # ------------------------------------------------------------------ the kind's own answers
    @abstractmethod
    def __iter__(self) -> Iterator[Config]:
        """Every valid config, lazily, in a stable order."""

    def first_valid(self, time_limit_s: float, candidates: Iterable[Mapping[str, Value]] = ()) -> Config | None:
        """A valid config (the slot defaults, or one of ``candidates``, such as the configs a
        session measured, when one is valid), None when the space holds none;
        :class:`SpaceSearchTooLong` when ``time_limit_s`` of search decided neither. Kinds whose
        configs are listed answer at once."""
        return self._known_valid(candidates) or next(iter(self), None)

    def _known_valid(self, candidates: Iterable[Mapping[str, Value]]) -> Config | None:
        """The slot defaults, else the first of ``candidates`` the space holds, as a config; or None."""
        default = self.default_config()
        if default is not None:
            return default
        for candidate in candidates:
            if self.is_valid(candidate):
                return Config(candidate)
        return None

    @abstractmethod
    def count(self) -> int:
        """Exact number of valid configs (cached)."""

    def sample(self, rng: np.random.Generator, n: int, exclude: Iterable[str] = ()) -> list[Config]:
        """Up to ``n`` distinct valid configs, uniformly at random, none whose id is in ``exclude``
        (ids; an iterable other than a set may also hold configs).

        Returns fewer than ``n`` only when fewer remain (see :mod:`workbench.core.domain.space_sampling`).
        """
        n = int(n)
        if n <= 0:
            return []
        # a set is of ids (every caller's) and is passed on as it is: a space that adds to it copies
        # it first (in C), where a comprehension over it was most of a random search's time once
        # thousands were measured; other iterables may hold configs
        taken = (exclude if isinstance(exclude, (set, frozenset, Excluding))
                 else {e.id if isinstance(e, Config) else e for e in exclude})
        return self._sample(rng, n, taken)

    @abstractmethod
    def _sample(self, rng: np.random.Generator, n: int, taken: AbstractSet[str]) -> list[Config]:
        """:meth:`sample` once ``n`` is positive and the exclusions are a set of ids (the caller's,
        or an :class:`Excluding` view of them: read, never changed)."""

    def neighbours(self, config: Mapping[str, Value], adjacent_only: bool = False) -> list[Config]:
        """Valid configs that differ from ``config`` in exactly one slot.

        With ``adjacent_only``, an ordered (numeric) slot moves only to the next lower and higher
        value of its domain (recorded spaces: the nearest recorded ones); other slots take every
        other value. ``config`` itself need not be valid, but its values must be in the domains.
        """
        return self._neighbours(self.values_index(config), adjacent_only)

    @abstractmethod
    def _neighbours(self, origin: tuple[int, ...], adjacent_only: bool) -> list[Config]:
        """:meth:`neighbours` of the config at domain positions ``origin``."""

    # ------------------------------------------------------------------ derived spaces
    @abstractmethod
    def _derive(self, slots: Sequence[Slot], restrictions: Sequence[str], params: Mapping[str, Value]) -> "SearchSpace":
        """A space of the same kind over other slots, restrictions or parameters."""

    def with_domains(self, domains: Mapping[str, Sequence[Value]]) -> "SearchSpace":
        """The same space with some slot domains replaced (defaults outside the new domain are dropped).

        For a recorded space, recorded points outside the new domains are left out.
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
        """JSON-able description; recorded spaces add their points as value lists in slot order."""
        return {
            "slots": [s.to_dict() for s in self._slots],
            "restrictions": list(self._restrictions),
            "params": dict(self._params),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "SearchSpace":
        """The space a :meth:`to_dict` described: recorded when it lists points, else a product."""
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
            return ProductSpace(slots, restrictions, params)
        raw_points = data["points"]
        if not isinstance(raw_points, (list, tuple)):
            raise SpaceError("search space: 'points' must be a list")
        names = [s.name for s in slots]
        points = []
        for k, row in enumerate(raw_points):
            if not isinstance(row, (list, tuple)) or len(row) != len(names):
                raise SpaceError(f"search space: point {k} must be a list of {len(names)} values")
            points.append(dict(zip(names, row)))
        return RecordedSpace(slots, points, restrictions, params)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SearchSpace):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash((self._names, self._restrictions))


#: Configs drawn uniformly from the product before :meth:`ProductSpace.first_valid` walks it (about
#: 0.2 s): one in 10,000 valid configs is found so with a chance of 87 %.
FIRST_VALID_DRAWS = 20_000


@pipe_record
class ProductSpace(SearchSpace):
    """The configs of the cartesian product of the slot domains that satisfy the restrictions.

    Never materialised: enumeration backtracks over the slots and checks each restriction as soon
    as the last slot it reads is assigned; counting, exact draws and listing are
    :mod:`workbench.core.domain.space_count`'s, sampling :mod:`workbench.core.domain.space_sampling`'s.
    """

    def __init__(
        self,
        slots: Sequence[Slot],
        restrictions: Sequence[str] = (),
        params: Mapping[str, Value] | None = None,
    ) -> None:
        self._setup(slots, restrictions, params)
        self._counter = Counter(self._slots, self._linked, self._params)
        self._enumerated: list[Config] | None = None  # see enumerated()
        self._listing_sampler: RecordedSampler | None = None  # see listing_sampler()

    def _size_text(self) -> str:
        return f"cartesian {self.cartesian_size}"

    def is_valid(self, config: Mapping[str, Value]) -> bool:
        if not isinstance(config, Mapping):
            return False
        if len(config) != len(self._slots):
            return False
        for slot in self._slots:
            value = config.get(slot.name, _MISSING)
            if value is _MISSING or not slot.accepts(value):
                return False
        return self.satisfies(config)

    # ------------------------------------------------------------------ enumeration and counting
    def first_valid(self, time_limit_s: float, candidates: Iterable[Mapping[str, Value]] = ()) -> Config | None:
        """As the base class says. The walk below checks a restriction only once every slot it
        names has a value, so one restriction over every slot (a product of all of them over a
        bound, a chain ``a > b > c > ...``) is checked only at the walk's last level: in a space of
        10**7 configs or more none of which meets it, finding that out took a minute and more,
        with nothing said; it is given up after ``time_limit_s``. Before it, configs drawn
        uniformly from the product (:data:`FIRST_VALID_DRAWS`) find one of a sparse space's valid
        configs wherever they lie, which the ordered walk may reach only late."""
        deadline = time.monotonic() + time_limit_s
        known = self._known_valid(candidates)
        if known is not None:
            return known
        if self._false_constant is not None:
            return None
        rng = np.random.default_rng(0)
        for _ in range(FIRST_VALID_DRAWS if self.cartesian_size > FIRST_VALID_DRAWS else 0):
            drawn = self.config_at([int(rng.integers(len(s.values))) for s in self._slots])
            if self.satisfies(drawn):
                return drawn
        for indices in self._iter_indices(deadline=deadline):
            return self.config_at(indices)
        return None

    def _iter_indices(self, deadline: float | None = None) -> Iterator[tuple[int, ...]]:
        """Backtracking over slots, last slot fastest, checking each restriction at its last slot
        (:class:`SpaceSearchTooLong` once past ``deadline``, a ``time.monotonic()``, when given)."""
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
        steps = 0
        while d >= 0:
            steps += 1
            if deadline is not None and not steps & 0xFFF and time.monotonic() > deadline:
                raise SpaceSearchTooLong(f"{steps:,} steps of a walk over {self.cartesian_size:,} configs")
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
        return (self.config_at(idx) for idx in self._iter_indices())

    def count(self) -> int:
        """Exact number of valid configs (cached): independent slot groups are counted apart."""
        if self._false_constant is not None:
            return 0
        return self._counter.count()

    @property
    def largest_linked_group(self) -> int:
        """Configs of the largest group of slots its restrictions link, before the restrictions:
        what :meth:`count` scans at most in one piece (see :mod:`workbench.core.domain.space_count`)."""
        return 1 if self._false_constant is not None else self._counter.largest_group()

    @property
    def known_count(self) -> int | None:
        """:meth:`count` when it was already computed, else None (never computes)."""
        return 0 if self._false_constant is not None else self._counter.known_count

    def draw_exact(self, rng: np.random.Generator) -> Config:
        """One valid config drawn uniformly using the component counts (space must be non-empty)."""
        return self.config_at(self._counter.draw(rng))

    def enumerate_unordered(self) -> Iterator[Config]:
        """Every valid config, component by component, visiting only branches the counts say are live."""
        if self.count() == 0:
            return
        for indices in self._counter.assignments():
            yield self.config_at(indices)

    def enumerated(self) -> list[Config]:
        """:meth:`enumerate_unordered` as a list, made once and kept: for callers that list what is
        left of a space already mostly taken (so it is at most a few times what they hold)."""
        listed = self._enumerated
        if listed is None:
            listed = self._enumerated = list(self.enumerate_unordered())
        return listed

    def listing_sampler(self) -> RecordedSampler:
        """Draws from :meth:`enumerated` as from a recording (made once and kept): what is left of
        a space mostly taken, found by the ids taken since the last draw."""
        if self._listing_sampler is None:
            self._listing_sampler = RecordedSampler(self.enumerated())
        return self._listing_sampler

    def in_order(self) -> list[Config]:
        """Every valid config in iteration order (``list(space)``), found from the counts' live
        branches: iteration checks the restrictions at every point of the product it cannot rule
        out slot by slot (ten million checks for a space of 84 configs under a restriction over
        all its slots), while the counts skip what holds nothing. For spaces whose count is small."""
        if self.count() == 0:
            return []
        return [self.config_at(indices) for indices in sorted(tuple(i) for i in self._counter.assignments())]

    def _sample(self, rng: np.random.Generator, n: int, taken: AbstractSet[str]) -> list[Config]:
        if self._false_constant is not None:
            return []
        return sample_product(self, rng, n, taken)

    def _neighbours(self, origin: tuple[int, ...], adjacent_only: bool) -> list[Config]:
        out: list[Config] = []
        base = self.from_indices(origin)
        base_ok = self.satisfies(base)
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

    def _derive(self, slots: Sequence[Slot], restrictions: Sequence[str], params: Mapping[str, Value]) -> "ProductSpace":
        return ProductSpace(slots, restrictions, params)

    def __reduce__(self) -> tuple[Any, ...]:  # restrictions are closures: travel as the description
        return (ProductSpace, (self._slots, self._restrictions, dict(self._params)))


class RecordedSpace(SearchSpace):
    """Exactly the recorded points (a recording's configs) that satisfy the restrictions.

    The slots still describe the domains (strategies work on domain positions), but only recorded
    points are valid, counted, sampled and neighbours.
    """

    is_explicit = True

    def __init__(
        self,
        slots: Sequence[Slot],
        points: Iterable[Mapping[str, Value]],
        restrictions: Sequence[str] = (),
        params: Mapping[str, Value] | None = None,
    ) -> None:
        self._setup(slots, restrictions, params)
        unique: dict[str, Config] = {}
        for k, point in enumerate(points):
            if not isinstance(point, Mapping):
                raise SpaceError(f"point {k}: expected a mapping slot -> value, got {type(point).__name__}")
            try:
                config = self._normalised(point)
            except SpaceError as exc:
                raise SpaceError(f"point {k}: {exc}") from None
            unique.setdefault(config.id, config)
        self._keep(tuple(unique.values()))

    def _keep(self, recorded: tuple[Config, ...]) -> None:
        """Hold the recorded points (each already normalised) and those the restrictions keep."""
        self._all_points = recorded
        self._points = tuple(c for c in recorded if self.satisfies(c))
        self._point_ids = {c.id: i for i, c in enumerate(self._points)}
        self._neighbour_index: dict[tuple[int, ...], Config] | None = None  # index vector -> point
        self._sampler: RecordedSampler | None = None  # made at the first draw

    @property
    def points(self) -> tuple[Config, ...]:
        return self._points

    def _size_text(self) -> str:
        return f"explicit, {len(self._points)} points"

    def is_valid(self, config: Mapping[str, Value]) -> bool:
        if not isinstance(config, Mapping):
            return False
        cid = config.id if isinstance(config, Config) else Config(config).id
        return cid in self._point_ids

    def config(self, mapping: Mapping[str, Any]) -> Config:
        config = super().config(mapping)
        if config.id not in self._point_ids:
            raise SpaceError(f"config {_describe(config)} is not one of the {len(self._points)} recorded points")
        return config

    def __iter__(self) -> Iterator[Config]:
        return iter(self._points)

    def count(self) -> int:
        return len(self._points)

    def _sample(self, rng: np.random.Generator, n: int, taken: AbstractSet[str]) -> list[Config]:
        if self._sampler is None:
            self._sampler = RecordedSampler(self._points)
        return self._sampler.sample(rng, n, taken)

    def _point_index(self) -> dict[tuple[int, ...], Config]:
        """Each recorded point by its index vector (made at the first lookup)."""
        if self._neighbour_index is None:
            positions = [s._positions for s in self._slots]  # type: ignore[attr-defined]
            self._neighbour_index = {
                tuple(pos[point[name]] for pos, name in zip(positions, self._names)): point for point in self._points
            }
        return self._neighbour_index

    def valid_config_at(self, indices: Sequence[int]) -> Config | None:
        """A dictionary lookup: no config is built for a position that was not recorded."""
        return self._point_index().get(tuple(indices))

    def _neighbours(self, origin: tuple[int, ...], adjacent_only: bool) -> list[Config]:
        """Recorded points one slot away, found by looking up each changed index vector."""
        index = self._point_index()
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

    def _derive(self, slots: Sequence[Slot], restrictions: Sequence[str], params: Mapping[str, Value]) -> "RecordedSpace":
        names = {s.name: s for s in slots}
        kept = [c for c in self._all_points if all(names[k].accepts(v) for k, v in c.items())]
        return RecordedSpace(slots, kept, restrictions, params)

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        data["points"] = [[c[name] for name in self._names] for c in self._all_points]
        return data

    def __reduce__(self) -> tuple[Any, ...]:  # restrictions are closures: travel as the description
        rows = [tuple(c[name] for name in self._names) for c in self._all_points]
        return (_restore_recorded, (self._slots, self._restrictions, dict(self._params), rows))


def _restore_recorded(
    slots: Sequence[Slot], restrictions: Sequence[str], params: Mapping[str, Value], rows: Sequence[tuple[Value, ...]]
) -> RecordedSpace:
    """Unpickle a recorded space: its points were validated when it was built, so skip that."""
    space = object.__new__(RecordedSpace)
    space._setup(slots, restrictions, params)
    space._keep(tuple(space.config_at([slot.index(value) for slot, value in zip(space.slots, row)]) for row in rows))
    return space


def _describe(config: Mapping[str, Value]) -> str:
    """A short text of a config for error messages."""
    text = ", ".join(f"{k}={v!r}" for k, v in config.items())
    return text if len(text) <= 120 else text[:117] + "..."


def restriction_note(text: str, assignment: Mapping[str, Any], why: str) -> str:
    """A restriction that cannot be computed for some configs (:meth:`SearchSpace.uncomputable`), in words."""
    if not assignment:  # (one that reads no slot)
        return f"restriction {text!r} cannot be computed ({why}), so no config is valid"
    shown = ", ".join(f"{k}={v}" for k, v in assignment.items())
    return (f"restriction {text!r} cannot be computed for some configs, e.g. {shown} ({why}): they count as not "
            "valid; if they should be, say when in the restriction itself")
