"""The replay as a state machine: every state a value, every transition in one table.

Each state is an immutable value holding the replay's :class:`~askcache.replay.plan.Plan`
(what it runs), its :class:`~askcache.replay.run_progress.Progress` (where it is, what it did) and
what the state itself waits for. ``state.next(observation)`` returns the next state and one
command (:mod:`.commands`): look at the screen, sleep until an instant, emit a tool call, hand
back, finish, or answer whether the replay re-joins (and, where the platform reports
drawing, wait for a frame without any). No state captures, sleeps, writes or
logs: the driver (:mod:`.driver`) does, and tells the state what it saw.

=====================  ==============  ===================================================
State                  Observation     Next states
=====================  ==============  ===================================================
``Idle``               ``Turn``        ``Pausing``, ``Observing``, ``Checking``,
                                       ``AwaitingResult``, ``AwaitingScreenshot``,
                                       ``Ending``, ``Over``, ``Suspended``
``Pausing``            ``Woke``        ``Observing``, ``Checking``, ``AwaitingResult``,
                                       ``AwaitingScreenshot``, ``Suspended``
``Observing``          ``Seen``        ``Checking``, ``AwaitingResult``, ``Suspended``
``Observing``          ``Blind``       ``Suspended``
``Checking``           ``Seen``        ``Checking``, ``AwaitingResult``, ``Suspended``
``Checking``           ``Drawn``       ``Checking``, ``AwaitingResult``, ``Suspended``
``Checking``           ``Blind``       ``Suspended``
``AwaitingScreenshot`` ``Turn``        (as ``Idle``)
``AwaitingResult``     ``Turn``        ``Settling``, ``Verifying``, (as ``Idle``)
``Verifying``          ``Seen``        ``Verifying``, (as ``Idle``)
``Verifying``          ``Blind``       ``Suspended``
``Settling``           ``Seen``        ``Settling``, ``Suspended``
``Settling``           ``Blind``       ``Suspended``
``Ending``             ``Seen``        ``Ending``, ``Over``, ``Suspended``
``Ending``             ``Blind``       ``Suspended``
``Suspended``          ``Ask``         ``Suspended``, ``Rejoining``, ``Idle``
``Rejoining``          ``Seen``        ``Rejoining``, ``Suspended``, ``Idle``
``Rejoining``          ``Blind``       ``Suspended``
=====================  ==============  ===================================================

The same table is in docs/architecture.md; :data:`TRANSITIONS` is it in code, each state's
``next`` is held to it (a transition outside it raises), and a test keeps the three equal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal

from PIL import Image

from askcache.foundation.actions import Action, make_tool_use, new_tool_use_id, parse_action
from askcache.foundation.errors import AskCacheError
from askcache.foundation.messages import MessageParam, ToolUseBlockParam
from askcache.foundation.reasons import HandBackCode
from askcache.foundation.scaling import move_step_input, scale_step_input
from askcache.foundation.screen.damage import FRAME_PERIOD
from askcache.replay.anchor import window_now
from askcache.replay.check import (
    Checked,
    Refused,
    apart_from_window,
    check_ways,
    needs_screen,
    passes,
    unchecked,
)
from askcache.replay.commands import (
    Ask,
    Blind,
    Command,
    Decided,
    Drawn,
    Emit,
    Finished,
    HandBack,
    Look,
    Observation,
    Quiet,
    Seen,
    Sleep,
    Turn,
    Woke,
)
from askcache.replay.effects import (
    ElementEffect,
    checked_effect,
    draws_text,
    effect_problem,
    element_effect,
    failed_call,
    has_effect,
)
from askcache.replay.end_screen import end_verdict
from askcache.replay.plan import CaptureFailedError, Pending, Plan, Stopped
from askcache.replay.rejoin import (
    model_refusal,
    rejoin_problem,
    rejoined_reason,
    screenshot_since_last_action,
    step_refusal,
)
from askcache.replay.result import EndStateVerdict
from askcache.replay.run_progress import Progress
from askcache.replay.screens import Screen, fresh_screenshot, latest_screenshot, screen_of
from askcache.replay.search import search
from askcache.replay.watching import Watch, Watched
from askcache.storage.ledger import FailedCheck, RejoinCondition, RejoinDecision

__all__ = [
    "TRANSITIONS",
    "AwaitingResult",
    "AwaitingScreenshot",
    "Checking",
    "Ending",
    "Idle",
    "Observing",
    "Over",
    "Pausing",
    "Rejoining",
    "Settling",
    "State",
    "Suspended",
    "Transition",
    "Verifying",
    "judge_end",
]

UNREADABLE = (CaptureFailedError, AskCacheError, OSError, ValueError)
"""What a screen that cannot be read raises (a capture that fails, a screenshot that is not
an image): the replay hands back (fails closed)."""


def _unreadable(exc: BaseException) -> str:
    return f"the screen could not be read ({type(exc).__name__}: {exc})"


# ---------------------------------------------------------------------------------------
# The base


@dataclass(frozen=True)
class State:
    """A state of one replay (see the module docstring)."""

    plan: Plan
    progress: Progress

    moves: ClassVar[dict[str, frozenset[str]]] = {}
    """Per observation's class name: the states this one may go to (:data:`TRANSITIONS`)."""

    def next(self, observation: Observation) -> Transition:
        """The next state and command, given ``observation``.

        Raises:
            AskCacheError: ``observation`` is not one this state waits for, or (a bug) the
                transition is not in :data:`TRANSITIONS`.
        """
        kind = type(observation).__name__
        allowed = self.moves.get(kind)
        if allowed is None:
            raise AskCacheError(f"the replay is {type(self).__name__} and does not wait for {kind}")
        state, command = self._next(observation)
        if type(state).__name__ not in allowed:
            raise AskCacheError(
                f"transition {type(self).__name__} --{kind}--> {type(state).__name__} "
                "is not in the replay's transition table"
            )
        return state, command

    def _next(self, observation: Any) -> Transition:
        raise NotImplementedError


