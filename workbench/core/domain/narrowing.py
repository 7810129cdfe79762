"""A narrowed slot domain kept as a restriction: a session keeps its measurements and its narrowing.

Why: a session's trials must lie within its slots' domains (a file whose trials do not is refused
as it loads), so a continued session whose domains were narrowed (the window's *Search space*
tab) stores each domain widened by the values its trials already have. Stored so, the narrowing
itself was lost: the next run (``tune --resume``) searched the whole domain again. It is kept as a
restriction of one form, ``NAME in (V1, V2,)``, which every search obeys like any other, and
which the *Search space* tab shows again as the values it leaves unticked.
"""

from __future__ import annotations

from typing import Any, Sequence

from workbench.core.domain.expr import compile_restriction
from workbench.core.errors import WorkbenchError


def narrowing(name: str, values: Sequence[Any]) -> str:
    """The restriction that keeps slot ``name`` to ``values`` (in the order given)."""
    return f"{name} in ({', '.join(repr(value) for value in values)},)"


def split_narrowings(space: Any) -> tuple[dict[str, list[Any]], list[str]]:
    """Per slot that a restriction of :func:`narrowing`'s form keeps to some of its values, those
    values (in domain order); and the space's other restrictions. A restriction counts as a
    narrowing only when it is exactly the text :func:`narrowing` writes for the values it keeps
    (the slot's own evaluator decides which it keeps), so a person's own ``x in (...)`` whose
    text differs stays a restriction of theirs."""
    kept: dict[str, list[Any]] = {}
    others: list[str] = []
    for text in space.restrictions:
        name = text.partition(" in (")[0]
        if name in space.names and name not in kept and text.endswith(",)"):
            try:
                rule = compile_restriction(text, [name])
                values = [value for value in space.slot(name).values if rule({name: value})]
            except WorkbenchError:
                values = []
            if values and narrowing(name, values) == text:
                kept[name] = values
                continue
        others.append(text)
    return kept, others
