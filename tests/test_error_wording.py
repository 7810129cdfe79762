"""An error names the settings it tells the person to change; each front end words them.

``str()`` is the command line's wording (its flags); ``worded`` is another front end's (the
window names its controls). See ``workbench/core/errors.py``.
"""

from __future__ import annotations

import json
import pickle
import shlex
import shutil
from pathlib import Path

import pytest

from workbench.backends.base import BackendSpec
from workbench.core.errors import SETTING_FLAGS, SpaceError, WorkbenchError, quoted, word
from workbench.gui.text import WINDOW_SETTINGS  # words only: no Qt is imported

WINDOW = {"budget": lambda value: "the evals box", "format": lambda value: f"a .{value} export"}


def test_the_command_line_reads_flags_and_another_front_end_its_own_names() -> None:
    error = WorkbenchError(template="raise {budget} or add sizes to {sizes}; use {format:json}")
    assert str(error) == "raise --budget or add sizes to --sizes; use --format json"
    # a setting the front end does not name keeps its flag
    assert error.worded(WINDOW) == "raise the evals box or add sizes to --sizes; use a .json export"


def test_braces_that_name_no_setting_are_left_alone() -> None:
    error = WorkbenchError(template="{n} and {budget:3} and {not_a_setting:x} and {")
    assert str(error) == "{n} and --budget 3 and {not_a_setting:x} and {"
    assert word("{problem:n=4}", {}) == "{problem:n=4}"
    assert set(SETTING_FLAGS) >= {"budget", "sizes", "problem", "format"}


def test_a_plain_message_is_the_same_in_every_front_end_and_stays_printable() -> None:
    error = SpaceError("bad\nvalue {budget}")
    assert str(error) == error.worded(WINDOW) == "bad\\nvalue {budget}"
    assert WorkbenchError(template="x\x1b{budget}").worded(WINDOW) == "x\\x1bthe evals box"


def test_a_prefix_keeps_the_settings_of_the_error_it_explains() -> None:
    inner = WorkbenchError(template="raise {budget}")
    outer = inner.prefixed("{sizes}: ")
    assert str(outer) == "--sizes: raise --budget"
    assert outer.worded({**WINDOW, "sizes": lambda value: "the sizes field"}) == "the sizes field: raise the evals box"
    assert str(SpaceError("n=0 is not allowed").prefixed("{sizes}: ")) == "--sizes: n=0 is not allowed"


def test_the_settings_survive_a_trip_between_processes() -> None:
    error = pickle.loads(pickle.dumps(WorkbenchError(template="raise {budget}")))
    assert str(error) == "raise --budget" and error.worded(WINDOW) == "raise the evals box"


# --- the refusals that name a setting, each worded both ways ------------------------------------------

ROOT = Path(__file__).resolve().parents[1]


def _both(error: WorkbenchError) -> tuple[str, str]:
    """What ``tune`` prints and what the window shows."""
    return str(error), error.worded(WINDOW_SETTINGS)


def _sim(**fields: object) -> object:
    from workbench.runner.controller import RunRequest

    return RunRequest(kernel="vector_add", backend="sim", strategy="random", budget=2,
                      backend_options={"compile": "estimate"}, **fields)


@pytest.mark.parametrize("name", ["mine", "my kernels \u00fc"])
def test_a_template_folder_not_given_is_named_by_flag_and_by_the_menu(tmp_path: Path, name: str) -> None:
    """A folder whose name has a space is quoted in the command the message proposes (pasted
    unquoted, it was two arguments), and named as it is in the sentence and in the window."""
    from workbench.runner.controller import RunRequest, resume_run, start_run

    folder = tmp_path / name
    shutil.copytree(ROOT / "docs" / "examples" / "saxpy", folder)
    spec = folder / "saxpy.kernel.json"
    (folder / "my_saxpy.kernel.json").write_text(spec.read_text().replace('"name": "saxpy"', '"name": "my_saxpy"'))
    spec.unlink()
    path = tmp_path / "s.json"
    start_run(RunRequest(kernel="my_saxpy", kernel_dirs=(str(folder),), backend="sim", strategy="random", budget=2,
                         backend_options={"compile": "estimate"}), path).run()
    with pytest.raises(WorkbenchError) as refused:
        resume_run(path, RunRequest(budget=2))
    cli, window = _both(refused.value)
    assert cli.endswith(f"(the session's template came from {folder}: use --kernel-dir {shlex.quote(str(folder))} "
                        "to run code from there)")
    assert window.endswith(f"use File > Open kernel folder... on {folder} to run code from there)")


