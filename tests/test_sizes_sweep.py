"""Size sweeps: one tuning per size in one session, warm starts, resuming, measuring missing cells
(workbench.runner.sweep, the controller's sizes, ``tune --sizes``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from cli_errors import one_line_error

from workbench.core.errors import WorkbenchError
from workbench.core.domain.session import journal_path, load_session, problem_key, save_session
from workbench.core.domain.size_analysis import cross_matrix, missing_cells, size_rows
from workbench.core.domain.sizes import (
    SweepPlan,
    best_configs,
    problems_of,
    size_distance,
    sweep_plan,
    trials_by_problem,
    warm_start_configs,
)
from workbench.runner.controller import RunRequest, prepare_cells, start_run
from workbench.search.seeded import Seeded

ROOT = Path(__file__).resolve().parents[1]
SIZES = {"n": [4096, 1 << 16, 1 << 20]}
# Sweeps run in this process evaluate inline (what is tested is the sweep, not isolation), and so
# do the command lines run here (the `cli` fixture); a killed sweep is a process of its own.
pytestmark = pytest.mark.usefixtures("inline_runs")


def sweep(out: Path, budget: int = 6, **fields) -> object:
    request = RunRequest(kernel="vector_add", backend="sim", strategy="random", budget=budget,
                         sizes=fields.pop("sizes", SIZES), **fields)
    run = start_run(request, out)
    run.run()
    return run


def test_cli_sweep_writes_one_session_with_a_tuning_per_size(cli, tmp_path: Path) -> None:
    out = tmp_path / "sweep.json"
    result = cli("tune", "vector_add", "--backend", "sim", "--sizes", "n=4096,65536", "--sizes", "alpha=1.0,3.0",
                 "--budget", "4", "--out", str(out), "--quiet")
    assert result.returncode == 0, result.stderr
    session = load_session(out)
    problems = problems_of(session)
    assert [(p["n"], p["alpha"]) for p in problems] == [(4096, 1.0), (4096, 3.0), (65536, 1.0), (65536, 3.0)]
    assert all(len(g) == 4 for g in trials_by_problem(session).values())
    assert all(t.problem is not None for t in session.trials)
    plan = sweep_plan(session)
    assert plan is not None and plan.budget == 4 and dict(plan.sizes) == {"n": (4096, 65536), "alpha": (1.0, 3.0)}
    assert "n=4096, alpha=1.0" in result.stdout and "4 sizes" in result.stdout  # a float as show writes it
    # the trials of each size ran at that size (the simulator's latency grows with n)
    rows = size_rows(session)
    assert rows[0].best_latency <= rows[-1].best_latency
    # a size where every trial succeeded but none meets the constraints says why, not "nothing succeeded"
    shown = json.loads(cli("show", out, "--json", "--max-latency-ms", "0.000001").stdout)
    assert [(size["feasible"], size["best"]) for size in shown["sizes"]] == [(0, None)] * 4
    assert all("latency_ms <= 1e-06 excludes 4" in size["why_none"] for size in shown["sizes"])
    text = cli("show", out, "--max-latency-ms", "0.000001").stdout
    assert "nothing succeeded" not in text and text.count("trials, nothing feasible: ") == 4
    assert json.loads(cli("show", out, "--json").stdout)["sizes"][0]["why_none"] is None


def _seeds_before(session, trials_so_far, problem, default):
    """What the warm start should measure first at ``problem``, given the trials before it."""
    earlier = session.__class__(**{**session.__dict__, "trials": list(trials_so_far)})
    return [c for c in warm_start_configs(earlier, problem) if c != default]


def test_each_new_size_first_measures_the_nearest_sizes_best_configs(tmp_path: Path) -> None:
    run = sweep(tmp_path / "warm.json", budget=8)
    session = run.session
    first, second, third = trials_by_problem(session).values()
    default = session.trials[0].config
    assert first[0].config == default and second[0].config == default and third[0].config == default
    # size 2: after its default, the best configs of size 1 (its only measured neighbour)
    seeds = _seeds_before(session, first, session.problem_of(second[0]), default)
    assert seeds and set(seeds) <= {t.config for t in best_configs(first, 2)}
    assert [t.config for t in second[1:1 + len(seeds)]] == seeds
    # size 3 (n=2^20) is nearer 2^16 than 4096: that size's best comes first, then size 1's
    seeds = _seeds_before(session, first + second, session.problem_of(third[0]), default)
    assert [t.config for t in third[1:1 + len(seeds)]] == seeds
    best_of_second = best_configs(second, 1)[0].config
    assert best_of_second == default or seeds[0] == best_of_second


def test_no_warm_start_leaves_the_strategy_alone(tmp_path: Path) -> None:
    request = RunRequest(kernel="vector_add", backend="sim", strategy="random", budget=3, sizes=SIZES,
                         warm_start=False)
    run = start_run(request, tmp_path / "cold.json")
    try:
        session = run.session
        assert sweep_plan(session).warm_start is False
        size_run = run._prepare(run.todo[1].problem, 3)
        assert not isinstance(size_run.engine.strategy, Seeded)
    finally:
        run.release()


def test_warm_start_configs_picks_nearest_sizes_on_a_log_scale(tmp_path: Path) -> None:
    run = sweep(tmp_path / "w.json", budget=4, sizes={"n": [1024, 1 << 20]})
    session = run.session
    small, large = list(trials_by_problem(session).values())
    near_small = warm_start_configs(session, {**session.problem, "n": 2048}, neighbours=1, per_size=1)
    near_large = warm_start_configs(session, {**session.problem, "n": 1 << 19}, neighbours=1, per_size=1)
    assert near_small == [best_configs(small, 1)[0].config]
    assert near_large == [best_configs(large, 1)[0].config]
    # distances are on a log scale; a parameter that is not a number is no size: differing is no neighbour
    assert size_distance({"n": 1024}, {"n": 2048}, ["n"]) == pytest.approx(size_distance({"n": 1 << 20}, {"n": 1 << 21}, ["n"]), rel=1e-3)
    assert size_distance({"n": 1, "dtype": "f32"}, {"n": 1, "dtype": "f64"}, ["n"]) == float("inf")


def test_a_stopped_sweep_resumes_with_the_sizes_not_done(tmp_path: Path) -> None:
    out = tmp_path / "stopped.json"
    request = RunRequest(kernel="vector_add", backend="sim", strategy="random", budget=5, sizes=SIZES)
    run = start_run(request, out)
    seen = []

    def stop_in_second_size(event) -> None:
        if type(event).__name__ == "TrialFinished":
            seen.append(event)
            if len(seen) == 7:
                run.stop()

    run.subscribe(stop_in_second_size)
    finished = run.run()
    assert finished.reason == "stopped"
    partial = load_session(out)
    counts = [len(g) for g in trials_by_problem(partial).values()]
    assert counts[0] == 5 and 2 <= counts[1] < 5 and len(counts) == 2
    resumed = start_run(RunRequest(), out, resume=True)
    resumed.run()
    final = load_session(out)
    assert [len(g) for g in trials_by_problem(final).values()] == [5, 5, 5]
    assert [t.config.id for t in final.trials[: len(partial.trials)]] == [t.config.id for t in partial.trials]
    # nothing left to do: said in one line; a larger budget per size measures more of each
    with pytest.raises(WorkbenchError, match="every size of the sweep already has 5 evaluations or more, the 5 per size asked for") as done:
        start_run(RunRequest(), out, resume=True)
    assert "raise --budget (evaluations per size) or add sizes to --sizes" in str(done.value)  # the CLI's words
    more = start_run(RunRequest(budget=6, sizes={"n": [256]}), out, resume=True)
    more.run()
    again = load_session(out)
    assert sorted(len(g) for g in trials_by_problem(again).values()) == [6, 6, 6, 6]
    assert problems_of(again)[-1]["n"] == 256


def test_a_sweeps_progress_counts_failures_and_time_over_every_size(tmp_path: Path) -> None:
    """Each size's run counts from zero; the sweep's progress line adds what the sizes before it
    counted, so failures and elapsed time never go back (they did at each new size)."""
    import uuid

    from test_sim_backend import _shared_memory_template

    from workbench.runner.events import Progress

    _shared_memory_template(tmp_path, uuid.uuid4().hex)
    request = RunRequest(kernel="big", backend="sim", kernel_dirs=(str(tmp_path),), strategy="grid", budget=3,
                         sizes={"n": [256, 512, 1024]})
    run = start_run(request, tmp_path / "sweep.json")
    progress: list[Progress] = []
    run.subscribe(lambda event: progress.append(event) if isinstance(event, Progress) else None)
    run.run()
    failed = [t for t in load_session(tmp_path / "sweep.json").trials if t.status.failed]
    assert len(failed) == 3  # k = 3 at every size
    assert progress[-1].done == 9 and progress[-1].failures == 3
    for before, after in zip(progress, progress[1:]):
        assert after.done >= before.done and after.failures >= before.failures
        assert after.elapsed_s >= before.elapsed_s


def test_a_sweep_whose_size_fails_to_start_is_not_saved(tmp_path: Path) -> None:
    """``saved`` said True when a size's preparation failed after the first size's save (or
    before any): the window took the file for holding every trial and dropped its ``*``."""
    run = start_run(RunRequest(kernel="vector_add", backend="sim", strategy="random", budget=2, sizes=SIZES,
                               backend_options={"compile": "estimate"}), tmp_path / "s.json")
    build, calls = run._prepare, []

    def failing_second(problem, budget):
        calls.append(problem)
        if len(calls) == 2:
            raise WorkbenchError("the second size cannot start")
        return build(problem, budget)

    run._prepare = failing_second
    with pytest.raises(WorkbenchError, match="second size"):
        run.run()
    assert len(calls) == 2 and not run.saved


def test_a_sweeps_running_time_and_eta_count_the_time_between_its_sizes(tmp_path: Path) -> None:
    """Preparing a size (its target, its warm start) is part of what a sweep takes: each size's run
    clock starts after it, so a sweep that added those clocks up showed too little time gone and an
    ETA too short by the preparation of every size still to come."""
    from workbench.runner.events import Progress

    run = start_run(RunRequest(kernel="vector_add", backend="sim", strategy="random", budget=4, sizes=SIZES),
                    tmp_path / "slow.json")
    prepare_s = 0.4
    build = run._prepare

    def slow_prepare(problem, budget):
        time.sleep(prepare_s)
        return build(problem, budget)

    run._prepare = slow_prepare
    progress: list[Progress] = []
    run.subscribe(lambda event: progress.append(event) if isinstance(event, Progress) else None)
    started = time.monotonic()
    run.run()
    took = time.monotonic() - started
    last = progress[-1]
    assert last.done == 12
    # the three preparations are in the running time (and nothing beyond the sweep's own wall time)
    assert 3 * prepare_s <= last.elapsed_s <= took
    first_of_second_size = next(p for p in progress if p.done == 5)
    # after the first size, at least one preparation is behind us: the ETA's rate includes it, so
    # the two sizes left are predicted to take at least their two preparations
    assert first_of_second_size.eta_s is not None and first_of_second_size.eta_s >= 2 * prepare_s * 7 / 8


def test_continuing_a_sweep_with_set_at_one_of_its_sizes_says_a_sweep_goes_on_at_every_size(cli, tmp_path: Path) -> None:
    """``--set n=4096`` on a sweep measured at n=4096 was refused as "another problem; start a new
    session", which the sweep's own size is not: a continued sweep goes on at all its sizes."""
    out = tmp_path / "sw.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--set", "n=1024",
               "--sizes", "n=1024,4096", "--budget", "2", "--quiet", "--out", str(out)).returncode == 0
    before = out.read_bytes()
    result = cli("tune", "--resume", str(out), "--set", "n=4096", "--budget", "3", "--quiet")
    assert result.returncode == 2 and result.stderr == (
        "error: --set n=4096: this session is a size sweep, and a continued run goes on at every one of its 2 sizes "
        "(--budget per size, --sizes to add sizes), so --set cannot pick one; drop it\n")
    assert out.read_bytes() == before
    # the session's own problem, named again, is what it has: the sweep goes on at every size (docs/cli.md)
    own = cli("tune", "--resume", str(out), "--set", "n=1024", "--budget", "3", "--quiet")
    assert own.returncode == 0 and own.stderr == "", own.stderr
    shown = json.loads(cli("show", out, "--json").stdout)
    assert shown["trials"] == 6
    # the budget said is per size, the sweep's (the run recorded its last size's engine total, 5)
    assert shown["search"]["budget"] == shown["sweep"]["budget"] == 3


