"""The template editor, driven like a person would: type a kernel, mark its slots, compile it in the
background, tune it on the simulator through the main window, save it, reopen it. Bad sources and
specs give errors at their lines and leave the window working."""

from __future__ import annotations

import ast

import json
import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QTableWidgetItem

from workbench.core.errors import WorkbenchError
from workbench.core.domain.kernel_spec import SPEC_SUFFIX, SpecError, user_templates_dir
from workbench.core.domain.templates import load_templates
from workbench.core.model.template_drafts import save_draft

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "saxpy"
SAXPY_CU = (EXAMPLE / "saxpy.cu").read_text()


def checked(editor, qtbot, action=None, timeout_ms=60_000):
    """Run ``action`` (or a check) and wait for the background check's report."""
    with qtbot.waitSignal(editor.checked, timeout=timeout_ms) as blocker:
        (action or editor.check_now)()
    return blocker.args[0]


def set_row(table, row, values):
    if row >= table.rowCount():
        table.insertRow(row)
    for column, value in enumerate(values):
        if value is not None:
            table.setItem(row, column, QTableWidgetItem(str(value)))


@pytest.fixture
def editor(window, qtbot):
    win = window.open_kernel_editor()
    qtbot.addWidget(win)
    yield win
    win.wait_for_check()


def type_saxpy(editor, qtbot):
    """The worked example of docs/own-kernel.md, typed into a new draft."""
    editor.name_edit.setText("saxpy")
    editor.entry_edit.setText("saxpy")
    editor.source.selectAll()
    for line in SAXPY_CU.splitlines():  # typed key by key (keyClicks takes no line breaks)
        qtbot.keyClicks(editor.source, line)
        qtbot.keyClick(editor.source, Qt.Key.Key_Return)
    editor.slots_table.setRowCount(0)
    editor.problem_table.setRowCount(0)
    assert editor.detect_slots() == ["block_size", "items"]
    # its first use, not its fallback's #define (line 4), which the note claimed to be
    assert editor.slots_table.item(0, 4).text() == "#define BLOCK_SIZE: first used on line 7"
    set_row(editor.slots_table, 0, (None, "32..1024 *2", "launch", "256", "threads per block"))
    set_row(editor.slots_table, 1, (None, "1, 2, 4, 8, 16", "launch", "1", "elements per thread"))
    editor.restrictions.setPlainText("block_size * items <= 4096")
    set_row(editor.problem_table, 0, ("n", "16777216", "4099", "elements"))
    set_row(editor.problem_table, 1, ("a", "2.0", "2.0", "scale of x"))
    editor.grid_edits[0].setText("(n + block_size * items - 1) // (block_size * items)")
    editor.block_edits[0].setText("block_size")
    editor.args_table.setRowCount(0)
    for row, values in enumerate((("x", "in", "float32", "n"), ("y", "in", "float32", "n"),
                                  ("out", "out", "float32", "n", "1e-5", "1e-6"), ("a", "scalar", "float32", "a"))):
        set_row(editor.args_table, row, values)
    editor._sync_reference_rows()
    set_row(editor.ref_table, 0, ("out", "a * x + y"))
    editor.flops_edit.setText("2 * n")
    editor.profile_edits["work_per_thread"].setText("items")


def test_a_cell_the_form_cannot_read_is_said_once_and_every_problem_wraps_in_full(editor, qtbot):
    """A slot of 70,000 values was refused ("at most 65,536") and then also said to have an empty
    domain, which it did not; and a problem's reason was cut at the list's edge behind a scroll bar."""
    type_saxpy(editor, qtbot)
    set_row(editor.slots_table, 1, (None, "1..70000", "launch", "1", "elements per thread"))
    checked(editor, qtbot)
    shown = [editor.problems.item(i).text() for i in range(editor.problems.count())]
    assert any("65,536" in text for text in shown), shown
    assert not any("domain is empty" in text for text in shown), shown
    assert editor.problems.wordWrap() and editor.problems.horizontalScrollBarPolicy() == Qt.ScrollBarPolicy.ScrollBarAlwaysOff
    # what the check finds about another cell of that slot is still said (a default the form
    # could not read hid "values mix types")
    set_row(editor.slots_table, 1, (None, "1, 2, x", "launch", "1..70000", "elements per thread"))
    checked(editor, qtbot)
    shown = [editor.problems.item(i).text() for i in range(editor.problems.count())]
    assert any("default: 70,000 values" in text for text in shown) and any("mix types" in text for text in shown), shown


def test_the_editors_tables_show_a_name_in_full_and_a_long_one_cut_but_resizable(editor, qtbot):
    """The names column cut items_per_thread to items_per_th... beside an empty description; sized
    to its contents for good, a long name pushed the other columns out of sight and could not be
    narrowed by hand."""
    from workbench.gui.kernel_editor import _fit_names

    type_saxpy(editor, qtbot)
    table = editor.slots_table
    set_row(table, 1, ("items_per_thread", "1, 2", "launch", "1", "elements per thread"))
    _fit_names(table)
    width = table.horizontalHeader().sectionSize(0)
    assert width >= table.fontMetrics().horizontalAdvance("items_per_thread")
    set_row(table, 1, ("x" * 300, "1, 2", "launch", "1", "elements per thread"))
    _fit_names(table)
    assert table.horizontalHeader().sectionSize(0) == 260
    table.horizontalHeader().resizeSection(0, 80)  # the person narrows it
    assert table.horizontalHeader().sectionSize(0) == 80


def test_type_detect_compile_tune_save_and_reopen(window, editor, qtbot, tmp_path):
    type_saxpy(editor, qtbot)
    report = checked(editor, qtbot)
    assert report.ok, [str(d) for d in report.diagnostics]
    assert report.compiled and report.resources["registers"] > 0
    assert (report.space_size, report.valid_configs) == (30, 27)
    assert "27 valid" in editor.space_label.text() and "registers" in editor.resources_label.text()

    with qtbot.waitSignal(window.run_done, timeout=120_000) as blocker:
        run = editor.tune(20)
    assert run["kernel_dirs"] and Path(run["kernel_dirs"][0]).is_relative_to(editor.drafts_dir())
    assert Path(run["kernel_dirs"][0]).name.startswith("saxpy-")  # a folder of this draft's own
    session = window.model.session
    assert session.kernel == "saxpy" and len(session.trials) == 20
    assert sum(t.ok for t in session.trials) == 20  # every config of the example launches
    assert blocker.args[0] is not None
    window.source_view.show_trial(0)  # the draft renders: the person's own folder, not "not loaded"
    assert "#define BLOCK_SIZE" in window.source_view.editor.toPlainText()

    saved = editor.save()
    assert saved == user_templates_dir() / f"saxpy{SPEC_SUFFIX}"
    assert load_templates(saved.parent)["saxpy"].space().count() == 27  # --kernel-dir sees it

    from workbench.gui.run_panel import RunToolbar

    toolbar = RunToolbar()  # what the next start shows: the saved template in the kernel list
    qtbot.addWidget(toolbar)
    toolbar.kernel.setCurrentText("saxpy")
    assert toolbar.kernel.findText("saxpy") >= 0 and toolbar.request()["kernel_dirs"] == [str(saved.parent)]

    header = tmp_path / "saxpy_tuned.cu"  # File > Export best config renders the editor's template
    window.export_best(str(header))
    assert "__global__" in header.read_text() and "saxpy" in header.read_text()
    script = tmp_path / "saxpy_tuned.py"  # the CuPy script searches the folder the template comes from
    window.export_best(str(script))
    folders = ast.literal_eval(next(line for line in script.read_text().splitlines()
                                    if line.startswith("KERNEL_DIRS: list[str] = ")).split("=", 1)[1].strip())
    assert len(folders) == 1 and (Path(folders[0]) / f"saxpy{SPEC_SUFFIX}").is_file()

    reopened = window.open_kernel_editor(saved.parent)
    qtbot.addWidget(reopened)
    assert reopened.source.toPlainText() == SAXPY_CU
    assert reopened.spec() == editor.spec()
    assert checked(reopened, qtbot).valid_configs == 27


def test_a_compile_error_is_marked_at_its_line_and_the_window_keeps_working(editor, qtbot):
    type_saxpy(editor, qtbot)
    broken = SAXPY_CU.replace("a * x[i] + y[i]", "a * x[i] + undefined_name")
    line = next(n for n, text in enumerate(broken.splitlines(), 1) if "undefined_name" in text)
    editor.source.setPlainText(broken)
    report = checked(editor, qtbot)
    assert not report.ok
    assert [d.line for d in report.diagnostics if d.severity == "error"] == [line]
    assert editor.source.marks == {line: "error"}
    assert "undefined_name" in editor.problems.item(0).text()
    editor.source.setPlainText(SAXPY_CU)  # fixing it clears the mark
    assert checked(editor, qtbot).ok and editor.source.marks == {}


def test_restrictions_are_checked_as_typed_with_the_bad_part_underlined(editor, qtbot):
    type_saxpy(editor, qtbot)
    editor.restrictions.setPlainText("block_size * items <= 4096\nblock_size * itms <= 64")
    messages = editor.check_restrictions()
    assert len(messages) == 1 and messages[0].startswith("line 2:") and "did you mean 'items'" in messages[0]
    (selection,) = editor.restrictions.extraSelections()
    assert selection.cursor.selectedText() == "itms"
    editor.restrictions.setPlainText("block_size * items <= 4096\n__import__('os')")
    (message,) = editor.check_restrictions()
    assert "not allowed" in message
    report = checked(editor, qtbot)
    assert not report.ok and report.diagnostics[0].field == "restrictions[1]"


