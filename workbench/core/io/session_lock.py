"""One writer per session file: an advisory lock beside it that names its owner.

Two runs appending to one journal interleave their lines and the result cannot be read, so a run
takes ``FILE.lock`` before it touches ``FILE`` or its journal, and a second run stops at once with
"FILE is in use by pid N".

The lock is ``fcntl.flock`` on the lock file: the kernel releases it when its owner dies, however
it dies, so a stale lock never blocks anyone (the leftover file is taken over and removed by the
next owner). ``filelock`` would do the locking, but it truncates the lock file on every attempt,
which erases the owner's pid that the message needs.
"""

from __future__ import annotations

import errno
import os
import stat
import weakref
from pathlib import Path
from types import TracebackType

from workbench.core.errors import WorkbenchError, write_error
from workbench.core.fs import fixed_path, process_exists

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: runs are not protected against a second writer
    fcntl = None  # type: ignore[assignment]

LOCK_SUFFIX = ".lock"


class SessionInUse(WorkbenchError):
    """Another live process writes this session."""


def lock_path(session_path: str | os.PathLike[str]) -> Path:
    """``out.json`` -> ``out.json.lock``; naming the journal (``out.json.journal``) gives the same lock."""
    p = Path(session_path)
    name = p.name[: -len(".journal")] if p.name.endswith(".journal") else p.name
    return p.with_name(name + LOCK_SUFFIX)


#: The first words of a lock file this program writes; then the owner's pid.
LOCK_MARK = "kernel-workbench session lock, pid "


def _open_lock_file(path: Path) -> tuple[int, bool]:
    """Open the lock file, creating it when there is none (then ``True``), never through a
    symbolic link and never anything but a regular file: a planted link must not make us truncate
    the file it points to."""
    base = os.O_RDWR | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        try:
            return _regular(path, os.open(path, base | os.O_CREAT | os.O_EXCL, 0o644)), True
        except FileExistsError:
            pass
        try:
            return _regular(path, os.open(path, base)), False
        except FileNotFoundError:  # removed by its owner between the two opens: the caller tries again
            raise _Vanished() from None
    except _Vanished:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise WorkbenchError(f"{path}: is a symbolic link, not a lock file; remove it") from None
        raise write_error(f"{path}: cannot create the lock file ({exc.strerror or exc})", exc) from None


def _no_progress() -> int:
    raise OSError(errno.ENOSPC, "no space left on device")


class _Vanished(Exception):
    """The lock file was there, then gone before we opened it (its owner released it)."""


def _regular(path: Path, fd: int) -> int:
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise WorkbenchError(f"{path}: is not a regular file, not a lock file; remove it")
    return fd


def _let_go(fd: int, path: Path, owner: int | None = None) -> None:
    """Remove the lock file ``fd`` holds at ``path`` (only that file: one put there meanwhile stays)
    and close it, which lets go of the lock. ``owner``: the pid that took it; a process forked from
    it (which inherits the finalizer, see :meth:`SessionLock.acquire`) leaves the owner's lock alone."""
    if owner is not None and os.getpid() != owner:
        return
    try:
        if os.path.samestat(os.fstat(fd), os.stat(path, follow_symlinks=False)):
            os.unlink(path)
    except OSError:
        pass
    os.close(fd)


class SessionLock:
    """Exclusive, non-blocking ownership of a session file for as long as a run writes it."""

    def __init__(self, session_path: str | os.PathLike[str]) -> None:
        self.session_path = Path(session_path)
        # Fixed where the lock is made: a relative path read again at release named another file
        # (or none) once the working folder changed or was removed meanwhile.
        self.path = fixed_path(lock_path(session_path))
        self._fd: int | None = None
        self._finalizer: weakref.finalize | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> "SessionLock":
        """Take the lock or raise :class:`SessionInUse` naming the owner's pid."""
        if self._fd is not None or fcntl is None:
            return self
        while True:
            try:
                fd, created = _open_lock_file(self.path)
            except _Vanished:  # removed between our two opens: try again
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                owner = _read_owner(fd)
                os.close(fd)
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    who = f"pid {owner}" if owner else "another process"
                    if owner == str(os.getpid()):  # a script's own run, prepared and not run (or running)
                        who += (" (this process: a run of it still holds the file; let it end, or call "
                                "release() on a run prepared and not run)")
                    raise SessionInUse(f"{self.session_path} is in use by {who}") from None
                raise WorkbenchError(f"{self.path}: cannot lock ({exc.strerror or exc})") from None
            # The previous owner may have removed the file between our open and our lock: then we
            # hold a lock on a file nobody else will open. Start again on the file now at the path.
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        foreign = "" if created else _foreign_content(fd)
        if foreign:  # a file of the person's own that happens to have the lock's name: not ours to empty
            os.close(fd)
            raise WorkbenchError(f"{self.path}: {foreign}, not a lock of this program; a run of {self.session_path.name} "
                                 f"keeps its lock there: move that file away or name the session otherwise")
        try:
            os.ftruncate(fd, 0)
            line = f"{LOCK_MARK}{os.getpid()}\n".encode()
            written = 0
            while written < len(line):  # a short write on a nearly full disk: the rest, or an error
                written += os.write(fd, line[written:]) or _no_progress()
        except OSError as exc:  # a full disk, a quota: no lock, and no empty file left in the way
            self._fd = fd
            self.release()
            raise write_error(f"{self.path}: cannot write the lock file ({exc.strerror or exc})", exc) from None
        self._fd = fd
        # Let go when the lock is dropped unreleased (a script's run prepared and never run): the
        # file stayed locked by its own process until that process ended, and every later start
        # on it in a notebook was refused.
        self._finalizer = weakref.finalize(self, _let_go, fd, self.path, os.getpid())
        return self

    def release(self) -> None:
        """Remove the lock file and let go (removal first, so no one locks a file about to vanish).
        Only the file this lock holds is removed: one put at the path meanwhile stays."""
        if self._fd is None:
            return
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        _let_go(self._fd, self.path)
        self._fd = None

    def lent(self) -> "SessionLock":
        """A handle on this held lock for someone its holder lends it to (a window lends the lock
        of its unsaved session's autosave to each run it starts): they write under it, and their
        ``release`` leaves it with the holder, so there is no moment the file lies unlocked
        between the run's end and the holder taking it again."""
        if self._fd is None and fcntl is not None:
            raise WorkbenchError(f"{self.session_path}: cannot lend a lock that is not held")
        return _LentLock(self)

    def __enter__(self) -> "SessionLock":
        return self.acquire()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.release()


