"""A narrowed slot domain kept as restrictions: a session keeps its measurements and its narrowing.

Why: a session's trials must lie within its slots' domains (a file whose trials do not is refused
as it loads), so a continued session whose domains were narrowed (the window's *Search space*
tab) stores each domain widened by the values its trials already have. Stored so, the narrowing
itself was lost: the next run (``tune --resume``) searched the whole domain again. It is kept as
restrictions of two forms, ``NAME in (V1, V2,)`` for the values kept or, when shorter, ``NAME not
in (V3, V4,)`` for those left out (in several restrictions when one would pass the length a
restriction may have), which every search obeys like any other and which the *Search space* tab
shows again as the values it leaves unticked.
"""

from __future__ import annotations

from typing import Any, Sequence

from workbench.core.domain.expr import MAX_TEXT, compile_restriction
from workbench.core.errors import WorkbenchError


def _listed(name: str, operator: str, values: Sequence[Any]) -> str:
    return f"{name} {operator} ({', '.join(repr(value) for value in values)},)"


def narrowings(name: str, domain: Sequence[Any], kept: Sequence[Any]) -> list[str]:
    """The restrictions that keep slot ``name`` (of values ``domain``) to ``kept``: the shorter of
    ``NAME in (...)`` and ``NAME not in (...)``, the latter split so that each restriction stays
    within :data:`MAX_TEXT` characters (a slot of hundreds of values narrowed to half of them)."""
    keep = set(kept)
    left_out = [value for value in domain if value not in keep]
    inside = _listed(name, "in", [value for value in domain if value in keep])
    outside = _listed(name, "not in", left_out)
    if len(inside) <= min(MAX_TEXT, len(outside)):
        return [inside]
    chunks: list[list[Any]] = [[]]
    for value in left_out:
        if chunks[-1] and len(_listed(name, "not in", [*chunks[-1], value])) > MAX_TEXT:
            chunks.append([])
        chunks[-1].append(value)
    return [_listed(name, "not in", chunk) for chunk in chunks]


def split_narrowings(space: Any) -> tuple[dict[str, list[Any]], list[str]]:
    """Per slot that restrictions of :func:`narrowings`' forms keep to some of its values, those
    values (in domain order); and the space's other restrictions. A restriction counts as such
    only when it is exactly the text those forms write for the values it keeps or leaves out (the
    slot's own evaluator decides which), so a person's own ``x in (1, 2)`` stays theirs."""
    inside: dict[str, list[Any]] = {}
    outside: dict[str, set[Any]] = {}
    others: list[str] = []
    for text in space.restrictions:
        found = _narrowing_of(space, text)
        if found is None or (found[0] in inside) or (found[1] == "in" and found[0] in outside):
            others.append(text)
        elif found[1] == "in":
            inside[found[0]] = found[2]
        else:
            outside.setdefault(found[0], set()).update(found[2])
    kept = dict(inside)
    for name, left_out in outside.items():
        kept[name] = [value for value in space.slot(name).values if value not in left_out]
    return kept, others


def _narrowing_of(space: Any, text: str) -> tuple[str, str, list[Any]] | None:
    """(slot, "in" or "not in", the values listed) when ``text`` is a narrowing's, else None."""
    for operator in ("not in", "in"):
        name = text.partition(f" {operator} (")[0]
        if name == text or name not in space.names or not text.endswith(",)"):
            continue
        try:
            rule = compile_restriction(text, [name])
            values = [value for value in space.slot(name).values if rule({name: value}) == (operator == "in")]
        except WorkbenchError:
            return None
        if values and _listed(name, operator, values) == text:
            return name, operator, values
    return None
