"""The objective panel's run controls: a direction toggle for metrics whose direction is unknown or
user-chosen, reaching the ranking and a running search; and "Re-measure aborted", which measures again
through the run controller the aborted candidates the constraints in force no longer rule out."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.core.domain.measurement import Status
from workbench.core.domain.session import load_session
from workbench.core.errors import WorkbenchError

MERIT = str(Path(__file__).parents[1] / "fixtures" / "merit_bench.py")


def _run(window, qtbot, run, timeout_ms=90_000):
    with qtbot.waitSignal(window.run_done, timeout=timeout_ms) as blocker:
        window.start_run(run)
    return blocker.args[0]


def test_the_direction_toggle_ranks_an_unknown_metric_both_ways(window, qtbot):
    _run(window, qtbot, {"kernel": MERIT, "backend": "python", "strategy": "random", "budget": 30, "seed": 0})
    panel, model = window.objective_panel, window.model
    assert "merit" in panel.directional_metrics() and "latency_ms" not in panel.directional_metrics()
    assert "merit" not in panel.direction_buttons  # no row until picked: descriptive figures stay out of the way
    box = panel.more_metrics
    assert box.isVisible() and box.findText("merit") > 0
    box.setCurrentIndex(box.findText("merit"))
    box.activated.emit(box.findText("merit"))  # what picking it in the list does
    toggle, slider = panel.direction_buttons["merit"], panel.weight_sliders["merit"]
    assert toggle.text() == "direction?" and not slider.isEnabled()  # no weight without a direction
    toggle.click()
    assert model.weights.directions == {"merit": 1} and toggle.text() == "higher is better" and slider.isEnabled()
    for metric, other in panel.weight_sliders.items():
        other.setValue(10 if metric == "merit" else 0)  # weigh the merit alone
    scores = [t.metric("merit") for t in model.session.trials if t.ok]
    best = model.session.trials[model.ranking.best]
    assert best.metric("merit") == max(scores)
    panel.direction_buttons["merit"].click()
    assert model.weights.directions == {"merit": -1} and panel.direction_buttons["merit"].text() == "lower is better"
    assert model.weights.values["merit"] == 1.0  # the weight stays; only its direction turned
    assert model.session.trials[model.ranking.best].metric("merit") == min(scores)


def test_a_direction_chosen_during_a_run_reaches_the_running_search(window, qtbot, monkeypatch):
    monkeypatch.setenv("WORKBENCH_SLOW_S", "0.05")
    window.start_run({"kernel": MERIT, "backend": "python", "strategy": "random", "budget": 400, "seed": 1})  # outlasts the clicks; stopped below
    engine = window.engine_thread.engine.engine
    qtbot.waitUntil(lambda: "merit" in window.objective_panel.directional_metrics(), timeout=30_000)
    window.objective_panel.show_metric("merit")
    window.objective_panel.direction_buttons["merit"].click()
    window.objective_panel.weight_sliders["merit"].setValue(10)
    # the direction and then the weight each re-target the run: wait for the second to arrive too
    qtbot.waitUntil(lambda: engine.objective is not None and engine.objective.weights.directions.get("merit") == 1
                    and engine.objective.weights.get("merit") == 1.0, timeout=10_000)
    assert engine.objective.weights.get("merit") == 1.0  # the Objective the strategy ranks by
    window.stop_run()
    assert window.wait_for_run(30)


def test_remeasure_aborted_is_enabled_when_the_limit_is_relaxed_and_runs_through_the_controller(
        window, qtbot, tmp_path):
    from workbench.core.domain.objective import Constraints
    from workbench.runner.controller import RunRequest, start_run

    out = tmp_path / "t.json"
    start_run(RunRequest(kernel="transpose", backend="sim", budget=12, seed=1, workers=1,
                         constraints=Constraints(max_latency_ms=0.06)), out).run()
    window.open_session(out)
    panel = window.objective_panel
    aborted = [t for t in window.model.session.trials if t.status is Status.ABORTED]
    assert aborted and panel.remeasure_button.isVisible()
    assert not panel.remeasure_button.isEnabled()  # the limit in force still rules every one out
    # the failure log counts them apart, as the run's progress does: stopped on purpose, not failed
    window.failures.refresh()
    failed = sum(t.status.failed and t.status is not Status.ABORTED for t in window.model.session.trials)
    assert f"<b>{failed}</b> failed of" in window.failures.counts.text()
    assert f"aborted: <b>{len(aborted)}</b>" in window.failures.counts.text()
    limit = sorted(t.metric("latency_bound_ms") for t in aborted)[len(aborted) // 2]
    window.model.set_constraints(max_latency_ms=limit)  # what the slider does
    expected = {t.config.id for t in aborted if t.metric("latency_bound_ms") <= limit}
    assert panel.remeasure_button.isEnabled() and panel.remeasure_button.text() == f"Re-measure aborted ({len(expected)})"
    before = len(window.model.session.trials)
    with qtbot.waitSignal(window.run_done, timeout=90_000):
        panel.remeasure_button.click()
        assert window.statusBar().currentMessage().startswith(f"re-measuring {len(expected)} aborted candidates")
    assert not panel.remeasure_button.isEnabled()  # all of them measured: nothing left to re-measure
    assert window.statusBar().currentMessage() == ""  # "re-measuring ..." no longer, once they are
    again = load_session(out)
    back = again.trials[before:]
    assert {t.config.id for t in back} == expected and all(t.ok for t in back)
    assert again.constraints.max_latency_ms == pytest.approx(limit, rel=1e-3)  # files keep 4 digits
    assert len(window.model.session.trials) == len(again.trials)


def test_the_card_of_nothing_feasible_counts_the_candidates_stopped_early_and_names_the_button(window, tmp_path):
    """With successful trials all excluded, the card said only which constraint to relax: not that
    most of the run had stopped early under the latency limit and waited to be re-measured, which
    `show`, the status bar and the chart said."""
    from workbench.core.domain.objective import Constraints
    from workbench.gui.text import REMEASURE_HERE
    from workbench.runner.controller import RunRequest, start_run

    out = tmp_path / "t.json"
    start_run(RunRequest(kernel="transpose", backend="sim", budget=12, seed=1, workers=1,
                         constraints=Constraints(max_latency_ms=0.1)), out).run()
    window.open_session(out)
    trials = window.model.session.trials
    aborted = sum(t.status is Status.ABORTED for t in trials)
    assert aborted and min(t.metric("latency_ms") for t in trials if t.ok) > 0.1  # run, but over the limit
    text = window.best_card.text()
    assert text.startswith("<b>Nothing is feasible.</b>") and "excludes the most trials" in text
    assert f"{aborted} stopped early as hopeless under a latency limit" in text and REMEASURE_HERE in text


def test_remeasure_continues_the_session_shown_not_what_its_file_holds(window, qtbot, tmp_path):
    """Re-measure read the session back from its file: trials the window held that the file did
    not (saved there mid-run, the run going on in the autosave) were dropped, and a Save then
    wrote the shorter session; a file another session had been written to got the re-measured
    trials. The window's session is continued, as Start continues it."""
    import shutil

    from workbench.core.domain.objective import Constraints
    from workbench.core.domain.session import Session, save_session
    from workbench.runner.controller import RunRequest, start_run

    out, other = tmp_path / "t.json", tmp_path / "other.json"
    for path, seed in ((out, 1), (other, 2)):
        start_run(RunRequest(kernel="transpose", backend="sim", budget=12, seed=seed, workers=1,
                             constraints=Constraints(max_latency_ms=0.06)), path).run()
    window.open_session(out)
    whole = len(window.model.session.trials)
    aborted = [t for t in window.model.session.trials if t.status is Status.ABORTED]
    assert aborted
    window.model.set_constraints(max_latency_ms=None)
    # another session written to the file meanwhile: refused, the file left as it is
    shutil.copy(other, out)
    before = out.read_bytes()
    with pytest.raises(WorkbenchError, match="now holds another session"):
        window.remeasure_aborted()
    assert out.read_bytes() == before and not window.running
    # the file behind the window: it holds the first half of the window's trials only
    half = Session.from_dict({**window.model.session.to_dict(), "trials": []})
    for trial in window.model.session.trials[: whole // 2]:
        half.add(trial)
    save_session(half, out)
    with qtbot.waitSignal(window.run_done, timeout=90_000):
        window.remeasure_aborted()
    assert len(window.model.session.trials) == whole + len(aborted)  # none of the window's dropped
    assert len(load_session(out).trials) == whole + len(aborted)


def test_remeasured_elsewhere_meanwhile_the_window_shows_those_trials_and_stays_saved(window, qtbot, tmp_path):
    """When another run had re-measured the file's aborted trials, Re-measure took them in but
    showed them only at the next tick, and then as unsaved changes."""
    from workbench.core.domain.objective import Constraints
    from workbench.runner.controller import RunRequest, remeasure_aborted, start_run

    out = tmp_path / "t.json"
    start_run(RunRequest(kernel="transpose", backend="sim", budget=12, seed=1, workers=1,
                         constraints=Constraints(max_latency_ms=0.06)), out).run()
    window.open_session(out)
    before = window.model.n
    relaxed = RunRequest(constraints=Constraints(max_latency_ms=None))
    run, _why = remeasure_aborted(out, relaxed)  # another process, the command line's way
    assert run is not None
    run.run()
    on_disk = len(load_session(out).trials)
    assert on_disk > before and not window.model.dirty
    window.model.set_constraints(max_latency_ms=None)
    window.model.dirty = False
    window.remeasure_aborted()  # nothing left: the file's re-measured trials are taken in
    assert not window.running and window.model.n == on_disk and not window.model.dirty


def test_opening_another_session_keeps_its_own_constraints(window, qtbot, tmp_path):
    """A limit enabled on one session is not written into the next one opened (the spin box's
    display settings change with the data and used to write their rounded value back)."""
    from workbench.core.domain.objective import Constraints
    from workbench.runner.controller import RunRequest, start_run

    limited, free = tmp_path / "limited.json", tmp_path / "free.json"
    start_run(RunRequest(kernel="transpose", backend="sim", budget=6, seed=1, workers=1,
                         constraints=Constraints(max_latency_ms=0.06)), limited).run()
    start_run(RunRequest(kernel=MERIT, backend="python", budget=10, seed=0, workers=1), free).run()
    window.open_session(limited)
    window.model.set_constraints(max_latency_ms=0.14109701)  # more decimals than the next data range shows
    window.open_session(free)
    assert window.model.constraints.max_latency_ms is None
    assert not window.objective_panel.limits["max_latency_ms"].enabled.isChecked()


def test_a_session_written_with_a_named_limit_as_a_bound_opens_with_it_in_its_box(window, tmp_path):
    """A session storing the limit as a typed bound (earlier versions of ``tune --constraint
    latency_ms<=X``, or by hand): opened, it read *off*
    in its box with no chart line, while it held. It opens in the box, the ranking and the
    session's clean state unchanged; a bound the box cannot show stays typed."""
    from workbench.core.domain.objective import Bound, Constraints
    from workbench.runner.controller import RunRequest, start_run

    path = tmp_path / "typed.json"
    bounds = (Bound.parse("latency_ms <= 0.3"), Bound.parse("latency_ms <= 0.2"), Bound.parse("quality >= 1.5"))
    start_run(RunRequest(kernel="transpose", backend="sim", budget=8, seed=1, workers=1,
                         constraints=Constraints(extra=bounds)), path).run()
    window.open_session(path)
    model, panel = window.model, window.objective_panel
    latency = panel.limits["max_latency_ms"]
    assert model.constraints.max_latency_ms == 0.2 and latency.enabled.isChecked() and latency.spin.value() == 0.2
    assert [b.label for b in model.constraints.extra] == ["quality >= 1.5"]
    assert panel.extra_edit.text() == "quality >= 1.5"
    assert not model.dirty
    assert model.ranking.n_feasible == 0  # quality >= 1.5 still holds
    model.set_constraints(extra=())
    feasible = sum(1 for t in model.trials if t.ok and t.metric("latency_ms") <= 0.2)
    assert 0 < model.ranking.n_feasible == feasible < len(model.trials)


def test_a_session_with_a_known_metric_turned_round_opens_without_that_direction(window, tmp_path):
    """An older session could store --maximize latency_ms: it opens (its trials are facts), the
    wrong direction is left out, and the panel offers no toggle for a known metric."""
    import json

    from workbench.runner.controller import RunRequest, start_run

    path = tmp_path / "old.json"
    start_run(RunRequest(kernel="transpose", backend="sim", budget=6, seed=1, workers=1), path).run()
    data = json.loads(path.read_text())
    data["directions"] = {"latency_ms": "maximize", "gflops": "minimize", "top-1": "maximize", "merit": "maximize"}
    path.write_text(json.dumps(data))
    window.open_session(path)
    assert window.model.weights.directions == {"merit": 1}
    offered = window.objective_panel.directional_metrics()
    assert "merit" in offered and not {"latency_ms", "gflops", "top-1"} & set(offered)
    window.model.set_direction("latency_ms", 1)  # ignored, not a traceback in a slot
    assert window.model.weights.directions == {"merit": 1}


def test_remeasuring_an_unsaved_session_keeps_it_unsaved_so_closing_asks_and_keeps_its_trials(
        window, qtbot, monkeypatch):
    """Re-measure shows the session read back from the autosave its run wrote; that is no save:
    stopped before a trial lands, the window must still ask before closing, and keep the autosave."""
    from PySide6.QtWidgets import QMessageBox

    _run(window, qtbot, {"kernel": "transpose", "backend": "sim", "strategy": "random", "budget": 6, "seed": 1,
                         "options": {"compile": "estimate"}})
    window.model.set_constraints(max_latency_ms=0.06)
    window.toolbar.budget.setValue(10)
    _run(window, qtbot, window.toolbar.request())
    aborted = [t for t in window.model.session.trials if t.status is Status.ABORTED]
    assert aborted and window.path is None
    autosave, measured = window.autosave_path, len(window.model.session.trials)
    window.model.set_constraints(max_latency_ms=max(t.metric("latency_bound_ms") for t in aborted) * 1.01)
    window.objective_panel.remeasure_button.click()
    assert window.running and window.model.dirty and window.windowTitle().endswith(" *")
    window.stop_run()
    qtbot.waitUntil(lambda: not window.running, timeout=60_000)
    assert window.model.dirty and window.windowTitle().endswith(" *")
    asked = []
    monkeypatch.setattr(QMessageBox, "question",
                        lambda *a, **k: asked.append(a[1]) or QMessageBox.StandardButton.Cancel)
    window.interactive = True  # a person closing the window is asked about unsaved trials
    assert not window.close()
    window.interactive = False
    assert asked == ["Unsaved trials"]
    assert autosave.exists() and len(load_session(autosave).trials) >= measured


def _sim_session(path, **request):
    from workbench.runner.controller import RunRequest, run_to_end

    run_to_end(RunRequest(kernel="vector_add", backend="sim", strategy="random", budget=4, seed=1,
                          backend_options={"compile": "estimate"}, **request), path)
    return path


def test_a_weight_slider_changes_its_own_weight_only_and_weights_off_its_grid_are_shown_as_given(window, tmp_path):
    """Weights the command line allows (20, 0.25) are not on a 0-10 slider's 0.1 grid: moving
    another slider must leave them exactly as given, and their labels say what they are."""
    from workbench.core.domain.objective import Weights

    window.open_session(_sim_session(tmp_path / "w.json", weights=Weights(values={"latency_ms": 20.0,
                                                                                   "memory_mb": 0.25})))
    panel = window.objective_panel
    assert panel.weight_labels["latency_ms"].text() == "20" and panel.weight_labels["memory_mb"].text() == "0.25"
    assert panel.weight_sliders["latency_ms"].value() == panel.weight_sliders["latency_ms"].maximum()
    assert "99% of the total weight" in panel.weight_sliders["latency_ms"].toolTip()  # 20 of 20.25
    panel.weight_sliders["quality"].setValue(10)  # the person moves quality alone
    weights = window.model.weights.values
    assert weights["latency_ms"] == 20.0 and weights["memory_mb"] == 0.25 and weights["quality"] == pytest.approx(2.0)
    panel.weight_sliders["memory_mb"].setValue(50)
    weights = window.model.weights.values
    assert weights["latency_ms"] == 20.0 and weights["memory_mb"] == pytest.approx(10.0)
    assert weights["quality"] == pytest.approx(2.0)
    assert panel.weight_labels["memory_mb"].text() == "10"
    # a weight typed: exact, off the grid and beyond the sliders' end too, from the keyboard alone
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    box = panel.weight_labels["quality"]
    assert box.accessibleName() == "quality weight, exact"
    for typed, expected in (("0.25", 0.25), ("40", 40.0)):
        box.setFocus()
        box.selectAll()
        QTest.keyClicks(box, typed)
        QTest.keyClick(box, Qt.Key.Key_Return)
        assert window.model.weights.values["quality"] == expected and box.text() == typed
    assert window.model.weights.values["latency_ms"] == 20.0  # the others as they were
    slider = panel.weight_sliders["quality"]  # the sliders widened to take 40
    assert panel.weight_scale >= 40 and slider.value() == round(40 / panel.weight_scale * slider.maximum())
    box.selectAll()
    QTest.keyClicks(box, "-1")
    QTest.keyClick(box, Qt.Key.Key_Return)
    assert window.model.weights.values["quality"] == 40.0 and box.text() == "40" and "is no weight" in box.toolTip()


def test_a_huge_weight_opens_and_survives_other_sliders(window, tmp_path):
    from workbench.core.domain.objective import Weights

    window.open_session(_sim_session(tmp_path / "big.json", weights=Weights(values={"latency_ms": 1e9})))
    panel = window.objective_panel
    assert window.model.session is not None and panel.weight_labels["latency_ms"].text() == "1e+09"
    assert panel.weight_sliders["latency_ms"].value() == panel.weight_sliders["latency_ms"].maximum()
    panel.weight_sliders["quality"].setValue(3)
    assert window.model.weights.values["latency_ms"] == 1e9 and window.model.weights.values["quality"] > 0
    window.model.set_weights({"latency_ms": 1.7e308})  # the float range's last decade: no overflow either
    assert panel.weight_labels["latency_ms"].text() == "1.7e+308"


def test_weight_sliders_span_ten_unless_a_weight_is_larger():
    from workbench.gui.objective_panel import weight_scale

    assert weight_scale([]) == 10.0 and weight_scale([1.0, 0.25, 10.0]) == 10.0
    assert weight_scale([20.0]) == 20.0 and weight_scale([30.0]) == 50.0 and weight_scale([1e9]) == 1e9
    assert weight_scale([1.7e308]) == 1.7e308


def test_min_quality_cannot_be_typed_above_one(window, tmp_path):
    window.open_session(_sim_session(tmp_path / "q.json"))
    control = window.objective_panel.limits["min_quality"]
    assert control.spin.maximum() == 1.0
    control.spin.setValue(5.0)
    assert window.model.constraints.min_quality == 1.0
    assert window.objective_panel.limits["max_latency_ms"].spin.maximum() > 1.0  # only quality has a ceiling


def test_no_limit_box_sets_a_limit_nothing_could_meet(window, tmp_path):
    """One Up press on a box reading "off" set a limit of 0: max latency 0 aborted every later
    candidate of a run and was saved into a session the command line refuses; max memory 0
    excluded every trial. Stepping up from "off" now ticks the box (its loosest limit), a typed
    latency of 0 becomes the smallest limit shown, and a line dragged past 0 stops above it."""
    window.open_session(_sim_session(tmp_path / "z.json"))
    model, limits = window.model, window.objective_panel.limits
    for field in ("max_latency_ms", "max_memory_mb"):
        control = limits[field]
        assert not control.enabled.isChecked()
        control.spin.stepUp()
        ticked = getattr(model.constraints, field)
        assert control.enabled.isChecked() and ticked is not None and ticked > 0
        assert ticked == pytest.approx(control.value_at(1000), rel=1e-3)  # as ticking the box: the loosest limit
    latency = limits["max_latency_ms"]
    latency.spin.setValue(0.0)  # typed
    assert latency.floor() > 0
    assert model.constraints.max_latency_ms == pytest.approx(latency.floor())
    model.constraints.check_possible()  # what the command line would accept
    latency.spin.setSingleStep(1.0)  # a step larger than the tightest limit: Down still reaches "off"
    latency.spin.stepDown()
    assert not latency.enabled.isChecked() and model.constraints.max_latency_ms is None
    chart = window.tradeoff_chart
    chart.log_x = False
    chart.latency_line.setValue(-3.0)
    chart._on_latency_dragged(chart.latency_line)
    fastest = min(t.metric("latency_ms") for t in model.trials if t.ok)
    assert model.constraints.max_latency_ms == pytest.approx(fastest / 2)  # positive, and shown with its digits
    memory = limits["max_memory_mb"]
    memory.enabled.setChecked(False)
    memory.spin.setValue(0.0)  # typed into a box reading "off": a memory limit of 0 is one a config could meet
    assert memory.enabled.isChecked() and model.constraints.max_memory_mb == 0.0


def test_a_refusal_under_the_constraint_field_goes_when_the_field_no_longer_shows_the_refused_text(window, tmp_path):
    window.open_session(_sim_session(tmp_path / "r.json"))
    panel = window.objective_panel
    panel.extra_edit.setText("latency <= 5")
    panel._on_extra_edited()  # what Enter does
    assert "did you mean 'latency_ms'" in panel.extra_error.toolTip()
    panel.limits["max_memory_mb"].enabled.setChecked(True)  # another control: the field shows what is in force
    assert panel.extra_edit.text() == "" and panel.extra_error.toolTip() == ""
    panel.extra_edit.setText("latency <= 5")
    panel._on_extra_edited()
    window.open_session(_sim_session(tmp_path / "s.json"))  # another session: nothing said of its text
    assert panel.extra_error.toolTip() == ""



def test_a_warning_about_the_constraint_in_force_stays_when_the_field_is_respelled(window):
    """Before any run a bound on a metric nothing reports yet applies with a warning; committed by
    leaving the field, its spelling (merit>=1) was rewritten (merit >= 1) and the warning erased.
    (A python benchmark's metric: the simulator, which declares its metrics, refuses the name.)"""
    window.toolbar.backend.setCurrentIndex(window.toolbar.backend.findData("python"))
    panel = window.objective_panel
    panel.extra_edit.setText("merit>=1")
    panel._on_extra_edited()  # what leaving the field does
    warning = panel.extra_error.toolTip()
    assert "merit" in warning
    panel._on_objective_changed()
    assert panel.extra_edit.text() == "merit >= 1" and panel.extra_error.toolTip() == warning


def test_a_typed_constraint_on_a_metric_nothing_reports_is_refused_with_the_command_lines_words(window, qtbot, tmp_path):
    """The CLI refuses `nonexistent >= 3` (a typo would make every trial infeasible); the window says
    the same line and keeps the constraints it had."""
    from workbench.core.domain.metrics import check_metrics
    from workbench.core.errors import WorkbenchError
    from workbench.runner.plan import session_metrics

    window.open_session(_sim_session(tmp_path / "x.json"))
    panel = window.objective_panel
    panel.extra_edit.setText("occupancy >= 0.25")
    panel._on_extra_edited()
    assert [b.label for b in window.model.constraints.extra] == ["occupancy >= 0.25"] and panel.extra_error.isHidden()
    feasible = window.model.ranking.n_feasible
    panel.extra_edit.setText("occupancy >= 0.25, nonexistent >= 3")
    panel._on_extra_edited()
    with pytest.raises(WorkbenchError) as cli:  # what `show --constraint` says (cli._objective_warnings)
        check_metrics(["nonexistent"], session_metrics(window.model.session))
    # the refusal, after what is still in force (the field shows only the refused text now)
    said = f"still in force: occupancy >= 0.25; not applied: {cli.value}"
    assert not panel.extra_error.isHidden() and panel.extra_error.toolTip() == said
    shown = panel.extra_error.text().replace("\n", " ")  # as much of the line as three lines of the column hold
    assert shown.startswith("still in force: occupancy >= 0.25; not applied: metric 'nonexistent': no trial reports")
    assert said.startswith(shown.rstrip(" …"))
    assert panel.extra_error.text().count("\n") <= 2
    qtbot.wait(50)  # the layout settles: the panel gets the room its rows need, nothing is drawn over the count
    assert panel.height() >= panel.minimumSizeHint().height()
    assert panel.extra_error.geometry().bottom() < panel.feasible_label.geometry().top()
    assert [b.label for b in window.model.constraints.extra] == ["occupancy >= 0.25"]  # not applied
    assert window.model.ranking.n_feasible == feasible


def test_session_metrics_are_the_trials_and_the_backends_or_unknown_for_a_silent_user_benchmark(tmp_path):
    from workbench.core.domain.session import load_session
    from workbench.runner.plan import session_metrics

    session = load_session(_sim_session(tmp_path / "s.json"))
    assert {"latency_ms", "occupancy", "dram_mb"} <= session_metrics(session)
    session.trials = []
    assert "occupancy" in session_metrics(session)  # the simulator declares it
    session.backend = {"kind": "python", "options": {}}
    assert session_metrics(session) is None  # a user benchmark that has reported nothing: may still come
    session.backend = {"kind": "no-such-backend"}
    assert session_metrics(session) is None


@pytest.mark.parametrize("field", ["min_quality", "max_memory_mb"])
def test_a_limit_on_a_metric_no_trial_reports_cannot_be_ticked_until_one_does(window, cli, tmp_path, field):
    """Ticking such a limit switched it on at a bound from a made-up range and excluded every trial
    (none reports the metric): the recommendation vanished. The box is off limits, saying why."""
    import dataclasses

    bench = tmp_path / "latency_only.py"
    bench.write_text("SPACE = {'block': [32, 64, 128, 256], 'mode': ['fast', 'safe']}\n"
                     "def measure(config):\n"
                     "    return {'latency_ms': 1.0 + abs(config['block'] - 128) / 128 + (config['mode'] == 'safe')}\n")
    path = tmp_path / "latency_only.json"
    done = cli("tune", bench, "--backend", "python", "--budget", "4", "--quiet", "--out", path)
    assert done.returncode == 0, done.stderr
    window.open_session(path)
    model, control = window.model, window.objective_panel.limits[field]
    feasible = model.ranking.n_feasible
    assert feasible == 4 and model.ranking.best is not None
    assert not control.enabled.isEnabled() and "no trial reports" in control.enabled.toolTip()
    assert not control.slider.isEnabled() and not control.spin.isEnabled()
    assert window.objective_panel.limits["max_latency_ms"].enabled.isEnabled()  # latency is reported
    # a trial that reports the metric arrives (as from a running search): the limit can be set
    last = model.session.trials[-1]
    metrics = {**last.measurement.metrics, control.metric: 0.5}
    model.session.trials.append(dataclasses.replace(last, index=last.index + 1,
                                                    measurement=dataclasses.replace(last.measurement, metrics=metrics)))
    model.sync()
    assert control.enabled.isEnabled() and control.slider.isEnabled() and control.spin.isEnabled()
    assert "no trial reports" not in control.enabled.toolTip()
    control.enabled.setChecked(True)
    assert model.ranking.n_feasible >= 1  # the loosest limit of the data keeps the trial that reports it


def test_after_remeasuring_aborted_trials_the_summary_compares_with_the_default_measured_again(
        window, qtbot, cli, tmp_path):
    """The ranking took the default config's first trial, the aborted one: with the default just
    measured fine, the summary still said "the default config failed (aborted)"."""
    path = tmp_path / "aborted.json"
    done = cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "6",
               "--max-latency-ms", "0.000001", "--executor", "inline", "--quiet", "--out", path)
    assert done.returncode == 0, done.stderr
    window.open_session(path)
    model, panel = window.model, window.objective_panel
    default = model.session.default_config
    assert default is not None and all(t.status is Status.ABORTED for t in model.session.trials)
    assert any(t.config.id == default.id for t in model.session.trials)
    panel.limits["max_latency_ms"].enabled.setChecked(False)
    assert panel.remeasure_button.isEnabled()
    with qtbot.waitSignal(window.run_done, timeout=90_000):
        panel.remeasure_button.click()
    measured = [row for row, t in enumerate(model.trials) if t.config.id == default.id]
    assert len(measured) == 2 and not model.trials[measured[0]].ok and model.trials[measured[1]].ok
    assert model.ranking.default_row == measured[1] and model.default_index == measured[1]
    summary = window.summary_label.text()
    assert "default config failed" not in summary and "default" in summary, summary


