"""The Portability tab: the open session plus added files, the report under the sliders' objective."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication

from workbench.core.errors import WorkbenchError
from workbench.core.domain.measurement import Measurement, Status, Trial
from workbench.core.domain.session import Session, load_session, save_session
from workbench.core.domain.space import SearchSpace, Slot
from workbench.gui.portability_view import heat_rgb
from workbench.gui.text import window_message

SPACE = SearchSpace([Slot("block", (32, 64, 128), "launch")])


def recording(device: str, latencies: dict[int, float | None]) -> Session:
    session = Session(kernel="k", kind="recording", space=SPACE, device={"name": device, "recorded": True})
    for i, (block, latency) in enumerate(latencies.items()):
        m = (Measurement(Status.OK, {"latency_ms": latency, "memory_mb": 10.0 * block}) if latency is not None
             else Measurement.failure(Status.RUNTIME_ERROR, "failed"))
        session.add(Trial(i, SPACE.config({"block": block}), m))
    return session


def test_heat_colours_run_from_red_to_green() -> None:
    assert heat_rgb(None) == (235, 235, 235)
    red, yellow, green = heat_rgb(0.0), heat_rgb(0.75), heat_rgb(1.0)
    assert red[0] > red[1] and green[1] > green[0] and yellow[0] > 200 and yellow[1] > 200
    assert heat_rgb(1.7) == green  # a predicted cell above 100% is as green as 100%


def test_portability_tab_compares_the_open_session_with_added_files(window, tmp_path: Path, qtbot) -> None:
    a = tmp_path / "a.json"
    b = tmp_path / "b.json"
    save_session(recording("GPU A", {32: 1.0, 64: 1.25, 128: 2.0}), a)
    save_session(recording("GPU B", {32: 4.0, 64: 2.5, 128: 2.0}), b)
    window.open_session(a)
    view = window.portability
    window.bottom_tabs.setCurrentWidget(view)
    assert "add sessions" in view.heading.text().lower() and view.report is None
    # nothing to compare: no empty report below, and the heading saying what to do is whole
    QApplication.processEvents()
    assert not view.report_pane.isVisible()
    assert view.heading.height() >= view.heading.heightForWidth(view.heading.width())
    # the open session alone: nothing for Remove or Clear to take out (both were enabled)
    view.files.setCurrentRow(0)
    assert not view.remove_button.isEnabled() and not view.clear_button.isEnabled()
    view.add_sessions([str(b)])
    assert view.files.count() == 2 and "GPU B" in view.files.item(1).text()
    assert view.clear_button.isEnabled() and not view.remove_button.isEnabled()
    view.files.setCurrentRow(1)
    assert view.remove_button.isEnabled()
    view.files.setCurrentRow(0)
    assert not view.remove_button.isEnabled()
    assert view.report_pane.isVisible()
    rows = view.table_texts()
    # the worst case first (after five GPUs' columns it was out of sight at 1440 px), then each GPU
    assert view.table.horizontalHeaderItem(0).text() == "worst"
    assert [r[:3] for r in rows] == [["50.0%", "100.0%", "50.0%"], ["50.0%", "50.0%", "100.0%"]]
    assert "block=32" in rows[0][3]
    # 64: 0.8 on both -> the portable pick
    assert "worst 80.0%" in view.portable.text() and "block=64" in view.portable.text()

    # the objective in force decides: block 64 needs 640 MB, over a 500 MB bound it is out
    window.model.set_constraints(max_memory_mb=500.0)
    qtbot.waitUntil(lambda: view.report is not None and view.report.objective.endswith("memory_mb <= 500"), timeout=5000)
    assert view.report.portable is not None and view.report.portable.config["block"] == 32

    with pytest.raises(WorkbenchError):
        view.add_sessions([str(tmp_path / "missing.json")])
    assert view.files.count() == 2  # nothing added by a failed add
    view.files.setCurrentRow(1)
    view.remove_button.click()
    assert view.files.count() == 1 and view.report is None and not view.report_pane.isVisible()
    assert not view.remove_button.isEnabled() and not view.clear_button.isEnabled()


def test_sessions_that_do_not_go_together_say_why(window, tmp_path: Path) -> None:
    other = recording("GPU B", {32: 1.0})
    other.kernel = "other"
    save_session(recording("GPU A", {32: 1.0}), tmp_path / "a.json")
    save_session(other, tmp_path / "b.json")
    window.open_session(tmp_path / "a.json")
    view = window.portability
    window.bottom_tabs.setCurrentWidget(view)
    save_session(recording("GPU C", {32: 2.0}), tmp_path / "c.json")
    view.add_sessions([str(tmp_path / "c.json")])
    assert view.report is not None and view.files.count() == 2
    # refused, and nothing changes: the file was listed and the report emptied until removed by hand
    with pytest.raises(WorkbenchError, match="kernel 'other' differs from"):
        view.add_sessions([str(tmp_path / "b.json")])
    with pytest.raises(WorkbenchError, match="c.json is compared already"):
        view.add_sessions([str(tmp_path / "c.json")])
    assert view.files.count() == 2 and view.report is not None and len(view.report.devices) == 2
    # a Kernel Tuner cache is named as one, with the window's own way to import it
    cache = tmp_path / "cache.json"
    cache.write_text((Path(__file__).parents[1] / "fixtures" / "kt_cache_small.json").read_text())
    with pytest.raises(WorkbenchError) as refused:
        view.add_sessions([str(cache)])
    assert window_message(refused.value).endswith("import it with File > Import Kernel Tuner cache...")
    assert str(refused.value).endswith("import it: python main.py import-kt FILE --out S.json")


def test_sweeps_are_compared_at_the_size_typed(window, tmp_path: Path) -> None:
    sessions = []
    for device, slow in (("GPU A", 64), ("GPU B", 32)):
        session = recording(device, {32: 1.0, 64: 1.0})
        for i, block in enumerate((32, 64)):
            session.add(Trial(5 + i, SPACE.config({"block": block}),
                              Measurement(Status.OK, {"latency_ms": 2.0 if block == slow else 1.0}), problem={"n": 64}))
        session.problem = {"n": 8}
        path = tmp_path / f"{device[-1]}.json"
        save_session(session, path)
        sessions.append(str(path))
    window.open_session(sessions[0])
    view = window.portability
    window.bottom_tabs.setCurrentWidget(view)
    view.add_sessions(sessions[1:])
    assert view.report is not None and view.report.problem == {"n": 8}
    view.at.setText("n=64")
    view.refresh()
    assert view.report is not None and view.report.problem == {"n": 64}
    assert view.table_texts()[0][1:3] == ["100.0%", "50.0%"]  # A's best at 64 (block 32) is slow on B
    assert "n=64" in view.heading.text()
    view.at.setText("n=3")
    view.refresh()
    assert view.report is None and "no trials at problem" in view.heading.text()
    # the tab has the field the refusal means: it names it, not the command line's --at
    assert "the at-size field" in view.heading.text() and "--at" not in view.heading.text()
    view.at.setText("m=3")
    view.refresh()
    assert "m in the at-size field: not a problem parameter" in view.heading.text() and "--at" not in view.heading.text()
    view.at.setText("n=abc")  # what is wrong with it, as --at says: not "no trials at problem {'n': 'abc'}"
    view.refresh()
    assert "at size n=abc: n is a number" in view.heading.text() and "no trials" not in view.heading.text()


@pytest.fixture
def own_folder_sessions(cli, tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    """A folder holding a declarative template (the saxpy example) beside a Python file that marks
    when it runs, and simulated sessions of the template on two GPUs."""
    import shutil

    folder = tmp_path / "F"
    shutil.copytree(Path(__file__).resolve().parents[2] / "docs" / "examples" / "saxpy", folder)
    (folder / "payload.py").write_text(f"open({str(tmp_path / 'RAN')!r}, 'w').close()\n")
    sessions = {}
    for gpu in ("H200", "T4"):
        sessions[gpu] = tmp_path / f"{gpu}.json"
        done = cli("tune", "saxpy", "--kernel-dir", folder, "--backend", "sim", "--gpu-model", gpu, "--resources",
                   "estimated", "--budget", "6", "--workers", "1", "--quiet", "--out", sessions[gpu])
        assert done.returncode == 0, done.stderr
    return folder, sessions


def test_the_tab_predicts_the_kernel_lists_declarative_template(window, own_folder_sessions, tmp_path) -> None:
    """The simulated GPUs predicted shipped templates only, so a template of one's own showed "-"
    where a shipped one showed its prediction. The window's declarative template is predicted now."""
    folder, sessions = own_folder_sessions
    window.toolbar.kernel_folders["saxpy"] = str(folder)
    window.open_session(sessions["H200"])
    window.portability.add_sessions([str(sessions["T4"])])
    report = window.portability.report
    assert report is not None and not any("no prediction" in note for note in report.notes), report.notes
    assert not (tmp_path / "RAN").exists()


