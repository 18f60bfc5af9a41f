"""Screenshots as base64 PNG text, both ways, with the latest images kept.

Decoding a 1280x800 screenshot costs about as much as taking it. The computer tool encodes
a screenshot after every action, and a replay reads that screenshot back to check the
action's effect: an image encoded with ``keep=True`` is remembered with its text, so reading
that text back returns the image itself, with no decoding. The last :data:`KEPT` images,
encoded or decoded, are remembered; PNG is lossless, so the image is the one decoding would
give.
"""

from __future__ import annotations

import base64
import io
import threading
from collections import OrderedDict

from PIL import Image

__all__ = ["KEPT", "decode_png", "encode_png", "forget_images"]

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


def encode_png(image: Image.Image, *, keep: bool = False) -> str:
    """Base64 text of ``image`` as PNG (fastest compression: a screenshot is taken after
    every action, and the model's tokens depend on its pixels, not its bytes). ``keep``:
    remember ``image`` for :func:`decode_png` of the text (the caller must not draw on it
    afterwards)."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=1)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    if keep:
        _keep(data, image)
    return data


def decode_png(data: str) -> Image.Image:
    """The image of base64 text (any format Pillow reads); the same text again, or text
    encoded with ``keep=True``, returns the remembered image. The image is shared: crop or
    copy it, never draw on it.

    Raises:
        binascii.Error, ValueError: not base64.
        PIL.UnidentifiedImageError: not an image Pillow can read.
        OSError, PIL.Image.DecompressionBombError: a broken or oversized image.
    """
    with _lock:
        image = _images.get(data)
        if image is not None:
            _images.move_to_end(data)
            return image
    raw = base64.b64decode(data, validate=True)
    image = Image.open(io.BytesIO(raw))
    image.load()
    _keep(data, image)
    return image


def forget_images() -> None:
    """Forget every remembered image (benchmarks measure decoding with it)."""
    with _lock:
        _images.clear()
