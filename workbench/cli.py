"""The headless commands. ``python main.py`` with no subcommand opens the GUI.

Subcommand names and flags are a contract other tools rely on (see ``docs/cli.md``). Every bad
input ends with one line on stderr and a non-zero exit code, never a traceback, and leaves
existing files untouched.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import math
import os
import re
import shlex
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, NoReturn, Sequence

from workbench.backends.base import PACED_BACKENDS
from workbench.core.domain.records import MAX_PACE_S, is_pace, provenance
from workbench.core.domain.assignments import parse_assignment, parse_assignments
from workbench.core.domain.size_analysis import in_plan_order, size_lines
from workbench.core.domain.sizes import parse_sizes, problems_of, typed_like
from workbench.core.errors import INSTALLED_COMMAND, WorkbenchError, counted, printable
from workbench.core.domain.measurement import Status
from workbench.core.model.quality import outputs_compared, unchecked_outputs_note
from workbench.core.fs import atomic_write, silence_hung_up_output
from workbench.search.base import DEFAULT_PARETO_STRATEGY, DEFAULT_STRATEGY, STRATEGIES

#: What --help says of --strategy: every name, the default marked (chosen by benchmark, docs/strategies.md).
STRATEGY_CHOICES = ", ".join(f"{name} (default; {DEFAULT_PARETO_STRATEGY} with --objectives)" if name == DEFAULT_STRATEGY else name
                             for name in sorted(STRATEGIES))

if TYPE_CHECKING:  # imported where used: the CLI starts without loading the session module
    from workbench.core.domain.session import Session
    from workbench.core.domain.measurement import Trial

EXIT_BAD_INPUT = 2
#: Largest seed accepted (seeds feed NumPy generators, which take non-negative integers).
MAX_SEED = 2**63 - 1
#: Longest timeout or time limit accepted (s): a week; anything longer is a typo, not a plan.
MAX_SECONDS = 7 * 24 * 3600.0
STDOUT = "-"  # export --out -: the export on standard output (other commands refuse it)
#: ``tune --resources``: the simulator's compile modes by the name the window shows them under.
RESOURCE_MODES = {"compiled": "nvrtc", "estimated": "estimate"}
DELAY_HELP = ("a demonstration's pace: start a new candidate at most every SECONDS (0 to 60; the simulated GPU "
              "and replays, which otherwise finish a hundred configs in a second)")

#: Default of ``tune --refine-wait`` (s): a first simulated run on a fresh machine ends seconds after
#: its last evaluation instead of waiting minutes for every unrolled kernel's compile.
REFINE_WAIT_S = 5.0
#: Default of ``tune --refine-only --refine-wait`` (s): refining is then all the run does, so it waits
#: long enough for the compiles of a large space (a week is the most that may be given).
REFINE_ONLY_WAIT_S = 600.0


def _check_run_flags(args: argparse.Namespace) -> None:
    """Refuse numbers no run can mean: NaN, infinite or negative limits, absurd seeds and worker counts."""
    seed = getattr(args, "seed", None)
    if seed is not None and not 0 <= seed <= MAX_SEED:
        raise WorkbenchError(f"--seed {seed}: a seed is an integer from 0 to 2**63-1")
    for flag in ("timeout", "compile_timeout", "time_limit"):
        value = getattr(args, flag, None)
        if value is not None and not (math.isfinite(value) and 0 < value <= MAX_SECONDS):
            raise WorkbenchError(f"--{flag.replace('_', '-')} {value}: must be a number of seconds in (0, {MAX_SECONDS:g}]")
    delay = getattr(args, "delay", None)
    if delay is not None and not is_pace(delay):
        raise WorkbenchError(f"--delay {delay}: must be a number of seconds in [0, {MAX_PACE_S:g}]")
    refine_wait = getattr(args, "refine_wait", None)
    if refine_wait is not None and not (math.isfinite(refine_wait) and 0 <= refine_wait <= MAX_SECONDS):
        raise WorkbenchError(f"--refine-wait {refine_wait}: must be a number of seconds in [0, {MAX_SECONDS:g}]")
    # what each limit can be: no kernel takes no time, so a latency limit of 0 is refused as -1 is
    for flag, positive in (("max_latency_ms", True), ("max_memory_mb", False), ("min_quality", False)):
        value = getattr(args, flag, None)
        if value is not None and not (math.isfinite(value) and (value > 0 if positive else value >= 0)):
            raise WorkbenchError(f"--{flag.replace('_', '-')} {value}: must be a finite number "
                                 f"{'> 0' if positive else '>= 0'}")
    if getattr(args, "executor", None) == "inline":
        for flag in ("timeout", "compile_timeout"):
            if getattr(args, flag, None) is not None:
                raise WorkbenchError(f"--{flag.replace('_', '-')} with --executor inline: inline candidates run in "
                                     "this process and cannot be cut off; use --executor local")
    from workbench.runner.executors import check_workers

    check_workers(getattr(args, "workers", None), getattr(args, "executor", "local"), "--workers")


def _add_objective_flags(parser: argparse.ArgumentParser, objectives: bool = True) -> None:
    """The objective flags; ``objectives``: with ``--objectives`` (export picks one config, no front)."""
    parser.add_argument("--max-latency-ms", type=float, help="constraint: latency at most this (ms)")
    parser.add_argument("--max-memory-mb", type=float, help="constraint: device memory at most this (MB)")
    parser.add_argument("--min-quality", type=float, help="constraint: quality at least this (0..1)")
    parser.add_argument("--constraint", action="append", default=[], metavar="METRIC<=VALUE",
                        help="extra constraint on any metric, e.g. 'registers<=64' (repeatable)")
    parser.add_argument("--weight", action="append", default=[], metavar="METRIC=W",
                        help="score weight, e.g. 'latency_ms=1' 'memory_mb=0.2' (repeatable)")
    parser.add_argument("--maximize", action="append", default=[], metavar="METRIC",
                        help="larger values of METRIC are better (for metrics the workbench does not know; repeatable)")
    parser.add_argument("--minimize", action="append", default=[], metavar="METRIC",
                        help="smaller values of METRIC are better (repeatable)")
    if objectives:
        parser.add_argument("--objectives", default=None, metavar="M1,M2",
                            help="search (tune) or report (show) the Pareto front of two or more metrics, e.g. "
                                 "latency_ms,memory_mb; tune --objectives none: one score (a continued session's too)")


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line, as every other refusal is: argparse's own
    prints the whole usage (twenty lines for ``tune``) before the ``error:`` line, burying it. The
    usage stays one ``--help`` away, named on that line."""

    def error(self, message: str) -> NoReturn:
        text = " ".join(message.split()) + self._guess(message)
        command = f"python {self.prog}" if self.prog.split()[0].endswith(".py") else self.prog
        self.exit(EXIT_BAD_INPUT, f"error: {text} ({command} --help)\n")

    def _guess(self, message: str) -> str:
        """``; did you mean ...?`` for a misspelt flag or choice (``--budegt``, ``tnue``): argparse
        names what it refused, and a person looking for the right spelling otherwise reads the
        whole ``--help``. Empty when nothing known is close."""
        choice = re.search(r"invalid choice: '(.*?)' \(choose from (.*)\)", message)
        if choice:
            # Python 3.11 quotes each choice ('tune', 'show'); 3.12.8+ and 3.13.1+ list them bare
            listed = choice.group(2)
            known = re.findall(r"'(.*?)'", listed) if listed.startswith("'") else [c.strip() for c in listed.split(",")]
            close = difflib.get_close_matches(choice.group(1), known, n=1)
            return f"; did you mean {close[0]!r}?" if close else ""
        if not message.startswith("unrecognized arguments:"):
            return ""
        # compared without the dashes every flag shares, which would make any two look alike
        names = [s[2:] for s in self._option_string_actions if s.startswith("--")]
        guesses = []
        for word in message.split(":", 1)[1].split():
            flag = word.split("=", 1)[0]
            if flag.startswith("--") and flag[2:] not in names:
                guesses += [f"--{name}" for name in difflib.get_close_matches(flag[2:], names, n=1)]
        return f"; did you mean {' '.join(guesses)}?" if guesses else ""


