"""The HTML reports: one renderer for the demo's report and ``askcache report``.

Pages are self-contained (images inline), redacted of every registered secret, and written
to a temporary file that is then renamed (:func:`write_page`). Steps are shown in one table
(:func:`steps_table`): per step, its check, what it looked like when recorded and what it
looks like now, each a list of :class:`Figure`; a checked region shows its action point and,
beside it, the whole screen with the region boxed (:func:`view_figures`).

* :func:`write_html_report`: replays that just ran (the demo). The cache file stores only
  hashes and thumbnails, so the recorded regions come from the recording's own message
  history (its screenshots), and the current ones from the executor, which keeps what it
  checked each step on (:attr:`askcache.replay.CacheExecutor.views`, kept when the replay ran
  with ``CacheExecutionSettings.keep_step_views``). Each replay's section
  also says how it ended (the end-state verdict), what the model did after taking over, each
  time the replay considered taking over again and why it did or did not
  (:func:`rejoin_lines`), and what the replay saved.
* :func:`write_trajectory_report`: a cache file and its run ledger, from disk alone
  (``askcache report``): the recorded end state (:func:`end_state_figure`), each step's
  effect tiles before and after (:func:`effect_figure`), the latest runs, and each step's
  region now when a dry run checked it.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from askcache.cachefile.format import CacheFile
from askcache.cli.savings import saving_words
from askcache.cli.whole_file import write_whole
from askcache.fingerprint.step import decode_screenshot, region_box
from askcache.foundation.actions import ACTING_ACTIONS, action_anchors, parse_action
from askcache.foundation.messages import MessageParam, TextBlockParam
from askcache.foundation.redaction import redact
from askcache.foundation.screen.thumbnails import Thumbnail
from askcache.record.recording import steps_with_screens
from askcache.replay import ReplayResult
from askcache.replay.step_view import StepView
from askcache.storage.ledger import RejoinDecision, RunRecord
from askcache.tools.computer import encode_png

__all__ = [
    "MARK_COLOUR",
    "Figure",
    "ReplaySection",
    "StepRow",
    "TrajectoryReport",
    "effect_figure",
    "end_state_figure",
    "mark_point",
    "model_actions",
    "recorded_regions",
    "recorded_views",
    "rejoin_lines",
    "savings_text",
    "steps_table",
    "view_figures",
    "write_html_report",
    "write_page",
    "write_trajectory_report",
    "write_whole",
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


def rejoin_lines(decisions: Sequence[RejoinDecision]) -> list[str]:
    """Each re-join decision in one line (:meth:`RejoinDecision.describe`), in order; the same
    decision repeated over consecutive model turns is one line with its count."""
    lines: list[str] = []
    previous, count = "", 0
    for decision in decisions:
        line = decision.describe()
        if line == previous:
            count += 1
            continue
        if previous:
            lines.append(previous if count == 1 else f"{previous} (x{count})")
        previous, count = line, 1
    if previous:
        lines.append(previous if count == 1 else f"{previous} (x{count})")
    return lines


def _rejoin_list(decisions: Sequence[RejoinDecision]) -> str:
    items = "".join(f"<li>{html.escape(line)}</li>" for line in rejoin_lines(decisions))
    return f"<ul class='rejoins'>{items}</ul>" if items else ""


def savings_text(record: RunRecord) -> str:
    """What one replay saved, or cost beyond what replaying its steps saved, from its ledger
    entry, in words (:func:`askcache.cli.savings.saving_words`: "saved 3 model calls; took 1.2 s
    longer than the recording", never a negative saving)."""
    replayed = f"{record.steps_run} step{'' if record.steps_run == 1 else 's'}"
    words = saving_words(record.saved_model_calls, record.saved_tokens, record.saved_seconds)
    return (
        f"{words} (estimated: the recording's cost for the {replayed} replayed, against the "
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
    return write_whole(path, data)


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
        f"<b>{html.escape(result.status)}</b>: {result.steps_run} "
        f"step{'' if result.steps_run == 1 else 's'} run, "
        f"{result.validated} validated, {result.unvalidated} unvalidated"
    )
    if result.stopped_at_step is not None:
        line += f"; stopped at step {result.stopped_at_step}: {html.escape(result.reason or '')}"
    if result.rejoins:
        line += f"; took over again {result.rejoins} time(s) after the model fixed the screen"
    refused = sum(not decision.rejoined for decision in result.rejoin_decisions)
    if refused:
        line += f"; did not take over {refused} time(s)"
    parts.append(f"<p class='status'>{line}</p>")
    if result.loosened:
        items = "".join(f"<li>{html.escape(item.describe())}</li>" for item in result.loosened)
        parts.append(f"<h3>Checks loosened</h3><ul class='loosened'>{items}</ul>")
    if result.rejoin_decisions:
        parts.append("<h3>Taking over again after the hand-back</h3>")
        parts.append(_rejoin_list(result.rejoin_decisions))
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


END_STATE_WIDTH = 480
"""About how wide the recorded end state is shown (its thumbnail scaled up by a whole
number)."""

_VOLATILE = (230, 150, 0)
_PARAMETER = (40, 90, 220)
_UNKNOWN = (238, 230, 210)


def end_state_figure(cache_file: CacheFile) -> Figure | None:
    """The recorded end state (the file's 1/8-scale grey thumbnail of the final screen),
    scaled up, with each acting step's action point and number in red, the tiles that
    changed away from any action (volatile) boxed in amber and the tiles showing a
    parameter's value boxed in blue. ``None`` when the file records no end state."""
    meta = cache_file.metadata
    state, config = meta.end_state, meta.screen_state
    if state is None or config is None:
        return None
    try:
        thumbnail = Thumbnail.from_end_state(state, config)
    except ValueError:  # the loader refuses such files; a report never fails on one
        return None
    scale = max(1, round(END_STATE_WIDTH / state.width))
    image = Image.fromarray(thumbnail.values, "L").convert("RGB")
    image = image.resize((state.width * scale, state.height * scale), Image.Resampling.NEAREST)
    draw = ImageDraw.Draw(image)
    factor = scale / config.block
    for tiles, colour in ((state.volatile, _VOLATILE), (state.parameter_tiles, _PARAMETER)):
        for tile in tiles:
            left, top, right, bottom = thumbnail.tile_box(tile)
            box = (left * factor, top * factor, right * factor - 1, bottom * factor - 1)
            draw.rectangle(box, outline=colour, width=2)
    anchors = action_anchors(cache_file.trajectory)
    steps_at: dict[tuple[int, int], list[str]] = {}
    for index, (step, anchor) in enumerate(zip(cache_file.trajectory, anchors, strict=True)):
        action = parse_action(step)
        if anchor is not None and action is not None and action.name in ACTING_ACTIONS:
            steps_at.setdefault(anchor, []).append(str(index))
    for anchor, numbers in steps_at.items():
        x, y = round(anchor[0] * factor), round(anchor[1] * factor)
        mark_point(image, (x, y), size=6)
        draw.text((x + 5, y + 3), ", ".join(numbers), fill=MARK_COLOUR)
    return Figure(
        image,
        "the recorded end state: the final screen as a 1/8-scale grey thumbnail, with each "
        "step's action point",
        "end",
    )


def _thumbnail_size(cache_file: CacheFile) -> tuple[int, int] | None:
    meta = cache_file.metadata
    if meta.end_state is not None:
        return meta.end_state.width, meta.end_state.height
    if meta.coordinate_space is None or meta.screen_state is None:
        return None
    block = meta.screen_state.block
    space = meta.coordinate_space
    return -(-space.width // block), -(-space.height // block)


@dataclass(frozen=True)
class _EffectLayout:
    """Where an effect's tiles lie, and the part of the screen shown around them."""

    size: tuple[int, int]
    """Thumbnail width and height."""
    side: int
    """Thumbnail pixels per tile side."""
    block: int
    """Screen pixels per thumbnail pixel."""
    zoom: int
    """Picture pixels per thumbnail pixel."""
    tiles: list[int]
    """The effect's tiles."""
    boxes: list[tuple[int, int, int, int]]
    """Their boxes, in thumbnail pixels."""
    crop: tuple[int, int, int, int]
    """The part shown, in thumbnail pixels."""
    region: tuple[float, float, float, float] | None
    """The step's region, in thumbnail pixels."""
    anchor: tuple[int, int] | None
    """The action point, in screen pixels."""

    def panel(self, values: bytes, shown: Sequence[int]) -> Image.Image:
        """The tiles' ``values`` on the beige ground, zoomed, with the marks drawn."""
        width, height = self.size
        left, top, right, bottom = self.crop
        per_tile = self.side * self.side
        canvas = np.empty((height, width, 3), dtype=np.uint8)
        canvas[:, :] = _UNKNOWN
        for number, (x0, y0, x1, y1) in enumerate(self.boxes):
            if x0 >= width or y0 >= height:
                continue
            raw = np.frombuffer(values[number * per_tile : (number + 1) * per_tile], np.uint8)
            grey = raw.reshape(self.side, self.side)[: min(y1, height) - y0, : min(x1, width) - x0]
            canvas[y0 : y0 + grey.shape[0], x0 : x0 + grey.shape[1]] = grey[:, :, None]
        zoom = self.zoom
        part = Image.fromarray(canvas[top:bottom, left:right], "RGB")
        part = part.resize((part.width * zoom, part.height * zoom), Image.Resampling.NEAREST)
        draw = ImageDraw.Draw(part)
        for tile, (x0, y0, x1, y1) in zip(self.tiles, self.boxes, strict=True):
            if tile in shown:
                corner = ((x0 - left) * zoom, (y0 - top) * zoom)
                far = ((x1 - left) * zoom - 1, (y1 - top) * zoom - 1)
                draw.rectangle((corner, far), outline=_PARAMETER, width=2)
        if self.region is not None:
            r = self.region
            corner = (round((r[0] - left) * zoom), round((r[1] - top) * zoom))
            far = (round((r[2] - left) * zoom), round((r[3] - top) * zoom))
            draw.rectangle((corner, far), outline=MARK_COLOUR, width=2)
        if self.anchor is not None:
            x, y = (round(v * zoom / self.block) for v in self.anchor)
            mark_point(part, (x - left * zoom, y - top * zoom), size=6)
        return part


def effect_figure(
    cache_file: CacheFile, index: int, anchor: tuple[int, int] | None
) -> Figure | None:
    """What step ``index`` changed when recorded, from the file alone: the tiles of its
    effect (1/8-scale grey) before and after the action, side by side, on a beige ground
    (the rest of the screen is not stored), at half the screen's size, with the step's
    region boxed and its action point crossed in red; tiles showing a parameter's value are
    boxed in blue. ``None`` when the step stores no effect."""
    effect, config = cache_file.trajectory[index].effect, cache_file.metadata.screen_state
    size = _thumbnail_size(cache_file)
    if effect is None or not effect.tiles or config is None or size is None:
        return None
    side, block = config.tile, config.block
    try:
        before, after = bytes.fromhex(effect.before), bytes.fromhex(effect.after)
    except ValueError:
        return None
    if len(before) != side * side * len(effect.tiles) or len(after) != len(before):
        return None
    columns = -(-size[0] // side)
    boxes = []
    for tile in effect.tiles:
        row, column = divmod(tile, columns)
        boxes.append((column * side, row * side, (column + 1) * side, (row + 1) * side))
    validation = cache_file.metadata.visual_validation
    region = None
    if anchor is not None and validation is not None:
        half = validation.region_size / 2 / block
        x, y = anchor[0] / block, anchor[1] / block
        region = (x - half, y - half, x + half, y + half)
    around = [*boxes, *([region] if region is not None else [])]
    crop = (
        max(0, int(min(b[0] for b in around)) - side),
        max(0, int(min(b[1] for b in around)) - side),
        min(size[0], int(max(b[2] for b in around)) + side + 1),
        min(size[1], int(max(b[3] for b in around)) + side + 1),
    )
    layout = _EffectLayout(
        size, side, block, max(1, block // 2), effect.tiles, boxes, crop, region, anchor
    )
    first = layout.panel(before, effect.parameter_before)
    second = layout.panel(after, effect.parameter_after)
    gap = 8
    image = Image.new("RGB", (first.width * 2 + gap, first.height), "white")
    image.paste(first, (0, 0))
    image.paste(second, (first.width + gap, 0))
    return Figure(
        image,
        "what the action changed when recorded: its tiles before and after (1/8-scale grey)",
        "effect",
    )


@dataclass
class TrajectoryReport:
    """What :func:`write_trajectory_report` shows: a cache file, its runs from the run
    ledger, and perhaps each step on the screen as it is now."""

    name: str
    """Cache file name."""
    facts: list[str] = field(default_factory=list)
    """Lines about the file: goal, when and at what size it was recorded, its cost, its
    validation set-up."""
    steps: list[StepRow] = field(default_factory=list)
    """Every step: its check set-up, its recorded effect, and (with ``checked_on``) its
    region now."""
    end_state: Figure | None = None
    """The recorded end state (:func:`end_state_figure`)."""
    runs: list[RunRecord] = field(default_factory=list)
    """The ledger entries shown, most recent first."""
    runs_total: int = 0
    """Entries in the ledger for this file."""
    totals: str = ""
    """All replays added up, one line."""
    checked_on: str | None = None
    """Where the "now" pictures come from (``the live screen of :1``); ``None``: none."""
    verdict: str | None = None
    """What a replay would do on those screens, one line."""
    verdict_ok: bool | None = None
    """True: every checked step would run; False: a replay would stop."""


_RUN_CSS = {
    "completed": "ok",
    "completed_unverified": "warn",
    "handed_back": "bad",
    "interrupted": "bad",
    "refused": "bad",
}


def _run_row(record: RunRecord) -> str:
    when = f"{record.started_at:%Y-%m-%d %H:%M:%S} UTC"
    where = record.host if record.user is None else f"{record.user}@{record.host}"
    if record.profile is not None:  # the screen profile it ran on, or a heal wrote
        where += f", screen {record.profile}"
    status = record.status if record.event in ("replay", record.status) else record.event
    stopped = ""
    if record.stopped_at_step is not None:
        stopped = f"step {record.stopped_at_step}"
    if record.reason:
        stopped += f"{': ' if stopped else ''}{record.reason}"
    if record.event == "replay":
        saved = savings_text(record)
    elif record.event in ("healed", "proposed"):
        saved = f"steps {record.healed_steps} from the model; version {record.version}"
        if record.profile is not None:
            saved += f"; screen profile {record.profile}'s trajectory"
    elif record.event == "imported":
        saved = f"{record.successes} of {record.attempts} replays counted by the old file"
    else:
        saved = ""
    steps = f"{record.steps_run}/{record.steps_total}" if record.event == "replay" else ""
    loosened = ""
    if record.loosened:  # the run checked less than its file asks: said beside its status
        items = "; ".join(record.loosened)
        loosened = f"<br><span class='loosened'>checks loosened: {html.escape(items)}</span>"
    cells = [
        f"{when}, {where}",
        f"<b>{html.escape(status)}</b>{loosened}",
        steps,
        stopped,
        _rejoin_cell(record),
        str(record.model_calls),
        f"{record.usage.total_tokens:,}",
        f"{record.seconds:.1f}",
        saved,
    ]
    css = _RUN_CSS.get(record.status, "") if record.event == "replay" else ""
    shown = [cell if index in (1, 4) else html.escape(cell) for index, cell in enumerate(cells)]
    return f"<tr class='run {css}'>" + "".join(f"<td>{cell}</td>" for cell in shown) + "</tr>"


def _rejoin_cell(record: RunRecord) -> str:
    """The re-joins cell (HTML): the count, then each decision and its reason."""
    return html.escape(str(record.rejoins)) + _rejoin_list(record.rejoin_decisions)


def write_trajectory_report(path: Path, report: TrajectoryReport) -> Path:
    """Write the report of one trajectory (``askcache report``) and return its path: the
    file's facts, its recorded end state, its most recent runs with what they saved, and
    each step as recorded and (when checked) as it looks now."""
    body = ["<h2>The trajectory</h2><ul class='facts'>"]
    body.extend(f"<li>{html.escape(fact)}</li>" for fact in report.facts)
    body.append("</ul><h2>Recorded end state</h2>")
    if report.end_state is not None:
        body.append(f"<p>{_img(report.end_state)}</p>")
        body.append(
            "<p class='note'>The final screen of the recording as the file stores it: grey, "
            "1/8 scale (layout, not readable text). Red: each acting step's action point and "
            "number; amber boxes: areas that changed on their own (not compared); blue boxes: "
            "areas showing a parameter's value (not compared).</p>"
        )
    else:
        body.append(
            "<p class='note'>No end state recorded (an older file, or recorded "
            "with record_screen_state off): replays cannot confirm how they ended.</p>"
        )
    body.append("<h2>Runs</h2>")
    if report.totals:
        body.append(f"<p class='totals'>{html.escape(report.totals)}</p>")
    if report.runs:
        body.append(
            f"<p>The {len(report.runs)} most recent of {report.runs_total} entries in the run "
            "ledger, newest first.</p>"
            "<table class='runs'><tr><th style='width:9em'>when, where</th>"
            "<th style='width:8em'>status</th><th style='width:3.5em'>steps</th>"
            "<th>stopped at</th><th style='width:16%'>re-joins</th>"
            "<th style='width:4em'>model calls</th><th style='width:5em'>tokens</th>"
            "<th style='width:4.5em'>seconds</th><th style='width:18%'>saved</th></tr>"
        )
        body.extend(_run_row(record) for record in report.runs)
        body.append(
            "</table><p class='note'>completed: every step ran and the final screen matched "
            "the recording; completed_unverified: every step ran but the final screen could "
            "not be confirmed; handed_back: the replay stopped and the model took over (its "
            "calls and tokens are this run's); refused: the file was not replayed; "
            "interrupted: the conversation ended while the replay ran. Re-joins: the times "
            "the replay took over again after a hand-back, then each time it considered it "
            "and why it did or did not (model_acted: the model had not acted; "
            "model_continues: the model ended its turn or said it stops; screen: the next "
            "step's check or the check that failed did not pass). Checks loosened: the run "
            "checked less than the file asks (a threshold raised by the settings or the "
            "model, checks skipped, unchecked steps run, effects or the end state not "
            "checked). Savings are estimates from the recording's cost.</p>"
        )
    else:
        body.append("<p class='runs-none'>No runs in the run ledger yet.</p>")
    body.append("<h2>Steps</h2>")
    if report.checked_on is None:
        body.append(
            "<p class='note'>Recorded only: give --screenshots DIR or --live to see each "
            "step's region as it looks now.</p>"
        )
    else:
        css = "" if report.verdict_ok is None else ("ok" if report.verdict_ok else "bad")
        body.append(
            f"<p class='verdict {css}'>Checked on {html.escape(report.checked_on)}: "
            f"{html.escape(report.verdict or '')}</p>"
        )
    now = "now" if report.checked_on is None else f"now ({report.checked_on})"
    body.extend(steps_table(report.steps, ("recorded (from the cache file)", now)))
    return write_page(path, f"askcache report: {report.name}", body)
