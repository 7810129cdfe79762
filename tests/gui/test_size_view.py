"""The sizes field and the size view: a sweep from the window, the three plots' contents, and
missing cells measured in the background (workbench.gui.size_view, the toolbar's sizes field)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from workbench.core.errors import WorkbenchError
from workbench.core.domain.session import load_session, problem_key, save_session
from workbench.core.domain.size_analysis import cross_matrix, missing_cells, size_rows, winner_bands
from workbench.core.domain.sizes import problems_of, sweep_plan, trials_by_problem
from workbench.runner.controller import RunRequest, start_run


def _sweep(path: Path, budget: int = 5, sizes: dict | None = None, warm: bool = True) -> Path:
    run = start_run(RunRequest(kernel="reduce_sum", backend="sim", strategy="random", budget=budget,
                               sizes=sizes or {"n": [4096, 1 << 20, 1 << 26]}, warm_start=warm), path)
    run.run()
    return path


def test_the_sizes_field_starts_a_sweep_from_the_window(window, qtbot):
    window.toolbar.apply({"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 4})
    window.toolbar.sizes.setText("n=4096,65536; alpha=1.0,2.5")
    run = window.toolbar.request()
    assert run["sizes"] == {"n": [4096, 65536], "alpha": [1.0, 2.5]}
    with qtbot.waitSignal(window.run_done, timeout=120_000):
        window.start_run(run)
    session = window.model.session
    assert len(problems_of(session)) == 4
    assert [len(g) for g in trials_by_problem(session).values()] == [4, 4, 4, 4]
    assert sweep_plan(session).budget == 4
    assert window.toolbar.progress.maximum() == 16 and window.toolbar.progress.value() == 16
    window.bottom_tabs.setCurrentWidget(window.size_view)
    window.size_view.refresh()
    assert len(window.size_view.rows) == 4
    assert "4 sizes" in window.size_view.status.text()
    # the budget box says its number is per size ("4 evals" beside "16 / 16" read as a count gone wrong)
    assert window.toolbar.budget.text() == "4 evals/size"
    window.toolbar.sizes.setText("")
    assert window.toolbar.budget.text() == "4 evals"
    window.toolbar.sizes.setText("n=4096,65536")  # a replay's sizes field is greyed out and not read
    window.toolbar.backend.setCurrentIndex(window.toolbar.backend.findData("replay"))
    assert window.toolbar.budget.text() == "4 evals"
    window.toolbar.backend.setCurrentIndex(window.toolbar.backend.findData("sim"))
    assert window.toolbar.budget.text() == "4 evals/size"


def test_a_recorded_budget_past_what_the_box_holds_opens(window, cli, tmp_path):
    """A sweep's budget may be any count a run takes (up to 2**63-1): the box refused 10**10 with an
    OverflowError and the window did not open the session."""
    path = tmp_path / "big.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--executor", "inline", "--quiet",
               "--strategy", "random", "--sizes", "n=4096,8192", "--budget", "10000000000", "--time-limit", "1",
               "--out", path).returncode == 0
    window.open_session(path)
    assert window.model.session is not None and window.toolbar.budget.value() == window.toolbar.budget.maximum()


def test_a_bad_sizes_field_is_refused_in_one_line(window):
    window.toolbar.sizes.setText("n=4096,,8")
    with pytest.raises(WorkbenchError) as info:
        window.toolbar.request()
    assert "\n" not in str(info.value) and "sizes" in str(info.value)


def test_the_size_view_draws_rows_bands_and_the_matrix(window, qtbot, tmp_path):
    path = _sweep(tmp_path / "s.json")
    window.open_session(str(path))
    view = window.size_view
    window.bottom_tabs.setCurrentWidget(view)
    view.refresh()
    session = load_session(path)
    rows = size_rows(session)
    assert [r.problem["n"] for r in view.rows] == [4096, 1 << 20, 1 << 26]
    np.testing.assert_array_equal(np.isnan(view.matrix), np.isnan(cross_matrix(rows)))
    assert all(view.matrix[i, i] == 1.0 for i in range(3))
    # one band per run of sizes with the same winner, covering every size once
    bands = winner_bands(rows)
    covered = [i for b in bands for i in range(b.first, b.last + 1)]
    assert covered == [0, 1, 2]
    bars = [item for item in view.band_plot.getPlotItem().items if type(item).__name__ == "BarGraphItem"]
    assert len(bars) == len(bands)
    # the reopened sweep shows its sizes and budget per size in the toolbar
    assert window.toolbar.sizes.text() == "n=4096,1048576,67108864"
    assert window.toolbar.budget.value() == 5
    # the latency plot holds one point per size, at the best latency
    curves = view.latency_plot.getPlotItem().listDataItems()
    ys = 10 ** curves[-1].getData()[1]  # the plot holds log10 values (log y axis)
    assert len(ys) == 3 and np.allclose(ys, [r.best_latency for r in rows])


def test_a_session_of_one_size_names_it_and_draws_no_size_plots(window, qtbot, tmp_path):
    """One size has nothing to compare: the view says which size was measured instead of a size
    axis reading "1 (x0.001)" and a one-cell matrix of "best config of 1"; a sweep shows them."""
    path = tmp_path / "one.json"
    run = start_run(RunRequest(kernel="reduce_sum", backend="sim", strategy="random", budget=4), path)
    run.run()
    window.open_session(str(path))
    view = window.size_view
    window.bottom_tabs.setCurrentWidget(view)
    view.refresh()
    n = load_session(path).problem["n"]
    assert len(view.rows) == 1 and not view.plots.isVisible()
    assert view.status.text().startswith(f"one problem size in this session (n={n}") and "nothing to compare" in view.status.text()
    window.open_session(str(_sweep(tmp_path / "s.json", budget=2)))
    view.refresh()
    assert len(view.rows) == 3 and view.plots.isVisible()


def test_a_sweep_with_one_size_measured_so_far_is_called_a_sweep(window, qtbot, tmp_path):
    """Early in a running sweep the view said 'one problem size in this session ... a sweep tunes
    several' beside a filled sizes field."""
    from workbench.core.domain.session import Session

    path = _sweep(tmp_path / "s.json", budget=2)
    session = load_session(path)
    first = trials_by_problem(session)[problem_key(problems_of(session)[0])]
    partial = Session.from_dict({**session.to_dict(), "trials": []})
    partial.trials = list(first)  # as the sweep is while its first size runs
    save_session(partial, tmp_path / "partial.json")
    window.open_session(str(tmp_path / "partial.json"))
    view = window.size_view
    window.bottom_tabs.setCurrentWidget(view)
    view.refresh()
    assert view.status.text().startswith("a sweep of 3 sizes, 1 of them simulated"), view.status.text()


