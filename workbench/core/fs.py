"""Reading files people hand each other, and naming files after what they contain.

Session and cache files come from other people. Reading one must end quickly with a one-line
answer whatever the path names: a device such as ``/dev/zero`` or a FIFO would otherwise be read
until memory runs out, and a huge file would be parsed for minutes. So reads are capped by size
and only regular files are read. File names derived from file content (a kernel name in an
autosave name) are reduced to a safe stem, so that no crafted name can point outside its folder.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import tempfile
import unicodedata
from pathlib import Path
from typing import IO, Callable, Literal

from workbench.core.errors import UnreadableFile, WorkbenchError, WriteFailed

#: Largest session or cache file read (and largest decompressed cache): far above any real one
#: (100,000 trials take about 30 MB), far below what would exhaust memory when parsed.
MAX_FILE_BYTES = 512 * 1024 * 1024
#: Longest stem :func:`safe_file_stem` returns (file systems allow 255 bytes per name).
MAX_STEM_CHARS = 80

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


#: The application's folder name in the person's data, configuration and cache folders.
APP_FOLDER = "kernel-workbench"


def user_folder(kind: Literal["data", "config", "cache"], default_under: str = "") -> Path:
    """The person's ``kind`` folder of this application: ``KERNEL_WORKBENCH_<KIND>_DIR`` when set
    (tests, demos and automated runs keep everything in a folder of their own), else the
    platform's folder (platformdirs) with ``default_under`` appended. A ``~`` in the variable is
    the home folder, as a shell would read it: a service or container environment file does not
    expand it, and it must not become a folder named ``~`` under the working directory."""
    override = os.environ.get(f"KERNEL_WORKBENCH_{kind.upper()}_DIR")
    if override:
        return Path(override).expanduser()
    import platformdirs

    folder = {"data": platformdirs.user_data_dir, "config": platformdirs.user_config_dir,
              "cache": platformdirs.user_cache_dir}[kind](APP_FOLDER, appauthor=False)
    return Path(folder) / default_under if default_under else Path(folder)


def open_regular(path: str | os.PathLike[str]) -> IO[bytes]:
    """``open(path, "rb")`` for a regular file only, opened without blocking and checked on the
    open descriptor: a plain open of a FIFO planted at a file's name waits for a writer for ever,
    and a check of the name before opening could be raced. Raises OSError (EISDIR for a folder,
    EINVAL for a device, pipe or socket) otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket, or a device with nothing behind it: not "no such device"
            raise OSError(errno.EINVAL, "not a regular file (a device, pipe or socket)", str(path)) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise OSError(errno.EISDIR, "is a folder", str(path))
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file (a device, pipe or socket)", str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_capped(path: str | os.PathLike[str], what: str = "file", limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes, else a one-line :class:`UnreadableFile`.

    The type and size are checked on the open file (:func:`open_regular`: a device, FIFO or socket
    is refused, never read); the read itself stops at ``limit + 1`` bytes in case the file grows.
    """
    p = Path(path)
    try:
        handle = open_regular(p)
    except ValueError:  # a NUL character, which no file name holds (a name read from a file can)
        raise UnreadableFile(str(p).replace("\x00", "\\x00"), "not a file name (it holds a NUL character)") from None
    except FileNotFoundError:
        raise UnreadableFile(p, "no such file") from None
    except OSError as exc:
        if exc.errno == errno.EISDIR:
            raise UnreadableFile(p, f"is a folder, not a {what}") from None
        if exc.errno == errno.EINVAL:
            raise UnreadableFile(p, f"not a regular file (a device, pipe or socket), not a {what}") from None
        raise UnreadableFile(p, f"cannot read ({exc.strerror or exc})") from None
    with handle:
        size = os.fstat(handle.fileno()).st_size
        if size > limit:
            raise UnreadableFile(p, f"{size:,} bytes is larger than the {limit:,}-byte limit for a {what}")
        try:
            data = handle.read(limit + 1)
        except OSError as exc:
            raise UnreadableFile(p, f"cannot read ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise UnreadableFile(p, f"larger than the {limit:,}-byte limit for a {what}")
    return data


def read_utf8(path: str | os.PathLike[str], what: str = "file", limit: int = MAX_FILE_BYTES) -> str:
    """The text of a regular UTF-8 file of at most ``limit`` bytes (:func:`read_capped`), without a
    leading byte-order mark, else a one-line :class:`UnreadableFile`: a source someone hands over may be UTF-16, Latin-1 or binary, and
    the codec's own error (``'utf-8' codec can't decode byte 0xff in position 0``) names neither
    the file nor what to do."""
    data = read_capped(path, what, limit)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise UnreadableFile(Path(path), f"not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line}); "
                                         f"save the {what} as UTF-8") from None
    # A byte-order mark, which some editors put at the start of UTF-8 files, is no part of the text
    # (the JSON parser refused it as "Unexpected UTF-8 BOM (decode using utf-8-sig)").
    return text[1:] if text.startswith("\ufeff") else text


def resolved(path: str | os.PathLike[str]) -> Path:
    """``Path(path).resolve()``, or the absolute path when its links cannot be followed.

    Python 3.11's ``resolve`` raises RuntimeError on a symbolic link that points at itself (and
    OSError on some others), so such a link planted in a folder would end a listing with a
    traceback; the read that follows refuses it in one line (``Too many levels of symbolic links``)."""
    try:
        return Path(path).resolve()
    except (RuntimeError, OSError):
        return Path(os.path.abspath(path))


def fixed_path(path: str | os.PathLike[str]) -> Path:
    """``path`` with its folder resolved now, as the system reads it now (working folder, links,
    ``..``), and its own name kept (a link there stays a link, to be refused as one): a file a run
    writes for minutes stays the file it was asked for when a candidate changes or removes the
    working folder, and every spelling of one file is one path. Not ``os.path.abspath``, which
    drops ``link/..`` as text where the system goes up from the link's target (another file,
    another session written over); and a path with ``..`` left in it was normalised so later, by
    ``tempfile``, which then wrote beside another folder."""
    given = Path(path)
    return Path(os.path.realpath(given.parent)) / given.name


def current_umask() -> int:
    """The process's file-creation mask.

    Read from ``/proc/self/status`` where there is one; elsewhere by setting it and putting it
    back at once (a file another thread creates in between would get the default mask).
    """
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def silence_hung_up_output(fds: tuple[int, ...] = (1, 2)) -> list[int]:
    """Point those of ``fds`` that can no longer be written (a terminal that hung up) at /dev/null;
    returns the ones it changed.

    Why: after the terminal closes or the ssh connection drops (SIGHUP) every write to it fails
    with EIO, and the few lines a stopping program still writes (its last progress line,
    "terminated") would turn its orderly stop into a traceback and a wrong exit status. A
    zero-length write tells: it fails that way only there; a live terminal, a file or a pipe
    keep what is written to them."""
    changed: list[int] = []
    for fd in fds:
        try:
            os.write(fd, b"")
        except OSError as exc:
            if exc.errno != errno.EIO:
                continue
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
            except OSError:
                continue
            try:
                os.dup2(devnull, fd)
                changed.append(fd)
            except OSError:
                pass
            finally:
                os.close(devnull)
    return changed


def read_only(path: str | os.PathLike[str]) -> bool:
    """Whether the existing regular file at ``path`` is one this process must not write: its mode
    lets nobody write it (someone made it read-only; root, who could write it anyway, respects that
    too), its owner is us and the mode does not let us, or the system refuses us (another user's
    file, a read-only mount). A save replaces a file by renaming a new one over it, which the
    file's own mode does not stop, so writers ask here first. False when nothing is there."""
    try:
        info = os.stat(path)
    except OSError:
        return False
    if not stat.S_ISREG(info.st_mode):
        return False
    if not info.st_mode & 0o222:
        return True
    euid = getattr(os, "geteuid", None)
    if euid is not None and info.st_uid == euid() and not info.st_mode & stat.S_IWUSR:
        return True
    return not os.access(path, os.W_OK)


