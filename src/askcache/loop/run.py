"""One run in the user's own loop, wired as :meth:`Agent.act <askcache.agent.act.Agent.act>`
wires one: the strategy resolved, the replay's executor or the recorder, and at the end the
same writes (:func:`~askcache.agent.run_record.finish_run`: ledger entries, heal).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable
from typing import Literal

from PIL import Image

from askcache.agent.act import ActResult, returned
from askcache.agent.outbox_sync import RunWriter
from askcache.agent.prepare import (
    check_heal_destination,
    open_outbox,
    open_run_ledger,
    usable,
)
from askcache.agent.run_record import finish_run, store_recording
from askcache.cachefile.format import CacheFile
from askcache.conversation.turns import ConversationResult
from askcache.foundation.actions import ToolShape, parse_action
from askcache.foundation.errors import CacheNotFoundError
from askcache.foundation.messages import MessageParam, ToolUseBlockParam, Usage
from askcache.foundation.parameters import TypedTextRedaction
from askcache.foundation.redaction import register_typed_text
from askcache.foundation.screen.elements import ElementSource
from askcache.foundation.screen.windows import WindowFrame
from askcache.foundation.settings import CacheStrategy, CachingSettings
from askcache.heal.trajectory import redact_mode
from askcache.record.recording import CacheManager
from askcache.replay.executor import CacheExecutor, goal_of
from askcache.replay.observers import RunStart, observe
from askcache.storage.cache_storage import CacheStorage, read_cache_file
from askcache.storage.remote import storage_for

__all__ = ["LoopRun", "LoopStatus", "RunEnd", "register_typing", "shape_of"]

LoopStatus = Literal["replaying", "handed_back", "finished", "recording", "off", "done"]
"""``replaying``: actions to run; ``handed_back``: the model's turn (asking for actions
again re-joins when the rules hold); ``finished``: every step ran, the task is done;
``recording``: nothing to replay, the model does the task and ``done()`` records it;
``off``: caching is off; ``done``: ``done()`` was called."""

RunEnd = Literal["done", "failed", "max_turns"]
"""How the loop ended: the task done, given up, or cut off."""


def shape_of(cache_file: CacheFile) -> ToolShape:
    """The computer tool's shape the trajectory was recorded with (for the screenshots the
    replay asks for): its first computer action's."""
    for step in cache_file.trajectory:
        action = parse_action(step)
        if action is not None:
            return action.shape
    return "tool"


def register_typing(calls: Iterable[ToolUseBlockParam], mode: str) -> None:
    """Text these calls type that ``redact_typed_text=mode`` makes secret is redacted from
    askcache's logs and errors from now on (as an ``Agent`` registers it before typing)."""
    for call in calls:
        action = parse_action(call)
        if action is not None and action.name == "type":
            register_typed_text(call.input.get("text"), mode)


