"""The real window, driven like a user: runs through the engine (candidates evaluated in this
process, see tests/gui/conftest.py), sliders, a dragged constraint line, a clicked point,
save / reopen, failures, and closing during a run."""

from __future__ import annotations

import html
import math
from pathlib import Path

import numpy as np
import pytest

from workbench.core.errors import WorkbenchError
from PySide6.QtCore import QEvent, QPoint, QPointF, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from workbench.core.domain.measurement import Status
from workbench.core.domain.session import load_session

BENCH = str(Path(__file__).with_name("gui_bench.py"))
SLOW = str(Path(__file__).parents[1] / "fixtures" / "slow_bench.py")


def run_bench(window, qtbot, budget=40, seed=0, strategy="random", kernel=BENCH, timeout_ms=60_000, **extra):
    with qtbot.waitSignal(window.run_done, timeout=timeout_ms) as blocker:
        window.start_run({"kernel": kernel, "backend": "python", "strategy": strategy, "budget": budget,
                          "seed": seed, **extra})
    return blocker.args[0]


def expected_best(trials, max_latency=math.inf, max_memory=math.inf):
    """The objective, by hand: feasible = ok and within limits; best = lowest latency (default weights)."""
    feasible = [t for t in trials if t.ok and t.metric("latency_ms") <= max_latency and t.metric("memory_mb") <= max_memory]
    best = min(feasible, key=lambda t: (t.metric("latency_ms"), t.index)) if feasible else None
    return len(feasible), best


def view_to_widget(chart, x, y) -> QPoint:
    scene = chart.plot.getPlotItem().vb.mapViewToScene(QPointF(x, y))
    return chart.plot.mapFromScene(scene)


