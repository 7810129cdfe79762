"""Runs started from the window go through the run controller: a reopened session of any backend
continues with its own settings, and autosaves exist only while a run could still be lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtGui import QPalette

from workbench.core.errors import WorkbenchError
from workbench.core.domain.session import load_session, save_session
from workbench.core.io.session_lock import SessionLock
from workbench.runner.autosave import autosave_dir, file_stem
from workbench.runner.controller import RunRequest, run_to_end, start_run
from workbench.runner.events import TrialFinished
from workbench.gui.text import WARNING_TEXT

BENCH = str(Path(__file__).with_name("gui_bench.py"))


def start_and_wait(window, qtbot, run, timeout_ms=60_000):
    with qtbot.waitSignal(window.run_done, timeout=timeout_ms) as blocker:
        window.start_run(run)
    return blocker.args[0]


def stopped_after(request: RunRequest, path: Path, evaluations: int) -> None:
    run = start_run(request, path)
    seen = []

    def on_event(event) -> None:
        if isinstance(event, TrialFinished):
            seen.append(event)
            if len(seen) == evaluations:
                run.stop()

    run.subscribe(on_event)
    assert run.run().reason == "stopped"


def test_start_on_a_reopened_python_session_continues_it_once_its_code_is_confirmed(window, qtbot, tmp_path):
    path = tmp_path / "bench.json"
    run_to_end(RunRequest(kernel=BENCH, strategy="random", budget=12, seed=3), path)
    window.open_session(path)
    assert window.toolbar.budget.value() == 12  # all 12 done: the recorded budget is offered again
    with pytest.raises(WorkbenchError, match="python benchmark"):  # opening a file never chooses code to run
        window.start_run(window.toolbar.request())
    assert not window.running and len(load_session(path).trials) == 12
    window.trusted_code.add(Path(BENCH).resolve())  # what the confirmation dialog records
    window.toolbar.budget.setValue(5)
    result = start_and_wait(window, qtbot, window.toolbar.request())
    assert result.reason == "budget", result.message
    session = load_session(path)  # written to its own file, not to an autosave
    assert len(session.trials) == 17 and len({t.config.id for t in session.trials}) == 17
    assert session.backend["kind"] == "python" and session.kernel == "gui_bench"
    assert window.autosave_path is None and not list(autosave_dir().glob("*.json*"))


def test_new_session_after_a_python_session_does_not_import_its_benchmark(window, qtbot, tmp_path):
    """New session kept the opened session's benchmark in the kernel field and imported it to show
    its space: the file a session names ran without the person's yes."""
    marker = tmp_path / "RAN"
    bench = tmp_path / "marked.py"
    bench.write_text(Path(BENCH).read_text() + f"\nopen({str(marker)!r}, 'w').close()\n")
    path = tmp_path / "s.json"
    run_to_end(RunRequest(kernel=str(bench), strategy="random", budget=3), path)
    marker.unlink()
    window.open_session(path)
    window.new_session()
    assert window._reading_benchmark is None and "read when you confirm" in window.slots_panel.count_label.text()
    qtbot.wait(200)
    assert not marker.exists()
    # and Start asks, as it does for a continued session (a new run of it started unasked)
    with pytest.raises(WorkbenchError, match="needs the person's yes"):
        window.start_run(window.toolbar.request())
    assert not marker.exists()
    # a session of another backend naming the file as its kernel puts it in the field the same way
    session = load_session(path)
    session.backend = {"kind": "sim", "options": {"kernel": "vector_add"}}
    session.kernel = str(bench)
    crafted = tmp_path / "crafted.json"
    save_session(session, crafted)
    window.open_session(crafted)
    assert window.toolbar.kernel.currentText() == str(bench)
    window.new_session()
    qtbot.wait(200)
    assert window._reading_benchmark is None and not marker.exists()
    # another session shown since: the kernel list still holds the file as an item, still not the person's
    other = tmp_path / "other.json"
    run_to_end(RunRequest(kernel="vector_add", backend="sim", strategy="random", budget=2,
                          backend_options={"compile": "estimate"}), other)
    window.open_session(other)
    window.new_session()
    window._on_kernel_changed(str(bench))  # the person picks the item
    qtbot.wait(200)
    assert window._reading_benchmark is None and not marker.exists()
    with pytest.raises(WorkbenchError, match="needs the person's yes"):
        window.start_run({**window.toolbar.request(), "kernel": str(bench), "backend": "python"})
    assert not marker.exists()
    window.trusted_code.add(bench.resolve())  # once confirmed, the field reads it as for any file
    window._on_kernel_changed(str(bench))
    qtbot.waitUntil(lambda: window._reading_benchmark is None, timeout=30_000)
    assert marker.exists()


def test_start_after_stop_goes_on_to_the_budget_as_after_reopening(window, qtbot, monkeypatch, tmp_path):
    """A run stopped early left the budget box at the whole budget, and Start measured all of it
    again (a reopened file offers what is left): the same session offered two budgets."""
    merit = str(Path(__file__).parents[1] / "fixtures" / "merit_bench.py")
    monkeypatch.setenv("WORKBENCH_SLOW_S", "0.05")
    window.trusted_code.add(Path(merit).resolve())
    window.start_run({"kernel": merit, "backend": "python", "strategy": "random", "budget": 40, "seed": 1})
    qtbot.waitUntil(lambda: window.model.n >= 4, timeout=30_000)
    with qtbot.waitSignal(window.run_done, timeout=30_000):
        window.stop_run()
    done = window.model.n
    assert 4 <= done < 40 and window.toolbar.budget.value() == 40 - done
    monkeypatch.setenv("WORKBENCH_SLOW_S", "0")
    result = start_and_wait(window, qtbot, window.toolbar.request())
    assert result.reason == "budget" and window.model.n == 40
    assert window.toolbar.budget.value() == 40  # all measured: the recorded budget again, as on reopening


