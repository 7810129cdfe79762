"""Mechanisms behind the conv2d model: loads shared between a tile's outputs when the source lets
the compiler see it, the staging wait before a block's barrier, and shared tiles limiting occupancy
in estimate mode."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from workbench.core.model.gpus import load_gpu
from workbench.core.model.perfmodel import closed_loop_period, estimate_resources, predict
from workbench.core.domain.templates import WorkProfile, load_templates

from cpu_cuda import needs_gxx, run_configs
from test_templates_more import _assert_matches

K = ("block_size_x", "block_size_y", "tile_size_x", "tile_size_y", "read_only", "use_padding", "use_shmem")


@pytest.fixture(scope="module")
def conv():
    return load_templates()["conv2d"]


def _config(conv, values, problem=None):
    return conv.space(problem or conv.problem).config(dict(zip(K, values)))


def test_global_loads_are_shared_between_outputs_only_when_the_tiles_cover_the_image(conv) -> None:
    p = conv.problem
    exact = conv.profile(p, _config(conv, (128, 1, 1, 4, 0, 0, 0)))  # 4096 rows % 4 == 0, 4096 % 128 == 0
    threads = (4096 // 128) * (4096 // 4) * 128
    assert exact.bytes_read == 4 * threads * (3 + 15) * 15  # rows y..y+3 share 15 filter rows: 18 x 15 loads
    clamped = conv.profile(p, _config(conv, (128, 1, 1, 3, 0, 0, 0)))  # 4096 % 3 != 0: clamps, a load per tap
    assert clamped.bytes_read == 4 * (4096 // 128) * -(-4096 // 3) * 128 * 3 * 225
    ldg = conv.profile(p, _config(conv, (128, 1, 1, 4, 1, 0, 0)))  # __ldg loads are not merged
    assert ldg.bytes_read == 4 * threads * 4 * 225


@needs_gxx
def test_exact_tiling_without_clamps_computes_the_reference_on_cpu(conv, tmp_path: Path) -> None:
    problem = conv.resolve_problem({"image_width": 64, "image_height": 16, "filter_width": 15, "filter_height": 15})
    inputs = conv.make_inputs(problem, np.random.default_rng(3))
    expected = conv.reference(inputs, problem)
    cases = [(32, 1, 2, 4, 0, 0, 0), (16, 2, 4, 2, 0, 0, 0), (32, 1, 2, 4, 1, 0, 0)]
    configs = [_config(conv, values, problem) for values in cases]
    for values, outputs in zip(cases, run_configs(conv, problem, configs, inputs, tmp_path)):
        _assert_matches(conv, outputs, expected, f"conv2d {values}")


def test_staging_wait_shows_when_few_blocks_are_resident() -> None:
    gpu = load_gpu("RTX_A4000")
    grid, block = (8, 1024, 1), (256, 1, 1)
    base = WorkProfile(bytes_read=4e8, bytes_written=6.7e7, flops=7.5e9, work_per_thread=8, smem_accesses=1.2e9,
                       syncs_per_block=1, l2_reuse=0.7, staging_rounds=18)

    def run(profile: WorkProfile, smem: int):
        return predict(gpu, profile, grid, block, {"registers": 32, "smem_bytes": smem})

    crowded = run(base, 38_000)  # 2 blocks per SM: one stages while the other computes
    roomy = run(base, 4_000)  # 6 blocks per SM (thread limit): the wait hides
    none = run(replace(base, staging_rounds=0), 38_000)
    assert crowded.occupancy.active_blocks_per_sm == 2 and roomy.occupancy.active_blocks_per_sm == 6
    assert crowded.term("staging").value > 0.05 * crowded.latency_ms
    assert roomy.term("staging").value < 0.01 * roomy.latency_ms
    assert none.term("staging") is None and crowded.latency_ms > none.latency_ms


def test_estimated_resources_see_the_shared_tile_the_source_declares(conv) -> None:
    shm = conv.profile(conv.problem, _config(conv, (256, 1, 2, 4, 0, 0, 1)))
    assert shm.static_smem_bytes == 4 * 18 * (512 + 14)
    res = estimate_resources(shm, 256, 0)
    assert res["smem_bytes"] == shm.static_smem_bytes and res["estimated"]
    occupancy = predict(load_gpu("RTX_A4000"), shm, conv.grid(conv.problem, _config(conv, (256, 1, 2, 4, 0, 0, 1))),
                        (256, 1, 1), res).occupancy
    assert occupancy.limiter == "shared memory" and occupancy.active_blocks_per_sm == 2


def test_staging_wait_shows_at_five_resident_blocks_when_a_short_block_stages_a_tall_halo(conv) -> None:
    # A 128x1 block with a 2x4 tile on shared memory stages 18 halo rows, one round trip each, while
    # its compute is short: five resident blocks are often all waiting at once. The deterministic
    # best case (the wait hidden whenever (S + C) / B <= C) called this free; the closed loop does
    # not, and a 128x2 block (11 rows per thread for twice the work) waits less per output. (A small
    # share: each block's pipe time C includes the two clocks per warp access of the A4000's 16
    # load/store units, which the others' work hides the wait behind.)
    gpu = load_gpu("RTX_A4000")

    def staging_share(values: tuple[int, ...]) -> float:
        config = _config(conv, values)
        profile = conv.profile(conv.problem, config)
        block = conv.block(conv.problem, config)
        p = predict(gpu, profile, conv.grid(conv.problem, config), block, estimate_resources(profile, int(np.prod(block)), 0))
        return p.term("staging").value / p.latency_ms

    short = staging_share((128, 1, 2, 4, 0, 0, 1))
    taller = staging_share((128, 2, 2, 4, 0, 0, 1))
    assert short > 0.01 and taller < short


def test_closed_loop_period_lies_between_hidden_and_serial() -> None:
    assert closed_loop_period(1.0, 0.0, 4) == pytest.approx(1.0)
    assert closed_loop_period(1.0, 3.0, 1) == pytest.approx(4.0)  # one block: wait, then compute
    for blocks in (2, 4, 8):
        period = closed_loop_period(1.0, 3.0, blocks)
        assert max(1.0, 4.0 / blocks) <= period <= (3.0 + blocks) / blocks
    assert closed_loop_period(1.0, 3.0, 8) < closed_loop_period(1.0, 3.0, 4) < closed_loop_period(1.0, 3.0, 2)


def test_short_blocks_issue_more_staging_work_per_output(conv) -> None:
    # One row of threads stages the whole halo height row by row: per output it runs several times
    # the staging steps of a two-row block with the same tile; without shared memory there are none.
    def per_output(values: tuple[int, ...]) -> float:
        return conv.profile(conv.problem, _config(conv, values)).other_instructions / (4096 * 4096)

    short, taller = per_output((128, 1, 1, 4, 0, 0, 1)), per_output((128, 2, 1, 4, 0, 0, 1))
    assert short > 1.4 * taller > 0
    assert per_output((128, 1, 1, 4, 0, 0, 0)) == 0


def test_warps_that_run_both_parts_of_the_unrolled_staging_loop_wait_twice_per_row(conv) -> None:
    # The staging column loop is unrolled by 4 with a runtime trip count: a remainder part of n mod 4
    # copies, then the unrolled body. A 128-wide block staging 398 columns (3x4 tile) gives lanes 0-13
    # four elements (the body) and the others three (the remainder): warp 0 runs both parts, one
    # after the other, two round trips per row. At 270 columns (2x4 tile: three or two elements)
    # every lane stays in the remainder part: one round trip, as before.
    both = conv.profile(conv.problem, _config(conv, (128, 1, 3, 4, 0, 0, 1)))
    one = conv.profile(conv.problem, _config(conv, (128, 1, 2, 4, 0, 0, 1)))
    rows = 4 + 14  # a one-row block stages the tile height plus the 14-row halo, row by row
    assert one.staging_rounds == rows
    assert both.staging_rounds == 2 * rows
    # The divergent warp also issues both parts: 3 remainder copies + 4 in the body per row.
    threads = math.ceil(4096 / 384) * (4096 // 4) * 128
    assert both.other_instructions == threads * rows * (4 * (3 + 4) + 10)
    # Within one part the loads overlap: five elements (1 + a body of 4) are two round trips, four one.
    assert conv.profile(conv.problem, _config(conv, (128, 1, 4, 4, 0, 0, 1))).staging_rounds == 2 * rows
    assert conv.profile(conv.problem, _config(conv, (16, 4, 4, 1, 0, 0, 1))).staging_rounds == math.ceil(18 / 4) * 2


def test_overhanging_tiles_compute_the_outputs_they_discard(conv) -> None:
    exact = conv.profile(conv.problem, _config(conv, (128, 1, 2, 4, 0, 0, 0)))  # 256-wide tiles divide 4096
    over = conv.profile(conv.problem, _config(conv, (256, 1, 3, 4, 0, 0, 0)))  # 768-wide: 6 tiles = 4608 columns
    assert exact.flops == 2 * 225 * 4096 * 4096
    assert over.flops == pytest.approx(exact.flops * 4608 / 4096)
    assert any("discarded" in note for note in over.notes)


def test_read_only_changes_nothing_on_the_shared_memory_path(conv) -> None:
    # With shared memory only the staging loads touch global memory, and NVVM emits ld.global.nc
    # for them with or without __ldg: the same code must model to the same time.
    plain = conv.profile(conv.problem, _config(conv, (128, 2, 1, 3, 0, 0, 1)))
    ldg = conv.profile(conv.problem, _config(conv, (128, 2, 1, 3, 1, 0, 1)))
    assert replace(plain, notes=()) == replace(ldg, notes=())
    without = conv.profile(conv.problem, _config(conv, (128, 2, 1, 3, 0, 0, 0)))
    assert without.read_only_path == 0.0  # without shared memory, plain loads stay on the LSU path


def test_closed_loop_period_bounds_and_infinite_inputs() -> None:
    for service in (0.1, 1.0, 3.0):
        for delay in (0.0, 0.5, 2.0, 10.0):
            assert closed_loop_period(service, delay, 1) == pytest.approx(delay + service)
            for jobs in (2, 4, 16):
                period = closed_loop_period(service, delay, jobs)
                assert max(service, (delay + service) / jobs) <= period * (1 + 1e-12)
                assert period <= (delay / jobs + service) * (1 + 1e-12)
    assert closed_loop_period(1.0, math.inf, 4) == math.inf  # no ZeroDivisionError
    assert closed_loop_period(math.inf, 1.0, 4) == math.inf  # no NaN


def test_sixteen_wide_blocks_of_two_rows_pay_their_bank_conflict_only_with_32_load_store_units(conv) -> None:
    # A 16x2 block's warp spans two rows of the shared tile: a 2-way conflict on every tap load. The
    # A100 (32 load/store units per SM) pays it; an RTX A6000 (16) takes two clocks per warp access
    # anyway, so the block runs as fast as a 32x2 block there.
    def latency(gpu: str, bx: int) -> float:
        config = _config(conv, (bx, 2, 2, 4, 0, 0, 1))
        profile = conv.profile(conv.problem, config)
        block = conv.block(conv.problem, config)
        resources = estimate_resources(profile, int(np.prod(block)), 0)
        return predict(load_gpu(gpu), profile, conv.grid(conv.problem, config), block, resources).latency_ms

    assert conv.profile(conv.problem, _config(conv, (16, 2, 2, 4, 0, 0, 1))).bank_conflict_ways > 1.9
    assert latency("A100_PCIE", 16) > 1.3 * latency("A100_PCIE", 32)
    assert latency("RTX_A6000", 16) == pytest.approx(latency("RTX_A6000", 32), rel=0.05)


def test_blocks_stage_together_when_instruction_issue_binds_and_in_turns_when_a_queue_binds() -> None:
    """Two waves with the same pipe times, swapped between instruction issue and the shared-memory
    pipe, and the same staging wait. Issue slots are shared among all ready warps, so when issue
    binds, identical resident blocks finish together and stage together: each block pays its whole
    wait over the B resident blocks (S / B per block). A queue served in arrival order staggers them,
    and the same wait hides behind the other blocks' work (closed loop)."""
    gpu = load_gpu("A100_PCIE")
    grid, block = (8, 1024, 1), (256, 1, 1)
    base = WorkProfile(bytes_read=4e8, bytes_written=6.7e7, flops=7.8e9, work_per_thread=8, smem_accesses=0.86e9,
                       syncs_per_block=1, l2_reuse=0.7, staging_rounds=18)
    issue_bound = base  # FP32 issue about twice the shared-memory pipe
    queue_bound = replace(base, flops=3.9e9, smem_accesses=1.83e9)  # the other way round

    def run(profile: WorkProfile):
        return predict(gpu, profile, grid, block, {"registers": 32, "smem_bytes": 20_000})

    issue, queue = run(issue_bound), run(queue_bound)
    assert (issue.bound, queue.bound) == ("compute", "shared memory")
    unstaged = [run(replace(p, staging_rounds=0)).latency_ms for p in (issue_bound, queue_bound)]
    assert unstaged[0] == pytest.approx(unstaged[1], rel=0.01)  # the same wave time without staging
    b = issue.occupancy.active_blocks_per_sm
    assert b == queue.occupancy.active_blocks_per_sm == 7
    # lockstep: the whole wait S once per round of B blocks on each SM, the last round too
    loaded = float(re.search(r"each ([0-9.]+)x the idle latency", issue.term("staging").explanation).group(1))
    wait = 18 * gpu.dram_latency_ns * 1e-6 * (0.3 + 0.7 * 0.4) * loaded  # ms per block
    rounds = math.ceil(8 * 1024 / (b * gpu.sm_count))
    assert issue.term("staging").value == pytest.approx(rounds * wait, rel=0.01)
    assert "stage together" in issue.term("staging").explanation
    assert queue.term("staging").value < 0.05 * issue.term("staging").value  # staggered: hidden
    assert issue.latency_ms > 1.1 * queue.latency_ms


