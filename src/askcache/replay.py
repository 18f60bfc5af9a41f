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
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from PIL import Image
from pydantic import BaseModel, ConfigDict, Field

from askcache.actions import ToolShape, action_anchors, make_tool_use, new_tool_use_id, parse_action
from askcache.cache_file import CacheFile
from askcache.errors import AskCacheError, CacheParameterError
from askcache.messages import MessageParam, TextBlockParam, ToolUseBlockParam
from askcache.parameters import placeholders_in, substitute
from askcache.replay_guard import check_replayable
from askcache.scaling import same_aspect, scale_step_input
from askcache.settings import CacheExecutionSettings
from askcache.speakers import AGENT_SPEAKER, SpeakerResult
from askcache.storage import CacheStorage, save_cache_file
from askcache.visual import (
    StepFingerprint,
    check_step_representation,
    compute_step_representation,
    decode_screenshot,
    find_recent_screenshot_block,
)

if TYPE_CHECKING:
    from askcache.conversation import Conversation

__all__ = ["CACHE_EXECUTOR", "CacheExecutor", "ReplayResult", "StepRecord"]

logger = logging.getLogger(__name__)

CACHE_EXECUTOR = "cache_executor"
"""Default name of the replay speaker."""


_NEED_SCREENSHOT = "need a screenshot"
_SETTLE_POLL_SECONDS = 0.05