def build_parser(prog: str = "main.py") -> argparse.ArgumentParser:
    """The command line; ``prog`` is how the person started it (``main.py``, or the installed
    ``kernel-workbench``), which usage and error hints repeat."""
    from workbench.runner.plan import BACKEND_CHOICES

    from workbench import __version__

    parser = _Parser(prog=prog, description="Kernel Tuning Workbench (no subcommand: open the GUI)")
    parser.add_argument("--version", action="version", version=f"Kernel Tuning Workbench {__version__}")
    sub = parser.add_subparsers(dest="command")

    tune = sub.add_parser("tune", help="tune a kernel headless and write a session file")
    tune.add_argument("kernel", nargs="?", help="template or python benchmark name (omit with --replay)")
    tune.add_argument("--backend", default=None, choices=BACKEND_CHOICES, help="default: auto (cuda, else sim)")
    tune.add_argument("--strategy", default=None, help=f"search strategy: {STRATEGY_CHOICES}")
    tune.add_argument("--budget", type=int, default=None,
                      help="evaluations in this run, failures count (default 100; with --resume: what the "
                           "session has left of its budget); with --sizes: evaluations PER SIZE, each size "
                           "is measured up to this (a continued sweep skips sizes that have it; a one-size "
                           "session continued as a sweep takes its own budget per size)")
    tune.add_argument("--seed", type=int, default=None, help="random seed (default 0)")
    tune.add_argument("--timeout", type=float, default=None, help="per-candidate run timeout (s, default 10)")
    tune.add_argument("--compile-timeout", type=float, default=None, help="per-candidate compile timeout (s, default 60)")
    tune.add_argument("--time-limit", type=float, default=None, help="wall-clock budget for the run (s)")
    tune.add_argument("--refine-wait", type=float, default=None,
                      help="sim backend: after the last evaluation, wait at most this long (s) for background "
                           f"compiles to refine trials simulated with estimated resources (default {REFINE_WAIT_S:g}, "
                           f"{REFINE_ONLY_WAIT_S:g} with --refine-only; what is left is refined when the session is "
                           "continued with --resume, or all of it with --refine-only)")
    tune.add_argument("--refine-only", action="store_true",
                      help="with --resume: evaluate nothing new, only refine the --out session's trials that hold "
                           "estimated resources, at every size of a sweep (sim backend)")
    tune.add_argument("--workers", type=int, default=None, help="worker processes (default: 1, or one per GPU)")
    tune.add_argument("--executor", default=None, choices=("local", "ray", "inline"),
                      help="where candidates run: local worker processes, Ray actors (the ray extra), or inline "
                           "in this process (sim and replay only: quicker start, no per-candidate timeout)")
    tune.add_argument("--ray-address", default=None, metavar="ADDRESS",
                      help="with --executor ray: an existing cluster (e.g. ray://head:10001); default a local Ray instance")
    tune.add_argument("--devices", default=None, metavar="0,1", help="cuda backend: the GPUs to use, one worker each (default: all)")
    tune.add_argument("--allow-mixed-gpus", action="store_true", default=None,
                      help="allow GPUs of different models in one run (their timings are ranked together)")
    tune.add_argument("--kernel-dir", action="append", default=[], help="extra template/benchmark folder (repeatable)")
    tune.add_argument("--replay", default=None, help="replay a recorded session or Kernel Tuner cache file")
    tune.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="problem parameter (repeatable)")
    tune.add_argument("--sizes", action="append", default=[], metavar="NAME=V1,V2,...",
                      help="size sweep: one tuning per value of problem parameter NAME, all in one session, "
                           "--budget evaluations each (repeatable: several names make a grid); with --resume, "
                           "adds sizes to the session's sweep. See docs/sizes.md")
    tune.add_argument("--no-warm-start", action="store_false", dest="warm_start", default=None,
                      help="with --sizes: start every size cold (default: a new size first measures the best "
                           "configs of the nearest sizes already measured)")
    tune.add_argument("--gpu-model", default=None, help="simulated GPU model (sim backend), e.g. H200, A100, T4")
    tune.add_argument("--no-noise", action="store_false", dest="noise", default=None,
                      help="sim backend: switch modelled timing noise off")
    tune.add_argument("--resources", choices=sorted(RESOURCE_MODES), default=None,
                      help="sim backend: where registers and shared memory come from: 'compiled' (default; NVRTC "
                           "compiles in the background, so runs repeat only once the compiles are cached) or "
                           "'estimated' (the template's work profile, nothing compiled: runs repeat exactly)")
    tune.add_argument("--delay", type=float, default=None, metavar="SECONDS", help=DELAY_HELP)
    tune.add_argument("--patience", type=int, default=None, help="stop when the best score has not improved in K evaluations")
    tune.add_argument("--prune", type=float, default=None, metavar="FRACTION",
                      help="cost-model pruning: measure only this fraction of proposals, those the performance "
                           "model ranks best (templates only)")
    tune.add_argument("--option", action="append", default=[], metavar="NAME=VALUE", help="strategy option (repeatable)")
    tune.add_argument("--help-strategy", metavar="NAME", default=None,
                      help="print the strategy's options (name, type, default, allowed values, description) and exit")
    tune.add_argument("--out", default=None,
                      help="session file to write (a journal and a lock are kept beside it while running); "
                           "an existing session needs --resume or --force")
    tune.add_argument("--resume", nargs="?", const=True, default=None, metavar="SESSION",
                      help="continue a session with its own settings (flags given override them and are "
                           "recorded); without SESSION: the one at --out, also after a crash (from its journal)")
    tune.add_argument("--force", action="store_true",
                      help="replace what is at --out, keeping it as FILE.bak")
    tune.add_argument("--quiet", action="store_true", help="no progress line")
    tune.add_argument("--remeasure-aborted", action="store_true",
                      help="measure again the candidates of the --out session whose timing was aborted under a "
                           "tighter latency limit and that the constraints in force (the session's, or the flags) "
                           "no longer rule out; nothing else is measured")
    _add_objective_flags(tune)

    show = sub.add_parser("show", help="summarise a session file, or compare GPUs (--portability)")
    show.add_argument("file", nargs="?", help="session file (with --portability: the first of the sessions)")
    show.add_argument("--portability", nargs="+", default=None, metavar="SESSION",
                      help="compare sessions of one kernel on several GPUs: each GPU's best config on every "
                           "other GPU, and the config with the best worst case")
    show.add_argument("--at", action="append", default=[], metavar="NAME=VALUE",
                      help="the size of a sweep to rank (repeatable; default: the session's own problem, as "
                           "export); with --portability: compare the sessions at this size of their sweeps")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.add_argument("--trials", action="store_true", help="include every trial")
    show.add_argument("--kernel-dir", action="append", default=[], metavar="DIR",
                      help="with --portability: template folder whose templates the simulated GPUs predict "
                           "(repeatable); folders named inside a session are never loaded")
    _add_objective_flags(show)

    export = sub.add_parser("export", help="write the recommended config as a header, .cu, JSON or CuPy script")
    export.add_argument("sessions", nargs="+", metavar="SESSION", help="session file(s): one per device for a portable header")
    export.add_argument("--format", required=True,
                        choices=("header", "cuda", "json", "cupy", "dispatch", "dispatch-py", *TRIAL_FORMATS),
                        help="dispatch / dispatch-py: a C header / Python module picking the config by problem size "
                             "(a session tuned at several sizes); csv / kt-cache: every trial of one session, "
                             "as a table or a Kernel Tuner cache file")
    export.add_argument("--tolerance", type=float, default=None, metavar="FRACTION",
                        help="dispatch: every measured size within this of its optimum (default 0.05 = 5%%)")
    export.add_argument("--at", action="append", default=[], metavar="NAME=VALUE",
                        help="header, cuda, json, cupy: export the config for this size of a sweep (repeatable; "
                             "default: the session's problem, or the one size measured)")
    export.add_argument("--size-param", default=None, metavar="NAME",
                        help="dispatch: the problem parameter to pick by (default: the one that varies)")
    export.add_argument("--out", required=True,
                        help="file to write (atomically; untouched when the export refuses); - for standard output")
    export.add_argument("--force", action="store_true",
                        help="write over a file that is not an earlier export (or over an input), keeping it as FILE.bak")
    export.add_argument("--kernel-dir", action="append", default=[],
                        help="template folder to load (repeatable); folders named inside a session are never loaded")
    _add_objective_flags(export, objectives=False)

    kernels = sub.add_parser("kernels", help="list the available templates and their slots")
    kernels.add_argument("--json", action="store_true", help="one JSON document: each template with its slots and problem")
    kernels.add_argument("--kernel-dir", action="append", default=[], metavar="DIR",
                         help="a folder of your own templates, listed with the shipped ones (one of a shipped name replaces it; repeatable)")

    imp = sub.add_parser("import-kt", help="convert a Kernel Tuner cache file to a session")
    imp.add_argument("cache", help="the Kernel Tuner cache file (.json, or .json.gz as published)")
    imp.add_argument("--out", required=True, help="session file to write")
    imp.add_argument("--force", action="store_true",
                     help="write over a file that is not a session (or over the cache), keeping it as FILE.bak")

    check = sub.add_parser("check-kernels", help="compile every template offline (NVRTC) and report resources")
    check.add_argument("--arch", default=None, help="GPU architecture (default sm_90; --check-table alone: every shipped table)")
    check.add_argument("--json", action="store_true", help="the report as one JSON document")
    check.add_argument("--kernel", default=None, help="check this template alone (default: every one)")
    check.add_argument("--sample", type=int, default=None,
                       help="sampled configs per template besides the default (default 3)")
    check.add_argument("--seed", type=int, default=None,
                       help="seed of the sampled configs, or of --write-table's order (default 0)")
    check.add_argument("--kernel-dir", action="append", default=[], metavar="DIR",
                       help="check the templates of DIR (repeatable); the shipped ones too only with --shipped")
    check.add_argument("--shipped", action="store_true",
                       help="with --kernel-dir: check the shipped templates as well")
    check.add_argument("--write-table", action="store_true",
                       help="compile every valid config of the shipped templates and store the figures in resources/compiled")
    check.add_argument("--check-table", action="store_true",
                       help="fail when resources/compiled no longer matches the templates (no compiling)")
    check.add_argument("--table-time-limit", type=float, default=None, metavar="S",
                       help="with --write-table: stop after S seconds (a rerun resumes)")
    check.add_argument("--workers", type=int, default=None, help="compile threads (default: all cores)")
    check.add_argument("--quiet", action="store_true", help="no progress lines on stderr")

    gui = sub.add_parser("gui", help="open the desktop application (optionally run, screenshot and quit)")
    gui.add_argument("session", nargs="?", help="session file to open (with --run: the run continues it)")
    gui.add_argument("--run", metavar="KERNEL", default=None,
                     help="start tuning KERNEL (a template name or a python benchmark file) when the window opens")
    # None when not given, so that a run flag without --run (which no run would use) is refused
    gui.add_argument("--backend", default=None, choices=BACKEND_CHOICES, help="with --run: default auto")
    gui.add_argument("--strategy", default=None, help=f"with --run or --replay: search strategy: {STRATEGY_CHOICES}")
    gui.add_argument("--budget", type=int, default=None, help="with --run or --replay: default 100")
    gui.add_argument("--seed", type=int, default=None, help="with --run or --replay: default 0")
    gui.add_argument("--kernel-dir", action="append", default=[], metavar="DIR",
                     help="a folder of your own templates, listed in the kernel box and run from there "
                          "(as File > Open kernel folder..., and as tune --kernel-dir; repeatable)")
    gui.add_argument("--replay", default=None, metavar="FILE",
                     help="start replaying recorded timings (a session or a Kernel Tuner cache) when the window opens")
    gui.add_argument("--gpu-model", default=None,
                     help="with --run: simulated GPU model (sim backend), e.g. H200, A100, T4 (conv2d off the H100/H200 "
                          "compiles most configs before 'finished'; --resources estimated is instant)")
    gui.add_argument("--resources", choices=sorted(RESOURCE_MODES), default=None,
                     help="with --run: where the simulated GPU takes registers and shared memory from, as tune "
                          "--resources ('estimated' compiles nothing: the quickest start for a demo; selects the "
                          "sim backend when --backend is auto)")
    gui.add_argument("--delay", type=float, default=None, metavar="SECONDS",
                     help="with --run on the simulated GPU or --replay: " + DELAY_HELP)
    gui.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                     help="with --run: a problem parameter (repeatable, as tune --set); with --replay: the size "
                          "of a sweep recording to replay")
    gui.add_argument("--sizes", action="append", default=[], metavar="NAME=V1,V2,...",
                     help="with --run: a size sweep, --budget evaluations per size (as tune --sizes)")
    gui.add_argument("--screenshot", default=None, metavar="PNG",
                     help="save a picture of the window once the run (or the opening) is complete")
    gui.add_argument("--force", action="store_true",
                     help="let --screenshot replace a file that is not one of its own pictures (kept as FILE.bak); never the file the window opens")
    gui.add_argument("--quit-when-done", action="store_true",
                     help="close the window once the run (or the opening) is complete, leaving the person's "
                          "settings untouched (exit status as tune's)")
    gui.add_argument("--presentation", action="store_true",
                     help="open in presentation mode (fonts and markers 1.5x, as F11), e.g. for a projector")
    return parser


