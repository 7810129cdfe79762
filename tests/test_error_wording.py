"""An error names the settings it tells the person to change; each front end words them.

``str()`` is the command line's wording (its flags); ``worded`` is another front end's (the
window names its controls). See ``workbench/core/errors.py``.
"""

from __future__ import annotations

import pickle

from workbench.core.errors import SETTING_FLAGS, SpaceError, WorkbenchError, word

WINDOW = {"budget": lambda value: "the evals box", "format": lambda value: f"a .{value} export"}


def test_the_command_line_reads_flags_and_another_front_end_its_own_names() -> None:
    error = WorkbenchError(template="raise {budget} or add sizes to {sizes}; use {format:json}")
    assert str(error) == "raise --budget or add sizes to --sizes; use --format json"
    # a setting the front end does not name keeps its flag
    assert error.worded(WINDOW) == "raise the evals box or add sizes to --sizes; use a .json export"


def test_braces_that_name_no_setting_are_left_alone() -> None:
    error = WorkbenchError(template="{n} and {budget:3} and {not_a_setting:x} and {")
    assert str(error) == "{n} and --budget 3 and {not_a_setting:x} and {"
    assert word("{problem:n=4}", {}) == "{problem:n=4}"
    assert set(SETTING_FLAGS) >= {"budget", "sizes", "problem", "format"}


def test_a_plain_message_is_the_same_in_every_front_end_and_stays_printable() -> None:
    error = SpaceError("bad\nvalue {budget}")
    assert str(error) == error.worded(WINDOW) == "bad\\nvalue {budget}"
    assert WorkbenchError(template="x\x1b{budget}").worded(WINDOW) == "x\\x1bthe evals box"


def test_a_prefix_keeps_the_settings_of_the_error_it_explains() -> None:
    inner = WorkbenchError(template="raise {budget}")
    outer = inner.prefixed("{sizes}: ")
    assert str(outer) == "--sizes: raise --budget"
    assert outer.worded({**WINDOW, "sizes": lambda value: "the sizes field"}) == "the sizes field: raise the evals box"
    assert str(SpaceError("n=0 is not allowed").prefixed("{sizes}: ")) == "--sizes: n=0 is not allowed"


def test_the_settings_survive_a_trip_between_processes() -> None:
    error = pickle.loads(pickle.dumps(WorkbenchError(template="raise {budget}")))
    assert str(error) == "raise --budget" and error.worded(WINDOW) == "raise the evals box"
