"""Declarative templates: the JSON spec becomes the same KernelTemplate a Python spec builds, opening
one runs no code, errors name their line, and the slots a source expects are found from its macros."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from workbench.core.domain.array_expr import compile_array_expression
from workbench.core.errors import RestrictionError, TemplateError, WorkbenchError
from workbench.core.model.kernel_draft import check_draft, parse_compiler_log
from workbench.core.domain.kernel_spec import (
    SPEC_SUFFIX, SpecError, expression_problem, load_declarative, parse_values, save_template_folder,
    split_expressions, template_from_spec,
)
from workbench.core.domain.macros import scan_macros, strip_comments
from workbench.core.domain.templates import find_template, kernels_dir, load_templates, scan_templates, spec_identity

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "saxpy"
SPEC = json.loads((EXAMPLE / f"saxpy{SPEC_SUFFIX}").read_text())
SOURCE = (EXAMPLE / "saxpy.cu").read_text()
ROOT = Path(__file__).resolve().parents[1]


def test_the_example_loads_beside_the_shipped_library_and_describes_the_kernel():
    templates = load_templates(EXAMPLE, kernels_dir())
    t = templates["saxpy"]
    assert "vector_add" in templates  # python specs keep working in the same search path
    assert t.space().count() == 27 and t.default_config().to_dict() == {"block_size": 256, "items": 1}
    problem = t.resolve_problem()
    config = t.space().config({"block_size": 128, "items": 4})
    assert t.grid(problem, config) == (16777216 // 512, 1, 1) and t.block(problem, config) == (128, 1, 1)
    assert t.bytes_moved(problem) == 12.0 * 16777216 and t.flops(problem) == 2.0 * 16777216
    profile = t.profile(problem, config)
    assert (profile.work_per_thread, profile.bytes_read, profile.bytes_written) == (4.0, 8.0 * 16777216, 4.0 * 16777216)
    inputs = t.make_inputs(t.small_problem, np.random.default_rng(0))
    assert inputs["x"].dtype == np.float32 and inputs["x"].shape == (4099,) and np.all(inputs["x"] != 0)
    expected = t.reference(inputs, t.small_problem)["out"]
    np.testing.assert_allclose(expected, 2.0 * inputs["x"].astype(np.float64) + inputs["y"])
    assert t.tolerance == (1e-5, 1e-6) and t.source_path.endswith("saxpy.cu")
    assert "#define ITEMS 4" in t.render(config)


def test_a_spec_declares_its_static_shared_memory_for_estimated_resources():
    """A spec's ``profile.static_smem_bytes`` is what estimated resources (no compile) count as the
    block's shared memory; left out, it is none."""
    from workbench.core.model.perfmodel import estimate_resources

    spec = json.loads(json.dumps(SPEC))
    spec["profile"]["static_smem_bytes"] = "4 * block_size"
    t = template_from_spec(spec, SOURCE)
    problem = t.resolve_problem()
    config = t.space().config({"block_size": 128, "items": 4})
    profile = t.profile(problem, config)
    assert profile.static_smem_bytes == 512 and isinstance(profile.static_smem_bytes, int)
    assert estimate_resources(profile, 128, 0)["smem_bytes"] == 512
    assert template_from_spec(SPEC, SOURCE).profile(problem, config).static_smem_bytes == 0


def test_a_python_reference_file_is_not_run_when_the_template_loads(tmp_path):
    marker = tmp_path / "ran"
    reference = tmp_path / "ref.py"
    reference.write_text(f"open({str(marker)!r}, 'w').write('x')\n"
                         "def reference(inputs, problem):\n    return {'out': inputs['a'] * inputs['x'] + inputs['y']}\n")
    saved = save_template_folder(tmp_path / "lib", SPEC, SOURCE, reference_file=reference)
    t = load_templates(saved.parent)["saxpy"]  # the copied _saxpy_reference.py is not taken for a spec
    assert not marker.exists()
    inputs = t.make_inputs(t.small_problem, np.random.default_rng(1))
    out = t.reference(inputs, t.small_problem)["out"]  # what a backend's worker does when a run starts
    assert marker.exists() and out.shape == (4099,)


def test_a_saved_templates_slot_values_edited_is_refused_naming_the_spec_too(cli, tmp_path):
    """A slot's values are part of the template's identity, as its code is: the refusal said only
    "the kernel's code changed" to a person who had not touched the .cu."""
    folder = save_template_folder(tmp_path / "mine", SPEC, SOURCE).parent
    out = tmp_path / "s.json"
    assert cli("tune", "saxpy", "--kernel-dir", folder, "--backend", "sim", "--executor", "inline", "--budget", "3",
               "--out", out, "--quiet").returncode == 0
    spec_file = next(folder.glob("*.kernel.json"))
    spec = json.loads(spec_file.read_text())
    spec["slots"][0]["values"] = [*spec["slots"][0]["values"], 2048]
    spec_file.write_text(json.dumps(spec))
    refused = cli("tune", "saxpy", "--kernel-dir", folder, "--backend", "sim", "--executor", "inline", "--budget",
                  "4", "--resume", "--out", out, "--quiet")
    assert refused.returncode == 2 and "or its spec: a slot's values, a restriction, an argument)" in refused.stderr


def test_tuning_a_saved_template_with_the_command_line(cli, tmp_path):
    """--kernel-dir finds a saved declarative template; the sim backend runs it unchanged."""
    folder = save_template_folder(tmp_path / "mine", SPEC, SOURCE).parent
    out = tmp_path / "s.json"
    done = cli("tune", "saxpy", "--kernel-dir", folder, "--backend", "sim", "--executor", "inline", "--budget", "6",
               "--out", out, "--quiet")
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["kernel"] == "saxpy"
    # the simulator runs no kernel and a declarative template has no emulation: nothing compared its
    # outputs (one that writes nothing would succeed), which both commands say, and the JSON counts
    assert "saxpy: outputs not compared for 6 successful trials" in done.stdout
    # the summary stays the last line (`| tail -1`), also with a replaced file's backup said
    again = cli("tune", "saxpy", "--kernel-dir", folder, "--backend", "sim", "--executor", "inline", "--budget", "6",
                "--out", out, "--quiet", "--force")
    lines = again.stdout.splitlines()
    assert lines[-1].startswith("saxpy: 6 trials (new session)") and lines[-1].endswith(f"-> {out}"), lines
    assert "saxpy: outputs not compared" in lines[-3] and lines[-2] == f"kept the file that was there as {out}.bak"
    shown = cli("show", out)
    assert "outputs  not compared for 6 successful trials" in shown.stdout and "float32" in shown.stdout
    assert json.loads(cli("show", out, "--json").stdout)["outputs_unchecked"] == 6


def test_a_header_beside_the_template_is_found_from_any_working_folder(cli, tmp_path):
    """NVRTC looks for a quoted include in the working folder; the run is started from the
    checkout (the ``cli`` fixture's folder), not from the template's, and still finds it."""
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "axpy.h").write_text("__device__ __forceinline__ float axpy1(float a, float x, float y) { return a * x + y; }\n")
    source = '#include "axpy.h"\n' + SOURCE.replace("out[i] = a * x[i] + y[i]", "out[i] = axpy1(a, x[i], y[i])")
    assert "axpy1(a, x[i]" in source
    (folder / "saxpy.cu").write_text(source)
    (folder / f"saxpy{SPEC_SUFFIX}").write_text(json.dumps(SPEC))
    template = load_templates(folder)["saxpy"]
    assert template.nvrtc_options == (f"--include-path={folder.resolve()}",) and template.compile_options == ()
    assert load_templates(EXAMPLE)["saxpy"].nvrtc_options == ()  # a self-contained source: as before
    out = tmp_path / "s.json"
    done = cli("tune", "saxpy", "--kernel-dir", folder, "--backend", "sim", "--executor", "inline", "--budget", "4",
               "--out", out, "--quiet")
    assert done.returncode == 0, done.stderr
    trials = json.loads(out.read_text())["trials"]
    assert [t["status"] for t in trials] == ["ok"] * 4, trials[0].get("error")
    # the header is the template's code too: an edit of it is another template, whose session
    # cannot continue this one (a comment in the .cu aside, nothing in a self-contained source moves)
    before = template.source_hash()
    (folder / "axpy.h").write_text((folder / "axpy.h").read_text().replace("a * x + y", "y + a * x"))
    assert load_templates(folder)["saxpy"].source_hash() != before
    refused = cli("tune", "saxpy", "--kernel-dir", folder, "--backend", "sim", "--executor", "inline", "--budget",
                  "1", "--resume", "--out", out, "--quiet")
    assert refused.returncode == 2 and "the kernel's code changed since the session was measured" in refused.stderr
    (folder / "axpy.h").write_text((folder / "axpy.h").read_text().replace("y + a * x", "a * x + y"))
    assert load_templates(folder)["saxpy"].source_hash() == before
    # a comment in the header is no code, as in the .cu; a session hashed with it as written continues
    header = (folder / "axpy.h").read_text()
    (folder / "axpy.h").write_text("// the axpy helper\n\n" + header)
    edited = load_templates(folder)["saxpy"]
    assert edited.source_hash() == before
    (folder / "axpy.h").write_text(header)
    as_written = load_templates(folder)["saxpy"]
    old_scheme = as_written._hash_with(spec_identity(folder / f"saxpy{SPEC_SUFFIX}"), code=as_written.source)
    assert old_scheme != before and old_scheme in as_written.earlier_hashes()
    checked = cli("check-kernels", "--kernel-dir", folder, "--kernel", "saxpy", "--json")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # a folder named in bytes that are not UTF-8, and an include spaced as the preprocessor allows
    odd = tmp_path / os.fsdecode(b"non\xffutf")
    odd.mkdir()
    (odd / "axpy.h").write_text((folder / "axpy.h").read_text())
    (odd / "saxpy.cu").write_text(source.replace('#include "axpy.h"', '#  include "axpy.h"'))
    (odd / f"saxpy{SPEC_SUFFIX}").write_text(json.dumps(SPEC))
    assert load_templates(odd)["saxpy"].include_options == (f"--include-path={odd.resolve()}",)
    checked = cli("check-kernels", "--kernel-dir", odd, "--kernel", "saxpy", "--json")
    assert checked.returncode == 0 and "Traceback" not in checked.stderr, checked.stdout + checked.stderr
    # the exported .cu says which headers it needs beside it
    from workbench.core.io.export import export_text, plan_export
    from workbench.core.domain.session import load_session

    text = export_text(plan_export([load_session(out)], templates={"saxpy": template}), "cuda")
    assert f"// includes headers of the template's folder ({folder.resolve()}): axpy.h; keep them beside this file" in text


def test_a_python_spec_beside_a_json_spec_of_the_same_template_is_refused_not_picked(cli, tmp_path):
    folder = save_template_folder(tmp_path / "mine", SPEC, SOURCE).parent
    (folder / "saxpy.py").write_text(
        "import json, pathlib\nfrom workbench.core.domain.kernel_spec import template_from_spec\n"
        "_here = pathlib.Path(__file__).parent\n"
        "TEMPLATE = template_from_spec(json.loads((_here / 'saxpy.kernel.json').read_text()), "
        "(_here / 'saxpy.cu').read_text().replace('256', '128'))\n")
    said = f"saxpy.py and saxpy{SPEC_SUFFIX} both define template 'saxpy'"
    with pytest.raises(TemplateError, match=re.escape(said)):
        find_template("saxpy", folder)
    library = scan_templates(folder, kernels_dir())
    assert "saxpy" not in library.templates and "vector_add" in library.templates
    assert sorted(p.name for p in library.broken) == ["saxpy.kernel.json", "saxpy.py"]
    assert all(said in reason for reason in library.broken.values())
    done = cli("tune", "saxpy", "--kernel-dir", folder, "--backend", "sim", "--budget", "2", "--out", tmp_path / "s.json")
    assert done.returncode == 2 and said in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "s.json").exists()
    for command in ("kernels", "check-kernels"):  # said once, naming both files (it was said twice)
        listed = cli(command, "--kernel-dir", folder)
        assert listed.returncode == 2 and listed.stderr.count(said) == 1, listed.stderr
    (folder / "saxpy.py").unlink()
    assert find_template("saxpy", folder).name == "saxpy"


def test_show_says_what_a_template_without_a_reference_checked_as_tune_does(cli, tmp_path):
    """show called the simulated quality "the reference rounded to float32" for a template that
    has no reference (its trials have no quality at all), disagreeing with tune's line."""
    folder = save_template_folder(tmp_path / "mine", dict(SPEC, reference={"kind": "none"}), SOURCE).parent
    out = tmp_path / "s.json"
    done = cli("tune", "saxpy", "--kernel-dir", folder, "--backend", "sim", "--executor", "inline", "--budget", "3",
               "--out", out, "--quiet")
    assert done.returncode == 0, done.stderr
    said = "no reference given, and the simulator checks no outputs of this kernel (it has no emulation)"
    assert f"saxpy: {said}" in done.stdout
    shown = cli("show", out).stdout
    assert f"outputs  {said}" in shown and "rounded to float32" not in shown


@pytest.mark.parametrize("values, default, taken", [([0.5, 1.5, 2], 2, 2.0), ([32.0, 64.0, 128.0], 128, 128.0)])
def test_a_whole_default_of_a_slot_with_fractional_values_is_that_value(values, default, taken, tmp_path):
    """A slot of [0.5, 1.5, 2] is a float slot (2 is 2.0): a default of 2 was refused as "not one of
    the slot's values", the very list it is in."""
    spec = json.loads(json.dumps(SPEC))
    spec["slots"].append({"name": "scale", "values": values, "group": "compute", "default": default})
    template = template_from_spec(spec, SOURCE.replace("a * x[i]", "(a * SCALE) * x[i]"))
    assert template.default["scale"] == taken and type(template.default["scale"]) is float

def test_a_launch_that_is_fractional_at_another_size_is_refused_never_rounded_down(cli, tmp_path):
    """``n / 1024`` blocks is whole at the spec's own problems, so the spec loads; at n=3000 it is
    2.93, which was launched as 2 blocks (a third of the output never written) and exported so."""
    spec = json.loads(json.dumps(SPEC))
    spec["grid"][0] = "n / 1024"
    spec["problem"]["n"]["small"] = 4096
    folder = save_template_folder(tmp_path / "mine", spec, SOURCE).parent
    out = tmp_path / "s.json"
    for flags in (("--set", "n=3000"), ("--sizes", "n=4096,3000")):
        done = cli("tune", "saxpy", "--kernel-dir", folder, "--backend", "sim", "--executor", "inline", "--budget", "2",
                   "--out", out, *flags)
        assert done.returncode == 2 and not out.exists(), done.stderr
        assert "at n=3000" in done.stderr and "'n / 1024' gives 2.9296875" in done.stderr
        assert "whole number" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    # a config whose launch is fractional at the run's size fails alone, saying why
    spec["grid"][0] = "n / (block_size * items)"
    folder = save_template_folder(tmp_path / "other", spec, SOURCE).parent
    done = cli("tune", "saxpy", "--kernel-dir", folder, "--backend", "sim", "--executor", "inline", "--strategy", "grid",
               "--budget", "30", "--set", "n=6144", "--out", out, "--quiet")
    assert done.returncode == 0, done.stderr
    trials = json.loads(cli("show", out, "--json", "--trials").stdout)["trial_list"]
    fractional = [t for t in trials if 6144 % (t["config"]["block_size"] * t["config"]["items"])]
    assert fractional and all(t["status"] == "runtime_error" and "whole number" in t["message"] for t in fractional)
    assert all(t["status"] == "ok" for t in trials if t not in fractional)

def test_a_template_with_an_emulation_has_its_simulated_outputs_compared(cli, tmp_path):
    out = tmp_path / "r.json"
    done = cli("tune", "reduce_sum", "--backend", "sim", "--executor", "inline", "--budget", "3", "--out", out, "--quiet")
    assert done.returncode == 0, done.stderr
    assert "not compared" not in done.stdout + cli("show", out).stdout
    assert json.loads(cli("show", out, "--json").stdout)["outputs_unchecked"] == 0


