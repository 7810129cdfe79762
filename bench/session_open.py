"""How long opening a big session file holds the window (offscreen, 1440x900).

For each size, a session of realistic trials (``bench/session_io.py``'s) is saved and opened in a
window two ways: ``open_session`` (read, rank and show, all on the GUI thread: what automation and
``gui --open`` do) and ``open_session_in_background`` (what File > Open and Open recent do: the
file read and ranked on a thread, then shown). Prints, per size, the wall seconds until the
session is shown and the longest the event loop went without running (a 10 ms timer's largest
gap): the time the window could not answer a click or repaint.

    python bench/session_open.py [--sizes 20000 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from session_io import make_session  # the bench folder, put on the path above


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    from workbench.gui.app import disarm_qt_unpickling

    disarm_qt_unpickling()
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from workbench.core.domain.session import save_session
    from workbench.gui.main_window import MainWindow
    from workbench.gui.settings_store import JsonSettings

    app = QApplication.instance() or QApplication([])
    folder = Path(tempfile.mkdtemp(prefix="session-open-"))
    os.environ["KERNEL_WORKBENCH_AUTOSAVE_DIR"] = str(folder / "autosave")
    gaps: list[float] = []
    last = [time.perf_counter()]

    def tick() -> None:
        now = time.perf_counter()
        gaps.append(now - last[0])
        last[0] = now

    timer = QTimer()
    timer.setInterval(10)
    timer.timeout.connect(tick)
    timer.start()

    def opened(path: Path, background: bool) -> tuple[float, float]:
        """Seconds until shown, and the longest event-loop gap meanwhile."""
        window = MainWindow(interactive=False, settings=JsonSettings(folder / "settings.json"))
        window.resize(1440, 900)
        window.show()
        app.processEvents()
        gaps.clear()
        last[0] = start = time.perf_counter()
        if background:
            window.open_session_in_background(path)
            while window.opening is not None:
                app.processEvents()
                time.sleep(0.001)
        else:
            window.open_session(path)
        app.processEvents()
        shown = time.perf_counter() - start
        tick()
        assert window.path is not None and window.model.n > 0
        window.close()
        window.deleteLater()
        app.processEvents()
        return shown, max(gaps)

    load = os.getloadavg()[0]
    print(f"opening a session file in the window (offscreen, 1440x900, median of {args.repeat}, "
          f"load average {load:.1f} on {os.cpu_count()} CPUs)")
    print(f"{'trials':>8} {'file MB':>8} {'how':<34} {'shown after s':>14} {'longest freeze s':>17}")
    for n in args.sizes:
        path = folder / f"session_{n}.json"
        save_session(make_session(n), path)
        size = os.path.getsize(path) / 1e6
        for background, how in ((False, "open_session (GUI thread)"), (True, "File > Open (read on a thread)")):
            runs = [opened(path, background) for _ in range(args.repeat)]
            print(f"{n:>8} {size:>8.1f} {how:<34} {statistics.median(r[0] for r in runs):>14.2f}"
                  f" {statistics.median(r[1] for r in runs):>17.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
