"""The one exception family the workbench raises for bad input.

Every user-facing error (a malformed file, an unsafe restriction, a value outside a slot's domain)
is a ``WorkbenchError`` whose message is one line a person can act on; the command line prints it
without a traceback and exits non-zero.

A message that tells the person which setting to change names the setting, not the command line's
flag for it: ``WorkbenchError(template="give a larger {budget}")``; any user data in a template goes through
:func:`quoted`, so its braces stay text. ``str()`` words it with the
flags (:data:`SETTING_FLAGS`: ``give a larger --budget``), and a front end that names its settings
otherwise (the window, by its controls) words it with its own names (:meth:`WorkbenchError.worded`),
so the window never tells someone to type a flag it has no place for.
"""

from __future__ import annotations

import difflib
import re
import shlex
import sys
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

#: The command line's flag for each setting a message may name (``{key}``, or ``{key:value}`` for
#: the setting with a value: ``{format:json}`` is ``--format json``).
SETTING_FLAGS: dict[str, str] = {
    "budget": "--budget",
    "sizes": "--sizes",
    "problem": "--set",
    "format": "--format",
    "at": "--at",
    "replay": "--replay",
    "backend": "--backend",
    "kernel_dir": "--kernel-dir",
    "objectives": "--objectives",
    "strategy": "--strategy",
    "workers": "--workers",
    "devices": "--devices",
    "executor": "--executor",
    "ray_address": "--ray-address",
    "allow_mixed_gpus": "--allow-mixed-gpus",
    # whole commands: what starts a new session of a recording (a continued one was refused)
    "replay_new": "tune --replay",
    "import_kt": "import-kt",
}

#: How a front end words a setting: from the value a message gives it ("" when it gives none).
Wording = Callable[[str], str]

#: ``{{`` / ``}}`` (a brace of the text: see :func:`quoted`), or a setting ``{key}`` / ``{key:value}``
#: whose value may hold quoted braces.
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([a-z_]+)(?::((?:[^{}]|\{\{|\}\})*))?\}")


def quoted(text: object) -> str:
    """``text`` for a template: its braces doubled, so that user data (a path, a problem value, a
    message quoting a file) is shown as it is and never read as a setting to word."""
    return str(text).replace("{", "{{").replace("}", "}}")


def _unquoted(text: str) -> str:
    return text.replace("{{", "{").replace("}}", "}")


def _flag(flag: str) -> Wording:
    return lambda value: f"{flag} {value}" if value else flag


def _path_flag(flag: str) -> Wording:
    """A flag whose value is a path, quoted as a shell takes it where it holds a space, a quote or
    a brace (a folder named ``my kernels``), so that the command a message proposes can be pasted.
    (Other settings' values are words of the message: ``--strategy tpe, annealing or random``.)"""
    return lambda value: f"{flag} {shlex.quote(value)}" if value else flag  # (FILE, DIR stay as they are)


#: Settings whose value is a path (see :func:`_path_flag`).
PATH_SETTINGS = ("kernel_dir", "replay", "replay_new", "import_kt")


#: The command ``pip install`` puts on the path (``[project.scripts]``).
INSTALLED_COMMAND = "kernel-workbench"


def command_name() -> str:
    """How this program was started, for messages that name a command to run: the installed
    command, ``python -m workbench.cli``, else ``python main.py`` (a checkout). A pip user told to
    run ``python main.py ...`` has no such file."""
    started = Path(sys.argv[0] if sys.argv else "")
    if started.name == INSTALLED_COMMAND:
        return INSTALLED_COMMAND
    if started.name == "__main__.py" and started.parent.name == "cli":
        return "python -m workbench.cli"
    return "python main.py"


#: :data:`SETTING_FLAGS` as wordings: the command line's, and every front end's fallback. A few
#: settings the command line gives by a command rather than a flag: ``{benchmark_code:PATH}``, the
#: person's yes to run a continued session's python benchmark (naming its file to ``tune``), and
#: ``{new_session}``, a run that starts a session of its own.
FLAG_WORDING: dict[str, Wording] = {
    **{key: (_path_flag if key in PATH_SETTINGS else _flag)(flag) for key, flag in SETTING_FLAGS.items()},
    # (a path with spaces quoted, so the command can be pasted)
    "benchmark_code": lambda value: f"name it to run its code (tune {shlex.quote(value) if value else 'FILE'} --resume ...)",
    "new_session": lambda value: "a new run (tune KERNEL or tune --replay FILE)",
    # a Kernel Tuner cache given where a session is expected: the command that makes one of it
    "import_cache": lambda value: f"import it: {command_name()} import-kt FILE --out S.json",
}


