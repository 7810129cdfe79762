"""Rules for the files a command is given: names that denote a folder, ``--out -``, a session given
twice under two names, and where an export may write."""

from __future__ import annotations

import argparse
import sys
import os
from pathlib import Path
from typing import Any, Sequence

from workbench.cli.parser import STDOUT
from workbench.core.errors import WorkbenchError, printable

#: The arguments that name one file each (lists: several), with the flag a message calls them by.
_FILE_ARGUMENTS = (("out", "--out"), ("file", "session"), ("sessions", "session"), ("portability", "--portability"),
                   ("cache", "cache"), ("session", "session"), ("replay", "--replay"), ("screenshot", "--screenshot"),
                   ("resume", "--resume"))


def check_file_names(args: argparse.Namespace) -> None:
    """A file argument that names a folder by its form (``''``, ``.``, ``..``, ``/``, ``dir/``) is
    refused before anything reads or writes: ``--out sub/`` wrote a file called ``sub``, since a
    path object drops the slash, and ``show .`` was a traceback. So is an empty folder, strategy
    or GPU model name."""
    for name, flag in _FILE_ARGUMENTS:
        given = getattr(args, name, None)
        for value in given if isinstance(given, list) else [given]:
            if not isinstance(value, str) or value == STDOUT:
                continue
            if not value.strip():
                raise WorkbenchError(f"{flag}: an empty name names no file")
            if os.path.basename(value) in ("", ".", ".."):  # (Path("sub/.").name is "sub")
                raise WorkbenchError(f"{flag} {value}: names a folder; name a file")
    for folder in getattr(args, "kernel_dir", None) or []:
        if not folder.strip():  # resolved, '' was the current folder, whose code a run then loaded
            raise WorkbenchError("--kernel-dir: an empty name names no folder (. for the current one)")
    for name, flag, what in (("strategy", "--strategy", "strategy"), ("gpu_model", "--gpu-model", "GPU model")):
        value = getattr(args, name, None)
        if isinstance(value, str) and not value.strip():  # it was taken for "not given": the default ran unsaid
            raise WorkbenchError(f"{flag}: an empty name names no {what}")


def file_out(out: str | None, flag: str = "--out") -> None:
    """``--out -`` means standard output only where a command can print its result (export)."""
    if out == STDOUT:
        raise WorkbenchError(f"{flag} -: this command writes a file, not standard output "
                             "(./- names a file called '-')")


def check_distinct(paths: Sequence[str]) -> None:
    """Refuse a session file given twice (under any name): an export pools the trials of the
    sessions of one device, so its trials would count twice in the pick and the notes."""
    import hashlib
    import stat

    from workbench.core.fs import MAX_FILE_BYTES, open_regular

    seen: dict[Any, str] = {}
    by_size: dict[int, list[str]] = {}
    for path in paths:
        try:  # one file under two names: a symbolic or a hard link
            info = os.stat(path)
            key: Any = (info.st_dev, info.st_ino)
        except OSError:
            info, key = None, os.path.realpath(path)  # unreadable: the session loader says why, next
        if key in seen:
            same = f"{path} is given twice" if seen[key] == path else f"{seen[key]} and {path} are the same file"
            raise WorkbenchError(f"{same}; give each session once")
        seen[key] = path
        # a copy holds the same trials as its original: compared only among regular files of one
        # size (never opening a pipe or a device, which the session loader refuses next)
        if info is not None and stat.S_ISREG(info.st_mode) and info.st_size <= MAX_FILE_BYTES:
            by_size.setdefault(info.st_size, []).append(path)
    for same_size in (group for group in by_size.values() if len(group) > 1):
        contents: dict[str, str] = {}
        for path in same_size:
            try:
                hashed = hashlib.sha256()
                with open_regular(path) as handle:
                    for chunk in iter(lambda: handle.read(1 << 20), b""):
                        hashed.update(chunk)
                digest = hashed.hexdigest()
            except OSError:
                continue
            if digest in contents:
                raise WorkbenchError(f"{contents[digest]} and {path} hold the same session (identical files); "
                                     "give each session once")
            contents[digest] = path


def note_runs_writing(paths: Sequence[str | os.PathLike[str]], what: str) -> None:
    """A ``note:`` line for each session a run is still writing (its lock is held by a live
    process): ``what`` (an export, a continued copy) is then of the trials saved so far, which
    went unsaid, and a recommendation shipped from a half-finished run looked like a final one."""
    from workbench.core.io.session_lock import locked_by_other

    for path in paths:
        if locked_by_other(path):
            # (a lock says only that a live process holds the file: a run, or a window that has it
            # open, idle or not; "a run that is still going" was said of an idle window too)
            print(f"note: {printable(str(path))} is open in a run or window that may still add trials to it: {what} "
                  "is of the trials it holds now; do it again once that has ended for all of them", file=sys.stderr)


def check_export_output(path: Path, args: argparse.Namespace, **rules: Any) -> Path | None:
    """Where an export may write: not where a killed run's journal waits, not into the autosave
    folder, and over a file there only as :func:`prepare_output` allows (``rules``: its
    ``replaceable``, ``pristine`` and ``what``). Returns the backup it kept, if any."""
    from workbench.core.io.output_files import prepare_output, refuse_beside_journal
    from workbench.runner.autosave import refuse_autosave_folder

    refuse_beside_journal(path)
    refuse_autosave_folder(path)
    return prepare_output(path, force=args.force, inputs=args.sessions, **rules)
