"""The Results table shows how each config did first, and the person chooses its columns.

With the slots first, a kernel of seven slots pushed latency, score and status off the right of a
1440 px window. The outcome now comes first; the header's context menu hides and shows columns,
dragging a header moves its column, and both are remembered in the settings by column key, so a
new session, a new window and another kernel's columns all get the right ones.
"""

from __future__ import annotations

import dataclasses

import pytest
from PySide6.QtCore import Qt

from workbench.gui.settings_store import JsonSettings
from PySide6.QtWidgets import QApplication

from workbench.gui.column_choice import merge_order, stored_keys
from workbench.gui.failure_log import FailureLog
from workbench.gui.main_window import MainWindow
from workbench.gui.results_table import ResultsTable


OUTCOME = ["index", "metric:latency_ms", "score", "feasible", "status"]
HIDDEN = "results_table/hidden_columns"
ORDER = "results_table/column_order"


def _session(cli, tmp_path, kernel: str, budget: int = 3):
    path = tmp_path / f"{kernel}-{len(list(tmp_path.iterdir()))}.json"
    done = cli("tune", kernel, "--backend", "sim", "--resources", "estimated", "--budget", budget,
               "--executor", "inline", "--quiet", "--out", path)
    assert done.returncode == 0, done.stderr
    return path


def _keys(results: ResultsTable) -> list[str]:
    return results.columns.keys()


def _shown(results: ResultsTable) -> list[str]:
    """The keys shown, left to right as on screen."""
    return [key for key in results.columns.shown_order() if results.columns.is_shown(key)]


def _tick(results: ResultsTable, key: str, on: bool) -> None:
    """What clicking ``key``'s entry in the header's context menu does."""
    menu = results.columns.menu()
    action = next(a for a in menu.actions() if a.data() == key)
    assert action.isEnabled() and action.isChecked() != on
    action.trigger()
    menu.deleteLater()


def _drag(results: ResultsTable, key: str, to: int) -> None:
    """What dragging ``key``'s header to the ``to``-th place does."""
    header = results.view.horizontalHeader()
    header.moveSection(header.visualIndex(results.table_model.column_of(key)), to)


def _new_window(qtbot, settings_path) -> MainWindow:
    win = MainWindow(interactive=False, settings=JsonSettings(str(settings_path)))
    qtbot.addWidget(win)
    win.resize(1440, 900)
    win.show()
    return win


@pytest.mark.parametrize("present", [False, True])
def test_the_outcome_comes_first_and_is_on_screen_at_1440_px_whatever_the_slots(window, cli, tmp_path, present):
    if present:
        window.zoom.present_once()
    window.open_session(_session(cli, tmp_path, "conv2d"))
    QApplication.processEvents()
    results = window.results
    keys = _keys(results)
    slots = ["slot:" + name for name in window.model.session.space.names]
    assert len(slots) == 7
    assert keys[:5] == OUTCOME and keys[5:12] == slots and keys[12] == "spread" and keys[-2:] == ["message", "id"]
    view = results.view
    view.scrollTo(results.proxy.index(0, 0))
    room = view.viewport().width()
    for key in OUTCOME:
        column = results.table_model.column_of(key)
        left = view.columnViewportPosition(column)
        assert 0 <= left and left + view.columnWidth(column) <= room, (key, left, room)
    # the feasible column is as narrow as the status beside it: a violated constraint is elided, its tip whole
    window.model.set_constraints(max_latency_ms=1e-6)
    table = results.table_model
    tip = table.data(table.index(0, table.column_of("feasible")), Qt.ItemDataRole.ToolTipRole)
    assert tip.startswith("latency_ms ") and "> 1e-06" in tip  # plain text, which Qt shows as written


