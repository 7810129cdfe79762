"""Take a session's answer out: the recommended config as a C header, a ``.cu`` file, JSON or a CuPy script.

Everything here is a pure function of (sessions, constraints, weights, template): the
recommendation is the ranking's best under the objective *in force when exporting* (the GUI's
sliders or the CLI's flags), never a stored answer. With nothing feasible an export refuses with
the ranking's reason (each constraint that excludes a trial, the most excluding first).

Several sessions of one kernel and problem can be exported together (one per GPU, or one session
whose trials ran on several GPUs). Each device gets its own best config, and a *portable* config is
chosen by the max-min rule of :mod:`workbench.core.domain.portability`: among configs feasible on every
device, the one whose worst fraction of a device's optimum is highest (Kernel Tuner's
``create_device_targets`` takes the best mean instead, which can hide a device where the config
is poor). The header guards the per-device configs with ``WORKBENCH_TARGET_<DEVICE>``
macros and falls back to the portable config; the other formats use the portable config.

Slot macro names are the template's (:meth:`KernelTemplate.defines`); for sessions without a
template they are the upper-cased slot names (python benchmarks, replays of the workbench's own
sessions), or the names as recorded for a Kernel Tuner recording, whose kernel reads each parameter
by the name Kernel Tuner defined it under; only ``header`` and ``json`` are possible. No CuPy and no Qt here: the CuPy script's code is
:mod:`workbench.core.io.cupy_script`, copied in as text with the tuned values written as constants.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from workbench.core.errors import SpaceError, WorkbenchError, counted, quoted, write_error
from workbench.core.fs import atomic_write
from workbench.core.domain.macros import export_macro, reserved_macro
from workbench.core.domain.portability import check_one_kernel
from workbench.core.domain.records import (PROVENANCE_NOTES, PROVENANCE_ORDER, Provenance, is_arch_name, least_measured,
                                           provenance, provenance_tag)
from workbench.core.domain.measurement import LATENCY, Trial
from workbench.core.domain.metrics import RECORDED_RATES, rates_time_apart
from workbench.core.domain.size_analysis import size_label
from workbench.core.domain.sizes import (problems_of, shared_size_hint, size_order_key, size_value_text, telling_parameters,
                                         typed_like)
from workbench.core.domain.figures import fmt
from workbench.core.domain.objective import Constraints, Weights, fastest_left_out, fastest_line, objective_text, rank
from workbench.core.domain.portability import device_of, max_min_pick
from workbench.core.domain.session import Session, problem_key
from workbench.core.domain.space import Config
from workbench.core.domain.templates import c_literal, c_string_body, likeliest_first, stands_in_for_another
from workbench.core.io.export_seal import seal_json, seal_text, unchanged_export
from workbench.core.io.interop import recorded_integers, recorded_value
from workbench.core.io.output_files import prepare_output, refuse_beside_journal
from workbench.core.model.quality import outputs_compared

FORMATS: tuple[str, ...] = ("header", "cuda", "json", "cupy")
#: The file suffix of each format (the window's Export dialog picks the format by it).
SUFFIXES: dict[str, str] = {"header": ".h", "cuda": ".cu", "json": ".json", "cupy": ".py"}
EXPORT_FORMAT = "kernel-workbench-export"
EXPORT_VERSION = 1
TARGET_PREFIX = "WORKBENCH_TARGET_"
#: The words in the first comment line of every text export (the dispatch formats write them too).
EXPORT_MARKER = "exported by Kernel Tuning Workbench"
#: Metrics quoted in comments (when the trial reports them), in this order.
_QUOTED = ("latency_ms", "throughput_gbs", "gflops", "pct_of_peak", "memory_mb", "quality",
           "registers", "smem_bytes", "spill_bytes", "occupancy")
#: The compiler's figures, which a simulated run without a compile estimates (``details.estimated``).
_RESOURCE_METRICS = frozenset({"registers", "smem_bytes", "spill_bytes", "occupancy"})
_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class Choice:
    """The recommended trial for one device (or the portable pick across devices)."""

    device: str
    trial: Trial
    score: float
    why: str
    session: str  # label of the session the trial came from
    devices: tuple[str, ...] = ()  # for the portable pick: the devices it is feasible on (its trial is the first's)
    candidates: int = 0  # for the portable pick: the configs measured feasible on every device it was chosen from


@dataclass
class ExportPlan:
    """What an export writes, decided once: per-device picks, the portable pick, the template."""

    kernel: str
    kind: str
    problem: dict[str, Any]
    constraints: Constraints
    weights: Weights
    choices: list[Choice]
    portable: Choice | None
    template: Any = None  # KernelTemplate when the sessions are of a template found on disk
    source_hash: str = ""
    sessions: list[str] = field(default_factory=list)
    #: Where the pick's timings come from: the least measured of the sessions' (a modelled GPU, a
    #: replay, an imported recording), which every format states beside the devices.
    provenance: Provenance = "measured"
    #: Each device's own (the least measured of its sessions'): files pooling a recording and a
    #: simulated GPU tag each device, so neither is labelled with the other's source.
    device_provenance: dict[str, Provenance] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    slot_domains: dict[str, list[Any]] = field(default_factory=dict)
    kernel_dirs: list[str] = field(default_factory=list)
    seed: int = 0
    #: Template folders the first session names that were not given (never loaded unasked): where
    #: its template is, said when a format needs it.
    unloaded_dirs: list[str] = field(default_factory=list)
    #: Slot macros keep the slots' own names (a Kernel Tuner recording without a template) instead
    #: of upper-casing them.
    names_as_recorded: bool = False
    #: Per float slot of a recording, the values it held as integers (defined as integers: see
    #: :func:`workbench.core.io.interop.recorded_value`).
    recorded_integers: dict[str, set[float]] = field(default_factory=dict)
    #: The note, when the template found on disk is not the code the sessions were tuned on (also
    #: in ``notes``): said where the export is made, not only in the file's comments, since a
    #: rendered kernel is then another one than was measured.
    template_changed: str = ""
    #: The notes that the size exported is short of its sweep's planned evaluations (also in
    #: ``notes``): said where the export is made, as ``show`` and a dispatch say them.
    unfinished: list[str] = field(default_factory=list)

    @property
    def recommended(self) -> Choice:
        """The config the single-config formats use: the portable one (the only one for one device)."""
        if self.portable is None:
            devices = ", ".join(c.device for c in self.choices)
            raise WorkbenchError(
                f"no config is feasible on every device ({devices}); export the sessions one at a time"
            )
        return self.portable


# ------------------------------------------------------------------------------------------------
# Planning
# ------------------------------------------------------------------------------------------------


def _session_label(session: Session, source: str | None) -> str:
    if source:
        return str(source)
    when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(session.created_at or 0))
    return f"{session.kernel} session of {when} UTC"


def find_template(session: Session, templates: Mapping[str, Any] | None = None,
                  kernel_dirs: Sequence[str | os.PathLike[str]] = ()) -> Any:
    """The template a session tuned, when it is on disk and still has the session's slots; else None.

    ``templates`` (name -> KernelTemplate) skips loading; otherwise only the shipped library is
    searched. The session's own ``kernel_dirs`` are never loaded: a template folder holds Python
    specs, and opening or exporting a file must not run code the file points at. Whoever wants a
    folder's template passes it (``kernel_dirs``: folders the user named on the command line or
    picked in the GUI). A recording is matched by kernel name and slot names. A shipped template is
    not the session's when the session's template came from a folder that was not given
    (:func:`~workbench.core.domain.templates.stands_in_for_another`).

    A folder that is missing, or the kernel's own spec that does not load, is an error naming it (as
    for ``tune --kernel-dir``): passed over, it left "no template found, use --kernel-dir" in its
    place. Only the kernel's own spec is read; another spec of the folder that does not load is not
    the export's business.
    """
    if session.kind not in ("template", "recording"):
        return None
    if templates is None:
        from workbench.core.domain.templates import find_template as find_named, kernels_dir

        template = find_named(session.kernel, *(str(d) for d in kernel_dirs), str(kernels_dir()))
    else:
        template = templates.get(session.kernel)
    if template is None:
        return None
    options = session.backend.get("options", {}) if isinstance(session.backend, dict) else {}
    if stands_in_for_another(template, session.source_hash, unloaded_dirs(options, kernel_dirs)) is not None:
        # the session tuned a template of that name from a folder not given: the shipped namesake
        # is other code, and its source with the tuned config's defines is no export of what ran
        return None
    names = {s.name for s in session.space.slots} if session.space is not None else set()
    if names != {s.name for s in template.slots} or not set(session.problem) <= set(template.problem):
        return None
    return template


def reads_recorded_names(session: Session) -> bool:
    """Whether the session's kernel reads its parameters under the names the session records.

    Kernel Tuner compiles a kernel with ``#define <parameter> <value>`` for each parameter as the
    user named it (``block_size_x``), so a header for that kernel must use those names; an
    imported Kernel Tuner recording says so in its device (``recorded``), which replays of it keep.
    The workbench's own templates read upper-cased names instead (:meth:`KernelTemplate.defines`).
    """
    return bool(session.device.get("recorded"))


def plan_export(
    sessions: Sequence[Session],
    constraints: Constraints | None = None,
    weights: Weights | None = None,
    *,
    sources: Sequence[str] | None = None,
    templates: Mapping[str, Any] | None = None,
    kernel_dirs: Sequence[str | os.PathLike[str]] = (),
    at: Mapping[str, Any] | None = None,
) -> ExportPlan:
    """Decide what to export from ``sessions`` under one objective (default: the first session's),
    at the problem ``at``'s values over each session's own (a size of a sweep; None: the session's
    problem, or the one size it was measured at when its own problem has no trials).

    Raises WorkbenchError (one line) when the sessions cannot go together (different kernels or
    problems) or when a device has nothing feasible (naming each constraint that excludes a trial).
    """
    if not sessions:
        raise WorkbenchError("export needs at least one session")
    first = sessions[0]
    constraints = first.constraints if constraints is None else constraints
    weights = first.weights if weights is None else weights
    labels = [_session_label(s, sources[i] if sources and i < len(sources) else None) for i, s in enumerate(sessions)]
    kernels = sorted({s.kernel for s in sessions})
    if len(kernels) > 1:
        raise WorkbenchError(f"the sessions tune different kernels ({', '.join(kernels)}); export them one at a time")
    check_one_kernel(sessions, labels, "export them one at a time")
    picked = [_export_problem(s, label, at, sessions) for s, label in zip(sessions, labels)]
    problem = picked[0][0]
    for session, (theirs, _trials), label in zip(sessions[1:], picked[1:], labels[1:]):
        if theirs != problem:
            hint = shared_size_hint(first, session) if not at else ""  # as show --portability says it
            raise WorkbenchError(template=quoted(f"{label}: problem {theirs} differs from {labels[0]}'s "
                                                 f"{problem}; an export serves one problem") + hint)

    options = first.backend.get("options", {}) if isinstance(first.backend, dict) else {}
    template = find_template(first, templates, kernel_dirs)
    if template is not None and any(find_template(s, {template.name: template}, kernel_dirs) is None
                                    for s in sessions[1:]):
        template = None
    notes: list[str] = []
    changed = ""
    if template is not None:
        stale = [lab for s, lab in zip(sessions, labels) if s.kind == "template" and not template.is_code_of(s.source_hash)]
        if stale:
            where = f" ({template.path})" if template.path else ""
            changed = (f"the template{where} changed since {', '.join(stale)} was tuned "
                       f"(source hash {template.source_hash()} now); re-tune to be sure the config still wins")
            notes.append(changed)

    # group trials by device, across sessions
    groups: dict[str, list[tuple[Trial, str]]] = {}
    origins: dict[str, Provenance] = {}
    other_sizes = 0
    for session, label, (_problem, own) in zip(sessions, labels, picked):
        other_sizes += len(session.trials) - len(own)  # a sweep's other sizes are not this header's problem
        kind = provenance(session.device)
        for trial in own:
            device = device_of(session, trial)
            groups.setdefault(device, []).append((trial, label))
            origins[device] = least_measured((origins.get(device, kind), kind))
    if other_sizes:
        notes.append(f"{other_sizes} trials at other problem sizes were left out (this export serves "
                     f"{problem}); export --format dispatch picks a config by size")
    unfinished = _unfinished_size_notes(sessions, labels, problem)
    notes += unfinished
    if not groups:
        raise WorkbenchError(f"{labels[0]}: the session has no trials to export")

    choices: list[Choice] = []
    per_device_scores: dict[str, dict[str, tuple[float, int]]] = {}
    trial_by_id: dict[str, tuple[Trial, str]] = {}
    default = first.default_config  # "why" compares with it, as show and the window say it
    for device in sorted(groups):
        pairs = groups[device]
        trials = [t for t, _ in pairs]
        ranking = rank(trials, constraints, weights, default=default.id if default is not None else None)
        if ranking.best is None:
            size = f" at {', '.join(f'{k}={problem.get(k, v)}' for k, v in at.items())}" if at else ""
            raise WorkbenchError(f"nothing feasible to export on {device}{size}: {ranking.summary()}")
        best = ranking.best
        choices.append(Choice(device, trials[best], float(ranking.score[best]), ranking.explain(best),
                              pairs[best][1], (device,)))
        fastest = fastest_left_out(trials, ranking, constraints)
        if fastest is not None:  # (a constraint that moved the pick: said by show, and now by the file too)
            where = f"{device}: " if len(groups) > 1 else ""
            notes.append(f"{where}the fastest config measured is not this one: {fastest_line(fastest)}")
        scores: dict[str, tuple[float, int]] = {}
        for row in ranking.order:
            cid = trials[row].config.id
            if cid not in scores:  # order is best first: keep each config's best measurement
                scores[cid] = (float(ranking.score[row]), int(row))
                trial_by_id.setdefault(cid, pairs[row])
        per_device_scores[device] = scores

    macros: dict[str, str] = {}
    for choice in choices:
        other = macros.setdefault(target_macro(choice.device), choice.device)
        if other != choice.device:
            raise WorkbenchError(f"devices {other!r} and {choice.device!r} would share the guard macro "
                                 f"{target_macro(choice.device)}; export them separately")
    portable = choices[0] if len(choices) == 1 else _portable(choices, per_device_scores, groups)
    notes += _front_notes(sessions, labels, [own for _problem, own in picked], constraints, weights,
                          several_devices=len(groups) > 1)
    space = first.space
    domains = {s.name: list(s.values) for s in space.slots} if space is not None else {}
    return ExportPlan(
        kernel=first.kernel, kind=first.kind, problem=dict(problem), constraints=constraints,
        weights=weights, choices=choices, portable=portable, template=template,
        source_hash=first.source_hash, sessions=labels, provenance=sessions_provenance(sessions), device_provenance=origins, notes=notes,
        slot_domains=domains, kernel_dirs=[os.path.abspath(d) for d in kernel_dirs],
        seed=_seed(options.get("seed")), unloaded_dirs=_sessions_unloaded(sessions, kernel_dirs),
        names_as_recorded=template is None and reads_recorded_names(first), template_changed=changed,
        recorded_integers=recorded_integers(first) if template is None else {},
        unfinished=unfinished,
    )


def _sessions_unloaded(sessions: Sequence[Session], given: Sequence[str | os.PathLike[str]]) -> list[str]:
    """The template folders any of ``sessions`` names that were not given, the likeliest home of
    their template first (a pooled export's second session may be the one from a folder)."""
    named: list[str] = []
    for session in sessions:
        options = session.backend.get("options", {}) if isinstance(session.backend, dict) else {}
        named += [d for d in unloaded_dirs(options, given) if d not in named]
    return likeliest_first(sessions[0].kernel, named) if sessions else named


def unloaded_dirs(options: Any, given: Sequence[str | os.PathLike[str]]) -> list[str]:
    """The template folders a session's backend options name that are not among ``given``: only
    plain one-line paths (the file may say anything), to be named in a message, never loaded."""
    named = options.get("kernel_dirs") if isinstance(options, Mapping) else None
    if not isinstance(named, list):
        return []
    loaded = {os.path.abspath(str(d)) for d in given}
    return [d for d in named if isinstance(d, str) and 0 < len(d) <= 1024 and d.isprintable()
            and os.path.abspath(d) not in loaded]


def _export_problem(session: Any, label: str, at: Mapping[str, Any] | None,
                    together: Sequence[Any] = ()) -> tuple[dict[str, Any], list[Trial]]:
    """The problem a header of ``session`` serves and its trials there (:func:`answered_problem`).
    A sweep measured at several sizes but not at its own problem is refused in one line naming
    how to pick: for one exported with others (``together``, itself among them), a size every one
    of them measured, since the export serves one problem (a size of this session alone was
    refused next for another, and a dispatch is of one GPU's sessions)."""
    found = answered_problem(session, label, at)
    if found is not None:
        return found
    measured = problems_of(session)
    # every parameter that tells the sizes apart, as a dispatch counts them (a switch or a data
    # type too: one --at n=... left the switch at the session's own value)
    names = telling_parameters(measured) or list(session.problem)
    if len(together) > 1:
        shared = [p for p in measured if all(p in (problems_of(other) or [dict(other.problem)]) for other in together)]
        devices = {str(other.device.get("name") or "") for other in together}
        dispatch = ", or export them all with --format dispatch" if len(names) == 1 and len(devices) == 1 else ""
        if shared:
            example = " ".join(f"--at {n}={size_value_text(shared[0].get(n))}" for n in names)
            sizes = "one size" if len(shared) == 1 else f"{len(shared)} sizes"
            pick = "it" if len(shared) == 1 else "one"
            raise WorkbenchError(f"{label}: no trials at the session's problem {dict(session.problem)}; the "
                                 f"{len(together)} sessions have {sizes} in common: pick {pick} with --at NAME=VALUE "
                                 f"(e.g. {example}){dispatch}")
        raise WorkbenchError(f"{label}: no trials at the session's problem {dict(session.problem)}, and the "
                             f"{len(together)} sessions share no measured size: an export serves one problem, so "
                             "export them one at a time with --at NAME=VALUE (show FILE lists each one's sizes)"
                             f"{dispatch}")
    example = " ".join(f"--at {n}={size_value_text(measured[0].get(n))}" for n in names)  # one flag per name, as typed
    # a dispatch picks by one size parameter: a grid over several is refused there, so not offered
    dispatch = ", or export them all with --format dispatch" if len(names) == 1 else ""
    raise WorkbenchError(f"{label}: no trials at the session's problem {dict(session.problem)}; it was measured "
                         f"at {len(measured)} sizes: pick one with --at NAME=VALUE (e.g. {example}){dispatch}")


def typed_problem_values(problem: Mapping[str, Any], given: Mapping[str, Any], label: str,
                         flag: str = "--at") -> dict[str, Any]:
    """``given`` problem values typed as ``problem``'s are (``4096`` a number where it has one),
    refusing in one line a value that is not a number where ``problem``'s is: "no trials at
    n='abc'" did not say what was wrong with it. ``flag`` names the field in the message."""
    typed = typed_like(problem, given)
    for name, value in typed.items():
        own = problem.get(name)
        if _number(own) and not _number(value):
            shown = str(value).lower() if isinstance(value, bool) else value  # as typed: true, not True
            raise WorkbenchError(f"{flag} {name}={shown}: {name} is a number in {label} (its problem has {name}={own})")
    return typed


def answered_problem(session: Any, label: str, at: Mapping[str, Any] | None) -> tuple[dict[str, Any], list[Trial]] | None:
    """The problem a recommendation of ``session`` answers for, and its trials there: ``at`` over
    the session's problem (an error in one line when it is not a parameter or has no trials);
    without ``at``, the session's problem, else the only size it was measured at; None for a sweep
    measured at several sizes but not at its own problem (configs of different sizes are never
    ranked together: the smallest size's would always win). ``export`` and ``show`` agree by it."""
    if at:
        unknown = sorted(set(at) - set(session.problem))
        if unknown:
            raise WorkbenchError(f"--at {unknown[0]}: not a problem parameter of {label} "
                                 f"(these are: {', '.join(session.problem) or 'none'})")
        typed = typed_problem_values(session.problem, at, label)
        problem = {**session.problem, **typed}
        trials = session.trials_at(problem)
        if not trials:
            # the names --at leaves out, from the one measured size that has the values given (a
            # grid swept over alpha at one n other than the session's own: --at alpha=1.0 is enough)
            sizes = [p for p in problems_of(session) if all(p.get(k) == v for k, v in typed.items())]
            if len(sizes) == 1:
                problem, trials = dict(sizes[0]), session.trials_at(sizes[0])
            elif len(sizes) > 1:  # several measured sizes match: name what tells them apart
                given = ", ".join(f"{k}={v}" for k, v in typed.items())
                left = [k for k in sizes[0] if k not in typed and len({repr(p[k]) for p in sizes}) > 1]
                choices = "; ".join(f"{k}: {', '.join(str(v) for v in sorted({p[k] for p in sizes}))}" for k in left)
                raise WorkbenchError(f"--at {given}: {len(sizes)} measured sizes of {label} have it; name "
                                     f"{' and '.join(left)} too ({choices})")
        if not trials:
            measured = problems_of(session)
            if not measured:
                raise WorkbenchError(f"{label}: no trials at problem {problem}; the session has no trials")
            # named here: show lists sizes only for a session of several, and printed none for one
            raise WorkbenchError(f"{label}: no trials at problem {problem}; its trials are at "
                                 f"{measured_sizes_text(measured)}: name one of them with --at")
        return problem, trials
    own = session.trials_at()
    if own or not session.trials:
        return dict(session.problem), own
    measured = problems_of(session)
    if len(measured) == 1:
        return measured[0], session.trials_at(measured[0])
    return None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _seed(value: Any) -> int:
    """The session's seed for the script's inputs; anything but a plain non-negative int is 0."""
    return value if type(value) is int and 0 <= value < 2**63 else 0


def _portable(choices: list[Choice], scores: dict[str, dict[str, tuple[float, int]]],
              groups: dict[str, list[tuple[Trial, str]]]) -> Choice | None:
    """The config feasible on every device with the best worst-case fraction of each device's optimum.

    Fraction of optimum = score / that device's best score; the max-min pick is
    :func:`workbench.core.domain.portability.max_min_pick` (ties: higher mean, then the first device's
    evaluation order), the same rule ``show --portability`` reports.
    """
    devices = [c.device for c in choices]
    best = {c.device: c.score for c in choices}
    fractions = [{cid: s / best[d] for cid, (s, _) in scores[d].items()} for d in devices]
    order = sorted(scores[devices[0]], key=lambda cid: scores[devices[0]][cid][1])
    picked = max_min_pick(fractions, order)
    if picked is None:
        return None
    best_id, worst, mean = picked
    row = scores[devices[0]][best_id][1]
    trial, label = groups[devices[0]][row]
    per = ", ".join(f"{d} {fractions[i][best_id]:.3f}" for i, d in enumerate(devices))
    # how many it was chosen from: sessions that measured few configs in common (short runs, or
    # replays whose recordings hold far more) leave few, and a poor pick says why
    common = len(set.intersection(*(set(f) for f in fractions)))
    why = (f"feasible on all {len(devices)} devices with the best worst case {worst:.3f} of each device's "
           f"optimum (mean {mean:.3f}; {per}), of {counted(common, 'config')} measured feasible on every device")
    return Choice("portable", trial, worst, why, label, tuple(devices), common)


# ------------------------------------------------------------------------------------------------
# Formats
# ------------------------------------------------------------------------------------------------


def export_text(plan: ExportPlan, fmt: str) -> str:
    """The export in format ``fmt`` (one of :data:`FORMATS`) as text, sealed
    (:mod:`workbench.core.io.export_seal`: a later export can tell whether it was edited)."""
    if fmt not in FORMATS:
        raise WorkbenchError(f"unknown export format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    if fmt == "header" and plan.template is None and plan.kind == "template":
        # the template reads its problem as PROBLEM_* macros, which only the template can name: a
        # header of the slots alone does not compile against it
        if plan.unloaded_dirs:
            raise WorkbenchError(template=f"{{format:header}} needs the kernel template {quoted(repr(plan.kernel))} "
                                          f"(its problem macros), which the session took from "
                                          f"{quoted(', '.join(plan.unloaded_dirs))}: a folder a file names is never "
                                          f"loaded unasked; use {{kernel_dir:{quoted(plan.unloaded_dirs[0])}}}")
        raise WorkbenchError(template=f"{{format:header}} needs the kernel template {quoted(repr(plan.kernel))} (its "
                                      "problem macros): none with the session's slots and problem parameters was "
                                      "found; use {format:json}")
    if fmt == "json" and plan.template is None and plan.kind == "template" and plan.unloaded_dirs:
        raise WorkbenchError(template=f"{{format:json}} of {quoted(repr(plan.kernel))} needs its kernel template for "
                                      f"the macros and launch, which the session took from "
                                      f"{quoted(', '.join(plan.unloaded_dirs))}: a folder a file names is never loaded "
                                      f"unasked; use {{kernel_dir:{quoted(plan.unloaded_dirs[0])}}}")
    if fmt in ("cuda", "cupy") and plan.template is None:
        if plan.kind != "python" and plan.unloaded_dirs:  # the template is likely there: say how to load it
            raise WorkbenchError(template=f"{{format:{quoted(fmt)}}} needs the kernel template {quoted(repr(plan.kernel))}, "
                                          f"which the session took from {quoted(', '.join(plan.unloaded_dirs))}: a folder a "
                                          f"file names is never loaded unasked; use {{kernel_dir:{quoted(plan.unloaded_dirs[0])}}}")
        why = ("a python benchmark session has no CUDA source" if plan.kind == "python"
               else f"no kernel template named {plan.kernel!r} with the session's slots and problem parameters was found")
        # (a template's header needs its template too: pointing to it led to a second refusal)
        instead = "{format:json}" if plan.kind == "template" else "{format:header} or {format:json}"
        raise WorkbenchError(template=f"{{format:{quoted(fmt)}}} needs a kernel template: {quoted(why)}; use {instead}")
    _check_configs_fit(plan)
    if fmt == "json":
        return _json(plan)
    text = {"header": _header, "cuda": _cuda, "cupy": _cupy}[fmt](plan)
    return seal_text(text, "#" if fmt == "cupy" else "//")


def _check_configs_fit(plan: ExportPlan) -> None:
    """Refuse, in one line naming the config, an export of one the template no longer takes (a slot's
    values edited since the session was tuned): the CUDA source and the script said only the
    space's complaint, without the config or why, where the header and the JSON named both."""
    if plan.template is None:
        return
    problem = plan.template.resolve_problem(plan.problem)
    space = plan.template.space(problem)
    for choice in [*plan.choices, *([plan.portable] if plan.portable is not None else [])]:
        try:
            space.config(choice.trial.config)
        except SpaceError as exc:
            edited = ("; the template changed since the session was tuned"
                      if plan.source_hash and not plan.template.is_code_of(plan.source_hash) else "")
            raise WorkbenchError(f"config {choice.trial.config.id} does not fit the template: {exc}{edited}") from None


def render_export(
    sessions: Sequence[Session],
    fmt: str,
    constraints: Constraints | None = None,
    weights: Weights | None = None,
    *,
    sources: Sequence[str] | None = None,
    templates: Mapping[str, Any] | None = None,
    kernel_dirs: Sequence[str | os.PathLike[str]] = (),
    at: Mapping[str, Any] | None = None,
) -> tuple[ExportPlan, str]:
    """The plan and the exported text, written nowhere (for a pipe; :func:`export_sessions` writes a file)."""
    if fmt not in FORMATS:
        raise WorkbenchError(f"unknown export format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    plan = plan_export(sessions, constraints, weights, sources=sources, templates=templates, kernel_dirs=kernel_dirs,
                       at=at)
    return plan, export_text(plan, fmt)


def replace_rule(force: bool = False, inputs: Sequence[str | os.PathLike[str]] = ()) -> Callable[[Path], Path | None]:
    """What an export called from a script may write over, as the command line's ``export``: not a
    file a run's journal waits beside, not one of ``inputs`` (the sessions' files) unless ``force``,
    an earlier export (one edited since kept as ``.bak``), and anything else only with ``force``
    (kept as ``.bak``). The check returns the backup it kept, if any."""
    def check(path: Path) -> Path | None:
        refuse_beside_journal(path, "out", "tune --resume recovers them first")
        return prepare_output(path, force=force, inputs=inputs, replaceable=is_export_file, pristine=unchanged_export,
                              what="file exported by this workbench", flag="out", force_flag="force=True")

    return check


def export_sessions(
    sessions: Sequence[Session],
    fmt: str,
    out: str | os.PathLike[str],
    constraints: Constraints | None = None,
    weights: Weights | None = None,
    *,
    sources: Sequence[str] | None = None,
    templates: Mapping[str, Any] | None = None,
    check_output: Callable[[Path], Any] | None = None,
    kernel_dirs: Sequence[str | os.PathLike[str]] = (),
    at: Mapping[str, Any] | None = None,
    force: bool = False,
) -> ExportPlan:
    """Plan, render and write an export atomically (nothing is written when it refuses).

    ``check_output(path)`` runs after the export is rendered and before it is written: the
    caller's rule for what may be replaced (so a bad session is reported before a bad path).
    Without one, the command line's rule (:func:`replace_rule`): a file there is replaced only when
    it is an earlier export, or with ``force`` (kept as ``.bak``). A script calling this wrote over
    whatever the path named, the session it exported included.
    ``kernel_dirs``: template folders the user named (never the sessions' own; see :func:`find_template`).
    """
    path = Path(out)
    if not path.parent.is_dir():
        raise WorkbenchError(f"--out {path}: folder {path.parent} does not exist")
    plan, text = render_export(sessions, fmt, constraints, weights, sources=sources, templates=templates,
                               kernel_dirs=kernel_dirs, at=at)
    (check_output or replace_rule(force, sources or ()))(path)
    try:
        atomic_write(path, lambda handle: handle.write(text))
    except OSError as exc:  # (a full disk, a read-only mount: named by the file asked for, not the temporary one)
        raise write_error(f"{path}: cannot write ({exc.strerror or exc})", exc) from None
    return plan


# --- shared pieces ------------------------------------------------------------------------------


def comment_line(text: Any) -> str:
    """Text made safe for one ``//`` comment line (or a docstring line) of generated source.

    Line breaks collapse to spaces; control and non-ASCII characters become ``?``; a backslash
    becomes ``/`` (a backslash at the end of a line would splice the next line into the comment,
    so a following ``#define`` would vanish) and ``??`` is split (``??/`` is a trigraph for one).
    """
    words = " ".join(str(text)[:4 * MAX_COMMENT_CHARS].split())  # (a file's text may be megabytes)
    safe = "".join(c if " " <= c <= "~" else "?" for c in words).replace("\\", "/")
    while "??" in safe:
        safe = safe.replace("??", "?-?")
    if len(safe) > MAX_COMMENT_CHARS or len(str(text)) > 4 * MAX_COMMENT_CHARS:
        safe = safe[:MAX_COMMENT_CHARS].rstrip() + " ... (cut: longer than a comment line needs)"
    return safe


#: The longest text one comment line of an export carries (a stored reason, a name: from files).
MAX_COMMENT_CHARS = 2000


def _metrics_text(trial: Trial, decided: Sequence[str] = ()) -> str:
    """The chosen trial's usual figures, and those of the metrics that decided the choice
    (``decided``: the weighted and constrained ones)."""
    metrics = trial.measurement.metrics
    estimated = trial.measurement.resources_estimated
    parts = []
    for name in dict.fromkeys([*_QUOTED, *decided]):
        value = metrics.get(name)
        if value is not None and isinstance(value, (int, float)) and math.isfinite(value):
            parts.append(f"{name}={fmt(value)}" + (" (estimated)" if estimated and name in _RESOURCE_METRICS else ""))
    text = ", ".join(parts) or "none reported"
    kt_time = rates_time_apart(metrics)
    if kt_time is not None:  # (4370 GFLOP/s beside 1.462 ms read as 7.5 GFLOP done in 1.728 ms)
        recorded_rates = [name for name in RECORDED_RATES if name in metrics]
        text += (f"; {', '.join(recorded_rates)} as recorded, at Kernel Tuner's time kt_time_ms={fmt(kt_time)} "
                 "(latency_ms is the median of its repetitions)")
    note = estimate_note(trial)
    if note and any(name in metrics for name in _RESOURCE_METRICS):
        text += f"; {note}"
    for extra in (compiler_note(trial), unchecked_quality_note(trial)):
        if extra:
            text += f"; {extra}"
    return text


def compiler_note(trial: Trial) -> str:
    """Whose the register, shared-memory and occupancy figures of a trial of the workbench's own
    backends (the simulator, the CUDA backend: they record the architecture they built for) are:
    the workbench compiles with NVRTC, and another compiler or version (nvcc's ptxas of another
    release) allocates registers differently, 56 for 48. '' for other trials (a recording's figures
    are its tool's), for none, and for an estimate (said apart)."""
    arch = (trial.measurement.details or {}).get("arch")
    if (not is_arch_name(arch) or trial.measurement.resources_estimated
            or not any(m in trial.measurement.metrics for m in _RESOURCE_METRICS)):
        return ""
    return (f"registers, shared memory and occupancy are of the workbench's NVRTC build for {arch}: another "
            "compiler or version can allocate registers differently")


def unchecked_quality_note(trial: Trial) -> str:
    """What an export says beside a simulated trial's quality when nothing compared its outputs
    (what show and tune say of such a run): ``quality=1`` read as outputs checked and found exact."""
    if "quality" not in trial.measurement.metrics or outputs_compared(trial.measurement.details or {}):
        return ""
    return ("quality is not a comparison of outputs: the simulator ran no kernel and has no emulation of this "
            "one's arithmetic, so a config writing wrong values would succeed; a run on a GPU checks them")


def estimate_note(trial: Trial) -> str:
    """Where a simulated trial's estimated resource figures came from, and whether they can still
    change ('' when they are a compile's): what an export must say beside figures that are not facts."""
    details = trial.measurement.details or {}
    if not trial.measurement.resources_estimated:
        return ""
    arch = details.get("estimated_from")
    source = (f"the {arch} table's figures for this config"
              if is_arch_name(arch) else "the template's work profile")
    if trial.measurement.resources_pending:
        return (f"resource figures estimated from {source} while its compile was pending: refining the session "
                "(tune --resume --out SESSION --refine-only) can change them, and the pick")
    reason = details.get("estimate_reason")
    if isinstance(reason, str) and reason:
        return f"resource figures estimated from {source} (no compile: {reason[:200]})"
    return f"resource figures estimated from {source} (no compiler ran)"


def objective_comment(plan: ExportPlan) -> tuple[str, str]:
    """The constraints and the weights as comment text (:func:`objective_text`)."""
    return objective_text(plan.constraints, plan.weights)


def _c_value(value: Any, name: str) -> str:
    """A C literal: numbers and bools as the template renderer writes them, text as a C string.

    Text is escaped character by character (printable ASCII as is, the rest as octal escapes), so
    no value can end the string, the line or the ``#define``.
    """
    if isinstance(value, str):
        return '"' + c_string_body(value) + '"'
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**64:
        raise WorkbenchError(f"slot {name}: {value} does not fit a 64-bit C integer")
    return c_literal(value, name)


#: Names no header may #define: the preprocessor's operator, and C/C++ keywords a recording's
#: parameter could be named (a macro named ``int`` compiles and breaks every line after it).


def _macro(name: str, upper: bool = True) -> str:
    """A C identifier for ``name``: other characters become ``_``, upper-cased unless ``upper`` is
    False (a recording's parameter names, which are already the kernel's identifiers: one with
    letters beyond ASCII, ``blöck``, is kept as it is, as nvcc and C++ take it; renamed, the kernel
    that reads it found it undefined)."""
    if not upper and name.isidentifier() and name.isprintable():
        return name
    macro = re.sub(r"[^A-Za-z0-9_]", "_", name)
    macro = macro.upper() if upper else macro
    return "_" + macro if macro[:1].isdigit() or not macro else macro


def slot_defines(plan: ExportPlan, config: Config) -> list[str]:
    """``#define`` lines of the config's slots, named as the template renders them.

    Without a template: upper-cased slot names, or for a Kernel Tuner recording the names as
    recorded (``plan.names_as_recorded``: the kernel reads ``block_size_x``, not ``BLOCK_SIZE_X``);
    identifier values get one constant per domain value (as templates do, named
    ``<slot>_<value>`` in the same case rule), except in a recording, whose kernel Kernel Tuner
    compiled with the value itself (``#define precision float``); other text becomes a string literal. Upper-casing can
    give two names one macro (values ``fast`` and ``FAST``, or slot ``a`` value ``b`` and slot ``a_b``): a header
    defining a macro twice would name the wrong config, so that refuses in one line, as a template
    with such names is refused when it loads.
    """
    if plan.template is not None:
        problem = plan.template.resolve_problem(plan.problem)
        try:  # a value outside the template's domain never becomes a #define
            config = plan.template.space(problem).config(config)
        except SpaceError as exc:
            raise WorkbenchError(f"config {config.id} does not fit the template: {exc}") from None
        defines = plan.template.defines(config, problem)
        return defines[: len(defines) - len(problem)]  # the problem's lines come last
    lines: list[str] = []
    seen: dict[str, str] = {}

    def claim(macro: str, owner: str) -> None:
        if reserved_macro(macro) or export_macro(macro):
            raise WorkbenchError(f"{owner} would define {macro}, a name a header cannot define (the preprocessor's, "
                                 "the compiler's or this header's own); rename it to export a header")
        other = seen.setdefault(macro, owner)
        if other != owner:
            raise WorkbenchError(f"{other} and {owner} would both define {macro}; rename one to export a header")

    upper = not plan.names_as_recorded
    for name, value in config.items():
        macro = _macro(name, upper)
        claim(macro, f"slot {name!r}")
        domain = plan.slot_domains.get(name) or [value]
        if value not in domain:
            raise WorkbenchError(f"config {config.id}: {name}={value!r} is outside the slot's domain")
        if isinstance(value, str) and not upper and value.isidentifier():  # every text value a recording holds
            lines.append(f"#define {macro} {value}")  # as Kernel Tuner compiled it: `#define precision float`
        elif isinstance(value, str) and all(isinstance(v, str) and _C_IDENTIFIER.match(v) for v in domain):
            for index, choice in enumerate(domain):
                constant = f"{macro}_{choice.upper() if upper else choice}"
                claim(constant, f"slot {name!r} value {choice!r}")
                lines.append(f"#define {constant} {index}")
            lines.append(f"#define {macro} {domain.index(value)}")
        else:
            lines.append(f"#define {macro} {_c_value(recorded_value(plan.recorded_integers, name, value), macro)}")
    return lines


def problem_defines(plan: ExportPlan) -> list[str]:
    """``#define PROBLEM_*`` lines of the tuned problem (template sessions only; config-independent)."""
    if plan.template is None:
        return []
    problem = plan.template.resolve_problem(plan.problem)
    lines = plan.template.defines(plan.choices[0].trial.config, problem)
    return lines[len(lines) - len(problem):]


def launch_geometry(plan: ExportPlan, config: Config) -> dict[str, Any]:
    """Grid, block and dynamic shared memory of a config (template sessions)."""
    template = plan.template
    problem = template.resolve_problem(plan.problem)
    return {
        "grid": [int(v) for v in template.grid(problem, config)],
        "block": [int(v) for v in template.block(problem, config)],
        "dynamic_smem_bytes": int(template.dynamic_smem(problem, config)),
    }


#: Bytes of shared memory a launch gets without opting in (``cudaFuncSetAttribute``).
DEFAULT_SHARED_PER_LAUNCH = 48 * 1024


def shared_memory_note(plan: ExportPlan, choice: Choice) -> str | None:
    """What a build must call before launching ``choice``'s config, when its dynamic shared memory
    with the static (as compiled, when the trial recorded it) is over the 48 KiB a launch gets by
    default: the workbench opted in when it measured the config, and a launch that does not is
    refused by CUDA. None when nothing is needed."""
    if plan.template is None:
        return None
    dynamic = launch_geometry(plan, choice.trial.config)["dynamic_smem_bytes"]
    if dynamic <= 0:
        return None
    # the static figure: a GPU run records the compile's (static alone), the simulator static +
    # dynamic (docs/simulator.md); of a replay or an import it is not known which, so none is counted
    # (the note then rests on the dynamic bytes alone: never said where it is not needed)
    recorded = choice.trial.metric("smem_bytes")
    origin = plan.device_provenance.get(choice.device, plan.provenance)
    static = 0
    if math.isfinite(recorded) and origin == "measured":
        static = int(recorded)
    elif math.isfinite(recorded) and origin == "simulated":
        static = max(0, int(recorded) - dynamic)
    if static + dynamic <= DEFAULT_SHARED_PER_LAUNCH:
        return None
    entry = plan.template.entry
    return (f"{dynamic} bytes of dynamic shared memory{f' with {static} static' if static else ''} is over the "
            f"48 KiB a launch gets by default: call cudaFuncSetAttribute({entry}, "
            f"cudaFuncAttributeMaxDynamicSharedMemorySize, {dynamic}) once before launching (the workbench's runs "
            "on a GPU do; without it the launch fails)")


def target_macro(device: str) -> str:
    """The macro a build defines to select one device's config, e.g. ``WORKBENCH_TARGET_NVIDIA_H200``.

    A name with no ASCII letter or digit (``!!!``, a name in another script) would leave the
    bare prefix; it gets ``DEVICE_`` and the first 8 hex digits of its name's SHA-256 instead, the
    same on every export, so a build flag keeps selecting the same device.
    """
    core = re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9]", "_", device).upper()).strip("_")
    if not core:
        core = "DEVICE_" + hashlib.sha256(device.encode("utf-8", "surrogatepass")).hexdigest()[:8].upper()
    return TARGET_PREFIX + core


def _front_notes(sessions: Sequence[Session], labels: Sequence[str], measured: Sequence[Sequence[Trial]],
                 constraints: Constraints, weights: Weights, several_devices: bool) -> list[str]:
    """For sessions that searched a Pareto front: of which metrics, and how many feasible points
    are on it on each device they measured (counted over their own exported trials, ``measured``
    by position, as ``show`` counts them; ``several_devices``: the export has more than one, so
    each count names its device). An export writes what the score weights rank first,
    which is not what that search looked for; the reader of the file should know a trade-off was
    left out."""
    from workbench.core.domain.search_objective import Objective

    searched: dict[tuple[str, ...], list[int]] = {}
    for position, session in enumerate(sessions):
        stored = session.strategy.get("objectives") if isinstance(session.strategy, dict) else None
        if stored and len(stored) >= 2:
            searched.setdefault(tuple(stored), []).append(position)
    notes = []
    for objectives, searchers in searched.items():
        try:
            objective = Objective(constraints, weights, objectives)
        except WorkbenchError:  # an objective without a known direction: there is no front to count
            continue
        by_device: dict[str, list[Trial]] = {}
        for position in searchers:
            for trial in measured[position]:
                by_device.setdefault(device_of(sessions[position], trial), []).append(trial)
        counts = {device: len(objective.pareto(trials)) for device, trials in sorted(by_device.items())}
        # an export of several devices says which one each count is of
        on = "; ".join(f"{n} on {device}" if several_devices else str(n) for device, n in counts.items())
        who = "the session" if len(sessions) == 1 else ", ".join(labels[position] for position in searchers)
        notes.append(f"{who} searched the Pareto front of {', '.join(objectives)} (feasible configs on it: "
                     f"{on or 0}; show under the same constraints lists them); this export holds what the score "
                     "weights rank first")
    return notes


def _deciding_metrics(plan: ExportPlan) -> list[str]:
    return [*plan.weights.active(), *(b.metric for b in plan.constraints.bounds())]


def _choice_comments(plan: ExportPlan, choice: Choice, prefix: str = "// ") -> list[str]:
    lines = [
        f"{prefix}config {choice.trial.config.id}: {comment_line(choice.trial.config.to_dict())}",
        f"{prefix}from {comment_line(choice.session)}, trial {choice.trial.index}",
        f"{prefix}metrics: {comment_line(_metrics_text(choice.trial, _deciding_metrics(plan)))}",
        f"{prefix}why: {comment_line(choice.why)}",
    ]
    return lines


def sessions_provenance(sessions: Sequence[Session]) -> Provenance:
    """Where the timings of ``sessions`` come from, taken together: the least measured of them."""
    return least_measured(provenance(s.device) for s in sessions)


def provenance_label(kind: Provenance) -> str:
    """`` (SIMULATED timings: ...)`` and its kin after an export's devices line; nothing for measurements."""
    return f" ({PROVENANCE_NOTES[kind]})" if PROVENANCE_NOTES[kind] else ""


def devices_line(plan: ExportPlan) -> str:
    """The devices an export's picks are for, and where their timings come from: one note when
    every device's come from the same place, else each device tagged and every note said."""
    devices = [c.device for c in plan.choices]
    kinds = {plan.device_provenance.get(d, plan.provenance) for d in devices}
    if len(kinds) <= 1:
        return ", ".join(devices) + provenance_label(plan.provenance)
    tagged = ", ".join(d + provenance_tag(plan.device_provenance.get(d, plan.provenance)) for d in devices)
    notes = "; ".join(PROVENANCE_NOTES[k] for k in PROVENANCE_ORDER if k in kinds and PROVENANCE_NOTES[k])
    return f"{tagged} ({notes})"


def _preamble(plan: ExportPlan, prefix: str = "// ") -> list[str]:
    bounds, weights = objective_comment(plan)
    lines = [
        f"{prefix}{comment_line(plan.kernel)}: tuned config {EXPORT_MARKER}",
        f"{prefix}sessions: {comment_line('; '.join(plan.sessions))}",
        f"{prefix}devices: {comment_line(devices_line(plan))}",
        f"{prefix}problem: {comment_line(plan.problem) if plan.problem else 'none'}",
        f"{prefix}constraints: {comment_line(bounds)}",
        f"{prefix}score weights: {comment_line(weights)}",
    ]
    if plan.template is not None:
        lines.append(f"{prefix}template source hash: {comment_line(plan.template.source_hash())}")
    lines += [f"{prefix}note: {comment_line(n)}" for n in plan.notes]
    return lines


# --- header -------------------------------------------------------------------------------------


def _launch_comments(plan: ExportPlan, choice: Choice) -> list[str]:
    """A header's launch of ``choice``'s config (template sessions): its geometry is the config's
    own, and a build that took the portable config's launch for a device's macros ran a block of
    another size against code written for its own."""
    if plan.template is None:
        return []
    geometry = launch_geometry(plan, choice.trial.config)
    grid, block, smem = geometry["grid"], geometry["block"], geometry["dynamic_smem_bytes"]
    lines = [f"// launch: {comment_line(plan.template.entry)}<<<dim3({grid[0]}, {grid[1]}, {grid[2]}), "
             f"dim3({block[0]}, {block[1]}, {block[2]}), {smem}>>>(...)"]
    opt_in = shared_memory_note(plan, choice)
    return lines + ([f"// {comment_line(opt_in)}"] if opt_in else [])


def _unfinished_size_notes(sessions: Sequence[Session], labels: Sequence[str], problem: Mapping[str, Any]) -> list[str]:
    """What each sweep of ``sessions`` lacks at the size exported, said as ``show`` and a dispatch
    say it: the recommendation of a size killed three evaluations in was exported as any other."""
    from workbench.core.domain.sizes import sweep_progress

    notes = []
    key = problem_key(problem)
    for session, label in zip(sessions, labels):
        progress = sweep_progress(session)
        if progress is None:
            continue
        for size, count in progress.unfinished:
            if problem_key(size) == key:
                notes.append(f"{label}: this size has {count} of the {progress.plan.budget} evaluations its sweep "
                             f"plans (unfinished: tune --resume continues it), so a config not measured yet may win")
    return notes


def include_guard(prefix: str, kernel: str) -> str:
    """``PREFIX_CONV_2D_1F2E3D4C_H``: the kernel's name as a macro, then the first 8 hex digits of
    the SHA-256 of its exact name. The name alone gave two kernels one guard (``conv-2d`` and
    ``conv_2d``, ``k`` and ``K``, any two names in another script), and a program including both
    headers silently skipped the second, whose macros then read as 0 in an ``#if``. One underscore
    between words: a name with two in a row is reserved to the implementation."""
    core = re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9]", "_", kernel).upper()).strip("_") or "KERNEL"
    return f"{prefix}{core}_{hashlib.sha256(kernel.encode('utf-8', 'surrogatepass')).hexdigest()[:8].upper()}_H"


def measured_sizes_text(measured: Sequence[Mapping[str, Any]], shown: int = 6) -> str:
    """The sizes a session measured, smallest first: ``rows=256, 1024, 4096 (cols=4096)`` when one
    parameter varies, else each size in full (``m=512, n=512; m=1024, n=512``); past ``shown``
    sizes, how many more. They were listed in the order they were first measured, which a size
    added to a sweep later put last."""
    names = list(dict.fromkeys(name for problem in measured for name in problem))
    ordered = sorted(measured, key=lambda p: size_order_key(p, names))
    more = f" and {len(ordered) - shown} more" if len(ordered) > shown else ""
    varying = telling_parameters(ordered)
    if len(varying) == 1:
        (name,) = varying
        fixed = size_label({k: v for k, v in ordered[0].items() if k != name}, ())
        values = ", ".join(size_value_text(p[name]) for p in ordered[:shown])
        return f"{name}={values}{more}" + (f" ({fixed})" if fixed else "")
    return "; ".join(size_label(p, ()) for p in ordered[:shown]) + more


def _header(plan: ExportPlan) -> str:
    guard = include_guard("WORKBENCH_TUNED_", plan.kernel)
    out = [f"#ifndef {guard}", f"#define {guard}", ""]
    out += _preamble(plan)
    if len(plan.choices) == 1:
        choice = plan.choices[0]
        out += [f"// device: {comment_line(choice.device)}", *_choice_comments(plan, choice)]
        out += _launch_comments(plan, choice)
        out += slot_defines(plan, choice.trial.config)
    else:
        out.append("// Define one of these to select a device's own config; otherwise the portable config applies:")
        out += [f"//   -D{target_macro(c.device)}  ({comment_line(c.device)})" for c in plan.choices]
        # two defined would take the first branch below and say nothing: a build for one GPU got
        # another's config (a flag left in a shared makefile); refused at compile time instead
        out.append("#if (0 \\")
        out += [f"     + defined({target_macro(c.device)}) \\" for c in plan.choices]
        out += ["     ) > 1",
                f'#error "{_macro(plan.kernel)}: more than one {TARGET_PREFIX}* macro is defined; define one"',
                "#endif"]
        keyword = "#if"
        for choice in plan.choices:
            out.append(f"{keyword} defined({target_macro(choice.device)})")
            out += [f"// device: {comment_line(choice.device)}", *_choice_comments(plan, choice)]
            out += _launch_comments(plan, choice)
            out += slot_defines(plan, choice.trial.config)
            keyword = "#elif"
        out.append("#else")
        if plan.portable is None:
            out.append("// no config is feasible on every tuned device: choose a device above")
            out.append(f'#error "{_macro(plan.kernel)}: no portable tuned config; define one of the {TARGET_PREFIX}* macros"')
        else:
            out.append(f"// portable config (best worst-case fraction of optimum over {len(plan.choices)} devices)")
            out += _choice_comments(plan, plan.portable)
            out += _launch_comments(plan, plan.portable)
            out += slot_defines(plan, plan.portable.trial.config)
        out.append("#endif")
    problem = problem_defines(plan)
    if problem:
        out += ["", "// the problem the config was tuned for (the template reads these)", *problem]
    if plan.template is not None and plan.template.compile_options:  # measured so: compile it the same way
        out += ["", f"// compile the template with the options it was tuned with: "
                    f"{comment_line(' '.join(plan.template.compile_options))}"]
    out += _one_config_per_unit(plan, guard, out[3:])
    out += [f"#endif  // {guard}", ""]
    return "\n".join(out)


def _one_config_per_unit(plan: ExportPlan, guard: str, body: Sequence[str]) -> list[str]:
    """The lines that make a second header of the same kernel with other directives (another
    config, problem or device) an error where both are included: the guard, which is the
    kernel's, skipped the second and the first one's values were compiled without a word. The
    digest is of the directives alone, so exports that differ only in their comments (another
    session's name, a date) still include together."""
    directives = "\n".join(line for line in body if line.startswith("#"))
    digest = hashlib.sha256(directives.encode("utf-8", "surrogatepass")).hexdigest()[:8].upper()
    config = f"{guard[:-len('_H')]}_DIRECTIVES"
    return ["", f"#define {config} 0x{digest}",
            f"#elif {config} != 0x{digest}",
            f'#error "{_macro(plan.kernel)}: two exported headers of this kernel that differ (config, problem or device) are '
            'included in one translation unit; include one"']


# --- cuda ---------------------------------------------------------------------------------------


def _cuda(plan: ExportPlan) -> str:
    choice = plan.recommended
    config = choice.trial.config
    template = plan.template
    geometry = launch_geometry(plan, config)
    grid, block, smem = geometry["grid"], geometry["block"], geometry["dynamic_smem_bytes"]
    problem = template.resolve_problem(plan.problem)
    head = _preamble(plan)
    head += _choice_comments(plan, choice)
    # every text a spec gave goes through comment_line: the loaders refuse line breaks in names and
    # options, and an export is the last place where one would become code
    head.append(f'// entry: extern "C" __global__ {comment_line(template.entry)}(...)')
    head.append(f"// launch: {comment_line(template.entry)}<<<dim3({grid[0]}, {grid[1]}, {grid[2]}), "
                f"dim3({block[0]}, {block[1]}, {block[2]}), {smem}>>>(...)")
    opt_in = shared_memory_note(plan, choice)
    if opt_in:
        head.append(f"// {comment_line(opt_in)}")
    head.append("// arguments, in order:")
    for arg in template.args:
        if arg.name in template.constants:
            continue
        if arg.kind == "scalar":
            value = arg.value(problem) if arg.value else problem[arg.name]
            head.append(f"//   {comment_line(arg.name)}: scalar {comment_line(arg.dtype)} = {comment_line(repr(value))}")
        else:
            shape = tuple(int(v) for v in arg.shape(problem))
            reset = {"zero": " (zero it before every launch)", "poison": ""}.get(arg.reset, "")
            head.append(f"//   {comment_line(arg.name)}: {comment_line(arg.kind)} {comment_line(arg.dtype)} array of shape "
                        f"{shape}{reset}")
    for name in template.constants:
        head.append(f"//   (__constant__ {comment_line(name)}: copied to the module's symbol before launching)")
    if template.compile_options:
        head.append(f"// compile options: {comment_line(' '.join(template.compile_options))}")
        # their macros written out, in order and as written: the file is to compile on its own, and
        # a source reading a -D macro did not ("identifier SCALE is undefined"); other options are
        # the compiler's to be given (the loaders refuse a line break in an option)
        from workbench.core.domain.includes import macro_options

        for name, value in macro_options(template.compile_options):
            if "\n" in name + (value or "") or "\r" in name + (value or ""):
                continue
            head.append(f"#undef {name}" if value is None else f"#define {name} {value}".rstrip())
    headers = _own_headers(template)
    if headers:
        head.append(f"// includes headers of the template's folder ({comment_line(str(Path(template.source_path).parent))}): "
                    f"{comment_line(', '.join(h.as_posix() for h in headers))}; keep them beside this file")
    return "\n".join(head) + "\n" + template.render(config, problem, line_directive=False)


def _own_headers(template: Any) -> list[Path]:
    """The headers the template's source includes from its own folder (none when it has no folder,
    or when they cannot be resolved now: the export says nothing rather than something wrong)."""
    if not template.source_path or not template.include_options:
        return []
    from workbench.core.model.template_headers import own_headers

    try:
        return own_headers(template.source, Path(template.source_path).parent, template.compile_options)
    except (WorkbenchError, OSError, ValueError):
        return []


# --- json ---------------------------------------------------------------------------------------


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, np.generic):
        return _finite(value.item())
    return value


