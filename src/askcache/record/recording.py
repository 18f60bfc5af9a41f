"""Recording: turn a finished conversation into a cache file.

:class:`CacheManager` reads the message history once, in execution order. For each tool call
it knows the screenshot that was the latest *before* the call ran (the result of the call
before it, even inside one assistant message holding several calls), hashes the region
around the call's point for validated actions, and writes the file through a storage.

Recording under a name that already holds a trajectory keeps the earlier one: both become
versions of the trajectory (:class:`~askcache.storage.versions.TrajectoryVersions`, the versions a
heal writes), so ``askcache diff NAME`` shows what changed and ``askcache rollback NAME``
brings the earlier recording back. With versions off (``keep_versions=0``) such a recording
is refused before the first model call
(:class:`~askcache.foundation.errors.CacheOverwriteRefusedError`).

Storing the file is :mod:`askcache.record.store`'s: a first recording is created exclusively
(of two recordings of one name finishing at once, the second becomes a version), and a
recording the storage does not take (a full disk) is kept in the outbox, never dropped.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from PIL import Image

from askcache.cachefile.format import (
    CacheFile,
    CacheMetadata,
    CoordinateSpace,
    RecordingStats,
    dump_cache_file,
)
from askcache.cachefile.parse import parse_cache_file
from askcache.cachefile.signing import sign_cache_file
from askcache.fingerprint.step import (
    compute_step_representation,
    decode_screenshot,
    validation_config,
)
from askcache.foundation.actions import ACTING_ACTIONS, CLICK_ACTIONS, action_anchors, parse_action
from askcache.foundation.errors import (
    AskCacheError,
    CacheOverwriteRefusedError,
    InvalidScreenshotError,
)
from askcache.foundation.geometry import Point
from askcache.foundation.messages import ImageBlockParam, MessageParam, ToolUseBlockParam, Usage
from askcache.foundation.parameters import (
    SECRET_DESCRIPTION,
    TypedTextRedaction,
    parameterize,
    parameterize_input,
    placeholders_in,
    stricter_redaction,
    unsafe_typed_text,
)
from askcache.foundation.redaction import register_secrets
from askcache.foundation.screen.elements import Element, ElementSource
from askcache.foundation.screen.seen import SeenScreens
from askcache.foundation.screen.thumbnails import ScreenStateConfig
from askcache.foundation.screen.windows import WindowFrame, window_at
from askcache.foundation.settings import CacheWritingSettings
from askcache.record.element_record import step_element
from askcache.record.looks import Looks
from askcache.record.store import StoredRecording, store_or_keep
from askcache.record.tracker import StateTracker
from askcache.storage.cache_storage import CacheStorage
from askcache.storage.outbox import Outbox

__all__ = [
    "CACHING_TOOL_NAMES",
    "CacheManager",
    "RecordedStep",
    "default_filename",
    "final_screenshot",
    "steps_with_screens",
]

logger = logging.getLogger(__name__)

CACHING_TOOL_NAMES = frozenset(
    {"list_cached_trajectories", "execute_cached_trajectory", "resume_cached_trajectory"}
)
"""The caching tools' own calls, which are never recorded."""


def default_filename(goal: str, when: datetime | None = None) -> str:
    """A name from the goal's first words and the time: ``fill-form-20261122-101500.json``."""
    slug = re.sub(r"[^a-z0-9]+", "-", goal.lower()).strip("-")[:40].strip("-") or "trajectory"
    stamp = (when or datetime.now(UTC)).strftime("%Y%m%d-%H%M%S")
    return f"{slug}-{stamp}.json"


def _last_image(message: MessageParam, tool_use_id: str | None = None) -> ImageBlockParam | None:
    found = None
    for result in message.tool_results:
        if tool_use_id is not None and result.tool_use_id != tool_use_id:
            continue
        if isinstance(result.content, list):
            for item in result.content:
                if isinstance(item, ImageBlockParam):
                    found = item
    return found


@dataclass(frozen=True)
class RecordedStep:
    """A recorded tool call with the screenshots around it."""

    call: ToolUseBlockParam
    """The call."""
    before: ImageBlockParam | None
    """The latest screenshot from before it ran."""
    after: ImageBlockParam | None
    """The screenshot its own result carried, if any (the screen once it had acted)."""