def test_a_killed_sweep_resumes_from_its_journal(cli, tmp_path: Path) -> None:
    out = tmp_path / "killed.json"
    budget = 20  # per size: a wide window for the kill to land inside the 2nd size on a loaded machine
    first = subprocess.Popen([sys.executable, str(ROOT / "main.py"), "tune", "vector_add", "--backend", "sim",
                              "--strategy", "random", "--sizes", "n=4096,65536,1048576", "--budget", str(budget),
                              "--out", str(out), "--quiet"], cwd=ROOT,
                             env={**os.environ, "KERNEL_WORKBENCH_FORCE_NO_GPU": "1"},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        text = journal_path(out).read_text() if journal_path(out).exists() else ""
        if text.count('"problem"') >= budget + 3 + 1:  # the header's and budget + 3 trials': inside the 2nd size
            break
        time.sleep(0.02)
    first.send_signal(signal.SIGKILL)
    assert first.wait(30) == -signal.SIGKILL, "the sweep finished before it could be killed"
    recovered = load_session(out)
    assert budget < len(recovered.trials) < 3 * budget and sweep_plan(recovered) is not None
    done = cli("tune", "--out", str(out), "--resume", "--quiet")
    assert done.returncode == 0, done.stderr
    final = load_session(out)
    assert [len(g) for g in trials_by_problem(final).values()] == [budget, budget, budget]
    assert [t.config.id for t in final.trials[: len(recovered.trials)]] == [t.config.id for t in recovered.trials]


@pytest.mark.parametrize(
    "flags, fragment",
    [
        (["--sizes", "n=0,4096"], "--sizes: vector_add: problem parameter n=0 is outside"),
        (["--sizes", "bogus=1,2"], "--sizes: vector_add: unknown problem parameter 'bogus'"),
        (["--sizes", "n="], "--sizes 'n=': expected NAME=V1,V2"),
        (["--sizes", ";"], "--sizes ';': expected NAME=V1,V2"),  # not a plain run of one size
        (["--sizes", ""], "--sizes '': expected NAME=V1,V2"),
        (["--sizes", "n=4,4"], "--sizes n: 4 is listed twice"),
        (["--sizes", "n=1000,1e3"], "--sizes n: 1e3 is listed twice"),  # one size once typed: was merged silently
        (["--sizes", "alpha=1,1.0"], "--sizes alpha: 1.0 is listed twice"),
        (["--sizes", "n=4", "--sizes", "n=8"], "--sizes n: given twice"),
        (["--sizes", "n=" + ",".join(str(i) for i in range(1, 300))], "more than the 256 a sweep may hold"),
        (["--sizes", "n=abc"], "--sizes: vector_add: problem parameter n must be an integer"),
        (["--sizes", "alpha=1e-400,1"], "'1e-400' is too small to tell from 0"),  # it ran at alpha=0.0
        (["--set", "alpha=-2.5e-999"], "'-2.5e-999' is too small to tell from 0"),
    ],
)
def test_bad_sizes_are_refused_in_one_line_before_anything_is_written(cli, tmp_path: Path, flags: list[str],
                                                                      fragment: str) -> None:
    out = tmp_path / "bad.json"
    line = one_line_error(cli("tune", "vector_add", "--backend", "sim", "--budget", "2", *flags, "--out", str(out)))
    assert fragment in line
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_sizes_of_a_recording_are_refused(cli, tmp_path: Path, landscape) -> None:
    recording = landscape("pnpoly_RTX_3090.json")
    line = one_line_error(cli("tune", "--replay", str(recording), "--sizes", "n=1,2", "--budget", "2",
                              "--out", str(tmp_path / "r.json")))
    assert "--sizes" in line and "has one fixed problem (a recording)" in line


def test_sizes_of_a_python_benchmark_are_refused_naming_what_it_is(cli, tmp_path: Path) -> None:
    bench = Path(__file__).resolve().parent / "fixtures" / "trivial_bench.py"
    line = one_line_error(cli("tune", bench, "--sizes", "n=1,2", "--budget", "2", "--out", tmp_path / "p.json"))
    assert "has one fixed problem (a python benchmark); sweeping sizes needs a template" in line


def test_a_hostile_sweep_plan_in_a_file_is_refused_in_one_line(cli, tmp_path: Path) -> None:
    run = sweep(tmp_path / "h.json", budget=2, sizes={"n": [4096, 8192]})
    path = Path(run.output)
    for plan, fragment in [({"sizes": {"n": [1, 2]}, "budget": -1}, "extra.sweep.budget"),
                           ({"sizes": {"evil": [1]}, "budget": 2}, "not a parameter of the session's problem"),
                           ({"sizes": {"n": [[1]]}, "budget": 2}, "is not a problem value"),
                           ({"sizes": "n=1", "budget": 2}, "extra.sweep.sizes")]:
        data = json.loads(path.read_text())
        data["extra"]["sweep"] = plan
        path.write_text(json.dumps(data))
        line = one_line_error(cli("tune", "--out", str(path), "--resume", "--quiet"))
        assert fragment in line and line.startswith(f"error: {path}: extra.sweep"), line
        # read as the file opens: show and export said nothing of it and dropped the sweep's notes
        for command in (("show", path), ("export", path, "--format", "dispatch", "--out", tmp_path / "d.h")):
            assert one_line_error(cli(*command)) == line


def test_every_plan_the_program_writes_is_one_its_loader_reads(tmp_path: Path) -> None:
    """The plan is read as the file loads: a budget a run takes (up to 2**63-1) past the plan's own
    bound (10**9) made a run measure its trials and then fail to save them, its journal refused too."""
    from workbench.core.domain.run_settings import MAX_COUNT
    from workbench.core.domain.session import Session, MAX_NAME_CHARS, MAX_PROBLEM_PARAMETERS
    from workbench.core.domain.sizes import SweepPlan, set_sweep_plan

    names = [f"p{i:02d}" + "x" * (MAX_NAME_CHARS - 3) for i in range(MAX_PROBLEM_PARAMETERS)]
    problem = {name: "\U0001f600" * MAX_NAME_CHARS for name in names}  # the longest key a problem has
    session = Session(kernel="k", problem=problem)
    plan = SweepPlan({names[0]: (problem[names[0]], "b")}, MAX_COUNT).with_end(problem, "plateau", 3)
    set_sweep_plan(session, plan)
    save_session(session, tmp_path / "s.json")
    assert sweep_plan(load_session(tmp_path / "s.json")) == plan


def test_missing_cells_are_measured_on_request(tmp_path: Path) -> None:
    run = sweep(tmp_path / "cells.json", budget=4)
    session = load_session(run.output)
    rows = size_rows(session)
    cells = missing_cells(rows)
    matrix = cross_matrix(rows)
    assert all(matrix[i, i] == 1.0 for i in range(len(rows)))
    if not cells:  # every size's winner was measured everywhere already (warm start): remove one
        victim = rows[0].best_config
        session.trials = [t for t in session.trials
                          if not (t.config == victim and problem_key(session.problem_of(t)) == rows[-1].key)]
        save_session(session, run.output)
        session = load_session(run.output)
        cells = missing_cells(size_rows(session))
    assert cells
    before = len(session.trials)
    cell_run = prepare_cells(RunRequest(), session, run.output, cells)
    finished = cell_run.run()
    assert finished.evaluations == len(cells)
    after = load_session(run.output)
    assert len(after.trials) == before + len(cells)
    assert missing_cells(size_rows(after)) == []
    assert not (cross_matrix(size_rows(after)) != cross_matrix(size_rows(after))).any()  # no NaN left


def test_show_lists_each_size_and_refuses_a_hostile_trial_problem_in_one_line(cli, tmp_path: Path) -> None:
    run = sweep(tmp_path / "show.json", budget=2, sizes={"n": [4096, 8192]})
    result = cli("show", str(run.output), "--json", "--trials")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert [s["problem"]["n"] for s in summary["sizes"]] == [4096, 8192]
    assert all(s["trials"] == 2 and s["best"]["latency_ms"] > 0 for s in summary["sizes"])
    assert {t["problem"]["n"] for t in summary["trial_list"]} == {4096, 8192}
    text = cli("show", str(run.output))
    assert "size     n=4096" in text.stdout and "over all sizes" in text.stdout
    # named as tune names them, by what differs between the sizes (alpha does not)
    assert "size     n=4096: 2 trials" in text.stdout and "alpha" not in text.stdout.split("size ", 1)[1]
    data = json.loads(Path(run.output).read_text())
    data["trials"][1]["problem"] = {"n": "4096\n#define EVIL", "alpha": 2.0}
    Path(run.output).write_text(json.dumps(data))
    line = one_line_error(cli("show", str(run.output)))
    assert "trials[1].problem.n" in line and "line break" in line
    # a number written as text would be a size of its own, listed and exported apart
    data["trials"][1]["problem"] = {"n": "4096", "alpha": 2.0}
    Path(run.output).write_text(json.dumps(data))
    line = one_line_error(cli("show", str(run.output)))
    assert "trials[1].problem.n" in line and "'4096' is text" in line and "a number" in line


def test_a_size_typed_as_the_other_number_type_counts_as_done(tmp_path: Path) -> None:
    """The plan keeps values as the template resolves them: ``alpha=1,2`` (a float parameter) is
    done once its trials exist, and ``n=1024,1024.0`` is one size."""
    out = tmp_path / "a.json"
    sweep(out, budget=2, sizes={"alpha": [1, 2]})
    session = load_session(out)
    assert len(session.trials) == 4
    assert dict(sweep_plan(session).sizes) == {"alpha": (1.0, 2.0)}
    with pytest.raises(WorkbenchError, match="already has 2 evaluations or more"):
        start_run(RunRequest(), out, resume=True)
    twice = tmp_path / "b.json"
    sweep(twice, budget=2, sizes={"n": [1024, 1024.0, 1e3]})
    session = load_session(twice)
    assert dict(sweep_plan(session).sizes) == {"n": (1024, 1000)}
    assert len(session.trials) == 4 and len(trials_by_problem(session)) == 2


def test_show_portability_at_takes_a_size_typed_as_a_float(cli, tmp_path: Path) -> None:
    paths = []
    for gpu in ("A100", "H100"):
        paths.append(str(tmp_path / f"{gpu}.json"))
        sweep(Path(paths[-1]), budget=3, sizes={"n": [4096, 8192]}, gpu_model=gpu)
    result = cli("show", "--portability", *paths, "--at", "n=8192.0")
    assert result.returncode == 0, result.stderr


def test_constraints_changed_during_a_sweep_hold_for_the_sizes_after(tmp_path: Path) -> None:
    """The window changes the session's objective while the first size runs; the next size keeps
    it (the request's objective, given at start, is not written back)."""
    from workbench.core.domain.objective import Constraints
    from workbench.core.domain.search_objective import Objective
    from workbench.runner.events import TrialFinished

    out = tmp_path / "c.json"
    request = RunRequest(kernel="vector_add", backend="sim", strategy="random", budget=3,
                         sizes={"n": [4096, 8192]}, constraints=Constraints(max_latency_ms=50.0))
    run = start_run(request, out)
    changed = Constraints(max_latency_ms=7.0)
    done: list[bool] = []

    def on_event(event: object) -> None:
        if isinstance(event, TrialFinished) and not done:
            done.append(True)
            run.session.constraints = changed
            run.set_objective(Objective(changed, run.session.weights))

    run.subscribe(on_event)
    run.run()
    assert len(problems_of(run.session)) == 2
    assert run.session.constraints == changed
    assert load_session(out).constraints.max_latency_ms == 7.0


def test_a_sweep_refuses_an_objective_its_sizes_could_not_search_before_storing_it(tmp_path: Path) -> None:
    """Set before the first size started, an objective naming a metric nothing reports was stored
    unchecked, and the first size's start refused it: the sweep ended there with nothing measured.
    It is refused at once, as a single run refuses it, and so is one set after the sweep ended."""
    from workbench.core.domain.objective import Bound, Constraints
    from workbench.core.domain.search_objective import Objective

    out = tmp_path / "c.json"
    run = start_run(RunRequest(kernel="vector_add", backend="sim", strategy="random", budget=2, executor="inline",
                               sizes={"n": [4096, 8192]}), out)
    with pytest.raises(WorkbenchError, match="metric 'regs': no trial reports it"):
        run.set_objective(Objective(Constraints(extra=(Bound("regs", "<=", 32.0),))))
    assert run.objective is None
    fine = Objective(Constraints(extra=(Bound("registers", "<=", 64.0),)))
    run.set_objective(fine)
    assert run.run().reason == "budget" and len(problems_of(run.session)) == 2
    with pytest.raises(WorkbenchError, match="the run has ended"):
        run.set_objective(Objective(Constraints(max_latency_ms=1.0)))
    assert load_session(out).constraints.extra == fine.constraints.extra


def test_remeasure_aborted_measures_each_size_at_its_own_problem(tmp_path: Path) -> None:
    """Aborted trials at a size other than the session's own are re-measured there, and the
    window's count is what the controller measures."""
    from workbench.core.domain.measurement import Status
    from workbench.core.domain.objective import Constraints
    from workbench.core.domain.search_objective import Objective
    from workbench.core.domain.sizes import remeasurable
    from workbench.runner.controller import remeasure_aborted

    out = tmp_path / "ab.json"
    sweep(out, budget=6, sizes={"n": [1 << 20, 1 << 22]}, constraints=Constraints(max_latency_ms=0.006))
    before = load_session(out)
    big = {**before.problem, "n": 1 << 22}
    aborted = [t for t in before.trials_at(big) if t.status is Status.ABORTED]
    assert aborted, "the tight limit aborts trials at the larger size"
    relaxed = Constraints(max_latency_ms=1.0)
    counted = sum(len(c) for _p, c in remeasurable(before, Objective(relaxed, before.weights).worth_remeasuring))
    run, message = remeasure_aborted(out, RunRequest(constraints=relaxed))
    assert run is not None and f"re-measuring {counted} aborted" in message
    run.run()
    after = load_session(out)
    assert len(after.trials) == len(before.trials) + counted
    assert len(after.trials_at(big)) == len(before.trials_at(big)) + len(aborted)
    assert all(t.status is Status.OK for t in after.trials[len(before.trials):])


def test_show_explains_a_sweeps_slots_at_one_size_never_across_sizes(cli, tmp_path: Path) -> None:
    """``show --json`` gave the same importance at every ``--at``, computed over every size's
    trials together (a latency ranking that says which size is fast, not which slot matters),
    where the window explains one size. 12 trials a size are too few for it (20), 24 together
    were not."""
    from workbench.core.domain.importance import MIN_TRIALS

    out = tmp_path / "s.json"
    sweep(out, budget=12, sizes={"n": [4096, 1 << 16]})
    assert 12 < MIN_TRIALS <= 24
    for n in (4096, 1 << 16):
        shown = json.loads(cli("show", str(out), "--json", "--at", f"n={n}").stdout)
        assert shown["importance"] == {} and "12 trials" in shown["importance_note"]
    unanswered = json.loads(cli("show", str(out), "--json").stdout)  # no size answered: nothing explained
    assert unanswered["importance"] == {} and "picked with --at" in unanswered["importance_note"]


def test_show_ranks_a_sweep_at_the_size_export_answers_for_never_across_sizes(cli, tmp_path: Path) -> None:
    """``show`` ranked every size's trials together (its best was always the smallest size's
    config) while ``export`` picked the session's own problem: a script reading ``best`` shipped
    the wrong config. Now both answer for one size: ``--at``, else the session's own problem."""
    sizes = {"n": [4096, 1 << 16]}
    out = tmp_path / "s.json"
    sweep(out, budget=5, sizes=sizes)
    shown = json.loads(cli("show", str(out), "--json").stdout)
    assert shown["best"] is None and shown["answered"] is None  # no trials at its own problem (n = 2**20)
    assert shown["feasible"] == 10
    text = cli("show", str(out)).stdout
    assert "sizes are not ranked together" in text and "feasible 10  (over all sizes)" in text
    per_size = {s["problem"]["n"]: s["best"]["id"] for s in shown["sizes"]}
    for n in sizes["n"]:
        picked = json.loads(cli("show", str(out), "--json", "--at", f"n={n}").stdout)
        assert picked["answered"]["n"] == n and picked["feasible"] == 5 and picked["best"]["id"] == per_size[n]
        exported = json.loads(cli("export", str(out), "--format", "json", "--at", f"n={n}", "--out", "-").stdout)
        assert exported["config_id"] == picked["best"]["id"]
    refused = one_line_error(cli("show", str(out), "--at", "n=12"))
    assert "no trials at problem" in refused and "its trials are at n=" in refused  # the sizes named
    one = tmp_path / "one.json"  # show lists no size of a one-size session: the refusal names it
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "2",
               "--executor", "inline", "--quiet", "--out", one).returncode == 0
    refused = one_line_error(cli("show", str(one), "--at", "n=5"))
    n = load_session(one).problem["n"]
    assert refused.endswith(f"its trials are at n={n}, alpha=2.0: name one of them with --at"), refused

    own = tmp_path / "own.json"  # a sweep that includes its own problem answers for it, as export does
    done = cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--strategy", "random",
               "--budget", "4", "--sizes", f"n=4096,{load_session(out).problem['n']}", "--out", str(own))
    assert "8 trials (new session), 8 feasible" in done.stdout  # tune's last line counts every size
    shown = json.loads(cli("show", str(own), "--json").stdout)
    exported = json.loads(cli("export", str(own), "--format", "json", "--out", "-").stdout)
    assert shown["answered"] == dict(load_session(own).problem) and shown["best"]["id"] == exported["config_id"]


