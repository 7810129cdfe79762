"""How many simulated evaluations per second one process does, per template.

Three figures per template: the first pass over a sample of configs with NVRTC (compile dominates:
each distinct source compiles once, then the in-memory and disk caches answer), the same configs
again (resources cached: what a long sim run sees), and the first pass with ``compile: "estimate"``
(no compiler at all). The requirement is >= 2,000 evaluations/s once resources are cached.

    python bench/sim_speed.py [--kernels vector_add,gelu] [--configs 200] [--gpu H200] [--no-nvrtc]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from workbench.backends.base import BackendSpec, EvalLimits
from workbench.backends.sim import SimBackend
from workbench.core.domain.templates import load_templates


def _rate(backend: SimBackend, configs: list) -> tuple[float, int]:
    limits = EvalLimits()
    began = time.perf_counter()
    ok = sum(backend.evaluate(config, limits).ok for config in configs)
    return len(configs) / (time.perf_counter() - began), ok


def measure(kernel: str, n_configs: int, gpu: str, nvrtc: bool, seed: int = 0) -> dict[str, float]:
    """Evaluations per second for one template: first pass, cached pass, and estimate mode."""
    out: dict[str, float] = {}
    modes = (("nvrtc", "estimate") if nvrtc else ("estimate",))
    for mode in modes:
        spec = BackendSpec("sim", {"kernel": kernel, "gpu_model": gpu, "compile": mode, "seed": seed})
        target = SimBackend.target(spec)
        configs = target.space.sample(np.random.default_rng(seed), n_configs)
        backend = SimBackend(spec)
        backend.prepare()
        first, ok = _rate(backend, configs)
        again, _ = _rate(backend, configs)
        out[f"{mode}_first"] = first
        out[f"{mode}_cached"] = again
        out["configs"] = len(configs)
        out["ok"] = ok
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", default="", help="comma-separated template names (default: all)")
    parser.add_argument("--configs", type=int, default=200, help="random configs per template")
    parser.add_argument("--gpu", default="H200")
    parser.add_argument("--no-nvrtc", action="store_true", help="only the estimate mode (no compiler)")
    args = parser.parse_args(argv)
    names = [k for k in args.kernels.split(",") if k] or sorted(load_templates())
    print("| template | configs | ok | nvrtc first pass /s | nvrtc cached /s | estimate first /s | estimate cached /s |")
    print("|---|---|---|---|---|---|---|")
    worst = float("inf")
    for name in names:
        r = measure(name, args.configs, args.gpu, not args.no_nvrtc)
        nv_first = f"{r['nvrtc_first']:.0f}" if "nvrtc_first" in r else "-"
        nv_cached = f"{r['nvrtc_cached']:.0f}" if "nvrtc_cached" in r else "-"
        print(f"| {name} | {r['configs']:.0f} | {r['ok']:.0f} | {nv_first} | {nv_cached} | "
              f"{r['estimate_first']:.0f} | {r['estimate_cached']:.0f} |", flush=True)
        worst = min(worst, r.get("nvrtc_cached", r["estimate_cached"]))
    print(f"slowest cached rate: {worst:.0f} evaluations/s (requirement: >= 2000)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
