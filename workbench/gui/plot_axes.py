"""Axis items whose tick labels can be read: measured against the room the axis has.

pyqtgraph labels a log axis with its own tick levels, which over less than a decade leaves one
label or none (and, with its automatic SI prefix, a "(x0.001)" beside the title), or every minor
tick, which runs together as "0.070.060.05". Fixed ticks (``setTicks``) are drawn as given, through
each other when the axis is short. The two axes here choose their labels at paint time from the
axis's length in pixels and its tick font (so a zoomed window or a resized pane relabels itself),
with the rules of :mod:`workbench.gui.axes`.
"""

from __future__ import annotations

import functools
import html
import math
import weakref
from typing import Any, Sequence

import pyqtgraph as pg
from PySide6.QtGui import QFont, QFontMetricsF

from workbench.gui.axes import choose_log_ticks, fit_category_labels, format_ticks, title_lines


#: How far past its axis's outer edge pyqtgraph draws an axis title (``AxisItem.resizeEvent``).
TITLE_NUDGE = 5


class _MeasuredAxis(pg.AxisItem):
    """What the subclasses share: the tick font's metrics and the room between labels."""

    def spacing(self) -> tuple[float, float]:
        """The gap between two labels: in lines on a vertical axis, in widths of "M" on a
        horizontal one."""
        return 0.8, 1.2

    def _updateWidth(self) -> None:  # pyqtgraph override
        super()._updateWidth()
        self._room_for_the_whole_title(vertical=True)

    def _updateHeight(self) -> None:  # pyqtgraph override
        super()._updateHeight()
        self._room_for_the_whole_title(vertical=False)

    def _room_for_the_whole_title(self, vertical: bool) -> None:
        """pyqtgraph reserves 0.8 of the title's height, a guess that holds for one line; a title
        on two or three lines (:func:`set_left_title`) took more than that and ran into the tick
        labels ("(m3.5" in a narrow chart in presentation mode). The title sits
        :data:`TITLE_NUDGE` px past the axis's outer edge, so that much of it needs no room."""
        fixed = self.fixedWidth if vertical else self.fixedHeight
        if not self.isVisible() or fixed is not None or not self.label.isVisible():
            return
        height = self.label.boundingRect().height()
        more = (height - TITLE_NUDGE) - 0.8 * height
        if more > 0:
            extent = (self.maximumWidth() if vertical else self.maximumHeight()) + more
            if vertical:
                self.setMaximumWidth(extent)
                self.setMinimumWidth(extent)
            else:
                self.setMaximumHeight(extent)
                self.setMinimumHeight(extent)

    def tick_font(self) -> QFont:
        font = self.style.get("tickFont")
        return QFont(font) if font is not None else QFont()

    def vertical(self) -> bool:
        return self.orientation in ("left", "right")

    def measure(self) -> tuple[Any, float]:
        """A text's extent along this axis (its width; one line's height on a vertical axis),
        and the gap to keep between two labels."""
        metrics = QFontMetricsF(self.tick_font())
        if self.vertical():
            line = metrics.height()
            return (lambda _text: line), line * self.spacing()[0]
        return metrics.horizontalAdvance, metrics.horizontalAdvance("M") * self.spacing()[1]

    #: The linear values the last tick choice labels (None: every tick pyqtgraph labels), and
    #: all the values it chose (a value outside them, asked for by another caller, keeps its label).
    _linear_labelled: list[float] | None = None
    _linear_ticks: list[float] = []

    def _apart(self, levels: list[Any], low: float, high: float, size: float) -> list[Any]:
        """``levels`` as they are (every tick mark and grid line stays), with the values to label
        noted for :meth:`_only_apart`: those of the coarsest level, every k-th of them when their
        labels would touch (its round multiples when they are as many), and each finer level's
        while its labels stand apart. pyqtgraph labels a level while the labels' summed widths
        leave room on the axis, without looking at their pitch: in a narrow chart at a large font
        (presentation mode on a small screen) the trial numbers ran together, "0 1020"."""
        self._linear_labelled = None
        if high <= low or size <= 0:
            return levels
        measure, gap = self.measure()
        per_unit = size / (high - low)
        labelled: list[float] = []
        for spacing, values in levels:
            if not values:
                continue
            texts = self._plain_texts(list(values), spacing)
            widest = max((measure(text) for text in texts), default=0.0)
            pitch = spacing * per_unit
            if pitch >= widest + gap:
                labelled += [float(v) for v in values]
                continue
            if not labelled and pitch > 0:  # the coarsest level: every k-th, the round multiples if as many
                every = max(2, math.ceil((widest + gap) / pitch))
                multiples = [float(v) for v in values if round(float(v) / spacing) % every == 0]
                stepped = [float(v) for v in values[::every]]
                labelled = multiples if len(multiples) >= len(stepped) else stepped
            break  # (a finer level's labels would touch their neighbours)
        self._linear_labelled = labelled
        self._linear_ticks = [float(v) for _spacing, values in levels for v in values]
        return levels

    def _plain_texts(self, values: list[float], spacing: float) -> list[str]:
        """The labels of one tick level as the axis writes them, before any is left out."""
        return list(pg.AxisItem.tickStrings(self, values, 1.0, spacing))

    def _only_apart(self, values: list[float], texts: list[str]) -> list[str]:
        """``texts`` with those :meth:`_apart` left out blank (all of them kept when it chose none)."""
        shown = self._linear_labelled
        if shown is None:
            return texts

        def among(value: float, these: list[float]) -> bool:
            return any(math.isclose(value, w, rel_tol=1e-9, abs_tol=1e-12 * max(1.0, abs(w))) for w in these)

        return [text if among(float(v), shown) or not among(float(v), self._linear_ticks) else ""
                for v, text in zip(values, texts)]