@dataclass(frozen=True)
class _Screen:
    """The screen a step is checked against."""

    image: Image.Image
    fresh: bool
    """True when taken after the last executed action."""


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
    detail_distance: int | None = None
    """Hamming distance of the detail hash, when the step has one and was checked."""
    detail_threshold: int | None = None
    """The detail hash's threshold applied, when checked."""
    note: str | None = None
    """Why the step was not checked, or what the check said."""

    def check_summary(self) -> str:
        """Distances against thresholds (``distance 32 vs threshold 2, detail 80 vs 14``),
        or why the step was not checked."""
        if not self.validated:
            return f"not validated ({self.note})"
        text = f"distance {self.distance} vs threshold {self.threshold}"
        if self.detail_distance is not None:
            text += f", detail {self.detail_distance} vs {self.detail_threshold}"
        return text


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
        screen: Callable[[], Image.Image] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        offered_tools: Collection[str] | None = None,
    ) -> None:
        self.storage = storage
        self.offered_tools = offered_tools
        """Names of the tools this run offers (``None``: the computer tool only)."""
        self.name = name
        self.agent_speaker = agent_speaker
        self.tool_shape = tool_shape
        self.screen = screen
        """Takes a screenshot as the model sees it; used to wait for the screen to settle."""
        self._sleep = sleep
        self._clock = clock
        self.regions: dict[int, Image.Image] = {}
        """Per step index of the current replay: the region it was checked on (recorded space)."""
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
        check_replayable(  # refuses unsafe files before anything runs (askcache.replay_guard)
            cache_file,
            cache_file_name,
            offered_tools=self.offered_tools,
            settings=execution_settings,
            parameter_values=values,
        )
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
        self.regions = {}
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
        screen = self._observe(step, conversation)
        if screen is _NEED_SCREENSHOT:
            self.result.screenshots_taken += 1
            self._screenshot_for = self._index
            return self._emit(make_tool_use("screenshot", self._shape_of(step)), step=None)
        assert not isinstance(screen, str)
        record = self._check(step, screen)
        problem = self._size_problem(step, screen)
        if problem is None and record.matched is False:
            problem = self._mismatch_text(record)
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
        replayed = step.model_copy(
            update={
                "id": new_tool_use_id(),
                "visual_representation": None,
                "visual_detail": None,
                "input": self._fit(step.input, screen),
            }
        )
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

    def _needs_check(self, step: ToolUseBlockParam) -> bool:
        assert self._file is not None
        return (
            not self._settings.skip_visual_validation
            and step.visual_representation is not None
            and self._file.metadata.visual_validation is not None
        )

    def _observe(self, step: ToolUseBlockParam, conversation: Conversation) -> _Screen | str | None:
        """The screen to check ``step`` against; ``_NEED_SCREENSHOT`` to ask for one first."""
        assert self._file is not None
        action = parse_action(step)
        check = self._needs_check(step)
        has_point = action is not None and (action.point or action.pointer_after) is not None
        found = find_recent_screenshot_block(conversation.messages)
        fresh = found is not None and self._is_fresh(found[0], conversation.messages)
        may_ask = action is not None and self._screenshot_for != self._index
        missing_size = has_point and self._file.metadata.coordinate_space is not None and not found
        if may_ask and ((check and not fresh) or missing_size):
            return _NEED_SCREENSHOT
        if check and self._settings.wait_for_settle and self.screen is not None:
            return _Screen(self._settled_image(step), fresh=True)
        if found is None:
            return None
        return _Screen(decode_screenshot(found[1].source.data, f"message {found[0]}"), fresh)

    def _settled_image(self, step: ToolUseBlockParam) -> Image.Image:
        """Watch the step's region until it stops changing; return the last image."""
        assert self.screen is not None
        assert self._file is not None
        config = self._file.metadata.visual_validation
        assert config is not None
        started = quiet_since = self._clock()
        last: StepFingerprint | None = None
        while True:
            image = self.screen()
            current = compute_step_representation(
                self._in_recorded_space(image), step, config, pointer=self._anchors[self._index]
            )
            now = self._clock()
            if current != last:
                last, quiet_since = current, now
            elif now - quiet_since >= self._settings.settle_quiet_period:
                return image
            if now - started >= self._settings.settle_timeout:
                logger.info("step %d: screen still changing after the settle timeout", self._index)
                return image
            self._sleep(_SETTLE_POLL_SECONDS)

    def _in_recorded_space(self, image: Image.Image) -> Image.Image:
        """``image`` resized to the size the trajectory was recorded at (same aspect ratio)."""
        assert self._file is not None
        space = self._file.metadata.coordinate_space
        if space is None or image.size == (space.width, space.height):
            return image
        return image.resize((space.width, space.height), Image.Resampling.LANCZOS)

    def _size_problem(self, step: ToolUseBlockParam, screen: _Screen | None) -> str | None:
        """Why the step's coordinates cannot be mapped onto the current screen, if so."""
        assert self._file is not None
        space = self._file.metadata.coordinate_space
        action = parse_action(step)
        if space is None or screen is None or action is None:
            return None
        size, recorded = screen.image.size, (space.width, space.height)
        if size == recorded or same_aspect(size, recorded):
            return None
        if action.point is None and action.pointer_after is None and not self._needs_check(step):
            return None
        return (
            f"the screen is {size[0]}x{size[1]} but the trajectory was recorded at {space}, "
            "another aspect ratio: its coordinates cannot be mapped onto this screen"
        )

    def _fit(self, arguments: dict[str, Any], screen: _Screen | None) -> dict[str, Any]:
        """The step's arguments with points scaled to the current screen's size."""
        assert self._file is not None
        space = self._file.metadata.coordinate_space
        if space is None or screen is None or screen.image.size == (space.width, space.height):
            return arguments
        return scale_step_input(arguments, (space.width, space.height), screen.image.size)

    def _check(self, step: ToolUseBlockParam, screen: _Screen | None) -> StepRecord:
        """Check the step's region; the record says whether it was checked and matched."""
        assert self._file is not None
        action = parse_action(step)
        record = StepRecord(
            step_index=self._index,
            action=action.name if action is not None else step.name,
            validated=False,
        )
        config = self._file.metadata.visual_validation
        if self._settings.skip_visual_validation:
            record.note = "visual validation skipped by settings"
            return record
        stored = StepFingerprint.of(step)
        if stored is None or config is None:
            record.note = "no visual representation stored for this step"
            return record
        if screen is None or not screen.fresh:
            record.note = "no screenshot taken after the last action is available"
            return record
        image = self._in_recorded_space(screen.image)
        check = check_step_representation(
            image,
            step,
            stored,
            config,
            threshold=self._settings.visual_validation_threshold,
            detail_threshold=self._settings.visual_validation_detail_threshold,
            pointer=self._anchors[self._index],
        )
        record.validated, record.matched = True, check.matched
        record.distance, record.threshold = check.distance, check.threshold
        record.detail_distance, record.detail_threshold = (
            check.detail_distance,
            check.detail_threshold,
        )
        record.note = check.describe()
        if check.box is not None:
            self.regions[self._index] = image.crop(check.box)
        logger.info("step %d (%s): %s", self._index, record.action, record.note)
        return record

    @staticmethod
    def _mismatch_text(record: StepRecord) -> str:
        return f"the screen around the action point no longer matches the recording ({record.note})"

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
