"""The shipped resource table: generated from real compiles, used by the simulator only while it
matches the templates, and checked cheaply so a stale table fails here instead of misleading."""

from __future__ import annotations

import dataclasses
from typing import Any
import gzip
import json
from pathlib import Path

import pytest

from workbench.backends.base import BackendSpec, EvalLimits
from workbench.backends.sim import SimBackend
from workbench.core.model import resource_table
from workbench.core.errors import WorkbenchError
from workbench.core.model.compiler import compile_cuda, nvrtc_version
from workbench.core.domain.templates import kernels_dir, load_templates

TEMPLATES = load_templates(str(kernels_dir()))


def test_shipped_tables_match_the_templates() -> None:
    """The CI guard: every shipped table describes the current templates (hash, problem, configs)."""
    archs = resource_table.shipped_archs()
    assert "sm_90" in archs  # the default modelled GPU (H200) is sm_90
    for arch in archs:
        report = resource_table.check_table(TEMPLATES.values(), arch)
        assert report.ok, report.problems


def test_shipped_figures_are_what_the_compiler_reports() -> None:
    """A few tabulated configs recompiled: the same registers, shared memory and spills."""
    table = resource_table.read_table("sm_90")
    assert table is not None
    if table["compiler"] != nvrtc_version():
        pytest.skip(f"table written by {table['compiler']}, this machine has {nvrtc_version()}")
    template = TEMPLATES["vector_add"]
    problem = template.resolve_problem()
    figures = resource_table.figures_for(template, problem, "sm_90")
    assert figures is not None and figures.complete
    for config in list(template.space(problem))[:3]:
        result = compile_cuda(template.render(config, problem), arch="sm_90", options=template.compile_options,
                              entry=template.entry, use_cache=False)
        row = figures.get(config.id)
        assert row is not None
        assert [row[c] for c in resource_table.COLUMNS] == [getattr(result, c) for c in resource_table.COLUMNS]


def test_write_then_check_then_stale(tmp_path: Path) -> None:
    """A table cut short is partial and valid; editing the template makes it stale: an error for
    the check and ignored by lookups (the simulator then compiles)."""
    template = TEMPLATES["vector_add"]
    table = resource_table.write_table([template], "sm_90", folder=tmp_path, workers=1, time_limit_s=0.01)
    entry = table["templates"]["vector_add"]
    assert not entry["complete"] and 1 <= len(entry["configs"]) < 534
    default = template.default_config()
    assert default is not None and default.id in entry["configs"]  # default first
    report = resource_table.check_table([template], "sm_90", folder=tmp_path)
    assert report.ok and "partial" in report.summary[0]
    problem = template.resolve_problem()
    assert resource_table.figures_for(template, problem, "sm_90", folder=tmp_path) is not None

    edited = dataclasses.replace(template, source=template.source + "\n// edited\n", path="")
    stale = resource_table.check_table([edited], "sm_90", folder=tmp_path)
    assert not stale.ok and "stale" in stale.problems[0]
    assert resource_table.figures_for(edited, problem, "sm_90", folder=tmp_path) is None
    other_problem = {**problem, "n": 1024}
    assert resource_table.figures_for(template, other_problem, "sm_90", folder=tmp_path) is None


def test_check_rejects_a_complete_entry_missing_configs(tmp_path: Path) -> None:
    template = TEMPLATES["vector_add"]
    resource_table.write_table([template], "sm_90", folder=tmp_path, workers=1, time_limit_s=0.01)
    path = resource_table.table_path("sm_90", tmp_path)
    data = json.loads(gzip.decompress(path.read_bytes()))
    data["templates"]["vector_add"]["complete"] = True
    path.write_bytes(gzip.compress(json.dumps(data).encode()))
    report = resource_table.check_table([template], "sm_90", folder=tmp_path)
    assert not report.ok and "missing" in report.problems[0]


