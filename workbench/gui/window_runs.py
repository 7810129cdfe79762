"""The main window's runs: Start (a new session, or the one shown continued), Stop, Pause, the
progress, a run's end, and re-measuring aborted candidates, all through the run controller.

A part of :class:`~workbench.gui.main_window.MainWindow` kept in a module of its own, as its files
(:mod:`~workbench.gui.window_files`) and exports (:mod:`~workbench.gui.window_exports`) are: the
window inherits it. A run counts as going from its launch until the window has shown its end
(:attr:`running`), not merely until its thread returns.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QAbstractSpinBox, QApplication, QLineEdit, QMessageBox

from workbench.backends.base import PACED_BACKENDS
from workbench.core.fs import resolved
from workbench.core.errors import Cancelled, WorkbenchError, counted
from workbench.core.domain.objective import DEFAULT_WEIGHTS, Constraints, Weights
from workbench.core.domain.sizes import problems_of
from workbench.core.io.session_lock import SessionLock
from workbench.gui.bridge import EngineThread
from workbench.gui.failure_log import FailureLog
from workbench.gui.objective_panel import ObjectivePanel
from workbench.gui.results_table import ResultsTable
from workbench.gui.run_panel import available_kernels
from workbench.gui.slots_panel import SlotsPanel
from workbench.gui.text import window_message
from workbench.gui.window_files import WindowFiles
from workbench.runner.events import END_WORDS

if TYPE_CHECKING:
    from workbench.core.domain.session import Session
    from workbench.gui.elided_label import ElidedTabs
    from workbench.runner.request import RunRequest

_log = logging.getLogger(__name__)

#: File actions that would replace the shown session: none of them may while a run writes into it.
SESSION_ACTIONS = {"new": "New session", "open": "Open", "import_kt": "Import"}
#: The status bar's title of a refused Start (a run that starts next clears it).
START_REFUSED = "Cannot start the run"
#: The choices of a run request that name another measurement than the session shown, with their
#: words in the toolbar's note (see MainWindow._update_next_start).
_NEW_SESSION_CHOICES = (("kernel", "kernel"), ("backend", "backend"), ("gpu_model", "GPU"), ("replay", "another recording"))


def _path_forms(name: str) -> set[Path]:
    """A file named in the kernel field as it resolves now and as written: a session's python file
    is remembered by both, so a link changed since still counts (``resolved`` survives a link loop)."""
    return {resolved(name), Path(os.path.abspath(name))}


class WindowRuns(WindowFiles):
    """The run actions of the main window, over the run controller."""

    # What the window holds (MainWindow sets them) and the window's parts these actions use: declared
    # here for the type checker, defined by MainWindow, which overrides every method below that raises.
    run_done: Signal
    trusted_code: set[Path]
    results: ResultsTable
    failures: FailureLog
    bottom_tabs: ElidedTabs
    objective_panel: ObjectivePanel
    slots_panel: SlotsPanel
    actions_by_name: dict[str, Any]
    _run_closed: bool
    _live_session: Session | None
    _retargeted: str
    _picked_best: tuple[Session | None, int | None]
    _session_code: set[Path]
    _busy_shortcuts: list[Any]

    def _kernel_folder_opened(self, name: str, folder: Path) -> None:
        raise NotImplementedError

    def _from_session(self, name: str) -> bool:
        raise NotImplementedError

    def _shows_session_kernel(self, name: str) -> bool:
        raise NotImplementedError

    def refresh(self) -> None:
        raise NotImplementedError

    def _show_timing_badge(self) -> None:
        raise NotImplementedError

    @property
    def running(self) -> bool:
        """From a run's launch until the window has shown its end (see ``_run_closed``)."""
        return self.engine_thread is not None and not self._run_closed

    # --- runs ----------------------------------------------------------------------------------
    def _on_start(self) -> None:
        commit_typed_value()  # (F5 leaves the focus in the box typed into: what it shows is what runs)
        try:
            self.start_run(self.toolbar.request())
        except Cancelled as exc:
            self.statusBar().showMessage(window_message(exc), 8000)
        except WorkbenchError as exc:
            self._error(START_REFUSED, window_message(exc))

    def start_run(self, run: dict[str, Any]) -> None:
        """Start a run from a request (toolbar or automation) through the run controller.

        The open session is continued, with its own backend, kernel and options, when the request
        names what it measured (the controls as the session set them, or the same kernel, problem,
        code and device); otherwise a new session starts, after asking to save unsaved trials.
        """
        if self.running:
            raise WorkbenchError("a run is already going; stop it first")
        if self.opening is not None:  # it replaces the session this run would continue
            raise WorkbenchError(self._opening_refusal())
        # files the run reads as copies of the person's (the kernel editor's draft of their
        # reference and headers): named as the person knows them when the run ends in an error
        run = dict(run)
        copied_from: dict[str, str] = {}
        for copy, original in (run.pop("copied_from", None) or {}).items():
            # as the run may name it: given, absolute, or through the links of a folder above it
            for spelling in (str(copy), os.path.abspath(copy), os.path.realpath(copy)):
                copied_from[spelling] = str(original)
        folders = run.get("kernel_dirs") or ()
        name = str(run.get("kernel") or "")
        if not folders and name in self.toolbar.kernel_folders and name not in available_kernels():
            # a template the kernel picker lists from the editor's folder runs from there, as picking it
            # does (gui --run NAME of such a template failed as an unknown kernel); a shipped name
            # stays the shipped template, as tune NAME runs it
            folders = [self.toolbar.kernel_folders[name]]
            run = {**run, "kernel_dirs": folders}
        if run.get("kernel") and folders:  # the person's folder (the editor's drafts, gui --kernel-dir):
            # its template renders in the source view and Compare from there
            from workbench.runner.plan import locate_kernel

            try:
                found = locate_kernel(str(run["kernel"]), folders)
            except WorkbenchError:  # the start says why, below
                found = None
            if found is not None and found.kind == "template" and any(
                    found.path.parent == Path(folder).resolve() for folder in folders):
                self._kernel_folder_opened(found.name, found.path.parent)
        try:
            shown: dict[str, Any] | None = self.toolbar.request()  # put back when the run is refused
        except WorkbenchError:  # a field the person is still typing: nothing to put back
            shown = None
        try:
            # the controls show what runs, whoever started it; the options edited for the other
            # strategies stay (a Start reset them, while the saved session kept them: the same
            # session ran with other options depending on whether it had been reopened)
            self.toolbar.apply(run, keep_edits=True)
        except WorkbenchError:
            pass
        try:
            self._start(run, copied_from)
        except BaseException:
            if shown is not None:  # a refused run leaves the controls as they were, not showing it
                try:
                    self.toolbar.apply(shown, keep_edits=True)  # (the other strategies' edits too)
                except WorkbenchError:
                    pass
            raise

    def _start(self, run: dict[str, Any], copied_from: dict[str, str]) -> None:
        """:meth:`start_run` once the controls show ``run`` (``copied_from``: see :meth:`_launch`)."""
        from workbench.runner import autosave
        from workbench.runner.controller import prepare_run

        current = self.model.session
        discarded = False
        request = self._run_request(run, current)
        continuing = self.continues_session(run)
        if not continuing:
            # what the status bar says is about the session shown (its continue note stayed over a
            # fresh session's run); what is said from here (the save asked for, an autosave that
            # could not be removed, the new session's own notes) stays
            self.statusBar().clearMessage()
        named = str(run.get("kernel") or "")
        if not continuing and named.endswith(".py") and self._from_session(named):
            self._confirm_code(Path(named))  # a new run of the file a session put in the field: asked as a continued one is
        if continuing and current is not None:
            # the problem field goes to the controller, which refuses one the session is not at
            # (or, for a sweep, one no swept size measures) rather than the run ignoring it
            request = dataclasses.replace(self._continue_request(run, current), problem=run.get("problem") or None)
        elif current is not None and (answer := self._maybe_save(drop=False)) is False:
            raise Cancelled("run not started: the current session has unsaved trials")
        else:
            discarded = current is not None and answer is None  # dropped once the new run is under way
            # the objective in force: the shown session's, or what the panel set before any run
            same_kernel = current is not None and str(run.get("kernel") or "") == current.kernel
            weights = self.model.weights if same_kernel or current is None else \
                _carried_weights(self.model.weights, self.model.constraints)
            request = dataclasses.replace(request, constraints=self.model.constraints, weights=weights)
        if continuing and current is not None:
            output, held = self._run_output(current.kernel)
        else:
            output = autosave.new_autosave_path(run.get("kernel") or Path(str(run.get("replay") or "session")).stem)
            held = SessionLock(output).acquire()
        before = ""
        if continuing and current is not None:  # the controls are the truth for this run, "no time limit" included
            current.run = dataclasses.replace(current.run, time_limit_s=run.get("time_limit_s"))
            before = str((current.strategy or {}).get("name") or "")
        try:
            prepared = prepare_run(request, current if continuing else None, output, held=held)
        except WorkbenchError as exc:
            if held is not None and held is not self._autosave_lock:  # taken for this run only
                held.release()
            if not continuing:  # an objective set in the panel, or kept from the session shown: say so
                raise _panel_objective_named(exc, request, kept=current is not None) from None
            raise
        except BaseException:
            if held is not None and held is not self._autosave_lock:  # taken for this run only
                held.release()
            raise
        try:  # until the engine thread has it, nothing may leave the prepared run holding its file's lock
            if continuing:
                self.model.sync()  # trials another run added to the file meanwhile (see catch_up)
            if prepared.spec.kind == "python" and not continuing:  # the person picked this file to run
                self.trusted_code.add(Path(str(prepared.spec.options.get("path", ""))).resolve())
            if not continuing:
                if discarded:  # the person's Discard, now that the new session replaces the shown one
                    self._drop_autosave()
                self.path = None
            if self.path is None:  # a new session's autosave replaces the previous one's, which stays for recovery
                self._set_autosave(output, held)
            self._asked_budget = run.get("budget")
            if not continuing:
                self._budget_step = run.get("budget")
                self.model.set_session(prepared.session)
                if "problem" not in run:  # a request without one runs the default problem: the field says so,
                    self.toolbar.apply({"problem": {}})  # not what was typed there before (the next Start reads it)
            self.model.dirty = self.path is None or self.model.dirty
            self._shown_request = self._choices(self.toolbar.request())
            self._update_next_start()
            # what the start has to say replaces a refusal of an earlier Start, which stayed on show
            # beside the run it no longer applied to: the run's warnings (a strategy it fell back from,
            # a weight on a metric nothing reports ...), and which GPU pruning models
            # counted now: the trials another run added to the file were taken in as the run was prepared
            noted = (before, str(run.get("strategy") or ""), len(problems_of(prepared.session)))
            continued_note = _continued_note(len(prepared.session.trials), *noted) if continuing else ""
            said = ([continued_note] if continued_note else []) + [f"warning: {w}" for w in prepared.warnings]
            cost_model_note = (prepared.session.extra.get("cost_model") or {}).get("note")
            if cost_model_note:
                said.append(f"cost model: {cost_model_note}")
            if said:
                self.statusBar().showMessage("; ".join(said), 15000)
                self._started_note, self._started_noted = continued_note, noted
            elif self.statusBar().currentMessage().startswith(START_REFUSED):
                self.statusBar().clearMessage()  # (a new session's own note, shown just now, stays)
        except BaseException:
            prepared.release()
            if held is not None and held is not self._autosave_lock:
                held.release()
            raise
        self._launch(prepared, copied_from)

    def _run_output(self, kernel: str) -> tuple[Path, SessionLock | None]:
        """Where a run continuing the shown session writes, with the lock the window lends it: the
        session's file (the run takes its own lock), else its autosave, whose lock the window holds
        (taken now for a session that has none yet, e.g. one imported). The caller releases a lock
        taken here if the run does not start (it is not yet :attr:`_autosave_lock`)."""
        from workbench.runner import autosave

        if self.path is not None:
            return self.path, None
        if self.autosave_path is None:
            path = autosave.new_autosave_path(kernel)
            return path, SessionLock(path).acquire()
        if self._autosave_lock is None or not self._autosave_lock.held:
            self._autosave_lock = SessionLock(self.autosave_path).acquire()  # e.g. given back on closing
        return self.autosave_path, self._autosave_lock

    def _set_autosave(self, path: Path | None, lock: SessionLock | None = None) -> None:
        """The autosave of the unsaved session shown is now ``path`` (None: none), whose lock
        ``lock`` the window holds from now on. The lock of an autosave no longer shown is let go:
        the file stays, and is a crashed run to recover for any window (this one included)."""
        previous = self._autosave_lock
        self.autosave_path, self._autosave_lock = path, lock
        if previous is not None and previous is not lock:
            previous.release()

    def _launch(self, prepared: Any, copied_from: dict[str, str] | None = None) -> None:
        """Run a prepared run (the controller's ``Run``) in the engine thread, the controls following
        it. ``copied_from``: copies the run reads -> the files they were copied from (see
        :meth:`_as_chosen`)."""
        self._copied_from = dict(copied_from or {})
        self.engine_thread = EngineThread(prepared, self)
        self._run_closed = False
        # its timings are measured now (a session opened from a file was measured earlier)
        self._live_session = getattr(prepared, "session", None)
        self._show_timing_badge()
        self._progress = None  # an earlier run's last count is not this one's
        try:
            self.engine_thread.progress.connect(self._on_progress)
            self.engine_thread.run_finished.connect(self._on_run_finished)
            self.toolbar.set_running(True)
            self._update_next_start()
            self.objective_panel.set_run_active(True)
            self._set_session_actions()
            self.toolbar.show_compiles(0, 0)  # a new run's compiles: none yet (an earlier run's are not its)
            self.toolbar.show_progress(0, prepared.budget, 0, None)
            self.engine_thread.start()
        except BaseException:  # no thread will end this run: it is over, its session file unlocked
            self._run_closed = True
            self.toolbar.set_running(False)
            self._update_next_start()
            self.objective_panel.set_run_active(False)
            self._set_session_actions()
            prepared.release()
            raise

    def show_in_table(self, row: int) -> None:
        """The results table brought up on trial ``row`` (the best card's *Show in table*): its tab
        shown, the row selected and scrolled to, filters that hide it cleared, and said so."""
        self.bottom_tabs.setCurrentWidget(self.results)
        cleared = self.results.show_row(row)
        # the keyboard goes with it: it stayed on the button, a Tab stop away from the row shown
        self.results.view.setFocus(Qt.FocusReason.OtherFocusReason)
        if cleared:
            self.statusBar().showMessage(f"trial {self.model.trials[row].index}: {cleared}", 8000)

    def _set_session_actions(self) -> None:
        """New, Open, Open recent and Import replace the shown session: disabled while a run writes
        into it (their tool tips say why), enabled again when it has ended."""
        running = self.running
        for name in SESSION_ACTIONS:
            action = self.actions_by_name[name]
            action.setEnabled(not running)
            action.setStatusTip("a run is going: stop it first" if running else "")
            action.setToolTip(action.text().replace("&", "") + (" (stop the run first)" if running else ""))
        for shortcut in self._busy_shortcuts:
            shortcut.setEnabled(running)
        self._update_recent_menu()

    def _refused_during_run(self, what: str) -> bool:
        """Say in the status bar that ``what`` waits for the run to end, or for the file being
        opened to be shown; True while either goes."""
        if self.running:
            self.statusBar().showMessage(f"{what}: a run is going; stop it first (its trials go to its session)",
                                         10000)
            return True
        opening = self.opening
        if opening is not None:
            self.statusBar().showMessage(f"{what}: {self._opening_refusal()}", 10000)
            return True
        return False

    def remeasure_aborted(self) -> None:
        """Measure again the aborted candidates the constraints in force no longer rule out (the
        "Re-measure aborted" button; the CLI's ``tune --remeasure-aborted``), through the run
        controller: new trials go beside the aborted ones in this session's file."""
        from workbench.runner.controller import RunRequest, nothing_to_remeasure, remeasure_aborted

        if self.running:
            raise WorkbenchError("a run is already going; re-measure when it ends")
        if self.opening is not None:  # it replaces the session the re-measured trials go to
            raise WorkbenchError(self._opening_refusal())
        if self.model.session is None:
            raise WorkbenchError("no session to re-measure")
        session = self.model.session
        request = RunRequest(constraints=self.model.constraints, weights=self.model.weights)
        nothing = nothing_to_remeasure(session, request)
        if nothing is not None:  # the controller's rule, said before anything is asked of the person
            self.statusBar().showMessage(nothing, 10000)
            return
        if self.path is None and self.autosave_path is None:
            raise WorkbenchError("save the session first: re-measured trials are added to its file")
        backend = session.backend if isinstance(session.backend, dict) else {}
        # the session's own code and template folder, as Start continues it: the benchmark's code
        # runs with the person's yes (asked only now that it would run), a template from the folder
        # the kernel list runs it from
        trust = backend.get("kind") == "python" and self._confirm_code(Path(str((backend.get("options") or {}).get("path", ""))))
        shown = self.toolbar.request()
        folders = shown.get("kernel_dirs") if self._shows_session_kernel(str(shown.get("kernel") or "")) else None
        path, held = self._run_output(session.kernel)
        request = dataclasses.replace(request, trust_session_code=trust, kernel_dirs=tuple(str(d) for d in folders or ()))
        try:
            run, why = remeasure_aborted(path, request, held=held, session=session)
        except BaseException:
            if held is not None and held is not self._autosave_lock:  # taken for this run only
                held.release()
            raise
        if run is None:
            # trials another run added to the file were taken in on the way: shown now, and, being
            # the file's, they leave the session as saved as it was
            was_dirty = self.model.dirty
            self.model.sync()
            self.model.dirty = was_dirty
            self.statusBar().showMessage(why, 10000)
            return
        # The session shown, which the run extends (with any trials another run added to its file
        # meanwhile). An unsaved session (its trials only in the autosave, or not all in its file)
        # stays unsaved, so closing asks and keeps the autosave: nothing measured is lost.
        self.model.set_session(run.session, unsaved=self.model.dirty or self.path is None)
        self.statusBar().showMessage(why, 10000)
        self._remeasure_message = why  # "re-measuring 8 aborted candidates": cleared when they are
        self._launch(run)

    def measure_cells(self, cells: list[Any]) -> None:
        """Measure (size, config) pairs of the open session (the size view's missing cells) through
        the run controller, in the engine thread like any run; the view fills in as trials arrive."""
        from workbench.runner.controller import prepare_cells

        current, opening = self.model.session, self.opening
        why = ("stop the run first" if self.running else "no session" if current is None
               else self._opening_refusal() if opening is not None else None)
        if why is not None or current is None:
            self.statusBar().showMessage(f"measure missing cells: {why}", 8000)
            return
        held: SessionLock | None = None
        try:
            output, held = self._run_output(current.kernel)
            request = self._continue_request(self.toolbar.request(), current)
            prepared = prepare_cells(dataclasses.replace(request, budget=None), current, output, cells, held=held)
        except WorkbenchError as exc:
            if held is not None and held is not self._autosave_lock:  # taken for this run only
                held.release()
            self.statusBar().showMessage(f"measure missing cells: {window_message(exc)}", 15000)
            return
        self.model.sync()
        if self.path is None:
            self._set_autosave(output, held)
        self.model.dirty = True
        self._launch(prepared)

    def _run_request(self, run: dict[str, Any], current: Session | None) -> RunRequest:
        """The controller's request for a new session from the toolbar's (or automation's) keys."""
        from workbench.runner.request import RunRequest

        extra = dict(run.get("options") or {})
        if run.get("delay_s"):
            extra["delay_s"] = float(run["delay_s"])
        domains, restrictions = self._edited_domains(str(run.get("kernel") or ""))
        return RunRequest(
            kernel=run.get("kernel"), backend=run.get("backend") or "auto", replay=run.get("replay"),
            kernel_dirs=tuple(str(d) for d in run.get("kernel_dirs") or ()),
            problem=run.get("problem") or {}, gpu_model=run.get("gpu_model"), device=run.get("device"),
            backend_options=extra, strategy=run.get("strategy"),
            strategy_options=run.get("strategy_options"), seed=int(run.get("seed") or 0),
            budget=run.get("budget"), time_limit_s=run.get("time_limit_s"), workers=run.get("workers"),
            compile_timeout_s=run.get("compile_timeout_s"), run_timeout_s=run.get("run_timeout_s"),
            domains=domains, restrictions=restrictions, sizes=run.get("sizes") or None,
            # the device box picks the GPU: without it every visible GPU would measure (the run's
            # default) and the session would describe the first, not the one chosen
            devices=(int(run["device"]),) if run.get("backend") == "cuda" and run.get("device") is not None else None,
        )

    def _continue_request(self, run: dict[str, Any], session: Session) -> RunRequest:
        """A request that continues ``session``: its backend as saved, the run's own choices
        (strategy, seed, budget, limits, objective) from the controls."""
        from workbench.runner.request import RunRequest

        backend = session.backend if isinstance(session.backend, dict) else {}
        options = backend.get("options") or {}
        trust = False
        moved: str | None = None
        if backend.get("kind") == "python":
            path = Path(str(options.get("path", "")))
            named = str(self.toolbar.kernel.currentText())
            if (named.endswith(".py") and Path(named).name == path.name and Path(named).is_file()
                    and Path(named).resolve() != path.resolve()):
                # the benchmark at its new place (a folder moved or renamed), named in the kernel
                # field: that file runs, if its code is the session's (the controller checks it from
                # the file's text), as tune FILE --resume continues it
                path, moved = Path(named), named
            trust = self._confirm_code(path)
        extra: dict[str, Any] = {}
        if run.get("delay_s") and backend.get("kind") in PACED_BACKENDS:
            extra["delay_s"] = float(run["delay_s"])
        compile_mode = (run.get("options") or {}).get("compile")
        if compile_mode and backend.get("kind") == "sim":
            extra["compile"] = compile_mode
        domains, restrictions = self._edited_domains()
        return RunRequest(
            kernel=moved,
            # the form holds the session's options when it was opened: all at defaults is a choice too
            strategy=run.get("strategy"), strategy_options=run.get("strategy_options") or {},
            seed=int(run["seed"]) if run.get("seed") is not None else None, budget=run.get("budget"),
            time_limit_s=run.get("time_limit_s"), workers=run.get("workers"),
            compile_timeout_s=run.get("compile_timeout_s"), run_timeout_s=run.get("run_timeout_s"),
            backend_options=extra, constraints=self.model.constraints, weights=self.model.weights,
            domains=domains, restrictions=restrictions, trust_session_code=trust, sizes=run.get("sizes") or None,
            # the folder the kernel list runs this template from (the person's: saved with the
            # editor, or opened with File > Open kernel folder...), never one the file names
            kernel_dirs=tuple(str(d) for d in run.get("kernel_dirs") or ()),
        )

    def _confirm_code(self, path: Path) -> bool:
        """A continued python benchmark runs the file the session names: only with the person's yes."""
        if path.resolve() in self.trusted_code:
            return True
        named = str(self.toolbar.kernel.currentText())
        if named.endswith(".py") and Path(named).resolve() == path.resolve() and not self._from_session(named):
            return True
        if not self.interactive:
            raise WorkbenchError(f"the session runs the python benchmark {path}; running its code needs "
                                 "the person's yes in an interactive window")
        # No is the default: Enter, or a key pressed as the question appears, must not run a file's code
        answer = QMessageBox.question(self, "Run the benchmark's code?",
                                      f"This session measures the python benchmark\n{path}\n\nContinuing runs that "
                                      "file's code. Run it?",
                                      QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                                      QMessageBox.StandardButton.No)
        if answer != QMessageBox.StandardButton.Yes:
            raise WorkbenchError("run not started: the benchmark's code was not confirmed")
        self.trusted_code.add(path.resolve())
        return True

    def _update_next_start(self) -> None:
        """Say in the toolbar when Start would begin a new session instead of continuing the one
        shown: another kernel or GPU picked left the charts, the card and the table on the open
        session, with nothing to tell that the next run measures something else. Asked of the
        controller, as Start asks it (another problem typed, a device index of another GPU; the
        backend "auto" that picks the session's own is no change); for a python benchmark, whose
        declarations only a process of its own reads, from the choices that name another file,
        backend or recording."""
        text = ""
        shown, session = self._shown_request, self.model.session
        if not self.running and session is not None and session.trials and shown is not None:
            try:
                request: dict[str, Any] | None = self.toolbar.request()
            except WorkbenchError:  # a field still being typed
                request = None
            choices = self._choices(request) if request is not None else shown
            if request is not None and choices != shown:
                backend = session.backend.get("kind") if isinstance(session.backend, dict) else None
                if str(request.get("kernel") or "").endswith(".py") or backend == "python":
                    from workbench.runner.controller import runs_moved_benchmark

                    # (the session's benchmark at its new place is the same kernel: Start continues)
                    moved = runs_moved_benchmark(session, choices.get("kernel"))
                    changed = [f"{word} {choices[key]}" if key != "replay" else word
                               for key, word in _NEW_SESSION_CHOICES
                               if choices.get(key) != shown.get(key) and choices.get(key) is not None
                               and not (key == "kernel" and moved)]
                    why = ", ".join(changed) or None
                else:
                    try:
                        why = self.why_not_continued(request)
                    except WorkbenchError:  # a request that cannot start: Start says why
                        why = None
                if why:
                    text = f"new session at Start: {why}"
        self.toolbar.show_next_start(text)

    @staticmethod
    def _choices(run: dict[str, Any]) -> dict[str, Any]:
        """The keys of a request that say what is measured (not how long or with which strategy)."""
        keys = ("kernel", "backend", "replay", "problem", "gpu_model", "device")
        return {k: run.get(k) or None for k in keys}

    def continues_session(self, run: dict[str, Any]) -> bool:
        """Whether Start with ``run`` continues the session shown (its trials and file) rather
        than starting a new one (a request that could not start does not)."""
        try:
            return self.why_not_continued(run) is None
        except WorkbenchError:
            return False

    def why_not_continued(self, run: dict[str, Any]) -> str | None:
        """Why Start with ``run`` would start a new session instead of continuing the one shown
        (None when it continues it); a request that could not start at all raises its error."""
        from workbench.runner.controller import why_not_continued

        current = self.model.session
        if current is None:
            return "no session is open"
        if self._same_choices(run):
            return None
        return why_not_continued(self._run_request(run, current), current)

    def _same_choices(self, run: dict[str, Any]) -> bool:
        return self._shown_request is not None and self._choices(run) == self._shown_request

    def _edited_domains(self, kernel: str | None = None) -> tuple[Any, Any]:
        """The slots panel's edits (domains, restrictions), when it shows an editable space."""
        shown = self.slots_panel.shown()
        panel = self.slots_panel
        # a session's space unedited is sent for a new session of its own kernel only (``kernel``
        # given): continuing the session, its own stored space is what runs, unchanged (sent, it
        # read as an edit, which rewrote the stored space and re-ran a sweep's used-up size)
        if shown is None or (panel.space is panel.base and (kernel is None or not self._shows_session_kernel(kernel))):
            return None, None
        return shown

    def _on_progress(self, event: Any) -> None:
        """Kept for the next refresh tick: the table and the charts take new trials on the tick,
        and a count shown as each event arrived ran ahead of the rows it counted."""
        self._progress = event

    def _show_progress(self) -> None:
        event, self._progress = self._progress, None
        if event is not None and getattr(event, "starting_s", None) is not None:
            self.toolbar.show_state(f"waiting {event.starting_s:.0f}s for the workers to start")
        elif event is not None:
            self.toolbar.show_progress(event.done, event.total, event.failures, event.eta_s, event.aborted)
            self.toolbar.show_compiles(event.compiles_pending, event.refined)

    def _on_pause(self) -> None:
        if not self.running:
            return
        assert self.engine_thread is not None  # running
        engine = self.engine_thread.engine
        if engine.paused:
            engine.resume()
        else:
            engine.pause()
        self.toolbar.set_running(True, paused=engine.paused)
        self._update_next_start()

    def stop_run(self) -> None:
        """Ask the engine to stop: no new candidates; running ones finish or time out and are recorded."""
        if self.running and self.engine_thread is not None:
            self.engine_thread.stop()
            self.toolbar.show_state("stopping...")
            # nothing left to pause or stop: Pause stayed enabled, reading "Resume", while it stopped
            self.toolbar.note_stopping()

    def wait_for_run(self, timeout_s: float = 60.0) -> bool:
        """Block (GUI thread) until the engine thread ends; used when closing."""
        if self.engine_thread is None:
            return True
        return self.engine_thread.wait(int(timeout_s * 1000))

    def stop_run_unshown(self, timeout_s: float = 120.0) -> None:
        """Stop the run going and wait for its end, which is not shown (the window is about to go):
        its trials are then all in the model, for a save."""
        if self.engine_thread is None or not self.running:
            return
        self.engine_thread.stop()
        self._run_closed = self.wait_for_run(timeout_s)
        self.model.sync()

    def _on_run_finished(self, result: Any) -> None:
        if self.sender() is not self.engine_thread or self._run_closed:  # closing showed this end already
            return
        if self._retargeted and self.statusBar().currentMessage() == self._retargeted:
            self.statusBar().clearMessage()  # it spoke of a search that is no longer running
        shown = self.statusBar().currentMessage()
        if self._started_note and self._started_note in shown and self.model.session is not None:
            # the note's count was of the trials before the run: said again with the count now
            # (left as it was, "40 trials so far" stood beside 80 trials)
            before, strategy, _sizes = self._started_noted  # (the sizes counted again: the run may have added some)
            ended = _continued_note(len(self.model.session.trials), before, strategy,
                                    len(problems_of(self.model.session)), ended=True)
            self.statusBar().showMessage(shown.replace(self._started_note, ended), 15000)
        self._retargeted = self._started_note = ""
        assert self.engine_thread is not None  # it sent this
        self.engine_thread.wait()  # it emitted as its last act: returns at once
        self._run_closed = True
        if self._remeasure_message and self.statusBar().currentMessage() == self._remeasure_message:  # it is over now
            self.statusBar().clearMessage()
        self._remeasure_message = ""
        if self.engine_thread.engine.refined:  # trials replaced in place: rebuild the views' columns
            self.model.set_session(self.model.session)
        self.model.sync()
        if self._run_saved_the_file():
            self.model.dirty = False
            self._update_title()
        self.refresh()
        self.failures.refresh()
        self.toolbar.set_running(False)
        self._update_next_start()
        self.objective_panel.set_run_active(False)
        self._set_session_actions()
        session = self.model.session
        self.toolbar.show_compiles_ended(sum(t.measurement.resources_pending for t in session.trials)
                                         if session is not None else 0)
        if result.reason == "exhausted":
            # the run is complete, not cut short: the bar full, and no offer of the budget's rest
            # (4 of 20 and "16 evals" read as a run that stopped early, with nothing left to run)
            self.toolbar.progress.setMaximum(max(result.evaluations, 1))
            self.toolbar.progress.setValue(max(result.evaluations, 1))
            self.toolbar.show_state(f"done: {END_WORDS[result.reason]}, {counted(result.evaluations, 'eval')}")
            self._offered_rest = None
        else:
            # short, in the budget box's word: at 1280 px "finished: budget, 40 evaluations" was cut
            # before its count
            reason = END_WORDS.get(result.reason, result.reason)
            self.toolbar.show_state(f"done ({reason}), {counted(result.evaluations, 'eval')}")
            session = self.model.session
            offered = _offered_budget(session, after_run=True) if session is not None else None
            if offered is not None:  # the rest of the budget, as on reopening the file
                self.toolbar.show_budget(offered)
            elif (session is not None and _offered_budget(session) is not None  # (not a sweep, a budget recorded)
                  and session.run.budget is not None and len(session.trials) >= session.run.budget  # all measured
                  and self._budget_step and self._asked_budget is not None and self._asked_budget == self._offered_rest):
                self.toolbar.show_budget(self._budget_step)  # that rest is done: the first run's number again
            self._offered_rest = offered
        self._select_best_if_none()
        if result.reason == "error":
            self._error("The run ended with an error",
                        self._as_chosen(result.message.splitlines()[0]) if result.message else "error")
        self.run_done.emit(result)

    def _as_chosen(self, text: str) -> str:
        """``text`` naming the person's own files where it names the copies the run read of them
        (the kernel editor tunes a draft with copies of the reference and headers it was given):
        an error in the reference named ``.../template-drafts/saxpy-08674953c65d/_saxpy_reference.py``,
        a file the person never chose, and an edit there would change nothing."""
        named = [copy for copy in getattr(self, "_copied_from", {}) if copy in text]
        for copy in sorted(named, key=len, reverse=True):  # (a longer path first: one may hold another)
            text = text.replace(copy, self._copied_from[copy])
        if named:
            text += " (the run read a copy of it in the kernel editor's drafts)"
        return text

    def _run_saved_the_file(self) -> bool:
        """Whether the run that ended left the session's file holding all of it: the run wrote into
        that file (a continued saved session), its final save went through, and the objective the
        file holds is the one shown (a slider moved after that save is not in it). Every trial
        marks the session unsaved as it arrives, so a continued file kept its ``*`` though nothing
        was left to save."""
        from workbench.core.domain.session import disk_key

        engine = self.engine_thread.engine if self.engine_thread is not None else None
        session = self.model.session
        output = getattr(engine, "output", None)
        if session is None or self.path is None or output is None or not getattr(engine, "saved", False):
            return False
        if disk_key(output) != disk_key(self.path):
            return False
        return session.objective_on_disk.get(disk_key(self.path)) == (session.constraints, session.weights)

    def _follow_recommendation(self) -> None:
        """After a change of the objective, a row the window selected itself (the best when a file
        opened or a run ended) moves to the new recommendation, or to none when nothing is
        feasible; a row the person picked, and no selection, stay as they are (also during a run:
        only the window's own pick moves, as the card does)."""
        ranking = self.model.ranking
        session, row = self._picked_best
        if ranking is None or session is None or session is not self.model.session or row != self.model.selected:
            return
        if row is None and ranking.best is None:
            return
        self.model.select(ranking.best)
        self._picked_best = (self.model.session, ranking.best)

    def _select_best_if_none(self) -> None:
        """Show the recommendation in the source view and table when the user has picked nothing:
        a row the window picked itself (the best when the last run ended, or when a file opened) is
        nobody's choice, so it follows the recommendation when a continued run finds a better one
        or the objective changes; a row the person picked stays."""
        ranking = self.model.ranking
        if ranking is None or ranking.best is None:
            return
        session, row = self._picked_best
        mine = session is not None and session is self.model.session and row == self.model.selected
        if self.model.selected is None or mine:
            self.model.select(ranking.best)
            self._picked_best = (self.model.session, ranking.best)

    def _restore_run_controls(self, session: Session) -> None:
        """Fill the toolbar with what ``session`` recorded, and its default where it recorded nothing
        (no problem, no time limit, no budget): every control is set, so none keeps the value an
        earlier session left there, which Start would otherwise record into this one."""
        from workbench.backends.sim import DEFAULT_COMPILE
        from workbench.core.domain.run_settings import DEFAULT_BUDGET
        from workbench.core.model.gpus import DEFAULT_GPU
        from workbench.search.base import DEFAULT_STRATEGY

        backend = session.backend if isinstance(session.backend, dict) else {}
        options = dict(backend.get("options") or {})
        kind = backend.get("kind")
        strategy = session.strategy or {}
        settings = session.run
        # a python benchmark runs by its file: the toolbar's kernel field takes a path for it, and
        # the bare name (the file's stem) would name a template that does not exist
        kernel = options.get("path") if kind == "python" else session.kernel
        run: dict[str, Any] = {
            "kernel": kernel if kind != "replay" else None,
            "backend": kind if kind in ("sim", "cuda", "replay", "python") else None,
            "replay": options.get("path") if kind == "replay" else None,
            "gpu_model": (options.get("gpu_model") or DEFAULT_GPU) if kind == "sim" else None,
            "device": (options.get("device") if type(options.get("device")) is int else 0) if kind == "cuda" else None,
            "options": {"compile": options.get("compile") or DEFAULT_COMPILE} if kind == "sim" else {},
            "problem": options.get("problem") or {},
            "strategy": strategy.get("name") or DEFAULT_STRATEGY, "seed": strategy.get("seed") or 0,
            "strategy_options": strategy.get("options"),
            "earlier_strategy_options": strategy.get("earlier_options") or {},
            "time_limit_s": settings.time_limit_s,
            "budget": DEFAULT_BUDGET,
        }
        if kind in PACED_BACKENDS:
            run["delay_s"] = options.get("delay_s") or 0.0
        offered = _offered_budget(session)
        # another session's numbers are not this one's: what Start offers after its runs starts over
        self._budget_step, self._offered_rest = None, _offered_budget(session, after_run=True)
        if offered is not None:
            run["budget"] = offered  # a sweep's is set below
        from workbench.core.domain.sizes import shown_in_order, sweep_plan

        try:  # a sweep shows its sizes and its budget per size; any other session an empty sizes field
            plan = sweep_plan(session)
        except WorkbenchError:
            plan = None
        run["sizes"] = {k: shown_in_order(v) for k, v in plan.sizes.items()} if plan is not None else {}
        if plan is not None:
            run["budget"] = plan.budget
            # the swept parameters are the sizes field's: the session's own value of one (the
            # template's default when the sweep set none) read as a size it shows, which it is not
            run["problem"] = {k: v for k, v in run["problem"].items() if k not in plan.sizes}
        # the file shown because the session names it is no yes to run its code (see _confirm_code)
        # (any backend's: a session of another kind can name a .py file as its kernel too)
        if kernel and str(kernel).endswith(".py"):
            self._session_code.update(_path_forms(str(kernel)))
        try:
            self.toolbar.apply(run)
        except WorkbenchError as exc:  # a strategy or backend this build lacks, a hand-edited option
            self.statusBar().showMessage(f"Some session settings not restored: {window_message(exc)}", 15000)
        self._shown_request = self._choices(self.toolbar.request())
        self._update_next_start()


