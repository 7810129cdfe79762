"""The one rule every command follows before it writes a file the person named.

A command writes only into an existing folder, never over something that is not a regular file
(a device node, a folder, a symbolic link), never over its own input, and never over a file that is
not its own kind of output, unless the person says ``--force``; then the previous file is kept as
``FILE.bak`` (``FILE.2.bak``, ... when that name is taken: a backup is never written over either). What counts as "its own kind" is the command's call (``replaceable``): an export may
replace an earlier export, ``import-kt`` an earlier session; ``tune`` decides with ``--resume``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from pathlib import Path
from typing import Any, Callable, Iterable

from workbench.core.domain.session import JOURNAL_SUFFIX, has_journal, journal_path, session_path_of
from workbench.core.errors import WorkbenchError, write_error
from workbench.core.fs import read_only, read_only_refusal, resolved
from workbench.core.io.session_lock import LOCK_SUFFIX, locked_by_other

BACKUP_SUFFIX = ".bak"


#: The most numbered backups of one file looked through for a free name.
MAX_BACKUPS = 1000


def backup_path(path: str | os.PathLike[str]) -> Path:
    """Where ``path`` is kept when it is replaced: ``FILE.bak``, or, when that name is taken, the
    first free one of ``FILE.2.bak``, ``FILE.3.bak``, ... A file already there may be an earlier
    backup or a file of the person's own; either way it is not the command's to write over."""
    p = Path(path)
    free = _first_free(lambda n: p.with_name(f"{p.name}{'' if n == 1 else f'.{n}'}{BACKUP_SUFFIX}"))
    if free is None:
        raise WorkbenchError(f"{p}: {MAX_BACKUPS} backups of it exist already ({p.name}{BACKUP_SUFFIX} to "
                             f"{p.name}.{MAX_BACKUPS}{BACKUP_SUFFIX}); remove some")
    return free


def _first_free(named: Callable[[int], Path]) -> Path | None:
    """The first of ``named(1)``, ``named(2)``, ... up to :data:`MAX_BACKUPS` that neither a file nor
    a journal holds (a session saved there takes its journal's name too); None when all are taken."""
    for number in range(1, MAX_BACKUPS + 1):
        candidate = named(number)
        if not (os.path.lexists(candidate) or os.path.lexists(journal_path(candidate))):
            return candidate
    return None


def keep_apart(session: Any, path: Path) -> Path | None:
    """Save ``session`` beside ``path`` as ``STEM.unsaved.json`` (or the first free
    ``STEM.unsaved-2.json``, ...), a new file no other holds, when it could not be saved at
    ``path`` and no journal of its own keeps its trials (another run took the file and journal
    over): where they were said to be in a journal that was another run's, and were lost. None
    when even that cannot be written (a full disk)."""
    from workbench.core.domain.session import save_session

    candidate = _first_free(lambda n: path.with_name(f"{path.stem}.unsaved{'' if n == 1 else f'-{n}'}.json"))
    if candidate is None:
        return None
    try:  # the name taken first, so that nothing that appeared there since is written over
        os.close(os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    except OSError:
        return None
    try:
        save_session(session, candidate)
    except (WorkbenchError, OSError):
        with contextlib.suppress(OSError):
            os.unlink(candidate)
        return None
    return candidate


def check_folder(path: Path, flag: str = "--out") -> None:
    """The folder the file goes into must exist: a typo in a path is an error, not a new tree."""
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        if os.path.lexists(folder):  # (a file, or a link to nothing)
            raise WorkbenchError(f"{flag} {path}: {folder} is not a folder")
        raise WorkbenchError(f"{flag} {path}: folder {folder} does not exist")


def refuse_beside_journal(path: Path, flag: str = "--out", recover: str = "tune --resume recovers them first",
                          output: str = "an export") -> None:
    """An export (or another ``output``, a screenshot) may not be written where a run's journal
    waits: the journal's trials are read with the session file beside it, and a file of another
    kind in its place would leave them unreadable. ``recover``: how the person takes them in, in
    the front end's words (a run still writing the file is said as such: sending the person to
    recover it, the run's lock then refused)."""
    if has_journal(path):
        what = "a run writing that session is going (its lock is held)" if locked_by_other(path) else recover
        raise WorkbenchError(f"{flag} {path}: the journal of a run is beside it ({journal_path(path).name}); "
                             f"{output} there would leave those trials unreadable; {what}, or choose another name")


#: Names this program keeps beside a session file ``FILE`` while a run writes it: ``FILE.journal``
#: (every finished trial, for recovery) and ``FILE.lock`` (one writer at a time).
SIDECAR_SUFFIXES = (JOURNAL_SUFFIX, LOCK_SUFFIX)


def check_not_sidecar(path: Path, flag: str = "--out") -> None:
    """Refuse a name the program keeps beside a session as an output: whatever is written there
    would be taken for a journal or a lock (a session's ``FILE.journal`` is read as its newest
    trials, and naming one stood for the session ``FILE`` itself, which was written over; a
    ``FILE.lock`` is truncated and removed by the next run of ``FILE``)."""
    suffix = next((s for s in SIDECAR_SUFFIXES if path.name.endswith(s) and len(path.name) > len(s)), None)
    if suffix is None:
        return
    owner = path.with_name(path.name[: -len(suffix)])
    kind = "journal" if suffix == JOURNAL_SUFFIX else "lock"
    raise WorkbenchError(f"{flag} {path}: names ending in {suffix} are the {kind} this program keeps beside a "
                         f"session ({owner.name}{suffix} beside {owner.name}); choose another name")


#: Names of code a run may read (kernel sources, headers, Python benchmarks and template specs).
CODE_SUFFIXES = (".cu", ".cuh", ".h", ".hpp", ".py", ".kernel.json")


def check_session_name(path: Path, flag: str = "--out") -> None:
    """Refuse a code file's name for a session file (JSON), existing or not: written into a
    template folder, a session named ``run.py`` or ``k.cu`` is taken for a template's code by every
    later run of that folder (a spec that does not load), and an existing source is the code a run
    reads (``--force`` moved it to ``.bak`` and the run then failed to read it). Nor, for a new
    file, a compressed file's name: a session is plain JSON; nor a name that leaves no room for
    the journal and lock kept beside a session (:func:`check_name_fits`)."""
    check_name_fits(Path(path), flag)
    suffix = next((s for s in CODE_SUFFIXES if Path(path).name.endswith(s)), None)
    if suffix is not None:
        raise WorkbenchError(f"{flag} {path}: a name ending in {suffix} is code's (a kernel source, a header, a "
                             "Python benchmark or template spec), and a session is a JSON file; choose another name")
    packed = next((s for s in PACKED_SUFFIXES if Path(path).name.lower().endswith(s)), None)
    if packed is not None and not os.path.lexists(path):  # (one written so before is continued as it is)
        raise WorkbenchError(f"{flag} {path}: a session is written as plain JSON, and a name ending in {packed} "
                             "says it is compressed (a program that unpacks it fails, and a session is read "
                             "uncompressed); name it .json")


#: Names of compressed files: a session (plain JSON) is not written under one.
PACKED_SUFFIXES = (".gz", ".bz2", ".xz", ".zst", ".zip")


#: Bytes the longest name written beside an output adds to its name: the temporary file the
#: journal is started through, ``.NAME.journal.XXXXXXXX.tmp`` (the output's own adds 14, the lock 5,
#: a backup 4).
SIBLING_NAME_EXTRA = 22


def check_name_fits(path: Path, flag: str = "--out") -> None:
    """Refuse a name that fits the file system but leaves no room for the files written beside it
    (its temporary file, journal, lock, backup): a session named with 250 characters was measured
    for, then could not be journalled or saved, in a raw "File name too long" line."""
    folder = path.parent if str(path.parent) else Path(".")
    try:
        most = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):
        most = 255
    length = len(os.fsencode(path.name))
    if length + SIBLING_NAME_EXTRA > most:
        raise WorkbenchError(f"{flag}: the file name is {length} bytes long; the files written beside it "
                             f"(NAME.journal, NAME.lock and their temporary files) need up to "
                             f"{SIBLING_NAME_EXTRA} bytes more, and this file system allows {most} per name: at most "
                             f"{most - SIBLING_NAME_EXTRA}")


def check_regular_or_absent(path: Path, flag: str = "--out") -> bool:
    """True when ``path`` exists as a regular file, False when absent; an error for anything else,
    and for the names of a session's journal and lock (:func:`check_not_sidecar`)."""
    check_not_sidecar(Path(path), flag)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise WorkbenchError(f"{flag} {path}: cannot inspect ({exc.strerror or exc})") from None
    if stat.S_ISLNK(info.st_mode):
        raise WorkbenchError(f"{flag} {path}: is a symbolic link; name the file it points to")
    if not stat.S_ISREG(info.st_mode):
        raise WorkbenchError(f"{flag} {path}: is not a regular file; refusing to replace it")
    return True


def check_one_name(session_path: Path) -> None:
    """Refuse to continue a session whose file (or journal) has other names, hard links elsewhere:
    the lock goes by the name, so a run under another name would not see this one and both would
    write one file; and a save renames a new file over this name alone, so the names would part,
    each with some of the trials. (Replacing such a file is another matter: its old content stays
    under the other names, as a backup is kept of it here.)"""
    session = session_path_of(session_path)
    for path in (session, journal_path(session)):
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
            raise WorkbenchError(f"{path}: the file has {info.st_nlink} names (hard links); a run continuing it under "
                                 "one of them would part it from the others and would not see a run under another; "
                                 "copy it (cp) and continue the copy")


def check_writable(path: Path, instead: str | None = "continue into another file with --out OTHER") -> None:
    """Refuse, in one line (with what to do ``instead``), to write a file the person made
    read-only (see :func:`workbench.core.fs.read_only`): runs check it before they start, so they
    never measure for a session they cannot save, nor replace the file by renaming over it."""
    if read_only(path):
        raise read_only_refusal(path, instead)


#: What names one file however it is reached (see :func:`file_key`).
FileKey = tuple[int, int] | Path


def file_key(path: str | os.PathLike[str]) -> FileKey:
    """A key equal for every name of one file (a symbolic or hard link, another spelling of its
    path): its device and inode where it can be read, else its resolved path."""
    try:
        status = os.stat(path)
    except (OSError, ValueError):
        return resolved(path)
    return (status.st_dev, status.st_ino)


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether ``a`` and ``b`` are one existing file (False when either is missing)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def same_place(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether ``a`` and ``b`` name one file, existing (a link, another spelling) or not yet (the
    same path once resolved): an output about to be written over an input, before it exists."""
    if same_file(a, b):
        return True
    try:
        return Path(a).resolve() == Path(b).resolve()
    except (OSError, RuntimeError):  # (a symbolic link loop: RuntimeError before Python 3.13)
        return False


def prepare_output(
    path: str | os.PathLike[str],
    *,
    force: bool,
    inputs: Iterable[str | os.PathLike[str]] = (),
    replaceable: Callable[[Path], bool] = lambda _: False,
    pristine: Callable[[Path], bool] = lambda _: True,
    what: str = "output",
    flag: str = "--out",
    force_flag: str = "--force",
) -> Path | None:
    """Check ``path`` as a command's output; with ``force``, keep an existing file as ``.bak``.

    ``replaceable(path)``: the file is this command's own kind of output (an earlier run's), which
    is replaced without ``--force``; ``pristine(path)``: such a file is as the command wrote it. One
    that is not (edited since) is kept as ``.bak`` before it is replaced, so the edits survive.
    Returns the backup it kept, if any. Raises :class:`WorkbenchError` with one line that says what
    is there and how to proceed (``force_flag``: how the caller says "replace it", the command
    line's ``--force``, a function's ``force=True``); nothing is written or moved when it raises.
    """
    p = Path(path)
    check_folder(p, flag)
    if not check_regular_or_absent(p, flag):
        return None
    # made read-only by the person: kept as it is, even an earlier output of this command, even with
    # --force (the write renames over it, which the file's mode does not stop)
    check_writable(p, f"write to another {flag}" if flag.startswith("--") else "write to another file")
    if any(same_file(p, source) for source in inputs):
        if not force:
            raise WorkbenchError(f"{flag} {p}: is this command's input; writing over it would lose it "
                                 f"({force_flag} replaces it, keeping it as {backup_path(p).name})")
    elif replaceable(p):
        return None if pristine(p) else keep_backup(p, flag)
    elif not force:
        raise WorkbenchError(f"{flag} {p}: exists and is not a {what}; {force_flag} replaces it "
                             f"(keeping it as {backup_path(p).name})")
    return keep_backup(p, flag)


def keep_backup(path: Path, flag: str = "--out") -> Path:
    """Copy ``path`` to its :func:`backup_path` (a name no file has: nothing is written over, not
    even a file that took the name since it was chosen). A copy that fails part way (a full disk)
    is removed: a cut-off ``FILE.bak`` with the original's time looked like the backup it is not,
    and the next save's backup went to ``FILE.2.bak``."""
    backup = backup_path(path)
    try:
        # opened without waiting, and copied only as a regular file: a FIFO put at the path during
        # a run held the final save until someone wrote into it
        handle = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            os.close(handle)
            raise shutil.SpecialFileError(f"{path} is not a regular file")
        with os.fdopen(handle, "rb") as source:
            target = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
            try:
                with os.fdopen(target, "wb") as copy:
                    shutil.copyfileobj(source, copy)
                    copy.flush()
                    os.fsync(copy.fileno())
                shutil.copystat(path, backup)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(backup)
                raise
    except OSError as exc:
        raise write_error(f"{flag} {path}: cannot keep a backup as {backup.name} ({exc.strerror or exc})", exc) from None
    return backup


def backups_of(path: Path) -> set[Path]:
    """The backups beside ``path`` (``FILE.bak``, ``FILE.2.bak``, a journal kept apart as
    ``STEM.journal-only...``): what a save that replaced it kept, found by comparing before and
    after, so that the save can say where the replaced file went."""
    import glob

    try:
        folder = path.parent
        return {*folder.glob(glob.escape(path.name) + "*.bak*"), *folder.glob(glob.escape(path.stem) + ".journal-only*")}
    except OSError:
        return set()