@pytest.mark.parametrize("edit, field, line_text", [
    (lambda s: s["slots"][1].__setitem__("values", []), "slots[1]", '"name": "items"'),
    (lambda s: s.__setitem__("restrictions", ["block_size * itms <= 4"]), "restrictions[0]", "itms"),
    (lambda s: s["grid"].__setitem__(0, "n.size"), "grid", "n.size"),
    (lambda s: s["args"][2].__setitem__("shape", ["m"]), "args[2].shape", None),
    (lambda s: s["reference"]["outputs"].__setitem__("out", "__import__('os').system('x')"), "reference.outputs.out", "__import__"),
    (lambda s: s["slots"][0].__setitem__("default", 300), "slots[0].default", None),
    (lambda s: s["slots"][0].__setitem__("default", "256"), "slots[0].default", None),  # text is no number
    (lambda s: s["slots"][0].__setitem__("default", True), "slots[0].default", None),
    # a float default beside a whole small value: said as the default's, with the fix
    (lambda s: s["problem"]["n"].__setitem__("default", 16777216.0), "problem.n.small", None),
    (lambda s: s.__setitem__("profile", {"bogus": "1"}), "profile", "bogus"),
    # found when the spec loads, evaluated at the default problem, not later as a worker's traceback
    (lambda s: s["args"][0].__setitem__("dtype", "float128x"), "args[0].dtype", "float128x"),
    (lambda s: s["args"][0].__setitem__("dtype", "object"), "args[0].dtype", "object"),
    (lambda s: s["args"][0].__setitem__("dtype", "bool"), "args[0].dtype", "bool"),
    (lambda s: s["args"][0].__setitem__("range", [1, -1]), "args[0].range", None),
    (lambda s: s.__setitem__("restrictions", ["block_size * items <= 4096", "block_size < 256"]), "restrictions[1]",
     "block_size < 256"),
    (lambda s: s["args"][0].__setitem__("range", [0, "1"]), "args[0].range", None),
    (lambda s: s.__setitem__("restriction", s.pop("restrictions")), "restriction", '"restriction"'),
    (lambda s: s["args"][0].__setitem__("dtype", "longdouble"), "args[0].dtype", "longdouble"),
    # C type names NumPy widens: "float" was taken as float64 where the kernel reads float*
    (lambda s: s["args"][0].__setitem__("dtype", "float"), "args[0].dtype", '"float"'),
    (lambda s: s["args"][0].__setitem__("dtype", "int"), "args[0].dtype", '"int"'),
    # an argument's kind or name is blamed where it is wrong, not as a reference output later
    (lambda s: s["args"][2].__setitem__("kind", "output"), "args[2].kind", '"output"'),
    (lambda s: s["args"][1].__setitem__("name", "x"), "args[1].name", None),
    # valid C, but no expression can name it: "invalid syntax" in the reference said nothing of why
    (lambda s: s["args"][0].__setitem__("name", "in"), "args[0].name", None),
    (lambda s: s["problem"].__setitem__("lambda", {"default": 1}), "problem.lambda", None),
    # a default config names every slot or none: one slot without said where, not "missing slot" later
    (lambda s: s["slots"][1].pop("default"), "slots[1].default", '"name": "items"'),
    (lambda s: s["args"][0].__setitem__("shape", ["-n"]), "args[0].shape", "-n"),
    # a fractional length (n = 1000.5) was an array of 1,000 elements, and 1000.5 of them in every figure
    (lambda s: s["args"][0].__setitem__("shape", ["n / 2"]), "args[0].shape", "n / 2"),
    (lambda s: s["cost"].__setitem__("flops", "0/0"), "cost.flops", "0/0"),
    (lambda s: s["cost"].__setitem__("bytes_moved", "-1"), "cost.bytes_moved", "-1"),
    (lambda s: s["problem"]["n"].update({"min": 10, "max": 1}), "problem.n.max", '"n"'),
    (lambda s: s["problem"]["n"].update({"min": 1, "max": 100}), "problem.n.default", '"n"'),
    (lambda s: s["problem"]["n"].update({"min": "one"}), "problem.n.min", '"n"'),
    # two dimensions in one string were read as a tuple: "tuples are only allowed after 'in'"
    (lambda s: s["args"][0].__setitem__("shape", ["n, 1"]), "args[0].shape", '"n, 1"'),
    # a slot declared twice was refused by the space, without the line
    (lambda s: s["slots"].append(dict(s["slots"][0])), "slots[2].name", '"block_size"'),
    # a misspelt field inside an object was dropped and its default taken without a word
    (lambda s: s["args"][1].__setitem__("rtoll", 1e-3), "args[1].rtoll", '"rtoll"'),
    (lambda s: s["problem"]["n"].__setitem__("smal", 10), "problem.n.smal", '"smal"'),
    (lambda s: s["cost"].__setitem__("flop", "2*n"), "cost.flop", '"flop"'),
    (lambda s: s["slots"][0].__setitem__("description", "x"), "slots[0].description", '"description"'),
    (lambda s: s.__setitem__("reference", {"kind": "python", "file": "ref.py", "fn": "f"}), "reference.fn", '"fn"'),
    # a profile that cannot be computed at the default config, or out of its field's range, was
    # clamped by the model or failed every simulated trial of that config with no field named
    (lambda s: s["profile"].__setitem__("work_per_thread", "items / (block_size - 256)"), "profile.work_per_thread",
     "items / (block_size - 256)"),
    (lambda s: s["profile"].__setitem__("coalescing", "5"), "profile.coalescing", '"coalescing": "5"'),
    (lambda s: s["profile"].__setitem__("coalescing", "0"), "profile.coalescing", '"coalescing": "0"'),
    (lambda s: s["profile"].__setitem__("work_per_thread", "-3"), "profile.work_per_thread", '"-3"'),
    (lambda s: s["profile"].__setitem__("work_per_thread", "0"), "profile.work_per_thread", '"0"'),
    # a reference file is named with a leading _: any other .py of the folder is read as a spec
    (lambda s: s.__setitem__("reference", {"kind": "python", "file": "ref.py"}), "reference.file", '"ref.py"'),
    # an integer parameter without a min is a size (at least 1): a default of 0 loaded and never ran
    (lambda s: s["problem"].__setitem__("shift", {"default": 0}), "problem.shift", '"shift"'),
    # a launch CUDA refuses at the default config loaded, passed check-kernels and failed every trial
    (lambda s: s.__setitem__("block", ["0"]), "block", '"0"'),
    (lambda s: s.__setitem__("block", ["block_size", "8"]), "block", '"block_size"'),  # 1,024 threads at most
    (lambda s: s.__setitem__("block", ["block_size", "1", "65"]), "block", '"65"'),
    (lambda s: s.__setitem__("block", ["block_size / 3"]), "block", '"block_size / 3"'),  # not a whole number
    (lambda s: s.__setitem__("grid", ["-1"]), "grid", '"-1"'),
    (lambda s: s.__setitem__("grid", ["2**62"]), "grid", '"2**62"'),
    (lambda s: s.__setitem__("grid", ["1", "70000"]), "grid", '"70000"'),
    (lambda s: s.__setitem__("dynamic_smem", "2**70"), "dynamic_smem", '"2**70"'),
    (lambda s: s.__setitem__("dynamic_smem", "-4"), "dynamic_smem", '"-4"'),
    (lambda s: s.__setitem__("compile_options", [5]), "compile_options[0]", None),
    (lambda s: s.__setitem__("compile_options", [["-O3"]]), "compile_options[0]", None),
    # an exported .cu writes each -D as a #define line: a trailing backslash joined the next one to it
    # (the next -D lost, other arithmetic than measured), a /* commented out the lines after it
    (lambda s: s.__setitem__("compile_options", ["-DFOO=1\\", "-DSCALE=2.0f"]), "compile_options", None),
    (lambda s: s.__setitem__("compile_options", ["-D", "FOO=1/*"]), "compile_options", None),
    # the template's own checks named no field, so the editor could mark nothing and a click led nowhere
    (lambda s: s.__setitem__("entry", "saxpyy"), "entry", None),
])
def test_a_bad_spec_names_its_field_and_line(tmp_path, edit, field, line_text):
    spec = json.loads(json.dumps(SPEC))
    edit(spec)
    text = json.dumps(spec, indent=2)
    (tmp_path / "saxpy.cu").write_text(SOURCE)
    path = tmp_path / f"saxpy{SPEC_SUFFIX}"
    path.write_text(text)
    with pytest.raises(SpecError) as caught:
        load_declarative(path)
    assert caught.value.field == field and caught.value.line > 0
    if line_text is not None:
        assert line_text in text.splitlines()[caught.value.line - 1]
    with pytest.raises(TemplateError):  # and the folder refuses to load, naming the file
        load_templates(tmp_path)


def test_a_slot_longer_than_a_template_slot_may_be_is_refused_before_its_values_are_checked(tmp_path):
    """A slot of a million values took seconds to load (each value checked and rendered, several
    times) and tens of seconds per proposal of a restricted search."""
    import dataclasses

    from workbench.core.domain.templates import MAX_TEMPLATE_SLOT_VALUES

    (tmp_path / "saxpy.cu").write_text(SOURCE)
    path = tmp_path / f"saxpy{SPEC_SUFFIX}"
    spec = json.loads(json.dumps(SPEC))
    spec["slots"][0]["values"] = list(range(1, MAX_TEMPLATE_SLOT_VALUES + 2))
    spec["slots"][0]["default"] = 1
    path.write_text(json.dumps(spec))
    with pytest.raises(SpecError, match=r"slots\[0\]\.values: has 65,537 values; a template slot may have at most 65,536"):
        load_declarative(path)
    spec["slots"][0]["values"] = spec["slots"][0]["values"][:-1]  # the most a slot may have loads
    path.write_text(json.dumps(spec))
    template = load_declarative(path)
    assert len(template.slots[0].values) == MAX_TEMPLATE_SLOT_VALUES
    too_long = (template.slots[0].__class__(template.slots[0].name, tuple(range(1, MAX_TEMPLATE_SLOT_VALUES + 2))),
                *template.slots[1:])
    with pytest.raises(TemplateError, match="has 65,537 values"):  # a Python spec's template too
        dataclasses.replace(template, slots=too_long)


def test_a_dangling_link_is_named_as_it_is_in_the_folder(tmp_path):
    """The error named only the link's target (``/nonexistent/x: no such file``), not the file in
    the folder the person has to remove or fix."""
    link = tmp_path / f"saxpy{SPEC_SUFFIX}"
    link.symlink_to(tmp_path / "gone" / "x.json")
    with pytest.raises(SpecError) as caught:
        load_declarative(link)
    assert str(caught.value).startswith(f"{link}: a link to {tmp_path / 'gone' / 'x.json'}: no such file")


def test_a_key_given_twice_is_refused_not_the_last_taken(tmp_path):
    (tmp_path / "saxpy.cu").write_text(SOURCE)
    path = tmp_path / f"saxpy{SPEC_SUFFIX}"
    text = json.dumps(SPEC, indent=2)
    path.write_text(text.replace('"name": "saxpy",', '"name": "saxpy",\n  "name": "other",', 1))
    assert '"other"' in path.read_text()
    with pytest.raises(SpecError, match=r"saxpy\.kernel\.json: key 'name' appears twice in one object"):
        load_declarative(path)
    path.write_text(text.replace('"doc":', '"doc": "x", "doc":', 1))  # inside a nested object too
    with pytest.raises(SpecError, match="key 'doc' appears twice"):
        load_declarative(path)
    # nesting the first reading takes (orjson's depth) is one line from the second too, never a traceback
    path.write_text('{"name": "x", "deep": ' + "[" * 1000 + "]" * 1000 + "}")
    with pytest.raises(SpecError, match="nested too deeply|deep"):
        load_declarative(path)


def test_invalid_json_and_missing_source_say_where(tmp_path):
    path = tmp_path / f"k{SPEC_SUFFIX}"
    path.write_text('{\n "name": "k",\n "slots": [1,,]\n}')
    with pytest.raises(SpecError, match=r"k\.kernel\.json:3: not valid JSON"):
        load_declarative(path)
    path.write_text(json.dumps(dict(SPEC, name="k", source="k.cu")))
    with pytest.raises(SpecError, match="cannot read CUDA source k.cu: no such file$") as caught:
        load_declarative(path)
    assert str(tmp_path / "k.cu") not in str(caught.value)  # the spec is named, once, not the source's path
    (tmp_path / "k.cu").mkdir()
    with pytest.raises(SpecError, match="cannot read CUDA source k.cu: is a folder, not a CUDA source$"):
        load_declarative(path)
    path.write_text(json.dumps(dict(SPEC, name="k", source="../etc/passwd")))
    with pytest.raises(SpecError, match="source must be a file name"):
        load_declarative(path)


def test_saving_never_replaces_files_that_are_not_a_saved_template(tmp_path):
    (tmp_path / "saxpy.cu").write_text("// someone else's kernel\n")
    with pytest.raises(TemplateError, match="not part of a saved template"):
        save_template_folder(tmp_path, SPEC, SOURCE)
    assert (tmp_path / "saxpy.cu").read_text() == "// someone else's kernel\n"
    other = tmp_path / "other"
    shutil.copytree(kernels_dir(), other, ignore=shutil.ignore_patterns("__pycache__"))
    with pytest.raises(TemplateError, match="Python spec"):
        save_template_folder(other, dict(SPEC, name="vector_add", entry="saxpy"), SOURCE)
    with pytest.raises(SpecError):  # a spec that would not load is not written at all
        save_template_folder(tmp_path / "new", dict(SPEC, grid=["nope"]), SOURCE)
    assert not (tmp_path / "new").exists()


def test_reference_expressions_compute_but_never_act():
    e = compile_array_expression("where(u > 0, sqrt(u), -u) + sum(roll(u, 1)[0:3])", ["u"])
    u = np.array([-1.0, 4.0, 9.0])
    np.testing.assert_allclose(e({"u": u}), np.where(u > 0, np.sqrt(np.abs(u)), -u) + np.roll(u, 1).sum())
    with pytest.raises(RestrictionError, match=r'expression "u\.sum\(\)": only these functions'):
        compile_array_expression("u.sum()", ["u"])
    with pytest.raises(RestrictionError, match="attribute access"):
        compile_array_expression("u.T", ["u"])
    with pytest.raises(RestrictionError, match="only these functions"):
        compile_array_expression("open('f')", ["u"])
    with pytest.raises(RestrictionError, match="comprehensions"):
        compile_array_expression("[v for v in u]", ["u"])
    stencil = compile_array_expression("0.5 * u[1:-1] + 0.25 * (u[:-2] + u[2:])", ["u"])
    u = np.arange(6.0)
    np.testing.assert_allclose(stencil({"u": u}), 0.5 * u[1:-1] + 0.25 * (u[:-2] + u[2:]))


def test_a_reference_power_of_an_array_by_a_huge_exponent_is_an_evaluation_error():
    """The power guard took abs() of an array for a truth value: 'x ** 1e308' in a reference ended
    the run's start with NumPy's 'truth value of an array ... is ambiguous' instead of saying why."""
    huge = compile_array_expression("u ** 1e308", ["u"])
    with pytest.raises(RestrictionError, match=r'"u \*\* 1e308": cannot be computed: an array of 3 values \*\* 1e\+308 is too large'):
        huge({"u": np.array([0.5, 2.0, 3.0])})
    np.testing.assert_array_equal(huge({"u": np.array([0.0, 1.0, -1.0])}), [0.0, 1.0, 1.0])  # stays finite
    np.testing.assert_allclose(compile_array_expression("u ** 2", ["u"])({"u": np.array([3.0])}), [9.0])


def test_expression_problem_marks_the_offending_part():
    text = "block_size * itms <= 64"
    problem = expression_problem(text, ["block_size", "items"])
    assert text[problem.start:problem.start + problem.length] == "itms"
    assert expression_problem("block_size * items <= 64", ["block_size", "items"]) is None


def test_macro_scan_finds_slots_defaults_identifier_values_and_problem_params():
    source = """// BLOCK_SIZE in a comment is not a use; "ITEMS" in a string neither
#ifndef TILE
#define TILE 32
#endif
#define HALF (TILE / 2)
#if STRATEGY == STRATEGY_SHARED
__global__ void k(float* x) { x[threadIdx.x] = UNROLL * PROBLEM_N + HALF + FLT_MAX; }
#elif STRATEGY == STRATEGY_ATOMIC
#endif
"""
    scan = scan_macros(source)
    slots = {s.name: s for s in scan.slots}
    assert set(slots) == {"tile", "strategy", "unroll"}
    assert slots["tile"].default == 32 and slots["strategy"].choices == ("shared", "atomic")
    assert slots["unroll"].line == 7 and scan.problem == (("n", 7),)


def test_a_detected_slot_is_described_as_the_sources_header_describes_it():
    """The editor fills a detected slot's description from the comment line that starts with its
    macro (a column of such lines is how sources describe their knobs), lines that go on under
    the description included; a sentence that wraps onto a line starting with a name is not one."""
    from workbench.core.domain.macros import comment_docs

    source = """// A kernel that walks K in steps of
// BLOCK_K through shared memory.
//   BLOCK_M, BLOCK_K   block tile and depth of one stage
//   GRID_STRIDE  0: one pass over the problem
//                1: a fixed grid loops over it
/*
 * UNROLL: loads in flight
 */
__global__ void k(float* x) { x[0] = BLOCK_M * BLOCK_K * GRID_STRIDE * UNROLL * TILE; }
"""
    docs = comment_docs(source)
    assert docs["BLOCK_K"] == docs["BLOCK_M"] == "block tile and depth of one stage"
    assert docs["GRID_STRIDE"] == "0: one pass over the problem; 1: a fixed grid loops over it"
    assert docs["UNROLL"] == "loads in flight" and "TILE" not in docs
    slots = {s.macro: s for s in scan_macros(source).slots}
    assert slots["UNROLL"].doc == "loads in flight" and slots["TILE"].doc == ""
    # a hostile line is read in one pass (a pattern that also matched the line's end went back over
    # the spaces: hours for this line, in the window's thread)
    assert comment_docs("// ABC  x" + " " * 100_000 + "y */") == {"ABC": "x y"}
    assert comment_docs("\n".join(["/*" * 100_000, "*/" * 100_000] * 3)) == {}
    shipped = scan_macros((kernels_dir() / "softmax.cu").read_text())
    assert {s.macro: s.doc for s in shipped.slots}["THREADS_PER_ROW"] == "threads that share one row (lanes)"
    # the lines under an item: its wrapped sentence, and the choices it lists (their labels upper case)
    assert comment_docs((kernels_dir() / "softmax.cu").read_text())["ONLINE"].endswith(
        "rescaling the sum when the max grows, then the write pass (two reads of x instead of three)")
    assert "; SHARED_PRIVATE: each block counts" in comment_docs((kernels_dir() / "histogram.cu").read_text())["STRATEGY"]
    # other styles: after the #define's value, Doxygen's markers, a tab or "--"; code is not a comment
    other = comment_docs("""x = a
             * BLOCK_SIZE - 1;
*OUT_PTR = 3;
/* WIDTH: vector width */ int z = 0;
#define TILE 32 // tile width
#define ITEMS 4 ///< items per thread
//! UNROLL -- unroll factor

//\tLANES\tlanes per row, which must
//\t\ta power of two
/*
   DEPTH   stages in flight
*/
#define URL "http://example.com"
/*
#define OLD 1 // a define in a comment
*/
printf("/*");
*OUT_PTR = 3;
""")
    assert other == {"WIDTH": "vector width", "TILE": "tile width", "ITEMS": "items per thread",
                     "UNROLL": "unroll factor", "LANES": "lanes per row, which must a power of two",
                     "DEPTH": "stages in flight"}
    # lines that fool a literal scanner (an apostrophe, a digit separator, a string continued with
    # a backslash) leave every later line where it is; tabs inside strings count their columns
    tricky = comment_docs("#error this can't run\nconstexpr int kMax = 1'024;\nconst char* s = \"a\\\nb\";\n"
                          "// BLOCK_SIZE: threads per block\n    grid = compute(n);\n// more\n"
                          "#define FMT \"%d\\t%d\t%d\" // format\n")
    assert tricky == {"BLOCK_SIZE": "threads per block", "FMT": "format"}
    assert len(comment_docs("// AB: x\n//    " + "A" * 200_000)["AB"]) <= 602  # 600 characters, then " …"
    # a name as long as its column leaves one space: an item where its text lines up with the others'
    assert comment_docs((kernels_dir() / "transpose.cu").read_text())["TILES_PER_BLOCK"].startswith("consecutive tiles")
    # a hanging indent is the sentence going on, not a new item
    assert comment_docs("// BLOCK_SIZE: threads per block, a multiple of\n//   the warp size\n") == {
        "BLOCK_SIZE": "threads per block, a multiple of the warp size"}