def test_sim_uses_the_table_without_compiling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the table, an evaluation reads its figures (marked ``table``) and nothing is compiled:
    the compiler's disk cache stays empty."""
    monkeypatch.setenv("KERNEL_WORKBENCH_CACHE_DIR", str(tmp_path / "cubin"))
    backend = SimBackend(BackendSpec("sim", {"kernel": "vector_add", "gpu_model": "H200"}))
    backend.prepare()
    config = list(backend.space)[7]
    measurement = backend.evaluate(config, EvalLimits())
    assert measurement.ok
    assert measurement.details["resource_source"] == "table"
    assert not measurement.details["estimated"]
    assert not (tmp_path / "cubin").exists() or not any((tmp_path / "cubin").iterdir())
    row = backend.table.get(config.id) if backend.table is not None else None
    assert row is not None and measurement.metric("registers") == row["registers"]


def test_a_table_of_nothing_but_compile_errors_is_never_complete(tmp_path: Path, monkeypatch) -> None:
    """Every compile failing alike (a toolkit that cannot target the arch) is not the kernel's
    figures: the entry stays partial and the check says none compiled."""
    from workbench.core.model import compiler

    class Failed:
        ok = False
        error = "invalid value for --gpu-architecture (-arch)"

    monkeypatch.setattr(compiler, "compile_cuda", lambda *a, **k: Failed())
    template = TEMPLATES["vector_add"]
    table = resource_table.write_table([template], "sm_90", folder=tmp_path, workers=1)
    entry = table["templates"]["vector_add"]
    assert len(entry["configs"]) == len(list(template.space(template.resolve_problem())))
    assert not entry["complete"]
    report = resource_table.check_table([template], "sm_90", folder=tmp_path)
    assert not report.ok and "none of its" in report.problems[0] and "gpu-architecture" in report.problems[0]


def test_an_arch_the_compiler_does_not_know_is_refused_before_anything_is_written(cli, tmp_path: Path) -> None:
    from cli_errors import one_line_error

    for args in (("--write-table",), ()):
        done = cli("check-kernels", *args, "--arch", "sm_1", "--kernel", "vector_add",
                   env={resource_table.TABLE_DIR_ENV: str(tmp_path)})
        line = one_line_error(done)
        assert line.startswith("error: --arch sm_1:") and "sm_90" in line and done.stdout == ""
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(WorkbenchError, match="sm_1"):
        resource_table.write_table([TEMPLATES["vector_add"]], "sm_1", folder=tmp_path)
    assert list(tmp_path.iterdir()) == []


def _copy_table(tmp_path: Path, source_arch: str, arch: str, registers_plus: int = 0) -> None:
    """The shipped ``source_arch`` table stored as ``arch``'s, registers shifted (a stand-in for
    another architecture's figures: only which table is read is under test)."""
    data = resource_table.read_table(source_arch)
    assert data is not None
    copied = json.loads(json.dumps(data))
    copied["arch"] = arch
    for entry in copied["templates"].values():
        for key, row in entry["configs"].items():
            if isinstance(row, list):
                entry["configs"][key] = [row[0] + registers_plus, *row[1:]]
    resource_table._save(copied, arch, tmp_path)


def test_the_nearest_architecture_of_the_generation_comes_first(tmp_path: Path) -> None:
    """Architectures of the same major version only, the closest compute capability first; the
    arch itself is not its own neighbour, another generation is none, and a stale entry is none."""
    for arch in ("sm_75", "sm_80", "sm_89", "sm_90"):
        _copy_table(tmp_path, "sm_90", arch)
    template = TEMPLATES["vector_add"]
    problem = template.resolve_problem()
    order = [arch for arch, _ in resource_table.nearest_figures(template, problem, "sm_86", folder=tmp_path)]
    assert order == ["sm_89", "sm_80"]
    assert resource_table.nearest_figures(template, problem, "sm_90", folder=tmp_path) == []
    assert resource_table.nearest_figures(template, problem, "sm_75", folder=tmp_path) == []
    edited = dataclasses.replace(template, source=template.source + "\n// edited\n", path="")
    assert resource_table.nearest_figures(edited, problem, "sm_86", folder=tmp_path) == []


