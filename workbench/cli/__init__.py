"""The headless commands. ``python main.py`` with no subcommand opens the GUI.

Subcommand names and flags are a contract other tools rely on (see ``docs/cli.md``). Every bad
input ends with one line on stderr and a non-zero exit code, never a traceback, and leaves
existing files untouched.

One module per command family (:mod:`.tune`, :mod:`.show`, :mod:`.export`, :mod:`.library` for
``kernels``, ``import-kt`` and ``check-kernels``, :mod:`.gui_command`), beside what they share:
the parser and its limits (:mod:`.parser`), the objective flags (:mod:`.objective_flags`), the
file-name rules (:mod:`.files`) and the process's streams and stop signals (:mod:`.streams`).
This module dispatches, and turns every refusal into its one line and exit status.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from typing import Sequence

from workbench.cli.export import cmd_export
from workbench.cli.files import check_file_names
from workbench.cli.gui_command import cmd_gui
from workbench.cli.library import cmd_check_kernels, cmd_import_kt, cmd_kernels
from workbench.cli.parser import EXIT_BAD_INPUT, EXIT_RUN_FAILED, GIVEN, build_parser
from workbench.cli.show import cmd_show
from workbench.cli.streams import (
    StdoutForScripts, StopSignals, Terminated, closed_streams_to_devnull, log_records_said, silence,
)
from workbench.cli.tune import cmd_tune
from workbench.core.errors import WorkbenchError, WriteFailed, command_name, machine_refused

COMMANDS = {
    "tune": cmd_tune,
    "show": cmd_show,
    "export": cmd_export,
    "kernels": cmd_kernels,
    "import-kt": cmd_import_kt,
    "check-kernels": cmd_check_kernels,
    "gui": cmd_gui,
}


def main(argv: Sequence[str] | None = None) -> int:
    closed_streams_to_devnull()
    started = command_name()  # usage lines say main.py, as --help always has
    parser = build_parser("main.py" if started == "python main.py" else started)
    stdout = sys.stdout
    output = StdoutForScripts(stdout)  # --help and --version print through it too: argparse drops a write error
    try:
        sys.stdout = output
        args, extra = parser.parse_known_args(argv)
        vars(args).pop(GIVEN, None)  # (what the parse noted to refuse a flag given twice)
    except SystemExit as exc:
        if exc.code in (0, None):  # their text is the output, and must have gone out
            output.flush()
            if output.failure is not None:
                print(f"error: {output.failure}", file=sys.stderr)
                return EXIT_RUN_FAILED
        raise
    finally:
        sys.stdout = stdout
    if extra:  # said by the subcommand's parser, so that its hint names that command's --help
        commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        owner = commands.choices.get(args.command, parser) if args.command else parser
        owner.error(f"unrecognized arguments: {' '.join(extra)}")
    stop_signals = StopSignals()
    stop_signals.install()
    sys.stdout = output  # a TextIO in all it is asked
    try:
        if args.command is None:
            return cmd_gui(None)
        check_file_names(args)
        with log_records_said():
            code = COMMANDS[args.command](args)
        output.flush()  # a closed pipe shows here, inside the handler, not at interpreter exit
        if output.failure is not None:  # the output was lost: said once the command's own lines are
            print(f"error: {output.failure}", file=sys.stderr)
            return code or EXIT_RUN_FAILED
        return code
    except WriteFailed as exc:  # the machine refused a write (a full disk): no input to fix
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_RUN_FAILED
    except WorkbenchError as exc:
        from workbench.cli.objective_flags import naming_flags

        print(f"error: {naming_flags(args, exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # `show ... | head`: the reader has all it wanted
        silence(sys.stdout)  # the interpreter's final flush must not fail again
        return 0
    except (OSError, json.JSONDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        # one no write site named (see WriteFailed): a full disk is still no input to fix
        return EXIT_RUN_FAILED if isinstance(exc, OSError) and machine_refused(exc) else EXIT_BAD_INPUT
    except MemoryError:  # a file or a problem beyond this machine: one line, not a traceback
        print(f"error: {args.command or 'the command'}: not enough memory for what it was given (a file or "
              "problem too large for this machine)", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Terminated as exc:
        print("terminated", file=sys.stderr)
        return 128 + exc.signum
    except KeyboardInterrupt:
        # a SIGTERM or SIGHUP whose Terminated a library turned into a plain KeyboardInterrupt on the
        # way up (Ray's waits re-raise one of their own) is still that signal's stop
        received = stop_signals.received
        if received is not None and received != signal.SIGINT:
            print("terminated", file=sys.stderr)
            return 128 + received
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        try:  # what an ending by an error left in the buffer: else the interpreter's exit flush met the closed pipe
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
        sys.stdout = stdout
        # called with no arguments, as the program (main.py, python -m, the console script): the
        # process ends with the command; called with arguments (tests, a script's own process) it
        # goes on, with its own handlers back
        stop_signals.restore(exiting=argv is None)
