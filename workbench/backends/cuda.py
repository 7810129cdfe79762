"""The real GPU backend: compile with NVRTC, verify against the float64 reference, time with CUDA events.

Runs inside a worker process pinned to one device. CuPy is imported only here, inside the worker,
so the rest of the workbench never needs it.

Measurement protocol (why each step exists):

0. Once per worker: keep the device busy for ``WARM_UP_S`` so that its clocks have risen before
   the copy probe, the library baseline and the first candidate are timed.
1. Render + compile through :func:`workbench.core.model.compiler.compile_cuda` for the device's own
   architecture (shared on-disk cache; registers / shared memory / spills from the ptxas log).
2. Refuse, before loading, a launch the device would refuse (threads, registers x threads, static +
   dynamic shared memory against the device's own limits): ``launch_error``, and the worker carries
   on. Load the CUBIN and read the kernel's registers and static shared memory from the driver;
   where they differ from the ptxas log they replace it and the launch is checked again. Copy
   ``__constant__`` inputs, opt in to more than 48 KiB of shared memory.
3. Poison every output (NaN / 0xFF..), launch once, synchronise, and compare every element with the
   template's float64 reference under its tolerance, on the device, in its own ``verify`` phase
   (its own timeout, so the run timeout measures the kernel): a kernel that skips elements or
   computes garbage is ``wrong_result``, never a fast "success".
4. Time with CUDA events: warm-up, then repeated launches, each preceded by a write over a buffer
   twice the size of L2 so the cache holds no inputs (the flush is outside the timed region).
   Median and p20/p80 are reported; sampling stops once the median is known to 0.1% (relative
   standard error, judged from 30 launches on), or after 0.5 s (and at least 10 launches) or
   2,000 launches. When the first samples already exceed ``max_latency_ms`` by 50%
   the candidate is ``aborted`` with the fastest of them kept as ``latency_bound_ms`` (saves time
   on hopeless configs; counted as an evaluation; re-measurable when the constraint is relaxed).
5. A sticky CUDA error (illegal or misaligned address, launch failure...) poisons the context: the
   measurement says so and the worker is replaced. Other errors (a refused launch, a module that
   does not load) are recorded and the worker goes on.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from pathlib import Path
from dataclasses import dataclass, replace
from typing import Any, Callable, ClassVar, Mapping

import numpy as np

from workbench.backends.templated import load_template_for, template_target
from workbench.backends.base import Backend, BackendSpec, EvalLimits, PhaseCallback, Target, no_phase
from workbench.core.errors import WorkbenchError
from workbench.core.model.cuda_module import function_resources, opt_in_shared_memory, upload_constant
from workbench.core.model.gpus import device_attributes, device_limits
from workbench.core.model.footprint import device_memory_mb, onchip_figures
from workbench.core.domain.measurement import Measurement, Status
from workbench.core.model.perfmodel import launch_check, occupancy
from workbench.core.model.quality import quality_from_error
from workbench.core.domain.space import Config
from workbench.core.domain.templates import non_finite_reference, reset_buffers
from workbench.core.model.verify import AdoptedReference, Verdict, adopt_reference, reference_details, verify_outputs

EARLY_ABORT_FACTOR = 1.5
#: Timing stops once the median latency is known to this relative standard error (0.1%), after at
#: least MIN_SAMPLES launches, or when the time budget or MAX_SAMPLES is spent, whichever comes
#: first: a steady multi-millisecond kernel is done after a few launches, while a microsecond
#: kernel whose launches scatter by a few percent gets the hundreds of samples that tell it from a
#: neighbour 0.5% slower (a fixed count either wastes the time of the first or ranks the second by
#: noise).
TARGET_MEDIAN_ERROR = 0.001
MIN_SAMPLES, MAX_SAMPLES = 10, 2000
SAMPLE_TIME_BUDGET_S = 0.5
#: The precision is first judged at this many samples: below it each quartile rests on a handful
#: of samples, and a scatter that happens to look small would stop the timing early.
PRECISION_MIN_SAMPLES = 30
#: Resolution of CUDA event timings (about 0.5 us, CUDA runtime API, cudaEventElapsedTime): samples
#: of a short kernel fall on a few steps of it, so their spread is never taken as less than one
#: step's rounding error (resolution / sqrt(12)), or identical readings would claim no error at all.
TIMER_RESOLUTION_MS = 0.0005

#: CUDA errors that leave the context unusable: every later call returns them again, so the worker
#: must be replaced (CUDA runtime API, cudaError enum: "the process is left in an inconsistent
#: state and any further CUDA work will return the same error"). Driver and runtime codes agree.
STICKY_CUDA_ERRORS: dict[int, str] = {
    700: "illegal address",
    702: "launch timeout",
    710: "device-side assert",
    714: "hardware stack error",
    715: "illegal instruction",
    716: "misaligned address",
    717: "invalid address space",
    718: "invalid program counter",
    719: "launch failure",
    999: "unknown error",
}

#: Trial ``details`` of a kernel whose registers and static shared memory are the driver's, not
#: those of the compiler's report (which disagreed).
RESOURCES_FROM_DRIVER = {"resources_from": "driver (the compiler's report differed)"}

#: FP32 lanes per SM by compute capability major/minor (CUDA programming guide, arithmetic throughput table).
_FP32_LANES = {(7, 0): 64, (7, 5): 64, (8, 0): 64, (8, 6): 128, (8, 7): 128, (8, 9): 128, (9, 0): 128}


def _upload(buffer: Any, host: np.ndarray) -> None:
    buffer.set(host)


def _percentile(samples: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(samples), q))


def median_error(samples: list[float]) -> float:
    """Relative standard error of the samples' median: 1.2533 sigma / sqrt(n) / median, the large-n
    standard error of a normal sample's median, with sigma read from the interquartile range so a
    few slow outliers (a clock change, another process) do not inflate it, and never below the
    timer's rounding (``TIMER_RESOLUTION_MS``)."""
    q25, q50, q75 = np.percentile(np.asarray(samples), (25, 50, 75))
    if q50 <= 0:
        return math.inf
    sigma = max((q75 - q25) / 1.349, TIMER_RESOLUTION_MS / math.sqrt(12.0))
    return float(1.2533 * sigma / math.sqrt(len(samples)) / q50)