def _objective_from_args(args: argparse.Namespace, base: Any = None, source: str = "") -> tuple[Any, Any]:
    """Constraints and weights from flags, layered over a session's own (``base``, read from the
    file ``source``: named when what it stores is what cannot be met)."""
    from workbench.core.domain.objective import (NAMED_LIMITS, Bound, Constraints, Weights, check_stored_constraints,
                                                 fold_named_limits)

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
    if base is not None and source:  # a weight the file stores, no flag replaced, and no direction known
        from workbench.core.domain.metrics import known_direction

        flagged = {parse_assignment(text, "--weight", identifier=False)[0] for text in args.weight}
        for metric, weight in base.weights.values.items():
            if weight > 0 and metric not in flagged and known_direction(metric, weights.directions) is None:
                raise WorkbenchError(f"{source}: the session weighs metric {metric!r}, which has no known direction: "
                                     f"say --maximize {metric} or --minimize {metric}")
    return constraints, weights


#: ``--objectives none``: one score, also where the session searched a Pareto front (a continued
#: multi-objective session otherwise keeps its objectives, and single-score strategies refuse it).
NO_OBJECTIVES = "none"


def _objectives_from_args(args: argparse.Namespace, base: Any = None) -> tuple[str, ...] | None:
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
    stored = base.strategy.get("objectives") if base is not None and isinstance(base.strategy, dict) else None
    return tuple(str(m) for m in stored) if isinstance(stored, list) else None


def _stored_objectives_to_show(objectives: tuple[str, ...], available: Any, path: Path) -> tuple[str, ...]:
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


def _check_objective(constraints: Any, weights: Any, available: Any, objectives: tuple[str, ...] = (),
                     session: Session | None = None) -> None:
    """Refuse a weight or constraint on a metric nothing reports (a typo), or a weighted metric
    without a direction; warn only where the metric may still appear during the run, or where
    the name is the session's own (``session``: what a run saved is opened, and said)."""
    for warning in _objective_warnings(constraints, weights, available, objectives, session):
        print(f"warning: {printable(warning)}", file=sys.stderr)


