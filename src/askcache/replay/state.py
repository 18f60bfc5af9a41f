"""What one replay knows: its file, its steps (parameters filled in), where it is, its result.

:class:`ReplayState` is shared by the phases (:mod:`.observe`, :mod:`.wait`, :mod:`.check`,
:mod:`.act`, :mod:`.verify`, :mod:`.end_state`, :mod:`.rejoin`), each a function of the state;
:class:`~askcache.replay.session.ReplaySession` is the state machine that runs them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

from PIL import Image

from askcache.actions import ACTING_ACTIONS, ToolShape, action_anchors, parse_action
from askcache.cachefile.blind_spots import blind_spots, override_blind_spots
from askcache.cachefile.format import CacheFile, TrajectoryVariant
from askcache.messages import ToolUseBlockParam
from askcache.parameters import substitute
from askcache.replay.check_policy import CheckPolicy
from askcache.replay.profile import ProfileChoice
from askcache.replay.result import ReplayResult
from askcache.replay.step_view import StepView
from askcache.scaling import SAME_SIZE_TOLERANCE, same_size
from askcache.screen.seen import SeenScreens
from askcache.screen.state import Thumbnail
from askcache.screen.windows import WindowFrame
from askcache.settings import CacheExecutionSettings
from askcache.storage.ledger import FailedCheck

__all__ = [
    "CAPTURE_ATTEMPTS",
    "OTHER_DENSITY_SCALE",
    "Anchor",
    "CaptureFailedError",
    "Pending",
    "ReplayState",
    "Stopped",
    "first_acting_step",
    "other_scale",
]

logger = logging.getLogger(__name__)


CAPTURE_ATTEMPTS = 3
"""A screenshot the replay takes itself is tried this many times in a row
(:data:`~askcache.replay.observe.POLL_SECONDS` apart) before the phase that needed it hands back: a
grab that fails once (a busy X server) is a look skipped, not the end of a wait."""


class CaptureFailedError(Exception):
    """The replay's own screenshot failed every attempt: the phase that needed it cannot
    decide."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(
            f"no screenshot could be taken ({CAPTURE_ATTEMPTS} attempts in a row): "
            f"{type(cause).__name__}: {cause}"
        )


@dataclass(frozen=True)
class Anchor:
    """A step checked and acted on away from its recorded point: where its window (or its
    region) is now."""

    offset: tuple[int, int]
    """How far it moved, in recorded pixels (``x``, ``y``); never ``(0, 0)``."""
    frame: WindowFrame | None
    """The window's frame as recorded (recorded pixels); ``None`` for a match the search
    found (:mod:`askcache.replay.search`)."""
    how: str
    """How it was found, for reports: ``window`` or ``search``."""

    def compared_box(self, size: tuple[int, int]) -> tuple[int, int, int, int]:
        """What of a screen of ``size`` (recorded pixels) seen from here can be compared
        with the recording (``x``, ``y``, width, height): the part the move brings into view
        and, of it, the window's recorded frame when there is one."""
        dx, dy = self.offset
        left, top = max(0, -dx), max(0, -dy)
        right, bottom = min(size[0], size[0] - dx), min(size[1], size[1] - dy)
        frame = self.frame
        if frame is not None:
            left, top = max(left, frame.x), max(top, frame.y)
            right = min(right, frame.x + frame.width)
            bottom = min(bottom, frame.y + frame.height)
        return (left, top, max(0, right - left), max(0, bottom - top))

    def describe(self) -> str:
        """Where the step was checked, in words."""
        moved = f"{self.offset[0]:+d}, {self.offset[1]:+d} px"
        if self.how == "window":
            return f"where its window is now ({moved} from the recording)"
        return f"where the search found its region ({moved} from the recorded point)"


@dataclass(frozen=True)
class Pending:
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
    anchor: Anchor | None = None
    """Where the step ran, when away from its recorded point: its effect is looked for
    there."""


