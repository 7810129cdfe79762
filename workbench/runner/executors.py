"""Where candidates run: the local worker pool (one worker per GPU with the ``cuda`` backend), a
Ray cluster, or this process (``inline``, for the ``sim`` and ``replay`` backends, whose candidates
run no code that needs isolating). The engine only asks for a pool; this module decides which one
and how it is spread.

Device rules live here, as pure functions tested without a GPU:

- :func:`assign_devices` turns the visible GPUs (their names) and the user's pick (``--devices``)
  into the list of device indices the pool pins its workers to, one worker per device.
- Timings from different GPU models are not comparable, so a device list that mixes models is
  refused unless the user allows it (``--allow-mixed-gpus``); the same rule picks one accelerator
  type on a Ray cluster (``ray_executor.ray_accelerator_type``). Ray is imported only when a plan
  picks it, so this module imports ``ray_executor`` lazily and never the other way round.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from workbench.backends import cuda_env
from workbench.backends.base import BackendSpec, EvalLimits
from workbench.core.errors import WorkbenchError, quoted
from workbench.core.domain.measurement import Measurement
from workbench.core.domain.records import BackendOptions
from workbench.core.domain.space import Config
from workbench.runner.inline import InlinePool, check_inline
from workbench.runner.pool import PoolFactory, Result, WorkerPool, worker_spec

EXECUTOR_CHOICES = ("local", "ray", "inline")


def parse_devices(text: str) -> list[int]:
    """``"0,2"`` -> ``[0, 2]`` (the ``--devices`` flag); a clear error for anything else."""
    parts = [p.strip() for p in str(text).split(",")]
    if not parts or any(not p for p in parts):
        raise WorkbenchError(template=f"{{devices}} {quoted(repr(text))}: expected device numbers separated by commas, e.g. 0,1")
    try:
        return [int(p) for p in parts]
    except ValueError:
        raise WorkbenchError(template=f"{{devices}} {quoted(repr(text))}: expected device numbers separated by commas, e.g. 0,1") from None


def assign_devices(names: Sequence[str], requested: Sequence[int] | None = None, allow_mixed: bool = False) -> list[int]:
    """The device indices to run one worker on each.

    ``names``: the model name of every visible device (index = position), as the driver reports
    it. ``requested``: the user's pick (None: all visible devices). Refuses unknown or repeated
    indices, and (unless ``allow_mixed``) devices of different models, whose timings would be
    ranked against each other otherwise.
    """
    if not names:
        raise WorkbenchError("no CUDA device is visible (use --backend sim, or check the driver)")
    devices = list(range(len(names))) if requested is None else [int(d) for d in requested]
    if not devices:
        raise WorkbenchError(template="{devices}: name at least one device")
    seen: set[int] = set()
    for device in devices:
        if not 0 <= device < len(names):
            raise WorkbenchError(template=f"{{devices}}: no device {device}; visible devices are 0..{len(names) - 1}")
        if device in seen:
            raise WorkbenchError(template=f"{{devices}}: device {device} is named twice")
        seen.add(device)
    models = sorted({names[d] for d in devices})
    if len(models) > 1 and not allow_mixed:
        listing = ", ".join(f"{d}: {names[d]}" for d in devices)
        raise WorkbenchError(template=(
            f"the devices are different GPU models ({quoted(listing)}); their timings must not be ranked together: "
            "pick one model with {devices}, or allow mixing them with {allow_mixed_gpus}"
        ))
    return devices


def visible_gpu_names() -> list[str]:
    """Model name of every CUDA device this process can see ([] without CuPy or a driver)."""
    from workbench.runner.plan import cuda_device_count

    count = cuda_device_count()
    if count == 0:
        return []
    return cuda_env.device_names(count)


def spread_over_devices(spec: BackendSpec, devices: Sequence[int]) -> BackendSpec:
    """The spec with ``options["devices"]`` set: the pool pins worker slot ``i`` to ``devices[i % n]``
    (see :func:`workbench.runner.pool.worker_spec`); ``device`` names the first one, which is the
    device the session describes."""
    options = BackendOptions(**spec.options)
    options["devices"] = [int(d) for d in devices]
    options["device"] = int(devices[0])
    return BackendSpec(spec.kind, options)


def _device_label(spec: BackendSpec, index: int) -> int | None:
    device = worker_spec(spec, index).options.get("device")
    return None if device is None or "devices" not in spec.options else int(device)


def name_device(result: Result, device: int | None, kind: str) -> Result:
    """A result whose worker name and measurement details say which device measured it."""
    if device is None:
        return result
    details = {**result.measurement.details, "device_index": device}
    named: Measurement = dataclasses.replace(result.measurement, details=details)
    return result._replace(measurement=named, worker=f"{result.worker}@{kind}:{device}")


class LocalPool(WorkerPool):
    """The local :class:`WorkerPool`, with results naming their device when workers are pinned.

    With ``options["devices"]`` (one worker per GPU) the worker name becomes
    ``worker-1@cuda:1`` and the measurement details get ``device_index``, so a trial says which GPU
    measured it. Everything else (timeouts, crash handling) is the pool's own.
    """

    def __init__(self, spec: BackendSpec, workers: int = 1, limits: EvalLimits = EvalLimits(),
                 on_start: Callable[[Config, str], None] | None = None, **kwargs: Any) -> None:
        self._labels = {f"worker-{i}": _device_label(spec, i) for i in range(workers)}
        self._outer_on_start = on_start
        super().__init__(spec, workers, limits, on_start=self._on_start if on_start else None, **kwargs)

    def _on_start(self, config: Config, worker: str) -> None:
        device = self._labels.get(worker)
        assert self._outer_on_start is not None
        self._outer_on_start(config, worker if device is None else f"{worker}@{self.spec.kind}:{device}")

    def results(self, timeout: float | None = None) -> list[Result]:
        return [name_device(r, self._labels.get(r.worker), self.spec.kind) for r in super().results(timeout)]


@dataclass(frozen=True)
class ExecutorChoice:
    """How a run is executed: ``local`` (worker processes), ``ray`` (actors, optional ``address``) or
    ``inline`` (in this process; ``sim`` and ``replay`` only, see :mod:`workbench.runner.inline`)."""

    kind: str = "local"
    address: str | None = None
    devices: tuple[int, ...] | None = None
    allow_mixed_gpus: bool = False


def max_workers(executor: str = "local") -> int:
    """Most worker processes a run starts on this machine: 4 per CPU core (at least 8).

    More processes than that only compete for the cores (and for memory: each worker imports its
    backend); a Ray cluster's actors run elsewhere, so only a generous fixed cap applies there.
    """
    if executor == "ray":
        return 4096
    return max(8, 4 * (os.cpu_count() or 1))


def check_workers(workers: int | None, executor: str = "local", flag: str | None = None) -> None:
    """Refuse a worker count this machine cannot mean, from a flag (``flag`` names it) or from a
    session's stored settings alike (a file must not start a million processes where the flag could not)."""
    if workers is None:
        return
    limit = max_workers(executor)
    if not 1 <= workers <= limit:
        if flag:  # the flag's own value: the command line's wording is the only one
            raise WorkbenchError(f"{flag} {workers}: must be from 1 to {limit} ({os.cpu_count() or 1} CPU cores here)")
        raise WorkbenchError(template=f"workers {workers}: must be from 1 to {limit} ({os.cpu_count() or 1} CPU "
                                      "cores here; {workers} sets it)")