@pytest.mark.parametrize("named", ["payload", "nosuch"])
def test_a_session_naming_another_template_never_runs_a_folders_python(window, own_folder_sessions, tmp_path,
                                                                       named) -> None:
    """A session whose backend named another template than its kernel ("payload") made the tab
    import that file from the kernel list's folder, and an unknown one made the lookup's error
    list the folder by importing every Python file in it: opening a file ran code."""
    folder, sessions = own_folder_sessions
    session = load_session(sessions["T4"])
    session.backend = {**session.backend, "options": {**session.backend["options"], "kernel": named}}
    crafted = tmp_path / "crafted.json"
    save_session(session, crafted)
    window.toolbar.kernel_folders["saxpy"] = str(folder)
    window.open_session(sessions["H200"])
    window.portability.add_sessions([str(crafted)])
    window.portability.refresh()
    assert not (tmp_path / "RAN").exists()
    assert any(f"names template {named!r}, not the session's kernel 'saxpy'" in note
               for note in window.portability.report.notes)


def test_a_file_that_would_leave_no_report_or_is_the_open_session_is_refused(window, tmp_path: Path) -> None:
    """An empty session or one with nothing feasible on its GPU was added, and its error then stood
    over every later change until the row was removed; the open session's own file was added as a
    fourth row, its trials counted twice."""
    paths = {}
    for name, latencies in (("a", {32: 1.0, 64: 1.25, 128: 2.0}), ("b", {32: 4.0, 64: 2.5, 128: 2.0}),
                            ("failed", {32: None, 64: None}), ("empty", {})):
        paths[name] = tmp_path / f"{name}.json"
        save_session(recording(f"GPU {name}", latencies), paths[name])
    window.open_session(paths["a"])
    view = window.portability
    window.bottom_tabs.setCurrentWidget(view)
    with pytest.raises(WorkbenchError, match=r"a\.json is compared already \(the open session\)"):
        view.add_sessions([str(paths["a"])])
    os.link(paths["a"], tmp_path / "same_as_a.json")  # the same file under another name
    with pytest.raises(WorkbenchError, match=r"same_as_a\.json is compared already \(the open session\)"):
        view.add_sessions([str(tmp_path / "same_as_a.json")])
    view.add_sessions([str(paths["b"])])
    os.link(paths["b"], tmp_path / "same_as_b.json")
    with pytest.raises(WorkbenchError, match=r"same_as_b\.json is compared already$"):
        view.add_sessions([str(tmp_path / "same_as_b.json")])
    for name in ("failed", "empty"):
        with pytest.raises(WorkbenchError, match=f"{name}.json not added"):
            view.add_sessions([str(paths[name])])
    assert view.files.count() == 2 and view.report is not None and len(view.table_texts()) == 2


