"""A status bar whose messages end in "…" when they do not fit, with the whole message as tool tip.

``QStatusBar.showMessage`` paints its text as it is, clipped at the first permanent widget (the
device name, the SIMULATED badge): a long message ("Some session settings not restored: ...",
an export's refusal) lost its end mid-word, with nothing saying that more was there and no way to
read it. Here a message is shown in an :class:`~workbench.gui.elided_label.ElidedLabel` in the
bar's normal area instead, which elides and carries the whole text as its tool tip;
``currentMessage`` and ``messageChanged`` keep their meaning, so callers do not change.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QStatusTipEvent
from PySide6.QtWidgets import QMainWindow, QStatusBar, QWidget

from workbench.gui.elided_label import ElidedLabel
from workbench.gui.timers import single_shot


class MessageStatusBar(QStatusBar):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._message = ""
        self.message_label = ElidedLabel("")
        self.message_label.setVisible(False)
        self.insertWidget(0, self.message_label, 1)
        self._timer = single_shot(self, None, self.clearMessage)

    def showMessage(self, text: str, timeout: int | None = 0) -> None:  # QStatusBar's name
        """Show ``text`` for ``timeout`` ms (0: until the next message or :meth:`clearMessage`)."""
        self._timer.stop()
        changed = text != self._message
        self._message = text
        self.message_label.setText(text)
        self.message_label.setVisible(bool(text))
        if text and timeout:
            self._timer.start(timeout)
        if changed:
            self.messageChanged.emit(text)

    def clearMessage(self) -> None:  # QStatusBar's name
        self.showMessage("")

    def currentMessage(self) -> str:  # QStatusBar's name
        return self._message


class StatusTipRelay(QObject):
    """Sends a window's status tips (a menu entry's hint while the pointer is on it) to its
    :class:`MessageStatusBar`: the window passes them to ``QStatusBar.showMessage`` from C++,
    which a Python subclass cannot take over, and the tip would be painted unelided, beside (not
    in place of) the message label."""

    def __init__(self, window: QMainWindow, bar: MessageStatusBar) -> None:
        super().__init__(window)
        self._bar = bar
        window.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # Qt override
        if event.type() == QEvent.Type.StatusTip and isinstance(event, QStatusTipEvent):
            self._bar.showMessage(event.tip())
            return True
        return False


def install_status_bar(window: QMainWindow) -> MessageStatusBar:
    """Give ``window`` a :class:`MessageStatusBar` (its status tips included) and return it."""
    bar = MessageStatusBar(window)
    window.setStatusBar(bar)
    StatusTipRelay(window, bar)
    return bar
