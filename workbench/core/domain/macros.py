"""Which macros a CUDA source leaves for the tuner to define: the slots and problem parameters it uses.

A template receives its slot values as ``#define`` lines in front of the source (see
:mod:`workbench.core.domain.templates`), so a slot is any upper-case macro the source *uses* but does
not define itself, or defines only as a fallback (``#ifndef BLOCK_SIZE`` / ``#define BLOCK_SIZE
256`` / ``#endif``: the fallback value becomes the slot's default). ``PROBLEM_N`` names the
problem parameter ``n``. Macros ``STRATEGY_ATOMIC`` beside a slot ``STRATEGY`` are that
identifier slot's values. Comments and string literals are ignored; line numbers are 1-based.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

from workbench.core.domain.pysyntax import per_content

#: Upper-case names that come from CUDA, the C library or the compiler, never from the tuner.
KNOWN_MACROS = frozenset({
    "NULL", "FLT_MAX", "FLT_MIN", "FLT_EPSILON", "DBL_MAX", "DBL_MIN", "INT_MAX", "INT_MIN", "UINT_MAX",
    "LLONG_MAX", "INFINITY", "NAN", "M_PI", "CUDART_INF_F", "CUDART_NAN_F", "CUDART_PI_F", "EOF", "TRUE", "FALSE",
    "WARP_SIZE_BUILTIN", "CUDA_VERSION", "CUDART_VERSION",
})

_TOKEN = re.compile(r"\b[A-Z][A-Z0-9_]*\b")
_DIRECTIVE = re.compile(r"^\s*#\s*(\w+)\s*(.*)$")
#: Two names compared with == or != (a lookahead, so that each name can start a match).
_COMPARISON = re.compile(r"(?=\b(\w+)\s*[!=]=\s*(\w+)\b)")


#: Names no header may define: the preprocessor's and C/C++'s own words, and what the standard
#: headers and the compiler define (an exported header, or a template's slot macro, would redefine them).
RESERVED_MACROS = frozenset({
    "defined", "auto", "bool", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return",
    "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile",
    "while", "class", "namespace", "template", "typename", "this", "new", "delete", "true", "false", "nullptr",
    "operator", "private", "protected", "public", "virtual", "friend", "using", "try", "catch", "throw",
    "constexpr", "decltype", "static_assert", "noexcept", "explicit", "mutable", "asm", "export",
    # C++'s alternative operator names, which no preprocessor lets a header define (g++: "xor" cannot be
    # used as a macro name), the rest of C++'s keywords, and what the standard headers define
    "and", "and_eq", "bitand", "bitor", "compl", "not", "not_eq", "or", "or_eq", "xor", "xor_eq",
    "alignas", "alignof", "char8_t", "char16_t", "char32_t", "wchar_t", "const_cast", "dynamic_cast",
    "reinterpret_cast", "static_cast", "typeid", "thread_local", "concept", "requires", "consteval",
    "constinit", "co_await", "co_return", "co_yield", "NULL", "main", "assert", "errno", "offsetof",
    # what the C and C++ standard headers define, and GNU mode's predefined names: NDEBUG turns
    # assert() off in every file that includes the header
    "NDEBUG", "EOF", "BUFSIZ", "FILENAME_MAX", "EXIT_SUCCESS", "EXIT_FAILURE", "RAND_MAX", "CHAR_BIT",
    "CHAR_MIN", "CHAR_MAX", "SCHAR_MIN", "SCHAR_MAX", "UCHAR_MAX", "SHRT_MIN", "SHRT_MAX", "USHRT_MAX",
    "INT_MIN", "INT_MAX", "UINT_MAX", "LONG_MIN", "LONG_MAX", "ULONG_MAX", "LLONG_MIN", "LLONG_MAX",
    "ULLONG_MAX", "SIZE_MAX", "PTRDIFF_MIN", "PTRDIFF_MAX", "INTPTR_MAX", "UINTPTR_MAX", "FLT_MAX", "FLT_MIN",
    "FLT_EPSILON", "DBL_MAX", "DBL_MIN", "DBL_EPSILON", "INFINITY", "NAN", "HUGE_VAL", "HUGE_VALF", "M_PI",
    "unix", "linux", "i386",
})
#: Names C and C++ keep for themselves: ``_`` and a capital (``_Pragma``, ``_Bool``, ``_Alignas``), or two underscores.
RESERVED_PREFIX = re.compile(r"_[A-Z]|__")


#: Names the workbench's exports define themselves: include guards (``WORKBENCH_TUNED_..._H``,
#: ``WORKBENCH_DISPATCH_..._H``) and a portable header's device selection (``WORKBENCH_TARGET_...``).
EXPORT_MACRO_PREFIX = re.compile(r"WORKBENCH_(TUNED|DISPATCH|TARGET)_")


def export_macro(name: str) -> bool:
    """Whether ``name`` is of the kind an exported header defines (:data:`EXPORT_MACRO_PREFIX`): a
    slot of that name redefined the header's include guard, or selected a device, in every file
    including it."""
    return bool(EXPORT_MACRO_PREFIX.match(name))


def reserved_macro(name: str) -> bool:
    """Whether ``name`` may not be ``#define``d: one of :data:`RESERVED_MACROS`, or a name C and C++
    keep for themselves (``_`` and a capital, or two underscores)."""
    return name in RESERVED_MACROS or bool(RESERVED_PREFIX.match(name))

@dataclass(frozen=True)
class DetectedSlot:
    """A macro the tuner must define: its slot name (lower case), first line, fallback default, identifier values."""

    name: str
    macro: str
    line: int
    default: int | float | bool | str | None = None
    choices: tuple[str, ...] = ()
    #: what the source's comments say of it (see :func:`comment_docs`); "" when they say nothing
    doc: str = ""


@dataclass(frozen=True)
class MacroScan:
    slots: tuple[DetectedSlot, ...] = ()
    problem: tuple[tuple[str, int], ...] = ()  # (parameter name, first line)
    defined: frozenset[str] = field(default_factory=frozenset)


#: A comment's text that starts with a macro's name (or several, with commas) and then says what it
#: is, set apart by a colon, a dash, a tab or a column's spaces: ``//   THREADS_PER_ROW  threads
#: that share one row``, ``//   BLOCK_M, BLOCK_N  block tile``, `` * BLOCK_SIZE: threads per
#: block``, ``//! ITEMS -- items``, ``// DOUBLE_BUFFER 1: two stages``. A sentence that wraps onto
#: a line starting with a name (``// BLOCK_K through shared memory``) is prose, not a description.
#: The marker (``//``, ``/*``, a block's ``*``) is optional: :func:`comment_docs` matches only
#: where the comment's text starts.
_MARKER = r"(?://+[!<]*|/\*+[!<]*|\*+)?\s*"  # a comment's marker, if any, and the spaces after it
_MACRO_COMMENT = re.compile(
    _MARKER + r"([A-Z][A-Z0-9_]*(?:\s*,\s*[A-Z][A-Z0-9_]*)*)"
    r"(?:\s*[:=]\s*|\s+-{1,2}\s+|\t\s*|\s{2,}| (?=[0-9A-Z(]))(?=\S)")
#: A name and one space before text: an item only where it lines up with the items beside it.
_NAME_THEN_TEXT = re.compile(_MARKER + r"([A-Z][A-Z0-9_]*) (?=\S)")
#: The marker and spaces before a comment's text.
_COMMENT_TEXT = re.compile(_MARKER + r"(?=\S)")
#: A line of a description that is an item of its own (a choice ``WARP   ...``, a value ``1: ...``).
_SUB_ITEM = re.compile(r"\w+:|[A-Z][A-Z0-9_]*(?:\s{2,}|\t)")
#: A ``#define`` of a macro, for the comment after its value (``#define BLOCK_SIZE 256 // threads``).
_DEFINE = re.compile(r"\s*#\s*define\s+([A-Z][A-Z0-9_]*)\b")
#: Lines and characters of a description kept at most (a source's header describes a macro in a
#: few lines; more is cut with an ellipsis).
_DOC_LINES = 12
_DOC_CHARS = 600


def _rest(line: str, start: int) -> str:
    """A comment's text from ``start`` up to a block comment's ``*/``, its runs of spaces as one.
    (Cut by hand: a pattern that also matched the end of the line went back over long runs of
    spaces, minutes on a hostile line the editor scans in the window's thread.)"""
    text = line[start:]
    close = text.find("*/")
    return " ".join((text[:close] if close >= 0 else text).split())


def _comment_start(line: str, blanked: str, start: int = 0) -> int:
    """Where the first comment at or after ``start`` begins in ``line`` (-1: none), told from
    ``blanked`` (the line as :func:`strip_comments` gives it, comments and literals blanked,
    quotes kept): a ``//`` or ``/*`` that is blanked and outside a string (an even number of kept
    quotes before it). One pass: a line of ``"//"`` pairs does not search the line again."""
    quotes = 0
    for at in range(min(len(line), len(blanked))):
        char = blanked[at]
        if char == '"' and line[at] == '"':
            quotes += 1
        elif (at >= start and quotes % 2 == 0 and char == " " and line[at] == "/"
              and line.startswith(("//", "/*"), at)):
            return at
    return -1


def _comment_text_starts(lines: list[str], blanked: list[str]) -> list[int]:
    """Per line, the column where a comment starts that holds the line's first text (-1: the line
    starts with code, or is empty): a line opening with ``//`` or ``/*``, or one inside a block
    comment (all of it blanked), where a leading ``*`` is the comment's, not a product's."""
    starts: list[int] = []
    for line, cleared in zip(lines, blanked):
        first = len(line) - len(line.lstrip())
        inside = first < len(line) and first < len(cleared) and cleared[first] == " "
        starts.append(first if inside and (line.startswith(("//", "/*"), first) or not cleared.strip()) else -1)
    return starts


def comment_docs(source: str) -> dict[str, str]:
    """Macro name -> what the source's comments say it is: the rest of the first comment line that
    starts with its name, with the lines that go on under it (indented past the name: a wrapped
    sentence, or the choices it lists), else the comment after its ``#define``'s value. How a
    source's header usually describes its tunable macros, and so the description a slot detected
    from them starts with (the line it was first used on said nothing about what it is for).
    Comments and string literals are told apart by :func:`strip_comments`; tabs count as 8 columns.
    A description is cut at :data:`_DOC_CHARS` characters."""
    expanded = source.expandtabs(8)  # (before blanking, so that both have the same columns)
    lines = expanded.split("\n")
    blanked = strip_comments(expanded).split("\n")  # (one line for each: strip_comments keeps every "\n")
    starts = _comment_text_starts(lines, blanked)
    docs: dict[str, str] = {}
    items = [_MACRO_COMMENT.match(line, start) if start >= 0 else None for line, start in zip(lines, starts)]
    for number, line in enumerate(lines):
        # a name as long as the column it stands in leaves one space before a lower-case text:
        # an item still, when that text starts where the items beside it start theirs
        weak = _NAME_THEN_TEXT.match(line, starts[number]) if starts[number] >= 0 and not items[number] else None
        beside = [items[k] for k in (number - 1, number + 1) if 0 <= k < len(items)]
        if weak and any(item is not None and item.end() == weak.end() for item in beside):
            items[number] = weak
    for number, line in enumerate(lines):
        match = items[number]
        if not match:
            continue
        column, name_column = match.end(), match.start(1)
        parts = [_rest(line, column)]
        previous = column  # where the last line's text started
        for following in range(number + 1, len(lines)):
            more = _COMMENT_TEXT.match(lines[following], starts[following]) if starts[following] >= 0 else None
            if not more or more.end() <= name_column:
                break  # code, another item, or the header's next section
            if len(parts) == _DOC_LINES or sum(map(len, parts)) > _DOC_CHARS:
                parts.append(" …")
                break
            text = _rest(lines[following], more.end())
            # a line with a label of its own is a sub-item (a choice, a value's line); any other,
            # a wrapped sentence going on with a space
            item = bool(_SUB_ITEM.match(lines[following], more.end())) and more.end() <= previous
            parts.append(("; " if item and not parts[-1].endswith((":", ";")) else " ") + text)
            previous = more.end()
        text = "".join(parts).rstrip(":").strip()
        if len(text) > _DOC_CHARS:
            text = text[:_DOC_CHARS].rstrip() + " …"
        for name in re.split(r"\s*,\s*", match.group(1)):
            docs.setdefault(name, text)
    for number, line in enumerate(lines):
        define = _DEFINE.match(line)
        if define and starts[number] < 0 and define.group(1) not in docs:  # (not one in a comment)
            at = _comment_start(line, blanked[number], define.end())
            trailing = _rest(line, at + 2).lstrip("/!<* ") if at >= 0 else ""
            if trailing:
                docs[define.group(1)] = trailing
    return docs


_DIGITS = frozenset("0123456789")
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


@per_content
def strip_comments(source: str) -> str:
    """The source with comments and string/char literals blanked, line breaks kept (so lines still match).
    Remembered per text: every listing of the template library checks each source again, and this
    walk was most of a listing's time."""
    out: list[str] = []
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        if source.startswith("//", i):
            j = source.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif source.startswith("/*", i):
            j = source.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in source[i:j]))
            i = j
        elif c == "'" and 0 < i < n - 1 and source[i - 1] in _DIGITS and source[i + 1] in _HEX_DIGITS:
            out.append(c)  # a digit separator (1'024, 0xFF'FF), not a character literal
            i += 1
        elif c in "\"'":
            j = i + 1
            while j < n and source[j] != c and source[j] != "\n":
                j += 2 if source[j] == "\\" else 1
            # j: the closing quote, or the line break an unterminated literal ends before (an
            # apostrophe in "#error can't", a digit separator in 1'024), or the end; a line break
            # inside it (a backslash continuation) is kept, so lines still match the source's
            closed = j < n and source[j] == c
            out.append(c + "".join("\n" if ch == "\n" else " " for ch in source[i + 1:min(j, n)]) + (c if closed else ""))
            i = j + 1 if closed else min(j, n)
        else:
            out.append(c)
            i += 1
    return "".join(out)


