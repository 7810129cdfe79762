"""``tune``: start or continue a run (also ``--refine-only`` and ``--remeasure-aborted``), with its
progress line on stderr and its one-line summary."""

from __future__ import annotations

import contextlib
import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from workbench.backends.base import PACED_BACKENDS
from workbench.cli.files import file_out, note_runs_writing
from workbench.cli.objective_flags import (
    objective_flags_given, objective_from_args, objectives_from_args, stored_objectives,
)
from workbench.cli.parser import REFINE_ONLY_WAIT_S, REFINE_WAIT_S, RESOURCE_MODES, build_parser, check_run_flags
from workbench.cli.show import estimated_line, feasible_count, first_line, remeasure_command, summarise
from workbench.cli.streams import silence
from workbench.core.domain.assignments import parse_assignments
from workbench.core.domain.figures import duration, fmt
from workbench.core.domain.records import provenance
from workbench.core.domain.size_analysis import size_lines
from workbench.core.domain.sizes import parse_sizes, problems_of
from workbench.core.errors import WorkbenchError, counted, printable
from workbench.core.model.quality import unchecked_outputs_note

#: What a run's end reason means, where its one word does not say it: "exhausted" after 0 of a
#: budget of 3 read as a fault.
FINISH_REASONS = {"exhausted": "no config left to measure, the strategy proposed every one it can"}


class _ProgressLine:
    """One self-overwriting progress line on stderr (a plain line every few seconds when not a TTY)."""

    def __init__(self, quiet: bool, says_end: bool = True) -> None:
        self.quiet = quiet
        #: Whether the run's end gets its "finished (...)" line (not where nothing new is measured
        #: on purpose, ``--refine-only``, whose own summary follows).
        self.says_end = says_end
        # a terminal that cannot erase a line (TERM=dumb: an editor's shell, a CI log viewer) gets
        # the plain lines a file gets, not the ANSI erase-line code
        self.tty = sys.stderr.isatty() and os.environ.get("TERM") != "dumb"
        self.last = 0.0

    def _say(self, text: str) -> None:
        """Write to stderr; where nobody reads it any more (``2>&1 | head -1``, a closed terminal),
        stop saying anything and point stderr at /dev/null. The progress is the run's commentary,
        not the run: a closed pipe raised out of the engine's event and ended the run before its
        session was saved, with exit status 0."""
        try:
            sys.stderr.write(text)
            sys.stderr.flush()
        except (OSError, ValueError):
            self.quiet = True
            silence(sys.stderr)

    def __call__(self, event: Any) -> None:
        from workbench.runner.events import Progress, RunFinished

        if isinstance(event, Progress) and not self.quiet and event.starting_s is not None:
            self.last = time.monotonic()
            line = (f"[{event.done}{f'/{event.total}' if event.total else ''}] waiting {event.starting_s:.0f}s for "
                    "the workers to start (each loads the kernel's own code: a python benchmark's module, a "
                    "template's reference; a start that never ends is given up, and the run says why)")
            self._say(("\r" + line + "\x1b[K") if self.tty else line + "\n")
        elif isinstance(event, Progress) and not self.quiet:
            now = time.monotonic()
            if not self.tty and now - self.last < 2.0 and (event.done != event.total or event.compiles_pending):
                return
            self.last = now
            total = f"/{event.total}" if event.total else ""
            best = f"{fmt(event.best_latency_ms)} ms" if event.best_latency_ms is not None else "-"
            eta = duration(event.eta_s)
            aborted = f"  aborted {event.aborted}" if event.aborted else ""
            line = (f"[{event.done}{total}] failures {event.failures}{aborted}  best {best}  "
                    f"elapsed {duration(event.elapsed_s)}  ETA {eta}")
            if event.compiles_pending or event.refined:  # the simulator's background compiles
                line += f"  compiles: {event.compiles_pending} pending (estimated meanwhile), {event.refined} refined"
            self._say(("\r" + line + "\x1b[K") if self.tty else line + "\n")
        elif isinstance(event, RunFinished):
            end = "\n" if self.tty else ""
            if not self.quiet and self.says_end:
                why = FINISH_REASONS.get(event.reason)
                self._say(f"{end}finished ({event.reason}{': ' + why if why else ''}) "
                          f"after {counted(event.evaluations, 'evaluation')}\n")
            if event.reason == "error":  # the cause, said even with --quiet: the exit status alone explains nothing
                self._say(f"error: {printable(first_line(event.message)) or 'the run failed'}\n")


