"""histogram: counts of n uint32 items in [0, bins), with global or privatised shared atomics.

The tuning question is atomic contention: one global atomic per item hammers ``bins`` addresses
in L2; privatising a histogram per block in shared memory moves that traffic on-chip and leaves
one global atomic per bin per block; several copies per block spread the lanes of a warp that
see the same value over different addresses (and banks).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from workbench.core.model.access import WARP, bank_conflict_ways
from workbench.core.domain.space import Config, Slot
from workbench.core.domain.templates import Arg, KernelTemplate, Problem, WorkProfile, ceil_div, read_cu

SLOTS = (
    Slot("strategy", ("global_atomic", "shared_private"), "reduction",
         "one global atomic per item, or per-block shared histograms merged with global atomics"),
    Slot("block_size", (64, 128, 256, 512, 1024), "launch", "threads per block"),
    Slot("items_per_thread", (1, 2, 4, 8, 16, 32), "launch", "items each thread counts"),
    Slot("vector_width", (1, 4), "memory", "items per global load: uint32 or uint4"),
    Slot("copies", (1, 2, 4, 8), "reduction", "shared sub-histograms per block; lane l counts into copy l % copies"),
)

RESTRICTIONS = (
    "items_per_thread % vector_width == 0",
    # copies only exist in shared memory
    'strategy == "shared_private" or copies == 1',
    # the private copies (one padding word each) fit in 48 KiB of static shared memory
    'strategy == "global_atomic" or copies * (bins + 1) * 4 <= 49152',
)

WORD = 4
#: Warps sampled (fixed seed) to estimate shared-atomic bank conflicts under uniform data.
_SAMPLED_WARPS = 256


def grid(problem: Problem, config: Config) -> tuple[int, int, int]:
    return (ceil_div(int(problem["n"]), int(config["block_size"]) * int(config["items_per_thread"])), 1, 1)


def block(problem: Problem, config: Config) -> tuple[int, int, int]:
    return (int(config["block_size"]), 1, 1)


def _hot_bin(problem: Problem) -> int:
    return int(problem["bins"]) // 2


def _bin_probabilities(problem: Problem) -> np.ndarray:
    """Probability of each bin under make_inputs: uniform, plus ``hot_fraction`` on one hot bin."""
    bins, hot = int(problem["bins"]), float(problem["hot_fraction"])
    p = np.full(bins, (1.0 - hot) / bins)
    p[_hot_bin(problem)] += hot
    return p


def make_inputs(problem: Problem, rng: np.random.Generator) -> dict[str, Any]:
    """Uniform values in [0, bins), a ``hot_fraction`` of them replaced by one hot bin (an image's
    background, a popular key): the contention that privatisation and copies are there to fight."""
    n = int(problem["n"])
    data = rng.integers(0, int(problem["bins"]), n, dtype=np.uint32)
    data[rng.random(n) < float(problem["hot_fraction"])] = _hot_bin(problem)
    return {"data": data}


def reference(inputs: Mapping[str, Any], problem: Problem) -> dict[str, np.ndarray]:
    counts = np.bincount(np.asarray(inputs["data"], dtype=np.int64), minlength=int(problem["bins"]))
    return {"hist": counts.astype(np.float64)}


def bytes_moved(problem: Problem) -> float:
    return float(WORD * (int(problem["n"]) + int(problem["bins"])))


def flops(problem: Problem) -> float:
    return 0.0  # integer counting only


def _effective_targets(problem: Problem) -> float:
    """Distinct addresses the atomics behave as if spread over: 1 / sum(p_bin^2) (= bins if uniform)."""
    return float(1.0 / np.sum(_bin_probabilities(problem) ** 2))


def _shared_atomic_ways(problem: Problem, copies: int) -> float:
    """Bank serialisation of a warp's shared atomics under the input distribution (fixed-seed estimate).

    Lane l adds to word (l % copies) * (bins + 1) + value. Lanes hitting the same word serialise
    too (an atomic is not a broadcast), so this counts lanes per bank, not distinct words.
    """
    bins = int(problem["bins"])
    rng = np.random.default_rng(0)
    values = rng.choice(bins, size=(_SAMPLED_WARPS, WARP), p=_bin_probabilities(problem))
    words = (np.arange(WARP) % copies) * (bins + 1) + values
    return float(np.mean([np.bincount(w % 32, minlength=32).max() for w in words]))


def profile(problem: Problem, config: Config) -> WorkProfile:
    n, bins = int(problem["n"]), int(problem["bins"])
    threads, items, width = int(config["block_size"]), int(config["items_per_thread"]), int(config["vector_width"])
    copies = int(config["copies"])
    blocks = grid(problem, config)[0]
    targets = _effective_targets(problem)
    notes = [f"{WORD * width} B per load, {items} items per thread, {blocks} blocks"]
    if config["strategy"] == "shared_private":
        merges = blocks * min(bins, threads * items)  # at most one global atomic per non-empty bin
        ways = _shared_atomic_ways(problem, copies)
        notes.append(f"{copies} private copies per block: {ways:.2f} lanes per bank per warp atomic")
        return WorkProfile(
            bytes_read=float(WORD * n),
            bytes_written=float(WORD * merges),
            flops=0.0,
            access_bytes=WORD * width,
            work_per_thread=float(items),
            atomics=float(merges),
            atomic_targets=float(bins),  # merges add whole bins: no hot spot among them
            shared_atomics=float(n),
            shared_atomic_targets=float(blocks * copies) * targets,
            smem_accesses=float(n + blocks * copies * (bins + 1) + blocks * copies * bins),
            bank_conflict_ways=ways,
            syncs_per_block=2.0,
            static_smem_bytes=WORD * copies * (bins + 1),  # sh_hist[COPIES * COPY_STRIDE]
            notes=tuple(notes),
        )
    notes.append(f"{n} global atomics on {bins} addresses (as contended as {targets:.0f} equally used ones)")
    return WorkProfile(
        bytes_read=float(WORD * n),
        bytes_written=float(WORD * bins),
        flops=0.0,
        access_bytes=WORD * width,
        work_per_thread=float(items),
        atomics=float(n),
        atomic_targets=targets,
        notes=tuple(notes),
    )


def baseline(cupy: Any, inputs: Mapping[str, Any], problem: Problem) -> None:
    """CuPy's bincount (a global-atomic histogram kernel) into the output buffer."""
    inputs["hist"][...] = cupy.bincount(inputs["data"], minlength=int(problem["bins"]))


