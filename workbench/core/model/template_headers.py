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
from typing import IO, Any, Collection, Mapping, Sequence, TextIO, cast

from workbench.core.domain.kernel_spec import SPEC_SUFFIX
from workbench.core.errors import WorkbenchError
from workbench.core.fs import atomic_write, read_capped
from workbench.core.domain.includes import MAX_INCLUDED_BYTES, headers_in_folder, includes_anything


def own_headers(source: str, folder: Path, options: Sequence[str] = ()) -> list[Path]:
    """The files ``source`` includes from ``folder`` or a folder under it, as paths relative to
    ``folder`` by the names the source reaches them as (a link in the folder is copied under its own
    name), in the order the compile first meets them. ``options``: the template's compile options
    (its ``-D`` macros may name a header, its ``-I`` folders hold others). A name the source cannot
    have resolved before compiling is a :class:`WorkbenchError`, the line a compile would fail with."""
    if not includes_anything(source) and not any("include" in option for option in options):
        return []
    return [relative for relative, _ in headers_in_folder(source, folder, options)]


def header_copies(source: str, from_folder: Path, to_folder: Path, options: Sequence[str] = (),
                  reserved: Collection[str] = ()) -> list[tuple[Path, bytes]]:
    """What copying :func:`own_headers` of ``source`` from ``from_folder`` into ``to_folder`` writes
    (the place in ``to_folder``, the bytes), checked and nothing written yet: empty when the two
    folders are one, or when each header is there already with the same bytes.

    One with other bytes there, anything there that is not a regular file, or a link on the way to
    it inside ``to_folder`` (a header copied through it would land outside the folder chosen), is
    not the program's to replace or follow and is a :class:`WorkbenchError` in one line; so is a
    header named like a file the save itself writes there (``reserved``: the template's own
    source, spec or reference, which the copy would replace)."""
    if from_folder.resolve() == to_folder.resolve():
        return []
    plan: list[tuple[Path, bytes]] = []
    for relative in own_headers(source, from_folder, options):
        if relative.as_posix() in reserved:
            raise WorkbenchError(f"the source includes {relative.as_posix()}, the name of a file the template itself "
                                 "is saved as; rename that header (or the template)")
        data = read_capped(from_folder.resolve() / relative, "header", MAX_INCLUDED_BYTES)
        target = to_folder / relative
        for step in [to_folder / Path(*relative.parts[:i]) for i in range(1, len(relative.parts))]:
            if step.is_symlink() or (step.exists() and not step.is_dir()):
                raise WorkbenchError(f"{step}: is a link or a file, not a folder, so the header {relative} the source "
                                     "includes cannot be copied there; choose another folder")
        try:
            info = os.lstat(target)
        except FileNotFoundError:
            plan.append((target, data))
            continue
        if not stat.S_ISREG(info.st_mode):
            raise WorkbenchError(f"{target}: is not a regular file, so the header {relative} the source includes "
                                 "cannot be copied there; choose another folder")
        if info.st_size != len(data) or target.read_bytes() != data:  # (sizes first: a huge file is not read)
            raise WorkbenchError(f"{target}: exists with other content than the header {relative} the source "
                                 "includes; choose another folder, or remove that file")
    return plan


def write_headers(plan: Sequence[tuple[Path, bytes]]) -> list[Path]:
    """Write what :func:`header_copies` planned; returns the paths written."""
    for target, data in plan:
        _write_bytes(target, data)
    return [target for target, _ in plan]


def copy_headers(source: str, from_folder: Path, to_folder: Path, options: Sequence[str] = (),
                 reserved: Collection[str] = ()) -> list[Path]:
    """:func:`header_copies` written: every check before anything is written."""
    return write_headers(header_copies(source, from_folder, to_folder, options, reserved))


def template_file_names(spec: Mapping[str, Any]) -> set[str]:
    """The files a save of ``spec`` writes into its folder (its source, under its own name and the
    default one, its spec and its copied Python reference): no header may be copied over them."""
    name = str(spec.get("name") or "")
    return {f"{name}.cu", f"{name}{SPEC_SUFFIX}", f"_{name}_reference.py", str(spec.get("source") or f"{name}.cu")}


def _write_bytes(path: Path, data: bytes) -> None:
    """``data`` written whole into ``path`` (atomically, as every file the program writes)."""
    def write(handle: IO[str]) -> None:
        cast(TextIO, handle).buffer.write(data)  # (atomic_write hands a text file over its binary one)

    atomic_write(path, write)


__all__ = ["copy_headers", "header_copies", "own_headers", "template_file_names", "write_headers"]
