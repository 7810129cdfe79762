"""The best-config card: what to use, how good it is, and why it won (or why nothing is feasible)."""

from __future__ import annotations

import html
import math
import re
from typing import Mapping

import numpy as np

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QClipboard, QContextMenuEvent, QKeyEvent, QKeySequence, QMouseEvent, QTextDocument
from PySide6.QtWidgets import QApplication, QFrame, QLabel, QMenu, QPushButton, QVBoxLayout, QWidget

from workbench.core.domain.metrics import RECORDED_RATES, rates_time_apart
from workbench.core.domain.records import provenance
from workbench.core.model.quality import EMULATION, FLOAT32_DIGITS, ROUNDED_REFERENCE
from workbench.gui.model import SessionModel
from workbench.core.domain.figures import fmt
from workbench.gui.text import metric_label, remeasure_way

CARD_METRICS = ("latency_ms", "memory_mb", "onchip_kb_per_sm", "throughput_gbs", "gflops", "quality", "occupancy", "registers")
#: Rates that are 0 for every config of a kernel that does no such work (a histogram's GFLOP/s): not shown.
_RATES = ("throughput_gbs", "gflops")
#: Figures that follow from the registers and shared memory: an estimate's when those are estimated.
_FROM_RESOURCES = ("onchip_kb_per_sm", "occupancy", "registers")


#: A break opportunity that shows nothing (zero width space): put after a name's underscores.
_BREAK = "\u200b"


def breakable(rich: str) -> str:
    """Rich text that the card may wrap after the underscores of its words: a slot or metric
    named with them (``elements_per_thread_overlap``) has no space to wrap at, and the label cut it
    and the value after it at the column's edge. Tags are left as they are; copied, the breaks are
    left out (:class:`CardText`)."""
    return re.sub(r"(?<=_)(?=[^_<])(?=[^<>]*(?:<|$))", _BREAK, rich)


class CardText(QLabel):
    """The card's selectable text, whose copies leave out the invisible breaks :func:`breakable`
    adds: pasted into code, a slot name with one inside would not be the name."""

    def copied(self) -> str:
        """The selected text as a copy takes it: without the breaks, and with its lines ended by
        line feeds (Qt gives a label's selection Unicode line and paragraph separators, which the
        results table's filter, an editor's search or a terminal read as one long line)."""
        return self.selectedText().replace(_BREAK, "").replace("\u2028", "\n").replace("\u2029", "\n")

    def keyPressEvent(self, event: QKeyEvent) -> None:  # Qt override
        if event.matches(QKeySequence.StandardKey.Copy) and self.hasSelectedText():
            QApplication.clipboard().setText(self.copied())
            event.accept()
            return
        super().keyPressEvent(event)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:  # Qt override: the selection a middle click pastes
        super().mouseReleaseEvent(event)
        clipboard = QApplication.clipboard()
        if clipboard.supportsSelection() and self.hasSelectedText():
            clipboard.setText(self.copied(), QClipboard.Mode.Selection)

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:  # Qt override
        menu = QMenu(self)
        copy = menu.addAction("Copy")
        copy.setEnabled(self.hasSelectedText())
        copy.triggered.connect(lambda: QApplication.clipboard().setText(self.copied()))
        menu.addAction("Select All").triggered.connect(self.select_all)
        menu.exec(event.globalPos())

    def select_all(self) -> None:
        document = QTextDocument()  # (selections count the characters of the text as shown)
        document.setHtml(self.text())
        self.setSelection(0, len(document.toPlainText()))


