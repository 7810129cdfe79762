"""File > Export best config: exports what the window recommends under the sliders in force."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.core.errors import WorkbenchError

BENCH = str(Path(__file__).with_name("gui_bench.py"))


def test_export_best_follows_the_constraints_in_force(window, qtbot, tmp_path):
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({"kernel": BENCH, "backend": "python", "strategy": "random", "budget": 30, "seed": 1})
    model = window.model
    best_before = model.trials[model.ranking.best]
    out = tmp_path / "best.json"
    window.export_best(str(out))
    assert json.loads(out.read_text())["config"] == best_before.config.to_dict()
    # a memory limit under the best's memory moves the recommendation, and the export with it
    control = window.objective_panel.limits["max_memory_mb"]
    control.enabled.setChecked(True)
    control.spin.setValue(best_before.metric("memory_mb") - 0.5)
    best_after = model.trials[model.ranking.best]
    assert best_after.config != best_before.config
    window.export_best(str(out))
    assert json.loads(out.read_text())["config"] == best_after.config.to_dict()
    # nothing feasible: refused with the reason, and the file is left as it was
    latency = window.objective_panel.limits["max_latency_ms"]
    latency.slider.setValue(0)
    assert model.ranking.n_feasible == 0
    before = out.read_text()
    with pytest.raises(WorkbenchError):
        window.export_best(str(out))
    assert out.read_text() == before
    with pytest.raises(WorkbenchError, match=r"\.h \(or \.cuh, \.hpp\), \.cu"):
        window.export_best(str(tmp_path / "best.txt"))


def test_problem_hint_follows_the_session_shown(window, tmp_path):
    from workbench.runner.plan import make_backend_spec
    from workbench.runner.controller import RunRequest, run_to_end

    window.toolbar.kernel.setCurrentIndex(window.toolbar.kernel.findText("conv2d"))  # the window opens on vector_add
    assert "image_width" in window.toolbar.problem.placeholderText()
    spec = make_backend_spec("reduce_sum", "sim", extra={"compile": "estimate"}, problem={"n": 4096})
    path = tmp_path / "reduce.json"
    run_to_end(RunRequest(spec=spec, strategy="random", budget=3), path)
    window.open_session(str(path))
    hint = window.toolbar.problem.placeholderText()
    assert "n=4096" in hint and "image_width" not in hint


def test_problem_hint_outlives_a_run_and_a_backend_switched_back(window, qtbot):
    """Every run's end (and a backend switched to replay and back) reset the hint to a made-up
    'problem, e.g. n=1048576', which is no template's default."""
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({"kernel": "conv2d", "backend": "sim", "strategy": "random", "budget": 2,
                          "options": {"compile": "estimate"}})
    assert "image_width" in window.toolbar.problem.placeholderText()
    backend = window.toolbar.backend
    backend.setCurrentIndex(backend.findData("replay"))
    backend.setCurrentIndex(backend.findData("sim"))
    assert "image_width" in window.toolbar.problem.placeholderText()
    # the hint set during a run (a sweep moving to its next size) enables no control
    window.toolbar.set_running(True)
    window.toolbar.show_problem_hint("n=65536")
    assert not window.toolbar.kernel.isEnabled() and not window.toolbar.sizes.isEnabled()
    assert window.toolbar.problem.placeholderText() == "n=65536"
    window.toolbar.set_running(False)


def test_screenshot_size_can_be_chosen(monkeypatch):
    from workbench.gui.app import SCREEN_SIZE, _screenshot_size

    monkeypatch.delenv("KERNEL_WORKBENCH_SCREEN_SIZE", raising=False)
    assert _screenshot_size() == SCREEN_SIZE
    monkeypatch.setenv("KERNEL_WORKBENCH_SCREEN_SIZE", "1920x1080")
    assert _screenshot_size() == (1920, 1080)
    monkeypatch.setenv("KERNEL_WORKBENCH_SCREEN_SIZE", " 1280X720 ")
    assert _screenshot_size() == (1280, 720)
    monkeypatch.setenv("KERNEL_WORKBENCH_SCREEN_SIZE", "huge")  # it was dropped without a word
    with pytest.raises(WorkbenchError, match="KERNEL_WORKBENCH_SCREEN_SIZE=huge: give the window's size"):
        _screenshot_size()