Transition = tuple[State, Command]
"""The next state and what the driver does."""


# ---------------------------------------------------------------------------------------
# Shared steps of the transitions (each returns a Transition)


def _hand_back(
    plan: Plan, progress: Progress, messages: list[MessageParam], command: HandBack
) -> Transition:
    """Stop with ``command``: the replay is suspended (it may re-join later at the stopped
    step when that step did not run, at the one after it when it ran). The recorded start
    screen guards the replay's start only: once the model has had the screen, re-joining
    follows the re-join rules."""
    failed: FailedCheck
    if command.step >= len(plan.steps):
        failed = "end_state"
    else:
        failed = "effect" if command.executed else "fingerprint"
    ran = progress.ran if failed == "effect" else None
    if ran is not None and ran.step != command.step:
        ran = None
    stopped = Stopped(command.step, failed, len(messages), ran)
    progress = replace(
        progress,
        seen=progress.seen.handed_back(),
        index=command.step + 1 if command.executed else command.step,
    )
    return Suspended(plan.without_start(), progress, stopped), command


def _turn_begins(
    plan: Plan,
    progress: Progress,
    messages: list[MessageParam],
    now: float,
    *,
    just_acted: bool,
    looked: Screen | None = None,
) -> Transition:
    """The replay's turn at its next step: a fixed delay first when the settings ask for
    one, the end state after the last step."""
    try:
        if progress.index >= len(plan.steps):
            return _end(plan, progress, messages, now)
        delay = plan.settings.delay_time_between_action
        if not progress.first_step and delay:
            # looked at before the delay: the screen is looked at again
            return Pausing(plan, progress, messages, just_acted), Sleep(delay)
        return _step_begins(plan, progress, messages, now, just_acted=just_acted, looked=looked)
    except UNREADABLE as exc:
        return _hand_back(
            plan,
            progress,
            messages,
            HandBack(progress.index, _unreadable(exc), code="screen_unreadable"),
        )


def _step_begins(
    plan: Plan,
    progress: Progress,
    messages: list[MessageParam],
    now: float,
    *,
    just_acted: bool,
    looked: Screen | None,
) -> Transition:
    progress = replace(progress, first_step=False, step_started=now)
    step = plan.steps[progress.index]
    action = parse_action(step)
    if not needs_screen(action):
        record = unchecked(progress.index, step, action)
        return _act(plan, progress, step, Checked(record, None, None), 0.0)
    return _observe(plan, progress, messages, now, just_acted=just_acted, looked=looked)


def _observe(
    plan: Plan,
    progress: Progress,
    messages: list[MessageParam],
    now: float,
    *,
    just_acted: bool,
    looked: Screen | None,
) -> Transition:
    """The screen to check the next step on: right after a replayed step, a fresh look
    (the step's result screenshot was taken the moment it ran; the look its effect was seen
    on is fresh, ``looked``); else the history's latest screenshot when no action came after
    it, a look when the screen can be watched, or a screenshot asked of the conversation
    (once per step: after that, the newest screenshot is used)."""
    if just_acted and plan.watchable:
        if looked is not None:
            return _check_begins(plan, progress, messages, looked, now)
        return Observing(plan, progress, messages), Look(now)
    image = fresh_screenshot(messages)
    if image is None and plan.watchable:
        return Observing(plan, progress, messages), Look(now)
    if image is None and progress.screenshot_asked_for == progress.index:
        found = latest_screenshot(messages)  # asked once for this step: the newest one
        image = found[1] if found is not None else None
    if image is not None:
        if plan.lists_windows:
            return Observing(plan, progress, messages, image), Look(now, grab=False)
        return _check_begins(plan, progress, messages, screen_of(plan.space, image), now)
    action = parse_action(plan.steps[progress.index])
    call = make_tool_use("screenshot", action.shape if action else plan.tool_shape)
    progress = replace(
        progress,
        screenshot_asked_for=progress.index,
        screenshots_taken=progress.screenshots_taken + 1,
    )
    return AwaitingScreenshot(plan, progress, Pending(call.id, None)), Emit(call)


def _check_begins(
    plan: Plan, progress: Progress, messages: list[MessageParam], screen: Screen, now: float
) -> Transition:
    starting = progress.starting
    progress = replace(progress, starting=False)
    step = plan.steps[progress.index]
    checking = Checking(plan, progress, messages, step, parse_action(step), starting)
    return checking._watch_from(screen, now, quiet=not starting)


def _act(
    plan: Plan, progress: Progress, step: ToolUseBlockParam, checked: Checked, waited: float
) -> Transition:
    """Emit the checked step as a tool call: none of the file's cache-only fields, a new
    id, ``replayed=True`` (the computer tool then skips its settle delay: the replay waits for
    the screen itself), its points moved with its window (when it moved) and scaled to the
    current screen."""
    record = checked.record.model_copy(update={"waited_seconds": waited})
    progress = replace(
        progress.record(record),
        validated=progress.validated + (1 if record.validated else 0),
        unvalidated=progress.unvalidated + (0 if record.validated else 1),
        steps_run=progress.steps_run + 1,
    )
    call = step.model_copy(
        update={
            **dict.fromkeys(ToolUseBlockParam.cache_only_fields),  # the file's, not the call's
            "id": new_tool_use_id(),
            "replayed": True,
            "input": _fit(plan, step.input, checked),
        }
    )
    screen = checked.screen
    same_size = screen is not None and screen.image.size == plan.space
    pending = Pending(
        call.id,
        progress.index,
        checked.thumbnail,
        before_image=screen.image if same_size and screen is not None else None,
        started=progress.step_started,
        anchor=checked.anchor,
        redrawn="look" in (record.decided_by or "") or checked.other_density,
        element=checked.element,
        element_point=checked.element_point,
    )
    progress = replace(
        progress,
        last_anchor=checked.anchor if screen is not None else progress.last_anchor,
        moved_seen=progress.moved_seen or checked.anchor is not None,
        redrawn_seen=progress.redrawn_seen or record.decided_by == "element+look",
        emitted={**progress.emitted, call.id: step},
        seen=progress.seen.emitted(call.id, on_look=screen is not None),
    )
    return AwaitingResult(plan, progress, pending), Emit(call)


