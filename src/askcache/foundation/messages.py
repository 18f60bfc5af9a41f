"""Pydantic models of the Anthropic Messages format, as askcache stores and sends them.

Blocks are discriminated by their ``type`` tag. Some fields exist only on askcache's side
(``ToolUseBlockParam.visual_representation``, ``MessageParam.stop_reason`` and ``usage``):
they are kept in cache files and dropped by one serializer when talking to the API::

    payload = message.model_dump(mode="json", context={"for_api": True})

With ``for_api`` the dump also leaves out fields whose value is ``None``, so every key it
produces is a key of the SDK's own request ``TypedDict`` for that block.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any, ClassVar, Literal, Protocol

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    model_serializer,
)

from askcache.foundation.errors import AskCacheError
from askcache.foundation.screen.elements import StepElement
from askcache.foundation.screen.thumbnails import StepEffect
from askcache.foundation.screen.windows import WindowFrame
from askcache.foundation.usage import Usage

__all__ = [
    "Base64ImageSource",
    "CacheControl",
    "ContentBlockParam",
    "ImageBlockParam",
    "MessageParam",
    "RedactedThinkingBlockParam",
    "TextBlockParam",
    "ThinkingBlockParam",
    "ToolResultBlockParam",
    "ToolResultContent",
    "ToolUseBlockParam",
    "Usage",
    "message_from_sdk",
    "messages_for_api",
]

logger = logging.getLogger(__name__)


class ApiModel(BaseModel):
    """Base of every message model: one serializer decides what reaches the API.

    Subclasses name their cache-only fields in ``cache_only_fields``.
    """

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    cache_only_fields: ClassVar[frozenset[str]] = frozenset()

    @model_serializer(mode="wrap")
    def _serialize(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        context = info.context
        if isinstance(context, dict) and context.get("for_api"):
            return {
                key: value
                for key, value in data.items()
                if value is not None and key not in self.cache_only_fields
            }
        return data


class CacheControl(ApiModel):
    """A prompt-cache breakpoint (Anthropic's own prompt caching, unrelated to askcache files)."""

    type: Literal["ephemeral"] = "ephemeral"
    """Always ``ephemeral``."""
    ttl: Literal["5m", "1h"] | None = None
    """Lifetime of the prompt-cache entry; the API's default when absent."""


class TextBlockParam(ApiModel):
    """Plain text, from the user or the model."""

    type: Literal["text"] = "text"
    """The block's tag."""
    text: str
    """The text itself."""
    cache_control: CacheControl | None = None
    """Optional prompt-cache breakpoint."""


class Base64ImageSource(ApiModel):
    """Image bytes inline, base64-encoded."""

    type: Literal["base64"] = "base64"
    """The source's tag."""
    media_type: Literal["image/png", "image/jpeg", "image/gif", "image/webp"] = "image/png"
    """MIME type of the encoded image."""
    data: str
    """The base64 text of the image file."""


class ImageBlockParam(ApiModel):
    """An image, such as a screenshot."""

    type: Literal["image"] = "image"
    """The block's tag."""
    source: Base64ImageSource
    """Where the image bytes are."""
    cache_control: CacheControl | None = None
    """Optional prompt-cache breakpoint."""


class ToolUseBlockParam(ApiModel):
    """A tool call made by the model, or replayed by askcache from a cache file.

    Both shapes of Anthropic's computer tool arrive here: the single ``computer`` tool puts
    the action in ``input["action"]``; the computer toolset puts it in ``name`` and sets
    ``toolset_name="computer"``. :mod:`askcache.foundation.actions` reads either.
    """

    cache_only_fields: ClassVar[frozenset[str]] = frozenset(
        {
            "visual_representation",
            "visual_detail",
            "visual_tone",
            "visual_target",
            "visual_mask",
            "visual_weak",
            "visual_other_density",
            "effect",
            "window",
            "element",
        }
    )

    type: Literal["tool_use"] = "tool_use"
    """The block's tag."""
    id: str
    """Unique id; the matching ``tool_result`` names it in ``tool_use_id``."""
    name: str
    """Tool name (``computer``), or the action for a toolset member (``left_click``)."""
    input: dict[str, Any] = Field(default_factory=dict)
    """The tool's arguments."""
    toolset_name: str | None = None
    """For a toolset member, the toolset family (``computer``)."""
    cache_control: CacheControl | None = None
    """Optional prompt-cache breakpoint."""
    visual_representation: str | None = None
    """Cache-only: hex perceptual hash of the screen region before this step, or ``None``."""
    visual_detail: str | None = None
    """Cache-only: hex hash of the smaller, finer "detail" region at the same point, when the
    file's validation has one (format version 2 on)."""
    effect: StepEffect | None = None
    """Cache-only: the tiles this action changed near its point when recorded, before and
    after (format version 3 on; :mod:`askcache.foundation.screen.thumbnails`)."""
    replayed: bool = Field(False, exclude=True)
    """Set on calls a replay emits (never stored or sent): the computer tool then skips its
    fixed settle delay, because the replay waits for the screen itself."""
    visual_tone: str | None = None
    """Cache-only: mean and contrast of the main and detail regions' grey levels, as hex
    (:mod:`askcache.foundation.screen.tone`), when the file's validation checks tone (format version
    3 on)."""
    visual_target: str | None = None
    """Cache-only: the box of the element under the point, when it is larger than the main
    region, with its background level and ink map (:mod:`askcache.foundation.screen.target`); format
    version 3 on."""
    visual_weak: str | None = None
    """Cache-only: the hashes' bits that noise decided on the recorded screen,
    ``"<main hex>;<detail hex>"`` (:func:`askcache.foundation.screen.hashing.weak_bits`), when the
    file's check has noise floors: only these may be forgiven at replay."""
    visual_other_density: str | None = None
    """Cache-only: the hash of a region around the point (its own size) for screens drawn at
    another pixel density and
    its weak bits, ``"<hash hex>;<weak hex>"`` (the weak part empty without a noise floor),
    when the file's check has ``other_density``."""
    visual_mask: str | None = None
    """Cache-only: what varied at this step across repeat runs and is ignored: hash bits,
    ink columns, raised tone tolerances (:mod:`askcache.fingerprint.masks`); format version 3 on."""
    window: WindowFrame | None = None
    """Cache-only: the top-level window under the step's point (its anchor, for a step
    without one) when recorded: frame, class and title, in the screenshot's pixels; the
    point relative to the window is the point minus the frame's origin. A replay finds the
    window where it is now and checks the step there (:mod:`askcache.foundation.screen.windows`).
    Optional: absent where no window information was available."""
    element: StepElement | None = None
    """Cache-only: the element under the step's point when recorded: what the accessibility
    tree said of it, its label's text as OCR read it, and its look
    (:mod:`askcache.foundation.screen.elements`). A replay checks it beside the pixels
    (:mod:`askcache.replay.element_check`). Optional: absent where neither was available."""


class ToolResultBlockParam(ApiModel):
    """The result of executing a tool call, usually text and a screenshot."""

    type: Literal["tool_result"] = "tool_result"
    """The block's tag."""
    tool_use_id: str
    """Id of the ``tool_use`` this answers."""
    content: str | list[ToolResultContent] = Field(default_factory=list)
    """Text, or a list of text and image blocks."""
    is_error: bool | None = None
    """True when the tool failed; the text says why."""
    toolset_name: str | None = None
    """For a toolset member, the toolset family of the paired ``tool_use``."""
    cache_control: CacheControl | None = None
    """Optional prompt-cache breakpoint."""


class ThinkingBlockParam(ApiModel):
    """The model's extended thinking, sent back unchanged in later turns."""

    type: Literal["thinking"] = "thinking"
    """The block's tag."""
    thinking: str
    """The thinking text."""
    signature: str
    """The API's signature over the thinking text."""


class RedactedThinkingBlockParam(ApiModel):
    """Thinking the API returned encrypted; sent back unchanged."""

    type: Literal["redacted_thinking"] = "redacted_thinking"
    """The block's tag."""
    data: str
    """The opaque encrypted data."""


ToolResultContent = Annotated[TextBlockParam | ImageBlockParam, Field(discriminator="type")]
"""What a tool result may contain: text and images."""

ContentBlockParam = Annotated[
    TextBlockParam
    | ImageBlockParam
    | ToolUseBlockParam
    | ToolResultBlockParam
    | ThinkingBlockParam
    | RedactedThinkingBlockParam,
    Field(discriminator="type"),
]
"""Any block of a message's content, discriminated by ``type``."""


class MessageParam(ApiModel):
    """One turn of the conversation.

    ``stop_reason`` and ``usage`` are cache-side: set on messages produced by a model call,
    absent on messages replayed from a cache, never sent to the API.
    """

    cache_only_fields: ClassVar[frozenset[str]] = frozenset({"stop_reason", "usage"})

    role: Literal["user", "assistant"]
    """Who speaks."""
    content: str | list[ContentBlockParam]
    """Text, or a list of blocks."""
    stop_reason: str | None = None
    """Cache-only: why the model stopped (``tool_use``, ``end_turn``, ...)."""
    usage: Usage | None = None
    """Cache-only: tokens of the model call that produced this message."""

    @property
    def blocks(self) -> list[ContentBlockParam]:
        """The content as a list of blocks (a string becomes one text block)."""
        if isinstance(self.content, str):
            return [TextBlockParam(text=self.content)]
        return self.content

    @property
    def tool_uses(self) -> list[ToolUseBlockParam]:
        """The tool_use blocks of this message, in order."""
        return [b for b in self.blocks if isinstance(b, ToolUseBlockParam)]

    @property
    def tool_results(self) -> list[ToolResultBlockParam]:
        """The tool_result blocks of this message, in order."""
        return [b for b in self.blocks if isinstance(b, ToolResultBlockParam)]


_MESSAGES = TypeAdapter(list[MessageParam])


def messages_for_api(messages: list[MessageParam]) -> list[dict[str, Any]]:
    """Dump messages as the Messages API accepts them: cache-only fields and ``None`` dropped."""
    dumped: list[dict[str, Any]] = _MESSAGES.dump_python(
        messages, mode="json", context={"for_api": True}
    )
    return dumped


class _SdkBlock(Protocol):
    type: str

    def model_dump(self, *, mode: str = ...) -> dict[str, Any]: ...


class _SdkUsage(Protocol):
    def model_dump(self, *, mode: str = ...) -> dict[str, Any]: ...


class _SdkMessage(Protocol):
    @property
    def content(self) -> Any: ...
    @property
    def stop_reason(self) -> str | None: ...
    @property
    def usage(self) -> _SdkUsage: ...


_FROM_SDK: dict[str, tuple[type[ApiModel], tuple[str, ...]]] = {
    "text": (TextBlockParam, ("text",)),
    "tool_use": (ToolUseBlockParam, ("id", "name", "input", "toolset_name")),
    "thinking": (ThinkingBlockParam, ("thinking", "signature")),
    "redacted_thinking": (RedactedThinkingBlockParam, ("data",)),
}


def message_from_sdk(message: _SdkMessage) -> MessageParam:
    """Convert an SDK response (``anthropic.types.Message`` or its beta twin) into a message.

    Keeps ``stop_reason`` and ``usage`` as cache-side fields.

    Raises:
        AskCacheError: the response holds a block type askcache does not handle.
    """
    blocks: list[ContentBlockParam] = []
    for block in message.content:
        kind = getattr(block, "type", None)
        if kind not in _FROM_SDK:
            raise AskCacheError(
                f"model response holds a {kind!r} block; askcache handles "
                f"{', '.join(sorted(_FROM_SDK))}"
            )
        model, fields = _FROM_SDK[kind]
        raw = block.model_dump(mode="json")
        blocks.append(model.model_validate({k: raw.get(k) for k in fields if k in raw}))  # type: ignore[arg-type]
    usage = Usage.model_validate(
        {k: v for k, v in message.usage.model_dump(mode="json").items() if v is not None}
    )
    return MessageParam(
        role="assistant", content=blocks, stop_reason=message.stop_reason, usage=usage
    )
