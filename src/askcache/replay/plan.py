"""What one replay runs: its file, its steps (parameters filled in), its settings.

A :class:`Plan` is a value: it is made once when a replay is activated
(:meth:`Plan.of`) and replaced only when the replay takes a recorded variant
(:meth:`Plan.take_variant`). The replay's states (:mod:`.states`) carry it; the checks read it.
The small values the states pass between them live here too: where a moved window is now
(:class:`Anchor`), the call whose result the next turn reads (:class:`Pending`), and where a
replay handed back (:class:`Stopped`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from PIL import Image

from askcache.cachefile.format import CacheFile, TrajectoryVariant
from askcache.foundation.actions import ACTING_ACTIONS, ToolShape, action_anchors, parse_action
from askcache.foundation.geometry import Point
from askcache.foundation.messages import ToolUseBlockParam
from askcache.foundation.parameters import substitute
from askcache.foundation.scaling import SAME_SIZE_TOLERANCE, same_size
from askcache.foundation.screen.elements import Element
from askcache.foundation.screen.thumbnails import EndState, ScreenStateConfig, Thumbnail
from askcache.foundation.screen.windows import WindowFrame
from askcache.foundation.settings import CacheExecutionSettings
from askcache.replay.check_policy import CheckPolicy
from askcache.replay.profile import ProfileChoice
from askcache.storage.ledger import FailedCheck

__all__ = [
    "CAPTURE_ATTEMPTS",
    "OTHER_DENSITY_SCALE",
    "Anchor",
    "CaptureFailedError",
    "Pending",
    "Plan",
    "StartScreen",
    "Stopped",
    "first_acting_step",
    "other_scale",
]


CAPTURE_ATTEMPTS = 3
"""A screenshot the replay takes itself is tried this many times in a row
(:data:`~askcache.replay.screens.POLL_SECONDS` apart) before the state that needed it gives up
(:mod:`.driver`): a grab that fails once (a busy X server) is a look skipped, not the end of a
wait."""


class CaptureFailedError(Exception):
    """The replay's own screenshot failed every attempt: the state that needed it cannot
    decide."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(
            f"no screenshot could be taken ({CAPTURE_ATTEMPTS} attempts in a row): "
            f"{type(cause).__name__}: {cause}"
        )


OTHER_DENSITY_SCALE = SAME_SIZE_TOLERANCE
"""A screen counts as drawn at another pixel density when its size differs from the
recorded one by more than this fraction in either direction."""