def mouse_drag(view, start: QPoint, end: QPoint, steps: int = 8) -> None:
    """Press, move with the left button held (QTest.mouseMove carries no buttons), release."""
    viewport = view.viewport()
    QTest.mousePress(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start)
    for k in range(1, steps + 1):
        p = QPointF(start + (end - start) * (k / steps))
        move = QMouseEvent(QEvent.Type.MouseMove, p, QPointF(viewport.mapToGlobal(p.toPoint())),
                           Qt.MouseButton.NoButton, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
        QApplication.sendEvent(viewport, move)
    QTest.mouseRelease(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, end)


def test_run_fills_every_view_and_failure_log(window, qtbot):
    result = run_bench(window, qtbot, budget=40)
    assert result.reason == "budget"
    model = window.model
    assert model.n == 40 == len(model.session.trials)
    assert window.results.table_model.rowCount() == 40
    failed = [t for t in model.trials if not t.ok]
    assert failed and all(t.status is Status.RUNTIME_ERROR for t in failed)
    assert all(t.config["unroll"] == 16 and t.config["vec"] == 4 for t in failed)
    # the failure log lists exactly the failures, counts them per status, and names the broken corner
    window.failures.refresh()
    assert window.failures.proxy.rowCount() == len(failed)
    assert f"runtime_error: <b>{len(failed)}</b>" in window.failures.counts.text()
    concentration = window.failures.concentration.text()
    assert "unroll=16" in concentration and "vec=4" in concentration
    window.failures.status_combo.setCurrentText("timeout")
    assert window.failures.proxy.rowCount() == 0
    # selecting a failure shows its full log
    window.failures.status_combo.setCurrentText("runtime_error")
    window.failures.view.setCurrentIndex(window.failures.proxy.index(0, 0))
    assert "too many resources requested" in window.failures.log.toPlainText()
    # charts hold every ok point once, failures on the score chart
    n_feasible, best = expected_best(model.trials)
    assert len(window.tradeoff_chart.feasible.data) == n_feasible
    assert len(window.score_chart.failed.data) == len(failed)
    assert model.ranking.best == model.trials.index(best)
    assert f"<b>block_size</b> = {best.config['block_size']}" in window.best_card.text()
    assert "SIMULATED" not in window.timing_badge.text()
    # the importance tab computes when shown; choosing a slot there sets the Explore chart's x axis
    window.bottom_tabs.setCurrentIndex(2)
    window.importance.refresh()
    qtbot.waitUntil(lambda: not window.importance.computing, timeout=30_000)  # computed off the GUI thread
    shares = window.importance.shares
    assert set(shares) == {"block_size", "unroll", "vec"} and sum(shares.values()) == pytest.approx(1.0)
    window.importance.select_slot("unroll")
    assert window.metric_chart.axes()[0] == "slot:unroll"


def test_the_failure_log_says_there_is_nothing_to_select_when_nothing_failed(window) -> None:
    """With no failure the log pane asked to "select a failure" from an empty table."""
    from workbench.core.domain.measurement import Measurement, Trial
    from workbench.core.domain.session import Session
    from workbench.core.domain.space import SearchSpace, Slot

    window.failures.refresh()
    assert window.failures.log.placeholderText() == "no trials yet"
    space = SearchSpace([Slot("block_size", (32, 64, 128))])
    session = Session(kernel="k", kind="recording", space=space, device={"name": "GPU X"})
    for i, config in enumerate(space):
        session.add(Trial(i, config, Measurement(Status.OK, {"latency_ms": 1.0 + i})))
    window.model.set_session(session)
    window.failures.refresh()
    assert window.failures.log.placeholderText() == "no failed trial among 3"
    session.add(Trial(3, space.config({"block_size": 32}), Measurement.failure(Status.COMPILE_ERROR, "error: x")))
    window.model.set_session(session)
    window.failures.refresh()
    assert window.failures.log.placeholderText().startswith("select a trial")
    window.failures.status_combo.setCurrentText("timeout")  # the filter lists none: it says so
    assert window.failures.log.placeholderText() == "no timeout trial among 4"


def test_sliders_rerank_as_the_objective_says(window, qtbot):
    run_bench(window, qtbot, budget=40)
    model = window.model
    trials = model.trials
    _, best = expected_best(trials)
    # a memory limit just under the current best's memory must change the recommendation
    limit = best.metric("memory_mb") - 0.5
    control = window.objective_panel.limits["max_memory_mb"]
    control.enabled.setChecked(True)
    control.spin.setValue(limit)
    assert model.constraints.max_memory_mb == pytest.approx(limit)
    n_feasible, new_best = expected_best(trials, max_memory=limit)
    assert model.ranking.n_feasible == n_feasible
    assert trials[model.ranking.best].config == new_best.config != best.config
    assert f"<b>{n_feasible}</b> feasible" in window.objective_panel.feasible_label.text()
    assert f"<b>vec</b> = {new_best.config['vec']}" in window.best_card.text()
    # the slider itself: dragging it to the far left (tightest latency) leaves nothing feasible
    latency = window.objective_panel.limits["max_latency_ms"]
    latency.slider.setValue(0)
    assert latency.enabled.isChecked()
    tightest = latency.dragged(0)  # the slider's point, to the figures the box shows
    assert model.constraints.max_latency_ms == tightest and latency.spin.text() == f"{tightest:g}"
    assert model.ranking.n_feasible == expected_best(trials, tightest, limit)[0] == 0
    assert "Nothing is feasible" in window.best_card.text()
    # the latency limit excludes the most, the memory limit some too: relaxing latency alone is not enough
    memory = next(name for name in model.ranking.excluded_by if name.startswith("memory"))
    assert model.ranking.most_excluding.startswith("latency_ms")
    also = f"<b>{html.escape(model.ranking.shown(memory))}</b> excludes {model.ranking.excluded_by[memory]} too."
    assert also in window.best_card.text() and "Relax them" in window.best_card.text()
    # every point grey: the latency-vs-memory chart says which constraint did it
    window.tradeoff_chart.refresh()
    assert window.tradeoff_chart.no_data.isVisible()
    assert "excludes" in window.tradeoff_chart.no_data.textItem.toPlainText()
    # the narrow score chart says it in short (the whole reason ran past its top), pointing to the card
    window.score_chart.refresh()
    short = window.score_chart.no_data.textItem.toPlainText()
    assert short.startswith("no feasible config among ") and short.endswith("(the Recommended card says why)")
    assert "excludes" not in short
    # the chart limit line follows the slider
    assert window.tradeoff_chart.log_x  # latency on a log axis by default: the line sits at log10(limit)
    assert 10 ** window.tradeoff_chart.latency_line.value() == pytest.approx(tightest)
    latency.enabled.setChecked(False)
    assert model.constraints.max_latency_ms is None
    window.tradeoff_chart.refresh()
    assert not window.tradeoff_chart.no_data.isVisible()
    # a constraint on any metric, typed: quality >= 0.99 excludes unroll >= 8 (quality = 1 - 0.002 * unroll)
    panel = window.objective_panel
    panel.set_extra_text("quality >= 0.99, quality >= 0.98, throughput_gbs >= 0.001")
    ok = [t for t in trials if t.ok and t.metric("memory_mb") <= limit]
    assert model.ranking.n_feasible == sum(1 for t in ok if t.metric("quality") >= 0.99)
    assert all(trials[i].config["unroll"] < 8 for i in model.ranking.order)
    # a typed bound a named limit states is that limit (the tightest typed), in its box and chart line
    quality = panel.limits["min_quality"]
    assert model.constraints.min_quality == 0.99 and quality.enabled.isChecked() and quality.spin.value() == 0.99
    assert panel.extra_edit.text() == "throughput_gbs >= 0.001"
    panel.set_extra_text("quality >= 0.9")  # looser than the limit in force: every bound still holds
    assert model.constraints.min_quality == 0.99 and panel.extra_edit.text() == ""
    for impossible in ("quality >= 1.5", "memory_mb <= -1"):  # refused, as the command line refuses them
        with pytest.raises(WorkbenchError):
            panel.set_extra_text(impossible)
    assert model.constraints.min_quality == 0.99 and model.constraints.max_memory_mb == limit
    assert model.constraints.extra == ()
    with pytest.raises(Exception):
        panel.set_extra_text("quality ~ 0.99")
    panel.set_extra_text("")
    quality.enabled.setChecked(False)
    assert model.constraints.min_quality is None and model.constraints.extra == ()
    # weights: throughput only ranks by highest throughput
    for metric, slider in window.objective_panel.weight_sliders.items():
        slider.setValue(10 if metric == "throughput_gbs" else 0)
    ok = [t for t in trials if t.ok and t.metric("memory_mb") <= limit]
    top = max(ok, key=lambda t: t.metric("throughput_gbs"))
    assert trials[model.ranking.best].metric("throughput_gbs") == top.metric("throughput_gbs")


def test_dragging_the_latency_line_moves_the_slider(window, qtbot):
    run_bench(window, qtbot, budget=30)
    chart = window.tradeoff_chart
    chart.refresh()
    QApplication.processEvents()
    line = chart.latency_line
    assert not line.isVisible() and not chart.memory_line.isVisible()  # constraints off: no lines
    window.objective_panel.limits["max_latency_ms"].enabled.setChecked(True)
    QApplication.processEvents()
    assert line.isVisible()
    latency = window.model.metric("latency_ms")
    target = float(np.log10(np.nanmedian(latency)))  # view coordinates: the latency axis is log10
    (y0, y1) = chart.plot.getPlotItem().vb.viewRange()[1]
    y = (y0 + y1) / 2
    mouse_drag(chart.plot, view_to_widget(chart, line.value(), y), view_to_widget(chart, target, y))
    limit = window.model.constraints.max_latency_ms
    assert limit is not None
    (x0, x1) = chart.plot.getPlotItem().vb.viewRange()[0]
    assert abs(np.log10(limit) - target) < (x1 - x0) / 100  # within a pixel or so
    control = window.objective_panel.limits["max_latency_ms"]
    assert control.enabled.isChecked() and control.spin.value() == pytest.approx(limit, rel=1e-3)
    n_feasible, _ = expected_best(window.model.trials, max_latency=limit)
    assert window.model.ranking.n_feasible == n_feasible


def test_clicking_a_point_selects_it_in_table_and_source(window, qtbot):
    run_bench(window, qtbot, budget=30)
    chart = window.tradeoff_chart
    chart.refresh()
    QApplication.processEvents()
    point = chart.feasible.points()[3]
    index = int(point.data())
    pos = view_to_widget(chart, point.pos().x(), point.pos().y())
    QTest.mouseClick(chart.plot.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, pos)
    clicked = window.model.selected
    assert clicked is not None
    trial = window.model.trials[clicked]
    # a click may land on an overlapping point: it must be one at that position
    assert trial.metric("latency_ms") == pytest.approx(window.model.trials[index].metric("latency_ms"))
    assert window.results.selected_row() == clicked
    assert trial.config.id in window.source_view.header.text()
    assert "def measure" in window.source_view.editor.toPlainText()
    assert window.source_view.marked_count() > 0
    tip = window.tradeoff_chart._tip(0.0, 0.0, clicked)  # what hovering the point shows
    assert trial.config.id in tip and "latency (ms)" in tip and f"unroll={trial.config['unroll']}" in tip
    # and the other way round: a table row selects the point
    proxy = window.results.proxy
    window.results.view.setCurrentIndex(proxy.index(5, 0))
    row = proxy.mapToSource(proxy.index(5, 0)).row()
    assert window.model.selected == row
    assert window.tradeoff_chart.selected_item.data.size in (0, 1)


def test_save_reopen_and_continue(window, qtbot, tmp_path):
    run_bench(window, qtbot, budget=25)
    window.model.set_constraints(max_latency_ms=2.0)
    path = tmp_path / "run.json"
    assert window.save_to(path)
    before = [(t.config.id, t.status, dict(t.measurement.metrics)) for t in window.model.trials]
    best_before = window.model.ranking.best
    window.new_session()
    assert window.model.session is None
    window.open_session(path)
    after = [(t.config.id, t.status, dict(t.measurement.metrics)) for t in window.model.trials]
    assert after == before
    assert window.model.constraints.max_latency_ms == 2.0
    assert window.model.ranking.best == best_before
    assert window.objective_panel.limits["max_latency_ms"].spin.value() == pytest.approx(2.0)
    assert str(path.resolve()) in window.recent_files()
    # continue: 10 more evaluations, none of the 25 measured again
    run_bench(window, qtbot, budget=10)
    ids = [t.config.id for t in window.model.trials]
    assert len(ids) == 35 == len(set(ids))
    assert window.save_to(path)
    assert len(load_session(path).trials) == 35


def test_replayed_session_is_labelled_and_exports(window, qtbot, tmp_path):
    run_bench(window, qtbot, budget=20)
    recording = tmp_path / "rec.json"
    window.save_to(recording)
    window.new_session()
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({"backend": "replay", "replay": str(recording), "strategy": "grid", "budget": 50,
                          "delay_s": 0.01})  # demo mode: played back as if live
    assert window.model.n == 20  # the recording's points, each once
    assert "REPLAY" in window.timing_badge.text()
    for key in ("score", "tradeoff", "metric"):
        for suffix in ("png", "svg"):
            out = tmp_path / f"{key}.{suffix}"
            window.export_chart(key, str(out))
            assert out.stat().st_size > 1000


def test_closing_during_a_run_loses_nothing(window, qtbot, monkeypatch):
    monkeypatch.setenv("WORKBENCH_SLOW_S", "0.05")
    window.start_run({"kernel": SLOW, "backend": "python", "strategy": "grid", "budget": 400})
    engine = window.engine_thread.engine
    qtbot.waitUntil(lambda: window.model.n >= 5, timeout=30_000)  # the views fill live, before the end
    assert window.results.table_model.rowCount() == window.model.n
    window.toolbar.pause.click()
    assert engine.paused and window.toolbar.pause.text() == "Resume"
    window.toolbar.pause.click()
    assert not engine.paused and window.toolbar.pause.text() == "Pause"
    autosave = window.autosave_path
    assert window.close()
    assert not window.running
    finished = list(engine.session.trials)
    assert 5 <= len(finished) < 400
    saved = load_session(autosave)
    assert [t.config.id for t in saved.trials] == [t.config.id for t in finished]
    from workbench.gui.main_window import MainWindow

    later = MainWindow(interactive=False, settings=window.settings)  # the next start offers it
    qtbot.addWidget(later)
    assert later.recoverable()[0] == autosave


def test_the_progress_count_moves_with_the_rows_it_counts(window, qtbot, monkeypatch):
    """Progress was shown as each event arrived while the table took trials on the refresh tick, so
    mid-run the count read one ahead of the rows. Both now move on the tick."""
    monkeypatch.setenv("WORKBENCH_SLOW_S", "0.05")
    window.start_run({"kernel": SLOW, "backend": "python", "strategy": "random", "budget": 400})
    qtbot.waitUntil(lambda: window.model.n >= 2, timeout=30_000)
    window._timer.stop()  # no tick: the trials that finish now are in the session, not yet shown
    shown = window.results.table_model.rowCount()
    counted: list[object] = []
    window.engine_thread.progress.connect(counted.append)
    qtbot.waitUntil(lambda: len(counted) >= 4, timeout=30_000)  # two more trials at least
    assert window.toolbar.progress.value() <= shown  # not counted before they are shown
    window.refresh()  # the tick: rows and count together (a trial may land between the engine's last
    # event and this sync, so its row can be shown one event before it is counted, never after)
    assert shown < window.toolbar.progress.value() <= window.results.table_model.rowCount() == window.model.n
    window._timer.start()
    window.stop_run()
    assert window.wait_for_run(30)


def test_moving_a_constraint_during_a_run_retargets_the_search(window, qtbot, monkeypatch):
    monkeypatch.setenv("WORKBENCH_SLOW_S", "0.05")
    window.start_run({"kernel": SLOW, "backend": "python", "strategy": "agents", "budget": 400})
    engine = window.engine_thread.engine.engine  # the run controller's Run holds the engine
    qtbot.waitUntil(lambda: window.model.n >= 3, timeout=30_000)
    window.model.set_constraints(max_latency_ms=60.00004870452495)  # what the slider does
    qtbot.waitUntil(lambda: engine.objective is not None and engine.objective.max_latency_ms == 60.00004870452495,
                    timeout=10_000)
    assert engine.strategy.objective is engine.objective  # the strategy ranks by it from the next proposal
    # and the window says so, a limit as every output writes it (in digits that read back as it): a
    # change mid-run is not only a re-ranking of what was measured
    assert window.statusBar().currentMessage() == ("the running search follows the new objective from its next "
                                                   "proposal: latency_ms <= 60.00004870452495; score latency_ms 100%")
    with qtbot.waitSignal(window.run_done, timeout=30_000):
        window.stop_run()
    assert window.statusBar().currentMessage() == ""  # it spoke of a search no longer running


def test_a_pareto_run_stays_one_when_a_constraint_moves(window, qtbot, monkeypatch, cli, tmp_path):
    """Re-targeting built an objective of constraints and weights alone: a slider turned a
    multi-objective search into a single-score one, which no longer searched the front."""
    bench = tmp_path / "two.py"
    bench.write_text("import time\nSPACE = {'i': list(range(400))}\n"
                     "def measure(c):\n    time.sleep(0.05)\n"
                     "    return {'latency_ms': 100.0 - c['i'] % 50, 'memory_mb': 1.0 + c['i'] % 7}\n")
    path = tmp_path / "pareto.json"
    done = cli("tune", bench, "--objectives", "latency_ms,memory_mb", "--budget", "3",
               "--quiet", "--out", path)
    assert done.returncode == 0, done.stderr
    window.open_session(path)
    window.trusted_code.add(bench.resolve())
    window.start_run({**window.toolbar.request(), "budget": 400})
    run = window.engine_thread.engine
    qtbot.waitUntil(lambda: window.model.n >= 5, timeout=30_000)
    assert run.objective.objectives == ("latency_ms", "memory_mb")
    window.model.set_constraints(max_latency_ms=60.0)
    qtbot.waitUntil(lambda: run.objective.max_latency_ms == 60.0, timeout=10_000)
    assert run.objective.objectives == ("latency_ms", "memory_mb")
    # said as it is: the front is searched; weights (moved next) rank the views only
    window.model.set_weights({"latency_ms": 1.0, "memory_mb": 5.0})
    said = window.statusBar().currentMessage()
    assert "Pareto front of latency_ms, memory_mb" in said and "score" not in said, said
    window.stop_run()
    assert window.wait_for_run(30)
    assert window.model.session.strategy["objectives"] == ["latency_ms", "memory_mb"]


def test_moving_a_constraint_during_a_size_sweep_retargets_it(window, qtbot):
    """Re-targeting read the run's objective, which a sweep did not have: every slider move during
    a sweep raised AttributeError in the slot and the sweep kept its old objective."""
    run = {"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 40, "sizes": {"n": [4096, 65536]},
           "options": {"compile": "estimate"}}
    window.start_run(run)
    sweep = window.engine_thread.engine
    assert type(sweep).__name__ == "SweepRun"
    window.model.set_constraints(max_latency_ms=0.5)  # what the slider does; retarget_run follows
    # the size being measured takes it before its next proposal (in its engine's thread): waited for,
    # as the single-run test does (asserted at once, it failed under load once the size had started)
    qtbot.waitUntil(lambda: sweep.objective is not None and sweep.objective.max_latency_ms == 0.5, timeout=10_000)
    assert window.wait_for_run(60)


def test_a_constraint_moved_as_the_run_ends_is_kept_for_the_views_and_said_not_raised(window, qtbot):
    """The run refuses a new objective once it has ended; a slider moved after the engine ended and
    before the window handled its end raised that refusal out of the slot (a screenshot run exited 1)."""
    window.start_run({"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 2,
                      "options": {"compile": "estimate"}})
    messages: list[str] = []
    window.statusBar().messageChanged.connect(messages.append)
    assert window.engine_thread.wait(60_000)  # the engine ended; its run_finished signal is not handled yet
    assert window.running
    window.model.set_constraints(max_latency_ms=0.5)  # what the slider does
    assert any(m.startswith("the run keeps its objective: the run has ended") for m in messages), messages
    assert window.model.constraints.max_latency_ms == 0.5  # the views rank by it
    assert window.wait_for_run(30)


def test_start_with_another_strategy_says_it_continues_the_open_session(window, qtbot):
    """Picking another strategy and pressing Start added to the same session without a word: a
    teacher comparing random with agents saw one chart of both and one recommendation."""
    run_bench(window, qtbot, budget=6, strategy="random")
    messages = []
    window.statusBar().messageChanged.connect(messages.append)
    run_bench(window, qtbot, budget=4, strategy="grid")
    assert len(window.model.trials) == 10
    said = next(m for m in messages if m.startswith("continuing this session"))
    assert said == ("continuing this session: 6 trials so far with grid (its earlier trials: random); "
                    "the charts show them all; File > New session starts a fresh one")


def test_a_fresh_sessions_start_clears_the_previous_sessions_note(window, qtbot):
    """After a continued run, New session and Start: the status bar kept "continuing this session:
    6 trials so far" over the fresh session's run, which continued nothing."""
    run_bench(window, qtbot, budget=3)
    messages = []
    window.statusBar().messageChanged.connect(messages.append)
    run_bench(window, qtbot, budget=3)  # continues: its note is said, and stays with the count after the run
    assert any(m.startswith("continuing this session: 3 trials so far") for m in messages)
    # (left as it was, "3 trials so far" stood beside the 6 the session holds now)
    assert window.statusBar().currentMessage().startswith("continued this session, 6 trials now; "), messages
    window.new_session()
    run_bench(window, qtbot, budget=3)
    assert len(window.model.trials) == 3
    assert not window.statusBar().currentMessage().startswith(("continuing this session", "continued this session"))


def test_a_fresh_sessions_own_note_stays_when_it_repeats_the_last_ones(window, qtbot, tmp_path):
    """Clearing what was on show when Start was pressed also cleared the fresh session's own note
    when it said the same ("no reference given", shown again by the same template's new session)."""
    import copy
    import json

    from workbench.core.domain.kernel_spec import SPEC_SUFFIX, save_template_folder

    example = Path(__file__).resolve().parents[2] / "docs" / "examples" / "saxpy"
    spec = dict(json.loads((example / f"saxpy{SPEC_SUFFIX}").read_text()), reference={"kind": "none"})
    folder = save_template_folder(tmp_path / "mine", copy.deepcopy(spec), (example / "saxpy.cu").read_text()).parent
    run = {"kernel": "saxpy", "backend": "sim", "kernel_dirs": [str(folder)], "strategy": "random", "budget": 2,
           "options": {"compile": "estimate"}}
    for _ in range(2):
        with qtbot.waitSignal(window.run_done, timeout=60_000):
            window.start_run(run)
        assert "no reference given" in window.statusBar().currentMessage()
        window.new_session()


def test_what_the_save_question_said_stays_when_the_new_session_starts(window, qtbot, monkeypatch):
    """Clearing the old session's note after the save question also cleared that question's own
    warning: an autosave that could not be removed, which the person must remove by hand."""
    from PySide6.QtWidgets import QMessageBox

    from workbench.runner import autosave

    run = {"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 2,
           "options": {"compile": "estimate"}}
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run(run)
    window.interactive = True  # asked about the unsaved trials, answered Discard
    monkeypatch.setattr(QMessageBox, "question", staticmethod(lambda *a, **k: QMessageBox.StandardButton.Discard))
    monkeypatch.setattr(autosave, "discard", lambda path, held=None: f"autosave {path.name} kept: remove it by hand")
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({**run, "kernel": "gelu"})
    window.interactive = False
    assert "kept: remove it by hand" in window.statusBar().currentMessage()


def test_a_run_continuing_a_saved_file_leaves_it_saved(window, qtbot, tmp_path):
    """The run writes every trial, and the objective, into the session's own file; the title kept
    its unsaved ``*`` after it, and closing would have asked to save what was saved. An objective
    changed after the run ended is not in the file: the ``*`` comes back."""
    from workbench.core.domain.session import load_session

    run_bench(window, qtbot, budget=3)
    path = tmp_path / "s.json"
    assert window.save_to(path) and not window.windowTitle().endswith("*")
    window.model.set_constraints(max_latency_ms=50.0)  # unsaved: the continuing run saves it
    assert window.windowTitle().endswith(" *")
    run_bench(window, qtbot, budget=2)
    on_disk = load_session(path)
    assert len(on_disk.trials) == 5 and on_disk.constraints.max_latency_ms == 50.0
    assert not window.model.dirty and not window.windowTitle().endswith("*"), window.windowTitle()
    window.model.set_constraints(max_latency_ms=40.0)
    assert window.model.dirty and window.windowTitle().endswith(" *")


def test_continuing_a_file_another_run_extended_counts_its_trials(window, qtbot, tmp_path):
    """The note counted the trials the window had loaded, not those another run had added to the
    file meanwhile (taken in as the run was prepared): "20 so far" where there were 30."""
    from workbench.runner.controller import RunRequest, run_to_end

    path = tmp_path / "s.json"
    run_to_end(RunRequest(kernel="vector_add", backend="sim", executor="inline", budget=4,
                          backend_options={"compile": "estimate"}), path)
    window.open_session(path)
    run_to_end(RunRequest(budget=3, executor="inline"), path, resume=True)  # 7 in the file now
    messages = []
    window.statusBar().messageChanged.connect(messages.append)
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({**window.toolbar.request(), "budget": 2})
    said = next(m for m in messages if m.startswith("continuing this session"))
    assert said.startswith("continuing this session: 7 trials so far"), said

def test_a_run_that_measured_the_whole_space_reads_as_complete(window, qtbot, tmp_path):
    """Twenty evaluations asked of a four-config space ended with the bar at "4 / 20", mostly
    empty, and the budget box offering "16 evals" more of nothing."""
    bench = tmp_path / "four.py"
    bench.write_text("SPACE = {'i': [0, 1, 2, 3]}\n\ndef measure(config):\n    return {'latency_ms': 1.0 + config['i']}\n")
    result = run_bench(window, qtbot, budget=20, strategy="grid", kernel=str(bench))
    assert result.reason == "exhausted" and result.evaluations == 4
    bar = window.toolbar.progress
    assert bar.value() == bar.maximum() == 4
    assert window.toolbar.budget.value() == 20
    assert "done: nothing left to measure, 4 evals" == window.toolbar.progress_label.text()


def test_an_objective_set_before_the_first_run_is_the_runs(window, qtbot):
    """A latency limit typed into a fresh window showed as on, was kept nowhere, and the first run
    searched without it (the box then read "off"); weights likewise."""
    control = window.objective_panel.limits["max_latency_ms"]
    control.enabled.setChecked(True)
    control.spin.setValue(0.5)
    control.spin.editingFinished.emit()
    assert window.model.constraints.max_latency_ms == pytest.approx(0.5)
    window.model.set_weights({"latency_ms": 1.0, "memory_mb": 0.5})
    run_bench(window, qtbot, budget=10)
    session = window.model.session
    assert session.constraints.max_latency_ms == pytest.approx(0.5) and session.weights.values["memory_mb"] == 0.5
    assert control.enabled.isChecked() and control.spin.value() == pytest.approx(0.5)
    window.new_session()  # a closed session leaves no objective behind for the next window state
    assert window.model.constraints.max_latency_ms is None


def test_the_windows_import_of_a_cut_cache_says_what_was_left_out(window, tmp_path):
    """The window imported a cut or trimmed cache without a word, where import-kt prints notes."""
    from tests.test_interop import _as_kernel_tuner_writes_it, synthetic

    text = _as_kernel_tuner_writes_it(synthetic(False))
    cut = tmp_path / "killed.json"
    cut.write_text(text[: text.rstrip().rfind("\n") + 12])
    window.import_kt_cache(str(cut))
    assert len(window.model.trials) == 4
    assert "note: " in window.statusBar().currentMessage() and "ends inside a record" in window.statusBar().currentMessage()


def test_a_long_replay_pace_times_nothing_out_and_stop_ends_its_wait_at_once(window, qtbot, tmp_path):
    """A pace of 12 s (the timeout is 10 s) made every recorded trial a timeout that never
    happened while it was slept inside each evaluation; kept between candidates, it times nothing
    out, and Stop does not wait for it."""
    import time

    run_bench(window, qtbot, budget=3)
    recording = tmp_path / "rec.json"
    window.save_to(recording)
    window.new_session()
    window.start_run({"backend": "replay", "replay": str(recording), "budget": 2, "delay_s": 12})
    assert window.running
    qtbot.wait(300)
    started = time.monotonic()
    with qtbot.waitSignal(window.run_done, timeout=10_000):
        window.stop_run()
    assert time.monotonic() - started < 5  # not the 12 s pace
    assert not any(t.status.value == "timeout" for t in window.model.session.trials)


def test_a_first_run_refused_over_a_metric_set_in_the_panel_says_the_panel_set_it(window):
    """A weight on memory set before a replay of a recording (which reports none) refused Start
    naming the metric, and nothing said the panel had put it there."""
    from workbench.core.errors import WorkbenchError

    cache = Path(__file__).resolve().parents[1] / "fixtures" / "kt_cache_small.json"
    window.model.set_weights({"latency_ms": 1.0, "memory_mb": 0.5})
    with pytest.raises(WorkbenchError, match="memory_mb.*set before this run under Constraints or Score weights"):
        window.start_run({"backend": "replay", "replay": str(cache), "budget": 3})
    assert not window.running


def test_a_new_session_keeps_the_objective_in_force_not_the_old_kernels_own_metrics(window, qtbot, tmp_path):
    """A new run of another kernel took the shown session's weights and directions whole: a zero
    weight and a direction on the old benchmark's own metric became rows (and file entries) of a
    kernel that never reports it; a weight in force on it was refused with no word of where it
    came from."""
    from workbench.core.domain.objective import Weights
    from workbench.core.errors import WorkbenchError

    merit = Path(__file__).resolve().parents[1] / "fixtures" / "merit_bench.py"
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({"kernel": str(merit), "backend": "python", "strategy": "random", "budget": 4})
    model = window.model
    model.session.weights = Weights(values={"latency_ms": 1.0, "merit": 2.0}, directions={"merit": 1})
    with pytest.raises(WorkbenchError, match="merit.*kept from the session shown under Constraints or Score weights"):
        window.start_run({"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 2,
                          "options": {"compile": "estimate"}})
    model.session.weights = Weights(values={"latency_ms": 1.0, "merit": 0.0}, directions={"merit": 1})
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 2,
                          "options": {"compile": "estimate"}})
    weights = window.model.session.weights
    assert "merit" not in weights.values and "merit" not in weights.directions
    assert "merit" not in window.objective_panel.weight_sliders


