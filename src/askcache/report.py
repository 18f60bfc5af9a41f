"""An HTML report of replays: per checked step, the recorded and the current region.

The cache file stores only hashes and thumbnails, so the recorded regions come from the
recording's own message history (its screenshots), and the current ones from the executor,
which keeps what it checked each step on (:attr:`askcache.replay.CacheExecutor.views`).
Each region shows the action point; beside it, the whole screen with the region boxed.
Each replay's section also says how it ended (the end-state verdict), what the model did
after taking over, and what the replay saved.
"""

from __future__ import annotations

import contextlib
import html
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image, ImageDraw

from askcache.actions import action_anchors, parse_action
from askcache.cache_file import CacheFile
from askcache.ledger import RunRecord
from askcache.messages import MessageParam, TextBlockParam
from askcache.recording import steps_with_screens
from askcache.redaction import redact
from askcache.replay import ReplayResult
from askcache.step_view import StepView
from askcache.tools.computer import encode_png
from askcache.visual import decode_screenshot, region_box

__all__ = [
    "MARK_COLOUR",
    "Figure",
    "ReplaySection",
    "StepRow",
    "mark_point",
    "model_actions",
    "recorded_regions",
    "recorded_views",
    "savings_text",
    "steps_table",
    "view_figures",
    "write_html_report",
    "write_page",
]

MARK_COLOUR = (230, 30, 30)
"""The colour of action points and region boxes in reports."""


def recorded_views(messages: Sequence[MessageParam], cache_file: CacheFile) -> dict[int, StepView]:
    """Per validated step of ``cache_file``, what it looked like in the recording."""
    config = cache_file.metadata.visual_validation
    if config is None:
        return {}
    recorded = steps_with_screens(messages)
    views: dict[int, StepView] = {}
    anchors = action_anchors(step.call for step in recorded)
    for index, (step, anchor) in enumerate(zip(recorded, anchors, strict=True)):
        screen = step.before
        if index >= len(cache_file.trajectory):
            break
        if screen is None or cache_file.trajectory[index].visual_representation is None:
            continue
        image = decode_screenshot(screen.source.data, f"the screenshot before step {index}")
        box = region_box(image.size, anchor, config.region_size)
        if box is not None:
            views[index] = StepView.of(image, box, anchor)
    return views


def recorded_regions(
    messages: Sequence[MessageParam], cache_file: CacheFile
) -> dict[int, Image.Image]:
    """Per validated step of ``cache_file``, its region in the recording's screenshots."""
    return {index: view.region for index, view in recorded_views(messages, cache_file).items()}


def model_actions(messages: Sequence[MessageParam]) -> list[str]:
    """What the model did in ``messages``: its tool calls and its last words, one line each
    (the replay's own calls carry no usage and are left out)."""
    lines: list[str] = []
    for message in messages:
        if message.role != "assistant" or message.usage is None:
            continue
        for call in message.tool_uses:
            action = parse_action(call)
            if action is None:
                lines.append(f"{call.name} {call.input}")
                continue
            arguments = {k: v for k, v in call.input.items() if k != "action"}
            lines.append(f"{action.name} {arguments}" if arguments else action.name)
        if not message.tool_uses:
            text = " ".join(b.text for b in message.blocks if isinstance(b, TextBlockParam))
            lines.append(f"answered: {text}")
    return lines


def savings_text(record: RunRecord) -> str:
    """What one replay saved (or cost beyond the recording), from its ledger entry."""
    seconds = "" if record.saved_seconds is None else f", {abs(record.saved_seconds):.1f} s"
    verb = "saved" if record.saved_model_calls >= 0 else "cost"
    calls, tokens = abs(record.saved_model_calls), abs(record.saved_tokens)
    return (
        f"{verb} an estimated {calls} model calls, {tokens:,} tokens{seconds} (the "
        f"recording's cost for the {record.steps_run} step"
        f"{'' if record.steps_run == 1 else 's'} replayed, against the "
        f"{record.model_calls} model calls this run made)"
    )