class CategoryAxis(_MeasuredAxis):
    """Labels at given positions (slot values, axis names, sizes), fitted to the axis at paint
    time: all in full when they fit, else numbers thinned and words shortened with an ellipsis
    (see :func:`workbench.gui.axes.fit_category_labels`). Whenever a label is cut or left out,
    the axis's tool tip lists every label in full."""

    def spacing(self) -> tuple[float, float]:
        return 0.15, 0.6  # a label per row or column needs no more than a sliver between them

    def __init__(self, orientation: str = "bottom", title: str = "", **kwargs: Any) -> None:
        super().__init__(orientation, **kwargs)
        # positions are places, not quantities: pyqtgraph scaled a one-value axis's range (-0.5, 0.5)
        # by 1000 and titled it "KWG (x0.001)" over its value 32
        self.enableAutoSIPrefix(False)
        self._set_overhang()
        self.title = title
        self.categories: list[tuple[float, str]] = []
        self.shown: dict[float, str] = {}  # position -> the text drawn there at the last paint

    def setStyle(self, **kwargs: Any) -> None:  # pyqtgraph override
        super().setStyle(**kwargs)
        if "tickFont" in kwargs:
            self._set_overhang()

    def _set_overhang(self) -> None:
        """A label under either end of a horizontal axis may reach past it by about two
        characters, into the corner beside it, as in most plotting programs; pyqtgraph drops it
        otherwise, which lost the outer values of a narrow slice plot."""
        if not self.vertical():
            self.style["hideOverlappingLabels"] = int(QFontMetricsF(self.tick_font()).horizontalAdvance("MM"))
            self.prepareGeometryChange()

    def overhang(self) -> float:
        value = self.style.get("hideOverlappingLabels")
        return float(value) if not isinstance(value, bool) and isinstance(value, (int, float)) else 0.0

    def boundingRect(self) -> Any:  # pyqtgraph override
        """pyqtgraph widens a horizontal axis's rectangle by the overhang only without a grid; with
        one (every chart's) it gave the grid's rectangle alone, and then left out every label
        reaching past an end, which the fitting had kept."""
        rect = super().boundingRect()
        reach = self.overhang()
        if self.vertical() or not reach:
            return rect
        return rect | self.mapRectFromParent(self.geometry()).adjusted(-reach, 0, reach, 0)

    def set_categories(self, positions: Sequence[float], labels: Sequence[str]) -> None:
        self.categories = [(float(p), str(t)) for p, t in zip(positions, labels)]
        self.shown = {}
        self.picture = None
        self.update()

    def tickValues(self, minVal: float, maxVal: float, size: float) -> list[Any]:  # pyqtgraph override
        low, high = sorted((float(minVal), float(maxVal)))
        inside = [(p, t) for p, t in self.categories if low <= p <= high]
        if not inside or high <= low:
            self.shown = {}
            return [(None, [])]
        scale = float(size) / (high - low)
        if self.vertical():
            positions = [(high - p) * scale for p, _ in inside]
        else:
            positions = [(p - low) * scale for p, _ in inside]
        texts = [t for _, t in inside]
        measure, gap = self.measure()
        numeric = all(is_number_label(t) for t in texts)
        if numeric and self.vertical():
            # figures have no descenders: a column of them needs their height (the font's ascent)
            # apart, not a whole line's; by lines, five sizes in a 125 px matrix lost two labels
            rise = QFontMetricsF(self.tick_font()).ascent()

            def measure(_text: str) -> float:
                return rise

            gap = rise * self.spacing()[0]
        overhang = self.overhang()
        fitted = fit_category_labels(positions, texts, float(size), measure, gap, numeric, overhang=overhang)
        if not self.vertical() and not numeric and _shown_chars(fitted) < sum(len(t) for t in texts):
            # Labels taking turns on two lines have twice the room each: worth one more line when
            # it shows more of them (pyqtgraph makes the axis as tall as its tallest label). Names
            # only: numbers thinned to every other one read as one scale, where numbers taking
            # turns (16 48 80 above 32 64 96) read as two axes from the back of a room.
            staggered = fit_category_labels(positions, texts, float(size), measure, gap, numeric, rows=2,
                                            overhang=overhang)
            if _shown_chars(staggered) > _shown_chars(fitted):
                fitted = staggered
        self.shown = {p: "\n" * row + text if text else "" for (p, _), (text, row) in zip(inside, fitted)}
        cut = [t for t, (f, _) in zip(texts, fitted) if f != t]
        all_names = ", ".join(t for _, t in self.categories)
        tip = f"{self.title}: {all_names}" if self.title else all_names
        self.setToolTip(html.escape(tip) if cut else "")
        return [(None, [p for p, _ in inside])]

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:  # pyqtgraph override
        return [self.shown.get(float(v), "") for v in values]

    def _updateMaxTextSize(self, x: int) -> None:  # pyqtgraph override
        """pyqtgraph sizes a horizontal axis for 0.8 of its labels' height, which cut off the
        bottom of a label on the second line (and an underscore on the first)."""
        super()._updateMaxTextSize(int(math.ceil(x / 0.8)) if not self.vertical() else x)

    def shown_labels(self) -> list[str]:
        """The labels drawn at the last paint, in order along the axis ("" where left out)."""
        return [self.shown.get(p, "").lstrip("\n") for p, _ in self.categories]


