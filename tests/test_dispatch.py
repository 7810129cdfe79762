"""Per-size dispatch export: the set cover, the ranges, and the generated C and Python.

The C header's decision logic is evaluated for real: compiled as C by the host compiler and run for
every measured size (and sizes between them), and compiled by NVRTC inside a device function; the
Python variant, generated from the same plan, must pick the same config everywhere.
"""

from __future__ import annotations

import ast
import dataclasses
import itertools
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
from workbench.core.io.dispatch import dispatch_c, dispatch_py, plan_dispatch, set_cover
from workbench.core.errors import WorkbenchError
from workbench.core.domain.objective import Constraints, Weights
from workbench.core.domain.measurement import Measurement, Status, Trial
from workbench.core.domain.session import Session, save_session
from workbench.core.domain.space import Config, SearchSpace, Slot
from workbench.core.domain.templates import load_templates
from workbench.runner.plan import make_backend_spec, new_session, open_target

ROOT = Path(__file__).resolve().parents[1]
SPACE = SearchSpace([Slot("block", (32, 64, 128, 256), "launch"), Slot("mode", ("fast", "safe"), "compute")])
CC = shutil.which("cc") or shutil.which("gcc")


def sweep_recording(latencies: dict[int, dict[tuple[int, str], float | None]], kernel: str = "k",
                    device: str = "GPU X") -> Session:
    """A recording of several sizes n: n -> {(block, mode): latency or None (failed)}."""
    first = min(latencies)
    session = Session(kernel=kernel, kind="recording", space=SPACE, device={"name": device}, problem={"n": first})
    index = 0
    for n, table in latencies.items():
        for (block, mode), latency in table.items():
            m = (Measurement(Status.OK, {"latency_ms": latency}) if latency is not None
                 else Measurement.failure(Status.RUNTIME_ERROR, "failed"))
            session.add(Trial(index, SPACE.config({"block": block, "mode": mode}), m, problem={"n": n}))
            index += 1
    return session


def brute_force_cover(n: int, masks: list[int]) -> int:
    for r in range(1, len(masks) + 1):
        for combo in itertools.combinations(masks, r):
            union = 0
            for m in combo:
                union |= m
            if union == (1 << n) - 1:
                return r
    raise AssertionError("no cover")


# --- the set cover ----------------------------------------------------------------------------------


def test_the_exact_cover_is_the_smallest_on_random_instances() -> None:
    rng = np.random.default_rng(7)
    for _ in range(60):
        n = int(rng.integers(2, 9))
        masks = [int(m) for m in rng.integers(1, 1 << n, size=int(rng.integers(2, 9)))]
        for bit in range(n):  # every element coverable
            if not any(m >> bit & 1 for m in masks):
                masks.append(1 << bit)
        weights = [float(w) for w in rng.random(len(masks))]
        chosen, method = set_cover(n, [(f"c{i}", m, w) for i, (m, w) in enumerate(zip(masks, weights))])
        assert method == "exact"
        assert len(chosen) == brute_force_cover(n, masks)
        union = 0
        for key in chosen:
            union |= masks[int(key[1:])]
        assert union == (1 << n) - 1


def test_the_cover_prefers_the_higher_total_among_the_smallest_and_falls_back_to_greedy() -> None:
    sets = [("a", 0b011, 1.0), ("b", 0b110, 1.0), ("c", 0b011, 2.0), ("d", 0b100, 5.0)]
    chosen, method = set_cover(3, sets)
    assert method == "exact" and sorted(chosen) == ["c", "d"]
    chosen, method = set_cover(3, sets, node_limit=0)
    assert method == "greedy" and len(chosen) <= math.ceil(2 * (1 + 1 / 2 + 1 / 3))


# --- the plan on a made-up sweep --------------------------------------------------------------------

# small sizes: block 32 wins; large: block 256; block 64/fast is within 5% at the middle two only
SWEEP = {
    1000: {(32, "fast"): 1.00, (64, "fast"): 1.20, (256, "fast"): 2.00, (128, "safe"): None},
    4000: {(32, "fast"): 2.00, (64, "fast"): 2.04, (256, "fast"): 2.50, (128, "safe"): 3.00},
    16000: {(32, "fast"): 5.00, (64, "fast"): 4.10, (256, "fast"): 4.00, (128, "safe"): 4.50},
    64000: {(32, "fast"): 20.0, (64, "fast"): 9.00, (256, "fast"): 8.00, (128, "safe"): 8.30},
}


def test_fewest_configs_within_tolerance_and_geometric_boundaries() -> None:
    plan = plan_dispatch([sweep_recording(SWEEP)], tolerance=0.05)
    assert plan.parameter == "n" and plan.integer and plan.method == "exact"
    assert [c["block"] for c in plan.configs] == [32, 256]
    # 4000 goes with 1000 (32 is optimal there), 16000 with 64000: one boundary, at sqrt(4000 * 16000)
    assert [r.upper for r in plan.ranges] == [math.ceil(math.sqrt(4000 * 16000)), None]
    for figure in plan.figures:
        optimum = min(v for v in SWEEP[figure.size].values() if v is not None)
        picked = plan.configs[figure.config]
        latency = SWEEP[figure.size][(picked["block"], picked["mode"])]
        assert latency is not None and latency <= 1.05 * optimum + 1e-12
        assert figure.fraction == pytest.approx(optimum / latency)
        assert plan.select(figure.size) == figure.config
    # at 0% each size needs its own best: 32, 32, 256, 256 is still two configs
    assert len(plan_dispatch([sweep_recording(SWEEP)], tolerance=0.0).configs) == 2
    assert not any("estimated" in note for note in plan.notes)


