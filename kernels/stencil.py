"""stencil: one Jacobi sweep of a star stencil on a 3D float32 grid (7-point 3D, or 5-point per plane).

The tuning question is reuse: neighbours along z can stay in registers when a thread marches
through several planes (``z_per_thread``), neighbours in the plane can come from shared memory
(``use_shared``) or from the L1/L2 caches, and the block shape decides how much halo each block
re-reads and how well its rows fill 32-byte sectors.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from workbench.core.model.access import bank_conflict_ways, sector_efficiency, warp_lanes
from workbench.core.domain.space import Config, Slot
from workbench.core.domain.templates import Arg, KernelTemplate, Problem, WorkProfile, ceil_div, read_cu

SLOTS = (
    Slot("block_x", (16, 32, 64, 128, 256), "launch", "threads per block along x (the contiguous axis)"),
    Slot("block_y", (1, 2, 4, 8, 16, 32), "launch", "threads per block along y"),
    Slot("z_per_thread", (1, 2, 4, 8, 16), "launch", "planes each thread marches through, z neighbours kept in registers"),
    Slot("use_shared", (False, True), "memory", "stage each plane with a one-point halo in shared memory for x/y neighbours"),
    Slot("read_only", (False, True), "memory", "global loads through the read-only data cache (__ldg)"),
)

RESTRICTIONS = (
    "32 <= block_x * block_y <= 1024",
    "points in (5, 7)",  # the two stencils the kernel implements
)

WORD = 4
C0 = 0.5  # weight of the centre point; the neighbours share the other half


def _coefficients(problem: Problem) -> tuple[float, float]:
    return C0, 0.5 / (int(problem["points"]) - 1)


def grid(problem: Problem, config: Config) -> tuple[int, int, int]:
    return (
        ceil_div(int(problem["nx"]), int(config["block_x"])),
        ceil_div(int(problem["ny"]), int(config["block_y"])),
        ceil_div(int(problem["nz"]), int(config["z_per_thread"])),
    )


def block(problem: Problem, config: Config) -> tuple[int, int, int]:
    return (int(config["block_x"]), int(config["block_y"]), 1)


def _shape(problem: Problem) -> tuple[int, int, int]:
    return (int(problem["nz"]), int(problem["ny"]), int(problem["nx"]))


def make_inputs(problem: Problem, rng: np.random.Generator) -> dict[str, Any]:
    return {"u": rng.uniform(-1.0, 1.0, _shape(problem)).astype(np.float32)}


def reference(inputs: Mapping[str, Any], problem: Problem) -> dict[str, np.ndarray]:
    """Interior points get the weighted star; points with a neighbour outside the grid are copied."""
    u = np.asarray(inputs["u"], dtype=np.float64)
    c0, c1 = _coefficients(problem)
    v = u.copy()
    if int(problem["points"]) == 7:
        # Slab by slab into reused buffers: the same additions in the same order as one expression
        # over the grid, without its 1 GiB temporaries (a worker builds this at every start).
        planes = 8
        acc = np.empty((planes, u.shape[1] - 2, u.shape[2] - 2))
        tmp = np.empty_like(acc)
        for z0 in range(1, u.shape[0] - 1, planes):
            z1 = min(z0 + planes, u.shape[0] - 1)
            a, t = acc[: z1 - z0], tmp[: z1 - z0]
            np.add(u[z0 - 1 : z1 - 1, 1:-1, 1:-1], u[z0 + 1 : z1 + 1, 1:-1, 1:-1], out=a)
            a += u[z0:z1, :-2, 1:-1]
            a += u[z0:z1, 2:, 1:-1]
            a += u[z0:z1, 1:-1, :-2]
            a += u[z0:z1, 1:-1, 2:]
            a *= c1
            np.multiply(u[z0:z1, 1:-1, 1:-1], c0, out=t)
            np.add(t, a, out=v[z0:z1, 1:-1, 1:-1])
        return {"v": v}
    else:
        inner = (slice(None), slice(1, -1), slice(1, -1))
        neighbours = u[:, :-2, 1:-1] + u[:, 2:, 1:-1] + u[:, 1:-1, :-2] + u[:, 1:-1, 2:]
    v[inner] = c0 * u[inner] + c1 * neighbours
    return {"v": v}


def bytes_moved(problem: Problem) -> float:
    return 2.0 * WORD * int(problem["nx"]) * int(problem["ny"]) * int(problem["nz"])


def flops(problem: Problem) -> float:
    points = int(problem["points"])
    return float(points + 1) * int(problem["nx"]) * int(problem["ny"]) * int(problem["nz"])  # adds + 2 multiplies


def profile(problem: Problem, config: Config) -> WorkProfile:
    nx, ny, nz = int(problem["nx"]), int(problem["ny"]), int(problem["nz"])
    points = int(problem["points"])
    bx, by, zpt = int(config["block_x"]), int(config["block_y"]), int(config["z_per_thread"])
    n = nx * ny * nz
    gx, gy, gz = grid(problem, config)
    threads = gx * gy * gz * bx * by
    lx, ly, _ = warp_lanes(bx, by)
    row = ly * nx + lx  # a warp's loads of one plane, in floats
    # Loads per point of the marching thread: the plane above (or the point itself for 5-point),
    # plus the two planes a 7-point thread loads before it starts marching.
    z_loads = n + (2.0 * threads if points == 7 else 0.0)
    notes = [f"{zpt} planes per thread" + (", z neighbours from registers" if points == 7 else "")]
    centre_eff = sector_efficiency(row * WORD, WORD)
    if config["use_shared"]:
        # halo: a column of by points on each side (scalar, strided) and a row of bx above and below
        halo_rows = 2.0 * bx * (n / (bx * by))
        halo_cols = 2.0 * by * (n / (bx * by))
        loads = z_loads + halo_rows + halo_cols
        col_eff = sector_efficiency(((ly * nx) * WORD)[:, :1], WORD)  # one lane per row of the block
        coalescing = (z_loads + halo_rows) / loads * centre_eff + halo_cols / loads * col_eff
        stride = bx + 2
        # x neighbours: plane[ty+1][tx], [tx+2]; y neighbours: plane[ty][tx+1], [ty+2][tx+1]; store [ty+1][tx+1]
        ways = bank_conflict_ways(ly * stride + lx)
        smem = float(n * 5 + halo_rows + halo_cols)
        syncs = 2.0 * zpt
        notes.append(f"shared plane {by + 2}x{stride} words, {ways:g}-way")
    else:
        # x-1 / x+1 loads are the row shifted by one float: one extra sector per warp row
        shifted = sector_efficiency(np.concatenate([(row - 1) * WORD, (row + 1) * WORD]), WORD)
        loads = z_loads + 4.0 * n
        coalescing = (z_loads + 2.0 * n) / loads * centre_eff + 2.0 * n / loads * shifted
        smem, ways, syncs = 0.0, 1.0, 0.0
        notes.append("x/y neighbours from global memory via the caches")
    read = WORD * loads
    return WorkProfile(
        bytes_read=float(read),
        bytes_written=float(WORD * n),
        flops=flops(problem),
        access_bytes=WORD,
        coalescing=float(coalescing),
        work_per_thread=float(zpt),
        smem_accesses=smem,
        bank_conflict_ways=ways,
        syncs_per_block=syncs,
        l2_reuse=max(0.0, 1.0 - WORD * n / read),
        static_smem_bytes=WORD * (by + 2) * (bx + 2) if config["use_shared"] else 0,  # plane[BLOCK_Y + 2][BLOCK_X + 2]
        notes=tuple(notes),
    )


TEMPLATE = KernelTemplate(
    name="stencil",
    title="3D star stencil (Jacobi sweep)",
    description="7-point 3D (or 5-point per plane) stencil over a float32 grid: block shape, register blocking along z, "
    "shared-memory planes, read-only loads.",
    source=read_cu(__file__),
    entry="stencil",
    slots=SLOTS,
    restrictions=RESTRICTIONS,
    args=(
        Arg("u", "in", "float32", shape=_shape),
        Arg("v", "out", "float32", shape=_shape),
    ),
    problem={"nx": 512, "ny": 512, "nz": 512, "points": 7},
    small_problem={"nx": 70, "ny": 37, "nz": 19, "points": 7},  # ragged edges in every direction
    problem_doc={"nx": "grid points along x (contiguous)", "ny": "grid points along y", "nz": "grid points along z",
                 "points": "7: 3D star; 5: 2D star in every z plane"},
    problem_limits={"nx": (3, 1 << 14), "ny": (3, 1 << 14), "nz": (3, 1 << 14), "points": (5, 7)},
    default={"block_x": 32, "block_y": 8, "z_per_thread": 4, "use_shared": False, "read_only": False},
    grid=grid,
    block=block,
    make_inputs=make_inputs,
    reference=reference,
    profile=profile,
    bytes_moved=bytes_moved,
    flops=flops,
    tolerance=(1e-5, 1e-6),
)
