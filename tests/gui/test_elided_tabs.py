"""The tab row's whole-name widths are measured once per layout, and measured again when what they
depend on changes (a name, a tab's visibility, the font)."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QLabel, QStyle, QTabBar

from workbench.gui.elided_label import ElidedTabs, _ElidedTabBar

#: sizes, fonts and layout: tested as a person's window is styled
pytestmark = pytest.mark.app_style_sheet

NAMES = ["Results", "Failed", "Importance", "Why fast?", "Roofline", "Parallel", "Slices", "Compare",
         "Sizes", "Portability"]


@pytest.fixture
def tabs(qtbot):
    widget = ElidedTabs()
    qtbot.addWidget(widget)
    for name in NAMES:
        widget.addTab(QLabel(name), name)
    widget.resize(520, 200)  # too short for every whole name
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def _whole(bar: QTabBar, index: int) -> int:
    return QTabBar.tabSizeHint(bar, index).width()


def test_a_relayout_measures_the_whole_names_once_per_padding_not_once_per_tab(tabs, qtbot, monkeypatch):
    bar = tabs.tabBar()
    assert isinstance(bar, _ElidedTabBar) and tabs.names_cut()
    calls = []
    measure = _ElidedTabBar._measure_whole_widths
    monkeypatch.setattr(_ElidedTabBar, "_measure_whole_widths", lambda self: calls.append(1) or measure(self))
    tabs.resize(500, 200)
    qtbot.wait(20)
    hints = [bar.tabSizeHint(i).width() for i in range(bar.count())]
    assert len(calls) == 0, "nothing the widths depend on changed: no new measurement"
    assert sum(hints) <= tabs.width()
    bar.setTabText(3, "Why is it fast?")
    hints = [bar.tabSizeHint(i).width() for i in range(bar.count())]
    assert 1 <= len(calls) <= 2  # each padding at most once, however many tabs ask


def test_a_longer_name_a_hidden_tab_and_a_larger_font_are_measured_again(tabs, qtbot):
    bar = tabs.tabBar()
    tabs.resize(4000, 200)  # room for every name: each tab as wide as its whole name
    qtbot.wait(20)
    assert not tabs.names_cut()
    before = bar.tabSizeHint(2).width()
    bar.setTabText(2, "Importance of every slot")
    assert bar.tabSizeHint(2).width() == _whole(bar, 2) > before
    assert sum(bar.whole_widths().values()) == sum(_whole(bar, i) for i in range(bar.count()))
    bar.setTabVisible(5, False)
    assert 5 not in bar.whole_widths()
    font = QFont(bar.font())
    font.setPointSizeF(font.pointSizeF() * 2)
    bar.setFont(font)
    assert bar.whole_widths()[2] == _whole(bar, 2)
    assert bar.tabSizeHint(2).width() == _whole(bar, 2) > 1.5 * before
    # an icon or a button beside a name widens its tab
    wide = bar.whole_widths()[3]
    bar.setTabIcon(3, tabs.style().standardIcon(QStyle.StandardPixmap.SP_DialogOkButton))
    assert bar.whole_widths()[3] == _whole(bar, 3) > wide
    wide = bar.whole_widths()[4]
    tabs.setTabsClosable(True)
    assert bar.whole_widths()[4] == _whole(bar, 4) > wide


def test_the_rows_least_width_measures_the_cut_names_once_until_a_name_changes(tabs, qtbot, monkeypatch):
    """Qt asks for the row's least width hundreds of times while a window is built or resized, and
    each answer needs every tab's cut width: measured afresh each time, that was a fifth of the
    window's layout time."""
    bar = tabs.tabBar()
    calls = []
    measure = _ElidedTabBar._measure_least_widths
    monkeypatch.setattr(_ElidedTabBar, "_measure_least_widths", lambda self: calls.append(1) or measure(self))
    least = bar.minimumSizeHint().width()
    tabs.resize(480, 200)
    qtbot.wait(20)
    assert [bar.minimumSizeHint().width() for _ in range(5)] == [least] * 5
    assert len(calls) <= 1, "nothing the cut widths depend on changed: at most the first measurement"
    bar.setTabText(3, "Why is this config so fast?")
    assert bar.minimumSizeHint().width() > least  # the longest whole name adds to its own cut width
    assert 1 <= len(calls) <= 2
    bar.setTabVisible(0, False)
    fewer = bar.minimumSizeHint().width()
    bar.setTabVisible(0, True)
    assert bar.minimumSizeHint().width() > fewer