def _fit(plan: Plan, arguments: dict[str, Any], checked: Checked) -> dict[str, Any]:
    space, screen = plan.space, checked.screen
    if space is None or screen is None:
        return arguments
    if checked.anchor is not None:
        arguments = move_step_input(arguments, checked.anchor.offset, space)
    if screen.image.size == space:
        return arguments
    return scale_step_input(arguments, space, screen.image.size)


def _end(plan: Plan, progress: Progress, messages: list[MessageParam], now: float) -> Transition:
    """After the last step: the final screen against the recorded end state, watched until
    it matches or settles."""
    config, recorded = plan.config, plan.end_state
    if plan.policy.end_state == "off" or plan.end is None or config is None or recorded is None:
        return Over(plan, progress), Finished(None)
    image = fresh_screenshot(messages, "the last screen")
    if image is None:
        if not plan.watchable:
            return Over(plan, progress), Finished(None)
        return Ending(plan, progress, messages), Look(now)
    return Ending(plan, progress, messages)._watch_from(screen_of(plan.space, image), now)


def judge_end(
    plan: Plan, progress: Progress, messages: list[MessageParam], image: Image.Image | None
) -> EndStateVerdict | None:
    """The screen as the conversation ended (the history's latest screenshot when no action
    came after it, else ``image``, a look taken now) against the recorded end state, looked
    at once (``None``: not compared)."""
    config = plan.config
    if plan.policy.end_state == "off" or plan.end is None or config is None:
        return None
    if plan.end_state is None:
        return None
    found = fresh_screenshot(messages, "the last screen") or image
    if found is None:
        return None
    return end_verdict(plan, progress.last_anchor, screen_of(plan.space, found))


def _screen(plan: Plan, seen: Seen, image: Image.Image | None = None) -> Screen:
    picture = seen.image if seen.image is not None else image
    if picture is None:
        raise AskCacheError("a look without a screenshot")
    return screen_of(plan.space, picture, seen.windows, seen.mark, seen.elements)


def _watch(
    plan: Plan,
    screen: Screen,
    now: float,
    evaluate: Callable[[Screen], Any],
    done: Callable[[Any], bool],
    **options: Any,
) -> Watch[Any] | Watched[Any]:
    settings = plan.settings
    return Watch.begin(
        screen,
        now,
        evaluate,
        done,
        watchable=plan.watchable,
        timeout=settings.settle_timeout,
        quiet_period=settings.settle_quiet_period,
        config=plan.config,
        volatile=plan.volatile,
        **options,
    )


def _never(_: object) -> bool:
    return False


def _as_is(screen: Screen) -> Screen:
    return screen


# ---------------------------------------------------------------------------------------
# The states


@dataclass(frozen=True)
class Idle(State):
    """Activated (or re-joined), waiting for the replay's turn in the conversation."""

    def _next(self, observation: Turn) -> Transition:
        return _turn_begins(
            self.plan, self.progress, observation.messages, observation.at, just_acted=False
        )


@dataclass(frozen=True)
class AwaitingScreenshot(State):
    """A screenshot was asked of the conversation (the replay cannot look itself)."""

    pending: Pending

    def _next(self, observation: Turn) -> Transition:
        progress = replace(self.progress, ran=self.pending)
        failed = failed_call(observation.messages, self.pending.call_id)
        if failed is not None:
            problem = f"no screenshot could be taken: {failed}"
            command = HandBack(progress.index, problem, code="screen_unreadable")
            return _hand_back(self.plan, progress, observation.messages, command)
        return _turn_begins(
            self.plan, progress, observation.messages, observation.at, just_acted=False
        )


@dataclass(frozen=True)
class Pausing(State):
    """The fixed delay the settings ask for between two steps."""

    messages: list[MessageParam]
    just_acted: bool

    def _next(self, observation: Woke) -> Transition:
        try:
            return _step_begins(
                self.plan,
                self.progress,
                self.messages,
                observation.at,
                just_acted=self.just_acted,
                looked=None,
            )
        except UNREADABLE as exc:
            command = HandBack(self.progress.index, _unreadable(exc), code="screen_unreadable")
            return _hand_back(self.plan, self.progress, self.messages, command)


@dataclass(frozen=True)
class Observing(State):
    """Looking at the screen to check the next step on (``image``: the history's
    screenshot, whose windows are being listed)."""

    messages: list[MessageParam]
    image: Image.Image | None = None

    def _next(self, observation: Seen | Blind) -> Transition:
        if isinstance(observation, Blind):
            command = HandBack(
                self.progress.index, str(observation.error), code="screen_unreadable"
            )
            return _hand_back(self.plan, self.progress, self.messages, command)
        try:
            screen = _screen(self.plan, observation, self.image)
            return _check_begins(self.plan, self.progress, self.messages, screen, observation.at)
        except UNREADABLE as exc:
            command = HandBack(self.progress.index, _unreadable(exc), code="screen_unreadable")
            return _hand_back(self.plan, self.progress, self.messages, command)


