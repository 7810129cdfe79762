"""Two views that explain: "why is this config fast?" for the selected trial, and the roofline.

The why panel draws the selected trial's modelled time terms as bars (with their values, and the
trial's latency as a line: the terms overlap, the kernel takes the largest plus a share of the rest)
beside the facts that explain them. The roofline puts every trial at its arithmetic intensity and
achieved GFLOP/s under the device's bandwidth and compute roofs, as Nsight Compute does. Both
follow the selection (the best feasible trial when nothing is selected).
"""

from __future__ import annotations

import html
import math
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QHBoxLayout, QLabel, QScrollArea, QVBoxLayout, QWidget

from workbench.core.domain.records import provenance
from workbench.gui.plot_widget import plot_widget
from workbench.gui.charts import BEST, FEASIBLE, INFEASIBLE, LABEL_FILL, LABEL_Z, OUTLINE, ChartBase, scatter_item
from workbench.gui.explain import breakdown, roofline, with_known_peaks
from workbench.gui.model import SessionModel
from workbench.gui.plot_axes import bar_figures_extent, set_left_title
from workbench.core.domain.figures import fmt
from workbench.gui.text import remeasure_way, time_unit

TERM_BRUSH = pg.mkBrush(0, 114, 178, 200)
LARGEST_BRUSH = pg.mkBrush(213, 94, 0, 220)
LATENCY_PEN = pg.mkPen(40, 40, 40, 255, width=2, style=Qt.PenStyle.DashLine)
ROOF_PEN = pg.mkPen(204, 121, 167, 255, width=2.5)


def term_text(value: float) -> str:
    """A time term in the chart's unit: three digits, and a term under a thousandth of the unit
    as ``< 0.001`` (beside terms in µs, a staging term of half a femtosecond read ``4.54e-10``)."""
    return "< 0.001" if 0 < value < 0.001 else fmt(value, 3)


def latency_label(unit: str) -> str:
    """The latency line's label format (pyqtgraph fills in ``value``), in the chart's unit."""
    return "latency {value:.4g} " + unit


def _shown_trial(model: SessionModel) -> int | None:
    if model.selected is not None:
        return model.selected
    return model.ranking.best if model.ranking is not None else None


