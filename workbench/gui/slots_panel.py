"""The template's slots grouped by concern, their values as toggles, and the editable restrictions.

Edits derive a new :class:`SearchSpace` (``with_domains`` / ``with_restrictions``) with a live count
of valid configs; an invalid value or expression is explained in one line and nothing changes.
The space is used by the next run; measured trials are never discarded (a trial outside the new
space stays in the session and in every view).
"""

from __future__ import annotations

from typing import Any, Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QHBoxLayout, QLabel, QLineEdit, QPlainTextEdit, QPushButton, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget,
)

from workbench.core.errors import WorkbenchError
from workbench.core.domain.narrowing import narrowings, split_narrowings
from workbench.core.domain.assignments import parse_value
from workbench.core.domain.space import GROUPS, SearchSpace, Slot
from workbench.gui.background import Background
from workbench.gui.text import WARNING_TEXT, plain_tip
from workbench.gui.timers import single_shot

ROLE_SLOT = Qt.ItemDataRole.UserRole + 1
ROLE_VALUE = Qt.ItemDataRole.UserRole + 2

#: A slot with more values than this is one line in the tree, not a toggle per value: a python
#: benchmark may declare a slot of up to a million values, and an item for each froze the window
#: for seconds (100,000 values: 6 s) when the benchmark was chosen. Its values are narrowed with a
#: restriction instead, which also says which ones in a way a list of toggles cannot.
MAX_TOGGLED_VALUES = 512


