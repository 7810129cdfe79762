"""What one config of a template really holds: device memory (data arrays plus the workspace that
config needs) and on-chip storage (shared memory plus its threads' registers, per block and per
SM). Shared by the simulator and the CUDA backend, so a simulated and a measured session plot the
same memory figures."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from workbench.core.domain.space import Config
from workbench.core.domain.templates import KernelTemplate

#: Bytes of one register.
REGISTER_BYTES = 4


def device_memory_mb(template: KernelTemplate, problem: Mapping[str, Any], config: Config | None = None) -> float:
    """Device memory one config uses: every data array at the full problem size, plus the scratch
    workspace that config needs (the template's ``workspace_bytes``; else the scratch args in full)."""
    data = scratch = 0
    for arg in template.args:
        if arg.kind == "scalar" or arg.shape is None:
            continue
        size = int(np.prod(arg.shape(problem), dtype=np.int64)) * np.dtype(arg.dtype).itemsize
        if arg.kind == "scratch":
            scratch += size
        else:
            data += size
    if config is not None and template.workspace_bytes is not None:
        scratch = int(template.workspace_bytes(problem, config))
    return (data + scratch) / 1e6


def onchip_figures(registers: int, smem_bytes: int, threads: int, blocks_per_sm: int | None = None) -> dict[str, float]:
    """On-chip storage of one block (its shared memory plus its threads' registers), and of an SM
    when the number of resident blocks is known."""
    per_block = (smem_bytes + REGISTER_BYTES * registers * threads) / 1024.0
    out = {"threads_per_block": float(threads), "onchip_kb_per_block": per_block}
    if blocks_per_sm is not None:
        out["onchip_kb_per_sm"] = per_block * blocks_per_sm
    return out
