"""The view model every widget of the window shares: one session, its derived arrays, the ranking.

Qt-free on purpose (napari style): widgets take a :class:`SessionModel` in their constructor and
connect its :class:`Event` s to their ``_on_*`` methods. The engine appends trials to the session in
its own thread; the model *pulls* new trials (:meth:`SessionModel.sync`) on the GUI thread, so a
trial is shown exactly once however the events arrive, and charts are fed NumPy columns that grow
by doubling instead of walking Python objects on every refresh.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Callable, Sequence

import numpy as np

from workbench.core.domain.measurement import LATENCY, Status, Trial
from workbench.core.domain.objective import Constraints, MetricTable, Weights, direction_problem, rank
from workbench.core.domain.session import Session, problem_key

#: status -> small integer code stored per trial (order = how the views list statuses).
STATUS_CODES: dict[Status, int] = {status: code for code, status in enumerate(Status)}
STATUSES: tuple[Status, ...] = tuple(Status)

#: Metrics every chart and table offers even before a trial reported them.
BASE_METRICS: tuple[str, ...] = ("latency_ms", "memory_mb", "quality", "throughput_gbs", "gflops")


class Event:
    """A minimal synchronous event: ``connect(callback)``, ``emit(*args)``. No Qt below the widgets.

    Every callback runs even when an earlier one raises: one view that cannot show something must
    not keep the others (or a running search's re-targeting) from hearing the change. The exception
    still surfaces once all have run (the last one raised, earlier ones as its context)."""

    def __init__(self) -> None:
        self._callbacks: list[Callable[..., None]] = []

    def connect(self, callback: Callable[..., None]) -> None:
        self._callbacks.append(callback)

    def disconnect(self, callback: Callable[..., None]) -> None:
        if callback in self._callbacks:
            self._callbacks.remove(callback)

    def emit(self, *args: Any) -> None:
        _call_all(list(self._callbacks), args)


def _call_all(callbacks: list[Callable[..., None]], args: tuple[Any, ...]) -> None:
    """Call each callback in order; one that raises does not stop the rest (see :class:`Event`)."""
    if not callbacks:
        return
    try:
        callbacks[0](*args)
    finally:
        _call_all(callbacks[1:], args)


class GrowingColumn:
    """A float64 column that grows by doubling, so appending k values costs amortised O(k)."""

    def __init__(self, capacity: int = 256, fill: float = math.nan, dtype: Any = np.float64) -> None:
        self._fill = fill
        self._data = np.full(capacity, fill, dtype=dtype)
        self.size = 0

    def extend(self, values: Sequence[float] | np.ndarray, at: int) -> None:
        """Write ``values`` at rows ``at..`` (rows between ``size`` and ``at`` keep the fill value)."""
        end = at + len(values)
        if end > len(self._data):
            capacity = max(end, 2 * len(self._data))
            grown = np.full(capacity, self._fill, dtype=self._data.dtype)
            grown[: self.size] = self._data[: self.size]
            self._data = grown
        self._data[at:end] = values
        self.size = max(self.size, end)

    def view(self, n: int) -> np.ndarray:
        """The first ``n`` rows (a view, no copy); rows never written read as the fill value."""
        if n > len(self._data):
            self.extend([], n)
            self._data[self.size : n] = self._fill
            self.size = n
        return self._data[:n]


class SessionModel:
    """A session as the window sees it: trials, metric columns, objective, ranking and selection.

    Events (all emitted on the thread that calls the mutating method, i.e. the GUI thread):

    - ``session_changed()``: a different session was loaded or created (everything resets);
    - ``trials_added(start, stop)``: rows ``start..stop-1`` were appended;
    - ``ranking_changed()``: feasibility/score/best changed (new trials or a new objective);
    - ``objective_changed()``: constraints or weights changed (sliders follow);
    - ``selection_changed(index | None)``: a trial was selected in one view; the others follow;
    - ``sizes_changed()``: a sweep's trials reached a problem size not seen before;
    - ``session_grew()``: the session gained trials, at whatever size (``trials_added`` covers only
      the size shown): for views that read the whole session, like the size view.

    A size sweep keeps several problems' trials in one session, and a ranking across sizes would
    always recommend the smallest size's config. So the model shows one problem at a time
    (:attr:`problem_shown`): ``trials`` and every derived array hold that problem's trials only.
    While a sweep runs, the model follows the size being measured unless the user picked an
    earlier one (:meth:`show_problem`); the size view and portability view read the whole session.
    """

    def __init__(self, session: Session | None = None) -> None:
        self.session_changed = Event()
        self.trials_added = Event()
        self.ranking_changed = Event()
        self.objective_changed = Event()
        self.selection_changed = Event()
        self.sizes_changed = Event()
        self.session_grew = Event()
        self.session: Session | None = None
        #: Changes whenever the trials' data does (a new session, new trials, trials refined in
        #: place): what views key their caches on, since the trial count alone misses a refinement.
        self.data_version = 0
        self.trials: list[Trial] = []
        self.columns: dict[str, GrowingColumn] = {}
        self.status = GrowingColumn(dtype=np.int16, fill=-1)
        #: each shown trial's number in the session (``Trial.index``, the table's ``#``)
        self.numbers = GrowingColumn(dtype=np.int64, fill=-1)
        self.table = MetricTable()
        self.slot_codes: dict[str, GrowingColumn] = {}
        self.slot_values: dict[str, list[Any]] = {}
        self.ranking: Any = None
        self.selected: int | None = None
        self.default_index: int | None = None
        self.dirty = False
        #: The problem whose trials are shown (key from :func:`problem_key`); None: the session holds
        #: one problem only, and every trial is shown.
        self.problem_shown: str | None = None
        self._problems: dict[str, dict[str, Any]] = {}  # key -> problem, in order of first trial
        self._consumed = 0  # session trials looked at so far (shown or not)
        self._own_key: tuple[dict[str, Any], str] | None = None  # the session's problem and its key
        self._unbound: tuple[Constraints, Weights] = (Constraints(), Weights())
        if session is not None:
            self.set_session(session)

    # --- session ------------------------------------------------------------------------------
    def set_session(self, session: Session | None, unsaved: bool = False) -> None:
        """Show ``session`` (replacing everything); its trials are ingested at once. Showing the same
        session again (trials refined in place) keeps the size shown and its unsaved mark.

        ``unsaved``: the session holds trials or changes no file the person chose has (one read
        back from an autosave, say); the mark is set before any view hears of the session, so the
        title and the close question never see it clean. Showing a session is no save: only a
        save clears the mark of the session already shown."""
        same = session is self.session and session is not None
        kept = self.problem_shown if same else None
        # the objective set while no session is shown (see set_constraints): none again once a
        # session is shown or closed, as a new window's panel shows
        self._unbound = (Constraints(), Weights())
        self.dirty = unsaved or (same and self.dirty)
        self.session = session
        self.data_version += 1
        self.selected = None
        self.default_index = None
        self._problems = {}
        self._consumed = 0
        trials = list(session.trials) if session is not None else []
        self._note_problems(trials)
        if len(self._problems) < 2:
            self.problem_shown = None
        else:
            # the size `show` and `export` answer for (the session's own problem), else the last
            # measured with a feasible config (one with none opened a sweep on empty charts)
            own = problem_key(session.problem) if session is not None else None
            self.problem_shown = (kept if kept in self._problems else own if own in self._problems
                                  else self._last_with_a_best(trials))
        self._reset_columns()
        self._ingest(self._shown(trials))
        self.ranking = self._rank()
        self.session_changed.emit()
        self.ranking_changed.emit()

    # --- sizes ----------------------------------------------------------------------------------
    def problems(self) -> list[dict[str, Any]]:
        """The problems the session's trials ran at, in order of their first trial (one for a
        session that is not a sweep)."""
        return [dict(problem) for problem in self._problems.values()]

    def shown_problem(self) -> dict[str, Any] | None:
        """The problem whose trials are shown; None when the session holds one problem only."""
        return None if self.problem_shown is None else dict(self._problems[self.problem_shown])

    def shown_size_label(self) -> str:
        """The size shown, named as the size picker names it (``n=1048576``: the parameters the
        sizes differ in); "" when the session holds one size. What an exported chart of a sweep
        says it plots: a picture of one size could not be told from another's."""
        shown = self.shown_problem()
        if shown is None or self.session is None:
            return ""
        from workbench.core.domain.size_analysis import label_names, size_label

        return size_label(shown, label_names(self.session, self.problems()))

    def show_problem(self, problem: dict[str, Any]) -> None:
        """Show the trials of ``problem`` (one of :meth:`problems`): everything is re-derived, as for
        a new session, and views reset on ``session_changed``."""
        key = problem_key(problem)
        if key not in self._problems:
            raise ValueError(f"the session has no trials at {key}")
        if len(self._problems) < 2 or key == self.problem_shown:
            return
        self._switch_to(key)

    def _switch_to(self, key: str) -> None:
        assert self.session is not None  # sizes are those of the open session
        self.problem_shown = key
        self.data_version += 1
        self._reset_columns()
        self.selected = None
        self.default_index = None
        self._ingest(self._shown(self.session.trials[: self._consumed]))
        self.ranking = self._rank()
        self.session_changed.emit()
        self.ranking_changed.emit()

    def _problem_of(self, trial: Trial) -> str:
        assert self.session is not None  # the trial is one of its
        if trial.problem is None:  # most trials: the session's own problem, its key made once per session
            own = self.session.problem
            if self._own_key is None or self._own_key[0] is not own:
                self._own_key = (own, problem_key(own))
            return self._own_key[1]
        return problem_key(trial.problem)

    def _last_with_a_best(self, trials: Sequence[Trial]) -> str:
        """The size measured last that has a feasible config under the session's objective, else
        the size measured last."""
        assert self.session is not None  # (sizes are the open session's)
        by_size: dict[str, list[Trial]] = {}
        for trial in trials:
            by_size.setdefault(self._problem_of(trial), []).append(trial)
        constraints, weights = self.session.constraints, self.session.weights
        return next((key for key in reversed(self._problems)
                     if rank(by_size.get(key, []), constraints, weights).best is not None),
                    next(reversed(self._problems)))

    def _note_problems(self, trials: Sequence[Trial]) -> None:
        """Record the problems of newly seen trials and count them as looked at."""
        if self.session is None:
            return
        for trial in trials:
            key = self._problem_of(trial)
            if key not in self._problems:
                self._problems[key] = dict(self.session.problem if trial.problem is None else trial.problem)
        self._consumed += len(trials)

    def _shown(self, trials: Sequence[Trial]) -> list[Trial]:
        if self.problem_shown is None:
            return list(trials)
        return [t for t in trials if self._problem_of(t) == self.problem_shown]

    def _reset_columns(self) -> None:
        self.trials = []
        self.columns = {name: GrowingColumn() for name in BASE_METRICS}
        self.status = GrowingColumn(dtype=np.int16, fill=-1)
        self.numbers = GrowingColumn(dtype=np.int64, fill=-1)
        self.table = MetricTable()
        self.slot_codes = {}
        self.slot_values = {}

    @property
    def n(self) -> int:
        return len(self.trials)

    @property
    def slot_names(self) -> list[str]:
        if self.session is None or self.session.space is None:
            return []
        return [slot.name for slot in self.session.space.slots]

    @property
    def simulated(self) -> bool:
        return bool(self.session is not None and self.session.device.get("simulated", False))

    def sync(self) -> bool:
        """Pull trials the engine appended to the session since the last call; True if any at the
        size shown. Any new trial, shown or not, is heard of through ``session_grew``."""
        if self.session is None:
            return False
        fresh = list(self.session.trials[self._consumed :])
        if not fresh:
            return False
        self.data_version += 1  # the session's data changed, whether or not the size shown did
        self.dirty = True
        try:
            return self._sync_shown(fresh)
        finally:
            self.session_grew.emit()

    def _sync_shown(self, fresh: list[Trial]) -> bool:
        """Note ``fresh``'s sizes (following a sweep to its new size) and ingest those shown."""
        known = len(self._problems)
        following = self.problem_shown is None or self.problem_shown == next(reversed(self._problems))
        self._note_problems(fresh)
        if len(self._problems) > max(known, 1):  # a second (or later) size: a sweep
            if following:  # a sweep moved on to a new size while the latest size was shown: follow it
                self._switch_to(next(reversed(self._problems)))
                self.sizes_changed.emit()
                return True
            self.sizes_changed.emit()
        fresh = self._shown(fresh)
        if not fresh:
            return False
        start = len(self.trials)
        self._ingest(fresh)
        self.ranking = self._rank()
        self.trials_added.emit(start, len(self.trials))
        self.ranking_changed.emit()
        return True

    def _ingest(self, fresh: list[Trial]) -> None:
        if not fresh:
            return
        self.data_version += 1
        start = len(self.trials)
        self.trials.extend(fresh)
        self.table.extend(fresh)
        default = getattr(self.session, "default_config", None)
        default_id = default.id if default is not None else None
        for k, trial in enumerate(fresh if default_id is not None else ()):
            # the latest successful trial of the default config, else its latest (as the ranking's
            # default_row): one re-measured after it was aborted is the comparison, not the abort
            if trial.config.id == default_id and (trial.ok or self.default_index is None
                                                  or not self.trials[self.default_index].ok):
                self.default_index = start + k
        stop = start + len(fresh)
        # every metric the table has read (in this batch or before), from its column; a column no
        # trial reports stays its fill (NaN) for these rows
        for name in self.table.metrics:
            self.columns.setdefault(name, GrowingColumn()).extend(self.table.column(name)[start:stop], start)
        self.status.extend([STATUS_CODES[trial.status] for trial in fresh], start)
        self.numbers.extend([trial.index for trial in fresh], start)
        space = self.session.space if self.session is not None else None
        for slot in space.slots if space is not None else ():
            values = self.slot_values.setdefault(slot.name, list(slot.values))
            position = {value: i for i, value in enumerate(values)}
            codes = []
            for trial in fresh:
                value = trial.config.get(slot.name)
                if value not in position:  # a value from before the space was edited
                    position[value] = len(values)
                    values.append(value)
                codes.append(position[value])
            self.slot_codes.setdefault(slot.name, GrowingColumn(dtype=np.int64, fill=0)).extend(codes, start)
            key = "slot:" + slot.name
            column = self.columns.setdefault(key, GrowingColumn())
            if slot.ordered:
                column.extend([_as_float(trial.config.get(slot.name)) for trial in fresh], start)
            else:
                position = {value: i for i, value in enumerate(slot.values)}
                column.extend([float(position.get(trial.config.get(slot.name), math.nan)) for trial in fresh], start)

    # --- derived arrays -------------------------------------------------------------------------
    def metric(self, name: str) -> np.ndarray:
        """Column ``name`` (a metric, or ``slot:NAME``) for all trials; NaN where not reported."""
        column = self.columns.get(name)
        if column is None:
            return np.full(self.n, math.nan)
        return column.view(self.n)

    def status_codes(self) -> np.ndarray:
        return self.status.view(self.n)

    def metric_names(self) -> list[str]:
        """Metrics at least one trial reported (base metrics first), then the numeric slot columns."""
        n = self.n
        metrics = [m for m, column in self.columns.items()
                   if not m.startswith("slot:") and (n == 0 and m in BASE_METRICS or np.isfinite(column.view(n)).any())]
        ordered = [m for m in BASE_METRICS if m in metrics] + sorted(m for m in metrics if m not in BASE_METRICS)
        return ordered + ["slot:" + name for name in self.slot_names]

    def slot_code_columns(self) -> dict[str, tuple[np.ndarray, list[Any]]]:
        """Per slot: the index of each trial's value in ``slot_values[name]``, and those values."""
        return {name: (column.view(self.n), self.slot_values[name]) for name, column in self.slot_codes.items()}

    def trial_numbers(self) -> np.ndarray:
        """Each shown trial's number in the session (``Trial.index``): what the results table shows
        as ``#`` and the score chart plots along its x axis (for one size of a sweep, a range that
        does not start at 0)."""
        return self.numbers.view(self.n)

    def failed_mask(self) -> np.ndarray:
        return self.status_codes() != STATUS_CODES[Status.OK]

    def aborted_mask(self) -> np.ndarray:
        """Trials stopped early as hopeless under the latency limit: not failures, but infeasible
        under the limit in force (they are kept with a lower bound on their latency)."""
        return self.status_codes() == STATUS_CODES[Status.ABORTED]

    def measured_mask(self) -> np.ndarray:
        """Trials whose figures are measurements: the successful ones and the aborted ones (their
        compile's figures, and the bound their timing stopped above), the charts draw them."""
        codes = self.status_codes()
        return (codes == STATUS_CODES[Status.OK]) | (codes == STATUS_CODES[Status.ABORTED])

    # --- objective ------------------------------------------------------------------------------
    @property
    def constraints(self) -> Constraints:
        return self.session.constraints if self.session is not None else self._unbound[0]

    @property
    def weights(self) -> Weights:
        return self.session.weights if self.session is not None else self._unbound[1]

    def set_constraints(self, **changes: Any) -> None:
        """Change some constraints (``max_latency_ms=...``; None removes one) and re-rank at once.
        Without a session they are kept for the next run the window starts: a limit set before the
        first Start was shown as on and then dropped, so that run searched without it."""
        updated = replace(self.constraints, **changes)
        if updated == self.constraints:
            return
        if self.session is None:
            self._unbound = (updated, self._unbound[1])
            self.objective_changed.emit()
            return
        self.session.constraints = updated
        self._objective_changed()

    def set_weights(self, values: dict[str, float]) -> None:
        """New weight values; the metric directions the user chose stay. Kept for the next run
        without a session, as constraints are."""
        updated = Weights(values=dict(values), directions=self.weights.directions)
        if updated == self.weights:
            return
        if self.session is None:
            self._unbound = (self._unbound[0], updated)
            self.objective_changed.emit()
            return
        self.session.weights = updated
        self._objective_changed()

    def set_direction(self, metric: str, direction: int) -> None:
        """The user's direction for ``metric`` (+1 higher is better, -1 lower): re-ranks at once, and
        a running search follows it (the window re-targets the run on ``objective_changed``)."""
        if self.session is None or direction_problem(metric, 1 if direction > 0 else -1):
            return  # a known metric's direction is fixed (the panel offers no toggle for it)
        updated = self.session.weights.with_direction(metric, 1 if direction > 0 else -1)
        if updated == self.session.weights:
            return
        self.session.weights = updated
        self._objective_changed()

    def _objective_changed(self) -> None:
        self.dirty = True
        self.ranking = self._rank()
        # ranking first: views mark themselves dirty, then redraw at once on objective_changed
        # (which clears the mark), so a slider move draws once, not again on the next timer tick.
        # objective_changed goes out even when a view fails on ranking_changed: it is what re-targets
        # a running search, which must follow the objective whatever a view makes of it.
        try:
            self.ranking_changed.emit()
        finally:
            self.objective_changed.emit()

    def _rank(self) -> Any:
        default = getattr(self.session, "default_config", None) if self.session is not None else None
        return rank(self.table, self.constraints, self.weights, default=default.id if default is not None else None)

    def best_so_far(self) -> np.ndarray:
        """Running maximum of the score over feasible trials in evaluation order (NaN before the first)."""
        if self.ranking is None or self.n == 0:
            return np.empty(0)
        score = np.where(self.ranking.feasible, self.ranking.score, -np.inf)
        best = np.maximum.accumulate(score)
        return np.where(np.isfinite(best), best, np.nan)

    # --- selection ------------------------------------------------------------------------------
    def select(self, index: int | None) -> None:
        if index is not None and not 0 <= index < self.n:
            index = None
        if index == self.selected:
            return
        self.selected = index
        self.selection_changed.emit(index)

    def data_range(self, metric: str) -> tuple[float, float] | None:
        """(min, max) of a metric over ok trials, for slider ranges; None without data. The latency's
        takes in the lower bounds of trials aborted under a latency limit: relaxing the limit past
        them is how they get re-measured, so the slider must reach them (with every trial aborted,
        there is no other latency to span)."""
        values = self.metric(metric)[~self.failed_mask()] if self.n else np.empty(0)
        if metric == LATENCY and self.n:
            values = np.concatenate([values, self.metric("latency_bound_ms")[self.aborted_mask()]])
        values = values[np.isfinite(values)]
        if values.size == 0:
            return None
        return float(np.min(values)), float(np.max(values))


def _as_float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan
