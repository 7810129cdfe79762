"""Render docs/images/gui-portability.png offscreen: the five recorded convolution caches imported
as import-kt does (into a temporary folder; the caches are read where they are), the A100's opened
in the main window and the other four added in its Portability tab. Settings and autosaves go to
a temporary folder too.

    QT_QPA_PLATFORM=offscreen .venv/bin/python scripts/portability_screenshot.py docs/images
"""

from __future__ import annotations

import sys
from pathlib import Path

from screenshot_sandbox import ROOT, SANDBOX, settle

LANDSCAPES = ROOT.parent / "shared" / "landscapes"
CACHES = {
    "A100": LANDSCAPES / "convolution_A100.json",
    "A4000": LANDSCAPES / "more" / "convolution_A4000.json.gz",
    "A6000": LANDSCAPES / "more" / "convolution_A6000.json.gz",
    "W6600": LANDSCAPES / "more" / "convolution_W6600.json.gz",
    "W7800": LANDSCAPES / "more" / "convolution_W7800.json.gz",
}



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
        path = Path(SANDBOX) / f"{name}.json"
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
    window.zoom.person_set_tab_split()  # as a drag of it is: the window does not fit it again
    view.add_sessions(paths[1:])
    settle(app, 500)
    view.refresh()
    settle(app, 500)
    out = Path(folder) / "gui-portability.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    if not window.grab().save(str(out), "PNG"):
        raise SystemExit(f"error: could not write {out}")
    print(f"wrote {out}: {view.heading.text()}")
    window.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1] if len(sys.argv) > 1 else "docs/images"))
