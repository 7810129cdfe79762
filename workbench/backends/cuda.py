"""The real GPU backend: compile with NVRTC, verify against the float64 reference, time with CUDA events.

Runs inside a worker process pinned to one device. CuPy is imported only here, inside the worker,
so the rest of the workbench never needs it.

Measurement protocol (why each step exists):

1. Render + compile through :func:`workbench.core.compiler.compile_cuda` for the device's own
   architecture (shared on-disk cache; registers / shared memory / spills from the ptxas log).
2. Load the CUBIN, poison every output (NaN / 0xFF..), launch once, synchronise, and compare every
   element with the template's float64 reference under its tolerance: a kernel that skips elements
   or computes garbage is ``wrong_result``, never a fast "success".
3. Time with CUDA events: warm-up, then repeated launches, each preceded by a write over a buffer
   twice the size of L2 so the cache holds no inputs (the flush is outside the timed region).
   Median and p20/p80 are reported. When the first samples already exceed ``max_latency_ms`` by 50%
   the candidate is ``aborted`` with the fastest of them kept as ``latency_bound_ms`` (saves time
   on hopeless configs; counted as an evaluation; re-measurable when the constraint is relaxed).
4. Any CUDA error poisons the context: the measurement says so and the worker is replaced.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from workbench.backends.templated import load_template_for, template_target
from workbench.backends.base import Backend, BackendSpec, EvalLimits, PhaseCallback, Target, _no_phase
from workbench.core.measurement import Measurement, Status
from workbench.core.quality import quality_from_error
from workbench.core.space import Config

EARLY_ABORT_FACTOR = 1.5
MIN_SAMPLES, MAX_SAMPLES = 7, 100
SAMPLE_TIME_BUDGET_S = 0.5

#: FP32 lanes per SM by compute capability major/minor (CUDA programming guide, arithmetic throughput table).
_FP32_LANES = {(7, 0): 64, (7, 5): 64, (8, 0): 64, (8, 6): 128, (8, 7): 128, (8, 9): 128, (9, 0): 128}


def _poison(cp: Any, array: Any) -> None:
    if array.dtype.kind == "f":
        array.fill(np.nan)
    else:
        array.fill(np.iinfo(array.dtype).max)


def _percentile(samples: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(samples), q))


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
        import cupy as cp  # noqa: PLC0415 - only inside GPU workers

        self.cp = cp
        cp.cuda.Device(self.device_index).use()
        self.template = load_template_for(self.spec)
        self.problem = self.template.resolve_problem(self.spec.options.get("problem"))
        self.space = self.template.space(self.problem)
        props = cp.cuda.runtime.getDeviceProperties(self.device_index)
        self.arch = f"sm_{props['major']}{props['minor']}"
        self.device = describe_device(self.device_index)
        rng = np.random.default_rng(int(self.spec.options.get("seed", 0)))
        self.host_inputs = self.template.make_inputs(self.problem, rng)
        self.expected = self.template.reference(self.host_inputs, self.problem)
        self._allocate()
        l2 = int(cp.cuda.runtime.deviceGetAttribute(cp.cuda.runtime.cudaDevAttrL2CacheSize, self.device_index))
        self._flush = cp.empty(max(2 * l2, 1 << 20), dtype=cp.uint8)
        self.copy_bandwidth_gbs = copy_probe(cp, self.device["name"])
        self.baseline = self._measure_baseline()
        self._nvml = _nvml_handle(self.device_index)

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
                array = cp.empty(arg.shape(self.problem), dtype=arg.dtype)
            self.buffers[arg.name] = array
            self.launch_args.append(array)
        self.memory_mb = sum(b.nbytes for b in self.buffers.values()) / 1e6

    def _reset_outputs(self, poison: bool) -> None:
        cp = self.cp
        for arg in self.template.args:
            buffer = self.buffers.get(arg.name)
            if buffer is None or arg.kind == "in":
                continue
            if arg.reset == "zero":
                buffer.fill(0)
            elif arg.reset == "input" or arg.kind == "inout":
                buffer.set(np.asarray(self.host_inputs[arg.name], dtype=arg.dtype))
            elif poison:
                _poison(cp, buffer)

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
            if len(samples) >= MIN_SAMPLES and time.perf_counter() - began > SAMPLE_TIME_BUDGET_S:
                break
        return samples

    def evaluate(self, config: Config, limits: EvalLimits, phase: PhaseCallback = _no_phase) -> Measurement:
        from workbench.core.compiler import compile_cuda  # noqa: PLC0415

        cp = self.cp
        phase("compile")
        source = self.template.render(config, self.problem)
        compiled = compile_cuda(source, arch=self.arch, options=self.template.compile_options)
        resources = {"registers": compiled.registers, "smem_bytes": compiled.smem_bytes,
                     "spill_bytes": compiled.spill_store_bytes + compiled.spill_load_bytes}
        if not compiled.ok:
            return Measurement.failure(Status.COMPILE_ERROR, _first_error(compiled.log), compiled.log)
        phase("run")
        grid = self.template.grid(self.problem, config)
        block = self.template.block(self.problem, config)
        smem = int(self.template.dynamic_smem(self.problem, config))
        try:
            module = cp.cuda.function.Module()
            module.load(compiled.cubin)
            function = module.get_function(self.template.entry)
            for name in getattr(self.template, "constants", ()):
                symbol = module.get_global_var(name)
                host = np.ascontiguousarray(self.host_inputs[name], dtype=np.float32)
                symbol.copy_from_host(host.ctypes.data, host.nbytes)
            if smem > 48 * 1024:
                function.max_dynamic_shared_size_bytes = smem
        except Exception as exc:  # noqa: BLE001
            self.needs_restart = True
            return Measurement.failure(Status.LAUNCH_ERROR, f"loading the module failed: {exc}", str(exc))

        def launch() -> None:
            function(grid, block, tuple(self.launch_args), shared_mem=smem)

        self._reset_outputs(poison=True)
        try:
            launch()
        except Exception as exc:  # noqa: BLE001 - CUDA refused the launch (resources, geometry)
            self.needs_restart = True
            return Measurement.failure(Status.LAUNCH_ERROR, f"launch refused: {exc}", str(exc), **resources)
        try:
            cp.cuda.Device().synchronize()
        except Exception as exc:  # noqa: BLE001 - illegal address etc.: the context is gone
            self.needs_restart = True
            return Measurement.failure(Status.RUNTIME_ERROR, f"kernel failed: {exc}", str(exc), **resources)
        verdict = self._verify()
        if verdict["wrong"]:
            return Measurement(Status.WRONG_RESULT, metrics={**resources, **verdict["metrics"]},
                               message=verdict["message"], details={"errors": verdict["metrics"]})
        try:
            samples = self._time(launch, limits)
        except _EarlyAbort as abort:
            return Measurement(Status.ABORTED, metrics={"latency_bound_ms": abort.latency, **resources},
                               message=str(abort))
        except Exception as exc:  # noqa: BLE001
            self.needs_restart = True
            return Measurement.failure(Status.RUNTIME_ERROR, f"kernel failed while timing: {exc}", str(exc))
        return Measurement(Status.OK, metrics=self._metrics(samples, resources, verdict["metrics"], block, grid, smem,
                                                             compiled), details=self._details(compiled))

    def _verify(self) -> dict[str, Any]:
        rtol, atol = self.template.tolerance
        worst_rel, worst_abs, bad_total, count = 0.0, 0.0, 0, 0
        message = ""
        for name, expected in self.expected.items():
            got = self.buffers[name].get().astype(np.float64)
            expected = np.asarray(expected, dtype=np.float64)
            if got.shape != expected.shape:
                got = got.reshape(expected.shape)
            err = np.abs(got - expected)
            err[~np.isfinite(got)] = np.inf
            bad = err > atol + rtol * np.abs(expected)
            count += expected.size
            rel = err / np.maximum(np.abs(expected), atol if atol > 0 else 1e-30)
            worst_rel = max(worst_rel, float(np.max(rel)) if rel.size else 0.0)
            worst_abs = max(worst_abs, float(np.max(err)) if err.size else 0.0)
            if bad.any() and not message:
                i = int(np.flatnonzero(bad.ravel())[0])
                message = (f"{name}[{i}] = {got.ravel()[i]:.6g}, expected {expected.ravel()[i]:.6g}; "
                           f"{int(bad.sum())} of {expected.size} elements outside rtol={rtol:g} atol={atol:g}")
            bad_total += int(bad.sum())
        quality = quality_from_error(worst_rel, rtol) if math.isfinite(worst_rel) else 0.0
        metrics = {"max_abs_err": worst_abs, "max_rel_err": worst_rel, "quality": quality}
        return {"wrong": bad_total > 0, "message": message, "metrics": metrics}

    def _metrics(self, samples: list[float], resources: dict[str, float], errors: dict[str, float],
                 block: tuple[int, int, int], grid: tuple[int, int, int], smem: int, compiled: Any) -> dict[str, float]:
        latency = float(np.median(samples))
        moved = float(self.template.bytes_moved(self.problem))
        flops = float(self.template.flops(self.problem))
        throughput = moved / (latency * 1e6)
        gflops = flops / (latency * 1e6)
        peak_bw = self.copy_bandwidth_gbs or self.device.get("peak_bandwidth_gbs") or math.nan
        peak_fp32 = self.device.get("peak_fp32_gflops") or math.nan
        pct = max(throughput / peak_bw, gflops / peak_fp32) * 100.0
        threads = block[0] * block[1] * block[2]
        metrics = {
            "latency_ms": latency,
            "latency_p20_ms": _percentile(samples, 20),
            "latency_p80_ms": _percentile(samples, 80),
            "samples": float(len(samples)),
            "throughput_gbs": throughput,
            "gflops": gflops,
            "pct_of_peak": pct,
            "memory_mb": self.memory_mb,
            "occupancy": _occupancy(self.cp, compiled, threads, smem, self.device_index),
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


class _EarlyAbort(Exception):
    def __init__(self, latency: float, limit: float) -> None:
        super().__init__(f"aborted above {latency:.4g} ms: the first samples exceed the max latency {limit:g} ms by more than 50%")
        self.latency = latency


def _first_error(log: str) -> str:
    for line in log.splitlines():
        if "error" in line.lower():
            return line.strip()
    return log.strip().splitlines()[0] if log.strip() else "compilation failed"


def _occupancy(cp: Any, compiled: Any, threads: int, smem: int, device: int) -> float:
    """Theoretical occupancy from the device's limits and the kernel's compiled resources."""
    from workbench.core.gpus import GpuSpec  # noqa: PLC0415
    from workbench.core.perfmodel import occupancy  # noqa: PLC0415

    attr = cp.cuda.runtime.deviceGetAttribute
    rt = cp.cuda.runtime
    spec = GpuSpec.from_limits(
        name="device",
        max_threads_per_sm=attr(rt.cudaDevAttrMaxThreadsPerMultiProcessor, device),
        registers_per_sm=attr(rt.cudaDevAttrMaxRegistersPerMultiprocessor, device),
        smem_per_sm=attr(rt.cudaDevAttrMaxSharedMemoryPerMultiprocessor, device),
    )
    occ = occupancy(spec, threads, compiled.registers, compiled.smem_bytes + smem)
    return float(occ.fraction)


def describe_device(index: int) -> dict[str, Any]:
    """Name, architecture and peaks of a CUDA device, as stored in sessions."""
    import cupy as cp  # noqa: PLC0415

    rt = cp.cuda.runtime
    props = rt.getDeviceProperties(index)
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
        "memory_gb": props["totalGlobalMem"] / 1e9,
        "driver_version": rt.driverGetVersion(),
        "runtime_version": rt.runtimeGetVersion(),
    }


def copy_probe(cp: Any, device_name: str) -> float:
    """Device-to-device copy bandwidth (GB/s, read + write), measured once per device and cached."""
    from workbench.core.compiler import cache_dir  # noqa: PLC0415

    path = Path(cache_dir()).parent / "copy_probe.json"
    try:
        cached = json.loads(path.read_text())
    except (OSError, ValueError):
        cached = {}
    if device_name in cached:
        return float(cached[device_name])
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
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(cached))
        os.replace(tmp, path)
    except OSError:
        pass
    return bandwidth


def _nvml_handle(index: int) -> Any:
    try:
        import pynvml  # noqa: PLC0415 - nvidia-ml-py, optional

        pynvml.nvmlInit()
        return pynvml.nvmlDeviceGetHandleByIndex(index)
    except Exception:  # noqa: BLE001 - power and clocks are optional
        return None


def _nvml_sample(handle: Any) -> dict[str, float]:
    if handle is None:
        return {}
    try:
        import pynvml  # noqa: PLC0415

        return {
            "power_w": pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,
            "sm_clock_mhz": float(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)),
            "mem_clock_mhz": float(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM)),
        }
    except Exception:  # noqa: BLE001
        return {}
