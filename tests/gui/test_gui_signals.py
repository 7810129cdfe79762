"""Ctrl-C (SIGINT) or SIGTERM to the window's process closes it as its Close action would: a run
going is stopped and its trials saved, and the process exits with a status, no traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from processes import IN_TERMINAL_SESSION, Terminal

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.timeout(90), pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")]


def _window(tmp_path: Path, *flags: str, terminal: int | None = None) -> tuple[subprocess.Popen[str], Path]:
    """The window in a subprocess; with ``terminal`` (a pseudo-terminal's follower end) in a session
    of its own whose controlling terminal, stdin, stdout and stderr that is, as when it is started
    from a terminal window or over ssh."""
    autosaves = tmp_path / "autosave"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "KERNEL_WORKBENCH_FORCE_NO_GPU": "1",
           "KERNEL_WORKBENCH_DATA_DIR": str(tmp_path / "data"), "KERNEL_WORKBENCH_CONFIG_DIR": str(tmp_path / "config"),
           "KERNEL_WORKBENCH_AUTOSAVE_DIR": str(autosaves), "PYTHONPATH": str(ROOT)}
    command = [sys.executable, str(ROOT / "main.py"), "gui", "--run", "vector_add", "--backend", "sim", *flags]
    if terminal is not None:
        return subprocess.Popen([*IN_TERMINAL_SESSION, *command], cwd=ROOT, env=env, stdin=terminal,
                                stdout=terminal, stderr=terminal, text=True), autosaves
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc, autosaves


def _wait_for(condition, proc: subprocess.Popen[str], what: str, seconds: float = 40.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if proc.poll() is not None:
            pytest.fail(f"the window ended before {what}: {proc.communicate()[1][-2000:]}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"no {what} within {seconds:g} s: {proc.communicate()[1][-2000:]}")
        time.sleep(0.05)


def _ended(proc: subprocess.Popen[str], seconds: float = 15.0) -> str:
    """Its stderr once it has exited; the test fails (and the window is killed) if it has not in time."""
    try:
        return proc.communicate(timeout=seconds)[1]
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"the window still runs {seconds:g} s after the signal: {proc.communicate()[1][-2000:]}")


def _journal_lines(folder: Path) -> int:
    return sum(path.read_text().count("\n") for path in folder.glob("*.journal")) if folder.is_dir() else 0


def _trials(folder: Path) -> int:
    from workbench.core.domain.session import load_session

    sessions = [path for path in folder.glob("*.json")]
    assert len(sessions) == 1, sorted(os.listdir(folder))
    return len(load_session(sessions[0]).trials)


def test_ctrl_c_stops_the_windows_run_keeps_its_trials_and_exits(tmp_path: Path) -> None:
    proc, autosaves = _window(tmp_path, "--budget", "100000")
    try:
        _wait_for(lambda: _journal_lines(autosaves) >= 6, proc, "trials journaled")
        proc.send_signal(signal.SIGINT)
        err = _ended(proc)
        assert proc.returncode == 128 + signal.SIGINT, err
        assert "Traceback" not in err and "KeyboardInterrupt" not in err and "interrupted" in err.splitlines(), err
        # the run was going: stopped, and saved whole to its autosave for the next start to offer
        assert _trials(autosaves) >= 5
        assert not list(autosaves.glob("*.lock"))
    finally:
        proc.kill()
        proc.communicate()


def test_sigterm_closes_a_window_whose_run_has_ended_keeping_its_unsaved_trials(tmp_path: Path) -> None:
    """The person's window holds a finished run nobody saved: closing would ask whether to save
    it; with nobody to ask, its autosave stays for the next start to offer, as after a crash."""
    proc, autosaves = _window(tmp_path, "--budget", "5")
    try:
        # the run's end: its autosave saved whole and the journal gone (the window keeps holding the
        # autosave's lock while it shows that unsaved session, so the lock file stays)
        _wait_for(lambda: autosaves.is_dir() and list(autosaves.glob("*.json"))
                  and not list(autosaves.glob("*.journal")) and _trials(autosaves) == 5, proc, "the run's end")
        time.sleep(0.5)  # the window shows the end it was told of
        proc.send_signal(signal.SIGTERM)
        err = _ended(proc)
        assert proc.returncode == 128 + signal.SIGTERM, err
        assert "Traceback" not in err and "terminated" in err.splitlines(), err
        assert _trials(autosaves) == 5
    finally:
        proc.kill()
        proc.communicate()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_an_automated_run_interrupted_exits_with_the_signals_status(tmp_path: Path, signum: int) -> None:
    """SIGHUP (the terminal the window was started from gone) is taken as SIGTERM; it used to end
    the process where it stood."""
    proc, autosaves = _window(tmp_path, "--budget", "100000", "--quit-when-done")
    try:
        _wait_for(lambda: _journal_lines(autosaves) >= 3, proc, "trials journaled")
        proc.send_signal(signum)
        err = _ended(proc)
        assert proc.returncode == 128 + signum, err
        assert "Traceback" not in err and "terminated" in err.splitlines(), err
        # no SESSION named: its trials stay in the autosave, and the last line says where (it said nothing)
        kept = list(autosaves.glob("*.json"))
        assert len(kept) == 1 and err.splitlines()[-1].startswith("note: the ") \
            and f"measured are kept in {kept[0]} (the window's autosave)" in err.splitlines()[-1], err
    finally:
        proc.kill()
        proc.communicate()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_run_into_a_new_session_file_interrupted_is_saved_there(tmp_path: Path, signum: int) -> None:
    """``gui NEW.json --run ... --quit-when-done`` stopped by a signal: its trials went to an
    autosave (which an automated window otherwise never leaves, and a person's next start offered
    as a crashed run) and NEW.json was never written, where its end would have written it."""
    from workbench.core.domain.session import load_session

    target = tmp_path / "new.json"
    proc, autosaves = _window(tmp_path, "--budget", "100000", "--quit-when-done", str(target))
    try:
        _wait_for(lambda: _journal_lines(autosaves) >= 3, proc, "trials journaled")
        proc.send_signal(signum)
        err = _ended(proc)
        assert proc.returncode == 128 + signum, err
        assert "Traceback" not in err, err
        assert len(load_session(target).trials) >= 3
        assert not list(autosaves.glob("*.json")) and not list(autosaves.glob("*.journal"))
    finally:
        proc.kill()
        proc.communicate()


def test_closing_the_terminal_of_a_window_with_a_run_going_stops_it_and_keeps_its_trials(tmp_path: Path) -> None:
    """The kernel hangs the terminal up and sends SIGHUP: the window closes as on SIGTERM, with
    SIGHUP's status, although its last line ("terminated") goes to a terminal that is gone (a
    write there fails, EIO, and used to cut the close short before the run was stopped)."""
    terminal = Terminal()
    try:
        proc, autosaves = _window(tmp_path, "--budget", "100000", terminal=terminal.follower)
    finally:
        terminal.started()
    try:
        _wait_for(lambda: (terminal.drain(), _journal_lines(autosaves) >= 6)[1], proc, "trials journaled")
        terminal.hang_up()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the window still runs 15 s after its terminal hung up: {terminal.tail()}")
        assert proc.returncode == 128 + signal.SIGHUP, terminal.tail()
        assert _trials(autosaves) >= 5
        assert not list(autosaves.glob("*.lock"))
    finally:
        terminal.hang_up()
        proc.kill()
        proc.wait()


def test_a_window_started_under_nohup_keeps_sighup_ignored(qapp) -> None:
    """``nohup`` ignores SIGHUP so that what it starts outlives the terminal: the relay leaves it
    so, while SIGINT and SIGTERM still close the window; closing gives everything back."""
    from workbench.gui.app import SignalRelay

    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        relay = SignalRelay(lambda signum: None)
        try:
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) == relay._note
        finally:
            relay.close()
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        relay = SignalRelay(lambda signum: None)
        try:
            assert signal.getsignal(signal.SIGHUP) == relay._note
        finally:
            relay.close()
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGHUP, before)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_signal_while_the_window_is_made_is_held_until_it_runs(tmp_path: Path, signum: int) -> None:
    """A Ctrl-C or SIGTERM in the first second and a half raised wherever the interpreter was, often
    inside one of Qt's virtual methods as the window was built: a segmentation fault or a fatal
    error, about one start in twelve. The signal is now held until the window runs, and ends it
    as a signal does then (its line, its status, no traceback)."""
    code = (
        "import os, signal, sys\n"
        "from workbench.gui import main_window\n"
        "made = main_window.MainWindow.__init__\n"
        "def stopped_while_made(self, *args, **kwargs):\n"
        f"    os.kill(os.getpid(), {int(signum)})\n"
        "    made(self, *args, **kwargs)\n"
        "    print('made', file=sys.stderr, flush=True)\n"
        "main_window.MainWindow.__init__ = stopped_while_made\n"
        "sys.argv = ['main.py', 'gui', '--run', 'vector_add', '--backend', 'sim', '--budget', '3', '--quit-when-done']\n"
        "from workbench import launch\n"
        "sys.exit(launch.main())\n")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "KERNEL_WORKBENCH_FORCE_NO_GPU": "1",
           "KERNEL_WORKBENCH_DATA_DIR": str(tmp_path / "data"), "KERNEL_WORKBENCH_CONFIG_DIR": str(tmp_path / "config"),
           "KERNEL_WORKBENCH_AUTOSAVE_DIR": str(tmp_path / "autosave"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    lines = done.stderr.splitlines()
    assert done.returncode == 128 + signum, done.stderr
    assert "made" in lines and ("interrupted" if signum == signal.SIGINT else "terminated") in lines, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    # nothing of the command started: no run, so no autosave left for the next start to offer
    assert not list((tmp_path / "autosave").glob("*.json")), done.stderr