def timed_enough(samples: list[float], elapsed_s: float) -> bool:
    """Whether a measurement has enough samples (see ``TARGET_MEDIAN_ERROR``): at least
    ``MIN_SAMPLES``, then until the time budget is spent or, from ``PRECISION_MIN_SAMPLES`` on, the
    median is known well enough. The error is looked at every eighth sample: it changes slowly, and
    a percentile per launch would cost more than a microsecond kernel."""
    count = len(samples)
    if count >= MAX_SAMPLES:
        return True
    if count < MIN_SAMPLES:
        return False
    if elapsed_s > SAMPLE_TIME_BUDGET_S:
        return True
    if count < PRECISION_MIN_SAMPLES:
        return False
    return (count - PRECISION_MIN_SAMPLES) % 8 == 0 and median_error(samples) <= TARGET_MEDIAN_ERROR


class CudaBackend(Backend):
    """Compiles, verifies and times template configs on one CUDA device."""

    kind: ClassVar[str] = "cuda"
    simulated: ClassVar[bool] = False

    def __init__(self, spec: BackendSpec) -> None:
        super().__init__(spec)
        self.needs_restart = False
        self.device_index = int(spec.options.get("device", 0))

    # ---- main process -------------------------------------------------------------------------
    @classmethod
    def target(cls, spec: BackendSpec) -> Target:
        return template_target(load_template_for(spec), spec, describe_device(int(spec.options.get("device", 0))))

    # ---- worker -------------------------------------------------------------------------------
    def prepare(self) -> None:
        import cupy as cp  # only inside GPU workers

        self.cp = cp
        cp.cuda.Device(self.device_index).use()
        self.template = load_template_for(self.spec)
        self.problem = self.template.resolve_problem(self.spec.options.get("problem"))
        self.space = self.template.space(self.problem)
        props = cp.cuda.runtime.getDeviceProperties(self.device_index)
        self.arch = f"sm_{props['major']}{props['minor']}"
        self.device = describe_device(self.device_index)
        self.gpu_limits = device_limits(self.device["name"], device_attributes(cp.cuda.runtime, self.device_index))
        rng = np.random.default_rng(int(self.spec.options.get("seed", 0)))
        self.host_inputs = self.template.make_inputs(self.problem, rng)
        # The reference lives on the device, so a candidate's verification never copies outputs back.
        reference = self.template.reference(self.host_inputs, self.problem)
        unmatchable = non_finite_reference(reference, "the problem measured")
        if unmatchable is not None:  # every config would fail its verification: said once, before any runs
            raise WorkbenchError(f"{self.template.name}: {unmatchable}")
        self.expected = {name: cp.asarray(np.asarray(ref, dtype=np.float64)) for name, ref in reference.items()}
        self.resets = self.template.output_resets()
        self._allocate()
        self.adopted: AdoptedReference | None = None
        if not self.template.has_reference:  # the first valid config's outputs stand in for it
            self.adopted = adopt_reference(cp, self.template.reference_candidates(self.problem), self._outputs_of)
            self.expected = dict(self.adopted.expected) if self.adopted is not None else {}
        l2 = int(cp.cuda.runtime.deviceGetAttribute(cp.cuda.runtime.cudaDevAttrL2CacheSize, self.device_index))
        self._flush = cp.empty(max(2 * l2, 1 << 20), dtype=cp.uint8)
        warm_up(cp, self._flush)
        self.copy_bandwidth_gbs = copy_probe(cp, self.device["name"])
        self.baseline = self._measure_baseline()
        self._nvml = nvml_handle(cp.cuda.runtime, self.device_index)

    def _allocate(self) -> None:
        cp = self.cp
        self.buffers: dict[str, Any] = {}
        self.launch_args: list[Any] = []
        constants = set(getattr(self.template, "constants", ()))
        for arg in self.template.args:
            if arg.kind == "scalar":
                value = arg.value(self.problem) if arg.value else self.problem[arg.name]
                self.launch_args.append(np.dtype(arg.dtype).type(value))
                continue
            if arg.name in constants:
                continue
            if arg.kind in ("in", "inout"):
                array = cp.asarray(np.asarray(self.host_inputs[arg.name], dtype=arg.dtype))
            else:
                assert arg.shape is not None  # every array argument has one (scalars were skipped)
                array = cp.empty(arg.shape(self.problem), dtype=arg.dtype)
            self.buffers[arg.name] = array
            self.launch_args.append(array)

    def _reset_outputs(self, poison: bool) -> None:
        """The template's reset policy (:func:`~workbench.core.domain.templates.reset_buffers`) on the device buffers."""
        reset_buffers(self.resets, self.buffers, self.host_inputs, poison=poison, upload=_upload)

    def _measure_baseline(self) -> dict[str, Any] | None:
        """Time the library implementation of the same operation the same way, once per worker."""
        if self.template.baseline is None:
            return None
        device_inputs = dict(self.buffers)
        for name in getattr(self.template, "constants", ()):  # e.g. conv2d's filter, for the library call
            device_inputs[name] = self.cp.asarray(self.host_inputs[name])
        try:
            samples = self._time(lambda: self.template.baseline(self.cp, device_inputs, self.problem), None)
        except Exception as exc:  # noqa: BLE001 - a failing baseline must not stop tuning
            return {"name": self.template.baseline_name, "error": str(exc)}
        latency = float(np.median(samples))
        return {"name": self.template.baseline_name, "latency_ms": latency,
                "throughput_gbs": self.template.bytes_moved(self.problem) / (latency * 1e6)}

    def _time(self, launch: Any, limits: EvalLimits | None) -> list[float]:
        cp = self.cp
        start, end = cp.cuda.Event(), cp.cuda.Event()
        launch()  # warm-up
        cp.cuda.Device().synchronize()
        samples: list[float] = []
        began = time.perf_counter()
        while len(samples) < MAX_SAMPLES:
            self._reset_outputs(poison=False)
            self._flush.fill(len(samples) & 0xFF)
            start.record()
            launch()
            end.record()
            end.synchronize()
            samples.append(cp.cuda.get_elapsed_time(start, end))
            if limits and limits.max_latency_ms and len(samples) == 3:
                if min(samples) > EARLY_ABORT_FACTOR * limits.max_latency_ms:
                    raise _EarlyAbort(min(samples), limits.max_latency_ms)
            if timed_enough(samples, time.perf_counter() - began):
                break
        return samples

    def _launched(self, config: Config, phase: PhaseCallback) -> Measurement | _Launched:
        """Compile, load and run ``config`` once on freshly reset buffers; a failure is its measurement."""
        from workbench.core.model.compiler import compile_cuda

        cp = self.cp
        phase("compile")
        source = self.template.render(config, self.problem)
        compiled = compile_cuda(source, arch=self.arch, options=self.template.nvrtc_options)
        resources = {"registers": compiled.registers, "smem_bytes": compiled.smem_bytes,
                     "spill_bytes": compiled.spill_store_bytes + compiled.spill_load_bytes}
        if not compiled.ok:
            return Measurement.failure(Status.COMPILE_ERROR, _first_error(compiled.log), compiled.log)
        grid = self.template.grid(self.problem, config)
        block = self.template.block(self.problem, config)
        smem = int(self.template.dynamic_smem(self.problem, config))
        refused = self._refused(block, grid, smem, compiled.registers, compiled.smem_bytes, resources)
        if refused is not None:  # CUDA would refuse it too; nothing ran, the context is intact
            return refused
        phase("run")
        try:
            module = cp.cuda.function.Module()
            module.load(compiled.cubin)
            function = module.get_function(self.template.entry)
        except Exception as exc:  # noqa: BLE001
            return self._cuda_failure(Status.LAUNCH_ERROR, "loading the module failed", exc, resources)
        try:
            registers, static_smem = function_resources(cp.cuda.driver, function)
        except Exception:  # noqa: BLE001 - a driver that will not say: the compiler's report stands
            registers, static_smem = compiled.registers, compiled.smem_bytes
        corrected = (registers, static_smem) != (compiled.registers, compiled.smem_bytes)
        if corrected:
            # The loaded binary's own figures: ptxas's report can read 0 registers for a config
            # (docs/gpu-results.md), which the launch check and the occupancy would take as true.
            compiled = replace(compiled, registers=registers, smem_bytes=static_smem)
            resources = {**resources, "registers": registers, "smem_bytes": static_smem}
            refused = self._refused(block, grid, smem, registers, static_smem, resources, dict(RESOURCES_FROM_DRIVER))
            if refused is not None:
                return refused
        try:
            for name in getattr(self.template, "constants", ()):
                upload_constant(cp.cuda.runtime, module, name, self.host_inputs[name])
            opt_in_shared_memory(cp.cuda.driver, function, compiled.smem_bytes, smem)
        except Exception as exc:  # noqa: BLE001
            return self._cuda_failure(Status.LAUNCH_ERROR, "loading the module failed", exc, resources)

        def launch() -> None:
            function(grid, block, tuple(self.launch_args), shared_mem=smem)

        self._reset_outputs(poison=True)
        try:
            launch()
        except Exception as exc:  # noqa: BLE001 - CUDA refused the launch (resources, geometry)
            return self._cuda_failure(Status.LAUNCH_ERROR, "launch refused", exc, resources)
        try:
            cp.cuda.Device().synchronize()
        except Exception as exc:  # noqa: BLE001 - illegal address etc.: the context is gone
            return self._cuda_failure(Status.RUNTIME_ERROR, "kernel failed", exc, resources)
        return _Launched(launch, resources, compiled, grid, block, smem, corrected)

    def _refused(self, block: tuple[int, int, int], grid: tuple[int, int, int], dynamic_smem: int, registers: int,
                 static_smem: int, resources: dict[str, Any], details: dict[str, Any] | None = None,
                 ) -> Measurement | None:
        """The ``launch_error`` of a launch the device's limits refuse (``launch_check``), or None."""
        refusal = launch_check(self.gpu_limits, block, static_smem + dynamic_smem, registers, grid=grid)
        if refusal is None:
            return None
        return Measurement(Status.LAUNCH_ERROR, metrics={**resources, "smem_bytes": static_smem + dynamic_smem},
                           message=refusal, log=refusal, details=details or {})

    def _outputs_of(self, config: Config) -> dict[str, Any] | None:
        """The checked outputs of one launch of ``config`` (device arrays), None when it fails."""
        if self.needs_restart:
            return None
        ran = self._launched(config, no_phase)
        if isinstance(ran, Measurement):
            return None
        return {name: self.buffers[name] for name in self.template.checked_outputs if name in self.buffers}

    def evaluate(self, config: Config, limits: EvalLimits, phase: PhaseCallback = no_phase) -> Measurement:
        ran = self._launched(config, phase)
        if isinstance(ran, Measurement):
            return ran
        launch, resources, compiled, grid, block, smem = (ran.launch, ran.resources, ran.compiled, ran.grid,
                                                          ran.block, ran.smem)
        reference = reference_details(self.adopted, config.id) if not self.template.has_reference else {}
        cp = self.cp
        phase("verify")
        rtol, atol = self.template.tolerance
        verdict = verify_outputs(cp, self.buffers, self.expected, rtol, atol,
                                 tolerances=self.template.output_tolerances())
        errors = error_metrics(verdict, rtol)
        if verdict.wrong:
            return Measurement(Status.WRONG_RESULT, metrics={**resources, **errors}, message=verdict.message,
                               details={"errors": errors, **reference})
        phase("run")
        try:
            samples = self._time(launch, limits)
        except _EarlyAbort as abort:
            # what the config holds is known without its timing: kept, so the chart of latency
            # against memory draws it at its bound like the simulator's
            footprint, _occupied = self._footprint(config, block, smem, compiled)
            return Measurement(Status.ABORTED, metrics={"latency_bound_ms": abort.latency, **footprint, **resources},
                               message=str(abort))
        except Exception as exc:  # noqa: BLE001
            return self._cuda_failure(Status.RUNTIME_ERROR, "kernel failed while timing", exc, resources)
        corrected = dict(RESOURCES_FROM_DRIVER) if ran.corrected else {}
        return Measurement(Status.OK, metrics=self._metrics(samples, resources, errors, block, grid, smem,
                                                             compiled, config),
                           details={**self._details(compiled), **reference, **corrected})

    def _cuda_failure(self, status: Status, what: str, exc: BaseException, resources: dict[str, Any]) -> Measurement:
        """Record a CUDA failure; replace the worker only when the error poisoned the context."""
        sticky = is_sticky(exc)
        self.needs_restart = self.needs_restart or sticky
        note = " (the context is lost: the worker is replaced)" if sticky else ""
        return Measurement.failure(status, f"{what}: {exc}{note}", str(exc), **resources)

    def _footprint(self, config: Config | None, block: tuple[int, int, int], smem: int,
                   compiled: Any) -> tuple[dict[str, float], Any]:
        """What ``config`` holds, as the simulator reports it (core/model/footprint.py): device
        memory and on-chip storage, with the occupancy they allow."""
        threads = block[0] * block[1] * block[2]
        occupied = occupancy(self.gpu_limits, threads, compiled.registers, compiled.smem_bytes + smem)
        held = {"memory_mb": device_memory_mb(self.template, self.problem, config),
                **onchip_figures(compiled.registers, compiled.smem_bytes + smem, threads, occupied.active_blocks_per_sm)}
        return held, occupied

    def _metrics(self, samples: list[float], resources: Mapping[str, float], errors: dict[str, float],
                 block: tuple[int, int, int], grid: tuple[int, int, int], smem: int, compiled: Any,
                 config: Config | None = None) -> dict[str, float]:
        latency = float(np.median(samples))
        moved = float(self.template.bytes_moved(self.problem))
        flops = float(self.template.flops(self.problem))
        throughput = moved / (latency * 1e6)
        gflops = flops / (latency * 1e6)
        peak_bw = self.copy_bandwidth_gbs or self.device.get("peak_bandwidth_gbs") or math.nan
        peak_fp32 = self.device.get("peak_fp32_gflops") or math.nan
        pct = max(throughput / peak_bw, gflops / peak_fp32) * 100.0
        footprint, occupied = self._footprint(config, block, smem, compiled)
        metrics = {
            "latency_ms": latency,
            "latency_p20_ms": _percentile(samples, 20),
            "latency_p80_ms": _percentile(samples, 80),
            "samples": float(len(samples)),
            "throughput_gbs": throughput,
            "gflops": gflops,
            "pct_of_peak": pct,
            **footprint,
            "occupancy": float(occupied.fraction),
            **resources,
            **errors,
        }
        if self.baseline and self.baseline.get("latency_ms"):
            metrics["speedup_vs_baseline"] = self.baseline["latency_ms"] / latency
        metrics.update(_nvml_sample(self._nvml))
        return metrics

    def _details(self, compiled: Any) -> dict[str, Any]:
        details: dict[str, Any] = {"arch": self.arch, "device": self.device["name"]}
        if self.baseline:
            details["baseline"] = self.baseline
        if self.copy_bandwidth_gbs:
            details["copy_bandwidth_gbs"] = self.copy_bandwidth_gbs
        return details