def test_an_exported_chart_of_a_sweep_names_the_size_it_plots(window, tmp_path):
    """The charts of a sweep plot one size at a time, and their exported titles did not say which:
    a slide of the smallest size could not be told from one of the largest."""
    path = _sweep(tmp_path / "s.json", budget=3, sizes={"n": [4096, 1 << 20]}, warm=False)
    window.open_session(str(path))
    window.model.show_problem({**window.model.session.problem, "n": 4096})
    assert window.score_chart.export_title().startswith("Score per trial · reduce_sum · n=4096 · ")
    assert window.compare.export_title() == "Best latency per evaluation · reduce_sum · n=4096"
    window.open_session(str(_sweep(tmp_path / "one.json", budget=2, sizes={"n": [4096]})))
    assert "n=" not in window.score_chart.export_title()  # one size: nothing to tell apart


def test_missing_cells_are_measured_in_the_background(window, qtbot, tmp_path):
    path = _sweep(tmp_path / "m.json", budget=4, sizes={"n": [4096, 1 << 26]}, warm=False)
    session = load_session(path)
    rows = size_rows(session)
    if not missing_cells(rows):  # one config won both sizes: forget it at the large size
        winner, large = rows[0].best_config, rows[1].key
        session.trials = [t for t in session.trials
                          if not (t.config == winner and problem_key(session.problem_of(t)) == large)]
        save_session(session, path)
    before = len(load_session(path).trials)
    window.open_session(str(path))
    view = window.size_view
    window.bottom_tabs.setCurrentWidget(view)
    view.refresh()
    assert view.missing, "the fixture sweep should leave cells unmeasured"
    missing = len(view.missing)
    assert view.measure_button.isEnabled() and f"({missing})" in view.measure_button.text()
    with qtbot.waitSignal(window.run_done, timeout=120_000):
        view.measure_button.click()
        assert window.running  # the click returned at once: the measuring runs in the engine thread
    window.refresh()
    view.refresh()
    assert view.missing == []
    assert not np.isnan(view.matrix).any()
    assert len(window.model.session.trials) == before + missing
    assert all(math.isfinite(view.matrix[i, j]) for i in range(2) for j in range(2))


