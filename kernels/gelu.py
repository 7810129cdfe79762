"""gelu: the tanh form of GELU over n floats, with a fast-math slot whose accuracy cost is emulated.

Same memory-side slots as vector_add (block size, loads in flight, vector width, grid-stride),
plus ``fast_math``: the precise path calls ``tanhf``; the fast path uses the hardware
``tanh.approx.f32`` instruction (documented relative error 2^-11, measured 2^-16.5 on sm_90).
``emulate`` reproduces both in float32 NumPy so the simulator's quality metric shows what fast
math costs (about 7 correct digits against 6 on the default problem, as measured); the tolerance
accepts the documented bound, so the trade is the tuner's to make on any device.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from workbench.core.domain.space import Config, Slot
from workbench.core.domain.templates import Arg, KernelTemplate, Problem, WorkProfile, ceil_div, read_cu

K0 = 0.7978845608028654  # sqrt(2 / pi)
K1 = 0.044715

#: Maximum relative error of ``tanh.approx.f32`` (PTX ISA, "Floating point instructions: tanh"):
#: the documented bound, which the tolerance below must accept on any device.
TANH_APPROX_REL_ERR = 2.0**-10.987
#: What the instruction does on a device: the largest absolute error over every float32 input in
#: each band of |u| (band upper edge, error), and the largest relative error over all of them,
#: measured on an NVIDIA H200 (sm_90) with ``bench/fast_math_probe.py`` (docs/gpu-results.md).
#: About 2^-16.5 where the documented bound says 2^-11; near saturation the result is within a
#: few float32 ulps. Other architectures are modelled with these figures until measured.
TANH_APPROX_ABS_ERR = ((0.0625, 2.02e-7), (0.25, 5.31e-7), (0.5, 2.49e-6), (1.0, 7.15e-6), (2.0, 7.98e-6),
                       (3.0, 2.65e-6), (4.0, 4.22e-7), (5.0, 2.27e-6), (6.0, 4.59e-7), (8.0, 1.59e-7),
                       (10.0, 2.25e-7), (math.inf, 0.0))  # from 10 on tanh rounds to 1 in float32, as measured
TANH_APPROX_MEASURED_REL_ERR = 1.11e-5
#: Inputs are N(0, 2): |x| <= 16 (8 sigma; exceeded once in ~10^15 draws) bounds the error below.
X_BOUND = 16.0
#: y = 0.5 x (1 + t) with |t| <= 1, so an error of TANH_APPROX_REL_ERR in t moves y by at most
#: 0.5 |x| TANH_APPROX_REL_ERR. For x > 0 that is within 2^-11 of |y| (y >= x / 2); for x < 0, y
#: goes to 0 while the error does not (1 + t cancels), so the absolute tolerance must cover the
#: bound at the largest |x|, plus the float32 rounding of 1 + t (2^-23, one ulp of 1) scaled the
#: same way: 0.5 * 16 * (2^-10.987 + 2^-23) = 3.95e-3. Precise tanhf is ~1e-7.
FAST_MATH_ATOL = 0.5 * X_BOUND * (TANH_APPROX_REL_ERR + 2.0**-23)

SLOTS = (
    Slot("block_size", (64, 128, 256, 512, 1024), "launch", "threads per block"),
    Slot("items_per_thread", (1, 2, 4, 8), "launch", "vectors each thread loads before computing (loads in flight)"),
    Slot("grid_stride", (False, True), "launch", "a fixed grid loops over the data instead of covering it once"),
    Slot("grid_blocks", (264, 528, 1056, 2112), "launch", "blocks launched in grid-stride mode"),
    Slot("vector_width", (1, 2, 4), "memory", "floats per load/store: float, float2 or float4"),
    Slot("fast_math", (False, True), "compute", "hardware tanh.approx (SFU) instead of precise tanhf"),
)

RESTRICTIONS = ("grid_stride or grid_blocks == 264",)


def grid(problem: Problem, config: Config) -> tuple[int, int, int]:
    vectors = int(problem["n"]) // int(config["vector_width"])
    blocks = max(1, ceil_div(vectors, int(config["block_size"]) * int(config["items_per_thread"])))
    if config["grid_stride"]:
        blocks = min(blocks, int(config["grid_blocks"]))
    return (blocks, 1, 1)


def block(problem: Problem, config: Config) -> tuple[int, int, int]:
    return (int(config["block_size"]), 1, 1)


def make_inputs(problem: Problem, rng: np.random.Generator) -> dict[str, Any]:
    # N(0, 2): most mass where GELU curves, tails where tanh saturates and cancellation bites.
    return {"x": rng.normal(0.0, 2.0, int(problem["n"])).astype(np.float32)}


def reference(inputs: Mapping[str, Any], problem: Problem) -> dict[str, np.ndarray]:
    x = np.asarray(inputs["x"], dtype=np.float64)
    return {"y": 0.5 * x * (1.0 + np.tanh(K0 * (x + K1 * x**3)))}


def _f32(values: Any) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)


def _tanh_approx(u: np.ndarray) -> np.ndarray:
    """tanh.approx.f32 as measured: the exact tanh moved by the largest error the device showed
    for that band of |u| (``TANH_APPROX_ABS_ERR``, never more than ``TANH_APPROX_MEASURED_REL_ERR``
    of |tanh|), up or down by the input's last bit, then rounded to float32.

    Every result carries its band's worst error, so the emulated quality (the worst element of a
    large array decides it) is the device's, not the documented bound's, which is about 60 times
    looser and would have the simulator refuse fast math under quality limits a GPU meets.
    """
    exact = np.tanh(u.astype(np.float64))
    magnitude = np.abs(u)
    edges = np.array([edge for edge, _ in TANH_APPROX_ABS_ERR])
    errors = np.array([error for _, error in TANH_APPROX_ABS_ERR])
    band = np.minimum(np.searchsorted(edges, magnitude, side="right"), len(errors) - 1)
    error = np.minimum(errors[band], TANH_APPROX_MEASURED_REL_ERR * np.abs(exact))
    # up or down by the last bit of |u|: a function of the input (the instruction is one), odd as
    # the instruction is, and half the results each way
    direction = np.where(np.abs(_f32(u)).view(np.uint32) & 1, -1.0, 1.0) * np.sign(exact)
    return _f32(np.clip(exact + direction * error, -1.0, 1.0))


def emulate(inputs: Mapping[str, Any], problem: Problem, config: Config) -> dict[str, np.ndarray]:
    """The kernel's float32 arithmetic, step by step, for the config's math path."""
    x = _f32(inputs["x"])
    x3 = _f32(_f32(x * x) * x)
    inner = _f32(np.float64(np.float32(K1)) * x3.astype(np.float64) + x.astype(np.float64))  # fmaf: one rounding
    u = _f32(np.float32(K0) * inner)
    t = _tanh_approx(u) if config["fast_math"] else np.tanh(u)  # float32 tanh: within a few ulp of tanhf
    y = _f32(_f32(np.float32(0.5) * x) * _f32(np.float32(1.0) + t))
    return {"y": y}


def bytes_moved(problem: Problem) -> float:
    return 8.0 * int(problem["n"])


def flops(problem: Problem) -> float:
    return 8.0 * int(problem["n"])  # x^3 (2), fma (2), scale (1), combine (3); tanh counted apart


def profile(problem: Problem, config: Config) -> WorkProfile:
    n = int(problem["n"])
    width = int(config["vector_width"])
    items = int(config["items_per_thread"])
    fast = bool(config["fast_math"])
    notes = [f"{4 * width} B per access, {items} loads in flight per thread"]
    notes.append("tanh.approx.f32 on the SFU (~11 bits)" if fast else "precise tanhf (software sequence)")
    return WorkProfile(
        bytes_read=4.0 * n,
        bytes_written=4.0 * n,
        flops=8.0 * n,
        access_bytes=4 * width,
        coalescing=1.0,
        work_per_thread=float(items * width),
        transcendentals=float(n),
        fast_math=fast,
        notes=tuple(notes),
    )


_GELU: Any = None


def baseline(cupy: Any, inputs: Mapping[str, Any], problem: Problem) -> None:
    """The same formula as a CuPy ElementwiseKernel (precise tanhf)."""
    global _GELU
    if _GELU is None:
        _GELU = cupy.ElementwiseKernel(
            "float32 x", "float32 y",
            f"y = 0.5f * x * (1.0f + tanhf({K0}f * (x + {K1}f * x * x * x)))",
            "wb_gelu",
        )
    _GELU(inputs["x"], inputs["y"])


TEMPLATE = KernelTemplate(
    name="gelu",
    title="GELU (tanh form)",
    description="y = GELU(x) over n floats: memory-side slots plus fast-math intrinsics, with emulated accuracy.",
    source=read_cu(__file__),
    entry="gelu_forward",
    slots=SLOTS,
    restrictions=RESTRICTIONS,
    args=(
        Arg("x", "in", "float32", shape=lambda p: (int(p["n"]),)),
        Arg("y", "out", "float32", shape=lambda p: (int(p["n"]),)),
    ),
    problem={"n": 1 << 24},
    small_problem={"n": 8191},
    problem_doc={"n": "number of elements"},
    problem_limits={"n": (1, 1 << 30)},
    default={
        "block_size": 256, "items_per_thread": 1, "grid_stride": False, "grid_blocks": 264,
        "vector_width": 1, "fast_math": False,
    },
    grid=grid,
    block=block,
    make_inputs=make_inputs,
    reference=reference,
    profile=profile,
    emulate=emulate,
    bytes_moved=bytes_moved,
    flops=flops,
    # Accepts the fast path: the bound of tanh.approx's error (FAST_MATH_ATOL, derived above).
    tolerance=(1e-3, FAST_MATH_ATOL),
    baseline=baseline,
    baseline_name="cupy.ElementwiseKernel gelu",
)
