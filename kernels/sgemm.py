"""sgemm: C = A * B in float32 on the FP32 pipes (no tensor cores), register-blocked.

The tuning question is the classic one of a hand-written GEMM: how big a tile of C a block owns
(global re-reads of A and B fall as the tile grows), how big a tile each thread owns in registers
(shared-memory loads per FMA fall as it grows, registers rise), how deep a shared stage is, whether
loads are float4, whether the next stage is fetched while the current one is multiplied, and how
far the inner k loop is unrolled.
"""

from __future__ import annotations

import os
from typing import Any, Mapping

import numpy as np

from workbench.core.model.access import bank_conflict_ways, sector_efficiency, warp_lanes
from workbench.core.domain.space import Config, Slot
from workbench.core.domain.templates import Arg, KernelTemplate, Problem, WorkProfile, read_cu

SLOTS = (
    Slot("block_m", (32, 64, 128, 256), "memory", "rows of C per block (A is re-read n / block_n times)"),
    Slot("block_n", (32, 64, 128, 256), "memory", "columns of C per block (B is re-read m / block_m times)"),
    Slot("block_k", (8, 16, 32), "memory", "depth of one shared-memory stage of A and B"),
    Slot("thread_m", (2, 4, 8, 16), "compute", "rows of C each thread accumulates in registers"),
    Slot("thread_n", (2, 4, 8, 16), "compute", "columns of C each thread accumulates in registers"),
    Slot("vector_loads", (False, True), "memory", "float4 global loads, shared reads and C stores"),
    Slot("double_buffer", (False, True), "memory", "two shared stages: fetch the next while multiplying this one"),
    Slot("unroll_k", (1, 2, 4, 8), "compute", "unroll factor of the inner loop over a stage's k"),
)

THREADS = "(block_m // thread_m) * (block_n // thread_n)"
RESTRICTIONS = (
    "block_m % thread_m == 0 and block_n % thread_n == 0",
    f"64 <= {THREADS} <= 1024",
    # at most 128 accumulators per thread: beyond that the register file spills
    "thread_m * thread_n <= 128",
    # every thread moves the same number of (vector) elements of each tile per stage
    f"block_m * block_k % ({THREADS} * (4 if vector_loads else 1)) == 0",
    f"block_k * block_n % ({THREADS} * (4 if vector_loads else 1)) == 0",
    # float4 shared reads of a thread's register tile and float4 stores of C
    "not vector_loads or (thread_m % 4 == 0 and thread_n % 4 == 0)",
    "unroll_k <= block_k",
    # static shared memory limit (48 KiB) for the A and B stages
    "(block_m + block_n) * block_k * 4 * (2 if double_buffer else 1) <= 49152",
    # no bounds checks in the kernel: the problem is a whole number of block tiles
    "m % block_m == 0 and n % block_n == 0 and k % block_k == 0",
)

WORD = 4


