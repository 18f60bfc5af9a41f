"""Looks: the recorder looks at the screen again after an action whose change was faint.

A screenshot is one instant. A text caret blinks: the screenshot after a click into a text
(GTK's caret is off a third of the time) may show the old caret gone and the new one not
drawn yet, and the effect recorded from it would be the old caret vanishing alone: a replay
would check the wrong area before the click and wait for a change that a blink decides.
So when what an action changed near its point is too faint to tell from a blinking caret
(:func:`~askcache.foundation.screen.thumbnails.faint_change`: nothing there changed the way another
run's screen differs, or nothing changed at all), the recorder looks at the screen a few more
times, for :data:`LOOK_SECONDS`, before the next call runs (nothing acts in between). The
effect is then every tile that changed in any look
(:func:`~askcache.foundation.screen.thumbnails.effect_of`): a caret off in the screenshot shows in a
later look.

Looking needs the computer tool's screen (``capture``); a history recorded without it
(:meth:`~askcache.record.recording.CacheManager.build_cache_file` on messages alone) keeps
the screenshots' effects. Only thumbnails are kept, in memory, until the file is built.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from PIL import Image

from askcache.foundation.geometry import Point
from askcache.foundation.screen.thumbnails import ScreenStateConfig, Thumbnail, faint_change

__all__ = ["LOOK_INTERVAL", "LOOK_SECONDS", "Looks"]

logger = logging.getLogger(__name__)

LOOK_SECONDS = 0.7
"""How long the recorder looks again, in seconds: longer than a caret's off phase (GTK
0.4 s, Tk 0.3 s, Windows 0.53 s), so one look catches it on."""
LOOK_INTERVAL = 0.05
"""Pause between two looks, in seconds."""


class Looks:
    """The recorder's looks at the screen after faint actions, per tool call id.

    Args:
        capture: Takes a screenshot as the model sees it.
        config: How thumbnails are computed.
        clock, sleep: Time, for tests.
    """

    def __init__(
        self,
        capture: Callable[[], Image.Image],
        config: ScreenStateConfig,
        *,
        clock: Callable[[], float],
        sleep: Callable[[float], None],
    ) -> None:
        self.capture = capture
        self.config = config
        self._clock = clock
        self._sleep = sleep
        self._looks: dict[str, list[Thumbnail]] = {}

    def clear(self) -> None:
        """Forget every look (a new recording starts)."""
        self._looks = {}

    def of(self, call_id: str) -> list[Thumbnail]:
        """The looks taken after the call ``call_id`` (none: it was not faint, or not seen)."""
        return self._looks.get(call_id, [])

    def after(
        self, call_id: str, before: Image.Image, after: Image.Image, anchor: Point | None
    ) -> None:
        """Called once the acting call ``call_id`` ran and before anything else acts:
        when its change near ``anchor`` from ``before`` to ``after`` (its result's
        screenshot) is faint, look again for :data:`LOOK_SECONDS`."""
        if call_id in self._looks:
            return
        self._looks[call_id] = []
        if before.size != after.size:
            return
        first, second = Thumbnail.of(before, self.config), Thumbnail.of(after, self.config)
        if not faint_change(first, second, anchor):
            return
        started = self._clock()
        looks = self._looks[call_id]
        while True:
            try:
                image = self.capture()
            except Exception as exc:  # a look is extra: the screenshots still stand
                logger.info("step %s: looking again failed: %s", call_id, exc)
                return
            if image.size == after.size:
                looks.append(Thumbnail.of(image, self.config))
            if self._clock() - started >= LOOK_SECONDS:
                break
            self._sleep(LOOK_INTERVAL)
        logger.debug("step %s: %d more looks after a faint change", call_id, len(looks))