def _shown_chars(fitted: Sequence[tuple[str, int]]) -> int:
    return sum(len(text.rstrip("…")) for text, _ in fitted)


def is_number_label(text: str) -> bool:
    """Whether a value's label is a number: thinned, never shortened (a cut number misleads)."""
    try:
        float(text)
    except ValueError:
        return text[:1].isdigit()  # a shortened size (2¹⁰, 64k) counts as a number: thin, not cut
    return True


class ReadableAxis(CategoryAxis):
    """A numeric axis that can show categories too (``set_categories``; an empty list makes it
    numeric again). In log mode it is labelled with plain numbers that fit: decades, 1-2-5 or
    1 to 9 per decade, or round values less than a decade apart (0.05, 0.06, 0.07), as many as
    the axis has room for, with the ticks not labelled as grid lines. No SI prefix: a latency of
    0.02 ms reads 0.02, not 20 with "(x0.001)" beside the title."""


    def __init__(self, orientation: str = "bottom", **kwargs: Any) -> None:
        super().__init__(orientation, **kwargs)
        self.enableAutoSIPrefix(False)
        self.labelled: list[float] = []  # the values labelled at the last paint (for tests and tips)
        #: The categories are the values a numeric quantity can take (a slot's), not names:
        #: where fewer than two of them are in view (zoomed in between them) the axis labels
        #: ordinary numbers, since no label at all would leave the axis unreadable.
        self.values_only = False
        self._by_category = False  # how the last paint labelled the axis
        #: Whole numbers only (trial numbers): a run's first two trials read "0 0.5 1".
        self.integers = False

    def set_categories(self, positions: Sequence[float], labels: Sequence[str], values_only: bool = False) -> None:
        self.values_only = values_only
        super().set_categories(positions, labels)

    def spacing(self) -> tuple[float, float]:
        return super().spacing() if self._by_category else (0.5, 1.2)  # numbers: a pitch of 1.5 lines at least

    def tickValues(self, minVal: float, maxVal: float, size: float) -> list[Any]:  # pyqtgraph override
        low, high = sorted((float(minVal), float(maxVal)))
        self._by_category = bool(self.categories) and (
            not self.values_only or sum(low <= p <= high for p, _ in self.categories) >= 2)
        if self._by_category:
            return super().tickValues(minVal, maxVal, size)
        self.setToolTip("")
        if not self.logMode and self.integers:
            levels = [(spacing, [v for v in values if float(v).is_integer()])
                      for spacing, values in pg.AxisItem.tickValues(self, minVal, maxVal, size) if spacing >= 1]
            if not any(values for _spacing, values in levels):  # a span of a unit or less
                levels = [(1.0, [float(v) for v in range(math.ceil(low), math.floor(high) + 1)])]
            return self._apart(levels, low, high, float(size))
        if not self.logMode:
            return self._apart(pg.AxisItem.tickValues(self, minVal, maxVal, size), low, high, float(size))
        measure, gap = self.measure()
        labelled, minor = choose_log_ticks(low, high, float(size), measure, gap)
        self.labelled = labelled
        return [(None, [math.log10(v) for v in labelled]), (None, [math.log10(v) for v in minor])]

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:  # pyqtgraph override
        if self._by_category:
            return super().tickStrings(values, scale, spacing)
        if not self.logMode:
            return self._only_apart(values, list(pg.AxisItem.tickStrings(self, values, scale, spacing)))
        numbers = [10.0 ** float(v) for v in values]
        labelled = [v for v in numbers if any(math.isclose(v, w, rel_tol=1e-9) for w in self.labelled)]
        texts = dict(zip(labelled, format_ticks(labelled)))
        return [texts.get(v, "") for v in numbers]


