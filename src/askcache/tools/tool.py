"""Tools the model (or a replay) can call, and the collection that runs them.

A :class:`Tool` turns one tool_use block into a :class:`ToolOutput`; the
:class:`ToolCollection` finds the tool for a block, runs it, and turns every failure into an
``is_error`` tool result the model can read: a tool never crashes the conversation. The text
of every result has registered secrets masked (:func:`~askcache.foundation.redaction.redact`): an
input backend's error often quotes the text it failed to type, and the result goes to the model.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from askcache.foundation.messages import (
    TextBlockParam,
    ToolResultBlockParam,
    ToolResultContent,
    ToolUseBlockParam,
)
from askcache.foundation.redaction import redact

__all__ = ["Tool", "ToolCollection", "ToolOutput"]

logger = logging.getLogger(__name__)


@dataclass
class ToolOutput:
    """What a tool returns."""

    content: list[ToolResultContent] = field(default_factory=list)
    """Text and image blocks for the tool_result."""
    is_error: bool = False
    """True when the call failed; ``content`` says why."""
    handoff_to: str | None = None
    """Name of the speaker that should take the next turn (``None``: no change)."""

    @classmethod
    def text(
        cls, text: str, *, is_error: bool = False, handoff_to: str | None = None
    ) -> ToolOutput:
        """A text-only output."""
        return cls([TextBlockParam(text=text)], is_error=is_error, handoff_to=handoff_to)


class Tool(ABC):
    """A tool offered to the model."""

    name: str
    """The tool's name as the model sees it."""

    @abstractmethod
    def to_params(self) -> dict[str, Any]:
        """The tool's entry for the Messages API's ``tools`` list."""

    def betas(self) -> list[str]:
        """Beta flags the API needs for this tool (none by default)."""
        return []

    def handles(self, block: ToolUseBlockParam) -> bool:
        """True when this tool executes ``block``."""
        return block.name == self.name and block.toolset_name is None

    @abstractmethod
    def run(self, block: ToolUseBlockParam) -> ToolOutput:
        """Execute the call. Raise or return ``is_error`` output on failure."""


class ToolCollection:
    """The tools of one conversation."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self.tools: list[Tool] = list(tools)

    def add(self, tool: Tool) -> None:
        """Offer one more tool."""
        self.tools.append(tool)

    def params(self) -> list[dict[str, Any]]:
        """The ``tools`` list for the Messages API."""
        return [tool.to_params() for tool in self.tools]

    def betas(self) -> list[str]:
        """Beta flags needed by any tool, without repeats, in order."""
        return list(dict.fromkeys(beta for tool in self.tools for beta in tool.betas()))

    def find(self, block: ToolUseBlockParam) -> Tool | None:
        """The tool that executes ``block``, if any."""
        return next((tool for tool in self.tools if tool.handles(block)), None)

    def run(self, block: ToolUseBlockParam) -> tuple[ToolResultBlockParam, str | None]:
        """Execute ``block``; return its tool_result and the speaker to hand off to, if any."""
        tool = self.find(block)
        if tool is None:
            names = ", ".join(t.name for t in self.tools) or "none"
            output = ToolOutput.text(
                f"Unknown tool {block.name!r}; available tools: {names}.", is_error=True
            )
        else:
            try:
                output = tool.run(block)
            except Exception as exc:  # a tool failure is reported to the model, not raised
                logger.exception("tool %s failed on %s", tool.name, block.id)
                output = ToolOutput.text(
                    f"Tool {tool.name!r} failed: {type(exc).__name__}: {exc}", is_error=True
                )
        result = ToolResultBlockParam(
            tool_use_id=block.id,
            content=[_masked(item) for item in output.content],
            is_error=True if output.is_error else None,
            toolset_name=block.toolset_name,
        )
        return result, output.handoff_to


def _masked(content: ToolResultContent) -> ToolResultContent:
    """``content`` with registered secrets masked from its text (images as they are)."""
    if isinstance(content, TextBlockParam):
        text = redact(content.text)
        return content if text == content.text else content.model_copy(update={"text": text})
    return content
