"""A heal on a screen profile other than the recorded one: kept as that profile's trajectory.

A run on a screen the file was not recorded on (another screenshot size or display scale,
:class:`~askcache.foundation.scaling.ScreenProfile`) replays either the trajectory the file learned
for that profile or, the first time, the recorded one scaled
(:func:`~askcache.replay.profile.choose_profile`). When such a run hands back and the model
completes the task, the verified run becomes **that profile's trajectory**
(:attr:`~askcache.cachefile.format.CacheFile.profiles`), fingerprinted on this profile's own
screens: the recorded trajectory, and every other profile's, stay as they were.

Why inside the one file, not a file per profile: a learned profile is then written exactly as
any heal is, through the same versions (a new version of the one file, under its lock,
crash-consistent), signed over the whole file, shown by ``askcache diff`` and undone by
``askcache rollback``; a fleet's listing, ledger and invalidation stay one per task. Two
machines learning two new profiles at the same moment race for one commit: the later heal
is made again on the file the earlier one wrote (:func:`merge_profile`: that file with this
profile's trajectory) and committed, as long as the file changed in nothing but its other
profiles; otherwise (the same profile healed twice, the trajectory re-recorded or healed) it
becomes a proposal, as any heal that lost a race.
"""

from __future__ import annotations

from askcache.cachefile.format import CacheFile, CoordinateSpace
from askcache.cachefile.parse import parse_cache_file
from askcache.cachefile.signing import parse_verified
from askcache.replay.profile import ProfileChoice

__all__ = ["into_profile", "merge_profile", "profile_display"]


def profile_display(choice: ProfileChoice) -> CoordinateSpace | None:
    """The display size a trajectory learned on ``choice``'s screen stores."""
    screen = choice.screen
    if screen is None or screen.display is None:
        return None
    return CoordinateSpace(width=screen.display[0], height=screen.display[1])


def into_profile(base: bytes, name: str, healed: CacheFile) -> tuple[CacheFile, str]:
    """The file read as ``base`` with ``healed`` (a trajectory built on one profile's
    screens) as that profile's trajectory, learned now; and the profile's key. Everything
    else of the file (its recorded trajectory, the other profiles) is kept as it was; a
    parameter the heal added (typed text stored as a secret) is declared."""
    whole = parse_cache_file(base, name)
    learned = whole.learned(healed)
    key = learned.profile.id
    whole.profiles = {**whole.profiles, key: learned}
    whole.cache_parameters = {**whole.cache_parameters, **healed.cache_parameters}
    return whole, key


def merge_profile(current: bytes, base: bytes, new: bytes, name: str, key: str) -> CacheFile | None:
    """The heal of profile ``key`` (``new``, made from ``base``) made again on ``current``,
    the file as it is now: ``current`` with ``new``'s trajectory for that profile, when
    ``current`` differs from ``base`` in other profiles only; ``None`` otherwise (that
    profile was healed or learned meanwhile, or the rest of the file changed).

    Raises:
        AskCacheError: ``current`` or ``new`` does not load or does not verify as a heal
            requires (:func:`~askcache.cachefile.signing.parse_verified`).
    """
    now = parse_verified(current, name, resign=True)
    before = parse_cache_file(base, name)
    # its profile is signed again below: it must verify as the file a heal signs does (it
    # may have waited in the outbox, a file anyone with the folder could edit)
    healed = parse_verified(new, name, resign=True)
    if now.profiles.get(key) != before.profiles.get(key) or _rest(now) != _rest(before):
        return None
    now.profiles = {**now.profiles, key: healed.profiles[key]}
    now.cache_parameters = {**now.cache_parameters, **healed.cache_parameters}
    now.metadata.redact_typed_text = healed.metadata.redact_typed_text  # the heal's policy
    return now


def _rest(cache_file: CacheFile) -> CacheFile:
    """Everything of a file but its learned profiles and its signature."""
    return cache_file.model_copy(update={"profiles": {}, "signature": None})
