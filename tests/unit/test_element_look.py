"""Element looks (:mod:`askcache.fingerprint.element_look`) on buttons drawn with a real font,
and what makes two element descriptions the same element
(:meth:`askcache.foundation.screen.elements.Element.identity`, and for twins by identity the
names of what labels them)."""

from __future__ import annotations

import pytest
from PIL import Image, ImageDraw, ImageFont

from askcache.fingerprint.element_look import element_look, look_distance
from askcache.foundation.errors import InvalidHashError
from askcache.foundation.screen.elements import Element, ElementRef, StepElement
from askcache.foundation.settings import CacheExecutionSettings

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
THRESHOLD = CacheExecutionSettings().element_look_threshold


def _button(
    label: str, *, scale: int = 1, dark: bool = False, size: int = 14
) -> tuple[Image.Image, tuple[int, int, int, int]]:
    """A 110x40 button (times ``scale``) on a window's background, and its box."""
    width, height, margin = 110 * scale, 40 * scale, 10 * scale
    image = Image.new(
        "RGB", (width + 2 * margin, height + 2 * margin), (40, 40, 40) if dark else (236, 239, 244)
    )
    draw = ImageDraw.Draw(image)
    font = ImageFont.truetype(FONT, size * scale)
    face = (70, 70, 70) if dark else (250, 250, 250)
    draw.rounded_rectangle(
        (margin, margin, margin + width, margin + height),
        radius=6 * scale,
        fill=face,
        outline=(150, 150, 150),
    )
    text = draw.textlength(label, font=font)
    ink = (230, 230, 230) if dark else (20, 20, 20)
    draw.text(
        (margin + (width - text) / 2, margin + height / 2 - size * scale * 0.6),
        label,
        font=font,
        fill=ink,
    )
    return image, (margin, margin, width, height)


def _look(label: str, **drawn: object) -> str:
    look = element_look(*_button(label, **drawn))  # type: ignore[arg-type]
    assert look is not None
    return look


@pytest.mark.parametrize(
    "drawn", [{"scale": 2}, {"dark": True}, {"size": 18}, {"scale": 2, "dark": True}]
)
def test_the_same_button_drawn_otherwise_has_a_look_within_the_threshold(
    drawn: dict[str, object],
) -> None:
    assert look_distance(_look("Save"), _look("Save", **drawn)) <= THRESHOLD


def test_a_button_whose_face_shows_nothing_is_far_from_one_with_a_label() -> None:
    empty = element_look(*_button(""))
    assert empty is not None  # its border is ink
    assert look_distance(_look("Save"), empty) > THRESHOLD


def test_a_flat_box_has_no_look_and_the_same_drawing_is_at_zero() -> None:
    flat = Image.new("RGB", (100, 60), (200, 200, 200))
    assert element_look(flat, (10, 10, 50, 30)) is None
    assert element_look(flat, (95, 55, 40, 40)) is None  # mostly off the image
    assert look_distance(_look("Save"), _look("Save")) == 0.0


def test_a_look_that_is_not_one_is_refused_by_name() -> None:
    with pytest.raises(InvalidHashError, match="256 digits"):
        look_distance(_look("Save"), "abc")
    with pytest.raises(InvalidHashError, match="not hexadecimal"):
        look_distance(_look("Save"), "z" * 256)


def _element(
    name: str, *, window: str = "notes.txt - Mousepad", states: tuple[str, ...] = ("enabled",)
) -> Element:
    return Element(
        role="push button",
        name=name,
        states=states,
        ancestors=(ElementRef(role="panel", name="Toolbar"), ElementRef(role="frame", name=window)),
        box=(10, 20, 80, 30),
        window_box=(0, 0, 640, 480),
    )


def test_identity_is_role_name_states_and_ancestors_below_the_window_whatever_its_title() -> None:
    assert _element("Save").identity() == _element("Save", window="other.txt - Mousepad").identity()
    assert _element("Save").identity() != _element("Save As").identity()
    assert _element("Save").identity() != _element("Save", states=()).identity()
    scaled = _element("Save").scaled((640, 480), (1280, 960))
    assert (scaled.box, scaled.window_box) == ((20, 40, 160, 60), (0, 0, 1280, 960))
    assert scaled.identity() == _element("Save").identity()
    assert _element("Save").describe() == "push button 'Save' [enabled]"