def _request_from_args(args: argparse.Namespace, continued: str | None = None) -> Any:
    """The run request the flags make. Continuing the session at ``continued``, objective flags are
    layered over its own objective (it is read for that only when such flags are given); otherwise
    the session keeps its own."""
    from workbench.core.domain.session import has_journal, load_session
    from workbench.runner.request import RunRequest
    from workbench.runner.executors import parse_devices

    there = continued is not None and (Path(continued).exists() or has_journal(continued))
    base = load_session(continued) if continued is not None and there and (objective_flags_given(args) or args.option) \
        else None
    if continued is None:
        constraints, weights = objective_from_args(args)
    elif base is not None and objective_flags_given(args):
        constraints, weights = objective_from_args(args, base, continued)
    else:
        constraints, weights = None, None
    options = parse_assignments(args.option, "--option") if args.option else None
    if options is not None and base is not None:
        options, notes = options_over_stored(options, base, args.strategy)
        for note in notes:
            print(f"warning: {printable(note)}", file=sys.stderr)
    return RunRequest(
        kernel=args.kernel, backend=args.backend, replay=args.replay, kernel_dirs=tuple(args.kernel_dir),
        problem=parse_assignments(args.set, "--set") if args.set else None, gpu_model=args.gpu_model,
        noise=args.noise, strategy=args.strategy,
        strategy_options=options,
        seed=args.seed, constraints=constraints, weights=weights, budget=args.budget,
        time_limit_s=args.time_limit, patience=args.patience, prune_keep=args.prune, workers=args.workers,
        executor=args.executor, ray_address=args.ray_address,
        devices=tuple(parse_devices(args.devices)) if args.devices is not None else None,
        allow_mixed_gpus=args.allow_mixed_gpus, compile_timeout_s=args.compile_timeout, run_timeout_s=args.timeout,
        objectives=objectives_from_args(args),
        sizes=parse_sizes(args.sizes) if args.sizes else None, warm_start=args.warm_start,
        backend_options={**({"compile": RESOURCE_MODES[args.resources]} if args.resources else {}),
                         **({"delay_s": args.delay} if args.delay is not None else {})},
    )


def options_over_stored(given: dict[str, Any], session: Any, strategy: str | None) -> tuple[dict[str, Any], list[str]]:
    """``--option``s on a continued session, laid over the session's own options of that strategy
    (its current one, or one it ran before and switches back to): one ``--option`` dropped the
    others the session had set, unsaid. A stored value this version cannot take, or one that
    clashes with an option given (``tournament=4`` kept beside ``--option population=3``), takes
    its default, said in a note each; what the given ones are is checked by the run as ever."""
    from workbench.runner.controller import usable_stored_options
    from workbench.search.base import STRATEGIES, strategy_class

    info = session.strategy if isinstance(session.strategy, dict) else {}
    name = strategy or info.get("name")
    if not isinstance(name, str) or name not in STRATEGIES:
        return given, []
    stored = info.get("options") if name == info.get("name") else (info.get("earlier_options") or {}).get(name)
    declared = {option.name: option for option in strategy_class(name).OPTIONS}
    try:
        checked: dict[str, Any] | None = {k: declared[k].check(v) for k, v in given.items()}
    except (KeyError, ValueError):  # a given option the run refuses anyway: no clash to resolve
        checked = None
    usable, notes = usable_stored_options(name, {k: v for k, v in dict(stored or {}).items() if k not in given},
                                          checked)
    return {**usable, **given}, notes


