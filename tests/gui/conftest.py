"""GUI tests run offscreen, with settings and autosaves in a temp folder, never the user's."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest


@pytest.fixture(autouse=True)
def _inline_unless_marked(request: pytest.FixtureRequest) -> None:
    """Window tests test the window: their runs evaluate candidates in this process (see the
    ``inline_runs`` fixture) unless marked ``worker_processes`` (isolation is what they test)."""
    if request.node.get_closest_marker("worker_processes") is None:
        request.getfixturevalue("inline_runs")


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    """Each test gets its own autosave folder and QSettings file."""
    from PySide6.QtCore import QSettings

    monkeypatch.setenv("KERNEL_WORKBENCH_AUTOSAVE_DIR", str(tmp_path / "autosave"))
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp_path / "settings"))
    yield


@pytest.fixture
def window(qtbot, tmp_path):
    from PySide6.QtCore import QSettings

    from workbench.gui.main_window import MainWindow

    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    win = MainWindow(interactive=False, settings=settings)
    qtbot.addWidget(win)
    win.resize(1440, 900)
    win.show()
    yield win
    if win.running:
        win.stop_run()
        win.wait_for_run(30)
