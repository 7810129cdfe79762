"""An error names the settings it tells the person to change; each front end words them.

``str()`` is the command line's wording (its flags); ``worded`` is another front end's (the
window names its controls). See ``workbench/core/errors.py``.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from workbench.core.errors import SETTING_FLAGS, SpaceError, WorkbenchError, quoted, word

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


def test_user_data_in_a_message_is_shown_as_it_is_never_worded_as_a_setting() -> None:
    """A path, a problem value or a quoted file may hold braces that read like a setting
    (``{budget}``) or break one (``a}b``): quoted, they are text in every front end."""
    path, value = "/data/{budget}/run.json", "a}b"
    error = WorkbenchError(template=f"replays {quoted(path)}; {{problem:mode={quoted(value)}}} is not swept")
    assert str(error) == "replays /data/{budget}/run.json; --set mode=a}b is not swept"
    window = {"problem": lambda v: f"{v} in the problem field"}
    assert error.worded(window) == "replays /data/{budget}/run.json; mode=a}b in the problem field is not swept"


def test_a_prefix_on_a_plain_message_keeps_its_braces_and_its_class() -> None:
    inner = SpaceError("problem parameter 'n'='{sizes}' is not a number")
    outer = inner.prefixed("{sizes}: ")
    assert str(outer) == "--sizes: problem parameter 'n'='{sizes}' is not a number"
    assert isinstance(outer, SpaceError)


def test_sizes_given_as_braces_are_quoted_back_verbatim_by_the_command_line(tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from workbench.cli import main

    assert main(["tune", "vector_add", "--backend", "sim", "--sizes", "n={budget}", "--budget", "2",
                 "--out", str(tmp_path / "x.json")]) != 0
    assert "got '{budget}'" in capsys.readouterr().err
