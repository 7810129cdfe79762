"""A template without a reference (the first valid config's outputs stand in), each output checked with
its own tolerance, and a reference file that runs only in a run's worker process."""

from __future__ import annotations

import copy
import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from workbench.backends.base import BackendSpec, EvalLimits
from workbench.backends.templated import template_target
from workbench.core.domain.kernel_spec import SPEC_SUFFIX, save_template_folder, template_from_spec
from workbench.core.domain.measurement import Status
from workbench.core.domain.templates import load_templates, no_reference
from workbench.core.model.verify import NO_REFERENCE_NOTE, REFERENCE_CONFIG, adopt_reference, verify_outputs

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "saxpy"
SPEC = json.loads((EXAMPLE / f"saxpy{SPEC_SUFFIX}").read_text())
SOURCE = (EXAMPLE / "saxpy.cu").read_text()


def _two_outputs_spec() -> dict[str, Any]:
    spec = copy.deepcopy(SPEC)
    spec["args"].insert(3, {"name": "twice", "kind": "out", "dtype": "float32", "shape": ["n"],
                            "rtol": 1e-2, "atol": 1e-3})
    spec["reference"]["outputs"]["twice"] = "2 * x"
    return spec


# --- per-output tolerance -------------------------------------------------------------------------


def test_each_output_is_checked_with_its_own_tolerance_not_the_loosest() -> None:
    t = template_from_spec(_two_outputs_spec(), SOURCE)
    assert t.tolerance_for("out") == (1e-5, 1e-6) and t.tolerance_for("twice") == (1e-2, 1e-3)
    assert t.output_tolerances() == {"out": (1e-5, 1e-6), "twice": (1e-2, 1e-3)}
    want = {"out": np.ones(100), "twice": np.ones(100)}
    got = {"out": np.full(100, 1.0 + 1e-4, dtype=np.float32), "twice": np.full(100, 1.005, dtype=np.float32)}
    loosest = verify_outputs(np, got, want, *t.tolerance)
    assert not loosest.wrong  # one pair for all: the loose output's tolerance hides out's error
    own = verify_outputs(np, got, want, *t.tolerance, tolerances=t.output_tolerances())
    assert own.bad == 100 and own.message.startswith("out[0]") and "rtol=1e-05 atol=1e-06" in own.message


def test_a_python_spec_declares_a_tolerance_per_output() -> None:
    vector_add = load_templates()["vector_add"]
    out = next(a for a in vector_add.args if a.kind == "out")
    loose = dataclasses.replace(vector_add, args=tuple(
        dataclasses.replace(a, tolerance=(0.5, 0.0)) if a.name == out.name else a for a in vector_add.args))
    assert loose.tolerance_for(out.name) == (0.5, 0.0) and vector_add.tolerance_for(out.name) == vector_add.tolerance


def test_a_negative_output_tolerance_is_an_error_at_its_field() -> None:
    from workbench.core.domain.kernel_spec import SpecError

    spec = _two_outputs_spec()
    spec["args"][3]["atol"] = -1
    with pytest.raises(SpecError, match=r"args\[3\]\.atol"):
        template_from_spec(spec, SOURCE)


# --- no reference: the first valid config's outputs -------------------------------------------------


def test_the_first_config_with_finite_outputs_becomes_the_reference() -> None:
    class C(dict):
        @property
        def id(self) -> str:
            return str(self["k"])

    outputs = {"0": None, "1": {"y": np.array([1.0, np.nan])}, "2": {"y": np.array([1.0, 2.0])},
               "3": {"y": np.array([5.0, 5.0])}}
    tried: list[str] = []

    def run(config: C) -> Any:
        tried.append(config.id)
        return outputs[config.id]

    adopted = adopt_reference(np, [C(k=k) for k in "0123"], run)
    assert adopted is not None and adopted.config_id == "2" and adopted.tried == 3 and tried == ["0", "1", "2"]
    np.testing.assert_array_equal(adopted.expected["y"], [1.0, 2.0])
    assert adopt_reference(np, [C(k="0"), C(k="1")], run) is None


def test_an_integer_output_with_unwritten_elements_is_not_adopted() -> None:
    """Integer outputs are poisoned with the dtype's largest value (finite): a config that leaves
    one of those in place skipped an element and must not become everyone's reference."""
    from workbench.core.domain.templates import poison_value

    class C(dict):
        @property
        def id(self) -> str:
            return str(self["k"])

    poison = poison_value(np.int32)
    outputs = {"0": {"count": np.array([3, poison], dtype=np.int32), "flag": np.array([True])},
               "1": {"count": np.array([3, 4], dtype=np.int32), "flag": np.array([True])}}
    adopted = adopt_reference(np, [C(k="0"), C(k="1")], lambda config: outputs[config.id])
    assert adopted is not None and adopted.config_id == "1" and adopted.tried == 2


def test_sim_checks_the_others_against_the_first_valid_configs_emulated_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.backends import sim

    gelu = load_templates()["gelu"]
    template = dataclasses.replace(gelu, reference=no_reference, tolerance=(1e-7, 0.0))  # fast tanh differs
    monkeypatch.setattr(sim, "load_template_for", lambda spec: template)
    spec = BackendSpec("sim", {"kernel": "gelu", "compile": "estimate", "noise": False})
    backend = sim.SimBackend(spec)
    backend.prepare()
    default = template.space().config(template.default)
    assert backend.adopted is not None and backend.adopted.config_id == default.id
    same = backend.evaluate(default, EvalLimits())
    assert same.ok and same.details[REFERENCE_CONFIG] == default.id and "are the reference" in same.details["reference"]
    other = template.space().config({**default, "fast_math": not default["fast_math"]})
    wrong = backend.evaluate(other, EvalLimits())
    assert wrong.status is Status.WRONG_RESULT and wrong.details[REFERENCE_CONFIG] == default.id
    assert f"outputs of config {default.id}" in wrong.details["reference"]
    assert template_target(template, spec, {}).reference == NO_REFERENCE_NOTE
    assert template_target(gelu, spec, {}).reference == ""


