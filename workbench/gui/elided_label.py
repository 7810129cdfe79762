"""A one-line label and a combo box that end in "…" when their text does not fit, with the whole text as tool tip.

A plain QLabel in a status bar either pushes its neighbours (the device and SIMULATED labels) or is
cut mid-letter under them; this one gives up width and says that it did. A plain combo box is
either as wide as its longest entry (a chart header that no longer fits beside two other charts,
worse in presentation mode's large fonts) or a fixed number of characters that cuts its current
entry mid-word; :class:`ElidedCombo` asks for its current entry's width and shrinks when the row
is short of room.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import (
    QComboBox, QFrame, QSizePolicy, QStyle, QStyleOptionComboBox, QStylePainter, QWidget,
)


class ElidedLabel(QFrame):
    def __init__(self, text: str = "", minimum_chars: int = 0) -> None:
        """``minimum_chars`` > 0: a label in a row that lays out by size hints (a tool bar) asks
        for about that many characters and takes whatever room the row has left over; asking for
        its whole text instead made the row shrink every other control (a combo box cut mid-word)."""
        super().__init__()
        self._text = ""
        self._minimum_chars = minimum_chars
        if minimum_chars > 0:
            self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        else:
            self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setMinimumHeight(self.fontMetrics().height())
        self.setText(text)

    def text(self) -> str:
        return self._text

    def setText(self, text: str) -> None:  # QLabel's name
        self._text = text
        self.setToolTip(text)
        self.update()

    def sizeHint(self) -> QSize:  # Qt override
        return QSize(self.minimumSizeHint().width(), self.fontMetrics().height() + 2)

    def minimumSizeHint(self) -> QSize:  # Qt override
        return QSize(self.fontMetrics().averageCharWidth() * self._minimum_chars, self.fontMetrics().height())

    def shown_text(self) -> str:
        """What is drawn at the current width."""
        return self.fontMetrics().elidedText(self._text, Qt.TextElideMode.ElideRight, max(self.contentsRect().width(), 0))

    def paintEvent(self, event: Any) -> None:  # Qt override
        super().paintEvent(event)
        painter = QPainter(self)
        painter.drawText(self.contentsRect(), int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter), self.shown_text())
        painter.end()


class ElidedCombo(QComboBox):
    """A combo box as wide as its current entry when there is room, narrower (down to
    ``minimum_chars`` characters, its entry ending in "…") when there is not; the tool tip says the
    whole entry and then what the box is for (``purpose``)."""

    def __init__(self, purpose: str = "", minimum_chars: int = 6, maximum_chars: int = 32,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._purpose = purpose
        self._minimum_chars = minimum_chars
        self._maximum_chars = maximum_chars
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self._hinted_text: str | None = None
        self._follow_current()

    def _follow_current(self) -> None:
        """Tool tip and size hint for the current entry. Checked on every paint, not on a signal:
        a chart that fills its choosers with signals blocked changes the entry without one, and a
        changed entry is always repainted."""
        text = self.currentText()
        if text == self._hinted_text:
            return
        self._hinted_text = text
        self.setToolTip("\n".join(part for part in (text, self._purpose) if part))
        self.updateGeometry()

    def _width_for(self, text_width: int) -> int:
        option = QStyleOptionComboBox()
        self.initStyleOption(option)
        size = self.style().sizeFromContents(QStyle.ContentsType.CT_ComboBox, option,
                                             QSize(text_width, self.fontMetrics().height()), self)
        return size.width()

    def sizeHint(self) -> QSize:  # Qt override
        hint = super().sizeHint()
        metrics = self.fontMetrics()
        text_width = min(metrics.horizontalAdvance(self.currentText()),
                         metrics.averageCharWidth() * self._maximum_chars)
        return QSize(self._width_for(max(text_width, metrics.averageCharWidth() * self._minimum_chars)), hint.height())

    def minimumSizeHint(self) -> QSize:  # Qt override
        hint = super().minimumSizeHint()
        return QSize(self._width_for(self.fontMetrics().averageCharWidth() * self._minimum_chars), hint.height())

    def shown_text(self) -> str:
        """The current entry as drawn at the current width."""
        self._follow_current()
        option = QStyleOptionComboBox()
        self.initStyleOption(option)
        field = self.style().subControlRect(QStyle.ComplexControl.CC_ComboBox, option,
                                            QStyle.SubControl.SC_ComboBoxEditField, self)
        return self.fontMetrics().elidedText(self.currentText(), Qt.TextElideMode.ElideRight, max(field.width(), 0))

    def paintEvent(self, event: Any) -> None:  # Qt override
        self._follow_current()
        if self.isEditable():
            super().paintEvent(event)
            return
        painter = QStylePainter(self)
        option = QStyleOptionComboBox()
        self.initStyleOption(option)
        painter.drawComplexControl(QStyle.ComplexControl.CC_ComboBox, option)
        option.currentText = self.shown_text()
        painter.drawControl(QStyle.ControlElement.CE_ComboBoxLabel, option)