def _continued_by_journal(args: argparse.Namespace) -> None:
    """The session a command continues may be named by its journal (``--resume k.json.journal``,
    what a killed run leaves before its first save): it stands for ``k.json``, which is read with
    it and written. A new session is never written at a journal's name (the output rule)."""
    from workbench.core.domain.session import session_path_of
    from workbench.core.fs import fixed_path

    if isinstance(args.resume, str):
        args.resume = str(session_path_of(args.resume))
        if args.out is not None and fixed_path(session_path_of(args.out)) == fixed_path(args.resume):
            args.out = args.resume  # continued into itself, however it is spelt
    elif args.out is not None and (args.resume or args.remeasure_aborted or args.refine_only):
        args.out = str(session_path_of(args.out))


def cmd_tune(args: argparse.Namespace) -> int:
    from workbench.core.domain.session import has_journal
    from workbench.core.io.output_files import backup_path
    from workbench.core.model.verify import reference_summary
    from workbench.runner.controller import resume_run, start_run

    if args.help_strategy is not None:
        from workbench.search.base import options_help

        print(options_help(args.help_strategy))
        return 0
    check_run_flags(args)
    file_out(args.out)
    _continued_by_journal(args)
    if args.remeasure_aborted:
        return _remeasure_aborted(args)
    if args.refine_only:
        return _refine_only(args)
    for flag, value in (("--budget", args.budget), ("--patience", args.patience)):
        if value is not None and value < 1:  # (the run's settings would name the field, not the flag)
            raise WorkbenchError(f"{flag} must be at least 1, got {value}")
    named = "replay" if args.replay else args.backend
    if named not in (None, "auto"):
        _check_backend_flags(args, named)
    if args.prune is not None and not 0.0 < args.prune <= 1.0:
        raise WorkbenchError(f"--prune {args.prune:g}: the fraction measured must be in (0, 1]")
    # where --force will keep what is at --out (FILE.bak, or FILE.2.bak when that is taken), named
    # before the run takes the name, and said after the summary as export and import-kt say it
    kept = backup_path(args.out) if args.force and args.out and (os.path.lexists(args.out) or has_journal(args.out)) \
        else None
    if isinstance(args.resume, str):
        run = resume_run(args.resume, _request_from_args(args, args.resume), args.out, force=args.force)
        if args.out is not None and args.out != args.resume:  # (in place, the run holds the lock itself)
            note_runs_writing([args.resume], f"the session continued into {args.out}")
    else:
        if args.out is None:
            raise WorkbenchError("--out FILE: name the session file to write (or --resume SESSION)")
        if args.resume and args.force:
            raise WorkbenchError("--resume continues the session at --out and --force replaces it: choose one")
        request = _request_from_args(args, args.out if args.resume else None)
        run = start_run(request, args.out, resume=bool(args.resume), force=args.force)
    kind = run.session.backend.get("kind") if isinstance(run.session.backend, dict) else None
    try:  # the backend a name, auto or a continued session resolved to
        _check_backend_flags(args, str(kind), "this session's ")
    except WorkbenchError:
        run.release()
        raise
    for warning in run.warnings:
        print(f"warning: {printable(warning)}", file=sys.stderr)
    run.subscribe(_ProgressLine(args.quiet))
    wait = REFINE_WAIT_S if args.refine_wait is None else args.refine_wait
    run.engine.refine_wait_s = wait
    before = len(run.session.trials)
    shown = _as_given(run.output, args.out if args.out is not None else args.resume)
    recovering = _autosave_continued_elsewhere(args, run.output)  # (read before a candidate can move the folder)
    finished = run.run()
    session, out = run.session, run.output
    if finished.reason == "error" and not session.trials:  # its cause is said; no session was written
        return 1
    if out is not None and not run.engine.saved:  # the save failed (its cause is said): no "-> FILE" then
        from workbench.core.domain.session import journal_path

        journal = journal_path(out)
        where = "nothing of them was written"
        if journal.is_file():
            # how many it holds, said: "7 measured" beside "finished after 6 evaluations" left the
            # reader to guess that the last one's line was cut by the full disk
            from workbench.core.domain.session import read_journal

            try:
                holds = f"keeps {counted(len(read_journal(out)[1]), 'trial')}"
            except (WorkbenchError, OSError):
                holds = "keeps what it could write"
            where = f"the journal {journal_path(shown or out)} {holds}, and tune --resume --out {shown} recovers them once the cause is fixed"
        missing = _trials_not_on_disk(session, Path(out))
        if missing:
            # another run took the file and its journal over (a lock file removed by another hand):
            # "the journal keeps them" was that run's journal, and these trials were lost
            from workbench.core.io.output_files import keep_apart

            kept_apart = keep_apart(session, Path(out))
            if kept_apart is None and not Path(out).parent.is_dir():
                # the file's folder was removed during the run (a clean-up script): the trials
                # are kept in the folder the command runs in instead of nowhere
                with contextlib.suppress(OSError):
                    kept_apart = keep_apart(session, Path.cwd() / Path(out).name)
            if kept_apart is not None:
                where = (f"{counted(missing, 'trial')} of them {'is' if missing == 1 else 'are'} in neither {shown} nor "
                         f"its journal, so the session is kept apart as {printable(str(kept_apart))} "
                         f"(tune --resume --out {printable(str(kept_apart))} continues it)")
        new = len(session.trials) - before
        print(f"{session.kernel}: {counted(new, 'trial')} measured by this run "
              f"({len(session.trials)} in the session) not saved to {shown}; {where}", file=sys.stderr)
        return 1
    for warning in _idle_directions_after(run):
        print(f"warning: {printable(warning)}", file=sys.stderr)
    from workbench.cli.objective_flags import direction_only_notes

    # --maximize M with nothing weighing M ranked the run by latency and said nothing, where show says it
    # (a continued session's was said before its run, as the flags were read against its file)
    for note in [] if run.continued else direction_only_notes(args, session.weights, session):
        print(f"note: {printable(note)}", file=sys.stderr)
    if run.engine.unrefined:
        unrefined = run.engine.unrefined
        print(f"note: {counted(unrefined, 'trial')} keep{'s' if unrefined == 1 else ''} estimated resources (marked resources_pending): their "
              f"compiles had not finished {wait:g} s after the last evaluation; a run continuing the "
              f"session refines them (all of them, nothing new measured: tune --resume --out {shown} --refine-only)",
              file=sys.stderr)
    from workbench.core.domain.metrics import check_metrics
    from workbench.runner.plan import session_metrics

    front = stored_objectives(session) or ()  # the session's Pareto objectives, as show reads them
    try:
        check_metrics(front, session_metrics(session))
    except WorkbenchError:  # a metric no trial reported: no front to count (show says why)
        front = ()
    summary = summarise(session, objectives=front,
                        remeasure=remeasure_command(str(shown) if shown else None, session.constraints, session))
    best = summary["best"]
    best_text = (f"best {fmt(best['latency_ms'])} ms {best['config']}" if best
                 else f"no feasible config ({summary['why_none']})" if summary.get("why_none") else "no feasible config")
    if best and best["resources_pending"]:
        best_text += " (resources estimated)"
    # what the timings are, as show labels them: modelled, or read back from a recording
    source = provenance(summary["device"])
    sim = "" if source == "measured" else f" ({source})"
    verb = "continued" if run.continued else "new session"
    if args.sizes or len(problems_of(session)) > 1:
        from workbench.core.domain.search_objective import Objective

        for line in size_lines(session, Objective(session.constraints, session.weights)):
            print(line)
        count = len(problems_of(session))
        best_text = counted(count, "size")
    if summary.get("objectives"):  # a Pareto run's answer is its front, which show lists: one best alone hid it
        best_text += (f"; {counted(len(summary['pareto']), 'feasible config')} on the front of "
                      f"{', '.join(summary['objectives'])} (show lists them)")
    # a sweep's summary ranks one size; the line counts every size's feasible trials
    feasible = f"{feasible_count(session) if 'answered' in summary else summary['feasible']} feasible"
    if session.constraints.bounds():  # a continued session's limits come from its file: said, as show says them
        from workbench.core.domain.objective import objective_text

        feasible += f" under {printable(objective_text(session.constraints, session.weights, shown=True)[0])}"
    # what else the run has to say comes first: the summary is the last line, for `| tail -1`
    checks = reference_summary(session.trials) or str(session.extra.get("reference") or "")
    if checks:
        print(f"{session.kernel}: {printable(checks)}")
    unchecked = unchecked_outputs_note(summary["outputs_unchecked"])
    if unchecked and not checks:  # a template without a reference: the line above says what was checked
        print(f"{session.kernel}: outputs {unchecked}")
    if kept is not None and (os.path.lexists(kept) or has_journal(kept)):  # (a journal alone is kept as one)
        print(f"kept the file that was there as {printable(str(kept))}")
    if recovering is not None:
        from workbench.runner.autosave import discard

        why = discard(recovering)
        print(f"note: {printable(why or f'removed the autosave {recovering.name}: its trials are in {shown} now')}",
              file=sys.stderr)
    print(f"{session.kernel}: {counted(summary['trials'], 'trial')} ({verb}), {feasible}{sim}; {best_text} -> {printable(str(shown))}")
    return 0 if finished.reason != "error" else 1


