"""The template library's commands: ``kernels`` (list), ``import-kt`` (a Kernel Tuner cache made a
session) and ``check-kernels`` (offline compiles, and the shipped resource tables)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from workbench.cli.files import file_out
from workbench.cli.parser import MAX_SEED
from workbench.cli.streams import print_json
from workbench.core.errors import WorkbenchError, counted, did_you_mean, printable

if TYPE_CHECKING:  # imported where used: the CLI starts without loading the session module
    from workbench.core.domain.session import Session


def cmd_kernels(args: argparse.Namespace) -> int:
    from workbench.core.domain.templates import kernels_dir, scan_templates
    from workbench.core.errors import SpaceError

    library = scan_templates(*args.kernel_dir, str(kernels_dir()))
    templates = library.templates
    listing: list[dict[str, Any]] = []
    uncounted: list[str] = []
    for name in sorted(templates):
        t = templates[name]
        space = t.space(t.problem)
        try:
            valid: int | None = space.count()
        except SpaceError as exc:  # one template too linked to count failed the whole listing (exit 2)
            valid = None
            uncounted.append(f"{name}: its valid configs are not counted ({exc})")
        listing.append({
            "name": name,
            "title": t.title,
            "description": t.description,
            "problem": dict(t.problem),
            "slots": [s.to_dict() for s in t.slots],
            "restrictions": list(t.restrictions),
            "default": dict(t.default),
            "valid_configs": valid,
            "baseline": t.baseline_name or None,
            "spec": t.path,
            "replaces": str(library.shadowed[name]) if name in library.shadowed else None,
        })
    if args.json:
        print_json(listing)
    else:
        for item in listing:
            slots = ", ".join(f"{s['name']}[{len(s['values'])}]" for s in item["slots"])
            count = item["valid_configs"] if item["valid_configs"] is not None else "?"
            print(f"{item['name']:<12} {count:>7} configs  {slots}")
    for line in uncounted:
        print(f"warning: {printable(line)}", file=sys.stderr)
    _report_library(library)
    _say_python_benchmarks(args.kernel_dir, library)
    _say_folders_without_templates(args.kernel_dir, library)
    return 2 if library.broken else 0  # a spec that does not load is bad input, as a file refused


def _say_python_benchmarks(folders: list[str], library: Any) -> None:
    """A note naming the python benchmarks of the folders given: ``tune NAME --kernel-dir DIR`` runs
    them, but the listing is of templates (reading a benchmark's declarations runs its code, which
    a listing never does), so it said nothing of them, and listed the shipped template a benchmark
    of the same name hides from ``tune``."""
    # (specs that load, and those that do not, which the listing reports as errors)
    # (realpath, not resolve: a link to itself, which the listing reports, raised here)
    template_specs = {os.path.realpath(path) for path in (*(t.path for t in library.templates.values()),
                                                          *library.broken, *library.shadowed.values())}
    for folder in folders:
        found = sorted(f for f in Path(folder).glob("*.py") if not f.name.startswith("_")
                       and not os.path.lexists(f.with_suffix(".cu")) and os.path.realpath(f) not in template_specs)
        if not found:
            continue
        names = ", ".join(f.stem + (" (which tune runs instead of the template of that name listed)"
                                    if f.stem in library.templates else "") for f in found)
        print(f"note: python benchmarks in {printable(folder)}, named only (reading one runs its code): "
              f"{printable(names)}", file=sys.stderr)


def _say_folders_without_templates(folders: list[str], library: Any) -> None:
    """A warning for each folder named that holds no template spec, loaded or not, nor a python
    benchmark (the listing of the shipped ones alone said nothing of it), naming a CUDA source
    there that lacks a spec, as ``tune`` does."""
    held = {Path(str(spec)).parent.resolve() for spec in (*(t.path for t in library.templates.values()),
                                                           *library.broken, *library.shadowed.values())}
    for folder in folders:
        if Path(folder).resolve() in held or any(not f.name.startswith("_") for f in Path(folder).glob("*.py")):
            continue  # (a python benchmark is no template, and not listed: its folder is no mistake)
        lone = sorted(Path(folder).glob("*.cu"))
        hint = (f": {lone[0].name} is a CUDA source without a template spec; add {lone[0].stem}.kernel.json beside "
                "it (docs/own-kernel.md), or open the folder in the window's kernel editor, which writes one"
                if lone else " (a NAME.kernel.json beside its source, or a NAME.py template beside NAME.cu)")
        print(f"warning: --kernel-dir {printable(folder)}: no templates there{hint}", file=sys.stderr)


def _report_library(library: Any) -> None:
    """Say on standard error which templates replace another of the same name (a user folder's
    over the shipped one) and which specs do not load, after the listing of those that do."""
    for name, hidden in sorted(library.shadowed.items()):
        print(f"note: {name} is {printable(str(library.templates[name].path))}, which replaces {printable(str(hidden))}",
              file=sys.stderr)
    for reason in library.reasons():
        print(f"error: {printable(reason)}", file=sys.stderr)


def cmd_import_kt(args: argparse.Namespace) -> int:
    from workbench.core.domain.session import has_journal, journal_path, save_session
    from workbench.core.io.interop import import_kt_cache
    from workbench.core.io.output_files import (
        check_folder,
        check_regular_or_absent,
        check_session_name,
        prepare_output,
        same_file,
    )
    from workbench.core.io.session_lock import SessionLock

    file_out(args.out)
    out = Path(args.out)
    check_folder(out)
    check_regular_or_absent(out)
    check_session_name(out)
    notes: list[str] = []
    session = import_kt_cache(args.cache, notes)  # a bad cache is reported before anything at --out is touched
    with SessionLock(out):  # not while a run writes that file
        if has_journal(out) and not args.force:
            raise WorkbenchError(f"--out {out}: the journal of a run is beside it ({journal_path(out).name}); "
                                 "tune --resume recovers it, --force replaces it")
        from workbench.core.io.output_files import backup_path, keep_backup

        # named before prepare_output makes the backup, which takes the name; only --force keeps one
        backup = backup_path(out) if args.force else None
        from workbench.runner.autosave import refuse_autosave_folder

        refuse_autosave_folder(out)
        earlier = _session_there(out)  # read once: whether it may be replaced, and what it held
        from workbench.core.io.interop import is_as_imported

        if (earlier is not None and not args.force and isinstance(earlier.extra.get("kernel_tuner"), dict)
                and not is_as_imported(earlier) and not same_file(out, args.cache)):
            # said as what it is: an import, but one that is no longer as the import wrote it
            raise WorkbenchError(
                f"--out {out}: an earlier import that was changed since it was imported (or was imported by a "
                f"version that did not mark its imports); --force replaces it (keeping it as {backup_path(out).name})")
        kept = prepare_output(out, force=args.force, inputs=[args.cache],
                              replaceable=lambda _path: earlier is not None and is_as_imported(earlier),
                              what="session imported from a Kernel Tuner cache")
        replaced = None if kept is not None or earlier is None else printable(
            f"{counted(len(earlier.trials), 'trial')} of {earlier.kernel} on {earlier.device.get('name', '?')}")
        if backup is not None and has_journal(out):  # kept beside the backup, never dropped
            if out.exists() and not backup.exists():  # an earlier import is replaced without one: its journal needs it
                kept = keep_backup(out)
            os.replace(journal_path(out), journal_path(backup))
        save_session(session, out)
    for note in notes:  # after the save: a refused --out stays one line
        print(f"note: {printable(note)}", file=sys.stderr)
    print(f"imported {counted(len(session.trials), 'trial')} of {printable(session.kernel)} on {printable(str(session.device.get('name', '?')))} -> {printable(str(args.out))}")
    if kept is not None:  # FILE.bak, or FILE.2.bak when that name was taken: said, as export says it
        print(f"kept the file that was there as {printable(str(kept))}")
    elif replaced is not None:  # an earlier import goes without a backup (its cache can make it again): said
        print(f"replaced the earlier import there ({replaced})")
    return 0


def _session_there(path: Path) -> Session | None:
    """The session at ``path``, read when it looks like one (None: nothing, or something else).
    An earlier import, as imported, may be replaced by a new one, and the line saying so names what
    it held; a session of measured trials, or an import a person has changed in any field since
    (notes, objective, a renamed kernel, a baseline), may not without --force (which keeps it as
    FILE.bak): replacing it silently lost their work."""
    from workbench.core.domain.session import is_session_file, load_session

    if not path.is_file() or not is_session_file(path):
        return None
    try:
        return load_session(path)
    except WorkbenchError:
        return None


def cmd_check_kernels(args: argparse.Namespace) -> int:
    from workbench.core.domain.templates import kernels_dir, require_template, scan_templates
    from workbench.core.errors import UnknownTemplate
    from workbench.core.model.checks import check_kernels, format_check_table, print_progress
    from workbench.runner.plan import saved_template_hint

    if args.workers is not None and args.workers < 1:
        raise WorkbenchError(f"--workers must be at least 1, got {args.workers}")
    if args.seed is not None and not 0 <= args.seed <= MAX_SEED:  # (NumPy's generator raised it as a traceback)
        raise WorkbenchError(f"--seed {args.seed}: a seed is an integer from 0 to 2**63-1")
    # a flag that would be ignored is refused: a script that gives it expects something of it
    if args.table_time_limit is not None and not args.write_table:
        raise WorkbenchError("--table-time-limit bounds --write-table; give that too, or drop it")
    if args.shipped and not args.kernel_dir:
        raise WorkbenchError("--shipped adds the shipped templates to those of --kernel-dir; without --kernel-dir "
                             "they are checked anyway: drop it")
    if args.sample is not None and (args.write_table or args.check_table):
        raise WorkbenchError("--sample picks the configs the compile check compiles; the resource table "
                             "covers every valid config: drop it, or the table flags")
    if args.check_table and not args.write_table:
        for flag, value in (("--seed", args.seed), ("--workers", args.workers)):
            if value is not None:
                raise WorkbenchError(f"{flag} applies to the compile check and to --write-table; --check-table "
                                     "compiles nothing: drop it")
    if args.sample is not None and args.sample < 0:
        raise WorkbenchError(f"--sample must be 0 or more, got {args.sample}")
    if args.arch is not None and (args.write_table or not args.check_table):
        from workbench.core.model.compiler import check_arch

        try:  # before any progress line or file: every compile would fail alike
            check_arch(args.arch)
        except WorkbenchError as exc:
            raise WorkbenchError(f"--arch {args.arch}: {exc}") from None
    if args.write_table or args.check_table:
        return _check_kernels_table(args)
    if args.kernel is not None:  # that spec alone (its own error, if any), as tune reads it
        try:
            named = require_template(args.kernel, *args.kernel_dir, str(kernels_dir()), what="kernel")
        except UnknownTemplate as exc:
            raise UnknownTemplate(f"{exc}{saved_template_hint(args.kernel)}") from None
        library, templates = None, {args.kernel: named}
    else:
        # a folder named is what is to be checked: its templates, not also the ten shipped ones
        # (17 s of compiles and a table of them around the one result the person came for)
        shipped = [str(kernels_dir())] if not args.kernel_dir or args.shipped else []
        library = scan_templates(*args.kernel_dir, *shipped)
        templates = library.templates
        if not templates and not library.broken:  # the wrong folder: an empty table said nothing of it
            raise WorkbenchError(f"--kernel-dir {' '.join(args.kernel_dir)}: no templates there (a NAME.kernel.json "
                                 "beside its source, or a NAME.py template beside NAME.cu)")
    progress = None if args.quiet else print_progress(sys.stderr)
    results = check_kernels(templates, arch=args.arch or "sm_90", sample=3 if args.sample is None else args.sample,
                            seed=args.seed or 0, kernel=args.kernel,
                            workers=args.workers or os.cpu_count() or 1, progress=progress)
    if args.json:
        print_json([r.to_dict() for r in results])
    elif results:  # (a folder whose only spec does not load: its error alone, not a table of nothing above it)
        print(format_check_table(results))
    _report_uncomputable(templates.values())
    if library is None:
        return 0 if all(r.ok for r in results) else 1
    _report_library(library)
    return 2 if library.broken else 0 if all(r.ok for r in results) else 1


def _report_uncomputable(templates: Iterable[Any]) -> None:
    """A warning per restriction that cannot be computed for some configs (they count as not valid:
    the check's valid count is then smaller than its author expects, and nothing else says why)."""
    from workbench.core.domain.space import restriction_note

    for template in templates:
        try:
            found = template.space().uncomputable()
        except WorkbenchError:  # a space that does not build is said by the check itself
            continue
        for text, assignment, why in found:
            print(f"warning: {template.name}: {printable(restriction_note(text, assignment, why))}", file=sys.stderr)


def _check_kernels_table(args: argparse.Namespace) -> int:
    """``--write-table`` / ``--check-table``: the shipped templates' resource table for ``--arch``."""
    from workbench.core.domain.templates import kernels_dir, load_templates
    from workbench.core.model import resource_table
    from workbench.core.model.checks import print_table_progress

    if args.kernel_dir:
        raise WorkbenchError("the resource table covers the shipped templates only; drop --kernel-dir")
    if args.write_table:
        from workbench.core.domain.shipped import source_root

        if source_root() is None and not os.environ.get(resource_table.TABLE_DIR_ENV):
            # the installed package's own files: written there, the table was not the package's
            # (pip uninstall left it behind), and a system-wide install refused the write
            raise WorkbenchError(f"--write-table writes the tables a checkout ships; this is an installed package: "
                                 f"set {resource_table.TABLE_DIR_ENV}=FOLDER to write them in FOLDER "
                                 "(runs then read them from there too)")
    templates = load_templates(str(kernels_dir()))
    if args.kernel is not None:
        if args.kernel not in templates:
            raise WorkbenchError(f"unknown kernel {args.kernel!r}{did_you_mean(args.kernel, templates)}; "
                                 f"available: {', '.join(sorted(templates))}")
        templates = {args.kernel: templates[args.kernel]}
    if args.write_table:
        if args.table_time_limit is not None and not args.table_time_limit > 0:
            raise WorkbenchError(f"--table-time-limit must be positive, got {args.table_time_limit}")
        progress = None if args.quiet else print_table_progress(sys.stderr)
        resource_table.write_table(templates.values(), args.arch or "sm_90", workers=args.workers,
                                   time_limit_s=args.table_time_limit, seed=args.seed or 0, progress=progress)
    archs = [args.arch or "sm_90"] if args.arch or args.write_table else resource_table.shipped_archs()
    if not archs:
        raise WorkbenchError(f"no resource tables in {resource_table.table_dir()}; write one with check-kernels --write-table")
    reports = [resource_table.check_table(templates.values(), arch) for arch in archs]
    if args.json:
        print_json([report.to_dict() for report in reports])
    for report in reports:
        if not args.json:
            for line in report.summary:
                print(line)
        for line in report.problems:
            print(f"error: {line}", file=sys.stderr)
    return 0 if all(report.ok for report in reports) else 1
