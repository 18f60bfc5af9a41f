"""The fleet page: one self-contained HTML file of
:class:`~askcache.cli.fleet_figures.FleetFigures`.

The figures are embedded as JSON (``<script type="application/json" id="figures">``), the
tables are written here as HTML, and the two charts (hit rate and replays per day; dollars and
tokens saved per day) are drawn in the browser by uPlot, a maintained MIT-licensed chart
library vendored into the package (``askcache/cli/vendor/``, inlined into the page): the page
fetches nothing, and opens with no network.

Once the charts are drawn, the page says so on its ``<body>``: ``data-charts`` (how many
were drawn) and ``data-inked`` (how many of their pixels are not blank), and
``data-drawn-ms`` (milliseconds from the navigation's start), for tests and the benchmark.
Registered secret values are redacted from the page, as from every report
(:func:`~askcache.cli.html_report.write_page`'s rule).
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

from askcache.cli.fleet_figures import FleetFigures
from askcache.cli.fleet_regions import regions_section
from askcache.cli.whole_file import write_whole
from askcache.foundation.redaction import redact
from askcache.storage.ledger.spot_images import SpotImages, SpotKey

__all__ = ["TRAJECTORY_ROWS", "render_fleet_page", "write_fleet_page"]

_VENDOR = "vendor"


def _vendored(name: str) -> str:
    return resources.files("askcache.cli").joinpath(_VENDOR, name).read_text(encoding="utf-8")


def write_fleet_page(
    path: Path, figures: FleetFigures, regions: Mapping[SpotKey, SpotImages] | None = None
) -> Path:
    """Write the page to ``path`` (a temporary file beside it, then renamed: never half
    written)."""
    return write_whole(path, render_fleet_page(figures, regions).encode("utf-8"))


def render_fleet_page(
    figures: FleetFigures, regions: Mapping[SpotKey, SpotImages] | None = None
) -> str:
    """The page's HTML (see the module docstring); ``regions``: the hot spots' failing-region
    thumbnails (:func:`~askcache.cli.fleet_regions.hot_spot_regions`), shown in a section of
    their own (:func:`~askcache.cli.fleet_regions.regions_section`)."""
    embedded = figures.model_dump_json().replace("<", "\\u003c")
    total = figures.stats["total"]
    body = [
        "<header><h1>askcache fleet</h1>",
        f"<p class='where'>ledger {_e(figures.ledger)} &middot; written "
        f"{_e(_when(figures.generated_at))} UTC &middot; per-day figures since "
        f"{_e(figures.days_since or '(none yet)')}</p></header>",
        _tiles(total),
        "<section class='charts'>",
        "<figure><figcaption>Replays and hit rate per day</figcaption>"
        "<div id='chart-hits' class='chart'></div></figure>",
        "<figure><figcaption>Savings per day (dollars, tokens)</figcaption>"
        "<div id='chart-savings' class='chart'></div></figure>",
        "</section>",
        "<h2>Hand-back hot spots</h2>",
        _table(
            ["trajectory", "step", "reason code", "what it means", "screen profile", "hand-backs"],
            (
                [
                    s.trajectory,
                    _opt(s.step),
                    s.reason_code or "(none)",
                    s.reason,
                    s.profile or "(unknown)",
                    s.hand_backs,
                ]
                for s in figures.hot_spots
            ),
            empty="no hand-backs",
            cls="hotspots",
        ),
        regions_section(figures.hot_spots, regions or {}),
        "<h2>Hand-backs by reason</h2>",
        _table(
            ["reason code", "hand-backs"],
            ([code, count] for code, count in figures.hand_backs_by_code.items()),
            empty="no hand-backs",
        ),
        "<h2>Proposals awaiting review</h2>",
        _table(
            ["trajectory", "proposal", "review with"],
            (
                [p.trajectory, p.proposal, f"askcache diff {p.trajectory}"]
                for p in figures.proposals
            ),
            empty="none",
            cls="proposals",
        ),
        "<h2>Heals, proposals and invalidations</h2>",
        _table(
            ["when (UTC)", "trajectory", "event", "version", "screen profile", "steps re-done"],
            (
                [
                    _when(c.at),
                    c.trajectory,
                    c.event,
                    c.version or "",
                    c.profile or "(recorded)",
                    ", ".join(map(str, c.healed_steps)),
                ]
                for c in figures.changes
            ),
            empty="none",
            cls="changes",
        ),
        "<h2>Screen profiles</h2>",
        _table(
            ["screen profile", "trajectories", "replays", "hit rate", "hand-backs", "latest"],
            (
                [
                    p.profile,
                    p.trajectories,
                    p.runs,
                    _rate(p.hit_rate),
                    p.handed_back,
                    _when(p.last_at) if p.last_at else "",
                ]
                for p in figures.profiles
            ),
            empty="no replays",
            cls="profiles",
        ),
        "<h2>Trajectories</h2>",
        _table(
            [
                "trajectory",
                "replays",
                "hit rate",
                "hand-backs",
                "model calls",
                "calls saved",
                "tokens saved",
                "dollars saved",
            ],
            (
                [
                    t["trajectory"],
                    t["runs"],
                    _rate(t["hit_rate"]),
                    t["handed_back"],
                    t["model_calls"],
                    t["saved_model_calls"],
                    f"{t['saved_tokens']:,}",
                    _money(t["dollars_saved"]),
                ]
                for t in _shown_trajectories(figures)
            ),
            empty="no trajectories in the ledger",
            cls="trajectories",
        ),
        _more_trajectories(figures),
    ]
    page = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        "<title>askcache fleet</title>",
        f"<style>{_vendored('uPlot.min.css')}</style><style>{_STYLE}</style>",
        "</head><body>",
        *body,
        f"<script type='application/json' id='figures'>{embedded}</script>",
        f"<script>{_vendored('uPlot.iife.min.js')}</script>",
        f"<script>{_SCRIPT}</script>",
        "</body></html>",
    ]
    return redact("\n".join(page))


TRAJECTORY_ROWS = 100
"""Trajectories the page's table lists (the most hand-backs first; the embedded figures, and
``askcache stats``, have them all)."""


def _shown_trajectories(figures: FleetFigures) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = figures.stats["trajectories"]
    ordered = sorted(rows, key=lambda t: (-t["handed_back"], -t["runs"], t["trajectory"]))
    return ordered[:TRAJECTORY_ROWS]


def _more_trajectories(figures: FleetFigures) -> str:
    more = len(figures.stats["trajectories"]) - TRAJECTORY_ROWS
    if more <= 0:
        return ""
    return (
        f"<p class='where'>and {more:,} more with fewer hand-backs "
        "(askcache stats lists them all)</p>"
    )


def _tiles(total: dict[str, object]) -> str:
    tiles = [
        ("replays", f"{total['runs']:,}"),
        ("hit rate", _rate(total["hit_rate"])),
        ("hand-backs", f"{total['handed_back']:,}"),
        ("model calls avoided", f"{total['saved_model_calls']:,}"),
        ("tokens saved", f"{total['saved_tokens']:,}"),
        ("dollars saved", _money(total["dollars_saved"])),
        ("hours saved", f"{float(total['saved_seconds']) / 3600:,.1f}"),  # type: ignore[arg-type]
    ]
    cells = "".join(
        f"<div class='tile'><b data-total='{_e(name)}'>{_e(value)}</b><span>{_e(name)}</span></div>"
        for name, value in tiles
    )
    return f"<section class='tiles'>{cells}</section>"


def _table(
    heads: Sequence[str], rows: Iterable[Sequence[object]], *, empty: str, cls: str = ""
) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in heads)
    lines = ["<tr>" + "".join(f"<td>{_e(str(c))}</td>" for c in row) + "</tr>" for row in rows]
    if not lines:
        lines = [f"<tr><td colspan='{len(heads)}' class='empty'>{_e(empty)}</td></tr>"]
    return (
        f"<table class='{cls}'><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(lines)}</tbody></table>"
    )


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _opt(value: object | None) -> str:
    return "?" if value is None else str(value)


def _rate(value: object) -> str:
    return "-" if value is None else f"{float(value):.0%}"  # type: ignore[arg-type]


def _money(value: object) -> str:
    return "n/a" if value is None else f"${float(value):,.2f}"  # type: ignore[arg-type]


def _when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M")


_STYLE = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0 auto;padding:20px 28px;
max-width:1240px;color:#1d2330;background:#f6f7f9}
h1{font-size:22px;margin:0}h2{font-size:16px;margin:28px 0 8px}
.where{color:#5b6577;margin:4px 0 16px}
.tiles{display:grid;grid-template-columns:repeat(7,1fr);gap:10px}
.tile{background:#fff;border:1px solid #e1e4ea;border-radius:8px;padding:10px 12px}
.tile b{display:block;font-size:20px}.tile span{color:#5b6577;font-size:12px}
.charts{display:grid;grid-template-columns:1fr 1fr;gap:14px;margin-top:14px}
figure{margin:0;background:#fff;border:1px solid #e1e4ea;border-radius:8px;padding:10px}
figcaption{font-weight:600;margin-bottom:6px}.chart{min-height:260px}
table{border-collapse:collapse;width:100%;background:#fff;border:1px solid #e1e4ea}
th,td{text-align:left;padding:5px 9px;border-bottom:1px solid #eef0f3;font-size:13px}
th{background:#f0f2f5;font-weight:600}td.empty{color:#7a8394;font-style:italic}
"""

