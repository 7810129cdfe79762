"""Every trial in a sortable, filterable table (Qt model/view over the session model's arrays).

The table model never copies trials: ``data`` reads the session model's trials and ranking on
demand, so 20,000 rows cost nothing until they are scrolled into view. New trials arrive as row
insertions; a re-rank only signals that the derived columns (feasible, score) changed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from PySide6.QtCore import (
    QAbstractProxyModel, QAbstractTableModel, QEvent, QModelIndex, QPersistentModelIndex, Qt, QTimer,
)
from PySide6.QtGui import QBrush, QColor, QFontMetrics
from PySide6.QtWidgets import (
    QAbstractItemView, QComboBox, QHBoxLayout, QHeaderView, QLabel, QLineEdit, QTableView, QVBoxLayout, QWidget,
)

from workbench.core.errors import WorkbenchError
from workbench.core.domain.measurement import LATENCY, Status, Trial
from workbench.core.domain.search_objective import LATENCY_BOUND
from workbench.core.domain.metrics import METRICS, known_direction, metric_description
from workbench.core.domain.objective import violated_bounds, violations
from workbench.gui.column_choice import ColumnChoice
from workbench.gui.model import STATUS_CODES, STATUSES, SessionModel
from workbench.gui.settings_store import SettingsStore
from workbench.core.domain.figures import fmt
from workbench.gui.text import MUTED_TEXT, WARNING_TEXT, metric_label, plain_tip, score_text
from workbench.gui.elided_label import ElidedLabel
from workbench.gui.clipped_cells import elide_cut_cells
from workbench.gui.timers import single_shot

SORT_ROLE = Qt.ItemDataRole.UserRole + 1
#: Metric columns after latency / score / feasibility / noise, in this order (those some trial reports).
TABLE_METRICS = ("kt_time_ms", "memory_mb", "onchip_kb_per_sm", "throughput_gbs", "gflops", "quality", "occupancy", "registers")
#: Rates a kernel may not have (a histogram does no floating-point work): a column of zeros says nothing.
RATE_METRICS = frozenset({"throughput_gbs", "gflops"})
#: Metrics a built-in column shows: latency and :data:`TABLE_METRICS` by name, the latency
#: percentiles as the noise column. Every other metric a trial reports gets a column of its own.
BUILT_IN_METRICS = frozenset({"latency_ms", "latency_p20_ms", "latency_p80_ms", *TABLE_METRICS})


def reported_metrics(trials: Iterable[Trial], known: Iterable[str] = ()) -> list[str]:
    """The metrics ``trials`` report with a finite value that no built-in column shows and that are
    not in ``known``, in the order they first appear (a trial's own in name order): a python
    benchmark's own figures (``merit``), a recording's user metrics, the simulator's model terms."""
    seen = set(known) | BUILT_IN_METRICS
    found: list[str] = []
    for trial in trials:  # a set lookup per reported name: a 20,000-trial session opens without delay
        new = [name for name in trial.measurement.metrics if name not in seen]
        for name in sorted(new):
            if math.isfinite(trial.metric(name)):
                seen.add(name)
                found.append(name)
    return found


def _distinct(title: str, taken: set[str], kind: str) -> str:
    """``title``, or ``title (kind)`` when another column has it, taken for this column either way:
    a benchmark's own metric named ``score`` or ``status``, or a slot named ``id`` or ``quality``,
    made two columns of one heading, one of them the workbench's ("feasible: yes" beside
    "feasible: 0")."""
    shown = f"{title} ({kind})" if title in taken else title
    taken.add(shown)
    return shown


def metric_heading(name: str) -> str:
    """A metric's column title: its label, or its name with the unit the registry gives it."""
    label = metric_label(name)
    info = METRICS.get(name)
    if label == name and info is not None and info.unit and info.unit.lower() not in name.lower():
        return f"{name} ({info.unit})"
    return label


#: The widest a metric column starts, in characters of its header (longer names are elided).
MAX_HEADER_CHARS = 24
#: Widths set at once beyond which the last column's stretch is off while they are set (see
#: ``ResultsTable._fit_columns``).
MANY_WIDTHS = 32


def metric_tip(name: str, directions: Mapping[str, int]) -> str:
    """What a metric column holds and which way is better (the user's direction, the registry's,
    or a naming convention's), or that no direction is known yet."""
    description = metric_description(name)
    what = f"{name}: {description}" if description else f"{name}: reported by the trials"
    direction = known_direction(name, directions)
    if direction is None:
        return f"{what}; direction unknown (choose one under Score weights to weigh it)"
    return f"{what}; {'higher' if direction > 0 else 'lower'} is better"


def _any_says_something(name: str, values: np.ndarray) -> bool:
    """Whether any of ``values`` (trials' values of metric ``name``) makes its column worth showing:
    a number, and for a rate (:data:`RATE_METRICS`) one other than 0."""
    finite = values[np.isfinite(values)]
    return bool(finite.size) and (name not in RATE_METRICS or bool(np.any(finite != 0.0)))


_FAIL_COLOUR = QBrush(QColor(WARNING_TEXT))
_INFEASIBLE_COLOUR = QBrush(QColor(MUTED_TEXT))

Index = QModelIndex | QPersistentModelIndex

_HEADER_TIPS = {
    "feasible": "yes, or no with the metrics whose constraints the trial violates (its values in the cell's tool tip)",
    "spread": "run-to-run noise: half the p20..p80 latency range, as a percent of the median",
    "score": "the objective's score (1 = best on every weighted metric)",
    "metric:kt_time_ms": "the time Kernel Tuner recorded and optimised (by default the mean of its repetitions); "
                         "latency is their median",
}


def feasibility_text(model: SessionModel, row: int) -> str:
    """``yes``; ``no (failed)`` / ``no (aborted)`` for a trial without a measurement to judge (the
    status column beside it says which failure); or each violated constraint with the trial's
    value (``latency_ms 0.41 > 0.3``), so an infeasible row says why without a trip to the card."""
    trial = model.trials[row]
    if not trial.ok:
        return "no (aborted)" if trial.status is Status.ABORTED else "no (failed)"
    ranking = model.ranking
    if ranking is None or ranking.feasible[row]:
        return "yes"
    broken = violations(trial, model.constraints)
    if not broken and ranking.unscored[row]:  # within the constraints, but nothing to score it on
        return "no score: reports no weighted metric"
    return "; ".join(broken) or "no"


def feasibility_cell(model: SessionModel, row: int) -> str:
    """The feasible column's cell: as :func:`feasibility_text`, but a violation as ``no:`` and the
    metrics by the names the column headers give them (``no: latency, memory``). The figures stood
    in the cell and were cut to ``latency_ms …`` even at 1920 px in presentation mode; the values
    are in the metric columns beside it, and the whole verdict with them in the tool tip."""
    text = feasibility_text(model, row)
    if text == "yes" or not model.trials[row].ok:  # a failure or an aborted candidate: said as such
        return text
    violated = violated_bounds(model.trials[row], model.constraints)
    if not violated:
        return text
    # the header's words without its unit ("latency (ms)", "registers / thread": latency, registers)
    names = (metric_label(bound.metric).split(" (")[0].split(" / ")[0] for bound, _ in violated)
    return "no: " + ", ".join(dict.fromkeys(names))


def latency_spread_percent(trial: Trial) -> float:
    """Half the p20..p80 latency range as a percent of the median (NaN when not recorded)."""
    low, high, median = trial.metric("latency_p20_ms"), trial.metric("latency_p80_ms"), trial.metric("latency_ms")
    if not (math.isfinite(low) and math.isfinite(high) and math.isfinite(median)) or median <= 0:
        return math.nan
    return 50.0 * (high - low) / median


#: A compiler's message that starts where it found the error: ``saxpy.cu(6): error: ...``.
_LOCATED = re.compile(r"^(?P<file>[^\s():]+)\((?P<line>\d+)\): (?P<rest>.+)$", re.S)


def reason_first(message: str) -> str:
    """A failure's message as its column shows it: a compiler's location moved after the reason
    (``error: ... (saxpy.cu line 6)``), since the column, a few words wide, showed every compile
    error of a run as the same ``saxpy.cu(6): ...``. The tool tip and the log keep it as written."""
    found = _LOCATED.match(message)
    if found is None:
        return message
    return f"{found['rest']} ({found['file']} line {found['line']})"


class TrialTableModel(QAbstractTableModel):
    """Columns: #, latency, score, feasibility (or the violated constraint), status, then each slot,
    the latency spread, the other metrics, message and the config id last.

    How a config did comes first, what it is after, as in Optuna's dashboard, Kernel Tuner's
    output and W&B sweeps: the outcome columns are few and narrow and stay on screen at 1440 px
    whatever the kernel, while the slots are as many as the kernel has (seven for a convolution)
    and, placed first, pushed latency, score and status off to the right. Status stands beside
    feasibility because together they say why a row is grey or orange. The noise and the other
    metrics explain the outcome in more detail and follow the slots; message and id are long and
    read last. (The person may hide and reorder them: :class:`~workbench.gui.column_choice.ColumnChoice`.)

    The other metrics are the usual ones (:data:`TABLE_METRICS`) and then every metric the trials
    report besides (:func:`reported_metrics`). Those arrive with the trials: a metric first
    reported mid-run is inserted after the others, before the message (``columnsInserted``), never
    by a reset, so the columns already there keep their order, widths, sort and the selected row."""

    def __init__(self, model: SessionModel) -> None:
        super().__init__()
        self.model = model
        self._columns: list[tuple[str, str]] = []
        self._rows = 0
        self.own_metrics: list[str] = []  # reported metrics beyond the built-in columns, in column order
        #: metric column -> (the model's data version, whether all its values are whole numbers)
        self._whole: dict[str, tuple[int, bool]] = {}
        model.session_changed.connect(self._on_session_changed)
        model.trials_added.connect(self._on_trials_added)
        model.ranking_changed.connect(self._on_ranking_changed)
        self._on_session_changed()

    def _on_session_changed(self) -> None:
        self.beginResetModel()
        self._rows = self.model.n
        fixed = [("index", "#"), ("metric:latency_ms", metric_label("latency_ms")), ("score", "score"),
                 ("feasible", "feasible"), ("status", "status")]
        middle = [("spread", "noise ±%")] + [("metric:" + m, metric_label(m)) for m in TABLE_METRICS]
        ends = [("message", "message"), ("id", "id")]
        taken = {title for _, title in fixed + middle + ends}  # the workbench's own columns keep their titles
        slots = [("slot:" + s, _distinct(s, taken, "slot")) for s in self.model.slot_names]
        self.own_metrics = reported_metrics(self.model.trials)
        own = [("metric:" + m, _distinct(metric_heading(m), taken, "metric")) for m in self.own_metrics]
        self._columns = fixed + slots + middle + own + ends
        self.endResetModel()

    def _on_trials_added(self, start: int, stop: int) -> None:
        fresh = reported_metrics(self.model.trials[start:stop], self.own_metrics)
        if fresh:
            at = self.column_of("message")
            self.beginInsertColumns(QModelIndex(), at, at + len(fresh) - 1)
            taken = {title for _, title in self._columns}
            self._columns[at:at] = [("metric:" + m, _distinct(metric_heading(m), taken, "metric")) for m in fresh]
            self.own_metrics += fresh
            self.endInsertColumns()
        if stop <= self._rows:
            return
        self.beginInsertRows(QModelIndex(), self._rows, stop - 1)
        self._rows = stop
        self.endInsertRows()

    def _on_ranking_changed(self) -> None:
        if self._rows:
            first, last = sorted((self.column_of("score"), self.column_of("feasible")))
            self.dataChanged.emit(self.index(0, first), self.index(self._rows - 1, last))

    def rowCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else self._rows

    def columnCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._columns)

    def column_key(self, column: int) -> str:
        return self._columns[column][0]

    def column_keys(self) -> list[str]:
        return [key for key, _ in self._columns]

    def column_of(self, key: str) -> int:
        return next(i for i, (k, _) in enumerate(self._columns) if k == key)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self._columns[section][1]
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.ToolTipRole:
            key = self._columns[section][0]
            if key in _HEADER_TIPS:
                return _HEADER_TIPS[key]
            if key.startswith("metric:"):  # (each says what it holds: occupancy, registers / thread...)
                return plain_tip(metric_tip(key[7:], self.model.weights.directions))
            if key.startswith("slot:"):
                return plain_tip(self._slot_tip(key[5:]))
        return None

    def _slot_tip(self, name: str) -> str:
        """A slot column's tool tip: its name, what it sets (the template's words) and its concern."""
        space = self.model.session.space if self.model.session is not None else None
        slot = next((s for s in space.slots if s.name == name), None) if space is not None else None
        if slot is None:
            return f"{name}: a tunable slot"
        return f"{name}: {slot.doc or 'a tunable slot'} ({slot.group}; {len(slot.values):,} values)"

    def raw(self, row: int, key: str) -> Any:
        """The cell's value as data (numbers stay numbers, for sorting and filtering)."""
        trial = self.model.trials[row]
        ranking = self.model.ranking
        if key == "index":
            return trial.index
        if key == "id":
            return trial.config.id
        if key == "status":
            return trial.status.value
        if key == "feasible":
            return feasibility_text(self.model, row)
        if key == "spread":
            return latency_spread_percent(trial)
        if key == "score":
            return float(ranking.score[row]) if ranking is not None else math.nan
        if key == "message":
            return trial.measurement.message
        if key.startswith("metric:"):
            return trial.metric(key[7:])
        if key.startswith("slot:"):
            return trial.config.get(key[5:])
        return None

    def sort_key(self, row: int, key: str) -> Any:
        """What row ``row`` sorts by in column ``key``: its value, an aborted candidate's latency
        bound (shown as "> bound": sorted there), NaN below every number, a flag as 0 or 1."""
        value = feasibility_cell(self.model, row) if key == "feasible" else self.raw(row, key)  # sorted as shown
        bound = self._latency_bound(row, key, value)
        if bound is not None:
            return bound
        if isinstance(value, float) and math.isnan(value):
            return -math.inf
        return value if not isinstance(value, bool) else int(value)

    def sort_keys(self, rows: Sequence[int], key: str) -> list[tuple[int, Any]]:
        """Rows ``rows``' comparable :meth:`sort_key` values in column ``key``; the score read
        from the ranking's array at once, since a table sorted by score is sorted again on every
        re-rank (a slider move) and 18,000 reads through :meth:`raw` took 40 ms of it."""
        ranking = self.model.ranking
        if key == "score" and ranking is not None:
            scores = np.asarray(ranking.score, dtype=float)[np.asarray(rows, dtype=np.intp)]
            return [(0, value) for value in np.where(np.isnan(scores), -math.inf, scores).tolist()]
        if key == "feasible" and ranking is not None:  # the verdict worded for the infeasible rows only
            feasible, yes = np.asarray(ranking.feasible, dtype=bool), _comparable("yes")
            return [yes if feasible[row] else _comparable(self.sort_key(row, key)) for row in rows]
        return [_comparable(self.sort_key(row, key)) for row in rows]

    def _whole_numbers(self, metric: str) -> bool:
        """Whether every value of ``metric`` (a metric, or ``slot:NAME``) is a whole number
        (registers, bytes, block sizes): such a column is written in integers, any other with the
        same significant digits in each cell. Asked per cell, so kept until the trials change."""
        version = self.model.data_version
        known = self._whole.get(metric)
        if known is None or known[0] != version:
            values = self.model.metric(metric)
            finite = values[np.isfinite(values)]
            known = self._whole[metric] = (version, bool(np.all(finite == np.round(finite))))
        return known[1]

    def _latency_bound(self, row: int, key: str, value: Any) -> float | None:
        """For the latency cell of an aborted candidate (no latency), the latency it was seen to
        exceed: shown and sorted as a bound, not as nothing."""
        if key != f"metric:{LATENCY}" or not (isinstance(value, float) and math.isnan(value)):
            return None
        bound = self.model.trials[row].metric(LATENCY_BOUND)
        return bound if math.isfinite(bound) else None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row, key = index.row(), self._columns[index.column()][0]
        if role == Qt.ItemDataRole.DisplayRole:
            value = self.raw(row, key)
            if key == "score":
                return score_text(value)
            if key == "spread":
                return fmt(value, 3, column=True)
            bound = self._latency_bound(row, key, value)
            if bound is not None:
                return f"> {fmt(bound, column=True)}"
            if key == "feasible":
                return feasibility_cell(self.model, row)
            if key == "message" and isinstance(value, str):
                return reason_first(value)
            if isinstance(value, str):
                return value
            if isinstance(value, bool) and key.startswith("slot:"):
                return str(value)  # True / False, as the card, the charts and the search space write a slot's value
            if key.startswith(("metric:", "slot:")):  # (the model's column of a slot is "slot:NAME")
                return fmt(value, column=not self._whole_numbers(key.removeprefix("metric:")))
            return fmt(value)
        if role == Qt.ItemDataRole.ToolTipRole and key in ("feasible", "message"):
            text = self.raw(row, key)  # whole, as written: the column is narrower than a long one
            return plain_tip(text) if text and text not in ("yes", "ok") else None
        if role == SORT_ROLE:
            return self.sort_key(row, key)
        if role == Qt.ItemDataRole.ForegroundRole:
            if not self.model.trials[row].ok:
                return _FAIL_COLOUR
            ranking = self.model.ranking
            if ranking is not None and not ranking.feasible[row]:
                return _INFEASIBLE_COLOUR
        if role == Qt.ItemDataRole.TextAlignmentRole and key not in ("id", "status", "message", "feasible"):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None