def test_start_on_a_reopened_unfinished_sweep_finishes_its_sizes(window, qtbot, tmp_path):
    path = tmp_path / "part.json"
    run = start_run(RunRequest(kernel="reduce_sum", backend="sim", strategy="random", budget=3,
                               sizes={"n": [4096, 1 << 20, 1 << 26]}), path)
    seen = []

    def stop_in_second_size(event) -> None:
        if type(event).__name__ == "TrialFinished":
            seen.append(event)
            if len(seen) == 4:
                run.stop()

    run.subscribe(stop_in_second_size)
    run.run()
    assert [len(g) for g in trials_by_problem(load_session(path)).values()][0] == 3
    window.open_session(str(path))
    assert window.toolbar.sizes.text() == "n=4096,1048576,67108864" and window.toolbar.budget.value() == 3
    assert window.toolbar.sizes.cursorPosition() == 0  # shown from its name, not its tail cut mid-number
    window.size_view.refresh()  # the sizes a stopped sweep lacks are said, not only those it has
    assert window.size_view.status.text().endswith(
        "2 of 3 planned sizes lack evaluations (3 each): n=1048576 has 1, n=67108864 none"), window.size_view.status.text()
    # the swept n is the sizes field's: the session's own n (the template's default) read as a size shown
    assert "n=" not in window.toolbar.problem.text()
    with qtbot.waitSignal(window.run_done, timeout=120_000):
        window.start_run(window.toolbar.request())
    assert [len(g) for g in trials_by_problem(window.model.session).values()] == [3, 3, 3]
    assert [len(g) for g in trials_by_problem(load_session(path)).values()] == [3, 3, 3]
    window.size_view.refresh()
    assert "lack evaluations" not in window.size_view.status.text()


def test_the_window_ranks_one_size_at_a_time_and_follows_a_running_sweep(tmp_path):
    """A ranking across sizes would always recommend the smallest size's config: the model shows one
    size, follows the size a sweep is measuring, and stays on a size the user picked."""
    from workbench.gui.model import SessionModel

    session = load_session(_sweep(tmp_path / "r.json", budget=4))
    by_size = trials_by_problem(session)
    keys = list(by_size)
    model = SessionModel(session)
    assert model.shown_problem() == {**session.problem, "n": 1 << 26}  # the latest size
    assert model.trials == by_size[keys[-1]] and model.ranking.n_ok == 4
    model.show_problem({**session.problem, "n": 4096})
    assert model.trials == by_size[keys[0]]
    best = model.trials[model.ranking.best]
    assert best is min(by_size[keys[0]], key=lambda t: t.metric("latency_ms"))

    # a session growing size by size, as a running sweep's does: the model follows the new size
    growing = load_session(tmp_path / "r.json")
    trials = list(growing.trials)
    growing.trials[:] = trials[:4]
    live = SessionModel(growing)
    assert live.shown_problem() is None and live.n == 4  # one size so far: nothing to pick
    seen: list[str] = []
    live.sizes_changed.connect(lambda: seen.append("sizes"))
    growing.trials.extend(trials[4:8])
    assert live.sync() and live.shown_problem()["n"] == 1 << 20 and live.n == 4 and seen == ["sizes"]
    # once the user picks an earlier size, a new size is announced but not switched to
    live.show_problem({**session.problem, "n": 4096})
    growing.trials.extend(trials[8:])
    assert not live.sync()
    assert live.shown_problem()["n"] == 4096 and live.n == 4 and len(live.problems()) == 3 and seen == ["sizes"] * 2


def test_a_reopened_sweep_shows_the_size_show_and_export_answer_for(tmp_path):
    """The window opened on the last size measured while `show` and `export` answered for the
    session's own problem: three answers to one question."""
    from workbench.gui.model import SessionModel

    base = load_session(_sweep(tmp_path / "a.json", budget=2, sizes={"n": [4096]})).problem["n"]
    session = load_session(_sweep(tmp_path / "b.json", budget=3, sizes={"n": [base, 4096, 1 << 26]}))
    assert SessionModel(session).shown_problem() == dict(session.problem)