@dataclass(frozen=True)
class Stopped:
    """Where a replay handed back, and what a re-join must see fixed."""

    step: int
    """The step it stopped at."""
    check: FailedCheck
    """The check that failed."""
    at_message: int
    """Messages in the conversation when it handed back: the model's calls come after."""
    ran: Pending | None = None
    """With ``check="effect"``: the step as it ran (the screen before it), to check its
    effect again on a later screen."""


OTHER_DENSITY_SCALE = SAME_SIZE_TOLERANCE
"""A screen counts as drawn at another pixel density when its size differs from the
recorded one by more than this fraction in either direction."""


def first_acting_step(steps: Sequence[ToolUseBlockParam]) -> int | None:
    """The index of the first step that acts on the screen (``None``: none does)."""
    return next(
        (
            index
            for index, step in enumerate(steps)
            if (action := parse_action(step)) is not None and action.name in ACTING_ACTIONS
        ),
        None,
    )


@dataclass(frozen=True)
class StartScreen:
    """The recorded screen the trajectory's first action waits for
    (:attr:`~askcache.cachefile.format.CacheMetadata.start_state`)."""

    step: int | None
    """The index of the trajectory's first acting step (``None``: none acts, a variant
    replaced it, or the replay handed back: the start screen guards the start only)."""
    thumbnail: Thumbnail | None
    """The screen before it when recorded (``None``: not recorded)."""
    skip: frozenset[int]
    """Tiles not compared: those that changed by themselves while recorded (a clock), and
    those a heal found to differ harmlessly (:attr:`~askcache.screen.state.StartState.varying`)."""

    @classmethod
    def of(cls, cache_file: CacheFile, steps: Sequence[ToolUseBlockParam]) -> StartScreen:
        meta = cache_file.metadata
        first = first_acting_step(steps)
        thumbnail = None
        skip = set(meta.end_state.volatile if meta.end_state is not None else ())
        if meta.screen_state is not None and meta.start_state is not None:
            thumbnail = Thumbnail.from_end_state(meta.start_state, meta.screen_state)
            skip.update(meta.start_state.varying)
        return cls(first, thumbnail, frozenset(skip))


def other_scale(size: tuple[int, int], recorded: tuple[int, int]) -> bool:
    return not same_size(size, recorded)


def _filled_variants(
    cache_file: CacheFile, values: Mapping[str, str]
) -> dict[int, list[TrajectoryVariant]]:
    """The file's variants with their steps' parameters filled in."""
    return {
        index: [
            variant.model_copy(
                update={
                    "steps": [
                        step.model_copy(update={"input": substitute(step.input, values)})
                        for step in variant.steps
                    ]
                }
            )
            for variant in variants
        ]
        for index, variants in cache_file.variants.items()
    }


