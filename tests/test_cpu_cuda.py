"""The CPU harness itself (tests/cpu_cuda.py): what it promises kernels beyond the shipped ones."""

from __future__ import annotations

import subprocess
from pathlib import Path

from cpu_cuda import SHIM, needs_gxx

_PARTIAL_WARP = r"""
static float out[48];
__global__ void sum_down() {
    float v = (float)threadIdx.x;
    // 16-lane segments: every lane a segment reads exists, also in the partial second warp
    for (int delta = 8; delta > 0; delta /= 2) v += __shfl_down_sync(0xffffu, v, delta, 16);
    out[threadIdx.x] = v;
}
int main() {
    wb_launch(wb_dim3{1, 1, 1}, wb_dim3{48, 1, 1}, [] { sum_down(); });
    printf("%g %g\n", out[0], out[32]);
    return 0;
}
"""


@needs_gxx
def test_a_block_whose_last_warp_is_partial_shuffles_without_waiting_for_lanes_it_does_not_have(
        tmp_path: Path) -> None:
    (tmp_path / "w.cpp").write_text(SHIM + _PARTIAL_WARP)
    build = subprocess.run(["g++", "-std=c++20", "-O1", "-w", "-pthread", "w.cpp", "-o", "w"],
                           cwd=tmp_path, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-2000:]
    run = subprocess.run(["./w"], cwd=tmp_path, capture_output=True, text=True, timeout=30)
    # lane 0 sums its segment 0..15 = 120; the partial warp's lane 32 sums 32..47 = 632
    assert run.stdout.split() == ["120", "632"]


_EARLY_RETURN = r"""
static float out[64];
__global__ void tail_then_barrier(int n) {
    __shared__ float tile[64];
    const unsigned i = threadIdx.x;
    if (i >= (unsigned)n) return;  // the tail leaves before the barrier, as bounds checks do
    tile[i] = (float)i;
    __syncthreads();
    out[i] = tile[n - 1 - i];
}
int main() {
    wb_launch(wb_dim3{2, 1, 1}, wb_dim3{64, 1, 1}, [] { tail_then_barrier(40); });
    printf("%g %g %g\n", out[0], out[39], out[40]);
    return 0;
}
"""


@needs_gxx
def test_threads_that_return_before_a_barrier_do_not_hold_up_the_rest_of_the_block(tmp_path: Path) -> None:
    """Two blocks in a row: the barriers are whole again for the second after the first's tail left."""
    (tmp_path / "e.cpp").write_text(SHIM + _EARLY_RETURN)
    build = subprocess.run(["g++", "-std=c++20", "-O1", "-w", "-pthread", "e.cpp", "-o", "e"],
                           cwd=tmp_path, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-2000:]
    run = subprocess.run(["./e"], cwd=tmp_path, capture_output=True, text=True, timeout=30)  # hung before
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["39", "0", "0"]
