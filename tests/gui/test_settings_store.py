"""The window's settings are a JSON file read once (workbench.gui.settings_store): no settings file,
the window's or Qt's own, can run code when the window starts or a file dialog opens."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

from PySide6.QtCore import QByteArray

from workbench.gui.settings_store import FORMAT, JsonSettings

ROOT = Path(__file__).resolve().parents[2]


class _Payload:
    """Pickles to a call that leaves a marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self) -> tuple[object, tuple[str, ...]]:
        return (os.system, (f"touch {self.marker}",))


def _pickled_variant(marker: Path) -> str:
    """How PySide6 stores a Python object in an INI settings file, every byte as Qt's escape: Qt
    unpickles it as soon as it first reads the file."""
    data = pickle.dumps(_Payload(marker))
    name = b"PySide::PyObjectWrapper\0"
    blob = b"\0\0\0\x7f" + len(name).to_bytes(4, "big") + name + len(data).to_bytes(4, "big") + data
    return "@Variant(" + "".join(f"\\x{b:02x}" for b in blob) + ")"


def test_values_round_trip_and_only_the_shapes_the_window_writes_are_read(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    store = JsonSettings(path)
    store.setValue("geometry", QByteArray(b"\x01\x02\xffgeometry"))
    store.setValue("recent", ["/a.json", "/b.json"])
    store.setValue("view/zoom", 1.5)
    store.setValue("kernel", "sgemm")
    again = JsonSettings(path)
    assert again.note == "" and again.value("geometry") == QByteArray(b"\x01\x02\xffgeometry")
    assert again.value("recent") == ["/a.json", "/b.json"] and again.value("view/zoom") == 1.5
    again.remove("kernel")
    assert JsonSettings(path).value("kernel", "none") == "none"
    # a hand-edited file: values of other shapes are dropped, not handed to the window
    document = json.loads(path.read_text())
    document["values"].update({"nested": {"a": [1]}, "mixed": ["x", 1], "bytes": {"base64": "!!"},
                               "long": ["x"] * 5000})
    text = json.dumps(document).replace('"values": {', '"values": {"huge": ' + "9" * 400 + ', "inf": 1e999, ')
    assert "1e999" in text  # numbers beyond any float, which JSON allows
    path.write_text(text)
    edited = JsonSettings(path)
    assert edited.value("nested") is None and edited.value("mixed") is None and edited.value("bytes") is None
    assert edited.value("long") is None and edited.value("huge") is None and edited.value("inf") is None
    assert edited.value("recent") == ["/a.json", "/b.json"]


def test_an_unreadable_file_is_set_aside_never_overwritten_and_the_window_says_so(tmp_path, monkeypatch, qtbot):
    from workbench.gui.main_window import MainWindow

    path = tmp_path / "settings.json"
    for text, kept in (("{not json", "settings.json.refused"), ('{"format": "other"}', "settings.json.2.refused")):
        path.write_text(text)
        monkeypatch.setenv("KERNEL_WORKBENCH_CONFIG_DIR", str(tmp_path))
        window = MainWindow(interactive=False)
        qtbot.addWidget(window)
        assert "not read" in window.statusBar().currentMessage() and kept in window.statusBar().currentMessage()
        assert (tmp_path / kept).read_text() == text  # kept as it was
    os.mkfifo(tmp_path / "fifo.json")  # a FIFO is refused unread, never waited on
    assert "not a regular file" in JsonSettings(tmp_path / "fifo.json").note


def test_a_planted_qt_settings_file_is_never_read_by_the_window(tmp_path, monkeypatch, qtbot) -> None:
    """PySide6 unpickled a Python object in the window's QSettings file as soon as it was read:
    planted there, it ran code at every start. The window's settings are JSON; an INI file of the
    same folder is not read."""
    from workbench.gui.main_window import MainWindow

    marker = tmp_path / "RAN"
    (tmp_path / "settings.ini").write_text(f"[view]\nzoom={_pickled_variant(marker)}\n")
    (tmp_path / "settings.json").write_text(json.dumps(
        {"format": FORMAT, "version": 1, "values": {"view/zoom": _pickled_variant(marker)}}))  # a string here
    monkeypatch.setenv("KERNEL_WORKBENCH_CONFIG_DIR", str(tmp_path))
    window = MainWindow(interactive=False)
    qtbot.addWidget(window)
    window.save_settings()
    assert not marker.exists() and window.zoom.factor == 1.0


def test_qts_own_settings_of_file_dialogs_are_never_read_from_the_persons_folders(tmp_path: Path) -> None:
    """Every file dialog read Qt's QtProject.conf from the person's configuration folder (or
    /etc/xdg), where PySide6 unpickles a planted object: the first Open ran code."""
    marker = tmp_path / "RAN"
    xdg = tmp_path / "xdg"
    xdg.mkdir()
    (xdg / "QtProject.conf").write_text(f"[FileDialog]\nhistory={_pickled_variant(marker)}\nviewMode=Detail\n")
    script = ("from workbench.gui.app import application\nfrom PySide6.QtWidgets import QFileDialog\n"
              "app = application()\nQFileDialog(None, 'Open session', '/tmp')\n")
    env = {**os.environ, "XDG_CONFIG_HOME": str(xdg), "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert not marker.exists()


def test_no_qt_settings_file_can_unpickle_once_the_application_is_made(tmp_path: Path) -> None:
    """Qt reads files of its own through QSettings (an icon theme's index.theme in ~/.icons, KDE's
    kdeglobals, QtProject.conf), and PySide6 unpickled a planted object in any of them. The
    application disarms that for the process (PySide6 keeps the unpickler it first looked up);
    this fails if a PySide6 version stops keeping it. The first run shows the payload does run
    where nothing disarms it."""
    marker = tmp_path / "RAN"
    planted = tmp_path / "index.theme"
    planted.write_text(f"[Icon Theme]\nName={_pickled_variant(marker)}\n")
    read = (f"from PySide6.QtCore import QSettings\n"
            f"QSettings({str(planted)!r}, QSettings.Format.IniFormat).value('Icon Theme/Name')\n")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    for prelude, runs in (("", True), ("from workbench.gui.app import application\napplication()\n", False)):
        script = prelude + read + "import pickle\nassert pickle.loads(pickle.dumps([1])) == [1]\n"
        done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stderr
        assert marker.exists() is runs
        marker.unlink(missing_ok=True)


def test_qt_settings_folders_of_processes_that_are_gone_are_removed(tmp_path, monkeypatch):
    """Each process's folder for Qt's own settings was removed at its exit only: a killed window
    (SIGKILL, a crash) left one in /tmp for good."""
    import tempfile

    from workbench.gui.app import QT_FOLDER_PREFIX, remove_orphaned_qt_folders

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()
    dead = tmp_path / f"{QT_FOLDER_PREFIX}{gone}-abc"
    alive = tmp_path / f"{QT_FOLDER_PREFIX}{os.getpid()}-def"
    unnamed = tmp_path / f"{QT_FOLDER_PREFIX}ghi"  # an older version's: no pid to tell by
    for folder in (dead, alive, unnamed):
        (folder / "QtProject").mkdir(parents=True)
    remove_orphaned_qt_folders()
    assert not dead.exists() and alive.exists() and unnamed.exists()


def test_a_stored_pane_layout_out_of_range_is_refused_before_qt_sees_it(tmp_path: Path, qtbot) -> None:
    """Qt restores a splitter from its saved bytes unchecked: a settings file giving a handle
    100,000 pixels wide crashed the window at every start (SIGSEGV). The window checks the bytes
    and keeps its default layout, saying so; it runs in a child process here, so that a crash
    fails this test instead of ending the suite."""
    from PySide6.QtWidgets import QLabel, QSplitter

    from workbench.gui.layout_state import splitter_state_ok

    splitter = QSplitter()
    for _ in range(3):
        splitter.addWidget(QLabel("pane"))
    qtbot.addWidget(splitter)
    saved = bytes(splitter.saveState().data())
    assert splitter_state_ok(saved, 3) and not splitter_state_ok(saved, 2) and not splitter_state_ok(saved[:20], 3)
    crashing = bytes.fromhex("000000ff000000010000000300000bb80000070800000bb801000186a0010000000100")
    assert not splitter_state_ok(crashing, 3)
    assert not splitter_state_ok(saved.replace(b"\x00\x00\x00\x03", b"\x7f\xff\xff\xff", 1), 3)

    import base64

    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"format": FORMAT, "version": 1, "values": {
        "splitter/charts-2": {"base64": base64.b64encode(crashing).decode()},
        "state": {"base64": base64.b64encode(b"\x00\x00\x00\xff" + b"\x7f" * 64).decode()}}}))
    script = ("import os, sys\n"
              "from workbench.gui.app import application\n"
              "from workbench.gui.main_window import MainWindow\n"
              "from workbench.gui.settings_store import JsonSettings\n"
              "app = application()\n"
              f"window = MainWindow(interactive=False, settings=JsonSettings({str(settings)!r}))\n"
              "window.show(); app.processEvents()\n"
              "print(window.statusBar().currentMessage()); sys.stdout.flush(); os._exit(0)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "QT_QPA_PLATFORM": "offscreen"}, cwd=ROOT, check=False)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert "the stored sizes of the charts panes were not valid; the default layout is used" in done.stdout
