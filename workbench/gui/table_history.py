"""Undo and redo for a form's editable tables (the kernel editor's slots, problem, arguments and
reference tables), as one history.

Why one history for the tables together: they describe one template, and the form keeps them in
step (an argument made an output gains a row in the reference table). Each table undoing on its
own put them out of step, the form then synced them back, and the sync counted as a new change
that left undo with nothing to do. A step here is what one change did to every table, so undo and
redo always restore a state the form itself made.

Why snapshots of the tables rather than one command per edit: the tables are small (a few dozen
cells), and their rows change in several ways (a cell typed, a row added or removed, a detection
or a sync that fills many cells at once). A snapshot taken after each change undoes any of them
alike, where per-edit commands would need one kind for each, and a kind forgotten would undo the
wrong thing. The history itself is plain data, kept apart from Qt (:class:`Snapshots`).
"""

from __future__ import annotations

from typing import Callable, Generic, Sequence, TypeVar

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QTableWidget, QTableWidgetItem

Rows = tuple[tuple[str, ...], ...]
State = TypeVar("State")

#: Snapshots kept to undo: far more than a person undoes, and each is a few kilobytes at most.
DEPTH = 200


class Snapshots(Generic[State]):
    """A linear history of states: ``record`` a new state after a change, ``undo`` and ``redo``
    step through it (a change after an undo drops what could have been redone)."""

    def __init__(self, state: State, depth: int = DEPTH) -> None:
        self.depth = depth
        self.reset(state)

    def reset(self, state: State) -> None:
        """Start over from ``state`` (a template opened: what came before is another template's)."""
        self.current = state
        self.undos: list[State] = []
        self.redos: list[State] = []

    def record(self, state: State) -> None:
        if state == self.current:  # (an edit that left every cell as it was is no step)
            return
        self.undos.append(self.current)
        del self.undos[: max(0, len(self.undos) - self.depth)]
        self.redos = []
        self.current = state

    def undo(self) -> State | None:
        """The state before the last change (None: nothing to undo)."""
        return self._step(self.undos, self.redos)

    def redo(self) -> State | None:
        """The state an undo went back from (None: nothing to redo)."""
        return self._step(self.redos, self.undos)

    def _step(self, source: list[State], target: list[State]) -> State | None:
        """The last state of ``source`` made current, the current one kept on ``target``."""
        if not source:
            return None
        target.append(self.current)
        self.current = source.pop()
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


def _undo_keys() -> list[tuple[QKeySequence, bool]]:
    """The platform's undo and redo keys (True: redo), and Ctrl+Y for redo where it is not bound
    already (a key bound twice would fire neither)."""
    keys = [(key, False) for key in QKeySequence.keyBindings(QKeySequence.StandardKey.Undo)]
    keys += [(key, True) for key in QKeySequence.keyBindings(QKeySequence.StandardKey.Redo)]
    ctrl_y = QKeySequence("Ctrl+Y")
    if not any(key.matches(ctrl_y) == QKeySequence.SequenceMatch.ExactMatch for key, _ in keys):
        keys.append((ctrl_y, True))
    return keys


class TablesHistory:
    """Ctrl+Z / Ctrl+Shift+Z (and Ctrl+Y) in any of ``tables``: every change of their cells or rows
    is a step, for the tables together. While a cell is being edited the keys go to the cell's own
    editor, which undoes the typing there first.

    Changes made with a table's signals blocked (a form filling rows at once) are no step until
    :meth:`record` is called, which such code does once it is done, so that one action of the form
    is one step; :meth:`reset` starts over (a template opened). ``restored`` is called after an
    undo or redo has put a state back, as an edit would be followed (the form marks itself
    changed and checks again)."""

    def __init__(self, tables: Sequence[QTableWidget], restored: Callable[[], None]) -> None:
        self.tables = list(tables)
        self.restored = restored
        self.snapshots: Snapshots[tuple[Rows, ...]] = Snapshots(self._state())
        self._restoring = False
        for table in self.tables:
            table.itemChanged.connect(self._noticed)
            table.model().rowsInserted.connect(self._noticed)
            table.model().rowsRemoved.connect(self._noticed)
            for key, redo in _undo_keys():
                shortcut = QShortcut(key, table)
                shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
                shortcut.activated.connect(self.redo if redo else self.undo)

    def _state(self) -> tuple[Rows, ...]:
        return tuple(table_rows(table) for table in self.tables)

    def reset(self) -> None:
        """The tables were filled anew: no step back into what they held before."""
        self.snapshots.reset(self._state())

    def record(self) -> None:
        """Take the tables as they are now as one step (nothing when they are as they were)."""
        self.snapshots.record(self._state())

    def _noticed(self, *_: object) -> None:
        if not self._restoring and not any(table.signalsBlocked() for table in self.tables):
            self.record()

    def undo(self) -> bool:
        """Put the tables back as they were before their last change; False when there is none."""
        return self._put(self.snapshots.undo())

    def redo(self) -> bool:
        return self._put(self.snapshots.redo())

    def _put(self, state: tuple[Rows, ...] | None) -> bool:
        if state is None:
            return False
        self._restoring = True
        try:
            for table, rows in zip(self.tables, state):
                if table_rows(table) != rows:
                    _fill(table, rows)
        finally:
            self._restoring = False
        self.restored()
        return True


def _fill(table: QTableWidget, rows: Rows) -> None:
    """``table`` holding ``rows``, as one change for whoever listens (its signals held meanwhile),
    the cursor where it was or on the last row left."""
    current = table.currentRow(), table.currentColumn()
    table.blockSignals(True)
    try:
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
    if rows:
        table.setCurrentCell(min(max(current[0], 0), len(rows) - 1), max(current[1], 0))
