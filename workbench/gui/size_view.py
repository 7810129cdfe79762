"""The size view: a kernel tuned at several problem sizes, at a glance.

Three plots over one session's sizes (a size sweep, ``tune --sizes`` or the toolbar's sizes field):

- best latency per size, log-log, each point coloured by the config that won there;
- which config wins where: one band per run of consecutive sizes sharing a best config, along the
  same size axis (a band's colour is its config's, the same in all three plots);
- the cross-size matrix: row = the best config of one size, column = a size, cell = that size's
  optimum over the row config's latency there (100% on the diagonal). A cell never measured shows
  "?"; "Measure missing" hands those (size, config) pairs to the window, which measures them through
  the run controller in a background thread, and the cells fill in as the trials arrive.

Every number comes from :mod:`workbench.core.domain.size_analysis`; this module only draws.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, QTimer
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSplitter, QVBoxLayout, QWidget

from workbench.core.errors import WorkbenchError
from workbench.core.domain.size_analysis import (
    SizeRow,
    cross_matrix,
    distinct_winners,
    missing_cells,
    size_axis,
    size_rows,
    winner_bands,
)
from workbench.core.domain.space import Config

#: Colour-blind-safe palette (Okabe-Ito), one colour per winning config, cycled.
PALETTE = ((0, 114, 178), (230, 159, 0), (0, 158, 115), (204, 121, 167), (86, 180, 233), (213, 94, 0),
           (240, 228, 66), (0, 0, 0))
MISSING_RGBA = (225, 225, 225, 255)
REFRESH_DELAY_MS = 300

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
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= 10 * scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:g}"


class _SizeAxis(pg.AxisItem):
    """Ticks at the sizes (x in log10 units), labelled with their values."""

    def __init__(self, orientation: str = "bottom") -> None:
        super().__init__(orientation)
        self.labels: list[tuple[float, str]] = []

    def set_sizes(self, positions: Sequence[float] | np.ndarray, labels: Sequence[str]) -> None:
        self.labels = list(zip(positions, labels))
        self.setTicks([self.labels, []])


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
        self.missing: Cells = []
        self._version: Any = None

        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.measure_button = QPushButton("Measure missing")
        self.measure_button.setToolTip("measure each size's best config at the sizes where it was never measured "
                                       "(in the background, with the session's backend)")
        self.measure_button.clicked.connect(self._on_measure)
        header = QHBoxLayout()
        header.setContentsMargins(6, 2, 6, 0)
        header.addWidget(QLabel("<b>Problem sizes</b>"))
        header.addWidget(self.status, 1)
        header.addWidget(self.measure_button)

        self.latency_axis = _SizeAxis()
        self.latency_plot = pg.PlotWidget(axisItems={"bottom": self.latency_axis})
        self.latency_plot.setBackground("w")
        self.latency_plot.setLogMode(x=False, y=True)
        self.latency_plot.setLabel("left", "best latency (ms)")
        self.latency_plot.getAxis("left").enableAutoSIPrefix(False)
        self.latency_plot.showGrid(x=True, y=True, alpha=0.25)
        self.latency_plot.setTitle("Best latency per size (log-log)", color="k", size="10pt")
        self.band_axis = _SizeAxis()
        self.band_plot = pg.PlotWidget(axisItems={"bottom": self.band_axis})
        self.band_plot.setBackground("w")
        self.band_plot.setMaximumHeight(120)
        self.band_plot.hideAxis("left")
        self.band_plot.setMouseEnabled(x=True, y=False)
        self.band_plot.setTitle("Which config wins where", color="k", size="10pt")
        self.band_plot.setXLink(self.latency_plot)
        self.legend = QLabel("")
        self.legend.setWordWrap(True)
        self.legend.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.addWidget(self.latency_plot, 3)
        left_layout.addWidget(self.band_plot, 1)
        left_layout.addWidget(self.legend)

        self.matrix_x = _SizeAxis("bottom")
        self.matrix_y = _SizeAxis("left")
        self.matrix_plot = pg.PlotWidget(axisItems={"bottom": self.matrix_x, "left": self.matrix_y})
        self.matrix_plot.setBackground("w")
        self.matrix_plot.setTitle("Each size's best config at every size (% of that size's optimum)",
                                  color="k", size="10pt")
        self.matrix_plot.setLabel("bottom", "measured at size")
        self.matrix_plot.setLabel("left", "best config of size")
        self.matrix_plot.invertY(True)
        self.matrix_plot.setMouseEnabled(x=False, y=False)
        self.image = pg.ImageItem()
        self.matrix_plot.addItem(self.image)
        self._cell_text: list[pg.TextItem] = []

        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(left)
        split.addWidget(self.matrix_plot)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(header)
        layout.addWidget(split, 1)

        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(REFRESH_DELAY_MS)
        self._timer.timeout.connect(self.refresh)
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

    def set_measure(self, measure: Callable[[Cells], None] | None) -> None:
        self._measure = measure
        self._update_button()

    def refresh(self) -> None:
        """Recompute the rows, bands and matrix from the model's session and redraw."""
        session = self.model.session
        self._version = getattr(self.model, "data_version", None)
        if session is None or not session.trials:
            self.rows, self.matrix, self.winners, self.missing = [], np.zeros((0, 0)), [], []
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
        self.matrix = cross_matrix(self.rows)
        self.winners = distinct_winners(self.rows)
        self.missing = missing_cells(self.rows)
        if len(self.rows) < 2:
            self.status.setText("one problem size in this session: a sweep (the sizes field, or tune --sizes "
                                "NAME=V1,V2,...) tunes several")
        else:
            worst = np.nanmin(np.where(np.eye(len(self.rows), dtype=bool), np.nan, self.matrix)) \
                if np.isfinite(self.matrix).sum() > len(self.rows) else math.nan
            note = f"; worst cross-size fraction {worst:.0%}" if math.isfinite(worst) else ""
            self.status.setText(f"{len(self.rows)} sizes, {len(self.winners)} distinct winning configs{note}; "
                                f"{len(self.missing)} cells not measured")
        self._draw()

    def _update_button(self) -> None:
        self.measure_button.setText(f"Measure missing ({len(self.missing)})" if self.missing else "Measure missing")
        self.measure_button.setEnabled(bool(self.missing) and self._measure is not None)

    def _on_measure(self) -> None:
        if self._measure is not None and self.missing:
            self._measure(list(self.missing))

    # --- drawing -------------------------------------------------------------------------------
    def _draw(self) -> None:
        self._update_button()
        self.latency_plot.clear()
        self.band_plot.clear()
        for item in self._cell_text:
            self.matrix_plot.removeItem(item)
        self._cell_text = []
        self.image.clear()
        rows = self.rows
        if not rows:
            self.legend.setText("")
            return
        name, sizes = size_axis(rows)
        x = np.log10(np.maximum(sizes, 1e-300)) if (sizes > 0).all() else sizes.astype(float)
        if " x " in name:  # a grid: each size's own values, shortened
            labels = [", ".join(f"{k}={tick_label(str(r.problem[k]))}" for k in name.split(" x ")) for r in rows]
        else:
            labels = [tick_label(r.label.split("=")[-1]) for r in rows]
        self.latency_axis.set_sizes(x, labels)
        self.band_axis.set_sizes(x, labels)
        self.latency_plot.setLabel("bottom", f"{name} (log scale)")
        colour_of = {c.id: _colour(k) for k, c in enumerate(self.winners)}
        latency = np.array([r.best_latency for r in rows])
        finite = np.isfinite(latency)
        self.latency_plot.plot(x[finite], latency[finite], pen=pg.mkPen(90, 90, 90, width=1.5))
        brushes = [pg.mkBrush(*colour_of[r.best_config.id]) for r in rows if r.best_config is not None]
        self.latency_plot.plot(x[finite], latency[finite], pen=None, symbol="o", symbolSize=10,
                               symbolBrush=brushes, symbolPen=pg.mkPen("w"))
        span = float(x.max() - x.min()) if len(x) > 1 else 1.0
        self.latency_plot.setXRange(float(x.min()) - 0.08 * span, float(x.max()) + 0.08 * span, padding=0)
        self._draw_bands(x)
        self._draw_matrix(labels)
        names = {c.id: f"#{k + 1}" for k, c in enumerate(self.winners)}
        parts = []
        for k, config in enumerate(self.winners):
            r, g, b = _colour(k)
            values = ", ".join(f"{key}={value}" for key, value in config.items())
            parts.append(f"<span style='color:rgb({r},{g},{b})'>&#9632;</span> <b>{names[config.id]}</b> {values}")
        self.legend.setText("<br>".join(parts))

    def _draw_bands(self, x: np.ndarray) -> None:
        edges = np.empty(len(x) + 1)
        if len(x) == 1:
            edges[:] = [x[0] - 0.5, x[0] + 0.5]
        else:
            mids = (x[1:] + x[:-1]) / 2
            edges[1:-1] = mids
            edges[0] = x[0] - (mids[0] - x[0])
            edges[-1] = x[-1] + (x[-1] - mids[-1])
        index = {c.id: k for k, c in enumerate(self.winners)}
        for band in winner_bands(self.rows):
            k = index[band.config.id]
            left, right = edges[band.first], edges[band.last + 1]
            bar = pg.BarGraphItem(x0=[left], x1=[right], y0=[0.0], y1=[1.0], brush=pg.mkBrush(*_colour(k), 210),
                                  pen=pg.mkPen("w", width=2))
            self.band_plot.addItem(bar)
            text = pg.TextItem(f"#{k + 1}", color=(255, 255, 255) if k % len(PALETTE) in (0, 5, 7) else (0, 0, 0),
                               anchor=(0.5, 0.5))
            text.setPos((left + right) / 2, 0.5)
            self.band_plot.addItem(text)
        self.band_plot.setYRange(0, 1, padding=0.05)

    def _draw_matrix(self, labels: Sequence[str]) -> None:
        n = len(self.rows)
        rgba = np.zeros((n, n, 4), dtype=np.ubyte)  # [column (x), row (y)]
        for i in range(n):
            for j in range(n):
                rgba[j, i] = fraction_rgba(float(self.matrix[i, j]))
        self.image.setImage(rgba, levels=None, autoLevels=False)
        self.image.setRect(QRectF(0, 0, n, n))
        positions = [k + 0.5 for k in range(n)]
        self.matrix_x.set_sizes(positions, labels)
        self.matrix_y.set_sizes(positions, labels)
        small = n > 8
        for i in range(n):
            for j in range(n):
                value = float(self.matrix[i, j])
                text = "?" if not math.isfinite(value) else f"{value:.0%}" if not small else f"{value * 100:.0f}"
                item = pg.TextItem(text, color=(20, 20, 20), anchor=(0.5, 0.5))
                item.setPos(j + 0.5, i + 0.5)
                self.matrix_plot.addItem(item)
                self._cell_text.append(item)
        self.matrix_plot.setXRange(0, n, padding=0.02)
        self.matrix_plot.setYRange(0, n, padding=0.02)
