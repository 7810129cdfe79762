"""reduce_sum: the sum of n floats in one launch, four ways to combine the per-thread sums.

The slots trade memory parallelism (vector width, items per thread, unrolled independent
accumulators) against the cost of combining: per-thread float atomics on one address, a
shared-memory tree, warp shuffles, or a deterministic two-pass in one launch (last block finishes).
Summation order changes the float32 result, so ``emulate`` replays the config's exact order.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from workbench.core.domain.space import Config, Slot
from workbench.core.domain.templates import Arg, KernelTemplate, Problem, WorkProfile, ceil_div, read_cu

STRATEGIES = ("atomic", "shared_tree", "warp_shuffle", "two_pass")
MIN_CHUNK = 64  # smallest block_size * items_per_thread * vector_width: sizes the partials buffer

SLOTS = (
    Slot("block_size", (64, 128, 256, 512, 1024), "launch", "threads per block"),
    Slot("items_per_thread", (1, 2, 4, 8, 16, 32), "launch", "vectors each thread accumulates"),
    Slot("vector_width", (1, 2, 4), "memory", "floats per load: float, float2 or float4"),
    Slot("unroll", (1, 2, 4, 8), "compute", "loads issued back to back into this many independent accumulators"),
    Slot("strategy", STRATEGIES, "reduction", "how per-thread sums combine: atomics, smem tree, shuffles, two-pass"),
)

RESTRICTIONS = ("unroll <= items_per_thread",)


def _blocks(problem: Problem, config: Config) -> int:
    vectors = int(problem["n"]) // int(config["vector_width"])
    return max(1, ceil_div(vectors, int(config["block_size"]) * int(config["items_per_thread"])))


def _static_smem(config: Config) -> int:
    """Bytes of the shared arrays the source declares for the config's strategy: the tree's
    ``buf[BLOCK_SIZE]``, a float per warp, and the two-pass ticket's ``bool last_block``."""
    strategy, warps = config["strategy"], int(config["block_size"]) // 32
    if strategy == "shared_tree":
        return 4 * int(config["block_size"])
    if strategy == "warp_shuffle":
        return 4 * warps
    if strategy == "two_pass":
        return 4 * warps + 1
    return 0


def grid(problem: Problem, config: Config) -> tuple[int, int, int]:
    return (_blocks(problem, config), 1, 1)


def block(problem: Problem, config: Config) -> tuple[int, int, int]:
    return (int(config["block_size"]), 1, 1)


def make_inputs(problem: Problem, rng: np.random.Generator) -> dict[str, Any]:
    return {"x": rng.uniform(0.0, 1.0, int(problem["n"])).astype(np.float32)}


def reference(inputs: Mapping[str, Any], problem: Problem) -> dict[str, np.ndarray]:
    return {"out": np.array([np.sum(np.asarray(inputs["x"], dtype=np.float64))])}


# --- emulation: the kernel's float32 summation order -----------------------------------------------


def _halving_tree(values: np.ndarray) -> np.ndarray:
    """Sum the last axis as ``v[i] += v[i + half]`` levels do (shuffle-down and the smem tree alike)."""
    while values.shape[-1] > 1:
        half = values.shape[-1] // 2
        values = (values[..., :half] + values[..., half : 2 * half]).astype(np.float32)
    return values[..., 0]


def _block_shuffle(per_thread: np.ndarray) -> np.ndarray:
    """(..., B) thread sums -> (...) block sums in warp-shuffle order."""
    lanes = per_thread.reshape(*per_thread.shape[:-1], -1, 32)
    warp_sums = _halving_tree(lanes)  # (..., warps)
    padded = np.zeros((*warp_sums.shape[:-1], 32), dtype=np.float32)
    padded[..., : warp_sums.shape[-1]] = warp_sums
    return _halving_tree(padded)


def _sequential(values: np.ndarray) -> np.float32:
    """Float32 left-to-right sum (the order atomics arrive in, taken as block order)."""
    return np.cumsum(values, dtype=np.float32)[-1] if values.size else np.float32(0.0)


def emulate(inputs: Mapping[str, Any], problem: Problem, config: Config) -> dict[str, np.ndarray]:
    x = np.asarray(inputs["x"], dtype=np.float32)
    n = int(problem["n"])
    bs, items, width, unroll = (int(config[k]) for k in ("block_size", "items_per_thread", "vector_width", "unroll"))
    nvec = n // width
    vec = x[: nvec * width].reshape(nvec, width)
    if width == 4:
        vals = ((vec[:, 0] + vec[:, 1]).astype(np.float32) + (vec[:, 2] + vec[:, 3]).astype(np.float32)).astype(np.float32)
    elif width == 2:
        vals = (vec[:, 0] + vec[:, 1]).astype(np.float32)
    else:
        vals = vec[:, 0]
    blocks = _blocks(problem, config)
    padded = np.zeros(blocks * bs * items, dtype=np.float32)
    padded[:nvec] = vals
    laid = padded.reshape(blocks, items, bs)  # [block, k, thread]
    acc = np.zeros((blocks, unroll, bs), dtype=np.float32)
    for k0 in range(0, items, unroll):
        acc = (acc + laid[:, k0 : k0 + unroll, :]).astype(np.float32)
    tail = x[nvec * width :]
    acc[0, 0, : tail.size] = (acc[0, 0, : tail.size] + tail).astype(np.float32)
    per_thread = acc[:, 0, :]
    for u in range(1, unroll):
        per_thread = (per_thread + acc[:, u, :]).astype(np.float32)
    strategy = config["strategy"]
    if strategy == "atomic":
        total = _sequential(per_thread.ravel())
    elif strategy == "shared_tree":
        total = _sequential(_halving_tree(per_thread))
    elif strategy == "warp_shuffle":
        total = _sequential(_block_shuffle(per_thread))
    else:  # two_pass: the last block strides over the partials, then shuffles
        partials = _block_shuffle(per_thread)
        strided = np.zeros(ceil_div(blocks, bs) * bs, dtype=np.float32)
        strided[:blocks] = partials
        per_thread_last = np.zeros(bs, dtype=np.float32)
        for row in strided.reshape(-1, bs):
            per_thread_last = (per_thread_last + row).astype(np.float32)
        total = _block_shuffle(per_thread_last)
    return {"out": np.array([total], dtype=np.float32)}