def _check_objective_on(constraints: Any, weights: Any, sessions: list[Session]) -> None:
    """:func:`_check_objective` for an objective applied to every one of ``sessions``: each must
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
    """The checks of :func:`_check_objective`: refusals raised, warnings returned.

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
    warnings = check_metrics(dict.fromkeys(m for m in named if m not in unreported), available, weights.directions)
    warnings += [f"metric {m!r} of the session's own objective: no trial reports it, so it ranks nothing "
                 f"(known metrics: {', '.join(sorted((set(available) | {ALWAYS_REPORTED}) - set(NOT_RANKABLE)))})"
                 for m in unreported]
    Objective(constraints, weights, objectives)  # a weighted metric without a direction is an error here
    return warnings + idle_directions(weights.directions, named, available)


def _first_line(text: str) -> str:
    """The first non-empty line of a message (a worker's log stays in the session, not on the terminal)."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


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
        self.tty = sys.stderr.isatty()
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
            _silence(sys.stderr)

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
            best = f"{event.best_latency_ms:.4g} ms" if event.best_latency_ms is not None else "-"
            eta = f"{event.eta_s:.0f}s" if event.eta_s is not None else "?"
            aborted = f"  aborted {event.aborted}" if event.aborted else ""
            line = (f"[{event.done}{total}] failures {event.failures}{aborted}  best {best}  "
                    f"elapsed {event.elapsed_s:.0f}s  ETA {eta}")
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
                self._say(f"error: {_first_line(event.message) or 'the run failed'}\n")


def _objective_flags_given(args: argparse.Namespace) -> bool:
    return any(getattr(args, name) is not None for name in ("max_latency_ms", "max_memory_mb", "min_quality")) \
        or bool(args.constraint or args.weight or args.maximize or args.minimize)


def _request_from_args(args: argparse.Namespace, continued: str | None = None) -> Any:
    """The run request the flags make. Continuing the session at ``continued``, objective flags are
    layered over its own objective (it is read for that only when such flags are given); otherwise
    the session keeps its own."""
    from workbench.core.domain.session import has_journal, load_session
    from workbench.runner.controller import RunRequest
    from workbench.runner.executors import parse_devices

    if continued is None:
        constraints, weights = _objective_from_args(args)
    elif _objective_flags_given(args) and (Path(continued).exists() or has_journal(continued)):
        constraints, weights = _objective_from_args(args, load_session(continued), continued)
    else:
        constraints, weights = None, None
    return RunRequest(
        kernel=args.kernel, backend=args.backend, replay=args.replay, kernel_dirs=tuple(args.kernel_dir),
        problem=parse_assignments(args.set, "--set") if args.set else None, gpu_model=args.gpu_model,
        noise=args.noise, strategy=args.strategy,
        strategy_options=parse_assignments(args.option, "--option") if args.option else None,
        seed=args.seed, constraints=constraints, weights=weights, budget=args.budget,
        time_limit_s=args.time_limit, patience=args.patience, prune_keep=args.prune, workers=args.workers,
        executor=args.executor, ray_address=args.ray_address,
        devices=tuple(parse_devices(args.devices)) if args.devices is not None else None,
        allow_mixed_gpus=args.allow_mixed_gpus, compile_timeout_s=args.compile_timeout, run_timeout_s=args.timeout,
        objectives=_objectives_from_args(args),
        sizes=parse_sizes(args.sizes) if args.sizes else None, warm_start=args.warm_start,
        backend_options={**({"compile": RESOURCE_MODES[args.resources]} if args.resources else {}),
                         **({"delay_s": args.delay} if args.delay is not None else {})},
    )


#: The arguments that name one file each (lists: several), with the flag a message calls them by.
_FILE_ARGUMENTS = (("out", "--out"), ("file", "session"), ("sessions", "session"), ("portability", "--portability"),
                   ("cache", "cache"), ("session", "session"), ("replay", "--replay"), ("screenshot", "--screenshot"),
                   ("resume", "--resume"))


def _check_file_names(args: argparse.Namespace) -> None:
    """A file argument that names a folder by its form (``''``, ``.``, ``..``, ``/``, ``dir/``) is
    refused before anything reads or writes: ``--out sub/`` wrote a file called ``sub``, since a
    path object drops the slash, and ``show .`` was a traceback. So is an empty folder, strategy
    or GPU model name."""
    for name, flag in _FILE_ARGUMENTS:
        given = getattr(args, name, None)
        for value in given if isinstance(given, list) else [given]:
            if not isinstance(value, str) or value == STDOUT:
                continue
            if not value.strip():
                raise WorkbenchError(f"{flag}: an empty name names no file")
            if os.path.basename(value) in ("", ".", ".."):  # (Path("sub/.").name is "sub")
                raise WorkbenchError(f"{flag} {value}: names a folder; name a file")
    for folder in getattr(args, "kernel_dir", None) or []:
        if not folder.strip():  # resolved, '' was the current folder, whose code a run then loaded
            raise WorkbenchError("--kernel-dir: an empty name names no folder (. for the current one)")
    for name, flag, what in (("strategy", "--strategy", "strategy"), ("gpu_model", "--gpu-model", "GPU model")):
        value = getattr(args, name, None)
        if isinstance(value, str) and not value.strip():  # it was taken for "not given": the default ran unsaid
            raise WorkbenchError(f"{flag}: an empty name names no {what}")


def _file_out(out: str | None, flag: str = "--out") -> None:
    """``--out -`` means standard output only where a command can print its result (export)."""
    if out == STDOUT:
        raise WorkbenchError(f"{flag} -: this command writes a file, not standard output "
                             "(./- names a file called '-')")


def _continued_by_journal(args: argparse.Namespace) -> None:
    """The session a command continues may be named by its journal (``--resume k.json.journal``,
    what a killed run leaves before its first save): it stands for ``k.json``, which is read with
    it and written. A new session is never written at a journal's name (the output rule)."""
    from workbench.core.domain.session import session_path_of

    if isinstance(args.resume, str):
        args.resume = str(session_path_of(args.resume))
        if args.out is not None and os.path.abspath(session_path_of(args.out)) == os.path.abspath(args.resume):
            args.out = args.resume  # continued into itself, however it is spelt
    elif args.out is not None and (args.resume or args.remeasure_aborted or args.refine_only):
        args.out = str(session_path_of(args.out))


