"""The Results table sorts and filters with its own proxy: each row's key read once per sort.

Qt's QSortFilterProxyModel read two keys through Python ``data()`` for every comparison: 575,000
calls and 3.5 s with the window frozen to sort 18,000 rows (1.1 s for 4,400). Timings are
``bench``'s business; these tests check what the order is and what it costs in key reads.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QModelIndex, Qt

from workbench.gui.results_table import TrialTableModel, _comparable


def _shown(results) -> list[int]:
    proxy = results.proxy
    return [proxy.mapToSource(proxy.index(r, 0)).row() for r in range(proxy.rowCount())]


def test_a_sort_reads_each_rows_key_once_and_orders_by_it_ties_in_evaluation_order(own_metrics_window, monkeypatch):
    results, table = own_metrics_window.results, own_metrics_window.results.table_model
    merit = table.column_of("metric:merit")
    reads = []
    original = TrialTableModel.sort_key
    monkeypatch.setattr(TrialTableModel, "sort_key", lambda self, row, key: reads.append(row) or original(self, row, key))
    results.view.sortByColumn(merit, Qt.SortOrder.AscendingOrder)
    rows = table.rowCount()
    assert 0 < len(reads) <= 2 * rows  # a Qt sort read two keys per comparison, ~2 n log n
    values = [table.raw(row, "metric:merit") for row in _shown(results)]
    assert values == sorted(values)
    order = _shown(results)  # merit is i % 5: ties keep evaluation order
    assert all(a < b for a, b in zip(order, order[1:]) if table.raw(a, "metric:merit") == table.raw(b, "metric:merit"))
    results.view.sortByColumn(merit, Qt.SortOrder.DescendingOrder)
    assert [table.raw(row, "metric:merit") for row in _shown(results)] == sorted(values, reverse=True)


def test_a_sort_and_a_filter_keep_the_selected_trial_selected(own_metrics_window):
    window = own_metrics_window
    results, table, model = window.results, window.results.table_model, window.model
    model.select(7)
    assert results.selected_row() == 7
    results.view.sortByColumn(table.column_of("metric:merit"), Qt.SortOrder.DescendingOrder)
    assert results.selected_row() == 7 and model.selected == 7
    results.proxy.set_slot_filter("i=7")
    assert _shown(results) == [7] and results.selected_row() == 7
    results.proxy.set_slot_filter("i=3")
    assert _shown(results) == [3] and results.selected_row() is None  # its row is gone from the view
    results.view.setCurrentIndex(results.proxy.index(0, 0))  # the person clicks trial 3
    assert model.selected == 3
    model.select(7)  # and then trial 7 on a chart, which the filter hides: trial 3 is no longer marked
    assert results.selected_row() is None
    results.view.setCurrentIndex(results.proxy.index(0, 0))  # a click on trial 3 chooses it again
    assert model.selected == 3
    model.select(7)
    results.proxy.set_slot_filter("")
    assert sorted(_shown(results)) == list(range(12))
    # the trial still selected is the current row again (it stayed unmarked, and selecting it again
    # did nothing, as it still was the model's selection)
    assert results.selected_row() == 7 and model.selected == 7
    # the sort holds after a filter
    shown = _shown(results)
    assert [table.raw(r, "metric:merit") for r in shown] == sorted((table.raw(r, "metric:merit") for r in shown), reverse=True)


def test_trials_that_arrive_in_a_sorted_table_take_their_place_by_their_key(own_metrics_window):
    """Not a sort a trial (a long run would pay one per trial), nor the end of the table, where
    Qt's proxy put them and the best new trial of a run sorted by latency was out of sight: each
    takes its place among the sorted rows, after those of an equal key."""
    import dataclasses

    model, results, table = own_metrics_window.model, own_metrics_window.results, own_metrics_window.results.table_model
    trials = list(model.session.trials)
    growing = dataclasses.replace(model.session, trials=trials[:6])
    model.set_session(growing)
    results.view.sortByColumn(table.column_of("metric:merit"), Qt.SortOrder.DescendingOrder)
    first = _shown(results)
    assert sorted(first) == list(range(6)) and first != list(range(6))
    growing.trials.extend(trials[6:])
    assert model.sync()
    merit = {row: table.raw(row, "metric:merit") for row in range(12)}
    assert _shown(results) == sorted(range(12), key=lambda row: -merit[row])  # stable: ties by evaluation
    assert results.proxy.mapFromSource(table.index(11, 0)).row() == _shown(results).index(11)


def test_a_metric_a_trial_did_not_report_sorts_below_every_number(own_metrics_window):
    table = own_metrics_window.results.table_model
    assert table.sort_key(0, "metric:late_score") == -math.inf  # reported from the seventh trial on
    assert table.sort_key(8, "metric:late_score") == 8.0
    assert own_metrics_window.results.proxy.mapFromSource(QModelIndex()).isValid() is False


def test_the_sort_arrow_follows_the_sorted_column_to_another_sessions_columns(window, cli, tmp_path):
    """The proxy keeps its sort by column key across sessions; the header kept its arrow on the old
    column number, over another column, or over rows no longer sorted at all."""
    sessions = {}
    for kernel in ("vector_add", "sgemm"):
        sessions[kernel] = tmp_path / f"{kernel}.json"
        assert cli("tune", kernel, "--backend", "sim", "--resources", "estimated", "--budget", "6",
                   "--executor", "inline", "--quiet", "--out", sessions[kernel]).returncode == 0
    results, table, header = window.results, window.results.table_model, window.results.view.horizontalHeader()
    window.open_session(sessions["vector_add"])
    results.view.sortByColumn(table.column_of("metric:registers"), Qt.SortOrder.DescendingOrder)
    window.open_session(sessions["sgemm"])
    registers = table.column_of("metric:registers")
    assert header.sortIndicatorSection() == results.proxy.sortColumn() == registers
    assert header.sortIndicatorOrder() == Qt.SortOrder.DescendingOrder
    results.view.sortByColumn(table.column_of("slot:block_m"), Qt.SortOrder.AscendingOrder)
    window.open_session(sessions["vector_add"])  # no block_m there: no sort, and no arrow
    assert header.sortIndicatorSection() == results.proxy.sortColumn() == -1
    assert _shown(results) == list(range(table.rowCount()))


def test_a_re_rank_re_sorts_a_table_sorted_by_score_and_later_trials_take_their_place(own_metrics_window):
    """Sorted by score, the rows follow a change of the objective; the keys the arriving trials
    are placed among were the last sort's, and a stale order put them in the wrong place."""
    import dataclasses

    model, results, table = own_metrics_window.model, own_metrics_window.results, own_metrics_window.results.table_model
    trials = list(model.session.trials)
    growing = dataclasses.replace(model.session, trials=trials[:8])
    model.set_session(growing)
    results.view.sortByColumn(table.column_of("score"), Qt.SortOrder.DescendingOrder)

    def by_score() -> list[int]:
        return sorted(range(table.rowCount()), key=lambda row: -table.sort_key(row, "score"))

    assert _shown(results) == by_score()
    model.set_direction("merit", +1)
    model.set_weights({"latency_ms": 0.0, "merit": 1.0})  # the best is now the highest merit, not the fastest
    assert _shown(results) == by_score() != sorted(range(8))
    growing.trials.extend(trials[8:])
    assert model.sync()
    assert _shown(results) == by_score()
    rows = list(range(table.rowCount()))  # the scores read at once are the keys read one by one
    assert table.sort_keys(rows, "score") == [_comparable(table.sort_key(row, "score")) for row in rows]
    model.set_constraints(max_latency_ms=1.45)
    assert table.sort_keys(rows, "score") == [_comparable(table.sort_key(row, "score")) for row in rows]
    assert _shown(results) == by_score()