def scan_macros(source: str) -> MacroScan:
    """Slots and problem parameters the source expects (see the module docstring)."""
    lines = strip_comments(source).splitlines()
    defined: dict[str, int] = {}
    fallback: dict[str, str] = {}
    used: dict[str, int] = {}
    guard: list[str | None] = []
    for number, line in enumerate(lines, 1):
        directive = _DIRECTIVE.match(line)
        if directive:
            word, rest = directive.group(1), directive.group(2)
            if word == "ifndef":
                guard.append(rest.split()[0] if rest.split() else None)
                continue
            if word in ("if", "ifdef"):
                guard.append(None)
            elif word == "endif" and guard:
                guard.pop()
            if word == "define":
                match = re.match(r"([A-Za-z_]\w*)(\([^)]*\))?\s*(.*)", rest)
                if match:
                    name = match.group(1)
                    if guard and guard[-1] == name:
                        fallback[name] = match.group(3).strip()
                    else:
                        defined.setdefault(name, number)
                    rest = match.group(3)
                    if match.group(2):  # a function-like macro's parameters are not uses
                        params = set(re.findall(r"\w+", match.group(2)))
                        rest = " ".join(t for t in re.findall(r"\w+|\W", rest) if t not in params)
            elif word == "pragma" and re.match(r"unroll\b", rest.strip()):
                # ``#pragma unroll UNROLL``: its count is an expression the preprocessor expands, a
                # slot's macro as often as not (Detect missed it while the compile error pointed at it)
                rest = rest.strip()[len("unroll"):]
            elif word in ("include", "pragma", "line", "error", "warning", "undef"):
                continue
            text = rest
        else:
            text = line
        for token in _TOKEN.findall(text):
            if len(token) > 1 and not token.startswith("__"):
                used.setdefault(token, number)
    problem = tuple(sorted(((m[len("PROBLEM_"):].lower(), line) for m, line in used.items()
                            if m.startswith("PROBLEM_") and len(m) > len("PROBLEM_")), key=lambda t: t[1]))
    candidates = {m: line for m, line in used.items()
                  if not m.startswith("PROBLEM_") and m not in KNOWN_MACROS and (m not in defined or m in fallback)}
    for m in fallback:
        candidates.setdefault(m, used.get(m, 0))
    values: dict[str, list[str]] = {}
    # Every comparison of two names, found in one pass (overlapping, so `A == B == C` gives both
    # pairs): asking the whole source about each pair of macros instead took minutes for a few
    # hundred of them, and the editor scans a source opened on its own in the window's thread.
    compared = {frozenset(pair) for pair in _COMPARISON.findall("\n".join(lines))}
    for m in sorted(candidates, key=len):
        # the owners of m are the candidates it extends by "_...": the shortest one compared with it
        for cut in (i for i, ch in enumerate(m) if ch == "_"):
            owner = m[:cut]
            if owner in candidates and frozenset((owner, m)) in compared:
                values.setdefault(owner, []).append(m)
                break
    members = {v for vs in values.values() for v in vs}
    docs = comment_docs(source)
    slots = []
    for macro, first_line in sorted(candidates.items(), key=lambda t: (t[1], t[0])):
        if macro in members:
            continue
        choices = tuple(v[len(macro) + 1:].lower() for v in values.get(macro, ()))
        default = _fallback_value(fallback.get(macro))
        if choices and isinstance(default, str) and default.upper().startswith(macro + "_"):
            default = default[len(macro) + 1:].lower()
        slots.append(DetectedSlot(macro.lower(), macro, first_line, default, choices, docs.get(macro, "")))
    return MacroScan(tuple(slots), problem, frozenset(defined))


