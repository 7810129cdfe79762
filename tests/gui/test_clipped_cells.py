"""A number in a column the viewport cuts is drawn elided inside the visible part, never cut."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QImage, QPainter
from PySide6.QtWidgets import QStyledItemDelegate, QStyleOptionViewItem, QTableWidget, QTableWidgetItem

from workbench.gui.clipped_cells import elide_cut_cells


def _table(qtbot, width: int) -> QTableWidget:
    table = QTableWidget(1, 3)
    qtbot.addWidget(table)
    for column, text in enumerate(("0.02818", "256", "0.02785")):
        item = QTableWidgetItem(text)
        item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        table.setItem(0, column, item)
        table.setColumnWidth(column, 90)
    table.resize(width, 120)
    table.show()
    qtbot.waitExposed(table)
    return table


def test_a_cell_the_viewport_cuts_is_drawn_elided_in_its_visible_part(qtbot, monkeypatch) -> None:
    """A right-aligned 256 half out of view was drawn as "25" (and 0.02818 as "0.0281"): the
    text is now laid out in the visible part of the cell, elided there."""
    drawn: list[tuple[int, int, int, Qt.TextElideMode]] = []
    plain = QStyledItemDelegate.paint

    def recording(self, painter, option, index):  # what each cell is laid out in
        drawn.append((index.column(), option.rect.left(), option.rect.right(), option.textElideMode))
        plain(self, painter, option, index)

    monkeypatch.setattr(QStyledItemDelegate, "paint", recording)
    table = _table(qtbot, 160)
    delegate = elide_cut_cells(table)
    viewport = table.viewport().rect()
    assert 90 < viewport.width() < 180  # the second column is cut by the viewport's right edge
    image = QImage(table.viewport().size(), QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    for column in range(2):
        option = QStyleOptionViewItem()
        option.rect = table.visualRect(table.model().index(0, column))
        option.textElideMode = Qt.TextElideMode.ElideRight
        delegate.paint(painter, option, table.model().index(0, column))
    painter.end()
    whole, cut = drawn[-2], drawn[-1]
    first, second = (table.visualRect(table.model().index(0, column)) for column in range(2))
    assert whole[1:3] == (first.left(), first.right())  # a cell in full view is drawn as it is
    assert second.right() > viewport.right()  # cut by the viewport ...
    assert cut[0] == 1 and cut[1] == second.left() and cut[2] == viewport.right()  # ... drawn inside it
    assert cut[3] == Qt.TextElideMode.ElideRight


def test_a_cell_in_full_view_is_drawn_as_before(qtbot) -> None:
    table = _table(qtbot, 400)
    elide_cut_cells(table)
    table.viewport().grab()  # paints every cell through the delegate without a failure
    assert table.item(0, 1).text() == "256"
