"""conv2d: the classic Kernel Tuner 2D convolution benchmark (15x15 filter over a 4096x4096 image).

Slot names, domains and restrictions are those of the benchmark as Kernel Tuner users record it
(4,362 valid configs), so the simulator can be held against a recorded cache file config by
config (docs/simulator.md). The filter lives in ``__constant__`` memory
(``d_filter``, uploaded by the backend through ``KernelTemplate.constants``); the input is the
image with a halo of filter - 1 rows and columns, so every output needs no bounds test.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from workbench.core.model.access import bank_conflict_ways, distinct_offsets, sector_efficiency, warp_lanes
from workbench.core.domain.space import Config, Slot
from workbench.core.domain.templates import Arg, KernelTemplate, Problem, WorkProfile, ceil_div, read_cu

SLOTS = (
    Slot("block_size_x", tuple(range(16, 257, 16)), "launch", "threads per block in x"),
    Slot("block_size_y", (1, 2, 4, 8, 16), "launch", "threads per block in y"),
    Slot("tile_size_x", (1, 2, 3, 4), "launch", "outputs per thread in x (block-strided)"),
    Slot("tile_size_y", (1, 2, 3, 4), "launch", "outputs per thread in y (block-strided)"),
    Slot("read_only", (0, 1), "memory", "load the input through the read-only data cache (__ldg)"),
    Slot("use_padding", (0, 1), "memory", "one extra column in the shared input tile (bank mapping)"),
    Slot("use_shmem", (0, 1), "memory", "stage the block's input tile with its halo in shared memory"),
)

# These reproduce the recorded space exactly (4,362 of 10,240 combinations). The recording keeps
# 16x1 blocks (16 threads), so the lower bound of Kernel Tuner's [32, 1024] thread range is not
# applied: every block here has at least 16 threads anyway.
RESTRICTIONS = (
    "block_size_x * block_size_y <= 1024",
    "use_padding == 0 or use_shmem == 1",
    "use_padding == 0 or block_size_x % 32 != 0",
    "use_shmem == 0 or (block_size_y * tile_size_y + filter_height - 1)"
    " * (block_size_x * tile_size_x + filter_width - 1 + use_padding) * 4 <= 49152",
)

WORD = 4
WARP = 32  # threads per warp on every NVIDIA GPU the simulator models


def _input_shape(problem: Problem) -> tuple[int, int]:
    return (
        int(problem["image_height"]) + int(problem["filter_height"]) - 1,
        int(problem["image_width"]) + int(problem["filter_width"]) - 1,
    )


def grid(problem: Problem, config: Config) -> tuple[int, int, int]:
    return (
        ceil_div(int(problem["image_width"]), int(config["block_size_x"]) * int(config["tile_size_x"])),
        ceil_div(int(problem["image_height"]), int(config["block_size_y"]) * int(config["tile_size_y"])),
        1,
    )


def block(problem: Problem, config: Config) -> tuple[int, int, int]:
    return (int(config["block_size_x"]), int(config["block_size_y"]), 1)


def make_inputs(problem: Problem, rng: np.random.Generator) -> dict[str, Any]:
    fh, fw = int(problem["filter_height"]), int(problem["filter_width"])
    return {
        "input": rng.uniform(-1.0, 1.0, _input_shape(problem)).astype(np.float32),
        # positive weights that sum to about 1 (a blur), as in the benchmark
        "d_filter": (rng.uniform(0.5, 1.5, (fh, fw)) / (fh * fw)).astype(np.float32),
    }


def reference(inputs: Mapping[str, Any], problem: Problem) -> dict[str, np.ndarray]:
    """output[y, x] = sum_ij input[y + i, x + j] * filter[i, j], accumulated tap by tap in float64."""
    image = np.asarray(inputs["input"], dtype=np.float64)
    taps = np.asarray(inputs["d_filter"], dtype=np.float64).reshape(int(problem["filter_height"]), int(problem["filter_width"]))
    h, w = int(problem["image_height"]), int(problem["image_width"])
    out = np.zeros((h, w))
    # A band of rows at a time, so the band and its product stay in cache over all taps (a worker
    # builds this at every start); per element the same products summed in the same order.
    rows = 32
    tmp = np.empty((rows, w))
    for r0 in range(0, h, rows):
        r1 = min(r0 + rows, h)
        band, t = out[r0:r1], tmp[: r1 - r0]
        for i in range(taps.shape[0]):
            for j in range(taps.shape[1]):
                np.multiply(image[r0 + i : r1 + i, j : j + w], taps[i, j], out=t)
                band += t
    return {"output": out}


def bytes_moved(problem: Problem) -> float:
    rows, cols = _input_shape(problem)
    return float(WORD * (rows * cols + int(problem["image_height"]) * int(problem["image_width"])))


def flops(problem: Problem) -> float:
    taps = int(problem["filter_height"]) * int(problem["filter_width"])
    return 2.0 * taps * int(problem["image_height"]) * int(problem["image_width"])


def _staging_per_row(bx: int, by: int, sh_w: int) -> tuple[int, int]:
    """Round trips and element steps per staged row of the block's slowest warp.

    A thread stages ``n = ceil((sh_w - tx) / bx)`` elements of a row. The compiler unrolls that loop
    by 4 with a runtime trip count (NVRTC's PTX): first a remainder part of ``n mod 4`` copies, then
    ``n // 4`` iterations of the unrolled body. The loads within one part are issued together (one
    round trip per part), but a warp whose lanes need both parts, e.g. lanes with 3 elements next to
    lanes with 4, runs them one after the other (divergence): two round trips for that row. The
    block's barrier waits for its slowest warp. Steps: the copies the warp issues per row, remainder
    plus four per body iteration, whatever share of its lanes needs them.
    """
    lanes = np.arange(bx * by)
    n = np.maximum(0, -(-(sh_w - lanes % bx) // bx))
    round_trips = steps = 0
    for start in range(0, len(lanes), WARP):
        warp = n[start : start + WARP]
        remainder, body = int((warp % 4).max()), int((warp // 4).max())
        round_trips = max(round_trips, int(remainder > 0) + body)
        steps = max(steps, remainder + 4 * body)
    return round_trips, steps


def profile(problem: Problem, config: Config) -> WorkProfile:
    h, w = int(problem["image_height"]), int(problem["image_width"])
    fh, fw = int(problem["filter_height"]), int(problem["filter_width"])
    bx, by = int(config["block_size_x"]), int(config["block_size_y"])
    tx_n, ty_n = int(config["tile_size_x"]), int(config["tile_size_y"])
    in_rows, in_cols = _input_shape(problem)
    gx, gy, _ = grid(problem, config)
    blocks = gx * gy
    outputs = h * w
    taps = fh * fw
    tile_w, tile_h = bx * tx_n, by * ty_n
    sh_w, sh_h = tile_w + fw - 1, tile_h + fh - 1
    unique = WORD * in_rows * in_cols
    lx, ly, _ = warp_lanes(bx, by)
    # Every thread computes its whole tile: where the tiles overhang the image (a tile width that
    # does not divide it), the outputs past the edge are computed and then not stored.
    computed = float(blocks * bx * by * tx_n * ty_n)
    notes = [f"{tx_n * ty_n} outputs per thread, {taps} taps each"]
    if computed > outputs:
        notes.append(f"tiles overhang the image: {computed / outputs - 1:.1%} of the outputs computed are discarded")
    # A warp's loads are runs along a row of the input; rows start wherever in_cols puts them.
    row_major = ly * in_cols + lx
    if config["use_shmem"]:
        stride = sh_w + int(config["use_padding"])
        read = WORD * blocks * sh_w * sh_h  # each block reads its tile and halo once
        # Staging: rows i = ly (+ k*by), columns j = lx (+ k*bx): contiguous runs of bx floats.
        coalescing = sector_efficiency(row_major * WORD, WORD)
        store_ways = bank_conflict_ways(ly * stride + lx)
        # Taps: sh[ty + yi*by + i][tx + xi*bx + j], the same pattern shifted for every (i, j).
        load_ways = bank_conflict_ways(ly * stride + lx)
        staged = blocks * sh_w * sh_h
        # Fully unrolled, with no store or barrier between the tap loads, the compiler loads each
        # distinct shared element a thread needs once and keeps it in a register for every output
        # that uses it: rows yi*by + i coincide for different (yi, i) when by < filter height (and
        # columns likewise when bx < filter width). Count distinct (row, column) pairs per thread.
        rows = distinct_offsets(ty_n, by, fh)
        cols = distinct_offsets(tx_n, bx, fw)
        threads = blocks * bx * by
        tap_loads = float(threads * rows * cols)
        smem = float(staged + tap_loads)
        ways = (staged * store_ways + tap_loads * load_ways) / smem
        syncs = 1.0
        # The staging loop's trip counts depend on threadIdx, so it is not unrolled: each row a thread
        # stages is a load and the shared store waiting for it, one round trip. Short blocks stage
        # tall halos row by row. Within a row, see _staging_per_row: one round trip per part of the
        # column loop a warp runs, two where its lanes need both the remainder and the unrolled body.
        round_trips, steps = _staging_per_row(bx, by, sh_w)
        staging_rounds = math.ceil(sh_h / by) * round_trips
        # Each staging step also costs issue slots besides its load and store: in the PTX, about 4
        # per element (index, bounds test, predicate, branch) and 10 per row (row address, loop
        # test); a partly filled last column step still issues for its warp. Short blocks with
        # tall halos run many steps per thread for few outputs.
        other = float(threads * math.ceil(sh_h / by) * (4 * steps + 10))
        # Only the staging loads read global memory here, and NVVM compiles them to ld.global.nc with
        # or without __ldg (the input is const and the output __restrict__): read_only changes nothing
        # in this path, both take the read-only path.
        ro_path = 1.0
        l1_hit = 0.0  # a block stages each element once: its re-reads are halos other blocks fetched (L2)
        notes.append(
            f"shared tile {sh_h}x{stride} words ({WORD * sh_h * stride} B), taps {load_ways:g}-way; "
            f"{rows * cols} distinct shared loads per thread for {tx_n * ty_n * taps} taps (register reuse)"
        )
    else:
        # With tiles that cover the image exactly the source has no clamps, and a fully unrolled loop
        # loads each distinct input element a thread needs once (as in the shared path). The clamps
        # of an overhanging tiling, and __ldg (which NVVM does not merge), leave one load per tap.
        exact = h % tile_h == 0 and w % tile_w == 0
        if exact and not config["read_only"]:
            rows, cols = distinct_offsets(ty_n, by, fh), distinct_offsets(tx_n, bx, fw)
        else:
            rows, cols = ty_n * fh, tx_n * fw
        threads = blocks * bx * by
        read = WORD * threads * rows * cols  # global loads; L1/L2 serve the overlap between threads
        # tap j shifts the whole warp by j floats: average the sector use over the filter width
        coalescing = sector_efficiency(np.concatenate([(row_major + j) * WORD for j in range(fw)]), WORD)
        smem, ways, syncs, staging_rounds = 0.0, 1.0, 0.0, 0
        other = 0.0
        ro_path = 1.0 if config["read_only"] else 0.0
        # Re-reads of elements this block already loaded can hit its SM's L1; the block's first read
        # of an element another block also needs (its halo) comes from L2.
        block_reads = bx * by * rows * cols
        block_unique = sh_w * sh_h
        within = blocks * (block_reads - block_unique)
        l1_hit = within / max(1.0, read / WORD - in_rows * in_cols)
        notes.append(f"{rows * cols} global loads per thread for {tx_n * ty_n * taps} taps"
                     + (" (register reuse: the tiles cover the image exactly)" if rows * cols < tx_n * ty_n * taps else "")
                     + f", reuse between threads left to the {'read-only' if config['read_only'] else 'L1'} cache")
    return WorkProfile(
        bytes_read=float(read),
        bytes_written=float(WORD * outputs),
        flops=2.0 * taps * computed,
        access_bytes=WORD,
        coalescing=coalescing,
        work_per_thread=float(tx_n * ty_n),
        smem_accesses=smem,
        bank_conflict_ways=ways,
        syncs_per_block=syncs,
        l2_reuse=max(0.0, 1.0 - unique / read),
        read_only_path=ro_path,
        l1_hit_of_reuse=min(1.0, max(0.0, l1_hit)),
        staging_rounds=float(staging_rounds),
        other_instructions=other,
        static_smem_bytes=WORD * sh_h * (sh_w + int(config["use_padding"])) if config["use_shmem"] else 0,
        notes=tuple(notes),
    )


def baseline(cupy: Any, inputs: Mapping[str, Any], problem: Problem) -> None:
    """CuPy's library correlation of the same image and filter ('valid' mode = this kernel's output).

    Needs the filter on the device as ``inputs["d_filter"]``: it is a constant, not a kernel
    argument, so the backend must add constants to the arrays it hands to baselines.
    """
    from cupyx.scipy import signal  # noqa: PLC0415 - CuPy only exists on GPU machines

    if "d_filter" not in inputs:
        raise KeyError("conv2d baseline needs the filter (d_filter) among the device inputs")
    inputs["output"][...] = signal.correlate2d(inputs["input"], inputs["d_filter"], mode="valid")


TEMPLATE = KernelTemplate(
    name="conv2d",
    title="2D convolution (Kernel Tuner benchmark)",
    description="15x15 filter in constant memory over a 4096x4096 image: block shape, outputs per thread, "
    "read-only loads, shared-memory staging and padding. Same space as Kernel Tuner's recorded benchmark.",
    source=read_cu(__file__),
    entry="convolution_kernel",
    slots=SLOTS,
    restrictions=RESTRICTIONS,
    args=(
        Arg("output", "out", "float32", shape=lambda p: (int(p["image_height"]), int(p["image_width"]))),
        Arg("input", "in", "float32", shape=_input_shape),
    ),
    constants=("d_filter",),
    problem={"image_width": 4096, "image_height": 4096, "filter_width": 15, "filter_height": 15},
    # not a multiple of any tile: edge blocks (clamped loads, zero-filled staging) are exercised
    small_problem={"image_width": 200, "image_height": 75, "filter_width": 15, "filter_height": 15},
    problem_doc={
        "image_width": "output columns",
        "image_height": "output rows",
        "filter_width": "filter columns (odd)",
        "filter_height": "filter rows (odd)",
    },
    problem_limits={"image_width": (1, 1 << 15), "image_height": (1, 1 << 15), "filter_width": (1, 33), "filter_height": (1, 33)},
    default={
        "block_size_x": 16,
        "block_size_y": 16,
        "tile_size_x": 1,
        "tile_size_y": 1,
        "read_only": 0,
        "use_padding": 0,
        "use_shmem": 1,
    },
    grid=grid,
    block=block,
    make_inputs=make_inputs,
    reference=reference,
    profile=profile,
    bytes_moved=bytes_moved,
    flops=flops,
    tolerance=(1e-4, 1e-5),
    baseline=baseline,
    baseline_name="cupyx.scipy.signal.correlate2d (valid)",
)
