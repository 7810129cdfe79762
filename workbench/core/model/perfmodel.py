"""The performance model: occupancy, launch limits and a latency prediction for one launch.

Pure functions of (GpuSpec, WorkProfile, launch geometry, resource usage), cheap enough (tens of
microseconds) for search strategies to rank or prune thousands of configs before measuring, the way
Triton's ``perf_model`` + ``top_k`` does. Every factor that changes the result is returned as a named
:class:`Term` so the GUI and ``show`` can say *why* ("limited by registers: 50% occupancy").

The model, in one paragraph (details in ``docs/simulator.md``): the grid runs in waves of
``active_blocks_per_sm x sm_count`` blocks. Within a wave, DRAM bandwidth follows Little's law
(bytes in flight = resident threads x access width x independent loads per thread; the device
needs ``bandwidth x latency`` bytes in flight to saturate), the FP32 rate follows how many
independent warps each scheduler can issue from (occupancy x ILP), and the SM's L1/shared-memory
data path carries shared accesses (32 banks per clock, divided by the bank-conflict degree) and
every global access (128 B per clock), no faster than its load/store units take the threads'
addresses (32 per clock, 16 on Turing, GA10x and Ada: there a 2-way bank conflict costs nothing
extra). L2 carries DRAM traffic plus the re-reads L1 misses. The slowest pipe bounds the wave, the
others add partially (imperfect overlap). The partial last wave is modelled with its own (smaller)
parallelism, which is the tail effect. A staging wait before a barrier hides behind the other
resident blocks' work as far as a closed loop of blocks allows, and not at all where instruction
issue binds (identical blocks sharing the schedulers stay in step and wait together). Atomics
(throughput and same-address serialisation), barriers, register spills (local-memory traffic),
serial phases and launch overhead add on top.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from workbench.core.model.gpus import GpuSpec
from workbench.core.domain.templates import WorkProfile

# Model constants that are not per-GPU (sources and reasoning in docs/simulator.md).
_SMOOTH_K = 6.0  # sharpness of the soft minimum min(x, 1) used for saturation curves
_FMA_LATENCY_CYCLES = 6.0  # dependent FP32 latency plus the address/loop work around it
_SMEM_WARPS_NEEDED = 12.0  # warp-instructions in flight per SM to hide ~30-cycle smem latency
_L2_LATENCY_FRACTION = 0.4  # L2 hit latency relative to DRAM latency
_L2_TO_SM_BYTES_PER_CLOCK = 64.0  # L2 -> SM bytes per clock per SM (caps a few busy SMs)
_OVERLAP = 0.25  # share of the non-dominant pipe times that does not overlap with the dominant one
_PRECISE_TRANSCENDENTAL_FLOPS = 24.0  # expf/tanhf without fast math: range reduction + polynomial
_FAST_TRANSCENDENTAL_FLOPS = 2.0  # __expf: one multiply around the SFU ex2
_SYNC_BASE_CYCLES = 20.0  # __syncthreads() cost for one warp
_SYNC_PER_WARP_CYCLES = 4.0  # more warps -> longer wait for the slowest one
_SHARED_ATOMIC_SAME_ADDR_CYCLES = 2.0  # shared-memory atomics to one address serialise
_SPILL_DRAM_FRACTION = 0.25  # share of local-memory (spill) traffic that misses L1 and L2
_SPILL_EFFICIENCY = 0.5  # spills are dependent, latency-bound accesses: half the L2 bandwidth
_MAX_REQUESTS_IN_FLIGHT = 32.0  # a thread's outstanding memory requests (loads, spill stores and reloads)
_LOCAL_WORD_BYTES = 4.0  # a spill store or reload moves one register (4 B) per request
_MIN_IDLE_SHARE = 1e-3  # numeric guard: a wave with memory work only has its memory pipe busy all the time
# Read-only (__ldg, ld.global.nc) requests take the texture pipeline of the unified L1/texture unit,
# which returns a quad of 4-byte texels per texture unit per clock (4 units per SM since Volta):
# 64 B per clock, half of the LSU path's 128 B line per clock.
_TEX_PATH_RATE = 0.5


@dataclass(frozen=True)
class Occupancy:
    """Resident blocks and warps per SM and what limits them (CUDA occupancy calculator rules).

    ``limits`` gives the blocks per SM each resource alone would allow (``threads``, ``blocks``,
    ``registers``, ``shared memory``); ``limiter`` is the one that binds.
    """

    fraction: float
    active_blocks_per_sm: int
    active_warps_per_sm: int
    limiter: str
    limits: Mapping[str, int] = field(default_factory=dict)

    def explain(self) -> str:
        return (
            f"limited by {self.limiter}: {self.fraction:.0%} occupancy "
            f"({_count(self.active_blocks_per_sm, 'block')}, {_count(self.active_warps_per_sm, 'warp')} per SM)"
        )


@dataclass(frozen=True)
class Term:
    """One named factor of a prediction. ``unit`` is ``ms`` for time terms, else what ``value`` is."""

    name: str
    value: float
    explanation: str
    unit: str = "ms"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "unit": self.unit, "explanation": self.explanation}


@dataclass(frozen=True)
class Prediction:
    """Predicted latency of one launch, its terms, and what bounds it.

    ``bound`` is one of ``memory``, ``compute``, ``shared memory``, ``atomics``, ``latency``
    (not enough parallelism to hide memory or pipeline latency), ``launch`` (overhead dominates),
    ``serial``, or ``launch failure`` (the config cannot be resident: ``latency_ms`` is inf).
    """

    latency_ms: float
    terms: tuple[Term, ...]
    bound: str
    occupancy: Occupancy
    #: Bytes the launch moves to and from DRAM (caches start cold, as the CUDA backend times): what the template reads and writes
    #: in whole sectors (a poorly coalesced access fetches more than it uses), less what L2 serves
    #: again, plus the spill traffic that misses L1 and L2: the memory term's own figure (NaN when no
    #: block is resident).
    dram_bytes: float = math.nan

    def term(self, name: str) -> Term | None:
        for term in self.terms:
            if term.name == name:
                return term
        return None

    def explain(self) -> str:
        """A few lines a person can read: the bound, then every term."""
        lines = [f"{self.latency_ms:.4g} ms, {self.bound}-bound; {self.occupancy.explain()}"]
        lines += [f"  {t.name}: {t.explanation}" for t in self.terms]
        return "\n".join(lines)


def _count(n: int, noun: str) -> str:
    """``1 block``, ``8 blocks``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _ceil_to(value: float, unit: int) -> int:
    return int(math.ceil(value / unit) * unit) if unit > 0 else int(math.ceil(value))


