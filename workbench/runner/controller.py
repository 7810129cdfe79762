"""The run controller: the one place that turns a person's request into a running engine.

The command line and the window both come here, so a run means the same whoever starts it:
a new session, a session continued with the settings it was saved with (any backend: python,
replay, sim, cuda), a run resumed after a crash from its journal, and the end of a run (final
save, lock released). Nothing else in the product builds engines. It knows nothing of Qt, like
napari's ``ViewerModel``: the window is a view over it.

A session file has one writer at a time (:class:`~workbench.core.io.session_lock.SessionLock`), taken
before anything at the output path is read or moved and held until the final save.
"""

from __future__ import annotations

import dataclasses
import math
import logging
import os
import shlex
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence


from workbench.backends.base import PACED_BACKENDS, BackendSpec, EvalLimits, Target, pace_option
from workbench.backends.python import CODE_HASH_OPTION, code_identities, host_device_name
from workbench.backends.replay import load_recording, reading_now
from workbench.core.fs import fixed_path
from workbench.core.errors import SpaceSearchTooLong, WorkbenchError, counted, quoted
from workbench.core.domain.measurement import Status, Trial
from workbench.core.domain.metrics import check_metrics, check_slips, idle_directions
from workbench.core.domain.objective import Constraints, Weights, check_stored_constraints, exact_number, settled_misses
from workbench.core.domain.records import StrategyInfo, backend_options
from workbench.core.io.output_files import (
    backup_path,
    check_folder,
    check_one_name,
    check_regular_or_absent,
    check_session_name,
    check_writable,
    keep_backup,
    same_file,
    same_place,
)
from workbench.core.domain.run_settings import DEFAULT_BUDGET, MAX_COUNT, RunSettings
from workbench.core.domain.session import (
    Session,
    clean_stale_temporaries,
    disk_key,
    has_journal,
    is_session_file,
    journal_path,
    load_session,
    new_session_id,
    save_session,
)
from workbench.core.domain.search_objective import Objective, check_stored_directions
from workbench.core.io.session_lock import SessionLock
from workbench.core.domain.narrowing import narrowings, split_narrowings
from workbench.core.domain.space import Config, restriction_note
from workbench.core.domain.templates import likeliest_first
from workbench.core.domain.sizes import (
    SWEEP_KEY,
    SweepPlan,
    problem_key,
    problems_of,
    remeasurable,
    set_sweep_plan,
    size_grid,
    sweep_plan,
    trials_by_problem,
    warm_start_configs,
)
from workbench.runner.autosave import refuse_autosave_folder
from workbench.runner.costmodel import sim_predictor
from workbench.runner.engine import Engine
from workbench.runner.events import Event, RunFinished
from workbench.runner.executors import ExecutorChoice, check_workers, plan_execution
from workbench.runner.request import RunRequest
from workbench.runner.run import Run
from workbench.runner.plan import (
    available_metrics,
    check_no_problem,
    make_backend_spec,
    new_session,
    open_target,
    replacement_note,
)
from workbench.runner.sweep import SizeRun, SweepRun
from workbench.search.base import DEFAULT_PARETO_STRATEGY, DEFAULT_STRATEGY, STRATEGIES, Strategy, create_strategy, shown_value, strategy_class
from workbench.search.listed import Listed
from workbench.search.pruning import with_pruning
from workbench.search.seeded import with_seeds

log = logging.getLogger(__name__)

#: How long a run looks for one valid config before it starts (see SearchSpace.first_valid): a
#: space whose restrictions leave none is refused then, not after a run that ends at once.
FIRST_VALID_SEARCH_S = 5.0


# ------------------------------------------------------------------------------------------------
# Entry points
# ------------------------------------------------------------------------------------------------


def start_run(request: RunRequest, output: str | os.PathLike[str] | None, *, resume: bool = False,
              force: bool = False, inputs: Iterable[str | os.PathLike[str]] = ()) -> Run | SweepRun:
    """A run whose session lives at ``output`` (the command line's ``tune``).

    An existing session at ``output`` (its file, or only the journal a killed run left) is
    continued with ``resume``, replaced with ``force`` (kept as ``FILE.bak``), and otherwise
    refused. Anything else at ``output`` is refused unless ``force``.
    """
    out = Path(output) if output is not None else None
    resolved = None if resume else _resolve_new(request)  # bad input is reported before the output
    if out is None:
        return _prepare_any(request, None, None, None, resolved)
    check_folder(out)
    check_regular_or_absent(out)
    if resume:
        check_one_name(out)
    try:
        _check_writable(out, "continue into another file with --out OTHER" if resume
                        else "name another file with --out")
    except WorkbenchError:
        # A file that is no session (a cache, a gzipped one) says so first: making it writable would
        # only lead to that refusal. Read only when it is small: parsing a large file that is no
        # session took seconds and gigabytes to refuse it, and a session is refused as read-only.
        if resume and out.is_file() and out.stat().st_size <= _SNIFFED_BYTES and not is_session_file(out):
            load_session(out)
        raise
    _refuse_code_as_output(request, out, inputs)
    if not resume:  # (continuing an autosave, as recovering it does, stays allowed)
        refuse_autosave_folder(out)
    lock = SessionLock(out).acquire()
    try:
        clean_stale_temporaries(out)
        existing = out.exists() or has_journal(out)
        if existing and resume:
            session = load_session(out)
            check_stored_constraints(request.constraints or session.constraints, out)
            return _prepare_any(request, session, out, lock)
        if existing and not force:
            raise WorkbenchError(_why_not_replaced(out))
        if resume:
            raise WorkbenchError(f"--resume: {out} does not exist")
        run = _prepare_any(request, None, out, lock, resolved or _resolve_new(request))
        if existing:  # only once the new run is known to start: a refused one moves nothing
            _back_up_session(out)
        return run
    except BaseException:
        lock.release()
        raise


#: Largest read-only file ``--resume`` reads to say what it is instead of that it is read-only.
_SNIFFED_BYTES = 16 * 1024 * 1024


def _lock(out: Path, held: SessionLock | None) -> SessionLock:
    """The lock of ``out``: taken now, or lent by the caller who holds it (``held``), whose lock
    then outlives the run (releasing what this returns leaves it held)."""
    if held is None:
        return SessionLock(out).acquire()
    if held.path != SessionLock(out).path:
        raise WorkbenchError(f"{out}: the lock given is {held.path}'s")
    return held.lent()


def _check_writable(out: Path, instead: str | None) -> None:
    """The session file and its journal may be written (neither was made read-only), and the
    journal's name is free for a file (a folder there failed the run's first write, exit 1)."""
    check_writable(out, instead)
    journal = journal_path(out)
    if os.path.lexists(journal) and not journal.is_file():  # a folder, a device, or a link to nothing
        raise WorkbenchError(f"--out {out}: its journal's name, {journal.name}, is taken by "
                             f"{'a folder' if journal.is_dir() else 'a link to nothing' if not journal.exists() else 'something that is not a file'}; "
                             "move that away or name another file with --out")
    check_writable(journal, instead)


def _refuse_code_as_output(request: RunRequest, out: Path, inputs: Iterable[str | os.PathLike[str]]) -> None:
    """A run never writes its session over what it reads: the benchmark it runs, the recording it
    replays, the session it continues (not even with ``--force``: the run would then need what it
    just replaced); nor at a code file's name (:func:`check_session_name`)."""
    code = [Path(p) for p in inputs] + ([Path(request.replay)] if request.replay else [])
    if request.kernel and request.kernel.endswith(".py"):
        code.append(Path(request.kernel))
    if out.exists() and any(same_place(out, p) for p in code if p.exists()):
        raise WorkbenchError(f"--out {out}: is this run's input; name another file for the session")
    check_session_name(out)


def _journal_alone(out: Path) -> Path:
    """The session name under which ``--force`` keeps a journal at ``out`` that opens with no
    session (the journal itself is that name's :func:`journal_path`; see :func:`_back_up_session`)."""
    return backup_path(out.with_name(f"{out.stem}.journal-only{out.suffix}"))


def _why_not_replaced(out: Path, source: Path | None = None) -> str:
    """Why ``--out`` is left alone, and the flags that replace or continue what is there. From
    ``tune --resume SOURCE --out OUT`` (``source`` given), "--resume continues it" was advice
    already taken: the session at OUT is continued by resuming OUT itself."""
    keep = f"keeping it as {backup_path(out).name}"
    resume = "--resume" if source is None else f"--resume {out} (without --out)"
    if not out.exists():
        try:
            load_session(out)  # the journal alone, kept as a session file
        except WorkbenchError as exc:
            return (f"--out {out}: {journal_path(out).name} is there and does not open as a session's journal "
                    f"({exc}); --force replaces it (keeping it as {journal_path(_journal_alone(out)).name})")
        return (f"--out {out}: the journal of an unsaved run is there ({journal_path(out).name}); "
                f"{resume} recovers and continues it, --force replaces it ({keep})")
    try:
        session = load_session(out)
    except WorkbenchError as exc:
        if not os.path.lexists(journal_path(out)):
            return f"--out {out}: exists and is not a workbench session; --force replaces it ({keep})"
        # (a session beside a journal that is not its own, or is damaged: the loader's reason is
        # the one to give, naming both files; "not a workbench session" was wrong about a real one)
        return f"--out {out}: does not open ({exc}); --force replaces it ({keep})"
    replaced = "" if source is None else f" with {source} continued"
    return (f"--out {out}: holds a session of {session.kernel!r} with {len(session.trials)} trials; "
            f"{resume} continues it, --force replaces it{replaced} ({keep})")


