"""The objects of the S3 ledger engine (:mod:`askcache.storage.ledger.segments`) and how one
trajectory's are read.

Per trajectory ``T``, in three hidden folders of the cache storage:

- ``.ledger/T/<UTC time>-<id>.json``: a *loose* entry, one per run, created and never
  rewritten (the folder engine's format, so a ledger written by an older askcache is read as
  it is);
- ``.ledger-segments/T/segment-<generation>-<random>.json``: a :class:`Segment`, the entries
  one compaction folded (and those of the segment before it, merged while they fit in one),
  kept for the retention period;
- ``.ledger-summaries/T/summary-<generation>.json``: a :class:`Generation`, the summary of
  every entry folded up to that compaction, which entries that compaction folded, and the
  table of kept segments. Each generation is created exclusively (``If-None-Match: *`` on
  S3), so of two compactions of the same trajectory at once exactly one commits;
- ``.ledger-summaries/T/claim-<generation>-<attempt>.json``: a :class:`Claim`, a process
  compacting into that generation (:mod:`askcache.storage.ledger.segment_claims`).

And one for all trajectories, ``.ledger-cache/summaries.json`` (:class:`SummaryCache`): the
summaries ``summaries()`` last computed, each with the generation and the loose entries it
was computed from. Those objects never change under their names, so a cached summary whose
trajectory still lists exactly them is exact; any other is computed again. Two processes may
rewrite the cache at once: the later wins, which only costs the other's work next time.

A trajectory's summary is its newest generation's plus the loose entries it does not hold:
one listing of each folder and a few reads, whatever the number of runs.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from askcache.storage.ledger.engine import LEDGER_FOLDER
from askcache.storage.ledger.records import RunRecord
from askcache.storage.ledger.summary import TrajectorySummary

__all__ = [
    "SEGMENTS_FOLDER",
    "STAMP_FORMAT",
    "SUMMARIES_FOLDER",
    "SUMMARY_CACHE_NAME",
    "CachedSummary",
    "Claim",
    "Generation",
    "Segment",
    "SegmentRow",
    "SummaryCache",
    "TrajectoryObjects",
    "claim_name",
    "group_listing",
    "loose_folder",
    "parse_object",
    "segment_name",
    "stem_at",
    "stem_of",
    "summary_name",
]

SEGMENTS_FOLDER = ".ledger-segments"
"""Folder of the segments (entries folded by a compaction)."""

SUMMARIES_FOLDER = ".ledger-summaries"
"""Folder of the generations (summaries)."""

logger = logging.getLogger(__name__)

STAMP_FORMAT = "%Y%m%dT%H%M%S.%fZ"
"""The UTC time at the start of an entry's name (as the folder engine writes it)."""

SUMMARY_CACHE_NAME = ".ledger-cache/summaries.json"
"""The cache of every trajectory's summary (:class:`SummaryCache`)."""

_SUMMARY = re.compile(r"^summary-(\d{8})\.json$")
_CLAIM = re.compile(r"^claim-(\d{8})-(\d+)\.json$")


class SegmentRow(BaseModel):
    """One kept segment, as a :class:`Generation` lists it."""

    model_config = ConfigDict(extra="ignore", use_attribute_docstrings=True)

    generation: int
    """The compaction that wrote it."""
    segment: str
    """Its storage name."""
    first: str
    """The smallest entry stem (``<UTC time>-<id>``) it holds."""
    last: str
    """The largest entry stem it holds."""
    entries: int
    """How many entries it holds."""

    def covers(self, stem: str) -> bool:
        """True when an entry named ``stem`` may be in this segment."""
        return self.first <= stem <= self.last


class Generation(BaseModel):
    """``summary-<generation>.json``: what every compaction of a trajectory so far adds up to."""

    model_config = ConfigDict(extra="ignore", use_attribute_docstrings=True)

    generation: int = Field(ge=1)
    """1 for the first compaction, then one more each time."""
    summary: TrajectorySummary
    """Every entry folded by this generation and the ones before it."""
    folded: list[str]
    """The stems of the entries this generation folded (their loose objects are deleted after
    it is written; a reader ignores the ones still there)."""
    segments: list[SegmentRow]
    """The segments kept (raw entries within the retention period), oldest first."""
    created_at: datetime
    """When it was written (UTC, the writer's clock)."""
    merged: SegmentRow | None = None
    """When this generation's segment took in the entries of the segment before it (so that
    the table stays short): that segment's range, under this generation's segment's name. A
    loose entry outside it and not in :attr:`folded` is not in this generation's segment."""
    retired: list[str] = Field(default_factory=list)
    """Segments an older generation may still list and this one does not (merged into a newer
    segment, dropped or rewritten by the retention): deleted with the generations that list
    them, after a grace period (:mod:`askcache.storage.ledger.segment_grace`)."""


class Segment(BaseModel):
    """``segment-<generation>-<random>.json``: the entries one compaction folded, in order."""

    model_config = ConfigDict(extra="ignore", use_attribute_docstrings=True)

    generation: int
    """The compaction that wrote it."""
    entries: dict[str, RunRecord]
    """The entries by stem, in the order they were folded."""