CheckStage = Literal["step", "start", "search"]


@dataclass(frozen=True)
class Checking(State):
    """Watching the screen until the step's check passes on a still screen, the screen
    settles without it, or the settle timeout passes.

    Three stages: ``step`` (the step's full check; the trajectory's first acting step also
    waits for the recorded start screen), ``start`` (the start screen never came: the step's
    own checks decide), ``search`` (the step's region no longer matches at its point: the
    bounded search, :mod:`.search`, must find the same one place on a still screen)."""

    messages: list[MessageParam]
    step: ToolUseBlockParam
    action: Action | None
    starting: bool
    """The first step that needs a screen: its wait is the start-up wait."""
    stage: CheckStage = "step"
    watch: Watch[Any] | None = None
    waited: float = 0.0
    """Seconds waited in the stages before this one."""
    refused: Refused | None = None
    """The start screen's refusal (stage ``start``)."""
    searched: Screen | None = None
    """The look the search first ran on (stage ``search``), and what it found there."""
    found: Checked | None = None
    window_at_start: bool = False
    """True when the step's window was listed at the first look of this stage's wait."""

    def _evaluate(self, screen: Screen) -> Checked | Refused:
        if self.stage != "search":
            return check_ways(
                self.plan,
                self.progress.index,
                self.step,
                self.action,
                screen,
                redrawn_seen=self.progress.redrawn_seen,
            )
        if screen is self.searched and self.found is not None:
            return self.found  # the look just searched: not searched again
        found = search(self.plan, self.progress.index, self.step, self.action, screen)
        return found or Refused(
            None, "the search no longer finds one place for the step", code="screen_changed"
        )

    def _still_for(self, outcome: Checked | Refused) -> float:
        """How long the screen must stay still before ``outcome`` counts: a step that will
        act waits ``settle_still_period`` (the replay's first checked step
        ``settle_start_still``: an application just started draws in bursts); a refusal that
        hands back waits for nothing."""
        if not isinstance(outcome, Checked):
            return 0.0
        return self._still_needed()

    def _still_needed(self) -> float:
        settings = self.plan.settings
        if self.starting:
            return max(settings.settle_still_period, settings.settle_start_still)
        return settings.settle_still_period

    def _apart(self, outcome: Checked | Refused) -> set[int]:
        """The tiles that do not touch the window a passing check ran in, where it is now
        (the variant's first step's, when one was taken): changes there do not keep the step
        from acting."""
        config = self.plan.config
        if not isinstance(outcome, Checked) or outcome.screen is None or config is None:
            return set()
        step = self.step
        if outcome.variant is not None:
            step = self.plan.variants[self.progress.index][outcome.variant].steps[0]
        return apart_from_window(step, outcome, outcome.screen.thumbnail(config))

    def _patience(self, outcome: Checked | Refused, screen: Screen) -> float | None:
        """How long an unchanged screen ends the wait for a check that fails on ``screen``
        (``None``: the usual rule, the quiet period or the timeout). Where the step's window
        is listed on the screen, was listed already at the wait's first look, and shows
        something (not a window still blank), and the check fails clearly (its region's
        hashes or the area it changes, not only its ink or tone: a caret blinks), the
        application has answered once that window
        stays unchanged for ``settle_window_still`` (or the step's past waits,
        :attr:`~askcache.replay.plan.Plan.budgets`): the step hands back then. A window that
        is missing, or appeared during the wait, or is blank, belongs to an application that
        may still be starting: the usual rule. A step with no window to look for goes by its
        past waits only, and never the replay's first step (nothing tells a late application
        from another screen). The start screen's wait (the step's own checks pass) and the
        search are not cut short."""
        if self.stage == "search" or isinstance(outcome, Checked):
            return None
        if outcome.final or outcome.own_checks is not None or not _clear_miss(outcome):
            return None
        settings, index = self.plan.settings, self.progress.index
        budget = self.plan.budgets.get(index)
        floor = settings.settle_still_period
        if self.step.window is not None and screen.windows is not None:
            frame = window_now(self.plan, self.step, screen)
            if (
                frame is None
                or not self.window_at_start
                or screen.blank((frame.x, frame.y, frame.width, frame.height))
            ):
                return None
            enough = settings.settle_window_still if budget is None else budget
            return min(max(enough, floor), settings.settle_timeout)
        if budget is None or self.starting:
            return None
        return min(max(budget, floor), settings.settle_timeout)

    def _watch_from(self, screen: Screen, now: float, *, quiet: bool = True) -> Transition:
        listed = screen.windows is not None and window_now(self.plan, self.step, screen)
        checking = replace(self, window_at_start=bool(listed))
        started = _watch(
            checking.plan,
            screen,
            now,
            checking._evaluate,
            passes,
            quiet=quiet,
            still=checking._still_for,
            outside=checking._apart,
            patience=checking._patience,
        )
        return checking._went(started, now)

    def _went(self, watched: Watch[Any] | Watched[Any], now: float) -> Transition:
        if isinstance(watched, Watch):
            mark = watched.screen.mark
            if watched.passing is not None and mark is not None:
                # the platform reports drawing: the passing look counts once nothing was
                # drawn for a frame after it (the first step: for settle_start_still),
                # instead of a second look a still period later
                period = (
                    FRAME_PERIOD if not self.starting else max(FRAME_PERIOD, self._still_needed())
                )
                return replace(self, watch=watched), Quiet(mark, period)
            return replace(self, watch=watched), Look(watched.look_at)
        return self._over(watched, now)

    def _next(self, observation: Seen | Drawn | Blind) -> Transition:
        if isinstance(observation, Blind):
            command = HandBack(
                self.progress.index, str(observation.error), code="screen_unreadable"
            )
            return _hand_back(self.plan, self.progress, self.messages, command)
        assert self.watch is not None
        if isinstance(observation, Drawn):
            watch = self.watch
            if observation.drawn:  # drawn since the passing look: look again
                return self, Look(observation.at)
            waited = observation.at - watch.started
            return self._over(Watched(watch.outcome, waited, watch.screen), observation.at)
        try:
            screen = _screen(self.plan, observation)
            return self._went(self.watch.saw(screen, observation.at), observation.at)
        except UNREADABLE as exc:
            command = HandBack(self.progress.index, _unreadable(exc), code="screen_unreadable")
            return _hand_back(self.plan, self.progress, self.messages, command)

    def _over(self, watched: Watched[Any], now: float) -> Transition:
        outcome: Checked | Refused = watched.outcome
        waited = self.waited + watched.waited
        if self.stage == "step" and isinstance(outcome, Refused) and outcome.own_checks:
            # the start screen never came: the step's own checks decide, as for any step
            # (on a still screen: the last look may be a frame still being drawn)
            after = replace(
                self, plan=self.plan.without_start(), stage="start", waited=waited, refused=outcome
            )
            return after._watch_from(watched.screen, now)
        if self.stage == "start" and isinstance(outcome, Checked):
            assert self.refused is not None
            outcome = _without_start_screen(self.refused, outcome, waited)
        if self.stage != "search" and isinstance(outcome, Refused) and _region_moved(outcome):
            found = search(self.plan, self.progress.index, self.step, self.action, watched.screen)
            if found is not None:
                after = replace(
                    self,
                    stage="search",
                    waited=waited,
                    refused=outcome,
                    searched=watched.screen,
                    found=found,
                )
                return after._watch_from(watched.screen, now)
        if self.stage == "search":
            if isinstance(outcome, Checked):
                record = outcome.record.model_copy(update={"waited_seconds": waited})
                outcome = replace(outcome, record=record)
            else:
                assert self.refused is not None
                outcome, waited = self.refused, self.waited
        return self._decide(outcome, waited, watched)

    def _decide(
        self, outcome: Checked | Refused, waited: float, watched: Watched[Any]
    ) -> Transition:
        last = watched.screen
        plan, index = self.plan, self.progress.index
        progress = replace(
            self.progress.looked(last.image).with_view(index, outcome.view),
            other_density_seen=self.progress.other_density_seen or outcome.other_density,
        )
        if isinstance(outcome, Refused):
            if outcome.record is not None:
                progress = progress.record(
                    outcome.record.model_copy(update={"waited_seconds": waited})
                )
            problem = outcome.problem
            if watched.ended == "patient":
                problem += (
                    f"; the screen stayed unchanged while its check failed (waited "
                    f"{waited:.1f} s): the application has answered and shows another screen"
                )
            elif self.starting and not outcome.final and plan.watchable:
                problem += (
                    f"; waited {waited:.1f} s (settle_timeout "
                    f"{plan.settings.settle_timeout:g} s) for the screen the replay's first "
                    "step expects: the application may not have started, or shows another "
                    "screen"
                )
            return _hand_back(
                plan, progress, self.messages, HandBack(index, problem, code=outcome.code)
            )
        step = self.step
        if outcome.variant is not None:
            plan = plan.take_variant(index, outcome.variant)
            progress = replace(progress, variants_used=(*progress.variants_used, index))
            step = plan.steps[index]
        return _act(plan, progress, step, outcome, waited)


