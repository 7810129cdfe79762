"""A demonstration's pace: simulated and replayed runs start a candidate at most every S seconds
(``tune --delay``, the window's s/eval box), checked where it is given and where a session file
names it, never carried into a later run that did not ask for it, and kept by the run between
candidates: nothing that is not a new candidate waits for it."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from workbench.backends.base import BackendSpec, pace_option
from workbench.core.domain.session import load_session
from workbench.core.errors import WorkbenchError
from workbench.runner.controller import RunRequest, prepare_run

FIXTURES = Path(__file__).parent / "fixtures"


def test_a_paced_simulated_run_starts_a_candidate_per_pace_and_records_it(cli, tmp_path: Path) -> None:
    out = tmp_path / "paced.json"
    start = time.perf_counter()
    done = cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "4",
               "--executor", "inline", "--delay", "0.25", "--quiet", "--out", out)
    elapsed = time.perf_counter() - start
    assert done.returncode == 0, done.stderr
    assert elapsed >= 3 * 0.25  # the first candidate at once, then one per pace
    session = load_session(out)
    assert len(session.trials) == 4 and session.backend["options"]["delay_s"] == 0.25
    starts = sorted(t.started_at for t in session.trials)
    assert min(b - a for a, b in zip(starts, starts[1:])) >= 0.25 - 0.05, starts
    assert load_session(out).backend["options"]["delay_s"] == 0.25  # what it wrote, it reads back


def test_continuing_a_paced_session_without_a_pace_runs_unpaced(cli, tmp_path: Path) -> None:
    """The pace is the run's choice: a session run slowly for an audience and resumed later at the
    desk must not crawl."""
    out = tmp_path / "paced.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "2",
               "--executor", "inline", "--delay", "0.5", "--quiet", "--out", out).returncode == 0
    run = prepare_run(RunRequest(budget=2, executor="inline"), load_session(out), out)
    try:
        assert "delay_s" not in run.spec.options
    finally:
        run.release()
    run = prepare_run(RunRequest(budget=2, executor="inline", backend_options={"delay_s": 0.1}), load_session(out), out)
    try:
        assert run.spec.options["delay_s"] == 0.1
    finally:
        run.release()


@pytest.mark.parametrize("value", ["-1", "nan", "61", "inf"])
def test_a_pace_that_is_not_one_is_one_line(cli, tmp_path: Path, value: str) -> None:
    done = cli("tune", "vector_add", "--backend", "sim", "--budget", "2", "--delay", value,
               "--out", tmp_path / "s.json")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert f"--delay {float(value)}: must be a number of seconds in [0, 60]" in done.stderr
    assert not (tmp_path / "s.json").exists()


def test_a_pace_applies_to_the_simulator_and_replays_only(cli, tmp_path: Path) -> None:
    bench = FIXTURES / "trivial_bench.py"
    done = cli("tune", bench, "--backend", "python", "--budget", "2", "--delay", "0.1", "--out", tmp_path / "s.json")
    assert done.returncode == 2
    assert "--delay applies to the sim and replay backends (the python backend runs at the speed" in done.stderr
    done = cli("gui", "--run", str(bench), "--delay", "0.1", "--quit-when-done")
    assert done.returncode == 2 and "--delay applies to the simulated GPU and to replays" in done.stderr
    done = cli("gui", "--delay", "0.1")
    assert done.returncode == 2 and "--delay applies to a run the window starts" in done.stderr


def test_a_pace_that_is_not_one_is_refused_before_the_run(tmp_path: Path) -> None:
    for value in (-1, float("nan"), 61, "soon", "0.01", True):  # text and bools too: a session file refuses them
        with pytest.raises(WorkbenchError, match="sim backend: delay_s must be"):
            pace_option(BackendSpec("sim", {"kernel": "vector_add", "delay_s": value}))
    with pytest.raises(WorkbenchError, match="sim backend: delay_s must be a number of seconds from 0 to 60, got 61"):
        prepare_run(RunRequest(kernel="vector_add", backend="sim", budget=1, backend_options={"delay_s": 61}),
                    None, tmp_path / "s.json")
    assert not (tmp_path / "s.json").exists()


def test_the_pace_is_per_candidate_whatever_the_workers_and_the_time_limit_ends_its_wait(cli, tmp_path: Path) -> None:
    """Slept inside each evaluation, two workers went twice as fast as the pace said, and a time
    limit was overrun by up to a pace."""
    from workbench.runner.controller import start_run
    from workbench.runner.events import TrialStarted

    run = start_run(RunRequest(kernel="vector_add", backend="sim", budget=4, workers=2,
                               backend_options={"compile": "estimate", "delay_s": 0.4}), tmp_path / "two.json")
    starts: list[float] = []
    run.subscribe(lambda event: starts.append(time.monotonic()) if isinstance(event, TrialStarted) else None)
    run.run()
    assert len(starts) == 4  # two workers, one candidate per pace: never two at once
    assert min(b - a for a, b in zip(starts, starts[1:])) >= 0.4 - 0.05, starts
    limited = tmp_path / "limited.json"
    start = time.perf_counter()
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "50",
               "--executor", "inline", "--delay", "5", "--time-limit", "1", "--quiet", "--out", limited).returncode == 0
    assert time.perf_counter() - start < 4  # the wait for the next candidate ended with the limit
    assert len(load_session(limited).trials) == 1


def test_model_predictions_do_not_wait_for_the_pace(cli, tmp_path: Path) -> None:
    """--prune ranks proposals with simulator evaluations of the run's own options: they slept the
    pace each, hidden (a quarter of the proposals measured took three times as long)."""
    out = tmp_path / "pruned.json"
    start = time.perf_counter()
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "3",
               "--executor", "inline", "--delay", "0.3", "--prune", "0.25", "--quiet", "--out", out).returncode == 0
    assert time.perf_counter() - start < 3 * 0.3 + 2.0
    assert len(load_session(out).trials) == 3


@pytest.mark.parametrize("value", [-0.5, 1e9, "0.5", True])
def test_a_session_file_naming_a_pace_that_is_not_one_is_refused_when_it_opens(tmp_path: Path, value: object) -> None:
    """A session's pace is restored into the window and slept when the session is continued: a
    file naming 10^9 seconds would have hung a run with no timeout around it."""
    doc = json.loads((FIXTURES / "session_golden.json").read_text())
    doc.setdefault("backend", {"kind": "sim", "options": {}}).setdefault("options", {})["delay_s"] = value
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(WorkbenchError, match="backend.options.delay_s: .* is not a pace from 0 to 60 seconds"):
        load_session(path)


def test_a_paced_run_whose_strategy_is_done_ends_at_once_and_its_eta_counts_the_pace(tmp_path: Path) -> None:
    """The strategy was asked only when the pace allowed, so a replay of three recorded configs
    idled a whole pace after its last one before ending "exhausted"; and the time to go was the
    average so far, which the first candidate (at once) made far too short."""
    from workbench.runner.controller import start_run
    from workbench.runner.events import Progress

    recording = tmp_path / "rec.json"
    assert start_run(RunRequest(kernel="vector_add", backend="sim", budget=3, backend_options={"compile": "estimate"},
                                executor="inline"), recording).run().evaluations == 3
    run = start_run(RunRequest(replay=str(recording), budget=10, executor="inline", backend_options={"delay_s": 0.6}),
                    tmp_path / "replayed.json")
    from workbench.runner.events import TrialStarted

    etas: list[tuple[int, float]] = []
    run.subscribe(lambda event: etas.append((event.done, event.eta_s))
                  if isinstance(event, Progress) and event.eta_s is not None else None)
    starts: list[float] = []  # timed from the first candidate: the run's start varies with the load
    run.subscribe(lambda event: starts.append(time.perf_counter()) if isinstance(event, TrialStarted) else None)
    finished = run.run()
    elapsed = time.perf_counter() - starts[0]
    assert finished.reason == "exhausted" and finished.evaluations == 3
    assert 2 * 0.6 <= elapsed < 3 * 0.6  # the third candidate's turn, not a fourth pace
    assert all(eta >= (10 - done) * 0.6 for done, eta in etas if done < 3), etas


def test_the_pace_holds_across_the_sizes_of_a_sweep(tmp_path: Path) -> None:
    """Each size is an engine of its own, whose first candidate started at once: two candidates
    back to back at every size boundary."""
    from workbench.runner.controller import start_run
    from workbench.runner.events import TrialStarted

    run = start_run(RunRequest(kernel="vector_add", backend="sim", budget=2, executor="inline",
                               sizes={"n": [4096, 8192]}, backend_options={"compile": "estimate", "delay_s": 0.4}),
                    tmp_path / "sweep.json")
    starts: list[float] = []
    run.subscribe(lambda event: starts.append(time.monotonic()) if isinstance(event, TrialStarted) else None)
    run.run()
    assert len(starts) == 4
    assert min(b - a for a, b in zip(starts, starts[1:])) >= 0.4 - 0.05, starts


def test_a_pace_shorter_than_the_engines_poll_is_waited_for_no_longer(cli, tmp_path: Path, monkeypatch) -> None:
    """Waiting for the pace's next turn, the run polled its workers for the poll's whole period
    (0.05 s): any --delay below it paced at 0.05 s (2,000 candidates at 0.002 s took 45 to 51 ms
    each). Each wait now ends at the turn."""
    from workbench.runner.inline import InlinePool

    waits: list[float] = []
    original = InlinePool.poll

    def watched(self, timeout: float = 0.0) -> None:
        waits.append(timeout)
        original(self, timeout)

    monkeypatch.setattr(InlinePool, "poll", watched)
    done = cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "6",
               "--executor", "inline", "--delay", "0.01", "--quiet", "--out", tmp_path / "s.json")
    assert done.returncode == 0, done.stderr
    assert waits and max(waits) <= 0.01, waits


@pytest.mark.parametrize("flag", ["--delay", "--time-limit", "--timeout", "--compile-timeout", "--refine-wait"])
def test_a_duration_with_a_unit_is_refused_saying_the_flag_takes_seconds(cli, tmp_path: Path, flag: str) -> None:
    """``--time-limit 90s`` was refused as "invalid float value: '90s'", which did not say what the flag takes."""
    done = cli("tune", "vector_add", "--backend", "sim", "--budget", "2", flag, "90s", "--out", tmp_path / "s.json")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert f"argument {flag}: '90s' is not a number of seconds" in done.stderr