class SlotsPanel(QWidget):
    """Edits a base space; ``space`` is the edited result (None when no template is chosen)."""

    def __init__(self, on_space_changed: Callable[[SearchSpace], None] | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.base: SearchSpace | None = None
        self.from_session = False  # (see set_space)
        self._counted: SearchSpace | None = None  # the space whose count the label waits for
        #: whether the base's domains are all its code accepts (a template's), see :meth:`set_space`
        self.fixed = False
        self.space: SearchSpace | None = None
        #: the values of the slots too long to show a toggle each (:data:`MAX_TOGGLED_VALUES`), in order
        self.long_values: dict[str, list[Any]] = {}
        self.on_space_changed = on_space_changed
        self.tree = QTreeWidget()
        self.tree.setAccessibleName("Slots and their values")
        self.tree.setHeaderLabels(["slot / value", "doc"])
        self.tree.setColumnWidth(0, 150)
        self.tree.setUniformRowHeights(True)
        self.tree.itemChanged.connect(self._on_item_changed)
        self.add_edit = QLineEdit()
        self.add_edit.setAccessibleName("Add a value (slot=value)")
        self.add_edit.setPlaceholderText("add a value: slot=value")
        self.add_edit.returnPressed.connect(self._on_add_value)
        self.add_button = QPushButton("Add")
        self.add_button.clicked.connect(self._on_add_value)
        self.restrictions = QPlainTextEdit()
        self.restrictions.setTabChangesFocus(True)  # Tab leaves the field (it typed a tab into a restriction)
        self.restrictions.setAccessibleName("Restrictions, one per line")
        self.restrictions.setPlaceholderText("one restriction per line, e.g. block_size * items_per_thread <= 4096")
        self.restrictions.setMaximumHeight(70)
        self.restrictions.textChanged.connect(self._schedule)
        self.count_label = QLabel("no template")
        self.count_label.setWordWrap(True)
        self.error_label = QLabel("")
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet(f"color: {WARNING_TEXT}")
        self._timer = single_shot(self, 250, self.apply)
        self._counting = Background()  # no parent: see Background
        self._counting.done.connect(self._on_counted)
        add_row = QHBoxLayout()
        add_row.addWidget(self.add_edit, 1)
        add_row.addWidget(self.add_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.tree, 1)
        layout.addLayout(add_row)
        layout.addWidget(QLabel("Restrictions"))
        layout.addWidget(self.restrictions)
        layout.addWidget(self.count_label)
        layout.addWidget(self.error_label)

    def set_space(self, space: SearchSpace | None, fixed: bool = False, from_session: bool = False) -> None:
        """Show a new base space (a template was chosen or a session was opened). ``fixed``: its
        domains are all the code accepts (a template renders only the values it declares), so
        ``slot=value`` may only put a declared value back; a python benchmark's may grow.
        ``from_session``: the space a session searched, which the next run searches too, also
        when it is a new session (see :meth:`shown`)."""
        self.base, self.space, self.fixed, self.from_session = space, space, fixed, from_session
        self.long_values = {}
        self.tree.blockSignals(True)
        self.tree.clear()
        if space is not None:
            for group in GROUPS + tuple(sorted({s.group for s in space.slots} - set(GROUPS))):
                slots = [s for s in space.slots if s.group == group]
                if not slots:
                    continue
                group_item = QTreeWidgetItem(self.tree, [group])
                group_item.setFirstColumnSpanned(True)
                font = group_item.font(0)
                font.setBold(True)
                group_item.setFont(0, font)
                for slot in slots:
                    self._add_slot_item(group_item, slot)
                group_item.setExpanded(True)
        # a session's narrowed domains are stored as restrictions (its trials keep the wider ones):
        # shown again as the values left unticked, the other restrictions as lines
        narrowed, others = split_narrowings(space) if space is not None else ({}, [])
        for name, values in narrowed.items():
            if name in self.long_values:  # (too many values to tick: the restriction stays a line)
                others += narrowings(name, self.long_values[name], values)
                continue
            item = self._slot_item(name)
            for child in _children(item) if item is not None else ():
                if child.data(0, ROLE_VALUE) not in values:
                    child.setCheckState(0, Qt.CheckState.Unchecked)
        self.tree.blockSignals(False)
        self.restrictions.blockSignals(True)
        self.restrictions.setPlainText("\n".join(others))
        self.restrictions.blockSignals(False)
        self.error_label.setText("")
        self._show_count()
        self._fit_name_column()

    def _fit_name_column(self) -> None:
        """The slot column as wide as the longest slot name in the tree's font (at most three fifths
        of the tree; the doc column takes the rest, its text elided, whole in the tool tip): a fixed
        150 px cut threads_per_row to "threads_per…" in presentation mode, where a name is the
        thing a class reads."""
        metrics = self.tree.fontMetrics()
        groups = [group for i in range(self.tree.topLevelItemCount()) if (group := self.tree.topLevelItem(i)) is not None]
        names = [slot.text(0) for group in groups for j in range(group.childCount())
                 if (slot := group.child(j)) is not None]
        widest = max((metrics.horizontalAdvance(name) for name in names), default=0) + 2 * self.tree.indentation() + 12
        room = self.tree.viewport().width()
        self.tree.setColumnWidth(0, max(metrics.horizontalAdvance("slot / value") + 12,
                                        min(widest, int(room * 0.6)) if room > 0 else widest))

    def resizeEvent(self, event: Any) -> None:  # Qt override
        super().resizeEvent(event)
        self._fit_name_column()

    def changeEvent(self, event: Any) -> None:  # Qt override: the zoom's font
        super().changeEvent(event)
        if event.type() == event.Type.FontChange:
            self._fit_name_column()

    def _add_slot_item(self, parent: QTreeWidgetItem, slot: Any) -> None:
        item = QTreeWidgetItem(parent, [slot.name, slot.doc])
        item.setToolTip(0, plain_tip(slot.doc or slot.name))
        item.setToolTip(1, plain_tip(slot.doc or slot.name))
        item.setData(0, ROLE_SLOT, slot.name)
        if len(slot.values) > MAX_TOGGLED_VALUES:
            self.long_values[slot.name] = list(slot.values)
            note = QTreeWidgetItem(item, [self._long_note(slot.name)])
            note.setFirstColumnSpanned(True)
            note.setFlags(Qt.ItemFlag.ItemIsEnabled)
        else:
            for value in slot.values:
                self._add_value_item(item, slot.name, value)
        item.setExpanded(False)

    def _long_note(self, name: str) -> str:
        values = self.long_values[name]
        example = f", e.g. {name} % 100 == 0" if type(values[0]) is int else ""
        return (f"{len(values):,} values ({values[0]} ... {values[-1]}): too many to toggle one by one; "
                f"narrow them with a restriction below{example}")

    def _add_value_item(self, slot_item: QTreeWidgetItem, name: str, value: Any) -> None:
        child = QTreeWidgetItem(slot_item, [str(value)])
        child.setFlags(child.flags() | Qt.ItemFlag.ItemIsUserCheckable)
        child.setCheckState(0, Qt.CheckState.Checked)
        child.setData(0, ROLE_SLOT, name)
        child.setData(0, ROLE_VALUE, value)

    def _slot_item(self, name: str) -> QTreeWidgetItem | None:
        for i in range(self.tree.topLevelItemCount()):
            group = self.tree.topLevelItem(i)
            for child in _children(group):
                if child.data(0, ROLE_SLOT) == name:
                    return child
        return None

    def shown(self) -> tuple[dict[str, list[Any]], list[str]] | None:
        """The space as the tab shows it (the ticked values, the restriction lines), for the next
        run: None while it shows a template's own space unedited. A session's space counts as
        shown even unedited: Start beginning a new session from it (another GPU) searched the
        template's whole space, the values shown unticked and the lines shown included."""
        if self.base is None or self.space is None or self.base.is_explicit:
            return None
        if self.space is not self.base:
            return {slot.name: list(slot.values) for slot in self.space.slots}, list(self.space.restrictions)
        if not self.from_session:
            return None
        lines = [line.strip() for line in self.restrictions.toPlainText().splitlines() if line.strip()]
        return self.domains(), lines

    def domains(self) -> dict[str, list[Any]]:
        """The checked values of every slot, in domain order."""
        out: dict[str, list[Any]] = {}
        if self.base is None:
            return out
        for slot in self.base.slots:
            if slot.name in self.long_values:
                out[slot.name] = list(self.long_values[slot.name])
                continue
            item = self._slot_item(slot.name)
            if item is None:
                continue
            out[slot.name] = [child.data(0, ROLE_VALUE) for child in _children(item)
                              if child.checkState(0) == Qt.CheckState.Checked]
        return out

    def set_value_enabled(self, name: str, value: Any, enabled: bool) -> None:
        if name in self.long_values:
            raise WorkbenchError(f"slot {name} has {len(self.long_values[name]):,} values, too many to toggle one by "
                                 "one; narrow them with a restriction")
        item = self._slot_item(name)
        if item is None:
            raise WorkbenchError(f"no slot {name!r}")
        for child in _children(item):
            if child.data(0, ROLE_VALUE) == value:
                child.setCheckState(0, Qt.CheckState.Checked if enabled else Qt.CheckState.Unchecked)
                self.apply()
                return
        raise WorkbenchError(f"slot {name} has no value {value!r}")

    def _on_add_value(self) -> None:
        text = self.add_edit.text().strip()
        try:
            self.add_value(text)
            self.add_edit.clear()
        except WorkbenchError as exc:
            self.error_label.setText(str(exc))

    def add_value(self, text: str) -> None:
        """``slot=value``: extend a slot's domain; the value must have the slot's type. Over a
        template (:attr:`fixed`) only a declared value is accepted: the template renders only the
        values its code is written for, so every config with another would fail to render."""
        if self.base is None:
            raise WorkbenchError("choose a template first")
        name, sep, raw = text.partition("=")
        name, raw = name.strip(), raw.strip()
        if not sep or not raw:
            raise WorkbenchError(f"{text!r}: write slot=value, e.g. unroll=8")
        slot = self.base.slot(name)
        value = _parse_value(raw, slot)
        if self.fixed and value not in slot.values:
            shown = ", ".join(map(str, slot.values[:12])) + (", ..." if len(slot.values) > 12 else "")
            raise WorkbenchError(f"{name}={value!r} is not among the values the template declares ({shown}); "
                                 "a value it does not declare cannot be rendered (edit the template to add one)")
        item = self._slot_item(name)
        if item is None:
            raise WorkbenchError(f"no slot {name!r}")
        if name in self.long_values:
            values = self.long_values[name]
            if value in values:
                raise WorkbenchError(f"{name} already has the value {value!r}")
            values.append(value)
            self.tree.blockSignals(True)
            note = item.child(0)
            if note is not None:
                note.setText(0, self._long_note(name))
            self.tree.blockSignals(False)
            self.apply()
            return
        if any(child.data(0, ROLE_VALUE) == value for child in _children(item)):
            raise WorkbenchError(f"{name} already has the value {value!r}")
        self.tree.blockSignals(True)
        self._add_value_item(item, name, value)
        self.tree.blockSignals(False)
        item.setExpanded(True)
        self.apply()

    def _on_item_changed(self, *_: Any) -> None:
        self._schedule()

    def _schedule(self) -> None:
        self._timer.start()

    def apply(self) -> None:
        """Derive the edited space now; on bad input keep the last good one and say why."""
        self._timer.stop()
        if self.base is None:
            return
        try:
            domains = self.domains()
            empty = [name for name, values in domains.items() if not values]
            if empty:
                raise WorkbenchError(f"slot {empty[0]} needs at least one value")
            lines = [line.strip() for line in self.restrictions.toPlainText().splitlines() if line.strip()]
            space = self.base.with_domains(domains).with_restrictions(lines)
        except WorkbenchError as exc:
            self.error_label.setText(str(exc))
            return
        self.error_label.setText("")
        self.space = space
        self._show_count()
        if self.on_space_changed is not None:
            self.on_space_changed(space)

    def _show_count(self) -> None:
        """Count the valid configs on a background thread: a file's space can take minutes to count,
        and the window must stay responsive meanwhile (the label says so until the count arrives)."""
        if self.space is None:
            self.count_label.setText("no template chosen")
            return
        space = self.space
        if space is self.base and self.from_session:  # of the values ticked (a session's narrowing unticks
            try:                                      # values its stored domain keeps), as after any edit
                space = space.with_domains(self.domains())
            except WorkbenchError:
                pass
        self.count_label.setText(f"counting the valid configs of {space.cartesian_size:,} combinations...")

        def count() -> str:
            try:
                return f"<b>{space.count():,}</b> valid configs of {space.cartesian_size:,} combinations"
            except (WorkbenchError, ArithmeticError, RecursionError) as exc:
                return f"cannot count the valid configs: {exc}"

        self._counted = space
        self._counting.start("space-count", space, count)

    def _on_counted(self, space: SearchSpace, text: str | None) -> None:
        if space is self._counted:  # a later edit's count replaces an earlier one
            self.count_label.setText(text if text is not None else "cannot count the valid configs")


def _parse_value(raw: str, slot: Any) -> Any:
    """A typed value for a slot from text, read as ``--set`` reads one (:func:`parse_value`: a number
    too long or too small to tell from 0, ``1e-400``, is refused, where ``float`` made it 0) and
    validated by building the extended slot (never ``eval``)."""
    kind = slot.kind
    parsed = raw.strip() if kind == "str" else parse_value(raw, slot.name)
    if kind == "bool" and parsed in (0, 1) and not isinstance(parsed, float):
        value: Any = bool(parsed)  # (1 and 0 for true and false, as the box always took them)
    elif kind == "float" and isinstance(parsed, (int, float)) and not isinstance(parsed, bool):
        value = float(parsed)
    elif kind in ("int", "bool", "float") and type(parsed).__name__ != kind:
        raise WorkbenchError(f"{slot.name}={raw!r}: expected {'an' if kind == 'int' else 'a'} {kind} like "
                             f"{slot.values[0]!r}")
    else:
        value = parsed
    Slot(slot.name, tuple(slot.values) + (value,), slot.group, slot.doc)  # SpaceError names the problem
    return value


def _children(item: QTreeWidgetItem | None) -> list[QTreeWidgetItem]:
    """The children of a tree item (none for a missing one)."""
    if item is None:
        return []
    return [child for k in range(item.childCount()) if (child := item.child(k)) is not None]