def test_remeasure_on_a_python_session_says_nothing_to_re_measure_before_asking_to_run_its_code(
        window, tmp_path, monkeypatch):
    """The window asked whether to run the benchmark's code first and only then found that nothing
    was worth re-measuring; it asks only when re-measuring would run the code."""
    import dataclasses

    from PySide6.QtWidgets import QMessageBox

    from workbench.core.domain.session import save_session
    from workbench.runner.controller import RunRequest, run_to_end

    path = tmp_path / "merit.json"
    run_to_end(RunRequest(kernel=MERIT, backend="python", strategy="random", budget=4, seed=0, workers=1), path)
    session = load_session(path)
    first = session.trials[0]
    aborted = dataclasses.replace(first.measurement, status=Status.ABORTED,
                                  metrics={"latency_bound_ms": first.metric("latency_ms") * 2})
    session.trials[0] = dataclasses.replace(first, measurement=aborted)
    save_session(session, path)
    window.open_session(path)
    asked, defaults = [], []
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: asked.append(a[1]) or defaults.append(a[4:5])
                        or QMessageBox.StandardButton.No)
    monkeypatch.setattr(QMessageBox, "warning", lambda *a, **k: QMessageBox.StandardButton.Ok)
    window.interactive = True  # a person at the window: the code is asked about
    window.model.set_constraints(max_latency_ms=first.metric("latency_ms"))  # still rules the aborted one out
    window._guarded(window.remeasure_aborted, "Cannot re-measure")
    message = window.statusBar().currentMessage()
    assert asked == [] and not window.running, asked
    assert message == (f"nothing to re-measure: 1 candidate stopped early, none below the latency limit in force "
                       f"({first.metric('latency_ms'):g} ms); relax it to re-measure them"), message
    window.model.set_constraints(max_latency_ms=first.metric("latency_ms") * 4)  # now it would be measured
    window._guarded(window.remeasure_aborted, "Cannot re-measure")
    window.interactive = False
    assert asked == ["Run the benchmark's code?"] and not window.running
    assert defaults == [(QMessageBox.StandardButton.No,)]  # Enter must not run a file's code (Yes was the default)
    assert "the benchmark's code was not confirmed" in window.statusBar().currentMessage()
    assert len(load_session(path).trials) == 4  # nothing ran