def test_pause_and_stop_are_off_once_a_stop_is_asked_for(window, qtbot, monkeypatch):
    """Stopped while paused, the window said "stopping..." beside an enabled Resume."""
    merit = str(Path(__file__).parents[1] / "fixtures" / "merit_bench.py")
    monkeypatch.setenv("WORKBENCH_SLOW_S", "0.05")
    window.trusted_code.add(Path(merit).resolve())
    window.start_run({"kernel": merit, "backend": "python", "strategy": "random", "budget": 40, "seed": 1})
    qtbot.waitUntil(lambda: window.model.n >= 2, timeout=30_000)
    window._on_pause()
    assert window.toolbar.pause.text() == "Resume" and window.toolbar.pause.isEnabled()
    with qtbot.waitSignal(window.run_done, timeout=30_000):
        window.stop_run()
        assert not window.toolbar.pause.isEnabled() and not window.toolbar.stop.isEnabled()
    assert window.toolbar.start.isEnabled()


def test_the_row_the_window_picked_follows_the_new_best_and_the_persons_pick_stays(window, qtbot, tmp_path):
    """The window selects the best when a run ends; a continued run that found a better one left
    the table, source view and chart ring on the old one while the card named the new one."""
    bench = tmp_path / "rising.py"
    bench.write_text("SPACE = {'i': list(range(40))}\n\ndef measure(config):\n"
                     "    return {'latency_ms': 100.0 - config['i']}\n")
    window.trusted_code.add(bench.resolve())
    start_and_wait(window, qtbot, {"kernel": str(bench), "backend": "python", "strategy": "grid", "budget": 10})
    first = window.model.selected
    assert first is not None and first == window.model.ranking.best
    start_and_wait(window, qtbot, {**window.toolbar.request(), "budget": 10})
    best = window.model.ranking.best
    assert best != first and window.model.selected == best  # the window's own pick follows
    window.model.select(3)  # the person's pick
    start_and_wait(window, qtbot, {**window.toolbar.request(), "budget": 10})
    assert window.model.ranking.best != best and window.model.selected == 3


def test_a_refused_start_leaves_the_controls_as_they_were(window, qtbot):
    """Automation's request was put into the controls before the checks: a refused one left the
    kernel box and problem field naming a run that never started, beside the session shown."""
    start_and_wait(window, qtbot, {"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 3,
                                   "options": {"compile": "estimate"}})
    before = window.toolbar.request()
    with pytest.raises(WorkbenchError):
        window.start_run({"kernel": "softmax", "backend": "sim", "problem": {"n": 5}, "budget": 3})
    assert not window.running and window.toolbar.request() == before
    assert window.toolbar.kernel.currentText() == "vector_add" and window.model.session.kernel == "vector_add"


def test_start_on_a_reopened_replay_session_keeps_its_trials_kernel_and_budget(window, qtbot, tmp_path):
    recording = tmp_path / "rec.json"
    run_to_end(RunRequest(kernel=BENCH, strategy="random", budget=60, seed=1), recording)
    path = tmp_path / "replay.json"
    stopped_after(RunRequest(replay=str(recording), strategy="random", budget=30), path, 10)
    window.open_session(path)
    assert window.model.n == 10
    assert window.toolbar.budget.value() == 20  # what the session's budget has left
    result = start_and_wait(window, qtbot, window.toolbar.request())
    assert result.reason == "budget", result.message
    session = load_session(path)
    assert len(session.trials) == 30 and len({t.config.id for t in session.trials}) == 30
    assert session.kernel == "gui_bench" and session.backend["kind"] == "replay"
    assert not list(autosave_dir().glob("*.json*"))


def test_a_finished_unsaved_run_is_kept_until_a_normal_close_then_nothing_is_left(qtbot, tmp_path):
    from workbench.gui.settings_store import JsonSettings

    from workbench.gui.main_window import MainWindow

    settings = JsonSettings(str(tmp_path / "p.ini"))
    window = MainWindow(interactive=False, settings=settings)
    qtbot.addWidget(window)
    start_and_wait(window, qtbot, {"kernel": BENCH, "backend": "python", "strategy": "random", "budget": 8})
    autosave = window.autosave_path
    assert len(load_session(autosave).trials) == 8  # unsaved: a crash now would still lose nothing
    assert window.close()
    assert not autosave.exists() and not list(autosave_dir().iterdir())
    later = MainWindow(interactive=False, settings=settings)
    qtbot.addWidget(later)
    assert later.recoverable() == []


def test_an_autosave_a_live_run_still_writes_is_not_offered_for_recovery(window, tmp_path):
    folder = autosave_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "s.json"
    run_to_end(RunRequest(kernel=BENCH, strategy="random", budget=3), path)
    crashed, live = folder / "crashed.json", folder / "live.json"
    save_session(load_session(path), crashed)
    save_session(load_session(path), live)
    with SessionLock(live):
        assert window.recoverable() == [crashed]
    assert set(window.recoverable()) == {crashed, live}


def test_autosave_names_cannot_leave_their_folder():
    for hostile in ("../../etc/passwd", "a/b\nc", "", "..", "x" * 500, "名前"):
        stem = file_stem(hostile)
        assert stem and "/" not in stem and ".." not in stem and not stem.startswith(".")


def test_save_refuses_a_file_another_process_writes(window, qtbot, tmp_path):
    start_and_wait(window, qtbot, {"kernel": BENCH, "backend": "python", "strategy": "random", "budget": 3})
    busy = tmp_path / "busy.json"
    with SessionLock(busy):  # as a `tune` writing that file would hold it
        assert not window.save_to(busy)
        assert "in use by pid" in window.statusBar().currentMessage()
    assert not busy.exists()
    assert window.save_to(busy) and len(load_session(busy).trials) == 3


