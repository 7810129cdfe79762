"""Exports: every format for every template round-trips (NVRTC compiles the .cu and the header
included into the template source), the objective in force decides, nothing feasible refuses, the
multi-device header guards per device with a portable fallback, and the CLI ``export`` command.

Sessions come from short in-process runs of the real simulator backend (``compile: estimate``,
no worker processes), so every test sees genuine trials of the shipped templates.
"""

from __future__ import annotations

import ast
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from workbench.backends.base import EvalLimits, backend_class
from workbench.cli import main as cli_main
from workbench.core.model.compiler import compile_cuda
from workbench.core.model.gpus import list_gpus, load_gpu
from workbench.core.model.perfmodel import launch_check, register_cap
from workbench.core.errors import TemplateError, WorkbenchError
from workbench.core.io.export import (
    FORMATS,
    export_sessions,
    export_text,
    is_export_file,
    launch_geometry,
    plan_export,
    problem_defines,
    slot_defines,
    target_macro,
)
from workbench.core.domain.measurement import Measurement, Status, Trial
from workbench.core.domain.objective import Bound, Constraints, Weights, rank
from workbench.core.domain.session import Session, save_session
from workbench.core.domain.space import Config, SearchSpace, Slot
from workbench.core.domain.templates import load_templates
from workbench.runner.plan import make_backend_spec, new_session, open_target

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = load_templates()
ARCH = "sm_90"


def sim_session(kernel: str, n: int = 12, gpu: str = "H200", seed: int = 0) -> Session:
    """A real session: ``n`` sampled configs (plus the default) measured by the sim backend in-process."""
    spec = make_backend_spec(kernel, "sim", gpu_model=gpu, seed=seed, extra={"compile": "estimate"})
    target = open_target(spec)
    session = new_session(spec, target, strategy="random", seed=seed)
    backend = backend_class("sim")(spec)
    backend.prepare()
    configs = target.space.sample(np.random.default_rng(seed), n)
    if target.default_config is not None and target.default_config not in configs:
        configs.insert(0, target.default_config)
    for i, config in enumerate(configs):
        session.add(Trial(i, config, backend.evaluate(config, EvalLimits()), started_at=float(i), finished_at=float(i)))
    return session


@pytest.fixture(scope="module")
def sessions() -> dict[str, Session]:
    return {name: sim_session(name) for name in sorted(TEMPLATES)}


def best_config(session: Session, constraints: Constraints | None = None, weights: Weights | None = None):
    ranking = rank(session.trials, constraints or session.constraints, weights or session.weights)
    assert ranking.best is not None
    return session.trials[ranking.best].config


# --- every format, every template ------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_every_format_round_trips(name: str, sessions: dict[str, Session], tmp_path: Path) -> None:
    session = sessions[name]
    template = TEMPLATES[name]
    problem = template.resolve_problem(session.problem)
    plan = plan_export([session])
    best = best_config(session)
    assert plan.recommended.trial.config == best

    # cuda: one self-contained file that NVRTC compiles, launch geometry in a comment
    cuda = export_text(plan, "cuda")
    grid, block = template.grid(problem, best), template.block(problem, best)
    assert f"dim3({grid[0]}, {grid[1]}, {grid[2]}), dim3({block[0]}, {block[1]}, {block[2]})" in cuda
    assert template.render(best, problem, line_directive=False) in cuda and "#line" not in cuda
    compiled = compile_cuda(cuda, arch=ARCH, options=template.compile_options, entry=template.entry, use_cache=False)
    assert compiled.ok, compiled.error
    # a compiler's message names the exported file's own line (a #line kept from the template put
    # it some thirty lines off, at the template file's line)
    lines = cuda.splitlines()
    last = max(i for i, text in enumerate(lines) if text.strip() == "}")
    lines.insert(last, "    undefined_in_export = 1;")
    broken = compile_cuda("\n".join(lines), arch=ARCH, options=template.compile_options, name="mine.cu",
                          use_cache=False)
    assert not broken.ok and f"mine.cu({last + 1}): error" in broken.log, broken.log

    # header: the template's own source compiles with the header included instead of rendered defines,
    # and gives the same machine code figures as the rendered config
    header = export_text(plan, "header")
    for line in template.defines(best, problem):
        assert line in header.splitlines()
    (tmp_path / "tuned.h").write_text(header)
    included = compile_cuda('#include "tuned.h"\n' + template.source, arch=ARCH,
                            options=(*template.compile_options, f"--include-path={tmp_path}"),
                            entry=template.entry, use_cache=False)
    assert included.ok, included.error
    assert (included.registers, included.smem_bytes) == (compiled.registers, compiled.smem_bytes)

    # json: what a program needs, machine-readable
    doc = json.loads(export_text(plan, "json"))
    assert doc["config"] == best.to_dict() and doc["config_id"] == best.id
    assert doc["template_hash"] == template.source_hash() == session.source_hash
    assert doc["device"] == session.device["name"]
    assert doc["metrics"]["latency_ms"] == pytest.approx(plan.recommended.trial.metric("latency_ms"))
    assert doc["constraints"] == session.constraints.to_dict() and doc["weights"] == session.weights.to_dict()
    assert doc["launch"]["grid"] == list(grid)

    # cupy: valid Python whose constants are exactly the rendered kernel and the tuned geometry
    script = export_text(plan, "cupy")
    tree = ast.parse(script)
    compile(script, f"{name}_tuned.py", "exec")
    constants = {
        node.target.id: ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id.isupper()
        and node.value is not None
    }
    assert constants["SOURCE"] == template.render(best, problem, line_directive=False)
    assert constants["GRID"] == tuple(grid) and constants["BLOCK"] == tuple(block)
    assert constants["CONFIG"] == best.to_dict() and constants["ENTRY"] == template.entry
    assert constants["PROBLEM"] == dict(problem)
    assert "compile_cuda(SOURCE" in script and "module.load(compiled.cubin)" in script
    from workbench.core.io import cupy_script  # the exported constants are exactly the module's placeholders

    placeholders = {n.target.id: ast.unparse(n.annotation) for n in ast.parse(Path(cupy_script.__file__).read_text()).body
                    if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    assert set(constants) == set(placeholders)
    # each with the module's annotation, so a project's type check passes the script ("KERNEL_DIRS
    # = []" failed mypy: need type annotation)
    assert {n.target.id: ast.unparse(n.annotation) for n in tree.body
            if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)} == placeholders
    assert not [n for n in tree.body if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)
                and n.targets[0].id in placeholders]


def test_what_the_export_alone_does_not_carry_is_said(sessions: dict[str, Session]) -> None:
    """Compile options the config was measured with, buffers to zero before a launch, and resource
    figures the simulator estimated (no compile) were exported as if there were none, or as if
    they were the compiler's."""
    import dataclasses

    session = sessions["reduce_sum"]  # measured with resources estimated (sim_session)
    template = dataclasses.replace(TEMPLATES["reduce_sum"], compile_options=("-DWB_EXTRA=1", "--use_fast_math"))
    plan = plan_export([session], templates={"reduce_sum": template})
    header = export_text(plan, "header")
    assert "// compile the template with the options it was tuned with: -DWB_EXTRA=1 --use_fast_math" in header
    assert json.loads(export_text(plan, "json"))["compile_options"] == ["-DWB_EXTRA=1", "--use_fast_math"]
    cuda = export_text(plan, "cuda")
    # the options' macros are written out: the file compiles on its own (a source reading a -D
    # macro failed with "identifier is undefined"); the other options are named to pass
    assert "\n#define WB_EXTRA 1\n" in cuda
    assert "// compile options: -DWB_EXTRA=1 --use_fast_math" in cuda
    reading = dataclasses.replace(template, source=template.source.replace("{", "{ (void)(WB_EXTRA);", 1))
    alone = export_text(plan_export([session], templates={"reduce_sum": reading}), "cuda")
    assert compile_cuda(alone, arch=ARCH, options=(), entry=template.entry, use_cache=False).ok
    # as the compiler reads them: NAME= is empty, a function-like one and -U are kept, in order
    from workbench.core.domain.includes import defined_by_options, macro_options

    options = ("-DRESTRICT=", "-D", "TWICE(x)=((x)*2)", "-DNL=\"\\n\"", "-DGONE", "-UGONE", "--define-macro=ONE")
    assert macro_options(options) == [("RESTRICT", ""), ("TWICE(x)", "((x)*2)"), ("NL", '"\\n"'), ("GONE", "1"),
                                      ("GONE", None), ("ONE", "1")]
    assert defined_by_options(options) == {"RESTRICT": "", "NL": '"\\n"', "ONE": "1"}
    written = export_text(plan_export([session], templates={"reduce_sum": dataclasses.replace(template, compile_options=options)}), "cuda")
    assert "#define RESTRICT\n#define TWICE(x) ((x)*2)\n#define NL \"\\n\"\n#define GONE 1\n#undef GONE\n#define ONE 1\n" in written
    # a value its #define line cannot hold is refused where the template is made, as a spec's is
    for bad in (("-DFOO=1\\", "-DSCALE=2.0f"), ("-D", "FOO=1/*")):
        with pytest.raises(TemplateError, match="would join the next line|would open a comment"):
            dataclasses.replace(template, compile_options=bad)
    # a /* in a string or character literal opens no comment, and a backslash inside a value joins nothing
    fine = ('-DGLOB="*/*.txt"', "-DPAT='/*'", "-DFOO=a\\b", "-DCOMMENT=1//x")
    assert dataclasses.replace(template, compile_options=fine).compile_options == fine
    zeroed = [line for line in cuda.splitlines() if "(zero it before every launch)" in line]
    assert {line.split(":")[0].strip("/ ") for line in zeroed} == {a.name for a in template.args if a.reset == "zero"}
    assert plan.recommended.trial.measurement.details.get("estimated") is True
    metrics_line = next(line for line in header.splitlines() if line.startswith("// metrics:"))
    assert "registers=" in metrics_line and "(estimated)" in metrics_line and "no compiler ran" in metrics_line
    latency = next(part for part in metrics_line.split(", ") if "latency_ms=" in part)
    assert "(estimated)" not in latency  # the timing is the simulator's, labelled as such elsewhere


def test_a_pick_resting_on_a_pending_estimate_says_so_and_where_it_came_from(
        sessions: dict[str, Session], tmp_path: Path, capsys) -> None:
    """A config simulated while its compile was pending may move when refined: the header names
    the table its figures came from and the command that refines, the json notes it, and the
    command line warns; none of them calls it a work-profile estimate of a run without a compiler."""
    import copy
    import dataclasses

    session = copy.deepcopy(sessions["reduce_sum"])
    best = rank(session.trials, session.constraints, session.weights).best
    assert best is not None
    trial = session.trials[best]
    details = {**trial.measurement.details, "estimated": True, "resources_pending": True, "estimated_from": "sm_89"}
    session.trials[best] = dataclasses.replace(trial, measurement=dataclasses.replace(trial.measurement, details=details))
    plan = plan_export([session])
    metrics_line = next(line for line in export_text(plan, "header").splitlines() if line.startswith("// metrics:"))
    assert "estimated from the sm_89 table's figures for this config while its compile was pending" in metrics_line
    assert "--refine-only" in metrics_line and "no compiler ran" not in metrics_line
    notes = json.loads(export_text(plan, "json"))["notes"]
    assert any("sm_89 table" in note and "--refine-only" in note for note in notes)
    path = tmp_path / "s.json"
    save_session(session, path)
    capsys.readouterr()
    assert cli_main(["export", str(path), "--format", "json", "--out", str(tmp_path / "e.json")]) == 0
    warning = capsys.readouterr().err
    assert warning.startswith("warning: the exported config's resource figures") and f"--out {path} --refine-only" in warning
    # with a session of another GPU given first, the command names the session that holds the estimate
    other = tmp_path / "other.json"
    save_session(sim_session("reduce_sum", gpu="A100_SXM"), other)
    assert cli_main(["export", str(other), str(path), "--format", "json", "--out", str(tmp_path / "e2.json")]) == 0
    warning = capsys.readouterr().err
    assert f"--out {path} --refine-only" in warning and f"--out {other} " not in warning


