"""A chart as a picture that stands on its own: title, legend, the plot, and where the numbers come from.

A slide or a report shows the exported file without the window around it, so the file carries what
the window shows beside the plot: the chart's title, the names and colours of its series, and the
SIMULATED / REPLAY label when the timings were not measured live. PNG and SVG are painted by the
same function, so both carry the same things.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QRect, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QImage, QPainter, QTextDocument

from workbench.core.errors import WorkbenchError, write_error
from workbench.core.fs import atomic_write_bytes

MARGIN = 12
TITLE_PT = 13
LEGEND_PT = 9
BADGE_COLOURS = {"SIMULATED": "#f0c000", "REPLAY": "#56b4e9", "RECORDED": "#56b4e9"}
#: Room left and right of the label's text inside its box; the smallest font it takes to stay one
#: line, and the smallest it shrinks to at all.
BADGE_PAD = 6
ONE_LINE_PT = 8.0
MIN_BADGE_PT = 5.0


@dataclass(frozen=True)
class PaintedChart:
    """Where :func:`paint_chart` put the label, so a caller (a test) can check it is all inside."""

    #: The label's coloured box, and the rectangle its text takes; None without a label.
    badge_box: QRect | None
    badge_text: QRect | None


def paint_chart(painter: QPainter, chart: Any, size: QSize, badge: str | None) -> PaintedChart:
    """Paint title, badge, legend and plot of ``chart`` into a ``size`` area of ``painter``."""
    width, height = size.width(), size.height()
    painter.fillRect(QRect(0, 0, width, height), QColor("white"))
    title_font = QFont(painter.font())
    title_font.setPointSize(TITLE_PT)
    title_font.setBold(True)
    painter.setFont(title_font)
    painter.setPen(QColor("black"))
    flags = int(Qt.AlignmentFlag.AlignLeft) | int(Qt.TextFlag.TextWordWrap)
    area = QRect(MARGIN, MARGIN, width - 2 * MARGIN, height)
    title_height = painter.boundingRect(area, flags, chart.export_title()).height() + 4
    painter.drawText(QRect(MARGIN, MARGIN, width - 2 * MARGIN, title_height), flags, chart.export_title())
    top = MARGIN + title_height
    badge_box: QRect | None = None
    badge_text: QRect | None = None
    if badge:  # its own line under the title: on a narrow chart it would cover the title
        badge_box, badge_text = _paint_badge(painter, badge, QRect(MARGIN, top + 2, width - 2 * MARGIN, height))
        top = badge_box.bottom() + 1 + 4
    legend = QTextDocument()
    legend_font = QFont(painter.font())
    legend_font.setPointSize(LEGEND_PT)
    legend_font.setBold(False)
    legend.setDefaultFont(legend_font)
    legend.setHtml(chart.legend.text())
    legend.setTextWidth(width - 2 * MARGIN)
    top += 2
    painter.save()
    painter.translate(MARGIN, top)
    legend.drawContents(painter)
    painter.restore()
    top += int(legend.size().height()) + 4
    target = QRectF(0, top, width, height - top)
    wanted = QSize(int(target.width()), int(target.height()))
    shown = chart.plot.size()
    if wanted != shown:
        # drawn at the picture's size, not the pane's stretched to it: a Compare pane of 312 x 352
        # pixels went out as 900 x 520 with its tick labels and axis titles stretched sideways
        chart.plot.resize(wanted)
        _settle(chart)
    # (a chart of a tab not shown keeps the layout of its pane's size whatever its widget's size
    # says, Qt laying out a hidden widget only once shown: that layout is stretched to the picture
    # as before, rather than drawn small in a blank one)
    laid_out = chart.plot.getPlotItem().size()
    if abs(laid_out.width() - wanted.width()) <= 2 and abs(laid_out.height() - wanted.height()) <= 2:
        source, mode = QRectF(0, 0, wanted.width(), wanted.height()), Qt.AspectRatioMode.KeepAspectRatio
    else:
        source, mode = QRectF(0, 0, laid_out.width(), laid_out.height()), Qt.AspectRatioMode.IgnoreAspectRatio
    try:
        chart.plot.render(painter, target, source.toRect(), mode)
    finally:
        if chart.plot.size() != shown:
            chart.plot.resize(shown)
    return PaintedChart(badge_box, badge_text)


def _paint_badge(painter: QPainter, badge: str, room: QRect) -> tuple[QRect, QRect]:
    """The SIMULATED / REPLAY label at the top left of ``room``, as wide as its text but never wider
    than ``room``: it is the one thing that must survive export, so no part of it may run past the
    picture's edge. It stays one line while a slightly smaller font (down to ``ONE_LINE_PT``) fits
    (an SVG keeps it as one searchable string), else wraps onto more lines at its own size, and a
    word longer than the line (a very narrow picture) makes the font smaller still. Returns the
    box and the rectangle its text takes."""
    inner = max(room.width() - 2 * BADGE_PAD, 1)
    one_line = int(Qt.AlignmentFlag.AlignLeft)
    needed = (_fitted(painter, badge, QRect(0, 0, inner, room.height()), one_line, ONE_LINE_PT)
              or _fitted(painter, badge, QRect(0, 0, inner, room.height()), one_line | int(Qt.TextFlag.TextWordWrap),
                         MIN_BADGE_PT, last_anyway=True))
    assert needed is not None  # last_anyway: the smallest size is taken whether it fits or not
    box = QRect(room.left(), room.top(), min(needed.width(), inner) + 2 * BADGE_PAD, needed.height() + 4)
    colour = next((c for key, c in BADGE_COLOURS.items() if badge.startswith(key)), "#dddddd")
    painter.fillRect(box, QColor(colour))
    text_area = box.adjusted(BADGE_PAD, 2, -BADGE_PAD, -2)
    flags = int(Qt.AlignmentFlag.AlignCenter) | int(Qt.TextFlag.TextWordWrap)
    drawn = painter.boundingRect(text_area, flags, badge)
    painter.drawText(text_area, flags, badge)
    return box, drawn


def _fitted(painter: QPainter, text: str, room: QRect, flags: int, smallest: float,
            last_anyway: bool = False) -> QRect | None:
    """The rectangle ``text`` takes drawn with ``flags`` in the largest font size from the badge's
    own down to ``smallest`` at which it is no wider than ``room`` (the painter keeps that font);
    None when none is, unless ``last_anyway``: then the smallest size's."""
    font = QFont(painter.font())
    needed = None
    for size in _steps(LEGEND_PT + 1, smallest):
        font.setPointSizeF(size)
        painter.setFont(font)
        needed = painter.boundingRect(room, flags, text)
        if needed.width() <= room.width():
            return needed
    return needed if last_anyway else None


