"""The window's parts on their own: failure analysis, the view model, the slots panel, the filters,
the simulated backend's labels, and the automation entry point (in-process and through main.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from workbench.core.errors import WorkbenchError
from workbench.core.domain.measurement import Measurement, Status, Trial
from workbench.core.domain.session import Session, load_session, save_session
from workbench.core.domain.space import SearchSpace, Slot
from workbench.gui.text import dragged_limit, limit_text, metric_label
from workbench.gui.analysis import concentrations_from_columns, failure_concentrations
from workbench.gui.model import GrowingColumn, SessionModel
from workbench.gui.plot_axes import left_title

ROOT = Path(__file__).resolve().parents[2]
BENCH = str(Path(__file__).with_name("gui_bench.py"))


def _space() -> SearchSpace:
    return SearchSpace([Slot("block_size", (64, 128, 256), "launch"), Slot("unroll", (1, 4, 16), "compute")],
                       restrictions=["block_size * unroll <= 2048"])


def _session(n_ok: int = 6) -> Session:
    trials = []
    configs = list(_space())
    for i, config in enumerate(configs):
        if config["unroll"] == 16:
            m = Measurement.failure(Status.COMPILE_ERROR, "ptxas: too many registers", "full ptxas log")
        else:
            m = Measurement(Status.OK, {"latency_ms": 1.0 + i, "memory_mb": 10.0 - i})
        trials.append(Trial(i, config, m))
    return Session(kernel="toy", space=_space(), trials=trials, device={"name": "toy", "simulated": True})


def test_failure_concentration_names_the_broken_slot_value():
    session = _session()
    assert failure_concentrations(session.trials) == []  # two failures are too few to blame a slot value
    found = failure_concentrations(session.trials, min_count=2)
    assert found and found[0].status is Status.COMPILE_ERROR
    assert (found[0].slot, found[0].value, found[0].share) == ("unroll", 16, 1.0)
    assert found[0].baseline == pytest.approx(2 / 8)
    assert "100% of compile_error" in found[0].text() and "unroll=16" in found[0].text()
    # a status whose failures are spread evenly has no concentration
    codes = np.array([1, 1, 1, 0, 0, 0])
    spread = {"s": (np.array([0, 1, 2, 0, 1, 2]), ["a", "b", "c"])}
    assert concentrations_from_columns(codes, spread) == []


def test_few_launch_errors_are_explained_by_their_resources_not_a_slot_value(window):
    """Two refused launches: "100% have threads=1024" from two failures says little; what they
    asked for (registers x threads) is the cause, and is what the log must show."""
    space = SearchSpace([Slot("tile", (1, 2), "launch"), Slot("threads", (256, 1024), "launch")])
    trials = []
    for i, config in enumerate(space):
        if config["threads"] == 1024:
            m = Measurement(Status.LAUNCH_ERROR, {"registers": 96.0, "threads_per_block": 1024.0, "smem_bytes": 0.0},
                            message="too many resources requested for launch")
        else:
            m = Measurement(Status.OK, {"latency_ms": 1.0 + i})
        trials.append(Trial(i, config, m))
    window.model.set_session(Session(kernel="toy", space=space, trials=trials, device={"name": "toy"}))
    window.failures.refresh()
    text = window.failures.concentration.text()
    assert "have tile=" not in text and "have threads=" not in text
    assert "launch_error (2): 96 registers x 1024 threads = 98,304 registers per block (x2)" in text


def test_growing_column_and_model_sync_pull_only_new_trials():
    column = GrowingColumn(capacity=2)
    column.extend([1.0, 2.0, 3.0], 0)
    column.extend([4.0], 3)
    assert column.view(4).tolist() == [1.0, 2.0, 3.0, 4.0]
    session = _session()
    trials = session.trials
    session.trials = trials[:3]
    model = SessionModel(session)
    added = []
    model.trials_added.connect(lambda a, b: added.append((a, b)))
    assert model.n == 3 and not model.sync()
    session.trials.extend(trials[3:])
    assert model.sync() and added == [(3, len(trials))] and model.n == len(trials)
    assert not model.sync()
    assert np.isnan(model.metric("latency_ms")[~np.array([t.ok for t in trials])]).all()
    best = model.best_so_far()
    assert np.all(np.diff(best[np.isfinite(best)]) >= 0)
    model.select(10_000)
    assert model.selected is None


def test_slots_panel_edits_the_space_and_explains_bad_input(qtbot):
    from workbench.gui.slots_panel import SlotsPanel

    seen = []
    panel = SlotsPanel(on_space_changed=seen.append)
    qtbot.addWidget(panel)
    space = _space()
    panel.set_space(space)
    qtbot.waitUntil(lambda: f"<b>{space.count()}</b> valid" in panel.count_label.text(), timeout=5000)
    panel.set_value_enabled("unroll", 16, False)
    expected = space.with_domains({"unroll": [1, 4]}).count()
    assert panel.space.count() == expected and seen[-1].count() == expected
    panel.restrictions.setPlainText("block_size >= 128 and")
    panel.apply()
    assert panel.error_label.text() and panel.space.count() == expected  # bad text: last good space kept
    panel.restrictions.setPlainText("block_size >= 128")
    panel.apply()
    assert panel.error_label.text() == "" and panel.space.count() == 4
    panel.add_value("unroll=2")
    assert 2 in panel.space.slot("unroll").values
    with pytest.raises(WorkbenchError):
        panel.add_value("unroll=fast")
    with pytest.raises(WorkbenchError):
        panel.add_value("nothing=1")


def test_a_slot_value_is_read_as_the_command_line_reads_one(qtbot):
    """The panel had a parser of its own: ``alpha=1e-400`` added the value 0.0 without a word (the
    run would use 0), and a 5,000-digit number was repeated whole in the refusal. It reads a value
    as ``--set`` does now, then checks it against the slot's type."""
    from workbench.gui.slots_panel import SlotsPanel

    panel = SlotsPanel()
    qtbot.addWidget(panel)
    panel.set_space(SearchSpace([Slot("alpha", (0.5, 1.0)), Slot("n", (1, 2)), Slot("flag", (True,))]), fixed=False)
    with pytest.raises(WorkbenchError, match=re.escape("alpha: '1e-400' is too small to tell from 0")):
        panel.add_value("alpha=1e-400")
    with pytest.raises(WorkbenchError, match="a number of 5000 characters is too long") as refused:
        panel.add_value("n=" + "9" * 5000)
    assert len(str(refused.value)) < 200
    with pytest.raises(WorkbenchError, match=re.escape("n='3.5': expected an int like 1")):
        panel.add_value("n=3.5")
    panel.add_value("alpha=2")  # an integer for a float slot: its float
    panel.add_value("flag=0")  # 0 and 1 for false and true, as before
    assert panel.space.slot("alpha").values == (0.5, 1.0, 2.0) and panel.space.slot("flag").values == (True, False)


def test_the_slot_column_takes_the_longest_slot_name_in_the_panels_font(qtbot):
    """A fixed 150 px cut threads_per_row to "threads_per…" in presentation mode, where the name is
    what a class reads; the doc column beside it takes the rest."""
    from PySide6.QtGui import QFont

    from workbench.core.domain.space import SearchSpace, Slot
    from workbench.gui.slots_panel import SlotsPanel

    panel = SlotsPanel()
    qtbot.addWidget(panel)
    panel.resize(420, 400)  # (the left column in presentation mode at 1920 px is 480)
    panel.show()
    panel.set_space(SearchSpace([Slot("threads_per_row", (32, 64), "launch", "threads that share one row"),
                                 Slot("items", (1, 2), "compute")]))
    for size in (10.0, 15.0):  # the zoom's font too
        font = QFont(panel.font())
        font.setPointSizeF(size)
        panel.setFont(font)
        qtbot.wait(20)
        needed = panel.tree.fontMetrics().horizontalAdvance("threads_per_row") + 2 * panel.tree.indentation()
        assert panel.tree.columnWidth(0) >= needed, (size, panel.tree.columnWidth(0), needed)
        assert panel.tree.columnWidth(0) <= 0.6 * panel.tree.viewport().width() + 1


def test_a_slot_of_many_values_is_one_line_narrowed_by_a_restriction(qtbot):
    """A benchmark slot of 100,000 values made an item per value: choosing the benchmark froze the
    window for seconds. It is one line now; the space keeps every value and a restriction narrows it."""
    from workbench.core.domain.space import SearchSpace, Slot
    from workbench.gui.slots_panel import MAX_TOGGLED_VALUES, SlotsPanel

    panel = SlotsPanel()
    qtbot.addWidget(panel)
    space = SearchSpace([Slot("i", tuple(range(100_000))), Slot("unroll", (1, 4))])
    panel.set_space(space)
    item = panel._slot_item("i")
    assert item is not None and item.childCount() == 1 and MAX_TOGGLED_VALUES < 100_000
    assert item.child(0).text(0).startswith("100,000 values (0 ... 99999): too many to toggle one by one")
    assert "i % 100 == 0" in item.child(0).text(0)
    assert panel._slot_item("unroll").childCount() == 2  # a short slot keeps its toggles
    panel.restrictions.setPlainText("i % 1000 == 0")
    panel.apply()
    assert panel.error_label.text() == "" and panel.space.count() == 100 * 2
    with pytest.raises(WorkbenchError, match="too many to toggle one by one; narrow them with a restriction"):
        panel.set_value_enabled("i", 5, False)
    panel.add_value("i=200000")
    assert panel.space.slot("i").values[-1] == 200_000 and item.child(0).text(0).startswith("100,001 values")
    with pytest.raises(WorkbenchError, match="value 5 appears twice"):
        panel.add_value("i=5")


def test_a_sessions_narrowed_domain_shows_as_the_values_left_unticked(qtbot):
    """A session keeps a narrowed domain as a restriction (its trials hold the wider one): the tab
    shows it as the values it leaves unticked, and a Start without edits changes nothing; a
    person's own restriction of the same kind stays a line of theirs."""
    from workbench.core.domain.narrowing import narrowings, split_narrowings
    from workbench.core.domain.space import SearchSpace, Slot
    from workbench.gui.slots_panel import SlotsPanel

    own = "unroll in (1, 4)"  # not the generated form: the person's
    space = SearchSpace([Slot("block", (32, 64, 128, 256)), Slot("unroll", (1, 2, 4))],
                        restrictions=[*narrowings("block", (32, 64, 128, 256), [64, 256]), own])
    assert split_narrowings(space) == ({"block": [64, 256]}, [own])
    panel = SlotsPanel()
    qtbot.addWidget(panel)
    panel.set_space(space, fixed=True)
    assert panel.domains() == {"block": [64, 256], "unroll": [1, 2, 4]}
    assert panel.restrictions.toPlainText() == own and panel.space is space  # (no edit: nothing to send)
    panel.set_value_enabled("block", 128, True)  # ticked back: the narrowing is the ticks'
    assert panel.space.slot("block").values == (64, 128, 256) and list(panel.space.restrictions) == [own]


def test_slots_panel_over_a_template_adds_back_only_declared_values(qtbot):
    """A template renders only the values it declares: a value it does not is refused in one line
    (before, it was accepted and every config with it failed to render, using up the budget)."""
    from workbench.gui.slots_panel import SlotsPanel

    panel = SlotsPanel()
    qtbot.addWidget(panel)
    space = _space()
    panel.set_space(space, fixed=True)
    panel.set_value_enabled("unroll", 16, False)
    with pytest.raises(WorkbenchError, match="not among the values the template declares"):
        panel.add_value("unroll=2")
    panel.set_space(space)  # a python benchmark's domains may grow
    panel.add_value("unroll=2")
    assert 2 in panel.space.slot("unroll").values