_DEFINED = re.compile(r"\bdefined\s*(?:\(\s*([A-Za-z_]\w*)\s*\)|([A-Za-z_]\w*))")


@dataclass(frozen=True)
class MacroMisuse:
    """A directive of the source that makes a macro the tuner defines (a slot's, a problem
    parameter's) mean nothing: every config would compile the same code there."""

    macro: str
    line: int
    problem: str


def _directives(source: str) -> list[tuple[int, str, str]]:
    """(line, directive word, rest) of each preprocessor directive, comments blanked and continued
    lines joined (the line is the directive's first)."""
    out: list[tuple[int, str, str]] = []
    lines = strip_comments(source).splitlines()
    number = 0
    while number < len(lines):
        first, text = number + 1, lines[number]
        while text.endswith("\\") and number + 1 < len(lines):
            number += 1
            text = text[:-1] + " " + lines[number]
        number += 1
        directive = _DIRECTIVE.match(text)
        if directive:
            out.append((first, directive.group(1), directive.group(2).strip()))
    return out


_DEFINED_TEST = re.compile(r"^(!?)\s*defined\s*(?:\(\s*([A-Za-z_]\w*)\s*\)|([A-Za-z_]\w*))$")


def _unwrapped(text: str) -> str:
    """``text`` without the parentheses around all of it."""
    text = text.strip()
    while text.startswith("(") and text.endswith(")") and _balanced(text[1:-1]):
        text = text[1:-1].strip()
    return text


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if depth < 0:
            return False
    return depth == 0


