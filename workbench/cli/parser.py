"""The command line's grammar: every subcommand's flags, the one-line usage errors, and the checks
of numbers no run can mean (a NaN timeout, a negative latency limit), shared by ``tune`` and ``gui``."""

from __future__ import annotations

import argparse
import difflib
import functools
import math
import re
from typing import Any, NoReturn

from workbench.core.domain.run_settings import MAX_SECONDS
from workbench.core.domain.records import MAX_PACE_S, is_pace
from workbench.core.errors import WorkbenchError, number_text
from workbench.search.base import DEFAULT_PARETO_STRATEGY, DEFAULT_STRATEGY, MAX_SEED, STRATEGIES

#: What --help says of --strategy: every name, the default marked (chosen by benchmark, docs/strategies.md).
STRATEGY_CHOICES = ", ".join(f"{name} (default; {DEFAULT_PARETO_STRATEGY} with --objectives)" if name == DEFAULT_STRATEGY else name
                             for name in sorted(STRATEGIES))
#: The same for ``gui``, which has no --objectives.
GUI_STRATEGY_CHOICES = ", ".join(f"{name} (default)" if name == DEFAULT_STRATEGY else name for name in sorted(STRATEGIES))

EXIT_BAD_INPUT = 2
#: A command whose work failed (a run that failed, a write the machine refused: a full disk).
EXIT_RUN_FAILED = 1
STDOUT = "-"  # export --out -: the export on standard output (other commands refuse it)
#: Export formats that write a session's trials, not a recommendation.
TRIAL_FORMATS = ("csv", "kt-cache")
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


def seconds(text: str) -> float:
    """A duration flag's value: a number of seconds. ``90s`` or ``1m30s`` was refused as an
    "invalid float value", which did not say what the flag takes."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (write 90 for a minute and a half, "
                                         "5400 for an hour and a half)") from None


def check_run_flags(args: argparse.Namespace) -> None:
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
            shown = int(value) if math.isfinite(value) and value.is_integer() else value  # 0, not 0.0; 1e-07 as given
            raise WorkbenchError(f"--{flag.replace('_', '-')} {shown}: must be a finite number "
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


class _StoreOnce(argparse._StoreAction):
    """A flag that takes one value refuses a second, different one (``--budget 10 ... --budget
    20``): argparse keeps the last without a word, so a script that set a flag in two places ran
    with whichever came later, as repeated ``--weight`` did before it was refused. The same value
    twice is one value. What was given is noted in the namespace under :data:`GIVEN`, which the
    command line's ``main`` takes out again."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        given: dict[str, Any] = namespace.__dict__.setdefault(GIVEN, {})
        if self.dest in given and given[self.dest] != values:
            parser.error(f"{option_string} given twice ({_shown(given[self.dest])} and {_shown(values)}); give it once")
        given[self.dest] = values
        super().__call__(parser, namespace, values, option_string)


#: The namespace attribute in which :class:`_StoreOnce` notes the values given.
GIVEN = "_given_once"


def _shown(value: Any) -> str:
    """A flag's value as it was typed, near enough: a number as short as it reads back exactly,
    several values (``--portability A B``) side by side."""
    if isinstance(value, list):
        return " ".join(_shown(v) for v in value)
    return number_text(value) if isinstance(value, float) else str(value)


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line, as every other refusal is: argparse's own
    prints the whole usage (twenty lines for ``tune``) before the ``error:`` line, burying it. The
    usage stays one ``--help`` away, named on that line.

    Flags are taken only as spelt in full: argparse takes any unambiguous prefix (``--js`` for
    ``--json``), so a script written with one breaks the day a flag of the same start is added,
    and the flag names are a contract scripts rely on."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)  # (the subcommands' parsers are of this class too)
        super().__init__(*args, **kwargs)
        self.register("action", "store", _StoreOnce)
        self.register("action", None, _StoreOnce)  # (a flag declared without an action stores)

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


#: The window's bottom tabs, as ``gui --tab`` names them (``MainWindow.TAB_NAMES``; a test keeps
#: the two in step: the parser does not import the window, whose Qt a headless command never loads).
GUI_TABS = ("results", "failures", "importance", "why", "roofline", "parallel", "slices", "compare", "sizes",
            "portability")


