"""``name=value`` text as the person types it (``--set``, ``--option``, ``--weight``, the window's
problem field), parsed one way everywhere so a value means the same from the command line and the
window: ``true``/``false`` are booleans, whole numbers are ints, other finite numbers are floats,
anything else is text. Nothing is evaluated."""

from __future__ import annotations

import math
import re
from typing import Any

from workbench.core.errors import WorkbenchError

#: Longest ``name=value`` accepted; longer text is a mistake, and bounding it bounds the parse cost.
MAX_ASSIGNMENT_CHARS = 1000
#: Longest number literal converted (Python refuses ints over 4300 digits with a traceback).
MAX_NUMBER_CHARS = 40


def parse_value(raw: str, where: str = "value") -> Any:
    """Text to bool, int, float or str; ``nan`` and infinities are refused (no run can use them)."""
    text = raw.strip()
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if len(text) <= MAX_NUMBER_CHARS:
        try:
            return int(text)
        except ValueError:
            pass
        try:
            number = float(text)
        except ValueError:
            return text
        if not math.isfinite(number):
            raise WorkbenchError(f"{where}: {text!r} is not a finite number")
        if flushed_to_zero(text, number):
            raise WorkbenchError(f"{where}: {text!r} is too small to tell from 0 (it would run at 0)")
        return number
    if text.lstrip("+-").replace(".", "", 1).replace("e", "", 1).isdigit():
        raise WorkbenchError(f"{where}: a number of {len(text)} characters is too long")
    return text


def flushed_to_zero(text: str, number: float) -> bool:
    """Whether ``text`` names a number other than 0 that reads as 0 (``1e-400``): below the
    smallest float, it would silently become 0."""
    mantissa = text.lower().partition("e")[0]
    return number == 0.0 and any(digit in mantissa for digit in "123456789")


def parse_assignment(text: str, flag: str = "--set", *, identifier: bool = True) -> tuple[str, Any]:
    """``name=value`` -> (name, value); the name must be an identifier unless ``identifier`` is
    False (metric names such as ``GFLOP/s`` come from recordings)."""
    if len(text) > MAX_ASSIGNMENT_CHARS:
        raise WorkbenchError(f"{flag}: {len(text)} characters is too long (at most {MAX_ASSIGNMENT_CHARS})")
    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep or not name or not raw.strip():
        raise WorkbenchError(f"{flag} {text!r}: expected name=value")
    if identifier and not name.isidentifier():
        raise WorkbenchError(f"{flag} {text!r}: {name!r} is not a name (letters, digits and _)")
    return name, parse_value(raw, f"{flag} {name}")


#: Where one item holds several: a comma or semicolon followed by the next ``name=``.
_NEXT_NAME = re.compile(r"\s*[,;]\s*(?=[A-Za-z_][A-Za-z0-9_]*\s*=)")


def parse_assignments(items: list[str] | tuple[str, ...], flag: str = "--set") -> dict[str, Any]:
    """Several ``name=value`` items; a name given twice is an error (which one was meant?). One
    item may hold several as the outputs write a size (``n=4096, flag=true``: ``show``'s lines, a
    replay's list of sizes), so a size copied from them types back; a comma not followed by a
    name stays in the value."""
    out: dict[str, Any] = {}
    for item in (part for given in items for part in _NEXT_NAME.split(given)):
        name, value = parse_assignment(item, flag)
        if name in out:
            raise WorkbenchError(f"{flag} {name}: given twice")
        out[name] = value
    return out


def parse_assignment_list(text: str, flag: str = "problem") -> dict[str, Any]:
    """``n=1048576, m=64`` (comma or semicolon separated) as typed in one text field."""
    parts = [p.strip() for p in text.replace(";", ",").split(",")]
    return parse_assignments([p for p in parts if p], flag)
