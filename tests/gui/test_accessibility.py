"""The window for a person who works from the keyboard, with a screen reader or a dark desktop."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QTabWidget

ROOT = Path(__file__).resolve().parents[2]
SESSION = ROOT / "resources" / "sessions" / "vector_add_NVIDIA_H200.json"

pytestmark = pytest.mark.app_style_sheet


def _luminance(rgb: np.ndarray) -> np.ndarray:
    """WCAG relative luminance of sRGB pixels (..., 3) in 0..255."""
    c = rgb.astype(float) / 255.0
    linear = np.where(c <= 0.03928, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return linear @ np.array([0.2126, 0.7152, 0.0722])


def _text_contrast(widget) -> float:
    """Contrast between a one-colour text widget's most common colour (its background) and its
    darkest or lightest pixel, whichever differs more: the text on it, as a reader sees it (drawn
    inside its parent, whose style sheet paints the background)."""
    image = widget.parentWidget().grab(widget.geometry()).toImage()
    image = image.convertToFormat(image.Format.Format_RGB888)
    width, height = image.width(), image.height()
    data = np.frombuffer(image.constBits(), np.uint8, image.bytesPerLine() * height)
    pixels = data.reshape(height, image.bytesPerLine())[:, : width * 3].reshape(-1, 3)
    colours, counts = np.unique(pixels, axis=0, return_counts=True)
    background = _luminance(colours[np.argmax(counts)])
    lum = _luminance(colours)
    extreme = lum.min() if background - lum.min() > lum.max() - background else lum.max()
    high, low = max(background, extreme), min(background, extreme)
    return float((high + 0.05) / (low + 0.05))


@pytest.fixture
def dark_desktop(qapp):
    """The application palette a dark desktop theme gives (light text on dark), restored after."""
    before = QPalette(qapp.palette())
    dark = QPalette(QColor(45, 45, 45))
    for group in (QPalette.ColorGroup.Active, QPalette.ColorGroup.Inactive):
        for role, colour in ((QPalette.ColorRole.Window, QColor(45, 45, 45)), (QPalette.ColorRole.Base, QColor(30, 30, 30)),
                             (QPalette.ColorRole.Text, QColor(230, 230, 230)),
                             (QPalette.ColorRole.WindowText, QColor(230, 230, 230))):
            dark.setColor(group, role, colour)
    qapp.setPalette(dark)
    hints = qapp.styleHints()
    yield qapp
    qapp.setPalette(before)
    if hasattr(hints, "unsetColorScheme"):
        hints.unsetColorScheme()


def test_under_a_dark_desktop_theme_the_recommendation_card_stays_readable(dark_desktop, qtbot, tmp_path):
    """The card has a fixed light background; its text took the dark theme's near-white (1.2:1)."""
    from workbench.gui.app import keep_light_colours
    from workbench.gui.main_window import MainWindow
    from workbench.gui.settings_store import JsonSettings

    keep_light_colours(dark_desktop)
    window = MainWindow(interactive=False, settings=JsonSettings(str(tmp_path / "settings.json")))
    qtbot.addWidget(window)
    window.resize(1440, 900)
    window.show()
    window.open_session(str(SESSION))
    QApplication.processEvents()
    assert window.best_card.isVisible()
    assert _text_contrast(window.best_card.title) >= 4.5
    text = window.palette().color(QPalette.ColorRole.WindowText)
    assert text.lightness() < 60  # dark text on the light window, as everywhere
    # the grey example text in empty fields, the only label of the problem and sizes fields: 3.9:1 was Qt's
    palette = dark_desktop.palette()
    colours = [palette.color(role) for role in (QPalette.ColorRole.PlaceholderText, QPalette.ColorRole.Base)]
    grey, base = (_luminance(np.array([c.red(), c.green(), c.blue()])) for c in colours)
    assert (max(grey, base) + 0.05) / (min(grey, base) + 0.05) >= 4.5