def show_trial_row(view: QTableView, proxy: "TrialFilterProxy", row: int) -> bool:
    """Make the trial at source ``row`` ``view``'s current row, scrolled to, as a choice made in
    another view; False when the filters hide it, and then no other row stays marked as if chosen."""
    index = proxy.mapFromSource(proxy.sourceModel().index(row, 0))
    if not index.isValid():
        view.selectionModel().clear()
        return False
    if view.currentIndex().row() != index.row():
        view.setCurrentIndex(index)
        view.scrollTo(index)
    return True


def follow_sort(view: QTableView, proxy: "TrialFilterProxy") -> None:
    """Keep ``view``'s sort arrow on the column ``proxy`` sorts by: after another session's columns
    the proxy keeps its sort by column key (on that column's new place, or none when the session
    has no such column), where the header kept the arrow on the old column number."""

    def follow() -> None:
        header = view.horizontalHeader()
        column, order = proxy.sortColumn(), proxy.sortOrder()
        if header.sortIndicatorSection() != column or (column >= 0 and header.sortIndicatorOrder() != order):
            blocked = header.blockSignals(True)  # the rows are in that order already: no sort again
            try:
                header.setSortIndicator(column, order)
            finally:
                header.blockSignals(blocked)

    proxy.modelReset.connect(follow)