TEMPLATE = KernelTemplate(
    name="histogram",
    title="Histogram (atomics)",
    description="Counts of uint32 items in [0, bins): global atomics vs per-block shared histograms, copies "
    "against contention, items per thread, vector loads.",
    source=read_cu(__file__),
    entry="histogram",
    slots=SLOTS,
    restrictions=RESTRICTIONS,
    args=(
        Arg("data", "in", "uint32", shape=lambda p: (int(p["n"]),)),
        Arg("hist", "out", "uint32", shape=lambda p: (int(p["bins"]),), reset="zero"),
    ),
    problem={"n": 1 << 26, "bins": 256, "hot_fraction": 0.25},
    # n is a prime: the scalar tail of vector loads is exercised
    small_problem={"n": 10007, "bins": 256, "hot_fraction": 0.25},
    problem_doc={
        "n": "items to count",
        "bins": "histogram bins (item values are in [0, bins))",
        "hot_fraction": "share of items that fall in one hot bin (the rest uniform): atomic contention",
    },
    problem_limits={"n": (1, 1 << 30), "bins": (1, 1 << 20), "hot_fraction": (0.0, 1.0)},
    default={"strategy": "shared_private", "block_size": 256, "items_per_thread": 8, "vector_width": 4, "copies": 2},
    grid=grid,
    block=block,
    make_inputs=make_inputs,
    reference=reference,
    profile=profile,
    bytes_moved=bytes_moved,
    flops=flops,
    tolerance=(0.0, 0.0),  # counts are exact
    baseline=baseline,
    baseline_name="cupy.bincount",
)