def test_save_as_refuses_the_name_of_a_journal_or_lock_and_writes_over_nothing(window, qtbot, tmp_path):
    """Save As ``notes.journal`` wrote the session over ``notes``, a file of the person's own."""
    start_and_wait(window, qtbot, {"kernel": BENCH, "backend": "python", "strategy": "random", "budget": 3})
    folder = tmp_path / "mine"
    folder.mkdir()
    notes = folder / "notes"
    notes.write_text("my notes\n")
    for name in ("notes.journal", "notes.lock", "kernel.cu", "bench.py"):
        assert not window.save_to(folder / name)
        assert "choose another name" in window.statusBar().currentMessage()
    assert notes.read_text() == "my notes\n" and sorted(p.name for p in folder.iterdir()) == ["notes"]


def test_a_journal_opened_in_the_window_is_saved_as_the_session_it_stands_for(window, tmp_path):
    """Opening the journal a killed run left showed its trials, then Save refused the journal's
    name; the window takes it as the session file it continues, as the command line does."""
    from test_run_controller import journal_only

    journal = journal_only(tmp_path / "k.json")
    window.open_session(journal)
    assert window.path == tmp_path / "k.json" and window.model.n == 3
    assert window.save() and len(load_session(tmp_path / "k.json").trials) == 3


def test_continuing_in_the_window_keeps_trials_another_run_added_to_the_file(window, qtbot, tmp_path):
    path = tmp_path / "s.json"
    run_to_end(RunRequest(kernel=BENCH, strategy="random", budget=5, seed=2), path)
    window.open_session(path)
    window.trusted_code.add(Path(BENCH).resolve())
    run_to_end(RunRequest(kernel=BENCH, budget=3), path, resume=True)  # a `tune --resume` meanwhile
    window.toolbar.budget.setValue(2)
    result = start_and_wait(window, qtbot, window.toolbar.request())
    assert result.reason == "budget", result.message
    session = load_session(path)
    assert len(session.trials) == 10 and [t.index for t in session.trials] == list(range(10))
    assert window.model.n == 10


@pytest.mark.parametrize("spelt", ["absolute", "relative"])
def test_saving_the_session_while_its_run_writes_the_same_file_keeps_no_backup(window, qtbot, tmp_path, monkeypatch,
                                                                               spelt):
    """A Save of the window's own run output is this program's own write: the run's final save
    keeps a file changed under it as .bak, and must not take the window's Save for such a change.
    Also for a file the window opened by a relative path (``gui s.json``), which the run's output,
    fixed as the system reads it, did not compare equal to: the Save was refused as in use by the
    window's own process."""
    slow = str(Path(__file__).parent.parent / "fixtures" / "slow_bench.py")
    monkeypatch.setenv("WORKBENCH_SLOW_S", "0.1")
    path = tmp_path / "s.json"
    run_to_end(RunRequest(kernel=slow, strategy="random", budget=3, seed=2), path)
    monkeypatch.chdir(tmp_path)
    window.open_session(path if spelt == "absolute" else "s.json")
    window.trusted_code.add(Path(slow).resolve())
    window.toolbar.budget.setValue(6)
    with qtbot.waitSignal(window.run_done, timeout=60_000) as done:
        window.start_run(window.toolbar.request())
        qtbot.waitUntil(lambda: window.model.n >= 5, timeout=30_000)
        assert window.running and window.save()
    assert done.args[0].reason == "budget" and "replaced by something else" not in done.args[0].message
    assert not (tmp_path / "s.json.bak").exists() and len(load_session(path).trials) == 9


def _replaced_by_another_session(window, tmp_path) -> tuple[Path, bytes]:
    """The window shows the session of ``s.json``; a `tune --force` then writes another one there."""
    path = tmp_path / "s.json"
    run_to_end(RunRequest(kernel=BENCH, strategy="random", budget=3, seed=2), path)
    window.open_session(path)
    window.trusted_code.add(Path(BENCH).resolve())
    run_to_end(RunRequest(kernel=BENCH, strategy="random", budget=6, seed=9), path, force=True)
    return path, path.read_bytes()


def test_save_refuses_a_file_that_now_holds_another_session(window, tmp_path):
    """The window wrote its session over the one a `tune --force` had put there (its .bak held the
    window's own session by then): 6 trials gone without a word."""
    path, theirs = _replaced_by_another_session(window, tmp_path)
    window.model.dirty = True
    assert not window.save_to(path)
    assert "now holds another session" in window.statusBar().currentMessage()
    assert path.read_bytes() == theirs


def test_a_continued_run_refuses_a_file_that_now_holds_another_session(window, qtbot, tmp_path):
    path, theirs = _replaced_by_another_session(window, tmp_path)
    with pytest.raises(WorkbenchError, match="now holds another session"):  # (Start shows it in a dialog)
        window.start_run({**window.toolbar.request(), "budget": 2})
    assert not window.running and path.read_bytes() == theirs


def test_save_over_a_file_that_is_not_a_session_keeps_it(window, qtbot, tmp_path):
    path = tmp_path / "s.json"
    run_to_end(RunRequest(kernel=BENCH, strategy="random", budget=3), path)
    window.open_session(path)
    path.write_text("notes, not a session\n")
    window.model.dirty = True
    assert not window.save_to(path)  # its own path: refused
    assert path.read_text() == "notes, not a session\n"
    other = tmp_path / "other.json"
    other.write_text("more notes\n")
    assert window.save_to(other)  # Save As, replacing confirmed in the dialog: kept as .bak
    assert (tmp_path / "other.json.bak").read_text() == "more notes\n"
    assert len(load_session(other).trials) == 3