def test_bad_cells_and_specs_are_problems_not_crashes(editor, qtbot, tmp_path):
    type_saxpy(editor, qtbot)
    set_row(editor.slots_table, 1, (None, "1, two and a half", None, None, None))
    assert not checked(editor, qtbot).ok
    texts = [editor.problems.item(i).text() for i in range(editor.problems.count())]
    assert any("items: values" in t and "'two and a half'" in t for t in texts)
    set_row(editor.slots_table, 1, (None, "1, 2", None, None, None))
    editor.grid_edits[0].setText("n // block_sise")
    report = checked(editor, qtbot)
    assert not report.ok and report.diagnostics[0].field == "grid" and "block_sise" in report.diagnostics[0].message
    # a spec file with a syntax error: opening it says where, the editor stays usable
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "k.cu").write_text(SAXPY_CU)
    (folder / f"k{SPEC_SUFFIX}").write_text('{\n  "name": "k",\n  "slots": [,]\n}\n')
    with pytest.raises(SpecError) as caught:
        editor.open_folder(folder)
    assert caught.value.line == 3 and f"k{SPEC_SUFFIX}:3:" in str(caught.value)
    editor._guard(lambda: editor.open_folder(folder))  # what the menu does: a message, no exception
    assert f"k{SPEC_SUFFIX}:3:" in editor.last_error and editor.isVisible()
    assert checked(editor, qtbot).ok is False  # the draft still shows (and still has its grid typo)
    assert editor.grid_edits[0].toolTip().startswith('expression "n // block_sise"')  # marked as typed (a launch field's is an expression, not a restriction)
    (folder / f"k{SPEC_SUFFIX}").write_text('{"name": "k", "slots": [1], "problem": []}')
    set_row(editor.slots_table, 1, (None, "1, 2x6", None, None, None))  # half typed: no spec reads it
    source, title = editor.source.toPlainText(), editor.windowTitle()
    editor._guard(lambda: editor.open_folder(folder))
    assert f"k{SPEC_SUFFIX}:1: slots[0]: must be an object" in editor.last_error and editor.isVisible()
    assert "main.py" not in editor.last_error  # the window names the line itself
    # the form it failed to replace is still there, edits and all: a starter draft took its place,
    # marked unedited, under the old file's title
    assert editor.name_edit.text() == "saxpy" and editor.source.toPlainText() == source
    assert editor.grid_edits[0].text() == "n // block_sise" and editor.windowTitle() == title
    assert editor.slots_table.item(1, 1).text() == "1, 2x6"  # the cell a spec() of the form drops
    assert editor.modified()


def test_a_check_asked_for_while_the_last_thread_winds_down_still_reports(editor, qtbot, monkeypatch):
    """The report of a check reaches the window before its thread has ended; a check asked for in
    that gap waits for the thread and then runs (it was never started, and the test waited 60 s)."""
    import threading

    from workbench.gui import kernel_editor

    real = kernel_editor._CheckThread.run
    release = threading.Event()

    def slow_to_end(self):
        real(self)
        release.wait(30)  # the report is out, the thread still runs (until the next check is asked for)

    def ask_again_then_let_it_end():
        editor.check_now()
        release.set()

    monkeypatch.setattr(kernel_editor._CheckThread, "run", slow_to_end)
    type_saxpy(editor, qtbot)
    checked(editor, qtbot)
    assert editor._thread is not None and editor._thread.isRunning()
    assert checked(editor, qtbot, ask_again_then_let_it_end, timeout_ms=10_000).ok


def test_menu_entries_open_the_editor(window, qtbot):
    assert "new_kernel" in window.actions_by_name and "open_kernel" in window.actions_by_name
    window.actions_by_name["new_kernel"].trigger()
    editor = window.kernel_editor
    qtbot.addWidget(editor)
    assert editor.isVisible() and editor.slots_table.rowCount() >= 1
    report = checked(editor, qtbot)
    assert report.ok, [str(d) for d in report.diagnostics]


@pytest.mark.worker_processes
def test_a_chosen_python_reference_runs_only_in_the_worker_process(window, editor, qtbot, tmp_path):
    import os

    marker = tmp_path / "pid"
    reference = tmp_path / "my_reference.py"
    reference.write_text(f"import os\nopen({str(marker)!r}, 'w').write(str(os.getpid()))\n"
                         "def reference(inputs, problem):\n    return {'out': inputs['a'] * inputs['x'] + inputs['y']}\n")
    type_saxpy(editor, qtbot)
    editor.choose_reference(reference)
    assert checked(editor, qtbot).ok and not marker.exists()  # checking and compiling never import it
    saved = editor.save(tmp_path / "lib")
    spec = json.loads(saved.read_text())
    assert spec["reference"] == {"kind": "python", "file": "_saxpy_reference.py", "function": "reference"}
    assert (saved.parent / "_saxpy_reference.py").read_text() == reference.read_text() and not marker.exists()
    with qtbot.waitSignal(window.run_done, timeout=120_000):
        editor.tune(3)
    assert int(marker.read_text()) != os.getpid()  # imported by the run's worker process
    assert sum(t.ok for t in window.model.session.trials) == 3


def test_the_arguments_table_shows_and_keeps_each_outputs_own_tolerance(editor, qtbot):
    """Per-output rtol / atol: shown in the arguments table, written back per output, and the loaded
    template checks each output with its own pair."""
    from workbench.core.domain.kernel_spec import template_from_spec

    spec = json.loads((EXAMPLE / f"saxpy{SPEC_SUFFIX}").read_text())
    spec["args"].insert(3, {"name": "twice", "kind": "out", "dtype": "float32", "shape": ["n"], "rtol": 0.01, "atol": 0.001})
    spec["reference"]["outputs"]["twice"] = "2 * x"
    editor.set_spec(spec, SAXPY_CU, None)
    table = editor.args_table
    rows = {table.item(r, 0).text(): r for r in range(table.rowCount())}
    assert table.item(rows["twice"], 4).text() == "0.01" and table.item(rows["twice"], 5).text() == "0.001"
    assert table.item(rows["out"], 4).text() == "1e-05"
    assert "own tolerance" in table.horizontalHeaderItem(4).toolTip()
    table.setItem(rows["out"], 4, QTableWidgetItem("0.0002"))
    written = {a["name"]: a for a in editor.spec()["args"]}
    assert (written["out"]["rtol"], written["twice"]["rtol"]) == (0.0002, 0.01)
    template = template_from_spec(editor.spec(), SAXPY_CU)
    assert template.tolerance_for("out") == (0.0002, 1e-6) and template.tolerance_for("twice") == (0.01, 0.001)


