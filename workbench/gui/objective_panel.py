"""Constraints and score weights: sliders with numeric entry that re-rank every trial at once.

Nothing is re-measured: a slider writes the new constraint into the model, the model re-ranks its
trials (a vectorised function of the stored metrics) and every view redraws from the new ranking.
Slider ranges follow the session's data; latency and memory use a log scale because tuning
landscapes span orders of magnitude.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Any, Callable, Iterable

import numpy as np

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QFontMetrics, QKeyEvent, QValidator, QWheelEvent
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QGridLayout, QGroupBox, QLabel, QLineEdit, QPushButton, QSlider, QVBoxLayout, QWidget,
)

from workbench.core.errors import WorkbenchError
from workbench.core.domain.measurement import LATENCY, Status
from workbench.core.domain.metrics import check_metrics, known_direction
from workbench.core.domain.objective import Bound, Weights, direction_problem, exact_number, fold_named_limits
from workbench.core.domain.search_objective import Objective

from workbench.gui.decimal_box import DecimalBox, point_for_comma
from workbench.gui.model import BASE_METRICS, STATUS_CODES, SessionModel
from workbench.core.domain.figures import fmt
from workbench.gui.text import LIMIT_DECIMALS, WARNING_TEXT, dragged_limit, limit_decimals, metric_label, plain_tip

STEPS = 1000
OFF = -1.0  # the spin boxes' "off" sentinel (every limit here is >= 0)
#: Positions of a weight slider, and the weight at its right end unless a weight of the session is
#: larger: then the end is the next 1-2-5 number above the largest weight (see ``weight_scale``).
WEIGHT_STEPS = 100
WEIGHT_SCALE = 10.0
#: The constraint field's example while no trial has succeeded (then it is in the session's figures).
DEFAULT_EXTRA_EXAMPLE = "occupancy >= 0.5, registers <= 64"
#: Lines of the constraint text's error shown under the field (the whole of it is the tool tip).
ERROR_LINES = 3


def _labels(text: str) -> list[str] | None:
    """The bounds a constraint text states, as sorted labels (None: it does not read): the field's
    text and what is in force are compared as bounds, not as spellings (``merit>=1`` is
    ``merit >= 1``)."""
    try:
        return sorted(Bound.parse(part).label for part in (p.strip() for p in text.split(",")) if part)
    except WorkbenchError:
        return None


#: A number in scientific notation, whole (``1e-2``) and on the way to one (``1e``, ``1.5e-``).
_EXPONENT = re.compile(r"(?:\d+\.?\d*|\.\d+)e[+-]?\d{1,3}")
_EXPONENT_START = re.compile(r"(?:\d+\.?\d*|\.\d+)e[+-]?")


def _exponent_value(typed: str, point: str) -> float | None:
    """The number ``typed`` in scientific notation, with the locale's decimal ``point``; None when
    it is not one."""
    text = typed.replace(point, ".")
    if not _EXPONENT.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


class LimitSpinBox(DecimalBox):
    """A limit's entry box, as wide as the values its slider spans.

    Qt sizes a spin box for the texts of its minimum and maximum. A limit's are the "off" sentinel
    and 1e12 at up to 8 decimals, over 20 characters, so the box took most of the column and left
    its slider a stub, worst in presentation mode's fonts. A longer typed value scrolls in the box.
    """

    #: Up (arrow, wheel, Page Up) on a box that reads "off": its owner turns the limit on.
    stepped_on = Signal()

    def __init__(self) -> None:
        super().__init__()
        #: The ends of the slider's range, set with it (:meth:`LimitControl.set_range`).
        self.shown_range = (0.0, 1.0)
        #: The tightest limit the box takes (:meth:`LimitControl.floor`): a step down past it is "off".
        self.floor = 0.0

    def stepBy(self, steps: int) -> None:  # Qt override
        """Up from "off" turns the limit on (at its loosest, as ticking the box does; it stepped
        to a limit of 0 that excluded everything), and Down past the tightest limit turns it off
        (it stopped at the tightest limit where a step is larger than it)."""
        if steps > 0 and self.value() <= self.minimum():
            self.stepped_on.emit()
            return
        if steps < 0 and self.value() > self.minimum() and self.value() + steps * self.singleStep() < self.floor:
            self.setValue(self.minimum())
            return
        super().stepBy(steps)

    def validate(self, text: str, position: int) -> Any:  # Qt override
        """The "off" the box shows while the limit is off can be typed too (or the box emptied) to
        turn it off: Qt refused every letter of it, and the limit stayed on without a word."""
        read = self.read_typed(text)  # (judged with a point, kept as typed: see gui/decimal_box.py)
        if read is None:  # (a comma that may separate thousands: not taken)
            return QValidator.State.Intermediate, text, position
        typed = read.strip().lower()
        off = self.specialValueText().lower()
        if typed == off:
            return QValidator.State.Acceptable, text, position
        if off.startswith(typed):  # "", "o", "of": on the way to it
            return QValidator.State.Intermediate, text, position
        if "e" in typed:
            return self._validate_exponent(typed), text, position
        return super().validate(text, position)

    def _validate_exponent(self, typed: str) -> QValidator.State:
        """A limit in scientific notation (``1e-2``, ``2.5E3``): Qt's own validation took no ``e``
        and dropped it and the sign after it unseen, so ``1e-2`` typed became a limit of 12. It is
        taken where it is a number in the box's range with no more decimals than the box shows,
        as the same number typed in full would be; on the way to one (``1e``, ``1e-``) it waits."""
        point = self.locale().decimalPoint()
        if _EXPONENT_START.fullmatch(typed.replace(point, ".")):
            return QValidator.State.Intermediate
        value = _exponent_value(typed, point)
        if value is None:
            return QValidator.State.Invalid
        if not self.minimum() <= value <= self.maximum() or round(value, self.decimals()) != value:
            return QValidator.State.Intermediate
        return QValidator.State.Acceptable

    def fixup(self, text: str) -> str:  # Qt override: Enter on an emptied box is "off"
        return self.specialValueText() if not text.strip() else super().fixup(text)

    def valueFromText(self, text: str) -> float:  # Qt override
        text = self.read_typed(text) or text
        if text.strip().lower() == self.specialValueText().lower():
            return self.minimum()
        value = _exponent_value(text.strip().lower(), self.locale().decimalPoint()) if "e" in text.lower() else None
        return value if value is not None else super().valueFromText(text)

    def textFromValue(self, value: float) -> str:  # Qt override
        """The value at the box's decimals without trailing zeros: the box takes as many decimals
        as set a measured value apart from its neighbours (:meth:`LimitControl.set_range`), and a
        limit of 0.05 ms read "0.0500000" at the seven a 0.019 ms kernel needs."""
        text = super().textFromValue(value)
        point = self.locale().decimalPoint()
        short = text.rstrip("0").rstrip(point) if point in text else text
        return text if value > 0 and short == "0" else short  # a limit too fine for the box is no 0

    def _text_width(self, values: tuple[float, float]) -> int:
        """The room Qt's size hint gives the texts of ``values``: each cut to 18 characters, with a
        space (QAbstractSpinBox::sizeHint), and the "off" text."""
        metrics = self.fontMetrics()
        widths = [metrics.horizontalAdvance(self.textFromValue(v)[:18] + " ") for v in values]
        return max(*widths, metrics.horizontalAdvance(self.specialValueText()))

    def _narrowed(self, hint: QSize) -> QSize:
        # room for the limits the slider sets (LimitControl.dragged); a longer typed one scrolls
        spare = self._text_width((self.minimum(), self.maximum())) - self._text_width(self.shown_range)
        return QSize(hint.width() - max(spare, 0), hint.height())

    def sizeHint(self) -> QSize:  # Qt override
        return self._narrowed(super().sizeHint())

    def minimumSizeHint(self) -> QSize:  # Qt override
        return self._narrowed(super().minimumSizeHint())


class LimitControl:
    """One constraint: an on/off box, a slider over the data's range and a spin box for exact entry."""

    def __init__(self, panel: "ObjectivePanel", field: str, metric: str, text: str, log: bool) -> None:
        self.panel, self.field, self.metric, self.log = panel, field, metric, log
        self.enabled = QCheckBox(text)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, STEPS)
        # min quality: the loosest end of the slider is its left; a quality above 1 does not exist
        self.lower_bound = field.startswith("min_")
        self.ceiling: float | None = 1.0 if metric == "quality" else None
        self.spin = LimitSpinBox()
        self.spin.setDecimals(4)
        self.spin.floor = self.floor()
        # While the constraint is off the box reads "off", never a value nobody set: its minimum
        # is a sentinel below every real limit, shown as the special text. Its maximum is the
        # metric's ceiling (quality 1), so no typed limit excludes every trial that could exist.
        self.spin.setRange(OFF, self.ceiling if self.ceiling is not None else 1e12)
        self.spin.setSpecialValueText("off")
        self.spin.setMinimumWidth(96)
        self.spin.setKeyboardTracking(False)
        # named for a screen reader, which said "slider" and "off" with nothing of what they limit
        self.slider.setAccessibleName(f"{text.replace('&', '')}: slider")
        self.spin.setAccessibleName(f"{text.replace('&', '')}: exact limit")
        bound = "below" if field.startswith("max_") else "above"
        self.tip = (f"turn the {text} constraint on or off: a trial {bound} the limit is feasible, the others "
                    "are kept and greyed out")
        self.enabled.setToolTip(self.tip)
        self._describe()
        self.lo, self.hi = 0.0, 1.0
        self.enabled.toggled.connect(self._on_toggled)
        self.slider.valueChanged.connect(self._on_slider)
        self.spin.valueChanged.connect(self._on_spin)
        self.spin.stepped_on.connect(lambda: self.enabled.setChecked(True))

    def can_show(self, value: float) -> bool:
        """Whether the box can hold ``value`` as this limit: a latency above 0, a memory of 0 or
        more, a quality no higher than 1 (the box's ceiling)."""
        floor_ok = value > 0 if self.field == "max_latency_ms" else value >= 0
        return floor_ok and value <= self.spin.maximum()

    def set_range(self, lo: float, hi: float, limit: float | None = None) -> None:
        """The slider's span and the box's decimals from the data's range (``lo`` to ``hi``), the
        decimals at least those ``limit`` (the one in force) is written with, so the box shows it
        as it is: a limit set before the data came (a memory limit of 0.01526 MB) read 0.0153
        once the data's 67 MB gave the box four decimals, a number that was not in force."""
        if self.log:
            lo = max(lo, 1e-9)
            hi = max(hi, lo * 1.0001)
            lo, hi = lo / 1.05, hi * 1.05
        else:
            span = (hi - lo) or max(abs(hi), 1.0)
            lo, hi = lo - 0.02 * span, hi + 0.02 * span
        if self.ceiling is not None:
            hi = min(hi, self.ceiling)
            lo = min(lo, hi - 1e-6)
        self.lo, self.hi = lo, hi
        # Display settings only: fewer decimals round the shown value, and that change must not
        # be written back as a limit (into the next session's constraints, when sessions switch).
        self.spin.blockSignals(True)
        self.spin.setSingleStep(_nice_step(hi - lo))
        smallest = max(min(abs(lo), abs(hi)) if lo > 0 else (hi - lo) / 100, 1e-9)
        # six significant figures of the smallest value typed: measured figures often differ in the
        # fifth (two kernels' 67.1089 and 67.1091 MB), and a box of fewer decimals dropped a typed
        # digit without a word, leaving a limit that kept neither (see textFromValue for the zeros)
        self.spin.setDecimals(int(min(LIMIT_DECIMALS, max(2, 5 - math.floor(math.log10(smallest)), limit_decimals(limit)))))
        self.spin.floor = self.floor()
        self.spin.shown_range = (self.dragged(0), self.dragged(STEPS))
        self.spin.updateGeometry()
        self.spin.blockSignals(False)

    def set_available(self, available: bool, why: str = "") -> None:
        """Offer the limit only where it can mean something: with trials measured and none
        reporting the metric, its range would be made up and any limit would exclude every trial
        (a trial without the figure cannot be shown to meet it); with every trial reporting the
        same figure, any limit keeps all of them or none (``why`` says so)."""
        tip = "" if available else why or f"no trial reports {metric_label(self.metric)}: a limit on it would exclude every trial"
        for widget in (self.enabled, self.slider, self.spin):
            widget.setEnabled(available)
            widget.setToolTip(tip)
        # a disabled box leaves the Tab order, and its tool tip with it: the reason is its
        # description too, which a screen reader reads out when it lists the panel
        self.enabled.setAccessibleDescription(tip)
        if available:
            self.enabled.setToolTip(self.tip)

    def value_at(self, position: int) -> float:
        t = position / STEPS
        if self.log:
            return self.lo * (self.hi / self.lo) ** t
        return self.lo + (self.hi - self.lo) * t

    def dragged(self, position: int) -> float:
        """The limit the slider sets at ``position``: its point rounded to one step of the scale
        there (:func:`dragged_limit`), never below the tightest limit the box takes."""
        step = (self.value_at(position) * math.log(self.hi / self.lo) if self.log else self.hi - self.lo) / STEPS
        return max(dragged_limit(self.value_at(position), step), self.floor())

    def position_of(self, value: float) -> int:
        if self.log:
            t = math.log(max(value, 1e-12) / self.lo) / math.log(self.hi / self.lo)
        else:
            t = (value - self.lo) / (self.hi - self.lo)
        return int(round(min(max(t, 0.0), 1.0) * STEPS))

    def show(self, value: float | None) -> None:
        """Reflect the model's value without echoing it back."""
        for widget in (self.enabled, self.slider, self.spin):
            widget.blockSignals(True)
        self.enabled.setChecked(value is not None)
        if value is not None and self.spin.decimals() < limit_decimals(value):  # shown as it is (1e-9 read "0")
            self.spin.setDecimals(min(LIMIT_DECIMALS, limit_decimals(value)))
        self.spin.setValue(value if value is not None else OFF)
        loosest = 0 if self.lower_bound else STEPS
        self.slider.setValue(self.position_of(value) if value is not None else loosest)
        for widget in (self.enabled, self.slider, self.spin):
            widget.blockSignals(False)
        self._describe()

    def _describe(self) -> None:
        """The slider's description is the limit the box shows: a screen reader says the slider's
        position, 700 of 1,000 steps of a log scale, for a limit of 0.122 ms."""
        self.slider.setAccessibleDescription(f"limit {self.spin.text()}")

    def _on_slider(self, position: int) -> None:
        value = self.dragged(position)
        self.spin.blockSignals(True)
        self.spin.setValue(value)
        self.spin.blockSignals(False)
        self.enabled.blockSignals(True)
        self.enabled.setChecked(True)
        self.enabled.blockSignals(False)
        self._describe()
        self.panel.model.set_constraints(**{self.field: value})  # the exact value, not the rounded text

    def floor(self) -> float:
        """The tightest limit the box takes: a latency above 0 (the box's smallest step; a limit of
        0 ms, which one Up press from "off" gave, aborted every later candidate of a run and wrote
        a session the command line refuses), a memory or quality of 0."""
        return 10.0 ** -self.spin.decimals() if self.field == "max_latency_ms" else 0.0

    def _on_spin(self, *_: Any) -> None:
        """Typing a limit turns the constraint on (a value below the tightest limit is that limit);
        stepping down to "off" turns it off; stepping up from "off" turns it on at its loosest
        limit (:meth:`LimitSpinBox.stepBy`)."""
        value = self.spin.value()
        if OFF < value < self.floor():  # no limit here is negative, and no latency limit is 0
            self.spin.blockSignals(True)
            self.spin.setValue(self.floor())
            self.spin.blockSignals(False)
        self.enabled.blockSignals(True)
        self.enabled.setChecked(self.spin.value() > OFF)
        self.enabled.blockSignals(False)
        self._on_user_change()

    def _on_toggled(self, on: bool) -> None:
        self.spin.blockSignals(True)  # on: start at the loosest limit of the data; off: "off"
        self.spin.setValue(self.dragged(0 if self.lower_bound else STEPS) if on else OFF)
        self.spin.blockSignals(False)
        self._on_user_change()

    def _on_user_change(self) -> None:
        self._describe()
        value = float(self.spin.value()) if self.enabled.isChecked() else None
        if value is not None:
            self.slider.blockSignals(True)
            self.slider.setValue(self.position_of(value))
            self.slider.blockSignals(False)
        self.panel.model.set_constraints(**{self.field: value})