@pytest.mark.parametrize("key", [Qt.Key.Key_Space, Qt.Key.Key_Return])
def test_the_strategy_options_are_worked_from_the_keyboard(window, qtbot, key):
    """The options were a form in a menu, which kept the keyboard: no editor took focus, Tab moved
    between menu entries and only a mouse reached an option. Enter opens them as Space does (a
    tool button takes Space alone; see gui.keyboard)."""
    from PySide6.QtTest import QTest

    toolbar = window.toolbar
    toolbar.strategy.setCurrentText("agents")
    button = toolbar.options_button
    button.setFocus()
    QTest.keyClick(button, key)
    popup = toolbar.options_popup
    qtbot.waitUntil(popup.isVisible, timeout=2000)
    form = toolbar.strategy_options
    first = QApplication.focusWidget()
    assert first is not None and form.isAncestorOf(first), first
    QTest.keyClick(first, Qt.Key.Key_Tab)
    second = QApplication.focusWidget()
    assert second is not first and form.isAncestorOf(second), second
    editors = [editor for _, editor in form.editors.values()]
    assert second in editors or any(editor.isAncestorOf(second) for editor in editors)
    # each editor is named by its option (a screen reader said "spin box 10", whose option unsaid)
    assert all(editor.accessibleName() == option.name for option, editor in form.editors.values())
    QTest.keyClick(second, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not popup.isVisible(), timeout=2000)
    assert QApplication.focusWidget() is button


def _focused_on_the_trials(window, qtbot):
    """The window on :data:`SESSION`, active, with the focus on the results table; its lower tabs."""
    window.open_session(str(SESSION))
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=2000)
    window.results.view.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is window.results.view, timeout=2000)
    return window.bottom_tabs


def test_ctrl_tab_cycles_through_pages_built_as_they_open(window, qtbot):
    """A page built when first shown takes the place of a placeholder nothing can focus: Ctrl+Tab
    onto it dropped the focus out of the tabs (into the source view), and every later Ctrl+Tab did
    nothing."""
    from PySide6.QtTest import QTest

    tabs = _focused_on_the_trials(window, qtbot)
    for expected in (1, 2, 3, 4):  # Failures, then Importance, Why fast? and Roofline, built as they open
        QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab, Qt.KeyboardModifier.ControlModifier)
        assert tabs.currentIndex() == expected
        assert tabs.isAncestorOf(QApplication.focusWidget()), (expected, QApplication.focusWidget())


def test_ctrl_tab_goes_through_the_lower_tabs_from_anywhere_in_the_window(window, qtbot):
    """The tab widget answered Ctrl+Tab only with the focus inside it: after F5 the focus is on
    Start, and on a toolbar's control the key did nothing (F5 and F6 work from anywhere)."""
    from PySide6.QtTest import QTest

    tabs = _focused_on_the_trials(window, qtbot)
    control = window.toolbar.budget
    control.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is control, timeout=2000)
    QTest.keyClick(control, Qt.Key.Key_Tab, Qt.KeyboardModifier.ControlModifier)
    assert tabs.currentIndex() == 1 and tabs.isAncestorOf(QApplication.focusWidget())
    control.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is control, timeout=2000)
    backwards = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier
    QTest.keyClick(control, Qt.Key.Key_Backtab, backwards)
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Backtab, backwards)
    assert tabs.currentIndex() == tabs.count() - 1  # round past the first
    assert tabs.isAncestorOf(QApplication.focusWidget()), QApplication.focusWidget()
    # the tabs the focus is in go on, as a tab widget does by itself (the left column's turned no more)
    left = window.left_tabs
    left.tabBar().setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is left.tabBar(), timeout=2000)
    shown = tabs.currentIndex()
    QTest.keyClick(left.tabBar(), Qt.Key.Key_Tab, Qt.KeyboardModifier.ControlModifier)
    assert left.currentIndex() == 1 and tabs.currentIndex() == shown


def test_tables_of_the_later_tabs_give_tab_back(window):
    """Compare's and Portability's tables moved Tab from cell to cell (156 presses stayed in one)."""
    from PySide6.QtWidgets import QAbstractItemView

    window.open_session(str(SESSION))
    _every_tab_shown(window)
    tables = [t for t in window.bottom_tabs.findChildren(QAbstractItemView) if t.focusPolicy() & Qt.FocusPolicy.TabFocus]
    assert len(tables) >= 3 and [t.accessibleName() for t in tables if t.tabKeyNavigation()] == []


def _pixels(image):
    """An image's pixels as an (height, width, 4) array."""
    import numpy as np
    from PySide6.QtGui import QImage

    image = image.convertToFormat(QImage.Format.Format_RGBA8888)
    return np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine() // 4, 4).copy()