def _clear_miss(outcome: Refused) -> bool:
    """True when the step was refused for its region's hashes (main or detail beyond their
    thresholds) or for the area it changed when recorded: another screen. A refusal for the
    ink or the tone alone, its hashes within their thresholds, may be a blinking caret or a
    hover that passes in a moment: it is waited on as before."""
    record = outcome.record
    if record is None or record.distance is None or record.threshold is None:
        return True
    if record.affected_tiles is not None:
        return True  # the area it changed looks different
    if record.distance > record.threshold:
        return True
    detail, limit = record.detail_distance, record.detail_threshold
    return detail is not None and limit is not None and detail > limit


def _without_start_screen(refused: Refused, checked: Checked, waited: float) -> Checked:
    """The first step after its wait for the start screen ran out: the step's own checks
    passed on the last screen, so it runs on them; the record says what differed."""
    record = checked.record
    note = (
        f"{record.note or 'checked'}; {refused.problem}, after waiting {waited:.1f} s for it: "
        "ran on the step's own checks"
    )
    return replace(checked, record=record.model_copy(update={"note": note}))


def _region_moved(outcome: Refused) -> bool:
    """True when the step was refused because its main region does not match (what a
    search may find elsewhere), not for its detail, tone or the area it changed."""
    record = outcome.record
    return (
        not outcome.final
        and record is not None
        and record.distance is not None
        and record.threshold is not None
        and record.distance > record.threshold
    )


@dataclass(frozen=True)
class AwaitingResult(State):
    """A replayed step's call is out: the next turn brings its result."""

    pending: Pending

    def _next(self, observation: Turn) -> Transition:
        pending, messages, now = self.pending, observation.messages, observation.at
        assert pending.step is not None
        progress = replace(self.progress, ran=pending)
        try:
            failed = failed_call(messages, pending.call_id)
            if failed is not None:
                progress = progress.forget(pending.call_id)
                command = HandBack(pending.step, failed, executed=True, code="tool_failed")
                return Settling.before(self.plan, progress, messages, command, now)
            return Verifying.begin(self.plan, progress, pending, messages, now)
        except UNREADABLE as exc:
            command = HandBack(
                pending.step, _unreadable(exc), executed=True, code="screen_unreadable"
            )
            return _hand_back(self.plan, progress, messages, command)


