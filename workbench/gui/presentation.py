"""Presentation mode and zoom: the window readable from the back of a lecture room.

One zoom factor scales the window's fonts, the chart markers, axis tick and label fonts and the
chart legends together; presentation mode is a zoom of 1.5 with one key. In a window too narrow for
its controls at that zoom the controls take what fits and the charts keep 1.5 (``Zoom.chart_factor``).
The factor is remembered in the window's settings, so a teacher who set it up once finds it again.
"""

from __future__ import annotations

import math

from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtGui import QAction, QFont, QKeySequence
from PySide6.QtWidgets import QToolBar, QToolButton

from workbench.gui.fast_scatter import FastScatter
from workbench.gui.plot_axes import set_plot_font

ZOOM_STEP = 1.15
ZOOM_RANGE = (0.7, 2.5)
PRESENTATION_ZOOM = 1.5
#: The left column's width (constraints, weights, the recommendation) at 100 %: it grows with the
#: zoom, as its text does, or the recommendation wrapped every line in presentation mode while the
#: charts beside it had room to spare.
LEFT_COLUMN_PX = 340
#: Share of the window the zoom may give the left column at most: the charts keep the rest, which at
#: 1440 px in presentation mode their headers need whole (a quarter leaves them 20 px less).
LEFT_COLUMN_SHARE = 0.25
#: What the trial detail keeps when the result tabs take room from it to show every name whole: its
#: first lines and the start of each source line (the config's defines) stay readable.
DETAIL_MIN_PX = 320
SETTINGS_KEY = "view/zoom"


def zoom_chart(chart: Any, factor: float, base_point_size: float) -> None:
    """Markers, tick labels, axis titles and the legend line of one chart at ``factor``."""
    for item in chart.plot.getPlotItem().items:
        if isinstance(item, FastScatter):
            item.set_scale(factor)
    selected = getattr(chart, "selected_item", None)
    if isinstance(selected, FastScatter):
        selected.set_scale(factor)
    zoom_axes(chart.plot.getPlotItem(), factor, base_point_size)
    legend_size = 8.0 * styled_scale(base_point_size, factor)
    chart.legend.setStyleSheet(f"font-size: {legend_size:.1f}pt; color: #333;")


def zoom_axes(plot_item: Any, factor: float, base_point_size: float) -> None:
    """Tick labels, axis titles and the texts drawn inside one plot (a message where there is no
    data, the roofs' figures) at ``factor``. Texts a view draws anew on each refresh take the
    view's font when they are made (the window's zoom sets it), and the view redraws on a change."""
    font = QFont()
    font.setPointSizeF(base_point_size * factor)
    set_plot_font(plot_item, font)
    # the plot's own list too: a text added with ignoreBounds (a chart's "no data" message) is not
    # among the view box's added items, and kept its normal size in presentation mode
    for item in {id(i): i for i in [*plot_item.items, *plot_item.getViewBox().addedItems]}.values():
        if isinstance(item, pg.TextItem):
            item.setFont(font)
        # a limit line's label ("max latency 8 ms") is the line's child, not an item of the plot:
        # it stayed at half the tick labels' height on a projector
        label = getattr(item, "label", None) if isinstance(item, pg.InfiniteLine) else None
        if isinstance(label, pg.TextItem):
            label.setFont(font)


#: point sizes the application style sheet gives some widgets (``resources/styles/workbench.qss``)
STYLED_POINT_SIZES = {"QLabel#cardTitle": 11.0, "QLabel#plotLegend": 8.0, "QLabel#smallNote": 8.0}
#: the application font those sizes were chosen beside (Qt's usual on a Linux desktop)
DESIGN_POINT_SIZE = 9.0


def styled_scale(base_point_size: float, factor: float) -> float:
    """How much larger than in the style sheet its fixed sizes are drawn: with the zoom, and with
    the person's own application font. Fixed, a 14 pt desktop font left the card's title at 11 pt
    under 14 pt text and the chart legends at 8 pt."""
    return factor * base_point_size / DESIGN_POINT_SIZE


