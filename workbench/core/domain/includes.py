"""What a CUDA source includes, found as NVRTC finds it, without compiling.

NVRTC opens what an ``#include`` names itself: a name that is a FIFO or a device blocked a compile
for ever, and a header edited since left a cached result in place. So the names are resolved here
first (:func:`included_files`): the compiler keys its cache by the headers' contents and refuses
names it cannot open safely, and a template's identity counts the headers of its own folder
(:meth:`workbench.core.domain.templates.KernelTemplate.source_hash`), since they are its code too.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import re
import stat
import threading
from collections import OrderedDict, deque
from pathlib import Path
from typing import Any, Mapping, Sequence

from workbench.core.errors import WorkbenchError
from workbench.core.fs import read_capped

#: Comments (blanked, an unterminated block comment to the end, as the preprocessor reads it) and
#: string and character literals (kept, so that a "//" inside one is no comment), and numbers
#: with their digit separators (``1'024``: an apostrophe read as a character literal paired with a
#: quote in a later string and hid that string's text; ``u8'a'`` is a literal, not a number).
#: Every alternative consumes what it matched, so the scan is linear in the length of the text.
_COMMENT_OR_LITERAL = re.compile(r"(?<![\w.])[0-9](?:[\w.]|'(?=\w))*|//[^\n]*|/\*(?:[^*]|\*(?!/))*(?:\*/|\Z)|\"(?:\\.|[^\"\\\n])*\"?|'(?:\\.|[^'\\\n])*'?")
_QUOTED_NAME = re.compile(r'"([^"\n]+)"|<([^>\n]+)>')
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def without_comments(text: str, keep_lines: bool = True) -> str:
    """``text`` with its comments blanked; string and character literals are kept as they are.
    ``keep_lines``: a comment over several lines leaves its line breaks (so lines stay lines);
    else every comment is one space, as the compiler reads it (a comment inside a ``#define``
    does not end the directive)."""
    def blank(match: re.Match[str]) -> str:
        found = match.group(0)
        if found[0] in "\"'" or found[0].isdigit():  # a literal, or a number (its separators too), as written
            return found
        return ("\n" * found.count("\n") or " ") if keep_lines else " "

    return _COMMENT_OR_LITERAL.sub(blank, text)


def _directives(text: str) -> list[tuple[str, str]]:
    """(``include``, ``define`` or ``undef``, the rest of the line) of each such directive in
    ``text``, read as the preprocessor reads lines: a backslash at a line's end joins the next line
    first (so a comment, a string or a directive may continue there), then comments are blanked.
    A directive may start with the digraph ``%:`` as with ``#``, and ``#include_next`` includes as
    ``#include`` does (NVRTC opens the file of either: both read ``/proc/self/environ`` into the
    compile log, past a check that knew ``#include`` alone)."""
    spliced = text.replace("\\\r\n", "").replace("\\\n", "")
    out = []
    for line in without_comments(spliced).split("\n"):
        stripped = line.lstrip()
        if stripped.startswith("#"):
            rest = stripped[1:].lstrip()
        elif stripped.startswith("%:"):
            rest = stripped[2:].lstrip()
        else:
            continue
        for word, kind in (("include_next", "include"), ("include", "include"), ("define", "define"),
                           ("undef", "undef")):
            follows = rest[len(word):len(word) + 1]
            if rest.startswith(word) and not (follows.isalnum() or follows == "_"):
                out.append((kind, rest[len(word):].strip()))
                break
    return out


@functools.lru_cache(maxsize=4)  # (asked of one source by several steps of one compile; a few held: 16 MiB each at most)
def includes_anything(source: str) -> bool:
    """Whether ``source`` has an include directive in any spelling the preprocessor reads (``# include``,
    ``%:include``, ``#inc\\`` continued on the next line); "#include" in the text alone missed
    those, so their headers went unchecked, or the toolkit's folder unsearched."""
    if "include" not in source.replace("\\\r\n", "").replace("\\\n", ""):
        return False  # (most sources include nothing: no scan)
    return any(kind == "include" for kind, _ in _directives(source))


#: How many macro names deep an include's operand is followed (``#define A B``, ``#define B "x.h"``).
_MACRO_DEPTH = 8


