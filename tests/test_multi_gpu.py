"""One worker per GPU: device assignment rules (pure functions, fake device lists), pinned workers
that name their device (real worker processes on the python and sim backends), run planning."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from workbench.backends.base import BackendSpec, EvalLimits
from workbench.core.errors import WorkbenchError
from workbench.core.domain.measurement import Status
from workbench.core.domain.space import Config
from workbench.runner.engine import Engine
from workbench.runner.executors import (
    ExecutorChoice,
    LocalPool,
    assign_devices,
    parse_devices,
    plan_execution,
    spread_over_devices,
)
from workbench.runner.plan import new_session, open_target
from workbench.runner.ray_executor import ray_accelerator_type
from workbench.runner.pool import WorkerPool, worker_spec
from workbench.search.base import create_strategy

FIXTURES = Path(__file__).parent / "fixtures"
FAULTY = BackendSpec("python", {"path": str(FIXTURES / "faulty_bench.py")})
TRIVIAL = BackendSpec("python", {"path": str(FIXTURES / "trivial_bench.py")})
H200 = "NVIDIA H200"

pytestmark = pytest.mark.timeout(60)


# --- device assignment (pure) ------------------------------------------------------------------
def test_all_visible_devices_by_default_and_a_pick_in_the_users_order():
    assert assign_devices([H200] * 4) == [0, 1, 2, 3]
    assert assign_devices([H200] * 4, [3, 1]) == [3, 1]
    assert assign_devices([H200]) == [0]


@pytest.mark.parametrize(
    "names, requested, message",
    [
        ([], None, "no CUDA device is visible"),
        ([H200] * 2, [2], "no device 2; visible devices are 0..1"),
        ([H200] * 2, [-1], "no device -1"),
        ([H200] * 2, [1, 1], "device 1 is named twice"),
        ([H200] * 2, [], "name at least one device"),
        ([H200, "NVIDIA A100-SXM4-80GB"], None, "different GPU models (0: NVIDIA H200, 1: NVIDIA A100-SXM4-80GB)"),
    ],
)
def test_bad_device_lists_are_refused_with_one_line(names, requested, message):
    with pytest.raises(WorkbenchError, match=message.replace("(", r"\(").replace(")", r"\)")) as info:
        assign_devices(names, requested)
    assert "\n" not in str(info.value)


def test_mixed_models_only_when_allowed_or_when_the_pick_is_one_model():
    names = [H200, "NVIDIA A100-SXM4-80GB", H200]
    assert assign_devices(names, [0, 2]) == [0, 2]
    assert assign_devices(names, allow_mixed=True) == [0, 1, 2]


def test_parse_devices():
    assert parse_devices("0,2") == [0, 2]
    assert parse_devices(" 1 ") == [1]
    for bad in ("", "0,", "a,b", "0;1"):
        with pytest.raises(WorkbenchError, match="--devices"):
            parse_devices(bad)


def test_worker_slots_are_pinned_round_robin_and_keep_their_device():
    spec = spread_over_devices(BackendSpec("cuda", {"kernel": "vector_add", "device": 7}), [2, 3])
    assert spec.options["device"] == 2  # the device the session describes
    assert [worker_spec(spec, i).options["device"] for i in range(5)] == [2, 3, 2, 3, 2]
    assert all("devices" not in worker_spec(spec, i).options for i in range(2))


def test_ray_pins_one_gpu_model():
    one = {"GPU": 8.0, "CPU": 64.0, "accelerator_type:H100": 1.0}
    assert ray_accelerator_type(one) == "H100"
    assert ray_accelerator_type({"GPU": 2.0}) is None  # Ray could not tell the model: nothing to pin
    mixed = {"GPU": 4.0, "accelerator_type:H100": 1.0, "accelerator_type:A100": 1.0}
    with pytest.raises(WorkbenchError, match=r"mixes GPU models \(A100, H100\)"):
        ray_accelerator_type(mixed)
    assert ray_accelerator_type(mixed, allow_mixed=True) is None
    with pytest.raises(WorkbenchError, match="has no GPU"):
        ray_accelerator_type({"CPU": 2.0})


# --- run planning ------------------------------------------------------------------------------
def test_cuda_plan_runs_one_worker_per_device_without_touching_a_gpu():
    cuda = BackendSpec("cuda", {"kernel": "vector_add"})
    plan = plan_execution(cuda, ExecutorChoice(), gpu_names=lambda: [H200] * 4)
    assert plan.workers == 4 and plan.spec.options["devices"] == [0, 1, 2, 3] and plan.pool_factory is LocalPool
    plan = plan_execution(cuda, ExecutorChoice(devices=(1, 3)), gpu_names=lambda: [H200] * 4)
    assert plan.workers == 2 and plan.spec.options["devices"] == [1, 3] and plan.spec.options["device"] == 1
    plan = plan_execution(cuda, ExecutorChoice(devices=(1, 3)), workers=4, gpu_names=lambda: [H200] * 4)
    assert plan.workers == 4  # two workers per GPU when asked
    plan = plan_execution(cuda, ExecutorChoice(), workers=1, gpu_names=lambda: [H200, "Tesla T4"])
    assert plan.workers == 1 and plan.spec.options["devices"] == [0]  # fewer workers: the first GPUs
    with pytest.raises(WorkbenchError, match="different GPU models"):
        plan_execution(cuda, ExecutorChoice(), gpu_names=lambda: [H200, "Tesla T4"])
    plan = plan_execution(cuda, ExecutorChoice(allow_mixed_gpus=True), gpu_names=lambda: [H200, "Tesla T4"])
    assert plan.workers == 2


def test_plan_refuses_flags_that_do_not_apply_and_notes_sequential_strategies():
    with pytest.raises(WorkbenchError, match="--devices applies to the cuda backend, not python"):
        plan_execution(TRIVIAL, ExecutorChoice(devices=(0,)))
    with pytest.raises(WorkbenchError, match="--ray-address needs --executor ray"):
        plan_execution(TRIVIAL, ExecutorChoice(address="ray://head:10001"))
    with pytest.raises(WorkbenchError, match="unknown executor 'dask'"):
        plan_execution(TRIVIAL, ExecutorChoice(kind="dask"))
    plan = plan_execution(TRIVIAL, ExecutorChoice(), workers=None)
    assert plan.workers == 1 and plan.spec == TRIVIAL and not plan.notes
    assert plan_execution(TRIVIAL, ExecutorChoice(), workers=2, batch_parallel=False).notes
    assert not plan_execution(TRIVIAL, ExecutorChoice(), workers=1, batch_parallel=False).notes


def test_an_unreachable_ray_address_fails_fast_in_one_line():
    import socket

    from workbench.runner.ray_executor import check_reachable

    with socket.socket() as probe:  # a port nobody listens on once closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
        with pytest.raises(WorkbenchError, match=f"cannot reach the Ray cluster at {address}"):
            check_reachable(address)
    assert time.monotonic() - started < 5
    with pytest.raises(WorkbenchError, match="expected HOST:PORT"):
        check_reachable("head-node")
    check_reachable("auto")  # left to Ray
    # (a port that listens but does not answer as Ray does is refused too: tests/test_ray_rules.py)


# --- pinned workers name their device (real processes) ----------------------------------------
def _drain(pool: WorkerPool) -> list:
    out = []
    while pool.busy:
        out.extend(pool.results(timeout=10))
    return out


def test_pinned_workers_name_their_device_and_a_replacement_keeps_it():
    """Device pinning without a GPU: the python backend ignores ``device``; names and details don't."""
    spec = spread_over_devices(FAULTY, [2, 5])
    seen: list[str] = []
    limits = EvalLimits(compile_timeout_s=5.0, run_timeout_s=5.0)
    with LocalPool(spec, workers=2, limits=limits, on_start=lambda c, w: seen.append(w)) as pool:
        configs = [Config({"mode": "ok", "k": k}) for k in range(3)] + [Config({"mode": "segv", "k": 0})]
        for config in configs:
            pool.submit(config)
        first = _drain(pool)
        crashed = [r for r in first if r[1].status is Status.CRASHED]
        assert len(crashed) == 1
        second: list = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # until the crashed slot's replacement has served a candidate
            pool.poll(0.05)
            pool.submit(Config({"mode": "ok", "k": 1}))
            pool.submit(Config({"mode": "ok", "k": 2}))
            second += _drain(pool)
            if crashed[0][3] in {r[3] for r in second}:
                break
        assert pool.started_workers == 3  # the segfault cost one worker
    names = {"worker-0@python:2", "worker-1@python:5"}
    assert set(seen) <= names
    results = first + second
    assert {r[3] for r in results} <= names
    for _, measurement, _, worker in results:
        assert measurement.details["device_index"] == int(worker.rpartition(":")[2])
    assert crashed[0][3] in {r[3] for r in second}  # the replaced slot still serves on its own device


