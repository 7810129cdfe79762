"""The failed-samples log: each failure with status and one-line reason, counts per status, where
failures concentrate by slot value, and the full compiler or runtime log of the selected one."""

from __future__ import annotations

import html
import re
from typing import Any

import numpy as np
from PySide6.QtCore import QEvent, QModelIndex, QObject, QSize, Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QAbstractItemView, QComboBox, QHBoxLayout, QHeaderView, QLabel, QPlainTextEdit, QScrollArea, QSplitter,
    QTableView, QVBoxLayout, QWidget,
)

from workbench.core.domain.measurement import Status
from workbench.gui.analysis import STATUSES, concentrations_from_columns, failure_reasons, status_counts_from_codes
from workbench.gui.model import SessionModel
from workbench.gui.results_table import TrialFilterProxy, TrialTableModel, follow_sort, show_trial_row
from workbench.gui.clipped_cells import elide_cut_cells


#: Distinct failure reasons named per status in the summary (the rest are counted).
SHOWN_REASONS = 3


#: The most characters of a reason the summary shows (the log pane below has the whole message).
REASON_CHARS = 240
#: what the log pane asks for while the table lists trials to select
SELECT_A_FAILURE = "select a trial to read its full compiler or runtime log"


#: The share of the pane's height the lines on where failures concentrate may take (they scroll
#: beyond it), and the lines they keep however short the pane.
NOTES_SHARE = 0.3
NOTES_LINES = 2


