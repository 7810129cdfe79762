"""An unsaved session's autosave belongs to the window that shows it, for as long as it shows it:
its lock is held between runs too, so another window (another process) neither offers it as a
crashed run nor recovers it, and nothing removes an autosave another process holds."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from workbench.core.domain.session import journal_path, load_session, save_session
from workbench.core.io.session_lock import SessionLock, lock_path, locked_by_other
from workbench.core.errors import WorkbenchError
from workbench.runner.autosave import discard

SLOW = str(Path(__file__).parents[1] / "fixtures" / "slow_bench.py")

ROOT = Path(__file__).resolve().parents[2]
BENCH = str(Path(__file__).with_name("gui_bench.py"))
RUN = {"kernel": BENCH, "backend": "python", "strategy": "random", "budget": 4}


def start_and_wait(window, qtbot, run, timeout_ms=60_000):
    with qtbot.waitSignal(window.run_done, timeout=timeout_ms) as blocker:
        window.start_run(run)
    return blocker.args[0]


def second_window(qtbot, tmp_path, name="b"):
    from workbench.gui.settings_store import JsonSettings

    from workbench.gui.main_window import MainWindow

    other = MainWindow(interactive=False, settings=JsonSettings(str(tmp_path / f"{name}.ini")))
    qtbot.addWidget(other)
    return other


def in_another_process(code: str, *, stdin: str = "") -> str:
    """Run ``code`` in a process of its own (locks are per process), with this checkout and the
    test's autosave folder; its standard output."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], input=stdin, capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


