"""The sim backend on the real template library: same contract as the CUDA backend, no GPU needed.

Most tests use ``compile: "estimate"`` (no NVRTC, fast); the NVRTC path is exercised on a few
configs (each distinct source compiles once, ~0.1-0.3 s, then the cache answers).
"""

from __future__ import annotations

import math
import time

import pytest

from workbench.backends.base import BackendSpec, EvalLimits, create_backend
from workbench.backends import sim as sim_module
from workbench.backends.sim import SimBackend
from workbench.core.errors import WorkbenchError
from workbench.core.domain.measurement import Status

LIMITS = EvalLimits()


def _backend(kernel: str, **options):
    spec = BackendSpec("sim", {"kernel": kernel, "compile": "estimate", **options})
    target = SimBackend.target(spec)
    backend = create_backend(spec)
    backend.prepare()
    return target, backend


def _config(target, **changes):
    return target.space.config({**target.default_config.to_dict(), **changes})


def test_target_describes_a_simulated_device_and_the_templates_space() -> None:
    target = SimBackend.target(BackendSpec("sim", {"kernel": "vector_add"}))
    assert target.kernel == "vector_add" and target.kind == "template"
    assert target.device["name"] == "Simulated NVIDIA H200"
    assert (target.device["simulated"], target.device["model"], target.device["backend"]) == (True, "H200", "sim")
    assert target.default_config is not None and target.space.is_valid(target.default_config)
    assert SimBackend.simulated is True and SimBackend.kind == "sim"


def test_bad_options_are_one_line_errors() -> None:
    with pytest.raises(WorkbenchError, match="unknown GPU model"):
        SimBackend.target(BackendSpec("sim", {"kernel": "vector_add", "gpu_model": "GTX 480"}))
    with pytest.raises(WorkbenchError, match="unknown template"):
        SimBackend.target(BackendSpec("sim", {"kernel": "no_such_kernel"}))
    with pytest.raises(WorkbenchError, match="compile must be one of"):
        SimBackend(BackendSpec("sim", {"kernel": "vector_add", "compile": "nvcc"}))


def test_an_evaluation_reports_every_metric_and_explains_itself() -> None:
    target, backend = _backend("vector_add")
    phases: list[str] = []
    m = backend.evaluate(target.default_config, LIMITS, phases.append)
    assert m.status is Status.OK, m.message
    assert phases == ["compile", "run"]
    for name in ("latency_ms", "latency_p20_ms", "latency_p80_ms", "throughput_gbs", "gflops", "pct_of_peak",
                 "memory_mb", "registers", "smem_bytes", "spill_bytes", "occupancy", "quality"):
        assert name in m.metrics and math.isfinite(m.metrics[name]), name
    assert m.metrics["latency_p20_ms"] <= m.metrics["latency_ms"] <= m.metrics["latency_p80_ms"]
    assert m.metrics["memory_mb"] == pytest.approx(3 * 4 * (1 << 24) / 1e6)  # x, y, z buffers
    assert m.details["estimated"] is True and m.details["bound"] in ("memory", "latency")
    assert {t["name"] for t in m.details["terms"]} >= {"occupancy", "memory", "compute", "launch"}
    assert 0 < m.metrics["pct_of_peak"] <= 100


def test_noise_is_seeded_per_config_and_can_be_switched_off() -> None:
    target, first = _backend("vector_add", seed=3)
    _, again = _backend("vector_add", seed=3)
    _, other = _backend("vector_add", seed=4)
    _, quiet = _backend("vector_add", noise=False)
    cfg = target.default_config
    a, b, c, q = (x.evaluate(cfg, LIMITS).metrics for x in (first, again, other, quiet))
    assert a == b
    assert a["latency_ms"] != c["latency_ms"] and a["latency_ms"] == pytest.approx(q["latency_ms"], rel=0.05)
    assert q["latency_p20_ms"] == q["latency_ms"] == q["latency_p80_ms"]


def test_padding_removes_the_bank_conflicts_of_a_shared_memory_transpose() -> None:
    target, backend = _backend("transpose", noise=False)
    base = dict(use_shared=True, tile_dim=32, block_rows=8, vector_width=1)
    padded = backend.evaluate(_config(target, **base, smem_padding=True), LIMITS)
    conflicted = backend.evaluate(_config(target, **base, smem_padding=False), LIMITS)
    assert padded.ok and conflicted.ok
    assert conflicted.metrics["latency_ms"] > 1.2 * padded.metrics["latency_ms"]