def test_a_shipped_template_found_instead_of_the_sessions_own_names_its_folder(tmp_path: Path) -> None:
    """A session of a template that shares a shipped template's name, continued without its folder,
    found the shipped one and said only that the kernel's code changed: the folder was the answer."""
    from workbench.runner.controller import RunRequest, resume_run, start_run

    folder = tmp_path / "mine"
    folder.mkdir()
    for suffix in (".py", ".cu"):
        (folder / f"vector_add{suffix}").write_text((ROOT / "kernels" / f"vector_add{suffix}").read_text())
    spec = folder / "vector_add.py"
    spec.write_text(spec.read_text().replace("(32, 64, 128, 256, 512, 1024)", "(64, 128, 256, 512, 1024)"))
    path = tmp_path / "s.json"
    start_run(_sim(kernel_dirs=(str(folder),)), path).run()
    with pytest.raises(WorkbenchError) as refused:
        resume_run(path, RunRequest(budget=2))
    cli, window = _both(refused.value)
    assert "the kernel's code changed since the session was measured" in cli
    assert cli.endswith(f"(the session's template came from {folder}: use --kernel-dir {folder} to run code from there)")
    assert window.endswith(f"use File > Open kernel folder... on {folder} to run code from there)")
    resume_run(path, RunRequest(budget=4, kernel_dirs=(str(folder),))).run()  # with the folder it continues


def test_a_sessions_folder_not_given_while_its_code_is_the_shipped_templates_is_said_not_dropped_silently(
        tmp_path: Path) -> None:
    """A session tuned from a folder holding a copy of a shipped template, continued without the
    folder, went on with the shipped one (same code) and recorded no folder from then on, without
    a word: exports and the source view then no longer looked there."""
    from workbench.core.domain.session import load_session
    from workbench.runner.controller import RunRequest, resume_run, start_run

    folder = tmp_path / "mine"
    folder.mkdir()
    for suffix in (".py", ".cu"):
        (folder / f"vector_add{suffix}").write_text((ROOT / "kernels" / f"vector_add{suffix}").read_text())
    path = tmp_path / "s.json"
    start_run(_sim(kernel_dirs=(str(folder),)), path).run()
    run = resume_run(path, RunRequest(budget=3))
    said = [w for w in run.warnings if "the session's template came from" in w]
    assert said == [f"the session's template came from {folder}; this run uses the template of that name found "
                    "without it, whose code is the same, and the session records no folder from now on (give "
                    f"--kernel-dir {folder} to keep running it from there)"]
    run.run()
    assert load_session(path).backend["options"]["kernel_dirs"] == []
    again = resume_run(path, RunRequest(budget=4))  # nothing recorded any more: nothing to say
    again.release()
    assert not [w for w in again.warnings if "template came from" in w]


def test_a_single_score_strategy_for_a_trade_off_names_the_strategies_and_one_score(tmp_path: Path) -> None:
    import dataclasses

    from workbench.runner.controller import resume_run, start_run

    path = tmp_path / "p.json"
    start_run(dataclasses.replace(_sim(), strategy=None, objectives=("latency_ms", "memory_mb")), path).run()
    with pytest.raises(WorkbenchError) as refused:
        resume_run(path, dataclasses.replace(_sim(), kernel=None, backend=None))
    cli, window = _both(refused.value)
    assert cli.startswith("--objectives (this session's): strategy 'random' searches one score; use --strategy ")
    assert cli.endswith(", or --objectives none to search one score")
    assert window.startswith("the objectives (this session's): strategy 'random' searches one score; use ")
    assert window.endswith(" in the strategy box, or File > New session to search one score")


