"""Run the five core kernels: on the CPU always (indexing, tails, barriers, shuffles, atomics), on a GPU when present.

The rendered CUDA source is compiled as C++20 against a small shim: every CUDA thread of a block is
a real POSIX thread, ``__syncthreads`` is a block barrier (``std::barrier``), warp shuffles exchange
through a per-warp buffer between two per-warp barriers, and atomics are GCC's sequentially
consistent ``__atomic`` builtins (a compare-and-swap loop for float adds). Blocks run one
after another, which is one legal CUDA schedule (so the two-pass "last block" sees every partial).
All configs of one template go into one translation unit (each in its own namespace, its entry
renamed) so g++ runs once per template. Outputs are checked against the float64 reference within
the template's tolerance, and against ``emulate`` where the summation order is deterministic, so
the emulation the simulator trusts is checked against the kernel itself. Under the ``gpu`` marker
the same configs run on the device at full size, with the emulated quality and the CuPy baseline
checked too.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pytest

from workbench.core.domain.space import Config
from workbench.core.domain.templates import KernelTemplate, load_templates

from kernel_buffers import write_arg_buffers

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ to run kernels on the CPU")

SHIM = r"""
#include <barrier>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
struct wb_dim3 { unsigned x, y, z; };
static thread_local wb_dim3 threadIdx, blockIdx;
static wb_dim3 blockDim, gridDim;
static std::barrier<>* wb_block_barrier;
static std::barrier<>* wb_block_done;
static std::barrier<>* wb_warp_barriers[32];
static float wb_exchange[1024];
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)
#define __restrict__ __restrict
inline void __syncthreads() { wb_block_barrier->arrive_and_wait(); }
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
template <class T> inline T __ldcg(const T* p) { T v; __atomic_load(p, &v, __ATOMIC_SEQ_CST); return v; }
inline unsigned atomicAdd(unsigned* p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
inline float atomicAdd(float* p, float v) {  // a compare-and-swap loop, as std::atomic_ref<float>::fetch_add is
    float old = __ldcg(p), sum;
    do { sum = old + v; } while (!__atomic_compare_exchange(p, &old, &sum, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
    return old;
}
inline float __int_as_float(unsigned bits) { float f; memcpy(&f, &bits, 4); return f; }
inline float __expf(float x) { return expf(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
inline float2 make_float2(float a, float b) { return float2{a, b}; }
inline float4 make_float4(float a, float b, float c, float d) { return float4{a, b, c, d}; }
// Warp shuffles: all 32 lanes of the warp take part (the kernels keep shuffles warp-uniform).
inline float wb_shuffle(float v, unsigned src_lane) {
    const unsigned t = threadIdx.x, warp = t / 32;
    wb_exchange[t] = v;
    wb_warp_barriers[warp]->arrive_and_wait();
    const float r = wb_exchange[warp * 32 + src_lane];
    wb_warp_barriers[warp]->arrive_and_wait();
    return r;
}
inline float __shfl_xor_sync(unsigned, float v, int mask, int width = 32) {
    const unsigned lane = threadIdx.x % 32, src = lane ^ (unsigned)mask;
    return wb_shuffle(v, (src / width > lane / width) ? lane : src);  // later segments: own value
}
inline float __shfl_down_sync(unsigned, float v, unsigned delta, int width = 32) {
    const unsigned lane = threadIdx.x % 32;
    return wb_shuffle(v, (lane % width) + delta >= (unsigned)width ? lane : lane + delta);
}
// One thread per CUDA thread of a block, kept for the whole launch: each runs its thread of every
// block in turn, and no block starts before all threads have finished the one before (so blocks
// run one after another without creating blocks x threads threads). POSIX threads and GCC's
// atomic builtins rather than <thread>, <memory>, <vector> and <atomic>: their headers took most
// of g++'s time. The barriers stay std::barrier: with them a racy add in a kernel fails the test
// about as often as before (4 of 10 runs; 1 of 9 with POSIX barriers).
static void (*wb_body)();
static void* wb_thread(void* arg) {
    threadIdx = wb_dim3{(unsigned)(uintptr_t)arg, 0, 0};
    for (unsigned bx = 0; bx < gridDim.x; ++bx) {
        blockIdx = wb_dim3{bx, 0, 0};
        wb_body();
        wb_block_done->arrive_and_wait();
    }
    return nullptr;
}
static void wb_launch(wb_dim3 grid, unsigned threads, void (*body)()) {
    gridDim = grid;
    blockDim = wb_dim3{threads, 1, 1};
    wb_body = body;
    std::barrier<> block(threads), block_done(threads);
    wb_block_barrier = &block;
    wb_block_done = &block_done;
    const unsigned warps = (threads + 31) / 32;
    for (unsigned w = 0; w < warps; ++w) wb_warp_barriers[w] = new std::barrier<>(32);
    pthread_t* pool = (pthread_t*)malloc(sizeof(pthread_t) * threads);
    for (unsigned t = 0; t < threads; ++t) pthread_create(&pool[t], nullptr, wb_thread, (void*)(uintptr_t)t);
    for (unsigned t = 0; t < threads; ++t) pthread_join(pool[t], nullptr);
    free(pool);
    for (unsigned w = 0; w < warps; ++w) delete wb_warp_barriers[w];
}
template <class T> static T* wb_read(const char* name, size_t count) {
    T* p = (T*)aligned_alloc(64, ((sizeof(T) * count + 63) / 64) * 64);
    FILE* f = fopen(name, "rb");
    if (!f || fread(p, sizeof(T), count, f) != count) { fprintf(stderr, "cannot read %s\n", name); exit(2); }
    fclose(f);
    return p;
}
template <class T> static void wb_write(const char* name, const T* p, size_t count) {
    FILE* f = fopen(name, "wb");
    fwrite(p, sizeof(T), count, f);
    fclose(f);
}
"""

_CTYPES = {"float32": "float", "uint32": "unsigned", "int32": "int"}

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


def _unit(template: KernelTemplate, problem: Mapping[str, Any], configs: list[Config]) -> str:
    """One C++ file: every config in its own namespace with a renamed entry, and a main() that runs
    the config named by argv[1] on the .bin inputs and writes the .out outputs."""
    parts = [SHIM]
    for index, config in enumerate(configs):
        parts.append(f"#define {template.entry} {template.entry}_{index}\nnamespace cfg{index} {{")
        parts.append(template.render(config, problem))
        parts.append(f"}}\n#undef {template.entry}")
    main = ["int main(int argc, char** argv) {", "  const int which = atoi(argv[1]);"]
    params = []
    for arg in template.args:
        ctype = _CTYPES[arg.dtype]
        if arg.kind == "scalar":
            params.append(f"({ctype}){arg.value(problem)!r}")
            continue
        size = int(np.prod(arg.shape(problem)))
        main.append(f'  static {ctype}* {arg.name}; {arg.name} = wb_read<{ctype}>("{arg.name}.bin", {size});')
        params.append(arg.name)
    for index, config in enumerate(configs):
        grid, block = template.grid(problem, config), template.block(problem, config)
        assert grid[1:] == (1, 1) and block[1:] == (1, 1)
        call = f"cfg{index}::{template.entry}_{index}({', '.join(params)})"
        main.append(f"  if (which == {index}) wb_launch(wb_dim3{{{grid[0]}u, 1, 1}}, {block[0]}u, [] {{ {call}; }});")
    for arg in template.args:
        if arg.kind in ("out", "inout"):
            size = int(np.prod(arg.shape(problem)))
            main.append(f'  wb_write("{arg.name}.out", {arg.name}, {size});')
    main += ["  return 0;", "}"]
    return "\n".join(parts + main)


def _run_all(template: KernelTemplate, problem: Mapping[str, Any], configs: list[Config],
             inputs: Mapping[str, Any], workdir: Path) -> list[dict[str, np.ndarray]]:
    (workdir / "kernels.cpp").write_text(_unit(template, problem, configs))
    build = subprocess.run(
        ["g++", "-std=c++20", "-O1", "-w", "-fno-strict-aliasing", "-pthread", "kernels.cpp", "-o", "kernels"],
        cwd=workdir, capture_output=True, text=True,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    results = []
    for index in range(len(configs)):
        write_arg_buffers(template, problem, inputs, workdir)  # fresh outputs for every config
        run = subprocess.run(["./kernels", str(index)], cwd=workdir, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr[-3000:]
        results.append({
            a.name: np.fromfile(workdir / f"{a.name}.out", dtype=a.dtype).reshape(a.shape(problem))
            for a in template.args if a.kind in ("out", "inout")
        })
    return results


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
    for config, outputs in zip(configs, _run_all(template, problem, configs, inputs, tmp_path)):
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
