"""Screenshots as base64 PNG text, both ways, with the latest images kept.

Decoding a 1280x800 screenshot costs about as much as taking it. The computer tool encodes
a screenshot after every action, and a replay reads that screenshot back to check the
action's effect: an image encoded with ``keep=True`` is remembered with its text, so reading
that text back returns the image itself, with no decoding. The last :data:`KEPT` images,
encoded or decoded, are remembered; PNG is lossless, so the image is the one decoding would
give.

Encoding is the costly part of a screenshot the model is shown (Pillow's PNG encoder, at its
fastest level, spends 10 ms on a 1280x800 form, most of it choosing a filter for each row).
Screenshots in RGB, RGBA or greyscale are written here instead: every row filtered with PNG's
*up* filter (the difference from the row above: flat areas and repeated rows, what screens
are made of, become runs of zeros), deflated by zlib-ng when it is installed (the
``zlib-ng`` package, in askcache's ``desktop`` extra: 2 ms for that form, and a smaller
file) or by Python's zlib (5 ms). Any other mode goes through Pillow. Every PNG decoder reads
the result.

Every image askcache decodes from outside (a screenshot in a tool result or a message
history, a file given to the ``askcache`` command) goes through :func:`open_image`: a PNG or
JPEG whose header declares more than :data:`askcache.foundation.limits.MAX_IMAGE_PIXELS` pixels is
refused before a pixel is decoded, with one line naming it (Pillow's own limit is more than
twice as large and only warns below four times it).
"""

from __future__ import annotations

import base64
import io
import struct
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable

import numpy as np
from PIL import Image, ImageFile, JpegImagePlugin, PngImagePlugin

from askcache.foundation.errors import InvalidScreenshotError, ScreenshotTooLargeError
from askcache.foundation.limits import MAX_IMAGE_PIXELS

__all__ = ["KEPT", "decode_png", "encode_png", "forget_images", "open_image", "png_bytes"]

KEPT = 8
"""Images remembered with their text (a 1280x800 screen: 3 MiB each)."""

_images: OrderedDict[str, Image.Image] = OrderedDict()
_lock = threading.Lock()


def _keep(data: str, image: Image.Image) -> None:
    with _lock:
        _images[data] = image
        _images.move_to_end(data)
        while len(_images) > KEPT:
            _images.popitem(last=False)


def _deflater() -> tuple[Callable[[bytes, int], bytes], int]:
    """zlib-ng's ``compress`` and the level it is used at, else Python's zlib's."""
    try:
        from zlib_ng import zlib_ng
    except ImportError:
        return zlib.compress, 1
    return zlib_ng.compress, 2  # level 2: as fast as its level 1 on screens, and far smaller


_DEFLATE, _LEVEL = _deflater()

_COLOUR_TYPES = {"L": (0, 1), "RGB": (2, 3), "RGBA": (6, 4)}
"""PNG colour type and bytes per pixel of the modes written here."""

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_UP = 2
"""PNG's filter type *up*: each byte less the one above it."""


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png_bytes(image: Image.Image) -> bytes:
    """``image`` as a PNG file (see the module docstring: the up filter and zlib-ng where
    possible, Pillow otherwise)."""
    found = _COLOUR_TYPES.get(image.mode)
    if found is None or image.width == 0 or image.height == 0:
        buffer = io.BytesIO()
        image.save(buffer, format="PNG", compress_level=1)
        return buffer.getvalue()
    colour_type, depth = found
    width, height = image.size
    pixels = np.frombuffer(image.tobytes(), np.uint8).reshape(height, width * depth)
    rows = np.empty((height, width * depth + 1), np.uint8)
    rows[:, 0] = _UP
    rows[0, 0] = 0  # the first row has none above it: no filter
    rows[0, 1:] = pixels[0]
    np.subtract(pixels[1:], pixels[:-1], out=rows[1:, 1:])  # wraps around mod 256, as PNG's
    header = struct.pack(">IIBBBBB", width, height, 8, colour_type, 0, 0, 0)
    return b"".join(
        (
            _SIGNATURE,
            _chunk(b"IHDR", header),
            _chunk(b"IDAT", _DEFLATE(rows.tobytes(), _LEVEL)),
            _chunk(b"IEND", b""),
        )
    )


def encode_png(image: Image.Image, *, keep: bool = False) -> str:
    """Base64 text of ``image`` as PNG (:func:`png_bytes`: fast, since a screenshot is
    taken after every action and the model's tokens depend on its pixels, not its bytes).
    ``keep``: remember ``image`` for :func:`decode_png` of the text (the caller must not
    draw on it afterwards)."""
    data = base64.b64encode(png_bytes(image)).decode("ascii")
    if keep:
        _keep(data, image)
    return data


_READERS: tuple[tuple[bytes, type[ImageFile.ImageFile]], ...] = (
    (_SIGNATURE, PngImagePlugin.PngImageFile),
    (b"\xff\xd8\xff", JpegImagePlugin.JpegImageFile),
)
"""The formats read from outside, by the bytes they start with: PNG and JPEG, each opened by
its own Pillow reader, which reads the header only and, unlike ``Image.open``, neither warns
about the size nor decodes before the limit below is checked."""


def open_image(raw: bytes, where: str) -> Image.Image:
    """The decoded image in the PNG or JPEG file ``raw``; ``where`` names it in errors.

    Raises:
        ScreenshotTooLargeError: its header declares more than
            :data:`~askcache.foundation.limits.MAX_IMAGE_PIXELS` pixels (nothing was decoded).
        InvalidScreenshotError: not a PNG or JPEG file, or a broken one.
    """
    reader = next((kind for start, kind in _READERS if raw.startswith(start)), None)
    if reader is None:
        raise InvalidScreenshotError(where, "not a PNG or JPEG image")
    try:
        image = reader(io.BytesIO(raw))
    except (SyntaxError, IndexError, TypeError, ValueError, struct.error, OSError) as exc:
        raise InvalidScreenshotError(where, f"a broken image ({exc})") from exc
    width, height = image.size
    if width * height > MAX_IMAGE_PIXELS:
        image.close()
        raise ScreenshotTooLargeError(where, width, height, MAX_IMAGE_PIXELS)
    try:
        image.load()
    except (SyntaxError, ValueError, struct.error, OSError) as exc:
        raise InvalidScreenshotError(where, f"a broken image ({exc})") from exc
    return image


def decode_png(data: str, where: str = "a screenshot") -> Image.Image:
    """The image of base64 text of a PNG or JPEG file (:func:`open_image`: within askcache's
    pixel limit); the same text again, or text encoded with ``keep=True``, returns the
    remembered image. The image is shared: crop or copy it, never draw on it. ``where``
    names the image in errors.

    Raises:
        InvalidScreenshotError: not base64, not a PNG or JPEG image, or a broken one.
        ScreenshotTooLargeError: more pixels than askcache decodes.
    """
    with _lock:
        image = _images.get(data)
        if image is not None:
            _images.move_to_end(data)
            return image
    try:
        raw = base64.b64decode(data, validate=True)
    except ValueError as exc:  # binascii.Error is one
        raise InvalidScreenshotError(where, f"not base64 ({exc})") from exc
    image = open_image(raw, where)
    _keep(data, image)
    return image


def forget_images() -> None:
    """Forget every remembered image (benchmarks measure decoding with it)."""
    with _lock:
        _images.clear()
