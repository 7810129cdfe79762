"""The toolbar: what to tune (template + problem), on what (backend), how (strategy, budget, seed),
the run buttons and the progress bar. It only collects choices; the window starts the run."""

from __future__ import annotations

import functools
from typing import Any, Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import (
    QApplication, QComboBox, QFileDialog, QLabel, QLineEdit, QProgressBar, QPushButton, QSpinBox, QToolBar, QToolButton, QWidget,
)

from workbench.backends.base import PACED_BACKENDS
from workbench.backends.sim import DEFAULT_COMPILE
from workbench.core.domain.figures import duration
from workbench.core.domain.records import MAX_PACE_S
from workbench.core.domain.run_settings import DEFAULT_BUDGET, MAX_SECONDS
from workbench.core.model.gpus import DEFAULT_GPU
from workbench.core.domain.assignments import parse_assignment_list
from workbench.core.errors import WorkbenchError, counted
from workbench.core.domain.sizes import format_sizes, parse_sizes_text
from workbench.gui.decimal_box import DecimalBox
from workbench.gui.elided_label import ElidedLabel
from workbench.gui.options_popup import FormPopup
from workbench.gui.strategy_options import StrategyOptionsForm
from workbench.gui.text import BACKENDS, WARNING_TEXT
from workbench.search.base import DEFAULT_STRATEGY, STRATEGIES, strategy_class, unknown_strategy

PAUSE_TIP = "pause: nothing new starts until Resume; running candidates finish (F6)"
RESUME_TIP = "resume: new candidates start again (F6)"

#: File dialog filters for recordings: Kernel Tuner caches are mostly kept gzipped (``.json.gz``,
#: which replay and import read), and a ``*.json`` filter hid them under "All files".
RECORDING_FILTER = "Sessions and Kernel Tuner caches (*.json *.json.gz);;All files (*)"
KT_CACHE_FILTER = "Kernel Tuner caches (*.json *.json.gz);;All files (*)"

#: The template the window opens on when no last-used one is remembered: small, with its resource
#: figures shipped, so a first run shows points at once (a fully unrolled convolution compiles for seconds).
QUICK_KERNEL = "vector_add"



@functools.lru_cache(maxsize=1)
def available_kernels() -> tuple[str, ...]:
    """Shipped template names (loading specs executes only our own kernel library)."""
    try:
        from workbench.core.domain.templates import kernels_dir, load_templates

        return tuple(sorted(load_templates(str(kernels_dir()))))
    except Exception:  # noqa: BLE001 - an unloadable library leaves the picker empty, not the window dead
        return ()


def user_kernels() -> dict[str, str]:
    """Templates saved with the editor (the user's template folder): name -> folder. Declarative
    specs only, so listing them runs no code; a folder that does not load leaves the list alone."""
    try:
        from workbench.core.domain.kernel_spec import SPEC_SUFFIX, load_declarative, user_templates_dir

        folder = user_templates_dir()
        found = {}
        for path in sorted(folder.glob("*" + SPEC_SUFFIX)) if folder.is_dir() else ():
            try:
                found[load_declarative(path).name] = str(folder)
            except WorkbenchError:
                continue  # a broken saved template is reported when it is opened, not here
        return found
    except Exception:  # noqa: BLE001 - the picker must come up even when the data folder is unreadable
        return {}


@functools.lru_cache(maxsize=1)
def available_gpus() -> tuple[str, ...]:
    try:
        from workbench.core.model.gpus import list_gpus

        return tuple(list_gpus()) or (DEFAULT_GPU,)
    except Exception:  # noqa: BLE001
        return (DEFAULT_GPU,)


def parse_problem(text: str) -> dict[str, Any]:
    """``n=1048576, m=64`` -> {"n": 1048576, "m": 64}: the command line's ``--set`` rules, never eval'd."""
    return parse_assignment_list(text, "problem")


class TrimmedBox(DecimalBox):
    """A box of ``decimals`` decimals written without trailing zeros (``10``, ``0.1667``), so that
    the decimals a value needs cost no width where it needs fewer."""

    def __init__(self, decimals: int) -> None:
        super().__init__()
        self.setDecimals(decimals)

    def textFromValue(self, value: float) -> str:  # Qt override
        locale = self.locale()
        text = locale.toString(float(value), "f", self.decimals())
        if not self.isGroupSeparatorShown():  # (as the other boxes: 1500, not 1,500)
            text = text.replace(locale.groupSeparator(), "")
        point = locale.decimalPoint()
        return text.rstrip("0").rstrip(point) if point in text else text


