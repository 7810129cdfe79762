"""Which slots matter: an importance bar chart and, for the chosen slot, latency per value.

A standalone widget. It is given a callable that returns the session's trials (and optionally one
that returns the objective in force and one that returns the slot domains), recomputes in
:meth:`refresh`, and coalesces bursts of calls from a live run through :meth:`schedule_refresh`
(importance costs up to ~0.5 s at 2,000 trials, and the first one ~2 s more to import Optuna, so it
must not run per trial). The computation runs on a background thread, as the slots panel counts a
space: :meth:`refresh` returns at once, the status line says *computing...* meanwhile while the bars
keep the last result, a result arrives by a queued signal and is shown only if it answers the latest
request (one computes at a time; requests made meanwhile collapse to the latest), and a request for
what is already shown or being computed (the same trials, slots, target and, for the score, the same
objective) computes nothing. Clicking a bar
selects that slot: the lower plot shows each value's latencies as a strip (every ok trial, jittered)
over a box (quartiles and median), and ``slot_selected(name)`` is emitted so the window can colour
its scatter by that slot.

The numbers come from :mod:`workbench.core.domain.importance` (PED-ANOVA); nothing here computes them.
"""

from __future__ import annotations

import logging
import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QPointF, Qt, QTimer, Signal
from PySide6.QtGui import QFont, QFontMetrics, QFontMetricsF
from PySide6.QtWidgets import QBoxLayout, QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from workbench.core.domain.importance import SCORE, Importance, ValueStats, slot_importance, value_distributions
from workbench.core.domain.measurement import LATENCY, Trial
from workbench.core.errors import WorkbenchError
from workbench.gui.axes import labelled_positions
from workbench.gui.plot_widget import plot_widget
from workbench.gui.background import Background
from workbench.gui.plot_axes import (ReadableAxis, ShareAxis, bar_figures_extent, is_number_label, set_bottom_title,
                                      set_left_title)
from workbench.gui.timers import single_shot

_log = logging.getLogger(__name__)

BAR_BRUSH = pg.mkBrush(0, 114, 178, 200)
SELECTED_BRUSH = pg.mkBrush(230, 159, 0, 230)
BOX_BRUSH = pg.mkBrush(86, 180, 233, 90)
BOX_PEN = pg.mkPen(0, 114, 178, 255, width=1.2)
MEDIAN_PEN = pg.mkPen(0, 0, 0, 255, width=2.5)
POINT_BRUSH = pg.mkBrush(0, 114, 178, 120)
NO_PEN = pg.mkPen(None)
#: The bar plot's least height (px) with few slots; more slots need a line of text each.
BAR_PLOT_MIN_PX = 140
AXIS_PEN = pg.mkPen(40, 40, 40)
TARGET_LABELS = {SCORE: "score", LATENCY: "latency"}
#: Delay that coalesces a burst of schedule_refresh calls (a live run adds trials many times a second).
REFRESH_DELAY_MS = 400

TrialSource = Callable[[], Sequence[Trial]]


class _Request:
    """What one computation depends on, taken on the GUI thread: the trials (frozen records, held
    here so a thread reads a list no run appends to), the slots, their domains, the target and,
    for the score target only, the objective (latency importance does not depend on it)."""

    def __init__(self, trials: Sequence[Trial], names: list[str], domains: dict[str, list[Any]],
                 target: str, objective: tuple[Any, Any]) -> None:
        self.trials = tuple(trials)
        self.names, self.domains, self.target = names, domains, target
        self.objective = objective if target == SCORE else (None, None)

    def same_as(self, other: "_Request | None") -> bool:
        """Whether ``other`` would compute the same: trials compared by identity (a refined trial
        is a new record), so the check costs microseconds, not a comparison of every metric."""
        return (other is not None and self.target == other.target and self.names == other.names
                and self.domains == other.domains and self.objective == other.objective
                and len(self.trials) == len(other.trials)
                and all(a is b for a, b in zip(self.trials, other.trials)))


def _compute(request: _Request) -> tuple[Importance, dict[str, list[ValueStats]]]:
    """The importance and the per-value statistics of ``request`` (run off the GUI thread)."""
    constraints, weights = request.objective
    domains = request.domains or None
    importance = slot_importance(request.trials, request.names, target=request.target,
                                 constraints=constraints, weights=weights, domains=domains)
    return importance, value_distributions(request.trials, request.names, domains)