@dataclass
class ReplaySection:
    """One replay in the report."""

    title: str
    """Heading."""
    result: ReplayResult
    """What the replay did."""
    regions: dict[int, Image.Image] = field(default_factory=dict)
    """Current region per checked step (used when ``views`` has none for the step)."""
    views: dict[int, StepView] = field(default_factory=dict)
    """What each checked step was checked on (:attr:`CacheExecutor.views`)."""
    model_steps: list[str] = field(default_factory=list)
    """What the model did after taking over (:func:`model_actions`)."""
    saved: str | None = None
    """What the replay saved (:func:`savings_text`)."""


@dataclass(frozen=True)
class Figure:
    """One picture in a report's table cell."""

    image: Image.Image
    """The picture (inlined as a PNG)."""
    alt: str
    """What it shows, for people and tests (the ``alt`` text)."""
    css: str = "region"
    """Its class: ``region`` (shown 120 px wide), ``screen`` (200 px), ``effect``, ``end``."""


@dataclass
class StepRow:
    """One step in a report's steps table: how it was checked, what it looked like when
    recorded and what it looks like now."""

    step_index: int
    """Index in the trajectory."""
    action: str
    """The action (``left_click``), perhaps with its arguments."""
    check: str
    """How it was (or would be) checked, in words."""
    matched: bool | None = None
    """True: the check passed (green row); False: it failed (red row); None: not checked."""
    recorded: list[Figure] = field(default_factory=list)
    """Pictures of the step as recorded."""
    current: list[Figure] = field(default_factory=list)
    """Pictures of the step as checked now."""
    recorded_note: str = ""
    """Words under the recorded pictures."""
    current_note: str = ""
    """Words under the current pictures."""


def view_figures(view: StepView) -> list[Figure]:
    """A checked step's pictures: the region with a cross at the action point, and the small
    whole screen with the region boxed."""
    return [
        Figure(_marked(view), "region with the action point"),
        Figure(_boxed(view), "whole screen with the region boxed", "screen"),
    ]


def _figures(item: StepView | Image.Image | None) -> list[Figure]:
    if item is None:
        return []
    if isinstance(item, StepView):
        return view_figures(item)
    return [Figure(item, "region")]


def _img(figure: Figure) -> str:
    return (
        f'<img class="{figure.css}" alt="{html.escape(figure.alt)}" '
        f'src="data:image/png;base64,{encode_png(figure.image)}">'
    )


def _marked(view: StepView) -> Image.Image:
    """The region with a cross at the action point."""
    image = view.region.convert("RGB")
    if view.point is not None:
        mark_point(image, view.point)
    return image


def mark_point(image: Image.Image, point: tuple[int, int], size: int = 8) -> None:
    """Draw the report's red cross at ``point`` on ``image`` (RGB), in place."""
    x, y = point
    draw = ImageDraw.Draw(image)
    draw.line((x - size, y, x + size, y), fill=MARK_COLOUR, width=2)
    draw.line((x, y - size, x, y + size), fill=MARK_COLOUR, width=2)


def _boxed(view: StepView) -> Image.Image:
    """The small full screen with the region's box."""
    image = view.screen.convert("RGB")
    left, top, right, bottom = (round(v * view.scale) for v in view.box)
    ImageDraw.Draw(image).rectangle((left, top, right, bottom), outline=MARK_COLOUR, width=2)
    return image


def _cell(figures: Sequence[Figure], note: str = "") -> str:
    if not figures and not note:
        return "<td><em>none</em></td>"
    text = f"<div class='note'>{html.escape(note)}</div>" if note else ""
    return f"<td>{''.join(_img(figure) for figure in figures)}{text}</td>"


_STYLE = (
    "body{font-family:sans-serif;margin:2em;max-width:1200px}"
    "td,th{border:1px solid #ccc;padding:6px;vertical-align:middle;overflow-wrap:anywhere}"
    "table{border-collapse:collapse;margin-bottom:1em;table-layout:fixed;width:100%}"
    "img.region{width:120px;image-rendering:pixelated;border:1px solid #888;margin-right:6px}"
    "img.screen{width:200px;border:1px solid #888}"
    "img.effect{max-width:100%;image-rendering:pixelated;border:1px solid #888}"
    "img.end{max-width:100%;image-rendering:pixelated;border:1px solid #888}"
    ".bad{background:#fde2e1}.ok{background:#e6f4ea}.warn{background:#fff4d6}"
    "pre{background:#f6f6f6;padding:1em;white-space:pre-wrap;overflow-wrap:anywhere}"
    "p,li,.note{overflow-wrap:anywhere}.note{font-size:90%;color:#444}"
)


