"""The user's message list and askcache's parsed twin of it, kept in step.

The user's loop keeps its history as the Messages API takes it (dicts, as Anthropic's
reference loop does, or askcache's :class:`~askcache.messages.MessageParam`). askcache
appends the replayed steps, their results and a hand-back message to that same list, so the
loop continues from it as it is; its parsed twin keeps what the API form leaves out (which
calls were replayed, and the fingerprints they were checked with), for healing and the ledger.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from askcache.loop.errors import LoopUsageError, one_line
from askcache.messages import MessageParam, Usage

__all__ = ["History", "MessageLike", "parse_messages"]

MessageLike = Mapping[str, Any] | MessageParam
"""A message as the user's loop keeps it: a dict in the Messages API's shape, or a
:class:`~askcache.messages.MessageParam`."""


def parse_message(message: MessageLike, where: str) -> MessageParam:
    """``message`` as a :class:`MessageParam`. A model's message from a dict counts as one
    model call (its tokens are not known: the API form does not carry them).

    Raises:
        LoopUsageError: it is not a message in the Messages API's shape (says which field).
    """
    if isinstance(message, MessageParam):
        return message
    try:
        parsed = MessageParam.model_validate(dict(message))
    except (ValidationError, TypeError, ValueError) as exc:
        raise LoopUsageError(
            f"{where} is not a message of the Messages API: {one_line(exc)}"
        ) from exc
    if parsed.role == "assistant" and parsed.usage is None:
        parsed = parsed.model_copy(update={"usage": Usage()})
    return parsed


def parse_messages(messages: Sequence[MessageLike]) -> list[MessageParam]:
    """Every message of ``messages`` parsed (:func:`parse_message`)."""
    return [parse_message(message, f"message {index}") for index, message in enumerate(messages)]


class History:
    """The user's list (``user``) and its parsed twin (``parsed``), of the same length."""

    def __init__(self, messages: list[Any]) -> None:
        if not isinstance(messages, list):
            raise LoopUsageError(
                f"messages must be your loop's list of messages, not {type(messages).__name__}"
            )
        self.user: list[Any] = messages
        self.parsed = parse_messages(messages)
        if not self.parsed or self.parsed[0].role != "user":
            raise LoopUsageError("messages must start with the user's message stating the task")

    def follow(self, messages: list[Any] | None) -> list[MessageParam]:
        """Take in the messages the loop appended since askcache last looked (``messages``:
        the list the loop continues with; ``None``: the same list as before); returns the
        parsed history.

        Raises:
            LoopUsageError: the list is shorter than what askcache appended to it.
        """
        if messages is not None and messages is not self.user:
            self.user = messages
        known = len(self.parsed)
        if len(self.user) < known:
            raise LoopUsageError(
                f"messages holds {len(self.user)} messages, fewer than the {known} askcache "
                "knows: pass the list your loop continues with, as askcache left it"
            )
        for index in range(known, len(self.user)):
            self.parsed.append(parse_message(self.user[index], f"message {index}"))
        return self.parsed

    def append(self, message: MessageParam, as_given: Any = None) -> None:
        """Append ``message`` to both lists (to the user's in the API's shape, or
        ``as_given`` when the loop handed it in)."""
        self.parsed.append(message)
        if isinstance(self.user[0], MessageParam):
            self.user.append(message)
        elif as_given is not None:
            self.user.append(as_given)
        else:
            self.user.append(message.model_dump(mode="json", context={"for_api": True}))