def _recorded_config(plan: ExportPlan, config: Config) -> dict[str, Any]:
    """The config's values as a recording held them (its integers as integers: see
    :func:`recorded_value`), else as the session holds them."""
    return {name: recorded_value(plan.recorded_integers, name, value) for name, value in config.to_dict().items()}


def _choice_dict(plan: ExportPlan, choice: Choice, origin: Provenance) -> dict[str, Any]:
    return {
        "device": choice.device,
        "provenance": origin,
        "config": _recorded_config(plan, choice.trial.config),
        "config_id": choice.trial.config.id,
        "metrics": {k: _finite(v) for k, v in choice.trial.measurement.metrics.items()},
        "score": _finite(choice.score),
        "why": choice.why,
        "session": choice.session,
        "trial": choice.trial.index,
    }


def _json(plan: ExportPlan) -> str:
    single = plan.recommended  # several devices with no config feasible on all: refused, as cuda and cupy
    doc: dict[str, Any] = {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "kernel": plan.kernel,
        "kind": plan.kind,
        "problem": dict(plan.problem),
        "constraints": plan.constraints.to_dict(),
        "weights": plan.weights.to_dict(),
        "directions": plan.weights.directions_dict(),  # the person's, for metrics the workbench does not know
        "simulated": plan.provenance == "simulated",
        "provenance": plan.provenance,  # simulated, replayed, recorded or measured
        "template_hash": plan.template.source_hash() if plan.template is not None else None,
        "session_source_hash": plan.source_hash,
        "sessions": list(plan.sessions),
        "device": single.device if len(plan.choices) == 1 else "portable",
        "config": _recorded_config(plan, single.trial.config),
        "config_id": single.trial.config.id,
        "metrics": {k: _finite(v) for k, v in single.trial.measurement.metrics.items()},
        # whose figures ``metrics`` are: with several devices, those of the first device's trial of the
        # portable config (each device's own are in ``devices``)
        "metrics_device": single.devices[0] if single.devices else single.device,
        "score": _finite(single.score),
        "why": single.why,
        "devices": [_choice_dict(plan, c, plan.device_provenance.get(c.device, plan.provenance)) for c in plan.choices],
        "notes": list(plan.notes),
        # what a build of the template needs: null without a template (a recording, a python
        # benchmark), so a script reads the same keys from every export (they were left out)
        "macros": None,
        "launch": None,
        "compile_options": None,
    }
    for entry in doc["devices"]:
        entry.update(macros=None, launch=None)
    for choice in plan.choices:
        for note in (estimate_note(choice.trial), compiler_note(choice.trial), unchecked_quality_note(choice.trial)):
            if note:
                doc["notes"].append(f"{choice.device}: {note}" if len(plan.choices) > 1 else note)
    if plan.template is not None:
        # every define a build of the template needs: the slots', then the problem's (the header's)
        doc["macros"] = slot_defines(plan, single.trial.config) + problem_defines(plan)
        doc["launch"] = launch_geometry(plan, single.trial.config)
        doc["compile_options"] = list(plan.template.compile_options)
        opt_in = shared_memory_note(plan, single)
        if opt_in:
            doc["notes"].append(opt_in)
        # each device's own config launches as it was measured, not as the portable one (one
        # device's is the top level's: there too, so one loop over the devices reads every export)
        for entry, choice in zip(doc["devices"], plan.choices):
            entry["macros"] = slot_defines(plan, choice.trial.config) + problem_defines(plan)
            entry["launch"] = launch_geometry(plan, choice.trial.config)
            if len(plan.choices) > 1:
                opt_in = shared_memory_note(plan, choice)
                if opt_in:
                    doc["notes"].append(f"{choice.device}: {opt_in}")
    elif plan.kind == "template":
        doc["notes"].append(f"no kernel template named {plan.kernel!r} with the session's slots and problem "
                            "parameters was found: macros, launch and compile options are null")
    return seal_json(doc, indent=2, allow_nan=False, default=_finite)


