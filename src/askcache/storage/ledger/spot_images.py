"""Failing regions' thumbnails kept beside the run ledger: :class:`SpotImages`, the latest
of each hand-back hot spot.

With ``CachingSettings.ledger_thumbnails`` on, a replay that handed back because a step's
pixel or area check failed keeps two small PNG images of the step's checked region, as
recorded and as it was when the replay handed back (:mod:`askcache.agent.failure_regions`
makes them, and leaves out any that could show a secret). They are kept apart from the entries
and the summaries, one row or object per hot spot (a trajectory and its
:func:`~askcache.storage.ledger.day_totals.spot_key`: step, reason code, screen profile),
which a later hand-back at the same spot replaces, naming its entry. So reading summaries or
entries never reads an image, and the images take room in proportion to the hot spots, never
to the runs; the fleet page reads only those of the hot spots it lists
(:meth:`~askcache.storage.ledger.engine.RunLedger.spot_images`).

The SQL engines keep them in a table of their own (created on the first write); the folder
and S3 engines as one object per hot spot under :data:`SPOT_IMAGES_FOLDER` (:func:`put_object`,
:func:`read_objects`).
"""

from __future__ import annotations

import hashlib
import io
import logging
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, ValidationError

from askcache.foundation.errors import AskCacheError, ThumbnailError
from askcache.storage.cache_storage import CacheStorage

if TYPE_CHECKING:  # Pillow is imported where an image is made or read: the ledger starts lean
    from PIL import Image

__all__ = [
    "MAX_THUMBNAIL_BYTES",
    "SPOT_IMAGES_FOLDER",
    "THUMBNAIL_SIDE",
    "SpotImages",
    "SpotKey",
    "decode_thumbnail",
    "png_of",
    "put_object",
    "read_objects",
    "spot_object_name",
]

logger = logging.getLogger(__name__)

THUMBNAIL_SIDE = 96
"""A thumbnail's longer side at most, in pixels (the region is scaled down to it, never up)."""

MAX_THUMBNAIL_BYTES = 64 * 1024
"""A thumbnail larger than this is refused, written or read (a 96 px PNG is a few KiB)."""

SPOT_IMAGES_FOLDER = ".ledger-images"
"""Where the folder and S3 engines keep them: ``<folder>/<trajectory>/<spot hash>.spot``."""

SpotKey = tuple[str, str]
"""A hot spot: (trajectory, :func:`~askcache.storage.ledger.day_totals.spot_key`)."""


class SpotImages(BaseModel):
    """The failing region of a hot spot's latest hand-back, as recorded and as it was then."""

    model_config = ConfigDict(
        use_attribute_docstrings=True,
        extra="ignore",
        ser_json_bytes="base64",
        val_json_bytes="base64",
    )

    trajectory: str
    """The cache file."""
    spot: str
    """The hot spot: ``step|code|profile``
    (:func:`~askcache.storage.ledger.day_totals.spot_key`)."""
    entry_id: str
    """The ledger entry of the hand-back the images are of."""
    at: datetime
    """When that replay started (a later one replaces these)."""
    recorded: bytes | None = None
    """The region as recorded (PNG); ``None``: not kept (:attr:`recorded_note` says why)."""
    latest: bytes | None = None
    """The region when the replay handed back (PNG); ``None``: not kept."""
    recorded_note: str | None = None
    """Why :attr:`recorded` is not kept, or what it shows."""
    latest_note: str | None = None
    """Why :attr:`latest` is not kept."""

    @property
    def key(self) -> SpotKey:
        """(trajectory, spot)."""
        return self.trajectory, self.spot


def png_of(image: Image.Image) -> bytes:
    """``image`` as a thumbnail: scaled down to at most :data:`THUMBNAIL_SIDE` pixels a side
    (keeping its proportions), as PNG."""
    from PIL import Image

    small = image.convert("RGB")
    small.thumbnail((THUMBNAIL_SIDE, THUMBNAIL_SIDE), Image.Resampling.LANCZOS)
    out = io.BytesIO()
    small.save(out, format="PNG", optimize=True)
    return out.getvalue()


def decode_thumbnail(data: bytes, *, entry: str, which: str) -> Image.Image:
    """The thumbnail ``data``, decoded whole.

    Raises:
        ThumbnailError: it is not a PNG image, is truncated, or is larger than askcache
            writes (the message names ``entry`` and ``which``).
    """
    from PIL import Image, UnidentifiedImageError

    if len(data) > MAX_THUMBNAIL_BYTES:
        raise ThumbnailError(entry, which, f"{len(data)} bytes, more than {MAX_THUMBNAIL_BYTES}")
    try:
        with Image.open(io.BytesIO(data)) as opened:
            if opened.format != "PNG":
                raise ThumbnailError(entry, which, f"not a PNG image ({opened.format})")
            if max(opened.size) > THUMBNAIL_SIDE:
                raise ThumbnailError(
                    entry, which, f"{opened.width}x{opened.height}, over {THUMBNAIL_SIDE} px"
                )
            opened.load()
            return opened.copy()
    except UnidentifiedImageError as exc:
        raise ThumbnailError(entry, which, "not an image") from exc
    except (OSError, SyntaxError, ValueError) as exc:
        if isinstance(exc, ThumbnailError):
            raise
        raise ThumbnailError(entry, which, f"not a readable PNG image ({exc})") from exc


def spot_object_name(trajectory: str, spot: str) -> str:
    """The object keeping a hot spot's images (the spot key hashed: it names a profile)."""
    digest = hashlib.sha256(spot.encode("utf-8")).hexdigest()[:16]
    return f"{SPOT_IMAGES_FOLDER}/{trajectory}/{digest}.spot"


def put_object(storage: CacheStorage, images: SpotImages) -> None:
    """Keep ``images`` as their hot spot's object, replacing the one there unless it is of a
    replay that started later (one read, one write: two machines writing the same spot at
    the same moment keep either's)."""
    kept = read_objects(storage, [images.key]).get(images.key)
    if kept is not None and kept.at > images.at:
        return
    storage.write(
        spot_object_name(images.trajectory, images.spot),
        images.model_dump_json().encode("utf-8"),
    )


def read_objects(storage: CacheStorage, keys: Iterable[SpotKey]) -> dict[SpotKey, SpotImages]:
    """The images kept for each hot spot of ``keys`` (one read each, concurrent where the
    storage can); a spot without images is left out, and so, with a warning naming it, is
    an object that cannot be read."""
    names = {spot_object_name(trajectory, spot): (trajectory, spot) for trajectory, spot in keys}
    found: dict[SpotKey, SpotImages] = {}
    for name, data in storage.read_many(names).items():
        try:
            images = SpotImages.model_validate_json(data)
        except (ValidationError, ValueError, AskCacheError) as exc:
            logger.warning("skipping unreadable failing-region images %s: %s", name, exc)
            continue
        if images.key == names[name]:
            found[images.key] = images
    return found
