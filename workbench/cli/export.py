"""``export``: the recommended config as a header, ``.cu``, JSON, CuPy script or per-size dispatch,
or every trial as a table or a Kernel Tuner cache."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from workbench.cli.files import check_distinct, check_export_output, note_runs_writing
from workbench.cli.objective_flags import check_objective_on, objective_from_args, other_objective_note
from workbench.cli.parser import STDOUT, TRIAL_FORMATS
from workbench.core.domain.assignments import parse_assignments
from workbench.core.domain.records import Provenance, provenance
from workbench.core.errors import WorkbenchError, counted, printable, write_error
from workbench.core.fs import atomic_write


#: The format an --out suffix names when --format is not given (the window's Export best config
#: goes by the suffix too). A dispatch header or module, or a Kernel Tuner cache, is named with --format.
FORMAT_BY_SUFFIX = {".h": "header", ".cuh": "header", ".hpp": "header", ".cu": "cuda", ".json": "json", ".py": "cupy",
                    ".csv": "csv"}


def format_by_suffix(out: str) -> str:
    """``--format`` as ``out``'s suffix names it, or one line saying which suffixes do."""
    if out == STDOUT:
        raise WorkbenchError("--out - writes to standard output: give --format, which no suffix names there")
    fmt = FORMAT_BY_SUFFIX.get(Path(out).suffix.lower())
    if fmt is None:
        known = ", ".join(f"{suffix} {name}" for suffix, name in FORMAT_BY_SUFFIX.items())
        raise WorkbenchError(f"--out {out}: give --format, or a suffix that names one ({known})")
    return fmt


#: What each format writes, and what the usual suffixes name: an explicit --format whose text is
#: another kind than --out's suffix names is said (a C header in d.py no longer imports).
_FORMAT_KIND = {"header": "C", "cuda": "CUDA C", "dispatch": "C", "json": "JSON", "kt-cache": "JSON", "cupy": "Python",
                "dispatch-py": "Python", "csv": "CSV"}
_SUFFIX_KIND = {".h": "C", ".hpp": "C", ".cuh": "C", ".cu": "CUDA C", ".json": "JSON", ".py": "Python", ".csv": "CSV"}
_KIND_SUFFIX = {"C": ".h", "CUDA C": ".cu", "JSON": ".json", "Python": ".py", "CSV": ".csv"}


def suffix_note(out: str, fmt: str) -> str | None:
    """Why ``out``'s name misleads about the ``fmt`` it gets, or None (no known suffix, or a fitting one)."""
    named = _SUFFIX_KIND.get(Path(out).suffix.lower()) if out != STDOUT else None
    kind = _FORMAT_KIND.get(fmt)
    if named is None or kind is None or named == kind or {named, kind} == {"C", "CUDA C"}:
        return None
    return (f"--out {out}: a {Path(out).suffix} name for --format {fmt}, which writes {kind} "
            f"(a {_KIND_SUFFIX[kind]} name fits it)")


