"""What askcache says when your own loop uses it out of order (:mod:`askcache.loop`).

Each error names the problem and, where there is one, the action it concerns; all are
:class:`~askcache.foundation.errors.AskCacheError` and :class:`LoopUsageError`.
"""

from __future__ import annotations

from pydantic import ValidationError

from askcache.foundation.errors import AskCacheError

__all__ = [
    "InvalidToolResultError",
    "LoopUsageError",
    "NotAScreenshotError",
    "ReplayOverError",
    "ToolResultOrderError",
    "UnknownToolResultError",
    "one_line",
]


def one_line(error: Exception) -> str:
    """What is wrong, on one line: each field of a validation error with its problem."""
    if not isinstance(error, ValidationError):
        return str(error)
    return "; ".join(
        f"{'.'.join(str(part) for part in item['loc']) or 'the value'}: {item['msg']}"
        for item in error.errors()
    )


class LoopUsageError(AskCacheError, RuntimeError):
    """The loop used :class:`~askcache.loop.LoopReplay` out of its order."""


class ToolResultOrderError(LoopUsageError):
    """A call came out of order: the next action was asked for while the last one's result
    was still missing, or a result came when no action was waiting for one."""


class ReplayOverError(LoopUsageError):
    """The loop called on after the replay handed back, finished, or after ``done()``."""


class InvalidToolResultError(LoopUsageError, ValueError):
    """What was handed to ``tool_result()`` is not a tool_result block askcache can use."""


class UnknownToolResultError(InvalidToolResultError):
    """A tool result for an action askcache did not give (another ``tool_use_id``)."""

    def __init__(self, got: str, expected: str, action: str) -> None:
        super().__init__(
            f"tool result for {got!r}, but the action askcache gave is {expected!r} ({action}): "
            "hand tool_result() the result of that action"
        )
        self.got = got
        """The ``tool_use_id`` handed in."""
        self.expected = expected
        """The ``tool_use_id`` of the action waiting for its result."""


class NotAScreenshotError(InvalidToolResultError):
    """The result's screenshot is missing where one was asked for, or is not an image."""

    def __init__(self, tool_use_id: str, message: str) -> None:
        super().__init__(message)
        self.tool_use_id = tool_use_id
        """The ``tool_use_id`` of the result."""
