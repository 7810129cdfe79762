"""What every screenshot script here sets up first: an offscreen Qt platform and a temporary
folder for settings, autosaves and templates, so that rendering the docs' pictures never reads or
writes the user's own (import it before Qt makes its application), and a wait for the window's
timers and repaints to settle before a grab."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("KERNEL_WORKBENCH_FORCE_NO_GPU", "1")
SANDBOX = tempfile.mkdtemp(prefix="kernel-workbench-shots-")
atexit.register(shutil.rmtree, SANDBOX, True)  # (nothing of a rendering is kept there)
os.environ["KERNEL_WORKBENCH_CONFIG_DIR"] = os.path.join(SANDBOX, "config")
os.environ["KERNEL_WORKBENCH_DATA_DIR"] = os.path.join(SANDBOX, "data")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def settle(app: object, ms: int = 300) -> None:
    """Run the event loop for ``ms``: deferred refreshes and repaints happen before the grab."""
    from PySide6.QtCore import QEventLoop, QTimer

    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()
    app.processEvents()  # type: ignore[attr-defined]
