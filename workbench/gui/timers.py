"""A single-shot timer made in one call: the views that redraw, re-sort or re-check a moment after
what changes them (a slider dragged, a run's trials, a key typed) each built one in four lines."""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QObject, QTimer


def single_shot(parent: QObject, interval_ms: int | None, slot: Callable[[], object]) -> QTimer:
    """A timer owned by ``parent`` that calls ``slot`` once, ``interval_ms`` after it is started
    (None: the interval is given at each start). Started again while it runs it is pushed back;
    a caller that must not be pushed back (a refresh due while changes keep coming) starts it
    only when it is not active."""
    timer = QTimer(parent)
    timer.setSingleShot(True)
    if interval_ms is not None:
        timer.setInterval(interval_ms)
    timer.timeout.connect(slot)
    return timer