def _effect_seen(found: str | ElementEffect | None) -> bool:
    """Whether a look showed the step's effect (or its element said it happened)."""
    return not isinstance(found, str)


@dataclass(frozen=True)
class Verifying(State):
    """Watching for the effect the step had when recorded (:mod:`.effects`): the tiles near
    its point, the places away from it, the typed text drawn."""

    pending: Pending
    messages: list[MessageParam]
    watch: Watch[Any] | None = None
    result: Screen | None = None
    """The result's screenshot, when the watch began on it."""

    @classmethod
    def begin(
        cls,
        plan: Plan,
        progress: Progress,
        pending: Pending,
        messages: list[MessageParam],
        now: float,
    ) -> Transition:
        assert pending.step is not None
        step = plan.steps[pending.step]
        effect = checked_effect(plan.policy, step)
        verifying = cls(plan, progress, pending, messages)
        if effect is None or plan.config is None or pending.before is None:
            return verifying._verified(None, None, now, effect="not_checked")
        if not has_effect(effect, pending.before_image):
            return verifying._verified(None, None, now, effect="none_recorded")
        image = fresh_screenshot(messages, "the result")
        if image is None:
            if not plan.watchable:
                return verifying._verified(None, None, now, effect="not_checked")
            return verifying, Look(now)
        result = screen_of(plan.space, image)
        return replace(verifying, result=result)._watch_from(result, now)

    def _evaluate(self, screen: Screen) -> str | ElementEffect | None:
        """Why ``screen`` does not show the step's effect (``None``: it does); on a screen
        drawn otherwise, the step's element may say what the pixels cannot
        (:func:`~askcache.replay.effects.element_effect`)."""
        problem = self._pixel_problem(screen)
        if problem is None:
            return None
        words = self._by_element(screen)
        return problem if words is None else ElementEffect(words)

    def _by_element(self, screen: Screen) -> str | None:
        """What the step's element says it did, where that stands in for its pixels: on a
        screen this replay found drawn otherwise (this step or an earlier one allowed by its
        element's look, or another density), in a replay with no parameter values, the element
        its check found before it, asked again at the same place (a typed text must also be
        seen drawn near where it was, as on any screen drawn otherwise)."""
        pending, plan = self.pending, self.plan
        before, point = pending.element, pending.element_point
        if before is None or point is None or plan.values or screen.elements is None:
            return None
        if not (pending.redrawn or self.progress.redrawn_seen):
            return None
        assert pending.step is not None
        assert pending.before is not None
        assert plan.config is not None
        step = plan.steps[pending.step]
        recorded = step.element.tree if step.element is not None else None
        words = element_effect(step, recorded, before, screen.elements.at(point))
        if words is None or not draws_text(step):
            return words
        effect = checked_effect(plan.policy, step)
        assert effect is not None
        effect = effect.model_copy(update={"parameter_after": list(effect.tiles), "elsewhere": []})
        offset = pending.anchor.offset if pending.anchor is not None else (0, 0)
        seen = screen.moved(offset)
        drawn = effect_problem(
            effect, plan.config, pending.before, None, seen, typed=True, redrawn=True
        )
        return words if drawn is None else None

    def _pixel_problem(self, screen: Screen) -> str | None:
        pending, plan = self.pending, self.plan
        assert pending.step is not None
        assert pending.before is not None
        assert plan.config is not None
        step = plan.steps[pending.step]
        effect = checked_effect(plan.policy, step)
        assert effect is not None
        if pending.redrawn:  # drawn otherwise: nothing can be compared with the recording
            effect = effect.model_copy(
                update={"parameter_after": list(effect.tiles), "elsewhere": []}
            )
        offset = pending.anchor.offset if pending.anchor is not None else (0, 0)
        problem = effect_problem(
            effect,
            plan.config,
            pending.before,
            pending.before_image,
            screen.moved(offset),
            typed=draws_text(step),
            redrawn=pending.redrawn,
        )
        anchor, image = pending.anchor, pending.before_image
        if problem is None or anchor is None or anchor.how != "element" or image is None:
            return problem
        # an element moved inside its window: what it changes may have moved with it, or
        # stayed where the window shows it (a status line): either is its effect
        before = screen_of(plan.space, image).thumbnail(plan.config)
        unmoved = effect_problem(effect, plan.config, before, image, screen, typed=draws_text(step))
        return None if unmoved is None else problem

    def _watch_from(self, screen: Screen, now: float) -> Transition:
        try:
            started = _watch(self.plan, screen, now, self._evaluate, _effect_seen)
        except ValueError as exc:
            return self._verified(
                f"the step's recorded effect cannot be checked: {exc}",
                None,
                now,
                code="unchecked_step",
            )
        return self._went(started, now)

    def _went(self, watched: Watch[Any] | Watched[Any], now: float) -> Transition:
        if isinstance(watched, Watch):
            return replace(self, watch=watched), Look(watched.look_at)
        progress = self.progress
        waited = progress.records[-1].effect_waited_seconds + watched.waited
        progress = progress.amend_last(effect_waited_seconds=waited).looked(watched.screen.image)
        outcome: str | ElementEffect | None = watched.outcome
        looked = None if watched.screen is self.result else watched.screen
        if isinstance(outcome, ElementEffect):
            note = progress.records[-1].note
            words = f"effect: {outcome.words}"
            progress = progress.amend_last(note=f"{note}; {words}" if note else words)
            return replace(self, progress=progress)._verified(None, looked, now, effect="element")
        effect = "seen" if outcome is None else None
        return replace(self, progress=progress)._verified(outcome, looked, now, effect=effect)

    def _next(self, observation: Seen | Blind) -> Transition:
        now = observation.at
        if isinstance(observation, Blind):
            return self._verified(
                f"its effect cannot be checked: {observation.error}",
                None,
                now,
                code="screen_unreadable",
            )
        try:
            screen = _screen(self.plan, observation)
            if self.watch is None:
                return self._watch_from(screen, now)
            return self._went(self.watch.saw(screen, now), now)
        except ValueError as exc:
            return self._verified(
                f"the step's recorded effect cannot be checked: {exc}",
                None,
                now,
                code="unchecked_step",
            )
        except UNREADABLE as exc:
            return self._verified(
                f"its effect cannot be checked: {_unreadable(exc)}",
                None,
                now,
                code="screen_unreadable",
            )

    def _verified(
        self,
        problem: str | None,
        looked: Screen | None,
        now: float,
        *,
        effect: str | None = None,
        code: HandBackCode = "effect_missing",
    ) -> Transition:
        pending = self.pending
        assert pending.step is not None
        progress = self.progress
        if effect is not None:
            progress = progress.amend_last(effect=effect)
        progress = progress.amend_last(seconds=now - pending.started)
        if problem is not None:
            progress = progress.forget(pending.call_id)  # it did not work as recorded
            command = HandBack(pending.step, problem, executed=True, code=code)
            return _hand_back(self.plan, progress, self.messages, command)
        progress = replace(progress, index=pending.step + 1)
        return _turn_begins(self.plan, progress, self.messages, now, just_acted=True, looked=looked)


