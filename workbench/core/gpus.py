"""GPU descriptions for the simulator: the datasheet and occupancy-rule numbers of real devices.

Each GPU is one JSON file in ``resources/gpus/`` (sources in ``resources/gpus/SOURCES.md``), so a
teacher can add a device without touching code. ``load_gpu`` validates every field and returns an
immutable :class:`GpuSpec`; derived rates (peak FP32, shared-memory bandwidth) are properties so
the files hold only what a datasheet states.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Any

from workbench.core.errors import WorkbenchError

#: Where the shipped GPU descriptions live (the repository's ``resources/gpus``).
GPU_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "resources", "gpus")

#: Other spellings people use for the shipped models (lower case, separators removed).
_ALIASES: dict[str, str] = {
    "h200sxm": "H200",
    "h100sxm": "H100",
    "h100sxm5": "H100",
    "a100": "A100_SXM",
    "a100sxm4": "A100_SXM",
    "a100sxm440gb": "A100_SXM",
    "a100pcie40gb": "A100_PCIE",
    "a100pcie": "A100_PCIE",
    "4090": "RTX4090",
    "geforcertx4090": "RTX4090",
    "teslat4": "T4",
}


@dataclass(frozen=True)
class GpuSpec:
    """One GPU model: counts, clocks, bandwidths and the CUDA occupancy limits of its architecture.

    Units are in the field names (``_mhz``, ``_gbs`` = GB/s in 1e9 bytes, ``_bytes``, ``_ns``, ``_us``).
    ``dram_efficiency`` is the fraction of the datasheet bandwidth a streaming kernel reaches
    (STREAM-like copy), ``dram_latency_ns`` the loaded round-trip latency used for Little's law,
    ``atomic_rate_gops`` the L2 throughput of atomics to distinct addresses and
    ``same_address_atomic_gops`` the rate at which one address can be updated (they serialise).
    """

    name: str
    full_name: str
    compute_capability: tuple[int, int]
    arch: str
    sm_count: int
    base_clock_mhz: float
    boost_clock_mhz: float
    memory_gb: float
    memory_bandwidth_gbs: float
    l2_bytes: int
    l2_bandwidth_gbs: float
    l1_bytes_per_clock: int
    fp32_tflops: float
    fp32_lanes_per_sm: int
    sfu_per_sm: int
    schedulers_per_sm: int
    warp_size: int
    max_threads_per_block: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    max_warps_per_sm: int
    registers_per_sm: int
    max_registers_per_block: int
    max_registers_per_thread: int
    register_alloc_unit: int
    warp_alloc_granularity: int
    shared_per_sm: int
    shared_per_block_default: int
    shared_per_block_optin: int
    shared_alloc_unit: int
    shared_reserved_per_block: int
    shared_banks: int
    dram_latency_ns: float
    dram_efficiency: float
    launch_overhead_us: float
    atomic_rate_gops: float
    same_address_atomic_gops: float

    @property
    def clock_hz(self) -> float:
        """The clock kernels run at under load (boost; sustained clocks are close to it)."""
        return self.boost_clock_mhz * 1e6

    @property
    def peak_flops(self) -> float:
        """Peak FP32 rate in flop/s (an FMA counts as two)."""
        return self.sm_count * self.fp32_lanes_per_sm * 2 * self.clock_hz

    @property
    def peak_bandwidth(self) -> float:
        """Datasheet DRAM bandwidth in bytes/s."""
        return self.memory_bandwidth_gbs * 1e9

    @property
    def display_name(self) -> str:
        return self.full_name

    @classmethod
    def from_limits(
        cls, name: str, *, max_threads_per_sm: int, registers_per_sm: int, smem_per_sm: int, **overrides: Any
    ) -> "GpuSpec":
        """A spec for a real device from the limits its driver reports (the CUDA backend's occupancy).

        The shipped model with the same shared memory and threads per SM supplies the other
        occupancy rules (allocation granularities, blocks per SM); ``overrides`` replace any field.
        """
        shipped = list(_load_dir(GPU_DIR).values())
        if not shipped:
            raise WorkbenchError(f"no GPU descriptions found in {GPU_DIR}")
        base = min(
            shipped,
            key=lambda g: (abs(g.shared_per_sm - smem_per_sm), abs(g.max_threads_per_sm - max_threads_per_sm)),
        )
        values = base.to_dict()
        values.update(
            name=name,
            full_name=name,
            max_threads_per_sm=int(max_threads_per_sm),
            max_warps_per_sm=int(max_threads_per_sm) // base.warp_size,
            registers_per_sm=int(registers_per_sm),
            shared_per_sm=int(smem_per_sm),
            shared_per_block_optin=max(0, int(smem_per_sm) - base.shared_reserved_per_block),
        )
        values.update(overrides)
        return _from_dict(values, f"device {name!r}")

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["compute_capability"] = list(self.compute_capability)
        return out


_INT_FIELDS = {f.name for f in fields(GpuSpec) if f.type in ("int", int)}
_FLOAT_FIELDS = {f.name for f in fields(GpuSpec) if f.type in ("float", float)}


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _from_dict(data: dict[str, Any], where: str) -> GpuSpec:
    names = {f.name for f in fields(GpuSpec)}
    missing = sorted(names - set(data))
    if missing:
        raise WorkbenchError(f"GPU description {where} lacks field {missing[0]!r}")
    values: dict[str, Any] = {}
    for name in names:
        value = data[name]
        if name in _INT_FIELDS or name in _FLOAT_FIELDS:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise WorkbenchError(f"GPU description {where}: {name} must be a non-negative number, got {value!r}")
            values[name] = int(value) if name in _INT_FIELDS else float(value)
        elif name == "compute_capability":
            if not (isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, int) for v in value)):
                raise WorkbenchError(f"GPU description {where}: compute_capability must be [major, minor]")
            values[name] = (int(value[0]), int(value[1]))
        else:
            if not isinstance(value, str) or not value:
                raise WorkbenchError(f"GPU description {where}: {name} must be a non-empty string")
            values[name] = value
    spec = GpuSpec(**values)
    if spec.sm_count == 0 or spec.boost_clock_mhz == 0 or spec.warp_size == 0:
        raise WorkbenchError(f"GPU description {where}: sm_count, boost_clock_mhz and warp_size must be positive")
    return spec


@lru_cache(maxsize=None)
def _load_dir(directory: str) -> dict[str, GpuSpec]:
    specs: dict[str, GpuSpec] = {}
    if not os.path.isdir(directory):
        return specs
    for file_name in sorted(os.listdir(directory)):
        if not file_name.endswith(".json"):
            continue
        path = os.path.join(directory, file_name)
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError) as exc:
            raise WorkbenchError(f"GPU description {path} cannot be read: {exc}") from exc
        if not isinstance(data, dict):
            raise WorkbenchError(f"GPU description {path} must be a JSON object")
        spec = _from_dict(data, path)
        specs[spec.name] = spec
    return specs


def list_gpus(directory: str = GPU_DIR) -> list[str]:
    """Names of the GPU models available to the simulator, sorted."""
    return sorted(_load_dir(directory))


def load_gpu(name: str, directory: str = GPU_DIR) -> GpuSpec:
    """The GPU model called ``name`` (case and separators ignored; ``A100`` means the SXM4 40GB)."""
    specs = _load_dir(directory)
    by_key = {_key(n): n for n in specs}
    wanted = _key(str(name))
    if wanted.startswith("nvidia"):
        wanted = wanted[len("nvidia"):]
    chosen = by_key.get(wanted) or _ALIASES.get(wanted)
    if chosen is None or chosen not in specs:
        raise WorkbenchError(f"unknown GPU model {name!r}; choose one of: {', '.join(sorted(specs))}")
    return specs[chosen]