def _autosave_continued_elsewhere(args: argparse.Namespace, output: Path | None) -> Path | None:
    """The autosave a run continues into a file of the person's (``tune --resume AUTOSAVE --out
    FILE``, as a window's note advises), to be removed once that file holds its trials, as the
    window's own recovery removes it: left, it was offered again as an unfinished run by every
    later window. None for any other run."""
    from workbench.core.fs import fixed_path
    from workbench.runner.autosave import autosave_dir

    if not isinstance(args.resume, str) or output is None:
        return None
    source = fixed_path(args.resume)  # (a journal named stands for its session: see _continued_by_journal)
    # a file of the autosave folder itself, not a link to one elsewhere: removing "the autosave"
    # removed the person's link and left the autosave, offered again
    if source == output or source.is_symlink() or source.parent != fixed_path(autosave_dir() / source.name).parent:
        return None
    return source


def _as_given(output: Path | None, given: Any) -> Path | None:
    """``output`` (the run's file, fixed as an absolute path when it started) as the person spelt
    it on the command line, when that spelling names it: what the lines about it say."""
    from workbench.core.fs import fixed_path

    if output is None or not isinstance(given, str):
        return output
    return Path(given) if fixed_path(given) == output else output


def _trials_not_on_disk(session: Any, out: Path) -> int:
    """How many of ``session``'s trials neither the file at ``out`` nor its journal holds (all of
    them when those do not open as this session): what a failed save would lose."""
    from workbench.core.domain.session import load_session, read_journal

    held: set[tuple[int, str]] = set()
    try:
        on_disk = load_session(out)
        if on_disk.id == session.id:
            held = {(trial.index, trial.config.id) for trial in on_disk.trials}
    except (WorkbenchError, OSError):  # the file no session (a folder put there): the journal alone, if it is ours
        try:
            header, journalled = read_journal(out)
            if header is not None and header.get("id") == session.id:
                held = {(trial.index, trial.config.id) for trial in journalled}
        except (WorkbenchError, OSError):
            pass
    return sum((trial.index, trial.config.id) not in held for trial in session.trials)