def test_among_the_fewest_configs_the_plan_of_the_highest_total_fraction_wins() -> None:
    """The tie-break added each config's own total, so a size two chosen configs both cover counted
    twice and a cover of overlapping configs beat a better one. Here 64 (0.93 at the middle and
    the large size) overlaps 32 at the middle: 32 with 128 keeps the large size at 1.0."""
    slow = 1 / 0.93
    sweep = {1000: {(32, "fast"): 1.0, (64, "fast"): 2.0, (128, "fast"): 2.0, (256, "fast"): 2.0},
             4000: {(32, "fast"): slow, (64, "fast"): slow, (128, "fast"): 2.0, (256, "fast"): 1.0},
             16000: {(32, "fast"): 2.0, (64, "fast"): slow, (128, "fast"): 1.0, (256, "fast"): 2.0}}
    plan = plan_dispatch([sweep_recording(sweep)], tolerance=0.1)
    assert [c["block"] for c in plan.configs] == [32, 128]
    assert sum(f.fraction for f in plan.figures) == pytest.approx(1.0 + 0.93 + 1.0)


def test_a_dispatch_of_estimated_figures_says_they_may_move() -> None:
    """Trials simulated while their compiles were pending are figures that refining can change,
    and the ranges with them: the dispatch's notes say how many and how to refine."""
    import dataclasses

    recording = sweep_recording(SWEEP)
    for i in (0, 3):
        trial = recording.trials[i]
        details = {**trial.measurement.details, "estimated": True, "resources_pending": True}
        recording.trials[i] = dataclasses.replace(trial, measurement=dataclasses.replace(trial.measurement, details=details))
    plan = plan_dispatch([recording], tolerance=0.05)
    assert any(note.startswith("2 trials of these sessions hold resource figures estimated") and "--refine-only" in note
               for note in plan.notes)
    # make 64 the best at 4000 (1.90 against 32's 2.00): at 0% three configs are needed...
    changed = {**SWEEP, 4000: {**SWEEP[4000], (64, "fast"): 1.90}}
    three = plan_dispatch([sweep_recording(changed)], tolerance=0.0)
    assert [c["block"] for c in three.configs] == [32, 64, 256] and len(three.ranges) == 3
    # ...at 5% 32 is 5.26% slower than 64 there, still three; at 6% it is within, two again
    assert len(plan_dispatch([sweep_recording(changed)], tolerance=0.05).configs) == 3
    assert len(plan_dispatch([sweep_recording(changed)], tolerance=0.06).configs) == 2


def test_a_config_its_restrictions_rule_out_at_sizes_of_its_range_is_said() -> None:
    """The ranges were drawn from the measured sizes alone: a config valid at the sizes measured
    (``n % block == 0`` at 1000 and 4000 with block 8) was returned for the sizes between and
    around them where the template's restriction rules it out, and the header said nothing."""
    slots = [Slot("block", (8, 16, 64), "launch"), Slot("mode", ("fast", "safe"), "compute")]
    space = SearchSpace(slots, ["n % block == 0"], {"n": 1000})
    session = Session(kernel="k", kind="recording", space=space, device={"name": "GPU X"}, problem={"n": 1000})
    for index, (n, mode, latency) in enumerate([(1000, "fast", 1.0), (4000, "fast", 2.0), (4000, "safe", 2.5)]):
        config = space.config({"block": 8, "mode": mode})
        session.add(Trial(index, config, Measurement(Status.OK, {"latency_ms": latency}), problem={"n": n}))
    plan = plan_dispatch([session], tolerance=0.05)
    said = [note for note in plan.notes if note.startswith("config 0 is not valid at every size its range serves")]
    assert len(said) == 1 and "restriction 'n % block == 0' rules it out at n = 500, 501, 502, 503, 505, 506" in said[0]
    assert "the dispatch returns it there all the same" in said[0] and "// note: config 0 is not valid" in dispatch_c(plan)
    # a restriction that holds at every size of the range, and one that does not read the size: no note
    for rule in ("n >= block", "block <= 64"):
        other = dataclasses.replace(session, space=SearchSpace(slots, [rule], {"n": 1000}))
        assert not [n for n in plan_dispatch([other], tolerance=0.05).notes if "is not valid" in n], rule


def test_the_dispatch_says_which_objective_picked_its_configs(tmp_path: Path) -> None:
    """The header and json exports state the constraints and weights that decided the pick; the
    dispatch exports did not, though they honour them."""
    from workbench.core.io.dispatch import dispatch_c, dispatch_py

    limited = plan_dispatch([sweep_recording(SWEEP)], tolerance=0.05,
                            constraints=Constraints(max_latency_ms=100.0), weights=Weights({"latency_ms": 2.0}))
    for text in (dispatch_c(limited), dispatch_py(limited)):
        assert "constraints: latency_ms <= 100" in text and "score weights: latency_ms=2" in text
    plain = dispatch_c(plan_dispatch([sweep_recording(SWEEP)], tolerance=0.05))
    assert "constraints: none" in plain and "score weights: latency_ms=1" in plain
    # a dispatch written before these lines is still recognised as an export (replaced without --force)
    from workbench.core.io.export import is_export_file

    for text, name in ((plain, "old.h"), (dispatch_py(limited), "old.py")):
        older = "\n".join(line for line in text.splitlines()
                           if not line.lstrip("/ ").startswith(("constraints: ", "score weights: ")))
        path = tmp_path / name
        path.write_text(older + "\n")
        assert is_export_file(path)