def test_unpinned_local_pool_keeps_plain_worker_names():
    with LocalPool(TRIVIAL, workers=1) as pool:
        pool.submit(Config({"x": 1, "y": 2, "mode": "a"}))
        ((_, measurement, _, worker),) = _drain(pool)
    assert worker == "worker-0" and "device_index" not in measurement.details


def test_engine_on_pinned_sim_workers_records_the_device_of_every_trial(tmp_path):
    spec = spread_over_devices(BackendSpec("sim", {"kernel": "vector_add", "gpu_model": "H200", "seed": 1}), [0, 1])
    target = open_target(spec)
    strategy = create_strategy("random", target.space, seed=3)
    session = new_session(spec, target, strategy="random", seed=3)
    started = time.monotonic()
    finished = Engine(session, strategy, spec, budget=8, workers=2, output=tmp_path / "s.json",
                      pool_factory=LocalPool).run()
    assert finished.reason == "budget", finished.message
    assert len(session.trials) == 8
    assert {t.worker for t in session.trials} <= {"worker-0@sim:0", "worker-1@sim:1"}
    assert all(t.measurement.details["device_index"] in (0, 1) for t in session.trials)
    assert time.monotonic() - started < 30


@pytest.mark.gpu
def test_cuda_run_uses_every_visible_gpu_and_names_it(tmp_path):
    from workbench.runner.executors import visible_gpu_names
    from workbench.runner.plan import make_backend_spec
    from workbench.runner.controller import RunRequest, run_to_end

    names = visible_gpu_names()
    devices = assign_devices(names, allow_mixed=True)
    spec = make_backend_spec("vector_add", "cuda")
    request = RunRequest(spec=spec, strategy="random", budget=2 * len(devices), allow_mixed_gpus=True)
    session, finished = run_to_end(request, tmp_path / "gpus.json")
    assert finished.reason == "budget", finished.message
    for trial in session.trials:
        index = trial.measurement.details["device_index"]
        assert index in devices and trial.worker.endswith(f"@cuda:{index}")
        if trial.ok:
            assert trial.measurement.details["device"] == names[index]


def test_the_note_on_a_sequential_strategy_is_a_warning_line_as_the_runs_others_are(cli, tmp_path):
    """It was printed by the logger with no ``warning:`` before it, where a script looks for one."""
    done = cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--strategy", "local",
               "--workers", "2", "--budget", "2", "--quiet", "--out", tmp_path / "s.json")
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "the strategy is sequential" in line]
    assert len(said) == 1 and said[0].startswith("warning: local: the strategy is sequential"), done.stderr