def test_the_header_menu_hides_and_shows_a_column_and_the_settings_keep_it_by_key(window, cli, tmp_path, qtbot):
    window.open_session(_session(cli, tmp_path, "conv2d"))
    results = window.results
    assert results.view.horizontalHeader().sectionsMovable()
    _tick(results, "status", False)
    _tick(results, "slot:block_size_y", False)
    assert "status" not in _shown(results) and "slot:block_size_y" not in _shown(results)
    assert results.view.isColumnHidden(results.table_model.column_of("status"))
    assert sorted(stored_keys(window.settings.value(HIDDEN))) == ["slot:block_size_y", "status"]
    _tick(results, "status", True)
    assert "status" in _shown(results) and stored_keys(window.settings.value(HIDDEN)) == ["slot:block_size_y"]
    # the menu's last entries bring back every hidden column and the table's own order
    _drag(results, "id", 1)
    menu = results.columns.menu()
    entries = {a.text(): a for a in menu.actions() if not a.isSeparator()}
    assert entries["Show all columns"].isEnabled() and entries["Default column order"].isEnabled()
    entries["Show all columns"].trigger()
    entries["Default column order"].trigger()
    assert results.columns.shown_order() == _keys(results) and "slot:block_size_y" in _shown(results)
    assert window.settings.value(HIDDEN) is None and window.settings.value(ORDER) is None


def test_the_right_clicked_column_is_offered_first_to_hide(window, cli, tmp_path):
    window.open_session(_session(cli, tmp_path, "conv2d"))
    results = window.results
    menu = results.columns.menu("feasible")
    first = menu.actions()[0]
    assert first.text() == "Hide “feasible”"
    first.trigger()
    assert "feasible" not in _shown(results) and "feasible" in stored_keys(window.settings.value(HIDDEN))


def test_the_view_menu_offers_the_same_choice(window, cli, tmp_path):
    """For the keyboard, and for whoever does not think of right-clicking a header."""
    window.open_session(_session(cli, tmp_path, "conv2d"))
    submenu = next(a.menu() for a in window.zoom.menu.actions() if a.text() == "Results &columns")
    for _ in range(2):  # rebuilt each time it opens, no entries twice
        submenu.aboutToShow.emit()
    entries = [a for a in submenu.actions() if a.data()]
    assert [a.data() for a in entries] == window.results.columns.shown_order()
    next(a for a in entries if a.data() == "score").trigger()
    assert "score" not in _shown(window.results)


def test_the_tables_own_rule_and_the_persons_choice_compose(window, cli, tmp_path):
    """A column hidden by either stays hidden: the person's hidden GFLOP/s column stays hidden when
    trials report GFLOP/s; Kernel Tuner's time, which no simulated trial has, stays hidden when
    ticked (its entry says why) and is ticked, not hidden by the person, when a recording brings it."""
    from pathlib import Path

    window.open_session(_session(cli, tmp_path, "conv2d"))
    results, table = window.results, window.results.table_model
    assert "metric:gflops" in _shown(results) and "metric:kt_time_ms" not in _shown(results)
    entry = next(a for a in results.columns.menu().actions() if a.data() == "metric:kt_time_ms")
    assert entry.isChecked() and entry.text().endswith("(hidden: no values yet)")
    _tick(results, "metric:gflops", False)
    window.open_session(_session(cli, tmp_path, "conv2d", budget=4))
    assert results.view.isColumnHidden(table.column_of("metric:gflops"))
    entry = next(a for a in results.columns.menu().actions() if a.data() == "metric:gflops")
    assert not entry.isChecked() and "hidden:" not in entry.text()
    cache = Path(__file__).parents[1] / "fixtures" / "kt_cache_small.json"
    recording = tmp_path / "r.json"
    assert cli("tune", "--replay", cache, "--budget", "5", "--quiet", "--out", recording).returncode == 0
    window.open_session(recording)
    assert "metric:kt_time_ms" in _shown(results)


def test_the_last_shown_column_cannot_be_hidden(qtbot):
    from workbench.gui.model import SessionModel

    results = ResultsTable(SessionModel())
    qtbot.addWidget(results)
    for key in _keys(results)[1:]:
        if results.columns.is_shown(key):
            _tick(results, key, False)
    assert _shown(results) == ["index"]
    menu = results.columns.menu()
    assert not next(a for a in menu.actions() if a.data() == "index").isEnabled()