def _existence_test(condition: str) -> tuple[bool, tuple[str, ...]] | None:
    """A condition that only asks whether macros are defined: ``defined(M)`` (True, (M,)), or
    ``!defined(A) && !defined(B)`` (False, (A, B)); None for any other condition."""
    parts = [_unwrapped(part) for part in _unwrapped(condition).split("&&")]
    parts = ["!" + _unwrapped(part[1:]) if part.startswith("!") else part for part in parts]  # !(defined(M))
    tests = [_DEFINED_TEST.match(part) for part in parts]
    if not all(tests):
        return None
    negated = {bool(t.group(1)) for t in tests if t}
    names = tuple(t.group(2) or t.group(3) for t in tests if t)
    if negated == {True}:
        return False, names
    if negated == {False} and len(names) == 1:
        return True, names
    return None


def _dead(condition: str) -> bool:
    """``#if 0``, ``#if (0)``: a branch never compiled."""
    return _unwrapped(condition) == "0"


@dataclass
class _Conditional:
    """An open ``#if`` / ``#ifdef`` / ``#ifndef`` chain of :func:`macro_misuses`: each test of a
    macro's existence in its branches (macro, line, test), the macros known not to be defined in
    the branch being read and in every branch after those tested for it as defined, and which of
    the tested macros a branch where they are missing defines (a fallback) or stops on (``#error``,
    a guard)."""

    tests: list[tuple[str, int, str]] = field(default_factory=list)
    absent: frozenset[str] = frozenset()
    after: frozenset[str] = frozenset()
    dead: bool = False
    covered: set[str] = field(default_factory=set)