def test_vector_width_and_loads_in_flight_help_the_stream_on_h200() -> None:
    target, backend = _backend("vector_add", noise=False)
    times = [backend.evaluate(_config(target, vector_width=w), LIMITS).metrics["latency_ms"] for w in (1, 2, 4)]
    assert times[0] > times[1] > times[2]


def test_a_slower_gpu_model_is_slower() -> None:
    target, h200 = _backend("vector_add", noise=False)
    _, t4 = _backend("vector_add", noise=False, gpu_model="T4")
    assert t4.evaluate(target.default_config, LIMITS).metrics["latency_ms"] > 5 * h200.evaluate(
        target.default_config, LIMITS).metrics["latency_ms"]


def test_fast_math_trades_quality_for_speed_through_the_emulation() -> None:
    target, backend = _backend("gelu", noise=False)
    precise = backend.evaluate(_config(target, fast_math=False), LIMITS)
    fast = backend.evaluate(_config(target, fast_math=True), LIMITS)
    assert precise.ok and fast.ok
    assert fast.metrics["quality"] < precise.metrics["quality"] <= 1.0
    assert fast.metrics["latency_ms"] <= precise.metrics["latency_ms"]
    assert precise.details["quality_source"] == "emulation"


def test_nvrtc_gives_real_resources_and_repeats_are_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = BackendSpec("sim", {"kernel": "vector_add", "noise": False})
    target = SimBackend.target(spec)
    backend = SimBackend(spec)
    backend.prepare()
    cfg = _config(target, vector_width=4, items_per_thread=4)
    first = backend.evaluate(cfg, LIMITS)
    assert first.ok and first.details["estimated"] is False
    assert 8 <= first.metrics["registers"] <= 255
    # the repeat is answered from the resource cache: neither the table nor the compiler is asked
    backend.table = None
    monkeypatch.setattr(sim_module, "_compiled_figures", lambda *a: pytest.fail("compiled again"))
    again = backend.evaluate(cfg, LIMITS)
    assert again.metrics == first.metrics and again.details["estimated"] is False


def _tiny_template(folder) -> BackendSpec:
    """A one-file template whose ``mode=1`` does not compile and whose ``threads=2048`` cannot launch."""
    (folder / "tiny.cu").write_text(
        'extern "C" __global__ void tiny(float* out) {\n#if MODE == 1\n  out[threadIdx.x] = undefined_name;\n'
        "#else\n  out[threadIdx.x] = 1.0f;\n#endif\n}\n"
    )
    (folder / "tiny.py").write_text(
        "import numpy as np\n"
        "from workbench.core.domain.space import Slot\n"
        "from workbench.core.domain.templates import Arg, KernelTemplate, WorkProfile, read_cu\n"
        "TEMPLATE = KernelTemplate(name='tiny', title='t', description='d', source=read_cu(__file__), entry='tiny',\n"
        "  slots=(Slot('mode', (0, 1), 'compute', 'one of them does not compile'),\n"
        "         Slot('threads', (256, 2048), 'launch', 'one of them is too big a block')),\n"
        "  args=(Arg('out', 'out', 'float32', shape=lambda p: (int(p['n']),)),), problem={'n': 256},\n"
        "  default={'mode': 0, 'threads': 256}, grid=lambda p, c: (1, 1, 1), block=lambda p, c: (c['threads'], 1, 1),\n"
        "  make_inputs=lambda p, rng: {}, reference=lambda i, p: {'out': np.ones(int(p['n']))},\n"
        "  profile=lambda p, c: WorkProfile(bytes_read=0.0, bytes_written=1024.0, flops=0.0),\n"
        "  bytes_moved=lambda p: 1024.0, flops=lambda p: 0.0)\n"
    )
    return BackendSpec("sim", {"kernel": "tiny", "kernel_dirs": [str(folder)]})