class ShareAxis(_MeasuredAxis):
    """An axis of fractions labelled as percentages (0.2 reads 20%), so that it reads like the
    percentages drawn beside the bars it measures; labels that would run together are thinned
    as a numeric axis's are ("10%20%30%" at a large font in a narrow plot)."""

    def __init__(self, orientation: str = "bottom", **kwargs: Any) -> None:
        super().__init__(orientation, **kwargs)
        self.enableAutoSIPrefix(False)

    def tickValues(self, minVal: float, maxVal: float, size: float) -> list[Any]:  # pyqtgraph override
        low, high = sorted((float(minVal), float(maxVal)))
        return self._apart(pg.AxisItem.tickValues(self, minVal, maxVal, size), low, high, float(size))

    def _plain_texts(self, values: list[float], spacing: float) -> list[str]:
        decimals = max(0, -math.floor(math.log10(spacing * 100))) if spacing > 0 else 0
        return [f"{v * 100:.{decimals}f}%" for v in values]

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:  # pyqtgraph override
        return self._only_apart(values, self._plain_texts(values, spacing))


def set_plot_font(plot_item: Any, font: QFont) -> None:
    """Tick labels and axis titles of one plot in ``font`` (the window's zoom sets it on every plot
    it finds; a view that builds plots later gives them its own font, which the zoom sets too)."""
    for name in ("bottom", "left"):
        axis = plot_item.getAxis(name)
        axis.setStyle(tickFont=font)
        axis.label.setFont(font)
        axis.picture = None
        axis.update()
    keep_room_right_of_the_axis(plot_item)
    _fit_left_title(plot_item)
    _fit_title(plot_item, "bottom")