def test_open_recent_never_drops_an_unsaved_run(window, qtbot, tmp_path):
    other = tmp_path / "other.json"
    run_to_end(RunRequest(kernel=BENCH, strategy="random", budget=3), other)
    window._add_recent(str(other))
    start_and_wait(window, qtbot, {"kernel": BENCH, "backend": "python", "strategy": "random", "budget": 4})
    autosave = window.autosave_path
    window.recent_menu.actions()[0].trigger()  # non-interactive: no question, so nothing is discarded
    qtbot.waitUntil(lambda: window.opening is None, timeout=30_000)  # read off the GUI thread
    assert window.path == other and autosave.exists()
    assert len(load_session(autosave).trials) == 4 and autosave in window.recoverable()


def test_a_run_counts_as_going_until_the_window_has_shown_its_end(window, qtbot):
    """The engine thread returns before the window handles its queued end; a run started in that
    gap would have the first run's end handed to it (the window once waited on it forever)."""
    window.start_run({"kernel": BENCH, "backend": "python", "strategy": "random", "budget": 3})
    first = window.engine_thread
    assert first.wait(30_000)  # the thread is done; its end is still queued for the GUI thread
    assert window.running
    with pytest.raises(WorkbenchError, match="already going"):
        window.start_run({"kernel": BENCH, "backend": "python", "strategy": "random", "budget": 3})
    with qtbot.waitSignal(window.run_done, timeout=30_000) as ended:
        pass
    assert ended.args[0] is first.result and not window.running
    assert window.toolbar.start.isEnabled()


def test_an_opened_session_sets_every_run_control_and_start_records_none_of_the_previous_ones(window, qtbot, tmp_path):
    """Controls the second session recorded nothing for (problem, time limit, GPU model, resource
    figures) show their defaults, not the first session's values, and Start does not write those
    into the second session."""
    import json

    first, second = tmp_path / "a.json", tmp_path / "b.json"
    run_to_end(RunRequest(kernel="vector_add", backend="sim", strategy="random", budget=5, seed=7, problem={"n": 4096},
                          time_limit_s=300, gpu_model="L4", backend_options={"compile": "estimate"}), first)
    run_to_end(RunRequest(kernel="vector_add", backend="sim", strategy="random", budget=5, seed=3,
                          backend_options={"compile": "estimate"}, time_limit_s=600), second)
    data = json.loads(second.read_text())  # an older file: no GPU model, resource figures or budget recorded
    for key in ("gpu_model", "compile"):
        data["backend"]["options"].pop(key)
    data["run"]["budget"] = data["run"]["time_limit_s"] = None
    second.write_text(json.dumps(data))
    toolbar = window.toolbar
    window.open_session(first)
    assert (toolbar.problem.text(), toolbar.minutes.value(), toolbar.gpu.currentText(), toolbar.seed.value()) == (
        "n=4096", 5.0, "L4", 7)
    assert toolbar.resources.currentData() == "estimate"
    toolbar.budget.setValue(33)
    window.open_session(second)
    assert toolbar.problem.text() == "" and toolbar.minutes.value() == 0.0 and toolbar.seed.value() == 3
    assert toolbar.gpu.currentText() == "H200" and toolbar.resources.currentData() == "nvrtc"
    assert toolbar.budget.value() == 100  # the default: the session recorded no budget
    request = toolbar.request()
    assert request["problem"] == {} and request["time_limit_s"] is None
    toolbar.budget.setValue(2)
    toolbar.resources.setCurrentIndex(toolbar.resources.findData("estimate"))
    result = start_and_wait(window, qtbot, toolbar.request())
    assert result.reason == "budget", result.message
    session = load_session(second)
    assert session.run.time_limit_s is None and session.problem["n"] != 4096
    assert session.backend["options"].get("gpu_model") in (None, "H200")


def test_a_session_naming_an_unknown_strategy_still_restores_every_other_control(window, tmp_path):
    import json

    first, second = tmp_path / "a.json", tmp_path / "b.json"
    run_to_end(RunRequest(kernel=BENCH, strategy="random", budget=4, seed=5, time_limit_s=120), first)
    run_to_end(RunRequest(kernel=BENCH, strategy="random", budget=9, seed=2), second)
    data = json.loads(second.read_text())
    data["strategy"]["name"] = "retired_strategy"
    second.write_text(json.dumps(data))
    window.open_session(first)
    window.toolbar.strategy.setCurrentText("local")
    window.open_session(second)
    toolbar = window.toolbar
    assert "retired_strategy" in window.statusBar().currentMessage()
    assert toolbar.minutes.value() == 0.0 and toolbar.seed.value() == 2 and toolbar.budget.value() == 9
    from workbench.search.base import DEFAULT_STRATEGY

    assert toolbar.strategy.currentText() == DEFAULT_STRATEGY


