"""The exported CuPy script, as real Python: :mod:`workbench.core.io.export` copies this file's code.

Kept as a module rather than a string so the type checker and the tests see the code a user runs.
The export writes a new docstring, then the imports below, then the tuned constants in place of
the placeholders between the ``constants`` markers (each a ``repr``, so nothing the session holds
can turn into code), then everything after the ``body`` marker unchanged. The buffers get the
template's own reset policy (:func:`workbench.core.domain.templates.reset_buffers`), the one the CUDA
backend applies while tuning. Importing this module runs nothing; CuPy is imported by ``main``.
"""

# --- imports ---
from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import numpy as np

# --- constants (placeholders; the export writes the tuned values) ---
KERNEL: str = ""
KERNEL_DIRS: list[str] = []
TEMPLATE_HASH: str = ""
PROBLEM: dict[str, Any] = {}
SEED: int = 0
CONFIG: dict[str, Any] = {}
CONFIG_ID: str = ""
ENTRY: str = ""
GRID: tuple[int, int, int] = (1, 1, 1)
BLOCK: tuple[int, int, int] = (1, 1, 1)
SMEM: int = 0
OPTIONS: tuple[str, ...] = ()
REPEATS: int = 50
RECORDED_LATENCY_MS: float | None = None
RECORDED_DEVICE: str = ""
SOURCE: str = ""
# --- body ---


def start_cupy() -> Any:
    """CuPy with a GPU it can use; without one, one ``error:`` line and exit 1 (SystemExit), not the
    traceback of whichever CuPy call first touches the driver."""
    try:
        cp: Any = importlib.import_module("cupy")
    except (ImportError, OSError) as exc:
        raise SystemExit(f"error: this script runs the kernel with CuPy, which cannot be imported here: {exc}") from None
    try:
        count = int(cp.cuda.runtime.getDeviceCount())
    except (cp.cuda.runtime.CUDARuntimeError, cp.cuda.driver.CUDADriverError) as exc:
        raise SystemExit(f"error: CuPy cannot use a GPU here: {exc}") from None
    if count < 1:
        raise SystemExit("error: CuPy sees no GPU here")
    return cp


def with_register_cap(options: tuple[str, ...], cap: int | None) -> tuple[str, ...]:
    """The compile options plus ``--maxrregcount=cap`` (:func:`register_cap`: the most registers
    per thread with which the block launches on this device), or the template's own cap where it
    is tighter; ``cap`` None: no cap lets the block launch, and CUDA says why at the launch.

    What ``__launch_bounds__`` would do. A config tuned on this device used fewer (the tuner
    refuses a launch that does not fit), so its code is unchanged; one tuned on another GPU, or on
    the simulator with estimated resources, would otherwise stop with "too many resources
    requested for launch" instead of running with a few spills.
    """
    own = [option for option in options if option.lstrip("-").startswith("maxrregcount")]
    caps = [int(value) for value in (option.partition("=")[2] for option in own) if value.isdigit()]
    caps += [cap] if cap is not None else []
    if not caps:
        return options
    rest = tuple(option for option in options if option not in own)
    return (*rest, f"--maxrregcount={min(caps)}")  # the template's own cap stands where it is tighter


