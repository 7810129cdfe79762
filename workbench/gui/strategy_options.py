"""The strategy's settings form, generated from its ``OPTIONS``: one typed editor per option (a
check box for a bool, spin boxes for numbers, a list for a choice), the description as tooltip.

The toolbar shows it in a pop-up under the "Options" button beside the strategy picker. Values the
person changed from the defaults go into the run request as ``strategy_options``; the strategy's own
``validate_options`` checks them when the run starts, like ``tune --option``.
"""

from __future__ import annotations

from typing import Any, Mapping

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QDoubleSpinBox, QFormLayout, QLabel, QLineEdit, QSpinBox, QWidget,
)

from workbench.core.errors import WorkbenchError
from workbench.search.base import Option, strategy_class
from workbench.gui.decimal_box import DecimalBox

_INT_LIMIT = 2**31 - 1
_FLOAT_LIMIT = 1e9
#: Most decimals a float editor shows; a stored value finer than that cannot be held by the form.
_MAX_DECIMALS = 10


def _decimals(*values: float | None) -> int:
    """Decimals enough to show every one of ``values`` exactly (at least 4, at most ``_MAX_DECIMALS``)."""
    wanted = 4
    for value in values:
        if value is None:
            continue
        while wanted < _MAX_DECIMALS and round(value, wanted) != value:
            wanted += 1
    return wanted


def _bound(value: float | None, fallback: float) -> float:
    return fallback if value is None else value


def _editor(option: Option) -> QWidget:
    """A typed editor holding ``option``'s default."""
    default = option.default
    editor: QWidget
    if option.choices is not None:
        box = QComboBox()
        for choice in option.choices:
            box.addItem(str(choice), choice)
        box.setCurrentIndex(max(0, box.findData(default)))
        editor = box
    elif isinstance(default, bool):
        check = QCheckBox()
        check.setChecked(default)
        editor = check
    elif isinstance(default, int):
        spin = QSpinBox()  # the option's declared range: the form offers only values the strategy takes
        spin.setRange(int(_bound(option.low, -_INT_LIMIT)), int(_bound(option.high, _INT_LIMIT)))
        spin.setValue(default)
        editor = spin
    elif isinstance(default, float):
        real = DecimalBox()
        real.setDecimals(_decimals(option.low, option.high, default))
        real.setRange(_bound(option.low, -_FLOAT_LIMIT), _bound(option.high, _FLOAT_LIMIT))
        real.setSingleStep(0.05 if abs(default) <= 1.0 else 0.5)
        real.setValue(default)
        editor = real
    else:
        line = QLineEdit("" if default is None else str(default))
        editor = line
    editor.setObjectName(f"option_{option.name}")
    allowed = f", allowed {option.range_text}" if option.range_text else ""
    editor.setToolTip(f"{option.description}\n(default {default!r}{allowed})")
    return editor


def _value(editor: QWidget) -> Any:
    if isinstance(editor, QComboBox):
        return editor.currentData()
    if isinstance(editor, QCheckBox):
        return editor.isChecked()
    if isinstance(editor, (QSpinBox, QDoubleSpinBox)):
        return editor.value()
    if isinstance(editor, QLineEdit):
        return editor.text()
    raise TypeError(type(editor).__name__)


def _set_value(editor: QWidget, value: Any) -> None:
    if isinstance(editor, QComboBox):
        position = editor.findData(value)
        if position >= 0:
            editor.setCurrentIndex(position)
    elif isinstance(editor, QCheckBox):
        editor.setChecked(bool(value))
    elif isinstance(editor, QSpinBox):
        editor.setValue(int(value))
    elif isinstance(editor, QDoubleSpinBox):
        editor.setValue(float(value))
    elif isinstance(editor, QLineEdit):
        editor.setText(str(value))