def test_a_sweep_without_trials_at_its_own_problem_exports_one_size_or_says_how(cli, tmp_path: Path) -> None:
    """The base problem is not one of the sizes: one size measured exports that size; several
    are refused in one line naming --at and --format dispatch, and --at picks one."""
    one = tmp_path / "one.json"
    sweep(one, budget=3, sizes={"n": [8192]})
    header = tmp_path / "one.h"
    result = cli("export", str(one), "--format", "header", "--out", str(header))
    assert result.returncode == 0, result.stderr
    assert "#define PROBLEM_N 8192" in header.read_text()

    two = tmp_path / "two.json"
    sweep(two, budget=3, sizes={"n": [8192, 16384]})
    refused = one_line_error(cli("export", str(two), "--format", "json", "--out", str(tmp_path / "x.json")))
    assert "--at NAME=VALUE" in refused and "--format dispatch" in refused and "no trials to export" not in refused
    picked = tmp_path / "two.json.h"
    result = cli("export", str(two), "--format", "header", "--at", "n=16384.0", "--out", str(picked))
    assert result.returncode == 0, result.stderr
    assert "#define PROBLEM_N 16384" in picked.read_text()
    missing = one_line_error(cli("show", "--portability", str(two), str(one), "--at", "n=99"))
    assert "--at" in missing
    # the example names one --at per parameter, so it works as typed ("--at n=1, alpha=2" did not)
    grid = tmp_path / "grid.json"
    sweep(grid, budget=2, sizes={"n": [8192, 16384], "alpha": [1.0, 3.0]})
    refused = one_line_error(cli("export", str(grid), "--format", "json", "--out", str(tmp_path / "g.json")))
    example = refused.split("(e.g. ", 1)[1].split(")", 1)[0]
    assert example.count("--at ") == 2, refused
    result = cli("export", str(grid), "--format", "json", *example.split(), "--out", str(tmp_path / "g.json"))
    assert result.returncode == 0, result.stderr
    # --at one parameter of the grid: the sizes that match are named, not a problem nobody measured
    # ("no trials at problem {'n': 16384, 'alpha': <the session's own>}")
    several = one_line_error(cli("show", str(grid), "--at", "n=16384"))
    assert "--at n=16384: 2 measured sizes of" in several and "name alpha too (alpha: 1.0, 3.0)" in several, several
    cube = tmp_path / "cube.json"  # three swept parameters: the example names all three
    start_run(RunRequest(kernel="sgemm", backend="sim", strategy="random", budget=1,
                         sizes={"m": [256, 512], "n": [256, 512], "k": [256, 512]}), cube).run()
    refused = one_line_error(cli("export", str(cube), "--format", "json", "--out", str(tmp_path / "c.json")))
    example = refused.split("(e.g. ", 1)[1].split(")", 1)[0]
    result = cli("export", str(cube), "--format", "json", *example.split(), "--out", str(tmp_path / "c.json"))
    assert example.count("--at ") == 3 and result.returncode == 0, (refused, result.stderr)