def cmd_tune(args: argparse.Namespace) -> int:
    from workbench.core.model.verify import reference_summary
    from workbench.runner.controller import resume_run, start_run

    if args.help_strategy is not None:
        from workbench.search.base import options_help

        print(options_help(args.help_strategy))
        return 0
    _check_run_flags(args)
    _file_out(args.out)
    _continued_by_journal(args)
    if args.remeasure_aborted:
        return _remeasure_aborted(args)
    if args.refine_only:
        return _refine_only(args)
    if args.budget is not None and args.budget < 1:
        raise WorkbenchError("--budget must be at least 1")
    named = "replay" if args.replay else args.backend
    if named not in (None, "auto"):
        _check_backend_flags(args, named)
    if args.prune is not None and not 0.0 < args.prune <= 1.0:
        raise WorkbenchError(f"--prune {args.prune:g}: the fraction measured must be in (0, 1]")
    if isinstance(args.resume, str):
        run = resume_run(args.resume, _request_from_args(args, args.resume), args.out, force=args.force)
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
    finished = run.run()
    session, out = run.session, run.output
    if finished.reason == "error" and not session.trials:  # its cause is said; no session was written
        return 1
    if out is not None and not run.engine.saved:  # the save failed (its cause is said): no "-> FILE" then
        from workbench.core.domain.session import journal_path

        journal = journal_path(out)
        where = (f"the journal {journal} keeps what it could write, and tune --resume --out {out} recovers it "
                 "once the cause is fixed" if journal.is_file() else "nothing of them was written")
        new = len(session.trials) - before
        print(f"{session.kernel}: {counted(new, 'trial')} measured by this run "
              f"({len(session.trials)} in the session) not saved to {out}; {where}", file=sys.stderr)
        return 1
    for warning in _idle_directions_after(run):
        print(f"warning: {printable(warning)}", file=sys.stderr)
    if run.engine.unrefined:
        unrefined = run.engine.unrefined
        print(f"note: {counted(unrefined, 'trial')} keep{'s' if unrefined == 1 else ''} estimated resources (marked resources_pending): their "
              f"compiles had not finished {wait:g} s after the last evaluation; a run continuing the "
              f"session refines them (all of them, nothing new measured: tune --resume --out {out} --refine-only)",
              file=sys.stderr)
    summary = summarise(session, remeasure=remeasure_command(str(out) if out else None, session.constraints, session))
    best = summary["best"]
    best_text = (f"best {best['latency_ms']:.4g} ms {best['config']}" if best
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
    # a sweep's summary ranks one size; the line counts every size's feasible trials
    feasible_count = _feasible_count(session) if "answered" in summary else summary["feasible"]
    feasible = f"{feasible_count} feasible"
    if session.constraints.bounds():  # a continued session's limits come from its file: said, as show says them
        from workbench.core.domain.objective import objective_text

        feasible += f" under {printable(objective_text(session.constraints, session.weights, shown=True)[0])}"
    print(f"{session.kernel}: {counted(summary['trials'], 'trial')} ({verb}), {feasible}{sim}; {best_text} -> {printable(str(out))}")
    checks = reference_summary(session.trials) or str(session.extra.get("reference") or "")
    if checks:
        print(f"{session.kernel}: {printable(checks)}")
    unchecked = unchecked_outputs_note(summary["outputs_unchecked"])
    if unchecked and not checks:  # a template without a reference: the line above says what was checked
        print(f"{session.kernel}: outputs {unchecked}")
    return 0 if finished.reason != "error" else 1


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
            print(f"note: {_estimated_line(session, estimated)}")
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
    constraints, weights = _objective_from_args(args, base, args.out)
    request = RunRequest(kernel=args.kernel, kernel_dirs=tuple(args.kernel_dir), constraints=constraints,
                         weights=weights, workers=args.workers, compile_timeout_s=args.compile_timeout,
                         run_timeout_s=args.timeout)
    run, message = remeasure_aborted(args.out, request)
    if run is None:
        print(f"{base.kernel}: {message}")
        return 0
    run.subscribe(_ProgressLine(args.quiet))
    finished = run.run()
    print(f"{run.session.kernel}: {message.replace('re-measuring', 're-measured')}; "
          f"{_feasible_count(run.session)} feasible -> {printable(str(args.out))}")
    return 0 if finished.reason != "error" else 1


def _feasible_count(session: Session) -> int:
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
    from workbench.core.domain.objective import rank
    from workbench.core.domain.sizes import problems_of, sweep_progress
    from workbench.core.io.export import answered_problem

    constraints = constraints or session.constraints
    weights = weights or session.weights
    trials = list(session.trials)
    ranked, answered = trials, None
    one_size = bool(at) or len(problems_of(session)) > 1  # ranked at one size: the one export answers for
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
        "most_excluding_constraint": ranking.most_excluding if ranking.n_feasible == 0 and ranked else None,
        "why_none": _why_none(ranking, ranked, remeasure) if ranking.n_feasible == 0 and ranked else None,
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
        else:
            importance = session_importance(session, constraints, weights, targets=("score",), trials=ranked)["score"]
            out["importance"] = {k: round(v, 4) for k, v in importance.shares.items()}
            out["importance_note"] = importance.reason or importance.method
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
                **({"problem": dict(t.problem)} if t.problem is not None else {}),
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
        shown = f"{limit:g}"
        command += f" --max-latency-ms {shown if float(shown) == limit else repr(limit)}"  # exact: a rounded
        # limit can rule a candidate out again
    return command


def _why_none(ranking: Any, trials: Sequence[Trial], remeasure: str | None = "tune --remeasure-aborted") -> str:
    """Why nothing is recommended; when nothing succeeded, with the failure most trials share (a
    template every config of which fails to compile said only "no successful trials")."""
    why = str(ranking.why_none(remeasure))
    if ranking.n_ok:
        return why
    reasons: dict[tuple[str, str], int] = {}
    for trial in trials:
        if trial.status.value not in ("ok", "aborted"):
            key = (trial.status.value, _first_line(trial.measurement.message)[:200])
            reasons[key] = reasons.get(key, 0) + 1
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
    from workbench.core.domain.sizes import problem_key, sweep_progress

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
    run = session.run
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
        "budget": run.budget,
        "time_limit_s": run.time_limit_s,
    }


def _search_line(search: Mapping[str, Any]) -> str | None:
    """``search`` of :func:`summarise` in one line (None when the session records no strategy)."""
    if not search.get("strategy"):
        return None
    parts = [f"seed {search['seed']}" if search.get("seed") is not None else ""]
    if search.get("strategy_known") is False:
        parts.append("not a strategy of this version: a continued run refuses it")
    parts += [f"{k}={v}" for k, v in sorted(search["options_changed"].items())]
    if search.get("options_ignored"):
        parts.append("ignored (a run takes the default): " + ", ".join(
            f"{k}={search['options'][k]!r}" for k in sorted(search["options_ignored"])))
    if search.get("prune_keep") is not None:
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
    constraints, weights = _objective_from_args(args, session, args.file)
    objectives = _objectives_from_args(args, session) or ()
    if args.objectives is None:
        objectives = _stored_objectives_to_show(objectives, session_metrics(session), args.file)
    _check_objective(constraints, weights, session_metrics(session), objectives, session=session)
    at = parse_assignments(args.at, "--at") if args.at else None
    summary = summarise(session, constraints, weights, with_trials=args.trials, objectives=objectives,
                        with_importance=args.json, at=at, label=str(args.file),
                        remeasure=remeasure_command(args.file, constraints, session))
    if args.json:
        _print_json(summary)
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
    answered = summary.get("answered")
    size = f" at {', '.join(f'{k}={v}' for k, v in answered.items())}" if answered else ""
    over = "  (over all sizes)" if "answered" in summary and answered is None else size
    print(f"feasible {summary['feasible']}{over}")
    # what "feasible" and "best" below are under, as an export states it (the session's own, or the flags')
    from workbench.core.domain.objective import objective_text

    bounds, weighted = objective_text(constraints, weights, shown=True)
    if constraints.bounds():
        print(f"limits   {printable(bounds)}")
    if set(weights.active()) != {"latency_ms"}:  # latency alone ranks the same at any weight
        print(f"weights  {printable(weighted)}")
    if summary["resources_pending"]:
        print(f"estimate {_pending_line(summary['resources_pending'], str(args.file))}")
    if summary["resources_estimated"]:
        print(f"estimate {_estimated_line(session, summary['resources_estimated'])}")
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
        print(f"best     {b['latency_ms']:.4g} ms  score {b['score']:.3f}  {b['config']}{size}{estimated}")
        print(f"why      {b['why']}")
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
        for point in summary["pareto"]:
            figures = "  ".join(f"{m} {point[m]:.4g}" for m in summary["objectives"] if point[m] is not None)
            size = ", ".join(f"{k}={v}" for k, v in point["problem"].items()) + ": " if "problem" in point else ""
            print(f"         {size}{figures}  {point['config']}")
    sizes = summary.get("sizes", ())
    # named as tune names them: by the parameters that differ between the sizes
    varying = in_plan_order(session, [k for k in (sizes[0]["problem"] if sizes else {})
                                      if len({repr(size["problem"].get(k)) for size in sizes}) > 1]
                            or list(sizes[0]["problem"] if sizes else ()))
    for size in sizes:
        best = size["best"]
        estimated = " (resources estimated)" if best and best["resources_pending"] else ""
        figure = (f"best {best['latency_ms']:.4g} ms{estimated}  {best['config']}" if best and best["latency_ms"] is not None
                  else f"nothing feasible: {size['why_none']}" if size.get("why_none") else "nothing succeeded")
        label = ", ".join(f"{k}={size['problem'].get(k)}" for k in varying)
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
            lat = f"{t['latency_ms']:.4g}" if t["latency_ms"] is not None else "-"
            estimated = "  (resources estimated)" if t["resources_pending"] else ""
            size_label = ""
            if sized:
                problem = t.get("problem") or summary.get("problem") or {}
                size_label = ", ".join(f"{k}={problem.get(k)}" for k in varying) + "  "
            print(f"{t['index']:>5} {t['status']:<14} {lat:>10}  {size_label}{t['config']}  "
                  f"{printable(t['message'])}{estimated}")
    return 0