def test_a_python_session_names_its_file_to_tune_and_says_the_window_asks(tmp_path: Path) -> None:
    from workbench.runner.controller import RunRequest, resume_run, start_run

    bench = ROOT / "tests" / "gui" / "gui_bench.py"
    path = tmp_path / "py.json"
    start_run(RunRequest(kernel=str(bench), backend="python", strategy="random", budget=2), path).run()
    with pytest.raises(WorkbenchError) as refused:
        resume_run(path, RunRequest(budget=2))
    cli, window = _both(refused.value)
    assert cli == f"the session runs the python benchmark {bench}; name it to run its code (tune {bench} --resume ...)"
    assert window == (f"the session runs the python benchmark {bench}; "
                      "the window asks before running its code: answer yes to run it")
    spaced = tmp_path / "a folder" / "gui bench.py"  # the command is quoted, to be pasted as it is
    spaced.parent.mkdir()
    spaced.write_bytes(bench.read_bytes())
    path = tmp_path / "spaced.json"
    start_run(RunRequest(kernel=str(spaced), backend="python", strategy="random", budget=2), path).run()
    with pytest.raises(WorkbenchError) as refused:
        resume_run(path, RunRequest(budget=2))
    assert _both(refused.value)[0].endswith(f"name it to run its code (tune '{spaced}' --resume ...)")


def test_stored_workers_and_devices_are_named_by_flag_and_as_the_files_settings(tmp_path: Path) -> None:
    from workbench.runner.controller import RunRequest, resume_run, start_run
    from workbench.runner.executors import assign_devices, check_workers

    path = tmp_path / "w.json"
    start_run(_sim(), path).run()
    doc = json.loads(path.read_text())
    doc["run"]["workers"] = 100_000
    path.write_text(json.dumps(doc))
    with pytest.raises(WorkbenchError) as refused:
        resume_run(path, RunRequest(budget=2))
    cli, window = _both(refused.value)
    assert cli.startswith("workers 100000: must be from 1 to ") and cli.endswith("; --workers sets it)")
    assert window.endswith("; the session's worker count (run.workers in its file) sets it)")
    with pytest.raises(WorkbenchError) as flag:  # the flag's own value: the command line's only
        check_workers(0, flag="--workers")
    assert str(flag.value).startswith("--workers 0: must be from 1 to ") and flag.value.template is None
    doc["run"]["workers"], doc["run"]["devices"] = None, [0]
    path.write_text(json.dumps(doc))
    with pytest.raises(WorkbenchError) as refused:
        resume_run(path, RunRequest(budget=2))
    assert _both(refused.value) == ("--devices applies to the cuda backend, not sim",
                                    "the session's devices (run.devices in its file) applies to the cuda backend, not sim")
    for requested, said in (((), "name at least one device"), ((3,), "no device 3; visible devices are 0..1"),
                            ((1, 1), "device 1 is named twice")):
        with pytest.raises(WorkbenchError) as bad:
            assign_devices(["H100", "H100"], requested)
        assert _both(bad.value) == (f"--devices: {said}", f"the session's devices (run.devices in its file): {said}")


def test_a_stored_executor_is_named_by_flag_and_as_the_files_setting(tmp_path: Path) -> None:
    """A session whose file says how its runs execute (an inline or Ray executor) can be continued
    in the window, which has no control for it: the refusal names the file's setting there."""
    from workbench.runner.controller import RunRequest, resume_run, start_run
    from workbench.runner.executors import ExecutorChoice, plan_execution

    path = tmp_path / "e.json"
    start_run(_sim(), path).run()
    doc = json.loads(path.read_text())
    doc["run"]["executor"], doc["run"]["ray_address"] = "local", "10.0.0.1:6379"
    path.write_text(json.dumps(doc))
    # a stored Ray address is never used (test_hostile_files: a file never chooses where work goes)
    assert resume_run(path, RunRequest(budget=2)).run().reason == "budget"
    with pytest.raises(WorkbenchError) as refused:  # named on the command line without Ray, it is refused
        resume_run(path, RunRequest(budget=2, ray_address="10.0.0.1:6379"))
    assert _both(refused.value) == (
        "--ray-address needs --executor ray",
        "the session's Ray address (run.ray_address in its file) needs run.executor = ray in the session's file")
    python = BackendSpec("python", {"path": str(ROOT / "tests" / "gui" / "gui_bench.py")})
    with pytest.raises(WorkbenchError) as inline:
        plan_execution(python, ExecutorChoice("inline"), None)
    cli, window = _both(inline.value)
    assert cli.startswith("--executor inline runs candidates in this process") and cli.endswith("not python; use --executor local")
    assert window.startswith("run.executor = inline in the session's file runs candidates")
    assert window.endswith("use run.executor = local in the session's file")