def test_toolbar_chooses_estimated_resources_for_the_simulator(window, qtbot):
    toolbar = window.toolbar
    toolbar.apply({"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 4, "seed": 0})
    toolbar.resources.setCurrentIndex(toolbar.resources.findData("estimate"))
    request = toolbar.request()
    assert request["options"] == {"compile": "estimate"}
    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run(request)
    trials = window.model.trials
    assert len(trials) == 4 and all(t.measurement.details.get("estimated") for t in trials if t.ok)
    toolbar.resources.setCurrentIndex(toolbar.resources.findData("nvrtc"))
    assert toolbar.request()["options"] == {"compile": "nvrtc"}


@pytest.mark.parametrize("how", ["csv", "best", "chart"])
def test_an_export_never_writes_over_the_open_session(window, cli, tmp_path, monkeypatch, how):
    """The dialog's "replace?" was the only guard: an export pointed at the session's own file
    replaced it (a read-only one too, the write being a rename), with no backup."""
    from PySide6.QtWidgets import QFileDialog

    session = tmp_path / "run.json"
    done = cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "4",
               "--executor", "inline", "--quiet", "--out", session)
    assert done.returncode == 0, done.stderr
    before = session.read_bytes()
    window.open_session(session)
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(session), ""))
    {"csv": window._on_export_csv, "best": window._on_export_best,
     "chart": lambda: window._on_export_chart("score", "png")}[how]()
    assert session.read_bytes() == before and "is the open session's file" in window.statusBar().currentMessage()



@pytest.mark.parametrize("how", ["csv", "best", "chart"])
def test_an_export_never_writes_where_a_killed_runs_journal_waits(window, cli, tmp_path, monkeypatch, how):
    """The command line refused an export onto a name with a run's journal beside it; the window
    wrote there, and the journal's trials could then be neither opened nor resumed (the file
    beside them is no session)."""
    from PySide6.QtWidgets import QFileDialog

    from workbench.core.domain.session import journal_path

    session = tmp_path / "run.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "4",
               "--executor", "inline", "--quiet", "--out", session).returncode == 0
    window.open_session(session)
    waiting = tmp_path / "killed.json"
    journal_path(waiting).write_text("")
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(waiting), ""))
    {"csv": window._on_export_csv, "best": window._on_export_best,
     "chart": lambda: window._on_export_chart("score", "png")}[how]()
    said = window.statusBar().currentMessage()
    assert not waiting.exists() and "journal of a run is beside it" in said, said
    assert "opening that session recovers them first" in said

def test_an_export_names_the_session_file_it_came_from_as_the_command_line_does(window, cli, tmp_path):
    session = tmp_path / "run.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "4",
               "--executor", "inline", "--quiet", "--out", session).returncode == 0
    assert cli("export", session, "--format", "header", "--out", tmp_path / "cli.h").returncode == 0
    window.open_session(session)
    window.export_best(str(tmp_path / "gui.h"))
    provenance = [line for line in (tmp_path / "gui.h").read_text().splitlines() if str(session) in line]
    assert provenance and provenance == [line for line in (tmp_path / "cli.h").read_text().splitlines()
                                         if str(session) in line]


def test_an_export_over_another_file_keeps_it_as_bak(window, cli, tmp_path):
    session = tmp_path / "run.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "4",
               "--executor", "inline", "--quiet", "--out", session).returncode == 0
    window.open_session(session)
    old = tmp_path / "trials.csv"
    old.write_text("an earlier export\n")
    window.export_csv(str(old))
    assert (tmp_path / "trials.csv.bak").read_text() == "an earlier export\n" and old.read_text().count("\n") == 5
    # exporting again over what the window wrote keeps no backup of it (each re-export added one)
    for _ in range(2):
        window.export_csv(str(old))
        window.export_best(str(tmp_path / "best.h"))
        window.export_chart("score", str(tmp_path / "score.png"))
    assert sorted(p.name for p in tmp_path.glob("*.bak")) == ["trials.csv.bak"]
    old.write_text("mine now\n")  # a file put there since is the person's: kept
    window.export_csv(str(old))
    assert (tmp_path / "trials.csv.2.bak").read_text() == "mine now\n"
    # a copy keeping the size and modification time (cp -p) is still another file
    import os
    import shutil

    copy = tmp_path / "other.csv"
    copy.write_bytes(b"x" * old.stat().st_size)
    os.utime(copy, ns=(old.stat().st_atime_ns, old.stat().st_mtime_ns))
    os.replace(copy, old)
    window.export_csv(str(old))
    assert (tmp_path / "trials.csv.3.bak").read_bytes().startswith(b"xxx")
    # an export made elsewhere is replaced as it is (its seal holds), and backed up once edited by hand
    cli_export = tmp_path / "cli.h"
    assert cli("export", session, "--format", "header", "--out", cli_export).returncode == 0
    window.export_best(str(cli_export))
    assert not (tmp_path / "cli.h.bak").exists()
    assert cli("export", session, "--format", "header", "--out", cli_export).returncode == 0
    shutil.copy(cli_export, tmp_path / "best.h")
    with open(tmp_path / "best.h", "a") as handle:
        handle.write("// my own line\n")
    window.export_best(str(tmp_path / "best.h"))
    assert "// my own line" in (tmp_path / "best.h.bak").read_text()
    # one the person made read-only is not written over, not even the window's own earlier export
    from workbench.core.errors import WorkbenchError

    (tmp_path / "best.h").chmod(0o444)
    before = (tmp_path / "best.h").read_bytes()
    with pytest.raises(WorkbenchError, match="best.h is read-only; make it writable or export to another name"):
        window.export_best(str(tmp_path / "best.h"))
    assert (tmp_path / "best.h").read_bytes() == before and (tmp_path / "best.h").stat().st_mode & 0o777 == 0o444


