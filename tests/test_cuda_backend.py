"""The CUDA backend's device-side steps, checked without a GPU and without CuPy.

What can run on the CPU runs for real: the chunked verification (NumPy stands in for CuPy; both
have the same array API), the launch check against a device's own limits, the temporary files of
the copy probe, the environment probe's messages, gelu's tolerance against its emulated fast path.
The calls into CuPy and NVML go through small fakes that behave as the real objects are documented
to behave (each says which); ``tests/test_cuda_api.py`` checks those documented facts against the
real CuPy where it is installed.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
import time
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from workbench.backends.cuda import (
    MAX_SAMPLES,
    MIN_SAMPLES,
    PRECISION_MIN_SAMPLES,
    SAMPLE_TIME_BUDGET_S,
    TARGET_MEDIAN_ERROR,
    median_error,
    timed_enough,
    warm_up,
    error_metrics,
    is_sticky,
    nvml_handle,
    read_probe_cache,
    store_json,
)
from workbench.core.model.cuda_module import DEFAULT_SMEM_PER_BLOCK, opt_in_shared_memory, upload_constant
from workbench.backends.cuda_env import CudaEnvironment, probe
from workbench.core.model.compiler import compile_cuda
from workbench.core.model.gpus import device_limits
from workbench.core.model.perfmodel import launch_check
from workbench.core.domain.measurement import Status
from workbench.core.domain.templates import load_templates
from workbench.core.model.quality import quality_of
from workbench.core.model.verify import verify_outputs

#: What an H100 SXM's driver reports for the attributes the backend reads (cudaDeviceGetAttribute).
H100_ATTRIBUTES = {
    "cudaDevAttrMaxThreadsPerBlock": 1024,
    "cudaDevAttrMaxThreadsPerMultiProcessor": 2048,
    "cudaDevAttrMaxRegistersPerBlock": 65536,
    "cudaDevAttrMaxRegistersPerMultiprocessor": 65536,
    "cudaDevAttrMaxSharedMemoryPerBlock": 49152,
    "cudaDevAttrMaxSharedMemoryPerBlockOptin": 232448,
    "cudaDevAttrMaxSharedMemoryPerMultiprocessor": 233472,
}


# --- verification (item 2) ---------------------------------------------------------------------------


def test_verification_passes_a_correct_float32_result_and_reports_its_error() -> None:
    rng = np.random.default_rng(0)
    want = rng.normal(size=(64, 33))
    verdict = verify_outputs(np, {"y": want.astype(np.float32)}, {"y": want}, 1e-5, 1e-6, chunk=100)
    assert not verdict.wrong and verdict.checked == want.size
    assert 0 < verdict.max_abs_err < 1e-6 and 0 < verdict.max_rel_err < 1e-6
    assert error_metrics(verdict, 1e-5)["quality"] > 0.8


def test_verification_finds_the_first_wrong_element_across_chunks() -> None:
    want = np.arange(1000, dtype=np.float64)
    got = want.astype(np.float32)
    got[703] = np.nan  # an element the kernel never wrote (outputs are poisoned with NaN)
    got[905] += 1.0
    verdict = verify_outputs(np, {"y": got}, {"y": want}, 1e-5, 1e-6, chunk=64)
    assert verdict.wrong and verdict.bad == 2
    assert verdict.message.startswith("y[703] = nan, expected 703")
    assert "2 of 1000 elements" in verdict.message
    assert math.isinf(verdict.max_abs_err)
    assert error_metrics(verdict, 1e-5)["quality"] == 0.0


def test_verification_of_a_wrong_size_is_wrong() -> None:
    verdict = verify_outputs(np, {"y": np.zeros(5, np.float32)}, {"y": np.zeros(6)}, 0.0, 0.0)
    assert verdict.wrong and "5 elements, expected 6" in verdict.message


def test_verification_reads_only_the_outputs_named_by_the_reference() -> None:
    inputs_and_outputs = {"x": np.full(4, np.nan, np.float32), "y": np.ones(4, np.float32)}
    assert not verify_outputs(np, inputs_and_outputs, {"y": np.ones(4)}, 0.0, 0.0).wrong


# --- launch check before launch (items 3 and 5) ---------------------------------------------------------


def test_register_hungry_configs_are_refused_before_launch_from_the_device_limits() -> None:
    gpu = device_limits("H100", H100_ATTRIBUTES)
    refusal = launch_check(gpu, (256, 3, 1), 4096, 255)  # 255 registers x 768 threads
    assert refusal is not None and refusal.startswith("too many resources requested for launch")
    assert "65536 registers per block" in refusal
    # the product it says adds up, and the allocation it compares is named as such
    assert "255 registers x 768 threads = 195840, 196608 as allocated per warp in units of 256 > 65536" in refusal
    assert launch_check(gpu, (256, 3, 1), 4096, 80) is None  # 80 x 768 fits in 64 K registers
    refusal = launch_check(gpu, (1024, 1, 1), 4096, 128)  # an exact product needs no second figure
    assert refusal is not None and "128 registers x 1024 threads = 131072 > 65536" in refusal


def _backend_loading_with(registers: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A CUDA backend of vector_add whose modules load (no device here) into a kernel the driver
    says uses ``registers``, whatever ptxas reported: the compile is real (NVRTC)."""
    from workbench.backends.cuda import CudaBackend

    monkeypatch.setenv("KERNEL_WORKBENCH_CACHE_DIR", str(tmp_path))

    class Function:
        ptr = 0x7F00

        def __call__(self, grid: Any, block: Any, args: Any, shared_mem: int = 0) -> None:
            launched.append((grid, block))

    class Module:
        def load(self, cubin: bytes) -> None:
            assert cubin

        def get_function(self, name: str) -> Function:
            return Function()

    class Driver:
        CU_FUNC_ATTRIBUTE_NUM_REGS, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 4, 1

        def funcGetAttribute(self, attribute: int, f: int) -> int:
            return registers if attribute == self.CU_FUNC_ATTRIBUTE_NUM_REGS else 0

    class Device:
        def synchronize(self) -> None:
            pass

    launched: list[Any] = []
    backend = CudaBackend.__new__(CudaBackend)
    backend.cp = types.SimpleNamespace(cuda=types.SimpleNamespace(function=types.SimpleNamespace(Module=Module),
                                                                  driver=Driver(), Device=Device))
    backend.resets, backend.buffers, backend.host_inputs, backend.launch_args = [], {}, {}, []
    backend.template = load_templates()["vector_add"]
    backend.problem = backend.template.resolve_problem(None)
    backend.arch, backend.needs_restart = "sm_90", False
    backend.gpu_limits = device_limits("H100", H100_ATTRIBUTES)
    return backend