def _pending_line(count: int, path: str) -> str:
    """What ``count`` trials simulated with estimated resources mean, and the command that ends it."""
    return (f"{count} trial{'s' if count != 1 else ''} simulated with estimated resources (compile not landed: "
            f"a refinement can change their figures or refuse their launch); refine them with "
            f"tune --resume --out {shlex.quote(path)} --refine-only")


def _estimated_line(session: Session, count: int) -> str:
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


def _print_json(document: Any) -> None:
    """``document`` as indented JSON on stdout in one write: ``json.dump`` writes piece by piece
    (1.7 million writes for the trial list of an 18,000-trial session, most of ``show --json``'s time)."""
    sys.stdout.write(json.dumps(document, indent=2) + "\n")


def _show_portability(args: argparse.Namespace) -> int:
    from workbench.core.domain.portability import format_report, portability_report
    from workbench.core.domain.session import load_session
    from workbench.runner.portability import simulator_predictors

    paths = ([args.file] if args.file else []) + list(args.portability)
    if args.trials or _objectives_from_args(args, None):
        raise WorkbenchError("--portability cannot be combined with --trials or --objectives")
    from workbench.core.domain.templates import check_template_folders

    check_template_folders(args.kernel_dir)  # a typo is one line, not a note per simulated GPU
    sessions = [load_session(path) for path in paths]
    constraints, weights = _objective_from_args(args, sessions[0], paths[0])
    _check_objective_on(constraints, weights, sessions)
    at = typed_like(sessions[0].problem, parse_assignments(args.at, "--at"))
    predictors, notes = simulator_predictors(sessions, at, kernel_dirs=args.kernel_dir)
    report = portability_report(sessions, paths, constraints, weights, predictors=predictors, at=at)
    report.notes += notes
    if args.json:
        _print_json(report.to_dict())
        return 0
    print("\n".join(format_report(report)))
    return 0


def _check_distinct(paths: Sequence[str]) -> None:
    """Refuse a session file given twice (under any name): an export pools the trials of the
    sessions of one device, so its trials would count twice in the pick and the notes."""
    import hashlib
    import stat

    from workbench.core.fs import MAX_FILE_BYTES, open_regular

    seen: dict[Any, str] = {}
    by_size: dict[int, list[str]] = {}
    for path in paths:
        try:  # one file under two names: a symbolic or a hard link
            info = os.stat(path)
            key: Any = (info.st_dev, info.st_ino)
        except OSError:
            info, key = None, os.path.realpath(path)  # unreadable: the session loader says why, next
        if key in seen:
            same = f"{path} is given twice" if seen[key] == path else f"{seen[key]} and {path} are the same file"
            raise WorkbenchError(f"{same}; give each session once")
        seen[key] = path
        # a copy holds the same trials as its original: compared only among regular files of one
        # size (never opening a pipe or a device, which the session loader refuses next)
        if info is not None and stat.S_ISREG(info.st_mode) and info.st_size <= MAX_FILE_BYTES:
            by_size.setdefault(info.st_size, []).append(path)
    for same_size in (group for group in by_size.values() if len(group) > 1):
        contents: dict[str, str] = {}
        for path in same_size:
            try:
                hashed = hashlib.sha256()
                with open_regular(path) as handle:
                    for chunk in iter(lambda: handle.read(1 << 20), b""):
                        hashed.update(chunk)
                digest = hashed.hexdigest()
            except OSError:
                continue
            if digest in contents:
                raise WorkbenchError(f"{contents[digest]} and {path} hold the same session (identical files); "
                                     "give each session once")
            contents[digest] = path


#: Export formats that write a session's trials, not a recommendation.
TRIAL_FORMATS = ("csv", "kt-cache")


def cmd_export(args: argparse.Namespace) -> int:
    from workbench.core.io.dispatch import DEFAULT_TOLERANCE, export_dispatch, render_dispatch
    from workbench.core.io.export import export_sessions, is_export_file, render_export
    from workbench.core.io.export_seal import unchanged_export
    from workbench.core.domain.session import load_session

    _check_distinct(args.sessions)
    if args.format in TRIAL_FORMATS:
        return _export_trials(args)
    sessions = [load_session(path) for path in args.sessions]
    constraints, weights = _objective_from_args(args, sessions[0], args.sessions[0])
    _check_objective_on(constraints, weights, sessions)
    to_stdout = args.out == STDOUT
    kept: list[Path] = []

    def check_output(path: Path) -> None:
        backup = _check_export_output(path, args, replaceable=is_export_file, pristine=unchanged_export,
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
                   f"{dispatch.parameter}, {dispatch.method} set cover, tolerance {100 * tolerance:g}%)")
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
                    f"device's optimum, of {plan.portable.candidates} configs measured feasible on every device"
                    if plan.portable is not None and len(plan.choices) > 1 else "")
        summary = f"{plan.kernel}: exported {args.format} ({picks}{portable})"
        if plan.template_changed:  # in the file's comments too; said here, where the export is made
            print(f"warning: {printable(plan.template_changed)}", file=sys.stderr)
        pending = [c for c in plan.choices if c.trial.measurement.resources_pending]
        if pending:
            holders = [str(path) for session, path in zip(sessions, args.sessions)
                       if any(t is c.trial for c in pending for t in session.trials)]
            refine = "; ".join(f"tune --resume --out {shlex.quote(path)} --refine-only" for path in holders)
            print(f"warning: the exported config's resource figures on {', '.join(c.device for c in pending)} were "
                  f"estimated while its compile was pending, and refining can change the pick: "
                  f"{refine or 'refine the session (tune --resume --out SESSION --refine-only)'}, then export again",
                  file=sys.stderr)
    if to_stdout:  # the text alone on stdout, so a pipe or a redirect gets a clean file
        sys.stdout.write(text)
        print(summary + " -> standard output", file=sys.stderr)
    else:
        print(f"{summary} -> {printable(str(args.out))}")
        for backup in kept:
            print(f"kept the file that was there as {printable(str(backup))} (an export edited since it was written, or "
                  "one of an earlier version)" if is_export_file(backup) else f"kept the file that was there as {printable(str(backup))}")
    return 0


def _check_export_output(path: Path, args: argparse.Namespace, **rules: Any) -> Path | None:
    """Where an export may write: not where a killed run's journal waits, not into the autosave
    folder, and over a file there only as :func:`prepare_output` allows (``rules``: its
    ``replaceable``, ``pristine`` and ``what``). Returns the backup it kept, if any."""
    from workbench.core.domain.session import has_journal, journal_path
    from workbench.core.io.output_files import prepare_output
    from workbench.runner.autosave import refuse_autosave_folder

    if has_journal(path):  # a run's trials live there until a run takes them in
        from workbench.core.io.session_lock import locked_by_other

        # a run still writing it is said as such: "tune --resume recovers them" sent the person
        # to a command that the run's lock then refused
        what = ("a run writing that session is going (its lock is held)" if locked_by_other(path)
                else "tune --resume recovers them first")
        raise WorkbenchError(f"--out {path}: the journal of a run is beside it ({journal_path(path).name}); an "
                             f"export there would leave those trials unreadable; {what}, or choose another name")
    refuse_autosave_folder(path)
    return prepare_output(path, force=args.force, inputs=args.sessions, **rules)


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
    summary = f"{session.kernel}: exported {args.format} ({what})"
    if args.out == STDOUT:
        sys.stdout.write(text)
        print(summary + " -> standard output", file=sys.stderr)
        for note in notes:  # what the file cannot carry
            print(f"note: {printable(note)}", file=sys.stderr)
        return 0
    out = Path(args.out)
    backup = _check_export_output(out, args, what=f"file a {args.format} export replaces unasked")
    try:
        atomic_write(out, lambda f: f.write(text))
    except OSError as exc:
        raise WorkbenchError(f"--out {out}: cannot write ({exc.strerror or exc})") from None
    print(f"{summary} -> {printable(str(out))}")
    if backup is not None:
        print(f"kept the file that was there as {printable(str(backup))}")
    for note in notes:  # what the file cannot carry
        print(f"note: {printable(note)}", file=sys.stderr)
    return 0