def test_a_config_this_arch_lacks_is_estimated_from_the_nearest_table(tmp_path: Path, monkeypatch) -> None:
    """While its own compile is pending, a config is simulated with the nearest architecture's
    figures for it (same shared memory, registers of the same unrolling), marked as an estimate
    and naming the table; the compile still refines it."""
    from workbench.backends import sim
    from workbench.core.model.compiler import clear_memory_cache

    _copy_table(tmp_path, "sm_90", "sm_80", registers_plus=6)  # sm_86 has no table of its own here
    monkeypatch.setenv(resource_table.TABLE_DIR_ENV, str(tmp_path))
    monkeypatch.setenv("KERNEL_WORKBENCH_CACHE_DIR", str(tmp_path / "cubin"))
    sim._RESOURCE_CACHE.clear()
    clear_memory_cache()
    backend = SimBackend(BackendSpec("sim", {"kernel": "sgemm", "gpu_model": "RTX3090", "compile_wait_s": 0}))
    backend.prepare()
    assert backend.arch == "sm_86" and backend.table is None
    config = list(backend.space)[11]
    neighbour = resource_table.figures_for(backend.template, backend.problem, "sm_80", folder=tmp_path)
    assert neighbour is not None
    row = neighbour.get(config.id)
    assert row is not None
    measured = backend.evaluate(config, EvalLimits())
    assert measured.details["estimated"] is True and measured.details["resources_pending"] is True
    assert measured.details["estimated_from"] == "sm_80"
    assert measured.metric("registers") == row["registers"]
    assert measured.metric("smem_bytes") == row["smem_bytes"] + backend._launch(config)[2]
    # with no table of any other architecture, the work-profile rule
    monkeypatch.setenv(resource_table.TABLE_DIR_ENV, str(tmp_path / "none"))
    alone = SimBackend(BackendSpec("sim", {"kernel": "sgemm", "gpu_model": "RTX3090", "compile_wait_s": 0}))
    alone.prepare()
    assert alone.neighbours == [] and "estimated_from" not in alone._estimate(config)


def test_predictions_stand_on_the_figures_a_run_stands_on_without_compiling(monkeypatch) -> None:
    """The cost model behind pruning and the portability report predicts a compiled run with the
    table's figures (it used the work-profile estimate, so a config predicted on a GPU could be
    'faster than its optimum' by 59%), estimates only what nothing knows, and never compiles;
    a run that chose estimated resources is predicted with estimates."""
    from workbench.backends import sim
    from workbench.runner.costmodel import sim_predictor

    monkeypatch.setattr(sim, "_jobs", lambda: pytest.fail("a prediction queued a compile"))
    spec = BackendSpec("sim", {"kernel": "transpose", "gpu_model": "H200"})
    run = SimBackend(BackendSpec("sim", {"kernel": "transpose", "gpu_model": "H200", "noise": False}))
    run.prepare()
    predict = sim_predictor(spec)
    for config in list(run.space)[::97]:
        measured = run.evaluate(config, EvalLimits())
        assert measured.details["resource_source"] == "table"
        expected = measured.metric("latency_ms") if measured.ok else float("inf")
        assert predict.predict(config) == pytest.approx(expected), config
    chose = SimBackend(BackendSpec("sim", {"kernel": "transpose", "gpu_model": "H200", "compile": "estimate",
                                           "noise": False}))
    chose.prepare()
    estimated = sim_predictor(BackendSpec("sim", {"kernel": "transpose", "gpu_model": "H200", "compile": "estimate"}))
    for config in list(run.space)[::97]:
        measured = chose.evaluate(config, EvalLimits())
        assert estimated.predict(config) == pytest.approx(measured.metric("latency_ms") if measured.ok else float("inf"))