def test_the_loaded_kernels_registers_are_checked_when_the_compilers_report_differs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ptxas's report read 0 registers for a few gelu configs on an H200: the launch check passed
    on that, and the session recorded 0. The driver's figure for the loaded kernel now decides."""
    backend = _backend_loading_with(255, tmp_path, monkeypatch)
    config = backend.template.space(backend.problem).default_config().replace(block_size=1024)
    ran = backend._launched(config, lambda phase: None)
    assert ran.status is Status.LAUNCH_ERROR and ran.metric("registers") == 255
    assert "255 registers x 1024 threads" in ran.message and "driver" in ran.details["resources_from"]
    fits = _backend_loading_with(40, tmp_path, monkeypatch)._launched(config, lambda phase: None)
    assert fits.corrected and fits.compiled.registers == 40 and fits.resources["registers"] == 40
    same = _backend_loading_with(0, tmp_path, monkeypatch)  # what the report says here, as the driver would
    report = compile_cuda(same.template.render(config, same.problem), arch="sm_90").registers
    assert not _backend_loading_with(report, tmp_path, monkeypatch)._launched(config, lambda phase: None).corrected


def test_a_driver_that_will_not_give_the_figures_leaves_the_compilers(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    backend = _backend_loading_with(40, tmp_path, monkeypatch)

    def refuse(attribute: int, f: int) -> int:
        raise RuntimeError("not supported")

    backend.cp.cuda.driver.funcGetAttribute = refuse
    config = backend.template.space(backend.problem).default_config()
    ran = backend._launched(config, lambda phase: None)
    assert not ran.corrected and ran.compiled.registers > 0


def test_static_plus_dynamic_shared_memory_is_compared_with_the_opt_in_limit() -> None:
    gpu = device_limits("H100", H100_ATTRIBUTES)
    assert launch_check(gpu, (128, 1, 1), 232448, 32) is None  # static + dynamic at the opt-in maximum
    refusal = launch_check(gpu, (128, 1, 1), 232448 + 1, 32)
    assert refusal is not None and "232448" in refusal


class _Driver:
    """Stands in for ``cupy.cuda.driver``: records ``funcSetAttribute(f, attribute, value)`` (the
    argument order of CuPy's ``funcSetAttribute(intptr_t f, int attribute, int value)``)."""

    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8  # CUfunction_attribute in cuda.h

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def funcSetAttribute(self, f: int, attribute: int, value: int) -> None:  # CuPy's name
        self.calls.append((f, attribute, value))


class _Function:
    """Stands in for ``cupy.cuda.function.Function``: a compiled type with ``ptr`` and no other settable
    attribute (``__slots__``), so setting ``max_dynamic_shared_size_bytes`` raises as on the real one."""

    __slots__ = ("ptr",)

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr


def test_shared_memory_opt_in_uses_the_driver_when_static_plus_dynamic_exceeds_48_kb() -> None:
    driver, function = _Driver(), _Function(0x7F00)
    with pytest.raises(AttributeError):
        function.max_dynamic_shared_size_bytes = 64 * 1024  # what the backend used to do
    assert not opt_in_shared_memory(driver, function, 0, DEFAULT_SMEM_PER_BLOCK)
    assert driver.calls == []
    # 40 KB static + 16 KB dynamic: each under 48 KB, together over: the launch needs the opt-in
    assert opt_in_shared_memory(driver, function, 40 * 1024, 16 * 1024)
    assert driver.calls == [(0x7F00, 8, 16 * 1024)]


# --- constants (item 1) -------------------------------------------------------------------------------


class _Module:
    """Stands in for ``cupy.cuda.function.Module``: ``get_global_var`` returns the symbol's bare device
    address as an int, as CuPy's does (it returns ``driver.moduleGetGlobal(...) -> intptr_t``)."""

    def get_global_var(self, name: str) -> int:
        assert name == "d_filter"
        return 0x7F0000001000


class _Runtime:
    """Stands in for ``cupy.cuda.runtime``: records ``memcpy(dst, src, size, kind)`` and copies the
    source bytes, so the test sees what would reach the device."""

    memcpyHostToDevice = 1  # cudaMemcpyKind

    def __init__(self) -> None:
        self.copies: list[tuple[int, bytes, int]] = []

    def memcpy(self, dst: int, src: int, size: int, kind: int) -> None:
        import ctypes

        assert all(isinstance(v, int) for v in (dst, src, size, kind))
        self.copies.append((dst, ctypes.string_at(src, size), kind))


def test_constant_upload_copies_the_filter_to_the_symbol_address() -> None:
    conv = load_templates()["conv2d"]
    problem = conv.resolve_problem(conv.small_problem)
    host = conv.make_inputs(problem, np.random.default_rng(3))["d_filter"]
    runtime = _Runtime()
    upload_constant(runtime, _Module(), "d_filter", host)
    (dst, data, kind), = runtime.copies
    assert dst == 0x7F0000001000 and kind == runtime.memcpyHostToDevice
    np.testing.assert_array_equal(np.frombuffer(data, dtype=np.float32), np.ravel(host).astype(np.float32))


# --- sticky errors (item 3) ---------------------------------------------------------------------------


class _CudaError(RuntimeError):
    """Stands in for CuPy's CUDA errors, which carry the error code as ``status`` (the real
    ``CUDADriverError`` cannot be built without libcuda; test_cuda_api.py uses the real runtime one)."""

    def __init__(self, status: int) -> None:
        super().__init__(f"CUDA error {status}")
        self.status = status


@pytest.mark.parametrize("status", [700, 716, 719])
def test_illegal_address_misaligned_address_and_launch_failure_are_sticky(status: int) -> None:
    assert is_sticky(_CudaError(status))


@pytest.mark.parametrize("status", [1, 2, 9, 200, 209, 218, 701])
def test_refused_launches_and_bad_images_are_not_sticky(status: int) -> None:
    assert not is_sticky(_CudaError(status))  # 701: too many resources requested for launch


def test_errors_without_a_cuda_status_are_not_sticky() -> None:
    assert not is_sticky(TypeError("bad argument"))


# --- NVML by PCI bus id (item 4) ------------------------------------------------------------------------


def test_nvml_handle_is_looked_up_by_the_cuda_devices_pci_bus_id(monkeypatch: pytest.MonkeyPatch) -> None:
    # A small fake of nvidia-ml-py's module: whether the real one has these functions is checked in
    # test_cuda_api.py; what matters here is which lookup the backend uses.
    looked_up: list[str] = []
    fake = types.SimpleNamespace(
        nvmlInit=lambda: None,
        nvmlDeviceGetHandleByPciBusId=lambda bus_id: looked_up.append(bus_id) or f"handle {bus_id}",
        nvmlDeviceGetHandleByIndex=lambda index: pytest.fail("NVML's index is not CUDA's index"),
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    runtime = types.SimpleNamespace(deviceGetPCIBusId=lambda index: {0: "0000:C1:00.0", 1: "0000:41:00.0"}[index])
    assert nvml_handle(runtime, 1) == "handle 0000:41:00.0"
    assert looked_up == ["0000:41:00.0"]


def test_nvml_handle_is_none_without_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)
    assert nvml_handle(types.SimpleNamespace(deviceGetPCIBusId=lambda i: "0000:01:00.0"), 0) is None


# --- copy probe cache (item 7) ------------------------------------------------------------------------


def test_probe_cache_writes_under_a_temporary_name_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "copy_probe.json"
    (tmp_path / "copy_probe.tmp").mkdir()  # another writer's fixed-name temporary in the way
    assert store_json(path, {"GPU": 1.0})
    assert json.loads(path.read_text()) == {"GPU": 1.0}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy_probe.json", "copy_probe.tmp"]


@pytest.mark.parametrize("content", ['["GPU"]', '{"GPU": "fast"}', '{"GPU": [1]}', '{"GPU": -1}', '{"GPU": true}',
                                     "[" * 100_000, None])
def test_a_damaged_probe_cache_is_measured_again(tmp_path: Path, content: str | None) -> None:
    """copy_probe did float(cached[name]) on whatever JSON was there: a list holding the name, or a
    value of text or a list, was a TypeError/ValueError at the backend's start; a FIFO blocked it."""
    path = tmp_path / "copy_probe.json"
    if content is None:
        os.mkfifo(path)
    else:
        path.write_text(content)
    assert read_probe_cache(path) == {}
    path.unlink()
    path.write_text('{"GPU": 812.5, "other": "x"}')
    assert read_probe_cache(path) == {"GPU": 812.5}


def test_the_probe_cache_lives_inside_the_cache_folder_not_beside_it(tmp_path: Path, monkeypatch) -> None:
    """It was written to the parent of $KERNEL_WORKBENCH_CACHE_DIR, the person's folder there,
    over any copy_probe.json of theirs. CuPy is a CPU stand-in: the code path is the backend's."""
    from workbench.backends.cuda import copy_probe

    class Event:
        def record(self) -> None:
            pass

        def synchronize(self) -> None:
            pass

    cp = types.SimpleNamespace(float32=np.float32, ones=lambda n, dtype: np.ones(4, dtype), empty_like=np.empty_like,
                               cuda=types.SimpleNamespace(Event=Event, get_elapsed_time=lambda a, b: 1.0))
    monkeypatch.setenv("KERNEL_WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    theirs = tmp_path / "copy_probe.json"
    theirs.write_text("my own notes\n")
    bandwidth = copy_probe(cp, "GPU")
    assert theirs.read_text() == "my own notes\n"
    assert json.loads((tmp_path / "cache" / "copy_probe.json").read_text()) == {"GPU": bandwidth}


def test_concurrent_probe_writers_leave_a_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "copy_probe.json"
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for i in range(40):
                assert store_json(path, {f"gpu {n}": float(i), "pad": "x" * 4096})
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(json.loads(path.read_text())) == 2
    assert [p.name for p in tmp_path.iterdir()] == ["copy_probe.json"]


# --- what is missing (item 6) ---------------------------------------------------------------------------


def test_probe_says_cupy_is_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)
    env = probe()
    assert env.cupy_version is None
    missing = env.missing()
    assert len(missing) == 1 and missing[0].startswith("CuPy is not installed")
    assert "scripts/install.sh --cuda" in missing[0]


def test_missing_names_headers_nvrtc_and_devices_separately() -> None:
    env = CudaEnvironment("14.2.0", "", 0, "cudaErrorNoDevice: no CUDA-capable device is detected", None, None)
    missing = env.missing()
    assert [m.split(" ")[0] for m in missing] == ["CUDA", "NVRTC", "no"]
    assert "cuda_fp16.h" in missing[0] and "cupy-cuda12x[ctk]" in missing[0]
    assert missing[2] == "no CUDA device visible to CuPy 14.2.0: cudaErrorNoDevice: no CUDA-capable device is detected"
    ready = CudaEnvironment("14.2.0", "", 2, "", "/opt/cuda/include", "/opt/cuda/lib64/libnvrtc.so.12")
    assert ready.missing() == [] and ready.summary().startswith("CuPy 14.2.0, 2 device(s)")


def _install_extras(tmp_path: Path, *args: str, gpu_listing: str | None) -> str:
    """The extras scripts/install.sh would install (WORKBENCH_INSTALL_PRINT=1 stops before installing).

    ``gpu_listing``: what a fake ``nvidia-smi -L`` prints (a small script first on PATH, the one thing
    that cannot stand in for a GPU machine here); None: no nvidia-smi at all.
    """
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "nvidia-smi"
    if gpu_listing is None:
        fake.unlink(missing_ok=True)
    else:
        fake.write_text(f"#!/bin/sh\n[ \"$1\" = -L ] && printf '%s\\n' '{gpu_listing}'\n")
        fake.chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "WORKBENCH_INSTALL_PRINT": "1", "HOME": str(tmp_path)}
    script = Path(__file__).resolve().parent.parent / "scripts" / "install.sh"
    result = subprocess.run(["bash", str(script), *args], capture_output=True, text=True, env=env, timeout=30)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def test_install_script_adds_the_cuda_extra_when_nvidia_smi_lists_a_gpu_or_when_asked(tmp_path: Path) -> None:
    gpu = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5d5f0c1a)"
    assert _install_extras(tmp_path, "--test", gpu_listing=None) == "extras: [test]"
    assert _install_extras(tmp_path, "--test", gpu_listing="") == "extras: [test]"  # driver, no GPU
    assert _install_extras(tmp_path, "--test", gpu_listing=gpu) == "extras: [test,cuda12]"
    assert _install_extras(tmp_path, "--cuda", gpu_listing=None) == "extras: [cuda12]"
    assert _install_extras(tmp_path, gpu_listing=None) == "extras: none"


