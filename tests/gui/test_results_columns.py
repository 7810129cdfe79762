"""The Results table has a column for every metric the trials report, not only the usual ones.

A python benchmark returns a dict of its own metrics (``merit``, energy, ...); the table showed only
its built-in columns, so those figures were nowhere in the table. A metric first reported mid-run
gets its column inserted, and the columns already there keep their order, widths and selection.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from PySide6.QtCore import Qt

from workbench.core.domain.session import save_session
from workbench.gui.failure_log import FailureLog
from workbench.gui.results_table import MAX_HEADER_CHARS

@pytest.fixture
def ran(own_metrics_window):
    return own_metrics_window


def _keys(table) -> list[str]:
    return [table.column_key(c) for c in range(table.columnCount())]


def test_a_benchmarks_own_metrics_have_columns_with_their_values_unit_and_direction(ran):
    table, view = ran.results.table_model, ran.results.view
    keys = _keys(table)
    for name in ("merit", "energy_j", "tflops", "late_score"):
        column = keys.index("metric:" + name)
        assert not view.isColumnHidden(column)
        assert keys.index("metric:quality") < column < keys.index("message")  # after the usual metrics
    merit = keys.index("metric:merit")
    assert [table.raw(row, "metric:merit") for row in range(12)] == [float(i % 5) for i in range(12)]
    assert table.data(table.index(3, merit)) == "3"
    tflops, energy = keys.index("metric:tflops"), keys.index("metric:energy_j")
    assert table.headerData(tflops, table_horizontal()) == "tflops (TFLOP/s)"  # the registry's unit
    assert table.headerData(energy, table_horizontal()) == "energy_j"  # its name says it already
    tip = table.headerData(tflops, table_horizontal(), tool_tip())
    assert "arithmetic throughput" in tip and "higher is better" in tip
    assert "lower is better" in table.headerData(energy, table_horizontal(), tool_tip())
    assert "direction unknown" in table.headerData(merit, table_horizontal(), tool_tip())
    ran.model.set_direction("merit", +1)  # the person's direction is the column's too
    assert "higher is better" in table.headerData(merit, table_horizontal(), tool_tip())
    # latency and its percentiles have their own columns (latency, noise): no second one
    assert "metric:latency_p20_ms" not in keys and keys.count("metric:latency_ms") == 1


def test_a_metric_first_reported_mid_run_is_inserted_and_the_other_columns_stay(ran, qtbot):
    model, results = ran.model, ran.results
    table, view = results.table_model, results.view
    trials = list(model.session.trials)
    growing = dataclasses.replace(model.session, trials=trials[:6])
    model.set_session(growing)
    before = _keys(table)
    assert "metric:late_score" not in before and "metric:merit" in before
    latency = before.index("metric:latency_ms")
    view.setColumnWidth(latency, 123)  # as the person sized it
    view.sortByColumn(before.index("id"), Qt.SortOrder.DescendingOrder)  # and sorted it, after the new column
    model.select(2)
    resets, inserted = [], []
    table.modelReset.connect(lambda: resets.append(1))
    table.columnsInserted.connect(lambda _parent, first, last: inserted.append((first, last)))
    growing.trials.extend(trials[6:])
    assert model.sync()
    after = _keys(table)
    assert not resets and inserted == [(before.index("message"), before.index("message"))]
    assert after == before[: before.index("message")] + ["metric:late_score"] + before[before.index("message"):]
    assert view.columnWidth(latency) == 123 and model.selected == 2
    assert results.proxy.sortColumn() == after.index("id") == view.horizontalHeader().sortIndicatorSection()
    assert results.selected_row() == 2
    late = after.index("metric:late_score")
    assert not view.isColumnHidden(late) and view.columnWidth(late) > 0
    assert [table.raw(row, "metric:late_score") for row in range(6, 12)] == [float(i) for i in range(6, 12)]
    # the Failures tab shares the table model: a failure has no metrics, so the new column stays hidden there
    failures = ran.findChild(FailureLog)
    assert failures.view.isColumnHidden(late)
    assert [k for c, k in enumerate(after) if not failures.view.isColumnHidden(c)] == \
        [k for c, k in enumerate(before) if not failures.view.isColumnHidden(c if c < late else c + 1)]
    # opening it again gives the same columns in the same order
    model.set_session(dataclasses.replace(growing, trials=list(growing.trials)))
    assert _keys(table) == after


def test_a_metric_name_from_a_file_is_shown_as_text_and_its_column_stays_narrow(ran, tmp_path):
    """A metric name in a session file that looks like markup is read as the identifier it is
    recorded under (nothing of it is drawn as markup, in the tool tip or anywhere), and a name of
    hundreds of characters does not push every other column off the screen."""
    path = tmp_path / "s.json"
    save_session(ran.model.session, path)
    markup, long = "<b>x</b><img src='file:///etc/hostname'>", "y" * 200  # (the longest a file may give)
    doc = json.loads(path.read_text())
    for trial in doc["trials"]:
        trial["metrics"].update({markup: 1.0, long: 2.0})
    path.write_text(json.dumps(doc))
    ran.open_session(str(path))
    table, view = ran.results.table_model, ran.results.view
    keys = _keys(table)
    from workbench.core.domain.metrics import metric_name

    assert "metric:" + markup not in keys
    tip = table.headerData(keys.index("metric:" + metric_name(markup)), table_horizontal(), tool_tip())
    assert "<img" not in tip and "<b>" not in tip
    cap = view.horizontalHeader().fontMetrics().horizontalAdvance("M" * MAX_HEADER_CHARS) + 18
    assert 0 < view.columnWidth(keys.index("metric:" + long)) <= cap


def table_horizontal() -> Qt.Orientation:
    return Qt.Orientation.Horizontal


def tool_tip() -> Qt.ItemDataRole:
    return Qt.ItemDataRole.ToolTipRole


def test_an_aborted_trials_latency_reads_as_the_bound_it_was_seen_to_exceed(ran):
    """Aborted trials showed '-' for latency, though they are kept with their bound."""
    from workbench.core.domain.measurement import Measurement, Status, Trial
    from workbench.core.domain.session import Session

    session = ran.model.session
    first = session.trials[0]
    aborted = Trial(len(session.trials), first.config,
                    Measurement(Status.ABORTED, {"latency_bound_ms": 0.4}, message="aborted above 0.4 ms"))
    copy = Session.from_dict({**session.to_dict(), "trials": []})
    copy.trials = [first, aborted]
    ran.model.set_session(copy)
    table = ran.results.table_model
    column = _keys(table).index("metric:latency_ms")
    assert table.data(table.index(1, column)) == "> 0.4000"  # as precise as the column's latencies
    from workbench.gui.results_table import SORT_ROLE

    assert table.data(table.index(1, column), SORT_ROLE) == 0.4  # sorted where it reads, not first
    assert table.data(table.index(0, column)) != "-" and not table.data(table.index(0, column)).startswith(">")


def test_the_verdict_columns_are_narrow_until_a_trial_fails_or_misses_a_constraint(ran, qtbot):
    """Sized for "compile_error" always, status and feasible pushed every slot column off a
    1440 px window in presentation mode, where every trial was "ok" and "yes"."""
    results, table = ran.results, ran.results.table_model
    widths = {key: results.view.columnWidth(table.column_of(key)) for key in ("status", "feasible")}
    wide = results._verdict_width()
    assert all(width < wide for width in widths.values()), widths  # the benchmark's trials all succeeded
    ran.model.set_constraints(max_latency_ms=1.5)  # some trials miss it now: room for the reason
    qtbot.wait(10)
    assert results.view.columnWidth(table.column_of("feasible")) >= wide
    assert results.view.columnWidth(table.column_of("status")) == widths["status"]  # every status still "ok"


def test_a_metric_or_slot_named_like_another_column_gets_a_heading_of_its_own(window, cli, tmp_path):
    """A benchmark reporting ``score``, ``status`` and a figure named like its slot made two columns
    of one heading, one the workbench's: "feasible: yes" beside "feasible: 0"."""
    bench = tmp_path / "collide.py"
    bench.write_text("SPACE = {'block': [1, 2, 3], 'id': [0], 'quality': [5]}\n"
                     "def measure(config):\n"
                     "    return {'latency_ms': 1.0 + config['block'], 'block': 99.0, 'status': 5.0, 'score': 1e6,\n"
                     "            'feasible': 0.0, 'quality': 0.9}\n")
    path = tmp_path / "collide.json"
    assert cli("tune", bench, "--backend", "python", "--budget", "3", "--quiet", "--out", path).returncode == 0
    window.open_session(path)
    table = window.results.table_model
    titles = [table.headerData(c, Qt.Orientation.Horizontal) for c in range(table.columnCount())]
    assert len(titles) == len(set(titles)), titles
    for key, title in (("score", "score"), ("status", "status"), ("slot:id", "id (slot)"), ("slot:block", "block"),
                       ("metric:block", "block (metric)"), ("metric:score", "score (metric)"),
                       ("metric:status", "status (metric)"), ("metric:feasible", "feasible (metric)"),
                       ("slot:quality", "quality (slot)"), ("metric:quality", "quality")):
        assert table.headerData(table.column_of(key), Qt.Orientation.Horizontal) == title


