"""Token counts of a model call: :class:`Usage` (kept apart from the Messages models of
:mod:`askcache.foundation.messages`, which re-exports it, so that the run ledger and the
commands that read it alone need none of those)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Usage"]


class Usage(BaseModel):
    """Token counts of one model call (cache-side bookkeeping)."""

    model_config = ConfigDict(extra="ignore")

    input_tokens: int = Field(0, ge=0)
    """Uncached input tokens."""
    output_tokens: int = Field(0, ge=0)
    """Generated tokens."""
    cache_creation_input_tokens: int = Field(0, ge=0)
    """Input tokens written to Anthropic's prompt cache."""
    cache_read_input_tokens: int = Field(0, ge=0)
    """Input tokens read from Anthropic's prompt cache."""

    @property
    def total_tokens(self) -> int:
        """All input and output tokens of the call."""
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_creation_input_tokens
            + self.cache_read_input_tokens
        )

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens
            + other.cache_creation_input_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
        )