def read_only_refusal(path: str | os.PathLike[str], instead: str | None) -> WorkbenchError:
    """The refusal to write the read-only file at ``path``: input to fix (exit 2) where the person
    made the file read-only, a write the machine refuses (:class:`WriteFailed`, exit 1) where its
    file system is mounted read-only, as every later write there is."""
    text = f"{path} {read_only_text(path, instead)}"
    return WriteFailed(text) if _on_read_only_mount(path) else WorkbenchError(text)


def _on_read_only_mount(path: str | os.PathLike[str]) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & getattr(os, "ST_RDONLY", 1))
    except (OSError, AttributeError):  # (no statvfs on some systems: the file's own mode is what is known)
        return False


def read_only_text(path: str | os.PathLike[str], instead: str | None) -> str:
    """What to say of the read-only file at ``path`` (see :func:`read_only`), with what to do
    ``instead`` of making it writable: on a read-only file system no change of the file's mode
    helps, and "make it writable" sent people to chmod."""
    if _on_read_only_mount(path):
        return "is on a read-only file system" + (f"; {instead}" if instead else "")
    return "is read-only; make it writable" + (f" or {instead}" if instead else "")


def safe_file_stem(text: str, fallback: str = "untitled") -> str:
    """A file-name stem from arbitrary text: ASCII letters, digits, ``.``, ``_`` and ``-`` only.

    Path separators, ``..``, control characters, leading dots (hidden files) and anything else
    outside that set become ``_`` or are dropped, so the stem can only name a file inside the
    folder it is joined to. Accents are folded (``é`` -> ``e``); the result is at most
    :data:`MAX_STEM_CHARS` long and never empty (``fallback`` when nothing usable remains).
    """
    folded = unicodedata.normalize("NFKD", str(text)).encode("ascii", "ignore").decode("ascii")
    stem = _UNSAFE.sub("_", folded).strip("._-")
    stem = re.sub(r"\.{2,}", ".", stem)[:MAX_STEM_CHARS].rstrip("._-")
    return stem or fallback