def resume_run(path: str | os.PathLike[str], request: RunRequest = RunRequest(),
               output: str | os.PathLike[str] | None = None, *, force: bool = False) -> Run | SweepRun:
    """Continue the session at ``path`` with its own settings (``tune --resume SESSION``); flags in
    ``request`` override them and are recorded. ``output`` (default ``path``) is where it goes."""
    source = Path(path)
    # the same file under another spelling (through a linked folder, say) is in place; a link at
    # --out itself, or another name of the file (a hard link), is not
    same_name = output is not None and not os.path.islink(output) and Path(output).resolve() == source.resolve()
    if output is None or same_name:
        if force:
            raise WorkbenchError("--resume continues the session and --force replaces it: choose one "
                                 "(--force with --out OTHER replaces OTHER)")
        return start_run(request, source, resume=True)
    if same_place(output, source):
        # Another name of the same file: continuing "into" it wrote the session under its own
        # name, leaving a symbolic link alone and a hard link holding the old trials.
        check_regular_or_absent(Path(output))  # a symbolic link: refused as every --out is
        raise WorkbenchError(f"--out {output}: is another name (a hard link) of {source}; continue into "
                             f"{source} itself (drop --out) or name another file")
    session = load_session(source)
    check_stored_constraints(request.constraints or session.constraints, source)
    out = Path(output)
    check_folder(out)
    check_regular_or_absent(out)
    _check_writable(out, "name another file with --out")
    _refuse_code_as_output(request, out, [source])
    session.id = new_session_id()  # a copy continued elsewhere is a session of its own
    lock = SessionLock(out).acquire()
    try:
        clean_stale_temporaries(out)
        existing = out.exists() or has_journal(out)
        if existing and not force:
            raise WorkbenchError(_why_not_replaced(out, source))
        run = _prepare_any(request, session, out, lock)
        if existing:  # only once the continued run is known to start
            _back_up_session(out)
        return run
    except BaseException:
        lock.release()
        raise


def prepare_run(request: RunRequest, session: Session | None,
                output: str | os.PathLike[str] | None, *, held: SessionLock | None = None) -> Run | SweepRun:
    """A run for the window: continue ``session`` (when given) or start a new one, writing to
    ``output`` (the session's file, or an autosave path the window chose). The window decides
    beforehand whether a request continues the open session (:func:`continues`).

    ``held``: the lock of ``output`` the caller already holds and keeps after the run (the window
    holds its unsaved session's autosave for as long as it shows it); the run writes under it."""
    out = Path(output) if output is not None else None
    if session is not None:
        check_stored_constraints(request.constraints or session.constraints, out)
    lock = _take_output(out, session, held)
    try:
        return _prepare_any(request, session, out, lock)
    except BaseException:
        if lock is not None:
            lock.release()
        raise


def _take_output(out: Path | None, session: Session | None, held: SessionLock | None = None) -> SessionLock | None:
    """For a run the window prepares: check that ``out`` may be written, take its lock (or borrow
    ``held``), clear temporaries a killed save left, and take in the trials another run added to
    the file meanwhile (:func:`catch_up`); the lock, released again when any of this fails (None
    without a file)."""
    if out is None:
        return None
    # named as the window's session file: --out is the command line's, and no control of the window
    check_folder(out, "session file")
    check_regular_or_absent(out, "session file")
    check_session_name(out, "session file")
    if session is not None:
        check_one_name(out)
    _check_writable(out, "save the session under another name (Save As) to continue there")
    lock = _lock(out, held)
    try:
        clean_stale_temporaries(out)
        if session is not None:
            catch_up(session, out)
    except BaseException:
        lock.release()
        raise
    return lock


def prepare_cells(request: RunRequest, session: Session, output: str | os.PathLike[str] | None,
                  cells: Sequence[tuple[Mapping[str, Any], Config]], *, held: SessionLock | None = None) -> SweepRun:
    """A run that measures given configs at given sizes of ``session`` (the size view's missing
    cells: one size's best config at another size), one size after another, with the session's
    backend; nothing else is measured and no default config first. ``held``: as for
    :func:`prepare_run`."""
    by_size: dict[str, tuple[Mapping[str, Any], list[Config]]] = {}
    for problem, config in cells:
        entry = by_size.setdefault(problem_key(problem), (dict(problem), []))
        if config not in entry[1]:
            entry[1].append(config)
    if not by_size:
        raise WorkbenchError("nothing to measure: every cell is measured")
    out = Path(output) if output is not None else None
    check_stored_constraints(request.constraints or session.constraints, out)
    lock = _take_output(out, session, held)
    try:
        spec = _spec_for_continue(request, session)
        _check_sizes(spec, _open_continued_target(spec, session), [p for p, _c in by_size.values()])
        todo = [SizeRun(problem, len(configs)) for problem, configs in by_size.values()]
        _check_index_room(session, sum(size.budget for size in todo))
        wanted = {problem_key(p): c for p, c in by_size.values()}
        if request.constraints is not None:  # recorded once: each size then keeps the session's current one
            session.constraints = request.constraints
        if request.weights is not None:
            session.weights = request.weights
        base = dataclasses.replace(request, sizes=None, warm_start=None, constraints=None, weights=None)

        def prepare_size(problem: Mapping[str, Any], budget: int) -> Run:
            sized = dataclasses.replace(base, problem=dict(problem), budget=budget)
            return _prepare(sized, session, out, None, size=problem, configs=wanted[problem_key(problem)])

        return SweepRun(session, todo, prepare_size, out, lock, True, spec)
    except BaseException:
        if lock is not None:
            lock.release()
        raise


def catch_up(session: Session, path: Path, replace: bool = False) -> None:
    """Bring ``session`` (as the window loaded it) up to date with the file at ``path`` before it is
    written again: trials another run added meanwhile (a ``tune --resume``) are taken in. When both
    sides have trials the other lacks, writing either would lose some: refuse, and say how to go on.

    A file that is no longer this session (another session written there since, by ``tune --force``
    or a copy, or something that is not a session) is refused too: writing would destroy it. With
    ``replace`` (the person chose this path to save to and confirmed replacing it) it is kept as
    ``.bak`` instead, as ``--force`` does. The caller holds the session's lock, so the file cannot
    change while this runs."""
    if not path.exists() and not has_journal(path):
        return
    disk: Session | None
    try:
        disk = load_session(path)
    except WorkbenchError as exc:
        what = f"something that is not a session ({str(exc)[:120]})"
        disk = None
    else:
        what = f"another session ({disk.kernel!r}, {len(disk.trials)} trials)"
    if disk is None or disk.id != session.id:
        if replace and (path.exists() or has_journal(path)):
            # as --force keeps it: the file with the journal a killed run left beside it, or the two
            # apart; a copy of the file alone left that journal beside the saved session, which then
            # would not open, and the run's trials in no file that does. A file made read-only is
            # refused first, as every writer refuses it; the file itself stays until the save.
            check_writable(path, "save to another file")
            _back_up_session(path, keep_file=True)
            return
        raise WorkbenchError(f"{path} now holds {what}, not the session shown here; save this one under "
                             "another name, or open that file")
    on_disk, before = (disk.constraints, disk.weights), session.objective_on_disk.get(disk_key(path))
    if before is not None and on_disk != before and on_disk != (session.constraints, session.weights):
        # changed there since this session was read or written here: writing would put this
        # session's constraints and weights back over the other writer's without a word
        raise WorkbenchError(f"the constraints or weights in {path} were changed elsewhere since it was opened "
                             "here (another window, or tune --resume); save this session under another name, "
                             "or reopen the file")
    ours = {t.index: t.config.id for t in session.trials}
    theirs = {t.index: t.config.id for t in disk.trials}
    new_on_disk = [t for t in disk.trials if t.index not in ours]
    clash = [i for i in ours.keys() & theirs.keys() if ours[i] != theirs[i]]
    unsaved = ours.keys() - theirs.keys()
    if clash or (new_on_disk and unsaved):
        raise WorkbenchError(f"{path} changed since it was opened ({len(disk.trials)} trials there, "
                             f"{len(session.trials)} here, {len(unsaved)} of them unsaved); save this "
                             "session under another name, or reopen the file")
    if new_on_disk:
        session.trials = sorted([*session.trials, *new_on_disk], key=lambda t: t.index)


def continues(request: RunRequest, session: Session | None) -> bool:
    """Whether ``request`` asks for more of ``session`` (same kernel, problem, code and device)
    rather than a new session: the window continues the open session in that case."""
    try:
        return session is not None and why_not_continued(request, session) is None
    except WorkbenchError:
        return False


def why_not_continued(request: RunRequest, session: Session) -> str | None:
    """Why ``request`` starts a new session instead of continuing ``session`` ("the kernel is
    'gelu'"), None when it continues it; a request that could not start at all raises its error."""
    if request.kernel is None and request.replay is None and request.backend is None:
        return None
    recorded = (session.backend.get("options") or {}).get("path") if _python_session(session) else None
    if (isinstance(recorded, str) and request.kernel and request.kernel.endswith(".py") and session.source_hash
            and Path(request.kernel).name == Path(recorded).name):
        # told from the file's text, before its declarations are read (which runs its top level):
        # a file of other code named for the session's benchmark ran once before being refused
        if _holds_session_code(session, Path(request.kernel)) is False:
            return "the kernel's code changed since the session was measured"
    spec = _spec_for_new(request)
    return _same_target(session, open_target(spec), spec)


def _python_session(session: Session) -> bool:
    backend = session.backend if isinstance(session.backend, dict) else {}
    return backend.get("kind") == "python"


def runs_moved_benchmark(session: Session, kernel: str | None) -> bool:
    """Whether ``kernel`` names the session's python benchmark at another place: a file of the same
    name holding the code the session measured (told from its text: nothing is imported), which a
    continued run takes for it (see :func:`_spec_for_continue`)."""
    if not (_python_session(session) and kernel and kernel.endswith(".py") and session.source_hash):
        return False
    recorded = (session.backend.get("options") or {}).get("path")
    if not isinstance(recorded, str) or Path(kernel).name != Path(recorded).name:
        return False
    if session.device.get("name") not in (None, "", host_device_name()):
        return False  # (a session measured on another machine: continuing it is refused as another device)
    return bool(_holds_session_code(session, Path(kernel)))


