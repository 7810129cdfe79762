"""Starting the desktop application, interactively or under automation (tests, docs screenshots).

``python main.py`` calls :func:`main` with everything None/False; ``python main.py gui SESSION
--run KERNEL ... --screenshot PNG --quit-when-done`` opens a session or starts a run, saves a picture
of the whole window once it is complete, and exits 0 (1 when the run or the loading failed).
"""

from __future__ import annotations

import atexit
import gc
import functools
import os
import re
import shutil
import signal
import socket
import sys
import tempfile
import threading
import traceback
from pathlib import Path
from typing import Any, Callable, Sequence

from workbench.core.domain.shipped import shipped_path
from workbench.core.errors import WorkbenchError, command_name, counted, printable
from workbench.core.fs import atomic_write_bytes, silence_hung_up_output
from workbench.core.io.screenshots import seal
from workbench.core.io.output_files import backups_of
from workbench.core.stop_signals import HANGUP, STOP_SIGNALS

RESOURCES = shipped_path("resources")
STYLE_SHEET = RESOURCES / "styles" / "workbench.qss"
SCREEN_SIZE = (1440, 900)


#: The largest window an automated run draws (an 8K screen): 50000x50000 crashed Qt's painter
#: (a segfault, exit 139, no picture), and a picture that size is gigabytes.
MAX_SCREEN_SIDE = 8192


def _screenshot_size() -> tuple[int, int]:
    """Window size for automated runs: ``KERNEL_WORKBENCH_SCREEN_SIZE=1920x1080`` overrides
    1440x900. A value that is no ``WIDTHxHEIGHT`` of 1 to MAX_SCREEN_SIDE pixels is one line and
    exit 2 (it was dropped without a word, or crashed the painter)."""
    text = os.environ.get("KERNEL_WORKBENCH_SCREEN_SIZE", "")
    if not text:
        return SCREEN_SIZE
    # ASCII digits only: str.isdigit() took "²" (then int() raised a traceback) and Arabic digits
    match = re.fullmatch(r"([0-9]{1,6})[xX]([0-9]{1,6})", text.strip())
    width, height = match.groups() if match else ("0", "0")
    if not (1 <= int(width) <= MAX_SCREEN_SIDE and 1 <= int(height) <= MAX_SCREEN_SIDE):
        raise WorkbenchError(f"KERNEL_WORKBENCH_SCREEN_SIZE={printable(text)}: give the window's size as WIDTHxHEIGHT "
                             f"in pixels, each from 1 to {MAX_SCREEN_SIDE}, e.g. 1920x1080")
    return int(width), int(height)


def _needs_offscreen() -> bool:
    return not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")) and sys.platform.startswith("linux")


def _save_picture(pixmap: Any, path: Path) -> str | None:
    """Save ``pixmap`` as PNG at ``path`` through a temporary file in the same folder, then a rename:
    a failed write (a full disk, a folder not writable) leaves whatever was at ``path`` untouched.
    None when saved, else why not. The picture is encoded in memory and written here: a PNG
    written by Qt to a full disk printed libpng's own "libpng error: Write Error" line, and the
    refusal could not say why."""
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice

    encoded = QByteArray()
    buffer = QBuffer(encoded)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    if not pixmap.save(buffer, "PNG"):
        return "the picture could not be encoded as PNG"
    buffer.close()
    try:
        atomic_write_bytes(path, seal(bytes(encoded.data())))  # the seal lets a later --screenshot replace it
    except ValueError as exc:  # what Qt encoded is no PNG file
        return str(exc)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _say_waiting_autosaves(own: Path | str | None) -> None:
    """A window that quits by itself offers no recovery: the trials of an earlier run that was
    killed stay in the autosave folder, and a script's rerun started over without a word. Said,
    with the way to recover them."""
    from workbench.runner.autosave import recoverable

    waiting = recoverable(exclude=Path(own) if own is not None else None)
    if waiting:
        print(f"note: the autosave folder holds {counted(len(waiting), 'unfinished run')} of earlier windows (the newest "
              f"{printable(str(waiting[0]))}): a window started without --quit-when-done offers to recover them, "
              "or tune --resume AUTOSAVE --out FILE continues one", file=sys.stderr)