def _idle_directions_after(run: Any) -> list[str]:
    """Weights, bounds and directions on metrics no trial reported, said after a run of a backend
    that declares no metrics (a python benchmark): before the run any name might still be
    reported, so nothing was said then, and a misspelt ``--maximize`` or a weight on a metric the
    benchmark does not report would otherwise pass unremarked (a run that ranks nothing)."""
    from workbench.core.domain.metrics import ALWAYS_REPORTED, idle_directions
    from workbench.runner.plan import available_metrics

    if available_metrics(run.spec) is not None:  # checked before the run, against the declaration
        return []
    session = run.session
    seen = {name for trial in session.trials for name in trial.measurement.metrics}
    if not seen:  # nothing reported at all: no trial says what the benchmark reports
        return []
    stored = session.strategy.get("objectives") if isinstance(session.strategy, dict) else None
    weighted = [m for m, w in session.weights.values.items() if w > 0]
    bounded = [b.metric for b in session.constraints.bounds()]
    reported = ", ".join(sorted(seen | {ALWAYS_REPORTED}))
    unreported = [
        f"{what} {metric!r}: no trial of the run reported it (the benchmark reports {reported}): {effect}; "
        "a typo, or a metric the benchmark does not return"
        for what, metrics, effect in (("weighted metric", weighted, "it scores no trial"),
                                      ("constrained metric", bounded, "its bound excludes every trial"))
        for metric in dict.fromkeys(metrics) if metric not in seen and metric != ALWAYS_REPORTED
    ]
    return unreported + idle_directions(session.weights.directions, weighted + bounded + list(stored or ()), seen)


