"""The tuning loop: ask the strategy, drop what is already measured, measure, record, tell, report.

The engine owns the loop (strategies only answer ``ask`` / ``tell``), the budgets (evaluations and
wall time), early stopping (space exhausted, patience), and pause / resume / stop from any thread.
Every finished candidate is added to the session and, when an output path is set, appended to
the session's journal before anything else happens, so a killed process loses nothing. Observers
get plain events (:mod:`workbench.runner.events`) through callbacks or a ``queue.Queue``; the
GUI bridges those to Qt signals on its own thread.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import queue
import re
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from workbench.backends.base import PACED_BACKENDS, BackendSpec, EvalLimits, Target, pace_option
from workbench.core.errors import WorkbenchError
from workbench.core.domain.measurement import Status, Trial
from workbench.core.domain.objective import rank
from workbench.core.domain.search_objective import INFEASIBLE, Objective
from workbench.core.domain.session import MAX_EPOCH_S, Session
from workbench.core.domain.space import Config
from workbench.runner.events import (EndReason, Event, Progress, RunFinished, Subscribers, TrialFinished, TrialRefined,
                                     TrialStarted)
from workbench.runner.pool import Pool, PoolFactory, Result, WorkerPool
from workbench.search.base import Strategy

log = logging.getLogger(__name__)

#: How often (seconds) the loop looks at pause / stop / time limit while candidates run.
POLL_S = 0.05
#: How long workers start, with none ready, before the run says so, and how often it says it again.
STARTING_NOTE_EVERY_S = 5.0
#: Consecutive ``ask`` rounds that propose only already-measured configs before giving up.
MAX_DUPLICATE_ROUNDS = 50
#: Longest time (seconds) a journaled trial may sit in the OS page cache before an fsync.
JOURNAL_SYNC_S = 0.2
#: Under several weights the progress line's best is the ranking's (see Engine._progress_best):
#: worked out after every trial up to this many, beyond them at most every RANKED_BEST_EVERY_S.
RANKED_BEST_ALWAYS = 2000
RANKED_BEST_EVERY_S = 0.5
#: Ends of a run after which trials simulated with estimated resources are refined (not after a
#: stop request, a time limit or an error: the user asked for the run to end).
REFINE_AFTER = ("budget", "exhausted", "plateau")
#: Configs that must all fail to compile with one and the same error before a run stops as a source
#: that cannot compile, whatever the config: a syntax error spent a whole budget on compiles that all
#: said the same line, and the run ended as if it had searched.
BROKEN_SOURCE_AFTER = 8
#: NVRTC's words for an option it does not take (as its log and its error code say them).
_OPTION_ERROR = re.compile(r"unrecognized option|invalid option|NVRTC_ERROR_INVALID_OPTION", re.IGNORECASE)
#: The backends that compile the source they are given (a recording's failed compiles are facts of
#: another run, and a python benchmark compiles nothing of ours).
COMPILING_BACKENDS = ("sim", "cuda")
#: The most trials of a session the check above looks at: past them, a run goes on as before.
BROKEN_SOURCE_LOOKS = 256


def session_for_target(target: Target, spec: BackendSpec, strategy: Strategy | None = None) -> Any:
    """A new, empty session for a target: :func:`workbench.runner.plan.new_session` with the
    strategy's own name, seed and options."""
    from workbench.runner.plan import new_session

    if strategy is None:
        return new_session(spec, target, strategy=None)
    return new_session(spec, target, strategy=strategy.name, seed=strategy.seed, strategy_options=strategy.options)



