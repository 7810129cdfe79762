"""The three live charts: score per trial, latency vs memory, and a free metric-vs-metric view.

pyqtgraph practice (see STYLE.md): every plot item is created once and fed whole NumPy columns with
``setData`` when the window's refresh timer finds the model changed (never per point: ``addPoints``
re-copies every point per call); a handful of pens and brushes is reused so the symbol atlas caches
them; every point carries ``data=`` = its trial index so hover and click map back to a trial.
"""

from __future__ import annotations

import math
import re
from typing import Any, Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontMetricsF
from PySide6.QtWidgets import QCheckBox, QLabel, QVBoxLayout, QWidget

from workbench.core.domain.metrics import known_direction
from workbench.core.domain.objective import pareto_front
from workbench.core.domain.search_objective import LATENCY_BOUND
from workbench.gui.plot_widget import plot_widget
from workbench.gui.axes import (
    MEMORY_METRICS, can_log, category_ticks, default_rate_metric, default_tradeoff_metric, geometric_slot, has_data,
    single_value_range, tradeoff_metrics, value_ticks,
)
from workbench.gui.chart_header import ChartHeader
from workbench.gui.comparison import best_so_far_steps
from workbench.gui.elided_label import ElidedCombo
from workbench.gui.fast_scatter import FastScatter
from workbench.gui.model import SessionModel
from workbench.gui.plot_axes import ReadableAxis, keep_room_right_of_the_axis, left_title, set_left_title
from workbench.gui.text import describe_trial, dragged_limit, limit_text, metric_label, remeasure_way

# --- the palette: created once, reused by every item (colour-blind-safe Okabe-Ito hues) ----------
#: A slash between letters (a unit: GB/s, GFLOP/s), joined to what follows with a word joiner:
#: Qt breaks lines after a slash, and a no-data note wrapped in a narrow plot read "(GB/" over "s)".
UNIT_SLASH = re.compile(r"(?<=\w)/(?=\w)")

FEASIBLE = pg.mkBrush(0, 114, 178, 170)
#: Infeasible points are grey rings, feasible ones filled: told apart by shape too, not by colour alone
INFEASIBLE = pg.mkPen(120, 120, 120, 200, width=1.2)
FAILED = pg.mkBrush(213, 94, 0, 200)
BEST = pg.mkBrush(240, 190, 0, 255)
DEFAULT = pg.mkBrush(0, 0, 0, 0)
NO_PEN = pg.mkPen(None)
OUTLINE = pg.mkPen(40, 40, 40, 255, width=1.5)
FAILED_PEN = pg.mkPen(213, 94, 0, 220, width=1.5)
PARETO_PEN = pg.mkPen(0, 158, 115, 230, width=2)
BEST_LINE_PEN = pg.mkPen(204, 121, 167, 255, width=2.5)
LIMIT_PEN = pg.mkPen(213, 94, 0, 220, width=2, style=Qt.PenStyle.DashLine)
LIMIT_HOVER_PEN = pg.mkPen(213, 94, 0, 255, width=4)
SELECT_PEN = pg.mkPen(0, 0, 0, 255, width=2.5)
SPREAD_PEN = pg.mkPen(0, 114, 178, 90, width=1)
#: Behind a figure or a value drawn over lines and points (with a z above them), so a line or a
#: marker never strikes it through.
LABEL_FILL = pg.mkBrush(255, 255, 255, 210)
LABEL_Z = 30
#: A chart's message over its points (above the best and default markers, below the limit lines
#: and the selection ring).
NOTE_Z = 12

pg.setConfigOptions(antialias=False, background="w", foreground="k")


def scatter_item(brush: Any, symbol: str = "o", size: float = 6, pen: Any = NO_PEN, hover: Any = None,
             marker: bool = False) -> FastScatter:
    return FastScatter(symbol=symbol, size=size, pen=pen, brush=brush, tip=hover, marker=marker)


#: The tightest latency limit a dragged line sets (ms) while no trial has a latency: positive.
MIN_LATENCY_LIMIT_MS = 1e-3


