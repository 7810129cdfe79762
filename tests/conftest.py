"""Test-wide settings: Qt renders offscreen, caches live in a per-session temp folder."""

import atexit
import os
import shutil
import signal
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("KERNEL_WORKBENCH_CACHE_DIR", os.path.join(tempfile.gettempdir(), "kernel-workbench-test-cache"))
# Settings, recent files and autosaves of every test (and of the programs tests start) go to a
# temporary folder: no test reads or writes the person's own. It goes when the process ends (each
# run of the suite left one per test process behind, hundreds a day in /tmp).
_SANDBOX = tempfile.mkdtemp(prefix="kernel-workbench-test-home-")
atexit.register(shutil.rmtree, _SANDBOX, True)
os.environ["KERNEL_WORKBENCH_CONFIG_DIR"] = os.path.join(_SANDBOX, "config")
os.environ["KERNEL_WORKBENCH_DATA_DIR"] = os.path.join(_SANDBOX, "data")
# A suite started in the background (`cmd &` in a script, nohup) inherits SIGINT or SIGHUP ignored,
# and so would every program a test starts: `tune` rightly keeps a signal that was ignored at its
# start ignored (as under nohup), so the tests that stop one with Ctrl-C or a hang-up would wait
# for it in vain. A signal ignored here is ignored by a handler that does nothing instead: the
# suite still ignores it, and a program started from it gets the default (a handler, unlike an
# ignored disposition, does not survive exec).


def _ignore(signum: int, frame: Any) -> None:
    """Ignore the signal, as the disposition it replaces did."""


#: The signals the suite was started ignoring, for its worker processes (pytest-xdist), which start
#: with the default dispositions because of the handler.
_IGNORED_ENV = "KERNEL_WORKBENCH_TESTS_IGNORED_SIGNALS"
_ignored = {int(part) for part in os.environ.get(_IGNORED_ENV, "").split(",") if part.isdigit()}
for _signum in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
    if signal.getsignal(_signum) is signal.SIG_IGN:
        _ignored.add(int(_signum))
for _signum in _ignored:
    signal.signal(_signum, _ignore)
os.environ[_IGNORED_ENV] = ",".join(str(number) for number in sorted(_ignored))
# No test may silently pick up a real GPU through `auto`: GPU tests opt in with the `gpu` marker.

#: The checkout: commands run from here, as ``python main.py ...`` would be.
ROOT = Path(__file__).resolve().parents[1]
#: Real tuning landscapes every developer and CI machine has beside the checkout (``../shared``).
SHARED_LANDSCAPES = Path(__file__).resolve().parents[2] / "shared" / "landscapes"
#: Set to 1 to skip, instead of fail, the tests that read them (a machine without the shared folder).
SKIP_SHARED_ENV = "KERNEL_WORKBENCH_TESTS_WITHOUT_SHARED"


def shared_landscape(name: str) -> Path:
    """The recorded landscape ``name`` from ``../shared/landscapes``.

    Missing, the test fails with a line saying where the file is expected and how to opt out: a
    silent skip would let CI pass without ever running these tests.
    """
    path = SHARED_LANDSCAPES / name
    if path.is_file():
        return path
    if os.environ.get(SKIP_SHARED_ENV) == "1":
        pytest.skip(f"{path} not present ({SKIP_SHARED_ENV}=1)")
    pytest.fail(f"{path} is missing: these tests read the recorded landscapes in ../shared/landscapes beside the "
                f"checkout (see README, Tests); put the shared folder there, or set {SKIP_SHARED_ENV}=1 to skip them",
                pytrace=False)


@pytest.fixture
def landscape() -> Callable[[str], Path]:
    """:func:`shared_landscape` for a test: ``landscape("name.json")`` -> its path (or a clear failure)."""
    return shared_landscape