def test_a_prediction_uses_a_compile_made_later_in_the_process(tmp_path: Path, monkeypatch) -> None:
    """What no table holds is estimated, but not remembered as the answer: once a run of this
    process has compiled the config, the next prediction reads the compiler's figures."""
    from workbench.backends import sim
    from workbench.core.model.compiler import clear_memory_cache

    monkeypatch.setenv("KERNEL_WORKBENCH_CACHE_DIR", str(tmp_path / "cubin"))
    sim._RESOURCE_CACHE.clear()
    clear_memory_cache()
    options = {"kernel": "vector_add", "gpu_model": "RTX3090", "arch": "sm_87", "noise": False}  # no sm_87 table
    known = SimBackend(BackendSpec("sim", {**options, "compile": "known"}))
    known.prepare()
    config = next(iter(known.space))
    before = known.evaluate(config, EvalLimits()).details
    assert before["estimated"] is True and before["resource_source"].startswith("estimate")
    run = SimBackend(BackendSpec("sim", {**options, "compile_wait_s": 60}))
    compiled = run.evaluate(config, EvalLimits())
    assert compiled.details["estimated"] is False
    after = known.evaluate(config, EvalLimits())
    assert after.details["estimated"] is False and after.details["resource_source"] == "cache"
    assert after.metric("registers") == compiled.metric("registers")


def test_a_row_that_is_not_figures_counts_as_not_tabulated(tmp_path: Path) -> None:
    """A table is data a folder named by the environment can hold: a row of text, floats, negative
    or missing figures is passed over (the config is compiled), never an error in the evaluation."""
    template = TEMPLATES["vector_add"]
    problem = template.resolve_problem()
    table = resource_table.write_table([template], "sm_90", folder=tmp_path, workers=1, time_limit_s=0.01)
    key = next(iter(table["templates"]["vector_add"]["configs"]))
    path = resource_table.table_path("sm_90", tmp_path)
    for row in (["32", 0, 0, 0, 0], [32.5, 0, 0, 0, 0], [-1, 0, 0, 0, 0], [32, 0], {"registers": 32}, [2**40, 0, 0, 0, 0]):
        data = json.loads(gzip.decompress(path.read_bytes()))
        data["templates"]["vector_add"]["configs"][key] = row
        path.write_bytes(gzip.compress(json.dumps(data).encode()))
        resource_table._loaded.clear()  # read again (rewrites within one clock tick keep the stamp)
        figures = resource_table.figures_for(template, problem, "sm_90", folder=tmp_path)
        assert figures is not None and figures.get(key) is None, row


def test_a_table_folder_is_data_however_hostile(tmp_path: Path, monkeypatch) -> None:
    """A folder the environment names may hold anything at a table's name: a FIFO (opened, it would
    wait for ever), a gzip bomb, JSON nested past the parser, or the wrong shapes. Each is refused in
    one line by the check and passed over by the simulator (which then compiles)."""
    import os

    template = TEMPLATES["vector_add"]
    problem = template.resolve_problem()
    cases = {
        "fifo": None,
        "bomb": gzip.compress(b"0" * (resource_table.MAX_TABLE_BYTES + 10)),
        "deep": gzip.compress(b"[" * 100_000 + b"]" * 100_000),
        "truncated": gzip.compress(json.dumps({"format": resource_table.FORMAT}).encode())[:-6],
        "templates_list": gzip.compress(json.dumps({"format": resource_table.FORMAT, "version": resource_table.VERSION,
                                                    "templates": []}).encode()),
        "configs_list": gzip.compress(json.dumps({"format": resource_table.FORMAT, "version": resource_table.VERSION,
                                                  "templates": {"vector_add": {"configs": []}}}).encode()),
    }
    for name, data in cases.items():
        folder = tmp_path / name
        folder.mkdir()
        path = resource_table.table_path("sm_90", folder)
        if data is None:
            os.mkfifo(path)
        else:
            path.write_bytes(data)
        with pytest.raises(WorkbenchError) as caught:
            resource_table.read_table("sm_90", folder)
        assert "\n" not in str(caught.value) and "resource table" in str(caught.value), name
        assert resource_table.figures_for(template, problem, "sm_90", folder=folder) is None
        assert resource_table.nearest_figures(template, problem, "sm_86", folder=folder) == []
    stray = tmp_path / "stray"
    stray.mkdir()
    (stray / "sm_x.json.gz").write_bytes(b"")  # names no architecture: no table at all
    assert resource_table.shipped_archs(stray) == []


