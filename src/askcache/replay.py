"""Replay: the :class:`CacheExecutor` speaker, step by step, checking the screen first.

Each turn the executor takes the next cached step and, when the step carries a visual
representation, checks the latest screenshot in the history around the step's point. If the
history holds no screenshot taken after the last action, it first asks for one (a
``screenshot`` call through the conversation's own computer tool). A match emits the step
with a fresh id; a mismatch, a failed tool call or a changed screen size stops the replay,
tells the model why in plain words, and hands the turn to the agent.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from askcache.actions import ToolShape, action_anchors, make_tool_use, new_tool_use_id, parse_action
from askcache.cache_file import CacheFile
from askcache.errors import AskCacheError, CacheParameterError
from askcache.messages import MessageParam, TextBlockParam, ToolUseBlockParam
from askcache.parameters import placeholders_in, substitute
from askcache.settings import CacheExecutionSettings
from askcache.speakers import AGENT_SPEAKER, SpeakerResult
from askcache.storage import CacheStorage, save_cache_file
from askcache.visual import (
    VisualCheck,
    check_step_representation,
    decode_screenshot,
    find_recent_screenshot_block,
)

if TYPE_CHECKING:
    from askcache.conversation import Conversation

__all__ = ["CACHE_EXECUTOR", "CacheExecutor", "ReplayResult", "StepRecord"]

logger = logging.getLogger(__name__)

CACHE_EXECUTOR = "cache_executor"
"""Default name of the replay speaker."""


class StepRecord(BaseModel):
    """What happened to one step during a replay."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    step_index: int
    """Index in the trajectory."""
    action: str
    """Action or tool name."""
    validated: bool
    """True when the screen was checked before the step."""
    matched: bool | None = None
    """Outcome of the check (``None``: not checked)."""
    distance: int | None = None
    """Hamming distance found, when checked."""
    threshold: int | None = None
    """Threshold applied, when checked."""
    note: str | None = None
    """Why the step was not checked, or what the check said."""


