"""The window's lower tabs beyond Results and Failures are built when first shown (workbench.gui.lazy_tabs)."""

from __future__ import annotations

import pyqtgraph as pg
import pytest
from PySide6.QtWidgets import QApplication

LAZY = {"importance": "Importance", "why": "Why fast?", "roofline": "Roofline", "parallel": "Parallel",
        "slices": "Slices", "compare": "Compare", "sizes": "Sizes", "portability": "Portability"}


def _labels(window) -> list[str]:
    return [window.bottom_tabs.tabText(i) for i in range(window.bottom_tabs.count())]


def test_the_window_opens_with_its_tabs_in_place_but_only_the_shown_ones_built(window):
    assert _labels(window) == ["Results", "Failures", *LAZY.values()]
    assert not any(window.pages.is_built(key) for key in LAZY)
    assert len(window.findChildren(pg.PlotWidget)) == 3  # the three charts above; nothing in the closed tabs
    assert list(window.built_charts) == ["score", "tradeoff", "metric"]


def test_showing_a_tab_builds_its_page_in_the_placeholders_place(window):
    seen: list[int] = []
    window.bottom_tabs.currentChanged.connect(seen.append)
    roofline = _labels(window).index("Roofline")
    window.bottom_tabs.setCurrentIndex(roofline)
    QApplication.processEvents()
    assert window.pages.is_built("roofline") and not window.pages.is_built("sizes")
    assert window.bottom_tabs.currentIndex() == roofline and window.bottom_tabs.currentWidget() is window.roofline_chart
    assert window.roofline_chart.isVisible() and seen == [roofline]  # one change, to the built page
    assert _labels(window) == ["Results", "Failures", *LAZY.values()]
    assert window.built_charts["roofline"] is window.roofline_chart  # refreshed on the timer like the others
    # asked for by code, a page is built without being shown, and the shown tab stays
    view = window.size_view
    assert window.bottom_tabs.indexOf(view) == _labels(window).index("Sizes") and not view.isVisible()
    assert window.bottom_tabs.currentIndex() == roofline


def test_a_page_built_after_a_zoom_takes_it(window):
    window.zoom.set_factor(1.5)
    size = 1.5 * window.zoom.base_point_size
    window.bottom_tabs.setCurrentIndex(_labels(window).index("Why fast?"))
    assert window.why_view.plot.getAxis("left").style["tickFont"].pointSizeF() == pytest.approx(size)
    roofline = window.roofline_chart
    assert roofline.plot.getAxis("bottom").style["tickFont"].pointSizeF() == pytest.approx(size)
    assert "12.0pt" in roofline.legend.styleSheet()
    for plot in window.importance.findChildren(pg.PlotWidget):
        assert plot.getAxis("bottom").style["tickFont"].pointSizeF() == pytest.approx(size)


def test_every_chart_is_listed_and_exportable_before_its_tab_was_shown(window, tmp_path):
    export_menu = next(a.menu() for a in window.menuBar().actions()[0].menu().actions() if a.text() == "Export c&hart")
    # a menu per chart, each by its own access letter (ten entries "... chart as PNG..." had none)
    charts = [a.text() for a in export_menu.actions()]
    assert charts == ["&Score per trial", "&Latency vs memory", "&Explore", "&Roofline",
                      "&Best latency per evaluation (Compare)"], charts
    letters = [text[text.index("&") + 1].lower() for text in charts]
    assert len(set(letters)) == len(letters)
    assert all([a.text() for a in entry.menu().actions()] == ["&PNG...", "&SVG..."] for entry in export_menu.actions())
    from workbench.core.domain.measurement import Measurement, Status, Trial
    from workbench.core.domain.session import Session
    from workbench.core.domain.space import SearchSpace, Slot

    space = SearchSpace([Slot("block", (32, 64))])  # (with nothing shown an export says so, and writes nothing)
    trials = [Trial(i, config, Measurement(Status.OK, {"latency_ms": 1.0 + i})) for i, config in enumerate(space)]
    window.model.set_session(Session(kernel="toy", space=space, trials=trials, device={"name": "toy GPU", "simulated": True}))
    assert not window.pages.is_built("roofline")
    window.export_chart("roofline", str(tmp_path / "roofline.png"))
    assert (tmp_path / "roofline.png").stat().st_size > 0
    assert list(window.charts) == ["score", "tradeoff", "metric", "roofline"]
    assert not window.pages.is_built("compare")
    window.export_chart("compare", str(tmp_path / "compare.png"))
    assert (tmp_path / "compare.png").stat().st_size > 0


