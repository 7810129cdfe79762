"""Constraints and score weights: sliders with numeric entry that re-rank every trial at once.

Nothing is re-measured: a slider writes the new constraint into the model, the model re-ranks its
trials (a vectorised function of the stored metrics) and every view redraws from the new ranking.
Slider ranges follow the session's data; latency and memory use a log scale because tuning
landscapes span orders of magnitude.
"""

from __future__ import annotations

import math
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox, QDoubleSpinBox, QGridLayout, QGroupBox, QLabel, QLineEdit, QSlider, QVBoxLayout, QWidget,
)

from workbench.core.errors import WorkbenchError
from workbench.core.objective import Bound

from workbench.gui.model import SessionModel
from workbench.gui.text import metric_label

STEPS = 1000
OFF = -1.0  # the spin boxes' "off" sentinel (every limit here is >= 0)


class LimitControl:
    """One constraint: an on/off box, a slider over the data's range and a spin box for exact entry."""

    def __init__(self, panel: "ObjectivePanel", field: str, metric: str, text: str, log: bool) -> None:
        self.panel, self.field, self.metric, self.log = panel, field, metric, log
        self.enabled = QCheckBox(text)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, STEPS)
        self.spin = QDoubleSpinBox()
        self.spin.setDecimals(4)
        # While the constraint is off the box reads "off", never a value nobody set: its minimum
        # is a sentinel below every real limit, shown as the special text.
        self.spin.setRange(OFF, 1e12)
        self.spin.setSpecialValueText("off")
        self.spin.setMinimumWidth(96)
        self.spin.setKeyboardTracking(False)
        self.lo, self.hi = 0.0, 1.0
        # min quality: the loosest end of the slider is its left; a quality above 1 does not exist
        self.lower_bound = field.startswith("min_")
        self.ceiling: float | None = 1.0 if metric == "quality" else None
        self.enabled.toggled.connect(self._on_toggled)
        self.slider.valueChanged.connect(self._on_slider)
        self.spin.valueChanged.connect(self._on_spin)

    def set_range(self, lo: float, hi: float) -> None:
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
        self.spin.setSingleStep(_nice_step(hi - lo))
        smallest = max(min(abs(lo), abs(hi)) if lo > 0 else (hi - lo) / 100, 1e-9)
        self.spin.setDecimals(int(min(8, max(2, 3 - math.floor(math.log10(smallest))))))

    def value_at(self, position: int) -> float:
        t = position / STEPS
        if self.log:
            return self.lo * (self.hi / self.lo) ** t
        return self.lo + (self.hi - self.lo) * t

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
        self.spin.setValue(value if value is not None else OFF)
        loosest = 0 if self.lower_bound else STEPS
        self.slider.setValue(self.position_of(value) if value is not None else loosest)
        for widget in (self.enabled, self.slider, self.spin):
            widget.blockSignals(False)

    def _on_slider(self, position: int) -> None:
        value = self.value_at(position)
        self.spin.blockSignals(True)
        self.spin.setValue(value)
        self.spin.blockSignals(False)
        self.enabled.blockSignals(True)
        self.enabled.setChecked(True)
        self.enabled.blockSignals(False)
        self.panel.model.set_constraints(**{self.field: value})  # the exact value, not the rounded text

    def _on_spin(self, *_: Any) -> None:
        """Typing a limit turns the constraint on; stepping down to "off" turns it off."""
        if OFF < self.spin.value() < 0:  # between the sentinel and 0: no limit here is negative
            self.spin.blockSignals(True)
            self.spin.setValue(0.0)
            self.spin.blockSignals(False)
        self.enabled.blockSignals(True)
        self.enabled.setChecked(self.spin.value() > OFF)
        self.enabled.blockSignals(False)
        self._on_user_change()

    def _on_toggled(self, on: bool) -> None:
        self.spin.blockSignals(True)  # on: start at the loosest limit of the data; off: "off"
        self.spin.setValue(self.value_at(0 if self.lower_bound else STEPS) if on else OFF)
        self.spin.blockSignals(False)
        self._on_user_change()

    def _on_user_change(self) -> None:
        value = float(self.spin.value()) if self.enabled.isChecked() else None
        if value is not None:
            self.slider.blockSignals(True)
            self.slider.setValue(self.position_of(value))
            self.slider.blockSignals(False)
        self.panel.model.set_constraints(**{self.field: value})


