"""Which of a table's columns are shown, and in what order: the person's choice, kept by column key.

A table with a column per slot and per metric is wider than a laptop screen; which columns matter
depends on the person and the question, so they choose: right-click the header for a checkable
entry per column (and *Show all columns*, *Default column order*), drag a header to move its
column. The choice is remembered in the window's settings by column *key* (``slot:block_size_x``,
``metric:registers``, ``status``), never by column number: the columns of another kernel (other
slots, other metrics) are neither hidden nor moved by a choice made for this one, and a metric
column that arrives mid-run takes its remembered place.

Hidden columns are a set of keys; the order is a list of keys, stored only once the person moved
a column (until then the table's own order stands, and follows the program when it changes). The
stored order keeps the keys of columns absent from the table now, each after the key it followed,
so going from one kernel to another and back keeps both kernels' arrangements.

A table may hide columns by a rule of its own (a metric no trial reports); that rule and the
person's choice compose: a column is shown when the person has not hidden it *and* the rule does
not hide it. Unticking a column hides it whatever the rule says; ticking it again hands it back to
the rule, so a metric column that is empty in this session stays hidden (its menu entry says so)
and appears by itself as soon as a trial reports a value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from PySide6.QtCore import QObject, QPoint, Qt
from PySide6.QtWidgets import QMenu, QTableView

from workbench.gui.settings_store import SettingsStore

#: At most this many keys are kept per list in the settings (the columns of many kernels add up;
#: beyond it the keys of columns not in the table now are dropped, the last ones first).
MAX_STORED_KEYS = 400
#: A stored key longer than this is not one the workbench wrote (a metric's name is capped far lower).
MAX_KEY_CHARS = 4096
#: Menu entries longer than this (a metric name from a file can be any length) are elided.
MAX_MENU_CHARS = 48


class KeyedColumns(Protocol):
    """A table model whose columns have stable keys (:class:`~workbench.gui.results_table.TrialTableModel`)."""

    def columnCount(self, parent: Any = ...) -> int: ...

    def column_key(self, column: int) -> str: ...

    def column_of(self, key: str) -> int: ...

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = ...) -> Any: ...


def stored_keys(value: object) -> list[str]:
    """Column keys read back from the settings, whatever an edit or a damaged file left there: a
    list of strings (one string alone reads back from an ini file as that string); anything else
    (a number, a point, a list of other things) gives none, so the window starts with its defaults."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)):
        return []
    keys: dict[str, None] = {}  # in order, each once; a long list costs one step per item, not one per pair
    for item in value:
        if isinstance(item, str) and item and len(item) <= MAX_KEY_CHARS and "\0" not in item:
            keys.setdefault(item, None)
            if len(keys) == MAX_STORED_KEYS:
                break
    return list(keys)


def merge_order(preferred: Sequence[str], present: Sequence[str]) -> list[str]:
    """``present`` reordered: its keys that ``preferred`` names in ``preferred``'s order, each other
    key right after the key it follows in ``present`` (at the front when none does).

    With ``preferred`` the person's stored order and ``present`` the table's own order, this is the
    order to show: a column the person never placed (another kernel's slot, a new metric) stands
    beside its neighbour in the table's own order. With ``preferred`` the order now shown and
    ``present`` the stored order followed by the table's keys, it is the order to store: the
    columns absent now keep their places for when they come back."""
    keys = set(present)
    placed = [key for key in dict.fromkeys(preferred) if key in keys]
    anchors = set(placed)
    followers: dict[str | None, list[str]] = {}
    anchor: str | None = None
    for key in dict.fromkeys(present):
        if key in anchors:
            anchor = key
        else:
            followers.setdefault(anchor, []).append(key)
    order = list(followers.get(None, []))
    for key in placed:
        order.append(key)
        order += followers.get(key, [])
    return order