@pytest.mark.parametrize("payload, said", [
    ('{"name": "k", "version": ' + "9" * 5000 + "}", "an integer with 5,000 digits"),
    ('{"name": "k", "slots": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
    (None, "not a regular file"),
])
def test_the_editor_reads_a_spec_as_the_loader_does(editor, tmp_path, payload, said):
    """Open folder parsed the spec with plain json.loads: a 5,000-digit integer (ValueError) and deep
    nesting (RecursionError) escaped its error handling, and a FIFO named like a spec hung it."""
    import os

    spec = tmp_path / f"k{SPEC_SUFFIX}"
    if payload is None:
        os.mkfifo(spec)
    else:
        spec.write_text(payload)
    with pytest.raises(SpecError, match=said):
        editor.open_folder(tmp_path)


@pytest.mark.parametrize("content, said", [
    (b"\xff\xfe" + "#define X 1".encode("utf-16-le"), "not UTF-8 text"),  # was a UnicodeDecodeError traceback
    (None, "not a regular file"),  # a FIFO: reading it hung the window
])
def test_a_lone_cuda_file_is_read_as_the_loader_reads_a_source(editor, tmp_path, content, said):
    """Open kernel folder on a folder holding only a .cu read it with a plain read_text: a FIFO hung
    the window and a UTF-16 file escaped the menu action's error handling."""
    import os

    cu = tmp_path / "k.cu"
    if content is None:
        os.mkfifo(cu)
    else:
        cu.write_bytes(content)
    editor._guard(lambda: editor.open_folder(tmp_path))
    assert said in editor.last_error and str(cu) in editor.last_error


def test_the_window_offers_an_opened_template_only_under_the_name_the_loader_checked(window, editor, tmp_path):
    """Open kernel folder handed the spec's raw "name" to the window's kernel list: a name with a
    newline and an escape sequence, which the loader refuses, became a kernel to pick and run."""
    spec = json.loads((EXAMPLE / f"saxpy{SPEC_SUFFIX}").read_text())
    spec["name"] = "evil\nname\x1b[31m"
    (tmp_path / "saxpy.cu").write_text(SAXPY_CU)
    (tmp_path / f"saxpy{SPEC_SUFFIX}").write_text(json.dumps(spec))
    editor._guard(lambda: editor.open_folder(tmp_path))
    assert editor.source.toPlainText() == SAXPY_CU  # shown, to be fixed in the editor
    names = [window.toolbar.kernel.itemText(i) for i in range(window.toolbar.kernel.count())]
    assert not [n for n in names if "evil" in n] and not [n for n in window.toolbar.kernel_folders if "evil" in n]
    # a name that differs from the file's is refused too: a run finds the template by its file name
    spec["name"] = "fixed_saxpy"
    (tmp_path / f"saxpy{SPEC_SUFFIX}").write_text(json.dumps(spec))
    editor._guard(lambda: editor.open_folder(tmp_path))
    assert window.toolbar.kernel.findText("fixed_saxpy") < 0
    (tmp_path / f"saxpy{SPEC_SUFFIX}").rename(tmp_path / f"fixed_saxpy{SPEC_SUFFIX}")
    editor._guard(lambda: editor.open_folder(tmp_path))
    assert window.toolbar.kernel.findText("fixed_saxpy") >= 0
    assert window.toolbar.kernel_folders["fixed_saxpy"] == str(tmp_path)


def test_a_lone_source_using_thousands_of_macros_is_refused_not_made_into_rows(editor, tmp_path):
    """A .cu using 20,000 undefined macros became 20,000 slot rows, filled in the window's thread
    for about 15 seconds, a template no one can tune."""
    source = SAXPY_CU + "\n" + "\n".join(f"int v{i} = MACRO_{i};" for i in range(1500))
    (tmp_path / "k.cu").write_text(source)
    editor._guard(lambda: editor.open_folder(tmp_path))
    assert "uses 1,50" in editor.last_error and "at most 1,000" in editor.last_error
    assert editor.slots_table.rowCount() < 10 and editor.source.toPlainText() == source


def test_the_editors_refusals_name_the_windows_controls(editor) -> None:
    """Tune and Save in the editor report a refusal the way the window does: by its controls,
    never by a command-line flag the window has no place for."""
    from workbench.core.errors import WorkbenchError

    def refuse() -> None:
        raise WorkbenchError(template="every size of the sweep already has 2 evaluations or more, the 2 per size asked for; raise {budget} "
                                      "(evaluations per size) or add sizes to {sizes}")

    editor._guard(refuse)
    assert "raise the evals box" in editor.last_error and "the sizes field" in editor.last_error
    assert "--" not in editor.last_error


def test_saving_an_opened_spec_keeps_what_the_form_has_no_control_for(editor, tmp_path):
    """A hand-written spec holds fields the form cannot show (a description, compile options, an
    argument's range and reset, a parameter's bounds); Save and Tune used to drop them silently."""
    folder = tmp_path / "full"
    folder.mkdir()
    (folder / "saxpy.cu").write_text(SAXPY_CU)
    spec = json.loads((EXAMPLE / "saxpy.kernel.json").read_text())
    spec["description"] = "hand-written notes"
    spec["compile_options"] = ["-use_fast_math"]
    spec["problem"]["n"].update(min=1024, max=1 << 26)
    spec["args"][0]["range"] = [-1.0, 1.0]
    spec["args"][2]["reset"] = "zero"
    (folder / "saxpy.kernel.json").write_text(json.dumps(spec))
    editor.open_folder(folder)
    editor.title_edit.setText("SAXPY, retitled")
    saved = json.loads(editor.save().read_text())
    assert saved["title"] == "SAXPY, retitled"  # what the form edits is the form's
    assert saved["description"] == "hand-written notes" and saved["compile_options"] == ["-use_fast_math"]
    assert saved["problem"]["n"]["min"] == 1024 and saved["problem"]["n"]["max"] == 1 << 26
    assert saved["args"][0]["range"] == [-1.0, 1.0] and saved["args"][2]["reset"] == "zero"
    assert list(load_templates(folder)["saxpy"].compile_options) == ["-use_fast_math"]
    # an argument renamed in the form is another argument: its old extras do not follow the name
    editor.args_table.item(0, 0).setText("xs")
    assert "range" not in editor.spec()["args"][0]


def test_saving_writes_only_the_files_its_spec_names(editor, tmp_path):
    """A spec whose source is ``main.cu`` keeps it; a ``saxpy.cu`` of the person's own beside it is
    theirs (saving used to rename the source to ``saxpy.cu``, writing over it)."""
    folder = tmp_path / "named"
    folder.mkdir()
    (folder / "main.cu").write_text(SAXPY_CU)
    (folder / "saxpy.cu").write_text("// MY OTHER FILE\n")
    spec = json.loads((EXAMPLE / "saxpy.kernel.json").read_text())
    spec["source"] = "main.cu"
    (folder / "saxpy.kernel.json").write_text(json.dumps(spec))
    editor.open_folder(folder)
    editor.source.setPlainText(SAXPY_CU + "// edited\n")
    saved = json.loads(editor.save().read_text())
    assert saved["source"] == "main.cu" and (folder / "main.cu").read_text().endswith("// edited\n")
    assert (folder / "saxpy.cu").read_text() == "// MY OTHER FILE\n"
    # a reference file of the person's own at the name a chosen reference would take stops the save
    (folder / "_saxpy_reference.py").write_text("# mine\n")
    chosen = tmp_path / "ref.py"
    chosen.write_text("def reference(inputs, problem):\n    return {'out': inputs['x']}\n")
    editor.choose_reference(chosen)
    with pytest.raises(Exception, match="not part of a saved template"):
        editor.save()
    assert (folder / "_saxpy_reference.py").read_text() == "# mine\n"


@pytest.mark.parametrize("kind", ["fifo", "latin1"])
def test_a_chosen_reference_that_is_no_utf8_file_is_one_message(editor, tmp_path, kind):
    """The reference copied in on save is read as a spec's own files: a FIFO froze the window
    (the read waited for a writer), Latin-1 bytes escaped as a traceback."""
    import os

    chosen = tmp_path / "ref.py"
    if kind == "fifo":
        os.mkfifo(chosen)
    else:
        chosen.write_bytes("# caf\xe9\ndef reference(inputs, problem):\n    return {}\n".encode("latin-1"))
    editor.open_folder(EXAMPLE)
    editor.choose_reference(chosen)
    editor._guard(lambda: editor.save(tmp_path / "out"))
    assert "ref.py" in editor.last_error
    assert not (tmp_path / "out" / "saxpy.kernel.json").exists()  # refused before anything was written


def _saxpy_folder_with_python_reference(folder: Path, file: str) -> Path:
    """The worked example with its reference in a Python file named ``file`` by the spec."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "saxpy.cu").write_text(SAXPY_CU)
    spec = json.loads((EXAMPLE / "saxpy.kernel.json").read_text())
    spec["reference"] = {"kind": "python", "file": file, "function": "reference"}
    (folder / "saxpy.kernel.json").write_text(json.dumps(spec))
    return folder


@pytest.mark.parametrize("name", ["../victim", "ABSOLUTE", "../../made_by_tune/x", ""])
def test_tune_refuses_a_name_that_is_no_c_identifier_before_touching_any_file(editor, tmp_path, name):
    """Tune made ``drafts/<name>`` and deleted every spec there before the name was checked: a
    name of ``../templates`` (typed, or from an opened spec) emptied the person's template folder,
    an absolute one any folder."""
    victim = editor.drafts_dir().parent / "victim"
    elsewhere = tmp_path / "elsewhere"
    for folder in (victim, elsewhere):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "precious.kernel.json").write_text("{}")
    editor.open_folder(EXAMPLE)
    editor.name_edit.setText(str(elsewhere) if name == "ABSOLUTE" else name)
    editor._guard(lambda: editor.tune(2))
    assert "name: must be a C identifier" in editor.last_error
    assert (victim / "precious.kernel.json").exists() and (elsewhere / "precious.kernel.json").exists()
    assert not (editor.drafts_dir().parent.parent / "made_by_tune").exists()


@pytest.mark.parametrize("file", ["../outside.py", "ABSOLUTE"])
def test_an_opened_spec_cannot_point_tune_or_save_at_a_python_file_outside_its_folder(window, editor, tmp_path, file):
    """Tune copied the file an opened spec named (``../outside.py``, ``/etc/...``) into its draft and
    the run imported it: the spec, not the person, chose which code ran."""
    marker = tmp_path / "ran"
    outside = tmp_path / "outside.py"
    outside.write_text(f"open({str(marker)!r}, 'w').write('ran')\n"
                       "def reference(inputs, problem):\n    return {'out': inputs['x']}\n")
    folder = _saxpy_folder_with_python_reference(tmp_path / "opened", str(outside) if file == "ABSOLUTE" else file)
    editor.open_folder(folder)
    editor._guard(lambda: editor.tune(2))
    assert "reference.file: must be a .py file name in the template's folder" in editor.last_error
    editor.last_error = ""
    editor._guard(lambda: editor.save(tmp_path / "saved"))
    assert "reference.file" in editor.last_error
    assert not window.running and not marker.exists()
    copies = list(editor.drafts_dir().glob("*/_saxpy_reference.py"))  # (the drafts folder outlives a test)
    assert not any(c.read_text() == outside.read_text() for c in copies) and not (tmp_path / "saved").exists()


@pytest.mark.parametrize("kind", ["expression", "none"])
def test_a_python_reference_backed_out_of_is_neither_saved_nor_copied(editor, qtbot, tmp_path, kind):
    """Choosing a file and then setting the kind back to an expression or none saved a Python
    reference anyway, and copied the file in: what the form showed and what was saved differed."""
    chosen = tmp_path / "mine.py"
    chosen.write_text("def reference(inputs, problem):\n    return {'out': inputs['x']}\n")
    editor.open_folder(EXAMPLE)
    editor.choose_reference(chosen)
    editor.ref_kind.setCurrentIndex(editor.ref_kind.findData(kind))
    if kind == "expression":
        set_row(editor.ref_table, 0, ("out", "a * x + y"))
    saved = json.loads(editor.save(tmp_path / "lib").read_text())
    assert saved["reference"]["kind"] == kind and "file" not in saved["reference"]
    assert not (tmp_path / "lib" / "_saxpy_reference.py").exists()


def test_saving_an_opened_template_elsewhere_takes_its_python_reference_along(editor, tmp_path):
    """Save to another folder wrote the spec naming the reference but not the file: every run of
    the saved template failed with "reference file not found"."""
    folder = _saxpy_folder_with_python_reference(tmp_path / "opened", "_ref.py")
    (folder / "_ref.py").write_text("def reference(inputs, problem):\n    return {'out': inputs['a'] * inputs['x'] + inputs['y']}\n")
    editor.open_folder(folder)
    saved = editor.save(tmp_path / "copy")
    spec = json.loads(saved.read_text())
    assert spec["reference"]["file"] == "_saxpy_reference.py"
    assert (tmp_path / "copy" / "_saxpy_reference.py").read_text() == (folder / "_ref.py").read_text()
    assert "_saxpy_reference.py (in the template folder)" in editor.ref_file_label.text()
    # saved where it came from, the spec keeps naming its own file and nothing is copied
    editor.open_folder(folder)
    assert json.loads(editor.save().read_text())["reference"]["file"] == "_ref.py"
    assert not (folder / "_saxpy_reference.py").exists()


def _saxpy_folder_with_headers(folder: Path) -> Path:
    """The example with its arithmetic in ``inc/axpy.h``, included through ``common.h`` beside it."""
    (folder / "inc").mkdir(parents=True)
    (folder / "common.h").write_text('#pragma once\n#include "inc/axpy.h"\n')
    (folder / "inc" / "axpy.h").write_text("#pragma once\n__device__ __forceinline__ float axpy1(float a, float x, "
                                          "float y) { return a * x + y; }\n")
    (folder / "saxpy.cu").write_text('#include "common.h"\n' + SAXPY_CU.replace("out[i] = a * x[i] + y[i]",
                                                                                 "out[i] = axpy1(a, x[i], y[i])"))
    (folder / f"saxpy{SPEC_SUFFIX}").write_text((EXAMPLE / f"saxpy{SPEC_SUFFIX}").read_text())
    return folder


def test_headers_beside_an_opened_template_are_checked_saved_and_tuned_with_it(window, editor, qtbot, tmp_path):
    """The check compiled the source from the working folder ("cannot open source file" and Tune
    disabled), and Save to folder and Tune wrote the spec and the source without the headers, so
    every candidate of the copy failed to compile."""
    folder = _saxpy_folder_with_headers(tmp_path / "mine")
    editor.open_folder(folder)
    report = checked(editor, qtbot)
    assert report.ok and report.compiled, [str(d) for d in report.diagnostics]
    saved = editor.save(tmp_path / "copy")
    assert window.toolbar.kernel_folders["saxpy"] == str(tmp_path / "copy")  # the window follows the copy
    assert (tmp_path / "copy" / "common.h").read_text() == (folder / "common.h").read_text()
    assert (tmp_path / "copy" / "inc" / "axpy.h").read_text() == (folder / "inc" / "axpy.h").read_text()
    assert load_templates(saved.parent)["saxpy"].include_options == (f"--include-path={saved.parent.resolve()}",)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "common.h").write_text("// someone else's\n")
    with pytest.raises(WorkbenchError, match="exists with other content than the header common.h"):
        editor.save(tmp_path / "other")
    assert (tmp_path / "other" / "common.h").read_text() == "// someone else's\n"
    assert not (tmp_path / "other" / f"saxpy{SPEC_SUFFIX}").exists()
    editor.restrictions.setPlainText("block_size > 100000")  # a spec the save refuses: no header left behind
    with pytest.raises(SpecError):
        editor.save(tmp_path / "refused")
    assert not (tmp_path / "refused" / "common.h").exists()
    editor.open_folder(folder, source="saxpy.cu")  # the .cu alone, as a new draft: its headers are beside it
    assert editor.folder is None and editor.headers_folder() == folder  # (checked and tuned with them, as above)
    editor.open_folder(folder)
    run = editor.tune(budget=4)
    draft = Path(run["kernel_dirs"][0])
    assert (draft / "inc" / "axpy.h").is_file() and (draft / "common.h").is_file()
    qtbot.waitUntil(lambda: not window.running, timeout=60_000)
    statuses = {t.status.value for t in window.model.session.trials}
    assert statuses == {"ok"}, [t.measurement.error for t in window.model.session.trials]


def test_a_python_reference_without_a_file_says_to_choose_one(editor):
    editor.open_folder(EXAMPLE)
    editor.ref_kind.setCurrentIndex(editor.ref_kind.findData("python"))
    editor._guard(lambda: editor.save())
    assert "reference.file: error: choose the file with the reference function (Choose reference file...)" in editor.last_error


def test_a_name_starting_with_an_underscore_is_refused_by_tune_and_save(editor, tmp_path):
    """Template lookups skip such names (a folder's private files), so a draft saved as ``_hidden``
    ran as "unknown template '_hidden'; available: _hidden, ..."."""
    editor.open_folder(EXAMPLE)
    editor.name_edit.setText("_hidden")
    for action in (lambda: editor.tune(2), lambda: editor.save(tmp_path / "lib")):
        editor.last_error = ""
        editor._guard(action)
        assert "name: must not start with '_'" in editor.last_error
    assert not (editor.drafts_dir() / "_hidden").exists() and not (tmp_path / "lib").exists()


def test_renaming_an_opened_template_keeps_its_entry_function(editor):
    """An entry equal to the name was shown empty ("same as the name"), so a rename took the
    entry along and the renamed template named a function its source does not have."""
    editor.open_folder(EXAMPLE)
    assert editor.entry_edit.text() == "saxpy"
    editor.name_edit.setText("axpy")
    assert editor.spec()["entry"] == "saxpy" and editor.spec()["name"] == "axpy"
    spec = json.loads((EXAMPLE / f"saxpy{SPEC_SUFFIX}").read_text())
    del spec["entry"]  # the loader takes the name for it
    editor.set_spec(spec, SAXPY_CU, None)
    assert editor.entry_edit.text() == "saxpy"
    editor.name_edit.setText("axpy")
    assert editor.spec()["entry"] == "saxpy"


def test_the_editor_is_usable_from_the_keyboard(editor, qtbot, tmp_path):
    """Tab stayed in the source (it inserts a tab) and in each table, so the form's other half
    was out of reach; and the editor had no keys for its actions (Ctrl+S did nothing)."""
    import shutil

    folder = tmp_path / "mine"
    shutil.copytree(EXAMPLE, folder)
    editor.open_folder(folder)
    editor.show()
    editor.activateWindow()
    qtbot.waitExposed(editor)
    editor.source.setFocus()
    qtbot.keyClick(editor.source, Qt.Key.Key_Tab, Qt.KeyboardModifier.ControlModifier)
    assert not editor.source.hasFocus() and "\t" not in editor.source.toPlainText()
    assert editor.restrictions.tabChangesFocus()
    assert not any(t.tabKeyNavigation() for t in (editor.slots_table, editor.problem_table, editor.args_table,
                                                  editor.ref_table))
    editor.source.setFocus()
    qtbot.keyClicks(editor.source, "// edited")
    assert editor.isWindowModified()
    qtbot.keyClick(editor.source, Qt.Key.Key_S, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: not editor.isWindowModified(), timeout=5_000)
    assert "// edited" in (folder / "saxpy.cu").read_text()
    assert editor.save_button.toolTip() == QKeySequence(QKeySequence.StandardKey.Save).toString(
        QKeySequence.SequenceFormat.NativeText)


def test_closing_the_main_window_asks_about_each_editors_unsaved_edits_and_closes_them(window, qtbot, monkeypatch):
    """The editors outlived the main window without a word about their edits, kept the program
    going alone, and their Tune started runs in the hidden window."""
    from PySide6.QtWidgets import QMessageBox

    window.interactive = True
    window.show()
    first, second = window.open_kernel_editor(EXAMPLE), window.open_kernel_editor()
    qtbot.addWidget(first)
    qtbot.addWidget(second)
    first.source.setPlainText(SAXPY_CU + "// not saved\n")
    asked: list[str] = []
    answers = iter([QMessageBox.StandardButton.Cancel, QMessageBox.StandardButton.Discard])
    monkeypatch.setattr(QMessageBox, "question", lambda _w, _t, text, *a, **k: asked.append(text) or next(answers))
    assert not window.close()
    assert window.isVisible() and first.isVisible() and second.isVisible() and len(asked) == 1
    assert "edits that are not saved" in asked[0]
    answers = iter([QMessageBox.StandardButton.Discard])
    with monkeypatch.context() as patch:  # the window's own question follows: Cancel there keeps the editors
        patch.setattr(window, "_maybe_save", lambda: False)
        assert not window.close()
    assert first.isVisible() and second.isVisible() and "not saved" in first.source.toPlainText()
    answers = iter([QMessageBox.StandardButton.Discard])
    assert window.close()
    assert not window.isVisible() and not first.isVisible() and not second.isVisible() and len(asked) == 3
    first.wait_for_check()
    second.wait_for_check()


def test_the_restrictions_tab_and_the_problems_list_agree_and_a_problem_leads_to_its_line(editor, qtbot):
    """The tab said "restrictions: ok" beside a listed error of a restriction (one that excludes
    the default config), numbered it otherwise (line 3 against restrictions[1]) and did not look
    again when a slot was renamed; clicking the listed problem did nothing."""
    editor.open_folder(EXAMPLE)
    editor.restrictions.setPlainText("block_size * items <= 4096\n\nblock_size > 256")
    report = checked(editor, qtbot)
    assert not report.ok
    (item,) = [editor.problems.item(i) for i in range(editor.problems.count())
               if editor.problems.item(i).text().startswith("restrictions, line 3: error:")]
    assert "excludes the default config" in item.text() and item.toolTip()
    status = editor.restriction_status.text()
    assert status.startswith("line 3: ") and "excludes the default config" in status
    editor.tabs.setCurrentIndex(0)
    editor._on_problem_activated(item)
    assert editor.tabs.currentWidget() is editor.restrictions_tab
    assert editor.restrictions.textCursor().blockNumber() == 2
    editor.restrictions.setPlainText("block_size * items <= 4096\n\n\nblock_size > 4096")  # edited, not checked yet
    assert editor.restriction_status.text() == "restrictions: ok"  # the last check's line 3 is not this text's
    editor.restrictions.setPlainText("block_size * items <= 4096")
    checked(editor, qtbot)
    assert editor.restriction_status.text() == "restrictions: ok"
    editor.slots_table.item(1, 0).setText("itemz")  # a slot renamed: the restriction names it no more
    assert "unknown name 'items'" in editor.restriction_status.text()


def test_a_session_whose_template_changed_since_says_so_when_opened_and_in_its_source(window, editor, qtbot,
                                                                                     tmp_path, cli):
    """A session measured before its template was edited and saved opened without a word, and its
    source view showed the new code as the config's; only Start then refused to continue it."""
    import shutil

    folder = tmp_path / "mine"
    shutil.copytree(EXAMPLE, folder)
    out = tmp_path / "s.json"
    assert cli("tune", "saxpy", "--kernel-dir", folder, "--backend", "sim", "--budget", "3", "--out", out,
               "--quiet").returncode == 0
    editor.open_folder(folder)  # the window runs and shows the template from there now
    window.open_session(out)
    window.source_view.show_trial(0)
    assert "changed" not in window.statusBar().currentMessage()
    assert "changed since" not in window.source_view.header.text()
    editor.source.setPlainText(SAXPY_CU.replace("#pragma unroll", "#pragma unroll 2"))
    editor.save()
    window.open_session(out)
    assert "the template saxpy changed since this session was measured" in window.statusBar().currentMessage()
    window.source_view.show_trial(0)
    assert "this is not the code its trials ran" in window.source_view.header.text()
    compare = window.compare  # its source diff says it too
    compare.pick(0, 1)
    assert compare.diff.toPlainText().startswith("# the template changed since this session was measured")
    assert compare.pair.tabText(compare.pair.indexOf(compare.diff)).endswith("(template changed)")


def test_save_does_not_replace_files_another_program_changed_since_they_were_opened(editor, tmp_path, monkeypatch):
    """A Save after a change of the Title replaced an edit made meanwhile in another editor to the
    .cu (or the spec), without a word."""
    import shutil

    from PySide6.QtWidgets import QMessageBox

    folder = tmp_path / "mine"
    shutil.copytree(EXAMPLE, folder)
    editor.open_folder(folder)
    (folder / "saxpy.cu").write_text((folder / "saxpy.cu").read_text() + "// theirs\n")
    editor.title_edit.setText("a new title")
    with pytest.raises(WorkbenchError, match="saxpy.cu changed on disk since it was opened here"):
        editor.save()
    assert (folder / "saxpy.cu").read_text().endswith("// theirs\n")
    assert json.loads((folder / f"saxpy{SPEC_SUFFIX}").read_text())["title"] != "a new title"
    editor.interactive = True  # a person is asked: Cancel keeps their file, Save replaces it
    answers = iter([QMessageBox.StandardButton.Cancel, QMessageBox.StandardButton.Save])
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: next(answers))
    editor._guard(editor.save)
    assert (folder / "saxpy.cu").read_text().endswith("// theirs\n") and "kept" in editor.statusBar().currentMessage()
    editor.save()
    assert not (folder / "saxpy.cu").read_text().endswith("// theirs\n")
    assert json.loads((folder / f"saxpy{SPEC_SUFFIX}").read_text())["title"] == "a new title"
    editor.title_edit.setText("again")  # saved here since: its own files, no question
    editor.interactive = False
    editor.save()


def test_the_windows_export_refuses_a_folder_that_defines_the_template_twice(window, editor, tmp_path, cli):
    """tune refused such a folder, but File > Export rendered its JSON spec for a session measured
    with the Python one."""
    import shutil

    folder = tmp_path / "mine"
    shutil.copytree(EXAMPLE, folder)
    out = tmp_path / "s.json"
    assert cli("tune", "saxpy", "--kernel-dir", folder, "--backend", "sim", "--budget", "2", "--out", out,
               "--quiet").returncode == 0
    editor.open_folder(folder)
    window.open_session(out)
    (folder / "saxpy.py").write_text("TEMPLATE = None\n")
    with pytest.raises(WorkbenchError, match="saxpy.py and saxpy.kernel.json both define template 'saxpy'"):
        window.export_best(tmp_path / "best.cu")
    assert not (tmp_path / "best.cu").exists()
    assert window._prediction_templates("saxpy") == {}


def test_save_never_writes_over_another_template_of_the_same_name(editor, tmp_path):
    """Renaming an opened template to the name of another in its folder, or saving it into a folder
    with a template of its name, wrote over that template's spec and source without a word."""
    folder = tmp_path / "lib"
    editor.open_folder(EXAMPLE)
    editor.save(folder)
    (folder / "saxpy.cu").write_text(SAXPY_CU + "// mine\n")
    other = tmp_path / "other"
    other.mkdir()
    editor.open_folder(EXAMPLE)
    editor.name_edit.setText("axpy")  # (the kernel's function keeps its name)
    editor.save(other)  # a new name in a new folder: saved
    editor.name_edit.setText("saxpy")
    editor._guard(lambda: editor.save(folder))  # into the folder holding another saxpy
    assert "saxpy.kernel.json: another template of that name is there" in editor.last_error
    assert (folder / "saxpy.cu").read_text().endswith("// mine\n")
    editor.open_folder(folder)  # opened, it is the editor's to save
    editor.source.setPlainText(SAXPY_CU + "// edited\n")
    editor.save()
    assert (folder / "saxpy.cu").read_text().endswith("// edited\n")


def test_links_neither_carry_a_file_from_elsewhere_nor_redirect_a_draft(editor, tmp_path):
    """A reference file that links outside the opened folder became a plain file of the folder it
    was saved to; a link in the drafts folder made Tune delete the specs where it pointed."""
    secret = tmp_path / "secret.txt"
    secret.write_text("def reference(inputs, problem):\n    return {'out': inputs['x']}\n")
    folder = _saxpy_folder_with_python_reference(tmp_path / "opened", "_ref.py")
    (folder / "_ref.py").symlink_to(secret)
    editor.open_folder(folder)
    editor._guard(lambda: editor.save(tmp_path / "copy"))
    assert "reference.file links to a file outside the template's folder" in editor.last_error
    assert not (tmp_path / "copy").exists()
    editor.open_folder(EXAMPLE)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious.kernel.json").write_text("{}")
    editor.drafts_dir().mkdir(parents=True, exist_ok=True)
    # where Tune would put this draft (a draft's folder is named by what it holds)
    link = editor.drafts_dir() / save_draft(tmp_path / "probe", editor.spec(), editor.source.toPlainText()).name
    if link.exists():
        import shutil
        shutil.rmtree(link)
    link.symlink_to(elsewhere)
    editor.last_error = ""
    try:
        editor._guard(lambda: editor.tune(2))
        assert "a link, not a drafts folder of the editor's" in editor.last_error
        assert (elsewhere / "precious.kernel.json").exists()
    finally:
        link.unlink()


def test_a_folder_of_several_templates_opens_the_one_chosen_not_the_first(editor, tmp_path, monkeypatch):
    """Templates are saved side by side in one folder, and Open kernel folder... took a folder and
    opened its first template: every other saved template was out of the window's reach."""
    from PySide6.QtWidgets import QFileDialog

    from workbench.core.errors import WorkbenchError

    spec = json.loads((EXAMPLE / f"saxpy{SPEC_SUFFIX}").read_text())
    for name in ("alpha", "beta"):
        (tmp_path / f"{name}.cu").write_text(SAXPY_CU.replace("saxpy(", f"{name}("))
        (tmp_path / f"{name}{SPEC_SUFFIX}").write_text(json.dumps({**spec, "name": name, "entry": name,
                                                                   "source": f"{name}.cu"}, indent=2))
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(tmp_path / f"beta{SPEC_SUFFIX}"), ""))
    editor.choose_and_open()
    assert editor.spec_file == tmp_path / f"beta{SPEC_SUFFIX}"
    with pytest.raises(WorkbenchError, match=r"holds 2 templates \(alpha.kernel.json, beta.kernel.json\): open one"):
        editor.open_folder(tmp_path)
    # a .cu chosen in that folder starts a new template from it, not from the folder's first source
    editor.open_path(tmp_path / "beta.cu")
    assert "beta.cu" in editor.windowTitle() and editor.spec_file != tmp_path / f"alpha{SPEC_SUFFIX}"