@pytest.mark.parametrize("badge", ["SIMULATED: timings are modelled, not measured",
                                   "REPLAY: timings were recorded earlier, not measured now",
                                   "RECORDED: timings were measured earlier, not now"])
@pytest.mark.parametrize("width", [240, 320, 420])
def test_the_timing_label_of_an_exported_chart_fits_inside_it_whole(window, qtbot, badge, width):
    """The SIMULATED / REPLAY label is what must survive export: its box was as wide as its text
    on one line, and ran past the right edge of a chart as narrow as the window's score chart."""
    from PySide6.QtCore import QRect, QSize, Qt
    from PySide6.QtGui import QColor, QImage, QPainter

    from workbench.gui.chart_export import MARGIN, paint_chart

    with qtbot.waitSignal(window.run_done, timeout=60_000):
        window.start_run({"kernel": "vector_add", "backend": "sim", "strategy": "random", "budget": 4, "seed": 1,
                          "options": {"compile": "estimate"}})
    size = QSize(width, 600)
    image = QImage(width, 600, QImage.Format.Format_RGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    try:
        painted = paint_chart(painter, window.score_chart, size, badge)
        assert painted is not None
        # what drawing the label with its flags takes: the whole text, wrapped or not
        text = painter.boundingRect(
            painted.badge_box, int(Qt.AlignmentFlag.AlignCenter) | int(Qt.TextFlag.TextWordWrap), badge)
    finally:
        painter.end()
    colour = QColor("#f0c000" if badge.startswith("SIMULATED") else "#56b4e9")
    coloured = [x for y in range(0, 200, 2) for x in range(width) if image.pixelColor(x, y) == colour]
    assert coloured and max(coloured) < width - MARGIN  # the label's box ends inside the picture
    box = painted.badge_box
    assert box is not None and painted.badge_text is not None and text is not None
    assert QRect(MARGIN, 0, width - 2 * MARGIN, 600).contains(box)
    assert box.contains(painted.badge_text) and text.width() <= box.width() and text.height() <= box.height()


def test_a_chart_never_shown_exports_with_its_axes_laid_out(window, qtbot, tmp_path):
    """The roofline exported before its tab was opened had no GFLOP/s figures (pyqtgraph drops a
    tick label its axis has no room for, and sizes the axis only while painting it) and its
    x-axis title lay over the ticks: the picture a teacher pastes into slides."""
    from PySide6.QtGui import QFontMetrics

    with qtbot.waitSignal(window.run_done, timeout=120_000):
        window.start_run({"kernel": "sgemm", "backend": "sim", "strategy": "random", "budget": 8, "seed": 0})
    chart = window.roofline_chart
    assert not chart.isVisible()
    window.export_chart("roofline", str(tmp_path / "roofline.png"))
    assert window.statusBar().currentMessage() == f"exported {tmp_path / 'roofline.png'}"  # said, as a save is
    left = chart.plot.getAxis("left")
    top = max(value for level in left.tickValues(*left.range, left.height()) for value in level[1])
    widest = QFontMetrics(left.style.get("tickFont") or left.font()).horizontalAdvance(f"{10 ** top:.0f}")
    assert widest >= 4 * QFontMetrics(left.font()).horizontalAdvance("0")  # GFLOP/s of five digits
    assert left.width() >= widest  # the axis took the room its figures need


def test_a_screenshot_the_window_saves_is_recognised_as_its_own(qtbot, tmp_path):
    """What lets the next --screenshot replace it without --force (and nothing else)."""
    from PySide6.QtGui import QPixmap

    from workbench.core.io.screenshots import is_own_screenshot
    from workbench.gui.app import _save_picture

    pixmap = QPixmap(40, 30)
    pixmap.fill()
    target = tmp_path / "shot.png"
    assert _save_picture(pixmap, target) is None and is_own_screenshot(target)
    assert pixmap.save(str(tmp_path / "plain.png"), "PNG") and not is_own_screenshot(tmp_path / "plain.png")


def test_file_menu_exports_the_session_as_a_kernel_tuner_cache_that_imports_again(window, cli, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog

    session = tmp_path / "run.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "5",
               "--executor", "inline", "--quiet", "--out", session).returncode == 0
    window.open_session(session)
    target = tmp_path / "cache.json"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(target), ""))
    action = next(a for a in window.menuBar().actions()[0].menu().actions() if a.text() == "Export as Kernel &Tuner cache...")
    action.trigger()
    assert target.exists(), window.statusBar().currentMessage()
    assert cli("import-kt", target, "--out", tmp_path / "back.json").returncode == 0
    ids = lambda path: sorted(t["id"] for t in json.loads(path.read_text())["trials"])  # noqa: E731
    assert ids(tmp_path / "back.json") == ids(session)


