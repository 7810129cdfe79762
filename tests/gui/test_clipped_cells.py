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


def test_a_cell_whose_text_does_not_fit_shows_it_whole_in_a_tool_tip(qtbot, monkeypatch) -> None:
    """A portability config cut after its third slot ("vector_width=2, unroll=4, …") hid the slot
    that told two rows apart, with no way to read it but widening the window."""
    from PySide6.QtCore import QEvent
    from PySide6.QtGui import QHelpEvent
    from PySide6.QtWidgets import QApplication, QToolTip

    table = _table(qtbot, 400)
    config = "block_size=256, items_per_thread=32, vector_width=2, unroll=4, strategy=warp_shuffle"
    table.item(0, 2).setText(config)
    table.item(0, 0).setToolTip("its own tip")
    elide_cut_cells(table)
    shown: list[str] = []
    monkeypatch.setattr(QToolTip, "showText", lambda _at, text, *_args: shown.append(text))

    def tip_at(column: int) -> list[str]:
        shown.clear()
        spot = table.visualRect(table.model().index(0, column)).center()
        QApplication.sendEvent(table.viewport(), QHelpEvent(QEvent.Type.ToolTip, spot,
                                                            table.viewport().mapToGlobal(spot)))
        return list(shown)

    assert tip_at(2) == [config]  # cut in its 90 pixels: shown whole
    assert tip_at(1) == []  # "256" fits: no tip
    assert tip_at(0) == []  # a cell's own tip is Qt's to show, as before
    table.setColumnWidth(2, table.fontMetrics().horizontalAdvance(config) + 40)
    table.resize(table.columnWidth(2) + 300, 120)  # the whole cell in view, the text whole in it
    qtbot.wait(20)
    assert tip_at(2) == []