def test_the_choice_survives_a_new_session_and_a_new_window(window, cli, tmp_path, qtbot):
    first, second = _session(cli, tmp_path, "conv2d"), _session(cli, tmp_path, "conv2d", budget=4)
    window.open_session(first)
    results = window.results
    _tick(results, "slot:tile_size_x", False)
    _drag(results, "slot:use_shmem", 1)  # beside the number
    _drag(results, "message", 2)
    chosen = results.columns.shown_order()
    assert chosen[:3] == ["index", "slot:use_shmem", "message"]
    window.open_session(second)  # another session: a model reset, new rows, the same columns
    assert results.columns.shown_order() == chosen and "slot:tile_size_x" not in _shown(results)
    window.save_settings()
    again = _new_window(qtbot, window.settings.fileName())
    assert again.results.columns.shown_order()[:2] == ["index", "message"]  # no slots before a session
    again.open_session(first)
    assert again.results.columns.shown_order() == chosen
    assert again.results.view.isColumnHidden(again.results.table_model.column_of("slot:tile_size_x"))
    # the Failures tab keeps its own few columns whatever the Results tab shows
    failures = again.findChild(FailureLog)
    table = again.results.table_model
    assert not failures.view.isColumnHidden(table.column_of("slot:tile_size_x"))
    assert failures.view.isColumnHidden(table.column_of("metric:latency_ms"))


def test_another_kernels_columns_are_not_hidden_or_moved_by_position(window, cli, tmp_path):
    conv, vector = _session(cli, tmp_path, "conv2d"), _session(cli, tmp_path, "vector_add")
    window.open_session(conv)
    results = window.results
    table = results.table_model
    fifth = table.column_of("slot:block_size_x")
    _tick(results, "slot:block_size_x", False)
    _drag(results, "slot:use_shmem", 1)
    window.open_session(vector)
    keys = _keys(results)
    assert table.column_key(fifth) == "slot:block_size"  # the same column number, another slot
    assert not results.view.isColumnHidden(fifth)
    assert _shown(results)[:5] == OUTCOME  # nothing moved in, nothing hidden by number
    assert results.columns.shown_order() == keys
    _tick(results, "slot:grid_blocks", False)  # a choice for this kernel ...
    window.open_session(conv)
    assert results.columns.shown_order()[1] == "slot:use_shmem"  # ... and the other's, both kept
    hidden = [k for k in _keys(results) if results.view.isColumnHidden(table.column_of(k))]
    assert "slot:block_size_x" in hidden and not any(k.startswith("slot:") and k != "slot:block_size_x" for k in hidden)
    window.open_session(vector)
    assert results.view.isColumnHidden(table.column_of("slot:grid_blocks"))
    assert not results.view.isColumnHidden(table.column_of("slot:block_size"))


@pytest.fixture
def ran(own_metrics_window):
    return own_metrics_window


def _grow(window):
    """The session's first six trials shown, then the other six arriving (as in a run)."""
    model = window.model
    trials = list(model.session.trials)
    growing = dataclasses.replace(model.session, trials=trials[:6])
    model.set_session(growing)
    return lambda: (growing.trials.extend(trials[6:]), model.sync())


def test_a_metric_inserted_mid_run_keeps_the_hidden_and_moved_columns(ran):
    results, table = ran.results, ran.results.table_model
    arrive = _grow(ran)
    _tick(results, "metric:merit", False)
    _drag(results, "id", 1)
    _drag(results, "metric:energy_j", 2)
    before = results.columns.shown_order()
    resets = []
    table.modelReset.connect(lambda: resets.append(1))
    arrive()
    assert not resets and "metric:late_score" in _keys(results)
    shown = results.columns.shown_order()
    # the new column stands beside the column it follows in the table's order, the rest as they were
    own = results.columns.keys()
    follows = own[own.index("metric:late_score") - 1]
    assert [k for k in shown if k != "metric:late_score"] == before
    assert shown.index("metric:late_score") == shown.index(follows) + 1
    assert shown[:3] == ["index", "id", "metric:energy_j"]
    assert results.view.isColumnHidden(table.column_of("metric:merit"))
    assert not results.view.isColumnHidden(table.column_of("metric:late_score"))
    assert results.view.columnWidth(table.column_of("metric:late_score")) > 0