def _longest_first(items: list[pytest.Item]) -> None:
    from suite_order import LONGEST_FILES

    rank = {name: position for position, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the longest files first (see ``tests/suite_order.py``); skip `gpu` tests cleanly when
    something they need is missing, saying what: CuPy not installed, CUDA headers or NVRTC not
    found, or no device visible."""
    _longest_first(items)
    if not any("gpu" in item.keywords for item in items):
        return
    from workbench.backends.cuda_env import probe

    missing = probe().missing()
    if not missing:
        return
    skip = pytest.mark.skip(reason="needs a CUDA device: " + "; ".join(missing))
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _import_path_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    """A python benchmark loaded in the test process (an inline run, a backend prepared by a test)
    puts its folder on the import path, as in the worker it would run in: put back after each test,
    so no later test imports from a test's folder (a ``bench.py`` there shadowed the repository's
    ``bench`` scripts)."""
    monkeypatch.setattr(sys, "path", list(sys.path))


@pytest.fixture
def inline_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs planned in this process (the run controller, the window) evaluate their candidates in
    this process too (:class:`workbench.runner.inline.InlinePool`), with no worker process to start.

    For tests whose point is not isolation: the window, sessions, locks, continuation. It also
    covers the tests' own python benchmarks, which a person's run could not take inline, because
    those fixtures neither hang nor crash: their declarations are read in this process too
    (``PythonBackend.target_here``) instead of by a process started for each run. A test of
    timeouts, crashes, worker processes or the declaration reader does not use it. Runs started
    as separate processes (the command line) are not affected: they pass ``--executor inline``
    where they may.
    """
    import dataclasses

    from workbench.backends.python import PythonBackend
    from workbench.runner import controller
    from workbench.runner.executors import ExecutionPlan, ExecutorChoice, plan_execution
    from workbench.runner.inline import InlinePool

    monkeypatch.setattr(PythonBackend, "target", PythonBackend.target_here)

    def plan_inline(spec: Any, choice: ExecutorChoice, workers: int | None = None, **kwargs: Any) -> ExecutionPlan:
        planned = plan_execution(spec, choice, workers, **kwargs)
        if choice.kind != "local" or spec.kind == "cuda":
            return planned
        return dataclasses.replace(planned, pool_factory=InlinePool)

    monkeypatch.setattr(controller, "plan_execution", plan_inline)


@pytest.fixture
def journal_refuses_after(monkeypatch: pytest.MonkeyPatch) -> Callable[[int, str], list[int]]:
    """``install(n, message)``: the run journal takes the first ``n`` trials' lines, then refuses
    every further one with ``message``, as a full disk does; returns the indexes written."""
    from workbench.core.errors import WorkbenchError
    from workbench.runner import engine

    append = engine._GroupSyncedJournal.append

    def install(n: int, message: str) -> list[int]:
        written: list[int] = []

        def full(self: Any, trial: Any) -> None:
            if len(written) == n:
                raise WorkbenchError(message)
            written.append(trial.index)
            append(self, trial)

        monkeypatch.setattr(engine._GroupSyncedJournal, "append", full)
        return written

    return install


@dataclass(frozen=True)
class CliResult:
    """What a command left: its exit status and what it printed (the names of ``subprocess.run``'s result)."""

    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Callable[..., CliResult]:
    """``cli("show", path, "--json")``: the command line's :func:`workbench.cli.main` run in this
    process, from the checkout, with no GPU and ``env`` added to the environment for the call.

    A command costs a function call instead of an interpreter starting and importing NumPy, the
    simulator and (for ``show --json``) scikit-learn. For tests of what a command does and says;
    what only a process of its own shows (its exit through ``main.py``, a kill, a closed pipe)
    stays a subprocess. Usage errors (argparse's ``SystemExit``) come back as their exit status.
    """
    from workbench import cli as cli_module
    from workbench.runner import plan

    def run(*args: object, env: Mapping[str, str] | None = None) -> CliResult:
        capsys.readouterr()  # what the test printed before is not the command's
        with monkeypatch.context() as patch:
            patch.setenv("KERNEL_WORKBENCH_FORCE_NO_GPU", "1")
            for name, value in (env or {}).items():
                patch.setenv(name, value)
            patch.chdir(ROOT)
            # asked once per process: forget what an earlier test's environment answered
            plan.cuda_device_count.cache_clear()
            plan.cuda_missing.cache_clear()
            try:
                code = cli_module.main([str(arg) for arg in args])
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            finally:
                plan.cuda_device_count.cache_clear()
                plan.cuda_missing.cache_clear()
        out, err = capsys.readouterr()
        return CliResult(code, out, err)

    return run