class _GroupSyncedJournal:
    """The session journal, flushed after every trial and fsynced at most every ``JOURNAL_SYNC_S``.

    A flushed line is in the OS page cache, so killing the process (SIGKILL, a crash) loses
    nothing; the fsync only guards against the machine itself going down. Grouping the fsyncs
    keeps fast benchmarks (thousands of trials a second) from being bound by the disk.
    """

    def __init__(self, output: Path) -> None:
        from workbench.core.domain.session import Journal

        self.journal = Journal(output, fsync=False)
        self._synced = time.monotonic()
        self._dirty = False

    def start(self, session: Session) -> None:
        self.journal.start(session)

    def append(self, trial: Trial) -> None:
        self.journal.append(trial)
        self._dirty = True
        if time.monotonic() - self._synced >= JOURNAL_SYNC_S:
            self.sync()

    def sync(self) -> None:
        """fsync the journal file (by path: a mid-run save may have started a fresh one)."""
        if not self._dirty:
            return
        try:
            fd = os.open(self.journal.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError:
            pass
        self._synced, self._dirty = time.monotonic(), False

    def close(self) -> None:
        self.sync()
        self.journal.close()

    def discard_if_empty(self) -> None:
        """Remove the journal file when it holds no trial (only the header of a run that measured nothing)."""
        self.journal.remove_if_covered(set())


def _file_identity(path: Path) -> tuple[int, int, int] | None:
    """What tells a file apart from one put in its place: inode, size, modification time (None: absent)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _journal_for(output: Path) -> _GroupSyncedJournal:
    return _GroupSyncedJournal(output)


class Engine:
    """Runs one tuning session to a budget, a time limit, exhaustion, a plateau or a stop request.

    ``budget``: evaluations in this run, failures included (None: unlimited). ``time_limit_s``:
    wall time of this run, paused time excluded; no new candidate starts after it (running ones
    finish or time out). ``patience``: stop after this many evaluations without a better
    objective. ``output`` (alias ``out_path``): session file to keep up to date (journaled after
    every trial, saved at the end). ``objective``: the run's :class:`Objective` (constraints,
    weights, directions; None: latency alone), handed to the strategy and used by ``patience``;
    :meth:`set_objective` changes it mid-run. ``remeasure``: ids of measured configs that may be
    measured again (aborted candidates). A config the strategy was handed as a warm start
    (:meth:`Strategy.handed`: a size sweep's best configs of the nearest sizes) that does not
    improve on the best is not counted by ``patience``, which is for the search's own proposals:
    a patience of 3 ended a size after the four configs it was handed, before its strategy
    proposed anything. Construct in any thread; :meth:`run` blocks the thread that calls it.
    """

    def __init__(
        self,
        session: Session,
        strategy: Strategy,
        backend_spec: BackendSpec,
        budget: int | None = None,
        time_limit_s: float | None = None,
        workers: int = 1,
        limits: EvalLimits = EvalLimits(),
        patience: int | None = None,
        output: str | Path | None = None,
        out_path: str | Path | None = None,
        pool_factory: PoolFactory | None = None,
        objective: Objective | None = None,
        remeasure: Iterable[str] = (),
        problem: Mapping[str, Any] | None = None,
        reference: Config | None = None,
    ) -> None:
        if output is not None and out_path is not None and Path(output) != Path(out_path):
            raise WorkbenchError("give the output session file once (output or out_path), not both")
        output = output if output is not None else out_path  # out_path: an alias kept for scripts
        if budget is not None and budget < 1:
            raise WorkbenchError(f"budget must be at least 1 evaluation, got {budget}")
        if time_limit_s is not None and not time_limit_s > 0:
            raise WorkbenchError(f"time limit must be positive, got {time_limit_s}")
        if workers < 1:
            raise WorkbenchError(f"workers must be at least 1, got {workers}")
        if patience is not None and patience < 1:
            raise WorkbenchError(f"patience must be at least 1 evaluation, got {patience}")
        self.session = session
        self.strategy = strategy
        self.spec = backend_spec
        #: A demonstration's pace (s): a new candidate at most this often (see :meth:`_paced_room`).
        self.pace_s = pace_option(backend_spec) if backend_spec.kind in PACED_BACKENDS else 0.0
        #: When the pace lets the next candidate start (monotonic s; 0: at once). A sweep hands it
        #: from one size's engine to the next, so the pace holds across sizes.
        self._next_paced = 0.0
        self._proposed_ahead: list[Config] = []  # the next candidate, asked for ahead of its turn (see _loop)
        self._broken_checked = False  # whether _broken_source has decided for this run (it stops looking then)
        self.budget = budget
        self.time_limit_s = time_limit_s
        self.workers = workers
        self.limits = limits
        self.patience = patience
        self._handed = strategy.handed()  # (see the docstring: not counted by the patience rule)
        self.output = Path(output) if output is not None else None
        self._output_seen: tuple[int, int, int] | None = None  # the output file as the run found it
        #: The final save, a save through save_output and the run's first look at its output take
        #: turns (reentrant: a sweep shares one among its sizes' runs, see share_output_lock)
        self._output_lock: threading.RLock = threading.RLock()
        #: Whether the run's end wrote the session to ``output`` (a failed save leaves the journal).
        self.saved = False
        #: Told how the run ended (its reason) just before the final save, so what it records in
        #: the session is saved with it (a sweep notes each size that ended by its own rule).
        self.on_end: Callable[[str], None] | None = None
        #: ``pool_factory(spec, workers, limits, on_start=...)`` makes the pool (default: local
        #: worker processes; see :mod:`workbench.runner.executors` for one per GPU and Ray).
        self.pool_factory: PoolFactory = pool_factory or WorkerPool
        #: The run's objective (None: latency alone, the strategy's own default); what the
        #: strategy, the patience rule and the pruning wrapper rank by. See :meth:`set_objective`.
        self.objective = objective
        self._new_objective: Objective | None = None
        #: The early-abort threshold follows the objective's latency limit when it came from it (the
        #: controller's runs): a limit relaxed mid-run stops aborting new candidates at the old one.
        self._abort_follows_objective = objective is not None and limits.max_latency_ms == objective.max_latency_ms
        #: Config ids measured before whose trials may be measured again (aborted candidates).
        self.remeasure = frozenset(remeasure)
        #: The problem this run measures at when it is not the session's (one size of a sweep):
        #: its trials carry it, and only the session's trials at it count as measured, are told
        #: to the strategy and set the best so far. ``reference`` is that size's default config.
        self.problem = dict(problem) if problem is not None else None
        self.reference = reference
        self._subscribers = Subscribers()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._paused_s = 0.0
        self._running = threading.Event()  # cleared while paused
        self._running.set()
        self._in_run = False
        self.evaluations = 0
        self.failures = 0
        self.aborted = 0
        #: indices of the trials this run evaluated: its counts (failures, aborted) are of those
        self._counted: set[int] = set()
        self.finished: RunFinished | None = None
        #: This run's trials simulated with estimated resources whose compile had not landed
        #: (by config id), re-measured by :meth:`_refine` at the end of the run.
        self._pending: dict[str, Trial] = {}
        self.refined = 0
        #: The best feasible trial under the objective (its cost, the trial): the progress line's best.
        self._shown_best: tuple[float, Trial] | None = None
        # under several weights, the ranking's best (see _progress_best): when it was last worked
        # out, over how many trials, and the trial
        self._ranked_best: tuple[float, int, Trial | None] | None = None
        #: Longest time (s) the end-of-run refinement waits for compiles (None: until they land).
        #: Trials still estimated then keep their mark; a later run continuing the session
        #: refines them (see :meth:`_loop`).
        self.refine_wait_s: float | None = None
        #: The running run's journal (None between runs): refined trials are journaled as they land,
        #: so an interrupted refinement keeps what it refined.
        self._journal: Any = None

    @property
    def unrefined(self) -> int:
        """Trials of the session still simulated with estimated resources (compile not landed)."""
        return len(self._pending)

    # --- observers -----------------------------------------------------------------------------
    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Call ``callback(event)`` (in the engine's thread) for every event; returns an unsubscriber."""
        return self._subscribers.subscribe(callback)

    def event_queue(self, maxsize: int = 0) -> "queue.Queue[Event]":
        """A queue that receives every event from now on (for consumers that poll)."""
        sink: queue.Queue[Event] = queue.Queue(maxsize)
        self.subscribe(sink.put)
        return sink

    def _emit(self, event: Event) -> None:
        self._subscribers.emit(event)

    # --- control (any thread) ------------------------------------------------------------------
    def pause(self) -> None:
        """Start no new candidates until :meth:`resume`; running ones finish and are recorded."""
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    def stop(self) -> None:
        """End the run: no new candidates; running ones finish or time out, and are recorded."""
        self._stop.set()
        self._running.set()

    def set_objective(self, objective: Objective) -> None:
        """Re-target the run (any thread): before its next proposal the strategy re-ranks what it
        has seen under ``objective``, and the patience rule counts from the new best."""
        with self._lock:
            self._new_objective = objective

    def _apply_objective(self, pool: Pool | None = None) -> None:
        with self._lock:
            objective, self._new_objective = self._new_objective, None
        if objective is None:
            return
        self.objective = objective
        if self._abort_follows_objective and objective.max_latency_ms != self.limits.max_latency_ms:
            self.limits = dataclasses.replace(self.limits, max_latency_ms=objective.max_latency_ms)
            if pool is not None:
                pool.set_abort_threshold(self.limits.max_latency_ms)
        self.strategy.set_objective(objective)
        self._proposed_ahead = []  # proposed under the objective before: the next one is asked for anew
        self._reset_progress(self._own_trials())
        self._find_shown_best()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    def _own_trials(self) -> list[Trial]:
        """The session's trials at this run's problem (all of them in a session of one size)."""
        if self.problem is None and all(t.problem is None for t in self.session.trials):
            return list(self.session.trials)
        return list(self.session.trials_at(self.problem))

    # --- the loop ------------------------------------------------------------------------------
    def run(self) -> RunFinished:
        """Tune until a stop condition; returns (and emits) the :class:`RunFinished` event."""
        if self._in_run:
            raise WorkbenchError("this engine is already running")
        self._in_run = True
        self.evaluations = self.failures = self.aborted = self.refined = 0
        self._broken_checked = False
        self._counted = set()
        self._pending = {}
        try:
            finished = self._run()
        except WorkbenchError as exc:
            finished = RunFinished("error", self.evaluations, str(exc))
        except KeyboardInterrupt as exc:  # Ctrl-C, or a stop signal taken as one: the person's doing, no error
            self.finished = RunFinished("interrupted", self.evaluations, str(exc) or "interrupted")
            self._emit(self.finished)
            raise
        except BaseException as exc:
            self.finished = RunFinished("error", self.evaluations, f"{type(exc).__name__}: {exc}")
            self._emit(self.finished)
            raise
        finally:
            self._in_run = False
        self.finished = finished
        self._emit(finished)
        return finished

    def _run(self) -> RunFinished:
        session, strategy = self.session, self.strategy
        if self.objective is not None:
            strategy.set_objective(self.objective)
        own = self._own_trials()
        if own and not strategy.measured:
            # trials from before the domains were narrowed hold values the strategy cannot place
            # (they stay in the session; what it learns from are those within its domains)
            strategy.warm_start([t for t in own if strategy.space.in_domains(t.config)])
        measured: set[str] = set(session.measured_ids(self.problem)) - self.remeasure
        # only those the strategy's space holds: a strategy counts what it has taken against the
        # space's size, and a session continued over narrowed domains or restrictions keeps trials
        # outside them, which would have it end "exhausted" with configs left unmeasured
        space = strategy.space
        strategy.exclude({trial.config.id for trial in session.trials
                          if trial.config.id in measured and space.is_valid(trial.config)})
        journal = None
        if self.output is not None:  # the journal alone is enough to recover a killed run
            with self._output_lock:  # (not in the middle of a save through save_output)
                self._output_seen = _file_identity(self.output)
            journal = _journal_for(self.output)
            journal.start(session)
        self._journal = journal
        try:
            return self._loop(journal, measured)
        except KeyboardInterrupt:
            if journal is not None and not session.trials:
                # stopped before anything was measured, with nothing there before: as after a failed
                # start, no journal of only a header, which made the plain retry need --resume
                journal.discard_if_empty()
            raise
        finally:
            self._journal = None
            if journal is not None:
                journal.close()

    def _loop(self, journal: Any, measured: set[str]) -> RunFinished:
        session, strategy = self.session, self.strategy

        self._t0 = time.monotonic()
        self._paused_s = 0.0
        self._startup_s: float | None = None  # until the first candidate started: workers booting
        self._starting_said = 0.0  # when the run last said its workers were still starting
        own = self._own_trials()
        self._reset_progress(own)
        self._find_shown_best()
        self._next_index = session.next_index()
        for trial in own:
            self._note_best(trial)
        in_flight: dict[str, Config] = {}
        exhausted = False
        reason: EndReason | None = None
        message = ""

        def on_start(config: Config, worker: str) -> None:
            if self._startup_s is None:
                self._startup_s = self._elapsed()
            if self.pace_s:  # the pace counts from when a worker starts a candidate (one may boot first)
                self._next_paced = max(self._next_paced, time.monotonic() + self.pace_s)
            self._emit(TrialStarted(config, worker))

        # Trials an earlier run left estimated at this run's problem (it ended before their compiles
        # landed): looked at once now, so their compiles start (or their cached figures refine them
        # at once), and refined with this run's own at its end.
        self._pending = {t.config.id: t for t in own if t.measurement.resources_pending}
        self._emit(self._progress())
        with self.pool_factory(self.spec, self.workers, self.limits, on_start=on_start) as pool:
            if self._pending:
                self._refine(pool, again=False)
            default = session.default_config if self.problem is None else self.reference
            # The default config is the reference every result is compared with: it is measured
            # first and alone, so it is trial 0 whatever the number of workers.
            reference_id = default.id if default is not None else None
            space = session.space if self.problem is None else strategy.space
            valid = default is not None and (space is None or space.is_valid(default))
            if default is not None and valid and default.id not in measured:
                # at once, unless the size before in a sweep has just started its last candidate: its
                # pace is kept; a stop or the time limit ends the wait
                while time.monotonic() < self._next_paced and not self._stop.is_set():
                    if self.time_limit_s is not None and self._elapsed() >= self.time_limit_s:
                        break
                    self._stop.wait(min(POLL_S, max(0.0, self._next_paced - time.monotonic())))
                # nor while paused: a run paused as it started (a sweep's next size) measured its
                # default config all the same, with the button reading "Resume"
                while self.paused and not self._stop.is_set():
                    self._wait_paused()
                if (self.budget is None or self.budget > 0) and not self._stop.is_set():
                    in_flight[default.id] = default
                    strategy.exclude((default.id,))
                    pool.submit(default)
                    self._next_paced = time.monotonic() + self.pace_s
            while True:
                if reason is None:
                    reason = self._stop_reason(exhausted and not in_flight, started=bool(in_flight) or self.evaluations > 0)
                if reason is not None and not in_flight:
                    if reason == "time_limit" and self.budget is not None and self.evaluations >= self.budget:
                        # every evaluation of the budget had started before the limit, and the
                        # last ones ended after it: the budget is what ended the run
                        reason = "budget"
                    break
                self._apply_objective(pool)
                paced_out = False  # whether the pace alone kept an idle worker from a candidate now
                if reason is None and not self.paused and reference_id not in in_flight:
                    room = self._paced_room(pool.idle_count)
                    paced_out = bool(self.pace_s) and room == 0 and pool.idle_count > 0
                    if self.budget is not None:
                        room = min(room, self.budget - self.evaluations - len(in_flight))
                    if room > 0:
                        configs = self._proposed_ahead or self._ask(room, measured, in_flight)
                        self._proposed_ahead = []
                        for config in configs:
                            in_flight[config.id] = config
                            pool.submit(config)
                        if configs and self.pace_s:
                            self._next_paced = max(self._next_paced, time.monotonic() + self.pace_s)
                        exhausted = not configs and not in_flight
                    elif self.pace_s and not in_flight and not self._proposed_ahead and pool.idle_count:
                        # waiting for the pace with every result in: the next candidate is asked for
                        # now (the strategy has seen everything), held until its turn, so a strategy
                        # with nothing left ends the run at once instead of a pace later
                        self._proposed_ahead = self._ask(1, measured, in_flight)
                        exhausted = not self._proposed_ahead
                    if exhausted:
                        continue
                if not in_flight:
                    if pool.error is not None:  # no worker can start: stop instead of spinning
                        reason, message = "error", str(pool.error)
                    elif self.paused:
                        self._wait_paused()
                    else:  # waiting for capacity (a worker being replaced), or for the pace's next turn
                        # (no longer than that turn: a pace under the poll's period waited a whole
                        # period, so any --delay below 0.05 s paced at 0.05 s; and not at all once
                        # the turn has come, which a loaded machine reached before this line; a
                        # wait for capacity is a whole period, not a spin)
                        turn = self._next_paced - time.monotonic() if paced_out else POLL_S
                        pool.poll(max(0.0, min(POLL_S, turn)))
                    continue
                try:
                    results = pool.results(timeout=POLL_S)
                except WorkbenchError as exc:  # a worker could not start: nothing more can run
                    reason, message = "error", str(exc)
                    in_flight.clear()
                    continue
                if results:
                    self._record(results, measured, in_flight, journal)
                    if reason is None and (broken := self._broken_source()) is not None:
                        reason, message = "error", broken
                else:
                    self._say_starting(pool)
            if reason in REFINE_AFTER:
                self._refine(pool, wait_s=self.refine_wait_s)
        self._save_strategy_state()
        if self.on_end is not None:
            self.on_end(reason)
        if self.output is not None:
            from workbench.core.domain.session import save_session

            if reason == "error" and not session.trials:
                # Nothing was measured, and nothing was there before: a session file would hold only
                # settings the failed start already refused, and would make the retry need --force.
                # (With --force the session that was at the output is already its .bak copy.)
                journal.discard_if_empty()
            else:
                with self._output_lock:
                    kept = self._keep_replaced_output()
                    save_session(session, self.output)
                self.saved = True
                if kept is not None:
                    note = (f"{self.output} was replaced by something else during the run; that is kept as "
                            f"{kept.name}, the run's session is at {self.output.name}")
                    log.warning("%s", note)
                    message = f"{message or self._describe(reason)}; {note}"
        return RunFinished(reason, self.evaluations, message or self._describe(reason))

    def _broken_source(self) -> str | None:
        """Why the run stops when its template's source cannot compile, else None: the template's
        default config (its point of comparison, measured first) failed to compile, and so did every
        other trial of the session, at least :data:`BROKEN_SOURCE_AFTER` distinct configs holding two
        values or more of every slot that has them, all with the very same message. Without a
        default config nothing is claimed: a failure under some combination of slot values (an
        ``#error`` under ``BLOCK_SIZE == 64 && ITEMS == 2``) says the same for every config it hits,
        and the configs that compile are searched for. Only where this run compiles the source
        (:data:`COMPILING_BACKENDS`), and never in one size of a sweep (a ``static_assert`` on the
        problem fails one size, not the others). Looked at after each result until the session had
        another outcome or :data:`BROKEN_SOURCE_LOOKS` trials."""
        if self._broken_checked or self.evaluations < BROKEN_SOURCE_AFTER:
            return None
        trials = self.session.trials
        default = self.session.default_config
        if (self.spec.kind not in COMPILING_BACKENDS or self.problem is not None or default is None
                or len(trials) > BROKEN_SOURCE_LOOKS):
            self._broken_checked = True
            return None
        messages = {t.measurement.message for t in trials}
        if len(messages) != 1 or any(t.status is not Status.COMPILE_ERROR for t in trials):
            self._broken_checked = True  # another outcome: the source compiles somewhere
            return None
        if default.id not in {t.config.id for t in trials} or len({t.config.id for t in trials}) < BROKEN_SOURCE_AFTER:
            return None
        space = self.session.space
        for slot in space.slots if space is not None else ():
            if len(slot.values) > 1 and len({repr(t.config.get(slot.name)) for t in trials}) < 2:
                return None  # every failure shares this slot's value: the value may be the cause
        self._broken_checked = True
        message = messages.pop()
        # an option NVRTC does not know fails every config alike: the source is not what to fix then
        what = "the template's compile options" if _OPTION_ERROR.search(message) else "the source"
        return (f"the template's default config and {len(trials) - 1} other configs all failed to compile with the "
                f"same error ({message}): fix {what} and run again")

    def save_output(self, save: Callable[[], object]) -> None:
        """Run ``save``, a save of this run's output made elsewhere in this process (the window's
        Save while the run goes on), so that the run's final save knows the file for its own.

        Why: the final save keeps a file that changed under the run as ``.bak`` (see
        :meth:`_keep_replaced_output`); a save of this program's own must not count as such a change,
        and one made as the final save looks at the file must not slip between its look and its write."""
        with self._output_lock:
            save()
            if self.output is not None:
                self._output_seen = _file_identity(self.output)

    def share_output_lock(self, lock: threading.RLock) -> None:
        """Take turns on the output under ``lock``, shared with whoever else saves it in this
        process (a sweep, between its sizes' runs), instead of this run's own."""
        self._output_lock = lock

    def _keep_replaced_output(self) -> Path | None:
        """The lock on the output keeps other runs of this program away, not a copy or an editor:
        when the file changed since the run started (or since this process last saved it, see
        :meth:`save_output`), keep it as ``.bak`` before the final save writes over it (its path, or
        None when nothing was kept). Also when it still holds this session: another program's edit
        of it (its notes, a trial taken out) is the person's work, and the final save would drop it."""
        assert self.output is not None
        now = _file_identity(self.output)
        if now is None or now == self._output_seen:
            return None
        from workbench.core.io.output_files import keep_backup

        return keep_backup(self.output)

    def _stop_reason(self, exhausted: bool, started: bool = True) -> EndReason | None:
        """Why the run stops now, or None. A time limit counts once this run has an evaluation
        finished or under way (``started``): a limit shorter than the run's start measured the
        default config of a template (submitted first) and nothing of a recording, which has none."""
        if self._stop.is_set():
            return "stopped"
        if self.budget is not None and self.evaluations >= self.budget:
            return "budget"
        if self.time_limit_s is not None and started and self._elapsed() >= self.time_limit_s:
            return "time_limit"
        if self.patience is not None and self._since_improvement >= self.patience:
            return "plateau"
        if exhausted:
            return "exhausted"
        return None

    def _describe(self, reason: EndReason) -> str:
        return {
            "stopped": "stopped on request",
            "budget": f"evaluation budget of {self.budget} reached",
            "time_limit": f"time limit of {self.time_limit_s:g} s reached" if self.time_limit_s else "time limit reached",
            "plateau": f"no improvement in {self.patience} evaluations",
            "exhausted": "the strategy has nothing left to propose",
        }.get(reason, reason)

    def _reset_progress(self, trials: Sequence[Trial]) -> None:
        """What counts as progress for ``patience`` from here: the best cost of ``trials``, or in a
        multi-objective run their Pareto front (the scalar cost there is latency alone, which is
        not what such a run improves, and a run whose front grew stopped as a plateau)."""
        self._best = math.inf
        self._front: list[list[float]] = []
        self._since_improvement = 0
        for trial in trials:
            self._improves(trial)
        self._since_improvement = 0

    def _improves(self, trial: Trial) -> bool:
        """Whether ``trial`` is progress: a lower cost, or a feasible point no earlier one dominates
        or equals (it joins the front of a multi-objective run; the points it dominates leave).
        Until such a run's front has a point, a lower cost (a smaller violation) is progress, as in
        a run of one score."""
        objective = self.strategy.objective
        multi = bool(getattr(objective, "objectives", ()))
        if not multi or (not self._front and not objective.feasible(trial)):  # type: ignore[attr-defined]
            # one score; or a front with no point yet, where a smaller violation is the progress
            score = objective(trial)
            if score < self._best:
                self._best = score
                return True
            return False
        if not objective.feasible(trial):  # type: ignore[attr-defined]
            return False
        point = objective.values(trial)  # type: ignore[attr-defined]
        if not all(math.isfinite(v) for v in point):
            return False
        if any(all(p <= v for p, v in zip(other, point)) for other in self._front):
            return False
        self._front = [other for other in self._front if not all(v <= p for p, v in zip(other, point))]
        self._front.append(point)
        return True

    def _elapsed(self) -> float:
        return time.monotonic() - self._t0 - self._paused_s

    @property
    def paused_s(self) -> float:
        """Seconds the run so far has spent paused (left out of its running time)."""
        return self._paused_s

    def _wait_paused(self) -> None:
        """Nothing is running: sleep until resumed (or briefly, to re-check the stop conditions)."""
        if self.paused:
            started = time.monotonic()
            self._running.wait(POLL_S)
            self._paused_s += time.monotonic() - started

    def _ask(self, n: int, measured: set[str], in_flight: dict[str, Config]) -> list[Config]:
        """Up to ``n`` configs nobody has measured or is measuring; [] when the strategy is done."""
        for _ in range(MAX_DUPLICATE_ROUNDS):
            proposed = self.strategy.ask(n)
            if not proposed:
                return []
            fresh: list[Config] = []
            for config in proposed:
                if config.id in measured or config.id in in_flight or config in fresh:
                    self.strategy.exclude((config.id,))  # known: never propose it again
                    continue
                fresh.append(config)
            if fresh:
                return fresh
        return []

    def _record(self, results: list[Result], measured: set[str], in_flight: dict[str, Config], journal: Any) -> None:
        now = time.time()
        trials: list[Trial] = []
        for config, measurement, timings, worker in results:
            trial = Trial(
                index=self._next_index,
                config=config,
                measurement=measurement,
                # (a replayed recording's timings may be any size: a start before any calendar's
                # first year made a session its loader refused)
                started_at=max(now - timings.get("total_s", 0.0), -MAX_EPOCH_S),
                finished_at=now,
                timings=timings,
                worker=worker,
                problem=self.problem,
            )
            self.session.add(trial)
            in_flight.pop(config.id, None)
            measured.add(config.id)
            # counted with the session's trials, before the journal: a journal that cannot take it
            # (a full disk) ends the run, and its end said one evaluation fewer than it measured
            self.evaluations += 1
            self.aborted += int(measurement.status is Status.ABORTED)
            self.failures += int(measurement.status.is_failure)
            if journal is not None:
                journal.append(trial)
            self._counted.add(trial.index)
            if self._improves(trial):
                self._since_improvement = 0
            elif config.id not in self._handed:
                self._since_improvement += 1
            self._note_best(trial)
            self._next_index += 1
            trials.append(trial)
            if measurement.resources_pending:
                self._pending[config.id] = trial
            self._emit(TrialFinished(trial))
        self.strategy.tell(trials)
        self._emit(self._progress())

    def hand_pace_from(self, earlier: "Engine") -> None:
        """Keep ``earlier``'s pace clock (the size before in a sweep): its last candidate's turn
        still counts, so the pace holds across the sizes of a sweep."""
        self._next_paced = max(self._next_paced, earlier._next_paced)

    def _paced_room(self, idle: int) -> int:
        """How many new candidates may start now: every idle worker's worth, or with a pace
        (``delay_s`` of a simulated run or a replay, which otherwise go through a hundred configs in
        a second) one per ``pace_s`` seconds, whatever the number of workers, the first at once. The pace is the
        loop's, not the evaluation's: a stop or the time limit ends the wait at once, and neither
        the end-of-run refinement nor a cost model's predictions (simulator evaluations too) wait."""
        if not self.pace_s:
            return idle
        return min(idle, 1) if time.monotonic() >= self._next_paced else 0

    def _refine(self, pool: Pool, wait_s: float | None = None, again: bool = True) -> None:
        """Re-measure the trials simulated with estimated resources, now that their compiles have
        had the run's length to land; each refined trial replaces its estimate (same index).

        The backend waits for such a config's compile the second time it sees it; with ``again``
        a config that comes back still estimated (a worker seeing it for the first time, e.g. one
        left by an earlier run, or a compile that outlasted the worker's wait) is sent once more,
        and with ``wait_s`` again until that runs out. The strategy is not told again (it has moved
        on); the session, the views and the saved file get the refined figures. A stop request,
        or ``wait_s`` seconds passing, ends the pass: what is still compiling is abandoned with
        the workers (the pool closes next) and its trials keep their mark. Trials go best
        first (the backend compiles the most promising first, too).
        """
        deadline = None if wait_s is None else time.monotonic() + max(0.0, wait_s)
        # best first: when the wait runs out, the trials the answer is read from are the refined ones
        queue_ = sorted(self._pending.values(), key=self.strategy.objective)
        in_flight: dict[str, Trial] = {}
        sent_again: set[str] = set()
        while (queue_ or in_flight) and not (self._stop.is_set() and not in_flight):
            if deadline is not None and time.monotonic() >= deadline:
                return
            while queue_ and pool.idle_count > 0 and not self._stop.is_set():
                trial = queue_.pop(0)
                in_flight[trial.config.id] = trial
                pool.submit(trial.config)
            if not in_flight:
                if self._stop.is_set():
                    break
                pool.poll(POLL_S)
                continue
            try:
                results = pool.results(timeout=POLL_S)
            except WorkbenchError:
                return
            for config, measurement, timings, worker in results:
                before = in_flight.pop(config.id, None)
                if before is None:
                    continue
                # sent again once; with a wait given, until it runs out (each worker waits for the
                # compile, so this does not spin): ending the pass early left trials estimated that a
                # rerun refined in seconds
                if (again and measurement.resources_pending and (config.id not in sent_again or deadline is not None)
                        and not self._stop.is_set()):
                    sent_again.add(config.id)
                    queue_.append(before)
                    continue
                self._replace(before, measurement, timings, worker)
            if results:
                self._emit(self._progress())

    def _replace(self, before: Trial, measurement: Any, timings: dict[str, float], worker: str) -> None:
        if measurement.resources_pending or measurement.status.value in ("timeout", "crashed"):
            return  # the compile has still not landed (or the worker died): keep the marked estimate
        details = {**measurement.details, "refined_from_estimate": True}
        estimated = before.metric("latency_ms")
        if math.isfinite(estimated):
            details["estimated_latency_ms"] = estimated
        refined = dataclasses.replace(
            before, measurement=dataclasses.replace(measurement, details=details),
            timings={**before.timings, "refine_s": timings.get("total_s", 0.0)}, worker=worker,
            finished_at=time.time())
        self._ranked_best = None  # (counted by trials, a trial replaced in place left it stale)
        trials = self.session.trials
        for position in range(len(trials) - 1, -1, -1):
            if trials[position] is before:
                trials[position] = refined
                break
        self._pending.pop(before.config.id, None)
        if self._journal is not None:  # under its index: a reader of the journal takes the later record
            self._journal.append(refined)
        self.refined += 1
        # A refined trial can fail where its estimate ran (a launch the real resources do not fit),
        # and the reverse; an abort can come or go with the compiled figures. A trial an earlier run
        # left was never in this run's counts: only what its refinement reveals is added.
        failed = int(measurement.status.is_failure) - int(before.measurement.status.is_failure)
        aborted = int(measurement.status is Status.ABORTED) - int(before.measurement.status is Status.ABORTED)
        ours = before.index in self._counted
        self.failures += failed if ours else max(failed, 0)
        self.aborted += aborted if ours else max(aborted, 0)
        self._note_best(refined, replaced=before)
        self._emit(TrialRefined(before, refined))

    def _say_starting(self, pool: Pool) -> None:
        """While the workers start with none ready, a progress event every
        :data:`STARTING_NOTE_EVERY_S` seconds from that long on, saying so: a benchmark whose
        module hangs as a worker imports it held a run silent for the whole start allowance."""
        if self._startup_s is not None:  # a candidate has started: whatever the wait is now, it is not this
            return
        starting = pool.starting_s
        if starting is None or starting < STARTING_NOTE_EVERY_S:
            return
        now = time.monotonic()
        if now - self._starting_said < STARTING_NOTE_EVERY_S:
            return
        self._starting_said = now
        self._emit(dataclasses.replace(self._progress(), starting_s=starting))

    def _progress(self) -> Progress:
        elapsed = self._elapsed()
        done = self.evaluations
        eta: float | None = None
        if self.budget is not None and done > 0:
            # the rate since the first candidate started: the workers' start (seconds for Ray, a
            # CUDA context or a recording to read) is paid once, and counted per evaluation it made
            # the first estimates of a short run ten times too long
            working = elapsed - (self._startup_s or 0.0)
            eta = max(working / done, self.pace_s) * max(0, self.budget - done)
        if self.time_limit_s is not None:
            left = max(0.0, self.time_limit_s - elapsed)
            eta = left if eta is None else min(eta, left)
        shown = self._progress_best()
        best = shown.metric("latency_ms") if shown is not None else None
        return Progress(done, self.budget, self.failures, elapsed, eta, best, len(self._pending), self.refined,
                        aborted=self.aborted)

    def _progress_best(self) -> Trial | None:
        """The trial the progress line calls best: the one the summary will recommend.

        The search's cost is that trial's under latency alone, one weight, or constraints. Under
        several weights the recommendation is the ranking's score, relative to the best seen of
        each metric, which can order two trials otherwise than the search's fixed cost (the line
        said 10.01 ms while the summary recommended 0.63 ms): the ranking is worked out again,
        after every trial while there are few, at most every :data:`RANKED_BEST_EVERY_S` seconds
        beyond :data:`RANKED_BEST_ALWAYS` trials (it costs a pass over them)."""
        objective = self.objective
        if objective is None or len(objective.weights.active()) < 2 or objective.objectives:
            return self._shown_best[1] if self._shown_best is not None else None
        trials = self._own_trials()
        now = time.monotonic()
        known = self._ranked_best
        if known is None or (known[1] != len(trials) and (len(trials) <= RANKED_BEST_ALWAYS
                                                          or now - known[0] >= RANKED_BEST_EVERY_S)):
            ranking = rank(trials, objective.constraints, objective.weights)
            known = self._ranked_best = (now, len(trials), trials[ranking.best] if ranking.best is not None else None)
        return known[2]

    def _find_shown_best(self) -> None:
        """The best feasible trial at this run's problem under the objective in force (what the
        progress line reports), from scratch: at the start and when the objective changes."""
        self._shown_best = None
        self._ranked_best = None
        for trial in self._own_trials():
            self._note_best(trial)

    def _note_best(self, trial: Trial, replaced: Trial | None = None) -> None:
        """Keep the progress line's best up to date with a new trial, or with one re-measured in
        place (``replaced``: its earlier reading; a best that got worse is looked for again).

        Why the objective's best and not the lowest latency: under constraints or weights the
        fastest trial is often not the recommendation, and a figure the summary then contradicts
        ("best 0.23 ms" while running, "best 0.25 ms" at the end) misleads."""
        if replaced is not None and self._shown_best is not None and self._shown_best[1] is replaced:
            self._find_shown_best()
            return
        cost = self.strategy.objective(trial)
        if not trial.ok or cost >= INFEASIBLE or not math.isfinite(trial.metric("latency_ms")):
            return
        if self._shown_best is None or cost < self._shown_best[0]:
            self._shown_best = (cost, trial)

    def _save_strategy_state(self) -> None:
        info = getattr(self.session, "strategy", None)
        if isinstance(info, dict):
            info.setdefault("name", self.strategy.name)
            info.setdefault("seed", self.strategy.seed)
            info["state"] = self.strategy.state()

