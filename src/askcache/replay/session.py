"""One replay: what an activation needs, and the phases every step goes through.

:class:`ReplaySession` holds the steps (parameters filled in), the settings, the index and the
result. :meth:`ReplaySession.next` is the whole engine: given the conversation's messages it
returns the next :data:`Command` for the executor — emit a tool call, hand back, or finish.
Each step goes through named phases, each returning a typed outcome:

``observe``  the latest screen: the history's screenshot when none was taken since the last
             action, else a fresh capture (or a screenshot request through the conversation);
             right after a replayed step, a fresh capture when the screen can be watched (the
             step's result screenshot was taken the moment it ran)
``wait``     watch the screen until the step's checks pass (go at once), or until it has stayed
             unchanged and still different for the quiet period, or a timeout (a screen that
             comes back to one it showed lately, a blinking caret, has not changed); the
             replay's first checked step waits for the timeout (the application may still be
             starting: an empty screen stays unchanged until its window appears)
``check``    the step's fingerprint (perceptual hashes of the regions at its point) and the
             area it changed when recorded, as it looked before the action
``act``      emit the step, its point scaled to the current screen
``verify``   after the action, watch for the effect it had when recorded: an action that
             changed its area then but changes nothing now did not land

and after the last step, the **end state**: the final screen against the recording's. A phase
that cannot decide fails closed: a step that should be checked but cannot be is not run, and
a screenshot the replay takes itself that fails :data:`CAPTURE_ATTEMPTS` times in a row is a
hand-back, not an exception (one failed grab does not end a wait). A hand-back right after a
step whose tool call failed first lets the screen settle, so the model's first look shows
what that step did (and the model does not do it again). After a
hand-back the replay is suspended and re-joins only under the rules of :mod:`askcache.replay.rejoin`
(the model acted, goes on, and the screen passes both the next step's check and the check that
failed); :meth:`ReplaySession.try_rejoin` decides and records each decision.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from PIL import Image

from askcache.actions import (
    ACTING_ACTIONS,
    OTHER_ACTIONS,
    Action,
    ToolShape,
    action_anchors,
    make_tool_use,
    new_tool_use_id,
    parse_action,
)
from askcache.cachefile.format import CacheFile
from askcache.errors import AskCacheError, InvalidHashError
from askcache.fingerprint.step import (
    StepFingerprint,
    check_step_representation,
    decode_screenshot,
    find_recent_screenshot_block,
)
from askcache.geometry import Point
from askcache.messages import MessageParam, TextBlockParam, ToolUseBlockParam
from askcache.parameters import substitute
from askcache.replay.rejoin import RESUME_TOOL_NAME, model_acted, model_stops
from askcache.replay.result import EndStateVerdict, ReplayResult, StepRecord
from askcache.replay.step_view import StepView
from askcache.scaling import same_aspect, scale_step_input
from askcache.screen.elsewhere import check_elsewhere
from askcache.screen.state import ScreenStateConfig, StepEffect, Thumbnail, compare_tiles
from askcache.settings import CacheExecutionSettings
from askcache.storage.ledger import FailedCheck, RejoinCondition, RejoinDecision

__all__ = [
    "CAPTURE_ATTEMPTS",
    "OTHER_DENSITY_SCALE",
    "Command",
    "Emit",
    "Finished",
    "HandBack",
    "ReplaySession",
]

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.02
"""Pause between two looks at the screen while waiting."""

CAPTURE_ATTEMPTS = 3
"""A screenshot the replay takes itself is tried this many times in a row (:data:`POLL_SECONDS`
apart) before the phase that needed it hands back: a grab that fails once (a busy X server)
is a look skipped, not the end of a wait."""

_BLINK_STATES = 4
"""Distinct screens remembered while waiting: coming back to one of them is not a change
(a text caret blinks between two), so a screen that only blinks settles."""

T = TypeVar("T")


@dataclass(frozen=True)
class Emit:
    """Run this tool call through the conversation, then ask again."""

    call: ToolUseBlockParam
    """The call (a replayed step, or a screenshot request)."""


@dataclass(frozen=True)
class HandBack:
    """Stop and give the turn to the model."""

    step: int
    """The step the replay stopped at."""
    problem: str
    """What went wrong, in plain words."""
    executed: bool = False
    """True when that step ran (its tool failed, or its effect did not appear)."""


@dataclass(frozen=True)
class Finished:
    """Every step ran."""

    verdict: EndStateVerdict | None
    """The end state against the recording's (``None``: not compared)."""
    hand_back: bool = False
    """True when the end state differs and the settings ask the model to confirm."""


Command = Emit | HandBack | Finished
"""What the executor does next."""