def test_new_open_recent_and_import_wait_for_the_run_and_say_so(window, qtbot, tmp_path, monkeypatch):
    """During a run the actions that would replace its session are disabled, and reaching them
    anyway (the menu's recent entries, a call, the shortcut) says in the status bar why nothing
    happens; when the run has ended they work again."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QFileDialog

    slow = str(Path(__file__).parents[1] / "fixtures" / "slow_bench.py")
    other = tmp_path / "other.json"
    run_to_end(RunRequest(kernel=BENCH, strategy="random", budget=3), other)
    window._add_recent(str(other))
    dialogs = []
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: dialogs.append(a[1]) or ("", ""))
    monkeypatch.setenv("WORKBENCH_SLOW_S", "0.05")
    window.start_run({"kernel": slow, "backend": "python", "strategy": "random", "budget": 400})
    actions = [window.actions_by_name[name] for name in ("new", "open", "import_kt")]
    assert not any(action.isEnabled() for action in actions) and not window.recent_menu.isEnabled()
    assert all("stop the run first" in action.toolTip() for action in actions)
    for attempt, what in ((window.new_session, "New session"), (window._on_open, "Open"),
                          (window._on_import_kt, "Import"),
                          (window.recent_menu.actions()[0].trigger, "Open recent")):
        window.statusBar().clearMessage()
        attempt()
        assert window.statusBar().currentMessage().startswith(f"{what}: a run is going; stop it first")
    window.statusBar().clearMessage()
    assert window._busy_shortcuts and all(s.isEnabled() for s in window._busy_shortcuts)
    qtbot.keyClick(window, Qt.Key.Key_O, Qt.KeyboardModifier.ControlModifier)  # the disabled action's shortcut
    assert window.statusBar().currentMessage().startswith("Open: a run is going; stop it first")
    assert dialogs == [] and window.path is None and window.running
    # a script's open_session (or recover) swapped the window to another file while the run went
    # on writing its own
    shown = window.model.session
    with pytest.raises(WorkbenchError, match="a run is going; stop it first"):
        window.open_session(other)
    assert window.model.session is shown and window.path is None
    with qtbot.waitSignal(window.run_done, timeout=30_000):
        window.stop_run()
    assert all(action.isEnabled() for action in actions) and window.recent_menu.isEnabled()
    assert not any(s.isEnabled() for s in window._busy_shortcuts)
    window._on_open()
    assert dialogs == ["Open session"]


def test_a_replay_session_restores_its_own_speed_and_automation_leaves_unnamed_controls_alone(window, tmp_path):
    recording, path = tmp_path / "rec.json", tmp_path / "replay.json"
    run_to_end(RunRequest(kernel=BENCH, strategy="random", budget=8, seed=1), recording)
    run_to_end(RunRequest(replay=str(recording), strategy="random", budget=4), path)
    toolbar = window.toolbar
    toolbar.delay.setValue(0.5)  # what an earlier demo left
    window.open_session(path)
    assert toolbar.backend.currentData() == "replay" and toolbar.delay.value() == 0.0  # the session recorded none
    toolbar.apply({"strategy": "local", "seed": 9, "budget": 7})
    toolbar.apply({"kernel": BENCH, "strategy": None, "seed": None, "budget": None})  # `gui --run` without those flags
    assert (toolbar.strategy.currentText(), toolbar.seed.value(), toolbar.budget.value()) == ("local", 9, 7)


def test_a_read_only_session_is_neither_continued_nor_saved_over(window, qtbot, tmp_path):
    """A session the person made read-only stays as it is: Start refuses to continue into it and
    Save refuses to replace it (each in one line), and Save As another file then continues there."""
    path = tmp_path / "ro.json"
    run_to_end(RunRequest(kernel=BENCH, strategy="random", budget=3, seed=1), path)
    path.chmod(0o444)
    before = path.read_bytes()
    window.open_session(path)
    window.trusted_code.add(Path(BENCH).resolve())
    window.toolbar.budget.setValue(2)
    with pytest.raises(WorkbenchError, match="is read-only; make it writable or save the session under another"):
        window.start_run(window.toolbar.request())
    assert not window.running
    assert not window.save_to(path)
    assert "is read-only" in window.statusBar().currentMessage()
    assert path.read_bytes() == before
    other = tmp_path / "rw.json"
    assert window.save_to(other)
    result = start_and_wait(window, qtbot, window.toolbar.request())
    assert result.reason == "budget", result.message
    assert len(load_session(other).trials) == 5 and path.read_bytes() == before


def test_a_replay_is_not_refused_for_a_template_problem_left_in_the_field(window, qtbot):
    """Their text still went into the request: after a template session (or a typed problem) a
    replay refused to start ("no trials at n=4096"). The sizes field is greyed out and ignored; the
    problem field stays usable (it picks a sweep recording's size) and is emptied on switching."""
    toolbar = window.toolbar
    toolbar.problem.setText("n=4096")
    toolbar.sizes.setText("n=4096,8192")
    toolbar.backend.setCurrentIndex(toolbar.backend.findData("replay"))
    toolbar.replay.setText(str(Path(__file__).parents[1] / "fixtures" / "kt_cache_small.json"))
    assert toolbar.problem.isEnabled() and toolbar.problem.text() == "" and not toolbar.sizes.isEnabled()
    assert "for a recording of several sizes: the size to replay, as NAME=VALUE" in toolbar.problem.toolTip()
    toolbar.set_running(False)  # a run's end re-applies the backend's state: it must not clear a typed size
    toolbar.problem.setText("n=4096")
    toolbar.set_running(False)
    assert toolbar.problem.text() == "n=4096"
    toolbar.problem.clear()  # the field as the switch left it
    toolbar.budget.setValue(3)
    run = toolbar.request()
    assert run["problem"] == {} and run["sizes"] is None
    toolbar.start.click()
    qtbot.waitUntil(lambda: not window.running, timeout=60_000)
    assert window.model.session is not None and window.model.session.backend["kind"] == "replay"
    assert len(window.model.session.trials) == 3, window.statusBar().currentMessage()


def test_a_replay_from_the_window_is_of_the_recorded_kernel_not_the_kernel_box(window, qtbot, tmp_path):
    """The kernel box's text went into a replay's request, and the replayed trials were filed under
    it: a reduce_sum recording replayed with vector_add in the box became a vector_add session."""
    recording = tmp_path / "reduce.json"
    run_to_end(RunRequest(kernel="reduce_sum", backend="sim", strategy="random", budget=3, seed=1,
                          backend_options={"compile": "estimate"}), recording)
    toolbar = window.toolbar
    assert toolbar.kernel.currentText() == "vector_add"
    toolbar.backend.setCurrentIndex(toolbar.backend.findData("replay"))
    toolbar.replay.setText(str(recording))
    toolbar.budget.setValue(2)
    assert toolbar.request()["kernel"] is None
    toolbar.start.click()
    qtbot.waitUntil(lambda: not window.running, timeout=60_000)
    assert window.model.session is not None and window.model.session.kernel == "reduce_sum", window.statusBar().currentMessage()


def test_a_sweep_recording_replays_the_size_typed_in_the_problem_field(window, qtbot, tmp_path):
    """The problem field was greyed out for a replay, so a sweep recording, refused without a size
    (the command line's --set), could not be replayed from the window at all."""
    recording = tmp_path / "sweep.json"
    run_to_end(RunRequest(kernel="vector_add", backend="sim", strategy="random", budget=2, seed=1,
                          sizes={"n": [1024, 2048]}, backend_options={"compile": "estimate"}), recording)
    recorded = {(t.config.id, t.problem["n"]): t.metric("latency_ms") for t in load_session(recording).trials}
    toolbar = window.toolbar
    toolbar.backend.setCurrentIndex(toolbar.backend.findData("replay"))
    toolbar.replay.setText(str(recording))
    # not read yet: what it holds is not known (it said "a recording of several" of every recording
    # still being read, a large one of one size included)
    assert toolbar.problem.placeholderText() == "size to replay, if the recording holds several"
    toolbar.budget.setValue(2)
    toolbar.start.click()  # no size: refused, naming the field that takes one
    message = window.statusBar().currentMessage()
    assert not window.running and "holds a size sweep (2 sizes: n=1024, n=2048)" in message, message
    assert message.endswith("choose it with n=VALUE in the problem field") and "--set" not in message, message
    # the field's placeholder names the recording's own sizes once it is read (an example such as
    # n=65536 invited a size a recording without n does not have)
    toolbar.recording_chosen.emit(str(recording))
    qtbot.waitUntil(lambda: "n=1024" in toolbar.problem.placeholderText(), timeout=10_000)
    assert toolbar.problem.placeholderText() == "size to replay: n=1024, n=2048"
    single = tmp_path / "single.json"
    run_to_end(RunRequest(kernel="vector_add", backend="sim", strategy="random", budget=2,
                          backend_options={"compile": "estimate"}), single)
    toolbar.replay.setText(str(single))
    toolbar.recording_chosen.emit(str(single))
    qtbot.waitUntil(lambda: toolbar.problem.placeholderText() == "(the recording's one size)", timeout=10_000)
    assert "leave the field empty" in toolbar.problem.toolTip()
    # the read of a file chosen before, ending late (reads end in any order), changes nothing
    toolbar.show_recording_sizes(str(recording), (["n=1024", "n=2048"], ", "))
    assert toolbar.problem.placeholderText() == "(the recording's one size)"
    toolbar.replay.setText(str(recording))
    toolbar.recording_chosen.emit(str(recording))
    toolbar.problem.setText("n=2048")
    toolbar.start.click()
    qtbot.waitUntil(lambda: not window.running, timeout=60_000)
    session = window.model.session
    assert session is not None and session.problem["n"] == 2048 and len(session.trials) == 2, \
        window.statusBar().currentMessage()
    assert all(t.metric("latency_ms") == recorded[(t.config.id, 2048)] for t in session.trials)


def test_a_reopened_python_session_shows_its_backend_and_file_and_an_edit_still_continues_it(window, qtbot, cli, tmp_path):
    """The toolbar kept the backend an earlier session left (the simulated GPU) and showed the
    benchmark's name, not its file: Start after any edit then asked for a new session of a
    simulated kernel that does not exist. Opening the session still runs none of its code."""
    bench = tmp_path / "bench.py"
    marker = tmp_path / "imported"
    bench.write_text(f"open({str(marker)!r}, 'a').close()\n"
                     "SPACE = {'block': [32, 64, 128, 256], 'mode': ['fast', 'safe']}\n"
                     "def measure(config):\n"
                     "    return {'latency_ms': 1.0 + abs(config['block'] - 128) / 128 + (config['mode'] == 'safe')}\n")
    path = tmp_path / "bench.json"
    done = cli("tune", bench, "--backend", "python", "--budget", "3", "--quiet", "--out", path)
    assert done.returncode == 0, done.stderr
    marker.unlink()
    window.toolbar.apply({"kernel": "vector_add", "backend": "sim"})  # what an earlier session left
    window.open_session(path)
    assert not marker.exists()  # opening a file never runs code
    assert window.toolbar.backend.currentData() == "python", window.toolbar.backend.currentText()
    assert Path(window.toolbar.kernel.currentText()).resolve() == bench.resolve()
    with pytest.raises(WorkbenchError, match="python benchmark"):  # the restored file is not a yes to its code
        window.start_run(window.toolbar.request())
    window.trusted_code.add(bench.resolve())  # what the confirmation dialog records
    window.toolbar.budget.setValue(2)
    result = start_and_wait(window, qtbot, window.toolbar.request())
    assert result.reason == "budget", result.message
    assert window.path == path  # the same session, written to its own file
    session = load_session(path)
    assert len(session.trials) == 5 and session.backend["kind"] == "python"


def test_a_start_that_fails_after_the_run_is_prepared_lets_its_file_go(window, tmp_path, monkeypatch):
    """A defect between preparing a run and handing it to the engine thread (a session field read
    with the wrong type) left the prepared run holding its file's lock: the session could not be
    continued or saved over until the window closed, and an automated window never ended."""
    path = tmp_path / "s.json"
    run_to_end(RunRequest(kernel="vector_add", backend="sim", executor="inline", budget=2,
                          backend_options={"compile": "estimate"}), path)
    window.open_session(path)
    window.path = path  # continuing into the file itself: the run takes the file's own lock

    from workbench.runner import controller

    class Defective(list):
        def __iter__(self):
            raise RuntimeError("a defect")

    real = controller.prepare_run

    def prepare_run(*args, **kwargs):
        prepared = real(*args, **kwargs)
        prepared.warnings = Defective()  # read once the run is prepared, before the engine thread has it
        return prepared

    monkeypatch.setattr(controller, "prepare_run", prepare_run)
    with pytest.raises(RuntimeError, match="a defect"):
        window.start_run({**window.toolbar.request(), "budget": 2})
    assert not window.running
    SessionLock(path).acquire().release()  # free again


def test_a_run_named_by_a_template_the_editor_saved_runs_from_its_folder(qtbot, tmp_path, monkeypatch):
    """The kernel picker lists the templates saved with the editor and runs them from their folder;
    ``gui --run NAME`` of such a template (a request naming it without a folder) was refused as an
    unknown kernel."""
    import json

    from workbench.core.domain.kernel_spec import SPEC_SUFFIX, save_template_folder
    from workbench.gui.main_window import MainWindow
    from workbench.gui.settings_store import JsonSettings

    example = Path(__file__).resolve().parents[2] / "docs" / "examples" / "saxpy"
    monkeypatch.setenv("KERNEL_WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    saved = save_template_folder(tmp_path / "data" / "templates", json.loads((example / f"saxpy{SPEC_SUFFIX}").read_text()),
                                 (example / "saxpy.cu").read_text()).parent
    window = MainWindow(interactive=False, settings=JsonSettings(str(tmp_path / "settings.json")))
    qtbot.addWidget(window)
    result = start_and_wait(window, qtbot, {"kernel": "saxpy", "backend": "sim", "budget": 2, "executor": "inline",
                                            "backend_options": {"compile": "estimate"}})
    assert result.reason == "budget", result.message
    assert window.model.session.kernel == "saxpy" and window.toolbar.kernel_folders["saxpy"] == str(saved)
    # a copy saved under a shipped template's name does not take its place, as it does not for tune
    spec = json.loads((example / f"saxpy{SPEC_SUFFIX}").read_text())
    spec["name"] = spec["entry"] = "vector_add"
    save_template_folder(tmp_path / "data" / "templates", spec,
                         (example / "saxpy.cu").read_text().replace("saxpy(", "vector_add("))
    again = MainWindow(interactive=False, settings=JsonSettings(str(tmp_path / "settings2.json")))  # a restart
    qtbot.addWidget(again)
    assert "vector_add" not in again.toolbar.kernel_folders  # the picker's vector_add is the shipped one
    for request in ({"kernel": "vector_add"}, {**again.toolbar.request(), "kernel": "vector_add"}):
        result = start_and_wait(again, qtbot, {**request, "backend": "sim", "budget": 2, "executor": "inline",
                                               "backend_options": {"compile": "estimate"}})
        assert result.reason == "budget", result.message
        assert "grid_stride" in again.model.session.space.names  # the shipped vector_add's own slot


def test_an_opened_session_shows_its_own_evaluations_not_the_last_runs(window, qtbot, cli, tmp_path):
    """A run's "done (budget), 12 evals" and full bar stayed when another file was opened,
    and a reopened session of 5 of its 8 evaluations showed an empty bar and "idle"."""
    other = tmp_path / "other.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "8",
               "--executor", "inline", "--quiet", "--out", other).returncode == 0
    doc = json.loads(other.read_text())
    doc["trials"] = doc["trials"][:5]  # as a run stopped after 5 of its 8
    other.write_text(json.dumps(doc))
    result = start_and_wait(window, qtbot, {"kernel": "vector_add", "backend": "sim", "strategy": "random",
                                            "budget": 12, "options": {"compile": "estimate"}})
    assert result.evaluations == 12 and window.toolbar.progress_label.text() == "done (budget), 12 evals"
    window.open_session(other)
    assert window.toolbar.progress_label.text() == "opened: 5 of 8 evaluations"
    assert (window.toolbar.progress.value(), window.toolbar.progress.maximum()) == (5, 8)