def _holds_session_code(session: Session, path: Path) -> bool | None:
    """Whether the python file at ``path`` holds the code the session measured, told from its text
    (nothing is imported); None when it cannot be read."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return session.source_hash in code_identities(data, path.resolve().parent)


def run_to_end(request: RunRequest, output: str | os.PathLike[str] | None, *,
               listeners: Iterable[Callable[[Event], None]] = (), resume: bool = False,
               force: bool = False) -> tuple[Session, RunFinished]:
    """Start (or continue) and run to the end in this thread: headless callers' one call.

    The workers are spawned processes, which import the caller's script before they start: a
    script calls this under ``if __name__ == "__main__":``, or each worker starts the run again
    while it is being imported, and exits (the run ends as failed to start)."""
    run = start_run(request, output, resume=resume, force=force)
    for listener in listeners:
        run.subscribe(listener)
    return run.session, run.run()


# ------------------------------------------------------------------------------------------------
# Building the run
# ------------------------------------------------------------------------------------------------


def _resolve_new(request: RunRequest) -> tuple[BackendSpec, Target]:
    """A new session's backend and target, and its strategy's options checked (no worker starts)."""
    spec = _spec_for_new(request)
    target = open_target(spec)
    name = request.strategy or _unnamed_strategy(_objectives(request, StrategyInfo()))
    strategy_class(name).validate_options(dict(request.strategy_options or {}))
    if request.sizes:
        _check_problem_swept(request.problem, request.sizes)
        _check_sizes(spec, target, size_grid(target.problem, request.sizes))
    return spec, target


def _check_problem_swept(problem: Mapping[str, Any] | None, sizes: Mapping[str, Sequence[Any]]) -> None:
    """A problem the person names for a sweep names sizes it sweeps: the session's own problem must be
    one that is measured (a value outside the swept ones would have no trial at it). Checked where
    every sweep is prepared, new or continued, for the command line and the window alike."""
    given = dict(problem or {})
    for name in sorted(set(sizes) & set(given)):
        if given[name] not in sizes[name]:
            raise WorkbenchError(template=f"{{problem:{quoted(name)}={quoted(given[name])}}} is not one of the swept "
                                          f"sizes ({{sizes:{quoted(name)}=...}}): no trial would be measured at it")


def _prepare_any(request: RunRequest, session: Session | None, output: Path | None, lock: SessionLock | None,
                 resolved: tuple[BackendSpec, Target] | None = None) -> Run | SweepRun:
    """A run, or a size sweep when the request names sizes or the session continued is a sweep.

    ``output`` is fixed here against the working folder of the start: a run whose candidate
    changed or removed that folder still writes its journal and session where they were asked
    for (or, where the folder itself is gone, says what it could not save)."""
    output = fixed_path(output) if output is not None else None
    plan = sweep_plan(session) if session is not None else None
    if request.warm_start is not None and not request.sizes and plan is None:
        raise WorkbenchError("--no-warm-start applies to a size sweep: give --sizes (or continue a sweep's session)")
    if not request.sizes and plan is None:
        return _prepare(request, session, output, lock, resolved)
    return _prepare_sweep(request, session, output, lock, resolved, plan)


def _check_sizes(spec: BackendSpec, target: Target, problems: Sequence[Mapping[str, Any]],
                 where: str = "{sizes}") -> list[str]:
    """Every size of a sweep is a problem the template accepts (one line naming the bad value;
    ``where`` says where the sizes came from, as an error's template: ``{sizes}`` is the setting).
    Returns what the sizes' targets have to say when the sweep starts (a size its default config
    does not fit), each once."""
    if target.kind != "template":
        what = {"python": "a python benchmark", "recording": "a recording"}.get(target.kind, f"a {target.kind}")
        raise WorkbenchError(template=f"{where}: {quoted(repr(target.kernel))} has one fixed problem ({what}); "
                                      "sweeping sizes needs a template")
    notes: dict[str, None] = {}
    for problem in problems:
        try:
            sized = open_target(BackendSpec(spec.kind, {**spec.options, "problem": dict(problem)}))
        except WorkbenchError as exc:
            raise exc.prefixed(f"{where}: ") from None
        notes.update(dict.fromkeys(sized.notes))
    return list(notes)


def _resolved_plan(spec: BackendSpec, plan: SweepPlan, base: Mapping[str, Any], where: str = "{sizes}") -> SweepPlan:
    """``plan`` with every value as the template resolves it (``1024.0`` -> ``1024`` for an integer
    parameter, ``1`` -> ``1.0`` for a float one), each once: trials record the resolved problem,
    and a size counts as done only when its plan value has the same key as its trials' problem."""
    sizes: dict[str, tuple[Any, ...]] = {}
    for name, values in plan.sizes.items():
        seen: dict[str, Any] = {}
        for value in values:
            try:
                target = open_target(BackendSpec(spec.kind, {**spec.options, "problem": {**base, name: value}}))
            except WorkbenchError as exc:
                raise exc.prefixed(f"{where}: ") from None
            resolved = target.problem.get(name, value)
            seen.setdefault(problem_key({name: resolved}), resolved)
        sizes[name] = tuple(seen.values())
    return dataclasses.replace(plan, sizes=sizes)


def _prepare_sweep(request: RunRequest, session: Session | None, output: Path | None, lock: SessionLock | None,
                   resolved: tuple[BackendSpec, Target] | None, plan: SweepPlan | None) -> SweepRun:
    """One run per size still to measure, prepared one after another by :class:`SweepRun`.

    The session (new, or continued with the request's settings) is prepared as for a plain run,
    without running it; each size then runs with its own target, space and default config, and its
    budget is what that size lacks of the plan's evaluations per size (``budget``, when given, is
    the new number per size)."""
    # Before the base run below opens anything: a problem named for the sweep is one of its sizes
    # (a continued sweep's, with those the request adds); a continued session's own problem, named
    # again, is the one it was started with (a template's default need not be swept).
    swept = request.sizes if plan is None else (plan.merged(request.sizes) if request.sizes else plan).sizes
    # A session measured at one size, continued as a sweep: its budget is the evaluations per size
    # (read before the base run below records one of its own). The default of 100 per size made
    # `--set n=4096 --budget 4` then `--resume --sizes n=65536,1048576` measure 296 configs.
    recorded_budget = session.run.budget if session is not None and plan is None else None
    named = dict(request.problem or {})
    if session is not None:
        named = {k: v for k, v in named.items() if k not in session.problem or session.problem[k] != v}
    _check_problem_swept(named, swept or {})
    base_request = dataclasses.replace(request, sizes=None, warm_start=None, budget=1)
    base = _prepare(base_request, session, output, None, resolved)
    session, spec = base.session, base.spec
    if plan is None:
        plan = SweepPlan(_with_measured_sizes(session, request.sizes or {}),
                         request.budget or recorded_budget or DEFAULT_BUDGET,
                         True if request.warm_start is None else request.warm_start)
    else:
        if request.sizes:
            plan = plan.merged(request.sizes)
        budget = request.budget or plan.budget
        # a size that ended early under the old number is due more under a new one, except one
        # that measured every config its search could find: more evaluations find nothing more
        # there (unless the space changes: domains edited in the window, below)
        ended = plan.ended if budget == plan.budget else {
            key: mark for key, mark in plan.ended.items() if mark[0] == "exhausted"}
        plan = dataclasses.replace(plan, budget=budget,
                                   warm_start=plan.warm_start if request.warm_start is None else request.warm_start,
                                   ended=ended)
    # Sizes the person did not give come from the session file (its extra.sweep): say so.
    where = "{sizes}" if request.sizes else f"the session's size sweep (extra.{SWEEP_KEY} in its file)"
    plan = _resolved_plan(spec, plan, session.problem, where)
    problems = plan.problems(session.problem)
    size_notes = _check_sizes(spec, open_target(spec), problems, where)
    groups = trials_by_problem(session)
    counts = [(p, len(groups.get(problem_key(p), ()))) for p in problems]
    # a size whose search measured every config it could find (ended "exhausted", its trials the
    # same since) has nothing left: run again, it proposed nothing and rewrote the file
    used_up = [(p, n) for p, n in counts if n < plan.budget and plan.ended_at(p, n) == "exhausted"
               and request.domains is None]  # (edited domains: a space of other configs, searched anew)
    todo = [SizeRun(p, plan.budget - n) for p, n in counts if n < plan.budget and (p, n) not in used_up]
    if not todo and used_up:
        spent = "; ".join(f"{', '.join(f'{k}={p[k]}' for k in plan.sizes)} after {counted(n, 'evaluation')}"
                          for p, n in used_up[:4])
        more = f" and {len(used_up) - 4} more" if len(used_up) > 4 else ""
        rest = (f", and every other size of the sweep has its {plan.budget} evaluations"
                if len(used_up) < len(problems) else "")
        raise WorkbenchError(template=f"nothing left to measure: the search measured every config it could find at "
                                      f"{spent}{more}{rest}; add sizes to {{sizes}}")
    if not todo:
        fewest = min(len(groups.get(problem_key(p), ())) for p in problems)
        raise WorkbenchError(template=f"every size of the sweep already has {fewest} evaluations or more, the "
                                      f"{plan.budget} per size asked for; raise {{budget}} (evaluations per size) "
                                      "or add sizes to {sizes}")
    _check_index_room(session, sum(size.budget for size in todo))  # the whole sweep, before its first size
    set_sweep_plan(session, plan)
    # The request's objective is the session's now (the base run above recorded it); each size
    # takes the session's objective as it is when that size starts, so a constraint or weight
    # changed in the window during the sweep holds for the sizes after it.
    size_request = dataclasses.replace(request, sizes=None, warm_start=None, constraints=None, weights=None)

    def prepare_size(problem: Mapping[str, Any], budget: int) -> Run:
        sized = dataclasses.replace(size_request, problem=dict(problem), budget=budget)
        return _prepare(sized, session, output, None, size=problem, warm=plan.warm_start)

    warnings = list(dict.fromkeys([*base.warnings, *size_notes]))  # the base run's size may be one of them
    return SweepRun(session, todo, prepare_size, output, lock, base.continued, spec, warnings, searches=True,
                    checked_by=base)


def _with_measured_sizes(session: Session, sizes: Mapping[str, Sequence[Any]]) -> dict[str, tuple[Any, ...]]:
    """``sizes`` to sweep, led by the value the session's trials already ran at when it sweeps one
    parameter: a session measured at one size and continued as a sweep keeps that size in it, so
    a later ``--resume --budget N`` brings it to N evaluations as it does the others (it was left
    out of the plan, and skipped). A grid of several parameters is left as asked: its plan is
    every combination, and the measured values added to each parameter crossed the measured
    point with every value asked for (9 sizes for a grid of 4)."""
    if len(sizes) != 1:
        return {name: tuple(values) for name, values in sizes.items()}
    measured = problems_of(session)
    return {name: tuple(dict.fromkeys([*(p[name] for p in measured if name in p), *values]))
            for name, values in sizes.items()}


def _check_pace(spec: BackendSpec) -> None:
    """A demonstration's pace is a number of seconds from 0 to 60, said in one line before the run
    starts (the engine keeps it between candidates, so no evaluation's timeout is spent on it)."""
    if spec.kind in PACED_BACKENDS:
        pace_option(spec)