# --- cupy ---------------------------------------------------------------------------------------

#: Markers in :mod:`workbench.core.io.cupy_script` between which the export takes its parts.
_SCRIPT_MARKERS = ("# --- imports ---", "# --- constants", "# --- body ---")


def _script_parts() -> tuple[str, dict[str, str], str]:
    """(imports, the constants' annotations by name, body) of :mod:`workbench.core.io.cupy_script`,
    read as text: exporting imports nothing."""
    text = resources.files("workbench.core.io").joinpath("cupy_script.py").read_text(encoding="utf-8")
    imports, constants, body = (text.index(marker) for marker in _SCRIPT_MARKERS)
    annotations = dict(re.findall(r"^([A-Z_]+): (.+?) = ", text[constants:body], flags=re.MULTILINE))
    return (text[text.index("\n", imports) + 1:constants].strip() + "\n", annotations,
            text[text.index("\n", body) + 1:])


def _py_text(text: str) -> str:
    """A triple-quoted Python literal for ``text`` that reads like the source it holds; a control
    character other than a line break or a tab (a NUL: Python refuses a source with one) is
    written as its escape."""
    body = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    body = re.sub(r"[\x00-\x08\x0b-\x1f\x7f]", lambda m: f"\\x{ord(m.group()):02x}", body)
    if body.endswith('"'):  # a quote right before the closing quotes would end the literal early
        body = body[:-1] + '\\"'
    return '"""\\\n' + body + '"""'


