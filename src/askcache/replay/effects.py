"""Effects: after a step ran, its tool succeeded and the effect it had when recorded appeared.

An action that changed the tiles near its point when recorded but changes nothing now did not
land; one whose tiles look different after it, or that did not change the places away from
its point that it changed then (:mod:`askcache.foundation.screen.elsewhere`), did something else.
The screen is watched (:mod:`.wait`) until the effect appears or the screen settles without it.
A step that ran where its window moved (:mod:`.anchor`) is watched as seen from the window.

A typed text must reach the screen: after a ``type`` step whose recorded text was drawn over
its tiles, one of them must look other than just before it, as another run's screen would (a
caret blinking in a field that never got the keystrokes is not enough); with the checks
skipped (``skip_visual_validation``, ``check_effects`` off) this is the one check that runs
(:func:`checked_effect`). A replay whose typed text never appeared is never ``completed``.
A text of fewer than three characters other than spaces (:func:`draws_text`) may draw less
than a caret's blink: it must only have changed a tile near its point, as any step.

On a screen drawn otherwise (a step allowed by its element and look, or at another density:
``redrawn``), nothing is compared with the recording's pixels, and what the step draws may lie
elsewhere than when recorded (at a bigger font, a typed line lies lower): a tile within the
effect radius of the recorded tiles' middle must have changed (for a typed text: look other
than before it). That the step acted where it should is not shown by this: a typed text or a
key allowed on such a screen found the keyboard focus and its caret where recorded before it
ran (:mod:`.element_check`).

Where even that cannot show the effect (a dark theme's focus ring a few grey levels from its
field; a typed text drawn at a bigger font, in a field found in its re-laid window), the
step's element may say it (:func:`element_effect`, asked by the replay's states on a screen it
found drawn otherwise, with no parameter values): the recorded editable text element, found by
the step's check before it, now has the keyboard focus a click gave it, or holds the typed text
(its characters and caret moved on by the text's length, the text also seen drawn near where
it was). A field already filled, focused before the click, or whose keystrokes went elsewhere
is not confirmed: the pixels' verdict stands.
"""

from __future__ import annotations

from dataclasses import dataclass

from PIL import Image

from askcache.foundation.actions import action_name
from askcache.foundation.messages import MessageParam, TextBlockParam, ToolUseBlockParam
from askcache.foundation.redaction import redact
from askcache.foundation.screen.elements import Element
from askcache.foundation.screen.elsewhere import check_elsewhere
from askcache.foundation.screen.thumbnails import (
    ScreenStateConfig,
    StepEffect,
    Thumbnail,
    compare_tiles,
    drawn_tiles,
)
from askcache.replay.check_policy import CheckPolicy
from askcache.replay.element_check import TEXT_ROLES
from askcache.replay.screens import Screen

__all__ = [
    "DRAWN_TEXT_CHARACTERS",
    "ElementEffect",
    "checked_effect",
    "draws_text",
    "effect_problem",
    "element_effect",
    "failed_call",
    "has_effect",
    "is_typing",
]


def has_effect(effect: StepEffect, before_image: Image.Image | None) -> bool:
    """True when ``effect`` has something to check: tiles near the point, or places away from
    it (only with the full-size screen from before the action)."""
    return bool(effect.tiles) or (before_image is not None and bool(effect.elsewhere))


def effect_problem(
    effect: StepEffect,
    config: ScreenStateConfig,
    before: Thumbnail,
    before_image: Image.Image | None,
    seen: Screen,
    *,
    typed: bool = False,
    redrawn: bool = False,
) -> str | None:
    """Why ``seen`` does not show the step's recorded ``effect`` against the screen before it
    (``before``; ``before_image`` at full size, for the places away from the point).
    ``typed``: the step typed text; where the recorded text was drawn over its tiles (not
    merely a caret's blink), one of them must look other than before it, as another run's
    screen would (whatever value is typed: nothing is compared with the recording).
    ``redrawn``: the screen is drawn otherwise (see the module docstring): only whether a tile
    near the recorded ones changed is checked."""
    tiles = set(effect.tiles)
    if tiles and redrawn:
        return _redrawn_problem(effect, config, before, seen, typed=typed)
    if tiles:
        now = seen.thumbnail(config)
        if typed and drawn_tiles(effect, config) and not tiles & set(before.differing_tiles(now)):
            return (  # a caret blinking in the field changes a tile, but draws nothing
                f"the typed text never reached the screen: when recorded it was drawn in "
                f"{len(tiles)} tiles near its point, now none of them looks other than "
                "before it (nothing had the keyboard focus, or the keystrokes were lost)"
            )
        if not tiles & set(before.changed_tiles(now)):
            return (
                f"the action had no effect: when recorded it changed {len(tiles)} tiles "
                "near its point, now none changed (it did not land, or landed elsewhere)"
            )
        comparison = compare_tiles(now, effect.tiles, effect.after, skip=effect.parameter_after)
        if not comparison.matched:
            boxes = [list(now.tile_box(i)) for i in comparison.differing[:3]]
            return (
                "the action's effect differs from the recording: "
                f"{len(comparison.differing)} of {comparison.compared} tiles look "
                f"different after it (at {', '.join(map(str, boxes))})"
            )
    if before_image is not None and seen.image.size == before_image.size:
        return check_elsewhere(effect.elsewhere, before_image, seen.image)
    return None


