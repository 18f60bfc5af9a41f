"""One replay: what an activation needs, and the phases every step goes through.

:class:`ReplaySession` holds the steps (parameters filled in), the settings, the index and the
result. :meth:`ReplaySession.next` is the whole engine: given the conversation's messages it
returns the next :data:`~askcache.replay.commands.Command` for the executor — emit a tool call, hand
back, or finish. Each step goes through named phases, each returning a typed outcome:

``observe``  the latest screen: the history's screenshot when none was taken since the last
             action, else a fresh capture (or a screenshot request through the conversation);
             right after a replayed step, a fresh capture when the screen can be watched (the
             step's result screenshot was taken the moment it ran), or the capture its verify
             phase saw the effect on
``wait``     watch the screen (soon at first, then less often) until the step's checks pass
             on a screen that then stays still for ``settle_still_period`` (do not act on a
             frame still being drawn), or until it has stayed unchanged and still different
             for the quiet period, or a timeout (a screen that comes back to one it showed
             lately, a blinking caret, has not changed); the replay's first checked step waits
             for the timeout (the application may still be starting: an empty screen stays
             unchanged until its window appears)
``check``    the step's fingerprint (perceptual hashes of the regions at its point) and the
             area it changed when recorded, as it looked before the action; where its window
             is now when it moved (:mod:`.anchor`); when its region does not match and there
             is no window to anchor to, once the wait is over, a bounded search for the one
             place it moved to (:mod:`.search`), under the same full check
``act``      emit the step, its point scaled to the current screen
``verify``   after the action, watch for the effect it had when recorded: an action that
             changed its area then but changes nothing now did not land

and after the last step, the **end state**: the final screen against the recording's. A phase
that cannot decide fails closed: a step that should be checked but cannot be is not run, and
a screenshot the replay takes itself that fails :data:`~askcache.replay.state.CAPTURE_ATTEMPTS`
times in a row is a hand-back, not an exception (one failed grab does not end a wait). A hand-back
right after a step whose tool call failed first lets the screen settle, so the model's first look
shows what that step did (and the model does not do it again). After a
hand-back the replay is suspended and re-joins only under the rules of :mod:`askcache.replay.rejoin`
(the model acted, goes on, and the screen passes both the next step's check and the check that
failed); :meth:`ReplaySession.try_rejoin` decides and records each decision.

Each phase is a module of :mod:`askcache.replay` (:mod:`.observe`, :mod:`.wait`,
:mod:`.check`, :mod:`.act`, :mod:`.verify`, :mod:`.end_state`, :mod:`.rejoin`), a function of the
shared :class:`~askcache.replay.state.ReplayState`; this module is the state machine that
runs them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from PIL import Image

from askcache.actions import Action, make_tool_use, parse_action
from askcache.errors import AskCacheError
from askcache.messages import MessageParam, ToolUseBlockParam
from askcache.replay.act import act
from askcache.replay.check import (
    Checked,
    Refused,
    apart_from_window,
    check,
    check_ways,
    needs_screen,
    passes,
    unchecked,
)
from askcache.replay.commands import Command, Emit, Finished, HandBack
from askcache.replay.end_state import finish
from askcache.replay.observe import Screen, observe, screen_of
from askcache.replay.rejoin import rejoin_refusal
from askcache.replay.result import EndStateVerdict, StepRecord
from askcache.replay.search import search
from askcache.replay.state import CaptureFailedError, Pending, ReplayState, Stopped
from askcache.replay.verify import Verified, failed_call, verify
from askcache.replay.wait import settle, watch
from askcache.storage.ledger import FailedCheck, RejoinDecision

__all__ = ["ReplaySession"]

logger = logging.getLogger(__name__)


class ReplaySession(ReplayState):
    """One replay of one cache file, step by step (see the module docstring)."""

    def next(self, messages: list[MessageParam]) -> Command:
        """The next command, given the conversation so far. A screen that cannot be read
        (a capture that fails, a screenshot that is not an image) hands back: fail closed."""
        executed: int | None = None
        try:
            just_acted = False
            looked: Screen | None = None
            if self.pending is not None:
                pending, self.pending = self.pending, None
                self.ran = pending
                executed = pending.step
                stop, looked = self._after(pending, messages)
                if stop is not None:
                    return stop
                executed = None
                just_acted = pending.step is not None
            return self._next_step(messages, just_acted=just_acted, looked=looked)
        except (CaptureFailedError, AskCacheError, OSError, ValueError) as exc:
            problem = f"the screen could not be read ({type(exc).__name__}: {exc})"
            if executed is not None:
                return HandBack(executed, problem, executed=True)
            return HandBack(self.index, problem)

    def _next_step(
        self, messages: list[MessageParam], *, just_acted: bool, looked: Screen | None = None
    ) -> Command:
        if self.index >= len(self.steps):
            return finish(self, messages)
        step = self.steps[self.index]
        action = parse_action(step)
        if not self.first_step and self.settings.delay_time_between_action:
            self.sleep(self.settings.delay_time_between_action)
            looked = None  # taken before the delay: the screen is looked at again
        self.first_step = False
        self.step_started = self.clock()
        if not needs_screen(action):
            return act(self, step, Checked(unchecked(self, step, action), None, None), 0.0)
        try:
            return self._observe_and_check(step, action, messages, just_acted, looked)
        except CaptureFailedError as exc:
            return HandBack(self.index, str(exc))

    def _observe_and_check(
        self,
        step: ToolUseBlockParam,
        action: Action | None,
        messages: list[MessageParam],
        just_acted: bool,
        looked: Screen | None,
    ) -> Command:
        screen = observe(self, messages, just_acted, looked)
        if screen is None:
            self.screenshot_asked_for = self.index
            self.result.screenshots_taken += 1
            call = make_tool_use("screenshot", action.shape if action else self.tool_shape)
            self.pending = Pending(call.id, None)
            return Emit(call)
        starting, self.starting = self.starting, False
        last = [screen]

        def evaluate(seen: Screen) -> Checked | Refused:
            last[0] = seen
            return check_ways(self, step, action, seen)

        outcome, waited = self._watch(step, screen, evaluate, quiet=not starting)
        if isinstance(outcome, Refused) and outcome.own_checks is not None:
            # the start screen never came: the step's own checks decide, as for any step
            # (on a still screen: the last look may be a frame still being drawn)
            refused, self.start = outcome, replace(self.start, step=None)
            outcome, more = self._watch(step, last[0], evaluate, quiet=True)
            waited += more
            if isinstance(outcome, Checked):
                outcome = _without_start_screen(refused, outcome, waited)
        if isinstance(outcome, Refused) and _region_moved(outcome):
            found = self._search(step, action, last, waited)
            if found is not None:
                outcome, waited = found
        self.seen.looked(last[0].image)  # what the step acts on, or what the hand-back saw
        if isinstance(outcome, Refused):
            if outcome.record is not None:
                outcome.record.waited_seconds = waited
                self.result.steps.append(outcome.record)
            problem = outcome.problem
            if starting and not outcome.final and self.can_watch():
                problem += (
                    f"; waited {waited:.1f} s (settle_timeout {self.settings.settle_timeout:g} s)"
                    " for the screen the replay's first step expects: the application may not"
                    " have started, or shows another screen"
                )
            return HandBack(self.index, problem)
        if outcome.variant is not None:
            step = self.take_variant(outcome.variant)
        return act(self, step, outcome, waited)

    def _watch(
        self,
        step: ToolUseBlockParam,
        screen: Screen,
        evaluate: Callable[[Screen], Checked | Refused],
        *,
        quiet: bool,
    ) -> tuple[Checked | Refused, float]:
        """Watch until ``evaluate`` passes on a still screen (:func:`~.wait.watch`)."""
        return watch(
            self,
            screen,
            evaluate,
            passes,
            quiet=quiet,
            still=self._still_for,
            outside=lambda seen: self._apart_from_window(step, seen),
        )

    def _search(
        self, step: ToolUseBlockParam, action: Action | None, last: list[Screen], waited: float
    ) -> tuple[Checked, float] | None:
        """The step where the bounded search finds its region (:mod:`.search`) on the last
        look, when the search finds the same one place again on a still screen; with the
        seconds waited in all."""
        screen = last[0]
        first = search(self, step, action, screen)
        if first is None:
            return None

        def evaluate(seen: Screen) -> Checked | Refused:
            if seen is screen:  # the look just searched: not searched again
                return first
            last[0] = seen
            found = search(self, step, action, seen)
            return found or Refused(None, "the search no longer finds one place for the step")

        outcome, more = self._watch(step, screen, evaluate, quiet=True)
        if not isinstance(outcome, Checked):
            return None
        outcome.record.waited_seconds = waited + more
        logger.info("step %d: %s", self.index, outcome.record.note)
        return outcome, waited + more

    def _still_for(self, outcome: Checked | Refused) -> float:
        """How long the screen must stay still before ``outcome`` counts: a step that will
        act waits ``settle_still_period``; a refusal that hands back waits for nothing."""
        return self.settings.settle_still_period if isinstance(outcome, Checked) else 0.0

    def _apart_from_window(self, step: ToolUseBlockParam, outcome: Checked | Refused) -> set[int]:
        """The tiles that do not touch the window a passing check ran in, where it is now
        (the variant's first step's, when one was taken): changes there do not keep the step
        from acting."""
        config = self.file.metadata.screen_state
        if not isinstance(outcome, Checked) or outcome.screen is None or config is None:
            return set()
        if outcome.variant is not None:
            step = self.variants[self.index][outcome.variant].steps[0]
        # the checked screen's thumbnail for its tile grid: the same size as the look's
        return apart_from_window(step, outcome, outcome.screen.thumbnail(config))

    def _after(
        self, pending: Pending, messages: list[MessageParam]
    ) -> tuple[HandBack | None, Screen | None]:
        """Read the result of the call emitted last; verify a step's effect. Returns the
        hand-back, if any, and the screen the verify phase last captured itself (the next
        step is observed on it)."""
        failed = failed_call(messages, pending.call_id)
        if pending.step is None:
            if failed is not None:
                return HandBack(self.index, f"no screenshot could be taken: {failed}"), None
            return None, None
        if failed is not None:
            self.emitted.pop(pending.call_id, None)
            settle(self)
            return HandBack(pending.step, failed, executed=True), None
        try:
            verified = verify(self, pending, messages)
        except CaptureFailedError as exc:
            verified = Verified(f"its effect cannot be checked: {exc}")
        self.result.steps[-1].seconds = self.clock() - pending.started
        if verified.problem is not None:
            self.emitted.pop(pending.call_id, None)  # it did not work as recorded
            return HandBack(pending.step, verified.problem, executed=True), None
        self.index = pending.step + 1
        return None, verified.looked

    def end_state_verdict(self, messages: list[MessageParam]) -> EndStateVerdict | None:
        """The screen as the conversation ended against the recorded end state, looked at
        once (``None``: not compared): how a run the model finished after a hand-back is
        verified (the model's last screenshot came after its own settle delay)."""
        outcome = finish(self, messages, wait=False)
        return outcome.verdict if isinstance(outcome, Finished) else None

    def suspend(self, command: HandBack, at_message: int) -> None:
        """Stop after ``command`` (a hand-back given when the conversation held
        ``at_message`` messages): the replay would resume at the stopped step when it did not
        run, at the one after it when it ran."""
        if command.step >= len(self.steps):
            failed: FailedCheck = "end_state"
        else:
            failed = "effect" if command.executed else "fingerprint"
        ran = self.ran if failed == "effect" and self.ran is not None else None
        if ran is not None and ran.step != command.step:
            ran = None
        self.stopped = Stopped(command.step, failed, at_message, ran)
        self.seen.handed_back()
        self.index = command.step + 1 if command.executed else command.step
        self.suspended = True
        # the recorded start screen guards the replay's start only: once the model has had
        # the screen (a focused field, a closed dialog), re-joining follows the re-join rules
        self.start = replace(self.start, step=None)

    def try_rejoin(self, messages: list[MessageParam], *, requested: bool = False) -> bool:
        """After a hand-back: True (and the replay resumes) when the re-join rules of
        :mod:`askcache.replay.rejoin` hold after the model's latest turn (``requested``: the model
        asked with ``resume_cached_trajectory``). Each decision is appended to
        :attr:`ReplayResult.rejoin_decisions`; nothing is recorded when there is no step left
        to resume at."""
        stopped = self.stopped
        if not self.suspended or stopped is None or self.index >= len(self.steps):
            return False
        refused_by, reason = rejoin_refusal(self, messages, stopped, requested)
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
        self.stopped = None
        self.result.rejoins += 1
        self.result.status = "running"
        self.result.stopped_at_step = None
        self.result.reason = None
        self.first_step = True
        logger.info("replay of %s re-joins at step %d", self.name, self.index)
        return True

    def check_step(self, index: int, image: Image.Image) -> tuple[StepRecord, str | None]:
        """The check phase of step ``index`` on ``image``, alone: no waiting, no action, no
        state changed. Returns the step's record and why the replay would stop before it
        (``None``: it would run)."""
        step = self.steps[index]
        saved, self.index = self.index, index
        try:
            outcome = check(self, step, parse_action(step), screen_of(self, image), keep_view=False)
        finally:
            self.index = saved
        if isinstance(outcome, Refused):
            record = outcome.record or StepRecord(
                step_index=index, action=step.name, validated=False
            )
            return record, outcome.problem
        return outcome.record, None

    def elapsed(self) -> float:
        """Seconds since activation."""
        return self.clock() - self.started

    @property
    def regions(self) -> dict[int, Image.Image]:
        """Per checked step: the region it was checked on (recorded space)."""
        return {index: view.region for index, view in self.views.items()}


def _without_start_screen(refused: Refused, checked: Checked, waited: float) -> Checked:
    """The first step after its wait for the start screen ran out: the step's own checks
    passed on the last screen, so it runs on them; the record says what differed."""
    record = checked.record
    record.note = (
        f"{record.note or 'checked'}; {refused.problem}, after waiting {waited:.1f} s for it: "
        "ran on the step's own checks"
    )
    logger.info("step %d: %s", record.step_index, record.note)
    return checked


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
