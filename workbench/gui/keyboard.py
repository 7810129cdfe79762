"""The keyboard's reach: Enter presses a focused button, and the window's Tab order read safely.

Why Enter: Qt presses a push button on Enter only when it is a dialog's default or set to be one
(``autoDefault``), and a tool button never; outside a dialog Enter did nothing on most of the
window's buttons (*Show in table*, *Add*, *A = selected*, *Options*, a weight's direction), while
docs/gui.md promises "Space or Enter presses a focused button" to people who use the keyboard alone.

Why :func:`tab_order`: see its docstring; walking ``nextInFocusChain`` by hand broke the window.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QPushButton, QToolButton, QWidget

_ENTER_KEYS = (Qt.Key.Key_Return, Qt.Key.Key_Enter)


class _EnterClicks(QObject):
    """Clicks a focused tool button on Enter (its own key handling takes Space only)."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # Qt override
        if (event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent) and event.key() in _ENTER_KEYS
                and not event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier
                and isinstance(watched, QToolButton) and watched.isEnabled()):
            watched.animateClick()
            return True
        return False


_FILTER: _EnterClicks | None = None


def enter_presses_buttons(root: QWidget) -> None:
    """Every push and tool button under ``root`` (built so far) presses on Enter when focused; call
    again for what is built later (a tab built when first shown)."""
    global _FILTER
    if _FILTER is None:
        _FILTER = _EnterClicks()
    for button in root.findChildren(QPushButton):
        button.setAutoDefault(True)
    for tool in root.findChildren(QToolButton):
        tool.removeEventFilter(_FILTER)  # (once each, however often it is called)
        tool.installEventFilter(_FILTER)


def tab_order(window: QWidget) -> list[QWidget]:
    """Every widget of ``window`` (not those of its dialogs and menus) in its Tab order, as Qt's
    focus chain has them, the window itself left out.

    Why not ``nextInFocusChain`` in a loop: PySide records the widget it returns as a child of the
    widget it was asked of, so a walk over the chain chained every widget under the one before it,
    and the window under its last widget (the chain is a ring). A widget of that chain deleted (a
    chart's canvas made anew) then took every wrapper after it along in PySide's eyes: the menu
    bar's among them, whose next use raised "already deleted" in the run's finishing handler, so
    the window never said the run was done. This walk stops before the ring comes round to the
    window again, and gives every widget it met its real parent back."""
    widgets = [w for w in window.findChildren(QWidget) if w.window() is window]
    order: list[QWidget] = []
    widget = window
    for _ in range(len(widgets)):  # (one call more would return the window itself)
        following = widget.nextInFocusChain()
        if following is None or following is window:
            break
        order.append(following)
        widget = following
    parents = {id(parent): parent for w in widgets if (parent := w.parent()) is not None}
    for parent in parents.values():  # (PySide records what this returns as the parent's own, as it is)
        parent.findChildren(QObject, options=Qt.FindChildOption.FindDirectChildrenOnly)
    return order
