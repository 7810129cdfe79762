#!/usr/bin/env python3
"""How accurate is the GPU's ``tanh.approx.f32``? Measure it, for the emulation to follow the device.

The gelu template's fast path calls the hardware tanh; ``kernels/gelu.py`` emulates it on the CPU
for the simulator's quality figures. The PTX ISA gives only a bound on its relative error (about
2^-11); this probe runs the instruction on every float32 in a range
and prints, per band of |u|, the largest relative and absolute error against float64 tanh, and
the share of results equal to the correctly rounded float32 tanh. Needs a CUDA device and CuPy.

    python bench/fast_math_probe.py [--min-u 0.001] [--max-u 10] [--save OUT.npz]

``--save`` keeps the inputs and the device's outputs (float32) for checking an emulation offline.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

SOURCE = r"""
extern "C" __global__ void tanh_approx(const float* u, float* t, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float r;
        asm("tanh.approx.f32 %0, %1;" : "=f"(r) : "f"(u[i]));
        t[i] = r;
    }
}
"""

BANDS = (0.0, 2.0**-10, 2.0**-4, 0.25, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 20.0)


def inputs(low: float, high: float) -> np.ndarray:
    """Every float32 in [low, high] (the bands the table reports)."""
    first, last = (int(np.array(v, dtype=np.float32).view(np.uint32)) for v in (low, high))
    return np.arange(first, last + 1, dtype=np.uint32).view(np.float32)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-u", type=float, default=10.0)
    parser.add_argument("--min-u", type=float, default=2.0**-10)
    parser.add_argument("--save", default=None)
    parser.add_argument("--save-points", type=int, default=1_500_000, help="inputs kept by --save (evenly spread)")
    args = parser.parse_args(argv)
    import cupy as cp

    u = inputs(args.min_u, args.max_u)
    kernel = cp.RawKernel(SOURCE, "tanh_approx")
    device_u = cp.asarray(u)
    device_t = cp.empty_like(device_u)
    threads = 256
    kernel(((u.size + threads - 1) // threads,), (threads,), (device_u, device_t, np.int64(u.size)))
    t = cp.asnumpy(device_t)
    exact = np.tanh(u.astype(np.float64))
    rounded = exact.astype(np.float32)
    abs_err = np.abs(t.astype(np.float64) - exact)
    rel_err = np.where(exact != 0, abs_err / np.abs(np.where(exact != 0, exact, 1.0)), abs_err)
    name = cp.cuda.runtime.getDeviceProperties(0)["name"]
    name = name.decode() if isinstance(name, bytes) else str(name)
    print(f"tanh.approx.f32 on {name} (compute capability {cp.cuda.Device().compute_capability}), "
          f"every float32 in [{args.min_u:g}, {args.max_u:g}] ({u.size:,}) (the instruction is odd: tanh(-u) = -tanh(u) was checked on a "
          f"sample)\n")
    odd = cp.asnumpy(_run(kernel, -device_u[::97]))
    print(f"odd symmetry holds on {np.mean(odd == -t[::97]) * 100:.2f}% of the sample\n")
    print("| |u| from | to | inputs | max rel err | (log2) | max abs err | (log2) | = rounded tanh |")
    print("|---|---|---|---|---|---|---|---|")
    for low, high in zip(BANDS, BANDS[1:]):
        band = (u >= low) & (u < high)
        if not band.any():
            continue
        worst_rel, worst_abs = float(rel_err[band].max()), float(abs_err[band].max())
        print(f"| {low:g} | {high:g} | {int(band.sum()):,} | {worst_rel:.3g} | {_log2(worst_rel)} | {worst_abs:.3g} | "
              f"{_log2(worst_abs)} | {np.mean(t[band] == rounded[band]) * 100:.1f}% |")
    if args.save:
        keep = slice(None, None, max(1, u.size // args.save_points))
        np.savez_compressed(args.save, u=u[keep], t=t[keep])
    return 0


def _run(kernel: object, device_u: object) -> object:
    import cupy as cp

    u = cp.ascontiguousarray(device_u)
    t = cp.empty_like(u)
    kernel(((u.size + 255) // 256,), (256,), (u, t, np.int64(u.size)))  # type: ignore[operator]
    return t


def _log2(value: float) -> str:
    return f"{np.log2(value):.2f}" if value > 0 else "-inf"


if __name__ == "__main__":
    sys.exit(main())