def cmd_export(args: argparse.Namespace) -> int:
    from workbench.core.domain.session import load_session
    from workbench.core.io.dispatch import DEFAULT_TOLERANCE, export_dispatch, render_dispatch
    from workbench.core.io.export import export_sessions, is_export_file, render_export
    from workbench.core.io.export_seal import unchanged_export

    args.format = args.format or format_by_suffix(args.out)
    misnamed = suffix_note(args.out, args.format)  # said once written (a refusal stays one line)
    check_distinct(args.sessions)
    note_runs_writing(args.sessions, "this export")
    if args.format in TRIAL_FORMATS:
        code = _export_trials(args)
        if misnamed is not None:
            print(f"note: {printable(misnamed)}", file=sys.stderr)
        return code
    sessions = [load_session(path) for path in args.sessions]
    constraints, weights = objective_from_args(args, sessions[0], args.sessions[0])
    check_objective_on(constraints, weights, sessions)
    # the order of the files decided the configs unsaid (the file says what ranked them); said once
    # written, with the note on the suffix (a refusal stays one line)
    other = other_objective_note(sessions, args.sessions, "picks every device's config here")
    to_stdout = args.out == STDOUT
    kept: list[Path] = []

    def check_output(path: Path) -> None:
        backup = check_export_output(path, args, replaceable=is_export_file, pristine=unchanged_export,
                                      what="file exported by this workbench")
        kept.extend([backup] if backup is not None else [])

    if args.format in ("dispatch", "dispatch-py"):
        if args.at:
            raise WorkbenchError(f"--at picks one size; --format {args.format} exports every size (drop --at)")
        tolerance = DEFAULT_TOLERANCE if args.tolerance is None else args.tolerance
        if to_stdout:
            dispatch, text = render_dispatch(sessions, args.format, tolerance, constraints, weights,
                                             parameter=args.size_param, sources=args.sessions,
                                             kernel_dirs=args.kernel_dir)
        else:
            dispatch = export_dispatch(sessions, args.format, args.out, tolerance, constraints, weights,
                                       parameter=args.size_param, sources=args.sessions,
                                       check_output=check_output, kernel_dirs=args.kernel_dir)
        for note in dispatch.notes:  # in the file's header too; said here, where it is made
            print(f"note: {printable(note)}", file=sys.stderr)
        configs = counted(len(dispatch.configs), "config")
        summary = (f"{dispatch.kernel}: exported {args.format} ({configs} for {len(dispatch.figures)} sizes of "
                   f"{dispatch.parameter}, {dispatch.method} set cover, tolerance {100 * tolerance:g}%"
                   f"{timings_said(dispatch.provenance)})")
    else:
        if args.tolerance is not None or args.size_param is not None:
            raise WorkbenchError("--tolerance and --size-param apply to --format dispatch or dispatch-py")
        at = parse_assignments(args.at, "--at") if args.at else None
        if to_stdout:
            plan, text = render_export(sessions, args.format, constraints, weights, sources=args.sessions,
                                       kernel_dirs=args.kernel_dir, at=at)
        else:
            plan = export_sessions(sessions, args.format, args.out, constraints, weights, sources=args.sessions,
                                   check_output=check_output, kernel_dirs=args.kernel_dir, at=at)
        picks = ", ".join(f"{c.device}: {c.trial.config.id}" for c in plan.choices)
        portable = (f"; portable {plan.portable.trial.config.id}: worst case {plan.portable.score:.3f} of each "
                    f"device's optimum, of {counted(plan.portable.candidates, 'config')} measured feasible on every device"
                    if plan.portable is not None and len(plan.choices) > 1 else "")
        summary = f"{plan.kernel}: exported {args.format} ({picks}{portable}{timings_said(plan.provenance)})"
        if plan.template_changed:  # in the file's comments too; said here, where the export is made
            print(f"warning: {printable(plan.template_changed)}", file=sys.stderr)
        for note in plan.unfinished:  # (likewise)
            print(f"note: {printable(note)}", file=sys.stderr)
        pending = [c for c in plan.choices if c.trial.measurement.resources_pending]
        if pending:
            holders = [str(path) for session, path in zip(sessions, args.sessions)
                       if any(t is c.trial for c in pending for t in session.trials)]
            refine = "; ".join(f"tune --resume --out {shlex.quote(path)} --refine-only" for path in holders)
            print(f"warning: the exported config's resource figures on {printable(', '.join(c.device for c in pending))} were "
                  f"estimated while its compile was pending, and refining can change the pick: "
                  f"{refine or 'refine the session (tune --resume --out SESSION --refine-only)'}, then export again",
                  file=sys.stderr)
    for said in (other, misnamed):
        if said is not None:
            print(f"note: {printable(said)}", file=sys.stderr)
    if to_stdout:  # the text alone on stdout, so a pipe or a redirect gets a clean file
        sys.stdout.write(text)
        print(printable(summary) + " -> standard output", file=sys.stderr)
    else:
        print(f"{printable(summary)} -> {printable(str(args.out))}")
        for backup in kept:
            print(f"kept the file that was there as {printable(str(backup))} (an export edited since it was written, or "
                  "one of an earlier version)" if is_export_file(backup) else f"kept the file that was there as {printable(str(backup))}")
    return 0


def _export_trials(args: argparse.Namespace) -> int:
    """``export --format csv|kt-cache``: every trial of one session, whatever the objective (the
    table has every metric; feasibility and score are views a reader recomputes). A file already
    at ``--out`` is replaced only with ``--force``, which keeps it as ``.bak``: neither format
    carries a seal telling an untouched earlier export from a table someone edited."""
    from workbench.core.domain.session import load_session
    from workbench.core.io.interop import render_csv, render_kt_cache

    if len(args.sessions) > 1:
        raise WorkbenchError(f"--format {args.format} writes the trials of one session; got {len(args.sessions)}")
    given = [flag for flag, value in (("--at", args.at), ("--tolerance", args.tolerance),
                                      ("--size-param", args.size_param), ("--max-latency-ms", args.max_latency_ms),
                                      ("--max-memory-mb", args.max_memory_mb), ("--min-quality", args.min_quality),
                                      ("--constraint", args.constraint), ("--weight", args.weight),
                                      ("--maximize", args.maximize), ("--minimize", args.minimize))
             if value not in (None, [])]
    if given:
        raise WorkbenchError(f"{', '.join(given)}: --format {args.format} writes every trial with every metric, "
                             "whatever the objective; drop them")
    source = args.sessions[0]
    session = load_session(source)
    notes: list[str] = []
    if args.format == "csv":
        text, what = render_csv(session, notes), counted(len(session.trials), "trial")
    else:
        text, records = render_kt_cache(session, notes)
        what = counted(records, "record")
    summary = f"{session.kernel}: exported {args.format} ({what}{timings_said(provenance(session.device))})"
    if args.out == STDOUT:
        sys.stdout.write(text)
        print(printable(summary) + " -> standard output", file=sys.stderr)
        for note in notes:  # what the file cannot carry
            print(f"note: {printable(note)}", file=sys.stderr)
        return 0
    out = Path(args.out)
    backup = check_export_output(out, args, what=f"file a {args.format} export replaces unasked")
    try:
        atomic_write(out, lambda f: f.write(text))
    except OSError as exc:
        raise write_error(f"--out {out}: cannot write ({exc.strerror or exc})", exc) from None
    print(f"{printable(summary)} -> {printable(str(out))}")
    if backup is not None:
        print(f"kept the file that was there as {printable(str(backup))}")
    for note in notes:  # what the file cannot carry
        print(f"note: {printable(note)}", file=sys.stderr)
    return 0


def timings_said(kind: Provenance) -> str:
    """``; simulated timings`` and its kin in an export's summary line, as the file says it (nothing
    for measurements)."""
    return "" if kind == "measured" else f"; {kind} timings"