def test_a_sweep_with_no_size_answered_opens_on_the_last_size_with_a_feasible_config(tmp_path):
    """One whose last size had nothing feasible (every candidate stopped above a latency limit)
    opened there: every chart empty and "No successful trial", while three sizes had results."""
    from workbench.core.domain.measurement import Measurement, Status, Trial
    from workbench.core.domain.objective import Constraints
    from workbench.core.domain.session import Session
    from workbench.core.domain.space import SearchSpace, Slot
    from workbench.gui.model import SessionModel

    space = SearchSpace([Slot("block", (32, 64))])
    session = Session(kernel="k", kind="recording", space=space, device={"name": "GPU X"}, problem={"n": 1},
                      constraints=Constraints(max_latency_ms=5.0))
    for n, latency in ((2, 1.0), (3, 2.0), (4, 9.0)):  # n=4: only over the limit
        for block in (32, 64):
            session.add(Trial(len(session.trials), space.config({"block": block}),
                              Measurement(Status.OK, {"latency_ms": latency}), problem={"n": n}))
    assert SessionModel(session).shown_problem() == {"n": 3}
    session.constraints = Constraints()  # all feasible: the last size added, as before
    assert SessionModel(session).shown_problem() == {"n": 4}


def test_the_size_picker_switches_what_the_window_recommends(window, qtbot, tmp_path):
    path = _sweep(tmp_path / "p.json", budget=4)
    window.open_session(str(path))
    picker = window.size_picker
    assert picker.isVisibleTo(window) and picker.count() == 3
    assert picker.currentText() == "size: n=67108864"
    # none of the sizes is the session's own problem (show and export name no size): said on opening
    assert window.model.session.problem["n"] not in (4096, 1 << 20, 1 << 26)
    assert "a sweep of 3 sizes: showing n=67108864" in window.statusBar().currentMessage()
    # another file opened within its 15 s: the sweep's line is not said of it
    other = tmp_path / "one_size.json"
    start_run(RunRequest(kernel="vector_add", backend="sim", strategy="random", budget=2,
                         backend_options={"compile": "estimate"}), other).run()
    window.open_session(str(other))
    assert "a sweep of" not in window.statusBar().currentMessage()
    window.open_session(str(path))
    window.new_session()  # (nor of an empty window)
    assert "a sweep of" not in window.statusBar().currentMessage()
    window.open_session(str(path))
    picker.setCurrentIndex(0)
    picker.activated.emit(0)
    assert window.model.shown_problem()["n"] == 4096
    # the source pane shows the size's recommendation, as the card does (it said "Select a trial")
    assert window.model.selected == window.model.ranking.best is not None
    shown = window.model.trials
    out = tmp_path / "best.json"
    window.export_best(str(out))  # exports the recommendation at the size shown
    import json

    best = min((t for t in shown if t.ok), key=lambda t: t.metric("latency_ms"))
    exported = json.loads(out.read_text())
    assert exported["config"] == best.config.to_dict()
    # and says what it leaves out, as the command line's export of one size does
    others = len(window.model.session.trials) - len(shown)
    assert any(f"{others} trials at other problem sizes were left out (this export serves "
               f"{window.model.shown_problem()})" in note for note in exported["notes"]), exported["notes"]
    window.model.set_session(load_session(_sweep(tmp_path / "one.json", budget=3, sizes={"n": [4096]})))
    assert not picker.isVisibleTo(window)


def test_the_score_chart_numbers_a_sizes_trials_as_the_table_does(window, qtbot, tmp_path):
    """At one size of a sweep the chart counted 0..9 while the table showed #20..#29: a teacher
    saying "trial 5" pointed at another row than the audience read."""
    window.open_session(str(_sweep(tmp_path / "p.json", budget=4)))
    chart = window.score_chart
    chart.refresh()
    numbers = sorted(t.index for t in window.model.trials)
    assert numbers[0] > 0  # the last size measured: not the session's first trials
    xs = [float(x) for item in (chart.feasible, chart.infeasible, chart.failed) for x in item.xs]
    assert sorted(int(x) for x in xs) == numbers
    line_x = chart.best_line.getData()[0]
    assert min(line_x) >= numbers[0] and max(line_x) == numbers[-1]
    window.model.select(0)
    assert chart.selected_item.xs[0] == window.model.trials[0].index


def _cli_sweep(cli, path: Path, budget: int = 6) -> Path:
    """vector_add swept over two sizes, neither of them the template's own problem size."""
    done = cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--sizes", "n=4096,1048576",
               "--budget", budget, "--strategy", "random", "--executor", "inline", "--quiet", "--out", path)
    assert done.returncode == 0, done.stderr
    return path


