"""The window's plots have no context menus (a right click there does nothing, rather than offer
pyqtgraph's plot options, which change what a chart shows behind the model's back), and they are
not built in the first place: building one cost about 2 ms a plot at every window's start."""

from __future__ import annotations

import pyqtgraph as pg


def test_no_plot_of_the_window_has_or_builds_a_context_menu(window):
    for key in list(window.pages._pending):  # every tab page built, with the plots it holds
        window.pages.page(key)
    plots = window.findChildren(pg.PlotWidget)
    assert len(plots) >= 6
    for widget in plots:
        item = widget.getPlotItem()
        assert not item.menuEnabled()
        assert item.getViewBox().menu is None  # never built, not merely hidden