def keep_room_right_of_the_axis(plot_item: Any) -> None:
    """Room to the right of the plot for the overhang its bottom axis lets a label take (see
    :meth:`CategoryAxis.overhang`). Under the left end the left axis's corner gives that room; at
    the right end the plot met the widget's edge, so the last value's label (a slot's 1024) was
    left out where the chart is narrow, a column of points with no value under it."""
    axis = plot_item.getAxis("bottom")
    if not isinstance(axis, CategoryAxis) or plot_item.getAxis("right").isVisible():
        return
    left, top, _right, bottom = plot_item.layout.getContentsMargins()
    plot_item.layout.setContentsMargins(left, top, max(1.0, axis.overhang()), bottom)


def set_left_title(plot_item: Any, title: str) -> None:
    """The left axis's title, kept whole: on two or three lines while one is longer than the axis
    (in the zoom in force, at the plot's height), refitted as the plot is resized. Cut, a short plot in
    presentation mode showed "modelled GFLOP/s (simulate" and "best latency (m"."""
    _set_whole_title(plot_item, "left", title)


def set_bottom_title(plot_item: Any, title: str) -> None:
    """The bottom axis's title, kept whole as :func:`set_left_title` keeps the left one: on more
    lines while one is wider than the plot. A narrow plot in presentation mode showed "share of
    importanc"."""
    _set_whole_title(plot_item, "bottom", title)


def _set_whole_title(plot_item: Any, side: str, title: str) -> None:
    axis = plot_item.getAxis(side)
    axis.whole_title = title
    if not getattr(axis, "fits_title", False):
        axis.fits_title = True
        # (a weak reference: the connection must not keep a closed plot alive)
        plot_item.getViewBox().sigResized.connect(functools.partial(_refit_titles, weakref.ref(plot_item)))
    _fit_title(plot_item, side)


def _refit_titles(plot: "weakref.ref[Any]", *_: Any) -> None:
    plot_item = plot()
    if plot_item is not None:
        try:
            _fit_left_title(plot_item)
            _fit_title(plot_item, "bottom")
        except RuntimeError:  # its Qt side already deleted
            pass


def left_title(plot_item: Any) -> str:
    """The left axis's whole title (as given to :func:`set_left_title`; its label may be on two lines)."""
    axis = plot_item.getAxis("left")
    return str(getattr(axis, "whole_title", axis.labelText))


def _fit_left_title(plot_item: Any) -> None:
    _fit_title(plot_item, "left")


def _fit_title(plot_item: Any, side: str) -> None:
    """Set the ``side`` axis's title on as many lines as its whole title needs at the plot's
    extent along that axis (its height for the left axis, its width for the bottom one)."""
    axis = plot_item.getAxis(side)
    title = getattr(axis, "whole_title", None)
    if title is None:
        return
    metrics = QFontMetricsF(axis.label.font())
    view = plot_item.getViewBox()
    extent = view.height() if side == "left" else view.width()
    room = extent - 2 * axis.label.document().documentMargin()
    lines = title_lines(title, room, metrics.horizontalAdvance)
    shown = "<br>".join(html.escape(line, quote=False) for line in lines)
    if shown != axis.labelText:
        axis.setLabel(shown)
        # pyqtgraph places the title only when the axis is resized: a longer title given to an
        # axis of the same size (the y chooser's figure at a run's end) kept the place of the
        # shorter one, centred too high, and its start was cut off ("on-chip per block (K")
        axis.resizeEvent(None)


def bar_figures_extent(values: Sequence[float], texts: Sequence[str], font: QFont, plot_width_px: float,
                       least: float) -> float:
    """The end of a bar chart's value axis (from 0) at which each bar's figure, drawn after the
    bar's end in ``font``, still fits the plot ``plot_width_px`` wide; at least ``least``. A fixed
    margin (1.2x or 1.3x of the longest bar) let presentation mode's larger figures run past the
    plot's edge ("61" without its "%")."""
    metrics = QFontMetricsF(font)
    needed = [least]
    for value, text in zip(values, texts):
        share = (metrics.horizontalAdvance(text) + 8) / plot_width_px if plot_width_px > 0 else 1.0
        needed.append(value / (1.0 - share) if share < 0.75 else value * 4.0)
    return max(needed)