def test_the_gpus_quality_is_the_simulators_for_the_same_outputs() -> None:
    """On an H200 the CUDA backend scored gelu's fast path 0.41 from the element-wise error (which
    the cancellation where y goes to 0 inflates) while the simulator counts digits of the normwise
    error (0.84, and the device's outputs 0.87): a min-quality limit meant two things."""
    template = load_templates()["gelu"]
    problem = template.resolve_problem({"n": 1 << 16})
    inputs = template.make_inputs(problem, np.random.default_rng(0))
    expected = template.reference(inputs, problem)
    config = template.space(problem).default_config().replace(fast_math=True)
    outputs = template.emulate(inputs, problem, config)
    rtol, atol = template.tolerance
    verdict = verify_outputs(np, outputs, expected, rtol, atol, chunk=1000)  # chunks must not change it
    assert not verdict.wrong
    assert error_metrics(verdict, rtol)["quality"] == pytest.approx(quality_of(outputs, expected))
    assert verdict.max_rel_err > 100 * verdict.normwise_err  # the element-wise figure stays a metric


def test_the_worst_output_decides_the_normwise_error() -> None:
    want = {"a": np.array([1.0, 2.0, 4.0]), "b": np.array([0.5, -0.5])}
    got = {"a": np.array([1.0, 2.0, 4.004]), "b": np.array([0.5, -0.499])}
    verdict = verify_outputs(np, got, want, 1.0, 1.0)
    assert verdict.normwise_err == pytest.approx(max(0.004 / 4.0, 0.001 / 0.5))
    assert verify_outputs(np, {"a": np.zeros(3)}, {"a": np.zeros(3)}, 0.0, 0.0).normwise_err == 0.0


