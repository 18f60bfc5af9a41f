"""What a recording stores of a step's element (:mod:`askcache.record.element_record`): never a
label that shows a secret, even as OCR misreads it."""

from __future__ import annotations

import pytest
from PIL import Image, ImageDraw, ImageFont

from askcache.fingerprint.ocr_engine import label_engine_available
from askcache.foundation.screen.elements import Element, ElementRef
from askcache.record.element_record import step_element

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"

pytestmark = pytest.mark.skipif(
    not label_engine_available(), reason="no OCR engine (pip install 'askcache[anchors]')"
)


def _button(label: str) -> Image.Image:
    image = Image.new("RGB", (240, 80), (236, 239, 244))
    draw = ImageDraw.Draw(image)
    draw.rectangle((20, 20, 220, 60), fill="white", outline=(120, 120, 120), width=2)
    font = ImageFont.truetype(FONT, 18)
    draw.text((40, 29), label, font=font, fill="black")
    return image


def test_a_label_is_stored_with_its_look_and_one_showing_a_secret_is_not() -> None:
    stored = step_element(_button("Continue"), (120, 40), None, {}, {})
    assert stored is not None
    assert stored.label == "Continue"
    assert stored.look is not None
    assert stored.label_digest is not None
    shown = step_element(_button("Hunter2Gold"), (120, 40), None, {}, {"pw": "hunter2gold"})
    assert shown is None or shown.label is None  # case aside, it is the secret
    misread = step_element(_button("hunter2goId"), (120, 40), None, {}, {"pw": "hunter2gold"})
    assert misread is None or misread.label is None  # "l" drawn as "I": still the secret


def test_a_label_holding_a_parameter_is_stored_as_its_placeholder_without_a_digest() -> None:
    stored = step_element(_button("Hello Ada"), (120, 40), None, {"who": "Ada"}, {})
    assert stored is not None
    assert stored.label == "Hello {{who}}"
    assert stored.label_digest is None


def test_the_names_of_what_labels_a_field_go_through_parameters_and_secrets() -> None:
    tree = Element(
        role="text",
        states=("editable",),
        ancestors=(ElementRef(role="frame", name="Contact"),),
        box=(40, 30, 160, 24),
        labelled_by="Password for hunter2gold of Ada",
    )
    stored = step_element(_button(""), (120, 40), tree, {"who": "Ada"}, {"pw": "hunter2gold"})
    assert stored is not None
    assert stored.tree is not None
    assert stored.tree.labelled_by is not None
    assert "hunter2gold" not in stored.tree.labelled_by
    assert "Ada" not in stored.tree.labelled_by
    assert stored.tree.labelled_by.endswith("of {{who}}")
    assert stored.label is None  # a field's text is content, not a label