def _field(labels: str | None) -> Element:
    return Element(
        role="text",
        states=("editable", "enabled"),
        ancestors=(ElementRef(role="panel"), ElementRef(role="frame", name="Contact")),
        box=(46, 2, 168, 34),
        labelled_by=labels,
    )


def test_twin_fields_are_told_apart_by_their_labels_and_older_recordings_keep_their_identity() -> (
    None
):
    name, email = _field("Name"), _field("Email")
    assert name.identity() == email.identity()  # twins by identity alone
    assert name.same_element(_field("Name"))
    assert not name.same_element(email)
    assert not name.same_element(_field(None))  # the labels not said now: not counted
    assert name.other_labels(email)
    assert not name.other_labels(_field(None))  # nothing said now is no evidence
    recorded_before = _field(None)  # a file written before labels were recorded
    assert recorded_before.same_element(name)
    assert recorded_before.same_element(email)
    assert not recorded_before.other_labels(name)
    assert name.describe() == "text (unnamed, labelled 'Name') [editable, enabled]"
    assert recorded_before.describe() == "text (unnamed) [editable, enabled]"


def test_a_file_without_labels_loads_as_before() -> None:
    stored = StepElement.model_validate(
        {"tree": {"role": "text", "name": None, "box": [1, 2, 3, 4]}, "label": None}
    )
    assert stored.tree is not None
    assert stored.tree.labelled_by is None


def test_a_box_drawn_with_little_contrast_has_a_look_and_a_flat_one_still_none() -> None:
    """A dark theme's empty field: a frame 18 grey levels from its fill."""
    image = Image.new("RGB", (200, 60), (45, 45, 45))
    ImageDraw.Draw(image).rectangle((10, 10, 189, 49), outline=(27, 27, 27))
    light = Image.new("RGB", (200, 60), (255, 255, 255))
    ImageDraw.Draw(light).rectangle((10, 10, 189, 49), outline=(150, 150, 150))
    dark_look = element_look(image, (10, 10, 180, 40))
    light_look = element_look(light, (10, 10, 180, 40))
    assert dark_look is not None
    assert light_look is not None
    assert look_distance(light_look, dark_look) <= THRESHOLD
    faint = Image.new("RGB", (200, 60), (45, 45, 45))
    ImageDraw.Draw(faint).rectangle((10, 10, 189, 49), outline=(49, 49, 49))  # 4 levels
    assert element_look(faint, (10, 10, 180, 40)) is None


def test_a_thin_bright_caret_in_a_dark_focused_field_leaves_its_frame_ink() -> None:
    """yad's Name field, focused in Adwaita's dark theme (measured): a frame 21 grey levels
    from its fill and a caret 193 levels from it. The caret (under 1 % of the box) does not
    set the box's contrast, so the frame is ink as in the light theme's focused field."""
    light = Image.new("RGB", (200, 60), (255, 255, 255))
    ImageDraw.Draw(light).rectangle((10, 10, 189, 49), outline=(53, 132, 228), width=2)
    dark = Image.new("RGB", (200, 60), (45, 45, 45))
    draw = ImageDraw.Draw(dark)
    draw.rectangle((10, 10, 189, 49), outline=(24, 24, 24), width=2)
    draw.line((20, 18, 20, 41), fill=(238, 238, 238))  # the caret
    light_look, dark_look = (
        element_look(light, (10, 10, 180, 40)),
        element_look(dark, (10, 10, 180, 40)),
    )
    assert light_look is not None
    assert dark_look is not None
    assert look_distance(light_look, dark_look) <= THRESHOLD
    caret_only = Image.new("RGB", (200, 60), (45, 45, 45))
    ImageDraw.Draw(caret_only).line((20, 18, 20, 41), fill=(238, 238, 238))
    alone = element_look(caret_only, (10, 10, 180, 40))
    assert alone is not None  # a caret alone is still ink
    assert look_distance(light_look, alone) > THRESHOLD
