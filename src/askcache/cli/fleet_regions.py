"""The fleet page's failing regions: per hand-back hot spot, the region as recorded and as
the latest hand-back there saw it, side by side (``CachingSettings.ledger_thumbnails``;
:mod:`askcache.storage.ledger.spot_images`).

:func:`hot_spot_regions` reads the thumbnails of the page's hot spots only (one lookup each,
never an entry or a summary); :func:`regions_section` writes the page's section, the images
inline as ``data:`` URIs (nothing fetched). A picture that was not kept says why; one that
cannot be decoded (damaged, truncated, not an image) is shown as not kept, with the error
naming its ledger entry, and never breaks the page. Once the page has loaded, the section
says on itself how many of its images the browser decoded (``data-regions-decoded``, of
``data-regions``), for tests.
"""

from __future__ import annotations

import base64
import html
import io
import logging
from collections.abc import Mapping, Sequence

from askcache.cli.fleet_figures import HotSpot
from askcache.foundation.errors import AskCacheError, ThumbnailError
from askcache.storage.ledger import RunLedger
from askcache.storage.ledger.day_totals import spot_key
from askcache.storage.ledger.spot_images import SpotImages, SpotKey, decode_thumbnail

__all__ = ["REGIONS_SCRIPT", "hot_spot_key", "hot_spot_regions", "regions_section"]

logger = logging.getLogger(__name__)

NOT_KEPT = "not kept"
"""What the page says where a picture is absent."""

REGIONS_SCRIPT = """window.addEventListener('load', function () {
  var section = document.getElementById('regions');
  if (!section) { return; }
  var images = section.querySelectorAll('img');
  var decoded = 0;
  images.forEach(function (image) { if (image.complete && image.naturalWidth > 0) { decoded++; } });
  section.setAttribute('data-regions', String(images.length));
  section.setAttribute('data-regions-decoded', String(decoded));
});"""
"""Counts the section's images the browser decoded, once the page has loaded."""


def hot_spot_key(spot: HotSpot) -> SpotKey:
    """The ledger's key of a hot spot's thumbnails."""
    code = spot.reason_code
    return spot.trajectory, spot_key(spot.step, code, spot.profile)  # type: ignore[arg-type]


def hot_spot_regions(ledger: RunLedger, spots: Sequence[HotSpot]) -> dict[SpotKey, SpotImages]:
    """The thumbnails kept for ``spots`` (only theirs); none, with a warning, when the
    ledger cannot give them (the page is written without them)."""
    try:
        return ledger.spot_images([hot_spot_key(spot) for spot in spots])
    except (AskCacheError, OSError) as exc:
        logger.warning("the failing regions could not be read: %s", exc)
        return {}


def regions_section(spots: Sequence[HotSpot], images: Mapping[SpotKey, SpotImages]) -> str:
    """The section's HTML: one row per hot spot, the recorded and the latest failing region."""
    rows = []
    for spot in spots:
        kept = images.get(hot_spot_key(spot))
        recorded = _picture(kept, "recorded")
        latest = _picture(kept, "latest")
        entry = kept.entry_id if kept is not None else ""
        rows.append(
            "<tr>"
            f"<td>{_e(spot.trajectory)}</td><td>{_e('?' if spot.step is None else str(spot.step))}"
            f"</td><td>{_e(spot.reason_code or '(none)')}</td>"
            f"<td>{_e(spot.profile or '(unknown)')}</td>"
            f"<td class='region'>{recorded}</td><td class='region'>{latest}</td>"
            f"<td>{_e(entry)}</td></tr>"
        )
    if not rows:
        rows = ["<tr><td colspan='7' class='empty'>no hand-backs</td></tr>"]
    hint = ""
    if spots and not any(hot_spot_key(s) in images for s in spots):
        hint = (
            "<p class='where'>No failing region is kept for these hot spots: replays keep "
            "them with <code>CachingSettings(ledger_thumbnails=True)</code> "
            "(docs/ledger.md).</p>"
        )
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "trajectory",
            "step",
            "reason code",
            "screen profile",
            "as recorded",
            "at the latest hand-back",
            "ledger entry",
        )
    )
    return (
        "<section id='regions'><h2>Failing regions of the hot spots</h2>"
        f"{hint}<table class='regions'><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></section>"
        "<style>table.regions td.region img{image-rendering:pixelated;width:96px;"
        "height:auto;border:1px solid #ccc;display:block}"
        "table.regions td.region small{color:#666}</style>"
        f"<script>{REGIONS_SCRIPT}</script>"
    )


def _picture(kept: SpotImages | None, which: str) -> str:
    """One picture as an inline ``<img>``, or why there is none."""
    if kept is None:
        return f"<span class='missing'>{NOT_KEPT}</span>"
    data = kept.recorded if which == "recorded" else kept.latest
    note = kept.recorded_note if which == "recorded" else kept.latest_note
    if data is None:
        return f"<span class='missing'>{_e(note or NOT_KEPT)}</span>"
    try:
        image = decode_thumbnail(data, entry=kept.entry_id, which=which)
    except ThumbnailError as exc:
        logger.warning("%s", exc)
        return f"<span class='missing'>{NOT_KEPT}: {_e(str(exc))}</span>"
    out = io.BytesIO()
    image.save(out, format="PNG")  # written again: what the browser decodes is what was read
    uri = "data:image/png;base64," + base64.b64encode(out.getvalue()).decode("ascii")
    caption = f"<br><small>{_e(note)}</small>" if note and which == "recorded" else ""
    alt = f"the failing region {which}, entry {kept.entry_id}"
    return f"<img alt='{_e(alt)}' src='{uri}'>{caption}"


def _e(text: str) -> str:
    return html.escape(text, quote=True)
