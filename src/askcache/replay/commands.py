"""What a replay tells its executor to do next: emit a tool call, hand back, or finish.

:meth:`~askcache.replay.session.ReplaySession.next` returns one :data:`Command` per turn;
:class:`~askcache.replay.executor.CacheExecutor` carries it out.
"""

from __future__ import annotations

from dataclasses import dataclass

from askcache.messages import ToolUseBlockParam
from askcache.replay.result import EndStateVerdict

__all__ = ["Command", "Emit", "Finished", "HandBack"]


@dataclass(frozen=True)
class Emit:
    """Run this tool call through the conversation, then ask again."""

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


@dataclass(frozen=True)
class Finished:
    """Every step ran."""

    verdict: EndStateVerdict | None
    """The end state against the recording's (``None``: not compared)."""
    hand_back: bool = False
    """True when the end state differs and the settings ask the model to confirm."""


Command = Emit | HandBack | Finished
"""What the executor does next."""
