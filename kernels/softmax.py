"""softmax: row-wise softmax of a rows x cols matrix, one row per group of threads.

Slots: how many threads share a row and how many rows a block holds, the vector width, whether
the row's lanes combine through warp shuffles or a shared-memory tree, and whether the row's
statistics take one online pass (running max and rescaled sum) or two separate passes.
``emulate`` replays each lane's float32 accumulation and the reduction tree, so quality reflects
the config's actual arithmetic.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from workbench.core.domain.space import Config, Slot
from workbench.core.domain.templates import Arg, KernelTemplate, Problem, WorkProfile, ceil_div, read_cu

F32 = np.float32

SLOTS = (
    Slot("threads_per_row", (4, 8, 16, 32, 64, 128, 256, 512, 1024), "launch", "threads that share one row"),
    Slot("rows_per_block", (1, 2, 4, 8, 16), "launch", "rows one block handles side by side"),
    Slot("vector_width", (1, 2, 4), "memory", "floats per load/store: float, float2 or float4"),
    Slot("reduction", ("warp", "block"), "reduction", "combine a row's lanes with warp shuffles or a shared-memory tree"),
    Slot("online", (False, True), "compute", "one pass with a running (max, sum) instead of separate max and sum passes"),
)

RESTRICTIONS = (
    "threads_per_row * rows_per_block >= 32",
    "threads_per_row * rows_per_block <= 1024",
    'reduction == "block" or threads_per_row <= 32',
    "cols % vector_width == 0",
    "threads_per_row * vector_width <= cols",
)


def grid(problem: Problem, config: Config) -> tuple[int, int, int]:
    return (ceil_div(int(problem["rows"]), int(config["rows_per_block"])), 1, 1)


def block(problem: Problem, config: Config) -> tuple[int, int, int]:
    return (int(config["threads_per_row"]) * int(config["rows_per_block"]), 1, 1)


def make_inputs(problem: Problem, rng: np.random.Generator) -> dict[str, Any]:
    shape = (int(problem["rows"]), int(problem["cols"]))
    return {"x": rng.normal(0.0, 3.0, shape).astype(np.float32)}


def reference(inputs: Mapping[str, Any], problem: Problem) -> dict[str, np.ndarray]:
    x = np.asarray(inputs["x"], dtype=np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"y": e / e.sum(axis=1, keepdims=True)}


# --- emulation -----------------------------------------------------------------------------------


def lanes_view(x: np.ndarray, lanes: int, width: int, fill: float) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) -> (rows, iterations, lanes, width) in the order lanes walk the row, plus a
    (iterations, lanes) mask of the vectors that exist (lanes past the row's end hold ``fill``)."""
    rows, cols = x.shape
    nvec = cols // width
    iters = max(1, ceil_div(nvec, lanes))
    padded = np.full((rows, iters * lanes, width), fill, dtype=np.float32)
    padded[:, :nvec, :] = x.reshape(rows, nvec, width)
    mask = (np.arange(iters * lanes) < nvec).reshape(iters, lanes)
    return padded.reshape(rows, iters, lanes, width), mask


def halving(values: np.ndarray, combine: Any) -> np.ndarray:
    """Reduce the last axis the way shuffle butterflies and smem trees do: v[i] op= v[i + half]."""
    while values.shape[-1] > 1:
        half = values.shape[-1] // 2
        values = combine(values[..., :half], values[..., half : 2 * half])
    return values[..., 0]


