"""Session files read off the GUI thread, the window answering meanwhile.

Reading and ranking a session of 10^5 trials (a file of tens of megabytes) takes seconds; done on
the GUI thread it froze the window, which a desktop then offers to kill. The reading runs on a
:class:`~workbench.gui.background.Background` thread and what it read is shown on the GUI thread,
all or nothing, as before. One file at a time: until it is shown the window refuses what would
replace its session, and after a moment a busy dialog (window-modal, so the session shown cannot
change under the question "save first?" already answered) says which file is read and lets the
person give up on it: a cancelled read's result is dropped when it arrives. A result that arrives
while another dialog of the window is open (Save as, a question; their event loops deliver it) waits
until that dialog closes, so nothing it was opened about changes under it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtWidgets import QApplication, QProgressDialog, QWidget

from workbench.core.errors import WorkbenchError
from workbench.gui.background import Background

#: How long a read may take before the busy dialog appears (a small file never flashes one).
DIALOG_AFTER_MS = 400
#: How often a file read while a dialog of the window's was open looks again whether it has closed.
RETRY_MS = 100


class FileReading(QObject):
    """Reads one file at a time for ``window`` (see the module docstring)."""

    def __init__(self, window: QWidget) -> None:
        super().__init__(window)
        self._window = window
        self._reader = Background()  # no parent: see Background
        self._reader.done.connect(self._on_done)
        self._dialog: QProgressDialog | None = None
        self._handlers: tuple[Callable[[Any], object], Callable[[BaseException], None]] | None = None
        self._cancelled: Callable[[], None] | None = None
        #: The file being read; None when none is.
        self.reading: Path | None = None
        self._request = 0

    def start(self, file: Path, read: Callable[[], Any], shown: Callable[[Any], object],
              failed: Callable[[BaseException], None], dialog: bool = True,
              cancelled: Callable[[], None] | None = None) -> None:
        """``read()`` on a thread; then ``shown(value)`` on the GUI thread, or ``failed(error)`` when
        it raised a WorkbenchError or OSError (any other exception is a bug: logged by the thread,
        and said as one line naming the file). ``dialog``: the busy dialog may appear (not for an
        automated window, which nobody watches). ``cancelled()`` is called instead of either when the
        read is given up (what was taken for it, such as a lock, goes back then)."""
        if self.reading is not None:
            raise WorkbenchError(f"{self.reading.name} is still being read")
        self._request += 1
        self.reading = file
        self._handlers = (shown, failed)
        self._cancelled = cancelled

        def work() -> object:
            try:
                return read()
            except (WorkbenchError, OSError) as exc:
                return _Failed(exc)

        self._reader.start("read-session", self._request, work)
        if dialog:
            request = self._request
            QTimer.singleShot(DIALOG_AFTER_MS, self, lambda: self._show_dialog(request, file))

    def cancel(self) -> None:
        """Give up on the file being read: its result is dropped when it arrives."""
        self._request += 1
        cancelled, self._cancelled = self._cancelled, None
        if self._finish() is not None and cancelled is not None:  # a read was going on
            cancelled()

    def _show_dialog(self, request: int, file: Path) -> None:
        if request != self._request or self.reading is None:
            return
        try:
            size = f" ({os.path.getsize(file) / 1e6:,.0f} MB)"
        except OSError:
            size = ""
        dialog = QProgressDialog(f"Reading {file.name}{size}...", "Cancel", 0, 0, self._window)
        dialog.setWindowTitle("Opening")
        dialog.setWindowModality(Qt.WindowModality.WindowModal)
        dialog.setMinimumDuration(0)
        dialog.setAutoClose(False)
        dialog.setAutoReset(False)
        dialog.canceled.connect(self.cancel)
        self._dialog = dialog
        dialog.show()

    def _finish(self) -> tuple[Callable[[Any], object], Callable[[BaseException], None]] | None:
        handlers, self._handlers, self.reading = self._handlers, None, None
        dialog, self._dialog = self._dialog, None
        if dialog is not None:
            dialog.canceled.disconnect(self.cancel)
            dialog.close()
            dialog.deleteLater()
        return handlers

    def _on_done(self, request: object, result: object) -> None:
        if request != self._request:  # cancelled meanwhile
            return
        modal = QApplication.activeModalWidget()
        if modal is not None and modal is not self._dialog:
            # a question or a file dialog of the window's is open (its own event loop delivered this):
            # what it was opened about must not change under it, so the file is shown once it closes
            QTimer.singleShot(RETRY_MS, self, lambda: self._on_done(request, result))
            return
        file = self.reading
        handlers = self._finish()
        self._cancelled = None
        if handlers is None or file is None:
            return
        shown, failed = handlers
        if isinstance(result, _Failed):
            failed(result.error)
        elif result is None:  # the reader raised something else: a bug, in the log by now
            failed(WorkbenchError(f"{file}: cannot be read (see the log)"))
        else:
            shown(result)


class _Failed:
    """What a read that failed with the file's own fault returns to the GUI thread."""

    def __init__(self, error: BaseException) -> None:
        self.error = error