def test_a_new_session_of_the_same_kernel_keeps_every_weight_and_direction(window, qtbot):
    """Another GPU model is a new session of the same kernel: its metrics are the old one's, so
    the weights shown carry over whole, a zero weight's row and a stated direction included
    (only another kernel's session drops what its metrics cannot mean)."""
    from workbench.core.domain.objective import Weights

    run = {"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 2, "options": {"compile": "estimate"}}
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({**run, "gpu_model": "H200"})
    first = window.model.session
    first.weights = Weights(values={"latency_ms": 1.0, "occupancy": 0.0, "registers": 0.5},
                            directions={"occupancy": 1, "registers": -1})
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({**run, "gpu_model": "A100"})
    assert window.model.session is not first and window.model.session.trials
    weights = window.model.session.weights
    assert weights.values["occupancy"] == 0.0 and weights.values["registers"] == 0.5
    assert weights.directions == {"occupancy": 1, "registers": -1}


def test_a_keyboard_user_can_run_stop_and_leave_the_results_table(window, qtbot, monkeypatch):
    """Tab went from cell to cell of the results table for ever; Start pressed from the keyboard
    gave the focus to an invisible scroll area, and Enter on it did nothing; a typo in the kernel
    box became an entry of its list; Save with nothing shown did nothing, silently; two File menu
    entries shared the access key C."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    assert not window.results.view.tabKeyNavigation()
    toolbar = window.toolbar
    count = toolbar.kernel.count()
    toolbar.kernel.setFocus()
    toolbar.kernel.lineEdit().setText("reduce_summ")
    qtbot.keyClick(toolbar.kernel.lineEdit(), Qt.Key.Key_Return)
    assert toolbar.kernel.count() == count
    toolbar.kernel.setCurrentText("vector_add")
    assert window.save() is False and window.statusBar().currentMessage().startswith("nothing to save yet")
    monkeypatch.setenv("WORKBENCH_SLOW_S", "0.05")
    window.trusted_code.add(Path(SLOW).resolve())
    window.toolbar.apply({"kernel": SLOW, "backend": "python", "strategy": "random", "budget": 400})
    toolbar.start.setFocus()
    qtbot.keyClick(toolbar.start, Qt.Key.Key_Return)  # Enter, as Space, presses it
    qtbot.waitUntil(lambda: window.running, timeout=10_000)
    assert QApplication.focusWidget() is toolbar.stop
    toolbar.pause.setFocus()
    qtbot.keyClick(toolbar.pause, Qt.Key.Key_Space)  # Pause keeps the focus (a second Space resumes,
    assert toolbar.pause.text() == "Resume" and QApplication.focusWidget() is toolbar.pause  # not stops)
    qtbot.keyClick(toolbar.pause, Qt.Key.Key_Space)
    assert toolbar.pause.text() == "Pause"
    with qtbot.waitSignal(window.run_done, timeout=30_000):
        qtbot.keyClick(toolbar.stop, Qt.Key.Key_Space)
        # while it stops, on a widget no key changes (it went to a constraint's check box, which a
        # second Space switched on)
        assert QApplication.focusWidget() is toolbar.progress
    assert QApplication.focusWidget() is toolbar.start
    # the focus a person moved elsewhere while the run wound down stays there
    window.toolbar.apply({"kernel": SLOW, "backend": "python", "strategy": "random", "budget": 400})
    window._on_start()
    qtbot.waitUntil(lambda: window.running, timeout=10_000)
    toolbar.stop.setFocus()
    with qtbot.waitSignal(window.run_done, timeout=30_000):
        qtbot.keyClick(toolbar.stop, Qt.Key.Key_Space)
        window.results.slot_edit.setFocus()
    assert QApplication.focusWidget() is window.results.slot_edit
    # F5 pressed in a box the run greys out hands the focus to Stop as Start pressed does (it went
    # wherever Qt passed it from the disabled box: to Pause)
    toolbar.budget.setFocus()
    qtbot.waitUntil(toolbar.budget.hasFocus, timeout=2000)
    qtbot.keyClick(toolbar.budget, Qt.Key.Key_F5)
    qtbot.waitUntil(lambda: window.running, timeout=10_000)
    assert QApplication.focusWidget() is toolbar.stop
    with qtbot.waitSignal(window.run_done, timeout=30_000):
        qtbot.keyClick(toolbar.stop, Qt.Key.Key_Space)
    keys = [a.text().split("&")[1][0].lower() for a in window.menuBar().actions()[0].menu().actions()
            if "&" in a.text()]
    assert len(keys) == len(set(keys)), keys


def test_the_help_menu_says_the_version_and_where_the_guides_are(window, cli):
    """There was no Help menu, no About and no --version: a new user found neither."""
    from workbench import __version__

    menus = [a.text() for a in window.menuBar().actions()]
    assert menus[-1] == "&Help"
    about = window.actions_by_name["about"]
    assert about.shortcut().toString() == "F1"
    text = window.about_text()
    assert text.startswith(f"Kernel Tuning Workbench {__version__}") and "gui.md" in text
    assert str(Path(__file__).resolve().parents[2] / "docs") in text  # the checkout's own guides
    about.trigger()  # (an automated window says it in the status bar)
    assert window.statusBar().currentMessage() == f"Kernel Tuning Workbench {__version__}"
    done = cli("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"Kernel Tuning Workbench {__version__}"


def test_a_version_1_session_is_the_windows_own_file_to_continue_and_save(window, tmp_path, cli):
    """A file older than session identities got a fresh one at every load: the window's next Save
    or Start found its own file "holding another session" and refused both."""
    import json

    from workbench.core.domain.session import load_session

    path = tmp_path / "old.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "4",
               "--executor", "inline", "--quiet", "--out", path).returncode == 0
    doc = json.loads(path.read_text())
    doc["version"] = 1
    for newer in ("id", "run"):
        doc.pop(newer, None)
    path.write_text(json.dumps(doc))
    assert load_session(path).id == load_session(path).id  # the same identity at every load
    window.open_session(path)
    window.model.session.notes = "edited in the window"
    assert window.save_to(str(path)), window.statusBar().currentMessage()
    assert load_session(path).notes == "edited in the window" and len(load_session(path).trials) == 4


def test_the_note_at_the_end_of_a_continued_run_counts_the_sizes_it_added(window, qtbot):
    """A run that added sizes to a one-size session ended with "the charts show them all", while
    the charts showed one size of them."""
    run = {"kernel": "vector_add", "backend": "sim", "budget": 2, "options": {"compile": "estimate"}}
    with qtbot.waitSignal(window.run_done, timeout=120_000):
        window.start_run(run)
    with qtbot.waitSignal(window.run_done, timeout=120_000):
        window.start_run({**run, "sizes": {"n": [4096, 65536]}})
    message = window.statusBar().currentMessage()
    assert message.startswith("continued this session, ") and "at the size shown (of 3)" in message, message