class Holder:
    """Another process holding an autosave's lock until told to let go (a window of its own that
    recovered it and runs on it)."""

    def __init__(self, path: Path) -> None:
        code = textwrap.dedent(f"""
            import sys
            from workbench.core.io.session_lock import SessionLock
            lock = SessionLock({str(path)!r}).acquire()
            print("held", flush=True)
            sys.stdin.readline()
            lock.release()
        """)
        self.process = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)
        assert self.process.stdout is not None and self.process.stdout.readline().strip() == "held"

    def let_go(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        assert self.process.wait(60) == 0


def test_an_idle_windows_unsaved_session_is_not_offered_as_a_crashed_run_elsewhere(window, qtbot):
    start_and_wait(window, qtbot, RUN)
    autosave = window.autosave_path
    assert autosave is not None and window.model.dirty and not window.running
    out = in_another_process("""
        from workbench.core.errors import WorkbenchError
        from workbench.core.io.session_lock import SessionLock
        from workbench.runner.autosave import autosave_dir, recoverable
        print([p.name for p in recoverable()])
        try:
            SessionLock(next(autosave_dir().glob("*.json"))).acquire()
        except WorkbenchError as exc:
            print(exc)
    """)
    offered, refused = out.splitlines()
    assert offered == "[]"  # the window is idle, not gone: nothing crashed
    assert refused.endswith(f"is in use by pid {os.getpid()}")


def test_a_second_window_can_neither_recover_it_nor_have_it_removed_under_it(window, qtbot, tmp_path):
    start_and_wait(window, qtbot, RUN)
    autosave = window.autosave_path
    other = second_window(qtbot, tmp_path)
    assert other.recoverable() == []
    assert not other.recover(autosave)  # e.g. from a list taken before the first window ran
    assert f"in use by pid {os.getpid()}" in other.statusBar().currentMessage()
    assert other.model.session is None and other.autosave_path is None
    assert len(load_session(autosave).trials) == 4
    assert window.close()  # automation: the unsaved run is discarded, under its lock
    assert not autosave.exists() and not journal_path(autosave).exists() and not lock_path(autosave).exists()


def test_the_window_holds_its_autosave_between_runs_and_lends_it_to_each(window, qtbot):
    start_and_wait(window, qtbot, RUN)
    autosave = window.autosave_path
    assert locked_by_other(autosave)
    window.toolbar.budget.setValue(3)
    result = start_and_wait(window, qtbot, window.toolbar.request())  # continues into its autosave
    assert result.reason == "budget", result.message
    assert window.autosave_path == autosave and window.path is None
    assert locked_by_other(autosave) and len(load_session(autosave).trials) == 7


def test_a_session_replaced_or_saved_lets_go_of_its_autosave(window, qtbot, tmp_path):
    start_and_wait(window, qtbot, RUN)
    kept = window.autosave_path
    saved = tmp_path / "saved.json"
    save_session(load_session(kept), saved)
    window.open_session(saved)  # non-interactive: nothing is discarded, the autosave stays for recovery
    assert not locked_by_other(kept) and kept.exists()
    other = second_window(qtbot, tmp_path)
    assert other.recoverable() == [kept] and other.recover(kept)
    assert other.autosave_path == kept and other.model.dirty and locked_by_other(kept)
    assert window.close()  # the first window no longer shows it: it does not touch it
    assert kept.exists() and lock_path(kept).exists()
    window.new_session()
    start_and_wait(window, qtbot, RUN)
    own = window.autosave_path
    assert own != kept and window.save_to(tmp_path / "named.json")
    assert not own.exists() and not lock_path(own).exists() and not locked_by_other(own)
    assert other.close() and not kept.exists() and not lock_path(kept).exists()


def test_an_autosave_another_process_holds_is_never_removed(window, qtbot):
    start_and_wait(window, qtbot, RUN)
    autosave = window.autosave_path
    window.new_session()  # non-interactive: the unsaved run stays for recovery
    assert window.autosave_path is None and not locked_by_other(autosave)
    holder = Holder(autosave)
    try:
        why = discard(autosave)
        assert why is not None and "in use by pid" in why and "\n" not in why
        assert autosave.exists() and lock_path(autosave).exists()  # neither the file nor the holder's lock
        assert len(load_session(autosave).trials) == 4
    finally:
        holder.let_go()
    assert discard(autosave) is None
    assert not autosave.exists() and not journal_path(autosave).exists() and not lock_path(autosave).exists()


def test_save_as_onto_its_own_autosave_is_refused_for_the_folder_not_as_a_file_in_use(window, qtbot):
    """The window holds that lock itself: it was refused as a file in use by its own process.
    Saved there, the autosave became the session's file, which the next run locked a second time
    ("in use by" the window's own process) and a clean close left to be offered as a crashed run;
    the autosave folder is the program's, and saving into it is refused as such."""
    start_and_wait(window, qtbot, RUN)
    autosave = window.autosave_path
    assert not window.save_to(autosave)
    message = window.statusBar().currentMessage()
    assert "autosave folder" in message and "in use" not in message
    assert window.path is None and window.autosave_path == autosave
    window.toolbar.budget.setValue(2)
    result = start_and_wait(window, qtbot, window.toolbar.request())  # continues into its autosave
    assert result.reason == "budget", result.message
    assert len(load_session(autosave).trials) == 6


def test_a_crashed_runs_autosave_is_recovered_off_the_gui_thread_and_its_lock_given_back_when_not(window, qtbot,
                                                                                                     tmp_path):
    """Recovery read the autosave on the GUI thread, freezing the window that had just asked about
    it; it is read as Open reads a file, under the autosave's lock from before the read."""
    start_and_wait(window, qtbot, RUN)
    kept = window.autosave_path
    window.new_session()  # non-interactive: the unsaved run stays for recovery
    other = second_window(qtbot, tmp_path)
    # given up while it is read: nothing shown, the lock back
    other.recover_in_background(kept)
    assert other.opening is not None and locked_by_other(kept)
    other._file_reading.cancel()
    assert not locked_by_other(kept) and other.model.session is None and other.autosave_path is None
    # while another file is read: refused in one line, the lock back
    other._file_reading.start(kept, lambda: None, lambda _value: None, lambda _error: None, dialog=False)
    other.recover_in_background(kept)
    assert "is still being read" in other.statusBar().currentMessage() and not locked_by_other(kept)
    other._file_reading.cancel()
    # read to the end: this window's unsaved session, under its lock
    other.recover_in_background(kept)
    assert other.model.session is None  # not read on the GUI thread
    qtbot.waitUntil(lambda: other.model.session is not None, timeout=30_000)
    assert other.autosave_path == kept and other.path is None and other.model.dirty and locked_by_other(kept)
    assert other.model.n == 4
    # said (the window showed an "untitled *" session and nothing of what came back)
    assert other.statusBar().currentMessage().startswith(
        f"recovered 4 trials of {other.model.session.kernel} from {kept.name}, the autosave of an unsaved session")
    # a damaged autosave: said in one line, the lock back, the window as it was
    third = second_window(qtbot, tmp_path, "c")
    broken = kept.with_name("broken.json")
    broken.write_text('{"format": ')
    third.recover_in_background(broken)
    qtbot.waitUntil(lambda: third.opening is None, timeout=30_000)
    assert third.statusBar().currentMessage().startswith("Cannot recover: ")
    assert not locked_by_other(broken) and third.model.session is None and third.autosave_path is None
    assert other.close()


def test_an_automated_window_saved_mid_run_keeps_what_the_file_lacks_in_its_autosave(window, qtbot, tmp_path):
    """Saved to a file while its run went on in the autosave, an automated window's session held
    trials the file lacked; closing it removed the autosave with them (no one to ask)."""
    window.start_run({"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 40, "delay_s": 0.05,
                      "options": {"compile": "estimate"}})
    qtbot.waitUntil(lambda: window.model.n >= 3, timeout=30_000)
    assert window.running
    named = tmp_path / "mid.json"
    assert window.save_to(named)
    autosave = window.autosave_path
    assert autosave is not None
    assert window.wait_for_run(60)
    qtbot.waitUntil(lambda: not window.running, timeout=10_000)
    whole = window.model.n
    assert len(load_session(named).trials) < whole and window.model.dirty
    assert window.close()
    assert len(load_session(autosave).trials) == whole  # kept for the next start to recover
    assert autosave in second_window(qtbot, tmp_path).recoverable()


def test_an_automated_window_closed_mid_run_on_a_full_disk_closes_and_its_journal_keeps_the_trials(
        window, qtbot, monkeypatch, caplog):
    """Closed during its run (a stop signal) with no file, an automated window saves the run to its
    autosave; on a full disk that save raised out of the close, which Qt printed as a chain of
    "Error calling Python override" lines, and the command exited 1 instead of by the signal."""
    import logging

    from workbench.core.domain import session as session_module

    window.start_run({"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 400, "delay_s": 0.05,
                      "options": {"compile": "estimate"}})
    qtbot.waitUntil(lambda: window.model.n >= 3, timeout=30_000)
    autosave = window.autosave_path
    assert window.running and autosave is not None and window.path is None

    def disk_full(*_args, **_kwargs):
        raise WorkbenchError(f"{autosave}: cannot save session (No space left on device)")

    monkeypatch.setattr(session_module, "save_session", disk_full)
    with caplog.at_level(logging.WARNING):
        assert window.close()
    assert any("could not keep the unsaved trials" in r.getMessage() for r in caplog.records)
    assert len(load_session(journal_path(autosave)).trials) >= 3  # the journal holds what the run measured


def test_a_session_is_not_saved_into_the_autosave_folder(window, qtbot):
    """A file saved there was offered at the next start as a crashed run, and recovering it
    removed it (the Save As dialog suggests that folder once an autosave was opened from it)."""
    start_and_wait(window, qtbot, RUN)
    own = window.autosave_path
    target = own.parent / "mywork.json"
    assert not window.save_to(target) and not target.exists()
    assert "autosave folder" in window.statusBar().currentMessage()
    assert window.autosave_path == own and own.exists()
    with pytest.raises(WorkbenchError, match="autosave folder"):  # nor an export: it would be offered too
        window.export_best(str(own.parent / "best.json"))
    assert not (own.parent / "best.json").exists()


def test_a_save_does_not_put_its_objective_back_over_one_changed_elsewhere(window, qtbot, tmp_path):
    """Two windows on one file: the second Save wrote its own constraints and weights over the
    first one's, without a word (the trials were merged; the objective was last-writer-wins)."""
    start_and_wait(window, qtbot, RUN)
    path = tmp_path / "shared.json"
    assert window.save_to(path)
    other = second_window(qtbot, tmp_path)
    other.open_session(path)
    other.model.set_constraints(max_latency_ms=4.0)
    assert other.save_to(path)
    assert load_session(path).constraints.max_latency_ms == 4.0
    window.model.set_constraints(max_latency_ms=9.0)
    assert not window.save_to(path)
    assert "changed elsewhere" in window.statusBar().currentMessage()
    assert load_session(path).constraints.max_latency_ms == 4.0
    # reopened, the file's objective is the one it builds on: its save goes through
    window.open_session(path)
    window.model.set_constraints(max_latency_ms=5.0)
    assert window.save_to(path) and load_session(path).constraints.max_latency_ms == 5.0


def test_an_objective_changed_here_is_no_change_elsewhere_whichever_files_the_session_went_to(window, qtbot, tmp_path):
    """The record of what a file held was one per session: a run's save to the autosave, or a
    Save As copy, replaced the record of the session's own file, and the next Save there was
    refused as "changed elsewhere" though nothing else had written it."""
    window.start_run({"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 30, "delay_s": 0.05,
                      "options": {"compile": "estimate"}})
    qtbot.waitUntil(lambda: window.model.n >= 3, timeout=30_000)
    mid = tmp_path / "mid.json"
    assert window.save_to(mid)
    window.model.set_constraints(max_latency_ms=3.0)  # during the run, which ends in the autosave
    assert window.wait_for_run(60)
    qtbot.waitUntil(lambda: not window.running, timeout=10_000)
    assert window.save_to(mid), window.statusBar().currentMessage()
    window.model.set_constraints(max_latency_ms=2.0)
    assert window.save_to(tmp_path / "copy.json")
    assert window.save_to(mid), window.statusBar().currentMessage()  # back onto the earlier file
    assert load_session(mid).constraints.max_latency_ms == 2.0


@pytest.mark.parametrize("then", ["save", "discard", "cancel"])
def test_closing_during_an_unsaved_run_asks_where_to_save_as_promised(window, qtbot, monkeypatch, tmp_path, then):
    """Yes to "stop the run and save its trials" saved nothing: the trials went to an autosave,
    and the next start offered them as a run that did not end cleanly."""
    from PySide6.QtWidgets import QApplication, QFileDialog, QMessageBox

    monkeypatch.setenv("WORKBENCH_SLOW_S", "0.05")
    window.interactive = True
    asked: list[str] = []
    answers = {"Save the current session first?": {"save": QMessageBox.StandardButton.Save,
                                                   "discard": QMessageBox.StandardButton.Discard,
                                                   "cancel": QMessageBox.StandardButton.Cancel}[then]}

    def question(_parent, _title, text, *_a, **_k):
        asked.append(text)
        QApplication.processEvents()  # a modal question runs an event loop of its own
        return answers.get(text, QMessageBox.StandardButton.Yes)

    monkeypatch.setattr(QMessageBox, "question", question)
    target = tmp_path / "kept.json"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(target), ""))
    window.trusted_code.add(Path(SLOW).resolve())
    window.start_run({"kernel": SLOW, "backend": "python", "strategy": "random", "budget": 400})
    qtbot.waitUntil(lambda: window.model.n >= 2, timeout=30_000)
    autosave = window.autosave_path
    closed = window.close()
    assert asked[0] == "Stop the run before closing? You are asked next whether to save its trials."
    assert asked[1] == "Save the current session first?"
    if then == "cancel":  # the window stays, its run stopped and its end shown
        assert not closed and window.isVisible()
        qtbot.waitUntil(lambda: not window.running and window.toolbar.start.isEnabled(), timeout=10_000)
        window.interactive = False
        return
    assert closed
    assert target.exists() == (then == "save")
    assert autosave is None or not autosave.exists()  # nothing left for the next start to call a crash