def test_the_toolbar_says_when_start_would_begin_a_new_session(window, cli, tmp_path, qtbot):
    """Picking another kernel or GPU left the charts, the card and the table on the open session
    with nothing to tell that the next Start measures something else: the progress label says it
    first, as Start decides it (another problem typed: new; the backend "auto", or a problem typed
    as the session's own: the same session), and nothing once the controls agree again."""
    path = tmp_path / "v.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "3",
               "--executor", "inline", "--quiet", "--out", path).returncode == 0
    window.open_session(path)
    bar, label = window.toolbar, window.toolbar.progress_label

    def says(text: str, start: bool = False) -> None:  # (said a quarter second after the last change)
        qtbot.waitUntil(lambda: label.text().startswith(text) if start else label.text() == text, timeout=3000)

    assert label.text() == "opened: 3 of 3 evaluations"
    bar.kernel.setCurrentText("softmax")
    says("new session at Start: the kernel is 'softmax'; opened: 3 of 3 evaluations")
    assert "'softmax'" in label.shown_text()  # the reason's point, not cut at 1440 px
    assert label.palette().color(QPalette.ColorRole.WindowText).name() == WARNING_TEXT  # in the warning colour
    bar.kernel.setCurrentText("vector_add")
    other_gpu = next(bar.gpu.itemText(i) for i in range(bar.gpu.count()) if bar.gpu.itemText(i) != bar.gpu.currentText())
    bar.gpu.setCurrentText(other_gpu)
    says("new session at Start: the device is ", start=True)
    assert window.continues_session(bar.request()) is False  # as the controller decides it
    bar.gpu.setCurrentIndex(bar.gpu.findText(window.model.session.device["name"].removeprefix("Simulated NVIDIA ")))
    says("opened: 3 of 3 evaluations")
    assert window.continues_session(bar.request())
    n = window.model.session.problem["n"]
    bar.problem.setText(f"n={n}")  # the session's own problem, typed: no change
    qtbot.wait(400)
    says("opened: 3 of 3 evaluations")
    assert window.continues_session(bar.request())
    bar.problem.setText(f"n={2 * n}")  # another problem: a new session, said as Start would say it
    assert label.text() == "opened: 3 of 3 evaluations"  # not at each key typed: after a pause
    says("new session at Start: the problem is ", start=True)
    assert not window.continues_session(bar.request())
    bar.problem.setText("")
    says("opened: 3 of 3 evaluations")
    assert label.palette().color(QPalette.ColorRole.WindowText).name() != WARNING_TEXT


