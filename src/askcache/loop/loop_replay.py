"""askcache in your own loop: :class:`LoopReplay` gives your loop the next action of a
recorded run, and your tool runner executes it.

The loop asks for actions (``tool_use`` blocks in the Messages API's shape), runs each with
its own tool runner, and hands back the ``tool_result`` (with its screenshot); askcache
checks every step on those screenshots before giving it, exactly as an ``Agent``'s replay
does: the same states (:mod:`askcache.replay.states`), fed one observation at a time. Some
actions are screenshots the replay asks for while it waits for the screen to settle or
watches a step's effect (its :class:`~askcache.replay.commands.Look`); they are not added to
the history. The replay's pauses between looks are taken in your loop's thread (``sleep``);
no other thread runs.

The replayed steps, their results and, on a hand-back, the message the model is told why
are appended to the loop's own ``messages`` list, so on a hand-back the loop simply goes on
calling the model with it. After each later model turn whose tools ran, asking for actions
again lets the replay re-join when the re-join rules hold. :meth:`LoopReplay.done` ends the
run: the ledger entry, and the heal after a verified hand-back (or, when there was no
trajectory to replay, the recording of the run).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Generator, Iterator, Mapping
from typing import Any

from PIL import Image

from askcache.agent.act import ActResult
from askcache.conversation.turns import SpeakerResult
from askcache.foundation.actions import make_tool_use, parse_action
from askcache.foundation.errors import RecordingNotStoredError
from askcache.foundation.messages import (
    MessageParam,
    ToolResultBlockParam,
    ToolUseBlockParam,
)
from askcache.foundation.screen.elements import ElementSource
from askcache.foundation.screen.windows import WindowFrame
from askcache.foundation.settings import CachingSettings
from askcache.loop.history import History
from askcache.loop.results import as_given, parse_result, screenshot_of, text_of
from askcache.loop.run import LoopRun, LoopStatus, RunEnd
from askcache.loop.usage_errors import (
    NotAScreenshotError,
    ReplayOverError,
    ToolResultOrderError,
    UnknownToolResultError,
)
from askcache.replay.commands import (
    Blind,
    Command,
    Decided,
    Drawn,
    Look,
    Observation,
    Quiet,
    Seen,
    Sleep,
    Woke,
)
from askcache.replay.driver import listed_windows
from askcache.replay.plan import CAPTURE_ATTEMPTS, CaptureFailedError
from askcache.replay.screens import POLL_SECONDS
from askcache.storage.cache_storage import CacheStorage

__all__ = ["LoopReplay", "LoopStatus", "Steps"]

logger = logging.getLogger(__name__)


Steps = Generator[float, None, dict[str, Any] | None]
"""A step of your loop's replay: yields the pauses to take (seconds), returns the next
action (``None``: none)."""

_OVER = {"handed_back": "handed back", "finished": "finished", "done": "is over (done())"}


class _Waiting:
    """An action given to the loop whose result has not come back yet."""

    def __init__(self, call: ToolUseBlockParam, *, screen: bool) -> None:
        self.call = call
        self.screen = screen
        """True for a screenshot the replay asked for itself (not a step)."""

    @property
    def label(self) -> str:
        action = parse_action(self.call)
        return action.name if action is not None else self.call.name


class LoopReplay:
    """Record and replay inside your own computer-use loop (see the module docstring).

    Args:
        name: The trajectory's name in the storage (``fill-form.json``).
        messages: Your loop's history so far, starting with the user's message stating the
            task; askcache appends the replayed steps to this very list.
        settings: What to do (``strategy``: ``auto`` replays ``name`` when it exists and
            records the run when it does not; heal mode, parameter values, checks); default
            ``CachingSettings()``.
        storage: Where trajectories live; default: ``settings.cache_dir``.
        model: The model your loop calls, stored with a recording.
        display_size: The real screen's size, when your runner knows it (a replay on a
            display of another size checks steps for another pixel density; a recording
            stores it).
        screen_size: The size of the screenshots your loop gives the model, when it knows
            it: with ``display_size``, this run's screen profile, which chooses the
            trajectory a file learned for this screen (:mod:`askcache.replay.profile`).
        tools: The names of the tools your loop offers the model; default: the computer
            tool. A replayed step calling another of them runs only when
            ``CacheExecutionSettings.replay_tools`` names it too (otherwise the file is
            refused, before any action).
        sleep: Used for the replay's waits (tests pass a no-op).
        windows: Lists the screen's top-level windows in your screenshots' coordinates
            (:class:`~askcache.foundation.screen.windows.WindowFrame`; ``None`` from it: not
            now): a step recorded with its window is checked and acted on where that window
            is now (:mod:`askcache.replay.anchor`). Default: none (the recorded point).
        elements: Says what element is at a point and where the elements like a recorded one
            are, in your screenshots' coordinates (an
            :class:`~askcache.foundation.screen.elements.ElementSource`, e.g.
            ``ComputerTool(backend).elements()`` for askcache's desktop backend): steps recorded
            with their element are checked by it beside their pixels
            (:mod:`askcache.replay.element_check`). Default: none (pixels and the label's text).

    Raises:
        CacheNotFoundError: ``strategy="execute"`` and ``name`` does not exist.
        AskCacheError: the file cannot be replayed here (the message says why), before
            any action.
        LoopUsageError: ``messages`` is not a history starting with the user's message.
    """

    def __init__(
        self,
        name: str,
        messages: list[Any],
        *,
        settings: CachingSettings | None = None,
        storage: CacheStorage | None = None,
        model: str | None = None,
        display_size: tuple[int, int] | None = None,
        screen_size: tuple[int, int] | None = None,
        tools: Collection[str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        windows: Callable[[], list[WindowFrame] | None] | None = None,
        elements: ElementSource | None = None,
    ) -> None:
        self._history = History(messages)
        self._sleep = sleep
        self._windows = windows
        self._run = LoopRun(
            name,
            self._history.parsed,
            settings=settings or CachingSettings(),
            storage=storage,
            model=model,
            screen=None,
            display_size=display_size,
            screen_size=screen_size,
            tools=tools,
            sleep=sleep,
            windows=windows,
            elements=elements,
        )
        self._elements = elements
        self._status: LoopStatus = self._run.first_status()
        self._waiting: _Waiting | None = None
        self._answered: set[str] = set()
        self._asked_at = 0
        """The history's length when the re-join rules were last asked."""
        self._result: ActResult | None = None
        self._observed: Observation | None = None
        """What the loop's screenshot showed, for the replay's look that asked for it."""
        self._failed_looks = 0
        """Screenshots asked for the current look that failed, in a row."""
        self._look: Look | None = None
        """The look a screenshot action was given for."""

    @property
    def status(self) -> LoopStatus:
        """Where the run is (see :data:`LoopStatus`)."""
        return self._status

    @property
    def finished(self) -> bool:
        """True when the replay ran every step and the task is done: the loop stops here,
        no model call needed."""
        return self._status == "finished"

    @property
    def handed_back(self) -> bool:
        """True while the model has the turn after a hand-back."""
        return self._status == "handed_back"

    @property
    def messages(self) -> list[Any]:
        """Your loop's list, with what askcache appended: on a hand-back, the messages to
        continue from."""
        return self._history.user

    def actions(self, messages: list[Any] | None = None) -> Iterator[dict[str, Any]]:
        """The actions to run, one at a time, each a ``tool_use`` block (a dict in the
        Messages API's shape); hand each one's result to :meth:`tool_result` before taking
        the next. Ends when the replay finishes, hands back, or has nothing to replay.
        After a hand-back, call it again after each model turn whose tools ran (with the
        loop's ``messages``): it re-joins when the rules hold."""
        while (action := self.next_action(messages)) is not None:
            yield action

    def next_action(self, messages: list[Any] | None = None) -> dict[str, Any] | None:
        """The next action to run, or ``None`` (see :meth:`actions`). The replay's pauses
        between looks are slept here, with ``sleep``.

        Raises:
            ToolResultOrderError: the last action's result was not handed in yet.
            ReplayOverError: :meth:`done` was called.
        """
        steps = self.next_action_steps(messages)
        try:
            while True:
                self._sleep(next(steps))
        except StopIteration as end:
            action: dict[str, Any] | None = end.value
            return action

    def next_action_steps(self, messages: list[Any] | None = None) -> Steps:
        """:meth:`next_action` as a generator that yields each pause (seconds) instead of
        sleeping it and returns the action: how :class:`~askcache.loop.aio.AsyncLoopReplay`
        awaits the pauses."""
        if self._status == "done":
            raise ReplayOverError("done() was called: this run is over")
        if self._waiting is not None:
            raise ToolResultOrderError(
                f"the result of {self._waiting.call.id!r} ({self._waiting.label}) was not "
                "handed to tool_result() yet: hand it in before asking for the next action"
            )
        executor = self._run.executor
        if self._look is not None:  # a check under way: it reads the history, leave it be
            return (yield from self._answered_look())
        history = self._history.follow(messages)
        if self._status == "handed_back":
            if len(history) == self._asked_at:
                return None  # no turn since the last decision: it stands
            self._asked_at = len(history)
            asked = executor.begin_rejoin(history)
            if isinstance(asked, bool):
                return (yield from self._decided(asked))
            return (yield from self._pump(asked))
        if self._status != "replaying":
            return None
        begun = executor.begin_turn(history)
        if isinstance(begun, SpeakerResult):
            return self._turn(begun)
        return (yield from self._pump(begun))

    def _feed(self, observation: Observation) -> Command:
        session = self._run.executor.session
        assert session is not None
        return session.feed(observation)

    def _clock(self) -> float:
        session = self._run.executor.session
        assert session is not None
        return session.io.clock()

    def _pump(self, command: Command) -> Steps:
        """Carry out the replay's commands until one needs the loop: a screenshot action
        for a look, a step's action, a hand-back, the end, or the re-join decision."""
        while True:
            if isinstance(command, Sleep):
                yield command.seconds
                command = self._feed(Woke(self._clock()))
            elif isinstance(command, Quiet):  # no drawing reports here: the state looks again
                command = self._feed(Drawn(True, self._clock()))
            elif isinstance(command, Look):
                delay = command.at - self._clock()
                if delay > 0:
                    yield delay
                if not command.grab:  # the windows only
                    command = self._feed(self._seen(None))
                    continue
                self._look = command
                call = make_tool_use("screenshot", self._run.shape)
                self._waiting = _Waiting(call, screen=True)
                return _api(call)
            elif isinstance(command, Decided):
                return (yield from self._decided(command.rejoined))
            else:
                history = self._history.parsed
                return self._turn(self._run.executor.conclude(command, history))

    def _answered_look(self) -> Steps:
        """The loop answered the screenshot a look asked for: feed it to the replay (a
        failed screenshot is asked again, up to
        :data:`~askcache.replay.plan.CAPTURE_ATTEMPTS` in a row)."""
        observed, self._observed = self._observed, None
        look = self._look
        assert observed is not None
        assert look is not None
        if isinstance(observed, Blind):
            self._failed_looks += 1
            if self._failed_looks < CAPTURE_ATTEMPTS:
                yield POLL_SECONDS
                return (yield from self._pump(look))
            observed = Blind(CaptureFailedError(observed.error), observed.at)
        self._failed_looks = 0
        self._look = None
        return (yield from self._pump(self._feed(observed)))

    def _decided(self, rejoined: bool) -> Steps:
        if not rejoined:
            return None
        self._status = "replaying"
        logger.info("the replay re-joins your loop")
        return (yield from self.next_action_steps())

    def _turn(self, turn: SpeakerResult) -> dict[str, Any] | None:
        if turn.status == "continue":
            message = turn.messages[0]  # a secret is in it as its placeholder
            shown = message.tool_uses[0]
            call = turn.run_as.get(shown.id, shown)  # the secret's value: for the screen only
            self._run.typing([call])
            self._history.append(message)
            self._waiting = _Waiting(call, screen=False)
            return _api(call)
        for message in turn.messages:  # the hand-back, or the note on an unverified end
            self._history.append(message)
        if turn.status in ("switch_speaker", "failed") and turn.messages:  # a hand-back
            self._status = "handed_back"
        else:
            self._status = "finished"
            self._result = self._run.finish(self._history.parsed, "done", None)
        return None

    def _seen(self, image: Image.Image | None) -> Seen:
        """A look: ``image`` (your loop's screenshot), the windows your ``windows`` lists now,
        and your element source."""
        windows = listed_windows(self._windows)
        return Seen(image, windows, self._clock(), None, self._elements)

    def tool_result(self, result: Mapping[str, Any] | ToolResultBlockParam) -> None:
        """Hand in the result of the action :meth:`next_action` gave: a ``tool_result``
        block (a dict as the Messages API takes it) with the screenshot your runner took
        after the action. A step's result is appended to the loop's messages; a screenshot
        the replay asked for itself is not.

        Raises:
            UnknownToolResultError: the result is for another action than the one given.
            NotAScreenshotError: its image is not an image, or a screenshot asked for has
                none (a failed screenshot says so with ``is_error``).
            ToolResultOrderError: no action is waiting for its result.
            ReplayOverError: the replay handed back or finished (your loop runs the model's
                calls now), or :meth:`done` was called.
        """
        block = parse_result(result)
        waiting = self._waiting
        if waiting is None:
            if self._status in ("handed_back", "finished", "done"):
                raise ReplayOverError(
                    f"the replay {_OVER[self._status]}: tool_result() takes only the results "
                    "of the actions askcache gives; the model's go into your messages"
                )
            again = " again" if block.tool_use_id in self._answered else ""
            raise ToolResultOrderError(
                f"tool result for {block.tool_use_id!r}{again}, but no action is waiting "
                "for its result: ask for the next action first"
            )
        if block.tool_use_id != waiting.call.id:
            raise UnknownToolResultError(block.tool_use_id, waiting.call.id, waiting.label)
        image = screenshot_of(block)
        if waiting.screen and image is None and not block.is_error:
            raise NotAScreenshotError(
                block.tool_use_id,
                f"the tool result for {block.tool_use_id!r} holds no image, and askcache asked "
                "for a screenshot (a screenshot that failed says so with is_error)",
            )
        self._waiting = None
        self._answered.add(block.tool_use_id)
        if waiting.screen:
            if image is None:
                failed = RuntimeError(f"the screenshot failed: {text_of(block)}")
                self._observed = Blind(failed, self._clock())
            else:
                self._observed = self._seen(image)
            return
        self._history.append(MessageParam(role="user", content=[block]), as_given(result))

    def done(
        self,
        messages: list[Any] | None = None,
        *,
        status: RunEnd = "done",
        screen: Image.Image | None = None,
    ) -> ActResult:
        """End the run when your loop ends: its ledger entry; after a hand-back the model
        finished, the heal (when the run is verified); with nothing replayed, the recording
        of the run. ``status``: ``done`` when the task was finished, else ``failed`` or
        ``max_turns`` (nothing is recorded or healed). ``screen``: a screenshot taken now,
        when your loop can: a heal then also checks the screen has settled, as an
        ``Agent``'s does. Returns what happened, as :meth:`Agent.act <askcache.Agent.act>`
        does. Calling it again returns the same result.

        Raises:
            ToolResultOrderError: ``status="done"`` while an action's result is missing.
            RecordingNotStoredError: the recording could not be written (a full disk, the
                server gone): it is kept in the outbox, or only on the error; the error's
                ``result`` is the run's result, which a second call returns.
        """
        if self._result is not None and self._status in ("finished", "done"):
            self._status = "done"
            return self._result
        if self._waiting is not None and status == "done":
            raise ToolResultOrderError(
                f"the result of {self._waiting.call.id!r} ({self._waiting.label}) was not "
                "handed to tool_result(): hand it in, or end with status='failed'"
            )
        self._waiting = None
        self.close()
        history = self._history.follow(messages)
        try:
            self._result = self._run.finish(history, status, screen)
        except RecordingNotStoredError as exc:  # its run's writes are made: not made again
            self._result = exc.result if isinstance(exc.result, ActResult) else None
            self._status = "done"
            raise
        self._status = "done"
        return self._result

    def close(self) -> None:
        """Stop a replay your loop abandons: a check under way ends (its screenshots fail,
        so it hands back); nothing is written. :meth:`done` closes it too."""
        if self._look is None:
            return
        self._look, self._observed, self._waiting = None, None, None
        closed = CaptureFailedError(RuntimeError("the replay was closed"))
        command = self._feed(Blind(closed, self._clock()))
        while isinstance(command, Look | Quiet | Sleep):
            now = self._clock()
            if isinstance(command, Look):
                command = self._feed(Blind(closed, now))
            elif isinstance(command, Quiet):
                command = self._feed(Drawn(True, now))
            else:
                command = self._feed(Woke(now))
        if not isinstance(command, Decided):
            self._run.executor.conclude(command, self._history.parsed)


def _api(call: ToolUseBlockParam) -> dict[str, Any]:
    dumped: dict[str, Any] = call.model_dump(mode="json", context={"for_api": True})
    return dumped
