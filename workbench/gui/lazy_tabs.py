"""Tab pages built the first time they are shown or asked for.

Most tabs of the window's lower half (slot importance, roofline, sizes, portability...) stay closed
in a session, and each holds pyqtgraph plots that take 15-40 ms to build: built at start they were
about half the time the window took to open. A page stands in as an empty placeholder until its tab
is first shown (or code asks for it); the built page then takes the placeholder's place at the same
index, so whoever looks for it among the tabs (``setCurrentWidget``, ``currentWidget() is ...``)
finds the real widget. The views build themselves from the model's current state, as they do when
shown after being hidden, so a page built late shows what one built at start would.
"""

from __future__ import annotations

from typing import Callable, TypeVar

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QTabWidget, QWidget
from workbench.gui.keyboard import enter_presses_buttons, tab_order

Page = TypeVar("Page", bound=QWidget)


class LazyTabs(QObject):
    """The pages of ``tabs`` added with :meth:`add`, built on first show or first :meth:`page`.

    ``on_built(key, page)`` runs once per page, right after it took its place among the tabs.
    """

    def __init__(self, tabs: QTabWidget, on_built: Callable[[str, QWidget], None]) -> None:
        super().__init__(tabs)
        self.tabs = tabs
        self.on_built = on_built
        self._pending: dict[str, tuple[QWidget, str, Callable[[], QWidget]]] = {}
        self._pages: dict[str, QWidget] = {}
        # Connected before anyone else's handler: they see the built page as the current one.
        tabs.currentChanged.connect(self._on_current)

    def add(self, key: str, label: str, build: Callable[[], QWidget]) -> None:
        """A tab labelled ``label`` whose page ``build()`` makes when first needed."""
        placeholder = QWidget()
        self.tabs.addTab(placeholder, label)
        self._pending[key] = (placeholder, label, build)

    def is_built(self, key: str) -> bool:
        return key in self._pages

    def page(self, key: str) -> QWidget:
        """The page of ``key``, built now if it was not yet."""
        if key not in self._pages:
            self._build(key)
        return self._pages[key]

    def typed_page(self, key: str, kind: type[Page]) -> Page:
        """The page of ``key`` as the ``kind`` of widget its builder makes (built now if needed)."""
        page = self.page(key)
        if not isinstance(page, kind):
            raise TypeError(f"tab page {key!r} is a {type(page).__name__}, not a {kind.__name__}")
        return page

    def _on_current(self, index: int) -> None:
        shown = self.tabs.widget(index)
        for key, (placeholder, _, _) in list(self._pending.items()):
            if placeholder is shown:
                self._build(key)
                return

    def _build(self, key: str) -> None:
        placeholder, label, build = self._pending[key]
        page = build()  # one that fails stays pending: the next showing tries again
        del self._pending[key]
        tabs = self.tabs
        index = tabs.indexOf(placeholder)
        current = tabs.currentIndex()
        blocked = tabs.blockSignals(True)  # the current tab does not change: nobody is told it did
        try:
            tabs.insertTab(index, page, label)
            tabs.removeTab(index + 1)
            tabs.setCurrentIndex(current)
        finally:
            tabs.blockSignals(blocked)
        placeholder.deleteLater()
        enter_presses_buttons(page)
        self._pages[key] = page
        self.on_built(key, page)
        _tab_from_the_row_into(tabs, page)


def _tab_from_the_row_into(tabs: QTabWidget, page: QWidget) -> None:
    """Tab from the tab row goes into ``page`` first, as on the tabs built with the window: a page
    built later joined the end of the window's Tab order, and Tab from the row visited the view
    beside the tabs (the source of the selected trial) before the page it had just opened."""
    # the page's widgets in their own order (they were created together)
    inside = [widget for widget in tab_order(page.window())
              if page.isAncestorOf(widget) and widget.focusPolicy() & Qt.FocusPolicy.TabFocus]
    previous: QWidget = tabs.tabBar()
    for widget in inside:
        QWidget.setTabOrder(previous, widget)
        previous = widget