def test_a_metric_hidden_and_placed_once_keeps_its_place_when_it_arrives_mid_run_again(ran, qtbot):
    results = ran.results
    _drag(results, "metric:late_score", 1)
    _tick(results, "metric:energy_j", False)
    ran.save_settings()
    again = _new_window(qtbot, ran.settings.fileName())
    again.model.set_session(ran.model.session)
    arrive = _grow(again)
    assert "metric:late_score" not in _keys(again.results)
    arrive()
    assert again.results.columns.shown_order()[1] == "metric:late_score"
    assert again.results.view.isColumnHidden(again.results.table_model.column_of("metric:energy_j"))


@pytest.mark.parametrize("hidden, order", [
    ("42", "@Point(1 2)"),
    ("@Invalid()", "status"),
    ("@ByteArray(\\x1\\x2)", "1, 2, \"\""),
    ("nowhere", "nowhere, id"),
])
def test_malformed_stored_choices_are_ignored(qtbot, cli, tmp_path, hidden, order):
    """A settings file edited or damaged into other types never stops the window starting."""
    path = tmp_path / "settings.ini"
    path.write_text(f"[results_table]\nhidden_columns={hidden}\ncolumn_order={order}\n")
    session = _session(cli, tmp_path, "conv2d")
    win = _new_window(qtbot, path)
    win.open_session(session)
    results = win.results
    slots = ["slot:" + name for name in win.model.session.space.names]
    assert results.columns.shown_order() == _keys(results)
    assert set(OUTCOME + slots) <= set(_shown(results))


def test_a_choice_hiding_every_column_is_set_aside(window, cli, tmp_path, qtbot):
    """Every column hidden (a settings file edited by hand) would leave no header to click to
    bring them back: the table shows its columns instead, and the next kernel's too."""
    session = _session(cli, tmp_path, "conv2d")
    window.open_session(session)
    every = _keys(window.results)
    window.settings.setValue(HIDDEN, every)
    window.settings.sync()
    win = _new_window(qtbot, window.settings.fileName())
    win.open_session(session)
    shown = _shown(win.results)
    assert set(OUTCOME) <= set(shown) and "slot:block_size_x" in shown


def test_the_order_to_show_and_the_order_to_store():
    table = ["index", "latency", "slot:a", "slot:b", "m:x", "id"]
    assert merge_order([], table) == table
    # placed keys in the person's order; the others after their neighbour in the table's order
    assert merge_order(["id", "index", "latency"], table) == ["id", "index", "latency", "slot:a", "slot:b", "m:x"]
    assert merge_order(["slot:b", "index"], table) == ["slot:b", "m:x", "id", "index", "latency", "slot:a"]
    assert merge_order(["gone", "m:x"], table) == ["index", "latency", "slot:a", "slot:b", "m:x", "id"]
    # storing: keys of absent columns keep their place after the key they followed
    stored = ["index", "slot:z", "latency", "id"]
    assert merge_order(["latency", "m:x", "index", "id"], stored + ["m:x"]) == ["latency", "m:x", "index", "slot:z", "id"]


def test_stored_keys_are_read_whatever_the_file_holds():
    assert stored_keys("status") == ["status"]
    assert stored_keys(["a", 3, "", None, "a", "b\0c", "b"]) == ["a", "b"]
    assert stored_keys(42) == [] and stored_keys(None) == [] and stored_keys({"a": 1}) == []
    assert stored_keys(["x" * 5000]) == []