def test_an_architecture_is_never_a_path(tmp_path: Path) -> None:
    """A session's ``arch`` names the table file read and the compile target: one that is not
    ``sm_<digits>`` is refused when the session loads and by the simulator, never joined into a path."""
    from workbench.core.domain.session import SessionFormatError, load_session, save_session
    from test_hostile_files import plain_session

    with pytest.raises(WorkbenchError, match="not a GPU architecture"):
        resource_table.table_path("../../etc/passwd")
    with pytest.raises(WorkbenchError, match="arch"):
        SimBackend(BackendSpec("sim", {"kernel": "vector_add", "arch": "/tmp/fifo/sm_90"}))
    for arch, field in (("../sm_90", "backend.options.arch"), ("sm_90\\x1b]0;x", "backend.options.arch"),
                        ("sm_90", None)):
        session = plain_session()
        session.backend = {"kind": "sim", "options": {"kernel": "my_kernel", "arch": arch}}
        path = tmp_path / "s.json"
        save_session(session, path) if field is None else path.write_text(
            json.dumps({**json.loads(_saved(session, tmp_path)), "backend": session.backend}))
        if field is None:
            load_session(path)
        else:
            with pytest.raises(SessionFormatError, match=field.replace(".", r"\.")):
                load_session(path)


def _saved(session: Any, folder: Path) -> str:
    from workbench.core.domain.session import save_session

    path = folder / "plain.json"
    good = session.backend
    session.backend = {"kind": "sim", "options": {"kernel": "my_kernel"}}
    save_session(session, path)
    session.backend = good
    return path.read_text()


def test_estimated_shared_memory_is_what_the_compiler_reports() -> None:
    """Without a compile (``--resources estimated``) a template's shared memory comes from its work
    profile, which must declare what its source declares: shared tiles bound occupancy, and a
    figure of 0 B showed a tiled kernel as if it used none. NVRTC's figures are the yardstick, on a
    seeded sample of each template's tabulated configs."""
    import random

    from workbench.core.model.perfmodel import estimate_resources

    table = resource_table.read_table("sm_90")
    assert table is not None
    column = table["columns"].index("smem_bytes")
    rng = random.Random(0)
    checked = 0
    for name, template in sorted(TEMPLATES.items()):
        problem = template.resolve_problem()
        rows = table["templates"][name]["configs"]
        configs = [c for c in template.space(problem) if isinstance(rows.get(c.id), list)]
        for config in rng.sample(configs, min(len(configs), 150)):
            threads = 1
            for extent in template.block(problem, config):
                threads *= int(extent)
            estimate = estimate_resources(template.profile(problem, config), threads, 0)
            assert estimate["smem_bytes"] == rows[config.id][column], (name, dict(config))
            checked += 1
    assert checked > 1000


def test_a_run_with_estimated_resources_reports_a_tiled_kernels_shared_memory(tmp_path: Path) -> None:
    from workbench.core.domain.session import load_session
    from workbench.runner.controller import RunRequest, start_run

    path = tmp_path / "s.json"
    start_run(RunRequest(kernel="sgemm", backend="sim", strategy="random", budget=3, executor="inline",
                         backend_options={"compile": "estimate"}), path).run()
    trials = load_session(path).trials
    ok = [t for t in trials if t.ok]
    assert ok and all(t.measurement.metrics["smem_bytes"] >= 4 * 8 * 32 for t in ok)  # two 8-deep tiles at least
