"""An HTML report of replays: per checked step, the recorded and the current region.

The cache file stores only hashes and thumbnails, so the recorded regions come from the
recording's own message history (its screenshots), and the current ones from the executor,
which keeps what it checked each step on (:attr:`askcache.replay.CacheExecutor.views`).
Each region shows the action point; beside it, the whole screen with the region boxed.
Each replay's section also says how it ended (the end-state verdict), what the model did
after taking over, and what the replay saved.
"""

from __future__ import annotations

import html
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
    "ReplaySection",
    "model_actions",
    "recorded_regions",
    "recorded_views",
    "savings_text",
    "write_html_report",
]

_MARK = (230, 30, 30)


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


def _img(image: Image.Image | None, alt: str, css: str = "region") -> str:
    if image is None:
        return "<em>none</em>"
    return f'<img class="{css}" alt="{alt}" src="data:image/png;base64,{encode_png(image)}">'


def _marked(view: StepView) -> Image.Image:
    """The region with a cross at the action point."""
    image = view.region.convert("RGB")
    if view.point is not None:
        x, y = view.point
        draw = ImageDraw.Draw(image)
        draw.line((x - 8, y, x + 8, y), fill=_MARK, width=2)
        draw.line((x, y - 8, x, y + 8), fill=_MARK, width=2)
    return image


def _boxed(view: StepView) -> Image.Image:
    """The small full screen with the region's box."""
    image = view.screen.convert("RGB")
    left, top, right, bottom = (round(v * view.scale) for v in view.box)
    ImageDraw.Draw(image).rectangle((left, top, right, bottom), outline=_MARK, width=2)
    return image


def _cell(view: StepView | None, region: Image.Image | None) -> str:
    if view is None:
        return f"<td>{_img(region, 'region')}</td>"
    return (
        f"<td>{_img(_marked(view), 'region with the action point')}"
        f"{_img(_boxed(view), 'whole screen with the region boxed', 'screen')}</td>"
    )


_STYLE = (
    "body{font-family:sans-serif;margin:2em;max-width:1200px}"
    "td,th{border:1px solid #ccc;padding:6px;vertical-align:middle;overflow-wrap:anywhere}"
    "table{border-collapse:collapse;margin-bottom:1em;table-layout:fixed;width:100%}"
    "img.region{width:120px;image-rendering:pixelated;border:1px solid #888;margin-right:6px}"
    "img.screen{width:200px;border:1px solid #888}"
    ".bad{background:#fde2e1}.ok{background:#e6f4ea}"
    "pre{background:#f6f6f6;padding:1em;white-space:pre-wrap;overflow-wrap:anywhere}"
    "p,li{overflow-wrap:anywhere}"
)


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
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    if summary:
        parts.append(f"<pre>{html.escape(summary)}</pre>")
    for section in sections:
        parts.extend(_section(section, recorded))
    parts.append("</body></html>")
    path.write_text(redact("\n".join(parts)), encoding="utf-8")  # secrets never written
    return path


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
    parts.append(
        "<table><tr><th style='width:4em'>step</th><th style='width:8em'>action</th>"
        "<th>check</th><th>recorded</th><th>current</th></tr>"
    )
    for step in result.steps:
        css = "" if step.matched is None else (" class='ok'" if step.matched else " class='bad'")
        check = step.check_summary()
        if step.effect is not None:
            check += f"; effect: {step.effect.replace('_', ' ')}"
        if step.seconds is not None:
            check += f"; {step.seconds:.2f} s"
        before = recorded.get(step.step_index)
        recorded_cell = _cell(before, None) if isinstance(before, StepView) else _cell(None, before)
        current = _cell(section.views.get(step.step_index), section.regions.get(step.step_index))
        parts.append(
            f"<tr{css}><td>{step.step_index}</td><td>{html.escape(step.action)}</td>"
            f"<td>{html.escape(check)}</td>{recorded_cell}{current}</tr>"
        )
    parts.append("</table>")
    if section.model_steps:
        parts.append("<h3>What the model did after taking over</h3><ol class='model'>")
        parts.extend(f"<li>{html.escape(step)}</li>" for step in section.model_steps)
        parts.append("</ol>")
    return parts