def _soft_min1(x: float) -> float:
    """A smooth ``min(x, 1)``: linear for small x, saturating at 1 (0.89 at x = 1)."""
    if x <= 0.0:
        return 0.0
    return x / (1.0 + x**_SMOOTH_K) ** (1.0 / _SMOOTH_K)


def _prod(dims: Sequence[int]) -> int:
    out = 1
    for d in dims:
        out *= int(d)
    return out


def occupancy(gpu: GpuSpec, threads_per_block: int, registers_per_thread: int, smem_per_block: int) -> Occupancy:
    """Resident blocks per SM by the CUDA occupancy calculator rules.

    Registers are allocated per warp in units of ``register_alloc_unit`` and warps in groups of
    ``warp_alloc_granularity``; shared memory per block is rounded up to ``shared_alloc_unit`` after
    adding the runtime's reserved ``shared_reserved_per_block``. A block that cannot be resident at
    all gives ``active_blocks_per_sm == 0`` (the launch would fail; see :func:`launch_check`).
    """
    threads = int(threads_per_block)
    if threads <= 0 or threads > gpu.max_threads_per_block:
        return Occupancy(0.0, 0, 0, "threads", {"threads": 0})
    warps = math.ceil(threads / gpu.warp_size)
    limits: dict[str, int] = {
        "threads": gpu.max_warps_per_sm // warps,
        "blocks": gpu.max_blocks_per_sm,
    }
    regs = int(registers_per_thread)
    if regs > 0:
        regs_per_warp = _ceil_to(regs * gpu.warp_size, gpu.register_alloc_unit)
        if regs > gpu.max_registers_per_thread or regs_per_warp * warps > gpu.max_registers_per_block:
            limits["registers"] = 0
        else:
            warps_by_regs = gpu.registers_per_sm // regs_per_warp
            warps_by_regs -= warps_by_regs % gpu.warp_alloc_granularity
            limits["registers"] = warps_by_regs // warps
    smem = int(smem_per_block)
    if smem > gpu.shared_per_block_optin:
        limits["shared memory"] = 0
    else:
        per_block = _ceil_to(smem + gpu.shared_reserved_per_block, gpu.shared_alloc_unit)
        limits["shared memory"] = gpu.shared_per_sm // per_block if per_block > 0 else gpu.max_blocks_per_sm
    active = min(limits.values())
    limiter = next(name for name in ("threads", "blocks", "registers", "shared memory") if limits.get(name) == active)
    active_warps = active * warps
    return Occupancy(active_warps / gpu.max_warps_per_sm, active, active_warps, limiter, limits)