def zoom_style_sheet(base_point_size: float, factor: float) -> str:
    """The window's own style sheet at ``factor`` (empty at 1 with a 9 pt application font).

    Why: under an application style sheet Qt stops a parent's font from reaching most child
    widgets, so setting the window's font alone left nearly every label and box at its old size;
    a rule on the window's own sheet cascades to every widget in it, and the widgets the
    application sheet sizes keep their size relative to the rest."""
    scale = styled_scale(base_point_size, factor)
    rules = [] if abs(factor - 1.0) < 1e-9 else [f"QWidget {{ font-size: {base_point_size * factor:.1f}pt; }}"]
    if rules or abs(scale - 1.0) >= 1e-9:
        rules += [f"{selector} {{ font-size: {size * scale:.1f}pt; }}" for selector, size in STYLED_POINT_SIZES.items()]
    return "\n".join(rules)


class _RefitProgressRow(QObject):
    """Fits the progress row again when the run bar's width or either bar's visibility changes
    without a resize: a button that grew ("Options (1)"), a bar hidden and shown again from the
    tool bars' context menu left the progress in the overflow menu until the window was resized.
    Once per burst of events, after they are handled (the bar's new size hint is known then)."""

    WATCHED = (QEvent.Type.LayoutRequest, QEvent.Type.Show, QEvent.Type.Hide)

    def __init__(self, zoom: "Zoom") -> None:
        super().__init__(zoom.window)
        self.zoom = zoom
        self._due = False

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # Qt override
        if event.type() in self.WATCHED and not self._due:
            self._due = True
            QTimer.singleShot(0, self, self._refit)
        return False

    def _refit(self) -> None:
        self._due = False
        self.zoom.fit_progress_row()


