"""Parsing Python text into an AST, one thread at a time.

CPython 3.11 keeps the AST constructor's recursion depth in interpreter-wide state, so two
threads building ASTs at once can corrupt it and one of them fails with ``SystemError: AST
constructor recursion depth mismatch`` (python/cpython#106905). The window parses on more than
one thread (the slots panel counts a space in the background while the main thread loads a
template), so every parse of this package goes through this lock. Parsing is fast (restrictions
and spec files are small), so serialising it costs nothing noticeable.
"""

from __future__ import annotations

import ast
import importlib.machinery
import importlib.util
import os
import threading
from types import CodeType
from typing import Literal, overload

_PARSE_LOCK = threading.Lock()


@overload
def parse(text: str | bytes, mode: Literal["exec"] = "exec", filename: str = "<unknown>") -> ast.Module: ...


@overload
def parse(text: str | bytes, mode: Literal["eval"], filename: str = "<unknown>") -> ast.Expression: ...


def parse(text: str | bytes, mode: Literal["exec", "eval"] = "exec", filename: str = "<unknown>") -> ast.Module | ast.Expression:
    """``ast.parse(text, filename, mode)`` under the package's parse lock."""
    with _PARSE_LOCK:
        if mode == "eval":
            return ast.parse(text, filename=filename, mode="eval")
        return ast.parse(text, filename=filename, mode="exec")


class _SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    """Compiles the file's own source on every import and writes nothing beside it.

    The default loader writes ``__pycache__/<name>.cpython-3XX.pyc`` into the folder of every
    file it imports, and prefers a cached ``.pyc`` whose recorded size and time match the
    source's. A user's kernel folder or benchmark is not ours to write into, and the code run
    must be the source that was read and hashed, not a planted or stale cache."""

    def get_code(self, fullname: str) -> CodeType:
        return self.source_to_code(self.get_data(self.path), self.path)


def file_module_spec(name: str, path: str | os.PathLike[str]) -> importlib.machinery.ModuleSpec | None:
    """``importlib.util.spec_from_file_location(name, path)`` for a user's Python file (a template
    spec, a benchmark, a reference function): imported from its source, leaving its folder as it was."""
    location = os.fspath(path)
    return importlib.util.spec_from_file_location(name, location, loader=_SourceOnlyLoader(name, location))