def test_a_typed_bound_nothing_can_meet_is_refused_as_on_the_command_line(window, cli, tmp_path):
    """The window applied bounds the command line refuses (``registers <= -5``, ``quality >= 1.5``,
    a metric bounded from both sides the wrong way round) and saved them, and ``show`` then refused
    the session's file; it now refuses them in the same words, and keeps what it had."""
    from workbench.core.errors import WorkbenchError

    out = tmp_path / "s.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "4",
               "--out", str(out), "--quiet").returncode == 0
    window.open_session(out)
    panel = window.objective_panel
    panel.set_extra_text("registers <= 64")
    for text in ("quality >= 1.5", "registers <= -5", "registers >= 64, registers <= 32", "latency_ms <= 0",
                 "block_size <= 64"):  # (a slot: said to be one, as the command line says)
        said = cli("show", str(out), *[f"--constraint={part.strip()}" for part in text.split(",")])
        assert said.returncode != 0
        with pytest.raises(WorkbenchError) as refused:
            panel.set_extra_text(text)
        assert str(refused.value).split(": ")[-1] in said.stderr
        assert ("is a tunable slot" in str(refused.value)) == ("is a tunable slot" in said.stderr)
        assert [b.label for b in window.model.constraints.extra] == ["registers <= 64"]
    panel.extra_edit.setText("registers <= -5")
    panel._on_extra_edited()
    assert not panel.extra_error.isHidden()
    window.save_to(str(tmp_path / "saved.json"))
    assert cli("show", str(tmp_path / "saved.json")).returncode == 0