def test_an_export_says_when_the_quality_it_quotes_compared_no_outputs(sessions: dict[str, Session]) -> None:
    """A simulated trial of a template without an emulation has the reference rounded to float32 as
    its quality (show and tune say its outputs were not compared): the export wrote quality=1 as if
    they had been checked, and the CuPy script called the simulated figure an exported measurement."""
    unchecked = plan_export([sessions["vector_add"]])  # no emulation of its arithmetic
    said = "quality is not a comparison of outputs"
    metrics_line = next(line for line in export_text(unchecked, "header").splitlines() if line.startswith("// metrics:"))
    assert "quality=" in metrics_line and said in metrics_line
    assert any(said in note for note in json.loads(export_text(unchecked, "json"))["notes"])
    assert "RECORDED_DEVICE: str = 'Simulated NVIDIA H200 [SIMULATED]'" in export_text(unchecked, "cupy")
    compared = plan_export([sessions["reduce_sum"]])  # emulated: its outputs were compared
    assert said not in export_text(compared, "header") and said not in export_text(compared, "json")


def test_compiled_resource_figures_are_said_to_be_the_workbenchs_nvrtc_builds(sessions: dict[str, Session]) -> None:
    """nvcc 13 gives one exported config 56 registers where the export said 48 (NVRTC 12.9's): the
    figures were printed as the config's own, whoever compiles it."""
    import copy
    import dataclasses

    said = "registers, shared memory and occupancy are of the workbench's NVRTC build for sm_90"
    estimated = plan_export([sessions["vector_add"]])  # estimated resources: said apart, not as NVRTC's
    assert said not in export_text(estimated, "header")
    session = copy.deepcopy(sessions["vector_add"])
    for k, trial in enumerate(session.trials):
        details = {**trial.measurement.details, "estimated": False}
        session.trials[k] = dataclasses.replace(trial, measurement=dataclasses.replace(trial.measurement, details=details))
    compiled = plan_export([session])
    metrics_line = next(line for line in export_text(compiled, "header").splitlines() if line.startswith("// metrics:"))
    assert said in metrics_line and "registers=" in metrics_line
    assert any(said in note for note in json.loads(export_text(compiled, "json"))["notes"])


def test_a_config_the_edited_template_no_longer_takes_is_refused_alike_in_every_format(
        sessions: dict[str, Session]) -> None:
    """The CUDA source and the CuPy script said only the space's complaint ("slot tile: value 4096 is
    not allowed"), where the header and the JSON named the config that does not fit."""
    import dataclasses

    session = sessions["vector_add"]
    best = plan_export([session]).recommended.trial.config
    template = TEMPLATES["vector_add"]
    slot = next(s for s in template.slots if len(s.values) > 1)
    narrowed = [dataclasses.replace(s, values=tuple(v for v in s.values if v != best[slot.name]))
                if s is slot else s for s in template.slots]
    edited = dataclasses.replace(template, slots=tuple(narrowed))
    plan = plan_export([session], templates={"vector_add": edited})
    assert plan.recommended.trial.config == best  # (the session's pick, which the template no longer takes)
    for fmt in ("header", "cuda", "json", "cupy"):
        with pytest.raises(WorkbenchError, match=rf"^config {best.id} does not fit the template: slot {slot.name}: "):
            export_text(plan, fmt)


def test_an_export_whose_constraints_passed_over_the_fastest_config_says_which_and_why(
        sessions: dict[str, Session]) -> None:
    """show said "fastest trial 7 ... excluded by quality 0.814 < 0.9"; the exported header said only
    "lowest latency among 17 feasible configs", and a reader of the file alone never learnt that a
    faster config was left out, or by what."""
    session = sessions["gelu"]
    latencies = sorted(t.metric("latency_ms") for t in session.trials if t.ok)
    limit = Constraints(max_latency_ms=None, extra=(Bound("latency_ms", ">=", latencies[1]),))
    plan = plan_export([session], constraints=limit)
    said = [note for note in plan.notes if note.startswith("the fastest config measured is not this one: trial ")]
    assert len(said) == 1 and ": excluded by latency_ms " in said[0], said
    assert f"// note: {said[0]}" in export_text(plan, "header")
    assert said[0] in json.loads(export_text(plan, "json"))["notes"]
    unconstrained = plan_export([session])
    assert not [note for note in unconstrained.notes if "fastest config" in note]


def test_embedded_source_literal_survives_quotes_and_backslashes() -> None:
    from workbench.core.io.export import _py_text

    for text in ['a "b" \\n """ c', 'ends with a quote"', "\\", "x = '''y'''\n", '""""', ""]:
        assert ast.literal_eval(_py_text(text)) == text


def test_a_source_files_name_is_a_c_string_in_the_line_directive(tmp_path: Path) -> None:
    """The name of one's own kernel's .cu went raw into ``#line 1 "NAME"``: a quote or a backslash
    broke every compile, a line break put the rest of the name into the compiled code (and into
    the exports)."""
    example = ROOT / "docs" / "examples" / "saxpy"
    name = 'q"x\\y\n__device__ int injected = 1;\n#define QQ ".cu'
    spec = json.loads((example / "saxpy.kernel.json").read_text())
    spec["source"] = name
    (tmp_path / "saxpy.kernel.json").write_text(json.dumps(spec))
    (tmp_path / name).write_bytes((example / "saxpy.cu").read_bytes())
    template = load_templates(tmp_path)["saxpy"]
    source = template.render(template.default_config(), template.problem)
    line = next(text for text in source.splitlines() if text.startswith("#line"))
    assert line == '#line 1 "q\\"x\\\\y\\012__device__ int injected = 1;\\012#define QQ \\".cu"'
    assert not any(text.startswith("__device__ int injected") for text in source.splitlines())
    compiled = compile_cuda(source, "sm_90", entry=template.entry, use_cache=False)
    assert compiled.ok, compiled.log


def test_a_nul_in_a_kernels_source_leaves_the_cupy_script_valid_python() -> None:
    """A NUL byte in a .cu (which NVRTC and nvcc take) made the exported CuPy script invalid Python."""
    from workbench.core.io.export import _py_text

    for text in ["// nul here:\x00 end\r\n", "\x1b[31m\x7f\ttab\x0c"]:
        assert ast.literal_eval(_py_text(text)) == text
        compile(_py_text(text), "<export>", "eval")


# --- objective in force, refusals ----------------------------------------------------------------


def test_the_objective_in_force_decides(sessions: dict[str, Session]) -> None:
    session = sessions["vector_add"]
    latencies = sorted(t.metric("latency_ms") for t in session.trials if t.ok)
    fastest = best_config(session)
    assert plan_export([session]).recommended.trial.config == fastest
    loose = Constraints(max_latency_ms=latencies[-1] * 2)
    assert plan_export([session], loose).recommended.trial.config == fastest
    # a bound that only the fastest config breaks: the second fastest comes out
    slow_only = Constraints(extra=(Bound("latency_ms", ">=", (latencies[0] + latencies[1]) / 2),))
    pick = plan_export([session], slow_only).recommended
    assert pick.trial.config != fastest and pick.trial.metric("latency_ms") == pytest.approx(latencies[1])
    assert "latency_ms >=" in export_text(plan_export([session], slow_only), "header")


def test_nothing_feasible_refuses_naming_the_constraint(sessions: dict[str, Session], tmp_path: Path) -> None:
    session = sessions["reduce_sum"]
    out = tmp_path / "tuned.h"
    with pytest.raises(WorkbenchError, match=r"nothing feasible.*latency_ms <= 1e-09"):
        export_sessions([session], "header", out, Constraints(max_latency_ms=1e-9))
    assert not out.exists()


def test_python_benchmark_sessions_export_header_and_json_only(tmp_path: Path) -> None:
    space = SearchSpace([Slot("tile", (8, 16, 32)), Slot("mode", ("fast", "exact")), Slot("alpha", (0.5, 1.0))])
    session = Session(kernel="my_bench", kind="python", space=space, device={"name": "host CPU"})
    for i, config in enumerate(space):
        latency = 1.0 + config["tile"] / 32 + (0.5 if config["mode"] == "exact" else 0.0) + config["alpha"]
        session.add(Trial(i, config, Measurement(Status.OK, {"latency_ms": latency})))
    session.add(Trial(99, space.config({"tile": 8, "mode": "fast", "alpha": 0.5}).replace(tile=16),
                      Measurement.failure(Status.RUNTIME_ERROR, "boom")))
    plan = plan_export([session])
    header = export_text(plan, "header")
    assert "#define TILE 8" in header and "#define ALPHA 0.5" in header
    assert "#define MODE_FAST 0" in header and "#define MODE_EXACT 1" in header and "#define MODE 0" in header
    assert "PROBLEM_" not in header
    # the header is valid C: a kernel reading the macros compiles
    (tmp_path / "tuned.h").write_text(header)
    source = ('#include "tuned.h"\nextern "C" __global__ void k(float* x) { if (MODE == MODE_FAST) '
              "x[TILE] = ALPHA; }\n")
    assert compile_cuda(source, arch=ARCH, options=(f"--include-path={tmp_path}",), use_cache=False).ok
    assert json.loads(export_text(plan, "json"))["config"] == {"tile": 8, "mode": "fast", "alpha": 0.5}
    for fmt in ("cuda", "cupy"):
        with pytest.raises(WorkbenchError, match="python benchmark session has no CUDA source"):
            export_text(plan, fmt)


def test_a_kernel_tuner_recording_exports_its_own_slot_names(tmp_path: Path) -> None:
    """Kernel Tuner defines each parameter under the name it was given (``block_size_x``), so the
    kernel that was tuned reads that name: a header from its recording defines exactly it."""
    from workbench.core.io.interop import import_kt_cache

    session = import_kt_cache(ROOT / "tests" / "fixtures" / "kt_cache_small.json")
    plan = plan_export([session])
    assert plan.template is None  # same name as a shipped template, different slots
    best = best_config(session)
    header = export_text(plan, "header")
    for name, value in best.items():
        assert f"#define {name} {value}" in header
        assert f"#define {name.upper()} " not in header
    assert session.device["name"] in header
    # the header compiles in front of a kernel written for Kernel Tuner (lower-case names)
    (tmp_path / "tuned.h").write_text(header)
    source = ('#include "tuned.h"\nextern "C" __global__ void k(float* x) '
              "{ x[threadIdx.x % (block_size_x * tile)] = 1.0f; }\n")
    assert compile_cuda(source, arch=ARCH, options=(f"--include-path={tmp_path}",), use_cache=False).ok
    with pytest.raises(WorkbenchError, match="needs a kernel template") as refused:
        export_text(plan, "cuda")
    assert str(refused.value).startswith("--format cuda needs") and "use --format header or --format json" in str(refused.value)


@pytest.mark.parametrize("value, literal", [(2**64 - 1, "18446744073709551615ULL"), (2**63, "9223372036854775808ULL"),
                                            (-(2**63), "(-9223372036854775807LL - 1)"), (2**63 - 1, "9223372036854775807"),
                                            (-5, "-5")])
