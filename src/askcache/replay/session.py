"""One replay of one cache file: its current state, its driver, and its result.

:class:`ReplaySession` holds the replay's current state (:mod:`.states`, a value that each
observation replaces), feeds it observations (:meth:`ReplaySession.feed`, one at a time; or
:meth:`ReplaySession.run`, which carries out the looks and sleeps itself with :mod:`.driver`),
and keeps :attr:`ReplaySession.result` up to date from the state's progress. It is what
:class:`~askcache.replay.executor.CacheExecutor` and the user's own loop (:mod:`askcache.loop`)
talk to; it decides nothing itself.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from PIL import Image

from askcache.cachefile.blind_spots import blind_spots, override_blind_spots
from askcache.cachefile.format import CacheFile
from askcache.foundation.actions import ToolShape, parse_action
from askcache.foundation.messages import MessageParam, ToolUseBlockParam
from askcache.foundation.screen.damage import DamageSource
from askcache.foundation.screen.elements import ElementSource
from askcache.foundation.screen.seen import SeenScreens
from askcache.foundation.screen.windows import WindowFrame
from askcache.foundation.settings import CacheExecutionSettings
from askcache.replay.check import Refused, check
from askcache.replay.commands import (
    Ask,
    Command,
    Decided,
    Finished,
    HandBack,
    Look,
    Observation,
    Quiet,
    Seen,
    Sleep,
    Turn,
)
from askcache.replay.driver import ScreenIO, carry_out
from askcache.replay.observers import NO_OBSERVER, HandedBack, ReplayedStep, RunObserver
from askcache.replay.plan import Plan, Stopped
from askcache.replay.profile import ProfileChoice
from askcache.replay.result import EndStateVerdict, ReplayResult, StepRecord
from askcache.replay.run_progress import Progress, SeenLog
from askcache.replay.screens import fresh_screenshot, screen_of
from askcache.replay.states import Idle, Over, Rejoining, State, Suspended, judge_end
from askcache.replay.step_view import StepView

__all__ = ["ReplaySession"]

logger = logging.getLogger(__name__)


class ReplaySession:
    """One replay of one cache file (see the module docstring).

    Args:
        cache_file: The file as this replay runs it (a learned screen profile's view when
            one was chosen, :func:`~askcache.replay.profile.choose_profile`).
        name: Its name in the storage.
        parameter_values: The values its ``{{name}}`` parameters are filled in with.
        start_step: The step to start at.
        settings: How to check and wait.
        tool_shape: The computer tool's shape, for screenshot requests.
        capture: Takes a screenshot as the model sees it (``None``: the replay cannot look
            itself; it uses the history's screenshots and asks for one when it needs it).
        display_size: The real screen's size, when the computer tool knows it.
        windows: Lists the screen's windows as the model sees them (``None``: it cannot).
        profile: The screen profile it runs on.
        keep_seen: Keep the screens each replayed call was checked on and left.
        keep_failure_views: Keep what a step was checked on when its check refused it
            (:attr:`views`), for the failing-region thumbnails.
        can_look: The replay may look at the screen (default: when ``capture`` is given;
            the user's own loop looks for it, one :meth:`feed` at a time).
        budgets: Per step index: how long its past waits say an unchanged screen may be
            waited on (:attr:`~askcache.replay.plan.Plan.budgets`).
        damage: Where the platform reports drawing (:mod:`askcache.foundation.screen.damage`): a
        step
            acts once nothing was drawn for a frame after the look its check passed on,
            instead of a second look ``settle_still_period`` later.
        observer: Told each replayed step once its record is final, and each hand-back
            (:mod:`.observers`; default: nobody).
        sleep, clock: Injected for tests.
    """

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
        windows: Callable[[], list[WindowFrame] | None] | None = None,
        profile: ProfileChoice | None = None,
        keep_seen: bool = True,
        keep_failure_views: bool = False,
        can_look: bool | None = None,
        budgets: Mapping[int, float] | None = None,
        damage: DamageSource | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        elements: ElementSource | None = None,
        observer: RunObserver = NO_OBSERVER,
    ) -> None:
        self.observer = observer
        self._told = 0
        """Records told to :attr:`observer` so far."""
        self._anchors: dict[int, str] = {}
        """Per record position: how its step's moved window was found."""
        self.io = ScreenIO(capture, windows, sleep, clock, damage, elements)
        plan = Plan.of(
            cache_file,
            name,
            parameter_values=parameter_values,
            settings=settings,
            tool_shape=tool_shape,
            can_look=capture is not None if can_look is None else can_look,
            display_size=display_size,
            lists_windows=windows is not None,
            profile=profile,
        )
        plan = replace(
            plan,
            keep_seen=keep_seen,
            keep_failure_views=keep_failure_views,
            budgets=dict(budgets or {}),
        )
        progress = Progress(index=start_step, started=clock(), seen=SeenLog(keep=keep_seen))
        self.state: State = Idle(plan, progress)
        """The replay's current state."""
        self.result = ReplayResult(
            cache_file=name,
            steps_total=len(plan.steps),
            start_step=start_step,
            profile=plan.profile.screen.id if plan.profile.screen is not None else None,
            learning=plan.profile.learning,
            warnings=[
                *blind_spots(cache_file.metadata.visual_validation),
                *override_blind_spots(
                    cache_file.metadata.visual_validation,
                    threshold=settings.visual_validation_threshold,
                    detail_threshold=settings.visual_validation_detail_threshold,
                ),
            ],
            loosened=list(plan.policy.loosened),
        )

    # -- what it runs and where it is ------------------------------------------------------

    @property
    def plan(self) -> Plan:
        """What the replay runs (its file, steps and settings)."""
        return self.state.plan

    @property
    def progress(self) -> Progress:
        """Where the replay is and what it did."""
        return self.state.progress

    @property
    def file(self) -> CacheFile:
        return self.plan.file

    @property
    def name(self) -> str:
        return self.plan.name

    @property
    def profile(self) -> ProfileChoice:
        return self.plan.profile

    @property
    def settings(self) -> CacheExecutionSettings:
        return self.plan.settings

    @property
    def parameter_values(self) -> Mapping[str, str]:
        return self.plan.values

    @property
    def steps(self) -> Sequence[ToolUseBlockParam]:
        """The steps (parameters filled in, variants taken)."""
        return self.plan.steps

    @property
    def anchors(self) -> Sequence[tuple[int, int] | None]:
        return self.plan.anchors

    @property
    def index(self) -> int:
        """The step the replay is at."""
        return self.progress.index

    @property
    def emitted(self) -> Mapping[str, ToolUseBlockParam]:
        """Per tool call id the replay emitted: the step it replayed."""
        return self.progress.emitted

    @property
    def seen(self) -> SeenScreens:
        """Per replayed call: the screen the replay checked it on and the screen it left."""
        return self.progress.seen.screens()

    @property
    def views(self) -> dict[int, StepView]:
        """Per checked step: what it was checked on (only with ``keep_step_views``; the
        steps a check refused, also with ``keep_failure_views``)."""
        return dict(self.progress.views)

    @property
    def regions(self) -> dict[int, Image.Image]:
        """Per checked step: the region it was checked on (recorded space)."""
        return {index: view.region for index, view in self.progress.views.items()}

    @property
    def suspended(self) -> bool:
        """True after a hand-back: the replay may re-join later."""
        return isinstance(self.state, Suspended | Rejoining)

    @property
    def over(self) -> bool:
        """True once every step ran and the end state was judged."""
        return isinstance(self.state, Over)

    @property
    def stopped(self) -> Stopped | None:
        """Where it handed back (``None``: it is not suspended)."""
        return self.state.stopped if isinstance(self.state, Suspended) else None

    @property
    def moved_seen(self) -> bool:
        return self.progress.moved_seen

    @property
    def other_density_seen(self) -> bool:
        return self.progress.other_density_seen

    def elapsed(self) -> float:
        """Seconds since activation."""
        return self.io.clock() - self.progress.started

    # -- driving -------------------------------------------------------------------------

    def feed(self, observation: Observation) -> Command:
        """One transition: the state takes ``observation``; its command. The result follows
        the new state's progress."""
        before = self.state
        self.state, command = before.next(observation)
        self._follow(before, command)
        return command

    def run(self, observation: Observation) -> Command:
        """Feed ``observation``, carrying out every look and sleep with this session's own
        screen (:mod:`.driver`), until a command the conversation answers."""
        command = self.feed(observation)
        while isinstance(command, Look | Quiet | Sleep):
            command = self.feed(carry_out(command, self.io))
        return command

    def next(self, messages: list[MessageParam]) -> Command:
        """The replay's turn on ``messages`` (the conversation so far), driven to the
        command the conversation answers: a tool call, a hand-back, or the end."""
        return self.run(Turn(messages, self.io.clock()))

    def ask(self, messages: list[MessageParam], *, requested: bool = False) -> Observation:
        """The re-join question after the model's latest turn, as an observation."""
        return Ask(messages, self.io.clock(), requested)

    def try_rejoin(self, messages: list[MessageParam], *, requested: bool = False) -> bool:
        """After a hand-back: True (and the replay resumes) when the re-join rules of
        :mod:`askcache.replay.rejoin` hold after the model's latest turn (``requested``: the
        model asked with ``resume_cached_trajectory``). Each decision is appended to
        :attr:`ReplayResult.rejoin_decisions`."""
        if not isinstance(self.state, Suspended):
            return False
        command = self.run(self.ask(messages, requested=requested))
        return isinstance(command, Decided) and command.rejoined

    def _follow(self, before: State, command: Command) -> None:
        """Bring :attr:`result` up to the new state's progress; log what changed."""
        progress, result = self.progress, self.result
        old = before.progress
        if self.observer is not NO_OBSERVER:
            self._tell(old, command)
        if progress is old:  # a look or a pause that changed nothing the result shows
            return
        for index in progress.variants_used[len(old.variants_used) :]:
            logger.info("replay of %s takes a variant at step %d", self.name, index)
        if progress.steps_run > old.steps_run:  # a step was emitted: its record is the last
            record = progress.records[-1]
            if not record.validated:
                logger.info(
                    "step %d (%s) not validated: %s",
                    record.step_index,
                    record.action,
                    record.note,
                )
        result.steps = list(progress.records)
        result.steps_total = len(self.plan.steps)
        result.steps_run = progress.steps_run
        result.validated = progress.validated
        result.unvalidated = progress.unvalidated
        result.screenshots_taken = progress.screenshots_taken
        result.variants_used = list(progress.variants_used)
        result.rejoin_decisions = list(progress.rejoin_decisions)
        result.rejoins = progress.rejoins
        if isinstance(command, Decided):
            decision = progress.rejoin_decisions[-1] if progress.rejoin_decisions else None
            if command.rejoined:
                result.status = "running"
                result.stopped_at_step = None
                result.reason = None
                result.reason_code = None
                logger.info("replay of %s re-joins at step %d", self.name, progress.index)
            elif decision is not None and len(progress.rejoin_decisions) > len(
                old.rejoin_decisions
            ):
                logger.info("replay of %s does not re-join %s", self.name, decision.describe())

    def _tell(self, old: Progress, command: Command) -> None:
        """Tell :attr:`observer` the steps whose records became final (a later one began,
        its time was set when its effect was read, or the replay handed back or ended), and
        a hand-back."""
        progress = self.progress
        records = progress.records
        if progress.steps_run > old.steps_run and progress.last_anchor is not None:
            self._anchors[len(records) - 1] = progress.last_anchor.how
        handback = command if isinstance(command, HandBack) else None
        ending = handback is not None or isinstance(command, Finished)
        now = time.time_ns()
        profile = self.result.profile
        for position in range(self._told, len(records)):
            record = records[position]
            last = position == len(records) - 1
            if last and record.seconds is None and not ending:
                break
            seconds = record.seconds if record.seconds is not None else record.waited_seconds
            code = (
                handback.code
                if handback is not None and last and handback.step == record.step_index
                else None
            )
            self.observer.step(
                ReplayedStep(
                    trajectory=self.name,
                    profile=profile,
                    record=record,
                    anchor=self._anchors.get(position),
                    handback_code=code,
                    started_ns=now - round(max(seconds, 0.0) * 1e9),
                    ended_ns=now,
                )
            )
            self._told = position + 1
        if handback is not None:
            self.observer.handed_back(HandedBack(self.name, profile, handback.step, handback.code))

    # -- looks without acting ------------------------------------------------------------

    def end_state_verdict(self, messages: list[MessageParam]) -> EndStateVerdict | None:
        """The screen as the conversation ended against the recorded end state, looked at
        once (``None``: not compared): how a run the model finished after a hand-back is
        verified (the model's last screenshot came after its own settle delay)."""
        image = None
        if fresh_screenshot(messages) is None and self.plan.watchable:
            seen = carry_out(Look(self.io.clock()), self.io)
            if not isinstance(seen, Seen):
                return None  # the end state cannot be checked
            image = seen.image
        return judge_end(self.plan, self.progress, messages, image)

    def check_step(self, index: int, image: Image.Image) -> tuple[StepRecord, str | None]:
        """The check of step ``index`` on ``image``, alone: no waiting, no action, no state
        changed. Returns the step's record and why the replay would stop before it
        (``None``: it would run)."""
        step = self.steps[index]
        outcome = check(
            self.plan,
            index,
            step,
            parse_action(step),
            screen_of(self.plan.space, image),
            keep_view=False,
        )
        if isinstance(outcome, Refused):
            record = outcome.record or StepRecord(
                step_index=index, action=step.name, validated=False
            )
            return record, outcome.problem
        return outcome.record, None