def test_source_and_compare_render_a_sweep_trial_at_its_own_size(window, cli, tmp_path):
    """Both rendered the kernel at the session's base problem (PROBLEM_N of the template's default),
    not at the size the trial was measured at."""
    window.open_session(_cli_sweep(cli, tmp_path / "sweep.json"))
    base_n = window.model.session.problem["n"]
    trials = window.model.trials
    n = trials[0].problem["n"]
    assert n != base_n and all(t.problem["n"] == n for t in trials)
    window.model.select(0)
    text = window.source_view.editor.toPlainText()
    assert f"#define PROBLEM_N {n}\n" in text and f"PROBLEM_N {base_n}" not in text
    # a pair whose last slot line differs: the diff's context shows the problem line after it
    a, b = next((i, j) for i in range(len(trials)) for j in range(len(trials))
                if trials[i].config["vector_width"] != trials[j].config["vector_width"])
    window.bottom_tabs.setCurrentWidget(window.compare)
    window.compare.set_pair(a, b)
    diff = window.compare.diff.toPlainText()
    assert f"\n #define PROBLEM_N {n}" in diff and f"PROBLEM_N {base_n}" not in diff, diff
    # the diff's tab says how much differs (the file names' lines are not changes)
    lines = diff.splitlines()[2:]
    removed, added = (sum(1 for line in lines if line.startswith(sign)) for sign in "-+")
    assert removed >= 2 and window.compare.pair.tabText(1) == f"Source diff (-{removed} +{added} lines)", diff
    window.compare.set_pair(a, a)
    assert window.compare.pair.tabText(1) == "Source diff (same)"


def test_measured_cells_at_a_size_not_shown_fill_the_view_in(window, qtbot, cli, tmp_path):
    """The model told views only of trials at the size shown: cells measured at another size left
    the view saying "1 cells not measured" (and the button enabled) until the session was reopened."""
    path = _cli_sweep(cli, tmp_path / "sweep.json")
    session = load_session(path)
    rows = size_rows(session)
    small, large = rows[0], rows[1]
    if not missing_cells(rows):  # the large size's winner was measured small too: forget it there
        session.trials = [t for t in session.trials if not (t.config == large.best_config
                                                            and problem_key(session.problem_of(t)) == small.key)]
        save_session(session, path)
    window.open_session(path)
    view = window.size_view
    window.bottom_tabs.setCurrentWidget(view)
    assert window.model.shown_problem() == dict(large.problem)
    missing = [problem for problem, _config in view.missing]
    assert missing and all(dict(p) == dict(small.problem) for p in missing), view.missing  # none at the size shown
    before = len(window.model.session.trials)
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        view.measure_button.click()
    assert len(window.model.session.trials) == before + len(missing)
    qtbot.waitUntil(lambda: "no cell left to simulate" in view.status.text(), timeout=5_000)
    assert view.measure_button.text() == "Simulate missing" and not view.measure_button.isEnabled()


def test_a_matrix_too_large_for_numbers_in_its_cells_is_drawn_without_them(window, tmp_path):
    """Every cell got a text item on every redraw, however small the cells: a sweep of 128 sizes
    (16,384 items) took about a minute to show its tab, 256 sizes did not finish in five. The items
    are made only while a number fits its cell; the colours still tell."""
    import dataclasses

    small = load_session(_sweep(tmp_path / "few.json", budget=3))
    first = next(iter(trials_by_problem(small).values()))
    base = dict(small.problem_of(first[0]))
    trials = [dataclasses.replace(t, index=k * len(first) + i, problem={**base, "n": 4096 + 256 * k})
              for k in range(64) for i, t in enumerate(first)]
    many = dataclasses.replace(small, trials=trials)
    save_session(many, tmp_path / "many.json")
    window.open_session(str(tmp_path / "many.json"))
    view = window.size_view
    window.bottom_tabs.setCurrentWidget(view)
    view.refresh()
    assert len(view.rows) == 64 and np.isfinite(view.matrix).all()
    assert view._cell_text == []
    assert len(view.matrix_plot.getViewBox().addedItems) < 50
    # a sweep of a few sizes keeps its numbers
    window.open_session(str(tmp_path / "few.json"))
    view.refresh()
    assert len(view._cell_text) == 9


