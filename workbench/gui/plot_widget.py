"""The charts' plot widget: pyqtgraph's, left out of the keyboard's Tab order."""

from __future__ import annotations

from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import Qt


def plot_widget(**kwargs: Any) -> pg.PlotWidget:
    """A ``pg.PlotWidget`` that Tab passes over: pyqtgraph makes every plot a Tab stop, which
    draws no focus frame and answers no key, so a keyboard user met several invisible stops per
    tab between the controls that do something. What a chart offers is reachable otherwise (its
    point selects a row of the results table; *Export chart* is in the File menu)."""
    widget = pg.PlotWidget(**kwargs)
    widget.setFocusPolicy(Qt.FocusPolicy.NoFocus)
    return widget