def test_a_dispatch_from_a_script_replaces_only_an_earlier_export_unless_forced(tmp_path: Path) -> None:
    """As ``export_sessions`` (tests/test_export.py): ``export_dispatch`` wrote over any file."""
    from workbench.core.errors import WorkbenchError
    from workbench.core.io.dispatch import export_dispatch

    mine = tmp_path / "notes.h"
    mine.write_text("// my own header\n")
    with pytest.raises(WorkbenchError, match="not a file exported by this workbench; force=True replaces it"):
        export_dispatch([sweep_recording(SWEEP)], "dispatch", mine)
    assert mine.read_text() == "// my own header\n"
    export_dispatch([sweep_recording(SWEEP)], "dispatch", tmp_path / "d.h")
    export_dispatch([sweep_recording(SWEEP)], "dispatch", tmp_path / "d.h")  # its own earlier export
    export_dispatch([sweep_recording(SWEEP)], "dispatch", mine, force=True)
    assert (tmp_path / "notes.h.bak").read_text() == "// my own header\n" and "dispatch" in mine.read_text()


def test_sizes_outside_and_between_the_measured_ones_follow_the_stated_rule() -> None:
    plan = plan_dispatch([sweep_recording(SWEEP)], tolerance=0.05)
    boundary = plan.ranges[0].upper
    assert plan.select(1) == plan.select(1000) == plan.select(boundary - 1) == 0
    assert plan.select(boundary) == plan.select(10**12) == 1
    # the comment states the rule for sizes that are not positive too (an offset swept through 0)
    assert "their arithmetic mean (a+b)/2 when either is not positive" in dispatch_c(plan)


def test_inputs_a_dispatch_cannot_serve_are_refused() -> None:
    one_size = sweep_recording({1000: SWEEP[1000]})
    with pytest.raises(WorkbenchError, match="one problem size"):
        plan_dispatch([one_size])
    with pytest.raises(WorkbenchError, match="--tolerance"):
        plan_dispatch([sweep_recording(SWEEP)], tolerance=-0.1)
    with pytest.raises(WorkbenchError, match="a size dispatch serves one GPU"):
        plan_dispatch([sweep_recording(SWEEP), sweep_recording(SWEEP, device="GPU Y")])
    # a size where nothing is feasible is left out, said in the notes, so the others still ship;
    # it refused the whole sweep, with no way around it
    failed = {**SWEEP, 4000: {k: None for k in SWEEP[4000]}}
    plan = plan_dispatch([sweep_recording(failed)])
    assert 4000 not in [f.size for r in plan.ranges for f in r.sizes]
    assert any(note.startswith("n = 4000: nothing feasible") and "left out" in note for note in plan.notes)
    header = dispatch_c(plan)
    assert "n = 4000: nothing feasible" in header and "for 3 of 4 measured sizes" in header
    assert "every measured size with a feasible config runs" in header
    # one feasible size left: no dispatch, and the refusal says how to export that size
    alone = {n: ({k: None for k in SWEEP[n]} if n != 1000 else SWEEP[n]) for n in SWEEP}
    with pytest.raises(WorkbenchError, match=r"only n = 1000 has a feasible config \(none at n = 4000, 16000, "
                                             r"64000; n = 4000: nothing feasible .*--at n=1000"):
        plan_dispatch([sweep_recording(alone)])  # every size without one named, not only the first
    with pytest.raises(WorkbenchError, match="nothing feasible at any size: none at n = 1000, 4000, 16000, 64000; "
                                             "n = 1000: nothing feasible"):
        plan_dispatch([sweep_recording({n: {k: None for k in SWEEP[n]} for n in SWEEP})])
    # an integer size a C long long cannot hold: the header's literal was ill-formed C; the
    # Python variant serves it
    huge = sweep_recording({2**63 - 2: SWEEP[1000], 2**64 - 1: SWEEP[4000]})
    with pytest.raises(WorkbenchError, match=r"n = 18446744073709551615 is outside a C long long .*dispatch-py"):
        dispatch_c(plan_dispatch([huge]))
    assert python_module(dispatch_py(plan_dispatch([huge])))["select"](2**64 - 1) == 0
    # a grid of sizes over two parameters: refused, saying what to export instead
    from workbench.core.io.dispatch import _size_parameter

    grid = [{"rows": r, "cols": c} for r in (256, 4096) for c in (256, 8192)]
    for parameter in (None, "rows"):
        with pytest.raises(WorkbenchError, match="one size parameter: export one size's best config with --format "
                                                 r"header .*--at cols=VALUE"):
            _size_parameter(grid, parameter)


# --- the generated code -----------------------------------------------------------------------------


