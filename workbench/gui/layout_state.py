"""Checks of the window's layout as stored in its settings, before Qt is given it.

Qt restores a splitter's layout from the bytes of ``QSplitter.saveState`` without bounds: a
settings file whose splitter handle was 100,000 pixels wide crashed the window at every start
(SIGSEGV), and no message could say why. The settings file is the window's own, but it is a file
on disk, so what it holds is checked here as any other file's content is.
"""

from __future__ import annotations

import struct

#: ``QSplitter``'s marker at the start of its saved state.
SPLITTER_MAGIC = 0xFF
#: Largest pane a stored layout may give (pixels): wider than any screen.
MAX_PANE_PX = 1 << 16
#: Widest splitter handle a stored layout may give (pixels); Qt's styles use a few.
MAX_HANDLE_PX = 64


def splitter_state_ok(blob: bytes, panes: int) -> bool:
    """Whether ``blob`` is a ``QSplitter.saveState`` of a splitter with ``panes`` panes whose sizes
    and handle width are in range (Qt 5/6 layout: magic, version, the sizes as a list of int32,
    children-collapsible, handle width, opaque-resize, orientation; big-endian)."""
    try:
        magic, _version, count = struct.unpack_from(">iii", blob, 0)
        if magic != SPLITTER_MAGIC or count != panes:
            return False
        sizes = struct.unpack_from(f">{count}i", blob, 12)
        offset = 12 + 4 * count
        (handle,) = struct.unpack_from(">i", blob, offset + 1)  # after children-collapsible (one byte)
        (orientation,) = struct.unpack_from(">i", blob, offset + 6)  # after opaque-resize (one byte)
    except struct.error:
        return False
    # (-1 is Qt's own "not laid out yet", as a splitter never shown saves its sizes and handle)
    return (all(-1 <= size <= MAX_PANE_PX for size in sizes) and -1 <= handle <= MAX_HANDLE_PX
            and orientation in (1, 2))


def with_pane_size(blob: bytes, pane: int, size: int) -> bytes:
    """``blob`` (a valid :func:`splitter_state_ok` state) with pane ``pane`` at ``size`` pixels: the
    window saves its left column at its unzoomed width when only the zoom widened it, so the next
    start, at whatever zoom, does not take the zoom's width for the person's."""
    return blob[:12 + 4 * pane] + struct.pack(">i", size) + blob[12 + 4 * (pane + 1):]