class ObjectivePanel(QWidget):
    """The constraint limits, the score weights and the live feasible count."""

    WEIGHTED = ("latency_ms", "throughput_gbs", "memory_mb", "quality")

    def __init__(self, model: SessionModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
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
        self.extra_edit.setPlaceholderText("more: occupancy >= 0.5, registers <= 64")
        self.extra_edit.setToolTip("constraints on any metric, 'metric <= value' or 'metric >= value', comma separated")
        self.extra_edit.editingFinished.connect(self._on_extra_edited)
        self.extra_error = QLabel("")
        self.extra_error.setWordWrap(True)
        self.extra_error.setStyleSheet("color: #d55e00")
        self.extra_error.setVisible(False)
        row = 2 * len(self.limits)
        grid.addWidget(self.extra_edit, row, 0, 1, 2)
        grid.addWidget(self.extra_error, row + 1, 0, 1, 2)
        self.feasible_label = QLabel("no trials yet")
        self.feasible_label.setObjectName("feasibleCount")
        grid.addWidget(self.feasible_label, row + 2, 0, 1, 2)

        weights_box = QGroupBox("Score weights")
        wgrid = QGridLayout(weights_box)
        self.weight_sliders: dict[str, QSlider] = {}
        self.weight_labels: dict[str, QLabel] = {}
        for row, metric in enumerate(self.WEIGHTED):
            slider = QSlider(Qt.Orientation.Horizontal)
            slider.setRange(0, 100)
            slider.valueChanged.connect(self._on_weight_slider)
            value = QLabel("0.0")
            value.setMinimumWidth(32)
            wgrid.addWidget(QLabel(metric_label(metric)), row, 0)
            wgrid.addWidget(slider, row, 1)
            wgrid.addWidget(value, row, 2)
            self.weight_sliders[metric] = slider
            self.weight_labels[metric] = value
        wgrid.setColumnStretch(1, 1)

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
        self._update_ranges()
        self._on_objective_changed()
        self._on_ranking_changed()

    def _update_ranges(self) -> None:
        for control in self.limits.values():
            span = self.model.data_range(control.metric)
            if span is None:
                span = (0.0, 1.0) if not control.log else (1e-3, 1.0)
            control.set_range(*span)
            if not control.enabled.isChecked():
                control.show(None)

    def _on_objective_changed(self) -> None:
        constraints = self.model.constraints
        for field, control in self.limits.items():
            control.show(getattr(constraints, field))
        if not self.extra_edit.hasFocus():
            self.extra_edit.setText(", ".join(bound.label for bound in constraints.extra))
        weights = dict(self.model.weights.values)
        for metric, slider in self.weight_sliders.items():
            slider.blockSignals(True)
            slider.setValue(int(round(weights.get(metric, 0.0) * 10)))
            slider.blockSignals(False)
            self.weight_labels[metric].setText(f"{weights.get(metric, 0.0):.1f}")

    def _on_ranking_changed(self) -> None:
        ranking, n = self.model.ranking, self.model.n
        if ranking is None or n == 0:
            self.feasible_label.setText("no trials yet")
            return
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
            self.extra_error.setText(str(exc))
            self.extra_error.setVisible(True)

    def set_extra_text(self, text: str) -> None:
        """``occupancy >= 0.5, registers <= 64`` -> extra bounds (WorkbenchError names a bad one)."""
        bounds = tuple(Bound.parse(part) for part in (p.strip() for p in text.split(",")) if part)
        self.extra_error.setVisible(False)
        self.model.set_constraints(extra=bounds)

    def _on_weight_slider(self, *_: Any) -> None:
        values = dict(self.model.weights.values)
        for metric, slider in self.weight_sliders.items():
            weight = slider.value() / 10.0
            self.weight_labels[metric].setText(f"{weight:.1f}")
            values[metric] = weight
        self.model.set_weights(values)  # all zero: the objective falls back to latency alone


def _nice_step(span: float) -> float:
    if span <= 0 or not math.isfinite(span):
        return 0.1
    return 10 ** math.floor(math.log10(span / 100))
