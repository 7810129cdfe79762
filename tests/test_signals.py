"""What Ctrl-C, SIGTERM and SIGKILL do to a ``tune``: it ends promptly, keeps its trials, and
leaves neither a process its candidates started nor its workers' temporary folder behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.backends.base import BackendSpec
from workbench.backends.python import PythonBackend
from workbench.cli import _ProgressLine
from workbench.runner.engine import Engine, session_for_target
from workbench.runner.events import Event, RunFinished, TrialFinished
from workbench.runner.inline import InlinePool
from workbench.search.grid import GridSearch

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.timeout(90)]


@pytest.mark.parametrize("quiet", [True, False])
def test_an_interrupted_run_is_no_error_on_the_progress_line(quiet: bool, capsys: pytest.CaptureFixture[str]) -> None:
    _ProgressLine(quiet)(RunFinished("interrupted", 3, "interrupted"))
    err = capsys.readouterr().err
    assert "error" not in err
    assert err == ("" if quiet else "finished (interrupted) after 3 evaluations\n")


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