# --- cost facts --------------------------------------------------------------------------------------


def bytes_moved(problem: Problem) -> float:
    return 4.0 * int(problem["n"]) + 4.0


def flops(problem: Problem) -> float:
    return float(int(problem["n"]))


def profile(problem: Problem, config: Config) -> WorkProfile:
    n = int(problem["n"])
    bs, width, unroll = int(config["block_size"]), int(config["vector_width"]), int(config["unroll"])
    blocks = _blocks(problem, config)
    threads = blocks * bs
    warps = bs // 32
    strategy = config["strategy"]
    read, written = 4.0 * n, 4.0
    atomics, smem, syncs, serial = 0.0, 0.0, 0.0, 0.0
    notes = [f"{4 * width} B per access, {unroll} independent accumulators per thread", f"{blocks} blocks"]
    if strategy == "atomic":
        atomics = float(threads)
        notes.append(f"{threads} float atomics on one address")
    elif strategy == "shared_tree":
        atomics = float(blocks)
        smem = blocks * (bs + 3.0 * (bs - 1) + 1)  # store, (2 loads + 1 store) per tree add, final load
        syncs = 1.0 + math.log2(bs)
        notes.append(f"smem tree: {int(syncs)} __syncthreads per block")
    elif strategy == "warp_shuffle":
        atomics = float(blocks)
        smem = blocks * 2.0 * warps
        syncs = 1.0
        notes.append("warp shuffles, one __syncthreads per block")
    else:
        atomics = float(blocks)  # the ticket
        smem = blocks * 2.0 * warps + 2.0 * warps + blocks
        syncs = 2.0 + 1.0 / blocks
        read += 4.0 * blocks
        written += 4.0 * blocks
        serial = blocks / (blocks + n / width)
        notes.append(f"last block adds {blocks} partials (deterministic)")
    return WorkProfile(
        bytes_read=read,
        bytes_written=written,
        flops=float(n + threads),
        access_bytes=4 * width,
        coalescing=1.0,
        work_per_thread=float(unroll * width),
        atomics=atomics,
        atomic_targets=1.0,
        smem_accesses=smem,
        bank_conflict_ways=1.0,  # sequential addressing / one word per warp: conflict-free
        syncs_per_block=syncs,
        serial_fraction=serial,
        static_smem_bytes=_static_smem(config),
        notes=tuple(notes),
    )


def workspace_bytes(problem: Problem, config: Config) -> int:
    """Only the two-pass strategy needs scratch: one partial sum per block and the ticket."""
    return 4 * _blocks(problem, config) + 4 if config["strategy"] == "two_pass" else 0


def baseline(cupy: Any, inputs: Mapping[str, Any], problem: Problem) -> None:
    """cupy.sum (CUB's device reduction underneath)."""
    cupy.sum(inputs["x"], out=inputs["out"].reshape(()))


TEMPLATE = KernelTemplate(
    name="reduce_sum",
    title="Sum reduction",
    description="out = sum(x) in one launch: atomics, shared-memory tree, warp shuffles or a last-block two-pass.",
    source=read_cu(__file__),
    entry="reduce_sum",
    slots=SLOTS,
    restrictions=RESTRICTIONS,
    args=(
        Arg("x", "in", "float32", shape=lambda p: (int(p["n"]),)),
        Arg("out", "out", "float32", shape=lambda p: (1,), reset="zero"),
        Arg("partials", "scratch", "float32", shape=lambda p: (ceil_div(int(p["n"]), MIN_CHUNK),)),
        Arg("ticket", "scratch", "uint32", shape=lambda p: (1,), reset="zero"),
    ),
    problem={"n": 1 << 24},
    small_problem={"n": 100003},  # prime: every vector width leaves a tail
    problem_doc={"n": "number of elements"},
    problem_limits={"n": (1, 1 << 30)},
    default={"block_size": 256, "items_per_thread": 4, "vector_width": 1, "unroll": 1, "strategy": "shared_tree"},
    grid=grid,
    block=block,
    make_inputs=make_inputs,
    reference=reference,
    profile=profile,
    emulate=emulate,
    bytes_moved=bytes_moved,
    flops=flops,
    workspace_bytes=workspace_bytes,
    tolerance=(1e-3, 1e-3),  # float32 partial sums of up to 2^30 terms, in whatever order atomics land
    baseline=baseline,
    baseline_name="cupy.sum",
)