def test_an_open_sweep_is_compared_at_the_size_the_window_shows(window, tmp_path: Path) -> None:
    """The report compared each session's own problem, which a sweep may never have measured,
    while the window showed another size."""
    sizes = ({"n": 10}, {"n": 20})

    def sweep(device: str, scale: float) -> Session:
        session = Session(kernel="k", kind="recording", space=SPACE, device={"name": device, "recorded": True},
                          problem={"n": 99})
        for i, (problem, block) in enumerate((p, b) for p in sizes for b in (32, 64)):
            latency = scale * (1.0 if block == 32 else 2.0) * problem["n"]
            session.add(Trial(i, SPACE.config({"block": block}), Measurement(Status.OK, {"latency_ms": latency}),
                              problem=dict(problem)))
        return session

    save_session(sweep("GPU A", 1.0), tmp_path / "a.json")
    save_session(sweep("GPU B", 2.0), tmp_path / "b.json")
    window.open_session(tmp_path / "a.json")
    shown = window.model.shown_problem()
    assert shown is not None and shown["n"] in (10, 20)
    view = window.portability
    window.bottom_tabs.setCurrentWidget(view)
    view.add_sessions([str(tmp_path / "b.json")])
    assert view.report is not None and view.report.problem["n"] == shown["n"]
    # the size compared while the field is empty: the one shown, not the session's own (never measured)
    assert view.at.placeholderText() == f"at size: n={shown['n']}"