@pytest.mark.parametrize("want", [[1.0, np.inf], [1.0, np.nan], [np.nan, 1.0]])
@pytest.mark.parametrize("chunk", [1, 1000])
def test_a_reference_that_is_not_finite_has_no_quality_in_any_chunking(want: list[float], chunk: int) -> None:
    """Python's max() drops a NaN: a NaN or infinite reference once scored quality 1.0 on the GPU
    (0 with quality_of on the host), or 0 or 1 depending on the chunk it fell in."""
    got, expected = {"a": np.array([1.0, 3.0])}, {"a": np.array(want)}
    verdict = verify_outputs(np, got, expected, 1e-3, 1e-3, chunk=chunk)
    assert verdict.normwise_err == math.inf and verdict.max_abs_err == math.inf
    assert error_metrics(verdict, 1e-3)["quality"] == quality_of(got, expected) == 0.0


# --- how many launches a measurement takes --------------------------------------------------------------


def _samples_until_enough(spread: float, seconds_per_sample: float = 0.0, seed: int = 0) -> list[float]:
    rng = np.random.default_rng(seed)
    samples: list[float] = []
    while not timed_enough(samples, len(samples) * seconds_per_sample):
        samples.append(float(1.0 + spread * rng.standard_normal()))
    return samples


def test_a_steady_kernel_is_timed_until_its_precision_is_first_judged() -> None:
    assert len(_samples_until_enough(0.0005)) == PRECISION_MIN_SAMPLES