def _file_identity(path: Path) -> tuple[int, ...] | None:
    """What tells the file at ``path`` from another put there since (None: nothing there)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


def _check_still_replaceable(path: Path, force: bool, checked: tuple[int, ...] | None) -> None:
    """The picture's file, checked again as it is written: one that appeared there during the run
    (another than the file ``checked`` when the window opened, which the command's check let it
    replace) and is no picture of this program's is refused (nothing written), or with ``force``
    kept as ``FILE.bak`` first, as that check does. It was written over unsaid."""
    from workbench.core.io.output_files import keep_backup
    from workbench.core.io.screenshots import is_own_screenshot

    now = _file_identity(path)
    if now is None or now == checked or is_own_screenshot(path):
        return
    if not force:
        raise WorkbenchError(f"--screenshot {path}: a file that is not a screenshot of this program is there now "
                             "(it appeared during the run); nothing was written: name another file, or --force "
                             f"keeps it as {path.name}.bak")
    kept = keep_backup(path, "--screenshot")
    print(f"note: --screenshot {path}: the file that appeared there during the run is kept as {kept.name}",
          file=sys.stderr)


def application() -> Any:
    """The process's QApplication (created once, styled)."""
    from PySide6.QtCore import QLocale
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    if app is None:
        disarm_qt_unpickling()
        _private_qt_settings()
        _without_offscreen_notes()
        app = QApplication([sys.argv[0] if sys.argv else "kernel-workbench"])
        # numbers with a point, as the window writes them and the command line takes them, in any
        # locale (see gui/decimal_box.py: a box read 0.02 as 2 under a comma-decimal locale)
        QLocale.setDefault(QLocale.c())
        app.setOrganizationName("kernel-workbench")
        app.setApplicationName("Kernel Tuning Workbench")
        keep_light_colours(app)
        if STYLE_SHEET.is_file():
            app.setStyleSheet(STYLE_SHEET.read_text())
    return app


#: What Qt's offscreen platform (``gui --screenshot`` or ``--quit-when-done`` without a display)
#: says of every window feature it lacks: nothing is wrong, and two such lines on stderr came
#: before the one line a script reads there.
_OFFSCREEN_NOTE = "This plugin does not support "


def _without_offscreen_notes() -> None:
    """Pass Qt's messages on as Qt would print them, except the offscreen platform's notes."""
    from PySide6.QtCore import qFormatLogMessage, qInstallMessageHandler

    def handler(kind: Any, context: Any, message: str) -> None:
        if message.startswith(_OFFSCREEN_NOTE):
            return
        try:
            print(qFormatLogMessage(kind, context, message), file=sys.stderr)
        except (OSError, ValueError):  # a stderr nobody reads: the message goes nowhere, as Qt's would
            pass

    qInstallMessageHandler(handler)


