"""The simulator as a cost model for search: predict a config's latency before measuring it.

``with_pruning`` (``workbench.search.pruning``) ranks a strategy's proposals with such a predictor
and measures only the most promising fraction, like Triton's ``perf_model`` + ``top_k``. The
predictor runs the performance model in this process with estimated resources (no compile, no
noise), so one prediction costs about a millisecond while a measurement costs seconds.
"""

from __future__ import annotations

import math
from typing import Callable

from workbench.backends.base import BackendSpec, EvalLimits
from workbench.core.errors import WorkbenchError
from workbench.core.space import Config

Predictor = Callable[[Config], float]


def _gpu_model_for(spec: BackendSpec, device_name: str | None) -> str:
    """The modelled GPU closest to what the run measures on: the sim's own model, the CUDA device's
    name when a description of it ships, else the default model."""
    from workbench.core.gpus import load_gpu

    if spec.kind == "sim":
        return str(spec.options.get("gpu_model") or "H200")
    if device_name:
        try:
            return load_gpu(device_name).name
        except WorkbenchError:
            pass
    return "H200"


def sim_predictor(spec: BackendSpec, device_name: str | None = None) -> Predictor:
    """A predictor of latency (ms; ``inf`` for configs the model expects to fail) for a template run."""
    from workbench.backends.sim import SimBackend

    if spec.kind not in ("sim", "cuda"):
        raise WorkbenchError(f"cost-model pruning needs a kernel template (sim or cuda backend), not {spec.kind}")
    options = {k: v for k, v in spec.options.items() if k not in ("device", "devices")}
    options.update(gpu_model=_gpu_model_for(spec, device_name), noise=False, compile="estimate")
    model = SimBackend(BackendSpec("sim", options))
    model.prepare()
    limits = EvalLimits()
    cache: dict[str, float] = {}

    def predict(config: Config) -> float:
        if config.id not in cache:
            measurement = model.evaluate(config, limits)
            latency = measurement.metric("latency_ms") if measurement.ok else math.inf
            cache[config.id] = latency if math.isfinite(latency) else math.inf
        return cache[config.id]

    return predict