def test_a_scattered_kernel_is_timed_until_its_median_is_known_to_the_target() -> None:
    samples = _samples_until_enough(0.015)  # launches scattering by 1.5%, as short kernels do
    assert 100 < len(samples) < MAX_SAMPLES
    assert median_error(samples) <= TARGET_MEDIAN_ERROR < median_error(samples[:-8])


def test_timing_stops_at_the_time_budget_and_at_the_sample_cap() -> None:
    slow = _samples_until_enough(0.05, seconds_per_sample=0.01)
    assert len(slow) == int(SAMPLE_TIME_BUDGET_S / 0.01) + 1
    assert len(_samples_until_enough(0.05, seconds_per_sample=0.2)) == MIN_SAMPLES  # a 200 ms kernel
    assert len(_samples_until_enough(0.5)) == MAX_SAMPLES


def test_a_few_slow_outliers_do_not_keep_a_steady_kernel_sampling() -> None:
    samples = [1.0] * 40 + [3.0] * 3  # a clock change, another process: the IQR ignores them
    assert median_error(samples) == pytest.approx(median_error([1.0] * 43))
    assert timed_enough(samples + [1.0] * 3, 0.0)


def test_identical_readings_of_a_short_kernel_are_not_taken_as_exact() -> None:
    """Event timings come in steps of about 0.5 us: a 25 us kernel whose every reading falls on
    the same step is known to no better than that step's rounding, not to 0 (which would stop
    the timing at the first look)."""
    readings = [0.025] * PRECISION_MIN_SAMPLES
    assert median_error(readings) > TARGET_MEDIAN_ERROR and not timed_enough(readings, 0.0)
    count = PRECISION_MIN_SAMPLES
    while not timed_enough([0.025] * count, 0.0):
        count += 1
    assert 40 < count < 100 and median_error([0.025] * count) <= TARGET_MEDIAN_ERROR
    assert timed_enough([1.0] * PRECISION_MIN_SAMPLES, 0.0)  # a millisecond kernel: one step is 0.05%