def _included_names(text: str, defined: Mapping[str, str] | None = None) -> tuple[list[tuple[str, str]], list[str]]:
    """(name, ``"`` or ``<``) of each ``#include`` in ``text`` whose name is written out, or made by
    object-like macros that resolve to one (those ``defined`` by the options, then the text's own,
    each defined once); and the operands that could not be resolved that way."""
    directives = _directives(text)
    macros: dict[str, str | None] = dict(defined or {})
    for word, rest in directives:
        name = _IDENTIFIER.match(rest)
        if word in ("define", "undef") and name is not None:
            body = rest[name.end():]
            function_like = word == "define" and body.startswith("(")
            # defined twice (or undefined) or function-like: which one is in force is not followed here
            macros[name.group(0)] = None if (name.group(0) in macros or function_like or word == "undef") \
                else body.strip()
    names, unresolved = [], []
    for word, rest in directives:
        if word != "include":
            continue
        operand: str | None = rest
        for _ in range(_MACRO_DEPTH):
            if operand is None or not _IDENTIFIER.fullmatch(operand):
                break
            operand = macros.get(operand)
        literal = _QUOTED_NAME.fullmatch(operand) if operand is not None else None
        if literal is None:
            unresolved.append(rest)
        else:
            names.append((literal.group(1) or literal.group(2), '"' if literal.group(1) is not None else "<"))
    return names, unresolved


def macro_options(options: Sequence[str]) -> list[tuple[str, str | None]]:
    """What the options define and undefine, in order: ``(head, body)`` for each ``-D HEAD=BODY``
    (``-DHEAD=BODY``, ``--define-macro``; ``-DNAME`` defines it as 1, ``-DNAME=`` as nothing; a
    head may be function-like, ``F(x)``), ``(name, None)`` for each ``-U NAME``
    (``--undefine-macro``)."""
    out: list[tuple[str, str | None]] = []
    items = list(options)
    for i, option in enumerate(items):
        following = items[i + 1] if i + 1 < len(items) else None
        for flags, defines in ((("-D", "--define-macro"), True), (("-U", "--undefine-macro"), False)):
            value = None
            if option in flags:
                value = following
            elif option.startswith(flags[1] + "="):
                value = option[len(flags[1]) + 1:]
            elif option.startswith(flags[0]) and len(option) > 2 and not option.startswith("--"):
                value = option[2:]
            if value is None:
                continue
            if not defines:
                out.append((value, None))
                continue
            head, equals, body = value.partition("=")
            out.append((head, body if equals else "1"))
    return out


#: C string and character literals (a ``/*`` inside one opens no comment).
_LITERALS = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'')


def macro_option_problem(options: Sequence[str]) -> str | None:
    """Why a ``-D`` of ``options`` cannot be written as the ``#define`` line an export gives it
    (None when each can): a body ending in a backslash continues that line into the next one (an
    exported ``.cu`` defined ``-DFOO=1\\`` and lost the ``#define`` after it, compiling other
    arithmetic than was measured), and a ``/*`` opens a comment that would run over the lines
    after it. The compiler reads each option on its own, so neither shows until a file holds them."""
    for head, body in macro_options(options):
        if body is None:
            continue
        if (body or head).rstrip().endswith("\\"):
            return f"-D{head}={body}: a macro value ending in a backslash would join the next line of a #define"
        if "/*" in _LITERALS.sub('""', head + "=" + body):  # (in a string or character literal it is text)
            return f"-D{head}={body}: a macro value with /* would open a comment over the lines after its #define"
    return None


def defined_by_options(options: Sequence[str]) -> dict[str, str]:
    """The object-like macros the options leave defined (:func:`macro_options`), with their bodies."""
    out: dict[str, str] = {}
    for head, body in macro_options(options):
        if not _IDENTIFIER.fullmatch(head):
            continue
        if body is None:
            out.pop(head, None)
        else:
            out[head] = body.strip()
    return out


#: The most files on disk one compile may include, directly or through each other.
MAX_INCLUDED_FILES = 4096
#: The most bytes an included file may have (the size limit of a template's own source).
MAX_INCLUDED_BYTES = 16 * 1024 * 1024


@functools.lru_cache(maxsize=1)
def toolkit_include_dir() -> str | None:
    """The CUDA runtime's headers from pip (``nvidia-cuda-runtime-cu12``: ``cuda_fp16.h``,
    ``cuda_bf16.h``, ``vector_types.h``...), or None where that package is missing. NVRTC knows
    none of them by itself: a kernel of half-precision types failed with "could not open source
    file cuda_fp16.h" in the editor and in check-kernels, while CuPy finds them on a GPU."""
    spec = importlib.util.find_spec("nvidia.cuda_runtime") if importlib.util.find_spec("nvidia") else None
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        folder = os.path.join(location, "include")
        if os.path.isfile(os.path.join(folder, "cuda_fp16.h")):
            return folder
    return None


def with_toolkit_headers(source: str, options: Sequence[str]) -> Sequence[str]:
    """``options`` with the CUDA runtime's header folder searched last, for a source that includes
    anything (the folder is part of a compile's options and key only then: every self-contained
    template compiles, and is cached and tabled, exactly as before)."""
    folder = toolkit_include_dir()
    if folder is None or not includes_anything(source) and not any("include" in o for o in options):
        return options
    return (*options, f"--include-path={folder}")


