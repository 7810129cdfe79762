"""The one place the engine's plain events become Qt signals.

The engine's ``run()`` blocks, so it runs in a :class:`QThread`; its subscriber callback is called
in that thread and only emits signals, which Qt queues to the receivers on the GUI thread. Candidates
themselves run in the engine's worker processes, so a hanging or crashing kernel never reaches the
window. Nothing here knows about widgets.
"""

from __future__ import annotations

import traceback
from typing import Any

from PySide6.QtCore import QThread, Signal

from workbench.runner.events import Progress, RunFinished


class EngineThread(QThread):
    """Runs ``engine.run()`` off the GUI thread and re-emits its events as signals.

    ``progress(Progress)`` and ``run_finished(RunFinished)`` (the window takes new trials from the
    session on its refresh tick, not one signal per trial); an exception escaping the engine arrives as a ``run_finished``
    with reason ``error`` and the exception text, so the window never waits forever.
    """

    progress = Signal(object)
    run_finished = Signal(object)

    def __init__(self, engine: Any, parent: Any = None) -> None:
        super().__init__(parent)
        self.engine = engine
        self.result: RunFinished | None = None
        engine.subscribe(self._on_event)

    def _on_event(self, event: Any) -> None:
        if isinstance(event, Progress):
            self.progress.emit(event)
        # RunFinished is emitted once from run() below, after the engine has fully returned.

    def run(self) -> None:  # executed in the new thread
        result = RunFinished("error", 0, "the engine thread ended without a result")
        try:
            result = self.engine.run()
        except Exception as exc:  # noqa: BLE001 - report any engine failure to the window
            result = RunFinished("error", len(getattr(self.engine.session, "trials", [])),
                                 f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
        finally:  # even a BaseException ends the run in the window (it counts as going until then)
            self.result = result
            self.run_finished.emit(result)

    def pause(self) -> None:
        self.engine.pause()

    def resume(self) -> None:
        self.engine.resume()

    def stop(self) -> None:
        self.engine.stop()
