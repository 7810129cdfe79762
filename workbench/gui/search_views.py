"""What the search did, the way Optuna Dashboard shows a study: parallel coordinates and slice plots.

Parallel coordinates: one vertical axis per slot and one for the score; each trial is a line through
its values, so the combinations that score well show as bundles. Slice plot: per slot, every trial's
score against that slot's value. Both are drawn only while their tab is shown (a slider move must
not pay for hidden views), from the session model's columns, in a few items (one per style).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtGui import QFont, QFontMetricsF
from PySide6.QtWidgets import QFrame, QLabel, QScrollArea, QVBoxLayout, QWidget

from workbench.gui.plot_widget import plot_widget
from workbench.gui.charts import BEST, FEASIBLE, INFEASIBLE, LABEL_FILL, LABEL_Z, OUTLINE, scatter_item
from workbench.gui.model import SessionModel
from workbench.gui.plot_axes import CategoryAxis, set_plot_font

FEASIBLE_LINE = pg.mkPen(0, 114, 178, 60, width=1)
INFEASIBLE_LINE = pg.mkPen(150, 150, 150, 40, width=1)
BEST_LINE = pg.mkPen(240, 170, 0, 255, width=3)
MAX_VALUE_LABELS = 12
#: Most trials parallel coordinates draw a line for (see :func:`_line_sample`).
MAX_LINES = 2000


def slot_positions(model: SessionModel) -> tuple[list[str], np.ndarray, list[list[Any]]]:
    """Slot names, each trial's value position per slot scaled to 0..1 (rows = trials), and the values."""
    names = model.slot_names
    columns = model.slot_code_columns()
    n = model.n
    scaled = np.zeros((n, len(names)))
    values: list[list[Any]] = []
    for k, name in enumerate(names):
        codes, domain = columns.get(name, (np.zeros(n, dtype=np.int64), [None]))
        order = _display_order(domain)
        rank = np.empty(len(domain), dtype=float)
        rank[order] = np.arange(len(domain))
        scaled[:, k] = rank[codes] / max(len(domain) - 1, 1) if n else 0.0
        values.append([domain[i] for i in order])
    return names, scaled, values


def _display_order(domain: list[Any]) -> list[int]:
    """Numbers ascending, anything else in the slot's own order."""
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in domain):
        return sorted(range(len(domain)), key=lambda i: domain[i])
    return list(range(len(domain)))