class ReplayState:
    """The state of one replay of one cache file.

    ``file`` is the file as this replay runs it (a learned screen profile's view when one
    was chosen, :func:`~askcache.replay.profile.choose_profile`); ``profile`` says which
    screen profile it runs on and which trajectory runs there.
    """

    def __init__(  # noqa: PLR0915 (a state of many parts, until the states become values)
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
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.file = cache_file
        self.name = name
        self.profile = profile or ProfileChoice()
        self.settings = settings
        self.tool_shape = tool_shape
        self.capture = capture
        self.windows = windows
        """Lists the screen's windows as the model sees them (``None``: it cannot)."""
        self.sleep = sleep
        self.clock = clock
        self.parameter_values = dict(parameter_values)
        """The values the steps' ``{{name}}`` parameters were filled in with."""
        self.steps = [
            step.model_copy(update={"input": substitute(step.input, parameter_values)})
            for step in cache_file.trajectory
        ]
        self.variants = _filled_variants(cache_file, parameter_values)
        """Step index -> the other ways through the trajectory from there (parameters
        filled in); see :class:`~askcache.cachefile.format.TrajectoryVariant`."""
        self.anchors = list(action_anchors(self.steps))
        self.index = start_step
        self.policy = CheckPolicy.resolve(
            cache_file, settings, settings.model_visual_validation_threshold
        )
        """The thresholds and switches the checks decide with, and what loosens them."""
        self.result = ReplayResult(
            cache_file=name,
            steps_total=len(self.steps),
            start_step=start_step,
            profile=self.profile.screen.id if self.profile.screen is not None else None,
            learning=self.profile.learning,
            warnings=[
                *blind_spots(cache_file.metadata.visual_validation),
                *override_blind_spots(
                    cache_file.metadata.visual_validation,
                    threshold=settings.visual_validation_threshold,
                    detail_threshold=settings.visual_validation_detail_threshold,
                ),
            ],
            loosened=list(self.policy.loosened),
        )
        self.views: dict[int, StepView] = {}
        """Per checked step: what it was checked on (recorded space), for reports; empty
        unless the settings keep step views (``keep_step_views``)."""
        self.suspended = False
        """True after a hand-back: the replay may re-join later."""
        self.emitted: dict[str, ToolUseBlockParam] = {}
        """Per tool call id the replay emitted: the step it replayed (with its fingerprint
        and effect; healing keeps those for the replayed part of a run)."""
        self.pending: Pending | None = None
        self.ran: Pending | None = None
        """The call whose result was read last (a step's: the screen before it)."""
        self.stopped: Stopped | None = None
        self.started = clock()
        self.first_step = True
        self.starting = True
        """True until the first step that needs a screen was checked: its wait is the
        start-up wait (see :meth:`_observe_and_check`)."""
        self.screenshot_asked_for: int | None = None
        self.step_started = clock()
        meta = cache_file.metadata
        self.space = (
            (meta.coordinate_space.width, meta.coordinate_space.height)
            if meta.coordinate_space is not None
            else None
        )
        recorded_display = meta.display_size
        self.other_display = (
            display_size is not None
            and recorded_display is not None
            and other_scale(display_size, (recorded_display.width, recorded_display.height))
        )
        """True when the computer tool reports a display of another size than the
        recording's: the screen is drawn at another pixel density even where its screenshots
        come at the recorded size."""
        self.moved_seen = False
        """True once a step ran where its window (or its region) had moved from the
        recorded place (:mod:`askcache.replay.anchor`): a heal then writes nothing (its
        steps would mix two layouts)."""
        self.last_anchor: Anchor | None = None
        """Where the last step that ran was anchored, when its window had moved: the end
        state is compared there."""
        self.other_density_seen = False
        """True once a step was checked as on a screen drawn at another pixel density (a
        heal then writes nothing: its fingerprints would mix two densities)."""
        self.end: Thumbnail | None = None
        self.end_state = meta.end_state
        if meta.screen_state is not None and meta.end_state is not None:
            self.end = Thumbnail.from_end_state(meta.end_state, meta.screen_state)
        self.start = StartScreen.of(cache_file, self.steps)  # what the first action waits for

    @cached_property
    def seen(self) -> SeenScreens:
        """Per replayed call: the screen the replay checked it on and the screen it left (its
        own looks): what a trajectory built from this run fingerprints it on, whatever
        ``keep_step_views`` says (its result's screenshot was taken the moment it ran)."""
        return SeenScreens()

    def can_watch(self) -> bool:
        return self.settings.auto_wait and self.capture is not None

    def take_variant(self, number: int) -> ToolUseBlockParam:
        """Run variant ``number`` of this index in place of the steps it replaces."""
        index = self.index
        variant = self.variants[index][number]
        end = index + variant.replaces
        shift = len(variant.steps) - variant.replaces
        if end >= len(self.steps) and variant.end_state is not None:
            config = self.file.metadata.screen_state
            self.end_state = variant.end_state
            self.end = Thumbnail.from_end_state(variant.end_state, config) if config else None
        self.steps = [*self.steps[:index], *variant.steps, *self.steps[end:]]
        self.anchors = list(action_anchors(self.steps))
        self.variants = {
            (i + shift if i >= end else i): v
            for i, v in self.variants.items()
            if i < index or i >= end
        }
        self.result.steps_total = len(self.steps)
        self.result.variants_used.append(index)
        self.start = replace(self.start, step=None)  # the start screen was not the variant's
        logger.info("replay of %s takes variant %d at step %d", self.name, number, index)
        return self.steps[index]
