"""How good are the simulator's estimated resources? Leave one architecture's table out and compare.

While a config's compile is pending, the simulator runs it with estimated registers and shared
memory: the same config's figures from the nearest other architecture's table
(``resource_table.nearest_figures``) when one holds it, else the work-profile rule
(``perfmodel.estimate_resources``). This script takes each architecture whose table holds a template's
configs as the truth, estimates the same configs both ways as the simulator would without that
table, and prints per template and architecture:

- ``reg err``: median absolute register error;
- ``refusals``: launches the compiled figures make the driver refuse, and how many of them each
  estimate misses (``missed``: the trial would look fine until refined) or invents (``false``);
- ``lat p90``: 90th percentile of |modelled latency with the estimate / with the truth - 1| over
  the configs both launch.

"nearest" is the simulator's own estimate (``SimBackend._estimate``: another major version's figures
are passed over where they would refuse the launch, and the rule stands in; ``rule`` in the sources
column); a row covers the configs some other table holds.

No compiling: every figure comes from the shipped tables. ``--arch`` and ``--kernel`` restrict the
rows; a row needs the truth and at least one other architecture's figures for the same configs.

    python bench/resource_estimates.py [--arch sm_80 ...] [--kernel conv2d ...]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.backends.base import BackendSpec
from workbench.backends.sim import SimBackend
from workbench.core.domain.templates import kernels_dir, load_templates
from workbench.core.model import resource_table
from workbench.core.model.perfmodel import estimate_resources, launch_check, predict

#: A modelled GPU per architecture (occupancy rules and the register file are per architecture).
GPU_OF_ARCH = {"sm_75": "T4", "sm_80": "A100_SXM", "sm_86": "RTX3090", "sm_89": "L4", "sm_90": "H100"}


@dataclass
class Tally:
    configs: int = 0
    refused: int = 0
    missed: int = 0
    false: int = 0

    def __post_init__(self) -> None:
        self.reg_err: list[float] = []
        self.lat_err: list[float] = []

    def row(self) -> str:
        if not self.configs:
            return "- | - | - | -"
        lat = f"{np.quantile(self.lat_err, 0.9):.3f}" if self.lat_err else "-"
        return f"{np.median(self.reg_err):.0f} | {self.missed} | {self.false} | {lat}"


def compare(kernel: str, arch: str) -> tuple[int, int, str, Tally, Tally] | None:
    """Profile-rule and nearest-table estimates against ``arch``'s compiled figures of ``kernel``."""
    backend = SimBackend(BackendSpec("sim", {"kernel": kernel, "gpu_model": GPU_OF_ARCH[arch], "noise": False}))
    backend.prepare()
    truth = resource_table.figures_for(backend.template, backend.problem, arch)
    if truth is None:
        return None
    neighbours = [(a, f) for a, f in resource_table.nearest_figures(backend.template, backend.problem, arch)]
    profile, nearest = Tally(), Tally()
    sources: set[str] = set()
    tabulated = 0
    for config in backend.space:
        real = truth.get(config.id)
        if real is None or "compile_error" in real:
            continue
        tabulated += 1
        estimate = backend._estimate(config)  # the simulator's own choice of estimate
        if not estimate.get("estimated_from"):
            if not any(f.get(config.id) is not None for _a, f in neighbours):
                continue  # no other table holds the config: both estimates are the rule
        near = (str(estimate.get("estimated_from") or "rule"), estimate)
        sources.add(near[0])
        grid, block, smem_dynamic, work = backend._launch(config)

        def refused(figures: dict) -> bool:
            return bool(launch_check(backend.gpu, block, int(figures["smem_bytes"]) + smem_dynamic,
                                     int(figures["registers"]), grid=grid))

        def latency(figures: dict) -> float:
            return float(predict(backend.gpu, work, grid, block,
                                 {**figures, "smem_bytes": int(figures["smem_bytes"]) + smem_dynamic}).latency_ms)

        real_refused = refused(real)
        real_latency = None if real_refused else latency(real)
        for tally, estimate in ((profile, estimate_resources(work, int(np.prod(block)), 0)), (nearest, near[1])):
            tally.configs += 1
            est_refused = refused(estimate)
            tally.refused += real_refused
            tally.missed += real_refused and not est_refused
            tally.false += est_refused and not real_refused
            tally.reg_err.append(abs(float(estimate["registers"]) - float(real["registers"])))
            if real_latency is not None and not est_refused:
                tally.lat_err.append(abs(latency(estimate) / real_latency - 1.0))
    if not profile.configs:
        return None
    return tabulated, profile.configs, "/".join(sorted(sources)), profile, nearest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", action="append", choices=sorted(GPU_OF_ARCH))
    parser.add_argument("--kernel", action="append")
    args = parser.parse_args(argv)
    kernels = args.kernel or sorted(load_templates(str(kernels_dir())))
    archs = args.arch or [a for a in resource_table.shipped_archs() if a in GPU_OF_ARCH]
    print("| template | truth | configs | estimated from | refusals | reg err profile / nearest | "
          "missed profile / nearest | false profile / nearest | lat p90 profile / nearest |")
    print("|---|---|---|---|---|---|---|---|---|")
    for kernel in kernels:
        for arch in archs:
            found = compare(kernel, arch)
            if found is None:
                continue
            tabulated, both, sources, profile, nearest = found
            p, n = profile.row().split(" | "), nearest.row().split(" | ")
            print(f"| `{kernel}` | {arch} ({GPU_OF_ARCH[arch]}) | {both}/{tabulated} | {sources} | {profile.refused} | "
                  f"{p[0]} / {n[0]} | {p[1]} / {n[1]} | {p[2]} / {n[2]} | {p[3]} / {n[3]} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
