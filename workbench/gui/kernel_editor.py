"""The template editor: write or open a CUDA kernel, mark its slots, check it as you type, save, tune.

The form holds everything a declarative spec (:mod:`workbench.core.domain.kernel_spec`) describes; every
check is the Qt-free code a run uses. Restrictions are checked on each keystroke (cheap: parsing
only) with the offending part underlined; after each pause in typing the whole draft is checked in
a background thread (:func:`workbench.core.model.kernel_draft.check_draft`: build the template, count the
valid configs, compile the default config with NVRTC), so the window never waits on the compiler.
Tuning writes the draft into the workbench's own drafts folder and starts the run through the main
window, i.e. the run controller, like any other run.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any, Callable, Mapping

from PySide6.QtCore import QThread, Qt, Signal
from PySide6.QtGui import QColor, QGuiApplication, QKeySequence, QShortcut, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import (
    QAbstractItemDelegate, QAbstractItemView, QApplication, QComboBox, QFileDialog, QFormLayout, QHBoxLayout, QLabel, QLineEdit, QListView, QListWidget, QListWidgetItem,
    QMainWindow, QMessageBox, QPlainTextEdit, QPushButton, QSpinBox, QSplitter, QTableWidget, QTableWidgetItem, QTabWidget,
    QTextEdit, QVBoxLayout, QWidget,
)

from workbench.core.errors import Cancelled, WorkbenchError, counted
from workbench.core.model.kernel_draft import Diagnostic, DraftReport, check_draft
from workbench.core.domain.kernel_spec import (
    DEFAULT_ARG_KIND, DEFAULT_ATOL, DEFAULT_DTYPE, DEFAULT_GROUP, DEFAULT_RTOL, SPEC_SUFFIX, SpecError, expression_problem, format_values, load_declarative, parse_values,
    check_template_name, read_cuda_file, read_spec, read_spec_source, reference_file_named, save_template_folder,
    slot_typo_hint,
    spec_path, split_expressions, user_templates_dir,
)
from workbench.core.fs import resolved
from workbench.core.model.template_drafts import draft_copies, save_draft
from workbench.gui.table_history import TablesHistory
from workbench.core.model.template_headers import header_copies, template_file_names, write_headers
from workbench.core.domain.macros import scan_macros
from workbench.core.domain.templates import global_functions
from workbench.gui.text import plain_tip, window_message
from workbench.gui.status_bar import install_status_bar
from workbench.gui.timers import single_shot

#: Most slots one Detect slots adds: a source using thousands of undefined macros (20,000 rows
#: took the window 15 s to fill) is no template to tune.
MAX_DETECTED_SLOTS = 1000
#: Pause in typing (ms) after which the draft is checked and compiled in the background.
CHECK_DELAY_MS = 700
SLOT_COLUMNS = ("name", "values", "group", "default", "description")
#: (min and max last: the spec's own optional bounds; an integer parameter without "min" is a size,
#: at least 1, and the refusal of a default of 0 asked for a "min" the form had no cell for)
PROBLEM_COLUMNS = ("name", "default", "small", "description", "min", "max")
ARG_COLUMNS = ("name", "kind", "dtype", "shape / value", "rtol", "atol")
PROFILE_KEYS = ("work_per_thread", "access_bytes", "coalescing", "bytes_read", "bytes_written")

NEW_SOURCE = """// y = a * x + y, written from scratch. Upper-case macros the file uses but does not define
// (here BLOCK_SIZE) are the slots; PROBLEM_N is the problem parameter n.
extern "C" __global__ void my_kernel(const float* __restrict__ x, float* __restrict__ y, float a)
{
    const long long i = (long long)blockIdx.x * BLOCK_SIZE + threadIdx.x;
    if (i < PROBLEM_N) y[i] = a * x[i] + y[i];
}
"""


#: Where a problems-list entry keeps the line of the restriction it is about (0: none).
_RESTRICTION_LINE = Qt.ItemDataRole.UserRole + 1
_FIELD = Qt.ItemDataRole.UserRole + 2  # a spec problem's field (slots[1].group), for going to it
#: A spec message that names a line of the source ("line 3 of the source defines BLOCK_SIZE itself").
_SOURCE_LINE = re.compile(r"\bline (\d+) of the source\b")
#: Columns of the tables' cells, by the spec field they fill.
_SLOT_COLUMNS = {"name": 0, "values": 1, "group": 2, "default": 3, "doc": 4}
_ARG_COLUMNS = {"name": 0, "kind": 1, "dtype": 2, "shape": 3, "value": 3, "rtol": 4, "atol": 5}
_PROBLEM_COLUMNS = {"default": 1, "small": 2, "doc": 3, "min": 4, "max": 5}


class _CheckThread(QThread):
    """Runs one :func:`check_draft` off the GUI thread."""

    checked = Signal(int, object)

    def __init__(self, generation: int, spec: dict[str, Any], source: str, folder: Path | None,
                 parent: QWidget, reference_at: Path | None = None) -> None:
        super().__init__(parent)
        self.generation, self.spec, self.source, self.folder = generation, spec, source, folder
        self.reference_at = reference_at

    def run(self) -> None:
        try:
            report = check_draft(self.spec, self.source, folder=self.folder, reference_at=self.reference_at)
        except Exception as exc:  # noqa: BLE001 - a checker bug must show as a problem, not kill the window
            report = DraftReport((Diagnostic("spec", "error", f"{type(exc).__name__}: {exc}"),))
        self.checked.emit(self.generation, report)


#: What the form edits, per part of a spec; everything else an opened spec holds (a description,
#: compile options, an argument's value range or reset, a problem parameter's bounds, keys of a
#: newer spec version) is carried over unchanged by :func:`keep_unedited_fields`.
_FORM_FIELDS = frozenset({"name", "entry", "title", "slots", "restrictions", "problem", "grid", "block",
                          "dynamic_smem", "args", "reference", "cost", "profile", "source", "format", "version"})
_SLOT_FIELDS = frozenset({"name", "values", "group", "default", "doc"})
_PROBLEM_FIELDS = frozenset({"default", "small", "doc", "min", "max"})
_ARG_FIELDS = frozenset({"name", "kind", "dtype", "value", "shape", "rtol", "atol"})
_REFERENCE_FIELDS = frozenset({"kind", "outputs", "file", "function"})
_COST_FIELDS = frozenset({"bytes_moved", "flops"})


def _extras(original: Any, edited_fields: frozenset[str]) -> dict[str, Any]:
    return {k: v for k, v in original.items() if k not in edited_fields} if isinstance(original, Mapping) else {}


def _by_name(items: Any) -> dict[Any, Any]:
    return {item.get("name"): item for item in items if isinstance(item, Mapping)} if isinstance(items, list) else {}


def keep_unedited_fields(opened: Mapping[str, Any], edited: dict[str, Any]) -> dict[str, Any]:
    """``edited`` (the spec the form describes) with every field of the ``opened`` spec that the
    form has no control for. Why: saving a hand-written spec the editor opened must not drop what
    the form cannot show; an argument losing its ``reset`` breaks a kernel that accumulates into
    it. Slots and arguments are matched by name, problem parameters by key; one renamed or removed
    in the form takes its extra fields with it."""
    merged = {**_extras(opened, _FORM_FIELDS), **edited}
    for key, fields in (("slots", _SLOT_FIELDS), ("args", _ARG_FIELDS)):
        before = _by_name(opened.get(key))
        merged[key] = [{**_extras(before.get(item.get("name")), fields), **item} for item in edited.get(key, [])]
    problem = opened.get("problem")
    if not isinstance(problem, Mapping):
        problem = {}
    merged["problem"] = {name: {**_extras(problem.get(name), _PROBLEM_FIELDS), **entry}
                         for name, entry in edited.get("problem", {}).items()}
    reference = opened.get("reference")
    if isinstance(reference, Mapping) and reference.get("kind") == edited.get("reference", {}).get("kind"):
        merged["reference"] = {**_extras(reference, _REFERENCE_FIELDS), **edited["reference"]}
    for key, fields in (("cost", _COST_FIELDS), ("profile", frozenset(PROFILE_KEYS))):
        kept = _extras(opened.get(key), fields)
        if kept or key in edited:
            merged[key] = {**kept, **edited.get(key, {})}
    return merged


def _fit_names(table: QTableWidget, widest: int = 260) -> None:
    """The first column (the names) as wide as its entries, up to ``widest`` pixels: the
    default width cut a slot's name to items_per_th... beside an empty description, while a
    column sized to its contents for good would push the others out of sight on a long name
    and could not be narrowed by hand."""
    table.resizeColumnToContents(0)
    header = table.horizontalHeader()
    header.resizeSection(0, min(header.sectionSize(0), widest))


def _item(text: Any) -> QTableWidgetItem:
    return QTableWidgetItem("" if text is None else str(text))


def _cell(table: QTableWidget, row: int, column: int) -> str:
    item = table.item(row, column)
    return item.text().strip() if item is not None else ""


def _scalar(text: str) -> Any:
    """A problem value typed in a cell: int, float or true/false (ValueError otherwise)."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(low.replace("_", ""))
    except ValueError:
        return float(low)