def test_an_added_file_opened_later_is_counted_once_and_a_link_loop_is_one_line(window, tmp_path: Path) -> None:
    """Added before it was opened, a file's trials were counted twice (Portability) and its curve
    drawn twice (Compare); a symbolic link to itself raised out of both buttons."""
    paths = {}
    for name, latencies in (("a", {32: 1.0, 64: 1.25, 128: 2.0}), ("b", {32: 4.0, 64: 2.5, 128: 2.0}),
                            ("c", {32: 3.0, 64: 1.0, 128: 2.5})):
        paths[name] = tmp_path / f"{name}.json"
        save_session(recording(f"GPU {name}", latencies), paths[name])
    window.open_session(paths["c"])
    view = window.portability
    window.bottom_tabs.setCurrentWidget(view)
    view.add_sessions([str(paths["a"]), str(paths["b"])])
    window.compare.add_session(str(paths["a"]))
    window.open_session(paths["a"])
    view.refresh()
    assert view.report is not None and sorted(b.trials for b in view.report.bests) == [3, 3]
    assert view.files.item(1).text() == "a.json: the open session now, counted once"
    window.compare._draw_curves()
    assert len(window.compare.curves) == 1  # the open session's
    (tmp_path / "loop.json").symlink_to(tmp_path / "loop.json")
    for add in (lambda: view.add_sessions([str(tmp_path / "loop.json")]),
                lambda: window.compare.add_session(str(tmp_path / "loop.json"))):
        with pytest.raises(WorkbenchError, match="loop.json"):
            add()


def test_a_file_is_not_refused_for_what_the_objective_does_to_the_open_session(window, tmp_path: Path) -> None:
    save_session(recording("GPU A", {32: 1.0, 64: 1.25}), tmp_path / "a.json")
    save_session(recording("GPU B", {32: 4.0, 64: 2.5}), tmp_path / "b.json")
    window.open_session(tmp_path / "a.json")
    window.model.set_constraints(max_memory_mb=1.0)  # nothing is feasible anywhere
    view = window.portability
    view.add_sessions([str(tmp_path / "b.json")])
    assert view.files.count() == 2 and view.report is None and "nothing feasible" in view.heading.text()


