"""The one exception family the workbench raises for bad input.

Every user-facing error (a malformed file, an unsafe restriction, a value outside a slot's domain)
is a ``WorkbenchError`` whose message is one line a person can act on; the command line prints it
without a traceback and exits non-zero.
"""


class WorkbenchError(Exception):
    """Bad input or an impossible request, explained in one line.

    The message often quotes a file (a field name, a value); control characters in it are shown
    escaped (``\\n``, ``\\x1b``), so a crafted file can neither break the line nor send escape
    sequences to the terminal.
    """

    def __str__(self) -> str:
        text = super().__str__()
        if text.isprintable():
            return text
        return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class SpaceError(WorkbenchError):
    """A slot, a config or a restriction does not fit the search space."""


class RestrictionError(SpaceError):
    """A restriction expression is malformed or uses something the safe language refuses."""


class SessionFormatError(WorkbenchError):
    """A session or cache file cannot be read: names the file, the field and the problem."""


class TemplateError(WorkbenchError):
    """A kernel template is missing, malformed, or cannot be rendered."""