def test_a_re_rank_refilters_the_feasible_rows_and_leaves_another_sort_alone(own_metrics_window):
    model, results, table = own_metrics_window.model, own_metrics_window.results, own_metrics_window.results.table_model
    results.view.sortByColumn(table.column_of("metric:merit"), Qt.SortOrder.DescendingOrder)
    order = _shown(results)
    model.set_constraints(max_latency_ms=1.45)  # trials 0..4 meet it
    assert _shown(results) == order  # merit did not change: the same order
    results.status_combo.setCurrentText("feasible")
    assert sorted(_shown(results)) == [0, 1, 2, 3, 4]
    model.set_constraints(max_latency_ms=1.25)
    assert sorted(_shown(results)) == [0, 1, 2]
    assert [table.raw(r, "metric:merit") for r in _shown(results)] == [2.0, 1.0, 0.0]


def test_a_runs_re_ranks_re_sort_a_table_sorted_by_score_once_after_a_delay_not_on_every_tick(own_metrics_window, qtbot,
                                                                                             monkeypatch):
    """Every 10 Hz tick of a run re-ranks the session: sorting 20,000 rows each time kept the
    window busy (130 ms a tick sorted by feasibility) and reshuffled the rows under the person.
    New trials take their places at once; the others follow the new ranking once, after
    RESORT_DELAY_MS; a change of the objective re-sorts at once."""
    import dataclasses

    from workbench.gui.results_table import TrialFilterProxy

    model, results, table = own_metrics_window.model, own_metrics_window.results, own_metrics_window.results.table_model
    trials = list(model.session.trials)
    growing = dataclasses.replace(model.session, trials=trials[:4])
    model.set_session(growing)
    results.view.sortByColumn(table.column_of("feasible"), Qt.SortOrder.AscendingOrder)
    sorts = []
    original = TrialFilterProxy._show
    monkeypatch.setattr(TrialFilterProxy, "_show", lambda self, rows: sorts.append(len(rows)) or original(self, rows))
    for stop in range(5, 9):  # four ticks, a trial each
        growing.trials[:] = trials[:stop]
        assert model.sync()
    assert sorts == [] and sorted(_shown(results)) == list(range(8))  # placed, not sorted again
    qtbot.waitUntil(lambda: sorts == [8], timeout=3 * TrialFilterProxy.RESORT_DELAY_MS)
    growing.trials[:] = trials[:9]
    assert model.sync() and results.proxy._resort.isActive()
    model.set_session(dataclasses.replace(growing, trials=trials[:9]))  # another session: the re-sort due goes
    assert not results.proxy._resort.isActive()  # laid out by the new session's ranking: nothing due
    sorts.clear()
    model.set_constraints(max_latency_ms=1.35)  # the objective: at once
    assert sorts == [9]
    keys = [table.sort_key(row, "feasible") for row in _shown(results)]
    assert keys == sorted(keys)


