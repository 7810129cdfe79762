"""The importance widget: bars follow the computed shares, a click on a bar selects that slot
(signal + per-value latency plot), bursts of refresh requests coalesce, few trials say why; the
computation runs off the GUI thread, only the latest request's result is shown, and a request for
what is shown computes nothing."""

from __future__ import annotations

import math
import threading
import time

import numpy as np
import pytest
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtCore import Qt

from workbench.core.domain.importance import value_distributions
from workbench.core.domain.measurement import Measurement, Status, Trial
from workbench.core.domain.objective import Constraints, Weights
from workbench.core.domain.space import SearchSpace, Slot
from workbench.gui.importance_view import ImportanceView

SPACE = SearchSpace([
    Slot("block", (64, 128, 256, 512), "launch"),
    Slot("vec", (1, 2, 4), "memory"),
    Slot("fast", (False, True), "compute"),
])
DOMAINS = {s.name: list(s.values) for s in SPACE.slots}


def trials(n: int, seed: int = 0) -> list[Trial]:
    """block decides latency, vec a little, fast nothing; block 512 with vec 4 fails to launch."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        config = SPACE.config({s.name: s.values[rng.integers(len(s.values))] for s in SPACE.slots})
        if config["block"] == 512 and config["vec"] == 4:
            m = Measurement.failure(Status.LAUNCH_ERROR, "too many resources requested for launch")
        else:
            lat = math.exp(abs(math.log2(config["block"]) - 7) + {1: 0.4, 2: 0.2, 4: 0.0}[config["vec"]])
            m = Measurement(Status.OK, {"latency_ms": lat * (1 + 0.01 * rng.standard_normal())})
        out.append(Trial(i, config, m))
    return out


@pytest.fixture
def view(qtbot):
    data = {"trials": trials(200), "calls": 0}

    def source():
        data["calls"] += 1
        return data["trials"]

    widget = ImportanceView(source, objective=lambda: (Constraints(), Weights()), domains=DOMAINS)
    widget.data = data  # type: ignore[attr-defined]
    qtbot.addWidget(widget)
    widget.resize(500, 600)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


@pytest.fixture
def computed(qtbot):
    """``computed(view)``: refresh ``view`` and wait for the result its thread delivers."""

    def refresh(view, *args):
        view.refresh(*args)
        qtbot.waitUntil(lambda: not view.computing, timeout=30_000)

    return refresh


def test_bars_follow_the_shares_and_the_top_slot_is_shown(view, computed) -> None:
    computed(view)
    assert list(view.shares)[0] == "block"
    assert sum(view.shares.values()) == pytest.approx(1.0)
    widths = list(view.bars.opts["width"])
    assert widths == pytest.approx(list(view.shares.values()))
    assert view.selected_slot == "block"
    # the value plot shows one box per block value with ok trials, medians as in the core figures
    stats = value_distributions(view.data["trials"], ["block"], DOMAINS)["block"]
    assert len(view.boxes.opts["x"]) == sum(s.n_ok > 0 for s in stats)
    assert "200 trials" in view.status.text()
    # said for the person looking at it, not as a path into the repository's docs
    assert "not which value wins" in view.status.text() and "docs/" not in view.status.text()
    # what the shares are relative to: the configs measured (a slot a search settled early looks unimportant)
    assert "a slot the search settled early varies little among them" in view.status.text()


def test_clicking_a_bar_selects_its_slot(view, qtbot, computed) -> None:
    computed(view)
    box = view.bar_plot.getPlotItem().getViewBox()
    scene_point = box.mapViewToScene(view.bar_position("vec"))
    widget_point = view.bar_plot.mapFromScene(scene_point)
    with qtbot.waitSignal(view.slot_selected, timeout=2000) as signal:
        qtbot.mouseClick(view.bar_plot.viewport(), Qt.MouseButton.LeftButton, pos=widget_point)
    assert signal.args == ["vec"]
    assert view.selected_slot == "vec"
    assert len(view.boxes.opts["x"]) == 3
    ticks = view.value_plot.getAxis("bottom")._tickLevels[0]
    assert [label.split("\n")[0] for _, label in ticks] == ["1", "2", "4"]
    assert "failed" in ticks[2][1]  # vec 4 includes the failed launches


def test_latency_target_and_few_trials(view, qtbot, computed) -> None:
    view.set_target("latency_ms")
    qtbot.waitUntil(lambda: not view.computing, timeout=30_000)
    assert view.importance.target == "latency_ms" and view.importance.available
    computed(view, trials(5))
    assert not view.importance.available
    assert "not shown" in view.status.text() and "at least" in view.status.text()
    assert all(w == 0 for w in view.bars.opts["width"])


def test_refresh_requests_coalesce(view, qtbot) -> None:
    view.data["calls"] = 0
    for _ in range(10):
        view.schedule_refresh()
    qtbot.waitUntil(lambda: view.data["calls"] == 1, timeout=3000)
    qtbot.wait(600)
    assert view.data["calls"] == 1


def test_refresh_requests_arriving_faster_than_the_delay_still_refresh_while_they_arrive(view, qtbot) -> None:
    """A live run asks every 100 ms; each request restarted the 400 ms timer, so the tab stayed
    empty ('0 trials') until the run ended."""
    import time

    view.data["calls"] = 0
    began = time.monotonic()
    while time.monotonic() - began < 1.5:
        view.schedule_refresh()
        qtbot.wait(100)
    assert view.data["calls"] >= 2


def test_each_bar_is_labelled_with_its_share_and_the_axis_is_named(view, computed, qtbot) -> None:
    computed(view)
    texts = [label.toPlainText().strip() for label in view.bar_labels]
    from workbench.gui.importance_view import share_text

    assert texts == [share_text(view.shares[name]).strip() for name in view._order]
    assert all(text[0].isdigit() or text[0] in "<>" and text.endswith("%") for text in texts)
    assert all(label.isVisible() for label in view.bar_labels)
    top = view.bar_labels[0]
    assert top.pos().x() == pytest.approx(view.shares[view._order[0]])  # at the end of its bar
    assert view.bar_plot.getAxis("bottom").labelText == "share of importance"
    # the axis reads in percentages, as the bars' figures do (it read 0.2 beside "42%")
    axis = view.bar_plot.getAxis("bottom")
    assert axis.tickStrings([0.0, 0.2, 0.4], 1.0, 0.2) == ["0%", "20%", "40%"]
    assert axis.tickStrings([0.05, 0.1], 1.0, 0.05) == ["5%", "10%"]
    assert axis.tickStrings([0.005, 0.01], 1.0, 0.005) == ["0.5%", "1.0%"]
    box = view.bar_plot.getViewBox().sceneBoundingRect()  # room for each figure after its bar
    assert all(label.sceneBoundingRect().right() <= box.right() + 1 for label in view.bar_labels), (
        [label.sceneBoundingRect().right() for label in view.bar_labels], box.right())
    view.setFont(QFont(view.font().family(), int(view.font().pointSizeF() * 2)))  # presentation mode's size

    def inside() -> bool:  # once the view has laid itself out for the font (10 ms was too little under load)
        box = view.bar_plot.getViewBox().sceneBoundingRect()
        return all(label.sceneBoundingRect().right() <= box.right() + 1 for label in view.bar_labels)

    qtbot.waitUntil(inside, timeout=5000)
    # the bar box narrowed after the view's own resize or font change had been handled (the layout
    # catching up later, under load): the figures follow the box itself
    view.bar_plot.setFixedWidth(view.bar_plot.width() // 2)
    qtbot.waitUntil(inside, timeout=5000)


def test_the_importance_tab_of_an_empty_window_raises_nothing(window, qtbot, monkeypatch):
    """With no session there are no bars, and pyqtgraph's bar item failed on an empty list of pens
    in every refresh (a traceback from the slot each time)."""
    import sys

    errors: list = []
    monkeypatch.setattr(sys, "excepthook", lambda kind, value, tb: errors.append(value))
    window.bottom_tabs.setCurrentWidget(window.pages.page("importance"))
    qtbot.wait(300)
    window.importance.refresh()
    qtbot.waitUntil(lambda: not window.importance.computing, timeout=30_000)
    assert not errors, errors


class Gated:
    """Stands in for ``slot_importance``: each call waits for its own gate (at most 10 s), then
    computes as usual; ``started`` lists (target, trials) in call order."""

    def __init__(self, real):
        self.real, self.gates, self.started = real, [threading.Event() for _ in range(4)], []

    def __call__(self, trials, names, **kwargs):
        self.started.append((kwargs.get("target"), len(trials)))
        self.gates[len(self.started) - 1].wait(10)
        return self.real(trials, names, **kwargs)


def test_refresh_returns_at_once_and_the_result_arrives(view, qtbot, monkeypatch) -> None:
    import workbench.gui.importance_view as module

    gated = Gated(module.slot_importance)
    monkeypatch.setattr(module, "slot_importance", gated)
    start = time.perf_counter()
    view.refresh()
    assert time.perf_counter() - start < 2  # not the 10 s the computation is held for
    assert view.computing and "computing" in view.status.text() and view.busy.isVisible()
    gated.gates[0].set()
    qtbot.waitUntil(lambda: not view.computing, timeout=30_000)
    assert not view.busy.isVisible()
    assert list(view.shares)[0] == "block" and "200 trials" in view.status.text()
    # nothing it depends on changed: nothing is computed again
    view.refresh()
    view.set_target("latency_ms")
    assert view.computing
    gated.gates[1].set()
    qtbot.waitUntil(lambda: not view.computing, timeout=30_000)
    view.refresh()
    assert not view.computing and gated.started == [("score", 200), ("latency_ms", 200)]


def test_only_the_latest_request_is_computed_and_shown(view, qtbot, monkeypatch) -> None:
    import workbench.gui.importance_view as module

    gated = Gated(module.slot_importance)
    monkeypatch.setattr(module, "slot_importance", gated)
    view.refresh()  # computing: score over 200 trials
    qtbot.waitUntil(lambda: len(gated.started) == 1, timeout=5_000)
    view.set_target("latency_ms")  # waits its turn...
    view.refresh(trials(150, seed=1))  # ...and is replaced by this one before it comes
    gated.gates[0].set()
    qtbot.waitUntil(lambda: len(gated.started) == 2, timeout=30_000)
    # the first result was stale when it came: not shown; the latest is being computed
    assert view.computing and view.importance.reason == "no trials yet" and view.importance.target == "score"
    gated.gates[1].set()
    qtbot.waitUntil(lambda: not view.computing, timeout=30_000)
    assert gated.started == [("score", 200), ("latency_ms", 150)]
    assert view.importance.target == "latency_ms" and view.importance.available
    assert view.importance.n_trials == sum(t.ok for t in trials(150, seed=1))


def test_the_objective_recomputes_the_score_importance_only(view, qtbot, monkeypatch, computed) -> None:
    import workbench.gui.importance_view as module

    objective = {"weights": Weights()}
    view._objective = lambda: (Constraints(), objective["weights"])
    computed(view)
    calls: list = []
    real = module.slot_importance
    monkeypatch.setattr(module, "slot_importance", lambda *a, **k: calls.append(k["target"]) or real(*a, **k))
    objective["weights"] = Weights({"latency_ms": 2.0})  # the same ratios, another objective
    computed(view)
    assert calls == ["score"]
    view.set_target("latency_ms")
    qtbot.waitUntil(lambda: not view.computing, timeout=30_000)
    objective["weights"] = Weights({"latency_ms": 3.0})
    computed(view)  # latency importance does not depend on the objective
    assert calls == ["score", "latency_ms"]


def test_going_back_to_the_importance_shown_while_another_computes_computes_nothing(view, qtbot, monkeypatch,
                                                                                   computed) -> None:
    """Switching to latency and back to score while latency computed computed the score again."""
    import workbench.gui.importance_view as module

    computed(view)  # the score importance shown
    shown = view.status.text()
    gated = Gated(module.slot_importance)
    monkeypatch.setattr(module, "slot_importance", gated)
    view.set_target("latency_ms")
    qtbot.waitUntil(lambda: len(gated.started) == 1, timeout=5_000)
    view.set_target("score")  # back to what is shown
    gated.gates[0].set()
    gated.gates[1].set()
    qtbot.waitUntil(lambda: not view.computing, timeout=30_000)
    assert gated.started == [("latency_ms", 200)] and view.status.text() == shown and not view.busy.isVisible()


def test_a_failed_computation_says_why_in_one_line_and_is_tried_again(view, qtbot, monkeypatch, computed) -> None:
    """A failure went to the thread's excepthook as a traceback, the view said "see the log" and
    the same request was never computed again."""
    import workbench.gui.importance_view as module
    from workbench.core.errors import WorkbenchError

    calls = []

    def broken(*args, **kwargs):
        calls.append(1)
        raise WorkbenchError("no slot varies among these trials")

    monkeypatch.setattr(module, "slot_importance", broken)
    computed(view)
    assert view.status.text() == "Importance not shown: no slot varies among these trials."
    computed(view)  # the same request: tried again, not taken for one shown
    assert len(calls) == 2


def test_a_wide_short_pane_shows_both_plots_side_by_side_with_every_bar(view, qtbot, computed) -> None:
    """In the bottom tabs of a 1440 x 900 window the stacked plots got half of 300 px each: three
    of five bars showed and the share axis was scrolled out of sight."""
    computed(view)
    view.resize(700, 290)
    qtbot.wait(20)
    assert view.bar_plot.geometry().top() == view.value_plot.geometry().top()  # side by side
    assert view.bar_plot.height() >= 200
    view.resize(500, 600)
    qtbot.wait(20)
    assert view.value_plot.geometry().top() > view.bar_plot.geometry().bottom()  # stacked when tall


def test_the_latency_per_value_axis_reads_in_latencies(view, computed, qtbot) -> None:
    """The strip plot's axis said "latency (ms, log10) (x0.001)" over ticks of -600 to 200: the
    log10 of the latencies, scaled by a thousand. It now labels the latencies themselves."""
    computed(view)
    view.resize(900, 500)
    view.show()
    qtbot.waitExposed(view)
    view.value_plot.grab()
    axis = view.value_plot.getAxis("left")
    latencies = np.concatenate([s.latencies for s in view.stats[view.selected_slot] if s.n_ok])
    assert axis.logMode and axis.labelled and "x0.001" not in axis.labelString()
    assert all(0.5 * latencies.min() <= v <= 2.0 * latencies.max() for v in axis.labelled), (axis.labelled, latencies)


def _slot_shown(qtbot, computed, space, made, slot, size):
    """A view of the trials ``made`` in ``space``, ``size`` px, computed and showing ``slot``
    (returned to the test, which holds it: the axis alone went with the view)."""
    widget = ImportanceView(lambda: made, objective=lambda: (Constraints(), Weights()),
                            domains={s.name: list(s.values) for s in space.slots})
    qtbot.addWidget(widget)
    widget.resize(*size)
    widget.show()
    qtbot.waitExposed(widget)
    computed(widget)
    widget.select_slot(slot)
    qtbot.wait(50)
    return widget


def test_a_slot_of_many_values_labels_every_kth_so_the_values_stand_apart(qtbot, computed) -> None:
    """31 block sizes ran their values together on the strip plot's axis ("6416283238...") and
    stacked their "N failed" lines; every k-th value is labelled, k as small as the width allows."""
    space = SearchSpace([Slot("block_size_x", tuple(range(32, 32 * 32, 32)), "launch"), Slot("vec", (1, 2), "memory")])
    rng = np.random.default_rng(1)
    made = []
    for i in range(300):
        config = space.config({"block_size_x": int(rng.choice(space.slots[0].values)), "vec": int(rng.choice((1, 2)))})
        m = (Measurement.failure(Status.LAUNCH_ERROR, "too many") if config["block_size_x"] > 900 and config["vec"] == 2
             else Measurement(Status.OK, {"latency_ms": 1.0 + config["block_size_x"] / 1000 + rng.random() * 0.01}))
        made.append(Trial(i, config, m))
    widget = _slot_shown(qtbot, computed, space, made, "block_size_x", (700, 500))
    axis = widget.value_plot.getAxis("bottom")
    labelled, unlabelled = axis._tickLevels  # what setTicks was given: the labelled level, then the rest
    assert 2 <= len(labelled) < 31 and len(labelled) + len(unlabelled) == 31
    spacing = labelled[1][0] - labelled[0][0]
    per = widget.value_plot.getPlotItem().vb.width() / 31
    from PySide6.QtGui import QFontMetricsF

    metrics = QFontMetricsF(axis.style.get("tickFont") or axis.font())
    widest = max(metrics.horizontalAdvance(line) for _, text in labelled for line in text.split("\n"))
    assert spacing * per >= widest  # neighbouring labels do not run together


def test_every_value_keeps_its_label_and_failure_count_when_only_the_words_do_not_fit(qtbot, computed) -> None:
    """Values whose "N failed" lines were too wide lost every other label, and with it the count of
    the value that failed most; the counts become marks the axis title explains."""
    values = tuple(range(1, 9))
    space = SearchSpace([Slot("tile", values, "compute"), Slot("vec", (1, 2), "memory")])
    made = []
    for i in range(240):
        config = space.config({"tile": 1 + i % 8, "vec": 1 + (i // 8) % 2})
        failing = i % 7 == 0 or (config["tile"] == 8 and i % 3 == 0)
        m = (Measurement.failure(Status.RUNTIME_ERROR, "boom") if failing
             else Measurement(Status.OK, {"latency_ms": 1.0 + config["tile"] / 10 + (i % 5) / 100}))
        made.append(Trial(i, config, m))
    # about 55 px a value: room for "8", not for "11 failed"
    widget = _slot_shown(qtbot, computed, space, made, "tile", (480, 420))
    axis = widget.value_plot.getAxis("bottom")
    labelled, unlabelled = axis._tickLevels
    failures = {v: sum(1 for t in made if not t.ok and t.config["tile"] == v) for v in values}
    assert not unlabelled and [text.split("\n") for _, text in labelled] == [[str(v), f"✕{failures[v]}"] for v in values]
    assert axis.labelText == "tile  (✕ failed)"
    widget.resize(1600, 420)  # room for the words: the counts in words, the title plain
    qtbot.wait(50)
    labelled, _ = axis._tickLevels
    assert [text.split("\n")[1] for _, text in labelled] == [f"{failures[v]} failed" for v in values]
    assert axis.labelText == "tile"


def test_a_share_of_minus_zero_is_labelled_0_percent(view, computed) -> None:
    """A share of -0.0 (a slot the data says nothing about) was drawn as "-0%"."""
    import dataclasses

    computed(view)
    last = view._order[-1]
    view.importance = dataclasses.replace(view.importance, shares={**view.importance.shares, last: -0.0})
    view._draw_bars()
    assert view.bar_labels[-1].toPlainText().strip() == "0%"


def test_a_share_under_half_a_percent_reads_under_one_percent_apart_from_its_bar() -> None:
    """0.45 % was labelled "0%", right after its sliver of a bar: it read as "-0%"."""
    from workbench.gui.importance_view import share_text

    assert [share_text(s).strip() for s in (0.0045, 0.005, 0.42, 0.0, -0.0, 0.995, 1.0)] == [
        "<1%", "<1%", "42%", "0%", "0%", ">99%", "100%"]
    assert all(share_text(s)[0].isspace() for s in (0.0045, 0.42, 0.0))


def _strategy_slot_view(qtbot, computed, names):
    """A 420 px view of a slot of four method names (about 80 px a value), showing that slot."""
    space = SearchSpace([Slot("strategy", names, "reduction"), Slot("vec", (1, 2), "memory")])
    made = [Trial(i, space.config({"strategy": names[i % 4], "vec": 1 + (i // 4) % 2}),
                  Measurement(Status.OK, {"latency_ms": 1.0 + (i % 4) / 10 + (i % 5) / 100})) for i in range(160)]
    return _slot_shown(qtbot, computed, space, made, "strategy", (420, 420))


def test_method_names_too_long_for_their_room_are_shortened_not_left_out(qtbot, computed) -> None:
    """A slot of four methods kept two labels in a narrow plot, and nobody could tell which box was
    which; the names are shortened to their room, the tool tip has them whole."""
    names = ("warp_shuffle_reduction", "shared_memory_tree", "two_pass_partials", "atomic_accumulate")
    view = _strategy_slot_view(qtbot, computed, names)
    axis = view.value_plot.getAxis("bottom")
    labelled, unlabelled = axis._tickLevels
    assert not unlabelled and len(labelled) == 4
    texts = [text for _, text in labelled]
    assert any(text.endswith("…") for text in texts) and len(set(texts)) == 4
    assert all(name in axis.toolTip() for name in names)


def test_names_that_shortened_would_read_alike_are_not_shortened_to_the_same_text(qtbot, computed) -> None:
    names = ("shared_memory_tree_a", "shared_memory_tree_b", "shared_memory_tree_c", "shared_memory_tree_d")
    view = _strategy_slot_view(qtbot, computed, names)
    labelled, _ = view.value_plot.getAxis("bottom")._tickLevels
    texts = [text for _, text in labelled]
    assert len(set(texts)) == len(texts)  # each label names one box (middle-cut, or whole and thinned)


def test_many_slots_in_a_short_pane_get_a_line_of_text_each(qtbot, computed) -> None:
    """Twelve slot names in a pane 260 px high were drawn a few pixels apart, each on top of the
    next: the bar plot asks for a line of its axis font per bar (a scroll area around the view
    then scrolls), also after a larger font."""
    space = SearchSpace([Slot(f"slot_{k}", (1, 2, 3), "compute") for k in range(12)])
    rng = np.random.default_rng(3)
    data = []
    for i in range(120):
        config = space.config({s.name: s.values[rng.integers(3)] for s in space.slots})
        latency = 1.0 + sum((k + 1) * config[f"slot_{k}"] for k in range(12)) / 100
        data.append(Trial(i, config, Measurement(Status.OK, {"latency_ms": latency})))
    widget = ImportanceView(lambda: data, objective=lambda: (Constraints(), Weights()),
                            domains={s.name: list(s.values) for s in space.slots})
    qtbot.addWidget(widget)
    widget.resize(600, 260)
    widget.show()
    qtbot.waitExposed(widget)
    computed(widget)

    def rows_apart() -> float:
        box = widget.bar_plot.getViewBox()
        return box.height() / box.viewRect().height()

    axis = widget.bar_plot.getAxis("left")
    line = QFontMetrics(axis.style["tickFont"] or axis.font()).height()
    qtbot.waitUntil(lambda: rows_apart() >= line, timeout=5000)
    widget.setFont(QFont(widget.font().family(), int(widget.font().pointSizeF() * 1.5)))  # presentation mode's
    line = widget.fontMetrics().height()  # (the zoom gives the axis the same font, after the view's)
    qtbot.waitUntil(lambda: rows_apart() >= line, timeout=5000)


def test_the_bar_rows_follow_the_zoom_back_down(window, qtbot, tmp_path):
    """Fitted at the view's font change, before the zoom gave the slot axis its font, the rows kept
    the height of the zoom before: 150 % after presentation mode was left."""
    bench = tmp_path / "many.py"
    bench.write_text("SPACE = {" + ", ".join(f'"slot_{k}": [1, 2, 3]' for k in range(14)) + "}\n\n\n"
                     "def measure(config):\n    return {\"latency_ms\": 1.0 + sum(config.values()) / 10}\n")
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({"kernel": str(bench), "backend": "python", "strategy": "random", "budget": 40})
    view = window.importance
    window.bottom_tabs.setCurrentWidget(view)
    view.refresh()
    qtbot.waitUntil(lambda: not view.computing and len(view._order) == 14, timeout=30_000)
    qtbot.waitUntil(lambda: view.bar_plot.minimumHeight() > 140, timeout=5000)
    normal = view.bar_plot.minimumHeight()
    window.zoom.set_factor(1.5, remember=False)
    qtbot.waitUntil(lambda: view.bar_plot.minimumHeight() > normal * 1.3, timeout=5000)
    window.zoom.set_factor(1.0, remember=False)
    qtbot.waitUntil(lambda: view.bar_plot.minimumHeight() == normal, timeout=5000)
