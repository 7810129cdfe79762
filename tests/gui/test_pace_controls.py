"""The s/eval box: a demonstration's pace for simulated runs as for replays, restored from the
session that was paced, and a continued run paced only as the box says."""

from __future__ import annotations

import time

from workbench.core.domain.session import load_session


def test_the_pace_box_serves_the_simulator_and_paces_its_run(window, qtbot, tmp_path):
    toolbar = window.toolbar
    toolbar.apply({"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 3,
                   "options": {"compile": "estimate"}})
    assert toolbar._action_of(toolbar.delay).isVisible()
    toolbar.delay.setValue(0.3)
    run = toolbar.request()
    assert run["delay_s"] == 0.3
    start = time.perf_counter()
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run(run)
    assert time.perf_counter() - start >= 2 * 0.3  # the first at once, then one per pace
    assert window.model.session.backend["options"]["delay_s"] == 0.3
    path = tmp_path / "paced.json"
    assert window.save_to(path)
    toolbar.delay.setValue(0.0)
    window.new_session()
    window.open_session(path)  # the pace the session was run at is shown again
    assert toolbar.delay.value() == 0.3
    toolbar.delay.setValue(0.0)  # and Start at 0 continues it unpaced
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({**toolbar.request(), "budget": 5})
    assert "delay_s" not in window.model.session.backend["options"]
    assert len(load_session(path).trials) == 3 + 5  # the budget is the continued run's own


def test_the_pace_box_is_hidden_where_nothing_is_paced(window):
    toolbar = window.toolbar
    toolbar.backend.setCurrentIndex(toolbar.backend.findData("python"))
    assert not toolbar._action_of(toolbar.delay).isVisible()
    assert toolbar.request()["delay_s"] == 0.0