def test_a_session_of_other_code_is_refused_naming_the_windows_way_to_a_new_one(window, cli, tmp_path):
    """The refusal said "start a new session instead", naming no way to do so in the window, where
    Start refused again and again; the command line's says its own."""
    from workbench.gui.text import window_message

    path = tmp_path / "v.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "2",
               "--executor", "inline", "--quiet", "--out", path).returncode == 0
    doc = json.loads(path.read_text())
    doc["source_hash"] = "0" * 16  # measured with other code than the template has now
    path.write_text(json.dumps(doc))
    refused = cli("tune", "--resume", "--budget", "1", "--out", path)
    assert refused.returncode == 2 and "start a new run (tune KERNEL or tune --replay FILE) instead" in refused.stderr
    window.open_session(path)
    with pytest.raises(WorkbenchError) as info:
        window.start_run(window.toolbar.request())
    said = window_message(info.value)
    assert "the kernel's code changed since the session was measured" in said
    assert said.endswith("start a new one with File > New session instead")


def test_a_recent_file_named_with_control_characters_is_listed_inert(window):
    """The settings file's recent list reached the File menu with its BEL and newline raw."""
    window.settings.setValue("recent", ["/tmp/a\u0007b\nc.json"])
    window._update_recent_menu()
    assert [a.text() for a in window.recent_menu.actions()] == ["/tmp/a\\x07b\\nc.json"]


