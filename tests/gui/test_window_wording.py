"""Messages the window shows name its controls, not the command line's flags.

A refusal the run controller or the exporter words for the command line ("give a larger --budget",
"use --format header or json") told someone in the window to use a flag the window has no place
for. The error names the setting; the window words it by the control (see ``workbench.core.errors``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

BENCH = str(Path(__file__).with_name("gui_bench.py"))
FLAG = re.compile(r"(?<![\w-])--[a-z]")


def _start_from_the_toolbar(window, qtbot, run: dict) -> str:
    """Start as a person does: the controls filled in, then Start; what the status bar says."""
    window.toolbar.apply(run)
    window.toolbar.start.click()
    return window.statusBar().currentMessage()


def test_sizes_for_a_benchmark_without_sizes_name_the_sizes_field(window, qtbot):
    message = _start_from_the_toolbar(window, qtbot, {"kernel": BENCH, "backend": "python", "budget": 2,
                                                      "sizes": {"n": [1024, 2048]}})
    assert message.startswith("Cannot start the run: the sizes field: ") and not window.running, message
    assert "has one fixed problem (a python benchmark)" in message and not FLAG.search(message), message


def test_a_sweep_with_nothing_left_to_measure_names_the_evals_box_and_the_sizes_field(window, qtbot):
    run = {"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 2,
           "sizes": {"n": [1024, 2048]}, "options": {"compile": "estimate"}}
    with qtbot.waitSignal(window.run_done, timeout=120_000):
        window.start_run(run)
    message = _start_from_the_toolbar(window, qtbot, run)  # the same again: every size has its 2
    assert "already has 2 evaluations or more" in message and not window.running
    assert "raise the evals box" in message and "add sizes to the sizes field" in message
    assert not FLAG.search(message), message


def test_an_export_the_session_cannot_give_names_the_exports_it_can(window, qtbot, tmp_path):
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({"kernel": BENCH, "backend": "python", "strategy": "random", "budget": 3, "seed": 1})
    out = tmp_path / "best.cu"
    assert not window._guarded(lambda: window.export_best(str(out)), "Cannot export")
    message = window.statusBar().currentMessage()
    assert "a .cu export needs a kernel template" in message and not out.exists()
    assert "use a .h export or a .json export" in message and not FLAG.search(message), message


def test_the_source_of_a_template_from_an_unloaded_folder_points_to_the_kernel_editor(tmp_path):
    import dataclasses

    from workbench.core.domain.session import load_session
    from workbench.gui.source_view import render_source

    session = load_session(Path(__file__).resolve().parents[1] / "fixtures" / "session_golden.json")
    backend = {**session.backend, "options": {**session.backend["options"], "kernel_dirs": [str(tmp_path)]}}
    session = dataclasses.replace(session, backend=backend)
    text, note = render_source(session, session.trials[0].config)
    assert text == "" and "is not loaded" in note and "File > Open kernel folder..." in note
    assert not FLAG.search(note), note


def test_a_recording_of_another_kernel_named_like_a_shipped_template_has_no_source(tmp_path):
    """A Kernel Tuner cache whose kernel is called vector_add was rendered with the shipped
    vector_add template and said "cannot render: unknown problem parameter"; a replay of a session
    of the shipped template still shows its source."""
    from workbench.core.io.interop import import_kt_cache
    from workbench.gui.source_view import render_source

    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    imported = import_kt_cache(fixtures / "kt_cache_small.json")
    assert imported.kernel == "vector_add"
    text, note = render_source(imported, imported.trials[0].config)
    assert text == "" and "has other slots than this session" in note and "cannot render" not in note
    from workbench.core.domain.session import load_session
    from workbench.runner.controller import RunRequest, run_to_end

    simulated, replayed = tmp_path / "sim.json", tmp_path / "replay.json"
    run_to_end(RunRequest(kernel="vector_add", backend="sim", strategy="random", budget=2,
                          backend_options={"compile": "estimate"}), simulated)
    run_to_end(RunRequest(replay=str(simulated), strategy="random", budget=2), replayed)
    for path in (simulated, replayed):
        session = load_session(path)
        text, note = render_source(session, session.trials[0].config)
        assert "__global__" in text and note == "vector_add.cu rendered for this config"


def test_a_recording_moved_away_is_asked_for_in_the_recording_field(window, qtbot, tmp_path):
    import shutil

    recording = tmp_path / "recording.json"
    shutil.copy(Path(__file__).resolve().parents[1] / "fixtures" / "kt_cache_small.json", recording)
    run = {"backend": "replay", "replay": str(recording), "strategy": "random", "budget": 2}
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run(run)
    recording.unlink()
    message = _start_from_the_toolbar(window, qtbot, {**run, "budget": 4})  # continue it: 2 more
    assert "which is not there any more" in message and not window.running, message
    assert "the recording field" in message and not FLAG.search(message), message


def test_a_problem_outside_the_swept_sizes_is_refused_with_a_sweep_open_or_not(window, qtbot):
    run = {"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 2,
           "sizes": {"n": [1024, 2048]}, "options": {"compile": "estimate"}}
    outside = {**run, "problem": {"n": 4096}, "budget": 4}
    message = _start_from_the_toolbar(window, qtbot, outside)  # nothing open: a new sweep
    assert "n=4096 in the problem field is not one of the swept sizes" in message and not window.running, message
    with qtbot.waitSignal(window.run_done, timeout=120_000):
        window.start_run(run)  # no problem named: the default one runs, and the field says so
    session = window.model.session
    assert window.toolbar.problem.text() == "" and session.problem["n"] == 1 << 24
    # the field left as it was (n=4096) made the next Start continue this sweep with the problem ignored
    message = _start_from_the_toolbar(window, qtbot, outside)  # the sweep open: the same refusal
    assert "n=4096 in the problem field is not one of the swept sizes (the sizes field's n=...)" in message, message
    assert not window.running and window.model.session is session and len(session.trials) == 4
    assert not FLAG.search(message), message


def _saxpy_folder(tmp_path: Path) -> Path:
    """A template folder of the user's own (the editor's worked example, named ``my_saxpy``: no
    template the kernel list already runs from another folder), loaded by nothing unasked."""
    import shutil

    folder = tmp_path / "mine"
    shutil.copytree(Path(__file__).resolve().parents[2] / "docs" / "examples" / "saxpy", folder)
    spec = folder / "saxpy.kernel.json"
    (folder / "my_saxpy.kernel.json").write_text(spec.read_text().replace('"name": "saxpy"', '"name": "my_saxpy"'))
    spec.unlink()
    return folder


def test_a_session_from_a_folder_not_loaded_points_to_open_kernel_folder_which_continues_it(window, qtbot, tmp_path):
    from workbench.core.domain.session import load_session
    from workbench.runner.controller import RunRequest, start_run

    folder, path = _saxpy_folder(tmp_path), tmp_path / "saxpy.json"
    start_run(RunRequest(kernel="my_saxpy", kernel_dirs=(str(folder),), backend="sim", strategy="random", budget=2,
                         backend_options={"compile": "estimate"}), path).run()
    window.open_session(str(path))
    message = _start_from_the_toolbar(window, qtbot, {"budget": 4})
    assert f"the session's template came from {folder}: use File > Open kernel folder... on {folder}" in message
    assert not window.running and not FLAG.search(message), message
    out = tmp_path / "best.cu"
    assert not window._guarded(lambda: window.export_best(str(out)), "Cannot export") and not out.exists()
    message = window.statusBar().currentMessage()
    assert f"use File > Open kernel folder... on {folder}" in message and not FLAG.search(message), message
    editor = window.open_kernel_editor(folder)  # what File > Open kernel folder... does once the folder is chosen
    qtbot.addWidget(editor)
    with qtbot.waitSignal(window.run_done, timeout=120_000):
        window.toolbar.start.click()  # now it continues, from the folder the person chose
    assert window.model.session.kernel == "my_saxpy" and len(load_session(path).trials) == 2 + 4  # 4 more
    window.export_best(str(out))
    assert "__global__" in out.read_text()


def test_a_single_score_strategy_on_a_trade_off_session_names_the_strategy_box_and_a_new_session(window, qtbot,
                                                                                                    tmp_path):
    from workbench.runner.controller import RunRequest, start_run

    path = tmp_path / "pareto.json"
    start_run(RunRequest(kernel="vector_add", backend="sim", budget=3, objectives=("latency_ms", "memory_mb"),
                         backend_options={"compile": "estimate"}), path).run()
    window.open_session(str(path))
    message = _start_from_the_toolbar(window, qtbot, {"strategy": "random", "budget": 5})
    assert "strategy 'random' searches one score" in message and not window.running, message
    assert "in the strategy box" in message and "File > New session to search one score" in message
    assert not FLAG.search(message), message


def test_re_measuring_a_python_session_asks_for_its_code_as_start_does(window, qtbot, tmp_path):
    import dataclasses

    from workbench.core.domain.measurement import Status
    from workbench.core.domain.session import load_session, save_session
    from workbench.runner.controller import RunRequest, start_run

    path = tmp_path / "py.json"
    start_run(RunRequest(kernel=BENCH, backend="python", strategy="random", budget=3, seed=1), path).run()
    session = load_session(path)
    first = session.trials[0]
    session.trials[0] = dataclasses.replace(first, measurement=dataclasses.replace(first.measurement,
                                                                                   status=Status.ABORTED))
    save_session(session, path)
    window.open_session(str(path))
    assert not window._guarded(window.remeasure_aborted, "Cannot re-measure")
    message = window.statusBar().currentMessage()  # no person here to say yes (interactive=False)
    assert "running its code needs the person's yes" in message and not FLAG.search(message), message
    window.trusted_code.add(Path(BENCH).resolve())  # the person's yes
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.remeasure_aborted()
    assert len(load_session(path).trials) == 4


def test_a_session_files_workers_and_devices_are_named_as_its_settings(window, qtbot, tmp_path):
    import json

    from workbench.runner.controller import RunRequest, start_run

    path = tmp_path / "w.json"
    start_run(RunRequest(kernel="vector_add", backend="sim", strategy="random", budget=2,
                         backend_options={"compile": "estimate"}), path).run()
    doc = json.loads(path.read_text())
    doc["run"]["workers"] = 100_000
    path.write_text(json.dumps(doc))
    window.open_session(str(path))
    message = _start_from_the_toolbar(window, qtbot, {"budget": 4})
    assert "workers 100000: must be from 1 to" in message and not window.running, message
    assert "the session's worker count (run.workers in its file) sets it" in message and not FLAG.search(message)
    doc["run"]["workers"], doc["run"]["devices"] = None, [0]
    path.write_text(json.dumps(doc))
    window.open_session(str(path))
    message = _start_from_the_toolbar(window, qtbot, {"budget": 4})
    assert "the session's devices (run.devices in its file) applies to the cuda backend, not sim" in message, message
    assert not window.running and not FLAG.search(message), message


@pytest.fixture
def no_gpu(monkeypatch):
    """No CUDA device, whatever this machine has (the answer is cached per process: forgotten)."""
    from workbench.runner import plan

    monkeypatch.setenv("KERNEL_WORKBENCH_FORCE_NO_GPU", "1")
    plan.cuda_device_count.cache_clear()
    plan.cuda_missing.cache_clear()
    yield
    plan.cuda_device_count.cache_clear()
    plan.cuda_missing.cache_clear()


@pytest.mark.parametrize("run, said", [
    ({"kernel": "vector_add", "backend": "cuda"}, ["CUDA device in the backend box: ",
                                                   "(or use simulated GPU in the backend box)"]),
    ({"kernel": BENCH, "backend": "sim"},
     ["is a python benchmark; it runs with python benchmark in the backend box, not simulated GPU in the backend box"]),
    ({"kernel": BENCH, "backend": "python", "problem": {"n": 4}},
     ["n=4 in the problem field: ", "; the problem field changes a template's problem parameters"]),
    ({"kernel": "vector_add", "backend": "python"},
     ["vector_add is a CUDA template; python benchmark in the backend box runs python benchmark files"]),
])
def test_a_backend_the_kernel_cannot_run_on_names_the_backend_box(window, qtbot, no_gpu, run, said):
    message = _start_from_the_toolbar(window, qtbot, {**run, "budget": 2})
    assert message.startswith("Cannot start the run: ") and not window.running, message
    assert all(part in message for part in said) and not FLAG.search(message), message


def test_a_saved_templates_folder_gone_is_named_as_a_kernel_folder(window, qtbot, tmp_path):
    window._kernel_folder_opened("vector_add", tmp_path / "gone")  # as if opened, then removed
    message = _start_from_the_toolbar(window, qtbot, {"kernel": "vector_add", "backend": "sim", "budget": 2})
    assert f"File > Open kernel folder... on {tmp_path / 'gone'}: not a folder" in message, message
    assert not window.running and not FLAG.search(message), message


def test_a_strategy_that_cannot_search_the_space_names_the_strategy_box(window, qtbot):
    noop = str(Path(__file__).resolve().parents[1] / "fixtures" / "noop_bench.py")  # one slot of 100,000 values
    message = _start_from_the_toolbar(window, qtbot, {"kernel": noop, "backend": "python", "strategy": "agents",
                                                      "budget": 2})
    assert "strategy 'agents' cannot search this space" in message and not window.running, message
    assert "pick another strategy (tpe, annealing or random in the strategy box)" in message
    assert not FLAG.search(message), message


def test_a_replay_without_a_recording_asks_for_one_in_the_recording_field(window, qtbot):
    message = _start_from_the_toolbar(window, qtbot, {"backend": "replay", "replay": "", "budget": 2})
    assert "a replay needs the recording field" in message, message
    assert not window.running and not FLAG.search(message), message


def test_a_session_without_a_backend_is_told_to_start_a_new_one_with_file_new(window, qtbot, tmp_path):
    import json

    from workbench.runner.controller import RunRequest, start_run

    path = tmp_path / "nb.json"
    start_run(RunRequest(kernel="vector_add", backend="sim", strategy="random", budget=2,
                         backend_options={"compile": "estimate"}), path).run()
    doc = json.loads(path.read_text())
    doc["backend"] = {}
    path.write_text(json.dumps(doc))
    window.open_session(str(path))
    message = _start_from_the_toolbar(window, qtbot, {"budget": 4})
    assert "records no backend to continue with; start a new one with File > New session" in message, message
    assert not window.running and not FLAG.search(message), message


def test_the_device_box_picks_the_gpu_a_new_cuda_session_measures_on(window):
    """The box's device reached the backend's options only: the run then measured on every visible
    GPU and the session described the first (and on GPUs of two models was refused with flags)."""
    from workbench.backends.base import BackendSpec
    from workbench.runner.executors import ExecutorChoice, plan_execution

    request = window._run_request({"kernel": "vector_add", "backend": "cuda", "device": 1, "budget": 2}, None)
    assert request.devices == (1,)
    plan = plan_execution(BackendSpec("cuda", {"kernel": "vector_add", "device": 1}),
                          ExecutorChoice("local", None, request.devices), gpu_names=lambda: ["H100", "A100"])
    assert plan.spec.options["device"] == 1 and plan.spec.options["devices"] == [1] and plan.workers == 1
    assert window._run_request({"kernel": "vector_add", "backend": "sim", "budget": 2}, None).devices is None


def test_a_problem_for_a_python_benchmark_names_the_problem_field(window, qtbot):
    message = _start_from_the_toolbar(window, qtbot, {"kernel": BENCH, "backend": "python", "budget": 2,
                                                      "problem": {"n": 5}})
    assert "n=5 in the problem field: " in message and "is a python benchmark" in message, message
    assert not window.running and not FLAG.search(message), message


def test_a_recording_that_is_not_there_names_the_recording_field(window, qtbot, tmp_path):
    gone = tmp_path / "gone.json"
    message = _start_from_the_toolbar(window, qtbot, {"backend": "replay", "replay": str(gone), "budget": 2})
    assert f"{gone}: no such file" in message and "the recording field" in message, message
    assert not window.running and not FLAG.search(message), message


def test_an_old_replay_of_a_cache_is_not_continued_and_the_window_says_how_to_start_anew(window, qtbot, tmp_path):
    """Replayed when a record's latency_ms was Kernel Tuner's time (the session's JSON written as
    that code saved it), the session is not continued with medians; the window names its menu."""
    import json

    from workbench.runner.controller import RunRequest, run_to_end

    recording = tmp_path / "recording.json"
    cache = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "kt_cache_small.json").read_text())
    for record in cache["cache"].values():  # one slow repetition each: Kernel Tuner's time is not the median
        if isinstance(record.get("time"), (int, float)):
            record["times"] = [record["time"] * 0.9] * 2 + [record["time"] * 1.2]
    recording.write_text(json.dumps(cache))
    out = tmp_path / "old.json"
    run_to_end(RunRequest(replay=str(recording), strategy="random", budget=2, executor="inline"), out)
    data = json.loads(out.read_text())
    data["device"].pop("kt_reading")
    for trial in data["trials"]:
        metrics = trial.get("metrics", {})
        if "kt_time_ms" in metrics:
            metrics["latency_ms"] = metrics.pop("kt_time_ms")
    out.write_text(json.dumps(data))
    before = out.read_bytes()
    window.open_session(str(out))
    message = _start_from_the_toolbar(window, qtbot, {"backend": "replay", "replay": str(recording),
                                                      "strategy": "random", "budget": 4})
    assert "now their median" in message and not window.running, message
    assert "File > New session" in message and not FLAG.search(message), message
    assert out.read_bytes() == before


def test_a_start_replaces_an_earlier_refusal_in_the_status_bar_and_says_the_runs_warnings(window, qtbot, tmp_path):
    """A refused Start's message stayed on show for 10 s beside the run started next; and the run's
    warnings (here: a template of the person's folder replacing a shipped one) never reached the window."""
    import shutil

    refused = _start_from_the_toolbar(window, qtbot, {"kernel": "no_such_kernel", "backend": "sim", "budget": 2})
    assert refused.startswith("Cannot start the run") and not window.running
    _start_from_the_toolbar(window, qtbot, {"kernel": "vector_add", "backend": "sim", "strategy": "random",
                                            "budget": 2, "options": {"compile": "estimate"}})
    assert window.running or window.model.session is not None
    assert "Cannot start the run" not in window.statusBar().currentMessage()
    qtbot.waitUntil(lambda: not window.running, timeout=60_000)
    root = Path(__file__).resolve().parents[2]
    for suffix in (".py", ".cu"):
        shutil.copy(root / "kernels" / f"gelu{suffix}", tmp_path / f"gelu{suffix}")
    with qtbot.waitSignal(window.run_done, timeout=120_000):
        window.start_run({"kernel": "gelu", "backend": "sim", "strategy": "random", "budget": 2,
                          "kernel_dirs": [str(tmp_path)], "options": {"compile": "estimate"}})
    said = window.statusBar().currentMessage()
    assert "which replaces the shipped template of that name" in said, said


def test_markup_in_a_files_names_is_shown_as_written_never_drawn(window, tmp_path):
    """A session whose device was named ``<font size=7>HACKED</font><img src=...>`` drew a huge red
    word and a local picture over the status bar; a template's slot documentation or a compiler's
    message did the same in their tool tips. What a file says is shown as text."""
    from workbench.core.domain.measurement import Measurement, Status, Trial
    from workbench.core.domain.session import Session, save_session
    from workbench.core.domain.space import SearchSpace, Slot
    from workbench.gui.text import plain_tip

    markup = "<font color=red size=7><b>HACKED</b></font><img src='x.png'>"
    space = SearchSpace([Slot("mode", ("fast", "plain"), "compute")])
    session = Session(kernel="k", kind="recording", space=space, device={"name": markup, "simulated": False})
    for i, config in enumerate(space):
        session.add(Trial(i, config, Measurement(Status.OK, {"latency_ms": 1.0 + i}), 1.0, 2.0))
    path = tmp_path / "s.json"
    save_session(session, path)
    window.open_session(path)
    label = window.device_label
    assert label.textFormat() == Qt.TextFormat.PlainText and label.text().startswith(markup)
    assert "&lt;font" in label.toolTip() and "<font" not in label.toolTip()
    tip = plain_tip(f"doc: {markup}\nsecond line")
    assert "<font" not in tip and "<img" not in tip and "<br>" in tip and "HACKED" in tip
    assert plain_tip("a < b\nc") == "a < b\nc"  # what Qt shows as written stays as it is


def test_a_session_of_a_folders_template_named_like_a_shipped_one_shows_no_shipped_source(tmp_path):
    """The source view (and Compare) showed the shipped vector_add as "vector_add.cu rendered for
    this config" for a session that tuned a folder's own vector_add, without a word."""
    import dataclasses

    from workbench.core.domain.session import load_session
    from workbench.gui.source_view import render_source
    from workbench.runner.controller import RunRequest, run_to_end

    run_to_end(RunRequest(kernel="vector_add", backend="sim", strategy="random", budget=2,
                          backend_options={"compile": "estimate"}), tmp_path / "sim.json")
    session = load_session(tmp_path / "sim.json")
    mine, empty = tmp_path / "mine", tmp_path / "empty"
    mine.mkdir()
    empty.mkdir()
    shipped = Path(__file__).resolve().parents[2] / "kernels"
    (mine / "vector_add.py").write_text((shipped / "vector_add.py").read_text())
    (mine / "vector_add.cu").write_text("// my own vector_add\n")
    (empty / "vector_add.cu").write_text("// a source alone: no template of that name\n")
    for folders, shown in (([str(mine)], False), ([str(empty)], True)):
        named = dataclasses.replace(session, backend={
            **session.backend, "options": {**session.backend["options"], "kernel_dirs": folders}})
        text, note = render_source(named, named.trials[0].config)
        assert ("__global__" in text) is shown, note
        assert shown or (f"comes from the folder {str(mine)!r}, which is not loaded" in note), note


def test_the_source_shown_says_when_it_is_not_the_code_the_trials_ran(cli, tmp_path):
    """An edited python benchmark and a template opened from another folder (another machine's
    copy, an edited draft) were shown as the session's code, captioned as such: the command line
    refused to continue the one and its export warned of the other. A benchmark no longer there
    was "source file not found", without its path or the way back."""
    import shutil

    from workbench.core.domain.session import load_session
    from workbench.gui.source_view import render_source

    bench = tmp_path / "b.py"
    bench.write_text("SPACE = {'a': [1, 2]}\ndef measure(c):\n    return {'latency_ms': 0.01 * c['a']}\n")
    out = tmp_path / "b.json"
    assert cli("tune", bench, "--strategy", "grid", "--budget", "2", "--quiet", "--out", out).returncode == 0
    session = load_session(out)
    assert render_source(session, session.trials[0].config)[1] == f"python benchmark {bench} (config passed to measure())"
    bench.write_text("SPACE = {'a': [1, 2]}\ndef measure(c):\n    return {'latency_ms': 0.02 * c['a']}\n")
    text, note = render_source(session, session.trials[0].config)
    assert "0.02" in text and note.endswith("(the benchmark changed since this session was measured: this is not the "
                                            "code its trials ran)"), note
    bench.unlink()
    assert render_source(session, session.trials[0].config) == (
        "", f"python benchmark {bench} is not there: its source is not shown (tune NEW_PLACE/NAME.py --resume "
            "SESSION records where it is now)")
    # a template of one's own, opened from another folder holding other code of it
    home, other = tmp_path / "home", tmp_path / "other"
    examples = Path(__file__).resolve().parents[2] / "docs" / "examples" / "saxpy"
    shutil.copytree(examples, home)
    shutil.copytree(examples, other)
    tuned = tmp_path / "saxpy.json"
    assert cli("tune", "saxpy", "--kernel-dir", home, "--backend", "sim", "--resources", "estimated", "--budget", "2",
               "--executor", "inline", "--quiet", "--out", tuned).returncode == 0
    session = load_session(tuned)
    assert "not the code" not in render_source(session, session.trials[0].config, opened={"saxpy": str(other)})[1]
    source = next(other.glob("*.cu"))
    source.write_text(source.read_text().replace("out[i] = a * x[i] + y[i]", "out[i] = a * x[i] * 2.0f + y[i]"))
    text, note = render_source(session, session.trials[0].config, opened={"saxpy": str(other)})
    assert "2.0f" in text and note == (f"saxpy.cu rendered for this config (not the code its trials ran: the template "
                                       f"in {other} is not the one this session measured)"), note


def test_opening_a_session_shows_only_a_python_file_and_reads_a_bounded_amount_of_it(cli, tmp_path):
    """A session names the file its source view shows: one naming /proc/self/environ or a key file
    showed its contents on opening (and in a screenshot); one whose benchmark imported a megabyte
    of short statements from beside it held the window for 18 s and 1.5 GB to compare the code."""
    import dataclasses

    from workbench.core.domain.session import load_session
    from workbench.gui.source_view import MAX_PARSED_BYTES, render_source

    bench = tmp_path / "b.py"
    bench.write_text("import helper\nSPACE = {'a': [1, 2]}\ndef measure(c):\n    return {'latency_ms': helper.K * c['a']}\n")
    (tmp_path / "helper.py").write_text("K = 0.01\n")
    out = tmp_path / "b.json"
    assert cli("tune", bench, "--strategy", "grid", "--budget", "2", "--quiet", "--out", out).returncode == 0
    session = load_session(out)

    def naming(path) -> object:
        return dataclasses.replace(session, backend={**session.backend, "options": {**session.backend["options"],
                                                                                      "path": str(path)}})
    secret = tmp_path / "secret.txt"
    secret.write_text("TOKEN=hunter2\n")
    (tmp_path / "link.py").symlink_to(secret)
    for path in (secret, tmp_path / "link.py"):
        text, note = render_source(naming(path), session.trials[0].config)
        assert text == "" and note == f"python benchmark {path}: not a .py file, so it is not shown", note
    latin = tmp_path / "latin.py"
    latin.write_bytes("# caf\u00e9\n".encode("latin-1"))
    assert render_source(naming(latin), session.trials[0].config) == (
        "", f"python benchmark {latin}: not UTF-8 text, so it is not shown")
    # a coding line naming another encoding is said as such: the text is not UTF-8 by its own word
    latin.write_bytes(b"# -*- coding: ascii -*-\n# caf\xe9\n")
    assert render_source(naming(latin), session.trials[0].config) == (
        "", f"python benchmark {latin}: not ascii text, the encoding its coding line names, so it is not shown")
    latin.write_bytes(b"# -*- coding: cp1252 -*-\n# \x81\x90\n")  # (a codec Python calls "charmap")
    assert render_source(naming(latin), session.trials[0].config)[1].endswith(
        ": not cp1252 text, the encoding its coding line names, so it is not shown")
    latin.write_bytes(b"# -*- coding: no-such-codec -*-\nx = 1\n")
    assert render_source(naming(latin), session.trials[0].config) == (
        "", f"python benchmark {latin}: its coding line names an encoding Python does not read, so it is not shown")
    (tmp_path / "helper.py").write_text("K = 0.01\n" + "x = 1\n" * (MAX_PARSED_BYTES // 6 + 1))
    text, note = render_source(session, session.trials[0].config)
    assert "import helper" in text and note.endswith(
        "(not compared with the code its trials ran: too much Python beside it to read here)"), note


def test_a_benchmark_in_the_encoding_its_coding_line_names_is_shown_and_a_dangling_link_is_no_module(cli, tmp_path):
    """The view read every benchmark as UTF-8 and refused a Latin-1 one that says so in its coding
    line, which Python runs; a dangling link named like a module beside it counted in its
    identity, which Python's import skips, so the session was called changed."""
    import dataclasses

    from workbench.backends.python import _code_hash
    from workbench.core.domain.session import load_session
    from workbench.gui.source_view import render_source

    bench = tmp_path / "b.py"
    bench.write_bytes("# -*- coding: latin-1 -*-\n# caf\u00e9\nimport gone\nSPACE = {'a': [1, 2]}\n"
                      "def measure(c):\n    return {'latency_ms': 0.01 * c['a']}\n".encode("latin-1"))
    alone = _code_hash(bench.read_bytes(), tmp_path)
    (tmp_path / "gone.py").symlink_to(tmp_path / "nowhere.py")
    assert _code_hash(bench.read_bytes(), tmp_path) == alone
    out = tmp_path / "s.json"
    session_bench = tmp_path / "run.py"
    session_bench.write_text("SPACE = {'a': [1, 2]}\ndef measure(c):\n    return {'latency_ms': 0.01 * c['a']}\n")
    assert cli("tune", session_bench, "--strategy", "grid", "--budget", "1", "--quiet", "--out", out).returncode == 0
    session = load_session(out)
    named = dataclasses.replace(session, source_hash=alone, backend={
        **session.backend, "options": {**session.backend["options"], "path": str(bench)}})
    text, note = render_source(named, session.trials[0].config)
    assert "caf\u00e9" in text and note == f"python benchmark {bench} (config passed to measure())", note