def keep_light_colours(app: Any) -> None:
    """Draw the window in light colours whatever the desktop's colour scheme.

    The window is designed light: its charts, the recommendation card, highlighted source lines
    and Compare's differing rows have fixed light backgrounds (readable on a projector and in an
    exported picture), while text elsewhere takes the palette's colour. Under a dark desktop theme
    (Qt follows it since 6.5) that text came out near-white on those near-white backgrounds,
    contrast 1.1:1, and fixed dark notes near-black on the dark window. One scheme throughout
    keeps every pairing readable."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QColor, QPalette

    hints = app.styleHints()
    if hasattr(hints, "setColorScheme"):  # Qt 6.8+: styles that draw in the scheme's colours follow too
        hints.setColorScheme(Qt.ColorScheme.Light)
    palette = QPalette(QColor("#efefef"))  # Qt's light palette, derived from its button colour
    for group in (QPalette.ColorGroup.Active, QPalette.ColorGroup.Inactive):
        palette.setColor(group, QPalette.ColorRole.Highlight, QColor("#308cc6"))  # Fusion's selection
        # example text in empty fields (the problem and sizes fields have no other label): Qt's grey
        # was 3.9:1 on white, below the 4.5:1 text needs; this is 5.7:1
        palette.setColor(group, QPalette.ColorRole.PlaceholderText, QColor("#666666"))
    app.setPalette(palette)


def disarm_qt_unpickling() -> None:
    """Make every Python object a Qt settings file holds read as None, in this process, for good.

    Qt reads settings files of its own through QSettings: the file dialogs' ``QtProject.conf``, an
    icon theme's ``index.theme`` (in ``~/.icons``, which people fill with downloaded themes), KDE's
    ``kdeglobals`` as the platform theme starts. PySide6 turns a ``PySide::PyObjectWrapper`` value
    of any of them into a Python object with ``pickle.loads``, which runs code a planted file
    chooses. PySide6 looks ``pickle.loads`` up once, the first time it unpickles, and keeps what
    it found: so one such value is read here, from a file of this process's, while ``pickle.loads``
    is a function that returns None (raising would leave an error pending for later), and the real
    one is put back for the rest of Python. ``tests/gui/test_settings_store.py`` fails if a
    PySide6 version stops keeping it. Idempotent; call before any QSettings reads anything.
    """
    import pickle

    from PySide6.QtCore import QSettings

    global _disarmed
    if _disarmed:
        return
    real = pickle.loads
    pickle.loads = lambda *args, **kwargs: None
    try:
        name = b"PySide::PyObjectWrapper\0"
        data = pickle.dumps(0)
        blob = b"\0\0\0\x7f" + len(name).to_bytes(4, "big") + name + len(data).to_bytes(4, "big") + data
        with tempfile.TemporaryDirectory(prefix="kernel-workbench-disarm-") as folder:
            path = Path(folder) / "prime.ini"
            path.write_text("[prime]\nvalue=@Variant(" + "".join(f"\\x{b:02x}" for b in blob) + ")\n")
            QSettings(str(path), QSettings.Format.IniFormat).value("prime/value")
    finally:
        pickle.loads = real
    _disarmed = True


_disarmed = False


#: The start of the name of each process's folder for Qt's own settings (then its pid and "-").
QT_FOLDER_PREFIX = "kernel-workbench-qt-"


def remove_orphaned_qt_folders() -> None:
    """Remove the Qt settings folders of this user's processes that are gone: a process killed
    (SIGKILL, a crash) never ran its exit's removal, and each left one in the temporary folder.
    A folder whose process is alive, or one of another user's, is left alone."""
    root = Path(tempfile.gettempdir())
    for folder in root.glob(f"{QT_FOLDER_PREFIX}*-*"):
        pid_text = folder.name[len(QT_FOLDER_PREFIX):].split("-", 1)[0]
        try:
            if not pid_text.isdigit() or folder.is_symlink() or folder.lstat().st_uid != os.getuid():
                continue
            os.kill(int(pid_text), 0)  # alive (or not ours to signal): kept
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except (OSError, OverflowError, ValueError):
            continue


def _private_qt_settings() -> None:
    """Qt's own settings (the file dialogs' history and sidebar in ``QtProject.conf``) go to a
    folder of this process's, made empty and removed at exit: Qt reads that file through QSettings,
    where PySide6 unpickles any Python object a planted file holds, so the person's (or a
    system-wide one in ``/etc/xdg``) would run code at the first Open dialog. The window's own
    settings are a JSON file (:mod:`settings_store`)."""
    from PySide6.QtCore import QSettings

    remove_orphaned_qt_folders()
    folder = tempfile.mkdtemp(prefix=f"{QT_FOLDER_PREFIX}{os.getpid()}-")
    atexit.register(shutil.rmtree, folder, True)
    for fmt in (QSettings.Format.NativeFormat, QSettings.Format.IniFormat):
        for scope in (QSettings.Scope.UserScope, QSettings.Scope.SystemScope):
            QSettings.setPath(fmt, scope, folder)