def test_a_slot_column_is_as_wide_as_its_values(window):
    """A learning rate of 0.001, 0.01, 0.1 or 1.0 read "0.0…" for the first two at any window
    width: the column was sized from its header "lr" alone."""
    from workbench.core.domain.measurement import Measurement, Status, Trial
    from workbench.core.domain.session import Session
    from workbench.core.domain.space import SearchSpace, Slot

    space = SearchSpace([Slot("lr", (0.001, 0.01, 0.1, 1.0)), Slot("width", (8, 16))])
    trials = [Trial(i, config, Measurement(Status.OK, {"latency_ms": 1.0 + i})) for i, config in enumerate(space)]
    window.model.set_session(Session(kernel="bench", space=space, trials=trials))
    window.refresh()
    table = window.results
    model = table.table_model
    column = model.column_of("slot:lr")
    texts = [model.data(model.index(row, column)) for row in range(model.rowCount())]
    assert {"0.001000", "0.01000"} <= set(texts), texts
    view = table.view
    needed = max(view.fontMetrics().horizontalAdvance(text) for text in texts)
    assert view.columnWidth(column) >= needed  # (the proxy keeps the model's columns)


def test_a_float_slots_cell_copied_into_the_filter_is_taken_as_that_value(window):
    """A float slot's cells read 0.001000 (the column's one precision), the card and the filter
    0.001: a cell copied into the filter was refused as no value of the slot."""
    from workbench.core.domain.measurement import Measurement, Status, Trial
    from workbench.core.domain.session import Session
    from workbench.core.domain.space import SearchSpace, Slot

    space = SearchSpace([Slot("lr", (0.001, 0.01, 0.1), "compute"), Slot("fast", (False, True), "compute")])
    trials = [Trial(k, config, Measurement(Status.OK, {"latency_ms": 1.0 + k})) for k, config in enumerate(space)]
    first = Session(kernel="k", space=space, trials=trials, device={"name": "cpu"})
    window.model.set_session(first)
    results, table = window.results, window.results.table_model
    cell = table.data(table.index(0, table.column_of("slot:lr")))
    assert cell == "0.001000"
    results.slot_edit.setText(f"lr={cell}")
    results._on_slot_filter()
    assert results.filter_error.text() == "" and results.proxy.rowCount() == 2
    space = SearchSpace([Slot("alpha", (0.12345, 0.5, 1 / 3), "compute")])  # more digits than the column shows
    trials = [Trial(k, config, Measurement(Status.OK, {"latency_ms": 1.0 + k})) for k, config in enumerate(space)]
    window.model.set_session(Session(kernel="k", space=space, trials=trials, device={"name": "cpu"}))
    for row in range(3):
        cell = table.data(table.index(row, table.column_of("slot:alpha")))
        results.slot_edit.setText(f"alpha={cell}")
        results._on_slot_filter()
        assert results.filter_error.text() == "" and results.proxy.rowCount() == 1, (cell, results.filter_error.text())
    window.model.set_session(first)
    results.slot_edit.setText("lr=0x20")  # not a value of it, however written: refused
    results._on_slot_filter()
    assert "lr has no value 0x20" in results.filter_error.text()
