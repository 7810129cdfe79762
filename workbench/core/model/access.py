"""Warp access-pattern arithmetic for template ``profile`` functions.

A template's :class:`~workbench.core.domain.templates.WorkProfile` must say how well a config's global
accesses use the 32-byte sectors they fetch and how much its shared-memory accesses serialise on
banks. Rather than guessing those numbers per template, specs write down the addresses one warp
touches for an access instruction (a NumPy expression of the thread indices) and let these two
functions count, exactly as the hardware rules state them.
"""

from __future__ import annotations

import numpy as np

WARP = 32
SECTOR_BYTES = 32
BANKS = 32


def warp_lanes(threads_x: int, threads_y: int = 1, threads_z: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, y, z) thread indices of every warp of a block, each shaped (warps, 32).

    Threads are numbered x fastest, as CUDA forms warps; a last partial warp is padded by
    repeating its final thread (which adds no new address).
    """
    count = threads_x * threads_y * threads_z
    tid: np.ndarray = np.arange(-(-count // WARP) * WARP)
    tid = np.minimum(tid, count - 1).reshape(-1, WARP)
    return tid % threads_x, (tid // threads_x) % threads_y, tid // (threads_x * threads_y)


def sector_efficiency(byte_addresses: np.ndarray, access_bytes: int, mask: np.ndarray | None = None) -> float:
    """Bytes requested / bytes of the 32-byte sectors fetched, over warp accesses.

    ``byte_addresses``: one row per warp access instruction, one column per thread (the first
    byte each thread touches); ``access_bytes``: bytes per thread (4, 8, 16); ``mask``: threads
    that take part (default all). 1.0 means perfectly coalesced.
    """
    addr = np.atleast_2d(np.asarray(byte_addresses, dtype=np.int64))
    active = np.ones(addr.shape, dtype=bool) if mask is None else np.broadcast_to(np.atleast_2d(mask), addr.shape)
    used = 0
    fetched = 0
    for row, on in zip(addr, active):
        row = row[on]
        if row.size == 0:
            continue
        sectors = np.unique(np.concatenate([row // SECTOR_BYTES, (row + access_bytes - 1) // SECTOR_BYTES]))
        used += len(np.unique(row)) * access_bytes
        fetched += len(sectors) * SECTOR_BYTES
    return float(used / fetched) if fetched else 1.0


def bank_conflict_ways(word_addresses: np.ndarray, words_per_access: int = 1, mask: np.ndarray | None = None) -> float:
    """Average serialisation of shared-memory warp accesses (1.0 = conflict-free, 32 = worst).

    ``word_addresses``: one row per warp access, one column per thread (the first 4-byte word each
    thread touches). 8- and 16-byte accesses are served in 2 or 4 phases of 16 or 8 threads; each
    phase costs as many wavefronts as the most distinct words any one bank must deliver (threads
    reading the same word are served by one broadcast). The result is wavefronts / ideal wavefronts.
    """
    addr = np.atleast_2d(np.asarray(word_addresses, dtype=np.int64))
    active = np.ones(addr.shape, dtype=bool) if mask is None else np.broadcast_to(np.atleast_2d(mask), addr.shape)
    per_phase = WARP // words_per_access
    wavefronts = 0
    ideal = 0
    for row, on in zip(addr, active):
        for start in range(0, row.size, per_phase):
            lanes = row[start : start + per_phase][on[start : start + per_phase]]
            if lanes.size == 0:
                continue
            words = np.unique((lanes[:, None] + np.arange(words_per_access)).ravel())
            wavefronts += int(np.max(np.bincount(words % BANKS, minlength=BANKS)))
            ideal += 1
    return wavefronts / ideal if ideal else 1.0


def distinct_offsets(count: int, stride: int, extent: int) -> int:
    """How many distinct offsets ``k * stride + i`` a thread touches for k < count, i < extent.

    A thread computing ``count`` outputs spaced ``stride`` apart, each reading ``extent``
    consecutive elements (a filter row or column), needs this many distinct elements: when the
    stride is shorter than the extent the windows overlap and a fully unrolled loop loads each
    shared element once, keeping it in a register for every output that uses it.
    """
    count, stride, extent = int(count), int(stride), int(extent)
    if count <= 0 or extent <= 0:
        return 0
    if stride >= extent:
        return count * extent
    return (count - 1) * stride + extent


__all__ = ["BANKS", "SECTOR_BYTES", "WARP", "bank_conflict_ways", "distinct_offsets", "sector_efficiency", "warp_lanes"]
