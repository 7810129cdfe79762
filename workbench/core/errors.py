"""The one exception family the workbench raises for bad input.

Every user-facing error (a malformed file, an unsafe restriction, a value outside a slot's domain)
is a ``WorkbenchError`` whose message is one line a person can act on; the command line prints it
without a traceback and exits non-zero.
"""


class WorkbenchError(Exception):
    """Bad input or an impossible request, explained in one line."""


class SpaceError(WorkbenchError):
    """A slot, a config or a restriction does not fit the search space."""


class RestrictionError(SpaceError):
    """A restriction expression is malformed or uses something the safe language refuses."""


class SessionFormatError(WorkbenchError):
    """A session or cache file cannot be read: names the file, the field and the problem."""


class TemplateError(WorkbenchError):
    """A kernel template is missing, malformed, or cannot be rendered."""