def test_compile_errors_and_refused_launches_fail_like_on_a_real_gpu(tmp_path) -> None:
    spec = _tiny_template(tmp_path)
    target = SimBackend.target(spec)
    backend = SimBackend(spec)
    backend.prepare()
    good = backend.evaluate(target.space.config({"mode": 0, "threads": 256}), LIMITS)
    bad = backend.evaluate(target.space.config({"mode": 1, "threads": 256}), LIMITS)
    huge = backend.evaluate(target.space.config({"mode": 0, "threads": 2048}), LIMITS)
    assert good.ok and good.metrics["quality"] > 0.99  # float32 rounding of the reference: no emulate
    assert good.details["quality_source"] == "float32 rounding of the reference"
    assert bad.status is Status.COMPILE_ERROR
    assert "undefined_name" in bad.message and "undefined_name" in bad.log
    assert huge.status is Status.LAUNCH_ERROR and huge.message.startswith("invalid configuration argument")


def test_max_latency_aborts_hopeless_configs_keeping_a_bound() -> None:
    target, backend = _backend("vector_add", noise=False)
    m = backend.evaluate(target.default_config, EvalLimits(max_latency_ms=1e-4))
    bound = m.metric("latency_bound_ms")
    assert m.status is Status.ABORTED and m.message.startswith(f"aborted above {bound:.4g} ms")
    full = backend.evaluate(target.default_config, EvalLimits())
    assert full.ok and full.metric("latency_ms") >= bound > 1.5e-4
    # what the config holds is known without its timing: kept, so the chart of latency against
    # memory draws the aborted config at its bound on its default axis (it drew none of them)
    for held in ("memory_mb", "onchip_kb_per_sm"):
        assert m.metric(held) == full.metric(held), held


def test_every_shipped_template_evaluates_its_default_config() -> None:
    from workbench.core.domain.templates import load_templates

    for name in sorted(load_templates()):
        target, backend = _backend(name, noise=False)
        m = backend.evaluate(target.default_config, LIMITS)
        assert m.status in (Status.OK, Status.LAUNCH_ERROR), f"{name}: {m.status.value} {m.message}"
        if m.ok:
            assert m.metrics["latency_ms"] > 0 and 0.0 <= m.metrics["quality"] <= 1.0, name


def test_memory_is_per_config_device_workspace_and_on_chip_storage() -> None:
    """Device memory counts the workspace a config needs (two-pass partial sums); on-chip storage is
    shared memory plus registers x threads per block, times the blocks resident per SM."""
    target, backend = _backend("reduce_sum")
    tree = backend.evaluate(_config(target, strategy="shared_tree"), LIMITS).metrics
    two_pass = backend.evaluate(_config(target, strategy="two_pass", block_size=64, items_per_thread=1), LIMITS).metrics
    n = int(target.problem["n"])
    assert tree["memory_mb"] == pytest.approx((4 * n + 4) / 1e6)  # input + result, no workspace
    blocks = n // 64
    assert two_pass["memory_mb"] == pytest.approx((4 * n + 4 + 4 * blocks + 4) / 1e6)
    for m in (tree, two_pass):
        per_block = (m["smem_bytes"] + 4 * m["registers"] * m["threads_per_block"]) / 1024
        assert m["onchip_kb_per_block"] == pytest.approx(per_block)
        assert m["onchip_kb_per_sm"] >= per_block and m["onchip_kb_per_sm"] % per_block == pytest.approx(0)
    assert tree["threads_per_block"] == 256 and two_pass["threads_per_block"] == 64
    # the roofline's per-config traffic and work: two-pass also writes and reads its partials
    assert tree["dram_mb"] == pytest.approx((4 * n + 4) / 1e6)
    assert two_pass["dram_mb"] == pytest.approx((4 * n + 4 + 8 * blocks) / 1e6)
    assert two_pass["work_gflop"] > tree["work_gflop"] > n / 1e9 * 0.999