def test_a_run_without_a_reference_says_so_in_the_session_and_on_the_command_line(cli, tmp_path: Path) -> None:
    spec = dict(copy.deepcopy(SPEC), reference={"kind": "none"})
    folder = save_template_folder(tmp_path / "mine", spec, SOURCE).parent
    out = tmp_path / "s.json"
    done = cli("tune", "saxpy", "--kernel-dir", folder, "--backend", "sim", "--budget", "4", "--out", out, "--quiet")
    assert done.returncode == 0, done.stderr
    *_, line, summary = done.stdout.strip().splitlines()
    assert line.startswith("saxpy: no reference given") and "checks no outputs" in line  # said once, before
    assert summary.startswith("saxpy: 4 trials (new session)")  # the summary, last (docs/cli.md)
    assert "no reference given" in json.loads(out.read_text())["extra"]["reference"]


# --- a reference file runs only in a run's worker ------------------------------------------------------


@pytest.fixture
def marked_template(tmp_path: Path) -> tuple[Path, Path]:
    marker = tmp_path / "ran"
    reference = tmp_path / "ref.py"
    reference.write_text(f"open({str(marker)!r}, 'a').write('x')\n"
                         "def reference(inputs, problem):\n    return {'out': inputs['a'] * inputs['x'] + inputs['y']}\n")
    return save_template_folder(tmp_path / "lib", SPEC, SOURCE, reference_file=reference).parent, marker


def test_the_cost_model_in_the_users_process_never_imports_the_reference_file(marked_template: tuple[Path, Path]) -> None:
    from workbench.runner.costmodel import sim_predictor

    folder, marker = marked_template
    predict = sim_predictor(BackendSpec("sim", {"kernel": "saxpy", "kernel_dirs": [str(folder)]}))
    template = load_templates(folder)["saxpy"]
    assert template.reference_runs_a_file
    assert predict.predict(template.space().default_config()) > 0
    assert not marker.exists()


def test_exporting_never_imports_the_reference_file(marked_template: tuple[Path, Path], tmp_path: Path) -> None:
    from workbench.core.io.export import FORMATS, export_sessions
    from workbench.core.domain.session import load_session

    folder, marker = marked_template
    out = tmp_path / "s.json"
    done = subprocess.run([sys.executable, str(ROOT / "main.py"), "tune", "saxpy", "--kernel-dir", str(folder),
                           "--backend", "sim", "--budget", "3", "--out", str(out), "--quiet"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    marker.unlink()  # the run's worker imported it, as it should
    session = load_session(out)
    for fmt in FORMATS:
        export_sessions([session], fmt, tmp_path / f"tuned.{fmt}", kernel_dirs=[folder])
    assert not marker.exists()


def test_the_cuda_backend_adopts_the_first_valid_configs_outputs_and_checks_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CUDA backend's wiring, with the device replaced by NumPy: a config that fails or leaves an
    element unwritten (NaN poison) cannot be the reference; the next one is; every later config is
    verified against it with the outputs' own tolerances, and its trial names the reference config."""
    from workbench.backends import cuda
    from workbench.core.domain.measurement import Measurement

    template = template_from_spec(dict(copy.deepcopy(SPEC), reference={"kind": "none"}), SOURCE)
    assert not template.has_reference
    space = template.space(template.small_problem)
    candidates = template.reference_candidates(template.small_problem)
    assert candidates[0] == space.default_config()
    failing, unwritten, good, other = candidates[:4]
    n = int(template.small_problem["n"])

    class Device(np.ndarray):
        def set(self, values: np.ndarray) -> None:
            np.copyto(self, values)

    backend = cuda.CudaBackend.__new__(cuda.CudaBackend)
    backend.cp, backend.template, backend.needs_restart = np, template, False
    backend.host_inputs = template.make_inputs(template.small_problem, np.random.default_rng(0))
    backend.buffers = {"out": np.zeros(n, dtype=np.float32).view(Device)}
    backend.resets = template.output_resets()
    written = {failing.id: None, unwritten.id: np.nan, good.id: 1.0, other.id: 1.5}

    def launched(config: Any, phase: Any) -> Any:
        backend._reset_outputs(poison=True)
        value = written[config.id]
        if value is None:
            return Measurement.failure(Status.COMPILE_ERROR, "does not compile")
        backend.buffers["out"][:] = 1.0
        backend.buffers["out"][-1] = value
        return cuda._Launched(lambda: None, {}, None, (1, 1, 1), (1, 1, 1), 0)

    monkeypatch.setattr(backend, "_launched", launched)
    monkeypatch.setattr(backend, "_time", lambda launch, limits: [1.0, 1.0, 1.0])
    monkeypatch.setattr(backend, "_metrics", lambda *args: {"latency_ms": 1.0})
    monkeypatch.setattr(backend, "_details", lambda compiled: {})
    backend.adopted = adopt_reference(np, candidates, backend._outputs_of)
    backend.expected = dict(backend.adopted.expected)
    assert backend.adopted.config_id == good.id and backend.adopted.tried == 3
    same = backend.evaluate(good, EvalLimits())
    assert same.ok and same.details[REFERENCE_CONFIG] == good.id
    wrong = backend.evaluate(other, EvalLimits())
    assert wrong.status is Status.WRONG_RESULT and wrong.details[REFERENCE_CONFIG] == good.id
    assert wrong.message.startswith(f"out[{n - 1}] = 1.5, expected 1")