def test_a_digit_separator_is_no_character_literal():
    """C++14's 1'024 was read as a character literal left open: the rest of its line was blanked,
    so a slot used only there was not found (and a template using it only there was refused)."""
    source = "__global__ void k(float* x) { for (int i = 0; i < 1'024 / BLOCK_SIZE; ++i) x[i] = 0xFF'FF; }\n"
    assert [s.macro for s in scan_macros(source).slots] == ["BLOCK_SIZE"]
    assert strip_comments("char c = 'a'; int n = 1'024; wchar_t w = L'x';") == "char c = ' '; int n = 1'024; wchar_t w = L' ';"


def test_cell_values_and_expression_lists():
    assert parse_values("32..256 *2") == [32, 64, 128, 256]
    assert parse_values("1..7 step 3") == [1, 4, 7]
    assert parse_values("true, false") == [True, False]
    assert parse_values("warp, block") == ["warp", "block"]
    with pytest.raises(ValueError):
        parse_values("1, two and a half")
    with pytest.raises(ValueError, match="'1e-400' is too small to tell from 0"):  # it read as a second 0
        parse_values("0, 1e-400")
    assert parse_values("0, 0e5, 0.0") == [0, 0.0, 0.0]
    # the editor's limit is the loader's (it refused 1..5000, which a spec file may hold), and a
    # range too long is refused before it is built
    assert len(parse_values("1..5000")) == 5000
    with pytest.raises(ValueError, match="1,000,000,000,000 values; a template slot may have at most 65,536"):
        parse_values("1..1000000000000")
    assert split_expressions("n, min(m, 4), k") == ["n", "min(m, 4)", "k"]
    # numbers in ASCII digits, as a C compiler reads the macro they become: Python's int() took
    # full-width and Arabic-Indic digits and digit-group underscores, silently
    for typed in ("１, ２", "١, ٢", "1_000, 2"):
        with pytest.raises(ValueError, match="is not a number, true/false or an identifier"):
            parse_values(typed)
    assert parse_values("-3, +2, .5, 2e3") == [-3, 2, 0.5, 2000.0]
    with pytest.raises(ValueError, match="'inf' is not a finite number"):
        parse_values("1, inf")
    with pytest.raises(ValueError, match="step must be at least 1"):  # it said "not a number"
        parse_values("1..16 step -1")


def test_draft_check_reports_space_resources_and_compiler_errors_at_their_lines():
    report = check_draft(SPEC, SOURCE)
    assert report.ok and report.compiled and (report.space_size, report.valid_configs) == (30, 27)
    assert report.resources["registers"] > 0 and report.resources["spill_bytes"] == 0
    broken = SOURCE.replace("#pragma unroll", "#pragma unroll\n    int unused_variable = 1 / 0; nonsense;")
    report = check_draft(SPEC, broken)
    errors = [d for d in report.diagnostics if d.severity == "error"]
    assert not report.ok and errors and all(d.line == 12 for d in errors)
    log = 'saxpy.cu(4): warning #177-D: variable "q" was declared but never referenced\nother.h(2): error: x\n'
    assert [(d.line, d.severity) for d in parse_compiler_log(log, "saxpy.cu")] == [(4, "warning"), (0, "error")]
    # a header's error is said at its own file and line, not at a "line 0" of the source
    assert [str(d) for d in parse_compiler_log(log, "saxpy.cu")][1] == "other.h, line 2: error: x"
    # a missing closing brace: at the source's last line, not at a "line 0" that marks nothing
    unclosed = check_draft(SPEC, SOURCE.rstrip().removesuffix("}"))
    last = len(SOURCE.rstrip().removesuffix("}").rstrip().splitlines())
    assert [str(d) for d in unclosed.diagnostics if d.severity == "error"] == [
        f'line {last}: error: at the end of the source: expected a "}}"']
    # the entry the spec names is no kernel of the module (a C++ name): said once, at its definition
    commented = "// saxpy(x, y) under __launch_bounds__: a comment names both first\n" + SOURCE
    mangled = check_draft(SPEC, commented.replace('extern "C" ', ""))
    (entry,) = [d for d in mangled.diagnostics if d.severity == "error"]
    defined = next(n for n, line in enumerate(commented.splitlines(), 1) if "saxpy(" in line and "//" not in line)
    assert str(entry).startswith(f"line {defined}: error: entry 'saxpy' is not a kernel of the compiled module"), entry
    none_valid = dict(SPEC, restrictions=["block_size > 4096"])  # said as leaving nothing, not only the default
    first = check_draft(none_valid, SOURCE).diagnostics[0]
    assert first.field == "restrictions[0]" and "holds for no combination of the slots' values" in first.message
    some_valid = dict(SPEC, restrictions=["block_size > 256"])
    first = check_draft(some_valid, SOURCE).diagnostics[0]
    assert first.field == "restrictions[0]" and "excludes the default config" in first.message
    no_defaults = json.loads(json.dumps(none_valid))
    for slot in no_defaults["slots"]:
        slot.pop("default", None)
    assert check_draft(no_defaults, SOURCE).diagnostics[0].field == "restrictions"  # no valid config at all


def test_draft_check_warns_of_a_condition_on_a_misspelt_slot_macro():
    """``#if ITMES > 1`` reads as ``#if 0 > 1`` for every config, without a word from the compiler."""
    lines = SOURCE.splitlines()
    at = next(i for i, text in enumerate(lines) if text.strip() == "#pragma unroll")
    typo = "\n".join([*lines[:at], "#if ITMES > 1 && defined(FAST_PATH) || PROBLEM_NN > 0 || OTHER_THING", "#endif",
                      *lines[at:]]) + "\n"
    warnings = [d for d in check_draft(SPEC, typo, compile_default=False).diagnostics if "defined nowhere" in d.message]
    assert [(d.line, d.message) for d in warnings] == [
        (at + 1, "ITMES in #if is defined nowhere and reads as 0 for every config; did you mean ITEMS (slot items)?"),
        (at + 1, "PROBLEM_NN in #if is defined nowhere and reads as 0 for every config; did you mean PROBLEM_N "
                 "(problem parameter n)?"),
        (at + 1, "OTHER_THING in #if is defined nowhere and reads as 0 for every config: no slot 'other_thing' is "
                 "declared to define it (add it, e.g. with Detect slots from source)")]
    assert not [d for d in check_draft(SPEC, SOURCE, compile_default=False).diagnostics if "defined nowhere" in d.message]


def test_a_condition_continued_on_the_next_line_is_checked_whole():
    """``#if defined(FAST) && \\`` then ``ITMES > 1``: the second line is part of the condition (a
    line ending in a backslash goes on), so its typo is said at the line the condition starts on."""
    head = "#if defined(FAST) && \\\n    ITMES > 1\n#endif\n"
    warnings = [d for d in check_draft(SPEC, head + SOURCE, compile_default=False).diagnostics
                if "defined nowhere" in d.message]
    assert [(d.line, d.message.split(" in ")[0]) for d in warnings] == [(1, "ITMES")]
    # a space or a carriage return after the backslash continues the line too, as compilers allow
    spaced = head.replace("\\\n", "\\ \r\n")
    assert [d.line for d in check_draft(SPEC, spaced + SOURCE, compile_default=False).diagnostics
            if "defined nowhere" in d.message] == [1]


@pytest.mark.parametrize("options, source_head", [
    (["-D", "MY_FLAG=1"], "#if MY_FLAG == 1\n#endif\n"),
    (["--define-macro=MY_FLAG=1"], "#if MY_FLAG == 1\n#endif\n"),
    (["--define-macro", "MY_FLAG"], "#if MY_FLAG\n#endif\n"),
    (["-include", "common.h"], "#if ENABLE_FOO\n#endif\n"),
    (["-DMY_FLAG(x)=x"], "#if MY_FLAG(2) > 1\n#endif\n"),
    ([], "#if defined(ENABLE_FOO) && ENABLE_FOO\n#endif\n"),
    ([], "#ifdef ENABLE_FOO\n#if ENABLE_FOO > 1\n#endif\n#endif\n"),
])
def test_a_macro_the_options_define_or_the_source_treats_as_optional_is_not_called_undefined(options, source_head):
    """Every form of a -D option, a header included by the options, and a name the source itself
    tests with defined / #ifdef: none is a slot nobody declared."""
    spec = {**json.loads(json.dumps(SPEC)), "compile_options": options}
    diagnostics = check_draft(spec, source_head + SOURCE, compile_default=False).diagnostics
    assert not [d for d in diagnostics if "defined nowhere" in d.message], diagnostics
    # and the same name read alone, without any of them, is said
    bare = {**json.loads(json.dumps(SPEC)), "compile_options": []}
    name = "MY_FLAG" if "MY_FLAG" in source_head else "ENABLE_FOO"
    said = check_draft(bare, f"#if {name}\n#endif\n" + SOURCE, compile_default=False).diagnostics
    assert [d.line for d in said if "defined nowhere" in d.message] == [1]


def test_draft_check_warns_of_an_identifier_slot_read_as_a_number():
    """A slot of values ``on, off`` read as ``#if UNROLL`` is 0 for on and 1 for off: the branch is inverted, unsaid."""
    spec = json.loads(json.dumps(SPEC))
    spec["slots"].append({"name": "unroll", "values": ["on", "off"], "default": "on"})
    lines = SOURCE.splitlines()
    at = next(i for i, text in enumerate(lines) if text.strip() == "#pragma unroll")
    source = "\n".join([*lines[:at], "#if UNROLL", "#endif", *lines[at:]]) + "\n"
    (warning,) = [d for d in check_draft(spec, source, compile_default=False).diagnostics if "numbered in order" in d.message]
    assert warning.line == at + 1 and "on = 0, off = 1" in warning.message
    compared = source.replace("#if UNROLL", "#if UNROLL == UNROLL_ON")
    assert not [d for d in check_draft(spec, compared, compile_default=False).diagnostics if "numbered" in d.message]


def test_draft_check_warns_of_configs_no_gpu_can_launch():
    """Only the default config's launch was checked: block sizes past 1,024 threads, or a slot
    value that makes the grid a division by zero, checked clean and failed every trial of them."""
    assert not [d for d in check_draft(SPEC, SOURCE, compile_default=False).diagnostics if "cannot launch" in d.message]
    wide = json.loads(json.dumps(SPEC))
    wide["slots"][0]["values"] = [256, 512, 1024, 2048, 4096]
    wide["restrictions"] = []
    (warning,) = [d for d in check_draft(wide, SOURCE, compile_default=False).diagnostics if "cannot launch" in d.message]
    assert warning.severity == "warning" and warning.field == "restrictions"
    assert warning.message.startswith("10 of 25 valid configs cannot launch on any GPU, e.g. {'block_size': 2048, ")
    assert "a block of 2048x1x1 = 2048 threads (at least 1, at most 1024, z at most 64)" in warning.message
    zero = json.loads(json.dumps(SPEC))
    zero["slots"][1]["values"] = [0, 1, 2]
    (warning,) = [d for d in check_draft(zero, SOURCE, compile_default=False).diagnostics if "cannot launch" in d.message]
    assert warning.message.startswith("6 of 18 valid configs cannot launch") and "cannot be computed" in warning.message
    # dynamic shared memory beyond any GPU's: the check said ok, and half the trials failed to launch
    huge = json.loads(json.dumps(SPEC))
    huge["dynamic_smem"] = "block_size * 1000"
    (warning,) = [d for d in check_draft(huge, SOURCE, compile_default=False).diagnostics if "cannot launch" in d.message]
    assert "B of dynamic shared memory per block (no GPU gives a block more than 232,448 B)" in warning.message


def test_a_refused_restriction_leaves_the_others_in_the_check():
    """One restriction refused (a slot being typed) had the source checked without any of them: the
    check then advised a restriction the person already had, for configs it keeps out."""
    wide = json.loads(json.dumps(SPEC))
    wide["slots"][0]["values"] = [256, 512, 1024, 2048, 4096]
    wide["restrictions"] = ["block_size <= 1024"]
    assert not [d for d in check_draft(wide, SOURCE, compile_default=False).diagnostics if "cannot launch" in d.message]
    wide["restrictions"].append("block_size * itemz <= 4096")  # (not a slot yet)
    report = check_draft(wide, SOURCE, compile_default=False)
    assert [d.field for d in report.diagnostics if d.severity == "error"] == ["restrictions[1]"]
    assert not [d for d in report.diagnostics if "cannot launch" in d.message], report.diagnostics
    assert report.note.endswith("the source was checked without the refused one")


@pytest.mark.parametrize("expression, said", [
    ("zeros_like(x)[::0]", 'expression "zeros_like(x)[::0]": cannot be computed: slice step cannot be zero'),
    ("x[1:]", "gives shape (4098,), but output 'out' has shape (4099,)"),
    ("x[n]", "cannot be computed: index 4099 is out of bounds"),
])
def test_a_reference_that_cannot_be_computed_names_its_field_when_checked_and_when_run(tmp_path, cli, expression, said):
    """Only the inputs tell whether an expression can be computed: the editor's check computes it on
    the small problem and marks the field; a run that starts with it stops in one line naming the
    spec's field and line, without the exception's class (it said "ValueError: slice step ...")."""
    spec = dict(SPEC, reference={"kind": "expression", "outputs": {"out": expression}})
    report = check_draft(spec, SOURCE, compile_default=False)
    assert not report.ok and [(d.field, said in d.message) for d in report.diagnostics] == [("reference.outputs.out", True)]
    (tmp_path / f"saxpy{SPEC_SUFFIX}").write_text(json.dumps(spec, indent=1))
    (tmp_path / "saxpy.cu").write_text(SOURCE)
    result = cli("tune", "saxpy", "--kernel-dir", tmp_path, "--backend", "sim", "--budget", 2,
                 "--out", tmp_path / "s.json")  # checked before the run, as a malformed file is refused (exit 2)
    error = result.stderr.strip().splitlines()[-1]
    assert result.returncode == 2 and said in error and "Error:" not in error, result.stderr
    assert "backend failed to start" not in result.stderr  # (a worker found it, and the run failed: exit 1)
    assert f"saxpy{SPEC_SUFFIX}:" in error and "reference.outputs.out" in error and not (tmp_path / "s.json").exists()


def test_the_editors_check_refuses_a_reference_no_output_can_match_as_check_kernels_does(tmp_path, cli):
    """A reference of ``... / 0`` computes, to values that are not finite: check-kernels failed the
    template and a run stopped before its first trial, while the editor's check said ok and
    offered Tune."""
    spec = dict(SPEC, reference={"kind": "expression", "outputs": {"out": "(a * x + y) / 0"}})
    report = check_draft(spec, SOURCE, compile_default=False)
    assert not report.ok and [(d.severity, d.field) for d in report.diagnostics] == [("error", "reference")]
    said = report.diagnostics[0].message
    assert "not finite" in said and "small problem" in said
    (tmp_path / f"saxpy{SPEC_SUFFIX}").write_text(json.dumps(spec, indent=1))
    (tmp_path / "saxpy.cu").write_text(SOURCE)
    result = cli("check-kernels", "--kernel-dir", tmp_path, "--kernel", "saxpy")
    assert result.returncode == 1 and said in result.stdout + result.stderr


def test_the_editors_check_does_not_compute_a_reference_over_a_small_problem_that_is_not_small():
    """The check runs in the window's process after every pause in typing: a small problem of
    millions of values took seconds and gigabytes there (or ended in a MemoryError traceback)."""
    problem = {**SPEC["problem"], "n": {**SPEC["problem"]["n"], "small": 5_000_000}}
    report = check_draft(dict(SPEC, problem=problem), SOURCE, compile_default=False)
    assert [(d.severity, d.field) for d in report.diagnostics] == [("warning", "reference")]
    assert "15,000,000 values" in report.diagnostics[0].message and report.ok


def test_check_kernels_checks_a_template_without_defaults_and_names_a_space_with_no_config(tmp_path, cli):
    """Slots without defaults are allowed (tune starts from its strategy's picks), but check-kernels
    failed every such template as "the default config is missing or invalid", also one whose
    restrictions left no config at all."""
    spec = json.loads(json.dumps(SPEC))
    for slot in spec["slots"]:
        slot.pop("default", None)
    (tmp_path / "saxpy.cu").write_text(SOURCE)
    (tmp_path / f"saxpy{SPEC_SUFFIX}").write_text(json.dumps(spec, indent=2))
    result = cli("check-kernels", "--kernel-dir", str(tmp_path), "--kernel", "saxpy")
    assert result.returncode == 0 and re.search(r"^saxpy .* ok$", result.stdout, re.M), result.stdout + result.stderr
    spec["restrictions"] = ["block_size > 4096"]
    (tmp_path / f"saxpy{SPEC_SUFFIX}").write_text(json.dumps(spec, indent=2))
    result = cli("check-kernels", "--kernel-dir", str(tmp_path), "--kernel", "saxpy")
    assert result.returncode != 0 and "no config of the space meets its restrictions (block_size > 4096)" in (
        result.stdout + result.stderr)


