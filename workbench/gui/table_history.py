"""Undo and redo for an editable table's cells and rows (the kernel editor's slots, problem,
arguments and reference tables).

Why snapshots of the whole table rather than one command per edit: the tables are small (a few
dozen cells), and their rows change in several ways (a cell typed, a row added or removed, a
detection or a sync that fills many cells at once). A snapshot taken after each change undoes any
of them alike, where per-edit commands would need one kind for each, and a kind forgotten would
undo the wrong thing. The history is a plain list of row tuples, kept apart from Qt
(:class:`Snapshots`); :class:`TableHistory` connects it to a ``QTableWidget``.
"""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QTableWidget, QTableWidgetItem

Rows = tuple[tuple[str, ...], ...]

#: Snapshots kept to undo: far more than a person undoes, and each is a few hundred bytes.
DEPTH = 200


class Snapshots:
    """A linear history of states: ``record`` a new state after a change, ``undo`` and ``redo``
    step through it (a change after an undo drops what could have been redone)."""

    def __init__(self, state: Rows, depth: int = DEPTH) -> None:
        self.depth = depth
        self.reset(state)

    def reset(self, state: Rows) -> None:
        """Start over from ``state`` (a template opened: what came before is another template's)."""
        self.current = state
        self.undos: list[Rows] = []
        self.redos: list[Rows] = []

    def record(self, state: Rows) -> None:
        if state == self.current:  # (an edit that left every cell as it was is no step)
            return
        self.undos.append(self.current)
        del self.undos[: max(0, len(self.undos) - self.depth)]
        self.redos = []
        self.current = state

    def undo(self) -> Rows | None:
        """The state before the last change (None: nothing to undo)."""
        if not self.undos:
            return None
        self.redos.append(self.current)
        self.current = self.undos.pop()
        return self.current

    def redo(self) -> Rows | None:
        """The state an undo went back from (None: nothing to redo)."""
        if not self.redos:
            return None
        self.undos.append(self.current)
        self.current = self.redos.pop()
        return self.current


def table_rows(table: QTableWidget) -> Rows:
    """Every cell's text, row by row (an empty cell and a missing item alike: "")."""
    rows = []
    for row in range(table.rowCount()):
        cells = []
        for column in range(table.columnCount()):
            item = table.item(row, column)
            cells.append(item.text() if item is not None else "")
        rows.append(tuple(cells))
    return tuple(rows)


class TableHistory:
    """Ctrl+Z / Ctrl+Shift+Z (and Ctrl+Y: the platform's undo and redo keys) on ``table``: every
    change of its cells or rows is a step. While a cell is being edited the keys go to the cell's
    own editor, which undoes the typing there first. ``restored`` is called after an undo or redo
    has put a state back, as an edit would be followed (the form marks itself changed and checks
    again)."""

    def __init__(self, table: QTableWidget, restored: Callable[[], None]) -> None:
        self.table = table
        self.restored = restored
        self.snapshots = Snapshots(table_rows(table))
        self._restoring = False
        table.itemChanged.connect(self.record)
        table.model().rowsInserted.connect(self.record)
        table.model().rowsRemoved.connect(self.record)
        keys: list[tuple[QKeySequence, Callable[[], bool]]] = [
            *((key, self.undo) for key in QKeySequence.keyBindings(QKeySequence.StandardKey.Undo)),
            *((key, self.redo) for key in QKeySequence.keyBindings(QKeySequence.StandardKey.Redo))]
        if not any(key.matches(QKeySequence("Ctrl+Y")) == QKeySequence.SequenceMatch.ExactMatch for key, _ in keys):
            keys.append((QKeySequence("Ctrl+Y"), self.redo))  # (a key bound twice would fire neither)
        for key, step in keys:
            shortcut = QShortcut(key, table)
            shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            shortcut.activated.connect(step)

    def reset(self) -> None:
        """The table was filled anew (a template opened): no step back into another template."""
        self.snapshots.reset(table_rows(self.table))

    def record(self, *_: object) -> None:
        if not self._restoring and not self.table.signalsBlocked():
            self.snapshots.record(table_rows(self.table))

    def undo(self) -> bool:
        """Put the table back as it was before its last change; False when there is none."""
        return self._put(self.snapshots.undo())

    def redo(self) -> bool:
        return self._put(self.snapshots.redo())

    def _put(self, rows: Rows | None) -> bool:
        if rows is None:
            return False
        table = self.table
        current = table.currentRow(), table.currentColumn()
        self._restoring = True
        try:
            table.blockSignals(True)  # one change for the form, not one per cell
            table.setRowCount(len(rows))
            for row, cells in enumerate(rows):
                for column, text in enumerate(cells):
                    item = table.item(row, column)
                    if item is None:
                        table.setItem(row, column, QTableWidgetItem(text))
                    elif item.text() != text:
                        item.setText(text)
        finally:
            table.blockSignals(False)
            self._restoring = False
        if rows:  # the cursor stays where it was, or on the last row left
            table.setCurrentCell(min(max(current[0], 0), len(rows) - 1), max(current[1], 0))
        self.restored()
        return True