def test_a_64_bit_slot_value_is_a_c_constant_of_a_type_that_holds_it(tmp_path: Path, value: int, literal: str) -> None:
    """A recording may hold any 64-bit value; a header wrote ``#define X 18446744073709551615``,
    which no signed type holds (``-pedantic-errors`` refuses it) and -9223372036854775808, the
    negation of such a constant."""
    import shutil

    space = SearchSpace([Slot("x", (value, 1))])
    session = Session(kernel="k", kind="recording", space=space, device={"name": "GPU X"})
    session.add(Trial(0, space.config({"x": value}), Measurement(Status.OK, {"latency_ms": 1.0})))
    session.add(Trial(1, space.config({"x": 1}), Measurement(Status.OK, {"latency_ms": 2.0})))
    header = export_text(plan_export([session]), "header")
    assert f"#define X {literal}\n" in header
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is not None:  # the header as a C compiler strict about the types of constants reads it
        (tmp_path / "k.h").write_text(header)
        (tmp_path / "main.c").write_text('#include "k.h"\nint main(void) { return X == 0; }\n')
        built = subprocess.run([cc, "-std=c11", "-pedantic-errors", "-Werror", "-c", "main.c", "-o", "main.o"],
                               cwd=tmp_path, capture_output=True, text=True)
        assert built.returncode == 0, built.stderr


def test_a_replay_of_a_kernel_tuner_recording_exports_the_names_as_recorded(tmp_path: Path) -> None:
    """A session replayed from a Kernel Tuner cache (``tune --replay``) is that kernel's too; text
    values keep their case as well, while a python benchmark's names stay upper-cased (above). A
    text value is defined as Kernel Tuner compiled the kernel with it (``#define precision float``:
    the kernel uses it as a token, a type or a function); constants numbering the values, as a
    template's text slots get, would change what such a kernel compiles to."""
    cache = {"device_name": "GPU X", "kernel_name": "my_kernel", "problem_size": 64,
             "tune_params_keys": ["block_size_x", "use_method"],
             "tune_params": {"block_size_x": [32, 64], "use_method": ["fast", "Slow"]},
             "cache": {"32,fast": {"block_size_x": 32, "use_method": "fast", "time": 2.0},
                       "64,Slow": {"block_size_x": 64, "use_method": "Slow", "time": 1.0}}}
    (tmp_path / "kt.json").write_text(json.dumps(cache))
    assert cli_main(["tune", "--replay", str(tmp_path / "kt.json"), "--budget", "2", "--strategy", "grid",
                     "--workers", "1", "--out", str(tmp_path / "replayed.json")]) == 0
    from workbench.core.domain.session import load_session

    header = export_text(plan_export([load_session(tmp_path / "replayed.json")]), "header")
    for line in ("#define block_size_x 64", "#define use_method Slow"):
        assert line in header.splitlines()
    assert "BLOCK_SIZE_X" not in header and "USE_METHOD" not in header and "use_method_" not in header
    # a value that is an identifier beyond ASCII is the value too, never a string literal for one config
    cache["tune_params"]["use_method"] = ["fast", "größe"]
    cache["cache"] = {"32,fast": {"block_size_x": 32, "use_method": "fast", "time": 2.0},
                      "64,größe": {"block_size_x": 64, "use_method": "größe", "time": 1.0}}
    (tmp_path / "kt.json").write_text(json.dumps(cache))
    assert cli_main(["tune", "--replay", str(tmp_path / "kt.json"), "--budget", "2", "--strategy", "grid",
                     "--workers", "1", "--out", str(tmp_path / "unicode.json")]) == 0
    header = export_text(plan_export([load_session(tmp_path / "unicode.json")]), "header")
    assert "#define use_method größe" in header.splitlines()


def test_sessions_of_different_kernels_or_problems_refuse(sessions: dict[str, Session]) -> None:
    with pytest.raises(WorkbenchError, match="different kernels"):
        plan_export([sessions["gelu"], sessions["softmax"]])
    other = sim_session("vector_add", n=3)
    other.problem = {**other.problem, "n": 1024}
    with pytest.raises(WorkbenchError, match="an export serves one problem"):
        plan_export([sessions["vector_add"], other])
    with pytest.raises(WorkbenchError, match="unknown export format"):
        export_text(plan_export([sessions["gelu"]]), "pdf")


# --- several devices -------------------------------------------------------------------------------


def test_multi_device_header_guards_each_device_and_falls_back_to_the_portable_config(tmp_path: Path) -> None:
    h200 = sim_session("vector_add", n=25, gpu="H200", seed=3)
    t4 = sim_session("vector_add", n=25, gpu="T4", seed=3)
    plan = plan_export([h200, t4], sources=["h200.json", "t4.json"])
    assert [c.device for c in plan.choices] == sorted([h200.device["name"], t4.device["name"]])
    assert {c.trial.config for c in plan.choices} == {best_config(h200), best_config(t4)}

    # portable: brute force over configs ok on both, the best worst case of the fraction of each
    # device's best score (max-min, not the mean)
    scores = []
    for s in (h200, t4):
        r = rank(s.trials, s.constraints, s.weights)
        top = max(r.score[i] for i in np.flatnonzero(r.feasible))
        scores.append({s.trials[i].config.id: r.score[i] / top for i in np.flatnonzero(r.feasible)})
    common = set(scores[0]) & set(scores[1])
    assert plan.portable is not None
    assert plan.portable.score == pytest.approx(max(min(scores[0][c], scores[1][c]) for c in common))
    cid = plan.portable.trial.config.id
    assert plan.portable.score == pytest.approx(min(scores[0][cid], scores[1][cid]))
    # what it was chosen from is said (few configs in common made a poor pick look like the best there is)
    assert plan.portable.candidates == len(common) and f"of {len(common)} configs measured feasible" in plan.portable.why

    header = export_text(plan, "header")
    assert "h200.json" in header and "t4.json" in header
    template = TEMPLATES["vector_add"]
    (tmp_path / "tuned.h").write_text(header)
    for choice in [*plan.choices, plan.portable]:
        define = () if choice is plan.portable else (f"-D{target_macro(choice.device)}",)
        ours = compile_cuda('#include "tuned.h"\n' + template.source, arch=ARCH, entry=template.entry,
                            options=(f"--include-path={tmp_path}", *define), use_cache=False)
        rendered = compile_cuda(template.render(choice.trial.config, h200.problem), arch=ARCH, entry=template.entry)
        assert ours.ok and rendered.ok
        assert ours.cubin == rendered.cubin or ours.registers == rendered.registers
    if shutil.which("g++") is not None:  # two targets at once: refused at compile time, not the first one's config
        both = [f"-D{target_macro(choice.device)}" for choice in plan.choices]
        done = subprocess.run(["g++", "-x", "c++", "-E", *both, str(tmp_path / "tuned.h")], capture_output=True, text=True)
        assert done.returncode != 0 and "more than one WORKBENCH_TARGET_* macro is defined" in done.stderr
        one = subprocess.run(["g++", "-x", "c++", "-E", both[0], str(tmp_path / "tuned.h")], capture_output=True, text=True)
        assert one.returncode == 0, one.stderr
    doc = json.loads(export_text(plan, "json"))
    assert doc["device"] == "portable" and len(doc["devices"]) == 2
    # each device's config comes with its own launch and macros (a build that paired a device's
    # macros with the portable config's launch ran blocks of another size), and so does the header
    for entry, choice in zip(doc["devices"], plan.choices):
        assert entry["launch"] == launch_geometry(plan, choice.trial.config)
        assert entry["macros"] == slot_defines(plan, choice.trial.config) + problem_defines(plan)
    launches = [line for line in header.splitlines() if line.startswith("// launch: vector_add<<<")]
    geometry = [launch_geometry(plan, c.trial.config) for c in [*plan.choices, plan.portable]]
    assert launches == [f"// launch: vector_add<<<dim3({g['grid'][0]}, {g['grid'][1]}, {g['grid'][2]}), "
                        f"dim3({g['block'][0]}, {g['block'][1]}, {g['block'][2]}), {g['dynamic_smem_bytes']}>>>(...)"
                        for g in geometry]
    # the portable pick's figures say whose they are (they are one device's measurement)
    source = next(d for d in doc["devices"] if d["device"] == doc["metrics_device"])
    assert source["session"] == plan.portable.session  # the device whose session holds the trial
    assert doc["metrics"] == plan.portable.trial.measurement.metrics


def test_an_export_pooling_a_recording_and_a_simulated_gpu_tags_each_device_with_its_source() -> None:
    """One label for the pool called a recorded GPU's figures a modelled GPU's."""
    h200 = sim_session("vector_add", n=12, gpu="H200", seed=3)
    t4 = sim_session("vector_add", n=12, gpu="T4", seed=3)
    t4.device = {**t4.device, "name": "NVIDIA T4", "simulated": False, "recorded": True}
    plan = plan_export([h200, t4], sources=["h200.json", "t4.json"])
    devices = next(line for line in export_text(plan, "header").splitlines() if line.startswith("// devices:"))
    assert "NVIDIA T4 [recorded]" in devices and f"{h200.device['name']} [SIMULATED]" in devices
    assert "SIMULATED timings: a modelled GPU" in devices and "RECORDED timings" in devices
    doc = json.loads(export_text(plan, "json"))
    assert {d["device"]: d["provenance"] for d in doc["devices"]} == {"NVIDIA T4": "recorded",
                                                                       h200.device["name"]: "simulated"}
    assert doc["provenance"] == "simulated"  # the pool's least measured source
    alone = next(line for line in export_text(plan_export([h200]), "header").splitlines() if line.startswith("// devices:"))
    assert alone == f"// devices: {h200.device['name']} (SIMULATED timings: a modelled GPU, not a measurement)"


def test_no_portable_config_makes_the_header_say_so(tmp_path: Path) -> None:
    a = sim_session("gelu", n=4, gpu="H200", seed=1)
    b = sim_session("gelu", n=4, gpu="T4", seed=2)
    shared = {t.config.id for t in a.trials} & {t.config.id for t in b.trials}
    a.trials = [t for t in a.trials if t.config.id not in shared]
    b.trials = [t for t in b.trials if t.config.id not in shared]
    plan = plan_export([a, b])
    assert plan.portable is None
    assert "#error" in export_text(plan, "header")
    for fmt in ("cuda", "json"):  # json too: it was written with every field null and reported success
        with pytest.raises(WorkbenchError, match="no config is feasible on every device"):
            export_text(plan, fmt)


# --- command line ----------------------------------------------------------------------------------