def test_start_again_after_a_complete_run_measures_as_many_again_not_the_sessions_total(window, qtbot):
    """The box offered the session's budget, the total of every run, after each complete run: a
    second Start ran 5 more and offered 10, a third ran 10 and offered 20, each doubling the last."""
    start_and_wait(window, qtbot, {"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 5,
                                   "executor": "inline", "options": {"compile": "estimate"}})
    assert window.toolbar.budget.value() == 5
    for total in (10, 15):
        result = start_and_wait(window, qtbot, window.toolbar.request())
        assert result.reason == "budget" and window.model.n == total and window.toolbar.budget.value() == 5


def test_a_sessions_budget_offer_never_takes_another_sessions_number(window, qtbot, cli, tmp_path):
    """After a run of 5 in one session, a file opened with 30 of its 40 left, stopped early and then
    run to its end offered 5, the first session's number, in the box."""
    start_and_wait(window, qtbot, {"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 5,
                                   "executor": "inline", "options": {"compile": "estimate"}})
    other = tmp_path / "other.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "40",
               "--executor", "inline", "--quiet", "--out", other).returncode == 0
    doc = json.loads(other.read_text())
    doc["trials"] = doc["trials"][:10]  # as a run stopped after 10 of its 40
    other.write_text(json.dumps(doc))
    window.open_session(other)
    assert window.toolbar.budget.value() == 30
    window.start_run({**window.toolbar.request(), "executor": "inline", "delay_s": 0.05})  # paced: stopped early
    qtbot.waitUntil(lambda: window.model.n >= 12, timeout=30_000)
    with qtbot.waitSignal(window.run_done, timeout=30_000):
        window.stop_run()
    left = window.toolbar.budget.value()
    assert 0 < left < 30 and window.model.n == 40 - left
    result = start_and_wait(window, qtbot, {**window.toolbar.request(), "executor": "inline", "delay_s": 0.0})
    assert result.reason == "budget" and window.model.n == 40 and window.toolbar.budget.value() != 5


def test_a_new_session_from_a_narrowed_sessions_space_searches_what_the_tab_shows(window, qtbot, tmp_path):
    """A session's narrowing shows as values left unticked; Start beginning a new session from it
    (another GPU) searched the template's whole space, unticked values included, and the count
    above the tab counted the unticked values as combinations."""
    from workbench.runner.controller import resume_run

    out = tmp_path / "narrowed.json"
    estimate = {"compile": "estimate"}
    session, _ = run_to_end(RunRequest(kernel="vector_add", backend="sim", strategy="random", budget=4,
                                       backend_options=estimate), out)
    domains = {slot.name: list(slot.values) for slot in session.space.slots}
    keep = [64, 256]
    assert resume_run(out, RunRequest(budget=6, domains=dict(domains, block_size=keep))).run().reason == "budget"
    window.open_session(out)
    panel = window.slots_panel
    assert panel.domains()["block_size"] == keep
    # continuing the session, its stored space is what runs: nothing is sent (sent, it read as an
    # edit, which rewrote the stored space and re-ran a sweep's used-up size); a new session of its
    # kernel gets the space shown
    assert window._edited_domains() == (None, None)
    assert window._edited_domains("vector_add")[0]["block_size"] == keep
    qtbot.waitUntil(lambda: "valid configs of" in panel.count_label.text() and "counting" not in panel.count_label.text(),
                    timeout=30_000)
    ticked = 1
    for values in panel.domains().values():
        ticked *= len(values)
    assert f"of {ticked:,} combinations" in panel.count_label.text()
    with qtbot.waitSignal(window.run_done, timeout=120_000):
        window.start_run({"kernel": "vector_add", "backend": "sim", "gpu_model": "A100", "strategy": "random",
                          "budget": 12, "options": estimate})
    new = window.model.session
    assert new is not None and "A100" in str(new.device.get("name")) and len(new.trials) == 12
    assert {t.config["block_size"] for t in new.trials} <= set(keep)