@dataclass(frozen=True)
class _Launched:
    """A config that compiled, loaded and ran once: what verifying and timing it need."""

    launch: Callable[[], None]
    resources: dict[str, Any]
    compiled: Any
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    smem: int
    #: The driver's register and shared-memory figures replaced the compiler's report.
    corrected: bool = False


class _EarlyAbort(Exception):
    def __init__(self, latency: float, limit: float) -> None:
        super().__init__(f"aborted above {latency:.4g} ms: the first samples exceed the max latency {limit:g} ms by more than 50%")
        self.latency = latency


def _first_error(log: str) -> str:
    for line in log.splitlines():
        if "error" in line.lower():
            return line.strip()
    return log.strip().splitlines()[0] if log.strip() else "compilation failed"


def is_sticky(exc: BaseException) -> bool:
    """Whether a CUDA error poisoned the context (see ``STICKY_CUDA_ERRORS``).

    CuPy's ``CUDADriverError`` and ``CUDARuntimeError`` carry the code as ``status``; anything
    else (a refused launch, an image that does not load, a Python error) leaves the context usable.
    """
    status: Any = getattr(exc, "status", None)
    try:
        return int(status) in STICKY_CUDA_ERRORS
    except (TypeError, ValueError):
        return False


def error_metrics(verdict: Verdict, rtol: float) -> dict[str, float]:
    """The verification's errors as metrics: the worst absolute and element-wise relative error,
    and the quality, counted from the worst output's normwise error as the simulator counts it
    (``quality_of``), so a quality limit means the same on both."""
    quality = quality_from_error(verdict.normwise_err, rtol)  # 0 for an infinite or NaN error
    return {"max_abs_err": verdict.max_abs_err, "max_rel_err": verdict.max_rel_err, "quality": quality}




