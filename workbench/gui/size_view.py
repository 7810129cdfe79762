"""The size view: a kernel tuned at several problem sizes, at a glance.

Three plots over one session's sizes (a size sweep, ``tune --sizes`` or the toolbar's sizes field):

- best latency per size, log-log (a linear size axis for sizes of 0 or below), each point coloured by the config that won there;
- which config wins where: one band per run of consecutive sizes sharing a best config, along the
  same size axis (a band's colour is its config's, the same in all three plots);
- the cross-size matrix: row = the best config of one size, column = a size, cell = that size's
  optimum over the row config's latency there (100% on the diagonal). A cell never measured shows
  "?"; "Measure missing" hands those (size, config) pairs to the window, which measures them through
  the run controller in a background thread, and the cells fill in as the trials arrive.

Every number comes from :mod:`workbench.core.domain.size_analysis`; this module only draws.
"""

from __future__ import annotations

import html
import math
from typing import Any, Callable, Mapping

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QRectF, Qt
from PySide6.QtGui import QFont, QFontMetricsF
from PySide6.QtWidgets import QApplication, QFrame, QHBoxLayout, QLabel, QPushButton, QScrollArea, QSplitter, QVBoxLayout, QWidget

from workbench.core.errors import WorkbenchError
from workbench.core.domain.sizes import size_value_text, sweep_progress
from workbench.core.domain.size_analysis import (
    invalid_cells,
    SizeLayout,
    SizeRow,
    cross_matrix,
    distinct_winners,
    missing_cells,
    size_layout,
    size_rows,
    winner_bands,
)
from workbench.core.domain.space import Config
from workbench.gui.plot_widget import plot_widget
from workbench.gui.plot_axes import CategoryAxis, ReadableAxis, set_left_title
from workbench.gui.text import plain_tip
from workbench.gui.timers import single_shot

#: Colour-blind-safe palette (Okabe-Ito), one colour per winning config, cycled.
PALETTE = ((0, 114, 178), (230, 159, 0), (0, 158, 115), (204, 121, 167), (86, 180, 233), (213, 94, 0),
           (240, 228, 66), (0, 0, 0))
MISSING_RGBA = (225, 225, 225, 255)
REFRESH_DELAY_MS = 300
#: a grid sweep's series: one marker and one dash per value of the parameters not along x
SERIES_SYMBOLS = (("o", "&#9679;"), ("s", "&#9632;"), ("d", "&#9670;"), ("t1", "&#9650;"), ("t", "&#9660;"),
                  ("star", "&#9733;"))
SERIES_DASHES = (Qt.PenStyle.SolidLine, Qt.PenStyle.DashLine, Qt.PenStyle.DotLine, Qt.PenStyle.DashDotLine)
PLOT_LINES = 8  # the latency plot's least height, in lines of the view's font
MATRIX_CELLS = 8  # the most sizes whose matrix keeps room for its figures (scrolling beyond the pane)
ZOOMED_MATRIX_CELLS = 24  # the same in a zoomed window (a matrix of 65,536 cells is drawn without figures)

Cells = list[tuple[Mapping[str, Any], Config]]


def _colour(k: int) -> tuple[int, int, int]:
    return PALETTE[k % len(PALETTE)]


def fraction_rgba(value: float) -> tuple[int, int, int, int]:
    """Red (50% of the optimum or less) through yellow to green (the optimum); grey when unknown."""
    if not math.isfinite(value):
        return MISSING_RGBA
    t = min(1.0, max(0.0, (value - 0.5) / 0.5))
    if t < 0.5:
        u = t / 0.5
        return (int(215 + (250 - 215) * u), int(48 + (220 - 48) * u), int(39 + (80 - 39) * u), 255)
    u = (t - 0.5) / 0.5
    return (int(250 + (26 - 250) * u), int(220 + (152 - 220) * u), int(80 + (80 - 80) * u), 255)


_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def tick_label(text: str) -> str:
    """A size as a short tick label: powers of two from 1024 up as 2^k, other large numbers with
    k/M/G, so that nine sizes over six orders of magnitude fit under a plot."""
    try:
        value = float(text)
    except ValueError:
        return text
    if value.is_integer() and value >= 1024 and int(value) & (int(value) - 1) == 0:
        return "2" + str(int(value).bit_length() - 1).translate(_SUPERSCRIPT)
    if abs(value) < 1e4 or not math.isfinite(value):
        return f"{value:g}"
    # the largest unit that leaves at least 1 once rounded to three digits (999,500 is 1M, not 1e+03k)
    scale, suffix = next((scale, suffix) for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k"))
                         if abs(float(f"{value / scale:.3g}")) >= 1)
    text = f"{value / scale:.3g}"
    return (text if "e" not in text else f"{value / scale:.0f}") + suffix  # (past 999G: all digits of G)


