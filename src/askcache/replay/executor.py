"""The replay speaker: routes between a :class:`~askcache.replay.session.ReplaySession` and
the conversation.

The session decides (see its module); the executor turns its commands into messages: a tool
call to run, a hand-back message (a pure function of the outcome, :mod:`.handback`), or the
end of the replay. After a hand-back the session stays *suspended*: after each later model
turn :meth:`CacheExecutor.rejoin_check` asks it whether it may take over again, under the
rules of :mod:`askcache.replay.rejoin` (the model acted and goes on, and the screen passes the next
step's check and the check that failed).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING

from PIL import Image

from askcache.cachefile.format import CacheFile
from askcache.conversation.speakers import AGENT_SPEAKER
from askcache.conversation.turns import SpeakerResult
from askcache.foundation.actions import ToolShape
from askcache.foundation.errors import AskCacheError, CacheInvalidatedError, CacheParameterError
from askcache.foundation.messages import MessageParam, TextBlockParam
from askcache.foundation.parameters import placeholders_in
from askcache.foundation.scaling import ScreenProfile
from askcache.foundation.screen.damage import DamageSource
from askcache.foundation.screen.elements import ElementSource
from askcache.foundation.screen.windows import WindowFrame
from askcache.foundation.settings import CacheExecutionSettings
from askcache.replay.commands import Command, Emit, Finished, HandBack, Turn
from askcache.replay.guard import check_replayable
from askcache.replay.handback import finished_text, hand_back_text
from askcache.replay.observers import NO_OBSERVER, RunObserver
from askcache.replay.profile import ProfileChoice, choose_profile
from askcache.replay.rejoin import RESUME_TOOL_NAME
from askcache.replay.result import ReplayResult
from askcache.replay.screenshot_trim import LatestReplayedScreenshot
from askcache.replay.session import ReplaySession
from askcache.replay.step_view import StepView
from askcache.replay.transcript import secret_values, shown_call
from askcache.storage.ledger import RunLedger, steps_digest, wait_budget

if TYPE_CHECKING:
    from askcache.conversation.turns import Conversation

__all__ = ["CACHE_EXECUTOR", "CacheExecutor"]

logger = logging.getLogger(__name__)

CACHE_EXECUTOR = "cache_executor"
"""Default name of the replay speaker."""


class CacheExecutor:
    """The replay speaker. Activate it with a cache file, then let the conversation run it.

    Args:
        name: Speaker name.
        agent_speaker: Who takes over on a hand-back.
        tool_shape: Shape of the computer tool, for screenshot requests.
        screen: Takes a screenshot as the model sees it; lets the replay watch the screen
            (auto-wait, effects) instead of sleeping.
        display_size: The real screen's size, when the computer tool knows it: on a display
            of another size than the recording's, steps are checked for another pixel
            density (``VisualValidationConfig.other_density``).
        windows: Lists the screen's top-level windows as the model sees them
            (:meth:`askcache.tools.computer.ComputerTool.windows`): a step recorded with its
            window is checked and acted on where that window is now
            (:mod:`askcache.replay.anchor`).
        screen_size: The size of the screenshots the computer tool gives the model, when it
            knows it: with ``display_size``, this run's screen profile, which chooses the
            trajectory a file learned for it (:mod:`askcache.replay.profile`).
        offered_tools: Names of the tools this run offers; a file with a step calling a
            tool outside them (or, other than the computer tool, outside
            ``CacheExecutionSettings.replay_tools``) is refused. ``None``: the computer tool.
        keep_replayed_screenshots: Keep the screenshot of every replayed step's result in
            the history (for a run recorded or healed from its history). ``False``: only
            the latest replayed result keeps its screenshot (:mod:`.screenshot_trim`), so a replay's
            memory does not grow with its steps. The replay's own look at the screen each
            step acted on (:attr:`~askcache.replay.session.ReplaySession.seen`, what a trajectory
            built from the run fingerprints its replayed steps on) is kept with it.
        keep_failure_views: Keep what a step was checked on when its check refused it
            (:attr:`~askcache.replay.session.ReplaySession.views`), for the failing-region
            thumbnails (``CachingSettings.ledger_thumbnails``).
        resume_tool: The model is offered ``resume_cached_trajectory`` (askcache's
            :class:`~askcache.Agent`); ``False`` (the user's own loop, :mod:`askcache.loop`):
            the hand-back message does not name it.
        ledger: The run ledger: when a replay is activated, each step's past waits on this
            screen profile (from the runs of the same steps) bound how long an unchanged
            screen is waited on before handing back (``settle_window_still``,
            :func:`~askcache.storage.ledger.waits.wait_budget`); ``None``, or a ledger that
            cannot be read: no past.
        damage: Where the screen reports drawing, in the coordinates of ``screen``'s images
            (:meth:`askcache.tools.computer.ComputerTool.screen_damage`): a step acts once
            nothing was drawn for a frame after its passing look (``None``: it samples).
        loop_looks: The loop takes the replay's screenshots (the user's own loop: it drives
            the replay with :meth:`begin_turn`, :meth:`begin_rejoin` and
            :meth:`ReplaySession.feed`), so the replay may watch the screen without a
            ``screen`` function of its own.
        elements: What the platform's accessibility tree says is where, in the coordinates
            of ``screen``'s images (:meth:`askcache.tools.computer.ComputerTool.elements`): a
            step recorded with its element is checked by it beside its pixels
            (:mod:`askcache.replay.element_check`; ``None``: pixels and the label's text alone).
        observer: Who watches the run (:mod:`askcache.replay.observers`): each replay's steps
            and hand-backs are told to it. Default: nobody.
        sleep, clock: Injected for tests.
    """

    def __init__(
        self,
        *,
        name: str = CACHE_EXECUTOR,
        agent_speaker: str = AGENT_SPEAKER,
        tool_shape: ToolShape = "tool",
        screen: Callable[[], Image.Image] | None = None,
        display_size: tuple[int, int] | None = None,
        windows: Callable[[], list[WindowFrame] | None] | None = None,
        screen_size: tuple[int, int] | None = None,
        offered_tools: Collection[str] | None = None,
        keep_replayed_screenshots: bool = True,
        keep_failure_views: bool = False,
        resume_tool: bool = True,
        loop_looks: bool = False,
        ledger: RunLedger | None = None,
        damage: DamageSource | None = None,
        elements: ElementSource | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        observer: RunObserver = NO_OBSERVER,
    ) -> None:
        self.name = name
        self.observer = observer
        self.elements = elements
        self.resume_tool = resume_tool
        self.loop_looks = loop_looks
        self.ledger = ledger
        self.damage = damage
        self.offered_tools = offered_tools
        self.agent_speaker = agent_speaker
        self.tool_shape = tool_shape
        self.screen = screen
        self.display_size = display_size
        self.windows = windows
        self.screen_size = screen_size
        self.keep_replayed_screenshots = keep_replayed_screenshots
        self.keep_failure_views = keep_failure_views
        self._latest_screenshot = LatestReplayedScreenshot()
        self._sleep = sleep
        self._clock = clock
        self.session: ReplaySession | None = None
        """The current (or last) replay."""
        self.sessions: list[ReplaySession] = []
        """Every replay activated on this executor, in order."""
        self._return_to_agent = False
        self._secrets: dict[str, str] = {}
        """The values of the current replay's secret parameters: its calls keep them out of
        the history (:mod:`.transcript`)."""

    @property
    def history(self) -> list[ReplayResult]:
        """The results of every replay activated on this executor, in order."""
        return [session.result for session in self.sessions]

    @property
    def is_active(self) -> bool:
        """True while a trajectory is being replayed (not after it ended or handed back)."""
        return self.session is not None and not self.session.suspended and not self._ended

    @property
    def result(self) -> ReplayResult | None:
        """The current (or last) replay's result."""
        return self.session.result if self.session is not None else None

    @property
    def views(self) -> dict[int, StepView]:
        """Per checked step of the current (or last) replay: what it was checked on (kept
        only with ``CacheExecutionSettings.keep_step_views``)."""
        return self.session.views if self.session is not None else {}

    @property
    def regions(self) -> dict[int, Image.Image]:
        """Per checked step of the current (or last) replay: the region it was checked on
        (kept only with ``CacheExecutionSettings.keep_step_views``)."""
        return self.session.regions if self.session is not None else {}

    @property
    def _ended(self) -> bool:
        return self.session is not None and self.session.result.status in (
            "completed",
            "completed_unverified",
        )

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
            CacheFileRefusedError, CacheSignatureError: the file may not run here
                (:func:`~askcache.replay.guard.check_replayable`).
            CacheParameterError: parameter values are missing or unknown.
            CacheInvalidatedError: the file is marked invalid (and the settings do not
                allow it).
            AskCacheError: ``start_from_step_index`` is outside ``0..len(trajectory)``.
        """
        settings = execution_settings or CacheExecutionSettings()
        values = dict(parameter_values or {})
        if not values:
            values = dict(settings.parameter_values)
        if not cache_file.metadata.is_valid and not settings.allow_invalidated:
            raise CacheInvalidatedError(cache_file_name, cache_file.metadata.invalidation_reason)
        check_replayable(
            cache_file,
            cache_file_name,
            offered_tools=self.offered_tools,
            settings=settings,
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
        screen = (
            ScreenProfile(self.screen_size, self.display_size)
            if self.screen_size is not None
            else None
        )
        view, profile = (
            choose_profile(cache_file, screen)
            if start_from_step_index == 0  # a step index names a step of the recorded way
            else (cache_file, ProfileChoice(screen))
        )
        if profile.screen is not None:
            logger.info("replay of %s: %s", cache_file_name, profile.describe())
        self.session = ReplaySession(
            view,
            cache_file_name,
            parameter_values=values,
            start_step=start_from_step_index,
            settings=settings,
            tool_shape=self.tool_shape,
            capture=self.screen,
            display_size=self.display_size,
            windows=self.windows,
            profile=profile,
            keep_seen=self.keep_replayed_screenshots,
            keep_failure_views=self.keep_failure_views,
            can_look=self.screen is not None or self.loop_looks,
            budgets=self._budgets(view, cache_file_name, profile, settings),
            damage=self.damage,
            sleep=self._sleep,
            clock=self._clock,
            elements=self.elements,
            observer=self.observer,
        )
        self._return_to_agent = return_to_agent_on_success
        self._secrets = secret_values(cache_file, values) | secret_values(view, values)
        self.sessions.append(self.session)
        return self.session.result

    def _budgets(
        self,
        view: CacheFile,
        name: str,
        profile: ProfileChoice,
        settings: CacheExecutionSettings,
    ) -> dict[int, float]:
        """Per step of ``view``: how long its past waits say an unchanged screen may be
        waited on (:func:`~askcache.storage.ledger.waits.wait_budget`); empty without a
        ledger, or with one that cannot be read (the replay then waits as on a first run)."""
        if self.ledger is None:
            return {}
        screen = profile.screen.id if profile.screen is not None else None
        try:
            past = self.ledger.step_waits(
                name, profile=screen, digest=steps_digest(view.trajectory)
            )
        except (OSError, AskCacheError) as exc:
            logger.info("the past waits of %s cannot be read: %s", name, exc)
            return {}
        budgets: dict[int, float] = {}
        for index in range(len(view.trajectory)):
            budget = wait_budget(
                past.waits.get(index, []), runs=past.runs, settle_timeout=settings.settle_timeout
            )
            if budget is not None:
                budgets[index] = budget
        return budgets

    def handle_step(self, conversation: Conversation) -> SpeakerResult:
        return self.turn(conversation.messages)

    def turn(self, messages: list[MessageParam]) -> SpeakerResult:
        """One turn of the replay on ``messages`` (the history so far, not changed unless
        ``keep_replayed_screenshots`` is off: then an older replayed result's screenshot is
        dropped, :mod:`.screenshot_trim`): a tool call to run (``continue``), a hand-back message
        (``switch_speaker``), or the end. The replay looks at the screen and waits itself
        (:meth:`ReplaySession.run`).
        A call typing a secret is in the message with the secret's placeholder and in
        ``run_as`` with its value (:mod:`.transcript`): the history never holds the value.
        Whoever owns the loop runs the call and appends its result: the
        :class:`~askcache.conversation.turns.Conversation` of an ``Agent``, or the user's own
        loop (:mod:`askcache.loop`)."""
        session = self.session
        if session is None or not self.is_active:
            return self._not_active()
        self._arrived(messages)
        return self.conclude(session.next(messages), messages)

    def begin_turn(self, messages: list[MessageParam]) -> Command | SpeakerResult:
        """The replay's turn on ``messages``, one transition at a time, for a loop that
        looks at the screen itself (:mod:`askcache.loop`): the first command. Carry out a
        :class:`~askcache.replay.commands.Look` or
        :class:`~askcache.replay.commands.Sleep` and :meth:`ReplaySession.feed` its
        observation; hand any other command to :meth:`conclude`. A :class:`SpeakerResult`
        when there is no active replay."""
        session = self.session
        if session is None or not self.is_active:
            return self._not_active()
        self._arrived(messages)
        return session.feed(Turn(messages, self._clock()))

    def _not_active(self) -> SpeakerResult:
        return SpeakerResult(
            "switch_speaker", next_speaker=self.agent_speaker, reason="no active replay"
        )

    def _arrived(self, messages: list[MessageParam]) -> None:
        if not self.keep_replayed_screenshots:
            self._latest_screenshot.arrived(messages)

    def conclude(self, command: Command, messages: list[MessageParam]) -> SpeakerResult:
        """What the conversation does with the replay's ``command`` (a tool call, a
        hand-back, the end), given on ``messages``."""
        session = self.session
        assert session is not None
        if isinstance(command, Emit):
            call = command.call
            self._latest_screenshot.emitted(call.id)
            shown = shown_call(call, self._secrets)
            return SpeakerResult(
                "continue",
                [MessageParam(role="assistant", content=[shown])],
                run_as={call.id: call} if shown is not call else {},
            )
        if isinstance(command, HandBack):
            return self._hand_back(session, command, messages)
        if isinstance(command, Finished):
            return self._finish(session, command)
        raise AskCacheError(f"the conversation does not carry out {command!r}")

    def rejoin_check(self, conversation: Conversation) -> str | None:
        """After a model turn whose tools ran: this executor's name when the replay takes
        over again (:meth:`ReplaySession.try_rejoin`), else ``None``."""
        return self.name if self.rejoins(conversation.messages) else None

    def rejoins(self, messages: list[MessageParam]) -> bool:
        """After a model turn whose tools ran (``messages`` ends with their results): True
        when the replay takes over again, by the rules of :mod:`askcache.replay.rejoin`
        (:meth:`ReplaySession.try_rejoin`, which records the decision)."""
        session = self.session
        if session is None or not self._may_rejoin(messages):
            return False
        return session.try_rejoin(messages)

    def begin_rejoin(self, messages: list[MessageParam]) -> Command | bool:
        """:meth:`rejoins`, one transition at a time (see :meth:`begin_turn`): ``False`` when
        the question does not arise, else the first command (a
        :class:`~askcache.replay.commands.Decided` ends it)."""
        session = self.session
        if session is None or not self._may_rejoin(messages):
            return False
        return session.feed(session.ask(messages))

    def _may_rejoin(self, messages: list[MessageParam]) -> bool:
        session = self.session
        if session is None or not session.suspended or not session.settings.rejoin:
            return False
        if not messages or not messages[-1].tool_results:
            return False
        latest = next((m for m in reversed(messages) if m.role == "assistant"), None)
        # the model asked in this turn: that request was the decision
        return latest is None or not any(c.name == RESUME_TOOL_NAME for c in latest.tool_uses)

    def resume(self, messages: list[MessageParam]) -> str:
        """Re-join on the model's request (``resume_cached_trajectory``); returns what to
        tell the model.

        Raises:
            AskCacheError: there is no suspended replay, or the re-join rules do not hold
                (the message says which and why).
        """
        session = self.session
        if session is None or not session.suspended or not session.settings.rejoin:
            raise AskCacheError("there is no stopped replay to resume")
        if session.index >= len(session.steps):
            raise AskCacheError(f"every step of {session.name!r} has run: nothing to resume")
        if not session.try_rejoin(messages, requested=True):
            decision = session.result.rejoin_decisions[-1]
            raise AskCacheError(
                f"the replay of {session.name!r} does not resume at step {session.index}: "
                f"{decision.reason}"
            )
        return f"Resuming {session.name} at step {session.index}."

    def _hand_back(
        self, session: ReplaySession, command: HandBack, messages: list[MessageParam]
    ) -> SpeakerResult:
        result = session.result
        result.status = "handed_back"
        result.stopped_at_step = command.step
        result.reason = command.problem
        result.reason_code = command.code
        result.handbacks += 1
        result.handback_steps.append(command.step)
        result.seconds = session.elapsed()
        text = hand_back_text(
            name=session.name,
            steps=session.steps,
            start=result.start_step,
            index=command.step,
            problem=command.problem,
            executed=command.executed,
            goal=goal_of(messages),
            can_resume=session.settings.rejoin,
            resume_tool=self.resume_tool,
        )
        logger.warning(
            "replay of %s handed back at step %d: %s",
            session.name,
            command.step,
            command.problem,
        )
        message = MessageParam(role="user", content=[TextBlockParam(text=text)])
        if not session.settings.model_after_hand_back:  # replay or fail: no model call
            return SpeakerResult(
                "failed",
                [message],
                reason=f"the replay handed back at step {command.step} and "
                f"model_after_hand_back is off: {command.problem}",
            )
        return SpeakerResult(
            "switch_speaker", [message], next_speaker=self.agent_speaker, reason=command.problem
        )

    def _finish(self, session: ReplaySession, command: Finished) -> SpeakerResult:
        result = session.result
        verdict = command.verdict
        result.end_state = verdict
        result.seconds = session.elapsed()
        if verdict is None or verdict.matched:
            result.status = "completed"
        else:
            result.status = "completed_unverified"
            result.reason = verdict.describe()
            result.reason_code = "end_state"
        total = len(session.steps)
        logger.info(
            "replayed %s: %s (%s)", session.name, result.status, verdict and verdict.describe()
        )
        if self._return_to_agent or command.hand_back:
            note = finished_text(
                name=session.name, start=result.start_step, total=total, verdict=verdict
            )
            return SpeakerResult(
                "switch_speaker",
                [MessageParam(role="user", content=note)],
                next_speaker=self.agent_speaker,
                reason=f"replay {result.status}",
            )
        return SpeakerResult(
            "done",
            reason=f"replayed {session.name} from step {result.start_step}: {result.status}",
        )


def goal_of(messages: list[MessageParam]) -> str:
    """The task as the history's first message states it (its text), for the hand-back
    message; ``(see above)`` when it holds no text."""
    first = messages[0] if messages else None
    if first is None:
        return ""
    if isinstance(first.content, str):
        return first.content
    texts = [block.text for block in first.blocks if isinstance(block, TextBlockParam)]
    return "\n".join(texts) if texts else "(see above)"