@dataclass(frozen=True)
class ExecutionPlan:
    """The resolved spec (devices filled in), the worker count, and the pool factory for the engine."""

    spec: BackendSpec
    workers: int
    pool_factory: PoolFactory
    notes: tuple[str, ...] = ()


def plan_execution(
    spec: BackendSpec,
    choice: ExecutorChoice,
    workers: int | None = None,
    gpu_names: Callable[[], list[str]] = visible_gpu_names,
    batch_parallel: bool = True,
) -> ExecutionPlan:
    """Resolve an executor choice for a spec.

    Local + ``cuda``: one worker per chosen device (``workers`` may ask for more, round robin, or
    for fewer: then the first ``workers`` visible devices are used).
    Ray: ``workers`` actors (default: one per cluster GPU for ``cuda``, else one per cluster CPU;
    finding that out connects to Ray), started when the engine asks for its pool. ``gpu_names`` is injectable so the device rules are
    tested without a GPU. Inline: the backend runs in this process and ``workers`` (default 1) only
    sizes the batches asked of the strategy; refused for backends that need isolation.
    ``notes`` carry what a user should know (a sequential strategy serialises).
    """
    if choice.kind not in EXECUTOR_CHOICES:
        raise WorkbenchError(f"unknown executor {choice.kind!r}; choose one of: {', '.join(EXECUTOR_CHOICES)}")
    check_workers(workers, choice.kind)
    if choice.devices is not None and spec.kind != "cuda":
        raise WorkbenchError(template=f"{{devices}} applies to the cuda backend, not {quoted(spec.kind)}")
    if choice.address is not None and choice.kind != "ray":
        raise WorkbenchError(template="{ray_address} needs {executor:ray}")
    notes: list[str] = []
    if choice.kind == "local":
        factory: PoolFactory = LocalPool
        if spec.kind == "cuda":
            names = gpu_names()
            requested = choice.devices
            if requested is None and workers is not None and workers < len(names):
                requested = tuple(range(workers))  # fewer workers than GPUs: the first ones
            devices = assign_devices(names, requested, choice.allow_mixed_gpus)
            spec = spread_over_devices(spec, devices)
            workers = workers or len(devices)
        workers = workers or 1
    elif choice.kind == "inline":
        check_inline(spec)
        factory = InlinePool
        workers = workers or 1
    else:
        if choice.devices is not None:
            raise WorkbenchError(template="{devices} picks local GPUs; on Ray each actor gets the GPU Ray assigns it")
        from workbench.runner.ray_executor import cluster_workers, ray_pool_factory

        factory = ray_pool_factory(choice.address, allow_mixed_gpus=choice.allow_mixed_gpus)
        workers = workers or cluster_workers(spec, choice.address)
    if not batch_parallel and workers > 1:
        notes.append(
            "the strategy is sequential (each proposal follows from the last results): parallel workers measure "
            "speculative candidates, so they add evaluations per second more than progress; "
            "batch-parallel strategies (random, genetic, tpe) use every worker fully"
        )
    return ExecutionPlan(spec, workers, factory, tuple(notes))
