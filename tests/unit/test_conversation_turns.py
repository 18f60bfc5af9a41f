"""``max_turns`` counts the turns that call the model, not replayed steps."""

from __future__ import annotations

from dataclasses import dataclass

from askcache.conversation.turns import Conversation, SpeakerResult
from askcache.foundation.messages import MessageParam, TextBlockParam, Usage
from askcache.replay import CacheExecutor
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.testing import SimulatedFormApp
from askcache.tools import ComputerTool, ToolCollection
from tests.helpers import GOAL, record_form


@dataclass
class _ThinkingModel:
    """A stand-in for a model speaker: every turn is a model call (it carries usage) that
    says it is still thinking; it never ends the task."""

    name: str = "agent"
    calls: int = 0

    def handle_step(self, conversation: Conversation) -> SpeakerResult:
        self.calls += 1
        message = MessageParam(
            role="assistant",
            content=[TextBlockParam(text="still thinking")],
            usage=Usage(input_tokens=10, output_tokens=2),
        )
        return SpeakerResult("continue", [message])


def test_a_replay_longer_than_max_turns_is_not_cut_off(storage: LocalCacheStorage) -> None:
    record_form(storage)
    executor = CacheExecutor(sleep=lambda s: None)
    executor.activate_cache_execution(load_cache_file(storage, "form.json"), "form.json")
    app = SimulatedFormApp()
    model = _ThinkingModel()
    conversation = Conversation(
        [executor, model],
        ToolCollection([ComputerTool(app)]),
        first_speaker=executor.name,
        max_turns=2,
    )
    result = conversation.run(GOAL)
    replay = executor.result
    assert replay is not None
    assert (replay.status, replay.steps_run) == ("completed", 4)  # more turns than max_turns
    assert app.saved == [{"name": "Ada Lovelace", "email": ""}]
    assert (result.status, result.model_calls, model.calls) == ("done", 0, 0)


def test_the_model_is_stopped_after_max_turns_calls() -> None:
    model = _ThinkingModel()
    conversation = Conversation([model], ToolCollection([]), max_turns=3)
    result = conversation.run(GOAL)
    assert (result.status, result.model_calls, model.calls) == ("max_turns", 3, 3)
    assert result.reason == "stopped after 3 turns that called the model"
