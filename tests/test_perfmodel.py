"""The performance model teaches true lessons: qualitative laws of GPU performance on hand-made profiles.

Each test states a law a GPU engineer would name and checks the model obeys it for the reason it
names (the right term grows, the right limiter is reported), plus the occupancy calculator's
arithmetic, the launch refusals and the GPU descriptions.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest

from workbench.core.errors import WorkbenchError
from workbench.core.model.gpus import GPU_DIR, GpuSpec, list_gpus, load_gpu
from workbench.core.model.perfmodel import estimate_resources, launch_check, occupancy, predict
from workbench.core.model.quality import quality_from_error, quality_of, relative_error
from workbench.core.domain.templates import WorkProfile

H200 = load_gpu("H200")
A100 = load_gpu("A100_PCIE")
N = 1 << 24
STREAM = WorkProfile(bytes_read=8.0 * N, bytes_written=4.0 * N, flops=2.0 * N)  # saxpy, one float per thread
REGS = {"registers": 32, "smem_bytes": 0}


def _grid(elements: int, threads: int, per_thread: int = 1) -> tuple[int, int, int]:
    return (math.ceil(elements / (threads * per_thread)), 1, 1)


def _compute_heavy(flops_per_block: float, blocks: int) -> WorkProfile:
    return WorkProfile(bytes_read=4.0 * blocks, bytes_written=4.0 * blocks, flops=flops_per_block * blocks, work_per_thread=4)


# --- GPU descriptions ---------------------------------------------------------------------------


def test_all_required_gpus_are_described_with_consistent_peaks() -> None:
    names = list_gpus()
    for wanted in ("H200", "H100", "A100_SXM", "A100_PCIE", "RTX4090", "T4"):
        assert wanted in names
        gpu = load_gpu(wanted)
        assert gpu.peak_flops / 1e12 == pytest.approx(gpu.fp32_tflops, rel=0.01)  # datasheet vs lanes x clock
        assert gpu.max_registers_per_thread == 255 and gpu.max_threads_per_block == 1024 and gpu.warp_size == 32
        assert gpu.shared_per_block_default == 48 * 1024 <= gpu.shared_per_block_optin <= gpu.shared_per_sm
        assert gpu.max_warps_per_sm * gpu.warp_size == gpu.max_threads_per_sm
        assert 2.0 <= gpu.launch_overhead_us <= 5.0
    assert load_gpu("H200").memory_bandwidth_gbs > load_gpu("H100").memory_bandwidth_gbs > load_gpu("A100").memory_bandwidth_gbs


def test_gpu_names_are_forgiving_and_unknown_names_are_a_clear_error() -> None:
    assert load_gpu("nvidia h200").name == "H200"
    assert load_gpu("A100-PCIE-40GB").name == "A100_PCIE"
    assert load_gpu("rtx 4090").name == "RTX4090"
    with pytest.raises(WorkbenchError, match="unknown GPU model 'V100'.*H200"):
        load_gpu("V100")


def test_a_malformed_gpu_file_names_the_field(tmp_path) -> None:
    with open(f"{GPU_DIR}/T4.json", encoding="utf-8") as handle:
        data = json.load(handle)
    data["name"] = "Broken"
    data["sm_count"] = "forty"
    (tmp_path / "broken.json").write_text(json.dumps(data))
    with pytest.raises(WorkbenchError, match="sm_count must be a non-negative number"):
        load_gpu("Broken", directory=str(tmp_path))


def test_spec_from_driver_limits_keeps_the_occupancy_rules() -> None:
    spec = GpuSpec.from_limits("real", max_threads_per_sm=2048, registers_per_sm=65536, smem_per_sm=233472)
    assert occupancy(spec, 256, 128, 0).active_blocks_per_sm == occupancy(H200, 256, 128, 0).active_blocks_per_sm == 2


# --- occupancy calculator -----------------------------------------------------------------------


def test_occupancy_limited_by_registers_uses_per_warp_allocation() -> None:
    # 64 regs x 32 lanes = 2048 per warp -> 32 warps of 65536 -> 4 blocks of 8 warps: 50%.
    occ = occupancy(A100, 256, 64, 0)
    assert (occ.active_blocks_per_sm, occ.fraction, occ.limiter) == (4, 0.5, "registers")
    # 33 registers round up to 40 per thread (1280 per warp, 256-register units): 51 warps -> 48 -> 6 blocks.
    assert occupancy(A100, 256, 33, 0).active_blocks_per_sm == 6
    assert "limited by registers: 50% occupancy (4 blocks, 32 warps per SM)" in occ.explain()
    assert "(1 block, 8 warps per SM)" in occupancy(A100, 256, 255, 0).explain()  # not "1 blocks"


def test_occupancy_limited_by_shared_memory_counts_reserved_and_granularity() -> None:
    # A100: 164 KB per SM, 1 KB reserved per block: 40 KB + 1 KB -> 4 blocks (41 KB x 4 = 164 KB).
    occ = occupancy(A100, 128, 32, 40 * 1024)
    assert (occ.active_blocks_per_sm, occ.limiter) == (4, "shared memory")
    assert occupancy(A100, 128, 32, 40 * 1024 + 1).active_blocks_per_sm == 3  # one byte more: rounded up, 3 fit
    assert occupancy(load_gpu("T4"), 128, 32, 32 * 1024).active_blocks_per_sm == 2  # no reservation on Turing


def test_occupancy_limited_by_blocks_and_threads() -> None:
    small = occupancy(H200, 32, 16, 0)  # 32 blocks of 1 warp = 32 of 64 warps
    assert (small.fraction, small.limiter) == (0.5, "blocks")
    full = occupancy(H200, 1024, 32, 0)
    assert (full.fraction, full.active_blocks_per_sm, full.limiter) == (1.0, 2, "threads")
    rtx = occupancy(load_gpu("RTX4090"), 1024, 32, 0)  # 1536 threads per SM: one 1024-thread block
    assert rtx.active_blocks_per_sm == 1 and rtx.fraction == pytest.approx(2 / 3)


def test_launch_check_refuses_what_cuda_refuses_with_cuda_wording() -> None:
    assert launch_check(H200, (256, 1, 1), 0, 32) is None
    assert launch_check(H200, (1024, 2, 1), 0, 32).startswith("invalid configuration argument")
    assert launch_check(H200, (32, 1, 128), 0, 32).startswith("invalid configuration argument")
    assert launch_check(H200, (1024, 1, 1), 0, 128).startswith("too many resources requested for launch")
    assert launch_check(H200, (512, 1, 1), 0, 128) is None  # 128 x 512 = 65536 fits exactly
    assert launch_check(A100, (256, 1, 1), 170 * 1024, 32).startswith("invalid argument")
    assert launch_check(A100, (256, 1, 1), 100 * 1024, 32) is None  # above 48 KB: opt-in allowed
    assert launch_check(H200, (256, 1, 1), 0, 32, grid=(1, 70000, 1)).startswith("invalid configuration argument")



def test_a_launch_is_accepted_exactly_when_a_block_can_be_resident() -> None:
    """The launch check and the occupancy model agree on every shipped GPU: a block within the
    per-block register total that the register file, taken by warps in groups, cannot hold is
    refused (204 registers x 288 threads on an H200: nine warps of 6,656, room for eight), never
    accepted with no block resident (a trial "ok" with an infinite latency)."""
    refusal = launch_check(H200, (288, 1, 1), 0, 204)
    assert refusal is not None and refusal.startswith("too many resources requested for launch")
    for name in list_gpus():
        gpu = load_gpu(name)
        for registers in range(16, 256, 3):
            for threads in range(32, gpu.max_threads_per_block + 1, 32):
                accepted = launch_check(gpu, (threads, 1, 1), 0, registers) is None
                assert accepted == (occupancy(gpu, threads, registers, 0).active_blocks_per_sm > 0), (name, registers, threads)



def test_an_estimate_never_asks_for_a_launch_the_check_refuses() -> None:
    """The estimate caps registers as ptxas does under ``__launch_bounds__``: whatever the work
    per thread, the block it describes can be resident on every shipped GPU (it was capped by the
    per-block total only, so nine warps of 224 registers were estimated and then refused)."""
    for name in list_gpus():
        gpu = load_gpu(name)
        for threads in range(32, gpu.max_threads_per_block + 1, 32):
            for work in (1, 16, 64, 128, 512):
                estimate = estimate_resources(WorkProfile(bytes_read=1.0, bytes_written=1.0, flops=1.0,
                                                          work_per_thread=work), threads, 0)
                assert launch_check(gpu, (threads, 1, 1), 0, estimate["registers"]) is None, (name, threads, work)


# --- qualitative laws ---------------------------------------------------------------------------


def test_more_bytes_take_longer() -> None:
    times = [
        predict(H200, WorkProfile(bytes_read=8.0 * n, bytes_written=4.0 * n, flops=2.0 * n), _grid(n, 256), (256, 1, 1), REGS).latency_ms
        for n in (1 << 20, 1 << 22, 1 << 24, 1 << 26)
    ]
    assert all(a < b for a, b in zip(times, times[1:]))
    big = predict(H200, STREAM, _grid(N, 256), (256, 1, 1), REGS)
    assert big.bound == "memory" and big.term("memory").value > big.term("compute").value


def test_streaming_reaches_a_realistic_fraction_of_peak_bandwidth() -> None:
    best = predict(H200, replace(STREAM, access_bytes=16, work_per_thread=4), _grid(N, 256, 4), (256, 1, 1), REGS)
    gbs = 12.0 * N / (best.latency_ms * 1e6)
    assert 0.75 * H200.memory_bandwidth_gbs < gbs < H200.memory_bandwidth_gbs


def test_register_limited_occupancy_hurts_a_latency_bound_stream() -> None:
    full = predict(H200, STREAM, _grid(N, 256), (256, 1, 1), {"registers": 32})
    starved = predict(H200, STREAM, _grid(N, 256), (256, 1, 1), {"registers": 255})
    assert starved.occupancy.limiter == "registers" and starved.occupancy.fraction < 0.25
    assert starved.latency_ms > 1.5 * full.latency_ms
    assert "limited by registers" in starved.term("occupancy").explanation


def test_shared_memory_limited_occupancy_shows_up() -> None:
    pred = predict(H200, STREAM, _grid(N, 256), (256, 1, 1), {"registers": 32, "smem_bytes": 100 * 1024})
    assert pred.occupancy.limiter == "shared memory" and pred.occupancy.active_blocks_per_sm == 2
    assert pred.latency_ms > predict(H200, STREAM, _grid(N, 256), (256, 1, 1), REGS).latency_ms


def test_vector_width_helps_a_memory_bound_kernel() -> None:
    times = []
    for width in (1, 2, 4):
        profile = replace(STREAM, access_bytes=4 * width, work_per_thread=width)
        times.append(predict(H200, profile, _grid(N, 256, width), (256, 1, 1), REGS).latency_ms)
    assert times[0] > times[1] > times[2]


def test_misaligned_vector_access_loses_what_the_width_gained() -> None:
    aligned = predict(H200, replace(STREAM, access_bytes=16, work_per_thread=4), _grid(N, 256, 4), (256, 1, 1), REGS)
    misaligned = predict(H200, replace(STREAM, access_bytes=16, work_per_thread=4, coalescing=0.5), _grid(N, 256, 4), (256, 1, 1), REGS)
    scalar = predict(H200, STREAM, _grid(N, 256), (256, 1, 1), REGS)
    assert misaligned.latency_ms > scalar.latency_ms > aligned.latency_ms
    assert "2.0x the useful traffic" in misaligned.term("coalescing").explanation


def test_vector_width_stops_helping_when_the_grid_no_longer_fills_the_gpu() -> None:
    # 64K elements: float4 leaves 64 blocks of 256 threads for 132 SMs; the latency floor remains.
    n = 1 << 16
    small = WorkProfile(bytes_read=8.0 * n, bytes_written=4.0 * n, flops=2.0 * n)
    t1 = predict(H200, small, _grid(n, 256), (256, 1, 1), REGS)
    t4 = predict(H200, replace(small, access_bytes=16, work_per_thread=4), _grid(n, 256, 4), (256, 1, 1), REGS)
    assert t4.latency_ms == pytest.approx(t1.latency_ms, rel=0.1)
    assert t4.bound in ("latency", "launch")


def test_one_block_too_many_costs_a_whole_wave() -> None:
    # 1024 threads x 64 registers fill the register file: one block per SM, each saturating it.
    per_wave = occupancy(H200, 1024, 64, 0).active_blocks_per_sm * H200.sm_count
    assert per_wave == H200.sm_count
    exact = predict(H200, _compute_heavy(2e8, per_wave), (per_wave, 1, 1), (1024, 1, 1), {"registers": 64})
    over = predict(H200, _compute_heavy(2e8, per_wave + 1), (per_wave + 1, 1, 1), (1024, 1, 1), {"registers": 64})
    assert exact.bound == "compute"
    assert over.latency_ms > 1.8 * exact.latency_ms
    assert "tail efficiency 50%" in over.term("waves").explanation


def test_spilling_from_over_unrolling_gets_slower() -> None:
    fits = replace(STREAM, access_bytes=16, work_per_thread=8)
    spills = replace(STREAM, access_bytes=16, work_per_thread=16)
    t_fit = predict(H200, fits, _grid(N, 256, 8), (256, 1, 1), {"registers": 96}).latency_ms
    spilled = predict(H200, spills, _grid(N, 256, 16), (256, 1, 1),
                      {"registers": 255, "spill_store_bytes": 256, "spill_load_bytes": 256})
    assert spilled.latency_ms > t_fit
    assert spilled.term("spills") is not None and spilled.term("spills").value > 0


def test_bank_conflicts_make_a_shared_memory_transpose_slower() -> None:
    n = 8192 * 8192
    base = WorkProfile(bytes_read=4.0 * n, bytes_written=4.0 * n, flops=0, smem_accesses=2.0 * n, syncs_per_block=1)
    grid, block = (256, 256, 1), (32, 8, 1)
    padded = predict(H200, base, grid, block, {"registers": 24, "smem_bytes": 33 * 32 * 4})
    conflicted = predict(H200, replace(base, bank_conflict_ways=32.0), grid, block, {"registers": 24, "smem_bytes": 32 * 32 * 4})
    assert conflicted.latency_ms > 1.5 * padded.latency_ms
    assert conflicted.bound == "shared memory" and "32-way" in conflicted.term("shared memory").explanation


def test_uncoalesced_access_is_slower() -> None:
    grid, block = _grid(N, 256), (256, 1, 1)
    assert predict(H200, replace(STREAM, coalescing=0.125), grid, block, REGS).latency_ms > 4 * predict(H200, STREAM, grid, block, REGS).latency_ms


def _stencil_like(**changes: float) -> WorkProfile:
    """Every input element read 9 times (a 3x3 window), the re-reads served by the caches."""
    base = WorkProfile(bytes_read=9 * 4.0 * N, bytes_written=4.0 * N, flops=18.0 * N, l2_reuse=8 / 9, work_per_thread=4)
    return replace(base, **changes)


def test_read_only_requests_on_the_texture_path_are_slower_when_l1_bound() -> None:
    grid, block = _grid(N, 256, 4), (256, 1, 1)
    plain = predict(A100, _stencil_like(), grid, block, REGS)
    texture = predict(A100, _stencil_like(read_only_path=1.0), grid, block, REGS)
    assert texture.term("shared memory").value > 1.8 * plain.term("shared memory").value
    assert texture.latency_ms > plain.latency_ms
    assert "texture" in texture.term("shared memory").explanation


def test_re_reads_that_miss_l1_cost_l2_traffic() -> None:
    grid, block = _grid(N, 256, 4), (256, 1, 1)
    hits = predict(A100, _stencil_like(l1_hit_of_reuse=1.0), grid, block, REGS)
    misses = predict(A100, _stencil_like(l1_hit_of_reuse=0.0), grid, block, REGS)
    assert misses.term("cache").value > 3 * hits.term("cache").value
    assert misses.latency_ms >= hits.latency_ms
    assert "0% of those hit L1" in misses.term("cache").explanation


def test_distinct_offsets_count_overlapping_windows_once() -> None:
    from workbench.core.model.access import distinct_offsets

    assert distinct_offsets(1, 4, 15) == 15
    assert distinct_offsets(4, 2, 15) == 21  # rows 0..14, 2..16, 4..18, 6..20
    assert distinct_offsets(3, 16, 15) == 45  # windows 16 apart never overlap
    assert distinct_offsets(0, 1, 15) == 0


def test_conv2d_reuses_shared_rows_across_a_threads_outputs() -> None:
    from workbench.core.domain.templates import load_templates

    conv = load_templates()["conv2d"]
    problem = conv.resolve_problem(None)
    space = conv.space(problem)
    cfg = {"block_size_x": 32, "block_size_y": 4, "tile_size_x": 1, "read_only": 0, "use_padding": 0, "use_shmem": 1}
    one = conv.profile(problem, space.config({**cfg, "tile_size_y": 1}))
    three = conv.profile(problem, space.config({**cfg, "tile_size_y": 3}))
    # per output: 225 shared loads alone, 23 rows x 15 / 3 outputs = 115 with three rows per thread
    assert three.smem_accesses < 0.6 * one.smem_accesses
    tall = conv.profile(problem, space.config({**cfg, "block_size_y": 16, "tile_size_y": 2}))
    short = conv.profile(problem, space.config({**cfg, "block_size_y": 16, "tile_size_y": 1}))
    assert tall.smem_accesses == pytest.approx(short.smem_accesses, rel=0.05)  # 16-row strides never overlap 15 taps


def test_atomics_on_one_address_serialise() -> None:
    reads = WorkProfile(bytes_read=4.0 * N, bytes_written=4.0, flops=N, atomics=N, atomic_targets=1)
    spread = replace(reads, atomics=N / 256, atomic_targets=1)  # one atomic per block
    grid, block = _grid(N, 256), (256, 1, 1)
    contended = predict(H200, reads, grid, block, REGS)
    assert contended.bound == "atomics"
    assert contended.latency_ms > 10 * predict(H200, spread, grid, block, REGS).latency_ms


def test_fast_math_speeds_up_transcendental_heavy_code() -> None:
    heavy = WorkProfile(bytes_read=4.0 * N, bytes_written=4.0 * N, flops=20.0 * N, transcendentals=8.0 * N, work_per_thread=4)
    grid, block = _grid(N, 256, 4), (256, 1, 1)
    precise = predict(H200, heavy, grid, block, REGS)
    fast = predict(H200, replace(heavy, fast_math=True), grid, block, REGS)
    assert fast.latency_ms < 0.7 * precise.latency_ms
    assert precise.bound == "compute" and "precise" in precise.term("transcendentals").explanation


def test_syncs_and_extra_launches_add_time() -> None:
    grid, block = _grid(N, 256), (256, 1, 1)
    base = predict(H200, STREAM, grid, block, REGS).latency_ms
    assert predict(H200, replace(STREAM, syncs_per_block=50), grid, block, REGS).latency_ms > base
    assert predict(H200, replace(STREAM, extra_launches=2), grid, block, REGS).latency_ms == pytest.approx(base + 2 * H200.launch_overhead_us / 1e3)


def test_a_tiny_launch_is_bound_by_launch_overhead() -> None:
    tiny = WorkProfile(bytes_read=8.0 * 256, bytes_written=4.0 * 256, flops=512)
    pred = predict(H200, tiny, (1, 1, 1), (256, 1, 1), REGS)
    assert pred.bound == "launch" and pred.latency_ms >= H200.launch_overhead_us / 1e3


def test_a_faster_gpu_is_faster_on_the_same_stream() -> None:
    grid, block = _grid(N, 256), (256, 1, 1)
    times = [predict(load_gpu(name), STREAM, grid, block, REGS).latency_ms for name in ("T4", "A100_SXM", "H100", "H200")]
    assert all(a > b for a, b in zip(times, times[1:]))


def test_unresident_config_predicts_infinity_not_a_crash() -> None:
    pred = predict(H200, STREAM, (1, 1, 1), (2048, 1, 1), REGS)
    assert math.isinf(pred.latency_ms) and pred.bound == "launch failure"


def test_every_term_is_named_and_explained() -> None:
    """(The cost of a prediction is bench/core_speed.py's row ``predict``.)"""
    profile = replace(STREAM, smem_accesses=N, bank_conflict_ways=2, atomics=1000, syncs_per_block=2, transcendentals=N)
    res = {"registers": 40, "smem_bytes": 4096, "spill_store_bytes": 8, "spill_load_bytes": 8, "estimated": True}
    pred = predict(H200, profile, _grid(N, 256), (256, 1, 1), res)
    names = {t.name for t in pred.terms}
    assert {"occupancy", "waves", "memory", "coalescing", "compute", "shared memory", "atomics", "sync", "spills",
            "transcendentals", "launch", "estimated"} <= names
    assert all(t.explanation for t in pred.terms)
    assert pred.explain().splitlines()[0].startswith(f"{pred.latency_ms:.4g} ms")


def test_estimated_resources_say_so_and_spill_past_the_launch_bound() -> None:
    est = estimate_resources(replace(STREAM, work_per_thread=4), 256, 0)
    assert est["estimated"] is True and 16 <= est["registers"] <= 64 and est["spill_store_bytes"] == 0
    big = estimate_resources(replace(STREAM, work_per_thread=64), 1024, 0)
    assert big["registers"] == 64 and big["spill_store_bytes"] > 0


# --- quality ------------------------------------------------------------------------------------


def test_quality_counts_correct_digits() -> None:
    ref = np.linspace(-3.0, 3.0, 101)
    assert quality_from_error(0.0) == 1.0
    assert quality_of({"y": ref.copy()}, {"y": ref}) == 1.0
    f32 = quality_of({"y": ref.astype(np.float32)}, {"y": ref})
    f16 = quality_of({"y": ref.astype(np.float16)}, {"y": ref})
    assert 0.95 < f32 <= 1.0 and 0.35 < f16 < 0.55 and f16 < f32
    assert quality_from_error(math.nan) == 0.0 and quality_from_error(math.inf) == 0.0
    assert relative_error(np.array([1.0, np.nan]), np.array([1.0, 2.0])) == math.inf
    assert quality_of({}, {"y": ref}) == 0.0  # a missing output is no quality at all


def test_loads_take_issue_slots_from_fmas_where_the_fp32_lanes_equal_the_issue_width() -> None:
    """An FMA-bound kernel that adds one shared load per FMA: on a GPU with 32 FP32 lanes per
    scheduler (RTX 3090) every load costs an issue slot, so it slows down by about 2x; on the A100
    (16 lanes per scheduler, an FMA holds its pipe two clocks) the loads issue in between, for free."""
    grid, block = (4096, 1, 1), (256, 1, 1)
    res = {"registers": 32, "smem_bytes": 0}

    def latency(gpu_name: str, loads_per_fma: float) -> float:
        fmas = 2e9
        profile = WorkProfile(bytes_read=4e6, bytes_written=4e6, flops=2 * fmas, work_per_thread=4,
                              smem_accesses=loads_per_fma * fmas)
        return predict(load_gpu(gpu_name), profile, grid, block, res).term("compute").value

    assert latency("RTX3090", 1.0) / latency("RTX3090", 0.0) == pytest.approx(2.0, rel=0.05)
    assert latency("A100_PCIE", 1.0) / latency("A100_PCIE", 0.0) == pytest.approx(1.0, rel=0.02)
    assert latency("A100_PCIE", 2.0) / latency("A100_PCIE", 0.0) == pytest.approx(1.5, rel=0.05)


def test_a_block_that_does_not_fill_its_last_warp_wastes_those_lanes() -> None:
    # 16-thread blocks issue full warps with half the lanes idle: the same FMAs and shared loads take
    # twice the issue slots of 32-thread blocks with the same occupancy in warps (2 x the blocks).
    gpu = load_gpu("RTX_A4000")
    work = WorkProfile(bytes_read=4e6, bytes_written=4e6, flops=4e9, work_per_thread=8, smem_accesses=5e8)
    full = predict(gpu, work, (4096, 1, 1), (32, 1, 1), REGS)
    half = predict(gpu, work, (8192, 1, 1), (16, 1, 1), REGS)
    assert full.term("compute").value == pytest.approx(half.term("compute").value / 2, rel=0.05)
    assert half.latency_ms > 1.8 * full.latency_ms
    assert "50% of their warps' lanes" in half.term("compute").explanation
    assert "lanes" not in full.term("compute").explanation


def test_integer_and_branch_instructions_take_issue_slots() -> None:
    # A kernel issue-bound on FMAs and loads gets slower by the integer/branch work it must also
    # issue; without any, nothing changes (the default of every template that does not count it).
    gpu = load_gpu("RTX_A4000")
    work = WorkProfile(bytes_read=4e6, bytes_written=4e6, flops=4e9, work_per_thread=8, smem_accesses=1e9)
    plain = predict(gpu, work, (4096, 1, 1), (128, 1, 1), REGS)
    busy = predict(gpu, replace(work, other_instructions=1e9), (4096, 1, 1), (128, 1, 1), REGS)
    assert busy.term("compute").value == pytest.approx(plain.term("compute").value * 4.0 / 3.0, rel=0.02)
    assert busy.latency_ms > plain.latency_ms


def test_a_two_way_bank_conflict_fits_in_the_time_of_half_as_many_load_store_units() -> None:
    """A shared-memory-bound kernel: with 32 load/store units per SM (A100) a warp's access takes one
    clock and a 2-way conflict, a second pass through the banks, doubles it; with 16 (GA10x) the
    access holds the units two clocks, the second pass fits in them, and only a 4-way conflict costs."""
    grid, block = (4096, 1, 1), (256, 1, 1)
    base = WorkProfile(bytes_read=4e6, bytes_written=4e6, flops=1e8, work_per_thread=4, smem_accesses=4e9)

    def smem(gpu_name: str, ways: float) -> float:
        return predict(load_gpu(gpu_name), replace(base, bank_conflict_ways=ways), grid, block, REGS).term("shared memory").value

    assert load_gpu("A100_PCIE").lsu_per_sm == 32 and load_gpu("RTX_A6000").lsu_per_sm == 16
    assert smem("A100_PCIE", 2.0) / smem("A100_PCIE", 1.0) == pytest.approx(2.0, rel=0.02)
    assert smem("RTX_A6000", 2.0) / smem("RTX_A6000", 1.0) == pytest.approx(1.0, rel=0.02)
    assert smem("RTX_A6000", 4.0) / smem("RTX_A6000", 1.0) == pytest.approx(2.0, rel=0.02)
    # The same data-path work per clock, half the address throughput: conflict-free, twice the time.
    a6000 = load_gpu("RTX_A6000")
    as_32 = predict(replace(a6000, lsu_per_sm=32), base, grid, block, REGS).term("shared memory").value
    assert smem("RTX_A6000", 1.0) / as_32 == pytest.approx(2.0, rel=0.02)


def test_four_byte_global_loads_take_two_clocks_per_warp_with_sixteen_load_store_units() -> None:
    # An L1-bound stencil: a warp's 128 B of 4-byte loads is one clock of the 128 B/clock data path,
    # but 16 load/store units take two clocks for its 32 addresses; 16-byte loads (512 B, four clocks
    # of data) are not held back by the addresses.
    a6000 = load_gpu("RTX_A6000")
    grid, block = _grid(N, 256, 4), (256, 1, 1)
    as_32 = replace(a6000, lsu_per_sm=32)
    narrow = _stencil_like()
    wide = _stencil_like(access_bytes=16)
    assert (predict(a6000, narrow, grid, block, REGS).term("shared memory").value
            == pytest.approx(2.0 * predict(as_32, narrow, grid, block, REGS).term("shared memory").value, rel=0.02))
    assert (predict(a6000, wide, grid, block, REGS).term("shared memory").value
            == pytest.approx(predict(as_32, wide, grid, block, REGS).term("shared memory").value, rel=0.02))


def test_a_gpu_description_without_load_store_units_gets_its_architectures_count(tmp_path) -> None:
    # Descriptions written before the field keep loading, with the count of their architecture.
    for source, compute_capability, expected in (("T4", [7, 5], 16), ("A100_PCIE", [8, 0], 32), ("L4", [8, 9], 16)):
        with open(f"{GPU_DIR}/{source}.json", encoding="utf-8") as handle:
            data = json.load(handle)
        data["name"] = f"Older{source}"
        data["compute_capability"] = compute_capability
        del data["lsu_per_sm"]
        folder = tmp_path / source  # one folder each: a folder's descriptions are read once
        folder.mkdir()
        (folder / "older.json").write_text(json.dumps(data))
        assert load_gpu(f"Older{source}", directory=str(folder)).lsu_per_sm == expected


@pytest.mark.parametrize("bad", [0, 0.5, 16.7, float("nan"), float("inf"), -16])
def test_a_gpu_description_with_an_impossible_count_is_refused_in_one_line(tmp_path, bad) -> None:
    with open(f"{GPU_DIR}/T4.json", encoding="utf-8") as handle:
        data = json.load(handle)
    data["name"] = "BadT4"
    data["lsu_per_sm"] = bad
    (tmp_path / "bad.json").write_text(json.dumps(data))  # json writes NaN and Infinity, and json.load reads them
    with pytest.raises(WorkbenchError, match="lsu_per_sm"):
        load_gpu("BadT4", directory=str(tmp_path))


def test_a_staging_round_trip_waits_behind_the_waves_memory_traffic_at_most_until_it_drains() -> None:
    """One block per SM waits out its whole staging wait (no other block computes meanwhile), so the
    staging term is the round trips themselves. On an idle memory system they take the unloaded
    latency; behind the wave's other L2/DRAM traffic they queue (u / (1 - u) more, u the memory
    pipe's busy share of the wave), but never longer than the pipe takes to serve every byte in
    flight: a memory-bound wave's staging stays finite."""
    gpu = load_gpu("RTX_A4000")
    grid, block = (4096, 1, 1), (256, 1, 1)
    base = WorkProfile(bytes_read=1e6, bytes_written=1e6, flops=2e9, work_per_thread=4, smem_accesses=2e8,
                       syncs_per_block=1, staging_rounds=10)
    idle = 4096 / gpu.sm_count * 10 * gpu.dram_latency_ns * 1e-6  # ms: 10 unloaded DRAM round trips per block

    def loaded(bytes_read: float) -> float:
        p = predict(gpu, replace(base, bytes_read=bytes_read), grid, block, {"registers": 32, "smem_bytes": 60_000})
        assert p.occupancy.active_blocks_per_sm == 1
        return p.term("staging").value / idle

    assert loaded(1e5) == pytest.approx(1.0, abs=0.1)  # memory nearly idle
    assert loaded(3e7) > 1.3 * loaded(1e5)  # a third of the wave busy: the round trips queue
    assert loaded(1e8) < loaded(3e8) * 1.001 and loaded(1e9) == pytest.approx(loaded(3e8))  # bounded by the drain
    assert loaded(1e9) < 5.0


def test_spill_traffic_in_flight_lengthens_the_queue_a_staging_round_trip_can_find() -> None:
    """The queue ahead of a staging load holds every request the wave has in flight, register
    spills' local-memory stores and reloads included. On a memory-bound wave (the drain bound
    binds) the staging wait grows with the spill bytes in flight, and stays finite."""
    gpu = load_gpu("RTX_A4000")
    grid, block = (4096, 1, 1), (256, 1, 1)
    base = WorkProfile(bytes_read=1e9, bytes_written=1e6, flops=2e9, work_per_thread=4, smem_accesses=2e8,
                       syncs_per_block=1, staging_rounds=10)
    idle = 4096 / gpu.sm_count * 10 * gpu.dram_latency_ns * 1e-6  # ms: 10 unloaded DRAM round trips per block

    def staging(spill: int) -> float:
        resources = {"registers": 32, "smem_bytes": 60_000, "spill_store_bytes": spill, "spill_load_bytes": spill}
        p = predict(gpu, base, grid, block, resources)
        assert p.occupancy.active_blocks_per_sm == 1
        return p.term("staging").value / idle

    # Each thread has 8 loads of 4 B in flight (two per output, 4 outputs): 32 B. With 32 B of spill
    # stores and 32 B of reloads per iteration, the bytes ahead of a round trip triple.
    assert staging(0) > 1.5  # memory-bound: the round trips already queue to the drain bound
    assert staging(32) > 1.2 * staging(0)
    assert staging(128) > staging(32)
    assert math.isfinite(staging(1024)) and staging(1024) < 100.0
    # a thread has at most 32 requests in flight: beyond 32 spilled words the queue stops growing
    assert staging(4096) == pytest.approx(staging(1024), rel=0.02)


def test_the_dram_traffic_a_config_reports_counts_what_its_memory_term_counts() -> None:
    """The simulator's dram_mb (the roofline's traffic) was the template's bytes alone: a config
    spilling 12 GB of local-memory traffic, or fetching whole sectors for scattered accesses, sat
    on the roofline where the config without them does, far on the compute side of the ridge."""
    plain = predict(H200, STREAM, _grid(N, 256), (256, 1, 1), REGS)
    assert plain.dram_bytes == pytest.approx(STREAM.bytes_read + STREAM.bytes_written)
    spilled = predict(H200, STREAM, _grid(N, 256), (256, 1, 1), {**REGS, "spill_store_bytes": 64, "spill_load_bytes": 64})
    assert spilled.dram_bytes > plain.dram_bytes * 1.5  # a share of the spill traffic reaches DRAM
    scattered = predict(H200, replace(STREAM, coalescing=0.25), _grid(N, 256), (256, 1, 1), REGS)
    assert scattered.dram_bytes == pytest.approx(4 * plain.dram_bytes)  # whole sectors for a quarter used
    assert math.isnan(predict(H200, STREAM, _grid(N, 256), (256, 1, 1), {"registers": 255, "smem_bytes": 10**7}).dram_bytes)


def test_the_model_adds_its_terms_left_to_right_on_every_python() -> None:
    """Python 3.12's sum() of floats is compensated, so the model's latencies differed from 3.11's
    in their last digits and a simulated run repeated exactly on one version only."""
    from workbench.core.model.perfmodel import _sum_in_order

    assert _sum_in_order([1e16, 1.0, -1e16]) == 0.0  # (compensated: 1.0)
    assert _sum_in_order([0.1, 0.2, 0.3]) == (0.1 + 0.2) + 0.3


@pytest.mark.parametrize("name", ["H200", "A100_SXM", "RTX_A4000"])
def test_a_working_set_that_fits_in_l2_is_still_read_from_dram(name) -> None:
    """The CUDA backend overwrites L2 before every timed launch, so the model predicts cold-cache
    times: a streaming kernel whose inputs would fit in L2 never moves its bytes faster than DRAM
    bandwidth (a warm-cache figure read above 100% of the peak the window shows)."""
    gpu = load_gpu(name)
    n = 1 << 20  # 4 MiB in, 4 MiB out: well inside every shipped GPU's L2
    profile = WorkProfile(bytes_read=4 * n, bytes_written=4 * n, flops=n, work_per_thread=1)
    p = predict(gpu, profile, (n // 256, 1, 1), (256, 1, 1), REGS)
    assert p.dram_bytes == pytest.approx(8 * n)
    assert p.latency_ms * 1e-3 >= p.dram_bytes / gpu.peak_bandwidth
    assert "L2" not in p.term("memory").explanation


def test_the_bound_takes_the_slower_of_the_overlapping_compute_pipes_not_their_sum() -> None:
    """The wave time overlaps the FMA and the transcendental pipes; the bound added them, and called
    87 of softmax's 250 configs compute-bound where memory took twice as long as either."""
    from types import SimpleNamespace

    from workbench.core.model.perfmodel import _bound

    totals = {"dram": 31.8, "l2": 17.2, "compute": 15.4, "sfu": 16.5, "smem": 5.0}
    busy = SimpleNamespace(mem_saturation=0.9, issue_saturation=0.9)
    assert _bound(totals, t_atomic=0.0, t_launch=0.0, t_serial=0.0, kernel=40.0, main=busy) == "memory"
    assert _bound({**totals, "sfu": 35.0}, t_atomic=0.0, t_launch=0.0, t_serial=0.0, kernel=40.0, main=busy) == "compute"