def test_each_matrix_cell_says_in_words_what_it_shows(window, tmp_path):
    """Hovering a cell names the row's config, the column's size and the value: the only way to
    read a cell too small for its number."""
    path = _sweep(tmp_path / "s.json", budget=4)
    window.open_session(str(path))
    view = window.size_view
    window.bottom_tabs.setCurrentWidget(view)
    view.refresh()
    first = view.rows[0].label
    assert view.cell_tip(0, 0).startswith(f"best config of {first} (#")
    assert view.cell_tip(0, 0).endswith(f" at {first}: 100.0% of that size's optimum")
    view.matrix[0, 1] = np.nan
    # a simulated sweep's cells are predictions, and its words say so (a teacher's audience reads them)
    assert "not simulated there (Simulate missing simulates it)" in view.cell_tip(0, 1)
    assert view.matrix_plot.getAxis("bottom").labelText.startswith("simulated at")
    assert view.measure_button.text().startswith("Simulate missing")
    view.matrix[0, 1] = 0.0
    assert "failed or misses the constraints there" in view.cell_tip(0, 1)
    window.model.session.device = {"name": "A100", "recorded": True}  # measured on a GPU: measured
    view.refresh()
    view.matrix[0, 1] = np.nan
    assert "not measured there (Measure missing measures it)" in view.cell_tip(0, 1)
    assert view.matrix_plot.getAxis("bottom").labelText.startswith("measured at")
    assert view.measure_button.text().startswith("Measure missing")
    view.invalid = {(0, 1)}
    assert "not a valid config there" in view.cell_tip(0, 1)
    view.invalid = set()
    assert view.cell_tip(5, 0) == ""
    # the hover sets it as the plot's tool tip
    box = view.matrix_plot.getViewBox()
    view._on_matrix_hover(box.mapViewToScene(pg_point(1.5, 0.5)))
    assert view.matrix_plot.toolTip() == view.cell_tip(0, 1)


def pg_point(x, y):
    from PySide6.QtCore import QPointF

    return QPointF(x, y)


def test_a_cell_just_short_of_its_sizes_optimum_does_not_read_as_the_winner():
    """99.55% printed "100", the diagonal's figure, for a config that does not win at that size."""
    from workbench.gui.size_view import _cell_percent

    assert _cell_percent(0.9955, False) == ">99" and _cell_percent(0.9955, True) == ">99%"
    assert _cell_percent(1.0, False) == "100" and _cell_percent(0.994, False) == "99"
    assert _cell_percent(0.5, True) == "50%"


def test_the_size_picker_lists_a_grid_in_the_sweeps_order(window, tmp_path):
    """--sizes alpha=... --sizes n=... varies alpha slowest, as tune and show list it; the window's
    size box listed the grid by the parameter the template names first (n)."""
    path = tmp_path / "grid.json"
    start_run(RunRequest(kernel="vector_add", backend="sim", strategy="random", budget=1, executor="inline",
                         backend_options={"compile": "estimate"},
                         sizes={"alpha": [1.0, 2.5], "n": [4096, 65536]}), path).run()
    window.open_session(str(path))
    picker = window.size_picker
    assert [picker.itemText(i) for i in range(picker.count())] == [
        "size: alpha=1.0, n=4096", "size: alpha=1.0, n=65536", "size: alpha=2.5, n=4096", "size: alpha=2.5, n=65536"]


def test_the_latency_plots_title_says_its_size_axis_is_linear_when_it_is(window, tmp_path):
    """Sizes of 0 or below are drawn on a linear axis, labelled so, under a title that said "log-log"."""
    path = tmp_path / "alpha.json"
    start_run(RunRequest(kernel="vector_add", backend="sim", strategy="random", budget=2,
                         sizes={"alpha": [-2.5, 0.0, 1.0]}, backend_options={"compile": "estimate"}), path).run()
    window.open_session(str(path))
    view = window.size_view
    window.bottom_tabs.setCurrentWidget(view)
    view.refresh()
    assert view.latency_plot.getAxis("bottom").labelText == "alpha (linear)"
    assert view.latency_title.text() == "<b>Best latency per size (log latency, linear size)</b>"
    window.open_session(str(_sweep(tmp_path / "n.json", budget=2)))
    view.refresh()
    assert view.latency_title.text() == "<b>Best latency per size (log-log)</b>"


