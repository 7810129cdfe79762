"""Run rendered CUDA kernels on the CPU, so every template's indexing, tails, barriers, shuffles and
atomics are checked against its reference without a GPU (tests/test_templates_run.py,
tests/test_templates_more.py, tests/test_kernel_spec.py).

The rendered source is compiled as C++20 against a small shim: every CUDA thread of a block is a
real POSIX thread, kept for the whole launch, running its thread of every block in turn; no block
starts before all threads have finished the one before. Blocks run one after another, which is one
legal CUDA schedule (so a two-pass "last block" sees every partial), without creating blocks x
threads threads. ``__syncthreads`` is a block barrier (``std::barrier``: with it a racy add in a
kernel fails a test about as often as 4 in 10 runs, with POSIX barriers 1 in 9) that a thread which
returned no longer holds up, as on a GPU; warp shuffles
exchange through a per-warp buffer between two per-warp barriers, and atomics are GCC's sequentially
consistent ``__atomic`` builtins (a compare-and-swap loop for float adds). POSIX threads and the
builtins rather than ``<thread>``, ``<atomic>`` and the containers: their headers took most of g++'s
time.

All configs of one template go into one translation unit (each in its own namespace, its entry
renamed), so g++ runs once per template; ``./kernels INDEX`` runs one config on the ``.bin``
inputs and writes the ``.out`` outputs.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pytest

from workbench.core.domain.space import Config
from workbench.core.domain.templates import KernelTemplate, reset_buffers

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
static thread_local unsigned wb_linear_id;
static wb_dim3 blockDim, gridDim;
static std::barrier<>* wb_block_barrier;
static std::barrier<>* wb_warp_barriers[32];
static unsigned wb_threads;  // threads per block: the last warp may be partial
// A block's barriers count its threads; one that returns early drops out of them (a GPU counts an
// exited thread as arrived), so they are rebuilt at full strength before the next block starts.
static void wb_rebuild_barriers() {
    delete wb_block_barrier;
    wb_block_barrier = new std::barrier<>((std::ptrdiff_t)wb_threads);
    for (unsigned w = 0; w < (wb_threads + 31) / 32; ++w) {  // a partial last warp waits only for the lanes it has
        delete wb_warp_barriers[w];
        wb_warp_barriers[w] = new std::barrier<>((std::ptrdiff_t)(wb_threads - 32 * w < 32 ? wb_threads - 32 * w : 32));
    }
}
struct wb_between_blocks { void operator()() noexcept { wb_rebuild_barriers(); } };
static std::barrier<wb_between_blocks>* wb_block_done;
static float wb_exchange[1024];
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __constant__
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
inline void __syncthreads() { wb_block_barrier->arrive_and_wait(); }
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
template <class T> inline T __ldg(const T* p) { return *p; }
template <class T> inline T __ldcg(const T* p) { T v; __atomic_load(p, &v, __ATOMIC_SEQ_CST); return v; }
inline unsigned atomicAdd(unsigned* p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
inline float atomicAdd(float* p, float v) {  // a compare-and-swap loop, as std::atomic_ref<float>::fetch_add is
    float old = __ldcg(p), sum;
    do { sum = old + v; } while (!__atomic_compare_exchange(p, &old, &sum, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
    return old;
}
template <class T> inline T min(T a, T b) { return b < a ? b : a; }
template <class T> inline T max(T a, T b) { return a < b ? b : a; }
inline float __int_as_float(unsigned bits) { float f; memcpy(&f, &bits, 4); return f; }
inline float __expf(float x) { return expf(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
inline float2 make_float2(float a, float b) { return float2{a, b}; }
inline float4 make_float4(float a, float b, float c, float d) { return float4{a, b, c, d}; }
// Warp shuffles: all 32 lanes of the warp take part (the kernels keep shuffles warp-uniform).
inline float wb_shuffle(float v, unsigned src_lane) {
    const unsigned t = wb_linear_id, warp = t / 32;
    wb_exchange[t] = v;
    wb_warp_barriers[warp]->arrive_and_wait();
    const bool present = warp * 32 + src_lane < wb_threads;  // a lane past a partial warp's end: own value
    const float r = present ? wb_exchange[warp * 32 + src_lane] : v;
    wb_warp_barriers[warp]->arrive_and_wait();
    return r;
}
inline float __shfl_xor_sync(unsigned, float v, int mask, int width = 32) {
    const unsigned lane = wb_linear_id % 32, src = lane ^ (unsigned)mask;
    return wb_shuffle(v, (src / width > lane / width) ? lane : src);  // later segments: own value
}
inline float __shfl_down_sync(unsigned, float v, unsigned delta, int width = 32) {
    const unsigned lane = wb_linear_id % 32;
    return wb_shuffle(v, (lane % width) + delta >= (unsigned)width ? lane : lane + delta);
}
static void (*wb_body)();
static void* wb_thread(void* arg) {
    const unsigned t = (unsigned)(uintptr_t)arg;
    wb_linear_id = t;
    threadIdx = wb_dim3{t % blockDim.x, (t / blockDim.x) % blockDim.y, t / (blockDim.x * blockDim.y)};
    for (unsigned bz = 0; bz < gridDim.z; ++bz)
        for (unsigned by = 0; by < gridDim.y; ++by)
            for (unsigned bx = 0; bx < gridDim.x; ++bx) {
                blockIdx = wb_dim3{bx, by, bz};
                wb_body();
                wb_block_barrier->arrive_and_drop();  // returned, maybe early: no later barrier waits for it
                wb_warp_barriers[t / 32]->arrive_and_drop();
                wb_block_done->arrive_and_wait();  // the next block starts when this one is done
            }
    return nullptr;
}
static void wb_launch(wb_dim3 grid, wb_dim3 block, void (*body)()) {
    gridDim = grid;
    blockDim = block;
    wb_body = body;
    const unsigned threads = block.x * block.y * block.z;
    wb_threads = threads;
    std::barrier<wb_between_blocks> block_done(threads);
    wb_block_done = &block_done;
    wb_rebuild_barriers();
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 1 << 18);  // 1,024 threads x the default 8 MiB is too much address space
    pthread_t* pool = (pthread_t*)malloc(sizeof(pthread_t) * threads);
    for (unsigned t = 0; t < threads; ++t) pthread_create(&pool[t], &attr, wb_thread, (void*)(uintptr_t)t);
    for (unsigned t = 0; t < threads; ++t) pthread_join(pool[t], nullptr);
    free(pool);
    pthread_attr_destroy(&attr);
    for (unsigned w = 0; w < (threads + 31) / 32; ++w) {
        delete wb_warp_barriers[w];
        wb_warp_barriers[w] = nullptr;
    }
    delete wb_block_barrier;
    wb_block_barrier = nullptr;
}
template <class T> static T* wb_read(const char* name, size_t count) {
    T* p = (T*)aligned_alloc(64, ((sizeof(T) * count + 63) / 64) * 64);
    FILE* f = fopen(name, "rb");
    if (!f || fread(p, sizeof(T), count, f) != count) { fprintf(stderr, "cannot read %s\n", name); exit(2); }
    fclose(f);
    return p;
}
static void wb_read_into(const char* name, void* p, size_t bytes) {
    FILE* f = fopen(name, "rb");
    if (!f || fread(p, 1, bytes, f) != bytes) { fprintf(stderr, "cannot read %s\n", name); exit(2); }
    fclose(f);
}
template <class T> static void wb_write(const char* name, const T* p, size_t count) {
    FILE* f = fopen(name, "wb");
    fwrite(p, sizeof(T), count, f);
    fclose(f);
}
"""

