"""What Ctrl-C, SIGTERM and SIGKILL do to a ``tune``: it ends promptly, keeps its trials, and
leaves neither a process its candidates started nor its workers' temporary folder behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Callable

import pytest
from processes import IN_TERMINAL_SESSION, Terminal, describe
from processes import wait_gone as _wait_gone

from workbench.backends.base import BackendSpec
from workbench.backends.python import PythonBackend
from workbench.cli.streams import StopSignals, Terminated
from workbench.cli.tune import _ProgressLine
from workbench.runner.engine import Engine, session_for_target
from workbench.runner.events import Event, RunFinished, TrialFinished
from workbench.runner.inline import InlinePool
from workbench.runner.pool import OUTPUT_DIR_PREFIX
from workbench.search.grid import GridSearch

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.timeout(90),
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups and PR_SET_PDEATHSIG")]

#: Each candidate starts a child that would sleep for two minutes and notes its pid; with
#: ``WB_STUBBORN`` set, the candidate then ignores SIGTERM and never returns.
BENCH = '''
import os, signal, subprocess, time

SPACE = {"a": list(range(1, 41))}


def measure(config):
    child = subprocess.Popen(["sleep", "120"])
    with open(os.environ["WB_TEST_PIDS"], "a") as handle:
        handle.write(f"{child.pid}\\n")
    if os.environ.get("WB_STUBBORN"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            time.sleep(1)
    time.sleep(0.05)
    return {"latency_ms": config["a"] * 0.1}
'''


def _wait_for(condition: Callable[[], bool], proc: subprocess.Popen[str], what: str, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert proc.poll() is None, f"tune ended before {what}: {proc.communicate()[1][-2000:]}"
        assert time.monotonic() < deadline, f"no {what} within {seconds:g} s"
        time.sleep(0.05)


class Tune:
    """A ``tune`` of the benchmark above in a subprocess, with its own temporary folder."""

    def __init__(self, tmp_path: Path, *flags: str, stubborn: bool = False, terminal: int | None = None) -> None:
        self.bench = tmp_path / "children_bench.py"
        self.bench.write_text(textwrap.dedent(BENCH))
        self.pids = tmp_path / "pids.txt"
        self.pids.touch()
        self.tmp = tmp_path / "tmp"
        self.tmp.mkdir(exist_ok=True)
        self.out = tmp_path / "run.json"
        self.env = {**os.environ, "KERNEL_WORKBENCH_FORCE_NO_GPU": "1", "WB_TEST_PIDS": str(self.pids),
                    "TMPDIR": str(self.tmp), "PYTHONPATH": str(ROOT)}
        if stubborn:
            self.env["WB_STUBBORN"] = "1"
        self.proc = self.start(*flags, terminal=terminal)

    def start(self, *flags: str, terminal: int | None = None) -> subprocess.Popen[str]:
        """With ``terminal`` (a pseudo-terminal's follower end) the tune runs in a session of its own
        whose controlling terminal that is, as in a terminal window or over ssh; its stdin, stdout
        and stderr are that terminal, and ``--quiet`` is left out, so it writes progress lines there."""
        command = [sys.executable, "-X", "faulthandler", str(ROOT / "main.py"), "tune", str(self.bench), "--strategy", "grid",
                   "--out", str(self.out), *([] if terminal is not None else ["--quiet"]), *flags]
        if terminal is None:
            return subprocess.Popen(command, cwd=ROOT, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True)
        return subprocess.Popen([*IN_TERMINAL_SESSION, *command], cwd=ROOT, env=self.env,
                                stdin=terminal, stdout=terminal, stderr=terminal, text=True)

    def children(self) -> list[int]:
        return [int(line) for line in self.pids.read_text().split()]

    def finish(self, seconds: float = 30.0) -> str:
        """Its stderr once it has ended (killed, and the test failed, when it has not within ``seconds``)."""
        try:
            return self.proc.communicate(timeout=seconds)[1]
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGABRT)  # -X faulthandler: every thread's stack to stderr
            try:
                err = self.proc.communicate(timeout=5)[1]
            except subprocess.TimeoutExpired:
                self.proc.kill()
                err = self.proc.communicate()[1]
            pytest.fail(f"tune still running {seconds:g} s after the signal; its stderr: {err[-6000:]}")

    def pool_folders(self) -> list[str]:
        return [name for name in os.listdir(self.tmp) if name.startswith(OUTPUT_DIR_PREFIX)]

    def clean(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()
        for pid in self.children():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def test_ctrl_c_twice_while_a_candidate_ignores_sigterm_ends_the_run(tmp_path: Path) -> None:
    """The second Ctrl-C used to land while the pool waited for the hung worker: the pool gave up
    without killing it, and the interpreter's exit then waited for it forever."""
    tune = Tune(tmp_path, "--workers", "2", "--timeout", "60", "--budget", "5", stubborn=True)
    try:
        _wait_for(lambda: bool(tune.children()), tune.proc, "candidate running")
        tune.proc.send_signal(signal.SIGINT)
        time.sleep(0.3)
        tune.proc.send_signal(signal.SIGINT)
        err = tune.finish(20)
        assert tune.proc.returncode == 130, err
        assert "interrupted" in err.splitlines() and "error" not in err and "Traceback" not in err, err
        assert err.count("stopping...") <= 1
        assert not (left := _wait_gone(tune.children())), f"a child the candidate started outlived the run: {describe(left)}"
        assert not tune.pool_folders()
    finally:
        tune.clean()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_stops_a_tune_as_ctrl_c_does(tmp_path: Path, signum: int) -> None:
    """SIGTERM used to end the process where it stood: every child a candidate started, and the
    workers' temporary folder, were left behind. Now the run stops and keeps its trials. SIGHUP
    (the terminal closed, the ssh connection dropped) did the same until it was taken as SIGTERM."""
    tune = Tune(tmp_path, "--budget", "40")
    try:
        journal = Path(f"{tune.out}.journal")
        _wait_for(lambda: journal.exists() and journal.read_text().count("\n") >= 4, tune.proc, "three trials")
        tune.proc.send_signal(signum)
        err = tune.finish(20)
        assert tune.proc.returncode == 128 + signum, err
        assert err.splitlines()[-1] == "terminated" and "error" not in err and "Traceback" not in err, err
        assert not (left := _wait_gone(tune.children())), f"a child a candidate started outlived the run: {describe(left)}"
        assert not tune.pool_folders()
        from workbench.core.domain.session import load_session

        assert len(load_session(tune.out).trials) >= 3  # what was measured is kept (tune --resume goes on)
    finally:
        tune.clean()


def test_closing_the_terminal_stops_a_tune_that_writes_to_it_as_sigterm_does(tmp_path: Path) -> None:
    """The terminal a tune runs in goes away (its window closed, the ssh connection dropped): the
    kernel hangs it up and sends SIGHUP. The tune used to die there, leaving its session unsaved;
    taken as SIGTERM, its stop then failed writing its lines to the terminal that was gone (EIO).
    Now it stops as SIGTERM stops it, with SIGHUP's status, and keeps its trials."""
    terminal = Terminal()
    try:
        tune = Tune(tmp_path, "--budget", "40", terminal=terminal.follower)
    finally:
        terminal.started()
    try:
        journal = Path(f"{tune.out}.journal")
        _wait_for(lambda: (terminal.drain(), journal.exists() and journal.read_text().count("\n") >= 4)[1],
                  tune.proc, "three trials")
        terminal.hang_up()
        try:
            tune.proc.wait(20)
        except subprocess.TimeoutExpired:
            pytest.fail("tune still running 20 s after its terminal hung up")
        assert "[" in terminal.tail(), terminal.tail()  # it did write progress lines to the terminal
        assert tune.proc.returncode == 128 + signal.SIGHUP, terminal.tail()
        assert not (left := _wait_gone(tune.children())), f"a child a candidate started outlived the run: {describe(left)}"
        assert not tune.pool_folders()
        from workbench.core.domain.session import load_session

        assert len(load_session(tune.out).trials) >= 3
    finally:
        terminal.hang_up()
        tune.clean()


def test_a_hung_up_terminal_is_silenced_and_a_live_one_files_and_pipes_are_not(tmp_path: Path) -> None:
    from workbench.core.fs import silence_hung_up_output

    leader, gone = os.openpty()
    live_leader, live = os.openpty()
    read_end, write_end = os.pipe()
    with open(tmp_path / "log", "wb") as log:
        try:
            os.close(leader)  # hangs ``gone`` up
            assert silence_hung_up_output((gone, live, write_end, log.fileno())) == [gone]
            os.write(gone, b"nobody reads this\n")  # no EIO now: it is /dev/null
            os.write(live, b"x")
            os.write(write_end, b"y")
            assert os.read(live_leader, 1) == b"x" and os.read(read_end, 1) == b"y"
        finally:
            for fd in (gone, live, live_leader, read_end, write_end):
                os.close(fd)


def test_sigkill_of_tune_takes_the_candidates_children_and_the_next_run_removes_its_folder(tmp_path: Path) -> None:
    tune = Tune(tmp_path, "--budget", "40")
    try:
        _wait_for(lambda: len(tune.children()) >= 2, tune.proc, "two candidates")
        tune.proc.kill()
        tune.finish(20)
        assert not (left := _wait_gone(tune.children())), f"a child a candidate started outlived the killed run: {describe(left)}"
        left = tune.pool_folders()
        assert left == [name for name in left if name.startswith(f"{OUTPUT_DIR_PREFIX}{tune.proc.pid}-")] != []
        tune.out = tmp_path / "next.json"
        tune.proc = tune.start("--budget", "1")
        err = tune.finish(60)
        assert tune.proc.returncode == 0, err
        assert not tune.pool_folders()
    finally:
        tune.clean()


def test_only_the_first_stop_signal_interrupts_and_later_ones_are_said_once(capfd: pytest.CaptureFixture[str]) -> None:
    stop = StopSignals()
    with pytest.raises(KeyboardInterrupt) as raised:
        stop(signal.SIGINT, None)
    assert type(raised.value) is KeyboardInterrupt
    stop(signal.SIGINT, None)  # Ctrl-C again while the run stops: ignored
    stop(signal.SIGTERM, None)
    assert capfd.readouterr().err == "stopping...\n"
    with pytest.raises(Terminated) as terminated:
        StopSignals()(signal.SIGTERM, None)
    assert terminated.value.signum == signal.SIGTERM and isinstance(terminated.value, KeyboardInterrupt)


def test_a_command_gives_the_signal_handlers_back(cli) -> None:
    signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    before = [signal.getsignal(signum) for signum in signals]
    assert cli("kernels", "--json").returncode == 0
    assert [signal.getsignal(signum) for signum in signals] == before


def test_sighup_ignored_at_start_stays_ignored_as_under_nohup() -> None:
    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        stop = StopSignals()
        stop.install()
        try:
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN and signal.getsignal(signal.SIGTERM) is stop
        finally:
            stop.restore()
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        stop = StopSignals()
        stop.install()
        try:
            assert signal.getsignal(signal.SIGHUP) is stop
        finally:
            stop.restore()
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGHUP, before)
    with pytest.raises(Terminated) as hung_up:
        StopSignals()(signal.SIGHUP, None)
    assert hung_up.value.signum == signal.SIGHUP