def steps_table(
    rows: Sequence[StepRow], headings: tuple[str, str] = ("recorded", "current")
) -> list[str]:
    """The steps table's HTML: step, action, check, the recorded and the current pictures."""
    parts = [
        "<table class='steps'><tr><th style='width:4em'>step</th>"
        "<th style='width:8em'>action</th><th>check</th>"
        f"<th>{html.escape(headings[0])}</th><th>{html.escape(headings[1])}</th></tr>"
    ]
    for row in rows:
        css = "" if row.matched is None else (" class='ok'" if row.matched else " class='bad'")
        parts.append(
            f"<tr{css}><td>{row.step_index}</td><td>{html.escape(row.action)}</td>"
            f"<td>{html.escape(row.check)}</td>{_cell(row.recorded, row.recorded_note)}"
            f"{_cell(row.current, row.current_note)}</tr>"
        )
    parts.append("</table>")
    return parts


def write_page(path: Path, title: str, body: Sequence[str]) -> Path:
    """Write a self-contained HTML page (images inline) with the report's style.

    Registered secret values are redacted from it. It is written to a temporary file beside
    ``path`` and renamed, so ``path`` is never half-written.
    """
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        *body,
        "</body></html>",
    ]
    data = redact("\n".join(parts)).encode("utf-8")  # secrets never written
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    return path


def write_html_report(
    path: Path,
    *,
    title: str,
    recorded: dict[int, Image.Image] | dict[int, StepView],
    sections: Sequence[ReplaySection],
    summary: str = "",
) -> Path:
    """Write a self-contained HTML file (images inline) and return its path. ``recorded``
    holds the recording's views (:func:`recorded_views`) or plain regions."""
    body = [f"<pre>{html.escape(summary)}</pre>"] if summary else []
    for section in sections:
        body.extend(_section(section, recorded))
    return write_page(path, title, body)


def _section(
    section: ReplaySection, recorded: dict[int, Image.Image] | dict[int, StepView]
) -> list[str]:
    result = section.result
    parts = [f"<h2>{html.escape(section.title)}</h2>"]
    line = (
        f"<b>{html.escape(result.status)}</b>: {result.steps_run} steps run, "
        f"{result.validated} validated, {result.unvalidated} unvalidated"
    )
    if result.stopped_at_step is not None:
        line += f"; stopped at step {result.stopped_at_step}: {html.escape(result.reason or '')}"
    if result.rejoins:
        line += f"; took over again {result.rejoins} time(s) after the model fixed the screen"
    parts.append(f"<p class='status'>{line}</p>")
    if result.end_state is not None:
        css = "ok" if result.end_state.matched else "bad"
        parts.append(
            f"<p class='{css} end-state'>End state: {html.escape(result.end_state.describe())}</p>"
        )
    if section.saved:
        parts.append(f"<p class='saved'>{html.escape(section.saved)}</p>")
    rows = []
    for step in result.steps:
        check = step.check_summary()
        if step.effect is not None:
            check += f"; effect: {step.effect.replace('_', ' ')}"
        if step.seconds is not None:
            check += f"; {step.seconds:.2f} s"
        view = section.views.get(step.step_index)
        current = view if view is not None else section.regions.get(step.step_index)
        rows.append(
            StepRow(
                step.step_index,
                step.action,
                check,
                step.matched,
                recorded=_figures(recorded.get(step.step_index)),
                current=_figures(current),
            )
        )
    parts.extend(steps_table(rows))
    if section.model_steps:
        parts.append("<h3>What the model did after taking over</h3><ol class='model'>")
        parts.extend(f"<li>{html.escape(step)}</li>" for step in section.model_steps)
        parts.append("</ol>")
    return parts
