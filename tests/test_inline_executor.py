"""The inline executor: the pool surface without worker processes, and where it is refused."""

from __future__ import annotations

import json

import multiprocessing
from pathlib import Path

import pytest

from workbench.backends.base import BackendSpec, EvalLimits
from workbench.backends.python import PythonBackend
from workbench.core.errors import WorkbenchError
from workbench.core.domain.run_settings import RunSettings
from workbench.core.domain.session import load_session
from workbench.runner.controller import RunRequest, start_run
from workbench.runner.engine import Engine, session_for_target
from workbench.runner.executors import ExecutorChoice, LocalPool, plan_execution
from workbench.runner.inline import InlinePool, check_inline
from workbench.runner.pool import WorkerStartupError
from workbench.search.grid import GridSearch
from workbench.search.random import RandomSearch

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SIM = BackendSpec("sim", {"kernel": "vector_add", "noise": False, "compile": "estimate"})
TRIVIAL = BackendSpec("python", {"path": str(FIXTURES / "trivial_bench.py")})

pytestmark = pytest.mark.timeout(120)


def test_every_candidate_comes_back_once_measured_in_this_process() -> None:
    configs = list(PythonBackend.target(TRIVIAL).space)[:7]
    started: list[tuple[str, str]] = []
    before = set(multiprocessing.active_children())
    with InlinePool(TRIVIAL, workers=3, on_start=lambda c, w: started.append((c.id, w))) as pool:
        assert pool.idle_count == 3 and pool.workers == 3
        for config in configs[:3]:
            pool.submit(config)
        assert pool.idle_count == 0 and pool.busy
        for config in configs[3:]:
            pool.submit(config)
        results = []
        while pool.busy:
            results += pool.results(timeout=1.0)
        assert set(multiprocessing.active_children()) == before  # no process was started
    assert [r[0].id for r in results] == [c.id for c in configs]  # in submission order, each once
    assert [w for _, w in started] == ["inline-0", "inline-1", "inline-2", "inline-0", "inline-1", "inline-2",
                                       "inline-0"]
    assert all(r[1].ok and r[3] == w for r, (_, w) in zip(results, started))
    assert all(r[2]["total_s"] >= r[2]["benchmark_s"] >= 0 for r in results)  # phases timed as in a worker
    assert pool.results(timeout=0.0) == []


def test_a_backend_exception_is_a_recorded_runtime_error_and_the_pool_goes_on() -> None:
    spec = BackendSpec("python", {"path": str(FIXTURES / "faulty_bench.py")})
    target = PythonBackend.target(spec)
    by_mode = {c["mode"]: c for c in target.space if c["k"] == 0}
    with InlinePool(spec) as pool:
        pool.submit(by_mode["raise"])
        pool.submit(by_mode["ok"])
        (failed,), (ok,) = pool.results(), pool.results()
    assert failed[1].status.value == "runtime_error" and "bad config k=0" in failed[1].message
    assert ok[1].ok


def test_a_backend_that_cannot_start_is_reported_as_a_worker_pool_reports_it(tmp_path: Path) -> None:
    spec = BackendSpec("replay", {"path": str(tmp_path / "missing.json")})
    pool = InlinePool(spec, workers=2)
    assert isinstance(pool.error, WorkerStartupError) and pool.idle_count == 0
    assert str(pool.error).startswith("replay backend failed to start: ")
    config = next(iter(PythonBackend.target(TRIVIAL).space))
    pool.submit(config)
    with pytest.raises(WorkerStartupError, match="recording not found"):
        pool.results(timeout=0.0)
    assert not pool.busy  # the queued candidate was dropped with the error
    pool.close()
    pool.close()  # closing twice is harmless
    with pytest.raises(WorkbenchError, match="closed"):
        pool.submit(config)


def test_a_run_on_a_backend_that_cannot_start_ends_with_an_error_line() -> None:
    target = PythonBackend.target(TRIVIAL)
    broken = BackendSpec("python", {"path": str(FIXTURES / "does_not_exist.py")})
    finished = Engine(session_for_target(target, TRIVIAL), GridSearch(target.space), broken,
                      pool_factory=InlinePool).run()
    assert finished.reason == "error" and "python backend failed to start" in finished.message


def test_inline_and_worker_processes_measure_the_same_configs_alike() -> None:
    """The executor changes where a candidate runs, not what the run measures."""
    from workbench.backends.sim import SimBackend

    target = SimBackend.target(SIM)
    sessions = []
    for factory in (InlinePool, LocalPool):
        strategy = RandomSearch(target.space, seed=5)
        session = session_for_target(target, SIM, strategy)
        finished = Engine(session, strategy, SIM, budget=12, pool_factory=factory).run()
        assert finished.reason == "budget"
        sessions.append(session)
    inline, local = sessions
    assert [t.config for t in inline.trials] == [t.config for t in local.trials]
    assert [t.measurement.metrics for t in inline.trials] == [t.measurement.metrics for t in local.trials]
    assert {t.worker for t in inline.trials} == {"inline-0"} and {t.worker for t in local.trials} == {"worker-0"}