def test_edits_not_saved_are_asked_about_before_another_template_or_closing_drops_them(editor, tmp_path, monkeypatch):
    """Opening another template or closing the editor threw the form's edits away without a word,
    and nothing showed that there were any."""
    from PySide6.QtWidgets import QFileDialog, QMessageBox

    editor.open_folder(EXAMPLE)
    assert not editor.modified() and not editor.isWindowModified()
    editor.title_edit.setText("my edit, not saved")
    assert editor.modified() and editor.isWindowModified()
    editor.interactive = True  # a person at the editor
    asked: list[str] = []
    answer = [QMessageBox.StandardButton.Cancel]
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: asked.append(a[2]) or answer[0])
    chosen: list[int] = []
    monkeypatch.setattr(QFileDialog, "getOpenFileName",
                        lambda *a, **k: chosen.append(1) or (str(EXAMPLE / f"saxpy{SPEC_SUFFIX}"), ""))
    editor.choose_and_open()
    assert len(asked) == 1 and "not saved" in asked[0] and not chosen
    assert editor.title_edit.text() == "my edit, not saved"
    editor.close()
    assert editor.isVisible() and len(asked) == 2  # Cancel keeps it open with the edit
    answer[0] = QMessageBox.StandardButton.Discard
    editor.choose_and_open()
    assert chosen and editor.title_edit.text() != "my edit, not saved" and not editor.modified()
    editor.save(tmp_path)
    editor.title_edit.setText("edited after the save")
    editor.save(tmp_path)
    assert not editor.modified() and not editor.isWindowModified()
    editor.close()
    assert not editor.isVisible() and len(asked) == 3  # nothing unsaved: closed without a question


