"""The main window's files: New, Open, Save, Save As, Import, the recent files, and the recovery of a
crashed run's autosave.

A part of :class:`~workbench.gui.main_window.MainWindow` kept in a module of its own, as
:mod:`~workbench.gui.window_exports` is: the window inherits it. Every way of showing another
session goes through :meth:`WindowFiles._show_loaded`, all or nothing; every way of dropping
unsaved trials through :meth:`WindowFiles._maybe_save`.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from PySide6.QtWidgets import QFileDialog, QMenu, QMessageBox

from workbench.core.errors import (DamagedJournal, NewerFormat, SessionFormatError, UnreadableFile, WorkbenchError,
                                   counted, printable)
from workbench.core.io.session_lock import SessionLock
from workbench.core.fs import fixed_path
from workbench.gui.file_reading import FileReading
from workbench.gui.run_panel import KT_CACHE_FILTER
from workbench.gui.settings_store import SettingsStore
from workbench.gui.text import window_message
from workbench.gui.window_exports import WindowExports

if TYPE_CHECKING:
    from workbench.core.domain.session import Session

_log = logging.getLogger(__name__)

MAX_RECENT = 8
SESSION_FILTER = "Workbench sessions (*.json);;All files (*)"


class WindowFiles(WindowExports):
    """File's actions of the main window (Export's are :class:`WindowExports`'), and recovery."""

    # What the window holds (MainWindow sets them) and the window's parts these actions use: declared
    # here for the type checker, defined by MainWindow, which overrides every method below that raises.
    interactive: bool
    settings: SettingsStore
    recent_menu: QMenu
    _file_reading: FileReading
    _recovery_passed_over: set[Path]
    _shown_request: dict[str, Any] | None
    _autosave_lock: SessionLock | None

    def _refused_during_run(self, what: str) -> bool:
        raise NotImplementedError

    def _set_autosave(self, path: Path | None, lock: SessionLock | None = None) -> None:
        raise NotImplementedError

    def _update_next_start(self) -> None:
        raise NotImplementedError

    def _update_title(self) -> None:
        raise NotImplementedError

    def _on_kernel_changed(self, name: str) -> None:
        raise NotImplementedError

    def _select_best_if_none(self) -> None:
        raise NotImplementedError

    def _restore_run_controls(self, session: Session) -> None:
        raise NotImplementedError

    def _error(self, title: str, text: str) -> None:
        raise NotImplementedError

    # --- files ---------------------------------------------------------------------------------
    @property
    def opening(self) -> Path | None:
        """The file Open, Open recent, Import or recovery is reading (off the GUI thread); None when none is."""
        return self._file_reading.reading

    def _opening_refusal(self) -> str:
        """Why what would replace the shown session waits (see :attr:`opening`)."""
        return f"{self.opening.name if self.opening is not None else 'a file'} is being opened; wait for it or cancel it"

    def new_session(self) -> None:
        if self._refused_during_run("New session") or not self._maybe_save():
            return
        self._set_autosave(None)  # an unsaved session kept (not discarded) stays for recovery
        self.path = None
        self._shown_request = None
        self._update_next_start()
        self.model.set_session(None)
        self._clear_size_shown()
        self._on_kernel_changed(self.toolbar.kernel.currentText())

    def open_session(self, path: str | os.PathLike[str]) -> None:
        """Load a session (its journal is merged) and show it; raises WorkbenchError or OSError.

        All or nothing: the file is read, validated and ranked before the window changes, and when
        showing it still fails the window goes back to the session it showed before (see
        :meth:`_show_loaded`), so a bad file never leaves a half-switched window."""
        from workbench.core.domain.session import load_session

        self._show_opened(_loaded(path, load_session), path)

    def open_session_in_background(self, path: str | os.PathLike[str], title: str = "Cannot open the session",
                                   failed: Callable[[BaseException], None] | None = None,
                                   discarded: Path | None = None) -> None:
        """:meth:`open_session` with the file read on a thread (Open, Open recent, and ``gui FILE``
        for a person's window; see :mod:`workbench.gui.file_reading`); what cannot be opened is said
        under ``title``, or handed to ``failed`` (the start's own way of saying it: exit status 2).
        ``discarded``: the autosave of the session the person chose to discard, removed once the
        file is shown (see :meth:`_read_in_background`)."""
        from workbench.core.domain.session import load_session

        file = Path(path)
        self._read_in_background(file, lambda: _loaded(file, load_session),
                                 lambda session: self._show_opened(session, file), title, failed, discarded)

    def _read_in_background(self, file: Path, read: Callable[[], Any], show: Callable[[Any], None], title: str,
                            failed: Callable[[BaseException], None] | None = None,
                            discarded: Path | None = None) -> None:
        """``read()`` on a thread, then ``show(value)`` under ``title`` (see :mod:`workbench.gui.file_reading`).

        The question "save first?" was answered before the read; a session that was clean then and
        has unsaved changes now (an objective set while the file was read) is asked about again (one
        the person chose to discard is not: that answer stands), and a
        run cannot have started (every start is refused while a file is read; checked all the
        same, since showing a file under a running run would hand it another session).

        ``discarded`` (the autosave of the unsaved session the person chose to discard) is removed
        only once ``show`` succeeded: until then the window still shows that session, and a read
        that fails or is cancelled, or a show put back, leaves it with its autosave, as it was
        (removed at the answer, a crash after a failed Open lost trials the window had shown)."""
        clean = not self.model.dirty

        def shown(value: Any) -> None:
            if self.running:
                self._error(title, f"{file.name} not opened: a run started while it was read")
                return
            if self.model.dirty and clean and not self._maybe_save():
                return  # the person cancelled: the window keeps what it shows
            if failed is None:
                if not self._guarded(lambda: show(value), title):
                    return
            else:
                try:
                    show(value)
                except (WorkbenchError, OSError) as exc:
                    failed(exc)
                    return
            if discarded is not None and discarded != self.autosave_path:
                self._discard_autosave(discarded)

        self._file_reading.start(file, read, shown, failed or (lambda error: self._error(title, window_message(error))),
                                 dialog=self.interactive)

    def _show_opened(self, session: Session, path: str | os.PathLike[str]) -> None:
        from workbench.core.domain.session import session_path_of

        path = session_path_of(path)  # a killed run's journal opens as the session it continues
        self._show_loaded(session, path, lambda: self._add_recent(str(path.resolve())))
        from workbench.core.domain.session import journal_path
        from workbench.gui.source_view import changed_template_note

        changed = changed_template_note(session, self.toolbar.kernel_folders)
        if changed:  # said now, not only when Start is refused (alone: a message of before is another matter)
            self.statusBar().showMessage(changed, 30000)
        elif session.journal_read is not None:
            # merged as it was read, its settings over the file's (docs/file-format.md): said, since the
            # window showed the merged session as if the file held it, and no "*" told it apart
            from workbench.core.io.session_lock import locked_by_other

            journal = journal_path(path).name
            if locked_by_other(path):
                said = (f"{path.name}: a run in another process is writing it; the trials it has journaled so far "
                        f"({journal}) are shown")
            else:
                self.model.dirty = True  # the file lacks them until saved
                self._update_title()
                said = (f"{path.name}: read with {journal}, the journal of a run that did not end (its trials, and "
                        "its constraints and weights over the file's); Save writes them into the file"
                        if path.is_file() else
                        f"{path.name}: rebuilt from {journal}, the journal of a run killed before its first save "
                        f"({counted(session.journal_trials, 'trial')}); Save writes {path.name}")
            self.statusBar().showMessage(said, 30000)

    def _show_loaded(self, session: Session, path: Path | None, then: Callable[[], None] | None = None) -> None:
        """Show a freshly loaded ``session`` as the one at ``path`` (None: unsaved, e.g. an import).

        Any exception while the window switches (a view that cannot show the file's data is a bug,
        but must not leave the window half-switched or lose what was open) puts the previous
        session, file, selection and run controls back and is raised as one WorkbenchError line.

        Refused while a run writes into the shown session, as New, Open and Import are (a script's
        ``open_session`` or ``recover`` swapped the window to another file while the run went on
        writing its own)."""
        if self.running:
            raise WorkbenchError("a run is going; stop it first (its trials go to its session)")
        before = (self.model.session, self.model.shown_problem(), self.model.selected, self.model.dirty,
                  self.path, self.autosave_path, self._shown_request)
        try:
            controls: dict[str, Any] | None = self.toolbar.request()
        except WorkbenchError:  # a problem field the user is still typing: nothing to put back
            controls = None
        try:
            self.autosave_path = None  # an earlier unsaved session's autosave stays for recovery
            self.path = path
            self.model.set_session(session)
            self._say_size_shown(session)
            self._select_best_if_none()
            # an import too: its controls are the recording's, as when the same import is saved and
            # opened, so Start continues it (into an autosave) instead of reading the kernel's name
            # as a template left in the kernel field of a backend it was never measured on
            self._restore_run_controls(session)
            # the bar and label of a run shown before are not this file's (a sweep's budget is per size)
            sweep = session.extra.get("sweep") is not None
            self.toolbar.show_opened(len(session.trials), None if sweep else session.run.budget)
            if then is not None:
                then()
            self._set_autosave(self.autosave_path)  # the earlier autosave's lock: let go only now
        except Exception as exc:
            # a bug: its traceback goes to the log, the person gets one line and the old session
            _log.warning("showing %s failed; the previous session is shown again", path, exc_info=True)
            where = f"{path}: " if path is not None else ""
            error = WorkbenchError(f"{where}cannot be shown ({_described(exc)}); the session open before is kept")
            self._put_back(before, controls)
            raise error from exc

    def _clear_size_shown(self) -> None:
        """Take back the sweep's "showing n=..." line, said for 15 s of the last session shown."""
        said = getattr(self, "_size_shown_said", "")
        if said and self.statusBar().currentMessage() == said:
            self.statusBar().clearMessage()
        self._size_shown_said = ""

    def _say_size_shown(self, session: Session) -> None:
        """A sweep none of whose sizes is its own problem opens on the last size it added that has a
        feasible config (else the last), where
        ``show`` and ``export`` name no size: the status bar says which size is shown and that the
        size box picks another, so a recommendation or an export is not taken for the sweep's."""
        from workbench.core.domain.session import problem_key
        from workbench.core.domain.size_analysis import label_names, size_label

        shown, problems = self.model.shown_problem(), self.model.problems()
        self._clear_size_shown()
        if shown is None or problem_key(session.problem) in {problem_key(p) for p in problems}:
            return
        label = size_label(shown, label_names(session, problems))
        last = problem_key(shown) == problem_key(problems[-1])
        which = "the size added last" if last else "the last size added that has a feasible config"
        self._size_shown_said = (f"a sweep of {len(problems)} sizes: showing {label}, {which}; the size box "
                                 "picks another")
        self.statusBar().showMessage(self._size_shown_said, 15000)

    def _put_back(self, before: tuple[Any, ...], controls: dict[str, Any] | None) -> None:
        """Undo a switch that failed half-way (see :meth:`_show_loaded`)."""
        session, problem, selected, dirty, path, autosave_path, shown_request = before
        self.path, self.autosave_path = path, autosave_path
        # the old session showed before; should a view fail on it now, the failure worth reporting
        # is the first one (the caller raises it): each step is tried on its own, so one failing
        # does not keep the others back, and the window's own state below comes back regardless
        steps: list[Callable[[], object]] = [lambda: self.model.set_session(session)]
        if problem is not None:
            steps.append(lambda: self.model.show_problem(problem))
        steps.append(lambda: self.model.select(selected))
        if controls is not None:
            steps.append(lambda: self.toolbar.apply(controls, put_back=True))
        for step in steps:
            try:
                step()
            except Exception:
                logging.getLogger(__name__).exception("putting the previous session back: a step failed")
        self.model.dirty = dirty
        self._shown_request = shown_request
        self._update_next_start()
        self._update_title()

    def save(self) -> bool:
        if self.model.session is None:
            return self._nothing_yet("save")
        if self.path is None:
            return self._on_save_as()
        return self.save_to(self.path)

    def save_to(self, path: str | os.PathLike[str]) -> bool:
        from workbench.core.domain.session import save_session

        from workbench.core.io.output_files import backups_of, check_folder, check_regular_or_absent, check_session_name
        from workbench.core.io.session_lock import SessionLock

        if self.model.session is None:
            return False
        from workbench.runner.autosave import refuse_autosave_folder

        if self.path is None or Path(path) != self.path:
            # a named save onto the window's own autosave also made it the session's file, which
            # the next run then locked a second time (the file a session was opened from stays its
            # to save)
            try:
                refuse_autosave_folder(path, "save")
            except WorkbenchError as exc:
                self._error("Cannot save", window_message(exc))
                return False
        # One writer per session file: a file another process (a `tune`, another window) is writing
        # is refused; the run of this window already holds the lock of its own output.
        engine = self.engine_thread.engine if self.engine_thread is not None and self.running else None
        # (the run's output is fixed as the system reads it: compared so, whatever spelling the
        # window opened the file by)
        run_output = engine is not None and getattr(engine, "output", None) == fixed_path(path)
        # nor the autosave this window holds the lock of while it shows that unsaved session
        own = run_output or (self._autosave_lock is not None and self._autosave_lock.held
                      and self.autosave_path is not None and Path(path) == self.autosave_path)
        lock = None if own else SessionLock(path)
        before = backups_of(Path(path))
        try:
            check_folder(Path(path), "save")
            check_regular_or_absent(Path(path), "save")
            check_session_name(Path(path), "save")
            if lock is not None:
                lock.acquire()
                from workbench.runner.controller import catch_up

                # trials another run added are kept; a file that is no longer this session is
                # refused at the session's own path, kept as .bak where Save As chose to replace it
                catch_up(self.model.session, Path(path), replace=self.path is None or Path(path) != self.path)
                self.model.sync()
            session = self.model.session
            if run_output and engine is not None:
                # the run's own output: saved so that its final save knows the file for its own
                engine.save_output(lambda: save_session(session, path, keep_journal=True))
            else:
                save_session(session, path, keep_journal=self.running)
        except WorkbenchError as exc:
            self._error("Cannot save", window_message(exc))
            return False
        finally:
            if lock is not None:
                lock.release()
        self.path = Path(path)
        self.model.dirty = False
        self._add_recent(str(self.path.resolve()))
        self._drop_autosave()
        self._update_title()
        # a file or a killed run's journal that was there, kept beside as a backup: said (the
        # status said "saved" alone for 3 s, and the person did not know where it had gone)
        kept = sorted(backups_of(Path(path)) - before)
        if kept:
            self.statusBar().showMessage(f"saved {path}; kept what was there as "
                                         f"{', '.join(printable(str(p)) for p in kept)}", 15000)
        else:
            self.statusBar().showMessage(f"saved {path}", 3000)
        return True

    def _file_lacks_trials(self) -> bool:
        """Whether the session shown has trials its file does not hold (a file it was saved to
        while its run went on in the autosave). ``dirty`` does not tell: every trial a run adds
        marks it, also when the run writes them into that file."""
        from workbench.core.domain.session import load_session

        session = self.model.session
        if session is None or self.path is None or not self.model.dirty:
            return False
        try:
            saved = {t.index for t in load_session(self.path).trials}
        except WorkbenchError:  # gone or replaced: the autosave is where the trials are
            return True
        return any(t.index not in saved for t in session.trials)

    def _drop_autosave(self) -> None:
        """The unsaved session's autosave is no longer needed (saved elsewhere, discarded, or the
        window closes normally)."""
        if self.autosave_path is not None and not self.running and self.autosave_path != self.path:
            self._discard_autosave(self.autosave_path, self._autosave_lock)
            self._set_autosave(None)

    def _discard_autosave(self, path: Path, lock: SessionLock | None = None) -> None:
        """Remove an autosave no longer shown (under ``lock`` where the window holds it), saying
        why when it stays."""
        from workbench.runner.autosave import discard

        kept = discard(path, held=lock)  # under its lock, released there
        if kept:  # another process holds it, or a part of it is not a file this window can remove
            _log.warning("%s", kept)
            self.statusBar().showMessage(kept, 15000)

    def _replacing(self, action: str) -> tuple[bool, Path | None]:
        """Whether the shown session may be replaced (refused during a run, unsaved trials asked
        about), and the autosave to remove once the replacement is shown (the person chose Discard;
        see :meth:`_read_in_background`)."""
        if self._refused_during_run(action):
            return False, None
        answer = self._maybe_save(drop=False)
        if answer is False:
            return False, None
        return True, (self.autosave_path if answer is None else None)

    def _open_recent(self, path: str) -> None:
        """Open recent goes through the same questions as Open: unsaved trials are never dropped silently."""
        go, discarded = self._replacing("Open recent")
        if go:
            self.open_session_in_background(path, "Cannot open", discarded=discarded)

    def _file_to_read(self, action: str, caption: str, filters: str) -> tuple[str, Path | None] | None:
        """The file the person picks to replace the shown session (Open, Import), after the same
        questions (:meth:`_replacing`), with the autosave to remove once it is shown. None when they
        do not pick one."""
        go, discarded = self._replacing(action)
        if not go:
            return None
        path, _ = QFileDialog.getOpenFileName(self, caption, self._last_dir(), filters)
        if not path:
            return None
        self._remember_dir(path)
        return path, discarded

    def _on_open(self) -> None:
        picked = self._file_to_read("Open", "Open session", SESSION_FILTER)
        if picked:
            self.open_session_in_background(picked[0], discarded=picked[1])

    def _on_save_as(self) -> bool:
        if self.model.session is None:
            return self._nothing_yet("save")
        suggested = str(Path(self._last_dir()) / f"{self.model.session.kernel}.json")
        path, _ = QFileDialog.getSaveFileName(self, "Save session as", suggested, SESSION_FILTER)
        if not path:
            return False
        self._remember_dir(path)
        return self.save_to(path)

    def import_kt_cache(self, path: str) -> None:
        """Import a Kernel Tuner cache as a new, unsaved session; all or nothing like :meth:`open_session`."""
        from workbench.core.io.interop import import_kt_cache

        self._show_imported(*_imported(path, import_kt_cache))

    def import_kt_cache_in_background(self, path: str | os.PathLike[str], discarded: Path | None = None) -> None:
        """:meth:`import_kt_cache` with the cache read on a thread (see :mod:`workbench.gui.file_reading`;
        ``discarded`` as for :meth:`open_session_in_background`)."""
        from workbench.core.io.interop import import_kt_cache

        self._read_in_background(Path(path), lambda: _imported(path, import_kt_cache),
                                 lambda read: self._show_imported(*read), "Cannot import the cache",
                                 discarded=discarded)

    def _show_imported(self, session: Session, notes: list[str]) -> None:
        self._show_loaded(session, None)
        self.model.dirty = True
        self._update_title()
        if notes:  # what the import repaired or left out, said as import-kt says it
            self.statusBar().showMessage("; ".join(f"note: {note}" for note in notes), 30000)

    def _on_import_kt(self) -> None:
        picked = self._file_to_read("Import", "Import Kernel Tuner cache", KT_CACHE_FILTER)
        if picked:
            self.import_kt_cache_in_background(picked[0], discarded=picked[1])

    def _maybe_save(self, drop: bool = True) -> bool | None:
        """Before discarding unsaved trials: ask. Returns False when the user cancels; None when
        they chose Discard and ``drop`` is False: the caller drops the autosave (:meth:`_drop_autosave`)
        once what replaces the session is under way (a run refused after the answer had deleted
        the trials' autosave while the window still showed them)."""
        if self.model.session is None or not self.model.dirty or not self.interactive:
            return True
        answer = QMessageBox.question(self, "Unsaved trials", "Save the current session first?",
                                      QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard
                                      | QMessageBox.StandardButton.Cancel)
        if answer == QMessageBox.StandardButton.Save:
            return self.save()
        if answer == QMessageBox.StandardButton.Discard:
            if not drop:
                return None
            self._drop_autosave()  # the person chose to discard
            return True
        # Cancel, or no answer at all (a stop signal closes an open question unanswered): the trials
        # and their autosave stay (taken for Discard, a SIGTERM at this question deleted them)
        return False

    # --- recovery ------------------------------------------------------------------------------
    def recoverable(self, skipped: list[str] | None = None) -> list[Path]:
        """Autosaves of runs that did not end cleanly, newest first (see :mod:`workbench.runner.autosave`;
        ``skipped`` gets a line for each passed over)."""
        from workbench.runner.autosave import recoverable

        return recoverable(exclude=self.autosave_path, skipped=skipped)

    def offer_recovery(self) -> None:
        skipped: list[str] = []
        candidates = self.recoverable(skipped)
        if skipped:  # kept where they are, and said (and logged): never offered, they would be forgotten
            for line in skipped:
                _log.warning("%s", line)
            said = self.statusBar().currentMessage()
            self.statusBar().showMessage("; ".join([said, *skipped] if said else skipped), 60000)
        candidates = [c for c in candidates if c not in self._recovery_passed_over]
        if not candidates or not self.interactive:
            return
        session_file = candidates[0]
        more = f"; {len(candidates) - 1} older one{'s' if len(candidates) > 2 else ''} after it" \
            if len(candidates) > 1 else ""
        answer = QMessageBox.question(self, "Recover unsaved session",
                                      f"A run did not end cleanly ({session_file.name}{more}). Recover its trials?\n"
                                      "No keeps them for the next start; Discard deletes them.",
                                      QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No
                                      | QMessageBox.StandardButton.Discard)
        if answer == QMessageBox.StandardButton.Yes:
            self.recover_in_background(session_file)
        elif answer == QMessageBox.StandardButton.Discard:  # No alone left it to be asked at every start
            from workbench.runner.autosave import discard

            kept = discard(session_file)
            self.statusBar().showMessage(kept or f"discarded the unsaved trials of {session_file.name}", 15000)
        else:  # after what a failed recovery said just before, when it did
            said = self.statusBar().currentMessage()
            kept = f"kept {session_file} for the next start (Discard there deletes it)"
            self.statusBar().showMessage(f"{said}; {kept}" if said else kept, 15000)

    def recover(self, session_file: Path) -> bool:
        """Show a crashed run's autosave as this window's unsaved session, holding its lock from
        before it is read (another window recovering it meanwhile is refused). False, said in one
        line, when it cannot be: in use by another process, or not readable; the window and the
        autosave then stay as they were."""
        lock = SessionLock(session_file)
        if not self._guarded(lock.acquire, "Cannot recover"):
            return False
        if not self._guarded(lambda: self.open_session(session_file), "Cannot recover"):
            lock.release()
            return False
        self._adopt_recovered(session_file, lock)
        return True

    def recover_in_background(self, session_file: Path) -> None:
        """:meth:`recover` with the autosave read on a thread, as Open reads a file: a crashed long
        run's autosave holds as many trials as any session, and read on the GUI thread it froze the
        window that had just asked whether to recover it. The lock is held from before the read
        until the session is this window's; a read that fails or is cancelled gives it back."""
        from workbench.core.domain.session import load_session

        lock = SessionLock(session_file)
        if not self._guarded(lock.acquire, "Cannot recover"):
            return

        def shown(session: Session) -> None:
            if self.running:  # every start is refused while a file is read; checked all the same
                lock.release()
                self._error("Cannot recover", f"{session_file.name} not recovered: a run started while it was read")
            elif not self._guarded(lambda: self._show_opened(session, session_file), "Cannot recover"):
                lock.release()
            else:
                self._adopt_recovered(session_file, lock)

        def failed(error: BaseException) -> None:
            lock.release()
            # what does not read stays unreadable: set aside (kept), so that it no longer stands
            # before what can be recovered, which is offered next: a damaged journal alone (the
            # file then offered as last saved), or an autosave damaged itself. Not a file that
            # could not be read now (busy, too large, an I/O error) or one a newer version wrote.
            damaged = isinstance(error, SessionFormatError) and not isinstance(error, (UnreadableFile, NewerFormat))
            if not damaged:  # kept where it is; an older autosave is offered next, as after a damaged one
                self._recovery_passed_over.add(session_file)
                self._error("Cannot recover", window_message(error) + f"; {session_file.name} is kept for the next start")
                self.offer_recovery()
                return
            from workbench.runner.autosave import set_aside

            journal_only = isinstance(error, DamagedJournal)
            folder = set_aside(session_file, journal_only=journal_only)
            what = "its journal" if journal_only else "it"
            kept = (f"; {what} was moved to {folder} (kept, not offered again)" if folder is not None else
                    f"; {what} could not be moved into {session_file.parent / 'damaged'} and stays where it is "
                    "(Discard at the next start deletes it)")
            self._error("Cannot recover", window_message(error) + kept)
            if folder is not None:
                self.offer_recovery()

        try:
            self._file_reading.start(session_file, lambda: _loaded(session_file, load_session), shown, failed,
                                     dialog=self.interactive, cancelled=lock.release)
        except WorkbenchError as exc:  # another file is being read
            lock.release()
            self._error("Cannot recover", window_message(exc))

    def _adopt_recovered(self, session_file: Path, lock: SessionLock) -> None:
        """The recovered autosave, shown, becomes this window's unsaved session under ``lock``."""
        self.path = None
        self._set_autosave(session_file, lock)
        self._remove_recent(str(session_file.resolve()))
        self.model.dirty = True
        self._update_title()
        session = self.model.session
        if session is not None:  # (the window said nothing: an "untitled *" session, and no word of what came back)
            self.statusBar().showMessage(
                f"recovered {counted(len(session.trials), 'trial')} of {printable(session.kernel)} from "
                f"{session_file.name}, the autosave of an unsaved session whose window did not close normally; "
                "File > Save As keeps them", 30000)

    # --- the last folder and the recent files --------------------------------------------------
    def _last_dir(self) -> str:
        return str(self.settings.value("last_dir", str(Path.home())))

    def _remember_dir(self, path: str) -> None:
        self.settings.setValue("last_dir", str(Path(path).parent))

    def recent_files(self) -> list[str]:
        """The recent files the settings list; a settings file edited or damaged into another type
        (a number, a point) lists none, and an entry that cannot be a path (a NUL) is skipped:
        the window must start whatever the file holds."""
        value: Any = self.settings.value("recent", [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, (list, tuple)):
            return []
        return [v for v in value if isinstance(v, str) and v and "\0" not in v][:MAX_RECENT]

    def _add_recent(self, path: str) -> None:
        recent = [path] + [p for p in self.recent_files() if p != path]
        self.settings.setValue("recent", recent[:MAX_RECENT])
        self._update_recent_menu()

    def _remove_recent(self, path: str) -> None:
        self.settings.setValue("recent", [p for p in self.recent_files() if p != path])
        self._update_recent_menu()

    def _update_recent_menu(self) -> None:
        self.recent_menu.clear()
        for path in self.recent_files():
            action = self.recent_menu.addAction(printable(path))  # (a name from the settings file: shown inert)
            action.triggered.connect(lambda _=False, p=path: self._open_recent(p))
        self.recent_menu.setEnabled(bool(self.recent_files()) and not self.running)


def _loaded(path: str | os.PathLike[str], loader: Callable[[Any], Session]) -> Session:
    """``loader(path)``, ranked once under its own objective before any view sees it.

    A WorkbenchError or OSError (the file's own fault, said in one line) passes through; any other
    exception is a bug in reading or ranking, reported as one line naming the file rather than a
    traceback, with the window untouched since nothing has switched yet."""
    from workbench.core.domain.objective import rank

    try:
        session = loader(path)
        rank(session.trials, session.constraints, session.weights).summary()
    except (WorkbenchError, OSError):
        raise
    except Exception as exc:
        _log.warning("reading %s failed", path, exc_info=True)
        raise WorkbenchError(f"{path}: cannot be read ({_described(exc)})") from exc
    return session


def _imported(path: str | os.PathLike[str], importer: Callable[..., Session]) -> tuple[Session, list[str]]:
    """A Kernel Tuner cache read by ``importer`` as :func:`_loaded` reads a session, with the notes
    of what the import repaired or left out."""
    notes: list[str] = []
    return _loaded(path, lambda cache: importer(cache, notes)), notes


def _described(exc: BaseException) -> str:
    """An unexpected exception in one short line: its type and the first line of its message."""
    detail = (str(exc).strip().splitlines() or [""])[0][:200]
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