def _same_number(value: Any, text: str) -> bool:
    """Whether ``text`` is the float ``value`` (a slot's) written another way: as the column writes
    it, to four significant digits (0.001000 for 0.001, 0.1235 for 0.12345), or exactly. An integer
    slot's value is its digits alone: 16.0 is none of them. A switch is also ``true``/``false``
    and ``1``/``0``, as ``show --json``, the exports and a header's ``#define`` write it."""
    if isinstance(value, bool):
        return text.lower() in (("true", "1") if value else ("false", "0"))
    if not isinstance(value, float):
        return False
    if text == fmt(value, column=True):
        return True
    try:
        return float(text) == float(value)
    except ValueError:
        return False


def _comparable(value: Any) -> tuple[int, Any]:
    """A sort key every cell's value compares with: numbers by value, then text, then nothing
    (a slot a recorded trial lacks); one column holds one kind but for those."""
    if isinstance(value, (int, float)):
        return (0, value)
    if isinstance(value, str):
        return (1, value)
    return (2, str(value)) if value is not None else (3, "")


class TrialFilterProxy(QAbstractProxyModel):
    """The trials a table shows, filtered by status (one or ``feasible``/``failed``) and by
    ``slot=value`` terms, in the order the person sorted them by.

    Its own proxy rather than Qt's ``QSortFilterProxyModel``, which read two sort keys through
    Python ``data()`` calls for every comparison (575,000 calls and 3.5 s frozen to sort 18,000
    rows; about 1.5 s still with its comparisons precomputed, for the index checks around each
    one): here a sort reads each row's key once and orders the rows in one ``sorted`` call, and a
    filter change tests each row once. Rows are sorted when the person asks (a header click) and
    again when a re-rank changes what they are sorted or filtered by (the score or feasibility
    column, the ``feasible`` filter): at once when the objective changes (:meth:`follow_objective`,
    a slider), and at most once every :data:`RESORT_DELAY_MS` while a run's trials re-rank the
    session (sorting 20,000 rows on every 10 Hz tick kept the window busy and reshuffled the rows
    under the person). A re-rank leaves a table sorted by anything else alone. A trial that
    arrives in a sorted table takes its place by its key (a binary search among the keys of the
    last sort), so the best new trial of a run sorted by latency shows at the top; sorted by
    score, where a new best changes the other rows' scores, that place is approximate until the
    re-sort due within the delay. A sort keeps the selection; a filter change keeps it on the
    rows still shown."""

    #: The longest a table sorted by score stays in the order of the previous ranking while a run
    #: goes (its new trials take their places at once; a new best changes the others' scores).
    RESORT_DELAY_MS = 1000

    def __init__(self, source: TrialTableModel) -> None:
        super().__init__()
        self.status_filter = "all"
        self.slot_filter: dict[str, str] = {}
        self._rows: list[int] = []  # the source row of each row shown, in order
        self._keys: list[Any] = []  # while sorted: each shown row's key, in the same order
        self._place_of: dict[int, int] | None = {}  # and back: each shown source row's place (None: to rebuild)
        # the column (by key: a column inserted before it moves it) and order last asked for
        self._sort: tuple[str, Qt.SortOrder] | None = None
        self._resort = single_shot(self, self.RESORT_DELAY_MS, self.refilter)
        self._laid_out_by: Any = None  # the ranking the rows were last ordered and filtered by
        self.setSourceModel(source)
        source.modelAboutToBeReset.connect(self.beginResetModel)
        source.modelReset.connect(self._after_source_reset)
        source.rowsInserted.connect(self._on_rows_inserted)
        source.columnsAboutToBeInserted.connect(lambda _p, first, last: self.beginInsertColumns(QModelIndex(), first, last))
        source.columnsInserted.connect(lambda *_: self.endInsertColumns())
        source.dataChanged.connect(self._on_data_changed)
        self._show(self._accepted(range(source.rowCount())))

    def _source(self) -> TrialTableModel:
        return self.sourceModel()  # type: ignore[return-value]

    def _place(self) -> dict[int, int]:
        if self._place_of is None:  # after rows were inserted in the middle: rebuilt once, when asked
            self._place_of = {row: at for at, row in enumerate(self._rows)}
        return self._place_of

    # ------------------------------------------------------------------ the model a view reads
    def rowCount(self, parent: Index = QModelIndex()) -> int:  # Qt override
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # Qt override
        return 0 if parent.isValid() else self._source().columnCount()

    def index(self, row: int, column: int, parent: Index = QModelIndex()) -> QModelIndex:  # Qt override
        if parent.isValid() or not (0 <= row < len(self._rows) and 0 <= column < self.columnCount()):
            return QModelIndex()
        return self.createIndex(row, column)

    def parent(self, index: Index = QModelIndex()) -> QModelIndex:  # type: ignore[override]  # Qt override: a table
        return QModelIndex()

    def mapToSource(self, index: Index) -> QModelIndex:  # Qt override
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return QModelIndex()
        return self._source().index(self._rows[index.row()], index.column())

    def mapFromSource(self, index: Index) -> QModelIndex:  # Qt override
        at = self._place().get(index.row()) if index.isValid() else None
        return QModelIndex() if at is None else self.createIndex(at, index.column())

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal:
            return self._source().headerData(section, orientation, role)
        return section + 1 if role == Qt.ItemDataRole.DisplayRole else None

    # ------------------------------------------------------------------ order and filter
    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:  # Qt override
        """Rows by ``column``'s :meth:`TrialTableModel.sort_key` (ties and a column of -1: in
        evaluation order), keeping the selection on its trial."""
        self._sort = (self._source().column_key(column), order) if 0 <= column < self.columnCount() else None
        self._relayout(list(self._rows))

    def sortColumn(self) -> int:  # as QSortFilterProxyModel's: the column sorted by, -1 for none
        return -1 if self._sort is None else self._source().column_of(self._sort[0])

    def sortOrder(self) -> Qt.SortOrder:
        return Qt.SortOrder.AscendingOrder if self._sort is None else self._sort[1]

    def refilter(self, change: Any = None) -> None:
        """Apply a change of the filter's inputs (``change()`` makes it), keeping the order."""
        self._resort.stop()  # this is the pending re-sort too
        if change is not None:
            change()
        self._relayout(self._accepted(range(self._source().rowCount())))

    def _relayout(self, rows: list[int]) -> None:
        """Show ``rows`` (source rows) in the order asked for: one layout change, the persistent
        indexes (a view's selection and current cell) following their rows or dropped with them."""
        self.layoutAboutToBeChanged.emit()
        kept = self.persistentIndexList()
        sources = [self.mapToSource(index) for index in kept]
        self._show(rows)
        self.changePersistentIndexList(kept, [self.mapFromSource(index) for index in sources])
        self.layoutChanged.emit()

    def _show(self, rows: list[int]) -> None:
        """Show source ``rows``: in evaluation order, or sorted (ties in evaluation order)."""
        self._laid_out_by = self._source().model.ranking
        rows = sorted(rows)
        if self._sort is None:
            self._rows, self._keys = rows, []
        else:
            key, order = self._sort
            source = self._source()
            keys = dict(zip(rows, map(self._blank_last, source.sort_keys(rows, key))))
            self._rows = sorted(rows, key=keys.__getitem__, reverse=order == Qt.SortOrder.DescendingOrder)
            self._keys = [keys[row] for row in self._rows]
        self._place_of = None

    def _blank_last(self, key: tuple[int, Any]) -> tuple[int, Any]:
        """``key`` with a cell that holds no figure (a failed trial's latency, a metric it did not
        report, a slot a recorded trial lacks) after every other in either direction, as a
        spreadsheet sorts blanks: ascending, the 473 failures of a recording came before its
        fastest config."""
        if key == (0, -math.inf) or key[0] == 3:
            assert self._sort is not None
            return (-9, "") if self._sort[1] == Qt.SortOrder.DescendingOrder else (9, "")
        return key

    def _sorted_place(self, key: Any) -> int:
        """Where a row of ``key`` goes among the sorted rows: after those of an equal key, which
        were evaluated before it."""
        assert self._sort is not None
        descending = self._sort[1] == Qt.SortOrder.DescendingOrder
        low, high = 0, len(self._keys)
        while low < high:
            middle = (low + high) // 2
            if (self._keys[middle] >= key) if descending else (self._keys[middle] <= key):
                low = middle + 1
            else:
                high = middle
        return low

    def _accepted(self, rows: Iterable[int]) -> list[int]:
        return [row for row in rows if self.accepts(row)]

    # ------------------------------------------------------------------ the source's changes
    def _after_source_reset(self) -> None:
        self._resort.stop()  # the rows are laid out anew below: a re-sort due for the old ones is not
        if self._sort is not None and self._sort[0] not in self._source().column_keys():
            self._sort = None  # another session, without that column
        self._show(self._accepted(range(self._source().rowCount())))
        self.endResetModel()

    def _on_rows_inserted(self, _parent: Index, first: int, last: int) -> None:
        fresh = self._accepted(range(first, last + 1))
        if not fresh:
            return
        if self._sort is None:
            at = len(self._rows)
            self.beginInsertRows(QModelIndex(), at, at + len(fresh) - 1)
            self._rows.extend(fresh)
            if self._place_of is not None:
                self._place_of.update((row, at + k) for k, row in enumerate(fresh))
            self.endInsertRows()
            return
        column = self._sort[0]
        for row in fresh:
            key = self._blank_last(_comparable(self._source().sort_key(row, column)))
            at = self._sorted_place(key)
            self.beginInsertRows(QModelIndex(), at, at)
            self._rows.insert(at, row)
            self._keys.insert(at, key)
            self._place_of = None
            self.endInsertRows()

    def _ranked_by(self, keys: set[str]) -> bool:
        """Whether the order or the rows shown follow the columns ``keys``."""
        return (self._sort is not None and self._sort[0] in keys) or (
            self.status_filter == "feasible" and "feasible" in keys)

    def follow_objective(self) -> None:
        """The objective changed (a slider, a weight, a direction): rows ordered or chosen by the
        ranking follow it at once."""
        if self._ranked_by({"score", "feasible"}):
            self.refilter()  # (which stops a re-sort that was due)

    def _on_data_changed(self, top_left: Index, bottom_right: Index, roles: Any = ()) -> None:
        changed = {self._source().column_key(c) for c in range(top_left.column(), bottom_right.column() + 1)}
        # a re-rank moved what the rows are ordered or chosen by: soon, once (not for the ranking the
        # rows were last laid out by, which a new session's first re-rank is)
        if self._ranked_by(changed) and self._source().model.ranking is not self._laid_out_by \
                and not self._resort.isActive():
            self._resort.start()
        if self._rows:  # the rows changed may be anywhere in this order: the columns, every row
            self.dataChanged.emit(self.index(0, top_left.column()),
                                  self.index(len(self._rows) - 1, bottom_right.column()), roles)

    def set_status_filter(self, status: str) -> None:
        self.refilter(lambda: setattr(self, "status_filter", status))

    def set_slot_filter(self, text: str) -> None:
        """``block_size=256, unroll=4``; raises WorkbenchError for a term that is not ``slot=value``."""
        terms: dict[str, str] = {}
        source: Any = self.sourceModel()  # the trials model this proxy was built on
        slots = set(source.model.slot_names)
        domains: dict[str, list[Any]] = source.model.slot_values
        # (a config pasted from the card or a file comes one slot a line)
        for part in filter(None, (p.strip() for p in re.split(r"[,;\n\u2028\u2029]", text))):
            name, sep, value = part.partition("=")
            name, value = name.strip(), value.strip()
            if not sep or not name or not value:
                raise WorkbenchError(f"filter {part!r}: write slot=value, e.g. block_size=256")
            if name not in slots:
                raise WorkbenchError(f"filter {part!r}: no slot {name!r} (slots: {', '.join(sorted(slots))})")
            if name in terms:  # two values of one slot match no trial: said, not an empty table
                raise WorkbenchError(f"filter {part!r}: {name} is named twice; a trial has one value of it")
            shown = [str(v) for v in domains.get(name, [])]
            if shown and value not in shown:
                # a number as the table's column writes it (0.001000 for 0.001) is that value
                same = [text for v, text in zip(domains.get(name, []), shown) if _same_number(v, value)]
                same = same if len(same) == 1 else []  # (two values the column writes alike: which is meant?)
                if not same:  # "0x20", "abc": an empty table said nothing of why
                    listed = ", ".join(shown[:8]) + (", ..." if len(shown) > 8 else "")
                    raise WorkbenchError(f"filter {part!r}: {name} has no value {value} (its values: {listed})")
                value = same[0]
            terms[name] = value
        self.refilter(lambda: setattr(self, "slot_filter", terms))

    def accepts(self, row: int) -> bool:
        """Whether source row ``row`` passes the status and slot filters."""
        if self.status_filter == "all" and not self.slot_filter:
            return True
        source = self._source()
        trial = source.model.trials[row]
        if self.status_filter == "feasible":
            ranking = source.model.ranking
            if ranking is None or not ranking.feasible[row]:
                return False
        elif self.status_filter == "failed":
            # aborted candidates were stopped on purpose over the latency limit, not failures: the
            # counts say "0 failed, aborted: 30", so the rows must agree (their own filter shows them)
            if not trial.status.is_failure:
                return False
        elif self.status_filter != "all" and trial.status.value != self.status_filter:
            return False
        for name, value in self.slot_filter.items():
            if str(trial.config.get(name)) != value:
                return False
        return True


