"""Open, Open recent and Import read the file off the GUI thread: the window answers meanwhile,
refuses what would replace its session until the file is shown, and a read given up is dropped."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest
from PySide6.QtWidgets import QFileDialog, QProgressDialog, QPushButton

import workbench.core.domain.session as session_module
from workbench.core.errors import WorkbenchError
from workbench.gui import file_reading

FIXTURES = Path(__file__).parents[1] / "fixtures"
GOLDEN = FIXTURES / "session_golden.json"
KT_CACHE = FIXTURES / "kt_cache_small.json"


@pytest.fixture
def held_reads(monkeypatch):
    """``load_session`` held until the test lets it go, so the window is seen while a file is read."""
    release = threading.Event()
    threads: list[str] = []
    real = session_module.load_session

    def held(path, *args, **kwargs):
        threads.append(threading.current_thread().name)
        assert release.wait(30)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(session_module, "load_session", held)
    yield release, threads
    release.set()


def _read_and_delivered(qtbot) -> None:
    """Wait until the reading thread has ended and its result has reached the GUI thread (a fixed
    wait let a slow read arrive after the test's look, which then saw nothing change trivially)."""
    qtbot.waitUntil(lambda: not any(t.name == "read-session" for t in threading.enumerate()), timeout=30_000)
    qtbot.wait(50)  # the queued result's delivery


def _choose(monkeypatch, path: Path) -> None:
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(path), ""))


