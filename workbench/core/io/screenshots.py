"""Which PNG pictures are this program's own screenshots, so ``gui --screenshot`` replaces only those.

A picture the window saves carries a PNG text chunk (``Software``, :data:`SCREENSHOT_MARK`). An
existing file is replaced without ``--force`` only when it carries that mark: a person's own
picture that happens to be named like the screenshot (``photo.png``) was replaced silently, with
no copy kept, because any PNG signature was taken for one of ours.
"""

from __future__ import annotations

import os
import struct

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: The ``Software`` text of every screenshot the window saves.
SCREENSHOT_MARK = "Kernel Tuning Workbench screenshot"
#: How far into a file the mark is looked for: the text chunks Qt writes precede the image data.
_HEAD_BYTES = 64 * 1024


def is_own_screenshot(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a PNG picture carrying :data:`SCREENSHOT_MARK` before its image data."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(_HEAD_BYTES)
    except OSError:
        return False
    if not head.startswith(PNG_SIGNATURE):
        return False
    at = len(PNG_SIGNATURE)
    while at + 8 <= len(head):
        length, kind = struct.unpack(">I4s", head[at:at + 8])
        data = head[at + 8:at + 8 + length]
        if kind in (b"IDAT", b"IEND") or len(data) < length:
            return False
        if kind == b"tEXt":
            key, _, text = data.partition(b"\0")
            if key == b"Software" and text == SCREENSHOT_MARK.encode("latin-1"):
                return True
        at += 12 + length  # length, type, data, CRC
    return False