def _counting_template(folder, marker: str) -> BackendSpec:
    """Three configs that all compile (a fresh ``marker`` makes the source new to every cache)."""
    (folder / "counting.cu").write_text(
        f"// {marker}\n"
        'extern "C" __global__ void counting(float* out) { out[threadIdx.x] = K * 1.0f; }\n'
    )
    (folder / "counting.py").write_text(
        "import numpy as np\n"
        "from workbench.core.domain.space import Slot\n"
        "from workbench.core.domain.templates import Arg, KernelTemplate, WorkProfile, read_cu\n"
        "TEMPLATE = KernelTemplate(name='counting', title='t', description='d', source=read_cu(__file__), entry='counting',\n"
        "  slots=(Slot('k', (1, 2, 3), 'compute', 'a constant'),),\n"
        "  args=(Arg('out', 'out', 'float32', shape=lambda p: (int(p['n']),)),), problem={'n': 256},\n"
        "  default={'k': 1}, grid=lambda p, c: (1, 1, 1), block=lambda p, c: (256, 1, 1),\n"
        "  make_inputs=lambda p, rng: {}, reference=lambda i, p: {'out': np.ones(int(p['n']))},\n"
        "  profile=lambda p, c: WorkProfile(bytes_read=0.0, bytes_written=1024.0, flops=0.0),\n"
        "  bytes_moved=lambda p: 1024.0, flops=lambda p: 0.0)\n"
    )
    return BackendSpec("sim", {"kernel": "counting", "kernel_dirs": [str(folder)], "compile_wait_s": 0})


def _shared_memory_template(folder, marker: str, compile_wait_s: float = 0) -> BackendSpec:
    """Three configs, ``k`` times 5,000 floats of static shared memory each: k = 3 is over the 48 KiB
    a block may declare, so its compile fails (not its estimate, which reads no source)."""
    (folder / "big.cu").write_text(
        f"// {marker}\n"
        'extern "C" __global__ void big(float* out) {\n'
        "    __shared__ float s[5000 * K];\n"
        "    s[threadIdx.x] = K * 1.0f;\n"
        "    __syncthreads();\n"
        "    out[threadIdx.x] = s[(threadIdx.x + 1) % 256];\n"
        "}\n"
    )
    (folder / "big.py").write_text(
        "import numpy as np\n"
        "from workbench.core.domain.space import Slot\n"
        "from workbench.core.domain.templates import Arg, KernelTemplate, WorkProfile, read_cu\n"
        "TEMPLATE = KernelTemplate(name='big', title='t', description='d', source=read_cu(__file__), entry='big',\n"
        "  slots=(Slot('k', (1, 2, 3), 'compute', 'shared floats, in 5000s'),),\n"
        "  args=(Arg('out', 'out', 'float32', shape=lambda p: (int(p['n']),)),), problem={'n': 256},\n"
        "  default={'k': 1}, grid=lambda p, c: (1, 1, 1), block=lambda p, c: (256, 1, 1),\n"
        "  make_inputs=lambda p, rng: {}, reference=lambda i, p: {'out': np.ones(int(p['n']))},\n"
        "  profile=lambda p, c: WorkProfile(bytes_read=0.0, bytes_written=4.0 * p['n'], flops=0.0),\n"
        "  bytes_moved=lambda p: 4.0 * p['n'], flops=lambda p: 0.0)\n"
    )
    return BackendSpec("sim", {"kernel": "big", "kernel_dirs": [str(folder)], "compile_wait_s": compile_wait_s})


def test_a_compile_that_has_not_landed_is_estimated_then_refined(tmp_path) -> None:
    """Not waiting for a compile gives a marked estimate at once; evaluating the config again
    waits for that compile and gives the compiler's figures."""
    import uuid

    spec = _counting_template(tmp_path, uuid.uuid4().hex)
    target = SimBackend.target(spec)
    backend = SimBackend(spec)
    backend.prepare()
    config = target.space.config({"k": 2})
    first = backend.evaluate(config, LIMITS)
    assert first.ok and first.details["estimated"] is True
    assert first.details["resources_pending"] is True
    assert first.details["resource_source"] == "estimate (compile pending)"
    again = backend.evaluate(config, LIMITS)
    assert again.ok and again.details["estimated"] is False and "resources_pending" not in again.details
    assert again.details["resource_source"] in ("nvrtc", "cache")


