"""The window's settings in a JSON file of the project's own, read once and written whole.

Why not ``QSettings`` on the person's file: PySide6 stores a Python object there as a pickle
(a ``PySide::PyObjectWrapper`` variant, also reachable as ``PyObject`` or by type number) and
unpickles it as soon as the file is first read, before any check of a value's type; Qt's INI
reader also accepts escapes, quotes, continued lines and list items in which such a variant can
hide, and it reads the file again whenever it changes on disk. A settings file that could run code
when the window starts is one no check of its text makes safe. JSON parsing runs nothing, so the
person's settings are this: the values the window keeps (text, numbers, lists of text, Qt's
geometry bytes as base64), read once at start (a regular file of bounded size: never a FIFO or a
device), and written atomically when they change.

The object offers the part of ``QSettings``'s interface the window uses (``value``, ``setValue``,
``remove``, ``sync``, ``fileName``, ``allKeys``, ``clear``); the window and its views type it as
:class:`SettingsStore`.

A file that is not such a settings file (damaged, hand-edited into something else) is left
where it is under ``NAME.refused`` and the window starts on defaults, saying so in one line.
"""

from __future__ import annotations

import base64
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any, Protocol

from PySide6.QtCore import QByteArray

from workbench.core.errors import WorkbenchError
from workbench.core.fs import read_capped

FORMAT = "kernel-workbench-settings"
VERSION = 1
#: Far more than the window writes (a few kilobytes): a larger file is not its own.
MAX_BYTES = 4 * 1024 * 1024
_BYTES_KEY = "base64"
_ABSENT = object()


class SettingsStore(Protocol):
    """What the window needs of a settings object (``QSettings`` and :class:`JsonSettings` both)."""

    def value(self, key: str, defaultValue: Any = None) -> Any: ...

    def setValue(self, key: str, value: Any) -> None: ...

    def remove(self, key: str) -> None: ...

    def sync(self) -> None: ...

    def fileName(self) -> str: ...


class JsonSettings:
    """Settings kept in ``path`` (see the module docstring). ``note`` says why a file there was set
    aside ("" when it was read, or when there was none)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.note = ""
        self._values: dict[str, Any] = {}
        self._writable = True
        self._load()

    # --- QSettings' interface, the part the window uses ---------------------------------------
    def value(self, key: str, defaultValue: Any = None) -> Any:
        stored = self._values.get(key)
        if stored is None:
            return defaultValue
        return _decoded(stored)

    def setValue(self, key: str, value: Any) -> None:
        encoded = _encoded(value)
        if self._values.get(key, _ABSENT) != encoded:  # the window saves every setting at close: unchanged, no write
            self._values[key] = encoded
            self.sync()

    def remove(self, key: str) -> None:
        if self._values.pop(key, None) is not None:
            self.sync()

    def clear(self) -> None:
        self._values.clear()
        self.sync()

    def allKeys(self) -> list[str]:
        return sorted(self._values)

    def fileName(self) -> str:
        return str(self.path)

    def sync(self) -> None:
        """Write every value atomically (a temporary file in the same folder, then a rename); a
        folder that cannot be written only costs the settings, never the window."""
        if not self._writable:
            return
        document = {"format": FORMAT, "version": VERSION, "values": self._values}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        except OSError:
            return
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(document, handle, indent=1, sort_keys=True, allow_nan=False)
                handle.flush()
                os.fsync(handle.fileno())  # a power cut leaves the old file or the new one, never an empty one
            os.replace(tmp, self.path)
        except (OSError, ValueError):
            Path(tmp).unlink(missing_ok=True)

    # --- reading ------------------------------------------------------------------------------
    def _load(self) -> None:
        if not os.path.lexists(self.path):
            return
        try:
            document = json.loads(read_capped(self.path, "settings file", MAX_BYTES))
            if not isinstance(document, dict) or document.get("format") != FORMAT:
                raise ValueError("not a settings file of this workbench")
            values = document.get("values")
            if not isinstance(values, dict):
                raise ValueError("its values are not a mapping")
            self._values = {str(k): v for k, v in values.items() if _storable(v)}
        except (WorkbenchError, ValueError, RecursionError) as exc:
            self._set_aside(str(exc))

    def _set_aside(self, reason: str) -> None:
        """Keep the unreadable file (never overwritten: the first free ``.refused`` name, taken by a
        hard link, which fails rather than replace a file that appeared meanwhile) and start on
        defaults."""
        kept: Path | None = None
        problem = "every .refused name is taken"
        for n in range(1, 100):
            name = self.path.with_name(self.path.name + (".refused" if n == 1 else f".{n}.refused"))
            try:
                os.link(self.path, name, follow_symlinks=False)
            except FileExistsError:
                continue
            except OSError as exc:  # no hard links here (or none allowed): the file stays where it is
                problem = exc.strerror or str(exc)
                break
            kept = name
            break
        try:
            if kept is None:
                raise OSError(problem)
            os.unlink(self.path)
            where = f"set aside as {kept}"
        except OSError as exc:  # then the window does not write over it either
            self._writable = False
            where = f"left in place ({exc.strerror or exc}); this window's settings are not kept"
        self.note = f"settings file {self.path} not read ({reason}): {where}; the window starts with default settings"


def _encoded(value: Any) -> Any:
    """A value as the JSON file holds it: Qt's bytes (window geometry, splitter states) as base64."""
    if isinstance(value, QByteArray):
        value = value.data()
    if isinstance(value, (bytes, bytearray)):
        return {_BYTES_KEY: base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, (list, tuple)):
        return [str(item) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return value if math.isfinite(value) else None
    return str(value)


def _decoded(stored: Any) -> Any:
    if isinstance(stored, dict):
        try:
            return QByteArray(base64.b64decode(stored[_BYTES_KEY], validate=True))
        except (KeyError, TypeError, ValueError):
            return None
    return stored


#: The longest list the window keeps (its column lists hold a few hundred names at most).
MAX_LIST_ITEMS = 1000


def _storable(value: Any) -> bool:
    """Values of the shapes :func:`_encoded` writes; anything else in a file is dropped on reading
    (the window checks each value's type again where it uses it): finite numbers a float holds
    exactly (an integer of 400 digits made the zoom's float() raise at every start), lists of at
    most :data:`MAX_LIST_ITEMS` strings."""
    if value is None or isinstance(value, (bool, str)):
        return True
    if isinstance(value, int):
        return abs(value) <= 2**53
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return len(value) <= MAX_LIST_ITEMS and all(isinstance(item, str) for item in value)
    return isinstance(value, dict) and set(value) == {_BYTES_KEY} and isinstance(value[_BYTES_KEY], str)