def test_adding_a_file_computes_the_report_once(window, tmp_path: Path, monkeypatch) -> None:
    """The check that refuses a file the report cannot use makes the report the tab then shows
    (over recorded landscapes a report takes seconds: adding one paid for it twice)."""
    import workbench.gui.portability_view as portability_view

    a, b, c = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    save_session(recording("GPU A", {32: 1.0, 64: 1.25, 128: 2.0}), a)
    save_session(recording("GPU B", {32: 4.0, 64: 2.5, 128: 2.0}), b)
    save_session(recording("GPU C", {32: 3.0, 64: 1.0, 128: 2.0}), c)
    window.open_session(a)
    view = window.portability
    window.bottom_tabs.setCurrentWidget(view)
    made: list[list[str]] = []
    real = portability_view.portability_report

    def counted(sessions, labels, *args, **kwargs):
        made.append(list(labels))
        return real(sessions, labels, *args, **kwargs)

    monkeypatch.setattr(portability_view, "portability_report", counted)
    view.add_sessions([str(b)])
    assert made == [["open session", "b.json"]] and view.report is not None
    view.add_sessions([str(c)])
    assert made[1:] == [["open session", "b.json", "c.json"]]
    assert [r[1:4] for r in view.table_texts()][2] == ["80.0%", "80.0%", "100.0%"]  # GPU C's best, block 64


def test_a_dragged_slider_makes_a_report_per_period_not_per_step(window, qtbot, tmp_path: Path, monkeypatch) -> None:
    """Every step of a weight or limit slider made the whole report on the GUI thread: over three
    recorded landscapes, 350 to 500 ms a step, the drag frozen. Steps that come within a period
    make one report, of the objective in force at its end."""
    import workbench.gui.portability_view as portability_view

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    save_session(recording("GPU A", {32: 1.0, 64: 1.25, 128: 2.0}), a)
    save_session(recording("GPU B", {32: 4.0, 64: 2.5, 128: 2.0}), b)
    window.open_session(a)
    view = window.portability
    window.bottom_tabs.setCurrentWidget(view)
    view.add_sessions([str(b)])
    made: list[object] = []
    real = portability_view.portability_report

    def counted(*args, **kwargs):
        made.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(portability_view, "portability_report", counted)
    for limit in range(20):
        window.model.set_constraints(max_memory_mb=1000.0 + limit)
    qtbot.waitUntil(lambda: view.report is not None and view.report.objective.endswith("memory_mb <= 1019"),
                    timeout=5000)
    assert len(made) == 1

def test_a_sweep_added_beside_a_single_size_session_is_compared_at_its_size(window, tmp_path: Path) -> None:
    """A sweep's own problem is one of its sizes; beside a session of one size it is compared at
    that size (it was refused as another problem unless the at-size field was filled)."""
    single, sweep = tmp_path / "single.json", tmp_path / "sweep.json"
    one = recording("GPU A", {32: 1.0, 64: 2.0})
    one.problem = {"n": 64}
    save_session(one, single)
    swept = recording("GPU B", {32: 9.0, 64: 9.0})  # at n=8, its own problem
    swept.problem = {"n": 8}
    for i, (block, latency) in enumerate(((32, 2.0), (64, 1.0))):
        swept.add(Trial(2 + i, SPACE.config({"block": block}), Measurement(Status.OK, {"latency_ms": latency}),
                        problem={"n": 64}))
    save_session(swept, sweep)
    window.open_session(single)
    view = window.portability
    window.bottom_tabs.setCurrentWidget(view)
    view.add_sessions([str(sweep)])
    assert view.report is not None and view.report.problem == {"n": 64}
    assert [r[1:3] for r in view.table_texts()] == [["100.0%", "50.0%"], ["50.0%", "100.0%"]]


def _three_gpus_compared(window, tmp_path: Path, *devices: str):
    """The Portability tab in front, comparing recordings on ``devices`` (the first one opened)."""
    paths = []
    for name, latencies in zip(devices, ({32: 1.0, 64: 1.25, 128: 2.0}, {32: 4.0, 64: 2.5, 128: 2.0},
                                         {32: 3.0, 64: 2.0, 128: 2.5})):
        paths.append(tmp_path / f"{len(paths)}.json")
        save_session(recording(name, latencies), paths[-1])
    window.open_session(paths[0])
    view = window.portability
    window.bottom_tabs.setCurrentWidget(view)
    view.add_sessions([str(p) for p in paths[1:]])
    return view