def test_an_autosave_folder_that_is_a_file_refuses_start_in_one_line(window, qtbot, tmp_path, monkeypatch):
    """Start raised FileExistsError out of its slot (a traceback on the terminal, nothing in the
    window) when a file stood where the autosave folder goes."""
    blocked = tmp_path / "autosave-file"
    blocked.write_text("x")
    monkeypatch.setenv("KERNEL_WORKBENCH_AUTOSAVE_DIR", str(blocked))
    window.toolbar.budget.setValue(2)
    window._on_start()
    said = window.statusBar().currentMessage()
    assert f"autosave folder {blocked}: is not a folder" in said and not window.running, said
    assert blocked.read_text() == "x"


def test_a_save_question_closed_unanswered_keeps_the_unsaved_trials_and_their_autosave(window, qtbot):
    """A stop signal closes an open question without an answer (``reject``, as the application's
    signal handler does): "Save the current session first?" closed so was taken for Discard, and
    a SIGTERM while it was open deleted the session's only copy, its autosave."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 3,
                          "options": {"compile": "estimate"}})
    autosave = window.autosave_path
    assert window.model.dirty and autosave is not None and autosave.exists()
    window.interactive = True
    asked: list[str] = []

    def unanswered() -> None:
        modal = QApplication.activeModalWidget()
        if modal is None:
            QTimer.singleShot(20, unanswered)
            return
        asked.append(modal.text())
        modal.reject()

    QTimer.singleShot(0, unanswered)
    closed = window.close()
    assert asked == ["Save the current session first?"]
    assert not closed and window.isVisible() and autosave.exists() and window.model.dirty
    window.interactive = False


def _run_saved_then_changed_elsewhere(window, qtbot, tmp_path, budget: int) -> Path:
    """A run going, saved to g.json mid-run, whose file another program then changed (its
    constraints): a later save there is refused ("save this session under another name")."""
    window.trusted_code.add(Path(SLOW).resolve())
    window.start_run({"kernel": SLOW, "backend": "python", "strategy": "random", "budget": budget})
    qtbot.waitUntil(lambda: window.model.n >= 2, timeout=30_000)
    target = tmp_path / "g.json"
    assert window.save_to(target)
    doc = load_session(target)
    doc.constraints = dataclasses.replace(doc.constraints, max_latency_ms=0.2)  # changed by another program
    save_session(doc, target)
    return target


def test_closing_during_a_run_stays_open_when_the_promised_save_fails(window, qtbot, monkeypatch, tmp_path):
    """Yes to "stop the run and save its trials to g.json" then a save that failed (the file's
    constraints changed elsewhere: "save this session under another name") closed the window all
    the same, the trials in the autosave alone: the person could not follow the advice."""
    from PySide6.QtWidgets import QApplication, QMessageBox

    monkeypatch.setenv("WORKBENCH_SLOW_S", "0.05")
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: (QApplication.processEvents(), QMessageBox.StandardButton.Yes)[1])
    warned: list[str] = []
    monkeypatch.setattr(QMessageBox, "warning", lambda _p, _t, text, *a, **k: warned.append(text))
    _run_saved_then_changed_elsewhere(window, qtbot, tmp_path, budget=400)
    window.interactive = True
    closed = window.close()
    assert not closed and window.isVisible()  # it stays: the person saves elsewhere, as advised
    qtbot.waitUntil(lambda: not window.running and window.toolbar.start.isEnabled(), timeout=10_000)
    assert window.save_to(tmp_path / "elsewhere.json")
    assert len(load_session(tmp_path / "elsewhere.json").trials) == window.model.n
    window.interactive = False


def test_save_as_over_a_killed_runs_journal_says_where_the_journal_went(window, qtbot, tmp_path):
    """Saving where only a killed run's journal lay kept it as a backup (nothing lost) and said
    "saved FILE" alone for three seconds: the person did not know 217 trials had moved."""
    start_and_wait(window, qtbot, RUN)
    other = tmp_path / "other.json"
    assert window.save_to(other)
    target = tmp_path / "k1.json"
    os.replace(other, tmp_path / "moved.json")
    from workbench.core.domain.session import Journal

    killed = load_session(tmp_path / "moved.json")
    killed.id = "another-session"  # another run's, killed before its first save: its journal alone
    with Journal(target) as journal:
        journal.start(killed)
    assert journal_path(target).exists() and not target.exists()
    assert window.save_to(target)
    said = window.statusBar().currentMessage()
    assert said.startswith(f"saved {target}; kept what was there as "), said
    kept = said.split("kept what was there as ", 1)[1].split(", ")
    assert kept and all(Path(p).exists() for p in kept)
    assert window.save_to(target)  # saved again over its own file: nothing kept, nothing to say
    assert window.statusBar().currentMessage() == f"saved {target}"


def test_opening_a_file_with_a_killed_runs_journal_says_it_was_merged(window, qtbot, tmp_path):
    """The window showed the file with a killed run's trials merged, its constraints over the
    file's, as if the file held them: no line said so, and no "*" told the two apart."""
    start_and_wait(window, qtbot, RUN)
    target = tmp_path / "k.json"
    assert window.save_to(target)
    from workbench.core.domain.measurement import Measurement, Status, Trial
    from workbench.core.domain.session import Journal

    session = load_session(target)
    with Journal(target) as journal:  # a continued run, killed after one more trial
        journal.start(session)
        journal.append(Trial(len(session.trials), session.trials[0].config, Measurement(Status.OK, {"latency_ms": 9.0})))
    window.new_session()
    window.open_session(target)
    assert window.model.n == len(session.trials) + 1
    said = window.statusBar().currentMessage()
    assert said.startswith("k.json: read with k.json.journal, the journal of a run that did not end"), said
    assert window.model.dirty and window.windowTitle().endswith(" *")  # the file lacks it until saved
    window.model.dirty = False
    window.new_session()
    with SessionLock(target):  # a run in another process writing it: said as such
        window.open_session(target)
        assert "a run in another process is writing it" in window.statusBar().currentMessage()
    window.new_session()
    alone = tmp_path / "alone.json"  # killed before its first save: the journal alone
    with Journal(alone) as journal:
        journal.start(session)
        journal.append(Trial(0, session.trials[0].config, Measurement(Status.OK, {"latency_ms": 9.0})))
    window.open_session(journal_path(alone))
    assert window.statusBar().currentMessage().startswith(
        f"alone.json: rebuilt from alone.json.journal, the journal of a run killed before its first save "
        f"({len(session.trials) + 1} trials); Save writes alone.json")
    window.model.dirty = False
    window.new_session()
    header_only = tmp_path / "h.json"  # a journal of a header alone merges nothing: nothing claimed
    save_session(session, header_only)
    empty = load_session(header_only)
    empty.trials = []
    with Journal(header_only) as journal:
        journal.start(empty)
    window.statusBar().clearMessage()
    window.open_session(header_only)
    assert "journal" not in window.statusBar().currentMessage() and not window.model.dirty


