"""A one-line label that ends in "…" when its text does not fit, with the whole text as tool tip.

A plain QLabel in a status bar either pushes its neighbours (the device and SIMULATED labels) or is
cut mid-letter under them; this one gives up width and says that it did.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QFrame, QSizePolicy


class ElidedLabel(QFrame):
    def __init__(self, text: str = "") -> None:
        super().__init__()
        self._text = ""
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setMinimumHeight(self.fontMetrics().height())
        self.setText(text)

    def text(self) -> str:
        return self._text

    def setText(self, text: str) -> None:  # QLabel's name
        self._text = text
        self.setToolTip(text)
        self.update()

    def shown_text(self) -> str:
        """What is drawn at the current width."""
        return self.fontMetrics().elidedText(self._text, Qt.TextElideMode.ElideRight, max(self.contentsRect().width(), 0))

    def paintEvent(self, event: Any) -> None:  # Qt override
        super().paintEvent(event)
        painter = QPainter(self)
        painter.drawText(self.contentsRect(), int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter), self.shown_text())
        painter.end()