class SizeView(QWidget):
    """The three size plots for ``model.session``; ``measure(cells)`` (from the window) measures
    missing matrix cells in the background."""

    def __init__(self, model: Any, measure: Callable[[Cells], None] | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self._measure = measure
        self.rows: list[SizeRow] = []
        self.matrix = np.zeros((0, 0))
        self.winners: list[Config] = []
        #: Cells (row, column) whose config is not a valid config at the column's size.
        self.invalid: set[tuple[int, int]] = set()
        self.missing: Cells = []
        self.layout_: SizeLayout | None = None
        self._version: Any = None
        #: "simulated" for a simulated session, whose cells are model predictions, else "measured";
        #: ``action`` the button's word for filling the missing cells, ``does`` what it does to one
        self.verb, self.action, self.does = "measured", "Measure missing", "measures"

        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.measure_button = QPushButton("Measure missing")  # its words follow the session (_update_button)
        self.measure_button.clicked.connect(self._on_measure)
        # the title and the button on one line, the status across the pane under them: squeezed
        # between them it wrapped to four lines in presentation mode, pushing the plots out of sight
        top = QHBoxLayout()
        top.addWidget(QLabel("<b>Problem sizes</b>"))
        top.addStretch(1)
        top.addWidget(self.measure_button)
        header = QVBoxLayout()
        header.setContentsMargins(6, 2, 6, 0)
        header.setSpacing(0)
        header.addLayout(top)
        header.addWidget(self.status)

        # No context menus, as on the window's other plots: pyqtgraph's plot options (log or FFT
        # axes) redraw a category axis out of line with its labels; the "A" button still resets a zoom.
        # Titles are labels above the plots, not pyqtgraph titles: a plot title never wraps, and a
        # long one widened its plot past the pane, cutting off the matrix's last columns.
        self.latency_axis = CategoryAxis("bottom")
        self.latency_plot = plot_widget(axisItems={"bottom": self.latency_axis, "left": ReadableAxis("left")},
                                         enableMenu=False)
        self.latency_plot.setBackground("w")
        self.latency_plot.setLogMode(x=False, y=True)
        set_left_title(self.latency_plot, "ms")  # the title says what: a short plot has no room for more
        self.latency_plot.showGrid(x=True, y=True, alpha=0.25)
        self.latency_title = _title("Best latency per size (log-log)")
        self.band_axis = CategoryAxis("bottom")
        self.band_rows_axis = CategoryAxis("left")
        self.band_plot = plot_widget(axisItems={"bottom": self.band_axis, "left": self.band_rows_axis},
                                      enableMenu=False)
        self.band_plot.setBackground("w")
        self.band_plot.setMouseEnabled(x=True, y=False)
        self.band_plot.setXLink(self.latency_plot)
        self.band_title = _title("Which config wins where")
        self.legend = QLabel("")
        self.legend.setWordWrap(True)
        self.legend.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        left = _Column()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.setSpacing(2)
        left_layout.addWidget(self.latency_title)
        left_layout.addWidget(self.latency_plot, 1)
        left_layout.addWidget(self.band_title)
        left_layout.addWidget(self.band_plot)
        left_layout.addWidget(self.legend)
        # The column keeps its plot a readable height and scrolls when the pane is shorter
        # (presentation mode on a small screen) instead of squeezing the plot to its axis.
        self.left_scroll = QScrollArea()
        self.left_scroll.setWidget(left)
        self.left_scroll.setWidgetResizable(True)
        self.left_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.left_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)

        self.matrix_x = CategoryAxis("bottom")
        self.matrix_y = CategoryAxis("left")
        self.matrix_plot = plot_widget(axisItems={"bottom": self.matrix_x, "left": self.matrix_y}, enableMenu=False)
        self.matrix_plot.setBackground("w")
        self.matrix_title = _title("Each size's best config at every size (% of that size's optimum)")
        self.matrix_plot.setLabel("bottom", "measured at")
        set_left_title(self.matrix_plot, "best of")  # one line: "best config of" wrapped to three
        self.matrix_plot.invertY(True)
        self.matrix_plot.setMouseEnabled(x=False, y=False)
        self.image = pg.ImageItem()
        self.matrix_plot.addItem(self.image)
        self._cell_text: list[pg.TextItem] = []
        self.matrix_plot.getViewBox().sigResized.connect(self._fit_cell_text)
        self.matrix_plot.scene().sigMouseMoved.connect(self._on_matrix_hover)
        # The matrix keeps cells large enough for their figures in the view's font and scrolls when
        # the pane is smaller (presentation mode on a small screen), as the left column does: it
        # was squeezed to a 210 x 115 pixel matrix whose figures got smaller than at normal size,
        # and most of its size labels were left out. Its title stays above, wrapped to the pane.
        self.matrix_scroll = QScrollArea()
        self.matrix_scroll.setWidget(self.matrix_plot)
        self.matrix_scroll.setWidgetResizable(True)
        self.matrix_scroll.setFrameShape(QFrame.Shape.NoFrame)
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(0, 0, 0, 0)
        right_layout.setSpacing(2)
        right_layout.addWidget(self.matrix_title)
        right_layout.addWidget(self.matrix_scroll, 1)

        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.left_scroll)
        split.addWidget(right)
        #: The plots: hidden while the session has fewer than two sizes (one size has nothing to
        #: compare, and its plots read as a size axis of "1" and a matrix of "best config of 1").
        self.plots = split
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(header)
        layout.addWidget(split, 1)
        self._fit_to_font()

        self._timer = single_shot(self, REFRESH_DELAY_MS, self.refresh)
        model.session_changed.connect(self.refresh)
        model.session_grew.connect(self.schedule_refresh)  # every size, not only the one shown
        model.objective_changed.connect(self.schedule_refresh)
        self.refresh()

    # --- data ----------------------------------------------------------------------------------
    def schedule_refresh(self, *_: Any) -> None:
        """Coalesce a live run's bursts of new trials into one redraw (only while shown)."""
        if self.isVisible() and not self._timer.isActive():
            self._timer.start()

    def showEvent(self, event: Any) -> None:  # Qt override
        super().showEvent(event)
        if self._version != getattr(self.model, "data_version", None):
            self.refresh()

    def changeEvent(self, event: QEvent) -> None:  # Qt override
        """A zoomed window (presentation mode) gives this view a larger font: so do its plots' texts."""
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange and hasattr(self, "_timer"):  # built
            self._fit_to_font()
            self._draw()

    def _fit_to_font(self) -> None:
        metrics = QFontMetricsF(self.font())
        line = metrics.height()
        self.latency_plot.setMinimumHeight(int(PLOT_LINES * line))
        rows = max(1, len(self.layout_.series)) if self.layout_ is not None else 1
        self.band_plot.setFixedHeight(int((1.25 * rows + 2.2) * line))
        # each cell wide enough for "100" and high enough for a line of the view's font, for a sweep
        # of up to MATRIX_CELLS sizes; zoomed (presentation mode), where the pane is smaller than the
        # normal layout gives the matrix, for up to ZOOMED_MATRIX_CELLS, so a zoom never makes its
        # figures smaller than at normal size (a larger sweep fills the pane as it is, its figures
        # drawn where they fit: its colours tell). The axes' labels and titles take 3.5 lines more.
        cells = len(getattr(self, "rows", ()))
        zoomed = self.font().pointSizeF() > 1.05 * QApplication.font().pointSizeF()
        if 0 < cells <= (ZOOMED_MATRIX_CELLS if zoomed else MATRIX_CELLS):
            self.matrix_plot.setMinimumSize(int(cells * 1.4 * metrics.horizontalAdvance("100") + 3.5 * line),
                                            int(cells * 1.2 * line + 3.5 * line))
        else:
            self.matrix_plot.setMinimumSize(0, 0)

    def refresh(self) -> None:
        """Recompute the rows, bands and matrix from the model's session and redraw."""
        session = self.model.session
        self._version = getattr(self.model, "data_version", None)
        simulated = session is not None and bool(session.device.get("simulated"))
        self.verb, self.action, self.does = (("simulated", "Simulate missing", "simulates") if simulated
                                             else ("measured", "Measure missing", "measures"))
        if session is None or not session.trials:
            self.rows, self.matrix, self.winners, self.missing = [], np.zeros((0, 0)), [], []
            self.invalid = set()
            self.status.setText("no session")
            self._draw()
            return
        objective = None
        if getattr(self.model, "constraints", None) is not None:
            from workbench.core.domain.search_objective import Objective

            try:
                objective = Objective(self.model.constraints, self.model.weights)
            except WorkbenchError:  # an objective that cannot rank (a metric without a direction): latency
                objective = None
        self.rows = size_rows(session, objective)
        self.matrix = cross_matrix(self.rows, objective)
        self.winners = distinct_winners(self.rows)
        self.missing = missing_cells(self.rows, session.space)
        self.invalid = invalid_cells(self.rows, session.space)
        progress = sweep_progress(session)  # (None also for a hand-edited plan: said where the file is opened)
        planned = progress.planned if progress is not None else 0
        unfinished = progress.text() if progress is not None else ""
        if progress is not None and progress.ended_text():  # short of the plan by its rules: said, not unfinished
            unfinished = "; ".join(part for part in (unfinished, progress.ended_text()) if part)
        if len(self.rows) < 2 and planned > 1:  # a sweep whose second size has no trial yet (running)
            self.status.setText(f"a sweep of {planned} sizes, {len(self.rows)} of them {self.verb}: the plots appear "
                                "once a second size has trials")
        elif len(self.rows) < 2:
            measured_at = self.rows[0].problem if self.rows else session.problem
            problem = ", ".join(f"{k}={v}" for k, v in measured_at.items())
            measured = f" ({problem})" if problem else ""
            self.status.setText(f"one problem size in this session{measured}: nothing to compare across sizes; "
                                "a sweep (the sizes field, or tune --sizes NAME=V1,V2,...) tunes several")
        else:
            # between sizes that have a best: at a size where nothing is feasible every config is 0 %,
            # which says nothing of how well one size's best serves another
            has_best = np.array([row.best_config is not None for row in self.rows], dtype=bool)
            compared = np.where(np.eye(len(self.rows), dtype=bool) | ~has_best[None, :], np.nan, self.matrix)
            worst = float(np.nanmin(compared)) if np.isfinite(compared).any() else math.nan
            note = f"; worst cross-size fraction {worst:.0%}" if math.isfinite(worst) else ""
            # those sizes are left out of the worst fraction, and their columns' 0 % cells read as
            # a poor config: named, as show names them
            empty = [row.label for row in self.rows if row.best_config is None]
            if empty:
                # (a size of a grid, itself "rows=65536, cols=256", in brackets of its own)
                named = [f"({label})" if ", " in label else label for label in empty]
                shown = ", ".join(named[:3]) + (f" and {len(named) - 3} more" if len(named) > 3 else "")
                note += f" ({shown}: nothing feasible, left out)" if note else f"; {shown}: nothing feasible"
            # a stopped sweep's sizes are not all it planned (Start on the session continues it)
            rest = f"; {unfinished}" if unfinished else ""
            self.status.setText(f"{len(self.rows)} sizes, {len(self.winners)} distinct winning "
                                f"config{'s' if len(self.winners) != 1 else ''}{note}; {self._missing_text()}{rest}")
        self._draw()

    def _missing_text(self) -> str:
        """How many cells of the matrix show "?", and, where sizes share a best config (so one
        measurement fills a cell in each of their rows), how many measurements fill them: "1 cells
        not simulated" stood under two "?" cells."""
        # a row without a best config cannot be filled: only cells a measurement could fill are
        # counted (a sweep may have 256 sizes); a column of a size where nothing is feasible can
        fillable = np.array([row.best_config is not None for row in self.rows], dtype=bool)
        open_cells = fillable[:, None] & ~np.isfinite(np.asarray(self.matrix, dtype=float))
        unknown = int(open_cells.sum()) - sum(1 for i, j in self.invalid if open_cells[i, j])
        if unknown == 0:  # ("0 cells not simulated" read as a double negative; "-" cells cannot be)
            return f"no cell left to {self.action.split()[0].lower()}"
        cells = f"{unknown} cell{'s' if unknown != 1 else ''} not {self.verb}"
        pairs = len(self.missing)
        if pairs and pairs != unknown:
            cells += f"; {pairs} to {self.action.split()[0].lower()} (sizes with the same best config share it)"
        return cells

    def _update_button(self) -> None:
        self.measure_button.setText(f"{self.action} ({len(self.missing)})" if self.missing else self.action)
        self.measure_button.setToolTip(f"{self.action.split()[0].lower()} each size's best config at the sizes where "
                                       f"it was never {self.verb} (in the background, with the session's backend)")
        self.measure_button.setEnabled(bool(self.missing) and self._measure is not None)

    def _on_measure(self) -> None:
        if self._measure is not None and self.missing:
            self._measure(list(self.missing))

    # --- drawing -------------------------------------------------------------------------------
    def _text_font(self) -> QFont:
        """Text inside the plots: the view's own font, which the window's zoom enlarges."""
        return QFont(self.font())

    def _draw(self) -> None:
        self._update_button()
        self.latency_plot.clear()
        self.band_plot.clear()
        self._remove_cell_text()
        self.image.clear()
        rows = self.rows
        self.layout_ = size_layout(rows) if rows else None
        self._fit_to_font()
        self.plots.setVisible(len(rows) > 1)
        if len(rows) < 2 or self.layout_ is None:
            self.legend.setText("")
            for axis in (self.latency_axis, self.band_axis, self.band_rows_axis, self.matrix_x, self.matrix_y):
                axis.set_categories([], [])
            return
        layout = self.layout_
        sizes = layout.x
        x = np.log10(np.maximum(sizes, 1e-300)) if (sizes > 0).all() else sizes.astype(float)
        ticks = sorted({(float(p), tick_label(_number(v))) for p, v in zip(x, sizes)})
        for axis in (self.latency_axis, self.band_axis):
            axis.title = layout.x_name
            axis.set_categories([p for p, _ in ticks], [t for _, t in ticks])
        positive = bool((sizes > 0).all())  # sizes of 0 or below are drawn on a linear axis
        self.latency_plot.setLabel("bottom", f"{layout.x_name} ({'log scale' if positive else 'linear'})")
        # the title says the axes' scales too
        scales = "log-log" if positive else "log latency, linear size"
        self.latency_title.setText(f"<b>Best latency per size ({scales})</b>")
        colour_of = {c.id: _colour(k) for k, c in enumerate(self.winners)}
        latency = np.array([r.best_latency for r in rows])
        several = len(layout.series) > 1
        for s, members in enumerate(layout.series):
            keep = [i for i in members if math.isfinite(latency[i])]
            symbol = SERIES_SYMBOLS[s % len(SERIES_SYMBOLS)][0] if several else "o"
            dash = SERIES_DASHES[s % len(SERIES_DASHES)]
            xs, ys = x[keep], latency[keep]
            self.latency_plot.plot(xs, ys, pen=pg.mkPen(90, 90, 90, width=1.5, style=dash))
            brushes = [pg.mkBrush(*colour_of[rows[i].best_config.id]) for i in keep]  # type: ignore[union-attr]
            self.latency_plot.plot(xs, ys, pen=None, symbol=symbol, symbolSize=10, symbolBrush=brushes,
                                   symbolPen=pg.mkPen(60, 60, 60) if several else pg.mkPen("w"))
        span = float(x.max() - x.min()) if len(x) > 1 and x.max() > x.min() else 1.0
        self.latency_plot.setXRange(float(x.min()) - 0.08 * span, float(x.max()) + 0.08 * span, padding=0)
        self._draw_bands(x, layout)
        self._draw_matrix(layout)
        names = {c.id: f"#{k + 1}" for k, c in enumerate(self.winners)}
        parts = []
        if several:
            lines = " &nbsp; ".join(f"{SERIES_SYMBOLS[s % len(SERIES_SYMBOLS)][1]} {html.escape(label)}"
                                    for s, label in enumerate(layout.series_labels))
            parts.append(f"<i>lines:</i> {lines}")
        for k, config in enumerate(self.winners):
            r, g, b = _colour(k)
            values = ", ".join(f"{key}={value}" for key, value in config.items())
            parts.append(f"<span style='color:rgb({r},{g},{b})'>&#9632;</span> <b>{names[config.id]}</b> "
                         f"{html.escape(values)}")
        self.legend.setText("<br>".join(parts))

    def _draw_bands(self, x: np.ndarray, layout: SizeLayout) -> None:
        """One row of bands per series (the only row of a sweep over one parameter)."""
        index = {c.id: k for k, c in enumerate(self.winners)}
        font = self._text_font()
        n_series = len(layout.series)
        for s, members in enumerate(layout.series):
            xs = x[list(members)]
            edges = np.empty(len(xs) + 1)
            if len(xs) == 1:
                edges[:] = [xs[0] - 0.5, xs[0] + 0.5]
            else:
                mids = (xs[1:] + xs[:-1]) / 2
                edges[1:-1] = mids
                edges[0] = xs[0] - (mids[0] - xs[0])
                edges[-1] = xs[-1] + (xs[-1] - mids[-1])
            y0 = n_series - 1 - s  # the first series on top
            for band in winner_bands([self.rows[i] for i in members]):
                k = index[band.config.id]
                left, right = edges[band.first], edges[band.last + 1]
                bar = pg.BarGraphItem(x0=[left], x1=[right], y0=[y0 + 0.05], y1=[y0 + 0.95],
                                      brush=pg.mkBrush(*_colour(k), 210), pen=pg.mkPen("w", width=2))
                self.band_plot.addItem(bar)
                text = pg.TextItem(f"#{k + 1}", anchor=(0.5, 0.5),
                                   color=(255, 255, 255) if k % len(PALETTE) in (0, 5, 7) else (0, 0, 0))
                text.setFont(font)
                text.setPos((left + right) / 2, y0 + 0.5)
                self.band_plot.addItem(text)
        if n_series > 1:
            self.band_plot.showAxis("left")
            self.band_rows_axis.title = ", ".join(layout.series_names)
            self.band_rows_axis.set_categories([n_series - 1 - s + 0.5 for s in range(n_series)],
                                               [_short(label) for label in layout.series_labels])
        else:
            self.band_plot.hideAxis("left")
        self.band_plot.setYRange(0, n_series, padding=0.05)

    def _draw_matrix(self, layout: SizeLayout) -> None:
        n = len(self.rows)
        rgba = np.zeros((n, n, 4), dtype=np.ubyte)  # [column (x), row (y)]
        for i in range(n):
            for j in range(n):
                rgba[j, i] = fraction_rgba(float(self.matrix[i, j]))
        self.image.setImage(rgba, levels=None, autoLevels=False)
        self.image.setRect(QRectF(0, 0, n, n))
        positions = [k + 0.5 for k in range(n)]
        names = layout.parameters
        if layout.series_names:  # a grid: each size's values in one order, the order in the axis title
            labels = ["\u00d7".join(tick_label(_number(r.problem[k])) for k in names) for r in self.rows]
            which = " \u00d7 ".join(names)
        else:
            labels = [tick_label(_number(v)) for v in layout.x]
            which = layout.x_name
        for axis in (self.matrix_x, self.matrix_y):
            axis.title = which
            axis.set_categories(positions, labels)
        self.matrix_plot.setLabel("bottom", f"{self.verb} at ({which})")
        set_left_title(self.matrix_plot, "best of")  # one line: "best config of" wrapped to three
        self.matrix_plot.setXRange(0, n, padding=0.02)
        self.matrix_plot.setYRange(0, n, padding=0.02)
        self._fit_cell_text()

    def cell_tip(self, i: int, j: int) -> str:
        """What cell (row ``i``, column ``j``) says in words: the hover text, which a cell too small
        for its number (a sweep of many sizes) needs most."""
        if not (0 <= i < len(self.rows) and 0 <= j < len(self.rows)) or self.matrix.shape[0] <= max(i, j):
            return ""
        source, target = self.rows[i], self.rows[j]
        names = {c.id: f"#{k + 1}" for k, c in enumerate(self.winners)}
        config = source.best_config
        if config is None:
            return f"{source.label}: no best config"
        value = float(self.matrix[i, j])
        said = ("not a valid config there (a restriction excludes it at that size)" if (i, j) in self.invalid
                else f"not {self.verb} there ({self.action} {self.does} it)"
                if not math.isfinite(value)
                else "failed or misses the constraints there" if value == 0.0
                else f"{value:.1%} of that size's optimum")
        return f"best config of {source.label} ({names.get(config.id, '')}) at {target.label}: {said}"

    def _on_matrix_hover(self, position: Any) -> None:
        n = len(self.rows)
        if not n:
            return
        point = self.matrix_plot.getViewBox().mapSceneToView(position)
        j, i = math.floor(point.x()), math.floor(point.y())
        self.matrix_plot.setToolTip(plain_tip(self.cell_tip(i, j)) if 0 <= i < n and 0 <= j < n else "")

    def _remove_cell_text(self) -> None:
        for item in self._cell_text:
            self.matrix_plot.removeItem(item)
        self._cell_text = []

    def _fit_cell_text(self, *_: Any) -> None:
        """The cells' numbers in the view's font: with a % sign where a cell has room for "100%",
        without where it has room for "100", in a smaller font where it has room for neither, and
        left out where even a small one would run into its neighbours (the colour still tells)."""
        n = len(self.rows)
        if not n or self.matrix.shape != (n, n):
            return
        box = self.matrix_plot.getViewBox().sceneBoundingRect()
        cell_w, cell_h = box.width() / n, box.height() / n
        font = self._text_font()
        metrics = QFontMetricsF(font)

        def room(text: str) -> float:  # the most this font can be scaled by and still fit a cell
            return min(0.8 * cell_w / max(metrics.horizontalAdvance(text), 1.0), 0.9 * cell_h / max(metrics.height(), 1.0))

        percent = room("100%") >= 1.0
        ratio = min(1.0, room("100%" if percent else "100"))
        size = font.pointSizeF() * ratio if font.pointSizeF() > 0 else 0.0
        visible = size >= 5.0
        if not visible:  # the items are made only while they fit: a sweep of 256 sizes has 65,536 cells
            self._remove_cell_text()
            return
        font.setPointSizeF(size)
        if len(self._cell_text) != n * n:
            self._remove_cell_text()
            for i in range(n):
                for j in range(n):
                    item = pg.TextItem("", color=(20, 20, 20), anchor=(0.5, 0.5))
                    item.setPos(j + 0.5, i + 0.5)
                    self.matrix_plot.addItem(item)
                    self._cell_text.append(item)
        for k, item in enumerate(self._cell_text):
            value = float(self.matrix[k // n, k % n])
            invalid = (k // n, k % n) in self.invalid
            no_best = self.rows[k // n].best_config is None  # nothing feasible there: no config to compare
            item.setText("" if no_best else "\u2013" if invalid else "?" if not math.isfinite(value)
                         else _cell_percent(value, percent))
            item.setFont(font)


def _cell_percent(value: float, sign: bool) -> str:
    """A cross-size cell's percentage of its size's optimum, whole; one short of the optimum by
    less than half a percent reads ">99", not "100": the diagonal's 100 means it is the winner."""
    text = f"{value * 100:.0f}"
    if value < 1.0 and text == "100":
        text = ">99"
    return text + ("%" if sign else "")


class _Column(QWidget):
    """A column for a scroll area that asks only the height its parts need (the labels' wrapped
    text in full, the plots at their least height): a scroll area gives a column with wrapping
    labels its preferred height, which for a plot is far more than the pane has, so it scrolled
    even where everything fitted."""

    def heightForWidth(self, width: int) -> int:  # Qt override
        layout = self.layout()
        if layout is None:
            return super().heightForWidth(width)
        margins = layout.contentsMargins()
        items = [layout.itemAt(i) for i in range(layout.count())]
        parts = [item.widget() for item in items if item is not None]
        shown = [w for w in parts if w is not None and not w.isHidden()]
        total = margins.top() + margins.bottom() + layout.spacing() * max(len(shown) - 1, 0)
        for widget in shown:
            if widget.hasHeightForWidth():
                total += widget.heightForWidth(width)
            else:
                total += max(widget.minimumSizeHint().height(), widget.minimumHeight())
        return total


def _title(text: str) -> QLabel:
    label = QLabel(f"<b>{html.escape(text)}</b>")
    label.setWordWrap(True)
    label.setAlignment(Qt.AlignmentFlag.AlignHCenter)
    return label


def _number(value: Any) -> str:
    """A problem value for a tick label: a whole float as the integer (``2¹⁴`` follows), a switch
    as a size's name writes it (``true``)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return size_value_text(value)


def _short(label: str) -> str:
    """``rows=16384, x=2`` with its numbers as tick labels (``rows=2¹⁴, x=2``)."""
    return ", ".join(f"{k}={tick_label(v)}" if "=" in part else part
                     for part in label.split(", ") for k, _, v in [part.partition("=")])
