"""The ``sim`` backend: a modelled GPU, so tuning can be taught and tested on a laptop without one.

Each evaluation does what the CUDA backend does, except running: render the config, compile it for
the modelled GPU's architecture with NVRTC (real registers, shared memory and spills; or, with
``compile: "estimate"``, a marked estimate), refuse launches a real device would refuse (same CUDA
wording), predict the latency with :mod:`workbench.core.model.perfmodel`, and derive ``quality`` by
running the template's NumPy ``emulate`` of the config's arithmetic against the float64 reference
on the small problem.

Resource figures come, fastest first, from this process's cache, the shipped resource table
(:mod:`workbench.core.model.resource_table`, when it matches the template, problem and arch), the
compiler's disk cache (read in the evaluation itself), or NVRTC. Compiles run on background
threads (:mod:`compile_jobs`), the configs the model rates fastest first; an evaluation waits at
most ``compile_wait_s`` for its own, and none at all once two compiles of this template have run
past that or when the table says its compiles take longer, then simulates with estimated
resources, marked ``details.resources_pending``. Evaluating that config again (the engine's
refinement pass) raises its compile to the front, waits for it and returns the real figures.

Options (besides ``kernel``, ``problem``, ``kernel_dirs``): ``gpu_model`` (default ``H200``),
``noise`` (default True: a few percent of seeded run-to-run spread), ``seed``, ``arch`` (default:
the GPU's), ``compile`` (``nvrtc`` default, ``estimate``, or ``known``: no compiling, see
:data:`COMPILE_MODES`), ``compile_wait_s`` (default 1.0), ``delay_s`` (a demonstration's pace,
kept by the engine between candidates: see :func:`~workbench.backends.base.pace_option`).
"""

from __future__ import annotations

import hashlib
import math
from concurrent.futures import CancelledError, Future, TimeoutError as FutureTimeout
from typing import Any, ClassVar

import numpy as np

from workbench.backends.compile_jobs import URGENT, CompileJobs
from workbench.backends.templated import load_template_for, template_target
from workbench.backends.base import Backend, BackendSpec, EvalLimits, PhaseCallback, Target, no_phase
from workbench.core.model.compiler import cached_compile, compile_cuda, max_threads, over_launch_bounds  # NVRTC itself loads at the first compile
from workbench.core.errors import WorkbenchError
from workbench.core.domain.kernel_spec import MAX_SMALL_PROBLEM_BYTES
from workbench.core.model.gpus import GpuSpec, load_gpu
from workbench.core.domain.measurement import Measurement, Status
from workbench.core.domain.records import SIM_COMPILE_MODES, is_arch_name
from workbench.core.model.perfmodel import estimate_resources, launch_check, predict
from workbench.core.model.quality import EMULATION, ROUNDED_REFERENCE, quality_of
from workbench.core.model.resource_table import TemplateFigures, figures_for, nearest_figures
from workbench.core.domain.space import Config
from workbench.core.model.footprint import device_memory_mb, onchip_figures
from workbench.core.model.gpus import DEFAULT_GPU
from workbench.core.domain.templates import KernelTemplate, WorkProfile, non_finite_reference
from workbench.core.model.verify import AdoptedReference, adopt_reference, reference_details

#: ``nvrtc``: compiler figures (table, caches, or a compile); ``estimate``: the work-profile rule for
#: every config, nothing compiled; ``known``: the figures known without compiling (the table, the
#: compiler's caches), else estimated as a pending compile would be: what a prediction of many
#: configs uses (the portability report, cost-model pruning) to stand on the same figures as a run.
COMPILE_MODES = SIM_COMPILE_MODES
#: The resource figures when none are named: the compiler's.
DEFAULT_COMPILE = "nvrtc"
#: Run-to-run spread of the modelled timings: median jitter and the p20..p80 half-width (fractions).
NOISE_MEDIAN = 0.01
NOISE_SPREAD = (0.005, 0.03)
#: Slot groups whose values can change the arithmetic (and so the emulated result).
_ARITHMETIC_GROUPS = ("compute", "reduction")