class _HiddenUntilShown(QWidget):
    """Redraws when shown and when the model changes while shown; marks itself dirty otherwise."""

    def __init__(self, model: SessionModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self.dirty = True
        for event in (model.ranking_changed, model.session_changed):
            event.connect(self._on_model_changed)

    def _on_model_changed(self, *_: Any) -> None:
        self.dirty = True
        if self.isVisible():
            self.refresh()

    def refresh_if_dirty(self) -> None:
        if self.dirty and self.isVisible():
            self.refresh()

    def showEvent(self, event: Any) -> None:  # Qt override
        super().showEvent(event)
        self.refresh_if_dirty()

    def changeEvent(self, event: QEvent) -> None:  # Qt override
        """A zoomed window (presentation mode) gives the view a larger font: redraw in it."""
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange and hasattr(self, "model"):
            self.dirty = True
            self.refresh_if_dirty()

    def refresh(self) -> None:
        self.dirty = False
        self._refresh()

    def _refresh(self) -> None:
        raise NotImplementedError


def _legend_text(feasible: bool, infeasible: bool, best: bool) -> str:
    """The parallel coordinates' legend: the kinds of line drawn ("infeasible" beside lines that are
    all feasible named a series that was not there)."""
    entries = [(shown, colour, name) for shown, colour, name in (
        (feasible, "#0072b2", "feasible"), (infeasible, "#969696", "infeasible"), (best, "#f0aa00", "best feasible"))
        if shown]
    return " &nbsp; ".join(f'<span style="color:{colour}">━</span> {name}' for _, colour, name in entries)


class ParallelCoordinates(_HiddenUntilShown):
    """One axis per slot plus the score; every successful trial a line, the best one highlighted."""

    def __init__(self, model: SessionModel, parent: QWidget | None = None) -> None:
        super().__init__(model, parent)
        self.names_axis = CategoryAxis("bottom", title="axes")
        self.plot = plot_widget(background="w", axisItems={"bottom": self.names_axis}, enableMenu=False)
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.hideButtons()
        self.plot.getAxis("left").setLabel("value on each axis")
        self.plot.getAxis("left").setTicks([[(0.0, "low"), (1.0, "high")]])
        self.infeasible = pg.PlotDataItem(pen=INFEASIBLE_LINE, connect="finite")
        self.feasible = pg.PlotDataItem(pen=FEASIBLE_LINE, connect="finite")
        self.best = pg.PlotDataItem(pen=BEST_LINE)
        for item in (self.infeasible, self.feasible, self.best):
            self.plot.addItem(item)
        self.axis_lines: list[pg.InfiniteLine] = []
        self.value_labels: list[pg.TextItem] = []
        self.axis_names: list[str] = []
        self._drawn: tuple[list[str], list[list[Any]], int] | None = None  # what the value labels were drawn for
        self.plot.getPlotItem().getViewBox().sigResized.connect(self._on_resized)
        self.legend = legend = QLabel(_legend_text(True, True, True))
        legend.setObjectName("plotLegend")  # sized by the style sheets, so the zoom reaches it
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(_wrapping(QLabel("<b>Parallel coordinates</b>: every successful trial across its slot values "
                                          "and score")))
        layout.addWidget(_wrapping(legend))
        self.sample_note = _wrapping(QLabel(""))
        self.sample_note.setVisible(False)
        layout.addWidget(self.sample_note)
        layout.addWidget(self.plot, 1)

    def _refresh(self) -> None:
        model, ranking = self.model, self.model.ranking
        names, scaled, values = slot_positions(model)
        self.axis_names = names + ["score"]
        self._draw_axes(names, values)
        if ranking is None or model.n == 0:
            for item in (self.infeasible, self.feasible, self.best):
                item.setData([], [])
            self.legend.setText("")  # (not the last session's lines)
            return
        score = np.asarray(ranking.score, dtype=float)
        ok = ~model.failed_mask()
        feasible = np.asarray(ranking.feasible, dtype=bool)
        rows = np.column_stack([scaled, np.nan_to_num(score, nan=0.0)])
        drawn = _line_sample(ok, MAX_LINES)
        for item, mask in ((self.feasible, drawn & feasible), (self.infeasible, drawn & ~feasible)):
            item.setData(*_polylines(rows[mask]))
        legend = _legend_text(bool((drawn & feasible).any()), bool((drawn & ~feasible).any()), ranking.best is not None)
        if self.legend.text() != legend:  # the series drawn, as every chart's legend names them
            self.legend.setText(legend)
        shown, total = int(drawn.sum()), int(ok.sum())
        self.sample_note.setText(f"{shown:,} of {total:,} successful trials drawn (an even sample; the best "
                                 "feasible always)" if shown < total else "")
        self.sample_note.setVisible(shown < total)
        best = ranking.best
        if best is not None:
            self.best.setData(np.arange(rows.shape[1], dtype=float), rows[best])
        else:
            self.best.setData([], [])

    def _labels_per_axis(self) -> int:
        """As many value labels per axis as its height has lines for (a zoomed font has fewer)."""
        height = self.plot.getPlotItem().getViewBox().height()
        line = QFontMetricsF(self.font()).height() * 1.2
        return max(2, min(MAX_VALUE_LABELS, int(height // line))) if height > 0 else MAX_VALUE_LABELS

    def _on_resized(self, *_: Any) -> None:
        if self._drawn is not None and self._labels_per_axis() != self._drawn[2]:
            self._draw_axes(self._drawn[0], self._drawn[1])
        elif self._drawn is not None:
            self._fit_x_range(len(self._drawn[0]))

    def _fit_x_range(self, k: int) -> None:
        """Room right of the score axis for its value labels (drawn to its right): a fixed margin
        cut "0.5" in half in presentation mode's font or a narrow tab."""
        width = self.plot.getPlotItem().getViewBox().width()
        score_labels = self.value_labels[-3:]  # 0, 0.5 and 1, drawn last
        text = max((label.boundingRect().width() for label in score_labels), default=0.0) + 6
        right = 0.4
        if 0 < text < width:  # the margin m, in axis units, that the labels' pixels take: m = text * (0.5 + k + m) / width
            right = max(right, text * (0.5 + k) / (width - text))
        self.plot.setXRange(-0.5, k + right, padding=0)

    def _draw_axes(self, names: list[str], values: list[list[Any]]) -> None:
        for item in self.axis_lines + self.value_labels:
            self.plot.removeItem(item)
        self.axis_lines, self.value_labels = [], []
        k = len(names)
        self.names_axis.set_categories(range(k + 1), names + ["score"])
        font = QFont(self.font())  # the window's zoom reaches the values drawn on the plot this way
        most = self._labels_per_axis()
        for i in range(k + 1):
            line = pg.InfiniteLine(pos=i, angle=90, pen=pg.mkPen(60, 60, 60, 200, width=1))
            self.plot.addItem(line)
            self.axis_lines.append(line)
        for i, domain in enumerate(values):
            step = max(1, int(np.ceil(len(domain) / most)))
            for j in range(0, len(domain), step):
                label = pg.TextItem(str(domain[j]), color=(30, 30, 30), anchor=(0, 0.5), fill=LABEL_FILL)
                label.setFont(font)
                label.setZValue(LABEL_Z)  # over the configs' lines, which crossed the values out
                label.setPos(i, j / max(len(domain) - 1, 1))
                self.plot.addItem(label)
                self.value_labels.append(label)
        self._drawn = (names, values, most)
        for score in (0.0, 0.5, 1.0):
            label = pg.TextItem(f"{score:g}", color=(30, 30, 30), anchor=(0, 0.5), fill=LABEL_FILL)
            label.setFont(font)
            label.setZValue(LABEL_Z)
            label.setPos(k, score)
            self.plot.addItem(label)
            self.value_labels.append(label)
        self._fit_x_range(k)
        self.plot.setYRange(-0.05, 1.05, padding=0)

    def value_label_texts(self) -> list[str]:
        return [label.toPlainText() for label in self.value_labels]


def _line_sample(ok: np.ndarray, most: int) -> np.ndarray:
    """``ok``, or an even sample of ``most`` of its rows (the same rows each time): a line per
    trial of a recording of 18,000 configs across 16 axes took the window 5 s to draw, and tens of
    thousands of overlaid lines show no more than a few thousand do."""
    rows = np.flatnonzero(ok)
    if len(rows) <= most:
        return ok
    picked = np.zeros_like(ok)
    picked[np.random.default_rng(0).choice(rows, most, replace=False)] = True
    return picked


def _polylines(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All rows as one path: x = 0..k per row, NaN between rows (``connect="finite"`` breaks there)."""
    if not len(rows):
        return np.empty(0), np.empty(0)
    n, k = rows.shape
    x = np.tile(np.append(np.arange(k, dtype=float), np.nan), n)
    y = np.column_stack([rows, np.full(n, np.nan)]).ravel()
    return x, y


def _wrapping(label: QLabel) -> QLabel:
    """A heading that wraps: one line long in presentation mode's font, it set the tab's minimum
    width, and the bottom splitter took the source view's room whenever the tab was shown."""
    label.setWordWrap(True)
    return label


#: Lines of text a slice plot keeps room for (ticks, value names, the slot's name) at the least.
MIN_PLOT_LINES = 11


class SlicePlots(_HiddenUntilShown):
    """Per slot, the score of every successful trial against that slot's value (jittered within a value)."""

    def __init__(self, model: SessionModel, parent: QWidget | None = None) -> None:
        super().__init__(model, parent)
        self.canvas = self._new_canvas()
        self.plots: dict[str, Any] = {}
        self.points: dict[str, tuple[Any, Any, Any]] = {}
        self.columns = 0
        #: the slots laid out and the one whose plot a re-layout of the same slots scrolls back to
        self._kept_in_view: tuple[list[str], str | None] = ([], None)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(_wrapping(QLabel("<b>Slice plot</b>: score against each slot's value "
                                          "(blue feasible, grey infeasible, star the best)")))
        # the plots keep a readable height and the tab scrolls: with eight slots in presentation
        # mode at 1440 px, each plot was about 10 px high, without ticks
        self.scroller = QScrollArea()
        self.scroller.setAccessibleName("Slice plots")
        self.scroller.setObjectName("focusFramed")  # a Tab stop: the style sheet frames it while focused
        self.scroller.setWidgetResizable(True)
        self.scroller.setFrameShape(QFrame.Shape.NoFrame)
        self.scroller.setWidget(self.canvas)
        layout.addWidget(self.scroller, 1)

    @staticmethod
    def _new_canvas() -> pg.GraphicsLayoutWidget:
        canvas = pg.GraphicsLayoutWidget()
        canvas.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # no keys, no focus frame (see plot_widget)
        canvas.setBackground("w")
        return canvas

    def _columns(self, count: int) -> int:
        """As many plots side by side as leave each about 18 characters of width (at most 4):
        narrower, a slot's value names had no room under its plot. (The width the scroll area
        gives its canvas: a canvas just made has none yet.)"""
        em = QFontMetricsF(self.font()).horizontalAdvance("M")
        width = self.scroller.viewport().width()
        return max(1, min(4, count, int(width // (18 * em)) if width > 0 else 4))

    def resizeEvent(self, event: Any) -> None:  # Qt override
        super().resizeEvent(event)
        if self.plots and self._columns(len(self.plots)) != self.columns:
            self._kept_in_view = (list(self.plots), self._top_slot())
            self.plots = {}  # laid out again at the next refresh
            self.dirty = True
            # from the event loop, not inside the resize: clearing the canvas's plots while the
            # window was laid out (a zoom reset, then a resize) crashed Qt's paint of the scene
            QTimer.singleShot(0, self, self.refresh_if_dirty)  # (not after the view is gone)

    def _top_slot(self) -> str | None:
        """The first slot whose plot shows at least half its height at the top of the scrolled
        view (None at the top: a layout with other columns then starts at the top as well)."""
        offset = self.scroller.verticalScrollBar().value()
        if offset <= 0:
            return None
        shown = sorted((plot.geometry().top(), plot.geometry().left(), name) for name, plot in self.plots.items()
                       if plot.geometry().center().y() >= offset)
        return shown[0][2] if shown else None

    def _scroll_to(self, name: str) -> None:
        """Scroll so that ``name``'s plot starts the view, once the new canvas has its height
        (the scroll range follows the canvas's layout, which the event loop does)."""
        plot = self.plots.get(name)
        if plot is not None:
            self.scroller.verticalScrollBar().setValue(int(plot.geometry().top()))

    def _plot_height(self) -> int:
        """The least height a plot keeps: room for its ticks, its value names and its title."""
        return int(QFontMetricsF(self.font()).height() * MIN_PLOT_LINES)

    def _rebuild(self, names: list[str]) -> None:
        """New plots on a new canvas. Taking the plots out of the canvas they were drawn on
        (``clear``) left the scene's index pointing at deleted items now and then, and its next
        paint crashed the program (about one rebuild in ten after a zoom and a resize); a scene
        that is dropped whole, from the event loop, holds no such pointer."""
        old = self.scroller.takeWidget()
        if old is not None:
            old.hide()
            old.deleteLater()
        self.canvas = self._new_canvas()
        self.scroller.setWidget(self.canvas)
        self.plots, self.points = {}, {}
        self.columns = self._columns(len(names))
        for i, name in enumerate(names):
            plot = self.canvas.addPlot(row=i // self.columns, col=i % self.columns,
                                       axisItems={"bottom": CategoryAxis("bottom", title=name)}, enableMenu=False)
            plot.setMouseEnabled(x=False, y=False)
            plot.hideButtons()
            plot.setLabel("bottom", name)
            plot.setLabel("left", "score")
            plot.showGrid(y=True, alpha=0.25)
            items = (scatter_item(None, size=5, pen=INFEASIBLE), scatter_item(FEASIBLE, size=5), scatter_item(BEST, symbol="star", size=14, pen=OUTLINE))
            for item in items:
                plot.addItem(item)
            self.plots[name] = plot
            self.points[name] = items

    def _refresh(self) -> None:
        model, ranking = self.model, self.model.ranking
        names, _, values = slot_positions(model)
        kept = None
        if list(self.plots) != names:
            # a new width's columns keep the plot the person was looking at in view; other slots
            # (another kernel, opened before the re-layout) start at the top
            laid_out, slot = self._kept_in_view
            kept, self._kept_in_view = (slot if laid_out == names else None), ([], None)
            self._rebuild(names)
        # their least height in the font in force (a zoom changes it without a rebuild)
        rows = -(-len(names) // self.columns) if names else 0
        self.canvas.setMinimumHeight(rows * self._plot_height())
        if kept in self.plots:
            QTimer.singleShot(0, self, functools.partial(self._scroll_to, kept))
        font = QFont(self.font())  # (empty plots too: their axes are read in the zoom in force)
        for plot in self.plots.values():
            set_plot_font(plot, font)
        if ranking is None or model.n == 0:
            for items in self.points.values():
                for item in items:
                    item.setData([], [])
            return
        score = np.asarray(ranking.score, dtype=float)
        ok = ~model.failed_mask() & np.isfinite(score)
        feasible = np.asarray(ranking.feasible, dtype=bool)
        index = np.arange(model.n)
        jitter = (np.random.default_rng(0).random(model.n) - 0.5) * 0.3  # fixed: points do not dance
        columns = model.slot_code_columns()
        for name, domain in zip(names, values):
            codes, original = columns[name]
            order = _display_order(original)
            rank = np.empty(len(original), dtype=float)
            rank[order] = np.arange(len(original))
            x = rank[codes] + jitter
            infeasible_items, feasible_items, best_item = self.points[name]
            f, i = ok & feasible, ok & ~feasible
            feasible_items.setData(x=x[f], y=score[f], data=index[f])
            infeasible_items.setData(x=x[i], y=score[i], data=index[i])
            best = ranking.best
            # on its own point, jittered as it is (at the value's centre it drew the best twice)
            best_item.setData(x=[x[best]], y=[score[best]], data=[best]) if best is not None else best_item.setData([], [])
            plot = self.plots[name]
            plot.getAxis("bottom").set_categories(range(len(domain)), [str(v) for v in domain])
            plot.setXRange(-0.5, len(domain) - 0.5, padding=0)  # half a value's room beside the outer labels
