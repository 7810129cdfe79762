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
import threading
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