class _CaptureFailedError(Exception):
    """The replay's own screenshot failed every attempt: the phase that needed it cannot
    decide."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(
            f"no screenshot could be taken ({CAPTURE_ATTEMPTS} attempts in a row): "
            f"{type(cause).__name__}: {cause}"
        )


@dataclass
class _Screen:
    """A screen the replay looks at."""

    image: Image.Image
    """As the model sees it (the current size)."""
    recorded: Image.Image
    """Brought to the size the trajectory was recorded at."""
    _thumbnail: Thumbnail | None = None

    def thumbnail(self, config: ScreenStateConfig) -> Thumbnail:
        """Its thumbnail in recorded space, computed once."""
        if self._thumbnail is None:
            self._thumbnail = Thumbnail.of(self.recorded, config)
        return self._thumbnail


@dataclass(frozen=True)
class _Checked:
    """The step may run on this screen."""

    record: StepRecord
    screen: _Screen | None
    """The screen it was checked on (``None``: a step that needs none)."""
    thumbnail: Thumbnail | None
    variant: int | None = None
    """The variant of the trajectory whose first step was checked (``None``: its own)."""


@dataclass(frozen=True)
class _Refused:
    """The step must not run."""

    record: StepRecord | None
    problem: str
    final: bool = False
    """True when waiting cannot help (a size that cannot be mapped, a step without a check)."""


@dataclass(frozen=True)
class _Pending:
    """The call emitted last, whose result the next turn reads."""

    call_id: str
    step: int | None
    """The step it replays (``None``: a screenshot request)."""
    before: Thumbnail | None = None
    """The screen just before the step, in recorded space."""
    before_image: Image.Image | None = None
    """The same screen at full size, when it was the recorded size (for the places away from
    the point that the step changed when recorded; :mod:`askcache.screen.elsewhere`)."""
    started: float = 0.0
    """When the step's observation began (the replay's clock)."""


@dataclass(frozen=True)
class _Stopped:
    """Where a replay handed back, and what a re-join must see fixed."""

    step: int
    """The step it stopped at."""
    check: FailedCheck
    """The check that failed."""
    at_message: int
    """Messages in the conversation when it handed back: the model's calls come after."""
    ran: _Pending | None = None
    """With ``check="effect"``: the step as it ran (the screen before it), to check its
    effect again on a later screen."""


OTHER_DENSITY_SCALE = 0.05
"""A screen counts as drawn at another pixel density when its size differs from the
recorded one by more than this fraction in either direction."""


def _other_scale(size: tuple[int, int], recorded: tuple[int, int]) -> bool:
    return any(
        abs(now / then - 1) > OTHER_DENSITY_SCALE for now, then in zip(size, recorded, strict=True)
    )


