"""A box of decimals that reads numbers the way the window writes them: with a decimal point.

Every number the window shows (the table, the card, the charts' ticks, the examples) and every
number the command line takes is written with a point, whatever the system's locale. Qt's boxes
read typed text in the system's locale instead: under a comma-decimal locale ``0.02`` typed into a
limit became 2 (the point read as a group separator), and under the others ``0,02`` did. Either
way a limit a hundred times looser was in force without a word. So the box reads in the C locale,
and a comma typed out of habit is taken as the decimal point it means. A comma that may as well
separate thousands (``1,000``, ``1,000.5``) or several of them is refused instead: the box keeps
its value rather than guess a thousandfold.
"""

from __future__ import annotations

import re
from typing import Any

from PySide6.QtCore import QLocale
from PySide6.QtGui import QValidator
from PySide6.QtWidgets import QDoubleSpinBox


#: A number whose commas may separate thousands: a first group of 1 to 3 digits not led by 0.
_GROUPED = re.compile(r"\s*[-+]?[1-9]\d{0,2}(,\d{3})+(\.\d*)?\s*")


def point_for_comma(text: str) -> str | None:
    """``text`` with a typed comma read as the decimal point, or None when a comma in it need not
    be one (``1,000``, a comma beside a point, several commas)."""
    if "," not in text:
        return text
    if text.count(",") > 1 or "." in text or _GROUPED.fullmatch(text):
        return None
    return text.replace(",", ".")


class DecimalBox(QDoubleSpinBox):
    """A ``QDoubleSpinBox`` that writes and reads numbers with a point (see the module's docstring)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.setLocale(QLocale.c())
        # the value is taken on Enter or on leaving the box, not at each key; a text refused then
        # puts back the value from before the typing (``1,0`` on the way to ``1,000`` is no value).
        # Whatever reads the box on a key of its own (F5's Start) takes a typed value first:
        # see gui/window_runs.py's commit_typed_value.
        self.setKeyboardTracking(False)

    def read_typed(self, text: str) -> str | None:
        """The box's text (with its prefix and suffix, ``1,5 min``) with a comma read as the point,
        or None when a comma in it need not be one (:func:`point_for_comma`)."""
        start = len(self.prefix()) if self.prefix() and text.startswith(self.prefix()) else 0
        end = len(text) - len(self.suffix()) if self.suffix() and text.endswith(self.suffix()) else len(text)
        number = point_for_comma(text[start:end])
        return None if number is None else text[:start] + number + text[end:]

    def fixup(self, text: str) -> str:  # Qt override: what a text not taken becomes on Enter
        if self.read_typed(text) is None:  # (Qt's own read 1,000 as 1000: the value before it, instead)
            return self.prefix() + self.textFromValue(self.value()) + self.suffix()
        return super().fixup(text)

    def validate(self, text: str, position: int) -> Any:  # Qt override
        read = self.read_typed(text)
        if read is None:  # (not yet a number: Enter or leaving the box puts the value back)
            return QValidator.State.Intermediate, text, position
        # (judged as the point, but kept as typed: rewritten at once, "1," became "1." and the
        # "000" after it made 1.000)
        return super().validate(read, position)[0], text, position

    def valueFromText(self, text: str) -> float:  # Qt override
        return super().valueFromText(self.read_typed(text) or text)

