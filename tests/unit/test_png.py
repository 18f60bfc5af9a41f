"""Screenshots as PNG: what askcache writes is read back pixel for pixel by Pillow, with
zlib-ng and with Python's zlib, for every mode a screen comes in; other modes go through
Pillow."""

from __future__ import annotations

import io
import zlib

import numpy as np
import pytest
from PIL import Image

from askcache.foundation.screen import png
from askcache.foundation.screen.png import decode_png, encode_png, forget_images, png_bytes
from askcache.testing import SimulatedFormApp


def _images() -> dict[str, Image.Image]:
    noise = np.random.default_rng(7).integers(0, 256, (37, 53, 4), dtype=np.uint8)
    form = SimulatedFormApp().screenshot()
    return {
        "the form (RGB)": form,
        "the form in grey (L)": form.convert("L"),
        "noise with alpha (RGBA)": Image.fromarray(noise, "RGBA"),
        "noise (RGB)": Image.fromarray(noise[:, :, :3], "RGB"),
        "one pixel": Image.new("RGB", (1, 1), (1, 2, 3)),
        "one row": Image.fromarray(noise[:1, :, :3], "RGB"),
        "one column": Image.fromarray(noise[:, :1, :3], "RGB"),
        "a palette image (P, through Pillow)": form.convert("P"),
        "16-bit grey (I;16, through Pillow)": Image.new("I;16", (9, 4), 40000),
    }


@pytest.fixture(params=["zlib-ng", "zlib"])
def deflater(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each encoding with zlib-ng (the desktop extra's) and with Python's zlib (without it)."""
    if request.param == "zlib":
        monkeypatch.setattr(png, "_DEFLATE", zlib.compress)
        monkeypatch.setattr(png, "_LEVEL", 1)
    else:
        pytest.importorskip("zlib_ng")
        assert png._DEFLATE is not zlib.compress  # installed: askcache uses it
    return str(request.param)


@pytest.mark.parametrize("name", list(_images()))
def test_a_png_reads_back_as_the_same_pixels(name: str, deflater: str) -> None:
    image = _images()[name]
    data = png_bytes(image)
    back = Image.open(io.BytesIO(data))
    back.load()
    assert back.format == "PNG"
    assert (back.mode, back.size) == (image.mode, image.size)
    assert back.tobytes() == image.tobytes()


def test_a_screen_compresses_far_below_its_pixels(deflater: str) -> None:
    form = SimulatedFormApp().screenshot()
    size = len(png_bytes(form))
    assert size < len(form.tobytes()) / 20


def test_text_encoded_to_keep_reads_back_as_the_image_itself_and_otherwise_decodes() -> None:
    form = SimulatedFormApp().screenshot()
    kept = encode_png(form, keep=True)
    assert decode_png(kept) is form
    forget_images()
    decoded = decode_png(kept)
    assert decoded is not form
    assert decoded.tobytes() == form.tobytes()