class StrategyOptionsForm(QWidget):
    """The options of one strategy; :meth:`set_strategy` rebuilds it for another."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.layout_ = QFormLayout(self)
        self.strategy = ""
        self.editors: dict[str, tuple[Option, QWidget]] = {}
        #: Edited options of the strategies not shown, by name: picking one again shows them.
        self.kept: dict[str, dict[str, Any]] = {}

    def set_strategy(self, name: str, reset: bool = False, fresh: bool = False) -> None:
        """Show ``name``'s options: as last edited in this form (or remembered with :meth:`remember`),
        else at their defaults. When it is already shown, only ``reset`` rebuilds it, at the defaults
        and forgetting every strategy's kept options (another session's settings are coming), or
        ``fresh``: at the defaults, the other strategies' kept options kept (a run of ``name``
        starts, with the options it names)."""
        if name == self.strategy and not reset and not fresh:
            return
        if reset:
            self.kept = {}
        elif fresh:
            self.kept.pop(name, None)
            if self.strategy and self.strategy != name:
                edited = self._edited()
                if edited:
                    self.kept[self.strategy] = edited
        elif self.strategy:
            edited = self._edited()
            if edited:
                self.kept[self.strategy] = edited
            else:
                self.kept.pop(self.strategy, None)
        self.strategy = name
        while self.layout_.rowCount():
            self.layout_.removeRow(0)
        self.editors = {}
        options = strategy_class(name).OPTIONS
        if not options:
            self.layout_.addRow(QLabel(f"{name} has no options"))
        for option in options:
            editor = _editor(option)
            for signal in ("currentIndexChanged", "toggled", "valueChanged", "textChanged"):
                if hasattr(editor, signal):
                    getattr(editor, signal).connect(self.changed)
                    break
            label = QLabel(option.name)
            label.setToolTip(option.description)
            label.setBuddy(editor)
            editor.setAccessibleName(option.name)  # (a screen reader said "spin box 10", no option's name)
            editor.setAccessibleDescription(option.description)
            self.layout_.addRow(label, editor)
            self.editors[option.name] = (option, editor)
        kept = self.kept.pop(name, None)
        if kept:  # values this form held before, checked when they were restored or at Start
            self.set_values(kept)
        self.changed.emit()

    def remember(self, options_by_strategy: Mapping[str, Mapping[str, Any]]) -> list[str]:
        """Keep a reopened session's options of the strategies it ran with before, shown when one
        of them is picked; returns one line per value its strategy refuses (that value is dropped):
        the run controller's own rule, so the form holds what a continued run would run."""
        from workbench.runner.controller import usable_stored_options  # not imported before a session is

        problems: list[str] = []
        for name, options in options_by_strategy.items():
            try:
                good, refused = usable_stored_options(name, options)
            except WorkbenchError as exc:
                problems.append(f"{exc} (its stored options are not kept)")
                continue
            problems += refused
            if good and name != self.strategy:
                self.kept[name] = good
        return problems

    def _edited(self) -> dict[str, Any]:
        """The options whose editors differ from their defaults, unchecked."""
        return {name: value for name, value in self.values().items()
                if value != self.editors[name][0].default and not (self.editors[name][0].default is None and value == "")}

    def values(self) -> dict[str, Any]:
        """Every option's value as edited."""
        return {name: _value(editor) for name, (_, editor) in self.editors.items()}

    def changed_count(self) -> int:
        """How many options differ from their defaults (for the button's label; not validated)."""
        return len(self._edited())

    def changed_options(self) -> dict[str, Any] | None:
        """The options that differ from their defaults, checked by the strategy (a bad value raises
        ``WorkbenchError`` in one line); None when all are at their defaults."""
        changed = self._edited()
        if not changed:
            return None
        strategy_class(self.strategy).validate_options(changed)
        return changed

    def set_values(self, options: Mapping[str, Any]) -> list[str]:
        """Fill the editors from a reopened session's stored options; returns one line per value
        that could not be restored as stored.

        Each value goes through the strategy's ``validate_options`` first, as it would when the run
        starts: a hand-edited value of the wrong type or out of range (or an option this strategy
        lacks) leaves that editor at its default and is reported, instead of raising halfway
        through restoring the session. A float finer than the editor can show widens its decimals;
        one still too fine is reported, since Start runs what the form holds.
        """
        from workbench.runner.controller import usable_stored_options  # not imported before a session is

        checked, problems = usable_stored_options(self.strategy, options)
        for name, value in checked.items():
            editor = self.editors[name][1]
            if isinstance(editor, QDoubleSpinBox):
                editor.setDecimals(max(editor.decimals(), _decimals(float(value))))
            _set_value(editor, value)
            shown = _value(editor)
            if shown != value:
                problems.append(f"strategy option {name}={value!r} is shown and run as {shown!r} (the form cannot hold it)")
        return problems
