"""The Ray executor on a local Ray instance (num_cpus=2): the local pool's failure classes, lost
actors retried once or recorded, startup errors, and whole runs through the engine and the CLI.

One Ray instance serves the module (it takes seconds to start); skipped when Ray isn't installed.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from workbench.backends.base import BackendSpec, EvalLimits
from workbench.core.domain.measurement import Status
from workbench.core.domain.space import Config
from workbench.runner.pool import WorkerStartupError
from workbench.runner.ray_executor import RayPool
from workbench.runner.controller import RunRequest, run_to_end

FIXTURES = Path(__file__).parent / "fixtures"
HOST_FAULTS = BackendSpec("python", {"path": str(FIXTURES / "host_faults_bench.py")})

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """A local instance without the idle workers Ray starts ahead, one per CPU: the pool's actors
    carry their own environment (this source tree on PYTHONPATH), so they never use those workers
    and each would cost a Python start for nothing."""
    ray = pytest.importorskip("ray")  # here, not at the top: collecting this file costs no Ray import
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 _system_config={"prestart_worker_first_driver": False})
    yield
    ray.shutdown()


@pytest.fixture(scope="class")
def pool():
    """Two actors shared by the tests of one class (actor startup is the slow part); they hold
    both CPUs of the local instance, so they are gone before the next tests start theirs."""
    with RayPool(HOST_FAULTS, 2, EvalLimits(compile_timeout_s=5.0, run_timeout_s=1.0)) as shared:
        yield shared


def _drain(pool: RayPool) -> dict[str, tuple]:
    out: dict[str, tuple] = {}
    while pool.busy:
        for config, measurement, timings, worker in pool.results(timeout=30):
            assert config.id not in out, f"{config} reported twice"
            out[config.id] = (config, measurement, timings, worker)
    return out


def _marker(tag: int) -> str:
    sys.path.insert(0, str(FIXTURES))
    try:
        from host_faults_bench import host_faults_marker
    finally:
        sys.path.remove(str(FIXTURES))
    return host_faults_marker(tag)


class TestSharedActors:
    """Candidate faults and lost actors on one pool of two actors."""

    def test_candidate_failures_are_classified_as_on_the_local_pool(self, pool):
        modes = ["ok", "hang", "segv", "raise", "ok"]
        configs = [Config({"mode": m, "ms": 0, "tag": i}) for i, m in enumerate(modes)]
        started: list[str] = []
        pool.on_start = lambda c, w: started.append(w)
        try:
            for config in configs:
                pool.submit(config)
            assert pool.in_flight == len(configs)
            results = _drain(pool)
        finally:
            pool.on_start = None
        assert set(results) == {c.id for c in configs} and len(started) == len(configs)
        status = {c["tag"]: m for c, m, _, _ in results.values()}
        assert status[0].status is Status.OK and status[0].metrics["latency_ms"] == 1.0
        assert status[4].metrics["latency_ms"] == 5.0
        assert status[1].status is Status.TIMEOUT and status[1].message == "exceeded run timeout of 1.0 s"
        assert status[2].status is Status.CRASHED and status[2].message == "worker died with signal 11 (SIGSEGV)"
        assert "Fatal Python error" in status[2].log  # the candidate's own crash output, as locally
        assert status[3].status is Status.RUNTIME_ERROR and status[3].message == "ValueError: bad config tag=3"
        for _, measurement, _, worker in results.values():
            assert worker.startswith("ray-") and measurement.details["executor"] == "ray"
            assert measurement.details["node"] in worker
        assert pool.started_workers == 2  # candidate faults cost worker subprocesses, never actors


    def test_a_lost_actor_costs_a_retry_or_a_recorded_crash_never_a_candidate(self, pool):
        if os.path.exists(_marker(1)):
            os.remove(_marker(1))
        before = pool.started_workers
        configs = [
            Config({"mode": "kill_host_once", "ms": 0, "tag": 1}),
            Config({"mode": "kill_host", "ms": 0, "tag": 2}),
            Config({"mode": "sleep", "ms": 50, "tag": 3}),
        ]
        for config in configs:
            pool.submit(config)
        results = _drain(pool)
        assert set(results) == {c.id for c in configs}
        once, always, bystander = (results[c.id][1] for c in configs)
        assert once.status is Status.OK and "was lost" in once.details["retried_after"]
        assert always.status is Status.CRASHED and always.message.endswith("already retried once")
        assert "was lost" in always.message and "retried once" in always.log
        # recorded with where it ran, as every trial an actor measured is (its details were empty)
        assert always.details["executor"] == "ray" and always.details["node"] == once.details["node"]
        assert "was lost" in always.details["retried_after"]
        assert bystander.status is Status.OK
        assert pool.started_workers - before == 3  # one replacement per lost actor
        assert pool.workers == 2 and pool.error is None
        os.remove(_marker(1))


def test_more_actors_than_the_cluster_has_cpus_queue_their_candidates_on_those_that_came_up():
    """Three actors on two CPUs: the third cannot come up while the others hold the CPUs for good.
    A candidate was handed to it all the same, waited there until its deadline (minutes with the
    default limits) and ended the run as an actor that could not start; the docs promise a queue."""
    configs = [Config({"mode": "ok", "ms": 0, "tag": 20 + i}) for i in range(6)]
    limits = EvalLimits(compile_timeout_s=5.0, run_timeout_s=1.0)
    # (a start allowance far above the second or two a worker takes: under a loaded machine the
    # lost actor's replacement took more than 20 s to start its worker, and the test failed there)
    with RayPool(HOST_FAULTS, 3, limits, start_timeout_s=60.0, actor_slack_s=1.0) as pool:
        for config in configs:
            pool.submit(config)
        results = _drain(pool)
        assert pool.error is None
        # the engine is offered only actors that came up: a candidate queued for the third overran
        # a Stop or a time limit
        assert sum(slot.up for slot in pool._slots) == 2 and pool.idle_count == 2
        # long after the third was made, a lost actor's candidate is retried on its replacement:
        # "no actor came up within the allowance" is timed from the newest actor, not the oldest
        for slot in pool._slots:
            slot.created -= 100
        if os.path.exists(_marker(30)):
            os.remove(_marker(30))
        lost = [Config({"mode": "kill_host_once", "ms": 0, "tag": 30}), Config({"mode": "ok", "ms": 0, "tag": 31})]
        for config in lost:
            pool.submit(config)
        again = _drain(pool)
        assert pool.error is None, pool.error
        os.remove(_marker(30))
    assert set(results) == {c.id for c in configs}
    assert all(measurement.status is Status.OK for _, measurement, _, _ in results.values()), [
        measurement.message for _, measurement, _, _ in results.values()]
    assert len({worker for *_, worker in results.values()}) <= 2
    assert [again[c.id][1].status for c in lost] == [Status.OK, Status.OK]
    assert "was lost" in again[lost[0].id][1].details["retried_after"]


def test_an_unstartable_backend_ends_with_the_startup_error():
    spec = BackendSpec("python", {"path": str(FIXTURES / "no_such_bench.py")})
    with RayPool(spec, 1, EvalLimits()) as broken:
        broken.submit(Config({"mode": "ok", "ms": 0, "tag": 0}))
        with pytest.raises(WorkerStartupError, match="python benchmark not found"):
            while True:
                broken.results(timeout=30)
        assert broken.error is not None and broken.idle_count == 0


def test_an_actor_that_stops_answering_is_killed_and_replaced():
    """The inner pool's timeouts never fire here (5 s); the actor deadline (1 s after dispatch) does,
    as it would for an actor wedged on an unreachable node."""
    limits = EvalLimits(compile_timeout_s=5.0, run_timeout_s=5.0, verify_timeout_s=5.0)
    with RayPool(HOST_FAULTS, 1, limits, actor_slack_s=-14.0) as one:
        one.submit(Config({"mode": "ok", "ms": 0, "tag": 0}))  # first call: actor start-up allowance
        assert list(_drain(one).values())[0][1].ok
        one.submit(Config({"mode": "hang", "ms": 0, "tag": 1}))
        one.submit(Config({"mode": "ok", "ms": 0, "tag": 2}))
        results = {c["tag"]: m for c, m, _, _ in _drain(one).values()}
        assert results[1].status is Status.TIMEOUT and "did not answer" in results[1].message
        assert results[1].message.endswith("killed and replaced")
        assert results[2].ok and one.started_workers == 2 and one.error is None


def test_what_a_candidate_started_ends_with_the_pool_as_on_the_local_executor():
    """Killed with its actor, the worker left a process its candidate started running after the run
    (the local pool ends the worker's whole process group): the actors close their pools first."""
    import time

    marker = _marker(901)
    if os.path.exists(marker):
        os.unlink(marker)
    with RayPool(HOST_FAULTS, 1, EvalLimits(compile_timeout_s=5.0, run_timeout_s=5.0)) as one:
        one.submit(Config({"mode": "spawn", "ms": 0, "tag": 901}))
        assert list(_drain(one).values())[0][1].ok
        child = int(Path(marker).read_text())
        os.kill(child, 0)  # running while the pool is
    def gone() -> bool:  # ended: no such process, or a zombie no one has reaped yet
        try:
            return Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
        except (FileNotFoundError, ProcessLookupError):
            return True

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if gone():
            break
        time.sleep(0.1)
    else:
        os.kill(child, 9)
        pytest.fail(f"process {child}, started by a candidate, outlived the pool")
    os.unlink(marker)


def test_closing_a_pool_whose_actor_still_measures_does_not_wait_for_it():
    """A run stopped mid-candidate waited the whole shutdown allowance for a busy actor, which
    takes no call before its candidate ends: only idle actors are asked to close their pools."""
    import time

    from workbench.runner.ray_executor import SHUTDOWN_WAIT_S

    one = RayPool(HOST_FAULTS, 1, EvalLimits(compile_timeout_s=30.0, run_timeout_s=30.0))
    try:
        one.submit(Config({"mode": "ok", "ms": 0, "tag": 0}))
        assert list(_drain(one).values())[0][1].ok  # up, and idle
        one.submit(Config({"mode": "hang", "ms": 0, "tag": 1}))
        time.sleep(0.5)  # dispatched: the actor is measuring it
    finally:
        started = time.monotonic()
        one.close()
    assert time.monotonic() - started < SHUTDOWN_WAIT_S / 2


def test_a_sim_run_through_the_engine_streams_every_trial_into_the_session(tmp_path):
    spec = BackendSpec("sim", {"kernel": "vector_add", "gpu_model": "H200", "seed": 1})
    out = tmp_path / "ray.json"
    request = RunRequest(spec=spec, strategy="random", budget=10, workers=2, executor="ray")
    session, finished = run_to_end(request, out)
    assert finished.reason == "budget", finished.message
    assert len(session.trials) == 10 and all(t.ok for t in session.trials)
    assert {t.worker.partition("@")[0] for t in session.trials} <= {"ray-0", "ray-1"}
    saved = json.loads(out.read_text())
    assert len(saved["trials"]) == 10


def test_cli_tune_with_the_ray_executor(tmp_path, capsys):
    from workbench.cli import main

    out = tmp_path / "cli.json"
    code = main(["tune", str(FIXTURES / "trivial_bench.py"), "--executor", "ray", "--workers", "1",
                 "--budget", "6", "--quiet", "--out", str(out)])
    assert code == 0
    assert "6 trials" in capsys.readouterr().out
    trials = json.loads(out.read_text())["trials"]
    assert all(t["worker"].startswith("ray-") for t in trials)


def test_a_started_ray_instance_writes_its_log_lines_as_the_commands_warnings(monkeypatch):
    """Ray printed its own timestamped INFO and WARNING lines on stderr ("Started a local Ray
    instance"), even with --quiet, among lines that are otherwise all ``error:``, ``warning:`` or
    ``note:``. Its warnings and errors now come in that form and its progress chatter not at all."""
    import logging

    from workbench.runner import ray_executor

    started: dict = {}

    class NotStarted:
        @staticmethod
        def is_initialized() -> bool:
            return False

        @staticmethod
        def init(**options) -> None:
            started.update(options)

    logger = logging.getLogger("ray")
    monkeypatch.setattr(logger, "handlers", [logging.StreamHandler()])
    monkeypatch.setattr(ray_executor, "import_ray", lambda: NotStarted)
    ray_executor.ensure_ray(None, num_cpus=1)
    assert started["logging_level"] == logging.WARNING
    handler = logger.handlers[0]
    handler.setFormatter(logging.Formatter(started["logging_format"]))  # what ray.init does with it
    lines = []
    for level in (logging.WARNING, logging.ERROR):
        record = logging.LogRecord("ray.x", level, __file__, 1, "token\nauth", None, None)
        assert handler.filter(record)
        lines.append(handler.format(record))
    assert lines == ["warning: ray: token auth", "error: ray: token auth"]


def test_starting_ray_keeps_the_commands_stop_signals(monkeypatch):
    """ray.init puts in a SIGTERM handler of its own (sys.exit(signum)): a SIGTERM to a run with
    Ray ended it as an error (exit 1), not as the documented stop (143). The process's handlers are
    put back; one that arrives while Ray starts stops what Ray started and reaches the process's
    own handler."""
    import signal
    import sys

    from workbench.runner import ray_executor

    class Stop(Exception):
        pass

    def ours(signum, frame):
        raise Stop(signum)

    calls: list[str] = []

    class FakeRay:
        arrive = False

        @staticmethod
        def is_initialized() -> bool:
            return False

        @classmethod
        def init(cls, **options) -> None:
            calls.append("init")
            signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(signum))  # as ray.init does
            if cls.arrive:
                sys.exit(signal.SIGTERM)  # its handler, on a SIGTERM during the start

        @staticmethod
        def shutdown() -> None:
            calls.append("shutdown")

    previous = signal.signal(signal.SIGTERM, ours)
    try:
        monkeypatch.setattr(ray_executor, "import_ray", lambda: FakeRay)
        ray_executor.ensure_ray(None, num_cpus=1)
        assert signal.getsignal(signal.SIGTERM) is ours and calls == ["init"]
        FakeRay.arrive = True
        with pytest.raises(Stop):
            ray_executor.ensure_ray(None, num_cpus=1)
        assert signal.getsignal(signal.SIGTERM) is ours and calls == ["init", "init", "shutdown"]
        FakeRay.init = classmethod(lambda cls, **options: (_ for _ in ()).throw(KeyboardInterrupt()))
        with pytest.raises(KeyboardInterrupt):  # the process's own handler's stop, before Ray put in its own
            ray_executor.ensure_ray(None, num_cpus=1)
        assert calls[-1] == "shutdown" and signal.getsignal(signal.SIGTERM) is ours
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_rays_error_messages_go_to_standard_error(capsys):
    """Ray's driver printed the cluster's error messages ("(raylet) A worker died ...") on standard
    output from a thread: a line could come after the summary that scripts read with tail -1."""
    from ray._private import worker as ray_worker

    from workbench.runner.ray_executor import _ray_errors_to_stderr

    _ray_errors_to_stderr()
    _ray_errors_to_stderr()  # (wrapped once, however often Ray is started)
    capsys.readouterr()
    ray_worker.print_to_stdstream({"lines": ["A worker died"], "pid": "raylet", "is_err": False}, ignore_prefix=False)
    out, err = capsys.readouterr()
    assert out == "" and err.count("A worker died") == 1