#: The CuPy script's first lines, before the preamble (:func:`is_export_file` recognises them).
_CUPY_INTRO = (
    "#!/usr/bin/env python3",
    '"""Compile, launch, check and time a tuned kernel with CuPy (needs a CUDA GPU and CuPy).',
    "",
    "The input factory and the float64 reference are Python functions of the template spec, so this",
    "script imports the workbench package to get them (run it where `workbench` is importable); the",
    "kernel itself is the exported, rendered source below, compiled and loaded as the workbench's CUDA",
    "backend did while tuning (its NVRTC, a CUBIN for this GPU, registers capped so the block fits).",
    "",
)
#: The CuPy script's first lines as versions before 2026-12-04 wrote them: recognised too, so a
#: script exported by an earlier version is replaced as an earlier export (kept as ``.bak``), not
#: refused as a file this program did not write.
_EARLIER_CUPY_INTROS = (
    (*_CUPY_INTRO[:5], "kernel itself is the exported, rendered source below, compiled by CuPy's RawModule (NVRTC).", ""),
)


def _cupy(plan: ExportPlan) -> str:
    choice = plan.recommended
    config = choice.trial.config
    template = plan.template
    problem = template.resolve_problem(plan.problem)
    geometry = launch_geometry(plan, config)
    latency = choice.trial.metric(LATENCY)
    # the portable pick's trial is its measurement on the first device (see _portable)
    recorded_device = plan.choices[0].device
    imports, annotations, body = _script_parts()
    doc = "\n".join(line[3:] if line.startswith("// ") else line for line in _preamble(plan)
                    + _choice_comments(plan, choice))
    constants = {
        "KERNEL": repr(plan.kernel),
        "KERNEL_DIRS": repr(list(plan.kernel_dirs)),
        "TEMPLATE_HASH": repr(template.source_hash()),
        "PROBLEM": repr(dict(problem)),
        "SEED": repr(plan.seed),
        "CONFIG": repr(config.to_dict()),
        "CONFIG_ID": repr(config.id),
        "ENTRY": repr(template.entry),
        "GRID": repr(tuple(geometry["grid"])),
        "BLOCK": repr(tuple(geometry["block"])),
        "SMEM": repr(geometry["dynamic_smem_bytes"]),
        "OPTIONS": repr(tuple(template.compile_options)),
        "REPEATS": "50",
        "RECORDED_LATENCY_MS": repr(latency if math.isfinite(latency) else None),
        # tagged as the export's devices line is ([SIMULATED], [replayed]...): the figure was printed
        # as "exported measurement" beside the script's own, also when a model predicted it
        "RECORDED_DEVICE": repr(recorded_device + provenance_tag(plan.device_provenance.get(recorded_device,
                                                                                           plan.provenance))),
        "SOURCE": _py_text(template.render(config, problem, line_directive=False)),
    }
    lines = [
        *_CUPY_INTRO,
        doc.replace("\\", "\\\\").replace('"""', "'''"),
        '"""',
        "",
        imports,
        # each with the script module's own annotation: a project's type check of the script
        # failed on "KERNEL_DIRS = []" (mypy: need type annotation)
        *(f"{name}: {annotations[name]} = {value}" for name, value in constants.items()),
    ]
    return "\n".join(lines) + "\n" + body


