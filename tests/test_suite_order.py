"""The suite's longest-first order names files that exist (a renamed file would silently drop out)."""

from __future__ import annotations

from pathlib import Path

from suite_order import LONGEST_FILES


def test_every_longest_file_is_a_test_file_of_the_suite() -> None:
    here = Path(__file__).parent
    missing = [name for name in LONGEST_FILES if not (here / name).is_file()]
    assert missing == [], f"LONGEST_FILES in tests/suite_order.py lists files that are gone: {missing}"
