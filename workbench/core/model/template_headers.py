"""The headers a template's CUDA source includes from its own folder, carried along when the
template is saved elsewhere.

A template whose ``.cu`` includes ``"helper.h"`` kept beside it compiles where it lies (the
compiler searches the template's folder, :attr:`KernelTemplate.include_options`). Saved into
another folder by the editor, or written as a draft to tune, the spec and the source went and the
header stayed behind, so every candidate of the copy failed with "cannot open source file". The
headers found in the template's folder (directly or through each other, resolved as a compile
resolves them) are copied with it, each at its path under that folder. A header outside the
folder (``"../common/x.h"``, an absolute name, a ``-I`` folder) is left where it is: the copy
finds it as the original does only by absolute name or option.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import IO, TextIO, cast

from workbench.core.errors import WorkbenchError
from workbench.core.fs import atomic_write
from workbench.core.model.compiler import included_files


def own_headers(source: str, folder: Path) -> list[Path]:
    """The files ``source`` includes from ``folder`` or a folder under it, as paths relative to
    ``folder``, in the order the compile first meets them (a name the source cannot have resolved
    before compiling is a :class:`WorkbenchError`, the line a compile would fail with)."""
    if "include" not in source:
        return []
    root = folder.resolve()
    found = included_files(source, (f"--include-path={root}",))
    if isinstance(found, str):
        raise WorkbenchError(found)
    inside: list[Path] = []
    for path, _ in found:
        real = Path(path).resolve()
        if real.is_relative_to(root) and real != root:
            inside.append(real.relative_to(root))
    return inside


def copy_headers(source: str, from_folder: Path, to_folder: Path) -> list[Path]:
    """Copy :func:`own_headers` of ``source`` from ``from_folder`` into ``to_folder`` (the same
    relative paths); returns the paths written there. Nothing happens when the two folders are one.

    A file already at a header's place with the same bytes is left as it is; one with other bytes,
    or anything there that is not a regular file (a link, a folder), is not the program's to
    replace and stops the copy with one line before anything is written."""
    if from_folder.resolve() == to_folder.resolve():
        return []
    plan: list[tuple[Path, bytes]] = []
    for relative in own_headers(source, from_folder):
        data = (from_folder.resolve() / relative).read_bytes()  # (checked a regular file of bounded size)
        target = to_folder / relative
        try:
            info = os.lstat(target)
        except FileNotFoundError:
            plan.append((target, data))
            continue
        if not stat.S_ISREG(info.st_mode):
            raise WorkbenchError(f"{target}: is not a regular file, so the header {relative} the source includes "
                                 "cannot be copied there; choose another folder")
        if target.read_bytes() != data:
            raise WorkbenchError(f"{target}: exists with other content than the header {relative} the source "
                                 "includes; choose another folder, or remove that file")
    for target, data in plan:
        _write_bytes(target, data)
    return [target for target, _ in plan]


def _write_bytes(path: Path, data: bytes) -> None:
    """``data`` written whole into ``path`` (atomically, as every file the program writes)."""
    def write(handle: IO[str]) -> None:
        cast(TextIO, handle).buffer.write(data)  # (atomic_write hands a text file over its binary one)

    atomic_write(path, write)


__all__ = ["copy_headers", "own_headers"]