class _LentLock(SessionLock):
    """A borrowed handle on a held :class:`SessionLock` (see :meth:`SessionLock.lent`)."""

    def __init__(self, owner: SessionLock) -> None:
        super().__init__(owner.session_path)
        self._owner = owner

    @property
    def held(self) -> bool:
        return self._owner.held

    def acquire(self) -> "SessionLock":
        if not self._owner.held and fcntl is not None:
            raise WorkbenchError(f"{self.session_path}: the lock lent was given back by its holder")
        return self

    def release(self) -> None:
        """The holder keeps the lock."""


def _open_probe(path: Path) -> int:
    """A read-only descriptor of ``path`` for looking at a lock file without taking it: never through
    a link (ELOOP), and without blocking, since a FIFO planted at the lock's name would hold a plain
    open until some writer came (the window's start, listing autosaves, hung there)."""
    return os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))


def foreign_lock(session_path: str | os.PathLike[str]) -> str:
    """Why the file at the session's lock name is no lock of this program's ('' when it is one, or
    when there is none), said as the end of a sentence: a link, something not a regular file, or
    content of another program (see :func:`_foreign_content`). Only reads; takes no lock."""
    try:
        fd = _open_probe(lock_path(session_path))
    except FileNotFoundError:
        return ""
    except OSError as exc:
        return "is a symbolic link" if exc.errno == errno.ELOOP else f"cannot be opened ({exc.strerror or exc})"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "is not a regular file"
        return _foreign_content(fd)
    finally:
        os.close(fd)


def locked_by_other(session_path: str | os.PathLike[str]) -> bool:
    """True while another live process (or another lock in this one) holds the session's lock:
    tells a crashed run's autosave from one a running window still writes. Only probes: it writes
    nothing and removes nothing, so a writer taking the lock meanwhile is never disturbed."""
    if fcntl is None:
        return False
    try:
        fd = _open_probe(lock_path(session_path))
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing drops a lock the probe took
    return False


def _foreign_content(fd: int) -> str:
    """Why an existing file ``fd``, whose lock we now hold, is not a lock file left by a run of
    this program ('' when it is one), said as the start of a sentence.

    A lock of ours is marked (:data:`LOCK_MARK`); one written before the mark held the bare pid of
    its owner, who must then be gone (a live owner would hold the lock). So a bare pid of a live
    process is another program's pid file. An empty file is taken for ours: a lock is empty from
    its creation until its creator holds it and writes its line, and another run may take it in
    between (the creator then meets a lock in use)."""
    info = os.fstat(fd)
    if info.st_nlink > 1:
        return "has another name too (a hard link)"
    try:
        head = os.pread(fd, 96, 0)
    except OSError:
        return "cannot be read"
    text = head.decode("ascii", "replace")
    if text.startswith(LOCK_MARK) and text[len(LOCK_MARK):].rstrip("\n").isdigit():
        return ""
    if len(head) <= 32 and text.rstrip("\n").isdigit():
        pid = int(text)
        return "holds the pid of a running process" if pid > 0 and process_exists(pid) else ""
    return "" if not head else "holds other data"


def _read_owner(fd: int) -> str:
    try:
        text = os.pread(fd, 96, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""
    text = text[len(LOCK_MARK):] if text.startswith(LOCK_MARK) else text
    return text if text.isdigit() else ""