def pre_included(options: Sequence[str]) -> list[str]:
    """The headers compile ``options`` include before the source (``-include``, ``--pre-include``)."""
    return _include_dirs(options)[1]


def _include_dirs(options: Sequence[str]) -> tuple[list[str], list[str]]:
    """The folders NVRTC searches (``-I``, ``--include-path``) and the headers it includes first
    (``-include``, ``--pre-include``), as the options give them."""
    dirs: list[str] = []
    pre: list[str] = []
    items = list(options)
    for i, option in enumerate(items):
        following = items[i + 1] if i + 1 < len(items) else ""
        for flags, into in ((("-I", "--include-path", "-include-path"), dirs),
                            (("-include", "--pre-include", "-pre-include"), pre)):
            for flag in flags:
                if option == flag and following:
                    into.append(following)
                elif option.startswith(flag + "="):
                    into.append(option[len(flag) + 1:])
                elif flag == "-I" and option.startswith("-I") and len(option) > 2:
                    into.append(option[2:])
    return dirs, pre


def included_files(source: str, options: Sequence[str] = ()) -> list[tuple[str, str]] | str:
    """(path, sha256) of every file on disk ``source`` includes, directly or through an included
    file, in the order first met; or the reason, one line, why it cannot be compiled.

    NVRTC opens what an ``#include`` names itself, so a name that is a FIFO or a device blocked the
    compile for ever, and a header edited since left its cached result in place. So the names are
    resolved here as NVRTC resolves them (absolute; the including file's folder as named, the
    working folder and ``-I`` folders for ``"name"``; ``-I`` folders for ``<name>``), in code that
    is not commented out (lines joined by a trailing backslash first): one that exists must be a
    folder (passed over) or a regular file of bounded size. A name found nowhere is left to NVRTC (a
    header it has built in, or its own "could not open" error). A name made by object-like macros
    (``-D`` options, or the file's own, each defined once) is followed to what they say. In the
    source itself a name that cannot be resolved so is refused, since it could be anything; in an
    included header it is left to NVRTC (the CUDA and CCCL headers make names that way).
    ``#if`` is not evaluated: a name in a branch that is compiled out is checked too.
    """
    if not includes_anything(source) and not any("include" in o for o in options):
        return []
    dirs, pre = _include_dirs(options)
    defined = defined_by_options(options)
    names, unresolved = _included_names(source, defined)
    if unresolved:  # the source's own: a name not checked could be a FIFO
        shown = unresolved[0] if len(unresolved[0]) <= 60 else unresolved[0][:60] + "..."
        return (f"#include {shown}: the name cannot be resolved before compiling (write it out, or "
                "define it once as a plain \"file\" or <file>)")
    tree_key = (tuple(names), tuple(pre), tuple(dirs), os.getcwd(), tuple(sorted(defined.items())))
    with _SCANNED_LOCK:
        known = _TREES.get(tree_key)
    if known is not None and all(_identity(path) == identity for path, identity in known[1]):
        return list(known[0])
    found: list[tuple[str, str]] = []
    seen: set[str] = set()
    watched: dict[str, tuple[int, ...] | None] = {}  # every folder looked in, every file read: their identity
    pending: deque[tuple[str, str, str | None]] = deque((name, '"', None) for name in pre)
    pending.extend((name, kind, None) for name, kind in names)
    while pending:
        name, kind, folder = pending.popleft()
        if os.path.isabs(name):
            candidates = [name]
        else:
            near = ([folder] if folder else []) + ([os.getcwd()] if kind == '"' else [])
            candidates = [os.path.join(d, name) for d in near + dirs]
        for candidate in candidates:
            parent = os.path.dirname(os.path.abspath(candidate))
            if parent not in watched:
                watched[parent] = _identity(parent)  # a file made there later changes its modification time
            try:
                info = os.stat(candidate)
            except (OSError, ValueError):  # (ValueError: a NUL in the name; left to NVRTC, which cannot open it)
                continue
            if stat.S_ISDIR(info.st_mode):
                continue  # not a header: the search goes on, as the compiler's does
            if not stat.S_ISREG(info.st_mode):
                shown = f'"{name}"' if kind == '"' else f"<{name}>"
                return f"#include {shown} names {candidate}, which is not a regular file"
            system = _system_state(candidate)
            if system is not None:
                shown = f'"{name}"' if kind == '"' else f"<{name}>"
                return f"#include {shown} names {candidate}, a file of the system's live state ({system}), not a header"
            named = os.path.abspath(candidate)  # by the name it is reached as: its own names are looked for beside that
            if named in seen:
                break
            if len(seen) >= MAX_INCLUDED_FILES:
                return f"includes more than {MAX_INCLUDED_FILES} files"
            seen.add(named)
            try:
                digest, own = _scanned_header(named, info, defined)
            except WorkbenchError as exc:
                return f"#include of {candidate}: {exc}"
            found.append((named, digest))
            watched[named] = _identity_of(info)
            # its own quoted names are looked for beside it as it was named (a link's folder, not its
            # target's); names it makes with macros that cannot be followed are NVRTC's, as CUDA's are
            pending.extend((own_name, own_kind, os.path.dirname(named)) for own_name, own_kind in own)
            break
    with _SCANNED_LOCK:
        _TREES[tree_key] = (tuple(found), tuple(watched.items()))
        while len(_TREES) > _TREES_MAX:
            _TREES.popitem(last=False)
    return found


