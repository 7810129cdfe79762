"""The kernel's parameter list against the arguments its spec passes, read from the source.

A run launches the entry with the spec's arguments in order (arrays as device pointers, scalars
as values of their dtype; a ``__constant__`` input goes to its symbol instead). Nothing compared
that with the kernel itself: a parameter added to the source, or an argument declared
``float64`` for a ``const float*``, compiled, checked and simulated without a word, and only a
GPU run would launch it wrong. The entry's declaration is read from the source text: where it is
written out plainly (``extern "C" __global__ void name(const float* x, int n)``), the count and
each parameter's pointer-ness are certain, and a base type of a known C spelling is compared with
the argument's dtype; a declaration made by macros or templates, or a type behind a ``typedef``,
is not judged.
"""

from __future__ import annotations

import re
from typing import Sequence

from workbench.core.domain.macros import strip_comments

#: C spellings of each NumPy dtype a spec may give (qualifiers aside).
_SPELLINGS: dict[str, frozenset[str]] = {
    "float32": frozenset({"float"}),
    "float64": frozenset({"double"}),
    "float16": frozenset({"__half", "half"}),
    "bfloat16": frozenset({"__nv_bfloat16", "nv_bfloat16"}),
    "int8": frozenset({"char", "signed char", "int8_t"}),
    "uint8": frozenset({"unsigned char", "uint8_t"}),
    "int16": frozenset({"short", "short int", "signed short", "int16_t"}),
    "uint16": frozenset({"unsigned short", "unsigned short int", "uint16_t"}),
    "int32": frozenset({"int", "signed", "signed int", "int32_t"}),
    "uint32": frozenset({"unsigned", "unsigned int", "uint32_t"}),
    "int64": frozenset({"long long", "long long int", "signed long long", "int64_t", "long", "ptrdiff_t"}),
    "uint64": frozenset({"unsigned long long", "unsigned long long int", "uint64_t", "size_t", "unsigned long"}),
    "bool": frozenset({"bool"}),
}
_KNOWN = frozenset().union(*_SPELLINGS.values())
_QUALIFIERS = frozenset({"const", "volatile", "__restrict__", "restrict", "__restrict", "register"})
#: The words C builds its arithmetic types of: a declaration ending in one names no parameter.
_TYPE_WORDS = frozenset({"unsigned", "signed", "char", "short", "int", "long", "float", "double", "bool"})
_WORD = re.compile(r"[A-Za-z_]\w*")
#: ``__launch_bounds__(BLOCK_SIZE)`` (or with a macro's call inside) between ``__global__`` and the name
_LAUNCH_BOUNDS = re.compile(r"__launch_bounds__\s*\((?:[^()]|\([^()]*\))*\)")


def entry_parameters(source: str, entry: str) -> list[str] | None:
    """The parameter declarations of ``__global__`` function ``entry`` as written in ``source``
    (``[]`` for none), or None when no plain declaration of it is found (made by a macro, a
    template, or not there: the compile says so then)."""
    text = strip_comments(source)
    head = re.compile(r"\b" + re.escape(entry) + r"\s*\(")
    found_lists: list[list[str] | None] = []
    for match in re.finditer(r"__global__", text):
        found = head.search(text, match.end())
        if found is None:
            break
        between = _LAUNCH_BOUNDS.sub(" ", text[match.end():found.start()])
        if any(mark in between for mark in ";{}()#"):  # another declaration came first
            continue
        depth, at = 1, found.end()
        while at < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[at], 0)
            at += 1
        if depth:
            return None
        found_lists.append(_parameters(text[found.end():at - 1]))
    # declared more than once (a prototype, an old copy under #if 0) differently: not judged
    if not found_lists or any(params != found_lists[0] for params in found_lists):
        return None
    return found_lists[0]


def _parameters(inner: str) -> list[str] | None:
    """The declarations of a parameter list's text, or None when it is not plainly written out:
    template arguments, varargs, directives, or a parameter that is one word (a macro standing
    for one or several parameters, ``k(ARGS)``)."""
    if "<" in inner or "..." in inner or "#" in inner:
        return None
    params = [" ".join(p.split()) for p in inner.split(",")]
    if params == [""] or params == ["void"]:
        return []
    words = [[w for w in _WORD.findall(p) if w not in _QUALIFIERS] for p in params]
    if any(not p for p in params) or any(len(w) < 2 and not (len(w) == 1 and "*" in p) for w, p in zip(words, params)):
        return None
    return params


def _base_type(declaration: str) -> str | None:
    """The base type of a parameter declaration with qualifiers and its name left out
    (``const float* __restrict__ x`` -> ``float``), or None when it has no name to leave out."""
    words = [w for w in _WORD.findall(declaration.split("[")[0]) if w not in _QUALIFIERS]
    if len(words) < 2:
        return None
    if words[-1] in _TYPE_WORDS:  # no name written (const unsigned char*): every word is the type's
        return " ".join(words)
    return " ".join(words[:-1])


def signature_problems(source: str, entry: str, args: Sequence[tuple[str, str, str]],
                       constants: Sequence[str] = ()) -> list[tuple[str, str]]:
    """(``error`` or ``warning``, message) for each way the entry's parameters disagree with the
    arguments a launch passes: ``args`` are (name, kind, dtype) in the spec's order, ``constants``
    the array inputs that go to ``__constant__`` symbols instead (scalars are always passed)."""
    params = entry_parameters(source, entry)
    if params is None:
        return []
    passed = [(name, kind, dtype) for name, kind, dtype in args if kind == "scalar" or name not in constants]
    if len(params) != len(passed):
        names = ", ".join(name for name, _, _ in passed) or "none"
        return [("error", f"the kernel {entry} takes {len(params)} parameter{'s' if len(params) != 1 else ''}, but a "
                          f"launch passes {len(passed)} argument{'s' if len(passed) != 1 else ''} ({names}): the "
                          "spec's args must list the kernel's parameters in order")]
    problems: list[tuple[str, str]] = []
    for position, (param, (name, kind, dtype)) in enumerate(zip(params, passed), 1):
        pointer = "*" in param or "[" in param
        base = _base_type(param.replace("*", " "))
        if base is None or base not in _KNOWN:  # a typedef (perhaps of a pointer), a template: not judged
            continue
        if pointer != (kind != "scalar"):
            what = "an array (a pointer)" if kind != "scalar" else f"a {dtype} scalar"
            problems.append(("error", f"argument {name!r} is {what}, but parameter {position} of {entry} is "
                                      f"'{' '.join(param.split())}'"))
            continue
        spellings = _SPELLINGS.get(dtype)
        if spellings is not None and base not in spellings:
            problems.append(("warning", f"argument {name!r} is {dtype}, but parameter {position} of {entry} is "
                                        f"'{' '.join(param.split())}' ({base}): the kernel reads its values as "
                                        "another type"))
    return problems


__all__ = ["entry_parameters", "signature_problems"]
