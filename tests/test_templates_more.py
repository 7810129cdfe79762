"""The transpose, sgemm, conv2d, stencil and histogram templates.

Besides loading, spaces, references, profiles and NVRTC compilation, the kernels themselves are
checked without a GPU: the rendered CUDA source is compiled as C++ against a small shim (each
CUDA thread a real thread, ``__syncthreads`` a barrier, atomics GCC builtins) and run on
the small problem, so indexing, halos, tails and barriers are verified against the float64
reference on any machine with g++. The same check runs on a real device under the ``gpu`` marker.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pytest

from workbench.core.domain.space import GROUPS, Config
from workbench.core.domain.templates import KernelTemplate, load_templates

from cpu_cuda import needs_gxx, run_configs

NAMES = ("transpose", "sgemm", "conv2d", "stencil", "histogram")
#: Valid configs of the default problem: hundreds to tens of thousands, as the spaces were designed.
EXPECTED_COUNTS = {"transpose": 720, "sgemm": 5152, "conv2d": 4362, "stencil": 460, "histogram": 250}


@pytest.fixture(scope="module")
def templates() -> dict[str, KernelTemplate]:
    loaded = load_templates()
    return {name: loaded[name] for name in NAMES}


def _inputs(template: KernelTemplate, seed: int = 0) -> tuple[dict[str, Any], dict[str, Any]]:
    problem = template.resolve_problem(template.small_problem)
    return problem, template.make_inputs(problem, np.random.default_rng(seed))


# --- structure ---------------------------------------------------------------------------------------


def test_all_five_load_with_documented_slots(templates: dict[str, KernelTemplate]) -> None:
    for name, template in templates.items():
        assert template.name == name
        assert template.source_path.endswith(f"{name}.cu")
        for slot in template.slots:
            assert slot.group in GROUPS, (name, slot.name)
            assert slot.doc and "\n" not in slot.doc, (name, slot.name)
            # every slot reaches the source as its macro
            assert slot.name.upper() in template.source, (name, slot.name)
        assert template.default_config() is not None, name


def test_space_sizes(templates: dict[str, KernelTemplate]) -> None:
    for name, template in templates.items():
        count = template.space().count()
        assert count == EXPECTED_COUNTS[name], (name, count)
        assert 100 <= count <= 50_000
        # the small problem keeps the whole space valid, so quick checks can reach any config
        assert template.space(template.small_problem).count() == count, name


def test_conv2d_space_is_the_recorded_landscape(templates: dict[str, KernelTemplate], landscape) -> None:
    data = json.loads(landscape("convolution_A100.json").read_text())
    keys = data["tune_params_keys"]
    template = templates["conv2d"]
    slot_names = [s.name for s in template.slots]
    assert keys[: len(slot_names)] == slot_names
    for slot in template.slots:
        assert list(slot.values) == data["tune_params"][slot.name]
    recorded = {Config({k: int(v) for k, v in zip(slot_names, key.split(","))}) for key in data["cache"]}
    assert recorded == set(template.space())


def test_sgemm_space_depends_on_problem(templates: dict[str, KernelTemplate]) -> None:
    space = templates["sgemm"].space({"m": 96, "n": 4096, "k": 4096})
    assert 0 < space.count() < EXPECTED_COUNTS["sgemm"]
    assert all(96 % c["block_m"] == 0 for c in space)


def test_constants_are_inputs_not_args(templates: dict[str, KernelTemplate]) -> None:
    conv = templates["conv2d"]
    assert conv.constants == ("d_filter",)
    assert "d_filter" not in {a.name for a in conv.args}
    assert "__constant__ float d_filter" in conv.source
    problem, inputs = _inputs(conv)
    assert inputs["d_filter"].dtype == np.float32 and inputs["d_filter"].size == 15 * 15


# --- references --------------------------------------------------------------------------------------


def test_inputs_are_fresh_and_nonzero(templates: dict[str, KernelTemplate]) -> None:
    for name, template in templates.items():
        _, first = _inputs(template, seed=1)
        _, second = _inputs(template, seed=2)
        for arg in template.args:
            if arg.kind in ("in", "inout"):
                array = first[arg.name]
                assert array.dtype == np.dtype(arg.dtype), (name, arg.name)
                assert array.shape == arg.shape(template.small_problem), (name, arg.name)
                assert np.count_nonzero(array) > 0.9 * array.size, (name, arg.name)
                assert not np.array_equal(array, second[arg.name]), (name, arg.name)


def test_references_against_direct_numpy(templates: dict[str, KernelTemplate]) -> None:
    problem, x = _inputs(templates["transpose"])
    np.testing.assert_array_equal(templates["transpose"].reference(x, problem)["y"], x["x"].T)

    problem, ab = _inputs(templates["sgemm"])
    got = templates["sgemm"].reference(ab, problem)["c"]
    want = np.einsum("ik,kj->ij", ab["a"].astype(np.float64), ab["b"].astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)

    problem, conv = _inputs(templates["conv2d"])
    windows = np.lib.stride_tricks.sliding_window_view(conv["input"].astype(np.float64), (15, 15))
    want = np.einsum("yxij,ij->yx", windows, conv["d_filter"].astype(np.float64))
    np.testing.assert_allclose(templates["conv2d"].reference(conv, problem)["output"], want, rtol=1e-12, atol=1e-12)

    problem, hist = _inputs(templates["histogram"])
    want_hist, _ = np.histogram(hist["data"], bins=np.arange(problem["bins"] + 1))
    np.testing.assert_array_equal(templates["histogram"].reference(hist, problem)["hist"], want_hist)
    assert templates["histogram"].reference(hist, problem)["hist"].sum() == problem["n"]


@pytest.mark.parametrize("points", [5, 7])
def test_stencil_reference_point_by_point(templates: dict[str, KernelTemplate], points: int) -> None:
    template = templates["stencil"]
    problem = template.resolve_problem({"nx": 6, "ny": 5, "nz": 4, "points": points})
    u = template.make_inputs(problem, np.random.default_rng(3))["u"].astype(np.float64)
    got = template.reference({"u": u.astype(np.float32)}, problem)["v"]
    c1 = 0.5 / (points - 1)
    nz, ny, nx = u.shape
    for z in range(nz):
        for y in range(ny):
            for x in range(nx):
                edge = x in (0, nx - 1) or y in (0, ny - 1) or (points == 7 and z in (0, nz - 1))
                if edge:
                    want = u[z, y, x]
                else:
                    near = u[z, y, x - 1] + u[z, y, x + 1] + u[z, y - 1, x] + u[z, y + 1, x]
                    if points == 7:
                        near += u[z - 1, y, x] + u[z + 1, y, x]
                    want = 0.5 * u[z, y, x] + c1 * near
                assert got[z, y, x] == pytest.approx(want, rel=1e-6, abs=1e-7)


# --- profiles ----------------------------------------------------------------------------------------


def _check_profile(name: str, template: KernelTemplate, config: Config) -> None:
    problem = template.resolve_problem()
    p = template.profile(problem, config)
    for field in ("bytes_read", "bytes_written", "flops", "atomics", "shared_atomics", "smem_accesses"):
        value = getattr(p, field)
        assert math.isfinite(value) and value >= 0, (name, field, value)
    assert p.bytes_read >= 0.99 * template.bytes_moved(problem) - p.bytes_written or name == "histogram"
    assert 0 < p.coalescing <= 1.0, (name, config)
    assert 1.0 <= p.bank_conflict_ways <= 32.0, (name, config)
    assert 0.0 <= p.l2_reuse < 1.0
    assert p.access_bytes in (4, 8, 16)
    assert p.work_per_thread >= 1
    assert p.notes


def test_profiles_sane_over_samples(templates: dict[str, KernelTemplate]) -> None:
    rng = np.random.default_rng(7)
    for name, template in templates.items():
        space = template.space()
        for config in [space.default_config(), *space.sample(rng, 6)]:
            _check_profile(name, template, config)


def test_profiles_tell_designs_apart(templates: dict[str, KernelTemplate]) -> None:
    t = templates["transpose"]
    base = t.space().default_config()  # 32x32 tile, shared, padded
    padded = t.profile(t.problem, base)
    unpadded = t.profile(t.problem, base.replace(smem_padding=False))
    naive = t.profile(t.problem, base.replace(smem_padding=False, use_shared=False))
    assert padded.bank_conflict_ways == 1.0 and unpadded.bank_conflict_ways > 8
    assert naive.coalescing < 0.5 < padded.coalescing == 1.0

    g = templates["sgemm"]
    small = g.space().config({**g.default, "block_m": 64, "block_n": 64, "block_k": 16, "thread_m": 4, "thread_n": 4})
    big = g.space().default_config()
    assert g.profile(g.problem, big).bytes_read < g.profile(g.problem, small).bytes_read

    c = templates["conv2d"]
    shm = c.space().default_config()
    glob = shm.replace(use_shmem=0)
    assert c.profile(c.problem, shm).bytes_read < c.profile(c.problem, glob).bytes_read
    assert c.profile(c.problem, shm).syncs_per_block == 1 and c.profile(c.problem, glob).smem_accesses == 0

    s = templates["stencil"]
    one = s.space().config({**s.default, "z_per_thread": 1})
    many = s.space().config({**s.default, "z_per_thread": 16})
    assert s.profile(s.problem, many).bytes_read < s.profile(s.problem, one).bytes_read

    h = templates["histogram"]
    private = h.profile(h.problem, h.space().default_config())
    direct = h.profile(h.problem, h.space().config({**h.default, "strategy": "global_atomic", "copies": 1}))
    assert private.atomics < direct.atomics == h.problem["n"]
    assert private.shared_atomics == h.problem["n"] and direct.shared_atomics == 0
    # with a hot bin, more private copies spread the lanes that collide on it
    ways = [h.profile(h.problem, h.space().default_config().replace(copies=c)).bank_conflict_ways for c in (1, 2, 4, 8)]
    assert ways == sorted(ways, reverse=True) and ways[0] > 2 * ways[-1]
    assert direct.atomic_targets < h.problem["bins"]  # the hot bin concentrates the global atomics


# --- NVRTC -------------------------------------------------------------------------------------------


def test_default_and_sample_compile_with_nvrtc(templates: dict[str, KernelTemplate], tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("cuda.bindings.nvrtc")
    from workbench.core.model.compiler import compile_cuda

    monkeypatch.setenv("KERNEL_WORKBENCH_CACHE_DIR", str(tmp_path))
    rng = np.random.default_rng(11)
    for name, template in templates.items():
        space = template.space()
        sample = space.sample(rng, 1)
        if name == "conv2d":  # fully unrolled big tiles take NVRTC tens of seconds: sample 1x1 tiles here
            sample = space.with_domains({"tile_size_x": (1,), "tile_size_y": (1,)}).sample(rng, 1)
        for config in [space.default_config(), *sample]:
            result = compile_cuda(template.render(config), arch="sm_90")
            assert result.ok, (name, config, result.error)
            assert 0 < result.registers <= 255
    conv = compile_cuda(templates["conv2d"].render(templates["conv2d"].space().default_config()), arch="sm_90")
    assert conv.smem_bytes == 30 * 30 * 4  # (16 + 14) x (16 + 14) staged floats


# --- running the kernels on the CPU ------------------------------------------------------------------

def _assert_matches(template: KernelTemplate, outputs: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray],
                    what: str) -> None:
    rtol, atol = template.tolerance
    for name, want in expected.items():
        got = outputs[name].astype(np.float64)
        assert np.all(np.isfinite(got)), f"{what}: {name} has unwritten (NaN) elements"
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)


#: Configs run on the CPU besides each default: chosen to reach the branches the defaults miss.
CPU_CONFIGS: dict[str, list[dict[str, Any]]] = {
    "transpose": [
        {"tile_dim": 64, "block_rows": 4, "tiles_per_block": 2, "vector_width": 4, "use_shared": True,
         "smem_padding": False, "read_only": True},
        {"tile_dim": 16, "block_rows": 2, "tiles_per_block": 4, "vector_width": 1, "use_shared": False,
         "smem_padding": False, "read_only": False},
    ],
    "sgemm": [
        {"block_m": 64, "block_n": 32, "block_k": 16, "thread_m": 4, "thread_n": 2, "vector_loads": False,
         "double_buffer": False, "unroll_k": 4},
    ],
    "conv2d": [
        {"block_size_x": 48, "block_size_y": 2, "tile_size_x": 3, "tile_size_y": 2, "read_only": 1, "use_padding": 1,
         "use_shmem": 1},
        {"block_size_x": 32, "block_size_y": 4, "tile_size_x": 2, "tile_size_y": 3, "read_only": 0, "use_padding": 0,
         "use_shmem": 0},
    ],
    "stencil": [
        {"block_x": 16, "block_y": 4, "z_per_thread": 8, "use_shared": True, "read_only": True},
    ],
    "histogram": [
        {"strategy": "global_atomic", "block_size": 128, "items_per_thread": 2, "vector_width": 1, "copies": 1},
        {"strategy": "shared_private", "block_size": 64, "items_per_thread": 16, "vector_width": 4, "copies": 8},
    ],
}


@needs_gxx
@pytest.mark.parametrize("name", NAMES)
def test_kernels_compute_the_reference_on_cpu(templates: dict[str, KernelTemplate], name: str,
                                              tmp_path: Path) -> None:
    template = templates[name]
    problem, inputs = _inputs(template)
    expected = template.reference(inputs, problem)
    space = template.space(problem)
    configs = [space.default_config(), *(space.config(c) for c in CPU_CONFIGS[name])]
    for config, outputs in zip(configs, run_configs(template, problem, configs, inputs, tmp_path)):
        _assert_matches(template, outputs, expected, f"{name} {config}")


@needs_gxx
def test_stencil_five_point_on_cpu(templates: dict[str, KernelTemplate], tmp_path: Path) -> None:
    template = templates["stencil"]
    problem = template.resolve_problem({**template.small_problem, "points": 5})
    inputs = template.make_inputs(problem, np.random.default_rng(5))
    config = template.space(problem).config({**template.default, "use_shared": True, "z_per_thread": 2})
    [outputs] = run_configs(template, problem, [config], inputs, tmp_path)
    _assert_matches(template, outputs, template.reference(inputs, problem), "stencil 5-point")


# --- on a device -------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("name", NAMES)
def test_kernels_compute_the_reference_on_gpu(templates: dict[str, KernelTemplate], name: str, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    cupy = pytest.importorskip("cupy")
    from workbench.core.model.cuda_module import upload_constant
    from workbench.core.model.compiler import compile_cuda

    monkeypatch.setenv("KERNEL_WORKBENCH_CACHE_DIR", str(tmp_path))
    arch = f"sm_{cupy.cuda.Device().compute_capability}"
    template = templates[name]
    problem, inputs = _inputs(template)
    expected = template.reference(inputs, problem)
    space = template.space(problem)
    for config in [space.default_config(), *(space.config(c) for c in CPU_CONFIGS[name])]:
        compiled = compile_cuda(template.render(config, problem), arch=arch)
        assert compiled.ok, compiled.error
        module = cupy.cuda.function.Module()
        module.load(compiled.cubin)
        for constant in template.constants:  # get_global_var gives a bare address: copy with cudaMemcpy
            upload_constant(cupy.cuda.runtime, module, constant, inputs[constant])
        buffers = []
        for arg in template.args:
            if arg.kind in ("in", "inout"):
                buffers.append(cupy.asarray(inputs[arg.name]))
            elif arg.reset == "zero":
                buffers.append(cupy.zeros(arg.shape(problem), dtype=arg.dtype))
            else:
                buffers.append(cupy.full(arg.shape(problem), np.nan if np.dtype(arg.dtype).kind == "f" else -1).astype(arg.dtype))
        module.get_function(template.entry)(template.grid(problem, config), template.block(problem, config), tuple(buffers))
        cupy.cuda.Device().synchronize()
        outputs = {a.name: cupy.asnumpy(b) for a, b in zip(template.args, buffers) if a.kind in ("out", "inout")}
        _assert_matches(template, outputs, expected, f"{name} {config}")
    if template.baseline is not None:  # the library baseline computes the same thing into the outputs
        device = {a.name: cupy.zeros(a.shape(problem), dtype=a.dtype) for a in template.args if a.kind != "scalar"}
        for key in [a.name for a in template.args if a.kind in ("in", "inout")] + list(template.constants):
            device[key] = cupy.asarray(inputs[key])
        template.baseline(cupy, device, problem)
        cupy.cuda.Device().synchronize()
        baseline_out = {n: cupy.asnumpy(device[n]) for n in expected}
        _assert_matches(template, baseline_out, expected, f"{name} baseline")
