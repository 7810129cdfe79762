"""vector_add: z = alpha * x + y in float32, the worked example of a template spec.

The tuning question is pure memory throughput: how wide each access is (float/float2/float4),
how many independent loads a thread keeps in flight, the block size, and whether a fixed grid
loops over the data (grid-stride) or the grid covers it once (one-shot).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from workbench.core.domain.space import Config, Slot
from workbench.core.domain.templates import Arg, KernelTemplate, Problem, WorkProfile, ceil_div, read_cu

SLOTS = (
    Slot("block_size", (32, 64, 128, 256, 512, 1024), "launch", "threads per block"),
    Slot("items_per_thread", (1, 2, 4, 8, 16), "launch", "vectors each thread loads before computing (loads in flight)"),
    Slot("grid_stride", (False, True), "launch", "a fixed grid loops over the data instead of covering it once"),
    Slot("grid_blocks", (264, 528, 1056, 2112, 4224), "launch", "blocks launched in grid-stride mode"),
    Slot("vector_width", (1, 2, 4), "memory", "floats per load/store: float, float2 or float4"),
)

RESTRICTIONS = (
    # grid_blocks only matters in grid-stride mode: one-shot configs keep its first value.
    "grid_stride or grid_blocks == 264",
    # chunks above 32K floats per block leave too few blocks to fill a GPU at 1M elements
    "block_size * items_per_thread * vector_width <= 32768",
)


def _vectors(problem: Problem, config: Config) -> int:
    return int(problem["n"]) // int(config["vector_width"])


def grid(problem: Problem, config: Config) -> tuple[int, int, int]:
    blocks = max(1, ceil_div(_vectors(problem, config), int(config["block_size"]) * int(config["items_per_thread"])))
    if config["grid_stride"]:
        blocks = min(blocks, int(config["grid_blocks"]))
    return (blocks, 1, 1)


def block(problem: Problem, config: Config) -> tuple[int, int, int]:
    return (int(config["block_size"]), 1, 1)


def make_inputs(problem: Problem, rng: np.random.Generator) -> dict[str, Any]:
    n = int(problem["n"])
    return {
        "x": rng.uniform(-1.0, 1.0, n).astype(np.float32),
        "y": rng.uniform(-1.0, 1.0, n).astype(np.float32),
        "alpha": np.float32(problem["alpha"]),
    }


def reference(inputs: Mapping[str, Any], problem: Problem) -> dict[str, np.ndarray]:
    x = np.asarray(inputs["x"], dtype=np.float64)
    y = np.asarray(inputs["y"], dtype=np.float64)
    return {"z": float(inputs["alpha"]) * x + y}


def bytes_moved(problem: Problem) -> float:
    return 12.0 * int(problem["n"])  # read x and y, write z


def flops(problem: Problem) -> float:
    return 2.0 * int(problem["n"])


def profile(problem: Problem, config: Config) -> WorkProfile:
    n = int(problem["n"])
    width = int(config["vector_width"])
    items = int(config["items_per_thread"])
    threads = grid(problem, config)[0] * int(config["block_size"])
    notes = [f"{4 * width} B per access, {items} loads of x and y in flight per thread"]
    if config["grid_stride"]:
        notes.append(f"grid-stride loop: {ceil_div(n, threads * width * items)} iterations per thread")
    return WorkProfile(
        bytes_read=8.0 * n,
        bytes_written=4.0 * n,
        flops=2.0 * n,
        access_bytes=4 * width,
        coalescing=1.0,  # consecutive threads touch consecutive vectors for every k
        work_per_thread=float(items * width),
        notes=tuple(notes),
    )


def baseline(cupy: Any, inputs: Mapping[str, Any], problem: Problem) -> None:
    """CuPy's fused elementwise kernel for the same saxpy."""
    global _SAXPY
    if _SAXPY is None:
        _SAXPY = cupy.ElementwiseKernel("float32 a, float32 x, float32 y", "float32 z", "z = a * x + y", "wb_saxpy")
    _SAXPY(np.float32(problem["alpha"]), inputs["x"], inputs["y"], inputs["z"])


_SAXPY: Any = None

TEMPLATE = KernelTemplate(
    name="vector_add",
    title="Vector add (saxpy)",
    description="z = alpha * x + y over n floats: vector width, loads in flight, block size, grid-stride or one-shot.",
    source=read_cu(__file__),
    entry="vector_add",
    slots=SLOTS,
    restrictions=RESTRICTIONS,
    args=(
        Arg("x", "in", "float32", shape=lambda p: (int(p["n"]),)),
        Arg("y", "in", "float32", shape=lambda p: (int(p["n"]),)),
        Arg("z", "out", "float32", shape=lambda p: (int(p["n"]),)),
        Arg("alpha", "scalar", "float32", value=lambda p: float(p["alpha"])),
    ),
    problem={"n": 1 << 24, "alpha": 2.0},
    small_problem={"n": 4099, "alpha": 2.0},  # not a multiple of 4: the scalar tail is exercised
    problem_doc={"n": "number of elements", "alpha": "scale applied to x"},
    problem_limits={"n": (1, 1 << 30), "alpha": (-1e6, 1e6)},
    default={"block_size": 256, "items_per_thread": 1, "grid_stride": False, "grid_blocks": 264, "vector_width": 1},
    grid=grid,
    block=block,
    make_inputs=make_inputs,
    reference=reference,
    profile=profile,
    bytes_moved=bytes_moved,
    flops=flops,
    tolerance=(1e-5, 1e-6),
    baseline=baseline,
    baseline_name="cupy.ElementwiseKernel saxpy",
)
