"""A side column that scrolls up and down when the window is shorter than the column.

The left column (objective sliders above the recommended-config tabs) asks a minimum height that,
in presentation mode's large fonts, is more than a 1440x900 screen leaves below the tool bars; as
part of the window's minimum it made the window taller than the screen, cutting off its bottom. In
this scroll area the column keeps its minimum width (nothing is cut sideways) and gives up height
by scrolling instead.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtWidgets import QScrollArea, QWidget

SHORTEST = 120  # px: the column's minimum height in the window; the rest is reached by scrolling


class ColumnScroll(QScrollArea):
    def __init__(self, column: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.column = column
        self.setWidget(column)
        self.setWidgetResizable(True)
        self.setFrameShape(QScrollArea.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        # no Tab stop of its own (it showed nothing): the controls inside it take the focus, and the
        # area scrolls to the one that has it
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        column.installEventFilter(self)

    def _column_width(self, hint: QSize) -> int:
        bar = self.verticalScrollBar()
        return max(self.column.minimumWidth(), hint.width()) + (bar.sizeHint().width() if bar is not None else 0)

    def minimumSizeHint(self) -> QSize:  # Qt override
        return QSize(self._column_width(self.column.minimumSizeHint()), SHORTEST)

    def sizeHint(self) -> QSize:  # Qt override
        return QSize(self._column_width(self.column.sizeHint()), self.column.sizeHint().height())

    def eventFilter(self, watched: Any, event: QEvent) -> bool:  # Qt override
        """The column's layout changed (a new font, a panel shown): so did this area's hints."""
        if watched is self.column and event.type() == QEvent.Type.LayoutRequest:
            self.updateGeometry()
        return super().eventFilter(watched, event)