@pytest.mark.parametrize("quiet", [True, False])
def test_an_interrupted_run_is_no_error_on_the_progress_line(quiet: bool, capsys: pytest.CaptureFixture[str]) -> None:
    _ProgressLine(quiet)(RunFinished("interrupted", 3, "interrupted"))
    err = capsys.readouterr().err
    assert "error" not in err
    assert err == ("" if quiet else "finished (interrupted) after 3 evaluations\n")


@pytest.mark.parametrize("term, erases", [("xterm-256color", True), ("dumb", False)])
def test_the_progress_line_erases_only_where_the_terminal_can(term: str, erases: bool, monkeypatch) -> None:
    """On a terminal the line overwrites itself with an ANSI erase-line code, which a dumb
    terminal prints as ``^[[K``; there it is a plain line, as in a file."""
    import io

    from workbench.runner.events import Progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setenv("TERM", term)
    monkeypatch.setattr(sys, "stderr", Terminal())
    line = _ProgressLine(False)
    line(Progress(done=8, total=8, failures=0, best_latency_ms=1.0, elapsed_s=1.0, eta_s=0.0))
    said = sys.stderr.getvalue()
    assert said.startswith("[8/8]" if not erases else "\r[8/8]") and ("\x1b[K" in said) is erases


def test_an_interrupt_ends_the_run_as_interrupted_not_as_an_error() -> None:
    """Ctrl-C is the person's doing: the run's end says so, and nothing reports it as a failure."""
    spec = BackendSpec("python", {"path": str(ROOT / "tests" / "fixtures" / "trivial_bench.py")})
    target = PythonBackend.target(spec)
    search = GridSearch(target.space, seed=0)
    engine = Engine(session_for_target(target, spec, search), search, spec, budget=10, pool_factory=InlinePool)
    events: list[Event] = []

    def ctrl_c_at_the_second_trial(event: Event) -> None:
        events.append(event)
        if isinstance(event, TrialFinished) and sum(isinstance(e, TrialFinished) for e in events) == 2:
            raise KeyboardInterrupt

    engine.subscribe(ctrl_c_at_the_second_trial)
    with pytest.raises(KeyboardInterrupt):
        engine.run()
    ends = [event for event in events if isinstance(event, RunFinished)]
    assert ends == [RunFinished("interrupted", 2, "interrupted")] and engine.finished == ends[0]