def test_tune_is_offered_only_while_the_draft_checks_clean(editor, qtbot):
    """Tune stayed enabled under "problems: the default config does not compile", and the run then
    recorded a compile error for every config."""
    type_saxpy(editor, qtbot)
    assert checked(editor, qtbot).ok and editor.tune_button.isEnabled()
    editor.source.setPlainText(editor.source.toPlainText().replace("out[i] = a * x[i] + y[i];", "out[i] = a * x[i] +;"))
    report = checked(editor, qtbot)
    assert not report.ok and not editor.tune_button.isEnabled() and "fix the problems" in editor.tune_button.toolTip()
    # the count of problems first, not a note that reads as a success
    errors = sum(d.severity == "error" for d in report.diagnostics)
    assert editor.status_label.text().startswith(f"{errors} problem{'s' if errors > 1 else ''} to fix, listed below; ")


def test_a_cu_of_several_kernels_opens_on_its_first_kernel_and_a_wrong_entry_lists_them(editor, tmp_path):
    """The entry was the file's name (``multi``), which named no kernel, and the error did not say
    which kernels the file has."""
    from workbench.core.domain.templates import global_functions

    source = ('extern "C" __global__ void __launch_bounds__(256) scale_kernel(float* x) { x[threadIdx.x] *= 2.0f; }\n'
              'extern "C" __global__ void add_kernel(float* x) { x[threadIdx.x] += 1.0f; }\n')
    (tmp_path / "multi.cu").write_text(source)
    assert global_functions(source) == ["scale_kernel", "add_kernel"]
    editor.open_path(tmp_path / "multi.cu")
    assert editor.spec()["entry"] == "scale_kernel"
    assert editor.spec()["block"][0] == "1"  # no slot of the source is a block size: not a name it lacks
    (tmp_path / "tiles.cu").write_text('#ifndef THREADS_X\n#define THREADS_X 16\n#endif\n'
                                       'extern "C" __global__ void tiles(float* x) { x[threadIdx.x % THREADS_X] = 1.0f; }\n')
    editor.open_path(tmp_path / "tiles.cu")
    assert editor.spec()["block"][0] == "threads_x"
    from workbench.core.domain.kernel_spec import template_from_spec
    from workbench.core.errors import WorkbenchError

    spec = json.loads((EXAMPLE / f"saxpy{SPEC_SUFFIX}").read_text())
    with pytest.raises(WorkbenchError, match=r"entry function 'multi' does not appear in the source \(its kernels: "
                                             r"saxpy\)"):
        template_from_spec({**spec, "entry": "multi"}, SAXPY_CU)


