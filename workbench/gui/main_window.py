"""The main window: assembles the views around one :class:`SessionModel`. Its runs, files and
exports are parts of their own that it inherits (:class:`~workbench.gui.window_runs.WindowRuns`,
:class:`~workbench.gui.window_files.WindowFiles`, :class:`~workbench.gui.window_exports.WindowExports`).

Layout: toolbar on top; left column with the objective sliders, the best-config card and the search
space; right the three charts above a tabbed table / failure log beside the source view; a status
bar that names the device and says plainly when timings are modelled or recorded.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QByteArray, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence, QResizeEvent, QShortcut, QShowEvent
from PySide6.QtWidgets import (
    QApplication, QComboBox, QLabel, QMessageBox, QPushButton, QScrollArea, QSplitter, QTabWidget, QVBoxLayout,
    QWidget,
)

from workbench.core.fs import user_folder
from workbench.core.errors import (WorkbenchError)
from workbench.core.domain.records import provenance
from workbench.core.io.session_lock import SessionLock
from workbench.gui import compat  # noqa: F401 - applied on import, before any widget exists
from workbench.gui.layout_state import splitter_state_ok, with_pane_size
from workbench.gui.background import Background
from workbench.gui.keyboard import enter_presses_buttons
from workbench.gui.best_card import BestCard
from workbench.gui.bridge import EngineThread
from workbench.gui.charts import MetricChart, ScoreChart, TradeoffChart
from workbench.gui.column_scroll import ColumnScroll
from workbench.gui.elided_label import ElidedTabs
from workbench.gui.failure_log import FailureLog
from workbench.gui.file_reading import FileReading
from workbench.gui.lazy_tabs import LazyTabs
from workbench.gui.model import SessionModel
from workbench.gui.objective_panel import ObjectivePanel
from workbench.gui.presentation import LEFT_COLUMN_PX
from workbench.gui.results_table import ResultsTable
from workbench.gui.run_panel import RunToolbar
from workbench.gui.settings_store import JsonSettings, SettingsStore
from workbench.gui.slots_panel import SlotsPanel
from workbench.gui.source_view import SourceView
from workbench.gui.text import plain_tip, window_message
from workbench.gui.window_runs import SESSION_ACTIONS, WindowRuns, _path_forms
from workbench.gui.timers import single_shot

_log = logging.getLogger(__name__)

if TYPE_CHECKING:  # the run controller is imported when a run starts
    from workbench.core.domain.session import Session
    from workbench.gui.charts import ChartBase
    from workbench.gui.compare_view import CompareView
    from workbench.gui.importance_view import ImportanceView
    from workbench.gui.portability_view import PortabilityView
    from workbench.gui.search_views import ParallelCoordinates, SlicePlots
    from workbench.gui.size_view import SizeView
    from workbench.gui.why_view import RooflineChart, WhyView

REFRESH_MS = 100  # charts and tables are fed in batches at 10 Hz, never per point
def app_settings() -> JsonSettings:
    """The window's settings (:mod:`settings_store`): ``settings.json`` in
    ``KERNEL_WORKBENCH_CONFIG_DIR`` when that is set (tests and automated runs never touch the
    person's own settings), else in the platform's configuration folder for the application. Its
    ``note`` says when a file there was set aside unread."""
    return JsonSettings(user_folder("config") / "settings.json")


class MainWindow(WindowRuns):
    """The workbench window. ``interactive=False`` answers every question with its safe default
    (used by automation and tests: closing during a run stops and saves; no recovery prompt)."""

    run_done = Signal(object)  # RunFinished, after the window has absorbed the run's last trials

    def __init__(self, interactive: bool = True, settings: SettingsStore | None = None) -> None:
        super().__init__()
        self.interactive = interactive
        # every editor this window opened: each is closed (asking about its unsaved edits) before
        # the window closes, since its Tune starts runs here and it kept the program going alone
        self._kernel_editors: list[Any] = []
        if settings is None:
            settings = app_settings()
        settings_note = getattr(settings, "note", "")
        self.settings: SettingsStore = settings
        self.model = SessionModel()
        self.path: Path | None = None  # where Save writes; None: unsaved (runs go to an autosave file)
        self.autosave_path: Path | None = None
        #: Files this window exported (resolved path -> inode, size, modification and change time):
        #: exporting to one of them again replaces it without keeping a backup of it.
        self._exports_written: dict[str, tuple[int, int, int, int]] = {}
        #: The lock of ``autosave_path``, held for as long as the window shows that unsaved session,
        #: between runs too (each run borrows it): so no other window offers it as a crashed run,
        #: recovers it, or removes it (see :meth:`_set_autosave`).
        self._autosave_lock: SessionLock | None = None
        # Not ``self.thread``: that would hide QObject.thread().
        self.engine_thread: EngineThread | None = None
        #: The engine thread's end has been shown (views, controls, ``run_done``). Until then the run
        #: counts as going even when its thread has returned: a run started in that gap would be
        #: taken for the one whose end is still queued.
        self._run_closed = True
        #: The session a run of this window measured into (its timings taken now, not earlier).
        self._live_session: Session | None = None
        #: The status bar's last word on a change of objective mid-run, cleared when the run ends.
        self._retargeted = ""
        #: Evaluations the last Start asked for; those the session's first run asked for (what a
        #: Start after a complete run offers again); what the box offered as the rest of the budget.
        self._asked_budget: int | None = None
        self._budget_step: int | None = None
        self._offered_rest: int | None = None
        #: The status bar's note of a continued run's start ("continuing this session: 40 trials so
        #: far..."), said again at the run's end with the count then (it stood beside 80 trials).
        self._started_note = ""
        self._started_noted: tuple[str, str, int] = ("", "", 1)  # what the note was said of
        self._progress: Any = None  # the run's latest progress, shown on the next refresh tick
        #: The toolbar's request right after a session was shown: Start with these same choices
        #: continues that session with its own backend (see :meth:`start_run`).
        self._shown_request: dict[str, Any] | None = None
        #: The session and row the window selected itself (see :meth:`_select_best_if_none`).
        self._picked_best: tuple[Session | None, int | None] = (None, None)
        #: Python files a session put in the kernel field, for the window's life (the kernel list keeps
        #: them as items): importing one needs the person's yes (see :meth:`_from_session`)
        self._session_code: set[Path] = set()
        #: Python benchmark files the person agreed to run (named on the command line, or
        #: confirmed in the dialog a continued session brings up).
        self.trusted_code: set[Path] = set()
        #: An automated window (no one to ask) keeps its unsaved session in the autosave when it
        #: closes, for the next start to offer, instead of letting it go: set for a run that failed
        #: after measuring, whose trials are saved nowhere else.
        self.keep_unsaved_run = False
        self.setWindowTitle("Kernel Tuning Workbench")
        self.resize(1440, 900)
        self._build()
        enter_presses_buttons(self)
        self._build_menus()
        self._build_run_menu()
        from workbench.gui.presentation import Zoom

        self.zoom = Zoom(self)  # View menu: presentation mode, Ctrl+/Ctrl- (remembered)
        self.splitters["bottom"].splitterMoved.connect(self.zoom.person_set_tab_split)
        self.splitters["main"].splitterMoved.connect(lambda *_: self.zoom.fit_tab_row())
        self.zoom.menu.addSeparator()
        columns_menu = self.zoom.menu.addMenu("Results &columns")  # the Results header's menu, by keyboard too
        columns_menu.aboutToShow.connect(lambda: self.results.columns.fill(columns_menu))
        sort_menu = self.zoom.menu.addMenu("&Sort results by")  # a header's click, by keyboard
        sort_menu.aboutToShow.connect(lambda: self.results.columns.fill_sort(sort_menu))
        help_menu = self.menuBar().addMenu("&Help")  # (there was none: no version, no pointer to the docs)
        about = help_menu.addAction("&About Kernel Tuning Workbench", self.show_about)
        about.setShortcut(QKeySequence.StandardKey.HelpContents)
        self.actions_by_name["about"] = about
        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(self.refresh)
        self._timer.start()
        self.model.session_changed.connect(self._on_session_changed)
        self.model.sizes_changed.connect(self._fill_size_picker)
        self.model.ranking_changed.connect(self._on_ranking_changed)
        self.model.objective_changed.connect(self._update_title)
        self.model.objective_changed.connect(self.retarget_run)
        # a row the window picked itself follows the recommendation when the objective moves it
        # (Why fast? kept explaining a config the constraints had since excluded)
        self.model.objective_changed.connect(self._follow_recommendation)
        self.toolbar.kernel_changed.connect(self._on_kernel_changed)
        # a quarter second after the last change: typed into the problem field, "n=4" then "n=40"
        # then "n=409" turned the note on and off with every key
        self._next_start_timer = single_shot(self, 250, self._update_next_start)
        self.toolbar.choices_changed.connect(self._next_start_timer.start)
        layout_note = self._restore_settings()
        self.zoom.fit_to_screen()
        self._fitted_when_shown = False
        self._on_session_changed()
        if not self.model.session:
            self._on_kernel_changed(self.toolbar.kernel.currentText())
        for note in (settings_note, layout_note):  # said where the person looks, and in the log
            if note:
                _log.warning("%s", note)
                self.statusBar().showMessage(note, 60000)

    # --- construction --------------------------------------------------------------------------
    def _build(self) -> None:
        model = self.model
        self.toolbar = RunToolbar(self)
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, self.toolbar)
        self.addToolBarBreak(Qt.ToolBarArea.TopToolBarArea)
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, self.toolbar.run_bar)
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, self.toolbar.progress_row)  # wrapped when short of room
        self.toolbar.start_requested.connect(self._on_start)
        self.toolbar.recording_chosen.connect(self._read_recording_ahead)
        self._recording_reader = Background()  # no parent: see Background
        self._recording_reader.done.connect(self.toolbar.show_recording_sizes)
        self.toolbar.pause_requested.connect(self._on_pause)
        self.toolbar.stop_requested.connect(self.stop_run)

        self.objective_panel = ObjectivePanel(model)
        self.objective_panel.declared_metrics = self._declared_metrics
        self.objective_panel.remeasure_requested.connect(
            lambda: self._guarded(self.remeasure_aborted, "Cannot re-measure"))
        self.best_card = BestCard(model)
        self.best_card.show_requested.connect(self.show_in_table)
        self.slots_panel = SlotsPanel()
        #: a python benchmark's space, read in a process of its own (up to its import's time limit)
        self._benchmark_reader = Background()  # no parent: see Background
        self._benchmark_reader.done.connect(self._on_benchmark_read)
        self._reading_benchmark: str | None = None
        self._file_reading = FileReading(self)  # Open, Open recent and Import read off the GUI thread
        # autosaves that could not be read now (too large, busy, a newer version's): passed over
        # until the next start, so that each older one is still offered after them
        self._recovery_passed_over: set[Path] = set()
        self._remeasure_message = ""  # "re-measuring N aborted candidates" while they are
        left_tabs = ElidedTabs()  # a zoom past presentation mode cut "Search space" to "Search sp"
        # In a scroll area: the card's wrapped text asks a height for each width, which a column
        # layout grants before anything else, and the objective panel above was squeezed below its
        # own minimum (rows drawn over each other) whenever the card's text was long.
        card_scroll = QScrollArea()
        card_scroll.setAccessibleName("Recommended config")  # a Tab stop (it scrolls a long card)
        card_scroll.setWidget(self.best_card)
        card_scroll.setWidgetResizable(True)
        card_scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        # the tab page's colour shows through, as without the scroll area (which paints its own); not
        # by a style sheet, which stopped the zoom's font from reaching the card
        card_scroll.setObjectName("cardScroll")
        card_scroll.viewport().setAutoFillBackground(False)
        self.best_card.setAutoFillBackground(False)  # setWidget turned it on
        left_tabs.tabBar().setAccessibleName("Recommendation and search space")
        left_tabs.addTab(card_scroll, "Recommended")
        left_tabs.addTab(self.slots_panel, "Search space")
        self.left_tabs = left_tabs
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(6, 6, 0, 6)
        left_layout.addWidget(self.objective_panel)
        left_layout.addWidget(left_tabs, 1)
        left.setMinimumWidth(300)

        self.score_chart = ScoreChart(model)
        self.tradeoff_chart = TradeoffChart(model)
        self.metric_chart = MetricChart(model)
        #: The charts built so far (the roofline joins when its tab is first shown); see :attr:`charts`.
        self.built_charts: dict[str, ChartBase] = {"score": self.score_chart, "tradeoff": self.tradeoff_chart,
                                                    "metric": self.metric_chart}
        self.tradeoff_chart.y_shown.connect(self.best_card.show_also)
        chart_row = QSplitter(Qt.Orientation.Horizontal)
        chart_row.setObjectName("charts")
        for chart in (self.tradeoff_chart, self.score_chart, self.metric_chart):
            chart_row.addWidget(chart)
        # Shares of the row's width (stretch, not sizes: sizes set before the first layout were lost
        # to the charts' minimum widths, leaving the score a sliver). The score over trials is the
        # run's progress and gets a fair share; the two charts with axis choosers in their headers
        # get more, so that a 1440 px window shows those choosers' entries whole.
        for index, share in enumerate((5, 3, 5)):
            chart_row.setStretchFactor(index, share)

        self.results = ResultsTable(model, settings=self.settings)  # the columns chosen are remembered
        self.failures = FailureLog(model, self.results.table_model)
        self.source_view = SourceView(model, opened=lambda: self.toolbar.kernel_folders)
        self.bottom_tabs = ElidedTabs()  # all ten in sight at 1440 px, not the last behind scroll arrows
        self.bottom_tabs.tabBar().setAccessibleName("Result views")
        self.bottom_tabs.addTab(self.results, "Results")
        self.bottom_tabs.addTab(self.failures, "Failures")
        # The other tabs are built when first shown (or asked for, e.g. ``self.size_view``): most
        # stay closed, and their plots were half the time the window took to open.
        self.pages = LazyTabs(self.bottom_tabs, self._on_page_built)
        self.pages.add("importance", "Importance", self._build_importance)
        self.pages.add("why", "Why fast?", self._build_why_view)
        self.pages.add("roofline", "Roofline", self._build_roofline)
        self.pages.add("parallel", "Parallel", self._build_parallel)
        self.pages.add("slices", "Slices", self._build_slices)
        self.pages.add("compare", "Compare", self._build_compare)
        self.pages.add("sizes", "Sizes", self._build_size_view)
        self.pages.add("portability", "Portability", self._build_portability)
        self.bottom_tabs.currentChanged.connect(self._on_bottom_tab)
        # Ctrl+Tab goes through the lower tabs from anywhere in the window, as F5 starts a run
        # from anywhere (the tab widget answers it only with the focus inside it)
        for keys, step in (("Ctrl+Tab", 1), ("Ctrl+Shift+Tab", -1), ("Ctrl+Backtab", -1)):  # (Tab or Backtab)
            QShortcut(QKeySequence(keys), self).activated.connect(lambda step=step: self._step_tabs(step))
        model.trials_added.connect(self._on_trials_for_importance)
        model.session_changed.connect(self._on_trials_for_importance)
        model.objective_changed.connect(self._on_trials_for_importance)
        bottom = QSplitter(Qt.Orientation.Horizontal)
        bottom.setObjectName("bottom")
        bottom.addWidget(self.bottom_tabs)
        bottom.addWidget(self.source_view)
        bottom.setStretchFactor(0, 3)
        bottom.setStretchFactor(1, 2)
        bottom.setSizes([660, 440])  # as the stretch; without it the tab row's full width set the split

        right = QSplitter(Qt.Orientation.Vertical)
        right.setObjectName("right")
        right.addWidget(chart_row)
        right.addWidget(bottom)
        right.setStretchFactor(0, 5)
        right.setStretchFactor(1, 4)
        right.setSizes([470, 380])

        main = QSplitter(Qt.Orientation.Horizontal)
        main.setObjectName("main")
        main.addWidget(ColumnScroll(left))  # scrolls rather than make the window taller than a screen
        main.addWidget(right)
        main.setStretchFactor(0, 0)
        main.setStretchFactor(1, 1)
        main.setSizes([LEFT_COLUMN_PX, 1100])
        self.splitters = {"main": main, "right": right, "charts": chart_row, "bottom": bottom}
        self.setCentralWidget(main)

        from workbench.gui.status_bar import install_status_bar

        status = install_status_bar(self)
        self.device_label = QLabel("no session")
        self.device_label.setTextFormat(Qt.TextFormat.PlainText)  # a device's name comes from a file: never markup
        self.timing_badge = QLabel("")
        self.timing_badge.setObjectName("timingBadge")
        from workbench.gui.elided_label import ElidedLabel

        self.summary_label = ElidedLabel("")  # ends in "…" rather than running under the labels beside it
        # A sweep's sizes are ranked one at a time (a ranking across sizes would always pick the
        # smallest size's config): the cards, charts and tables show the size picked here.
        self.size_picker = QComboBox()
        self.size_picker.setToolTip("Problem size shown in the recommendation, charts and tables "
                                    "(the Sizes tab compares all sizes)")
        self.size_picker.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.size_picker.setVisible(False)
        self.size_picker.activated.connect(self._on_size_picked)
        status.addPermanentWidget(self.size_picker)
        status.addPermanentWidget(self.device_label)
        status.addPermanentWidget(self.timing_badge)
        status.addWidget(self.summary_label, 1)
        # A message takes the summary's place while it lasts. The status bar hides its widgets
        # itself only if they are visible when the message comes; one shown later (the window
        # laid out again for presentation mode) was drawn under the message, both unreadable.
        status.messageChanged.connect(lambda message: self.summary_label.setVisible(not message))

    def _build_run_menu(self) -> None:
        """Run > Start (F5), Pause/Resume (F6), Stop (Shift+F5): the run's buttons by key from
        anywhere in the window (they were reachable only by tabbing to them, ten stops in). Each
        entry presses its button; one whose button is off says why in the status bar."""
        menu = self.menuBar().addMenu("&Run")
        toolbar = self.toolbar
        entries = (("start", "&Start", "F5", toolbar.start, "a run is going"),
                   ("pause", "&Pause / Resume", "F6", toolbar.pause, "no run is going"),
                   ("stop", "S&top", "Shift+F5", toolbar.stop, "no run is going"))
        for name, text, keys, button, why_off in entries:
            action = QAction(text, self)
            action.setShortcut(QKeySequence(keys))
            action.setAutoRepeat(False)  # a held F6 paused and resumed over and over

            def press(_: bool = False, button: QPushButton = button, why_off: str = why_off, text: str = text) -> None:
                if button.isEnabled():
                    button.click()
                else:  # (Pause and Stop are off while a stop winds down, with the run still going)
                    why = "the run is stopping" if self.running and button is not toolbar.start else why_off
                    self.statusBar().showMessage(f"{text.replace('&', '')}: {why}", 5000)

            action.triggered.connect(press)
            menu.addAction(action)
            self.actions_by_name[f"run_{name}"] = action

        def shown_as_buttons() -> None:  # the menu shows what a press would do now
            for name, _, _, button, _ in entries:
                self.actions_by_name[f"run_{name}"].setEnabled(button.isEnabled())

        def all_on() -> None:  # a disabled action's key does nothing, silently: on again once closed
            for name, *_ in entries:
                self.actions_by_name[f"run_{name}"].setEnabled(True)

        menu.aboutToShow.connect(shown_as_buttons)
        menu.aboutToHide.connect(all_on)

    def _build_menus(self) -> None:
        menu = self.menuBar().addMenu("&File")
        self.actions_by_name: dict[str, QAction] = {}

        def add(name: str, text: str, slot: Any, shortcut: Any = None) -> QAction:
            action = QAction(text, self)
            if shortcut is not None:
                action.setShortcut(shortcut)
            action.triggered.connect(slot)
            menu.addAction(action)
            self.actions_by_name[name] = action
            return action

        add("new", "&New session", self.new_session, QKeySequence.StandardKey.New)
        add("open", "&Open...", self._on_open, QKeySequence.StandardKey.Open)
        self.recent_menu = menu.addMenu("Open &recent")
        add("save", "&Save", self.save, QKeySequence.StandardKey.Save)
        add("save_as", "Save &as...", self._on_save_as, QKeySequence.StandardKey.SaveAs)
        menu.addSeparator()
        add("new_kernel", "New &kernel...", lambda: self.open_kernel_editor())
        add("open_kernel", "Open kernel &folder...", lambda: self.open_kernel_editor(ask=True))
        menu.addSeparator()
        add("import_kt", "&Import Kernel Tuner cache...", self._on_import_kt)
        add("export_csv", "Export &CSV...", self._on_export_csv)
        add("export_kt", "Export as Kernel &Tuner cache...", self._on_export_kt_cache)
        add("export_best", "Export &best config...", self._on_export_best)
        export = menu.addMenu("Export c&hart")  # (&C is Export CSV's)
        from workbench.gui.why_view import RooflineChart

        from workbench.gui.compare_view import CompareView

        titles = {**{key: chart.title for key, chart in self.built_charts.items()}, "roofline": RooflineChart.title,
                  "compare": f"{CompareView.title} (Compare)"}
        # a menu per chart, each with its own access letter, and PNG / SVG under it: ten entries
        # "... chart as PNG..." in one list had no letters, so the keyboard reached them by arrows alone
        used: set[str] = set()
        for key, title in titles.items():
            chart_menu = export.addMenu(_with_access_key(title, used))
            for fmt in ("png", "svg"):
                action = QAction(f"&{fmt.upper()}...", self)
                action.setToolTip(f"{title} chart as {fmt.upper()}")
                action.triggered.connect(lambda _=False, k=key, f=fmt: self._on_export_chart(k, f))
                chart_menu.addAction(action)
        menu.addSeparator()
        add("quit", "&Quit", self.close, QKeySequence.StandardKey.Quit)
        # While a run goes the session actions are disabled, and a disabled action's shortcut does
        # nothing at all: these stand in for them then, so Ctrl+O says why nothing opens.
        self._busy_shortcuts: list[QShortcut] = []
        for name, what in SESSION_ACTIONS.items():
            for sequence in self.actions_by_name[name].shortcuts():
                shortcut = QShortcut(sequence, self)
                shortcut.activated.connect(lambda w=what: self._refused_during_run(w))
                shortcut.setEnabled(False)
                self._busy_shortcuts.append(shortcut)
        self._update_recent_menu()

    def _step_tabs(self, step: int) -> None:
        """Ctrl+Tab: the tabs the focus is in go on (the left column's Recommended / Search space, a
        view's own tabs), as a tab widget does by itself; from anywhere else, the lower tabs. The
        window's shortcut came first for every tab widget, and the left column's no longer turned."""
        lower = self.bottom_tabs
        widget = QApplication.focusWidget()
        while widget is not None and widget is not self:
            if isinstance(widget, QTabWidget):
                if widget is lower:
                    break
                if widget.count():
                    widget.setCurrentIndex((widget.currentIndex() + step) % widget.count())
                return
            widget = widget.parentWidget()
        lower.step_page(step)

    def _start_editor_run(self, run: dict[str, Any]) -> None:
        """The editor's Tune (a simulated run of its draft) on the simulated GPU and resource figures
        the tool bar shows, when it shows the simulator: it ran on the default GPU with compiled
        figures while the tool bar, which the run left as it was, said another GPU and *estimated*."""
        from workbench.core.model.gpus import load_gpu

        toolbar = self.toolbar
        if toolbar.backend.currentData() == "sim":
            try:  # (a reopened session's model the simulator does not know: its default GPU, as before)
                load_gpu(toolbar.gpu.currentText())
                run = {"gpu_model": toolbar.gpu.currentText(), **run}
            except (WorkbenchError, OSError, ValueError):
                pass
            run = {"options": {"compile": toolbar.resources.currentData()}, **run}
        self.start_run(run)

    def open_kernel_editor(self, folder: str | os.PathLike[str] | None = None, ask: bool = False) -> Any:
        """The template editor (a window of its own); its runs start here, through the run controller."""
        from workbench.gui.kernel_editor import KernelEditor

        editor = KernelEditor(self, start_run=self._start_editor_run, interactive=self.interactive)
        editor.folder_opened = self._kernel_folder_opened
        editor.runs_from = self.toolbar.kernel_folders.get
        self.kernel_editor = editor
        self._kernel_editors.append(editor)
        if folder is not None:
            editor.open_folder(Path(folder))
        editor.show()
        if ask:
            editor.choose_and_open()
        return editor

    def _kernel_folder_opened(self, name: str, folder: Path) -> None:
        """A template opened with File > Open kernel folder... runs and exports from that folder here
        (what ``--kernel-dir`` does for ``tune`` and ``export``): the person chose the folder, so a
        session of that template continues and its .cu export renders. Opening a session file never
        names a folder to run from."""
        self.toolbar.kernel_folders[name] = str(folder)
        if self.toolbar.kernel.findText(name) < 0:
            self.toolbar.kernel.addItem(name)

    # --- the tabs built when first shown (see LazyTabs) ----------------------------------------------
    def _build_importance(self) -> QWidget:
        from workbench.gui.importance_view import ImportanceView

        view = ImportanceView(
            lambda: self.model.trials,
            objective=lambda: (self.model.constraints, self.model.weights),
            domains=lambda: ({s.name: list(s.values) for s in self.model.session.space.slots}
                             if self.model.session is not None and self.model.session.space is not None else {}),
        )
        view.slot_selected.connect(self._on_importance_slot)
        scroll = QScrollArea()  # its two plots want more height than the tab may give
        scroll.setAccessibleName("Importance of the slots")
        scroll.setWidget(view)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        return scroll

    def _build_why_view(self) -> QWidget:
        from workbench.gui.why_view import WhyView

        return WhyView(self.model)

    def _build_roofline(self) -> QWidget:
        from workbench.gui.why_view import RooflineChart

        return RooflineChart(self.model)

    def _build_parallel(self) -> QWidget:
        from workbench.gui.search_views import ParallelCoordinates

        return ParallelCoordinates(self.model)

    def _build_slices(self) -> QWidget:
        from workbench.gui.search_views import SlicePlots

        return SlicePlots(self.model)

    def _build_compare(self) -> QWidget:
        from workbench.gui.compare_view import CompareView

        return CompareView(self.model, opened=lambda: self.toolbar.kernel_folders, session_path=self._shown_file)

    def _build_size_view(self) -> QWidget:
        from workbench.gui.size_view import SizeView

        return SizeView(self.model, measure=self.measure_cells)

    def _build_portability(self) -> QWidget:
        from workbench.gui.portability_view import PortabilityView

        return PortabilityView(self.model, templates=self._prediction_templates, session_path=self._shown_file)

    def _shown_file(self) -> Path | None:
        """The file that holds the session shown: its own, or while it is unsaved its autosave (added
        to Compare or Portability, the autosave was taken for another session: one curve drawn twice)."""
        return self.path or self.autosave_path

    def _prediction_templates(self, kernel: str) -> dict[str, Any]:
        """``{kernel: template}`` when the kernel list runs ``kernel`` from a folder as a declarative
        spec: the Portability tab's simulated GPUs predict it from that template object. No folder is
        handed on (the folder can come from a reopened session's settings, and a lookup in it would
        import its Python specs)."""
        try:
            template, _ = self._folder_template(kernel)
        except WorkbenchError:  # (a folder defining it twice: no template of it to predict from)
            return {}
        return {kernel: template} if template is not None else {}

    def _on_page_built(self, key: str, page: QWidget) -> None:
        from workbench.gui.why_view import RooflineChart

        if isinstance(page, RooflineChart):
            self.built_charts["roofline"] = page
        zoom = getattr(self, "zoom", None)
        if zoom is not None:  # a page built after the zoom was set takes it too
            zoom.apply_to(page)

    @property
    def importance(self) -> ImportanceView:
        from workbench.gui.importance_view import ImportanceView

        view = self.pages.typed_page("importance", QScrollArea).widget()  # the ImportanceView it scrolls
        assert isinstance(view, ImportanceView)
        return view

    @property
    def why_view(self) -> WhyView:
        from workbench.gui.why_view import WhyView

        return self.pages.typed_page("why", WhyView)

    @property
    def roofline_chart(self) -> RooflineChart:
        from workbench.gui.why_view import RooflineChart

        return self.pages.typed_page("roofline", RooflineChart)

    @property
    def parallel(self) -> ParallelCoordinates:
        from workbench.gui.search_views import ParallelCoordinates

        return self.pages.typed_page("parallel", ParallelCoordinates)

    @property
    def slices(self) -> SlicePlots:
        from workbench.gui.search_views import SlicePlots

        return self.pages.typed_page("slices", SlicePlots)

    @property
    def compare(self) -> CompareView:
        from workbench.gui.compare_view import CompareView

        return self.pages.typed_page("compare", CompareView)

    @property
    def size_view(self) -> SizeView:
        from workbench.gui.size_view import SizeView

        return self.pages.typed_page("sizes", SizeView)

    @property
    def portability(self) -> PortabilityView:
        from workbench.gui.portability_view import PortabilityView

        return self.pages.typed_page("portability", PortabilityView)

    @property
    def charts(self) -> dict[str, ChartBase]:
        """Every chart by key (score, tradeoff, metric, roofline), the roofline built if it was not."""
        self.pages.page("roofline")
        return self.built_charts

    # --- slot importance (costly: computed only while its tab is shown, coalesced) -----------------
    def _on_bottom_tab(self, _index: int) -> None:
        if self.pages.is_built("importance") and self.importance.isVisible():
            self.importance.schedule_refresh()
        if self.pages.is_built("portability") and self.bottom_tabs.currentWidget() is self.portability:
            self.portability.refresh_if_dirty()

    def _on_trials_for_importance(self, *_: Any) -> None:
        if self.pages.is_built("importance") and self.importance.isVisible():
            self.importance.schedule_refresh()

    def _on_importance_slot(self, name: str) -> None:
        """A slot chosen in the importance view becomes the x axis of the Explore chart."""
        _, y = self.metric_chart.axes()
        self.metric_chart.set_axes("slot:" + name, y or "latency_ms")

    # --- refresh -------------------------------------------------------------------------------
    def refresh(self) -> None:
        """One timer tick: absorb new trials, then redraw what changed (batched)."""
        self.model.sync()
        self._show_progress()
        for chart in self.built_charts.values():
            chart.refresh_if_dirty()
        if self.bottom_tabs.currentWidget() is self.failures or not self.running:
            self.failures.refresh_if_dirty()

    def retarget_run(self) -> None:
        """Constraints or weights changed: a running search follows the new objective from its
        next proposal on (the ranking in the views already did). An objective that cannot be
        built (a weighted metric without a direction) leaves the run on the one it had."""
        if not self.running or self.engine_thread is None:
            return
        from workbench.core.domain.search_objective import Objective

        engine = self.engine_thread.engine
        running = engine.objective.objectives if engine.objective is not None else ()  # a Pareto run stays one
        try:
            self.model.constraints.check_possible()  # a limit no measurement could meet is not searched for
            objective = Objective(self.model.constraints, self.model.weights, running)
            engine.set_objective(objective)  # refused once the run has ended (its end not yet shown)
        except WorkbenchError as exc:
            self.statusBar().showMessage(f"the run keeps its objective: {window_message(exc)}", 8000)
            return
        # said, so a change mid-run is not taken for a re-ranking of what was measured alone
        described = objective.describe()
        # as the views write a limit (latency_ms <= 0.610487), not a slider position's every digit
        bounds = ", ".join(b.shown for b in self.model.constraints.bounds()) or "no constraints"
        if running:  # a Pareto search follows the bounds; the weights rank only the views
            steer = f"the Pareto front of {', '.join(running)} (the weights rank the views, not this search)"
        else:
            terms = ", ".join(f"{metric} {term['share']:.0%}" for metric, term in described["terms"].items())
            steer = f"score {terms or 'latency'}"
        self._retargeted = (f"the running search follows the new objective from its next proposal: "
                            f"{bounds}; {steer}")
        self.statusBar().showMessage(self._retargeted, 8000)

    def _fill_size_picker(self) -> None:
        """List the session's sizes (shown only for a sweep) with the size shown selected."""
        from workbench.core.domain.session import problem_key
        from workbench.core.domain.size_analysis import label_names, size_label
        from workbench.core.domain.sizes import size_order_key

        problems = self.model.problems()
        shown = self.model.shown_problem()
        session = self.model.session
        # the sweep's own order, as tune and show list its sizes (the first --sizes name slowest)
        names = label_names(session, problems)
        self.size_picker.blockSignals(True)
        self.size_picker.clear()
        for problem in sorted(problems, key=lambda p: size_order_key(p, names)):
            self.size_picker.addItem("size: " + size_label(problem, names), problem)
            if shown is not None and problem_key(problem) == problem_key(shown):
                self.size_picker.setCurrentIndex(self.size_picker.count() - 1)
        self.size_picker.blockSignals(False)
        self.size_picker.setVisible(shown is not None)

    def _on_size_picked(self, index: int) -> None:
        problem = self.size_picker.itemData(index)
        if isinstance(problem, dict):
            self.model.show_problem(problem)
            # the views start over at the new size: the source pane shows its recommendation, as
            # on opening, instead of "Select a trial" beside a card that names one
            if not self.running:
                self._select_best_if_none()

    def _on_session_changed(self) -> None:
        self._fill_size_picker()
        session = self.model.session
        if session is None:
            self.device_label.setText("no session")
            self.timing_badge.setText("")
            self.timing_badge.setStyleSheet("")
        else:
            device = session.device
            backend = session.backend.get("kind", "?") if isinstance(session.backend, dict) else "?"
            checks = str(session.extra.get("reference") or "")  # a template without a reference says how it checks
            # the device alone (the badge beside it says how its timings came, the tool bar names the
            # kernel): the status bar's room goes to the recommendation; the tool tip says it all
            self.device_label.setText(f"{device.get('name', 'unknown device')}" + ("  ·  no reference given" if checks else ""))
            self.device_label.setToolTip(plain_tip("\n".join(part for part in (checks, f"{device.get('name', 'unknown device')}  ·  "
                                                                           f"backend: {backend}  ·  {session.kernel}") if part)))
            if checks:
                self.statusBar().showMessage(f"{session.kernel}: {checks}", 15000)
            self._show_timing_badge()
            if backend == "replay":  # the recording's kernel (greyed), not the last template shown; not added as one
                self.toolbar.kernel.setEditText(session.kernel)
            panel = self.slots_panel  # one that shows this space already (edited from a wider one) keeps its base
            if session.space is not None and not (_same_slots(panel.base, session.space)
                                                  or _same_slots(panel.space, session.space)):
                panel.set_space(session.space, fixed=backend != "python", from_session=True)
            self._show_problem_hint(session.problem)
        self._update_title()

    def _show_timing_badge(self) -> None:
        """Say where the shown session's timings come from: modelled, replayed, imported, measured
        on a GPU by a run of this window, or measured on a GPU earlier (a session opened from a
        file, which a shipped recording of a GPU run is: "measured live" over it, on a laptop
        without a GPU, read as a measurement made in front of the class)."""
        session = self.model.session
        if session is None:
            return
        device = session.device
        backend = session.backend.get("kind", "?") if isinstance(session.backend, dict) else "?"
        kind = provenance(device, str(backend))
        if kind == "simulated":
            text, style = "SIMULATED: timings are modelled, not measured", "background:#f0c000; color:black"
        elif kind in ("replayed", "recorded"):
            # as show and the exports name them: a replay ran a strategy over a recording; an
            # import is the recording itself (both measured earlier, elsewhere)
            text = ("RECORDED: timings were measured earlier, not now" if provenance(device) == "recorded"
                    else "REPLAY: timings were recorded earlier, not measured now")
            style = "background:#56b4e9; color:black"
        elif session is self._live_session:
            text, style = "measured live", "background:#009e73; color:white"
        else:
            text, style = "MEASURED: timings from an earlier run, not now", "background:#009e73; color:white"
        self.timing_badge.setText(f"  {text}  ")
        self.timing_badge.setStyleSheet(f"{style}; font-weight:bold; border-radius:3px")

    def _on_ranking_changed(self) -> None:
        ranking = self.model.ranking
        text = ""
        if ranking is not None and self.model.n:
            # by its number as the table, the charts and the card name it, its id beside it
            best = ranking.best
            text = ranking.summary(None if best is None else int(self.model.trial_numbers()[best]))
        self.summary_label.setText(text)
        if text and self.statusBar().currentMessage() == self.zoom.said:
            # a new recommendation outranks why the zoom is smaller than asked: that note hid the
            # recommendation for its ten seconds after a constraint moved, and into a run
            self.statusBar().clearMessage()
        self._update_title()

    def _update_title(self) -> None:
        name = self.path.name if self.path else ("untitled" if self.model.session is not None else "")
        star = " *" if self.model.dirty else ""
        kernel = f" — {self.model.session.kernel}" if self.model.session is not None else ""
        self.setWindowTitle(f"Kernel Tuning Workbench{kernel} — {name}{star}" if name else "Kernel Tuning Workbench")

    def _on_kernel_changed(self, name: str) -> None:
        """Show the chosen template's space in the slots panel before any run (no GPU involved)."""
        if self.running or not name:
            return
        session = self.model.session
        if session is not None and self._shows_session_kernel(name):
            backend = session.backend.get("kind") if isinstance(session.backend, dict) else None
            self.slots_panel.set_space(session.space, fixed=backend != "python", from_session=True)
            return
        if name.endswith(".py"):  # its declarations are read by a process of its own: not on this thread
            self.slots_panel.set_space(None)
            if self._from_session(name):  # opening a file never runs code: not before the person's yes
                self.slots_panel.count_label.setText(f"the space of {Path(name).name} is read when you confirm "
                                                     "running its code (Start asks)")
                return
            self.slots_panel.count_label.setText(f"reading the space of {Path(name).name}...")
            self._reading_benchmark = name
            self._benchmark_reader.start("benchmark-space", name, lambda: _open_kernel(name))
            return
        self._show_kernel_space(name, _open_kernel(name))

    def _from_session(self, name: str) -> bool:
        """Whether the python file ``name`` is one a session put in the kernel field (as written or
        as it resolves now: a link changed since still counts), never confirmed by the person."""
        forms = _path_forms(name)
        return bool(forms & self._session_code) and not forms & self.trusted_code

    def _read_recording_ahead(self, path: str) -> None:
        """Read a recording chosen for a replay on a thread, before Start: the run's own reading
        finds it in the process's cache then (an 18,000-config Kernel Tuner cache held the window
        2 s at Start). What cannot be read is said by Start, as before; from here only the sizes it
        holds are shown, in the problem field's placeholder."""
        if not path or not os.path.isfile(path):
            self.toolbar.show_recording_sizes(path, None)
            return
        from workbench.backends.replay import load_recording, recording_sizes

        def read() -> tuple[list[str], str] | None:
            try:
                return recording_sizes(load_recording(path))
            except (WorkbenchError, OSError):
                return None

        self._recording_reader.start("read-recording", path, read)

    def _on_benchmark_read(self, name: str, target: Any) -> None:
        """A python benchmark's space, read off the GUI thread: shown unless the kernel field or a
        run has moved on meanwhile."""
        if name != self._reading_benchmark:
            return
        self._reading_benchmark = None
        if not self.running and self.toolbar.kernel.currentText() == name:
            self._show_kernel_space(name, target)

    def _show_kernel_space(self, name: str, target: Any) -> None:
        """The space of ``target`` (an opened kernel) in the slots panel, or why it cannot be read."""
        if isinstance(target, str) or target is None:
            self.slots_panel.set_space(None)
            self.slots_panel.error_label.setText(f"{name}: {target or 'its space could not be read (see the log)'}")
            return
        self.slots_panel.set_space(target.space, fixed=not name.endswith(".py"))
        self._show_problem_hint(target.problem)

    def _shows_session_kernel(self, name: str) -> bool:
        """Whether the kernel field names what the shown session measured: its template, or for a
        python benchmark its file (loading that file to list its space would run its code)."""
        session = self.model.session
        if session is None:
            return False
        if session.kernel == name:
            return True
        backend = session.backend if isinstance(session.backend, dict) else {}
        path = (backend.get("options") or {}).get("path")
        return (backend.get("kind") == "python" and bool(path) and name.endswith(".py")
                and Path(name).resolve() == Path(str(path)).resolve())

    def _show_problem_hint(self, problem: Any) -> None:
        """The problem field's placeholder shows the parameters in force for the shown kernel."""
        self.toolbar.show_problem_hint(", ".join(f"{k}={v}" for k, v in dict(problem or {}).items()))

    # --- about, tabs and messages ------------------------------------------------------------
    def _declared_metrics(self) -> frozenset[str] | None:
        """What the backend chosen in the tool bar declares it reports (the simulator's); None where
        it declares nothing in advance (a python benchmark, a recording, a GPU)."""
        from workbench.runner.plan import backend_class

        kind = self.toolbar.backend.currentData()
        if kind not in ("sim", "cuda"):
            return None
        try:
            return backend_class(kind).metrics
        except WorkbenchError:
            return None

    def about_text(self) -> str:
        """The version, what the window shows its numbers from, and where the guides are."""
        import platform

        import PySide6

        from workbench import __version__

        docs = Path(__file__).resolve().parents[2] / "docs"
        guides = (f"The guides are in {docs}: gui.md (this window), cli.md (the command line), own-kernel.md "
                  "(your own kernel), objective.md, strategies.md." if docs.is_dir()
                  else "The guides are the docs folder of the project's source (gui.md for this window).")
        return (f"Kernel Tuning Workbench {__version__}\nPython {platform.python_version()}, "
                f"Qt (PySide6) {PySide6.__version__}\n\n"
                "Kernels compile for real (NVRTC); without a GPU the timings are the simulator's, labelled "
                "SIMULATED, or a recording's, labelled REPLAY.\n\n" + guides)

    #: The bottom tabs by the names ``gui --tab`` takes, in the row's order.
    TAB_NAMES = ("results", "failures", "importance", "why", "roofline", "parallel", "slices", "compare", "sizes",
                 "portability")

    def show_tab(self, name: str) -> None:
        """Bring the bottom tab ``name`` (one of :data:`TAB_NAMES`) to the front, built if it was
        not yet: what ``gui --tab`` shows, for a picture of a view other than Results."""
        pages = {"results": self.results, "failures": self.failures}
        page = pages[name] if name in pages else self.pages.page(name)
        self.bottom_tabs.setCurrentWidget(page)

    def settle_views(self, seconds: float = 60.0) -> None:
        """Wait (running the event loop) until the views built so far have what they compute in
        the background for the session shown: a picture taken at once showed the Importance tab
        "computing over 40 trials..." with empty axes, or a mid-run result. At most ``seconds``."""
        deadline = time.monotonic() + seconds
        if self.pages.is_built("sizes"):  # (it refreshes on a timer after the last trial: now)
            self.size_view.refresh()
        if self.pages.is_built("importance"):
            view = self.importance
            view.refresh()  # (a refresh its timer still waits for, now: it is the one to show)
            while view.computing and time.monotonic() < deadline:
                QApplication.processEvents()
                time.sleep(0.01)
        QApplication.processEvents()

    def show_about(self) -> None:
        text = self.about_text()
        if self.interactive:
            QMessageBox.about(self, "About Kernel Tuning Workbench", text)
        else:
            self.statusBar().showMessage(text.splitlines()[0], 8000)

    def _nothing_yet(self, what: str) -> bool:
        """Said when File > Save or an export is chosen with no session shown (it did nothing, silently)."""
        self.statusBar().showMessage(f"nothing to {what} yet: run a kernel or open a session first", 8000)
        return False

    def _guarded(self, action: Any, title: str) -> bool:
        """Run ``action``; a WorkbenchError or OSError is shown as one line. True when it succeeded."""
        try:
            action()
        except (WorkbenchError, OSError) as exc:
            self._error(title, window_message(exc))
            return False
        return True

    def _error(self, title: str, text: str) -> None:
        self.statusBar().showMessage(f"{title}: {text}", 10000)
        if self.interactive:
            QMessageBox.warning(self, title, text)

    # --- settings ------------------------------------------------------------------------------
    def _restore_settings(self) -> str:
        """Restore the window's geometry, pane sizes, chart axes and template from the settings;
        returns a note when a stored pane layout was not valid and the default was kept (Qt takes
        such bytes unchecked: a handle 100,000 pixels wide crashed the window at every start).
        The main window's own state (where its tool bars are) is not restored: they cannot be
        moved, and a crafted one held the window for minutes before it appeared."""
        geometry = self.settings.value("geometry")
        if isinstance(geometry, QByteArray):
            self.restoreGeometry(geometry)
        refused = []
        for name, splitter in self.splitters.items():
            value = self.settings.value(_splitter_key(name))
            if isinstance(value, QByteArray):
                if splitter_state_ok(bytes(value.data()), splitter.count()):
                    splitter.restoreState(value)
                    if name == "bottom":  # the person's split, kept (the zoom's own is not saved)
                        self.zoom.tab_split_by_person = True
                else:
                    refused.append(name)
        axes = self.settings.value("metric_axes")
        if isinstance(axes, list) and len(axes) == 2:
            self.metric_chart.set_axes(str(axes[0]), str(axes[1]))
        kernel = self.settings.value("kernel")
        if isinstance(kernel, str) and self.toolbar.kernel.findText(kernel) >= 0:
            self.toolbar.kernel.setCurrentIndex(self.toolbar.kernel.findText(kernel))  # the last used template
        if refused:
            return (f"settings: the stored sizes of the {', '.join(refused)} panes were not valid; the default "
                    "layout is used")
        return ""

    def save_settings(self) -> None:
        self.settings.setValue("geometry", self.saveGeometry())
        self.settings.remove("state")  # (an earlier version's main-window state: never read again)
        for name, splitter in self.splitters.items():
            state = splitter.saveState()
            if name == "main" and self.zoom.set_left_column():  # the zoom's width, not the person's
                state = QByteArray(with_pane_size(bytes(state.data()), 0, LEFT_COLUMN_PX))
            if name == "bottom":
                self.settings.remove("splitter/bottom")  # (an earlier version's, saved at every close)
                if not self.zoom.tab_split_by_person:  # fitted to this window's width: not kept
                    self.settings.remove(_splitter_key(name))
                    continue
            self.settings.setValue(_splitter_key(name), state)
        self.settings.setValue("metric_axes", list(self.metric_chart.chosen_axes()))
        self.settings.setValue("kernel", self.toolbar.kernel.currentText())
        self.settings.sync()

    # --- closing -------------------------------------------------------------------------------
    def showEvent(self, event: QShowEvent) -> None:  # Qt override
        """The remembered zoom fitted again once the window is first on screen and laid out: its
        tool bars have a width only then (a zoom that moves the run's controls into their overflow
        menu is taken down)."""
        super().showEvent(event)
        if not self._fitted_when_shown:
            self._fitted_when_shown = True
            QTimer.singleShot(0, self, self.zoom.fit_to_screen)

    def resizeEvent(self, event: QResizeEvent) -> None:  # Qt override
        """The left column's zoomed width is a share of the window's, and the tab row takes what its
        names need (see Zoom.fit_panes): fitted again once the splitters have the new width."""
        super().resizeEvent(event)
        if self._fitted_when_shown:
            QTimer.singleShot(0, self, self.zoom.fit_panes)

    def closeEvent(self, event: QCloseEvent) -> None:  # Qt override
        editors = [editor for editor in self._kernel_editors if editor.isVisible()]
        # asked first, closed last: a question of this window's answered Cancel leaves them open
        if not all(editor.may_drop_edits("Close the main window") for editor in editors):
            event.ignore()  # its unsaved edits kept: the window stays
            return
        if self.running:
            if self.interactive:
                text = (f"Stop the run and save its trials to {self.path.name} before closing?" if self.path is not None
                        else "Stop the run before closing? You are asked next whether to save its trials.")
                answer = QMessageBox.question(self, "A run is going", text,
                                              QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel)
                if answer != QMessageBox.StandardButton.Yes:
                    event.ignore()
                    return
            # the run may have ended while the question was asked, its end shown then (no end is to
            # come): a window that stays shows an end still to come, and only then
            shown_already = self._run_closed
            self.stop_run_unshown()
            if self.path is not None:
                self._run_closed = shown_already  # (a window left "running" for good refused every Start)
                if not self.save_to(self.path):
                    # the save the question promised failed (said in its own message): the window
                    # stays, its run stopped, so the person can save under another name as that
                    # message advises; it closed anyway, with the trials in the autosave alone
                    if self.interactive:
                        event.ignore()
                        return
                    if self.autosave_path is not None and self.model.session is not None:
                        from workbench.core.domain.session import save_session  # for the next start

                        try:
                            save_session(self.model.session, self.autosave_path)
                        except (WorkbenchError, OSError) as exc:  # its journal still holds what the run measured
                            _log.warning("could not keep the unsaved trials in %s: %s", self.autosave_path, exc)
                self._run_closed = True
            elif self.interactive and self.model.session is not None:
                # The question promised a save: where to is asked now, as closing after a run asks
                # (the trials went to an autosave alone, and the next start called it a run that
                # did not end cleanly). Cancel keeps the window, its run stopped, its end shown.
                # the run's end, queued, is shown as usual (by the question's own event loop, or
                # after it): the window may stay (Cancel, a save that failed), and a window whose
                # end was taken as shown stayed "running" for good, Start off
                self._run_closed = shown_already
                if not self._maybe_save():
                    event.ignore()
                    return
                self._run_closed = True  # closing after all: its end is not shown
                self._drop_autosave()  # saved, or discarded by the person: nothing to recover
            elif self.autosave_path is not None and self.model.session is not None:  # unsaved run: kept whole
                from workbench.core.domain.session import save_session  # for the next start to recover

                try:
                    save_session(self.model.session, self.autosave_path)
                except (WorkbenchError, OSError) as exc:  # (a full disk) its journal holds what the run measured
                    _log.warning("could not keep the unsaved trials in %s: %s", self.autosave_path, exc)
        elif not self._maybe_save():
            event.ignore()
            return
        elif not self.interactive and self.autosave_path is not None and (
                self.keep_unsaved_run and self.model.session is not None or self._file_lacks_trials()):
            # an automated window has no one to ask: a session saved to a file while its run went
            # on in the autosave has trials that file lacks; they stay in the autosave, whole, for
            # the next start to recover, instead of going with it (an automated run that was never
            # saved anywhere is let go, as before)
            from workbench.core.domain.session import save_session

            try:
                save_session(self.model.session, self.autosave_path)  # type: ignore[arg-type]
            except (WorkbenchError, OSError) as exc:  # its journal still holds what the run measured
                _log.warning("could not keep the unsaved trials in %s: %s", self.autosave_path, exc)
        else:
            self._drop_autosave()  # saved, discarded by the person, or nothing unsaved: nothing to recover
        self._file_reading.cancel()  # a file being read is not shown in a closed window
        # A kept autosave (closed during a run) is the next start's to recover: its lock goes now.
        self._set_autosave(self.autosave_path)
        self._timer.stop()
        if self.interactive:  # an automated run's window size is not the person's layout
            self.save_settings()
        for editor in editors:
            editor.close_asked()
        self._kernel_editors.clear()
        event.accept()


def _with_access_key(text: str, used: set[str]) -> str:
    """``text`` with an access letter (``&``) before its first letter that ``used`` lacks (which it
    then holds), starting with the first letter of a word; unchanged when every letter is taken."""
    starts = [i for i, c in enumerate(text) if c.isalpha() and (i == 0 or not text[i - 1].isalnum())]
    for i in [*starts, *range(len(text))]:
        letter = text[i].lower()
        if text[i].isalpha() and letter not in used:
            used.add(letter)
            return text[:i] + "&" + text[i:]
    return text


def _same_slots(shown: Any, space: Any) -> bool:
    """Whether ``shown`` has the slots and restrictions of ``space`` (the problem's parameters,
    which a run's size changes, aside)."""
    return shown is not None and shown.slots == space.slots and shown.restrictions == space.restrictions



#: Settings keys of splitters whose layout changed: a state saved before the change would bring
#: the old layout back (the chart row once left the score over trials a sliver; the tabs' split
#: was saved at every close, so an earlier version's counted as one the person had set, and the
#: tab names stayed cut at 1280 px).
_SPLITTER_KEYS = {"charts": "splitter/charts-2", "bottom": "splitter/bottom-2"}


def _splitter_key(name: str) -> str:
    return _SPLITTER_KEYS.get(name, f"splitter/{name}")

def _open_kernel(name: str) -> Any:
    """The target of kernel ``name`` (a template, simulated; or a python benchmark's file), or one
    line saying why it cannot be opened: a broken template or benchmark must not end the window."""
    from workbench.runner.plan import make_backend_spec, open_target

    python = name.endswith(".py")
    try:
        return open_target(make_backend_spec(name, "python" if python else "sim",
                                             extra=None if python else {"compile": "estimate"}))
    except (WorkbenchError, Exception) as exc:  # noqa: BLE001 - a broken template must not kill the window
        return str(exc)