class ReplayResult(BaseModel):
    """The readable outcome of one replay."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    cache_file: str
    """Name of the replayed cache file."""
    status: Literal["running", "completed", "handed_back"] = "running"
    """``completed``: every step ran; ``handed_back``: stopped, the agent took over."""
    steps_total: int
    """Steps in the trajectory."""
    start_step: int = 0
    """Index of the first replayed step."""
    steps_run: int = 0
    """Steps emitted for execution."""
    validated: int = 0
    """Steps whose screen was checked and matched."""
    unvalidated: int = 0
    """Steps executed without a check (no stored hash, no screenshot, or checks skipped)."""
    screenshots_taken: int = 0
    """Extra screenshots requested because the history had none after the last action."""
    steps: list[StepRecord] = Field(default_factory=list)
    """Per step: checked or not, distance vs threshold."""
    stopped_at_step: int | None = None
    """Index of the step that was not executed, when handed back."""
    reason: str | None = None
    """Why the replay stopped early."""


class CacheExecutor:
    """The replay speaker. Activate it with a cache file, then let the conversation run it."""

    def __init__(
        self,
        storage: CacheStorage,
        *,
        name: str = CACHE_EXECUTOR,
        agent_speaker: str = AGENT_SPEAKER,
        tool_shape: ToolShape = "tool",
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.storage = storage
        self.name = name
        self.agent_speaker = agent_speaker
        self.tool_shape = tool_shape
        self._sleep = sleep
        self._file: CacheFile | None = None
        self._file_name = ""
        self._steps: list[ToolUseBlockParam] = []
        self._anchors: list[tuple[int, int] | None] = []
        self._index = 0
        self._settings = CacheExecutionSettings()
        self._return_to_agent = False
        self._emitted_id: str | None = None
        self._emitted_step: int | None = None
        self._waited_for: int | None = None
        self._screenshot_for: int | None = None
        self.result: ReplayResult | None = None
        self.history: list[ReplayResult] = []

    @property
    def is_active(self) -> bool:
        """True while a trajectory is being replayed."""
        return self._file is not None

    def activate_cache_execution(
        self,
        cache_file: CacheFile,
        cache_file_name: str,
        *,
        parameter_values: Mapping[str, str] | None = None,
        start_from_step_index: int = 0,
        execution_settings: CacheExecutionSettings | None = None,
        return_to_agent_on_success: bool = False,
    ) -> ReplayResult:
        """Prepare to replay ``cache_file``; no action runs until the conversation asks.

        Raises:
            CacheParameterError: parameter values are missing or unknown.
            AskCacheError: ``start_from_step_index`` is outside ``0..len(trajectory)``.
        """
        values = dict(parameter_values or {})
        if execution_settings is not None and not values:
            values = dict(execution_settings.parameter_values)
        needed = set(cache_file.cache_parameters) | placeholders_in(
            [cache_file.metadata.goal, *(step.input for step in cache_file.trajectory)]
        )
        missing, unknown = needed - values.keys(), values.keys() - needed
        if missing or unknown:
            raise CacheParameterError(cache_file_name, missing, unknown)
        total = len(cache_file.trajectory)
        if not 0 <= start_from_step_index <= total:
            raise AskCacheError(
                f"start_from_step_index {start_from_step_index} is outside 0..{total} "
                f"for {cache_file_name!r} ({total} steps)"
            )
        self._file, self._file_name = cache_file, cache_file_name
        self._steps = [
            step.model_copy(update={"input": substitute(step.input, values)})
            for step in cache_file.trajectory
        ]
        self._anchors = list(action_anchors(self._steps))
        self._index = start_from_step_index
        self._settings = execution_settings or CacheExecutionSettings()
        self._return_to_agent = return_to_agent_on_success
        self._emitted_id = None
        self._emitted_step = None
        self._waited_for = None
        self._screenshot_for = None
        self.result = ReplayResult(
            cache_file=cache_file_name, steps_total=total, start_step=start_from_step_index
        )
        self.history.append(self.result)
        cache_file.record_attempt()
        self._save()
        return self.result

    def _save(self) -> None:
        if self._file is not None:
            save_cache_file(self.storage, self._file_name, self._file)

    def handle_step(self, conversation: Conversation) -> SpeakerResult:
        if self._file is None or self.result is None:
            return SpeakerResult(
                "switch_speaker", next_speaker=self.agent_speaker, reason="no active replay"
            )
        failed = self._failed_call(conversation.messages)
        if failed is not None:
            if self._emitted_step is None:
                return self._hand_back(
                    self._index, f"no screenshot could be taken: {failed}", conversation
                )
            return self._hand_back(self._emitted_step, failed, conversation, executed=True)
        if self._index >= len(self._steps):
            return self._finish()
        step = self._steps[self._index]
        if self._index > self.result.start_step and self._waited_for != self._index:
            self._waited_for = self._index
            self._sleep(self._settings.delay_time_between_action)
        record, problem = self._validate(step, conversation)
        if record is None:  # a fresh screenshot is needed first
            self.result.screenshots_taken += 1
            self._screenshot_for = self._index
            return self._emit(make_tool_use("screenshot", self._shape_of(step)), step=None)
        if problem is not None:
            return self._hand_back(self._index, problem, conversation, record)
        self.result.steps.append(record)
        if record.validated:
            self.result.validated += 1
        else:
            self.result.unvalidated += 1
            logger.info("step %d (%s) not validated: %s", self._index, record.action, record.note)
        self.result.steps_run += 1
        self._index += 1
        replayed = step.model_copy(update={"id": new_tool_use_id(), "visual_representation": None})
        return self._emit(replayed, step=self._index - 1)

    def _shape_of(self, step: ToolUseBlockParam) -> ToolShape:
        action = parse_action(step)
        return action.shape if action is not None else self.tool_shape

    def _emit(self, call: ToolUseBlockParam, *, step: int | None) -> SpeakerResult:
        self._emitted_id, self._emitted_step = call.id, step
        return SpeakerResult("continue", [MessageParam(role="assistant", content=[call])])

    def _failed_call(self, messages: list[MessageParam]) -> str | None:
        """The error text when the call this executor emitted last came back with is_error."""
        if self._emitted_id is None or not messages:
            return None
        for result in messages[-1].tool_results:
            if result.tool_use_id == self._emitted_id and result.is_error:
                text = (
                    result.content
                    if isinstance(result.content, str)
                    else " ".join(b.text for b in result.content if isinstance(b, TextBlockParam))
                )
                return f"the tool reported an error: {text or 'no details'}"
        return None

    def _validate(
        self, step: ToolUseBlockParam, conversation: Conversation
    ) -> tuple[StepRecord | None, str | None]:
        """The step's record and why the replay must stop, if it must.

        ``(None, None)`` means: take a screenshot first.
        """
        assert self._file is not None
        action = parse_action(step)
        name = action.name if action is not None else step.name
        record = StepRecord(step_index=self._index, action=name, validated=False)
        config = self._file.metadata.visual_validation
        if self._settings.skip_visual_validation:
            record.note = "visual validation skipped by settings"
            return record, None
        if step.visual_representation is None or config is None:
            record.note = "no visual representation stored for this step"
            return record, None
        found = find_recent_screenshot_block(conversation.messages)
        if found is None or not self._is_fresh(found[0], conversation.messages):
            if action is not None and self._screenshot_for != self._index:
                return None, None
            record.note = "no screenshot taken after the last action is available"
            return record, None
        image = decode_screenshot(found[1].source.data, f"message {found[0]}")
        space = self._file.metadata.coordinate_space
        if space is not None and (image.width, image.height) != (space.width, space.height):
            return record, (
                f"the screen is {image.width}x{image.height} but the trajectory was recorded "
                f"at {space}; its coordinates would point elsewhere"
            )
        check = check_step_representation(
            image,
            step,
            step.visual_representation,
            config,
            threshold=self._settings.visual_validation_threshold,
            pointer=self._anchors[self._index],
        )
        record.validated, record.matched = True, check.matched
        record.distance, record.threshold = check.distance, check.threshold
        record.note = check.describe()
        logger.info("step %d (%s): %s", self._index, name, record.note)
        if not check.matched:
            return record, self._mismatch_text(check)
        return record, None

    @staticmethod
    def _mismatch_text(check: VisualCheck) -> str:
        return (
            "the screen around the action point no longer matches the recording "
            f"({check.describe()})"
        )

    @staticmethod
    def _is_fresh(screenshot_index: int, messages: list[MessageParam]) -> bool:
        """True when no tool call came after the message holding the screenshot."""
        last_call = max(
            (i for i, m in enumerate(messages) if m.role == "assistant" and m.tool_uses), default=-1
        )
        return screenshot_index > last_call

    def _finish(self) -> SpeakerResult:
        assert self._file is not None
        assert self.result is not None
        self.result.status = "completed"
        self._file.record_success()
        self._save()
        name, total = self._file_name, len(self._steps)
        self._deactivate()
        logger.info("replayed %s: all %d steps", name, total)
        if self._return_to_agent:
            note = (
                f"The cached trajectory {name!r} finished: all {total} steps were executed. "
                "Check the screen and finish the task if anything is left."
            )
            return SpeakerResult(
                "switch_speaker",
                [MessageParam(role="user", content=note)],
                next_speaker=self.agent_speaker,
                reason="replay completed",
            )
        return SpeakerResult("done", reason=f"replayed all {total} steps of {name}")

    def _hand_back(
        self,
        index: int,
        problem: str,
        conversation: Conversation,
        record: StepRecord | None = None,
        *,
        executed: bool = False,
    ) -> SpeakerResult:
        assert self._file is not None
        assert self.result is not None
        if record is not None:
            self.result.steps.append(record)
        self.result.status = "handed_back"
        self.result.stopped_at_step = index
        self.result.reason = problem
        self._file.record_failure(index, problem)
        self._save()
        total, name = len(self._steps), self._file_name
        step = self._steps[index] if 0 <= index < total else None
        what = f"step {index} of {total}"
        if step is not None:
            action = parse_action(step)
            if action is not None:
                where = f" at {list(action.point)}" if action.point else ""
                what += f" ({action.name}{where})"
        done = (
            f"Steps {self.result.start_step}-{index - 1} were replayed."
            if index > self.result.start_step
            else "No step was replayed."
        )
        fate = "was executed but failed" if executed else "was NOT executed"
        goal = conversation.messages[0].content if conversation.messages else ""
        text = (
            f"Replay of cached trajectory {name!r} stopped at {what}: {problem}. "
            f"That step {fate}. {done} The screen may differ from when the trajectory was "
            "recorded: take a screenshot, look at the current state, and continue the task "
            f"yourself from here. The task: {goal if isinstance(goal, str) else '(see above)'}"
        )
        logger.warning("replay of %s handed back at step %d: %s", name, index, problem)
        self._deactivate()
        return SpeakerResult(
            "switch_speaker",
            [MessageParam(role="user", content=[TextBlockParam(text=text)])],
            next_speaker=self.agent_speaker,
            reason=problem,
        )

    def _deactivate(self) -> None:
        self._file = None
        self._emitted_id = None