class HeldSignals:
    """Stop signals that arrive while the window is being made, held for :class:`SignalRelay`.

    The command line's handlers raise ``KeyboardInterrupt`` wherever the interpreter is; while the
    window is built that is often inside one of Qt's virtual methods, and a Ctrl-C or SIGTERM in
    the first second and a half ended the program with a segmentation fault or a fatal error (about
    one start in twelve, interrupted then). Held instead, each is handed to the relay once the
    window is running, and ends it as a signal does then. A signal ignored at start (``nohup``'s
    SIGHUP) stays ignored; outside the main thread nothing can be held, and nothing is.
    """

    def __init__(self) -> None:
        self.held: list[int] = []
        self._previous: dict[int, Any] = {}
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in STOP_SIGNALS:
            previous = signal.getsignal(signum)
            if previous is not signal.SIG_IGN:
                self._previous[signum] = previous
                signal.signal(signum, self._hold)

    def _hold(self, signum: int, frame: Any) -> None:
        self.held.append(signum)

    def restore(self) -> None:
        """The handlers from before, back in place."""
        for signum, previous in self._previous.items():
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
        self._previous.clear()


class SignalRelay:
    """Delivers SIGINT, SIGTERM and SIGHUP to ``on_signal(signum)`` on the GUI thread, between events.

    SIGHUP ignored when the window starts (``nohup``) stays ignored: the window was meant to
    outlive its terminal.

    Python runs a signal handler only when the interpreter next gets control, which in a Qt event
    loop may be never (an idle window) or in the middle of any slot (a KeyboardInterrupt traceback,
    and the window goes on). So the handlers do nothing but let the signal wake the loop: the
    interpreter writes each signal's number to a socket (``signal.set_wakeup_fd``), and a
    ``QSocketNotifier`` on its other end calls ``on_signal`` as an ordinary event.
    """

    def __init__(self, on_signal: Callable[[int], None]) -> None:
        from PySide6.QtCore import QSocketNotifier

        self.on_signal = on_signal
        self._reader, self._writer = socket.socketpair()
        self._reader.setblocking(False)
        self._writer.setblocking(False)
        self._previous = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
        if HANGUP is not None and self._previous[HANGUP] is signal.SIG_IGN:
            del self._previous[HANGUP]
        self._previous_fd = signal.set_wakeup_fd(self._writer.fileno(), warn_on_full_buffer=False)
        for signum in self._previous:
            signal.signal(signum, self._note)
        self._notifier = QSocketNotifier(self._reader.fileno(), QSocketNotifier.Type.Read)
        self._notifier.activated.connect(self._read)

    @staticmethod
    def _note(signum: int, frame: Any) -> None:
        """The Python-level handler: nothing; the wakeup byte carries the signal to :meth:`_read`."""

    def _read(self) -> None:
        try:
            data = self._reader.recv(64)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        for signum in data:
            if signum in STOP_SIGNALS:
                self.on_signal(signum)

    def close(self) -> None:
        """Give the signals back to whoever had them before, and the wakeup descriptor too."""
        self._notifier.setEnabled(False)
        signal.set_wakeup_fd(self._previous_fd)
        for signum, previous in self._previous.items():
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
        self._reader.close()
        self._writer.close()


def _say_kept(path: Path, count: int) -> None:
    """Where the trials of an automated window that no file holds went, once it has closed: its
    autosave, else (that save failed: a full disk) the autosave's journal, which holds what the
    run wrote. (Said before the close, the note named a file the close then failed to write.)"""
    from workbench.core.domain.session import journal_path

    trials = counted(count, "trial")
    if path.is_file():
        print(f"note: the {trials} the run measured {'is' if count == 1 else 'are'} kept in {printable(str(path))} "
              "(the window's autosave), which the window offers at its next start", file=sys.stderr)
    elif journal_path(path).is_file():
        print(f"note: the autosave could not be written; its journal {printable(str(journal_path(path)))} keeps what "
              f"the run wrote of its {trials}, which the window offers at its next start", file=sys.stderr)
    else:
        print(f"warning: the {trials} the run measured could not be kept: neither the autosave "
              f"{printable(str(path))} nor its journal could be written", file=sys.stderr)