def test_a_compile_in_the_disk_cache_is_used_at_once_without_waiting(tmp_path) -> None:
    """A source compiled by an earlier process is read from the compiler's disk cache in the
    evaluation itself: never estimated and queued behind the background compiles."""
    import uuid

    from workbench.backends import sim
    from workbench.core.model.compiler import clear_memory_cache

    spec = _counting_template(tmp_path, uuid.uuid4().hex)
    target = SimBackend.target(spec)
    config = target.space.config({"k": 3})
    first = SimBackend(spec)
    first.evaluate(config, LIMITS)
    # waited for the compile: now on disk ("cache" when the background compile had put it in the
    # compiler's memory just before this evaluation looked, as happens on a loaded machine)
    assert first.evaluate(config, LIMITS).details["resource_source"] in ("nvrtc", "cache")
    sim._RESOURCE_CACHE.clear()
    clear_memory_cache()  # as a new process would start
    fresh = SimBackend(spec)  # compile_wait_s 0
    measured = fresh.evaluate(config, LIMITS)
    assert measured.ok and "resources_pending" not in measured.details
    assert measured.details["resource_source"] == "cache" and measured.details["estimated"] is False


def test_a_template_the_table_says_compiles_slowly_is_not_waited_for(tmp_path) -> None:
    """The shipped entry records what its compiles cost; past the wait, the first evaluations do
    not each spend the wait before estimating (refinements still wait)."""
    from workbench.core.model.resource_table import TemplateFigures

    spec = BackendSpec("sim", {"kernel": "vector_add", "compile_wait_s": 1.0})
    backend = SimBackend(spec)
    backend.prepare()
    config = SimBackend.target(spec).space.default_config()
    slow = TemplateFigures({"configs": {"x": [32, 0, 0, 0, 0], "y": [32, 0, 0, 0, 0]}, "seconds": 6.0, "workers": 2}, "nvrtc")
    quick = TemplateFigures({"configs": {"x": [32, 0, 0, 0, 0], "y": [32, 0, 0, 0, 0]}, "seconds": 0.2, "workers": 2}, "nvrtc")
    assert slow.compile_s == pytest.approx(6.0) and quick.compile_s == pytest.approx(0.2)
    backend.table = slow
    assert backend._wait_for(config, LIMITS) == 0.0
    backend.table = quick
    assert backend._wait_for(config, LIMITS) == 1.0
    backend.table = slow
    backend._estimated_once.add(config.id)
    assert backend._wait_for(config, LIMITS) > 1.0  # a refinement waits for its compile


def test_background_compiles_run_the_most_promising_first_and_a_waited_for_one_at_once() -> None:
    import threading

    from workbench.backends.compile_jobs import URGENT, CompileJobs

    jobs = CompileJobs(threads=1)
    release = threading.Event()
    order: list[str] = []
    busy = jobs.submit("busy", lambda: release.wait(10))
    for name, priority in (("slow", 3.0), ("mid", 2.0), ("fast", 1.0), ("unknown", math.nan), ("later", 2.5)):
        jobs.submit(name, lambda name=name: order.append(name), priority=priority)
    jobs.submit("later", lambda: order.append("duplicate"), priority=URGENT)  # someone waits for it
    release.set()
    busy.result(timeout=10)
    deadline = time.monotonic() + 10
    while len(order) < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert order == ["later", "fast", "mid", "slow", "unknown"]


def test_at_exit_the_compiles_under_way_finish_and_the_queued_ones_are_dropped(tmp_path) -> None:
    """A compile thread still inside the compiler when the interpreter tore down crashed the
    process after a command had printed its results (segmentation fault, exit status 139)."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(f"""
        import threading, time
        from pathlib import Path
        from workbench.backends.compile_jobs import CompileJobs
        jobs = CompileJobs(threads=1)
        started = threading.Event()
        def running():
            started.set()
            time.sleep(0.5)
            Path({str(tmp_path / "ran")!r}).write_text("done")
        jobs.submit("running", running)
        queued = jobs.submit("queued", lambda: Path({str(tmp_path / "queued")!r}).write_text("ran"))
        started.wait(10)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "ran").read_text() == "done" and not (tmp_path / "queued").exists()