def process_exists(pid: int) -> bool:
    """Whether ``pid`` names a running process (someone else's counts: a process we may not signal
    exists; so does a pid too large to ask about, rather than being taken for gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):
        return True
    return True


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """:func:`atomic_write` of ``data`` as it is (a picture encoded in memory): a full disk leaves
    what was at ``path`` as it was, where a picture saved in place was cut off over it."""
    atomic_write(path, lambda text: text.buffer.write(data))  # type: ignore[attr-defined]


def atomic_write(path: Path, write: Callable[[IO[str]], object]) -> None:
    """Write through ``write(file)`` into a temp file beside ``path``, fsync, then rename over it.

    The file keeps the permissions and, where the owner may give it, the group it had (a shared
    file saved over stays shared); a new one gets what a plain ``open`` would give it (0666 less the
    umask), never ``mkstemp``'s private 0600. Every file the program writes whole (sessions,
    exports, templates) is written so."""
    directory = path.parent if str(path.parent) else Path(".")
    directory.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:  # said of the file asked for: the temp file's name is none of the person's
        said = exc.strerror
        if exc.errno == errno.ENAMETOOLONG:  # (the name itself may be legal: the temp file's is longer)
            said = f"{said} (a save writes it first as .NAME.XXXXXXXX.tmp beside it: shorten the name)"
        raise OSError(exc.errno, said, str(path)) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        try:
            before = os.stat(path)
        except FileNotFoundError:
            mode = 0o666 & ~current_umask()  # what a plain open() would create
        else:
            mode = before.st_mode & 0o777
            if hasattr(os, "chown") and before.st_gid != os.stat(tmp).st_gid:
                try:  # a group the owner belongs to; any other is not ours to give
                    os.chown(tmp, -1, before.st_gid)
                except OSError:  # the new file is in our own group: it gets no more than a new file would
                    mode = (mode & ~0o070) | (mode & 0o666 & ~current_umask() & 0o070)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(directory)