class LoopRun:
    """The caching side of one run of the user's loop (see the module docstring)."""

    def __init__(
        self,
        name: str,
        history: list[MessageParam],
        *,
        settings: CachingSettings,
        storage: CacheStorage | None,
        model: str | None,
        screen: Callable[[], Image.Image] | None,
        display_size: tuple[int, int] | None,
        screen_size: tuple[int, int] | None,
        tools: Collection[str] | None,
        sleep: Callable[[float], None],
        windows: Callable[[], list[WindowFrame] | None] | None = None,
        elements: ElementSource | None = None,
    ) -> None:
        self.name = name
        self.settings = settings
        self.storage = storage or storage_for(settings.cache_dir)
        self.ledger = open_run_ledger(self.storage, settings)
        self.outbox, self.synced = open_outbox(self.storage, settings, self.ledger)
        self.started = time.monotonic()
        self.base: bytes | None = None
        """The trajectory's bytes as the replay read them (a heal starts from them)."""
        self.recorder: CacheManager | None = None
        strategy = settings.strategy
        if strategy == CacheStrategy.AUTO:
            found = usable(self.storage, name)
            strategy = CacheStrategy.EXECUTE if found else CacheStrategy.RECORD
        self.strategy = strategy
        self.typing_mode: TypedTextRedaction = settings.writing_settings.redact_typed_text
        """What typed text is redacted from logs: the run's setting, and the replayed file's
        own policy when stricter (:func:`~askcache.heal.trajectory.redact_mode`)."""
        cache_file: CacheFile | None = None
        if strategy == CacheStrategy.EXECUTE:
            try:
                self.base, cache_file = read_cache_file(self.storage, name)
            except CacheNotFoundError as exc:
                exc.args = (f"{exc}: record it first (strategy='record' or 'auto')",)
                raise
        self.observer = observe(
            RunStart(
                kind="loop",
                trajectory=name,
                strategy=str(settings.strategy),  # a StrEnum, or its text after a model_copy
                model=model,
                current=False,
            )
        )
        """Who watches the run (:mod:`askcache.replay.observers`)."""
        self.executor = CacheExecutor(
            tool_shape=shape_of(cache_file) if cache_file is not None else "tool",
            screen=screen,
            display_size=display_size,
            screen_size=screen_size,
            offered_tools=tools,
            resume_tool=False,  # the user's loop offers no caching tools
            loop_looks=True,  # its tool runner takes the replay's screenshots
            windows=windows,
            elements=elements,
            ledger=self.ledger,
            keep_failure_views=settings.ledger_thumbnails,
            sleep=sleep,
            observer=self.observer,
        )
        if cache_file is not None:
            try:
                self.executor.activate_cache_execution(
                    cache_file, name, execution_settings=settings.execution_settings
                )
            except BaseException as exc:
                self.observer.ended("failed", exc)
                raise
            self.typing_mode = redact_mode(cache_file, self.typing_mode)
            check_heal_destination(self.storage, name, settings)
        elif strategy == CacheStrategy.RECORD:
            writing = settings.writing_settings.model_copy(update={"filename": name})
            self.recorder = CacheManager(
                self.storage,
                writing,
                model=model,
                display_size=display_size,
                keep_versions=settings.keep_versions,
                outbox=self.outbox,
                windows=windows,
                elements=elements,
            )
            self.recorder.start_recording(goal_of(history))
            self.typing_mode = self.recorder.redaction

    @property
    def shape(self) -> ToolShape:
        """The computer tool's shape of the actions askcache gives."""
        return self.executor.tool_shape

    def first_status(self) -> LoopStatus:
        """What the run starts as: ``replaying``, ``recording`` or ``off``."""
        if self.strategy == CacheStrategy.EXECUTE:
            return "replaying"
        return "recording" if self.strategy == CacheStrategy.RECORD else "off"

    def typing(self, calls: Iterable[ToolUseBlockParam]) -> None:
        """Before ``calls`` run (or are recorded): :func:`register_typing`."""
        register_typing(calls, self.typing_mode)

    def finish(
        self,
        history: list[MessageParam],
        status: RunEnd,
        screen: Image.Image | None,
    ) -> ActResult:
        """The run's writes, as after :meth:`Agent.act <askcache.agent.act.Agent.act>`:
        the recording (nothing was replayed), the heal and the ledger entries.

        Raises:
            RecordingNotStoredError: as ``Agent.act`` (the recording kept in the outbox, or
                only on the error; ``result`` is the run's result)."""
        self.typing(call for message in history for call in message.tool_uses)
        calls = [m.usage for m in history if m.usage is not None]
        outcome = ConversationResult(
            status=status,
            reason=None,
            messages=history,
            model_calls=len(calls),
            usage=sum(calls, Usage()),
            seconds=time.monotonic() - self.started,
        )
        try:
            result = self._finish(outcome, screen)
        except BaseException as exc:
            self.observer.ended("failed", exc)
            raise
        self.observer.ended(result.status, None)
        return result

    def _finish(self, outcome: ConversationResult, screen: Image.Image | None) -> ActResult:
        not_stored = store_recording(self.recorder, outcome, self.settings)
        writer = RunWriter(self.storage, self.outbox, self.ledger)
        healed, entries = finish_run(
            writer,
            self.executor,
            outcome,
            self.settings,
            name=self.name,
            base=self.base,
            capture=(lambda: screen) if screen is not None else None,
        )
        result = ActResult(
            conversation=outcome,
            replays=self.executor.history,
            strategy=self.strategy,
            regions=dict(self.executor.regions),
            views=dict(self.executor.views),
            ledger_entries=entries,
            heal=healed,
            kept_locally=list(writer.kept),
            not_written=list(writer.not_written),
            synced=self.synced,
        )
        return returned(result, not_stored)
