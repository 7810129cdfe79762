"""A scatter item for many points of one style: setData is NumPy only, paint is one Qt call.

pyqtgraph's ScatterPlotItem keeps a per-point style record and looks every point up in its symbol
atlas on each ``setData`` (a Python loop: ~40 ms for 20,000 points), which alone breaks the 16 ms
refresh budget. Every series in our charts has a single style (feasible, infeasible, failed...), so
this item renders its symbol once and draws all points with ``QPainter.drawPixmapFragments`` -- the
same primitive pyqtgraph uses, without the per-point bookkeeping. It supports what the charts need:
``data=`` ids per point, click (``sigClicked(item, points, event)``) and hover tool tips, legends,
auto-range, and export (PNG through pyqtgraph's exporter, SVG through Qt's painter).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pyqtgraph as pg
from pyqtgraph.graphicsItems.ScatterPlotItem import renderSymbol
from pyqtgraph.Qt.internals import PrimitiveArray
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QPainter, QPixmap

from workbench.gui.text import plain_tip

HIT_SLOP_PX = 2.0


#: Visible points up to which markers are drawn opaque; beyond, each is fainter, so where points
#: pile up reads darker than where they are sparse (an 18,000-trial session drew an opaque wall).
CROWD = 1500
#: The faintest a marker gets, however many are visible: one alone must still be seen.
MIN_CROWD_OPACITY = 0.2


def crowd_opacity(visible: int) -> float:
    """The opacity of each of ``visible`` markers: 1 up to :data:`CROWD`, then falling with the
    square root of the count (twice the overlap, darker by the same factor), down to
    :data:`MIN_CROWD_OPACITY`. Zooming in shows fewer points, each more opaque again."""
    if visible <= CROWD:
        return 1.0
    return max(MIN_CROWD_OPACITY, math.sqrt(CROWD / visible))


def _inside(points: np.ndarray, rect: Any, pad: float) -> np.ndarray:
    """Which of ``points`` (device pixels, 2 x n) lie within ``rect`` widened by ``pad`` on each side."""
    return ((points[0] > rect.left() - pad) & (points[0] < rect.right() + pad)
            & (points[1] > rect.top() - pad) & (points[1] < rect.bottom() + pad))


class PointRef:
    """One point as a click or ``points()`` reports it (the subset of pyqtgraph's SpotItem we use)."""

    __slots__ = ("_x", "_y", "_data")

    def __init__(self, x: float, y: float, data: Any) -> None:
        self._x, self._y, self._data = x, y, data

    def data(self) -> Any:
        return self._data

    def pos(self) -> QPointF:
        return QPointF(self._x, self._y)


class FastScatter(pg.GraphicsObject):
    """Points of one symbol/size/pen/brush. ``data`` holds the id of each point (trial index)."""

    sigClicked = Signal(object, object, object)

    def __init__(self, symbol: str = "o", size: float = 6, pen: Any = None, brush: Any = None,
                 tip: Callable[..., str] | None = None, marker: bool = False) -> None:
        """``marker``: the item marks points another item draws (a selection), is added to its plot
        with ``ignoreBounds=True``, and its ``setData`` does not tell the view its bounds changed:
        that repaints the whole plot, 18,000 points and the grid, for a ring that moved."""
        super().__init__()
        self._marker = marker
        pen = pg.mkPen(pen) if pen is not None else pg.mkPen(None)
        brush = pg.mkBrush(brush) if brush is not None else pg.mkBrush(None)
        # ``opts`` lets pyqtgraph's LegendItem draw a sample of this series.
        self.opts = {"symbol": symbol, "size": size, "pen": pen, "brush": brush, "antialias": False, "pxMode": True}
        self._base_size = float(size)
        self._render_symbol()
        self._fragments = PrimitiveArray(QPainter.PixmapFragment, 10)
        self._tip = tip
        self.xs = np.empty(0)  # not ``x``/``y``: QGraphicsItem.x() is a method
        self.ys = np.empty(0)
        self.data = np.empty(0, dtype=np.int64)
        self._bounds: tuple[tuple[float, float], tuple[float, float]] | None = None
        self.drawn_opacity = 1.0
        self.setAcceptHoverEvents(tip is not None)
        # paint() is told the exposed rectangle (otherwise it gets the whole item's)
        self.setFlag(self.GraphicsItemFlag.ItemUsesExtendedStyleOption)

    def _render_symbol(self) -> None:
        opts = self.opts
        image = renderSymbol(opts["symbol"], opts["size"], opts["pen"], opts["brush"])
        self._pixmap = QPixmap.fromImage(image)
        self._faded: dict[float, QPixmap] = {}
        self._side = image.width()

    def set_scale(self, factor: float) -> None:
        """Draw the symbol ``factor`` times its designed size (presentation mode)."""
        size = self._base_size * factor
        if size == self.opts["size"]:
            return
        self.prepareGeometryChange()
        self.opts["size"] = size
        self._render_symbol()
        self.update()

    # --- data ----------------------------------------------------------------------------------
    def setData(self, x: Any = None, y: Any = None, data: Any = None, **_: Any) -> None:  # pyqtgraph API
        """Replace every point. Non-finite coordinates are dropped (with their ids)."""
        x = np.asarray(x if x is not None else (), dtype=float)
        y = np.asarray(y if y is not None else (), dtype=float)
        ids = np.asarray(data, dtype=np.int64) if data is not None else np.arange(len(x), dtype=np.int64)
        keep = np.isfinite(x) & np.isfinite(y)
        if not keep.all():
            x, y, ids = x[keep], y[keep], ids[keep]
        self.prepareGeometryChange()
        self.xs, self.ys, self.data = x, y, ids
        self._bounds = ((float(x.min()), float(x.max())), (float(y.min()), float(y.max()))) if len(x) else None
        if not self._marker:
            self.informViewBoundsChanged()
        self.update()

    def points(self) -> list[PointRef]:
        return [PointRef(float(a), float(b), int(d)) for a, b, d in zip(self.xs, self.ys, self.data)]

    def __len__(self) -> int:
        return len(self.xs)

    # --- geometry ------------------------------------------------------------------------------
    def dataBounds(self, ax: int, frac: float = 1.0, orthoRange: Any = None) -> tuple[float | None, float | None]:
        if self._bounds is None:
            return (None, None)
        return self._bounds[ax]

    def pixelPadding(self) -> float:
        return self._side * 0.7072

    def boundingRect(self) -> QRectF:
        if self._bounds is None:
            return QRectF()
        (x0, x1), (y0, y1) = self._bounds
        px, py = self.pixelVectors()
        pad_x = (px.length() if px is not None else 0.0) * self._side
        pad_y = (py.length() if py is not None else 0.0) * self._side
        if not (math.isfinite(pad_x) and math.isfinite(pad_y)):
            pad_x = pad_y = 0.0
        return QRectF(x0 - pad_x, y0 - pad_y, (x1 - x0) + 2 * pad_x, (y1 - y0) + 2 * pad_y)

    def _device_points(self, transform: Any) -> np.ndarray:
        """Points in device pixels under an affine transform (2 x n)."""
        m = transform
        dx = m.m11() * self.xs + m.m21() * self.ys + m.m31()
        dy = m.m12() * self.xs + m.m22() * self.ys + m.m32()
        return np.clip(np.vstack([dx, dy]), -(2**30), 2**30)

    # --- painting ------------------------------------------------------------------------------
    def paint(self, painter: QPainter, option: Any = None, *_: Any) -> None:
        n = len(self.xs)
        if n == 0:
            return
        transform = painter.transform()
        pts = self._device_points(transform)
        pad = self._side
        # What the plot shows (its view range, not the painter's device, which can be the whole window)
        # sets the crowd; what was exposed sets the points handed to Qt: a selection's ring moving
        # repaints a few pixels, and 20,000 clipped fragments cost milliseconds a paint all the same.
        shown = self.viewRect()
        visible = _inside(pts, transform.mapRect(shown) if shown is not None else painter.viewport(), pad)
        opacity = crowd_opacity(int(np.count_nonzero(visible)))
        exposed = getattr(option, "exposedRect", None)
        if exposed is not None and not exposed.isEmpty():
            visible &= _inside(pts, transform.mapRect(exposed), pad)
        painter.resetTransform()
        xy = pts[:, visible].T
        if not len(xy):
            return
        self._fragments.resize(len(xy))
        frags = self._fragments.ndarray()
        frags[:, 0:2] = xy
        frags[:, 2:6] = (0.0, 0.0, float(self._side), float(self._side))
        frags[:, 6:10] = (1.0, 1.0, 0.0, 1.0)
        # The (array pointer, count) overload PySide6 has at run time; its stubs list only the
        # sequence one, so the call goes through an untyped name.
        draw_fragments: Any = painter.drawPixmapFragments
        draw_fragments(*self._fragments.drawargs(), self._symbol_at(opacity))

    def _symbol_at(self, opacity: float) -> QPixmap:
        """The symbol with ``opacity`` baked into its pixels, in steps of 1/32 (kept per step): an
        opacity per fragment has Qt change its painter state for each point, about twice the time
        of drawing 20,000 points of a pixmap as it is. The last one drawn is :attr:`drawn_opacity`."""
        step = round(opacity * 32) / 32
        self.drawn_opacity = step
        if step >= 1.0:
            return self._pixmap
        faded = self._faded.get(step)
        if faded is None:
            faded = QPixmap(self._pixmap.size())
            faded.setDevicePixelRatio(self._pixmap.devicePixelRatio())
            faded.fill(Qt.GlobalColor.transparent)
            painter = QPainter(faded)
            painter.setOpacity(step)
            painter.drawPixmap(0, 0, self._pixmap)
            painter.end()
            self._faded[step] = faded
        return faded

    # --- interaction ---------------------------------------------------------------------------
    def _nearest(self, scene_pos: QPointF) -> int | None:
        """Index (into x/y/data) of the point under a scene position, or None."""
        if not len(self.xs) or self.scene() is None:
            return None
        view = self.getViewWidget()
        transform = self.deviceTransform(view.viewportTransform()) if view is not None else self.sceneTransform()
        if transform is None:
            return None
        pts = self._device_points(transform)
        target = view.mapFromScene(scene_pos) if view is not None else scene_pos
        d2 = (pts[0] - target.x()) ** 2 + (pts[1] - target.y()) ** 2
        k = int(np.argmin(d2))
        radius = self.opts["size"] / 2 + HIT_SLOP_PX
        return k if d2[k] <= radius * radius else None

    def mouseClickEvent(self, ev: Any) -> None:  # pyqtgraph API
        if ev.button() != pg.QtCore.Qt.MouseButton.LeftButton:
            ev.ignore()
            return
        k = self._nearest(ev.scenePos())
        if k is None:
            ev.ignore()
            return
        ev.accept()
        self.sigClicked.emit(self, [PointRef(float(self.xs[k]), float(self.ys[k]), int(self.data[k]))], ev)

    def hoverEvent(self, ev: Any) -> None:  # pyqtgraph API
        if self._tip is None:
            return
        if ev.isExit():
            self.setToolTip("")
            return
        k = self._nearest(ev.scenePos())
        self.setToolTip(plain_tip(self._tip(x=float(self.xs[k]), y=float(self.ys[k]), data=int(self.data[k]))) if k is not None else "")
