"""What a replay's state asks its driver to do next, and what the driver tells it back.

A state's :meth:`~askcache.replay.states.State.next` takes one :data:`Observation` and returns
the next state and one :data:`Command`. :class:`Look` and :class:`Sleep` are carried out by
the driver (:mod:`.driver`) and answered at once with :class:`Seen` (or :class:`Blind`) and
:class:`Woke`, and :class:`Quiet` (where the platform reports drawing) with :class:`Drawn`;
:class:`Emit`, :class:`HandBack`, :class:`Finished` and :class:`Decided` end the driver's
run: the conversation (an ``Agent``'s or the user's own loop) answers them later with a
:class:`Turn` or an :class:`Ask`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from PIL import Image

from askcache.foundation.messages import MessageParam, ToolUseBlockParam
from askcache.foundation.reasons import HandBackCode
from askcache.foundation.screen.elements import ElementSource
from askcache.foundation.screen.windows import WindowFrame
from askcache.replay.result import EndStateVerdict

__all__ = [
    "Ask",
    "Blind",
    "Command",
    "Decided",
    "Drawn",
    "Emit",
    "Finished",
    "HandBack",
    "Look",
    "Observation",
    "Quiet",
    "Seen",
    "Sleep",
    "Turn",
    "Woke",
]


@dataclass(frozen=True)
class Look:
    """Look at the screen at the instant ``at`` (the replay's clock; sleep until then): a
    screenshot and, where the screen can list them, its windows."""

    at: float
    grab: bool = True
    """``False``: list the windows only (the look's image is the history's screenshot)."""


@dataclass(frozen=True)
class Quiet:
    """Wait until the screen has had ``period`` seconds without drawing after the look that
    carried ``mark`` (where the platform reports drawing: :mod:`askcache.foundation.screen.damage`),
    then say whether anything was drawn since that look (:class:`Drawn`)."""

    mark: object
    """The look's :class:`~askcache.foundation.screen.damage.DamageMark`."""
    period: float


@dataclass(frozen=True)
class Sleep:
    """Do nothing for ``seconds`` (a fixed delay the settings ask for)."""

    seconds: float


@dataclass(frozen=True)
class Emit:
    """Run this tool call through the conversation, then give the replay its result
    (:class:`Turn`)."""

    call: ToolUseBlockParam
    """The call (a replayed step, or a screenshot request)."""


@dataclass(frozen=True)
class HandBack:
    """Stop and give the turn to the model."""

    step: int
    """The step the replay stopped at."""
    problem: str
    """What went wrong, in plain words."""
    executed: bool = False
    """True when that step ran (its tool failed, or its effect did not appear)."""
    code: HandBackCode = field(kw_only=True)
    """The kind of problem (:data:`~askcache.foundation.reasons.HandBackCode`)."""


@dataclass(frozen=True)
class Finished:
    """Every step ran."""

    verdict: EndStateVerdict | None
    """The end state against the recording's (``None``: not compared)."""
    hand_back: bool = False
    """True when the end state differs and the settings ask the model to confirm."""


@dataclass(frozen=True)
class Decided:
    """The re-join question (:class:`Ask`) is answered."""

    rejoined: bool


Command = Look | Quiet | Sleep | Emit | HandBack | Finished | Decided
"""What the driver does next."""


@dataclass(frozen=True)
class Seen:
    """The look a :class:`Look` asked for."""

    image: Image.Image | None
    """The screenshot (``None``: only the windows were asked for)."""
    windows: tuple[WindowFrame, ...] | None
    """The screen's windows (``None``: the screen cannot list them, or the listing failed)."""
    at: float
    """When it was taken."""
    mark: object | None = None
    """Where the platform reports drawing: the moment just before the screenshot in its
    reports (a :class:`~askcache.foundation.screen.damage.DamageMark`)."""
    elements: ElementSource | None = None
    """The platform's element source, asked about this look when a check needs it
    (``None``: no element information)."""


@dataclass(frozen=True)
class Drawn:
    """The answer to :class:`Quiet`: whether the screen was drawn on since the look."""

    drawn: bool
    at: float


@dataclass(frozen=True)
class Blind:
    """The look a :class:`Look` asked for could not be taken (every attempt failed)."""

    error: Exception
    at: float


@dataclass(frozen=True)
class Woke:
    """The :class:`Sleep` is over."""

    at: float


@dataclass(frozen=True)
class Turn:
    """The replay's turn in the conversation: the history so far (after an :class:`Emit`, it
    ends with the call's result)."""

    messages: list[MessageParam]
    at: float


@dataclass(frozen=True)
class Ask:
    """After a hand-back: may the replay take over again, after the model's latest turn
    (``requested``: the model asked, with ``resume_cached_trajectory``)?"""

    messages: list[MessageParam]
    at: float
    requested: bool = False


Observation = Seen | Drawn | Blind | Woke | Turn | Ask
"""What the driver tells the state."""