def _prepare(request: RunRequest, session: Session | None, output: Path | None, lock: SessionLock | None,
             resolved: tuple[BackendSpec, Target] | None = None, *, size: Mapping[str, Any] | None = None,
             warm: bool = False, configs: Sequence[Config] | None = None) -> Run:
    """A run of ``request``; with ``size``, a run of the continued ``session`` at that problem
    (one size of a sweep: the request's problem is ``size``), warm-started when ``warm``, or
    measuring exactly ``configs`` there (no default config first)."""
    continued = session is not None
    if session is None:
        spec, target = resolved or _resolve_new(request)
    else:
        if request.kernel is not None and not _names_kernel(request, session):
            raise WorkbenchError(f"the session is of {session.kernel!r}, not of {request.kernel!r}"
                                 f"{_renamed_benchmark_hint(request, session)}")
        spec = _spec_for_continue(request, session)
        target = _continued_target(spec, session, size)

    space = _edited_space(target, request, session)
    rules = "; ".join(space.restrictions)
    # configs known to be in the space answer at once: those to measure, those a session measured
    known = [*(configs or ()), *(t.config for t in (session.trials if session is not None else ()))]
    try:
        first = space.first_valid(FIRST_VALID_SEARCH_S, known)
    except SpaceSearchTooLong as exc:  # (a minute and more of silence before: refused, as a search would find none)
        raise WorkbenchError(f"{target.kernel}: no config meeting the restrictions ({rules}) was found in "
                             f"{FIRST_VALID_SEARCH_S:g} s ({exc}): a restriction over every slot is checked only "
                             "once all of them have values, so the walk meets few valid configs early; split it "
                             "into restrictions of fewer slots, loosen it or narrow the domains") from None
    if first is None:  # said before anything starts, rather than a run that ends at once
        why = "".join(f"; {restriction_note(*found)}" for found in space.uncomputable())
        raise WorkbenchError(f"{target.kernel}: no config of the search space meets its restrictions ({rules}){why}; "
                             "loosen them or widen the domains")
    strategy_info = StrategyInfo(**session.strategy) if session is not None else StrategyInfo()
    objectives = _objectives(request, strategy_info)
    strategy_name: str = request.strategy or strategy_info.get("name") or _unnamed_strategy(objectives)
    notes: list[str] = []
    looked_up = target.kernel if target.kind == "template" else request.kernel  # (a benchmark's NAME is its own)
    if not continued and target.kind in ("template", "python") and looked_up and not looked_up.endswith(".py"):
        notes += filter(None, [replacement_note(looked_up, request.kernel_dirs)])
    elif session is not None and target.kind == "template" and (left := _folders_not_given(spec, session)):
        # (its code is the one found without them, or the run was refused): said, since from now
        # on the session records no folder, and exports and the source view look for it elsewhere
        notes.append(f"the session's template came from {left[0]}; this run uses the template of that name "
                     f"found without it, whose code is the same, and the session records no folder from now "
                     f"on (give --kernel-dir {left[0]} to keep running it from there)")
    unsuited = strategy_class(strategy_name).unsuited(space)
    if unsuited and not (request.strategy or strategy_info.get("name") or request.strategy_options):
        # nobody chose it: a space the default's model cannot hold runs with the general-purpose model
        notes.append(f"the default strategy {strategy_name!r} cannot search this space ({unsuited}); "
                     f"searching it with {FALLBACK_STRATEGY!r}")
        strategy_name = FALLBACK_STRATEGY
    if objectives and not strategy_class(strategy_name).multi_objective:
        multi = sorted(n for n in STRATEGIES if strategy_class(n).multi_objective)
        stored = " (this session's)" if request.objectives is None else ""
        raise WorkbenchError(template=f"{{objectives}}{stored}: strategy {quoted(repr(strategy_name))} searches one score; "
                                      f"use {{strategy:{', '.join(multi)}}}, or {{objectives:none}} to search one score")
    seed = request.seed if request.seed is not None else int(strategy_info.get("seed") or 0)
    if request.strategy_options is not None:
        raw_options: Mapping[str, Any] = request.strategy_options
    elif strategy_name == strategy_info.get("name"):
        raw_options = dict(strategy_info.get("options") or {})
    else:  # switching back to a strategy this session ran before restores its options
        raw_options = dict((strategy_info.get("earlier_options") or {}).get(strategy_name) or {})
    if request.strategy_options is None:  # the session's own: what this version cannot take falls back
        raw_options, dropped = usable_stored_options(strategy_name, raw_options)
        notes += dropped
    options = strategy_class(strategy_name).validate_options(dict(raw_options))

    recorded = session.run if session is not None else RunSettings()
    recorded, remote = _without_remote_execution(recorded, request)
    notes += remote
    settings = recorded.merged(request.settings_overrides())
    done = len(session.trials) if session is not None else 0
    budget = _run_budget(request, settings, done, session)
    if budget is not None:
        settings = dataclasses.replace(settings, budget=done + budget)
    elif request.time_limit_s is not None or settings.time_limit_s is not None:
        settings = dataclasses.replace(settings, budget=None)
    if session is not None:
        _check_index_room(session, budget)

    choice = ExecutorChoice(settings.executor, settings.ray_address, settings.devices, settings.allow_mixed_gpus)
    plan = plan_execution(spec, choice, settings.workers, batch_parallel=strategy_class(strategy_name).batch_parallel)
    notes += (f"{strategy_name}: {note}" for note in plan.notes)  # said as the run's other warnings are
    spec = plan.spec

    strategy: Strategy = create_strategy(strategy_name, space, seed=seed, **options)
    if settings.prune_keep is not None and settings.prune_keep < 1.0:
        predictor = sim_predictor(spec, str(target.device.get("name", "")), target.device.get("compute_capability"))
        strategy = with_pruning(strategy, predictor, settings.prune_keep)
        cost_model = predictor.gpu
        if cost_model.note:
            notes.append(f"cost model: {cost_model.note}")  # said as the run's other warnings are
    else:
        cost_model = None

    stored_named: dict[str, None] = {}
    if session is None:
        session = new_session(spec, target, strategy=strategy_name, seed=seed, strategy_options=options,
                              constraints=request.constraints, weights=request.weights)
        session.space = space
        if session.default_config is not None and not space.in_domains(session.default_config):
            session.default_config = None  # edited out of the domains: no point of comparison to keep
    else:
        stored_named = _named_metrics(session, objectives if request.objectives is None else ())
        _update_continued(session, request, spec, target, space, strategy_name, seed, options)
        if size is not None:  # the session's backend keeps its own problem; the size is the trials'
            session.backend = {**spec.to_dict(), "options": {**spec.options, "problem": dict(session.problem)}}
    session.run = settings
    _check_pace(spec)
    session.constraints.check_possible()  # (a continued session's were checked naming its file)
    if objectives:
        session.strategy["objectives"] = list(objectives)
    named, available = _named_metrics(session, objectives), available_metrics(spec, target)
    if available is not None:  # a continued session's trials may report more than a declaration says
        available = available | {name for trial in session.trials for name in trial.measurement.metrics}
        session.constraints.check_declared_amounts(available)
    elif continued:  # (a backend that declares nothing ahead: what its trials reported is all there is to go on)
        check_slips([m for m in named if m not in stored_named],
                    {name for trial in session.trials if trial.ok for name in trial.measurement.metrics})
    # a metric nothing reports is said before one without a direction: asking for a direction of
    # a typo led to a second refusal
    if continued and output is not None:  # a name the file brought, not the command line: said naming the file
        check_metrics([m for m in named if m in stored_named], available, session.weights.directions,
                      what=f"{output}: the session's objective names metric", slots=space.names)
    warnings = check_metrics(named, available, session.weights.directions, slots=space.names)
    warnings += idle_directions(session.weights.directions, named, available)
    if continued and output is not None:  # (objective flags over the file's were checked naming it)
        filed = session.weights if request.weights is None else Weights(directions=session.weights.directions)
        check_stored_directions(filed, objectives if request.objectives is None else (), str(output))
    objective = Objective(session.constraints, session.weights, objectives)
    if cost_model is not None:  # which GPU the pruning model stands for, said where the person looks
        session.extra["cost_model"] = {"gpu_model": cost_model.spec.name, "exact": cost_model.exact,
                                       "note": cost_model.note}
    limits = EvalLimits(compile_timeout_s=settings.compile_timeout_s, run_timeout_s=settings.run_timeout_s,
                        max_latency_ms=session.constraints.max_latency_ms)
    if size is not None and configs is not None:
        strategy = Listed(space, configs=[c for c in configs if space.is_valid(c)])
    if size is not None and warm and configs is None:
        strategy = with_seeds(strategy, warm_start_configs(session, target.problem, cost=objective))
    engine = Engine(session, strategy, _workers_spec(spec, session), budget=budget, time_limit_s=settings.time_limit_s,
                    workers=plan.workers, limits=limits, patience=settings.patience, output=output,
                    pool_factory=plan.pool_factory, objective=objective,
                    problem=dict(target.problem) if size is not None else None,
                    reference=target.default_config if size is not None and configs is None else None)
    run = Run(session, engine, spec, output, lock, continued)
    run.warnings = list(target.notes) + notes + list(warnings)
    run.metrics = frozenset(available) if available is not None else None
    run.slots = tuple(space.names)
    run.strategy_name, run.multi_objective = strategy_name, strategy_class(strategy_name).multi_objective
    return run


