"""Table cells that a viewport edge cuts are elided, never cut into another number.

A right-aligned 256 in a column half scrolled out of view was drawn as "25" (the viewport cut its
last digit), and a column cut on its left showed "56": a plausible, wrong figure, read on a
projector as the value. The delegate draws such a cell's text inside the part of the cell that
is visible, elided with "…" when it does not fit there, so a cut number reads as cut.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRect, Qt
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QAbstractItemView, QStyledItemDelegate, QStyleOptionViewItem


class VisiblePartDelegate(QStyledItemDelegate):
    """Draws each cell's text in the part of the cell inside the view's viewport."""

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


def elide_cut_cells(view: Any) -> VisiblePartDelegate:
    """Install :class:`VisiblePartDelegate` on ``view`` (kept by the view as its parent)."""
    delegate = VisiblePartDelegate(view)
    view.setItemDelegate(delegate)
    return delegate
