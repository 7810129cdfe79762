"""A one-line label and a combo box that end in "…" when their text does not fit, with the whole text as tool tip.

A plain QLabel in a status bar either pushes its neighbours (the device and SIMULATED labels) or is
cut mid-letter under them; this one gives up width and says that it did. A plain combo box is
either as wide as its longest entry (a chart header that no longer fits beside two other charts,
worse in presentation mode's large fonts) or a fixed number of characters that cuts its current
entry mid-word; :class:`ElidedCombo` asks for its current entry's width and shrinks when the row
is short of room.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtGui import QFontMetricsF, QKeyEvent, QPainter
from PySide6.QtWidgets import (
    QApplication, QComboBox, QFrame, QMenu, QProxyStyle, QSizePolicy, QStyle, QStyleOptionComboBox, QStylePainter, QTabBar,
    QTabWidget,
    QToolButton, QWidget,
)
from workbench.gui.keyboard import tab_order
from workbench.gui.text import plain_tip


class ElidedLabel(QFrame):
    def __init__(self, text: str = "", minimum_chars: int = 0, whole: bool = False) -> None:
        """``minimum_chars`` > 0: a label in a row that lays out by size hints (a tool bar) asks
        for about that many characters and takes whatever room the row has left over; asking for
        its whole text instead made the row shrink every other control (a combo box cut mid-word).

        ``whole``: the label asks for its whole text and gives it up down to ``minimum_chars``
        only when its row is short of room (a chart's title beside the chart's own controls:
        a title that insisted on its whole width set the chart's minimum width, and squeezed
        the chart beside it in presentation mode's large fonts)."""
        super().__init__()
        self._text = ""
        self._minimum_chars = minimum_chars
        self._whole = whole
        if whole:
            self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        elif minimum_chars > 0:
            self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        else:
            self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setMinimumHeight(self.fontMetrics().height())
        self.setText(text)

    def text(self) -> str:
        return self._text

    def setText(self, text: str) -> None:  # QLabel's name
        self._text = text
        self.setToolTip(plain_tip(text))
        if self._whole:
            self.updateGeometry()
        self.update()

    def sizeHint(self) -> QSize:  # Qt override
        if self._whole:
            margins = self.contentsMargins()
            # the exact advance rounded up: elidedText cuts a text given its advance rounded down
            advance = math.ceil(QFontMetricsF(self.font()).horizontalAdvance(self._text))
            width = advance + margins.left() + margins.right()
            return QSize(max(width, self.minimumSizeHint().width()), self.fontMetrics().height() + 2)
        return QSize(self.minimumSizeHint().width(), self.fontMetrics().height() + 2)

    def minimumSizeHint(self) -> QSize:  # Qt override
        return QSize(self.fontMetrics().averageCharWidth() * self._minimum_chars, self.fontMetrics().height())

    def shown_text(self) -> str:
        """What is drawn at the current width."""
        return self.fontMetrics().elidedText(self._text, Qt.TextElideMode.ElideRight, max(self.contentsRect().width(), 0))

    def paintEvent(self, event: Any) -> None:  # Qt override
        super().paintEvent(event)
        painter = QPainter(self)
        painter.drawText(self.contentsRect(), int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter), self.shown_text())
        painter.end()


