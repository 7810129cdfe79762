"""Slots, configs and the search space.

A ``Slot`` is one tunable decision with an ordered domain; a ``Config`` is an immutable
assignment of a value to every slot, with a stable id that survives save/load; a
``SearchSpace`` is the set of configs that satisfy the restrictions, enumerated lazily
(a 10^7-point cartesian product is never materialised to draw a sample).
A space can also be an explicit list of recorded points (replay of a recording).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Sequence, Union

import numpy as np

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

    def __reduce__(self):  # pickling across worker processes
        return (Config, (self._items,))


@dataclass(frozen=True)
class Slot:
    """One tunable decision.

    ``values`` is the ordered domain (ints, floats, bools or short identifiers, one type per slot);
    ``group`` is the concern it belongs to (one of :data:`GROUPS`); ``doc`` is a one-line
    explanation shown as a tooltip. ``default`` (optional) is the template author's choice.
    Numeric slots are *ordered*: neighbours include the adjacent values.
    """

    name: str
    values: tuple[Value, ...]
    group: str = "launch"
    doc: str = ""
    default: Value | None = None

    # Implemented in the space module (validation of name, group, value types, duplicates).
    def __post_init__(self) -> None:  # pragma: no cover - replaced by implementation
        object.__setattr__(self, "values", tuple(self.values))

    @property
    def ordered(self) -> bool:
        """True when the domain is numeric (adjacent values are meaningful neighbours)."""
        return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in self.values)

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> "Slot":
        raise NotImplementedError


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
    """

    def __init__(
        self,
        slots: Sequence[Slot],
        restrictions: Sequence[str] = (),
        params: Mapping[str, Value] | None = None,
    ) -> None:
        raise NotImplementedError
