"""``Agent.act(goal, caching_settings=...)``: the model, the tools and caching, wired together.

The strategy decides the wiring:

==========  =================================================================================
record      the model solves the task; the trajectory is written when it is done
execute     with a filename: the replay starts at once (no model call unless it hands back);
            without: the model gets ``list_cached_trajectories`` / ``execute_cached_trajectory``
auto        the named file exists and is valid: as ``execute``; otherwise as ``record``.
            Without a filename: the model gets the caching tools, and the run is recorded
off         the model solves the task; nothing is read or written
==========  =================================================================================

After a replay of the named file hands back and the model finishes the task, the run may
heal the file (``CachingSettings.heal``, :mod:`askcache.heal`): ``auto`` (the default under
``auto``) makes the model's fix the new version, ``propose`` keeps it for review, ``off``
(the default under ``execute``) is read-only: no run writes the trajectory.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from PIL import Image

from askcache.agent.outbox_sync import RunWriter
from askcache.agent.prepare import (
    check_heal_destination,
    open_outbox,
    open_run_ledger,
    usable,
)
from askcache.agent.run_record import finish_run, store_recording
from askcache.agent.watched_speaker import WatchedSpeaker
from askcache.conversation.speakers import DEFAULT_MODEL, AgentSpeaker
from askcache.conversation.turns import BeforeTool, Conversation, ConversationResult
from askcache.foundation.actions import parse_action
from askcache.foundation.errors import (
    CacheNotFoundError,
    RecordingNotStoredError,
)
from askcache.foundation.messages import MessageParam, ToolUseBlockParam
from askcache.foundation.parameters import TypedTextRedaction
from askcache.foundation.redaction import redact, register_typed_text
from askcache.foundation.settings import CacheStrategy, CachingSettings, HealMode
from askcache.heal.trajectory import HealOutcome, redact_mode
from askcache.record.recording import CacheManager
from askcache.replay import (
    CacheExecutor,
    ExecuteCachedTrajectory,
    ListCachedTrajectories,
    ReplayResult,
    ResumeCachedTrajectory,
)
from askcache.replay.observers import NO_OBSERVER, RunObserver, RunStart, observe
from askcache.replay.step_view import StepView
from askcache.storage.cache_storage import CacheStorage, read_cache_file
from askcache.storage.ledger import RunLedger
from askcache.storage.outbox import KeptWrite
from askcache.storage.remote import storage_for
from askcache.tools.computer import ComputerTool, ToolVersion
from askcache.tools.tool import Tool, ToolCollection

if TYPE_CHECKING:
    import anthropic

__all__ = ["DEFAULT_MODEL", "ActResult", "Agent", "VisionAgent", "returned"]

logger = logging.getLogger(__name__)

DEFAULT_SYSTEM = (
    "You operate a computer through the computer tool to complete the user's task. Take a "
    "screenshot first, act step by step, and when the task is done answer with a short "
    "summary and no tool call."
)


@dataclass(repr=False)
class ActResult:
    """What :meth:`Agent.act` did. Its ``repr`` has registered secrets masked
    (:func:`~askcache.foundation.redaction.redact`): the conversation holds what was typed and what
    the tools answered."""

    conversation: ConversationResult
    """The conversation: status, messages, model calls, tokens, time."""
    replays: list[ReplayResult]
    """Replays that ran during the call, in order."""
    strategy: CacheStrategy
    """The strategy applied (``auto`` resolved to what it did)."""
    regions: dict[int, Image.Image] = field(default_factory=dict)
    """Per checked step of the last replay, the screen region it was checked on (kept only
    with ``CacheExecutionSettings.keep_step_views``)."""
    views: dict[int, StepView] = field(default_factory=dict)
    """Per checked step of the last replay, what it was checked on (region, action point,
    the whole screen), for reports (kept only with
    ``CacheExecutionSettings.keep_step_views``)."""
    ledger_entries: list[str] = field(default_factory=list)
    """Ids of the run-ledger entries this call wrote (one per replay; the folder engine gives
    their names under ``.ledger/``)."""
    heal: HealOutcome | None = None
    """What healing wrote after a verified hand-back (``None``: nothing written; see
    :mod:`askcache.heal`, and :attr:`kept_locally` for a heal kept in the outbox)."""
    kept_locally: list[KeptWrite] = field(default_factory=list)
    """Writes of this call that the storage did not take (the server down, the disk full, a
    read-only folder): kept in the local outbox, **not yet shared**, sent on the next run
    or by ``askcache sync`` (:mod:`askcache.storage.outbox`). A heal kept here is not in
    :attr:`heal`, an entry kept here is not in :attr:`ledger_entries`."""
    not_written: list[str] = field(default_factory=list)
    """Writes that neither the storage nor the outbox took, with why (for people)."""
    synced: list[KeptWrite] = field(default_factory=list)
    """Writes of earlier runs this call sent from the outbox before it started."""

    def __repr__(self) -> str:
        shown = ", ".join(f"{item.name}={getattr(self, item.name)!r}" for item in fields(self))
        return redact(f"{type(self).__name__}({shown})")

    @property
    def shared(self) -> bool:
        """True when every write of this call reached the storage."""
        return not self.kept_locally and not self.not_written

    def not_shared_lines(self) -> list[str]:
        """What this call kept locally or could not write, one line each, for a printed
        summary (``[]`` when every write was shared)."""
        lines = [
            f"kept locally, not yet shared: {kept.summary} ({kept.path}); "
            "the next run or `askcache sync` sends it"
            for kept in self.kept_locally
        ]
        return lines + [f"NOT written: {text}" for text in self.not_written]

    @property
    def status(self) -> str:
        """``done``, ``failed`` or ``max_turns``."""
        return self.conversation.status

    @property
    def model_calls(self) -> int:
        """Model calls made."""
        return self.conversation.model_calls

    @property
    def replay(self) -> ReplayResult | None:
        """The last replay, if any."""
        return self.replays[-1] if self.replays else None


def returned(result: ActResult, not_stored: RecordingNotStoredError | None) -> ActResult:
    """``result``, to return; or, when the run's recording was not stored
    (:func:`~askcache.agent.run_record.store_recording`), its error raised with ``result`` on
    it, so the caller gets the run and the recording either way (the recording is then in
    ``result.kept_locally``, or in ``result.not_written``: the result is never ``shared``)."""
    if not_stored is None:
        return result
    if isinstance(not_stored.kept, KeptWrite):
        result.kept_locally.append(not_stored.kept)
    else:
        result.not_written.append(
            f"recording of {not_stored.name}: {not_stored.reason}; {not_stored.not_kept}"
        )
    not_stored.result = result
    raise not_stored


class Agent:
    """A computer-use agent with trajectory caching.

    Args:
        client: An ``anthropic.Anthropic`` client (its ``base_url`` may point anywhere).
        tools: The tools the model acts with, usually one :class:`ComputerTool`.
        model: Model name.
        system: System prompt.
        max_tokens: The model's ``max_tokens`` per call.
        max_turns: The most turns that call the model; a run that reaches it ends
            ``max_turns``. Replayed steps call no model and do not count.
        storage: Where cache files live; default: ``cache_dir`` of the settings, a folder or a URL
            (:func:`~askcache.storage.remote.storage_for`).
        sleep: Used for the replay's waits (tests pass a no-op).
    """

    def __init__(
        self,
        client: anthropic.Anthropic,
        tools: Sequence[Tool],
        *,
        model: str = DEFAULT_MODEL,
        system: str | None = DEFAULT_SYSTEM,
        max_tokens: int = 4096,
        max_turns: int = 100,
        storage: CacheStorage | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = client
        self.tools = list(tools)
        self.model = model
        self.system = system
        self.max_tokens = max_tokens
        self.max_turns = max_turns
        self.storage = storage
        self._sleep = sleep

    def _computer(self) -> ComputerTool | None:
        return next((tool for tool in self.tools if isinstance(tool, ComputerTool)), None)

    def act(self, goal: str, caching_settings: CachingSettings | None = None) -> ActResult:
        """Complete ``goal``, replaying or recording as ``caching_settings`` says.

        Writes of earlier runs waiting in the outbox for this storage are sent first.

        What is registered in :mod:`askcache.replay.observers` is told how the call goes
        (:func:`askcache.telemetry.instrument`: its spans and metrics, docs/fleet.md).

        Raises:
            CacheInvalidatedError: ``execute`` was asked for a file marked invalid.
            MissingApiKeyError: the client has no key (``ANTHROPIC_API_KEY`` unset) and the
                model must be called: at once when it speaks first, else at a hand-back.
            StorageUnwritableError: a recording, or a replay that may heal, would write
                where nothing can be written (a missing bucket, a read-only folder); raised
                before any model call.
            RecordingNotStoredError: the recording could not be written after the model did
                the task (the disk full, the server gone): it is kept in the outbox, or, when
                that failed too, only on the error (``recording``); ``result`` is this call's
                :class:`ActResult`.
            AskCacheError: the named cache file cannot be read or replayed (before any
                model call or action).
        """
        settings = caching_settings or CachingSettings(strategy=CacheStrategy.OFF)
        observer = observe(
            RunStart(
                kind="act",
                trajectory=settings.writing_settings.filename,
                strategy=str(settings.strategy),  # a StrEnum, or its text after a model_copy
                model=self.model,
                current=True,
            )
        )
        try:
            result = self._act(goal, settings, observer)
        except BaseException as exc:
            observer.ended("failed", exc)
            raise
        observer.ended(result.status, None)
        return result

    def _act(self, goal: str, settings: CachingSettings, observer: RunObserver) -> ActResult:
        storage = self.storage or storage_for(settings.cache_dir)
        ledger = open_run_ledger(storage, settings)
        outbox, synced = open_outbox(storage, settings, ledger)
        agent = AgentSpeaker(
            self.client, model=self.model, system=self.system, max_tokens=self.max_tokens
        )
        computer = self._computer()
        capture = computer.capture if computer else None
        display_size = computer.screen_size if computer is not None else None
        windows, elements = (computer.windows, computer.elements()) if computer else (None, None)
        executor = CacheExecutor(
            tool_shape=computer.shape if computer else "tool",
            screen=capture,
            display_size=display_size,
            windows=windows,
            screen_size=computer.api_size if computer is not None else None,
            sleep=self._sleep,
            offered_tools=[tool.name for tool in self.tools],
            ledger=ledger,
            keep_failure_views=settings.ledger_thumbnails,
            damage=computer.screen_damage() if computer is not None else None,
            elements=elements,
            observer=observer,
        )
        tools = ToolCollection(self.tools)
        first = agent.name
        recorder: CacheManager | None = None
        base: bytes | None = None
        filename = settings.writing_settings.filename
        strategy = settings.strategy
        if strategy == CacheStrategy.AUTO:
            found = filename is not None and usable(storage, filename)
            strategy = CacheStrategy.EXECUTE if found else CacheStrategy.RECORD
            if filename is None:
                self._offer_caching_tools(tools, storage, ledger, executor, settings)
        if strategy != CacheStrategy.EXECUTE or filename is None:
            agent.check_credentials()  # the model speaks first: fail before anything runs
        if strategy == CacheStrategy.RECORD:
            recorder = CacheManager(
                storage,
                settings.writing_settings,
                model=self.model,
                capture=capture,
                display_size=display_size,
                keep_versions=settings.keep_versions,
                windows=windows,
                outbox=outbox,
                elements=elements,
            )
            recorder.start_recording(goal)
        elif strategy == CacheStrategy.EXECUTE:
            if filename is None:
                self._offer_caching_tools(tools, storage, ledger, executor, settings)
            else:
                try:
                    base, cache_file = read_cache_file(storage, filename)
                except CacheNotFoundError as exc:
                    exc.args = (
                        f"{exc}: record it first (strategy='record', or 'auto' to record it "
                        "when it is missing)",
                    )
                    raise
                executor.activate_cache_execution(
                    cache_file, filename, execution_settings=settings.execution_settings
                )
                first = executor.name
                check_heal_destination(storage, filename, settings)
        resume = ResumeCachedTrajectory(executor)
        if strategy == CacheStrategy.EXECUTE or filename is None:
            tools.add(resume)
        executor.keep_replayed_screenshots = _rebuilds_from_history(recorder, base, settings)
        conversation = Conversation(
            [_watched(agent, observer, executor), executor],
            tools,
            first_speaker=first,
            before_tool=_before_tool(
                recorder, settings.writing_settings.redact_typed_text, executor
            ),
            after_turn=[executor.rejoin_check],
            max_turns=self.max_turns,
        )
        resume.watch(conversation.messages)
        outcome = conversation.run(goal)
        not_stored = store_recording(recorder, outcome, settings)
        writer = RunWriter(storage, outbox, ledger)
        healed, entries = finish_run(
            writer, executor, outcome, settings, name=filename, base=base, capture=capture
        )
        result = ActResult(
            conversation=outcome,
            replays=executor.history,
            strategy=strategy,
            regions=dict(executor.regions),
            views=dict(executor.views),
            ledger_entries=entries,
            heal=healed,
            kept_locally=list(writer.kept),
            not_written=list(writer.not_written),
            synced=synced,
        )
        return returned(result, not_stored)

    @staticmethod
    def _offer_caching_tools(
        tools: ToolCollection,
        storage: CacheStorage,
        ledger: RunLedger,
        executor: CacheExecutor,
        settings: CachingSettings,
    ) -> None:
        if any(isinstance(tool, ListCachedTrajectories) for tool in tools.tools):
            return
        tools.add(ListCachedTrajectories(storage, ledger))
        tools.add(ExecuteCachedTrajectory(storage, executor, settings.execution_settings))


def _watched(
    agent: AgentSpeaker, observer: RunObserver, executor: CacheExecutor
) -> AgentSpeaker | WatchedSpeaker:
    """The model's speaker; told to ``observer`` call by call when something watches."""
    if observer is NO_OBSERVER:
        return agent
    return WatchedSpeaker(
        agent, observer, lambda: any(result.handbacks for result in executor.history)
    )