def test_csv_of_a_sweep_says_each_trials_size_and_a_kt_cache_refuses_it(tmp_path: Path) -> None:
    import csv

    from workbench.core.io.interop import export_csv, export_kt_cache

    out = tmp_path / "s.json"
    sweep(out, budget=3, sizes={"n": [4096, 8192]})
    session = load_session(out)
    table = tmp_path / "s.csv"
    assert export_csv(session, table) == 6
    rows = list(csv.DictReader(table.open()))
    assert [row["problem.n"] for row in rows] == ["4096"] * 3 + ["8192"] * 3
    with pytest.raises(WorkbenchError, match="2 sizes"):
        export_kt_cache(session, tmp_path / "s.kt.json")
    assert not (tmp_path / "s.kt.json").exists()


def test_a_one_size_session_continued_as_a_sweep_keeps_its_size_in_the_plan(cli, tmp_path: Path) -> None:
    """Its size leads the plan, so ``--resume --budget N`` later brings it to N evaluations as it
    does the added sizes (left out of the plan, it stayed at the evaluations it had)."""
    out = tmp_path / "s.json"
    base = ("--backend", "sim", "--resources", "estimated", "--quiet", "--executor", "inline")
    assert cli("tune", "vector_add", *base, "--set", "n=4096", "--budget", "3", "--out", out).returncode == 0
    assert cli("tune", "--out", out, "--resume", "--sizes", "n=65536", "--budget", "3", "--quiet").returncode == 0
    session = load_session(out)
    assert sweep_plan(session).sizes == {"n": (4096, 65536)}
    assert cli("tune", "--out", out, "--resume", "--budget", "4", "--quiet").returncode == 0
    counts = {key: len(trials) for key, trials in trials_by_problem(load_session(out)).items()}
    assert sorted(counts.values()) == [4, 4], counts
    # a grid of two parameters is swept as asked: the measured point crossed with every value asked
    # for made 9 sizes of a grid of 4
    grid = tmp_path / "g.json"
    assert cli("tune", "sgemm", *base, "--set", "m=512", "--set", "n=512", "--budget", "1", "--out", grid).returncode == 0
    assert cli("tune", "--out", grid, "--resume", "--sizes", "m=1024,2048", "--sizes", "n=1024,2048", "--budget", "1",
               "--quiet", "--executor", "inline").returncode == 0
    assert sweep_plan(load_session(grid)).sizes == {"m": (1024, 2048), "n": (1024, 2048)}
    assert len(trials_by_problem(load_session(grid))) == 5  # the 4 asked for and the one measured before


def test_a_one_size_session_continued_as_a_sweep_measures_its_budget_at_each_size(cli, tmp_path: Path) -> None:
    """Without --budget, the session's own budget is the evaluations per size: the default of 100
    per size made a session of 4 evaluations measure 296 more, 96 of them at its own size."""
    out = tmp_path / "s.json"
    base = ("--backend", "sim", "--resources", "estimated", "--quiet", "--executor", "inline")
    assert cli("tune", "vector_add", *base, "--set", "n=4096", "--budget", "3", "--out", out).returncode == 0
    assert cli("tune", "--out", out, "--resume", "--sizes", "n=65536,1048576", "--quiet").returncode == 0
    session = load_session(out)
    assert sweep_plan(session).budget == 3
    assert sorted(len(trials) for trials in trials_by_problem(session).values()) == [3, 3, 3]


def test_an_unfinished_sweep_is_said_by_show_and_by_a_dispatch_built_from_it(cli, tmp_path: Path) -> None:
    """A killed sweep's summary and dispatch read as the whole sweep: nothing said which of the
    planned sizes were never measured or are short of their evaluations, nor how to finish them."""
    out = tmp_path / "s.json"
    sweep(out, budget=3, sizes={"n": [4096, 65536]})
    doc = json.loads(out.read_text())
    doc["extra"]["sweep"]["sizes"]["n"] = [4096, 65536, 1048576]  # as a sweep killed before its third size
    doc["extra"]["sweep"]["budget"] = 4
    out.write_text(json.dumps(doc))
    shown = json.loads(cli("show", out, "--json").stdout)["sweep"]
    assert shown["sizes"] == 3 and shown["budget"] == 4
    assert [(u["problem"]["n"], u["trials"]) for u in shown["unfinished"]] == [(4096, 3), (65536, 3), (1048576, 0)]
    assert shown["note"] == "3 of 3 planned sizes lack evaluations (4 each): n=4096 has 3, n=65536 has 3, n=1048576 none"
    text = cli("show", out).stdout
    assert f"sweep    {shown['note']}; tune --out {out} --resume finishes them" in text
    exported = cli("export", out, "--format", "dispatch", "--out", tmp_path / "d.h")
    assert exported.returncode == 0 and "the sweep is unfinished, 3 of 3 planned sizes" in exported.stderr
    assert "the sweep is unfinished" in (tmp_path / "d.h").read_text()
    from workbench.core.io.session_lock import SessionLock

    with SessionLock(out):  # a sweep still running: not sent to a --resume its lock would refuse
        assert "; a run of it is going" in cli("show", out).stdout
        going = cli("export", out, "--format", "dispatch", "--out", tmp_path / "d2.h").stderr
        assert "a run of it is going" in going and "--resume" not in going
    assert cli("tune", "--out", out, "--resume", "--quiet", "--executor", "inline").returncode == 0
    assert not json.loads(cli("show", out, "--json").stdout)["sweep"]["unfinished"]  # finished: nothing said
    assert "sweep " not in cli("show", out).stdout


