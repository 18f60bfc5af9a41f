"""Why a replay handed back, as a closed set of codes: :data:`HandBackCode`.

The reason's text (``ReplayResult.reason``, ``RunRecord.reason``) says it for a person and may
quote numbers and boxes; the code names the kind of reason, so that a ledger, a metric or a
page can group runs by it. Every engine of the run ledger stores it beside the text.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["HANDBACK_CODES", "HandBackCode", "describe_code"]

HandBackCode = Literal[
    "screen_changed",
    "area_changed",
    "element_changed",
    "label_changed",
    "screen_size",
    "unchecked_step",
    "effect_missing",
    "tool_failed",
    "screen_unreadable",
    "end_state",
]
"""The kind of reason a replay handed the turn back (see :data:`HANDBACK_CODES`)."""

HANDBACK_CODES: dict[HandBackCode, str] = {
    "screen_changed": "the screen around the step's action point no longer looks as recorded",
    "area_changed": "the area the step changes looks otherwise than before it when recorded",
    "element_changed": "the element at the action point is another one (accessibility tree)",
    "label_changed": "the label at the action point reads otherwise (OCR)",
    "screen_size": "the screen's size cannot be mapped to the recording's",
    "unchecked_step": "the step stores no check and unchecked steps are not run",
    "effect_missing": "the step ran and its recorded effect did not appear",
    "tool_failed": "the step's tool call failed",
    "screen_unreadable": "no screenshot could be taken or read",
    "end_state": "the final screen differs from the recording's",
}
"""Each code and what it means, in the order above."""

assert tuple(HANDBACK_CODES) == get_args(HandBackCode)


def describe_code(code: HandBackCode | None) -> str:
    """What ``code`` means in words (``None``: no code, an entry written before codes)."""
    return "no code recorded" if code is None else HANDBACK_CODES[code]