def test_problem_text_and_table_filter_reject_bad_input(qtbot):
    from workbench.gui.results_table import ResultsTable
    from workbench.gui.run_panel import parse_problem

    assert parse_problem("n=1048576, scale=0.5") == {"n": 1048576, "scale": 0.5}
    with pytest.raises(WorkbenchError):
        parse_problem("n 1024")
    model = SessionModel(_session())
    table = ResultsTable(model)
    qtbot.addWidget(table)
    table.proxy.set_slot_filter("unroll=16")
    assert table.proxy.rowCount() == sum(1 for t in model.trials if t.config["unroll"] == 16)
    with pytest.raises(WorkbenchError):
        table.proxy.set_slot_filter("colour=red")
    # a value the slot does not have, no value, or one slot twice: said, not an empty table
    for text, said in (("unroll=16.0", "unroll has no value 16.0 (its values: "), ("unroll=", "write slot=value"),
                       ("unroll=16, unroll=4", "unroll is named twice")):
        with pytest.raises(WorkbenchError, match=re.escape(said)):
            table.proxy.set_slot_filter(text)
    table.slot_edit.setText("unroll=16")
    table._on_slot_filter()
    table.slot_edit.setText("unroll=16.0")
    table._on_slot_filter()  # refused: every trial is listed, not the previous filter beside the refusal
    assert "no value 16.0" in table.filter_error.text() and table.proxy.rowCount() == len(model.trials)
    table.proxy.set_slot_filter("")
    table.status_combo.setCurrentText("compile_error")
    assert table.proxy.rowCount() == 2


def test_simulated_run_is_labelled_and_source_marks_slots(window, qtbot):
    with qtbot.waitSignal(window.run_done, timeout=120_000) as blocker:
        window.start_run({"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 12, "seed": 1,
                          "options": {"compile": "estimate"}})
    assert blocker.args[0].reason in ("budget", "exhausted")
    assert "SIMULATED" in window.timing_badge.text() and "modelled" in window.timing_badge.text()
    model = window.model
    assert model.selected == model.ranking.best  # the recommendation is shown after the run
    text = window.source_view.editor.toPlainText()
    assert "#define" in text and window.source_view.marked_count() >= len(model.trials[0].config)


def test_main_opens_a_session_and_saves_a_screenshot(qtbot, tmp_path, monkeypatch):
    """(While the window runs, garbage is collected in the GUI thread only: collected in an engine
    thread, a widget's wrapper has its widget deleted from the GUI thread while the engine thread
    may hold a Qt lock that deletion needs; both waited for ever once.)"""
    import gc

    from workbench.gui.app import main
    from workbench.gui.main_window import MainWindow

    seen = []
    grab = MainWindow.grab
    monkeypatch.setattr(MainWindow, "grab", lambda self, *a: seen.append(gc.isenabled()) or grab(self, *a))
    path = tmp_path / "toy.json"
    save_session(_session(), path)
    shot = tmp_path / "shot.png"
    assert main(str(path), None, str(shot), True) == 0
    assert seen == [False] and gc.isenabled()
    assert shot.stat().st_size > 10_000
    assert main(str(tmp_path / "missing.json"), None, None, True) == 2  # bad input: exit 2, as the CLI


