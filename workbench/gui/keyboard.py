"""Enter presses a focused button, as Space does, everywhere in the window.

Why: Qt presses a push button on Enter only when it is a dialog's default or set to be one
(``autoDefault``), and a tool button never; outside a dialog Enter did nothing on most of the
window's buttons (*Show in table*, *Add*, *A = selected*, *Options*, a weight's direction), while
docs/gui.md promises "Space or Enter presses a focused button" to people who use the keyboard alone.
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