def test_saving_under_a_shipped_templates_name_says_which_one_the_kernel_list_keeps(window, editor, qtbot, tmp_path):
    """Saved as ``stencil`` in the template folder, the person's template was absent from the
    kernel list (the shipped one keeps the name, as on the command line) without a word."""
    type_saxpy(editor, qtbot)
    editor.name_edit.setText("stencil")
    editor.save(tmp_path)
    assert "a shipped template is named stencil too" in editor.last_note
    assert f"tune --kernel-dir {tmp_path}" in editor.last_note
    # and so it is: the window's kernel list runs the shipped stencil (a save made it run this one)
    assert "stencil" not in window.toolbar.kernel_folders
    editor.name_edit.setText("my_saxpy")
    editor.save(tmp_path)
    assert editor.last_note == f"saved {tmp_path / 'my_saxpy.kernel.json'}"
    assert window.toolbar.kernel_folders["my_saxpy"] == str(tmp_path)
    # a folder opened on purpose runs its template under a shipped name, and the note says so
    folder = tmp_path / "opened"
    folder.mkdir()
    editor.name_edit.setText("stencil")
    editor.save(folder)
    reopened = window.open_kernel_editor(folder)
    qtbot.addWidget(reopened)
    reopened.save(folder)
    assert window.toolbar.kernel_folders["stencil"] == str(folder)
    assert "the kernel list runs this one, from the folder you opened" in reopened.last_note
    reopened.wait_for_check()


def test_saving_a_draft_tuned_under_a_shipped_name_says_the_kernel_list_runs_that_draft(window, editor, qtbot,
                                                                                          tmp_path):
    """Tuned as ``stencil`` and then saved, the note said the kernel list keeps the shipped stencil,
    while the list ran the draft tuned here (so that Start continues its session)."""
    type_saxpy(editor, qtbot)
    editor.name_edit.setText("stencil")
    checked(editor, qtbot)
    with qtbot.waitSignal(window.run_done, timeout=120_000):
        editor.tune(3)
    assert Path(window.toolbar.kernel_folders["stencil"]).is_relative_to(editor.drafts_dir())
    editor.save(tmp_path)
    assert ("the kernel list runs the draft tuned here under that name until this window closes, and tune stencil the "
            "shipped one") in editor.last_note, editor.last_note
    assert "keep that one" not in editor.last_note


def test_a_spec_whose_source_file_is_missing_says_so(editor, qtbot, tmp_path):
    """It opened with an empty source and no word, and the check blamed a missing entry function."""
    folder = tmp_path / "k"
    folder.mkdir()
    (folder / f"k{SPEC_SUFFIX}").write_text(json.dumps({
        "format": "kernel-workbench-template", "version": 1, "name": "k", "source": "k.cu",
        "slots": [{"name": "block_size", "values": [64, 128], "default": 64}],
        "grid": ["1"], "block": ["block_size"], "args": [{"name": "x", "kind": "out", "dtype": "float32", "shape": ["1"]}]}))
    editor.open_folder(folder)
    assert editor.statusBar().currentMessage().startswith("k.cu: no such file beside the spec; the source starts empty")
    report = checked(editor, qtbot)
    assert not report.ok and any("the source is empty" in d.message for d in report.diagnostics)


def test_tune_cancelled_at_the_save_question_gives_no_second_warning(window, editor, qtbot, tmp_path, monkeypatch):
    """Cancel at "Save the current session first?" when Tune starts a run was followed by a modal
    warning from the editor, as Start's was from the window."""
    from PySide6.QtWidgets import QMessageBox

    from workbench.core.domain.measurement import Measurement, Status, Trial
    from workbench.core.domain.session import Session
    from workbench.core.domain.space import Config, SearchSpace, Slot

    type_saxpy(editor, qtbot)
    space = SearchSpace([Slot("x", (1, 2))])
    window.model.set_session(Session(kernel="other", space=space, trials=[
        Trial(0, Config({"x": 1}), Measurement(Status.OK, {"latency_ms": 1.0}))]))
    window.model.dirty = True
    warned: list[str] = []
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Cancel)
    monkeypatch.setattr(QMessageBox, "warning", lambda _w, title, text, *a, **k: warned.append(text))
    window.interactive = editor.interactive = True
    try:
        editor._guard(lambda: editor.tune(budget=4))
    finally:
        window.interactive = editor.interactive = False
        window.model.dirty = False
    assert warned == [] and not window.running
    assert editor.statusBar().currentMessage() == "run not started: the current session has unsaved trials"


def test_enter_presses_the_focused_button_as_space_does(editor, qtbot):
    """The editor's buttons took Space only: Enter on a focused button did nothing."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QPushButton

    add = next(b for b in editor.findChildren(QPushButton) if b.text() == "Add row")
    table = add.parentWidget().findChildren(type(editor.slots_table))[0]
    rows = table.rowCount()
    qtbot.keyClick(add, Qt.Key.Key_Return)
    assert table.rowCount() == rows + 1


def test_a_cell_still_being_typed_in_is_part_of_what_save_and_close_read(editor, qtbot, tmp_path, monkeypatch):
    """Ctrl+S said "saved" and wrote the slot's old description, closing asked nothing and lost the
    values typed, while the cell's editor was still open."""
    from PySide6.QtWidgets import QApplication, QLineEdit, QMessageBox

    editor.open_folder(EXAMPLE)
    editor.show()
    table = editor.slots_table

    def type_into(row: int, column: int, text: str) -> None:
        table.setCurrentCell(row, column)
        table.editItem(table.item(row, column))
        typing = QApplication.focusWidget() if isinstance(QApplication.focusWidget(), QLineEdit) else None
        typing = typing or table.viewport().findChild(QLineEdit)
        assert typing is not None
        typing.setText(text)  # typed, not yet committed (no Enter, no click elsewhere)

    type_into(0, 4, "threads per block EDITED")
    saved = editor.save(tmp_path)
    assert "threads per block EDITED" in saved.read_text() and not editor.modified()
    type_into(0, 4, "edited once more")
    editor.interactive = True
    asked: list[str] = []
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: asked.append(a[2]) or QMessageBox.StandardButton.Save)
    editor.close()
    assert len(asked) == 1 and not editor.isVisible()  # asked, and Save kept the edit
    assert "edited once more" in saved.read_text()