def test_sizes_sharing_a_best_config_count_its_missing_cells_and_what_fills_them(window, tmp_path):
    """Two sizes with one best config never measured at the third showed two "?" cells over
    "1 cells not simulated": the count was of measurements, not of the cells shown."""
    from workbench.core.domain.measurement import Measurement, Status, Trial
    from workbench.core.domain.session import Session
    from workbench.core.domain.space import SearchSpace, Slot

    space = SearchSpace([Slot("block", (32, 64))])
    session = Session(kernel="k", kind="recording", space=space, device={"name": "GPU X"}, problem={"n": 1})
    measured = {1: {32: 1.0}, 2: {32: 1.0, 64: 0.5}, 3: {32: 2.0, 64: 1.0}}
    for n, latencies in measured.items():
        for block, latency in latencies.items():
            session.add(Trial(len(session.trials), space.config({"block": block}),
                              Measurement(Status.OK, {"latency_ms": latency}), problem={"n": n}))
    save_session(session, tmp_path / "s.json")
    window.open_session(str(tmp_path / "s.json"))
    view = window.size_view
    window.bottom_tabs.setCurrentWidget(view)
    view.refresh()
    assert int(np.isnan(view.matrix).sum()) == 2 and len(view.missing) == 1
    assert view.status.text().endswith("2 distinct winning configs; worst cross-size fraction 50%; "
                                       "2 cells not measured; 1 to measure (sizes with the same best config share it)")
    # across the pane under the title and the button: squeezed between them it wrapped to four lines
    assert view.status.width() > 0.9 * view.width() and view.status.y() > view.measure_button.y()


def test_cells_no_measurement_can_fill_are_not_counted_as_missing(window, tmp_path):
    """A size whose every trial failed has no best config and no optimum: its row cannot be
    filled, and counting it said "5 cells not measured" beside a disabled button. Its column can:
    a config measured there failed there (0 %, not "never measured"), and another size's best not
    yet measured there may work."""
    from workbench.core.domain.measurement import Measurement, Status, Trial
    from workbench.core.domain.session import Session
    from workbench.core.domain.space import SearchSpace, Slot

    space = SearchSpace([Slot("block", (32, 64))])
    session = Session(kernel="k", kind="recording", space=space, device={"name": "GPU X"}, problem={"n": 1})
    for n, block, latency in ((1, 32, 1.0), (1, 64, 2.0), (2, 32, 1.0), (2, 64, 0.5), (3, 32, None)):
        m = Measurement(Status.OK, {"latency_ms": latency}) if latency else Measurement.failure(Status.RUNTIME_ERROR, "x")
        session.add(Trial(len(session.trials), space.config({"block": block}), m, problem={"n": n}))
    save_session(session, tmp_path / "s.json")
    window.open_session(str(tmp_path / "s.json"))
    view = window.size_view
    window.bottom_tabs.setCurrentWidget(view)
    view.refresh()
    assert len(view.rows) == 3 and int(np.isnan(view.matrix).sum()) == 4
    assert view.matrix[0, 2] == 0.0  # block 32, n=1's best, failed at n=3
    assert [(dict(p), c["block"]) for p, c in view.missing] == [({"n": 3}, 64)]
    assert view.status.text().endswith("1 cell not measured")
    # the worst fraction is between sizes that have a best (at n=3 every config is 0 %), and the
    # size left out is named (its red 0 % column read as a poor config, where show says it)
    assert "worst cross-size fraction 50% (n=3: nothing feasible, left out); " in view.status.text()
    texts = [item.textItem.toPlainText() for item in view._cell_text]
    assert len(texts) == 9 and texts[6:] == ["", "", ""]  # the row of the size with no best is empty, not "?"
    assert texts[2] == "0%" and texts[5] == "?"


def test_grid_sizes_with_nothing_feasible_are_told_apart_in_the_status(window, tmp_path):
    """A size of a grid is "rows=2, cols=1": listed with commas (or the status line's own
    semicolons) the sizes read as one list of parameters, or as parts of the line."""
    from workbench.core.domain.measurement import Measurement, Status, Trial
    from workbench.core.domain.session import Session
    from workbench.core.domain.space import SearchSpace, Slot

    space = SearchSpace([Slot("block", (32, 64))])
    session = Session(kernel="k", kind="recording", space=space, device={"name": "GPU X"},
                      problem={"rows": 1, "cols": 1})
    for rows, cols in ((1, 1), (1, 2), (2, 1), (2, 2)):
        m = Measurement(Status.OK, {"latency_ms": 1.0}) if (rows, cols) == (1, 1) else \
            Measurement.failure(Status.RUNTIME_ERROR, "x")
        session.add(Trial(len(session.trials), space.config({"block": 32}), m, problem={"rows": rows, "cols": cols}))
    save_session(session, tmp_path / "s.json")
    window.open_session(str(tmp_path / "s.json"))
    view = window.size_view
    window.bottom_tabs.setCurrentWidget(view)
    view.refresh()
    assert "; (rows=1, cols=2), (rows=2, cols=1), (rows=2, cols=2): nothing feasible; " in view.status.text(), \
        view.status.text()