def merge(m1: np.ndarray, s1: np.ndarray, m2: np.ndarray, s2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The kernel's merge of two (max, sum) pairs in float32; empty pairs are (-inf, 0)."""
    mm = np.maximum(m1, m2)
    with np.errstate(invalid="ignore", over="ignore"):
        a = np.where(m1 == -np.inf, F32(0), (s1 * np.exp((m1 - mm).astype(F32))).astype(F32))
        b = np.where(m2 == -np.inf, F32(0), (s2 * np.exp((m2 - mm).astype(F32))).astype(F32))
    return mm, (a + b).astype(F32)


def emulate(inputs: Mapping[str, Any], problem: Problem, config: Config) -> dict[str, np.ndarray]:
    x = np.asarray(inputs["x"], dtype=np.float32)
    lanes, width = int(config["threads_per_row"]), int(config["vector_width"])
    v, mask = lanes_view(x, lanes, width, -np.inf)
    rows = x.shape[0]
    with np.errstate(invalid="ignore", over="ignore"):
        if config["online"]:
            m = np.full((rows, lanes), -np.inf, dtype=F32)
            s = np.zeros((rows, lanes), dtype=F32)
            for it in range(v.shape[1]):
                chunk, ok = v[:, it], mask[it]
                vmax = chunk.max(axis=-1)
                grow = ok & (vmax > m)
                rescaled = np.where(m == -np.inf, F32(0), (s * np.exp((m - vmax).astype(F32))).astype(F32))
                s = np.where(grow, rescaled, s)
                m = np.where(grow, vmax, m)
                for c in range(width):
                    s = np.where(ok, (s + np.exp((chunk[..., c] - m).astype(F32))).astype(F32), s)
            pairs = np.stack([m, s], axis=-2)  # (rows, 2, lanes)
            reduced = halving(pairs, lambda a, b: np.stack(merge(a[..., 0, :], a[..., 1, :], b[..., 0, :], b[..., 1, :]), axis=-2))
            row_max, row_sum = reduced[:, 0], reduced[:, 1]
        else:
            row_max = x.max(axis=1)
            s = np.zeros((rows, lanes), dtype=F32)
            for it in range(v.shape[1]):
                for c in range(width):
                    e = np.exp((v[:, it, :, c] - row_max[:, None]).astype(F32))
                    s = np.where(mask[it], (s + e).astype(F32), s)
            row_sum = halving(s, lambda a, b: (a + b).astype(F32))
        inv = (F32(1) / row_sum.astype(F32)).astype(F32)
        y = (np.exp((x - row_max[:, None].astype(F32)).astype(F32)) * inv[:, None]).astype(F32)
    return {"y": y}


# --- cost facts ----------------------------------------------------------------------------------


def bytes_moved(problem: Problem) -> float:
    return 8.0 * int(problem["rows"]) * int(problem["cols"])


def flops(problem: Problem) -> float:
    return 5.0 * int(problem["rows"]) * int(problem["cols"])  # max, sub+add, sub+mul (exp counted apart)


def profile(problem: Problem, config: Config) -> WorkProfile:
    rows, cols = int(problem["rows"]), int(problem["cols"])
    lanes, per_block, width = int(config["threads_per_row"]), int(config["rows_per_block"]), int(config["vector_width"])
    online = bool(config["online"])
    elements = float(rows * cols)
    passes = 2 if online else 3
    block_bytes = 4.0 * cols * per_block
    # Re-reads of a row follow the first read closely: from L1 while the block's rows fit, else from L2.
    reuse = (passes - 1) / passes * (1.0 if block_bytes <= 64 * 1024 else 0.6)
    per_thread = max(1, ceil_div(cols // width, lanes))
    reductions = 1 if online else 2
    values = 2 if online else 1  # the online merge carries (max, sum) pairs
    smem = syncs = 0.0
    notes = [f"{passes} reads of each row, {lanes} lanes x {width} floats", f"{per_thread} vectors per lane"]
    if config["reduction"] == "block":
        levels = math.log2(lanes)
        smem = rows * reductions * values * (lanes + 3.0 * (lanes - 1) + lanes)
        syncs = reductions * (levels + 2.0)
        notes.append(f"smem tree: {int(syncs)} __syncthreads per block")
    else:
        notes.append("warp shuffles, no barriers")
    return WorkProfile(
        bytes_read=4.0 * elements * passes,
        bytes_written=4.0 * elements,
        flops=elements * (6.0 if online else 5.0),
        access_bytes=4 * width,
        coalescing=min(1.0, lanes * width * 4 / 32.0),  # a row segment narrower than a 32 B sector wastes it
        work_per_thread=float(width * min(per_thread, 4)),
        transcendentals=2.0 * elements + (rows * lanes * math.log2(max(2, per_thread)) if online else 0.0),
        smem_accesses=smem,
        bank_conflict_ways=1.0,
        syncs_per_block=syncs,
        l2_reuse=reuse,
        # buf_a[TPR * RPB], and buf_b beside it for the online merge
        static_smem_bytes=4 * values * lanes * per_block if config["reduction"] == "block" else 0,
        notes=tuple(notes),
    )


def baseline(cupy: Any, inputs: Mapping[str, Any], problem: Problem) -> None:
    """The textbook CuPy formula (max, exp, sum, divide: several kernels and temporaries)."""
    x = inputs["x"]
    e = cupy.exp(x - x.max(axis=1, keepdims=True))
    cupy.divide(e, e.sum(axis=1, keepdims=True), out=inputs["y"])


TEMPLATE = KernelTemplate(
    name="softmax",
    title="Row softmax",
    description="Row-wise softmax: lanes per row, rows per block, vector width, warp or block reduction, online or two-pass stats.",
    source=read_cu(__file__),
    entry="softmax",
    slots=SLOTS,
    restrictions=RESTRICTIONS,
    args=(
        Arg("x", "in", "float32", shape=lambda p: (int(p["rows"]), int(p["cols"]))),
        Arg("y", "out", "float32", shape=lambda p: (int(p["rows"]), int(p["cols"]))),
    ),
    problem={"rows": 16384, "cols": 1024},
    small_problem={"rows": 37, "cols": 260},
    problem_doc={"rows": "independent rows", "cols": "row length (softmax width)"},
    problem_limits={"rows": (1, 1 << 24), "cols": (1, 1 << 16)},
    default={"threads_per_row": 32, "rows_per_block": 4, "vector_width": 1, "reduction": "warp", "online": False},
    grid=grid,
    block=block,
    make_inputs=make_inputs,
    reference=reference,
    profile=profile,
    emulate=emulate,
    bytes_moved=bytes_moved,
    flops=flops,
    tolerance=(1e-4, 1e-8),
    baseline=baseline,
    baseline_name="cupy max/exp/sum/divide",
)