def _offered_budget(session: Session, after_run: bool = False) -> int | None:
    """What the budget box offers for going on with ``session``: what its recorded budget has left
    (a run stopped early, a session reopened), so Start goes on to the budget instead of starting
    it over; for a session reopened with all of it measured, the whole budget again. None for a
    session that recorded none, for a sweep, whose box holds its budget per size, and
    (``after_run``) when the run just ended measured all of it: the box keeps the number the person
    ran, since the session's budget is the total of every run (offered again, each Start doubled it)."""
    from workbench.core.domain.sizes import sweep_plan

    budget = session.run.budget
    if budget is None:
        return None
    try:
        if sweep_plan(session) is not None:
            return None
    except WorkbenchError:
        pass
    left = budget - len(session.trials)
    return left if left > 0 else None if after_run else budget


def _carried_weights(weights: Weights, constraints: Constraints) -> Weights:
    """The weights a new session of another kernel takes from the one shown: those in force and
    the standard rows; a weight of 0 or a direction on a metric of the old kernel alone (a
    benchmark's own ``margin``) gave the new session a row for a metric it never reports, and went
    into its file. (A new session of the same kernel keeps them all: its metrics are the same.)"""
    bounded = {bound.metric for bound in constraints.bounds()}
    values = {m: w for m, w in weights.values.items() if w > 0 or m in DEFAULT_WEIGHTS}
    directions = {m: d for m, d in weights.directions.items() if values.get(m, 0) > 0 or m in bounded}
    return Weights(values=values, directions=directions)


