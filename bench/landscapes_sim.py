"""Simulated landscapes of the workbench's own templates, for the strategy benchmark.

A simulated landscape is every valid config of a template in ``kernels/`` (its search space for the
template's default problem, restrictions applied) evaluated in-process by the ``sim`` backend with
noise off and resources estimated (no NVRTC): the modelled latency, or a failure where the
simulator predicts that a real GPU would refuse the launch, fail to compile, or compute a wrong
result. These are the performance model's predictions, not GPU measurements; they are named
``sim_<GPU>_<template>`` so that no table mistakes them for recordings.

Building one takes seconds (every config once), so the result is cached as JSON under
``$KERNEL_WORKBENCH_CACHE_DIR/sim-landscapes`` (else the user cache folder), keyed by the template's
source hash, the GPU, the problem and :func:`model_version` (a hash of the simulator's own source and
the GPU description): editing the model, the GPU file or the template makes a fresh build.

:func:`write_kt_cache` writes a landscape as a Kernel Tuner cache file, so Kernel Tuner's strategies
can run on it in simulation mode.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from workbench.backends.base import BackendSpec, EvalLimits
from workbench.backends.sim import SimBackend, describe_sim_device
from workbench.core.fs import user_folder
from workbench.core.model.gpus import load_gpu
from workbench.core.domain.measurement import LATENCY
from workbench.core.domain.space import SearchSpace
from workbench.core.domain.templates import load_templates

#: Bump when the cache record's layout changes.
CACHE_FORMAT = 1
#: Sources whose edits change what the simulator predicts (relative to the repository root).
MODEL_SOURCES = (
    "workbench/backends/sim.py", "workbench/core/model/perfmodel.py", "workbench/core/model/access.py", "workbench/core/model/quality.py",
)
#: Metrics kept besides the latency (the auxiliary signals a strategy may read, e.g. agents').
KEPT_METRICS = ("throughput_gbs", "gflops", "pct_of_peak", "occupancy", "registers", "smem_bytes", "spill_bytes", "quality")

_ROOT = Path(__file__).resolve().parent.parent


def data_digest(records: Mapping[str, Any]) -> str:
    """A short digest of a landscape's figures (config id -> latency or metrics, None for a
    failure), independent of their order: what the benchmarks' run caches key a landscape's data
    by, so a landscape that changed anywhere is not served runs made on its old figures."""
    text = json.dumps(sorted(records.items(), key=lambda item: item[0]), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def landscape_name(template: str, gpu: str = "H200") -> str:
    return f"sim_{gpu}_{template}"


def cache_dir() -> Path:
    """``$KERNEL_WORKBENCH_CACHE_DIR/sim-landscapes``, else the user cache folder's."""
    return user_folder("cache") / "sim-landscapes"


def model_version(gpu: str) -> str:
    """Hash of the simulator's sources and the GPU description: changes when its predictions may."""
    digest = hashlib.sha256(f"format {CACHE_FORMAT}\0".encode())
    for rel in MODEL_SOURCES:
        path = _ROOT / rel
        digest.update(rel.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"missing"))
    digest.update(repr(load_gpu(gpu)).encode())
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class SimRecording:
    """A template's space and what the simulator predicts for each valid config (None = failure)."""

    name: str
    template: str
    gpu: str
    device_name: str
    problem: dict[str, Any]
    space: SearchSpace
    latency: dict[str, float | None]  # config id -> latency_ms, or None for a predicted failure
    metrics: dict[str, dict[str, float]]
    failures: dict[str, int]  # status -> count
    seconds: float  # time of the build, 0 when it came from the cache


