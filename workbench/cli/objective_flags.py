"""The objective flags (``--max-latency-ms``, ``--constraint``, ``--weight``, ``--maximize``,
``--objectives``...) made into constraints and weights, layered over a session's own, and checked
against the metrics there are: a misspelt metric is refused, not a run that ranks nothing."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from workbench.core.domain.assignments import parse_assignment
from workbench.core.errors import WorkbenchError, number_text, printable

if TYPE_CHECKING:  # imported where used: the CLI starts without loading the session module
    from workbench.core.domain.session import Session


def objective_from_args(args: argparse.Namespace, base: Any = None, source: str = "") -> tuple[Any, Any]:
    """Constraints and weights from flags, layered over a session's own (``base``, read from the
    file ``source``: named when what it stores is what cannot be met)."""
    from workbench.core.domain.objective import (
        NAMED_LIMITS,
        Bound,
        Constraints,
        Weights,
        check_stored_constraints,
        fold_named_limits,
    )

    constraints = base.constraints if base is not None else Constraints()
    weights = base.weights if base is not None else Weights()
    changes: dict[str, Any] = {
        name: getattr(args, name)
        for name in ("max_latency_ms", "max_memory_mb", "min_quality")
        if getattr(args, name) is not None
    }
    # A bound one of the named limits states (latency_ms <=, memory_mb <=, quality >=) is that limit,
    # as in the window's boxes: in either spelling it replaces the stored limit in either spelling
    # (the tightest, when both spellings are given), and a latency limit stops hopeless candidates.
    parsed = [Bound.parse(text) for text in args.constraint]
    asked = [changes.get("min_quality")] + [b.value for b in parsed if (b.metric, b.op) == ("quality", ">=")]
    negative = next((value for value in asked if value is not None and value < 0), None)
    if negative is not None:  # every trial meets it: a typo for something else
        raise WorkbenchError(f"min quality is between 0 and 1 (1: exact result), got {negative:g}")
    named, given = fold_named_limits(parsed, start=changes)
    changes.update(named)
    Constraints(**changes, extra=tuple(given)).check_possible()  # what the flags say alone
    replaced = {(b.metric, b.op) for b in given} | {key for key, field in NAMED_LIMITS.items() if field in changes}
    if replaced:  # a flag's bound replaces a stored one on the same metric and side, in either spelling
        changes["extra"] = tuple(b for b in constraints.extra if (b.metric, b.op) not in replaced) + tuple(given)
    constraints = dataclasses.replace(constraints, **changes)
    try:
        constraints.check_possible()
    except WorkbenchError:
        if base is not None:  # the stored ones at fault: said naming the file
            check_stored_constraints(base.constraints, source)
        raise
    if args.weight or args.maximize or args.minimize:
        values = dict(weights.values)
        weighed: dict[str, Any] = {}
        for text in args.weight:
            name, value = parse_assignment(text, "--weight", identifier=False)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                raise WorkbenchError(f"--weight {text!r}: the weight must be a number >= 0")
            if name in weighed and weighed[name] != value:  # the last one silently won
                raise WorkbenchError(f"--weight {name} given twice ({weighed[name]:g} and {value:g}); give it once")
            weighed[name] = values[name] = value  # Weights checks it is a finite number
        both = sorted(set(args.maximize) & set(args.minimize))
        if both:
            raise WorkbenchError(f"--maximize and --minimize both name {both[0]!r}")
        directions = {**weights.directions, **{m: +1 for m in args.maximize}, **{m: -1 for m in args.minimize}}
        weights = Weights(values=values, directions=directions)
        if base is not None:
            for note in direction_only_notes(args, weights, base):
                print(f"note: {note}", file=sys.stderr)
    if base is not None and source:  # a weight the file stores, no flag replaced, and no direction known
        from workbench.core.domain.search_objective import check_stored_directions

        flagged = [parse_assignment(text, "--weight", identifier=False)[0] for text in args.weight]
        check_stored_directions(Weights(values=base.weights.values, directions=weights.directions), (), source,
                                given=flagged)
    return constraints, weights


#: The named limits' flags and the metric each bounds.
LIMIT_FLAGS = (("max_latency_ms", "--max-latency-ms", "latency_ms"), ("max_memory_mb", "--max-memory-mb", "memory_mb"),
               ("min_quality", "--min-quality", "quality"))


def flags_naming(args: argparse.Namespace, metric: str) -> list[str]:
    """The objective flags of this command line that name ``metric``, as typed (``--min-quality
    0.9``, ``--constraint quality>=0.9``): an error about the metric names them, since a person
    who typed ``--min-quality`` was told of a metric ``'quality'`` they never wrote."""
    from workbench.core.domain.objective import Bound

    flags = [f"{flag} {number_text(getattr(args, attr))}" for attr, flag, named in LIMIT_FLAGS
             if named == metric and getattr(args, attr, None) is not None]
    for text in getattr(args, "constraint", None) or ():
        try:
            if Bound.parse(text).metric == metric:
                flags.append(f"--constraint {text}")
        except WorkbenchError:  # (refused on its own before any metric is checked)
            pass
    for text in getattr(args, "weight", None) or ():
        if text.partition("=")[0].strip() == metric:
            flags.append(f"--weight {text}")
    flags += [f"--{flag} {metric}" for flag in ("maximize", "minimize") if metric in (getattr(args, flag, None) or ())]
    objectives = getattr(args, "objectives", None)
    if isinstance(objectives, str) and metric in (part.strip() for part in objectives.split(",")):
        flags.append(f"--objectives {objectives}")
    return flags


def naming_flags(args: argparse.Namespace, error: WorkbenchError) -> str:
    """``error`` said with the flags that named its metric first (see :func:`flags_naming`), where
    it is about a metric the command line named (not one a session file names: that message
    names the file)."""
    from workbench.core.domain.metrics import UnknownMetric

    if isinstance(error, UnknownMetric) and error.asked == "metric":
        flags = flags_naming(args, error.metric)
        if flags:
            return f"{', '.join(flags)}: {error}"
    return str(error)


def direction_only_notes(args: argparse.Namespace, weights: Any, session: Any) -> list[str]:
    """For ``--maximize M`` / ``--minimize M`` with no weight on M (and M no objective of a front):
    the flag gives a direction only, and the score ranks by the other weights. A person who typed
    ``--maximize gflops --weight latency_ms=0`` got a ranking by latency (every weight 0 falls back
    to it) and no word that gflops took no part."""
    # of a metric the session reports (one it does not is warned of as a typo)
    reported = {name for trial in session.trials for name in trial.measurement.metrics}
    stored = session.strategy.get("objectives") if isinstance(session.strategy, dict) else None
    given = getattr(args, "objectives", None)
    # a front's objectives take their direction from these flags: the session's own, unless the
    # command line names others (or none)
    objectives = ({part.strip() for part in given.split(",")} if given is not None
                  else {str(name) for name in stored} if isinstance(stored, (list, tuple)) else set())
    ranked = ", ".join(sorted(weights.active())) or "latency_ms"
    notes = []
    for flag, metrics in (("--maximize", args.maximize), ("--minimize", args.minimize)):
        for metric in dict.fromkeys(metrics):
            if weights.values.get(metric, 0) > 0 or metric in objectives or metric not in reported:
                continue
            notes.append(f"{flag} {metric} gives {metric} a direction only; the score ranks by {ranked}: "
                         f"add --weight {metric}=1 to rank by it")
    return notes


#: ``--objectives none``: one score, also where the session searched a Pareto front (a continued
#: multi-objective session otherwise keeps its objectives, and single-score strategies refuse it).
NO_OBJECTIVES = "none"


def objectives_from_args(args: argparse.Namespace, base: Any = None) -> tuple[str, ...] | None:
    """``--objectives a,b`` as a tuple of metric names; ``--objectives none`` as ``()``. Not given:
    the session's own (``base``, for show), else None (a continued run keeps the session's own)."""
    given = getattr(args, "objectives", None)
    if given is not None:
        if given.strip().lower() == NO_OBJECTIVES:
            return ()
        names = tuple(part.strip() for part in given.split(",") if part.strip())
        if len(names) < 2:
            raise WorkbenchError(f"--objectives {given!r}: give two or more metrics, comma separated "
                                 f"(or {NO_OBJECTIVES}: one score)")
        return names
    return stored_objectives(base) if base is not None else None


def stored_objectives(session: Any) -> tuple[str, ...] | None:
    """The Pareto objectives ``session`` was searched for (None: one score)."""
    stored = session.strategy.get("objectives") if isinstance(session.strategy, dict) else None
    return tuple(str(m) for m in stored) if isinstance(stored, list) else None


def stored_objectives_to_show(objectives: tuple[str, ...], available: Any, path: Path) -> tuple[str, ...]:
    """A saved session's Pareto objectives as ``show`` can use them. One naming a metric no trial
    reports (a file edited by hand) is said, naming the file, and the summary is shown without
    the front, as a stored weight on such a metric is said and ranks nothing: the error named
    neither the file nor where the name came from, and showed nothing of the session."""
    from workbench.core.domain.metrics import check_metrics

    try:
        check_metrics(objectives, available)
    except WorkbenchError as exc:
        print(f"warning: {printable(str(path))}: the session's objectives: {printable(str(exc))}; "
              "shown without its Pareto front", file=sys.stderr)
        return ()
    return objectives


def check_objective(constraints: Any, weights: Any, available: Any, objectives: tuple[str, ...] = (),
                     session: Session | None = None) -> None:
    """Refuse a weight or constraint on a metric nothing reports (a typo), or a weighted metric
    without a direction; warn only where the metric may still appear during the run, or where
    the name is the session's own (``session``: what a run saved is opened, and said)."""
    for warning in _objective_warnings(constraints, weights, available, objectives, session):
        print(f"warning: {printable(warning)}", file=sys.stderr)