class ChartBase(QWidget):
    """A plot widget bound to the model, refreshed by :meth:`refresh` when the model changed."""

    title = ""
    hint = ""

    def __init__(self, model: SessionModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self.dirty = True
        # enableMenu=False at construction: pyqtgraph builds a view-box menu otherwise (2 ms a plot),
        # which these charts never show
        self.plot = plot_widget(axisItems={"bottom": ReadableAxis("bottom"), "left": ReadableAxis("left")},
                                  enableMenu=False)
        self.plot.setMinimumHeight(160)
        self.plot.showGrid(x=True, y=True, alpha=0.25)
        for axis in ("bottom", "left"):  # major and first minor level only: the finest grid costs ~4 ms a paint
            self.plot.getAxis(axis).setStyle(maxTickLevel=1)
        keep_room_right_of_the_axis(self.plot.getPlotItem())
        # One header per chart: the title and the chart's own controls (``self.header.add_group``),
        # on one line when the chart is wide enough and flowing onto more when it is not, so that a
        # header's width never squeezes the chart beside it (see ``chart_header.py``).
        self.header = ChartHeader(self.title, self.hint)
        self.title_label = self.header.title
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        # The legend is a line of text above the plot, not a box over it: inside the plot it covered
        # the points a user looks for first (the best ones, top right of the score chart), and a
        # label wraps on a narrow chart where a legend box would be cut off.
        self.legend = QLabel()
        self.legend.setWordWrap(True)
        self.legend.setContentsMargins(8, 0, 6, 0)
        self.legend.setStyleSheet("font-size: 8pt; color: #333;")
        #: (item, entry) per series, in order; the legend names the series that draw something
        self.legend_entries: list[tuple[Any, str]] = []
        layout.addWidget(self.header)
        layout.addWidget(self.legend)
        layout.addWidget(self.plot, 1)
        model.ranking_changed.connect(self._on_ranking_changed)
        model.objective_changed.connect(self._on_objective_changed)
        model.session_changed.connect(self._on_session_changed)
        model.selection_changed.connect(self._on_selection_changed)
        self.selected_item = scatter_item(pg.mkBrush(0, 0, 0, 0), size=16, pen=SELECT_PEN, marker=True)
        self.selected_item.setZValue(20)
        self.log_x = self.log_y = False
        #: per axis (x, y): the range it is held open at around the one value its points share (None: not held)
        self._held_open: list[tuple[float, float] | None] = [None, None]
        # why the plot is empty, in its middle: an empty frame says nothing to a new user
        # on white over the points (it also says why every point drawn is grey), under the limit
        # lines and the selection ring, which stay to be dragged and seen
        self.no_data = pg.TextItem("", color=(90, 90, 90), anchor=(0.5, 0.5), fill=LABEL_FILL)
        self.no_data.setZValue(NOTE_Z)
        self.no_data.setVisible(False)
        self.plot.addItem(self.no_data, ignoreBounds=True)
        # kept in the middle when the range moves after it was written (a limit line drawn after it
        # stretched the axes and left the text at the plot's edge, cut)
        self.plot.getPlotItem().vb.sigRangeChanged.connect(self._center_no_data)
        self.plot.getPlotItem().vb.sigResized.connect(self._center_no_data)

    def _say_no_data(self, text: str) -> None:
        """Write why the plot is empty in its middle (an empty frame says nothing)."""
        self.no_data.setText(UNIT_SLASH.sub("/\u2060", text))
        self.no_data.setVisible(True)
        self._center_no_data()

    def _sync_tick_values(self) -> None:
        """No tick values while the chart plots nothing: an empty window's charts, or a session's
        whose trials all failed, read "memory" from 0.1 to 0.9 and a latency axis of 2, 5, 9 ms,
        figures of nothing, on a projector. The axis titles stay, and the note in the middle says
        why. (Items that take no part in the range, the note and hidden limit lines, are not points.)"""
        bounds = self.plot.getPlotItem().vb.childrenBounds()
        empty = self.no_data.isVisible() and all(axis_bounds is None for axis_bounds in bounds)
        for name in ("left", "bottom"):
            axis = self.plot.getAxis(name)
            if axis.style.get("showValues", True) == empty:
                axis.setStyle(showValues=not empty)

    def _center_no_data(self, *_: Any) -> None:
        if self.no_data.isVisible():
            view = self.plot.getPlotItem().vb
            (x0, x1), (y0, y1) = view.viewRange()
            self.no_data.setPos((x0 + x1) / 2, (y0 + y1) / 2)
            # wrapped to the plot's width: one line of "the session does not record the device's
            # peak bandwidth and FLOP/s" ran past both edges of a narrow or zoomed plot
            text = self.no_data.textItem
            text.setTextWidth(-1)  # its one-line width, then no wider than the plot
            width = min(text.document().idealWidth(), max(float(view.width()) * 0.9, 40.0))
            option = text.document().defaultTextOption()
            option.setAlignment(Qt.AlignmentFlag.AlignHCenter)
            text.document().setDefaultTextOption(option)
            self.no_data.setTextWidth(width)

    def _open_single_values(self, xs: np.ndarray | None, ys: np.ndarray | None,
                            ticks: Sequence[Sequence[float] | None] = (None, None),
                            held: Sequence[tuple[float, float] | None] = (None, None),
                            lines: Sequence[float | None] = (None, None)) -> None:
        """Give an axis whose points share one value a readable range (:func:`single_value_range`,
        or ``held``'s range for that axis), reaching the axis's limit line too (``lines``: its
        position, None while it is hidden), and hand it back to the automatic range once they
        spread. The range is set only when it changes, so a zoom the person made is not undone by
        every refresh. None: the axis's range is set elsewhere (a text slot's categories)."""
        view = self.plot.getPlotItem().getViewBox()
        logs = (self.log_x, self.log_y)
        for axis, (values, axis_ticks, fixed, line, which) in enumerate(
                zip((xs, ys), ticks, held, lines, (view.XAxis, view.YAxis))):
            if values is None:
                self._held_open[axis] = None
                continue
            around = single_value_range(values, axis_ticks, logs[axis])
            if around is not None and fixed is not None:
                around = fixed
            if around is not None and line is not None and math.isfinite(line) and not around[0] <= line <= around[1]:
                low, high = min(around[0], line), max(around[1], line)
                margin = 0.05 * (high - low)  # (both ends: the point's marker and the line's label)
                # never below 0 on a linear axis of positive values (a latency, memory)
                floor = 0.0 if not logs[axis] and low >= 0 else -math.inf
                around = (max(low - margin, floor), high + margin)
            if around is not None:
                if around != self._held_open[axis]:
                    view.setRange(**{"xRange" if axis == 0 else "yRange": around}, padding=0)
                    self._held_open[axis] = around
            elif self._held_open[axis] is not None:
                self._held_open[axis] = None
                view.enableAutoRange(axis=which)

    def _no_success_text(self) -> str:
        """Why no trial can be drawn when none succeeded: trials stopped early under the latency
        limit are not failures, and "yet" would promise points the session will not get."""
        aborted = int(np.count_nonzero(self.model.aborted_mask()))
        if aborted:
            return f"no successful trial:\n{aborted} stopped early under the latency limit"
        return "no successful trial yet"

    def _add_series(self, item: Any, name: str, glyph: str, style: Any) -> None:
        """Put ``item`` on the plot and ``glyph`` (in the colour of its brush or pen) with ``name`` in the legend."""
        self.plot.addItem(item)
        colour = style.color().name() if style.color().alpha() else "#333333"
        # one entry never breaks inside ("latency p20–" / "p80" did, at its dash: word joiners hold
        # it, as non-breaking spaces hold its words); the line breaks between entries
        kept = name.replace(" ", "&nbsp;").replace("–", "\u2060–\u2060")
        self.legend_entries.append((item, f'<span style="color:{colour}">{glyph}</span>&nbsp;{kept}'))
        self._update_legend()

    def _update_legend(self) -> None:
        """Name only the series drawn now: "Pareto front", "default config" and "latency p20–p80"
        listed over a recording that has none of them explained nothing on a projector."""
        text = " &nbsp; ".join(entry for item, entry in self.legend_entries if _draws_something(item))
        if text != self.legend.text():
            self.legend.setText(text)
        if self.legend.isHidden() == bool(text):
            self.legend.setHidden(not text)

    def export_title(self) -> str:
        """The title an exported picture carries: what is plotted, for which kernel, on which device."""
        session = self.model.session
        if session is None:
            return self.title
        device = (session.device or {}).get("name", "")
        size = self.model.shown_size_label()
        return (f"{self.plotted_title()} · {session.kernel}" + (f" · {size}" if size else "")
                + (f" · {device}" if device else ""))

    def plotted_title(self) -> str:
        return self.title

    def set_log(self, x: bool, y: bool) -> None:
        """Log axes. Scatter items do not follow pyqtgraph's log mode, so their data is given as
        log10 (see :meth:`tx` / :meth:`ty`); line items and the axis ticks follow ``setLogMode``."""
        self.log_x, self.log_y = x, y
        self.plot.setLogMode(x=x, y=y)
        self.refresh()

    def tx(self, values: Any) -> np.ndarray:
        return _log10(values) if self.log_x else np.asarray(values, dtype=float)

    def ty(self, values: Any) -> np.ndarray:
        return _log10(values) if self.log_y else np.asarray(values, dtype=float)

    def _tip(self, x: float, y: float, data: Any) -> str:
        index = int(data) if data is not None else -1
        return describe_trial(self.model, index, self.plotted_metrics()) if 0 <= index < self.model.n else ""

    def plotted_metrics(self) -> tuple[str, ...]:
        """The metrics the chart's axes plot (a hover names them: an on-chip figure the point was
        drawn at was not among the usual ones the text gives)."""
        return ()

    def _clicked(self, _item: Any, points: Any, *_: Any) -> None:
        if len(points):
            self.model.select(int(points[0].data()))

    def _on_ranking_changed(self) -> None:
        self.dirty = True

    def _on_objective_changed(self) -> None:
        self.refresh()  # a slider move redraws at once, not on the next timer tick

    def _on_session_changed(self) -> None:
        self.dirty = True

    def _on_selection_changed(self, index: int | None) -> None:
        self._show_selected(index)

    def refresh_if_dirty(self) -> None:
        if self.dirty:
            self.refresh()

    def refresh(self) -> None:
        self.dirty = False
        self._refresh()
        self._show_selected(self.model.selected)
        self._update_legend()
        self._sync_tick_values()

    def _refresh(self) -> None:
        raise NotImplementedError

    def _xy(self, index: int) -> tuple[float, float] | None:
        return None

    def _show_selected(self, index: int | None) -> None:
        xy = self._xy(index) if index is not None else None
        if xy is not None:
            xy = (float(self.tx([xy[0]])[0]), float(self.ty([xy[1]])[0]))
        if xy is None or not all(math.isfinite(v) for v in xy):
            self.selected_item.setData([], [])
        else:
            self.selected_item.setData([xy[0]], [xy[1]])


class ScoreChart(ChartBase):
    """Score of every trial in evaluation order, the best-so-far line, failures along the bottom."""

    title = "Score per trial"
    hint = ("score of each trial in evaluation order (1.0 = best seen, on every weighted metric); the line is "
            "the best so far")

    def __init__(self, model: SessionModel, parent: QWidget | None = None) -> None:
        super().__init__(model, parent)
        self.plot.setLabel("bottom", "trial")
        self.plot.getAxis("bottom").integers = True  # trial numbers: never "6.5"
        set_left_title(self.plot, "score (1 = best seen)")  # relative: a new best moves every point down
        # scores are fractions of the best (1.0 = best seen): never "score (x0.001)" over a flat axis
        self.plot.getAxis("left").enableAutoSIPrefix(False)
        self._y_pinned = False  # the score axis shows 0..1 while no trial has a score
        self.feasible = scatter_item(FEASIBLE, size=5, hover=self._tip)
        self.infeasible = scatter_item(None, size=5, pen=INFEASIBLE, hover=self._tip)
        self.failed = scatter_item(FAILED, symbol="x", size=7, pen=FAILED_PEN, hover=self._tip)
        self.best_line = pg.PlotDataItem(pen=BEST_LINE_PEN, stepMode=None, connect="finite")
        for item, name, glyph, style in ((self.infeasible, "infeasible", "○", INFEASIBLE), (self.feasible, "feasible", "●", FEASIBLE),
                                         (self.failed, "failed (at 0)", "✕", FAILED)):
            self._add_series(item, name, glyph, style)
            item.sigClicked.connect(self._clicked)
        self._add_series(self.best_line, "best so far", "━", BEST_LINE_PEN)
        self.plot.addItem(self.selected_item, ignoreBounds=True)  # a selection must not move the axes

    def _refresh(self) -> None:
        model, ranking = self.model, self.model.ranking
        # with two weighted metrics or more, 1 is a trial best on every one of them, which none may be
        # (a weight that counts: on a metric with a direction that some trial reports)
        counted_weights = [m for m in model.weights.active()
                           if known_direction(m, model.weights.directions) is not None and has_data(model, m)]
        title = "score (1 = best seen)" if len(counted_weights) <= 1 else "score (1 = best on every weight)"
        if left_title(self.plot) != title:
            set_left_title(self.plot, title)
        n = model.n
        index = np.arange(n)
        if ranking is None or n == 0:
            for item in (self.feasible, self.infeasible, self.failed):
                item.setData([], [])
            self.best_line.setData([], [])
            self._pin_y(True)
            self.plot.setXRange(0, 10, padding=0.05)  # trial numbers, not "0.2, 0.4, ..." of an empty axis
            self._say_no_data("no trials yet")
            return
        if ranking.n_feasible == 0:  # every point grey or a cross at 0: why, in short (the narrowest chart:
            # the whole reason, every constraint and the aborted candidates, ran past its top; the
            # card, the status bar and the trade-off chart beside it give it whole)
            why = ranking.why_none(remeasure_way(self.model.session), waits_for_relaxing=True)
            self._say_no_data(why.split("; ")[0] + "\n(the Recommended card says why)" if ranking.n_ok else why)
        elif self.no_data.isVisible():
            self.no_data.setVisible(False)
            self.plot.enableAutoRange(axis="x")
        score = np.asarray(ranking.score, dtype=float)
        # without a single score (every trial failed) the failures alone at 0 would give a
        # hair-thin automatic range around 0, and so would one score (one trial); the scale scores
        # live on reads better
        scored = score[np.isfinite(score)]
        self._pin_y(scored.size == 0 or scored.min() == scored.max())
        feasible = np.asarray(ranking.feasible, dtype=bool)
        failed = ~model.measured_mask()  # an aborted candidate is infeasible, not failed
        ok_infeasible = ~feasible & ~failed
        number = model.trial_numbers()  # x: the trial's number, the table's `#` (data: its row here)
        self.feasible.setData(x=number[feasible], y=score[feasible], data=index[feasible])
        self.infeasible.setData(x=number[ok_infeasible], y=np.nan_to_num(score[ok_infeasible]), data=index[ok_infeasible])
        self.failed.setData(x=number[failed], y=np.zeros(int(failed.sum())), data=index[failed])
        rows, values = best_so_far_steps(model.best_so_far())
        self.best_line.setData(number[rows.astype(np.int64)].astype(float), values)
        # one trial (or one trial number): that number and the next ten (half a trial left of it, so
        # its point shows whole), not -4 to 4; a later size of a sweep numbers its trials on from
        # the earlier sizes'
        first = float(number.min()) if number.size else 0.0
        self._open_single_values(number.astype(float), None, held=((first - 0.5, first + 10.0), None))  # (y: _pin_y)

    def _pin_y(self, pinned: bool) -> None:
        """Show the score axis at 0..1, or hand it back to the automatic range once scores exist
        (only on that change, so a zoom the person made is not undone by every refresh)."""
        if pinned:
            self.plot.setYRange(0.0, 1.0, padding=0.05)
        elif self._y_pinned:
            self.plot.enableAutoRange(axis="y")
        self._y_pinned = pinned

    def _xy(self, index: int) -> tuple[float, float] | None:
        ranking = self.model.ranking
        if ranking is None:
            return None
        value = float(ranking.score[index])
        return float(self.model.trial_numbers()[index]), value if math.isfinite(value) else 0.0


class TradeoffChart(ChartBase):
    """Latency against a memory-like metric: feasible / infeasible styled apart, the Pareto front,
    the best config, the default config as reference, the p20..p80 latency spread of every point,
    and the max-latency / max-memory limits as draggable lines while those constraints are on.

    The y metric is chosen in the header; by default the memory-like metric that differs most
    between configs (device memory is often the same for all of them: see :mod:`axes`)."""

    #: The metric on the y axis, when it changes: the recommendation card lists its value, so the
    #: star's height and the card's figure are one number (the card gave on-chip per SM beside a
    #: chart of on-chip per block).
    y_shown = Signal(str)

    title = "Latency vs memory"
    hint = "turn a constraint on to get its dashed line here; drag the line to move the limit"

    def __init__(self, model: SessionModel, parent: QWidget | None = None) -> None:
        super().__init__(model, parent)
        self.y_name = "memory_mb"
        self.y_chosen: str | None = None  # a y the user picked (wins over the default)
        self._pareto_order: tuple[Any, np.ndarray] = (None, np.empty(0, dtype=np.int64))
        self._default_y: tuple[Any, tuple[list[str], str | None]] = (None, ([], None))
        self.plot.setLabel("bottom", "latency", units="ms")
        self.plot.getAxis("bottom").enableAutoSIPrefix(False)
        self.plot.getAxis("left").enableAutoSIPrefix(False)
        self.spread = pg.PlotDataItem(pen=SPREAD_PEN, connect="pairs")
        self.infeasible = scatter_item(None, size=6, pen=INFEASIBLE, hover=self._tip)
        self.feasible = scatter_item(FEASIBLE, size=6, hover=self._tip)
        self.pareto = pg.PlotDataItem(pen=PARETO_PEN)
        # a front of one point (it beats every other config on both axes) draws no line: that point
        # is ringed instead, so the legend's "Pareto front" does not vanish and leave a class looking
        self.pareto_point = scatter_item(None, symbol="o", size=26, pen=PARETO_PEN)
        self.pareto_point.setZValue(8)  # under the best config's star, which it rings
        self.best = scatter_item(BEST, symbol="star", size=18, pen=OUTLINE, hover=self._tip)
        self.default = scatter_item(DEFAULT, symbol="d", size=14, pen=OUTLINE, hover=self._tip)
        # a trial aborted above the latency limit, at the latency its timing was seen to exceed (its
        # own is further right): where the hopeless configs lie against the limit line
        self.aborted = scatter_item(None, symbol="t2", size=9, pen=INFEASIBLE, hover=self._tip)
        self.best.setZValue(10)
        self.default.setZValue(9)
        for item, name, glyph, style in ((self.infeasible, "infeasible", "○", INFEASIBLE), (self.feasible, "feasible", "●", FEASIBLE),
                                         (self.aborted, "aborted above (its latency is more)", "▷", INFEASIBLE),
                                         (self.pareto, "Pareto front", "━", PARETO_PEN),
                                         (self.pareto_point, "Pareto front (one config)", "○", PARETO_PEN),
                                         (self.best, "best feasible", "★", BEST),
                                         (self.default, "default config", "◇", DEFAULT), (self.spread, "latency p20–p80", "─", SPREAD_PEN)):
            self._add_series(item, name, glyph, style)
        for item in (self.infeasible, self.feasible, self.best, self.default, self.aborted):
            item.sigClicked.connect(self._clicked)
        self.plot.addItem(self.selected_item, ignoreBounds=True)  # a selection must not move the axes
        label_opts = {"position": LIMIT_LABEL_AT, "color": (213, 94, 0), "fill": (255, 255, 255, 200), "movable": True}
        self.latency_line = pg.InfiniteLine(angle=90, movable=True, pen=LIMIT_PEN, hoverPen=LIMIT_HOVER_PEN)
        self.latency_line.label = FittingLineLabel(self.latency_line, **label_opts)
        self.latency_line.label.formatter = self._latency_label
        self.latency_line.label.short_formatter = lambda position: self._latency_label(position, short=True)
        self.memory_line = pg.InfiniteLine(angle=0, movable=True, pen=LIMIT_PEN, hoverPen=LIMIT_HOVER_PEN)
        self.memory_line.label = FittingLineLabel(self.memory_line, **{**label_opts, "position": 0.2,
                                                                       "anchors": [(0, 0), (0, 0)]})
        self.memory_line.label.formatter = self._memory_label
        for line in (self.latency_line, self.memory_line):
            line.setZValue(15)
            line.setVisible(False)  # drawn only while its constraint is on
            self.plot.addItem(line)
        self.latency_line.sigPositionChangeFinished.connect(self._on_latency_dragged)
        self.memory_line.sigPositionChangeFinished.connect(self._on_memory_dragged)
        self.y_combo = ElidedCombo("the memory figure on the y axis: device memory, on-chip storage per SM or "
                                   "per block, ...")
        self.y_combo.setAccessibleName("Latency vs memory y axis")
        self.y_combo.currentIndexChanged.connect(self._on_y_chosen)
        self.log_box = QCheckBox("log latency")
        self.log_box.setToolTip("latencies of a tuning run often span orders of magnitude")
        self.log_box.toggled.connect(lambda on: self.set_log(on, False))
        self.header.add_group(QLabel("   y"), self.y_combo, self.log_box)
        self.log_box.setChecked(True)

    def plotted_title(self) -> str:
        return f"Latency vs {metric_label(self.y_name)}"

    def _on_y_chosen(self, _index: int) -> None:
        name = self.y_combo.currentData()
        if name:
            self.y_chosen = name
            self.refresh()

    def _fill_y_combo(self) -> None:
        """Offer the memory-like metrics some trial reports; pick the user's, else the default."""
        # the data decides, not a slider move; past 1,000 trials a few more trials will not change the
        # spread ranking, so it is re-evaluated every 1,000 (a run tick must stay cheap)
        # Past 1,000 trials the default is of the first thousands only (a multiple of 1,000): a
        # function of the trials still, so a reopened session of 1,999 trials gets the axis its
        # run had, decided at 1,000, rather than one of all 1,999
        n = self.model.n
        upto = n if n < 1000 else n // 1000 * 1000
        # (a direction given to a metric makes it one the chart can offer)
        weights = self.model.weights
        key = (upto, id(self.model.session), tuple(sorted(weights.directions.items())), tuple(sorted(weights.active().items())))
        if self._default_y[0] != key:
            offered = tradeoff_metrics(self.model)
            self._default_y = (key, (offered, default_tradeoff_metric(self.model, offered, upto)))
        offered, default = self._default_y[1]
        if [self.y_combo.itemData(i) for i in range(self.y_combo.count())] != offered:
            self.y_combo.blockSignals(True)
            self.y_combo.clear()
            for name in offered:
                self.y_combo.addItem(metric_label(name), name)
            self.y_combo.blockSignals(False)
        wanted = self.y_chosen if self.y_chosen in offered else default
        if (wanted or "memory_mb") != self.y_name:
            self.y_name = wanted or "memory_mb"
            self.y_shown.emit(self.y_name)
        if wanted is not None and self.y_combo.currentData() != wanted:
            self.y_combo.blockSignals(True)
            self.y_combo.setCurrentIndex(self.y_combo.findData(wanted))
            self.y_combo.blockSignals(False)
        # before any trial succeeded there is nothing to report yet: "not reported" would say the
        # session lacks it (the plot's middle says that no trial succeeded)
        ranking = self.model.ranking
        succeeded = self.model.n > 0 and ranking is not None and ranking.n_ok > 0
        label = metric_label(self.y_name) if wanted is not None else (
            "memory (not reported)" if succeeded else "memory")
        if left_title(self.plot) != label:
            set_left_title(self.plot, label)
        # the title names what is plotted: memory, or the figure a session without memory offers instead
        title = self.title if wanted is None or wanted in MEMORY_METRICS else self.plotted_title()
        if self.title_label.text() != title:
            self.title_label.setText(title)
            self.title_label.setToolTip("\n".join(part for part in (title, self.hint) if part))

    def _on_session_changed(self) -> None:
        self.y_chosen = None  # a new session gets its own default
        self._default_y = (None, ([], None))
        self.dirty = True

    def _on_latency_dragged(self, line: pg.InfiniteLine) -> None:
        value = float(line.value())
        # a limit of 0 ms or less would exclude every config that could exist (and the command
        # line refuses it): dragged past 0, the line stops at half the fastest latency measured, a
        # limit that excludes every trial and that the limit box shows with its digits
        latency = self.model.metric("latency_ms")
        measured = latency[np.isfinite(latency) & (latency > 0)] if self.model.n else latency[:0]
        floor = 0.5 * float(measured.min()) if measured.size else MIN_LATENCY_LIMIT_MS
        limit = 10**value if self.log_x else value
        self.model.set_constraints(max_latency_ms=max(dragged_limit(limit, self._pixel(limit, 0)), floor))

    def _on_memory_dragged(self, line: pg.InfiniteLine) -> None:
        value = float(line.value())
        self.model.set_constraints(max_memory_mb=max(dragged_limit(value, self._pixel(value, 1)), 0.0))

    def _pixel(self, value: float, axis: int) -> float:
        """What one pixel of the plot spans at ``value`` along ``axis`` (0: x, latency; 1: y, in
        the axis's units): the resolution of a limit line dragged there (0 before the plot has a size)."""
        view = self.plot.getViewBox()
        low, high = view.viewRange()[axis]
        pixels = view.width() if axis == 0 else view.height()
        if not (pixels > 0 and high > low):
            return 0.0
        per = (high - low) / pixels
        return value * math.log(10) * per if (self.log_x, self.log_y)[axis] else per

    def _refresh(self) -> None:
        model, ranking = self.model, self.model.ranking
        self._fill_y_combo()
        latency, memory = model.metric("latency_ms"), model.metric(self.y_name)
        ok = ~model.failed_mask() if model.n else np.zeros(0, dtype=bool)
        shown = ok & np.isfinite(latency) & np.isfinite(memory)
        bound = model.metric(LATENCY_BOUND)
        aborted = model.aborted_mask() & np.isfinite(bound) & (bound > 0) & np.isfinite(memory) if model.n else ok
        if ranking is not None and aborted.any():
            self.aborted.setData(x=self.tx(bound)[aborted], y=memory[aborted], data=np.flatnonzero(aborted))
        else:
            self.aborted.setData([], [])
        if ranking is None or model.n == 0 or not shown.any():
            for item in (self.feasible, self.infeasible, self.best, self.default, self.pareto_point):
                item.setData([], [])
            for item in (self.pareto, self.spread):
                item.setData([], [])
            self._say_no_data("no trials yet" if model.n == 0 else
                              "no successful trial reports a memory figure" if ok.any() else self._no_success_text())
            self._place_limits()
            return
        index = np.arange(model.n)
        feasible = np.asarray(ranking.feasible, dtype=bool)
        f, i = shown & feasible, shown & ~feasible
        if ranking.n_feasible == 0:  # every point grey: say which constraint did it (a limit on a
            self._say_no_data(ranking.why_none(remeasure_way(self.model.session), waits_for_relaxing=True))  # metric off these axes has no line of its own)
        elif not f.any():
            feasible_ones = "the feasible trial reports" if ranking.n_feasible == 1 else \
                f"the {ranking.n_feasible} feasible trials report"
            self._say_no_data(f"{feasible_ones} no {metric_label(self.y_name)}")
        else:
            self.no_data.setVisible(False)
        x = self.tx(latency)
        self.feasible.setData(x=x[f], y=memory[f], data=index[f])
        self.infeasible.setData(x=x[i], y=memory[i], data=index[i])
        self.spread.setData(*_spread_segments(model, shown, memory, horizontal=True))
        front = self._pareto(latency, memory, feasible & shown)
        self.pareto.setData(latency[front], memory[front]) if front.size > 1 else self.pareto.setData([], [])
        if front.size == 1:
            self.pareto_point.setData(x=x[front], y=memory[front], data=index[front])
        else:
            self.pareto_point.setData([], [])
        best = ranking.best
        if best is not None and shown[best]:
            self.best.setData(x=[x[best]], y=[memory[best]], data=[best])
        else:
            self.best.setData([], [])
        default = _default_index(model)
        if default is not None and shown[default]:
            self.default.setData(x=[x[default]], y=[memory[default]], data=[default])
        else:
            self.default.setData([], [])
        self._place_limits()
        lines = [float(line.value()) if line.isVisible() else None for line in (self.latency_line, self.memory_line)]
        self._open_single_values(x[shown], memory[shown], lines=lines)

    def _pareto(self, latency: np.ndarray, memory: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Rows on the (latency, y) Pareto front among ``mask``, sorted by latency.

        The sort of all trials is kept until trials or the y metric change, so a slider move (a new
        mask) costs a filter and a running minimum, not a 20,000-row sort."""
        # oriented so that smaller is better (a recording's GFLOP/s stands where memory would)
        sign = -1.0 if known_direction(self.y_name, self.model.weights.directions) == 1 else 1.0
        key = (self.model.data_version, self.y_name, sign)
        if self._pareto_order[0] != key:
            order = np.lexsort((np.where(np.isfinite(memory), sign * memory, np.inf), latency))
            self._pareto_order = (key, order)
        return pareto_front(latency, sign * memory, mask, order=self._pareto_order[1])

    def _place_limits(self) -> None:
        """A limit line is shown at its constraint while the constraint is on, else hidden (a hidden
        line does not count in the auto range, so an unset limit never stretches the axes)."""
        constraints = self.model.constraints
        memory_limit = constraints.max_memory_mb if self.y_name == "memory_mb" else None
        for line, value in ((self.latency_line, constraints.max_latency_ms), (self.memory_line, memory_limit)):
            if line.moving:
                continue
            line.setVisible(value is not None)
            if value is None:
                continue
            if line is self.latency_line:
                # near the top while the plot's middle says why it is empty: drawn over that line there
                line.label.setPosition(LIMIT_LABEL_EMPTY if self.no_data.isVisible() else LIMIT_LABEL_AT)
                if self.log_x:
                    value = math.log10(value) if value > 0 else 0.0
            line.blockSignals(True)
            line.setValue(value)
            line.blockSignals(False)
            line.label.valueChanged()

    def plotted_metrics(self) -> tuple[str, ...]:
        return ("latency_ms", self.y_name)

    def _xy(self, index: int) -> tuple[float, float] | None:
        latency = float(self.model.metric("latency_ms")[index])
        if not math.isfinite(latency) and self.model.aborted_mask()[index]:
            latency = float(self.model.metric("latency_bound_ms")[index])  # (drawn at its bound: the ring goes there)
        return latency, float(self.model.metric(self.y_name)[index])

    def _latency_label(self, position: float, short: bool = False) -> str:
        """The latency limit's label at the line's ``position`` (its logarithm on a log axis): read
        as it is dragged, where a text fixed when the limit was set showed the old limit meanwhile."""
        # (bounded: as the axis turns logarithmic the line still holds its linear value for a moment,
        # 1500 ms read as 10 ** 1500, until the refresh moves it)
        value = 10 ** min(position, 300.0) if self.log_x else position
        text = limit_text(_limit_shown(value, self.model.constraints.max_latency_ms, self._pixel(value, 0)))
        return f"≤ {text} ms" if short else f"max latency {text} ms"

    def _memory_label(self, position: float) -> str:
        shown = _limit_shown(position, self.model.constraints.max_memory_mb, self._pixel(position, 1))
        return f"max memory {limit_text(shown)} MB"


def _limit_shown(value: float, limit: float | None, pixel: float) -> float:
    """What a limit line's label reads at ``value``: the limit in force where the line stands at
    it (typed with all its figures), else the limit a drag ending there sets (:func:`dragged_limit`,
    to the ``pixel``)."""
    if limit is not None and math.isclose(value, limit, rel_tol=1e-9):
        return limit
    return dragged_limit(value, pixel)


class FittingLineLabel(pg.InfLineLabel):
    """A limit line's label, written by ``formatter`` as the line moves; a vertical line's also on
    the side of the line that has room for it, shortened when neither side has. pyqtgraph puts it
    on the side of the view's middle, whatever its width: a limit a little right of the middle had
    its label run under the left axis ("x latency 0.6105 ms") in presentation mode and in exported
    charts. ``formatter`` (the line's position -> the text), when set, writes the text as the line
    moves; ``short_formatter`` the text used where the whole one fits on neither side."""

    formatter: Any = None
    short_formatter: Any = None

    def valueChanged(self) -> None:  # pyqtgraph override
        if self.formatter is None:
            super().valueChanged()
        elif self.isVisible():
            self.setText(self.formatter(self.line.value()))
            self.updatePosition()

    def updatePosition(self) -> None:  # pyqtgraph override
        super().updatePosition()
        if not self.isVisible():  # placed and written when shown (setVisible calls valueChanged)
            return
        view = self.getViewBox()
        if view is None or self.line.angle % 180 != 90:
            return
        (low, high), width = view.viewRange()[0], view.width()
        if not high > low or width <= 0:
            return
        left = (self.line.value() - low) / (high - low) * width  # pixels left of the line
        right = width - left
        if self.formatter is not None and self.short_formatter is not None:
            metrics = QFontMetricsF(self.textItem.font())
            shown = self.textItem.toPlainText()
            pad = self.textItem.boundingRect().width() - metrics.horizontalAdvance(shown)  # the margins
            whole = self.formatter(self.line.value())
            wanted = whole if metrics.horizontalAdvance(whole) + pad <= max(left, right) \
                else self.short_formatter(self.line.value())
            if wanted != shown:
                self.setText(wanted)
        text = self.textItem.boundingRect().width()
        on_left = self.anchor.x() >= 0.5  # anchored by its right end: drawn left of the line
        if on_left and text > left and right > left:
            self.setAnchor(pg.Point(0, 0.5))
        elif not on_left and text > right and left > right:
            self.setAnchor(pg.Point(1, 0.5))


#: Where the latency limit's label sits along its line (0 bottom, 1 top), and where while the plot's
#: middle says why it is empty.
LIMIT_LABEL_AT, LIMIT_LABEL_EMPTY = 0.55, 0.92


#: Width (in categories) over which the trials of one value of a text slot are spread.
CATEGORY_SPREAD = 0.4


def category_spread(index: np.ndarray) -> np.ndarray:
    """Offsets in [-CATEGORY_SPREAD/2, CATEGORY_SPREAD/2) by trial index, evenly filled (golden-ratio
    sequence) and the same on every redraw."""
    return (np.mod(np.asarray(index, dtype=float) * 0.6180339887498949, 1.0) - 0.5) * CATEGORY_SPREAD


class MetricChart(ChartBase):
    """Any metric (or slot) against any other, with optional log axes.

    Text and boolean slots are plotted at their position and their ticks name the values; a
    numeric slot's ticks are at its values (thinned to what fits); log
    toggles are enabled only for metrics whose values are all positive; the axis labels are set
    from the combos on every refresh, so they always agree."""

    title = "Explore"
    hint = "any metric or slot against any other, e.g. throughput against block size"

    def __init__(self, model: SessionModel, parent: QWidget | None = None) -> None:
        super().__init__(model, parent)
        self.preferred: tuple[str | None, str | None] = (None, None)  # axes asked for before they exist
        self._automatic = [True, True]  # axes at their default, re-chosen when the data says more
        self.x_combo = ElidedCombo("the x axis: a slot or a metric")
        self.y_combo = ElidedCombo("the y axis: a metric or a slot")
        self.x_combo.setAccessibleName("Explore x axis")  # (the "x" and "y" beside them name nothing for a screen reader)
        self.y_combo.setAccessibleName("Explore y axis")
        self.x_log, self.y_log = QCheckBox("log x"), QCheckBox("log y")
        for combo in (self.x_combo, self.y_combo):
            combo.currentIndexChanged.connect(self._on_axes_changed)
        for box in (self.x_log, self.y_log):
            box.toggled.connect(self._on_axes_changed)
        #: Whether the person set each log box: until then a slot whose values grow by a factor
        #: (:func:`geometric_slot`) is shown on a log axis, any other axis on a linear one.
        self._log_chosen = [False, False]
        self._log_space: Any = None  # the kernel and slots the choices were made for
        self._geometric: dict[str, bool] = {}  # geometric_slot by axis name, for self._geometric_of
        self._geometric_of: Any = None  # the space those answers are of
        for axis in ("bottom", "left"):
            self.plot.getAxis(axis).enableAutoSIPrefix(False)  # no "(x0.001)" on a slot axis
        self.spread = pg.PlotDataItem(pen=SPREAD_PEN, connect="pairs")
        self.infeasible = scatter_item(None, size=6, pen=INFEASIBLE, hover=self._tip)
        self.feasible = scatter_item(FEASIBLE, size=6, hover=self._tip)
        self.best = scatter_item(BEST, symbol="star", size=16, pen=OUTLINE, hover=self._tip)
        for item, name, glyph, style in ((self.infeasible, "infeasible", "○", INFEASIBLE), (self.feasible, "feasible", "●", FEASIBLE),
                                         (self.best, "best", "★", BEST)):
            self._add_series(item, name, glyph, style)
            item.sigClicked.connect(self._clicked)
        self.plot.addItem(self.spread)
        self.plot.addItem(self.selected_item, ignoreBounds=True)  # a selection must not move the axes
        self._labels: tuple[str, str] = ("", "")
        self._log_allowed: dict[tuple[Any, ...], bool] = {}
        self._ticks: tuple[Any, Any] = (None, None)
        self._categorical = (False, False)  # an axis of a text slot's positions (its trials spread)
        self.header.add_group(QLabel("  x"), self.x_combo, self.x_log)
        self.header.add_group(QLabel("  y"), self.y_combo, self.y_log)
        self._fill_combos()

    def set_axes(self, x: str, y: str, log_x: bool | None = None, log_y: bool | None = None) -> None:
        """Choose the axes; names not offered yet (no session) are remembered and applied when they are.
        A log flag given sets that box as the person would; None leaves it to the person's last
        choice or, if they made none, to the axis's default."""
        self.preferred = (x, y)
        self._fill_combos()
        for combo, name in ((self.x_combo, x), (self.y_combo, y)):
            position = combo.findData(name)
            if position >= 0:
                combo.setCurrentIndex(position)
        for k, (box, log) in enumerate(((self.x_log, log_x), (self.y_log, log_y))):
            if log is not None:
                self._log_chosen[k] = True
                box.setChecked(log)
        self._on_axes_changed()

    def axes(self) -> tuple[str, str]:
        return self.x_combo.currentData() or "", self.y_combo.currentData() or ""

    def plotted_metrics(self) -> tuple[str, ...]:
        return tuple(name for name in self.axes() if name and not name.startswith("slot:"))

    def plotted_title(self) -> str:
        x, y = self.axes()
        return f"{metric_label(y)} vs {metric_label(x)}" if x and y else self.title

    def chosen_axes(self) -> tuple[str, str]:
        """The axes the user picked ("" where the chart chose its default): what settings remember."""
        return tuple(name if name and not auto else "" for name, auto in zip(self.axes(), self._automatic))  # type: ignore[return-value]

    def _fill_combos(self, force: bool = False) -> None:
        names = self.model.metric_names()
        current = [None if auto else data for auto, data in
                   zip(self._automatic, (self.x_combo.currentData(), self.y_combo.currentData()))]
        if not force and [self.x_combo.itemData(i) for i in range(self.x_combo.count())] == names:
            return
        defaults = ("slot:" + self.model.slot_names[0] if self.model.slot_names else "latency_ms",
                    default_rate_metric(self.model))
        for combo, keep, wish, fallback in zip((self.x_combo, self.y_combo), current, self.preferred, defaults):
            combo.blockSignals(True)
            combo.clear()
            for name in names:
                combo.addItem(metric_label(name), name)
            chosen = wish if wish in names else keep if keep in names else fallback
            combo.setCurrentIndex(max(combo.findData(chosen), 0))
            combo.blockSignals(False)
        self._automatic = [wish not in names and keep not in names for wish, keep in zip(self.preferred, current)]

    def _is_geometric(self, name: str) -> bool:
        """:func:`geometric_slot`, once per space and axis (it sorts the slot's values, and the
        chart refreshes on every trial and every slider move)."""
        space = self.model.session.space if self.model.session is not None else None
        if space is not self._geometric_of:
            self._geometric_of, self._geometric = space, {}
        if name not in self._geometric:
            self._geometric[name] = geometric_slot(self.model, name)
        return self._geometric[name]

    def _default_logs(self) -> None:
        """Each log box the person has not set follows its axis: on for a slot whose values grow by
        a factor while a log axis is possible (the box enabled), off otherwise (signals blocked:
        the caller redraws)."""
        for box, name, chosen in zip((self.x_log, self.y_log), self.axes(), self._log_chosen):
            wanted = box.isEnabled() and self._is_geometric(name)
            if not chosen and box.isChecked() != wanted:
                box.blockSignals(True)
                box.setChecked(wanted)
                box.blockSignals(False)

    def _on_axes_changed(self, *_: Any) -> None:
        x, y = self.axes()
        if self.sender() in (self.x_combo, self.y_combo):
            self.preferred = (x, y)  # the user's choice wins over a remembered one
            self._automatic = [False, False]
        if self.sender() in (self.x_log, self.y_log):  # (the defaults set a box without a signal)
            self._log_chosen[0 if self.sender() is self.x_log else 1] = True
        self._update_axes()
        self.set_log(self.x_log.isChecked() and self.x_log.isEnabled(), self.y_log.isChecked() and self.y_log.isEnabled())

    def _update_axes(self) -> None:
        """Labels from the combos, ticks at a slot's values (named for text slots), log boxes only
        where they apply."""
        x, y = self.axes()
        labels = (metric_label(x) if x else "", metric_label(y) if y else "")
        if labels != self._labels:
            self._labels = labels
            self.plot.setLabel("bottom", labels[0])
            set_left_title(self.plot, labels[1])
        categories = (category_ticks(self.model, x), category_ticks(self.model, y))
        self._categorical = (categories[0] is not None, categories[1] is not None)
        for box, name, categorical in zip((self.x_log, self.y_log), (x, y), self._categorical):
            key = (self.model.data_version, name)
            if key not in self._log_allowed:  # depends on the data only: not recomputed per slider move
                if len(self._log_allowed) > 64:
                    self._log_allowed.clear()
                self._log_allowed[key] = bool(name) and can_log(self.model.metric(name)[self.model.measured_mask()], categorical)
            allowed = self._log_allowed[key]
            if box.isEnabled() != allowed:
                box.setEnabled(allowed)
                box.setToolTip("" if allowed else "a log axis needs positive numbers")
        self._default_logs()
        logs = (self.x_log.isChecked() and self.x_log.isEnabled(), self.y_log.isChecked() and self.y_log.isEnabled())
        ticks = (categories[0] if categories[0] is not None else value_ticks(self.model, x, logs[0]),
                 categories[1] if categories[1] is not None else value_ticks(self.model, y, logs[1]))
        if ticks != self._ticks:
            self._ticks = ticks
            view = self.plot.getPlotItem().getViewBox()
            for axis, values, categorical, which in zip(("bottom", "left"), ticks, self._categorical, (view.XAxis, view.YAxis)):
                self.plot.getAxis(axis).set_categories([p for p, _ in values or []], [t for _, t in values or []],
                                                       values_only=not categorical)
                if categorical and values:  # half a category of room each side, or the end labels would be cut off
                    view.setRange(**{"xRange" if which == view.XAxis else "yRange": (-0.6, len(values) - 0.4)}, padding=0)
                else:
                    view.enableAutoRange(axis=which)

    def _on_session_changed(self) -> None:
        self._automatic = [True, True]  # a new template gets its own default axes (unless asked for)
        session = self.model.session
        slots = session.space.slots if session is not None and session.space is not None else ()
        space = (session.kernel, tuple(s.name for s in slots)) if session is not None else None
        if space != self._log_space:  # and its own log defaults; another size or a new run of it keeps them
            self._log_space, self._log_chosen = space, [False, False]
        self._fill_combos(force=True)
        self._on_axes_changed()

    def _refresh(self) -> None:
        self._fill_combos()
        self._update_axes()
        log_x, log_y = self.x_log.isChecked() and self.x_log.isEnabled(), self.y_log.isChecked() and self.y_log.isEnabled()
        if (log_x, log_y) != (self.log_x, self.log_y):
            self.log_x, self.log_y = log_x, log_y
            self.plot.setLogMode(x=log_x, y=log_y)
        model, ranking = self.model, self.model.ranking
        x_name, y_name = self.axes()
        if ranking is None or model.n == 0 or not x_name:
            for item in (self.feasible, self.infeasible, self.best):
                item.setData([], [])
            self.spread.setData([], [])
            self._say_no_data("no trials yet" if model.n == 0 else "choose a metric for each axis")
            return
        self.no_data.setVisible(False)
        x, y = model.metric(x_name), model.metric(y_name)
        index = np.arange(model.n)
        # an aborted trial is no failure: what it measured (its compile's figures, the bound its
        # timing stopped above) is drawn, infeasible under the limit in force
        shown = model.measured_mask() & np.isfinite(x) & np.isfinite(y)
        if self.log_x:
            shown &= x > 0
        if self.log_y:
            shown &= y > 0
        if shown.any():
            self.no_data.setVisible(False)
        else:  # the axes chosen draw nothing: say why, as the other charts do
            self._say_no_data(self._no_success_text() if model.failed_mask().all() else
                              f"no successful trial reports both {metric_label(x_name)} and {metric_label(y_name)}")
        feasible = np.asarray(ranking.feasible, dtype=bool)
        f, i = shown & feasible, shown & ~feasible
        if y_name == "latency_ms":
            self.spread.setData(*_spread_segments(model, shown, x, horizontal=False))
        elif x_name == "latency_ms":
            self.spread.setData(*_spread_segments(model, shown, y, horizontal=True))
        else:
            self.spread.setData([], [])
        x, y = self.tx(x), self.ty(y)
        # a text slot's trials share its position: spread them across the category (by trial, so a
        # point keeps its place between redraws), or five trials of one value read as one point
        if self._categorical[0]:
            x = x + category_spread(index)
        if self._categorical[1]:
            y = y + category_spread(index)
        self.feasible.setData(x=x[f], y=y[f], data=index[f])
        self.infeasible.setData(x=x[i], y=y[i], data=index[i])
        best = ranking.best
        if best is not None and shown[best]:
            self.best.setData(x=[x[best]], y=[y[best]], data=[best])
        else:
            self.best.setData([], [])
        # (a text slot's axis has its categories' range already)
        xs, ys = (None if categorical else v for categorical, v in zip(self._categorical, (x[shown], y[shown])))
        self._open_single_values(xs, ys, ticks=[[p for p, _ in t] if t else None for t in self._ticks])

    def _xy(self, index: int) -> tuple[float, float] | None:
        x_name, y_name = self.axes()
        x, y = float(self.model.metric(x_name)[index]), float(self.model.metric(y_name)[index])
        offset = float(category_spread(np.array([index]))[0])  # where _refresh drew it (no log on a text slot)
        return x + (offset if self._categorical[0] else 0.0), y + (offset if self._categorical[1] else 0.0)


def _spread_segments(model: SessionModel, shown: np.ndarray, other: np.ndarray,
                     horizontal: bool) -> tuple[np.ndarray, np.ndarray]:
    """p20..p80 latency segments (pairs of points) of the shown trials that recorded them.

    ``other`` is the coordinate on the axis that is not latency. Line items follow the plot's log
    mode themselves, so values are given raw."""
    low, high = model.metric("latency_p20_ms"), model.metric("latency_p80_ms")
    rows = np.flatnonzero(shown & np.isfinite(low) & np.isfinite(high) & (high > low))
    if not rows.size:
        return np.empty(0), np.empty(0)
    along = np.empty(2 * rows.size)
    along[0::2], along[1::2] = low[rows], high[rows]
    across = np.repeat(other[rows], 2)
    return (along, across) if horizontal else (across, along)


def _log10(values: Any) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(values > 0, np.log10(np.where(values > 0, values, 1.0)), np.nan)


def _default_index(model: SessionModel) -> int | None:
    """Row of the session's default config (the reference): its latest successful trial, if measured."""
    return model.default_index


def _draws_something(item: Any) -> bool:
    """Whether a series shows anything: points (a scatter), a line (a curve), or is a shown item of
    neither kind."""
    if not item.isVisible():
        return False
    if isinstance(item, FastScatter):
        return len(item) > 0
    if isinstance(item, pg.PlotDataItem):  # a line of one point draws nothing, unless it has markers
        x, y = item.getData()
        if x is None or not len(x):
            return False
        if item.opts.get("symbol") is not None:
            return True
        # (nor does a line whose points coincide: the best-so-far staircase of a session whose only
        # feasible trial is its last, listed in the legend over nothing)
        finite = np.isfinite(x) & np.isfinite(y)
        return bool(finite.sum() > 1 and (np.ptp(x[finite]) > 0 or np.ptp(y[finite]) > 0))
    return True