def test_a_kt_cache_of_a_sweep_measured_at_one_size_names_that_size(tmp_path: Path) -> None:
    """Its problem_size is the size the trials ran at, not the template's default that the
    session keeps as its own problem (16,777,216 for a sweep of n=4096 alone, read back as such)."""
    from workbench.core.io.interop import export_kt_cache, import_kt_cache

    out = tmp_path / "s.json"
    sweep(out, budget=2, sizes={"n": [4096]})
    session = load_session(out)
    assert session.problem["n"] != 4096  # the session's own problem is the default
    export_kt_cache(session, tmp_path / "s.kt.json")
    assert json.loads((tmp_path / "s.kt.json").read_text())["problem_size"] == 4096
    assert import_kt_cache(tmp_path / "s.kt.json").problem == {"problem_size": 4096}


def test_flags_that_would_be_ignored_are_refused_in_one_line(cli, tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    sweep(out, budget=2, sizes={"n": [4096]})
    base = ("tune", "--out", str(out))
    assert "drop --sizes" in one_line_error(cli(*base, "--remeasure-aborted", "--sizes", "n=8192"))
    assert "drop --no-warm-start" in one_line_error(cli(*base, "--remeasure-aborted", "--no-warm-start"))
    fresh = ("tune", "vector_add", "--backend", "sim", "--budget", "2", "--out", str(tmp_path / "f.json"))
    assert "--no-warm-start applies to a size sweep" in one_line_error(cli(*fresh, "--no-warm-start"))
    assert "sim backend" in one_line_error(cli("tune", "vector_add", "--backend", "cuda", "--refine-wait", "3",
                                               "--out", str(tmp_path / "c.json")))
    assert not (tmp_path / "f.json").exists() and not (tmp_path / "c.json").exists()
    assert "gui --run KERNEL --sizes" in one_line_error(cli("gui", "--sizes", "n=1,2"))
    both = one_line_error(cli("tune", "vector_add", "--backend", "sim", "--budget", "2", "--sizes", "n=1024,2048",
                              "--set", "n=4096", "--out", str(tmp_path / "b.json")))
    assert "--set n=4096 is not one of the swept sizes" in both and not (tmp_path / "b.json").exists()


def test_a_bad_plan_in_the_file_is_reported_as_the_files_and_one_size_is_singular(cli, tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    result = cli("tune", "vector_add", "--backend", "sim", "--sizes", "n=4096", "--budget", "2",
                 "--out", str(out), "--quiet")
    assert result.returncode == 0 and "; 1 size ->" in result.stdout, result.stdout
    data = json.loads(out.read_text())
    data["extra"]["sweep"]["sizes"]["n"] = [4096, 0]
    out.write_text(json.dumps(data))
    line = one_line_error(cli("tune", "--resume", "--out", str(out), "--budget", "3"))
    assert "--sizes" not in line and "the session's size sweep" in line and "n=0" in line


def test_a_replay_of_a_sweep_replays_the_size_it_is_told(cli, tmp_path: Path) -> None:
    """Each config has a latency per size: a replay that does not say which size would mix them
    (before: each config replayed whichever size it was recorded at last, under the template's
    default problem, which nobody measured)."""
    out = tmp_path / "sweep.json"
    sweep(out, sizes={"n": [1 << 16, 4096]})  # (measured largest first: listed smallest first, as show lists them)
    recorded = {(t.config.id, t.problem["n"]): t.metric("latency_ms") for t in load_session(out).trials}
    mixed = cli("tune", "--replay", str(out), "--budget", "3", "--out", str(tmp_path / "r.json"), "--quiet")
    assert mixed.returncode == 2 and not (tmp_path / "r.json").exists()
    assert one_line_error(mixed) == (f"error: recording {out} holds a size sweep (2 sizes: n=4096, n=65536); "
                                     "a replay replays one: choose it with --set n=VALUE")
    absent = cli("tune", "--replay", str(out), "--set", "n=77", "--budget", "3", "--out", str(tmp_path / "r.json"))
    assert absent.returncode == 2 and "has no trials at n=77; its sizes: n=4096, n=65536" in absent.stderr
    grid = tmp_path / "grid.json"
    sweep(grid, budget=2, sizes={"n": [4096, 1 << 16], "alpha": [1.0, 3.0]})
    absent = cli("tune", "--replay", str(grid), "--set", "n=77", "--budget", "3", "--out", str(tmp_path / "r.json"))
    assert ("has no trials at n=77; its sizes: n=4096, alpha=1.0; n=4096, alpha=3.0; n=65536, alpha=1.0; "
            "n=65536, alpha=3.0") in absent.stderr  # a size of two parameters is told apart from the next
    swapped = tmp_path / "swapped.json"  # a plan that sweeps alpha first: listed so, as show lists it
    sweep(swapped, budget=2, sizes={"alpha": [1.0, 3.0], "n": [4096, 1 << 16]})
    absent = cli("tune", "--replay", str(swapped), "--set", "n=77", "--budget", "3", "--out", str(tmp_path / "r.json"))
    assert ("its sizes: alpha=1.0, n=4096; alpha=1.0, n=65536; alpha=3.0, n=4096; alpha=3.0, n=65536"
            in absent.stderr), absent.stderr
    one = cli("tune", "--replay", str(out), "--set", "n=65536", "--budget", "6", "--out", str(tmp_path / "r.json"),
              "--quiet")
    assert one.returncode == 0, one.stderr
    replayed = load_session(tmp_path / "r.json")
    assert replayed.problem["n"] == 65536 and len(replayed.trials) == 6
    assert all(t.metric("latency_ms") == recorded[(t.config.id, 65536)] for t in replayed.trials)


def test_show_objectives_of_a_sweep_gives_one_front_per_size(cli, tmp_path: Path) -> None:
    """A small size's configs dominate every large size's: one front over the whole sweep held only
    the smallest size (and said nothing of it)."""
    out = tmp_path / "sweep.json"
    sweep(out, sizes={"n": [4096, 1 << 20]})
    shown = cli("show", str(out), "--json", "--objectives", "latency_ms,registers")
    assert shown.returncode == 0, shown.stderr
    front = json.loads(shown.stdout)["pareto"]
    assert {p["problem"]["n"] for p in front} == {4096, 1 << 20}
    trials = load_session(out).trials
    for point in front:  # no trial of the same size dominates a point
        same = [t for t in trials if t.ok and t.problem["n"] == point["problem"]["n"]]
        assert not any(t.metric("latency_ms") <= point["latency_ms"] and t.metric("registers") <= point["registers"]
                       and (t.metric("latency_ms"), t.metric("registers")) != (point["latency_ms"], point["registers"])
                       for t in same)
    at = cli("show", str(out), "--json", "--objectives", "latency_ms,registers", "--at", "n=4096")
    assert at.returncode == 0, at.stderr  # the size asked for, not every size's front
    small = [p for p in front if p["problem"]["n"] == 4096]
    assert json.loads(at.stdout)["pareto"] == small


def test_a_problem_outside_the_swept_sizes_is_refused_however_the_sweep_is_prepared(tmp_path: Path) -> None:
    """The window prepares runs with ``prepare_run``, the command line with ``start_run``: both
    refuse a named problem no swept size measures, for a new sweep and for a continued one."""
    from workbench.runner.controller import prepare_run, resume_run

    outside = dict(kernel="vector_add", backend="sim", strategy="random", budget=2,
                   problem={"n": 4096}, sizes={"n": [1024, 2048]})
    with pytest.raises(WorkbenchError, match="n=4096 is not one of the swept sizes"):
        prepare_run(RunRequest(**outside), None, tmp_path / "new.json")
    assert not (tmp_path / "new.json").exists()
    out = tmp_path / "s.json"
    sweep(out, budget=2, sizes={"n": [1024, 2048]}, problem={"n": 1024})
    session = load_session(out)
    # the session's own problem named again, with added sizes that leave it out of no sweep: continued
    more = RunRequest(budget=3, problem={"n": 1024}, sizes={"n": [2048]})
    run = prepare_run(more, session, out)
    run.release()
    # a sweep at the template's default problem (not swept) continued with another problem: refused
    # as a new sweep would be, not continued at the sizes with the problem ignored
    default = tmp_path / "d.json"
    sweep(default, budget=2, sizes={"n": [1024, 2048]})
    with pytest.raises(WorkbenchError, match="is not one of the swept sizes") as refused:
        resume_run(default, RunRequest(budget=3, problem={"n": 4096}))
    assert str(refused.value).startswith("--set n=4096 is not one of the swept sizes (--sizes n=...)")
    with pytest.raises(WorkbenchError, match="is not one of the swept sizes"):
        prepare_run(RunRequest(budget=3, problem={"n": 4096}), load_session(default), default)
    assert len(load_session(default).trials) == 4
    # its own problem named again is the sweep it is: continued
    resume_run(default, RunRequest(budget=3, problem={"n": 1 << 24})).release()


def test_the_windows_sizes_text_of_a_grid_is_accepted_by_sizes() -> None:
    """The window shows a grid as ``rows=1024,16384; cols=256,1024``; pasted into ``--sizes`` it was
    refused with "rows: 1024 is listed twice" (the second group's values read as the first's)."""
    from workbench.core.domain.sizes import format_sizes, parse_sizes

    grid = {"rows": [1024, 16384], "cols": [256, 1024]}
    assert parse_sizes([format_sizes(grid)]) == grid
    assert parse_sizes(["rows=1024,16384;", " cols=256,1024"]) == grid
    with pytest.raises(WorkbenchError, match="--sizes rows: given twice"):
        parse_sizes(["rows=1; rows=2"])


def test_each_size_searches_the_valid_configs_of_its_own_problem(tmp_path: Path) -> None:
    """A restriction may read the problem (softmax: ``threads_per_row * vector_width <= cols``).
    Every size used to search the space of the first size, stored with the session: at a narrow
    size budget went to configs the template refuses (recorded as runtime errors), at a wide one
    valid configs were never proposed."""
    from workbench.core.domain.templates import load_templates

    template = load_templates()["softmax"]
    request = RunRequest(kernel="softmax", backend="sim", strategy="random", budget=12, seed=3,
                         sizes={"cols": [64, 4096]}, backend_options={"compile": "estimate"})
    run = start_run(request, tmp_path / "narrow.json")
    counts = {}
    build = run._prepare

    def prepare(problem, budget):
        size_run = build(problem, budget)
        counts[problem["cols"]] = size_run.engine.strategy.space.count()
        return size_run

    run._prepare = prepare
    run.run()
    expected = {cols: template.space(template.resolve_problem({"cols": cols})).count() for cols in (64, 4096)}
    assert expected[64] != expected[4096] and counts == expected
    session = load_session(tmp_path / "narrow.json")
    assert all(t.status.value == "ok" for t in session.trials), [t.measurement.error for t in session.trials]


def test_tunes_per_size_lines_name_the_best_feasible_config_as_show_does(cli, tmp_path: Path) -> None:
    """The lines at the end of a sweep ranked by latency alone, naming configs that break the
    session's constraints, where ``show`` and ``export --at`` name each size's best feasible one."""
    out = tmp_path / "limited.json"
    tuned = cli("tune", "reduce_sum", "--backend", "sim", "--resources", "estimated", "--sizes",
                "n=4096,65536,1048576", "--budget", "8", "--seed", "1", "--constraint", "registers<=24",
                "--out", str(out))
    assert tuned.returncode == 0, tuned.stderr
    shown = json.loads(cli("show", str(out), "--json").stdout)["sizes"]
    session = load_session(out)
    assert any(t.metric("registers") > 24 for t in session.trials)  # the constraint excludes something
    lines = [line for line in tuned.stdout.splitlines() if line.startswith("  n=")]
    assert len(lines) == len(shown) == 3
    for line, size in zip(lines, shown):
        if size["best"] is None:
            assert "none meets the constraints" in line or "none succeeded" in line
        else:
            assert str(size["best"]["config"]) in line, (line, size["best"])


def test_the_cross_matrix_under_weights_compares_the_objectives_value_never_above_the_optimum(tmp_path: Path) -> None:
    """Under weights a size's best is not its fastest config, and latency ratios against it went
    above 100 %; the cells now compare the objective's value, with 1 on the diagonal."""
    from workbench.core.domain.objective import Bound, Constraints, Weights
    from workbench.core.domain.search_objective import Objective

    out = tmp_path / "grid.json"
    start_run(RunRequest(kernel="softmax", backend="sim", strategy="random", budget=6, seed=0,
                         sizes={"rows": [1024, 16384], "cols": [128, 1024, 4096]},
                         backend_options={"compile": "estimate"}), out).run()
    session = load_session(out)
    weighted = Objective(Constraints(), Weights({"quality": 1.0, "latency_ms": 0.01}))
    rows = size_rows(session, weighted)
    by_latency = cross_matrix(rows)  # what the view drew: latency against the weighted bests
    matrix = cross_matrix(rows, weighted)
    assert np.nanmax(by_latency) > 1.0  # the defect this replaces
    assert np.nanmax(matrix) <= 1.0 + 1e-12
    assert all(matrix[i, i] == 1.0 for i in range(len(rows)) if rows[i].best is not None)
    # a config that misses a constraint at a size is unusable there: 0, as a failure
    limited = Objective(Constraints(extra=(Bound.parse("registers<=20"),)), Weights())
    limited_rows = size_rows(session, limited)
    cells = cross_matrix(limited_rows, limited)
    for i, row in enumerate(limited_rows):
        assert row.best is None or row.best.metric("registers") <= 20
        for j, target in enumerate(limited_rows):
            trials = [t for t in target.trials if row.best is not None and t.config == row.best.config]
            if trials and all(t.metric("registers") > 20 for t in trials) and target.best is not None:
                assert cells[i, j] == 0.0


def test_a_config_a_restriction_excludes_at_a_size_is_no_missing_cell_there(tmp_path: Path) -> None:
    """Measure missing asked for a size's winner at a size where a restriction reading the problem
    excludes it: nothing was measured, and the cell stayed missing (and the button lit) for ever."""
    from workbench.core.domain.size_analysis import invalid_cells

    out = tmp_path / "narrow.json"
    start_run(RunRequest(kernel="softmax", backend="sim", strategy="random", budget=6, seed=1,
                         sizes={"cols": [32, 1024, 4096]}, backend_options={"compile": "estimate"}), out).run()
    session = load_session(out)
    rows = size_rows(session)
    invalid = invalid_cells(rows, session.space)
    assert invalid  # some size's winner uses more threads x width than 32 columns allow
    for i, j in invalid:
        problem, config = rows[j].problem, rows[i].best_config
        assert not session.space.with_params(problem).is_valid(config)
    assert not {(problem_key(p), c.id) for p, c in missing_cells(rows, session.space)} & {
        (problem_key(rows[j].problem), rows[i].best_config.id) for i, j in invalid}
    cells = missing_cells(rows, session.space)
    if cells:  # what is left is measurable, and measuring it leaves nothing missing
        prepare_cells(RunRequest(), session, out, cells).run()
        after = load_session(out)
        assert missing_cells(size_rows(after), after.space) == []


def test_a_budget_below_what_each_size_has_says_how_many_it_has(tmp_path) -> None:
    """Asking for 1 per size of a sweep with 2 per size said 'already has its 1 evaluations'."""
    out = tmp_path / "a.json"
    sweep(out, budget=2, sizes={"alpha": [1, 2]})
    with pytest.raises(WorkbenchError, match="already has 2 evaluations or more, the 1 per size asked for"):
        start_run(RunRequest(budget=1), out, resume=True)


def test_a_sweep_ended_by_patience_says_so_and_names_its_winners_as_winners(cli, tmp_path: Path) -> None:
    """Every size stopped on --patience and the sweep said 'finished (budget)'; its per-size
    'config #2' read as a trial index (the trial was index 17 in show)."""
    out = tmp_path / "p.json"
    tuned = cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--sizes", "n=1024,65536",
                "--budget", "30", "--patience", "3", "--executor", "inline", "--out", out)
    assert tuned.returncode == 0, tuned.stderr
    assert "finished (plateau)" in tuned.stderr and "finished (budget)" not in tuned.stderr
    assert len(load_session(out).trials) < 60
    lines = [line for line in tuned.stdout.splitlines() if line.startswith("  n=")]
    assert lines and all(", winner #" in line for line in lines)


def test_at_completes_a_size_from_the_one_measured_size_with_the_values_given(cli, tmp_path) -> None:
    """A grid swept over alpha at one n (not the template's own): export's refusal suggests
    --at alpha=1.0, which filled n from the session's problem and found no trials there."""
    out = tmp_path / "grid.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "2",
               "--executor", "inline", "--quiet", "--sizes", "n=4096", "--sizes", "alpha=1,2", "--out", out).returncode == 0
    refused = cli("export", out, "--format", "json", "--out", "-")
    assert refused.returncode == 2 and "(e.g. --at alpha=1.0)" in refused.stderr
    done = cli("export", out, "--format", "json", "--at", "alpha=1.0", "--out", "-")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["problem"] == {"n": 4096, "alpha": 1.0}
    shown = cli("show", out, "--at", "alpha=2", "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["answered"] == {"n": 4096, "alpha": 2.0}
    wide = tmp_path / "wide.json"  # two measured sizes have alpha=1.0: which one is not guessed
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "1",
               "--executor", "inline", "--quiet", "--sizes", "n=4096,8192", "--sizes", "alpha=1,2",
               "--out", wide).returncode == 0
    ambiguous = cli("export", wide, "--format", "json", "--at", "alpha=1.0", "--out", "-")
    assert ambiguous.returncode == 2 and "--at alpha=1.0: 2 measured sizes of" in ambiguous.stderr
    assert "name n too (n: 4096, 8192)" in ambiguous.stderr, ambiguous.stderr
    for flag, said in (("n=abc", "--at n=abc: n is a number in"), ("alpha=true", "--at alpha=true: alpha is a number in")):
        wrong = cli("show", out, "--at", flag)  # said as what it is, not as "no trials at n='abc'"
        assert wrong.returncode == 2 and said in wrong.stderr, wrong.stderr