def simulate(template: str, gpu: str = "H200", problem: Mapping[str, Any] | None = None, *,
             use_cache: bool = True) -> SimRecording:
    """Every valid config of ``template`` evaluated by the simulator (from the disk cache when fresh)."""
    tpl = load_templates()[template]
    params = tpl.resolve_problem(problem)
    space = tpl.space(params)
    key = hashlib.sha256(json.dumps(
        [template, tpl.source_hash(), gpu, params, model_version(gpu)], sort_keys=True, default=str,
    ).encode()).hexdigest()[:20]
    path = cache_dir() / f"{template}-{gpu}-{key}.json"
    device_name = describe_sim_device(load_gpu(gpu))["name"]
    base = {"name": landscape_name(template, gpu), "template": template, "gpu": gpu,
            "device_name": device_name, "problem": params, "space": space}
    if use_cache:
        record = _read(path, key)
        if record is not None and set(record["latency"]) == {c.id for c in space}:
            return SimRecording(**base, latency=record["latency"], metrics=record["metrics"],
                                failures=record["failures"], seconds=0.0)
    t0 = time.perf_counter()
    backend = SimBackend(BackendSpec("sim", {
        "kernel": template, "problem": dict(params), "seed": 0, "gpu_model": gpu, "noise": False, "compile": "estimate",
    }))
    backend.prepare()
    limits = EvalLimits()
    latency: dict[str, float | None] = {}
    metrics: dict[str, dict[str, float]] = {}
    failures: dict[str, int] = {}
    for config in space:
        m = backend.evaluate(config, limits)
        value = m.metric(LATENCY) if m.ok else math.nan
        if not math.isfinite(value):
            status = m.status.value if not m.ok else "no latency"
            failures[status] = failures.get(status, 0) + 1
            latency[config.id] = None
            continue
        latency[config.id] = float(value)
        metrics[config.id] = {k: float(m.metrics[k]) for k in KEPT_METRICS
                              if k in m.metrics and math.isfinite(float(m.metrics[k]))}
    seconds = time.perf_counter() - t0
    if use_cache:
        _write(path, {"format": CACHE_FORMAT, "key": key, "template": template, "gpu": gpu, "problem": params,
                      "build_seconds": seconds, "latency": latency, "metrics": metrics, "failures": failures})
    return SimRecording(**base, latency=latency, metrics=metrics, failures=failures, seconds=seconds)


def _read(path: Path, key: str) -> dict[str, Any] | None:
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("format") != CACHE_FORMAT or record.get("key") != key:
        return None
    return record


def _write(path: Path, record: dict[str, Any]) -> None:
    """Atomically (temporary file in the same folder, then rename); a read-only cache is not an error."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w") as fh:
            json.dump(record, fh, separators=(",", ":"))
        os.replace(tmp, path)
    except OSError:
        pass


def write_kt_cache(land: Any, path: str | os.PathLike[str], *, device_name: str = "simulated",
                   kernel_name: str | None = None, problem_size: Any = None) -> int:
    """Write a landscape (``name``, ``space``, ``latency``, ``metrics``) as a Kernel Tuner 1.5 cache file.

    One record per config, keyed by its values in slot order; a failure carries
    ``"__error__": "RuntimeFailedConfig"`` and no ``time`` (Kernel Tuner >= 1.4). ``problem_size``
    defaults to the space's integer problem parameters. Returns the number of records.
    """
    names = list(land.space.names)
    if problem_size is None:
        problem_size = [int(v) for v in land.space.params.values() if isinstance(v, int) and not isinstance(v, bool)] or [1]
    cache: dict[str, dict[str, Any]] = {}
    for config in land.space:
        if config.id not in land.latency:
            continue
        record: dict[str, Any] = {n: config[n] for n in names}
        value = land.latency[config.id]
        if value is None:
            record["__error__"] = "RuntimeFailedConfig"
        else:
            record["time"] = value
            gflops = land.metrics.get(config.id, {}).get("gflops")
            if gflops is not None:
                record["GFLOP/s"] = gflops
        cache[",".join(str(config[n]) for n in names)] = record
    document = {
        "device_name": device_name,
        "kernel_name": kernel_name or land.name,
        "problem_size": problem_size,
        "tune_params_keys": names,
        "tune_params": {s.name: list(s.values) for s in land.space.slots},
        "objective": "time",
        "cache": cache,
    }
    with open(path, "w") as fh:
        json.dump(document, fh, indent=1)
        fh.write("\n")
    return len(cache)
