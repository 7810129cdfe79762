"""The editor's drafts: one folder per distinct draft a person tuned, never written over.

A run of a draft records the folder it was tuned from (``kernel_dirs``) and the template's hash. If
the next Tune of the same name wrote into the same folder, the earlier session would point at
source it was not measured with: continuing or exporting it would say the template changed, and
the code it measured would be gone. So each draft goes into ``<name>-<digest>/``, named by what
was written there (spec, source, copied reference), and a draft tuned again unchanged reuses its
folder. Drafts are a few kilobytes each.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Mapping

from workbench.core.errors import WorkbenchError
from workbench.core.fs import current_umask
from workbench.core.domain.kernel_spec import check_template_name, save_template_folder
from workbench.core.model.template_headers import header_copies, template_file_names, write_headers

#: Hex digits of the digest in a draft folder's name: enough that two drafts of one name never meet.
DIGEST_CHARS = 12


def folder_digest(folder: Path) -> str:
    """A digest of the regular files in ``folder`` and its subfolders (the headers a source
    includes may lie there): paths relative to it and bytes, in path order. A folder of files
    alone has the digest it had when only those were read."""
    digest = hashlib.sha256()
    files = [p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()]
    for path in sorted(files, key=lambda p: p.relative_to(folder).as_posix()):
        digest.update(path.relative_to(folder).as_posix().encode("utf-8", "surrogatepass") + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:DIGEST_CHARS]


def save_draft(drafts: Path, spec: Mapping[str, Any], source: str,
               reference_file: str | os.PathLike[str] | None = None, headers_from: Path | None = None) -> Path:
    """Write a draft as a template folder under ``drafts`` and return that folder, with the headers
    its source includes from ``headers_from`` (the folder the template was opened from; see
    :mod:`workbench.core.model.template_headers`).

    The draft is saved (and checked, by :func:`save_template_folder`) into a fresh staging folder
    first, then renamed to ``<name>-<digest>``; where that folder exists already (the same draft
    tuned before) it is used as it is. A link in its place is refused: the drafts are the editor's
    own folders and it never makes links there.
    """
    name = str(spec.get("name") or "")
    check_template_name(name)  # the folder is named by it: checked before anything is touched
    if drafts.is_symlink():
        raise WorkbenchError(f"{drafts}: a link, not the editor's drafts folder; remove it to tune {name}")
    drafts.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=drafts))
    try:
        # (checked before the draft is written: a header named like the template's own source
        # would be written over it)
        headers = [] if headers_from is None else header_copies(
            source, headers_from, staging, [str(o) for o in spec.get("compile_options") or ()], template_file_names(spec))
        save_template_folder(staging, spec, source, reference_file=reference_file)
        write_headers(headers)
        folder = drafts / f"{name}-{folder_digest(staging)}"
        if folder.is_symlink():
            raise WorkbenchError(f"{folder}: a link, not a drafts folder of the editor's; remove it to tune {name}")
        if folder.exists() and not folder.is_dir():
            raise WorkbenchError(f"{folder}: not a drafts folder of the editor's; remove it to tune {name}")
        if not folder.exists():
            staging.chmod(0o777 & ~current_umask())  # mkdtemp's folder is private; a saved template is not
            try:
                staging.rename(folder)
            except OSError:
                if not folder.is_dir() or folder.is_symlink():  # (made meanwhile by another editor: the same draft)
                    raise
        return folder
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def draft_copies(folder: Path, spec: Mapping[str, Any], reference_file: str | os.PathLike[str] | None,
                 headers_from: Path | None) -> dict[Path, Path]:
    """The files of the draft ``folder`` that :func:`save_draft` copied from the person's own
    (its Python reference, the headers of ``headers_from``), each with the file it came from, for
    messages to name those: a run's error in the reference named the draft's copy, which the
    person never chose and whose edit would change nothing."""
    copies: dict[Path, Path] = {}
    name = str(spec.get("name") or "")
    if reference_file is not None:
        copies[folder / f"_{name}_reference.py"] = Path(reference_file)
    if headers_from is not None:
        own = set(template_file_names(spec))
        for copy in folder.rglob("*"):
            relative = copy.relative_to(folder)
            if copy.is_file() and relative.as_posix() not in own and (headers_from / relative).is_file():
                copies[copy] = headers_from / relative
    return copies