def python_module(text: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    exec(compile(text, "dispatch.py", "exec"), namespace)  # our own generated text, in a test
    return namespace


def run_c(header: str, function: str, sizes: list[Any], tmp_path: Path, parse: str = "atoll") -> list[int]:
    assert CC is not None
    (tmp_path / "dispatch.h").write_text(header)
    (tmp_path / "main.c").write_text(
        '#include <stdio.h>\n#include <stdlib.h>\n#include "dispatch.h"\n'
        "int main(int argc, char** argv) {\n"
        f'  for (int i = 1; i < argc; ++i) printf("%d\\n", {function}({parse}(argv[i])));\n'
        "  return 0;\n}\n")
    exe = tmp_path / "probe"
    done = subprocess.run([CC, "-std=c99", "-Wall", "-Wextra", "-Werror", "-o", str(exe), str(tmp_path / "main.c")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    out = subprocess.run([str(exe), *map(str, sizes)], capture_output=True, text=True, timeout=60, check=True)
    return [int(v) for v in out.stdout.split()]


@pytest.mark.skipif(CC is None, reason="no host C compiler to run the header's decision logic")
def test_a_dispatch_of_one_config_builds_without_warnings(tmp_path: Path) -> None:
    """One config for every size never read its size: -Wextra warned of the unused parameter,
    which a build with -Werror refused."""
    from workbench.core.io.dispatch import dispatch_c

    plan = plan_dispatch([sweep_recording(SWEEP)], tolerance=1.0)
    assert len(plan.ranges) == 1
    assert run_c(dispatch_c(plan), "workbench_dispatch_k", [1, 4000, 10**9], tmp_path) == [0, 0, 0]


@pytest.mark.skipif(CC is None, reason="no host C compiler to run the header's decision logic")
def test_c_and_python_pick_the_same_config_and_every_measured_size_is_within_tolerance(tmp_path: Path) -> None:
    sweep = {**SWEEP, 4000: {**SWEEP[4000], (64, "fast"): 1.90}}
    plan = plan_dispatch([sweep_recording(sweep)], tolerance=0.0)
    header = dispatch_c(plan)
    module = python_module(dispatch_py(plan))
    rng = np.random.default_rng(3)
    probes = sorted({*sweep, *(int(r.upper) + d for r in plan.ranges if r.upper for d in (-1, 0, 1)),
                     *(int(v) for v in rng.integers(1, 200_000, 40)), 1, 10**15})
    picked_c = run_c(header, "workbench_dispatch_k", probes, tmp_path)
    picked_py = [module["select"](n) for n in probes]
    assert picked_c == picked_py == [plan.select(n) for n in probes]
    for n in sweep:  # every measured size: the header's config is within the tolerance (0%) of the optimum
        config = module["CONFIGS"][picked_c[probes.index(n)]]
        optimum = min(v for v in sweep[n].values() if v is not None)
        assert sweep[n][(config["block"], config["mode"])] == pytest.approx(optimum)
    assert module["config_for"](1000) == {"block": 32, "mode": "fast"}
    # a size given as text, None or a flag is a caller's mistake, said as such (it raised "'<' not
    # supported between str and int", or picked config 0 for True); NumPy's numbers are numbers
    for wrong in ("4096", None, True):
        with pytest.raises(TypeError, match="size must be a number"):
            module["select"](wrong)
        with pytest.raises(TypeError, match="size must be a number"):
            plan.select(wrong)
    assert module["select"](np.int64(1000)) == plan.select(1000)
    from decimal import Decimal

    assert module["select"](Decimal("70000")) == plan.select(70000) == plan.select(Decimal("70000"))
    assert "per-size dispatch exported by Kernel Tuning Workbench" in header.splitlines()[3]
    # a NaN size is in no range (every comparison with it is false): refused, not the last config
    for select in (module["select"], plan.select):
        for nan in (float("nan"), Decimal("NaN"), Decimal("sNaN")):  # (a signalling NaN raised InvalidOperation)
            with pytest.raises(ValueError, match="NaN"):
                select(nan)


def test_the_header_compiles_with_nvrtc_inside_a_device_function() -> None:
    plan = plan_dispatch([sweep_recording(SWEEP)], tolerance=0.05)
    source = (dispatch_c(plan) + '\nextern "C" __global__ void probe(const long long* n, int* out, int count) {\n'
              "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
              "  if (i < count) out[i] = workbench_dispatch_k(n[i]);\n}\n")
    result = compile_cuda(source, arch="sm_90", entry="probe", use_cache=False)
    assert result.ok, result.log
    broken = compile_cuda(source.replace("return 1;", "return 1"), arch="sm_90", entry="probe", use_cache=False)
    assert not broken.ok  # the check can fail


def template_sweep(kernel: str, param: str, sizes: list[int], n: int = 16, seed: int = 0) -> Session:
    """A real sweep: the same sampled configs measured by the sim backend at each size, in-process."""
    base = make_backend_spec(kernel, "sim", seed=seed, extra={"compile": "estimate", "noise": False})
    target = open_target(base)
    session = new_session(base, target, strategy="random", seed=seed)
    configs = target.space.sample(np.random.default_rng(seed), n)
    index = 0
    for size in sizes:
        spec = make_backend_spec(kernel, "sim", seed=seed, problem={**target.problem, param: size},
                                 extra={"compile": "estimate", "noise": False})
        at = open_target(spec)
        backend = backend_class("sim")(spec)
        backend.prepare()
        for config in configs:
            session.add(Trial(index, config, backend.evaluate(config, EvalLimits()), problem=dict(at.problem)))
            index += 1
    return session


def test_each_variant_of_a_template_sweep_compiles_with_the_template_through_nvrtc(tmp_path: Path) -> None:
    session = template_sweep("reduce_sum", "n", [4096, 262144, 16777216], n=12)
    plan = plan_dispatch([session], tolerance=0.0)
    assert plan.export.template is not None and len(plan.configs) >= 2
    template = load_templates()["reduce_sum"]
    header = dispatch_c(plan)
    (tmp_path / "dispatch.h").write_text(header)
    for index, config in enumerate(plan.configs):
        # built as the header says: the variant's index and a size it serves (the template reads its
        # problem at compile time; the header defines the rest of it), and nothing else, the
        # template's source compiles to the same kernel as the workbench's own rendering
        size = next(f.size for f in plan.figures if f.config == index)
        problem = template.resolve_problem({**session.problem, "n": size})
        flags = (f"--include-path={tmp_path}", f"-DWORKBENCH_DISPATCH_REDUCE_SUM_CONFIG={index}", f"-DPROBLEM_N={size}")
        ours = compile_cuda('#include "dispatch.h"\n' + template.source, arch="sm_90", entry=template.entry,
                            options=flags, use_cache=False)
        rendered = compile_cuda(template.render(config, problem), arch="sm_90", entry=template.entry)
        assert ours.ok, ours.log
        assert ours.registers == rendered.registers
        # every variant defines the same extern "C" entry: renamed as the header says, it links beside the others
        renamed = compile_cuda('#include "dispatch.h"\n' + template.source, arch="sm_90", entry=f"reduce_sum_v{index}",
                               use_cache=False, options=(*flags, f"-Dreduce_sum=reduce_sum_v{index}"))
        assert renamed.ok and renamed.registers == rendered.registers, renamed.log
        # without the size the build stops at once, saying which macro to give
        unsized = compile_cuda('#include "dispatch.h"\n' + template.source, arch="sm_90", entry=template.entry,
                               options=flags[:2], use_cache=False)
        assert not unsized.ok and "define PROBLEM_N: the size this build serves" in unsized.log
    assert "// with -Dreduce_sum=reduce_sum_v<k> too, and launch reduce_sum_v<k> for the config index k above" in header


def test_a_variants_problem_macros_are_defined_where_every_size_shares_them() -> None:
    """The documented build of a softmax variant stopped at 'PROBLEM_COLS is undefined': the
    header defined slot macros only. It defines what every measured size shares and stops a
    build that lacks the size, naming the macro."""
    plan = plan_dispatch([template_sweep("softmax", "rows", [64, 4096], n=6)])
    header = dispatch_c(plan)
    block = header[header.index("// the template reads its problem at compile time"):]
    assert "#define PROBLEM_COLS 1024" in block and "#define PROBLEM_ROWS" not in block
    assert '#ifndef PROBLEM_ROWS\n#error "define PROBLEM_ROWS: the size this build serves, e.g. -DPROBLEM_ROWS=..."' in block


# --- hostile sessions -------------------------------------------------------------------------------

HOSTILE = 'k */ int pwned = 1; /*\n#define EVIL 1 \\'


@pytest.mark.skipif(CC is None, reason="no host C compiler")
def test_hostile_names_and_values_stay_inside_comments_and_literals(tmp_path: Path) -> None:
    # slot values are identifiers or numbers (the space refuses anything else); names reach the text
    space = SearchSpace([Slot("block", (32, 64), "launch"), Slot("label", ("fast", "safe"), "compute")])
    session = Session(kernel=HOSTILE, kind="recording", space=space, device={"name": "dev\\"}, problem={"n": 1})
    index = 0
    for n, best in ((1, 32), (1000, 64)):
        for config in space:
            latency = 1.0 if config["block"] == best and config["label"] == "safe" else 3.0
            session.add(Trial(index, config, Measurement(Status.OK, {"latency_ms": latency}), problem={"n": n}))
            index += 1
    plan = plan_dispatch([session], sources=['x"""\n#define EVIL 3 \\'])
    header = dispatch_c(plan)
    for line in header.splitlines():
        assert not line.endswith("\\"), line
    function = "workbench_dispatch_" + "".join(c if c.isalnum() else "_" for c in HOSTILE.lower()).strip("_")
    function = "_".join(p for p in function.split("_") if p)
    assert run_c(header, function, [1, 1000], tmp_path) == [plan.select(1), plan.select(1000)]
    done = subprocess.run(["cpp", "-dM", "-DWORKBENCH_DISPATCH_K_INT_PWNED_1_DEFINE_EVIL_1_CONFIG=0", "-"],
                          input=header, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    defined = {line.split()[1] for line in done.stdout.splitlines() if line.startswith("#define ")}
    assert "EVIL" not in defined and "BLOCK" in defined and "pwned" not in defined
    text = dispatch_py(plan)
    tree = ast.parse(text)
    kinds = [type(node).__name__ for node in tree.body]
    assert kinds == ["Expr", "Import", "Import"] + ["Assign"] * 7 + ["FunctionDef"] * 2  # (decimal and numbers)
    assert [alias.name for node in tree.body[1:3] for alias in node.names] == ["decimal", "numbers"]
    module = python_module(text)
    assert module["KERNEL"] == HOSTILE and [c["label"] for c in module["CONFIGS"]] == ["safe", "safe"]
    assert module["COMPILE_OPTIONS"] == []
    assert "EVIL" not in module and "pwned" not in module


# --- command line -----------------------------------------------------------------------------------


def test_cli_exports_dispatch_and_refuses_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    session = tmp_path / "sweep.json"
    save_session(sweep_recording(SWEEP), session)
    out = tmp_path / "kernel_dispatch.h"
    assert cli_main(["export", str(session), "--format", "dispatch", "--out", str(out)]) == 0
    assert "2 configs for 4 sizes of n, exact set cover, tolerance 5%" in capsys.readouterr().out
    assert "workbench_dispatch_k(long long size)" in out.read_text()
    py = tmp_path / "kernel_dispatch.py"
    assert cli_main(["export", str(session), "--format", "dispatch-py", "--out", str(py), "--tolerance", "0"]) == 0
    assert python_module(py.read_text())["select"](1000) == 0
    # an earlier export may be replaced, anything else needs --force
    assert cli_main(["export", str(session), "--format", "dispatch", "--out", str(out)]) == 0
    other = tmp_path / "notes.h"
    other.write_text("mine\n")
    for argv, message in [
        (["export", str(session), "--format", "dispatch", "--out", str(other)], "exists and is not"),
        (["export", str(session), "--format", "dispatch", "--out", str(out), "--tolerance", "-1"], "--tolerance"),
        (["export", str(session), "--format", "dispatch", "--out", str(out), "--size-param", "m"], "not a problem parameter"),
        (["export", str(session), "--format", "header", "--out", str(out), "--tolerance", "0.1"], "apply to --format dispatch"),
    ]:
        code = cli_main(argv)
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and message in err, err
    assert other.read_text() == "mine\n"
    # --out -: the same source on standard output, the summary on stderr
    assert cli_main(["export", str(session), "--format", "dispatch", "--out", "-"]) == 0
    printed = capsys.readouterr()
    assert printed.out == out.read_text() and "-> standard output" in printed.err
    assert cli_main(["export", str(session), "--format", "dispatch", "--out", "-", "--at", "n=1"]) == 2
    assert "--at picks one size" in capsys.readouterr().err
    assert os.path.exists(out) and sys.executable


def test_sessions_of_one_size_each_make_a_sweep_together() -> None:
    parts = []
    for n, table in SWEEP.items():
        part = sweep_recording({n: table})
        part.problem = {"n": n}  # each session's own problem; its trials carry none
        part.trials = [Trial(t.index, t.config, t.measurement) for t in part.trials]
        parts.append(part)
    together = plan_dispatch(parts, tolerance=0.05, sources=[f"n{n}.json" for n in SWEEP])
    alone = plan_dispatch([sweep_recording(SWEEP)], tolerance=0.05)
    assert [c.id for c in together.configs] == [c.id for c in alone.configs]
    assert [r.upper for r in together.ranges] == [r.upper for r in alone.ranges]
    assert "n1000.json" in dispatch_c(together)


def test_a_greedy_cover_is_said_in_the_header() -> None:
    plan = plan_dispatch([sweep_recording(SWEEP)], tolerance=0.05, node_limit=0)
    assert plan.method == "greedy"
    header = dispatch_c(plan)
    assert "greedy set cover (at most 2.08 times the fewest)" in header
    for figure in plan.figures:
        assert figure.fraction >= 1 / 1.05 - 1e-12


@pytest.mark.skipif(CC is None, reason="no host C compiler to run the header's decision logic")
def test_a_tuned_size_sweep_exports_a_header_that_keeps_every_size_within_tolerance(cli, tmp_path: Path) -> None:
    """End to end: tune --sizes on the simulator, export, run the C, check against the session's trials."""
    from workbench.core.domain.session import load_session

    session_path = tmp_path / "sweep.json"
    done = cli("tune", "vector_add", "--backend", "sim", "--executor", "inline", "--sizes", "n=4096,1048576,67108864",
               "--budget", "8", "--seed", "2", "--quiet", "--out", session_path)
    assert done.returncode == 0, done.stderr
    header = tmp_path / "kernel_dispatch.h"
    assert cli_main(["export", str(session_path), "--format", "dispatch", "--out", str(header),
                     "--tolerance", "0.01"]) == 0
    session = load_session(session_path)
    sizes = sorted({session.problem_of(t)["n"] for t in session.trials})
    assert len(sizes) == 3
    text = header.read_text()
    chosen = run_c(text, "workbench_dispatch_vector_add", sizes, tmp_path)
    configs = [line.split()[3] for line in text.splitlines() if line.startswith("// config ")]
    for n, index in zip(sizes, chosen):
        latency = {t.config.id: t.metric("latency_ms") for t in session.trials_at({**session.problem, "n": n}) if t.ok}
        assert latency[configs[index]] <= 1.01 * min(latency.values()) + 1e-12
    assert "template changed" not in text
    # the figures of an older version of the template are said to be so, as in the header export
    stale = load_session(session_path)
    stale.source_hash = "0" * 16
    save_session(stale, session_path)
    assert cli_main(["export", str(session_path), "--format", "dispatch", "--out", str(header), "--force"]) == 0
    assert "// note: the template changed since" in header.read_text()


@pytest.mark.skipif(CC is None, reason="no host C compiler")
def test_a_float_size_parameter_gets_a_double_decision_list(tmp_path: Path) -> None:
    sweep = {}
    for scale, table in zip((0.5, 2.0, 8.0), SWEEP.values()):
        sweep[scale] = table
    session = sweep_recording(sweep)  # type: ignore[arg-type]
    plan = plan_dispatch([session], tolerance=0.0)
    # 32 is best at the first two scales, 256 at the third: the boundary is sqrt(2.0 * 8.0)
    assert not plan.integer and plan.ranges[0].upper == pytest.approx(4.0)
    header = dispatch_c(plan)
    assert "workbench_dispatch_k(double size)" in header
    probes = [0.1, 0.5, 0.999, 1.0, 2.0, 3.9, 4.0, 8.0, 1e9]
    assert run_c(header, "workbench_dispatch_k", probes, tmp_path, parse="atof") == [plan.select(v) for v in probes]
    # NaN is in no range: the header says -1 (as select refuses it), not the last range's config
    assert "-1 for a NaN size" in header
    assert run_c(header, "workbench_dispatch_k", ["nan", 1.0], tmp_path, parse="atof") == [-1, 0]
    assert [python_module(dispatch_py(plan))["select"](v) for v in probes] == [plan.select(v) for v in probes]


@pytest.mark.skipif(CC is None, reason="no host C compiler to run the header's decision logic")
@pytest.mark.parametrize("sizes, parse", [
    ((1e200, 1e300), "atof"),  # their float product overflowed: the header said ``size < inf``
    ((-1.5e308, -1e308), "atof"),  # their sum overflowed
    ((2**63 - 2, 2**63 - 1), "atoll"),  # a float square root rounded the bound up past int64
    ((-(2**63), -(2**63) + 1), "atoll"),
])
def test_boundaries_between_extreme_sizes_are_finite_and_each_size_gets_its_own_config(sizes, parse, tmp_path: Path) -> None:
    low, high = sizes
    session = sweep_recording({low: SWEEP[1000], high: SWEEP[64000]})  # type: ignore[dict-item]
    plan = plan_dispatch([session], tolerance=0.0)
    bound = plan.ranges[0].upper
    assert bound is not None and low < bound <= high and math.isfinite(bound)
    assert [plan.select(v) for v in sizes] == [0, 1]
    module = python_module(dispatch_py(plan))
    assert [module["select"](v) for v in sizes] == [0, 1]
    assert run_c(dispatch_c(plan), "workbench_dispatch_k", [repr(v) for v in sizes], tmp_path, parse=parse) == [0, 1]


def test_a_single_config_export_of_a_sweep_uses_the_sessions_own_size() -> None:
    from workbench.core.io.export import export_text, plan_export

    session = sweep_recording(SWEEP)
    session.problem = {"n": 64000}  # where block 256 wins; mixing sizes would pick 32 (1 ms at n=1000)
    plan = plan_export([session])
    assert plan.choices[0].trial.config["block"] == 256
    header = export_text(plan, "header")
    assert "#define BLOCK 256" in header and "12 trials at other problem sizes were left out" in header
    notes = json.loads(export_text(plan, "json"))["notes"]  # every format says it, none says "header"
    assert any("this export serves" in note for note in notes) and not any("header" in note for note in notes)
    # nothing feasible at a size given with at: the refusal names that size
    from workbench.core.domain.objective import Constraints

    with pytest.raises(WorkbenchError, match=r"^nothing feasible to export on .* at n=1000: "):
        plan_export([session], at={"n": 1000}, constraints=Constraints(max_latency_ms=1e-9))


def test_dispatch_refuses_at_naming_the_format_given(cli, tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    save_session(sweep_recording(SWEEP), path)
    for fmt in ("dispatch", "dispatch-py"):
        result = cli("export", path, "--format", fmt, "--at", "n=1000", "--out", tmp_path / "d")
        assert result.returncode == 2 and f"--format {fmt} exports every size" in result.stderr


def test_kernel_tuner_recordings_dispatch_with_the_names_their_kernel_reads(tmp_path: Path) -> None:
    """Caches imported from Kernel Tuner at two sizes: the dispatch header's slot macros are the
    recorded names (``block_size_x``), as in the header export, not upper-cased ones."""
    from workbench.core.io.interop import import_kt_cache

    sessions = []
    for n, fast in ((100, 32), (200, 64)):
        cache = {"device_name": "GPU", "kernel_name": "k", "problem_size": n, "tune_params_keys": ["block_size_x"],
                 "tune_params": {"block_size_x": [32, 64]},
                 "cache": {str(b): {"block_size_x": b, "time": 1.0 if b == fast else 3.0, "times": [1.0, 1.0]
                                    if b == fast else [3.0, 3.0]} for b in (32, 64)}}
        (tmp_path / f"c{n}.json").write_text(json.dumps(cache))
        sessions.append(import_kt_cache(tmp_path / f"c{n}.json"))
    header = dispatch_c(plan_dispatch(sessions))
    assert "#define block_size_x 32" in header and "#define block_size_x 64" in header
    assert "BLOCK_SIZE_X" not in header


def test_a_size_parameter_the_sizes_do_not_vary_in_is_named_as_such() -> None:
    """``--size-param alpha`` on a sweep over n said "the measured sizes also vary in n", as if
    alpha varied too."""
    from workbench.core.io.dispatch import _size_parameter

    problems = [{"n": 1024, "alpha": 2.0}, {"n": 4096, "alpha": 2.0}]
    with pytest.raises(WorkbenchError, match=r"^--size-param 'alpha': the measured sizes do not vary in it "
                                             r"\(they vary in n\)$"):
        _size_parameter(problems, "alpha")
    assert _size_parameter(problems, "n") == "n" and _size_parameter(problems, None) == "n"


def test_notes_of_configs_ruled_out_in_their_ranges_stay_few_and_never_name_a_size_below_the_measured() -> None:
    """A sweep of powers of two under a divisibility rule gave a note of 300 characters per range
    (22 of them), and a sweep measured from 0 was checked, and named, at -1."""
    blocks = (8, 16, 32, 64, 128, 256)
    slots = [Slot("block", blocks, "launch")]
    space = SearchSpace(slots, ["n % block == 0"], {"n": 2048})
    session = Session(kernel="k", kind="recording", space=space, device={"name": "GPU X"}, problem={"n": 2048})
    index = 0
    for n, best in zip((64, 128, 256, 512, 1024, 2048), blocks):
        for block in blocks:
            if n % block == 0:
                latency = 1.0 if block == best else 2.0
                session.add(Trial(index, Config({"block": block}), Measurement(Status.OK, {"latency_ms": latency}),
                                  problem={"n": n}))
                index += 1
    plan = plan_dispatch([session], tolerance=0.0)
    said = [note for note in plan.notes if "is not valid at every size" in note or "more range" in note]
    assert len(plan.ranges) == 6 and len(said) == 4, said
    assert said[-1] == "3 more ranges hand out a config the template's restrictions rule out at some of their sizes (as above)"
    low = Session(kernel="k", kind="recording", space=SearchSpace(slots, ["n >= 0"], {"n": 0}), device={"name": "GPU X"},
                  problem={"n": 0})
    for index, (n, block, latency) in enumerate([(0, 8, 1.0), (0, 16, 2.0), (100, 16, 1.0), (100, 8, 2.0)]):
        low.add(Trial(index, Config({"block": block}), Measurement(Status.OK, {"latency_ms": latency}), problem={"n": n}))
    from workbench.core.io.dispatch import _probe_sizes

    assert min(_probe_sizes(None, 10, [0, 100], True)) == 0
    assert not [note for note in plan_dispatch([low], tolerance=0.0).notes if "is not valid" in note]


def test_a_config_the_edited_template_no_longer_takes_is_said_to_be_the_configs_fault_not_the_sizes() -> None:
    """A slot's value removed from the template since the sweep was tuned was blamed on the size:
    "trials measured at n = 1048576, a size the template does not take"."""
    session = template_sweep("vector_add", "n", [4096, 16777216], n=6)
    plan = plan_dispatch([session], tolerance=0.0)
    config = plan.configs[0]
    template = load_templates()["vector_add"]
    slot = next(s for s in template.slots if len(s.values) > 1)
    narrowed = tuple(dataclasses.replace(s, values=tuple(v for v in s.values if v != config[slot.name]))
                     if s is slot else s for s in template.slots)
    edited = plan_dispatch([session], tolerance=0.0, templates={"vector_add": dataclasses.replace(template, slots=narrowed)})
    with pytest.raises(WorkbenchError, match=rf"does not fit the template: slot {slot.name}: .*; the template changed "
                                             "since the sessions were tuned$"):
        dispatch_c(edited)


def test_a_restriction_added_to_the_template_since_the_sweep_is_said_to_be_a_change_of_the_template(tmp_path) -> None:
    """A restriction added to the template's file since the sweep was tuned, ruling out a config it
    picked, was blamed on "a size the template does not take"."""
    session = template_sweep("vector_add", "n", [4096, 16777216], n=6)
    block = plan_dispatch([session], tolerance=0.0).configs[0]["block_size"]
    shipped = Path(load_templates()["vector_add"].path)
    for name in ("vector_add.py", "vector_add.cu"):
        shutil.copy(shipped.parent / name, tmp_path / name)
    spec = tmp_path / "vector_add.py"
    text = spec.read_text()
    assert "RESTRICTIONS = (\n" in text
    spec.write_text(text.replace("RESTRICTIONS = (\n", f'RESTRICTIONS = (\n    "block_size != {block}",\n', 1))
    edited = plan_dispatch([session], tolerance=0.0, templates=load_templates(tmp_path))
    with pytest.raises(WorkbenchError, match=r"; the template changed since the sessions were tuned$"):
        dispatch_c(edited)


SCAL_SPEC = {
    "format": "kernel-workbench-template", "version": 1, "name": "scal", "entry": "scal", "source": "scal.cu",
    "slots": [{"name": "block_size", "values": [64, 128, 256], "group": "launch", "default": 128},
              {"name": "pad_kb", "values": [60], "group": "memory", "default": 60}],
    "problem": {"n": {"default": 1048576, "small": 4099, "doc": "elements"}},
    "grid": ["(n + block_size - 1) // block_size", "1", "1"], "block": ["block_size", "1", "1"],
    "dynamic_smem": "block_size * 4 + pad_kb * 1024 * (n // 1000000)",
    "args": [{"name": "x", "kind": "in", "dtype": "float32", "shape": ["n"]},
             {"name": "out", "kind": "out", "dtype": "float32", "shape": ["n"], "rtol": 1e-05, "atol": 1e-06}],
    "reference": {"kind": "expression", "outputs": {"out": "3 * x"}},
    "cost": {"flops": "n"},
    "compile_options": ["-DSCALE=3", "-use_fast_math"],
}
SCAL_SOURCE = """extern "C" __global__ void __launch_bounds__(BLOCK_SIZE)
scal(const float* __restrict__ x, float* __restrict__ out)
{
    extern __shared__ float stage[];
    const long long i = (long long)blockIdx.x * BLOCK_SIZE + threadIdx.x;
    if (i < PROBLEM_N) stage[threadIdx.x] = x[i];
    __syncthreads();
    if (i < PROBLEM_N) out[i] = SCALE * stage[threadIdx.x];
}
"""


def test_a_dispatch_says_the_templates_compile_options_and_the_shared_memory_opt_in(cli, tmp_path: Path) -> None:
    """A variant built as the dispatch header said failed ("SCALE is undefined"): it named none of
    the options the template was tuned with, which the single-config header does, nor the opt-in a
    config of more than 48 KiB of shared memory needs before its launch."""
    from workbench.core.domain.kernel_spec import SPEC_SUFFIX

    folder = tmp_path / "kd"
    folder.mkdir()
    (folder / f"scal{SPEC_SUFFIX}").write_text(json.dumps(SCAL_SPEC))
    (folder / "scal.cu").write_text(SCAL_SOURCE)
    out = tmp_path / "s.json"
    done = cli("tune", "scal", "--kernel-dir", folder, "--backend", "sim", "--resources", "estimated", "--strategy",
               "grid", "--budget", "3", "--sizes", "n=4096,1048576", "--quiet", "--out", out)
    assert done.returncode == 0, done.stderr
    header, script = tmp_path / "d.h", tmp_path / "d.py"
    for fmt, path in (("dispatch", header), ("dispatch-py", script)):
        made = cli("export", out, "--kernel-dir", folder, "--format", fmt, "--tolerance", "0", "--out", path)
        assert made.returncode == 0, made.stderr
    text = header.read_text()
    assert "// and with the options the template was tuned with: -DSCALE=3 -use_fast_math" in text
    assert "COMPILE_OPTIONS = ['-DSCALE=3', '-use_fast_math']" in script.read_text()
    # the opt-in is said for each variant that needs it, and only for those
    configs = next(ast.literal_eval(line.split(" = ", 1)[1]) for line in script.read_text().splitlines()
                   if line.startswith("CONFIGS = "))
    # (over 48 KiB only at the larger size: the most over the sizes a variant serves decides, where
    # the first size it serves left a variant serving both without the call)
    assert len(configs) >= 1  # one variant serves n = 1048576, and only it needs the call
    assert text.count("cudaFuncSetAttribute(scal, cudaFuncAttributeMaxDynamicSharedMemorySize") == 1
    index = 0
    built = compile_cuda('#include "d.h"\n' + SCAL_SOURCE, arch="sm_90", entry="scal", use_cache=False,
                         options=(f"--include-path={tmp_path}", f"-DWORKBENCH_DISPATCH_SCAL_CONFIG={index}",
                                  "-DPROBLEM_N=4096", "-DSCALE=3", "-use_fast_math"))
    assert built.ok, built.log