class ResultsTable(QWidget):
    """The table with its filter bar; selecting a row selects the trial everywhere.

    The person chooses the columns shown and their order (the header's context menu, dragging a
    header), remembered in ``settings`` by column key (:class:`~workbench.gui.column_choice.ColumnChoice`;
    ``None``: not remembered). A metric column no trial fills is hidden by the table's own rule
    (:meth:`_on_trials_shown`) unless the person hid it first: hidden by either stays hidden."""

    #: The settings group of the person's column choice.
    SETTINGS_GROUP = "results_table"

    def __init__(self, model: SessionModel, parent: QWidget | None = None, settings: SettingsStore | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self._refit_pending = False
        self.table_model = TrialTableModel(model)
        self.proxy = TrialFilterProxy(self.table_model)
        self.view = QTableView()
        self.view.setTabKeyNavigation(False)  # Tab leaves the table (it went from cell to cell for ever); arrows move in it
        self.view.setAccessibleName("Trials")
        elide_cut_cells(self.view)  # a column half out of view shows "2…", never "25" for 256
        self.view.setModel(self.proxy)
        follow_sort(self.view, self.proxy)
        self._shown_metrics: set[str] = set()
        self.columns = ColumnChoice(self.view, self.table_model, settings, self.SETTINGS_GROUP, self._hidden_by_rule)
        # No sort until the user clicks a header: rows arrive in evaluation order, and sorting
        # 20,000 rows through Python data() calls on every load would take seconds.
        self.view.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.view.setSortingEnabled(True)
        # (after the view's own connection, which sorts: the selected trial kept in sight, where a
        # sort of 18,000 rows left it anywhere, and only Show in table found a row again)
        self.view.horizontalHeader().sortIndicatorChanged.connect(self._selection_in_sight)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.verticalHeader().setVisible(False)
        self.view.verticalHeader().setDefaultSectionSize(22)
        self.view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.view.horizontalHeader().setStretchLastSection(True)
        self.view.setAlternatingRowColors(True)
        self.status_combo = QComboBox()
        self.status_combo.addItems(["all", "feasible", "failed"] + [s.value for s in STATUSES])
        self.status_combo.currentTextChanged.connect(self.proxy.set_status_filter)
        self.status_combo.setAccessibleName("Show trials")
        self.status_combo.setToolTip("which trials the table shows: all, feasible, failed, or one status")
        self.slot_edit = QLineEdit()
        self.slot_edit.setAccessibleName("Filter by slot value")
        self.slot_edit.editingFinished.connect(self._on_slot_filter)
        # elided in the room the bar has (its tool tip the whole line): a refused filter of 10,000
        # characters, said in full, made the window 71,831 px wide, and it stayed that wide
        self.filter_error = ElidedLabel(minimum_chars=12)
        self.filter_error.setStyleSheet(f"color: {WARNING_TEXT}")
        bar = QHBoxLayout()
        bar.addWidget(QLabel("status"))
        bar.addWidget(self.status_combo)
        bar.addWidget(self.slot_edit, 1)
        bar.addWidget(self.filter_error)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.view)
        self.view.selectionModel().currentRowChanged.connect(self._on_row_changed)
        model.selection_changed.connect(self._on_selection_changed)
        # the selected trial is the table's current row again once a filter that hid it is changed
        # or cleared: its row had been dropped, and selecting the trial again changed nothing (it
        # still was the model's selection), so only the card's Show in table brought it back
        self.proxy.layoutChanged.connect(lambda *_: self._on_selection_changed(self.model.selected))
        model.ranking_changed.connect(self._on_ranking_changed)
        model.objective_changed.connect(self.proxy.follow_objective)
        self.table_model.modelReset.connect(self._fit_columns)
        self.table_model.modelReset.connect(self._on_columns_reset)
        # a metric first reported mid-run: its new column fitted, the others left as the user sized them
        self.table_model.columnsInserted.connect(self._on_columns_inserted)
        model.trials_added.connect(self._on_trials_shown)
        self._fit_columns()
        self._on_columns_reset()

    def _selection_in_sight(self, *_: object) -> None:
        current = self.view.currentIndex()
        if current.isValid():
            self.view.scrollTo(current, QAbstractItemView.ScrollHint.PositionAtCenter)

    def _on_columns_reset(self) -> None:
        """New columns (another session's slots and metrics): Qt keeps each column *number*'s hidden
        flag across a model reset, so the metric columns hidden for the last layout would hide
        whatever now stands at those numbers (slots, latency, score); each column is shown or
        hidden, and placed, by its key."""
        self._shown_metrics = set()
        self._scan_metrics(0, self.model.n)
        self.columns.apply()
        self._show_filter_example()
        if self.slot_edit.text().strip():  # read again against this session's slots: one it lacks hid
            self._on_slot_filter()         # every trial unsaid, where typed text is refused in one line

    def _show_filter_example(self) -> None:
        self.slot_edit.setPlaceholderText(f"filter by slot value, e.g. {self._filter_example()}")

    def _filter_example(self) -> str:
        """``block_size=256, unroll=4`` in this session's slots, at its first trial's values: the fixed
        example named slots most kernels do not have (a filter of it is refused)."""
        session = self.model.session
        slots = list(session.space.slots)[:2] if session is not None and session.space is not None else []
        if not slots:
            return "block_size=256, unroll=4"
        first = self.model.trials[0].config if self.model.trials else None
        return ", ".join(f"{slot.name}={first[slot.name] if first is not None else slot.values[0]}" for slot in slots)

    def _on_columns_inserted(self, _parent: QModelIndex, first: int, last: int) -> None:
        self.columns.place_inserted(first, last)
        self._fit_columns(range(first, last + 1))

    def _on_trials_shown(self, start: int, stop: int) -> None:
        """Show a metric column once some trial reports a value that says something; until then
        (or for a rate the kernel does not have) it stays hidden, so the table is not padded with
        empty or all-zero columns. A column the person hid stays hidden."""
        if self._scan_metrics(start, stop):
            self.columns.update_hidden()
        self._widen_verdicts(start)
        if start == 0 and stop > 0:  # the filter's example at the first trial's values: it lists that trial
            self._show_filter_example()

    def _scan_metrics(self, start: int, stop: int) -> bool:
        """Note the usual metrics trials ``start..stop`` say something in; whether any is new."""
        new = [name for name in TABLE_METRICS if name not in self._shown_metrics
               and name in self.model.columns and _any_says_something(name, self.model.columns[name].view(stop)[start:])]
        self._shown_metrics.update(new)
        return bool(new)

    def _hidden_by_rule(self, key: str) -> str | None:
        """Why the table hides the column ``key`` by itself (a usual metric no trial fills), or None."""
        name = key[7:] if key.startswith("metric:") else ""
        if name not in TABLE_METRICS or name in self._shown_metrics:
            return None
        return "no values yet"

    def changeEvent(self, event: QEvent) -> None:  # Qt override
        """A new font (the window's zoom) refits the columns to their headers at that size, from
        the event loop: under the application's style sheet the table hears of the new font before
        its header has it, and the columns kept the previous zoom's widths (cut headers in
        presentation mode, far too wide after it)."""
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange and hasattr(self, "table_model") and not self._refit_pending:
            self._refit_pending = True
            QTimer.singleShot(0, self, self._refit_to_font)

    def _refit_to_font(self) -> None:
        self._refit_pending = False
        self._fit_columns()

    def _fit_columns(self, columns: Iterable[int] | None = None) -> None:
        """Columns (``columns``, or all) as wide as their header (reading every cell to fit 20,000
        rows would stall the window), as the style measures it: its margins and sort arrow do not
        grow with the font as the text does. Only the widths that change are set, and with many of
        them the last column's stretch is off meanwhile: with it on, each width set lays out every
        column again, so fitting took time quadratic in the columns (a session of 2,000 metrics:
        3 s); turned off and on for a few, it laid out the table again on every slider move."""
        header = self.view.horizontalHeader()
        metrics = header.fontMetrics()
        self.view.verticalHeader().setDefaultSectionSize(max(22, metrics.height() + 6))
        wanted = self._widths(header, metrics, range(self.table_model.columnCount()) if columns is None else columns)
        changed = [(column, width) for column, width in wanted if self.view.columnWidth(column) != width]
        stretched = header.stretchLastSection()
        # (a hidden column's width reads 0 and is set every time: not counted, or a session hiding
        # many columns would lay the table out again on every fit)
        many = stretched and sum(not self.view.isColumnHidden(column) for column, _w in changed) > MANY_WIDTHS
        if many:
            header.setStretchLastSection(False)
        try:
            for column, width in changed:
                self.view.setColumnWidth(column, width)
        finally:
            if many:
                header.setStretchLastSection(True)

    def _widths(self, header: QHeaderView, metrics: QFontMetrics, columns: Iterable[int]) -> list[tuple[int, int]]:
        """Each of ``columns`` with the width its header and its kind of content need."""
        widths = []
        for column in columns:
            title = str(self.table_model.headerData(column, Qt.Orientation.Horizontal))
            key = self.table_model.column_key(column)
            width = max(metrics.horizontalAdvance(title) + 18, header.sectionSizeFromContents(column).width(), 44)
            if key == "index":  # up to six digits (a recording of 200,000 configs), whatever the header
                width = max(width, metrics.horizontalAdvance("000000") + 12)
            elif key == "id":
                width = max(width, metrics.horizontalAdvance("0123456789abc") + 12)
            elif key in ("status", "feasible"):  # a violated constraint is longer: elided, its tool tip has it
                verdict = self._longest_verdict(key)
                width = max(width, self._verdict_width() if verdict == "compile_error"
                            else metrics.horizontalAdvance(verdict) + 16)
            elif key.startswith("metric:"):  # a name from a file can be any length: the tool tip has it whole
                width = min(width, metrics.horizontalAdvance("M" * MAX_HEADER_CHARS) + 18)
            elif key.startswith("slot:"):  # its values whole: "lr" cut 0.001 and 0.01 alike to "0.0…"
                width = max(width, self._values_width(key.removeprefix("slot:"), metrics))
            widths.append((column, width))
        return widths

    def _values_width(self, slot: str, metrics: QFontMetrics) -> int:
        """The width the slot's values take as the table writes them (its domain, when the space
        is known, is all it can show; at most 64 values are measured, and no wider than a
        metric's header allows, so a slot of long text names keeps its tool tip)."""
        space = self.model.session.space if self.model.session is not None else None
        slot_of = {s.name: s for s in space.slots} if space is not None else {}
        if slot not in slot_of:
            return 0
        values = slot_of[slot].values[:64]
        whole = all(isinstance(v, (int, bool)) or (isinstance(v, float) and v.is_integer()) for v in values)
        texts = [str(v) if isinstance(v, (bool, str)) else fmt(float(v), column=not whole) for v in values]
        widest = max((metrics.horizontalAdvance(text) for text in texts), default=0)
        return min(widest + 16, metrics.horizontalAdvance("M" * MAX_HEADER_CHARS) + 18)

    def _longest_verdict(self, key: str, start: int = 0) -> str:
        """The longest text the ``key`` column (status or feasible) must show for trials ``start``
        on: "ok" while every trial succeeded, "yes" while every one also met the constraints, else
        room for a failure's name. Sized for a failure always, the two columns pushed every slot
        column off a 1440 px window in presentation mode."""
        failed = bool((self.model.status_codes()[start:] != STATUS_CODES[Status.OK]).any())
        if key == "status":
            return "compile_error" if failed else "ok"
        ranking = self.model.ranking
        missed = ranking is not None and not bool(ranking.feasible[start:self.model.n].all())
        return "compile_error" if failed or missed else "yes"

    def _widen_verdicts(self, start: int) -> None:
        """A failure or an infeasible trial arrived after the columns were fitted: the verdict
        column that must show it grows (it never shrinks while the session is shown)."""
        for key in ("status", "feasible"):
            if self._longest_verdict(key, start) == "compile_error":
                column = self.table_model.column_of(key)
                if self.view.columnWidth(column) < self._verdict_width():
                    self.view.setColumnWidth(column, self._verdict_width())

    def _verdict_width(self) -> int:
        # a failure's name, or a violation of a usual metric ("no: occupancy", "no: registers")
        metrics = self.view.horizontalHeader().fontMetrics()
        return max(metrics.horizontalAdvance(text) for text in ("compile_error", "no: occupancy")) + 16

    def _on_ranking_changed(self) -> None:
        if self.model.n:
            self._widen_verdicts(0)  # a constraint moved: rows that met it may not now

    def _on_slot_filter(self) -> None:
        try:
            self.proxy.set_slot_filter(self.slot_edit.text())
            self.filter_error.setText("")
        except WorkbenchError as exc:
            self.proxy.set_slot_filter("")  # every trial, not the previous filter beside the refused text
            self.filter_error.setText(str(exc))

    def _on_row_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if current.isValid():
            self.model.select(self.proxy.mapToSource(current).row())

    def _on_selection_changed(self, row: int | None) -> None:
        if row is not None:  # (a trial the filters hide leaves no row marked: a click on it chooses it again)
            show_trial_row(self.view, self.proxy, row)

    def show_row(self, row: int) -> str:
        """Select trial ``row`` and scroll the table to it, clearing the filters when they hide it;
        what was cleared ("" when nothing), for the window to say."""
        cleared = ""
        if not self.proxy.mapFromSource(self.table_model.index(row, 0)).isValid():
            cleared = "filters cleared to show it"
            self.slot_edit.clear()
            self._on_slot_filter()
            self.status_combo.setCurrentText("all")
        proxy_index = self.proxy.mapFromSource(self.table_model.index(row, 0))
        if proxy_index.isValid():
            self.view.setCurrentIndex(proxy_index)
            self.view.scrollTo(proxy_index, QAbstractItemView.ScrollHint.PositionAtCenter)
        return cleared

    def selected_row(self) -> int | None:
        current = self.view.currentIndex()
        return self.proxy.mapToSource(current).row() if current.isValid() else None