def _steps(largest: float, smallest: float) -> list[float]:
    """Font sizes from ``largest`` down to ``smallest`` in half points."""
    return [largest - 0.5 * k for k in range(int((largest - smallest) * 2) + 1)]


def _settle(chart: Any) -> None:
    """Lay the chart's axes out for its figures before it is painted for the file. pyqtgraph sizes
    an axis for its tick labels while painting it and drops a label that does not fit; a chart
    never shown (a tab not opened yet) kept its first axis sizes, so the export of the roofline had
    no GFLOP/s figures at all and its x-axis title over the ticks. Painting it once unseen lets the
    axes ask for their room, which the layout then gives."""
    from PySide6.QtWidgets import QApplication

    for _ in range(2):  # a wider axis narrows the plot, which can change the ticks once more
        scratch = QImage(max(chart.plot.width(), 1), max(chart.plot.height(), 1), QImage.Format.Format_RGB32)
        painter = QPainter(scratch)
        chart.plot.render(painter)
        painter.end()
        QApplication.processEvents()


def export_chart(chart: Any, path: str, badge: str | None = None, scale: float = 2.0) -> None:
    """Write ``chart`` as PNG or SVG (by the suffix); raises WorkbenchError when it cannot."""
    chart.refresh()
    _settle(chart)
    least_width, least_height = getattr(chart, "export_min_size", (320, 200))
    plot_width, plot_height = max(chart.plot.width(), least_width), max(chart.plot.height(), least_height)
    size = QSize(plot_width, plot_height + 130)  # room above the plot for the title and the legend
    # encoded in memory, then written whole: Qt saving to the path wrote over the file there in
    # place, so a full disk left a cut-off picture, and libpng printed its own error line
    encoded = QByteArray()
    buffer = QBuffer(encoded)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    if path.lower().endswith(".svg"):
        # Qt's own SVG painter: pyqtgraph's SVGExporter cannot parse the paths Qt 6.12 writes.
        from PySide6.QtSvg import QSvgGenerator  # only for SVG

        generator = QSvgGenerator()
        generator.setOutputDevice(buffer)
        generator.setSize(size)
        generator.setViewBox(QRect(0, 0, size.width(), size.height()))
        generator.setTitle(chart.export_title())
        painter = QPainter(generator)
        paint_chart(painter, chart, size, badge)
        painter.end()
    else:
        image = QImage(int(size.width() * scale), int(size.height() * scale), QImage.Format.Format_RGB32)
        image.fill(QColor("white"))
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setRenderHint(QPainter.RenderHint.TextAntialiasing)
        painter.scale(scale, scale)
        paint_chart(painter, chart, size, badge)
        painter.end()
        kind = Path(path).suffix.lstrip(".").upper() or "PNG"  # by the suffix, as Qt's own save chose
        if not image.save(buffer, kind):  # type: ignore[call-overload]  # (PySide6 takes str; its stub says bytes)
            raise WorkbenchError(f"{path}: could not encode the image as {kind}")
    buffer.close()
    try:
        atomic_write_bytes(Path(path), bytes(encoded.data()))
    except OSError as exc:
        raise write_error(f"{path}: could not write the image ({exc.strerror or exc})", exc) from None
