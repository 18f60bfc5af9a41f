"""The model speaker: :class:`AgentSpeaker` asks the model through the official ``anthropic``
client.

A speaker (:class:`~askcache.conversation.turns.Speaker`) looks at the conversation and returns
a :class:`~askcache.conversation.turns.SpeakerResult`: messages to add and what happens next;
:class:`~askcache.replay.executor.CacheExecutor` is the other speaker, replaying a cache file.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from askcache.conversation.turns import SpeakerResult
from askcache.foundation.errors import MissingApiKeyError
from askcache.foundation.messages import (
    ContentBlockParam,
    ImageBlockParam,
    MessageParam,
    TextBlockParam,
    ToolResultBlockParam,
    ToolResultContent,
    message_from_sdk,
    messages_for_api,
)

if TYPE_CHECKING:
    import anthropic

    from askcache.conversation.turns import Conversation

__all__ = [
    "AGENT_SPEAKER",
    "DEFAULT_MODEL",
    "AgentSpeaker",
    "keep_recent_screenshots",
]

logger = logging.getLogger(__name__)

AGENT_SPEAKER = "agent"
"""Default name of the model speaker."""

DEFAULT_MODEL = "claude-sonnet-5-5"
"""Model used when none is given."""


OMITTED_SCREENSHOT = "(an older screenshot, omitted to save tokens)"


def keep_recent_screenshots(messages: list[MessageParam], limit: int | None) -> list[MessageParam]:
    """Copies of ``messages`` in which only the ``limit`` most recent tool-result images remain;
    older ones become a short text. Messages without dropped images are returned as they are.
    """
    if limit is None:
        return messages
    kept = 0
    trimmed: list[MessageParam] = []
    for message in reversed(messages):
        if message.role != "user" or isinstance(message.content, str):
            trimmed.append(message)
            continue
        blocks: list[ContentBlockParam] = []
        changed = False
        for block in reversed(message.content):
            if not (isinstance(block, ToolResultBlockParam) and isinstance(block.content, list)):
                blocks.append(block)
                continue
            items: list[ToolResultContent] = []
            for item in reversed(block.content):
                if isinstance(item, ImageBlockParam):
                    kept += 1
                    if kept > limit:
                        items.append(TextBlockParam(text=OMITTED_SCREENSHOT))
                        changed = True
                        continue
                items.append(item)
            blocks.append(block.model_copy(update={"content": items[::-1]}))
        trimmed.append(message.model_copy(update={"content": blocks[::-1]}) if changed else message)
    return trimmed[::-1]


def _has_no_credentials(client: object) -> bool:
    """True for an ``anthropic`` client made with neither an API key nor an auth token."""
    import anthropic

    if not isinstance(client, anthropic.Anthropic):
        return False
    return getattr(client, "api_key", None) is None and getattr(client, "auth_token", None) is None


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
        max_screenshots: int | None = 10,
        name: str = AGENT_SPEAKER,
    ) -> None:
        self.client = client
        self.model = model
        self.system = system
        self.max_tokens = max_tokens
        self.max_screenshots = max_screenshots
        """Send only this many of the most recent tool-result images (``None``: all). A long
        replay leaves a screenshot per step in the history; older ones are replaced by a
        short text in the request, the history itself is unchanged."""
        self.name = name

    def check_credentials(self) -> None:
        """Raise before a call that cannot be authenticated: an ``anthropic.Anthropic`` client
        made without a key (``ANTHROPIC_API_KEY`` unset) fails deep inside the SDK otherwise.

        Raises:
            MissingApiKeyError: the client has neither an API key nor an auth token.
        """
        if _has_no_credentials(self.client):
            raise MissingApiKeyError(
                "calling Claude",
                "the README's Quick start runs without a key (askcache.testing.MessagesApiStandIn)",
            )

    def handle_step(self, conversation: Conversation) -> SpeakerResult:
        self.check_credentials()
        request: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": messages_for_api(
                keep_recent_screenshots(conversation.messages, self.max_screenshots)
            ),
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
