"""Kernel templates: CUDA C source with slots, plus the spec that makes it tunable and checkable.

A template lives in ``kernels/<name>.cu`` (the source) and ``kernels/<name>.py`` (the spec, a module
defining ``TEMPLATE = KernelTemplate(...)``). Slot values reach the source only as validated
literals from their declared domain, rendered as ``#define`` lines in front of the source:

- a numeric slot ``block_size`` with value 256 -> ``#define BLOCK_SIZE 256``
- a bool slot ``fast_math`` -> ``#define FAST_MATH 1`` (or 0)
- an identifier slot ``strategy`` with domain (atomic, shared_tree) -> one constant per value,
  ``#define STRATEGY_ATOMIC 0`` / ``#define STRATEGY_SHARED_TREE 1``, then ``#define STRATEGY 1``,
  so the source tests ``#if STRATEGY == STRATEGY_SHARED_TREE``.
- every problem parameter ``n`` -> ``#define PROBLEM_N <value>``.

Everything a backend needs beyond the source is a plain function of (problem, config), so the
simulator, the CUDA backend and the exporters share one description of the kernel.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from workbench.core.space import Config, SearchSpace, Slot, Value

Dim3 = tuple[int, int, int]
Problem = Mapping[str, Value]


@dataclass(frozen=True)
class Arg:
    """One kernel argument, in launch order.

    ``kind``: ``in`` (read-only array), ``out`` (array the kernel writes and the reference checks),
    ``inout`` (array read and written), ``scratch`` (device workspace, not checked) or ``scalar``.
    ``dtype``: a NumPy dtype name (``float32``, ``int32``, ``uint32``...).
    ``shape``: problem -> array shape (ignored for scalars); ``value``: problem -> scalar value.
    ``reset``: for out/inout/scratch, what the buffer holds before each launch: ``poison`` (NaN or
    0xFFFFFFFF pattern, so unwritten elements are caught), ``zero`` (accumulators written with atomics),
    or ``input`` (restore the input values, for inout).
    """

    name: str
    kind: str
    dtype: str = "float32"
    shape: Callable[[Problem], tuple[int, ...]] | None = None
    value: Callable[[Problem], Value] | None = None
    reset: str = "poison"


@dataclass(frozen=True)
class WorkProfile:
    """What one launch of a config does, in the terms the performance model needs.

    Templates compute this from (problem, config); the simulator turns it into a latency. Every
    field is a plain number so it can be shown ("8 B per access, 100% coalesced").
    """

    bytes_read: float  # global memory bytes read, including re-reads the design causes
    bytes_written: float  # global memory bytes written
    flops: float  # floating-point operations
    access_bytes: int = 4  # bytes per thread per global access (4, 8, 16 for float, float2, float4)
    coalescing: float = 1.0  # fraction of each fetched sector that is used (1.0 = perfectly coalesced)
    work_per_thread: float = 1.0  # independent items per thread (latency hiding / ILP)
    transcendentals: float = 0.0  # special-function ops (expf, tanhf...) in total
    fast_math: bool = False  # transcendentals use the SFU intrinsics
    atomics: float = 0.0  # global atomic operations in total
    atomic_targets: float = 1.0  # distinct addresses the atomics hit (contention = atomics / targets)
    shared_atomics: float = 0.0  # shared-memory atomic operations in total
    shared_atomic_targets: float = 1.0
    smem_accesses: float = 0.0  # shared memory loads+stores in total (per element accesses)
    bank_conflict_ways: float = 1.0  # average serialisation of shared accesses (1 = conflict-free, 32 = worst)
    syncs_per_block: float = 0.0  # __syncthreads() executed per block
    serial_fraction: float = 0.0  # fraction of work done by a single thread/warp/block (e.g. a final pass)
    l2_reuse: float = 0.0  # fraction of bytes_read served by L2/L1 reuse rather than DRAM
    extra_launches: int = 0  # additional kernel launches (multi-pass algorithms)
    notes: tuple[str, ...] = ()  # human-readable remarks the model and GUI can show


@dataclass(frozen=True)
class KernelTemplate:
    """A tunable CUDA kernel: source, slots, problem, launch geometry, reference and cost facts.

    Required functions (all pure, all of ``(problem, config)`` unless noted):

    - ``grid`` / ``block``: launch geometry (3-tuples).
    - ``dynamic_smem``: dynamic shared memory bytes per block (default 0).
    - ``make_inputs(problem, rng) -> dict[name, np.ndarray | scalar]``: fresh random inputs (never
      zeros) for every ``in``/``inout`` arg, NumPy, in the arg's dtype.
    - ``reference(inputs, problem) -> dict[out_name, np.ndarray]``: the float64 ground truth of
      every checked output, computed from the inputs with NumPy.
    - ``profile(problem, config) -> WorkProfile``: work and access pattern for the performance model.
    - ``emulate(inputs, problem, config) -> dict[out_name, np.ndarray]`` (optional): a NumPy
      emulation of the config's arithmetic at the precision it uses (fast math, accumulation order),
      run on small inputs by the simulator to derive ``quality``.
    - ``bytes_moved(problem)`` and ``flops(problem)``: the minimum bytes one launch must move and the
      flops it must do, for throughput and the roofline (config-independent on purpose).
    - ``baseline`` (optional): ``(cupy, device_inputs, problem) -> None`` running the library
      implementation of the same operation (``cupy.sum``, ``cupy.matmul``...); ``baseline_name``.
    """

    name: str
    title: str
    description: str
    source: str
    entry: str
    slots: tuple[Slot, ...]
    args: tuple[Arg, ...]
    grid: Callable[[Problem, Config], Dim3]
    block: Callable[[Problem, Config], Dim3]
    make_inputs: Callable[[Problem, np.random.Generator], dict[str, Any]]
    reference: Callable[[Mapping[str, Any], Problem], dict[str, np.ndarray]]
    profile: Callable[[Problem, Config], WorkProfile]
    bytes_moved: Callable[[Problem], float]
    flops: Callable[[Problem], float]
    restrictions: tuple[str, ...] = ()
    problem: Mapping[str, Value] = field(default_factory=dict)
    small_problem: Mapping[str, Value] = field(default_factory=dict)  # for emulation / quick checks
    default: Mapping[str, Value] = field(default_factory=dict)
    dynamic_smem: Callable[[Problem, Config], int] = lambda problem, config: 0
    emulate: Callable[[Mapping[str, Any], Problem, Config], dict[str, np.ndarray]] | None = None
    tolerance: tuple[float, float] = (1e-4, 1e-5)  # (rtol, atol) against the float64 reference
    compile_options: tuple[str, ...] = ()
    baseline: Callable[[Any, Mapping[str, Any], Problem], None] | None = None
    baseline_name: str = ""
    path: str = ""  # where the spec was loaded from
    # Inputs that live in ``__constant__`` memory: keys of ``make_inputs`` (NOT listed in ``args``,
    # never passed as kernel arguments) whose arrays the backend copies to the module's
    # same-named ``__constant__`` symbol before launching (conv2d's filter is ``d_filter``).
    constants: tuple[str, ...] = ()

    # --- derived behaviour (implemented with the template library) ---------------------------
    def space(self, problem: Problem | None = None) -> SearchSpace:
        """The search space of this template for a problem (restrictions may read problem params)."""
        raise NotImplementedError

    def resolve_problem(self, overrides: Mapping[str, Any] | None = None) -> dict[str, Value]:
        """Defaults with user overrides applied and type-checked (unknown names are an error)."""
        raise NotImplementedError

    def render(self, config: Config, problem: Problem | None = None) -> str:
        """The complete CUDA source for a config: ``#define`` block + template source."""
        raise NotImplementedError

    def source_hash(self) -> str:
        """Hash of the template's source and spec file, so cached results die with edits."""
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]


def load_templates(*dirs: str) -> dict[str, KernelTemplate]:
    """Load every template spec found in the given folders (default: the shipped ``kernels/``)."""
    raise NotImplementedError