def _redrawn_problem(
    effect: StepEffect,
    config: ScreenStateConfig,
    before: Thumbnail,
    seen: Screen,
    *,
    typed: bool,
) -> str | None:
    """:func:`effect_problem` on a screen drawn otherwise: a tile within the effect radius of
    the middle of the recorded tiles changed (a typed text drawn: one looks other than before
    it, as another run's screen would, which a caret's blink does not)."""
    now = seen.thumbnail(config)
    boxes = [before.tile_box(i) for i in effect.tiles]
    middle = (
        (min(b[0] for b in boxes) + max(b[2] for b in boxes)) // 2,
        (min(b[1] for b in boxes) + max(b[3] for b in boxes)) // 2,
    )
    if typed and drawn_tiles(effect, config):
        if not before.near(before.differing_tiles(now), middle):
            return (
                "the typed text never reached the screen: on this screen drawn otherwise, no "
                f"tile within {config.effect_radius} px of where it was drawn when recorded "
                "looks other than before it (nothing had the keyboard focus, or the "
                "keystrokes were lost)"
            )
        return None
    if not before.near(before.changed_tiles(now), middle):
        return (
            "the action had no effect: on this screen drawn otherwise, no tile within "
            f"{config.effect_radius} px of where it changed the screen when recorded "
            "changed (it did not land, or landed elsewhere)"
        )
    return None


@dataclass(frozen=True)
class ElementEffect:
    """A step's effect that its pixels did not show on a screen drawn otherwise, and that its
    element said happened (:func:`element_effect`)."""

    words: str
    """What the element said (no typed text in it)."""


def element_effect(
    step: ToolUseBlockParam, recorded: Element | None, before: Element, after: Element | None
) -> str | None:
    """What the step's element says it did, when that is the step's recorded effect (see the
    module docstring; ``None``: it does not say so). ``recorded``: the element as recorded
    before the step; ``before``: as the step's check found it just before it ran; ``after``:
    at the same place now. All three must be the same editable text element (its identity,
    and the names that label it where recorded). A single left click that gave it the keyboard
    focus (no caret before it, recorded or now; a caret now; as many characters as before);
    a typed text of printable characters that reached it (its characters and its caret both
    moved on by the text's length from where they were before it). Never the text itself, nor
    its length, in the words: a typed text may hold a secret."""
    if recorded is None or after is None or recorded.role not in TEXT_ROLES:
        return None
    if "editable" not in recorded.states:
        return None
    if not (recorded.same_element(before) and recorded.same_element(after)):
        return None
    if before.character_count is None or after.character_count is None:
        return None
    if recorded.character_count is not None and before.character_count != recorded.character_count:
        return None  # another text than the recording's before the step
    name = action_name(step)
    if name == "left_click" and not step.input.get("text"):
        if recorded.caret_offset is not None or before.caret_offset is not None:
            return None  # it had the focus already: gaining it is not what the click did
        if after.caret_offset is None or after.character_count != before.character_count:
            return None
        return f"{after.describe()} has the keyboard focus now, as the click gave it when recorded"
    text = step.input.get("text")
    if name != "type" or not isinstance(text, str) or not text or not text.isprintable():
        return None
    if before.caret_offset is None or after.caret_offset is None:
        return None
    grown = after.character_count - before.character_count
    moved = after.caret_offset - before.caret_offset
    if grown != len(text) or moved != len(text):
        return None
    return (
        f"{after.describe()} holds the typed text now: its characters and its caret moved on "
        "by its length"
    )


def is_typing(step: ToolUseBlockParam) -> bool:
    """True when ``step`` types text."""
    return action_name(step) == "type"


DRAWN_TEXT_CHARACTERS = 3
"""How many characters other than spaces a typed text needs for the check that it was drawn
(:func:`draws_text`): fewer (``I``, ``.``) may draw no more than a blinking caret does, and
such a step is checked as any other, that a tile near its point changed."""


def draws_text(step: ToolUseBlockParam) -> bool:
    """True when ``step`` types a text long enough to be told from a caret's blink
    (:data:`DRAWN_TEXT_CHARACTERS`): then :func:`effect_problem` checks that it was drawn."""
    text = step.input.get("text") if is_typing(step) else None
    return isinstance(text, str) and len("".join(text.split())) >= DRAWN_TEXT_CHARACTERS


def checked_effect(policy: CheckPolicy, step: ToolUseBlockParam) -> StepEffect | None:
    """The part of ``step``'s recorded effect this replay checks after it: all of it; or,
    when the settings skip the checks (``skip_visual_validation``, ``check_effects`` off),
    for a step that types, only that its text reached the screen: the tiles near its point
    that the text changed when recorded change again, against the screen just before it (a
    new parameter value draws other pixels there; nothing is compared with the recording).
    A replay whose typed text never appeared is never ``completed``."""
    effect = step.effect
    if effect is None or (policy.check_effects and not policy.skip_visual_validation):
        return effect
    if not is_typing(step) or not effect.tiles:
        return None
    return effect.model_copy(update={"parameter_after": list(effect.tiles), "elsewhere": []})


def failed_call(messages: list[MessageParam], call_id: str) -> str | None:
    """The error text when the call ``call_id`` came back with ``is_error``, registered
    secrets masked (:func:`~askcache.foundation.redaction.redact`): a backend's error often quotes
    the text it failed to type, and this text becomes the replay's reason and the hand-back
    message."""
    if not messages:
        return None
    for result in messages[-1].tool_results:
        if result.tool_use_id == call_id and result.is_error:
            text = (
                result.content
                if isinstance(result.content, str)
                else " ".join(b.text for b in result.content if isinstance(b, TextBlockParam))
            )
            return redact(f"the tool reported an error: {text or 'no details'}")
    return None
