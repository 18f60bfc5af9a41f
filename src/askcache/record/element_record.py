"""Element records: what a recording stores about the element an acting step reached.

For each acting step with a point, the recorder asks the platform which element is there,
just before the step runs (:meth:`~askcache.record.recording.CacheManager.before_tool`); the
file is built from it and from the screenshot before the step (:func:`step_element`): the
tree's description, the label's text as OCR reads it, and the element's look
(:class:`~askcache.foundation.screen.elements.StepElement`).

What is stored is text about the screen, so it is treated as typed text is: every value of a
parameter or secret becomes its placeholder, names (the element's, its ancestors', those of what
labels it) lose the recording machine's paths, user and host names
(:func:`~askcache.foundation.screen.titles.neutral_title`), and the label of an element that
holds text the user typed or edits (a field, a document, a terminal) is not read: its "label"
would be its content. Where no tree says what the element is (Tk, X Athena), a
label that holds part of a secret, or comes as close to one as a misreading would, is not stored
at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from difflib import SequenceMatcher

from PIL import Image

from askcache.fingerprint.element_look import element_look
from askcache.fingerprint.label_reader import read_label
from askcache.foundation.geometry import Point
from askcache.foundation.parameters import parameterize, secret_fragment
from askcache.foundation.screen.elements import Element, ElementRef, StepElement
from askcache.foundation.screen.titles import neutral_title

__all__ = ["CONTENT_ROLES", "LABEL_CHARS", "step_element"]

CONTENT_ROLES = frozenset(
    {
        "text",
        "entry",
        "password text",
        "document text",
        "document frame",
        "document web",
        "paragraph",
        "terminal",
        "editbar",
        "spin button",
        "combo box",
    }
)
"""Roles whose text under the point is content (typed or edited), not a label: no label is
read for them."""

LABEL_CHARS = 120
"""The longest label stored; a longer reading is content, not a label."""


def _clean(text: str | None, parameters: Mapping[str, str], secrets: Mapping[str, str]) -> str:
    if not text:
        return ""
    return neutral_title(parameterize(text, parameters, secrets)) or ""


def _near_secret(text: str, secrets: Mapping[str, str]) -> bool:
    """Whether an OCR reading may show a secret: it holds part of one
    (:func:`~askcache.foundation.parameters.secret_fragment`), or, read with a letter wrong, is
    as close to one as a misreading would be. Such a reading is not stored at all: a
    placeholder cannot replace what OCR read slightly otherwise."""
    if secret_fragment(text, secrets) is not None:
        return True
    folded = text.casefold()
    for value in secrets.values():
        if len(value) < 3:
            continue
        match = SequenceMatcher(None, folded, value.casefold()).find_longest_match()
        if match.size >= max(3, len(value) // 2):
            return True
    return False


def _stored_tree(
    tree: Element, parameters: Mapping[str, str], secrets: Mapping[str, str]
) -> Element:
    ancestors = tuple(
        ElementRef(role=a.role, name=_clean(a.name, parameters, secrets)[:300] or None)
        for a in tree.ancestors
    )
    name = _clean(tree.name, parameters, secrets)[:300] or None
    labels = _clean(tree.labelled_by, parameters, secrets)[:300] or None
    return tree.model_copy(update={"name": name, "ancestors": ancestors, "labelled_by": labels})


def step_element(
    before: Image.Image,
    point: Point,
    tree: Element | None,
    parameters: Mapping[str, str],
    secrets: Mapping[str, str],
) -> StepElement | None:
    """What the file stores about the element at ``point`` on ``before`` (the screenshot
    before the step): ``tree``, the platform's description taken before the step (``None``:
    none), with names made safe, the label's text (not for :data:`CONTENT_ROLES`), and the
    look over the tree's box, else the label's. ``None``: nothing to store."""
    stored_tree = None if tree is None else _stored_tree(tree, parameters, secrets)
    label = label_box = digest = None
    if tree is None or tree.role not in CONTENT_ROLES:
        reading = read_label(before, point, tree.box if tree is not None else None)
        if reading is not None and not _near_secret(reading.text, secrets):
            text = _clean(reading.text, parameters, secrets)
            if text and len(text) <= LABEL_CHARS:
                label, label_box = text, reading.box
                digest = reading.digest if text == reading.text else None
    look_box = tree.box if tree is not None else label_box
    look = element_look(before, look_box) if look_box is not None else None
    element = StepElement(
        tree=stored_tree,
        label=label,
        label_box=label_box,
        label_digest=digest,
        look=look,
        look_box=look_box if look is not None else None,
    )
    return None if element.empty() else element
