"""Tick labels that can be read: log axes over less than a decade, sizes, slot values and axis
names, at the window's default size and in presentation mode (workbench.gui.plot_axes, the rules
in workbench.gui.axes, and the views that use them: Compare, Sizes, Slices, Parallel)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from workbench.gui.axes import choose_log_ticks, fit_category_labels, fits, format_ticks, title_lines
from workbench.runner.controller import RunRequest, start_run
from workbench.gui.plot_axes import left_title

#: sizes, fonts and layout: tested as a person's window is styled
pytestmark = pytest.mark.app_style_sheet


# --- the rules, without Qt ----------------------------------------------------------------------
def test_a_numeric_slot_is_labelled_at_its_values_where_they_are_about_evenly_spaced() -> None:
    from types import SimpleNamespace

    from workbench.core.domain.space import SearchSpace, Slot
    from workbench.gui.axes import geometric_slot, value_ticks

    powers = tuple(2 ** k for k in range(13))  # 1 .. 4096
    space = SearchSpace([Slot("n", powers), Slot("block", (32, 64, 128, 256)), Slot("step", tuple(range(0, 640, 32))),
                         Slot("shift", (-1, 0, 1)), Slot("scale", (0.5, 1.0, 1.000001)), Slot("mode", ("a", "b"))])
    model = SimpleNamespace(session=SimpleNamespace(space=space))
    # thirteen powers of two along a linear axis: a fixed thinning step labelled 2, 32 and 512 and
    # left 1024 to 4096 bare; ordinary ticks there, the values on a log axis, where they are even
    assert value_ticks(model, "slot:n", log=False) is None
    assert value_ticks(model, "slot:n", log=True) == [(pytest.approx(math.log10(v)), str(v)) for v in powers]
    # a few values are labelled whatever their spacing; many evenly spaced ones too
    assert value_ticks(model, "slot:block", log=False) == [(32.0, "32"), (64.0, "64"), (128.0, "128"), (256.0, "256")]
    assert [t for _, t in value_ticks(model, "slot:step", log=False)] == [str(v) for v in range(0, 640, 32)]
    assert value_ticks(model, "slot:shift", log=True) is None  # no logarithm of -1 or 0
    assert [t for _, t in value_ticks(model, "slot:scale", log=False)] == ["0.5", "1", "1.000001"]  # told apart
    assert value_ticks(model, "slot:mode", log=False) is None and value_ticks(model, "latency_ms", log=False) is None
    # which slots start on a log axis: values that grow by a factor over 16x or more
    assert geometric_slot(model, "slot:n")
    assert not any(geometric_slot(model, f"slot:{name}") for name in ("block", "step", "shift", "scale", "mode"))
    assert not geometric_slot(model, "latency_ms")


def test_a_log_axis_under_a_decade_gets_round_labels_that_fit() -> None:
    line = 14.0
    for low, high in ((0.0185, 0.028), (0.05, 0.075), (0.052, 0.058)):
        labelled, minor = choose_log_ticks(math.log10(low), math.log10(high), 150, lambda _t: line, line * 0.8)
        assert len(labelled) >= 2, (low, high, labelled)
        assert all(low <= v <= high for v in labelled)
        steps = np.diff(labelled)
        assert np.allclose(steps[1:-1], steps.max())  # evenly spaced round values ...
        assert all(np.isclose(step, steps.max()) or np.isclose(step, steps.max() / 2) for step in steps)  # ... or half a step at an end
        assert not set(labelled) & set(minor)
    # over decades: 1-2-5, never the crowded 1..9 on a short axis
    labelled, _ = choose_log_ticks(math.log10(0.003), math.log10(0.3), 200, lambda _t: line, line * 0.8)
    assert labelled == [0.005, 0.01, 0.02, 0.05, 0.1, 0.2]
    labelled, _ = choose_log_ticks(math.log10(0.003), math.log10(0.3), 120, lambda _t: line, line * 0.8)
    assert labelled == [0.01, 0.1]
    # a short axis over a decade still gets two labels: every second of a set
    labelled, _ = choose_log_ticks(math.log10(0.0035), math.log10(0.05), 110, lambda _t: 25.0, 20.0)
    assert len(labelled) == 2


def test_a_log_axis_labels_a_bare_end_with_half_a_step() -> None:
    """From 3.2 to 10 the labels were 4, 5 ... 9: the lowest points, often the best latencies,
    sat below the last label with nothing to read them by. Half a step (3.5) labels that end
    where it fits; an end a label of the set is near keeps what it had, and decades or 1-2-5
    labels, whose half step is no round value, get a one-digit value at their low end only (the
    best latencies of a window's chart sat below 0.5, 1, 2 unlabelled), none at the top (9000)."""
    line = 14.0
    labelled, minor = choose_log_ticks(math.log10(3.2), math.log10(10), 250, lambda _t: line, line * 0.8)
    assert labelled == [3.5, 4, 5, 6, 7, 8, 9] and 3.5 not in minor
    labelled, _ = choose_log_ticks(math.log10(3.6), math.log10(10), 250, lambda _t: line, line * 0.8)
    assert labelled == [4, 5, 6, 7, 8, 9]  # 3.5 is off the axis
    # half a step off the axis: a one-digit value instead (3 below 5, 10, 15; not 2.5, which is off it)
    labelled, _ = choose_log_ticks(math.log10(2.1), math.log10(17), 300, lambda _t: line, line * 0.8)
    assert labelled == [3, 5, 10, 15]
    labelled, _ = choose_log_ticks(math.log10(0.0034), math.log10(16862), 250, lambda _t: line, line * 0.8)
    assert labelled == [0.01, 0.1, 1, 10, 100, 1000]  # no 9000 beside the decades
    labelled, _ = choose_log_ticks(math.log10(0.9), math.log10(45), 300, lambda t: 7.0 * len(t), 8)
    assert labelled == [1, 2, 5, 10, 20]  # no 40 after 1-2-5
    labelled, _ = choose_log_ticks(math.log10(0.21), math.log10(3.1), 330, lambda t: 7.0 * len(t), 8)
    assert labelled == [0.3, 0.5, 1, 2]  # points from 0.21 ms: a label among them
    # too short an axis for another label: none is squeezed in
    labelled, _ = choose_log_ticks(math.log10(3.2), math.log10(10), 130, lambda _t: line, line * 0.8)
    assert 3.5 not in labelled and fits([130 * (math.log10(v) - math.log10(3.2)) / math.log10(10 / 3.2) for v in labelled],
                                         [line] * len(labelled), 130, line * 0.8)


def test_tick_numbers_are_plain_and_tell_values_apart() -> None:
    assert format_ticks([0.05, 0.055, 0.06]) == ["0.05", "0.055", "0.06"]
    assert format_ticks([20.0, 25.0]) == ["20", "25"]
    assert format_ticks([0.1, 1.0, 10.0, 100.0]) == ["0.1", "1", "10", "100"]  # never 1e+01


def test_category_labels_are_thinned_or_shortened_to_their_room() -> None:
    def width(text: str) -> float:
        return 7.0 * len(text)

    length = 100.0
    numbers = ["64", "128", "256", "512", "1024"]
    spots = [length * (k + 0.5) / len(numbers) for k in range(len(numbers))]
    shown = [t for t, _ in fit_category_labels(spots, numbers, length, width, 6, numeric=True)]
    kept = [(p, t) for p, t in zip(spots, shown) if t]
    assert len(kept) >= 2 and all(t in numbers for _, t in kept)  # whole numbers or none
    assert fits([p for p, _ in kept], [width(t) for _, t in kept], length, 6)
    words = ["atomic", "shared_tree", "warp_shuffle", "two_pass"]
    length = 260.0
    spots = [length * (k + 0.5) / len(words) for k in range(len(words))]
    shown = [t for t, _ in fit_category_labels(spots, words, length, width, 6, numeric=False)]
    assert all(shown) and any(t.endswith("…") for t in shown)
    assert all(w.startswith(t.rstrip("…")) for w, t in zip(words, shown))
    assert fits(spots, [width(t) for t in shown], length, 6)
    # on two lines taking turns, each word has twice the room: the same axis shows them in full
    fitted = fit_category_labels(spots, words, length, width, 6, numeric=False, rows=2)
    assert [t for t, _ in fitted] == words and [r for _, r in fitted] == [0, 1, 0, 1]
    for row in (0, 1):
        assert fits(spots[row::2], [width(t) for t in words[row::2]], length, 6)


# --- the views --------------------------------------------------------------------------------
def drawn_labels(axis) -> list[tuple[object, str]]:
    """The tick labels an axis draws now: (rectangle, text), empty texts left out."""
    from PySide6.QtCore import QRectF
    from PySide6.QtGui import QPainter, QPicture

    picture = QPicture()
    painter = QPainter(picture)
    try:
        if axis.style["tickFont"] is not None:
            painter.setFont(axis.style["tickFont"])
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    assert specs is not None, "the axis has no size"
    out = []
    for rect, _flags, text in specs[2]:
        if text.strip():
            lines = text.count("\n")  # a label on the second line (labels taking turns): that line's box
            height = rect.height() / (lines + 1)
            out.append((QRectF(rect.x(), rect.y() + height * lines, rect.width(), height), text.strip()))
    return out


def assert_readable(axis, least: int = 2) -> list[str]:
    labels = drawn_labels(axis)
    texts = [text for _, text in labels]
    assert len(labels) >= least, texts
    for k, (a, _) in enumerate(labels):
        for b, _ in labels[k + 1:]:
            assert not a.intersects(b), texts  # no label through another
    return texts


def _settle(qtbot, window) -> None:
    for _ in range(5):
        qtbot.wait(30)
    window.repaint()


def _sweep(path: Path, kernel: str, sizes: dict, budget: int) -> str:
    start_run(RunRequest(kernel=kernel, backend="sim", strategy="random", budget=budget, sizes=sizes), path).run()
    return str(path)


@pytest.fixture
def reduce_run(tmp_path: Path) -> str:
    path = tmp_path / "r.json"
    start_run(RunRequest(kernel="reduce_sum", backend="sim", strategy="random", budget=24, seed=3), path).run()
    return str(path)


def test_an_axis_title_longer_than_its_axis_goes_on_as_few_lines_as_fit() -> None:
    width = len  # one pixel per character
    assert title_lines("best latency (ms)", 40, width) == ["best latency (ms)"]
    assert title_lines("modelled GFLOP/s (simulated)", 20, width) == ["modelled GFLOP/s", "(simulated)"]
    assert title_lines("a b c d e f", 5, width) == ["a b c", "d e f"]
    # two lines still too long: three (no more), as even as the words allow
    assert title_lines("modelled GFLOP/s (simulated)", 11, width) == ["modelled", "GFLOP/s", "(simulated)"]
    assert title_lines("a b c d e f g h", 3, width) == ["a b c", "d e f", "g h"]
    assert title_lines("throughput", 3, width) == ["throughput"]  # one word: nothing to break
    assert title_lines("best latency (ms)", 0, width) == ["best latency (ms)"]  # not laid out yet
    # a metric named with underscores, longer than the axis, breaks after them (it lost both ends)
    assert title_lines("bytes_moved_per_second (simulated)", 13, width) == [
        "bytes_moved_", "per_second", "(simulated)"]
    assert title_lines("bytes_moved (ms)", 16, width) == ["bytes_moved (ms)"]  # fits: one line, as before
    assert title_lines("a_b c", 4, width) == ["a_b", "c"]  # a word that fits is not broken


@pytest.mark.parametrize("view", ["roofline", "compare"])
def test_left_titles_stay_whole_in_presentation_mode_at_1440x900(window, qtbot, reduce_run, view) -> None:
    """A short plot in presentation mode cut its title at the axis's end: "modelled GFLOP/s
    (simulate" (the word that says the rates are modelled) and "best latency (m"."""
    from PySide6.QtGui import QFontMetricsF

    window.open_session(reduce_run)
    window.resize(1440, 900)
    window.zoom.presentation_action.setChecked(True)
    page = window.roofline_chart if view == "roofline" else window.compare
    window.bottom_tabs.setCurrentWidget(page)
    _settle(qtbot, window)
    plot = page.plot.getPlotItem()
    axis = plot.getAxis("left")
    whole = left_title(plot)
    metrics = QFontMetricsF(axis.label.font())
    lines = axis.labelText.split("<br>")
    assert " ".join(lines) == whole and (view == "compare" or "(simulated)" in whole)
    assert all(metrics.horizontalAdvance(line) <= plot.getViewBox().height() for line in lines), (lines, plot.getViewBox().height())
    window.zoom.presentation_action.setChecked(False)
    window.resize(1920, 1080)
    _settle(qtbot, window)
    assert axis.labelText == whole  # room again: one line


def test_a_bottom_title_wider_than_its_plot_wraps_and_the_share_axis_uses_it(qtbot, window) -> None:
    """Beside the per-value plot in presentation mode at 1440x900 the share axis read "share of
    importanc": a bottom title wraps as a left one does, and unwraps when there is room again."""
    import pyqtgraph as pg
    from PySide6.QtGui import QFont, QFontMetricsF

    from workbench.gui.plot_axes import set_bottom_title, set_plot_font

    widget = pg.PlotWidget()
    qtbot.addWidget(widget)
    plot = widget.getPlotItem()
    font = QFont(widget.font())
    font.setPointSizeF(font.pointSizeF() * 1.5)  # presentation mode's zoom
    set_plot_font(plot, font)
    set_bottom_title(plot, "share of importance")
    axis = plot.getAxis("bottom")
    metrics = QFontMetricsF(axis.label.font())
    whole = metrics.horizontalAdvance("share of importance")
    widget.resize(int(whole * 0.8) + 60, 300)
    widget.show()
    qtbot.waitUntil(lambda: 0 < plot.getViewBox().width() < whole, timeout=10_000)
    qtbot.waitUntil(lambda: "<br>" in axis.labelText, timeout=10_000)
    lines = axis.labelText.split("<br>")
    assert " ".join(lines) == "share of importance"
    assert all(metrics.horizontalAdvance(line) <= plot.getViewBox().width() for line in lines)
    widget.resize(int(whole * 2) + 60, 300)
    qtbot.waitUntil(lambda: axis.labelText == "share of importance", timeout=10_000)  # room again: one line
    window.bottom_tabs.setCurrentWidget(window.importance)  # the share axis is titled this way
    assert window.importance.bar_plot.getPlotItem().getAxis("bottom").whole_title == "share of importance"


def test_compare_labels_a_latency_range_under_a_decade_in_plain_ms(window, qtbot, reduce_run) -> None:
    window.open_session(reduce_run)
    window.bottom_tabs.setCurrentWidget(window.compare)
    _settle(qtbot, window)
    plot = window.compare.plot
    plot.setYRange(math.log10(0.0185), math.log10(0.028), padding=0)
    _settle(qtbot, window)
    axis = plot.getAxis("left")
    texts = assert_readable(axis)
    assert all(0.0185 <= float(t) <= 0.028 for t in texts)  # milliseconds, as the title says
    assert "x0.001" not in axis.labelString()


def test_size_view_latency_axis_is_labelled_for_a_small_sweep(window, qtbot, tmp_path) -> None:
    path = _sweep(tmp_path / "s.json", "vector_add", {"n": [4096, 65536, 1 << 20, 1 << 24]}, 3)
    window.open_session(path)
    window.bottom_tabs.setCurrentWidget(window.size_view)
    _settle(qtbot, window)
    view = window.size_view
    view.latency_plot.setYRange(math.log10(0.05), math.log10(0.075), padding=0)  # as close as a sweep's sizes get
    _settle(qtbot, window)
    texts = assert_readable(view.latency_plot.getAxis("left"))
    assert all(0.05 <= float(t) <= 0.075 for t in texts)  # plain milliseconds, not 6·10⁻²
    assert_readable(view.latency_plot.getAxis("bottom"))


def test_the_size_view_fits_the_default_window(window, qtbot, tmp_path) -> None:
    """Nine sizes at 1440x900: the matrix's every column in sight (a plot title wider than the pane
    widened the plot past it, cutting the last columns off without a scroll bar)."""
    sizes = {"n": [1 << k for k in range(12, 30, 2)]}
    window.open_session(_sweep(tmp_path / "nine.json", "reduce_sum", sizes, 2))
    window.bottom_tabs.setCurrentWidget(window.size_view)
    _settle(qtbot, window)
    view = window.size_view
    assert len(view.rows) == 9
    plot = view.matrix_plot
    item = plot.getPlotItem()
    assert item.sceneBoundingRect().width() <= plot.viewport().width() + 1
    box = item.getViewBox()
    assert box.sceneBoundingRect().right() <= plot.viewport().width() + 1
    assert box.viewRange()[0][1] >= 9  # every column inside the shown range
    assert_readable(plot.getAxis("bottom"))
    assert_readable(plot.getAxis("left"))


@pytest.mark.parametrize("size", [(1440, 900), (1920, 1080)])
def test_presentation_mode_keeps_the_size_view_readable(window, qtbot, tmp_path, size) -> None:
    from PySide6.QtGui import QFontMetricsF

    path = _sweep(tmp_path / "s.json", "reduce_sum", {"n": [4096, 1 << 20, 1 << 26]}, 4)
    window.open_session(path)
    window.bottom_tabs.setCurrentWidget(window.size_view)
    _settle(qtbot, window)
    view = window.size_view
    normal_text = view.latency_title.font().pointSizeF()
    normal_cells = view._cell_text[0].textItem.font().pointSizeF()
    window.resize(*size)
    window.zoom.presentation_action.setChecked(True)
    _settle(qtbot, window)
    assert view.latency_title.font().pointSizeF() >= 1.4 * normal_text  # titles follow the zoom
    line = QFontMetricsF(view.latency_plot.getAxis("left").style["tickFont"]).height()
    assert view.latency_plot.getPlotItem().getViewBox().height() >= 3 * line  # the plot is not squeezed to its axis
    assert_readable(view.latency_plot.getAxis("left"))
    # every winner's legend entry is in the column (reached by scrolling when the pane is short)
    assert view.legend.height() >= view.legend.heightForWidth(view.legend.width()) - 1
    assert all(f"#{k + 1}" in view.legend.text() for k in range(len(view.winners)))
    if size == (1920, 1080):  # big cells: the cell text grows with the zoom
        assert view._cell_text[0].textItem.font().pointSizeF() > normal_cells


def test_presentation_mode_keeps_a_seven_size_matrix_readable_and_scrolls_it(window, qtbot, tmp_path) -> None:
    """In presentation mode at 1440x900 a matrix of seven sizes was squeezed to 210 x 115 pixels: its
    figures got smaller than at normal size and five of its seven size labels were left out. It
    keeps cells the figures fit and scrolls instead, as the left column does."""
    path = _sweep(tmp_path / "s.json", "softmax", {"rows": [16, 64, 512, 2048, 4096, 32768, 131072]}, 1)
    window.open_session(path)
    window.bottom_tabs.setCurrentWidget(window.size_view)
    _settle(qtbot, window)
    view = window.size_view
    assert all(view.matrix_y.shown_labels())
    normal_cells = view._cell_text[0].textItem.font().pointSizeF()
    scrolled = view.matrix_scroll.verticalScrollBar().isVisible() if hasattr(view, "matrix_scroll") else None
    window.zoom.presentation_action.setChecked(True)
    _settle(qtbot, window)
    assert view._cell_text and view._cell_text[0].textItem.font().pointSizeF() >= normal_cells
    assert all(view.matrix_y.shown_labels()), view.matrix_y.shown_labels()  # every size named
    assert scrolled is False  # (at normal size it fits the pane whole)
    # a larger sweep fills the pane as it always did, figures drawn where they fit: at normal size
    # fifteen sizes fitted whole, and a least cell size for all of them made the matrix scroll
    window.zoom.presentation_action.setChecked(False)
    path = _sweep(tmp_path / "l.json", "softmax", {"rows": [16 << k for k in range(12)]}, 1)
    window.open_session(path)
    _settle(qtbot, window)
    assert not view.matrix_scroll.verticalScrollBar().isVisible()
    assert not view.matrix_scroll.horizontalScrollBar().isVisible()
    # zoomed, it keeps figure-sized cells too (going from 8 to 9 sizes dropped them to 5 pt)
    window.zoom.presentation_action.setChecked(True)
    _settle(qtbot, window)
    assert view._cell_text and view._cell_text[0].textItem.font().pointSizeF() >= normal_cells
    assert all(view.matrix_y.shown_labels())


def test_a_grid_sweep_draws_every_size_at_a_point_of_its_own(window, qtbot, tmp_path) -> None:
    path = _sweep(tmp_path / "g.json", "softmax", {"rows": [1024, 16384], "cols": [256, 1024, 4096]}, 2)
    window.open_session(path)
    window.bottom_tabs.setCurrentWidget(window.size_view)
    _settle(qtbot, window)
    view = window.size_view
    assert len(view.rows) == 6
    points = set()
    for s, item in enumerate(i for i in view.latency_plot.getPlotItem().listDataItems() if i.opts["symbol"]):
        xs, ys = item.getData()
        points |= {(s, round(float(x), 6)) for x in xs}
    assert len(points) == 6  # two series (rows) of three points (cols), none on top of another
    assert "rows=1024" in view.legend.text() and "rows=16384" in view.legend.text()
    assert_readable(view.latency_plot.getAxis("bottom"), least=3)
    assert_readable(view.band_plot.getAxis("left"), least=2)  # one row of bands per rows value
    assert_readable(view.matrix_plot.getAxis("left"), least=6)


@pytest.mark.parametrize("present", [False, True])
def test_slice_and_parallel_labels_do_not_overlap(window, qtbot, reduce_run, present) -> None:
    window.open_session(reduce_run)
    if present:
        window.zoom.presentation_action.setChecked(True)
    window.bottom_tabs.setCurrentWidget(window.slices)
    _settle(qtbot, window)
    for name, plot in window.slices.plots.items():
        assert_readable(plot.getAxis("bottom"), least=1)
    strategy = window.slices.plots["strategy"].getAxis("bottom")
    if any(text not in ("atomic", "shared_tree", "warp_shuffle", "two_pass") for _, text in drawn_labels(strategy)) \
            or len(drawn_labels(strategy)) < 4:
        assert "warp_shuffle" in strategy.toolTip()  # what is cut or left out is in the tool tip
    window.bottom_tabs.setCurrentWidget(window.parallel)
    _settle(qtbot, window)
    axis = window.parallel.plot.getAxis("bottom")
    texts = assert_readable(axis, least=len(window.parallel.axis_names))  # every axis named, if shortened
    if texts != window.parallel.axis_names:
        assert all(name in axis.toolTip() for name in window.parallel.axis_names)
    bottom = window.splitters["bottom"]  # a narrow tab (the source view given most of the row)
    bottom.setSizes([420, sum(bottom.sizes()) - 420])
    _settle(qtbot, window)
    box = window.parallel.plot.getPlotItem().vb.sceneBoundingRect()
    for label in window.parallel.value_labels[-3:]:  # the score's 0, 0.5, 1: whole, right of its axis
        assert label.sceneBoundingRect().right() <= box.right() + 1, (label.toPlainText(), box)


def _category_plot(qtbot, labels: list[str], width: int, title: str = ""):
    """A shown plot of ``width`` px whose bottom axis names ``labels``, one per unit, painted."""
    import pyqtgraph as pg

    from workbench.gui.plot_axes import CategoryAxis

    axis = CategoryAxis("bottom", title=title)
    plot = pg.PlotWidget(axisItems={"bottom": axis})
    qtbot.addWidget(plot)
    plot.resize(width, 150)
    plot.show()
    axis.set_categories(range(len(labels)), labels)
    plot.setXRange(-0.5, len(labels) - 0.5, padding=0)
    qtbot.wait(50)
    plot.repaint()
    return axis, plot


def test_the_last_value_of_a_gridded_chart_keeps_its_label_inside_the_widget(qtbot) -> None:
    """A narrow Explore chart (presentation mode at 1280x720) drew no label under its last column of
    points (block size 1024): with the grid on, pyqtgraph ignored the overhang the fitting had let
    the label take, and at the plot's right end the widget's edge left no room for it anyway."""
    import math

    import pyqtgraph as pg

    from workbench.gui.plot_axes import ReadableAxis, keep_room_right_of_the_axis

    axis = ReadableAxis("bottom")
    plot = pg.PlotWidget(axisItems={"bottom": axis})
    qtbot.addWidget(plot)
    plot.showGrid(x=True, y=True, alpha=0.25)
    keep_room_right_of_the_axis(plot.getPlotItem())
    plot.resize(300, 200)
    plot.show()
    values = [64, 128, 256, 512, 1024]
    axis.set_categories([math.log10(v) for v in values], [str(v) for v in values], values_only=True)
    plot.setXRange(math.log10(64) - 0.1, math.log10(1024) + 0.02, padding=0)  # the last column at the end
    qtbot.wait(50)
    plot.repaint()
    labels = dict((text, rect) for rect, text in drawn_labels(axis))
    assert list(labels) == [str(v) for v in values]
    right = axis.mapRectToScene(labels["1024"]).right()
    assert right <= plot.viewport().width(), (right, plot.viewport().width())  # whole, not cut by the edge


def test_a_cut_category_axis_shows_every_name_in_its_tool_tip(qtbot) -> None:
    from PySide6.QtCore import QEvent
    from PySide6.QtGui import QHelpEvent
    from PySide6.QtWidgets import QApplication, QToolTip

    names = ["atomic_long_name", "shared_tree_x", "warp_shuffle", "two_pass_yy", "another_one", "last_one"]
    axis, plot = _category_plot(qtbot, names, 200, title="strategy")
    assert_readable(axis)
    assert axis.shown_labels() != names
    spot = plot.mapFromScene(axis.sceneBoundingRect().center())
    QApplication.sendEvent(plot.viewport(), QHelpEvent(QEvent.Type.ToolTip, spot, plot.viewport().mapToGlobal(spot)))
    qtbot.waitUntil(QToolTip.isVisible, timeout=2000)
    assert QToolTip.text() == "strategy: " + ", ".join(names)
    plot.resize(1400, 150)  # room for every name: no tool tip needed
    qtbot.wait(50)
    plot.repaint()
    assert axis.shown_labels() == names and axis.toolTip() == ""


def test_crowded_numbers_are_thinned_on_one_line_and_names_take_turns_on_two(qtbot) -> None:
    """Sixteen block sizes in a narrow chart took turns on two lines (16 48 80 ... above 32 64 96
    ...), which read as two axes from the back of a room: numbers are thinned on one line, as a
    scale is; names, which thinning would leave unnamed, still take turns."""
    for labels, numeric in (([str(16 * (k + 1)) for k in range(16)], True),
                            ([f"method_{k}" for k in range(8)], False)):
        axis, _ = _category_plot(qtbot, labels, 330 if numeric else 420)
        assert_readable(axis)
        shown = [text for text in axis.shown.values() if text]
        assert any(text.startswith("\n") for text in shown) is not numeric, shown
        if numeric:
            assert 2 <= len(shown) < len(labels) and all(text in labels for text in shown), shown


def test_parallel_value_labels_are_thinned_to_the_axis_height(window, qtbot, reduce_run) -> None:
    """In presentation mode on a short screen an axis of six values has no room for six labels of
    the large font: they ran into each other."""
    from collections import Counter

    from PySide6.QtGui import QFontMetricsF

    window.resize(1440, 700)
    window.open_session(reduce_run)
    window.zoom.presentation_action.setChecked(True)
    window.bottom_tabs.setCurrentWidget(window.parallel)
    _settle(qtbot, window)
    view = window.parallel
    height = view.plot.getPlotItem().getViewBox().height()
    line = QFontMetricsF(view.value_labels[0].textItem.font()).height()
    per_axis = Counter(round(label.pos().x()) for label in view.value_labels)
    assert max(per_axis.values()) * line <= height, (dict(per_axis), line, height)
    assert min(per_axis.values()) >= 2  # the lowest and another value still named


def test_crowded_markers_are_drawn_fainter_so_density_shows(qtbot):
    """A score chart of 18,000 trials was an opaque wall of markers: past a crowd, each marker is
    drawn fainter (where points pile up reads darker), never invisible, opaque again zoomed in."""
    import numpy as np
    import pyqtgraph as pg

    from workbench.gui.fast_scatter import CROWD, MIN_CROWD_OPACITY, FastScatter, crowd_opacity

    assert crowd_opacity(10) == crowd_opacity(CROWD) == 1.0
    assert crowd_opacity(4 * CROWD) == 0.5 and crowd_opacity(10**9) == MIN_CROWD_OPACITY
    plot = pg.PlotWidget()
    qtbot.addWidget(plot)
    plot.resize(400, 300)
    for count, opacity in ((100, 1.0), (6 * CROWD, crowd_opacity(6 * CROWD))):
        scatter = FastScatter(brush=pg.mkBrush(0, 0, 255))
        plot.addItem(scatter)
        rng = np.random.default_rng(0)
        scatter.setData(x=rng.random(count), y=rng.random(count))
        plot.setRange(xRange=(0, 1), yRange=(0, 1), padding=0)
        plot.grab()  # paints
        drawn = scatter._fragments.ndarray()
        assert len(drawn) == count and abs(scatter.drawn_opacity - opacity) <= 1 / 64
        plot.removeItem(scatter)



def test_the_crowd_is_what_the_plot_shows_not_what_its_window_holds(qtbot):
    """Zoomed in on a few of many points, each is opaque again: the crowd is counted in the plot's
    view range. It was counted in the painter's device, which is the whole window when the plot is
    one of several views in it, so the points outside the zoomed plot still faded those inside."""
    import numpy as np
    import pyqtgraph as pg
    from PySide6.QtWidgets import QVBoxLayout, QWidget

    from workbench.gui.fast_scatter import CROWD, FastScatter

    window = QWidget()
    qtbot.addWidget(window)
    window.resize(1200, 900)
    plot = pg.PlotWidget()
    layout = QVBoxLayout(window)
    layout.setContentsMargins(400, 300, 400, 300)  # the plot is a small part of the window
    layout.addWidget(plot)
    scatter = FastScatter(brush=pg.mkBrush(0, 0, 255))
    plot.addItem(scatter)
    scatter.setData(x=np.random.default_rng(0).random(8 * CROWD), y=np.random.default_rng(1).random(8 * CROWD))
    plot.setRange(xRange=(0.45, 0.55), yRange=(0.45, 0.55), padding=0)  # about 1 % of the points
    window.grab()
    assert len(scatter._fragments.ndarray()) < CROWD and scatter.drawn_opacity == 1.0


def test_moving_the_selection_ring_repaints_only_around_it(qtbot):
    """Selecting a trial moved a ring over 18,000 points and repainted the whole plot, every point
    and the grid, in every chart (a quarter of a second a click): the ring is a marker, which does
    not tell the view its bounds changed, and a repaint hands Qt only the points it exposed."""
    import numpy as np
    import pyqtgraph as pg
    from PySide6.QtWidgets import QApplication

    from workbench.gui.fast_scatter import FastScatter

    plot = pg.PlotWidget()
    qtbot.addWidget(plot)
    plot.resize(500, 400)
    count = 20_000
    scatter = FastScatter(brush=pg.mkBrush(0, 0, 255))
    ring = FastScatter(size=16, pen=pg.mkPen("k"), marker=True)
    plot.addItem(scatter)
    plot.addItem(ring, ignoreBounds=True)
    xs, ys = np.random.default_rng(0).random(count), np.random.default_rng(1).random(count)
    scatter.setData(x=xs, y=ys)
    plot.show()
    qtbot.waitExposed(plot)
    qtbot.wait(50)
    assert len(scatter._fragments.ndarray()) == count  # the first paint draws them all
    view = plot.getPlotItem().vb
    view.updateAutoRange()  # settled now: under load the first auto-range could still be pending here
    # and the whole-plot paint that settling asks for is made now, before the ring moves: left to
    # the event loop, a loaded machine could deliver it inside the loop below (a failure seen once
    # in a parallel run of the GUI tests)
    QApplication.processEvents()
    plot.viewport().repaint()
    range_before = view.viewRange()
    near = np.argsort(np.hypot(xs - 0.5, ys - 0.5))[:4]  # from one trial to a neighbour, as a person clicks
    ring.setData([xs[near[0]]], [ys[near[0]]])
    qtbot.wait(30)
    for k in near[1:]:
        ring.setData([xs[k]], [ys[k]])
        qtbot.wait(30)
        assert 0 < len(scatter._fragments.ndarray()) < count // 20, "the whole plot was repainted for a ring"
    view.updateAutoRange()  # the ring is left out of the bounds: recomputing them moves nothing
    assert view.viewRange() == range_before

class _Metrics:
    """The part of a session model the axis choice reads: per-trial metrics, none failed."""

    def __init__(self, **metrics: list[float]) -> None:
        self.metrics = {name: np.asarray(values, dtype=float) for name, values in metrics.items()}
        self.n = len(next(iter(self.metrics.values())))
        self.session = None

    def metric(self, name: str) -> np.ndarray:
        return self.metrics.get(name, np.full(self.n, np.nan))  # as the window's model: NaN where none

    def failed_mask(self) -> np.ndarray:
        return np.zeros(self.n, dtype=bool)

    def measured_mask(self) -> np.ndarray:
        return np.ones(self.n, dtype=bool)


def test_the_tradeoff_default_stays_on_a_near_tie_and_moves_for_a_clear_difference() -> None:
    """Mid-run the spreads of two memory figures drift past each other with every trial; the
    chart's y axis switched at each crossing in front of an audience. Among figures that differ
    alike the chooser's order decides, and only one that differs twice as much takes over; the
    choice is the trials' alone, so a reopened session gets the axis its run ended with."""
    from workbench.gui.axes import SWITCH_FACTOR, default_tradeoff_metric

    offered = ["memory_mb", "onchip_kb_per_sm"]
    near = _Metrics(memory_mb=[10, 12, 14], onchip_kb_per_sm=[10, 13, 15])  # on-chip differs a little more
    assert default_tradeoff_metric(near, offered) == "memory_mb"
    nearer = _Metrics(memory_mb=[10, 12, 14], onchip_kb_per_sm=[10, 12.5, 14.5])  # drifting: no flip
    assert default_tradeoff_metric(nearer, offered) == "memory_mb"
    clear = _Metrics(memory_mb=[10, 10.5, 11], onchip_kb_per_sm=[8, 32, 64])
    assert default_tradeoff_metric(clear, offered) == "onchip_kb_per_sm"
    flat = _Metrics(memory_mb=[10, 10, 10], onchip_kb_per_sm=[8, 9, 10])  # constant at first, then not
    assert default_tradeoff_metric(flat, offered) == "onchip_kb_per_sm"
    assert default_tradeoff_metric(near, ["onchip_kb_per_sm"]) == "onchip_kb_per_sm"
    assert SWITCH_FACTOR > 1
    # values near the float maximum (a hostile file) spread as their ratios do: no overflow, no
    # NaN spread that left no metric to choose (StopIteration)
    # of the first trials only, where the chart asks so (past 1,000 trials, the last multiple of
    # 1,000): the same for a run that reached 1,999 and for its session reopened
    later = _Metrics(memory_mb=[10, 20, 10, 10], onchip_kb_per_sm=[10, 10, 10, 90])
    assert default_tradeoff_metric(later, offered, upto=2) == "memory_mb"
    assert default_tradeoff_metric(later, offered) == "onchip_kb_per_sm"
    huge = _Metrics(memory_mb=[1e308, 1.5e308], onchip_kb_per_sm=[1, 2])
    assert default_tradeoff_metric(huge, offered) == default_tradeoff_metric(_Metrics(memory_mb=[2, 3], onchip_kb_per_sm=[1, 2]), offered)
    # a recording's compile time is a build cost, not a run-time trade-off: a run-time figure first,
    # however much more the compile time differs; alone, it is still shown
    recorded = _Metrics(compile_time_ms=[100, 900, 5000], gflops=[10, 11, 12])
    assert default_tradeoff_metric(recorded, ["compile_time_ms", "gflops"]) == "gflops"
    assert default_tradeoff_metric(recorded, ["compile_time_ms"]) == "compile_time_ms"
    # but a rate of fixed work is the latency read again (every point on one hyperbola): a build
    # cost says more; alone, the rate is still shown. Kernel Tuner computes its GFLOP/s from its own
    # time, so that reading counts as one too
    latency = np.array([1.0, 2.0, 4.0, 5.0])
    rated = _Metrics(latency_ms=latency * [1.0, 1.02, 0.97, 1.01], kt_time_ms=latency, gflops=100.0 / latency,
                     compile_time_ms=[100, 900, 5000, 70])
    assert default_tradeoff_metric(rated, ["gflops", "compile_time_ms"]) == "compile_time_ms"
    assert default_tradeoff_metric(rated, ["gflops"]) == "gflops"


def test_a_run_and_its_session_reopened_plot_the_same_tradeoff_metric(window, qtbot, tmp_path) -> None:
    """The axis a run ended with is the one its saved session opens with: a prepared
    demonstration looked different when reopened (on-chip storage live, shared memory reopened)."""
    from workbench.core.domain.session import save_session

    with qtbot.waitSignal(window.run_done, timeout=120_000):
        window.start_run({"kernel": "sgemm", "backend": "sim", "budget": 60, "seed": 0})
    chart = window.built_charts["tradeoff"]
    window.refresh()
    live = chart.y_name
    path = tmp_path / "s.json"
    save_session(window.model.session, path)
    window.open_session(path)
    window.refresh()
    assert chart.y_name == live


def test_a_column_of_sizes_is_labelled_row_by_row_where_the_figures_fit(qtbot) -> None:
    """The cross-size matrix of five sizes in presentation mode labelled 2^12, 2^20 and 2^28 only:
    labels were spaced by a whole line's height, figures (no descenders) need their ascent."""
    import pyqtgraph as pg
    from PySide6.QtGui import QFont, QFontMetricsF

    from workbench.gui.plot_axes import CategoryAxis

    sizes = ["2¹²", "2¹⁶", "2²⁰", "2²⁴", "2²⁸"]
    axis = CategoryAxis("left")
    font = QFont()
    font.setPointSizeF(13.5)  # presentation mode's
    axis.setStyle(tickFont=font)
    metrics = QFontMetricsF(font)
    plot = pg.PlotWidget(axisItems={"left": axis})
    qtbot.addWidget(plot)
    pitch = max(metrics.ascent() * 1.15, metrics.ascent() + 4) + 1  # room for a figure, not for a line
    plot.resize(300, 300)
    plot.show()
    axis.set_categories(range(len(sizes)), sizes)
    plot.setYRange(-0.5, len(sizes) - 0.5, padding=0)
    qtbot.wait(50)
    around = plot.height() - axis.geometry().height()  # the plot's margins and bottom axis
    plot.resize(300, int(pitch * len(sizes) + around))
    qtbot.wait(50)
    plot.repaint()
    length = axis.geometry().height()
    assert metrics.height() * 1.15 * len(sizes) > length >= metrics.ascent() * 1.15 * len(sizes)
    assert axis.shown_labels() == sizes


def test_the_score_axis_says_what_a_score_is_relative_to(window) -> None:
    """A score is a fraction of the best trial seen, so a new best moves every earlier point down and
    the best-so-far line always ends at 1: 'score' alone read as convergence to a perfect score."""
    assert left_title(window.charts["score"].plot) == "score (1 = best seen)"
    # with two metrics weighted, 1 is a trial best on both, which none may be: said so (a class
    # looked for a point at 1 under "1 = best seen")
    from tests.gui.test_gui_explain import _session

    window.model.set_session(_session())
    window.model.set_weights({"latency_ms": 1.0, "throughput_gbs": 1.0})
    window.charts["score"].refresh()
    assert left_title(window.charts["score"].plot) == "score (1 = best on every weight)"
    window.model.set_weights({"latency_ms": 1.0, "energy_j": 1.0})  # a weight on what no trial reports counts for nothing
    window.charts["score"].refresh()
    assert left_title(window.charts["score"].plot) == "score (1 = best seen)"


@pytest.mark.parametrize("span", [(0, 1), (-0.05, 1.05), (6, 8), (0, 3000)])
def test_the_score_charts_trial_axis_is_labelled_with_whole_numbers_only(qapp, span) -> None:
    """A run's first two trials read "0 0.5 1" on the score chart, and one size of a sweep
    "6 6.5 7 7.5 8": trials are counted, not measured."""
    from workbench.gui.plot_axes import ReadableAxis

    axis = ReadableAxis("bottom")
    axis.integers = True
    levels = axis.tickValues(span[0], span[1], 400)
    values = [v for _spacing, level in levels for v in level]
    assert values and all(float(v).is_integer() for v in values)
    assert all(spacing >= 1 for spacing, _level in levels)
    assert set(values) >= {float(v) for v in range(math.ceil(span[0]), math.floor(span[1]) + 1)
                           if span[1] - span[0] < 10}
    plain = ReadableAxis("bottom")  # other axes keep pyqtgraph's steps
    assert any(not float(v).is_integer() for _s, level in plain.tickValues(0, 1, 400) for v in level)


def test_the_score_chart_counts_trials_on_a_whole_number_axis(window) -> None:
    assert window.charts["score"].plot.getAxis("bottom").integers




def test_a_longer_left_title_given_to_a_plot_of_the_same_size_is_centred_on_it(qtbot) -> None:
    """pyqtgraph places an axis title only when the axis is resized: the trade-off chart's figure,
    set once a run had trials ("memory" -> "on-chip per block (KiB)"), kept the short title's place,
    centred too high, and in presentation mode at 1280 px the top of the long one was cut off."""
    import pyqtgraph as pg
    from PySide6.QtWidgets import QApplication

    from workbench.gui.plot_axes import set_left_title

    plot = pg.PlotWidget()
    qtbot.addWidget(plot)
    plot.resize(360, 260)
    plot.show()
    QApplication.processEvents()
    item = plot.getPlotItem()
    set_left_title(item, "memory")
    QApplication.processEvents()
    set_left_title(item, "on-chip per block (KiB)")
    QApplication.processEvents()
    label = item.getAxis("left").label.sceneBoundingRect()
    view = item.getViewBox().sceneBoundingRect()
    assert abs(label.center().y() - view.center().y()) < 3, (label, view)


def test_a_title_on_several_lines_keeps_clear_of_the_tick_labels(qtbot) -> None:
    """pyqtgraph reserves 0.8 of a title's height beside the tick labels: a title on three lines
    ran into them ("(m3.5" in the comparison's short plot in presentation mode)."""
    import pyqtgraph as pg
    from PySide6.QtGui import QFont
    from PySide6.QtWidgets import QApplication

    from workbench.gui.plot_axes import ReadableAxis, set_left_title, set_plot_font

    plot = pg.PlotWidget(axisItems={"left": ReadableAxis("left")})
    qtbot.addWidget(plot)
    plot.resize(300, 170)
    plot.show()
    item = plot.getPlotItem()
    set_plot_font(item, QFont("DejaVu Sans", 16))
    item.plot([0, 1, 2], [3.2, 3.5, 4.1])
    set_left_title(item, "best feasible latency (ms)")
    for _ in range(3):
        QApplication.processEvents()
    axis = item.getAxis("left")
    assert axis.labelText.count("<br>") >= 1, axis.labelText
    title_right = axis.label.mapRectToParent(axis.label.boundingRect()).right() - axis.label.document().documentMargin()
    ticks_left = axis.width() - max(0, axis.style["tickLength"]) - axis.style["tickTextOffset"][0] - axis.textWidth
    assert title_right <= ticks_left, (title_right, ticks_left)


def test_thinned_value_labels_keep_the_values_that_carry_a_count() -> None:
    """Every third label of fifteen values dropped the one value that failed, and its count."""
    from workbench.gui.axes import labelled_positions

    counts = [0] * 15
    assert labelled_positions(counts, 1) == set(range(15))
    assert labelled_positions(counts, 3) == {0, 3, 6, 9, 12}
    counts[4] = 1
    kept = labelled_positions(counts, 3)
    assert 4 in kept and kept == {0, 4, 7, 10, 13}  # the rest as regular as the room allows
    counts[5] = 7  # two counted values too close for both: the larger count keeps its label
    assert 5 in labelled_positions(counts, 3) and 4 not in labelled_positions(counts, 3)
    assert all(abs(a - b) >= 3 for a in kept for b in kept if a != b)


def test_an_axis_whose_points_share_one_value_gets_a_readable_range() -> None:
    from workbench.gui.axes import single_value_range

    assert single_value_range(np.array([7366.85, 7366.85])) == pytest.approx((6630.165, 8103.535))
    assert single_value_range(np.array([0.0])) == (-1.0, 1.0)
    assert single_value_range(np.array([0.01]), log=True) == pytest.approx((-0.09, 0.11))  # a tenth of a decade either side
    # a slot's values as ticks: the neighbours on both sides, so two values are labelled
    assert single_value_range(np.array([64.0]), ticks=[32.0, 64.0, 128.0]) == pytest.approx((17.6, 142.4))
    assert single_value_range(np.array([32.0]), ticks=[32.0, 64.0]) == pytest.approx((-9.6, 73.6))
    assert single_value_range(np.array([1.0, 2.0])) is None and single_value_range(np.array([np.nan])) is None


def test_the_first_trial_is_drawn_on_axes_a_class_can_read(window, qtbot, tmp_path) -> None:
    """One trial (what a class sees a second after Start): trial numbers from 0, not -4 to 4; the
    slot axis at two of its values, not 15.6 ... 16.4; and the automatic range back once points
    spread."""
    path = tmp_path / "one.json"
    start_run(RunRequest(kernel="conv2d", backend="sim", strategy="random", budget=1,
                         backend_options={"compile": "estimate"}), path).run()
    window.open_session(str(path))
    for chart in (window.score_chart, window.tradeoff_chart, window.metric_chart):
        chart.refresh()
    (x0, x1), (y0, y1) = window.score_chart.plot.getPlotItem().vb.viewRange()
    assert -1 < x0 < 0 and x1 >= 9 and y0 <= 0 and y1 >= 1
    window.metric_chart.set_axes("slot:block_size_x", "gflops")
    window.metric_chart.refresh()
    (x0, x1), (y0, y1) = window.metric_chart.plot.getPlotItem().vb.viewRange()
    value = window.model.session.trials[0].config["block_size_x"]
    slot = next(s for s in window.model.session.space.slots if s.name == "block_size_x")
    assert sum(x0 <= v <= x1 for v in slot.values) >= 2 and x0 <= value <= x1
    gflops = window.model.session.trials[0].measurement.metrics["gflops"]
    assert (y1 - y0) >= 0.1 * gflops
    tradeoff = window.tradeoff_chart
    view = tradeoff.plot.getPlotItem().vb
    (_, _), (m0, m1) = view.viewRange()
    assert m1 - m0 >= 0.1 * window.model.session.trials[0].measurement.metrics["memory_mb"]
    # a zoom the person made stays through refreshes (a slider move, a new trial)
    view.scaleBy((0.5, 0.5))
    zoomed = view.viewRange()
    window.model.set_weights({**window.model.weights.values, "memory_mb": 0.5})
    tradeoff.refresh()
    assert np.allclose(view.viewRange(), zoomed)
    # a latency limit shown beside the one point is in view (the automatic range reaches it)
    latency = window.model.session.trials[0].measurement.metrics["latency_ms"]
    window.model.set_constraints(max_latency_ms=3 * latency)
    tradeoff.refresh()
    qtbot.wait(50)  # (the automatic range follows on the next pass of the event loop)
    (x0, x1), _ = view.viewRange()
    at = math.log10(3 * latency) if tradeoff.log_x else 3 * latency
    assert x0 <= at <= x1
    # a limit at the point itself leaves the range around it readable (not 1.0 to 1.0125 ms)
    window.model.set_constraints(max_latency_ms=latency)
    tradeoff.refresh()
    qtbot.wait(50)
    (x0, x1), _ = view.viewRange()
    assert x1 - x0 >= (0.15 if tradeoff.log_x else 0.15 * latency)
    # a limit far off on a linear axis: the point keeps a margin from the edge
    tradeoff.set_log(False, False)
    window.model.set_constraints(max_latency_ms=50 * latency)
    tradeoff.refresh()
    qtbot.wait(50)
    (x0, x1), _ = view.viewRange()
    assert x0 >= 0 and x0 <= 50 * latency <= x1 and (latency - x0) / (x1 - x0) >= 0.015
    start_run(RunRequest(kernel="conv2d", backend="sim", strategy="random", budget=30, seed=1,
                         backend_options={"compile": "estimate"}), tmp_path / "more.json").run()
    window.open_session(str(tmp_path / "more.json"))
    window.score_chart.refresh()
    score_view = window.score_chart.plot.getPlotItem().vb
    assert window.score_chart._held_open[0] is None and score_view.state["autoRange"][0]  # automatic again


def test_names_cut_alike_are_cut_in_the_middle_to_keep_what_tells_them_apart() -> None:
    """``block_size_x`` and ``block_size_y`` both read ``block_si…`` under the parallel
    coordinates in presentation mode: a class could not tell the two axes apart."""
    from workbench.gui.axes import fit_category_labels

    def measure(text: str) -> float:
        return 7.0 * len(text)

    names = ["block_size_x", "block_size_y", "tile_size_x", "use_padding"]
    shown = [text for text, _row in fit_category_labels([35, 105, 175, 245], names, 280, measure, 8, False)]
    assert shown[0] != shown[1] and shown[0].endswith("x") and shown[1].endswith("y"), shown
    assert all(measure(text) <= 70 for text in shown), shown  # in the room the end-cut names had
    assert shown[2:] == ["tile_si…", "use_pad…"]  # names cut apart already keep their ends cut
    # an ending too long to tell them apart in the room: never wider than the room (they overlapped)
    for width in (90, 110):
        fitted = fit_category_labels([width / 4, 3 * width / 4], ["block_x_size", "block_y_size"], width, measure, 8,
                                     False)
        assert all(measure(text) <= width / 2 for text, _row in fitted), (width, fitted)
