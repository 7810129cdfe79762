"""Render docs/images/gui-portability.png offscreen: the five recorded convolution caches imported
as import-kt does (into a temporary folder; the caches are read where they are), the A100's opened
in the main window and the other four added in its Portability tab. Settings and autosaves go to
a temporary folder too.

    QT_QPA_PLATFORM=offscreen .venv/bin/python scripts/portability_screenshot.py docs/images
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QEventLoop, QTimer
from PySide6.QtWidgets import QApplication

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("KERNEL_WORKBENCH_FORCE_NO_GPU", "1")
_SANDBOX = tempfile.mkdtemp(prefix="kernel-workbench-shots-")
os.environ["KERNEL_WORKBENCH_CONFIG_DIR"] = os.path.join(_SANDBOX, "config")
os.environ["KERNEL_WORKBENCH_DATA_DIR"] = os.path.join(_SANDBOX, "data")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LANDSCAPES = ROOT.parent / "shared" / "landscapes"
CACHES = {
    "A100": LANDSCAPES / "convolution_A100.json",
    "A4000": LANDSCAPES / "more" / "convolution_A4000.json.gz",
    "A6000": LANDSCAPES / "more" / "convolution_A6000.json.gz",
    "W6600": LANDSCAPES / "more" / "convolution_W6600.json.gz",
    "W7800": LANDSCAPES / "more" / "convolution_W7800.json.gz",
}


def settle(app: QApplication, ms: int = 300) -> None:
    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()
    app.processEvents()


def main(folder: str) -> int:
    from workbench.core.domain.session import save_session
    from workbench.core.io.interop import import_kt_cache
    from workbench.gui.app import application
    from workbench.gui.main_window import MainWindow

    missing = [str(p) for p in CACHES.values() if not p.is_file()]
    if missing:
        print(f"error: the recorded caches are not there: {', '.join(missing)}", file=sys.stderr)
        return 1
    paths = []
    for name, cache in CACHES.items():
        path = Path(_SANDBOX) / f"{name}.json"
        save_session(import_kt_cache(cache), path)
        paths.append(str(path))
    app = application()
    window = MainWindow(interactive=False)
    window.resize(1440, 900)
    window.show()
    window.open_session(paths[0])
    view = window.portability
    window.bottom_tabs.setCurrentWidget(view)
    window.splitters["right"].setSizes([280, 600])  # room for the five rows and the portable line
    window.splitters["bottom"].setSizes([950, 150])
    view.add_sessions(paths[1:])
    settle(app, 500)
    view.refresh()
    settle(app, 500)
    out = Path(folder) / "gui-portability.png"
    window.grab().save(str(out), "PNG")
    print(f"wrote {out}: {view.heading.text()}")
    window.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1] if len(sys.argv) > 1 else "docs/images"))