def test_cli_export_every_format_and_show_importance(sessions: dict[str, Session], tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "softmax.json"
    save_session(sessions["softmax"], path)
    for fmt in FORMATS:
        out = tmp_path / f"tuned_{fmt}"
        assert cli_main(["export", str(path), "--format", fmt, "--out", str(out)]) == 0
        assert out.read_text()
    printed = capsys.readouterr().out
    assert "softmax: exported cupy" in printed
    # flags re-rank like show: a weight on memory alone, a latency ceiling between fastest and slowest
    lat = sorted(t.metric("latency_ms") for t in sessions["softmax"].trials if t.ok)
    out = tmp_path / "limited.json"
    assert cli_main(["export", str(path), "--format", "json", "--out", str(out),
                     "--max-latency-ms", str(lat[-1]), "--weight", "memory_mb=1"]) == 0
    doc = json.loads(out.read_text())
    assert doc["constraints"] == {"max_latency_ms": lat[-1]} and doc["weights"]["memory_mb"] == 1.0
    assert doc["metrics"]["latency_ms"] <= lat[-1]
    capsys.readouterr()

    assert cli_main(["show", str(path), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert "importance" in shown and isinstance(shown["importance"], dict)


def test_an_export_that_cannot_be_written_names_the_file_asked_for(sessions: dict[str, Session], tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    """A full disk gave a bare "[Errno 28] No space left on device", a read-only mount the name of
    the hidden temporary file beside the one asked for."""
    import errno

    import workbench.core.io.export as export_module

    def full(path: Path, write) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(path.with_name(f".{path.name}.x1y2z3a4.tmp")))

    path = tmp_path / "softmax.json"
    save_session(sessions["softmax"], path)
    monkeypatch.setattr(export_module, "atomic_write", full)
    out = tmp_path / "e.json"
    assert cli_main(["export", str(path), "--format", "json", "--out", str(out)]) == 1  # the machine refused: not input to fix (docs/cli.md)
    assert capsys.readouterr().err == f"error: {out}: cannot write (No space left on device)\n"
    assert not out.exists()


def test_cli_export_to_standard_output_writes_the_same_text_and_no_file(
        sessions: dict[str, Session], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.json"
    save_session(sessions["histogram"], path)
    monkeypatch.chdir(tmp_path)
    for fmt in ("header", "json"):
        out = tmp_path / f"tuned_{fmt}"
        assert cli_main(["export", str(path), "--format", fmt, "--out", str(out)]) == 0
        capsys.readouterr()
        assert cli_main(["export", str(path), "--format", fmt, "--out", "-"]) == 0
        printed = capsys.readouterr()
        assert printed.out == out.read_text()
        assert printed.err.startswith(f"histogram: exported {fmt} (") and printed.err.endswith("-> standard output\n")
    assert not (tmp_path / "-").exists()
    # a refusal prints no partial text
    assert cli_main(["export", str(path), "--format", "header", "--out", "-", "--max-latency-ms", "1e-9"]) == 2
    printed = capsys.readouterr()
    assert printed.out == "" and printed.err.startswith("error: nothing feasible")


def test_cli_export_refusal_is_one_line_and_touches_nothing(sessions: dict[str, Session], tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.json"
    save_session(sessions["histogram"], path)
    out = tmp_path / "tuned.h"
    out.write_text("old")
    assert cli_main(["export", str(path), "--format", "header", "--out", str(out), "--max-latency-ms", "1e-9"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: nothing feasible") and "\n" not in err
    assert out.read_text() == "old"
    assert cli_main(["export", str(path), "--format", "cuda", "--out", str(tmp_path / "no" / "x.cu")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_cli_export_has_no_objectives_flag(sessions: dict[str, Session], tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """An export picks one config: ``--objectives`` (a Pareto front) was accepted and did nothing."""
    path = tmp_path / "s.json"
    save_session(sessions["vector_add"], path)
    for names in ("latency_ms,memory_mb", "latency_ms", "nonsense"):
        with pytest.raises(SystemExit) as ended:
            cli_main(["export", str(path), "--format", "json", "--out", str(tmp_path / "x.json"), "--objectives", names])
        assert ended.value.code == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: unrecognized arguments: --objectives") and "\n" not in err
    assert not (tmp_path / "x.json").exists()


def test_an_export_of_a_session_that_searched_a_pareto_front_says_so(sessions: dict[str, Session]) -> None:
    """One config is written, the best by the score weights; the trade-off the search looked for is
    said, with the size of the front, so the reader knows other configs were as good on it."""
    import copy

    from workbench.core.domain.search_objective import Objective

    session = copy.deepcopy(sessions["sgemm"])
    assert not any("Pareto" in n for n in plan_export([session]).notes)
    session.strategy = {**session.strategy, "objectives": ["latency_ms", "registers"]}
    on_front = len(Objective(session.constraints, session.weights, ("latency_ms", "registers")).pareto(session.trials))
    assert on_front >= 2  # a trade-off to leave out, or the test says nothing
    note = f"the session searched the Pareto front of latency_ms, registers (feasible configs on it: {on_front};"
    plan = plan_export([session], templates=TEMPLATES)
    assert any(n.startswith(note) for n in plan.notes)
    assert f"// note: {note}" in export_text(plan, "header")
    assert any(n.startswith(note) for n in json.loads(export_text(plan, "json"))["notes"])
    # a bound on one objective shrinks the front it counts: the export's objective decides, as for the pick
    front = Objective(session.constraints, session.weights, ("latency_ms", "registers")).pareto(session.trials)
    bound = Constraints(extra=(Bound("registers", "<=", min(session.trials[i].metric("registers") for i in front)),))
    fewer = len(Objective(bound, session.weights, ("latency_ms", "registers")).pareto(session.trials))
    assert fewer < on_front
    assert any(f"(feasible configs on it: {fewer};" in n for n in plan_export([session], bound).notes)
    # of several sessions, the ones that searched the front are named, and their trials alone counted
    other = sim_session("sgemm", n=12, seed=1)
    both = plan_export([other, session], sources=["one.json", "front.json"]).notes
    searched = [n for n in both if "Pareto front" in n]
    mine = len(Objective(session.constraints, session.weights, ("latency_ms", "registers")).pareto(session.trials))
    assert searched == [f"front.json searched the Pareto front of latency_ms, registers (feasible configs on it: {mine}; "
                        "show under the same constraints lists them); this export holds what the score weights "
                        "rank first"]
    # sessions named alike (no file names, created the same minute) are still told apart
    other.created_at = session.created_at
    alike = [n for n in plan_export([other, session]).notes if "Pareto front" in n]
    assert len(alike) == 1 and f"(feasible configs on it: {mine};" in alike[0]
    # a device only the other session measured gets no count of a front nobody searched there
    elsewhere = sim_session("sgemm", n=12, gpu="A100", seed=2)
    devices = [n for n in plan_export([elsewhere, session], sources=["a100.json", "front.json"]).notes
               if "Pareto front" in n]
    assert len(devices) == 1 and f"(feasible configs on it: {mine} on Simulated NVIDIA H200;" in devices[0]
    assert "A100" not in devices[0]



def test_a_session_of_a_folders_template_named_like_a_shipped_one_never_exports_the_shipped_code(
        sessions: dict[str, Session], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A template in a person's folder may take a shipped template's name; exported without that
    folder, its session came out as the shipped kernel's source with the tuned config's defines
    (rc 0, with a warning that "the template changed" where another template was loaded)."""
    import copy

    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "vector_add.py").write_text((ROOT / "kernels" / "vector_add.py").read_text())
    (folder / "vector_add.cu").write_text("// MY OWN VARIANT\n" + (ROOT / "kernels" / "vector_add.cu").read_text())
    session = copy.deepcopy(sessions["vector_add"])
    session.backend = {**session.backend, "options": {**session.backend["options"], "kernel_dirs": [str(folder)]}}
    path = tmp_path / "s.json"
    save_session(session, path)
    for fmt in ("cuda", "cupy", "header", "json"):
        out = tmp_path / f"out.{fmt}"
        assert cli_main(["export", str(path), "--format", fmt, "--out", str(out)]) == 2, fmt
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and err.endswith(f"use --kernel-dir {folder}") and not out.exists(), err
    out = tmp_path / "mine.cu"
    assert cli_main(["export", str(path), "--format", "cuda", "--out", str(out), "--kernel-dir", str(folder)]) == 0
    assert "MY OWN VARIANT" in out.read_text()
    capsys.readouterr()
    # the folder to give is the one holding the template, not the first recorded (since removed)
    session.backend = {**session.backend, "options": {**session.backend["options"],
                                                      "kernel_dirs": [str(tmp_path / "removed"), str(folder)]}}
    save_session(session, path)
    assert cli_main(["export", str(path), "--format", "header", "--out", str(tmp_path / "x.h")]) == 2
    assert capsys.readouterr().err.strip().endswith(f"use --kernel-dir {folder}")
    # pooled with a shipped session given first: the folder of the second is named, whatever the order
    shipped = tmp_path / "shipped.json"
    save_session(sessions["vector_add"], shipped)
    for pair in ((shipped, path), (path, shipped)):
        assert cli_main(["export", *map(str, pair), "--format", "header", "--out", str(tmp_path / "p.h")]) == 2
        assert capsys.readouterr().err.strip().endswith(f"use --kernel-dir {folder}")
    # a shipped template's own session exports as before: with no folder named, and with a folder
    # named that holds no template of its name (tune --kernel-dir records every folder it was given)
    save_session(sessions["vector_add"], path)
    assert cli_main(["export", str(path), "--format", "cuda", "--out", str(tmp_path / "shipped.cu")]) == 0
    other = tmp_path / "other"
    other.mkdir()
    (other / "saxpy.cu").write_text("// another kernel\n")
    session.backend = {**session.backend, "options": {**session.backend["options"], "kernel_dirs": [str(other)]}}
    save_session(session, path)
    for fmt in ("cuda", "header"):
        assert cli_main(["export", str(path), "--format", fmt, "--out", str(tmp_path / f"named.{fmt}")]) == 0, fmt
    capsys.readouterr()
    # the folder since moved away (or the file opened on another machine): its code identity, which
    # the shipped template never had, tells that the shipped one is not what ran
    gone = copy.deepcopy(sessions["vector_add"])
    gone.source_hash = "0123456789abcdef"
    gone.backend = {**gone.backend, "options": {**gone.backend["options"], "kernel_dirs": [str(tmp_path / "moved")]}}
    save_session(gone, path)
    assert cli_main(["export", str(path), "--format", "cuda", "--out", str(tmp_path / "gone.cu")]) == 2
    assert capsys.readouterr().err.strip().endswith(f"use --kernel-dir {tmp_path / 'moved'}")

def test_cuda_export_of_a_template_from_a_folder_names_the_kernel_dir_to_give(sessions: dict[str, Session],
                                                                             tmp_path: Path,
                                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A session's own template folder is never loaded unasked; the refusal said "use --format header
    or json" where giving that folder with --kernel-dir is what exports the source."""
    import copy
    import dataclasses

    folder = tmp_path / "mine"
    folder.mkdir()
    spec = (ROOT / "kernels" / "vector_add.py").read_text().replace('name="vector_add"', 'name="my_add"')
    (folder / "my_add.py").write_text(spec)
    (folder / "my_add.cu").write_text((ROOT / "kernels" / "vector_add.cu").read_text())
    session = dataclasses.replace(copy.deepcopy(sessions["vector_add"]), kernel="my_add")
    session.backend = {**session.backend, "options": {**session.backend["options"], "kernel_dirs": [str(folder)]}}
    path = tmp_path / "s.json"
    save_session(session, path)
    out = tmp_path / "my_add.cu"
    assert cli_main(["export", str(path), "--format", "cuda", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.endswith(f"use --kernel-dir {folder}") and not out.exists()
    assert cli_main(["export", str(path), "--format", "cuda", "--out", str(out), "--kernel-dir", str(folder)]) == 0
    assert "BLOCK_SIZE" in out.read_text()
    capsys.readouterr()  # (a warning that the renamed template is not the code tuned: not the next command's)
    # the header and the json need it too (the problem macros, the launch): they came out without
    # them, a header that did not compile, with no word
    for fmt in ("header", "json"):
        target = tmp_path / f"my_add.{fmt}"
        assert cli_main(["export", str(path), "--format", fmt, "--out", str(target)]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and err.endswith(f"use --kernel-dir {folder}") and not target.exists()
        assert cli_main(["export", str(path), "--format", fmt, "--out", str(target), "--kernel-dir", str(folder)]) == 0
        capsys.readouterr()
    assert "#define PROBLEM_N " in (tmp_path / "my_add.header").read_text()
    macros = json.loads((tmp_path / "my_add.json").read_text())["macros"]
    # the problem's defines too: a build with the slots' alone failed on PROBLEM_N
    header = [m for m in (tmp_path / "my_add.header").read_text().splitlines() if m.startswith("#define")]
    assert "#define PROBLEM_N 16777216" in macros and set(macros) <= set(header)
    # a template session whose template is nowhere: the header is refused, the json says what it lacks
    session.backend = {**session.backend, "options": {**session.backend["options"], "kernel_dirs": []}}
    save_session(session, path)
    assert cli_main(["export", str(path), "--format", "header", "--out", str(tmp_path / "x.h")]) == 2
    assert "none with the session's slots and problem parameters was found" in capsys.readouterr().err
    assert cli_main(["export", str(path), "--format", "json", "--out", str(tmp_path / "x.json")]) == 0
    doc = json.loads((tmp_path / "x.json").read_text())
    assert doc["macros"] is doc["launch"] is doc["compile_options"] is None  # (present: every export has the keys)
    assert any("macros, launch and compile options are null" in n for n in doc["notes"])
    # another spec of the folder that does not load is not the export's business
    (folder / "broken.py").write_text("raise RuntimeError('half edited')\nTEMPLATE = None\n")
    assert cli_main(["export", str(path), "--format", "cuda", "--out", str(out), "--force",
                     "--kernel-dir", str(folder)]) == 0
    # a folder given that is missing, or whose spec of the kernel is broken, is named, not passed
    # over for the "no template found, use --kernel-dir" refusal
    (folder / "my_add.py").write_text("raise RuntimeError('half edited')\nTEMPLATE = None\n")
    capsys.readouterr()
    for given, said in ((folder, "my_add.py:1: RuntimeError: half edited"), (tmp_path / "gone", "not found")):
        assert cli_main(["export", str(path), "--format", "cuda", "--out", str(out), "--force",
                         "--kernel-dir", str(given)]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and said in err and "use --kernel-dir" not in err


def test_export_never_opens_a_pipe_or_a_device_given_as_a_session(tmp_path: Path, capsys) -> None:
    """Comparing the sessions given for copies must not read a FIFO (a plain open waits for a
    writer for ever) or a device (``/dev/zero`` never ends): refused in one line, at once."""
    fifo = tmp_path / "f.json"
    os.mkfifo(fifo)
    for given in ([str(fifo)], ["/dev/zero"], [str(fifo), "/dev/zero"]):
        assert cli_main(["export", *given, "--format", "json", "--out", str(tmp_path / "o.json")]) == 2
        assert capsys.readouterr().err.startswith("error: ")
    assert not (tmp_path / "o.json").exists()


def test_cli_export_of_one_session_given_twice_is_refused(sessions: dict[str, Session], tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Sessions of one device are pooled: the same file twice counted every trial twice, silently."""
    path = tmp_path / "s.json"
    save_session(sessions["vector_add"], path)
    monkeypatch.chdir(tmp_path)
    os.link(path, tmp_path / "hard.json")  # one file under another name
    (tmp_path / "copy.json").write_bytes(path.read_bytes())  # the same trials in another file
    for second, said in (("s.json", "s.json is given twice"), ("./s.json", "s.json and ./s.json are the same file"),
                         ("hard.json", "s.json and hard.json are the same file"),
                         ("copy.json", "s.json and copy.json hold the same session (identical files)")):
        assert cli_main(["export", "s.json", second, "--format", "header", "--out", "h.h"]) == 2
        assert capsys.readouterr().err.strip() == f"error: {said}; give each session once"
    assert not (tmp_path / "h.h").exists()


# --- what a later export may replace ---------------------------------------------------------------


def _sweep_session(kernel: str) -> Session:
    """A recording measured at two sizes (for the dispatch formats)."""
    space = SearchSpace([Slot("block", (32, 64))])
    session = Session(kernel=kernel, kind="recording", space=space, device={"name": "GPU X"}, problem={"n": 1024})
    for index, (n, block, latency) in enumerate([(1024, 32, 1.0), (1024, 64, 2.0), (4096, 32, 5.0), (4096, 64, 3.0)]):
        session.add(Trial(index, space.config({"block": block}), Measurement(Status.OK, {"latency_ms": latency}),
                          problem={"n": n}))
    return session


@pytest.mark.parametrize("kernel", ["vector_add", 'k exported by Kernel Tuning Workbench "format": "x"'])
def test_every_export_format_is_recognised_as_an_earlier_export(kernel: str, sessions: dict[str, Session],
                                                                 tmp_path: Path) -> None:
    from workbench.core.io.dispatch import render_dispatch

    session = sessions["vector_add"]
    texts = {fmt: export_text(plan_export([session]), fmt) for fmt in FORMATS}
    if kernel != "vector_add":  # an odd kernel name (no template: header and json only)
        odd = plan_export([_sweep_session(kernel)])
        texts = {fmt: export_text(odd, fmt) for fmt in ("header", "json")}
    sweep = _sweep_session(kernel)
    for fmt in ("dispatch", "dispatch-py"):
        texts[fmt] = render_dispatch([sweep], fmt)[1]
    for fmt, text in texts.items():
        path = tmp_path / f"e_{fmt}"
        path.write_text(text)
        assert is_export_file(path), fmt


def _every_format(session: Session, kernel: str = "vector_add") -> dict[str, str]:
    """Every export format's text: of ``session`` (a template's), and of a two-size recording of
    ``kernel`` for the dispatch formats (with an odd kernel name, header and json of that too)."""
    from workbench.core.io.dispatch import render_dispatch

    texts = {fmt: export_text(plan_export([session]), fmt) for fmt in FORMATS}
    if kernel != "vector_add":  # an odd kernel name (no template: header and json only)
        odd = plan_export([_sweep_session(kernel)])
        texts = {fmt: export_text(odd, fmt) for fmt in ("header", "json")}
    for fmt in ("dispatch", "dispatch-py"):
        texts[fmt] = render_dispatch([_sweep_session(kernel)], fmt)[1]
    return texts


@pytest.mark.parametrize("kernel", ["vector_add", 'k "content_sha256": "0000" // kernel-workbench content sha256'])
def test_every_export_carries_a_seal_that_any_edit_breaks(kernel: str, sessions: dict[str, Session],
                                                          tmp_path: Path) -> None:
    """An export can be told from the file alone to be as it was written (replaced freely by the
    next export) or edited since (kept as .bak first)."""
    from workbench.core.io.export_seal import unchanged_export

    for fmt, text in _every_format(sessions["vector_add"], kernel).items():
        path = tmp_path / f"e_{fmt}"
        path.write_text(text)
        assert unchanged_export(path), fmt
        lines = text.splitlines(keepends=True)
        middle = len(lines) // 2
        edits = {
            "a changed character": text.replace(lines[middle], lines[middle].replace("1", "2", 1) + " ", 1),
            "a line added at the end": text + "// mine\n",
            "a line added before the seal": "".join(lines[:-1]) + "# mine\n" + lines[-1],
            "a line removed": "".join(lines[:middle] + lines[middle + 1:]),
            "line ends changed": text.replace("\n", "\r\n"),
            "the seal alone changed": text.replace(text.strip()[-64:], "f" * 64),
        }
        if fmt != "json":
            edits["no seal (an export of an earlier version)"] = "".join(lines[:-1])
        for what, edited in edits.items():
            assert edited != text, (fmt, what)
            path.write_text(edited, newline="")
            assert not unchanged_export(path), (fmt, what)
        if fmt != "json":
            assert is_export_file(path), fmt  # still an export: replaced, after a backup
    assert not unchanged_export(tmp_path / "missing") and not unchanged_export(tmp_path)
    big = tmp_path / "big.json"  # larger than any export: not read whole, never parsed
    big.write_text('{"content_sha256": "' + "0" * 64 + '", "pad": "' + "x" * (17 << 20) + '"}')
    assert not unchanged_export(big)


def test_a_cupy_script_of_an_earlier_version_is_an_earlier_export(sessions: dict[str, Session], tmp_path: Path) -> None:
    """Versions before 2026-12-04 said in the script's docstring that CuPy's RawModule compiled the
    kernel; after the docstring changed, such a script was refused as a file this program did not
    write, and a scripted re-export stopped after the upgrade."""
    text = _every_format(sessions["vector_add"], "vector_add")["cupy"]
    now = ("kernel itself is the exported, rendered source below, compiled and loaded as the workbench's CUDA\n"
           "backend did while tuning (its NVRTC, a CUBIN for this GPU, registers capped so the block fits).\n")
    assert now in text
    earlier = text.replace(now, "kernel itself is the exported, rendered source below, compiled by CuPy's RawModule "
                                "(NVRTC).\n")
    path = tmp_path / "run_tuned.py"
    path.write_text("".join(earlier.splitlines(keepends=True)[:-1]))  # (no seal then either)
    assert is_export_file(path)
    path.write_text(earlier.replace("CuPy's RawModule", "my own loader"))
    assert not is_export_file(path)

def test_export_data_that_holds_the_seals_blank_is_refused_in_one_line() -> None:
    from workbench.core.io.export_seal import seal_json

    with pytest.raises(WorkbenchError, match="cannot seal the export"):
        seal_json({"problem": {"content_sha256": "0" * 64}}, indent=2)


def test_cli_export_keeps_an_edited_earlier_export_as_bak(sessions: dict[str, Session], tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "s.json"
    save_session(sessions["vector_add"], source)
    for fmt, name in (("header", "e.h"), ("json", "e.json"), ("cupy", "e.py")):
        out = tmp_path / name
        for _ in range(2):  # an untouched earlier export is replaced without a backup
            assert cli_main(["export", str(source), "--format", fmt, "--out", str(out)]) == 0
        assert not list(tmp_path.glob(name + "*.bak")) and "kept" not in capsys.readouterr().out
        written = out.read_text()
        edited = (written.replace('"kernel": "vector_add"', '"kernel": "my_add"') if fmt == "json"
                  else written + ("# my note\n" if fmt == "cupy" else "// my note\n"))
        assert edited != written
        out.write_text(edited)
        assert cli_main(["export", str(source), "--format", fmt, "--out", str(out)]) == 0
        said = capsys.readouterr().out
        assert (tmp_path / f"{name}.bak").read_text() == edited, fmt
        assert out.read_text() == written and f"kept the file that was there as {out}.bak" in said, fmt
    # a dispatch too
    sweep = tmp_path / "sweep.json"
    save_session(_sweep_session("vector_add"), sweep)
    out = tmp_path / "d.h"
    assert cli_main(["export", str(sweep), "--format", "dispatch", "--out", str(out)]) == 0
    out.write_text(out.read_text() + "\n")
    assert cli_main(["export", str(sweep), "--format", "dispatch", "--out", str(out)]) == 0
    assert (tmp_path / "d.h.bak").is_file() and "kept the file" in capsys.readouterr().out


def test_only_an_exports_own_structure_makes_a_file_replaceable(sessions: dict[str, Session], tmp_path: Path) -> None:
    """The marker text inside someone else's file (a kernel name, a quoted comment) is not enough."""
    from workbench.core.io.interop import import_kt_cache

    marker = "vadd exported by Kernel Tuning Workbench"
    cache = {"kernel_name": marker, "device_name": "A100", "problem_size": 10, "tune_params_keys": ["b"],
             "tune_params": {"b": [1, 2]}, "cache": {"1": {"b": 1, "time": 0.5}, "2": {"b": 2, "time": 0.4}}}
    (tmp_path / "mk.json").write_text(json.dumps(cache))
    imported = import_kt_cache(tmp_path / "mk.json")
    save_session(imported, tmp_path / "session.json")
    cuda = export_text(plan_export([sessions["vector_add"]]), "cuda")
    header = export_text(plan_export([sessions["vector_add"]]), "header")
    doc = json.loads(export_text(plan_export([sessions["vector_add"]]), "json"))
    not_ours = {
        "mk.json": None,
        "session.json": None,
        # a user's source that quotes an export's comment lines below its own first line
        "mine.cu": "// my kernel\n" + cuda,
        "quoted.cu": "#include <cstdio>\n/*\n" + "\n".join(cuda.splitlines()[:8]) + "\n*/\n",
        # the first comment line alone, without the rest of the preamble
        "first_line.cu": cuda.splitlines()[0] + "\n__global__ void k() {}\n",
        # an export's guard with the user's own text after it
        "guarded.h": "\n".join(header.splitlines()[:3]) + "\n// my notes\n#define X 1\n",
        # the export's format key, but not as the top-level object's
        "nested.json": json.dumps({"format": "my-tool", "wrapped": doc}),
        "listed.json": json.dumps([doc]),
        "broken.json": json.dumps(doc)[:-1],
        "empty.txt": "",
    }
    for name, text in not_ours.items():
        path = tmp_path / name
        if text is not None:
            path.write_text(text)
        assert path.is_file() and not is_export_file(path), name
    assert not is_export_file(tmp_path / "missing.h") and not is_export_file(tmp_path)


def test_cli_export_never_replaces_a_session_named_like_an_export(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    cache = {"kernel_name": "vadd exported by Kernel Tuning Workbench", "device_name": "A100", "problem_size": 10,
             "tune_params_keys": ["b"], "tune_params": {"b": [1, 2]},
             "cache": {"1": {"b": 1, "time": 0.5}, "2": {"b": 2, "time": 0.4}}}
    (tmp_path / "mk.json").write_text(json.dumps(cache))
    victim, source = tmp_path / "victim.json", tmp_path / "s.json"
    for out in (victim, source):
        assert cli_main(["import-kt", str(tmp_path / "mk.json"), "--out", str(out)]) == 0
    before = victim.read_bytes()
    capsys.readouterr()
    for fmt in ("json", "header"):
        assert cli_main(["export", str(source), "--format", fmt, "--out", str(victim)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "is not a file exported by this workbench" in err and "--force" in err
    assert victim.read_bytes() == before and not (tmp_path / "victim.json.bak").exists()
    # an export of that session is still replaced by the next one
    out = tmp_path / "e.json"
    for fmt in ("json", "header", "json"):
        assert cli_main(["export", str(source), "--format", fmt, "--out", str(out)]) == 0
    assert json.loads(out.read_text())["format"] == "kernel-workbench-export"


# --- macro names ---------------------------------------------------------------------------------------


def _plain(slots: list[Slot]) -> Session:
    space = SearchSpace(slots)
    session = Session(kernel="k", kind="python", space=space, device={"name": "host CPU"})
    for i, config in enumerate(space):
        session.add(Trial(i, config, Measurement(Status.OK, {"latency_ms": 1.0 + i})))
    return session


def test_slot_values_that_differ_only_in_case_refuse_instead_of_defining_a_macro_twice(tmp_path: Path) -> None:
    session = _plain([Slot("s", ("fast", "FAST", "slow"))])
    plan = plan_export([session])
    with pytest.raises(WorkbenchError, match=r"slot 's' value 'fast' and slot 's' value 'FAST' would both "
                                             r"define S_FAST") as raised:
        export_text(plan, "header")
    assert "\n" not in str(raised.value)
    with pytest.raises(WorkbenchError, match="would both define S_FAST"):
        export_sessions([session], "header", tmp_path / "h.h")
    assert not (tmp_path / "h.h").exists()
    # a value's macro that is another slot's macro
    clash = plan_export([_plain([Slot("a", ("b", "c")), Slot("a_b", (1, 2))])])
    with pytest.raises(WorkbenchError, match=r"slot 'a' value 'b' and slot 'a_b' would both define A_B"):
        slot_defines(clash, clash.recommended.trial.config)
    # distinct names still export, one #define per macro
    header = export_text(plan_export([_plain([Slot("s", ("fast", "slow"))])]), "header")
    names = [line.split()[1] for line in header.splitlines() if line.startswith("#define ")]
    assert len(names) == len(set(names)) and "S_FAST" in names and "S_SLOW" in names


def test_a_device_name_without_letters_or_digits_gets_a_stable_nonempty_guard_macro() -> None:
    assert target_macro("NVIDIA H200") == "WORKBENCH_TARGET_NVIDIA_H200"
    odd = [target_macro(name) for name in ("!!!", "???", "\u8bbe\u5907", "")]
    for macro in odd:
        suffix = macro[len("WORKBENCH_TARGET_"):]
        assert macro.startswith("WORKBENCH_TARGET_") and suffix.startswith("DEVICE_") and len(suffix) == 15
        assert macro.isidentifier() and macro.isascii()
    assert len(set(odd)) == len(odd) and target_macro("!!!") == odd[0]


@pytest.mark.parametrize("case", ["no usable GPU", "no CuPy"])
def test_cupy_script_without_a_usable_gpu_or_cupy_says_so_in_one_line(case: str, sessions: dict[str, Session],
                                                                    tmp_path: Path) -> None:
    """The script's first CuPy call touching the driver ended in a traceback (``CUDARuntimeError``)."""
    script = tmp_path / "vector_add_tuned.py"
    export_sessions([sessions["vector_add"]], "cupy", script)
    path = [str(ROOT)]
    if case == "no CuPy":  # a cupy that fails to import, first on the path
        (tmp_path / "fake" / "cupy").mkdir(parents=True)
        (tmp_path / "fake" / "cupy" / "__init__.py").write_text("raise ImportError('libcudart.so: not found')\n")
        path.insert(0, str(tmp_path / "fake"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "CUDA_VISIBLE_DEVICES": ""}  # no GPU, even on one
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 1 and done.stdout == "", done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in done.stderr, done.stderr
    assert ("cannot be imported" if case == "no CuPy" else "CuPy cannot use a GPU here") in lines[0]


def test_cupy_script_without_the_workbench_says_how_to_run_it(sessions: dict[str, Session], tmp_path: Path) -> None:
    """Copied into a project of its own, where CuPy works and the workbench is not installed, the
    script ended in a ModuleNotFoundError traceback."""
    script = tmp_path / "vector_add_tuned.py"
    export_sessions([sessions["vector_add"]], "cupy", script)
    fake = tmp_path / "fake"
    (fake / "cupy").mkdir(parents=True)
    (fake / "cupy" / "__init__.py").write_text(  # a CuPy that sees one GPU
        "class _Runtime:\n    class CUDARuntimeError(Exception): pass\n"
        "    @staticmethod\n    def getDeviceCount(): return 1\n"
        "class _Driver:\n    class CUDADriverError(Exception): pass\n"
        "class cuda:\n    runtime = _Runtime\n    driver = _Driver\n")
    (fake / "workbench").mkdir()
    (fake / "workbench" / "__init__.py").write_text("raise ImportError('No module named workbench')\n")
    env = {**os.environ, "PYTHONPATH": str(fake)}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: this script builds the kernel's inputs and reference with the Kernel Tuning "
                           "Workbench, which cannot be imported here") and "PYTHONPATH" in line


# --- the script's kernel fits the device ----------------------------------------------------------------


def _exported_module(session: Session, path: Path) -> Any:
    """The exported script, imported (importing it runs nothing: ``main`` does)."""
    import importlib.util

    export_sessions([session], "cupy", path)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: The launch limits the scripts are checked against: an H200's, as its driver reports them.
LIMITS = load_gpu("H200")


def _launches(registers: int, threads: int) -> bool:
    return launch_check(LIMITS, (threads, 1, 1), 0, registers) is None


@pytest.mark.parametrize("name", ["conv2d", "sgemm"])
def test_the_exported_script_compiles_as_the_tuner_did_with_a_block_that_fits(name: str, sessions: dict[str, Session],
                                                                              tmp_path: Path) -> None:
    """A simulated session's best (estimated resources) once failed on an H200 with "too many
    resources requested for launch": the script now compiles with the workbench's compiler and a
    register cap that makes the block fit, as ``__launch_bounds__`` would."""
    module = _exported_module(sessions[name], tmp_path / f"{name}_tuned.py")
    threads = math.prod(module.BLOCK)
    options = module.with_register_cap(module.OPTIONS, register_cap(LIMITS, threads))
    compiled = compile_cuda(module.SOURCE, arch=ARCH, options=options, entry=module.ENTRY)
    assert compiled.ok, compiled.error
    assert _launches(compiled.registers, threads)
    text = Path(tmp_path / f"{name}_tuned.py").read_text()
    assert "compile_cuda(SOURCE" in text and "register_cap(limits" in text


def test_the_register_cap_makes_a_register_hungry_kernel_fit_and_leaves_others_alone() -> None:
    from workbench.core.io.cupy_script import with_register_cap

    template = TEMPLATES["conv2d"]
    problem = template.resolve_problem(None)
    hungry = template.space(problem).config({"block_size_x": 112, "block_size_y": 2, "tile_size_x": 3,
                                             "tile_size_y": 4, "read_only": 0, "use_padding": 1, "use_shmem": 1})
    source = template.render(hungry, problem)
    assert compile_cuda(source, arch=ARCH).registers > 64
    # the tightest cap, and a block that is not a multiple of the allocation's warp groups (each
    # compile of this config takes about 2 s; every block size's cap is checked without compiling below)
    for threads in (1024, 288):
        options = with_register_cap((), register_cap(LIMITS, threads))
        capped = compile_cuda(source, arch=ARCH, options=options)
        assert capped.ok and _launches(capped.registers, threads), (threads, capped.registers)
    assert with_register_cap((), 255) == ("--maxrregcount=255",)
    assert with_register_cap(("--maxrregcount=40",), 64) == ("--maxrregcount=40",)  # the template's own
    assert with_register_cap(("-O3", "--maxrregcount=128"), 64) == ("-O3", "--maxrregcount=64")  # too many
    assert with_register_cap(("-O3",), None) == ("-O3",)  # no cap that launches: CUDA says why at launch


@pytest.mark.parametrize("gpu", list_gpus())
def test_the_register_cap_is_the_most_registers_every_block_size_launches_with(gpu: str) -> None:
    """For every block size a device takes, the cap launches and 8 more per thread (the allocation
    step) would not: the per-block total alone allowed 224 registers for 288 threads, which the
    register file cannot place in its groups of warps."""
    spec = load_gpu(gpu)
    for threads in range(1, spec.max_threads_per_block + 1):
        cap = register_cap(spec, threads)
        assert cap is not None and 8 <= cap <= spec.max_registers_per_thread, (threads, cap)
        assert launch_check(spec, (threads, 1, 1), 0, cap) is None, (threads, cap)
        if cap < spec.max_registers_per_thread:
            assert launch_check(spec, (threads, 1, 1), 0, cap + 8) is not None, (threads, cap)
    assert register_cap(spec, 32) == spec.max_registers_per_thread  # one warp: the ISA's most
    assert register_cap(spec, spec.max_threads_per_block + 1) is None  # nothing launches


# --- on a GPU ------------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["vector_add", "reduce_sum", "conv2d"])
def test_cupy_script_runs_and_checks_on_a_gpu(name: str, sessions: dict[str, Session], tmp_path: Path) -> None:
    script = tmp_path / f"{name}_tuned.py"
    export_sessions([sessions[name]], "cupy", script)
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    line = [ln for ln in done.stdout.splitlines() if ln.startswith("OK:")][0]
    latency = float(line.split("latency ")[1].split(" ms")[0])
    assert math.isfinite(latency) and latency > 0


def test_a_cupy_script_names_template_folders_by_absolute_path(tmp_path, cli) -> None:
    """``export --kernel-dir mykernels`` wrote the folder as given: the script, run from any other
    folder, found no template (a KeyError traceback) or a shipped one of the same name."""
    import ast
    import shutil

    example = Path(__file__).resolve().parents[1] / "docs" / "examples" / "saxpy"
    shutil.copytree(example, tmp_path / "mykernels")
    root = Path(__file__).resolve().parents[1]  # where the cli fixture runs commands from
    relative = os.path.relpath(tmp_path / "mykernels", root)
    session, script = tmp_path / "sx.json", tmp_path / "sx.py"
    assert cli("tune", "saxpy", "--kernel-dir", relative, "--backend", "sim", "--resources", "estimated",
               "--budget", "3", "--out", session, "--quiet").returncode == 0
    assert cli("export", session, "--kernel-dir", relative, "--format", "cupy", "--out", script).returncode == 0
    tree = ast.parse((tmp_path / "sx.py").read_text())
    dirs = next(ast.literal_eval(node.value) for node in tree.body
                if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "KERNEL_DIRS")
    assert dirs == [str(tmp_path / "mykernels")]
    # a spec that no longer loads there (the folder now defines the template twice): one line
    fake = tmp_path / "fake"
    (fake / "cupy").mkdir(parents=True)
    (fake / "cupy" / "__init__.py").write_text(
        "class _Runtime:\n    class CUDARuntimeError(Exception): pass\n"
        "    @staticmethod\n    def getDeviceCount(): return 1\n"
        "class _Driver:\n    class CUDADriverError(Exception): pass\n"
        "class cuda:\n    runtime = _Runtime\n    driver = _Driver\n")
    (tmp_path / "mykernels" / "saxpy.py").write_text("TEMPLATE = None\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fake), str(root)])}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: ") and "saxpy.py" in line, line


@pytest.mark.parametrize("name", ["defined", "__FILE__", "int", "WORKBENCH_TUNED_MY_KERNEL_H",
                                  "xor", "bitand", "_Pragma", "_Bool", "alignas", "NULL", "main", "NDEBUG",
                                  "INT_MAX", "linux"])
def test_a_recorded_parameter_named_as_a_header_cannot_define_it_is_refused_in_one_line(tmp_path: Path, name) -> None:
    """Recorded names are exported as recorded: a parameter ``defined`` gave a header gcc refuses,
    ``__FILE__`` redefined a builtin and one named like the include guard broke the header."""
    cache = {"device_name": "GPU X", "kernel_name": "my_kernel", "problem_size": 64,
             "tune_params_keys": ["block_size_x", name],
             "tune_params": {"block_size_x": [32, 64], name: [0, 1]},
             "cache": {"32,0": {"block_size_x": 32, name: 0, "time": 2.0},
                       "64,1": {"block_size_x": 64, name: 1, "time": 1.0}}}
    (tmp_path / "kt.json").write_text(json.dumps(cache))
    assert cli_main(["tune", "--replay", str(tmp_path / "kt.json"), "--budget", "2", "--strategy", "grid",
                     "--workers", "1", "--out", str(tmp_path / "replayed.json")]) == 0
    from workbench.core.domain.session import load_session

    plan = plan_export([load_session(tmp_path / "replayed.json")])
    with pytest.raises(WorkbenchError, match=f"would define {name}, a name a header cannot define"):
        export_text(plan, "header")
    assert json.loads(export_text(plan, "json"))["config"][name] == 1  # the JSON export has no macros


def test_the_exports_why_compares_with_the_default_config_as_show_does(sessions: dict[str, Session]) -> None:
    """``show`` said "lowest latency among 13 feasible configs; 1.1x faster than the default" and
    the header of the same config only its first half."""
    from workbench.cli.show import summarise

    session = sessions["vector_add"]
    why = summarise(session)["best"]["why"]
    assert "than the default" in why or "this is the default config" in why
    plan = plan_export([session])
    assert plan.choices[0].why == why
    assert f"why: {why}" in export_text(plan, "header")
    assert json.loads(export_text(plan, "json"))["why"] == why


def test_the_include_guard_has_no_run_of_underscores(tmp_path: Path) -> None:
    """A kernel named "evil*/kern??/" gave the guard WORKBENCH_TUNED_EVIL__KERN____H: two
    underscores in a row make a name reserved to the implementation."""
    from workbench.core.io.interop import import_kt_cache

    cache = {"device_name": "GPU X", "kernel_name": "evil*/kern??/", "problem_size": 64,
             "tune_params_keys": ["block_size_x"], "tune_params": {"block_size_x": [32, 64]},
             "cache": {"32": {"block_size_x": 32, "time": 2.0}, "64": {"block_size_x": 64, "time": 1.0}}}
    (tmp_path / "kt.json").write_text(json.dumps(cache))
    header = export_text(plan_export([import_kt_cache(tmp_path / "kt.json")]), "header")
    guard = header.split("#ifndef ")[1].split()[0]
    assert guard.startswith("WORKBENCH_TUNED_EVIL_KERN_") and "__" not in guard


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs a host C++ compiler")
def test_two_kernels_whose_names_differ_only_in_punctuation_or_case_get_two_include_guards(tmp_path: Path) -> None:
    """``conv-2d`` and ``conv_2d`` (or ``k`` and ``K``) shared the guard WORKBENCH_TUNED_CONV_2D_H:
    a program including both headers silently skipped the second, whose macros then read as 0 in
    an ``#if``. The dispatch headers' guards likewise."""
    from workbench.core.io.interop import import_kt_cache

    includes = []
    for name, slot in (("conv-2d", "tile"), ("conv_2d", "unroll"), ("k", "rows"), ("K", "cols")):
        cache = {"device_name": "GPU X", "kernel_name": name, "problem_size": 64,
                 "tune_params_keys": [slot], "tune_params": {slot: [4, 8]},
                 "cache": {"4": {slot: 4, "time": 2.0}, "8": {slot: 8, "time": 1.0}}}
        source = tmp_path / f"{slot}.json"
        source.write_text(json.dumps(cache))
        (tmp_path / f"{slot}.h").write_text(export_text(plan_export([import_kt_cache(source)]), "header"))
        includes.append(f'#include "{slot}.h"\nstatic_assert({slot} == 8, "{name}");')
    (tmp_path / "both.cpp").write_text("\n".join(includes) + "\n")
    compiled = subprocess.run(["g++", "-fsyntax-only", "both.cpp"], cwd=tmp_path, capture_output=True, text=True)
    assert compiled.returncode == 0, compiled.stderr


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs a host C++ compiler")
def test_two_headers_of_one_kernel_with_other_configs_do_not_compile_together(tmp_path: Path) -> None:
    """Two exports of one kernel (another problem size, another session) share the kernel's guard:
    included in one translation unit, the second was skipped and the first one's config compiled
    without a word. They now stop the build; the same export included twice still compiles."""
    from workbench.core.io.interop import import_kt_cache

    for name, best in (("a", "8"), ("b", "4")):
        cache = {"device_name": "GPU X", "kernel_name": "k", "problem_size": 64, "tune_params_keys": ["tile"],
                 "tune_params": {"tile": [4, 8]},
                 "cache": {"4": {"tile": 4, "time": 2.0 if best == "8" else 1.0},
                           "8": {"tile": 8, "time": 1.0 if best == "8" else 2.0}}}
        (tmp_path / f"{name}.json").write_text(json.dumps(cache))
        text = export_text(plan_export([import_kt_cache(tmp_path / f"{name}.json")]), "header")
        (tmp_path / f"{name}.h").write_text(text)
        (tmp_path / f"{name}2.h").write_text(text)

    def compiles(*headers: str) -> subprocess.CompletedProcess[str]:
        (tmp_path / "unit.cpp").write_text("".join(f'#include "{h}"\n' for h in headers) + "int x = tile;\n")
        return subprocess.run(["g++", "-fsyntax-only", "unit.cpp"], cwd=tmp_path, capture_output=True, text=True)

    assert compiles("a.h", "a2.h").returncode == 0
    different = compiles("a.h", "b.h")
    assert different.returncode != 0 and "two exported headers of this kernel that differ" in different.stderr

def test_an_export_of_a_session_tuned_on_other_code_warns_where_it_is_made(cli, tmp_path: Path) -> None:
    """The note that the template changed since the session was tuned went only into the file's
    comments: the rendered kernel is then another one than was measured, and the command said nothing."""
    session_path = tmp_path / "s.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "3",
               "--executor", "inline", "--quiet", "--out", session_path).returncode == 0
    fresh = cli("export", session_path, "--format", "cuda", "--out", tmp_path / "a.cu")
    assert fresh.returncode == 0 and "warning" not in fresh.stderr
    doc = json.loads(session_path.read_text())
    doc["source_hash"] = "0" * 16  # tuned on an earlier version of the code
    session_path.write_text(json.dumps(doc))
    done = cli("export", session_path, "--format", "cuda", "--out", tmp_path / "b.cu")
    assert done.returncode == 0
    assert "warning: the template (" in done.stderr and f"changed since {session_path} was tuned" in done.stderr
    assert "// note: the template" in (tmp_path / "b.cu").read_text()


def test_the_figures_in_an_exports_comments_read_as_the_window_writes_them(sessions: dict[str, Session]) -> None:
    """A header said ``smem_bytes=2.048e+04`` and ``gflops=1.842e+04`` in a file people read, where
    the window and ``show`` write 20480 and 18420."""
    from workbench.core.io.export import _metrics_text

    measurement = Measurement(Status.OK, {"latency_ms": 0.05123, "gflops": 18420.4, "smem_bytes": 20480,
                                          "registers": 40.0})
    text = _metrics_text(Trial(0, Config({"block_size": 128}), measurement))
    assert text.startswith("latency_ms=0.05123, gflops=18420, registers=40, smem_bytes=20480"), text


def test_a_launch_over_48_kb_of_shared_memory_says_the_call_a_build_must_make(cli, tmp_path: Path) -> None:
    """The workbench opts in to more than 48 KB of dynamic shared memory when it measures a config
    (cudaFuncSetAttribute); the cuda and json exports gave the launch alone, which CUDA refuses."""
    import shutil

    example = ROOT / "docs" / "examples" / "saxpy"
    # 256 * 320 = 81,920 bytes; 96 * 320 = 30,720 (the simulator's smem_bytes, static + dynamic, is
    # that too: counted as static besides, it made a note where none is needed); 32 * 320 = 10,240
    for block, said in ((256, True), (96, False), (32, False)):
        folder = tmp_path / f"k{block}"
        folder.mkdir()
        shutil.copy(example / "saxpy.cu", folder)
        spec = json.loads((example / "saxpy.kernel.json").read_text())
        spec["slots"][0].update(values=[block], default=block)
        spec["dynamic_smem"] = "block_size * 320"
        (folder / "saxpy.kernel.json").write_text(json.dumps(spec))
        session = tmp_path / f"s{block}.json"
        assert cli("tune", "saxpy", "--kernel-dir", folder, "--backend", "sim", "--budget", "3", "--executor",
                   "inline", "--quiet", "--out", session).returncode == 0
        for fmt in ("cuda", "json"):
            out = tmp_path / f"e{block}.{fmt}"
            done = cli("export", session, "--kernel-dir", folder, "--format", fmt, "--out", out)
            assert done.returncode == 0, done.stderr
            call = f"cudaFuncSetAttribute(saxpy, cudaFuncAttributeMaxDynamicSharedMemorySize, {block * 320})"
            assert (call in out.read_text()) is said, (block, fmt)


def test_a_recorded_parameter_with_letters_beyond_ascii_keeps_its_name(tmp_path: Path) -> None:
    """A recording's parameter ``blöck`` became ``#define bl_ck``: the kernel, which reads ``blöck``
    (nvcc takes it), found it undefined. Names as recorded stay as recorded when they are identifiers."""
    from workbench.core.io.interop import import_kt_cache

    cache = {"device_name": "GPU X", "kernel_name": "k", "problem_size": 64,
             "tune_params_keys": ["blöck", "tile"], "tune_params": {"blöck": [0, 1], "tile": [1]},
             "cache": {"0,1": {"blöck": 0, "tile": 1, "time": 2.0}, "1,1": {"blöck": 1, "tile": 1, "time": 1.0}}}
    (tmp_path / "kt.json").write_text(json.dumps(cache, ensure_ascii=False), encoding="utf-8")
    header = export_text(plan_export([import_kt_cache(tmp_path / "kt.json")]), "header")
    assert "#define blöck 1" in header.splitlines() and "#define tile 1" in header.splitlines()


def test_the_out_suffix_names_the_format_when_none_is_given(sessions: dict[str, Session], tmp_path: Path,
                                                            capsys) -> None:
    """``export S --out best.h`` was refused for a missing --format, though the window's Export best
    config goes by the suffix and the suffix said which."""
    path = tmp_path / "s.json"
    save_session(sessions["vector_add"], path)
    for suffix, fmt in ((".h", "header"), (".cuh", "header"), (".hpp", "header"), (".cu", "cuda"), (".json", "json"),
                        (".py", "cupy"), (".csv", "csv")):
        out = tmp_path / f"best{suffix}"
        capsys.readouterr()
        assert cli_main(["export", str(path), "--out", str(out)]) == 0, capsys.readouterr().err
        assert f"exported {fmt} " in capsys.readouterr().out
        given = tmp_path / f"given{suffix}"
        assert cli_main(["export", str(path), "--format", fmt, "--out", str(given)]) == 0
        if fmt != "json":  # (a JSON export records when it was written)
            assert out.read_text().replace(out.name, "X") == given.read_text().replace(given.name, "X")
    for out in ("best.txt", "-"):
        capsys.readouterr()
        assert cli_main(["export", str(path), "--out", out if out == "-" else str(tmp_path / out)]) == 2
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert line.startswith("error: --out ") and "give --format" in line


def test_the_measured_sizes_a_refusal_names_are_smallest_first_and_say_the_fixed_parameters_once() -> None:
    """A size added to a sweep later was listed last (rows=1024, ...; rows=256), and every size
    repeated the parameter no size changed."""
    from workbench.core.io.export import measured_sizes_text

    measured = [{"rows": r, "cols": 4096} for r in (1024, 4096, 16384, 256)]
    assert measured_sizes_text(measured) == "rows=256, 1024, 4096, 16384 (cols=4096)"
    assert measured_sizes_text([{"n": n} for n in range(10, 0, -1)]) == "n=1, 2, 3, 4, 5, 6 and 4 more"
    grid = [{"m": m, "n": n} for m in (1024, 512) for n in (512, 256)]
    assert measured_sizes_text(grid) == "m=512, n=256; m=512, n=512; m=1024, n=256; m=1024, n=512"
    assert measured_sizes_text([{"n": 4096, "alpha": 2.0}]) == "n=4096, alpha=2.0"


def test_a_recordings_rates_are_said_to_be_at_kernel_tuners_time_not_the_median(tmp_path: Path) -> None:
    """The header showed latency_ms=1.462 (the median of the repetitions) beside gflops=4370,
    Kernel Tuner's figure at its mean time of 1.728 ms: 18% apart, with nothing to say why."""
    from workbench.core.io.interop import import_kt_cache

    times = [1.0, 1.0, 1.0, 4.0]  # a slow first repetition: mean 1.75, median 1.0
    cache = {"device_name": "GPU X", "kernel_name": "k", "problem_size": 64, "objective": "time",
             "tune_params_keys": ["block_size_x"], "tune_params": {"block_size_x": [32, 64]},
             "cache": {"32": {"block_size_x": 32, "time": 1.75, "times": times, "GFLOP/s": 10.0 / 1.75},
                       "64": {"block_size_x": 64, "time": 3.0, "times": [3.0, 3.0], "GFLOP/s": 10.0 / 3.0}}}
    (tmp_path / "kt.json").write_text(json.dumps(cache))
    header = export_text(plan_export([import_kt_cache(tmp_path / "kt.json")]), "header")
    metrics = next(line for line in header.splitlines() if line.startswith("// metrics:"))
    assert "latency_ms=1," in metrics and "gflops=5.714" in metrics
    assert metrics.endswith("; gflops as recorded, at Kernel Tuner's time kt_time_ms=1.75 "
                            "(latency_ms is the median of its repetitions)"), metrics


def test_a_sweep_not_measured_at_its_own_problem_names_how_to_pick_a_size() -> None:
    """The refusal offers the dispatch formats only where they serve: a dispatch picks by one size
    parameter, and a grid over two was sent to ``--format dispatch``, which refused it in turn."""
    space = SearchSpace([Slot("block", (32, 64))])
    line = Session(kernel="k", kind="recording", space=space, device={"name": "GPU X"}, problem={"n": 512})
    grid = Session(kernel="k", kind="recording", space=space, device={"name": "GPU X"}, problem={"m": 512, "n": 512})
    for index, (m, n) in enumerate([(1024, 1024), (1024, 4096), (4096, 1024), (4096, 4096)]):
        measured = Measurement(Status.OK, {"latency_ms": 1.0 + index})
        line.add(Trial(index, space.config({"block": 32}), measured, problem={"n": n * (index + 1)}))
        grid.add(Trial(index, space.config({"block": 32}), measured, problem={"m": m, "n": n}))
    with pytest.raises(WorkbenchError) as refused:
        plan_export([line])
    assert "pick one with --at NAME=VALUE (e.g. --at n=1024), or export them all with --format dispatch" in str(refused.value)
    with pytest.raises(WorkbenchError) as refused:
        plan_export([grid])
    assert str(refused.value).endswith("pick one with --at NAME=VALUE (e.g. --at m=1024 --at n=1024)")


def test_sessions_exported_together_are_pointed_to_a_size_they_all_measured() -> None:
    """Two sweeps, on two GPUs: the refusal named a size of the first alone (then refused for the
    other) and the dispatch (of one GPU's sessions, refused next). A size every session measured
    is named, and the dispatch only for sessions of one GPU."""
    space = SearchSpace([Slot("block", (32, 64))])

    def sweep(device: str, sizes: list[int]) -> Session:
        session = Session(kernel="k", kind="recording", space=space, device={"name": device}, problem={"n": 99})
        for index, n in enumerate(sizes):
            session.add(Trial(index, space.config({"block": 32}), Measurement(Status.OK, {"latency_ms": 1.0}),
                              problem={"n": n}))
        return session

    one, two = sweep("GPU X", [64, 512, 4096]), sweep("GPU Y", [512, 8192])
    with pytest.raises(WorkbenchError) as refused:
        plan_export([one, two])
    said = str(refused.value)
    assert said.endswith("the 2 sessions have one size in common: pick it with --at NAME=VALUE (e.g. --at n=512)"), said
    assert plan_export([one, two], at={"n": 512}).problem == {"n": 512}
    same_gpu = sweep("GPU X", [512, 4096])
    with pytest.raises(WorkbenchError, match=r"2 sizes in common: pick one with --at NAME=VALUE \(e.g. --at n=512\), "
                                             "or export them all with --format dispatch$"):
        plan_export([one, same_gpu])
    with pytest.raises(WorkbenchError, match="the 2 sessions share no measured size: an export serves one problem, so "
                                             r"export them one at a time with --at NAME=VALUE \(show FILE lists each "
                                             r"one's sizes\)$"):
        plan_export([one, sweep("GPU Y", [100])])
    with pytest.raises(WorkbenchError, match=r"share no measured size: .*, or export them all with --format dispatch$"):
        plan_export([one, sweep("GPU X", [100])])  # (one GPU's sweeps make one dispatch together)


def test_a_template_session_without_its_template_is_pointed_to_the_one_format_that_works() -> None:
    """--format cuda pointed to --format header, which a template's session cannot have without its
    template either: a second refusal."""
    from workbench.core.domain.session import load_session

    plan = plan_export([load_session(ROOT / "tests" / "fixtures" / "session_golden.json")])
    assert plan.kind == "template" and plan.template is None
    for fmt in ("cuda", "cupy"):
        with pytest.raises(WorkbenchError, match=r"; use --format json$"):
            export_text(plan, fmt)
    with pytest.raises(WorkbenchError, match=r"; use --format json$"):
        export_text(plan, "header")
    assert json.loads(export_text(plan, "json"))["kernel"] == "toy"


def test_the_json_export_has_the_same_keys_for_every_kind_of_session(sessions: dict[str, Session], tmp_path: Path) -> None:
    """``launch``, ``macros`` and ``compile_options`` were left out of a recording's or a python
    benchmark's export (a script reading them got a KeyError), and a device entry had them only
    when there were several devices."""
    from workbench.core.io.interop import import_kt_cache

    cache = {"device_name": "GPU X", "kernel_name": "k", "problem_size": 64, "tune_params_keys": ["tile"],
             "tune_params": {"tile": [4, 8]}, "cache": {"4": {"tile": 4, "time": 2.0}, "8": {"tile": 8, "time": 1.0}}}
    (tmp_path / "k.json").write_text(json.dumps(cache))
    docs = {name: json.loads(export_text(plan_export([session]), "json"))
            for name, session in (("template", sessions["vector_add"]), ("recording", import_kt_cache(tmp_path / "k.json")))}
    assert set(docs["template"]) == set(docs["recording"])
    assert set(docs["template"]["devices"][0]) == set(docs["recording"]["devices"][0])
    assert docs["recording"]["launch"] is docs["recording"]["macros"] is docs["recording"]["compile_options"] is None
    assert docs["template"]["devices"][0]["launch"] == docs["template"]["launch"]


def test_an_export_from_a_script_replaces_only_an_earlier_export_unless_forced(sessions: dict[str, Session],
                                                                                tmp_path: Path) -> None:
    """``export_sessions`` called from a script wrote over whatever the path named: a session
    exported over its own file became a 4 KB header, with no backup, and no longer opened. Without
    a rule of the caller's it follows the command line's."""
    from workbench.core.domain.session import load_session

    session = sessions["vector_add"]
    own = tmp_path / "s.json"
    save_session(session, own)
    before = own.read_bytes()
    with pytest.raises(WorkbenchError, match=r"out .*s\.json: is this command's input; .*force=True replaces it"):
        export_sessions([session], "header", own, sources=[str(own)])
    with pytest.raises(WorkbenchError, match=r"exists and is not a file exported by this workbench; force=True"):
        export_sessions([session], "header", own)  # (the file not named as a source: not an export either)
    assert own.read_bytes() == before and load_session(own).kernel == session.kernel
    header = tmp_path / "h.h"
    export_sessions([session], "header", header)
    export_sessions([session], "header", header)  # an earlier export, as written: replaced, no backup
    assert not (tmp_path / "h.h.bak").exists()
    export_sessions([session], "header", own, force=True)  # the person's say: the session kept as .bak
    assert (tmp_path / "s.json.bak").read_bytes() == before
