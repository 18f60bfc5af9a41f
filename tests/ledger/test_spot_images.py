"""Failing-region thumbnails beside the run ledger, on every engine alike
(tests/ledger/engines.py): the latest per hot spot, apart from entries and summaries."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta

import pytest
from PIL import Image

from askcache.foundation.errors import ThumbnailError
from askcache.storage.ledger import RunLedger, RunRecord
from askcache.storage.ledger.day_totals import spot_key
from askcache.storage.ledger.spot_images import (
    THUMBNAIL_SIDE,
    SpotImages,
    decode_thumbnail,
    png_of,
)

NOW = datetime.now(UTC).replace(microsecond=0)


def _png(colour: str, size: tuple[int, int] = (120, 100)) -> bytes:
    return png_of(Image.new("RGB", size, colour))


def _images(entry: str, minutes: float, colour: str, spot: str | None = None) -> SpotImages:
    return SpotImages(
        trajectory="login.json",
        spot=spot or spot_key(3, "screen_changed", "1280x800@1x"),
        entry_id=entry,
        at=NOW + timedelta(minutes=minutes),
        recorded=_png("white"),
        latest=_png(colour),
        recorded_note="recorded: the step's effect tiles",
    )


def _colour(images: SpotImages) -> tuple[int, ...]:
    assert images.latest is not None
    image = decode_thumbnail(images.latest, entry=images.entry_id, which="latest")
    return tuple(image.convert("RGB").getpixel((0, 0)))  # type: ignore[arg-type]


def test_the_latest_hand_back_of_a_spot_replaces_its_images_and_an_older_one_does_not(
    ledger: RunLedger,
) -> None:
    first = _images("e1", 0, "red")
    ledger.put_spot_images(first)
    ledger.put_spot_images(_images("e2", 5, "blue"))
    ledger.put_spot_images(_images("e0", -5, "green"))  # sent late from somewhere
    other = _images("e3", 1, "yellow", spot=spot_key(4, "area_changed", None))
    ledger.put_spot_images(other)
    found = ledger.spot_images([first.key, other.key, ("login.json", "9||")])
    assert set(found) == {first.key, other.key}
    kept = found[first.key]
    assert kept.entry_id == "e2"
    assert _colour(kept) == (0, 0, 255)
    assert kept.recorded_note == "recorded: the step's effect tiles"
    assert found[other.key].entry_id == "e3"
    assert _colour(found[other.key]) == (255, 255, 0)


def test_images_are_kept_apart_from_entries_and_summaries(ledger: RunLedger) -> None:
    record = RunRecord(
        trajectory="login.json",
        status="handed_back",
        stopped_at_step=3,
        reason_code="screen_changed",
        profile="1280x800@1x",
        started_at=NOW,
    )
    ledger.append(record, entry_id="e1")
    before = ledger.summary("login.json")
    images = _images("e1", 0, "red")
    ledger.put_spot_images(images)
    after = ledger.summary("login.json")
    assert before is not None
    assert after is not None
    assert after.model_dump() == before.model_dump()
    assert [s.trajectory for s in ledger.summaries()] == ["login.json"]
    assert len(ledger.records("login.json")) == 1
    assert images.latest is not None
    encoded = base64.b64encode(images.latest).decode()
    assert encoded not in after.model_dump_json()
    assert encoded not in "".join(r.model_dump_json() for r in ledger.records())


def test_a_ledger_without_images_has_none(ledger: RunLedger) -> None:
    assert ledger.spot_images([]) == {}
    assert ledger.spot_images([("login.json", spot_key(1, "screen_changed", None))]) == {}


def test_thumbnails_are_bounded_and_a_bad_one_names_its_entry() -> None:
    big = Image.new("RGB", (400, 100), "red")
    decoded = decode_thumbnail(png_of(big), entry="e1", which="latest")
    assert decoded.size == (THUMBNAIL_SIDE, 24)
    with pytest.raises(ThumbnailError, match=r"ledger entry e7 is unreadable: not an image"):
        decode_thumbnail(b"not an image at all", entry="e7", which="latest")
    truncated = _png("red")[:40]
    with pytest.raises(ThumbnailError, match="recorded thumbnail kept beside ledger entry e8"):
        decode_thumbnail(truncated, entry="e8", which="recorded")
