"""Tests that read ../shared fail, saying where the data goes, unless the opt-out is set."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest


def test_a_missing_landscape_fails_with_where_it_is_expected(landscape: Callable[[str], Path], tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    env = landscape.__globals__["SKIP_SHARED_ENV"]
    monkeypatch.setitem(landscape.__globals__, "SHARED_LANDSCAPES", tmp_path)
    monkeypatch.delenv(env, raising=False)
    with pytest.raises(pytest.fail.Exception) as failed:
        landscape("absent.json")
    message = str(failed.value)
    assert str(tmp_path / "absent.json") in message and "../shared/landscapes" in message and f"{env}=1" in message
    monkeypatch.setenv(env, "1")
    with pytest.raises(pytest.skip.Exception):
        landscape("absent.json")
    (tmp_path / "present.json").write_text("{}")
    assert landscape("present.json") == tmp_path / "present.json"
