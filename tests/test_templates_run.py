"""Run the five core kernels: on the CPU always (indexing, tails, barriers, shuffles, atomics), on a GPU when present.

The kernels run on the CPU through tests/cpu_cuda.py (a POSIX thread per CUDA thread, real
barriers, shuffles and atomics; all configs of a template in one g++ run). Outputs are checked
against the float64 reference within
the template's tolerance, and against ``emulate`` where the summation order is deterministic, so
the emulation the simulator trusts is checked against the kernel itself. Under the ``gpu`` marker
the same configs run on the device at full size, with the emulated quality and the CuPy baseline
checked too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from workbench.core.domain.templates import KernelTemplate, load_templates

from cpu_cuda import needs_gxx, run_configs

#: Configs run besides each default, chosen to reach every branch (strategy, algorithm, reduction, width).
CPU_CONFIGS: dict[str, list[dict[str, Any]]] = {
    "vector_add": [
        {"block_size": 128, "items_per_thread": 4, "grid_stride": True, "grid_blocks": 264, "vector_width": 4},
        {"block_size": 64, "items_per_thread": 16, "grid_stride": False, "grid_blocks": 264, "vector_width": 2},
    ],
    "gelu": [
        {"block_size": 128, "items_per_thread": 2, "grid_stride": True, "grid_blocks": 528, "vector_width": 4, "fast_math": True},
    ],
    "reduce_sum": [
        {"block_size": 64, "items_per_thread": 2, "vector_width": 4, "unroll": 2, "strategy": "atomic"},
        {"block_size": 128, "items_per_thread": 8, "vector_width": 2, "unroll": 4, "strategy": "shared_tree"},
        {"block_size": 256, "items_per_thread": 4, "vector_width": 1, "unroll": 4, "strategy": "warp_shuffle"},
        {"block_size": 64, "items_per_thread": 1, "vector_width": 4, "unroll": 1, "strategy": "two_pass"},
    ],
    "softmax": [
        {"threads_per_row": 8, "rows_per_block": 8, "vector_width": 4, "reduction": "warp", "online": True},
        {"threads_per_row": 64, "rows_per_block": 2, "vector_width": 2, "reduction": "block", "online": True},
        {"threads_per_row": 128, "rows_per_block": 1, "vector_width": 1, "reduction": "block", "online": False},
        {"threads_per_row": 4, "rows_per_block": 16, "vector_width": 1, "reduction": "block", "online": False},
    ],
    "layernorm": [
        {"threads_per_row": 16, "rows_per_block": 4, "vector_width": 4, "reduction": "warp", "algorithm": "welford"},
        {"threads_per_row": 64, "rows_per_block": 2, "vector_width": 2, "reduction": "block", "algorithm": "welford"},
        {"threads_per_row": 64, "rows_per_block": 1, "vector_width": 4, "reduction": "block", "algorithm": "sum_squares"},
        {"threads_per_row": 4, "rows_per_block": 8, "vector_width": 1, "reduction": "block", "algorithm": "two_pass"},
    ],
}

#: Problems small enough for a thread per CUDA thread, with tails (n not a multiple of 4, rows not of 16).
CPU_PROBLEMS: dict[str, dict[str, Any]] = {
    "vector_add": {"n": 4099},
    "gelu": {"n": 3001},
    "reduce_sum": {"n": 20011},
    "softmax": {"rows": 37, "cols": 260},
    "layernorm": {"rows": 37, "cols": 260},
}


#: Libm tanhf/expf differ from NumPy's by an ulp; where 1 + tanh cancels (gelu, x < 0) that ulp of
#: tanh (6e-8) times 0.5|x| is the absolute difference. Still 1000x below fast math's error.
EMULATION_ATOL = {"gelu": 1e-6}


@pytest.fixture(scope="module")
def templates() -> dict[str, KernelTemplate]:
    return load_templates()


@needs_gxx
@pytest.mark.parametrize("name", list(CPU_CONFIGS))
def test_kernel_computes_the_reference_on_cpu(templates: dict[str, KernelTemplate], name: str, tmp_path: Path) -> None:
    template = templates[name]
    problem = template.resolve_problem(CPU_PROBLEMS[name])
    space = template.space(problem)
    configs = [space.default_config(), *(space.config(c) for c in CPU_CONFIGS[name])]
    inputs = template.make_inputs(problem, np.random.default_rng(0))
    expected = template.reference(inputs, problem)
    rtol, atol = template.tolerance
    for config, outputs in zip(configs, run_configs(template, problem, configs, inputs, tmp_path)):
        for out, want in expected.items():
            got = outputs[out].astype(np.float64)
            assert np.all(np.isfinite(got)), f"{name} {config}: unwritten elements"
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"{name} {config}")
        if template.emulate is None or (name == "gelu" and config["fast_math"]):
            continue  # the CPU has no tanh.approx: the fast path runs its pre-sm_75 fallback here
        emulated = template.emulate(inputs, problem, config)
        for out, got in outputs.items():
            if name == "reduce_sum" and config["strategy"] != "atomic":
                # block order is fixed, so the emulation must reproduce the kernel's float32 sum exactly
                assert got[0] == emulated[out][0], f"{config}: kernel {got[0]!r} != emulated {emulated[out][0]!r}"
            else:
                np.testing.assert_allclose(got, emulated[out], rtol=2e-6, atol=EMULATION_ATOL.get(name, 1e-7),
                                           err_msg=f"{name} {config} vs emulate")


# --- on a device -------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(CPU_CONFIGS))
def test_kernel_computes_the_reference_on_gpu(templates: dict[str, KernelTemplate], name: str, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The same configs on a real device (the full-size problem), plus the emulation's quality and the baseline."""
    cupy = pytest.importorskip("cupy")
    from workbench.core.model.compiler import compile_cuda
    from workbench.core.model.quality import quality_of

    monkeypatch.setenv("KERNEL_WORKBENCH_CACHE_DIR", str(tmp_path))
    arch = "sm_{}".format(cupy.cuda.Device().compute_capability)
    template = templates[name]
    problem = template.resolve_problem()
    space = template.space(problem)
    inputs = template.make_inputs(problem, np.random.default_rng(0))
    expected = template.reference(inputs, problem)
    rtol, atol = template.tolerance
    configs = [space.default_config(), *(space.config(c) for c in CPU_CONFIGS[name] if space.is_valid(c))]
    for config in configs:
        compiled = compile_cuda(template.render(config, problem), arch=arch, entry=template.entry)
        assert compiled.ok, compiled.error
        module = cupy.cuda.function.Module()
        module.load(compiled.cubin)
        buffers: dict[str, Any] = {}
        params = []
        for arg in template.args:
            if arg.kind == "scalar":
                params.append(np.dtype(arg.dtype).type(arg.value(problem)))
                continue
            if arg.kind in ("in", "inout"):
                buffers[arg.name] = cupy.asarray(inputs[arg.name])
            elif arg.reset == "zero":
                buffers[arg.name] = cupy.zeros(arg.shape(problem), dtype=arg.dtype)
            else:
                buffers[arg.name] = cupy.full(arg.shape(problem), np.nan, dtype=arg.dtype) if np.dtype(arg.dtype).kind == "f" \
                    else cupy.full(arg.shape(problem), np.iinfo(arg.dtype).max, dtype=arg.dtype)
            params.append(buffers[arg.name])
        module.get_function(template.entry)(template.grid(problem, config), template.block(problem, config), tuple(params),
                                            shared_mem=template.dynamic_smem(problem, config))
        cupy.cuda.Device().synchronize()
        outputs = {out: cupy.asnumpy(buffers[out]) for out in expected}
        for out, want in expected.items():
            np.testing.assert_allclose(outputs[out].astype(np.float64), want, rtol=rtol, atol=atol, err_msg=f"{name} {config}")
        if name == "gelu":  # tanh.approx is modelled, not reproduced: the model must track the device
            small = template.resolve_problem(template.small_problem)
            small_inputs = template.make_inputs(small, np.random.default_rng(0))
            emulated = quality_of(template.emulate(small_inputs, small, config), template.reference(small_inputs, small))
            measured = quality_of(outputs, expected)
            assert abs(emulated - measured) < 0.15, (config, emulated, measured)
    if template.baseline is not None:
        device = {a.name: cupy.zeros(a.shape(problem), dtype=a.dtype) for a in template.args if a.kind != "scalar"}
        for arg in template.args:
            if arg.kind in ("in", "inout"):
                device[arg.name] = cupy.asarray(inputs[arg.name])
        template.baseline(cupy, device, problem)
        cupy.cuda.Device().synchronize()
        for out, want in expected.items():
            np.testing.assert_allclose(cupy.asnumpy(device[out]).astype(np.float64), want, rtol=rtol, atol=atol,
                                       err_msg=f"{name} baseline")
