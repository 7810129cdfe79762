"""Guards against known defects of the Qt binding, applied once when the GUI is imported.

PySide6 6.12.0 on Python < 3.12 returns ``None`` / ``True`` / ``False`` from C++ methods without
taking a reference (it assumes the immortal objects of Python 3.12+). Every ``setText``,
``setEnabled``... then drops one reference, and after a few thousand calls the interpreter aborts
with "none_dealloc". pyproject excludes that release; when it is installed anyway, the singletons
are given a reference count no session can exhaust, which is what 3.12's immortality does.
"""

from __future__ import annotations

import ctypes
import sys

import PySide6

_AFFECTED = {"6.12.0"}
_RESERVE = 1 << 40


def guard_refcount_bug() -> bool:
    """Apply the mitigation when this interpreter and binding need it; True when applied."""
    if sys.version_info >= (3, 12) or PySide6.__version__ not in _AFFECTED:
        return False
    if getattr(guard_refcount_bug, "applied", False):
        return True
    for singleton in (None, True, False):
        ctypes.c_ssize_t.from_address(id(singleton)).value += _RESERVE
    guard_refcount_bug.applied = True  # type: ignore[attr-defined]
    return True


guard_refcount_bug()
