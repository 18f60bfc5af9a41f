"""Who takes the next turn: the speaker protocol, its result, and the model speaker.

A speaker looks at the conversation and returns a :class:`SpeakerResult`: messages to add
and what happens next. The :class:`AgentSpeaker` asks the model through the official
``anthropic`` client; :class:`~askcache.replay.CacheExecutor` replays a cache file.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from askcache.messages import MessageParam, message_from_sdk, messages_for_api

if TYPE_CHECKING:
    import anthropic

    from askcache.conversation import Conversation

__all__ = ["AGENT_SPEAKER", "AgentSpeaker", "Speaker", "SpeakerResult", "SpeakerStatus"]

logger = logging.getLogger(__name__)

AGENT_SPEAKER = "agent"
"""Default name of the model speaker."""

SpeakerStatus = Literal["continue", "switch_speaker", "done", "failed"]
"""``continue``: run the tool calls just added and ask the same speaker again;
``switch_speaker``: then hand the turn to ``next_speaker``; ``done``: the task is finished;
``failed``: stop, the task cannot be finished."""


@dataclass
class SpeakerResult:
    """What a speaker did in its turn."""

    status: SpeakerStatus
    """What happens next."""
    messages: list[MessageParam] = field(default_factory=list)
    """Messages to append to the conversation, in order."""
    next_speaker: str | None = None
    """With ``switch_speaker``: the name of the speaker that takes over."""
    reason: str | None = None
    """Why the speaker stopped or switched, for logs and results."""


class Speaker(Protocol):
    """Anything that can take a turn in a :class:`~askcache.conversation.Conversation`."""

    name: str
    """Unique name within the conversation."""

    def handle_step(self, conversation: Conversation) -> SpeakerResult:
        """Take one turn."""
        ...


class AgentSpeaker:
    """The model: one Messages API call per turn, through the caller's ``anthropic`` client.

    The client is passed in, so the same code talks to the real API (``ANTHROPIC_API_KEY``)
    or to a local stand-in (``anthropic.Anthropic(base_url=...)``). When a tool needs beta
    flags (the single ``computer`` tool does), the call goes through ``client.beta.messages``.
    """

    def __init__(
        self,
        client: anthropic.Anthropic,
        *,
        model: str,
        system: str | None = None,
        max_tokens: int = 4096,
        name: str = AGENT_SPEAKER,
    ) -> None:
        self.client = client
        self.model = model
        self.system = system
        self.max_tokens = max_tokens
        self.name = name

    def handle_step(self, conversation: Conversation) -> SpeakerResult:
        request: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": messages_for_api(conversation.messages),
        }
        tools = conversation.tools.params()
        if tools:
            request["tools"] = tools
        if self.system:
            request["system"] = self.system
        betas = conversation.tools.betas()
        if betas:
            response: Any = self.client.beta.messages.create(betas=betas, **request)
        else:
            response = self.client.messages.create(**request)
        message = message_from_sdk(response)
        logger.debug("model answered: stop_reason=%s", message.stop_reason)
        if message.tool_uses or message.stop_reason == "pause_turn":
            return SpeakerResult("continue", [message])
        if message.stop_reason in ("end_turn", "stop_sequence"):
            return SpeakerResult("done", [message], reason="the model ended its turn")
        return SpeakerResult(
            "failed", [message], reason=f"the model stopped with {message.stop_reason!r}"
        )
