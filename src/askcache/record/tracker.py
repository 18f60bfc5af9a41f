"""Tracking a recording's screens: the screen before the first action (the start state),
each acting step's effect, and over the run the tiles that changed by themselves or show a
parameter (for the end state's comparison).

:class:`StateTracker` is fed the steps in order by
:meth:`~askcache.record.recording.CacheManager.build_cache_file`; the thumbnails, levels and
what is stored are :mod:`askcache.foundation.screen.thumbnails`'s, the places away from a point
:mod:`askcache.foundation.screen.elsewhere`'s.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PIL import Image

from askcache.foundation.geometry import Point
from askcache.foundation.screen.elsewhere import (
    ELEMENT_RADIUS,
    changed_blocks,
    changes_elsewhere,
    prune,
)
from askcache.foundation.screen.thumbnails import (
    EndState,
    ScreenStateConfig,
    StartState,
    StepEffect,
    Thumbnail,
    effect_of,
)
from askcache.foundation.settings import CacheWritingSettings

__all__ = ["StateTracker"]


class StateTracker:
    """Per step, the effect near its point; over the run, which tiles changed where (for the
    end state's volatile and parameter tiles)."""

    def __init__(self, settings: CacheWritingSettings) -> None:
        self.config = ScreenStateConfig() if settings.record_screen_state else None
        self.volatile: set[int] = set()
        self.parameter_tiles: set[int] = set()
        self.volatile_blocks: np.ndarray | None = None
        """Blocks that changed while nothing acted (:mod:`askcache.foundation.screen.elsewhere`)."""
        self._after_parameter = False
        self.start_state: StartState | None = None
        """The screen before the first acting step (``None``: not recorded, or that step
        had no screenshot before it)."""
        self._acted = False

    def step(
        self,
        before: Image.Image | None,
        after: Image.Image | None,
        anchor: Point | None,
        *,
        acting: bool,
        typed_parameter: bool,
        clicked: bool = False,
        later: Sequence[Thumbnail] = (),
    ) -> StepEffect | None:
        """The effect of one step (``None`` when not recorded or not comparable); ``later``:
        the recorder's looks after ``after`` (:mod:`askcache.record.looks`)."""
        if acting and not self._acted:
            self._acted = True
            if self.config is not None and before is not None:
                self.start_state = Thumbnail.of(before, self.config).to_start_state()
        if self.config is None or before is None or after is None:
            self._after_parameter = self._after_parameter or typed_parameter
            return None
        first, second = Thumbnail.of(before, self.config), Thumbnail.of(after, self.config)
        changed = first.changed_tiles(second)
        shown_before = set(self.parameter_tiles)
        self._after_parameter = self._after_parameter or typed_parameter
        if self._after_parameter:
            self.parameter_tiles.update(changed)
        if not acting:
            self.volatile.update(changed)
            if before.size == after.size:
                blocks = changed_blocks(before, after)
                known = self.volatile_blocks
                self.volatile_blocks = blocks if known is None else known | blocks
            return None
        self.volatile.update(set(changed) - set(first.near(changed, anchor)))
        effect = effect_of(
            first,
            second,
            anchor,
            parameter_before=shown_before,
            parameter_after=self.parameter_tiles,
            later=later,
        )
        if effect is not None and not self._after_parameter:
            # what a step changes elsewhere after a typed parameter may show its value
            effect.elsewhere = changes_elsewhere(before, after, anchor, self._radius(clicked))
        return effect

    def _radius(self, clicked: bool) -> int:
        """How far from the point a change must lie to be a place elsewhere: for a click,
        anything but the element clicked (a keypad's display may lie within the effect
        radius, and the near tiles do not see one digit replaced by another); for typing
        and other actions, beyond the effect radius (the text typed, with its blinking
        caret, is the near effect's)."""
        assert self.config is not None
        return ELEMENT_RADIUS if clicked else self.config.effect_radius

    def prune(self, effect: StepEffect | None) -> StepEffect | None:
        """``effect`` without the places elsewhere that also changed while nothing acted."""
        if effect is None or not effect.elsewhere:
            return effect
        kept = prune(effect.elsewhere, self.volatile_blocks)
        return effect.model_copy(update={"elsewhere": kept})

    def end_state(self, final: Image.Image | None) -> EndState | None:
        """The end state from the last screenshot (``None`` when not recorded)."""
        if self.config is None or final is None:
            return None
        thumbnail = Thumbnail.of(final, self.config)
        return thumbnail.to_end_state(
            volatile=sorted(self.volatile), parameter_tiles=sorted(self.parameter_tiles)
        )