def usable_stored_options(strategy_name: str, stored: Mapping[str, Any],
                          given: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], list[str]]:
    """The options a session recorded for ``strategy_name`` that this version's strategy takes,
    and a note for each one it does not (an option since removed or renamed, a value outside its
    range now, one that clashes with another, or with one of ``given``: options a person gives
    beside them, already checked, which win): those run with their default.

    Why: a session records every option's value, defaults included, so without this one option
    removed from a strategy would make every session saved before unable to continue. Options a
    person gives are still checked strictly (:meth:`Strategy.validate_options`).
    """
    cls = strategy_class(strategy_name)
    known = {option.name: option for option in cls.OPTIONS}
    usable: dict[str, Any] = {}
    notes: list[str] = []
    for name, value in stored.items():
        option = known.get(name)
        if option is None:
            notes.append(f"this session's option {name!r} of strategy {strategy_name!r} is not one this version has; "
                         "ignored")
            continue
        try:
            usable[name] = option.check(value)
        except ValueError as exc:
            notes.append(f"this session's option {name}={shown_value(value)} of strategy {strategy_name!r} must be {exc}; "
                         f"its default {option.default!r} is used")
    given = dict(given or {})
    while usable:  # values that clash with each other: those the clash names take their defaults
        resolved = {**{option.name: option.default for option in cls.OPTIONS}, **usable, **given}
        conflict = cls.options_conflict(resolved)
        if conflict is None:
            break
        dropped = sorted(name for name in conflict.options if name in usable)
        if not dropped and given:  # the given ones clash among themselves: the run's check says so
            break
        dropped = dropped or sorted(usable)
        was = ", ".join(f"{name}={usable[name]!r}" for name in dropped)
        usable = {name: value for name, value in usable.items() if name not in dropped}
        again = cls.options_conflict({**{option.name: option.default for option in cls.OPTIONS}, **usable, **given})
        if again is not None and set(again.options) & set(dropped):
            # its default clashes too: the run's own check refuses it ("... is at its default: give
            # it too"), and a note promising the default would be contradicted a line later
            continue
        takes = f"{', '.join(dropped)} take{'s' if len(dropped) == 1 else ''} the default"
        if given:
            notes.append(f"this session's {was} of strategy "
                         f"{strategy_name!r} does not go with the options given ({conflict.message}); {takes}")
        else:
            notes.append(f"this session's options of strategy {strategy_name!r} do not go together "
                         f"({conflict.message}); {takes}")
    return usable, notes


def _unnamed_strategy(objectives: Sequence[str]) -> str:
    """The strategy of a run that names none: the default, or ``tpe`` (Optuna's multi-objective
    TPE) for a Pareto front, which the default does not search."""
    return DEFAULT_PARETO_STRATEGY if objectives else DEFAULT_STRATEGY


def _objectives(request: RunRequest, strategy_info: Mapping[str, Any]) -> tuple[str, ...]:
    """The request's objectives; ``()`` is one score even where the session searched a front
    (its stored objectives are then dropped from the strategy record). None: the session's own."""
    if request.objectives is not None:
        return tuple(request.objectives)
    stored = strategy_info.get("objectives")
    return tuple(str(m) for m in stored) if isinstance(stored, list) else ()


def _named_metrics(session: Session, objectives: Sequence[str]) -> dict[str, None]:
    """Every metric the objective names (weighted, bounded, or searched), in order, once."""
    weighted = [m for m, w in session.weights.values.items() if w > 0]
    bounded = [b.metric for b in session.constraints.bounds()]
    return dict.fromkeys([*weighted, *bounded, *objectives])


def _open_locked(out: Path, flag: str, held: SessionLock | None = None) -> tuple[SessionLock, Session]:
    """The existing session at ``out`` (``flag`` names what needs it), loaded under its lock (taken,
    or lent by its holder ``held``), which the caller then holds: one writer at a time, and what a
    killed run left is cleaned first."""
    check_regular_or_absent(out)
    if not out.is_file() and not has_journal(out):
        raise WorkbenchError(f"{flag}: --out {out} must be an existing session file")
    check_one_name(out)
    _check_writable(out, None)  # its own trials are added to it: no other file will do
    lock = _lock(out, held)
    try:
        clean_stale_temporaries(out)
        return lock, load_session(out)
    except BaseException:
        lock.release()
        raise


def nothing_to_remeasure(session: Session, request: RunRequest = RunRequest()) -> str | None:
    """Why :func:`remeasure_aborted` of ``session`` would measure nothing (``"nothing to
    re-measure: ..."``), or None when it would measure something. Reads the session in memory and
    takes no lock, so a front end can answer "nothing" before it asks anything of the person (such
    as whether to run a python benchmark's code), with the same rule the run then follows.
    """
    replayed = _replay_cannot_remeasure(session)
    if replayed is not None:
        return replayed
    objective = Objective(request.constraints or session.constraints, request.weights or session.weights)
    return (None if remeasurable(session, objective.worth_remeasuring)
            else _nothing_to_remeasure(session, objective.constraints))


def _replay_cannot_remeasure(session: Session) -> str | None:
    """Why a replay's aborted trials cannot be measured again: a recording holds only where each
    stopped, so re-measuring replayed the same stop, added it beside the first, and advised
    re-measuring again, for ever. None for any other backend (or no aborted trial)."""
    backend = session.backend if isinstance(session.backend, dict) else {}
    if backend.get("kind") != "replay" or not any(t.status is Status.ABORTED for t in session.trials):
        return None
    return ("nothing to re-measure: this session replays a recording, which holds only the latency bound each "
            "aborted candidate stopped at; re-measure them in the session that recorded them")


def _nothing_to_remeasure(session: Session, constraints: Constraints) -> str:
    """Why nothing is re-measured, by the rule :func:`remeasurable` follows: per size, a config
    stopped early whose latest trial there stopped early too, with its bound within the latency
    limit in force and no kept figure missing another limit (:func:`settled_misses`). Counts are of
    configs (a config stopped early twice is one)."""
    limit = constraints.max_latency_ms
    latest: dict[tuple[str, str], Trial] = {}
    stopped: set[tuple[str, str]] = set()
    for t in session.trials:
        key = (problem_key(session.problem_of(t)), t.config.id)
        latest[key] = t
        if t.status is Status.ABORTED:
            stopped.add(key)
    if not stopped:
        return "nothing to re-measure: no aborted trials"
    full = sum(latest[key].ok for key in stopped)
    failed = sum(latest[key].status is not Status.ABORTED and not latest[key].ok for key in stopped)
    missed: dict[str, None] = {}  # the other limits the stopped ones' kept figures miss, in order
    settled = 0
    for key in stopped:
        if latest[key].status is Status.ABORTED and (misses := settled_misses(latest[key], constraints)):
            settled += 1
            missed.update((bound.shown, None) for bound in misses)
    left = len(stopped) - full - failed - settled
    in_force = f" ({exact_number(limit)} ms)" if limit is not None else ""
    head = f"nothing to re-measure: {len(stopped)} candidate{'s' if len(stopped) != 1 else ''} stopped early"
    if not full and not failed and not settled:
        return f"{head}, none below the latency limit in force{in_force}; relax it to re-measure them"
    parts = [f"{full} of them measured again in full since"] if full else []
    parts += [f"{failed} measured again since and failed"] if failed else []
    parts += [f"{settled} already miss{'es' if settled == 1 else ''} {' and '.join(missed)}, which measuring "
              "again cannot change"] if settled else []
    parts += [f"the other {left} still over the latency limit in force{in_force}"] if left else []
    return f"{head}, " + ", ".join(parts)


def remeasure_aborted(path: str | os.PathLike[str], request: RunRequest = RunRequest(), *,
                      held: SessionLock | None = None,
                      session: Session | None = None) -> tuple[Run | SweepRun | None, str]:
    """A run that measures again every aborted candidate of the session at ``path`` whose latency
    bound the objective in force (the session's, or the request's, which becomes the session's)
    no longer rules out, with the session's own backend; new trials go beside the aborted ones.
    A sweep's sizes are each re-measured at their own problem, one after another.

    ``session``: the session as a front end shows it, to be continued at ``path`` as a continued
    run is (:func:`prepare_run`): its trials not yet in the file are kept, trials another run
    added to the file are taken in, and a file now holding another session is refused. (Read from
    the file instead, a window's trials not saved there yet were dropped, and a file another
    session had been written to got the window's re-measured trials.) Without it the session is
    the file's (the command line).

    Returns ``(None, why)`` when nothing is worth re-measuring (the lock is not kept then).
    ``held``: as for :func:`prepare_run`.
    """
    out = fixed_path(path)  # (the lock's messages name the file as given: it fixes its own path)
    if session is None:
        lock, session = _open_locked(Path(path), "--remeasure-aborted", held)
    else:
        taken = _take_output(out, session, held)
        assert taken is not None  # (a path was given)
        lock = taken
    try:
        replayed = _replay_cannot_remeasure(session)
        if replayed is not None:
            raise WorkbenchError(replayed)
        check_stored_constraints(request.constraints or session.constraints, out)
        objective = Objective(request.constraints or session.constraints, request.weights or session.weights)
        groups = remeasurable(session, objective.worth_remeasuring)
        if not groups:
            lock.release()
            return None, _nothing_to_remeasure(session, objective.constraints)
        spec = _spec_for_continue(request, session)
        _check_continues(spec, session, [problem for problem, _configs in groups])
        session.backend = spec.to_dict()  # (the folder or file given now, as a continued run records it)
        session.constraints, session.weights = objective.constraints, objective.weights
        settings = session.run.merged(request.settings_overrides())
        check_workers(settings.workers, "local")  # these runs always use the local pool
        limits = EvalLimits(compile_timeout_s=settings.compile_timeout_s, run_timeout_s=settings.run_timeout_s,
                            max_latency_ms=objective.max_latency_ms)
        space = session.space
        if space is None:
            raise WorkbenchError(f"--remeasure-aborted: {out} records no search space to re-measure in")
        own = problem_key(session.problem)
        count = sum(len(configs) for _problem, configs in groups)
        _check_index_room(session, count, "re-measure them in a new session")  # each re-measure is a new trial
        message = f"re-measuring {counted(count, 'aborted candidate')}" + (f" at {len(groups)} sizes" if len(groups) > 1 else "")

        def run_at(problem: Mapping[str, Any], configs: Sequence[Config], held: SessionLock | None) -> Run:
            at_own = problem_key(problem) == own
            sized = spec if at_own else BackendSpec(spec.kind, {**spec.options, "problem": dict(problem)})
            engine = Engine(session, Listed(space, configs=list(configs)), _workers_spec(sized, session), budget=len(configs),
                            workers=settings.workers or 1, limits=limits, output=out, objective=objective,
                            remeasure={c.id for c in configs}, problem=None if at_own else dict(problem))
            return Run(session, engine, spec, out, held, True)

        if len(groups) == 1 and problem_key(groups[0][0]) == own:
            return run_at(groups[0][0], groups[0][1], lock), message
        wanted = {problem_key(p): c for p, c in groups}
        todo = [SizeRun(p, len(c)) for p, c in groups]
        return SweepRun(session, todo, lambda p, _b: run_at(p, wanted[problem_key(p)], None), out, lock, True,
                        spec), message
    except BaseException:
        lock.release()
        raise


