"""A form that pops up under its button and is worked from the keyboard as well as the mouse.

The strategy's options were a form inside a ``QMenu`` (a ``QWidgetAction``): the menu kept the
keyboard for itself, so the form's editors never took focus, Tab moved between the menu's actions
(there is one) and Escape closed it; only a mouse reached an option. A popup window of its own
gives its first editor the focus as it opens, Tab and Shift+Tab go through the editors, Escape
closes it and the focus goes back to its button.
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QGuiApplication, QHideEvent, QKeyEvent
from PySide6.QtWidgets import QAbstractButton, QFrame, QScrollArea, QVBoxLayout, QWidget


class FormPopup(QFrame):
    """``form`` in a popup that ``button`` opens under itself (clicked, or Space / Enter on it)."""

    def __init__(self, form: QWidget, button: QAbstractButton, name: str) -> None:
        super().__init__(button, Qt.WindowType.Popup)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAccessibleName(name)
        layout = self._layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        # scrolled when taller than the screen (a strategy with many options on a laptop): a
        # popup is not moved on screen by anyone, so what it cut off could not be reached
        self.scroller = QScrollArea()
        self.scroller.setWidgetResizable(True)
        self.scroller.setFrameShape(QFrame.Shape.NoFrame)
        self.scroller.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroller.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.scroller.setWidget(form)
        layout.addWidget(self.scroller)
        self.form = form
        self._button = button
        button.clicked.connect(self.open)

    def open(self) -> None:
        below = self._button.mapToGlobal(QPoint(0, self._button.height()))
        screen = QGuiApplication.screenAt(below) or self._button.screen()
        area = screen.availableGeometry()  # kept on the screen: a form cut at its edge hides options
        margins = self._layout.contentsMargins()
        wanted = self.form.sizeHint()
        height = min(wanted.height() + margins.top() + margins.bottom() + 2 * self.frameWidth(), area.height())
        scrolls = height < wanted.height() + margins.top() + margins.bottom()
        width = (wanted.width() + margins.left() + margins.right() + 2 * self.frameWidth()
                 + (self.scroller.verticalScrollBar().sizeHint().width() if scrolls else 0))
        self.resize(min(width, area.width()), height)
        x = max(area.left(), min(below.x(), area.right() + 1 - self.width()))
        room_below = area.bottom() + 1 - below.y()
        above = below.y() - self._button.height() - self.height()
        y = below.y() if self.height() <= room_below else max(area.top(), above) if above >= area.top() \
            else area.bottom() + 1 - self.height()
        self.move(x, y)
        self.show()
        self.raise_()
        self.activateWindow()
        first = self._first_editor()
        if first is not None:
            first.setFocus(Qt.FocusReason.PopupFocusReason)

    def _first_editor(self) -> QWidget | None:
        for widget in self.form.findChildren(QWidget):
            if widget.isVisibleTo(self) and widget.isEnabled() and widget.focusPolicy() & Qt.FocusPolicy.TabFocus:
                return widget
        return None

    def keyPressEvent(self, event: QKeyEvent) -> None:  # Qt override
        if event.key() == Qt.Key.Key_Escape:
            self.close()
            return
        super().keyPressEvent(event)

    def hideEvent(self, event: QHideEvent) -> None:  # Qt override
        super().hideEvent(event)
        if self._button.isVisible():
            self._button.setFocus(Qt.FocusReason.PopupFocusReason)
