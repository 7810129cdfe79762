"""transpose: y = x^T for a rows x cols float32 matrix, the classic shared-memory tiling study.

The tuning question is how to make both sides of a transpose coalesced: the naive kernel reads
rows and writes columns (one 4-byte store per 32-byte sector); staging a tile in shared memory
makes the write coalesced too, at the price of a barrier and of bank conflicts when a tile column
is read (which the one-column padding removes, unless wide vectors bring them back).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from workbench.core.model.access import bank_conflict_ways, sector_efficiency, warp_lanes
from workbench.core.domain.space import Config, Slot
from workbench.core.domain.templates import Arg, KernelTemplate, Problem, WorkProfile, ceil_div, read_cu

SLOTS = (
    Slot("tile_dim", (16, 32, 64), "memory", "side of the square tile of the matrix one block moves"),
    Slot("block_rows", (1, 2, 4, 8, 16, 32), "launch", "threads along y; each walks tile_dim / block_rows tile rows"),
    Slot("tiles_per_block", (1, 2, 4), "launch", "consecutive tiles down the rows one block moves"),
    Slot("vector_width", (1, 2, 4), "memory", "floats per global access: float, float2 or float4"),
    Slot("use_shared", (False, True), "memory", "stage the tile in shared memory so the writes are coalesced too"),
    Slot("smem_padding", (False, True), "memory", "one extra tile column: reading a tile column hits distinct banks"),
    Slot("read_only", (False, True), "memory", "load x through the read-only data cache (__ldg)"),
)

RESTRICTIONS = (
    "block_rows <= tile_dim",
    # between one warp and the hardware limit of threads per block
    "32 <= tile_dim // vector_width * block_rows <= 1024",
    # padding only exists in shared memory
    "use_shared or not smem_padding",
    # a vector never straddles the end of a row of x or of y
    "cols % vector_width == 0 and rows % vector_width == 0",
)

WORD = 4  # bytes per float


def _threads_x(config: Config) -> int:
    return int(config["tile_dim"]) // int(config["vector_width"])


def grid(problem: Problem, config: Config) -> tuple[int, int, int]:
    tile = int(config["tile_dim"])
    return (ceil_div(int(problem["cols"]), tile), ceil_div(int(problem["rows"]), tile * int(config["tiles_per_block"])), 1)


def block(problem: Problem, config: Config) -> tuple[int, int, int]:
    return (_threads_x(config), int(config["block_rows"]), 1)


def make_inputs(problem: Problem, rng: np.random.Generator) -> dict[str, Any]:
    shape = (int(problem["rows"]), int(problem["cols"]))
    return {"x": rng.uniform(-1.0, 1.0, shape).astype(np.float32)}


def reference(inputs: Mapping[str, Any], problem: Problem) -> dict[str, np.ndarray]:
    return {"y": np.ascontiguousarray(np.asarray(inputs["x"], dtype=np.float64).T)}


def bytes_moved(problem: Problem) -> float:
    return 2.0 * WORD * int(problem["rows"]) * int(problem["cols"])  # read x once, write y once


def flops(problem: Problem) -> float:
    return 0.0  # pure data movement


def _warp_threads(config: Config) -> tuple[np.ndarray, np.ndarray]:
    """(tx, ty) of the threads of every warp of a block, shape (warps, 32)."""
    tx, ty, _ = warp_lanes(_threads_x(config), int(config["block_rows"]))
    return tx, ty


def profile(problem: Problem, config: Config) -> WorkProfile:
    rows, cols = int(problem["rows"]), int(problem["cols"])
    tile, width = int(config["tile_dim"]), int(config["vector_width"])
    block_rows, tiles = int(config["block_rows"]), int(config["tiles_per_block"])
    n = rows * cols
    tx, ty = _warp_threads(config)
    # Reads: row i0+ty of the tile, vector tx (the same in both variants).
    read_eff = sector_efficiency((ty * cols + tx * width) * WORD, WORD * width)
    notes = [f"{WORD * width} B per read", f"{tile}x{tile} tiles, {tile // block_rows} rows per thread"]
    smem_accesses = 0.0
    ways = 1.0
    syncs = 0.0
    if config["use_shared"]:
        write_eff = sector_efficiency((ty * rows + tx * width) * WORD, WORD * width)
        stride = tile + int(config["smem_padding"])
        # Stores tile[ty][tx*width + k] (scalar, one per k); loads tile[tx*width + k][ty].
        store_ways = bank_conflict_ways(ty * stride + tx * width)
        load_ways = bank_conflict_ways((tx * width) * stride + ty)
        ways = (store_ways + load_ways) / 2.0
        smem_accesses = 2.0 * n
        syncs = 2.0 * tiles
        notes.append(f"shared tile row stride {stride} words: stores {store_ways:g}-way, column reads {load_ways:g}-way")
    else:
        # Each thread writes its vector element k down column k of y: y[(c + k) * rows + r].
        write_eff = sector_efficiency((tx * width * rows + ty) * WORD, WORD)
        notes.append(f"naive: strided 4 B writes, {write_eff:.0%} of each written sector used")
    coalescing = 2.0 / (1.0 / read_eff + 1.0 / write_eff)  # equal bytes read and written
    return WorkProfile(
        bytes_read=float(WORD * n),
        bytes_written=float(WORD * n),
        flops=0.0,
        access_bytes=WORD * width,
        coalescing=coalescing,
        work_per_thread=float(tile * tile * tiles) / (_threads_x(config) * block_rows),
        smem_accesses=smem_accesses,
        bank_conflict_ways=ways,
        syncs_per_block=syncs,
        # tile[TILE_DIM][TILE_DIM + SMEM_PADDING]
        static_smem_bytes=WORD * tile * (tile + int(config["smem_padding"])) if config["use_shared"] else 0,
        notes=tuple(notes),
    )


def baseline(cupy: Any, inputs: Mapping[str, Any], problem: Problem) -> None:
    """CuPy's copy kernel of the transposed view: the library way to materialise x.T."""
    inputs["y"][...] = cupy.ascontiguousarray(inputs["x"].T)


TEMPLATE = KernelTemplate(
    name="transpose",
    title="Matrix transpose",
    description="y = x^T (float32): shared-memory tiling, padding against bank conflicts, vector width, block shape.",
    source=read_cu(__file__),
    entry="transpose",
    slots=SLOTS,
    restrictions=RESTRICTIONS,
    args=(
        Arg("x", "in", "float32", shape=lambda p: (int(p["rows"]), int(p["cols"]))),
        Arg("y", "out", "float32", shape=lambda p: (int(p["cols"]), int(p["rows"]))),
    ),
    problem={"rows": 8192, "cols": 8192},
    small_problem={"rows": 100, "cols": 260},  # not multiples of any tile: edge tiles exercised
    problem_doc={"rows": "rows of x (columns of y)", "cols": "columns of x (rows of y)"},
    problem_limits={"rows": (1, 1 << 16), "cols": (1, 1 << 16)},
    default={
        "tile_dim": 32,
        "block_rows": 8,
        "tiles_per_block": 1,
        "vector_width": 1,
        "use_shared": True,
        "smem_padding": True,
        "read_only": False,
    },
    grid=grid,
    block=block,
    make_inputs=make_inputs,
    reference=reference,
    profile=profile,
    bytes_moved=bytes_moved,
    flops=flops,
    tolerance=(0.0, 0.0),  # a transpose copies bits: any difference is a bug
    baseline=baseline,
    baseline_name="cupy.ascontiguousarray(x.T)",
)