def test_warm_up_keeps_the_device_busy_one_fill_at_a_time_for_its_time() -> None:
    """Each fill is waited for, so the device works the whole time (queued fills would let the
    loop end while the GPU still idles at low clocks)."""
    events: list[str] = []

    class Device:
        def synchronize(self) -> None:
            events.append("sync")

    class Buffer:
        def fill(self, value: int) -> None:
            assert 0 <= value <= 255
            events.append("fill")

    cp = types.SimpleNamespace(cuda=types.SimpleNamespace(Device=Device))
    began = time.perf_counter()
    fills = warm_up(cp, Buffer(), seconds=0.05)
    assert time.perf_counter() - began >= 0.05 and fills > 0
    assert events == ["fill", "sync"] * fills


# --- gelu's fast-math tolerance (item 7) ------------------------------------------------------------------


def test_gelu_tolerance_covers_the_fast_tanh_error_bound_over_the_input_range() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "kernels"))
    try:
        import gelu
    finally:
        sys.path.pop(0)
    template = load_templates()["gelu"]
    rtol, atol = template.tolerance
    assert atol == pytest.approx(0.5 * gelu.X_BOUND * (2.0**-10.987 + 2.0**-23))
    x = np.linspace(-gelu.X_BOUND, gelu.X_BOUND, 200_001).astype(np.float32)
    problem = {"n": x.size}
    expected = template.reference({"x": x}, problem)["y"]
    emulated = template.emulate({"x": x}, problem, {"fast_math": True})["y"]
    assert not verify_outputs(np, {"y": emulated}, {"y": expected}, rtol, atol).wrong
    # The worst tanh.approx the PTX ISA allows: every result off by the full relative error bound,
    # towards zero (so 1 + t never cancels it), including where tanh saturates.
    x64 = x.astype(np.float64)
    t = np.tanh(gelu.K0 * (x64 + gelu.K1 * x64**3)) * (1.0 - gelu.TANH_APPROX_REL_ERR)
    worst = (0.5 * x64 * (1.0 + t)).astype(np.float32)
    verdict = verify_outputs(np, {"y": worst}, {"y": expected}, rtol, atol)
    assert not verdict.wrong, verdict.message
    assert verify_outputs(np, {"y": worst}, {"y": expected}, 1e-3, 3e-3).wrong  # the old tolerance


def test_backend_cuda_is_refused_with_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.core.errors import WorkbenchError
    from workbench.runner import plan

    monkeypatch.setitem(sys.modules, "cupy", None)
    plan.cuda_device_count.cache_clear()
    plan.cuda_missing.cache_clear()
    try:
        with pytest.raises(WorkbenchError, match=r"^--backend cuda: CuPy is not installed .*scripts/install.sh --cuda"):
            plan.make_backend_spec("vector_add", "cuda")
        assert plan.make_backend_spec("vector_add", "auto").kind == "sim"
    finally:
        plan.cuda_device_count.cache_clear()
        plan.cuda_missing.cache_clear()


def test_nvrtc_is_found_where_cupy_14_looks_for_it() -> None:
    from workbench.backends.cuda_env import find_nvrtc

    path = find_nvrtc()  # nvidia-cuda-nvrtc-cu12 is a dependency of the workbench itself
    assert path is not None and Path(path).name.startswith("libnvrtc.so.12"), path