def word(template: str, names: Mapping[str, Wording]) -> str:
    """``template`` with each ``{key}`` / ``{key:value}`` of a setting in ``names`` worded by it and
    each doubled brace (:func:`quoted` text) made single; other text in braces is left as it is."""

    def one(match: re.Match[str]) -> str:
        whole = match.group(0)
        if whole in ("{{", "}}"):
            return whole[0]
        wording = names.get(match.group(1))
        return _unquoted(whole) if wording is None else wording(_unquoted(match.group(2) or ""))

    return _PLACEHOLDER.sub(one, template)


def counted(number: int, noun: str) -> str:
    """``1 trial``, ``2 trials``: a count in a message (``1 trials`` read as a typo)."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'vector_add'?)`` when one of ``known`` is close to a misspelt ``name``
    (nothing otherwise): a list of every name leaves the person to spot the typo. ``name`` itself is
    no suggestion ("unknown kernel 'rowsum2' (did you mean 'rowsum2'?)" for a template saved
    outside the search path: the rest of such a message says where it is)."""
    close = difflib.get_close_matches(name, sorted(set(known) - {name}), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def number_text(value: float) -> str:
    """A number as a message names what the person gave: as short as reads back exactly (``1``,
    ``0.9999999``, ``1234567``, ``2.5e-09``), where ``:g`` rounds to six figures (``1`` for
    0.9999999, ``1.23457e+06``) and ``repr`` adds ``.0`` to whole numbers."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    short = f"{value:g}"
    return short if float(short) == value else repr(value)


def printable(text: str) -> str:
    """``text`` as one inert line: a control or bidi character is written as its escape."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


#: Characters that make text read otherwise than it is: the bidi embeddings, overrides and isolates
#: (the Trojan Source trick shows a comment or a name in another order than a parser reads it).
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def hidden_character(text: str) -> int | None:
    """The index of the first character in ``text`` that hides what the text says: a control
    character other than a tab (an ESC sequence drives a terminal, a line break splits one line in
    two), a line or paragraph separator, or a bidi embedding, override or isolate. None when there
    is none. Spaces and marks of written languages (a no-break space, a right-to-left mark, a
    zero-width joiner in an emoji) are text and pass."""
    for index, char in enumerate(text):
        if char in _BIDI_CONTROLS or (unicodedata.category(char) in ("Cc", "Zl", "Zp") and char != "\t"):
            return index
    return None


def character_name(char: str) -> str:
    """``U+202E RIGHT-TO-LEFT OVERRIDE``: a character a person cannot see, named so they can find it."""
    return f"U+{ord(char):04X} {unicodedata.name(char, 'control character')}"


def with_hidden_escaped(text: str) -> str:
    """``text`` with each character :func:`hidden_character` finds written as its escape."""
    if hidden_character(text) is None:
        return text
    return "".join(repr(c)[1:-1] if hidden_character(c) is not None else c for c in text)


class WorkbenchError(Exception):
    """Bad input or an impossible request, explained in one line.

    The message often quotes a file (a field name, a value); control characters in it are shown
    escaped (``\\n``, ``\\x1b``), so a crafted file can neither break the line nor send escape
    sequences to the terminal.

    ``template``: the message with the settings it names as ``{key}`` placeholders (see the
    module's docstring); the message itself is then the template worded with the flags.
    """

    def __init__(self, *args: object, template: str | None = None) -> None:
        if template is not None:
            args = (word(template, FLAG_WORDING), *args)
        super().__init__(*args)
        self.template = template

    def __str__(self) -> str:
        return printable(super().__str__())

    def worded(self, names: Mapping[str, Wording]) -> str:
        """The message with the settings it names worded by ``names`` (a setting ``names`` lacks
        keeps its flag); a message without settings is ``str(self)``."""
        if self.template is None:
            return str(self)
        return printable(word(self.template, {**FLAG_WORDING, **names}))

    def prefixed(self, prefix: str) -> WorkbenchError:
        """A WorkbenchError saying ``prefix`` and then this one's message (``prefix`` may name
        settings too), keeping the settings this message names: where an error is explained by
        where its input came from (``{sizes}: ...``). The error keeps its class (a
        :class:`SpaceError` stays one) unless the class takes more than a message to make: such
        an error (a spec error's file and line) becomes a plain WorkbenchError with its text."""
        template = prefix + (self.template if self.template is not None else quoted(str(self)))
        kind = type(self) if type(self).__init__ is WorkbenchError.__init__ else WorkbenchError
        return kind(template=template)


class WriteFailed(WorkbenchError):
    """A write the machine refused although what was asked was sound: a full disk, a quota, an I/O
    error, a file system mounted read-only. Commands exit 1 for it, as for a run that failed, and
    keep 2 for input to fix: a script that reads 2 as "fix the arguments, do not retry" took a full
    disk for a usage error."""


#: errno names of a write the machine refused (see :class:`WriteFailed`); others (no such folder,
#: no permission) are the path a person gave.
_MACHINE_WRITE_ERRORS = frozenset({"ENOSPC", "EDQUOT", "EIO", "EROFS", "EFBIG", "ENOMEM"})


def machine_refused(exc: OSError) -> bool:
    """Whether ``exc`` is one of the machine's refusals of a write (its errno among those above)."""
    import errno

    return errno.errorcode.get(exc.errno or 0, "") in _MACHINE_WRITE_ERRORS


def write_error(message: str, exc: OSError) -> WorkbenchError:
    """``message`` as the error a failed write raises: :class:`WriteFailed` when the machine refused
    it (:func:`machine_refused`), else a plain :class:`WorkbenchError`."""
    return WriteFailed(message) if machine_refused(exc) else WorkbenchError(message)


class Cancelled(WorkbenchError):
    """The person cancelled at a question the action asked (save the trials shown first?): said
    where the action was asked for, not warned of a second time."""


class SpaceError(WorkbenchError):
    """A slot, a config or a restriction does not fit the search space."""


class SpaceSearchTooLong(SpaceError):
    """A search for one valid config gave up at its time limit: whether the space holds any is
    not known (its restrictions are checked only once every slot they name has a value)."""


class RestrictionError(SpaceError):
    """A restriction expression is malformed or uses something the safe language refuses."""


class SessionFormatError(WorkbenchError):
    """A session or cache file cannot be read: names the file, the field and the problem."""


class NewerFormat(SessionFormatError):
    """A session written by a newer workbench: not damaged, only not readable by this version."""


class DamagedJournal(SessionFormatError):
    """A session's journal does not read beside a saved file that does: the file opens, as last
    saved, once the journal is moved away."""


class UnreadableFile(SessionFormatError):
    """A file could not be read at all (missing, a folder or a pipe, too large, an I/O error):
    ``"<path>: <reason>"``, with both kept apart so that a caller that names the file its own way
    (a template spec's loader names the spec, not the source it reads) words the reason alone."""

    def __init__(self, path: object, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = str(path)
        self.reason = reason

    def __reduce__(self) -> tuple[type, tuple[str, str]]:  # pickled by its fields, not its message
        return (type(self), (self.path, self.reason))


class TemplateError(WorkbenchError):
    """A kernel template is missing, malformed, or cannot be rendered."""


class UnknownTemplate(WorkbenchError):
    """No folder searched has a template of that name (its message lists those they have)."""


#: The most characters of an exception's message that :func:`exception_line` keeps.
EXCEPTION_LINE_CHARS = 300


def exception_line(exc: BaseException) -> str:
    """``Type: first line of the message``, for an exception raised by code that is not ours (a
    template spec's top level): its ``__str__`` may raise, print pages, or span lines, and the
    line it goes into must still be one line a person can read."""
    name = type(exc).__name__
    try:
        raw = str(exc)
        text = str.__str__(raw) if isinstance(raw, str) else ""  # a plain str: a subclass's methods are its own
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001 - the message of someone else's exception may fail, even exit
        return f"{name} (its message could not be formatted)"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return name
    first = lines[0] if len(lines[0]) <= EXCEPTION_LINE_CHARS else lines[0][:EXCEPTION_LINE_CHARS] + "..."
    return f"{name}: {first}" + (" ..." if len(lines) > 1 else "")