_SCRIPT = """
(function(){
  var figures = JSON.parse(document.getElementById('figures').textContent);
  var days = figures.days, xs = [], runs = [], hit = [], dollars = [], tokens = [];
  for (var i = 0; i < days.length; i++) {
    var d = days[i];
    xs.push(Date.parse(d.day + 'T00:00:00Z') / 1000);
    runs.push(d.runs);
    hit.push(d.hit_rate === null ? null : Math.round(d.hit_rate * 1000) / 10);
    dollars.push(d.dollars_saved === null ? 0 : Math.round(d.dollars_saved * 100) / 100);
    tokens.push(d.saved_tokens);
  }
  var drawn = 0, inked = 0, charts = [];
  function count(u) {
    var c = u.ctx.canvas, data = u.ctx.getImageData(0, 0, c.width, c.height).data, n = 0;
    for (var p = 3; p < data.length; p += 4) if (data[p] !== 0) n++;
    return n;
  }
  function done(u) {
    drawn++; inked += count(u);
    if (drawn === charts.length) {
      document.body.dataset.charts = String(drawn);
      document.body.dataset.inked = String(inked);
      document.body.dataset.drawnMs = String(Math.round(performance.now()));
    }
  }
  function width(id) { return Math.max(document.getElementById(id).clientWidth, 320); }
  var bars = uPlot.paths.bars({size: [0.6, 40]});
  function fromZero(u, min, max) { return [0, max > 0 ? max * 1.1 : 1]; }
  function short(x) {
    return x >= 1e9 ? x / 1e9 + 'G' : x >= 1e6 ? x / 1e6 + 'M' : x >= 1e3 ? x / 1e3 + 'k' : x;
  }
  function utc(ts) { return uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'); }
  charts.push({id: 'chart-hits', opts: {
    width: width('chart-hits'), height: 240, tzDate: utc,
    series: [{},
      {label: 'replays', stroke: '#7f93b3', fill: 'rgba(127,147,179,0.35)', paths: bars,
       scale: 'n'},
      {label: 'hit rate %', stroke: '#1a7f37', width: 2, scale: '%'}],
    axes: [{}, {scale: 'n', size: 56}, {scale: '%', side: 1, size: 56, grid: {show: false},
                values: function(u, v) { return v.map(function(x) { return x + '%'; }); }}],
    scales: {'%': {range: [0, 100]}, n: {range: fromZero}},
    hooks: {draw: [done]}
  }, data: [xs, runs, hit]});
  charts.push({id: 'chart-savings', opts: {
    width: width('chart-savings'), height: 240, tzDate: utc,
    series: [{},
      {label: 'dollars saved', stroke: '#b35c00', width: 2, fill: 'rgba(179,92,0,0.12)',
       scale: '$'},
      {label: 'tokens saved', stroke: '#3b5bdb', width: 2, scale: 'tok'}],
    axes: [{}, {scale: '$', size: 64,
                values: function(u, v) { return v.map(function(x) { return '$' + x; }); }},
           {scale: 'tok', side: 1, size: 64, grid: {show: false},
            values: function(u, v) { return v.map(short); }}],
    scales: {'$': {range: fromZero}, tok: {range: fromZero}},
    hooks: {draw: [done]}
  }, data: [xs, dollars, tokens]});
  for (var k = 0; k < charts.length; k++) {
    var spec = charts[k], hook = spec.opts.hooks.draw[0];
    spec.opts.hooks.draw = [(function(first) {
      var seen = false;
      return function(u) { if (!seen) { seen = true; first(u); } };
    })(hook)];
    new uPlot(spec.opts, spec.data, document.getElementById(spec.id));
  }
})();
"""