def test_a_grid_sweeps_size_lines_follow_its_order_the_first_name_slowest(cli, tmp_path: Path) -> None:
    """--sizes cols=... --sizes rows=... runs cols slowest (docs/sizes.md); the size lines were
    ordered by the parameter the template happens to list first."""
    out = tmp_path / "grid.json"
    done = cli("tune", "transpose", "--backend", "sim", "--resources", "estimated", "--executor", "inline",
               "--budget", "1", "--sizes", "cols=256,8192", "--sizes", "rows=256,4096", "--out", out)
    assert done.returncode == 0, done.stderr
    lines = [line.split(":")[0].strip() for line in done.stdout.splitlines() if line.startswith("  ")]
    assert [line.split(", ")[0] for line in lines] == ["cols=256", "cols=256", "cols=8192", "cols=8192"], lines
    assert [line.split(", ")[1] for line in lines] == ["rows=256", "rows=4096", "rows=256", "rows=4096"], lines
    shown = [line.split(":")[0][len("size"):].strip() for line in cli("show", out).stdout.splitlines()
             if line.startswith("size ")]
    assert shown == lines


def test_a_size_that_ended_by_its_own_rule_is_not_called_unfinished(cli, tmp_path: Path) -> None:
    """Each size of a sweep run with --patience ends on its plateau, short of the plan's
    evaluations: show, its JSON and a dispatch called the sweep unfinished and offered a --resume
    to finish it. The plan now keeps how each size ended."""
    out = tmp_path / "s.json"
    assert cli("tune", "reduce_sum", "--backend", "sim", "--resources", "estimated", "--executor", "inline",
               "--sizes", "n=4096,65536", "--budget", "30", "--patience", "3", "--quiet", "--out", out).returncode == 0
    session = load_session(out)
    plan = sweep_plan(session)
    counts = {key: len(trials) for key, trials in trials_by_problem(session).items()}
    assert plan.ended == {key: ("plateau", n) for key, n in counts.items()} and all(n < 30 for n in counts.values())
    shown = json.loads(cli("show", out, "--json").stdout)
    assert shown["sweep"]["unfinished"] == [] and shown["sweep"]["note"] is None
    assert [e["reason"] for e in shown["sweep"]["ended"]] == ["plateau", "plateau"]
    assert [size["ended"] for size in shown["sizes"]] == ["plateau", "plateau"]
    text = cli("show", out).stdout
    assert "sweep    " not in text and text.count("trials (ended: no improvement within --patience)") == 2
    exported = cli("export", out, "--format", "dispatch", "--out", tmp_path / "d.h")
    assert exported.returncode == 0 and "unfinished" not in exported.stderr
    # a new number per size asks every size for more: the ends under the old one are forgotten
    fewest = min(counts.values())
    assert cli("tune", "--out", out, "--resume", "--budget", str(fewest + 1), "--quiet").returncode == 0
    assert sweep_plan(load_session(out)).ended == {}