def test_compile_threads_yield_the_cpu_to_the_search() -> None:
    import os
    import sys
    import threading

    from workbench.backends.compile_jobs import CompileJobs

    if not sys.platform.startswith("linux"):
        pytest.skip("per-thread priorities are a Linux feature")
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    niceness = CompileJobs(threads=1).submit("nice", lambda: os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
    assert niceness.result(timeout=10) > mine or mine == 19
    assert os.getpriority(os.PRIO_PROCESS, 0) == mine  # the calling thread keeps its priority


def test_a_compile_dropped_at_exit_is_no_traceback(caplog) -> None:
    """The callback that stores a landed compile's figures read a cancelled future's exception,
    which raises: every compile dropped at exit logged a traceback after the run's results."""
    import logging
    from concurrent.futures import Future

    backend = SimBackend(BackendSpec("sim", {"kernel": "vector_add"}))
    backend.prepare()
    config = next(iter(backend.space))
    dropped: Future = Future()
    dropped.cancel()
    with caplog.at_level(logging.ERROR):
        result = backend._pending_estimate(config, "dropped-key", dropped)
    assert result["resources_pending"] and not caplog.records


def test_compile_wait_must_be_a_non_negative_number() -> None:
    for bad in (-1, "soon"):
        with pytest.raises(WorkbenchError, match="compile_wait_s"):
            SimBackend(BackendSpec("sim", {"kernel": "vector_add", "compile_wait_s": bad}))


def test_background_compile_jobs_run_in_parallel_once_per_key() -> None:
    import threading

    from workbench.backends.compile_jobs import CompileJobs

    jobs = CompileJobs(threads=2)
    both_running = threading.Barrier(2, timeout=10)  # only passes when two jobs run at once
    calls = []

    def work(name: str):
        def run() -> str:
            calls.append(name)
            both_running.wait()
            return name
        return run

    first = jobs.submit("a", work("a"))
    assert jobs.submit("a", work("again")) is first  # same key while queued or running: same job
    second = jobs.submit("b", work("b"))
    assert (first.result(timeout=10), second.result(timeout=10)) == ("a", "b")
    assert sorted(calls) == ["a", "b"]


def test_measured_trials_report_the_memory_figures_the_simulator_reports() -> None:
    """The CUDA backend's metrics (computed here from recorded timings: no GPU involved, the backend
    object stands in as the few attributes ``_metrics`` reads) carry the same per-config device and
    on-chip memory as a simulated trial, so a measured session's memory chart is not flat."""
    from types import SimpleNamespace

    from workbench.backends.cuda import CudaBackend
    from workbench.core.model.footprint import device_memory_mb
    from workbench.core.model.gpus import load_gpu

    target, sim = _backend("reduce_sum")
    two_pass = _config(target, strategy="two_pass", block_size=64, items_per_thread=1)
    tree = _config(target, strategy="shared_tree")
    stand_in = SimpleNamespace(template=sim.template, problem=target.problem, copy_bandwidth_gbs=None,
                               device={"peak_bandwidth_gbs": 4800.0, "peak_fp32_gflops": 60000.0},
                               gpu_limits=load_gpu("H200"), baseline=None, _nvml=None)
    stand_in._footprint = lambda *args: CudaBackend._footprint(stand_in, *args)  # (what an aborted one keeps too)
    compiled = SimpleNamespace(registers=32, smem_bytes=512)
    measured = {name: CudaBackend._metrics(stand_in, [0.1, 0.1, 0.1], {}, {}, (64, 1, 1), (100, 1, 1), 0,
                                           compiled, config)
                for name, config in (("two_pass", two_pass), ("tree", tree))}
    assert measured["two_pass"]["memory_mb"] == pytest.approx(device_memory_mb(sim.template, target.problem, two_pass))
    assert measured["two_pass"]["memory_mb"] > measured["tree"]["memory_mb"]
    simulated = sim.evaluate(two_pass, LIMITS).metrics
    assert measured["two_pass"]["memory_mb"] == pytest.approx(simulated["memory_mb"])
    assert measured["tree"]["onchip_kb_per_block"] == pytest.approx((512 + 4 * 32 * 64) / 1024)
    assert measured["tree"]["onchip_kb_per_sm"] >= measured["tree"]["onchip_kb_per_block"]


@pytest.mark.parametrize("kernel", ["vector_add", "conv2d"])
def test_every_metric_a_trial_reports_is_declared(kernel: str) -> None:
    """The declaration is what a weight or constraint is checked against before any trial: a
    reported metric missing from it could not be weighted in a new run."""
    target, backend = _backend(kernel)
    measurement = backend.evaluate(target.default_config, LIMITS)
    assert measurement.ok
    assert set(measurement.metrics) <= SimBackend.metrics
    aborted = backend.evaluate(target.default_config, EvalLimits(max_latency_ms=1e-9))
    assert aborted.status is Status.ABORTED and set(aborted.metrics) <= SimBackend.metrics


def test_a_compile_submitted_after_shutdown_is_dropped_not_queued() -> None:
    from workbench.backends.compile_jobs import CompileJobs

    jobs = CompileJobs(threads=1)
    jobs.shutdown(wait_s=0)
    late = jobs.submit("late", lambda: 1)
    assert late.cancelled() and jobs.pending() == 0


def test_a_config_no_sm_can_hold_is_a_launch_error_not_an_infinite_latency() -> None:
    """A shipped conv2d config whose compiled registers fit the per-block total but not the
    register file in warp groups (on an H200): refused as the driver refuses it, never "ok" with
    an infinite latency counted among the feasible configs."""
    backend = SimBackend(BackendSpec("sim", {"kernel": "conv2d", "gpu_model": "H200", "noise": False}))
    backend.prepare()
    config = next(c for c in backend.space if c.id == "5fa409b18e21")
    measured = backend.evaluate(config, LIMITS)
    assert measured.status is Status.LAUNCH_ERROR, (measured.status, measured.metrics)
    assert measured.message.startswith("too many resources requested for launch")
    assert measured.details["resource_source"] == "table" and measured.details["estimated"] is False


def test_every_outcome_on_estimated_resources_carries_the_mark(monkeypatch) -> None:
    """A wrong result, like a launch refusal or a timing, rests on the figures it was simulated
    with: an estimate's marks travel with it, so the refinement finds it and nothing reads the
    estimate as a compile's fact."""
    backend = SimBackend(BackendSpec("sim", {"kernel": "gelu", "gpu_model": "H200", "noise": False}))
    backend.prepare()
    config = next(iter(backend.space))
    estimate = {**backend._estimate(config), "resources_pending": True, "resource_source": "estimate (compile pending)"}
    monkeypatch.setattr(backend, "_resources", lambda *_a, **_k: dict(estimate))
    monkeypatch.setattr(backend, "_emulated", lambda _c: (Status.WRONG_RESULT, "max error 1.0 > tolerance", 0.1))
    wrong = backend.evaluate(config, LIMITS)
    assert wrong.status is Status.WRONG_RESULT
    assert wrong.details["estimated"] is True and wrong.details["resources_pending"] is True
    assert wrong.details["resource_source"] == "estimate (compile pending)"


def test_buffers_beyond_the_gpus_memory_are_an_allocation_failure() -> None:
    """A problem whose buffers exceed the modelled GPU's memory failed on a real device before any
    launch: it was simulated as a feasible 134 ms run holding 550 GB on a 141 GB H200."""
    import dataclasses

    backend = SimBackend(BackendSpec("sim", {"kernel": "vector_add", "gpu_model": "H200", "problem": {"n": 2**24}}))
    backend.prepare()
    config = next(iter(backend.space))
    assert backend.evaluate(config, LIMITS).ok  # 201 MB of buffers on 141 GiB
    backend.gpu = dataclasses.replace(backend.gpu, memory_gb=0.1)  # a board of 107 MB
    measured = backend.evaluate(config, LIMITS)
    assert measured.status is Status.RUNTIME_ERROR and measured.message.startswith("out of memory")
    assert "0.1 GiB" in measured.message
    # a card's memory is in GiB, as makers state it: buffers of 11.3e9 bytes fit an "11 GB" card
    # (11.8e9 bytes), which decimal gigabytes refused
    from workbench.core.model.footprint import device_memory_mb

    needed_mb = device_memory_mb(backend.template, backend.problem, config)
    backend.gpu = dataclasses.replace(backend.gpu, memory_gb=needed_mb * 1e6 / 2**30 * 1.01)
    assert backend.evaluate(config, LIMITS).ok
    backend.gpu = dataclasses.replace(backend.gpu, memory_gb=needed_mb * 1e6 / 2**30 * 0.99)
    assert not backend.evaluate(config, LIMITS).ok
