"""Settings that would run code are set aside before the window reads any of them.

PySide6 stores a Python object it cannot map to a Qt type as a ``PySide::PyObjectWrapper``
variant, a pickle, and ``QSettings.value()`` unpickles it: an edited or planted settings file
could run code as the window starts, before any check of a value's type. The window never writes
such a value (its settings are strings, lists of strings, numbers and byte arrays), so a file
holding one is not the window's: it is moved aside (``NAME.refused``, nothing lost) before Qt
opens it, and the settings start empty. The file is read as Qt's INI reader reads it (escapes such as ``\\x50``
undone), so spelling the type's name with escapes does not hide it.
"""

from __future__ import annotations

import os
import string
import tempfile
from pathlib import Path

from PySide6.QtCore import QSettings

#: The type name a pickled Python object is stored under.
PICKLED_TYPE = "PyObjectWrapper"
#: A settings file larger than this is not one the window wrote (its own are a few KB): refused.
MAX_BYTES = 16 * 1024 * 1024

_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
                   '"': '"', "?": "?", "'": "'", "\\": "\\"}


def qt_unescaped(text: str) -> str:
    """``text`` with the escapes of Qt's INI format undone (``\\n``, ``\\xHH...``, octal ``\\ooo``)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char != "\\" or i + 1 >= n:
            out.append(char)
            i += 1
            continue
        code = text[i + 1]
        if code in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[code])
            i += 2
        elif code in "xX":
            j = i + 2
            while j < n and text[j] in string.hexdigits:
                j += 1
            if j > i + 2:
                out.append(chr(int(text[i + 2 : j], 16) & 0xFFFF))
            i = j
        elif code in string.octdigits:
            j = i + 1
            while j < n and text[j] in string.octdigits:
                j += 1
            out.append(chr(int(text[i + 1 : j], 8) & 0xFFFF))
            i = j
        else:
            out.append(code)
            i += 2
    return "".join(out)


def python_object_reason(path: Path) -> str | None:
    """Why the settings file at ``path`` must not be read (it holds a pickled Python object, or is
    far larger than any the window writes); None when it may be (or is not there)."""
    try:
        if not path.is_file():
            return None
        if path.stat().st_size > MAX_BYTES:
            return f"is over {MAX_BYTES} bytes, more than any the window writes"
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return None  # unreadable: QSettings finds nothing in it either
    return "holds a Python object, which reading it would run" if PICKLED_TYPE in qt_unescaped(text) else None


def guarded_settings(path: Path) -> tuple[QSettings, str | None]:
    """The INI settings at ``path``, after moving the file aside (``NAME.refused``: nothing lost)
    when it must not be read, with the line saying so (None when all is well).

    This must come before any QSettings object opens the file: Qt reads the file when one is
    made, and the first access of any kind (``allKeys``, ``clear``) unpickles what it holds.
    """
    reason = python_object_reason(path)
    note = None
    if reason is not None:
        kept = path.with_name(path.name + ".refused")
        try:
            os.replace(path, kept)
            note = f"settings file {path} {reason}: set aside as {kept}; the window starts with default settings"
        except OSError as exc:  # settings in a scratch file of their own, never the refused one
            scratch = Path(tempfile.mkdtemp(prefix="kernel-workbench-settings-")) / "settings.ini"
            return (QSettings(str(scratch), QSettings.Format.IniFormat),
                    f"settings file {path} {reason}, and it could not be set aside ({exc.strerror or exc}): "
                    "the window starts with default settings and does not keep them")
    return QSettings(str(path), QSettings.Format.IniFormat), note