def cmd_kernels(args: argparse.Namespace) -> int:
    from workbench.core.domain.templates import kernels_dir, scan_templates

    library = scan_templates(*args.kernel_dir, str(kernels_dir()))
    templates = library.templates
    listing: list[dict[str, Any]] = []
    for name in sorted(templates):
        t = templates[name]
        space = t.space(t.problem)
        listing.append({
            "name": name,
            "title": t.title,
            "description": t.description,
            "problem": dict(t.problem),
            "slots": [s.to_dict() for s in t.slots],
            "restrictions": list(t.restrictions),
            "default": dict(t.default),
            "valid_configs": space.count(),
            "baseline": t.baseline_name or None,
            "spec": t.path,
            "replaces": str(library.shadowed[name]) if name in library.shadowed else None,
        })
    if args.json:
        _print_json(listing)
    else:
        for item in listing:
            slots = ", ".join(f"{s['name']}[{len(s['values'])}]" for s in item["slots"])
            print(f"{item['name']:<12} {item['valid_configs']:>7} configs  {slots}")
    _report_library(library)
    return 2 if library.broken else 0  # a spec that does not load is bad input, as a file refused


def _report_library(library: Any) -> None:
    """Say on standard error which templates replace another of the same name (a user folder's
    over the shipped one) and which specs do not load, after the listing of those that do."""
    for name, hidden in sorted(library.shadowed.items()):
        print(f"note: {name} is {printable(str(library.templates[name].path))}, which replaces {printable(str(hidden))}",
              file=sys.stderr)
    for reason in library.broken.values():
        print(f"error: {printable(reason)}", file=sys.stderr)


def cmd_import_kt(args: argparse.Namespace) -> int:
    from workbench.core.io.interop import import_kt_cache
    from workbench.core.io.output_files import (
        check_folder,
        check_regular_or_absent,
        check_session_name,
        prepare_output,
    )
    from workbench.core.domain.session import has_journal, journal_path, save_session
    from workbench.core.io.session_lock import SessionLock

    _file_out(args.out)
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

        prepare_output(out, force=args.force, inputs=[args.cache],
                       replaceable=lambda _path: earlier is not None and is_as_imported(earlier),
                       what="session imported from a Kernel Tuner cache")
        replaced = None if args.force or earlier is None else printable(  # (--force says where it kept it)
            f"{counted(len(earlier.trials), 'trial')} of {earlier.kernel} on {earlier.device.get('name', '?')}")
        if backup is not None and has_journal(out):  # kept beside the backup, never dropped
            if out.exists() and not backup.exists():  # an earlier import is replaced without one: its journal needs it
                keep_backup(out)
            os.replace(journal_path(out), journal_path(backup))
        save_session(session, out)
    for note in notes:  # after the save: a refused --out stays one line
        print(f"note: {printable(note)}", file=sys.stderr)
    print(f"imported {counted(len(session.trials), 'trial')} of {printable(session.kernel)} on {printable(str(session.device.get('name', '?')))} -> {printable(str(args.out))}")
    if replaced is not None:  # an earlier import goes without a backup (its cache can make it again): said
        print(f"replaced the earlier import there ({replaced})")
    return 0


def _session_there(path: Path) -> Session | None:
    """The session at ``path``, read when it looks like one (None: nothing, or something else).
    An earlier import, as imported, may be replaced by a new one, and the line saying so names what
    it held; a session of measured trials, or an import a person has since given notes,
    constraints or weights, may not without --force (which keeps it as FILE.bak): replacing it
    silently lost their work."""
    from workbench.core.domain.session import is_session_file, load_session

    if not path.is_file() or not is_session_file(path):
        return None
    try:
        return load_session(path)
    except WorkbenchError:
        return None


def cmd_check_kernels(args: argparse.Namespace) -> int:
    from workbench.core.model.checks import check_kernels, format_check_table, print_progress
    from workbench.core.domain.templates import kernels_dir, require_template, scan_templates
    from workbench.core.errors import UnknownTemplate
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
        _print_json([r.to_dict() for r in results])
    else:
        print(format_check_table(results))
    if library is None:
        return 0 if all(r.ok for r in results) else 1
    _report_library(library)
    return 2 if library.broken else 0 if all(r.ok for r in results) else 1


def _check_kernels_table(args: argparse.Namespace) -> int:
    """``--write-table`` / ``--check-table``: the shipped templates' resource table for ``--arch``."""
    from workbench.core.model import resource_table
    from workbench.core.model.checks import print_table_progress
    from workbench.core.domain.templates import kernels_dir, load_templates

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
            raise WorkbenchError(f"unknown kernel {args.kernel!r}; available: {', '.join(sorted(templates))}")
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
        _print_json([report.to_dict() for report in reports])
    for report in reports:
        if not args.json:
            for line in report.summary:
                print(line)
        for line in report.problems:
            print(f"error: {line}", file=sys.stderr)
    return 0 if all(report.ok for report in reports) else 1


def _check_screenshot(args: argparse.Namespace) -> None:
    """``--screenshot`` obeys every command's output rule, checked before the window opens: a refusal
    after a run would come too late, and a picture written over the session it shows loses it."""
    from workbench.core.io.output_files import prepare_output, same_file
    from workbench.core.io.screenshots import is_own_screenshot

    _file_out(args.screenshot, "--screenshot")
    inputs = [path for path in (args.session, args.replay, args.run) if path and os.path.exists(path)]
    for path in inputs:  # as tune refuses its own input: --force would move the session aside for a picture
        if same_file(args.screenshot, path):
            raise WorkbenchError(f"--screenshot {args.screenshot}: is the file this window opens; name another "
                                 "file for the picture")
    prepare_output(args.screenshot, force=args.force, inputs=inputs, replaceable=is_own_screenshot,
                   what="screenshot of this program", flag="--screenshot")


