"""Render the screenshots of docs/own-kernel.md offscreen: the editor with the SAXPY example checked,
the same draft with a compile error and a bad restriction, and the main window after 20 simulated
evaluations. Settings, autosaves and templates go to a temporary folder, never the user's.

    QT_QPA_PLATFORM=offscreen .venv/bin/python scripts/own_kernel_screenshots.py docs/images
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from PySide6.QtCore import QEventLoop, QSettings, Qt, QTimer
from PySide6.QtWidgets import QApplication

from screenshot_sandbox import SANDBOX

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "saxpy"
WIDTH = 960  # keep the images small


def wait(signal, timeout_ms: int = 120_000) -> None:
    loop = QEventLoop()
    signal.connect(loop.quit)
    QTimer.singleShot(timeout_ms, loop.quit)
    loop.exec()


def grab(widget, path: Path) -> None:
    QApplication.processEvents()
    image = widget.grab().toImage().scaledToWidth(WIDTH, Qt.TransformationMode.SmoothTransformation)
    image.save(str(path), "PNG")
    print(f"wrote {path} ({path.stat().st_size // 1024} KiB)")


def main(out: str) -> int:
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    app = QApplication.instance() or QApplication([])
    from workbench.gui.main_window import MainWindow

    window = MainWindow(interactive=False, settings=QSettings(os.path.join(SANDBOX, "s.ini"), QSettings.Format.IniFormat))
    window.resize(1440, 900)
    window.show()
    editor = window.open_kernel_editor(EXAMPLE)
    editor.resize(1280, 760)
    editor.check_now()
    wait(editor.checked)
    grab(editor, folder / "own-kernel-editor.png")

    good = editor.source.toPlainText()
    editor.source.setPlainText(good.replace("a * x[i] + y[i]", "a * x[i] + z[i]"))
    editor.restrictions.setPlainText("block_size * items <= 4096\nblock_size * itms >= 64")
    editor.tabs.setCurrentIndex(1)
    editor.check_now()
    wait(editor.checked)
    grab(editor, folder / "own-kernel-errors.png")

    editor.source.setPlainText(good)
    editor.restrictions.setPlainText("block_size * items <= 4096")
    editor.check_now()
    wait(editor.checked)
    editor.tune(20)
    wait(window.run_done)
    window._select_best_if_none()
    grab(window, folder / "own-kernel-tuned.png")
    session = window.model.session
    best = min((t for t in session.trials if t.ok), key=lambda t: t.metric("latency_ms"))
    print(f"{len(session.trials)} trials (simulated H200), best {best.metric('latency_ms'):.4f} ms {best.config.to_dict()}")
    editor.close()
    window.close()
    app.processEvents()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "docs/images"))
