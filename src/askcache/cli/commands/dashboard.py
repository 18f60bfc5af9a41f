"""``askcache dashboard``: the fleet page, one self-contained HTML file from the run ledger.

It reads every trajectory's summary (never the runs: any engine, a PostgreSQL ledger of
millions of entries included) and one listing of the cache's ``.versions/`` folder
(proposals awaiting review), and writes the page (:mod:`askcache.cli.fleet_page`): the
totals (exactly ``askcache stats --json``'s), hit rate and savings per day as charts,
hand-back hot spots (with their failing regions, where replays kept them:
:func:`spot_regions`, which reads those hot spots' thumbnails only), heals, proposals and
invalidations, and screen profiles.

``--serve`` serves it on 127.0.0.1 instead (:mod:`askcache.cli.fleet_serve`), built again
from the ledger at each request, until interrupted.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from askcache.cli.commands.common import EXIT_OK, emit_json, location, open_run_ledger, open_storage
from askcache.cli.commands.stats import add_price_argument, stats_json
from askcache.cli.fleet_figures import (
    FleetFigures,
    collector_paused,
    fleet_figures,
    proposals_in,
)
from askcache.cli.fleet_page import render_fleet_page, write_fleet_page
from askcache.cli.fleet_regions import hot_spot_regions
from askcache.cli.fleet_serve import serve_fleet_page
from askcache.storage.ledger.open import LEDGER_ENV
from askcache.storage.ledger.spot_images import SpotImages, SpotKey
from askcache.storage.ledger.url import redact_url

__all__ = [
    "DEFAULT_PAGE",
    "DEFAULT_PORT",
    "add_dashboard_command",
    "build_figures",
    "run_dashboard",
    "spot_regions",
]

DEFAULT_PAGE = "askcache-fleet.html"
"""Where the page is written unless ``-o`` says."""

DEFAULT_PORT = 8765
"""The port ``--serve`` listens on unless ``--port`` says (0: any free one)."""


def add_dashboard_command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    parents: list[argparse.ArgumentParser],
) -> None:
    """Register ``dashboard``."""
    parser = commands.add_parser(
        "dashboard",
        parents=parents,
        help="write the fleet page (HTML) from the run ledger, or serve it on 127.0.0.1",
        description="Write one self-contained HTML page from the run ledger (any engine): "
        "replays, hit rate and savings in total and per day (charts), hand-back hot spots "
        "(trajectory, step, reason code, screen profile), heals, proposals awaiting review and "
        "invalidations, and screen profiles. The page fetches nothing: it opens with no "
        "network. Reads the ledger's summaries only, never its runs (docs/fleet.md).",
    )
    parser.add_argument(
        "-o", "--output", default=DEFAULT_PAGE, help=f"the page to write (default: {DEFAULT_PAGE})"
    )
    parser.add_argument(
        "--serve",
        action="store_true",
        help="serve the page on http://127.0.0.1:PORT/ instead (built again at each request)",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"with --serve: the port (default: {DEFAULT_PORT}; 0: any free one)",
    )
    add_price_argument(parser)
    parser.set_defaults(run=run_dashboard)


def build_figures(args: argparse.Namespace) -> FleetFigures:
    """The page's figures for the command line's cache and ledger."""
    storage = open_storage(args.cache_dir)
    url = args.ledger or os.environ.get(LEDGER_ENV)
    with collector_paused():
        with open_run_ledger(args, storage) as ledger:
            summaries, days = ledger.fleet_summaries()
        prices = dict(args.price)
        return fleet_figures(
            summaries,
            days_added=days,
            stats=stats_json(location(storage), summaries, prices),
            ledger=redact_url(url) if url else f"{location(storage)} (the cache's own ledger)",
            proposals=proposals_in(storage),
            prices=prices,
        )


def spot_regions(args: argparse.Namespace, figures: FleetFigures) -> dict[SpotKey, SpotImages]:
    """The failing-region thumbnails of the page's hot spots (theirs only; none when the
    ledger cannot give them: :func:`~askcache.cli.fleet_regions.hot_spot_regions`)."""
    if not figures.hot_spots:
        return {}
    with open_run_ledger(args, open_storage(args.cache_dir)) as ledger:
        return hot_spot_regions(ledger, figures.hot_spots)


def _page(args: argparse.Namespace) -> str:
    figures = build_figures(args)
    return render_fleet_page(figures, spot_regions(args, figures))


def run_dashboard(args: argparse.Namespace) -> int:
    """Run ``dashboard``."""
    if args.serve:
        serve_fleet_page(lambda: _page(args), port=args.port)
        return EXIT_OK
    figures = build_figures(args)
    path = write_fleet_page(Path(args.output), figures, spot_regions(args, figures))
    if args.json:
        emit_json({"page": str(path), "figures": figures.model_dump(mode="json")})
    else:
        total = figures.stats["total"]
        print(
            f"wrote {path}: {total['runs']:,} replays of {len(figures.stats['trajectories'])} "
            f"trajectories, {len(figures.days)} days, {len(figures.hot_spots)} hot spots"
        )
    return EXIT_OK
