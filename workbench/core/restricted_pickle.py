"""Unpickling what another process sent, where code the workbench does not trust also runs.

A worker runs candidates, and a benchmark module's declarations are read by a process that
imports it: either may write into the pipe its process answers on. Plain unpickling of such bytes
calls any function they name, in the tuning process. These bytes may name only the workbench's own
classes, a few plain builtin types and what the caller adds (NumPy's scalar and array records for
a worker's measurement); anything else is refused by name, so what a candidate or module wrote is
that candidate's or module's failure and never runs.
"""

from __future__ import annotations

import io
import pickle
from typing import Any

#: Builtin types a record's pickle may name (its values' types and containers); nothing callable
#: beyond a type's constructor.
PLAIN_BUILTINS = frozenset({"int", "float", "bool", "str", "bytes", "complex", "tuple", "list", "dict", "set",
                            "frozenset"})
#: NumPy's scalars and arrays, as a measurement's figures may carry them.
NUMPY_NAMES = frozenset({("numpy", "dtype"), ("numpy", "ndarray"), ("numpy.core.multiarray", "scalar"),
                         ("numpy._core.multiarray", "scalar"), ("numpy.core.multiarray", "_reconstruct"),
                         ("numpy._core.multiarray", "_reconstruct")})


class RefusedName(pickle.UnpicklingError):
    """The bytes name something a record never holds: ``names MODULE.NAME``."""


class _Unpickler(pickle.Unpickler):
    def __init__(self, data: bytes, extra: frozenset[tuple[str, str]]) -> None:
        super().__init__(io.BytesIO(data))
        self.extra = extra

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in self.extra or (module == "builtins" and name in PLAIN_BUILTINS):
            return super().find_class(module, name)
        if module.startswith("workbench."):
            found = super().find_class(module, name)
            if isinstance(found, type):
                return found
        raise RefusedName(f"names {module}.{name}")


def restricted_loads(data: bytes, extra: frozenset[tuple[str, str]] = frozenset()) -> Any:
    """The object ``data`` pickles, naming only what the module docstring allows plus ``extra``
    (``(module, name)`` pairs). Raises :class:`RefusedName` for anything else, and whatever
    unpickling malformed bytes raises (EOFError, ValueError, ...)."""
    return _Unpickler(data, extra).load()