def test_open_reads_on_a_thread_and_the_window_refuses_to_replace_its_session_meanwhile(
        window, qtbot, tmp_path, monkeypatch, held_reads):
    release, threads = held_reads
    path = tmp_path / "golden.json"
    shutil.copy(GOLDEN, path)
    _choose(monkeypatch, path)
    window._on_open()
    assert window.opening == path and window.model.session is None  # returned before the file was read
    qtbot.waitUntil(lambda: threads == ["read-session"])
    for attempt, what in ((window.new_session, "New session"), (window._on_open, "Open"),
                          (window._on_import_kt, "Import")):
        window.statusBar().clearMessage()
        attempt()
        assert window.statusBar().currentMessage() == f"{what}: golden.json is being opened; wait for it or cancel it"
    with pytest.raises(WorkbenchError, match="golden.json is being opened"):
        window.start_run({"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 3})
    release.set()
    qtbot.waitUntil(lambda: window.opening is None, timeout=30_000)
    assert window.path == path and window.model.n == len(session_module.load_session(path).trials) > 0
    assert window.recent_files()[0] == str(path.resolve())


def test_a_read_given_up_is_dropped_and_the_window_keeps_its_session(window, qtbot, tmp_path, monkeypatch, held_reads):
    release, _threads = held_reads
    first, second = _showing_first(window, tmp_path, release)
    shown = window.model.session
    monkeypatch.setattr(file_reading, "DIALOG_AFTER_MS", 0)
    window.interactive = True  # a person watches: the busy dialog appears, and its Cancel gives up
    window.model.dirty = False
    _choose(monkeypatch, second)
    window._on_open()
    qtbot.waitUntil(lambda: window.findChild(QProgressDialog) is not None
                    and window.findChild(QProgressDialog).isVisible())
    dialog = window.findChild(QProgressDialog)
    assert "second.json" in dialog.labelText()
    button = dialog.findChild(QPushButton)
    assert button.text() == "Cancel"
    button.click()
    assert window.opening is None
    release.set()
    _read_and_delivered(qtbot)  # the result has arrived, and was dropped
    assert window.model.session is shown and window.path == first
    assert str(second.resolve()) not in window.recent_files()


def test_a_file_that_cannot_be_read_is_one_line_and_switches_nothing(window, qtbot, tmp_path, monkeypatch):
    first, broken = tmp_path / "first.json", tmp_path / "broken.json"
    shutil.copy(GOLDEN, first)
    broken.write_text('{"format": "kernel-workbench-session", "trials": [')
    window.open_session(first)
    shown = window.model.session
    window._add_recent(str(broken.resolve()))
    window.recent_menu.actions()[0].trigger()
    qtbot.waitUntil(lambda: window.opening is None, timeout=30_000)
    message = window.statusBar().currentMessage()
    assert message.startswith("Cannot open: ") and "broken.json" in message and "\n" not in message
    assert window.model.session is shown and window.path == first


def test_import_reads_the_cache_on_a_thread_and_shows_it_unsaved(window, qtbot, tmp_path, monkeypatch):
    from workbench.core.io import interop

    threads: list[str] = []
    real = interop.import_kt_cache

    def watched(*args, **kwargs):
        threads.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(interop, "import_kt_cache", watched)
    _choose(monkeypatch, KT_CACHE)
    window._on_import_kt()
    qtbot.waitUntil(lambda: window.opening is None, timeout=30_000)
    # the import's own read, on its thread; the replay's read-ahead of the same file (the controls
    # now name it as the recording) may follow on a thread of its own; none on the GUI thread
    assert threads[0] == "read-session" and set(threads) <= {"read-session", "read-recording"}
    assert window.model.n > 0 and window.path is None and window.model.dirty
    assert window.toolbar.backend.currentData() == "replay"


def _showing_first(window, tmp_path: Path, release: threading.Event) -> tuple[Path, Path]:
    """first.json and second.json, the window showing the first (opened at once); reads held again."""
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    shutil.copy(GOLDEN, first)
    shutil.copy(GOLDEN, second)
    release.set()
    window.open_session(first)
    release.clear()
    return first, second


def _showing_first_reading_second(window, tmp_path: Path, release: threading.Event) -> tuple[Path, Path]:
    """The window showing first.json while second.json is read, held."""
    first, second = _showing_first(window, tmp_path, release)
    window.open_session_in_background(second)
    return first, second


def test_every_way_to_start_a_run_waits_for_the_file_being_read(window, qtbot, tmp_path, held_reads):
    """Re-measure aborted and the size view's Measure missing start runs too: a file shown under a
    run would hand the run's trials to another session."""
    release, _threads = held_reads
    first, second = _showing_first_reading_second(window, tmp_path, release)
    with pytest.raises(WorkbenchError, match="second.json is being opened"):
        window.remeasure_aborted()
    window.measure_cells([({"n": 8}, window.model.session.trials[0].config)])
    assert window.statusBar().currentMessage() == ("measure missing cells: second.json is being opened; "
                                                   "wait for it or cancel it")
    assert not window.running
    release.set()
    qtbot.waitUntil(lambda: window.opening is None, timeout=30_000)
    assert window.path == second


def test_a_file_read_while_a_dialog_is_open_is_shown_when_it_closes(window, qtbot, tmp_path, held_reads):
    """A dialog's own event loop (Save as, a question) delivers the read: the session must not
    change under what the dialog was opened about (Save as wrote the file just opened)."""
    from PySide6.QtWidgets import QDialog

    release, _threads = held_reads
    first, second = _showing_first_reading_second(window, tmp_path, release)
    dialog = QDialog(window)
    dialog.setModal(True)
    dialog.show()
    release.set()
    _read_and_delivered(qtbot)  # read, and held back
    assert window.path == first and window.opening == second
    dialog.close()
    qtbot.waitUntil(lambda: window.opening is None, timeout=30_000)
    assert window.path == second


def test_changes_made_while_the_file_is_read_are_asked_about_before_it_replaces_them(
        window, qtbot, tmp_path, held_reads, monkeypatch):
    release, _threads = held_reads
    asked: list[bool] = []
    monkeypatch.setattr(window, "_maybe_save", lambda: asked.append(True) and False)  # the person cancels
    first, second = _showing_first_reading_second(window, tmp_path, release)
    assert not window.model.dirty
    window.model.set_constraints(max_latency_ms=0.5)  # an objective set meanwhile: unsaved
    assert window.model.dirty
    release.set()
    qtbot.waitUntil(lambda: window.opening is None, timeout=30_000)
    assert asked == [True] and window.path == first and window.model.constraints.max_latency_ms == 0.5


def test_a_window_closed_while_a_file_is_read_does_not_show_it(window, qtbot, tmp_path, held_reads):
    release, _threads = held_reads
    first, second = _showing_first_reading_second(window, tmp_path, release)
    window.close()
    assert window.opening is None
    release.set()
    _read_and_delivered(qtbot)
    assert window.path == first and str(second.resolve()) not in window.recent_files()