def refine_pending(path: str | os.PathLike[str],
                   request: RunRequest = RunRequest()) -> tuple[Run | SweepRun | None, str]:
    """A run that only refines the session's trials simulated with estimated resources (marked
    ``resources_pending``), at every size they were measured at, with the session's own backend:
    nothing new is evaluated, so it works the same for one size or a sweep (whose ``--budget`` is
    per size and whose finished sizes are not run again). The caller sets ``engine.refine_wait_s``.

    Returns ``(None, why)`` when no trial waits for its compile (the lock is not kept then)."""
    out = fixed_path(path)
    lock, session = _open_locked(Path(path), "--refine-only")
    try:
        groups: dict[str, tuple[dict[str, Any], int]] = {}
        for key, trials in trials_by_problem(session).items():
            pending = sum(t.measurement.resources_pending for t in trials)
            if pending:
                groups[key] = (session.problem_of(trials[0]), pending)
        if not groups:
            lock.release()
            return None, "nothing to refine: no trial holds estimated resources"
        spec = _spec_for_continue(request, session)
        _check_continues(spec, session, [problem for problem, _n in groups.values()])
        space = session.space
        if space is None:
            raise WorkbenchError("the session records no search space")
        settings = session.run.merged(request.settings_overrides())
        check_workers(settings.workers, "local")  # these runs always use the local pool
        limits = EvalLimits(compile_timeout_s=settings.compile_timeout_s, run_timeout_s=settings.run_timeout_s,
                            max_latency_ms=session.constraints.max_latency_ms)
        objective = Objective(session.constraints, session.weights)
        count = sum(n for _p, n in groups.values())
        message = f"refining {count} trials with estimated resources" + (
            f" at {len(groups)} sizes" if len(groups) > 1 else "")

        def run_at(problem: Mapping[str, Any], held: SessionLock | None) -> Run:
            # The problem is always named (no reference config is measured first) and the
            # strategy proposes nothing: the run looks at the pending trials and waits for them.
            sized = BackendSpec(spec.kind, {**spec.options, "problem": dict(problem)})
            engine = Engine(session, Listed(space, configs=[]), _workers_spec(sized, session), budget=None,
                            workers=settings.workers or 1, limits=limits, output=out, objective=objective,
                            problem=dict(problem))
            return Run(session, engine, spec, out, held, True)

        if len(groups) == 1:
            (problem, _n), = groups.values()
            return run_at(problem, lock), message
        todo = [SizeRun(p, 0) for p, _n in groups.values()]
        return SweepRun(session, todo, lambda p, _b: run_at(p, None), out, lock, True, spec), message
    except BaseException:
        lock.release()
        raise


def _without_remote_execution(recorded: RunSettings, request: RunRequest) -> tuple[RunSettings, list[str]]:
    """The session's run settings without a Ray cluster the run itself did not name, and what was dropped.

    A file never chooses where a run's work is sent: Ray hands candidates and results between
    processes as pickles, so a received session naming a cluster of the sender's would have this
    machine load the sender's replies (code), and one naming Ray at all would start a cluster here.
    A continued run goes to Ray only when ``--executor ray`` names it again, and to a cluster's
    address only when ``--ray-address`` does."""
    notes = []
    if recorded.executor == "ray" and request.executor is None:
        where = f" at {recorded.ray_address}" if recorded.ray_address else ""
        notes.append(f"the session ran on Ray{where}; this run uses the local pool: a session file never chooses "
                     "where a run's work is sent (give --executor ray again to use Ray)")
        recorded = dataclasses.replace(recorded, executor="local", ray_address=None)
    elif recorded.ray_address is not None and request.ray_address is None:
        if request.executor == "ray":
            notes.append(f"the session's Ray address {recorded.ray_address} is not reused: a session file never "
                         "chooses where a run's work is sent (give --ray-address to connect to it)")
        recorded = dataclasses.replace(recorded, ray_address=None)
    return recorded, notes


def _check_index_room(session: Session, budget: int | None,
                      instead: str = "continue it with a smaller budget, or start a new session") -> None:
    """Refuse, before anything runs, a run whose trials would need an index past 2**63-1, which no
    session file holds: a continued file of a crafted index near the end was saved with trials its
    loader then refused, every trial of it unreadable. (A run without a budget needs room for as
    many trials as its time limit allows: a million is more than any finishes.)"""
    room = MAX_COUNT + 1 - session.next_index()
    wanted = budget if budget is not None else 1_000_000
    if room < wanted:
        raise WorkbenchError(f"the session's trial indices reach {session.next_index() - 1:,}, which leaves room for "
                             f"{counted(max(room, 0), 'more trial')} of the 2**63 a session holds, not {wanted:,}; "
                             f"{instead}")


def _run_budget(request: RunRequest, settings: RunSettings, done: int, session: Session | None) -> int | None:
    """Evaluations for this run: the request's, else what the session has left, else the default."""
    if request.budget is not None:
        if request.budget < 1:
            raise WorkbenchError(f"budget must be at least 1 evaluation, got {request.budget}")
        if request.budget > MAX_COUNT - done:  # the session's total is recorded and must load again
            raise WorkbenchError(f"budget {request.budget}: at most {MAX_COUNT - done} more evaluations "
                                 "(2**63-1 in all)")
        return request.budget
    if session is not None and settings.budget is not None:
        left = settings.budget - done
        if left < 1:
            raise WorkbenchError(template=f"the session already has {done} of its {settings.budget} evaluations; "
                                          "give a budget to measure more ({budget:N})")
        return left
    if settings.time_limit_s is not None:
        return None
    return DEFAULT_BUDGET


def _spec_for_new(request: RunRequest) -> BackendSpec:
    if request.spec is not None:
        return request.spec
    extra = dict(request.backend_options)
    return make_backend_spec(
        request.kernel, request.backend or "auto", kernel_dirs=list(request.kernel_dirs), problem=request.problem,
        replay=request.replay, gpu_model=request.gpu_model, seed=request.seed or 0,
        noise=True if request.noise is None else request.noise, device=request.device, extra=extra,
    )


def _spec_for_continue(request: RunRequest, session: Session) -> BackendSpec:
    """The session's own backend, with the run-only options the request changes.

    Code a session file names (a python benchmark's path, template folders) runs only when the
    person names it too: opening a file never chooses what code runs.
    """
    backend = session.backend if isinstance(session.backend, dict) else {}
    kind = backend.get("kind")
    options = dict(backend.get("options") or {}) if isinstance(backend.get("options"), dict) else {}
    if not kind:
        raise WorkbenchError(template=f"the session of {quoted(repr(session.kernel))} records no backend to continue with; "
                                      "start {new_session}")
    if request.backend not in (None, "auto", kind):
        raise WorkbenchError(template=quoted(f"the session was measured with the {kind} backend, not "
                                             f"{request.backend}") + "; start {new_session} for another backend")
    if request.replay is not None and kind != "replay":  # (it was dropped, and the run went on with the session's own)
        raise WorkbenchError(template=quoted(f"the session was measured with the {kind} backend, not replay")
                             + "; start {new_session} to replay a recording")
    if kind == "python":
        path = Path(str(options.get("path", "")))
        if request.kernel is not None and Path(request.kernel).suffix == ".py" and not os.path.lexists(request.kernel):
            # (a typo of a place: the refusals below spoke of the session's own file instead)
            raise WorkbenchError(f"python benchmark {request.kernel}: no such file")
        named = request.kernel is not None and Path(request.kernel).suffix == ".py" and same_place(request.kernel, path)
        if request.kernel is not None and Path(request.kernel).suffix == ".py" and not named \
                and Path(request.kernel).is_file():
            # the benchmark at another place (a folder moved or renamed; a session of another
            # machine is refused later, as another device): the file named is the code that runs,
            # and it continues the session only
            # if its code is the session's, told from its text before anything imports it (a file
            # of other code named by mistake would run its top level once before being refused)
            path, named = Path(request.kernel).resolve(), True
            _check_relocated_code(session, path)
            options["path"] = str(path)
        missing = _not_a_file(path)
        if missing and not (named or request.trust_session_code):  # naming it there could not work: where is it now?
            raise WorkbenchError(f"the session's python benchmark {_shown(path)} {missing}; name the file where it "
                                 f"is now (tune {shlex.quote('NEW_PLACE/' + path.name)} --resume ...): the same name "
                                 "and code continue the session")
        if not (named or request.trust_session_code):
            raise WorkbenchError(template=f"the session runs the python benchmark {quoted(_shown(path))}; "
                                          f"{{benchmark_code:{quoted(_shown(path))}}}")
        if missing:
            raise WorkbenchError(f"the session's python benchmark {_shown(path)} {missing}")
    if kind == "replay":
        path = Path(str(options.get("path", "")))
        if request.replay is not None:
            path = Path(request.replay)
        missing = _not_a_file(path)
        if missing:
            raise WorkbenchError(template=f"the session replays {quoted(_shown(path))}, which {missing} "
                                          "(give its new place: {replay:FILE})")
        options["path"] = str(path.resolve())
        _check_reading(session, str(path.resolve()))
    if kind in ("sim", "cuda", "python") or options.get("kernel_dirs"):
        options["kernel_dirs"] = [str(Path(d).resolve()) for d in request.kernel_dirs]
    if request.gpu_model is not None and kind == "sim":
        options["gpu_model"] = request.gpu_model
    if request.noise is not None and kind == "sim":
        options["noise"] = request.noise
    if request.device is not None and kind == "cuda":
        options["device"] = request.device
    if kind == "python":
        check_no_problem(session.kernel, request.problem)
    if request.problem is not None:  # a replay's too: a size it does not hold, or another one, is refused
        # what is named changes the session's own problem (--set alpha=2 keeps its n), as a sweep's reads it
        options["problem"] = {**session.problem, **request.problem}
    options.pop("delay_s", None)  # a demonstration's pace is the run's choice, not the session's
    options.update(request.backend_options)
    return BackendSpec(kind, backend_options(options))


def _workers_spec(spec: BackendSpec, session: Session) -> BackendSpec:
    """The spec a run's workers start from: a python benchmark's carries the code identity the
    session records, which each worker checks in the file it imports (see ``PythonBackend.prepare``).
    Only the run's: the session's own backend options are left as they are."""
    if spec.kind != "python" or not session.source_hash:
        return spec
    return BackendSpec(spec.kind, backend_options({**spec.options, CODE_HASH_OPTION: session.source_hash}))


