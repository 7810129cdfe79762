"""The CUDA backend against CuPy's real Python API, on a machine without a GPU.

CuPy imports without a device, and its compiled functions carry their C signatures in their
docstrings (``memcpy(intptr_t dst, intptr_t src, size_t size, int kind)``). So every CuPy name the
backend uses can be resolved, and every low-level call checked for its argument order and types,
before the first run on a GPU. Skipped when CuPy is not installed (``pip install -e '.[test]'``
installs it).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

cupy = pytest.importorskip("cupy", reason="CuPy is not installed (pip install -e '.[test]' installs it)")

from cupy.cuda import driver, function, runtime  # noqa: E402

from workbench.backends import cuda as backend  # noqa: E402
from workbench.backends.cuda_env import REQUIRED_HEADERS, find_header_dir, probe  # noqa: E402
from workbench.core.io import cupy_script  # noqa: E402
from workbench.core.model import cuda_module, gpus  # noqa: E402

#: Every file that calls CuPy's CUDA API: the backend, the module loading it shares with the
#: exported script, the script, and the device limits both read from the driver.
SOURCE = "\n".join(Path(module.__file__).read_text() for module in (backend, cuda_module, cupy_script, gpus))
_SIGNATURE = re.compile(r"^[\w.]+\((?P<params>[^)]*)\)(?:\s*->\s*(?P<returns>[\w ]+))?")


def signature(func: Any) -> tuple[list[tuple[str, str]], str | None]:
    """(parameters as (type, name), return type) from the signature CuPy embeds in a docstring."""
    match = _SIGNATURE.match((func.__doc__ or "").strip())
    assert match, f"no embedded signature in {func!r}: {func.__doc__!r}"
    params = [tuple(p.strip().rsplit(" ", 1)) for p in match.group("params").split(",") if p.strip()]
    return [(p[0], p[1]) if len(p) == 2 else ("object", p[0]) for p in params], match.group("returns")


class Checked:
    """Wraps a real CuPy module: a call is checked against the real function's embedded signature
    (count, and ints where it takes C integers), then recorded instead of run (there is no device)."""

    def __init__(self, module: Any) -> None:
        self.module = module
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def __getattr__(self, name: str) -> Any:
        real = getattr(self.module, name)
        if not callable(real):
            return real

        def call(*args: Any) -> None:
            params, _ = signature(real)
            assert len(args) == len(params), f"{name}{args}: CuPy takes {params}"
            for (ctype, pname), value in zip(params, args):
                if ctype in ("int", "intptr_t", "size_t"):
                    assert isinstance(value, (int, np.integer)) and not isinstance(value, bool), (name, pname, value)
            self.calls.append((name, args))

        return call


def _names_under(root: str) -> set[str]:
    """Dotted attribute chains the backend reads from a name (``cp.cuda.runtime.memcpy`` -> ``cuda.runtime.memcpy``)."""
    chains = set()
    for node in ast.walk(ast.parse(SOURCE)):
        if isinstance(node, ast.Attribute):
            parts, current = [], node
            while isinstance(current, ast.Attribute):
                parts.append(current.attr)
                current = current.value
            if isinstance(current, ast.Name) and current.id == root:
                chains.add(".".join(reversed(parts)))
    return chains


def _resolve(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def test_every_cupy_name_the_backend_uses_exists() -> None:
    used = {("cupy", c) for c in _names_under("cp")}
    used |= {("runtime", c) for c in _names_under("runtime") | _names_under("rt")}
    used |= {("driver", c) for c in _names_under("driver")}
    assert {("runtime", "memcpy"), ("driver", "funcSetAttribute"), ("cupy", "cuda.function.Module"),
            ("runtime", "deviceGetPCIBusId")} <= used
    roots = {"cupy": cupy, "runtime": runtime, "driver": driver}
    missing = []
    for root, chain in sorted(used):
        try:
            _resolve(roots[root], chain)
        except AttributeError:
            missing.append(f"{root}.{chain}")
    assert not missing, missing
    for name in gpus.DEVICE_ATTRIBUTES:
        assert isinstance(getattr(runtime, name), int), name


def test_module_get_global_var_returns_a_bare_address_not_a_memory_pointer() -> None:
    # Module.get_global_var(self, name) returns driver.moduleGetGlobal(...), documented -> intptr_t;
    # only RawModule.get_global wraps the address in a MemoryPointer (which has copy_from_host).
    assert signature(function.Module.get_global_var)[0] == [("object", "self"), ("object", "name")]
    assert signature(driver.moduleGetGlobal)[1] == "intptr_t"
    assert "MemoryPointer" in cupy.RawModule.get_global.__doc__
    assert "get_global_var(name)" not in SOURCE.replace("int(module.get_global_var(name))", "")


def test_constant_upload_calls_cudamemcpy_as_cupy_declares_it() -> None:
    checked = Checked(runtime)

    class Module:  # get_global_var's documented result: an int address (see the test above)
        def get_global_var(self, name: str) -> int:
            return 0x7F0000001000

    backend.upload_constant(checked, Module(), "d_filter", np.ones(225, np.float32))
    (name, (dst, src, size, kind)), = checked.calls
    assert name == "memcpy" and dst == 0x7F0000001000 and size == 900 and kind == runtime.memcpyHostToDevice


def test_function_has_no_dynamic_shared_memory_property_and_the_driver_call_exists() -> None:
    assert not hasattr(function.Function, "max_dynamic_shared_size_bytes")
    assert hasattr(cupy.RawKernel, "max_dynamic_shared_size_bytes")  # the property lives here
    params, _ = signature(driver.funcSetAttribute)
    assert params == [("intptr_t", "f"), ("int", "attribute"), ("int", "value")]
    assert "ptr" in dir(function.Function)
    checked = Checked(driver)

    class Function:  # only the ptr attribute is used
        ptr = 0x7F00

    assert backend.opt_in_shared_memory(checked, Function(), 40 * 1024, 16 * 1024)
    assert checked.calls == [("funcSetAttribute", (0x7F00, driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                   16 * 1024))]


def test_loaded_kernel_resources_are_asked_of_the_driver_as_cupy_declares_it() -> None:
    assert signature(driver.funcGetAttribute) == ([("int", "attribute"), ("intptr_t", "f")], "int")
    asked: list[tuple[int, int]] = []

    class Driver:  # the real constants; the call checked against the signature above, answered here
        CU_FUNC_ATTRIBUTE_NUM_REGS = driver.CU_FUNC_ATTRIBUTE_NUM_REGS
        CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = driver.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES

        def funcGetAttribute(self, attribute: int, f: int) -> int:
            asked.append((attribute, f))
            return {driver.CU_FUNC_ATTRIBUTE_NUM_REGS: 47, driver.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: 4224}[attribute]

    class Function:
        ptr = 0x7F00

    assert cuda_module.function_resources(Driver(), Function()) == (47, 4224)
    assert asked == [(driver.CU_FUNC_ATTRIBUTE_NUM_REGS, 0x7F00), (driver.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, 0x7F00)]


def test_pci_bus_id_lookup_exists_on_both_sides() -> None:
    assert signature(runtime.deviceGetPCIBusId) == ([("int", "device")], "str")
    pynvml = pytest.importorskip("pynvml", reason="nvidia-ml-py is not installed")
    assert callable(pynvml.nvmlDeviceGetHandleByPciBusId)


@pytest.mark.parametrize("status,sticky", [(700, True), (716, True), (719, True), (701, False), (1, False), (2, False)])
def test_real_runtime_errors_are_classified_by_their_status(status: int, sticky: bool) -> None:
    error = runtime.CUDARuntimeError(status)  # builds without a device (the name comes from cudart)
    assert error.status == status
    assert backend.is_sticky(error) is sticky, str(error)


def test_probe_reports_a_missing_device_not_a_missing_cupy() -> None:
    env = probe()
    assert env.cupy_version == cupy.__version__
    if env.devices:
        pytest.skip("a CUDA device is visible")
    assert not any(m.startswith("CuPy is not installed") for m in env.missing())
    assert any(m.startswith("no CUDA device visible to CuPy") for m in env.missing())


def test_cupys_own_kernels_find_the_cuda_headers_through_the_import_path(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """CuPy compiles its own kernels (fill, copies, reductions) with NVRTC against its headers and
    the CUDA runtime's; compile one that includes what they include, with the folders the import path
    finds, for a real architecture. No device needed."""
    headers = find_header_dir()
    if headers is None:
        pytest.skip("CUDA headers not installed (nvidia-cuda-runtime-cu12, part of the cuda12 and test extras)")
    assert all((Path(headers) / h).is_file() for h in REQUIRED_HEADERS)
    from cupy._core import core
    from workbench.core.model.compiler import compile_cuda

    monkeypatch.setenv("KERNEL_WORKBENCH_CACHE_DIR", str(tmp_path))
    source = ('#include <cupy/complex.cuh>\n#include <cupy/carray.cuh>\n#include <cuda_fp16.h>\n'
              'extern "C" __global__ void fill(CArray<float, 1> a, float v) {\n'
              '  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < a.size()) a[i] = v; }\n')
    options = (f"-I{core._get_header_dir_path()}", f"-I{headers}", *core._get_cccl_include_options())
    compiled = compile_cuda(source, arch="sm_90", options=options, entry="fill", use_cache=False)
    assert compiled.ok, compiled.log


def test_the_verification_uses_only_functions_cupy_has() -> None:
    from workbench.core.model import verify

    tree = ast.parse(Path(verify.__file__).read_text())
    used = {node.attr for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "xp"}
    assert {"abs", "isfinite", "count_nonzero", "argmax", "maximum", "inf", "float64"} <= used
    assert all(hasattr(cupy, name) for name in used), sorted(n for n in used if not hasattr(cupy, n))
    assert "copy" in cupy.ndarray.astype.__doc__


@pytest.mark.parametrize("status,restart", [(701, False), (700, True)])
def test_a_refused_launch_keeps_the_worker_and_an_illegal_address_replaces_it(status: int, restart: bool) -> None:
    from workbench.backends.base import BackendSpec
    from workbench.core.domain.measurement import Status

    cuda_backend = backend.CudaBackend(BackendSpec("cuda", {"kernel": "conv2d"}))
    error = runtime.CUDARuntimeError(status)
    measurement = cuda_backend._cuda_failure(Status.LAUNCH_ERROR, "launch refused", error, {"registers": 255})
    assert cuda_backend.needs_restart is restart
    assert measurement.status is Status.LAUNCH_ERROR and measurement.details == {"registers": 255}
    assert ("the worker is replaced" in measurement.message) is restart
