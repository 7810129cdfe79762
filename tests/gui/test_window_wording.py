"""Messages the window shows name its controls, not the command line's flags.

A refusal the run controller or the exporter words for the command line ("give a larger --budget",
"use --format header or json") told someone in the window to use a flag the window has no place
for. The error names the setting; the window words it by the control (see ``workbench.core.errors``).
"""

from __future__ import annotations

import re
from pathlib import Path

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
    assert "already has its 2 evaluations" in message and not window.running
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
    recording.write_text((Path(__file__).resolve().parents[1] / "fixtures" / "kt_cache_small.json").read_text())
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