def _check_relocated_code(session: Session, path: Path) -> None:
    """Refuse a python benchmark named at a new place whose code is not the session's, from the
    file's text (what :func:`_same_target` would say once the module is imported). A session that
    records no code identity cannot tell its benchmark from another file of that name."""
    if not session.source_hash:
        raise WorkbenchError(f"the session records no code identity of its python benchmark, so {_shown(path)} "
                             "cannot be told to be it; run it at its recorded place, or start a new session")
    holds = _holds_session_code(session, path)
    if holds is None:
        raise WorkbenchError(f"cannot read the python benchmark {_shown(path)}")
    if not holds:
        raise WorkbenchError(template=quoted(f"cannot continue the session of {session.kernel!r}: the kernel's code "
                                             f"changed since the session was measured ({_shown(path)} holds other "
                                             "code than the session's benchmark)") + "; start {new_session} instead")


def _check_reading(session: Session, path: str) -> None:
    """Refuse to continue a replay whose trials the recording at ``path`` no longer reads as they
    were read when the session replayed (or imported) them: the new trials would be ranked against
    figures that mean something else, and the recommendation would mix the two. The session is
    left as it is; a new session replays (or an import reads) every record the way it is read now.

    A session records the rule its trials were read under in its device record (a replay copies
    the recording's). Without it, the session predates the record: its ok trials were read when a
    cache record's ``latency_ms`` was Kernel Tuner's ``time``, which is told by the Kernel Tuner
    time kept beside the median since (``kt_time_ms``) being absent; of those, only trials whose
    figure the recording now reads differently would mix (a record without repetitions has one).
    """
    now = reading_now(path)
    if now is None:  # a session file is replayed as it was saved, whatever the code reading it
        return
    then = session.device.get("kt_reading")
    if then == now:
        return
    ok = [t for t in session.trials if t.ok and "latency_ms" in t.measurement.metrics]
    if then is None:
        # read then as Kernel Tuner's time; the trials whose figure reads otherwise now are the
        # ones that would mix (a record without repetitions reads its time either way)
        latency_now = {t.config.id: t.metric("latency_ms") for t in load_recording(path).trials if t.ok}
        ok = [t for t in ok if "kt_time_ms" not in t.measurement.metrics
              and t.config.id in latency_now and not math.isclose(t.metric("latency_ms"), latency_now[t.config.id],
                                                                   rel_tol=1e-9, abs_tol=0.0)]
        how = ("when a Kernel Tuner record's latency_ms was its time (by default the mean of its "
               "repetitions); it is now their median")
    else:
        how = f"under another reading of its records ({quoted(then)}, now {quoted(now)})"
    if not ok:
        return
    name = quoted(os.path.basename(path))
    replayed = bool(session.device.get("replayed"))
    again = ("replay it into a new session ({replay_new:" + quoted(path) + "})" if replayed
             else f"import {name} again into a new session ({{import_kt:{quoted(path)}}})")
    raise WorkbenchError(template=f"cannot continue the session of {quoted(repr(session.kernel))}: {len(ok)} of its trials "
                                  f"were read from {name} {how}, and a ranking of both would mix them; "
                                  f"{again}. This session stays as it is")


def _continued_target(spec: BackendSpec, session: Session, problem: Mapping[str, Any] | None = None) -> Target:
    """The target a run continuing ``session`` (at ``problem``, default its own) measures, refused
    in one line when it is not what the session measured: another kernel's code, problem, backend
    or device would mix figures of two kernels in one session."""
    target = _open_continued_target(spec, session)
    mismatch = _same_target(session, target, spec, problem)
    asked = spec.options.get("problem") if problem is None else None
    sizes = trials_by_problem(session)
    if (mismatch and isinstance(asked, Mapping) and len(sizes) > 1
            and problem_key({**session.problem, **asked}) in sizes):
        changed = [f"{k}={v}" for k, v in asked.items() if v != session.problem.get(k)]
        raise WorkbenchError(f"--set {' '.join(changed)}: this session is a size sweep, and a continued run goes on "
                             f"at every one of its {len(sizes)} sizes (--budget per size, --sizes to add sizes), "
                             "so --set cannot pick one; drop it")
    if mismatch:
        said = quoted(f"cannot continue the session of {session.kernel!r}: {mismatch}")
        folders = _folders_hint(spec, session)
        # a template of the same name elsewhere (the shipped library) was found instead of the session's own
        # "start a new session" named no way to do so in the window, where Start refused again and again
        raise WorkbenchError(template=f"{said}{folders}" if folders else f"{said}; start {{new_session}} instead")
    if spec.kind == "sim" and session.source_hash in target.profile_changed_hashes and _simulated_by_estimate(session):
        raise WorkbenchError(template=quoted(f"cannot continue the session of {session.kernel!r}: it was simulated "
                                             "with estimated resources before the template's work profile changed, so "
                                             "its trials hold figures of the earlier model (shared memory, occupancy, "
                                             "latency)") + "; start {new_session} instead")
    if session.source_hash in target.earlier_hashes and target.source_hash:
        # an earlier hash of the same code (a declarative spec's bytes, a shipped template's older
        # version), or of the same recording (its bytes, before a recording was known by its text):
        # the session continues as the current one's, so a later change that keeps the code or the
        # recording (a spec saved in another layout, a recording's line endings) does not lose it
        session.source_hash = target.source_hash
    return target


def _simulated_by_estimate(session: Session) -> bool:
    """Whether trials of the session hold figures of the work profile's rule for good: a run with
    ``--resources estimated``, or trials a compiling run estimated without a compile to come (no
    NVRTC, an arch it does not know). Trials whose compile had not landed yet (refining replaces
    them: ``--refine-only``, or the next continuation) and figures taken from another
    architecture's compiled table do not count."""
    options = session.backend.get("options") if isinstance(session.backend, dict) else None
    if isinstance(options, dict) and options.get("compile") == "estimate":
        return True
    return any(m.resources_estimated and not m.resources_pending and not m.details.get("estimated_from")
               for m in (t.measurement for t in session.trials))


def _check_continues(spec: BackendSpec, session: Session, problems: Sequence[Mapping[str, Any]]) -> None:
    """Refuse, before anything runs, a continuation at any of ``problems`` whose target is not what
    the session measured there (:func:`_continued_target`)."""
    own = problem_key(session.problem)
    for problem in problems:
        sized = spec if problem_key(problem) == own else BackendSpec(spec.kind, {**spec.options, "problem": dict(problem)})
        _continued_target(sized, session, problem)


def _open_continued_target(spec: BackendSpec, session: Session) -> Target:
    """The continued session's target; when its template is not found, say which folder the
    session names (its code runs only when the person passes that folder)."""
    try:
        return open_target(spec)
    except WorkbenchError as exc:
        from workbench.backends.cuda import DeviceUnusable  # (only when a continuation fails)

        folders = _folders_hint(spec, session)
        said = exc.template if exc.template is not None else quoted(str(exc))
        if folders:
            raise WorkbenchError(template=f"{said}{folders}") from None
        if isinstance(exc, DeviceUnusable):  # (a GPU's session opened where that GPU is not: the driver's words alone)
            raise WorkbenchError(template=f"{said}; this session was measured on a GPU: continue it where that GPU "
                                          "is usable, or replay its trials into a new session "
                                          "({replay_new:SESSION})") from None
        raise


def _folders_not_given(spec: BackendSpec, session: Session) -> list[str]:
    """The template folders ``session`` records, likeliest to hold its template first, when the
    continuing run (``spec``) was given none; [] otherwise. Their code runs only when the person
    passes a folder, so a continuation never adds one by itself."""
    options = session.backend.get("options") if isinstance(session.backend, dict) else None
    folders = options.get("kernel_dirs") if isinstance(options, dict) else None
    if not folders or not isinstance(folders, list) or spec.options.get("kernel_dirs"):
        return []
    return likeliest_first(session.kernel, [str(f) for f in folders])


def _folders_hint(spec: BackendSpec, session: Session) -> str:
    """`` (the session's template came from DIR: use --kernel-dir DIR ...)`` as a message template,
    when the session names template folders the continuing run was not given ('' otherwise)."""
    folders = _folders_not_given(spec, session)
    if not folders:
        return ""
    named = quoted(", ".join(folders[:3]))
    return (f" (the session's template came from {named}: use {{kernel_dir:{quoted(folders[0])}}} "
            "to run code from there)")


def _same_target(session: Session, target: Target, spec: BackendSpec,
                 problem: Mapping[str, Any] | None = None) -> str | None:
    """Why ``target`` is not what ``session`` measured (None when it is); ``problem``: the size of a
    sweep the target should be at (default: the session's problem)."""
    if target.kernel != session.kernel:
        return f"the kernel is {target.kernel!r}"
    # the plainest difference first: another GPU's recording of the same kernel also has other
    # bytes, and was called "the recording changed"
    theirs = session.backend.get("kind") if isinstance(session.backend, dict) else None
    if theirs and theirs != spec.kind:
        return f"the backend is {spec.kind} instead of {theirs}"
    device = str(session.device.get("name", ""))
    if device and str(target.device.get("name", "")) != device:
        return f"the device is {target.device.get('name')!r} instead of {device!r}"
    expected = dict(session.problem if problem is None else problem)
    if dict(target.problem) != expected:
        return f"the problem is {dict(target.problem)} instead of {expected}"
    if session.source_hash and session.source_hash not in {target.source_hash, *target.earlier_hashes}:
        if spec.kind == "replay":  # a replay's identity is its recording's bytes, not kernel code
            return "the recording changed since the session replayed it"
        if target.kind == "template":  # (the spec is part of a template's identity: say so, an edit of
            # a slot's values alone read as a change of code to a person who had not touched the .cu)
            return ("the kernel's code changed since the session was measured (its source, a header of its "
                    "folder, or its spec: a slot's values, a restriction, an argument)")
        return "the kernel's code changed since the session was measured"
    return None


#: What a run whose strategy nobody chose searches with when the default cannot hold its space.
FALLBACK_STRATEGY = "tpe"


