"""The Portability tab: sessions of one kernel on several GPUs, each GPU's best config on every GPU.

The sessions compared are the open one (when it has trials) and the files added with "Add
sessions..." (several at once: recordings, Kernel Tuner imports, simulated GPUs). The table is
:func:`workbench.core.domain.portability.portability_report` under the objective in force (the sliders):
row = a GPU's own best config, column = the GPU it runs on, cell = its fraction of that GPU's
optimum, coloured from red (0%) to green (100%); predicted cells (a simulated GPU that never ran
the config) are italic and say so. Below: the config with the best worst case, the one to ship
when the GPU is not known at build time. Computed when the tab is shown, not per run tick.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from PySide6.QtCore import QTimer, Qt
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.core.domain.assignments import parse_assignment_list
from workbench.core.errors import WorkbenchError
from workbench.core.io.output_files import FileKey, file_key
from workbench.core.domain.records import provenance, provenance_tag
from workbench.core.io.export import typed_problem_values
from workbench.core.domain.portability import (
    FAILED,
    INFEASIBLE,
    PREDICTED,
    Cell,
    PortabilityReport,
    SessionUnanswered,
    check_compatible,
    portability_report,
)
from workbench.gui.model import SessionModel
from workbench.gui.text import WARNING_TEXT, config_text, plain_tip, window_message
from workbench.gui.clipped_cells import elide_cut_cells
from workbench.gui.timers import single_shot

WARN = WARNING_TEXT


def heat_rgb(fraction: float | None) -> tuple[int, int, int]:
    """Cell colour: light grey when unknown, else red (0) through yellow (0.75) to green (1)."""
    if fraction is None:
        return (235, 235, 235)
    f = max(0.0, min(1.0, fraction))
    if f < 0.75:  # red -> yellow over 0..75%: most of the interesting range is near the top
        t = f / 0.75
        return (244, int(109 + t * (220 - 109)), int(67 + t * (100 - 67)))
    t = (f - 0.75) / 0.25
    return (int(244 - t * (244 - 102)), int(220 - t * (220 - 189)), int(100 + t * (99 - 100)))


#: Least time between two reports made for a dragged slider or a run's trials (ms).
REFRESH_MS = 150
#: Rows of the comparison table shown without its own scroll bar (one per GPU compared).
TABLE_ROWS_SHOWN = 8


#: What the "*" of a predicted cell means, first among the notes when one is shown.
PREDICTED_MARK_NOTE = "* predicted by the simulator (in italics): that GPU's run never tried the config"


def _cell_text(cell: Cell) -> str:
    """A cell as the table shows it: a predicted one as ``100.0%*`` (italic, its tool tip and the
    first note say so), where ``100.0% (predicted)`` made a table of three GPUs wider than the tab
    at 1440 px and pushed its worst-case column out of sight."""
    return cell.text().replace(" (predicted)", "*")


class PortabilityView(QWidget):
    def __init__(self, model: SessionModel, parent: QWidget | None = None,
                 templates: Callable[[str], dict[str, Any]] = lambda kernel: {},
                 session_path: Callable[[], Path | None] = lambda: None) -> None:
        super().__init__(parent)
        self.model = model
        self.session_path = session_path  # the open session's file (None: unsaved)
        #: kernel -> {name: template} the simulated GPUs predict with, loaded without running code
        #: (the window's declarative specs); other kernels are predicted from the shipped library only
        self.templates = templates
        self.paths: list[str] = []
        self.sessions: list[Any] = []  # sessions added from files, besides the open one
        self.report: PortabilityReport | None = None
        self._dirty = True

        self.heading = QLabel()
        self.heading.setTextFormat(Qt.TextFormat.RichText)
        self.heading.setWordWrap(True)
        self.files = QListWidget()
        self.files.setAccessibleName("Sessions on other GPUs")
        self.add_button = QPushButton("Add sessions...")
        self.add_button.setToolTip("sessions of the same kernel on other GPUs: recorded, imported from Kernel Tuner, "
                                   "or simulated (pick several files at once)")
        self.add_button.clicked.connect(self._on_add_clicked)
        self.remove_button = QPushButton("Remove")
        self.remove_button.setToolTip("take the selected added session out of the comparison")
        self.remove_button.clicked.connect(self._on_remove_clicked)
        self.clear_button = QPushButton("Clear")
        self.clear_button.setToolTip("take every added session out of the comparison (the open one stays)")
        self.clear_button.clicked.connect(self.clear)
        self.files.currentRowChanged.connect(self._enable_buttons)
        self.at = QLineEdit()
        self.at.setAccessibleName("Compare at size")
        self.at.setPlaceholderText("at size: n=1024")
        self.at.setToolTip("compare size sweeps at this problem size (empty: the size the window shows, "
                           "else each session's own problem)")
        self.at.editingFinished.connect(self.refresh)
        self.table = QTableWidget(0, 0)
        self.table.setAccessibleName("Each config on each GPU")
        elide_cut_cells(self.table)
        self.table.setTabKeyNavigation(False)  # arrows move within it; Tab leaves it (it kept Tab, cell by cell)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.portable = QLabel()
        self.portable.setTextFormat(Qt.TextFormat.RichText)
        self.portable.setWordWrap(True)
        self.portable.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.notes = QLabel()
        self.notes.setWordWrap(True)
        # sized by the application's style sheet (and so by the zoom and the person's font): a
        # sheet of its own kept it at 8 pt in presentation mode and beside a 14 pt desktop font
        self.notes.setObjectName("smallNote")

        buttons = QHBoxLayout()  # (Add on a row of its own: the files' column stays narrow)
        for button in (self.remove_button, self.clear_button):
            buttons.addWidget(button)
        # The sessions compared on the left, the report beside them: the tab shares the window's
        # lower half, a few hundred pixels tall, and with the list above the report the table
        # showed one GPU's row of three at 1440 x 900.
        files_pane = QWidget()
        files_layout = QVBoxLayout(files_pane)
        files_layout.setContentsMargins(0, 0, 0, 0)
        files_layout.addWidget(self.files, 1)
        files_layout.addWidget(self.add_button)
        files_layout.addLayout(buttons)
        files_layout.addWidget(self.at)
        #: The report (table, portable pick, notes): hidden while there is none, when it was an
        #: empty table that took half the pane and cut the heading that says what to do short. It
        #: scrolls as a whole, its table as tall as its rows, so no part of it is a sliver.
        self.report_pane = QWidget()
        lower_layout = QVBoxLayout(self.report_pane)
        lower_layout.setContentsMargins(0, 0, 0, 0)
        lower_layout.addWidget(self.table)
        lower_layout.addWidget(self.portable)
        lower_layout.addWidget(self.notes)
        lower_layout.addStretch(1)
        self.report_scroll = QScrollArea()
        self.report_scroll.setAccessibleName("Portability report")
        self.report_scroll.setWidgetResizable(True)
        self.report_scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        self.report_scroll.setWidget(self.report_pane)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(files_pane)
        splitter.addWidget(self.report_scroll)
        splitter.setStretchFactor(0, 1)
        splitter.setStretchFactor(1, 3)
        splitter.setSizes([200, 600])  # a quarter for the files (their long names elide), until the person drags it
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.heading)  # across the tab: what is compared, or a refusal, read whole
        layout.addWidget(splitter, 1)

        model.session_changed.connect(self._mark_dirty)
        # a slider dragged, a run's trials: at most one report per REFRESH_MS while they come (one
        # per step of a drag froze the window for the report's time at every step)
        self._soon = single_shot(self, REFRESH_MS, self.refresh_if_dirty)
        model.objective_changed.connect(self._mark_dirty_soon)
        model.session_grew.connect(self._mark_dirty_soon)  # every size, not only the one shown

    # --- sessions ----------------------------------------------------------------------------------
    def add_sessions(self, paths: list[str]) -> None:
        """Add saved sessions of the kernel compared. Raises WorkbenchError naming the first file
        that is not one, is listed already (or is the open session's own file), is of another
        kernel, space or problem, or would leave no report (no trials at the problem compared,
        nothing feasible on its GPU under the objective in force); none is added then, and the
        report stays as it was."""
        from workbench.core.domain.session import load_session

        listed = {file_key(p) for p in self.paths}
        own = self._open_file()
        if own is not None:
            listed.add(own)
        for path in paths:
            if file_key(path) in listed:
                raise WorkbenchError(f"{Path(path).name} is compared already"
                                     + (" (the open session)" if file_key(path) == own else ""))
            listed.add(file_key(path))
        loaded = [load_session(path) for path in paths]
        sessions, labels = self._compared()
        sessions, labels = sessions + loaded, labels + [Path(p).name for p in paths]
        checked: PortabilityReport | None = None
        if len(sessions) > 1:
            try:
                at, at_read = self._at(loaded), True
            except WorkbenchError:  # the at-size field is the report's to word; compare whole problems here
                at, at_read = None, False
            check_compatible(sessions, labels, at)
            if at_read:
                checked = self._refuse_a_broken_report(sessions, labels, at, [Path(p).name for p in paths])
        self.paths += [str(p) for p in paths]
        self.sessions += loaded
        self.refresh(checked)

    def _refuse_a_broken_report(self, sessions: list[Any], labels: list[str], at: dict[str, Any] | None,
                                names: list[str]) -> PortabilityReport | None:
        """Raise when the report cannot use one of the files being added (no trials at the size
        compared, nothing feasible on its GPU): it is refused instead of added, which left every
        later change showing its error until the row was removed. A report the sessions compared
        already cannot give (the objective in force leaves one of them nothing) is not the new
        file's fault: that is said by the report, and the file is added. Returns the report when
        there is one, for the view to show without computing it again."""
        try:
            return self._report(sessions, labels, at)
        except SessionUnanswered as exc:
            if exc.label in names:
                raise WorkbenchError(f"{window_message(exc)}; {exc.label} not added") from None
        except WorkbenchError:
            pass  # e.g. one GPU only so far: the report says so until another is added
        return None

    def _open_file(self) -> FileKey | None:
        """The open session's file while the open session is compared (None: unsaved, or no trials)."""
        own = self.session_path()
        return file_key(own) if own is not None and self._current() is not None else None

    def _compared(self) -> tuple[list[Any], list[str]]:
        """The sessions compared now and their labels: the open one first, when it has trials. An
        added file that has since been opened is left out (its trials are the open session's)."""
        current = self._current()
        own = self._open_file()
        added = [(s, Path(p).name) for s, p in zip(self.sessions, self.paths) if own is None or file_key(p) != own]
        return (([current] if current is not None else []) + [s for s, _ in added],
                (["open session"] if current is not None else []) + [label for _, label in added])

    def _at(self, adding: Sequence[Any] = ()) -> dict[str, Any] | None:
        """The problem compared: the at-size field's, else the size the window shows (a sweep),
        else the open session's own when a file compared (or ``adding``) is a sweep (its problem
        is one of its sizes, which need not be the open session's), else None (each session's own)."""
        typed = parse_assignment_list(self.at.text(), "at size")
        if typed:
            sessions = [s for s in (self._current(), *self.sessions, *adding) if s is not None]
            # typed as the compared problem's values (a number where it has one), as --at is
            return typed_problem_values(sessions[0].problem, dict(typed), "these sessions", "at size") \
                if sessions else dict(typed)
        shown = self.model.shown_problem()
        if shown is not None:
            return dict(shown)
        current = self._current()
        if current is not None and any(trial.problem is not None for session in [*self.sessions, *adding]
                                       for trial in session.trials):
            return dict(current.problem)
        return None

    def _report(self, sessions: list[Any], labels: list[str], at: dict[str, Any] | None) -> PortabilityReport:
        from workbench.runner.portability import simulator_predictors

        predictors, notes = simulator_predictors(sessions, at, templates=self.templates(sessions[0].kernel))
        report = portability_report(sessions, labels, self.model.constraints, self.model.weights,
                                    predictors=predictors, at=at)
        report.notes += notes
        return report

    def clear(self) -> None:
        self.paths, self.sessions = [], []
        self.refresh()

    def _on_add_clicked(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "Sessions of this kernel on other GPUs", str(Path.home()),
                                                "Sessions (*.json);;All files (*)")
        if paths:
            try:
                self.add_sessions(paths)
            except WorkbenchError as exc:
                self._show_error(window_message(exc))

    def _added_row(self) -> int:
        """The selected row's place among the added sessions (-1: none, or the open session's row)."""
        row = self.files.currentRow() - (1 if self._current() is not None else 0)
        return row if 0 <= row < len(self.sessions) else -1

    def _enable_buttons(self, *_: Any) -> None:
        """Remove and Clear only where they have something to take out: the open session is not
        theirs to remove, and both were enabled with it alone in the list."""
        self.remove_button.setEnabled(self._added_row() >= 0)
        self.clear_button.setEnabled(bool(self.sessions))

    def _on_remove_clicked(self) -> None:
        row = self._added_row()
        if row >= 0:
            del self.sessions[row]
            del self.paths[row]
            self.refresh()

    def _current(self) -> Any:
        session = self.model.session
        return session if session is not None and session.trials else None

    # --- the report --------------------------------------------------------------------------------
    def _mark_dirty(self, *_: Any) -> None:
        self._dirty = True
        if self.isVisible():
            self.refresh()

    def _mark_dirty_soon(self, *_: Any) -> None:
        """As :meth:`_mark_dirty`, the report made once the timer runs out, not pushed back by
        what comes meanwhile (a drag that never pauses still refreshes it as it goes)."""
        self._dirty = True
        if self.isVisible() and not self._soon.isActive():
            self._soon.start()

    def refresh_if_dirty(self) -> None:
        """The window calls this when the tab comes into view."""
        if self._dirty:
            self.refresh()

    def refresh(self, computed: PortabilityReport | None = None) -> None:
        """Show the files and the report; ``computed``: the report of exactly what is compared now,
        made by :meth:`add_sessions`' check (a report over recorded landscapes takes seconds)."""
        self._dirty = False
        sessions, labels = self._compared()
        # the size compared when the field is empty: the one the window shows of an open sweep
        shown = self.model.shown_problem()
        problem = dict(shown) if shown is not None else dict(sessions[0].problem) if sessions else {}
        # every whole-number parameter (the sizes; sgemm's m, n and k, not only m), else the first one
        sizes = [(k, v) for k, v in problem.items() if isinstance(v, int) and not isinstance(v, bool)]
        self.at.setPlaceholderText("at size: " + (", ".join(f"{k}={v}" for k, v in sizes or list(problem.items())[:1])
                                                   or "NAME=VALUE"))
        self.files.clear()
        current, own = self._current(), self._open_file()
        rows = ([(current, "open session", None)] if current is not None else []) + [
            (session, Path(path).name, file_key(path)) for session, path in zip(self.sessions, self.paths)]
        for session, label, where in rows:  # every added file keeps its row (Remove counts rows)
            if where is not None and where == own:
                self.files.addItem(f"{label}: the open session now, counted once")
                continue
            device = session.device.get("name", "?")
            sim = provenance_tag(provenance(session.device))
            self.files.addItem(f"{label}: {session.kernel} on {device}{sim}, {len(session.trials)} trials")
        self._enable_buttons()
        self.report = None
        self._show_report(False)
        self.table.setRowCount(0)
        self.table.setColumnCount(0)
        self.portable.setText("")
        self.notes.setText("")
        if len(sessions) < 2:
            self.heading.setText("<i>Portability: add sessions of this kernel on other GPUs (recorded, imported "
                                 "from Kernel Tuner, or simulated) to see how each GPU's best config does on the "
                                 "others, and which single config is safest everywhere.</i>")
            return
        try:
            report = computed if computed is not None else self._report(sessions, labels, self._at())
        except WorkbenchError as exc:
            self._show_error(window_message(exc))
            return
        self.report = report
        # where the timings come from, as show --portability tags each device: in the heading when
        # every GPU's are of one kind, on each row when they differ (_fill_table); the tags stood
        # only in the file list, cut off out of sight at 1920 px
        kinds = {report.kind_of(device) for device in report.devices}
        alike = {"simulated": " (all simulated: modelled, not measured)", "replayed": " (all replayed recordings)",
                 "recorded": " (all recordings)"}.get(next(iter(kinds)), "") if len(kinds) == 1 else ""
        self.heading.setText(f"<b>{_escape(report.kernel)}</b> on {len(report.devices)} GPUs{alike} at "
                             f"{_escape(config_text(report.problem))}: each GPU's best config as a fraction of "
                             f"every GPU's optimum ({_escape(report.objective)})")
        self._fill_table(report)
        self._show_report(True)

    def _show_report(self, shown: bool) -> None:
        self.report_scroll.setVisible(shown)
        self.report_pane.setVisible(shown)

    def _show_error(self, text: str) -> None:
        self.heading.setText(f"<span style='color:{WARN}'>{_escape(text)}</span>")

    def _fill_table(self, report: PortabilityReport) -> None:
        n = len(report.devices)
        self.table.setColumnCount(n + 2)
        self.table.setRowCount(n)
        # columns by number (a row header names each GPU once), so five GPUs fit the tab; the worst
        # case first, beside the row's name: after the GPUs' columns, five of them pushed it out of
        # sight at 1440 px, and it is the figure a config to ship is chosen by
        self.table.setHorizontalHeaderLabels(["worst", *(f"on [{j + 1}]" for j in range(n)), "config"])
        worst_header = self.table.horizontalHeaderItem(0)
        if worst_header is not None:
            worst_header.setToolTip("the config's lowest fraction of any GPU's optimum: its worst case")
        for j, device in enumerate(report.devices):
            header = self.table.horizontalHeaderItem(j + 1)
            if header is not None:
                header.setToolTip(plain_tip(device))
        mixed = len({report.kind_of(device) for device in report.devices}) > 1  # (else the heading says it once)
        self.table.setVerticalHeaderLabels([
            f"[{i + 1}] best of {short}{provenance_tag(report.kind_of(device)) if mixed else ''}"
            for i, (short, device) in enumerate(zip(_short_devices(report.devices), report.devices))])
        for i, device in enumerate(report.devices):
            header = self.table.verticalHeaderItem(i)
            if header is not None:
                header.setToolTip(plain_tip(f"the best config measured on {device}"))
        # the slots that tell the GPUs' best configs apart first, then the others they differ in: a
        # narrow column cut them off, and two rows that differed in the last slot read the same
        # (the cell's tool tip has the config whole)
        configs = [best.config.to_dict() for best in report.bests]
        telling = telling_apart(configs)
        varying = telling + [name for name in (configs[0] if configs else {})
                             if name not in telling and len({repr(c.get(name)) for c in configs}) > 1]
        for i, (best, row) in enumerate(zip(report.bests, report.matrix)):
            known = [c.fraction for c in row if c.fraction is not None]
            worst = min(known) if len(known) == len(row) else None
            self.table.setItem(i, 0, self._cell_item(Cell(worst, "measured") if worst is not None else Cell(None, "missing")))
            for j, cell in enumerate(row):
                self.table.setItem(i, j + 1, self._cell_item(cell))
            config = best.config.to_dict()
            ordered = {**{k: config[k] for k in varying if k in config}, **config}
            self.table.setItem(i, n + 1, QTableWidgetItem(config_text(ordered)))
        self.table.resizeColumnsToContents()
        self._fit_table_height()
        pick = report.portable
        if pick is None:
            self.portable.setText(f"<b>Portable</b>: <span style='color:{WARN}'>no config is known to work on every GPU"
                                  "</span>")
        else:
            per = ", ".join(f"[{j + 1}] {_escape(_cell_text(c))}" for j, c in enumerate(pick.cells.values()))
            self.portable.setText(
                f"<b>Portable (best worst case)</b>: worst {100 * pick.worst:.1f}% on {_escape(pick.worst_device)}, "
                f"mean {100 * pick.mean:.1f}% (best of {_escape(pick.candidates_text())}): {per}<br>"
                f"{_escape(config_text(pick.config.to_dict()))}")
        starred = any(c.source == PREDICTED for row in report.matrix for c in row) or (
            pick is not None and any(c.source == PREDICTED for c in pick.cells.values()))
        self.notes.setText("\n".join([*([PREDICTED_MARK_NOTE] if starred else []), *report.notes]))

    def _fit_table_height(self) -> None:
        """The table as tall as its header and rows (up to :data:`TABLE_ROWS_SHOWN`, past which it
        scrolls), with room for its horizontal scroll bar: the report scrolls as a whole instead."""
        rows = min(self.table.rowCount(), TABLE_ROWS_SHOWN)
        height = (self.table.horizontalHeader().sizeHint().height()
                  + sum(self.table.rowHeight(r) for r in range(rows))
                  + self.table.horizontalScrollBar().sizeHint().height() + 2 * self.table.frameWidth())
        self.table.setFixedHeight(height)

    def changeEvent(self, event: Any) -> None:  # Qt override: a new font (the window's zoom) changes row heights
        """Refit from the event loop: the window's zoom sets its font before its style sheet, from
        which the table's header takes the new size only afterwards, so a fit made now used the
        previous zoom's header and cut the last row (or left a gap)."""
        super().changeEvent(event)
        if event.type() == event.Type.FontChange and self.table.rowCount():
            QTimer.singleShot(0, self, self._fit_table_height)

    @staticmethod
    def _cell_item(cell: Cell) -> QTableWidgetItem:
        item = QTableWidgetItem(_cell_text(cell))
        item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
        item.setBackground(QBrush(QColor(*heat_rgb(cell.fraction))))
        if cell.source == PREDICTED:
            font = QFont(item.font())
            font.setItalic(True)
            item.setFont(font)
            item.setToolTip("predicted by the simulator: this GPU never ran the config")
        elif cell.source in (FAILED, INFEASIBLE):
            item.setToolTip(f"the config {cell.source} on this GPU")
        return item

    def table_texts(self) -> list[list[str]]:
        """The table as shown (tests)."""
        return [[item.text() if (item := self.table.item(r, c)) is not None else ""
                 for c in range(self.table.columnCount())] for r in range(self.table.rowCount())]


def telling_apart(configs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Slots, in order, that tell every two of ``configs`` apart, chosen greedily: each time the
    slot that separates most of the pairs not yet told apart (the earlier slot on a tie). Counting where the
    configs differ at all is no help when every slot differs somewhere: three configs that
    differed only in their last slot, two of them, kept that slot last."""
    names = list(configs[0]) if configs else []
    pairs = {(i, j) for i in range(len(configs)) for j in range(i + 1, len(configs))}
    chosen: list[str] = []
    while pairs:
        def separates(name: str) -> int:
            return sum(repr(configs[i].get(name)) != repr(configs[j].get(name)) for i, j in pairs)

        best = max((name for name in names if name not in chosen), key=separates, default=None)
        if best is None or separates(best) == 0:
            break
        chosen.append(best)
        pairs = {(i, j) for i, j in pairs if repr(configs[i].get(best)) == repr(configs[j].get(best))}
    return chosen


def _short_devices(names: Sequence[str]) -> list[str]:
    """The devices' names without their leading vendor and "Simulated" words ("Simulated NVIDIA
    A100 SXM4 40GB" is "A100 SXM4 40GB"): the row headers named in full took the table's width from
    its cells. The full names when shortening would make two of them alike (a recorded and a
    simulated H200)."""
    short = []
    for name in names:
        words = name.split()
        while len(words) > 1 and words[0] in ("Simulated", "NVIDIA", "AMD", "GeForce", "Radeon"):
            words = words[1:]
        short.append(" ".join(words))
    return short if len(set(short)) == len(set(names)) else list(names)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