def test_the_run_progress_is_named_and_the_recommendation_card_shows_its_focus(window, qapp, qtbot, tmp_path):
    """Focus rests on the progress bar while a stop winds down: a screen reader said only "9 / 40".
    The card's scroll area, a Tab stop, showed the focus at the card's four corners alone (its frame,
    laid out while unfocused, was drawn under the card)."""
    from PySide6.QtWidgets import QScrollArea

    from workbench.gui.app import STYLE_SHEET
    from workbench.gui.main_window import MainWindow
    from workbench.gui.settings_store import JsonSettings

    assert window.toolbar.progress.accessibleName() == "Run progress"
    previous = qapp.styleSheet()
    qapp.setStyleSheet(STYLE_SHEET.read_text())  # before the window, as the application starts
    try:
        styled = MainWindow(interactive=False, settings=JsonSettings(str(tmp_path / "styled.json")))
        qtbot.addWidget(styled)
        styled.resize(1440, 900)
        styled.show()
        styled.open_session(str(SESSION))
        card = styled.findChild(QScrollArea, "cardScroll")
        styled.activateWindow()
        qtbot.waitUntil(styled.isActiveWindow, timeout=2000)
        styled.results.view.setFocus()
        qtbot.waitUntil(lambda: QApplication.focusWidget() is styled.results.view, timeout=2000)
        unfocused = _pixels(card.grab().toImage())
        card.setFocus()
        QApplication.processEvents()
        focused = _pixels(card.grab().toImage())
        # a frame all round: at least its length in pixels differ
        assert card.hasFocus() and int((focused != unfocused).any(axis=2).sum()) >= 2 * (card.width() + card.height())
        # so do the frameless panes Tab reaches to scroll them (Why fast?, the slice plots): no mark at all
        framed = []
        _every_tab_shown(styled)  # (Why fast? and Slices are built when first shown)
        for pane in styled.findChildren(QScrollArea, "focusFramed"):
            tabs = pane.parentWidget()
            while tabs is not None and not isinstance(tabs, QTabWidget):
                tabs = tabs.parentWidget()
            assert tabs is not None
            tabs.setCurrentIndex(next(i for i in range(tabs.count()) if tabs.widget(i).isAncestorOf(pane)))
            styled.results.view.setFocus() if styled.results.view.isVisible() else styled.setFocus()
            QApplication.processEvents()
            unfocused = _pixels(pane.grab().toImage())
            pane.setFocus()
            QApplication.processEvents()
            focused = _pixels(pane.grab().toImage())
            assert pane.hasFocus() and int((focused != unfocused).any(axis=2).sum()) >= 2 * (pane.width() + pane.height())
            framed.append(pane.accessibleName())
        assert sorted(framed) == ["Slice plots", "Why this config is fast"], framed
    finally:
        qapp.setStyleSheet(previous)


def test_tab_passes_over_the_charts_which_answer_no_key(window, qtbot):
    """Each plot was a Tab stop with no focus frame and no keys: invisible stops between controls."""
    import pyqtgraph as pg

    window.open_session(str(SESSION))
    _every_tab_shown(window)
    plots = window.findChildren(pg.PlotWidget) + window.findChildren(pg.GraphicsLayoutWidget)
    assert len(plots) >= 7
    assert [plot for plot in plots if plot.focusPolicy() & Qt.FocusPolicy.TabFocus] == []


@pytest.mark.parametrize("key", [Qt.Key.Key_Space, Qt.Key.Key_Return])
def test_show_in_table_takes_the_keyboard_to_the_row(window, qtbot, key):
    """The row was selected but the focus stayed on the button, a Tab stop away from it. Enter
    presses it as Space does: a push button outside a dialog took Space alone."""
    from PySide6.QtTest import QTest

    window.open_session(str(SESSION))
    button = window.best_card.select_button
    button.setFocus()
    QTest.keyClick(button, key)
    qtbot.waitUntil(lambda: QApplication.focusWidget() is window.results.view, timeout=2000)
    assert QApplication.focusWidget() is window.results.view
    assert window.results.selected_row() == window.model.ranking.best


def _tab_stops(window) -> list:
    """The widgets Tab reaches in the window, in order, as a keyboard user meets them."""
    from workbench.gui.keyboard import tab_order

    return [widget for widget in tab_order(window)
            if widget.focusPolicy() & Qt.FocusPolicy.TabFocus and widget.isVisible() and widget.isEnabled()
            and widget.focusProxy() is None]


