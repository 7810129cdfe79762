"""How a number is written for a person, in the window, the command line's lines and the comments
of an export alike (one rule, so that a figure reads the same wherever it is quoted)."""

from __future__ import annotations

import math
from typing import Any


def fmt(value: Any, digits: int = 4, column: bool = False) -> str:
    """A number for a person: 4 significant digits, '-' for missing, ints as ints.

    ``column``: the number stands in a column of fractions, so it keeps its trailing zeros
    (``0.05270`` under ``0.05265``, not ``0.0527``; ``1.000`` beside ``0.1250``, not ``1``):
    digits that line up read as one precision. A column of whole numbers (registers, bytes) is
    not one: its numbers are written as integers.
    """
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(number):
        return "-"
    if number == int(number) and abs(number) < 1e9 and not column:
        return str(int(number))
    if 10**digits <= abs(number) < 1e9:  # 46690, not 4.669e+04: a rate a person reads aloud
        return f"{number:.0f}"
    if column:
        return f"{number:#.{digits}g}".rstrip(".")
    return f"{number:.{digits}g}"


def duration(seconds: float | None) -> str:
    """A time span as a person reads it at any scale: ``42s``, ``10m25s``, ``4h09m`` (``?`` when
    not known). An ETA of a long run read ``ETA 14990s``."""
    if seconds is None or not math.isfinite(seconds):
        return "?"
    whole = max(0, int(round(seconds)))
    if whole >= 3600:
        return f"{whole // 3600}h{whole % 3600 // 60:02d}m"
    if whole >= 60:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole}s"