def test_every_gpus_row_is_in_sight_in_the_windows_lower_half(window, tmp_path: Path, qtbot) -> None:
    """At 1440 x 900 the file list sat above the report and the table was a 28-pixel sliver showing
    one GPU's row of three; the row headers, named in full, took the table's width from its cells."""
    view = _three_gpus_compared(window, tmp_path, "Simulated NVIDIA H200", "Simulated NVIDIA A100 SXM4 40GB",
                                "NVIDIA Tesla T4")
    QApplication.processEvents()
    table = view.table
    shown = table.viewport().height()
    assert shown >= sum(table.rowHeight(r) for r in range(3))  # every row, no scrolling inside the table
    assert [table.verticalHeaderItem(r).text() for r in range(3)] == [
        "[1] best of H200", "[2] best of A100 SXM4 40GB", "[3] best of Tesla T4"]
    assert "on 3 GPUs (all recordings) at" in view.heading.text()  # where every row's timings come from, once
    assert table.verticalHeader().width() < table.width() / 2  # the cells keep most of it
    assert "Simulated NVIDIA A100 SXM4 40GB" in table.verticalHeaderItem(1).toolTip()


def test_rows_of_timings_of_different_kinds_are_each_tagged(window, tmp_path: Path) -> None:
    """The table never said which GPU's figures were replayed, recorded or simulated: only the file
    list did, cut off out of sight at 1440 and 1920 px, where show --portability tags every device."""
    paths = [tmp_path / "replayed.json", tmp_path / "simulated.json"]
    for path, device, latencies in zip(paths, ({"name": "NVIDIA A100", "replayed": True},
                                               {"name": "Simulated NVIDIA H200", "simulated": True}),
                                       ({32: 1.0, 64: 1.25, 128: 2.0}, {32: 4.0, 64: 2.5, 128: 2.0})):
        session = recording(device["name"], latencies)
        session.device = device
        save_session(session, path)
    window.open_session(paths[0])
    view = window.portability
    window.bottom_tabs.setCurrentWidget(view)
    view.add_sessions([str(paths[1])])
    assert [view.table.verticalHeaderItem(r).text() for r in range(2)] == [
        "[1] best of A100 [replayed]", "[2] best of H200 [SIMULATED]"]
    assert "(all" not in view.heading.text()


@pytest.mark.app_style_sheet  # (the header takes its size from the application's style sheet, as in the program)
def test_the_table_follows_a_zoom_and_names_alike_gpus_in_full(window, tmp_path: Path, qtbot) -> None:
    """A zoom refitted the table with the previous zoom's header (the window sets its font before
    the style sheet the header takes its size from): the last row was cut. Short names dropped
    "Simulated" even where that was all that told a recorded GPU from a simulated one."""
    view = _three_gpus_compared(window, tmp_path, "NVIDIA H200", "Simulated NVIDIA H200", "NVIDIA Tesla T4")
    table = view.table
    assert [table.verticalHeaderItem(r).text() for r in range(3)] == [
        "[1] best of NVIDIA H200", "[2] best of Simulated NVIDIA H200", "[3] best of NVIDIA Tesla T4"]
    for factor in (1.5, 1.0):
        window.zoom.set_factor(factor)
        qtbot.waitUntil(lambda: table.viewport().height() >= sum(table.rowHeight(r) for r in range(3))
                        and table.horizontalHeader().font().pointSizeF() == view.font().pointSizeF(), timeout=5000)
        QApplication.processEvents()
        assert not table.verticalScrollBar().isVisible()