class Claim(BaseModel):
    """``claim-<generation>-<attempt>.json``: a process is compacting a trajectory into that
    generation (see :mod:`askcache.storage.ledger.segment_claims`)."""

    model_config = ConfigDict(extra="ignore", use_attribute_docstrings=True)

    created_at: datetime
    """When the compaction claimed it (UTC, the claimant's clock)."""


def stem_of(name: str) -> str:
    """An entry's stem (``<UTC time>-<id>``) from its storage name."""
    return name.rsplit("/", 1)[-1].removesuffix(".json")


@dataclass
class TrajectoryObjects:
    """What a listing found for one trajectory."""

    trajectory: str
    loose: dict[str, str] = field(default_factory=dict)
    """Loose entries: stem -> storage name."""
    generations: dict[int, str] = field(default_factory=dict)
    """Generations: number -> storage name."""
    claims: dict[int, dict[int, str]] = field(default_factory=dict)
    """Claims: generation -> attempt -> storage name."""

    @property
    def latest(self) -> str | None:
        """The storage name of the newest generation (``None``: never compacted)."""
        return self.generations[max(self.generations)] if self.generations else None

    @property
    def latest_number(self) -> int | None:
        """The newest generation's number (``None``: never compacted)."""
        return max(self.generations) if self.generations else None


class CachedSummary(BaseModel):
    """One trajectory's summary and the objects it was computed from."""

    model_config = ConfigDict(extra="ignore", use_attribute_docstrings=True)

    generation: int | None
    """The newest generation's number then."""
    loose: list[str]
    """The stems of every loose entry listed then, sorted."""
    summary: TrajectorySummary | None
    """The summary computed from them."""

    def matches(self, objects: TrajectoryObjects) -> bool:
        """True when ``objects`` are exactly the ones the summary was computed from."""
        return self.generation == objects.latest_number and self.loose == sorted(objects.loose)


class SummaryCache(BaseModel):
    """``.ledger-cache/summaries.json`` (see the module docstring)."""

    model_config = ConfigDict(extra="ignore", use_attribute_docstrings=True)

    summaries: dict[str, CachedSummary] = Field(default_factory=dict)
    """By trajectory."""


def group_listing(
    loose_names: Iterable[str], summary_names: Iterable[str]
) -> dict[str, TrajectoryObjects]:
    """Listings of ``.ledger/`` and ``.ledger-summaries/`` grouped by trajectory (other
    objects, such as a foreign file, are left out)."""
    found: dict[str, TrajectoryObjects] = {}
    for name in loose_names:
        folder, _, file = name.rpartition("/")
        if not file.endswith(".json") or not folder.startswith(LEDGER_FOLDER + "/"):
            continue
        trajectory = folder.removeprefix(LEDGER_FOLDER + "/")
        objects = found.setdefault(trajectory, TrajectoryObjects(trajectory))
        objects.loose[stem_of(name)] = name
    for name in summary_names:
        folder, _, file = name.rpartition("/")
        match = _SUMMARY.match(file)
        claim = _CLAIM.match(file)
        if (match is None and claim is None) or not folder.startswith(SUMMARIES_FOLDER + "/"):
            continue
        trajectory = folder.removeprefix(SUMMARIES_FOLDER + "/")
        objects = found.setdefault(trajectory, TrajectoryObjects(trajectory))
        if match is not None:
            objects.generations[int(match.group(1))] = name
        elif claim is not None:
            attempts = objects.claims.setdefault(int(claim.group(1)), {})
            attempts[int(claim.group(2))] = name
    return found


def loose_folder(trajectory: str) -> str:
    """The folder of a trajectory's loose entries."""
    return f"{LEDGER_FOLDER}/{trajectory}"


def summary_name(trajectory: str, generation: int) -> str:
    """The storage name of a trajectory's generation."""
    return f"{SUMMARIES_FOLDER}/{trajectory}/summary-{generation:08d}.json"


def claim_name(trajectory: str, generation: int, attempt: int) -> str:
    """The storage name of a claim on a trajectory's next generation."""
    return f"{SUMMARIES_FOLDER}/{trajectory}/claim-{generation:08d}-{attempt:03d}.json"


def segment_name(trajectory: str, generation: int, unique: str) -> str:
    """A new storage name for a segment of a trajectory."""
    return f"{SEGMENTS_FOLDER}/{trajectory}/segment-{generation:08d}-{unique}.json"


def stem_at(when: datetime) -> str:
    """The smallest entry stem of an entry started at ``when``."""
    return when.astimezone(UTC).strftime(STAMP_FORMAT)


_M = TypeVar("_M", "Generation", "Segment", RunRecord, "SummaryCache", "Claim")


def parse_object(model: type[_M], name: str, data: bytes) -> _M | None:
    """``data`` (the object ``name``) as ``model``; ``None``, with a warning naming it, when
    it is not one."""
    try:
        return model.model_validate_json(data)
    except (ValidationError, ValueError) as exc:
        logger.warning("skipping unreadable ledger entry %s: %s", name, exc)
        return None
