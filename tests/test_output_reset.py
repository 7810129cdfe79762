"""One reset / poison policy for kernel outputs: the template's, applied by every runner of a kernel."""

from __future__ import annotations

import ast
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from workbench.core.io import cupy_script
from workbench.core.domain.templates import Arg, load_templates, output_resets, poison_value, reset_buffers

from cpu_cuda import write_arg_buffers

ARGS = (
    Arg("x", "in", "float32", shape=lambda p: (4,)),
    Arg("y", "out", "float32", shape=lambda p: (4,)),
    Arg("n_bad", "out", "int32", shape=lambda p: (4,)),
    Arg("hist", "out", "uint32", shape=lambda p: (4,), reset="zero"),
    Arg("acc", "inout", "float64", shape=lambda p: (4,)),
    Arg("tmp", "scratch", "uint8", shape=lambda p: (4,)),
    Arg("n", "scalar", "int32", value=lambda p: 4),
)
INPUTS = {"x": np.arange(4, dtype=np.float32), "acc": np.array([1.5, 2.5, 3.5, 4.5])}


def _fresh() -> dict[str, np.ndarray]:
    return {a.name: np.full(4, 7, dtype=a.dtype) for a in ARGS if a.kind not in ("in", "scalar")}


def test_policy_poisons_outputs_zeroes_accumulators_and_restores_inout() -> None:
    by_name = {r.name: r for r in output_resets(ARGS)}
    assert list(by_name) == ["y", "n_bad", "hist", "acc", "tmp"]  # never an input or a scalar
    assert math.isnan(poison_value("float32")) and poison_value("int32") == 2**31 - 1
    assert poison_value("uint32") == 2**32 - 1 and poison_value("uint8") == 255
    assert by_name["hist"].fill == 0 and by_name["hist"].every_launch
    assert by_name["acc"].restore and by_name["acc"].every_launch
    assert not by_name["y"].every_launch and not by_name["tmp"].every_launch

    buffers = _fresh()
    reset_buffers(output_resets(ARGS), buffers, INPUTS, poison=True, upload=np.copyto)
    assert np.isnan(buffers["y"]).all() and (buffers["n_bad"] == 2**31 - 1).all()
    assert (buffers["hist"] == 0).all() and (buffers["tmp"] == 255).all()
    np.testing.assert_array_equal(buffers["acc"], INPUTS["acc"])


def test_timed_launches_reset_only_what_the_result_depends_on() -> None:
    buffers = _fresh()
    reset_buffers(output_resets(ARGS), buffers, INPUTS, poison=False, upload=np.copyto)
    assert (buffers["y"] == 7).all() and (buffers["tmp"] == 7).all()  # no poison while timing
    assert (buffers["hist"] == 0).all()
    np.testing.assert_array_equal(buffers["acc"], INPUTS["acc"])


class _DeviceArray(np.ndarray):
    """A NumPy array with CuPy's ``set`` (host -> device copy), standing in for device memory."""

    def set(self, values: np.ndarray) -> None:
        np.copyto(self, values)


def test_cuda_backend_and_cpu_harness_give_a_kernel_the_same_buffers(tmp_path: Path) -> None:
    from workbench.backends.cuda import CudaBackend

    template = load_templates()["reduce_sum"]  # a zeroed output, a zeroed scratch ticket, poisoned partials
    problem = template.resolve_problem(template.small_problem)
    inputs = template.make_inputs(problem, np.random.default_rng(0))
    backend = CudaBackend.__new__(CudaBackend)
    backend.template, backend.host_inputs = template, inputs
    backend.resets = template.output_resets()
    backend.buffers = {a.name: np.full(a.shape(problem), 3, dtype=a.dtype).view(_DeviceArray)
                       for a in template.args if a.kind not in ("in", "scalar")}
    backend._reset_outputs(poison=True)
    write_arg_buffers(template, problem, inputs, tmp_path)
    for name, device in backend.buffers.items():
        written = np.fromfile(tmp_path / f"{name}.bin", dtype=device.dtype)
        np.testing.assert_array_equal(written, np.asarray(device).reshape(-1))
    assert any(r.fill == 0 for r in backend.resets) and any(not r.every_launch for r in backend.resets)


def test_exported_script_runs_the_type_checked_module_code(tmp_path: Path) -> None:
    """The CuPy script's body is the module's source, and it resets buffers through the template's policy."""
    from workbench.core.io.export import _script_parts

    imports, _annotations, body = _script_parts()
    source = Path(cupy_script.__file__).read_text()
    assert body in source and imports.strip() in source
    tree = ast.parse(body)
    calls = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert "reset_buffers" in calls
    # the placeholders the export replaces are every upper-case name the body reads
    placeholders = {n.target.id for n in ast.parse(source).body
                    if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id.isupper()}
    assert read <= placeholders


def test_the_script_module_imports_without_cupy(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib
    import sys

    monkeypatch.setitem(sys.modules, "cupy", None)  # importing it would fail
    module: Any = importlib.reload(cupy_script)
    assert callable(module.main)