class WhyView(QWidget):
    """The selected trial's time broken into the model's named terms, and what explains them."""

    def __init__(self, model: SessionModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self.trial_index: int | None = None
        self._bar_names: list[str] = []  # the term axis's labels, refitted when the font changes
        self.title = QLabel()
        self.title.setTextFormat(Qt.TextFormat.RichText)
        self.title.setWordWrap(True)
        self.plot = plot_widget(background="w", enableMenu=False)
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.hideButtons()
        self.unit = "ms"  # the chart's one time unit (see _show_bars)
        self.plot.setLabel("bottom", "modelled time (ms)")
        self.plot.getAxis("bottom").enableAutoSIPrefix(False)
        # no tick marks beside the term names: next to a bar too short to see, the tick and the
        # value's label read as a minus sign ("-0.003 ms")
        self.plot.getAxis("left").setStyle(tickLength=0)
        self.plot.setMinimumHeight(140)
        # The figures' room is the plot's own width, known only once its layout has settled: fitted
        # in this view's resize alone, the range used the width before (wider in a shrinking
        # window), and the largest bar's figure ran past the plot's edge.
        self.plot.getPlotItem().vb.sigResized.connect(self._fit_x_range)
        self.bars = pg.BarGraphItem(x0=[], y=[], height=0.7, width=[], brushes=[])
        self.plot.addItem(self.bars)
        # the line's label sits in a row of its own under the bars (see _show_bars): beside the
        # bottom bar it covered that bar's figure
        self.latency_line = pg.InfiniteLine(angle=90, pen=LATENCY_PEN, label=latency_label("ms"),
                                            labelOpts={"position": 0.04, "color": (40, 40, 40), "fill": (255, 255, 255, 200)})
        self.plot.addItem(self.latency_line)
        self.value_labels: list[pg.TextItem] = []
        self.facts = QLabel()
        self.facts.setTextFormat(Qt.TextFormat.RichText)
        self.facts.setWordWrap(True)
        self.facts.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.facts.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        scroll = QScrollArea()
        scroll.setAccessibleName("Why this config is fast")
        scroll.setObjectName("focusFramed")  # a Tab stop: the style sheet frames it while focused
        scroll.setWidget(self.facts)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        body = QHBoxLayout()
        body.addWidget(self.plot, 3)
        body.addWidget(scroll, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)
        layout.addWidget(self.title)
        layout.addLayout(body, 1)
        model.selection_changed.connect(self._on_selection_changed)
        model.ranking_changed.connect(self._on_ranking_changed)
        model.session_changed.connect(self.refresh)
        self.refresh()

    def _on_selection_changed(self, _index: int | None) -> None:
        self.refresh()

    def _on_ranking_changed(self) -> None:
        if self.model.selected is None and _shown_trial(self.model) != self.trial_index:
            self.refresh()  # showing the best: follow it

    def refresh(self) -> None:
        model = self.model
        index = _shown_trial(model)
        self.trial_index = index
        for label in self.value_labels:
            self.plot.removeItem(label)
        self.value_labels = []
        if index is None or model.session is None:
            self.plot.setVisible(True)
            self._show_bars([], [], math.nan)
            # trials there but none feasible: why, as the card says it, not "run one"
            ranking = model.ranking
            if model.n and ranking is not None and ranking.best is None:
                self.title.setText(f"<i>No feasible config to explain: {html.escape(ranking.why_none(remeasure_way(model.session), waits_for_relaxing=True))}. "
                                   "Select a trial to see why it is as fast as it is.</i>")
            else:
                self.title.setText("<i>Select a trial (or run one) to see why it is as fast as it is.</i>")
            self.facts.setText("")
            return
        trial = model.trials[index]
        which = "selected" if model.selected is not None else "best feasible"
        head = f"<b>Why is trial {trial.index} ({which}) this fast?</b> [{trial.config.id}]"
        if not trial.ok:
            self.plot.setVisible(False)
            self._show_bars([], [], math.nan)
            self.title.setText(f"{head} It failed ({html.escape(trial.status.value)}).")
            self.facts.setText(html.escape(trial.measurement.message))
            return
        device, peaks_note = with_known_peaks(model.session.device or {})
        info = breakdown(trial, device)
        # as the badge says where the numbers come from: a replay's were measured, but earlier
        origin = provenance(model.session.device or {}, model.session.backend.get("kind"))
        if origin == "replayed" and provenance(model.session.device or {}) == "recorded":
            origin = "recorded"  # an import (its backend is the replay's) is the recording itself, as the badge says
        where = ("modelled by the simulator" if info.simulated else
                 {"replayed": "recorded earlier (replayed)", "recorded": "recorded earlier (imported)"}.get(origin,
                                                                                                           "measured"))
        self.title.setText(f"{head} {fmt(info.latency_ms)} ms, {where}")
        names = [t[0] for t in info.time_terms]
        per_unit, self.unit = time_unit(max([t[1] for t in info.time_terms] + [info.latency_ms], default=math.nan))
        values = [t[1] / per_unit for t in info.time_terms]
        self.plot.setLabel("bottom", f"modelled time ({self.unit})")
        self._show_bars(names, values, info.latency_ms / per_unit)
        for row, value in enumerate(values):
            # apart from the bar; over the latency line, on white: the line struck the figure through
            label = pg.TextItem(f"\u2002{term_text(value)} {self.unit}", color=(40, 40, 40), anchor=(0, 0.5),
                                fill=LABEL_FILL)
            label.setZValue(max(LABEL_Z, self.latency_line.zValue() + 1))
            label.setFont(QFont(self.font()))  # the window's zoom reaches the values drawn on the plot this way
            label.setPos(value, len(names) - 1 - row)  # (the bars' rows, top to bottom)
            self.plot.addItem(label)
            self.value_labels.append(label)
        self._fit_x_range()  # room for the figures just drawn
        lines = [f"&bull; {html.escape(line, quote=False)}" for line in info.facts]
        lines += [f"&bull; <i>{html.escape(note, quote=False)}</i>" for note in info.notes]
        kind = "recorded" if origin in ("replayed", "recorded") else "measured"
        if info.time_terms:
            lines += ["<i>The terms overlap: the kernel takes the largest plus a share of the rest.</i>"]
        elif math.isfinite(info.bandwidth_fraction) or math.isfinite(info.flops_fraction):
            lines += [f"<i>No model breakdown for a {kind} trial: its share of the device's peaks above says "
                      f"how close it came{' (' + html.escape(peaks_note) + ')' if peaks_note else ''}.</i>"]
        else:
            reports = "throughput_gbs" in trial.measurement.metrics or "gflops" in trial.measurement.metrics
            why = ("the session does not give this device's peak bandwidth and FLOP/s" if reports else
                   "the trial reports no GB/s or GFLOP/s" + (" (a recording keeps only what was recorded)"
                                                             if kind == "recorded" else ""))
            lines += [f"<i>No model breakdown for a {kind} trial, and no share of the device's peaks: {why}.</i>"]
        self.plot.setVisible(bool(info.time_terms))  # an empty time axis explains nothing
        self.facts.setText("<br>".join(lines))

    def changeEvent(self, event: Any) -> None:  # Qt override
        """A new font (the window's zoom) widens the term axis: pyqtgraph drops a tick label that
        does not fit its axis rather than cutting it, so a long term name would vanish."""
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange and hasattr(self, "plot"):  # not while constructing
            self._fit_term_axis()
            for label in self.value_labels:  # the bars' figures in the new size
                label.setFont(QFont(self.font()))
            self.latency_line.label.setFont(QFont(self.font()))
            self._fit_x_range()

    def resizeEvent(self, event: Any) -> None:  # Qt override: the figures' room depends on the width
        super().resizeEvent(event)
        if hasattr(self, "plot"):
            self._fit_x_range()

    def _fit_x_range(self) -> None:
        """The time axis long enough for each bar's figure after its end, in the figures' font: at
        a fixed 1.3x of the longest bar, presentation mode's larger figures ran past the plot's
        edge ("0.0159" without its "ms")."""
        values = list(getattr(self, "_bar_values", []))
        latency = getattr(self, "_latency", math.nan)
        if not values:
            return
        least = max(values + ([latency] if math.isfinite(latency) else [])) * 1.05
        texts = [label.toPlainText() for label in self.value_labels] or [""] * len(values)  # as drawn
        width = self.plot.getPlotItem().vb.width()
        end = bar_figures_extent(values, texts, self.font(), width, least)
        self.plot.setXRange(0, end, padding=0)
        if math.isfinite(latency):
            # the line's label is centred on it: where "latency 3.351 ms" would run past the plot's
            # edge it says "latency" alone (the title gives the figure)
            whole = QFontMetrics(self.font()).horizontalAdvance(f"latency {latency:.4g} {self.unit}")
            at = latency / end * width if end > 0 else 0.0
            fits = at - whole / 2 >= 0 and at + whole / 2 <= width
            self.latency_line.label.setFormat(latency_label(self.unit) if fits else "latency")

    def _fit_term_axis(self) -> None:
        """The term axis as wide as the longest term name in the larger of the axis's tick font
        and this view's font (the zoom sets the tick font after the widgets' fonts changed)."""
        left = self.plot.getAxis("left")
        fonts = [self.font(), left.style.get("tickFont") or left.font()]
        width = max([QFontMetrics(font).horizontalAdvance(name) for font in fonts for name in self._bar_names] + [20])
        left.setWidth(width + 12)

    def _show_bars(self, names: list[str], values: list[float], latency: float) -> None:
        n = len(names)
        rows = [n - 1 - i for i in range(n)]
        largest = int(np.argmax(values)) if values else -1
        brushes = [LARGEST_BRUSH if i == largest else TERM_BRUSH for i in range(n)]
        self.bars.setOpts(x0=[0.0] * n, y=rows, width=values, height=0.7, brushes=brushes)
        left = self.plot.getAxis("left")
        left.setTicks([[(row, name) for row, name in zip(rows, names)]])
        self._bar_names = list(names)
        self._fit_term_axis()
        self._bar_values, self._latency = list(values), latency
        self.latency_line.setVisible(n > 0 and math.isfinite(latency))
        if n and math.isfinite(latency):
            self.latency_line.setValue(latency)
            self.latency_line.label.setFont(QFont(self.font()))
            low = -1.3  # a row under the bars for the latency line's label
            self.plot.setYRange(low, n - 0.4, padding=0)
            self.latency_line.label.setPosition(0.45 / (n - 0.4 - low))  # (the row's middle, as a share)
            self._fit_x_range()


class RooflineChart(ChartBase):
    """Achieved GFLOP/s against arithmetic intensity (log-log) under the bandwidth and compute roofs."""

    title = "Roofline"
    hint = "each trial at its arithmetic intensity and achieved GFLOP/s, under the GPU's roofs"

    def __init__(self, model: SessionModel, parent: QWidget | None = None) -> None:
        super().__init__(model, parent)
        self.plot.setLabel("bottom", "arithmetic intensity (FLOP/byte)")
        set_left_title(self.plot, "achieved GFLOP/s")
        for axis in ("bottom", "left"):
            self.plot.getAxis(axis).enableAutoSIPrefix(False)
        self.roof = pg.PlotDataItem(pen=ROOF_PEN)
        self.infeasible = scatter_item(None, size=6, pen=INFEASIBLE, hover=self._tip)
        self.feasible = scatter_item(FEASIBLE, size=6, hover=self._tip)
        self.best = scatter_item(BEST, symbol="star", size=16, pen=OUTLINE, hover=self._tip)
        self.best.setZValue(10)
        for item, name, glyph, style in ((self.roof, "roofs (peak bandwidth, peak FP32)", "━", ROOF_PEN),
                                         (self.infeasible, "infeasible", "○", INFEASIBLE),
                                         (self.feasible, "feasible", "●", FEASIBLE), (self.best, "best", "★", BEST)):
            self._add_series(item, name, glyph, style)
        for item in (self.infeasible, self.feasible, self.best):
            item.sigClicked.connect(self._clicked)
        self.plot.addItem(self.selected_item, ignoreBounds=True)  # a selection must not move the axes
        # the roofs are named with their numbers, as Nsight Compute does; the compute roof's name
        # hangs under its right end: the roof is the top of the data, so above it the name was cut
        # by the plot's edge (trials sit far left of that end, which lies 4x past the largest intensity)
        self.compute_label = pg.TextItem("", color=(150, 60, 110), anchor=(1, 0), fill=LABEL_FILL)
        self.bandwidth_label = pg.TextItem("", color=(150, 60, 110), anchor=(0, 1), fill=LABEL_FILL)
        for label in (self.compute_label, self.bandwidth_label):
            label.setZValue(LABEL_Z)  # over the roofs and the trials: the sloped roof and the star crossed them out
            self.plot.addItem(label, ignoreBounds=True)
        view = self.plot.getPlotItem().getViewBox()
        view.sigRangeChanged.connect(self._place_compute_label)
        view.sigResized.connect(self._place_compute_label)
        self.note = QLabel("")
        self.note.setStyleSheet("color: #555")
        self.note.setContentsMargins(12, 0, 0, 0)  # apart from the title when beside it
        self.header.add_group(self.note)
        self.data = roofline(model)
        self.set_log(True, True)

    # Hidden in its tab most of the time: it redraws when shown, so a slider move never pays for it.
    def _on_objective_changed(self) -> None:
        if self.isVisible():
            self.refresh()
        else:
            self.dirty = True

    def refresh_if_dirty(self) -> None:
        if self.isVisible():
            super().refresh_if_dirty()

    def showEvent(self, event: Any) -> None:  # Qt override
        super().showEvent(event)
        self.refresh_if_dirty()

    def _refresh(self) -> None:
        data = self.data = roofline(self.model)
        model, ranking = self.model, self.model.ranking
        if data.reason or ranking is None:
            for item in (self.feasible, self.infeasible, self.best):
                item.setData([], [])
            self.roof.setData([], [])
            self._say_no_data(data.reason or "no trials yet")
            self.note.setText("")
            self.compute_label.setText("")
            self.bandwidth_label.setText("")
            self._show_axes(False)  # made-up ranges under the message read as data missing from them
            return
        self.no_data.setVisible(False)
        self._show_axes(True)
        # a simulated GPU's rates are modelled, not achieved by anything that ran
        simulated = bool(model.session is not None and model.session.device.get("simulated"))
        set_left_title(self.plot, "modelled GFLOP/s (simulated)" if simulated else "achieved GFLOP/s")
        # the rate here counts the config's own work (its extra arithmetic too), where the card and
        # the table give the problem's useful GFLOP/s: said, so the two figures are not read as one
        # (short: the header's width is the window's; the rest in its tool tip)
        self.note.setText(("each config's own modelled traffic and work" if data.per_config
                           else "intensity from the operation's minimum bytes and flops")
                          + (f"; {data.peaks_note}" if data.peaks_note else ""))
        self.note.setToolTip("the rate counts the config's own arithmetic, redundant work included: at or above "
                             "the useful GFLOP/s the card and the table show for it" if data.per_config else "")
        shown = np.isfinite(data.intensity) & np.isfinite(data.gflops)
        feasible = np.asarray(ranking.feasible, dtype=bool)
        index = np.arange(model.n)
        x, y = self.tx(data.intensity), self.ty(data.gflops)
        f, i = shown & feasible, shown & ~feasible
        self.feasible.setData(x=x[f], y=y[f], data=index[f])
        self.infeasible.setData(x=x[i], y=y[i], data=index[i])
        best = ranking.best
        if best is not None and shown[best]:
            self.best.setData(x=[x[best]], y=[y[best]], data=[best])
        else:
            self.best.setData([], [])
        low = min(float(np.nanmin(data.intensity[shown])), data.ridge) / 4
        high = max(float(np.nanmax(data.intensity[shown])), data.ridge) * 4
        ridge = data.ridge
        xs = np.array([low, ridge, high])
        self.roof.setData(xs, data.roof(xs))
        # the name, and its figure alone for where the name finds no room (the legend names the roof)
        self._compute_texts = (f"peak FP32 {data.peak_gflops:.0f} GFLOP/s", f"{data.peak_gflops:.0f} GFLOP/s")
        self.compute_label.setText(self._compute_texts[0])
        # the sloped roof up to the ridge, as points the name must not cover either: hung under the
        # flat roof's right end, a long name reached back over the ridge, the point a roofline is read for
        slope = np.geomspace(low, ridge, 48)
        self._points = (x[shown], y[shown])
        self._slope = (self.tx(slope), self.ty(data.roof(slope)))
        self._roof_ends = (math.log10(ridge), math.log10(high), math.log10(data.peak_gflops))
        self._place_compute_label()
        self.bandwidth_label.setText(f"{data.peak_gbs:.0f} GB/s")
        self.bandwidth_label.setPos(math.log10(low), math.log10(low * data.peak_gbs))

    def _place_compute_label(self, *_: Any) -> None:
        """The compute roof's name where it covers no trial nor the sloped roof: under the roof's
        right end, else from the ridge rightwards, else ending at the ridge, else above the right
        end, inside the plot; where none is free, its figure alone in those places; else where it
        covers fewest. Hung
        at the right end alone, in a narrow plot or a large font (presentation mode) it reached
        back over the compute-bound configs, the best one's star among them. Placed again as the
        plot resizes or its range changes."""
        ends = getattr(self, "_roof_ends", None)
        if ends is None or not self.compute_label.toPlainText():
            return
        ridge, right, peak = ends
        xs, ys = getattr(self, "_points", (np.zeros(0), np.zeros(0)))
        vb = self.plot.getPlotItem().getViewBox()
        metrics = QFontMetrics(self.compute_label.textItem.font())
        height = metrics.height() + 4
        # a marker's half width, which grows with the zoom as the text does (a star of 24 px in
        # presentation mode was a third under the name with a fixed margin of 6 px)
        pad = 0.6 * metrics.height()
        # only trials in the band the name can take (a label's height and a margin above and below
        # the roof) are mapped to the scene: all 18,000 of a recording took 0.13 s a range change
        _px_w, px_h = vb.viewPixelSize()
        band = (height + 2 * pad) * abs(px_h) * 1.5

        def in_band(xs: np.ndarray, ys: np.ndarray) -> list[Any]:
            near = np.isfinite(xs) & np.isfinite(ys) & (np.abs(np.asarray(ys, dtype=float) - peak) <= band)
            return [vb.mapViewToScene(pg.Point(float(px), float(py))) for px, py in zip(xs[near], ys[near])]

        points = in_band(xs, ys)
        roof = in_band(*getattr(self, "_slope", (np.zeros(0), np.zeros(0))))
        inside = vb.sceneBoundingRect()
        places = (((1.0, 0.0), right), ((0.0, 0.0), ridge), ((1.0, 0.0), ridge), ((1.0, 1.0), right))
        best: tuple[tuple[int, int], str, tuple[float, float], float] | None = None
        for text in self._compute_texts:
            width = metrics.horizontalAdvance(text) + 8
            for anchor, x in places:
                at = vb.mapViewToScene(pg.Point(x, peak))
                left, top = at.x() - anchor[0] * width, at.y() - anchor[1] * height
                if (top < inside.top() or top + height > inside.bottom() or left < inside.left() - 2
                        or left + width > inside.right() + 2):
                    continue  # (cut by the plot's edge: above the roof, or left of the ridge, often no room)

                def count(among: list[Any]) -> int:
                    return sum(left - pad <= p.x() <= left + width + pad and top - pad <= p.y() <= top + height + pad
                               for p in among)

                covered = (count(points), sum(left <= p.x() <= left + width and top <= p.y() <= top + height
                                              for p in roof))  # (a trial hidden is worse than the roof crossed)
                if best is None or covered < best[0]:
                    best = (covered, text, anchor, x)
                if covered == (0, 0):
                    break
            if best is not None and best[0] == (0, 0):
                break
        _covered, text, anchor, x = best if best is not None else ((0, 0), self._compute_texts[0], (1.0, 0.0), right)
        if self.compute_label.toPlainText() != text:
            self.compute_label.setText(text)
        self.compute_label.setAnchor(anchor)
        self.compute_label.setPos(x, peak)

    def _show_axes(self, shown: bool) -> None:
        for axis in ("left", "bottom"):
            if self.plot.getAxis(axis).isVisible() != shown:
                self.plot.showAxis(axis, shown)

    def _xy(self, index: int) -> tuple[float, float] | None:
        data = self.data
        if index >= len(data.intensity):
            return None
        return float(data.intensity[index]), float(data.gflops[index])