class CappedNotes(QScrollArea):
    """A wrapped label that takes the height its lines need, up to a cap (``setMaximumHeight``),
    and scrolls beyond it: in a 768 px window four notes on where failures concentrate filled the
    pane and left the table of 161 failures one row."""

    def __init__(self, label: QLabel) -> None:
        super().__init__()
        self.label = label
        self.setWidget(label)
        self.setWidgetResizable(True)
        self.setFrameShape(QScrollArea.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # no Tab stop: the text takes no keys

    def _needed(self) -> int:
        width = max(self.viewport().width(), 1)
        height = self.label.heightForWidth(width) if self.label.hasHeightForWidth() else -1
        return height if height >= 0 else self.label.sizeHint().height()

    def sizeHint(self) -> QSize:  # Qt override: the label's height at this width (a scroll area's is a fixed guess)
        return QSize(super().sizeHint().width(), self._needed())

    def minimumSizeHint(self) -> QSize:  # Qt override
        return QSize(0, min(self._needed(), NOTES_LINES * self.label.fontMetrics().lineSpacing()))

    def resizeEvent(self, event: Any) -> None:  # Qt override: a new width wraps the lines anew
        super().resizeEvent(event)
        self.updateGeometry()


def _wrappable(reason: str) -> str:
    """``reason`` as the summary shows it: at most :data:`REASON_CHARS` characters, with a place to
    break every 40 characters of an unbroken word (a path, a hex dump): a 6,000-character word in
    an exception's message made the window 44,398 px wide, since a label wraps only at spaces."""
    if len(reason) > REASON_CHARS:
        reason = reason[:REASON_CHARS - 1] + "\u2026"
    return re.sub(r"\S{40}", lambda match: match.group(0) + "\u200b", reason)


#: The message column's width where the table has room, the least it keeps, and the room it leaves
#: for a first slot column beside it (see :meth:`FailureLog._fit_message`).
MESSAGE_WIDTH = 420
MESSAGE_LEAST = 160
SLOT_IN_SIGHT = 80


class FailureLog(QWidget):
    """Failures only: a filtered view over the shared trial table model, plus counts and analysis."""

    VISIBLE = ("index", "status", "message")

    def __init__(self, model: SessionModel, table_model: TrialTableModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self.table_model = table_model
        self.dirty = True
        self.proxy = TrialFilterProxy(table_model)
        self.proxy.set_status_filter("failed")
        self.view = QTableView()
        self.view.setAccessibleName("Failed trials")
        elide_cut_cells(self.view)
        self.view.setTabKeyNavigation(False)  # arrows move within it; Tab leaves it, as from the results
        self.view.setModel(self.proxy)
        follow_sort(self.view, self.proxy)
        self.view.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.view.setSortingEnabled(True)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.verticalHeader().setVisible(False)
        self.view.verticalHeader().setDefaultSectionSize(22)
        self.view.horizontalHeader().setStretchLastSection(True)
        self.status_combo = QComboBox()
        self.status_combo.setAccessibleName("Show failures")
        self.status_combo.addItems(["failed"] + [s.value for s in Status if s is not Status.OK])
        self.status_combo.currentTextChanged.connect(self.proxy.set_status_filter)
        self.status_combo.currentTextChanged.connect(self._say_what_to_select)
        self.counts = QLabel("no failures")
        self.counts.setWordWrap(True)
        self.counts.setTextFormat(Qt.TextFormat.RichText)
        self.concentration = QLabel("")
        self.concentration.setWordWrap(True)
        self.concentration.setTextFormat(Qt.TextFormat.RichText)
        self.log = QPlainTextEdit()
        self.log.setAccessibleName("Log of the selected failure")
        self.log.setReadOnly(True)
        self.log.setPlaceholderText(SELECT_A_FAILURE)
        self.log.setFont(QFont("monospace", 9))
        bar = QHBoxLayout()
        bar.addWidget(QLabel("status"))
        bar.addWidget(self.status_combo)
        bar.addWidget(self.counts, 1)
        # the counts and where failures concentrate span the pane; the table and the selected
        # failure's log share what is left (see resizeEvent)
        self.splitter = splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.view)
        splitter.addWidget(self.log)
        splitter.setSizes([300, 140])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        self.notes = CappedNotes(self.concentration)
        self.notes.setVisible(False)
        layout.addWidget(self.notes)
        layout.addWidget(splitter, 1)
        self.view.selectionModel().currentRowChanged.connect(self._on_row_changed)
        model.selection_changed.connect(self._on_selection_changed)
        model.trials_added.connect(self._on_trials_changed)
        model.session_changed.connect(self._on_session_changed)
        table_model.modelReset.connect(self._hide_columns)
        self.view.viewport().installEventFilter(self)
        table_model.columnsInserted.connect(self._hide_inserted)
        self._hide_columns()
        self._on_selection_changed(model.selected)  # (built when its tab first shows, after a choice)

    def resizeEvent(self, event: Any) -> None:  # Qt override
        """The log beside the table when the pane is wide and short (the bottom tabs of a 1440 x
        900 window in presentation mode), under it otherwise: stacked there, the counts, the
        concentration lines and the log left the table one row of seventeen failures."""
        super().resizeEvent(event)
        self.notes.setMaximumHeight(max(int(NOTES_SHARE * self.height()),
                                        NOTES_LINES * self.concentration.fontMetrics().lineSpacing()))
        # apart around the ratio 1.6, so a pane resized about it does not flip back and forth (each
        # flip sets the splitter's shares anew, over what the person dragged)
        beside = self.splitter.orientation() == Qt.Orientation.Horizontal
        wide = self.width() >= (1.5 if beside else 1.7) * self.height()
        orientation = Qt.Orientation.Horizontal if wide else Qt.Orientation.Vertical
        if self.splitter.orientation() != orientation:
            self.splitter.setOrientation(orientation)
            extent = self.width() if wide else self.splitter.height()
            self.splitter.setSizes([extent * 3 // 5, extent * 2 // 5] if wide else [extent * 2 // 3, extent // 3])

    def _hide_inserted(self, _parent: object, first: int, last: int) -> None:
        """A metric first reported mid-run arrives as an inserted column of the shared table
        model: a failure has no metrics, so it stays hidden here like the others."""
        for column in range(first, last + 1):
            self.view.setColumnHidden(column, not self._shown_here(self.table_model.column_key(column)))

    def _shown_here(self, key: str) -> bool:
        return key in self.VISIBLE or key.startswith("slot:")

    def _hide_columns(self) -> None:
        for column in range(self.table_model.columnCount()):
            self.view.setColumnHidden(column, not self._shown_here(self.table_model.column_key(column)))
        header = self.view.horizontalHeader()
        header.moveSection(header.visualIndex(self.table_model.column_of("message")),
                           header.visualIndex(self.table_model.column_of("status")) + 1)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.resizeSection(self.table_model.column_of("message"), MESSAGE_WIDTH)
        header.setStretchLastSection(False)
        self._fit_message()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # Qt override
        if watched is self.view.viewport() and event.type() == QEvent.Type.Resize:
            self._fit_message()
        return super().eventFilter(watched, event)

    def _fit_message(self) -> None:
        """The message column at most as wide as the table's view leaves it beside the columns
        before it, and a first slot column in sight: at 420 px in the 372 px of a 1440 x 900
        window's tab, its header was out of sight, the reasons cut at about 20 characters and the
        slots, where failures concentrate, off to the right."""
        header = self.view.horizontalHeader()
        message = self.table_model.column_of("message")
        before = sum(header.sectionSize(c) for c in range(header.count())
                     if not header.isSectionHidden(c) and header.visualIndex(c) < header.visualIndex(message))
        room = self.view.viewport().width() - before - SLOT_IN_SIGHT
        width = max(MESSAGE_LEAST, min(MESSAGE_WIDTH, room))
        if header.sectionSize(message) != width:  # (a width dragged by hand holds until the pane resizes)
            header.resizeSection(message, width)

    def _on_session_changed(self) -> None:
        self.dirty = True
        self.log.clear()

    def _on_trials_changed(self, *_: object) -> None:
        self.dirty = True

    def refresh_if_dirty(self) -> None:
        if self.dirty:
            self.refresh()

    def refresh(self) -> None:
        """Counts per status and the concentration analysis (walks the trials: timer-driven)."""
        self.dirty = False
        trials = self.model.trials
        codes = self.model.status_codes().astype(np.int64)
        counts = status_counts_from_codes(codes)
        # aborted candidates were stopped on purpose (hopeless under the latency limit), not failures:
        # the run's progress and the command line count them apart
        failures = sum(c for s, c in counts.items() if s.is_failure)
        if not trials:
            self.counts.setText("no trials")
        else:
            parts = [f"<b>{failures}</b> failed of {len(trials)}"] + [
                f"{html.escape(s.value)}: <b>{c}</b>" for s, c in counts.items() if s is not Status.OK]
            self.counts.setText(" &nbsp; ".join(parts))
        self._say_what_to_select()
        found = concentrations_from_columns(codes, self.model.slot_code_columns())[:4]
        lines = [f"&#9888; {html.escape(c.text())}" for c in found]
        # a status with no concentration shown (too few failures to name a slot value, or failures
        # spread evenly over the space): say what the failures themselves report
        concentrated = {c.status for c in found}
        for status, count in counts.items():
            if status is Status.OK or status in concentrated:
                continue
            if status is Status.ABORTED:  # each message names its own bound: grouped, they told nothing
                lines.append(f"aborted ({count}): stopped above the latency limit in force, each with the "
                             "latency it had reached; Re-measure aborted measures them once the limit allows")
                continue
            # only this status's trials, picked from the codes: a walk over every trial per status
            # took two thirds of a run tick at 20,000 trials
            of_status = [trials[i] for i in np.flatnonzero(codes == STATUSES.index(status))]
            reasons = failure_reasons(of_status, status, limit=None)
            shown = "; ".join(f"{html.escape(_wrappable(reason))}" + (f" (x{n})" if n > 1 else "")
                              for reason, n in reasons[:SHOWN_REASONS])
            rest = reasons[SHOWN_REASONS:]
            if rest:  # said, not dropped: a reason left out reads as no such failure
                more = sum(n for _reason, n in rest)
                shown += (f"; and {len(rest)} other reason{'s' if len(rest) > 1 else ''} "
                          f"({more} trial{'s' if more > 1 else ''}: filter the table by status)")
            lines.append(f"{html.escape(status.value)} ({count}): {shown}")
        self.concentration.setText("<br>".join(lines))
        self.notes.setVisible(bool(lines))
        self.notes.updateGeometry()

    def _say_what_to_select(self, *_: object) -> None:
        """The log pane's prompt: what the table lists to select, or, with nothing listed, why
        (it asked to "select a failure" from an empty table)."""
        n, listed = len(self.model.trials), self.proxy.rowCount()
        status = self.status_combo.currentText()
        aborted = int(self.model.aborted_mask().sum()) if n else 0
        # aborted trials are no failures, so the default filter lists none: said, with where they are
        where_aborted = (f" ({aborted} stopped early above the latency limit: the status filter's 'aborted' "
                         "lists them)" if aborted and status == "failed" else "")
        self.log.setPlaceholderText(
            SELECT_A_FAILURE if listed else "no trials yet" if not n else
            f"no failed trial among {n}{where_aborted}" if status == "failed" else f"no {status} trial among {n}")

    def _on_selection_changed(self, row: int | None) -> None:
        """A trial chosen elsewhere (a failed point clicked on a chart) is chosen here too, with its
        log; a trial this table does not list leaves no other row marked, nor its log shown."""
        if row is None:
            self.view.selectionModel().clear()
        if row is None or not show_trial_row(self.view, self.proxy, row):
            self.log.clear()

    def _on_row_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if not current.isValid():
            return
        row = self.proxy.mapToSource(current).row()
        trial = self.model.trials[row]
        m = trial.measurement
        header = f"trial {trial.index} [{trial.config.id}] {m.status.value}: {m.message}\n"
        header += ", ".join(f"{k}={v}" for k, v in trial.config.items()) + "\n\n"
        self.log.setPlainText(header + (m.log or m.message or "(no log)"))
        self.model.select(row)
