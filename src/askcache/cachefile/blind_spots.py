"""What a cache file's checks cannot see, in words.

A file's validation set-up is fixed when it is recorded, and some settings remove a check for
good. The files they write still replay, checked less, so each such gap is said where a
reader looks: ``askcache lint`` (a warning), ``askcache show``, the report page and
``askcache replay --dry-run`` (``cannot see``), and every replay of the file
(:attr:`askcache.replay.result.ReplayResult.warnings`, on ``ActResult.replay``).
"""

from __future__ import annotations

from askcache.cachefile.format import VisualValidationConfig
from askcache.foundation.limits import threshold_problem

__all__ = ["NO_DETAIL_HASH", "blind_spots", "override_blind_spots"]

NO_DETAIL_HASH = (
    "no detail hash recorded (visual_validation_detail_region_size=None): a relabelled small "
    "control at an action point (a different character in the same place, a 7 key that now "
    "reads 9, Save that now reads Open) is not seen and the step runs; record again with the "
    "default detail region (48 px) to see it"
)
"""The gap of a file recorded without the detail hash: the main region's coarse hash can
match a relabelled key (a calculator's 7 key relabelled 9: 2 bits of 64, within the default
threshold 2)."""


def blind_spots(visual: VisualValidationConfig | None) -> list[str]:
    """The changes a file with the validation set-up ``visual`` cannot see, one sentence
    each (empty: none known). A file with no validation at all is not replayed unchecked
    without ``unchecked_steps="run"``, and says so where it stops; it has none here."""
    if visual is not None and visual.detail is None:
        return [NO_DETAIL_HASH]
    return []


def override_blind_spots(
    visual: VisualValidationConfig | None,
    *,
    threshold: int | None = None,
    detail_threshold: int | None = None,
) -> list[str]:
    """What a replay cannot see because its own settings override the file's thresholds
    (``CacheExecutionSettings.visual_validation_threshold`` and
    ``visual_validation_detail_threshold``) at or above the bit count of the file's hash
    (:func:`askcache.foundation.limits.threshold_problem`): that check then accepts any screen, and
    such a replay says so in its result as a file recorded without the check does
    (:attr:`askcache.replay.result.ReplayResult.warnings`)."""
    gaps: list[str] = []
    if visual is None:
        return gaps
    bits = visual.hash_size**2
    if threshold is not None and threshold_problem(threshold, visual.hash_size) is not None:
        gaps.append(
            f"visual_validation_threshold={threshold} accepts any screen (the file's main "
            f"hash has {bits} bits): no step's screen is checked; replay without this "
            "override to check them"
        )
    if visual.detail is not None and detail_threshold is not None:
        detail_bits = visual.detail.hash_size**2
        if threshold_problem(detail_threshold, visual.detail.hash_size) is not None:
            gaps.append(
                f"visual_validation_detail_threshold={detail_threshold} accepts any detail "
                f"region (the file's detail hash has {detail_bits} bits): a relabelled small "
                "control at an action point (a 7 key that now reads 9, Save that now reads "
                "Open) is not seen and the step runs; replay without this override to see it"
            )
    return gaps