_CTYPES = {"float32": "float", "uint32": "unsigned", "int32": "int", "float64": "double"}


def write_arg_buffers(template: KernelTemplate, problem: Mapping[str, Any], inputs: Mapping[str, Any], workdir: Path) -> None:
    """Write every array argument of ``template`` to ``workdir/<name>.bin``: inputs as given, outputs
    reset by the template's own policy (:meth:`KernelTemplate.output_resets`, the one the CUDA
    backend and the exported CuPy script apply), so an output holds what it would hold on a GPU
    before the checked launch: zeros where the template resets it, the inputs for inout, else poison."""
    buffers: dict[str, np.ndarray] = {}
    for arg in template.args:
        if arg.kind == "scalar":
            continue
        if arg.kind in ("in", "inout"):
            buffers[arg.name] = np.array(inputs[arg.name], dtype=arg.dtype, order="C")
        else:
            buffers[arg.name] = np.empty(arg.shape(problem), dtype=arg.dtype)
    reset_buffers(template.output_resets(), buffers, inputs, poison=True, upload=np.copyto)
    for name, data in buffers.items():
        data.tofile(workdir / f"{name}.bin")
    for name in template.constants:
        np.ascontiguousarray(inputs[name], dtype=np.float32).tofile(workdir / f"{name}.bin")


def translation_unit(template: KernelTemplate, problem: Mapping[str, Any], configs: list[Config]) -> str:
    """One C++ file: the shim, every config in its own namespace with a renamed entry, and a main()
    that runs the config named by argv[1]."""
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
        assert block[0] * block[1] * block[2] <= 1024, f"{config}: more threads per block than CUDA allows"
        call = f"cfg{index}::{template.entry}_{index}({', '.join(params)})"
        main.append(f"  if (which == {index}) {{")
        for name in template.constants:
            main.append(f'    wb_read_into("{name}.bin", cfg{index}::{name}, sizeof(cfg{index}::{name}));')
        main.append(f"    wb_launch(wb_dim3{{{grid[0]}u, {grid[1]}u, {grid[2]}u}}, "
                    f"wb_dim3{{{block[0]}u, {block[1]}u, {block[2]}u}}, [] {{ {call}; }});")
        main.append("  }")
    for arg in template.args:
        if arg.kind in ("out", "inout"):
            size = int(np.prod(arg.shape(problem)))
            main.append(f'  wb_write("{arg.name}.out", {arg.name}, {size});')
    main += ["  return 0;", "}"]
    return "\n".join(parts + main)


def run_configs(template: KernelTemplate, problem: Mapping[str, Any], configs: list[Config],
                inputs: Mapping[str, Any], workdir: Path) -> list[dict[str, np.ndarray]]:
    """Compile every config of ``template`` into one program, run each on fresh buffers, and return
    each one's outputs (by argument name)."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "kernels.cpp").write_text(translation_unit(template, problem, configs))
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
