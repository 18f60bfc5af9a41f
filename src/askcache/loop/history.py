"""The user's message list and askcache's parsed twin of it, kept in step.

The user's loop keeps its history as the Messages API takes it (dicts, as Anthropic's
reference loop does, or askcache's :class:`~askcache.foundation.messages.MessageParam`). askcache
appends the replayed steps, their results and a hand-back message to that same list, so the
loop continues from it as it is; its parsed twin keeps what the API form leaves out (which
calls were replayed, and the fingerprints they were checked with), for healing and the ledger.

Prompt-cache breakpoints: a loop in the reference loop's shape marks its latest three user
turns with ``cache_control`` before each model call and clears the fourth, counting on one
new user turn per call. askcache appends several between two calls (the replayed steps and
their results, the hand-back message), so the marks of the call before would stay, out of
that loop's reach, until a request carries more than the API's four. When askcache first
appends after the loop's own turn, it removes ``cache_control`` from every block of the list
(the blocks of tool results too) and keeps it out of what it appends: the loop marks the
turns it wants again before its next call, and a request never carries the old marks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from askcache.foundation.messages import MessageParam, Usage
from askcache.loop.usage_errors import LoopUsageError, one_line

__all__ = ["History", "MessageLike", "drop_breakpoints", "parse_messages"]

MessageLike = Mapping[str, Any] | MessageParam
"""A message as the user's loop keeps it: a dict in the Messages API's shape, or a
:class:`~askcache.foundation.messages.MessageParam`."""


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
        self._left_at = -1
        """The list's length when askcache last appended to it (-1: never)."""
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
        ``as_given`` when the loop handed it in). The first append after the loop's own
        turn removes the prompt-cache breakpoints of the list (see the module docstring)."""
        if len(self.user) != self._left_at:
            for earlier in [*self.user, *self.parsed]:
                drop_breakpoints(earlier)
        self.parsed.append(message)
        if isinstance(self.user[0], MessageParam):
            self.user.append(message)
        elif as_given is not None:
            self.user.append(as_given)
        else:
            self.user.append(message.model_dump(mode="json", context={"for_api": True}))
        drop_breakpoints(message)
        drop_breakpoints(self.user[-1])
        self._left_at = len(self.user)


def drop_breakpoints(message: Any) -> None:
    """Remove ``cache_control`` from the blocks of ``message`` (a dict in the API's shape or
    a :class:`MessageParam`) and from the blocks inside its tool results, in place."""
    content = (
        message.get("content")
        if isinstance(message, Mapping)
        else getattr(message, "content", None)
    )
    if not isinstance(content, list):
        return
    for block in content:
        _drop(block)
        inner = (
            block.get("content") if isinstance(block, Mapping) else getattr(block, "content", None)
        )
        for item in inner if isinstance(inner, list) else []:
            _drop(item)


def _drop(block: Any) -> None:
    if isinstance(block, dict):
        block.pop("cache_control", None)
    elif getattr(block, "cache_control", None) is not None:
        block.cache_control = None