class Zoom:
    """The window's zoom: View menu actions (Ctrl+ / Ctrl- / Ctrl+0, presentation mode on F11)."""

    def __init__(self, window: Any) -> None:
        self.window = window
        self.base_font = QFont(window.font())
        self.base_point_size = self.base_font.pointSizeF() if self.base_font.pointSizeF() > 0 else 9.0
        self.factor = 1.0
        #: The charts' zoom (markers, axis and legend fonts): the controls' one, except in
        #: presentation mode, where the charts stay at :data:`PRESENTATION_ZOOM` even when the
        #: window is too narrow for its controls at that size (a 1024 px projector): there the
        #: controls are taken down to what fits and the charts, what the room looks at, are not.
        self.chart_factor = 1.0
        #: The last note of a zoom smaller than asked for ("" before any), which a new recommendation clears.
        self.said = ""
        #: the left column's width as the zoom last set it (None: never): another width is the person's
        self._left_width_set: int | None = None
        #: whether the person set the split between the result tabs and the trial detail (dragged it
        #: in this window, or in an earlier one whose layout was restored): then it is theirs to keep
        self.tab_split_by_person = False
        menu = window.menuBar().addMenu("&View")
        self.presentation_action = QAction("&Presentation mode (large fonts and markers)", window)
        self.presentation_action.setCheckable(True)
        self.presentation_action.setShortcut(QKeySequence("F11"))
        self.presentation_action.toggled.connect(self._on_presentation)
        menu.addAction(self.presentation_action)
        for text, keys, slot in (("Zoom &in", QKeySequence.StandardKey.ZoomIn, self.zoom_in),
                                 ("Zoom &out", QKeySequence.StandardKey.ZoomOut, self.zoom_out),
                                 ("&Reset zoom", QKeySequence("Ctrl+0"), lambda: self.set_factor(1.0))):
            action = QAction(text, window)
            action.setShortcut(keys)
            if keys == QKeySequence.StandardKey.ZoomIn:  # Ctrl+= as well: "+" needs Shift on most keyboards
                action.setShortcuts([QKeySequence(QKeySequence.StandardKey.ZoomIn), QKeySequence("Ctrl+=")])
            action.triggered.connect(slot)
            menu.addAction(action)
        self.menu = menu
        toolbar = getattr(window, "toolbar", None)
        if toolbar is not None:
            self._refit = _RefitProgressRow(self)
            for bar in (toolbar.run_bar, toolbar.progress_row):
                bar.installEventFilter(self._refit)
        saved = window.settings.value(SETTINGS_KEY)
        try:
            factor = float(saved) if saved is not None else 1.0
        except (TypeError, ValueError, OverflowError):  # an integer of 400 digits is no float
            factor = 1.0
        if not math.isfinite(factor):  # "nan" in an edited settings file: no font has that size
            factor = 1.0
        self.set_factor(factor, remember=False)

    def fit_to_screen(self, quiet: bool = False) -> None:
        """A remembered zoom chosen on a wider screen (or window) taken down to what this one's
        controls fit, tool bars included; called once the window's geometry is restored, so the
        screen is the one it reopens on, and again once it is first shown, when its tool bars have
        their width."""
        room = self._room()
        # (tool bars are laid out only once the window is on screen: before, each seems to overflow)
        shown = self.window.isVisible()
        before = self.factor
        # still presentation mode, its charts as large, the controls as large as this window fits:
        # ticked, so F11 turns it off (unticked, each F11 turned it "on" again at the same zoom)
        # (the tick, not the factor: a first pass, before the window was shown, may have taken a
        # presentation down to 130% already, which the second pass read as no presentation)
        presenting = self.presentation_action.isChecked() or before >= PRESENTATION_ZOOM - 1e-6
        while self.factor > 1.0 and (self.window.minimumSizeHint().width() > room
                                     or (shown and self._tool_bar_overflows())):
            self.set_factor(max(self.factor / ZOOM_STEP, 1.0), remember=False, presenting=presenting)
        if self.factor < before and shown and not quiet:  # said: the presenter asked for larger text than this
            # short enough for the status bar of the window it speaks of (the longer sentence was
            # cut at 1280 px in presentation mode, the case it is for)
            what = f"controls at {self.factor:.0%}, charts at {self.chart_factor:.0%}" if presenting else \
                f"zoom {self.factor:.0%}, not {before:.0%}"
            self.said = f"{what}: the controls need a window wider than {self.window.width()} px"
            self.window.statusBar().showMessage(self.said, 10000)
        if shown:
            self.fit_panes()  # (before the window is laid out, its splitters have no width to share)

    def apply_to(self, root: Any) -> None:
        """The zoom in force on the charts and plots inside ``root`` (the window, or a view built
        after the zoom was set: a tab shown for the first time). Fonts of widgets follow the
        window's font by themselves; pyqtgraph's tick and label fonts do not."""
        charts = [chart for chart in self.window.built_charts.values() if chart is root or root.isAncestorOf(chart)]
        for chart in charts:
            zoom_chart(chart, self.chart_factor, self.base_point_size)
        charted = {id(chart.plot) for chart in charts}
        for plot in root.findChildren(pg.PlotWidget):  # the other views' plots: their axis fonts
            if id(plot) not in charted:
                zoom_axes(plot.getPlotItem(), self.factor, self.base_point_size)
        for canvas in root.findChildren(pg.GraphicsLayoutWidget):  # plots in a grid (the slice plots)
            for item in canvas.ci.items:
                if isinstance(item, pg.PlotItem):
                    zoom_axes(item, self.factor, self.base_point_size)

    def zoom_in(self) -> None:
        """One step larger, unless the window's controls would then need more width than the
        window or its screen has: Qt widened the window past a 1440 px screen (2,028 px after three
        steps in presentation mode), and a reset zoom left it that wide. The step is taken back and
        the status bar says why."""
        before, presenting = self.factor, self.presentation_action.isChecked()
        remembered = self.window.settings.value(SETTINGS_KEY)  # what a step taken back leaves as it was
        room = self._room()
        self.set_factor(self.factor * ZOOM_STEP, presenting=presenting or None)
        if self.factor <= before:
            return

        def take_back() -> None:
            self.set_factor(before, remember=False, presenting=presenting)
            if remembered is None:
                self.window.settings.remove(SETTINGS_KEY)
            else:
                self.window.settings.setValue(SETTINGS_KEY, remembered)

        if self.window.minimumSizeHint().width() > room:
            take_back()
            self.window.statusBar().showMessage(
                f"zoom stays at {before:.0%}: larger, the window's controls would need more than {room} px, "
                "the width of the window or its screen", 8000)
        elif why := self._tool_bar_short():
            take_back()
            said = ("the run's progress would need a row of its own" if why == "wrap" else
                    "the tool bar would move the run's controls into its overflow menu")
            self.window.statusBar().showMessage(
                f"zoom stays at {before:.0%}: larger, {said}; a wider window has room for it", 8000)

    def fit_progress_row(self) -> bool:
        """Put the run's progress on the run bar's row where both fit the window's width, else on a
        row of its own below it; whether it has a row of its own. Tool bars sharing a row do not
        wrap: the one short of room moves its last controls into an overflow menu, which at
        1024 px took the progress bar and the run's state out of sight."""
        toolbar = getattr(self.window, "toolbar", None)
        row = getattr(toolbar, "progress_row", None)
        if toolbar is None or row is None:  # (the zoom is set while the window is being built)
            return False
        # the run bar's whole width (every control, as it lays them out when it has room) and the
        # least the progress needs (its bar and a dozen characters of its state); a bar the person
        # hid (the tool bars' context menu) takes no room
        shown = [bar.isVisibleTo(self.window) for bar in (toolbar.run_bar, row)]
        wrap = all(shown) and toolbar.run_bar.sizeHint().width() + toolbar.progress_row_width() > self.window.width()
        if wrap != self.window.toolBarBreak(row):
            if wrap:
                self.window.insertToolBarBreak(row)
            else:
                self.window.removeToolBarBreak(row)
        return wrap

    def _tool_bar_overflows(self) -> bool:
        """Whether the tool bars are short of room at this zoom (see :meth:`_tool_bar_short`)."""
        return bool(self._tool_bar_short())

    def _tool_bar_short(self) -> str:
        """"overflow" when a tool bar on show has controls in its overflow menu (its extension
        button is shown), once laid out; "wrap" when, above 100 %, the progress needs a row of its
        own; else "". A tool bar short of room moves its last controls into that menu rather than
        ask for more width, so a zoom the window's minimum width allowed hid the run's progress and
        then its progress bar. (Controls hidden on purpose, such as another backend's, are not in
        that menu.) A zoom step is not worth a row of the charts' height; at 100 % and below the
        progress has that row, since nothing smaller gives it room (a step back to 100 % from
        below is never refused for it)."""
        if self.fit_progress_row() and self.factor > 1.0 + 1e-6 and not self._wraps_at_normal_zoom():
            return "wrap"
        layout = self.window.layout()
        if layout is not None:  # tool bars sharing a row get their widths there, not in their own layouts
            layout.activate()
        for bar in self.window.findChildren(QToolBar):
            if not bar.isVisibleTo(self.window):
                continue
            bar.layout().activate()
            extension = bar.findChild(QToolButton, "qt_toolbar_ext_button")
            if extension is not None and extension.isVisibleTo(bar):
                return "overflow"
        return ""

    def _wraps_at_normal_zoom(self) -> bool:
        """Whether the progress would need its own row at 100% too (a 1024 px window): then a
        larger zoom adds no row, and refusing it for one ("the run's progress would need a row of
        its own", with the row already there) kept the controls at 100% for good. The tool bars'
        widths taken back to 100% in proportion to the font."""
        toolbar = getattr(self.window, "toolbar", None)
        if toolbar is None or self.factor <= 0:
            return False
        wanted = toolbar.run_bar.sizeHint().width() + toolbar.progress_row_width()
        return wanted / self.factor > self.window.width()

    def _room(self) -> int:
        """The width the window's controls may take: the window's, or its screen's when wider."""
        screen = self.window.screen()
        return max(self.window.width(), screen.availableGeometry().width() if screen is not None else 0)

    def zoom_out(self) -> None:
        """One step smaller; from presentation mode, one step below its charts' zoom (the
        controls as large as fit there): a step from the controls' zoom took the charts from 150%
        to 87% at once, smaller than the window outside presentation mode."""
        if self.presentation_action.isChecked() and self.chart_factor > self.factor:
            self.set_factor(self.chart_factor / ZOOM_STEP, remember=False, presenting=False)
            if self.window.isVisible():
                self.fit_to_screen(quiet=True)  # (asked for smaller: a note of "not 130%" would puzzle)
            # the zoom shown is the one the next window opens with (130% was remembered, never shown)
            self.window.settings.setValue(SETTINGS_KEY, self.factor)
            return
        self.set_factor(self.factor / ZOOM_STEP)

    def _on_presentation(self, on: bool) -> None:
        if not on and self.said and self.window.statusBar().currentMessage() == self.said:
            self.window.statusBar().clearMessage()  # (it spoke of the presentation just left)
        self.set_factor(PRESENTATION_ZOOM if on else 1.0)
        if on and self.window.isVisible():
            # as a zoom step is taken back: at 1280 px, 150 % moved the progress bar and the run's
            # state into the tool bar's overflow menu, and a live run showed no progress at all
            self.fit_to_screen()

    def _tick_presentation(self, on: bool) -> None:
        """The View menu's tick, set without acting on it (the zoom is being set already)."""
        self.presentation_action.blockSignals(True)
        self.presentation_action.setChecked(on)
        self.presentation_action.blockSignals(False)

    def set_left_column(self) -> bool:
        """Whether the left column has the width the zoom gave it (not one the person dragged to)."""
        main = getattr(self.window, "splitters", {}).get("main")
        return main is not None and self._left_width_set is not None and main.sizes()[0] == self._left_width_set

    def fit_left_column(self) -> None:
        """Give the left column the width its zoomed text needs (:data:`LEFT_COLUMN_PX` times the
        zoom, at most :data:`LEFT_COLUMN_SHARE` of the window). A width the person chose by
        dragging is only ever widened; one this set is also narrowed again as the zoom comes down."""
        main = getattr(self.window, "splitters", {}).get("main")
        if main is None:
            return
        sizes = main.sizes()
        total = sum(sizes)
        if not total or len(sizes) != 2:
            return
        want = min(int(LEFT_COLUMN_PX * self.factor), int(total * LEFT_COLUMN_SHARE))
        ours = sizes[0] == self._left_width_set
        width = max(want, min(LEFT_COLUMN_PX, sizes[0])) if ours else max(want, sizes[0])
        if width != sizes[0]:
            main.setSizes([width, total - width])
            self._left_width_set = main.sizes()[0]

    def fit_tab_row(self) -> None:
        """Split the row of the result tabs and the trial detail as its stretch does, unless a tab
        name would then be cut (even at the narrow padding) and the detail can give the tabs what
        they lack while keeping :data:`DETAIL_MIN_PX`: at 1280 px the even-handed split cut seven of
        the ten names to a few letters, for 35 px the detail could spare. Called as the window's
        width or zoom changes; never once the person has set the split."""
        bottom = getattr(self.window, "splitters", {}).get("bottom")
        tabs = getattr(self.window, "bottom_tabs", None)
        if bottom is None or tabs is None or self.tab_split_by_person:
            return
        sizes = bottom.sizes()
        total = sum(sizes)
        if len(sizes) != 2 or not total:
            return
        stretch = [bottom.widget(i).sizePolicy().horizontalStretch() for i in range(2)]
        width = round(total * stretch[0] / sum(stretch)) if sum(stretch) else sizes[0]  # the split the stretch gives
        need = tabs.names_width(narrow=True) + 5  # (the names are cut beyond the tabs' width less 4)
        if width < need <= total - DETAIL_MIN_PX:
            width = need
        if width != sizes[0]:
            bottom.setSizes([width, total - width])

    def fit_panes(self) -> None:
        """The progress, the left column and the tab row fitted to the window's new width (after a
        resize or a zoom)."""
        self.fit_progress_row()
        self.fit_left_column()
        self.fit_tab_row()

    def person_set_tab_split(self, *_: object) -> None:
        """The split beside the result tabs is the person's from now on (``splitterMoved``)."""
        self.tab_split_by_person = True

    def present_once(self) -> None:
        """Presentation mode for this window only (``gui --presentation``): the zoom the person
        chose is what the next window opens with, not this one."""
        self.set_factor(PRESENTATION_ZOOM, remember=False)

    def set_factor(self, factor: float, remember: bool = True, presenting: bool | None = None) -> None:
        """The zoom of the controls and the charts; ``presenting``: whether presentation mode stays
        on (None: on from :data:`PRESENTATION_ZOOM` up), which keeps the charts at that zoom at least."""
        low, high = ZOOM_RANGE
        factor = min(max(float(factor), low), high)
        presenting = factor >= PRESENTATION_ZOOM - 1e-6 if presenting is None else presenting
        self.factor = factor
        self.chart_factor = max(factor, PRESENTATION_ZOOM) if presenting else factor
        font = QFont(self.base_font)
        font.setPointSizeF(self.base_point_size * factor)
        self.window.setFont(font)
        self.window.setStyleSheet(zoom_style_sheet(self.base_point_size, factor))
        self.apply_to(self.window)
        self.fit_panes()
        self._tick_presentation(presenting)
        if remember:
            self.window.settings.setValue(SETTINGS_KEY, factor)