def steps_with_screens(
    messages: Sequence[MessageParam], skip_tools: Collection[str] = CACHING_TOOL_NAMES
) -> list[RecordedStep]:
    """Each recorded tool call with the latest screenshot from before it ran and the one its
    result carried. Calls to ``skip_tools`` are left out."""
    steps: list[RecordedStep] = []
    latest: ImageBlockParam | None = None
    for index, message in enumerate(messages):
        if message.role == "user":
            latest = _last_image(message) or latest
            continue
        answer = messages[index + 1] if index + 1 < len(messages) else None
        for call in message.tool_uses:
            after = None
            if answer is not None and answer.role == "user":
                after = _last_image(answer, call.id)
            if not (call.toolset_name is None and call.name in skip_tools):
                steps.append(RecordedStep(call, latest, after))
            latest = after or latest
    return steps


def final_screenshot(messages: Sequence[MessageParam]) -> ImageBlockParam | None:
    """The last screenshot of the history: the screen as the run ended."""
    for message in reversed(messages):
        if message.role == "user":
            found = _last_image(message)
            if found is not None:
                return found
    return None


class CacheManager:
    """Records a conversation's tool calls into a cache file.

    Call :meth:`start_recording` when the task starts, let the conversation call
    :meth:`before_tool` before each tool call (:class:`~askcache.agent.act.Agent` wires it), and
    call :meth:`finish_recording` with the whole history when it is done.

    Args:
        capture: Takes a screenshot as the model sees it. Used when the model acts before it
            has seen the screen: that step then gets a fingerprint all the same.
        display_size: The real screen's size, when the computer tool knows it (stored as
            ``metadata.display_size``: a replay on a display of another size then knows the
            screen is drawn at another pixel density).
        keep_versions: Versions of the trajectory kept when recording over an existing one
            (``CachingSettings.keep_versions``); 0: versions are off, and recording over an
            existing trajectory is refused.
        windows: Lists the screen's top-level windows in the screenshots' coordinates
            (:meth:`askcache.tools.computer.ComputerTool.windows`; ``None`` from it: the
            screen cannot list them). Asked before each acting step: the window under the
            step's point is stored on it (``ToolUseBlockParam.window``), so a replay can find
            the window where it is then; its title without this machine's paths, user and
            host names (:mod:`askcache.foundation.screen.titles`).
        elements: Says which element is at a point, in the screenshots' coordinates
            (:meth:`askcache.tools.computer.ComputerTool.elements`). Asked before each acting
            step with a point (``record_elements``): the element there is stored on the step
            with its label's text and look (``ToolUseBlockParam.element``,
            :mod:`askcache.record.element_record`). ``None``: the label's text and look only.
        clock, sleep: Time, for tests.
        outbox: Where the recording is kept when the storage does not take it (the disk
            full, the server gone); default: the storage's outbox in the default folder
            (:func:`~askcache.storage.outbox.default_outbox_dir`).

    With ``capture``, an action whose change near its point was too faint to tell from a
    blinking caret is looked at again before the next call runs (:mod:`askcache.record.looks`).
    """

    def __init__(
        self,
        storage: CacheStorage,
        settings: CacheWritingSettings | None = None,
        *,
        model: str | None = None,
        capture: Callable[[], Image.Image] | None = None,
        display_size: tuple[int, int] | None = None,
        keep_versions: int = 10,
        clock: Callable[[], float] = time.monotonic,
        windows: Callable[[], list[WindowFrame] | None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        outbox: Outbox | None = None,
        elements: ElementSource | None = None,
    ) -> None:
        self.storage = storage
        self.outbox = outbox or Outbox(None, storage.destination())
        """Where the recording is kept when the storage does not take it."""
        self.stored: StoredRecording | None = None
        """How :meth:`finish_recording` stored the recording (``None``: not yet)."""
        self.keep_versions = keep_versions
        self.display_size = display_size
        self.settings = settings or CacheWritingSettings()
        self.model = model
        self.capture = capture
        self._clock = clock
        self._goal: str | None = None
        self._started: float | None = None
        self._captured: dict[str, Image.Image] = {}
        self.windows = windows
        self._windows: dict[str, list[WindowFrame]] = {}
        self.elements = elements
        self._elements: dict[str, Element] = {}
        self._looks: Looks | None = None
        self._over: TypedTextRedaction | None = None
        """The redaction policy of the trajectory this recording replaces, if any."""
        if capture is not None and self.settings.record_screen_state:
            self._looks = Looks(capture, ScreenStateConfig(), clock=clock, sleep=sleep)

    def start_recording(self, goal: str, *, timed: bool = True) -> None:
        """Remember the goal and the start time; check that the file can be written.
        ``timed=False``: the run happened before (its messages are recorded afterwards),
        so its duration is not known and none is stored.

        Raises:
            CacheOverwriteRefusedError: the name holds a trajectory and versions are off.
            CachePathError, CacheStorageError: the name or the place cannot be written.
        """
        register_secrets(self.settings.secret_parameters)  # redacted from logs from now on
        # fail before any model call, not after it:
        name = self.settings.filename or default_filename(goal)
        self.storage.check_writable(name)
        exists = self.storage.exists(name)
        if self.keep_versions == 0 and exists:
            raise CacheOverwriteRefusedError(name, self.storage.describe(name))
        self._over = self._policy_of(name) if exists else None
        self._goal = goal
        self._started = self._clock() if timed else None
        self._captured = {}
        self._windows = {}
        self._elements = {}
        if self._looks is not None:
            self._looks.clear()

    @property
    def redaction(self) -> TypedTextRedaction:
        """The ``redact_typed_text`` this recording applies and stores as the file's policy:
        the settings', or the stricter policy of the trajectory it records over (a file
        recorded with typed text kept secret stays so when recorded again)."""
        return stricter_redaction(self.settings.redact_typed_text, self._over)

    def _policy_of(self, name: str) -> TypedTextRedaction | None:
        """The stored redaction policy of the trajectory ``name`` (``None``: none stated, or
        the file cannot be read: it is kept as a version all the same)."""
        try:
            return parse_cache_file(self.storage.read(name), name).metadata.redact_typed_text
        except AskCacheError as exc:
            logger.info("the redaction policy of %s could not be read: %s", name, exc)
            return None

    def before_tool(self, call: ToolUseBlockParam, messages: Sequence[MessageParam]) -> None:
        """Called before ``call`` runs: when the call before it acted and changed little
        (:mod:`askcache.record.looks`), look at the screen again; when ``call`` acts, list
        the windows (the one under its point is stored with it), and when no screenshot
        precedes it in ``messages``, take one now, so no acting step is recorded blind."""
        self._look_after_last(call, messages)
        action = parse_action(call)
        if action is None or action.name not in ACTING_ACTIONS:
            return
        self._list_windows(call.id)
        self._ask_element(call.id, action.point)
        if self.capture is None:
            return
        if final_screenshot(messages) is None:
            self._captured[call.id] = self.capture()
            logger.info("step %s (%s): took a screenshot before it", call.id, action.name)

    def _list_windows(self, call_id: str) -> None:
        if self.windows is None:
            return
        try:
            listed = self.windows()
        except Exception as exc:  # no window information is today's behaviour, not an error
            logger.info("the windows could not be listed before step %s: %s", call_id, exc)
            return
        if listed is not None:
            self._windows[call_id] = listed

    def _ask_element(self, call_id: str, point: Point | None) -> None:
        if self.elements is None or point is None or not self.settings.record_elements:
            return
        try:
            found = self.elements.element_at(point)
        except Exception as exc:  # no element information is a step checked by pixels
            logger.info("the element under step %s could not be read: %s", call_id, exc)
            return
        if found is not None:
            self._elements[call_id] = found

    def _look_after_last(self, call: ToolUseBlockParam, messages: Sequence[MessageParam]) -> None:
        """Let :attr:`_looks` look again after the call before ``call`` (``messages`` may
        already hold ``call``), when it acted and its screenshots before and after can be
        read (a screenshot that cannot is named when the file is built). A call in the
        same message as ``call`` has no result yet: nothing to look after."""
        if self._looks is None:
            return
        recorded = steps_with_screens(messages)
        ids = [step.call.id for step in recorded]
        position = ids.index(call.id) if call.id in ids else len(recorded)
        last = recorded[position - 1] if position > 0 else None
        action = parse_action(last.call) if last is not None else None
        if last is None or last.after is None or action is None:
            return
        if action.name not in ACTING_ACTIONS:
            return
        try:
            before = _Screens(self._captured).before(last, "")
            after = decode_screenshot(last.after.source.data)
        except InvalidScreenshotError:
            return
        if before is not None:
            anchor = list(action_anchors(step.call for step in recorded[:position]))[-1]
            self._looks.after(last.call.id, before, after, anchor)

    def build_cache_file(
        self, messages: Sequence[MessageParam], seen: SeenScreens | None = None
    ) -> CacheFile:
        """The cache file for ``messages``, without writing it. ``seen``: the screens some
        calls really acted on and left, as the run looked at them (a replay's own looks,
        :class:`~askcache.foundation.screen.seen.SeenScreens`); they stand for the history's
        screenshots of those calls, and for the screenshot a later call (or the end state)
        would take from a result that held no newer one."""
        goal = self._goal
        if goal is None:
            first = messages[0] if messages else None
            goal = first.content if first and isinstance(first.content, str) else ""
        config = validation_config(self.settings)
        params, secrets = self.settings.parameters, dict(self.settings.secret_parameters)
        declared, redact = self.settings.secret_parameters, self.redaction
        recorded = steps_with_screens(messages)
        anchors = action_anchors(step.call for step in recorded)
        screens = _Screens(self._captured, seen or SeenScreens())
        trajectory: list[ToolUseBlockParam] = []
        tracker = StateTracker(self.settings)
        for step, anchor in zip(recorded, anchors, strict=True):
            where = f"the screenshot before step {len(trajectory)}"
            before = screens.before(step, where)
            after = screens.after(step, f"the screenshot after step {len(trajectory)}")
            action = parse_action(step.call)
            fingerprint = None
            if config is not None and action is not None:
                if action.name in self.settings.validated_actions and before is not None:
                    fingerprint = compute_step_representation(
                        before, step.call, config, pointer=anchor
                    )
                elif action.name in ACTING_ACTIONS:
                    logger.warning(
                        "step %d (%s): no fingerprint; a replay hands back before it unless "
                        "unchecked_steps='run'",
                        len(trajectory),
                        action.name,
                    )
            text = step.call.input.get("text")
            if (
                action
                and action.name == "type"
                and isinstance(text, str)
                and unsafe_typed_text(parameterize(text, params, secrets), declared, redact)
            ):
                secrets.setdefault(f"typed_{len(trajectory)}", text)  # a secret from now on
                register_secrets(secrets)
            inputs = parameterize_input(
                action.name if action else None, step.call.input, params, secrets
            )
            effect = tracker.step(
                before,
                after,
                anchor,
                acting=action is not None and action.name in ACTING_ACTIONS,
                # a replayed step typing a secret is in the history as its placeholder
                typed_parameter=inputs != step.call.input or bool(placeholders_in([inputs])),
                clicked=action is not None and action.name in CLICK_ACTIONS,
                later=self._looks.of(step.call.id) if self._looks is not None else [],
            )
            trajectory.append(
                ToolUseBlockParam(
                    id=step.call.id,
                    name=step.call.name,
                    input=inputs,
                    toolset_name=step.call.toolset_name,
                    visual_representation=fingerprint.region if fingerprint else None,
                    visual_detail=fingerprint.detail if fingerprint else None,
                    effect=effect,
                    visual_tone=fingerprint.tone if fingerprint else None,
                    visual_target=fingerprint.target if fingerprint else None,
                    visual_weak=fingerprint.weak if fingerprint else None,
                    visual_other_density=fingerprint.other_density if fingerprint else None,
                    window=_stored(window_at(self._windows.get(step.call.id, []), anchor)),
                )
            )
        trajectory = [
            call.model_copy(update={"effect": tracker.prune(call.effect)}) for call in trajectory
        ]
        if self.settings.record_elements:  # once every typed secret is known
            trajectory = self._with_elements(trajectory, recorded, screens, params, secrets)
        final = screens.decode(final_screenshot(messages), "the last screenshot", seen=True)
        calls = [m.usage for m in messages if m.usage is not None]
        stats = RecordingStats(
            model_calls=len(calls),
            usage=sum(calls, Usage()),
            duration_seconds=None if self._started is None else self._clock() - self._started,
            model=self.model,
        )
        metadata = CacheMetadata(
            goal=parameterize(goal, params, secrets),
            coordinate_space=screens.space,
            display_size=(
                CoordinateSpace(width=self.display_size[0], height=self.display_size[1])
                if self.display_size is not None
                else None
            ),
            visual_validation=config,
            screen_state=tracker.config,
            start_state=tracker.start_state,
            end_state=tracker.end_state(final),
            recording=stats,
            redact_typed_text=redact,  # the file's own policy: heals of it follow it
        )
        return CacheFile(
            metadata=metadata,
            trajectory=trajectory,
            cache_parameters={
                **dict.fromkeys(params, ""),
                **dict.fromkeys(secrets, SECRET_DESCRIPTION),
            },
        )

    def _with_elements(
        self,
        trajectory: list[ToolUseBlockParam],
        recorded: Sequence[RecordedStep],
        screens: _Screens,
        params: Mapping[str, str],
        secrets: Mapping[str, str],
    ) -> list[ToolUseBlockParam]:
        """``trajectory`` with each acting step's element (:mod:`.element_record`)."""
        steps: list[ToolUseBlockParam] = []
        for position, (call, step) in enumerate(zip(trajectory, recorded, strict=True)):
            action = parse_action(step.call)
            if action is None or action.name not in ACTING_ACTIONS or action.point is None:
                steps.append(call)
                continue
            before = screens.before(step, f"the screenshot before step {position}")
            if before is None:
                steps.append(call)
                continue
            tree = self._elements.get(step.call.id)
            element = step_element(before, action.point, tree, params, secrets)
            steps.append(call.model_copy(update={"element": element}))
        return steps

    def finish_recording(self, messages: Sequence[MessageParam]) -> str:
        """Build the cache file from ``messages``, store it, and return its name. A first
        recording of the name is created exclusively; a trajectory already stored under the
        name (or created meanwhile by another recording) is kept as a version, or the
        recording as a proposal (:mod:`askcache.record.store`). :attr:`stored` says which.

        Raises:
            CacheOverwriteRefusedError: the name holds a trajectory and versions are off
                (the recording is kept as a proposal; the error names it).
            RecordingNotStoredError: the storage did not take it (a full disk, a server
                gone); it is kept in the outbox, or, when that fails too, only on the error.
        """
        cache_file = self.build_cache_file(messages)
        sign_cache_file(cache_file)  # when ASKCACHE_SIGNING_KEY is set (askcache.cachefile.signing)
        name = self.settings.filename or default_filename(self._goal or "trajectory")
        data = dump_cache_file(cache_file)
        stored = store_or_keep(
            self.storage, name, data, keep_versions=self.keep_versions, outbox=self.outbox
        )
        self.stored = stored
        if stored.how == "proposal" and self.keep_versions == 0:
            raise CacheOverwriteRefusedError(
                name, self.storage.describe(name), kept_as=self.storage.describe(stored.where)
            )
        logger.info(
            "recorded %d steps to %s", len(cache_file.trajectory), self.storage.describe(name)
        )
        return name


def _stored(window: WindowFrame | None) -> WindowFrame | None:
    """A step's window as the file stores it (:meth:`WindowFrame.stored`: no path, user or
    host name of this machine in its title)."""
    return None if window is None else window.stored()


class _Screens:
    """Decodes a recording's screenshots once and remembers the coordinate space; a screen
    the run looked at itself (``seen``) stands for the history's screenshot of its call."""

    def __init__(self, captured: dict[str, Image.Image], seen: SeenScreens | None = None) -> None:
        self.captured = captured
        self.seen = seen or SeenScreens()
        self.space: CoordinateSpace | None = None
        self._carried: tuple[ImageBlockParam | None, Image.Image] | None = None
        """The history's latest screenshot after a call with a screen ``seen`` after it,
        and that screen: a later call whose latest screenshot is still that one saw it."""

    def decode(
        self, block: ImageBlockParam | None, where: str, *, seen: bool = False
    ) -> Image.Image | None:
        """``block`` decoded; ``seen``: the screen looked at since, when ``block`` is the
        latest screenshot after a call with a screen looked at after it."""
        carried = self._carried
        if seen and carried is not None and block is carried[0]:
            return self._seen(carried[1])
        if block is None:
            return None
        return self._seen(decode_screenshot(block.source.data, where))

    def before(self, step: RecordedStep, where: str) -> Image.Image | None:
        looked = self.seen.before.get(step.call.id)
        if looked is not None:
            return self._seen(looked)
        if step.before is not None:
            return self.decode(step.before, where, seen=True)
        captured = self.captured.get(step.call.id)
        if captured is not None:
            return self._seen(captured)
        return self.decode(None, where, seen=True)

    def after(self, step: RecordedStep, where: str) -> Image.Image | None:
        looked = self.seen.after.get(step.call.id)
        if looked is None:
            return self.decode(step.after, where)
        self._carried = (step.after or step.before, looked)
        return self._seen(looked)

    def _seen(self, image: Image.Image) -> Image.Image:
        if self.space is None:
            self.space = CoordinateSpace(width=image.width, height=image.height)
        return image
