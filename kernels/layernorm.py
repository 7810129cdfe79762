"""layernorm: per-row normalisation with a learned scale and shift, three ways to get the statistics.

Slots as in softmax (lanes per row, rows per block, vector width, warp or block reduction) plus
``algorithm``: the exact two-pass (mean, then squared deviations), Welford's single pass merged
with Chan's formula, or the cheap sum / sum-of-squares pass that loses digits when the mean is
large against the spread. The inputs have a non-zero mean so ``emulate`` shows that cost.
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
    Slot("algorithm", ("two_pass", "welford", "sum_squares"), "compute", "how mean and variance are found"),
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
    rows, cols = int(problem["rows"]), int(problem["cols"])
    return {
        "x": rng.normal(4.0, 1.0, (rows, cols)).astype(np.float32),  # mean 4, spread 1
        "gamma": rng.uniform(0.5, 1.5, cols).astype(np.float32),
        "beta": rng.uniform(-0.5, 0.5, cols).astype(np.float32),
    }


def reference(inputs: Mapping[str, Any], problem: Problem) -> dict[str, np.ndarray]:
    x = np.asarray(inputs["x"], dtype=np.float64)
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    gamma = np.asarray(inputs["gamma"], dtype=np.float64)
    beta = np.asarray(inputs["beta"], dtype=np.float64)
    return {"y": (x - mean) / np.sqrt(var + float(problem["eps"])) * gamma + beta}


# --- emulation -----------------------------------------------------------------------------------


def _fma(a: Any, b: Any, c: Any) -> np.ndarray:
    """fmaf: the exact product plus c, rounded once (float64 holds a float32 product exactly)."""
    return (np.asarray(a, np.float64) * np.asarray(b, np.float64) + np.asarray(c, np.float64)).astype(F32)


def _lanes(x: np.ndarray, lanes: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    rows, cols = x.shape
    nvec = cols // width
    iters = max(1, ceil_div(nvec, lanes))
    padded = np.zeros((rows, iters * lanes, width), dtype=F32)
    padded[:, :nvec, :] = x.reshape(rows, nvec, width)
    mask = (np.arange(iters * lanes) < nvec).reshape(iters, lanes)
    return padded.reshape(rows, iters, lanes, width), mask


def _halving(values: np.ndarray, combine: Any) -> np.ndarray:
    while values.shape[-1] > 1:
        half = values.shape[-1] // 2
        values = combine(values[..., :half], values[..., half : 2 * half])
    return values[..., 0]


def _chan(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Merge stacked (n, mean, m2) along axis -2 as the kernel does."""
    na, ma, qa = a[..., 0, :], a[..., 1, :], a[..., 2, :]
    nb, mb, qb = b[..., 0, :], b[..., 1, :], b[..., 2, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        n = (na + nb).astype(F32)
        delta = (mb - ma).astype(F32)
        wb = (nb / n).astype(F32)
        mean = _fma(delta, wb, ma)
        m2 = ((qa + qb).astype(F32) + (((delta * delta).astype(F32) * na).astype(F32) * wb).astype(F32)).astype(F32)
    merged = np.stack([n, mean, m2], axis=-2)
    merged = np.where((nb == 0)[..., None, :], a, merged)
    return np.where((na == 0)[..., None, :], b, merged)


def emulate(inputs: Mapping[str, Any], problem: Problem, config: Config) -> dict[str, np.ndarray]:
    x = np.asarray(inputs["x"], dtype=F32)
    rows, cols = x.shape
    lanes, width = int(config["threads_per_row"]), int(config["vector_width"])
    v, mask = _lanes(x, lanes, width)
    inv_cols = F32(1.0) / F32(cols)
    add = lambda a, b: (a + b).astype(F32)  # noqa: E731
    algorithm = config["algorithm"]
    if algorithm == "welford":
        n = np.zeros((rows, lanes), F32)
        mean_l = np.zeros((rows, lanes), F32)
        m2 = np.zeros((rows, lanes), F32)
        for it in range(v.shape[1]):
            ok = mask[it]
            for c in range(width):
                val = v[:, it, :, c]
                n1 = (n + F32(1)).astype(F32)
                delta = (val - mean_l).astype(F32)
                mean1 = (mean_l + (delta / n1).astype(F32)).astype(F32)
                m21 = _fma(delta, (val - mean1).astype(F32), m2)
                n, mean_l, m2 = (np.where(ok, new, old) for new, old in ((n1, n), (mean1, mean_l), (m21, m2)))
        merged = _halving(np.stack([n, mean_l, m2], axis=-2), _chan)
        mean, var = merged[:, 1], (merged[:, 2] * inv_cols).astype(F32)
    elif algorithm == "sum_squares":
        s = np.zeros((rows, lanes), F32)
        q = np.zeros((rows, lanes), F32)
        for it in range(v.shape[1]):
            for c in range(width):
                val = v[:, it, :, c]  # padding is 0: adds nothing
                s = add(s, val)
                q = _fma(val, val, q)
        mean = (_halving(s, add) * inv_cols).astype(F32)
        var = np.maximum(_fma(-mean, mean, (_halving(q, add) * inv_cols).astype(F32)), F32(0))
    else:
        s = np.zeros((rows, lanes), F32)
        for it in range(v.shape[1]):
            for c in range(width):
                s = add(s, v[:, it, :, c])
        mean = (_halving(s, add) * inv_cols).astype(F32)
        q = np.zeros((rows, lanes), F32)
        for it in range(v.shape[1]):
            for c in range(width):
                d = (v[:, it, :, c] - mean[:, None]).astype(F32)
                q = np.where(mask[it], _fma(d, d, q), q)
        var = (_halving(q, add) * inv_cols).astype(F32)
    rstd = (F32(1) / np.sqrt((var + F32(problem["eps"])).astype(F32))).astype(F32)
    gamma = np.asarray(inputs["gamma"], dtype=F32)
    beta = np.asarray(inputs["beta"], dtype=F32)
    centred = ((x - mean[:, None]).astype(F32) * rstd[:, None]).astype(F32)
    return {"y": _fma(centred, gamma[None, :], beta[None, :])}


# --- cost facts ----------------------------------------------------------------------------------


def bytes_moved(problem: Problem) -> float:
    rows, cols = int(problem["rows"]), int(problem["cols"])
    return 8.0 * rows * cols + 8.0 * cols


def flops(problem: Problem) -> float:
    return 8.0 * int(problem["rows"]) * int(problem["cols"])  # stats (3) + normalise and affine (5)


def profile(problem: Problem, config: Config) -> WorkProfile:
    rows, cols = int(problem["rows"]), int(problem["cols"])
    lanes, per_block, width = int(config["threads_per_row"]), int(config["rows_per_block"]), int(config["vector_width"])
    algorithm = str(config["algorithm"])
    elements = float(rows * cols)
    passes = 3 if algorithm == "two_pass" else 2
    reductions = 2 if algorithm == "two_pass" else 1
    values = {"two_pass": 1, "sum_squares": 2, "welford": 3}[algorithm]
    stat_flops = {"two_pass": 3.0, "sum_squares": 3.0, "welford": 6.0}[algorithm]  # welford divides per element
    blocks = ceil_div(rows, per_block)
    # Re-reads of a row follow the first read closely: from L1 while the block's rows fit, else
    # mostly from L2; gamma and beta are fetched once from DRAM and re-read by every block.
    hit = 1.0 if 4.0 * cols * per_block <= 64 * 1024 else 0.6
    bytes_read = 4.0 * elements * passes + 8.0 * cols * blocks
    reused = 4.0 * elements * (passes - 1) * hit + 8.0 * cols * (blocks - 1)
    per_thread = max(1, ceil_div(cols // width, lanes))
    smem = syncs = 0.0
    notes = [f"{passes} reads of each row, {lanes} lanes x {width} floats", f"{algorithm}: {reductions} row reduction(s)"]
    if config["reduction"] == "block":
        smem = rows * reductions * values * (lanes + 3.0 * (lanes - 1) + lanes)
        syncs = reductions * (math.log2(lanes) + 2.0)
        notes.append(f"smem tree: {int(syncs)} __syncthreads per block")
    else:
        notes.append("warp shuffles, no barriers")
    return WorkProfile(
        bytes_read=bytes_read,
        bytes_written=4.0 * elements,
        flops=elements * (stat_flops + 5.0),
        access_bytes=4 * width,
        coalescing=min(1.0, lanes * width * 4 / 32.0),
        work_per_thread=float(width * min(per_thread, 4)),
        transcendentals=float(rows),  # one rsqrtf per row
        smem_accesses=smem,
        bank_conflict_ways=1.0,  # stat structs of 1-3 words: odd or 64-bit strides, conflict-free
        syncs_per_block=syncs,
        l2_reuse=reused / bytes_read,
        # buf[TPR * RPB] of stat_t: float, float2 or the three-float Welford struct
        static_smem_bytes=4 * values * lanes * per_block if config["reduction"] == "block" else 0,
        notes=tuple(notes),
    )


def baseline(cupy: Any, inputs: Mapping[str, Any], problem: Problem) -> None:
    """The textbook CuPy formula (mean, var, normalise: several kernels and temporaries)."""
    x = inputs["x"]
    mean = x.mean(axis=1, keepdims=True)
    var = x.var(axis=1, keepdims=True)
    cupy.add((x - mean) / cupy.sqrt(var + float(problem["eps"])) * inputs["gamma"], inputs["beta"], out=inputs["y"])


TEMPLATE = KernelTemplate(
    name="layernorm",
    title="Layer normalisation",
    description="Row-wise layer norm with gamma/beta: lanes per row, rows per block, vector width, reduction, two-pass / Welford / sum of squares.",
    source=read_cu(__file__),
    entry="layernorm",
    slots=SLOTS,
    restrictions=RESTRICTIONS,
    args=(
        Arg("x", "in", "float32", shape=lambda p: (int(p["rows"]), int(p["cols"]))),
        Arg("gamma", "in", "float32", shape=lambda p: (int(p["cols"]),)),
        Arg("beta", "in", "float32", shape=lambda p: (int(p["cols"]),)),
        Arg("y", "out", "float32", shape=lambda p: (int(p["rows"]), int(p["cols"]))),
    ),
    problem={"rows": 16384, "cols": 1024, "eps": 1e-5},
    small_problem={"rows": 37, "cols": 260, "eps": 1e-5},
    problem_doc={"rows": "independent rows", "cols": "features per row", "eps": "added to the variance"},
    problem_limits={"rows": (1, 1 << 24), "cols": (1, 1 << 16), "eps": (0.0, 1.0)},
    default={"threads_per_row": 32, "rows_per_block": 4, "vector_width": 1, "reduction": "warp", "algorithm": "two_pass"},
    grid=grid,
    block=block,
    make_inputs=make_inputs,
    reference=reference,
    profile=profile,
    emulate=emulate,
    bytes_moved=bytes_moved,
    flops=flops,
    tolerance=(1e-3, 1e-4),
    baseline=baseline,
    baseline_name="cupy mean/var/normalise",
)
