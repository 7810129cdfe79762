"""The seal of an exported file: the SHA-256 of its own text, written into it.

Exporting again to the same name is the normal way to refresh a header or a script, so an
earlier export is replaced without ``--force``. But people edit generated files (a comment, a
hand-picked value), and those edits must not vanish with the next export. The seal tells the two
apart from the file alone, whoever wrote it and whenever (the window's own record of what it wrote
ends with the window): an export whose text still matches its seal is replaced as it is; one that
was changed, or carries no seal (an export of an earlier version), is kept as ``.bak`` first.

Text formats end with one comment line ``<comment>kernel-workbench content sha256 <hex>``, the
digest of every byte before that line. A JSON export holds the digest as its last key,
``content_sha256``, computed over the text with that value written as 64 zeros (so the file stays
one JSON document).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from typing import Any

from workbench.core.errors import WorkbenchError

#: The words of a text export's seal line, after its comment prefix.
SEAL_WORDS = "kernel-workbench content sha256"
#: The JSON export's key holding its seal.
SEAL_KEY = "content_sha256"
_BLANK = "0" * 64
_SEAL_LINE = re.compile(r"(?://|#) " + re.escape(SEAL_WORDS) + r" ([0-9a-f]{64})\n?")
#: Larger files are no export of ours (the largest, a dispatch of many sizes, is a few hundred kB;
#: a JSON file is parsed, so a large one would cost seconds and memory many times its size).
_READ_LIMIT = 16 << 20


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def seal_text(text: str, comment: str) -> str:
    """``text`` with its seal line appended (``comment``: the format's line-comment prefix, ``//`` or ``#``)."""
    if not text.endswith("\n"):
        text += "\n"
    return f"{text}{comment} {SEAL_WORDS} {_digest(text)}\n"


def seal_json(doc: dict[str, Any], **dump_options: Any) -> str:
    """``doc`` as JSON text (``json.dumps`` with ``dump_options``) with its seal as the last key."""
    text = json.dumps({**doc, SEAL_KEY: _BLANK}, **dump_options) + "\n"
    blank = _json_seal(_BLANK, dump_options)
    if text.count(blank) != 1:  # a key of the export's own data with the seal's name and blank value
        raise WorkbenchError(f"cannot seal the export: its data holds a key {SEAL_KEY!r} with the seal's blank value")
    return text.replace(blank, _json_seal(_digest(text), dump_options))


def _json_seal(value: str, dump_options: dict[str, Any]) -> str:
    separator = dump_options.get("separators", (", ", ": "))[1]
    return f'"{SEAL_KEY}"{separator}"{value}"'


def unchanged_export(path: str | os.PathLike[str]) -> bool:
    """Whether the file at ``path`` matches its own seal: written by an export and not edited since.
    False for anything else (no seal, an edit, a file that cannot be read)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(_READ_LIMIT + 1)
    except OSError:
        return False
    if len(data) > _READ_LIMIT:
        return False
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if text.lstrip().startswith("{"):
        return f'"{SEAL_KEY}"' in text and _unchanged_json(text)
    body, _, last = text.rstrip("\n").rpartition("\n")
    match = _SEAL_LINE.fullmatch(last)
    return match is not None and _digest(body + "\n") == match.group(1) and text == f"{body}\n{last}\n"


def _unchanged_json(text: str) -> bool:
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return False
    seal = doc.get(SEAL_KEY) if isinstance(doc, dict) else None
    if not isinstance(seal, str) or not re.fullmatch(r"[0-9a-f]{64}", seal):
        return False
    for separator in (": ", ":"):
        written = f'"{SEAL_KEY}"{separator}"{seal}"'
        if text.count(written) == 1:
            return _digest(text.replace(written, f'"{SEAL_KEY}"{separator}"{_BLANK}"')) == seal
    return False