@functools.lru_cache(maxsize=4)
def build_parser(prog: str = "main.py") -> argparse.ArgumentParser:
    """The command line; ``prog`` is how the person started it (``main.py``, or the installed
    ``kernel-workbench``), which usage and error hints repeat. Built once per ``prog`` and process
    (a dozen milliseconds each time; ``tune`` asked twice, and the tests' in-process commands
    several hundred times): nothing changes a parser once built, and parsing leaves it as it was."""
    from workbench import __version__
    from workbench.runner.plan import BACKEND_CHOICES

    parser = _Parser(prog=prog, description="Kernel Tuning Workbench (no subcommand: open the GUI)")
    parser.add_argument("--version", action="version", version=f"Kernel Tuning Workbench {__version__}")
    sub = parser.add_subparsers(dest="command")

    tune = sub.add_parser("tune", help="tune a kernel headless and write a session file")
    tune.add_argument("kernel", nargs="?", help="template or python benchmark name (omit with --replay)")
    tune.add_argument("--backend", default=None, choices=BACKEND_CHOICES, help="default: auto (cuda, else sim)")
    tune.add_argument("--strategy", default=None, help=f"search strategy: {STRATEGY_CHOICES}")
    tune.add_argument("--budget", type=int, default=None,
                      help="evaluations in this run, failures count (default 100; with --resume: what the "
                           "session has left of its budget; with --time-limit and one size: no count, the run "
                           "measures until the limit); with --sizes: evaluations PER SIZE, each size "
                           "is measured up to this (a continued sweep skips sizes that have it; a one-size "
                           "session continued as a sweep takes its own budget per size)")
    tune.add_argument("--seed", type=int, default=None, help="random seed (default 0)")
    tune.add_argument("--timeout", type=seconds, default=None, help="per-candidate run timeout (s, default 10)")
    tune.add_argument("--compile-timeout", type=seconds, default=None, help="per-candidate compile timeout (s, default 60)")
    tune.add_argument("--time-limit", type=seconds, default=None,
                      help="wall-clock budget for the run (s; for each size of a --sizes sweep)")
    tune.add_argument("--refine-wait", type=seconds, default=None,
                      help="sim backend: after the last evaluation, wait at most this long (s) for background "
                           f"compiles to refine trials simulated with estimated resources (default {REFINE_WAIT_S:g}, "
                           f"{REFINE_ONLY_WAIT_S:g} with --refine-only; what is left is refined when the session is "
                           "continued with --resume, or all of it with --refine-only)")
    tune.add_argument("--refine-only", action="store_true",
                      help="with --resume: evaluate nothing new, only refine the --out session's trials that hold "
                           "estimated resources, at every size of a sweep (sim backend)")
    tune.add_argument("--workers", type=int, default=None,
                      help="worker processes (default: 1, or one per GPU; with --executor ray one per GPU of the "
                           "cluster, one per CPU for sim and python)")
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
    tune.add_argument("--gpu-model", default=None, help="simulated GPU model (sim backend; default H200), e.g. H200, A100, T4")
    tune.add_argument("--no-noise", action="store_false", dest="noise", default=None,
                      help="sim backend: switch modelled timing noise off")
    tune.add_argument("--resources", choices=sorted(RESOURCE_MODES), default=None,
                      help="sim backend: where registers and shared memory come from: 'compiled' (default; NVRTC "
                           "compiles in the background, so runs repeat only once the compiles are cached) or "
                           "'estimated' (the template's work profile, nothing compiled: runs repeat exactly)")
    tune.add_argument("--delay", type=seconds, default=None, metavar="SECONDS", help=DELAY_HELP)
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
    tune.add_argument("--quiet", action="store_true",
                      help="no progress line, nor the 'finished (...) after N evaluations' line")
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

    export = sub.add_parser("export", help="write the recommended config as a header, .cu, JSON or CuPy script, a "
                                                 "per-size dispatch, or every trial as CSV or a Kernel Tuner cache")
    export.add_argument("sessions", nargs="+", metavar="SESSION", help="session file(s): one per device for a portable header")
    export.add_argument("--format", default=None,
                        choices=("header", "cuda", "json", "cupy", "dispatch", "dispatch-py", *TRIAL_FORMATS),
                        help="dispatch / dispatch-py: a C header / Python module picking the config by problem size "
                             "(a session tuned at several sizes); csv / kt-cache: every trial of one session, "
                             "as a table or a Kernel Tuner cache file (default: by --out's suffix, .h header, "
                             ".cu cuda, .json json, .py cupy, .csv csv, as the window's Export best config)")
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
                     help="write over a file that is not an earlier import (or over the cache), keeping it as FILE.bak")

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
    gui.add_argument("--strategy", default=None, help=f"with --run or --replay: search strategy: {GUI_STRATEGY_CHOICES}")
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
    gui.add_argument("--delay", type=seconds, default=None, metavar="SECONDS",
                     help="with --run on the simulated GPU or --replay: " + DELAY_HELP)
    gui.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                     help="with --run: a problem parameter (repeatable, as tune --set); with --replay: the size "
                          "of a sweep recording to replay")
    gui.add_argument("--sizes", action="append", default=[], metavar="NAME=V1,V2,...",
                     help="with --run: a size sweep, --budget evaluations per size (as tune --sizes; repeatable)")
    gui.add_argument("--screenshot", default=None, metavar="PNG",
                     help="save a picture of the window once the run (or the opening) is complete")
    gui.add_argument("--tab", default=None, choices=GUI_TABS,
                     help="the bottom tab to show (default: results), e.g. for a --screenshot of the Sizes view")
    gui.add_argument("--force", action="store_true",
                     help="let --screenshot replace a file that is not one of its own pictures (kept as FILE.bak); never the file the window opens")
    gui.add_argument("--quit-when-done", action="store_true",
                     help="close the window once the run (or the opening) is complete, leaving the person's "
                          "settings untouched (exit status as tune's)")
    gui.add_argument("--presentation", action="store_true",
                     help="open in presentation mode (fonts and markers 1.5x, as F11), e.g. for a projector")
    return parser

