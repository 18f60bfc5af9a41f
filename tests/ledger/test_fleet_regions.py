"""The fleet page's failing regions: per hot spot, the recorded and the latest region side by
side, inline, decoded by Debian's headless Chromium offline; "not kept" where absent; a
damaged thumbnail shown as missing with its entry named, never breaking the page; the page's
figures still ``askcache stats --json``'s. On SQLite and on PostgreSQL."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageDraw

from askcache.storage.cache_storage import LocalCacheStorage
from askcache.storage.ledger import RunLedger, open_ledger
from askcache.storage.ledger.day_totals import spot_key
from askcache.storage.ledger.spot_images import SpotImages, png_of
from tests.ledger.test_fleet_page import (
    _body,
    _cache_with_a_proposal,
    _check_page,
    _dashboard,
    _fill,
    _load,
    _stats,
)

AT = datetime(2026, 11, 27, 12, tzinfo=UTC)


def _region(colour: str, text: str) -> bytes:
    image = Image.new("RGB", (100, 100), colour)
    ImageDraw.Draw(image).text((10, 40), text, fill="black")
    return png_of(image)


def _keep_regions(ledger: RunLedger) -> dict[str, Any]:
    """Thumbnails for the three biggest hot spots: both pictures, a damaged and a truncated
    one, and the latest alone (the recorded one not kept); the rest keep none."""
    spots = sorted(
        (
            (count, summary.trajectory, key)
            for summary in ledger.summaries()
            for key, count in summary.hand_backs.items()
        ),
        reverse=True,
    )
    (_, first, key1), (_, second, key2), (_, third, key3) = spots[:3]
    ledger.put_spot_images(
        SpotImages(
            trajectory=first,
            spot=key1,
            entry_id="e-good",
            at=AT,
            recorded=_region("white", "Save"),
            latest=_region("orange", "Update"),
            recorded_note="as the file keeps it",
        )
    )
    ledger.put_spot_images(
        SpotImages(
            trajectory=second,
            spot=key2,
            entry_id="e-damaged",
            at=AT,
            recorded=b"GIF89a not a png at all",
            latest=_region("white", "Save")[:60],  # truncated
        )
    )
    ledger.put_spot_images(
        SpotImages(
            trajectory=third,
            spot=key3,
            entry_id="e-latest-only",
            at=AT,
            latest=_region("yellow", "Login"),
            recorded_note="not kept: the trajectory file keeps hashes of this region, no pixels",
        )
    )
    return {"good": (first, key1), "damaged": (second, key2), "latest-only": (third, key3)}


def _section(dom: str) -> str:
    found = re.search(r"<section id=\"regions\"[^>]*>.*?</section>", dom, re.S)
    assert found is not None
    return found.group(0)


def _regions_attributes(dom: str) -> dict[str, str]:
    tag = re.search(r"<section ([^>]*id=\"regions\"[^>]*)>", dom)
    assert tag is not None
    return dict(re.findall(r'data-([a-z-]+)="([^"]*)"', tag.group(1)))


def _check_regions(page: Path) -> None:
    dom = _load(page)
    assert _body(dom)["charts"] == "2"  # the page is whole: its charts drew
    shown = _regions_attributes(dom)
    assert shown == {"regions": "3", "regions-decoded": "3"}  # both good ones, the latest alone
    section = _section(dom)
    assert section.count("data:image/png;base64,") == 3
    assert "e-good" in section
    assert "not kept: the recorded thumbnail kept beside ledger entry e-damaged" in section
    assert "not kept: the latest thumbnail kept beside ledger entry e-damaged" in section
    assert "not kept: the trajectory file keeps hashes of this region" in section
    assert section.count(">not kept</span>") >= 2  # hot spots with none kept, both columns


def test_the_hot_spots_failing_regions_show_side_by_side_in_chromium(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = _cache_with_a_proposal(tmp_path)
    with open_ledger(LocalCacheStorage(cache)) as ledger:
        _fill(ledger)
        _keep_regions(ledger)
    page = _dashboard(capsys, "--cache-dir", str(cache), "-o", str(tmp_path / "fleet.html"))
    _check_page(page, _stats(capsys, "--cache-dir", str(cache)))
    _check_regions(page)


def test_on_postgresql_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], postgres_url: str
) -> None:
    cache = _cache_with_a_proposal(tmp_path)
    from askcache.storage.ledger.postgres import PostgresLedger

    with PostgresLedger(postgres_url) as ledger:
        _fill(ledger)
        _keep_regions(ledger)
    where = ["--cache-dir", str(cache), "--ledger", postgres_url]
    page = _dashboard(capsys, *where, "-o", str(tmp_path / "fleet.html"))
    _check_page(page, _stats(capsys, *where))
    _check_regions(page)


def test_a_ledger_without_regions_says_how_to_keep_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = _cache_with_a_proposal(tmp_path)
    with open_ledger(LocalCacheStorage(cache)) as ledger:
        _fill(ledger)
    page = _dashboard(capsys, "--cache-dir", str(cache), "-o", str(tmp_path / "fleet.html"))
    text = page.read_text()
    assert "ledger_thumbnails=True" in text
    assert "data:image/png" not in text
    assert spot_key(1, None, None) == "1||"  # the key the page looks spots up by