def test_an_output_renamed_or_its_kind_mistyped_keeps_its_reference_expression(editor):
    """Renaming ``out`` to ``result`` (or typing its kind as ``output`` for a moment) erased its
    expression for good: the check then said the reference expression is empty."""
    editor.open_folder(EXAMPLE)
    row = next(r for r in range(editor.args_table.rowCount()) if editor.args_table.item(r, 1).text() == "out")
    name = editor.args_table.item(row, 0).text()
    expression = editor.ref_table.item(0, 1).text()
    assert expression

    def reference_rows() -> list[tuple[str, str]]:
        return [(editor.ref_table.item(r, 0).text(), editor.ref_table.item(r, 1).text())
                for r in range(editor.ref_table.rowCount())]

    editor.args_table.item(row, 0).setText("result")
    assert reference_rows() == [("result", expression)]
    editor.args_table.item(row, 0).setText(name)
    assert reference_rows() == [(name, expression)]
    editor.args_table.item(row, 1).setText("output")  # not an output kind: the row goes
    assert reference_rows() == []
    editor.args_table.item(row, 1).setText("out")
    assert reference_rows() == [(name, expression)]
    # an expression cleared on purpose stays cleared when another output's row goes
    set_row(editor.args_table, editor.args_table.rowCount(), ("out2", "out", "float32", "n"))
    editor.ref_table.item(0, 1).setText("")
    assert reference_rows() == [(name, ""), ("out2", "")]
    editor.args_table.removeRow(editor.args_table.rowCount() - 1)
    editor._sync_reference_rows()
    assert reference_rows() == [(name, "")]


def test_save_to_a_folder_names_the_saved_file_in_the_title_and_f5_is_on_tunes_tip(editor, qtbot, tmp_path):
    type_saxpy(editor, qtbot)
    assert checked(editor, qtbot).ok and editor.tune_button.toolTip() == "F5"
    saved = editor.save(tmp_path)
    assert editor.windowTitle() == f"Kernel template editor - {saved}[*]"  # (it stayed the draft's)


def test_a_problem_parameter_given_twice_is_refused_naming_both_rows(editor, qtbot):
    type_saxpy(editor, qtbot)
    set_row(editor.problem_table, 2, ("n", "1024", "64", "again"))
    editor.spec()
    assert [str(p) for p in editor.form_problems] == [
        "problem.n: error: problem parameter 'n' is declared twice (rows 1 and 3)"]
    with pytest.raises(WorkbenchError, match="declared twice"):
        editor.save()


def test_clicking_a_spec_problem_goes_to_its_field_and_a_source_line_it_names_is_marked(editor, qtbot):
    """Only source lines and restrictions could be gone to: clicking "slots[1].group: ..." left
    the tab and the focus where they were, and "line 3 of the source defines BLOCK_SIZE itself"
    marked no line."""
    type_saxpy(editor, qtbot)
    set_row(editor.slots_table, 1, (None, None, "memroy", None, None))
    checked(editor, qtbot)
    (item,) = [editor.problems.item(i) for i in range(editor.problems.count())
               if editor.problems.item(i).text().startswith("slots[1].group")]
    editor.tabs.setCurrentIndex(editor.tabs.count() - 1)
    editor.problems.itemClicked.emit(item)
    assert editor.tabs.currentWidget().isAncestorOf(editor.slots_table)
    assert (editor.slots_table.currentRow(), editor.slots_table.currentColumn()) == (1, 2)
    set_row(editor.slots_table, 1, (None, None, "launch", None, None))
    editor.go_to_field("cost.flops")
    assert editor.tabs.currentWidget().isAncestorOf(editor.flops_edit)
    editor.go_to_field("problem.a")
    assert (editor.problem_table.currentRow(), editor.problem_table.currentColumn()) == (1, 1)

    lines = editor.source.toPlainText().splitlines()
    at = lines.index("#endif") + 1  # after the fallback's #ifndef: the source's own value wins over every config's
    editor.source.setPlainText("\n".join([*lines[:at], "#undef BLOCK_SIZE", "#define BLOCK_SIZE 64", *lines[at:]]))
    checked(editor, qtbot)
    (item,) = [editor.problems.item(i) for i in range(editor.problems.count())
               if f"line {at + 1} of the source undefines BLOCK_SIZE" in editor.problems.item(i).text()]
    assert item.data(Qt.ItemDataRole.UserRole) == at + 1
    assert editor.source.marks == {at + 1: "error"}


def test_a_problem_parameters_range_has_cells_of_its_own_and_survives_a_save(editor, qtbot, tmp_path):
    """n = 0 was refused with 'give its range ("min": 0)', which the Problem table had no cell for:
    only an edit of the JSON by hand could follow the advice."""
    type_saxpy(editor, qtbot)
    set_row(editor.problem_table, 0, (None, "0", "0", None))
    report = checked(editor, qtbot)
    assert any('"min"' in d.message and d.field.startswith("problem.n") for d in report.diagnostics)
    assert editor.problem_table.horizontalHeaderItem(4).text() == "min"
    set_row(editor.problem_table, 0, (None, "16777216", "4099", None, "1", "100000000"))
    report = checked(editor, qtbot)
    assert report.ok, [str(d) for d in report.diagnostics]
    saved = json.loads(editor.save(tmp_path).read_text())
    assert saved["problem"]["n"] == {"default": 16777216, "small": 4099, "doc": "elements", "min": 1, "max": 100000000}
    editor.open_folder(tmp_path)
    assert [editor.problem_table.item(0, c).text() for c in (4, 5)] == ["1", "100000000"]
    # a problem about a bound goes to its cell, not the default's
    editor.go_to_field("problem.n.max")
    assert (editor.problem_table.currentRow(), editor.problem_table.currentColumn()) == (0, 5)
    editor.go_to_field("problem.n.small")
    assert (editor.problem_table.currentRow(), editor.problem_table.currentColumn()) == (0, 2)
    # an unbounded side is an empty cell: inf was saved as Infinity, which is no JSON
    for column, key in ((5, "max"), (1, "default"), (2, "small")):
        cells: list = [None] * 6
        cells[column] = "inf"
        set_row(editor.problem_table, 0, tuple(cells))
        editor.spec()
        assert [p.field for p in editor.form_problems] == [f"problem.n.{key}"]  # (going to that cell)
        with pytest.raises(WorkbenchError, match=f"n: {key} must be a finite number"):
            editor.save(tmp_path)
        set_row(editor.problem_table, 0, (None, "16777216", "4099", None, "1", "100000000"))


def test_the_starter_draft_names_its_kernel_and_its_entry_alike(qtbot):
    """The new-kernel starter was named my_kernel with an entry kernel_name: a person renaming the
    kernel had a second name to find and change."""
    from workbench.gui.kernel_editor import KernelEditor

    editor = KernelEditor(interactive=False)
    qtbot.addWidget(editor)
    spec = editor.spec()
    assert spec["name"] == spec["entry"] == "my_kernel"
    assert "void my_kernel(" in editor.source.toPlainText()


def test_a_reference_file_chosen_for_a_template_of_a_folder_checks_clean_before_its_save(window, qtbot, tmp_path):
    """The check looked for the chosen file in the template's folder, where only a save copies it:
    "no such file", Tune off, and choosing the file again could not clear it."""
    import shutil

    folder = tmp_path / "mine"
    shutil.copytree(EXAMPLE, folder)
    editor = window.open_kernel_editor(folder)
    qtbot.addWidget(editor)
    assert checked(editor, qtbot).ok
    chosen = tmp_path / "ref.py"
    chosen.write_text("def reference(inputs, problem):\n    return {'out': inputs['a'] * inputs['x'] + inputs['y']}\n")
    editor.choose_reference(chosen)
    report = checked(editor, qtbot)
    assert report.ok, [d.message for d in report.diagnostics]
    chosen.unlink()  # gone before the save: said, at the field
    (error,) = [d for d in checked(editor, qtbot).diagnostics if d.severity == "error"]
    assert error.field == "reference.file" and f"{chosen}: no such file" in error.message
    editor.wait_for_check()


def test_the_expressions_table_is_greyed_out_for_another_reference_kind(editor, qtbot):
    """Beside a Python file or no reference, the expressions' table stayed editable, as if used."""
    kinds = editor.ref_kind
    kinds.setCurrentIndex(kinds.findData("python"))
    assert not editor.ref_table.isEnabled() and "not used" in editor.ref_table.toolTip()
    kinds.setCurrentIndex(kinds.findData("none"))
    assert not editor.ref_table.isEnabled()
    kinds.setCurrentIndex(kinds.findData("expression"))
    assert editor.ref_table.isEnabled() and editor.ref_table.toolTip() == ""