def check_objective_on(constraints: Any, weights: Any, sessions: list[Session]) -> None:
    """:func:`check_objective` for an objective applied to every one of ``sessions``: each must
    have what it names; a warning true of several is said once."""
    from workbench.runner.plan import session_metrics

    warnings: dict[str, None] = {}
    for session in sessions:
        warnings.update(dict.fromkeys(_objective_warnings(constraints, weights, session_metrics(session),
                                                          session=session)))
    for warning in warnings:
        print(f"warning: {printable(warning)}", file=sys.stderr)


def _objective_warnings(constraints: Any, weights: Any, available: Any, objectives: tuple[str, ...] = (),
                        session: Session | None = None) -> list[str]:
    """The checks of :func:`check_objective`: refusals raised, warnings returned.

    A metric the session's own objective names (a python benchmark's run weighted a metric the
    benchmark never returned, which the run allowed and said) is not refused when that session is
    opened: it is said, and ranks nothing. A name only the command line gives is checked in full."""
    from workbench.core.domain.metrics import ALWAYS_REPORTED, NOT_RANKABLE, check_metrics, idle_directions
    from workbench.core.domain.search_objective import Objective

    named = [m for m, w in weights.values.items() if w > 0] + [b.metric for b in constraints.bounds()] + list(objectives)
    own: set[str] = set()
    if session is not None:
        own = {m for m, w in session.weights.values.items() if w > 0} | {b.metric for b in session.constraints.bounds()}
    unreported = [] if available is None else [m for m in dict.fromkeys(named)
                                               if m in own and m not in available and m != ALWAYS_REPORTED]
    slots = session.space.names if session is not None and session.space is not None else ()
    warnings = check_metrics(dict.fromkeys(m for m in named if m not in unreported), available, weights.directions,
                             slots=slots)
    warnings += [f"metric {m!r} of the session's own objective: no trial reports it, so it ranks nothing "
                 f"(known metrics: {', '.join(sorted((set(available) | {ALWAYS_REPORTED}) - set(NOT_RANKABLE)))})"
                 for m in unreported]
    Objective(constraints, weights, objectives)  # a weighted metric without a direction is an error here
    return warnings + idle_directions(weights.directions, named, available)