class PickerCombo(QComboBox):
    """A list to pick an action from, which a pick carries out (a metric given a weight row): an
    arrow key or the mouse wheel on it closed opens the list instead of picking the next entry.
    A closed combo box reports each entry an arrow key moves to as chosen, so a person going
    through the entries by keyboard (a screen reader reading each) added the first one at once."""

    BROWSING = (Qt.Key.Key_Up, Qt.Key.Key_Down, Qt.Key.Key_PageUp, Qt.Key.Key_PageDown,
                Qt.Key.Key_Home, Qt.Key.Key_End)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # Qt override
        if event.key() in self.BROWSING and not event.modifiers() & Qt.KeyboardModifier.AltModifier:
            self.showPopup()  # in the list the arrows move, and Enter picks
            return
        super().keyPressEvent(event)

    def wheelEvent(self, event: QWheelEvent) -> None:  # Qt override: scrolling the panel picks nothing
        event.ignore()


class WeightRow:
    """One metric's weight: its name, a slider, the weight as stored and, for a metric whose
    direction the registry does not fix, a direction toggle on a line of its own under the slider
    (beside it, its text widened the column, and in presentation mode the window no longer fit a
    1440 px screen)."""

    def __init__(self, panel: "ObjectivePanel", metric: str, toggle: bool) -> None:
        self.metric = metric
        self.name = QLabel(metric_label(metric))
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, WEIGHT_STEPS)
        # each named for its metric: four sliders all announced as "Score weights", the group's title
        self.slider.setAccessibleName(f"{metric_label(metric)} weight")
        self.slider.valueChanged.connect(lambda position: panel._on_weight_slider(metric, position))
        # the weight as a number one can type (the slider moves in tenths of its span: 0.25, or a
        # weight beyond its end, was out of the keyboard's reach)
        self.value = QLineEdit("0")
        self.value.setMinimumWidth(36)
        self.value.setMaximumWidth(64)
        self.value.setAlignment(Qt.AlignmentFlag.AlignRight)
        self.value.setAccessibleName(f"{metric_label(metric)} weight, exact")
        self.value.editingFinished.connect(lambda: panel._on_weight_typed(metric, self.value.text()))
        self.toggle: QPushButton | None = None
        if toggle:
            self.toggle = QPushButton()
            self.toggle.setAutoDefault(True)  # Enter presses it, as Space does (see gui.keyboard)
            self.toggle.setAccessibleName(f"{metric_label(metric)}: direction")
            self.toggle.clicked.connect(lambda _=False: panel.toggle_direction(metric))
        #: False when no successful trial reports the metric and no weight on it is in force: a
        #: weight on it would change nothing, so the row is greyed out and its tool tip says why.
        self.available = True

    def widgets(self) -> list[QWidget]:
        return [self.name, self.slider, self.value, *([self.toggle] if self.toggle is not None else [])]