def test_start_on_a_reopened_sweep_says_the_charts_show_one_size() -> None:
    """It said "the charts show them all" of a sweep, whose charts show the trials of one size."""
    from workbench.gui.window_runs import _continued_note

    assert _continued_note(45, "agents", "agents", 3) == (
        "continuing this session: 45 trials so far; the charts show every run's trials at the size shown (of 3); "
        "File > New session starts a fresh one")
    assert "the charts show them all" in _continued_note(10, "agents", "agents")


def test_the_sizes_status_says_which_sizes_ended_by_their_own_rule(window, tmp_path):
    """A sweep run with --patience ends each size on its plateau: the tab said nothing of why they
    are short of the plan's evaluations (and called them unfinished before the plan kept it)."""
    path = tmp_path / "s.json"
    run = start_run(RunRequest(kernel="reduce_sum", backend="sim", strategy="random", budget=40, patience=2,
                               sizes={"n": [4096, 1 << 20]}, executor="inline"), path)
    run.run()
    window.open_session(path)
    window.size_view.refresh()
    text = window.size_view.status.text()
    assert "2 sizes ended before their 40 evaluations, by their own rule: n=4096 at " in text, text
    assert "(plateau)" in text and "lack evaluations" not in text


@pytest.mark.parametrize("size, shown", [("1000000", "1M"), ("999500", "1M"), ("1033975", "1.03M"), ("5000000", "5M"),
                                         ("100000", "100k"), ("5000", "5000"), ("65536", "2¹⁶"), ("2500000000", "2.5G")])
def test_a_size_tick_reads_as_a_person_writes_the_size(size, shown):
    """Sizes around a million read "1e+03k": a number was put in k while it was under ten millions."""
    from workbench.gui.size_view import tick_label

    assert tick_label(size) == shown


def test_a_sweep_whose_sizes_were_added_later_shows_them_in_order_of_size(window, tmp_path):
    """A size added with --resume --sizes is appended to the plan: the sizes field read
    ``n=4096,1048576,64`` after 64 was added."""
    path = _sweep(tmp_path / "s.json", budget=2, sizes={"n": [4096, 1 << 20]})
    session = load_session(path)
    session.extra["sweep"]["sizes"]["n"].append(64)
    save_session(session, path)
    window.open_session(str(path))
    assert window.toolbar.sizes.text() == "n=64,4096,1048576"


def test_a_picture_of_the_sizes_tab_after_a_run_shows_the_run(window, qtbot):
    """Built before the run (``gui --run ... --tab sizes --screenshot``), the tab refreshes on a
    timer after the last trial, and the picture, taken once the views settled, read "no session"."""
    window.show_tab("sizes")
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 3,
                          "options": {"compile": "estimate"}})
    window.settle_views()
    assert "no session" not in window.size_view.status.text()
    assert "one problem size" in window.size_view.status.text(), window.size_view.status.text()


def test_sizes_that_differ_in_a_switch_have_names_and_series_of_their_own(window, tmp_path):
    """The size box listed a sweep over n and a switch as ``n=4096`` twice, and the size view drew
    both switch values as one series with two points at each n."""
    import json

    path = tmp_path / "switch.json"
    start_run(RunRequest(kernel="vector_add", backend="sim", strategy="random", budget=2, executor="inline",
                         backend_options={"compile": "estimate"}, sizes={"n": [4096, 65536]}), path).run()
    data = json.loads(path.read_text())
    data["problem"]["fast"] = False
    for i, record in enumerate(data["trials"]):
        record["problem"] = {**record["problem"], "fast": i % 2 == 1}
    path.write_text(json.dumps(data))
    window.open_session(str(path))
    picker = window.size_picker
    assert [picker.itemText(i) for i in range(picker.count())] == [
        "size: n=4096, fast=false", "size: n=4096, fast=true", "size: n=65536, fast=false", "size: n=65536, fast=true"]
    picker.setCurrentIndex(1)
    picker.activated.emit(1)
    assert window.model.shown_size_label() == "n=4096, fast=true"
    view = window.size_view
    window.bottom_tabs.setCurrentWidget(view)
    view.refresh()
    assert view.layout_.series_labels == ("fast=false", "fast=true")
    # the matrix's ticks write the switch as its name does (they read "2¹²×False")
    assert [t for _, t in view.matrix_x.categories] == ["2¹²×false", "2¹²×true", "2¹⁶×false", "2¹⁶×true"]
