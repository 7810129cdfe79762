"""JSON read and written within bounds: the one reader and writer every file of the workbench goes through.

Files a person opens are untrusted (a session, a Kernel Tuner cache, a template spec): an integer
literal of thousands of digits, one beyond 64 bits, or nesting a thousand levels deep must be one
clear refusal, the same on every Python version and whichever parser reads it (orjson when
installed, several times faster on large sessions, else the json module). Written files are strict
JSON: NaN and infinities become null.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Callable

import numpy as np

try:  # optional speed-up: parses and writes large sessions several times faster than json
    import orjson
except ImportError:  # pragma: no cover - the json module does the same work, slower
    orjson = None  # type: ignore[assignment]

from workbench.core.domain.measurement import Status
from workbench.core.domain.space import int_in_range

#: Integers in a file may have at most this many digits (more is refused before it is built).
MAX_INT_DIGITS = 100


def short_repr(value: Any) -> str:
    """``repr`` of a value from a file, shortened so that an error stays one readable line."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def json_default(value: Any) -> Any:
    """Encode what ``json`` cannot: NumPy scalars and arrays, tuples, sets, enums, paths."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    if isinstance(value, Status):
        return value.value
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


def finite_or_none(value: Any) -> Any:
    """Replace NaN / infinities (not valid JSON) by null, recursively."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite_or_none(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_none(v) for v in value]
    if isinstance(value, np.generic):
        return finite_or_none(value.item())
    return value


_ORJSON_OPTIONS = (orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS) if orjson is not None else 0


def dumps_strict(obj: Any) -> str:
    """Compact strict JSON; NaN and infinities become null (read back as NaN for metrics)."""
    if orjson is not None:
        try:
            return orjson.dumps(obj, default=json_default, option=_ORJSON_OPTIONS).decode()
        except (TypeError, orjson.JSONEncodeError):
            pass  # e.g. an int beyond 64 bits: the json module copes
    try:
        return json.dumps(obj, separators=(",", ":"), allow_nan=False, default=json_default)
    except ValueError:
        return json.dumps(finite_or_none(obj), separators=(",", ":"), allow_nan=False, default=json_default)


class IntTooLong(ValueError):
    """An integer literal longer than :data:`MAX_INT_DIGITS` digits or outside the 64-bit range
    :data:`workbench.core.domain.space.INT_RANGE` (raised while parsing)."""


#: Integer literals of fewer digits always lie in the 64-bit range (-2**63 has 19, 2**64-1 has 20).
_SAFE_INT_DIGITS = 18
#: ``str.translate`` table: ASCII digits -> "0", "." kept, every other ASCII character -> " ".
_DIGIT_MAP = str.maketrans({chr(c): "0" if chr(c).isdigit() else "." if c == 0x2E else " " for c in range(128)})
_BYTE_DIGIT_MAP = bytes(0x30 if 0x30 <= c <= 0x39 else 0x2E if c == 0x2E else 0x20 for c in range(256))
_LONG_RUN = "0" * (_SAFE_INT_DIGITS + 1)


def _may_hold_long_int(text: str) -> bool:
    """Whether ``text`` has a run of more than 18 digits that is not a fraction's digits.

    orjson reads an integer beyond 64 bits as a float, silently; such a literal has at least 19
    digits, so a text without such a run can be left to orjson. Digits after a "." (a float's
    fraction) do not count; digits inside strings or exponents do (a false alarm costs only a
    slower parse). A translate and a substring search: about a tenth of orjson's own time.
    """
    if text.isascii():
        runs = text.translate(_DIGIT_MAP)
        return runs.startswith(_LONG_RUN) or (" " + _LONG_RUN) in runs
    marks = text.encode("utf-8", "surrogatepass").translate(_BYTE_DIGIT_MAP)
    return marks.startswith(_LONG_RUN.encode()) or (" " + _LONG_RUN).encode() in marks


def _bounded_int(text: str) -> int:
    if len(text) <= _SAFE_INT_DIGITS:
        return int(text)
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise IntTooLong(f"an integer with {digits:,} digits (at most {MAX_INT_DIGITS} are read)")
    value = int(text)
    if not int_in_range(value):
        raise IntTooLong(f"the integer {short_repr(value)} does not fit 64 bits (-2**63 .. 2**64-1)")
    return value


def loads_checked(text: str) -> Any:
    """Parse JSON (orjson when installed; the json module for NaN literals, error positions and
    texts that may hold long integers).

    Integers must fit 64 bits (slot values and problem parameters are limited to those, see
    :data:`workbench.core.domain.space.INT_RANGE`), and both parsers read those exactly. orjson
    would read a longer one as a float, turning a parameter into floats without a word, so a text
    that may hold one goes to the json module, which refuses it (and refuses literals longer than
    :data:`MAX_INT_DIGITS` digits before converting them: Python itself would refuse those beyond
    4,300 digits with a traceback, and converting long ones is quadratic).
    """
    if orjson is not None and not _may_hold_long_int(text):
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
        else:  # orjson reads twice as deep as the json module may: one limit, whichever reads it
            return _within_depth(value)
    return _within_depth(json.loads(text, parse_int=_bounded_int))


def loads_bounded(text: str, object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None) -> Any:
    """:func:`json.loads` with integers limited to :data:`MAX_INT_DIGITS` digits (for other file readers).
    With ``object_pairs_hook`` (a reader that sees every object's keys, to refuse one given twice)
    the json module reads it, in one pass; orjson has no such hook."""
    if object_pairs_hook is not None:
        return _within_depth(json.loads(text, parse_int=_bounded_int, object_pairs_hook=object_pairs_hook))
    return loads_checked(text)


#: The deepest nesting of arrays and objects the json module's readings keep. How deep it can read
#: at all is the interpreter's (about 1,000 levels on Python 3.11, 1,500 on 3.12, 10,000 on 3.13,
#: as a RecursionError, fewer when the reader is itself called deep in a stack), so a file one
#: version read, and saved again, another refused; under this limit every version reads the same
#: files, from any caller. orjson, which reads most sessions, would read 1,024 levels: its
#: readings are held to this limit too, or a file of 600 levels opened or not by whether some
#: unrelated text in it (a long run of digits) sent it to the json module.
MAX_JSON_DEPTH = 512


def _within_depth(value: Any) -> Any:
    """``value`` (parsed JSON) when it nests at most :data:`MAX_JSON_DEPTH` levels, else the
    RecursionError every reader reports as "nested too deeply". Walked a level at a time, without
    recursion and only into the arrays and objects: every session read pays for it (46 ms of a
    0.4 s read of 18,000 trials)."""
    level = [value] if type(value) is dict or type(value) is list else []
    depth = 1
    while level:
        if depth > MAX_JSON_DEPTH:
            raise RecursionError("JSON nested too deeply")
        below: list[Any] = []
        for item in level:
            children = item.values() if type(item) is dict else item
            below.extend([child for child in children if type(child) is dict or type(child) is list])
        level = below
        depth += 1
    return value