def test_only_a_sizes_own_search_marks_how_it_ended_and_other_trials_there_unmark_it(cli, tmp_path: Path) -> None:
    """A refinement ends "exhausted" (it has no configs to propose): it marked every size of an
    unfinished sweep as ended, hiding what it lacked. A size measured again since its search ended
    (a search killed, missing cells) is judged by its count again, and a plan that does not read
    no longer stops the run from saving."""
    out = tmp_path / "s.json"
    base = ("--backend", "sim", "--resources", "estimated", "--executor", "inline", "--quiet")
    assert cli("tune", "reduce_sum", *base, "--sizes", "n=4096,65536", "--budget", "3", "--out", out).returncode == 0
    doc = json.loads(out.read_text())
    doc["extra"]["sweep"]["budget"] = 6  # as a sweep killed halfway
    out.write_text(json.dumps(doc))
    assert cli("tune", "--out", out, "--resume", "--refine-only", "--quiet").returncode == 0
    assert sweep_plan(load_session(out)).ended == {}
    shown = json.loads(cli("show", out, "--json").stdout)["sweep"]
    assert len(shown["unfinished"]) == 2 and shown["ended"] == []
    doc = json.loads(out.read_text())  # a mark at fewer trials than the size has now: not an end any more
    doc["extra"]["sweep"]["ended"] = {problem_key({**doc["problem"], "n": 4096}): {"reason": "plateau", "trials": 2}}
    out.write_text(json.dumps(doc))
    shown = json.loads(cli("show", out, "--json").stdout)["sweep"]
    assert len(shown["unfinished"]) == 2 and shown["ended"] == []
    from workbench.runner.sweep import SweepRun

    session = load_session(out)
    session.extra["sweep"]["budget"] = 0  # unreadable (a file's is refused as it loads): the run's end still saves
    sweep = SweepRun(session, [], lambda p, b: None, None, None, True, None, searches=True)
    sweep._note_end({**session.problem, "n": 4096}, "plateau")
    assert session.extra["sweep"]["budget"] == 0


def test_a_plan_keeps_only_early_ends_and_a_file_cannot_claim_another() -> None:
    plan = SweepPlan({"n": (1, 2)}, 10)
    ended = plan.with_end({"n": 1}, "plateau", 4).with_end({"n": 2}, "exhausted", 7)
    assert ended.ended == {problem_key({"n": 1}): ("plateau", 4), problem_key({"n": 2}): ("exhausted", 7)}
    assert ended.ended_at({"n": 1}, 4) == "plateau"
    assert ended.ended_at({"n": 1}, 5) is None  # other trials since (a search killed, a cell measured)
    assert ended.with_end({"n": 1}, "budget", 10).ended == {problem_key({"n": 2}): ("exhausted", 7)}
    assert ended.with_end({"n": 2}, "stopped", 8).with_end({"n": 1}, "error", 4).ended == {}
    assert SweepPlan.merged(ended, {"n": [3]}).ended == ended.ended
    from workbench.core.domain.session import Session

    assert sweep_plan(Session(kernel="k", problem={"n": 1}, extra={"sweep": ended.to_dict()})) == ended
    for bad, match in (({"reason": "budget", "trials": 1}, "is not an end"),
                       ("plateau", "is not an object of a reason and a number of trials"),
                       ({"reason": "plateau", "trials": -1}, "is not a number of trials"),
                       ({"reason": "plateau", "trials": 1.5}, "is not a number of trials")):
        extra = {"sweep": {**ended.to_dict(), "ended": {'{"n":1}': bad}}}
        with pytest.raises(WorkbenchError, match=r"extra\.sweep\.ended: .* " + match):
            sweep_plan(Session(kernel="k", problem={"n": 1}, extra=extra))


def test_a_size_written_as_another_kind_of_number_is_the_same_size(tmp_path: Path) -> None:
    """A hand-edited trial at n=4096.0 (the session's n an integer) was a size of its own: listed
    apart, and a dispatch export gave 4096 two ranges, the second of the config measured slower."""
    from workbench.core.domain.measurement import Measurement, Status, Trial
    from workbench.core.domain.session import Session
    from workbench.core.domain.sizes import problems_of
    from workbench.core.domain.space import SearchSpace, Slot

    space = SearchSpace([Slot("block", (64, 128), "launch")])
    session = Session(kernel="k", space=space, problem={"n": 4096, "alpha": 2.0})
    for index, (config, n) in enumerate(zip([*space, *space], (4096, 4096, 8192, 8192))):
        session.add(Trial(index, config, Measurement(Status.OK, {"latency_ms": 1.0 + index}),
                          problem={"n": n, "alpha": 2.0}))
    path = tmp_path / "s.json"
    save_session(session, path)
    data = json.loads(path.read_text())
    data["trials"][1]["problem"] = {"n": 4096.0, "alpha": 2}  # each number the other kind
    path.write_text(json.dumps(data))
    loaded = load_session(path)
    assert problems_of(loaded) == [{"n": 4096, "alpha": 2.0}, {"n": 8192, "alpha": 2.0}]
    assert [type(t.problem["n"]) for t in loaded.trials] == [int] * 4
    assert [type(t.problem["alpha"]) for t in loaded.trials] == [float] * 4


def test_a_size_the_template_never_takes_in_a_file_is_refused_naming_the_file_and_size(cli, tmp_path: Path) -> None:
    """A hand-edited trial at n=-4: show lists it, and the dispatch export said only
    "reduce_sum: problem parameter n=-4 is outside [...]", naming neither file nor trials."""
    out = tmp_path / "s.json"
    assert cli("tune", "reduce_sum", "--backend", "sim", "--resources", "estimated", "--executor", "inline", "--quiet",
               "--sizes", "n=4096,65536", "--budget", "2", "--out", out).returncode == 0
    doc = json.loads(out.read_text())
    doc["trials"][0]["problem"]["n"] = -4
    out.write_text(json.dumps(doc))
    line = one_line_error(cli("export", out, "--format", "dispatch", "--out", tmp_path / "d.h"))
    assert line.startswith(f"error: {out}: trials measured at n = -4, a size the template does not take ("), line
    assert not (tmp_path / "d.h").exists()


def test_show_json_names_the_size_answered_when_a_sweep_has_measured_one_other_size(cli, tmp_path: Path) -> None:
    """A sweep that had measured only n=65536 (not its own problem) gave that size's best with no
    `answered`: a nightly script took the small size's figure for the session's problem's."""
    out = tmp_path / "one.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--sizes", "n=65536",
               "--budget", "3", "--quiet", "--out", out).returncode == 0
    doc = json.loads(cli("show", out, "--json").stdout)
    assert doc["answered"]["n"] == 65536 and doc["best"] is not None
    assert "at n=65536" in cli("show", out).stdout