def test_a_kernel_tuner_cache_export_says_in_the_status_bar_what_the_file_cannot_carry(window, cli, tmp_path):
    """As ``export`` prints it: a problem parameter that is no size has no place in the file."""
    session = tmp_path / "run.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "3",
               "--executor", "inline", "--quiet", "--out", session).returncode == 0
    window.open_session(session)
    window.export_kt_cache(str(tmp_path / "out.json"))
    said = window.statusBar().currentMessage()
    assert said.startswith(f"exported {tmp_path / 'out.json'}; note: problem parameter alpha=") and \
        "is not in the file" in said, said


def test_the_windows_export_warns_when_the_template_is_not_the_code_tuned(window, cli, tmp_path):
    """As ``export`` now says it: only the file's comments said that the kernel rendered is
    another one than the session measured."""
    session_path = tmp_path / "s.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "3",
               "--executor", "inline", "--quiet", "--out", session_path).returncode == 0
    doc = json.loads(session_path.read_text())
    doc["source_hash"] = "0" * 16
    session_path.write_text(json.dumps(doc))
    window.open_session(session_path)
    window.export_best(str(tmp_path / "best.cu"))
    said = window.statusBar().currentMessage()
    assert said.startswith(f"exported {tmp_path / 'best.cu'}; warning: the template (") and "changed since" in said


def test_an_export_of_a_session_another_run_still_writes_says_so(window, cli, tmp_path):
    """As ``export`` says it: the window's export of it was a snapshot without a word."""
    from workbench.core.io.session_lock import SessionLock

    session = tmp_path / "run.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "3",
               "--executor", "inline", "--quiet", "--out", session).returncode == 0
    window.open_session(session)
    with SessionLock(session):  # a run of another program writing it
        window.export_csv(str(tmp_path / "t.csv"))
        assert "note: a run is still writing this session" in window.statusBar().currentMessage()
    window.export_csv(str(tmp_path / "t2.csv"))
    assert "still writing" not in window.statusBar().currentMessage()


def test_the_window_defines_every_helper_its_parts_declare():
    """The window's parts (its exports, files and runs) declare the window's helpers for the type
    checker, each raising: one the window renamed or dropped would raise at the menu's click."""
    import inspect

    from workbench.gui.main_window import MainWindow
    from workbench.gui.window_exports import WindowExports
    from workbench.gui.window_files import WindowFiles
    from workbench.gui.window_runs import WindowRuns

    def raising(member: object) -> bool:
        function = member.fget if isinstance(member, property) else member
        return inspect.isfunction(function) and "NotImplementedError" in inspect.getsource(function)

    for part in (WindowExports, WindowFiles, WindowRuns):
        declared = [name for name, member in vars(part).items() if raising(member)]
        assert declared, part
        left = [name for name in declared if raising(inspect.getattr_static(MainWindow, name))]
        assert not left, (part.__name__, left)


def test_a_chart_export_with_nothing_shown_says_so_and_writes_nothing(window, tmp_path, monkeypatch):
    """File > Save and the other exports said "nothing to export yet" with nothing shown; the chart
    exports opened a file dialog and wrote an empty "no trials yet" chart."""
    from PySide6.QtWidgets import QFileDialog

    asked: list[str] = []
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: asked.append("dialog") or ("", ""))
    window._on_export_chart("tradeoff", "png")
    assert asked == [] and window.statusBar().currentMessage().startswith("nothing to export yet")
    with pytest.raises(WorkbenchError, match="nothing to export yet"):
        window.export_chart("tradeoff", str(tmp_path / "empty.png"))
    assert not (tmp_path / "empty.png").exists()