def _close_on_signal(window: Any) -> None:
    """Close the window after a stop signal as its Close action would, asking nothing.

    Nobody is there to answer a question, so the window takes each one's safe answer: a run going
    is stopped and its trials saved (to its file, else its autosave); an unsaved session of a
    person's window keeps its autosave, to be offered at the next start, as after a crash (the
    Close action would have asked whether to save it)."""
    interactive = window.interactive
    window.interactive = False
    if interactive and not window.running and window.model.dirty:
        window.autosave_path = None  # the window no longer drops it: it stays for recovery
    window.close()
    if interactive:
        window.save_settings()


def main(session_path: str | None, run: dict | None, screenshot: str | None, quit_when_done: bool,
         presentation: bool = False, kernel_dirs: Sequence[str] = (), tab: str | None = None,
         force: bool = False) -> int:
    """Open the window; optionally load ``session_path`` and/or start ``run`` (keys: kernel, backend,
    strategy, budget, seed, replay, gpu_model, problem, options); with ``screenshot`` save the window as
    PNG once the run (or loading) is complete; with ``quit_when_done`` exit then; ``tab``: the bottom
    tab shown (``MainWindow.TAB_NAMES``). Returns the exit code."""
    if _needs_offscreen() and not os.environ.get("QT_QPA_PLATFORM"):
        if not (screenshot or quit_when_done):
            print("error: no display to open the window on (DISPLAY is not set); run the headless commands "
                  f"({command_name()} --help), or set QT_QPA_PLATFORM=offscreen with --screenshot", file=sys.stderr)
            return 2
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    held = HeldSignals()  # (from here until the relay below takes over)
    try:
        return _open_window(held, session_path, run, screenshot, quit_when_done, presentation, kernel_dirs, tab,
                            force)
    finally:
        held.restore()


