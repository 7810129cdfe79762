"""Score weights: one row per metric. Every metric a session weights has its row from the start,
every metric a successful trial reports can be added (also one first reported mid-run), and a fixed
row whose metric the session does not report is greyed out instead of pretending to rank."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.core.domain.measurement import Measurement, Status, Trial
from workbench.core.domain.objective import Weights
from workbench.core.domain.session import Session
from workbench.core.domain.space import Config, SearchSpace, Slot
from workbench.runner.controller import RunRequest, run_to_end

KT_CACHE = str(Path(__file__).parents[1] / "fixtures" / "kt_cache_small.json")


def _offered(panel) -> list[str]:
    box = panel.more_metrics
    return [box.itemText(i) for i in range(1, box.count())]


def test_a_recording_weighted_on_kernel_tuner_time_shows_that_weight(window, qtbot, tmp_path):
    path = tmp_path / "kt.json"
    run_to_end(RunRequest(replay=KT_CACHE, budget=6, seed=0, workers=1, executor="inline",
                          weights=Weights({"kt_time_ms": 1.0, "latency_ms": 0.0})), path)
    window.open_session(path)
    panel, model = window.objective_panel, window.model
    assert model.weights.get("kt_time_ms") == 1.0
    kt = panel.weight_sliders["kt_time_ms"]
    assert kt.isEnabled() and kt.value() == kt.maximum() // 10  # 1 on a 0-10 slider
    assert panel.weight_labels["kt_time_ms"].text() == "1"
    assert all(panel.weight_sliders[m].value() == 0 for m in ("latency_ms", "throughput_gbs", "memory_mb", "quality"))
    # the recording reports GFLOP/s and compile time (and not throughput, memory or quality): those
    # can be weighted, the fixed rows it does not report are greyed out and say why
    assert panel.more_metrics.isVisible() and {"gflops", "compile_s"} <= set(_offered(panel))
    assert "kt_time_ms" not in _offered(panel)
    for metric in ("throughput_gbs", "memory_mb", "quality"):
        assert not panel.weight_sliders[metric].isEnabled()
        assert "no trial of this session reports" in panel.weight_rows[metric].name.toolTip()
        assert "no trial of this session reports" in panel.weight_sliders[metric].toolTip()
    assert panel.weight_sliders["latency_ms"].isEnabled()
    # picking GFLOP/s gives it a working row, with no direction toggle (its direction is known)
    box = panel.more_metrics
    box.activated.emit(box.findText("gflops"))
    assert "gflops" in panel.weight_sliders and "gflops" not in panel.direction_buttons
    qtbot.wait(50)
    assert window.focusWidget() is panel.weight_sliders["gflops"]  # the keyboard goes on at the new row
    panel.weight_sliders["kt_time_ms"].setValue(0)
    panel.weight_sliders["gflops"].setValue(10)
    ok = [t for t in model.trials if t.ok]
    assert model.trials[model.ranking.best].metric("gflops") == max(t.metric("gflops") for t in ok)
    # a weight dragged back to 0 keeps its row; all at zero is latency alone
    panel.weight_sliders["gflops"].setValue(0)
    assert "kt_time_ms" in panel.weight_sliders and "gflops" in panel.weight_sliders
    assert model.trials[model.ranking.best].metric("latency_ms") == min(t.metric("latency_ms") for t in ok)


def test_a_simulated_session_weighted_on_gflops_shows_that_weight(window, tmp_path):
    path = tmp_path / "sim.json"
    run_to_end(RunRequest(kernel="vector_add", backend="sim", strategy="random", budget=4, seed=1, workers=1,
                          executor="inline", backend_options={"compile": "estimate"},
                          weights=Weights({"gflops": 1.0, "latency_ms": 0.0})), path)
    window.open_session(path)
    panel = window.objective_panel
    assert panel.weight_sliders["gflops"].isEnabled() and panel.weight_labels["gflops"].text() == "1"
    assert panel.weight_sliders["gflops"].value() > 0 and panel.weight_sliders["latency_ms"].value() == 0
    assert "gflops" not in _offered(panel) and "occupancy" in _offered(panel)
    # the simulator reports all four fixed metrics: every fixed row is usable, but for a figure
    # every trial shares (the device memory of one problem's arrays), which a weight cannot rank by
    assert panel.constant_value("memory_mb") is not None
    assert all(panel.weight_sliders[m].isEnabled() == (panel.constant_value(m) is None) for m in panel.WEIGHTED)
    # opening another session drops the row it does not weight
    window.open_session(_session_file(tmp_path))
    assert "gflops" not in panel.weight_sliders


def _session_file(tmp_path: Path) -> Path:
    path = tmp_path / "plain.json"
    run_to_end(RunRequest(kernel="vector_add", backend="sim", strategy="random", budget=3, seed=2, workers=1,
                          executor="inline", backend_options={"compile": "estimate"}), path)
    return path


def _trial(index: int, **metrics: float) -> Trial:
    return Trial(index, Config({"x": index}), Measurement(Status.OK, {"latency_ms": 1.0 + index, **metrics}))


@pytest.mark.parametrize("new_metric", ["gflops", "merit"])
def test_a_metric_first_reported_mid_run_can_be_weighted_then(window, new_metric):
    """The window pulls a run's trials on a timer (``sync``); a metric none of the first trials
    reported is offered once one does, and a fixed row comes to life when its metric arrives."""
    session = Session(kernel="toy", space=SearchSpace([Slot("x", tuple(range(8)), "launch")]),
                      trials=[_trial(0), _trial(1)], device={"name": "toy"})
    window.model.set_session(session)
    panel = window.objective_panel
    assert new_metric not in _offered(panel) and not panel.weight_sliders["throughput_gbs"].isEnabled()
    session.trials.extend([_trial(2, **{new_metric: 5.0, "throughput_gbs": 10.0}),
                           _trial(3, **{new_metric: 9.0, "throughput_gbs": 20.0})])
    assert window.model.sync()
    assert new_metric in _offered(panel) and panel.more_metrics.isVisible()
    assert panel.weight_sliders["throughput_gbs"].isEnabled()
    box = panel.more_metrics
    box.activated.emit(box.findText(new_metric))
    assert new_metric in panel.weight_sliders and new_metric not in _offered(panel)
    if new_metric == "merit":  # direction unknown: the toggle first, then the slider
        assert not panel.weight_sliders["merit"].isEnabled()
        panel.direction_buttons["merit"].click()
    panel.weight_sliders["latency_ms"].setValue(0)
    panel.weight_sliders[new_metric].setValue(10)
    assert window.model.trials[window.model.ranking.best].metric(new_metric) == 9.0
    # a weight given from outside the panel (a session's file, a retargeted run) gets its row too
    window.model.set_weights({**window.model.weights.values, "latency_p20_ms": 0.5})
    assert panel.weight_labels["latency_p20_ms"].text() == "0.5"


def test_a_session_of_failures_only_offers_no_failures_figure_to_weigh(window):
    """With every trial failed or aborted, *weigh another metric...* offered what only failures
    carry (an aborted trial's latency bound), which would rank nothing."""
    space = SearchSpace([Slot("x", (0, 1), "launch")])
    trials = [Trial(0, Config({"x": 0}), Measurement.failure(Status.COMPILE_ERROR, "no")),
              Trial(1, Config({"x": 1}), Measurement(Status.ABORTED, {"latency_bound_ms": 3.0}))]
    window.model.set_session(Session(kernel="toy", space=space, trials=trials, device={"name": "toy"}))
    assert "latency_bound_ms" not in _offered(window.objective_panel)
