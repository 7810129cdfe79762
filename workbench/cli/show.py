"""``show``: a session's summary (text or ``--json``), its recommendation under the objective in
force, why nothing is recommended, per-size results and the portability report."""

from __future__ import annotations

import argparse
import json
import math
import shlex
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from workbench.cli.files import check_distinct
from workbench.cli.parser import RESOURCE_MODES
from workbench.cli.objective_flags import (
    check_objective,
    check_objective_on,
    objective_from_args,
    objectives_from_args,
    other_objective_note,
    stored_objectives_to_show,
)
from workbench.cli.streams import print_json
from workbench.core.domain.assignments import parse_assignments
from workbench.core.domain.figures import fmt
from workbench.core.domain.measurement import Status, failure_counts
from workbench.core.domain.records import provenance
from workbench.core.domain.size_analysis import label_names, size_label
from workbench.core.domain.sizes import format_sizes, typed_like
from workbench.core.errors import WorkbenchError, counted, printable
from workbench.core.model.quality import outputs_compared, unchecked_outputs_note

if TYPE_CHECKING:  # imported where used: the CLI starts without loading the session module
    from workbench.core.domain.measurement import Trial
    from workbench.core.domain.session import Session


def first_line(text: str) -> str:
    """The first non-empty line of a message (a worker's log stays in the session, not on the terminal)."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def feasible_count(session: Session) -> int:
    """Trials of the session (every size of a sweep) that meet its constraints: what a run's last
    line counts (``show`` counts one size, the one it ranks)."""
    from workbench.core.domain.objective import rank

    return int(rank(list(session.trials), session.constraints, session.weights).n_feasible)


def _finite(value: float) -> float | None:
    return None if value is None or (isinstance(value, float) and not math.isfinite(value)) else value


def summarise(session: Session, constraints: Any = None, weights: Any = None, with_trials: bool = False,
              objectives: tuple[str, ...] = (), with_importance: bool = False,
              at: Mapping[str, Any] | None = None, label: str = "the session",
              remeasure: str | None = "tune --remeasure-aborted") -> dict[str, Any]:
    """The ``show --json`` object: a contract (see docs/cli.md).

    ``remeasure``: the command that re-measures the session's aborted candidates under the
    objective in force, which a "nothing feasible" reason names (see :func:`remeasure_command`).

    ``importance`` and ``importance_note`` are computed only ``with_importance`` (``show --json``):
    importing Optuna's importance module imports scikit-learn, about a second of start-up that the
    other callers (the text summary, the end of ``tune``) would pay for figures they never print.

    A session measured at several sizes is ranked at one of them, the one ``export`` answers for
    (``at``, else the session's own problem: ``answered`` names it); without trials there, nothing
    is ranked and ``best`` is None: configs of different sizes are never ranked together.
    """
    from workbench.core.domain.objective import fastest_left_out, rank
    from workbench.core.domain.session import problem_key
    from workbench.core.domain.sizes import problems_of, sweep_progress
    from workbench.core.io.export import answered_problem

    constraints = constraints or session.constraints
    weights = weights or session.weights
    trials = list(session.trials)
    ranked, answered = trials, None
    measured = problems_of(session)
    # ranked at one size, the one export answers for, and said (`answered`): also a sweep that has
    # measured one size only, not its own problem, whose best a script took for the session's problem's
    one_size = bool(at) or len(measured) > 1 or (len(measured) == 1 and problem_key(measured[0]) != problem_key(session.problem))
    if one_size:
        found = answered_problem(session, label, at)
        answered, ranked = (found[0], list(found[1])) if found is not None else (None, [])
    default = session.default_config  # the window's "why" compares with it too
    ranking = rank(ranked, constraints, weights, default=default.id if default is not None else None)
    by_status: dict[str, int] = {}
    for trial in trials:
        by_status[trial.status.value] = by_status.get(trial.status.value, 0) + 1
    best = None
    if ranking.best is not None:
        t = ranked[ranking.best]
        best = {
            "index": t.index,
            "id": t.config.id,
            "config": t.config.to_dict(),
            "latency_ms": _finite(t.metric("latency_ms")),
            "memory_mb": _finite(t.metric("memory_mb")),
            "score": _finite(float(ranking.score[ranking.best])),
            "metrics": {k: _finite(float(v)) for k, v in t.measurement.metrics.items()},
            "why": ranking.explain(ranking.best),
            # simulated with estimated registers and shared memory (its compile had not landed): a
            # refinement can move it, or turn it into a launch failure
            "resources_pending": _pending(t),
        }
    device = dict(session.device)
    shown_weights, shown_constraints = _directions_of(constraints, weights)
    out: dict[str, Any] = {
        "kernel": session.kernel,
        "device": device,
        "simulated": bool(device.get("simulated", False)),
        "backend": session.backend.get("kind") if isinstance(session.backend, dict) else None,
        "search": _search_of(session),
        "trials": len(trials),
        "by_status": by_status,
        # (with no size ranked, how many trials meet the constraints at any size)
        "feasible": int(ranking.n_feasible if ranked or not trials else rank(trials, constraints, weights).n_feasible),
        "constraints": shown_constraints,
        "weights": shown_weights,
        # what the score ranks by: the positive weights, or latency alone when none is (every
        # weight 0 said nothing of the fallback)
        "score_metrics": sorted(weights.active()),
        # every direction given (--maximize / --minimize, the window's toggle), weighted or not
        "directions": {m: _direction_word(m, weights) for m in sorted(weights.directions)},
        "best": best,
        "most_excluding_constraint": ranking.to_relax if ranking.n_feasible == 0 and ranked else None,
        "why_none": _why_none(ranking, ranked, remeasure) if ranking.n_feasible == 0 and ranked else None,
        "fastest_left_out": fastest_left_out(ranked, ranking, constraints),
        # with a recommendation (without one, why_none says it): candidates stopped early under a
        # latency limit, and how many the limit in force no longer rules out, with the way back
        "aborted_note": ((ranking.aborted_note(remeasure) or None) if ranking.best is not None else None),
        "resources_pending": sum(_pending(t) for t in trials),
        # simulated with estimated resources for good: the run chose them, or had no compiler
        "resources_estimated": sum(t.measurement.resources_estimated and not _pending(t) for t in trials),
        # successful trials of the simulator whose outputs nothing compared (no emulation)
        "outputs_unchecked": sum(t.status is Status.OK and not outputs_compared(t.measurement.details) for t in trials),
    }
    if one_size:
        out["answered"] = answered
    if with_importance:
        from workbench.core.domain.importance import session_importance

        if one_size and answered is None:  # "0 trials" would misread a sweep of hundreds
            out["importance"] = {}
            out["importance_note"] = "no size answered: the slots are explained at one size, picked with --at"
            out["importance_fixed"] = []
        else:
            importance = session_importance(session, constraints, weights, targets=("score",), trials=ranked)["score"]
            out["importance"] = {k: round(v, 4) for k, v in importance.shares.items()}
            out["importance_note"] = importance.reason or f"{importance.method}, over {importance.counted}"
            out["importance_fixed"] = list(importance.fixed)  # slots of one declared value: no share
    if objectives:
        from workbench.core.domain.search_objective import Objective
        from workbench.core.domain.sizes import trials_by_problem

        objective = Objective(constraints, weights, objectives)
        # sizes do not dominate each other: one front per size, or the front of the size --at names
        groups = [ranked] if at else list(trials_by_problem(session).values())
        sweep = bool(at) or len(groups) > 1
        out["objectives"] = list(objectives)
        out["objective_directions"] = {m: _direction_word(m, weights) for m in objectives}
        out["pareto"] = [
            {"index": group[i].index, "id": group[i].config.id, "config": group[i].config.to_dict(),
             **({"problem": dict(session.problem_of(group[i]))} if sweep else {}),
             **{m: _finite(group[i].metric(m)) for m in objectives}}
            for group in (groups if sweep else [trials])
            for i in objective.pareto(group)
        ]
    if with_trials:
        # in a session of several sizes every trial says its size, its session's own too
        mixed = any(t.problem is not None and dict(t.problem) != dict(session.problem) for t in trials)
        out["trial_list"] = [
            {
                "index": t.index,
                "id": t.config.id,
                "config": t.config.to_dict(),
                "status": t.status.value,
                "latency_ms": _finite(t.metric("latency_ms")),
                "latency_bound_ms": _finite(t.metric("latency_bound_ms")),
                "message": t.measurement.message,
                "resources_pending": _pending(t),
                "worker": t.worker,
                "details": dict(t.measurement.details),
                **({"problem": dict(session.problem_of(t))} if t.problem is not None or mixed else {}),
            }
            for t in trials
        ]
    sizes = _sizes_summary(session, constraints, weights, remeasure)
    if sizes:
        out["sizes"] = sizes
    progress = sweep_progress(session)
    if progress is not None:  # a killed or stopped sweep: the sizes above are not all it planned
        out["sweep"] = {"sizes": progress.planned, "budget": progress.plan.budget,
                        "unfinished": [{"problem": dict(p), "trials": n} for p, n in progress.unfinished],
                        "ended": [{"problem": dict(p), "trials": n, "reason": end} for p, n, end in progress.ended],
                        "note": progress.text() or None}
    return out


def remeasure_command(path: str | None, constraints: Any, session: Session) -> str | None:
    """The command that re-measures ``session``'s aborted candidates (saved at ``path``) under
    ``constraints``: with the latency limit they are ranked under when it is not the one the file
    keeps (a limit relaxed on ``show``'s command line re-measured nothing when left out). None for
    a replay, which cannot measure them again (the command is refused there: a recording holds only
    where each stopped)."""
    backend = session.backend if isinstance(session.backend, dict) else {}
    if backend.get("kind") == "replay":
        return None
    if path is None:
        return "tune --remeasure-aborted"
    command = f"tune --remeasure-aborted --out {shlex.quote(str(path))}"
    limit, stored = constraints.max_latency_ms, session.constraints.max_latency_ms
    if limit is not None and stored is not None and limit > stored:  # relaxed: the limit re-measured under
        from workbench.core.domain.objective import exact_number

        # exact: a rounded limit can rule a candidate out again
        command += f" --max-latency-ms {exact_number(limit)}"
    return command


def _why_none(ranking: Any, trials: Sequence[Trial], remeasure: str | None = "tune --remeasure-aborted") -> str:
    """Why nothing is recommended; when nothing succeeded, with the failure most trials share (a
    template every config of which fails to compile said only "no successful trials")."""
    why = str(ranking.why_none(remeasure))
    if ranking.n_ok:
        return why
    reasons = failure_counts(trials)
    if not reasons:
        return why
    (status, message), count = max(reasons.items(), key=lambda item: item[1])
    if count == 1 and len(reasons) > 1:  # every failure its own: "most often (1)" said nothing true
        return f"{why}; {len(reasons)} different failures, the first {status}: {printable(message)}"
    return f"{why}; most often {status} ({count}): {printable(message)}"


def _pending(trial: Trial) -> bool:
    """Whether ``trial`` was simulated with estimated resources whose compile had not landed: a
    refinement can change its figures, its status and the ranking (``show`` marks it)."""
    return trial.measurement.resources_pending


#: How a size's run ended short of a sweep's evaluations (:data:`workbench.core.domain.sizes.EARLY_ENDS`), in words.
ENDED_WORDS = {"plateau": "no improvement within --patience", "time_limit": "its time limit",
               "exhausted": "nothing left to measure"}


def _sizes_summary(session: Session, constraints: Any, weights: Any,
                   remeasure: str | None = "tune --remeasure-aborted") -> list[dict[str, Any]]:
    """``show --json``'s ``sizes`` (a session measured at several problems): each size's problem,
    trial count and best trial under the objective in force, smallest size first."""
    from workbench.core.domain.search_objective import Objective
    from workbench.core.domain.size_analysis import size_rows

    if not any(t.problem is not None for t in session.trials):
        return []
    rows = size_rows(session, Objective(constraints, weights))
    if len(rows) < 2 and not session.extra.get("sweep"):
        return []
    from workbench.core.domain.objective import rank
    from workbench.core.domain.session import problem_key
    from workbench.core.domain.sizes import sweep_progress

    progress = sweep_progress(session)
    ended = {problem_key(p): end for p, _n, end in progress.ended} if progress is not None else {}
    out = []
    for r in rows:
        ranking = rank(list(r.trials), constraints, weights)
        out.append({
            "problem": dict(r.problem), "trials": len(r.trials), "feasible": int(ranking.n_feasible),
            # short of the sweep's evaluations by its own rule (plateau, time_limit, exhausted)
            "ended": ended.get(problem_key(r.problem)),
            "best": None if r.best is None else {"index": r.best.index, "id": r.best.config.id,
                                                "config": r.best.config.to_dict(),
                                                "latency_ms": _finite(r.best.metric("latency_ms")),
                                                "resources_pending": _pending(r.best)},
            # why a size has no best: failures only, or successes the constraints exclude (and which)
            "why_none": ranking.why_none(remeasure) if r.best is None else None,
        })
    return out


def _directions_of(constraints: Any, weights: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """``show --json``'s weights and constraints, each metric with the direction in force."""
    shown_weights = {m: {"weight": w, "direction": _direction_word(m, weights)} for m, w in weights.values.items()}
    shown_constraints = constraints.to_dict()
    shown_constraints["bounds"] = [
        {"metric": b.metric, "op": b.op, "value": b.value, "direction": _direction_word(b.metric, weights)}
        for b in constraints.bounds()
    ]
    return shown_weights, shown_constraints


def _direction_word(metric: str, weights: Any) -> str | None:
    """``"minimize"`` / ``"maximize"``: the direction given for ``metric`` or its known one; None
    for a metric nobody has given one."""
    from workbench.core.domain.metrics import direction_word, known_direction

    direction = known_direction(metric, weights.directions)
    return direction_word(direction) if direction is not None else None


def _search_of(session: Any) -> dict[str, Any]:
    """How the session's trials were searched, as its last run recorded it: the strategy, its seed
    and the options set (the rest at their defaults), and the run's pruning and stop rules (None:
    not used). What a person needs to repeat or continue the run the same way."""
    from workbench.search.base import STRATEGIES, strategy_class

    strategy = session.strategy if isinstance(session.strategy, dict) else {}
    name = strategy.get("name")
    options = dict(strategy.get("options") or {})
    known = isinstance(name, str) and name in STRATEGIES
    declared = {o.name: o for o in strategy_class(str(name)).OPTIONS} if known else {}
    defaults = {key: option.default for key, option in declared.items()}
    ignored: dict[str, str] = {}
    for key, value in options.items() if known else ():  # what a continued run would not use (it warns
        if key not in declared:                             # and takes the default)
            ignored[key] = f"{name} has no option {key!r}"
            continue
        try:
            declared[key].check(value)
        except ValueError as exc:
            ignored[key] = f"{key} must be {exc}"
    if known:  # values that clash with each other: a continued run takes their defaults too
        from workbench.runner.controller import usable_stored_options

        usable, notes = usable_stored_options(str(name), options)  # (as the run reads them: checked first)
        clash = next((note.split("(", 1)[1].rsplit(")", 1)[0] for note in notes if "do not go together" in note), "")
        for key in sorted(set(options) - set(usable) - set(ignored)):
            ignored[key] = f"does not go together with the others ({clash})" if clash else \
                "does not go together with the others"
    run = session.run
    from workbench.core.domain.sizes import sweep_plan

    # a sweep's budget is per size (its plan's): the run records its last size's engine total,
    # the trials before that size and its evaluations, a figure that means nothing to a reader
    plan = sweep_plan(session)
    return {
        "strategy": name,
        # false for a strategy this version does not have: a continued run refuses it
        "strategy_known": known if name else None,
        "seed": strategy.get("seed"),
        "options": options,
        # the options this session set away from the strategy's defaults, and those a run could not
        # use (an unknown name, a value out of its range), with why
        "options_changed": {k: v for k, v in options.items() if k not in ignored and (k not in defaults or defaults[k] != v)},
        "options_ignored": ignored,
        "prune_keep": run.prune_keep,
        "patience": run.patience,
        "budget": plan.budget if plan is not None else run.budget,
        "time_limit_s": run.time_limit_s,
        # what else decides which configs a rerun measures, as the file records it: the problem, the
        # backend's own choices (the simulator's noise and its seed, the modelled GPU, the resource
        # figures) and the workers (a run of several measures in another order, so it searches otherwise)
        "problem": dict(session.problem),
        "sizes": {name: list(values) for name, values in plan.sizes.items()} if plan is not None else None,
        "backend": _rerun_backend(session),
        "workers": run.workers,
        "executor": run.executor,
    }


#: Backend options that change what a run measures (a pace does not).
_RERUN_OPTIONS = ("gpu_model", "noise", "seed", "compile", "path", "device", "devices", "arch")


def _rerun_backend(session: Session) -> dict[str, Any]:
    backend = session.backend if isinstance(session.backend, dict) else {}
    options: Mapping[str, Any] = backend.get("options") or {}
    return {"kind": backend.get("kind"), **{k: options[k] for k in _RERUN_OPTIONS if k in options}}


def _rerun_line(search: Mapping[str, Any]) -> str:
    """The settings beside the search that a rerun must repeat, in one line (the problem, the
    simulator's noise and its seed, its GPU and resource figures, several workers)."""
    backend = search.get("backend") or {}
    sizes = search.get("sizes") or {}
    # a sweep's sizes as --sizes takes them, then the parameters it holds fixed (its own problem
    # is not one it measured)
    problem = ", ".join(f"{k}={v}" for k, v in (search.get("problem") or {}).items() if k not in sizes)
    parts = [f"sizes {format_sizes(sizes)}" if sizes else "", problem]
    if backend.get("kind") == "sim":
        parts.append(f"simulated {backend.get('gpu_model') or 'default GPU'}")
        noise = backend.get("noise", True)  # (the simulator reads a noise of null as off)
        parts.append("noise off" if not noise else f"noise seed {backend.get('seed') or 0}")
        if backend.get("compile"):
            named = {mode: word for word, mode in RESOURCE_MODES.items()}  # (as tune --resources names them)
            parts.append(f"resources {named.get(backend['compile'], backend['compile'])}")
    workers, executor = search.get("workers"), search.get("executor") or "local"
    if (workers or 1) > 1 or (workers is None and executor == "ray"):
        count = f"{workers} workers" if workers else "a worker per CPU"
        parts.append(f"{count} ({executor}): measured in another order, so searched otherwise than by one")
    return "; ".join(p for p in parts if p)


def _search_line(search: Mapping[str, Any]) -> str | None:
    """``search`` of :func:`summarise` in one line (None when the session records no strategy)."""
    if not search.get("strategy"):
        return None
    parts = [f"seed {search['seed']}" if search.get("seed") is not None else ""]
    if search.get("strategy_known") is False:
        parts.append("not a strategy of this version: a continued run refuses it")
    parts += [f"{k}={v}" for k, v in sorted(search["options_changed"].items())]
    if search.get("options_ignored"):  # (a value of any length a file may hold, shortened)
        from workbench.search.base import shown_value

        parts.append("ignored (a run takes the default): " + ", ".join(
            f"{k}={shown_value(search['options'][k])}" for k in sorted(search["options_ignored"])))
    if search.get("prune_keep") is not None and search["prune_keep"] < 1:  # (a fraction of 1 prunes nothing)
        parts.append(f"pruned to {search['prune_keep']:g} by the cost model")
    if search.get("patience") is not None:
        parts.append(f"stop after {search['patience']} evaluations without progress")
    shown = ", ".join(p for p in parts if p)
    return f"{search['strategy']}" + (f" ({shown})" if shown else "")


def cmd_show(args: argparse.Namespace) -> int:
    from workbench.core.domain.session import load_session
    from workbench.core.model.verify import reference_summary

    if args.portability is not None:
        return _show_portability(args)
    if args.kernel_dir:
        raise WorkbenchError("--kernel-dir applies to show --portability (the templates its simulated GPUs predict)")
    if args.file is None:
        raise WorkbenchError("show needs a session file (or --portability S1 S2 ...)")
    from workbench.runner.plan import session_metrics

    session = load_session(args.file)
    from workbench.cli.files import note_runs_writing

    # (a nightly job's show of a session still being written gave a partial count, said nowhere)
    note_runs_writing([args.file], "what is shown")
    constraints, weights = objective_from_args(args, session, args.file)
    objectives = objectives_from_args(args, session) or ()
    if args.objectives is None:
        objectives = stored_objectives_to_show(objectives, session_metrics(session), args.file)
    check_objective(constraints, weights, session_metrics(session), objectives, session=session)
    at = parse_assignments(args.at, "--at") if args.at else None
    summary = summarise(session, constraints, weights, with_trials=args.trials, objectives=objectives,
                        with_importance=args.json, at=at, label=str(args.file),
                        remeasure=remeasure_command(args.file, constraints, session))
    if args.json:
        print_json(summary)
        return 0
    device = summary["device"].get("name", "?")
    # an import of a recording is labelled too: its timings were measured earlier, not now
    label = {"simulated": " [SIMULATED timings]", "replayed": " [replayed]", "recorded": " [recorded]"}.get(
        provenance(summary["device"]), "")
    print(f"kernel   {summary['kernel']}")
    print(f"device   {device}{label}")
    print(f"trials   {summary['trials']}  " + "  ".join(f"{k}={v}" for k, v in sorted(summary["by_status"].items())))
    searched = _search_line(summary["search"])
    if searched:
        print(f"search   {searched}")
        rerun = _rerun_line(summary["search"])
        if rerun:
            print(f"rerun    {printable(rerun)}")
    answered = summary.get("answered")
    size = f" at {', '.join(f'{k}={v}' for k, v in answered.items())}" if answered else ""
    over = "  (over all sizes)" if "answered" in summary and answered is None else size
    print(f"feasible {summary['feasible']}{over}")
    # what "feasible" and "best" below are under, as an export states it (the session's own, or the flags')
    from workbench.core.domain.objective import fastest_line, objective_text

    bounds, weighted = objective_text(constraints, weights, shown=True)
    if constraints.bounds():
        print(f"limits   {printable(bounds)}")
    if set(weights.active()) != {"latency_ms"}:  # latency alone ranks the same at any weight
        print(f"weights  {printable(weighted)}")
    if summary["resources_pending"]:
        print(f"estimate {_pending_line(summary['resources_pending'], str(args.file))}")
    if summary["resources_estimated"]:
        print(f"estimate {estimated_line(session, summary['resources_estimated'])}")
    # as tune says it: a template without a reference says what was checked (its trials have no
    # quality figure, which the note on unchecked outputs would have called the reference's)
    checks = reference_summary(session.trials) or str(session.extra.get("reference") or "")
    if checks:
        print(f"outputs  {printable(checks)}")
    elif summary["outputs_unchecked"]:
        print(f"outputs  {unchecked_outputs_note(summary['outputs_unchecked'])}")
    if summary["best"]:
        b = summary["best"]
        estimated = "  (resources estimated: refining can change it)" if b["resources_pending"] else ""
        print(f"best     {fmt(b['latency_ms'])} ms  score {b['score']:.3f}  {b['config']}{size}{estimated}")
        print(f"why      {b['why']}")
        if summary["fastest_left_out"]:
            print(f"fastest  {printable(fastest_line(summary['fastest_left_out']))}")
        if summary["aborted_note"]:
            print(f"aborted  {printable(summary['aborted_note'])}")
    elif "answered" in summary and answered is None:
        print("best     one per size below: sizes are not ranked together (--at NAME=VALUE ranks one of them)")
    elif summary["why_none"]:
        print(f"nothing feasible: {summary['why_none']}")
    if summary.get("objectives"):
        sizes = {json.dumps(p["problem"], sort_keys=True) for p in summary["pareto"] if "problem" in p}
        per_size = " (one front per size)" if len(sizes) > 1 else ""
        print(f"pareto   {counted(len(summary['pareto']), 'feasible config')} "
              f"on the front of {', '.join(summary['objectives'])}"
              f"{per_size}")
        # named as the size lines below name them
        front_names = label_names(session, [p["problem"] for p in summary["pareto"] if "problem" in p])
        for point in summary["pareto"]:
            figures = "  ".join(f"{m} {fmt(point[m])}" for m in summary["objectives"] if point[m] is not None)
            size = size_label(point["problem"], front_names) + ": " if "problem" in point else ""
            print(f"         {size}{figures}  {point['config']}")
    sizes = summary.get("sizes", ())
    # named as tune names them: by the parameters that differ between the sizes
    varying = label_names(session, [size["problem"] for size in sizes])
    for size in sizes:
        best = size["best"]
        estimated = " (resources estimated)" if best and best["resources_pending"] else ""
        figure = (f"best {fmt(best['latency_ms'])} ms{estimated}  {best['config']}" if best and best["latency_ms"] is not None
                  else f"nothing feasible: {size['why_none']}" if size.get("why_none") else "nothing succeeded")
        label = size_label(size["problem"], varying)
        early = f" (ended: {ENDED_WORDS.get(size['ended'], size['ended'])})" if size.get("ended") else ""
        print(f"size     {label}: {counted(size['trials'], 'trial')}{early}, {figure}")
    if summary.get("sweep", {}).get("note"):
        from workbench.core.io.session_lock import locked_by_other

        # a sweep still running is said as such: its lock would refuse the --resume
        finish = ("a run of it is going" if locked_by_other(args.file)
                  else f"tune --out {shlex.quote(str(args.file))} --resume finishes them")
        print(f"sweep    {summary['sweep']['note']}; {finish}")
    if args.trials:
        # a sweep's trials say their size (by the parameters that differ), as its size lines do
        sized = bool(sizes)
        print(f"{'trial':>5} {'status':<14} {'latency ms':>10}  {'size  ' if sized else ''}config  message")
        for t in summary["trial_list"]:
            lat = fmt(t["latency_ms"])
            estimated = "  (resources estimated)" if t["resources_pending"] else ""
            sized_as = ""
            if sized:
                problem = t.get("problem") or session.problem  # (none: the session's own)
                sized_as = size_label(problem, varying) + "  "
            print(f"{t['index']:>5} {t['status']:<14} {lat:>10}  {sized_as}{t['config']}  "
                  f"{printable(t['message'])}{estimated}")
    return 0


def _pending_line(count: int, path: str) -> str:
    """What ``count`` trials simulated with estimated resources mean, and the command that ends it."""
    return (f"{count} trial{'s' if count != 1 else ''} simulated with estimated resources (compile not landed: "
            f"a refinement can change their figures or refuse their launch); refine them with "
            f"tune --resume --out {shlex.quote(path)} --refine-only")


def estimated_line(session: Session, count: int) -> str:
    """Why ``count`` trials keep estimated resources that no refinement will replace."""
    options = session.backend.get("options") if isinstance(session.backend, dict) else None
    chosen = isinstance(options, dict) and options.get("compile") == "estimate"
    reasons = {str(t.measurement.details.get("estimate_reason")) for t in session.trials
               if t.measurement.details.get("estimate_reason")}
    why = ("the run chose estimated resources (--resources estimated)" if chosen
           else f"no compile was possible ({printable(sorted(reasons)[0][:200])})" if reasons
           else "their compiles were not made")
    return (f"{count} trial{'s' if count != 1 else ''} hold estimated resources that no refinement replaces: {why}; "
            "their registers, shared memory and what follows from them (occupancy, the modelled latency) are estimates")


def _show_portability(args: argparse.Namespace) -> int:
    from workbench.core.domain.portability import format_report, portability_report
    from workbench.core.domain.session import load_session
    from workbench.runner.portability import simulator_predictors

    paths = ([args.file] if args.file else []) + list(args.portability)
    if args.trials or objectives_from_args(args, None):
        raise WorkbenchError("--portability cannot be combined with --trials or --objectives")
    from workbench.core.domain.templates import check_template_folders

    check_template_folders(args.kernel_dir)  # a typo is one line, not a note per simulated GPU
    # a device's sessions are pooled, as export pools them: one given twice counted its trials twice
    check_distinct(paths)
    sessions = [load_session(path) for path in paths]
    constraints, weights = objective_from_args(args, sessions[0], paths[0])
    check_objective_on(constraints, weights, sessions)
    at = typed_like(sessions[0].problem, parse_assignments(args.at, "--at"))
    predictors, notes = simulator_predictors(sessions, at, kernel_dirs=args.kernel_dir)
    report = portability_report(sessions, paths, constraints, weights, predictors=predictors, at=at)
    report.notes += notes
    note = other_objective_note(sessions, paths, "ranks every GPU here")
    if note is not None:
        report.notes.append(note)
    if args.json:
        print_json(report.to_dict())
        return 0
    print("\n".join(format_report(report)))
    return 0
