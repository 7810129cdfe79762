"""The Compare tab: two configs side by side with the diff of their sources, and sessions overlaid.

A and B start as the best feasible config and the default config (the question a tuning run answers:
what changed, and what did it buy?); "A = selected" / "B = selected" take the trial selected in any
view. "Add session..." overlays another session's best latency so far on the current one's (both held to
the open session's constraints: a curve below the recommendation would contradict it), at the
problem size the window shows; "Clear" takes the overlays away.
"""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QFileDialog, QFrame, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QScrollArea, QSplitter, QTableWidget,
    QTableWidgetItem, QTabWidget, QVBoxLayout, QWidget,
)

from workbench.core.domain.objective import MetricTable
from workbench.core.domain.session import problem_key
from workbench.core.errors import WorkbenchError
from workbench.core.fs import resolved
from workbench.gui.plot_widget import plot_widget
from workbench.gui.comparison import (
    best_latency_so_far, best_so_far_steps, compare_trials, comparison_timing_label, legend_labels, overlay_trials,
    running_min, source_diff,
)
from workbench.gui.model import SessionModel
from workbench.gui.plot_axes import ReadableAxis, set_left_title
from workbench.gui.source_view import TEMPLATE_CHANGED, render_source
from workbench.core.domain.figures import fmt
from workbench.gui.text import WARNING_TEXT, metric_label, window_message
from workbench.gui.clipped_cells import elide_cut_cells

DIFFERS = QBrush(QColor(255, 236, 179))
CURVE_COLOURS = ((0, 114, 178), (213, 94, 0), (0, 158, 115), (204, 121, 167), (86, 180, 233), (230, 159, 0))
#: After the colours, the same colours dashed (the legend draws each curve's stroke): two curves
#: never look alike.
CURVE_STYLES = ((Qt.PenStyle.SolidLine, "━"), (Qt.PenStyle.DashLine, "╍"))
#: Sessions overlaid at most besides the open one: one per colour and stroke.
MAX_OVERLAID = len(CURVE_COLOURS) * len(CURVE_STYLES) - 1


#: The source diff's tab; once a pair is shown it also says how many lines differ.
DIFF_TAB = "Source diff"

#: What the diff pane says while A or B is not chosen (an empty pane would read as "no difference").
PICK_TWO = "pick two trials: select one and press A = selected, then another and B = selected"