def test_a_slot_filter_is_read_again_against_another_sessions_slots(window, cli, tmp_path):
    """A filter on ``block_size`` stayed applied after opening a session without that slot: every
    row hidden, nothing said, also with the status filter at "all"."""
    sessions = {}
    for kernel in ("vector_add", "sgemm"):
        sessions[kernel] = tmp_path / f"{kernel}.json"
        assert cli("tune", kernel, "--backend", "sim", "--resources", "estimated", "--budget", "6",
                   "--executor", "inline", "--quiet", "--out", sessions[kernel]).returncode == 0
    results = window.results
    window.open_session(sessions["vector_add"])
    block = window.model.trials[0].config["block_size"]
    results.slot_edit.setText(f"block_size={block}")
    results._on_slot_filter()
    assert 0 < results.proxy.rowCount() <= 6 and results.filter_error.text() == ""
    window.open_session(sessions["sgemm"])
    assert results.proxy.rowCount() == results.table_model.rowCount() == 6  # every trial, not none
    assert "block_size" in results.filter_error.text()


def test_cells_without_a_figure_sort_last_in_either_direction(own_metrics_window):
    """Ascending, every trial without the figure came first (a recording's 473 failures before its
    fastest config, sorting by latency), as spreadsheets do not: blanks go last both ways, also
    for trials arriving in the sorted table."""
    import dataclasses

    model, results, table = own_metrics_window.model, own_metrics_window.results, own_metrics_window.results.table_model
    column = table.column_of("metric:late_score")  # reported from the seventh trial on
    blank = [row for row in range(12) if math.isnan(table.raw(row, "metric:late_score"))]
    assert blank == list(range(6))
    for order in (Qt.SortOrder.AscendingOrder, Qt.SortOrder.DescendingOrder):
        results.view.sortByColumn(column, order)
        shown = _shown(results)
        assert shown[-6:] == blank, (order, shown)
        values = [table.raw(row, "metric:late_score") for row in shown[:6]]
        assert values == sorted(values, reverse=order == Qt.SortOrder.DescendingOrder)
    trials = list(model.session.trials)
    growing = dataclasses.replace(model.session, trials=trials[3:9])
    model.set_session(growing)
    results.view.sortByColumn(table.column_of("metric:late_score"), Qt.SortOrder.AscendingOrder)
    growing.trials.extend([*trials[:3], *trials[9:]])
    assert model.sync()
    shown = _shown(results)
    assert all(math.isnan(table.raw(row, "metric:late_score")) for row in shown[-6:]), shown


def test_a_sort_keeps_the_selected_trial_in_sight(window, qtbot, tmp_path, cli):
    """The selection was kept by a sort but left wherever it landed, out of sight in a long table."""
    out = tmp_path / "s.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "120",
               "--strategy", "random", "--executor", "inline", "--quiet", "--out", out).returncode == 0
    window.open_session(out)
    window.resize(1440, 900)
    window.show()
    results, table = window.results, window.results.table_model
    qtbot.waitUntil(lambda: results.view.viewport().height() > 100, timeout=5000)
    window.model.select(3)
    results.view.scrollToTop()
    for order in (Qt.SortOrder.DescendingOrder, Qt.SortOrder.AscendingOrder):
        results.view.sortByColumn(table.column_of("metric:latency_ms"), order)
        rect = results.view.visualRect(results.view.currentIndex())
        assert results.selected_row() == 3 and results.view.viewport().rect().contains(rect.center()), (order, rect)