class MinutesBox(TrimmedBox):
    """The time limit in minutes, to a hundredth of a second (4 decimals): at 2 decimals a
    session's limit of 0.2 s opened as "no time limit" and 10 s ran as 10.2 s, and written at 4
    with trailing zeros the box widened the tool bar past what presentation mode fits at 1440 px.
    Up to a week, the longest limit the command line takes (a session's limit of a week opened as
    10,000 minutes, and the next Start ran with that)."""

    def __init__(self) -> None:
        super().__init__(4)
        self.setRange(0.0, MAX_SECONDS / 60)


class RunToolbar(QToolBar):
    """Signals ``start_requested``, ``pause_requested``, ``stop_requested``, ``kernel_changed(str)``."""

    start_requested = Signal()
    pause_requested = Signal()
    stop_requested = Signal()
    kernel_changed = Signal(str)
    #: what a run would measure changed (kernel, problem, backend, GPU, device, recording)
    choices_changed = Signal()
    #: A recording chosen for a replay (browsed, typed or restored): the window reads it ahead.
    recording_chosen = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Run", parent)
        self.setObjectName("runToolbar")
        self.setMovable(False)
        self.kernel = QComboBox()
        self.kernel.setEditable(True)  # a template name, or the path of a python benchmark file
        # Enter keeps what was typed in the field only: a typo ("reduce_summ") became an entry of
        # the list for good
        self.kernel.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.kernel.setMinimumContentsLength(14)
        self.kernel.addItems(available_kernels())
        # the editor's saved templates run from their folder; one saved under a shipped template's
        # name does not take its place (tune NAME runs the shipped one too): a folder opened on
        # purpose (File > Open kernel folder, gui --kernel-dir) is what overrides a shipped name
        shipped = set(available_kernels())
        self.kernel_folders = {name: folder for name, folder in user_kernels().items() if name not in shipped}
        self.kernel.addItems(sorted(self.kernel_folders))
        if self.kernel.findText(QUICK_KERNEL) >= 0:
            self.kernel.setCurrentIndex(self.kernel.findText(QUICK_KERNEL))
        self.kernel.setToolTip("kernel template to tune")
        self.kernel.currentIndexChanged.connect(lambda _i: self.kernel_changed.emit(self.kernel.currentText()))
        editor = self.kernel.lineEdit()
        assert editor is not None  # the combo box is editable
        editor.editingFinished.connect(lambda: self.kernel_changed.emit(self.kernel.currentText()))
        #: (kernel, problem text, sizes text) as :meth:`apply` last filled them in (None: not since)
        self._filled_problem: tuple[str, str, str] | None = None
        self.kernel_changed.connect(self._leave_another_kernels_problem)
        self.problem = QLineEdit()
        self.problem.setMinimumWidth(130)
        self.problem.setMaximumWidth(260)
        self.sizes = QLineEdit()
        self.sizes.setPlaceholderText("sizes, e.g. n=4096,65536")
        self.sizes.setToolTip("size sweep: one tuning per value, all in one session, the budget per size "
                              "(NAME=V1,V2,...; several names separated by ';' make a grid); a new size first "
                              "measures the best configs of the nearest sizes already measured. Empty: one size")
        self.sizes.setMinimumWidth(120)
        self.sizes.setMaximumWidth(240)
        self.backend = QComboBox()
        for key, label in BACKENDS:
            self.backend.addItem(label, key)
        self.backend.setCurrentIndex(self.backend.findData("sim"))
        # (named and explained: a screen reader said only the value, "24 evals", "seed 0")
        self.backend.setAccessibleName("Backend")
        self.backend.setToolTip("what measures the candidates: a GPU, the simulated GPU, a recording or a python benchmark")
        self.backend.currentIndexChanged.connect(self._on_backend_changed)
        self._backend_kind = self.backend.currentData()  # the backend the problem field was last filled for
        self._problem_hint: str | None = None  # the shown kernel's problem in force (see show_problem_hint)
        #: the sizes of the recording in the replay field, once read (see show_recording_sizes)
        self._recording_sizes: tuple[str, list[str], str] | None = None
        self.gpu = QComboBox()
        self.gpu.addItems(available_gpus())
        if self.gpu.findText(DEFAULT_GPU) >= 0:
            self.gpu.setCurrentText(DEFAULT_GPU)
        self.gpu.setToolTip("GPU model the simulator imitates")
        self.resources = QComboBox()
        self.resources.addItem("compiled", DEFAULT_COMPILE)
        self.resources.addItem("estimated", "estimate")
        self.resources.setToolTip("simulator: registers / shared memory / spills from a real NVRTC compile of every "
                                  "config (the shipped table, the disk cache, or a background compile: a config whose "
                                  "compile is slow is shown with estimates first and refined at the end of the run), "
                                  "or estimated from the template's work profile (instant, labelled as estimates)")
        self.device = QSpinBox()
        self.device.setRange(0, 15)
        self.device.setPrefix("device ")
        self.device.setToolTip("CUDA device index")
        self.replay = QLineEdit()
        self.replay.setPlaceholderText("recording (.json)")
        self.replay.setMinimumWidth(120)
        self.replay.editingFinished.connect(lambda: self.recording_chosen.emit(self.replay.text().strip()))
        # named for a screen reader, which said only the value ("vector_add") or nothing: these have
        # no visible label (the problem and sizes fields show only grey example text)
        control: QWidget
        for control, name in ((self.kernel, "Kernel"), (self.problem, "Problem sizes"), (self.sizes, "Size sweep"),
                             (self.gpu, "Simulated GPU"), (self.resources, "Simulator resources"),
                             (self.device, "CUDA device"), (self.replay, "Recording to replay")):
            control.setAccessibleName(name)
        for signal in (self.kernel.currentTextChanged, self.problem.textChanged, self.backend.currentIndexChanged,
                       self.gpu.currentTextChanged, self.device.valueChanged, self.replay.textChanged):
            signal.connect(lambda *_: self.choices_changed.emit())
        self.browse = QPushButton("...")
        self.browse.setMaximumWidth(28)
        self.browse.clicked.connect(self._on_browse)
        self.delay = TrimmedBox(3)  # (at 2 decimals a recorded pace of 0.004 s opened as 0: no pace)
        self.delay.setRange(0.0, MAX_PACE_S)
        self.delay.setSingleStep(0.05)
        self.delay.setSuffix(" s/eval")
        self.delay.setAccessibleName("Demo pace")
        self.delay.setToolTip("demo mode: seconds between new candidates, so a simulated or replayed run goes at "
                              "a pace you can talk over (they finish a hundred configs in a second otherwise)")
        self.strategy = QComboBox()
        self.strategy.setAccessibleName("Strategy")
        self.strategy.addItems(list(STRATEGIES))
        for index, name in enumerate(STRATEGIES):  # what each is, as tune --help-strategy says it
            said = strategy_class(name).description
            self.strategy.setItemData(index, f"{name}{' (default)' if name == DEFAULT_STRATEGY else ''}: {said}"
                                      if said else name, Qt.ItemDataRole.ToolTipRole)
        self.strategy.setCurrentText(DEFAULT_STRATEGY)
        self.strategy.currentIndexChanged.connect(self._on_strategy_shown)
        self._on_strategy_shown()
        # The strategy's options, generated from its OPTIONS, in a pop-up under a button beside it.
        self.strategy_options = StrategyOptionsForm()
        self.strategy_options.set_strategy(self.strategy.currentText())
        self.strategy.currentTextChanged.connect(self.strategy_options.set_strategy)
        self.options_button = QToolButton()
        self.options_button.setText("Options")
        self.options_button.setToolTip("the strategy's options (hover a name for what it does)")
        self.options_button.setArrowType(Qt.ArrowType.NoArrow)
        self.options_popup = FormPopup(self.strategy_options, self.options_button, "Strategy options")
        self.strategy_options.changed.connect(self._on_options_changed)
        self.budget = QSpinBox()
        self.budget.setRange(1, 1_000_000)
        self.budget.setValue(DEFAULT_BUDGET)
        self.budget.setSuffix(" evals")
        self.budget.setAccessibleName("Budget")
        self.budget.setToolTip("the most configs the run evaluates")
        # a sweep's budget is per size: "15 evals" beside a bar of "60 / 60" read as a count gone wrong
        self.sizes.textChanged.connect(self._show_budget_unit)
        self.budget.valueChanged.connect(self._show_budget_unit)  # ("1 eval", not "1 evals")
        self.minutes = MinutesBox()
        self.minutes.setSpecialValueText("no time limit")
        self.minutes.setSuffix(" min")
        self.minutes.setAccessibleName("Time limit")
        self.minutes.setToolTip("the run stops after this many minutes (0: no time limit)")
        self.seed = QSpinBox()
        self.seed.setRange(0, 2**31 - 1)
        self.seed.setPrefix("seed ")
        self.seed.setAccessibleName("Seed")
        self.seed.setToolTip("the search's random seed: the same seed and choices propose the same configs")
        self.start = QPushButton("Start")
        self.start.setObjectName("startButton")
        self.pause = QPushButton("Pause")
        self.stop = QPushButton("Stop")
        self.start.clicked.connect(self.start_requested)
        self.pause.clicked.connect(self.pause_requested)
        self.stop.clicked.connect(self.stop_requested)
        for button, tip in ((self.start, "start the run (or continue the session shown) (F5)"),
                            (self.pause, PAUSE_TIP),
                            (self.stop, "stop: nothing new starts; running candidates finish and are kept (Shift+F5)")):
            button.setAutoDefault(True)  # Enter presses a focused button too, not only Space
            button.setToolTip(tip)
        self.progress = QProgressBar()
        self.progress.setAccessibleName("Run progress")  # (focus rests on it while a stop winds down)
        self.progress.setMinimumWidth(140)
        self.progress.setFormat("%v / %m")
        # Elided, not a fixed width: in presentation mode's large fonts the row is short of room,
        # and a label that keeps its width is pushed into the tool bar's overflow menu.
        self.progress_label = ElidedLabel("idle", minimum_chars=12)
        # What the simulator's background compiles are doing, said in the progress label after the
        # run's state: a label of its own here went into the overflow menu at 1440 px, so a run
        # waiting for its compiles showed nothing but a full bar and a greyed Start.
        self._run_text = "idle"
        self.next_start = ""  # what Start would do, when not what the views show (see show_next_start)
        #: Whether Stop or Pause had the focus when a stop was asked for, and the widget Qt then
        #: moved it to: Start gets it back at the end if it is still there.
        self._focus_to_start = False
        self._parked: QWidget | None = None
        self.compile_text = ""
        self._compiles_pending = False
        self._paused = False
        self._is_progress = False  # whether _run_text is a progress count (then an ETA or "paused" goes with it)
        self._eta = ""
        for widget in (QLabel(" Kernel "), self.kernel, self.problem, self.sizes, _sep(), QLabel("Backend "), self.backend, self.gpu,
                       self.resources, self.device, self.replay, self.browse, self.delay):
            self.addWidget(widget)
        # A second row (the window adds it below this one): how to search and the run buttons; the
        # progress follows on that row where it has room, else on a row of its own (the window
        # decides as its width changes): in one tool bar, a narrow window (1024 px) moved the
        # progress bar and the run's state into the overflow menu, and a live run showed neither.
        self.run_bar = QToolBar("Search", parent)
        self.run_bar.setObjectName("searchToolbar")
        self.run_bar.setMovable(False)
        for widget in (QLabel(" Strategy "), self.strategy, self.options_button, self.budget, self.minutes, self.seed, _sep(), self.start,
                       self.pause, self.stop):
            self.run_bar.addWidget(widget)
        self.progress_row = QToolBar("Run progress", parent)
        self.progress_row.setObjectName("progressToolbar")
        self.progress_row.setMovable(False)
        for widget in (_sep(), self.progress, self.progress_label):
            self.progress_row.addWidget(widget)
        self._on_backend_changed()
        self.set_running(False)

    def progress_row_width(self) -> int:
        """The least width the progress row shows its bar and a dozen characters of the run's
        state in (its own minimum size hint is that of its overflow button)."""
        layout = self.progress_row.layout()
        margins = layout.contentsMargins().left() + layout.contentsMargins().right() if layout is not None else 0
        spacing = layout.spacing() if layout is not None else 0
        widgets = [self.progress_row.widgetForAction(action) for action in self.progress_row.actions()]
        widths = [max(w.minimumWidth(), w.minimumSizeHint().width()) for w in widgets if w is not None]
        return sum(widths) + spacing * len(widths) + margins

    def _on_options_changed(self) -> None:
        """The button says how many options are not at their defaults: a changed one is never hidden."""
        count = self.strategy_options.changed_count()
        self.options_button.setText(f"Options ({count})" if count else "Options")

    def _on_browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Recording to replay", "", RECORDING_FILTER)
        if path:
            self.replay.setText(path)
            self.recording_chosen.emit(path)

    def _on_backend_changed(self, *_: Any) -> None:
        kind = self.backend.currentData()
        for widget, shown in ((self.gpu, kind == "sim"), (self.resources, kind == "sim"), (self.device, kind == "cuda"),
                              (self.replay, kind == "replay"), (self.browse, kind == "replay"),
                              (self.delay, kind in PACED_BACKENDS)):
            action = self._action_of(widget)
            if action is not None:
                action.setVisible(shown)
        self.kernel.setEnabled(kind != "replay")
        self.sizes.setEnabled(kind != "replay")
        self._show_budget_unit()
        # A replay's problem is what was recorded; the field then only picks one size of a recording
        # of several. A template's problem left in it would pick a size nobody chose (and refuse an
        # ordinary recording measured at another), so switching to a replay empties it.
        if kind == "replay" and self._backend_kind != "replay":
            self.problem.clear()
        self._backend_kind = kind
        self._show_problem_placeholder()

    def _show_problem_placeholder(self) -> None:
        """The problem field's placeholder and tool tip for the backend chosen (only those: the
        window sets them during a run, while the controls stay disabled)."""
        if self.backend.currentData() == "replay":
            read = self._recording_sizes
            labels, between = (read[1], read[2]) if read and read[0] == self.replay.text().strip() else ([], "")
            if len(labels) > 1:  # the recording's own sizes, not a made-up example
                shown = between.join(labels[:4]) + (f"{between}..." if len(labels) > 4 else "")
                self.problem.setPlaceholderText(f"size to replay: {shown}")
                self.problem.setToolTip(f"this recording holds {len(labels)} sizes: type the one to replay "
                                        f"({between.join(labels)})")
            elif labels:
                self.problem.setPlaceholderText("(the recording's one size)")
                self.problem.setToolTip(f"this recording holds one size{': ' + labels[0] if labels[0] else ''}; "
                                        "leave the field empty")
            else:  # (its sizes not read yet, or no file there: what it holds is not known)
                self.problem.setPlaceholderText("size to replay, if the recording holds several")
                self.problem.setToolTip("for a recording of several sizes: the size to replay, as NAME=VALUE "
                                        "(empty for a recording of one size)")
        elif self._problem_hint is not None:  # the shown kernel's parameters in force, from the window
            self.problem.setPlaceholderText(self._problem_hint or "no problem parameters")
            self.problem.setToolTip("problem parameters (name=value, comma separated); in force: "
                                    f"{self._problem_hint or 'none'}")
        else:
            self.problem.setPlaceholderText("problem, e.g. n=1048576")
            self.problem.setToolTip("problem parameters (name=value, comma separated); empty = the template's defaults")

    def show_recording_sizes(self, path: str, sizes: tuple[list[str], str] | None) -> None:
        """The sizes the recording at ``path`` holds (labels and their separator; None: it could
        not be read), for the problem field's placeholder while ``path`` is the replay chosen. A
        read that ends after another file was chosen is dropped: reads end in any order (a large
        Kernel Tuner cache after a small session chosen later)."""
        if path != self.replay.text().strip():
            return
        self._recording_sizes = (path, *sizes) if sizes is not None else None
        self._show_problem_placeholder()

    def show_problem_hint(self, text: str) -> None:
        """The problem field's placeholder: the parameters in force for the shown kernel (``""``:
        it has none). Kept for the field's next reset (a backend switched back, a run ended), which
        showed a made-up example instead."""
        self._problem_hint = text
        self._show_problem_placeholder()

    def _on_strategy_shown(self, *_: Any) -> None:
        """The box's tool tip is the chosen strategy's description (each item has its own)."""
        self.strategy.setToolTip(str(self.strategy.currentData(Qt.ItemDataRole.ToolTipRole) or ""))

    def _action_of(self, widget: QWidget) -> Any:
        for bar in (self, self.run_bar):
            for action in bar.actions():
                if bar.widgetForAction(action) is widget:
                    return action
        return None

    def note_stopping(self) -> None:
        """A stop was asked for: Pause and Stop go off. Start takes the focus at the end if one of
        them had it and it has stayed where Qt moved it meanwhile."""
        self._focus_to_start = QApplication.focusWidget() in (self.pause, self.stop)
        if self._focus_to_start:
            # parked on the progress bar, which answers no key, until Start takes it: left to Qt it
            # went to the next Tab stop, a constraint's check box, and a second Space pressed while
            # the run stopped switched that constraint on and re-ranked every trial
            self.progress.setFocus(Qt.FocusReason.OtherFocusReason)
        self.pause.setEnabled(False)
        self.stop.setEnabled(False)
        self._parked = QApplication.focusWidget() if self._focus_to_start else None

    def set_running(self, running: bool, paused: bool = False) -> None:
        # Focus stays with the run's buttons: a disabled Start passed it to an invisible scroll
        # area, and a keyboard user pressing Start found Stop nowhere
        focused = QApplication.focusWidget()
        choices = (self.kernel, self.problem, self.sizes, self.backend, self.gpu, self.resources, self.device,
                   self.replay, self.browse, self.delay, self.strategy, self.options_button, self.budget,
                   self.minutes, self.seed)
        # only from a control being switched off (Pause keeps the focus as it turns into Resume): Start,
        # or a choice the run greys out (F5 pressed in the budget box left the focus wherever Qt
        # passed it, on Pause, where Start pressed left it on Stop); and at the end only when the
        # focus is still where the stop parked it, not where a person put it since
        moved = (focused is self.start or any(focused is w or (focused is not None and w.isAncestorOf(focused))
                                              for w in choices) if running
                 else focused in (self.pause, self.stop) or (self._focus_to_start and focused is self._parked))
        self.start.setEnabled(not running)
        self.pause.setEnabled(running)
        self.stop.setEnabled(running)
        if moved:
            (self.stop if running else self.start).setFocus()
        self._focus_to_start, self._parked = False, None
        self.pause.setText("Resume" if paused else "Pause")
        self.pause.setToolTip(RESUME_TIP if paused else PAUSE_TIP)
        if paused != self._paused:  # said in the label at once: no progress arrives while paused
            self._paused = paused
            self.show_state(self._run_text, self._is_progress)
        for widget in choices:
            widget.setEnabled(not running)
        if not running:
            self._on_backend_changed()

    def request(self) -> dict[str, Any]:
        """The choices as a run request (the same keys as ``--run`` on the command line)."""
        kind = self.backend.currentData()
        replay = kind == "replay"  # a recording's kernel and sizes are what was recorded: greyed out
        return {
            "kernel": None if replay else (self.kernel.currentText() or None),  # a replay's is the recording's
            # for a replay, the one size of a sweep recording to replay (emptied on switching to replay)
            "problem": parse_problem(self.problem.text()) if self.problem.text().strip() else {},
            "sizes": parse_sizes_text(self.sizes.text()) if self.sizes.text().strip() and not replay else None,
            "backend": kind,
            "gpu_model": self.gpu.currentText() if kind == "sim" else None,
            "device": self.device.value() if kind == "cuda" else None,
            "replay": (self.replay.text().strip() or None) if kind == "replay" else None,
            "delay_s": self.delay.value() if kind in PACED_BACKENDS else 0.0,
            "strategy": self.strategy.currentText(),
            "strategy_options": self.strategy_options.changed_options(),
            "budget": self.budget.value(),
            # (to a hundredth of a second: the box's 4 decimals of a minute wrote 10 s as 10.002 s)
            "time_limit_s": round(self.minutes.value() * 60, 2) or None,
            "seed": self.seed.value(),
            "options": {"compile": self.resources.currentData()} if kind == "sim" else {},
            "kernel_dirs": [self.kernel_folders[name]] if (name := self.kernel.currentText()) in self.kernel_folders else [],
        }

    def apply(self, run: dict[str, Any], keep_edits: bool = False, put_back: bool = False) -> None:
        """Fill the controls from a run request (automation, or a reopened session's settings).
        ``keep_edits``: the run is this window's own next one (Start), so the options edited for
        other strategies stay kept, as picking one again shows them; another session's settings
        replace them. ``put_back``: the controls the window showed before a change that failed,
        back as they were (what of the problem and sizes was typed and what filled in, too).

        A key left out or None leaves its control alone (automation names only what it chooses;
        a continued session keeps its own strategy and seed then), except that an empty problem
        and no time limit are values: ``problem: {}`` empties the field, ``time_limit_s: None`` shows
        *no time limit*, and a paced backend's ``delay_s: 0`` sets no delay. A caller restoring a
        session passes every control (the window's ``_restore_run_controls``). An unknown backend
        keeps the backend control as it was, an unknown strategy puts the default one, a stored
        strategy option the strategy refuses keeps its default; once every other control is
        filled, ``WorkbenchError`` names them (the caller shows the line)."""
        problems: list[str] = []
        # (the window's own Start applies what the fields already hold, as they read, and puts them
        # back after a refusal: that stays the person's typing, to keep when another kernel is picked)
        typed, filled_before = self._problem_read(), self._filled_problem
        if run.get("replay"):
            self.backend.setCurrentIndex(self.backend.findData("replay"))
            self.replay.setText(str(run["replay"]))
            self.recording_chosen.emit(str(run["replay"]))
        elif run.get("backend"):
            position = self.backend.findData(run["backend"])
            if position < 0:
                problems.append(f"unknown backend {run['backend']!r}")
            else:
                self.backend.setCurrentIndex(position)
        if run.get("kernel"):
            if self.kernel.findText(run["kernel"]) < 0:
                self.kernel.addItem(run["kernel"])
            # (setCurrentText only sets an editable box's text: no kernel_changed, so the Search
            # space tab kept the last kernel's slots and a scripted run of another kernel was refused)
            self.kernel.setCurrentIndex(self.kernel.findText(run["kernel"]))
            if run.get("kernel_dirs"):
                self.kernel_folders[run["kernel"]] = str(run["kernel_dirs"][0])
        if "problem" in run:
            self.problem.setText(", ".join(f"{k}={v}" for k, v in (run["problem"] or {}).items()))
            self.problem.setCursorPosition(0)
        if "sizes" in run:
            self.sizes.setText(format_sizes(run["sizes"]) if run["sizes"] else "")
            # from the start: a field too narrow for a sweep's sizes showed their tail, cut mid-number,
            # with the parameter's name out of sight
            self.sizes.setCursorPosition(0)
        if run.get("gpu_model"):
            if self.gpu.findText(run["gpu_model"]) < 0:
                self.gpu.addItem(run["gpu_model"])
            self.gpu.setCurrentText(run["gpu_model"])
        device = run.get("device")
        if type(device) is int:
            self.device.setValue(min(max(device, 0), self.device.maximum()))
        compile_mode = (run.get("options") or {}).get("compile")
        if compile_mode and self.resources.findData(compile_mode) >= 0:
            self.resources.setCurrentIndex(self.resources.findData(compile_mode))
        if run.get("strategy"):
            strategy = run["strategy"]
            known = strategy in STRATEGIES
            if not known:  # the default strategy, not the one an earlier session left
                problems.append(unknown_strategy(str(strategy)))
                strategy = DEFAULT_STRATEGY
            self.strategy.setCurrentText(strategy)
            # (with keep_edits: the strategy that runs shows the options it runs with, the others
            # keep what was edited for them)
            self.strategy_options.set_strategy(strategy, reset=not keep_edits, fresh=keep_edits)
            if known and run.get("strategy_options"):  # checked by the strategy; bad ones reported once all else is filled
                problems += self.strategy_options.set_values(run["strategy_options"])
            if run.get("earlier_strategy_options"):
                problems += self.strategy_options.remember(run["earlier_strategy_options"])
        elif run.get("strategy_options"):
            problems += self.strategy_options.set_values(run["strategy_options"])
        if run.get("budget"):
            self.show_budget(int(run["budget"]))
        if run.get("seed") is not None:
            self.seed.setValue(int(run["seed"]))
        if "time_limit_s" in run:
            limit = run["time_limit_s"] or 0.0
            # (a limit below what the box holds is its least, not "no time limit")
            self.minutes.setValue(max(limit / 60.0, 10.0 ** -self.minutes.decimals()) if limit > 0 else 0.0)
        if run.get("delay_s") is not None and (run.get("replay") or run.get("backend") in PACED_BACKENDS):
            self.delay.setValue(float(run["delay_s"]))
        if put_back:  # (the controls shown a moment ago, back as they were: whose typing is unchanged)
            self._filled_problem = filled_before
        elif not keep_edits or self._problem_read() != typed:  # filled in here: not the person's typing
            self._filled_problem = (self.kernel.currentText(), self.problem.text(), self.sizes.text())
        if problems:
            raise WorkbenchError("; ".join(problems))

    def _problem_read(self) -> tuple[Any, Any]:
        """The problem and sizes fields as a run reads them (``n = 4096`` is ``n=4096``), else as written."""
        def read(text: str, parse: Callable[[str], Any]) -> Any:
            try:
                return parse(text) if text.strip() else None
            except WorkbenchError:
                return text
        return read(self.problem.text(), parse_problem), read(self.sizes.text(), parse_sizes_text)

    def _leave_another_kernels_problem(self, name: str) -> None:
        """Empty the problem and sizes fields that :meth:`apply` filled in for another kernel, as
        they still read: their parameters are that template's (a session of vector_add opened,
        then reduce_sum picked: Start was refused for vector_add's ``alpha``, or ran reduce_sum
        at vector_add's n without a word). What the person typed there stays."""
        filled = self._filled_problem
        if filled is None or name == filled[0]:
            return
        self._filled_problem = None
        if self.problem.text() == filled[1]:
            self.problem.clear()
        if self.sizes.text() == filled[2]:
            self.sizes.clear()

    def show_progress(self, done: int, total: int | None, failures: int, eta_s: float | None,
                      aborted: int = 0) -> None:
        self.progress.setMaximum(total or 0)
        self.progress.setValue(done)
        # none once every evaluation is done: a run that then waits for its compiles read "ETA 0s"
        # for minutes (the compiles' own count says what it waits for)
        finished = total is not None and total > 0 and done >= total
        self._eta = f"ETA {duration(eta_s)}" if eta_s is not None and not finished else ""
        stopped = f", {aborted} aborted over the latency limit" if aborted else ""
        self.show_state(f"{done} done, {failures} failed{stopped}", progress=True)

    def show_opened(self, done: int, budget: int | None) -> None:
        """A session just opened: its evaluations against its recorded budget (a bar and a label
        the last run had left, "done (budget), 40 evals", read as the opened file's)."""
        self.progress.setMaximum(max(budget or 0, done, 1))  # (a maximum of 0 is Qt's busy bar)
        self.progress.setValue(done)
        self._compiles_pending, self.compile_text, self._eta = False, "", ""
        of = f" of {budget}" if budget and budget >= done else ""
        self.show_state(f"opened: {done}{of} evaluation{'s' if (budget or done) != 1 else ''}")

    def show_state(self, text: str, progress: bool = False) -> None:
        """The run's state in the progress label with what the compiles are doing: first while they
        are pending (the bar beside it already counts the evaluations, and a narrow label elides
        the end), after the state once they are done."""
        self._run_text, self._is_progress = text, progress
        if progress:  # a paused run says so, and no ETA (it would read as progress)
            text = f"paused: {text}" if self._paused else f"{text} {self._eta}".rstrip()
        parts = (self.compile_text, text) if self._compiles_pending else (text, self.compile_text)
        # what the next Start does, first: the controls name another kernel or GPU than the views show
        self.progress_label.setText("; ".join(part for part in (self.next_start, *parts) if part))

    def _show_budget_unit(self, *_: object) -> None:
        """Evaluations per size while the next Start sweeps sizes (by the rule :meth:`request` reads
        the sizes field with: a replay's is greyed out and ignored), else evaluations."""
        sweep = bool(self.sizes.text().strip()) and self.backend.currentData() != "replay"
        self.budget.setSuffix(" evals/size" if sweep else " evals")
        if self.budget.value() == 1:  # (a budget of one: "1 eval", as the label beside it counts)
            self.budget.setSuffix(" eval/size" if sweep else " eval")

    def show_budget(self, evaluations: int) -> None:
        """``evaluations`` in the budget box, or the most it holds (a session's recorded budget may be
        any count up to 2**63-1, which Qt's box refused with an OverflowError: the session did not
        open in the window)."""
        self.budget.setValue(min(max(evaluations, self.budget.minimum()), self.budget.maximum()))

    def show_next_start(self, text: str) -> None:
        """Say before the run's state that Start would begin a new session (``text``: why; empty:
        Start continues the session shown)."""
        if text != self.next_start:
            self.next_start = text
            palette = self.progress_label.palette()  # (a palette, not a style sheet: the zoom's font reaches it)
            palette.setColor(QPalette.ColorRole.WindowText,
                             QColor(WARNING_TEXT) if text else self.palette().color(QPalette.ColorRole.WindowText))
            self.progress_label.setPalette(palette)
            self.show_state(self._run_text, self._is_progress)

    def show_compiles_ended(self, unrefined: int) -> None:
        """The run has ended while compiles were pending (a Stop ends the wait): none compiles now,
        and ``unrefined`` trials keep their estimates. "4 compiling in background" stayed first
        in the label after the run, and a 1440 px window never showed that it was done."""
        if not self._compiles_pending:
            return
        self._compiles_pending = False
        self.compile_text = f"{counted(unrefined, 'estimate')} not refined" if unrefined else ""
        self.show_state(self._run_text, self._is_progress)

    def show_compiles(self, pending: int, refined: int) -> None:
        """Background compiles, apart from evaluations: how many trials still show estimates."""
        self._compiles_pending = pending > 0
        if not pending and not refined:
            self.compile_text = ""
        elif pending:
            self.compile_text = f"{pending} compiling in background (estimates shown), {refined} refined"
        else:
            self.compile_text = f"compiles done: {refined} refined"
        self.show_state(self._run_text, self._is_progress)


def _sep() -> QWidget:
    spacer = QLabel(" ")
    spacer.setFixedWidth(8)
    return spacer