def _rebuilds_from_history(
    recorder: CacheManager | None, base: bytes | None, settings: CachingSettings
) -> bool:
    """True when a trajectory may be built from this run's history after it: a recording,
    or a heal of the replayed file. Those need every replayed step's screenshot; any other
    run keeps only the latest (:mod:`askcache.replay.screenshot_trim`)."""
    return recorder is not None or (base is not None and settings.heal_mode != HealMode.OFF)


def _before_tool(
    recorder: CacheManager | None, redact_typed_text: TypedTextRedaction, executor: CacheExecutor
) -> BeforeTool:
    """Before each tool call: text about to be typed that ``redact_typed_text`` makes secret
    is registered for redaction (no log or error of its typing shows it), then the
    recorder looks at the call. Where a stricter policy holds, it applies: that of the file
    being replayed (:func:`~askcache.heal.trajectory.redact_mode`), or of the file being
    recorded over (:attr:`CacheManager.redaction`)."""

    def before_tool(call: ToolUseBlockParam, messages: Sequence[MessageParam]) -> None:
        action = parse_action(call)
        if action is not None and action.name == "type":
            mode = recorder.redaction if recorder is not None else redact_typed_text
            if executor.session is not None:
                mode = redact_mode(executor.session.file, mode)
            register_typed_text(call.input.get("text"), mode)
        if recorder is not None:
            recorder.before_tool(call, messages)

    return before_tool


