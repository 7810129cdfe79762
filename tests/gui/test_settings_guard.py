"""A settings file holding a pickled Python object is set aside before Qt reads it: opening the
window never runs code a settings file carries (workbench.gui.settings_guard)."""

from __future__ import annotations

import os
import pickle
import string
from pathlib import Path

from PySide6.QtCore import QSettings

from workbench.gui.settings_guard import guarded_settings, qt_unescaped


class _Payload:
    """Pickles to a call that leaves a marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, ...]]:
        return (os.system, (f"touch {self.marker}",))


def _planted(path: Path, marker: Path, escape_all: bool = False) -> None:
    """A settings file whose zoom is a pickled :class:`_Payload`, as PySide6 stores a Python object
    (a ``PySide::PyObjectWrapper`` variant), readable by Qt with every byte written as an escape
    (``escape_all``: the type's name appears nowhere in the text) or only the unprintable ones."""
    data = pickle.dumps(_Payload(marker))
    name = b"PySide::PyObjectWrapper\0"
    blob = b"\0\0\0\x7f" + len(name).to_bytes(4, "big") + name + len(data).to_bytes(4, "big") + data
    parts: list[str] = []
    for b in blob:  # Qt reads hex digits after \x as long as they come: a literal one must not follow it
        literal = not escape_all and b < 128 and (chr(b).isalnum() or chr(b) == ":")
        if literal and parts and parts[-1].startswith("\\x") and chr(b) in string.hexdigits:
            literal = False
        parts.append(chr(b) if literal else f"\\x{b:02x}")
    text = "".join(parts)
    path.write_text(f"[General]\nrecent=/tmp/a.json\n\n[view]\nzoom=@Variant({text})\n")


def test_qt_escapes_are_undone_as_qts_reader_does() -> None:
    assert qt_unescaped(r"\x50ySide::\x50y\117bjectWrapper") == "PySide::PyObjectWrapper"
    assert qt_unescaped(r"a\tb\\c\"d") == 'a\tb\\c"d'


def test_a_pickled_object_is_set_aside_unread_and_a_clean_file_kept(tmp_path: Path) -> None:
    marker = tmp_path / "RAN"
    _planted(tmp_path / "settings.ini", marker)
    _planted(tmp_path / "escaped.ini", marker, escape_all=True)  # as a crafted file could spell it
    assert "PyObjectWrapper" not in (tmp_path / "escaped.ini").read_text()
    for name in ("settings.ini", "escaped.ini"):
        settings, note = guarded_settings(tmp_path / name)
        assert note is not None and "holds a Python object" in note and f"{name}.refused" in note
        assert settings.allKeys() == [] and settings.value("view/zoom") is None
        assert not marker.exists()
        assert (tmp_path / f"{name}.refused").is_file() and not (tmp_path / name).exists()  # kept, not deleted
    # what the guard prevents: Qt itself runs the payload as it reads the file
    (tmp_path / "escaped.ini.refused").rename(tmp_path / "raw.ini")
    assert QSettings(str(tmp_path / "raw.ini"), QSettings.Format.IniFormat).allKeys() and marker.exists()
    marker.unlink()
    clean = tmp_path / "clean.ini"
    writer = QSettings(str(clean), QSettings.Format.IniFormat)
    writer.setValue("view/zoom", 1.5)
    writer.setValue("recent", ["/tmp/a.json", "/tmp/b.json"])
    writer.sync()
    settings, note = guarded_settings(clean)
    assert note is None and float(settings.value("view/zoom")) == 1.5 and clean.is_file()


def test_the_window_starts_on_default_settings_and_says_why(tmp_path: Path, monkeypatch, qtbot) -> None:
    from workbench.gui.main_window import MainWindow

    marker = tmp_path / "RAN"
    _planted(tmp_path / "settings.ini", marker)
    monkeypatch.setenv("KERNEL_WORKBENCH_CONFIG_DIR", str(tmp_path))
    window = MainWindow(interactive=False)
    qtbot.addWidget(window)
    assert not marker.exists()
    assert "holds a Python object" in window.statusBar().currentMessage()
    assert (tmp_path / "settings.ini.refused").is_file()
