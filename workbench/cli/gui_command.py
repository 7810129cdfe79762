"""``gui``: the desktop application, optionally starting a run or replay, taking a screenshot and
quitting, with the same flag checks as ``tune``."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from workbench.cli.files import file_out
from workbench.cli.parser import RESOURCE_MODES, check_run_flags
from workbench.core.domain.assignments import parse_assignments
from workbench.core.domain.sizes import parse_sizes
from workbench.core.errors import WorkbenchError


def _check_screenshot(args: argparse.Namespace) -> None:
    """``--screenshot`` obeys every command's output rule, checked before the window opens: a refusal
    after a run would come too late, and a picture written over the session it shows loses it."""
    from workbench.core.io.output_files import prepare_output, refuse_beside_journal, same_file
    from workbench.core.io.screenshots import is_own_screenshot

    file_out(args.screenshot, "--screenshot")
    inputs = [path for path in (args.session, args.replay, args.run) if path and os.path.exists(path)]
    for path in inputs:  # as tune refuses its own input: --force would move the session aside for a picture
        if same_file(args.screenshot, path):
            raise WorkbenchError(f"--screenshot {args.screenshot}: is the file this window opens; name another "
                                 "file for the picture")
    # a session whose run's journal is beside it, even with --force: the picture moved the session
    # aside and left the journal beside a PNG, which no command then opened
    refuse_beside_journal(Path(args.screenshot), "--screenshot", output="a screenshot")
    prepare_output(args.screenshot, force=args.force, inputs=inputs, replaceable=is_own_screenshot,
                   what="screenshot of this program", flag="--screenshot")


def cmd_gui(args: argparse.Namespace | None) -> int:
    from workbench.gui.app import main as gui_main

    if args is None:
        return gui_main(None, None, None, False)
    check_run_flags(args)
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
                    kernel_dirs=args.kernel_dir, tab=args.tab, force=args.force)