class ReplaySession:
    """The state of one replay of one cache file (see the module docstring)."""

    def __init__(
        self,
        cache_file: CacheFile,
        name: str,
        *,
        parameter_values: Mapping[str, str],
        start_step: int,
        settings: CacheExecutionSettings,
        tool_shape: ToolShape,
        capture: Callable[[], Image.Image] | None,
        display_size: tuple[int, int] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.file = cache_file
        self.name = name
        self.settings = settings
        self.tool_shape = tool_shape
        self.capture = capture
        self._sleep = sleep
        self._clock = clock
        self.parameter_values = dict(parameter_values)
        """The values the steps' ``{{name}}`` parameters were filled in with."""
        self.steps = [
            step.model_copy(update={"input": substitute(step.input, parameter_values)})
            for step in cache_file.trajectory
        ]
        self.variants = {
            index: [
                variant.model_copy(
                    update={
                        "steps": [
                            step.model_copy(
                                update={"input": substitute(step.input, parameter_values)}
                            )
                            for step in variant.steps
                        ]
                    }
                )
                for variant in variants
            ]
            for index, variants in cache_file.variants.items()
        }
        """Step index -> the other ways through the trajectory from there (parameters
        filled in); see :class:`~askcache.cachefile.format.TrajectoryVariant`."""
        self.anchors = list(action_anchors(self.steps))
        self.index = start_step
        self.result = ReplayResult(
            cache_file=name, steps_total=len(self.steps), start_step=start_step
        )
        self.views: dict[int, StepView] = {}
        """Per checked step: what it was checked on (recorded space), for reports."""
        self.suspended = False
        """True after a hand-back: the replay may re-join later."""
        self.emitted: dict[str, ToolUseBlockParam] = {}
        """Per tool call id the replay emitted: the step it replayed (with its fingerprint
        and effect; healing keeps those for the replayed part of a run)."""
        self._pending: _Pending | None = None
        self._ran: _Pending | None = None
        """The call whose result was read last (a step's: the screen before it)."""
        self._stopped: _Stopped | None = None
        self._started = clock()
        self._first_step = True
        self._starting = True
        """True until the first step that needs a screen was checked: its wait is the
        start-up wait (see :meth:`_observe_and_check`)."""
        self._screenshot_asked_for: int | None = None
        self._step_started = clock()
        meta = cache_file.metadata
        self._space = (
            (meta.coordinate_space.width, meta.coordinate_space.height)
            if meta.coordinate_space is not None
            else None
        )
        recorded_display = meta.display_size
        self._other_display = (
            display_size is not None
            and recorded_display is not None
            and _other_scale(display_size, (recorded_display.width, recorded_display.height))
        )
        """True when the computer tool reports a display of another size than the
        recording's: the screen is drawn at another pixel density even where its screenshots
        come at the recorded size."""
        self.other_density_seen = False
        """True once a step was checked as on a screen drawn at another pixel density (a
        heal then writes nothing: its fingerprints would mix two densities)."""
        self._end: Thumbnail | None = None
        self._end_state = meta.end_state
        if meta.screen_state is not None and meta.end_state is not None:
            self._end = Thumbnail.from_end_state(meta.end_state, meta.screen_state)

    # The engine -------------------------------------------------------------------------

    def next(self, messages: list[MessageParam]) -> Command:
        """The next command, given the conversation so far. A screen that cannot be read
        (a capture that fails, a screenshot that is not an image) hands back: fail closed."""
        executed: int | None = None
        try:
            just_acted = False
            if self._pending is not None:
                pending, self._pending = self._pending, None
                self._ran = pending
                executed = pending.step
                stop = self._after(pending, messages)
                if stop is not None:
                    return stop
                executed = None
                just_acted = pending.step is not None
            return self._next_step(messages, just_acted=just_acted)
        except (_CaptureFailedError, AskCacheError, OSError, ValueError) as exc:
            problem = f"the screen could not be read ({type(exc).__name__}: {exc})"
            if executed is not None:
                return HandBack(executed, problem, executed=True)
            return HandBack(self.index, problem)

    def _next_step(self, messages: list[MessageParam], *, just_acted: bool) -> Command:
        if self.index >= len(self.steps):
            return self._finish(messages)
        step = self.steps[self.index]
        action = parse_action(step)
        if not self._first_step and self.settings.delay_time_between_action:
            self._sleep(self.settings.delay_time_between_action)
        self._first_step = False
        self._step_started = self._clock()
        if not _needs_screen(action):
            return self._act(step, _Checked(self._unchecked(step, action), None, None), 0.0)
        try:
            return self._observe_and_check(step, action, messages, just_acted)
        except _CaptureFailedError as exc:
            return HandBack(self.index, str(exc))

    def _observe_and_check(
        self,
        step: ToolUseBlockParam,
        action: Action | None,
        messages: list[MessageParam],
        just_acted: bool,
    ) -> Command:
        screen = self._observe(messages, just_acted)
        if screen is None:
            self._screenshot_asked_for = self.index
            self.result.screenshots_taken += 1
            call = make_tool_use("screenshot", action.shape if action else self.tool_shape)
            self._pending = _Pending(call.id, None)
            return Emit(call)
        starting, self._starting = self._starting, False
        outcome, waited = self._watch(
            screen, lambda seen: self._check_ways(step, action, seen), _passes, quiet=not starting
        )
        if isinstance(outcome, _Refused):
            if outcome.record is not None:
                outcome.record.waited_seconds = waited
                self.result.steps.append(outcome.record)
            problem = outcome.problem
            if starting and not outcome.final and self._can_watch():
                problem += (
                    f"; waited {waited:.1f} s (settle_timeout {self.settings.settle_timeout:g} s)"
                    " for the screen the replay's first step expects: the application may not"
                    " have started, or shows another screen"
                )
            return HandBack(self.index, problem)
        if outcome.variant is not None:
            step = self._take_variant(outcome.variant)
        return self._act(step, outcome, waited)

    def _unchecked(self, step: ToolUseBlockParam, action: Action | None) -> StepRecord:
        return StepRecord(
            step_index=self.index,
            action=action.name if action is not None else step.name,
            validated=False,
            note="does not act on the screen",
        )

    def _after(self, pending: _Pending, messages: list[MessageParam]) -> HandBack | None:
        """Read the result of the call emitted last; verify a step's effect."""
        failed = _failed_call(messages, pending.call_id)
        if pending.step is None:
            if failed is not None:
                return HandBack(self.index, f"no screenshot could be taken: {failed}")
            return None
        if failed is not None:
            self.emitted.pop(pending.call_id, None)
            self._settle()
            return HandBack(pending.step, failed, executed=True)
        try:
            problem = self._verify(pending, messages)
        except _CaptureFailedError as exc:
            problem = f"its effect cannot be checked: {exc}"
        self.result.steps[-1].seconds = self._clock() - pending.started
        if problem is not None:
            self.emitted.pop(pending.call_id, None)  # it did not work as recorded
            return HandBack(pending.step, problem, executed=True)
        self.index = pending.step + 1
        return None

    # observe ----------------------------------------------------------------------------

    def _observe(self, messages: list[MessageParam], just_acted: bool = False) -> _Screen | None:
        """The screen to check the next step on: the history's latest screenshot when no
        action came after it, else a fresh capture; ``None`` to ask the conversation for one
        (asked once per step: after that, the newest screenshot is used).

        Right after a replayed step (``just_acted``) a fresh capture is preferred when the
        screen can be watched: the step's result screenshot was taken the moment it ran, and
        the application may still be reacting to it (its effect can be complete while the
        layout changes under the next step's point)."""
        found = find_recent_screenshot_block(messages)
        if just_acted and self._can_watch():
            return self._capture()
        current = self._current(messages, f"message {found[0]}" if found else "")
        if current is not None:
            return current
        if self._screenshot_asked_for == self.index and found is not None:
            return self._screen(decode_screenshot(found[1].source.data, f"message {found[0]}"))
        return None

    def _fresh(self, messages: list[MessageParam], where: str) -> _Screen | None:
        """The history's latest screenshot, when no action came after it."""
        found = find_recent_screenshot_block(messages)
        if found is None or not _is_fresh(found[0], messages):
            return None
        return self._screen(decode_screenshot(found[1].source.data, where))

    def _current(self, messages: list[MessageParam], where: str) -> _Screen | None:
        """The screen as it is now: the history's latest screenshot when no action came
        after it, else a capture where the screen can be watched; ``None`` otherwise."""
        fresh = self._fresh(messages, where)
        if fresh is not None:
            return fresh
        return self._capture() if self._can_watch() else None

    def _can_watch(self) -> bool:
        return self.settings.auto_wait and self.capture is not None

    def _capture(self) -> _Screen:
        """A fresh screenshot, tried :data:`CAPTURE_ATTEMPTS` times in a row. Raises
        :class:`_CaptureFailedError` when every attempt fails, so the phase that needed it
        hands back (fails closed) instead of ending the conversation."""
        assert self.capture is not None
        for attempt in range(1, CAPTURE_ATTEMPTS + 1):
            try:
                image = self.capture()
            except Exception as exc:
                if attempt == CAPTURE_ATTEMPTS:
                    raise _CaptureFailedError(exc) from exc
                logger.info("screenshot %d of %d failed: %s", attempt, CAPTURE_ATTEMPTS, exc)
                self._sleep(POLL_SECONDS)
            else:
                return self._screen(image)
        raise AssertionError("unreachable")

    def _screen(self, image: Image.Image) -> _Screen:
        space = self._space
        if space is None or image.size == space or not same_aspect(image.size, space):
            return _Screen(image, image)
        return _Screen(image, image.resize(space, Image.Resampling.LANCZOS))

    # wait -------------------------------------------------------------------------------

    def _watch(
        self,
        screen: _Screen,
        evaluate: Callable[[_Screen], T],
        done: Callable[[T], bool],
        *,
        quiet: bool = True,
    ) -> tuple[T, float]:
        """Evaluate ``screen``; while the outcome is not ``done``, look again until the
        screen has stayed unchanged for the quiet period (only when ``quiet``), or the
        timeout. Returns the last outcome and the seconds waited."""
        started = self._clock()
        outcome = evaluate(screen)
        if done(outcome) or not self._can_watch():
            return outcome, 0.0
        config = self.file.metadata.screen_state
        first = screen.thumbnail(config) if config is not None else None
        # the distinct screens seen lately: coming back to one of them (a blinking caret)
        # is no move
        seen = [first] if first is not None else []
        still_since = started
        while True:
            now = self._clock()
            if now - started >= self.settings.settle_timeout:
                break
            self._sleep(POLL_SECONDS)
            screen = self._capture()
            outcome = evaluate(screen)
            if done(outcome):
                break
            now = self._clock()
            current = screen.thumbnail(config) if config is not None else None
            if _moved(seen, current, self._volatile()):
                assert current is not None
                seen = [*seen[-(_BLINK_STATES - 1) :], current]
                still_since = now
            elif quiet and now - still_since >= self.settings.settle_quiet_period:
                break
        return outcome, self._clock() - started

    def _settle(self) -> None:
        """Watch the screen until it has stayed unchanged for the quiet period (or the
        timeout): before handing back after a step that ran but whose effect was not watched
        (its tool call failed), so the model's first look shows what the step did. Nothing
        when the screen cannot be watched or read."""
        if not self._can_watch() or self.file.metadata.screen_state is None:
            return
        try:
            self._watch(self._capture(), lambda seen: None, lambda _: False)
        except _CaptureFailedError:
            return

    def _volatile(self) -> set[int]:
        end = self._end_state
        return set(end.volatile) if end is not None else set()

    # check ------------------------------------------------------------------------------

    def _check_ways(
        self, step: ToolUseBlockParam, action: Action | None, screen: _Screen
    ) -> _Checked | _Refused:
        """Whether ``step`` may run on ``screen``; when it may not, whether the first step of
        one of the variants at this index may (the first that does is taken)."""
        outcome = self._check(step, action, screen)
        if isinstance(outcome, _Checked) or outcome.final:
            return outcome
        for number, variant in enumerate(self.variants.get(self.index, [])):
            if not variant.steps:
                continue
            first = variant.steps[0]
            pointer = list(action_anchors([*self.steps[: self.index], first]))[-1]
            checked = self._check(first, parse_action(first), screen, pointer=(pointer,))
            if isinstance(checked, _Checked) and checked.record.validated:
                return _Checked(checked.record, checked.screen, checked.thumbnail, number)
        return outcome

    def _take_variant(self, number: int) -> ToolUseBlockParam:
        """Run variant ``number`` of this index in place of the steps it replaces."""
        index = self.index
        variant = self.variants[index][number]
        end = index + variant.replaces
        shift = len(variant.steps) - variant.replaces
        if end >= len(self.steps) and variant.end_state is not None:
            config = self.file.metadata.screen_state
            self._end_state = variant.end_state
            self._end = Thumbnail.from_end_state(variant.end_state, config) if config else None
        self.steps = [*self.steps[:index], *variant.steps, *self.steps[end:]]
        self.anchors = list(action_anchors(self.steps))
        self.variants = {
            (i + shift if i >= end else i): v
            for i, v in self.variants.items()
            if i < index or i >= end
        }
        self.result.steps_total = len(self.steps)
        self.result.variants_used.append(index)
        logger.info("replay of %s takes variant %d at step %d", self.name, number, index)
        return self.steps[index]

    def _check(
        self,
        step: ToolUseBlockParam,
        action: Action | None,
        screen: _Screen,
        *,
        pointer: tuple[Point | None] | None = None,
        keep_view: bool = True,
    ) -> _Checked | _Refused:
        """Whether ``step`` may run on ``screen`` (``pointer``: the pointer's position
        before it, when ``step`` is not the trajectory's step at this index; ``keep_view``:
        remember what it was checked on, for reports)."""
        record = StepRecord(
            step_index=self.index,
            action=action.name if action is not None else step.name,
            validated=False,
        )
        problem = self._size_problem(action, screen)
        if problem is not None:
            return _Refused(record, problem, final=True)
        acting = action is not None and action.name in ACTING_ACTIONS
        config = self.file.metadata.visual_validation
        stored = StepFingerprint.of(step)
        if self.settings.skip_visual_validation:
            record.note = "visual validation skipped by settings"
            return _Checked(record, screen, None)
        if not acting:
            record.note = "does not act on the screen"
            return _Checked(record, screen, None)
        if stored is None or config is None:
            record.note = "no fingerprint stored for this step"
            if self.settings.unchecked_steps == "run":
                return _Checked(record, screen, None)
            return _Refused(
                record,
                f"step {self.index} ({record.action}) acts on the screen but the cache file "
                "stores no fingerprint for it, so it cannot be checked "
                "(unchecked_steps='run' replays such steps unchecked)",
                final=True,
            )
        try:
            check = check_step_representation(
                screen.recorded,
                step,
                stored,
                config,
                threshold=self.settings.visual_validation_threshold,
                detail_threshold=self.settings.visual_validation_detail_threshold,
                pointer=self.anchors[self.index] if pointer is None else pointer[0],
                other_density=self._other_density(screen),
            )
        except InvalidHashError as exc:
            return _Refused(record, f"the step's fingerprint cannot be checked: {exc}", final=True)
        record.validated, record.matched = True, check.matched
        record.distance, record.threshold = check.distance, check.threshold
        record.detail_distance = check.detail_distance
        record.detail_threshold = check.detail_threshold
        record.note = check.describe()
        if check.box is not None and keep_view:
            self.views[self.index] = StepView.of(
                screen.recorded, check.box, self.anchors[self.index] or _point(action)
            )
        if not check.matched:
            return _Refused(
                record,
                "the screen around the action point no longer matches the recording "
                f"({record.note})",
            )
        return self._check_affected_area(step, record, screen)

    def _check_affected_area(
        self, step: ToolUseBlockParam, record: StepRecord, screen: _Screen
    ) -> _Checked | _Refused:
        """The area the action changed when recorded must look as it did before it then."""
        config = self.file.metadata.screen_state
        effect = step.effect
        if config is None or not self.settings.check_effects:
            return _Checked(record, screen, None)
        thumbnail = screen.thumbnail(config)
        if effect is None or not effect.tiles:
            return _Checked(record, screen, thumbnail)
        try:
            comparison = compare_tiles(
                thumbnail, effect.tiles, effect.before, skip=effect.parameter_before
            )
        except ValueError as exc:
            return _Refused(record, f"the step's recorded effect cannot be checked: {exc}", True)
        record.affected_tiles = comparison.compared
        if not comparison.matched:
            boxes = [list(thumbnail.tile_box(i)) for i in comparison.differing[:3]]
            record.matched = False
            return _Refused(
                record,
                f"the area this action changed when recorded looks different now "
                f"({len(comparison.differing)} of {comparison.compared} tiles differ, "
                f"at {', '.join(map(str, boxes))}): something is already there, or the "
                "screen is in another state",
            )
        return _Checked(record, screen, thumbnail)

    def _other_density(self, screen: _Screen) -> bool:
        """Whether ``screen`` is drawn at another pixel density than the recording: its
        screenshot was rescaled to the recorded size, or the display is of another size (by
        more than :data:`OTHER_DENSITY_SCALE`: a screenshot a few pixels off is checked as
        at the recorded density)."""
        other = self._other_display or _other_scale(screen.image.size, screen.recorded.size)
        self.other_density_seen = self.other_density_seen or other
        return other

    def _size_problem(self, action: Action | None, screen: _Screen) -> str | None:
        """Why the step's coordinates cannot be mapped onto the current screen, if so."""
        space = self._space
        if space is None or action is None:
            return None
        size = screen.image.size
        if size == space or same_aspect(size, space):
            return None
        if action.point is None and action.pointer_after is None and not _needs_screen(action):
            return None
        return (
            f"the screen is {size[0]}x{size[1]} but the trajectory was recorded at "
            f"{space[0]}x{space[1]}, another aspect ratio: its coordinates cannot be mapped "
            "onto this screen"
        )

    # act --------------------------------------------------------------------------------

    def _act(self, step: ToolUseBlockParam, checked: _Checked, waited: float) -> Emit:
        record = checked.record
        record.waited_seconds = waited
        self.result.steps.append(record)
        if record.validated:
            self.result.validated += 1
        else:
            self.result.unvalidated += 1
            logger.info("step %d (%s) not validated: %s", self.index, record.action, record.note)
        self.result.steps_run += 1
        call = step.model_copy(
            update={
                **dict.fromkeys(ToolUseBlockParam.cache_only_fields),  # the file's, not the call's
                "id": new_tool_use_id(),
                "replayed": True,
                "input": self._fit(step.input, checked.screen),
            }
        )
        same_size = checked.screen is not None and checked.screen.image.size == self._space
        self._pending = _Pending(
            call.id,
            self.index,
            checked.thumbnail,
            before_image=checked.screen.image if same_size and checked.screen else None,
            started=self._step_started,
        )
        self.emitted[call.id] = step
        return Emit(call)

    def _fit(self, arguments: dict[str, Any], screen: _Screen | None) -> dict[str, Any]:
        """The step's arguments with points scaled to the current screen's size."""
        space = self._space
        if space is None or screen is None or screen.image.size == space:
            return arguments
        return scale_step_input(arguments, space, screen.image.size)

    # verify -----------------------------------------------------------------------------

    def _verify(self, pending: _Pending, messages: list[MessageParam]) -> str | None:
        """Why the step's recorded effect did not appear (``None``: it did, or none is
        expected, or it cannot be checked)."""
        assert pending.step is not None
        step = self.steps[pending.step]
        record = self.result.steps[-1]
        effect = step.effect
        config = self.file.metadata.screen_state
        if effect is None or config is None or pending.before is None:
            record.effect = "not_checked"
            return None
        before_image = pending.before_image
        if not _has_effect(effect, before_image):
            record.effect = "none_recorded"
            return None
        screen = self._current(messages, "the result")
        if screen is None:
            record.effect = "not_checked"
            return None
        before = pending.before

        def evaluate(seen: _Screen) -> str | None:
            return _effect_problem(effect, config, before, before_image, seen)

        try:
            problem, waited = self._watch(screen, evaluate, lambda outcome: outcome is None)
        except ValueError as exc:
            return f"the step's recorded effect cannot be checked: {exc}"
        record.waited_seconds += waited
        if problem is None:
            record.effect = "seen"
        return problem

    # end state --------------------------------------------------------------------------

    def _finish(self, messages: list[MessageParam], *, wait: bool = True) -> Finished | HandBack:
        try:
            return self._compare_end(messages, wait=wait)
        except _CaptureFailedError as exc:
            return HandBack(len(self.steps), f"the end state cannot be checked: {exc}")

    def _compare_end(self, messages: list[MessageParam], *, wait: bool) -> Finished:
        end, config = self._end, self.file.metadata.screen_state
        state = self._end_state
        if self.settings.end_state == "off" or end is None or config is None or state is None:
            return Finished(None)
        screen = self._current(messages, "the last screen")
        if screen is None:
            return Finished(None)
        skip = set(state.volatile) | set(state.parameter_tiles)

        def evaluate(seen: _Screen) -> EndStateVerdict:
            now = seen.thumbnail(config)
            total = now.rows * now.columns
            differing = [i for i in now.differing_tiles(end) if i not in skip]
            return EndStateVerdict(
                matched=not differing,
                compared_tiles=total - len(skip & set(range(total))),
                differing_tiles=differing,
                differing_boxes=[now.tile_box(i) for i in differing],
            )

        if not wait:
            return Finished(evaluate(screen))
        verdict, _ = self._watch(screen, evaluate, lambda outcome: outcome.matched)
        return Finished(
            verdict, hand_back=not verdict.matched and self.settings.end_state == "hand_back"
        )

    def end_state_verdict(self, messages: list[MessageParam]) -> EndStateVerdict | None:
        """The screen as the conversation ended against the recorded end state, looked at
        once (``None``: not compared): how a run the model finished after a hand-back is
        verified (the model's last screenshot came after its own settle delay)."""
        outcome = self._finish(messages, wait=False)
        return outcome.verdict if isinstance(outcome, Finished) else None

    # re-join ----------------------------------------------------------------------------

    def suspend(self, command: HandBack, at_message: int) -> None:
        """Stop after ``command`` (a hand-back given when the conversation held
        ``at_message`` messages): the replay would resume at the stopped step when it did not
        run, at the one after it when it ran."""
        if command.step >= len(self.steps):
            check: FailedCheck = "end_state"
        else:
            check = "effect" if command.executed else "fingerprint"
        ran = self._ran if check == "effect" and self._ran is not None else None
        if ran is not None and ran.step != command.step:
            ran = None
        self._stopped = _Stopped(command.step, check, at_message, ran)
        self.index = command.step + 1 if command.executed else command.step
        self.suspended = True

    def try_rejoin(self, messages: list[MessageParam], *, requested: bool = False) -> bool:
        """After a hand-back: True (and the replay resumes) when the re-join rules of
        :mod:`askcache.replay.rejoin` hold after the model's latest turn (``requested``: the model
        asked with ``resume_cached_trajectory``). Each decision is appended to
        :attr:`ReplayResult.rejoin_decisions`; nothing is recorded when there is no step left
        to resume at."""
        stopped = self._stopped
        if not self.suspended or stopped is None or self.index >= len(self.steps):
            return False
        refused_by, reason = self._rejoin_refusal(messages, stopped, requested)
        decision = RejoinDecision(
            step_index=self.index,
            failed_check=stopped.check,
            rejoined=refused_by is None,
            refused_by=refused_by,
            reason=reason,
            requested=requested,
            after_message=len(messages),
        )
        self.result.rejoin_decisions.append(decision)
        if refused_by is not None:
            logger.info("replay of %s does not re-join %s", self.name, decision.describe())
            return False
        self.suspended = False
        self._stopped = None
        self.result.rejoins += 1
        self.result.status = "running"
        self.result.stopped_at_step = None
        self.result.reason = None
        self._first_step = True
        logger.info("replay of %s re-joins at step %d", self.name, self.index)
        return True

    def _rejoin_refusal(
        self, messages: list[MessageParam], stopped: _Stopped, requested: bool
    ) -> tuple[RejoinCondition | None, str]:
        """The first re-join condition that does not hold and why; ``(None, why it may)``."""
        if not requested and not model_acted(messages, stopped.at_message):
            return "model_acted", (
                "the model has not acted since the hand-back (a screenshot, a wait, a zoom or "
                "a pointer move is not progress)"
            )
        stops = model_stops(messages, stopped.at_message)
        if stops is not None:
            return "model_continues", stops
        problem = self._screen_refusal(messages, stopped)
        if problem is not None:
            return "screen", problem
        fixed = (
            f"step {stopped.step}'s effect now shows"
            if stopped.check == "effect"
            else "the check that failed passes"
        )
        return None, f"step {self.index} passes its check and {fixed}"

    def _screen_refusal(self, messages: list[MessageParam], stopped: _Stopped) -> str | None:
        """Why the screen does not let the replay resume (condition b), or ``None``: the
        latest screenshot, and then (when the screen can be watched) the screen once settled,
        pass the resumed step's check and the check that failed."""
        step = self.steps[self.index]
        action = parse_action(step)
        if action is None or action.name not in ACTING_ACTIONS:
            return (
                f"step {self.index} does not act on the screen: its check cannot show that "
                "the screen is back"
            )
        found = _screenshot_since_last_action(messages)
        if found is None and not self._can_watch():
            return "no screenshot was taken after the model's last action"
        try:
            if found is not None:
                problem = self._rejoin_problem(
                    step, action, self._screen(found), stopped, "the latest screenshot"
                )
                if problem is not None:
                    return problem
            if not self._can_watch():
                return None
            # the screenshot was taken a moment after the model's action: a slow application
            # may not have answered yet. Re-join only if the settled screen passes too.
            settled, _ = self._watch(self._capture(), lambda seen: seen, lambda _: False)
        except (_CaptureFailedError, AskCacheError, OSError, ValueError) as exc:
            return f"the screen could not be read ({type(exc).__name__}: {exc})"
        return self._rejoin_problem(step, action, settled, stopped, "the settled screen")

    def _rejoin_problem(
        self,
        step: ToolUseBlockParam,
        action: Action,
        screen: _Screen,
        stopped: _Stopped,
        where: str,
    ) -> str | None:
        checked = self._check(step, action, screen, keep_view=False)
        if isinstance(checked, _Refused):
            return f"on {where}, step {self.index} does not pass its check: {checked.problem}"
        if stopped.check != "effect":
            return None  # the failed check was this very step's (fingerprint)
        problem = self._effect_now(stopped, screen)
        if problem is not None:
            return f"on {where}, the effect of step {stopped.step} still fails: {problem}"
        return None

    def _effect_now(self, stopped: _Stopped, screen: _Screen) -> str | None:
        """Why the stopped step's recorded effect does not show on ``screen`` (``None``: it
        does). An effect that cannot be checked counts as not showing (fail closed)."""
        effect = self.steps[stopped.step].effect
        config = self.file.metadata.screen_state
        ran = stopped.ran
        if effect is None or config is None or ran is None or ran.before is None:
            return "its effect cannot be checked (none recorded, or no screen before it)"
        if not _has_effect(effect, ran.before_image):
            return "it has no recorded effect to check"
        try:
            return _effect_problem(effect, config, ran.before, ran.before_image, screen)
        except ValueError as exc:
            return f"its recorded effect cannot be checked: {exc}"

    def check_step(self, index: int, image: Image.Image) -> tuple[StepRecord, str | None]:
        """The check phase of step ``index`` on ``image``, alone: no waiting, no action, no
        state changed. Returns the step's record and why the replay would stop before it
        (``None``: it would run)."""
        step = self.steps[index]
        saved, self.index = self.index, index
        try:
            outcome = self._check(step, parse_action(step), self._screen(image), keep_view=False)
        finally:
            self.index = saved
        if isinstance(outcome, _Refused):
            record = outcome.record or StepRecord(
                step_index=index, action=step.name, validated=False
            )
            return record, outcome.problem
        return outcome.record, None

    def elapsed(self) -> float:
        """Seconds since activation."""
        return self._clock() - self._started

    @property
    def regions(self) -> dict[int, Image.Image]:
        """Per checked step: the region it was checked on (recorded space)."""
        return {index: view.region for index, view in self.views.items()}


def _point(action: Action | None) -> tuple[int, int] | None:
    return action.point if action is not None else None


def _needs_screen(action: Action | None) -> bool:
    """True for a step that acts on the screen or names a point (which must be scaled)."""
    return action is not None and (action.name in ACTING_ACTIONS or action.point is not None)


def _passes(outcome: _Checked | _Refused) -> bool:
    return isinstance(outcome, _Checked) or outcome.final


def _moved(seen: list[Thumbnail], current: Thumbnail | None, ignore: set[int]) -> bool:
    """True when ``current`` differs (outside ``ignore``) from every screen in ``seen``."""
    if current is None:
        return True
    return all(any(index not in ignore for index in last.changed_tiles(current)) for last in seen)


def _is_fresh(screenshot_index: int, messages: list[MessageParam]) -> bool:
    """True when no tool call came after the message holding the screenshot."""
    last_call = max(
        (i for i, m in enumerate(messages) if m.role == "assistant" and m.tool_uses), default=-1
    )
    return screenshot_index > last_call


def _has_effect(effect: StepEffect, before_image: Image.Image | None) -> bool:
    """True when ``effect`` has something to check: tiles near the point, or places away from
    it (only with the full-size screen from before the action)."""
    return bool(effect.tiles) or (before_image is not None and bool(effect.elsewhere))


def _effect_problem(
    effect: StepEffect,
    config: ScreenStateConfig,
    before: Thumbnail,
    before_image: Image.Image | None,
    seen: _Screen,
) -> str | None:
    """Why ``seen`` does not show the step's recorded ``effect`` against the screen before it
    (``before``; ``before_image`` at full size, for the places away from the point)."""
    tiles = set(effect.tiles)
    if tiles:
        now = seen.thumbnail(config)
        if not tiles & set(before.changed_tiles(now)):
            return (
                f"the action had no effect: when recorded it changed {len(tiles)} tiles "
                "near its point, now none changed (it did not land, or landed elsewhere)"
            )
        comparison = compare_tiles(now, effect.tiles, effect.after, skip=effect.parameter_after)
        if not comparison.matched:
            boxes = [list(now.tile_box(i)) for i in comparison.differing[:3]]
            return (
                "the action's effect differs from the recording: "
                f"{len(comparison.differing)} of {comparison.compared} tiles look "
                f"different after it (at {', '.join(map(str, boxes))})"
            )
    if before_image is not None and seen.image.size == before_image.size:
        return check_elsewhere(effect.elsewhere, before_image, seen.image)
    return None


def _screenshot_since_last_action(messages: list[MessageParam]) -> Image.Image | None:
    """The history's latest screenshot when nothing that may change the screen was called
    after it (only screenshots, waits, zooms, cursor queries and ``resume_cached_trajectory``
    may come after it), else ``None``."""
    found = find_recent_screenshot_block(messages)
    if found is None:
        return None
    for message in messages[found[0] + 1 :]:
        for call in message.tool_uses if message.role == "assistant" else []:
            action = parse_action(call)
            harmless = action is not None and action.name in OTHER_ACTIONS
            if not harmless and call.name != RESUME_TOOL_NAME:
                return None
    return decode_screenshot(found[1].source.data, f"message {found[0]}")


def _failed_call(messages: list[MessageParam], call_id: str) -> str | None:
    """The error text when the call ``call_id`` came back with ``is_error``."""
    if not messages:
        return None
    for result in messages[-1].tool_results:
        if result.tool_use_id == call_id and result.is_error:
            text = (
                result.content
                if isinstance(result.content, str)
                else " ".join(b.text for b in result.content if isinstance(b, TextBlockParam))
            )
            return f"the tool reported an error: {text or 'no details'}"
    return None
