"""GUI tests run offscreen, with settings and autosaves in a temp folder, never the user's."""

import gc
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest


@pytest.fixture(autouse=True)
def _styled_as_the_application_where_marked(request: pytest.FixtureRequest, qapp) -> None:
    """Tests marked ``app_style_sheet`` (the files that test sizes, fonts and layout) run under the
    application's style sheet, as ``workbench.gui.app.application`` sets it: under a style sheet
    Qt sizes fonts in another order (a parent's font reaches most children only through the
    sheet), and a results table tested without it kept the previous zoom's column widths unseen.
    The others run without it: Qt's style-sheet style made every window test slower (the GUI
    tests took 111 s instead of 84 s on two workers, all of them under it), for what they do not
    test; the three marked files cost no measurable time (116 s against 118 s without any)."""
    from workbench.gui.app import STYLE_SHEET

    wanted = STYLE_SHEET.read_text() if request.node.get_closest_marker("app_style_sheet") else ""
    if qapp.styleSheet() != wanted:
        qapp.setStyleSheet(wanted)


@pytest.fixture(autouse=True)
def _inline_unless_marked(request: pytest.FixtureRequest) -> None:
    """Window tests test the window: their runs evaluate candidates in this process (see the
    ``inline_runs`` fixture) unless marked ``worker_processes`` (isolation is what they test)."""
    if request.node.get_closest_marker("worker_processes") is None:
        request.getfixturevalue("inline_runs")


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    """Each test gets its own autosave folder, and Qt's own settings (file dialogs') a folder of its own."""
    from PySide6.QtCore import QSettings

    monkeypatch.setenv("KERNEL_WORKBENCH_AUTOSAVE_DIR", str(tmp_path / "autosave"))
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp_path / "settings"))
    yield


@pytest.fixture(autouse=True)
def _garbage_collected_in_the_gui_thread(qapp):
    """Cyclic garbage is collected in the GUI thread only during a window test, as in the
    application (``workbench.gui.app``): a collection that starts in the engine thread can delete a
    widget's wrapper there, and Shiboken's deletion then waits for the GUI thread while the GUI
    thread waits for a Qt lock the engine thread holds (a hang seen once in a suite run). Between
    tests no engine thread runs, so the interpreter's own collection is back on then."""
    from pyqtgraph.util.garbage_collector import GarbageCollector

    collector = GarbageCollector(interval=0.5)
    try:
        yield collector
    finally:
        collector.timer.stop()
        gc.enable()


@pytest.fixture
def window(qtbot, tmp_path):
    from workbench.gui.settings_store import JsonSettings

    from workbench.gui.main_window import MainWindow

    settings = JsonSettings(str(tmp_path / "settings.ini"))
    win = MainWindow(interactive=False, settings=settings)
    qtbot.addWidget(win)
    win.resize(1440, 900)
    win.show()
    yield win
    if win.running:
        win.stop_run()
        win.wait_for_run(30)


#: A python benchmark reporting metrics of its own; ``late_score`` only from the seventh config on
#: (a metric first reported mid-run).
OWN_METRICS_BENCH = '''"""Reports metrics of its own; ``late_score`` only from the seventh config on."""
SPACE = {"i": list(range(12))}


def measure(config):
    i = config["i"]
    out = {"latency_ms": 1.0 + i / 10, "merit": float(i % 5), "energy_j": 0.5 + i / 100, "tflops": 1.0 + i}
    if i >= 6:
        out["late_score"] = float(i)
    return out
'''


@pytest.fixture
def own_metrics_window(window, qtbot, tmp_path):
    """The window after a 12-evaluation run of :data:`OWN_METRICS_BENCH`."""
    bench = tmp_path / "own_metrics_bench.py"
    bench.write_text(OWN_METRICS_BENCH)
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({"kernel": str(bench), "backend": "python", "strategy": "grid", "budget": 12})
    assert len(window.model.trials) == 12
    return window