def launch_check(
    gpu: GpuSpec,
    block: Sequence[int],
    smem: int,
    registers: int,
    grid: Sequence[int] | None = None,
) -> str | None:
    """Why a real device would refuse this launch, worded like the CUDA error it would raise; None if fine.

    Shared memory above the 48 KiB default but within the opt-in maximum is accepted: backends opt
    in (``cudaFuncAttributeMaxDynamicSharedMemorySize``) before launching.
    """
    dims = [int(d) for d in block] + [1] * (3 - len(block))
    threads = _prod(dims)
    if threads <= 0 or min(dims) <= 0:
        return f"invalid configuration argument (block {dims[0]}x{dims[1]}x{dims[2]} has no threads)"
    if threads > gpu.max_threads_per_block or dims[0] > 1024 or dims[1] > 1024 or dims[2] > 64:
        return (
            f"invalid configuration argument (block {dims[0]}x{dims[1]}x{dims[2]} = {threads} threads; "
            f"the {gpu.name} allows at most {gpu.max_threads_per_block} per block, z <= 64)"
        )
    if grid is not None:
        g = [int(d) for d in grid] + [1] * (3 - len(grid))
        if min(g) <= 0 or g[0] > 2**31 - 1 or g[1] > 65535 or g[2] > 65535:
            return f"invalid configuration argument (grid {g[0]}x{g[1]}x{g[2]} outside the device limits)"
    if smem > gpu.shared_per_block_optin:
        return (
            f"invalid argument (shared memory per block {int(smem)} B exceeds the {gpu.name} maximum of "
            f"{gpu.shared_per_block_optin} B)"
        )
    if registers > 0:
        warps = math.ceil(threads / gpu.warp_size)
        regs_per_warp = _ceil_to(int(registers) * gpu.warp_size, gpu.register_alloc_unit)
        if registers > gpu.max_registers_per_thread or regs_per_warp * warps > gpu.max_registers_per_block:
            # the product as the hardware counts it: registers are allocated per warp in units, so
            # "255 x 768" takes more than 195,840 (said as such: the bare product did not add up)
            asked = int(registers) * threads
            allocated = regs_per_warp * warps
            counted = (f" = {asked}" if allocated == asked else
                       f" = {asked}, {allocated} as allocated per warp in units of {gpu.register_alloc_unit}")
            return (
                f"too many resources requested for launch ({int(registers)} registers x {threads} threads"
                f"{counted} > {gpu.max_registers_per_block} registers per block)"
            )
        # The register file is split among the SM's schedulers and warps take it in groups: a block
        # within the per-block total can still find no room (as :func:`occupancy` counts it), and
        # the driver refuses such a launch as well.
        resident = gpu.registers_per_sm // regs_per_warp
        resident -= resident % gpu.warp_alloc_granularity
        if resident < warps:
            return (
                f"too many resources requested for launch ({int(registers)} registers x {threads} threads: "
                f"{warps} warps of {regs_per_warp} registers, and the register file holds {resident} such warps "
                f"in groups of {gpu.warp_alloc_granularity})"
            )
    return None


