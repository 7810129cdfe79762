"""Autosaves: where a run of a session that has no file yet is journaled, and how a crashed run
is found again.

A run always writes somewhere, so a crash never loses a finished trial; a session the person has
not saved under a name goes to the autosave folder. The autosave lives as long as the window holds
that unsaved session: it is removed when the session is saved under a name or discarded, and when
the program ends normally. The window holds the autosave's lock all that time, between runs too, not
only while a run writes: so an autosave that is not locked is one no live window shows (its process
died, or the window went on to another session and left it for recovery), and only those are offered.
Removing one takes its lock first, so an autosave another process holds is never removed.

The folder is ``KERNEL_WORKBENCH_DATA_DIR/autosave`` when that is set (tests and demos keep the
person's own folder untouched), else the platform's user data folder.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from workbench.core.fs import safe_file_stem, user_folder
from workbench.core.domain.session import clean_stale_temporaries, journal_path
from workbench.core.errors import WorkbenchError
from workbench.core.io.session_lock import SessionLock, foreign_lock, lock_path, locked_by_other

def data_dir() -> Path:
    """The workbench's user data folder (``KERNEL_WORKBENCH_DATA_DIR`` overrides)."""
    return user_folder("data")


def autosave_dir() -> Path:
    """Where unsaved runs are journaled (``KERNEL_WORKBENCH_AUTOSAVE_DIR`` overrides the folder itself)."""
    override = os.environ.get("KERNEL_WORKBENCH_AUTOSAVE_DIR")
    return Path(override).expanduser() if override else data_dir() / "autosave"


def file_stem(name: str) -> str:
    """A file-name-safe stand-in for a kernel name taken from a file's content (never a path, so
    a crafted name cannot leave the autosave folder)."""
    return safe_file_stem(name, fallback="session")


def new_autosave_path(kernel: str) -> Path:
    """A fresh autosave file for a run of ``kernel`` (the folder is created)."""
    folder = autosave_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file in its place, a loop of links, a read-only parent: one line, no traceback
        what = "is not a folder" if os.path.lexists(folder) and not folder.is_dir() else (exc.strerror or str(exc))
        raise WorkbenchError(f"autosave folder {folder}: {what}; move it away (or set "
                             "KERNEL_WORKBENCH_AUTOSAVE_DIR) to run unsaved sessions") from None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = folder / f"{file_stem(kernel)}-{stamp}-{os.getpid()}.json"
    counter = 1
    while path.exists() or journal_path(path).exists():
        counter += 1
        path = folder / f"{file_stem(kernel)}-{stamp}-{os.getpid()}-{counter}.json"
    return path