class VisionAgent(Agent):
    """An :class:`Agent` on the real desktop: the computer tool on pyautogui and mss.

    Use it as a context manager::

        with VisionAgent() as agent:
            agent.act("Open the settings", caching_settings=CachingSettings(strategy="auto"))

    Args:
        model: Model name.
        client: An ``anthropic.Anthropic`` client; default: one made from the environment
            (``ANTHROPIC_API_KEY``).
        display: X display; default ``$DISPLAY``.
        tool_version: Which computer tool to offer (the toolset needs no beta flag).
        settle_delay: Seconds to wait after each of the model's actions before its screenshot
            (replayed actions do not wait: the replay watches the screen instead).
        agent_options: Further :class:`Agent` options (``system``, ``max_turns``, ...).
    """

    def __init__(
        self,
        *,
        model: str = DEFAULT_MODEL,
        client: anthropic.Anthropic | None = None,
        display: str | None = None,
        tool_version: ToolVersion = "computer_toolset_20260801",
        settle_delay: float = 0.3,
        **agent_options: Any,
    ) -> None:
        from askcache.tools.desktop import DesktopBackend

        if client is None:
            import anthropic

            client = anthropic.Anthropic()
        self.backend = DesktopBackend(display)
        tool = ComputerTool(self.backend, version=tool_version, settle_delay=settle_delay)
        super().__init__(client, [tool], model=model, **agent_options)

    def __enter__(self) -> VisionAgent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the display connections."""
        self.backend.close()