def test_a_predicted_cell_is_marked_with_a_star_the_first_note_explains(window, cli, tmp_path: Path) -> None:
    """"100.0% (predicted)" made a table of three GPUs wider than the tab at 1440 px, its worst-case
    column out of sight: a predicted cell reads "100.0%*", in italics, and the first note says so."""
    paths = []
    for gpu, seed in (("H200", "1"), ("T4", "2")):
        path = tmp_path / f"{gpu}.json"
        assert cli("tune", "transpose", "--backend", "sim", "--gpu-model", gpu, "--resources", "estimated",
                   "--budget", "4", "--seed", seed, "--executor", "inline", "--quiet", "--out", path).returncode == 0
        paths.append(path)
    window.open_session(paths[0])
    view = window.portability
    view.add_sessions([str(paths[1])])
    assert view.report is not None
    texts = [text for row in view.table_texts() for text in row]
    assert any(c.source == "predicted" for row in view.report.matrix for c in row), texts  # (these seeds' bests differ)
    assert any(text.endswith("%*") for text in texts) and not any("(predicted)" in text for text in texts)
    assert "(predicted)" not in view.portable.text() and view.notes.text().startswith("* predicted by the simulator")


def test_the_size_field_names_every_size_parameter_compared(window, cli, tmp_path: Path) -> None:
    """It said "at size: m=4096" for sgemm's m=4096, n=4096, k=4096: one of the three."""
    session = tmp_path / "s.json"
    assert cli("tune", "sgemm", "--backend", "sim", "--resources", "estimated", "--budget", "2",
               "--executor", "inline", "--quiet", "--out", session).returncode == 0
    window.open_session(session)
    view = window.portability
    window.bottom_tabs.setCurrentWidget(view)
    view.refresh()
    assert view.at.placeholderText() == "at size: m=4096, n=4096, k=4096"


def test_the_slots_the_gpus_best_configs_differ_in_come_first_in_their_cells(window, tmp_path: Path) -> None:
    """A narrow config column cut each config after its first slots: two GPUs' bests that differed
    only in the last slot read the same."""
    space = SearchSpace([Slot("block", (32, 64), "launch"), Slot("tile", (1, 2), "memory"),
                         Slot("unroll", (1, 4), "compute")])
    paths = []
    for name, fastest in (("GPU A", {"block": 64, "tile": 2, "unroll": 1}), ("GPU B", {"block": 32, "tile": 2, "unroll": 4})):
        session = Session(kernel="k", kind="recording", space=space, device={"name": name, "recorded": True})
        for i, config in enumerate(space):
            latency = 1.0 if config.to_dict() == fastest else 2.0 + i
            session.add(Trial(i, config, Measurement(Status.OK, {"latency_ms": latency})))
        paths.append(tmp_path / f"{len(paths)}.json")
        save_session(session, paths[-1])
    window.open_session(paths[0])
    view = window.portability
    window.bottom_tabs.setCurrentWidget(view)
    view.add_sessions([str(paths[1])])
    configs = [row[-1] for row in view.table_texts()]
    # the slot that tells them apart, then the other they differ in, then the one they share
    assert configs == ["block=64, unroll=1, tile=2", "block=32, unroll=4, tile=2"], configs


def test_the_slots_that_tell_three_or_more_configs_apart_are_chosen_pair_by_pair() -> None:
    """Three GPUs' bests where every slot differs somewhere, two of them only in the last slot: that
    slot stayed last, and those two rows read the same in a narrow column."""
    from workbench.gui.portability_view import telling_apart

    configs = [dict(zip("abcde", values)) for values in ((32, 4, 1, 3, 1), (256, 1, 2, 4, 0), (256, 1, 2, 4, 1))]
    assert telling_apart(configs) == ["a", "e"]
    assert telling_apart(configs[:1]) == [] and telling_apart([]) == []
    assert telling_apart([{"a": 1, "b": 2}, {"a": 1, "b": 2}]) == []  # alike: nothing tells them apart
