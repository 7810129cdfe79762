"""GPU descriptions for the simulator: the datasheet and occupancy-rule numbers of real devices.

Each GPU is one JSON file in ``resources/gpus/`` (sources in ``resources/gpus/SOURCES.md``), so a
teacher can add a device without touching code. ``load_gpu`` validates every field and returns an
immutable :class:`GpuSpec`; derived rates (peak FP32, shared-memory bandwidth) are properties so
the files hold only what a datasheet states.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import MISSING, dataclass, fields
from functools import lru_cache
from typing import Any

from workbench.core.errors import WorkbenchError
from workbench.core.domain.shipped import shipped_path

#: Where the shipped GPU descriptions live (``resources/gpus`` of the checkout or the installed wheel).
GPU_DIR = str(shipped_path("resources") / "gpus")

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

    Units are in the field names (``_mhz``, ``_gbs`` = GB/s in 1e9 bytes, ``_bytes``, ``_ns``, ``_us``),
    but for ``memory_gb``: the card's memory as its maker states it, in GiB (2**30 bytes: an "11 GB"
    card holds 11 GiB, about 11.8e9 bytes, as the driver reports it).
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
    #: Load/store units per SM: how many threads' addresses a warp's memory instruction gets through per
    #: clock (a description without it gets 32, one warp per clock).
    lsu_per_sm: int = 32

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


#: Device attributes the launch check and the occupancy need (``cudaDevAttr*`` names in CuPy's
#: runtime): what a real device's description takes from its driver (:func:`device_limits`).
DEVICE_ATTRIBUTES = (
    "cudaDevAttrMaxThreadsPerBlock",
    "cudaDevAttrMaxThreadsPerMultiProcessor",
    "cudaDevAttrMaxRegistersPerBlock",
    "cudaDevAttrMaxRegistersPerMultiprocessor",
    "cudaDevAttrMaxSharedMemoryPerBlock",
    "cudaDevAttrMaxSharedMemoryPerBlockOptin",
    "cudaDevAttrMaxSharedMemoryPerMultiprocessor",
)


def device_attributes(runtime: Any, index: int) -> dict[str, int]:
    """``DEVICE_ATTRIBUTES`` of device ``index``, read through CuPy's runtime module ``runtime``
    (passed in: CuPy is not imported here)."""
    return {name: int(runtime.deviceGetAttribute(getattr(runtime, name), index)) for name in DEVICE_ATTRIBUTES}


def device_limits(name: str, attributes: dict[str, int]) -> GpuSpec:
    """A GPU description carrying the device's own launch limits (:func:`device_attributes`), for
    the launch check, the register cap and the occupancy. Shared by the CUDA backend and the
    exported CuPy script, so both judge a launch by the same limits."""
    return GpuSpec.from_limits(
        name=name,
        max_threads_per_sm=attributes["cudaDevAttrMaxThreadsPerMultiProcessor"],
        registers_per_sm=attributes["cudaDevAttrMaxRegistersPerMultiprocessor"],
        smem_per_sm=attributes["cudaDevAttrMaxSharedMemoryPerMultiprocessor"],
        max_threads_per_block=attributes["cudaDevAttrMaxThreadsPerBlock"],
        max_registers_per_block=attributes["cudaDevAttrMaxRegistersPerBlock"],
        shared_per_block_default=attributes["cudaDevAttrMaxSharedMemoryPerBlock"],
        shared_per_block_optin=attributes["cudaDevAttrMaxSharedMemoryPerBlockOptin"],
    )


_INT_FIELDS = {f.name for f in fields(GpuSpec) if f.type in ("int", int)}
#: Fields a description may leave out (added after descriptions were written), with their defaults.
_OPTIONAL_FIELDS: dict[str, Any] = {f.name: f.default for f in fields(GpuSpec) if f.default is not MISSING}
_FLOAT_FIELDS = {f.name for f in fields(GpuSpec) if f.type in ("float", float)}


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


#: Compute capabilities whose SMs have 16 load/store units (4 per partition: Turing, GA10x, Ada),
#: from the architecture whitepapers' SM diagrams; Volta, GA100 and Hopper have 32.
_HALF_RATE_LSU = {(7, 5), (8, 6), (8, 9)}


def _from_dict(data: dict[str, Any], where: str) -> GpuSpec:
    names = {f.name for f in fields(GpuSpec)}
    if "lsu_per_sm" not in data and isinstance(data.get("compute_capability"), list):
        # a description written before the field: its architecture says how many units its SMs have
        data = {**data, "lsu_per_sm": 16 if tuple(data["compute_capability"]) in _HALF_RATE_LSU else 32}
    data = {**_OPTIONAL_FIELDS, **data}
    missing = sorted(names - set(data))
    if missing:
        raise WorkbenchError(f"GPU description {where} lacks field {missing[0]!r}")
    values: dict[str, Any] = {}
    for name in names:
        value = data[name]
        if name in _INT_FIELDS or name in _FLOAT_FIELDS:
            if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
                    or value < 0):
                raise WorkbenchError(f"GPU description {where}: {name} must be a non-negative number, got {value!r}")
            if name in _INT_FIELDS and not float(value).is_integer():
                raise WorkbenchError(f"GPU description {where}: {name} must be a whole number, got {value!r}")
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
    if spec.sm_count == 0 or spec.boost_clock_mhz == 0 or spec.warp_size == 0 or spec.lsu_per_sm == 0:
        raise WorkbenchError(
            f"GPU description {where}: sm_count, boost_clock_mhz, warp_size and lsu_per_sm must be positive")
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


def _normalised(name: str) -> str:
    """A device name reduced to what identifies the chip and board: vendor and brand words and a
    trailing memory size or memory type dropped (``NVIDIA GeForce RTX 2080 Ti`` -> ``rtx2080ti``,
    ``A100-SXM4-80GB`` -> ``a100sxm4``, ``NVIDIA H100 80GB HBM3`` -> ``h100``)."""
    words = re.sub(r"(?<![a-z0-9])(\d+\s*gb|hbm\d*e?|gddr\d*x?)(?![a-z0-9])", " ", name.lower())
    key = _key(words)
    for word in ("nvidia", "geforce", "tesla", "quadro"):
        key = key.replace(word, "")
    return key


def _lookup(name: str, specs: dict[str, GpuSpec]) -> GpuSpec | None:
    """The shipped description whose name, full name or alias is this device name, if any."""
    by_key: dict[str, str] = {}
    for spec in specs.values():
        for spelling in (spec.name, spec.full_name):
            by_key.setdefault(_key(spelling), spec.name)
            by_key.setdefault(_normalised(spelling), spec.name)
    wanted = _key(str(name))
    for candidate in (wanted, wanted[len("nvidia"):] if wanted.startswith("nvidia") else wanted, _normalised(str(name))):
        chosen = by_key.get(candidate) or _ALIASES.get(candidate)
        if chosen in specs:
            return specs[chosen]
    return None


def load_gpu(name: str, directory: str = GPU_DIR) -> GpuSpec:
    """The GPU model called ``name``: its short name (``RTX3090``), its device name as the driver
    reports it (``NVIDIA GeForce RTX 3090``) or an alias; case and separators are ignored and
    ``A100`` means the SXM4 40GB. Unknown names are an error (see :func:`match_gpu` for a fallback)."""
    specs = _load_dir(directory)
    spec = _lookup(str(name), specs)
    if spec is None:
        raise WorkbenchError(f"unknown GPU model {name!r}; choose one of: {', '.join(sorted(specs))}")
    return spec


# Architecture of a device from its marketing name, for devices without a shipped description.
# Order matters: the first pattern that matches the normalised name wins.
_ARCH_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"^(gh200|h100|h200|h800|h20)", "sm_90"),
    (r"^rtx\d+ada|^rtx40\d\d|^l40|^l4$|^l4\D|^rtx20\d\dada", "sm_89"),
    (r"^(a100|a800|a30)($|\D)", "sm_80"),
    (r"^rtxa\d+|^rtx30\d\d|^a(10|16|40|2)($|\D)|^a10g", "sm_86"),
    (r"^rtx20\d\d|^titanrtx|^rtx[4568]000$|^t4($|\D)|^gtx16\d\d", "sm_75"),
    (r"^v100|^titanv", "sm_70"),
)


def arch_of_name(name: str) -> str | None:
    """The ``sm_XX`` architecture a device name implies, or None when the name does not say."""
    key = _normalised(name)
    for pattern, arch in _ARCH_PATTERNS:
        if re.search(pattern, key):
            return arch
    return None


@dataclass(frozen=True)
class GpuMatch:
    """The description a device is modelled with: ``exact`` when one ships for it; otherwise
    ``note`` says which description stands in and why (shown in the session and the status bar)."""

    spec: GpuSpec
    exact: bool
    note: str = ""


#: The GPU model a simulation imitates, and a device of unknown name is modelled as, when nothing
#: names one (the command line, the window and the backends take it from here).
DEFAULT_GPU = "H200"


def _model_number(name: str) -> tuple[str, int]:
    """(family letters, model number) of a name: ``rtxa4000`` -> (``rtxa``, 4000), ``rtx3080`` -> (``rtx``, 3080)."""
    found = re.match(r"([a-z]*?)(\d+)", _normalised(name))
    return (found.group(1), int(found.group(2))) if found else (_normalised(name), 0)


def match_gpu(device_name: str, compute_capability: tuple[int, int] | None = None, directory: str = GPU_DIR,
              default: str = DEFAULT_GPU) -> GpuMatch:
    """The description to model a real device with: its own, else the nearest one of the same
    architecture (same family of names first, then the closest model number: an RTX 3070 is
    modelled as an RTX 3080, not as an A100), else ``default`` with a note saying so.

    ``compute_capability`` (from the driver), when given, decides the architecture; otherwise the
    name does. Occupancy rules, clocks per SM and the FP32 datapath are per architecture, which is
    why a same-architecture stand-in ranks configs like the device would, even if it is faster or
    slower overall.
    """
    specs = _load_dir(directory)
    spec = _lookup(str(device_name), specs)
    if spec is not None:
        return GpuMatch(spec, True)
    arch = f"sm_{compute_capability[0]}{compute_capability[1]}" if compute_capability else arch_of_name(str(device_name))
    same = [s for s in specs.values() if s.arch == arch]
    if same:
        family, number = _model_number(str(device_name))

        def distance(s: GpuSpec) -> tuple[int, int, str]:
            f, n = _model_number(s.full_name)
            return (f != family, abs(n - number), s.name)

        chosen = min(same, key=distance)
        return GpuMatch(chosen, False, f"no description of {device_name!r} ships; modelled as the nearest "
                                        f"{arch} GPU, {chosen.full_name} ({chosen.name})")
    if default not in specs:
        raise WorkbenchError(f"no GPU description for {device_name!r} and no default model {default!r}")
    why = f"its architecture ({arch}) has no description" if arch else "its architecture is not known from the name"
    return GpuMatch(specs[default], False, f"no description of {device_name!r} ships and {why}; "
                                           f"modelled as the default {specs[default].full_name} ({default})")