__all__ = [
    "Choice",
    "ExportPlan",
    "FORMATS",
    "SUFFIXES",
    "TARGET_PREFIX",
    "export_sessions",
    "export_text",
    "find_template",
    "launch_geometry",
    "plan_export",
    "problem_defines",
    "render_export",
    "slot_defines",
    "target_macro",
]


#: How much of a text file is read to recognise an export (its leading comment lines).
_HEAD_BYTES = 65536
#: A JSON export is a few KB per device; a bigger file is not parsed to find out whether it is one.
_JSON_LIMIT = 16 * 2**20
#: The lines of a preamble after its first ("<prefix><kernel>: <kind> exported by ..."), in order:
#: each starts with the comment prefix and these words (an export's, then a dispatch's).
_EXPORT_FIELDS = ("sessions: ", "devices: ", "problem: ", "constraints: ", "score weights: ")
_DISPATCH_FIELDS = ("sessions: ", "device: ", "size parameter: ", "tolerance ")
#: The dispatch script's docstring line after its first comment (written by ``workbench.core.io.dispatch``).
_DISPATCH_PY_DOC = '"""Pick a tuned config by problem size (the decision list of the C header, as data).'
_GUARD = re.compile(r"#ifndef (WORKBENCH_(?:TUNED|DISPATCH)_[A-Za-z0-9_]+_H)\Z")