def test_a_run_into_a_session_file_that_does_not_exist_yet_is_saved_there(tmp_path, monkeypatch, capsys):
    """``gui NEW.json --run K --quit-when-done`` refused "no such file", and without SESSION an
    automated run's trials are discarded: a demo prepared this way kept nothing. The new session
    is saved at SESSION when the run ends, as ``tune --out`` writes one; a name a session may not
    take is refused before anything runs."""
    from workbench.core.domain.session import load_session
    from workbench.gui.app import main

    monkeypatch.setenv("KERNEL_WORKBENCH_AUTOSAVE_DIR", str(tmp_path / "autosave"))
    run = {"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 3, "options": {"compile": "estimate"}}
    target = tmp_path / "demo.json"
    assert main(str(target), dict(run), None, True) == 0
    # where its trials are until it ends: killed with SIGKILL before then, `show demo.json` found
    # no file and nothing said where they were
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note: until the run ends")]
    assert len(said) == 1 and str(target) in said[0] and str(tmp_path / "autosave") in said[0], said
    assert said[0].split(" its trials are journaled in ")[1].split(" (the window")[0].endswith(".json.journal")
    session = load_session(target)
    assert session.kernel == "vector_add" and len(session.trials) == 3
    assert not any((tmp_path / "autosave").glob("*.json"))  # saved, so no autosave is left behind
    assert main(str(target), dict(run), None, True) == 0  # it exists now: the run continues it
    assert len(load_session(target).trials) == 6
    code = tmp_path / "demo.py"
    assert main(str(code), dict(run), None, True) == 2 and not code.exists()
    # names the save would refuse after the run, losing what it measured, are refused before it
    for refused in (tmp_path / "x.json.journal", tmp_path / "x.json.lock", tmp_path / "autosave" / "mine.json"):
        (tmp_path / "autosave").mkdir(exist_ok=True)
        assert main(str(refused), dict(run), None, True) == 2
        assert not list(refused.parent.glob(refused.name.split(".")[0] + "*")), refused



def test_an_automated_run_says_the_autosaves_an_earlier_killed_window_left(tmp_path, monkeypatch, capsys):
    """A window that quits by itself offers no recovery: rerun after a kill, a script's run started
    over, and the killed run's trials stayed in the autosave folder without a word."""
    from workbench.core.domain.session import Session, save_session
    from workbench.gui.app import main

    autosave = tmp_path / "autosave"
    monkeypatch.setenv("KERNEL_WORKBENCH_AUTOSAVE_DIR", str(autosave))
    run = {"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 2, "options": {"compile": "estimate"}}
    assert main(str(tmp_path / "a.json"), dict(run), None, True) == 0
    assert "autosave folder holds" not in capsys.readouterr().err  # nothing waiting: nothing said
    autosave.mkdir(exist_ok=True)
    save_session(Session(kernel="vector_add"), autosave / "vector_add-killed.json")  # what a killed window left
    assert main(str(tmp_path / "b.json"), dict(run), None, True) == 0
    (said,) = [line for line in capsys.readouterr().err.splitlines() if "autosave folder holds" in line]
    assert "1 unfinished run" in said and "vector_add-killed.json" in said and "tune --resume" in said, said


def test_an_automated_window_whose_slot_fails_ends_with_exit_1(tmp_path, monkeypatch, capsys):
    """A defect raised in the run-finished slot was printed by Qt and passed over: the window
    waited for the end that slot would have signalled, and ``gui --run ... --quit-when-done`` ran
    until it was killed, with no error line and no exit status for a script to read."""
    import sys

    from workbench.core.domain.session import load_session
    from workbench.gui.app import main
    from workbench.gui.main_window import MainWindow

    def broken(self, result):
        raise RuntimeError("a defect in the slot")

    monkeypatch.setenv("KERNEL_WORKBENCH_AUTOSAVE_DIR", str(tmp_path / "autosave"))
    monkeypatch.setattr(MainWindow, "_on_run_finished", broken)
    hook = sys.excepthook
    run = {"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 2, "options": {"compile": "estimate"}}
    assert main(str(tmp_path / "demo.json"), run, None, True) == 1
    assert "RuntimeError: a defect in the slot" in capsys.readouterr().err
    assert sys.excepthook is hook  # put back
    assert len(load_session(tmp_path / "demo.json").trials) == 2  # what it measured is still saved

def test_an_automated_run_without_session_that_fails_midway_keeps_its_trials_for_the_next_start(
        tmp_path, monkeypatch, capsys, journal_refuses_after):
    """``gui --run K --quit-when-done`` without SESSION lets its run's trials go at the exit (a
    demonstration keeps nothing). A run that failed after measuring (a full disk) lost them with
    them, and its error line did not say so: they stay in the autosave, which the next start offers."""
    from workbench.core.domain.session import load_session
    from workbench.gui.app import main
    from workbench.runner import engine
    from workbench.runner.autosave import recoverable

    monkeypatch.setenv("KERNEL_WORKBENCH_AUTOSAVE_DIR", str(tmp_path / "autosave"))
    append = engine._GroupSyncedJournal.append
    journal_refuses_after(2, "cannot write the journal: No space left on device")
    run = {"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 6, "options": {"compile": "estimate"}}
    assert main(None, dict(run), None, True) == 1
    err = capsys.readouterr().err
    assert "error: run failed: cannot write the journal: No space left on device" in err, err
    kept = recoverable()
    assert len(kept) == 1 and len(load_session(kept[0]).trials) == 3, kept
    assert f"note: the 3 trials the run measured are kept in {kept[0]} (the window's autosave)" in err, err
    monkeypatch.setattr(engine._GroupSyncedJournal, "append", append)
    for old in kept:
        old.unlink()
    assert main(None, dict(run), None, True) == 0  # a run that ends well is let go, as before
    assert recoverable() == []


def test_an_automated_run_whose_save_to_session_fails_keeps_its_trials_in_the_autosave(tmp_path, monkeypatch, capsys):
    """``gui NEW.json --run ... --quit-when-done`` whose save to NEW.json failed (its folder removed
    during the run, a full disk) said so, exit 1, and the window's exit then let its autosave go:
    every trial was lost. They stay in the autosave, and a note says where once the window closed."""
    import shutil

    from workbench.core.domain.session import load_session
    from workbench.gui.app import main
    from workbench.runner import engine
    from workbench.runner.autosave import recoverable

    monkeypatch.setenv("KERNEL_WORKBENCH_AUTOSAVE_DIR", str(tmp_path / "autosave"))
    folder = tmp_path / "gone"
    folder.mkdir()
    append = engine._GroupSyncedJournal.append

    def folder_removed(self, trial):
        shutil.rmtree(folder, ignore_errors=True)  # (the run's journal is the autosave's, elsewhere)
        append(self, trial)

    monkeypatch.setattr(engine._GroupSyncedJournal, "append", folder_removed)
    run = {"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 3, "options": {"compile": "estimate"}}
    assert main(str(folder / "ns.json"), dict(run), None, True) == 1
    err = capsys.readouterr().err
    kept = recoverable()
    assert len(kept) == 1 and len(load_session(kept[0]).trials) == 3, err
    assert err.splitlines()[-1] == (f"note: the 3 trials the run measured are kept in {kept[0]} (the window's autosave), "
                                    "which the window offers at its next start"), err


def test_an_automated_run_whose_save_to_session_raises_keeps_its_trials_in_the_autosave(tmp_path, monkeypatch, capsys):
    """A defect raised in the save to SESSION took SESSION off the list before the save: the exit's
    second try had nothing to save, and the close let the autosave go with every trial."""
    from workbench.core.domain.session import load_session
    from workbench.gui.app import main
    from workbench.gui.main_window import MainWindow
    from workbench.runner.autosave import recoverable

    def broken(self, path):
        raise RuntimeError("a defect in the save")

    monkeypatch.setenv("KERNEL_WORKBENCH_AUTOSAVE_DIR", str(tmp_path / "autosave"))
    monkeypatch.setattr(MainWindow, "save_to", broken)
    run = {"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 3, "options": {"compile": "estimate"}}
    assert main(str(tmp_path / "ns.json"), dict(run), None, True) == 1
    err = capsys.readouterr().err
    kept = recoverable()
    assert "RuntimeError: a defect in the save" in err and len(kept) == 1 and len(load_session(kept[0]).trials) == 3
    assert err.splitlines()[-1].startswith("note: the 3 trials the run measured are kept in "), err


def test_where_an_automated_windows_kept_trials_are_is_said_by_what_its_close_could_write(tmp_path, capsys):
    """The note named the autosave before the close wrote it, and on a full disk that write failed:
    the file named did not exist, while its journal held the trials."""
    from workbench.gui.app import _say_kept

    path = tmp_path / "k.json"
    _say_kept(path, 5)
    assert capsys.readouterr().err.startswith("warning: the 5 trials the run measured could not be kept")
    (tmp_path / "k.json.journal").write_text("{}\n")
    _say_kept(path, 5)
    assert capsys.readouterr().err == (f"note: the autosave could not be written; its journal {path}.journal keeps "
                                       "what the run wrote of its 5 trials, which the window offers at its next start\n")
    path.write_text("{}")
    _say_kept(path, 1)
    assert capsys.readouterr().err.startswith(f"note: the 1 trial the run measured is kept in {path} ")


def test_a_new_session_file_written_by_another_program_during_the_run_is_kept_and_said(tmp_path, monkeypatch, capsys):
    """``gui NEW.json --run``: a ``tune --out NEW.json`` that wrote the file meanwhile saw its
    session moved to a backup without a word; it is kept as NEW.json.bak, and a warning says so."""
    from workbench.core.domain.session import load_session
    from workbench.gui.app import main

    monkeypatch.setenv("KERNEL_WORKBENCH_AUTOSAVE_DIR", str(tmp_path / "autosave"))
    other = tmp_path / "other.json"
    assert main(str(other), {"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 2,
                             "options": {"compile": "estimate"}}, None, True) == 0
    target = tmp_path / "new.json"
    bench = tmp_path / "writes_meanwhile.py"  # the other program, writing the file mid-run
    bench.write_text(f"import shutil\nSPACE = {{'i': [0, 1, 2]}}\n\n\ndef measure(config):\n"
                     f"    if config['i'] == 1:\n        shutil.copy({str(other)!r}, {str(target)!r})\n"
                     "    return {'latency_ms': 1.0 + config['i']}\n")
    capsys.readouterr()
    assert main(str(target), {"kernel": str(bench), "backend": "python", "strategy": "grid", "budget": 3}, None, True) == 0
    assert f"warning: SESSION {target} held another session when the run ended; it is kept as {target}.bak\n" \
        in capsys.readouterr().err
    assert len(load_session(target).trials) == 3 and load_session(tmp_path / "new.json.bak").kernel == "vector_add"


def test_a_run_into_a_file_of_which_only_a_killed_runs_journal_is_there_continues_it(tmp_path, monkeypatch, capsys):
    """Taken for a new file, ``gui FILE --run`` replaced a killed run's trials (kept only as a
    backup, unsaid); it continues them, as Open and ``tune --resume`` do."""
    from workbench.core.domain.session import Journal, journal_path, load_session
    from workbench.gui.app import main

    monkeypatch.setenv("KERNEL_WORKBENCH_AUTOSAVE_DIR", str(tmp_path / "autosave"))
    run = {"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 3, "options": {"compile": "estimate"}}
    done = tmp_path / "done.json"
    assert main(str(done), dict(run), None, True) == 0
    killed = tmp_path / "killed.json"  # as a run killed before its first save leaves it: the journal alone
    Journal(journal_path(killed)).start(load_session(done))
    assert not killed.exists()
    assert main(str(killed), dict(run), None, True) == 0
    assert len(load_session(killed).trials) == 6 and not list(tmp_path.glob("killed.json*.bak"))


def test_an_automated_run_that_would_not_continue_its_session_file_is_refused(tmp_path, monkeypatch, capsys):
    """``gui EXISTING.json --run OTHER --quit-when-done`` started another session, which an
    automated window saves nowhere: its trials went at the exit, which said 0."""
    from workbench.core.domain.session import load_session
    from workbench.gui.app import main

    monkeypatch.setenv("KERNEL_WORKBENCH_AUTOSAVE_DIR", str(tmp_path / "autosave"))
    run = {"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 3, "options": {"compile": "estimate"}}
    target = tmp_path / "demo.json"
    assert main(str(target), dict(run), None, True) == 0
    capsys.readouterr()
    other = {**run, "kernel": "reduce_sum"}
    assert main(str(target), other, None, True) == 2
    assert "--run does not continue" in capsys.readouterr().err
    assert main(str(target), {**run, "kernel": "no_such_kernel"}, None, True) == 2
    assert "unknown kernel 'no_such_kernel'" in capsys.readouterr().err  # the request's own error
    assert len(load_session(target).trials) == 3
    assert not any((tmp_path / "autosave").glob("*.json"))  # and nothing ran into an autosave either


def test_only_the_runs_own_session_goes_to_the_new_file_in_a_persons_window(qapp, tmp_path, monkeypatch):
    """In a person's window the save at the run's end followed every later run too: a second run
    (another kernel) replaced NEW.json, the first session moved aside as a backup, unasked."""
    from PySide6.QtCore import QTimer

    from workbench.core.domain.session import load_session
    from workbench.gui.app import main
    from workbench.gui.main_window import MainWindow

    monkeypatch.setenv("KERNEL_WORKBENCH_AUTOSAVE_DIR", str(tmp_path / "autosave"))
    monkeypatch.setattr(MainWindow, "_maybe_save", lambda self, drop=True: True)  # nobody answers questions here
    target = tmp_path / "demo.json"
    seen: dict[str, object] = {}

    def poll() -> None:
        windows = [w for w in qapp.topLevelWidgets() if isinstance(w, MainWindow) and w.isVisible()]
        if not windows or windows[0].running:
            return
        window = windows[0]
        if "second" not in seen and window.path == target:
            seen["second"] = True
            window.start_run({"kernel": "sgemm", "backend": "sim", "strategy": "random", "budget": 2,
                              "options": {"compile": "estimate"}})
        elif "second" in seen and window.model.session is not None and window.model.session.kernel == "sgemm":
            seen["path"], seen["dirty"] = window.path, window.model.dirty
            timer.stop()
            window.model.dirty = False
            qapp.exit(0)

    timer = QTimer()
    timer.timeout.connect(poll)
    QTimer.singleShot(0, lambda: timer.start(100))
    run = {"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 2, "options": {"compile": "estimate"}}
    main(str(target), run, None, False)
    assert seen.get("path") is None and seen.get("dirty") is True, seen
    assert load_session(target).kernel == "vector_add" and not list(tmp_path.glob("demo.json.bak*"))


def test_an_interactive_window_that_refuses_its_file_says_so_and_exits_2_when_closed(qapp, tmp_path):
    """The person's window stays open after a file it refused (File > Open is a click away), says
    the refusal in its status bar as well as on stderr, and its exit status is still 2."""
    from PySide6.QtCore import QTimer

    from workbench.gui.app import main
    from workbench.gui.main_window import MainWindow

    seen: list[str] = []

    def look() -> None:
        shown = [w for w in qapp.topLevelWidgets() if isinstance(w, MainWindow) and w.isVisible()]
        seen.extend(w.statusBar().currentMessage() for w in shown)
        qapp.exit(0)

    QTimer.singleShot(1500, look)
    assert main(str(tmp_path / "missing.json"), None, None, False) == 2
    assert any(message.startswith("error: ") and "missing.json" in message for message in seen), seen


def test_gui_run_takes_the_simulators_resource_mode_as_tune_does(monkeypatch):
    """A demo's quickest start (nothing compiled) was reachable from ``tune`` only."""
    from workbench import cli
    from workbench.gui import app

    started: list[dict] = []
    monkeypatch.setattr(app, "main", lambda session, run, *rest, **named: started.append(run) or 0)
    assert cli.main(["gui", "--run", "conv2d", "--resources", "estimated", "--budget", "5"]) == 0
    assert started[-1]["backend"] == "sim" and started[-1]["options"] == {"compile": "estimate"}
    assert cli.main(["gui", "--run", "conv2d", "--backend", "sim", "--resources", "compiled"]) == 0
    assert started[-1]["options"] == {"compile": "nvrtc"}
    for refused in (["gui", "--run", "conv2d", "--backend", "cuda", "--resources", "estimated"],
                    ["gui", "--run", "bench.py", "--resources", "estimated"],
                    ["gui", "--resources", "estimated"]):
        assert cli.main(refused) == 2
    assert len(started) == 2


def test_gui_gpu_model_is_refused_where_the_run_would_ignore_it(monkeypatch, capsys):
    """``gui --replay FILE --gpu-model T4`` opened the recording and dropped the model without a
    word, where ``tune`` refuses it: the model applies to the simulated GPU only, as --resources."""
    from workbench import cli
    from workbench.gui import app

    started: list[dict] = []
    monkeypatch.setattr(app, "main", lambda session, run, *rest, **named: started.append(run) or 0)
    assert cli.main(["gui", "--run", "conv2d", "--gpu-model", "T4", "--budget", "5"]) == 0
    assert started[-1]["backend"] == "sim" and started[-1]["gpu_model"] == "T4"
    for refused in (["gui", "--replay", str(ROOT / "tests" / "fixtures" / "kt_cache_small.json"), "--gpu-model", "T4"],
                    ["gui", "--run", "conv2d", "--backend", "cuda", "--gpu-model", "T4"],
                    ["gui", "--run", "bench.py", "--gpu-model", "T4"]):
        capsys.readouterr()
        assert cli.main(refused) == 2
        assert "--gpu-model applies to a template on the simulated GPU" in capsys.readouterr().err
    assert len(started) == 1


def test_main_py_gui_runs_and_quits_leaving_nothing_behind(tmp_path):
    """An automated run (screenshot, quit) ends normally: no autosave for the next start to offer
    as a crashed run, no lock, and the person's settings untouched."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
           "KERNEL_WORKBENCH_CONFIG_DIR": str(tmp_path / "config"), "KERNEL_WORKBENCH_DATA_DIR": str(tmp_path / "data")}
    env.pop("KERNEL_WORKBENCH_AUTOSAVE_DIR", None)
    shot = tmp_path / "run.png"
    done = subprocess.run([sys.executable, str(ROOT / "main.py"), "gui", "--run", BENCH, "--backend", "python",
                           "--budget", "12", "--seed", "3", "--screenshot", str(shot), "--quit-when-done"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "does not support" not in done.stderr  # the offscreen platform's notes are no message of ours
    assert shot.stat().st_size > 10_000
    assert (tmp_path / "data" / "autosave").is_dir()  # the run was journaled while it went on
    assert list((tmp_path / "data" / "autosave").iterdir()) == []
    assert not (tmp_path / "config").exists() and not (tmp_path / "xdg").exists()


@pytest.mark.parametrize("size", ["abc", "0x0", "50000x50000", "1920x", "²x900", "١٩٢٠x1080"])
def test_a_screen_size_that_is_no_size_is_one_line_and_exit_2(tmp_path, size):
    """50000x50000 crashed Qt's painter (a segfault, exit 139, no picture); "abc" or "0x0" were
    dropped without a word and the picture came out at another size."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "KERNEL_WORKBENCH_SCREEN_SIZE": size,
           "KERNEL_WORKBENCH_CONFIG_DIR": str(tmp_path / "config"), "KERNEL_WORKBENCH_DATA_DIR": str(tmp_path / "data")}
    done = subprocess.run([sys.executable, str(ROOT / "main.py"), "gui", "--screenshot", str(tmp_path / "s.png"),
                           "--quit-when-done"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and not (tmp_path / "s.png").exists()
    assert done.stderr.strip() == (f"error: KERNEL_WORKBENCH_SCREEN_SIZE={size}: give the window's size as WIDTHxHEIGHT "
                                   "in pixels, each from 1 to 8192, e.g. 1920x1080")


def test_a_screen_size_below_the_windows_minimum_says_the_size_drawn(tmp_path):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "KERNEL_WORKBENCH_SCREEN_SIZE": "400x300",
           "KERNEL_WORKBENCH_CONFIG_DIR": str(tmp_path / "config"), "KERNEL_WORKBENCH_DATA_DIR": str(tmp_path / "data")}
    done = subprocess.run([sys.executable, str(ROOT / "main.py"), "gui", "--screenshot", str(tmp_path / "s.png"),
                           "--quit-when-done"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    from PySide6.QtGui import QImage

    image = QImage(str(tmp_path / "s.png"))
    note = [line for line in done.stderr.splitlines() if line.startswith("note: ")]
    assert note == [f"note: KERNEL_WORKBENCH_SCREEN_SIZE=400x300 is smaller than the window can be; it is drawn at "
                    f"{image.width()}x{image.height()}"]


def test_an_automated_window_opening_a_session_leaves_the_persons_settings_alone(tmp_path):
    """Opening a session records it among the recent files; an automated window (screenshot,
    quit) did so in the person's own settings when KERNEL_WORKBENCH_CONFIG_DIR was not set."""
    session = tmp_path / "s.json"
    save_session(_session(), session)
    home = tmp_path / "home"
    mine = home / ".config" / "kernel-workbench" / "workbench.conf"
    mine.parent.mkdir(parents=True)
    mine.write_text("[General]\nrecent=/elsewhere/mine.json\n")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "HOME": str(home),
           "KERNEL_WORKBENCH_DATA_DIR": str(tmp_path / "data")}
    for name in ("KERNEL_WORKBENCH_CONFIG_DIR", "XDG_CONFIG_HOME", "KERNEL_WORKBENCH_AUTOSAVE_DIR"):
        env.pop(name, None)
    for flags in (["--screenshot", str(tmp_path / "shot.png"), "--quit-when-done"], ["--quit-when-done"]):
        done = subprocess.run([sys.executable, str(ROOT / "main.py"), "gui", str(session), *flags],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert mine.read_text() == "[General]\nrecent=/elsewhere/mine.json\n"
        assert sorted(p.name for p in home.rglob("*")) == [".config", "kernel-workbench", "workbench.conf"]


def test_space_edits_reach_the_next_run_and_keep_measured_trials(window, qtbot):
    window.toolbar.apply({"kernel": BENCH, "backend": "python"})
    window._on_kernel_changed(BENCH)
    panel = window.slots_panel
    qtbot.waitUntil(lambda: panel.base is not None, timeout=60_000)  # read by a process of its own
    full = panel.base.count()
    panel.set_value_enabled("unroll", 16, False)
    panel.set_value_enabled("block_size", 1024, False)
    edited = panel.space.count()
    assert edited < full
    with qtbot.waitSignal(window.run_done, timeout=60_000) as blocker:
        window.start_run({"kernel": BENCH, "backend": "python", "strategy": "grid", "budget": 500})
    assert blocker.args[0].reason == "exhausted"
    trials = window.model.trials
    assert len(trials) == edited
    # complete, not cut short: said so, with no offer of the budget's rest
    assert window.toolbar.progress_label.text() == f"done: nothing left to measure, {edited} evals"
    assert not any(t.config["unroll"] == 16 or t.config["block_size"] == 1024 for t in trials)
    # widening the space again keeps every measured trial and measures only the new configs
    panel.set_value_enabled("unroll", 16, True)
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({"kernel": BENCH, "backend": "python", "strategy": "grid", "budget": 500})
    ids = [t.config.id for t in window.model.trials]
    assert len(ids) == len(set(ids)) == panel.space.count()


def test_layout_and_preferences_persist(qtbot, tmp_path):
    from workbench.gui.settings_store import JsonSettings

    from workbench.gui.main_window import MainWindow

    settings = JsonSettings(str(tmp_path / "prefs.ini"))
    first = MainWindow(interactive=False, settings=settings)
    qtbot.addWidget(first)
    first.model.set_session(_session())
    first.metric_chart.set_axes("slot:unroll", "memory_mb")
    first.splitters["main"].setSizes([420, 1000])
    first._remember_dir(str(tmp_path / "somewhere" / "file.json"))
    first._add_recent(str(tmp_path / "a.json"))
    first.save_settings()
    second = MainWindow(interactive=False, settings=JsonSettings(str(tmp_path / "prefs.ini")))
    qtbot.addWidget(second)
    second.model.set_session(_session())
    assert second.metric_chart.axes() == ("slot:unroll", "memory_mb")
    assert second._last_dir() == str(tmp_path / "somewhere")
    assert second.recent_files() == [str(tmp_path / "a.json")]
    assert second.splitters["main"].sizes()[0] == first.splitters["main"].sizes()[0]


def test_a_killed_run_is_offered_for_recovery(qtbot, tmp_path, monkeypatch):
    """Only a journal exists (the process died before its first save): the next start finds it."""
    from workbench.gui.settings_store import JsonSettings

    from workbench.core.domain.session import Journal
    from workbench.gui.main_window import MainWindow

    folder = tmp_path / "autosave"
    folder.mkdir()
    monkeypatch.setenv("KERNEL_WORKBENCH_AUTOSAVE_DIR", str(folder))
    session = _session()
    path = folder / "toy-killed.json"
    journal = Journal(path)
    journal.start(Session(kernel="toy", space=_space(), device={"name": "toy", "simulated": True}))
    for trial in session.trials[:5]:
        journal.append(trial)
    journal.close()
    assert not path.exists()
    window = MainWindow(interactive=False, settings=JsonSettings(str(tmp_path / "p.ini")))
    qtbot.addWidget(window)
    assert window.recoverable() == [path]
    window.open_session(path)
    assert [t.config.id for t in window.model.trials] == [t.config.id for t in session.trials[:5]]


def test_imported_kernel_tuner_cache_is_shown_as_recorded(window, landscape):
    window.import_kt_cache(str(landscape("pnpoly_RTX_3090.json")))
    window.refresh()
    model = window.model
    ok = int((~model.failed_mask()).sum())
    assert model.n > 100 and ok > 0
    # an import is the recording itself, as show and the exports call it (the badge said REPLAY)
    assert window.timing_badge.text().strip() == "RECORDED: timings were measured earlier, not now"
    # memory is not in a Kernel Tuner cache: the trade-off chart draws no made-up 0 MB but a figure
    # the recording has (its compile time here)
    chart = window.tradeoff_chart
    offered = [chart.y_combo.itemData(i) for i in range(chart.y_combo.count())]
    assert "memory_mb" not in offered and "compile_s" in offered
    assert "kt_time_ms" not in offered  # Kernel Tuner's time against the median latency is no trade-off
    assert len(chart.feasible.data) > 0 and not chart.no_data.isVisible()
    assert left_title(chart.plot) == metric_label(chart.y_name) != "memory (not reported)"
    # and its title says so: "Latency vs memory" above a compile-time axis read as a mislabel
    assert chart.title_label.text() == f"Latency vs {metric_label(chart.y_name)}" != "Latency vs memory"
    assert chart.hint in chart.title_label.toolTip()
    assert window.toolbar.kernel.currentText() == model.session.kernel  # not the previous template
    assert "throughput_gbs" not in model.metric_names()  # only metrics the recording has are offered


def test_chart_legends_sit_above_the_plots_not_over_the_points_and_name_what_is_drawn(window, qtbot):
    """Inside the plot a legend box covered the best points (top right of the score chart); each
    chart now names its series in a line of text above the plot, in the series' colours. It names
    the series drawn: "Pareto front", "default config" and "latency p20–p80" listed over a
    recording that had none of them explained nothing."""
    for chart in window.charts.values():
        assert chart.plot.plotItem.legend is None  # nothing drawn over the data
        assert chart.legend.text() == "" and chart.legend.isHidden()  # nothing drawn yet: nothing named
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 12,
                          "options": {"compile": "estimate"}})
    for chart in window.built_charts.values():
        chart.refresh()
    score = window.score_chart.legend.text()
    assert "best&nbsp;so&nbsp;far" in score and "feasible" in score and not window.score_chart.legend.isHidden()
    assert "failed" not in score  # no trial failed: no cross to explain
    tradeoff = window.tradeoff_chart
    for name in ("best&nbsp;feasible", "default&nbsp;config"):
        assert name in tradeoff.legend.text()
    # an entry never breaks inside: it wrapped as "latency p20–" / "p80" in presentation mode
    drawn = {name: item.getData()[0] is not None and len(item.getData()[0]) > 1  # (a line of one point is none)
             for name, item in (("spread", tradeoff.spread), ("pareto", tradeoff.pareto))}
    assert ("latency&nbsp;p20\u2060–\u2060p80" in tradeoff.legend.text()) == drawn["spread"]
    assert ("Pareto&nbsp;front" in tradeoff.legend.text()) == drawn["pareto"]
    assert window.score_chart.layout().indexOf(window.score_chart.legend) < window.score_chart.layout().indexOf(window.score_chart.plot)


def test_slots_panel_counts_the_space_off_the_gui_thread(qtbot):
    """A file's space may take minutes to count: the panel must never do it on the GUI thread."""
    import threading

    from workbench.core.domain.space import ProductSpace
    from workbench.gui.slots_panel import SlotsPanel

    class WatchedSpace(ProductSpace):
        """A real space that remembers which threads counted it."""

        threads: list[str] = []

        def count(self) -> int:
            WatchedSpace.threads.append(threading.current_thread().name)
            return super().count()

    base = _space()
    space = WatchedSpace(base.slots, base.restrictions, dict(base.params))
    panel = SlotsPanel()
    qtbot.addWidget(panel)
    panel.set_space(space)
    assert "counting" in panel.count_label.text()
    qtbot.waitUntil(lambda: f"<b>{base.count()}</b> valid" in panel.count_label.text(), timeout=5000)
    assert WatchedSpace.threads and threading.main_thread().name not in WatchedSpace.threads


def test_window_opens_on_a_quick_template_then_on_the_last_used(qtbot, tmp_path):
    from workbench.gui.settings_store import JsonSettings

    from workbench.gui.main_window import MainWindow
    from workbench.gui.run_panel import QUICK_KERNEL

    settings = JsonSettings(str(tmp_path / "kernel.ini"))
    first = MainWindow(interactive=False, settings=settings)
    qtbot.addWidget(first)
    assert first.toolbar.kernel.currentText() == QUICK_KERNEL == "vector_add"
    first.toolbar.kernel.setCurrentIndex(first.toolbar.kernel.findText("gelu"))
    first.save_settings()
    again = MainWindow(interactive=False, settings=settings)
    qtbot.addWidget(again)
    assert again.toolbar.kernel.currentText() == "gelu"


def test_background_compiles_show_apart_from_evaluations_and_refine_the_trials(window, qtbot, tmp_path, monkeypatch):
    """A simulated run whose compiles have not landed shows estimates at once, counts the pending
    compiles first in the progress label, and ends with the refined trials in the window's model;
    the next run starts without the last one's count."""
    monkeypatch.setenv("KERNEL_WORKBENCH_CACHE_DIR", str(tmp_path / "fresh-cache"))  # nothing compiled yet
    labels = []
    window.toolbar.show_compiles(0, 0)
    with qtbot.waitSignal(window.run_done, timeout=120_000) as blocker:
        window.start_run({"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 4, "seed": 2,
                          "options": {"arch": "sm_87", "compile_wait_s": 0}})  # no table ships for sm_87
        window.engine_thread.progress.connect(lambda _e: labels.append(
            (window.toolbar.compile_text, window.toolbar.progress_label.text())))
    assert blocker.args[0].reason == "budget"
    assert window.engine_thread.engine.refined == 4
    # said before the run's state in the progress label, which never goes to the overflow menu
    assert any(" compiling in background" in text and shown.startswith(f"{text}; ") for text, shown in labels)
    assert window.toolbar.compile_text == "compiles done: 4 refined"
    assert window.toolbar.progress_label.text() == "done (budget), 4 evals; compiles done: 4 refined"
    details = [t.measurement.details for t in window.model.trials]
    assert len(details) == 4 and all(d.get("refined_from_estimate") and not d.get("estimated") for d in details)
    # re-showing the refined trials is no save: the unsaved run still asks before it is closed
    assert window.path is None and window.model.dirty and window.windowTitle().endswith(" *")
    window.toolbar.show_compiles(3, 1)  # as a run stopped during its refinement leaves the label
    with qtbot.waitSignal(window.run_done, timeout=120_000):
        window.start_run({"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 1, "seed": 3})
        assert window.toolbar.compile_text == "" and not window.toolbar.progress_label.text().startswith("3 compiling")


def test_show_in_table_brings_up_the_results_on_the_best_trial_even_behind_a_filter(window, qtbot):
    """The best card's *Show in table* only re-selected the best trial: another tab stayed in
    front, a row scrolled away stayed away, and a filter hiding it left nothing to see."""
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 12, "seed": 4,
                          "options": {"compile": "estimate"}})
    best = window.model.ranking.best
    other = next(t for t in window.model.trials if t.config["block_size"] != window.model.trials[best].config["block_size"])
    table = window.results
    table.slot_edit.setText(f"block_size={other.config['block_size']}")
    table._on_slot_filter()
    window.bottom_tabs.setCurrentWidget(window.failures)
    window.best_card.select_button.click()
    assert window.bottom_tabs.currentWidget() is table
    assert table.selected_row() == best and table.slot_edit.text() == ""
    assert "filters cleared to show it" in window.statusBar().currentMessage()


def test_a_paused_run_says_so_in_the_progress_label_without_an_eta(window):
    """Paused, the label read '58 done, 5 failed ETA 5s': only the button's text showed the pause,
    and the ETA read as progress."""
    bar = window.toolbar
    bar.set_running(True)
    bar.show_progress(58, 100, 5, 5.0)
    assert bar.progress_label.text() == "58 done, 5 failed ETA 5s"
    bar.set_running(True, paused=True)
    assert bar.progress_label.text() == "paused: 58 done, 5 failed"
    bar.show_progress(58, 100, 5, 4.0)  # a late progress event while paused
    assert bar.progress_label.text() == "paused: 58 done, 5 failed"
    bar.set_running(True, paused=False)
    assert bar.progress_label.text() == "58 done, 5 failed ETA 4s"
    bar.show_progress(58, 3000, 5, 14990.0)  # a long run's ETA in hours, not "ETA 14990s"
    assert bar.progress_label.text() == "58 done, 5 failed ETA 4h09m"
    bar.set_running(False)
    bar.show_state("done (budget), 100 evals")
    assert bar.progress_label.text() == "done (budget), 100 evals"


def test_a_run_waiting_for_its_compiles_after_its_last_evaluation_shows_no_eta(window):
    """Every evaluation done, the run waits for its background compiles: the label read "ETA 0s"
    beside a full bar for minutes."""
    bar = window.toolbar
    bar.set_running(True)
    bar.show_compiles(33, 0)
    bar.show_progress(100, 100, 2, 0.0)
    assert bar.progress_label.text() == "33 compiling in background (estimates shown), 0 refined; 100 done, 2 failed"
    bar.show_progress(60, 100, 2, 3.0)
    assert bar.progress_label.text().endswith("60 done, 2 failed ETA 3s")


def test_a_run_at_another_size_keeps_the_wider_space_the_panel_shows(window, qtbot):
    """The session's space carries the run's problem; the panel's carries the template's default.
    Started from an edited panel, the run must leave the panel's base wide, whatever the size."""
    window.toolbar.apply({"kernel": "vector_add", "backend": "sim"})
    window._on_kernel_changed("vector_add")
    panel = window.slots_panel
    full = panel.base.count()
    panel.set_value_enabled("block_size", 1024, False)
    assert panel.space.count() < full
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 3,
                          "problem": {"n": 1 << 22}})
    assert panel.base.count() == full
    panel.set_value_enabled("block_size", 1024, True)  # widening again is possible
    assert panel.space.count() == full


def test_an_empty_compare_tab_asks_for_two_trials_instead_of_calling_them_the_same(window, qtbot):
    """With no pair chosen the diff pane's placeholder said the rendered sources of A and B were the same."""
    from PySide6.QtWidgets import QApplication

    window.bottom_tabs.setCurrentWidget(window.compare)
    QApplication.processEvents()
    diff = window.compare.diff
    assert diff.toPlainText() == "" and "pick two trials" in diff.placeholderText()
    assert "the same" not in diff.placeholderText() and window.compare.pair.tabText(1) == "Source diff"
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({"kernel": BENCH, "backend": "python", "strategy": "random", "budget": 4, "seed": 1})
    window.compare.set_pair(0, 0)  # one trial against itself: now the sources are the same
    assert diff.toPlainText() == "" and "are the same" in diff.placeholderText()
    window.compare.set_pair(0, None)
    assert "pick two trials" in diff.placeholderText()


def test_compare_of_a_recording_says_it_has_no_source_to_compare(window, landscape):
    """A recording has no source: an empty diff there is no sign the two configs render the same."""
    window.import_kt_cache(str(landscape("pnpoly_RTX_3090.json")))
    window.bottom_tabs.setCurrentWidget(window.compare)
    window.compare.set_pair(0, 1)
    diff = window.compare.diff
    assert diff.toPlainText() == "" and diff.placeholderText().startswith("no source to compare: ")


def test_the_score_axis_of_a_session_without_a_score_reads_0_to_1_without_an_si_prefix(window, qtbot, cli, tmp_path):
    """Every trial failed (all drawn at 0): pyqtgraph's automatic range was a hair around 0 and its
    automatic SI prefix labelled the axis "score (x0.001)" with ticks up to ±400."""
    from PySide6.QtWidgets import QApplication

    bench = tmp_path / "broken.py"
    bench.write_text("SPACE = {'a': [1, 2, 4, 8], 'b': [1, 2, 3]}\n"
                     "def measure(config):\n    raise RuntimeError('always fails')\n")
    path = tmp_path / "broken.json"
    cli("tune", bench, "--backend", "python", "--budget", "6", "--quiet", "--out", path)
    window.open_session(path)
    assert window.model.n == 6 and window.model.failed_mask().all()
    chart = window.score_chart
    chart.refresh()
    QApplication.processEvents()
    axis = chart.plot.getAxis("left")
    assert re.sub(r"<[^>]+>", "", axis.labelString()).strip() == "score (1 = best seen)", axis.labelString()  # no "(x0.001)"
    low, high = chart.plot.getViewBox().viewRange()[1]
    assert -0.1 <= low <= 0.0 and 1.0 <= high <= 1.1
    # a session with scores gets the automatic range back
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({"kernel": BENCH, "backend": "python", "strategy": "random", "budget": 4, "seed": 1})
    chart.refresh()
    assert chart.plot.getViewBox().autoRangeEnabled()[1]


@pytest.mark.parametrize("ini", [
    "[General]\nrecent=@Variant(\\0\\0\\0\\x2\\0\\0\\0\\x5)\n",  # an int
    "[General]\nrecent=@Variant(\\0\\0\\0\\x1a\\0\\0\\0\\x1\\0\\0\\0\\x2)\n",  # a QPointF
    "[General]\nrecent=\\0\\0, /ok.json\n",  # a path no file system holds
    "[view]\nzoom=nan\n",
    "[view]\nzoom=1e308\n",
])
def test_a_damaged_settings_file_still_opens_the_window(qtbot, tmp_path, ini):
    """Settings of another type than the window wrote (an edited or damaged settings.ini) ended the
    window's start with a TypeError or 'cannot convert float NaN' traceback, before it showed."""
    from workbench.gui.settings_store import JsonSettings

    from workbench.gui.main_window import MainWindow
    from workbench.gui.presentation import ZOOM_RANGE

    (tmp_path / "p.ini").write_text(ini)
    window = MainWindow(interactive=False, settings=JsonSettings(str(tmp_path / "p.ini")))
    qtbot.addWidget(window)
    assert window.recent_files() in ([], ["/ok.json"])
    window._add_recent(str(tmp_path / "a.json"))
    assert window.recent_files()[0] == str(tmp_path / "a.json")
    zooms = [getattr(child, "factor") for child in vars(window).values() if hasattr(child, "set_factor")]
    assert zooms and all(ZOOM_RANGE[0] <= z <= ZOOM_RANGE[1] for z in zooms)


def test_the_toolbar_counts_aborted_candidates_apart_from_failures(window) -> None:
    window.toolbar.show_progress(12, 20, 1, None, aborted=9)
    text = window.toolbar.progress_label.text()
    assert "1 failed, 9 aborted over the latency limit" in text
    window.toolbar.show_progress(12, 20, 0, 3.0)
    assert "aborted" not in window.toolbar.progress_label.text()


def test_an_empty_window_does_not_say_memory_is_not_reported(window) -> None:
    """Before any trial nothing is reported yet: the trade-off chart's axis says what it will show."""
    window.refresh()
    assert window.model.n == 0
    assert left_title(window.tradeoff_chart.plot) == "memory"


def test_a_background_result_outlives_a_receiver_destroyed_while_it_works(qtbot):
    """With the panel as its parent, closing the panel deleted the carrier under the counting
    thread, whose emit then ended the process (a test worker died in its teardown under load)."""
    import shiboken6

    from workbench.core.domain.space import SearchSpace, Slot
    from workbench.gui.importance_view import ImportanceView
    from workbench.gui.slots_panel import SlotsPanel

    panel, view = SlotsPanel(), ImportanceView(lambda: [])
    carriers = [panel._counting, view._computing]
    panel.set_space(SearchSpace([Slot("a", (1, 2, 3))]))
    for widget in (panel, view):
        shiboken6.delete(widget)  # as closing the window destroys them
    assert not shiboken6.isValid(panel) and all(shiboken6.isValid(carrier) for carrier in carriers)
    for carrier in carriers:
        carrier.done.emit(None, None)  # what a late thread does: no receiver, no crash


def test_a_benchmarks_space_is_read_off_the_gui_thread_and_a_stale_one_dropped(window, qtbot):
    """The kernel field's benchmark was read on the GUI thread, by a process of its own: about a
    second per edit, and up to its import's time limit for a module that sleeps as it loads."""
    window.toolbar.apply({"kernel": BENCH, "backend": "python"})
    window._on_kernel_changed(BENCH)
    panel = window.slots_panel
    assert panel.base is None and "reading the space of" in panel.count_label.text()  # returned at once
    qtbot.waitUntil(lambda: panel.base is not None, timeout=60_000)
    assert "unroll" in [slot.name for slot in panel.base.slots]
    window._on_kernel_changed(BENCH)
    window.toolbar.apply({"kernel": "vector_add", "backend": "sim"})  # the field moves on meanwhile
    window._on_kernel_changed("vector_add")
    qtbot.waitUntil(lambda: window._reading_benchmark is None, timeout=60_000)
    qtbot.wait(50)
    names = [slot.name for slot in panel.base.slots]  # vector_add's, not the late benchmark's
    assert "vector_width" in names and "unroll" not in names


def test_gui_runs_a_template_from_a_folder_the_command_line_names(window, qtbot, monkeypatch):
    """``gui --run saxpy --kernel-dir DIR`` (as ``tune --kernel-dir``): the folder's templates are
    listed and run from there, and the source view renders the person's template instead of saying
    its folder is not loaded."""
    from pathlib import Path

    from workbench import cli
    from workbench.gui import app

    folder = Path(__file__).resolve().parents[2] / "docs" / "examples" / "saxpy"
    started: list[tuple] = []
    monkeypatch.setattr(app, "main", lambda session, run, *rest, **named: started.append((run, named)) or 0)
    assert cli.main(["gui", "--run", "saxpy", "--kernel-dir", str(folder), "--budget", "3"]) == 0
    run, named = started[-1]
    assert run["kernel_dirs"] == [str(folder)] and named["kernel_dirs"] == [str(folder)]
    # (a run naming the folder registers it, as app.main does for each template of a --kernel-dir)
    with qtbot.waitSignal(window.run_done, timeout=120_000) as blocker:
        window.start_run({**run, "backend": "sim", "strategy": "random", "budget": 3})
    assert blocker.args[0].reason in ("budget", "exhausted")
    window.source_view.show_trial(0)
    text = window.source_view.editor.toPlainText()
    assert "#define BLOCK_SIZE" in text and "not loaded" not in window.source_view.header.text()


def test_every_strategy_in_the_box_says_what_it_is(window):
    """The strategy box had no tool tip at all: a new user saw 'agents' with no word on it."""
    from PySide6.QtCore import Qt

    from workbench.search.base import DEFAULT_STRATEGY, strategy_class

    box = window.toolbar.strategy
    for index in range(box.count()):
        tip = box.itemData(index, Qt.ItemDataRole.ToolTipRole)
        assert tip.startswith(box.itemText(index)) and strategy_class(box.itemText(index)).description in tip
    box.setCurrentText(DEFAULT_STRATEGY)
    assert box.toolTip().startswith(f"{DEFAULT_STRATEGY} (default): ")
    box.setCurrentText("random")
    assert box.toolTip().startswith("random: Uniform random sampling")


def _aborted_and_failed_session(message: str = "boom") -> Session:
    space = SearchSpace([Slot("block", (32, 64, 128, 256), "launch")])
    trials = [Trial(0, space.config({"block": 32}), Measurement(Status.OK, {"latency_ms": 1.0})),
              Trial(1, space.config({"block": 64}), Measurement.failure(Status.RUNTIME_ERROR, message))]
    for i, block in enumerate((128, 256), start=2):
        trials.append(Trial(i, space.config({"block": block}),
                            Measurement.failure(Status.ABORTED, f"aborted above {0.1 * i:.3f} ms (limit 0.1 ms)")))
    return Session(kernel="k", space=space, trials=trials, device={"name": "GPU"})


def test_the_failed_filter_lists_failures_not_aborted_candidates(window, qtbot) -> None:
    """The Failures tab said "1 failed, aborted: 2" and listed three rows under "failed"; its
    reasons named each aborted trial's own bound, which grouped nothing."""
    window.model.set_session(_aborted_and_failed_session())
    log = window.failures
    log.refresh()
    shown = [log.proxy.mapToSource(log.proxy.index(r, 0)).row() for r in range(log.proxy.rowCount())]
    assert [window.model.trials[r].status for r in shown] == [Status.RUNTIME_ERROR]
    log.status_combo.setCurrentText("aborted")
    assert log.proxy.rowCount() == 2  # their own filter shows them
    text = log.concentration.text()
    assert "aborted (2): stopped above the latency limit in force" in text and "0.200 ms" not in text


def test_a_failure_chosen_on_a_chart_is_chosen_in_the_failures_tab_with_its_log(window, qtbot) -> None:
    """A failed point clicked on a chart (``model.select``) left the Failures tab's table unmarked
    and its log pane asking for a selection, though a click selects the trial everywhere."""
    window.model.set_session(_aborted_and_failed_session("the kernel hit an illegal address"))
    log = window.failures
    window.model.select(1)  # what a click on the chart's failed cross does
    chosen = log.proxy.mapToSource(log.view.currentIndex()).row()
    assert chosen == 1 and "trial 1" in log.log.toPlainText() and "illegal address" in log.log.toPlainText()
    window.model.select(0)  # an ok trial: the table lists none such, so nothing stays marked here
    assert not log.view.selectionModel().hasSelection() and log.log.toPlainText() == ""
    window.model.select(1)
    assert "illegal address" in log.log.toPlainText()


def test_a_compile_errors_reason_comes_before_where_the_compiler_found_it(window) -> None:
    """Every compile error of a run read ``my_kernel.cu(6): ...`` in the Failures tab's message
    column, a few words wide: the reason was never in sight without opening each row."""
    from PySide6.QtCore import Qt

    message = "my_kernel.cu(6): catastrophic error: #error directive: tile too small"
    window.model.set_session(_aborted_and_failed_session(message))
    window.failures.refresh()
    model = window.failures.table_model
    cell = model.index(1, model.column_of("message"))
    assert model.data(cell) == "catastrophic error: #error directive: tile too small (my_kernel.cu line 6)"
    assert message in model.data(cell, Qt.ItemDataRole.ToolTipRole)  # the tool tip and the log: as written
    window.model.select(1)
    assert message in window.failures.log.toPlainText()


def test_long_words_and_long_filters_never_widen_the_window(window, qtbot) -> None:
    """A 10,000-character filter made the window 71,831 px wide (its error said the text in
    full); a 6,000-character word in a failure's message, 44,398 px."""
    window.resize(1440, 900)
    window.model.set_session(_aborted_and_failed_session("Y" * 6000))
    window.failures.refresh()
    window.bottom_tabs.setCurrentWidget(window.failures)
    qtbot.wait(20)
    assert window.width() == 1440
    window.bottom_tabs.setCurrentIndex(0)  # Results
    table = window.results
    table.slot_edit.setText("x" * 10_000)
    table._on_slot_filter()
    qtbot.wait(20)
    assert table.filter_error.text() and window.width() == 1440


def test_a_run_of_a_broken_template_in_a_kernel_folder_says_why_once(tmp_path):
    """gui --run NAME --kernel-dir F, NAME's spec broken: the folder's scan warned of it and the
    run's refusal said the same again, two identical lines."""
    import json

    from workbench.core.domain.kernel_spec import SPEC_SUFFIX, save_template_folder

    example = ROOT / "docs" / "examples" / "saxpy"
    spec = json.loads((example / f"saxpy{SPEC_SUFFIX}").read_text())
    folder = save_template_folder(tmp_path / "mine", spec, (example / "saxpy.cu").read_text()).parent
    spec_file = folder / f"saxpy{SPEC_SUFFIX}"
    spec_file.write_text(spec_file.read_text().replace("block_size * items <= 4096", "block_size * itms <= 4096"))
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "KERNEL_WORKBENCH_DATA_DIR": str(tmp_path / "data")}
    done = subprocess.run([sys.executable, str(ROOT / "main.py"), "gui", "--run", "saxpy", "--kernel-dir", str(folder),
                           "--backend", "sim", "--budget", "2", "--quit-when-done"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    said = [line for line in done.stderr.splitlines() if "itms" in line]
    assert done.returncode == 2 and len(said) == 1 and said[0].startswith("error: "), done.stderr


def test_a_persons_window_reads_the_session_it_was_started_with_on_a_thread(qapp, tmp_path, monkeypatch):
    """``gui FILE`` read FILE on the GUI thread before the window could answer (seconds for a
    session of 100,000 trials); it is read as File > Open reads, with the window up meanwhile."""
    import threading

    from PySide6.QtCore import QTimer

    from workbench.gui import window_files as window_files_module
    from workbench.gui.app import main
    from workbench.gui.main_window import MainWindow

    session = tmp_path / "s.json"
    save_session(_session(), session)
    readers: list[str] = []
    real = window_files_module._loaded

    def loaded(*args, **kwargs):
        readers.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(window_files_module, "_loaded", loaded)
    shown: list[int] = []

    def look() -> None:
        shown.extend(len(w.model.trials) for w in qapp.topLevelWidgets() if isinstance(w, MainWindow) and w.isVisible())
        qapp.exit(0)

    QTimer.singleShot(1500, look)
    assert main(str(session), None, None, False) == 0
    assert shown == [len(_session().trials)] and readers and threading.main_thread().name not in readers


def test_a_chart_of_no_successful_trial_keeps_its_limit_label_off_the_message_and_its_axis_true(window):
    """Every candidate aborted under a tight limit: the limit line's label was drawn over the
    plot's "no successful trial" message, and the axis said "memory (not reported)" of a kernel
    that reports memory once a trial succeeds."""
    from workbench.core.domain.objective import Constraints
    from workbench.gui.charts import LIMIT_LABEL_AT, LIMIT_LABEL_EMPTY

    trials = [Trial(i, config, Measurement(Status.ABORTED, {"latency_bound_ms": 3.0 + i}, "aborted above 3 ms"))
              for i, config in enumerate(_space())]
    window.model.set_session(Session(kernel="toy", space=_space(), trials=trials,
                                     constraints=Constraints(max_latency_ms=0.01),
                                     device={"name": "toy", "simulated": True}))
    window.refresh()
    chart = window.tradeoff_chart
    assert chart.no_data.isVisible() and "no successful trial" in chart.no_data.textItem.toPlainText()
    assert chart.latency_line.isVisible() and chart.latency_line.label.orthoPos == LIMIT_LABEL_EMPTY
    assert left_title(chart.plot) == "memory"
    window.model.set_session(_session())
    window.model.set_constraints(max_latency_ms=100.0)
    window.refresh()
    assert not chart.no_data.isVisible() and chart.latency_line.label.orthoPos == LIMIT_LABEL_AT


def test_the_latency_limits_label_stays_inside_the_plot_at_any_width_and_limit(window, qtbot):
    """Placed by pyqtgraph on the side of the view's middle, whatever its width, the label ran out
    of the plot in 6 of 96 placements of this scan (a limit just right of the middle, a narrow
    chart); and switching the axis to log with a limit over 308 ms overflowed 10 ** value."""
    from PySide6.QtWidgets import QApplication

    session = _session()
    session.trials = [Trial(t.index, t.config, Measurement(Status.OK, {**t.measurement.metrics,  # 400 to 2,800 ms
                                                                        "latency_ms": t.metric("latency_ms") * 400}))
                      if t.ok else t for t in session.trials]
    window.model.set_session(session)
    window.refresh()
    chart = window.tradeoff_chart
    outside = []
    for log in (True, False):
        chart.log_box.setChecked(log)
        for width in (220, 300, 420, 600):
            chart.resize(width, 300)
            qtbot.wait(10)
            for limit in (480, 640, 800, 1000, 1200, 1400, 1600, 1800, 2000, 2200, 2600, 3000):
                window.model.set_constraints(max_latency_ms=limit)
                window.refresh()
                QApplication.processEvents()
                box = chart.latency_line.label.sceneBoundingRect()
                view = chart.plot.getViewBox().sceneBoundingRect()
                if box.left() < view.left() - 1 or box.right() > view.right() + 1:
                    outside.append((log, width, limit, chart.latency_line.label.textItem.toPlainText()))
    assert outside == []
    window.model.set_constraints(max_latency_ms=1500.0)
    chart.log_box.setChecked(False)
    chart.log_box.setChecked(True)  # the line holds 1500 (linear) for a moment: no 10 ** 1500
    QApplication.processEvents()
    assert chart.latency_line.label.textItem.toPlainText() in ("max latency 1500 ms", "\u2264 1500 ms")


@pytest.mark.parametrize("limit", [1.6, 3.5, 5.4])
def test_the_latency_limits_label_stays_inside_the_plot_shortened_where_needed(window, qtbot, limit):
    """pyqtgraph put the label on the side of the view's middle whatever its width: a limit a
    little right of the middle had it run under the left axis ("x latency 0.6105 ms") in
    presentation mode and in exported charts. It goes to the side with room, shortened to
    "≤ 1.6 ms" where neither side has room for the whole; and it reads the line's value as the
    line is dragged (a text fixed when the limit was set showed the old one meanwhile)."""
    window.model.set_session(_session())
    window.model.set_constraints(max_latency_ms=limit)
    window.refresh()
    chart = window.tradeoff_chart
    chart.resize(260, 300)  # narrow: the whole label fits on neither side somewhere
    qtbot.wait(50)
    label = chart.latency_line.label
    label.updatePosition()
    view = chart.plot.getViewBox().sceneBoundingRect()
    box = label.sceneBoundingRect()
    assert view.left() - 1 <= box.left() and box.right() <= view.right() + 1, (box, view)
    text = label.textItem.toPlainText()
    assert text in (f"max latency {limit:.4g} ms", f"\u2264 {limit:.4g} ms")
    chart.resize(1200, 600)  # room again: the whole label
    qtbot.wait(50)
    label.updatePosition()
    assert label.textItem.toPlainText() == f"max latency {limit:.4g} ms"
    position = chart.latency_line.value()
    chart.latency_line.setValue(position + 0.1)  # as a drag moves it (on the log axis, in decades)
    shown = 10 ** (position + 0.1) if chart.log_x else position + 0.1
    dropped = limit_text(dragged_limit(shown, chart._pixel(shown, 0)))  # what a drag ending there sets
    assert label.textItem.toPlainText() in (f"max latency {dropped} ms", f"\u2264 {dropped} ms")


def test_a_window_that_stays_open_after_its_picture_takes_it_before_offering_an_autosave(qtbot, tmp_path,
                                                                                          monkeypatch):
    """``gui --screenshot X.png`` (a person's window: it stays open) asked first whether to recover
    an autosave waiting from a crash, a question that blocks: the picture was never taken."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from workbench.gui.app import main
    from workbench.gui.main_window import MainWindow

    done: list[str] = []
    grab = MainWindow.grab
    monkeypatch.setattr(MainWindow, "grab", lambda self, *a: done.append("picture") or grab(self, *a))
    monkeypatch.setattr(MainWindow, "offer_recovery", lambda self: done.append("recovery question"))
    monkeypatch.setenv("KERNEL_WORKBENCH_CONFIG_DIR", str(tmp_path / "config"))
    shot = tmp_path / "start.png"

    def close_when_asked() -> None:  # the person closes the window once both happened
        if len(done) < 2:
            QTimer.singleShot(50, close_when_asked)
            return
        for widget in QApplication.topLevelWidgets():
            if isinstance(widget, MainWindow):
                widget.interactive = False
                widget.close()
        QApplication.instance().exit(0)

    QTimer.singleShot(50, close_when_asked)
    main(None, None, str(shot), False)
    qtbot.wait(500)  # what the person's window left scheduled runs now, not in the next test
    assert done == ["picture", "recovery question"] and shot.stat().st_size > 10_000


def test_gui_tab_shows_that_view_in_the_window_and_its_picture(qtbot, tmp_path, monkeypatch, window):
    """The Sizes or Portability view could not be pictured from the command line: the window
    always opened on Results (docs scripts drove the window from Python instead)."""
    from workbench.cli.parser import GUI_TABS
    from workbench.gui.app import main
    from workbench.gui.main_window import MainWindow

    tabs = window.bottom_tabs
    assert MainWindow.TAB_NAMES == GUI_TABS and len(GUI_TABS) == tabs.count()
    for name in GUI_TABS:  # each name is its tab, in the row's order, built when first shown
        window.show_tab(name)
        assert tabs.currentIndex() == GUI_TABS.index(name)
        assert name in ("results", "failures") or window.pages.is_built(name)
    shown: list[str] = []
    grab = MainWindow.grab
    monkeypatch.setattr(MainWindow, "grab",
                        lambda self, *a: shown.append(self.bottom_tabs.tabText(self.bottom_tabs.currentIndex()))
                        or grab(self, *a))
    path = tmp_path / "toy.json"
    save_session(_session(), path)
    assert main(str(path), None, str(tmp_path / "sizes.png"), True, tab="sizes") == 0
    assert shown == ["Sizes"] and (tmp_path / "sizes.png").stat().st_size > 10_000


def test_the_slot_filters_example_is_in_the_sessions_own_slots(window, qtbot):
    """"e.g. block_size=256, unroll=4" over a kernel without unroll: typed as shown, it was refused."""
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({"kernel": "transpose", "backend": "sim", "strategy": "random", "budget": 2,
                          "options": {"compile": "estimate"}})
    hint = window.results.slot_edit.placeholderText()
    slots = list(window.model.session.space.slots)[:2]
    terms = hint.removeprefix("filter by slot value, e.g. ").split(", ")
    assert [t.split("=")[0] for t in terms] == [s.name for s in slots] and "unroll" not in hint, hint
    assert all(t.split("=")[1] in [str(v) for v in s.values] for t, s in zip(terms, slots)), hint
    window.results.slot_edit.setText(hint.removeprefix("filter by slot value, e.g. "))
    window.results.slot_edit.editingFinished.emit()
    assert window.results.filter_error.text() == ""  # the example filters: it is no refusal
    assert window.results.proxy.rowCount() >= 1


def test_a_picture_of_the_importance_tab_waits_for_its_figures(qtbot, tmp_path, monkeypatch, cli):
    """``gui S --tab importance --screenshot`` pictured "computing over 40 trials..." over empty axes:
    the figures come from a background thread."""
    from workbench.gui.app import main
    from workbench.gui.main_window import MainWindow

    seen: list[tuple[bool, dict]] = []
    grab = MainWindow.grab
    monkeypatch.setattr(MainWindow, "grab", lambda self, *a: seen.append(
        (self.importance.computing, self.importance.shares)) or grab(self, *a))
    path = tmp_path / "va.json"  # enough trials for importance figures
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "30",
               "--executor", "inline", "--quiet", "--out", path).returncode == 0
    assert main(str(path), None, str(tmp_path / "importance.png"), True, tab="importance") == 0
    assert len(seen) == 1 and seen[0][0] is False and seen[0][1], seen


def _persons_run_then_close(ready: Callable[[], bool], seen: list[str]) -> None:
    """Drive the person's window that ``main`` keeps open: once ``ready()``, a run of the person's
    on the Results tab; once it ended, note the tab in front (in ``seen``) and close the window,
    which ends ``main``."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from workbench.gui.main_window import MainWindow

    window = next((w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow) and w.isVisible()), None)
    if window is None or not ready() or window.running:
        QTimer.singleShot(50, lambda: _persons_run_then_close(ready, seen))
        return
    if not seen:
        seen.append("started")
        window.show_tab("results")
        window.start_run({"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 2,
                          "options": {"compile": "estimate"}})
        QTimer.singleShot(50, lambda: _persons_run_then_close(ready, seen))
        return
    seen.append(window.bottom_tabs.tabText(window.bottom_tabs.currentIndex()))
    window.model.dirty = False
    window.interactive = False
    window.close()
    QApplication.instance().exit(0)


def test_a_kept_windows_later_runs_are_the_persons_not_the_commands(qtbot, tmp_path, monkeypatch):
    """``gui --run K --screenshot X.png`` keeps the window open: each later run's end took the
    picture again, over the first, and brought the --tab back to the front."""
    from PySide6.QtCore import QTimer

    from workbench.gui.app import main
    from workbench.gui.main_window import MainWindow

    pictures: list[int] = []
    grab = MainWindow.grab
    monkeypatch.setattr(MainWindow, "grab", lambda self, *a: pictures.append(1) or grab(self, *a))
    monkeypatch.setenv("KERNEL_WORKBENCH_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setattr(MainWindow, "offer_recovery", lambda self: None)
    later: list[str] = []
    QTimer.singleShot(50, lambda: _persons_run_then_close(lambda: bool(pictures), later))
    main(None, {"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 2,
                "options": {"compile": "estimate"}}, str(tmp_path / "first.png"), False, tab="failures")
    qtbot.wait(500)  # what the person's window left scheduled runs now, not in the next test
    assert pictures == [1] and later == ["started", "Results"], (pictures, later)


def test_a_run_refused_at_its_start_leaves_the_persons_window_its_own(qtbot, tmp_path, monkeypatch):
    """``gui NEW.json --run no_such_kernel --tab failures`` (no picture): the refused run left the
    command's ending connected, so the person's first run of the window was saved to NEW.json and
    pulled the Failures tab back to the front."""
    from PySide6.QtCore import QTimer

    from workbench.gui.app import main
    from workbench.gui.main_window import MainWindow

    monkeypatch.setenv("KERNEL_WORKBENCH_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setattr(MainWindow, "offer_recovery", lambda self: None)
    monkeypatch.setattr(MainWindow, "_error", lambda self, *a, **k: None)  # (the refusal's dialog: nobody answers)
    new = tmp_path / "new.json"
    seen: list[str] = []
    QTimer.singleShot(300, lambda: _persons_run_then_close(lambda: True, seen))
    main(str(new), {"kernel": "no_such_kernel", "backend": "sim"}, None, False, tab="failures")
    qtbot.wait(500)  # what the person's window left scheduled runs now, not in the next test
    assert seen == ["started", "Results"] and not new.exists(), seen


def test_gui_session_run_of_the_python_benchmark_named_continues_it(tmp_path):
    """`gui SESSION --run FILE.py --backend python --quit-when-done` was refused ("needs the
    person's yes in an interactive window") though the person named the file, as
    `tune FILE --resume SESSION` names it, which works."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "KERNEL_WORKBENCH_CONFIG_DIR": str(tmp_path / "config"),
           "KERNEL_WORKBENCH_DATA_DIR": str(tmp_path / "data")}
    env.pop("KERNEL_WORKBENCH_AUTOSAVE_DIR", None)
    session = tmp_path / "b.json"
    first = subprocess.run([sys.executable, str(ROOT / "main.py"), "tune", BENCH, "--budget", "2", "--quiet",
                            "--out", str(session)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    done = subprocess.run([sys.executable, str(ROOT / "main.py"), "gui", str(session), "--run", BENCH, "--backend",
                           "python", "--budget", "4", "--quit-when-done"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert len(load_session(session).trials) == 2 + 4  # continued, into the session named


def _session_of_a_moved_benchmark(tmp_path: Path) -> tuple[str, Path, Path]:
    """A python benchmark's session (2 trials) whose file then moved from ``a/`` to ``b/``: its
    code, the session file and the benchmark's new place."""
    from workbench.cli import main as cli_main

    code = 'SPACE = {"a": [1, 2, 3, 4, 5, 6]}\n\ndef measure(config):\n    return {"latency_ms": 1.0 + config["a"]}\n'
    there, here = tmp_path / "a" / "bench.py", tmp_path / "b" / "bench.py"
    there.parent.mkdir()
    here.parent.mkdir()
    there.write_text(code)
    session = tmp_path / "s.json"
    assert cli_main(["tune", str(there), "--budget", "2", "--quiet", "--out", str(session)]) == 0
    there.rename(here)
    return code, session, here


def test_gui_session_run_of_its_python_benchmark_at_a_new_place_continues_it(tmp_path, monkeypatch, capsys):
    """`gui SESSION --run NEW_PLACE/bench.py --backend python` of a session whose benchmark moved
    was refused naming the old path ("needs the person's yes"), where `tune NEW_PLACE/bench.py
    --resume SESSION` continues it; a file of other code under that name is still refused."""
    from workbench.gui.app import main

    monkeypatch.setenv("KERNEL_WORKBENCH_AUTOSAVE_DIR", str(tmp_path / "autosave"))
    code, session, here = _session_of_a_moved_benchmark(tmp_path)
    run = {"kernel": str(here), "backend": "python", "strategy": "random", "budget": 4}
    assert main(str(session), dict(run), None, True) == 0, capsys.readouterr().err
    continued = load_session(session)
    assert len(continued.trials) > 2 and continued.backend["options"]["path"] == str(here.resolve())
    here.write_text(code.replace("1.0 +", "2.0 +"))  # other code under the same name
    assert main(str(session), dict(run), None, True) == 2
    assert "the kernel's code changed since the session was measured" in capsys.readouterr().err


def test_the_toolbar_does_not_call_a_moved_benchmark_of_the_session_a_new_session(window, tmp_path, qtbot):
    """The session's python benchmark named at its new place read "new session at Start: kernel
    .../b/bench.py" in orange, while Start continued the session."""
    code, session, here = _session_of_a_moved_benchmark(tmp_path)
    window.open_session(str(session))
    window.toolbar.kernel.setEditText(str(here))
    window._update_next_start()
    assert window.toolbar.next_start == "", window.toolbar.next_start
    here.write_text(code.replace("1.0 +", "2.0 +"))  # other code there: that is another session
    window._update_next_start()
    assert window.toolbar.next_start.startswith("new session at Start: kernel ")


def test_a_session_measured_earlier_is_not_labelled_as_measured_now(window, qtbot, tmp_path):
    """A shipped recording of a GPU run, opened on a laptop without a GPU, read "measured live":
    a class took it for a measurement made in front of it. Opened from its file it says it was
    measured earlier; a run of this window into a session measures it now."""
    recording = tmp_path / "recorded.json"
    recording.write_bytes((Path(__file__).parents[2] / "resources" / "sessions" / "vector_add_NVIDIA_H200.json").read_bytes())
    window.open_session(recording)
    assert window.model.session.backend["kind"] == "cuda"
    assert window.timing_badge.text().strip() == "MEASURED: timings from an earlier run, not now"
    bench = tmp_path / "bench.py"
    bench.write_text('SPACE = {"i": [1, 2, 3, 4, 5, 6]}\n\n\ndef measure(config):\n    return {"latency_ms": float(config["i"])}\n')
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({"kernel": str(bench), "backend": "python", "strategy": "grid", "budget": 3})
    assert window.timing_badge.text().strip() == "measured live"
    saved = tmp_path / "bench_session.json"
    assert window.save_to(saved)
    window.open_session(saved)  # the same timings, opened again from the file: measured earlier
    assert window.timing_badge.text().strip() == "MEASURED: timings from an earlier run, not now"
    with qtbot.waitSignal(window.run_done, timeout=60_000):  # continued here: measured now
        window.start_run({"kernel": str(bench), "backend": "python", "strategy": "grid", "budget": 3})
    assert len(window.model.trials) == 6 and window.path == saved
    assert window.timing_badge.text().strip() == "measured live"


def test_the_score_legend_names_no_best_so_far_line_while_it_draws_none(window):
    """A session whose only feasible trial is its last had "best so far" in the legend over
    nothing: its staircase is two points at one place."""
    from workbench.core.domain.objective import Constraints

    space = SearchSpace([Slot("x", tuple(range(6)))])
    trials = [Trial(i, space.config({"x": i}), Measurement(Status.OK, {"latency_ms": 2.0 + i})) for i in range(5)]
    trials.append(Trial(5, space.config({"x": 5}), Measurement(Status.OK, {"latency_ms": 0.5})))
    window.model.set_session(Session(kernel="toy", space=space, trials=trials, device={"name": "toy"},
                                     constraints=Constraints(max_latency_ms=1.0)))
    window.score_chart.refresh()
    assert window.model.ranking.n_feasible == 1
    legend = window.score_chart.legend.text()
    assert "best&nbsp;so&nbsp;far" not in legend and "feasible" in legend
    window.model.set_session(Session(kernel="toy", space=space, trials=trials[::-1], device={"name": "toy"},
                                     constraints=Constraints(max_latency_ms=1.0)))
    window.score_chart.refresh()  # the same feasible trial first: its line runs to the last trial
    assert "best&nbsp;so&nbsp;far" in window.score_chart.legend.text()


def test_a_sessions_short_time_limit_is_kept_by_the_time_limit_box(window):
    """At two decimals of a minute, a session's 0.2 s limit opened as "no time limit" (a run of a
    million evaluations then had none) and 10 s ran as 10.2 s."""
    bar = window.toolbar
    for seconds in (0.2, 0.29, 10.0, 20.0, 3600.0):
        bar.apply({"time_limit_s": seconds})
        limit = bar.request()["time_limit_s"]
        assert limit is not None and abs(limit - seconds) <= 0.01, (seconds, limit)
    bar.apply({"time_limit_s": None})
    assert bar.request()["time_limit_s"] is None and bar.minutes.text() == "no time limit"
    bar.apply({"time_limit_s": 10.0})
    assert bar.request()["time_limit_s"] == 10.0  # (not the box's 0.1667 min, 10.002 s, written back)
    bar.apply({"time_limit_s": 90_000.0})
    assert bar.minutes.text() == "1500 min"  # no thousands separator, as the other boxes
    bar.apply({"time_limit_s": 604_800.0})  # a week, the command line's most: it opened as 10,000 min
    assert bar.request()["time_limit_s"] == 604_800.0


def test_a_sessions_pace_of_a_few_milliseconds_is_kept_by_the_pace_box(window):
    """At two decimals a recorded pace of 0.004 s opened as 0.00 s/eval, and the next Start ran unpaced."""
    bar = window.toolbar
    bar.apply({"backend": "sim", "delay_s": 0.004})
    assert bar.delay.value() == 0.004 and bar.delay.text() == "0.004 s/eval"
    assert bar.request()["delay_s"] == 0.004
    bar.apply({"backend": "sim", "delay_s": 0.5})
    assert bar.delay.text() == "0.5 s/eval"


def test_a_run_ended_while_compiles_were_pending_says_it_is_done_first(window):
    """After a Stop during the compile wait the label still began "4 compiling in background
    (estimates shown)": nothing compiled any more, and a 1440 px window never showed "done"."""
    bar = window.toolbar
    bar.show_compiles(4, 1)
    bar.show_state("done (stopped), 6 evals")
    assert bar.progress_label.text().startswith("4 compiling in background")
    bar.show_compiles_ended(4)
    assert bar.progress_label.text() == "done (stopped), 6 evals; 4 estimates not refined"
    bar.show_compiles(0, 6)
    bar.show_compiles_ended(0)  # (compiles done: said as they were)
    assert bar.progress_label.text() == "done (stopped), 6 evals; compiles done: 6 refined"


def test_a_budget_of_one_reads_one_eval(window):
    bar = window.toolbar
    bar.budget.setValue(1)
    assert bar.budget.text() == "1 eval"
    bar.budget.setValue(2)
    assert bar.budget.text() == "2 evals"


def test_another_kernel_picked_leaves_the_last_sessions_problem_behind(window, qtbot) -> None:
    """A vector_add session's problem (n, alpha) stayed in the field when reduce_sum was picked:
    Start was refused for vector_add's alpha, or ran reduce_sum at vector_add's n without a word."""
    run = {"kernel": "vector_add", "backend": "sim", "budget": 2, "problem": {"n": 65536, "alpha": 3.0},
           "options": {"compile": "estimate"}}
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run(run)
    toolbar = window.toolbar
    assert toolbar.problem.text() == "n=65536, alpha=3.0"
    toolbar.kernel.setCurrentIndex(toolbar.kernel.findText("reduce_sum"))  # as picked from the list
    assert toolbar.problem.text() == "" and "n=" in toolbar.problem.placeholderText()
    toolbar.kernel.setCurrentIndex(toolbar.kernel.findText("vector_add"))
    toolbar.problem.setText("n=4096")  # typed by the person: theirs to keep
    toolbar.kernel.setCurrentIndex(toolbar.kernel.findText("reduce_sum"))
    assert toolbar.problem.text() == "n=4096"


def test_a_scripted_run_of_another_kernel_is_not_refused_for_the_last_kernels_narrowed_space(window, qtbot) -> None:
    """start_run set an editable kernel box's text only: the Search space tab kept vector_add's
    slots, narrowed by hand, and gelu's run was refused ("the edited slots ... are not gelu's")."""
    base = {"backend": "sim", "budget": 2, "problem": {}, "options": {"compile": "estimate"}}
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({**base, "kernel": "vector_add"})
    window.slots_panel.set_value_enabled("block_size", 32, False)
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({**base, "kernel": "gelu"})
    assert window.model.session.kernel == "gelu"


def test_a_problem_typed_and_started_stays_when_another_kernel_is_picked(window, qtbot) -> None:
    """Start applied the fields' own text back to them, which then counted as filled in by a
    session: typed, started (or refused) and then another kernel picked, the text was gone."""
    toolbar = window.toolbar
    toolbar.kernel.setCurrentIndex(toolbar.kernel.findText("reduce_sum"))
    toolbar.problem.setText("n = 4096")  # (Start writes it back as the run reads it, n=4096: still the person's)
    toolbar.budget.setValue(2)
    toolbar.resources.setCurrentIndex(toolbar.resources.findData("estimate"))
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window._on_start()
    toolbar.kernel.setCurrentIndex(toolbar.kernel.findText("vector_add"))  # which has an n too
    assert toolbar.problem.text() == "n=4096"


def test_two_sessions_of_one_problem_opened_leave_it_for_the_next_kernel(window, qtbot, tmp_path) -> None:
    """Two sessions at n=4096 opened one after the other: the second open emptied and refilled the
    field with the same text, which then counted as typed, and layernorm's Start was refused for n."""
    from workbench.core.domain.session import save_session

    for kernel in ("gelu", "reduce_sum"):
        with qtbot.waitSignal(window.run_done, timeout=60_000):
            window.start_run({"kernel": kernel, "backend": "sim", "budget": 2, "problem": {"n": 4096},
                              "options": {"compile": "estimate"}})
        save_session(window.model.session, tmp_path / f"{kernel}.json")
    window.open_session(str(tmp_path / "gelu.json"))
    window.open_session(str(tmp_path / "reduce_sum.json"))
    toolbar = window.toolbar
    assert toolbar.problem.text() == "n=4096"
    toolbar.kernel.setCurrentIndex(toolbar.kernel.findText("layernorm"))
    assert toolbar.problem.text() == ""


def test_an_open_that_fails_puts_back_the_problem_as_typed(window, qtbot, tmp_path, monkeypatch) -> None:
    """An Open whose showing failed put the controls back as session settings: the problem the
    person had typed counted as filled in, and went when another kernel was picked."""
    from workbench.core.domain.session import save_session

    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({"kernel": "gelu", "backend": "sim", "budget": 2, "options": {"compile": "estimate"}})
    save_session(window.model.session, tmp_path / "gelu.json")
    toolbar = window.toolbar
    toolbar.kernel.setCurrentIndex(toolbar.kernel.findText("reduce_sum"))
    toolbar.problem.setText("n=777")

    def broken(*_a):
        raise RuntimeError("a view that cannot show it")

    monkeypatch.setattr(window, "_restore_run_controls", broken)
    with pytest.raises(WorkbenchError, match="the session open before is kept"):
        window.open_session(str(tmp_path / "gelu.json"))
    assert toolbar.problem.text() == "n=777"
    toolbar.kernel.setCurrentIndex(toolbar.kernel.findText("layernorm"))
    assert toolbar.problem.text() == "n=777"