class ColumnChoice(QObject):
    """The person's shown columns and column order for one table view, applied by key and kept in
    ``settings`` under ``group`` (``None``: for this window only, not remembered).

    ``automatic(key)`` is the table's own rule: a short reason why it hides the column now
    (``"no values yet"``), or ``None`` to show it. The table calls :meth:`apply` after a model reset,
    :meth:`place_inserted` after columns are inserted, and :meth:`update_hidden` when its rule's
    answer may have changed."""

    def __init__(self, view: QTableView, table: KeyedColumns, settings: SettingsStore | None, group: str,
                 automatic: Callable[[str], str | None] = lambda _key: None) -> None:
        super().__init__(view)
        self.view = view
        self.table = table
        self.settings = settings
        self.automatic = automatic
        self._hidden_key = f"{group}/hidden_columns"
        self._order_key = f"{group}/column_order"
        self.hidden: list[str] = stored_keys(settings.value(self._hidden_key)) if settings is not None else []
        self.order: list[str] = stored_keys(settings.value(self._order_key)) if settings is not None else []
        self._placing = False  # moving sections to the chosen order: not a move of the person's
        header = view.horizontalHeader()
        header.setSectionsMovable(True)
        header.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        header.customContextMenuRequested.connect(self._on_menu_requested)
        header.sectionMoved.connect(self._on_section_moved)

    # --- what the table shows ------------------------------------------------------------------
    def keys(self) -> list[str]:
        """The table's column keys in its own order."""
        return [self.table.column_key(column) for column in range(self.table.columnCount())]

    def shown_order(self) -> list[str]:
        """The column keys as the header shows them, left to right (hidden ones included)."""
        header = self.view.horizontalHeader()
        return [self.table.column_key(header.logicalIndex(visual)) for visual in range(header.count())]

    def is_shown(self, key: str) -> bool:
        return not self.view.isColumnHidden(self.table.column_of(key))

    def apply(self) -> None:
        """The chosen order and hidden columns on the table's present columns (after a reset)."""
        self._place(merge_order(self.order, self.keys()))
        self.update_hidden()

    def place_inserted(self, first: int, last: int) -> None:
        """Columns ``first..last`` inserted mid-run: each where the stored order puts it, else beside
        its neighbour in the table's order (Qt puts it at its column number, which among moved
        columns is anywhere), hidden when the person hid it."""
        if self.order:  # else nothing was moved, and Qt's place is the table's own order
            self._place(merge_order(self.order, self.keys()))
        self.update_hidden(range(first, last + 1))

    def update_hidden(self, columns: Iterable[int] | None = None) -> None:
        """Each column (of ``columns``, or all) hidden when the person hid it or the table's rule does.
        A choice that would leave no column at all (another kernel's columns all hidden, a settings
        file edited by hand) is set aside for this table, or the header to bring them back is gone."""
        keys = self.keys()
        chosen = set(self.hidden)
        want = [key in chosen or self.automatic(key) is not None for key in keys]
        if keys and all(want):
            want = [self.automatic(key) is not None for key in keys]
        for column in range(len(keys)) if columns is None else columns:
            if self.view.isColumnHidden(column) != want[column]:
                self.view.setColumnHidden(column, want[column])

    def _place(self, order: Sequence[str]) -> None:
        header = self.view.horizontalHeader()
        column = {key: index for index, key in enumerate(self.keys())}  # column_of per key: n² for many metrics
        self._placing = True
        try:
            for visual, key in enumerate(order):
                now = header.visualIndex(column[key])
                if now != visual:
                    header.moveSection(now, visual)
        finally:
            self._placing = False

    # --- the person's choice -------------------------------------------------------------------
    def set_shown(self, key: str, shown: bool) -> None:
        """Show (hand back to the table's rule) or hide the column ``key``, and remember it."""
        if shown:
            self.hidden = [k for k in self.hidden if k != key]
        elif key not in self.hidden:
            self.hidden = ([key] + self.hidden)[:MAX_STORED_KEYS]  # the newest first: a long list drops the oldest
        self.update_hidden()
        self._store(self._hidden_key, self.hidden)

    def show_all(self) -> None:
        """Every column of this table the person hid comes back (another kernel's hidden slots stay
        hidden for that kernel)."""
        present = set(self.keys())
        self.hidden = [key for key in self.hidden if key not in present]
        self.update_hidden()
        self._store(self._hidden_key, self.hidden)

    def default_order(self) -> None:
        """The table's own order again, and no stored order."""
        self.order = []
        self._place(self.keys())
        self._store(self._order_key, self.order)

    def _on_section_moved(self, _logical: int, _old: int, _new: int) -> None:
        if self._placing:
            return
        current = self.keys()
        kept = self.order + [key for key in current if key not in self.order]
        order = merge_order(self.shown_order(), kept)
        if len(order) > MAX_STORED_KEYS:  # drop keys of absent columns, the last first
            present = set(current)
            surplus = len(order) - MAX_STORED_KEYS
            for index in range(len(order) - 1, -1, -1):
                if surplus and order[index] not in present:
                    del order[index]
                    surplus -= 1
        self.order = order
        self._store(self._order_key, self.order)

    def _store(self, key: str, value: list[str]) -> None:
        if self.settings is None:
            return
        if value:
            self.settings.setValue(key, value)
        else:
            self.settings.remove(key)

    # --- the header's menu ---------------------------------------------------------------------
    def menu(self, clicked: str | None = None) -> QMenu:
        """The header's context menu (see :meth:`fill`)."""
        menu = QMenu(self.view)
        self.fill(menu, clicked)
        return menu

    def fill(self, menu: QMenu, clicked: str | None = None) -> None:
        """*Hide* the ``clicked`` column (the header right-clicked), a checkable entry per column,
        left to right as shown (ticked: the person has not hidden it; a column the table's rule
        hides says so), then *Show all columns* and *Default column order*. The last column shown
        cannot be hidden: with none, no header is left to click. (Also the window's View menu,
        rebuilt as it opens: the menu for keyboard users and for those who do not right-click.)"""
        menu.clear()
        shown = [key for key in self.keys() if self.is_shown(key)]

        def title(key: str) -> str:
            return self._menu_title(menu, key)

        if clicked is not None and clicked in shown:
            hide = menu.addAction(f"Hide “{title(clicked)}”")
            hide.setEnabled(shown != [clicked])
            hide.triggered.connect(lambda: self.set_shown(clicked, False))
            menu.addSeparator()
        chosen = set(self.hidden)
        for key in self.shown_order():
            reason = self.automatic(key)
            text = f"{title(key)} (hidden: {reason})" if reason is not None and key not in chosen else title(key)
            action = menu.addAction(text)
            action.setCheckable(True)
            action.setChecked(key not in chosen)
            action.setData(key)
            action.setEnabled(shown != [key])
            action.toggled.connect(lambda on, k=key: self.set_shown(k, on))
        menu.addSeparator()
        show_all = menu.addAction("Show all columns")
        show_all.setEnabled(bool(chosen & set(self.keys())))
        show_all.triggered.connect(self.show_all)
        reset = menu.addAction("Default column order")
        reset.setEnabled(self.shown_order() != self.keys())
        reset.triggered.connect(self.default_order)

    def _menu_title(self, menu: QMenu, key: str) -> str:
        """Column ``key``'s header as a menu entry: elided in the middle past a menu's width."""
        metrics = menu.fontMetrics()
        limit = metrics.horizontalAdvance("M" * (MAX_MENU_CHARS // 2))
        text = str(self.table.headerData(self.table.column_of(key), Qt.Orientation.Horizontal))
        return metrics.elidedText(text, Qt.TextElideMode.ElideMiddle, limit).replace("&", "&&")  # '&': a shortcut

    def fill_sort(self, menu: QMenu) -> None:
        """View > Sort results by: a header's click, by keyboard (sorting needed a mouse). An entry
        per column shown, left to right; the one sorted by is ticked with its order, and choosing
        it again reverses the order, as a second click on its header does."""
        menu.clear()
        header = self.view.horizontalHeader()
        current, order = header.sortIndicatorSection(), header.sortIndicatorOrder()
        for key in self.shown_order():
            if not self.is_shown(key):
                continue
            column = self.table.column_of(key)
            text = self._menu_title(menu, key)
            if column == current:
                text += " (descending)" if order == Qt.SortOrder.DescendingOrder else " (ascending)"
            action = menu.addAction(text)
            action.setCheckable(True)
            action.setChecked(column == current)
            action.triggered.connect(lambda _=False, c=column: self.sort_by(c))

    def sort_by(self, column: int) -> None:
        """Sort by ``column``, ascending; descending when it is sorted ascending already."""
        header = self.view.horizontalHeader()
        again = header.sortIndicatorSection() == column and header.sortIndicatorOrder() == Qt.SortOrder.AscendingOrder
        header.setSortIndicator(column, Qt.SortOrder.DescendingOrder if again else Qt.SortOrder.AscendingOrder)

    def _on_menu_requested(self, pos: QPoint) -> None:
        column = self.view.horizontalHeader().logicalIndexAt(pos)
        menu = self.menu(self.table.column_key(column) if column >= 0 else None)
        menu.exec(self.view.horizontalHeader().mapToGlobal(pos))
        menu.deleteLater()