#: How long (s) an evaluation waits for its own compile before simulating with estimated resources.
COMPILE_WAIT_S = 1.0
#: After this many compiles of a template outlast the wait, its evaluations no longer wait at all.
SLOW_COMPILES = 2

# Per-process compile-resource cache: rendered-source hash -> resources or compile error log.
_RESOURCE_CACHE: dict[str, dict[str, Any]] = {}
# Per-process background compiles (one thread per core), shared by every backend in the process.
_JOBS: CompileJobs | None = None


def _jobs() -> CompileJobs:
    global _JOBS
    if _JOBS is None:
        _JOBS = CompileJobs()
    return _JOBS


def _compiled_figures(source: str, arch: str, options: tuple[str, ...], entry: str) -> dict[str, Any]:
    """Compile (or read the compiler's disk cache) and keep only the figures the simulator uses."""
    return _figures_of(compile_cuda(source, arch=arch, options=options, entry=entry), entry)


def _cached_figures(source: str, arch: str, options: tuple[str, ...], entry: str) -> dict[str, Any] | None:
    """The figures of an earlier compile of this source (the compiler's memory or disk cache), or
    None; never compiles, so a cache hit never waits behind the queue of real compiles."""
    compiled = cached_compile(source, arch=arch, options=options, entry=entry)
    return None if compiled is None else _figures_of(compiled, entry)


def _figures_of(compiled: Any, entry: str = "") -> dict[str, Any]:
    if not compiled.ok:
        return {"compile_error": compiled.error or "compilation failed", "log": compiled.log}
    return {
        # the block size its __launch_bounds__ allows (0: none), which a launch must keep to
        "max_threads": max_threads(compiled.cubin, entry),
        "registers": compiled.registers,
        "smem_bytes": compiled.smem_bytes,
        "spill_store_bytes": compiled.spill_store_bytes,
        "spill_load_bytes": compiled.spill_load_bytes,
        "stack_bytes": compiled.stack_bytes,
        "estimated": False,
        "resource_source": "cache" if compiled.cached else "nvrtc",
        "compile_s": compiled.compile_s,
    }


def _gpu_for(spec: BackendSpec) -> GpuSpec:
    return load_gpu(str(spec.options.get("gpu_model") or DEFAULT_GPU))


def describe_sim_device(gpu: GpuSpec, arch: str | None = None) -> dict[str, Any]:
    """The device description sessions store for a simulated GPU."""
    return {
        "name": f"Simulated {gpu.full_name}",
        "simulated": True,
        "model": gpu.name,
        "backend": "sim",
        "arch": arch or gpu.arch,
        "sm_count": gpu.sm_count,
        "peak_bandwidth_gbs": gpu.memory_bandwidth_gbs,
        "peak_fp32_gflops": gpu.peak_flops / 1e9,
    }


