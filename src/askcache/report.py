"""An HTML report of replays: per validated step, the recorded and the current region.

The cache file stores only hashes, so the recorded regions come from the recording's own
message history (its screenshots), and the current ones from the executor, which keeps the
region it checked for each step (:attr:`askcache.replay.CacheExecutor.regions`).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image

from askcache.actions import action_anchors
from askcache.cache_file import CacheFile
from askcache.messages import MessageParam
from askcache.recording import steps_with_screens
from askcache.redaction import redact
from askcache.replay import ReplayResult
from askcache.tools.computer import encode_png
from askcache.visual import decode_screenshot, region_box

__all__ = ["ReplaySection", "recorded_regions", "write_html_report"]


def recorded_regions(
    messages: Sequence[MessageParam], cache_file: CacheFile
) -> dict[int, Image.Image]:
    """Per validated step of ``cache_file``, its region in the recording's screenshots."""
    config = cache_file.metadata.visual_validation
    if config is None:
        return {}
    pairs = steps_with_screens(messages)
    regions: dict[int, Image.Image] = {}
    anchors = action_anchors(call for call, _ in pairs)
    for index, ((_, screen), anchor) in enumerate(zip(pairs, anchors, strict=True)):
        if index >= len(cache_file.trajectory):
            break
        if screen is None or cache_file.trajectory[index].visual_representation is None:
            continue
        image = decode_screenshot(screen.source.data, f"the screenshot before step {index}")
        box = region_box(image.size, anchor, config.region_size)
        if box is not None:
            regions[index] = image.crop(box)
    return regions


@dataclass
class ReplaySection:
    """One replay in the report."""

    title: str
    """Heading."""
    result: ReplayResult
    """What the replay did."""
    regions: dict[int, Image.Image] = field(default_factory=dict)
    """Current region per checked step."""


def _img(image: Image.Image | None) -> str:
    if image is None:
        return "<em>none</em>"
    return f'<img alt="region" src="data:image/png;base64,{encode_png(image)}">'


def write_html_report(
    path: Path,
    *,
    title: str,
    recorded: dict[int, Image.Image],
    sections: Sequence[ReplaySection],
    summary: str = "",
) -> Path:
    """Write a self-contained HTML file (images inline) and return its path."""
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title>",
        "<style>body{font-family:sans-serif;margin:2em}td,th{border:1px solid #ccc;"
        "padding:6px;vertical-align:middle}table{border-collapse:collapse;margin-bottom:2em}"
        "img{width:160px;image-rendering:pixelated;border:1px solid #888}"
        ".bad{background:#fde2e1}.ok{background:#e6f4ea}pre{background:#f6f6f6;padding:1em}"
        "</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    if summary:
        parts.append(f"<pre>{html.escape(summary)}</pre>")
    for section in sections:
        result = section.result
        parts.append(f"<h2>{html.escape(section.title)}</h2>")
        parts.append(
            f"<p>{html.escape(result.status)}: {result.steps_run} steps run, "
            f"{result.validated} validated, {result.unvalidated} unvalidated"
            + (
                f"; stopped at step {result.stopped_at_step}: "
                f"{html.escape(redact(result.reason or ''))}"
                if result.stopped_at_step is not None
                else ""
            )
            + "</p>"
        )
        parts.append(
            "<table><tr><th>step</th><th>action</th><th>check</th>"
            "<th>recorded region</th><th>current region</th></tr>"
        )
        for step in result.steps:
            css = (
                "" if step.matched is None else (" class='ok'" if step.matched else " class='bad'")
            )
            check = step.check_summary()
            parts.append(
                f"<tr{css}><td>{step.step_index}</td><td>{html.escape(step.action)}</td>"
                f"<td>{html.escape(check)}</td><td>{_img(recorded.get(step.step_index))}</td>"
                f"<td>{_img(section.regions.get(step.step_index))}</td></tr>"
            )
        parts.append("</table>")
    parts.append("</body></html>")
    path.write_text(redact("\n".join(parts)), encoding="utf-8")  # secrets never written
    return path