class DeviceUnusable(WorkbenchError):
    """A CUDA device this machine cannot use (no CuPy, no driver, no such device): what a session
    measured on a GPU meets where that GPU is not, said apart from its template's or problem's faults."""

def describe_device(index: int) -> dict[str, Any]:
    """Name, architecture and peaks of a CUDA device, as stored in sessions.

    A machine without CuPy, a driver or that device (a session recorded elsewhere, continued
    here) gets one line naming the device and CUDA's reason, not CuPy's traceback.
    """
    try:
        import cupy as cp
    except ImportError as exc:
        raise DeviceUnusable(f"CUDA device {index} is not usable here: CuPy is not installed ({exc})") from None
    rt = cp.cuda.runtime
    try:
        props = rt.getDeviceProperties(index)
    except rt.CUDARuntimeError as exc:
        raise DeviceUnusable(f"CUDA device {index} is not usable here: {exc}") from None
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    attr = rt.deviceGetAttribute
    sm_count = attr(rt.cudaDevAttrMultiProcessorCount, index)
    clock_khz = attr(rt.cudaDevAttrClockRate, index)
    mem_clock_khz = attr(rt.cudaDevAttrMemoryClockRate, index)
    bus_bits = attr(rt.cudaDevAttrGlobalMemoryBusWidth, index)
    lanes = _FP32_LANES.get((props["major"], props["minor"]), 128)
    return {
        "name": name,
        "backend": "cuda",
        "simulated": False,
        "index": index,
        "compute_capability": f"{props['major']}.{props['minor']}",
        "sm_count": sm_count,
        "peak_bandwidth_gbs": 2.0 * mem_clock_khz * 1e3 * bus_bits / 8 / 1e9,
        "peak_fp32_gflops": 2.0 * lanes * sm_count * clock_khz * 1e3 / 1e9,
        "memory_gb": props["totalGlobalMem"] / 2**30,  # (GiB, as a GPU description states it)
        "pci_bus_id": rt.deviceGetPCIBusId(index),
        "driver_version": rt.driverGetVersion(),
        "runtime_version": rt.runtimeGetVersion(),
    }


