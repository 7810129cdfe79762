"""Which PNG pictures are this program's own screenshots, so ``gui --screenshot`` replaces only those.

A picture the window saves carries a PNG text chunk (``Software``: :data:`SCREENSHOT_MARK` and the
SHA-256 of every other byte of the file). An existing file is replaced without ``--force`` only
when it carries that mark and the rest of it still has that hash: a person's own picture named
like the screenshot (``photo.png``) was replaced silently, with no copy kept, when any PNG
signature was taken for one of ours; and a screenshot someone drew on, annotated (a text chunk
of their own) or appended to since is theirs. (Pictures sealed before the whole file counted
carry the hash of their image data alone, ``sha256:``; they count as ours while nothing follows
their end.)
"""

from __future__ import annotations

import hashlib
import os
import struct
import zlib

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: The start of the ``Software`` text of every screenshot the window saves.
SCREENSHOT_MARK = "Kernel Tuning Workbench screenshot"
#: The largest picture looked into: larger is not one of ours (a window grab is a few MB at most).
_MAX_BYTES = 64 * 1024 * 1024


def _chunks(data: bytes) -> list[tuple[bytes, bytes, int]]:
    """(type, data, offset) of each chunk of a PNG file; ValueError when it is not one."""
    if not data.startswith(PNG_SIGNATURE):
        raise ValueError("not a PNG file")
    found, at = [], len(PNG_SIGNATURE)
    while at + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if len(body) < length:
            raise ValueError("a chunk is cut short")
        found.append((kind, body, at))
        at += 12 + length  # length, type, data, CRC
        if kind == b"IEND":
            break
    return found


def _image_hash(chunks: list[tuple[bytes, bytes, int]]) -> str:
    return hashlib.sha256(b"".join(body for kind, body, _at in chunks if kind == b"IDAT")).hexdigest()


def seal(data: bytes) -> bytes:
    """``data`` (a PNG file the window wrote) with the mark chunk, carrying the hash of ``data``,
    placed before the first image data chunk."""
    chunks = _chunks(data)
    text = b"Software\0" + f"{SCREENSHOT_MARK} sha256-file:{hashlib.sha256(data).hexdigest()}".encode("latin-1")
    chunk = struct.pack(">I", len(text)) + b"tEXt" + text + struct.pack(">I", zlib.crc32(b"tEXt" + text))
    first = next((at for kind, _body, at in chunks if kind == b"IDAT"), None)
    if first is None:
        raise ValueError("a PNG file without image data")
    return data[:first] + chunk + data[first:]


def is_own_screenshot(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a PNG picture the window saved and nobody changed since: it carries the
    mark, and its image data has the hash the mark records."""
    try:
        if os.path.getsize(path) > _MAX_BYTES:
            return False
        with open(path, "rb") as handle:
            data = handle.read(_MAX_BYTES + 1)
        chunks = _chunks(data)
    except (OSError, ValueError, struct.error):
        return False
    for kind, body, at in chunks:
        key, _, text = body.partition(b"\0")
        if kind != b"tEXt" or key != b"Software":
            continue
        rest = data[:at] + data[at + 12 + len(body):]  # the file as it was before the mark went in
        if text == f"{SCREENSHOT_MARK} sha256-file:{hashlib.sha256(rest).hexdigest()}".encode("latin-1"):
            return True
        end = chunks[-1][2] + 12 + len(chunks[-1][1])
        if (chunks[-1][0] == b"IEND" and end == len(data)
                and text == f"{SCREENSHOT_MARK} sha256:{_image_hash(chunks)}".encode("latin-1")):
            return True
    return False
