"""A small PNG file of a huge image, written chunk by chunk: nothing here ever holds its pixels."""

from __future__ import annotations

import struct
import zlib

__all__ = ["HUGE_SIDE", "huge_png"]

HUGE_SIDE = 13_370
"""The issue's side: 13370 x 13370 pixels, just under Pillow's own refusal (2 x 89.5 Mpx), so
Pillow alone only warns and decodes it."""


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def huge_png(side: int = HUGE_SIDE) -> bytes:
    """A ``side`` x ``side`` black greyscale PNG (well under 1 MB on disk), compressed one row
    at a time so that the pixels are never in memory."""
    row = bytes(side + 1)  # filter type 0 and ``side`` black pixels
    deflate = zlib.compressobj(9)
    parts = [deflate.compress(row) for _ in range(side)]
    parts.append(deflate.flush())
    header = struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0)
    return b"".join(
        (
            b"\x89PNG\r\n\x1a\n",
            _chunk(b"IHDR", header),
            _chunk(b"IDAT", b"".join(parts)),
            _chunk(b"IEND", b""),
        )
    )