def test_a_weight_row_added_for_a_metric_is_reached_with_the_keyboard(own_metrics_window, qtbot):
    """A row added for a benchmark's own metric sat at the end of the window's focus chain, behind
    the results table (which keeps Tab): its direction toggle, needed before it can be weighted,
    was out of the keyboard's reach, and picking it in the list sent the focus elsewhere."""
    from PySide6.QtCore import Qt

    from workbench.gui.keyboard import tab_order

    def tabbed_after(widget, n):  # the next n widgets Tab moves to, as Qt walks its focus chain
        order = tab_order(widget.window())
        after = order[order.index(widget) + 1:] + order[:order.index(widget)]
        return [w for w in after
                if w.isVisible() and w.isEnabled() and w.focusPolicy() & Qt.FocusPolicy.TabFocus][:n]

    panel = own_metrics_window.objective_panel
    box = panel.more_metrics
    box.setCurrentIndex(box.findText("merit"))
    box.activated.emit(box.findText("merit"))  # what picking it in the list does
    toggle, slider = panel.direction_buttons["merit"], panel.weight_sliders["merit"]
    qtbot.wait(10)  # the new row's widgets are shown by the layout
    last_fixed = panel.weight_rows[list(panel.WEIGHTED)[-1]].value
    value = panel.weight_rows["merit"].value
    assert not slider.isEnabled()  # no weight without a direction: Tab skips it, as it should
    assert tabbed_after(last_fixed, 2) == [value, toggle] if value.isEnabled() else [toggle]
    toggle.click()  # a direction: the slider takes part
    assert tabbed_after(last_fixed, 3) == [slider, value, toggle]
    # row by row, each slider then its exact value (the values came after the last row's toggle)
    expected = [w for row in panel.weight_rows.values() for w in (row.slider, row.value, row.toggle)
                if w is not None and w.isEnabled()]
    stops = [expected[0], *tabbed_after(expected[0], len(expected) - 1)]
    assert stops == expected, [w.accessibleName() or w.text() for w in stops]


