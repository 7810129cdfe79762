"""Unpickling what another process sent, where code the workbench does not trust also runs.

A worker runs candidates, and a benchmark module's declarations are read by a process that
imports it: either may write into the pipe its process answers on. Plain unpickling of such bytes
calls any function they name, in the tuning process. These bytes may name only the workbench's own
record classes (dataclasses, enums and the value classes marked with :func:`pipe_record`, named
by the module that defines them), a few plain builtin
types and what the caller adds (NumPy's scalar and array records for a worker's measurement);
anything else is refused by name, so what a candidate or module wrote is that candidate's or
module's failure and never runs.

A name is looked up as one attribute of its module, never as a dotted path: pickle's own lookup
follows ``a.b.c`` from protocol 4 on, which from any workbench module reaches whatever it imported
(``np.f2py.subprocess.Popen``). And a class counts only where it is defined and only as a record:
an imported class, or a workbench class whose constructor does something (opens files, starts
processes), could be called by the bytes with arguments of their choosing.
"""

from __future__ import annotations

import dataclasses
import enum
import io
import pickle
import types
from typing import Any, Callable, ClassVar, TypeVar, cast

_Class = TypeVar("_Class", bound=type)

#: Classes :func:`pipe_record` marked.
_VALUE_CLASSES: set[type] = set()

#: Builtin types a record's pickle may name (its values' types and containers); nothing callable
#: beyond a type's constructor.
PLAIN_BUILTINS = frozenset({"int", "float", "bool", "str", "bytes", "complex", "tuple", "list", "dict", "set",
                            "frozenset"})
#: NumPy's scalars and arrays, as a measurement's figures may carry them.
NUMPY_NAMES = frozenset({("numpy", "dtype"), ("numpy", "ndarray"), ("numpy.core.multiarray", "scalar"),
                         ("numpy._core.multiarray", "scalar"), ("numpy.core.multiarray", "_reconstruct"),
                         ("numpy._core.multiarray", "_reconstruct")})


def pipe_record(cls: _Class) -> _Class:
    """Marks a workbench class that is not a dataclass as one the bytes may name: its pickle calls
    its constructor with plain data, which only builds the value (a search space from its slots
    and restriction texts, which are parsed, never run)."""
    _VALUE_CLASSES.add(cls)
    return cls


class RefusedName(pickle.UnpicklingError):
    """The bytes name something a record never holds (``names MODULE.NAME``), or would change
    a class or function of the process (``sets the state of NAME``)."""


#: Python's own BUILD step, which :meth:`_Unpickler.load_build` runs once it has checked the target.
_BUILD = pickle._Unpickler.dispatch[pickle.BUILD[0]]


class _Unpickler(pickle._Unpickler):
    """Python's own unpickler (not its C twin, which offers no hook but ``find_class``), so that
    its BUILD step can be checked too: BUILD sets attributes on what it is given, and given a
    class it set them on the class itself, in the tuning process (``Config.to_dict = dict``
    made the next save write every trial's config as ``{}``)."""

    dispatch: ClassVar[dict[int, Callable[[Any], None]]] = dict(pickle._Unpickler.dispatch)

    def __init__(self, data: bytes, extra: frozenset[tuple[str, str]]) -> None:
        super().__init__(io.BytesIO(data))
        self.extra = extra

    def load_build(self) -> None:
        stack: list[Any] = cast(Any, self).stack  # (pickle's own attribute, which typeshed leaves out)
        target = stack[-2] if len(stack) >= 2 else None
        # (an enum's call returns its member, shared by the whole process: Status("ok") given the
        # state {"_value_": "crashed"} made every ok trial saved afterwards a crash)
        if isinstance(target, (type, types.FunctionType, types.BuiltinFunctionType, types.ModuleType, enum.Enum)):
            raise RefusedName(f"sets the state of {getattr(target, '__qualname__', type(target).__name__)}, "
                              "which is no object the bytes made")
        _BUILD(cast(Any, self))

    dispatch[pickle.BUILD[0]] = load_build

    def find_class(self, module: str, name: str) -> Any:
        if "." not in name:
            if (module, name) in self.extra or (module == "builtins" and name in PLAIN_BUILTINS):
                return super().find_class(module, name)
            if module.startswith("workbench.") and _is_record(found := super().find_class(module, name), module):
                return found
        raise RefusedName(f"names {module}.{name}")


def _is_record(found: Any, module: str) -> bool:
    """Whether ``found``, looked up in ``module``, is a record class defined there: a dataclass,
    whose construction only stores fields, an enum, whose lookup by value only finds a member, or
    a value class :func:`pipe_record` marked."""
    if not isinstance(found, type) or found.__module__ != module:
        return False
    return dataclasses.is_dataclass(found) or issubclass(found, enum.Enum) or found in _VALUE_CLASSES


def restricted_loads(data: bytes, extra: frozenset[tuple[str, str]] = frozenset()) -> Any:
    """The object ``data`` pickles, naming only what the module docstring allows plus ``extra``
    (``(module, name)`` pairs). Raises :class:`RefusedName` for anything else, and whatever
    unpickling malformed bytes raises (EOFError, ValueError, ...)."""
    return _Unpickler(data, extra).load()