@dataclass(frozen=True)
class Settling(State):
    """Before handing back after a step that ran but whose effect was not watched (its tool
    call failed): watching the screen until it stays unchanged for the quiet period (or the
    timeout), so the model's first look shows what the step did."""

    messages: list[MessageParam]
    command: HandBack
    watch: Watch[Any] | None = None

    @classmethod
    def before(
        cls,
        plan: Plan,
        progress: Progress,
        messages: list[MessageParam],
        command: HandBack,
        now: float,
    ) -> Transition:
        if not plan.watchable or plan.config is None:
            return _hand_back(plan, progress, messages, command)
        return cls(plan, progress, messages, command), Look(now)

    def _next(self, observation: Seen | Blind) -> Transition:
        if isinstance(observation, Blind):
            return _hand_back(self.plan, self.progress, self.messages, self.command)
        try:
            screen = _screen(self.plan, observation)
            if self.watch is None:
                watched = _watch(self.plan, screen, observation.at, _as_is, _never)
            else:
                watched = self.watch.saw(screen, observation.at)
        except UNREADABLE:
            return _hand_back(self.plan, self.progress, self.messages, self.command)
        if isinstance(watched, Watch):
            return replace(self, watch=watched), Look(watched.look_at)
        return _hand_back(self.plan, self.progress, self.messages, self.command)


@dataclass(frozen=True)
class Ending(State):
    """After the last step: watching the final screen until it matches the recorded end
    state or settles."""

    messages: list[MessageParam]
    watch: Watch[Any] | None = None

    def _evaluate(self, screen: Screen) -> EndStateVerdict:
        return end_verdict(self.plan, self.progress.last_anchor, screen)

    def _watch_from(self, screen: Screen, now: float) -> Transition:
        watched = _watch(self.plan, screen, now, self._evaluate, lambda v: v.matched)
        return self._went(watched)

    def _went(self, watched: Watch[Any] | Watched[Any]) -> Transition:
        if isinstance(watched, Watch):
            return replace(self, watch=watched), Look(watched.look_at)
        verdict: EndStateVerdict = watched.outcome
        progress = self.progress.looked(watched.screen.image)  # the screen the steps left
        hand_back = not verdict.matched and self.plan.policy.end_state == "hand_back"
        return Over(self.plan, progress), Finished(verdict, hand_back=hand_back)

    def _next(self, observation: Seen | Blind) -> Transition:
        if isinstance(observation, Blind):
            command = HandBack(
                len(self.plan.steps),
                f"the end state cannot be checked: {observation.error}",
                code="screen_unreadable",
            )
            return _hand_back(self.plan, self.progress, self.messages, command)
        try:
            screen = _screen(self.plan, observation)
            if self.watch is None:
                return self._watch_from(screen, observation.at)
            return self._went(self.watch.saw(screen, observation.at))
        except UNREADABLE as exc:
            command = HandBack(len(self.plan.steps), _unreadable(exc), code="screen_unreadable")
            return _hand_back(self.plan, self.progress, self.messages, command)


@dataclass(frozen=True)
class Over(State):
    """Every step ran and the end state was judged: nothing more to do."""


@dataclass(frozen=True)
class Suspended(State):
    """Handed back: the model has the turn. After each of its turns the replay may re-join
    under the rules of :mod:`.rejoin`."""

    stopped: Stopped

    def _next(self, observation: Ask) -> Transition:
        plan, progress, messages = self.plan, self.progress, observation.messages
        if progress.index >= len(plan.steps):
            return self, Decided(rejoined=False)  # nothing left to resume at
        refusal = model_refusal(messages, self.stopped, observation.requested)
        if refusal is not None:
            return self._decide(observation, *refusal)
        problem = step_refusal(plan, progress.index)
        if problem is not None:
            return self._decide(observation, "screen", problem)
        try:  # the screenshot is outside input: one that cannot be read refuses the re-join
            found = screenshot_since_last_action(messages)
        except UNREADABLE as exc:
            return self._decide(observation, "screen", _unreadable(exc))
        if found is None and not plan.watchable:
            return self._decide(
                observation, "screen", "no screenshot was taken after the model's last action"
            )
        rejoining = Rejoining(plan, progress, self.stopped, observation, found)
        if found is not None and plan.lists_windows:
            return rejoining, Look(observation.at, grab=False)
        if found is not None:
            return rejoining._latest(screen_of(plan.space, found), observation.at)
        return replace(rejoining, settling=True), Look(observation.at)

    def _decide(self, asked: Ask, refused_by: RejoinCondition | None, reason: str) -> Transition:
        return _decision(
            self.plan, self.progress, self.stopped, asked, refused_by=refused_by, reason=reason
        )