class ImportanceView(QWidget):
    """Importance bars for every slot plus a per-value latency box/strip plot of the selected slot."""

    slot_selected = Signal(str)

    def __init__(
        self,
        trials: TrialSource | None = None,
        *,
        objective: Callable[[], tuple[Any, Any]] | None = None,
        domains: Callable[[], Mapping[str, Sequence[Any]]] | Mapping[str, Sequence[Any]] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        """``trials()`` returns the current trials; ``objective()`` returns (constraints, weights)
        in force (default: no constraints, latency weight); ``domains`` gives slot -> declared values
        (a mapping or a callable), which fixes the slots' order and categories."""
        super().__init__(parent)
        self._source = trials
        self._objective = objective
        self._domains = domains
        self._trials: list[Trial] = []
        self.importance: Importance = Importance(SCORE, reason="no trials yet")
        self.stats: dict[str, list[ValueStats]] = {}
        self.selected_slot: str | None = None
        self._order: list[str] = []  # slots top to bottom in the bar chart

        self.target_box = QComboBox()
        self.target_box.setAccessibleName("Importance for")
        for key, label in TARGET_LABELS.items():
            self.target_box.addItem(f"importance for {label}", key)
        self.target_box.currentIndexChanged.connect(self._on_target_changed)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        header = QHBoxLayout()
        header.setContentsMargins(6, 2, 6, 0)
        header.addWidget(QLabel("<b>Which slots matter</b>"))
        #: Beside the title, where it is seen: the status line sits under the plots, often scrolled away.
        self.busy = QLabel("<i>computing...</i>")
        self.busy.setVisible(False)
        header.addWidget(self.busy)
        header.addStretch(1)
        header.addWidget(self.target_box)

        self.bar_plot = plot_widget(background="w", axisItems={"bottom": ShareAxis("bottom")}, enableMenu=False)
        self.bar_plot.setMouseEnabled(x=False, y=False)
        self.bar_plot.hideButtons()
        set_bottom_title(self.bar_plot.getPlotItem(), "share of importance")
        self.bar_plot.getAxis("bottom").enableAutoSIPrefix(False)
        self.bar_plot.setMinimumHeight(BAR_PLOT_MIN_PX)
        self.bars = pg.BarGraphItem(x0=[], y=[], height=0.7, width=[], brushes=[], pens=[NO_PEN])
        self.bar_plot.addItem(self.bars)
        self.bar_labels: list[pg.TextItem] = []
        self.bar_plot.scene().sigMouseClicked.connect(self._on_bar_click)
        # the figures' room is in pixels of the bar box, which a larger font narrows once the layout
        # has caught up (a wider slot axis): fitted at the font change alone, the figures ran past
        # the box whenever the layout came after it
        self.bar_plot.getPlotItem().vb.sigResized.connect(lambda _box: self._fit_bar_range())

        # the points are log10 of the latency; the axis says the latencies themselves (0.2, 0.5, 1),
        # not "latency (ms, log10) (x0.001)" over ticks of -600 to 200
        self.value_plot = plot_widget(background="w", axisItems={"left": ReadableAxis("left")}, enableMenu=False)
        self.value_plot.getAxis("left").setLogMode(True)
        set_left_title(self.value_plot, "latency (ms, log)")  # short: "log scale" was cut in presentation mode
        self.value_plot.getPlotItem().vb.sigResized.connect(self._fit_value_ticks)
        self.value_plot.setMinimumHeight(140)
        self.boxes = pg.BarGraphItem(x=[], y0=[], height=[], width=0.55, brush=BOX_BRUSH, pen=BOX_PEN)
        self.medians = pg.PlotDataItem([], [], connect="pairs", pen=MEDIAN_PEN)
        self.points = pg.ScatterPlotItem(size=5, pen=NO_PEN, brush=POINT_BRUSH)
        for plot in (self.bar_plot, self.value_plot):
            for axis in ("left", "bottom"):
                plot.getAxis(axis).setPen(AXIS_PEN)
                plot.getAxis(axis).setTextPen(AXIS_PEN)
        for item in (self.boxes, self.points, self.medians):
            self.value_plot.addItem(item)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(header)
        #: the two plots: stacked in a tall pane, side by side in a wide one (see resizeEvent)
        self.plots = QBoxLayout(QBoxLayout.Direction.TopToBottom)
        self.plots.addWidget(self.bar_plot, 1)
        self.plots.addWidget(self.value_plot, 1)
        layout.addLayout(self.plots, 1)
        layout.addWidget(self.status)

        self._timer = single_shot(self, REFRESH_DELAY_MS, self.refresh)
        #: What the bars show, what a thread computes now, and the latest request made meanwhile.
        self._shown: _Request | None = None
        self._shown_status = ""  # the status line of the result shown, put back when a computation is dropped
        self._running: _Request | None = None
        self._pending: _Request | None = None
        self._computing = Background()  # no parent: see Background
        self._computing.done.connect(self._on_computed)

    # --- public ----------------------------------------------------------------------------------
    @property
    def target(self) -> str:
        return str(self.target_box.currentData())

    @property
    def shares(self) -> dict[str, float]:
        return dict(self.importance.shares)

    def set_target(self, target: str) -> None:
        """Show importance for ``score`` or ``latency_ms``."""
        index = self.target_box.findData(target)
        if index < 0:
            raise ValueError(f"unknown importance target {target!r}")
        self.target_box.setCurrentIndex(index)

    def schedule_refresh(self) -> None:
        """Refresh soon, once, however many times this is called meanwhile (for live runs). A
        pending refresh is not pushed back: restarted by every batch of trials (every 100 ms of a
        run), the timer never fired while a run went on, and the tab stayed empty until it ended."""
        if not self._timer.isActive():
            self._timer.start()

    @property
    def computing(self) -> bool:
        """Whether a result is still to come for the latest request."""
        return self._running is not None

    def resizeEvent(self, event: Any) -> None:  # Qt override
        """Side by side when the pane is wide and short (the bottom tabs of a 1440 x 900 window):
        stacked, each plot got half of 300 px and the bars of five slots ran past the pane's edge,
        the share axis scrolled out of sight."""
        super().resizeEvent(event)
        self._fit_bar_range()
        room = self.parentWidget() or self  # in the tab, the scroll area's viewport: what is in sight
        wide = room.width() >= 1.6 * room.height()
        direction = QBoxLayout.Direction.LeftToRight if wide else QBoxLayout.Direction.TopToBottom
        if self.plots.direction() != direction:
            self.plots.setDirection(direction)

    def heightForWidth(self, width: int) -> int:  # Qt override
        """The least height the view needs at ``width``: the header, the plots at their least, the
        status line wrapped. A scroll area sizes a widget with a wrapping label by this, and the
        layout's own answer was the plots' preferred 480 px: a pane that fitted scrolled."""
        layout = self.layout()
        spacing = max(layout.spacing(), 0) if layout is not None else 0
        plots = [self.bar_plot.minimumHeight(), self.value_plot.minimumHeight()]
        stacked = self.plots.direction() == QBoxLayout.Direction.TopToBottom
        plots_height = sum(plots) + spacing if stacked else max(plots)
        header = max(self.target_box.sizeHint().height(), self.busy.sizeHint().height()) + 2
        return header + plots_height + self.status.heightForWidth(width) + 2 * spacing

    def changeEvent(self, event: QEvent) -> None:  # Qt override
        """A zoomed window (presentation mode) gives the view a larger font: so do the shares drawn
        beside the bars."""
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange and hasattr(self, "plots"):  # not while constructing
            for label in self.bar_labels:
                label.setFont(QFont(self.font()))
            # once the zoom has given the slot axis its font too (after the view's): fitted now, the
            # rows kept the height of the zoom before (150 % after presentation mode was left)
            QTimer.singleShot(0, self, self._fit_bar_height)
            self._fit_bar_range()

    def refresh(self, trials: Sequence[Trial] | None = None) -> None:
        """Recompute from ``trials`` (default: the source callable's) on a background thread and
        redraw both plots when the result arrives; returns at once. Nothing is computed when the
        request is the one shown or being computed."""
        self._timer.stop()
        if trials is None:
            trials = self._source() if self._source is not None else self._trials
        self._trials = list(trials)
        domains = self._domain_map()
        names = list(domains) if domains else _names_of(self._trials)
        objective = self._objective() if self._objective is not None else (None, None)
        request = _Request(self._trials, names, domains, self.target, objective)
        if self._running is not None:  # one computation at a time: the latest request waits its turn
            self._pending = None if request.same_as(self._running) else request
            return
        self._pending = None
        if not request.same_as(self._shown):
            self._start(request)

    def _start(self, request: _Request) -> None:
        self._running = request
        self.status.setText(f"computing importance over {len(request.trials)} trials...")
        self.busy.setText(f"<i>computing over {len(request.trials)} trials...</i>")
        self.busy.setVisible(True)

        def compute() -> tuple[Importance, dict[str, list[ValueStats]]] | str:
            try:
                return _compute(request)
            except WorkbenchError as exc:  # already one line for a person
                return str(exc)
            except (ArithmeticError, LookupError, TypeError, ValueError, RuntimeError, MemoryError) as exc:
                _log.warning("slot importance could not be computed", exc_info=True)
                return f"it could not be computed ({type(exc).__name__}: {exc})"

        self._computing.start("slot-importance", request, compute)

    def _on_computed(self, request: _Request,
                     result: tuple[Importance, dict[str, list[ValueStats]]] | str | None) -> None:
        """A result on the GUI thread: shown if it answers the latest request; dropped when the
        latest request is the one already shown (a switch away and back while computing), which
        then stays; else the latest request is computed next (its bars stay as they were until
        then). A failure is shown with its reason and not remembered as shown, so it is tried again."""
        self._running = None
        self.busy.setVisible(False)
        pending, self._pending = self._pending, None
        if pending is not None and pending.same_as(self._shown):
            self.status.setText(self._shown_status)
            return
        if pending is not None and not pending.same_as(request):
            self._start(pending)
            return
        if not isinstance(result, tuple):  # why it failed (None: a failure nobody worded, in the log)
            self._shown = None
            self.importance = Importance(request.target, reason=result or "it could not be computed (see the log)")
            self.stats = {}
        else:
            self._shown = request
            self.importance, self.stats = result
        names = request.names
        if self.importance.available:
            self._order = list(self.importance.shares)
            fixed = self.importance.fixed
            left_out = (f" Not shown, one value each: {', '.join(fixed)}." if fixed else "")
            self.status.setText(f"{self.importance.counted}, {self.importance.method}. "
                                "A share says how much a slot matters, not which value wins (the latency plot "
                                "shows that), among the configs measured: a slot the search settled early varies "
                                "little among them and looks unimportant (a random run's shares are the "
                                f"space's); few trials or interacting slots make the shares rough.{left_out}")
        else:
            self._order = names
            self.status.setText(f"Importance not shown: {self.importance.reason}.")
        self._shown_status = self.status.text()
        if self.selected_slot not in self.stats:
            self.selected_slot = self._order[0] if self._order else None
        self._draw_bars()
        self._draw_values()

    def select_slot(self, name: str) -> None:
        """Show ``name``'s values in the lower plot and emit ``slot_selected(name)``."""
        if name not in self.stats:
            raise ValueError(f"unknown slot {name!r}")
        self.selected_slot = name
        self._draw_bars()
        self._draw_values()
        self.slot_selected.emit(name)

    def bar_position(self, name: str) -> QPointF:
        """The centre of ``name``'s bar in view coordinates (tests and tooltips use it)."""
        row = len(self._order) - 1 - self._order.index(name)
        share = self.importance.shares.get(name, 0.0)
        return QPointF(max(share, 0.02) / 2, float(row))

    # --- drawing ---------------------------------------------------------------------------------
    def _domain_map(self) -> dict[str, list[Any]]:
        source = self._domains() if callable(self._domains) else self._domains
        return {k: list(v) for k, v in (source or {}).items()}

    def _fit_bar_height(self) -> None:
        """A line of the slot axis's font for every bar, at least: in a short pane (a 768 px
        window, presentation mode) eight names were drawn 12 px apart, each underscore on the next
        name, and the scroll area around the view had nothing to scroll."""
        left = self.bar_plot.getAxis("left")
        metrics = QFontMetrics(left.font() if left.style.get("tickFont") is None else left.style["tickFont"])
        # (the view's own font too: a zoom reaches it first, and the axis's tick font after it)
        line = max(metrics.height(), self.fontMetrics().height())
        # the bars' rows, the share axis under them (a line of ticks, a line of title: from the
        # font, as the axis's own height follows a zoom only once laid out) and the plot's margins
        need = len(self._order) * (line + 2) + 2 * line + 24
        self.bar_plot.setMinimumHeight(max(BAR_PLOT_MIN_PX, need))

    def _draw_bars(self) -> None:
        n = len(self._order)
        widths = [self.importance.shares.get(name, 0.0) for name in self._order]
        rows = [n - 1 - i for i in range(n)]
        brushes = [SELECTED_BRUSH if name == self.selected_slot else BAR_BRUSH for name in self._order]
        # (no bars: one pen, since pyqtgraph's bar item fails on an empty list of pens)
        self.bars.setOpts(x0=[0.0] * n, y=rows, width=widths, height=0.7, brushes=brushes,
                          **({"pens": [NO_PEN] * n} if n else {"pens": None, "pen": NO_PEN}))
        left = self.bar_plot.getAxis("left")
        left.setTicks([[(row, name) for row, name in zip(rows, self._order)]])
        # pyqtgraph does not widen an axis for custom tick text: size it for the longest slot name
        metrics = QFontMetrics(left.font() if left.style.get("tickFont") is None else left.style["tickFont"])
        left.setWidth(max([metrics.horizontalAdvance(name) for name in self._order] + [20]) + 12)
        self._fit_bar_height()
        # each bar carries its number, so a share is read without guessing from the axis
        for label in self.bar_labels:
            self.bar_plot.removeItem(label)
        self.bar_labels = []
        if self.importance.available:
            for row, width in zip(rows, widths):
                label = pg.TextItem(share_text(width), color=(40, 40, 40), anchor=(0, 0.5))
                label.setFont(QFont(self.font()))  # the window's zoom reaches the shares this way
                label.setPos(width, row)
                self.bar_plot.addItem(label)
                self.bar_labels.append(label)
        self._fit_bar_range()
        self.bar_plot.setYRange(-0.6, max(n - 0.4, 0.4), padding=0)

    def _fit_bar_range(self) -> None:
        """The share axis long enough for each bar's figure in the font in force (and the width)."""
        widths = [self.importance.shares.get(name, 0.0) for name in self._order]
        texts = [label.toPlainText() for label in self.bar_labels] or [""] * len(widths)
        end = bar_figures_extent(widths, texts, self.font(), self.bar_plot.getPlotItem().vb.width(),
                                 max(widths + [0.05]) * 1.05)
        self.bar_plot.setXRange(0, end, padding=0)

    def _draw_values(self) -> None:
        stats = self.stats.get(self.selected_slot or "", [])
        xs, y0, heights, med, px, py, ticks = [], [], [], [], [], [], []
        jitter = np.random.default_rng(0)  # fixed jitter: the strip does not dance on refresh
        for i, s in enumerate(stats):
            ticks.append((i, str(s.value), s.n_failed, s.n_aborted))
            if s.n_ok == 0:
                continue
            logs = np.log10(np.clip(s.latencies, 1e-12, None))
            q1, m, q3 = np.percentile(logs, [25, 50, 75])
            xs.append(i)
            y0.append(q1)
            heights.append(max(q3 - q1, 1e-6))
            med += [(i - 0.3, m), (i + 0.3, m)]
            px.append(i + jitter.uniform(-0.18, 0.18, logs.size))
            py.append(logs)
        self.boxes.setOpts(x=xs, y0=y0, height=heights, width=0.55)
        self.medians.setData([p[0] for p in med], [p[1] for p in med])
        if px:
            self.points.setData(np.concatenate(px), np.concatenate(py))
        else:
            self.points.setData([], [])
        self._value_ticks = ticks
        self._fit_value_ticks()
        if stats:
            self.value_plot.setXRange(-0.6, len(stats) - 0.4, padding=0)

    def _fit_value_ticks(self) -> None:
        """Label every k-th value of the slot, k as small as lets the labels stand apart in the
        plot's width and the axis's font (the others keep an unlabelled tick): a slot of 31 block
        sizes ran its values together ("6416283238...") and stacked its "N failed" lines.

        Under each value, its failures and aborted candidates: in words ("5 failed") where they
        fit, else as marks (``✕5``, ``⊘3``) that the axis title explains. Thinned for the words,
        four values lost every other label, and with it the count of the value that failed most;
        a slot of more values than even the marks leave room for is still thinned, marks and all."""
        ticks = getattr(self, "_value_ticks", [])
        axis = self.value_plot.getAxis("bottom")
        metrics = QFontMetricsF(axis.style.get("tickFont") or axis.font())
        per = self.value_plot.getPlotItem().vb.width() / max(len(ticks), 1)
        room = metrics.horizontalAdvance("  ")

        def labels(words: bool) -> list[tuple[float, str]]:
            return [(p, value + (f"\n{failed} failed" if words else f"\n✕{failed}") * bool(failed)
                     + (f"\n{aborted} aborted" if words else f"\n⊘{aborted}") * bool(aborted))
                    for p, value, failed, aborted in ticks]

        def widest(shown: list[tuple[float, str]]) -> float:
            return max((metrics.horizontalAdvance(line) for _, label in shown for line in label.split("\n")),
                       default=0.0)

        words = labels(True)
        shown = words if per > 0 and widest(words) + room <= per else labels(False)
        step = max(1, math.ceil((widest(shown) + room) / per)) if per > 0 else 1
        cut = False
        if step > 1 and per > 0 and not all(is_number_label(value) for _, value, _, _ in ticks):
            # names are shortened before any is left out: thinned, a slot of four methods kept two
            # labels, and nobody could tell which box was which (the tool tip has them whole)
            width = per - room
            for mode in (Qt.TextElideMode.ElideRight, Qt.TextElideMode.ElideMiddle):
                short = [(p, metrics.elidedText(label.split("\n")[0], mode, width)
                          + label[len(label.split("\n")[0]):]) for p, label in shown]
                names = [label.split("\n")[0] for _, label in short]
                # (names cut to the same text tell the boxes apart no better than no names: thinned then)
                if "" not in names and "…" not in names and len(set(names)) == len(names) \
                        and widest(short) + room <= per:
                    cut, shown, step = short != shown, short, 1
                    break
        axis.setToolTip("\n".join(value for _, value, _, _ in ticks) if cut or step > 1 else "")
        labelled = labelled_positions([failed + aborted for _, _, failed, aborted in ticks], step)
        axis.setTicks([[t for k, t in enumerate(shown) if k in labelled],
                       [(p, "") for k, (p, _) in enumerate(shown) if k not in labelled]])
        # the end values' labels may reach a little past the axis, as the charts' do (pyqtgraph left
        # out the first value's label, under a box at the plot's edge)
        axis.setStyle(hideOverlappingLabels=int(metrics.horizontalAdvance("MM")))
        marks = [text for used, text in ((any(t[2] for t in ticks), "✕ failed"), (any(t[3] for t in ticks), "⊘ aborted"))
                 if used and shown is not words]
        title = self.selected_slot or ""
        self.value_plot.setLabel("bottom", f"{title}  ({', '.join(marks)})" if marks and title else title)

    # --- events ----------------------------------------------------------------------------------
    def _on_target_changed(self, _index: int) -> None:
        self.refresh(self._trials if self._source is None else None)

    def _on_bar_click(self, event: Any) -> None:
        box = self.bar_plot.getPlotItem().getViewBox()
        if not box.sceneBoundingRect().contains(event.scenePos()) or not self._order:
            return
        point = box.mapSceneToView(event.scenePos())
        row = int(round(point.y()))
        if 0 <= row < len(self._order) and not math.isnan(point.x()):
            self.select_slot(self._order[len(self._order) - 1 - row])


def share_text(share: float) -> str:
    """A bar's share as its label reads, apart from the bar's end by a space: a share under half a
    percent is "<1%", not "0%" (beside its sliver of a bar that read as "-0%"), and one short of
    the whole by less is ">99%" (others then have some); -0.0 is "0%"."""
    if not share > 0:
        return "\u20020%"
    shown = f"{share:.0%}"
    return "\u2002" + ("<1%" if shown == "0%" else ">99%" if shown == "100%" and share < 1 else shown)


def _names_of(trials: Sequence[Trial]) -> list[str]:
    names: dict[str, None] = {}
    for trial in trials:
        for key in trial.config:
            names.setdefault(key, None)
    return list(names)


__all__ = ["ImportanceView"]