def test_check_kernels_fails_a_config_its_launch_bounds_forbid(tmp_path, cli):
    """A kernel whose ``__launch_bounds__`` is tighter than some block sizes its space allows:
    those configs compile, and every trial of them is a launch error on any GPU (and in the
    simulator). check-kernels compiled them and said ok; it now names them and the bound."""
    (tmp_path / "saxpy.cu").write_text(SOURCE.replace("__launch_bounds__(BLOCK_SIZE)", "__launch_bounds__(128)"))
    (tmp_path / f"saxpy{SPEC_SUFFIX}").write_text(json.dumps(SPEC, indent=2))
    result = cli("check-kernels", "--kernel-dir", str(tmp_path), "--kernel", "saxpy", "--sample", "26")
    assert result.returncode != 0 and re.search(r"^saxpy .* FAIL$", result.stdout, re.M), result.stdout
    lines = [line for line in result.stdout.splitlines() if "__launch_bounds__ allows 128" in line]
    configs = list(load_declarative(tmp_path / f"saxpy{SPEC_SUFFIX}").space())
    too_big = [c for c in configs if c["block_size"] > 128]
    assert 0 < len(too_big) < len(configs) == 27
    assert sorted(line.split()[2].rstrip(":") for line in lines) == sorted(c.id for c in too_big), result.stdout
    assert re.search(rf"^saxpy +27 +27/27 +{len(too_big)} ", result.stdout, re.M), result.stdout  # all compiled
    (tmp_path / "saxpy.cu").write_text(SOURCE)  # the bound follows the block size: all launch
    result = cli("check-kernels", "--kernel-dir", str(tmp_path), "--kernel", "saxpy", "--sample", "26")
    assert result.returncode == 0 and re.search(r"^saxpy .* ok$", result.stdout, re.M), result.stdout


def test_check_kernels_checks_the_largest_block_and_names_a_failed_configs_values(tmp_path, cli):
    """With its default sample (the default config and 3 drawn ones) check-kernels said ok for a
    kernel whose fixed __launch_bounds__(256) the space's 1,024-thread blocks exceed, and a failure
    line named its config by id alone."""
    (tmp_path / "saxpy.cu").write_text(SOURCE.replace("__launch_bounds__(BLOCK_SIZE)", "__launch_bounds__(256)"))
    (tmp_path / f"saxpy{SPEC_SUFFIX}").write_text(json.dumps(SPEC, indent=2))
    result = cli("check-kernels", "--kernel-dir", str(tmp_path), "--kernel", "saxpy", "--quiet")
    assert result.returncode != 0 and re.search(r"^saxpy .* FAIL$", result.stdout, re.M), result.stdout
    failed = [line for line in result.stdout.splitlines() if "__launch_bounds__ allows 256" in line]
    assert failed and re.match(r"saxpy config [0-9a-f]{12} \(block_size=1024, items=\d+\): cannot launch", failed[0]), failed


def test_check_kernels_checks_the_largest_values_where_resources_add_up(tmp_path, cli):
    """A kernel staging ITEMS x 1,024 floats in shared memory cannot compile with 16 items (64 KiB
    of static shared memory), and check-kernels said ok: its sample (the default, 3 drawn configs
    and the largest block, 1,024 threads with at most 4 items) missed every such config."""
    staged = SOURCE.replace(
        "#pragma unroll",
        "__shared__ float stage[ITEMS * 1024];\n    stage[threadIdx.x] = a;\n    __syncthreads();\n#pragma unroll",
    ).replace("out[i] = a * x[i] + y[i];", "out[i] = stage[(threadIdx.x + k) % (ITEMS * 1024)] * x[i] + y[i];")
    (tmp_path / "saxpy.cu").write_text(staged)
    (tmp_path / f"saxpy{SPEC_SUFFIX}").write_text(json.dumps(SPEC, indent=2))
    result = cli("check-kernels", "--kernel-dir", str(tmp_path), "--kernel", "saxpy", "--quiet", "--sample", "0")
    assert result.returncode != 0 and re.search(r"^saxpy .* FAIL$", result.stdout, re.M), result.stdout
    assert re.search(r"saxpy config [0-9a-f]{12} \(block_size=\d+, items=16\): .*shared data", result.stdout), result.stdout


def test_the_editors_check_warns_of_blocks_over_a_fixed_launch_bound_and_not_of_one_that_follows_the_block(
        monkeypatch):
    """The check compiles the default config only, and said ok for a kernel whose fixed
    __launch_bounds__(128) every larger block size of its space exceeds (their trials all fail to
    launch); a bound written from the block slot is the kernel's own and is not warned of."""
    from workbench.core.model.kernel_draft import check_draft

    fixed = check_draft(SPEC, SOURCE.replace("__launch_bounds__(BLOCK_SIZE)", "__launch_bounds__(256)"))
    warned = [d for d in fixed.diagnostics if "__launch_bounds__ allows 256" in d.message]
    assert fixed.ok and len(warned) == 1 and warned[0].severity == "warning"
    assert "launch blocks of 1024 threads" in warned[0].message
    assert warned[0].line == next(n for n, line in enumerate(SOURCE.splitlines(), 1) if "__launch_bounds__" in line)
    from workbench.core.model import compiler

    compiles, original = [], compiler.compile_cuda
    monkeypatch.setattr(compiler, "compile_cuda", lambda *a, **k: compiles.append(1) or original(*a, **k))
    following = check_draft(SPEC, SOURCE)
    assert following.ok and not any("__launch_bounds__" in d.message for d in following.diagnostics)
    assert len(compiles) == 1  # a bound written from the slot: nothing compiled besides the default


def test_a_small_problem_of_gigabytes_is_refused_when_the_spec_loads(tmp_path, cli):
    """The simulator makes the small problem's buffers, runs the reference and emulates every
    config on them in the tuner's process: 2**28 elements took 11.6 GB three trials into a run,
    and check-kernels passed the spec."""
    spec = json.loads(json.dumps(SPEC))
    spec["problem"]["n"]["small"] = 2**28
    (tmp_path / "saxpy.cu").write_text(SOURCE)
    (tmp_path / f"saxpy{SPEC_SUFFIX}").write_text(json.dumps(spec, indent=2))
    with pytest.raises(SpecError, match=r"the small problem's buffers take 3,072 MiB; .* at most 256 MiB") as caught:
        load_declarative(tmp_path / f"saxpy{SPEC_SUFFIX}")
    assert caught.value.field == "problem"
    result = cli("check-kernels", "--kernel-dir", str(tmp_path), "--kernel", "saxpy")
    assert result.returncode != 0 and "at most 256 MiB" in result.stderr


def test_template_from_spec_matches_the_loaded_one():
    t = template_from_spec(SPEC, SOURCE)
    assert t.space().count() == load_declarative(EXAMPLE / f"saxpy{SPEC_SUFFIX}").space().count()


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ to run kernels on the CPU")
def test_the_example_kernel_computes_its_reference_when_run(tmp_path):
    """What the CUDA backend checks, on the CPU: the declarative template's launch geometry, argument
    order, inputs and reference agree with the kernel, for the default and configs with ragged tails."""
    from cpu_cuda import run_configs

    template = load_declarative(EXAMPLE / f"saxpy{SPEC_SUFFIX}")
    problem = template.resolve_problem({"n": 3001})
    space = template.space(problem)
    configs = [space.default_config(), space.config({"block_size": 32, "items": 16}),
               space.config({"block_size": 1024, "items": 4})]
    inputs = template.make_inputs(problem, np.random.default_rng(0))
    expected = template.reference(inputs, problem)["out"]
    rtol, atol = template.tolerance
    for config, outputs in zip(configs, run_configs(template, problem, configs, inputs, tmp_path)):
        np.testing.assert_allclose(outputs["out"].astype(np.float64), expected, rtol=rtol, atol=atol, err_msg=str(config))