def test_a_run_that_ends_while_the_close_question_is_asked_leaves_the_window_idle(window, qtbot, monkeypatch,
                                                                                  tmp_path):
    """The run ended (its end shown) while the person read "stop the run and save?"; the save then
    failed and the window stayed, but marked as running for good: Start, Open and New refused."""
    from PySide6.QtWidgets import QMessageBox

    monkeypatch.setenv("WORKBENCH_SLOW_S", "0.02")

    def question(*_a, **_k):  # read slowly: the run ends meanwhile, in this question's event loop
        qtbot.waitUntil(lambda: not window.running, timeout=30_000)
        return QMessageBox.StandardButton.Yes

    monkeypatch.setattr(QMessageBox, "question", question)
    monkeypatch.setattr(QMessageBox, "warning", lambda *a, **k: None)
    _run_saved_then_changed_elsewhere(window, qtbot, tmp_path, budget=30)
    window.interactive = True
    assert not window.close() and window.isVisible()
    window.interactive = False
    assert not window.running and window.toolbar.start.isEnabled()
    assert window.save_to(tmp_path / "elsewhere.json")  # as the failed save advised


def test_discarding_for_a_run_that_is_refused_keeps_the_shown_trials_autosave(window, qtbot, monkeypatch) -> None:
    """Discard at "Save the current session first?" deleted the shown trials' autosave before the
    new run was prepared: a run then refused (a problem parameter the template lacks) left the
    window showing trials no file held. The autosave goes once the new run is under way."""
    from PySide6.QtWidgets import QMessageBox

    base = {"backend": "sim", "budget": 2, "options": {"compile": "estimate"}}
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({**base, "kernel": "vector_add"})
    autosave = window.autosave_path
    assert autosave is not None and autosave.exists() and window.model.dirty
    window.interactive = True
    monkeypatch.setattr(QMessageBox, "question", staticmethod(lambda *a, **k: QMessageBox.StandardButton.Discard))
    with pytest.raises(WorkbenchError, match="alpha"):
        window.start_run({**base, "kernel": "reduce_sum", "problem": {"alpha": 2.0}})
    assert autosave.exists() and window.model.session.kernel == "vector_add"
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({**base, "kernel": "reduce_sum"})
    window.interactive = False
    assert not autosave.exists() and window.model.session.kernel == "reduce_sum"


