"""The model's speaker, watched: each model call told to the run's observer
(:mod:`askcache.replay.observers`), with its time, its tokens and how it stopped.

:meth:`Agent.act <askcache.agent.act.Agent.act>` puts it around its
:class:`~askcache.conversation.speakers.AgentSpeaker` only when something watches the run.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from askcache.conversation.speakers import AgentSpeaker
from askcache.conversation.turns import Conversation, SpeakerResult
from askcache.foundation.messages import Usage
from askcache.replay.observers import ModelCall, ModelRequest, RunObserver

__all__ = ["WatchedSpeaker"]


class WatchedSpeaker:
    """``speaker``, telling ``observer`` of each call it makes.

    Args:
        speaker: The model's speaker.
        observer: Who is told.
        handed_back: True once a replay of the run has handed back (the call is then one of
            the model's turns after a hand-back).
    """

    def __init__(
        self, speaker: AgentSpeaker, observer: RunObserver, handed_back: Callable[[], bool]
    ) -> None:
        self.speaker = speaker
        self.name = speaker.name
        self.observer = observer
        self._handed_back = handed_back

    def handle_step(self, conversation: Conversation) -> SpeakerResult:
        after = self._handed_back()
        speaker = self.speaker
        self.observer.calling(ModelRequest(speaker.model, speaker.max_tokens, after))
        started = time.time_ns()
        try:
            result = self.speaker.handle_step(conversation)
        except Exception as exc:
            self._tell(started, None, None, type(exc).__qualname__, after)
            raise
        answer = next((m for m in result.messages if m.usage is not None), None)
        self._tell(
            started,
            answer.usage if answer is not None else None,
            answer.stop_reason if answer is not None else None,
            None,
            after,
        )
        return result

    def _tell(
        self,
        started: int,
        usage: Usage | None,
        stop_reason: str | None,
        error: str | None,
        after: bool,
    ) -> None:
        self.observer.model_call(
            ModelCall(
                model=self.speaker.model,
                max_tokens=self.speaker.max_tokens,
                started_ns=started,
                ended_ns=time.time_ns(),
                usage=usage,
                stop_reason=stop_reason,
                error=error,
                after_handback=after,
            )
        )