#: ``tune`` flags that only one backend uses: (destination, flag, that backend, what the others lack).
#: Any other backend would ignore them, so they are refused rather than recorded and not acted on.
BACKEND_FLAGS: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    ("refine_wait", "--refine-wait", ("sim",), "has no estimates to refine"),
    ("gpu_model", "--gpu-model", ("sim",), "simulates no GPU model"),
    ("noise", "--no-noise", ("sim",), "models no timing noise"),
    ("resources", "--resources", ("sim",), "models no resources"),
    ("delay", "--delay", PACED_BACKENDS, "runs at the speed of what it measures"),
    ("allow_mixed_gpus", "--allow-mixed-gpus", ("cuda",), "is not spread over GPUs"),
    # a replay's figures are the recording's: a limit on the time it takes to look one up made
    # trials time out or not by the speed of the machine replaying
    ("timeout", "--timeout", ("cuda", "sim", "python"), "reads recorded figures and times nothing"),
    ("compile_timeout", "--compile-timeout", ("cuda", "sim", "python"), "compiles nothing"),
    ("kernel_dir", "--kernel-dir", ("cuda", "sim", "python"), "loads no template or benchmark"),
)


def _check_backend_flags(args: argparse.Namespace, kind: str, whose: str = "") -> None:
    """Refuse a flag of :data:`BACKEND_FLAGS` given for a run on a backend it does not apply to (``kind``)."""
    for dest, flag, backends, lacks in BACKEND_FLAGS:
        if getattr(args, dest, None) not in (None, []) and kind not in backends:
            named = backends[0] if len(backends) == 1 else f"{', '.join(backends[:-1])} and {backends[-1]} backends"
            raise WorkbenchError(f"{flag} applies to the {named}{'' if len(backends) > 1 else ' backend'} "
                                 f"({whose or 'the '}{kind} backend {lacks})")


#: What ``tune --refine-only`` takes; any other flag would be ignored, so it is refused.
REFINE_ONLY_FLAGS = frozenset({"command", "resume", "out", "refine_only", "refine_wait", "workers", "timeout",
                               "compile_timeout", "quiet", "kernel_dir", "kernel"})
#: What ``--remeasure-aborted`` takes besides: the objective it re-measures under (a relaxed limit
#: is why one re-measures); everything else is the session's own.
REMEASURE_FLAGS = REFINE_ONLY_FLAGS - {"resume", "refine_only", "refine_wait"} | {
    "remeasure_aborted", "max_latency_ms", "max_memory_mb", "min_quality", "constraint", "weight", "maximize",
    "minimize"}
#: Flags whose option name is not their destination's.
_FLAG_NAMES = {"warm_start": "--no-warm-start", "kernel": "KERNEL", "noise": "--no-noise/--noise",
               "option": "--option", "constraint": "--constraint", "weight": "--weight"}


def _flags_given(args: argparse.Namespace, keep: frozenset[str]) -> list[str]:
    """The ``tune`` flags given (different from their defaults) other than those in ``keep``."""
    defaults = vars(build_parser().parse_args(["tune"]))
    return [_FLAG_NAMES.get(dest, "--" + dest.replace("_", "-")) for dest, value in vars(args).items()
            if dest not in keep and dest in defaults and value != defaults[dest]]