class BestCard(QFrame):
    """Shows the recommended config of the current ranking; a button selects it everywhere."""

    #: "Show in table": the row of the best trial, for the window to bring the results table up on it.
    show_requested = Signal(int)

    def __init__(self, model: SessionModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self.setObjectName("bestCard")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.title = QLabel("Recommended config")
        self.title.setObjectName("cardTitle")
        # wrapped: unwrapped, its width was the card's least, and a zoom past presentation mode
        # made the card wider than its column, cutting every line at the column's edge
        self.title.setWordWrap(True)
        self.body = CardText()
        self.body.setWordWrap(True)
        self.body.setTextFormat(Qt.TextFormat.RichText)
        self.body.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.body.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        #: (what it was counted for, (feasible configs on the front, the objectives every feasible config ties on))
        self._front: tuple[object, tuple[int, list[str]] | None] = (None, None)
        self.chart_metric = ""  # the trade-off chart's y axis (see show_also)
        self.select_button = QPushButton("Show in table")
        self.select_button.clicked.connect(self._on_select_clicked)
        layout = QVBoxLayout(self)
        layout.addWidget(self.title)
        layout.addWidget(self.body, 1)
        layout.addWidget(self.select_button, 0, Qt.AlignmentFlag.AlignRight)
        model.ranking_changed.connect(self._on_ranking_changed)
        self._on_ranking_changed()

    def _on_select_clicked(self) -> None:
        ranking = self.model.ranking
        if ranking is not None and ranking.best is not None:
            self.model.select(ranking.best)
            self.show_requested.emit(ranking.best)

    def show_also(self, metric: str) -> None:
        """List ``metric`` too (the trade-off chart's y axis), after the usual figures."""
        if self.chart_metric != metric:
            self.chart_metric = metric
            self._on_ranking_changed()

    def _on_ranking_changed(self) -> None:
        text = self.text()
        self.body.setText(breakable(text))
        # (a screen reader reads the names as they are, without the breaks)
        document = QTextDocument()
        document.setHtml(text)
        self.body.setAccessibleName(document.toPlainText())
        ranking = self.model.ranking
        self.select_button.setEnabled(ranking is not None and ranking.best is not None)

    def text(self) -> str:
        """The card's rich text (also what tests read)."""
        model, ranking = self.model, self.model.ranking
        if ranking is None or model.n == 0:
            return "<i>No trials yet. Choose a kernel and press Start, or open a session.</i>"
        best = ranking.best
        if best is None:
            if ranking.n_ok == 0:
                if ranking.aborted_count():  # stopped under the latency limit: not failures
                    note = ranking.aborted_note(how=remeasure_way(model.session), waits_for_relaxing=True)
                    return f"<b>No successful trial</b> among {model.n}: {html.escape(note)}."
                return f"<b>No successful trial</b> among {model.n}. See the failure log."
            label = ranking.most_excluding
            how = remeasure_way(model.session)
            if label is None or ranking.unscored.any():  # no score to rank by: no constraint to relax
                return f"<b>Nothing is feasible.</b><br>{html.escape(ranking.why_none(how, waits_for_relaxing=True))}."
            count = ranking.excluded_by.get(label, 0)
            # the others that exclude a trial too: relaxing the first alone may still leave nothing
            others = [f"<b>{html.escape(ranking.shown(name))}</b> excludes {n}" for name, n in ranking.excluding
                      if name != label]
            also = f" {'; '.join(others)} too." if others else ""
            # candidates stopped under the latency limit are no failures: how many wait for it to be
            # relaxed, and the button that measures them (`show` and the status bar said it; the card not)
            stopped = ranking.aborted_note(how=how, waits_for_relaxing=True)
            return (f"<b>Nothing is feasible.</b><br>The constraint <b>{html.escape(ranking.shown(label))}</b> excludes the most "
                    f"trials ({count} of {ranking.n_ok} successful).{also} Relax {'them' if others else 'it'} to get a "
                    "recommendation." + (f"<br>{html.escape(stopped[0].upper() + stopped[1:])}." if stopped else ""))
        trial = model.trials[best]
        config = "<br>".join(f"<b>{html.escape(k)}</b> = {html.escape(str(v))}" for k, v in trial.config.items())
        metrics = trial.measurement.metrics
        source = trial.measurement.details.get("quality_source") if isinstance(trial.measurement.details, dict) else None
        # estimated resources (the estimated mode for demos, or a compile not landed) make estimated
        # registers and occupancy: said beside each, where they read as a compile's facts before
        estimated = trial.measurement.resources_estimated
        # the figures the recommendation was ranked or constrained on come too, whatever they are
        # (a benchmark's own margin, an error in dB): "lowest margin" beside latency alone said
        # nothing of the margin it chose
        ranked_on = [m for m in (*model.weights.active(), *(b.metric for b in model.constraints.bounds()))
                     if m not in CARD_METRICS]
        # the trade-off chart's two axes first, latency and its y figure, so the star matches the
        # card's first lines (the y figure came last, below the fold of a card that scrolls)
        charted = [self.chart_metric] if self.chart_metric else []
        listed = list(dict.fromkeys([CARD_METRICS[0], *charted, *CARD_METRICS, *ranked_on]))
        lines = [f"{html.escape(metric_label(k))}: {fmt(metrics[k])}{_metric_note(k, metrics[k], source)}"
                 f"{_recorded_rate_note(k, metrics)}"
                 + (" <i>(estimated, not compiled)</i>" if estimated and k in _FROM_RESOURCES else "")
                 for k in listed if k in metrics and not (k in _RATES and not metrics[k] and k != self.chart_metric)]
        # the headline figure (latency) goes before the config: after its ten slot lines it was below
        # the fold of the card in presentation mode at 1280x720, and the room saw no number at all
        # with where the figure comes from when no GPU measured it: a card shown or photographed
        # alone said 0.05123 ms as a measurement (only the status bar said "SIMULATED")
        kind = provenance(model.session.device) if model.session is not None else "measured"
        source_tag = "" if kind == "measured" else f" <i>({kind})</i>"
        headline = f"<b>{lines[0]}</b>{source_tag}" if lines and listed[0] in metrics else ""
        shown = "<br>".join(lines[1:] if headline else lines)
        # The reason comes first: it is the card's one sentence, and below the config and its figures
        # it was out of sight wherever the card scrolls (presentation mode's fonts at 1440x900).
        # What qualifies the recommendation follows the reason, before the config: below its
        # figures, "the fastest config is excluded by ..." and "its resources are an estimate" were
        # out of sight in presentation mode, while the chart showed a grey point left of the star.
        parts = [f"<i>Why: {html.escape(ranking.explain(best))}</i>", self._front_text(), self._fastest_text(best)]
        if trial.measurement.resources_pending:
            parts.append("<b>Resources estimated</b>: its compile had not landed, so its registers and shared "
                         "memory are an estimate; Start (it continues the session and refines them first) can change these figures or "
                         "refuse its launch.")
        parts += [headline, f"<big>{config}</big>", shown,  # <big> is relative: it grows with the zoom
                  self._baseline_text(trial.metric("latency_ms")), f"trial {trial.index} &middot; id {trial.config.id}"]
        return "<br>".join(part for part in parts if part)

    def _front_text(self) -> str:
        """For a session that searched a Pareto front: of which metrics, and how many feasible
        configs are on it; the card's recommendation is by the score, which is not what that
        search looked for (a front of registers and occupancy was shown as "lowest latency")."""
        from workbench.core.domain.metrics import known_direction
        from workbench.core.domain.pareto import front_size
        from workbench.gui.axes import session_objectives

        model = self.model
        objectives = session_objectives(model)
        if len(objectives) < 2 or model.ranking is None:
            return ""
        key = (id(model.session), model.data_version, model.constraints, dict(model.weights.directions))
        if self._front[0] != key:  # counted once per change of the trials, constraints or directions
            directions = [known_direction(m, model.weights.directions) for m in objectives]
            if any(d is None for d in directions):  # a metric without a direction: no front to count
                self._front = (key, None)
            else:
                points = np.column_stack([-float(d or 0) * model.metric(m) for m, d in zip(objectives, directions)])
                feasible = np.asarray(model.ranking.feasible, dtype=bool) & ~model.failed_mask()
                # an objective every feasible config has the same figure of trades nothing: said, or a
                # front of one config on a flat chart read as a defect
                configs = {model.trials[i].config.id for i in np.flatnonzero(feasible)}
                flat = [m for m, column in zip(objectives, points[feasible].T)
                        if len(configs) > 1 and np.isfinite(column).all() and np.ptp(column) == 0]
                self._front = (key, (front_size(points[feasible]), flat))
        if self._front[1] is None:
            return ""
        on_front, flat = self._front[1]
        names = ", ".join(metric_label(m) for m in objectives)
        listed = "the command line's <i>show --json</i> lists " + ("it" if on_front == 1 else "them")
        said = html.escape(", ".join(metric_label(m) for m in flat))
        same = ("" if not flat else
                f" Every feasible config has the same {said}: this front trades nothing." if len(flat) == len(objectives)
                else f" {said} {'is' if len(flat) == 1 else 'are'} the same for every feasible config, so "
                     f"{'it trades' if len(flat) == 1 else 'they trade'} nothing against the others.")
        return (f"This session searched the Pareto front of <b>{html.escape(names)}</b>: {on_front} feasible "
                f"config{'s' if on_front != 1 else ''} on it ({listed}); the config below is the best by the "
                f"score weights.{same}")

    def _fastest_text(self, best: int) -> str:
        """When the recommendation is not the fastest successful config: what kept the fastest out."""
        from workbench.gui.results_table import feasibility_text  # shared wording

        latency = self.model.metric("latency_ms")
        ok = ~self.model.failed_mask() & np.isfinite(latency)
        if not ok.any():
            return ""
        fastest = int(np.flatnonzero(ok)[np.argmin(latency[ok])])
        if latency[fastest] >= latency[best]:
            return ""
        trial = self.model.trials[fastest]
        gain = f"{latency[best] / latency[fastest]:.2f}x" if latency[best] / latency[fastest] >= 1.1 else \
            f"{(latency[best] / latency[fastest] - 1) * 100:.1f}%"
        head = f"The fastest config overall (trial {trial.index}, {fmt(latency[fastest])} ms, {gain} faster)"
        if not self.model.ranking.feasible[fastest]:
            return f"{head} is excluded by <b>{html.escape(feasibility_text(self.model, fastest))}</b>."
        return f"{head} scores lower under the weights ({fmt(float(self.model.ranking.score[fastest]), 3)})."

    def _baseline_text(self, latency: float) -> str:
        baselines = getattr(self.model.session, "baselines", None) or {}
        lines = []
        for name, metrics in baselines.items():
            reference = metrics.get("latency_ms") if isinstance(metrics, dict) else None
            if reference and math.isfinite(latency) and latency > 0:
                ratio = float(reference) / latency
                verdict = "faster" if ratio >= 1 else "slower"
                shown = ratio if ratio >= 1 else 1 / ratio
                lines.append(f"vs library {html.escape(name)} ({fmt(reference)} ms): <b>{shown:.2f}x {verdict}</b>")
        return "<br>".join(lines)


def _metric_note(name: str, value: float, quality_source: object = None) -> str:
    """A few words that make a bare number readable (quality is a share of float32's digits). A
    simulated quality that is the reference's own float32 rounding says that nothing was run or
    compared: a wrong kernel gets the same figure."""
    if name == "quality" and isinstance(value, (int, float)) and math.isfinite(value):
        digits, most = _digits_of(float(value))
        if quality_source == ROUNDED_REFERENCE:
            return (f" <span style='color:#555'>(not checked: the simulator runs no kernel; the reference rounded "
                    f"to float32, {digits} of {most} digits)</span>")
        if quality_source == EMULATION:
            return (f" <span style='color:#555'>(simulated: the config's arithmetic emulated in NumPy, {digits} "
                    f"of the {most} correct digits float32 can carry, against a float64 "
                    "reference; no kernel ran)</span>")
        return (f" <span style='color:#555'>({digits} of the {most} correct digits float32 "
                f"can carry, against a float64 reference)</span>")
    return ""


def _recorded_rate_note(name: str, metrics: Mapping[str, float]) -> str:
    """Beside a recording's GFLOP/s or GB/s computed at Kernel Tuner's time apart from the median
    shown as the latency (:func:`rates_time_apart`), as the exports say it."""
    kt_time = rates_time_apart(metrics) if name in RECORDED_RATES else None
    if kt_time is None:
        return ""
    return f" <span style='color:#555'>(as recorded, at Kernel Tuner's time {fmt(kt_time)} ms)</span>"


def _digits_of(quality: float) -> tuple[str, str]:
    """A quality's correct digits and float32's most, as texts: to one decimal, or two where one
    would read a quality below 1 as every digit ("7.2 of the 7.2" for 0.9904)."""
    digits = quality * FLOAT32_DIGITS
    for places in (1, 2, 3):
        shown, most = f"{digits:.{places}f}", f"{FLOAT32_DIGITS:.{places}f}"
        if quality >= 1.0 or shown != most:
            return shown, most
    return f"{digits:.3f}", f"{FLOAT32_DIGITS:.3f}"