def register_cap(gpu: GpuSpec, threads: int) -> int | None:
    """The most registers per thread with which a block of ``threads`` launches on ``gpu`` (by
    :func:`launch_check`'s rules: the per-block total as allocated per warp, and room for the
    block's warps in the register file's groups), in the steps the hardware allocates (8 per
    thread) below the ISA's most; None when not even 8 fit (the launch fails whatever the code).

    What ``__launch_bounds__`` makes the compiler do. The per-block total alone allowed 224
    registers for 288 threads, which the register file cannot place (9 warps of 7,168 registers in
    groups of 4), so a kernel capped there was still refused.
    """
    dims = (max(1, int(threads)), 1, 1)
    top = int(gpu.max_registers_per_thread)
    for registers in (top, *range(top // 8 * 8, 7, -8)):
        if launch_check(gpu, dims, 0, registers) is None:
            return registers
    return None


def _fmt_bytes(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.3g} B"


@dataclass
class _Wave:
    """Pipe times of one wave of ``blocks`` blocks (seconds) and the saturation of each."""

    dram: float
    l2: float
    compute: float
    sfu: float
    smem: float
    mem_saturation: float
    issue_saturation: float
    drain: float = 0.0  # time the memory pipe needs to serve every byte the wave has in flight, spills included


def predict(
    gpu: GpuSpec,
    profile: WorkProfile,
    grid: Sequence[int],
    block: Sequence[int],
    resources: Mapping[str, Any],
) -> Prediction:
    """Predicted latency of one launch (plus ``profile.extra_launches``) on ``gpu``.

    ``resources``: ``registers`` (per thread), ``smem_bytes`` (static + dynamic per block),
    ``spill_store_bytes`` / ``spill_load_bytes`` (per thread, from ptxas), optional ``estimated``.
    """
    threads = _prod(block)
    blocks = max(1, _prod(grid))
    regs = int(resources.get("registers", 0) or 0)
    smem = int(resources.get("smem_bytes", 0) or 0)
    occ = occupancy(gpu, threads, regs, smem)
    terms: list[Term] = [Term("occupancy", occ.fraction, occ.explain(), "fraction")]
    if occ.active_blocks_per_sm == 0:
        return Prediction(math.inf, tuple(terms), "launch failure", occ)

    clk = gpu.clock_hz
    warps_per_block = math.ceil(threads / gpu.warp_size)
    # A warp issues for all its lanes: a block whose threads do not fill its last warp (16 or 48
    # threads) leaves those lanes idle in every FP32, shared-memory and L1 instruction it issues.
    lane_use = threads / (warps_per_block * gpu.warp_size)
    total_threads = blocks * threads
    coalescing = min(1.0, max(profile.coalescing, 1.0 / 32.0))
    access = max(1, int(profile.access_bytes))
    wpt = max(1.0, float(profile.work_per_thread))
    reuse = min(max(profile.l2_reuse, 0.0), 1.0)

    # --- traffic: what reaches DRAM and what the caches serve ------------------------------------
    read_sectors = profile.bytes_read / coalescing
    write_sectors = profile.bytes_written / coalescing
    # Every timed launch starts with a cold L2: the CUDA backend overwrites the cache before each
    # one, so a working set that would fit in L2 is still read from DRAM (the model predicts what
    # that backend measures, not a warm-cache loop's figure, which can exceed DRAM bandwidth).
    dram_bytes = read_sectors * (1.0 - reuse) + write_sectors
    # Every global access passes the SM's L1/texture path (shared with shared memory since Volta);
    # L2 sees DRAM-bound traffic plus the re-reads L1 does not catch.
    l1_bytes = read_sectors + write_sectors
    # Read-only requests occupy the slower texture path: count them at their longer cost.
    ro_path = min(max(float(profile.read_only_path), 0.0), 1.0)
    l1_cost_bytes = l1_bytes + read_sectors * ro_path * (1.0 / _TEX_PATH_RATE - 1.0)
    # Which re-reads hit L1 is the template's call (profile.l1_hit_of_reuse): data the same block read
    # before can hit its SM's L1; data another block fetched (a neighbour's halo) comes from L2.
    l1_miss_of_reuse = 1.0 - min(max(float(profile.l1_hit_of_reuse), 0.0), 1.0)
    cache_bytes = read_sectors * (1.0 - reuse) + write_sectors + read_sectors * reuse * l1_miss_of_reuse
    spill_per_thread = float(resources.get("spill_store_bytes", 0) or 0) + float(resources.get("spill_load_bytes", 0) or 0)
    loads_per_thread = profile.bytes_read / max(1.0, total_threads * access)
    inflight_loads = min(max(1.0, min(loads_per_thread, 2.0 * wpt)), _MAX_REQUESTS_IN_FLIGHT)
    # Spill code runs once per loop iteration of a thread: a batch of ``inflight_loads`` loads.
    iterations = max(1.0, loads_per_thread / inflight_loads)
    spill_bytes = spill_per_thread * total_threads * iterations
    if spill_bytes:
        dram_bytes += spill_bytes * _SPILL_DRAM_FRACTION
    ilp = min(wpt, 8.0)

    transcendental_flops = profile.transcendentals * (
        _FAST_TRANSCENDENTAL_FLOPS if profile.fast_math else _PRECISE_TRANSCENDENTAL_FLOPS
    )
    sfu_ops = profile.transcendentals * (1.0 if profile.fast_math else 2.0)
    flops = profile.flops + transcendental_flops
    smem_ops = profile.smem_accesses * max(1.0, profile.bank_conflict_ways)
    # Instruction issue: each scheduler issues one warp-instruction per clock, whatever its kind. An
    # FMA is one instruction for two flops; every shared or global load/store is one more (one per
    # thread-access). Where the FP32 lanes equal the issue width (32 per scheduler: Ampere GA10x,
    # Ada, Hopper), each load takes an issue slot from the FMAs; with 16 lanes per scheduler (Volta,
    # Turing, A100) an FMA occupies its pipe for two clocks and loads issue in between. Integer,
    # address and branch instructions the template counts (``other_instructions``) take slots too.
    thread_instructions = (0.5 * flops + profile.smem_accesses + (profile.bytes_read + profile.bytes_written) / access
                           + max(0.0, float(profile.other_instructions)))

    # Every shared or global access of a thread passes the SM's load/store units, which take
    # ``lsu_per_sm`` threads' addresses per clock: with 16 (Turing, GA10x, Ada) a warp's access holds
    # them two clocks, and a 2-way bank conflict, a second pass through the banks, fits in that time.
    memory_accesses = profile.smem_accesses + (profile.bytes_read + profile.bytes_written) / access
    peak_bw = gpu.peak_bandwidth * gpu.dram_efficiency
    issue_interval = gpu.warp_size * gpu.schedulers_per_sm / gpu.fp32_lanes_per_sm
    warps_needed = _FMA_LATENCY_CYCLES / issue_interval  # independent warp-instructions per scheduler

    def wave(n_blocks: int) -> _Wave:
        share = n_blocks / blocks
        sms = min(n_blocks, gpu.sm_count)
        blocks_per_sm = n_blocks / sms
        warps_per_sm = blocks_per_sm * warps_per_block
        threads_resident = n_blocks * threads
        inflight = threads_resident * access * inflight_loads / coalescing
        # A thread's spill stores and reloads of one iteration are memory requests in flight too (stores
        # do not wait; reloads issue ahead of their use): the queue a staging load can find holds them,
        # as many as the thread's outstanding requests allow.
        spill_inflight = threads_resident * min(spill_per_thread, _MAX_REQUESTS_IN_FLIGHT * _LOCAL_WORD_BYTES)
        mem_sat = _soft_min1(inflight / (peak_bw * gpu.dram_latency_ns * 1e-9))
        sm_cap = sms * _L2_TO_SM_BYTES_PER_CLOCK * clk
        dram_bw = min(peak_bw * mem_sat, sm_cap)
        l2_sat = _soft_min1(inflight / (gpu.l2_bandwidth_gbs * 1e9 * gpu.dram_latency_ns * _L2_LATENCY_FRACTION * 1e-9))
        l2_bw = min(gpu.l2_bandwidth_gbs * 1e9 * l2_sat, sm_cap * 2.0)
        issue_sat = _soft_min1(warps_per_sm / gpu.schedulers_per_sm * ilp / warps_needed)
        flop_rate = sms * gpu.fp32_lanes_per_sm * 2.0 * clk * issue_sat * lane_use
        issue_rate = sms * gpu.schedulers_per_sm * gpu.warp_size * clk * issue_sat * lane_use  # thread-instructions/s
        sfu_rate = sms * gpu.sfu_per_sm * clk * issue_sat * lane_use
        lsu_sat = _soft_min1(warps_per_sm * ilp / _SMEM_WARPS_NEEDED)
        smem_rate = sms * gpu.shared_banks * clk * lsu_sat * lane_use
        l1_rate = sms * gpu.l1_bytes_per_clock * clk * lsu_sat * lane_use
        lsu_rate = sms * gpu.lsu_per_sm * clk * lsu_sat * lane_use  # thread-accesses/s through the LD/ST units
        t_dram = dram_bytes * share / dram_bw if dram_bytes else 0.0
        t_l2 = (cache_bytes + spill_bytes) * share / l2_bw if cache_bytes + spill_bytes else 0.0
        return _Wave(
            dram=t_dram,
            l2=t_l2,
            compute=max(flops / flop_rate, thread_instructions / issue_rate) * share if flops else 0.0,
            sfu=sfu_ops * share / sfu_rate if sfu_ops else 0.0,
            smem=max(smem_ops / smem_rate + l1_cost_bytes / l1_rate, memory_accesses / lsu_rate) * share,
            mem_saturation=mem_sat,
            issue_saturation=issue_sat,
            drain=(inflight + spill_inflight) / (dram_bw if t_dram >= t_l2 else l2_bw),
        )

    per_wave = occ.active_blocks_per_sm * gpu.sm_count
    full_waves, rest = divmod(blocks, per_wave)
    waves_list: list[tuple[int, _Wave]] = []
    if full_waves:
        waves_list.append((full_waves, wave(per_wave)))
    if rest:
        waves_list.append((1, wave(rest)))

    pipes = ("dram", "l2", "compute", "sfu", "smem")
    totals = dict.fromkeys(pipes, 0.0)
    body = 0.0
    for count, w in waves_list:
        times = [getattr(w, p) for p in pipes]
        # DRAM traffic streams through L2: the two are one memory pipe, bounded by the slower.
        merged = [max(w.dram, w.l2), w.compute, w.sfu, w.smem]
        slowest = max(merged)
        body += count * (slowest + _OVERLAP * (_sum_in_order(merged) - slowest))
        for p, t in zip(pipes, times):
            totals[p] += count * t
    main = waves_list[0][1]
    n_waves = blocks / per_wave
    tail_eff = n_waves / math.ceil(n_waves)

    # --- atomics --------------------------------------------------------------------------------
    t_atomic = 0.0
    if profile.atomics > 0:
        contention = profile.atomics / max(1.0, profile.atomic_targets)
        t_atomic = max(profile.atomics / (gpu.atomic_rate_gops * 1e9), contention / (gpu.same_address_atomic_gops * 1e9))
    t_shared_atomic = 0.0
    if profile.shared_atomics > 0:
        per_block = profile.shared_atomics / blocks
        per_addr = per_block / max(1.0, profile.shared_atomic_targets)
        cycles = max(per_block / gpu.shared_banks, per_addr * _SHARED_ATOMIC_SAME_ADDR_CYCLES)
        t_shared_atomic = blocks / gpu.sm_count * cycles / clk / min(occ.active_blocks_per_sm, 2)
    # Staging before a barrier: each thread waits ``staging_rounds`` memory round trips (a load, then
    # the shared store it feeds) before the block may compute. Other resident blocks compute
    # meanwhile, but only while some are computing: each of the B resident blocks cycles between
    # the wait S (no issue) and its share C of the SM's pipe time, a closed loop of B blocks around
    # one server. Mean value analysis of that loop gives the SM's period per block, from C (the
    # wait fully hidden) up to (S + B*C) / B; it is C only while the others' work covers the wait.
    # A round trip is the unloaded latency only on an idle memory system: the staging loads queue
    # behind the wave's other L2/DRAM requests. A server busy a share u of the time adds u / (1 - u)
    # of its response time as queueing (a single-server queue), u the memory pipe's busy time over
    # the wave's time; but the queue ahead of a request never holds more than the bytes the wave has
    # in flight (its loads and its spills' local-memory traffic), so the wait is at most the time the
    # pipe takes to serve them (a closed system).
    # How the blocks' phases spread depends on how the binding pipe serves them. Queues served in
    # arrival order (load/store units, shared memory, L1, L2, DRAM) finish the first-come block first
    # and stagger identical blocks, which the closed loop's random phases stand for. The warp
    # schedulers instead share their issue slots among all ready warps: when the issue/FP32 pipe
    # binds, identical blocks that start together progress together, finish together and stage
    # together, so no block computes while the others wait (lockstep): each round of up to B resident
    # blocks per SM waits S once, also a last round that is not full.
    t_staging = 0.0
    loaded, memory_busy = 1.0, 0.0  # loaded / idle round trip, the memory pipe's busy share of the wave
    lockstep = False  # resident blocks stage together (the issue pipe binds) rather than in staggered turns
    if profile.staging_rounds > 0:
        round_trip = gpu.dram_latency_ns * 1e-9 * ((1.0 - reuse) + reuse * _L2_LATENCY_FRACTION)
        memory_busy = memory_utilisation(main)
        queueing = min(round_trip * memory_busy / max(1.0 - memory_busy, _MIN_IDLE_SHARE), main.drain)
        loaded = 1.0 + queueing / round_trip if round_trip > 0.0 else 1.0
        stage = profile.staging_rounds * round_trip * loaded
        per_block = body * gpu.sm_count / blocks
        lockstep = issue_binds(main)
        if lockstep:
            t_staging = math.ceil(blocks / per_wave) * stage
        else:
            period = closed_loop_period(per_block, stage, occ.active_blocks_per_sm)
            t_staging = blocks / gpu.sm_count * max(0.0, period - per_block)
        body += t_staging
    kernel_times = [body, t_atomic, t_shared_atomic]
    kernel = max(kernel_times) + _OVERLAP * (_sum_in_order(kernel_times) - max(kernel_times))

    # --- additive costs -------------------------------------------------------------------------
    sync_cycles = profile.syncs_per_block * (_SYNC_BASE_CYCLES + _SYNC_PER_WARP_CYCLES * warps_per_block)
    t_sync = blocks / gpu.sm_count * sync_cycles / clk / occ.active_blocks_per_sm
    t_spill = spill_bytes / (gpu.l2_bandwidth_gbs * 1e9 * _SPILL_EFFICIENCY) if spill_bytes else 0.0
    t_serial = profile.serial_fraction * kernel * gpu.sm_count if profile.serial_fraction > 0 else 0.0
    launches = 1 + max(0, int(profile.extra_launches))
    t_launch = launches * gpu.launch_overhead_us * 1e-6
    total = kernel + t_sync + t_spill + t_serial + t_launch

    # --- terms ----------------------------------------------------------------------------------
    ms = 1e3
    lsu_bound = (memory_accesses / gpu.lsu_per_sm
                 > smem_ops / gpu.shared_banks + l1_cost_bytes / gpu.l1_bytes_per_clock)
    bw_used = dram_bytes / totals["dram"] / 1e9 if totals["dram"] else 0.0
    if n_waves < 1.0:
        wave_text = f"{blocks} blocks fill {n_waves:.0%} of one wave of {per_wave}: the GPU is not full"
    else:
        wave_text = (
            f"{blocks} blocks in {math.ceil(n_waves)} waves of {per_wave} ({occ.active_blocks_per_sm} per SM x "
            f"{gpu.sm_count} SMs); last wave {rest or per_wave} blocks, tail efficiency {tail_eff:.0%}"
        )
    terms.append(Term("waves", n_waves, wave_text, "waves"))
    terms.append(
        Term(
            "memory",
            totals["dram"] * ms,
            f"{_fmt_bytes(dram_bytes)} DRAM traffic at {bw_used:.0f} GB/s ({bw_used * 1e9 / gpu.peak_bandwidth:.0%} of "
            f"{gpu.memory_bandwidth_gbs:.0f}); bytes in flight reach {main.mem_saturation:.0%} of what hides "
            f"{gpu.dram_latency_ns:.0f} ns latency ({access} B x {inflight_loads:.0f} loads per thread)",
        )
    )
    terms.append(
        Term(
            "coalescing",
            coalescing,
            f"{coalescing:.0%} of each fetched 32 B sector is used"
            + ("" if coalescing >= 0.999 else f": {1 / coalescing:.1f}x the useful traffic"),
            "fraction",
        )
    )
    terms.append(
        Term(
            "cache",
            totals["l2"] * ms,
            f"{_fmt_bytes(cache_bytes + spill_bytes)} through L2, {_fmt_bytes(l1_bytes)} through L1 "
            f"({reuse:.0%} of reads are re-reads, {1 - l1_miss_of_reuse:.0%} of those hit L1)",
        )
    )
    terms.append(
        Term(
            "compute",
            totals["compute"] * ms,
            f"{profile.flops / 1e9:.3g} GFLOP (+{transcendental_flops / 1e9:.3g} for transcendentals) and "
            f"{thread_instructions / 1e9:.3g} G instructions to issue (FMAs, loads and stores, integer and branch work) at "
            f"{main.issue_saturation:.0%} issue efficiency ({occ.active_warps_per_sm / gpu.schedulers_per_sm:.1f} warps per "
            f"scheduler x ILP {ilp:.0f})"
            + (f"; {threads} threads per block fill {lane_use:.0%} of their warps' lanes" if lane_use < 1.0 else ""),
        )
    )
    if profile.transcendentals:
        terms.append(
            Term(
                "transcendentals",
                totals["sfu"] * ms,
                f"{profile.transcendentals / 1e6:.3g} M special functions, "
                + ("fast math: one SFU op each" if profile.fast_math else f"precise: ~{_PRECISE_TRANSCENDENTAL_FLOPS:.0f} FP32 ops each"),
            )
        )
    terms.append(
        Term(
            "shared memory",
            totals["smem"] * ms,
            f"L1/shared-memory pipe: {profile.smem_accesses / 1e6:.3g} M shared accesses with "
            f"{profile.bank_conflict_ways:.3g}-way bank conflicts, plus {_fmt_bytes(l1_bytes)} of global accesses"
            + (f" ({ro_path:.0%} of reads on the read-only/texture path at half rate)" if ro_path else "")
            + (f"; bound by the load/store units ({gpu.lsu_per_sm} threads' addresses per clock per SM)" if lsu_bound else ""),
        )
    )
    if profile.atomics:
        terms.append(
            Term(
                "atomics",
                t_atomic * ms,
                f"{profile.atomics / 1e6:.3g} M global atomics on {profile.atomic_targets:.3g} address(es): "
                f"{profile.atomics / max(1.0, profile.atomic_targets):.3g} serialised updates per address",
            )
        )
    if profile.shared_atomics:
        terms.append(
            Term(
                "shared atomics",
                t_shared_atomic * ms,
                f"{profile.shared_atomics / 1e6:.3g} M shared atomics, {profile.shared_atomic_targets:.3g} targets per block",
            )
        )
    if profile.staging_rounds:
        terms.append(Term("staging", t_staging * ms,
                          f"{profile.staging_rounds:.3g} dependent load round trips per thread before the barrier, "
                          f"each {loaded:.2f}x the idle latency behind the "
                          f"wave's other memory traffic ({memory_busy:.0%} busy), "
                          + (f"not hidden: instruction issue binds, so the {occ.active_blocks_per_sm} resident block(s) share it "
                             "evenly, finish together and stage together"
                             if lockstep else
                             f"hidden by the other {occ.active_blocks_per_sm - 1} resident block(s) only while they compute")))
    if profile.syncs_per_block:
        terms.append(Term("sync", t_sync * ms, f"{profile.syncs_per_block:.3g} __syncthreads() per block of {warps_per_block} warps"))
    if spill_bytes:
        terms.append(
            Term("spills", t_spill * ms, f"{spill_per_thread:.0f} B spilled per thread: {_fmt_bytes(spill_bytes)} local-memory traffic")
        )
    if t_serial:
        terms.append(Term("serial", t_serial * ms, f"{profile.serial_fraction:.2%} of the work runs on one SM"))
    terms.append(Term("launch", t_launch * ms, f"{launches} launch(es) x {gpu.launch_overhead_us:.1f} us overhead"))
    if resources.get("estimated"):
        source = (f"the {resources['estimated_from']} table's figures for this config" if resources.get("estimated_from")
                  else "the work-profile rule")
        when = "while its compile is pending" if resources.get("resources_pending") else "without a compile"
        terms.append(Term("estimated", 1.0, f"registers and shared memory are estimates ({source}, {when})", "flag"))

    bound = _bound(totals, t_atomic + t_shared_atomic, t_launch, t_serial, kernel, main)
    return Prediction(total * ms, tuple(terms), bound, occ, dram_bytes)


def issue_binds(wave: _Wave) -> bool:
    """Whether the schedulers' instruction issue (FMAs and every other instruction) is a wave's slowest pipe.

    Issue slots are shared among all ready warps rather than served in arrival order, so it is the
    one pipe that keeps identical blocks in step.
    """
    return wave.compute > 0.0 and wave.compute >= max(wave.dram, wave.l2, wave.sfu, wave.smem)


def _sum_in_order(values: Sequence[float]) -> float:
    """The values added left to right, as ``sum`` did before Python 3.12, which adds floats with a
    compensated sum: the model's figures then differed in their last digits between versions, and
    a simulated run repeated exactly only on one of them."""
    total = 0.0
    for value in values:
        total += value
    return total


def memory_utilisation(wave: _Wave) -> float:
    """Share of a wave's time the L2/DRAM pipe is busy: its time over the wave's (slowest pipe plus overlap)."""
    merged = [max(wave.dram, wave.l2), wave.compute, wave.sfu, wave.smem]
    slowest = max(merged)
    elapsed = slowest + _OVERLAP * (_sum_in_order(merged) - slowest)
    return merged[0] / elapsed if elapsed > 0.0 else 0.0


def closed_loop_period(service: float, delay: float, customers: int) -> float:
    """Time per completion of ``customers`` jobs cycling between a wait ``delay`` and one shared server.

    Exact mean value analysis of a closed network with one queueing station (service time
    ``service``) and one delay station: the residence time at the server grows with the queue the
    other jobs form, R(n) = service x (1 + Q(n - 1)), throughput X(n) = n / (delay + R(n)). With B
    jobs it lies between ``max(service, (delay + service) / B)`` (the server busy all the time, or
    no queueing at all) and ``delay / B + service``; at one job it is ``delay + service``. It is
    smooth in both. An infinite wait or service time gives an infinite period.
    """
    if not (math.isfinite(service) and math.isfinite(delay)):
        return math.inf
    if service <= 0.0:
        return delay / max(1, customers)
    queue = 0.0
    throughput = 0.0
    for n in range(1, max(1, customers) + 1):
        residence = service * (1.0 + queue)
        throughput = n / (delay + residence)
        queue = throughput * residence
    return 1.0 / throughput


def _bound(totals: Mapping[str, float], t_atomic: float, t_launch: float, t_serial: float, kernel: float, main: _Wave) -> str:
    """Name the dominant cost the way a GPU engineer would."""
    if t_launch >= kernel:
        return "launch"
    if t_serial > kernel:
        return "serial"
    candidates = {
        "memory": max(totals["dram"], totals["l2"]),
        # the FMA and transcendental pipes overlap, as the wave time has them: the slower of the two
        # (their sum called 87 of softmax's 250 configs compute-bound, memory taking twice as long)
        "compute": max(totals["compute"], totals["sfu"]),
        "shared memory": totals["smem"],
        "atomics": t_atomic,
    }
    name = max(candidates, key=lambda k: candidates[k])
    if name == "memory" and main.mem_saturation < 0.5:
        return "latency"
    if name in ("compute", "shared memory") and main.issue_saturation < 0.5:
        return "latency"
    return name


#: Warps per register-allocation group the estimate assumes (every shipped GPU description's
#: ``warp_alloc_granularity``).
ESTIMATE_WARP_GROUP = 4


def estimate_resources(profile: WorkProfile, threads_per_block: int, smem_bytes: int) -> dict[str, Any]:
    """Registers and shared memory when no compiler result is available, marked ``estimated``.

    Rule of thumb fitted to NVRTC's figures for the shipped streaming kernels: ~16 registers of
    bookkeeping plus two per independent element in flight (operand and result), rounded to 8.
    Like ptxas under ``__launch_bounds__(threads)``, the count is capped so the block fits the
    64K register file, its warps taken in groups of four as :func:`launch_check` takes them (a
    block of nine warps is given the room of twelve), and the excess is spilled (4 B stored and
    loaded per register). Static shared
    memory is the larger of ``smem_bytes`` and what the template says its source declares
    (``profile.static_smem_bytes``): shared tiles limit occupancy whether or not a compiler ran.
    """
    want = _ceil_to(16 + 2.0 * max(1.0, profile.work_per_thread), 8)
    threads = max(1, int(threads_per_block))
    warps = _ceil_to(math.ceil(threads / 32), ESTIMATE_WARP_GROUP)
    fit = max(16, min(255, (65536 // (warps * 32)) // 8 * 8))
    regs = min(want, fit)
    spill = (want - regs) * 4
    return {
        "registers": regs,
        "smem_bytes": max(int(smem_bytes), int(profile.static_smem_bytes)),
        "spill_store_bytes": spill,
        "spill_load_bytes": spill,
        "estimated": True,
    }