def _edited_space(target: Target, request: RunRequest, session: Session | None = None) -> Any:
    """The space the run searches: the request's edits, else a continued session's own space (its
    edits of an earlier run hold until the person changes them), else the target's. A stored space
    is taken at the target's problem parameters: its restrictions may read them (``threads *
    width <= cols``), and a sweep's session stores the space at its first size, so each other size
    searched the first size's valid configs instead of its own.

    Checked before anything is measured, whether it comes from the request or the session file: a
    stored space must have the target's slots (a session saved before its template changed, or an
    edited file, measured the run and then could not be saved, leaving a journal that no longer
    opened), and over a template only its declared values and with its own restrictions (it
    renders nothing else, so every config outside them was a failed trial)."""
    space = target.space
    stored = session.space if session is not None else None
    if stored is not None and not stored.is_explicit and not space.is_explicit:
        if list(stored.names) != list(space.names):
            raise WorkbenchError(template=quoted(f"the session's slots ({', '.join(stored.names)}) are not "
                                                 f"{target.kernel}'s ({', '.join(space.names)}): it changed since the "
                                                 "session was saved, or the file was edited")
                                 + "; start {new_session} of it")
        space = stored.with_params(space.params)
        _check_within_template(space, target, "the session's space")
    if space.is_explicit and stored is not None:
        added = [text for text in stored.restrictions if text not in space.restrictions]
        if added:  # (an edited file: the window and tune edit no recording's space)
            raise WorkbenchError(template=quoted(f"the session's space has the restriction {added[0]!r}, which its "
                                                 "recording does not: a recording's space is what was measured")
                                 + "; remove it from the file, or start {new_session}")
    if request.domains is None and request.restrictions is None:
        return space
    if space.is_explicit:
        raise WorkbenchError("a recording's space is what was measured; its domains cannot be edited")
    if request.domains is not None:
        if set(request.domains) != set(space.names):
            raise WorkbenchError(f"the edited slots ({', '.join(sorted(request.domains))}) are not "
                                 f"{target.kernel}'s slots ({', '.join(space.names)})")
        # the domains given are the whole of them: a narrowing the session stored (restrictions of
        # the form narrowing.py writes) is theirs to replace, not to hold on top of them
        others = split_narrowings(space)[1] if request.restrictions is None else None
        space = space.with_domains({k: list(v) for k, v in request.domains.items()})
        if others is not None and len(others) < len(space.restrictions):
            space = space.with_restrictions(others)
    if request.restrictions is not None:
        space = space.with_restrictions(list(request.restrictions))
    _check_within_template(space, target, "the edited space")
    return space


def _check_within_template(space: Any, target: Target, what: str) -> None:
    """Over a template, ``space`` may narrow its domains and add restrictions, nothing else: its
    backend renders only the values the template declares and only configs that meet its own
    restrictions (a python benchmark's space may grow: its code decides)."""
    if target.kind != "template":
        return
    own = target.space
    for slot in space.slots:
        declared = own.slot(slot.name).values
        known = {(type(d), d) for d in declared}  # 1 and True are different values of a slot
        extra = [v for v in slot.values if (type(v), v) not in known]
        if extra:
            shown = ", ".join(map(repr, declared[:12])) + (", ..." if len(declared) > 12 else "")
            raise WorkbenchError(f"{what}: {slot.name}={extra[0]!r} is not among the values {target.kernel} "
                                 f"declares ({shown}); the template renders only those")
    dropped = [r for r in own.restrictions if r not in space.restrictions]
    if dropped:
        raise WorkbenchError(f"{what}: restriction {dropped[0]!r} is {target.kernel}'s own: the template renders only "
                             "configs that meet it, so it cannot be dropped (add restrictions to narrow the space)")


def _update_continued(session: Session, request: RunRequest, spec: BackendSpec, target: Target, space: Any,
                      strategy_name: str, seed: int, options: Mapping[str, Any]) -> None:
    """Record what this run changes on the session it continues (the flags given win)."""
    session.backend = spec.to_dict()
    if request.domains is not None or request.restrictions is not None:
        session.space = _space_keeping_trials(space, session, target.space)
    elif session.space is None:
        session.space = target.space
    session.strategy = _strategy_record(session.strategy, strategy_name, seed, options)
    if request.constraints is not None:
        session.constraints = request.constraints
    if request.weights is not None:
        session.weights = request.weights
    if session.default_config is None and target.default_config is not None and session.space is not None \
            and session.space.in_domains(target.default_config):
        session.default_config = target.default_config


def _strategy_record(before: StrategyInfo, name: str, seed: int, options: Mapping[str, Any]) -> StrategyInfo:
    """The strategy record of a continued session: this run's strategy, with the options of the
    strategies it ran with before kept by name (a switch to another strategy and back restores them)."""
    earlier = {key: dict(value) for key, value in (before.get("earlier_options") or {}).items()}
    previous = before.get("name")
    if previous and previous != name:
        if before.get("options"):
            earlier[previous] = dict(before.get("options") or {})
        else:
            earlier.pop(previous, None)
    earlier.pop(name, None)
    record = StrategyInfo(name=name, seed=seed, options=dict(options))
    if earlier:
        record["earlier_options"] = earlier
    return record


def _space_keeping_trials(edited: Any, session: Session, declared: Any) -> Any:
    """The space to store with a continued session whose domains were edited: the edited one, each
    domain widened to the target's (``declared``) and to every value a trial of the session already
    has, and each narrowing kept as a restriction (:mod:`workbench.core.domain.narrowing`). The
    stored space must still hold the earlier trials (a session whose trials lie outside its own
    domains is refused on load), so narrowing a domain never discards a measurement; the
    restriction keeps the next run (``tune --resume``) to the narrowed values, where the widened
    domain alone searched them all again; and a value left out that no trial has stays in the
    domain, so the window shows it unticked, where stored narrowed it was gone (only typing it in
    brought it back). A widened domain keeps the order ``declared`` gives its values: appended in
    the trials' order, 256 sat between 64 and 1024, and a neighbourhood step skipped 512."""
    domains: dict[str, list[Any]] = {}
    narrowed: list[str] = []
    for slot in edited.slots:
        values = list(slot.values)
        kept = set(values)
        own = list(declared.slot(slot.name).values) if slot.name in declared.names else []
        measured = [trial.config.get(slot.name) for trial in session.trials]
        extra = [value for value in dict.fromkeys([*own, *measured]) if value is not None and value not in kept]
        if not extra:
            domains[slot.name] = values
            continue
        order = {value: i for i, value in enumerate(own)}
        widened = sorted(values + extra, key=lambda value: order.get(value, len(order)))  # (stable: unknown ones last)
        domains[slot.name] = widened
        narrowed += narrowings(slot.name, widened, [value for value in widened if value in kept])
    rules = [text for text in edited.restrictions if text not in narrowed]
    return edited.with_domains(domains).with_restrictions(rules + narrowed)


def _back_up_session(out: Path, keep_file: bool = False) -> None:
    """``--force`` (and the window's Save As over another file): keep what is at ``out`` (the file
    with its journal merged, when it loads) as its :func:`backup_path` (``out.bak`` unless that name
    is taken), then clear the way for a new session. ``keep_file``: the file itself stays until the
    save that follows renames the new one over it, so a save that fails leaves it where it was.

    A journal that does not open with the backup (another session's, left beside a file replaced
    under a run that was then killed, or beside a file that is no session) is kept apart, as a
    journal alone, which opens by its own name: paired with the backup, neither would open."""
    backup = backup_path(out)
    jp = journal_path(out)
    try:
        old = load_session(out)
    except WorkbenchError:
        old = None
    if old is not None:
        save_session(old, backup, keep_journal=True)
    elif out.exists():
        keep_backup(out)
    if jp.is_file():
        if old is not None:
            jp.unlink()
        else:
            paired = journal_path(backup)
            os.replace(jp, paired)
            try:
                load_session(backup)
            except WorkbenchError:
                alone = _journal_alone(out)
                os.replace(paired, journal_path(alone))
                try:  # the way to read it, only where there is one: a damaged journal opens nowhere
                    load_session(alone)
                    how = f"show {alone.name} opens it"
                except WorkbenchError as exc:
                    how = f"it does not open on its own either: {exc}"
                log.warning("%s does not open with %s: kept as %s (%s)",
                            jp.name, out.name, journal_path(alone).name, how)
    if out.exists() and not keep_file:
        out.unlink()


def _renamed_benchmark_hint(request: RunRequest, session: Session) -> str:
    """For a python benchmark's session continued with a file of another name (renamed since): how
    such a session knows its file, which the refusal alone did not say."""
    backend = session.backend if isinstance(session.backend, dict) else {}
    path = (backend.get("options") or {}).get("path") if backend.get("kind") == "python" else None
    if not (str(request.kernel or "").endswith(".py") and isinstance(path, str)):
        return ""
    return (f" (a python benchmark's session follows its file by name: continue it with the file named "
            f"{Path(path).name} again, at any place; under another name it is another benchmark, measured "
            f"in a session of its own: tune {shlex.quote(str(request.kernel))} --out NEW.json)")


def _names_kernel(request: RunRequest, session: Session) -> bool:
    """Whether the request's kernel names the session's: its name, or the python benchmark file the
    session ran (whose NAME may differ from the file's), also at another place under the same file
    name (a session copied from another machine, a folder renamed: whether its code is the
    session's is checked before it runs, see :func:`_check_relocated_code`)."""
    kernel = request.kernel or ""
    if kernel == session.kernel or (kernel.endswith(".py") and Path(kernel).stem == session.kernel):
        return True
    backend = session.backend if isinstance(session.backend, dict) else {}
    path = (backend.get("options") or {}).get("path") if backend.get("kind") == "python" else None
    return bool(kernel.endswith(".py") and isinstance(path, str)
                and (same_file(kernel, path) or Path(kernel).name == Path(path).name))


def _not_a_file(path: Path) -> str | None:
    """Why a file a session names is no file to read (None for a regular file; whether it can be
    read is found when it is): gone, not a regular file (a folder, a device, a pipe), or a name
    the system refuses (too long)."""
    try:
        if path.is_file():
            return None
        return "is not a regular file" if path.exists() else "is not there any more"
    except OSError as exc:
        return f"cannot be opened ({exc.strerror or type(exc).__name__})"


def _shown(path: Path, most: int = 160) -> str:
    """A path from a file, cut in the middle when long, so that the error stays one readable line."""
    text = str(path)
    return text if len(text) <= most else f"{text[: most // 2]}...{text[-most // 3:]}"