#: Folders whose regular files are the running system's state, never headers: a process's
#: environment (``/proc/self/environ``), its memory maps, kernel settings. Included, NVRTC quotes
#: their lines in its errors, and those errors are kept in the session's log: a kernel folder from
#: someone else could have written the person's environment into a session they then share.
_SYSTEM_STATE = ("/proc", "/sys", "/dev")


def _system_state(path: str) -> str | None:
    """The folder of :data:`_SYSTEM_STATE` ``path`` lies in (links followed), or None."""
    real = os.path.realpath(path)
    return next((top for top in _SYSTEM_STATE if real == top or real.startswith(top + os.sep)), None)


def _identity_of(info: os.stat_result) -> tuple[int, ...]:
    return (info.st_mode, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _identity(path: str) -> tuple[int, ...] | None:
    """What says a file or folder is unchanged (None: there is nothing there)."""
    try:
        return _identity_of(os.stat(path))
    except OSError:
        return None


#: Headers already read, by path and file identity (inode, size, modification and change time) and
#: the ``-D`` macros in force: their content hash and the names they include. A compile looks its
#: cache up once per config, and a template built on a large header tree (``-I`` of a library)
#: would otherwise read and hash every header of it each time; an edited header is a new entry.
_SCANNED: OrderedDict[tuple[Any, ...], tuple[str, list[tuple[str, str]]]] = OrderedDict()
_SCANNED_MAX = 8192
_SCANNED_LOCK = threading.Lock()
#: Whole resolutions (the names a source includes, the options and the working folder) with the
#: identity of every folder looked in and every file read: while none of them changed (a header
#: edited, a file added to a folder of the search path), the answer is the same, so a cache lookup
#: per config costs a stat of each instead of a search of the whole tree.
_TREES: OrderedDict[tuple[Any, ...], tuple[tuple[tuple[str, str], ...], tuple[tuple[str, tuple[int, ...] | None], ...]]] \
    = OrderedDict()
_TREES_MAX = 256


def _scanned_header(named: str, info: os.stat_result, defined: Mapping[str, str]) -> tuple[str, list[tuple[str, str]]]:
    """(sha256 of the header at ``named``, the names it includes), read once per identity."""
    key = (named, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns, tuple(sorted(defined.items())))
    with _SCANNED_LOCK:
        hit = _SCANNED.get(key)
        if hit is not None:
            _SCANNED.move_to_end(key)
            return hit
    data = read_capped(Path(named), "header", MAX_INCLUDED_BYTES)
    names, _ = _included_names(data.decode("utf-8", errors="replace"), defined)
    entry = (hashlib.sha256(data).hexdigest(), names)
    with _SCANNED_LOCK:
        _SCANNED[key] = entry
        while len(_SCANNED) > _SCANNED_MAX:
            _SCANNED.popitem(last=False)
    return entry


def headers_in_folder(source: str, folder: Path, options: Sequence[str] = ()) -> list[tuple[Path, str]]:
    """(path relative to ``folder``, content hash) of each file ``source`` includes from ``folder``
    or a folder under it, by the name it is reached as, in the order a compile first meets them;
    ``folder`` is searched as an ``-I`` folder before ``options``. A name the source cannot have
    resolved before compiling is a :class:`WorkbenchError`, the line a compile would fail with."""
    root = folder.resolve()
    found = included_files(source, (f"--include-path={root}", *options))
    if isinstance(found, str):
        raise WorkbenchError(found)
    inside: list[tuple[Path, str]] = []
    for path, content in found:
        relative = Path(os.path.relpath(path, root))
        if relative.parts and relative.parts[0] != os.pardir and not relative.is_absolute():
            inside.append((relative, content))
    return inside

