"""Which of a file's trajectories a replay runs: the recorded one, or one learned for this
screen profile.

A file is recorded on one screen profile (:class:`~askcache.foundation.scaling.ScreenProfile`: the
screenshot size and the display's scale). On the same profile it replays as recorded. On a
profile it learned (:attr:`~askcache.cachefile.format.CacheFile.profiles`) it replays that
profile's own trajectory, checked at that profile's density. On any other profile it tries
the recorded steps, scaled, each under the full check: the run *learns* the profile when a
step does not pass, the model completes the task and the run is verified (the heal keeps it
as the profile's trajectory, :mod:`askcache.heal.screen_profile`). When the screen is not known
(no computer tool that knows its size), the recorded trajectory runs as before.
"""

from __future__ import annotations

from dataclasses import dataclass

from askcache.cachefile.format import CacheFile
from askcache.foundation.scaling import ScreenProfile

__all__ = ["ProfileChoice", "choose_profile"]


@dataclass(frozen=True)
class ProfileChoice:
    """The screen a replay runs on, and which trajectory it runs there."""

    screen: ScreenProfile | None = None
    """This run's screen profile; ``None``: not known."""
    learned: str | None = None
    """The learned profile whose trajectory runs (its key in ``profiles``); ``None``: the
    recorded trajectory."""
    learning: bool = False
    """True when the file has no trajectory for this screen: the recorded one runs scaled,
    and a verified heal is kept as this profile's trajectory."""

    @property
    def key(self) -> str | None:
        """The profile a heal of this run writes to: the learned one, or the one being
        learned; ``None``: the recorded trajectory."""
        if self.learned is not None:
            return self.learned
        return self.screen.id if self.learning and self.screen is not None else None

    def describe(self) -> str:
        """In words, for logs and reports."""
        if self.screen is None:
            return "screen profile unknown: the recorded trajectory"
        if self.learned is not None:
            return f"screen profile {self.learned}: its learned trajectory"
        if self.learning:
            return f"screen profile {self.screen} (new): the recorded trajectory, scaled"
        return f"screen profile {self.screen}: the recorded trajectory"


def choose_profile(
    cache_file: CacheFile, screen: ScreenProfile | None
) -> tuple[CacheFile, ProfileChoice]:
    """The file as a replay on ``screen`` runs it, and what was chosen (see the module
    docstring). A learned profile of exactly this id is preferred to one that is the same
    screen within the size tolerance."""
    recorded = cache_file.profile
    if screen is None or recorded is None or screen.same_screen(recorded):
        return cache_file, ProfileChoice(screen)
    if screen.id in cache_file.profiles:
        return cache_file.for_profile(screen.id), ProfileChoice(screen, screen.id)
    for key, learned in cache_file.profiles.items():
        if screen.same_screen(learned.profile):
            return cache_file.for_profile(key), ProfileChoice(screen, key)
    return cache_file, ProfileChoice(screen, learning=True)