class CompareView(QWidget):
    def __init__(self, model: SessionModel, parent: QWidget | None = None,
                 opened: Callable[[], Mapping[str, str]] = dict,
                 session_path: Callable[[], Path | None] = lambda: None) -> None:
        super().__init__(parent)
        self.model = model
        self.opened = opened  # the folders the person opened templates from (see render_source)
        self.session_path = session_path  # the open session's file (None: unsaved)
        self.a: int | None = None
        self.b: int | None = None
        #: whether the person picked the pair (A / B = selected): then it stays as the ranking moves
        self.chosen = False
        self.others: list[Any] = []  # sessions overlaid on the current one
        self.drawn_sessions: list[Any] = []  # the sessions the curves show, the open one first
        self.other_paths: list[Path] = []  # their files, resolved
        self._overlay_cache: dict[tuple[int, str | None], tuple[MetricTable, dict[str, Any] | None]] = {}
        self._drawn_bounds: tuple[str, ...] | None = None  # the constraints the curves drawn are held to
        self.add_error = ""  # why the last Add session... added nothing (shown above the legend)
        self.heading = QLabel()
        self.heading.setTextFormat(Qt.TextFormat.RichText)
        self.heading.setWordWrap(True)
        self.pick_a, self.pick_b = QPushButton("A = selected"), QPushButton("B = selected")
        for button, side in ((self.pick_a, "A"), (self.pick_b, "B")):  # (said by a screen reader, shown as a tip)
            button.setToolTip(f"compare the trial selected in the table or a chart as {side}")
            button.setAccessibleDescription(button.toolTip())
        self.pick_a.clicked.connect(lambda: self.pick(self.model.selected, self.b) if self.model.selected is not None else None)
        self.pick_b.clicked.connect(lambda: self.pick(self.a, self.model.selected) if self.model.selected is not None else None)
        self.table = QTableWidget(0, 4)
        self.table.setAccessibleName("Figures and slots of A and B")
        elide_cut_cells(self.table)  # a cut B column read "0.0281" for 0.02818
        self.table.setTabKeyNavigation(False)  # arrows move within it; Tab leaves it (it kept Tab, cell by cell)
        self.table.setHorizontalHeaderLabels(["", "A", "B", "B / A"])
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.diff = QPlainTextEdit()
        self.diff.setAccessibleName("Source diff of A and B")
        self.diff.setReadOnly(True)
        self.diff.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        font = QFont("monospace", 9)
        font.setStyleHint(QFont.StyleHint.Monospace)
        self.diff.setFont(font)
        self.diff.setPlaceholderText(PICK_TWO)
        self.plot = plot_widget(background="w", axisItems={"left": ReadableAxis("left")}, enableMenu=False)
        self.plot.setLabel("bottom", "evaluation")
        set_left_title(self.plot, "best latency (ms)")  # short: the plot is short in presentation mode
        self.plot.setLogMode(y=True)
        self.plot.showGrid(x=True, y=True, alpha=0.25)
        self.curve_legend = QLabel()
        self.curve_legend.setWordWrap(True)
        self.curve_legend.setObjectName("plotLegend")  # sized by the style sheets, so the zoom reaches it
        self.curve_legend.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        # the legend scrolls past a third of the pane: a dozen sessions' lines pushed the plot to 30 px
        self.legend_scroll = QScrollArea()
        self.legend_scroll.setAccessibleName("Sessions compared")
        self.legend_scroll.setWidget(self.curve_legend)
        self.legend_scroll.setWidgetResizable(True)
        self.legend_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.legend_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.add_button = QPushButton("Add session...")
        self.add_button.setToolTip("overlay another session's best latency so far (e.g. another GPU or strategy), "
                                   "at the problem size shown")
        self.add_button.clicked.connect(self._on_add_clicked)
        self.clear_button = QPushButton("Clear")
        self.clear_button.setToolTip("take away the sessions added with Add session...")
        self.clear_button.clicked.connect(self.clear_sessions)
        self.clear_button.setEnabled(False)
        self.curves: list[pg.PlotDataItem] = []

        buttons = QHBoxLayout()
        buttons.addWidget(self.pick_a)
        buttons.addWidget(self.pick_b)
        buttons.addStretch(1)
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.addWidget(self.heading)
        left_layout.addLayout(buttons)
        # The table and the diff each get the whole pane, one at a time: side by side at 1440 px the
        # diff kept 120 px, a dozen characters of each line, or the table lost column B.
        self.pair = pair = QTabWidget()
        pair.setDocumentMode(True)
        pair.tabBar().setAccessibleName("Figures or source diff")
        pair.addTab(self.table, "Figures and slots")
        pair.addTab(self.diff, DIFF_TAB)
        left_layout.addWidget(pair, 1)
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(0, 0, 0, 0)
        # (no title beside the buttons: in presentation mode's font at 1440 px a wider header row
        # took the room of the A/B table's values)
        top = QHBoxLayout()
        top.addWidget(self.add_button)
        top.addWidget(self.clear_button)
        top.addStretch(1)
        right_layout.addLayout(top)
        right_layout.addWidget(self.legend_scroll)
        right_layout.addWidget(self.plot, 1)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(left)
        splitter.addWidget(right)
        splitter.setSizes([600, 300])
        splitter.setStretchFactor(0, 2)  # the pair first: its table is what the tab is for
        splitter.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(splitter)
        model.session_changed.connect(self._on_session_changed)
        model.trials_added.connect(self._on_trials_added)
        model.ranking_changed.connect(self._on_ranking_changed)
        self._curves_dirty = True
        self._on_session_changed()

    # Hidden in its tab most of the time: the curves are redrawn when shown, not per run tick.
    def _on_trials_added(self, *_: Any) -> None:
        self._curves_dirty = True
        if self.isVisible():
            self._draw_curves()

    def showEvent(self, event: Any) -> None:  # Qt override
        super().showEvent(event)
        self._on_ranking_changed()  # a ranking moved while the tab was hidden: its pair and roles follow
        if self._curves_dirty:
            self._draw_curves()

    # --- the pair ----------------------------------------------------------------------------------
    def _on_session_changed(self) -> None:
        self.a = self.b = None
        self.chosen = False
        self._curves_dirty = True
        if self.isVisible():
            self._on_ranking_changed()
            self._draw_curves()

    def _on_ranking_changed(self) -> None:
        """The pair a run starts with (the recommendation against the default config) follows the
        ranking until the person picks a side; a pair they picked stays, its roles said anew (the
        heading kept calling a trial the constraints had since excluded "the recommended config")."""
        if self._drawn_bounds != self._bounds_now():
            self._curves_dirty = True  # a constraint moved: every curve is held to it
        if not self.isVisible():
            return
        if self._curves_dirty:  # (a run's tick has drawn them already, on trials_added)
            self._draw_curves()
        if self.chosen and self.a is not None and self.b is not None:
            self._show_heading()
            return
        ranking = self.model.ranking
        best = ranking.best if ranking is not None else None
        default = self.model.default_index
        second = int(ranking.order[1]) if ranking is not None and ranking.order.size > 1 else None
        pair = (best, default if default is not None and default != best else second)
        if pair != (self.a, self.b):
            self.set_pair(*pair)
        else:
            self._show_heading()

    def pick(self, a: int | None, b: int | None) -> None:
        """The person's pair (the A = selected / B = selected buttons, which do nothing with no
        trial selected): kept whatever the ranking does."""
        self.chosen = a is not None or b is not None
        self.set_pair(a, b)

    def resizeEvent(self, event: Any) -> None:  # Qt override
        super().resizeEvent(event)
        self._fit_legend()
        self._fit_columns()

    def _fit_columns(self) -> None:
        """The figures' columns as wide as their contents, the names' column narrowed (its names
        elided, whole in their tool tips) when all four do not fit: at 1440 px in presentation
        mode B was cut to "0.0281" and B / A, what a comparison is read for, was out of sight."""
        table = self.table
        if table.rowCount() == 0:
            return
        table.resizeColumnsToContents()
        room = table.viewport().width()
        widths = [table.columnWidth(c) for c in range(table.columnCount())]
        over = sum(widths) - room
        if over > 0:
            table.setColumnWidth(0, max(widths[0] - over, table.fontMetrics().horizontalAdvance("latency p2…") + 8))

    def _fit_legend(self) -> None:
        """The legend as tall as its lines, up to a third of the tab: the plot keeps the rest. Cut
        short, it shows whole lines (the rest scrolls): a line cut through its middle read as
        nothing, and was the second session's best latency, the figure compared."""
        wanted = self.curve_legend.heightForWidth(max(self.legend_scroll.viewport().width(), 1))
        wanted = max(wanted, self.curve_legend.sizeHint().height())
        most = max(self.height() // 3, 1)
        if wanted + 2 > most:
            line = max(self.curve_legend.fontMetrics().lineSpacing(), 1)
            most = max(most - (most - 2) % line, line + 2)
        self.legend_scroll.setFixedHeight(min(wanted + 2, most))

    def set_pair(self, a: int | None, b: int | None) -> None:
        """Compare trial rows ``a`` and ``b`` (None leaves that side empty)."""
        n = self.model.n
        self.a = a if a is not None and 0 <= a < n else None
        self.b = b if b is not None and 0 <= b < n else None
        self._show_pair()

    def _show_heading(self) -> None:
        if self.a is None or self.b is None:
            return
        a, b = self.model.trials[self.a], self.model.trials[self.b]
        self.heading.setText(f"<b>A</b>: {self._role(self.a)}trial {a.index} [{a.config.id}] &nbsp; vs &nbsp; "
                             f"<b>B</b>: {self._role(self.b)}trial {b.index} [{b.config.id}] &nbsp; "
                             "(rows that differ are marked)")

    def _role(self, row: int) -> str:
        """What a side is, said before its trial number: the recommendation, the template's default
        config, or the runner-up (the pair a run starts with), else nothing (a trial picked by hand).
        "trial 32 vs trial 0" told a class nothing of which was the tuned config."""
        ranking = self.model.ranking
        if ranking is not None and row == ranking.best:
            return "the recommended config, "
        if row == self.model.default_index:
            return "the default config, "
        if ranking is not None and ranking.order.size > 1 and row == int(ranking.order[1]):
            return "the runner-up, "
        return ""

    def _show_pair(self) -> None:
        trials = self.model.trials
        if self.a is None or self.b is None:
            self.heading.setText("<i>Compare: select a trial and press A = selected, then another and B = selected.</i>")
            self.table.setRowCount(0)
            self.diff.setPlaceholderText(PICK_TWO)
            self.diff.setPlainText("")
            self._name_diff_tab(DIFF_TAB)
            return
        a, b = trials[self.a], trials[self.b]
        self._show_heading()
        rows = compare_trials(a, b)
        self.table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            name = row.name if row.section == "slot" else metric_label(row.name)
            ratio = row.ratio if row.section != "slot" else math.nan
            # a slot's value as the card, the table and the charts write it (True / False, not yes / no)
            written = _slot_text if row.section == "slot" else fmt
            cells = [name, written(row.a), written(row.b),
                     f"{fmt(ratio, 3, column=True)}x" if math.isfinite(ratio) and row.differs else ""]
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if row.differs:
                    item.setBackground(DIFFERS)
                if c == 0 and row.section == "slot":
                    item.setFont(QFont(item.font().family(), weight=QFont.Weight.Bold))
                if c == 0:
                    item.setToolTip(name)  # whole, where a narrow pane elides it
                self.table.setItem(r, c, item)
        self._fit_columns()
        session = self.model.session
        assert session is not None  # a and b are its trials
        source_a, note = render_source(session, a.config, session.problem_of(a), self.opened())
        source_b, _ = render_source(session, b.config, session.problem_of(b), self.opened())
        # an empty diff means the same source only when there is a source (a recording has none)
        self.diff.setPlaceholderText("the rendered sources of A and B are the same" if source_a or source_b
                                     else f"no source to compare: {note}")
        lines = source_diff(source_a, source_b, f"A trial {a.index}", f"B trial {b.index}")
        changed = TEMPLATE_CHANGED in note  # the template as it is now: said, as the source view says it
        shown = [f"# {TEMPLATE_CHANGED}: these are its sources as it is now, not the code the trials ran"] \
            if changed else []
        self.diff.setPlainText("\n".join([*shown, *lines]))
        removed = sum(1 for line in lines[2:] if line.startswith("-"))  # after the two file names
        added = sum(1 for line in lines[2:] if line.startswith("+"))
        self._name_diff_tab((f"{DIFF_TAB} (-{removed} +{added} lines)" if lines else
                             f"{DIFF_TAB} (same)" if source_a or source_b else f"{DIFF_TAB} (none)")
                            + (" (template changed)" if changed else ""))

    def _name_diff_tab(self, text: str) -> None:
        self.pair.setTabText(self.pair.indexOf(self.diff), text)

    def rows_shown(self) -> list[list[str]]:
        return [[item.text() if (item := self.table.item(r, c)) is not None else "" for c in range(self.table.columnCount())]
                for r in range(self.table.rowCount())]

    # --- sessions ----------------------------------------------------------------------------------
    def add_session(self, path: str | Path) -> None:
        """Overlay a saved session. Raises WorkbenchError, adding nothing, for a file that is not
        one, one overlaid already or the open session's own (its curve is drawn already: a second
        one would only hide it), or when every curve style is taken."""
        from workbench.core.domain.session import load_session  # only when asked

        where = resolved(path)
        name = Path(path).name
        own = self.session_path()
        if own is not None and where == resolved(own) and self.model.session is not None:
            raise WorkbenchError(f"{name} is the open session: its curve is drawn already")
        if where in self.other_paths:
            raise WorkbenchError(f"{name} is overlaid already")
        if len(self.others) >= MAX_OVERLAID:
            raise WorkbenchError(f"at most {MAX_OVERLAID} sessions are overlaid: Clear them first")
        session = load_session(path)
        self.others.append(session)
        self.other_paths.append(where)
        self.add_error = ""
        self.clear_button.setEnabled(True)
        self._draw_curves()

    def _overlay_curve(self, session: Any, problem: Mapping[str, Any] | None) -> tuple[np.ndarray, dict[str, Any] | None]:
        """An overlaid session's best latency so far at ``problem`` (see :func:`overlay_trials`),
        kept per session and size: the curves are redrawn on every tick of a run while the tab is
        shown, and a file's trials do not change meanwhile."""
        key = (id(session), problem_key(problem) if problem is not None else None)
        if key not in self._overlay_cache:  # the trials' table once: a slider drag re-masks it only
            trials, elsewhere = overlay_trials(session, problem)
            self._overlay_cache[key] = (MetricTable.from_trials(trials), elsewhere)
        table, elsewhere = self._overlay_cache[key]
        return best_latency_so_far(table, self.model.constraints), elsewhere

    # --- as an exported chart (File > Export chart): the curves on a slide, larger than the pane ----
    #: Title of the exported picture (see :func:`workbench.gui.chart_export.export_chart`).
    title = "Best latency per evaluation"
    #: The smallest exported plot, in pixels: the pane's plot is a few hundred pixels wide, which
    #: a slide or a projector cannot show; the export draws the same curves at least this large.
    export_min_size = (900, 520)

    @property
    def legend(self) -> QLabel:
        return self.curve_legend

    def refresh(self) -> None:
        """Draw the curves for the session and overlays as they are now (a tab never shown has none)."""
        self._draw_curves()

    def export_title(self) -> str:
        session = self.model.session
        if session is None:
            return self.title
        size = self.model.shown_size_label()
        return f"{self.title} · {session.kernel}" + (f" · {size}" if size else "")

    def export_label(self, shown: str) -> str:
        """The label an exported picture of the curves carries: ``shown`` (the open session's) or,
        where the overlaid sessions' timings differ in kind, which are modelled or recorded."""
        return comparison_timing_label(self.drawn_sessions, shown)

    def clear_sessions(self) -> None:
        """Take away every overlaid session (the open one stays)."""
        self.others, self.other_paths, self.add_error = [], [], ""
        self._overlay_cache.clear()
        self.clear_button.setEnabled(False)
        self._draw_curves()

    def _on_add_clicked(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Overlay a session", str(Path.home()), "Sessions (*.json);;All files (*)")
        if path:
            try:
                self.add_session(path)
            except WorkbenchError as exc:  # said above the legend, which still names the curves drawn
                self.add_error = window_message(exc)
                self._draw_curves()

    def _bounds_now(self) -> tuple[str, ...]:
        return tuple(bound.label for bound in self.model.constraints.bounds())

    def _draw_curves(self) -> None:
        self._curves_dirty = False
        self._drawn_bounds = self._bounds_now()
        for curve in self.curves:
            self.plot.removeItem(curve)
        self.curves = []
        own = self.session_path()
        opened = resolved(own) if own is not None and self.model.session is not None else None
        # an overlay whose file has since been opened is the open session's curve: not drawn twice
        sessions = ([self.model.session] if self.model.session is not None else []) + [
            other for other, where in zip(self.others, self.other_paths) if where != opened]
        self.drawn_sessions = sessions
        shown = self.model.shown_problem()
        problem = shown if shown is not None else (self.model.session.problem if self.model.session is not None else None)
        entries = [f"<span style='color:{WARNING_TEXT}'>{html.escape(self.add_error)}</span>"] if self.add_error else []
        bounds = self.model.constraints.bounds()
        bounded = bool(bounds)  # every curve under the open session's constraints, said once
        set_left_title(self.plot, "best feasible latency (ms)" if bounded else "best latency (ms)")
        common, labels = legend_labels(sessions)
        if common:
            entries.append(html.escape(common) + ":")
        if bounded and sessions:
            entries.append("feasible under " + html.escape(", ".join(bound.shown for bound in bounds)))
        for k, session in enumerate(sessions):
            elsewhere = None
            if session is self.model.session:  # from the model's columns: no walk over 20,000 trials
                ranking = self.model.ranking
                feasible = ranking.feasible if ranking is not None else ~self.model.failed_mask()
                best = running_min(np.where(feasible, self.model.metric("latency_ms"), np.nan))
            else:
                best, elsewhere = self._overlay_curve(session, problem)
            colour = CURVE_COLOURS[k % len(CURVE_COLOURS)]
            style, stroke = CURVE_STYLES[(k // len(CURVE_COLOURS)) % len(CURVE_STYLES)]
            keep = np.isfinite(best)
            steps_x, steps_y = best_so_far_steps(best)
            curve = pg.PlotDataItem(steps_x, steps_y, pen=pg.mkPen(*colour, width=2.5, style=style), stepMode=None)
            self.plot.addItem(curve)
            self.curves.append(curve)
            final = (f"best {'feasible ' if bounded else ''}{fmt(float(best[keep][-1]))} ms" if keep.any()
                     else "no feasible trial" if bounded else "no successful trial")
            which = "this session" if k == 0 and session is self.model.session else f"session {k + 1}"
            entry = (f'<span style="color:rgb{colour}">{stroke}</span> {which}: '
                     f'{html.escape(labels[k])} ({final})')
            if sessions and session is not sessions[0] and _other_code(session, sessions[0]):
                entry += f" <span style='color:{WARNING_TEXT}'>(another kernel: its latencies measure other work)</span>"
            elif elsewhere:
                differs = ", ".join(f"{key}={value}" for key, value in elsewhere.items()
                                    if problem is None or problem_key({key: problem.get(key)}) != problem_key({key: value}))
                differs = differs or ", ".join(f"{key}={value}" for key, value in elsewhere.items())
                entry += (f" <span style='color:{WARNING_TEXT}'>(at another problem size, {html.escape(differs)}: "
                          "its latencies measure other work)</span>")
            entries.append(entry)
        self.curve_legend.setText("<br>".join(entries))
        self._fit_legend()
        # no tick values of nothing (2, 5, 9 ms before any trial), as the charts do
        plotted = any(curve.getData()[0] is not None and len(curve.getData()[0]) for curve in self.curves)
        for name in ("left", "bottom"):
            if self.plot.getAxis(name).style.get("showValues", True) != plotted:
                self.plot.getAxis(name).setStyle(showValues=plotted)


def _slot_text(value: object) -> str:
    """A slot's value as the card writes it: True / False (not yes / no, as the results table and
    the charts write a switch too), a float as given (0.001; the results table's column writes its
    floats at one precision, 0.001000, beside each other)."""
    return str(value) if isinstance(value, (bool, float)) else fmt(value)


def _other_code(session: Any, first: Any) -> bool:
    """Whether ``session`` measured other code than ``first``: another kernel, a python benchmark
    beside a template, or another benchmark under the same name (a benchmark's name is the
    person's to give; its code is its identity)."""
    from workbench.core.domain.portability import other_benchmark

    return (session.kernel != first.kernel or {session.kind, first.kind} == {"python", "template"}
            or other_benchmark(session, first))