def in_autosave_folder(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a file in the autosave folder, every session file of which the next
    start offers as a crashed run to recover (and removes once recovered and saved elsewhere)."""
    try:
        return Path(path).resolve().parent == autosave_dir().resolve()
    except (OSError, RuntimeError):  # a loop of links: no file of that folder either way
        return False


def refuse_autosave_folder(path: str | os.PathLike[str], flag: str = "--out") -> None:
    """Refuse, in one line, a session or export written into the autosave folder: every ``.json``
    there is offered at the window's next start as a crashed run (an export fails to recover at
    each start; a session, recovered and saved elsewhere, is removed)."""
    if in_autosave_folder(path):
        raise WorkbenchError(f"{flag} {path} is in the window's autosave folder, whose files are offered as "
                             "crashed runs to recover (and removed once recovered); name a file in another folder")


def recoverable(exclude: Path | None = None, skipped: list[str] | None = None) -> list[Path]:
    """Autosaves of runs that did not end cleanly (a journal alone counts: killed before its
    first save), newest first; those another live process still writes are left out, and so are
    those whose lock file is not this program's (a link, another program's pid file), which could
    never be recovered and, offered first, stood before every older autosave: ``skipped`` gets a
    line for each of those."""
    folder = autosave_dir()
    if not folder.is_dir():
        return []
    # (regular files only: a folder or a device named like one is no autosave, and offering it, the
    # newest, stood before every older autosave at every start)
    found = {p for p in folder.glob("*.json") if p.is_file()}
    found |= {Path(str(p)[: -len(".journal")]) for p in folder.glob("*.json.journal") if p.is_file()}
    if exclude is not None:
        found.discard(exclude)
    alive = []
    for path in found:
        if locked_by_other(path):  # (first: a live holder's lock of an earlier version holds a bare pid)
            continue
        reason = foreign_lock(path)
        if reason:
            if skipped is not None:
                skipped.append(f"autosave {path.name} not offered: its lock file {lock_path(path).name} {reason}; "
                               "remove that file to recover it")
        else:
            alive.append(path)
    return sorted(alive, key=_mtime, reverse=True)


def discard(path: Path, held: SessionLock | None = None) -> str | None:
    """Remove an autosave with its journal and lock (the session was saved elsewhere or dropped).

    Under the autosave's lock: ``held`` when the caller holds it (the window showing the session;
    it is released here), else taken here without waiting. An autosave another live process holds
    (a window that recovered it and may be running on it) is left whole: returns why, in one line;
    None once removed, with the temporary files a save killed midway left beside it. A lock file is
    only ever removed by its holder."""
    lock = held if held is not None and held.held and held.path == SessionLock(path).path else SessionLock(path)
    try:
        lock.acquire()
    except WorkbenchError as exc:  # in use elsewhere, or a lock file that is not one
        return f"autosave {path.name} kept: {exc}"
    try:
        # the journal first: one that cannot be removed (a folder at its name, a read-only place)
        # leaves the autosave whole, to be recovered, rather than half removed
        for leftover in (journal_path(path), path):
            try:
                leftover.unlink(missing_ok=True)
            except OSError as exc:
                return (f"autosave {path.name} kept: {leftover} could not be removed "
                        f"({exc.strerror or exc}); remove it by hand to drop the autosave")
        # and what a window killed during one of its saves left beside it (no later owner comes)
        clean_stale_temporaries(path)
    finally:
        lock.release()  # removes the lock file, which no one else holds
    return None


#: Where an autosave that cannot be read is moved (inside the autosave folder, not offered again).
DAMAGED_FOLDER = "damaged"


def set_aside(path: Path, journal_only: bool = False) -> Path | None:
    """Move an autosave that cannot be read (with its journal), or only its journal
    (``journal_only``: a damaged journal beside a file that reads as last saved), into the
    ``damaged`` folder beside it, so that the next offer is of what can be read: the window offers
    the newest autosave only, and a damaged newest one stood before every older, readable one at
    every start. Kept, never removed: what it holds may still be read by hand. The file and its
    journal keep one name there, so they still open together; the file moves first, and a journal
    that cannot follow brings it back. Returns the folder, or None when nothing could be moved
    (another process holds it, or the move failed: it is then offered again, as it was)."""
    lock = SessionLock(path)
    try:
        lock.acquire()
    except WorkbenchError:
        return None
    folder = path.parent / DAMAGED_FOLDER
    parts = [p for p in ([] if journal_only else [path]) + [journal_path(path)] if p.exists() or p.is_symlink()]
    try:
        folder.mkdir(exist_ok=True)
        if folder.is_symlink() or not folder.is_dir():  # a link planted there would carry them out of the folder
            return None  # (kept where it is, offered again)
        name = path.name
        if any((folder / n).exists() or (folder / n).is_symlink() for n in (name, journal_path(Path(name)).name)):
            name = f"{path.stem}.{int(time.time() * 1000)}{path.suffix}"  # an earlier one of that name: kept too
        target = folder / name
        moved: list[tuple[Path, Path]] = []
        try:
            for part in parts:
                to = journal_path(target) if part != path else target
                os.replace(part, to)
                moved.append((part, to))
        except OSError:
            for back, to in reversed(moved):  # all or nothing: a file without its journal loses trials
                os.replace(to, back)
            raise
    except OSError:
        return None
    finally:
        lock.release()
    return folder if parts else None


def _mtime(path: Path) -> float:
    for candidate in (path, journal_path(path)):
        try:
            return candidate.stat().st_mtime
        except OSError:
            continue
    return 0.0
