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