@pytest.mark.parametrize("before", [0, 1])
def test_a_run_interrupted_before_its_first_trial_leaves_no_journal_to_resume(tmp_path: Path, before: int) -> None:
    """A journal of only its header was left, and the plain retry was refused ("the journal of an
    unsaved run is there ... --resume"), where a failed start with nothing measured leaves nothing.
    A run with trials (here, one before the interrupt) keeps its journal, as before."""
    from workbench.core.domain.session import has_journal, load_session

    spec = BackendSpec("python", {"path": str(ROOT / "tests" / "fixtures" / "trivial_bench.py")})
    target = PythonBackend.target(spec)
    search = GridSearch(target.space, seed=0)
    out = tmp_path / "s.json"
    engine = Engine(session_for_target(target, spec, search), search, spec, budget=10, pool_factory=InlinePool,
                    output=out)
    finished: list[Event] = []

    def ctrl_c(event: Event) -> None:
        if isinstance(event, TrialFinished):
            finished.append(event)
        if len(finished) >= before and event.__class__.__name__ in ("TrialStarted", "TrialFinished"):
            raise KeyboardInterrupt

    engine.subscribe(ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        engine.run()
    assert not out.exists()
    assert has_journal(out) is bool(before)
    if before:
        assert len(load_session(out).trials) == 1


def test_an_interrupted_size_sweep_says_how_far_it_got(tmp_path: Path) -> None:
    """A sweep passes on no size's own end; interrupted, it said nothing at all, where one run says
    ``finished (interrupted) after N evaluations``."""
    from workbench.runner.controller import RunRequest, start_run

    sweep = start_run(RunRequest(kernel="vector_add", backend="sim", executor="inline", budget=3,
                                 backend_options={"compile": "estimate"}, sizes={"n": [4096, 8192]}),
                      tmp_path / "sweep.json")
    events: list[Event] = []

    def ctrl_c_in_the_second_size(event: Event) -> None:
        events.append(event)
        if isinstance(event, TrialFinished) and sum(isinstance(e, TrialFinished) for e in events) == 5:
            raise KeyboardInterrupt

    sweep.subscribe(ctrl_c_in_the_second_size)
    with pytest.raises(KeyboardInterrupt):
        sweep.run()
    assert [e for e in events if isinstance(e, RunFinished)] == [RunFinished("interrupted", 5, "interrupted")]


def test_a_sigterm_that_a_library_turned_into_a_plain_interrupt_is_still_a_sigterm(monkeypatch, capsys):
    """Ray's waits re-raise an interrupt of their own: the Terminated of a SIGTERM arrived as a plain
    KeyboardInterrupt, and tune said "interrupted" and exited 130 instead of 143."""
    import workbench.cli as cli_module

    def command(args):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        except KeyboardInterrupt:
            raise KeyboardInterrupt from None  # what such a library does
        return 0

    monkeypatch.setitem(cli_module.COMMANDS, "kernels", command)
    assert cli_module.main(["kernels"]) == 128 + signal.SIGTERM
    assert capsys.readouterr().err.strip().endswith("terminated")


def test_a_stop_after_the_command_has_ended_is_ignored_not_fatal(tmp_path: Path) -> None:
    """The stop signals' handlers were put back as the command returned: a SIGTERM in the last
    milliseconds (a CI timeout) killed a run that had saved and printed everything (status -15). As
    the program's entry (no arguments) the command ends the process, and a late stop is ignored;
    called with arguments (a test, a script's own process) the handlers from before come back."""
    probe = textwrap.dedent("""
        import signal, sys
        from workbench.cli import main
        sys.argv = ["main.py", "kernels"]
        code = main()
        late = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
        assert code == 0 and late == (signal.SIG_IGN, signal.SIG_IGN), late
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        assert main(["kernels"]) == 0
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # put back when called with arguments
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", probe], cwd=Path(__file__).resolve().parents[1],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr


def test_a_stop_while_the_command_line_is_still_being_imported_is_one_line(monkeypatch, capsys) -> None:
    """A Ctrl-C in the first few tenths of a second, while main.py imported the command line (NumPy,
    the engine), ended the program with a Python traceback: no handler of the command's was in
    place yet to say "interrupted" and exit 130."""
    from workbench import launch

    def interrupted(name: str):
        raise KeyboardInterrupt

    monkeypatch.setattr(launch.importlib, "import_module", interrupted)
    assert launch.main() == 130
    assert capsys.readouterr().err == "interrupted\n"


def test_a_stop_while_the_command_lines_parser_is_being_built_is_one_line(monkeypatch, capsys) -> None:
    """The parser imports more of the program (its lazy imports) before the command's handlers are
    installed: a Ctrl-C then still ended with a Python traceback, 13 of 30 times between 0.28 and
    0.42 s after Enter."""
    from workbench import cli, launch

    def interrupted(*args: object, **kwargs: object):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", interrupted)
    assert launch.main() == 130
    assert capsys.readouterr().err == "interrupted\n"