def _name(widget) -> str:
    """What a screen reader says of a widget: its accessible name, else its text, else its tool tip."""
    text = widget.text() if hasattr(widget, "text") and isinstance(widget.text(), str) else ""
    return widget.accessibleName() or text.replace("&", "") or widget.toolTip()


def _every_tab_shown(window) -> None:
    """Each bottom tab shown once (some are built when first shown), then the Results tab again."""
    for index in range(window.bottom_tabs.count()):
        window.bottom_tabs.setCurrentIndex(index)
        QApplication.processEvents()


@pytest.mark.parametrize("tab", ["Results", "Failures", "Importance", "Why fast?", "Roofline", "Parallel", "Slices",
                                 "Compare", "Sizes", "Portability"])
def test_every_tab_stop_of_the_window_has_a_name_a_screen_reader_can_say(window, qtbot, tab):
    """Sliders, spin boxes, the backend and filter combos, the tables, the source view and the
    scroll areas were nameless stops (a spin box said only "24 evals" or "off"). An input's name
    is its accessible name, not its tool tip, which a screen reader does not say as its name (the
    kernel, problem and sizes fields, the pace box and the charts' axis choosers were announced by
    their value alone); a button's or check box's own text names it."""
    window.open_session(str(SESSION))
    _every_tab_shown(window)
    tabs = window.bottom_tabs
    tabs.setCurrentIndex(next(i for i in range(tabs.count()) if tabs.tabText(i) == tab))
    QApplication.processEvents()
    from PySide6.QtWidgets import QAbstractButton, QAbstractSpinBox, QComboBox, QLineEdit, QSlider

    nameless = []
    for widget in _tab_stops(window):
        inputs = (QAbstractSpinBox, QComboBox, QLineEdit, QSlider)
        name = widget.accessibleName() or ("" if isinstance(widget, inputs) else widget.toolTip())
        if not name and isinstance(widget, QAbstractButton):
            name = _name(widget)  # a button's or check box's own text names it
        if not name:
            parent = widget.parentWidget()
            nameless.append(f"{type(widget).__name__} {widget.objectName()!r} in {type(parent).__name__}")
    assert not nameless, "\n".join(nameless)


def test_sliders_say_what_they_set_and_infeasible_points_differ_by_shape(window):
    """The four weight sliders were all announced as "Score weights", at their position (10 for a
    weight of 1); a limit's slider said 700 for 0.122 ms; the constraint boxes had no tool tip; and
    infeasible points differed from feasible ones by colour alone."""
    window.open_session(str(SESSION))
    panel = window.objective_panel
    latency = panel.weight_sliders["latency_ms"]
    assert latency.accessibleName() == "latency (ms) weight" and latency.accessibleDescription() == "weight 1"
    throughput = panel.weight_sliders["throughput_gbs"]
    assert throughput.accessibleName() == "throughput (GB/s) weight"
    control = panel.limits["max_latency_ms"]
    assert "max latency (ms)" in control.enabled.toolTip()
    memory = panel.limits["max_memory_mb"]  # the same memory for every trial of this recording: off, and why
    assert not memory.enabled.isEnabled() and "for every trial" in memory.enabled.toolTip()
    assert memory.enabled.accessibleDescription() == memory.enabled.toolTip()  # out of the Tab order, still said
    assert control.slider.accessibleDescription() == "limit off"
    control.slider.setValue(700)
    assert control.slider.accessibleDescription() == f"limit {control.spin.text()}" != "limit off"
    window.model.set_constraints(max_latency_ms=None)
    assert control.slider.accessibleDescription() == "limit off"
    window.model.set_constraints(max_latency_ms=float(np.nanmedian(window.model.metric("latency_ms"))))
    for chart in (window.tradeoff_chart, window.score_chart, window.metric_chart):
        chart.refresh()
        assert "○</span>&nbsp;infeasible" in chart.legend.text() and "●</span>&nbsp;feasible" in chart.legend.text()


def test_a_large_desktop_font_enlarges_the_sizes_the_style_sheet_fixes(qapp, qtbot, tmp_path):
    """At a 14 pt application font the card's title stayed 11 pt, under 14 pt text, and the chart
    legends 8 pt."""
    from PySide6.QtGui import QFont

    from workbench.gui.main_window import MainWindow
    from workbench.gui.settings_store import JsonSettings

    before = QFont(qapp.font())
    large = QFont(before)
    large.setPointSizeF(14.0)
    qapp.setFont(large)
    try:
        window = MainWindow(interactive=False, settings=JsonSettings(str(tmp_path / "settings.json")))
        qtbot.addWidget(window)
        window.resize(1440, 900)
        window.show()
        QApplication.processEvents()
        card = window.best_card
        assert card.title.font().pointSizeF() > card.body.font().pointSizeF() >= 14.0
        legends = [chart.legend for chart in window.built_charts.values() if hasattr(chart, "legend")]
        assert legends and all("font-size: 12.4pt" in legend.styleSheet() for legend in legends)
    finally:
        qapp.setFont(before)


