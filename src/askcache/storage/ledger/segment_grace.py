"""When the S3 run ledger (:mod:`askcache.storage.ledger.segments`) deletes what a newer
generation no longer lists: old generations, and the segments only they list.

A reader lists a trajectory, reads its newest generation, then the segments that generation
lists. Meanwhile a compaction may commit a newer generation that no longer lists some of them:
merged into its own segment, or dropped or rewritten by the retention. Each commit names those
segments in its generation's ``retired`` (with the ones still named by the generation before,
not deleted yet), and deletes nothing a generation still in storage lists. A later commit (a
compaction or a prune), finding that the generation it builds on (``previous``) has existed for
:data:`GENERATION_GRACE_SECONDS`, deletes the generations before ``previous`` and the segments
``previous`` retired: a reader working from one of those generations has had that long to read
its segments. (A reader that still finds one gone, after a longer pause or from a machine whose
clock runs ahead, lists again: :mod:`askcache.storage.ledger.segment_reads`.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from askcache.storage.ledger.segment_objects import Generation, TrajectoryObjects

__all__ = ["GENERATION_GRACE_SECONDS", "Expiry", "expiry"]

GENERATION_GRACE_SECONDS = 900.0
"""A generation older than the one before the newest is deleted once that one is this old."""


@dataclass(frozen=True)
class Expiry:
    """What a commit on ``previous`` carries over and deletes (see the module docstring)."""

    carried: list[str] = field(default_factory=list)
    """Retired segments not deleted yet: the new generation names them in its ``retired``."""
    delete: list[str] = field(default_factory=list)
    """Generations and segments to delete once the new generation is committed."""


def expiry(objects: TrajectoryObjects, previous: Generation | None, now: datetime) -> Expiry:
    """What a commit of the generation after ``previous`` (the newest one in ``objects``, a
    listing of the trajectory) carries over and deletes, at ``now`` (UTC)."""
    if previous is None:
        return Expiry()
    if (now - previous.created_at).total_seconds() < GENERATION_GRACE_SECONDS:
        return Expiry(carried=list(previous.retired))
    older = [name for number, name in objects.generations.items() if number < previous.generation]
    return Expiry(delete=[*older, *previous.retired])
