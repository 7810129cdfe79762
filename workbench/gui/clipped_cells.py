"""Table cells that a viewport edge cuts are elided, never cut into another number.

A right-aligned 256 in a column half scrolled out of view was drawn as "25" (the viewport cut its
last digit), and a column cut on its left showed "56": a plausible, wrong figure, read on a
projector as the value. The delegate draws such a cell's text inside the part of the cell that
is visible, elided with "…" when it does not fit there, so a cut number reads as cut.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent, QModelIndex, QPersistentModelIndex, QRect, Qt
from PySide6.QtGui import QHelpEvent, QPainter
from PySide6.QtWidgets import QAbstractItemView, QStyledItemDelegate, QStyleOptionViewItem, QToolTip


class VisiblePartDelegate(QStyledItemDelegate):
    """Draws each cell's text in the part of the cell inside the view's viewport, and shows a cell
    whose text does not fit it whole in a tool tip (a cell without one of its own): a
    portability config cut after its third slot hid the slot that told two rows apart."""

    def __init__(self, view: QAbstractItemView) -> None:
        super().__init__(view)
        self._view = view

    def paint(self, painter: QPainter, option: QStyleOptionViewItem,
              index: QModelIndex | QPersistentModelIndex) -> None:  # Qt override
        rect: QRect = option.rect
        visible = rect.intersected(self._view.viewport().rect())
        if visible.isEmpty() or visible == rect:
            super().paint(painter, option, index)
            return
        narrowed = QStyleOptionViewItem(option)
        narrowed.rect = visible
        narrowed.textElideMode = Qt.TextElideMode.ElideRight
        super().paint(painter, narrowed, index)

    def helpEvent(self, event: QHelpEvent, view: QAbstractItemView, option: QStyleOptionViewItem,
                  index: QModelIndex | QPersistentModelIndex) -> bool:  # Qt override
        if event.type() == QEvent.Type.ToolTip and index.isValid() and not index.data(Qt.ItemDataRole.ToolTipRole):
            text = index.data(Qt.ItemDataRole.DisplayRole)
            shown = view.visualRect(index).intersected(view.viewport().rect())
            # (a cell's margins, a few pixels, aside)
            if isinstance(text, str) and text and option.fontMetrics.horizontalAdvance(text) + 8 > shown.width():
                QToolTip.showText(event.globalPos(), text, view)
                return True
        return super().helpEvent(event, view, option, index)


def elide_cut_cells(view: Any) -> VisiblePartDelegate:
    """Install :class:`VisiblePartDelegate` on ``view`` (kept by the view as its parent)."""
    delegate = VisiblePartDelegate(view)
    view.setItemDelegate(delegate)
    return delegate
