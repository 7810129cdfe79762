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
import functools
import importlib.machinery
import importlib.util
import json
import os
import threading
from types import CodeType
from typing import Callable, Literal, ParamSpec, TypeVar, overload

_PARSE_LOCK = threading.Lock()

_P = ParamSpec("_P")
_R = TypeVar("_R")

#: Files larger than this are parsed or compiled on every call instead of kept: a spec is a few
#: kilobytes, and 256 kept entries of up to this size bound the memory the caches hold.
CACHED_TEXT_BYTES = 1 << 20


def per_content(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """``func`` remembered for its last 256 distinct arguments, for a pure function of a file's
    text (and name): the text is part of the key, so an edited file is read afresh. Calls with
    more than :data:`CACHED_TEXT_BYTES` of text are not kept. Positional arguments only."""
    kept = functools.lru_cache(maxsize=256)(func)

    @functools.wraps(func)
    def call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        size = sum(len(arg) for arg in args if isinstance(arg, (bytes, str)))
        if kwargs or size > CACHED_TEXT_BYTES:
            return func(*args, **kwargs)
        return kept(*args)

    return call


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
    must be the source that was read and hashed, not a planted or stale cache. Given the bytes a
    caller has already read and checked, it runs those, not what the file holds a moment later."""

    def __init__(self, fullname: str, path: str, source: bytes | None = None) -> None:
        super().__init__(fullname, path)
        self._source = source

    def get_code(self, fullname: str) -> CodeType:
        data = self.get_data(self.path) if self._source is None else self._source
        return compiled_source(data, self.path)


@per_content
def compiled_source(data: bytes, path: str) -> CodeType:
    """The code object of a Python file's bytes, compiled once per content and name.

    A listing of the template library imports every spec again (a spec's module may read its
    CUDA source, which can change while its own text does not), and compiling the text was most
    of that work. Compiling is a function of the bytes and the name alone and a code object
    cannot be changed, so reusing it is the same as compiling again; the bytes are the key, so
    an edited file is compiled afresh."""
    return compile(data, path, "exec", dont_inherit=True)


def file_module_spec(name: str, path: str | os.PathLike[str],
                     source: bytes | None = None) -> importlib.machinery.ModuleSpec | None:
    """``importlib.util.spec_from_file_location(name, path)`` for a user's Python file (a template
    spec, a benchmark, a reference function): imported from its source, leaving its folder as it was.
    ``source``, when given, is the file's text as the caller read it, which the import runs."""
    location = os.fspath(path)
    loader = _SourceOnlyLoader(name, location, source)
    return importlib.util.spec_from_file_location(name, location, loader=loader)


def _joined_text(values: list[ast.expr]) -> list[ast.expr]:
    """An f-string's parts with adjacent text joined and empty text left out: 3.12's parser (PEP
    701) splits and pads the text around a nested format spec (``f"{x:<{w}}"``) where 3.11's does
    not, for the same string."""
    out: list[ast.expr] = []
    for value in values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            if not value.value:
                continue
            if out and isinstance(out[-1], ast.Constant) and isinstance(out[-1].value, str):
                out[-1] = ast.Constant(value=out[-1].value + value.value)
                continue
            value = ast.Constant(value=value.value)
        out.append(value)
    return out


class _Text(str):
    """Text :func:`stable_dump` writes as it is (a node's name, a field's name, punctuation)."""


def stable_dump(tree: ast.AST) -> str:
    """``tree`` as text that is the same on every Python version this package runs on, for
    identities that must outlive an upgrade of the interpreter (a session measured with a template
    continues under another Python; a shipped compiler table stays the template's).

    ``ast.dump`` is not that: 3.12 added fields (``type_params``) that it writes even where they
    are empty, and 3.13 stopped writing empty fields at all, so one file dumped three ways. Here a
    node is its class name and the fields that hold something (an empty list or a missing optional
    part is left out, whichever version has the field); a constant is written as no version changes
    it (:func:`_constant_text`); an f-string's
    text parts are joined as 3.11 parses them; positions are not part of it. Built with a stack of its own, so a deeply nested expression (a long chain of
    ``+``) is no recursion error."""
    parts: list[str] = []
    stack: list[object] = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, _Text):
            parts.append(item)
        elif isinstance(item, ast.AST):
            pending: list[object] = [_Text(type(item).__name__ + "(")]
            for name, value in ast.iter_fields(item):
                if isinstance(item, ast.JoinedStr) and name == "values":
                    value = _joined_text(value)
                absent = value is None and not isinstance(item, (ast.Constant, ast.MatchSingleton))
                if absent or (isinstance(value, list) and not value):
                    continue
                pending += [_Text(name + "="), value, _Text(",")]
            pending.append(_Text(")"))
            stack.extend(reversed(pending))
        elif isinstance(item, list):
            pending = [_Text("[")]
            for element in item:
                pending += [element, _Text(",")]
            pending.append(_Text("]"))
            stack.extend(reversed(pending))
        else:
            parts.append(_constant_text(item))
    return "".join(parts)


def _constant_text(value: object) -> str:
    """A constant as text that no version changes: ``repr`` of a string escapes the characters
    its Unicode database calls unprintable, a set that grows with every Unicode version, so text
    is written with every character past ASCII escaped; integers in hex, which has no digit limit."""
    if isinstance(value, str):
        return "s" + json.dumps(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return hex(value)
    return repr(value)
