"""What the charts, table and card draw: memory axes that vary, axis labels that match, value names
on text slots, limit lines only while on, the violated constraint named, the excluded fastest config."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from workbench.core.domain.measurement import Measurement, Status, Trial
from workbench.core.domain.session import Session
from workbench.core.domain.space import Config, SearchSpace, Slot
from workbench.core.errors import WorkbenchError
from workbench.gui.text import dragged_limit, limit_text, metric_label
from workbench.gui.plot_axes import left_title


STRATEGIES = ("atomic", "tree", "shuffle")


def _space() -> SearchSpace:
    return SearchSpace([Slot("block_size", (64, 128, 256, 512), "launch"), Slot("strategy", STRATEGIES, "reduction")])


def _session(gflops_scale: float = 1.0) -> Session:
    """Device memory is the same for every config; on-chip storage per SM is not."""
    trials = []
    for i, config in enumerate(_space()):
        latency = 0.1 + 0.02 * i
        metrics = {"latency_ms": latency, "latency_p20_ms": latency * 0.98, "latency_p80_ms": latency * 1.03,
                   "memory_mb": 68.16, "onchip_kb_per_sm": 16.0 * (1 + i % 4), "smem_bytes": 1024.0,
                   "throughput_gbs": 400.0 / latency, "gflops": gflops_scale * 100.0 / latency, "quality": 0.9576}
        trials.append(Trial(i, config, Measurement(Status.OK, metrics)))
    return Session(kernel="toy", space=_space(), trials=trials,
                   device={"name": "toy GPU", "simulated": True, "peak_bandwidth_gbs": 4800.0, "peak_fp32_gflops": 60000.0})


@pytest.fixture
def shown(window):
    window.model.set_session(_session())
    window.refresh()
    for chart in window.charts.values():
        chart.refresh()
    QApplication.processEvents()
    return window


def test_tradeoff_plots_the_memory_figure_that_differs_and_draws_limits_only_when_on(shown):
    chart, model = shown.tradeoff_chart, shown.model
    assert chart.y_name == "onchip_kb_per_sm"  # device memory is flat: on-chip storage differs
    assert left_title(chart.plot) == metric_label("onchip_kb_per_sm")
    assert sorted(set(chart.feasible.ys.tolist())) == [16.0, 32.0, 48.0, 64.0]
    assert not chart.latency_line.isVisible() and not chart.memory_line.isVisible()
    (_, x1), _ = chart.plot.getPlotItem().vb.childrenBounds()
    assert x1 < 0.5  # log10 of the slowest latency: no invisible limit stretches the range
    model.set_constraints(max_latency_ms=0.2, max_memory_mb=100.0)
    assert chart.latency_line.isVisible()
    assert not chart.memory_line.isVisible()  # a MB limit has no place on a KB-per-SM axis
    chart.y_combo.setCurrentIndex(chart.y_combo.findData("memory_mb"))
    assert chart.y_name == "memory_mb" and chart.memory_line.isVisible()
    assert chart.memory_line.value() == pytest.approx(100.0)
    model.set_constraints(max_latency_ms=None)
    assert not chart.latency_line.isVisible()
    # the p20..p80 latency spread of each point is drawn as a segment
    xs, _ = chart.spread.getData()
    assert len(xs) == 2 * model.n


def test_explore_axes_match_the_combos_and_name_text_values(shown):
    chart = shown.metric_chart
    assert chart.axes()[1] == "throughput_gbs"  # 4000 GB/s of 4800 beats 1000 GFLOP/s of 60000
    chart.set_axes("slot:strategy", "latency_ms")
    assert chart.plot.getAxis("bottom").labelText == chart.x_combo.currentText() == "strategy (slot)"
    assert left_title(chart.plot) == chart.y_combo.currentText() == "latency (ms)"
    assert chart.plot.getAxis("bottom").categories == [(0.0, "atomic"), (1.0, "tree"), (2.0, "shuffle")]
    assert _drawn_tick_texts(chart.plot.getAxis("bottom")) == ["atomic", "tree", "shuffle"]  # none hidden at the ends
    assert not chart.x_log.isEnabled() and chart.y_log.isEnabled()  # no log of a text slot
    chart.x_log.setChecked(True)
    assert not chart.log_x
    # the trials of one value are spread across its category, not drawn on top of each other
    chart.refresh()
    xs = np.concatenate([chart.feasible.xs, chart.infeasible.xs])
    codes = np.rint(xs)
    assert np.all(np.abs(xs - codes) <= 0.2 + 1e-9)
    for code in np.unique(codes):
        same = xs[codes == code]
        assert len(np.unique(same)) == len(same)
    shown.model.select(3)  # the selection ring sits on the spread point, not on the category's centre
    ring = chart.selected_item.xs
    assert len(ring) == 1 and ring[0] in xs
    chart.set_axes("slot:block_size", "gflops", log_x=False)  # (log x was ticked above, on the text slot)
    sizes = [v for s in shown.model.session.space.slots if s.name == "block_size" for v in s.values]
    # a numeric slot is labelled at its values, not at round numbers between them
    assert chart.plot.getAxis("bottom").categories == [(float(v), str(v)) for v in sorted(sizes)]
    assert chart.plot.getAxis("left").categories == []  # a metric: ordinary ticks
    chart.refresh()
    assert set(np.concatenate([chart.feasible.xs, chart.infeasible.xs])) <= {
        float(t.config["block_size"]) for t in shown.model.trials}  # numbers stay where they are
    drawn = [t for t in _drawn_tick_texts(chart.plot.getAxis("bottom")) if t]
    assert drawn and set(drawn) <= {str(v) for v in sizes}
    view = chart.plot.getPlotItem().getViewBox()
    view.setXRange(140, 240, padding=0)  # zoomed in between two values: ordinary numbers, not a bare axis
    drawn = [t for t in _drawn_tick_texts(chart.plot.getAxis("bottom")) if t]
    assert len(drawn) >= 2 and all(140 <= float(t) <= 240 for t in drawn)
    view.enableAutoRange()
    assert left_title(chart.plot) == "GFLOP/s"
    chart.x_log.setChecked(True)  # on a log axis the ticks move with the values, to their logarithms
    assert chart.log_x
    assert chart.plot.getAxis("bottom").categories == [(pytest.approx(np.log10(v)), str(v)) for v in sorted(sizes)]
    chart.set_axes("slot:block_size", "slot:strategy")  # a slot on each axis: values across, names up
    assert [t for _, t in chart.plot.getAxis("left").categories] == ["atomic", "tree", "shuffle"]


def test_explore_default_rate_follows_the_roof(window):
    window.model.set_session(_session(gflops_scale=500.0))  # 500k/0.1 GFLOP/s: far nearer its roof
    window.refresh()
    assert window.metric_chart.axes()[1] == "gflops"
    assert left_title(window.metric_chart.plot) == "GFLOP/s"


def test_constraint_boxes_say_off_and_min_quality_stays_at_or_below_one(shown):
    panel = shown.objective_panel
    for control in panel.limits.values():
        assert control.spin.text() == "off"
    quality = panel.limits["min_quality"]
    assert quality.hi <= 1.0 and quality.slider.value() == 0  # loosest end of a lower bound is the left
    quality.enabled.setChecked(True)
    assert shown.model.constraints.min_quality is not None and shown.model.constraints.min_quality <= 1.0
    assert shown.model.ranking.n_feasible == shown.model.n  # switched on at its loosest: excludes nothing
    quality.enabled.setChecked(False)
    assert quality.spin.text() == "off" and shown.model.constraints.min_quality is None
    memory = panel.limits["max_memory_mb"]
    memory.spin.setValue(-0.5)  # typed between "off" and 0: a limit of 0, never a refused negative one
    assert memory.enabled.isChecked() and shown.model.constraints.max_memory_mb == 0.0
    memory.spin.setValue(-1.0)
    assert not memory.enabled.isChecked() and shown.model.constraints.max_memory_mb is None


def test_a_pareto_session_of_latency_and_memory_plots_its_own_front(window):
    """``--objectives latency_ms,memory_mb``: the chart's y started at the metric that differs most
    (on-chip storage), so the front drawn was not the run's. The run's other objective is the y."""
    session = _session()
    for trial in session.trials:  # device memory differs a little, on-chip storage much more
        trial.measurement.metrics["memory_mb"] = 68.0 + 0.1 * (trial.index % 3)
    window.model.set_session(dataclasses.replace(session, strategy={"name": "tpe", "objectives": ["latency_ms", "memory_mb"]}))
    chart = window.tradeoff_chart
    chart.refresh()
    assert chart.y_name == "memory_mb"
    window.model.set_session(session)  # the same trials searched for one score: the spread decides
    chart.refresh()
    assert chart.y_name == "onchip_kb_per_sm"


def test_a_failed_or_aborted_row_says_no_in_feasible_and_its_reason_once_in_status(window):
    """The feasible column repeated the failure's status (``launch_error`` twice, side by side)."""
    session = _session()
    session.trials[1] = Trial(1, session.trials[1].config, Measurement.failure(Status.LAUNCH_ERROR, "too many resources"))
    session.trials[2] = Trial(2, session.trials[2].config, Measurement(Status.ABORTED, {"latency_bound_ms": 3.0}))
    window.model.set_session(session)
    table = window.results.table_model
    cells = [(table.data(table.index(row, table.column_of("feasible"))),
              table.data(table.index(row, table.column_of("status")))) for row in range(3)]
    assert cells == [("yes", "ok"), ("no (failed)", "launch_error"), ("no (aborted)", "aborted")]
    # under a latency limit too: a candidate stopped early has no latency to violate it with
    window.model.set_constraints(max_latency_ms=2.0)
    assert [table.data(table.index(row, table.column_of("feasible"))) for row in range(3)] == \
        ["yes", "no (failed)", "no (aborted)"]


def test_table_puts_the_outcome_first_names_violations_and_the_card_names_the_excluded_fastest(shown):
    table = shown.results.table_model
    headers = [table.headerData(c, table_orientation()) for c in range(table.columnCount())]
    assert headers[:7] == ["#", "latency (ms)", "score", "feasible", "status", "block_size", "strategy"]
    assert headers[7] == "noise ±%" and headers[-2:] == ["message", "id"]
    shown.model.set_constraints(max_latency_ms=0.15)
    slow = 5  # latency 0.2
    # the cell names the violated metric as its column header does (the figures were cut to
    # "latency_ms …" even at 1920 px); the tool tip has the value and the limit
    cell = table.index(slow, table.column_of("feasible"))
    assert table.data(cell) == "no: latency"
    assert table.sort_key(slow, "feasible") == "no: latency"  # sorted as shown, failures beside each other
    assert table.data(cell, Qt.ItemDataRole.ToolTipRole) == "latency_ms 0.2 > 0.15"
    shown.model.set_constraints(max_latency_ms=0.1999)  # a limit just under the value: told apart
    assert table.data(cell, Qt.ItemDataRole.ToolTipRole) == "latency_ms 0.2 > 0.1999"
    shown.model.set_constraints(max_latency_ms=0.19999)  # not "0.2 > 0.2" (3 digits each)
    assert table.data(cell, Qt.ItemDataRole.ToolTipRole) == "latency_ms 0.2 > 0.19999"
    shown.model.set_constraints(max_latency_ms=0.15, max_memory_mb=0.5)  # each metric once, in the bounds' order
    assert table.data(cell) == "no: latency, memory"
    shown.model.set_constraints(max_latency_ms=0.15, max_memory_mb=None, extra=("registers <= 8",))
    assert table.data(cell) == "no: latency, registers"  # not "registers / thread", the header's unit
    shown.model.set_constraints(extra=())
    shown.model.set_constraints(max_latency_ms=0.15, max_memory_mb=None)
    from workbench.core.domain.objective import values_apart as _apart

    assert _apart(4.1312, 4.131) == ("4.1312", "4.131")  # "4.13 > 4.131" read as a contradiction
    assert _apart(1234567.0, 1234566.0) == ("1234567", "1234566") and _apart(0.2, 0.15) == ("0.2", "0.15")
    assert table.data(table.index(0, table.column_of("feasible"))) == "yes"
    assert table.data(table.index(0, table.column_of("spread"))) == "2.50"  # three digits, as the column's others
    # trial 0 (0.1 ms) holds 16 KB per SM: a floor of 20 KB excludes the fastest config
    shown.model.set_constraints(max_latency_ms=None, extra=("onchip_kb_per_sm >= 20",))
    card = shown.best_card.text()
    assert "The fastest config overall (trial 0, 0.1 ms, 1.20x faster) is excluded by" in card
    assert "onchip_kb_per_sm 16 &lt; 20" in card
    # right after the reason, before the config and its figures (out of sight below them on a projector)
    assert card.index("Why: ") < card.index("The fastest config overall") < card.index("<big>")
    assert "6.9 of the 7.2 correct digits" in card  # quality explained