def editor_layout(screen: tuple[int, int] | None, columns_100: int) -> tuple[int, int, int]:
    """The editor's opening (width, height, source pane width) on a screen of ``screen`` pixels
    (None: unknown), where 100 columns of the source's font take ``columns_100`` pixels: 90 % of the
    screen, at least 1180 x 720 and at most 1700 x 1100, the source given its 100 columns (with the
    line numbers and a margin) while the right pane keeps 520 px."""
    width = max(1180, min(int(screen[0] * 0.9), 1700)) if screen is not None else 1180
    height = max(720, min(int(screen[1] * 0.9), 1100)) if screen is not None else 720
    return width, height, min(columns_100 + 60, width - 520)


class KernelEditor(QMainWindow):
    """Template editor window. ``start_run(run)`` starts a run (the main window's :meth:`start_run`)."""

    checked = Signal(object)  # DraftReport, after each background check (tests wait on it)

    def __init__(self, parent: QWidget | None = None, start_run: Callable[[dict[str, Any]], None] | None = None,
                 interactive: bool = True) -> None:
        super().__init__(parent)
        self.interactive = interactive  # False: errors go to the status bar only (automation, tests)
        self.last_error = ""
        self.last_note = ""  # what the last save said (also in the status bar)
        self.setWindowTitle("Kernel template editor[*]")
        self._saved_state: tuple[str, str] | None = None  # the form as last opened or saved (see modified)
        install_status_bar(self)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, False)
        self.start_run_callback = start_run
        #: told (name, folder) when a folder's declarative template opens: the person chose that
        #: folder, so the main window may run and export the template from it (``--kernel-dir``)
        self.folder_opened: Callable[[str, Path], None] | None = None
        #: The folder the main window's kernel list runs a template name from (None: the shipped
        #: library or the template folder), for what a Save says of the name.
        self.runs_from: Callable[[str], str | None] | None = None
        #: The folder opened on purpose (File > Open kernel folder) whose template the window runs from
        #: there under its name, a shipped template's name too (None: none was)
        self.opened_folder: Path | None = None
        self.folder: Path | None = None  # where the template was opened from / saved to
        self._lone_source_folder: Path | None = None  # where a .cu opened as a new draft lies
        self._drop_asked = False  # (close_asked: the question about unsaved edits was asked already)
        #: the spec and source files as they were when opened or saved here (path -> content hash,
        #: None: absent): Save over them asks first when another program changed them since
        self._on_disk: dict[Path, str | None] = {}
        self.spec_file: Path | None = None  # the spec file opened or saved last (None: a new draft)
        self.reference_file: Path | None = None  # a python reference the person chose in this dialog
        self.report: DraftReport | None = None
        self._typed_restriction_problems: list[str] = []  # the Restrictions tab's, as typed
        self._report_restrictions = ""  # the restrictions text the report was made for
        self._checking_restrictions: dict[int, str] = {}  # check generation -> the text it checks
        self.form_problems: list[Diagnostic] = []
        self._generation = 0
        self._thread: _CheckThread | None = None
        self._pending = False
        self._loading = False
        self._ref_memory: dict[str, str] = {}  # output name -> its last reference expression (see _sync_reference_rows)
        self.timer = single_shot(self, CHECK_DELAY_MS, self.check_now)
        self._build()
        for button in self.findChildren(QPushButton):  # Enter presses a focused button, as Space does
            button.setAutoDefault(True)
        self.new_kernel()

    # --- layout -------------------------------------------------------------------------------------
    def _build(self) -> None:
        from workbench.gui.code_editor import CodeEditor

        self.name_edit = QLineEdit()
        self.entry_edit = QLineEdit()
        self.entry_edit.setPlaceholderText("same as the name")
        self.title_edit = QLineEdit()
        head = QFormLayout()
        head.addRow("Name", self.name_edit)
        head.addRow("Entry function", self.entry_edit)
        head.addRow("Title", self.title_edit)
        self.source = CodeEditor()
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.addLayout(head)
        left_layout.addWidget(self.source, 1)

        self.tabs = QTabWidget()
        self.slots_table = self._table(SLOT_COLUMNS)
        self.detect_button = QPushButton("Detect slots from source")
        self.detect_button.clicked.connect(lambda: self._guard(self.detect_slots))
        self.tabs.addTab(self._with_buttons(self.slots_table, self.detect_button), "Slots")
        self.restrictions = QPlainTextEdit()
        self.restrictions.setTabChangesFocus(True)  # (an expression has no use for a tab character)
        self.restrictions.setPlaceholderText("one restriction per line, e.g. block_size * items <= 4096")
        self.restriction_status = QLabel("")
        self.restriction_status.setWordWrap(True)
        box = QWidget()
        layout = QVBoxLayout(box)
        layout.addWidget(self.restrictions, 1)
        layout.addWidget(self.restriction_status)
        self.restrictions_tab = box
        self.tabs.addTab(box, "Restrictions")
        self.problem_table = self._table(PROBLEM_COLUMNS)
        self.tabs.addTab(self._with_buttons(self.problem_table), "Problem")
        launch = QWidget()
        form = QFormLayout(launch)
        self.grid_edits = [QLineEdit() for _ in range(3)]
        self.block_edits = [QLineEdit() for _ in range(3)]
        for axis, edit in zip("xyz", self.grid_edits):
            form.addRow(f"grid.{axis}", edit)
        for axis, edit in zip("xyz", self.block_edits):
            form.addRow(f"block.{axis}", edit)
        self.smem_edit = QLineEdit("0")
        form.addRow("dynamic shared memory (bytes)", self.smem_edit)
        self.tabs.addTab(launch, "Launch")
        self.args_table = self._table(ARG_COLUMNS)
        for column in (ARG_COLUMNS.index("rtol"), ARG_COLUMNS.index("atol")):
            header = self.args_table.horizontalHeaderItem(column)
            if header is not None:
                header.setToolTip(f"this output's own tolerance; blank: {DEFAULT_RTOL:g} / {DEFAULT_ATOL:g}")
        tolerance_note = QLabel(f"Each out/inout argument is checked with its own rtol and atol "
                                f"(blank: {DEFAULT_RTOL:g} and {DEFAULT_ATOL:g}).")
        tolerance_note.setWordWrap(True)
        self.tabs.addTab(self._with_buttons(self.args_table, tolerance_note), "Arguments")
        reference = QWidget()
        layout = QVBoxLayout(reference)
        self.ref_kind = QComboBox()
        self.ref_kind.addItem("NumPy expression per output", "expression")
        self.ref_kind.addItem("Python function in a file I choose", "python")
        self.ref_kind.addItem("no reference: the first valid config's outputs are the reference", "none")
        self.ref_table = self._table(("output", "expression"))
        self.ref_file_label = QLabel("no file chosen")
        self.ref_file_button = QPushButton("Choose reference file...")
        self.ref_file_button.clicked.connect(self._on_choose_reference)
        layout.addWidget(self.ref_kind)
        layout.addWidget(self.ref_table, 1)
        row = QHBoxLayout()
        row.addWidget(self.ref_file_label, 1)
        row.addWidget(self.ref_file_button)
        layout.addLayout(row)
        note = QLabel("A python reference runs only in the worker process when a run starts, never when a "
                      "template is opened. Inputs are float64 arrays named after the arguments.")
        note.setWordWrap(True)
        layout.addWidget(note)
        self.tabs.addTab(reference, "Reference")
        cost = QWidget()
        form = QFormLayout(cost)
        self.bytes_edit = QLineEdit()
        self.bytes_edit.setPlaceholderText("default: every array once")
        self.flops_edit = QLineEdit("0")
        form.addRow("bytes moved (problem)", self.bytes_edit)
        form.addRow("flops (problem)", self.flops_edit)
        self.profile_edits = {key: QLineEdit() for key in PROFILE_KEYS}
        for key, edit in self.profile_edits.items():
            edit.setPlaceholderText("default")
            form.addRow(f"profile: {key}", edit)
        self.tabs.addTab(cost, "Cost model")

        self.status_label = QLabel("")
        self.status_label.setWordWrap(True)
        self.resources_label = QLabel("")
        self.space_label = QLabel("")
        self.problems = QListWidget()
        # an entry wraps at the list's width: its reason came after the cut, behind a scroll bar
        self.problems.setWordWrap(True)
        self.problems.setResizeMode(QListView.ResizeMode.Adjust)
        self.problems.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.problems.itemActivated.connect(self._on_problem_activated)
        self.problems.itemClicked.connect(self._on_problem_activated)
        self.compile_button = QPushButton("Check now")
        self.compile_button.clicked.connect(self._on_check_now)
        self.save_button = QPushButton("Save")
        self.save_button.clicked.connect(lambda: self._guard(self.save))
        self.save_as_button = QPushButton("Save to folder...")
        self.save_as_button.clicked.connect(self._on_save_as)
        self.budget = QSpinBox()
        self.budget.setRange(1, 100_000)
        self.budget.setValue(20)
        self.budget.setSuffix(" evals")
        self.tune_button = QPushButton("Tune on simulator")
        self.tune_button.clicked.connect(lambda: self._guard(self.tune))
        buttons = QHBoxLayout()
        for widget in (self.compile_button, self.save_button, self.save_as_button, self.budget, self.tune_button):
            buttons.addWidget(widget)
        # the editor has no menu: its actions have their keys here (a disabled button's key does nothing)
        for keys, button in ((QKeySequence.StandardKey.Save, self.save_button), ("Ctrl+Shift+S", self.save_as_button),
                             ("Ctrl+Return", self.compile_button), ("F5", self.tune_button)):
            shortcut = QShortcut(QKeySequence(keys), self)
            shortcut.activated.connect(button.click)
            if button is not self.tune_button:  # (Tune's tool tip says what to fix while it is off)
                button.setToolTip(QKeySequence(keys).toString(QKeySequence.SequenceFormat.NativeText))
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.addWidget(self.tabs, 3)
        right_layout.addWidget(self.space_label)
        right_layout.addWidget(self.resources_label)
        right_layout.addWidget(self.status_label)
        right_layout.addWidget(self.problems, 1)
        right_layout.addLayout(buttons)
        splitter = QSplitter()
        splitter.addWidget(left)
        splitter.addWidget(right)
        self.setCentralWidget(splitter)
        # Sized to the screen, the source given room for 100 columns: at a fixed 1180 x 720 with two
        # equal panes, about 68 columns showed and a kernel's signature was cut after its first
        # argument, while the problems list beside it stood empty.
        screen = QGuiApplication.primaryScreen()
        room = screen.availableGeometry().size().toTuple() if screen is not None else None
        width, height, left_width = editor_layout(room, self.source.fontMetrics().horizontalAdvance("x" * 100))
        splitter.setSizes([left_width, width - left_width])
        splitter.setStretchFactor(0, 3)  # a wider window widens the code most
        splitter.setStretchFactor(1, 2)
        self.resize(width, height)

        for edit in (self.name_edit, self.entry_edit, self.title_edit, self.smem_edit, self.bytes_edit, self.flops_edit,
                     *self.grid_edits, *self.block_edits, *self.profile_edits.values()):
            edit.textChanged.connect(self._changed)
        self.source.textChanged.connect(self._changed)
        for edit in (*self.grid_edits, *self.block_edits, self.smem_edit):
            edit.textChanged.connect(lambda _text, e=edit: self._check_expression_field(e))
        self.restrictions.textChanged.connect(self._changed)
        self.restrictions.textChanged.connect(self.check_restrictions)
        tables = (self.slots_table, self.problem_table, self.args_table, self.ref_table)
        for table in tables:
            table.itemChanged.connect(self._changed)
            # a row added or removed is an edit too (removing a slot's row re-checked nothing)
            table.model().rowsInserted.connect(self._rows_changed)
            table.model().rowsRemoved.connect(self._rows_changed)
        #: Ctrl+Z and Ctrl+Shift+Z in the tables (after the connections above: a step is taken once
        #: the form has kept the reference rows in step with an edit)
        self.table_history = TablesHistory(tables, self._rows_changed)
        # a renamed slot or problem parameter is a name the restrictions may (no longer) use
        self.slots_table.itemChanged.connect(self.check_restrictions)
        self.problem_table.itemChanged.connect(self.check_restrictions)
        self.ref_kind.currentIndexChanged.connect(self._changed)
        self.ref_kind.currentIndexChanged.connect(self._show_reference_kind)

    def _table(self, columns: tuple[str, ...]) -> QTableWidget:
        table = QTableWidget(0, len(columns))
        table.setHorizontalHeaderLabels(list(columns))
        table.horizontalHeader().setStretchLastSection(True)
        table.verticalHeader().setVisible(False)
        table.setTabKeyNavigation(False)  # Tab leaves the table (arrows move between cells): no keyboard trap
        return table

    def _with_buttons(self, table: QTableWidget, *extra: QWidget) -> QWidget:
        box = QWidget()
        layout = QVBoxLayout(box)
        layout.addWidget(table, 1)
        row = QHBoxLayout()
        add, remove = QPushButton("Add row"), QPushButton("Remove row")
        add.clicked.connect(lambda: table.insertRow(table.rowCount()))
        remove.clicked.connect(lambda: table.removeRow(table.currentRow()) if table.currentRow() >= 0 else None)
        for widget in (*extra, add, remove):
            row.addWidget(widget)
        layout.addLayout(row)
        return box

    # --- form <-> spec ------------------------------------------------------------------------------
    def new_kernel(self) -> None:
        """An empty draft: the starter source, its slots detected, a 1D launch."""
        self.set_spec({
            "name": "my_kernel", "entry": "my_kernel",  # (one name: the entry was another, kernel_name)
            "problem": {"n": {"default": 1 << 20, "small": 1000}, "a": {"default": 2.0}},
            "grid": ["(n + block_size - 1) // block_size", "1", "1"], "block": ["block_size", "1", "1"],
            "args": [{"name": "x", "kind": "in", "dtype": "float32", "shape": ["n"]},
                     {"name": "y", "kind": "inout", "dtype": "float32", "shape": ["n"]},
                     {"name": "a", "kind": "scalar", "dtype": "float32", "value": "a"}],
            "reference": {"kind": "expression", "outputs": {"y": "a * x + y"}},
            "slots": [{"name": "block_size", "values": [64, 128, 256, 512], "group": "launch",
                       "doc": "threads per block", "default": 256}],
        }, NEW_SOURCE, folder=None)

    def set_spec(self, spec: Mapping[str, Any], source: str, folder: Path | None) -> None:
        """Fill the form from a spec mapping (never runs anything it names).

        Everything is read from the spec before the form changes: a spec this form cannot show
        raises with the form as it was, half-typed cells included (a form filled half-way, then
        replaced by a starter draft, lost the person's edits)."""
        opened = json.loads(json.dumps(spec))  # a deep copy: what the form does not edit is kept from it
        slots = [(s.get("name"), format_values(s.get("values", [])), s.get("group", DEFAULT_GROUP),
                  format_values([s["default"]]) if s.get("default") is not None else "", s.get("doc", ""))
                 for s in spec.get("slots", [])]
        restrictions = "\n".join(spec.get("restrictions", []))
        problem = [(name, format_values([e["default"] if isinstance(e, Mapping) else e]),
                    format_values([e.get("small", e["default"])]) if isinstance(e, Mapping) else "",
                    e.get("doc", "") if isinstance(e, Mapping) else "",
                    *(format_values([e[bound]]) if isinstance(e, Mapping) and e.get(bound) is not None else ""
                      for bound in ("min", "max")))
                   for name, e in spec.get("problem", {}).items()]
        launch = {key: [str(v) for v in (list(spec.get(key, [])) + ["1"] * 3)[:3]] for key in ("grid", "block")}
        args = [(a.get("name"), a.get("kind", DEFAULT_ARG_KIND), a.get("dtype", DEFAULT_DTYPE),
                 a.get("value", "") if a.get("kind") == "scalar" else ", ".join(map(str, a.get("shape", []))),
                 a.get("rtol", "") if a.get("kind") in ("out", "inout") else "",
                 a.get("atol", "") if a.get("kind") in ("out", "inout") else "")
                for a in spec.get("args", [])]
        reference = spec.get("reference", {"kind": "none"})
        ref_kind = self.ref_kind.findData(reference.get("kind", "expression"))
        outputs = list((reference.get("outputs") or {}).items())
        ref_label = f"{reference['file']} (in the template folder)" if reference.get("file") else "no file chosen"
        cost, profile = spec.get("cost", {}), spec.get("profile", {})
        name, title, smem = str(spec.get("name", "")), str(spec.get("title", "")), str(spec.get("dynamic_smem", "0"))
        # shown even where it equals the name: left empty it followed a rename, and the renamed
        # template named a kernel function its source does not have
        entry = str(spec.get("entry") or spec.get("name") or "")  # (a spec without one: its name, as it loads)
        moved, flops = str(cost.get("bytes_moved", "")), str(cost.get("flops", "0"))
        profiled = {key: str(profile.get(key, "")) for key in self.profile_edits}
        self._loading = True
        try:
            self.folder = folder
            self._lone_source_folder = None  # (open_folder sets it for a .cu opened as a new draft)
            self._ref_memory = {}  # (another template's outputs)
            self.spec_file = None  # (open_folder names it once the form is filled)
            self._opened = opened
            self.reference_file = None
            self.name_edit.setText(name)
            self.entry_edit.setText(entry)
            self.title_edit.setText(title)
            self.source.setPlainText(source)
            self._fill(self.slots_table, slots)
            self.restrictions.setPlainText(restrictions)
            self._fill(self.problem_table, problem)
            for edits, key in ((self.grid_edits, "grid"), (self.block_edits, "block")):
                for edit, value in zip(edits, launch[key]):
                    edit.setText(value)
            self.smem_edit.setText(smem)
            self._fill(self.args_table, args)
            self.ref_kind.setCurrentIndex(max(0, ref_kind))
            self._fill(self.ref_table, outputs)
            self._show_reference_kind()
            self.ref_file_label.setText(ref_label)
            self._ref_spec = dict(reference)
            self.bytes_edit.setText(moved)
            self.flops_edit.setText(flops)
            for key, edit in self.profile_edits.items():
                edit.setText(profiled[key])
        finally:
            self._loading = False
        self._saved_state = self._state()
        self.check_restrictions()
        self._changed()
        self.table_history.reset()  # (another template: no step back into the one before)

    def _fill(self, table: QTableWidget, rows: list[tuple[Any, ...]], undoable: bool = False) -> None:
        """Fill ``table`` with ``rows``: with the edit that led to it, a step Ctrl+Z undoes when
        ``undoable`` (the form keeping rows in step with others); else the filler (a template
        opened) starts the history again once done."""
        table.blockSignals(True)
        table.setRowCount(0)
        for values in rows:
            row = table.rowCount()
            table.insertRow(row)
            for column, value in enumerate(values):
                table.setItem(row, column, _item(value))
        table.blockSignals(False)
        _fit_names(table)
        if undoable:
            self.table_history.record()

    def spec(self) -> dict[str, Any]:
        """The spec the form describes; cells that cannot be read become problems (``form_problems``)."""
        problems: list[Diagnostic] = []
        name = self.name_edit.text().strip()
        spec: dict[str, Any] = {"name": name, "entry": self.entry_edit.text().strip() or name}
        if self.title_edit.text().strip():
            spec["title"] = self.title_edit.text().strip()
        slots: list[dict[str, Any]] = []
        for row in range(self.slots_table.rowCount()):
            slot_name = _cell(self.slots_table, row, 0)
            if not slot_name:
                continue
            entry: dict[str, Any] = {"name": slot_name, "group": _cell(self.slots_table, row, 2) or DEFAULT_GROUP}
            try:
                entry["values"] = parse_values(_cell(self.slots_table, row, 1))
            except ValueError as exc:
                problems.append(Diagnostic("spec", "error", f"{slot_name}: values: {exc}", field=f"slots[{len(slots)}].values"))
                entry["values"] = []
            if _cell(self.slots_table, row, 3):
                try:
                    entry["default"] = parse_values(_cell(self.slots_table, row, 3))[0]
                except ValueError as exc:
                    problems.append(Diagnostic("spec", "error", f"{slot_name}: default: {exc}", field=f"slots[{len(slots)}].default"))
            if _cell(self.slots_table, row, 4):
                entry["doc"] = _cell(self.slots_table, row, 4)
            slots.append(entry)
        spec["slots"] = slots
        spec["restrictions"] = [line.strip() for line in self.restrictions.toPlainText().splitlines() if line.strip()]
        problem = {}
        rows_of: dict[str, int] = {}
        for row in range(self.problem_table.rowCount()):
            pname = _cell(self.problem_table, row, 0)
            if not pname:
                continue
            if pname in rows_of:  # (the later row overwrote the earlier one, unsaid)
                problems.append(Diagnostic("spec", "error", f"problem parameter {pname!r} is declared twice (rows "
                                           f"{rows_of[pname] + 1} and {row + 1})", field=f"problem.{pname}"))
                continue
            rows_of[pname] = row
            entry = {}
            unread = ""
            for key in ("default", "small", "min", "max"):  # (the cells a value is typed in)
                text = _cell(self.problem_table, row, _PROBLEM_COLUMNS[key])
                if not text and key != "default":
                    continue  # (no small: the default's; no min or max: the spec's own rule)
                try:
                    value = _scalar(text)
                except ValueError:
                    unread = key
                    break
                if isinstance(value, float) and not math.isfinite(value):  # (saved as Infinity: no JSON)
                    unread = key
                    break
                entry[key] = value
            if unread:
                problems.append(Diagnostic("spec", "error", f"{pname}: {unread} must be a finite number or "
                                           "true/false", field=f"problem.{pname}.{unread}"))
                continue
            if _cell(self.problem_table, row, 3):
                entry["doc"] = _cell(self.problem_table, row, 3)
            problem[pname] = entry
        spec["problem"] = problem
        spec["grid"] = [e.text().strip() or "1" for e in self.grid_edits]
        spec["block"] = [e.text().strip() or "1" for e in self.block_edits]
        if self.smem_edit.text().strip() not in ("", "0"):
            spec["dynamic_smem"] = self.smem_edit.text().strip()
        args: list[dict[str, Any]] = []
        for row in range(self.args_table.rowCount()):
            aname = _cell(self.args_table, row, 0)
            if not aname:
                continue
            kind = _cell(self.args_table, row, 1) or DEFAULT_ARG_KIND
            arg: dict[str, Any] = {"name": aname, "kind": kind, "dtype": _cell(self.args_table, row, 2) or DEFAULT_DTYPE}
            text = _cell(self.args_table, row, 3)
            if kind == "scalar":
                arg["value"] = text or aname
            else:
                arg["shape"] = split_expressions(text) if text else []
            for column, key in ((4, "rtol"), (5, "atol")):
                if _cell(self.args_table, row, column) and kind in ("out", "inout"):
                    try:
                        arg[key] = float(_cell(self.args_table, row, column))
                    except ValueError:
                        problems.append(Diagnostic("spec", "error", f"{aname}: {key} must be a number", field=f"args[{len(args)}].{key}"))
            args.append(arg)
        spec["args"] = args
        kind = self.ref_kind.currentData()
        if kind == "expression":
            spec["reference"] = {"kind": "expression", "outputs": {
                _cell(self.ref_table, r, 0): _cell(self.ref_table, r, 1)
                for r in range(self.ref_table.rowCount()) if _cell(self.ref_table, r, 0)}}
        elif kind == "python":
            previous = getattr(self, "_ref_spec", {})
            if self.reference_file is None and not previous.get("file"):
                problems.append(Diagnostic("spec", "error", "choose the file with the reference function "
                                           "(Choose reference file...)", field="reference.file"))
            spec["reference"] = {"kind": "python", "file": previous.get("file", "") if self.reference_file is None
                                 else f"_{name}_reference.py", "function": previous.get("function", "reference")}
        else:
            spec["reference"] = {"kind": "none"}
        cost = {}
        if self.bytes_edit.text().strip():
            cost["bytes_moved"] = self.bytes_edit.text().strip()
        if self.flops_edit.text().strip() not in ("", "0"):
            cost["flops"] = self.flops_edit.text().strip()
        if cost:
            spec["cost"] = cost
        profile = {key: edit.text().strip() for key, edit in self.profile_edits.items() if edit.text().strip()}
        if profile:
            spec["profile"] = profile
        self.form_problems = problems
        return keep_unedited_fields(getattr(self, "_opened", {}), spec)

    # --- live checks --------------------------------------------------------------------------------
    def _state(self) -> tuple[str, str]:
        """What saving would write, to tell an edited form from the one opened or saved."""
        try:
            spec = json.dumps(self.spec(), sort_keys=True, default=str)
        except Exception as exc:  # noqa: BLE001 - a form half typed: whatever it is, it is not the saved one
            spec = f"unreadable: {exc}"
        return spec, self.source.toPlainText()

    def modified(self) -> bool:
        """Whether the form holds edits since it was opened (a starter draft, a .cu with its slots
        detected, a saved template) or saved."""
        return self._saved_state != self._state()

    def may_drop_edits(self, doing: str) -> bool:
        """Whether to go on with ``doing`` (opening another template, closing), which drops the
        form's unsaved edits: asked of a person; automation goes on, as a script asked for it."""
        self.commit_open_edits()  # (what a cell still being typed in holds is an edit too)
        if not self.interactive or not self.modified():
            return True
        answer = QMessageBox.question(
            self, "Kernel template", f"The template has edits that are not saved. {doing} and drop them?",
            QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Cancel)
        if answer == QMessageBox.StandardButton.Save:  # (without it: Cancel, Save, and the same again)
            try:
                self.save()
            except (WorkbenchError, OSError) as exc:  # not saved: nothing is dropped
                self._error(window_message(exc) if isinstance(exc, WorkbenchError)
                            else f"{exc.filename or ''}: {exc.strerror or exc}")
                return False
            return True
        return answer == QMessageBox.StandardButton.Discard

    def _rows_changed(self, *_: Any) -> None:
        """A table's rows changed as a whole (a row added or removed, an undo): what a cell's edit
        sets off, for any table, while the form is not being filled."""
        if self._loading or any(t.signalsBlocked() for t in (self.slots_table, self.problem_table,
                                                              self.args_table, self.ref_table)):
            return
        self._changed()
        self.check_restrictions()

    def _changed(self, *_: Any) -> None:
        if self._loading:
            return
        self.setWindowModified(self.modified())
        self._sync_reference_rows()
        self.status_label.setText("checking after the pause in typing...")
        self.timer.start()

    def _show_reference_kind(self, *_: object) -> None:
        """The expressions' table greyed out unless the kind is an expression per output: shown
        editable beside a Python file or no reference, it read as if it were still used (its
        expressions stay, for the kind chosen again)."""
        used = self.ref_kind.currentData() == "expression"
        self.ref_table.setEnabled(used)
        self.ref_table.setToolTip("" if used else "not used: the reference kind above is not an expression per output")

    def _sync_reference_rows(self) -> None:
        """One expression row per out/inout argument."""
        outputs = [_cell(self.args_table, r, 0) for r in range(self.args_table.rowCount())
                   if _cell(self.args_table, r, 1) in ("out", "inout") and _cell(self.args_table, r, 0)]
        present = [_cell(self.ref_table, r, 0) for r in range(self.ref_table.rowCount())]
        if present == outputs:
            return
        old = {_cell(self.ref_table, r, 0): _cell(self.ref_table, r, 1) for r in range(self.ref_table.rowCount())}
        # an expression is never lost to an edit of its argument's row: a renamed output takes it
        # along, and one whose row goes (its kind mistyped for a moment) gets it back when it returns
        # (a row still there keeps what it holds, an expression cleared on purpose too)
        self._ref_memory.update({name: text for name, text in old.items() if name})
        gone, new = [n for n in old if n not in outputs], [n for n in outputs if n not in old]
        renamed = {new[0]: old[gone[0]]} if len(gone) == 1 and len(new) == 1 else {}
        self._fill(self.ref_table, [(name, old[name] if name in old else renamed.get(name, self._ref_memory.get(name, "")))
                                    for name in outputs], undoable=True)

    def names(self) -> list[str]:
        """Names restrictions and geometry may use: slots and problem parameters."""
        names = [_cell(self.slots_table, r, 0) for r in range(self.slots_table.rowCount())]
        names += [_cell(self.problem_table, r, 0) for r in range(self.problem_table.rowCount())]
        return [n for n in names if n]

    def check_restrictions(self) -> list[str]:
        """Parse every restriction line now; underline the offending part; return the messages."""
        if self._loading:  # (once when the form is filled, not once per cell filled)
            return self._typed_restriction_problems
        names = self.names()
        messages, selections = [], []
        document = self.restrictions.document()
        for number, line in enumerate(self.restrictions.toPlainText().splitlines()):
            if not line.strip():
                continue
            problem = expression_problem(line, names)
            if problem is None:
                continue
            slots = [_cell(self.slots_table, r, 0) for r in range(self.slots_table.rowCount())]
            launch = " ".join(edit.text() for edit in (*self.grid_edits, *self.block_edits, self.smem_edit,
                                                       *self.profile_edits.values()))
            hinted = slot_typo_hint(problem.message, self.source.toPlainText(), slots, elsewhere=launch)
            messages.append(f"line {number + 1}: {hinted}")
            block = document.findBlockByNumber(number)
            cursor = QTextCursor(block)
            cursor.movePosition(QTextCursor.MoveOperation.Right, QTextCursor.MoveMode.MoveAnchor, problem.start)
            cursor.movePosition(QTextCursor.MoveOperation.Right, QTextCursor.MoveMode.KeepAnchor,
                                min(problem.length, max(1, len(line) - problem.start)))
            selection = QTextEdit.ExtraSelection()
            fmt = QTextCharFormat()
            fmt.setUnderlineStyle(QTextCharFormat.UnderlineStyle.WaveUnderline)
            fmt.setUnderlineColor(QColor("red"))
            fmt.setBackground(QColor("#ffe0e0"))
            selection.format = fmt
            selection.cursor = cursor
            selections.append(selection)
        self.restrictions.setExtraSelections(selections)
        self._typed_restriction_problems = messages
        self._show_restriction_status()
        return messages

    def _restriction_line(self, field: str) -> int:
        """The editor line (1-based) of a spec field ``restrictions[i]`` (the i-th line that is not
        blank, as :meth:`spec` numbers them), or 0."""
        match = re.fullmatch(r"restrictions\[(\d+)\]", field)
        if match is None:
            return 0
        filled = [n for n, line in enumerate(self.restrictions.toPlainText().splitlines(), 1) if line.strip()]
        index = int(match.group(1))
        return filled[index] if index < len(filled) else 0

    def _show_restriction_status(self) -> None:
        """The Restrictions tab's own line: what parsing as typed found, then what the last check
        found of the restrictions (excluding the default config, leaving no valid config), so the tab
        never says "ok" while the problems list has an error of them."""
        # the last check's, while the restrictions are the text it checked (after an edit its lines
        # would be mapped onto other text until the next check reports)
        current = self.report is not None and self._report_restrictions == self.restrictions.toPlainText()
        checked = [f"line {line}: {d.message}" if (line := self._restriction_line(d.field)) else d.message
                   for d in (self.report.diagnostics if self.report is not None and current else ())
                   if d.where == "spec" and d.field.startswith("restrictions") and d.severity == "error"]
        messages = list(dict.fromkeys([*self._typed_restriction_problems, *checked]))
        self.restriction_status.setText("\n".join(messages) if messages else "restrictions: ok")
        self.restriction_status.setStyleSheet("color: #b00020" if messages else "color: #1a7f37")

    def _check_expression_field(self, edit: QLineEdit) -> None:
        """Launch geometry is checked as typed too: a red field whose tooltip says what is wrong."""
        problem = expression_problem(edit.text() or "1", self.names())
        edit.setStyleSheet("background: #ffe0e0" if problem else "")
        # (the restriction language's message: a launch field is an expression, as the check list says)
        edit.setToolTip(plain_tip(problem.message.replace('restriction "', 'expression "', 1)) if problem else "")

    def _on_check_now(self) -> None:
        self.commit_open_edits()
        self.check_now()

    def check_now(self) -> None:
        """Start a background check of the draft (one at a time; the newest draft wins)."""
        self.timer.stop()
        spec = self.spec()
        self._generation += 1
        self._checking_restrictions = {self._generation: self.restrictions.toPlainText()}
        if self._thread is not None and self._thread.isRunning():
            self._pending = True
            return
        self._pending = False
        # (a reference file chosen here is read from where it is until a save copies it)
        thread = self._thread = _CheckThread(self._generation, spec, self.source.toPlainText(), self.headers_folder(),
                                             self, reference_at=self.reference_file)
        thread.checked.connect(self._on_checked)
        thread.finished.connect(lambda: self._on_thread_finished(thread))
        thread.start()

    def _on_thread_finished(self, thread: _CheckThread) -> None:
        """A check asked for after this thread's report was handled but before the thread ended
        was only marked pending (one thread at a time): it starts now, or nothing would report it."""
        if self._pending and thread is self._thread:
            self._pending = False
            self._thread = None
            self.check_now()

    def _on_checked(self, generation: int, report: DraftReport) -> None:
        if self._pending:
            self._pending = False
            self._thread = None
            self.check_now()
            return
        if generation != self._generation:
            return
        self.report = report
        self._report_restrictions = self._checking_restrictions.get(generation, "")
        self.source.highlighter.set_slots([_cell(self.slots_table, r, 0).upper() for r in range(self.slots_table.rowCount())
                                           if _cell(self.slots_table, r, 0)])
        self._show_report(report)
        self.checked.emit(report)

    def _show_report(self, report: DraftReport) -> None:
        # a domain the form could not read goes to the check empty: its "the domain is empty" only
        # repeats the cell's own problem (a slot of 70,000 values), every other finding stays
        unread = {p.field.removesuffix(".values") for p in self.form_problems if p.field.endswith(".values")}
        # a problem parameter whose cell cannot be read goes to the check without it: an expression
        # naming it ("unknown name 'h'") only repeats the cell's own problem
        unread_parameters = {p.field.split(".")[1] for p in self.form_problems if p.field.startswith("problem.")}
        diagnostics = list(self.form_problems) + [
            d for d in report.diagnostics if not (d.field in unread and d.message.endswith("the domain is empty"))
            and not any(f"unknown name {name!r}" in d.message for name in unread_parameters)]
        self.problems.clear()
        marks: dict[int, str] = {}
        for diagnostic in diagnostics:
            restriction = self._restriction_line(diagnostic.field) if diagnostic.where == "spec" else 0
            text = (f"restrictions, line {restriction}: {diagnostic.severity}: {diagnostic.message}" if restriction
                    else str(diagnostic))
            item = QListWidgetItem(text)
            item.setToolTip(plain_tip(text))  # (a long entry is cut at the list's edge)
            named = _SOURCE_LINE.search(diagnostic.message) if diagnostic.where == "spec" else None
            line = diagnostic.line or (int(named.group(1)) if named else 0)
            item.setData(Qt.ItemDataRole.UserRole, line)
            item.setData(_RESTRICTION_LINE, restriction)
            item.setData(_FIELD, diagnostic.field if diagnostic.where == "spec" else "")
            item.setForeground(QColor("#b00020" if diagnostic.severity == "error" else "#8a6d00"))
            self.problems.addItem(item)
            if line and (diagnostic.where == "source" or named) and not diagnostic.file:
                if marks.get(line) != "error":
                    marks[line] = diagnostic.severity
        self.source.mark_lines(marks)
        self._show_restriction_status()
        if report.valid_configs is None and report.space_size is not None:
            self.space_label.setText(f"space: {report.space_size:,} configs; valid configs: fix the restrictions first")
        elif report.valid_configs is not None:
            self.space_label.setText(f"space: {report.space_size:,} configs, {report.valid_configs:,} valid; "
                                     f"default {report.default_config}")
        else:
            self.space_label.setText("space: -")
        if report.compiled:
            r = report.resources
            self.resources_label.setText(f"default config (NVRTC, sm_90): {r['registers']} registers/thread, "
                                         f"{r['smem_bytes']} B shared memory, {r['spill_bytes']} B spills")
        else:
            self.resources_label.setText("default config: not compiled")
        ok = report.ok and not self.form_problems
        # the count first: "problems: default config compiled for sm_90" read as a success when the
        # problem was the reference or the arguments
        errors = sum(d.severity == "error" for d in diagnostics)  # as listed
        self.status_label.setText(f"ok: {report.note}" if ok else
                                  f"{counted(max(errors, 1), 'problem')} to fix, listed below; {report.note}")
        self.status_label.setStyleSheet("color: #1a7f37" if ok else "color: #b00020")
        # a run of a draft whose check failed measures nothing but that failure, config after config
        self.tune_button.setEnabled(ok)
        self.tune_button.setToolTip("F5" if ok else f"fix the problems first: {report.note}")  # (its key, as the others')

    def wait_for_check(self, timeout_ms: int = 30_000) -> None:
        """Block until the running check finishes (tests and closing)."""
        if self._thread is not None:
            self._thread.wait(timeout_ms)

    def _on_problem_activated(self, item: QListWidgetItem) -> None:
        line = item.data(Qt.ItemDataRole.UserRole)
        restriction = item.data(_RESTRICTION_LINE)
        if line:
            self.source.go_to_line(int(line))
        elif restriction:  # a restriction's problem: its tab, its line
            self.tabs.setCurrentWidget(self.restrictions_tab)
            block = self.restrictions.document().findBlockByNumber(int(restriction) - 1)
            self.restrictions.setTextCursor(QTextCursor(block))
            self.restrictions.setFocus()
        elif item.data(_FIELD):
            self.go_to_field(str(item.data(_FIELD)))

    def go_to_field(self, field: str) -> None:
        """Show the place of a spec problem's ``field`` (``slots[1].group``, ``problem.n``,
        ``args[2].rtol``, ``grid``, ``cost.flops``...): its tab, and the cell or field, focused.
        Clicking such a problem went nowhere, and ``slots[1]`` (the spec's second slot) left the
        person to count the table's rows."""
        match = re.match(r"(?P<part>\w+)(?:\[(?P<index>\d+)\])?(?:\.(?P<key>\w+))?", field)
        if match is None:
            return
        part, key = match["part"], match["key"] or ""
        index = int(match["index"]) if match["index"] is not None else 0
        edits = {"name": self.name_edit, "entry": self.entry_edit, "title": self.title_edit,
                 "grid": self.grid_edits[min(index, 2)], "block": self.block_edits[min(index, 2)],
                 "dynamic_smem": self.smem_edit, "cost": self.flops_edit if key == "flops" else self.bytes_edit,
                 "profile": self.profile_edits.get(key)}
        if part == "slots":
            self._go_to_cell(self.slots_table, self._entry_row(self.slots_table, index), _SLOT_COLUMNS.get(key, 0))
        elif part == "args":
            self._go_to_cell(self.args_table, self._entry_row(self.args_table, index), _ARG_COLUMNS.get(key, 0))
        elif part == "problem":
            rows = [r for r in range(self.problem_table.rowCount()) if _cell(self.problem_table, r, 0) == key]
            rest = field.split(".")[2] if field.count(".") >= 2 else "default"  # problem.n.max: its max cell
            self._go_to_cell(self.problem_table, rows[0] if rows else 0, _PROBLEM_COLUMNS.get(rest, 1))
        elif part == "reference":
            self._show_page_of(self.ref_table)
            self.ref_table.setFocus()
        elif part == "restrictions":
            self.tabs.setCurrentWidget(self.restrictions_tab)
            self.restrictions.setFocus()
        elif edits.get(part) is not None:
            edit = edits[part]
            assert edit is not None
            self._show_page_of(edit)
            edit.setFocus()
            edit.selectAll()

    @staticmethod
    def _entry_row(table: QTableWidget, index: int) -> int:
        """The table row of the spec's ``index``-th entry (rows without a name are no entry)."""
        named = [r for r in range(table.rowCount()) if _cell(table, r, 0)]
        return named[index] if index < len(named) else max(table.rowCount() - 1, 0)

    def _show_page_of(self, widget: QWidget) -> None:
        """Open the form's tab that holds ``widget`` (nothing for one above the tabs: the name)."""
        for index in range(self.tabs.count()):
            page = self.tabs.widget(index)
            if page is not None and page.isAncestorOf(widget):
                self.tabs.setCurrentIndex(index)
                return

    def _go_to_cell(self, table: QTableWidget, row: int, column: int) -> None:
        self._show_page_of(table)
        table.setCurrentCell(row, column)
        table.setFocus()

    def detect_slots(self) -> list[str]:
        """Add a row for every slot macro the source uses that the table lacks (and problem parameters)."""
        scan = scan_macros(self.source.toPlainText())
        have = {_cell(self.slots_table, r, 0) for r in range(self.slots_table.rowCount())}
        new = sum(1 for slot in scan.slots if slot.name not in have)
        if new > MAX_DETECTED_SLOTS:  # a row each would hold the window for many seconds, for no template
            raise WorkbenchError(f"the source uses {new:,} macros it does not define; at most "
                                 f"{MAX_DETECTED_SLOTS:,} are made slots at once (define the others in the source)")
        added = []
        self.slots_table.blockSignals(True)
        for slot in scan.slots:
            if slot.name in have:
                continue
            row = self.slots_table.rowCount()
            self.slots_table.insertRow(row)
            values = format_values(slot.choices) if slot.choices else (format_values([slot.default]) if slot.default is not None else "")
            default = format_values([slot.default]) if slot.default is not None else ""
            doc = slot.doc or f"#define {slot.macro}: first used on line {slot.line}"
            for column, text in enumerate((slot.name, values, DEFAULT_GROUP, default, doc)):
                self.slots_table.setItem(row, column, _item(text))
            added.append(slot.name)
        self.slots_table.blockSignals(False)
        params = {_cell(self.problem_table, r, 0) for r in range(self.problem_table.rowCount())}
        self.problem_table.blockSignals(True)  # (one step to undo, taken below: not a row, then its name)
        for pname, _line in scan.problem:
            if pname not in params:
                row = self.problem_table.rowCount()
                self.problem_table.insertRow(row)
                self.problem_table.setItem(row, 0, _item(pname))
        self.problem_table.blockSignals(False)
        self.source.highlighter.set_slots([s.macro for s in scan.slots])
        self._changed()
        self.check_restrictions()  # (a parameter added is a name the restrictions may use)
        if added:
            _fit_names(self.slots_table)
        self.table_history.record()  # what was detected is one step (its slot rows went in unseen)
        return added

    # --- files and runs -----------------------------------------------------------------------------
    def _template_files(self) -> list[Path]:
        """The spec file opened or saved last and the source file it names."""
        if self.spec_file is None:
            return []
        files = [self.spec_file]
        try:  # (as every reader of a spec reads one: a FIFO or a huge file put there is refused)
            named = read_spec(self.spec_file)[0].get("source")
        except WorkbenchError:
            named = None
        if isinstance(named, str) and named:
            files.append(self.spec_file.parent / Path(named).name)
        return files

    @staticmethod
    def _content_hash(path: Path) -> str | None:
        try:
            return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
        except OSError:
            return None

    def _remember_on_disk(self) -> None:
        self._on_disk = {path: self._content_hash(path) for path in self._template_files()}

    def _check_unchanged_on_disk(self) -> None:
        """Before Save writes over the template's own files: one another program changed since it
        was opened (or saved) here is not replaced without a word (asked of a person, refused to
        automation): a Save after a change of the Title replaced an edit made in another editor."""
        changed = [path for path, was in self._on_disk.items() if self._content_hash(path) != was]
        if not changed:
            return
        names = ", ".join(path.name for path in changed)
        if self.interactive:
            answer = QMessageBox.question(
                self, "Kernel template", f"{names} changed on disk since it was opened here. Replace "
                f"{'them' if len(changed) > 1 else 'it'} with this editor's version?",
                QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Cancel, QMessageBox.StandardButton.Cancel)
            if answer == QMessageBox.StandardButton.Save:
                return
            raise Cancelled(f"not saved: {names} changed on disk and is kept")
        raise WorkbenchError(f"{names} changed on disk since it was opened here; reopen it to edit that version, "
                             "or save to another folder")

    def headers_folder(self) -> Path | None:
        """Where the headers the source includes lie: the folder the template was opened from (or
        saved to), or that of a ``.cu`` opened as a new draft; None for a draft of no folder."""
        return self.folder if self.folder is not None else self._lone_source_folder

    def commit_open_edits(self) -> None:
        """End the edit of a table cell still open, keeping what was typed: Save, Tune, Check now
        and closing read the form, and a cell still being typed in was left out (Save even said
        "saved", and the next Enter made the form modified again)."""
        for table in (self.slots_table, self.problem_table, self.args_table, self.ref_table):
            if table.state() != QAbstractItemView.State.EditingState:
                continue
            editor = QApplication.focusWidget()  # the cell's editor, or a part of it
            while editor is not None and editor.parentWidget() is not table.viewport():
                editor = editor.parentWidget()
            if editor is not None:
                table.commitData(editor)
                table.closeEditor(editor, QAbstractItemDelegate.EndEditHint.NoHint)

    def save(self, folder: str | Path | None = None) -> Path:
        """Save to ``folder`` (default: where it came from, else the user's template folder)."""
        self.commit_open_edits()
        target = Path(folder) if folder is not None else (self.folder or user_templates_dir())
        spec = self.spec()
        if self.form_problems:
            raise WorkbenchError(str(self.form_problems[0]))
        check_template_name(str(spec.get("name") or ""))
        existing = spec_path(target, str(spec["name"]))
        if (existing.exists() or existing.is_symlink()) and (
                self.spec_file is None or resolved(existing) != resolved(self.spec_file)):
            raise WorkbenchError(f"{existing}: another template of that name is there; open it to change it, "
                                 "or choose another name or folder")
        if self.spec_file is not None and resolved(existing) == resolved(self.spec_file):
            self._check_unchanged_on_disk()
        headers = self.headers_folder()
        # headers the source includes from where it was opened go with it: checked before anything
        # is written, written once the spec is (a spec refused leaves no header behind)
        copies = (header_copies(self.source.toPlainText(), headers, target, [str(o) for o in spec.get("compile_options")
                                or ()], template_file_names(spec)) if headers is not None else [])
        path = save_template_folder(target, spec, self.source.toPlainText(),
                                    reference_file=self._reference_to_copy(spec, target))
        write_headers(copies)
        self.spec_file = path
        self.folder = target
        self.setWindowTitle(f"Kernel template editor - {path}[*]")  # (it named the file opened, or nothing)
        self._remember_on_disk()
        from workbench.gui.run_panel import available_kernels

        shipped_name = str(spec["name"]) in available_kernels()
        opened_here = self.opened_folder is not None and self.opened_folder.resolve() == Path(target).resolve()
        # the window runs and exports it from where it now is, as when it is opened there (it kept
        # the folder it was opened from after a Save to folder); under a shipped template's name
        # only a folder opened on purpose takes that name's place, as the note below says (a save
        # made the kernel list run the person's kernel as the shipped one)
        if self.folder_opened is not None and (not shipped_name or opened_here):
            try:
                self.folder_opened(load_declarative(path).name, target)
            except WorkbenchError:
                pass  # (saved, so it loads; a file changed meanwhile is the next open's to say)
        self.reference_file = None
        self._saved_state = self._state()
        self.setWindowModified(False)
        try:  # (the file just saved, read as every reader of a spec reads one)
            reference = read_spec(path)[0].get("reference")
        except WorkbenchError:  # (changed by another hand meanwhile: the next open says how)
            reference = None
        self._ref_spec = dict(reference) if isinstance(reference, dict) else {}
        if self._ref_spec.get("file"):  # the copy is the template's now
            self.ref_file_label.setText(f"{self._ref_spec['file']} (in the template folder)")
        if shipped_name and opened_here:
            self.last_note = (f"saved {path}; a shipped template is named {spec['name']} too: the kernel list runs "
                              f"this one, from the folder you opened, and tune {spec['name']} the shipped one "
                              f"(tune --kernel-dir {target} runs this one)")
        elif shipped_name and self._window_runs_draft(str(spec["name"])):
            # tuned here under that name: the window's kernel list runs the draft it tuned (so that
            # Start continues that session), not the shipped template the note below names
            self.last_note = (f"saved {path}; a shipped template is named {spec['name']} too: the kernel list runs the "
                              f"draft tuned here under that name until this window closes, and tune {spec['name']} the "
                              f"shipped one; open this one with File > Open kernel folder... (tune --kernel-dir "
                              f"{target}), or give it another name")
        elif shipped_name:  # the kernel list keeps the shipped one under that name
            self.last_note = (f"saved {path}; a shipped template is named {spec['name']} too, and the kernel list and "
                              f"tune {spec['name']} keep that one: open this one with File > Open kernel folder... "
                              f"(tune --kernel-dir {target}), or give it another name")
        else:
            self.last_note = f"saved {path}"
        self.statusBar().showMessage(self.last_note, 15000)
        return path

    def open_path(self, path: str | Path) -> None:
        """Open what the person chose: a template's spec (``NAME.kernel.json``), a ``.cu`` file as a
        new draft, or a folder holding one template or one source."""
        path = Path(path)
        if path.is_dir():
            self.open_folder(path)
        elif path.name.endswith(SPEC_SUFFIX):
            self.open_folder(path.parent, name=path.name[: -len(SPEC_SUFFIX)])
        else:
            self.open_folder(path.parent, source=path.name)

    def open_folder(self, folder: str | Path, name: str | None = None, source: str | None = None) -> None:
        """Open the declarative template ``name`` in ``folder`` (reads JSON and .cu only; runs
        nothing), or the ``.cu`` file ``source`` there as a new draft. Without either, the folder's
        one template (or one source): of several, naming none is refused with their names (the
        first of them was opened, and the others could not be reached from the window)."""
        folder = Path(folder)
        specs = [] if source is not None else sorted(folder.glob("*" + SPEC_SUFFIX))
        if name is not None:
            specs = [p for p in specs if p.name == name + SPEC_SUFFIX]
            if not specs:
                raise WorkbenchError(f"{folder}: no template {name}{SPEC_SUFFIX}")
        if len(specs) > 1:
            names = ", ".join(p.name for p in specs[:8]) + (", ..." if len(specs) > 8 else "")
            raise WorkbenchError(f"{folder} holds {len(specs)} templates ({names}): open one of them")
        if specs:
            path = specs[0]
            spec, _ = read_spec(path)  # as the loader reads it: a FIFO, a 5,000-digit integer are one line
            source_name = str(spec.get("source") or path.name[: -len(SPEC_SUFFIX)] + ".cu")
            source = read_spec_source(folder, source_name)
            try:
                self.set_spec(spec, source, folder)  # (reads the spec whole before the form changes)
            except (AttributeError, TypeError, KeyError, ValueError) as exc:
                # the form stays as it was, its edits and its title with it: a fresh starter draft
                # took its place, marked unedited, and closing no longer asked about the edits lost
                load_declarative(path)  # the loader's own error names the field and its line (reads JSON only)
                raise SpecError(f"is not a template spec this editor can show ({type(exc).__name__}: {exc}); "
                                "fix it in a text editor", path=str(path)) from None
            self.spec_file = path
            self._remember_on_disk()
            self.setWindowTitle(f"Kernel template editor - {path}[*]")
            if not (folder / Path(source_name).name).is_file():  # the check then says the source is empty
                self.statusBar().showMessage(f"{Path(source_name).name}: no such file beside the spec; the source "
                                             "starts empty (write it here, or put the file there and open again)",
                                             30000)
            if self.folder_opened is not None:
                # The window offers the template to run and export only when it loads, under the
                # name the loader checked: the raw "name" of a spec being fixed here (a newline, an
                # escape sequence, a name the loader refuses) must not reach its kernel list.
                try:
                    loaded = load_declarative(path).name
                except WorkbenchError:
                    loaded = ""  # the editor shows the spec; its check says what is wrong
                if loaded:
                    self.folder_opened(loaded, folder)
                    self.opened_folder = folder
            return
        sources = sorted(folder.glob("*.cu")) if source is None else [folder / source]
        if not sources:
            raise WorkbenchError(f"{folder}: no {SPEC_SUFFIX} template and no .cu file")
        if len(sources) > 1:
            names = ", ".join(p.name for p in sources[:8]) + (", ..." if len(sources) > 8 else "")
            raise WorkbenchError(f"{folder} holds {len(sources)} .cu files ({names}): open one of them")
        stem = sources[0].stem
        source = read_cuda_file(sources[0])  # before the form changes: a file it refuses leaves the draft as it was
        # the entry is the source's first kernel (the file's name is a guess only where it has none)
        entry = next(iter(global_functions(source)), stem)
        self.set_spec({"name": stem, "entry": entry, "grid": ["1"], "block": ["block_size"], "args": []}, source, None)
        self._lone_source_folder = folder  # its headers are beside it; the template is saved elsewhere
        self.setWindowTitle(f"Kernel template editor - {sources[0]} (new template)[*]")
        try:
            detected = self.detect_slots()  # may refuse a source of thousands of macros: the source still shows, titled
            if "block_size" not in detected:  # the block guess names a slot the source has, or none
                guess = next((slot for slot in detected if "block" in slot or "thread" in slot), "1")
                self.block_edits[0].setText(guess)
        finally:
            self._saved_state = self._state()  # what was detected is the opened state, not an edit
            self.setWindowModified(False)
            self.table_history.reset()  # (nor a step to undo)

    def choose_and_open(self) -> None:
        """A template (its ``.kernel.json``) or a CUDA source to open: a file, not a folder, since
        templates are saved side by side in one folder."""
        if not self.may_drop_edits("Open another"):
            return
        path, _ = QFileDialog.getOpenFileName(self, "Open kernel template or CUDA source", str(user_templates_dir()),
                                              f"Kernel templates and CUDA sources (*{SPEC_SUFFIX} *.cu)")
        if path:
            self._guard(lambda: self.open_path(path))

    def _on_save_as(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Save template into folder", str(self.folder or user_templates_dir()))
        if folder:
            self._guard(lambda: self.save(folder))

    def _on_choose_reference(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Reference function (def reference(inputs, problem))", "",
                                              "Python files (*.py)")
        if path:
            self.choose_reference(path)

    def choose_reference(self, path: str | Path) -> None:
        """Use the python function ``reference(inputs, problem)`` in ``path`` (copied in on save; not run here)."""
        self.reference_file = Path(path)
        self.ref_kind.setCurrentIndex(self.ref_kind.findData("python"))
        self.ref_file_label.setText(f"{Path(path).name} (copied into the template folder on save)")
        self._changed()

    def _window_runs_draft(self, name: str) -> bool:
        """Whether the main window's kernel list runs ``name`` from this editor's drafts folder (it
        does once the editor tuned a draft of that name: see :attr:`runs_from`)."""
        folder = self.runs_from(name) if self.runs_from is not None else None
        return folder is not None and Path(folder).resolve().is_relative_to(self.drafts_dir().resolve())

    def drafts_dir(self) -> Path:
        from workbench.runner.autosave import data_dir  # the workbench's own folder

        return data_dir() / "template-drafts"

    def tune(self, budget: int | None = None) -> dict[str, Any]:
        """Write the draft into the drafts folder and start a simulated run of it through the main window."""
        if self.start_run_callback is None:
            raise WorkbenchError("open the editor from the main window to tune")
        self.commit_open_edits()
        spec = self.spec()
        if self.form_problems:
            raise WorkbenchError(str(self.form_problems[0]))
        check_template_name(str(spec.get("name") or ""))  # before anything is read or written
        reference = self._reference_to_copy(spec, self.drafts_dir())
        headers = self.headers_folder()
        folder = save_draft(self.drafts_dir(), spec, self.source.toPlainText(), reference_file=reference,
                            headers_from=headers)
        run = {"kernel": spec["name"], "kernel_dirs": [str(folder)], "backend": "sim",
               "budget": int(budget or self.budget.value()), "seed": 0}
        self.start_run_callback({**run, "copied_from": draft_copies(folder, spec, reference, headers)})
        return run

    def _reference_to_copy(self, spec: Mapping[str, Any], target: Path) -> Path | None:
        """The Python reference file a save of ``spec`` into ``target`` copies in: the file chosen
        in this dialog, else the one the opened spec names, from its folder, when ``target`` is
        another folder (a template saved elsewhere without it would fail every run). None when
        the form's reference is not Python: a file chosen and then backed out of (the kind set to
        an expression or none) is not copied, so the saved spec is the one the form showed."""
        if spec.get("reference", {}).get("kind") != "python":
            return None
        if self.reference_file is not None:
            return self.reference_file
        opened = reference_file_named(spec, self.folder)
        if opened is None or self.folder is None or resolved(target) == resolved(self.folder):
            return None
        if resolved(opened).parent != resolved(self.folder):
            # a link in the folder to a file elsewhere: copied, whatever it holds would become a
            # plain file of the new folder without the person having seen it
            raise WorkbenchError(f"{opened}: reference.file links to a file outside the template's folder "
                                 f"({resolved(opened)}); copy that file into the folder to take it along")
        return opened

    def _guard(self, action: Callable[[], Any]) -> None:
        """Run a menu/button action; a failure is one message, never an exception out of the window."""
        try:
            action()
        except Cancelled as exc:  # (Tune's start asked to save the trials shown, and was cancelled)
            self.statusBar().showMessage(window_message(exc), 8000)
        except WorkbenchError as exc:
            self._error(window_message(exc))
        except OSError as exc:
            self._error(f"{exc.filename or ''}: {exc.strerror or exc}")

    def _error(self, text: str) -> None:
        self.last_error = text
        self.statusBar().showMessage(text, 10000)
        if self.interactive:
            QMessageBox.warning(self, "Kernel template", text)

    def close_asked(self) -> None:
        """Close without asking again: whoever calls this asked :meth:`may_drop_edits` already."""
        self._drop_asked = True
        try:
            self.close()
        finally:
            self._drop_asked = False

    def closeEvent(self, event: Any) -> None:  # Qt override
        if not self._drop_asked and not self.may_drop_edits("Close the editor"):
            event.ignore()
            return
        self.timer.stop()
        self._pending = False  # a closed editor starts no further check when the running one ends
        self.wait_for_check()
        super().closeEvent(event)