class SimBackend(Backend):
    """Predicts latency and resource use of template configs on a modelled GPU."""

    kind: ClassVar[str] = "sim"
    simulated: ClassVar[bool] = True
    metrics: ClassVar[frozenset[str] | None] = frozenset({
        "latency_ms", "latency_p20_ms", "latency_p80_ms", "latency_bound_ms", "throughput_gbs", "gflops",
        "pct_of_peak", "memory_mb", "occupancy", "quality", "registers", "smem_bytes", "spill_bytes",
        "threads_per_block", "onchip_kb_per_block", "onchip_kb_per_sm", "dram_mb", "work_gflop",
    })

    def __init__(self, spec: BackendSpec, template: KernelTemplate | None = None) -> None:
        """``template``: the template already loaded (a prediction in the person's process, from a
        spec read without running code); None loads the one ``spec`` names, as a worker does."""
        super().__init__(spec)
        self._given_template = template
        mode = str(spec.options.get("compile", DEFAULT_COMPILE))
        if mode not in COMPILE_MODES:
            raise WorkbenchError(f"sim backend: compile must be one of {', '.join(COMPILE_MODES)}, got {mode!r}")
        self.compile_mode = mode
        arch = spec.options.get("arch")
        if arch is not None and not is_arch_name(arch):
            raise WorkbenchError(f"sim backend: arch must be a GPU architecture such as sm_90, got {arch!r}")
        try:
            self.compile_wait_s = float(spec.options.get("compile_wait_s", COMPILE_WAIT_S))
        except (TypeError, ValueError):
            raise WorkbenchError(f"sim backend: compile_wait_s must be a number of seconds, got {spec.options.get('compile_wait_s')!r}") from None
        if not self.compile_wait_s >= 0:
            raise WorkbenchError(f"sim backend: compile_wait_s must be >= 0, got {self.compile_wait_s}")
        self._estimated_once: set[str] = set()  # configs simulated with estimates while compiling
        self._slow_compiles = 0
        self.noise = bool(spec.options.get("noise", True))
        seed = spec.options.get("seed", 0) or 0
        if type(seed) is not int or seed < 0:
            raise WorkbenchError(f"sim backend: seed must be a non-negative integer, got {seed!r}")
        self.seed = seed
        self._emulations: dict[tuple, tuple[Status | None, str, float]] = {}
        self._keys: dict[str, str] = {}
        self._launches: dict[str, tuple[tuple[int, ...], tuple[int, ...], int, WorkProfile]] = {}
        self._prepared = False

    # ---- main process -------------------------------------------------------------------------
    @classmethod
    def target(cls, spec: BackendSpec) -> Target:
        gpu = _gpu_for(spec)
        return template_target(load_template_for(spec), spec, describe_sim_device(gpu, spec.options.get("arch")))

    # ---- worker -------------------------------------------------------------------------------
    def prepare(self) -> None:
        if self._prepared:
            return
        self.template = self._given_template or load_template_for(self.spec)
        self.gpu = _gpu_for(self.spec)
        self.arch = str(self.spec.options.get("arch") or self.gpu.arch)
        self.problem = self.template.resolve_problem(self.spec.options.get("problem"))
        self.space = self.template.space(self.problem)
        self.bytes_moved = float(self.template.bytes_moved(self.problem))
        self.flops = float(self.template.flops(self.problem))
        self.small = dict(self.template.small_problem or self.problem)
        small_bytes = device_memory_mb(self.template, self.small) * 1e6
        if small_bytes > MAX_SMALL_PROBLEM_BYTES:  # made here, in this process, and emulated per config
            raise WorkbenchError(
                f"{self.template.name}: the small problem's buffers take {small_bytes / 2**20:,.0f} MiB; the simulator "
                f"makes them and emulates every config on them, at most {MAX_SMALL_PROBLEM_BYTES // 2**20} MiB: give "
                "the problem parameters \"small\" values (a GPU run measures the full problem)")
        rng = np.random.default_rng(self.seed)
        self.small_inputs: dict[str, Any] = self.template.make_inputs(self.small, rng)
        self.adopted: AdoptedReference | None = None
        self.small_expected: dict[str, np.ndarray] = {}
        if self.spec.options.get("run_reference_file", True) or not self.template.reference_runs_a_file:
            self.small_expected = self.template.reference(self.small_inputs, self.small)
            unmatchable = non_finite_reference(self.small_expected, "the small problem")
            if unmatchable is not None:  # on a GPU every config would fail its verification
                raise WorkbenchError(f"{self.template.name}: {unmatchable}")
        if not self.template.has_reference and self.template.emulate is not None:
            # Outputs are checked through the emulation: the first valid config's stand in for the reference.
            self.adopted = adopt_reference(np, self.template.reference_candidates(self.problem), self._emulate)
            self.small_expected = dict(self.adopted.expected) if self.adopted is not None else {}
        # Without an emulation, the best a float32 kernel can do: the reference rounded to float32;
        # with nothing to compare with (no reference, no emulation to adopt one), no quality at all
        # rather than a perfect one nobody measured.
        self.float32_quality = quality_of(
            {k: np.asarray(v, dtype=np.float32) for k, v in self.small_expected.items()}, self.small_expected
        ) if self.small_expected else math.nan
        self._arith_slots = tuple(s.name for s in self.template.slots if s.group in _ARITHMETIC_GROUPS)
        tabled = self.compile_mode in ("nvrtc", "known")
        self.table: TemplateFigures | None = figures_for(self.template, self.problem, self.arch) if tabled else None
        #: Other architectures' tabulated figures, nearest first: the estimate of a config this
        #: arch's table lacks while its compile is pending (``compile: "estimate"`` uses none).
        self.neighbours: list[tuple[str, TemplateFigures]] = (
            nearest_figures(self.template, self.problem, self.arch) if tabled else [])
        self._prepared = True

    def _resources(self, config: Config, smem_dynamic: int, phase: PhaseCallback,
                   limits: EvalLimits = EvalLimits()) -> dict[str, Any]:
        """Registers/smem/spills of the rendered config: NVRTC (cached by source hash) or an estimate."""
        phase("compile")
        known = self._keys.get(config.id)  # same template + problem + config -> same source
        if known is not None and known in _RESOURCE_CACHE:
            return _RESOURCE_CACHE[known]
        source = self.template.render(config, self.problem)
        key = hashlib.sha256(
            "\0".join((source, self.arch, self.compile_mode, *self.template.nvrtc_options)).encode()
        ).hexdigest()
        self._keys[config.id] = key
        cached = _RESOURCE_CACHE.get(key)
        if cached is not None:
            return cached
        result: dict[str, Any] | None = None
        fallback_reason = ""
        if self.compile_mode == "known":
            result = self.table.get(config.id) if self.table is not None else None
            if result is None:
                try:
                    result = _cached_figures(source, self.arch, self.template.nvrtc_options, self.template.entry)
                except WorkbenchError:  # no NVRTC to name the cache entry: estimated, as below
                    result = None
            if result is None:  # not kept: a compile later in this process (a run) is known next time
                return {**self._estimate(config), "resource_source": "estimate (not compiled)"}
        elif self.compile_mode == "nvrtc":
            result = self.table.get(config.id) if self.table is not None else None
            if result is None:
                try:
                    result = _cached_figures(source, self.arch, self.template.nvrtc_options, self.template.entry)
                except WorkbenchError as exc:  # NVRTC missing or arch unsupported: say so, estimate instead
                    fallback_reason = str(exc)
            if result is None and not fallback_reason:
                wait = self._wait_for(config, limits)
                job = _jobs().submit(key, lambda: _compiled_figures(
                    source, self.arch, self.template.nvrtc_options, self.template.entry),
                    priority=URGENT if config.id in self._estimated_once else self._promise(config))
                try:
                    result = job.result(timeout=wait)
                except FutureTimeout:
                    return self._pending_estimate(config, key, job)
                except CancelledError:  # the process is ending and dropped the queued compiles
                    fallback_reason = "the compile was dropped as the process ended"
                except WorkbenchError as exc:  # NVRTC missing or arch unsupported: say so, estimate instead
                    fallback_reason = str(exc)
        if result is None:
            result = self._estimate(config)
            if fallback_reason:
                result["estimate_reason"] = fallback_reason
        _RESOURCE_CACHE[key] = result
        return result

    def _wait_for(self, config: Config, limits: EvalLimits = EvalLimits()) -> float:
        """How long to wait for a config's compile: when it was already simulated with an estimate (a
        refinement), as long as the pool's compile timeout allows (a few seconds short of it, so the
        worker is not killed); not at all once this template's compiles keep outlasting the wait, or
        when the shipped table's entry says its compiles take longer than the wait."""
        if config.id in self._estimated_once:
            return max(self.compile_wait_s, 0.9 * limits.compile_timeout_s - 1.0)
        if self._slow_compiles >= SLOW_COMPILES:
            return 0.0
        cost = self.table.compile_s if self.table is not None else None
        if cost is not None and cost > self.compile_wait_s:  # the table knows this template compiles slowly
            return 0.0
        return self.compile_wait_s

    def _promise(self, config: Config) -> float:
        """The config's latency modelled with estimated resources (lower: compiled sooner), so the
        configs a run's answer is read from are the first to get their real figures."""
        grid, block, smem_dynamic, profile = self._launch(config)
        estimate = self._estimate(config)
        smem = int(estimate["smem_bytes"]) + smem_dynamic
        if launch_check(self.gpu, block, smem, int(estimate["registers"]), grid=grid):
            return math.inf  # refused as estimated: its real figures matter least
        return float(predict(self.gpu, profile, grid, block, {**estimate, "smem_bytes": smem}).latency_ms)

    def _estimate(self, config: Config) -> dict[str, Any]:
        """Resources without this arch's compile: the same config's figures on the nearest
        architecture of this generation with a table, else the work-profile rule; marked
        ``estimated`` either way."""
        for arch, figures in self.neighbours:
            row = figures.get(config.id)
            if row is not None and "compile_error" not in row:
                return {**row, "estimated": True, "estimated_from": arch, "resource_source": f"estimate ({arch} table)"}
        _, block, _, profile = self._launch(config)
        return estimate_resources(profile, int(np.prod(block)), 0)

    def _pending_estimate(self, config: Config, key: str, job: Future) -> dict[str, Any]:
        """Estimated resources while the compile goes on; its figures replace them when it lands."""
        if config.id not in self._estimated_once and self._wait_for(config):  # it outlasted a real wait
            self._slow_compiles += 1
        self._estimated_once.add(config.id)

        def landed(done: Future) -> None:
            if not done.cancelled() and done.exception() is None:  # (cancelled: dropped at exit)
                _RESOURCE_CACHE[key] = done.result()

        job.add_done_callback(landed)
        result = self._estimate(config)
        result["resources_pending"] = True
        result["resource_source"] = "estimate (compile pending)"
        return result

    def _emulate(self, config: Config) -> dict[str, Any] | None:
        """The emulated outputs of a config on the small problem; None when the emulation fails."""
        assert self.template.emulate is not None
        try:
            return dict(self.template.emulate(self.small_inputs, self.small, config))
        except Exception:  # noqa: BLE001 - a config whose emulation fails cannot be the reference
            return None

    def _reference_details(self, config: Config) -> dict[str, Any]:
        """How this config's outputs were checked, for a template without a reference (else nothing)."""
        if self.template.has_reference:
            return {}
        if self.template.emulate is None:
            return {"reference": "not checked: no reference given, and the simulator has no emulation of this "
                                 "kernel's arithmetic (on a GPU the first valid config's outputs are the reference)"}
        return reference_details(self.adopted, config.id)

    def _emulated(self, config: Config) -> tuple[Status | None, str, float]:
        """(failure status or None, message, quality) from emulating the config on the small problem."""
        if self.template.emulate is None:
            return None, "", self.float32_quality
        key = tuple(config[name] for name in self._arith_slots)
        hit = self._emulations.get(key)
        if hit is not None:
            return hit
        try:
            outputs = self.template.emulate(self.small_inputs, self.small, config)
        except Exception as exc:  # noqa: BLE001 - a broken emulation is that config's runtime error
            verdict: tuple[Status | None, str, float] = (
                Status.RUNTIME_ERROR, f"emulation failed: {type(exc).__name__}: {exc}", math.nan)
        else:
            message = ""
            for name, want in self.small_expected.items():
                rtol, atol = self.template.tolerance_for(name)
                got = np.asarray(outputs.get(name, np.array([])), dtype=np.float64)
                want = np.asarray(want, dtype=np.float64)
                if got.shape != want.shape:
                    message = f"{name}: emulated shape {got.shape}, expected {want.shape}"
                    break
                bad = ~(np.abs(got - want) <= atol + rtol * np.abs(want))
                if bad.any():
                    i = int(np.flatnonzero(bad.ravel())[0])
                    message = (f"{name}[{i}] = {got.ravel()[i]:.6g}, expected {want.ravel()[i]:.6g}; "
                               f"{int(bad.sum())} of {want.size} elements outside rtol={rtol:g} atol={atol:g} (emulated)")
                    break
            quality = quality_of(outputs, self.small_expected)
            verdict = (Status.WRONG_RESULT if message else None, message, quality)
        self._emulations[key] = verdict
        return verdict

    def _noisy(self, config: Config, latency: float) -> tuple[float, float, float]:
        """(median, p20, p80) with seeded run-to-run noise: same config + seed -> same numbers."""
        if not self.noise:
            return latency, latency, latency
        digest = hashlib.sha256(f"{config.id}:{self.seed}:{self.gpu.name}".encode()).digest()
        u1, u2, u3 = (int.from_bytes(digest[i : i + 8], "little") / 2.0**64 for i in (0, 8, 16))
        normal = math.sqrt(-2.0 * math.log(max(u1, 1e-300))) * math.cos(2.0 * math.pi * u2)  # Box-Muller
        median = latency * (1.0 + NOISE_MEDIAN * max(-3.0, min(3.0, normal)))
        low, high = NOISE_SPREAD
        spread = low + (high - low) * u3
        return median, median * (1.0 - 0.4 * spread), median * (1.0 + spread)

    def _launch(self, config: Config) -> tuple[tuple[int, ...], tuple[int, ...], int, WorkProfile]:
        """Grid, block, dynamic smem and work profile of a config (pure functions: cached per config)."""
        hit = self._launches.get(config.id)
        if hit is None:
            problem = self.problem
            hit = (
                tuple(int(v) for v in self.template.grid(problem, config)),
                tuple(int(v) for v in self.template.block(problem, config)),
                int(self.template.dynamic_smem(problem, config)),
                self.template.profile(problem, config),
            )
            self._launches[config.id] = hit
        return hit

    def evaluate(self, config: Config, limits: EvalLimits, phase: PhaseCallback = no_phase) -> Measurement:
        self.prepare()
        try:
            grid, block, smem_dynamic, profile = self._launch(config)
        except WorkbenchError:
            raise
        except Exception as exc:  # noqa: BLE001 - a template function failing is that config's problem
            return Measurement.failure(Status.RUNTIME_ERROR, f"template failed for this config: {type(exc).__name__}: {exc}")
        needed_mb = device_memory_mb(self.template, self.problem, config)  # (1e6 bytes)
        if needed_mb * 1e6 > self.gpu.memory_gb * 2**30:  # the buffers a real run allocates first would not fit
            return Measurement.failure(
                Status.RUNTIME_ERROR,
                f"out of memory (cudaErrorMemoryAllocation): the buffers need {needed_mb * 1e6 / 2**30:,.1f} GiB, "
                f"the {self.gpu.name} has {self.gpu.memory_gb:g} GiB")
        resources = self._resources(config, smem_dynamic, phase, limits)
        if "compile_error" in resources:
            return Measurement.failure(Status.COMPILE_ERROR, resources["compile_error"], resources["log"])
        phase("run")
        smem_total = int(resources["smem_bytes"]) + smem_dynamic
        spill = int(resources["spill_store_bytes"]) + int(resources["spill_load_bytes"])
        threads = int(np.prod(block))
        used = {"registers": float(resources["registers"]), "smem_bytes": float(smem_total), "spill_bytes": float(spill),
                **onchip_figures(int(resources["registers"]), smem_total, threads)}
        # Where the figures came from travels with every outcome that rests on them (a launch
        # refused, a wrong result, a timing), so an estimate is never read as a compile's fact and
        # the refinement finds every trial still waiting for its compile.
        marks: dict[str, Any] = {"estimated": bool(resources.get("estimated"))}
        for key in ("estimate_reason", "resource_source", "estimated_from"):
            if resources.get(key):
                marks[key] = resources[key]
        if resources.get("resources_pending"):
            marks["resources_pending"] = True
        refusal = launch_check(self.gpu, block, smem_total, int(resources["registers"]), grid=grid)
        over = over_launch_bounds(threads, int(resources.get("max_threads") or 0))
        if not refusal and over:
            refusal = f"too many resources requested for launch: {over}"
        if refusal:
            return Measurement(Status.LAUNCH_ERROR, metrics=used, message=refusal, log=refusal, details=marks)
        prediction = predict(self.gpu, profile, grid, block, {**resources, "smem_bytes": smem_total})
        if not math.isfinite(prediction.latency_ms):  # no block resident (the launch check says the same)
            refusal = f"too many resources requested for launch (no block fits an SM: {prediction.occupancy.explain()})"
            return Measurement(Status.LAUNCH_ERROR, metrics=used, message=refusal, log=refusal, details=marks)
        status, message, quality = self._emulated(config)
        if status is not None:
            return Measurement(status, metrics={**used, "quality": quality}, message=message, log=message,
                               details={**self._reference_details(config), **marks})
        latency, p20, p80 = self._noisy(config, prediction.latency_ms)
        details: dict[str, Any] = {
            "terms": [t.to_dict() for t in prediction.terms],
            "bound": prediction.bound,
            "occupancy_limiter": prediction.occupancy.limiter,
            "occupancy": prediction.occupancy.explain(),
            "gpu": self.gpu.name,
            "arch": self.arch,
            "simulated": True,
            "quality_source": (EMULATION if self.template.emulate is not None
                               else ROUNDED_REFERENCE if self.small_expected
                               else "none: the template gives no reference to compare with"),
        }
        details.update(self._reference_details(config))
        details.update(marks)
        if profile.notes:
            details["notes"] = list(profile.notes)
        if limits.max_latency_ms is not None and p20 > 1.5 * limits.max_latency_ms:
            # what timing would see before giving up: the fast end of the first samples, a lower
            # bound on the median; kept so that relaxing the constraint can bring the config back
            # (what the config holds is known without its timing: the chart of latency against
            # memory draws it at its bound)
            held = {"memory_mb": needed_mb,
                    "onchip_kb_per_sm": used["onchip_kb_per_block"] * prediction.occupancy.active_blocks_per_sm}
            return Measurement(Status.ABORTED, metrics={"latency_bound_ms": p20, **held, **used},
                               message=f"aborted above {p20:.4g} ms: more than 1.5 x the max latency "
                                       f"{limits.max_latency_ms:g} ms (modelled)",
                               details=details)
        throughput = self.bytes_moved / (latency * 1e6)
        gflops = self.flops / (latency * 1e6)
        pct = max(throughput / self.gpu.memory_bandwidth_gbs, gflops * 1e9 / self.gpu.peak_flops) * 100.0
        metrics = {
            "latency_ms": latency,
            "latency_p20_ms": p20,
            "latency_p80_ms": p80,
            "throughput_gbs": throughput,
            "gflops": gflops,
            "pct_of_peak": pct,
            "memory_mb": needed_mb,
            "onchip_kb_per_sm": used["onchip_kb_per_block"] * prediction.occupancy.active_blocks_per_sm,
            # what this config really moves and computes (re-reads, padding, extra passes, whole
            # sectors of poorly coalesced accesses and spill traffic included), for its arithmetic
            # intensity on a roofline: the model's own DRAM traffic, as the memory term counts it
            "dram_mb": prediction.dram_bytes / 1e6,
            "work_gflop": profile.flops / 1e9,
            "occupancy": prediction.occupancy.fraction,
            "quality": quality,
            **used,
        }
        if not math.isfinite(quality):  # nothing was compared: no figure, not a made-up one
            del metrics["quality"]
        return Measurement(Status.OK, metrics=metrics, details=details)
