"""Model prices, used to turn the run ledger's token counts into dollars (``askcache stats``).

The table is Anthropic's published list price per million tokens, in US dollars, for the
models it names, as of :data:`PRICES_AS_OF`. It is a default: your contract, batch or
regional pricing differ, and newer models are not in it. ``askcache stats --price
MODEL=INPUT,OUTPUT`` (dollars per million tokens) adds or overrides a row; a model matched
by no row gets no dollar figure rather than a guess.

A model name matches the row with the longest name it starts with, so dated snapshots
(``claude-sonnet-4-5-20250929``) take their family's price. Rows are as narrow as that needs:
``claude-opus-4-2`` (for ``claude-opus-4-20250514``), not ``claude-opus-4``, so that a model
the table does not list (``claude-opus-4-8``) gets no price instead of an older one.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict

from askcache.foundation.usage import Usage

__all__ = ["PRICES", "PRICES_AS_OF", "ModelPrice", "parse_price", "price_for"]


class ModelPrice(BaseModel):
    """Dollars per million tokens of one model."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    input: float
    """Input tokens (prompt, screenshots)."""
    output: float
    """Output tokens."""
    cache_write: float | None = None
    """Prompt-cache writes; ``None``: 1.25 x input."""
    cache_read: float | None = None
    """Prompt-cache reads; ``None``: 0.1 x input."""

    def cost(self, usage: Usage) -> float:
        """Dollars of ``usage`` at this price."""
        write = self.cache_write if self.cache_write is not None else self.input * 1.25
        read = self.cache_read if self.cache_read is not None else self.input * 0.1
        return (
            usage.input_tokens * self.input
            + usage.output_tokens * self.output
            + usage.cache_creation_input_tokens * write
            + usage.cache_read_input_tokens * read
        ) / 1_000_000

    def saved(self, tokens: int) -> float:
        """Dollars of ``tokens`` a replay did not spend, priced as input tokens: most of a
        computer-use call is its screenshots and history, and the ledger keeps only the
        total, so this is a lower bound."""
        return tokens * self.input / 1_000_000


PRICES_AS_OF = "2026-11"
"""When the list prices below were copied (the model pages of platform.claude.com)."""

PRICES: Mapping[str, ModelPrice] = {
    "claude-opus-5-5": ModelPrice(input=4.0, output=20.0),
    "claude-opus-5": ModelPrice(input=5.0, output=25.0),
    "claude-sonnet-5-5": ModelPrice(input=2.0, output=10.0),
    "claude-sonnet-5": ModelPrice(input=2.0, output=10.0),
    "claude-opus-4-6": ModelPrice(input=5.0, output=25.0),
    "claude-sonnet-4-6": ModelPrice(input=3.0, output=15.0),
    "claude-opus-4-5": ModelPrice(input=5.0, output=25.0),
    "claude-opus-4-1": ModelPrice(input=15.0, output=75.0),
    "claude-opus-4-0": ModelPrice(input=15.0, output=75.0),
    "claude-opus-4-2": ModelPrice(input=15.0, output=75.0),  # claude-opus-4-20250514
    "claude-sonnet-4-5": ModelPrice(input=3.0, output=15.0),
    "claude-sonnet-4-0": ModelPrice(input=3.0, output=15.0),
    "claude-sonnet-4-2": ModelPrice(input=3.0, output=15.0),  # claude-sonnet-4-20250514
    "claude-3-7-sonnet": ModelPrice(input=3.0, output=15.0),
    "claude-haiku-4-5": ModelPrice(input=1.0, output=5.0),
    "claude-3-5-haiku": ModelPrice(input=0.8, output=4.0),
}
"""List prices by model name prefix (dollars per million tokens)."""


def price_for(
    model: str | None, extra: Mapping[str, ModelPrice] | None = None
) -> ModelPrice | None:
    """The price of ``model``: the longest matching prefix in ``extra``, then in
    :data:`PRICES`; ``None`` when the model is unknown."""
    if not model:
        return None
    for table in (extra or {}, PRICES):
        matches = [name for name in table if model.startswith(name)]
        if matches:
            return table[max(matches, key=len)]
    return None


def parse_price(text: str) -> tuple[str, ModelPrice]:
    """``MODEL=INPUT,OUTPUT`` (dollars per million tokens) as a table row.

    Raises:
        ValueError: the text is not of that form (the message says what was expected).
    """
    model, sep, numbers = text.partition("=")
    parts = numbers.split(",")
    if not sep or not model.strip() or len(parts) != 2:
        raise ValueError(f"expected MODEL=INPUT,OUTPUT (dollars per million tokens), got {text!r}")
    try:
        low, high = (float(part) for part in parts)
    except ValueError as exc:
        raise ValueError(f"prices must be numbers, got {numbers!r}") from exc
    if low < 0 or high < 0:
        raise ValueError(f"prices cannot be negative, got {numbers!r}")
    return model.strip(), ModelPrice(input=low, output=high)