def test_a_typed_bound_on_an_empty_window_is_checked_against_the_chosen_backend(window):
    """With no session shown the field checked against no metric list: a typo was applied, said
    in a python benchmark's words, and refused only when Start was pressed. The simulator
    declares its metrics: the typo is refused at once, with the suggestion the command line gives."""
    from workbench.core.errors import WorkbenchError

    panel = window.objective_panel
    assert window.model.session is None and window.toolbar.backend.currentData() == "sim"
    with pytest.raises(WorkbenchError, match=r"metric 'registrs': .*\(did you mean 'registers'\?\)"):
        panel.set_extra_text("registrs <= 64")
    assert window.model.constraints.extra == ()
    panel.set_extra_text("registers <= 64")
    assert [b.label for b in window.model.constraints.extra] == ["registers <= 64"]
    window.toolbar.backend.setCurrentIndex(window.toolbar.backend.findData("python"))
    panel.set_extra_text("my_score >= 2")  # a benchmark's own metric: known once it reports it, so applied
    assert [b.label for b in window.model.constraints.extra] == ["my_score >= 2"]


def test_a_figure_every_trial_shares_offers_no_limit_and_no_weight_until_trials_differ(window, cli, tmp_path):
    """Every config of a fixed problem allocates the same device memory: the max-memory slider,
    spanning 5 % either side of that one value, kept all trials on its right half and none on its
    left, and a weight on it moved every score alike while ranking nothing."""
    import dataclasses

    bench = tmp_path / "same_memory.py"
    bench.write_text("SPACE = {'block': [32, 64, 128, 256]}\n"
                     "def measure(config):\n"
                     "    return {'latency_ms': 1.0 + abs(config['block'] - 128) / 128, 'memory_mb': 201.3}\n")
    path = tmp_path / "same_memory.json"
    assert cli("tune", bench, "--backend", "python", "--budget", "4", "--quiet", "--out", path).returncode == 0
    window.open_session(path)
    panel, model = window.objective_panel, window.model
    limit, row = panel.limits["max_memory_mb"], panel.weight_rows["memory_mb"]
    assert not limit.enabled.isEnabled() and "is 201.3 for every trial" in limit.enabled.toolTip()
    assert not row.slider.isEnabled() and "is 201.3 for every successful trial" in row.name.toolTip()
    assert panel.limits["max_latency_ms"].enabled.isEnabled() and panel.weight_rows["latency_ms"].slider.isEnabled()
    last = model.session.trials[-1]  # a trial with another figure arrives (as from a running search)
    metrics = {**last.measurement.metrics, "memory_mb": 150.0}
    model.session.trials.append(dataclasses.replace(last, index=last.index + 1,
                                                    measurement=dataclasses.replace(last.measurement, metrics=metrics)))
    model.sync()
    assert limit.enabled.isEnabled() and row.slider.isEnabled()
    # a successful trial without the figure: not "the same for every successful trial"
    bench.write_text(bench.read_text().replace("'memory_mb': 201.3}", "**({'memory_mb': 201.3} if config['block'] "
                                                                      "!= 256 else {})}"))
    path = tmp_path / "silent.json"
    assert cli("tune", bench, "--backend", "python", "--budget", "4", "--quiet", "--out", path).returncode == 0
    window.open_session(path)
    assert panel.constant_value("memory_mb") is None and limit.enabled.isEnabled()