def test_failed_and_infeasible_rows_are_drawn_in_colours_readable_on_white(window):
    """Failed rows were orange at 3.9:1 on white and infeasible ones grey at 4.4:1 (WCAG AA: 4.5)."""
    from workbench.gui.text import MUTED_TEXT, WARNING_TEXT

    window.open_session(str(SESSION))
    latencies = sorted(t.metric("latency_ms") for t in window.model.trials if t.ok)
    window.model.set_constraints(max_latency_ms=latencies[len(latencies) // 2])  # half of them infeasible
    model = window.results.table_model
    seen = set()
    for row in range(model.rowCount()):
        brush = model.data(model.index(row, 0), Qt.ItemDataRole.ForegroundRole)
        if brush is not None:
            seen.add(brush.color().name())
    assert seen, "no row of the session is drawn in a colour of its own"
    for name in seen | {WARNING_TEXT, MUTED_TEXT}:
        colour = QColor(name)
        lum = float(_luminance(np.array([colour.red(), colour.green(), colour.blue()])))
        assert 1.05 / (lum + 0.05) >= 4.5, name


def test_the_run_menu_starts_pauses_and_stops_by_key(window, qtbot, monkeypatch):
    """Start, Pause and Stop were reachable only by tabbing to them, ten stops into the window."""
    from PySide6.QtTest import QTest

    toolbar = window.toolbar
    toolbar.apply({"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 100000,
                   "options": {"compile": "estimate"}})
    QTest.keyClick(window, Qt.Key.Key_F5)
    qtbot.waitUntil(lambda: window.running, timeout=10_000)
    QTest.keyClick(window, Qt.Key.Key_F6)
    assert toolbar.pause.text() == "Resume" and toolbar.pause.toolTip().startswith("resume")
    QTest.keyClick(window, Qt.Key.Key_F6)
    assert toolbar.pause.text() == "Pause" and toolbar.pause.toolTip().startswith("pause")
    with qtbot.waitSignal(window.run_done, timeout=30_000):
        QTest.keyClick(window, Qt.Key.Key_F5, Qt.KeyboardModifier.ShiftModifier)
        # while the stop winds down (its end not yet shown): said so (it said "no run is going")
        assert window.running
        QTest.keyClick(window, Qt.Key.Key_F6)
        assert window.statusBar().currentMessage() == "Pause / Resume: the run is stopping"
    assert not window.running
    assert not window.actions_by_name["run_pause"].autoRepeat()  # a held F6 paused and resumed over and over
    QTest.keyClick(window, Qt.Key.Key_F6)  # nothing to pause: said, not silently ignored
    assert window.statusBar().currentMessage() == "Pause / Resume: no run is going"


def test_the_results_are_sorted_from_the_view_menu(window):
    """Sorting needed a click on a header, which takes no focus."""
    from PySide6.QtWidgets import QMenu

    window.open_session(str(SESSION))
    columns = window.results.columns
    menu = QMenu()
    columns.fill_sort(menu)
    entries = {action.text(): action for action in menu.actions()}
    entries["latency (ms)"].trigger()
    view, model = window.results.view, window.results.view.model()
    column = window.results.table_model.column_of("metric:latency_ms")

    def latencies() -> list[float]:
        return [float(model.data(model.index(row, column))) for row in range(model.rowCount())]

    assert latencies() == sorted(latencies())
    columns.fill_sort(menu)
    again = {action.text(): action for action in menu.actions()}
    assert again["latency (ms) (ascending)"].isChecked()
    again["latency (ms) (ascending)"].trigger()  # chosen again: the other way round
    assert latencies() == sorted(latencies(), reverse=True)
    assert view.horizontalHeader().sortIndicatorOrder() == Qt.SortOrder.DescendingOrder


def test_the_portability_notes_grow_with_the_zoom(window, qtbot):
    """A style sheet of their own kept them at 8 pt in presentation mode and beside a large font."""
    window.bottom_tabs.setCurrentWidget(window.portability)
    QApplication.processEvents()
    notes = window.portability.notes
    before = notes.font().pointSizeF()
    window.zoom.set_factor(1.5, remember=False)
    QApplication.processEvents()
    assert notes.font().pointSizeF() == pytest.approx(before * 1.5, rel=0.05)


def _first_control(page):
    """The first Tab stop of ``page`` in the window's Tab order (None: it has none on show)."""
    from workbench.gui.keyboard import tab_order

    for candidate in tab_order(page.window()):
        if ((candidate is page or page.isAncestorOf(candidate)) and candidate.isVisible() and candidate.isEnabled()
                and candidate.focusPolicy() & Qt.FocusPolicy.TabFocus and candidate.focusProxy() is None):
            return candidate
    return None


def test_ctrl_tab_past_a_page_without_controls_still_lands_on_the_next_pages_first_control(window, qtbot):
    """After a page with nothing to focus (a chart) the focus stayed on the tab row for every later
    tab, Compare's and Results' controls included; and Ctrl+Shift+Tab onto a built page without a
    control of its own put it on the page widget, which has no name to say."""
    from PySide6.QtTest import QTest

    tabs = _focused_on_the_trials(window, qtbot)
    for key in (Qt.Key.Key_Tab, Qt.Key.Key_Backtab):
        for _ in range(2 * tabs.count()):  # twice round: the second time every page is built
            modifiers = Qt.KeyboardModifier.ControlModifier | (
                Qt.KeyboardModifier.ShiftModifier if key == Qt.Key.Key_Backtab else Qt.KeyboardModifier.NoModifier)
            QTest.keyClick(QApplication.focusWidget(), key, modifiers)
            page, focus = tabs.currentWidget(), QApplication.focusWidget()
            first = _first_control(page)
            name = tabs.tabText(tabs.currentIndex())
            if first is not None:
                assert page.isAncestorOf(focus) and focus.focusPolicy() & Qt.FocusPolicy.TabFocus, (name, focus)
            else:
                assert focus is tabs.tabBar(), (name, focus)


def test_the_search_space_tab_names_its_tab_stops_and_tab_leaves_the_restrictions(window, qtbot):
    """The slot tree, the value field and the restrictions were Tab stops without names (a screen
    reader said "tree", "edit"), and Tab in the restrictions typed a tab into the restriction."""
    from PySide6.QtTest import QTest

    panel = window.slots_panel
    for widget in (panel.tree, panel.add_edit, panel.restrictions):
        assert widget.accessibleName(), widget
    window.show()
    qtbot.waitExposed(window)
    tabs = panel.parentWidget()
    while tabs is not None and not isinstance(tabs, QTabWidget):  # the tabs it is a page of
        tabs = tabs.parentWidget()
    assert tabs is not None
    tabs.setCurrentIndex(next(i for i in range(tabs.count()) if tabs.widget(i).isAncestorOf(panel) or tabs.widget(i) is panel))
    before = panel.restrictions.toPlainText()
    panel.restrictions.setFocus()
    qtbot.waitUntil(panel.restrictions.hasFocus, timeout=2000)
    QTest.keyClick(panel.restrictions, Qt.Key.Key_Tab)
    assert panel.restrictions.toPlainText() == before and not panel.restrictions.hasFocus()


@pytest.mark.parametrize("tab", ["Importance", "Compare"])
def test_tab_from_the_tab_row_goes_into_a_page_built_when_first_shown(window, qtbot, tab):
    """A page built when first shown joined the end of the Tab order: Tab from the tab row visited
    the source view beside the tabs before the page just opened, then the page, then the tool bar."""
    from PySide6.QtTest import QTest

    window.open_session(str(SESSION))
    window.show()
    qtbot.waitExposed(window)
    tabs = window.bottom_tabs
    tabs.setCurrentIndex(next(i for i in range(tabs.count()) if tabs.tabText(i) == tab))
    QApplication.processEvents()
    page = tabs.currentWidget()
    bar = tabs.tabBar()
    bar.setFocus()
    qtbot.waitUntil(bar.hasFocus, timeout=2000)
    QTest.keyClick(bar, Qt.Key.Key_Tab)
    focused = QApplication.focusWidget()
    assert focused is not None and page.isAncestorOf(focused), (focused, focused.accessibleName() if focused else None)