@pytest.mark.parametrize("kind", ["cuda", "python"])
def test_backends_that_need_isolation_are_refused_in_one_line(kind: str) -> None:
    with pytest.raises(WorkbenchError) as caught:
        check_inline(BackendSpec(kind, {}))
    message = str(caught.value)
    assert "\n" not in message and "timeout" in message and kind in message and "--executor local" in message
    with pytest.raises(WorkbenchError, match="sim and replay"):
        plan_execution(BackendSpec(kind, {"path": "x.py"}), ExecutorChoice("inline"), gpu_names=lambda: ["GPU"])


def test_a_users_python_spec_is_refused_inline_and_a_declarative_one_is_not(tmp_path: Path) -> None:
    """A Python spec's geometry and work profile run for every simulated candidate: the user's own
    would run in this process without a timeout. A declarative spec runs no code."""
    import shutil

    from workbench.core.domain.templates import kernels_dir

    for name in ("vector_add.py", "vector_add.cu"):
        shutil.copy(kernels_dir() / name, tmp_path / name)
    mine = BackendSpec("sim", {"kernel": "vector_add", "kernel_dirs": [str(tmp_path)]})
    with pytest.raises(WorkbenchError, match="Python spec") as caught:
        check_inline(mine)
    assert "\n" not in str(caught.value) and "--executor local" in str(caught.value)
    check_inline(BackendSpec("sim", {"kernel": "vector_add"}))  # the shipped library's
    saxpy = Path(__file__).resolve().parents[1] / "docs" / "examples" / "saxpy"
    check_inline(BackendSpec("sim", {"kernel": "saxpy", "kernel_dirs": [str(saxpy)]}))  # declarative
    # a declarative spec whose reference is a Python file of its own: that file is the user's code
    referenced = tmp_path / "referenced"
    referenced.mkdir()
    spec = json.loads((saxpy / "saxpy.kernel.json").read_text())
    spec["reference"] = {"kind": "python", "file": "_saxpy_reference.py"}
    (referenced / "saxpy.kernel.json").write_text(json.dumps(spec))
    shutil.copy(saxpy / "saxpy.cu", referenced / "saxpy.cu")
    marker = tmp_path / "ran.txt"
    (referenced / "_saxpy_reference.py").write_text(
        f"open({str(marker)!r}, 'w').write('ran')\ndef reference(inputs, problem):\n    return {{}}\n")
    with pytest.raises(WorkbenchError, match="reference with a Python file") as caught:
        check_inline(BackendSpec("sim", {"kernel": "saxpy", "kernel_dirs": [str(referenced)]}))
    assert "--executor local" in str(caught.value) and not marker.exists()


def test_timeouts_with_the_inline_executor_are_refused(tmp_path: Path) -> None:
    from workbench.cli import main

    for flag in ("--timeout", "--compile-timeout"):
        assert main(["tune", "vector_add", "--backend", "sim", "--executor", "inline", flag, "5",
                     "--out", str(tmp_path / "t.json")]) == 2
    assert not (tmp_path / "t.json").exists()


def test_planning_inline_gives_the_inline_pool_for_sim_and_replay() -> None:
    for kind in ("sim", "replay"):
        plan = plan_execution(BackendSpec(kind, {}), ExecutorChoice("inline"))
        assert plan.pool_factory is InlinePool and plan.workers == 1
    assert plan_execution(SIM, ExecutorChoice("inline"), workers=3).workers == 3
    assert RunSettings(executor="inline").executor == "inline"  # a session may record it


def test_a_request_runs_inline_and_the_session_remembers_it(tmp_path: Path) -> None:
    out = tmp_path / "va.json"
    request = RunRequest(kernel="vector_add", backend="sim", noise=False, strategy="random", budget=5,
                         executor="inline", backend_options={"compile": "estimate"})
    before = set(multiprocessing.active_children())
    finished = start_run(request, out).run()
    assert finished.reason == "budget" and set(multiprocessing.active_children()) == before
    session = load_session(out)
    assert session.run.executor == "inline" and {t.worker for t in session.trials} == {"inline-0"}
    again = start_run(RunRequest(budget=3), out, resume=True)  # continuing keeps the executor
    assert again.engine.pool_factory is InlinePool
    again.run()
    assert len(load_session(out).trials) == 8


def test_cli_runs_a_simulated_tune_inline_and_refuses_python_in_one_line(cli, tmp_path: Path) -> None:
    out = tmp_path / "va.json"
    ok = cli("tune", "vector_add", "--backend", "sim", "--executor", "inline", "--budget", "4", "--out", out)
    assert ok.returncode == 0, ok.stderr
    assert {t.worker for t in load_session(out).trials} == {"inline-0"}
    refused = cli("tune", FIXTURES / "trivial_bench.py", "--executor", "inline", "--out", tmp_path / "t.json")
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and "--executor local" in refused.stderr
    assert not (tmp_path / "t.json").exists()


def test_the_abort_threshold_in_force_when_a_candidate_starts_is_the_one_it_gets() -> None:
    """As with worker processes: relaxing the latency limit mid-run stops aborting new candidates."""
    spec = BackendSpec("sim", {"kernel": "transpose", "noise": False, "compile": "estimate"})
    from workbench.backends.sim import SimBackend

    config = SimBackend.target(spec).default_config
    with InlinePool(spec, limits=EvalLimits(max_latency_ms=1e-6)) as pool:
        pool.submit(config)
        (tight,) = pool.results()
        pool.submit(config)
        pool.set_abort_threshold(None)  # before it starts: it runs to the end
        (relaxed,) = pool.results()
    assert tight[1].status.value == "aborted" and relaxed[1].ok
