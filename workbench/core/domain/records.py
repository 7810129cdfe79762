"""Typed records of a session's metadata: what measured it (device), how (backend and its options)
and with which strategy, plus where its numbers come from (provenance).

They are ``TypedDict`` s, not classes, on purpose: a session file stores them as JSON objects and
keeps keys this version does not know (a newer backend's device facts), so the in-memory value
stays the plain dict that was loaded and the file format does not change; the types name the keys
every reader may rely on. ``core/domain/session.py`` checks the types of those keys when a file is loaded.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Literal, Mapping, TypedDict, cast

from workbench.core.domain.space import Value


#: A GPU architecture's name (``sm_90``, ``sm_90a``): it names resource-table files and compile
#: targets, so it is never anything a path could be made of.
_ARCH_NAME = re.compile(r"sm_[0-9]{2,3}[a-z]?")
#: The simulator's compile modes (what ``backend.options.compile`` may hold; see ``backends/sim.py``).
SIM_COMPILE_MODES = ("nvrtc", "estimate", "known")


def is_arch_name(value: Any) -> bool:
    """Whether ``value`` is a GPU architecture's name (``sm_`` and two or three digits, a letter at most)."""
    return isinstance(value, str) and _ARCH_NAME.fullmatch(value) is not None


class BackendOptions(TypedDict, total=False):
    """Options of a ``BackendSpec`` (every key optional; which apply depends on the kind)."""

    #: Template or benchmark name, problem overrides, extra template folders, noise seed (all kinds).
    kernel: str | None
    problem: dict[str, Value] | None
    kernel_dirs: list[str]
    seed: int
    #: ``replay`` (the recording) and ``python`` (the benchmark file).
    path: str | None
    #: ``sim``: the modelled GPU, timing noise, compile figures in the background or not.
    gpu_model: str | None
    noise: bool
    compile: str
    compile_wait_s: float
    #: ``cuda``: the device a worker uses, or the devices workers are spread over.
    device: int
    devices: list[int]
    arch: str
    #: ``sim``, ``replay``: a pause per candidate (demonstrations; at most :data:`MAX_PACE_S`).
    delay_s: float
    #: ``sim``: False where a template's reference file must not be imported (the cost model in
    #: the user's process needs latencies only).
    run_reference_file: bool


#: The longest pace (``delay_s``, seconds between a run's new candidates) a demonstration may
#: set: longer is a stalled run, not a slow one.
MAX_PACE_S = 60.0


def is_pace(value: Any) -> bool:
    """Whether ``value`` is a pace a run may take: a number (not text, not a bool) of seconds from
    0 to :data:`MAX_PACE_S`. The one rule for the backend option, a session file and the flags."""
    return type(value) in (int, float) and 0 <= value <= MAX_PACE_S  # NaN fails both comparisons


class BackendInfo(TypedDict, total=False):
    """``Session.backend``: the ``BackendSpec`` the session was measured with."""

    kind: str
    options: BackendOptions


class DeviceInfo(TypedDict, total=False):
    """``Session.device`` / ``Target.device``: what measured (or modelled, or replayed) the trials."""

    name: str
    #: True when the timings come from the performance model, never from hardware.
    simulated: bool
    #: True for a replay of a recording; ``recorded`` for a session imported from a tuner's cache.
    replayed: bool
    recorded: bool
    #: How a Kernel Tuner cache's records were read into metrics (``interop.KT_READING``); absent
    #: from sessions read before the rule was recorded.
    kt_reading: str
    recording: str
    backend: str
    model: str
    arch: str
    index: int
    compute_capability: str
    sm_count: int
    peak_bandwidth_gbs: float
    peak_fp32_gflops: float
    memory_gb: float
    pci_bus_id: str
    driver_version: int
    runtime_version: int
    path: str


class StrategyInfo(TypedDict, total=False):
    """``Session.strategy``: the strategy a run used, its seed and options, and its saved state."""

    name: str
    seed: int
    options: dict[str, Any]
    #: Options of the other strategies this session ran with, by strategy name: switching to
    #: another strategy and back restores what was set for it instead of its defaults.
    earlier_options: dict[str, dict[str, Any]]
    state: dict[str, Any]
    #: Metrics a multi-objective run optimised (its Pareto front), in order.
    objectives: list[str]


Provenance = Literal["simulated", "replayed", "recorded", "measured"]


def provenance(device: DeviceInfo, backend_kind: str | None = None) -> Provenance:
    """Where a session's numbers come from: the model, a replay, an imported recording, or hardware.

    The one reading of the device flags, so every view labels the same session the same way.
    """
    if device.get("simulated"):
        return "simulated"
    if device.get("replayed") or backend_kind == "replay":
        return "replayed"
    if device.get("recorded"):
        return "recorded"
    return "measured"


#: Provenances from the least to the most directly measured: a file pooling several sessions is
#: labelled by the first of them it holds.
PROVENANCE_ORDER: tuple[Provenance, ...] = ("simulated", "replayed", "recorded", "measured")

#: How a file written from a session says where its timings come from (nothing for measurements).
PROVENANCE_NOTES: dict[Provenance, str] = {
    "simulated": "SIMULATED timings: a modelled GPU, not a measurement",
    "replayed": "REPLAYED timings: read back from a recording, not measured by this run",
    "recorded": "RECORDED timings: imported from another tool's recording, not measured by this workbench",
    "measured": "",
}


def provenance_tag(kind: Provenance) -> str:
    """`` [SIMULATED]``, `` [replayed]``, `` [recorded]`` after a device's name in a list of
    devices; nothing for a measured one."""
    return {"simulated": " [SIMULATED]", "replayed": " [replayed]", "recorded": " [recorded]"}.get(kind, "")


def least_measured(kinds: Iterable[Provenance]) -> Provenance:
    """The first of ``kinds`` in :data:`PROVENANCE_ORDER` ("measured" when there are none)."""
    return min(kinds, key=PROVENANCE_ORDER.index, default="measured")


def backend_options(values: Mapping[str, Any]) -> BackendOptions:
    """A copy of ``values`` as backend options: where options are assembled key by key (merged from
    a request, filtered for one worker) the keys' types are the caller's contract; the backend reads
    each key with its own check (``BackendSpec`` is built from user input only through the run
    planning, which checks them)."""
    return cast(BackendOptions, dict(values))


def device_info(values: Mapping[str, Any]) -> DeviceInfo:
    """A copy of ``values`` as a device description (a backend's own facts, or a recording's)."""
    return cast(DeviceInfo, dict(values))