@pytest.mark.parametrize("how", ["cancelled", "unreadable", "opened", "recent", "import"])
def test_discarding_for_an_open_keeps_the_shown_trials_autosave_until_the_file_is_shown(
        window, qtbot, monkeypatch, tmp_path, how) -> None:
    """Discard at "Save the current session first?" before Open, Open recent or Import deleted the
    shown trials' autosave at the answer: a file dialog then cancelled, or a file that could not be
    read, left the window showing trials no file held. The autosave goes once the file is shown."""
    from PySide6.QtWidgets import QFileDialog, QMessageBox

    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({"backend": "sim", "budget": 2, "options": {"compile": "estimate"}, "kernel": "vector_add"})
    autosave, shown = window.autosave_path, window.model.session
    assert autosave is not None and autosave.exists() and window.model.dirty
    good = tmp_path / "good.json"
    if how == "import":
        good = Path(__file__).parents[1] / "fixtures" / "kt_cache_small.json"
    else:
        other = second_window(qtbot, tmp_path)
        start_and_wait(other, qtbot, {"backend": "sim", "budget": 2, "options": {"compile": "estimate"},
                                      "kernel": "reduce_sum"})
        assert other.save_to(good)
    bad = tmp_path / "bad.json"
    bad.write_text("{ not a session")
    picked = {"cancelled": "", "unreadable": str(bad)}.get(how, str(good))
    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(lambda *a, **k: (picked, "")))
    monkeypatch.setattr(QMessageBox, "question", staticmethod(lambda *a, **k: QMessageBox.StandardButton.Discard))
    monkeypatch.setattr(QMessageBox, "warning", staticmethod(lambda *a, **k: None))
    window.interactive = True
    {"recent": lambda: window._open_recent(picked), "import": window._on_import_kt}.get(how, window._on_open)()
    qtbot.waitUntil(lambda: window.opening is None, timeout=30_000)
    window.interactive = False
    if how in ("cancelled", "unreadable"):
        assert autosave.exists() and window.autosave_path == autosave and window.model.session is shown
    else:
        assert not autosave.exists() and window.autosave_path is None and window.model.session is not shown
