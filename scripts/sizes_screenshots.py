"""Render the pictures of docs/sizes.md offscreen: a simulated size sweep of reduce_sum in the main
window's Sizes tab (some cross-size cells not measured yet), then the size view alone once the
missing cells were measured. Sessions, settings and autosaves go to a temporary folder.

    QT_QPA_PLATFORM=offscreen .venv/bin/python scripts/sizes_screenshots.py docs/images
"""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import QEventLoop, QTimer

from screenshot_sandbox import SANDBOX, settle

SIZES = {"n": [1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28]}
BUDGET = 40



def main(folder: str) -> int:
    from workbench.gui.app import application
    from workbench.gui.main_window import MainWindow
    from workbench.runner.controller import RunRequest, start_run

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    session_path = Path(SANDBOX) / "reduce_sweep.json"
    run = start_run(RunRequest(kernel="reduce_sum", backend="sim", budget=BUDGET, sizes=SIZES, seed=1), session_path)
    run.run()
    app = application()
    window = MainWindow(interactive=False)
    window.resize(1440, 900)
    window.show()
    window.open_session(str(session_path))
    window.bottom_tabs.setCurrentWidget(window.size_view)  # the window as it opens: no pane resized for the picture
    settle(app)
    window.size_view.refresh()
    settle(app)
    if not window.grab().save(str(out / "sizes-window.png"), "PNG"):
        raise SystemExit(f"error: could not write {out / 'sizes-window.png'}")
    print(f"wrote {out / 'sizes-window.png'}: {window.size_view.status.text()}")

    done = QEventLoop()
    window.run_done.connect(lambda *_: done.quit())
    window.size_view.measure_button.click()
    if window.running:
        QTimer.singleShot(600_000, done.quit)
        done.exec()
    window.refresh()
    window.size_view.refresh()
    view = window.size_view
    view.setParent(None)
    view.resize(1440, 620)
    view.show()
    settle(app, 500)
    if not view.grab().save(str(out / "sizes-view.png"), "PNG"):
        raise SystemExit(f"error: could not write {out / 'sizes-view.png'}")
    print(f"wrote {out / 'sizes-view.png'}: {view.status.text()}")
    window.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1] if len(sys.argv) > 1 else "docs/images"))