def _threads(config: Config) -> int:
    return (int(config["block_m"]) // int(config["thread_m"])) * (int(config["block_n"]) // int(config["thread_n"]))


def grid(problem: Problem, config: Config) -> tuple[int, int, int]:
    return (int(problem["n"]) // int(config["block_n"]), int(problem["m"]) // int(config["block_m"]), 1)


def block(problem: Problem, config: Config) -> tuple[int, int, int]:
    return (_threads(config), 1, 1)


def make_inputs(problem: Problem, rng: np.random.Generator) -> dict[str, Any]:
    m, n, k = int(problem["m"]), int(problem["n"]), int(problem["k"])
    return {
        "a": rng.uniform(-1.0, 1.0, (m, k)).astype(np.float32),
        "b": rng.uniform(-1.0, 1.0, (k, n)).astype(np.float32),
    }


def reference(inputs: Mapping[str, Any], problem: Problem) -> dict[str, np.ndarray]:
    a = np.asarray(inputs["a"], dtype=np.float64)
    b = np.asarray(inputs["b"], dtype=np.float64)
    return {"c": a @ b}


def bytes_moved(problem: Problem) -> float:
    m, n, k = int(problem["m"]), int(problem["n"]), int(problem["k"])
    return float(WORD * (m * k + k * n + m * n))


def flops(problem: Problem) -> float:
    return 2.0 * int(problem["m"]) * int(problem["n"]) * int(problem["k"])


def _tile_loads(config: Config, threads_idx: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) in a tile ``width`` floats wide of the first vector each thread copies in a stage."""
    vw = 4 if config["vector_loads"] else 1
    per_row = width // vw
    return threads_idx // per_row, (threads_idx % per_row) * vw


def _stage_smem(config: Config) -> tuple[float, float]:
    """Shared-memory element accesses of one block per k-stage, and their average conflict ways."""
    bm, bn, bk = int(config["block_m"]), int(config["block_n"]), int(config["block_k"])
    tm, tn = int(config["thread_m"]), int(config["thread_n"])
    vw = 4 if config["vector_loads"] else 1
    threads = _threads(config)
    tid, _, _ = warp_lanes(threads)
    trow, tcol = tid // (bn // tn), tid % (bn // tn)
    a_r, a_c = _tile_loads(config, tid, bk)
    b_r, b_c = _tile_loads(config, tid, bn)
    loads_a = bm * bk // vw // threads
    loads_b = bk * bn // vw // threads
    # (instructions per thread per stage, conflict ways of one such warp instruction)
    kinds = (
        (bk * tm / vw, bank_conflict_ways(trow * tm, vw)),  # As[k][trow*tm + i]
        (bk * tn / vw, bank_conflict_ways(tcol * tn, vw)),  # Bs[k][tcol*tn + j]
        (loads_a * vw, bank_conflict_ways(a_c * bm + a_r)),  # As[c + q][r], scalar (transposing) stores
        (loads_b, bank_conflict_ways(b_r * bn + b_c, vw)),  # Bs[r][c]
    )
    instructions = sum(count for count, _ in kinds)
    ways = sum(count * w for count, w in kinds) / instructions
    elements = threads * (bk * (tm + tn) + (loads_a + loads_b) * vw)
    return float(elements), float(ways)


def _coalescing(problem: Problem, config: Config) -> float:
    """Sector use of the global accesses, weighted by the bytes each kind moves."""
    m, n, k = int(problem["m"]), int(problem["n"]), int(problem["k"])
    bm, bk, bn = int(config["block_m"]), int(config["block_k"]), int(config["block_n"])
    tm, tn = int(config["thread_m"]), int(config["thread_n"])
    vw = 4 if config["vector_loads"] else 1
    tid, _, _ = warp_lanes(_threads(config))
    a_r, a_c = _tile_loads(config, tid, bk)
    b_r, b_c = _tile_loads(config, tid, bn)
    a_eff = sector_efficiency((a_r * k + a_c) * WORD, WORD * vw)
    b_eff = sector_efficiency((b_r * n + b_c) * WORD, WORD * vw)
    trow, tcol = tid // (bn // tn), tid % (bn // tn)
    c_eff = sector_efficiency((trow * tm * n + tcol * tn) * WORD, WORD * vw)
    c_bytes = WORD * m * n
    a_bytes = WORD * m * k * (n // bn)  # each block streams its panel of A and of B once
    b_bytes = WORD * k * n * (m // bm)
    return (a_bytes + b_bytes + c_bytes) / (a_bytes / a_eff + b_bytes / b_eff + c_bytes / c_eff)


def profile(problem: Problem, config: Config) -> WorkProfile:
    m, n, k = int(problem["m"]), int(problem["n"]), int(problem["k"])
    bm, bn, bk = int(config["block_m"]), int(config["block_n"]), int(config["block_k"])
    tm, tn = int(config["thread_m"]), int(config["thread_n"])
    vw = 4 if config["vector_loads"] else 1
    blocks = (m // bm) * (n // bn)
    stages = k // bk
    # Every block streams its row panel of A and its column panel of B once.
    read = WORD * (m * k * (n // bn) + k * n * (m // bm))
    unique = WORD * (m * k + k * n)
    smem_elements, ways = _stage_smem(config)
    syncs = stages * (1 if config["double_buffer"] else 2) + (1 if config["double_buffer"] else 0)
    return WorkProfile(
        bytes_read=float(read),
        bytes_written=float(WORD * m * n),
        flops=2.0 * m * n * k,
        access_bytes=WORD * vw,
        coalescing=_coalescing(problem, config),
        work_per_thread=float(tm * tn),
        smem_accesses=smem_elements * stages * blocks,
        bank_conflict_ways=ways,
        syncs_per_block=float(syncs),
        l2_reuse=1.0 - unique / read,
        # As[STAGES][BLOCK_K][BLOCK_M] and Bs[STAGES][BLOCK_K][BLOCK_N]
        static_smem_bytes=WORD * (2 if config["double_buffer"] else 1) * bk * (bm + bn),
        notes=(
            f"{bm}x{bn} block tile: A read {n // bn}x, B read {m // bm}x",
            f"{tm}x{tn} register tile: {tm * tn} FMAs per {tm + tn} shared loads",
            f"{'double' if config['double_buffer'] else 'single'}-buffered {bk}-deep stages, {syncs} barriers per block",
        ),
    )


def baseline(cupy: Any, inputs: Mapping[str, Any], problem: Problem) -> None:
    """cuBLAS SGEMM through ``cupy.matmul``, in full FP32.

    CuPy switches float32 matmuls to TF32 tensor cores when ``CUPY_TF32=1`` is set (read lazily,
    on the first matmul); that would hold this FP32 kernel against a lower-precision library path,
    so the baseline pins CuPy's float32 compute type back to the default (CUBLAS_COMPUTE_32F).
    If this CuPy lacks that switch the call fails and the backend records the baseline as failed,
    rather than timing TF32 silently.
    """
    if os.environ.get("CUPY_TF32", "0") not in ("", "0"):
        from cupy._core import _routines_linalg as linalg  # noqa: PLC0415 - CuPy internals, only when TF32 is asked for

        linalg.set_compute_type(np.float32, linalg.COMPUTE_TYPE_DEFAULT)
    cupy.matmul(inputs["a"], inputs["b"], out=inputs["c"])


TEMPLATE = KernelTemplate(
    name="sgemm",
    title="SGEMM (FP32, register-blocked)",
    description="C = A*B in float32 without tensor cores: block tile, register tile, stage depth, float4, double buffering, unroll.",
    source=read_cu(__file__),
    entry="sgemm",
    slots=SLOTS,
    restrictions=RESTRICTIONS,
    args=(
        Arg("a", "in", "float32", shape=lambda p: (int(p["m"]), int(p["k"]))),
        Arg("b", "in", "float32", shape=lambda p: (int(p["k"]), int(p["n"]))),
        Arg("c", "out", "float32", shape=lambda p: (int(p["m"]), int(p["n"]))),
    ),
    problem={"m": 4096, "n": 4096, "k": 4096},
    small_problem={"m": 256, "n": 256, "k": 256},
    problem_doc={"m": "rows of A and C", "n": "columns of B and C", "k": "columns of A, rows of B"},
    problem_limits={"m": (32, 1 << 15), "n": (32, 1 << 15), "k": (8, 1 << 15)},
    default={
        "block_m": 128,
        "block_n": 128,
        "block_k": 8,
        "thread_m": 8,
        "thread_n": 8,
        "vector_loads": True,
        "double_buffer": True,
        "unroll_k": 8,
    },
    grid=grid,
    block=block,
    make_inputs=make_inputs,
    reference=reference,
    profile=profile,
    bytes_moved=bytes_moved,
    flops=flops,
    # K = 4096 products of numbers in [-1, 1] summed in float32: errors grow like sqrt(K) * eps.
    tolerance=(1e-3, 1e-3),
    baseline=baseline,
    baseline_name="cupy.matmul (cuBLAS SGEMM, TF32 off)",
)