#: Seconds of memory traffic before the first measurement of a worker.
WARM_UP_S = 0.25


def warm_up(cp: Any, buffer: Any, seconds: float = WARM_UP_S) -> int:
    """Keep the device busy for ``seconds`` (fills of ``buffer``) and return the fills made.

    An idle GPU waits at low clocks (an H200 at 345 MHz on the SM, 1,980 under load) and takes a
    while to rise: without this the copy probe and the first candidates of a run are timed on a
    GPU still speeding up, which makes the copy bandwidth, every percentage of it, and the first
    candidates' latencies depend on what the GPU did before the run.
    """
    began, fills = time.perf_counter(), 0
    while time.perf_counter() - began < seconds:
        buffer.fill(fills & 0xFF)
        cp.cuda.Device().synchronize()
        fills += 1
    return fills


def copy_probe(cp: Any, device_name: str) -> float:
    """Device-to-device copy bandwidth (GB/s, read + write), measured once per device and cached."""
    from workbench.core.model.compiler import cache_dir

    # inside the cache folder: its parent is the person's when KERNEL_WORKBENCH_CACHE_DIR names one
    path = Path(cache_dir()) / "copy_probe.json"
    cached = read_probe_cache(path)
    known = cached.get(device_name)
    if known is not None:
        return known
    n = 256 * 1024 * 1024  # 1 GiB of float32
    src = cp.ones(n, dtype=cp.float32)
    dst = cp.empty_like(src)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    dst[...] = src
    samples = []
    for _ in range(10):
        start.record()
        dst[...] = src
        end.record()
        end.synchronize()
        samples.append(cp.cuda.get_elapsed_time(start, end))
    bandwidth = 2 * src.nbytes / (float(np.median(samples)) * 1e6)
    del src, dst
    cached[device_name] = bandwidth
    store_json(path, cached)
    return bandwidth