def _tuned_benchmark(cli, folder, name: str, body: str):
    """A python benchmark over ``block`` in 32..256 whose ``measure(config)`` is ``body`` (``b`` is
    the block), tuned over all four configs: the session file."""
    bench = folder / f"{name}.py"
    bench.write_text("SPACE = {'block': [32, 64, 128, 256]}\n"
                     "def measure(config):\n"
                     "    b = config['block']\n"
                     f"    {body}\n")
    path = folder / f"{name}.json"
    assert cli("tune", bench, "--backend", "python", "--budget", "4", "--quiet", "--out", path).returncode == 0
    return path


def test_the_constraint_fields_example_is_in_the_sessions_own_figures(window, cli, tmp_path):
    """The field's example named occupancy and registers whatever the session measured: on a
    recording or a benchmark of one's own, typing it back was refused (no trial reports them)."""
    panel = window.objective_panel
    assert panel.extra_edit.placeholderText() == "more: occupancy >= 0.5, registers <= 64"  # nothing measured yet
    window.open_session(_tuned_benchmark(cli, tmp_path, "own_figures", "return {'latency_ms': 1.0 + b / 256, "
                                         "'memory_mb': 201.3, 'throughput_gbs': 100.0 * b, 'spill_bytes': 256 - b}"))
    example = panel.extra_edit.placeholderText().removeprefix("more: ")
    bounds = example.split(", ")
    assert sorted(b.split()[0] for b in bounds) == ["spill_bytes", "throughput_gbs"], example
    assert "throughput_gbs >= 9600" in bounds and "spill_bytes <= 160" in bounds, example  # at the medians
    # the memory limit, the same for every trial, points to the field with the same example
    assert f"e.g. {bounds[0]}, goes in the box below" in panel.limits["max_memory_mb"].enabled.toolTip()
    panel.extra_edit.setText(example)  # typed back as shown, it is taken
    panel._on_extra_edited()
    assert panel.extra_error.isHidden() and [b.label for b in window.model.constraints.extra] == bounds
    # a benchmark timing latency alone: a latency bound, which the field takes as the limit
    window.open_session(_tuned_benchmark(cli, tmp_path, "latency_only", "return {'latency_ms': 1.0 + b / 256}"))
    assert panel.extra_edit.placeholderText() == "more: latency_ms <= 1.4"
    panel.extra_edit.setText("latency_ms <= 1.4")
    panel._on_extra_edited()
    assert panel.extra_error.isHidden() and window.model.constraints.max_latency_ms == 1.4