class ObjectivePanel(QWidget):
    """The constraint limits, the score weights and the live feasible count.

    Score weights: one row per metric. The fixed rows (``WEIGHTED``) are always there, and every
    metric already weighted or given a direction has its row from the start; any other metric a
    successful trial reports can be picked from "weigh another metric..." (a template's descriptive
    figures, threads per block and the like, stay out of the way until then), also one that
    appears mid-run. A metric whose direction the registry does not fix (an imported ``score``)
    has a direction toggle under its slider, which works once it has a direction. A row whose
    metric no successful trial reports is greyed out, its tool tip saying so, since a weight on it
    would change nothing; one with a weight in force stays usable, so it can be set back to 0.
    ``remeasure_requested`` asks the window to measure again the aborted candidates the
    constraints in force no longer rule out.
    """

    WEIGHTED = ("latency_ms", "throughput_gbs", "memory_mb", "quality")
    remeasure_requested = Signal()

    def __init__(self, model: SessionModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        #: The metrics the backend chosen for the next run declares, while no session is shown
        #: (None: they cannot be known before trials report them). Set by the window; without it
        #: a typo in the field was applied on an empty window, with a python benchmark's wording,
        #: and refused only by Start.
        self.declared_metrics: Callable[[], frozenset[str] | None] = lambda: None
        self.limits = {
            "max_latency_ms": LimitControl(self, "max_latency_ms", "latency_ms", "max latency (ms)", log=True),
            "max_memory_mb": LimitControl(self, "max_memory_mb", "memory_mb", "max memory (MB)", log=True),
            "min_quality": LimitControl(self, "min_quality", "quality", "min quality", log=False),
        }
        limits_box = QGroupBox("Constraints")
        grid = QGridLayout(limits_box)
        for row, control in enumerate(self.limits.values()):
            grid.addWidget(control.enabled, 2 * row, 0, 1, 2)
            grid.addWidget(control.slider, 2 * row + 1, 0)
            grid.addWidget(control.spin, 2 * row + 1, 1)
        grid.setColumnStretch(0, 1)
        grid.setVerticalSpacing(2)
        self.extra_edit = QLineEdit()
        self.extra_edit.setPlaceholderText(f"more: {DEFAULT_EXTRA_EXAMPLE}")
        self.extra_edit.setToolTip("constraints on any metric, 'metric <= value' or 'metric >= value', comma separated")
        self.extra_edit.setAccessibleName("More constraints")
        self.extra_edit.editingFinished.connect(self._on_extra_edited)
        self.extra_error = QLabel("")
        self.extra_error.setStyleSheet(f"color: {WARNING_TEXT}")
        self.extra_error.setVisible(False)
        row = 2 * len(self.limits)
        grid.addWidget(self.extra_edit, row, 0, 1, 2)
        grid.addWidget(self.extra_error, row + 1, 0, 1, 2)
        self.feasible_label = QLabel("no trials yet")
        self.feasible_label.setObjectName("feasibleCount")
        self.feasible_label.setWordWrap(True)  # in presentation mode's fonts it was cut at the column's edge
        grid.addWidget(self.feasible_label, row + 2, 0, 1, 2)
        self.remeasure_button = QPushButton("Re-measure aborted")
        self.remeasure_button.setToolTip("measure again, in full, the candidates aborted under a tighter latency "
                                         "limit that the limit in force no longer rules out")
        self.remeasure_button.clicked.connect(self.remeasure_requested.emit)
        self.remeasure_button.setEnabled(False)
        self.remeasure_button.setVisible(False)
        self.run_active = False
        grid.addWidget(self.remeasure_button, row + 3, 0, 1, 2)

        weights_box = QGroupBox("Score weights")
        wgrid = QGridLayout(weights_box)
        wgrid.setColumnStretch(1, 1)
        self.weights_grid = wgrid
        #: The weight rows by metric, in the order shown; the three dicts below view their parts.
        self.weight_rows: dict[str, WeightRow] = {}
        self.weight_sliders: dict[str, QSlider] = {}
        self.weight_labels: dict[str, QLineEdit] = {}
        #: Direction toggles of the metrics whose direction the registry does not fix, by metric.
        self.direction_buttons: dict[str, QPushButton] = {}
        #: The weight at a slider's right end (see :func:`weight_scale`): kept while the session is
        #: shown, so a slider's position means the same weight from one move to the next.
        self.weight_scale = WEIGHT_SCALE
        self._grid_lines = 0  # lines of the grid the weight rows take so far
        #: Metrics given a row beyond the fixed ones, this session, in order. A row stays once given:
        #: a weight dragged back to 0 does not take its row away from under the mouse.
        self._extra: list[str] = []
        self._reported: tuple[object, int, frozenset[str] | None] = (None, -1, None)
        self._example: tuple[tuple[object, ...], str] = ((), "")  # (what it was made of, extra_example())
        self.more_metrics = PickerCombo()
        self.more_metrics.setAccessibleName("Weigh another metric")
        self.more_metrics.setToolTip("other metrics the trials report: pick one to weigh it (for one whose "
                                     "direction is not known, say then whether higher or lower is better)")
        self.more_metrics.activated.connect(self._on_more_metric)
        self.more_metrics.setVisible(False)
        for metric in self.WEIGHTED:
            self._add_row(metric)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(limits_box)
        layout.addWidget(weights_box)
        model.session_changed.connect(self._on_session_changed)
        model.objective_changed.connect(self._on_objective_changed)
        model.ranking_changed.connect(self._on_ranking_changed)
        self._on_session_changed()

    # --- model -> widgets -------------------------------------------------------------------
    def _on_session_changed(self) -> None:
        self._show_extra_error("")  # what was said of the previous session's constraint text
        self._drop_extra_rows()
        self.weight_scale = weight_scale(self.model.weights.values.values())
        self._update_weight_rows()
        self._update_ranges(typing_kept=False)
        self._fold_named_bounds()
        self._on_objective_changed()
        self._on_ranking_changed()

    def reported_metrics(self) -> frozenset[str] | None:
        """Metrics a successful trial among those shown reports; None while none has succeeded (any
        metric may still come). Kept per version of the data: a slider move re-ranks every trial,
        it does not change what was measured, and must stay quick at 20,000 trials."""
        model = self.model
        if self._reported[0] is not model.session or self._reported[1] != model.data_version:
            names: frozenset[str] | None = None
            ok = ~model.failed_mask()
            if model.n and bool(ok.any()):
                names = frozenset(name for name, column in model.columns.items()
                                  if not name.startswith("slot:") and bool(np.isfinite(column.view(model.n)[ok]).any()))
            self._reported = (model.session, model.data_version, names)
        return self._reported[2]

    def weighable_metrics(self) -> list[str]:
        """Every metric that can be weighted: one a successful trial reports (before any has, those
        every chart offers) and one the user gave a direction. A name that is no metric name (a
        recording's ``top-1``) cannot be weighted; a figure only failed or aborted trials carry
        (``latency_bound_ms``) would rank nothing."""
        reported = self.reported_metrics()
        if reported is None and self.model.n:  # trials, none of them successful: what they carry is a failure's
            reported = frozenset(BASE_METRICS)
        names = [m for m in self.model.metric_names() if not m.startswith("slot:") and (reported is None or m in reported)]
        names += sorted(m for m in self.model.weights.directions if m not in names)
        return [m for m in names if _weighable(m)]

    def directional_metrics(self) -> list[str]:
        """The weighable metrics whose direction the user states: the registry does not know them,
        or only guesses from the name (:func:`direction_problem` allows either way)."""
        return [m for m in self.weighable_metrics() if _takes_direction(m)]

    def show_metric(self, metric: str) -> None:
        """Give ``metric`` a weight row (what choosing it under "weigh another metric..." does)."""
        if metric not in self.weight_rows and metric in self.weighable_metrics():
            self._add_row(metric)
            self._update_weight_rows()

    def _on_more_metric(self, index: int) -> None:
        if index > 0:
            metric = self.more_metrics.itemText(index)
            self.show_metric(metric)
            row = self.weight_rows.get(metric)
            if row is not None:  # the keyboard goes on where the new row is (its direction first)
                (row.toggle or row.slider).setFocus(Qt.FocusReason.OtherFocusReason)

    def _add_row(self, metric: str) -> None:
        row = WeightRow(self, metric, toggle=metric not in self.WEIGHTED and _takes_direction(metric))
        line = self._grid_lines
        for column, widget in enumerate((row.name, row.slider, row.value)):
            self.weights_grid.addWidget(widget, line, column)
        if row.toggle is not None:
            self.weights_grid.addWidget(row.toggle, line + 1, 1, 1, 2)
            self.direction_buttons[metric] = row.toggle
        self._grid_lines += 1 if row.toggle is None else 2
        self.weight_rows[metric] = row
        self.weight_sliders[metric] = row.slider
        self.weight_labels[metric] = row.value
        if metric not in self.WEIGHTED:
            self._extra.append(metric)

    def _drop_extra_rows(self) -> None:
        """Another session: the rows beyond the fixed ones go (its own come back from its weights)."""
        for metric in self._extra:
            row = self.weight_rows.pop(metric)
            for widget in row.widgets():
                self.weights_grid.removeWidget(widget)
                widget.hide()  # gone now, not at the next pass of the event loop
                widget.setParent(None)
                widget.deleteLater()
            self.weight_sliders.pop(metric, None)
            self.weight_labels.pop(metric, None)
            self.direction_buttons.pop(metric, None)
        self._extra = []
        self._grid_lines = len(self.WEIGHTED)

    def _update_weight_rows(self) -> None:
        """A row for each metric weighted or given a direction, the list of the other weighable
        ones, and which rows can change the ranking; then each row's direction and weight."""
        weights = self.model.weights
        weighable = self.weighable_metrics()
        for metric in dict.fromkeys([*weighable, *weights.values, *weights.directions]):
            if (metric not in self.weight_rows and _weighable(metric)
                    and (weights.get(metric) > 0 or metric in weights.directions)):
                self._add_row(metric)
        others = [m for m in weighable if m not in self.weight_rows]
        if [self.more_metrics.itemText(i) for i in range(1, self.more_metrics.count())] != others:
            self.more_metrics.blockSignals(True)
            self.more_metrics.clear()
            self.more_metrics.addItem("weigh another metric...")
            for metric in others:
                self.more_metrics.addItem(metric)
                self.more_metrics.setItemData(self.more_metrics.count() - 1,
                                              plain_tip(f"{metric_label(metric)}: {_direction_words(metric, weights)}"),
                                              Qt.ItemDataRole.ToolTipRole)
            self.more_metrics.blockSignals(False)
        self.weights_grid.removeWidget(self.more_metrics)
        self.weights_grid.addWidget(self.more_metrics, self._grid_lines, 0, 1, 3)
        self.more_metrics.setVisible(bool(others))
        # Tab goes through the rows in the order they are shown: a row added later (a metric of the
        # benchmark's own, with its direction toggle) was at the end of the window's focus chain,
        # behind the results table, out of reach of the keyboard); within a row, its slider, its
        # exact value, then its direction toggle (the values were all visited after the last row)
        chain: list[QWidget] = [w for row in self.weight_rows.values() for w in (row.slider, row.value, row.toggle)
                                if w is not None]
        for before, after in zip(chain, [*chain[1:], self.more_metrics]):
            QWidget.setTabOrder(before, after)
        reported = self.reported_metrics()
        for metric, row in self.weight_rows.items():
            same = self.constant_value(metric)
            kept = weights.get(metric) > 0 or row.slider.isSliderDown()  # (one in force stays reachable)
            row.available = kept or ((reported is None or metric in reported) and same is None)
            for widget in row.widgets():
                if widget is not row.slider:  # the slider also needs a direction: _show_directions
                    widget.setEnabled(row.available)
            row.name.setToolTip(plain_tip(
                f"{metric}: {_direction_words(metric, weights)}" if row.available else
                f"{metric_label(metric)} is {fmt(same)} for every successful trial: a weight on it would rank "
                "nothing (it would only move every score alike)" if same is not None else
                f"no trial of this session reports {metric_label(metric)}: a weight on it would change nothing"))
        self._show_directions()
        self._show_weights()  # a row given to a weighted metric starts at its weight, not at 0

    def constant_value(self, metric: str) -> float | None:
        """The one value every successful trial (two or more) reports for ``metric``; None when the
        figures differ, or there are too few to tell."""
        if not self.model.n:
            return None
        values = self.model.metric(metric)[self.model.status_codes() == STATUS_CODES[Status.OK]]
        # every successful trial reports it (a trial without the figure is no trial "with the same one")
        if values.size < 2 or not np.isfinite(values).all() or not np.all(values == values[0]):
            return None
        return float(values[0])

    def toggle_direction(self, metric: str) -> None:
        """Flip the direction of ``metric``; a metric without one starts at higher-is-better."""
        current = known_direction(metric, self.model.weights.directions)
        self.model.set_direction(metric, 1 if current is None else -current)

    def _show_directions(self) -> None:
        """Each toggle's word, and each slider usable where its weight can rank: the metric has a
        direction, and a trial reports it or a weight on it is in force."""
        directions = self.model.weights.directions
        for metric, row in self.weight_rows.items():
            direction = known_direction(metric, directions)
            toggle = row.toggle
            if toggle is not None and direction is None:
                toggle.setText("direction?")
                toggle.setToolTip(plain_tip(f"{metric}: is higher or lower better? Click to choose; it can be weighted then"))
            elif toggle is not None and direction is not None:
                guessed = "" if metric in directions else " (guessed from its name)"
                toggle.setText("higher is better" if direction > 0 else "lower is better")
                toggle.setToolTip(plain_tip(f"{metric}{guessed}: click for {'lower' if direction > 0 else 'higher'} is better"))
            row.slider.setEnabled(direction is not None and row.available)

    def remeasurable(self) -> int:
        """Configs whose latest trial (at each size) is aborted at a bound the constraints in force no
        longer rule out: what the controller's re-measure measures."""
        session = self.model.session
        if session is None:
            return 0
        from workbench.core.domain.sizes import remeasurable

        objective = Objective(self.model.constraints, Weights())  # the latency limit decides, not the weights
        return sum(len(configs) for _problem, configs in remeasurable(session, objective.worth_remeasuring))

    def set_run_active(self, active: bool) -> None:
        """While a run goes, nothing is re-measured beside it."""
        self.run_active = active
        self._update_remeasure()

    def _update_remeasure(self) -> None:
        codes = self.model.status_codes()
        aborted = bool(codes.size) and bool((codes == STATUS_CODES[Status.ABORTED]).any())
        count = self.remeasurable() if aborted else 0
        self.remeasure_button.setVisible(aborted)
        self.remeasure_button.setText(f"Re-measure aborted ({count})" if aborted else "Re-measure aborted")
        self.remeasure_button.setEnabled(count > 0 and not self.run_active)

    def extra_example(self) -> str:
        """Two constraints in the session's own figures, at their medians over its successful
        trials, for the field's placeholder and the limits' tips: the fixed example named occupancy
        and registers, which a recording (and a benchmark of one's own) does not report, so typing
        it back was refused. Where no other figure varies (a benchmark timing latency alone), a
        bound on the latency, which the field takes too (it becomes that limit); the fixed example
        while nothing has succeeded."""
        reported = self.reported_metrics()
        if reported is None:
            return DEFAULT_EXTRA_EXAMPLE
        # made again only when the data or the directions change: a weight's slider re-ranks every
        # trial, and each ranking asks for it
        model = self.model
        key = (model.data_version, tuple(sorted(model.weights.directions.items())))
        made_of = self._example[0]
        if not made_of or made_of[0] is not model.session or made_of[1:] != key:
            sliders = {control.metric for control in self.limits.values()}  # (they have their own boxes)
            figures = [m for m in self.weighable_metrics() if m not in sliders and m in reported]
            parts = self._example_bounds(figures, 2) or self._example_bounds([LATENCY], 1)
            self._example = ((model.session, *key), ", ".join(parts) or DEFAULT_EXTRA_EXAMPLE)
        return self._example[1]

    def _example_bounds(self, metrics: list[str], most: int) -> list[str]:
        """Up to ``most`` bounds ``metric <= median`` (``>=`` for a figure higher is better), of
        those of ``metrics`` whose successful trials differ."""
        ok = self.model.status_codes() == STATUS_CODES[Status.OK]
        parts: list[str] = []
        for metric in metrics:
            if self.constant_value(metric) is not None:
                continue
            values = self.model.metric(metric)[ok]
            values = values[np.isfinite(values)]
            if not values.size:
                continue
            higher = known_direction(metric, self.model.weights.directions) == 1
            middle = float(f"{np.median(values):.2g}")  # (two figures: an example, not a measurement)
            parts.append(f"{metric} {'>=' if higher else '<='} {fmt(middle)}")
            if len(parts) == most:
                break
        return parts

    def _update_ranges(self, typing_kept: bool = True) -> None:
        """Each limit's slider range and box decimals from the data shown; a box being typed in
        keeps its own unless ``typing_kept`` is False (another session shown: its data's decimals,
        or a value typed for the new session lost digits at the old session's)."""
        example = self.extra_example()
        self.extra_edit.setPlaceholderText(f"more: {example}")
        measured = bool(self.model.n) and not bool(self.model.failed_mask().all())
        constraints = self.model.constraints
        for control in self.limits.values():
            span = self.model.data_range(control.metric)
            # a limit already in force stays reachable, so it can be turned off
            in_force = getattr(constraints, control.field) is not None
            same = self.constant_value(control.metric)
            if same is not None and not in_force:
                control.set_available(False, f"{metric_label(control.metric)} is {fmt(same)} for every trial: a limit "
                                             f"on it keeps all of them or none (a limit on another figure, e.g. "
                                             f"{example.split(', ')[0]}, goes in the box below)")
            else:
                control.set_available(span is not None or not measured or in_force)
            if span is None:
                span = (0.0, 1.0) if not control.log else (1e-3, 1.0)
            if typing_kept and control.spin.hasFocus():  # a limit being typed: the person's until they leave it
                continue
            limit = getattr(constraints, control.field)
            control.set_range(*span, limit=limit)
            if not control.enabled.isChecked():
                control.show(None)
            elif limit is not None:  # at the box's new decimals: rounded at the old ones, 1.44448 read 1.4440
                control.show(limit)

    def _on_objective_changed(self) -> None:
        constraints = self.model.constraints
        for field, control in self.limits.items():
            control.show(getattr(constraints, field))
        in_force = ", ".join(bound.label for bound in constraints.extra)
        if not self.extra_edit.hasFocus() and self.extra_edit.text() != in_force:
            typed = _labels(self.extra_edit.text())
            self.extra_edit.setText(in_force)
            if typed != sorted(bound.label for bound in constraints.extra):
                self._show_extra_error("")  # the refused text (or what a warning was about) is gone
        self._update_weight_rows()  # a metric just weighted or given a direction gets its row
        self._update_remeasure()

    def _on_ranking_changed(self) -> None:
        ranking, n = self.model.ranking, self.model.n
        self._update_remeasure()
        if ranking is None or n == 0:
            self.feasible_label.setText("no trials yet")
            return
        if self._reported[1] != self.model.data_version:  # a metric the run just started to report
            self._update_weight_rows()
        ok = int((~self.model.failed_mask()).sum())
        self.feasible_label.setText(f"<b>{int(ranking.n_feasible)}</b> feasible of {ok} ok trials ({n} total)")
        if not any(control.slider.isSliderDown() for control in self.limits.values()):
            self._update_ranges()
            constraints = self.model.constraints
            for field, control in self.limits.items():
                value = getattr(constraints, field)
                if value is not None:
                    control.slider.blockSignals(True)
                    control.slider.setValue(control.position_of(value))
                    control.slider.blockSignals(False)

    # --- widgets -> model -------------------------------------------------------------------
    def _on_extra_edited(self) -> None:
        try:
            self.set_extra_text(self.extra_edit.text())
        except WorkbenchError as exc:
            # nothing of the refused text applies, and the field no longer shows what does: said first,
            # before a long refusal (one listing the known metrics) is cut to the column's lines
            in_force = ", ".join(bound.label for bound in self.model.constraints.extra)
            self._show_extra_error(f"still in force: {in_force}; not applied: {exc}" if in_force else str(exc))

    def set_extra_text(self, text: str) -> None:
        """``occupancy >= 0.5, registers <= 64`` -> extra bounds (WorkbenchError names a bad one).

        A bound on a metric no trial reports and the backend does not declare is refused with the
        line the command line gives (:func:`check_metrics`; most likely a typo, which would
        otherwise quietly make every trial infeasible) and nothing is applied. For a user benchmark
        that has reported nothing yet the metric may still come: it is applied, with a warning."""
        from workbench.runner.plan import session_metrics

        bounds = tuple(Bound.parse(part) for part in (p.strip() for p in text.split(",")) if part)
        session = self.model.session
        available = session_metrics(session) if session is not None else self.declared_metrics()
        warnings = check_metrics(dict.fromkeys(b.metric for b in bounds), available, self.model.weights.directions,
                                 slots=self.model.slot_names)  # (a slot bounded: said to be one, as tune says)
        named, rest = self._named_limits(bounds)
        # what the command line refuses (registers <= -5, occupancy >= 0.9 with <= 0.1) is refused
        # here too, before anything applies: the window saved such sessions, which show then refused
        folded, others = fold_named_limits(bounds, self._limit_values())
        replace(self.model.constraints, extra=others, **folded).check_possible()  # as the command line folds them
        self._show_extra_error("; ".join(warnings))
        self.model.set_constraints(extra=rest, **named)
        if named:  # the bound went to its limit's box and chart line: the field keeps the others
            self.extra_edit.setText(", ".join(bound.label for bound in rest))

    def _fold_named_bounds(self) -> None:
        """A session opened with a named limit written as a bound (``tune --constraint
        latency_ms<=0.8``) shows it in its box, as a typed one does (:meth:`_named_limits`). The
        feasible set is the same either way, so the ranking stands and the session is not marked
        modified. The limit is then the box's in every respect: a run continued from the window
        also stops candidates early that are hopeless under it, as it does for a limit set in the box."""
        session = self.model.session
        if session is None or not session.constraints.extra:
            return
        named, rest = self._named_limits(session.constraints.extra)
        if named:
            session.constraints = replace(session.constraints, extra=rest, **named)

    def _named_limits(self, bounds: tuple[Bound, ...]) -> tuple[dict[str, float], tuple[Bound, ...]]:
        """The typed bounds one of the named limits states (``latency_ms <= 0.8`` is *max latency*),
        as that limit, and the others. Left in the field such a bound applied while its box read
        *off* and the chart drew no line for it. Every bound still holds: a limit becomes the
        tightest of the bounds typed for it and the value it had. A value the box cannot show (a
        negative memory, a quality above 1) stays in the field, where it is seen as typed."""
        return fold_named_limits(bounds, self._limit_values(),
                                 accept=lambda field, value: self.limits[field].can_show(value))

    def _limit_values(self) -> dict[str, float | None]:
        """The named limits in force (None: off), where folded bounds start from."""
        constraints = self.model.constraints
        return {field: getattr(constraints, field) for field in self.limits}

    def _show_extra_error(self, text: str) -> None:
        """The constraint text's error or warning under the field (empty: hidden): broken into at
        most ``ERROR_LINES`` lines of the field's width, the whole line as tool tip. The left column
        has no room for a longer message (one listing every known metric); the lines are broken
        here because a word-wrapped label was given less height than its text and drawn over the
        feasible count."""
        label = self.extra_error
        label.setText(_wrap_lines(text, label.fontMetrics(), max(self.extra_edit.width(), 120), ERROR_LINES))
        label.setToolTip(text)
        label.setVisible(bool(text))

    def _on_weight_slider(self, metric: str, position: int) -> None:
        """The moved slider sets its own metric's weight and no other: a weight the slider grid
        cannot show (20 on a 0-10 slider, 0.25 between two steps) stays what the user gave."""
        weight = position * self.weight_scale / WEIGHT_STEPS
        self.model.set_weights({**self.model.weights.values, metric: weight})  # all zero: latency alone
        self._show_weights()  # the labels and shares of every row (a weight moved, so every share did)

    def _on_weight_typed(self, metric: str, text: str) -> None:
        """A weight typed into its box: a number of 0 or more sets it (the sliders widen for one
        beyond their end); anything else puts the weight in force back, the tool tip saying why."""
        try:
            read = point_for_comma(text.strip())  # (None: a comma that may separate thousands)
            if read is None:
                raise ValueError(text)
            weight = float(read)
            if not math.isfinite(weight) or weight < 0:
                raise ValueError(text)
            if weight != self.model.weights.values.get(metric, 0.0):
                self.model.set_weights({**self.model.weights.values, metric: weight})
        except (ValueError, WorkbenchError):
            self._show_weights()
            self.weight_labels[metric].setToolTip(plain_tip(f"{text.strip()!r} is no weight: type a number of 0 or "
                                                            "more (weights are relative: only their ratios rank)"))
            return
        self._show_weights()

    def _show_weights(self) -> None:
        """Each slider at its weight, each label the weight itself, each tool tip its share of
        the total (weights are relative: only their ratios rank). Display only: nothing is written back."""
        weights = self.model.weights.values
        needed = weight_scale(weights.values())
        if needed > self.weight_scale:  # a weight set elsewhere beyond the sliders' end: widen them
            self.weight_scale = needed
        total = sum(weights.values())
        for metric, slider in self.weight_sliders.items():
            weight = weights.get(metric, 0.0)
            slider.blockSignals(True)
            slider.setValue(min(WEIGHT_STEPS, max(0, int(round(weight / self.weight_scale * WEIGHT_STEPS)))))
            slider.blockSignals(False)
            share = f"{weight / total:.0%} of the total weight" if total > 0 else "all weights are 0: latency alone ranks"
            tip = f"{metric}: weight {_weight_text(weight)} ({share}); the slider spans 0 to {self.weight_scale:g}"
            row = self.weight_rows.get(metric)
            if row is not None and not row.available:  # greyed out: the tip says why
                tip = row.name.toolTip()
            self.weight_labels[metric].setText(_weight_text(weight))
            self.weight_labels[metric].setToolTip(tip)
            slider.setToolTip(tip)
            # a screen reader says the slider's position (10 for a weight of 1): the weight itself
            # is its description
            slider.setAccessibleDescription(f"weight {_weight_text(weight)}")



def _weighable(metric: str) -> bool:
    """Whether ``metric`` can be given a weight: a metric name, in one direction at least."""
    return direction_problem(metric, +1) is None or direction_problem(metric, -1) is None


def _takes_direction(metric: str) -> bool:
    """Whether the user may state the direction of ``metric``: the registry does not fix it."""
    return direction_problem(metric, +1) is None and direction_problem(metric, -1) is None


def _direction_words(metric: str, weights: Weights) -> str:
    direction = known_direction(metric, weights.directions)
    return "direction not known" if direction is None else ("higher is better" if direction > 0 else "lower is better")


def _wrap_lines(text: str, metrics: QFontMetrics, width: int, lines: int) -> str:
    """``text`` broken at spaces into lines of at most ``width`` pixels; past ``lines`` lines, the
    last one ends in "…" (a word longer than a line keeps its own line)."""
    wrapped: list[str] = []
    for word in text.split():
        if wrapped and metrics.horizontalAdvance(wrapped[-1] + " " + word) <= width:
            wrapped[-1] += " " + word
        else:
            wrapped.append(word)
    if len(wrapped) <= lines:
        return "\n".join(wrapped)
    last = wrapped[lines - 1]
    while " " in last and metrics.horizontalAdvance(last + " …") > width:
        last = last.rsplit(" ", 1)[0]
    return "\n".join([*wrapped[: lines - 1], last + " …"])


def weight_scale(weights: Iterable[float]) -> float:
    """The weight at a slider's right end: 10, or the next 1-2-5 number at or above the largest
    weight when one is larger (a weight of 20 or 1e9 given on the command line), so every weight
    has a slider position and no weight is ever clipped to fit one."""
    largest = max((float(w) for w in weights if math.isfinite(float(w))), default=0.0)
    if largest <= WEIGHT_SCALE:
        return WEIGHT_SCALE
    base = 10.0 ** math.floor(math.log10(largest))
    for step in (1.0, 2.0, 5.0, 10.0):
        if step * base >= largest and math.isfinite(step * base):
            return step * base
    return largest  # the float range's last decade: the largest weight itself


def _weight_text(weight: float) -> str:
    """A weight as given, not rounded to the slider's grid (0.25 stays 0.25, 20 stays 20), and
    written so that it reads back as itself: at six significant digits a weight of 1234567 read
    1.23457e+06, and Enter in its box, nothing typed, set that."""
    return exact_number(weight)


def _nice_step(span: float) -> float:
    if span <= 0 or not math.isfinite(span):
        return 0.1
    return 10 ** math.floor(math.log10(span / 100))
