"""The simulator as a cost model for search: predict a config's measurement before measuring it.

``with_pruning`` (``workbench.search.pruning``) ranks a strategy's proposals by the run's objective
of these predictions (latency, and the registers, occupancy and memory a limit or a weight may be
on) and measures only the most promising fraction, like Triton's ``perf_model`` + ``top_k``. The
predictor runs the performance model in this process with estimated resources (no compile, no
noise), so one prediction costs about a millisecond while a measurement costs seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from workbench.backends.base import BackendSpec, EvalLimits
from workbench.core.errors import WorkbenchError
from workbench.core.model.gpus import GpuMatch
from workbench.core.domain.records import BackendOptions
from workbench.core.domain.measurement import LATENCY, Measurement, Status
from workbench.core.domain.space import Config


@dataclass(frozen=True)
class SimPredictor:
    """The modelled GPU's predictions: ``measure`` the whole predicted measurement (what pruning
    ranks by the objective), ``predict`` its latency (``inf`` for a config expected to fail)."""

    measure: Callable[[Config], Measurement]
    gpu: GpuMatch

    def predict(self, config: Config) -> float:
        measurement = self.measure(config)
        latency = measurement.metric(LATENCY) if measurement.ok else math.inf
        return latency if math.isfinite(latency) else math.inf

    def __call__(self, config: Config) -> Measurement:
        return self.measure(config)


def _capability(text: str | None) -> tuple[int, int] | None:
    """``"8.6"`` (as the CUDA backend describes a device) -> (8, 6); None when absent or unreadable."""
    try:
        major, minor = str(text).split(".")
        return int(major), int(minor)
    except ValueError:
        return None


def gpu_model_for(spec: BackendSpec, device_name: str | None, compute_capability: str | None = None) -> GpuMatch:
    """The modelled GPU closest to what the run measures on: the sim's own model; for a CUDA device
    its own description, else the nearest description of its architecture (the match's ``note``
    says which, for the session and the status bar); the default model when nothing is known."""
    from workbench.core.model.gpus import DEFAULT_GPU, load_gpu, match_gpu

    if spec.kind == "sim":
        return GpuMatch(load_gpu(str(spec.options.get("gpu_model") or DEFAULT_GPU)), True)
    if device_name:
        return match_gpu(device_name, _capability(compute_capability))
    default = load_gpu(DEFAULT_GPU)
    return GpuMatch(default, False, f"the device's name is not known; modelled as the default {default.full_name} ({DEFAULT_GPU})")


def sim_predictor(spec: BackendSpec, device_name: str | None = None,
                  compute_capability: str | None = None, template: Any = None) -> SimPredictor:
    """A predictor of latency (ms; ``inf`` for configs the model expects to fail) for a template run,
    with the :class:`GpuMatch` it models; ``template``: the template already loaded (else the one
    the spec names is loaded from its folders)."""
    from workbench.backends.sim import SimBackend

    if spec.kind not in ("sim", "cuda"):
        raise WorkbenchError(f"cost-model pruning needs a kernel template (sim or cuda backend), not {spec.kind}")
    options = BackendOptions(**spec.options)
    options.pop("device", None)
    options.pop("devices", None)
    match = gpu_model_for(spec, device_name, compute_capability)
    # in this (the user's) process: never import a reference file the template names; the
    # prediction needs latencies, and only a run's workers compute the reference
    # the figures a run stands on where they are known without compiling (the shipped table, the
    # compiler's caches), estimated otherwise; a run that chose estimated resources is predicted so
    compile_mode = "estimate" if options.get("compile") == "estimate" else "known"
    options.update({"gpu_model": match.spec.name, "noise": False, "compile": compile_mode, "run_reference_file": False})
    model = SimBackend(BackendSpec("sim", options), template=template)
    model.prepare()
    limits = EvalLimits()
    cache: dict[str, Measurement] = {}

    def measure(config: Config) -> Measurement:
        if config.id not in cache:
            try:
                said = model.evaluate(config, limits)  # kept without the model's explanations (kilobytes each)
                cache[config.id] = Measurement(said.status, dict(said.metrics), said.message)
            except WorkbenchError as exc:  # a config the template cannot render fails when measured too
                cache[config.id] = Measurement.failure(Status.COMPILE_ERROR, f"predicted to fail: {exc}")
        return cache[config.id]

    return SimPredictor(measure, match)