def _open_window(held: HeldSignals, session_path: str | None, run: dict | None, screenshot: str | None,
                 quit_when_done: bool, presentation: bool, kernel_dirs: Sequence[str], tab: str | None,
                 force: bool) -> int:
    """:func:`main` once it is decided that a window opens; ``held``: the stop signals that came
    while it was being made, handed to the window's own handling once it runs."""
    from pyqtgraph.util.garbage_collector import GarbageCollector
    from PySide6.QtCore import QEvent, QTimer
    from PySide6.QtWidgets import QDialog

    from workbench.core.domain.session import journal_path
    from workbench.core.errors import WorkbenchError
    from workbench.gui.main_window import MainWindow
    from workbench.gui.settings_store import JsonSettings

    automated = bool(quit_when_done or screenshot)
    checked = _file_identity(Path(screenshot)) if screenshot else None  # as the command's check left it
    try:
        size = _screenshot_size() if automated else SCREEN_SIZE
    except WorkbenchError as exc:  # before any window: nothing to draw at a size that cannot be
        print(f"error: {exc}", file=sys.stderr)
        return 2
    app = application()
    # A window that quits by itself keeps its settings (recent files, last folder, layout) in a
    # folder of its own, dropped at exit: the person's are neither changed by it nor shown in its
    # pictures. One that stays open after its picture is the person's window, with their settings.
    scratch = tempfile.TemporaryDirectory(prefix="kernel-workbench-settings-") if quit_when_done else None
    settings = JsonSettings(Path(scratch.name) / "settings.json") if scratch else None
    window = MainWindow(interactive=not quit_when_done, settings=settings)
    if automated:
        window.resize(*size)
    if presentation:
        window.zoom.present_once()
    window.show()
    status = {"code": 0}
    after_picture: list[Callable[[], None]] = []  # what a window that stays open does once its picture is taken

    def fail(message: str) -> None:  # bad input (a file or a request refused): exit 2, as the CLI does
        print(f"error: {message}", file=sys.stderr)
        status["code"] = 2
        if quit_when_done:
            app.exit(2)
        else:  # the person's window stays open (File > Open is a click away) and says it too
            window.statusBar().showMessage(f"error: {message}")

    #: SESSION named for a run that does not exist yet: the run's new session is saved there when
    #: it ends, as ``tune --out`` writes a new file (before, the window refused "no such file").
    new_file: list[Path] = []
    #: Where an automated window's trials that no file holds stay when it closes (set by
    #: :func:`keep_unsaved`; said once the window has closed, by what the close could write).
    kept: dict[str, Any] = {}

    def keep_unsaved() -> None:
        """The window's trials are saved nowhere else (its run failed, or the save to SESSION did):
        they stay in its autosave when it closes, for the next start to offer, instead of going
        with the window."""
        session = window.model.session
        if (quit_when_done and session is not None and session.trials and window.autosave_path is not None
                and window.path is None):
            window.keep_unsaved_run = True
            kept.update(path=Path(window.autosave_path), count=len(session.trials))

    def save_new_file() -> None:
        """The --run's session to SESSION, the new file named for it (once)."""
        if new_file and window.model.session is not None and window.path != new_file[0]:
            target = new_file.pop()  # the --run's session only: a later run of the window stays unsaved
            # written by another program since the start, when it did not exist: the save keeps it
            # as a backup, which is said, as tune says it (the window replaced it without a word);
            # the backups named are the ones the save made, found beside the file afterwards
            before = backups_of(target)
            try:
                saved = window.save_to(target)
            except BaseException:  # a defect in the save: its trials are nowhere else
                keep_unsaved()
                raise
            if not saved:
                print(f"error: {printable(window.statusBar().currentMessage())}", file=sys.stderr)
                status["code"] = 1
                keep_unsaved()  # (the autosave was let go at the exit, and every trial with it)
            else:
                made = sorted(backups_of(target) - before)
                if made:
                    print(f"warning: SESSION {printable(str(target))} held another session when the run ended; "
                          f"it is kept as {', '.join(printable(str(p)) for p in made)}", file=sys.stderr)

    def finish(result: Any = None) -> None:
        """The end of the command's own run (or opening): its SESSION saved, its picture taken. Once:
        a later run of a window the person keeps is theirs (it took the picture again, over the
        first, and brought the --tab back to the front)."""
        if status.get("finished"):
            return
        status["finished"] = 1
        if result is not None and getattr(result, "reason", "") == "error":
            print(f"error: run failed: {result.message.splitlines()[0] if result.message else 'error'}", file=sys.stderr)
            status["code"] = 1
            if not new_file:
                # saved nowhere (no SESSION named): an automated run's trials are let go at the exit,
                # which for a run that failed midway lost what it had measured without a word
                keep_unsaved()
        save_new_file()
        window.refresh()
        window.failures.refresh()
        if tab is not None:  # (again: a run's end may have picked its own; the picture is of this one)
            window.show_tab(tab)
        if screenshot:
            app.processEvents()
            window.settle_views()
            from workbench.core.io.output_files import check_folder, check_regular_or_absent

            try:  # the same rule as every command's output: a folder that exists, a regular file
                check_folder(Path(screenshot), "--screenshot")
                check_regular_or_absent(Path(screenshot), "--screenshot")
                _check_still_replaceable(Path(screenshot), force, checked)
            except WorkbenchError as exc:
                print(f"error: {exc}", file=sys.stderr)
                status["code"] = 2
            else:
                if (window.width(), window.height()) != size and os.environ.get("KERNEL_WORKBENCH_SCREEN_SIZE"):
                    # below the window's minimum: said, not silently widened
                    print(f"note: KERNEL_WORKBENCH_SCREEN_SIZE={size[0]}x{size[1]} is smaller than the window can be; "
                          f"it is drawn at {window.width()}x{window.height()}", file=sys.stderr)
                why = _save_picture(window.grab(), Path(screenshot))
                if why is not None:
                    print(f"error: could not write {screenshot} ({why})", file=sys.stderr)
                    status["code"] = 1
        if quit_when_done:
            app.exit(status["code"])
        while after_picture:
            after_picture.pop(0)()

    def begin() -> None:
        if "signal" in status:  # (held while the window was made: nothing of the command starts)
            return
        try:
            for folder in kernel_dirs:  # named by the person: its templates load, as File > Open kernel folder...
                from workbench.core.domain.templates import scan_templates

                library = scan_templates(folder)
                for name in library.templates:
                    window._kernel_folder_opened(name, Path(folder).resolve())
                said = {reason for spec_file, reason in library.broken.items()  # the run's own spec's
                        if run and spec_file.name.startswith(f"{run.get('kernel')}.")}
                for reason in library.reasons():  # the others still open and run
                    if reason in said:
                        continue  # the run of it fails, saying this as its error: once is enough
                    print(f"warning: {printable(reason)}", file=sys.stderr)
                    window.statusBar().showMessage(f"warning: {printable(reason)}")
            if session_path and not run and not automated:
                # a person's window: up at once, the file read on a thread (a busy note after 0.4 s,
                # with Cancel), as File > Open reads it; a refusal is said as a start's is (exit 2)
                window.open_session_in_background(session_path, failed=lambda exc: fail(printable(str(exc))))
            elif session_path and run and not os.path.lexists(session_path) \
                    and not os.path.lexists(journal_path(session_path)):
                # (with only its journal there, a killed run's trials, the file is opened and
                # continued below, as Open and tune --resume do: taken for a new file, the run
                # replaced them, kept as a backup, and said nothing)
                from workbench.core.io.output_files import check_folder, check_not_sidecar, check_session_name
                from workbench.runner.autosave import refuse_autosave_folder

                # refused before the run, not after it: a name the save refuses lost every trial measured
                check_folder(Path(session_path), "SESSION")
                check_session_name(Path(session_path), "SESSION")
                check_not_sidecar(Path(session_path), "SESSION")
                refuse_autosave_folder(session_path, "SESSION")
                new_file.append(Path(session_path))
            elif session_path:
                window.open_session(session_path)
                opened = window.model.session
                other = window.why_not_continued(dict(run)) if run and quit_when_done and opened is not None else None
                if other is not None and opened is not None:
                    # it would start another session, which an automated window saves nowhere: the
                    # run was thrown away at the exit, which still said 0
                    raise WorkbenchError(
                        f"--run does not continue {session_path} (a session of {opened.kernel!r}; {other}): "
                        "give a new file to save the run to, or --run what that session ran")
            if tab is not None:
                window.show_tab(tab)
            if run:
                if str(run.get("backend")) == "python" and str(run.get("kernel", "")).endswith(".py"):
                    # the person named the file on the command line, as `tune FILE --resume` names
                    # it: its code runs without the window's question (which a session's own path
                    # needs, and an automated window cannot ask)
                    window.trusted_code.add(Path(str(run["kernel"])).resolve())
                window.toolbar.apply(dict(run))
                window.start_run(dict(run))
                if new_file and window.autosave_path is not None:
                    # said where a script looks: killed before its end, the run leaves its trials there,
                    # and `show SESSION` found no file
                    print(f"note: until the run ends and is saved to {printable(str(new_file[0]))}, its trials are "
                          f"journaled in {printable(str(journal_path(window.autosave_path)))} (the window's "
                          "autosave), which the window offers at its next start if the run is killed",
                          file=sys.stderr)
                if quit_when_done:
                    _say_waiting_autosaves(window.autosave_path)
                # (once it started: a run refused at its start is no run of the command's, and a
                # later run of the person's window was taken for it, saved to SESSION)
                window.run_done.connect(finish)
            else:
                if not session_path and screenshot and not quit_when_done:
                    # the picture first: an autosave's waiting question blocked it for good (a
                    # person's window, so it is still asked, once the picture is taken)
                    after_picture.append(window.offer_recovery)
                elif not session_path:
                    window.offer_recovery()
                if automated:
                    QTimer.singleShot(200, finish)
        except WorkbenchError as exc:
            fail(str(exc))
            if not quit_when_done and screenshot:
                finish()
            status["finished"] = 1  # nothing of the command's is left to finish in this window
            new_file.clear()
        except Exception:  # noqa: BLE001 - a defect: its traceback for the report, and an automated window still ends
            traceback.print_exc()
            status["code"] = 1
            if quit_when_done:
                app.exit(1)

    def on_signal(signum: int) -> None:
        if signum == HANGUP:  # its terminal is likely gone: what is still said must not fail the close
            silence_hung_up_output()
        if "signal" in status:
            return
        status["signal"] = signum
        for _ in range(16):  # an open question has no one to answer it: its safe answer, Cancel
            modal = app.activeModalWidget()
            if not isinstance(modal, QDialog):
                break
            modal.reject()
        app.exit(128 + signum)

    def on_defect(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        """A defect raised in a slot (Qt only prints it and goes on): an automated window that waits
        for a signal the failed slot would have sent never ended, so it ends now with exit 1."""
        traceback.print_exception(kind, value, tb)
        status["code"] = 1
        status["defect"] = 1
        app.exit(1)

    # (signal handlers belong to the main thread; a window made elsewhere, in a test, goes without)
    relay = SignalRelay(on_signal) if threading.current_thread() is threading.main_thread() else None
    for signum in held.held:  # (a Ctrl-C while the window was made: it ends the window once it runs)
        QTimer.singleShot(0, functools.partial(on_signal, signum))
    previous_hook = sys.excepthook
    QTimer.singleShot(0, begin)
    # Garbage is collected in the GUI thread only, on a timer (pyqtgraph's collector): collected in
    # the engine thread, a widget's Python wrapper has Shiboken delete the widget from the GUI thread
    # while the engine thread, waiting for the interpreter, may hold one of the Qt signal locks the
    # deletion needs, and both wait for ever (seen once, in a test run of the window).
    collector = GarbageCollector(interval=1.0)
    try:
        if quit_when_done:
            sys.excepthook = on_defect
        code = app.exec()
        if "defect" in status and new_file:  # what the run measured still goes to SESSION, as on a signal
            window.stop_run_unshown()
            try:
                save_new_file()
            except Exception:  # noqa: BLE001 - a second defect: said, and the exit stays 1
                traceback.print_exc()
        elif "defect" in status:
            keep_unsaved()  # no SESSION: its trials stay in the autosave, and where is said
        if "signal" in status:
            print("interrupted" if status["signal"] == signal.SIGINT else "terminated", file=sys.stderr)
            if new_file:  # the run's trials go to SESSION, as at its end (they went to an autosave)
                window.stop_run_unshown()
                save_new_file()
            else:
                keep_unsaved()  # no SESSION: its trials stay in the autosave, and where is said
            _close_on_signal(window)
            code = 128 + status["signal"]
        else:
            # Closing runs the window's normal ending: a run still going is stopped with its trials
            # kept, an automated run's autosave is removed, so the next start does not offer it.
            window.close()
    finally:
        sys.excepthook = previous_hook
        if relay is not None:
            relay.close()
        collector.timer.stop()
        gc.enable()
        if kept:
            _say_kept(kept["path"], kept["count"])
    # The window's widgets go now, while the application still exists: left to the interpreter's
    # exit, Qt objects can be destroyed after the application, which crashes the process
    # (SIGSEGV instead of the exit status) now and then.
    thread = window.engine_thread
    if thread is None or not thread.isRunning():  # a thread still running must outlive the window
        window.deleteLater()
        app.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    if settings is not None and scratch is not None:
        settings.sync()  # nothing left pending that would recreate the folder once it is gone
        scratch.cleanup()
    return code or status["code"]