def test_a_grid_smaller_than_one_wave_waits_its_whole_staging_time_in_lockstep() -> None:
    """One block per SM, far fewer than the B that fit: in lockstep every SM still waits the whole
    staging time once (not S / B, which holds per block only when B blocks share the SM)."""
    gpu = load_gpu("A100_PCIE")
    profile = WorkProfile(bytes_read=4e8 / 76, bytes_written=6.7e7 / 76, flops=7.8e9 / 76, work_per_thread=8,
                          smem_accesses=0.86e9 / 76, syncs_per_block=1, l2_reuse=0.7, staging_rounds=18)
    small = predict(gpu, profile, (gpu.sm_count, 1, 1), (256, 1, 1), {"registers": 32, "smem_bytes": 20_000})
    twice = predict(gpu, replace(profile, staging_rounds=36), (gpu.sm_count, 1, 1), (256, 1, 1),
                    {"registers": 32, "smem_bytes": 20_000})
    assert small.bound == "compute" and "stage together" in small.term("staging").explanation
    loaded = float(re.search(r"each ([0-9.]+)x the idle latency", small.term("staging").explanation).group(1))
    wait = 18 * gpu.dram_latency_ns * 1e-6 * (0.3 + 0.7 * 0.4) * loaded
    assert small.term("staging").value == pytest.approx(wait, rel=0.01)
    assert twice.term("staging").value == pytest.approx(2 * small.term("staging").value, rel=0.05)
