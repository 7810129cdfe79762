"""File > Import Kernel Tuner cache sets the run controls as opening the same import saved does, so
Start replays the recording; the recording dialogs show gzipped caches."""

from __future__ import annotations

import fnmatch
import gzip
import re
from pathlib import Path

from workbench.core.domain.session import save_session
from workbench.core.io.interop import import_kt_cache

KT_CACHE = Path(__file__).parents[1] / "fixtures" / "kt_cache_small.json"
#: What identifies the run, as Start reads it from the toolbar.
CONTROLS = ("kernel", "backend", "replay", "problem", "gpu_model", "device", "budget", "sizes", "delay_s")


def _controls(window) -> dict:
    request = window.toolbar.request()
    return {key: request.get(key) for key in CONTROLS}


def test_an_imported_cache_sets_the_controls_opening_it_saved_sets_and_start_replays_it(window, qtbot, tmp_path):
    cache = tmp_path / "cache.json.gz"
    cache.write_bytes(gzip.compress(KT_CACHE.read_bytes()))
    assert window.toolbar.backend.currentData() != "replay"  # a fresh window: a template on a backend
    window.import_kt_cache(str(cache))
    toolbar = window.toolbar
    imported = _controls(window)
    assert toolbar.backend.currentData() == "replay" and toolbar.replay.text() == str(cache)
    assert not toolbar.kernel.isEnabled()  # the recording's kernel, not a template to pick
    session = window.model.session
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        toolbar.start.click()
    assert "Cannot start" not in window.statusBar().currentMessage()
    assert window.model.session is session  # the import continued (into an autosave), not replaced
    assert window.path is None and window.autosave_path is not None and window.autosave_path.exists()
    saved = tmp_path / "saved.json"  # what `import-kt` writes: opened, it shows the same controls
    save_session(import_kt_cache(cache), saved)
    window.open_session(saved)
    assert _controls(window) == imported


def test_the_recording_dialogs_list_gzipped_caches(window, monkeypatch):
    from PySide6.QtWidgets import QFileDialog

    filters: list[str] = []

    def dialog(_parent, _title, _folder, file_filter, *rest):
        filters.append(file_filter)
        return "", ""

    monkeypatch.setattr(QFileDialog, "getOpenFileName", dialog)
    window._on_import_kt()
    window.toolbar._on_browse()
    assert len(filters) == 2
    for file_filter in filters:
        first = file_filter.split(";;")[0]
        patterns = re.search(r"\((.*)\)", first).group(1).split()
        for name in ("cache.json", "convolution_A4000.json.gz"):
            assert any(fnmatch.fnmatch(name, pattern) for pattern in patterns), (name, first)


def test_a_recording_chosen_for_a_replay_is_read_ahead_of_start(window, qtbot, tmp_path, monkeypatch):
    """Start read the recording on the GUI thread: an 18,000-config cache held the window 2 s. The
    window reads it on a thread as soon as it is chosen; Start then finds it read."""
    import threading

    from workbench.backends import replay

    cache = tmp_path / "cache.json"
    cache.write_bytes(KT_CACHE.read_bytes())
    threads: list[str] = []
    real = replay.load_recording

    def watched(path):
        threads.append(threading.current_thread().name)
        return real(path)

    monkeypatch.setattr(replay, "load_recording", watched)
    window.toolbar.apply({"replay": str(cache), "budget": 3})
    qtbot.waitUntil(lambda: threads == ["read-recording"], timeout=30_000)
    qtbot.waitUntil(lambda: replay._stamp(str(cache)) in replay._RECENT, timeout=30_000)
    window.toolbar.replay.setText(str(tmp_path / "missing.json"))  # typed, not there: nothing read, Start says it
    window.toolbar.replay.editingFinished.emit()
    assert threads == ["read-recording"]