class ElidedCombo(QComboBox):
    """A combo box as wide as its current entry when there is room, narrower (down to
    ``minimum_chars`` characters, its entry ending in "…") when there is not; the tool tip says the
    whole entry and then what the box is for (``purpose``)."""

    def __init__(self, purpose: str = "", minimum_chars: int = 6, maximum_chars: int = 32,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._purpose = purpose
        self._minimum_chars = minimum_chars
        self._maximum_chars = maximum_chars
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self._hinted_text: str | None = None
        self._follow_current()

    def _follow_current(self) -> None:
        """Tool tip and size hint for the current entry. Checked on every paint, not on a signal:
        a chart that fills its choosers with signals blocked changes the entry without one, and a
        changed entry is always repainted."""
        text = self.currentText()
        if text == self._hinted_text:
            return
        self._hinted_text = text
        self.setToolTip(plain_tip("\n".join(part for part in (text, self._purpose) if part)))
        self.updateGeometry()

    def _width_for(self, text_width: int) -> int:
        option = QStyleOptionComboBox()
        self.initStyleOption(option)
        size = self.style().sizeFromContents(QStyle.ContentsType.CT_ComboBox, option,
                                             QSize(text_width, self.fontMetrics().height()), self)
        return size.width()

    def sizeHint(self) -> QSize:  # Qt override
        hint = super().sizeHint()
        metrics = self.fontMetrics()
        text_width = min(metrics.horizontalAdvance(self.currentText()),
                         metrics.averageCharWidth() * self._maximum_chars)
        text_width = max(text_width, metrics.averageCharWidth() * self._minimum_chars)
        return QSize(self._width_for(text_width), hint.height())

    def minimumSizeHint(self) -> QSize:  # Qt override
        hint = super().minimumSizeHint()
        return QSize(self._width_for(self.fontMetrics().averageCharWidth() * self._minimum_chars), hint.height())

    def shown_text(self) -> str:
        """The current entry as drawn at the current width."""
        self._follow_current()
        option = QStyleOptionComboBox()
        self.initStyleOption(option)
        field = self.style().subControlRect(QStyle.ComplexControl.CC_ComboBox, option,
                                            QStyle.SubControl.SC_ComboBoxEditField, self)
        return self.fontMetrics().elidedText(self.currentText(), Qt.TextElideMode.ElideRight, max(field.width(), 0))

    def paintEvent(self, event: Any) -> None:  # Qt override
        self._follow_current()
        if self.isEditable():
            super().paintEvent(event)
            return
        painter = QStylePainter(self)
        option = QStyleOptionComboBox()
        self.initStyleOption(option)
        painter.drawComplexControl(QStyle.ComplexControl.CC_ComboBox, option)
        option.currentText = self.shown_text()
        painter.drawControl(QStyle.ControlElement.CE_ComboBoxLabel, option)


def _equal_cap(widths: list[int], room: int) -> int:
    """The widest a tab may be so that the tabs fit ``room`` when only those wider are cut to it:
    short names stay whole and the long ones give up the same width."""
    remaining = room
    ordered = sorted(widths)
    for taken, width in enumerate(ordered):
        left = len(ordered) - taken
        if width * left > remaining:
            return max(remaining // left, 0)
        remaining -= width
    return ordered[-1] if ordered else room


def _tab_room(tabs: QWidget) -> int:
    """The width the tab row has: the tab widget's less the corner button while it is shown."""
    corner = tabs.cornerWidget() if isinstance(tabs, QTabWidget) else None
    return tabs.width() - 4 - (corner.sizeHint().width() if corner is not None and corner.isVisibleTo(tabs) else 0)


class _NarrowTabPadding(QProxyStyle):
    """The application's style with less padding beside a tab's name while names are cut: the
    Fusion style's 24 px per tab took more of a short row than the letters did (ten tabs in
    presentation mode's large font read "Re… F… I…"), and each pixel given back is a letter more."""

    def __init__(self, bar: QTabBar) -> None:
        super().__init__()  # (the application's style: the proxy only changes the one metric)
        self._bar = bar

    def pixelMetric(self, metric: QStyle.PixelMetric, option: Any = None, widget: Any = None) -> int:  # Qt override
        value = super().pixelMetric(metric, option, widget)
        if metric == QStyle.PixelMetric.PM_TabBarTabHSpace and getattr(self._bar, "cut", False):
            return min(value, CUT_TAB_PADDING)
        return value


#: Horizontal padding (px, both sides together) of a tab while the row cuts names.
CUT_TAB_PADDING = 10
_LEFT, _RIGHT = QTabBar.ButtonPosition.LeftSide, QTabBar.ButtonPosition.RightSide


class _ElidedTabBar(QTabBar):
    """Tabs as wide as their names while they fit the tab widget; when they do not, the longest
    names but the open tab's are cut to one common width (and end in "…"), with narrower padding.
    Qt's own eliding shrinks every tab, turning "Results" into "R…" while "Portability" keeps most
    of its letters."""

    _measuring = False  # while Qt's minimumTabSizeHint calls tabSizeHint: then the plain hint

    def __init__(self) -> None:
        super().__init__()
        #: Whether the row is short of room for every whole name (set by the tab widget).
        self.cut = False
        self._style_generation = 0
        self._whole_widths: dict[bool, tuple[tuple[Any, ...], dict[int, int]]] = {}  # by padding
        self._least_widths: dict[bool, tuple[tuple[Any, ...], dict[int, int]]] = {}  # by padding
        self._padding = _NarrowTabPadding(self)
        self.setStyle(self._padding)

    def whole_widths(self) -> dict[int, int]:
        """Each visible tab's width with its whole name at the current padding. Qt asks for every
        tab's size hint while laying out the row, and each answer needs every tab's whole width:
        measured afresh each time that was quadratic in the tabs (a tenth of a window's start-up
        time, and of every resize). The widths are kept until what a tab's width depends on changes:
        a name, an icon, a button, a tab's visibility, the open tab (a style sheet can pad it
        apart), the font, the style or the padding."""
        return self._kept(self._whole_widths, self._measure_whole_widths)

    def _kept(self, store: dict[bool, tuple[tuple[Any, ...], dict[int, int]]],
              measure: Callable[[], dict[int, int]]) -> dict[int, int]:
        """What ``measure`` gives at the current padding, measured again only when what a tab's
        width depends on has changed since (see :meth:`whole_widths`)."""
        key = (
            self._style_generation, self.font().key(), self.iconSize().toTuple(), self.currentIndex(),
            tuple((self.tabText(i), self.isTabVisible(i), self.tabIcon(i).cacheKey(),
                   id(self.tabButton(i, _LEFT)), id(self.tabButton(i, _RIGHT))) for i in range(self.count())),
        )
        kept = store.get(self.cut)
        if kept is None or kept[0] != key:
            kept = store[self.cut] = (key, measure())
        return dict(kept[1])

    def _measure_whole_widths(self) -> dict[int, int]:
        return {i: QTabBar.tabSizeHint(self, i).width() for i in range(self.count()) if self.isTabVisible(i)}

    def changeEvent(self, event: QEvent) -> None:  # Qt override: a style sheet can change the padding
        if event.type() in (QEvent.Type.StyleChange, QEvent.Type.FontChange):
            self._style_generation += 1
        super().changeEvent(event)

    def tabSizeHint(self, index: int) -> QSize:  # Qt override
        hint = super().tabSizeHint(index)
        tabs = self.parentWidget()
        if (self._measuring or tabs is None or self.usesScrollButtons()
                or self.elideMode() == Qt.TextElideMode.ElideNone):
            return hint
        widths = self.whole_widths()
        room = _tab_room(tabs)
        if sum(widths.values()) <= room or index == self.currentIndex():  # the open tab says its whole name
            return hint
        room -= widths.get(self.currentIndex(), 0)
        widths.pop(self.currentIndex(), None)
        floor = self.minimumTabSizeHint(index).width()
        cap = _equal_cap(list(widths.values()), room)
        return QSize(max(min(hint.width(), cap), floor), hint.height())

    def minimumTabSizeHint(self, index: int) -> QSize:  # Qt override
        """Qt measures the minimum by cutting the tab's name for a moment and asking for its size
        hint, which is then the plain hint of the cut name (the row's widths are of whole names).
        The open tab's minimum is its whole name: short of room for every tab's least width, Qt
        shrinks each towards its minimum, and the open tab read "Re…" in a 1024 px window."""
        if index == self.currentIndex() and not self._measuring:
            return QTabBar.tabSizeHint(self, index)
        return self._cut_minimum(index)

    def _measure_least_widths(self) -> dict[int, int]:
        return {i: self._cut_minimum(i).width() for i in range(self.count()) if self.isTabVisible(i)}

    def _cut_minimum(self, index: int) -> QSize:
        self._measuring = True
        try:
            return super().minimumTabSizeHint(index)
        finally:
            self._measuring = False

    def minimumSizeHint(self) -> QSize:  # Qt override
        """The row's least width whichever tab is open: every tab at its cut minimum, plus what the
        widest whole name adds to its own. Summed over the open tab's whole name, the window's
        minimum changed with the tab opened, and a window at its narrowest widened by itself when
        a tab with a longer name was clicked."""
        hint = super().minimumSizeHint()
        shown = [i for i in range(self.count()) if self.isTabVisible(i)]
        if (self._measuring or not shown or self.usesScrollButtons()
                or self.elideMode() == Qt.TextElideMode.ElideNone):
            return hint
        whole = self.whole_widths()
        least = self._kept(self._least_widths, self._measure_least_widths)
        extra = max(max(whole.get(i, least[i]) - least[i], 0) for i in shown)
        return QSize(sum(least.values()) + extra, hint.height())


class ElidedTabs(QTabWidget):
    """Tabs that all stay in sight, their names ending in "…" when the row is short of room (the
    whole name as the tab's tool tip), instead of the last ones hidden behind scroll arrows where
    nobody finds them. While names are cut, a *Tabs* button at the row's end lists every tab by its
    whole name: in a narrow window or presentation mode's large font a cut name can shrink to a
    letter or two, and a tool tip is no help on a projector or a touch screen."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTabBar(_ElidedTabBar())
        self.setElideMode(Qt.TextElideMode.ElideRight)
        self.setUsesScrollButtons(False)
        self.currentChanged.connect(self._on_current)
        self.all_tabs = QToolButton(self)
        self.all_tabs.setObjectName("allTabs")
        self.all_tabs.setText("Tabs")
        self.all_tabs.setToolTip("Every tab by its whole name")
        self.all_tabs.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.all_tabs.setAutoRaise(True)
        self.all_tabs_menu = QMenu(self.all_tabs)
        self.all_tabs_menu.aboutToShow.connect(self._fill_menu)
        self.all_tabs.setMenu(self.all_tabs_menu)
        self.setCornerWidget(self.all_tabs, Qt.Corner.TopRightCorner)
        self.all_tabs.hide()

    def keyPressEvent(self, event: QKeyEvent) -> None:  # Qt override
        """Ctrl+Tab (and Ctrl+Shift+Tab) keep the focus among the tabs: a page with nothing to take
        it (one built when first shown stands in as an empty placeholder when Qt hands over the
        focus) let it fall out to the next view, and Ctrl+Tab, which the tabs answer, then no
        longer reached them. It goes to the page's first control, else to the tab bar."""
        super().keyPressEvent(event)
        if event.key() not in (Qt.Key.Key_Tab, Qt.Key.Key_Backtab) \
                or not event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            return
        self.focus_page()

    def step_page(self, step: int) -> None:
        """Open the next (``step`` 1) or previous (-1) tab that can be opened, wrapping round, with
        the focus on its page: what Ctrl+Tab does from anywhere in the window. The tab widget
        answered it only with the focus already inside it; after F5 the focus is on Start, and
        the key did nothing."""
        count = self.count()
        for offset in range(1, count + 1):
            index = (self.currentIndex() + step * offset) % count
            if self.isTabEnabled(index) and self.isTabVisible(index):
                self.setCurrentIndex(index)
                break
        self.focus_page()

    def focus_page(self) -> None:
        """The focus onto the open page's first control, else onto the tab row (kept where it is
        when it is on a control of the page already)."""
        focus = QApplication.focusWidget()
        page, start = self.currentWidget(), self.window()
        # kept where Qt put it only on a control of the page: on the tab row (where a page without
        # controls left it, and every later Ctrl+Tab then kept it) or on the page widget itself
        # (no Tab stop, no name for a screen reader) it goes on to the page's first control
        if (focus is not None and page is not None and page.isAncestorOf(focus)
                and focus.focusPolicy() & Qt.FocusPolicy.TabFocus):
            return
        for candidate in tab_order(start) if page is not None else []:  # the page's first control
            if ((candidate is page or page.isAncestorOf(candidate)) and candidate.isVisible() and candidate.isEnabled()
                    and candidate.focusPolicy() & Qt.FocusPolicy.TabFocus and candidate.focusProxy() is None):
                candidate.setFocus(Qt.FocusReason.TabFocusReason)
                return
        self.tabBar().setFocus(Qt.FocusReason.TabFocusReason)

    def setCurrentWidget(self, widget: QWidget) -> None:  # Qt override
        """Also a view inside a page (one a scroll area holds, as slot importance is): its page is
        shown. Qt ignored such a widget without a word, and a script's switch to it did nothing."""
        page: QWidget | None = widget
        while page is not None and self.indexOf(page) < 0:
            page = page.parentWidget()
        super().setCurrentWidget(page if page is not None else widget)

    def names_cut(self) -> bool:
        """Whether the row is too short for every tab's whole name at the usual padding (without
        the *Tabs* button): then the tabs take the narrow padding."""
        return self.names_width(narrow=False) > self.width() - 4

    def names_elided(self) -> bool:
        """Whether some name is cut even at the narrow padding (without the *Tabs* button): only
        then is the button shown, since with every name whole there is nothing for it to tell."""
        return self.names_width(narrow=True) > self.width() - 4

    def names_width(self, narrow: bool) -> int:
        """The width of every visible tab with its whole name, at the usual or the narrow padding."""
        bar = self.tabBar()
        if not isinstance(bar, _ElidedTabBar):
            return sum(bar.tabSizeHint(i).width() for i in range(bar.count()) if bar.isTabVisible(i))
        before, bar.cut = bar.cut, narrow
        try:
            return sum(bar.whole_widths().values())
        finally:
            bar.cut = before

    def _fill_menu(self) -> None:
        self.all_tabs_menu.clear()
        for index in range(self.count()):
            if not self.isTabVisible(index):
                continue
            action = self.all_tabs_menu.addAction(self.tabText(index))
            action.setCheckable(True)
            action.setChecked(index == self.currentIndex())
            action.triggered.connect(lambda _=False, i=index: self.setCurrentIndex(i))

    def _relayout_tabs(self) -> None:
        """The tab widths depend on this widget's width and the open tab, which Qt's tab bar does not
        watch: setting its icon size (unchanged) marks its layout dirty. The *Tabs* button shows
        exactly while names are cut at the narrow padding, judged without it, so showing it never
        changes the answer."""
        cut = self.names_cut()
        elided = cut and self.names_elided()
        if elided != self.all_tabs.isVisibleTo(self):
            self.all_tabs.setVisible(elided)
        bar = self.tabBar()
        if isinstance(bar, _ElidedTabBar):
            bar.cut = cut
        bar.setIconSize(bar.iconSize())

    def resizeEvent(self, event: Any) -> None:  # Qt override
        self._relayout_tabs()
        super().resizeEvent(event)

    def _on_current(self, _index: int) -> None:
        self._relayout_tabs()

    def tabInserted(self, index: int) -> None:  # Qt override
        super().tabInserted(index)
        if not self.tabToolTip(index):
            self.setTabToolTip(index, self.tabText(index))
        self._relayout_tabs()

    def tabRemoved(self, index: int) -> None:  # Qt override
        super().tabRemoved(index)
        self._relayout_tabs()

    def changeEvent(self, event: QEvent) -> None:  # Qt override: presentation mode changes the font
        super().changeEvent(event)
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):
            self._relayout_tabs()