def macro_misuses(source: str, macros: Iterable[str]) -> list[MacroMisuse]:
    """Where ``source`` defeats the ``#define`` lines put in front of it for ``macros``.

    - ``#define M`` or ``#undef M`` anywhere but in a branch where ``M`` is known not to be defined
      (``#ifndef M``, ``#if !defined(M)``, a branch after ``#ifdef M``): the source's own value wins
      over every config's (a redefinition is only a compiler warning).
    - ``#ifdef M``, ``#ifndef M``, ``#if defined(M)`` or ``#if !defined(M)`` whose branches where
      ``M`` is missing neither define it (a fallback for a build outside the workbench) nor stop
      with ``#error`` (a guard that ``M`` is given), and ``defined(M)`` in a condition that does not
      also read ``M``'s value: every config defines ``M``, so the test has one answer for all of them.

    Code under ``#if 0`` is not read.
    """
    wanted = set(macros)
    found: list[MacroMisuse] = []
    frames: list[_Conditional] = []

    def dead() -> bool:
        return any(frame.dead for frame in frames)

    def close(frame: _Conditional) -> None:
        for macro, line, test in frame.tests:
            if macro not in frame.covered:
                found.append(MacroMisuse(macro, line, (
                    f"tests whether {macro} is defined ({test}), which every config defines (to its value), "
                    f"so the test has one answer for all of them: test its value (#if {macro} ...)")))

    def branch(frame: _Conditional, word: str, rest: str, line: int) -> None:
        """Read a branch's condition: which macros it is known to lack, and which it tests."""
        if word in ("ifdef", "ifndef", "elifdef", "elifndef"):
            test: tuple[bool, tuple[str, ...]] | None = (word.endswith("def") and not word.endswith("ndef"),
                                                         tuple(rest.split()[:1]))
        elif word in ("if", "elif"):
            test = _existence_test(rest)
        else:  # else
            test = None
        tested = frozenset(m for m in test[1] if m in wanted) if test is not None else frozenset()
        frame.tests += [(m, line, f"#{word} {rest}") for m in sorted(tested)]
        # a branch runs where every earlier test for M as defined failed, and its own negated ones hold
        frame.absent = frame.after | (tested if test is not None and not test[0] else frozenset())
        if test is not None and test[0]:
            frame.after |= tested
        if word in ("if", "elif") and not tested:
            found.extend(_existence_only(rest, wanted, line, word))

    def open_chain(word: str, rest: str, line: int) -> None:
        frame = _Conditional(dead=word == "if" and _dead(rest))
        alive = not dead()
        frames.append(frame)
        if alive:
            branch(frame, word, rest, line)

    def next_branch(word: str, rest: str, line: int) -> None:
        frame = frames[-1]
        frame.dead = word == "elif" and _dead(rest)
        if not dead():
            branch(frame, word, rest, line)
        else:
            frame.absent = frozenset()

    for line, word, rest in _directives(source):
        name = rest.split()[0] if rest.split() else ""
        if word in ("ifdef", "ifndef", "if"):
            open_chain(word, rest, line)
        elif word in ("else", "elif", "elifdef", "elifndef") and frames:
            next_branch(word, rest, line)
        elif word == "endif" and frames:
            close(frames.pop())
        elif dead():
            continue
        elif word == "error":
            for frame in frames:
                frame.covered |= frame.absent
        elif word in ("define", "undef") and name.split("(")[0] in wanted:
            macro = name.split("(")[0]
            guarding = [frame for frame in frames if macro in frame.absent]
            if guarding:
                guarding[-1].covered.add(macro)
            else:
                found.append(MacroMisuse(macro, line, (
                    f"defines {macro} itself, outside an #ifndef {macro} block, so every config compiles with the "
                    f"source's value: remove it, or make it a fallback (#ifndef {macro} ... #endif)") if word == "define"
                    else f"undefines {macro}, so no config compiles with the value it was given: remove it"))
    for frame in frames:  # unterminated: the compiler says so; the test is said anyway
        close(frame)
    return sorted(found, key=lambda misuse: misuse.line)


def _existence_only(condition: str, wanted: set[str], line: int, word: str) -> list[MacroMisuse]:
    """``defined(M)`` in a condition that never reads ``M``'s value (``#if defined(FAST) && N > 2``):
    the same answer in every config. Beside a test of the value (``defined(B) && B > 2``) it is only a guard."""
    out = []
    outside = _DEFINED.sub(" ", condition)
    for match in _DEFINED.finditer(condition):
        macro = match.group(1) or match.group(2)
        if macro in wanted and not re.search(rf"\b{re.escape(macro)}\b", outside):
            out.append(MacroMisuse(macro, line, f"tests defined({macro}) (#{word} {condition}) and never its value; "
                                                f"every config defines it, so the test has one answer for all of "
                                                f"them: test its value"))
    return out


def _fallback_value(text: str | None) -> int | float | bool | str | None:
    if not text:
        return None
    text = text.strip().strip("()")
    try:
        return int(text, 0)
    except ValueError:
        pass
    try:
        return float(text.rstrip("fF"))
    except ValueError:
        return text if re.fullmatch(r"[A-Za-z_]\w*", text) else None


__all__ = ["DetectedSlot", "MacroMisuse", "MacroScan", "macro_misuses", "scan_macros", "strip_comments"]