def cmd_gui(args: argparse.Namespace | None) -> int:
    from workbench.gui.app import main as gui_main

    if args is None:
        return gui_main(None, None, None, False)
    _check_run_flags(args)
    if args.screenshot is not None:
        _check_screenshot(args)
    elif args.force:
        raise WorkbenchError("--force applies to --screenshot only (a picture that replaces an existing file)")
    if args.set and not (args.run or args.replay):
        raise WorkbenchError("--set applies to a run the window starts: gui --run KERNEL --set NAME=VALUE "
                             "(or --replay FILE --set NAME=VALUE for a size of a sweep recording)")
    if args.sizes and not (args.run or args.replay):
        raise WorkbenchError("--sizes applies to a sweep the window starts: gui --run KERNEL --sizes NAME=V1,V2,...")
    if not (args.run or args.replay):
        for dest in ("backend", "strategy", "budget", "seed", "gpu_model", "resources", "delay"):
            if getattr(args, dest) is not None:
                flag = "--" + dest.replace("_", "-")
                raise WorkbenchError(f"{flag} applies to a run the window starts: gui --run KERNEL {flag} ... "
                                     "(or --replay FILE)")
    run = None
    if args.run or args.replay:
        run = {"kernel": args.run, "backend": args.backend or "auto", "strategy": args.strategy,
               "budget": 100 if args.budget is None else args.budget, "seed": args.seed or 0,
               "replay": args.replay, "gpu_model": args.gpu_model}
        if args.sizes:
            run["sizes"] = parse_sizes(args.sizes)
        if args.set:
            run["problem"] = parse_assignments(args.set, "--set")
        # the simulated GPU's own options: a run elsewhere would ignore them, so they are refused, and
        # with `auto` they ask for the simulated GPU (as tune refuses them for any other backend)
        if args.delay is not None:
            run["delay_s"] = args.delay
            if not args.replay and (run["backend"] not in ("auto", "sim") or str(args.run or "").endswith(".py")):
                raise WorkbenchError("--delay applies to the simulated GPU and to replays: gui --run KERNEL "
                                     "--backend sim --delay S, or gui --replay FILE --delay S (a python benchmark "
                                     "or a real GPU runs at the speed of what it measures)")
            if not args.replay:
                run["backend"] = "sim"
        for flag, given, lacks in (("--resources", args.resources, "has no compiled resources"),
                                   ("--gpu-model", args.gpu_model, "simulates no GPU model")):
            if given is None:
                continue
            if args.replay or run["backend"] not in ("auto", "sim") or str(args.run or "").endswith(".py"):
                raise WorkbenchError(f"{flag} applies to a template on the simulated GPU: gui --run KERNEL "
                                     f"--backend sim {flag} ... (a python benchmark, a recording or a real GPU "
                                     f"{lacks})")
            run["backend"] = "sim"
        if args.resources is not None:
            run["options"] = {"compile": RESOURCE_MODES[args.resources]}
        if args.kernel_dir:
            run["kernel_dirs"] = list(args.kernel_dir)
    return gui_main(args.session, run, args.screenshot, args.quit_when_done, args.presentation,
                    kernel_dirs=args.kernel_dir)


COMMANDS = {
    "tune": cmd_tune,
    "show": cmd_show,
    "export": cmd_export,
    "kernels": cmd_kernels,
    "import-kt": cmd_import_kt,
    "check-kernels": cmd_check_kernels,
    "gui": cmd_gui,
}


def _silence(stream: Any) -> None:
    """Point ``stream``'s file descriptor at /dev/null: nobody reads it any more, and every later
    write (and the interpreter's final flush) would fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


class _StdoutForScripts:
    """``sys.stdout`` while a command runs: what it prints is output for a reader that may go away
    or may not take every character, and neither is the command's failure.

    - A reader that stopped reading (``kernels | true``, ``check-kernels | head -1``): the rest of
      the output goes to /dev/null and the command carries on, so its errors still reach stderr
      and its exit status is its own. The closed pipe used to end the command on the spot with
      status 0, before the line on stderr that said a spec was broken, or a table stale.
    - A character the stream's encoding lacks (``PYTHONIOENCODING=ascii``, a path or slot value
      with an accent) is written as a backslash escape, as stderr writes it, instead of ending the
      command with a traceback after its session was saved.
    """

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            written = self._stream.write(text)
            return len(text) if written is None else int(written)  # (a file-like sink may say nothing)
        except UnicodeEncodeError:
            encoding = getattr(self._stream, "encoding", None) or "ascii"
            return self.write(text.encode(encoding, "backslashreplace").decode(encoding))
        except BrokenPipeError:
            _silence(self._stream)
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            _silence(self._stream)
            self._stream.flush()  # what was left in its buffer goes to /dev/null now

    def __getattr__(self, name: str) -> Any:  # fileno, isatty, encoding...: the stream's own
        return getattr(self._stream, name)


def _closed_streams_to_devnull() -> None:
    """A program started with stdout or stderr closed (``2>&-``, a daemon) finds None there:
    every message then raised AttributeError, a run ended before saving and ``show`` printed a
    traceback. What it writes there goes nowhere instead, as to a terminal nobody reads."""
    for fd, name in ((1, "stdout"), (2, "stderr")):
        if getattr(sys, name) is not None:
            continue
        try:  # the descriptor too: the worker processes inherit it, and died on a closed one
            os.fstat(fd)
        except OSError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            if devnull != fd:
                os.dup2(devnull, fd)
                os.close(devnull)
            os.set_inheritable(fd, True)  # os.open's descriptors are not: the workers found it closed again
        setattr(sys, name, open(fd, "w", encoding="utf-8", closefd=False))


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, taken the way Ctrl-C is: the run stops at once, keeps its trials and stops its
    workers with everything their candidates started (a KeyboardInterrupt, so that every layer
    that cleans up after Ctrl-C cleans up after it too, and no ``except Exception`` swallows it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"terminated by {signal.Signals(signum).name}")
        self.signum = signum


#: The signals that stop a command as Ctrl-C does: SIGTERM (a kill) and, where there is one, SIGHUP
#: (the terminal closed, the ssh connection dropped), whose default would end the process where it
#: stands, with nothing saved and the workers left to notice their parent gone.
STOP_SIGNALS: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM) + (
    (signal.SIGHUP,) if hasattr(signal, "SIGHUP") else ())


class StopSignals:
    """SIGINT, SIGTERM and SIGHUP while a command runs.

    The first raises where the program is (KeyboardInterrupt, or :class:`Terminated`), which
    stops a run as Ctrl-C always did. Later ones are ignored, said once: an interrupt raised in
    the middle of that stop (workers being shut down, the journal closed, the lock released)
    would cut it short and could leave workers behind that the interpreter's exit then waits for.
    After SIGHUP, output to a terminal that hung up goes to /dev/null, so that the stop's last
    lines cannot fail it.
    """

    SIGNALS = STOP_SIGNALS

    def __init__(self) -> None:
        self.received: int | None = None
        self._said = False
        self._previous: dict[int, Any] = {}

    def __call__(self, signum: int, frame: Any) -> None:
        if signum == getattr(signal, "SIGHUP", None):
            silence_hung_up_output()
        if self.received is None:
            self.received = signum
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            raise Terminated(signum)
        if not self._said:
            self._said = True
            try:  # not sys.stderr: the signal may have landed inside one of its writes
                os.write(2, b"stopping...\n")
            except OSError:
                pass

    def install(self) -> None:
        """Handle the signals (from the main thread only; one ignored at start stays ignored,
        as under ``nohup`` or in a shell's background job)."""
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in self.SIGNALS:
            previous = signal.getsignal(signum)
            if previous is not signal.SIG_IGN:
                self._previous[signum] = previous
                signal.signal(signum, self)

    def restore(self) -> None:
        """Put back the handlers from before; while a stop is under way they stay ignored until exit."""
        if self.received is not None:
            return
        for signum, previous in self._previous.items():
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
        self._previous.clear()


def main(argv: Sequence[str] | None = None) -> int:
    _closed_streams_to_devnull()
    parser = build_parser(INSTALLED_COMMAND if Path(sys.argv[0]).name == INSTALLED_COMMAND else "main.py")
    args, extra = parser.parse_known_args(argv)
    if extra:  # said by the subcommand's parser, so that its hint names that command's --help
        commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        owner = commands.choices.get(args.command, parser) if args.command else parser
        owner.error(f"unrecognized arguments: {' '.join(extra)}")
    stop_signals = StopSignals()
    stop_signals.install()
    stdout = sys.stdout
    sys.stdout = _StdoutForScripts(stdout)  # a TextIO in all it is asked
    try:
        if args.command is None:
            return cmd_gui(None)
        _check_file_names(args)
        code = COMMANDS[args.command](args)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler, not at interpreter exit
        return code
    except WorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # `show ... | head`: the reader has all it wanted
        _silence(sys.stdout)  # the interpreter's final flush must not fail again
        return 0
    except (OSError, json.JSONDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except MemoryError:  # a file or a problem beyond this machine: one line, not a traceback
        print(f"error: {args.command or 'the command'}: not enough memory for what it was given (a file or "
              "problem too large for this machine)", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Terminated as exc:
        print("terminated", file=sys.stderr)
        return 128 + exc.signum
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        try:  # what an ending by an error left in the buffer: else the interpreter's exit flush met the closed pipe
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
        sys.stdout = stdout
        stop_signals.restore()