def main() -> int:
    cp = start_cupy()
    try:
        from workbench.core.domain.templates import find_template, kernels_dir, reset_buffers
        from workbench.core.errors import WorkbenchError
    except ImportError as exc:
        raise SystemExit("error: this script builds the kernel's inputs and reference with the Kernel Tuning "
                         f"Workbench, which cannot be imported here ({exc}); run it with the workbench's Python, "
                         "or with PYTHONPATH naming the workbench's folder") from None

    try:  # (a spec that no longer loads, or a folder defining the template twice: one line)
        template = find_template(KERNEL, *[d for d in KERNEL_DIRS if os.path.isdir(d)], str(kernels_dir()))
    except WorkbenchError as exc:
        raise SystemExit(f"error: {exc}") from None
    if template is None:
        raise SystemExit(f"error: no template {KERNEL} in {', '.join(KERNEL_DIRS) or 'the workbench library'}")
    if TEMPLATE_HASH not in {template.source_hash(), *template.earlier_hashes()}:  # (an older hash scheme: the same)
        print(f"note: the {KERNEL} spec changed since export (inputs/reference may differ)", file=sys.stderr)
    problem = template.resolve_problem(PROBLEM)
    host = template.make_inputs(problem, np.random.default_rng(SEED))
    expected = template.reference(host, problem)
    if not template.has_reference:
        print(f"note: {KERNEL} has no reference: the workbench checked each config against the first valid "
              "config's outputs; this script checks nothing", file=sys.stderr)

    # The tuner's own path: the same compiler and options (a CUBIN for this device, registers capped
    # so the block fits), loaded and launched as the CUDA backend did while measuring.
    from workbench.core.model.compiler import compile_cuda
    from workbench.core.model.cuda_module import opt_in_shared_memory, upload_constant
    from workbench.core.model.gpus import device_attributes, device_limits
    from workbench.core.model.perfmodel import register_cap

    device = cp.cuda.Device()
    arch = f"sm_{device.compute_capability}"
    limits = device_limits(f"device {device.id}", device_attributes(cp.cuda.runtime, device.id))
    cap = register_cap(limits, BLOCK[0] * BLOCK[1] * BLOCK[2])
    # (a header beside the template is found in its folder, as the tuner found it)
    compiled = compile_cuda(SOURCE, arch=arch, options=with_register_cap((*template.include_options, *OPTIONS), cap))
    if not compiled.ok:
        raise SystemExit(f"error: the kernel does not compile for {arch}: {compiled.error}")
    module = cp.cuda.function.Module()
    module.load(compiled.cubin)
    kernel = module.get_function(ENTRY)
    for name in template.constants:  # __constant__ inputs go to the module's symbol
        upload_constant(cp.cuda.runtime, module, name, host[name])
    opt_in_shared_memory(cp.cuda.driver, kernel, compiled.smem_bytes, SMEM)  # above 48 KiB: opt in

    buffers: dict[str, Any] = {}
    args: list[Any] = []
    for arg in template.args:
        if arg.kind == "scalar":
            value_of = arg.value
            value = value_of(problem) if value_of is not None else problem[arg.name]
            args.append(np.dtype(arg.dtype).type(value))
        elif arg.name not in template.constants:
            shape_of = arg.shape
            if arg.kind in ("in", "inout") or shape_of is None:
                array = cp.asarray(np.asarray(host[arg.name], dtype=arg.dtype))
            else:
                array = cp.empty(shape_of(problem), dtype=arg.dtype)
            buffers[arg.name] = array
            args.append(array)
    resets = template.output_resets()

    def upload(buffer: Any, values: np.ndarray) -> None:
        buffer.set(values)

    def reset(poison: bool) -> None:
        reset_buffers(resets, buffers, host, poison=poison, upload=upload)

    def launch() -> None:
        kernel(GRID, BLOCK, tuple(args), shared_mem=SMEM)

    reset(poison=True)
    launch()
    cp.cuda.Device().synchronize()
    wrong = 0
    for name, reference in expected.items():
        rtol, atol = template.tolerance_for(name)
        want = np.asarray(reference, dtype=np.float64)
        got = buffers[name].get().astype(np.float64).reshape(want.shape)
        bad = ~(np.abs(got - want) <= atol + rtol * np.abs(want))
        wrong += int(bad.sum())
        print(f"{name}: max abs error {float(np.nanmax(np.abs(got - want))):.3g}, "
              f"{int(bad.sum())} of {want.size} outside tolerance")
    if wrong:
        print("FAILED: the result does not match the float64 reference")
        return 1

    l2 = cp.cuda.runtime.deviceGetAttribute(cp.cuda.runtime.cudaDevAttrL2CacheSize, device.id)
    flush = cp.empty(max(2 * l2, 1 << 20), cp.uint8)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    launch()
    samples = []
    for i in range(REPEATS):
        reset(poison=False)
        flush.fill(i & 0xFF)  # the L2 holds no inputs, as when the workbench measured
        start.record()
        launch()
        end.record()
        end.synchronize()
        samples.append(float(cp.cuda.get_elapsed_time(start, end)))
    latency = float(np.median(samples))
    recorded = (f" (exported latency: {RECORDED_LATENCY_MS:.4g} ms on {RECORDED_DEVICE})"
                if RECORDED_LATENCY_MS else "")
    print(f"OK: {KERNEL} config {CONFIG_ID} latency {latency:.4g} ms median of {REPEATS}{recorded}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