def is_export_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a file an export wrote, so a later export may replace it without ``--force``.

    Recognised by structure, never by the marker text anywhere: a session or a Kernel Tuner cache
    may hold it in a kernel name, a user's source may quote an export's comment. A JSON export is
    a top-level object whose ``format`` is ``kernel-workbench-export`` (a session's is its own);
    a text export begins with the comment lines its format writes, in that exact form: the
    header's and the dispatch header's include guard and preamble, the ``.cu`` file's preamble on
    its first line, the CuPy script's shebang and docstring, the dispatch script's first comment
    and docstring.
    """
    try:
        with open(path, "rb") as handle:
            head = handle.read(_HEAD_BYTES)
            if head.lstrip()[:1] == b"{":
                if os.fstat(handle.fileno()).st_size > _JSON_LIMIT:
                    return False
                head += handle.read()
    except OSError:
        return False
    if head.lstrip()[:1] == b"{":
        return _is_json_export(head)
    lines = head.decode("utf-8", "replace").splitlines()
    guard = _GUARD.match(lines[0]) if lines else None
    if guard is not None:  # header or dispatch header
        fixed = lines[1:3] == [f"#define {guard.group(1)}", ""]
        tuned = guard.group(1).startswith("WORKBENCH_TUNED_")
        return fixed and _preamble_at(lines, 3, "// ", "tuned config" if tuned else "per-size dispatch",
                                      _EXPORT_FIELDS if tuned else _DISPATCH_FIELDS)
    if _preamble_at(lines, 0, "// ", "tuned config", _EXPORT_FIELDS):  # .cu
        return True
    for intro in (_CUPY_INTRO, *_EARLIER_CUPY_INTROS):  # CuPy script
        if lines[: len(intro)] == list(intro):
            return _preamble_at(lines, len(intro), "", "tuned config", _EXPORT_FIELDS)
    kernel = _preamble_at(lines, 0, "# ", "per-size dispatch", ())  # dispatch script
    return (kernel and lines[1:3] == [_DISPATCH_PY_DOC, ""]
            and _preamble_at(lines, 3, "", "per-size dispatch", _DISPATCH_FIELDS))


def _is_json_export(data: bytes) -> bool:
    try:
        doc = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return False
    return isinstance(doc, dict) and doc.get("format") == EXPORT_FORMAT


def _preamble_at(lines: list[str], start: int, prefix: str, kind: str, fields: Sequence[str]) -> bool:
    """Whether ``lines[start:]`` begin with an export's preamble as the writers write it."""
    if len(lines) < start + 1 + len(fields):
        return False
    first = lines[start]
    ending = f": {kind} {EXPORT_MARKER}"
    if not (first.startswith(prefix) and first.endswith(ending) and len(first) > len(prefix) + len(ending)):
        return False
    return all(lines[start + 1 + i].startswith(prefix + f) for i, f in enumerate(fields))