def _panel_objective_named(error: WorkbenchError, request: Any, kept: bool = False) -> WorkbenchError:
    """``error`` of a run that starts a session, saying that a metric it names was set in the
    window's objective panel before the run (a weight on memory, say, which a replay of a
    recording cannot report), or kept from the session shown (``kept``): the refusal named the
    metric, and nothing said the panel had put it there."""
    named = {bound.metric for bound in request.constraints.bounds()} if request.constraints is not None else set()
    named |= set(request.weights.active()) - {"latency_ms"} if request.weights is not None else set()
    text = str(error)
    if not any(f"'{metric}'" in text or f"{metric} " in text for metric in named):
        return error
    where = "kept from the session shown" if kept else "set before this run"
    return WorkbenchError(f"{text} ({where} under Constraints or Score weights: clear it there)")


def _continued_note(n: int, before: str, strategy: str, sizes: int = 1, ended: bool = False) -> str:
    """What Start says when it adds to the open session (``n`` trials so far, by strategy ``before``)
    rather than starting one: the charts then show every run of it together, and a person comparing
    strategies expected a fresh session. A sweep of ``sizes`` sizes shows one size at a time.
    ``ended``: said again when the run has ended, ``n`` the trials then."""
    switch = f" with {strategy} (its earlier trials: {before})" if strategy and before and strategy != before else ""
    shown = ("the charts show them all" if sizes <= 1 else
             f"the charts show every run's trials at the size shown (of {sizes})")
    count = f"continued this session, {counted(n, 'trial')} now" if ended else \
        f"continuing this session: {counted(n, 'trial')} so far"
    return f"{count}{switch}; {shown}; File > New session starts a fresh one"


def commit_typed_value() -> None:
    """Take what is typed into the field that has the keyboard focus, as Enter would: a key that
    acts on the fields' values (F5 starts a run) does not move the focus, and a pace, a weight or
    a constraint typed just before it was not read (the run got the objective from before the
    typing, and the panel then showed one it did not get)."""
    focused = QApplication.focusWidget()
    widget = focused
    while widget is not None and not isinstance(widget, QAbstractSpinBox):
        widget = widget.parentWidget()
    if isinstance(widget, QAbstractSpinBox):
        widget.interpretText()
    elif isinstance(focused, QLineEdit):  # (a weight, the constraints' text: taken on editingFinished)
        focused.editingFinished.emit()