def test_arrow_keys_on_the_closed_metric_picker_open_its_list_and_add_nothing(window, qtbot):
    """A closed combo box reports the entry an arrow key moves to as chosen: a keyboard user going
    down the list added its first metric at once, and the focus jumped to the new row's slider."""
    from PySide6.QtCore import Qt

    _run(window, qtbot, {"kernel": MERIT, "backend": "python", "strategy": "random", "budget": 12, "seed": 0})
    panel = window.objective_panel
    box = panel.more_metrics
    rows = dict(panel.weight_rows)
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=5000)
    box.setFocus()
    for key in (Qt.Key.Key_Down, Qt.Key.Key_End, Qt.Key.Key_Up):
        qtbot.keyClick(box, key)
        assert panel.weight_rows.keys() == rows.keys(), key
        box.hidePopup()
    qtbot.keyClick(box, Qt.Key.Key_Down)  # the list is open: the arrows move in it, and Enter picks
    view = box.view()
    qtbot.waitUntil(view.isVisible, timeout=5000)
    view.setCurrentIndex(box.model().index(box.findText("merit"), 0))
    qtbot.keyClick(view, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: "merit" in panel.weight_rows, timeout=5000)


def test_a_limit_typed_in_scientific_notation_is_that_number(window, qtbot, tmp_path):
    """Qt's own check of the box took no ``e`` and dropped it and the sign after it unseen: ``1e-2``
    typed then Tab set a latency limit of 12 ms. It is 0.01, as the same number typed in full;
    a number with more decimals than the box shows is not taken, as in full it is not either."""
    from PySide6.QtCore import Qt

    window.open_session(_sim_session(tmp_path / "e.json"))
    spin = window.objective_panel.limits["max_latency_ms"].spin
    window.activateWindow()
    for typed, limit in (("1e-2", 0.01), ("2.5E-1", 0.25), ("1e1", 10.0)):
        spin.setFocus()
        spin.selectAll()
        qtbot.keyClick(spin, Qt.Key.Key_Delete)
        qtbot.keyClicks(spin, typed)
        qtbot.keyClick(spin, Qt.Key.Key_Tab)
        assert window.model.constraints.max_latency_ms == limit, (typed, spin.text())
    assert spin.validate("1e-", 3)[0].name == "Intermediate"  # on the way to a number
    assert spin.validate(f"1e-{spin.decimals() + 1}", 4)[0].name == "Intermediate"  # finer than the box shows
    assert spin.validate("1e-2x", 5)[0].name == "Invalid"


def test_enter_in_a_weight_box_keeps_the_weight_it_shows(window, qtbot, tmp_path):
    """The boxes wrote weights to six significant digits, so Enter in one, nothing typed, set
    1234567 to 1234570 and 0.123456789 to 0.123457, and the session was changed."""
    from PySide6.QtCore import Qt

    from workbench.core.domain.objective import Weights

    weights = Weights(values={"latency_ms": 1234567.0, "throughput_gbs": 0.123456789})
    window.open_session(_sim_session(tmp_path / "w.json", weights=weights))
    panel = window.objective_panel
    for metric in ("latency_ms", "throughput_gbs"):
        box = panel.weight_labels[metric]
        box.setFocus()
        qtbot.keyClick(box, Qt.Key.Key_Return)
    assert window.model.weights.values == {"latency_ms": 1234567.0, "throughput_gbs": 0.123456789}
    assert panel.weight_labels["latency_ms"].text() == "1234567"
    assert not window.model.dirty