def _decision(
    plan: Plan,
    progress: Progress,
    stopped: Stopped,
    asked: Ask,
    *,
    refused_by: RejoinCondition | None,
    reason: str,
) -> Transition:
    """Record the re-join decision; resume (``Idle``) when nothing refused it."""
    decision = RejoinDecision(
        step_index=progress.index,
        failed_check=stopped.check,
        rejoined=refused_by is None,
        refused_by=refused_by,
        reason=reason,
        requested=asked.requested,
        after_message=len(asked.messages),
    )
    progress = replace(progress, rejoin_decisions=(*progress.rejoin_decisions, decision))
    if refused_by is not None:
        return Suspended(plan, progress, stopped), Decided(rejoined=False)
    progress = replace(progress, rejoins=progress.rejoins + 1, first_step=True)
    return Idle(plan, progress), Decided(rejoined=True)


@dataclass(frozen=True)
class Rejoining(State):
    """Deciding whether the replay takes over again: the latest screenshot (when the model
    took one after its last action), then the screen once settled (a slow application may
    not have answered the model's action yet), must pass the resumed step's check and the
    check that failed."""

    stopped: Stopped
    asked: Ask
    found: Image.Image | None
    """The history's screenshot after the model's last action, if any."""
    watch: Watch[Any] | None = None
    settling: bool = False

    def _problem(self, screen: Screen, where: str) -> str | None:
        return rejoin_problem(self.plan, self.progress.index, screen, self.stopped, where=where)

    def _decide(self, refused_by: RejoinCondition | None, reason: str) -> Transition:
        return _decision(
            self.plan,
            self.progress,
            self.stopped,
            self.asked,
            refused_by=refused_by,
            reason=reason,
        )

    def _latest(self, screen: Screen, now: float) -> Transition:
        problem = self._problem(screen, "the latest screenshot")
        if problem is not None:
            return self._decide("screen", problem)
        if not self.plan.watchable:
            return self._decide(None, rejoined_reason(self.progress.index, self.stopped))
        return replace(self, settling=True), Look(now)

    def _next(self, observation: Seen | Blind) -> Transition:
        if isinstance(observation, Blind):
            return self._decide("screen", _unreadable(observation.error))
        try:
            if not self.settling:
                assert self.found is not None
                screen = screen_of(self.plan.space, self.found, observation.windows)
                return self._latest(screen, observation.at)
            screen = _screen(self.plan, observation)
            if self.watch is None:
                watched = _watch(self.plan, screen, observation.at, _as_is, _never)
            else:
                watched = self.watch.saw(screen, observation.at)
            if isinstance(watched, Watch):
                return replace(self, watch=watched), Look(watched.look_at)
            problem = self._problem(watched.screen, "the settled screen")
        except UNREADABLE as exc:
            return self._decide("screen", _unreadable(exc))
        if problem is not None:
            return self._decide("screen", problem)
        return self._decide(None, rejoined_reason(self.progress.index, self.stopped))


# ---------------------------------------------------------------------------------------
# The table

_AS_IDLE = frozenset(
    {
        "Pausing",
        "Observing",
        "Checking",
        "AwaitingResult",
        "AwaitingScreenshot",
        "Ending",
        "Over",
        "Suspended",
    }
)

TRANSITIONS: dict[str, dict[str, frozenset[str]]] = {
    "Idle": {"Turn": _AS_IDLE},
    "Pausing": {
        "Woke": frozenset(
            {"Observing", "Checking", "AwaitingResult", "AwaitingScreenshot", "Suspended"}
        )
    },
    "Observing": {
        "Seen": frozenset({"Checking", "AwaitingResult", "Suspended"}),
        "Blind": frozenset({"Suspended"}),
    },
    "Checking": {
        "Seen": frozenset({"Checking", "AwaitingResult", "Suspended"}),
        "Drawn": frozenset({"Checking", "AwaitingResult", "Suspended"}),
        "Blind": frozenset({"Suspended"}),
    },
    "AwaitingScreenshot": {"Turn": _AS_IDLE},
    "AwaitingResult": {"Turn": _AS_IDLE | {"Settling", "Verifying"}},
    "Verifying": {
        "Seen": _AS_IDLE | {"Verifying"},
        "Blind": frozenset({"Suspended"}),
    },
    "Settling": {
        "Seen": frozenset({"Settling", "Suspended"}),
        "Blind": frozenset({"Suspended"}),
    },
    "Ending": {
        "Seen": frozenset({"Ending", "Over", "Suspended"}),
        "Blind": frozenset({"Suspended"}),
    },
    "Over": {},
    "Suspended": {"Ask": frozenset({"Suspended", "Rejoining", "Idle"})},
    "Rejoining": {
        "Seen": frozenset({"Rejoining", "Suspended", "Idle"}),
        "Blind": frozenset({"Suspended"}),
    },
}
"""Per state, per observation: the states it may go to (the module docstring's table)."""

for _state in (
    Idle,
    AwaitingScreenshot,
    Pausing,
    Observing,
    Checking,
    AwaitingResult,
    Verifying,
    Settling,
    Ending,
    Over,
    Suspended,
    Rejoining,
):
    _state.moves = TRANSITIONS[_state.__name__]
del _state