def test_a_backend_the_kernel_cannot_run_on_is_named_by_flag_and_by_the_backend_box(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.runner import plan

    bench = str(ROOT / "tests" / "gui" / "gui_bench.py")
    monkeypatch.setenv("KERNEL_WORKBENCH_FORCE_NO_GPU", "1")
    plan.cuda_device_count.cache_clear()
    plan.cuda_missing.cache_clear()
    cases = [
        (dict(kernel="vector_add", backend="cuda"), "--backend cuda: ", "(or use --backend sim)",
         "CUDA device in the backend box: ", "(or use simulated GPU in the backend box)"),
        (dict(kernel=None, backend="replay", replay=str(tmp_path / "r.json")), f"{tmp_path / 'r.json'}: no such file",
         "(the recording to replay, --replay)", f"{tmp_path / 'r.json'}: no such file",
         "(the recording to replay, the recording field)"),
        (dict(kernel=None, backend="replay", replay=str(tmp_path)), f"{tmp_path}: not a regular file",
         "(the recording to replay, --replay)", f"{tmp_path}: not a regular file",
         "(the recording to replay, the recording field)"),
        (dict(kernel=bench, backend="sim"), f"{bench} is a python benchmark; it runs with --backend python, ",
         "not --backend sim", f"{bench} is a python benchmark; it runs with python benchmark in the backend box, ",
         "not simulated GPU in the backend box"),
        (dict(kernel=bench, backend="python", problem={"n": 4}), "--set n=4: ",
         "; --set changes a template's problem parameters", "n=4 in the problem field: ",
         "; the problem field changes a template's problem parameters"),
        (dict(kernel="vector_add", backend="python"), "vector_add is a CUDA template; --backend python runs ",
         "python benchmark files", "vector_add is a CUDA template; python benchmark in the backend box runs ",
         "python benchmark files"),
        (dict(kernel="vector_add", backend="sim", kernel_dirs=[str(tmp_path / "gone")]),
         f"--kernel-dir {tmp_path / 'gone'}: ", "not a folder",
         f"File > Open kernel folder... on {tmp_path / 'gone'}: ", "not a folder"),
        # a folder whose name reads like a setting is shown as it is
        (dict(kernel="vector_add", backend="sim", kernel_dirs=[str(tmp_path / "{budget}")]),
         # (quoted as a shell takes it, so that the command can be pasted)
         f"--kernel-dir {shlex.quote(str(tmp_path / '{budget}'))}: ", "not a folder",
         f"File > Open kernel folder... on {tmp_path / '{budget}'}: ", "not a folder"),
    ]
    try:
        for fields, cli_start, cli_end, window_start, window_end in cases:
            with pytest.raises(WorkbenchError) as refused:
                plan.make_backend_spec(**fields)
            cli, window = _both(refused.value)
            assert cli.startswith(cli_start) and cli.endswith(cli_end), cli
            assert window.startswith(window_start) and window.endswith(window_end), window
    finally:
        plan.cuda_device_count.cache_clear()
        plan.cuda_missing.cache_clear()


def test_a_strategy_a_replay_and_a_session_without_a_backend_are_worded_both_ways(tmp_path: Path) -> None:
    import dataclasses

    from workbench.core.domain.session import load_session, save_session
    from workbench.runner.controller import RunRequest, resume_run, start_run
    from workbench.runner.plan import make_backend_spec

    noop = str(ROOT / "tests" / "fixtures" / "noop_bench.py")
    with pytest.raises(WorkbenchError) as refused:
        start_run(RunRequest(kernel=noop, strategy="agents", budget=2), None)
    cli, window = _both(refused.value)
    assert cli.endswith("pick another strategy (--strategy tpe, annealing or random) or narrow the domains")
    assert window.endswith("pick another strategy (tpe, annealing or random in the strategy box) or narrow the domains")
    with pytest.raises(WorkbenchError) as refused:
        make_backend_spec(None, "replay")
    assert _both(refused.value) == (
        "a replay needs --replay FILE (a recorded session or a Kernel Tuner cache)",
        "a replay needs the recording field (a recorded session or a Kernel Tuner cache)")
    path = tmp_path / "s.json"
    start_run(_sim(), path).run()
    save_session(dataclasses.replace(load_session(path), backend={}), path)
    with pytest.raises(WorkbenchError) as refused:
        resume_run(path, RunRequest(budget=2))
    cli, window = _both(refused.value)
    assert cli.endswith("records no backend to continue with; start a new run (tune KERNEL or tune --replay FILE)")
    assert window.endswith("records no backend to continue with; start a new one with File > New session")


def test_mixed_gpu_models_are_named_by_flags_and_as_the_files_settings() -> None:
    from workbench.runner.executors import assign_devices

    with pytest.raises(WorkbenchError) as refused:
        assign_devices(["H100", "A100"])
    cli, window = _both(refused.value)
    assert cli.endswith("pick one model with --devices, or allow mixing them with --allow-mixed-gpus")
    assert window.endswith("pick one model with the session's devices (run.devices in its file), or allow mixing "
                           "them with run.allow_mixed_gpus in the session's file")


def test_user_data_in_a_message_is_shown_as_it_is_never_worded_as_a_setting() -> None:
    """A path, a problem value or a quoted file may hold braces that read like a setting
    (``{budget}``) or break one (``a}b``): quoted, they are text in every front end."""
    path, value = "/data/{budget}/run.json", "a}b"
    error = WorkbenchError(template=f"replays {quoted(path)}; {{problem:mode={quoted(value)}}} is not swept")
    assert str(error) == "replays /data/{budget}/run.json; --set mode=a}b is not swept"
    window = {"problem": lambda v: f"{v} in the problem field"}
    assert error.worded(window) == "replays /data/{budget}/run.json; mode=a}b in the problem field is not swept"


def test_a_prefix_on_a_plain_message_keeps_its_braces_and_its_class() -> None:
    inner = SpaceError("problem parameter 'n'='{sizes}' is not a number")
    outer = inner.prefixed("{sizes}: ")
    assert str(outer) == "--sizes: problem parameter 'n'='{sizes}' is not a number"
    assert isinstance(outer, SpaceError)


def test_sizes_given_as_braces_are_quoted_back_verbatim_by_the_command_line(tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from workbench.cli import main

    assert main(["tune", "vector_add", "--backend", "sim", "--sizes", "n={budget}", "--budget", "2",
                 "--out", str(tmp_path / "x.json")]) != 0
    assert "got '{budget}'" in capsys.readouterr().err


def test_a_prefix_on_an_error_that_takes_more_than_a_message_keeps_its_text() -> None:
    """A spec error is made from a message, a field and a line: it cannot be made again from a
    template alone, so the prefixed error is a plain one with the same text."""
    from workbench.core.domain.kernel_spec import SpecError

    outer = SpecError("not a number", field="slots[0].values", line=3, path="k.kernel.json").prefixed("{sizes}: ")
    assert type(outer) is WorkbenchError
    assert str(outer) == "--sizes: k.kernel.json:3: slots[0].values: not a number"


def test_a_name_is_never_its_own_suggestion() -> None:
    """A template saved outside the search path was 'unknown kernel 'rowsum2' (did you mean
    'rowsum2'?)': the name itself is no suggestion; a near one still is."""
    from workbench.core.errors import did_you_mean

    assert did_you_mean("rowsum2", ["rowsum2", "softmax"]) == ""
    assert did_you_mean("rowsum2", ["rowsum2", "rowsum"]) == " (did you mean 'rowsum'?)"


def test_a_recording_path_a_message_proposes_to_replay_is_quoted(tmp_path: Path, cli) -> None:
    """``tune sgemm --replay "my rec/pn poly.json"`` proposed ``tune --replay my rec/pn poly.json``
    (three arguments, pasted); quoted as --kernel-dir paths are."""
    folder = tmp_path / "my rec"
    folder.mkdir()
    recording = folder / "pn poly.json"
    shutil.copy(Path(__file__).parent / "fixtures" / "kt_cache_small.json", recording)
    refused = cli("tune", "sgemm", "--replay", recording, "--budget", "3", "--out", tmp_path / "r.json")
    assert refused.returncode == 2 and f"tune --replay {shlex.quote(str(recording))}" in refused.stderr, refused.stderr