def other_scale(size: tuple[int, int], recorded: tuple[int, int]) -> bool:
    """True when ``size`` is another pixel density than ``recorded``."""
    return not same_size(size, recorded)


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
class Anchor:
    """A step checked and acted on away from its recorded point: where its window (or its
    region) is now."""

    offset: tuple[int, int]
    """How far it moved, in recorded pixels (``x``, ``y``); never ``(0, 0)``."""
    frame: WindowFrame | None
    """The window's frame as recorded (recorded pixels); ``None`` for a match the search
    found (:mod:`askcache.replay.search`)."""
    how: str
    """How it was found, for reports: ``window``, ``search`` or ``element``."""

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
        if self.how == "element":
            return f"where its element is now ({moved} from the recorded point)"
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
    the point that the step changed when recorded; :mod:`askcache.foundation.screen.elsewhere`)."""
    started: float = 0.0
    """When the step's observation began (the replay's clock)."""
    anchor: Anchor | None = None
    """Where the step ran, when away from its recorded point: its effect is looked for
    there."""
    redrawn: bool = False
    """The step ran on a screen drawn otherwise than the recording's (at another pixel density,
    or its element's word and look decided: :mod:`askcache.replay.element_check`): its effect
    is that the area it changed when recorded changes again, not that it looks as it did then
    (nor the places away from its point)."""
    element: Element | None = None
    """The element the step's check found at its point just before it ran (``None``: no
    element check spoke): on a screen drawn otherwise, what it says after the step may confirm
    the step's effect (:func:`~askcache.replay.effects.element_effect`)."""
    element_point: Point | None = None
    """Where :attr:`element` was asked about (recorded pixels, on the screen as it is)."""


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
    those a heal found to differ harmlessly
    (:attr:`~askcache.foundation.screen.thumbnails.StartState.varying`)."""

    @classmethod
    def of(cls, cache_file: CacheFile, steps: Sequence[ToolUseBlockParam]) -> StartScreen:
        """The start screen of ``cache_file`` whose steps (parameters filled in) are
        ``steps``."""
        meta = cache_file.metadata
        first = first_acting_step(steps)
        thumbnail = None
        skip = set(meta.end_state.volatile if meta.end_state is not None else ())
        if meta.screen_state is not None and meta.start_state is not None:
            thumbnail = Thumbnail.from_end_state(meta.start_state, meta.screen_state)
            skip.update(meta.start_state.varying)
        return cls(first, thumbnail, frozenset(skip))


def _filled_variants(
    cache_file: CacheFile, values: Mapping[str, str]
) -> dict[int, tuple[TrajectoryVariant, ...]]:
    """The file's variants with their steps' parameters filled in."""
    return {
        index: tuple(
            variant.model_copy(
                update={
                    "steps": [
                        step.model_copy(update={"input": substitute(step.input, values)})
                        for step in variant.steps
                    ]
                }
            )
            for variant in variants
        )
        for index, variants in cache_file.variants.items()
    }


@dataclass(frozen=True)
class Plan:
    """What one replay of one cache file runs (see the module docstring).

    ``file`` is the file as this replay runs it (a learned screen profile's view when one
    was chosen, :func:`~askcache.replay.profile.choose_profile`); ``profile`` says which
    screen profile it runs on and which trajectory runs there.
    """

    file: CacheFile
    name: str
    settings: CacheExecutionSettings
    policy: CheckPolicy
    """The thresholds and switches the checks decide with, and what loosens them."""
    tool_shape: ToolShape
    values: Mapping[str, str]
    """The values the steps' ``{{name}}`` parameters were filled in with."""
    steps: tuple[ToolUseBlockParam, ...]
    variants: Mapping[int, tuple[TrajectoryVariant, ...]]
    """Step index -> the other ways through the trajectory from there (parameters
    filled in); see :class:`~askcache.cachefile.format.TrajectoryVariant`."""
    anchors: tuple[Point | None, ...]
    """Per step: where the pointer is before it
    (:func:`~askcache.foundation.actions.action_anchors`)."""
    start: StartScreen
    end: Thumbnail | None
    """The recorded end state's thumbnail (``None``: none recorded)."""
    end_state: EndState | None
    space: tuple[int, int] | None
    """The size the trajectory's coordinates are in (``None``: not recorded)."""
    other_display: bool
    """True when the computer tool reports a display of another size than the
    recording's: the screen is drawn at another pixel density even where its screenshots
    come at the recorded size."""
    watchable: bool
    """True when the replay may look at the screen itself (``auto_wait`` and a screen to
    look at): it waits for screens instead of sleeping."""
    lists_windows: bool = False
    """True when a look also lists the screen's windows (a step recorded with its window is
    checked where that window is now, :mod:`.anchor`)."""
    profile: ProfileChoice = field(default_factory=ProfileChoice)
    keep_seen: bool = True
    """Keep the screens each replayed call was checked on and left
    (:class:`~askcache.replay.run_progress.SeenLog`)."""
    keep_failure_views: bool = False
    """Keep what a step was checked on when its check refuses it (for the failing-region
    thumbnails, ``CachingSettings.ledger_thumbnails``), even without ``keep_step_views``."""
    budgets: Mapping[int, float] = field(default_factory=dict)
    """Per step index: how long its past waits on this screen profile say an unchanged
    screen may be waited on before handing back (the run ledger's 99th percentile of them
    plus half of it, when it holds enough runs); a step missing here has no such past."""

    @classmethod
    def of(
        cls,
        cache_file: CacheFile,
        name: str,
        *,
        parameter_values: Mapping[str, str],
        settings: CacheExecutionSettings,
        tool_shape: ToolShape,
        can_look: bool,
        display_size: tuple[int, int] | None = None,
        lists_windows: bool = False,
        profile: ProfileChoice | None = None,
    ) -> Plan:
        """The plan of a replay of ``cache_file`` (``can_look``: the replay has a screen of
        its own to look at)."""
        values = dict(parameter_values)
        steps = tuple(
            step.model_copy(update={"input": substitute(step.input, values)})
            for step in cache_file.trajectory
        )
        meta = cache_file.metadata
        space = (
            (meta.coordinate_space.width, meta.coordinate_space.height)
            if meta.coordinate_space is not None
            else None
        )
        recorded = meta.display_size
        end = None
        if meta.screen_state is not None and meta.end_state is not None:
            end = Thumbnail.from_end_state(meta.end_state, meta.screen_state)
        return cls(
            file=cache_file,
            name=name,
            settings=settings,
            policy=CheckPolicy.resolve(
                cache_file, settings, settings.model_visual_validation_threshold
            ),
            tool_shape=tool_shape,
            values=values,
            steps=steps,
            variants=_filled_variants(cache_file, values),
            anchors=tuple(action_anchors(steps)),
            start=StartScreen.of(cache_file, steps),
            end=end,
            end_state=meta.end_state,
            space=space,
            other_display=(
                display_size is not None
                and recorded is not None
                and other_scale(display_size, (recorded.width, recorded.height))
            ),
            watchable=settings.auto_wait and can_look,
            lists_windows=lists_windows,
            profile=profile or ProfileChoice(),
        )

    @property
    def config(self) -> ScreenStateConfig | None:
        """The file's thumbnail set-up (``None``: it records no screen states)."""
        return self.file.metadata.screen_state

    @property
    def volatile(self) -> frozenset[int]:
        """The tiles that changed by themselves when recorded (a clock)."""
        end = self.end_state
        return frozenset(end.volatile) if end is not None else frozenset()

    def without_start(self) -> Plan:
        """This plan once the start screen guards nothing more (it was waited for, a variant
        replaced the first step, or the replay handed back)."""
        if self.start.step is None:
            return self
        return replace(self, start=replace(self.start, step=None))

    def take_variant(self, index: int, number: int) -> Plan:
        """This plan running variant ``number`` of step ``index`` in place of the steps it
        replaces."""
        variant = self.variants[index][number]
        end = index + variant.replaces
        shift = len(variant.steps) - variant.replaces
        end_state, end_thumbnail = self.end_state, self.end
        if end >= len(self.steps) and variant.end_state is not None:
            config = self.config
            end_state = variant.end_state
            end_thumbnail = Thumbnail.from_end_state(end_state, config) if config else None
        steps = (*self.steps[:index], *variant.steps, *self.steps[end:])
        return replace(
            self,
            steps=steps,
            anchors=tuple(action_anchors(steps)),
            variants={
                (i + shift if i >= end else i): v
                for i, v in self.variants.items()
                if i < index or i >= end
            },
            end_state=end_state,
            end=end_thumbnail,
            start=replace(self.start, step=None),  # the start screen was not the variant's
        )