def _drawn_tick_texts(axis) -> list[str]:
    """The tick labels pyqtgraph would actually paint (it hides those that overflow the axis)."""
    from PySide6.QtGui import QImage, QPainter

    QApplication.processEvents()
    image = QImage(max(int(axis.width()), 10), max(int(axis.height()), 10), QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        _, _, texts = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [text for _, _, text in texts]


def table_orientation():
    from PySide6.QtCore import Qt

    return Qt.Orientation.Horizontal


def test_exported_charts_carry_title_legend_and_the_simulated_label(shown, tmp_path):
    from PySide6.QtGui import QImage

    badge = shown.timing_badge.text().strip()
    assert badge.startswith("SIMULATED")
    svg = tmp_path / "tradeoff.svg"
    shown.export_chart("tradeoff", str(svg))
    text = svg.read_text()
    assert "Latency vs on-chip per SM (KiB) · toy · toy GPU" in text
    assert "SIMULATED: timings are modelled, not measured" in text
    for series in ("best", "p20"):
        assert series in text
    # this session measured no default config: not drawn, so not named; its front is one config
    # (the fastest is also the smallest), ringed and named so
    assert "default" not in text and "Pareto front (one config)" in text.replace("\xa0", " ")
    png = tmp_path / "tradeoff.png"
    shown.export_chart("tradeoff", str(png))
    image = QImage(str(png))
    assert image.width() >= 2 * shown.tradeoff_chart.plot.width()
    yellow = sum(1 for x in range(0, image.width() // 2, 4) for y in range(0, 160, 4)
                 if image.pixelColor(x, y).name() == "#f0c000")
    assert yellow > 20  # the SIMULATED label's box, under the title


def test_a_chart_export_onto_a_full_disk_leaves_the_file_there_and_says_why(shown, tmp_path, monkeypatch):
    """Qt saved the picture over the file in place: a full disk left a cut-off picture where the
    earlier one was, and the error said "could not write the image" with no cause."""
    import errno
    import os

    from workbench.core.errors import WriteFailed

    def disk_full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    for name in ("tradeoff.png", "tradeoff.svg"):
        target = tmp_path / name
        with monkeypatch.context() as patch:
            patch.setattr(os, "fsync", disk_full)
            with pytest.raises(WriteFailed, match=r"could not write the image \(No space left on device\)$"):
                shown.export_chart("tradeoff", str(target))
        assert list(tmp_path.iterdir()) == []  # no cut-off picture, no temporary file
        shown.export_chart("tradeoff", str(target))  # an export of the window's own: replaced without a backup
        earlier = target.read_bytes()
        with monkeypatch.context() as patch:
            patch.setattr(os, "fsync", disk_full)
            with pytest.raises(WriteFailed, match=r"could not write the image \(No space left on device\)$"):
                shown.export_chart("tradeoff", str(target))
        assert target.read_bytes() == earlier and [p.name for p in tmp_path.iterdir()] == [name]  # whole, as it was
        target.unlink()


def _simulated_trial_session():
    """One simulated trial with the model's stored breakdown, one measured-style trial without."""
    terms = [{"name": "memory", "value": 0.017, "unit": "ms", "explanation": "67 MB at 3886 GB/s"},
             {"name": "compute", "value": 0.0003, "unit": "ms", "explanation": "0.02 GFLOP"},
             {"name": "waves", "value": 15.5, "unit": "waves", "explanation": "16384 blocks in 16 waves"},
             {"name": "launch", "value": 0.003, "unit": "ms", "explanation": "1 launch"}]
    details = {"terms": terms, "bound": "memory", "occupancy": "limited by threads: 100% occupancy", "simulated": True}
    space = SearchSpace([Slot("block_size", (64, 128), "launch")])
    configs = list(space)
    simulated = Measurement(Status.OK, {"latency_ms": 0.0279, "throughput_gbs": 2400.0, "gflops": 600.0,
                                        "dram_mb": 67.1, "work_gflop": 0.0168}, details=details)
    plain = Measurement(Status.OK, {"latency_ms": 0.05, "throughput_gbs": 1340.0, "gflops": 335.0})
    return Session(kernel="toy", space=space, trials=[Trial(0, configs[0], simulated), Trial(1, configs[1], plain)],
                   device={"name": "toy GPU", "simulated": True, "peak_bandwidth_gbs": 4800.0, "peak_fp32_gflops": 60000.0})


def test_why_panel_draws_the_selected_trials_modelled_terms_and_its_peaks(window):
    window.model.set_session(_simulated_trial_session())
    window.model.select(0)
    view = window.why_view
    ticks = [name for _, name in view.plot.getAxis("left")._tickLevels[0]]
    assert ticks == ["memory", "compute", "launch"]  # the ms terms, top to bottom; waves is a fact
    # one unit for the chart, the largest time's (bars, figures, axis and latency line alike)
    assert list(view.bars.opts["width"]) == pytest.approx([17.0, 0.3, 3.0])
    assert view.plot.getAxis("bottom").labelText == "modelled time (µs)"
    # each value set apart from its bar, and no tick beside the names: at a bar too short to see,
    # tick and value read "-0.003 ms"
    # in the unit that keeps the largest a plain number (a sync term read "1.27e-05 ms"), the same
    # for every term ("300 ns" between "17 µs" and "3 µs" read as another kind of figure)
    assert [label.toPlainText() for label in view.value_labels] == ["\u200217 µs", "\u20020.3 µs", "\u20023 µs"]
    from workbench.gui.text import time_unit
    from workbench.gui.why_view import term_text

    assert [term_text(v) for v in (0.0, 4.54e-10, 0.0123, 17.0)] == ["0", "< 0.001", "0.0123", "17"]

    # 0.9996 ms at three digits is 1 ms, not "1e+03 µs"
    assert [time_unit(v)[1] for v in (0.9996, 0.0009996, 0.9994, 0.0)] == ["ms", "µs", "µs", "ms"]
    assert view.plot.getAxis("left").style["tickLength"] == 0
    assert view.latency_line.isVisible() and view.latency_line.value() == pytest.approx(27.9)
    facts = view.facts.text()
    assert "memory-bound" in facts and "limited by threads" in facts and "waves: 16384 blocks" in facts
    assert "50% of the GPU's peak bandwidth (2400 of 4800 GB/s" in facts
    assert "1.0% of the GPU's peak FP32 rate (600 of 60000 GFLOP/s)" in facts
    assert "modelled by the simulator" in view.title.text()
    window.model.select(1)  # no stored breakdown: the figures and the same ratios, no bars
    assert len(view.bars.opts["width"]) == 0 and not view.latency_line.isVisible()
    assert "28% of the GPU's peak bandwidth" in view.facts.text() and "measured" in view.title.text()
    assert view.plot.isHidden() and "its share of the device's peaks above" in view.facts.text()
    window.model.set_session(dataclasses.replace(_simulated_trial_session(), device={"name": "toy GPU"}))
    window.model.select(1)  # a recording: no peaks to compare with, and the panel says so
    assert view.plot.isHidden() and "does not give this device's peak bandwidth and FLOP/s" in view.facts.text()
    window.model.select(0)
    assert not view.plot.isHidden()


@pytest.mark.parametrize("size", [(1440, 900), (1920, 1080)])
def test_why_panel_figures_fit_the_plot_and_the_latency_label_grows_in_presentation_mode(window, qtbot, size):
    """In presentation mode the figure after the longest bar ran past the plot's edge ("0.0159"
    without "ms"), the latency line's label kept its small font and covered the bottom bar's figure."""
    window.model.set_session(_simulated_trial_session())
    window.model.select(0)
    view = window.why_view
    window.bottom_tabs.setCurrentWidget(view)
    window.zoom.presentation_action.setChecked(True)
    window.resize(*size)
    qtbot.wait(50)
    view.refresh()
    qtbot.wait(20)
    box = view.plot.getPlotItem().vb.sceneBoundingRect()
    label = view.latency_line.label
    assert label.textItem.font().pointSizeF() == pytest.approx(view.font().pointSizeF())
    assert view.font().pointSizeF() > window.zoom.base_point_size * 1.2  # presentation mode's large font
    for figure in view.value_labels:
        rect = figure.sceneBoundingRect()
        assert rect.right() <= box.right() + 1, (figure.toPlainText(), rect.right(), box.right())
        assert not rect.intersects(label.sceneBoundingRect()), figure.toPlainText()


def test_roofline_places_trials_under_the_roofs(window):
    window.model.set_session(_simulated_trial_session())
    window.bottom_tabs.setCurrentWidget(window.roofline_chart)
    QApplication.processEvents()
    chart = window.roofline_chart
    chart.refresh()
    assert chart.plot.getAxis("bottom").labelText == "arithmetic intensity (FLOP/byte)"
    assert left_title(chart.plot) == "modelled GFLOP/s (simulated)"  # nothing ran: not "achieved"
    data = chart.data
    assert data.per_config and data.ridge == pytest.approx(12.5)
    assert data.intensity[0] == pytest.approx(0.0168e9 / 67.1e6)
    assert data.gflops[0] == pytest.approx(0.0168 / 0.0279e-3)
    assert np.isnan(data.intensity[1])  # without its own traffic figures: not drawn in per-config mode
    xs, ys = chart.roof.getData()
    assert 10 ** xs[1] == pytest.approx(12.5) and 10 ** ys[1] == pytest.approx(60000.0)  # the ridge (log axes)
    assert chart.best.data.tolist() == [0] and chart.best.xs[0] == pytest.approx(np.log10(data.intensity[0]))
    assert not chart.no_data.isVisible()
    # (its name too where that covers neither a trial nor the sloped roof; in this plot it would)
    assert chart.compute_label.toPlainText() in ("peak FP32 60000 GFLOP/s", "60000 GFLOP/s")
    assert chart.bandwidth_label.toPlainText() == "4800 GB/s"
    chart.plot.getPlotItem().vb.autoRange()
    QApplication.processEvents()
    box = chart.plot.getPlotItem().vb.sceneBoundingRect()
    for label in (chart.compute_label, chart.bandwidth_label):  # inside the plot, not cut by its edge
        assert box.contains(label.sceneBoundingRect()), (label.toPlainText(), label.sceneBoundingRect(), box)
        # over the roofs and the trials, on a light fill: the sloped roof and the star crossed them out
        assert label.zValue() > max(chart.roof.zValue(), chart.best.zValue()) and label.fill.color().alpha() > 0
    window.model.select(0)  # the selection is ringed where the trial sits
    assert chart.selected_item.xs[0] == pytest.approx(np.log10(data.intensity[0]))
    assert chart.selected_item.ys[0] == pytest.approx(np.log10(data.gflops[0]))


def test_presentation_mode_enlarges_fonts_and_markers_and_is_remembered(shown, qtbot, tmp_path):
    from workbench.gui.settings_store import JsonSettings

    from workbench.gui.main_window import MainWindow

    chart = shown.tradeoff_chart
    base_marker = chart.feasible.opts["size"]
    base_font = shown.font().pointSizeF()
    shown.zoom.presentation_action.trigger()
    assert shown.zoom.factor == pytest.approx(1.5)
    assert chart.feasible.opts["size"] == pytest.approx(1.5 * base_marker)
    assert shown.font().pointSizeF() == pytest.approx(1.5 * base_font)
    assert chart.plot.getAxis("bottom").style["tickFont"].pointSizeF() == pytest.approx(1.5 * shown.zoom.base_point_size)
    assert "12.0pt" in chart.legend.styleSheet()
    assert shown.why_view.plot.getAxis("left").style["tickFont"].pointSizeF() == pytest.approx(1.5 * shown.zoom.base_point_size)
    shown.resize(1920, 1080)  # room for a step past presentation mode's (at 1440 px it is taken back)
    shown.zoom.zoom_in()
    assert shown.zoom.factor == pytest.approx(1.5 * 1.15) and shown.zoom.presentation_action.isChecked()
    shown.settings.sync()
    again = MainWindow(interactive=False, settings=JsonSettings(shown.settings.fileName()))
    qtbot.addWidget(again)
    assert again.zoom.factor == pytest.approx(1.5 * 1.15)  # remembered
    again.zoom.set_factor(1.0)
    assert again.tradeoff_chart.feasible.opts["size"] == pytest.approx(base_marker)


def test_status_bar_summary_ends_in_an_ellipsis_instead_of_running_under_the_device_label(shown):
    label = shown.summary_label
    label.setText("recommended: " + "x" * 400)
    shown.resize(1440, 900)
    QApplication.processEvents()
    assert label.geometry().right() < shown.device_label.geometry().left()  # side by side, not overlapping
    assert label.shown_text().endswith("…") and len(label.shown_text()) < 400
    assert label.toolTip() == label.text()  # the whole text on hover


@pytest.mark.parametrize("presentation", [False, True])
def test_a_long_status_message_ends_in_an_ellipsis_and_its_whole_text_is_its_tool_tip(shown, qtbot, presentation):
    """QStatusBar painted a message as it was, cut mid-word under the device label with nothing
    to say more was there; in presentation mode's large font most messages were cut."""
    from PySide6.QtCore import QPoint
    from PySide6.QtGui import QStatusTipEvent

    if presentation:
        shown.zoom.set_factor(1.5)
    shown.resize(1440, 900)
    bar = shown.statusBar()
    text = "Some session settings not restored: " + "a long reason, " * 30 + "the end"
    bar.showMessage(text)  # no timeout: on a loaded machine 400 ms could pass before the asserts
    QApplication.processEvents()
    label = bar.message_label
    assert bar.currentMessage() == text and label.isVisible() and not shown.summary_label.isVisible()
    assert label.shown_text().endswith("…") and label.toolTip() == text
    right = label.mapTo(shown, QPoint(label.width(), 0)).x()
    assert right <= shown.device_label.mapTo(shown, QPoint(0, 0)).x()  # beside the device label, not under it
    short = "saved run.json"
    bar.showMessage(short, 400)
    QApplication.processEvents()
    assert label.shown_text() == short
    qtbot.waitUntil(lambda: bar.currentMessage() == "", timeout=3000)  # the timeout clears it
    assert not label.isVisible() and shown.summary_label.isVisible()
    # a menu entry's status tip goes the same way
    QApplication.sendEvent(shown, QStatusTipEvent("tip " + "x" * 600))
    assert bar.currentMessage().startswith("tip ") and label.shown_text().endswith("…")
    QApplication.sendEvent(shown, QStatusTipEvent(""))
    assert bar.currentMessage() == ""


def test_parallel_coordinates_and_slices_draw_every_trial_across_slots_and_score(shown):
    model = shown.model
    view = shown.parallel
    shown.bottom_tabs.setCurrentWidget(view)
    QApplication.processEvents()
    assert [name for _, name in view.plot.getAxis("bottom").categories] == ["block_size", "strategy", "score"]
    assert view.value_label_texts()[:7] == ["64", "128", "256", "512", "atomic", "tree", "shuffle"]
    xs, ys = view.feasible.getData()
    assert len(xs) == 4 * model.n  # 3 axes + a break per trial
    # the legend names the lines drawn: every trial is feasible, so no "infeasible" (it was always there)
    assert "feasible" in view.legend.text() and "infeasible" not in view.legend.text()
    assert "best feasible" in view.legend.text()
    best = model.ranking.best
    _, best_y = view.best.getData()
    assert best_y[-1] == pytest.approx(model.ranking.score[best]) == pytest.approx(1.0)
    assert best_y[0] == pytest.approx(0.0)  # block_size 64 is the lowest value on its axis
    # the axes' values lie over every line, on a light fill: drawn under them, they were crossed out
    lines = max(item.zValue() for item in (view.feasible, view.best))
    assert all(label.zValue() > lines and label.fill.color().alpha() > 0 for label in view.value_labels)
    slices = shown.slices
    shown.bottom_tabs.setCurrentWidget(slices)
    QApplication.processEvents()
    assert list(slices.plots) == ["block_size", "strategy"]
    strategy = slices.plots["strategy"]
    assert strategy.getAxis("bottom").categories == [(0.0, "atomic"), (1.0, "tree"), (2.0, "shuffle")]
    _, feasible, best_item = slices.points["strategy"]
    assert sorted(feasible.ys.tolist()) == sorted(model.ranking.score.tolist())
    assert best_item.data.tolist() == [best]
    # on the best's own jittered point: at the value's centre it drew the best twice
    assert best_item.xs.tolist() == [feasible.xs[feasible.data.tolist().index(best)]]
    assert not view.sample_note.isVisible()  # every trial drawn


def test_parallel_coordinates_of_many_trials_draw_an_even_sample_and_say_so(shown, monkeypatch):
    """A line per trial of an 18,000-config recording took 5 s to draw on the GUI thread."""
    from workbench.gui import search_views

    monkeypatch.setattr(search_views, "MAX_LINES", 5)
    view = shown.parallel
    shown.bottom_tabs.setCurrentWidget(view)
    view.refresh()
    QApplication.processEvents()
    feasible, infeasible = view.feasible.getData()[0], view.infeasible.getData()[0]
    drawn = (len(feasible if feasible is not None else []) + len(infeasible if infeasible is not None else [])) // 4
    assert drawn == 5 < shown.model.n
    assert view.sample_note.isVisible() and view.sample_note.text().startswith(f"5 of {shown.model.n:,} successful")
    assert view.best.getData()[1][-1] == pytest.approx(1.0)  # the best feasible, drawn whatever the sample


def test_a_slot_of_one_value_is_labelled_by_its_name_alone(window):
    """pyqtgraph scaled a one-value category axis's range and titled it "KWG (x0.001)" over 32."""
    from workbench.gui.plot_axes import CategoryAxis

    axis = CategoryAxis("bottom", title="KWG")
    axis.setLabel("KWG")
    axis.setRange(-0.5, 0.5)
    axis.set_categories([0.0], ["32"])
    assert axis.labelString().count("x0.001") == 0 and "KWG" in axis.labelString()


def test_compare_shows_two_configs_side_by_side_with_their_source_diff_and_overlays_sessions(shown, tmp_path):
    from workbench.core.domain.session import save_session

    view = shown.compare
    model = shown.model
    view.set_pair(0, 5)  # block 64/atomic vs block 128/shuffle... by the space's order
    a, b = model.trials[0], model.trials[5]
    rows = {r[0]: r for r in view.rows_shown()}
    assert rows["block_size"][1:3] == [str(a.config["block_size"]), str(b.config["block_size"])]
    assert rows["latency (ms)"][1:] == ["0.1", "0.2", "2.00x"]  # ratios at three digits, as 1.30x
    assert rows["memory (MB)"][3] == ""  # the same: no ratio
    differing = {view.table.item(r, 0).text() for r in range(view.table.rowCount())
                 if view.table.item(r, 0).background().color().name() == "#ffecb3"}
    assert "latency (ms)" in differing and "memory (MB)" not in differing
    assert view.diff.placeholderText().startswith("no source to compare: ")  # toy session: nothing to render
    # sessions overlaid: this one and a saved copy with a slower start
    other = _session()
    for trial in other.trials:  # each trial faster than the one before, down to twice this one's best
        trial.measurement.metrics["latency_ms"] = 0.2 + 0.02 * (len(other.trials) - 1 - trial.index)
    path = tmp_path / "other.json"
    save_session(other, path)
    view.add_session(str(path))
    assert len(view.curves) == 2
    xs, ys = view.curves[1].getData()  # a staircase: each best holds until the evaluation that beats it
    assert len(xs) >= 2 * len(other.trials) - 1  # (a line from point to point sloped from the one before)
    assert all(x0 == x1 or y0 == y1 for x0, x1, y0, y1 in zip(xs, xs[1:], ys, ys[1:]))
    _, ours = view.curves[0].getData()
    _, theirs = view.curves[1].getData()
    assert 10 ** ours[-1] == pytest.approx(0.1) and 10 ** theirs[-1] == pytest.approx(0.2)  # log y axis
    # what both share said once, first: each line then names what tells it apart, and its figure
    lines = view.curve_legend.text().split("<br>")
    assert lines[0] == "toy · toy GPU:" and lines[2].endswith("session 2: ? (best 0.2 ms)")
    assert "another kernel" not in view.curve_legend.text()
    # another kernel's session, named in its file with markup, imported from a recording (no strategy)
    alien = dataclasses.replace(_session(), kernel="<b>conv</b>", device={"name": "A100", "recorded": True})
    save_session(alien, tmp_path / "alien.json")
    view.add_session(str(tmp_path / "alien.json"))
    third = view.curve_legend.text().split("<br>")[2]
    # shown as text, not markup; a recording tagged as one (a simulated GPU is named so: "Simulated ...")
    assert "session 3: &lt;b&gt;conv&lt;/b&gt; · A100 [recorded] · imported" in third
    assert "(another kernel: its latencies measure other work)" in third


def test_an_exported_comparison_labels_each_kind_of_timing_it_overlays(shown, tmp_path):
    """A simulated curve overlaid on a replay was exported under the one label of the open session
    ("REPLAY: timings were recorded earlier"), as if it had been recorded too."""
    from workbench.core.domain.session import save_session

    view = shown.compare
    same = tmp_path / "same.json"
    save_session(_session(), same)  # simulated, as the open one: the open session's label alone
    view.add_session(str(same))
    shown.export_chart("compare", str(tmp_path / "same.svg"))
    assert "SIMULATED: timings are modelled, not measured" in (tmp_path / "same.svg").read_text()
    replayed = _session()
    replayed.device = {"name": "A100", "replayed": True}
    save_session(replayed, tmp_path / "replayed.json")
    view.add_session(str(tmp_path / "replayed.json"))
    shown.export_chart("compare", str(tmp_path / "mixed.svg"))
    text = (tmp_path / "mixed.svg").read_text().replace("\xa0", " ")
    assert "SIMULATED: sessions 1, 2 modelled, not measured; REPLAY: session 3 recorded earlier, not measured now" \
        in " ".join(text.split())


def test_a_comparison_label_calls_an_import_recorded_and_a_replay_replayed() -> None:
    """An import of a Kernel Tuner cache (of the replay backend) was labelled REPLAY in the exported
    comparison, while the same picture's legend, the status bar and show called it recorded."""
    from types import SimpleNamespace

    from workbench.gui.comparison import comparison_timing_label

    replay = SimpleNamespace(device={"name": "A4000", "replayed": True}, backend={"kind": "replay"})
    imported = SimpleNamespace(device={"name": "A100", "recorded": True}, backend={"kind": "replay"})
    simulated = SimpleNamespace(device={"name": "H200", "simulated": True}, backend={"kind": "sim"})
    assert comparison_timing_label([replay, imported, simulated], "REPLAY: ...") == (
        "SIMULATED: session 3 modelled, not measured; REPLAY: session 1 recorded earlier, not measured now; "
        "RECORDED: session 2 measured earlier, not now")


def test_a_chart_exported_larger_than_its_pane_is_drawn_at_the_pictures_size_not_stretched(shown, tmp_path,
                                                                                           monkeypatch):
    """The Compare pane (312 x 352 pixels) was rendered stretched to the picture's 900 x 520: its tick
    labels and axis titles came out wide and squashed. It is laid out at the picture's size, then
    given its own back."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    chart = shown.compare
    drawn = []
    original = chart.plot.render

    def recorded(painter, *args):
        if len(args) == 3:  # the picture's (a lay-out pass paints the plot alone first)
            drawn.append((args[0].size().toSize(), args[1].size(), args[2]))
        return original(painter, *args)

    monkeypatch.setattr(chart.plot, "render", recorded)
    # a tab not shown: Qt lays its chart out only once shown, so its layout is stretched to the
    # picture as before (it was drawn small in a blank picture)
    assert not chart.plot.isVisible()
    shown.export_chart("compare", str(tmp_path / "hidden.png"))
    (target, source, mode), = drawn
    assert mode == Qt.AspectRatioMode.IgnoreAspectRatio and source == chart.plot.getPlotItem().size().toSize()
    drawn.clear()
    shown.bottom_tabs.setCurrentWidget(chart)
    QApplication.processEvents()
    before = chart.plot.size()
    assert before.width() < 900
    shown.export_chart("compare", str(tmp_path / "compare.png"))
    (target, source, mode), = drawn
    assert target == source and target.width() >= 900  # drawn one to one, at the picture's size
    assert chart.plot.size() == before


def test_compare_curves_fall_only_to_configs_the_constraints_admit(shown, tmp_path):
    """The curves took every successful trial: under a constraint that excludes the fastest config
    they ended below the recommendation the card showed beside them, for the open session and for
    the overlaid ones alike."""
    from workbench.core.domain.session import save_session

    view = shown.compare
    shown.bottom_tabs.setCurrentWidget(view)
    other = _session()
    for trial in other.trials:
        trial.measurement.metrics["latency_ms"] *= 2
    save_session(other, tmp_path / "other.json")
    view.add_session(str(tmp_path / "other.json"))

    def ends() -> list[float]:
        return [10 ** float(curve.getData()[1][-1]) for curve in view.curves]  # log y axis

    assert ends() == pytest.approx([0.1, 0.2])
    shown.model.set_constraints(extra=("onchip_kb_per_sm >= 32",))  # the first config, the fastest of each, is out
    QApplication.processEvents()
    assert ends() == pytest.approx([0.12, 0.24])
    assert shown.model.trials[shown.model.ranking.best].metric("latency_ms") == pytest.approx(0.12)  # the card's
    legend = view.curve_legend.text()
    assert "feasible under onchip_kb_per_sm &gt;= 32" in legend and "best feasible 0.24 ms" in legend
    assert left_title(view.plot) == "best feasible latency (ms)"
    shown.model.set_constraints(extra=("onchip_kb_per_sm >= 1000",))  # nothing meets it
    QApplication.processEvents()
    assert all(curve.getData()[1] is None for curve in view.curves)  # nothing drawn
    assert view.curve_legend.text().count("no feasible trial") == 2
    shown.model.set_constraints(extra=())  # relaxed: the curves fall back to the fastest
    QApplication.processEvents()
    assert ends() == pytest.approx([0.1, 0.2]) and left_title(view.plot) == "best latency (ms)"
    assert "feasible" not in view.curve_legend.text()


def test_compare_draws_its_curves_once_per_run_tick_and_no_tick_values_before_a_trial(window, monkeypatch):
    """Holding the curves to the constraints redrew them on every ranking change too, which a run's
    tick sends right after the trials it added: twice per tick. And its empty plot read 2, 5, 9 ms."""
    view = window.compare
    window.bottom_tabs.setCurrentWidget(view)
    QApplication.processEvents()
    assert not any(view.plot.getAxis(name).style["showValues"] for name in ("left", "bottom"))
    session = _session()
    trials = session.trials
    session.trials = trials[:3]
    window.model.set_session(session)
    QApplication.processEvents()
    assert all(view.plot.getAxis(name).style["showValues"] for name in ("left", "bottom"))
    draws = []
    drawn = view._draw_curves
    monkeypatch.setattr(view, "_draw_curves", lambda: (draws.append(1), drawn()))
    session.trials.append(trials[3])
    window.model.sync()
    assert len(draws) == 1
    window.model.set_constraints(max_latency_ms=0.15)  # a constraint: drawn again, held to it
    assert len(draws) == 2


def test_a_narrow_compare_pane_narrows_the_names_not_the_figures(shown):
    """At 1440 px in presentation mode B was cut to "0.0281" and B / A was out of sight: the
    names' column gives up its width first, each name whole in its tool tip."""
    view = shown.compare
    shown.bottom_tabs.setCurrentWidget(view)
    view.set_pair(0, 5)
    table = view.table
    table.resizeColumnsToContents()
    figures = [table.columnWidth(c) for c in (1, 2, 3)]
    names = table.columnWidth(0)
    table.setFixedWidth(sum(figures) + names // 2 + table.verticalHeader().width() + 4)
    QApplication.processEvents()
    view._fit_columns()
    assert [table.columnWidth(c) for c in (1, 2)] == figures[:2] and table.columnWidth(3) >= figures[2]  # whole
    assert table.columnWidth(0) < names
    assert table.item(0, 0).toolTip() == table.item(0, 0).text()


def test_large_rates_are_written_as_numbers_not_exponents():
    from workbench.core.domain.figures import fmt

    assert fmt(46690.3) == "46690" and fmt(0.01951) == "0.01951" and fmt(3439.4) == "3439"


def test_a_column_shows_its_numbers_at_one_precision(window):
    """Digits that line up read as one precision: a latency of 0.0527 beside 0.05265 keeps its
    trailing zero, and every score has three decimals, the best one's 1 too."""
    from workbench.core.domain.figures import fmt
    from workbench.gui.text import score_text

    assert fmt(0.0527, column=True) == "0.05270" and fmt(0.0527) == "0.0527"
    assert fmt(2.5, 3, column=True) == "2.50" and fmt(1.0, column=True) == "1.000" and fmt(46690.3, column=True) == "46690"
    assert fmt(32.0) == "32" and fmt(32, column=True) == "32"
    assert score_text(1.0) == "1.000" and score_text(0.97) == "0.970" and score_text(float("nan")) == "-"
    session = _session()
    configs = [t.config for t in session.trials[:2]]
    session.trials = [Trial(0, configs[0], Measurement(Status.OK, {"latency_ms": 0.0527, "occupancy": 1.0, "registers": 32.0})),
                      Trial(1, configs[1], Measurement(Status.OK, {"latency_ms": 0.05265, "occupancy": 0.125, "registers": 40.0}))]
    window.model.set_session(session)
    table = window.results.table_model

    def cell(row: int, key: str) -> str:
        return table.data(table.index(row, table.column_of(key)))

    assert cell(0, "metric:latency_ms") == "0.05270" and cell(1, "score") == "1.000"
    # a column of fractions writes its whole numbers so too; one of whole numbers stays in integers
    assert (cell(0, "metric:occupancy"), cell(1, "metric:occupancy")) == ("1.000", "0.1250")
    assert (cell(0, "metric:registers"), cell(1, "metric:registers")) == ("32", "40")
    # a slot of fractions too
    space = SearchSpace([Slot("scale", (0.5, 0.25, 1.0))])
    trials = [Trial(i, config, Measurement(Status.OK, {"latency_ms": 1.0 + i})) for i, config in enumerate(space)]
    window.model.set_session(Session(kernel="toy", space=space, trials=trials, device={"name": "toy GPU"}))
    assert sorted(cell(row, "slot:scale") for row in range(3)) == ["0.2500", "0.5000", "1.000"]
    space = SearchSpace([Slot("step", (1, 1.5, 2))])  # ints beside a float (the slot holds floats)
    trials = [Trial(i, config, Measurement(Status.OK, {"latency_ms": 1.0 + i})) for i, config in enumerate(space)]
    window.model.set_session(Session(kernel="toy", space=space, trials=trials, device={"name": "toy GPU"}))
    assert sorted(cell(row, "slot:step") for row in range(3)) == ["1.000", "1.500", "2.000"]
    # a switch reads True / False, as the card and the charts write it (the table said no / yes)
    space = SearchSpace([Slot("use_shared", (False, True))])
    trials = [Trial(i, config, Measurement(Status.OK, {"latency_ms": 1.0 + i})) for i, config in enumerate(space)]
    window.model.set_session(Session(kernel="toy", space=space, trials=trials, device={"name": "toy GPU"}))
    assert sorted(cell(row, "slot:use_shared") for row in range(2)) == ["False", "True"]
    assert "<b>use_shared</b> = False" in window.best_card.text()


def test_table_hides_metric_columns_that_say_nothing_until_a_trial_says_something(window):
    """A kernel without floating-point work shows no column of zero GFLOP/s, and metrics no trial
    reports (occupancy, registers of a python benchmark) take no room; a later trial that reports
    one brings its column back."""
    window.model.set_session(_session(gflops_scale=0.0))
    table, view = window.results.table_model, window.results.view
    hidden = {name: view.isColumnHidden(table.column_of("metric:" + name))
              for name in ("gflops", "throughput_gbs", "quality", "occupancy", "registers")}
    assert hidden == {"gflops": True, "throughput_gbs": False, "quality": False, "occupancy": True, "registers": True}
    session = window.model.session
    config = next(iter(_space()))
    session.add(Trial(len(session.trials), config, Measurement(Status.OK, {"latency_ms": 0.5, "gflops": 12.0})))
    window.model.sync()
    assert not view.isColumnHidden(table.column_of("metric:gflops"))


def test_the_pareto_front_follows_trials_refined_in_place(shown):
    """Trials re-evaluated at the end of a run keep their count and session: the front must still
    be recomputed from their new latencies (a stale sort drew a zig-zag)."""
    chart = shown.tradeoff_chart
    chart.refresh()
    session = shown.model.session
    n = len(session.trials)
    refined = []
    for trial in session.trials:  # reverse the latency order, same indices and memory
        metrics = dict(trial.measurement.metrics, latency_ms=0.1 + 0.02 * (n - 1 - trial.index))
        refined.append(Trial(trial.index, trial.config, Measurement(Status.OK, metrics)))
    session.trials = refined
    shown.model.set_session(session)  # what the window does after a refinement
    chart.refresh()
    xs, ys = chart.pareto.getData()
    assert np.all(np.diff(xs) > 0) and np.all(np.diff(ys) < 0)
    latency, memory = shown.model.metric("latency_ms"), shown.model.metric(chart.y_name)
    fastest = int(np.argmin(latency))
    assert xs[0] == pytest.approx(np.log10(latency[fastest]) if chart.log_x else latency[fastest])
    assert ys[0] == pytest.approx(memory[fastest])


def test_a_front_of_one_config_is_ringed_and_stays_in_the_legend(window):
    """When one config beats every other on both axes the front is that point: a line of one point
    draws nothing, and "Pareto front" left the legend while a class looked for it."""
    session = _session()
    for trial in session.trials:  # the fastest config also holds the least on-chip storage
        trial.measurement.metrics["onchip_kb_per_sm"] = 8.0 + trial.index
    window.model.set_session(session)
    chart = window.tradeoff_chart
    chart.refresh()
    fastest = int(np.argmin(window.model.metric("latency_ms")))
    assert len(chart.pareto_point) == 1 and chart.pareto_point.data.tolist() == [fastest]
    assert chart.pareto.getData()[0] is None or len(chart.pareto.getData()[0]) == 0
    assert "Pareto&nbsp;front&nbsp;(one&nbsp;config)" in chart.legend.text()
    session = _session()
    for trial in session.trials:  # slower configs hold less: every one is on the front
        trial.measurement.metrics["onchip_kb_per_sm"] = 100.0 - trial.index
    window.model.set_session(session)  # a front of several: the line, and no ring
    chart.refresh()
    assert len(chart.pareto_point) == 0 and len(chart.pareto.getData()[0]) > 1
    assert "(one&nbsp;config)" not in chart.legend.text() and "Pareto&nbsp;front" in chart.legend.text()


def test_every_slot_latency_and_score_column_stays_visible_from_one_session_to_the_next(window, cli, tmp_path):
    """Qt keeps a column number's hidden flag across a model reset: the metric columns hidden for
    the empty window's layout hid slots, latency and score of the session opened next."""
    for kernel in ("vector_add", "conv2d", "vector_add"):  # 5, 7 and again 5 slots
        path = tmp_path / f"{kernel}-{len(list(tmp_path.iterdir()))}.json"
        done = cli("tune", kernel, "--backend", "sim", "--resources", "estimated", "--budget", "3",
                   "--executor", "inline", "--quiet", "--out", path)
        assert done.returncode == 0, done.stderr
        window.open_session(path)
        table, view = window.results.table_model, window.results.view
        always = [key for key in (table.column_key(c) for c in range(table.columnCount()))
                  if key.startswith("slot:") or key in ("score", "feasible", "metric:latency_ms")]
        assert len(always) >= len(window.model.session.space.names) + 3
        assert [k for k in always if view.isColumnHidden(table.column_of(k))] == [], kernel


def test_a_recording_without_memory_figures_still_gets_a_tradeoff_chart(window, cli, tmp_path):
    """The trade-off chart offered memory-like metrics only: for every Kernel Tuner recording it
    was an empty frame with an empty chooser. It now offers the metrics the trials do report,
    with the front oriented by each metric's direction."""
    from pathlib import Path

    cache = Path(__file__).parents[1] / "fixtures" / "kt_cache_small.json"
    path = tmp_path / "r.json"
    assert cli("tune", "--replay", cache, "--budget", "20", "--quiet", "--out", path).returncode == 0
    window.open_session(path)
    chart = window.tradeoff_chart
    chart._refresh()
    offered = [chart.y_combo.itemData(i) for i in range(chart.y_combo.count())]
    assert offered and not any(name.startswith("latency") for name in offered), offered
    assert not chart.no_data.isVisible() and len(chart.feasible.data) > 0
    if "gflops" in offered:  # larger is better: the front keeps the fastest trial, highest rate
        chart.y_combo.setCurrentIndex(chart.y_combo.findData("gflops"))
        chart._refresh()
        latency, rate = window.model.metric("latency_ms"), window.model.metric("gflops")
        shown = np.isfinite(latency) & np.isfinite(rate)
        front = chart._pareto(latency, rate, shown)
        assert int(np.nanargmax(np.where(shown, rate, np.nan))) in front.tolist()  # the highest rate is on it
        assert all(rate[a] > rate[b] for a, b in zip(front[1:], front[:-1]))  # slower only for a higher rate


def _kt_recording(tmp_path):
    """A Kernel Tuner cache: one record whose mean time a slow repetition drags up, one without repetitions."""
    import json

    from workbench.core.io.interop import import_kt_cache

    cache = {"device_name": "GPU X", "kernel_name": "k", "problem_size": 64, "tune_params_keys": ["block_size_x"],
             "tune_params": {"block_size_x": [32, 64]},
             "cache": {"32": {"block_size_x": 32, "time": 2.0, "times": [1.0] * 9 + [11.0]},
                       "64": {"block_size_x": 64, "time": 1.5}}}
    (tmp_path / "kt.json").write_text(json.dumps(cache))
    return import_kt_cache(tmp_path / "kt.json")


def test_a_kernel_tuner_trial_is_explained_with_its_median_and_kernel_tuners_own_time(tmp_path):
    """The median of the repetitions is called the median, Kernel Tuner's mean is named as its
    own figure, and a record without repetitions (one figure, Kernel Tuner's) is no median."""
    from workbench.gui.explain import breakdown

    session = _kt_recording(tmp_path)
    repeated, single = (breakdown(t, session.device).facts[0] for t in session.trials)
    # (recorded, not measured here: the window's badge says so, and the panel said "measured")
    assert repeated == "recorded: median latency (ms) 1, p20 1, p80 1, Kernel Tuner time (ms) 2"
    assert single == "recorded: latency (ms) 1.5, Kernel Tuner time (ms) 1.5"


def test_the_table_shows_kernel_tuners_time_for_a_recording_only(window, tmp_path):
    table, view = window.results.table_model, window.results.view
    window.model.set_session(_session())
    assert view.isColumnHidden(table.column_of("metric:kt_time_ms"))
    window.model.set_session(_kt_recording(tmp_path))
    column = table.column_of("metric:kt_time_ms")  # the slots before it differ
    assert not view.isColumnHidden(column)
    from PySide6.QtCore import Qt

    assert table.headerData(column, Qt.Orientation.Horizontal) == "Kernel Tuner time (ms)"
    assert "median" in table.headerData(column, Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole)


def test_every_column_header_says_what_it_holds(window):
    """Only metrics beyond the built-in columns had a tool tip: occupancy, registers / thread,
    on-chip per SM and every slot column said nothing, where the registry and the template have
    the words."""
    from PySide6.QtCore import Qt

    table = window.results.table_model
    window.model.set_session(_session())

    def tip(key: str) -> str:
        return table.headerData(table.column_of(key), Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole)

    assert tip("metric:occupancy") == "occupancy: achieved share of the SM's warp slots; higher is better"
    assert tip("metric:onchip_kb_per_sm").startswith("onchip_kb_per_sm: shared memory and registers the blocks "
                                                     "resident on one SM take together (KiB)")
    slot = window.model.session.space.slots[0]
    assert tip("slot:" + slot.name) == (f"{slot.name}: {slot.doc or 'a tunable slot'} ({slot.group}; "
                                        f"{len(slot.values):,} values)")
    assert "median" in tip("metric:kt_time_ms")  # (a tip of its own, kept)


def test_a_recording_read_before_the_median_rule_calls_its_latency_kernel_tuners_time(tmp_path):
    """A session imported (or replayed) when a record's latency_ms was Kernel Tuner's time has p20
    and p80 beside it but no Kernel Tuner time: its latency is that time (a mean), not a median."""
    from workbench.core.domain.measurement import Measurement
    from workbench.gui.explain import breakdown

    session = _kt_recording(tmp_path)
    old = {"latency_ms": 2.0, "latency_p20_ms": 1.0, "latency_p80_ms": 1.0}  # what the old rule stored
    trial = dataclasses.replace(session.trials[0], measurement=Measurement(session.trials[0].measurement.status, old))
    device = {k: v for k, v in session.device.items() if k != "kt_reading"}
    assert breakdown(trial, device).facts[0] == "recorded: latency (ms, Kernel Tuner's time) 2, p20 1, p80 1"
    replayed = {**device, "replayed": True, "backend": "replay"}
    assert breakdown(trial, replayed).facts[0].startswith("recorded (replayed): latency (ms, Kernel Tuner's time) 2")
    measured = {"name": "GPU X", "simulated": False}  # the workbench's own measurement: its median
    assert breakdown(trial, measured).facts[0].startswith("measured: median latency (ms) 2")


def test_the_card_says_when_the_recommendation_rests_on_estimated_resources(shown):
    """A trial simulated before its compile landed (a run stopped before refining, or a saved
    command-line run) is marked on the card: its figures may still move."""
    best = shown.model.ranking.best
    assert best is not None and "Resources estimated" not in shown.best_card.text()
    session = _session()
    trial = session.trials[best]
    session.trials[best] = Trial(trial.index, trial.config, Measurement(
        Status.OK, dict(trial.measurement.metrics), details={"estimated": True, "resources_pending": True}))
    shown.model.set_session(session)
    assert shown.model.ranking.best == best
    assert "Resources estimated" in shown.best_card.text() and "continues the session and refines" in shown.best_card.text()


def test_the_compare_table_and_the_source_diff_each_get_the_whole_pane(shown, qtbot):
    """At 1440 px, side by side, the table showed column A and one letter of column B, and once it
    took its columns' width the diff beside it kept 120 px, a dozen characters of each line. Each
    now has the pane in a tab of its own, the diff's saying how much differs."""
    view = shown.compare
    shown.bottom_tabs.setCurrentWidget(view)
    shown.resize(1440, 900)
    view.set_pair(0, 5)
    qtbot.wait(50)
    header = view.table.horizontalHeader()
    viewport = view.table.viewport().width()
    for column in (1, 2, 3):  # A, B and B / A
        assert header.sectionViewportPosition(column) + header.sectionSize(column) <= viewport, (column, viewport)
    # the figures first: "B is 1.3x slower" is what a comparison is read for (below the slots it was
    # out of sight at 1440 px)
    assert [row[0] for row in view.rows_shown()][:2] == ["latency (ms)", "latency p20 (ms)"], view.rows_shown()
    view.pair.setCurrentWidget(view.diff)
    qtbot.wait(50)
    assert view.diff.width() >= view.pair.width() - 10
    assert view.pair.tabText(1) == "Source diff (none)"  # a toy session: no source to render


def test_a_simulated_quality_that_compared_nothing_says_so() -> None:
    """A simulated template without emulation reports the quality of its reference rounded to
    float32, whatever the kernel computes: the card said '7.2 of the 7.2 correct digits ... against
    a float64 reference' for a kernel whose reference was wrong."""
    from workbench.core.model.quality import ROUNDED_REFERENCE
    from workbench.gui.best_card import _metric_note

    modelled = _metric_note("quality", 1.0, ROUNDED_REFERENCE)
    assert modelled.startswith(" <span style='color:#555'>(not checked: the simulator runs no kernel")
    assert "the reference rounded to float32" in modelled and "against a float64 reference" not in modelled
    emulated = _metric_note("quality", 0.9, "emulation")  # the simulator's NumPy emulation of the config
    assert "against a float64 reference" in emulated and "simulated: the config's arithmetic emulated" in emulated
    assert "no kernel ran" in emulated and "simulated" not in _metric_note("quality", 0.9, None)  # a GPU's
    # a quality below 1 never reads as every digit: "7.2 of the 7.2" was said of 0.9904
    assert "7.16 of the 7.22 correct digits" in _metric_note("quality", 0.9904, "emulation")
    assert "7.2 of the 7.2 correct digits" in _metric_note("quality", 1.0, None)


def _sized(problem: dict, latencies: list[float], problems: list[dict] | None = None) -> Session:
    """A toy session at ``problem`` whose trials (one per latency) were measured at ``problems``."""
    session = _session()
    trials = []
    for i, latency in enumerate(latencies):
        trial = dataclasses.replace(session.trials[i % len(session.trials)], index=i,
                                    problem=None if problems is None else dict(problems[i]))
        trial.measurement.metrics["latency_ms"] = latency
        trials.append(trial)
    return dataclasses.replace(session, problem=dict(problem), trials=trials)


def test_an_overlaid_session_is_compared_at_the_problem_size_shown():
    """A sweep's curve was one running minimum over every size (the smallest size's optimum), and
    a session of another size was drawn as if it measured the same work."""
    from workbench.gui.comparison import overlay_trials

    small, large = {"n": 1024}, {"n": 65536}
    sweep = _sized(large, [0.5, 0.01, 0.4, 0.02], [large, small, large, small])
    trials, elsewhere = overlay_trials(sweep, large)
    assert [t.metric("latency_ms") for t in trials] == [0.5, 0.4] and elsewhere is None
    trials, elsewhere = overlay_trials(sweep, small)
    assert [t.metric("latency_ms") for t in trials] == [0.01, 0.02] and elsewhere is None
    trials, elsewhere = overlay_trials(sweep, {"n": 7})  # not measured there: its own problem, said
    assert [t.metric("latency_ms") for t in trials] == [0.5, 0.4] and elsewhere == large
    only_small = _sized(large, [0.3, 0.2], [small, small])  # never measured at its own problem
    trials, elsewhere = overlay_trials(only_small, large)
    assert len(trials) == 2 and elsewhere == small


def test_compare_overlays_refuse_duplicates_keep_the_legend_on_errors_and_clear(shown, tmp_path):
    from workbench.core.domain.session import save_session

    view = shown.compare
    shown.path = tmp_path / "open.json"
    save_session(shown.model.session, shown.path)
    with pytest.raises(WorkbenchError, match="open.json is the open session: its curve is drawn already"):
        view.add_session(shown.path)
    other, other_size = tmp_path / "other.json", tmp_path / "other_size.json"
    save_session(_session(), other)
    save_session(_sized({"n": 4}, [0.05, 0.04]), other_size)  # the toy session has no problem: n=4 is another
    view.add_session(str(other))
    with pytest.raises(WorkbenchError, match="other.json is overlaid already"):
        view.add_session(str(tmp_path / "." / "other.json"))
    view.add_session(str(other_size))
    third = view.curve_legend.text().split("<br>")[3]  # (after what the three share, and two curves)
    assert "session 3" in third and "(at another problem size, n=4: its latencies measure other work)" in third
    # a file that is no session: one line above the legend, which still names every curve drawn
    (tmp_path / "bad.json").write_text("{")
    from unittest import mock
    with mock.patch("workbench.gui.compare_view.QFileDialog.getOpenFileName", return_value=(str(tmp_path / "bad.json"), "")):
        view._on_add_clicked()
    lines = view.curve_legend.text().split("<br>")
    assert "bad.json" in lines[0] and len(lines) == 5 and "this session" in lines[2] and len(view.curves) == 3
    view.clear_sessions()
    assert view.others == [] and len(view.curves) == 1 and not view.clear_button.isEnabled()
    view.add_session(str(other))  # cleared: the same file may come back
    assert len(view.curves) == 2 and view.clear_button.isEnabled()


def test_many_overlaid_sessions_keep_the_plot_its_room_and_distinct_strokes(shown, tmp_path, qtbot):
    from workbench.core.domain.session import save_session
    from workbench.gui.compare_view import CURVE_COLOURS, MAX_OVERLAID

    view = shown.compare
    shown.bottom_tabs.setCurrentWidget(view)
    for k in range(MAX_OVERLAID):
        path = tmp_path / f"s{k}.json"
        save_session(_session(), path)
        view.add_session(str(path))
    save_session(_session(), tmp_path / "one_more.json")
    with pytest.raises(WorkbenchError, match=f"at most {MAX_OVERLAID} sessions are overlaid: Clear them first"):
        view.add_session(str(tmp_path / "one_more.json"))
    qtbot.wait(10)
    # the whole legend would take more than the third it is given (it crushed the plot)
    assert view.isVisible() and view.curve_legend.sizeHint().height() > view.height() // 3 + 2
    assert view.legend_scroll.height() <= view.height() // 3 + 2 and view.plot.height() > view.height() // 3
    # cut short at whole lines: a line cut through its middle could not be read
    assert (view.legend_scroll.height() - 2) % view.curve_legend.fontMetrics().lineSpacing() == 0
    strokes = {(curve.opts["pen"].color().getRgb()[:3], curve.opts["pen"].style()) for curve in view.curves}
    assert len(strokes) == len(view.curves) == MAX_OVERLAID + 1 > len(CURVE_COLOURS)


def test_the_l1_pipe_term_is_not_called_shared_memory():
    """A config that uses no shared memory was "shared memory-bound: shared memory is the largest
    term" in front of a class: the model's term is the whole L1/shared-memory pipe."""
    from workbench.gui.explain import breakdown

    terms = [{"name": "shared memory", "value": 0.17, "unit": "ms", "explanation": "L1/shared-memory pipe: ..."},
             {"name": "memory", "value": 0.1, "unit": "ms", "explanation": "DRAM"}]
    trial = Trial(0, Config({"block_size": 64}), Measurement(Status.OK, {"latency_ms": 0.2},
                                                             details={"terms": terms, "bound": "shared memory"}))
    shown = breakdown(trial, {"name": "toy GPU", "simulated": True})
    assert [name for name, _ms, _why in shown.time_terms] == ["L1 / shared memory", "memory"]
    assert shown.facts[0] == "L1 / shared memory-bound (also the largest term)"
    spilled = [{"name": "spills", "value": 0.3, "unit": "ms", "explanation": "local-memory traffic"}, *terms]
    trial = Trial(1, Config({"block_size": 64}), Measurement(Status.OK, {"latency_ms": 0.5},
                                                             details={"terms": spilled, "bound": "memory"}))
    assert breakdown(trial, {"name": "toy GPU", "simulated": True}).facts[0] == \
        "memory-bound; the largest term is spills"  # not "memory-bound: spills is the largest term"


def test_compare_says_what_each_side_is(shown):
    """"A: trial 32 vs B: trial 0" told a class nothing of which was the tuned config; with no
    default config (a replay) B was silently the runner-up."""
    view = shown.compare
    ranking = shown.model.ranking
    best, second = ranking.best, int(ranking.order[1])
    view.set_pair(best, second)
    heading = view.heading.text()
    assert f"<b>A</b>: the recommended config, trial {shown.model.trials[best].index}" in heading
    assert f"<b>B</b>: the runner-up, trial {shown.model.trials[second].index}" in heading
    other = next(i for i in range(shown.model.n) if i not in (best, second) and i != shown.model.default_index)
    view.set_pair(other, best)
    assert view.heading.text().startswith(f"<b>A</b>: trial {shown.model.trials[other].index}")


def test_the_compare_pair_follows_the_ranking_until_the_person_picks_one(shown, qtbot):
    """After a constraint excluded the recommendation, the heading still called it "the recommended
    config" while the card, the status bar and every chart had moved on."""
    view = shown.compare
    shown.bottom_tabs.setCurrentWidget(view)
    qtbot.waitUntil(view.isVisible, timeout=2_000)
    model = shown.model
    first = model.ranking.best
    latency = model.metric("latency_ms")
    model.set_constraints(extra=(f"latency_ms >= {float(latency[first]) * 1.0001:.9g}",))  # the best is out
    best = model.ranking.best
    assert best is not None and best != first
    assert view.a == best and f"<b>A</b>: the recommended config, trial {model.trials[best].index}" in view.heading.text()
    view.pick(first, best)  # the person's pair stays; its roles are said anew
    model.set_constraints(extra=())
    assert (view.a, view.b) == (first, best)
    assert f"<b>A</b>: the recommended config, trial {model.trials[first].index}" in view.heading.text()
    # a ranking that moves while the tab is hidden is followed when it shows again
    view.chosen = False
    shown.bottom_tabs.setCurrentWidget(shown.results)
    model.set_constraints(extra=(f"latency_ms >= {float(latency[first]) * 1.0001:.9g}",))
    shown.bottom_tabs.setCurrentWidget(view)
    qtbot.waitUntil(view.isVisible, timeout=2_000)
    assert view.a == model.ranking.best != first
    # "A = selected" with nothing selected changes nothing, and does not hold the pair
    model.select(None)
    view.pick_a.click()
    assert not view.chosen and view.a == model.ranking.best


def test_the_card_marks_registers_and_occupancy_of_an_estimate(shown):
    """The estimated mode for demos (nothing compiled) gave a card saying 'occupancy: 1, registers /
    thread: 32' as facts, where a compile said 0.25 and 128: each such figure now says it is estimated."""
    best = shown.model.ranking.best
    session = _session()
    trial = session.trials[best]
    metrics = {**trial.measurement.metrics, "registers": 32.0, "occupancy": 1.0}
    session.trials[best] = Trial(trial.index, trial.config, Measurement(Status.OK, metrics, details={"estimated": True}))
    shown.model.set_session(session)
    lines = shown.best_card.text().split("<br>")
    for label in ("registers", "occupancy"):
        line = next(text for text in lines if text.startswith(label))
        assert line.endswith("<i>(estimated, not compiled)</i>"), line
    assert not any("estimated" in text for text in lines if text.startswith("latency"))


def test_why_panel_refits_its_figures_when_the_window_shrinks_under_it(window, qtbot):
    """The figures' room was fitted in the view's own resize, before the plot inside it had its new
    width: after the window shrank, the largest bar's figure ran past the plot's edge ("2.55" with
    its "ms" cut), and the latency line's label, centred on the line, past its left edge."""
    window.model.set_session(_simulated_trial_session())
    window.model.select(0)
    view = window.why_view
    window.bottom_tabs.setCurrentWidget(view)
    window.resize(2400, 1300)
    qtbot.wait(50)
    view.refresh()  # fitted to the wide window
    window.zoom.presentation_action.setChecked(True)
    window.resize(1440, 900)
    qtbot.wait(100)
    box = view.plot.getPlotItem().vb.sceneBoundingRect()
    for figure in view.value_labels:
        rect = figure.sceneBoundingRect()
        assert rect.right() <= box.right() + 1, (figure.toPlainText(), rect.right(), box.right())
    label = view.latency_line.label.sceneBoundingRect()
    assert box.left() - 1 <= label.left() and label.right() <= box.right() + 1, (label, box)
    # the figures lie over the latency line, on white: the line struck "2.55 ms" through
    assert all(figure.zValue() > view.latency_line.zValue() and figure.fill.color().alpha() > 0
               for figure in view.value_labels)


def test_explore_starts_a_slot_that_grows_by_a_factor_on_a_log_axis_until_the_person_says(window):
    """Threads per row of 1, 2, 4, ..., 256 on a linear axis put all but two values into its first
    tenth; such a slot starts on a log axis, and a log box the person set stays as set."""
    space = SearchSpace([Slot("threads", tuple(2 ** k for k in range(9)), "launch"), Slot("strategy", STRATEGIES, "reduction")])
    trials = [Trial(i, config, Measurement(Status.OK, {"latency_ms": 0.1 + 0.01 * i, "throughput_gbs": 100.0 + i}))
              for i, config in enumerate(space)]
    window.model.set_session(Session(kernel="toy", space=space, trials=trials, device={"name": "toy GPU", "simulated": True}))
    window.refresh()
    chart = window.metric_chart
    chart.refresh()
    assert chart.axes()[0] == "slot:threads"
    assert chart.x_log.isChecked() and chart.log_x and not chart.log_y  # a rate is no such slot: linear
    assert [t for _, t in chart.plot.getAxis("bottom").categories] == [str(2 ** k) for k in range(9)]
    chart.set_axes("slot:strategy", "throughput_gbs")  # as a slot picked in Importance is shown
    chart.set_axes("slot:threads", "throughput_gbs")
    assert chart.log_x  # the default again: set_axes without log flags does not choose for the person
    chart.x_log.click()  # the person wants it linear: it stays so
    assert not chart.log_x
    window.model.set_session(window.model.session)  # shown again (a run continued, another size)
    chart.refresh()
    assert not chart.x_log.isChecked() and not chart.log_x
    chart.x_combo.setCurrentIndex(chart.x_combo.findData("slot:strategy"))
    chart.x_combo.setCurrentIndex(chart.x_combo.findData("slot:threads"))
    chart.refresh()
    assert not chart.x_log.isChecked() and not chart.log_x
    chart.y_combo.setCurrentIndex(chart.y_combo.findData("slot:threads"))  # the y box was never set: log
    assert chart.y_log.isChecked() and chart.log_y
    # a session without trials yet: no log axis is possible, and no box is ticked while disabled
    window.model.set_session(Session(kernel="other", space=space, trials=[], device={"name": "toy GPU"}))
    chart.refresh()
    for box in (chart.x_log, chart.y_log):
        assert not box.isEnabled() and not box.isChecked()


def test_the_card_shows_the_figures_the_recommendation_was_ranked_and_constrained_on(own_metrics_window):
    """With a weight or a bound on a benchmark's own metric the card said "lowest merit" beside
    latency alone: the figures it chose by were not on it."""
    from workbench.gui.text import metric_label

    window = own_metrics_window
    window.model.set_constraints(extra=("energy_j <= 0.6",))
    window.model.set_weights({"latency_ms": 1.0, "tflops": 1.0})
    text = window.best_card.text()
    assert f"{metric_label('energy_j')}:" in text and f"{metric_label('tflops')}:" in text
    assert f"{metric_label('merit')}:" not in text  # reported, but nothing ranks or limits by it


def test_a_front_of_other_metrics_than_latency_is_named_and_its_metrics_can_be_plotted(window, cli, tmp_path):
    """A session that searched the front of registers and occupancy showed latency against memory
    and recommended "lowest latency" with nothing naming the search, and registers and occupancy
    were not offered on the trade-off chart's axis."""
    from workbench.gui.text import metric_label

    path = tmp_path / "front.json"
    done = cli("tune", "sgemm", "--backend", "sim", "--resources", "estimated", "--budget", "20",
               "--objectives", "registers,occupancy", "--executor", "inline", "--quiet", "--out", path)
    assert done.returncode == 0, done.stderr
    window.open_session(path)
    text = window.best_card.text()
    assert f"Pareto front of <b>{metric_label('registers')}, {metric_label('occupancy')}</b>" in text
    shown = json.loads(cli("show", path, "--json").stdout)
    assert f": {len(shown['pareto'])} feasible config" in text  # the front show lists
    chart = window.tradeoff_chart
    chart.refresh()
    offered = [chart.y_combo.itemData(i) for i in range(chart.y_combo.count())]
    assert "registers" in offered and "occupancy" in offered, offered



def test_a_front_whose_objective_never_varies_says_so(window, cli, tmp_path):
    """Every config of a transpose moves the same memory: its front of latency and memory is one
    config on a flat chart, which the card gave as "1 feasible config on it (show --json lists
    them)", a command-line flag in the window and no word on why."""
    from workbench.gui.text import metric_label

    path = tmp_path / "front.json"
    done = cli("tune", "transpose", "--backend", "sim", "--resources", "estimated", "--budget", "10",
               "--objectives", "latency_ms,memory_mb", "--executor", "inline", "--quiet", "--out", path)
    assert done.returncode == 0, done.stderr
    window.open_session(path)
    text = window.best_card.text()
    assert ": 1 feasible config on it (the command line's <i>show --json</i> lists it)" in text, text
    assert f"{metric_label('memory_mb')} is the same for every feasible config, so it trades nothing" in text

def test_a_front_of_a_benchmarks_own_metrics_keeps_every_other_metric_on_offer(window, cli, tmp_path):
    """Offering the front's metrics on the trade-off axis must not take away the other metrics a
    session without memory figures offers there (energy, beside merit and tflops)."""
    from tests.gui.conftest import OWN_METRICS_BENCH

    bench = tmp_path / "own.py"
    bench.write_text(OWN_METRICS_BENCH)
    path = tmp_path / "own.json"
    done = cli("tune", bench, "--objectives", "merit,tflops", "--maximize", "merit", "--budget", "12",
               "--strategy", "tpe", "--quiet", "--out", path)
    assert done.returncode == 0, done.stderr
    window.trusted_code.add(bench.resolve())
    window.open_session(path)
    from workbench.gui.axes import tradeoff_metrics

    offered = tradeoff_metrics(window.model)
    assert {"energy_j", "merit", "tflops"} <= set(offered), offered
    assert ": " in window.best_card.text() and "Pareto front of" in window.best_card.text()


def test_the_size_of_a_front_is_counted_without_comparing_every_pair():
    import numpy as np

    from workbench.core.domain.pareto import front_size

    rng = np.random.default_rng(1)
    for columns in (2, 3):
        for _ in range(200):
            points = rng.integers(0, 6, size=(int(rng.integers(1, 30)), columns)).astype(float)
            distinct = np.unique(points, axis=0)
            expected = sum(not any(np.all(o <= p) and np.any(o < p) for o in distinct) for p in distinct)
            assert front_size(points) == expected
    assert front_size(np.array([[1.0, np.nan], [2.0, 2.0]])) == 1 and front_size(np.zeros((0, 2))) == 0


def test_why_fast_says_nothing_is_feasible_rather_than_to_run_a_trial(shown):
    """With trials there and none feasible, it asked the person to 'select a trial (or run one)'."""
    view = shown.why_view
    shown.model.select(None)
    shown.model.set_constraints(max_latency_ms=1e-6)
    view.refresh()
    title = view.title.text()
    assert "No feasible config to explain: no feasible config among" in title and "run one" not in title


def test_a_row_the_window_picked_follows_the_recommendation_when_the_objective_moves_it(window, cli, tmp_path):
    """Opening a file selects its best trial; Why fast? and the source view kept showing it after a
    constraint excluded it (the card and the charts had moved on). A row the person picks stays."""
    out = tmp_path / "s.json"
    assert cli("tune", "sgemm", "--backend", "sim", "--resources", "estimated", "--budget", "12",
               "--executor", "inline", "--quiet", "--out", out).returncode == 0
    window.open_session(out)
    model = window.model
    first = model.ranking.best
    assert model.selected == first
    latency = model.metric("latency_ms")
    model.set_constraints(extra=(f"latency_ms >= {float(latency[first]) * 1.0001:.9g}",))
    assert model.ranking.best not in (None, first) and model.selected == model.ranking.best
    window.why_view.refresh()
    assert window.why_view.trial_index == model.ranking.best
    model.set_constraints(max_latency_ms=1e-6)  # nothing feasible: the window's own pick goes
    assert model.selected is None
    model.set_constraints(max_latency_ms=None)  # and comes back with the recommendation
    assert model.selected == model.ranking.best
    model.select(first)  # the person's pick stays whatever the objective does
    model.set_constraints(extra=())
    model.set_constraints(extra=(f"latency_ms >= {float(latency[first]) * 1.0001:.9g}",))
    assert model.selected == first
    model.select(None)  # and so does no selection, which the person chose
    model.set_constraints(extra=())
    assert model.selected is None


@pytest.mark.parametrize("how", ["replayed", "recorded"])
def test_why_fast_says_a_recordings_latency_was_recorded_earlier(window, cli, tmp_path, landscape, how):
    """The badge said REPLAY, and the panel beside it "measured"."""
    path = tmp_path / "s.json"
    if how == "replayed":
        assert cli("tune", "--replay", landscape("pnpoly_RTX_3090.json"), "--budget", "3", "--executor", "inline",
                   "--quiet", "--out", path).returncode == 0
    else:
        assert cli("import-kt", landscape("pnpoly_RTX_3090.json"), "--out", path).returncode == 0
    window.open_session(path)
    window.model.select(window.model.ranking.best)
    window.why_view.refresh()
    title = window.why_view.title.text()  # as the badge names it (an import opened here is replayed)
    assert " ms, recorded earlier (" in title and "measured" not in title, title


def test_a_recording_of_a_gpu_the_workbench_describes_is_explained_against_its_peaks(window, tmp_path):
    """A Kernel Tuner recording names its GPU but not its peaks: the Why view said "No model
    breakdown for a measured trial ... the session does not give this device's peak bandwidth and
    FLOP/s, or the trial reports no GB/s or GFLOP/s" beside a trial reporting 13,638 GFLOP/s of an
    A100, and the Roofline showed made-up axes under its message."""
    import json

    from workbench.core.io.interop import import_kt_cache
    from workbench.gui.explain import roofline, with_known_peaks

    cache = {"device_name": "NVIDIA A100-PCIE-40GB", "kernel_name": "k", "problem_size": 64,
             "tune_params_keys": ["block_size_x"], "tune_params": {"block_size_x": [32, 64]},
             "cache": {"32": {"block_size_x": 32, "time": 2.0, "GFLOP/s": 9000.0},
                       "64": {"block_size_x": 64, "time": 1.5, "GFLOP/s": 12000.0}}}
    (tmp_path / "kt.json").write_text(json.dumps(cache))
    window.model.set_session(import_kt_cache(tmp_path / "kt.json"))
    device, note = with_known_peaks(window.model.session.device)
    assert device["peak_fp32_gflops"] > 12000.0 and note.startswith("peak bandwidth and peak FP32 rate from") and "A100" in note
    assert with_known_peaks({"name": "GPU X", "recorded": True}) == ({"name": "GPU X", "recorded": True}, "")
    # a memory size the description does not have is another GPU (an A100 80GB's bandwidth is a
    # quarter higher), and a peak the recording has is kept
    assert with_known_peaks({"name": "NVIDIA A100-SXM4-80GB", "recorded": True})[1] == ""
    kept, note = with_known_peaks({"name": "NVIDIA A100-PCIE-40GB", "recorded": True, "peak_bandwidth_gbs": 1000.0})
    assert kept["peak_bandwidth_gbs"] == 1000.0 and note.startswith("peak FP32 rate from")
    why = window.why_view
    window.model.select(1)
    why.refresh()
    facts = why.facts.text()
    assert "of the GPU's peak FP32 rate (12000 of" in facts and "No model breakdown for a recorded trial" in facts
    assert "A100" in facts and "measured" not in facts
    data = roofline(window.model)  # no bytes recorded: no intensity, and the message says why
    assert data.reason.startswith("the trials report GFLOP/s but not the bytes they move")
    chart = window.roofline_chart
    window.bottom_tabs.setCurrentWidget(chart)
    chart.refresh()
    assert not chart.plot.getAxis("left").isVisible() and chart.no_data.isVisible()


def test_the_recommendation_card_gives_the_figure_the_trade_off_chart_plots(shown):
    """The card listed on-chip storage per SM beside a chart of on-chip storage per block, where
    the star sat at another number: students asked which was right."""
    chart, card = shown.tradeoff_chart, shown.best_card
    assert "shared memory (B)" not in card.text()
    chart.y_combo.setCurrentIndex(chart.y_combo.findData("smem_bytes"))
    assert chart.y_name == "smem_bytes" and "shared memory (B): 1024" in card.text()
    assert card.body.text().replace("\u200b", "") == card.text()  # shown, not only computed (breaks aside)
    # right after the latency, the chart's other axis: at the end of the figures it was below the
    # fold of a card that scrolls, on a projector
    figures = [line.removeprefix("<b>") for line in card.text().split("<br>")
               if ": " in line and (not line.startswith("<") or line.startswith("<b>latency"))]
    assert figures[0].startswith("latency") and figures[1].startswith("shared memory (B): 1024"), figures
    card.show_also("throughput_gbs")  # a rate the card hides when it is 0 stays when the chart plots it
    best = shown.model.trials[shown.model.ranking.best]
    best.measurement.metrics["throughput_gbs"] = 0.0
    card._on_ranking_changed()
    assert "throughput (GB/s): 0" in card.text()


def test_the_latency_limit_box_shows_the_limit_in_force_when_it_gains_a_decimal(window):
    """Set during a run while the box had 3 decimals, 1.44448 was shown as 1.444, and read 1.4440
    once faster trials came and gave the box more decimals, where the limit in force (the chart's
    line) is 1.44448."""
    import dataclasses

    slow = _session()
    for trial in slow.trials:  # latencies from 1.1 ms: three decimals
        trial.measurement.metrics["latency_ms"] += 1.0
    window.model.set_session(slow)
    window.refresh()
    window.model.set_constraints(max_latency_ms=1.444484)  # typed, or a session's own limit
    box = window.objective_panel.limits["max_latency_ms"].spin
    assert box.text() == "1.444484"  # every figure of the limit in force, beyond the data's own six
    faster = [dataclasses.replace(t, index=t.index + 100) for t in _session().trials]  # from 0.1 ms, as a run adds
    slow.trials.extend(faster)
    window.model.sync()
    window.refresh()
    assert box.text() == "1.444484" and window.model.constraints.max_latency_ms == 1.444484


def test_a_limit_being_typed_is_not_replaced_by_a_runs_refresh(window, qtbot):
    """A run's refresh set the box's decimals and value under the person's typing: "0.3" became
    "0.50000" before they pressed Enter."""
    window.model.set_session(_session())
    window.show()
    qtbot.waitExposed(window)
    control = window.objective_panel.limits["max_latency_ms"]
    control.enabled.setChecked(True)
    box = control.spin
    box.setFocus()
    qtbot.waitUntil(box.hasFocus, timeout=5000)
    box.lineEdit().setText("0.3")  # typed, not yet committed
    window.objective_panel._on_ranking_changed()  # what each run tick's new trials set off
    assert box.lineEdit().text() == "0.3"


def test_a_trial_without_source_shows_no_empty_source_box(window, qtbot, cli, tmp_path):
    """Under "a recording has no source" an empty white box took most of the pane, read on a
    projector as a view that failed to load; a template's trial shows its source again."""
    from pathlib import Path

    cache = Path(__file__).parents[1] / "fixtures" / "kt_cache_small.json"
    path = tmp_path / "r.json"
    assert cli("tune", "--replay", cache, "--budget", "5", "--quiet", "--out", path).returncode == 0
    window.open_session(path)
    window.model.select(0)
    view = window.source_view
    assert "no source" in view.header.text() and not view.editor.isVisible()
    window.model.dirty = False  # (nothing to ask about)
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 2,
                          "options": {"compile": "estimate"}})
    window.model.select(0)
    assert view.editor.isVisible() and "#define" in view.editor.toPlainText()


def test_an_empty_window_draws_no_tick_values_and_a_session_brings_them_back(window):
    """Before any trial the charts read "memory" from 0.1 to 0.9 and latencies of 2, 5, 9 ms:
    figures of nothing, on a projector, before the first run."""
    charts = list(window.charts.values())[:3]
    for chart in charts:
        chart.refresh()
        assert chart.no_data.isVisible()
        assert not any(chart.plot.getAxis(name).style["showValues"] for name in ("left", "bottom"))
    window.model.set_session(_session())
    for chart in charts:
        chart.refresh()
        assert all(chart.plot.getAxis(name).style["showValues"] for name in ("left", "bottom")), chart.title
    failed = _session()  # every trial failed: only the score chart plots them (at 0)
    failed.trials = [Trial(t.index, t.config, Measurement(Status.COMPILE_ERROR, {}, "error: expected ';'"))
                     for t in failed.trials]
    window.model.set_session(failed)
    shown = {}
    for chart in charts:
        chart.refresh()
        shown[chart.title] = all(chart.plot.getAxis(name).style["showValues"] for name in ("left", "bottom"))
    assert shown == {window.score_chart.title: True, window.tradeoff_chart.title: False,
                     window.metric_chart.title: False}, shown


@pytest.mark.parametrize("device, tag", [({"name": "toy GPU", "simulated": True}, " <i>(simulated)</i>"),
                                         ({"name": "A100", "recorded": True}, " <i>(recorded)</i>"),
                                         ({"name": "A100"}, "")])
def test_the_recommended_latency_says_where_it_comes_from(window, device, tag):
    """Only the status bar said SIMULATED: the card, shown or photographed alone, gave a modelled
    or recorded latency as a measurement."""
    import dataclasses

    window.model.set_session(dataclasses.replace(_session(), device=device))
    headline = next(line for line in window.best_card.text().split("<br>") if line.startswith("<b>latency (ms): "))
    assert headline.endswith("</b>" + tag)


def test_compare_keeps_an_aborted_candidates_bound_and_writes_switches_as_the_table_does(window):
    """An aborted trial's latency read "-" in Compare, where the table says "> 10.36", and a switch
    read yes / no where the card, the table and the charts write True / False."""
    from workbench.core.domain.measurement import Measurement, Status, Trial
    from workbench.core.domain.session import Session
    from workbench.core.domain.space import SearchSpace, Slot

    space = SearchSpace([Slot("fast", (False, True), "compute"), Slot("lr", (0.001, 0.01), "compute")])
    configs = list(space)
    trials = [Trial(0, configs[0], Measurement(Status.ABORTED, {"latency_bound_ms": 10.36}, "aborted above 10.36 ms")),
              Trial(1, configs[-1], Measurement(Status.OK, {"latency_ms": 4.375}))]
    window.model.set_session(Session(kernel="k", space=space, trials=trials, device={"name": "cpu"}))
    window.compare.set_pair(0, 1)
    rows = {r[0]: r for r in window.compare.rows_shown()}
    assert rows[metric_label("latency_bound_ms")][1:3] == ["10.36", "-"]
    assert rows["fast"][1:3] == [str(configs[0]["fast"]), str(configs[-1]["fast"])]
    assert rows["lr"][1:3] == [str(configs[0]["lr"]), str(configs[-1]["lr"])]


def test_the_why_panel_calls_an_imported_recording_imported_and_a_replay_replayed(window, tmp_path):
    """An import (whose backend is the replay's) was called "recorded earlier (replayed)", where the
    badge and the card call it recorded."""
    import dataclasses

    imported = _kt_recording(tmp_path)
    window.model.set_session(imported)
    window.model.select(0)
    assert window.why_view.title.text().endswith("recorded earlier (imported)")
    replayed = dataclasses.replace(imported, device={**imported.device, "replayed": True})
    window.model.set_session(replayed)
    window.model.select(0)
    assert window.why_view.title.text().endswith("recorded earlier (replayed)")


def test_the_roofline_tells_a_kernel_without_flops_from_a_recording_that_reports_neither_rate(window):
    """A recording of latencies alone was said to be a kernel without floating-point work, pointing
    to a GB/s it does not have."""
    import dataclasses

    from workbench.gui.explain import roofline

    session = _session()
    for trial in session.trials:
        trial.measurement.metrics.pop("gflops")
    window.model.set_session(session)  # bytes moved, no FLOPs: a copy kernel
    assert roofline(window.model).reason.startswith("no trial reports floating-point work")
    for trial in session.trials:
        trial.measurement.metrics.pop("throughput_gbs")
    window.model.set_session(dataclasses.replace(session))
    assert roofline(window.model).reason == ("the trials report neither GFLOP/s nor GB/s, so where they sit on a "
                                             "roofline is not known")


def test_a_recordings_rates_on_the_card_say_they_are_at_kernel_tuners_time(window, tmp_path):
    """A recording's GFLOP/s beside the median latency read as its work done in that time, where
    Kernel Tuner computed it at its own time, the mean of the repetitions, 18% slower on one of
    point-in-polygon's configs (the exports say so; the card did not). Under 1% apart, nothing."""
    from workbench.core.domain.measurement import Measurement, Status, Trial
    from workbench.core.domain.session import Session
    from workbench.core.domain.space import SearchSpace, Slot

    space = SearchSpace([Slot("b", (1, 2), "launch")])
    a, b = list(space)
    trials = [Trial(0, a, Measurement(Status.OK, {"latency_ms": 0.5499, "kt_time_ms": 0.65, "gflops": 13638.0})),
              Trial(1, b, Measurement(Status.OK, {"latency_ms": 0.9, "kt_time_ms": 0.9, "gflops": 8000.0}))]
    window.model.set_session(Session(kernel="k", space=space, trials=trials, device={"name": "A100", "recorded": True}))
    line = next(line for line in window.best_card.text().split("<br>") if line.startswith("GFLOP/s"))
    assert "(as recorded, at Kernel Tuner's time 0.65 ms)" in line
    window.model.set_session(Session(kernel="k", space=space, trials=trials[1:], device={"name": "A100", "recorded": True}))
    line = next(line for line in window.best_card.text().split("<br>") if line.startswith("GFLOP/s"))
    assert "Kernel Tuner's time" not in line  # the same figure: nothing to say


def test_a_template_sessions_missing_source_is_not_called_a_recordings(tmp_path):
    """A template's own session whose template is not on this machine was said to be a recording."""
    from pathlib import Path

    from workbench.core.domain.session import load_session
    from workbench.gui.source_view import render_source

    session = load_session(Path(__file__).resolve().parents[1] / "fixtures" / "session_golden.json")
    assert session.kind == "template"
    text, note = render_source(session, session.trials[0].config, session.problem, None)
    assert text == "" and "recording" not in note and "File > Open kernel folder..." in note, note
    # its template found with other slots (edited since): not called another kernel's recording either
    import dataclasses

    from workbench.core.domain.templates import load_templates

    shipped = load_templates()["vector_add"]
    edited = dataclasses.replace(session, kernel="vector_add")
    text, note = render_source(edited, edited.trials[0].config, edited.problem, None)
    assert text == "" and "recording" not in note and "changed since" in note, note
    assert {s.name for s in session.space.slots} != {s.name for s in shipped.slots}


def _close_figures() -> Session:
    """Trials whose latency and memory differ only in the fifth or sixth significant figure."""
    session = _session()
    for i, trial in enumerate(session.trials):
        trial.measurement.metrics["latency_ms"] = 0.0192255 + 0.000001 * i
        trial.measurement.metrics["memory_mb"] = 67.108868 + 0.0004 * i
    return session


@pytest.mark.parametrize("field, typed", [("max_latency_ms", "0.019226"), ("max_memory_mb", "67.1093")])
def test_a_limit_typed_with_the_figures_the_data_needs_is_the_limit_in_force(window, qtbot, field, typed):
    """The box took decimals by the data's magnitude alone (2 for memory in tens of MB), and a
    typed digit beyond them vanished without a word: 67.109 became 67.10, a limit that kept no
    trial where the same number given to show kept 41."""
    window.model.set_session(_close_figures())
    window.show()
    qtbot.waitExposed(window)
    box = window.objective_panel.limits[field].spin
    box.setFocus()
    qtbot.waitUntil(box.hasFocus, timeout=5000)
    box.lineEdit().selectAll()
    QTest.keyClicks(box, typed)
    QTest.keyClick(box, Qt.Key.Key_Return)
    assert box.text() == typed and getattr(window.model.constraints, field) == float(typed)
    metric = "latency_ms" if field == "max_latency_ms" else "memory_mb"
    kept = sum(t.metric(metric) <= float(typed) for t in window.model.session.trials)
    assert 0 < window.model.ranking.n_feasible == kept < len(window.model.session.trials)


@pytest.fixture
def comma_decimal_locale():
    """The system's locale writes decimals with a comma (as de_DE does), for widgets made after it."""
    from PySide6.QtCore import QLocale

    before = QLocale()
    QLocale.setDefault(QLocale(QLocale.Language.German, QLocale.Country.Germany))
    yield
    QLocale.setDefault(before)


@pytest.mark.parametrize("typed", ["0.019226", "0,019226"])
def test_numbers_typed_with_a_point_or_a_comma_mean_the_same_in_any_locale(comma_decimal_locale, window, qtbot,
                                                                          typed):
    """Under a comma-decimal locale the limit box read 0.02 as 2 (the point taken for a group
    separator), a limit a hundred times looser in force without a word, while the window writes
    every number with a point; under other locales 0,02 did the same. Every box of decimals
    reads both as the decimal point, and writes a point."""
    from workbench.gui.decimal_box import DecimalBox

    window.model.set_session(_close_figures())
    window.show()
    qtbot.waitExposed(window)
    box = window.objective_panel.limits["max_latency_ms"].spin
    box.setFocus()
    qtbot.waitUntil(box.hasFocus, timeout=5000)
    box.lineEdit().selectAll()
    QTest.keyClicks(box, typed)
    QTest.keyClick(box, Qt.Key.Key_Return)
    assert box.text() == "0.019226" and window.model.constraints.max_latency_ms == 0.019226
    window.objective_panel._on_weight_typed("latency_ms", typed.replace("019226", "5"))
    assert window.model.weights.values["latency_ms"] == 0.5
    # the time limit, the demo pace and the strategies' options of decimals read alike
    toolbar = window.toolbar
    boxes = [toolbar.minutes, toolbar.delay]
    window.toolbar.strategy.setCurrentText("annealing")
    boxes += [editor for _, editor in toolbar.strategy_options.editors.values() if isinstance(editor, DecimalBox)]
    assert len(boxes) >= 3
    for each in boxes:
        each.lineEdit().selectAll()
        QTest.keyClicks(each, typed.replace("019226", "25"))
        each.interpretText()
        assert each.value() == 0.25 and each.text().removesuffix(" s/eval").startswith("0.25"), (each, each.text())
    # a comma that may separate thousands is not read as a point (1,000 was taken as 1): refused,
    # the box keeps its value
    for each, typed_too in ((toolbar.minutes, "1,000"), (box, "1,000.5"), (toolbar.delay, "0,1,5")):
        before = each.value()
        each.setFocus()
        each.lineEdit().selectAll()
        QTest.keyClicks(each, typed_too)
        QTest.keyClick(each, Qt.Key.Key_Return)
        assert each.value() == before, (typed_too, each.text())
    window.objective_panel._on_weight_typed("latency_ms", "1,000")
    assert window.model.weights.values["latency_ms"] == 0.5
    # refused after the slider set the limit (the box set without its signals): the limit in force stays
    control = window.objective_panel.limits["max_latency_ms"]
    control.slider.setValue((control.slider.minimum() + control.slider.maximum()) // 2)
    dragged = window.model.constraints.max_latency_ms
    assert dragged not in (None, 0.019226)
    box.setFocus()
    box.lineEdit().selectAll()
    QTest.keyClicks(box, "1,000")
    QTest.keyClick(box, Qt.Key.Key_Return)
    assert window.model.constraints.max_latency_ms == dragged and box.value() == dragged


def test_a_pace_typed_and_started_with_f5_is_the_pace_the_run_gets(window, qtbot):
    """The box takes a typed value on Enter or on leaving it; F5 leaves the focus where it is, and
    the run started with the pace from before the typing."""
    toolbar, asked = window.toolbar, []
    toolbar.backend.setCurrentIndex(toolbar.backend.findData("sim"))
    window.start_run = asked.append  # (what Start asks for, without running it)
    toolbar.delay.setFocus()
    qtbot.waitUntil(toolbar.delay.hasFocus, timeout=5000)
    toolbar.delay.lineEdit().selectAll()
    QTest.keyClicks(toolbar.delay, "0.5")
    window.actions_by_name["run_start"].trigger()
    assert asked and asked[0]["delay_s"] == 0.5, asked
    # a weight or a constraint typed just before F5: the run gets them (it got the objective from
    # before the typing, and the panel then showed one it did not get)
    window.start_run = lambda run: asked.append((dict(window.model.weights.values), window.model.constraints.to_dict()))
    extra = window.objective_panel.extra_edit
    extra.setFocus()
    qtbot.waitUntil(extra.hasFocus, timeout=5000)
    QTest.keyClicks(extra, "registers <= 64")
    window.actions_by_name["run_start"].trigger()
    assert asked[-1][1].get("extra") == ["registers <= 64"], asked[-1]
    weight = window.objective_panel.weight_labels["latency_ms"]
    weight.setFocus()
    qtbot.waitUntil(weight.hasFocus, timeout=5000)
    weight.selectAll()
    QTest.keyClicks(weight, "0.7")
    window.actions_by_name["run_start"].trigger()
    assert asked[-1][0]["latency_ms"] == 0.7, asked[-1]


def test_another_session_gives_a_box_being_typed_in_its_own_decimals(window, qtbot):
    """Focus left in the box kept the first session's decimals (3, for latencies of milliseconds)
    when another session opened, and 0.019226 typed for the new one became 0.019."""
    slow = _session()
    for trial in slow.trials:
        trial.measurement.metrics["latency_ms"] += 5.0
    window.model.set_session(slow)
    window.show()
    qtbot.waitExposed(window)
    box = window.objective_panel.limits["max_latency_ms"].spin
    box.setFocus()
    qtbot.waitUntil(box.hasFocus, timeout=5000)
    few = box.decimals()
    window.model.set_session(_close_figures())
    assert box.hasFocus() and box.decimals() > few
    box.lineEdit().selectAll()
    QTest.keyClicks(box, "0.019226")
    QTest.keyClick(box, Qt.Key.Key_Return)
    assert window.model.constraints.max_latency_ms == 0.019226


def test_a_limit_dragged_is_the_number_the_box_and_the_chart_show(shown):
    """A slider or the chart's line set the exact point of its scale (8.73367621144256 ms) while the
    box and the line's label read 8.734, and 8.734 typed anywhere kept another set of trials."""
    control = shown.objective_panel.limits["max_latency_ms"]
    for position in (137, 503, 999):
        control.slider.setValue(position)
        limit = shown.model.constraints.max_latency_ms
        assert limit == float(control.spin.text()) == control.dragged(position)
    chart = shown.tradeoff_chart
    chart.refresh()
    line = chart.latency_line
    line.setValue(math.log10(0.1234567) if chart.log_x else 0.1234567)
    line.sigPositionChangeFinished.emit(line)
    limit = shown.model.constraints.max_latency_ms
    assert limit is not None and 0.1234 <= limit <= 0.1235 and len(limit_text(limit)) <= len("0.1235")  # to a pixel
    chart.refresh()
    assert line.label.toPlainText() == f"max latency {limit_text(limit)} ms" and control.spin.text() == limit_text(limit)


def test_every_step_of_a_slider_over_a_narrow_range_sets_its_own_limit(window):
    """Rounded to four figures, a min-quality slider over qualities of 0.99986 to 0.99987 set one
    limit, 0.9999, at every position: above every trial, so nothing was feasible anywhere."""
    session = _session()
    for i, trial in enumerate(session.trials):
        trial.measurement.metrics["quality"] = 0.99986 + 0.0000005 * i
    window.model.set_session(session)
    window.refresh()
    control = window.objective_panel.limits["min_quality"]
    limits = set()
    for position in range(1000, -1, -50):  # (from the far end: the slider starts at 0, the loosest)
        control.slider.setValue(position)
        limits.add(window.model.constraints.min_quality)
        assert window.model.constraints.min_quality == float(control.spin.text())
    assert len(limits) == 21
    assert window.model.ranking.n_feasible == len(session.trials)  # at 0, the loosest end: every trial


def test_a_limit_set_before_the_data_keeps_its_figures_in_the_box_when_the_data_comes(window):
    """Dragged before any trial (over a made-up range), a memory limit of 0.01526 MB read 0.0153
    once trials of 67 MB gave the box four decimals, while the card named 0.01526."""
    control = window.objective_panel.limits["max_memory_mb"]
    control.slider.setValue(400)
    limit = window.model.constraints.max_memory_mb
    assert limit is not None and control.spin.text() == limit_text(limit)
    window.model.set_session(_close_figures())
    window.model.set_constraints(max_memory_mb=limit)
    window.refresh()
    assert control.spin.text() == limit_text(limit) and window.model.constraints.max_memory_mb == limit


@pytest.mark.parametrize("how", ["typed", "ticked", "up from off"])
def test_the_limit_lines_label_reads_what_the_box_reads(shown, qtbot, how):
    """The line's label wrote six figures (0.123457) of a limit the box showed whole (0.1234567),
    and ticking a limit on set the data's loosest point of the scale, eight figures long."""
    control = shown.objective_panel.limits["max_latency_ms"]
    if how == "typed":
        shown.model.set_constraints(max_latency_ms=0.1234567)
    elif how == "ticked":
        control.enabled.setChecked(True)
    else:
        control.spin.stepBy(1)
    limit = shown.model.constraints.max_latency_ms
    assert limit is not None
    chart = shown.tradeoff_chart
    chart.refresh()
    assert control.spin.text() == limit_text(limit)
    assert chart.latency_line.label.toPlainText() in (f"max latency {limit_text(limit)} ms", f"≤ {limit_text(limit)} ms")
    if how != "typed":
        assert len(limit_text(limit)) <= 8  # a round limit, as a drag sets, not a point of the scale


@pytest.mark.parametrize("typed", ["off", "OFF", ""])
def test_typing_off_or_emptying_a_limit_box_turns_the_limit_off(shown, qtbot, typed):
    """The box reads "off" while its limit is off, but Qt refused every letter of it typed, and
    the limit stayed in force without a word."""
    shown.show()
    qtbot.waitExposed(shown)
    control = shown.objective_panel.limits["max_latency_ms"]
    control.enabled.setChecked(True)
    assert shown.model.constraints.max_latency_ms is not None
    box = control.spin
    box.setFocus()
    qtbot.waitUntil(box.hasFocus, timeout=5000)
    box.lineEdit().selectAll()
    QTest.keyClick(box, Qt.Key.Key_Backspace)
    if typed:
        QTest.keyClicks(box, typed)
    QTest.keyClick(box, Qt.Key.Key_Return)
    assert shown.model.constraints.max_latency_ms is None and not control.enabled.isChecked()
    assert box.text() == "off"


def test_a_limit_dragged_where_a_step_is_finer_than_the_box_shows_is_the_boxs_number():
    """At the low end of a log slider reaching 1e-9, a step is 1e-12 wide: rounded to it, the
    limit had eleven decimals and the box, which writes ten, showed another number."""
    limit = dragged_limit(1.03e-9, 1e-12)
    assert limit == 1e-9 and limit_text(limit) == "0.000000001"


def test_a_recordings_own_bandwidth_figure_is_said_to_be_its_own_and_above_the_peak_so(tmp_path):
    """A Kernel Tuner recording's GB/s is its benchmark's count of bytes: the panel said "119% of
    the GPU's peak bandwidth ..., counting the bytes the operation must move", a figure no GPU
    reaches, stated as the workbench's own fact."""
    from workbench.core.domain.measurement import Measurement
    from workbench.gui.explain import breakdown

    session = _kt_recording(tmp_path)
    trial = dataclasses.replace(session.trials[0], measurement=Measurement(
        session.trials[0].measurement.status, {"latency_ms": 1.0, "throughput_gbs": 532.0}))
    device = {**session.device, "peak_bandwidth_gbs": 448.0}
    (said,) = [fact for fact in breakdown(trial, device).facts if "peak bandwidth" in fact]
    assert said == ("119% of the GPU's peak bandwidth (532 of 448 GB/s, the recording's figure; above the peak, so "
                    "it counts more than memory traffic)"), said
    measured = {"name": "GPU X", "simulated": False, "peak_bandwidth_gbs": 1064.0}
    (said,) = [fact for fact in breakdown(trial, measured).facts if "peak bandwidth" in fact]
    assert said == "50% of the GPU's peak bandwidth (532 of 1064 GB/s, counting the bytes the operation must move)"


def test_the_card_wraps_a_long_underscored_name_and_copies_it_whole(window, qtbot):
    """A slot named with underscores (no space to wrap at) was cut at the column's edge with the
    value after it; the card now wraps after underscores, and what is copied from it is the name
    itself, without the invisible breaks."""
    from PySide6.QtGui import QFont, QFontMetrics

    name = "elements_per_thread_overlapping_the_next_tile"
    space = SearchSpace([Slot(name, (1, 2, 4))])
    trials = [Trial(i, space.config({name: v}), Measurement(Status.OK, {"latency_ms": 1.0 + i}))
              for i, v in enumerate((1, 2, 4))]
    window.model.set_session(Session(kernel="long", space=space, trials=trials, device={"name": "toy GPU"}))
    body = window.best_card.body
    bold = QFont(body.font())
    bold.setBold(True)
    assert body.minimumSizeHint().width() < QFontMetrics(bold).horizontalAdvance(name) / 2
    assert f"<b>{name}</b> = 1" in window.best_card.text()  # (the text itself has no breaks)
    assert f"{name} = 1" in body.accessibleName() and "\u200b" not in body.accessibleName()  # (screen readers)
    body.setFocus()
    body.select_all()
    assert "\u200b" in body.selectedText()
    QTest.keySequence(body, QKeySequence.StandardKey.Copy)
    copied = QApplication.clipboard().text()
    assert f"{name} = 1" in copied and "\u200b" not in copied, repr(copied)


def test_the_cards_config_copied_is_lines_the_results_filter_takes_back(window):
    """The card's copy joined its lines with Unicode line separators, which the filter read as one
    term and refused; and the filter took a switch only as True, where show --json, the exports and
    a header's #define write it true or 1."""
    space = SearchSpace([Slot("block_size", (64, 128)), Slot("use_shared", (False, True)), Slot("lr", (1e-05, 0.5))])
    trials = [Trial(i, config, Measurement(Status.OK, {"latency_ms": 1.0 + i})) for i, config in enumerate(space)]
    window.model.set_session(Session(kernel="toy", space=space, trials=trials, device={"name": "toy GPU"}))
    body = window.best_card.body
    body.select_all()
    copied = body.copied()
    assert "\u2028" not in copied and "\u2029" not in copied
    config_lines = [line for line in copied.splitlines() if line.split(" = ")[0] in space.names]
    assert len(config_lines) == 3, copied
    proxy = window.results.proxy
    proxy.set_slot_filter("\n".join(config_lines))
    assert proxy.rowCount() == 1 and proxy.mapToSource(proxy.index(0, 0)).row() == 0
    for text, rows in (("use_shared=true", 4), ("use_shared=1", 4), ("use_shared=FALSE", 4), ("use_shared=0", 4)):
        proxy.set_slot_filter(text)
        assert proxy.rowCount() == rows, text
    with pytest.raises(WorkbenchError, match="use_shared has no value yes"):
        proxy.set_slot_filter("use_shared=yes")


def test_an_unsaved_sessions_autosave_is_the_open_session_to_compare(shown, tmp_path):
    """An unsaved session's autosave, added to Compare, was taken for another session and its curve
    drawn twice; a python benchmark beside a template of its name was said to be "at another problem
    size, :" (nothing named)."""
    from workbench.core.domain.session import save_session

    view = shown.compare
    assert shown.path is None
    shown.autosave_path = tmp_path / "autosave.json"
    save_session(shown.model.session, shown.autosave_path)
    with pytest.raises(WorkbenchError, match="autosave.json is the open session"):
        view.add_session(str(shown.autosave_path))
    bench = _session()
    bench.kind, bench.source_hash = "python", "5cb8"
    other = tmp_path / "bench.json"
    save_session(bench, other)
    view.add_session(str(other))
    legend = view.curve_legend.text()
    assert "another kernel" in legend and "at another problem size, :" not in legend


def test_the_tradeoff_chart_draws_rings_and_names_what_it_plots_and_follows_weights_and_directions(window):
    """Read back from the chart: an aborted trial selected got no ring (its x was its NaN latency,
    where its ▷ sits at its bound); a hover left out the figure a point is drawn at; the y chooser
    offered a metric only once the trial count changed after its direction was given; and under a
    weight on on-chip storage the star sat inside a front drawn against another figure."""
    space = _space()
    trials = []
    for i, config in enumerate(space):
        held = {"memory_mb": 10.0, "onchip_kb_per_sm": 16.0 * (1 + i % 4), "onchip_kb_per_block": 4.0 * (1 + i % 3),
                "merit": float(i % 5)}
        if i == 3:
            measurement = Measurement(Status.ABORTED, {"latency_bound_ms": 0.9, **held}, "aborted above 0.9 ms")
        else:
            measurement = Measurement(Status.OK, {"latency_ms": 0.1 + 0.02 * i, **held})
        trials.append(Trial(i, config, measurement))
    window.model.set_session(Session(kernel="toy", space=space, trials=trials, device={"name": "toy GPU"}))
    chart = window.tradeoff_chart
    chart.refresh()
    assert chart.y_name == "onchip_kb_per_sm"  # the figure that differs most
    window.model.set_weights({"latency_ms": 1.0, "memory_mb": 1.0})
    chart.refresh()
    assert chart.y_name == "onchip_kb_per_sm"  # a weighted figure every config shares: not one flat line
    window.model.set_weights({"latency_ms": 1.0, "onchip_kb_per_block": 1.0})
    chart.refresh()
    assert chart.y_name == "onchip_kb_per_block"  # the figure the score weighs: the star is on its front
    window.model.select(3)
    xy = chart._xy(3)
    assert xy is not None and xy[0] == 0.9  # at its bound, where its ▷ is drawn
    assert metric_label("onchip_kb_per_block") in chart._tip(0, 0, 1)
    # a benchmark's own figures, no memory among them: one without a direction is offered once given one
    trials = [Trial(i, config, Measurement(Status.OK, {"latency_ms": 0.1 + 0.02 * i, "merit": float(i % 5),
                                                       "energy_j": 1.0 + i}))
              for i, config in enumerate(space)]
    window.model.set_session(Session(kernel="toy", space=space, trials=trials, device={"name": "toy GPU"}))
    chart.refresh()
    assert [chart.y_combo.itemData(i) for i in range(chart.y_combo.count())] == ["energy_j"]
    window.model.set_weights({"latency_ms": 1.0, "merit": 1.0})
    window.model.set_direction("merit", -1)
    chart.refresh()
    assert "merit" in [chart.y_combo.itemData(i) for i in range(chart.y_combo.count())]