def objective_flags_given(args: argparse.Namespace) -> bool:
    return any(getattr(args, name) is not None for name in ("max_latency_ms", "max_memory_mb", "min_quality")) \
        or bool(args.constraint or args.weight or args.maximize or args.minimize)


def other_objective_note(sessions: Sequence[Any], paths: Sequence[Any], what: str) -> str | None:
    """Where a file after the first stores another objective than the first, that it does and that
    the first file's (with the objective flags over it) decides ``what`` ("ranks every GPU here"):
    which file came first otherwise changed the answer unsaid. Compared as they rank: a weight of 0,
    a direction of a metric not weighed, or max_latency_ms beside the same bound written out are one
    objective; bounds exactly, as they rank (a limit set with a slider and one typed to six digits
    differ)."""
    from workbench.core.domain.objective import objective_text

    stored = [objective_text(s.constraints, s.weights) for s in sessions]
    other = next((i for i, objective in enumerate(stored) if objective != stored[0]), None)
    if other is None:
        return None

    def said(session: Any) -> str:  # (a weighted metric's direction said with it)
        bounds, weights = objective_text(session.constraints, session.weights, shown=True)
        return f"weights {weights}" + (f"; constraints {bounds}" if bounds != "none" else "")

    return (f"{paths[other]} stores another objective ({said(sessions[other])}) than {paths[0]} "
            f"({said(sessions[0])}); the first file's, with the objective flags over it, {what}")
