"""The window when there is nothing to recommend, when a file cannot be shown, and when failures
spread evenly: it says why in one line, keeps following the objective, and never half-switches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtWidgets import QFileDialog, QMessageBox

from workbench.core.domain.measurement import Measurement, Status, Trial
from workbench.core.domain.objective import Weights
from workbench.core.domain.session import Session
from workbench.core.domain.space import SearchSpace, Slot
from workbench.core.errors import WorkbenchError
from workbench.gui.model import SessionModel

SLOW = str(Path(__file__).parents[1] / "fixtures" / "slow_bench.py")
GOLDEN = Path(__file__).parents[1] / "fixtures" / "session_golden.json"


def _golden(tmp_path: Path, name: str, **changes: object) -> Path:
    doc = json.loads(GOLDEN.read_text())
    doc.update(changes)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))
    return path


def test_weighing_a_metric_the_benchmark_never_reports_during_a_run(window, qtbot, monkeypatch):
    """Quality alone on a benchmark that reports latency only: nothing has a score. The status line
    and the card say so, and the running search still follows the new weights."""
    monkeypatch.setenv("WORKBENCH_SLOW_S", "0.05")
    window.start_run({"kernel": SLOW, "backend": "python", "strategy": "agents", "budget": 400})
    engine = window.engine_thread.engine.engine
    qtbot.waitUntil(lambda: window.model.n >= 3, timeout=30_000)
    window.model.set_weights({"latency_ms": 0.0, "quality": 5.0})  # what the two sliders do
    qtbot.waitUntil(lambda: engine.objective is not None and engine.objective.weights.get("quality") == 5.0
                    and engine.objective.weights.get("latency_ms") == 0.0, timeout=10_000)
    qtbot.wait(300)  # a few refresh ticks: none of them may raise (pytest-qt fails the test if one does)
    assert "report none of the weighted metrics (quality)" in window.summary_label.text()
    assert "none of the weighted metrics" in window.best_card.text() and "None" not in window.best_card.text()
    window.stop_run()
    window.wait_for_run(30)


def test_objective_changed_goes_out_even_when_a_view_fails():
    """A view that raises on ranking_changed must not keep the run from being re-targeted."""
    space = SearchSpace([Slot("x", (1, 2), "launch")])
    session = Session(kernel="k", space=space,
                      trials=[Trial(i, c, Measurement(Status.OK, {"latency_ms": 1.0 + i})) for i, c in enumerate(space)])
    model = SessionModel(session)
    heard: list[str] = []

    def broken() -> None:
        raise RuntimeError("a view that cannot draw this")

    model.ranking_changed.connect(broken)
    model.ranking_changed.connect(lambda: heard.append("ranking"))
    model.objective_changed.connect(lambda: heard.append("objective"))
    with pytest.raises(RuntimeError, match="cannot draw"):  # the bug still surfaces
        model.set_weights({"latency_ms": 1.0, "memory_mb": 1.0})
    assert heard == ["ranking", "objective"]


@pytest.mark.parametrize("name, changes, said", [
    ("merit", {"weights": {"merit": 1.0}}, "1 reports none of the weighted metrics (merit)"),
    ("nothing_scored", {"weights": {"latency_ms": 0.0, "quality": 1.0}}, "none of the weighted metrics (quality)"),
])
def test_a_session_whose_weights_score_nothing_opens_and_says_why(window, tmp_path, name, changes, said):
    path = _golden(tmp_path, name, **changes)
    window.open_session(path)
    assert window.path == path and window.model.session is not None
    assert said in window.summary_label.text()
    from workbench.gui.results_table import feasibility_text

    assert feasibility_text(window.model, 0) == "no score: reports no weighted metric"


def test_a_session_that_fails_to_show_leaves_the_window_as_it_was(window, qtbot, tmp_path, monkeypatch):
    """All or nothing: a view that raises while the new file is shown puts back the session, file,
    selection and title that were there, and the user gets one line naming the file."""
    first = _golden(tmp_path, "first")
    window.open_session(first)
    window.model.select(0)
    before = (window.model.session, window.model.n, window.windowTitle(), window.toolbar.request())

    def broken() -> None:
        if window.path is not None and window.path.name == "second.json":
            raise ValueError("cannot show this\nsecond line of detail")

    window.model.session_changed.connect(broken)
    second = _golden(tmp_path, "second", weights={"latency_ms": 2.0})
    with pytest.raises(WorkbenchError) as caught:
        window.open_session(second)
    message = str(caught.value)
    assert "\n" not in message and "second.json: cannot be shown (ValueError: cannot show this)" in message
    assert window.path == first and window.model.session is before[0] and window.model.n == before[1]
    assert window.model.selected == 0 and window.windowTitle() == before[2]
    assert window.toolbar.request() == before[3]
    assert str(second.resolve()) not in window.recent_files()
    # through the menu: one warning, the window unchanged
    shown: list[tuple[str, str]] = []
    monkeypatch.setattr(QMessageBox, "warning", lambda _parent, title, text, *a: shown.append((title, text)))
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(second), ""))
    window.interactive = True
    window.model.dirty = False
    window._on_open()
    qtbot.waitUntil(lambda: window.opening is None, timeout=30_000)  # read off the GUI thread
    assert len(shown) == 1 and "cannot be shown" in shown[0][1]
    assert window.path == first and window.model.session is before[0]


def test_an_unexpected_error_reading_a_file_is_one_line_and_switches_nothing(window, tmp_path, monkeypatch):
    first = _golden(tmp_path, "first")
    window.open_session(first)
    session = window.model.session

    def buggy(path: object) -> Session:
        raise TypeError("a reader bug")

    monkeypatch.setattr("workbench.core.domain.session.load_session", buggy)
    assert not window._guarded(lambda: window.open_session(tmp_path / "other.json"), "Cannot open")
    assert "other.json: cannot be read (TypeError: a reader bug)" in window.statusBar().currentMessage()
    assert window.path == first and window.model.session is session


def _answering(window, monkeypatch, answers: list) -> list[str]:
    """A person's window whose questions get ``answers`` in turn (and whose warnings are read);
    returns the list the questions asked are added to."""
    asked: list[str] = []
    replies = iter(answers)
    monkeypatch.setattr(QMessageBox, "question", lambda _w, _t, text, *a, **k: asked.append(text) or next(replies))
    monkeypatch.setattr(QMessageBox, "warning", lambda *a, **k: QMessageBox.StandardButton.Ok)
    window.interactive = True
    return asked


def test_failed_recovery_leaves_the_window_alone_and_sets_the_autosave_aside(window, tmp_path, monkeypatch, qtbot):
    """An autosave that does not read is kept, moved into the damaged folder, so that it no longer
    stands before the older autosaves: only the newest is offered, and a damaged newest one kept
    every older, readable one from being offered at every start."""
    import os
    import shutil

    first = _golden(tmp_path, "first")
    folder = tmp_path / "autosave"  # the tests' autosave folder (the gui conftest)
    folder.mkdir(parents=True, exist_ok=True)
    older = folder / "older.json"
    shutil.copy(first, older)
    os.utime(older, (1_000_000, 1_000_000))
    broken = folder / "broken.json"
    broken.write_text("{not json")
    window.open_session(first)
    asked = _answering(window, monkeypatch, [QMessageBox.StandardButton.Yes, QMessageBox.StandardButton.No])
    window.offer_recovery()
    qtbot.waitUntil(lambda: window.opening is None and len(asked) == 2, timeout=30_000)  # read on a thread
    assert "(broken.json; 1 older one after it)" in asked[0] and "(older.json)" in asked[1]
    assert window.path == first and window.autosave_path is None and not window.model.dirty
    assert not broken.exists() and (folder / "damaged" / "broken.json").read_text() == "{not json"
    assert window.recoverable() == [older]


def test_a_damaged_journal_line_says_how_to_open_the_file_as_last_saved(tmp_path):
    from workbench.core.domain.session import Journal, journal_path, load_session
    from workbench.core.errors import SessionFormatError

    first = _golden(tmp_path, "first")
    Journal(journal_path(first)).start(load_session(first))
    lines = journal_path(first).read_text().splitlines(keepends=True)
    assert len(lines) == 3  # the header and two trials
    journal_path(first).write_text("".join([lines[0], "{not json\n", *lines[2:]]))  # a damaged line amid good ones
    with pytest.raises(SessionFormatError, match=r"line 2: not valid JSON; move the journal away \(to keep it\) "
                                                 r"to open first.json as last saved"):
        load_session(first)
    # a journal of another session beside it: the same case (the file opens without it), which
    # recovering an autosave sets aside alone, as a damaged one
    import dataclasses

    from workbench.core.errors import DamagedJournal

    other = dataclasses.replace(load_session(_golden(tmp_path, "second")), id="another0001")
    Journal(journal_path(first)).start(other)
    with pytest.raises(DamagedJournal, match="journal of another session"):
        load_session(first)


def test_failures_spread_evenly_still_show_their_reasons(window):
    """Twelve failures with no slot value in common: no concentration to name, so the failures'
    own reasons are shown above the table (as for a handful of failures)."""
    space = SearchSpace([Slot("a", tuple(range(1, 7)), "launch"), Slot("b", tuple(range(1, 7)), "launch")])
    trials = []
    for i, config in enumerate(space):
        if (config["a"] + config["b"]) % 3 == 0:
            m = Measurement.failure(Status.RUNTIME_ERROR, f"out of memory asking {config['a'] * 100} MB")
        else:
            m = Measurement(Status.OK, {"latency_ms": 1.0 + i})
        trials.append(Trial(i, config, m))
    window.model.set_session(Session(kernel="toy", space=space, trials=trials, device={"name": "toy"}))
    window.failures.refresh()
    text = window.failures.concentration.text()
    assert "have a=" not in text and "have b=" not in text  # spread evenly: nothing to blame
    assert "runtime_error (12): out of memory asking 100 MB (x2)" in text
    assert not window.failures.notes.isHidden()
    # six distinct reasons: three named, the other three counted rather than left out
    assert "; and 3 other reasons (6 trials: filter the table by status)" in text


def test_weights_from_a_file_with_no_reported_metric_rank_nothing_and_say_so():
    """The model itself (no window): nothing to score is a reason, not an exception."""
    space = SearchSpace([Slot("x", (1, 2), "launch")])
    session = Session(kernel="k", space=space, weights=Weights({"quality": 1.0}),
                      trials=[Trial(i, c, Measurement(Status.OK, {"latency_ms": 1.0})) for i, c in enumerate(space)])
    model = SessionModel(session)
    assert model.ranking.best is None
    assert model.ranking.summary().endswith("2 report none of the weighted metrics (quality)")


def test_candidates_stopped_under_the_latency_limit_are_not_shown_as_failures(window, cli, tmp_path):
    """Aborted candidates were drawn as "failed (at 0)" crosses and the card sent the person to the
    failure log; they are over the limit in force (infeasible, drawn in grey) and the card says so."""
    out = tmp_path / "s.json"
    assert cli("tune", "sgemm", "--backend", "sim", "--resources", "estimated", "--budget", "6",
               "--max-latency-ms", "0.01", "--out", str(out), "--quiet").returncode == 0
    window.open_session(out)
    chart = window.score_chart
    chart.refresh()
    assert len(chart.failed) == 0 and len(chart.infeasible) == 6
    # six grey dots at 0 said nothing of why: the score chart says it as the other charts do
    said = chart.no_data.textItem.toPlainText()
    assert chart.no_data.isVisible() and "6 stopped early as hopeless under a latency limit" in said
    assert "Re-measure aborted button" in said and "tune --remeasure-aborted" not in said
    text = window.best_card.text()
    assert "stopped early as hopeless under a latency limit" in text and "failure log" not in text
    assert text.startswith("<b>No successful trial</b> among 6: ")  # said once, not "... : no successful trials"
    assert "Re-measure aborted button" in text and "tune --remeasure-aborted" not in text  # the window's way
    # the charts say why they are empty, and the latency slider reaches the trials' lower bounds:
    # dragging it right is how they become worth re-measuring
    tradeoff = window.tradeoff_chart
    tradeoff.refresh()
    said = tradeoff.no_data.textItem.toPlainText()
    assert tradeoff.no_data.isVisible() and "6 stopped early under the latency limit" in said
    # each is drawn at the latency its timing was seen to exceed, against the limit line: where the
    # hopeless configs lie (the chart was empty, its axis "memory" with no figure chosen)
    bounds = window.model.metric("latency_bound_ms")
    assert sorted(tradeoff.aborted.data.tolist()) == list(range(6)) and tradeoff.y_combo.currentData()
    assert sorted(10 ** tradeoff.aborted.xs) == pytest.approx(sorted(bounds))  # (log latency axis)
    assert "aborted&nbsp;above" in tradeoff.legend.text()
    # what they measured (a lower bound on their latency, their compile's figures) is drawn, grey:
    # the explore chart offered "aborted above" as an axis and drew nothing on it
    explore = window.metric_chart
    explore.set_axes("slot:block_m", "latency_bound_ms")
    explore.refresh()
    assert not explore.no_data.isVisible() and len(explore.infeasible.data) == 6 and len(explore.feasible.data) == 0
    assert explore.y_log.isEnabled()  # (the bounds are all positive: a log axis is theirs to choose)
    from workbench.gui.compare_view import CompareView

    compare = CompareView(window.model)  # (its curve's legend read "(best no successful trial)")
    compare._draw_curves()
    # (under the session's latency limit: what its curve falls to is a feasible trial, and none is)
    assert "(no feasible trial)" in compare.curve_legend.text() and "best no" not in compare.curve_legend.text()
    compare.deleteLater()
    # the failure log lists failures, which they are not: its empty list says where they are
    window.failures.refresh()
    said = window.failures.log.placeholderText()
    assert said == "no failed trial among 6 (6 stopped early above the latency limit: the status filter's 'aborted' " \
        "lists them)", said
    lo, hi = window.model.data_range("latency_ms")
    assert hi == max(t.metric("latency_bound_ms") for t in window.model.trials)
    # a replay of it cannot re-measure them: the window does not send the person to its button
    replayed = tmp_path / "replayed.json"
    assert cli("tune", "--replay", str(out), "--budget", "6", "--max-latency-ms", "0.01", "--out", str(replayed),
               "--quiet").returncode == 0
    window.open_session(replayed)
    window.score_chart.refresh()
    for said in (window.best_card.text(), window.score_chart.no_data.textItem.toPlainText()):
        assert "re-measure them in the session that recorded them" in said and "Re-measure aborted" not in said


def test_the_failure_log_sits_beside_the_table_in_a_wide_short_pane_and_under_it_in_a_tall_one(window, qtbot):
    """Stacked in the short bottom pane of a 1440 x 900 window in presentation mode, the counts,
    the concentration lines and the log left the table one row of seventeen failures."""
    from PySide6.QtCore import Qt

    from workbench.gui.failure_log import FailureLog

    failures = FailureLog(window.model, window.results.table_model)
    qtbot.addWidget(failures)
    failures.resize(700, 300)
    failures.show()
    qtbot.waitExposed(failures)
    assert failures.splitter.orientation() == Qt.Orientation.Horizontal
    assert failures.view.height() > failures.height() // 2  # the table has the splitter's height
    failures.resize(500, 800)
    qtbot.waitUntil(lambda: failures.splitter.orientation() == Qt.Orientation.Vertical, timeout=2_000)
    assert failures.view.width() > 400 and failures.log.width() > 400  # stacked: each the pane's width


def test_recovery_sets_aside_a_damaged_journal_alone_and_never_a_file_it_could_not_read_now(window, tmp_path,
                                                                                           monkeypatch, qtbot):
    """A damaged journal beside a file that reads: only the journal goes (the file is offered
    again, as last saved). A file too large to read now, or one a newer version wrote, is not
    damaged: it stays where it is, to be offered again."""
    import shutil

    import workbench.core.domain.session as session_module
    from workbench.core.domain.session import Journal, journal_path, load_session

    first = _golden(tmp_path, "first")
    folder = tmp_path / "autosave"
    folder.mkdir(parents=True, exist_ok=True)
    saved = folder / "saved.json"
    shutil.copy(first, saved)
    Journal(journal_path(saved)).start(load_session(saved))
    lines = journal_path(saved).read_text().splitlines(keepends=True)
    journal_path(saved).write_text("".join([lines[0], "{not json\n", *lines[2:]]))
    asked = _answering(window, monkeypatch, [QMessageBox.StandardButton.Yes, QMessageBox.StandardButton.No])
    window.offer_recovery()
    qtbot.waitUntil(lambda: window.opening is None and len(asked) == 2, timeout=30_000)
    assert "(saved.json)" in asked[1]  # the file again, as last saved
    assert saved.exists() and not journal_path(saved).exists()
    assert (folder / "damaged" / "saved.json.journal").exists() and not (folder / "damaged" / "saved.json").exists()
    assert "its journal was moved to" in window.statusBar().currentMessage()
    monkeypatch.setattr(session_module, "MAX_FILE_BYTES", 100)  # too large to read now: not damaged
    again = _answering(window, monkeypatch, [QMessageBox.StandardButton.Yes])
    window.offer_recovery()
    qtbot.waitUntil(lambda: window.opening is None and len(again) == 1, timeout=30_000)
    qtbot.wait(50)
    assert saved.exists() and window.recoverable() == [saved] and len(again) == 1


def test_an_autosave_that_cannot_be_read_now_is_kept_and_the_older_one_offered_after_it(window, tmp_path,
                                                                                        monkeypatch, qtbot):
    """A newer version's autosave (or one too large to read now) is not damaged, so it stays where
    it is; it was offered first at every start and no older autosave was ever offered."""
    import os
    import shutil

    folder = tmp_path / "autosave"
    folder.mkdir(parents=True, exist_ok=True)
    older = folder / "older.json"
    shutil.copy(_golden(tmp_path, "first"), older)
    os.utime(older, (1_000_000, 1_000_000))
    newer = folder / "newer.json"
    shutil.copy(_golden(tmp_path, "second", version=999), newer)
    asked = _answering(window, monkeypatch, [QMessageBox.StandardButton.Yes, QMessageBox.StandardButton.No])
    window.offer_recovery()
    qtbot.waitUntil(lambda: window.opening is None and len(asked) == 2, timeout=30_000)
    assert "(newer.json; 1 older one after it)" in asked[0] and "(older.json)" in asked[1]
    assert newer.exists() and older.exists() and not (folder / "damaged").exists()
    assert sorted(window.recoverable()) == [newer, older]  # both again at the next start


@pytest.mark.parametrize("answer", ["no", "discard"])
def test_a_recovery_declined_says_where_the_trials_are_and_discard_deletes_them(window, tmp_path, monkeypatch, answer):
    """No changed nothing and said nothing, and the same question came at every start with no way
    to drop the trials."""
    import shutil

    first = _golden(tmp_path, "first")
    folder = tmp_path / "autosave"
    folder.mkdir(parents=True, exist_ok=True)
    kept = folder / "kept.json"
    shutil.copy(first, kept)
    reply = QMessageBox.StandardButton.No if answer == "no" else QMessageBox.StandardButton.Discard
    asked = _answering(window, monkeypatch, [reply])
    window.offer_recovery()
    assert "No keeps them for the next start; Discard deletes them." in asked[0]
    if answer == "no":
        assert kept.exists() and window.recoverable() == [kept]
        assert window.statusBar().currentMessage() == f"kept {kept} for the next start (Discard there deletes it)"
    else:
        assert not kept.exists() and window.recoverable() == []
        assert window.statusBar().currentMessage() == "discarded the unsaved trials of kept.json"


def test_cancelling_starts_question_says_so_without_a_second_warning(window, tmp_path, monkeypatch):
    """Cancel at "Save the current session first?" was followed by a modal "Cannot start the run"."""
    first = _golden(tmp_path, "first")
    window.open_session(first)
    window.model.dirty = True
    warned: list[str] = []
    asked = _answering(window, monkeypatch, [QMessageBox.StandardButton.Cancel])
    monkeypatch.setattr(QMessageBox, "warning", lambda _w, title, *a, **k: warned.append(title))
    window.toolbar.kernel.setCurrentText("sgemm")  # another kernel: a new session, after the question
    try:
        window._on_start()
    finally:
        said, running = window.statusBar().currentMessage(), window.running
        window.interactive, window.model.dirty = False, False  # (closing at teardown asks nothing more)
    assert asked == ["Save the current session first?"] and warned == [] and not running
    assert said == "run not started: the current session has unsaved trials"


def test_the_failure_messages_header_and_a_slot_stay_in_sight_in_a_narrow_table(window, qtbot):
    """At 420 px the message column ran past the 372 px the table has in a 1440 x 900 window: its
    header out of sight, the reasons cut at about 20 characters, the slots off to the right."""
    from workbench.gui.failure_log import MESSAGE_LEAST, MESSAGE_WIDTH, FailureLog

    failures = FailureLog(window.model, window.results.table_model)
    qtbot.addWidget(failures)
    header, message = failures.view.horizontalHeader(), window.results.table_model.column_of("message")
    for width, wide in ((620, False), (1400, True)):
        failures.resize(width, 300)
        failures.show()
        qtbot.waitExposed(failures)
        qtbot.waitUntil(lambda: failures.view.viewport().width() > 100, timeout=2_000)
        end = header.sectionViewportPosition(message) + header.sectionSize(message)
        assert MESSAGE_LEAST <= header.sectionSize(message) <= MESSAGE_WIDTH
        assert end <= failures.view.viewport().width(), (width, end, failures.view.viewport().width())
        if wide:  # with room, the whole default width again
            assert header.sectionSize(message) == MESSAGE_WIDTH