def _refine_only(args: argparse.Namespace) -> int:
    """``tune --resume --out SESSION --refine-only``: refine SESSION's estimated trials, every size."""
    from workbench.runner.controller import RunRequest, refine_pending

    out = args.resume if isinstance(args.resume, str) else args.out
    if not args.resume or out is None:
        raise WorkbenchError("--refine-only continues a session: tune --resume --out FILE --refine-only")
    if isinstance(args.resume, str) and args.out is not None:
        raise WorkbenchError("--refine-only refines the session in place: give it once (--resume --out FILE)")
    given = _flags_given(args, keep=REFINE_ONLY_FLAGS)
    if given:
        raise WorkbenchError(f"--refine-only evaluates nothing new with the session's own settings; drop {given[0]}")
    request = RunRequest(kernel=args.kernel, kernel_dirs=tuple(args.kernel_dir), workers=args.workers,
                         compile_timeout_s=args.compile_timeout, run_timeout_s=args.timeout)
    run, message = refine_pending(out, request)
    if run is None:
        print(f"{message} in {printable(str(out))}")
        from workbench.core.domain.session import load_session

        session = load_session(out)
        estimated = sum(t.measurement.resources_estimated for t in session.trials)
        if estimated:  # show says they hold estimates: say why none of them is waiting for a compile
            print(f"note: {estimated_line(session, estimated)}")
        return 0
    wait = REFINE_ONLY_WAIT_S if args.refine_wait is None else args.refine_wait
    run.engine.refine_wait_s = wait
    run.subscribe(_ProgressLine(args.quiet, says_end=False))
    started = time.monotonic()
    finished = run.run()
    left = run.engine.unrefined
    kept = (f"; {left} still estimated after {time.monotonic() - started:.0f} s (a --refine-wait of {wait:g} s; "
            "run it again)" if left else "")
    print(f"{run.session.kernel}: refined {counted(run.refined, 'trial')}{kept} -> {printable(str(out))}")
    return 0 if finished.reason != "error" else 1


def _remeasure_aborted(args: argparse.Namespace) -> int:
    """``tune --remeasure-aborted --out SESSION``: re-measure aborted candidates of SESSION."""
    from workbench.core.domain.session import load_session
    from workbench.runner.controller import RunRequest, remeasure_aborted

    if args.out is None:
        raise WorkbenchError("--remeasure-aborted: name the session with --out FILE")
    if args.replay or args.strategy or (args.kernel and not args.kernel.endswith(".py")):
        raise WorkbenchError("--remeasure-aborted uses the session's own kernel and backend; drop KERNEL, --replay and --strategy")
    if args.sizes or args.warm_start is not None or args.refine_only:
        flag = "--sizes" if args.sizes else "--no-warm-start" if args.warm_start is not None else "--refine-only"
        raise WorkbenchError(f"--remeasure-aborted re-measures the sizes the session has; drop {flag}")
    given = _flags_given(args, keep=REMEASURE_FLAGS)
    if given:  # a device, a problem or a budget of its own would be ignored, or measure something else
        raise WorkbenchError(f"--remeasure-aborted re-measures with the session's own backend and settings under "
                             f"the objective given; drop {given[0]}")
    from workbench.core.domain.session import has_journal

    if not Path(args.out).is_file() and not has_journal(args.out):
        raise WorkbenchError(f"--remeasure-aborted: --out {args.out} must be an existing session file")
    base = load_session(args.out)
    constraints, weights = objective_from_args(args, base, args.out)
    request = RunRequest(kernel=args.kernel, kernel_dirs=tuple(args.kernel_dir), constraints=constraints,
                         weights=weights, workers=args.workers, compile_timeout_s=args.compile_timeout,
                         run_timeout_s=args.timeout)
    run, message = remeasure_aborted(args.out, request)
    if run is None:
        print(f"{base.kernel}: {message}")
        if objective_flags_given(args):  # the docs' "they become the session's" holds for a re-measurement only
            print(f"note: {printable(str(args.out))} is unchanged: the objective flags become the session's "
                  "with what they re-measure (show FILE with the same flags views its trials under them)",
                  file=sys.stderr)
        return 0
    run.subscribe(_ProgressLine(args.quiet))
    finished = run.run()
    print(f"{run.session.kernel}: {message.replace('re-measuring', 're-measured')}; "
          f"{feasible_count(run.session)} feasible -> {printable(str(args.out))}")
    return 0 if finished.reason != "error" else 1