def test_ctrl_z_in_a_table_undoes_a_removed_row_or_a_typed_cell_and_ctrl_shift_z_redoes_it(editor, qtbot):
    """The editor's tables had no undo: Remove row on a slot lost its values, doc and default for
    good (the source and restriction fields undo, the tables did not). A removed row also
    re-checked nothing: a restriction on the removed slot was not said to name an unknown one."""
    from PySide6.QtWidgets import QPushButton

    type_saxpy(editor, qtbot)
    editor.wait_for_check()
    table = editor.slots_table
    before = [[table.item(r, c).text() for c in range(table.columnCount())] for r in range(table.rowCount())]
    remove = next(b for b in table.parent().findChildren(QPushButton) if b.text() == "Remove row")
    table.setFocus()
    table.setCurrentCell(1, 1)
    remove.click()
    assert table.rowCount() == 1 and editor.isWindowModified()
    assert "items" in editor.restriction_status.text()  # the restriction names a slot no longer there

    def rows():
        return [[table.item(r, c).text() for c in range(table.columnCount())] for r in range(table.rowCount())]

    qtbot.keyClick(table, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert rows() == before and "items" not in editor.restriction_status.text()
    qtbot.keyClick(table, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert table.rowCount() == 1
    qtbot.keyClick(table, Qt.Key.Key_Y, Qt.KeyboardModifier.ControlModifier)  # nothing more to redo
    assert table.rowCount() == 1
    qtbot.keyClick(table, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    table.item(0, 1).setText("64, 128")  # a typed cell is a step of its own
    assert editor.spec()["slots"][0]["values"] == [64, 128]
    qtbot.keyClick(table, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert rows() == before and editor.spec()["slots"][0]["values"] == [32, 64, 128, 256, 512, 1024]
    editor.new_kernel()  # another template: no step back into the one before
    opened = rows()
    qtbot.keyClick(table, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert rows() == opened


def test_undo_steps_are_what_one_action_did_to_the_tables_together(editor, qtbot, tmp_path):
    """Each table undoing on its own broke three ways: Detect (which fills rows unseen) merged
    with the edit before it, so one Ctrl+Z undid both and redo brought back one; a ``.cu`` opened
    left its detected rows as steps, so the first Ctrl+Z emptied a parameter's name; and undoing
    in the reference table, whose rows follow the arguments, was synced back at once, leaving
    undo with nothing to do. One history over the four tables takes one action as one step."""
    control, shift = Qt.KeyboardModifier.ControlModifier, Qt.KeyboardModifier.ShiftModifier

    def rows(table):
        return [[table.item(r, c).text() if table.item(r, c) else "" for c in range(table.columnCount())]
                for r in range(table.rowCount())]

    def keys(table, modifiers):
        editor._show_page_of(table)
        table.setFocus()
        qtbot.keyClick(table, Qt.Key.Key_Z, modifiers)

    slots, args, ref, problem = editor.slots_table, editor.args_table, editor.ref_table, editor.problem_table
    slots.item(0, 4).setText("my doc")
    edited = rows(slots), rows(problem)
    editor.source.setPlainText(editor.source.toPlainText().replace("blockIdx.x * BLOCK_SIZE",
                                                                   "blockIdx.x * BLOCK_SIZE * ITEMS + PROBLEM_M"))
    assert editor.detect_slots() == ["items"]
    detected = rows(slots), rows(problem)
    assert detected[1][-1][0] == "m"  # a problem parameter found too
    keys(slots, control)
    assert (rows(slots), rows(problem)) == edited  # what Detect added alone went, in one step
    keys(slots, control | shift)
    assert (rows(slots), rows(problem)) == detected

    row = next(r for r in range(args.rowCount()) if args.item(r, 1).text() == "in")
    name = args.item(row, 0).text()
    args.item(row, 1).setText("out")  # an input made an output: its reference row comes with it
    ref.item([r[0] for r in rows(ref)].index(name), 1).setText(f"{name} * 3")
    typed = rows(ref)
    keys(args, control)  # the expression typed, undone from the arguments' table
    keys(args, control)  # the kind: the reference row goes with it
    assert name not in [r[0] for r in rows(ref)] and args.item(row, 1).text() == "in"
    keys(args, control | shift)
    keys(args, control | shift)
    assert rows(ref) == typed
    keys(ref, control)  # from the reference table just as well
    assert [name, ""] in rows(ref) and args.item(row, 1).text() == "out"
    keys(ref, control | shift)
    assert rows(ref) == typed

    folder = tmp_path / "cu"
    folder.mkdir()
    (folder / "k2.cu").write_text('extern "C" __global__ void k2(const float* x, float* y)\n{\n'
                                  "    const long long i = (long long)blockIdx.x * BLOCK_SIZE * ITEMS + threadIdx.x;\n"
                                  "    if (i < PROBLEM_N) y[i] = x[i] * 2.0f;\n}\n")
    editor.open_folder(folder)
    opened = [rows(t) for t in (slots, editor.problem_table, args, ref)]
    assert opened[1] and opened[1][0][0] == "n"
    for table in (editor.problem_table, slots):
        keys(table, control)  # nothing to undo: what the open detected is the opened state
    assert [rows(t) for t in (slots, editor.problem_table, args, ref)] == opened and not editor.modified()


@pytest.mark.parametrize("data", ["plain", "linked", "syntax"])
def test_a_run_that_fails_in_the_chosen_reference_names_the_persons_file_not_the_drafts_copy(
        window, qtbot, tmp_path, monkeypatch, data):
    """Tune runs a draft holding a copy of the chosen reference: its error named
    ``.../template-drafts/saxpy-<hash>/_saxpy_reference.py``, a file the person never chose, and
    editing it would change nothing. The run's error names their file, also where the data
    folder lies behind a link (the run names the copy by its resolved path)."""
    from PySide6.QtWidgets import QMessageBox

    if data == "linked":
        (tmp_path / "data-real").mkdir()
        (tmp_path / "data-link").symlink_to(tmp_path / "data-real")
        monkeypatch.setenv("KERNEL_WORKBENCH_DATA_DIR", str(tmp_path / "data-link"))

    folder = tmp_path / "mine"
    shutil.copytree(EXAMPLE, folder)
    chosen = tmp_path / "my ref.py"
    chosen.write_text("def reference(inputs, problem):\n    raise ValueError('my bug here')\n" if data != "syntax"
                      else "def reference(inputs, problem)\n    return {}\n")  # (one that fails as it loads)
    editor = window.open_kernel_editor()
    qtbot.addWidget(editor)
    editor.open_folder(folder)
    editor.choose_reference(chosen)
    said: list[str] = []
    monkeypatch.setattr(QMessageBox, "warning", staticmethod(lambda _w, _t, text, *a, **k: said.append(text)))
    window.interactive = True
    with qtbot.waitSignal(window.run_done, timeout=60_000) as done:
        editor.tune(4)
    window.interactive = False
    assert done.args[0].reason == "error" and "template-drafts" in done.args[0].message  # the run's own record
    assert said and (f"{chosen}: reference(inputs, problem) raised ValueError: my bug here" if data != "syntax"
                     else f"{chosen}, line 1: SyntaxError: expected ':'") in said[0], said
    assert "template-drafts" not in said[0] and said[0].endswith("(the run read a copy of it in the kernel editor's drafts)")
    editor.wait_for_check()


def test_a_misspelt_slot_is_not_copied_into_the_restriction_that_spells_it_right(editor, qtbot):
    """With the slot ``items`` renamed ``itmes``, the restrictions tab told the person to write
    ``itmes`` in the restriction, the opposite of the problems list (the slot is misspelt: the
    source uses ITEMS). It names the source's spelling and asks about the slot."""
    type_saxpy(editor, qtbot)
    editor.slots_table.item(1, 0).setText("itmes")
    status = editor.restriction_status.text()
    assert "did you mean 'itmes'" not in status
    assert "unknown name 'items' (the source uses ITEMS and never ITMES: is the slot 'itmes' misspelt?)" in status
    editor.slots_table.item(1, 0).setText("items")
    editor.restrictions.setPlainText("block_size * itemz <= 4096")  # the restriction misspelt: its own hint stays
    assert "did you mean 'items'?" in editor.restriction_status.text()


def test_the_editor_opens_with_room_for_a_kernels_lines_where_the_screen_has_it():
    """At a fixed 1180 x 720 with two equal panes about 68 columns of code showed: a kernel's
    signature was cut after its first argument while the problems list beside it stood empty."""
    from workbench.gui.kernel_editor import editor_layout

    assert editor_layout((1440, 900), 840) == (1296, 810, 776)  # 90 % of the screen; the code as wide as it may be
    assert editor_layout((1920, 1080), 840) == (1700, 972, 900)  # 100 columns and the margin, the rest to the right
    assert editor_layout((1024, 600), 840) == (1180, 720, 660)  # a small screen: no smaller than before
    assert editor_layout(None, 840) == (1180, 720, 660)


def test_the_editors_tune_runs_on_the_simulated_gpu_and_figures_the_tool_bar_shows(window, editor, qtbot):
    """It ran on the default GPU with compiled figures while the tool bar said another GPU and
    *estimated*, so the results read as that GPU's."""
    toolbar = window.toolbar
    toolbar.backend.setCurrentIndex(toolbar.backend.findData("sim"))
    toolbar.gpu.setCurrentText("A100_SXM")
    toolbar.resources.setCurrentIndex(toolbar.resources.findData("estimate"))
    type_saxpy(editor, qtbot)
    checked(editor, qtbot)
    with qtbot.waitSignal(window.run_done, timeout=120_000):
        editor.tune(4)
    session = window.model.session
    assert session.device.get("model") == "A100_SXM"
    assert session.backend["options"]["compile"] == "estimate"
    assert toolbar.gpu.currentText() == "A100_SXM"
    toolbar.apply({"backend": "sim", "gpu_model": "MI300X"})  # (a reopened session's model the simulator does not know)
    assert toolbar.gpu.currentText() == "MI300X"
    with qtbot.waitSignal(window.run_done, timeout=120_000):
        editor.tune(2)  # runs, on the simulator's default GPU, as before
    assert window.model.session.device.get("model") != "MI300X"


def test_a_problem_parameter_without_a_default_is_one_problem_not_two(editor, qtbot):
    """Its cell's error came with a second one from the argument whose shape names it ("unknown
    name 'n'"), though the parameter is in the table."""
    type_saxpy(editor, qtbot)
    set_row(editor.problem_table, 0, ("n", "", "4099", "elements"))
    checked(editor, qtbot)
    shown = [editor.problems.item(i).text() for i in range(editor.problems.count())]
    assert any(text.startswith("problem.n.default: error:") for text in shown), shown
    assert not any("unknown name 'n'" in text for text in shown), shown