def test_sizes_added_to_a_sweep_later_are_listed_in_order_of_size() -> None:
    """A size added with --resume --sizes is appended to the plan, and was listed after the largest
    (``n=1048576 has 10, n=16777216 and n=4096 none``; the window's sizes field ``64,4096,128``)."""
    from workbench.core.domain.session import Session
    from workbench.core.domain.sizes import shown_in_order, sweep_progress

    plan = SweepPlan({"n": (1048576,)}, 10).merged({"n": [16777216, 4096]})
    assert plan.sizes["n"] == (1048576, 16777216, 4096)  # the plan keeps the order they came in
    from workbench.core.domain.measurement import Measurement, Status, Trial
    from workbench.core.domain.space import Config

    session = Session(kernel="k", problem={"n": 1048576}, extra={"sweep": plan.to_dict()})
    session.add(Trial(0, Config({"x": 1}), Measurement(Status.OK, {"latency_ms": 1.0}), problem={"n": 1048576}))
    progress = sweep_progress(session)
    assert progress is not None and progress.text() == (
        "3 of 3 planned sizes lack evaluations (10 each): n=1048576 has 1, n=4096 and n=16777216 none")
    assert shown_in_order([64, 4096, 128, 2.5]) == [2.5, 64, 128, 4096]
    assert shown_in_order(["b", "a"]) == ["b", "a"] and shown_in_order([True, 2]) == [True, 2]


def test_resuming_a_sweep_whose_short_sizes_have_nothing_left_is_refused_and_leaves_the_file(cli, tmp_path) -> None:
    """A size whose valid configs were all measured below the plan's evaluations ended
    "exhausted"; --resume ran it again, proposed nothing, warned of the default config at every
    size and rewrote the file. It is refused in one line, the file left as it was."""
    out = tmp_path / "s.json"
    assert cli("tune", "layernorm", "--backend", "sim", "--resources", "estimated", "--strategy", "random",
               "--sizes", "cols=4,64", "--budget", "20", "--quiet", "--out", out).returncode == 0
    counts = [len(g) for g in trials_by_problem(load_session(out)).values()]
    assert counts[0] < 20 == counts[1], counts  # (cols=4 has fewer valid configs than the plan's 20)
    before = out.read_bytes()
    refused = cli("tune", "--resume", out, "--quiet")
    assert refused.returncode == 2 and one_line_error(refused) == (
        f"error: nothing left to measure: the search measured every config it could find at cols=4 after "
        f"{counts[0]} evaluations, and every other size of the sweep has its 20 evaluations; add sizes to --sizes")
    assert out.read_bytes() == before
    # more evaluations per size find nothing more there either (the new budget forgot the end):
    # only cols=64 is measured further
    assert cli("tune", "--resume", out, "--budget", "30", "--quiet").returncode == 0
    assert [len(g) for g in trials_by_problem(load_session(out)).values()] == [counts[0], 30]
    out.write_bytes(before)
    assert cli("tune", "--resume", out, "--sizes", "cols=8", "--quiet").returncode == 0  # a size added: it runs


def test_a_sweep_resumed_with_its_domains_widened_searches_a_size_that_had_nothing_left(tmp_path) -> None:
    """A size that measured every config of a narrowed space ended "exhausted"; widened in the
    window, the space has configs it never saw, and the resume was refused as nothing left."""
    from workbench.runner.controller import resume_run

    out = tmp_path / "ex.json"
    full = {"threads_per_row": [4, 8, 16, 32, 64, 128, 256, 512, 1024], "rows_per_block": [1, 2, 4, 8, 16],
            "vector_width": [1, 2, 4], "reduction": ["warp", "block"], "algorithm": ["two_pass", "welford", "sum_squares"]}
    narrow = dict(full, algorithm=["two_pass"], rows_per_block=[4, 8])
    start_run(RunRequest(kernel="layernorm", backend="sim", strategy="random", budget=20, sizes={"cols": [16, 32]},
                         domains=narrow, backend_options={"compile": "estimate"}), out).run()
    counts = [len(g) for g in trials_by_problem(load_session(out)).values()]
    assert counts[0] < 20, counts  # (cols=16 measured every config of the narrowed space)
    finished = resume_run(out, RunRequest(domains=full)).run()
    assert finished.evaluations > 0


def test_a_sweeps_eta_under_a_time_limit_counts_each_size_up_to_its_limit(tmp_path: Path) -> None:
    """Each size's run ends at ``--time-limit``: the sweep's ETA came from the budget alone (24 s
    shown for a sweep that ended within 3 s)."""
    from workbench.runner.events import Progress

    run = start_run(RunRequest(kernel="vector_add", backend="sim", strategy="random", budget=200, sizes=SIZES,
                               time_limit_s=0.6, backend_options={"delay_s": 0.05, "compile": "estimate"}),
                    tmp_path / "limited.json")
    progress: list[Progress] = []
    run.subscribe(lambda event: progress.append(event) if isinstance(event, Progress) else None)
    run.run()
    shown = [p.eta_s for p in progress if p.eta_s is not None and p.done > 0]
    assert shown and max(shown) <= 3 * 0.6 + 0.5, shown  # three sizes of at most 0.6 s each (and slack)
    assert progress[-1].done < 3 * 200 * 0.5  # (the limits ended the sizes, not their budgets)


def test_an_export_of_one_size_of_an_unfinished_sweep_says_what_the_size_lacks(cli, tmp_path: Path) -> None:
    """show and a dispatch said that a size of a killed sweep was short of its evaluations; an
    export of that size (--at) said nothing, and a pick of three evaluations shipped as any other."""
    out = tmp_path / "s.json"
    assert cli("tune", "reduce_sum", "--backend", "sim", "--resources", "estimated", "--executor", "inline", "--quiet",
               "--sizes", "n=4096,65536", "--budget", "3", "--out", out).returncode == 0
    doc = json.loads(out.read_text())
    doc["extra"]["sweep"]["budget"] = 6  # as a sweep killed halfway
    out.write_text(json.dumps(doc))
    header = tmp_path / "at.h"
    done = cli("export", out, "--at", "n=65536", "--out", header)
    said = f"note: {out}: this size has 3 of the 6 evaluations its sweep plans (unfinished: tune --resume continues it)"
    assert done.returncode == 0 and said in done.stderr, done.stderr
    assert said.replace("note: ", "// note: ") in header.read_text()
    doc["extra"]["sweep"]["budget"] = 3  # every size done: nothing to say
    out.write_text(json.dumps(doc))
    assert "evaluations its sweep plans" not in cli("export", out, "--at", "n=65536", "--out", header).stderr


def test_a_sizes_best_among_equal_costs_is_the_faster_config() -> None:
    """A cost of metrics every config shares ties them all: the first config measured was named a
    size's best however slow, where the ranking (show --at, the dispatch) picks the fastest."""
    from workbench.core.domain.measurement import Measurement, Status, Trial
    from workbench.core.domain.sizes import best_configs
    from workbench.core.domain.space import Config

    trials = [Trial(i, Config({"x": i}), Measurement(Status.OK, {"latency_ms": latency, "memory_mb": 8.0}))
              for i, latency in enumerate((3.0, 1.0, 2.0))]
    picked = best_configs(trials, 3, cost=lambda trial: trial.metric("memory_mb"))
    assert [t.index for t in picked] == [1, 2, 0]
    assert [t.index for t in best_configs(trials, 2)] == [1, 2]  # by latency, as before


def test_sizes_that_differ_in_a_switch_are_named_apart_by_every_command(cli, tmp_path: Path) -> None:
    """Sizes were named by their numbers alone: a sweep over n and a switch listed ``n=4096`` twice
    in tune's lines, the window and a replay's refusal, which then asked for the n just given; and
    export offered ``--at n=4096`` (which took the switch's own value silently) and a dispatch it
    refuses."""
    run = sweep(tmp_path / "switch.json", budget=2, sizes={"n": [4096, 8192]})
    data = json.loads(Path(run.output).read_text())
    data["problem"]["fast"] = False
    for i, record in enumerate(data["trials"]):
        record["problem"] = {**record["problem"], "fast": i % 2 == 1}
    Path(run.output).write_text(json.dumps(data))

    text = cli("show", str(run.output), "--trials").stdout
    assert [line.split(":")[0] for line in text.splitlines() if line.startswith("size ")] == [
        "size     n=4096, fast=false", "size     n=4096, fast=true", "size     n=8192, fast=false",
        "size     n=8192, fast=true"]
    assert "n=8192, fast=true  {" in text
    line = one_line_error(cli("tune", "--replay", str(run.output), "--set", "n=4096", "--budget", "2",
                              "--out", str(tmp_path / "r.json")))
    assert "n=4096, fast=false; n=4096, fast=true" in line and "choose it with --set fast=VALUE" in line
    for fast in ("true", "1"):  # (a switch typed as a template reads it)
        replayed = cli("tune", "--replay", str(run.output), "--set", f"n=4096, fast={fast}", "--budget", "1",
                       "--out", str(tmp_path / f"r{fast}.json"), "--quiet")
        assert replayed.returncode == 0, replayed.stderr
    line = one_line_error(cli("export", str(run.output), "--out", str(tmp_path / "x.h")))
    assert "--at n=4096 --at fast=false" in line and "--format dispatch" not in line


def test_show_names_the_size_of_trials_at_the_sessions_own_problem(cli, tmp_path: Path) -> None:
    """A session of one size continued with --sizes: its first trials carry no problem of their own,
    and show --trials named their size ``n=None`` (and --json gave them none)."""
    out = tmp_path / "one.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--set", "n=1024",
               "--budget", "2", "--out", str(out), "--quiet").returncode == 0
    assert cli("tune", "--resume", str(out), "--sizes", "n=4096", "--budget", "2", "--quiet").returncode == 0
    text = cli("show", str(out), "--trials").stdout
    assert "None" not in text
    assert sum(" n=1024  {" in line for line in text.splitlines()) == 2
    trials = json.loads(cli("show", str(out), "--trials", "--json").stdout)["trial_list"]
    assert [t["problem"]["n"] for t in trials] == [1024, 1024, 4096, 4096]