def read_probe_cache(path: Path) -> dict[str, float]:
    """The cached copy bandwidths (device name -> GB/s) at ``path``: only finite positive numbers
    are taken; anything else there (a list, text, a FIFO, a damaged file) is measured again, not a
    TypeError or a blocked open at the backend's start."""
    from workbench.core.fs import read_capped

    try:
        raw = json.loads(read_capped(path, "copy probe cache", 1 << 20))
    except (WorkbenchError, ValueError, RecursionError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {name: float(value) for name, value in raw.items()
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0}


def store_json(path: Path, data: Any) -> bool:
    """Write ``data`` to ``path`` atomically under a temporary name of its own, so workers probing
    at the same time never write into each other's file; False when the folder is not writable."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError:
        return False
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(data, handle)
        os.replace(tmp, path)
        return True
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False


def nvml_handle(runtime: Any, index: int) -> Any:
    """The NVML handle of CUDA device ``index``, looked up by PCI bus id (None without NVML).

    CUDA and NVML number devices differently (CUDA puts the fastest first by default, and
    ``CUDA_VISIBLE_DEVICES`` or Ray renumber CUDA's view only), so an index would read the power
    and clocks of another GPU; the bus id names the same board in both.
    """
    try:
        import pynvml  # nvidia-ml-py, optional

        pynvml.nvmlInit()
        return pynvml.nvmlDeviceGetHandleByPciBusId(runtime.deviceGetPCIBusId(index))
    except Exception:  # noqa: BLE001 - power and clocks are optional
        return None


def _nvml_sample(handle: Any) -> dict[str, float]:
    if handle is None:
        return {}
    try:
        import pynvml

        return {
            "power_w": pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,
            "sm_clock_mhz": float(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)),
            "mem_clock_mhz": float(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM)),
        }
    except Exception:  # noqa: BLE001
        return {}