@pytest.mark.parametrize("payload, said", [
    ('{"name": "k", "version": ' + "9" * 5000 + "}", "an integer with 5,000 digits"),
    ('{"name": "k", "version": 99999999999999999999}', "does not fit 64 bits"),
    ('{"name": "k", "slots": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
])
def test_a_spec_of_absurd_json_is_one_line(tmp_path, cli, payload, said):
    """Python's own limits (4,300 digits, the recursion limit) were tracebacks out of the loader."""
    (tmp_path / f"k{SPEC_SUFFIX}").write_text(payload)
    with pytest.raises(SpecError, match=said):
        load_declarative(tmp_path / f"k{SPEC_SUFFIX}")
    result = cli("kernels", "--kernel-dir", tmp_path)
    assert result.returncode == 2 and said in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("fifo", ["saxpy" + SPEC_SUFFIX, "saxpy.cu"])
def test_a_fifo_in_a_template_folder_is_refused_not_read(tmp_path, cli, fifo):
    """Listing a folder opened a FIFO named like a spec or its source for reading, which waits for a
    writer for ever; it is refused by its type, before anything opens it."""
    (tmp_path / f"saxpy{SPEC_SUFFIX}").write_text(json.dumps(SPEC))
    (tmp_path / "saxpy.cu").write_text(SOURCE)
    (tmp_path / fifo).unlink()
    os.mkfifo(tmp_path / fifo)
    result = cli("kernels", "--kernel-dir", tmp_path)
    assert result.returncode == 2 and "not a regular file" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("content, said", [
    (b'x = "\xe9"\n', r"k\.py:1: syntax error: \(unicode error\)"),  # Latin-1 without a coding line
    (b"x = 1\x00\n", r"k\.py: syntax error: source code string cannot contain null bytes"),
    (b"x = " + b"-" * 200_000 + b"1\n", r"k\.py: syntax error: nested too deeply"),
    (None, r"k\.py: not a regular file"),  # a FIFO: opening it waited for a writer for ever
])
def test_a_python_spec_that_cannot_be_read_or_parsed_is_one_line(tmp_path, cli, content, said):
    """A folder's .py file was read as text in the locale's encoding (a UnicodeDecodeError traceback),
    opened whatever its type, and parsed without a bound on nesting (MemoryError)."""
    if content is None:
        os.mkfifo(tmp_path / "k.py")
    else:
        (tmp_path / "k.py").write_bytes(content)
    with pytest.raises(TemplateError, match=said):
        load_templates(tmp_path)
    result = cli("kernels", "--kernel-dir", tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("make, said", [
    (lambda cu: os.mkfifo(cu), "not a regular file"),  # a plain open waited for a writer for ever
    (lambda cu: cu.symlink_to("/dev/zero"), "not a regular file"),  # read until memory ran out
    (lambda cu: cu.write_bytes(b"\xff\xfe" + "x".encode("utf-16-le")), "not UTF-8 text"),  # a codec traceback line
    (lambda cu: None, "no such file"),
])
def test_a_python_specs_cuda_source_is_read_as_a_declarative_ones(tmp_path, cli, make, said):
    """``read_cu``, which every shipped spec calls, opened ``<name>.cu`` with a plain read_text: a FIFO
    of that name hung ``kernels --kernel-dir``, a link to a device was read without end, and UTF-16
    bytes surfaced as the codec's UnicodeDecodeError."""
    shutil.copy(ROOT / "kernels" / "gelu.py", tmp_path / "gelu.py")
    make(tmp_path / "gelu.cu")
    with pytest.raises(TemplateError, match=f"gelu.py: cannot read CUDA source gelu.cu: {said}"):
        load_templates(tmp_path)
    result = cli("kernels", "--kernel-dir", tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr and "UnicodeDecodeError" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and said in result.stderr


def _socket_at(path: Path) -> None:
    import socket

    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.close()  # the socket file stays


@pytest.mark.parametrize("make", [_socket_at, lambda cu: cu.symlink_to("/dev/zero"),
                                  lambda cu: cu.symlink_to(cu.parent / "gone")])
def test_a_python_spec_beside_a_cu_that_is_no_regular_file_is_a_template_that_says_so(tmp_path, cli, make):
    """A .py beside a .cu that was no regular file was taken for a python benchmark ('gelu is a
    python benchmark; it runs with --backend python'), and a socket read as 'No such device or
    address'; the spec's own loader now says what is wrong with the source."""
    shutil.copy(ROOT / "kernels" / "gelu.py", tmp_path / "gelu.py")
    make(tmp_path / "gelu.cu")
    result = cli("tune", "gelu", "--kernel-dir", tmp_path, "--backend", "sim", "--budget", "1", "--out", tmp_path / "o.json")
    assert result.returncode == 2 and "cannot read CUDA source gelu.cu:" in result.stderr, result.stderr
    assert "python benchmark" not in result.stderr and "No such device" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "o.json").exists()


def test_a_spec_and_source_saved_with_a_byte_order_mark_load(tmp_path, cli):
    """Editors on Windows save UTF-8 with a BOM: the spec was refused with the JSON parser's
    'Unexpected UTF-8 BOM (decode using utf-8-sig)', a hint about Python, not about the file."""
    (tmp_path / "saxpy.cu").write_bytes(b"\xef\xbb\xbf" + SOURCE.encode())
    (tmp_path / f"saxpy{SPEC_SUFFIX}").write_bytes(b"\xef\xbb\xbf" + json.dumps(SPEC).encode())
    template = load_declarative(tmp_path / f"saxpy{SPEC_SUFFIX}")
    assert template.source == SOURCE and template.name == "saxpy"
    result = cli("kernels", "--kernel-dir", tmp_path)
    assert result.returncode == 0 and "saxpy" in result.stdout, result.stderr


def test_a_source_name_with_a_nul_character_is_one_line(tmp_path, cli):
    """A spec's "source" holding a NUL passed the file-name check and reached os.open, whose
    ValueError ('embedded null byte') was a traceback out of ``kernels`` and Open kernel folder."""
    from workbench.core.errors import SessionFormatError
    from workbench.core.fs import read_capped

    (tmp_path / "saxpy.cu").write_text(SOURCE)
    (tmp_path / f"saxpy{SPEC_SUFFIX}").write_text(json.dumps({**SPEC, "source": "\x00.cu"}))
    result = cli("kernels", "--kernel-dir", tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr and "\x00" not in result.stderr
    assert "source must be a file name" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    with pytest.raises(SessionFormatError, match=r"a\\x00b: not a file name \(it holds a NUL character\)"):
        read_capped(tmp_path / "a\x00b")  # any reader handed such a name from a file


@pytest.mark.parametrize("name", ["loop" + SPEC_SUFFIX, "loop.py"])
def test_a_link_to_itself_in_a_template_folder_is_one_line(tmp_path, cli, name):
    """Resolving a spec's path raised RuntimeError ('Symlink loop') on Python 3.11: a traceback
    out of ``kernels --kernel-dir`` for a link that points at itself."""
    (tmp_path / name).symlink_to(tmp_path / name)
    with pytest.raises(WorkbenchError, match="Too many levels of symbolic links"):
        load_templates(tmp_path)
    result = cli("kernels", "--kernel-dir", tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_finding_identifier_values_takes_time_linear_in_the_macros():
    """Each macro was checked against every other with a search of the whole source: a source
    using 300 macros took a minute, and the editor scans a lone .cu in the window's thread."""
    import time

    source = SOURCE + "\n" + "\n".join(f"int v{i} = MACRO_{i};" for i in range(3000))
    source += "\n#if STRATEGY == STRATEGY_A\n#elif STRATEGY_B != STRATEGY\n#endif\n"
    started = time.monotonic()
    scan = scan_macros(source)
    assert time.monotonic() - started < 10
    slots = {s.name: s for s in scan.slots}
    assert len(slots) == 3000 + 3 and slots["strategy"].choices == ("a", "b")


def test_a_python_spec_with_a_coding_line_is_read_in_its_encoding(tmp_path):
    """The file is parsed from its bytes, as the import reads it: a PEP 263 coding line is honoured."""
    (tmp_path / "k.py").write_bytes(b'# -*- coding: latin-1 -*-\nx = "\xe9"\n')
    with pytest.raises(TemplateError, match="defines no TEMPLATE"):
        load_templates(tmp_path)


@pytest.mark.parametrize("shape", [["1e308"], ["n", "n", "n", "n"]])
def test_a_buffer_too_large_to_count_is_refused_when_the_spec_loads(tmp_path, cli, shape):
    """A finite shape of 1e308 elements (or n**4 of them) loaded, then failed the run's start in the
    backend with 'OverflowError: Python int too large to convert to C long'."""
    args = [dict(a, shape=shape) if a["name"] == "y" else a for a in SPEC["args"]]
    path = save_template_folder(tmp_path, dict(SPEC, reference={"kind": "none"}), SOURCE)
    path.write_text(json.dumps(dict(SPEC, args=args, reference={"kind": "none"})))
    with pytest.raises(SpecError, match=r"args\[1\]\.shape: .* elements of float32 at the default problem; a "
                                        r"buffer must fit in 2\*\*63-1 bytes"):
        load_declarative(path)
    result = cli("tune", "saxpy", "--kernel-dir", tmp_path, "--backend", "sim", "--budget", "2", "--resources",
                 "estimated", "--executor", "inline", "--out", tmp_path / "o.json", "--quiet")
    assert result.returncode == 2 and "buffer must fit" in result.stderr and not (tmp_path / "o.json").exists()


def test_a_problem_parameter_outside_its_declared_bounds_names_them_as_written(tmp_path):
    problem = {**SPEC["problem"], "n": {**SPEC["problem"]["n"], "min": 1, "max": 1 << 30}}
    path = save_template_folder(tmp_path, dict(SPEC, problem=problem, reference={"kind": "none"}), SOURCE)
    with pytest.raises(WorkbenchError, match=r"problem parameter n=0 is outside \[1, 1073741824\]$"):
        load_declarative(path).resolve_problem({"n": 0})  # not [1.0, 1073741824.0]


def test_a_shape_naming_an_unknown_parameter_is_called_an_expression_not_a_restriction(tmp_path):
    args = [dict(a, shape=["m"]) if a["name"] == "y" else a for a in SPEC["args"]]
    path = save_template_folder(tmp_path, dict(SPEC, reference={"kind": "none"}), SOURCE)
    path.write_text(json.dumps(dict(SPEC, args=args, reference={"kind": "none"})))
    with pytest.raises(SpecError, match=r"args\[1\]\.shape: expression \"m\": unknown name 'm'") as caught:
        load_declarative(path)
    assert "restriction" not in str(caught.value)


def test_a_spec_whose_name_is_not_its_files_is_refused_in_one_line(tmp_path, cli):
    """``saxpy.kernel.json`` naming itself ``foo`` was listed as foo, while ``tune foo`` found no
    kernel foo and ``tune saxpy`` no template saxpy: both names have to agree."""
    from cli_errors import one_line_error

    (tmp_path / "saxpy.cu").write_text(SOURCE)
    (tmp_path / f"saxpy{SPEC_SUFFIX}").write_text(json.dumps(dict(SPEC, name="foo")))
    for args in (("kernels", "--kernel-dir", str(tmp_path)),
                 ("tune", "saxpy", "--kernel-dir", str(tmp_path), "--backend", "sim", "--budget", "1",
                  "--out", str(tmp_path / "s.json"))):
        result = cli(*args)
        assert result.returncode != 0
        line = one_line_error(result)
        assert "'foo' differs from the file's, saxpy.kernel.json" in line


def test_a_python_spec_whose_template_name_is_not_its_files_is_refused(tmp_path):
    shutil.copy(kernels_dir() / "vector_add.py", tmp_path / "renamed.py")
    shutil.copy(kernels_dir() / "vector_add.cu", tmp_path / "renamed.cu")
    with pytest.raises(TemplateError, match="'vector_add' differs from the file's, renamed.py"):
        load_templates(tmp_path)


def test_a_reference_cannot_make_arrays_far_larger_than_its_inputs():
    """``arange`` and ``pad`` make arrays from numbers: ``sum(arange(4e8)) * 0`` passed the editor's
    check of a small problem at 3 GB, and a larger count would take the window's memory."""
    x = np.ones(4099)
    huge = compile_array_expression("a * x + y + sum(arange(4e8)) * 0", ["a", "x", "y"])
    with pytest.raises(RestrictionError, match=r"arange\(\) would make 400,000,000 elements, more than 33,554,432"):
        huge({"a": 2.0, "x": x, "y": x})
    with pytest.raises(RestrictionError, match=r"pad\(\) would make"):
        compile_array_expression("sum(pad(x, 1e9)) + x", ["x"])({"x": x})
    # what a reference needs stays: arrays the size of its inputs, or a few times it
    assert compile_array_expression("x + arange(n)", ["x", "n"])({"x": x, "n": 4099})[-1] == 4099.0
    assert compile_array_expression("pad(x, 2)[2:-2]", ["x"])({"x": x}).shape == (4099,)
    big = np.ones(1 << 21)
    assert compile_array_expression("x + arange(n) * 0", ["x", "n"])({"x": big, "n": 1 << 21}).shape == (1 << 21,)


def test_a_switch_written_as_text_is_refused_before_it_inverts(tmp_path):
    """"true" / "false" in quotes are identifier values, rendered by position ("false", the second,
    as 1): the kernel would run the opposite branch of what the config says. Refused in one line."""
    spec = json.loads(json.dumps(SPEC))
    spec["slots"].append({"name": "use_ldg", "values": ["true", "false"], "group": "memory", "default": "true",
                          "doc": "read through the read-only path"})
    (tmp_path / "saxpy.cu").write_text("#if USE_LDG\n#endif\n" + SOURCE)
    (tmp_path / f"saxpy{SPEC_SUFFIX}").write_text(json.dumps(spec, indent=2))
    with pytest.raises((TemplateError, SpecError), match="without quotes"):
        load_templates(tmp_path)


def test_a_template_without_a_reference_reports_no_quality_on_the_simulator(tmp_path):
    """Nothing compared, nothing claimed: a simulated trial of a template with ``reference: none``
    had quality 1.0 ("7.2 of the 7.2 correct digits") that no comparison measured."""
    from workbench.backends.base import BackendSpec, EvalLimits
    from workbench.backends.sim import SimBackend

    spec = json.loads(json.dumps(SPEC))
    spec["reference"] = {"kind": "none"}
    (tmp_path / "saxpy.cu").write_text(SOURCE)
    (tmp_path / f"saxpy{SPEC_SUFFIX}").write_text(json.dumps(spec, indent=2))
    backend = SimBackend(BackendSpec("sim", {"kernel": "saxpy", "kernel_dirs": [str(tmp_path)]}))
    backend.prepare()
    measured = backend.evaluate(next(iter(backend.space)), EvalLimits())
    assert measured.ok and "quality" not in measured.metrics
    assert measured.details["quality_source"].startswith("none")
    with_reference = SimBackend(BackendSpec("sim", {"kernel": "saxpy", "kernel_dirs": [str(EXAMPLE)]}))
    with_reference.prepare()
    assert with_reference.evaluate(next(iter(with_reference.space)), EvalLimits()).metric("quality") > 0.9


def test_a_run_where_every_config_fails_to_compile_says_why_in_its_last_line(cli, tmp_path):
    """"0 feasible; no feasible config" and exit 0 told a new user nothing: the last line of tune and
    show name the failure most trials share, with the compiler's line."""
    (tmp_path / "saxpy.cu").write_text(SOURCE.replace("{", "{ int broken = ;", 1))
    (tmp_path / f"saxpy{SPEC_SUFFIX}").write_text(json.dumps(SPEC, indent=2))
    out = tmp_path / "s.json"
    done = cli("tune", "saxpy", "--kernel-dir", str(tmp_path), "--backend", "sim", "--budget", "3", "--out", str(out))
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert "no feasible config (no successful trials among 3; most often compile_error (3): " in last
    assert "error" in last.split("compile_error (3): ", 1)[1]
    assert "most often compile_error (3)" in cli("show", str(out)).stdout


@pytest.mark.parametrize("code, said", [
    ("def reference(inputs, problem):\n    return {'out': inputs['v']}\n",
     ": reference(inputs, problem) raised KeyError: 'v'"),
    # as the file loads: a syntax error named only the file's base name, and a name that fails at
    # module level neither file nor line
    ("def reference(inputs, problem)\n    return {}\n", ", line 1: SyntaxError: expected ':'"),
    ("import numpy as np\nSCALE = undefined_thing\n", ", line 2: loading it raised NameError: name 'undefined_thing'"),
    # a syntax error of text the file compiles itself is at the file's line that compiles it
    ("import numpy as np\n\n\nCHECK = compile('a * x +', 'formula', 'eval')\n",
     ", line 4: loading it raised SyntaxError: invalid syntax"),
    ("import sys\nsys.exit('no')\n", ", line 2: loading it raised SystemExit: no"),
])
def test_a_python_reference_that_raises_is_named_with_its_file(tmp_path, cli, code, said):
    """"sim backend failed to start: KeyError: 'v'" named neither the file nor the function."""
    spec = json.loads(json.dumps(SPEC))
    spec["reference"] = {"kind": "python", "file": "_saxpy_reference.py"}
    (tmp_path / "saxpy.cu").write_text(SOURCE)
    (tmp_path / f"saxpy{SPEC_SUFFIX}").write_text(json.dumps(spec, indent=2))
    (tmp_path / "_saxpy_reference.py").write_text(code)
    out = tmp_path / "s.json"
    done = cli("tune", "saxpy", "--kernel-dir", str(tmp_path), "--backend", "sim", "--budget", "2", "--out", str(out))
    assert done.returncode != 0
    assert f"{tmp_path / '_saxpy_reference.py'}{said}" in done.stderr, done.stderr
    assert not out.exists() and not Path(str(out) + ".journal").exists()  # nothing measured, nothing left


@pytest.mark.parametrize("returned", ["inputs['x'][:10]", "float(inputs['x'].sum())"])
def test_a_python_reference_of_the_wrong_shape_is_said_when_the_simulator_starts(tmp_path, cli, returned):
    """The simulator compares no outputs, so a reference of ten elements (or one number) for an
    output of n ran every simulated trial "ok": the author learnt it only on a GPU."""
    spec = json.loads(json.dumps(SPEC))
    spec["reference"] = {"kind": "python", "file": "_saxpy_reference.py"}
    (tmp_path / "saxpy.cu").write_text(SOURCE)
    (tmp_path / f"saxpy{SPEC_SUFFIX}").write_text(json.dumps(spec, indent=2))
    (tmp_path / "_saxpy_reference.py").write_text(f"def reference(inputs, problem):\n    return {{'out': {returned}}}\n")
    done = cli("tune", "saxpy", "--kernel-dir", str(tmp_path), "--backend", "sim", "--budget", "2",
               "--out", str(tmp_path / "s.json"))
    assert done.returncode != 0
    assert f"{tmp_path / '_saxpy_reference.py'}: reference() gave 'out' of shape " in done.stderr
    assert "but output 'out' has shape (" in done.stderr


def test_a_lone_cuda_source_is_named_with_the_spec_it_lacks(tmp_path, cli):
    """A folder holding only blur.cu said "unknown kernel 'blur'", as if the file were not there."""
    (tmp_path / "saxpy.cu").write_text(SOURCE)
    done = cli("tune", "saxpy", "--kernel-dir", str(tmp_path), "--backend", "sim", "--budget", "2",
               "--out", str(tmp_path / "s.json"))
    assert done.returncode == 2
    assert f"{tmp_path / 'saxpy.cu'} is a CUDA source without a template spec: add saxpy{SPEC_SUFFIX}" in done.stderr


def test_one_broken_spec_leaves_the_folders_other_templates_usable(tmp_path, cli):
    """A half-edited spec beside a good one made every command on the folder fail with its error:
    the good template is listed, tuned and exported; the broken one is named; its own run is refused."""
    folder = save_template_folder(tmp_path / "mine", SPEC, SOURCE).parent
    (folder / f"half{SPEC_SUFFIX}").write_text('{"name": "half", ')
    listed = cli("kernels", "--kernel-dir", folder)
    assert listed.returncode == 2 and listed.stdout.startswith("conv2d") and "\nsaxpy " in listed.stdout
    assert listed.stderr.count("\n") == 1 and listed.stderr.startswith("error: ") and f"half{SPEC_SUFFIX}" in listed.stderr
    out = tmp_path / "s.json"
    done = cli("tune", "saxpy", "--kernel-dir", folder, "--backend", "sim", "--executor", "inline", "--budget", "4",
               "--out", out, "--quiet")
    assert done.returncode == 0, done.stderr
    exported = cli("export", out, "--format", "cuda", "--out", tmp_path / "s.cu", "--kernel-dir", folder)
    assert exported.returncode == 0, exported.stderr
    checked = cli("check-kernels", "--kernel-dir", folder, "--kernel", "saxpy", "--sample", "1", "--quiet")
    assert checked.returncode == 0, checked.stderr
    refused = cli("tune", "half", "--kernel-dir", folder, "--backend", "sim", "--budget", "4", "--out", tmp_path / "h.json")
    assert refused.returncode == 2 and f"half{SPEC_SUFFIX}" in refused.stderr and not (tmp_path / "h.json").exists()
    whole = cli("check-kernels", "--kernel-dir", folder, "--sample", "0", "--quiet")  # the good one checked, the half named
    assert whole.returncode == 2 and whole.stdout.startswith("kernel ") and "\nsaxpy " in whole.stdout
    assert f"half{SPEC_SUFFIX}" in whole.stderr
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.move(folder / f"half{SPEC_SUFFIX}", alone)
    only = cli("check-kernels", "--kernel-dir", alone, "--quiet")  # its error alone, no empty table above it
    assert only.returncode == 2 and only.stdout == "" and only.stderr.startswith("error: ") and "half" in only.stderr


def test_a_user_template_named_like_a_shipped_one_says_that_it_replaces_it(tmp_path, cli):
    """The search path lets a person's folder hide a shipped template, on purpose; it was silent, so
    a listing or a run did not tell which ``gelu`` it was."""
    shutil.copy(ROOT / "kernels" / "gelu.py", tmp_path / "gelu.py")
    shutil.copy(ROOT / "kernels" / "gelu.cu", tmp_path / "gelu.cu")
    listed = cli("kernels", "--kernel-dir", tmp_path, "--json")
    assert listed.returncode == 0
    (gelu,) = [item for item in json.loads(listed.stdout) if item["name"] == "gelu"]
    assert gelu["spec"] == str((tmp_path / "gelu.py").resolve()) and gelu["replaces"].endswith("kernels/gelu.py")
    assert "note: gelu is " in listed.stderr and "replaces" in listed.stderr
    done = cli("tune", "gelu", "--kernel-dir", tmp_path, "--backend", "sim", "--workers", "1", "--budget", "2",
               "--out", tmp_path / "g.json", "--quiet")
    assert done.returncode == 0 and "which replaces the shipped template of that name" in done.stderr
    plain = cli("tune", "gelu", "--backend", "sim", "--executor", "inline", "--budget", "3", "--out", tmp_path / "p.json",
                "--quiet")
    assert plain.returncode == 0 and "replaces" not in plain.stderr
    # a python benchmark of that name hides it as well: it ran as "gelu" without a word
    mine = tmp_path / "bench"
    mine.mkdir()
    (mine / "gelu.py").write_text('SPACE = {"a": [1, 2]}\n\ndef measure(config):\n    return {"latency_ms": 1.0}\n')
    benched = cli("tune", "gelu", "--kernel-dir", mine, "--budget", "2", "--out", tmp_path / "b.json", "--quiet")
    assert benched.returncode == 0 and (f"python benchmark 'gelu' is {(mine / 'gelu.py').resolve()}, which replaces "
                                        "the shipped template of that name") in benched.stderr, benched.stderr
    # the listing (of templates) names the folder's python benchmarks, without reading them
    ran = tmp_path / "its top level ran"
    (mine / "mybench.py").write_text(f"open({str(ran)!r}, 'w').close()\nSPACE = {{'a': [1]}}\n\n"
                                     "def measure(config):\n    return {'latency_ms': 1.0}\n")
    listed = cli("kernels", "--kernel-dir", mine)
    assert not ran.exists()
    assert listed.returncode == 0 and (
        f"note: python benchmarks in {mine}, named only (reading one runs its code): gelu (which tune runs instead "
        "of the template of that name listed), mybench") in listed.stderr, listed.stderr


@pytest.mark.parametrize("edit, field", [
    (lambda s: s.__setitem__("compile_options", ['-use_fast_math\n#include "/etc/passwd"\nint injected = 1;\n//']),
     "compile_options[0]"),
    (lambda s: s["args"][0].__setitem__("name", "x\n#include <evil>\n"), "args[0].name"),
    (lambda s: s["args"][0].__setitem__("name", "x y"), "args[0].name"),
])
def test_a_spec_text_with_a_line_break_is_refused_before_an_export_could_carry_it(tmp_path, edit, field):
    """A compile option or an argument name with a line break loaded, and ``export --format cuda``
    wrote it into its comment header, where the line after the break was live code."""
    spec = json.loads(json.dumps(SPEC))
    edit(spec)
    (tmp_path / f"saxpy{SPEC_SUFFIX}").write_text(json.dumps(spec))
    (tmp_path / "saxpy.cu").write_text(SOURCE)
    with pytest.raises(SpecError, match=re.escape(field)):
        load_declarative(tmp_path / f"saxpy{SPEC_SUFFIX}")


def test_the_cuda_exports_comment_lines_stay_comments_whatever_the_template_says(tmp_path, cli):
    """Defence behind the loaders: a template built in code with such texts (no loader between)
    still exports a header whose every line before the source is a comment."""
    import copy
    import dataclasses

    from workbench.core.domain.session import load_session
    from workbench.core.io.export import render_export

    session = tmp_path / "s.json"
    done = cli("tune", "saxpy", "--kernel-dir", EXAMPLE, "--backend", "sim", "--executor", "inline", "--budget", "3",
               "--out", session, "--quiet")
    assert done.returncode == 0, done.stderr
    hostile = copy.copy(load_declarative(EXAMPLE / f"saxpy{SPEC_SUFFIX}"))
    # past the template's own checks, which refuse both (a frozen dataclass is set only this way)
    object.__setattr__(hostile, "compile_options", ("-O3\nint injected = 1;",))
    object.__setattr__(hostile, "args", (dataclasses.replace(hostile.args[0], name="x\n#include <evil>"),
                                         *hostile.args[1:]))
    _, text = render_export([load_session(session)], "cuda", templates={"saxpy": hostile})
    head = text[: text.index("#define BLOCK_SIZE")].splitlines()
    assert any("compile options: -O3 int injected" in line for line in head)
    assert head and all(line.startswith("//") or not line.strip() for line in head), head


def test_a_folder_named_twice_or_the_shipped_one_named_again_replaces_nothing(tmp_path, cli):
    """`kernels --kernel-dir kernels` said every shipped template replaced itself."""
    folder = save_template_folder(tmp_path / "mine", SPEC, SOURCE).parent
    for dirs in ([ROOT / "kernels"], [folder, folder], [folder, tmp_path / "mine" / ".." / "mine"]):
        listed = cli("kernels", "--json", *[arg for d in dirs for arg in ("--kernel-dir", d)])
        assert listed.returncode == 0 and "replaces" not in listed.stderr, listed.stderr
        assert all(item["replaces"] is None for item in json.loads(listed.stdout))


def test_check_kernels_of_one_template_runs_no_other_spec_of_its_folder(tmp_path, cli):
    """`check-kernels --kernel NAME` imported every Python spec of the folders (their code ran)."""
    folder = save_template_folder(tmp_path / "mine", SPEC, SOURCE).parent
    (folder / "other.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'w').close()\nTEMPLATE = None\n")
    checked = cli("check-kernels", "--kernel-dir", folder, "--kernel", "saxpy", "--sample", "0", "--quiet")
    assert checked.returncode == 0, checked.stderr
    assert not (tmp_path / "ran").exists()


def test_a_saved_template_gets_the_users_permissions_and_keeps_a_shared_files(tmp_path):
    """The editor's Save wrote the source and the spec owner-only (0600, mkstemp's), and saving over
    a template a group shares took the group's access away."""
    from workbench.core.fs import current_umask

    target = save_template_folder(tmp_path / "mine", SPEC, SOURCE)
    plain = 0o666 & ~current_umask()
    assert {(p.stat().st_mode & 0o777) for p in target.parent.iterdir()} == {plain}
    target.chmod(0o664)
    save_template_folder(tmp_path / "mine", SPEC, SOURCE + "\n// edited\n")
    assert target.stat().st_mode & 0o777 == 0o664


def test_a_template_named_by_its_files_or_saved_by_the_editor_says_how_to_run_it(cli, tmp_path, monkeypatch):
    """``tune k/saxpy.kernel.json`` said only "not a valid name", and ``tune saxpy`` of a template the
    window lists (saved with its editor) "unknown kernel", with no word of --kernel-dir."""
    folder = save_template_folder(tmp_path / "mine", SPEC, SOURCE).parent
    for given, named in ((folder / f"saxpy{SPEC_SUFFIX}", "saxpy"), (folder / "saxpy.cu", "saxpy"), (folder, "NAME")):
        done = cli("tune", given, "--backend", "sim", "--budget", "1", "--out", tmp_path / "o.json")
        assert done.returncode == 2 and f"--kernel-dir {folder} {named}" in done.stderr, done.stderr
    monkeypatch.setenv("KERNEL_WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    saved = save_template_folder(tmp_path / "data" / "templates", SPEC, SOURCE).parent
    done = cli("tune", "saxpy", "--backend", "sim", "--budget", "1", "--out", tmp_path / "o.json")
    assert done.returncode == 2 and f"saved in the kernel editor's folder: add --kernel-dir {saved}" in done.stderr
    done = cli("check-kernels", "--kernel", "saxpy")  # (it said only "unknown kernel", docs/own-kernel.md says more)
    assert done.returncode == 2 and f"saved in the kernel editor's folder: add --kernel-dir {saved}" in done.stderr
    # another name: the list of kernels names the editor's templates too (the window offers them)
    done = cli("tune", "nosuch", "--backend", "sim", "--budget", "1", "--out", tmp_path / "o.json")
    assert done.returncode == 2 and f"; saved with the kernel editor, in {saved}: saxpy (the window finds them; the " \
        f"command line with --kernel-dir {saved})" in done.stderr, done.stderr
    # a misspelt name gets the closest one, as a misspelt strategy, metric or flag does, saved ones too
    for args in (("tune", "vectoradd", "--out", tmp_path / "o.json"), ("check-kernels", "--kernel", "vectoradd"),
                 ("check-kernels", "--kernel", "vectoradd", "--check-table"), ("tune", "saxyp", "--out", tmp_path / "o.json")):
        done = cli(*args)
        wanted = "saxpy" if "saxyp" in args else "vector_add"
        assert done.returncode == 2 and f"unknown kernel '{args[1 if args[0] == 'tune' else 2]}' (did you mean " \
            f"'{wanted}'?); " in done.stderr, done.stderr


def test_a_source_that_cannot_compile_stops_the_run_after_a_few_configs(cli, tmp_path):
    """A syntax error failed every config alike, and the run spent its whole budget compiling, then
    ended as a search that found nothing (exit 0). It stops once the template's default config
    and others fail alike. A failure some slot values explain (an #error under a flag, under
    ITEMS > 1, under a combination of two slots) says the same for every config it hits and is
    searched on when there is no default to say the template itself is broken; a sweep's size
    that fails to compile does not end the other sizes."""
    from workbench.runner.engine import BROKEN_SOURCE_AFTER

    spec = json.loads(json.dumps(SPEC))
    spec["slots"][1]["values"] = [1, 2, 4, 8]  # 6 x 4 configs
    broken = save_template_folder(tmp_path / "broken", spec, SOURCE.replace("{", "{ int oops = ;", 1)).parent
    out = tmp_path / "b.json"
    done = cli("tune", "saxpy", "--kernel-dir", broken, "--backend", "sim", "--executor", "inline", "--budget", "20",
               "--out", out)
    assert done.returncode == 1, done.stderr
    assert "the template's default config and" in done.stderr and "all failed to compile with the same error" in done.stderr
    assert done.stderr.rstrip().endswith("fix the source and run again")
    bogus = save_template_folder(tmp_path / "bogus", dict(spec, compile_options=["-bogus-flag"]), SOURCE).parent
    said = cli("tune", "saxpy", "--kernel-dir", bogus, "--backend", "sim", "--executor", "inline", "--budget", "20",
               "--out", tmp_path / "o.json")
    assert said.returncode == 1 and said.stderr.rstrip().endswith("fix the template's compile options and run again")
    shown = json.loads(cli("show", out, "--json").stdout)
    assert list(shown["by_status"]) == ["compile_error"] and BROKEN_SOURCE_AFTER <= shown["trials"] < 20
    no_default = json.loads(json.dumps(spec))
    for slot in no_default["slots"]:
        slot.pop("default")
    for guard in ("ITEMS > 1", "BLOCK_SIZE == 64", "!(BLOCK_SIZE == 64 && ITEMS == 2)"):
        some = save_template_folder(tmp_path / f"g{len(guard)}", no_default, SOURCE.replace(
            "{", f"{{\n#if {guard}\n int oops = ;\n#endif\n", 1)).parent
        for seed in range(3):
            done = cli("tune", "saxpy", "--kernel-dir", some, "--backend", "sim", "--executor", "inline", "--budget",
                       "12", "--strategy", "random", "--seed", str(seed), "--out", tmp_path / "s.json", "--quiet",
                       "--force")
            assert done.returncode == 0, done.stderr
            assert json.loads(cli("show", tmp_path / "s.json", "--json").stdout)["trials"] == 12
    small_only = save_template_folder(tmp_path / "small", spec, SOURCE.replace(
        "{", "{\n#if PROBLEM_N < 100000\n int oops = ;\n#endif\n", 1)).parent
    done = cli("tune", "saxpy", "--kernel-dir", small_only, "--backend", "sim", "--executor", "inline", "--budget",
               "10", "--sizes", "n=50000,16777216", "--out", tmp_path / "sweep.json", "--quiet")
    assert done.returncode == 0, done.stderr
    assert json.loads(cli("show", tmp_path / "sweep.json", "--json").stdout)["trials"] == 20
    # the size that failed says why, as a run of one size does (it said only "none succeeded")
    failed = next(line for line in done.stdout.splitlines() if line.startswith("  n=50000:"))
    assert "none succeeded; 10 of 10 compile_error: saxpy.cu(" in failed and "error: expected an expression" in failed


def test_a_size_that_gives_an_argument_a_negative_shape_is_refused_before_the_run(cli, tmp_path):
    """An output of n - 2 elements at n = 1 was not refused: the run reported 'grid 0x1x1 outside the
    device limits' for every config, which says nothing of the size."""
    spec = json.loads(json.dumps(SPEC))
    spec["args"][2]["shape"] = ["n - 2"]
    spec["reference"] = {"kind": "none"}
    folder = save_template_folder(tmp_path / "mine", spec, SOURCE).parent
    done = cli("tune", "saxpy", "--kernel-dir", folder, "--backend", "sim", "--executor", "inline", "--budget", "2",
               "--sizes", "n=1,4096", "--out", tmp_path / "o.json")
    assert done.returncode == 2 and "at n=1" in done.stderr and "argument out would have shape (-1,)" in done.stderr


def test_a_launch_that_cannot_be_computed_for_a_config_names_its_field(tmp_path):
    spec = json.loads(json.dumps(SPEC))
    spec["slots"][1]["values"] = [0, 1, 2]
    spec["grid"][0] = "(n + block_size * items - 1) // (block_size * items)"
    spec["restrictions"] = []
    template = template_from_spec(spec, SOURCE)
    problem = template.resolve_problem(None)
    with pytest.raises(TemplateError, match=r"grid x = .* cannot be computed \(ZeroDivisionError"):
        template.grid(problem, template.space(problem).config({"block_size": 32, "items": 0}))


def test_a_float_problem_default_with_a_whole_small_value_says_to_write_the_default_whole():
    spec = json.loads(json.dumps(SPEC))
    spec["problem"]["n"]["default"] = 16777216.0
    with pytest.raises(SpecError, match=r"the default 16777216.0 is float, small 4099 is int\); write the default as "
                                         r"16777216 for a whole size"):
        template_from_spec(spec, SOURCE)


def test_a_block_larger_than_the_kernels_launch_bounds_is_refused_on_the_simulator(cli, tmp_path):
    """The source's __launch_bounds__(BLOCK_SIZE) with a launch of twice as many threads fails every
    launch on a GPU; the simulator called every config feasible."""
    spec = json.loads(json.dumps(SPEC))
    spec["block"][0] = "block_size * 2"
    spec["restrictions"] = ["block_size * items <= 4096", "block_size <= 512"]
    folder = save_template_folder(tmp_path / "mine", spec, SOURCE).parent
    out = tmp_path / "s.json"
    done = cli("tune", "saxpy", "--kernel-dir", folder, "--backend", "sim", "--executor", "inline", "--budget", "4",
               "--out", out, "--quiet")
    assert done.returncode == 0, done.stderr
    trials = json.loads(cli("show", out, "--json", "--trials").stdout)["trial_list"]
    assert {t["status"] for t in trials} == {"launch_error"}
    assert all(f"a block of {2 * t['config']['block_size']} threads, and the kernel's __launch_bounds__ allows "
               f"{t['config']['block_size']}" in t["message"] for t in trials)


def test_a_template_made_read_only_is_not_saved_over(tmp_path):
    target = save_template_folder(tmp_path / "mine", SPEC, SOURCE)
    for frozen in (target, target.parent / "saxpy.cu"):
        frozen.chmod(0o444)
        with pytest.raises(TemplateError, match="is read-only"):
            save_template_folder(tmp_path / "mine", SPEC, SOURCE + "\n// edited\n")
        frozen.chmod(0o644)
    assert "edited" not in (target.parent / "saxpy.cu").read_text()



@pytest.mark.parametrize("name", ["ndebug", "int_max", "null"])
def test_a_slot_whose_macro_c_or_its_headers_keep_is_refused(name):
    """A slot "ndebug" rendered and exported '#define NDEBUG 0', turning assert() off in any file
    including the header; "null" and "int_max" redefined the standard headers' macros."""
    spec = json.loads(json.dumps(SPEC))
    spec["slots"].append({"name": name, "values": [0, 1], "default": 0})
    with pytest.raises(SpecError, match=f"slot {name} would define {name.upper()}, a name C, C\\+\\+ or the standard"):
        template_from_spec(spec, SOURCE)


@pytest.mark.parametrize("name", ["workbench_tuned_saxpy_c00b0152_h", "workbench_target_nvidia_h200",
                                  "workbench_dispatch_x_h"])
def test_a_slot_named_like_an_exported_headers_own_macros_is_refused(name):
    """The header export's include guard is predictable: a slot of that name redefined it (an
    error under -pedantic-errors, a warning otherwise), as a slot named like a device selection
    macro would pick a device in every file including it. Refused as a recording's name is."""
    spec = json.loads(json.dumps(SPEC))
    spec["slots"].append({"name": name, "values": [1, 2], "default": 1})
    with pytest.raises(SpecError, match=f"slot {name} would define {name.upper()}, a name of the kind the workbench"):
        template_from_spec(spec, SOURCE)


def test_a_declarative_spec_takes_a_scratch_argument_as_the_docs_say(tmp_path):
    """own-kernel.md lists ``scratch`` among the argument kinds (a device workspace, not checked),
    as the Python template API has it, but the loader refused it."""
    import cpu_cuda

    spec = json.loads(json.dumps(SPEC))
    spec["args"].append({"name": "work", "kind": "scratch", "dtype": "float32", "shape": ["n"]})
    source = SOURCE.replace("float* __restrict__ out, float a)", "float* __restrict__ out, float a, float* __restrict__ work)")
    source = source.replace("out[i] = ", "work[i] = 1.0f; out[i] = ")
    assert source.count("work") >= 2
    template = template_from_spec(spec, source)
    assert [a.kind for a in template.args][-1] == "scratch"
    problem = template.resolve_problem({"n": 1000})
    inputs = template.make_inputs(problem, np.random.default_rng(0))
    expected = template.reference(inputs, problem)
    assert set(expected) == {"out"}  # a workspace is no output the reference answers for
    if shutil.which("g++") is None:
        pytest.skip("needs g++ to run the kernel on the CPU")
    space = template.space(problem)
    [outputs] = cpu_cuda.run_configs(template, problem, [space.default_config()], inputs, tmp_path / "run")
    np.testing.assert_allclose(outputs["out"], expected["out"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("expression, said, run_said", [
    ("x[1:]", "the reference on the small problem: ", "gives shape (4098,), but output 'out' has shape (4099,)"),
    ("x / 0", "values of output 'out' that are not finite", "values of output 'out' that are not finite"),
])
def test_check_kernels_computes_the_reference_a_run_would(tmp_path, cli, expression, said, run_said):
    """A reference of the wrong shape passed check-kernels ("ok") and stopped every tune at its
    start; one of infinities passed too, and on a GPU every config would have failed verification."""
    spec = json.loads(json.dumps(SPEC))
    spec["reference"] = {"kind": "expression", "outputs": {"out": expression}}
    (tmp_path / "saxpy.cu").write_text(SOURCE)
    (tmp_path / f"saxpy{SPEC_SUFFIX}").write_text(json.dumps(spec, indent=2))
    result = cli("check-kernels", "--kernel-dir", str(tmp_path), "--kernel", "saxpy")
    assert result.returncode != 0 and said in result.stdout + result.stderr, result.stdout + result.stderr
    run = cli("tune", "saxpy", "--kernel-dir", str(tmp_path), "--backend", "sim", "--resources", "estimated",
              "--executor", "inline", "--budget", "2", "--out", str(tmp_path / "s.json"))
    assert run.returncode != 0 and run_said in run.stderr, run.stderr  # and a run says why before measuring


def test_a_slot_that_reaches_nothing_is_refused_and_one_the_launch_reads_is_not():
    """``#if VCE == 2`` for a slot ``vec``: the unknown macro reads as 0, the space doubled with
    configs that all ran the same code, and a run recommended vec=2 as if it mattered."""
    spec = json.loads(json.dumps(SPEC))
    spec["slots"].append({"name": "vec", "values": [1, 2], "group": "memory", "default": 1})
    typo = SOURCE.replace("{\n", "{\n#if VCE == 2\n#endif\n", 1)
    with pytest.raises(SpecError, match=r"^slots\[2\]\.name: slot 'vec' reaches nothing: VEC appears nowhere") as caught:
        template_from_spec(spec, typo)
    assert caught.value.field == "slots[2].name"
    template_from_spec(spec, typo.replace("VCE", "VEC"))  # read by the source
    # read by a header of the template's own: the source alone does not tell, so it is not refused
    template_from_spec(spec, '#include "body.cuh"\n' + typo)
    with pytest.raises(SpecError, match="reaches nothing"):  # a system header reads no slot
        template_from_spec(spec, "#include <cuda_fp16.h>\n" + typo)
    spec["grid"] = ["(n + block_size * items - 1) // (block_size * items) * vec", "1", "1"]
    template_from_spec(spec, SOURCE)  # read by the launch alone (grid blocks per row, say)


def test_check_kernels_does_not_run_a_reference_file(tmp_path, cli):
    """A reference in a Python file the author chose runs only in a run's worker: check-kernels
    imported it in its own process, where a sys.exit(0) in it ended the check with exit 0 and no
    output (a CI gate passed)."""
    spec = json.loads(json.dumps(SPEC))
    spec["reference"] = {"kind": "python", "file": "_saxpy_reference.py"}
    marker = tmp_path / "ran"
    (tmp_path / "saxpy.cu").write_text(SOURCE)
    (tmp_path / f"saxpy{SPEC_SUFFIX}").write_text(json.dumps(spec, indent=2))
    (tmp_path / "_saxpy_reference.py").write_text(
        f"import pathlib, sys\npathlib.Path({str(marker)!r}).write_text('x')\n\n"
        "def reference(inputs, problem):\n    sys.exit(0)\n")
    result = cli("check-kernels", "--kernel-dir", str(tmp_path), "--kernel", "saxpy")
    assert result.returncode == 0 and re.search(r"^saxpy .* ok$", result.stdout, re.M), result.stdout + result.stderr
    assert not marker.exists()


def test_a_large_default_without_a_small_value_loads_and_the_simulator_refuses_it(tmp_path, cli):
    """A GPU-sized default problem with no "small" value is an ordinary spec for a CUDA run, which
    never builds the small problem: the loader took it for a small problem of 384 MiB and refused
    it. The simulator, which would build it, refuses it when it starts."""
    spec = json.loads(json.dumps(SPEC))
    spec["problem"]["n"] = {"default": 33554432, "doc": "elements"}
    (tmp_path / "saxpy.cu").write_text(SOURCE)
    (tmp_path / f"saxpy{SPEC_SUFFIX}").write_text(json.dumps(spec, indent=2))
    assert load_declarative(tmp_path / f"saxpy{SPEC_SUFFIX}").problem["n"] == 33554432
    result = cli("tune", "saxpy", "--kernel-dir", str(tmp_path), "--backend", "sim", "--resources", "estimated",
                 "--executor", "inline", "--budget", "2", "--out", str(tmp_path / "s.json"))
    assert result.returncode != 0 and "the small problem's buffers take 384 MiB" in result.stderr
    assert 'give the problem parameters "small" values' in result.stderr


def test_a_fractional_average_work_per_thread_loads():
    """An average such as n / threads is below 1 at a small problem (0.94 at n=4099): refused as
    "at least 1", though the model counts a thread's work as at least 1 anyway."""
    spec = json.loads(json.dumps(SPEC))
    spec["profile"]["work_per_thread"] = "n / (block_size * items * 65536)"
    template_from_spec(spec, SOURCE)


def test_check_kernels_of_a_folder_checks_its_templates_and_refuses_a_folder_without_any(tmp_path, cli, monkeypatch):
    """A folder named is what the person came to check: the ten shipped templates besides it cost
    17 s of compiles and a table around the one result; with --shipped they are checked too. An
    empty folder (the wrong one) gave an empty table and exit 0."""
    import workbench.core.model.checks as checks_module

    (tmp_path / "k").mkdir()
    (tmp_path / "k" / "saxpy.cu").write_text(SOURCE)
    (tmp_path / "k" / f"saxpy{SPEC_SUFFIX}").write_text(json.dumps(SPEC))
    checked = cli("check-kernels", "--kernel-dir", tmp_path / "k", "--sample", "0", "--quiet", "--json")
    assert checked.returncode == 0, checked.stderr
    assert [row["kernel"] for row in json.loads(checked.stdout)] == ["saxpy"]
    seen: list[list[str]] = []
    real = checks_module.check_kernels
    monkeypatch.setattr(checks_module, "check_kernels", lambda templates, **kw: seen.append(sorted(templates)) or real({}, **kw))
    cli("check-kernels", "--kernel-dir", tmp_path / "k", "--shipped", "--quiet")
    assert "saxpy" in seen[0] and "vector_add" in seen[0] and "sgemm" in seen[0]
    (tmp_path / "empty").mkdir()
    refused = cli("check-kernels", "--kernel-dir", tmp_path / "empty", "--quiet")
    assert refused.returncode == 2 and "no templates there" in refused.stderr


@pytest.mark.parametrize("source_change, says", [
    # an unconditional #define of a slot's macro: every config compiled with the source's ITEMS
    (lambda s: "#define ITEMS 4\n" + s, "slot items: line 1 of the source defines ITEMS itself"),
    (lambda s: s.replace("#pragma unroll", "#undef ITEMS\n#define ITEMS 2\n#pragma unroll"),
     "slot items: line 11 of the source undefines ITEMS"),
    # existence tests of a macro every config defines: one answer for all of them
    (lambda s: s.replace("#pragma unroll", "#ifdef ITEMS\n#pragma unroll\n#endif"),
     "slot items: line 11 of the source tests whether ITEMS is defined (#ifdef ITEMS)"),
    (lambda s: s.replace("#pragma unroll", "#if defined(BLOCK_SIZE) && 1\n#pragma unroll\n#endif"),
     "slot block_size: line 11 of the source tests defined(BLOCK_SIZE)"),
    (lambda s: s.replace("#pragma unroll", "#ifndef PROBLEM_N\n#pragma unroll\n#endif"),
     "problem parameter n: line 11 of the source tests whether PROBLEM_N is defined (#ifndef PROBLEM_N)"),
    # an override in the branch where the macro IS defined is no fallback
    (lambda s: "#ifndef ITEMS\n#define ITEMS 1\n#else\n#undef ITEMS\n#define ITEMS 4\n#endif\n" + s,
     "slot items: line 4 of the source undefines ITEMS"),
    (lambda s: s.replace("#pragma unroll", "#if defined(ITEMS) && PROBLEM_N > 2\n#pragma unroll\n#endif"),
     "slot items: line 11 of the source tests defined(ITEMS) (#if defined(ITEMS) && PROBLEM_N > 2) and never its value"),
])
def test_a_source_that_overrides_a_slot_or_only_tests_it_is_defined_is_refused(source_change, says):
    """Such a slot runs the same code in every config, and a run recommended one of its values as if
    it mattered: the compiler only warned of the redefinition, and an #ifdef is silent."""
    with pytest.raises(WorkbenchError) as refused:
        template_from_spec(SPEC, source_change(SOURCE))
    assert says in str(refused.value), str(refused.value)


def test_a_fallback_for_a_build_outside_the_workbench_is_no_override():
    """``#ifndef M`` / ``#define M`` (or ``#if !defined(M)``, or an ``#ifdef M`` whose ``#else``
    defines it) only gives a value where the workbench gives none; ``#error`` there stops a build
    that gives none; ``defined(M)`` beside a test of M's value guards it; ``#if 0`` is not read."""
    for fallback in ("#if !defined(ITEMS)\n#define ITEMS 1\n#endif\n", "#ifdef ITEMS\n#else\n#define ITEMS 1\n#endif\n",
                     "#ifndef ITEMS\n#  define ITEMS \\\n  1\n#endif\n", "#if (!defined(ITEMS))\n#define ITEMS 1\n#endif\n",
                     # a guard that the value is given, a test beside a value test, and code that is not read
                     "#ifndef ITEMS\n#error ITEMS must be given\n#endif\n", "#if defined(ITEMS) && ITEMS > 2\n#endif\n",
                     "#if 0\n#define ITEMS 4\n#ifdef ITEMS\n#endif\n#endif\n",
                     "#if PROBLEM_N > 4\n#elif !defined(ITEMS)\n#define ITEMS 4\n#endif\n"):
        template = template_from_spec(SPEC, fallback + SOURCE)
        assert template.space().count() == 27


def test_a_slot_of_integers_and_one_whole_float_is_refused_a_float_slot_is_not():
    """``[1, 2.0, 4, 8]`` made every value a float (``#define ITEMS 8.0``): a loop bound or an
    ``#if ITEMS > 1`` then failed to compile with an error about the source, not the spec."""
    spec = json.loads(json.dumps(SPEC))
    items = next(slot for slot in spec["slots"] if slot["name"] == "items")
    items["values"] = [1, 2.0, 4]
    with pytest.raises(SpecError, match=r"slot 'items' mixes integers and whole floats \(2.0\): write 2"):
        template_from_spec(spec, SOURCE)
    items["values"] = [0.5, 1, 2]  # a float slot whose whole values are written bare: as before
    scale = template_from_spec(spec, SOURCE.replace("k < ITEMS", "k < (int)ITEMS"))
    assert next(s for s in scale.slots if s.name == "items").values == (0.5, 1.0, 2.0)


def test_an_override_in_the_branch_where_the_macro_is_defined_is_said_beside_the_test():
    """Each branch of a chain is read for what it knows: after ``#ifdef M`` the later branches run
    where M is missing (a define there is a fallback), after ``#ifndef M`` where it is defined (a
    define there overrides every config)."""
    from workbench.core.domain.macros import macro_misuses

    def said(source: str) -> list[tuple[int, str]]:
        return [(m.line, m.problem.split(" (")[0].split(",")[0]) for m in macro_misuses(source, ["M", "N"])]

    assert said("#ifndef M\n#define M 2\n#elif X\nx\n#else\n#define M 8\n#endif\n") == [(6, "defines M itself")]
    assert said("#ifdef M\nx\n#elif X\n#define M 3\n#endif\n") == []
    assert said("#if defined(M)\nx\n#else\n#define M 4\n#endif\n") == []
    assert said("#if !defined(M) && !defined(N)\n#define M 1\n#define N 2\n#endif\n") == []
    assert said("#if (0)\n#define M 1\n#endif\n#if defined(M)\nx\n#endif\n") == [(4, "tests whether M is defined")]
    # a test in a later branch is read as one in the first; #elifdef / #elifndef are branches too
    assert said("#ifdef X\nint a;\n#elif !defined(M)\nint b;\n#endif\n") == [(3, "tests whether M is defined")]
    assert said("#if !(defined(M))\n#define M 128\n#endif\n") == []
    assert said("#ifndef M\n#define M 1\n#elifdef X\n#define M 2\n#endif\n") == [(4, "defines M itself")]
    assert said("#if X\n#elif defined(M)\n#else\n#define M 1\n#endif\n") == []

    said = [(m.line, m.problem.split(",")[0]) for m in
            macro_misuses("#ifdef ITEMS\n#undef ITEMS\n#define ITEMS 4\n#endif\n", ["ITEMS"])]
    assert said == [(1, "tests whether ITEMS is defined (#ifdef ITEMS)"), (2, "undefines ITEMS"),
                    (3, "defines ITEMS itself")]


def test_a_restriction_that_cannot_be_computed_for_some_configs_is_said(cli, tmp_path):
    """Configs for which a restriction fails to compute (a power too large, a division by zero)
    count as not valid: 17 of 23 configs were dropped with no word, where the author meant none."""
    spec = json.loads(json.dumps(SPEC))
    spec["restrictions"] = ["block_size ** (items ** 99999) > 0"]
    space = template_from_spec(spec, SOURCE).space()
    (text, assignment, why), = space.uncomputable()
    assert text == spec["restrictions"][0] and assignment["items"] > 1 and "too large" in why
    assert template_from_spec(SPEC, SOURCE).space().uncomputable() == []  # computable everywhere: nothing said
    guarded = json.loads(json.dumps(SPEC))  # another restriction rules the failing configs out: the author's guard
    guarded["restrictions"] = ["items != 2", "block_size % (items - 2) == 0"]
    assert template_from_spec(guarded, SOURCE).space().uncomputable() == []
    report = check_draft(spec, SOURCE, compile_default=False)
    warning = next(d for d in report.diagnostics if d.field == "restrictions")
    assert warning.severity == "warning" and "cannot be computed for some configs" in warning.message
    folder = save_template_folder(tmp_path / "lib", spec, SOURCE).parent
    done = cli("check-kernels", "--kernel-dir", folder, "--sample", "0", "--quiet")
    assert done.returncode == 0 and "warning: saxpy: restriction 'block_size ** (items ** 99999) > 0' cannot be " \
        "computed for some configs, e.g." in done.stderr, done.stderr


def test_the_kernels_parameters_are_checked_against_the_arguments_the_spec_passes(cli, tmp_path):
    """A parameter added to the kernel, a scalar passed for a pointer, or an argument declared
    float64 for a ``const float*`` compiled, checked and simulated without a word: only a GPU run
    would have launched it wrong. The editor's check and check-kernels say so; a declaration they
    cannot read plainly (a typedef) is not judged."""
    from workbench.core.domain.signature import signature_problems

    extra = SOURCE.replace("float a)", "float a, int ld)")
    assert extra != SOURCE
    report = check_draft(SPEC, extra, compile_default=False)
    errors = [d for d in report.diagnostics if d.severity == "error" and d.field == "args"]
    assert len(errors) == 1 and "takes 5 parameters, but a launch passes 4 arguments (x, y, out, a)" in errors[0].message
    (tmp_path / "saxpy.cu").write_text(extra)
    (tmp_path / f"saxpy{SPEC_SUFFIX}").write_text(json.dumps(SPEC, indent=2))
    result = cli("check-kernels", "--kernel-dir", str(tmp_path), "--kernel", "saxpy", "--sample", "2")
    assert result.returncode != 0 and "takes 5 parameters" in result.stdout, result.stdout
    wide = json.loads(json.dumps(SPEC))
    next(a for a in wide["args"] if a["name"] == "x")["dtype"] = "float64"
    warned = [d for d in check_draft(wide, SOURCE, compile_default=False).diagnostics if d.field == "args"]
    assert [d.severity for d in warned] == ["warning"] and "'x' is float64" in warned[0].message
    assert "(float)" in warned[0].message
    args = [("x", "in", "float32"), ("y", "in", "float32"), ("out", "out", "float32"), ("a", "in", "float32")]
    assert "argument 'a' is an array (a pointer), but parameter 4" in signature_problems(SOURCE, "saxpy", args)[0][1]
    assert not [d for d in check_draft(SPEC, SOURCE, compile_default=False).diagnostics if d.field == "args"]
    typedef = "typedef const float* in_ptr;\n" + SOURCE.replace("const float* __restrict__ x", "in_ptr x")
    assert signature_problems(typedef, "saxpy", [("x", "scalar", "float32"), *args[1:3], ("a", "scalar", "float32")]) == []
    # parameters made by a macro, or declared twice differently (an old copy under #if 0): not judged
    macro = "#define ARGS const float* x, const float* y, float* out, float a\n" + SOURCE.replace(
        SOURCE[SOURCE.index("saxpy(") + 6:SOURCE.index(")", SOURCE.index("saxpy("))], "ARGS")
    assert "saxpy(ARGS)" in macro and signature_problems(macro, "saxpy", args) == []
    old = '#if 0\nextern "C" __global__ void saxpy(float* x) {}\n#endif\n' + SOURCE
    assert signature_problems(old, "saxpy", [*args[:3], ("a", "scalar", "float32")]) == []
    # a type of several words without a name is all type
    assert signature_problems('extern "C" __global__ void k(const unsigned char*, int n) {}', "k",
                              [("a", "in", "uint8"), ("n", "scalar", "int32")]) == []


def test_listing_a_folder_without_templates_says_so_naming_a_source_that_lacks_its_spec(tmp_path, cli):
    """`kernels --kernel-dir F` of a folder holding only a .cu listed the shipped templates and said
    nothing; tune and check-kernels each said what was missing."""
    (tmp_path / "only").mkdir()
    (tmp_path / "only" / "saxpy.cu").write_text(SOURCE)
    listed = cli("kernels", "--kernel-dir", tmp_path / "only")
    assert listed.returncode == 0 and "vector_add" in listed.stdout
    assert listed.stderr.strip() == (f"warning: --kernel-dir {tmp_path / 'only'}: no templates there: saxpy.cu is a "
                                     "CUDA source without a template spec; add saxpy.kernel.json beside it "
                                     "(docs/own-kernel.md), or open the folder in the window's kernel editor, which "
                                     "writes one")
    (tmp_path / "bench").mkdir()  # a python benchmark's folder is no mistake: its benchmarks are named
    (tmp_path / "bench" / "mine.py").write_text("SPACE = {'i': [1, 2]}\n\ndef measure(config):\n    return 1.0\n")
    assert cli("kernels", "--kernel-dir", tmp_path / "bench").stderr == (
        f"note: python benchmarks in {tmp_path / 'bench'}, named only (reading one runs its code): mine\n")
    save_template_folder(tmp_path / "mine", SPEC, SOURCE)  # a folder with a template: nothing said
    assert cli("kernels", "--kernel-dir", tmp_path / "mine").stderr == ""


def test_a_launch_past_cudas_limits_is_said_in_whole_numbers(tmp_path) -> None:
    """"y = 'n' is 1.67772e+07": a grid dimension read as a float, for a count of blocks."""
    spec = json.loads(json.dumps(SPEC))
    spec["grid"] = ["1", "n", "1"]
    with pytest.raises(SpecError, match=r"y = 'n' is 16,777,216 at the default config with the default problem; "
                                        r"a grid dimension must be a whole number from 1 to 65,535"):
        template_from_spec(spec, SOURCE)


@pytest.mark.parametrize("restriction, said", [
    ("block_size ** 99999 > 0", "cannot be evaluated at the default config (256 ** 99999 is too large)"),
    ("1 / (items - 1) > 0", "cannot be evaluated at the default config (division by zero)"),
])
def test_a_restriction_the_default_config_cannot_compute_says_why(restriction, said) -> None:
    """A power too large was refused as "holds for no combination of the slots' values", a rule that
    holds for every one of them: the number that could not be computed was read as false."""
    spec = json.loads(json.dumps(SPEC))
    spec["restrictions"] = [restriction]
    with pytest.raises(SpecError, match=re.escape(said)):
        template_from_spec(spec, SOURCE)


def test_a_dimension_that_is_not_whole_at_a_problem_set_later_is_refused_not_truncated():
    """The default and small problems are checked as the spec loads; a problem given later (a float
    parameter set to 1000.5) made an array of 1,000 elements, int() cutting the half."""
    spec = json.loads(json.dumps(SPEC))
    spec["problem"]["a"]["default"] = 2.0
    spec["args"][0]["shape"] = ["n * a / 2"]
    template = template_from_spec(spec, SOURCE)
    x = next(arg for arg in template.args if arg.name == spec["args"][0]["name"])
    assert x.shape({"n": 4099, "a": 2.0}) == (4099,)
    with pytest.raises(WorkbenchError, match=r'shape "n \* a / 2" is 4611.38 at this problem, not a whole number'):
        x.shape({"n": 4099, "a": 2.25})


def test_a_macro_the_spec_does_not_declare_is_named_as_a_missing_slot_or_problem_parameter(tmp_path, cli):
    """NVRTC's 'identifier "UNROLL" is undefined' was all the editor and check-kernels said (the
    latter once per sampled config) of a slot the source reads and the spec lacks."""
    from workbench.core.model.kernel_draft import check_draft

    unrolled = SOURCE.replace("#pragma unroll\n", "#pragma unroll\n").replace(
        "out[i] = a * x[i] + y[i];", "out[i] = a * x[i] + y[i] + UNROLL * PROBLEM_M;")
    report = check_draft(SPEC, unrolled)
    errors = [d.message for d in report.diagnostics if d.severity == "error"]
    assert any("UNROLL" in m and "no slot 'unroll' is declared to define it: add the slot" in m for m in errors), errors
    assert any("PROBLEM_M" in m and "problem parameter 'm', which the spec does not declare" in m for m in errors), errors
    (tmp_path / "saxpy.cu").write_text(unrolled)
    (tmp_path / f"saxpy{SPEC_SUFFIX}").write_text(json.dumps(SPEC, indent=2))
    result = cli("check-kernels", "--kernel-dir", str(tmp_path), "--kernel", "saxpy", "--quiet", "--sample", "0")
    assert result.returncode != 0 and "is declared to define it: add the slot" in result.stdout, result.stdout


def test_a_header_constant_or_a_typo_of_a_declared_macro_gets_no_advice_to_add_a_slot():
    """FLT_MAX without its header, or ITEM for the slot ITEMS, was told to add a slot 'flt_max' or
    'item': a missing #include, or the typo, is what to fix."""
    from workbench.core.domain.templates import kernels_dir, load_templates
    from workbench.core.model.kernel_draft import undeclared_macro_hint

    template = load_templates(EXAMPLE)["saxpy"]
    said = {name: undeclared_macro_hint(f'saxpy.cu(9): error: identifier "{name}" is undefined', template)
            for name in ("FLT_MAX", "INT_MAX", "M_PI", "CUDART_INF_F", "WARP_SIZE", "ITEM", "BLOCK_SIZ", "PROBLEM_NN",
                         "PROBLEM_WIDTH")}
    assert not any(said[name] for name in ("FLT_MAX", "INT_MAX", "M_PI", "CUDART_INF_F", "WARP_SIZE")), said
    assert said["ITEM"] == " (did you mean ITEMS, the macro of the slot 'items'?)"
    assert said["BLOCK_SIZ"] == " (did you mean BLOCK_SIZE, the macro of the slot 'block_size'?)"
    # a short name's typo too (PROBLEM_NN for n was told to declare a parameter 'nn')
    assert said["PROBLEM_NN"] == " (did you mean PROBLEM_N, the macro of the problem parameter 'n'?)"
    assert "problem parameter 'width', which the spec does not declare" in said["PROBLEM_WIDTH"]
    # one as near two parameters names neither (sgemm's m, n and k: PROBLEM_MN is as near m as n)
    sgemm = load_templates(kernels_dir())["sgemm"]
    mn = undeclared_macro_hint('sgemm.cu(9): error: identifier "PROBLEM_MN" is undefined', sgemm)
    assert "did you mean" not in mn and "problem parameter 'mn', which the spec does not declare" in mn



def test_a_slot_or_problem_parameter_written_as_kernel_tuner_names_it_is_pointed_at_its_macro():
    """Kernel Tuner defines each parameter under its own name (``block_size_x``); a source written
    so failed every config with 'identifier "block_size_x" is undefined' and no word that the
    slot of that name is BLOCK_SIZE_X here. A lower-case name that is no slot's gets no hint."""
    from workbench.core.domain.templates import load_templates
    from workbench.core.model.kernel_draft import undeclared_macro_hint

    template = load_templates(EXAMPLE)["saxpy"]
    slot = template.slots[0].name
    problem = next(iter(template.problem))
    said = {name: undeclared_macro_hint(f'saxpy.cu(9): error: identifier "{name}" is undefined', template)
            for name in (slot, problem, "counter")}
    assert said[slot] == (f" (the slot {slot!r} is defined as {slot.upper()}, in capitals: write {slot.upper()} "
                          "in the source; Kernel Tuner defines a parameter under its own name)")
    assert f"is defined as PROBLEM_{problem.upper()}" in said[problem]
    assert said["counter"] == ""


def test_a_macro_used_only_as_an_unroll_count_is_detected_as_a_slot():
    """``#pragma unroll UNROLL`` was skipped as a pragma: Detect slots found no UNROLL, while the
    compile error told the person to add that slot with Detect. Other pragmas name no macros."""
    source = ("__global__ void k(float* x) {\n#pragma unroll UNROLL\n  for (int i = 0; i < 8; ++i) x[i] = 0;\n"
              "#pragma nv_diag_suppress SOME_WARNING\n#pragma unroll\n  for (int j = 0; j < BLOCK; ++j) x[j] = 1;\n}\n")
    assert sorted(s.macro for s in scan_macros(source).slots) == ["BLOCK", "UNROLL"]


def test_the_check_says_when_the_python_reference_file_is_missing(tmp_path):
    """The check said "ok" and offered Tune for a spec whose reference file was gone; Tune and
    Save then failed with "no such file" and no word of what to do. Looked at, never run."""
    spec = json.loads(json.dumps(SPEC))
    spec["reference"] = {"kind": "python", "file": "_saxpy_reference.py"}
    report = check_draft(spec, SOURCE, folder=tmp_path, compile_default=False)
    (error,) = [d for d in report.diagnostics if d.severity == "error"]
    assert error.field == "reference.file" and "no such file (choose the reference file again" in error.message
    (tmp_path / "_saxpy_reference.py").write_text("raise SystemExit('never run by the check')\n")
    report = check_draft(spec, SOURCE, folder=tmp_path, compile_default=False)
    assert not [d for d in report.diagnostics if d.severity == "error"]


def test_conditions_in_a_reference_expression_apply_per_element_as_comparisons_do():
    """``and``, ``or``, ``not`` and ``x if c else y`` passed the check and then failed when the
    reference ran ("the truth value of an array ... is ambiguous. Use a.any()", which no
    expression can follow). They apply per element, meaning what they mean for numbers; ``@`` and
    bitwise operators are refused with what to write instead."""
    u, v = np.array([1.0, -2.0, 3.0, 0.0]), np.array([0.0, 1.0, 2.0, 5.0])
    for text, expected in (("u if u > 0 else -u", np.abs(u)), ("u > 0 and v > 0", [0, 0, 1, 0]),
                           ("u < 0 or v > 4", [0, 1, 0, 1]), ("not u", [0, 0, 0, 1]), ("u and v", [0, 1, 2, 0]),
                           ("u or v", [1, -2, 3, 5]), ("u > 0 and v > 0 and u < 2", [0, 0, 0, 0]),
                           ("u * 2 if n > 3 else u", u * 2), ("0 < u < 2", [1, 0, 0, 0]),
                           ("u in (1, 3)", [1, 0, 1, 0]), ("u not in (1, 3)", [0, 1, 0, 1]),
                           # a condition that is one number picks as Python does, computing only its pick
                           ("u[1:] if n > 3 else u", u[1:]), ("u[n] if n < 4 else 0", 0.0),
                           ("n > 9 and u[n]", 0.0), ("n < 9 or u[n]", 1.0)):
        got = compile_array_expression(text, ["u", "v", "n"])({"u": u, "v": v, "n": 4}).tolist()
        assert got == (list(expected) if np.ndim(expected) else expected), text
    for text, said in (("u @ v", "@ is not allowed; use matmul(a, b)"), ("u | v", "bitwise operators"),
                       ("~u", "a condition is negated with not")):
        with pytest.raises(RestrictionError, match=re.escape(said)):
            compile_array_expression(text, ["u", "v"])


def test_a_reference_cannot_broadcast_small_inputs_into_a_huge_array(tmp_path, cli):
    """Inputs of shapes (n, 1) and (1, n) broadcast to n x n: ``x * y`` at n = 25,000 took 5 GB (in
    the window's own process, for the editor's check) before the shape was found wrong. Every
    element-wise result is bounded before it is made, by the larger of the inputs and the output
    (an outer product's output is n x n by design), and so is a matmul's result and work."""
    n = 25_000
    column, row = np.ones((n, 1)), np.ones((1, n))
    for text in ("x * y", "x < y", "where(x > 0, x, y)", "maximum(x, y)", "x if x > 0 else y", "x > 0 and y > 0",
                 "0 < x < y", "sum(matmul(x, y), 1)"):
        with pytest.raises(RestrictionError, match=r"would make 625,000,000 elements \(shape \(25000, 25000\)\)"):
            compile_array_expression(text, ["x", "y"])({"x": column, "y": row})
    # a product of intermediates takes no more work than one of inputs and outputs of these sizes
    # would; a GEMM of its inputs is computed at any size its inputs have
    with pytest.raises(RestrictionError, match=r"matmul\(\) would take 68,719,476,736 multiply-adds"):
        compile_array_expression("sum(matmul(x * y, x * y))", ["x", "y"])({"x": np.ones((4096, 1)),
                                                                           "y": np.ones((1, 4096))})
    gemm = compile_array_expression("matmul(a, b)", ["a", "b"])({"a": np.ones((1200, 900)), "b": np.ones((900, 1100))},
                                                              (1200, 1100))
    assert gemm.shape == (1200, 1100) and gemm[0, 0] == 900
    # a pairwise intermediate of a few thousand points, summed as an n-body reference does
    pairwise = compile_array_expression("sum(x * y, 1)", ["x", "y"])({"x": np.ones((3000, 1)), "y": np.ones((1, 3000))},
                                                                    (3000,))
    assert pairwise.shape == (3000,) and pairwise[0] == 3000
    # an outer product the output is declared as: made, as the output's size allows
    small = np.ones((1500, 1)), np.ones((1, 1500))
    outer = compile_array_expression("x * y", ["x", "y"])({"x": small[0], "y": small[1]}, (1500, 1500))
    assert outer.shape == (1500, 1500)
    assert compile_array_expression("matmul(x, y)", ["x", "y"])({"x": small[0], "y": small[1]}, (1500, 1500)).shape \
        == (1500, 1500)
    # through the spec: one line, no gigabytes
    folder = tmp_path / "bc"
    shutil.copytree(ROOT / "docs" / "examples" / "saxpy", folder)
    path = folder / "saxpy.kernel.json"
    spec = json.loads(path.read_text())
    spec["problem"]["n"] = {"default": n, "small": n, "doc": "elements"}
    spec["args"][0]["shape"], spec["args"][1]["shape"] = ["n", "1"], ["1", "n"]
    spec["reference"]["outputs"]["out"] = "x * y"
    path.write_text(json.dumps(spec))
    checked = cli("check-kernels", "--kernel-dir", folder, "--quiet", "--sample", "0")
    assert checked.returncode != 0 and "would make 625,000,000 elements" in checked.stdout + checked.stderr


def test_a_reference_of_another_shape_than_its_output_is_refused_not_broadcast_into_it():
    """A reference ``x * y`` of shape (n,) for an (n, n) output was broadcast into every row (and
    ``matmul(x, y)``, one number, into every element is what one number does): an outer product's
    natural slip passed, and every correct kernel then failed on a GPU. One number still fills
    the output; any other shape is refused naming both."""
    spec = json.loads(json.dumps(SPEC))
    spec["args"] = [{"name": "x", "kind": "in", "dtype": "float32", "shape": ["n"]},
                    {"name": "y", "kind": "in", "dtype": "float32", "shape": ["n"]},
                    {"name": "out", "kind": "out", "dtype": "float32", "shape": ["n", "n"]}]
    spec["problem"] = {"n": {"default": 64, "small": 8}}
    for text in ("x * y", "max(x * y, 0)", "2.5 * n", "x[0]"):
        spec["reference"] = {"kind": "expression", "outputs": {"out": text}}
        template = template_from_spec(spec, SOURCE)
        problem = template.resolve_problem({})
        inputs = template.make_inputs(problem, np.random.default_rng(0))
        if text == "x * y":
            with pytest.raises(SpecError, match=r"gives shape \(64,\), but output 'out' has shape \(64, 64\)"):
                template.reference(inputs, problem)
        elif text.startswith("max"):  # NumPy's max over axis 0 where the larger of two was meant
            with pytest.raises(SpecError, match=r"gives one number from array inputs, .* maximum\(x, 0\)"):
                template.reference(inputs, problem)
        elif text == "x[0]":  # one element picked, no reduction: it fills the output as asked
            assert template.reference(inputs, problem)["out"].tolist() == np.full((64, 64), inputs["x"][0]).tolist()
        else:  # one number of the problem's fills the output
            assert template.reference(inputs, problem)["out"].tolist() == np.full((64, 64), 160.0).tolist()


def test_a_run_of_a_spec_whose_arguments_do_not_match_its_kernel_says_so(tmp_path, cli):
    """check-kernels refuses such a spec; a simulated tune ran it without a word and recommended a
    config no GPU could launch. The run says what check-kernels says, as a warning."""
    folder = tmp_path / "mine"
    shutil.copytree(ROOT / "docs" / "examples" / "saxpy", folder)
    path = folder / "saxpy.kernel.json"
    spec = json.loads(path.read_text())
    spec["args"] = [arg for arg in spec["args"] if arg["kind"] != "scalar"]
    path.write_text(json.dumps(spec))
    done = cli("tune", "saxpy", "--kernel-dir", folder, "--backend", "sim", "--executor", "inline", "--budget", "3",
               "--out", tmp_path / "s.json", "--quiet")
    assert done.returncode == 0
    assert ("warning: saxpy: the kernel saxpy takes 4 parameters, but a launch passes 3 arguments (x, y, out)"
            in done.stderr and "every launch on a GPU would fail" in done.stderr), done.stderr
    fine = cli("tune", "saxpy", "--kernel-dir", ROOT / "docs" / "examples" / "saxpy", "--backend", "sim", "--executor",
               "inline", "--budget", "3", "--out", tmp_path / "f.json", "--quiet")
    assert fine.returncode == 0 and "every launch on a GPU would fail" not in fine.stderr


def test_a_misspelt_slot_name_is_said_at_the_slot_not_where_it_is_spelt_right():
    """A slot named ``items_per_thred`` in a source using ITEMS_PER_THREAD was blamed on the first
    expression that spelt it right, with a hint to copy the typo there; the slot's name is where
    the error is, and the source says which spelling is meant."""
    spec = json.loads(json.dumps(SPEC))
    spec["slots"][1]["name"] = "itemz"
    source = SOURCE
    with pytest.raises(SpecError) as caught:
        template_from_spec(spec, source)
    assert caught.value.field == "slots[1].name"
    # either may be the typo: a misspelt macro in the source was answered "did you mean" the typo,
    # and the right slot renamed to it
    assert ("slot 'itemz': the source never uses ITEMZ, and uses ITEMS (first on line 10), which no slot defines: "
            "name the slot 'items', or write ITEMZ where the source writes ITEMS" in str(caught.value))
    spec["slots"][1]["name"] = "repeats"  # nothing close: the slot reaches nothing, said as before
    with pytest.raises(SpecError) as caught:
        template_from_spec(spec, source)
    assert caught.value.field != "slots[1].name"
    # a slot that reaches the kernel otherwise is no typo, whatever the source leaves undefined: one
    # named in the launch (a source reading blockDim.y beside its own BLOCK_X default) ...
    geometry = {"name": "g", "entry": "g", "slots": [{"name": "block_y", "values": [1, 2, 4, 8], "default": 1}],
                "problem": {"n": {"default": 65536, "small": 4096}},
                "grid": ["(n + 32 * block_y - 1) // (32 * block_y)", "1", "1"], "block": ["32", "block_y", "1"],
                "args": [{"name": "x", "kind": "in", "dtype": "float32", "shape": ["n"]},
                         {"name": "out", "kind": "out", "dtype": "float32", "shape": ["n"]}],
                "reference": {"kind": "expression", "outputs": {"out": "2 * x"}}}
    kernel = ("#ifndef BLOCK_X\n#define BLOCK_X 32\n#endif\n"
              'extern "C" __global__ void g(const float* __restrict__ x, float* __restrict__ out)\n{\n'
              "    const int i = (blockIdx.x * blockDim.y + threadIdx.y) * BLOCK_X + threadIdx.x;\n"
              "    if (i < PROBLEM_N) out[i] = 2.0f * x[i];\n}\n")
    assert template_from_spec(geometry, kernel).name == "g"
    # ... and one a header of the source's own may read (BLOCK defined there from BLOCK_X)
    headed = dict(geometry, slots=[{"name": "block_x", "values": [32, 64], "default": 32}],
                  grid=["(n + 31) // 32", "1", "1"], block=["32", "1", "1"])
    read_in_header = '#include "cfg.h"\n' + kernel.replace("BLOCK_X", "BLOCK").replace("blockDim.y", "1")
    assert template_from_spec(headed, read_in_header).name == "g"
    with pytest.raises(SpecError, match="slot 'block_x': the source never uses BLOCK_X, and uses BLOCK"):
        template_from_spec(headed, read_in_header.replace('#include "cfg.h"\n', ""))


def test_an_expression_that_ends_too_soon_is_marked_at_its_end():
    """``x <= 4096 and`` typed live was said to be wrong at column 1, and the editor underlined
    the right start of the line; the error is at the end of the text, its last character marked."""
    from workbench.core.domain.kernel_spec import expression_problem

    for text, array in (("block_size * items <= 4096 and", False), ("a * x +", True), ("(n + b - 1) //", False)):
        problem = expression_problem(text, ["block_size", "items", "a", "x", "n", "b"], array=array)
        assert problem is not None and f"(col {len(text) + 1}: end of text)" in problem.message
        assert (problem.start, problem.length) == (len(text) - 1, 1)
    commented = expression_problem("a <= 4 and  # cap", ["a"])  # before a comment: at the end of the code
    assert commented is not None and "(col 11: end of text)" in commented.message and commented.start == 9


def test_the_misspelt_slot_hint_is_only_for_a_slot_that_reaches_nothing():
    """The hint that a slot is misspelt misfired on a slot named only in the launch, and beside a
    header of the source's own that reads its macro: both slots are fine, and the restriction
    holds the typo, as its own "did you mean" says."""
    from workbench.core.domain.kernel_spec import slot_typo_hint

    message = "restriction \"block_x <= 64\": unknown name 'block_x'; did you mean 'block_y'? (known: block_y)"
    source = "#define BLOCK_X 32\n__global__ void g() { int i = threadIdx.x * BLOCK_X; }\n"
    assert "is the slot 'block_y' misspelt?" in slot_typo_hint(message, source, ["block_y"])
    assert slot_typo_hint(message, source, ["block_y"], elsewhere="32 block_y 1") == message  # in the launch
    assert slot_typo_hint(message, '#include "cfg.h"\n' + source, ["block_y"]) == message  # a header may read it


@pytest.mark.parametrize("field", ["grid_div_x", "grid_div_y", "block_size_names"])
def test_kernel_tuners_launch_fields_are_pointed_at_the_expression_that_says_them(field: str) -> None:
    """A Kernel Tuner user's grid_div_x was refused with the list of known fields, leaving them to
    find that a grid is an expression here (rounding up, where Kernel Tuner divides for them)."""
    spec = {**SPEC, field: ["block_size"]}
    with pytest.raises(SpecError) as info:
        template_from_spec(spec, SOURCE)
    said = str(info.value)
    assert f"Kernel Tuner's {field} is a {'block' if field == 'block_size_names' else 'grid'} expression here" in said
    assert "known:" not in said


def test_a_templates_own_check_of_a_slot_name_is_marked_at_that_slot() -> None:
    from workbench.core.domain.kernel_spec import _field_of

    spec = {"slots": [{"name": "block"}, {"name": "problem_w"}]}
    assert _field_of("slot name 'problem_w' must not start with problem_", spec) == "slots[1].name"
    assert _field_of("entry function 'x' does not appear in the source", spec) == "entry"
    assert _field_of("something else", spec) == ""


def test_a_size_given_as_a_whole_float_is_named_at_the_compiler_error_it_causes():
    """``4096.0`` as a size's default compiled to PROBLEM_N 4096.0, and the draft check said only the
    compiler's "expression must have integral or unscoped enum type", once for each use on the line."""
    spec = json.loads(json.dumps(SPEC))
    spec["problem"]["n"].update(default=16777216.0, small=4099.0)
    source = SOURCE.replace("#pragma unroll", "    const long long tail = PROBLEM_N % BLOCK_SIZE + PROBLEM_N % 2; (void)tail;\n"
                            "#pragma unroll")
    report = check_draft(spec, source)
    errors = [d for d in report.diagnostics if d.severity == "error"]
    assert errors and all("(PROBLEM_N is 16777216.0, a float: write the problem parameter 'n' as 16777216 for a "
                          "whole size)" in d.message for d in errors)
    assert len(errors) == len(set(errors))  # one line's error once


def test_a_float_scalar_taking_a_parameter_with_a_whole_default_is_warned_of():
    """saxpy's ``a`` declared as ``2`` made the parameter an integer size: ``--set a=0.5`` was then
    refused ("must be an integer") for a kernel that takes any float, and the draft checked clean."""
    spec = json.loads(json.dumps(SPEC))
    assert check_draft(spec, SOURCE, compile_default=False).ok
    spec["problem"]["a"].update(default=2, small=2)
    report = check_draft(spec, SOURCE, compile_default=False)
    (warning,) = [d for d in report.diagnostics if d.field == "problem.a.default"]
    assert warning.severity == "warning" and "write 2.0 for a float" in warning.message
