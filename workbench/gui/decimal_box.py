"""A box of decimals that reads numbers the way the window writes them: with a decimal point.

Every number the window shows (the table, the card, the charts' ticks, the examples) and every
number the command line takes is written with a point, whatever the system's locale. Qt's boxes
read typed text in the system's locale instead: under a comma-decimal locale ``0.02`` typed into a
limit became 2 (the point read as a group separator), and under the others ``0,02`` did. Either
way a limit a hundred times looser was in force without a word. So the box reads in the C locale,
and a comma typed out of habit is taken as the decimal point it means (a box of decimals has no
use for a thousands separator).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QLocale
from PySide6.QtWidgets import QDoubleSpinBox


def point_for_comma(text: str) -> str:
    """``text`` with a typed comma read as the decimal point."""
    return text.replace(",", ".")


class DecimalBox(QDoubleSpinBox):
    """A ``QDoubleSpinBox`` that writes and reads numbers with a point (see the module's docstring)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.setLocale(QLocale.c())

    def validate(self, text: str, position: int) -> Any:  # Qt override
        return super().validate(point_for_comma(text), position)

    def valueFromText(self, text: str) -> float:  # Qt override
        return super().valueFromText(point_for_comma(text))