def test_the_compare_curves_export_larger_than_their_pane_with_their_legend(window, tmp_path):
    """The curves of two strategies were a 200 x 180 px plot in the Compare tab, which nothing
    could enlarge or export: a slide of them was a screenshot of the pane."""
    from PySide6.QtGui import QImage

    from workbench.core.domain.measurement import Measurement, Status, Trial
    from workbench.core.domain.session import Session
    from workbench.core.domain.space import SearchSpace, Slot

    space = SearchSpace([Slot("block", (32, 64, 128, 256))])
    trials = [Trial(i, config, Measurement(Status.OK, {"latency_ms": 1.0 + i})) for i, config in enumerate(space)]
    window.model.set_session(Session(kernel="toy", space=space, trials=trials, device={"name": "toy GPU", "simulated": True}))
    window.export_chart("compare", str(tmp_path / "compare.png"))
    image = QImage(str(tmp_path / "compare.png"))
    assert image.width() >= 2 * 900 and image.height() >= 2 * 520  # at least the export's size, at scale 2
    assert window.compare.export_title() == "Best latency per evaluation · toy"
    assert "this session: toy" in window.compare.legend.text()


def test_a_page_whose_build_fails_is_built_again_when_next_asked_for(qtbot):
    from PySide6.QtWidgets import QLabel, QTabWidget, QWidget

    from workbench.gui.lazy_tabs import LazyTabs

    tabs = QTabWidget()
    qtbot.addWidget(tabs)
    tabs.addTab(QWidget(), "first")
    built: list[str] = []
    lazy = LazyTabs(tabs, lambda key, page: built.append(key))
    attempts: list[int] = []

    def build() -> QWidget:
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("the view could not be built from this session")
        return QLabel("page")

    lazy.add("page", "Page", build)
    with pytest.raises(RuntimeError):
        lazy.page("page")
    assert not lazy.is_built("page") and built == []
    page = lazy.page("page")
    assert lazy.is_built("page") and built == ["page"] and tabs.widget(1) is page and tabs.count() == 2


def test_a_page_asked_for_as_the_wrong_kind_of_widget_is_an_error_not_a_silent_cast(window):
    from workbench.gui.compare_view import CompareView
    from workbench.gui.size_view import SizeView

    assert isinstance(window.pages.typed_page("sizes", SizeView), SizeView)
    with pytest.raises(TypeError, match="'sizes' is a SizeView, not a CompareView"):
        window.pages.typed_page("sizes", CompareView)


def test_switching_to_a_view_inside_a_page_shows_its_page(window):
    """Slot importance is the view a scroll area holds: setCurrentWidget(window.importance) did
    nothing (Qt ignores a widget that is not a page), and a script's switch to it was lost."""
    window.bottom_tabs.setCurrentWidget(window.importance)
    QApplication.processEvents()
    assert window.bottom_tabs.currentIndex() == _labels(window).index("Importance")
    assert window.importance.isVisible()
    window.bottom_tabs.setCurrentWidget(window.results)  # a page itself, as before
    assert window.bottom_tabs.currentWidget() is window.results


def test_a_page_built_after_a_run_leaves_the_windows_menus_usable_for_the_next_run(window, qtbot):
    """The Tab order of a page built later was read with ``nextInFocusChain``, which made PySide
    record each widget as the child of the one before it, the menu bar among them: the Slices
    page remade its canvas, PySide took the menu bar's wrapper for deleted, and the next run's
    finishing handler raised updating the recent files, so it never said the run was done."""
    import shiboken6

    run = {"kernel": "sgemm", "backend": "sim", "budget": 12, "seed": 0, "options": {"compile": "estimate"}}
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run(run)
    bar, recent = window.menuBar(), window.recent_menu
    window.bottom_tabs.setCurrentWidget(window.pages.page("slices"))  # built now, its canvas then remade
    qtbot.wait(200)
    assert shiboken6.isValid(bar) and shiboken6.isValid(recent)
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({**run, "seed": 1})


def test_reading_the_tab_order_keeps_each_widgets_recorded_parent(window) -> None:
    """After :func:`tab_order` a widget deleted takes none but its own children's wrappers along."""
    import shiboken6
    from PySide6.QtWidgets import QLineEdit

    from workbench.gui.keyboard import tab_order

    doomed = QLineEdit(window.objective_panel)  # a widget late in the chain: the window follows it
    doomed.show()
    order = tab_order(window)
    assert doomed in order and window not in order and window.menuBar() in order
    bar, recent = window.menuBar(), window.recent_menu
    shiboken6.delete(doomed)
    assert shiboken6.isValid(bar) and shiboken6.isValid(recent)
