"""The loop: run the current speaker, execute its tool calls, switch speakers, stop; and
the protocol of those who take turns in it (:class:`Speaker`, :class:`SpeakerResult`).

The message list is the single source of truth: speakers read it, tool results are
appended to it, recording reads it at the end. The loop knows nothing of caching: two
hooks let others watch it (``before_tool``, called before each tool call runs, and
``after_turn``, called after each turn whose tools ran, which may hand the next turn to
another speaker).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from askcache.foundation.errors import AskCacheError
from askcache.foundation.messages import MessageParam, ToolUseBlockParam, Usage
from askcache.tools.tool import ToolCollection

BeforeTool = Callable[[ToolUseBlockParam, Sequence[MessageParam]], None]
"""Called with a tool call and the history before the call runs."""
AfterTurn = Callable[["Conversation"], str | None]
"""Called after a turn whose tool calls ran; may name the speaker that takes the next turn."""

__all__ = [
    "Conversation",
    "ConversationResult",
    "Speaker",
    "SpeakerResult",
    "SpeakerStatus",
]

logger = logging.getLogger(__name__)


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
    run_as: dict[str, ToolUseBlockParam] = field(default_factory=dict)
    """Tool calls of ``messages`` to run otherwise than the history keeps them, by call id:
    a replayed step typing a secret is kept with the secret's placeholder (the model never
    sees the value) and runs with its value (:mod:`askcache.replay.transcript`)."""


class Speaker(Protocol):
    """Anything that can take a turn in a :class:`~askcache.conversation.turns.Conversation`."""

    name: str
    """Unique name within the conversation."""

    def handle_step(self, conversation: Conversation) -> SpeakerResult:
        """Take one turn."""
        ...


@dataclass
class ConversationResult:
    """How a conversation ended and what it cost."""

    status: Literal["done", "failed", "max_turns"]
    """``done``: the task finished; ``failed``: a speaker gave up; ``max_turns``: cut off."""
    reason: str | None
    """Why it ended."""
    messages: list[MessageParam]
    """The whole history."""
    model_calls: int
    """Calls to the model (messages carrying usage)."""
    usage: Usage
    """Tokens of those calls."""
    seconds: float
    """Wall time."""
    recorded_file: str | None = None
    """Name of the cache file written by recording, if any (set by the agent)."""
    speakers_seen: list[str] = field(default_factory=list)
    """Speakers that took turns, in order of first turn."""


TURNS_PER_MODEL_TURN = 100
"""The backstop on turns of any speaker: ``max_turns`` times this many (a replay of up to
10,000 steps with the default ``max_turns``)."""


class Conversation:
    """Runs speakers and tools until a speaker says done or failed, or ``max_turns`` turns
    called the model: a turn with no model call (a replayed step) does not count, so a long
    replay is never cut off by the limit meant for the model."""

    def __init__(
        self,
        speakers: Iterable[Speaker],
        tools: ToolCollection,
        *,
        first_speaker: str | None = None,
        before_tool: BeforeTool | None = None,
        after_turn: Sequence[AfterTurn] = (),
        max_turns: int = 100,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.speakers = {speaker.name: speaker for speaker in speakers}
        if not self.speakers:
            raise AskCacheError("a conversation needs at least one speaker")
        self.current = first_speaker or next(iter(self.speakers))
        self._require_speaker(self.current)
        self.tools = tools
        self.before_tool = before_tool
        self.after_turn = list(after_turn)
        self.max_turns = max_turns
        self.messages: list[MessageParam] = []
        self._clock = clock

    def _require_speaker(self, name: str | None) -> str:
        if name not in self.speakers:
            raise AskCacheError(f"no speaker named {name!r}; speakers: {', '.join(self.speakers)}")
        return name

    def append(self, message: MessageParam) -> None:
        """Add a message to the history."""
        self.messages.append(message)

    def run(self, goal: str) -> ConversationResult:
        """Start with ``goal`` as the user's message and run until the end."""
        started = self._clock()
        self.append(MessageParam(role="user", content=goal))
        seen: list[str] = []
        status: Literal["done", "failed", "max_turns"] = "max_turns"
        reason: str | None = f"stopped after {self.max_turns} turns that called the model"
        model_turns = 0
        for _ in range(self.max_turns * TURNS_PER_MODEL_TURN):
            if model_turns >= self.max_turns:
                break
            if self.current not in seen:
                seen.append(self.current)
            result = self.speakers[self.current].handle_step(self)
            model_turns += any(m.usage is not None for m in result.messages)
            for message in result.messages:
                self.append(message)
            handoff = self._run_tools(result)
            if result.status in ("done", "failed") and handoff is None:
                status, reason = result.status, result.reason
                break
            if handoff is None and result.status == "continue" and self.messages[-1].tool_results:
                handoff = self._watchers_handoff()
            if handoff is not None:
                self.current = self._require_speaker(handoff)
            elif result.status == "switch_speaker":
                logger.info("switching to %s: %s", result.next_speaker, result.reason)
                self.current = self._require_speaker(result.next_speaker)
        calls = [m.usage for m in self.messages if m.usage is not None]
        return ConversationResult(
            status=status,
            reason=reason,
            messages=self.messages,
            model_calls=len(calls),
            usage=sum(calls, Usage()),
            seconds=self._clock() - started,
            speakers_seen=seen,
        )

    def _run_tools(self, result: SpeakerResult) -> str | None:
        """Execute the tool calls of the last message if it is the speaker's; return a handoff."""
        if not result.messages or self.messages[-1].role != "assistant":
            return None
        calls = self.messages[-1].tool_uses
        if not calls:
            return None
        handoff = None
        results = []
        for shown in calls:
            call = result.run_as.get(shown.id, shown)
            if self.before_tool is not None:
                self.before_tool(call, self.messages)
            block, wanted = self.tools.run(call)
            results.append(block)
            handoff = wanted or handoff
        self.append(MessageParam(role="user", content=list(results)))
        return handoff

    def _watchers_handoff(self) -> str | None:
        for watcher in self.after_turn:
            wanted = watcher(self)
            if wanted is not None and wanted != self.current:
                logger.info("%s takes the next turn", wanted)
                return wanted
        return None
