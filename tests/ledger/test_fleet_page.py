"""``askcache dashboard``: the fleet page, written from a SQLite and a PostgreSQL ledger, loaded in
Debian's headless Chromium with no network (its charts draw, its figures are ``askcache stats
--json``'s), kept by the retention, and served on 127.0.0.1."""

from __future__ import annotations

import html
import json
import re
import sqlite3
import subprocess
import sys
import urllib.error
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from askcache.cli.app import main
from askcache.cli.commands.stats import stats_json
from askcache.cli.fleet_figures import fleet_figures
from askcache.storage.cache_storage import LocalCacheStorage
from askcache.storage.ledger import RunLedger, open_ledger
from askcache.storage.ledger.sqlite import SqliteLedger
from tests.ledger.fleet_ledger import TRAJECTORIES, fleet_records

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
OFFLINE = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--host-resolver-rules=MAP * ~NOTFOUND",  # no name resolves: nothing can be fetched
    "--proxy-server=http://127.0.0.1:9",  # and nothing goes out by address either
    "--window-size=1280,1600",
]


def _fill(ledger: RunLedger) -> int:
    count = 0
    for record in fleet_records():
        ledger.append(record, entry_id=f"e{count:06d}")
        count += 1
    return count


def _cache_with_a_proposal(tmp_path: Path) -> Path:
    cache = tmp_path / "cache"
    proposals = cache / ".versions" / "checkout.json"
    proposals.mkdir(parents=True)
    (proposals / "proposed-20261126T101500Z-ab12cd.json").write_text("{}")
    (proposals / "v000001.json").write_text("{}")
    return cache


def _stats(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["stats", "--json", *args]) == 0
    found: dict[str, Any] = json.loads(capsys.readouterr().out)
    return found


def _dashboard(capsys: pytest.CaptureFixture[str], *args: str) -> Path:
    capsys.readouterr()
    assert main(["dashboard", "--json", *args]) == 0
    return Path(json.loads(capsys.readouterr().out)["page"])


def _load(page: Path) -> str:
    """The page's DOM once Chromium loaded it (its scripts ran), offline."""
    done = subprocess.run(
        [CHROMIUM, *OFFLINE, "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout


def _body(dom: str) -> dict[str, str]:
    tag = re.search(r"<body([^>]*)>", dom)
    assert tag is not None
    return dict(re.findall(r'data-([a-z-]+)="([^"]*)"', tag.group(1)))


def _embedded(dom: str) -> dict[str, Any]:
    found = re.search(
        r"""<script type=["']application/json["'] id=["']figures["']>(.*?)</script>""", dom, re.S
    )
    assert found is not None
    data: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    return data


def _check_page(page: Path, stats: dict[str, Any]) -> dict[str, Any]:
    text = page.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)  # nothing to fetch
    dom = _load(page)
    body = _body(dom)
    assert body["charts"] == "2"  # both charts drawn, by the vendored uPlot
    assert int(body["inked"]) > 5_000  # and not blank
    assert dom.count("<canvas") >= 2
    figures = _embedded(dom)
    assert figures["stats"] == stats  # the figures are exactly askcache stats --json's
    total = stats["total"]
    assert f">{total['runs']:,}</b>" in dom
    days = figures["days"]
    assert sum(d["runs"] for d in days) == total["runs"]  # a new ledger: every run has its day
    assert sum(d["completed"] for d in days) == total["completed"]
    assert sum(d["saved_tokens"] for d in days) == total["saved_tokens"]
    assert sum(d["handed_back"] for d in days) == total["handed_back"]
    assert sum(d["dollars_saved"] for d in days) == pytest.approx(total["dollars_saved"])
    assert sum(s["hand_backs"] for s in figures["hot_spots"]) <= total["handed_back"]
    assert sum(figures["hand_backs_by_code"].values()) == total["handed_back"]
    assert figures["hot_spots"][0]["hand_backs"] >= figures["hot_spots"][-1]["hand_backs"]
    assert {p["profile"] for p in figures["profiles"]} == {"1280x800@1x", "2560x1600@2x"}
    assert figures["proposals"] == [
        {"trajectory": "checkout.json", "proposal": "proposed-20261126T101500Z-ab12cd.json"}
    ]
    assert {c["event"] for c in figures["changes"]} >= {"healed", "invalidated"}
    return figures


def test_the_page_from_a_sqlite_ledger_draws_in_chromium_offline_with_stats_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = _cache_with_a_proposal(tmp_path)
    with open_ledger(LocalCacheStorage(cache)) as ledger:
        assert isinstance(ledger, SqliteLedger)
        _fill(ledger)
    page = _dashboard(capsys, "--cache-dir", str(cache), "-o", str(tmp_path / "fleet.html"))
    figures = _check_page(page, _stats(capsys, "--cache-dir", str(cache)))
    assert len(figures["days"]) == 21
    assert "(the cache's own ledger)" in figures["ledger"]


def test_the_page_from_a_postgresql_ledger_has_the_same_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], postgres_url: str
) -> None:
    cache = _cache_with_a_proposal(tmp_path)
    from askcache.storage.ledger.postgres import PostgresLedger

    with PostgresLedger(postgres_url) as ledger:
        entries = _fill(ledger)
    where = ["--cache-dir", str(cache), "--ledger", postgres_url]
    page = _dashboard(capsys, *where, "-o", str(tmp_path / "fleet.html"))
    stats = _stats(capsys, *where)
    assert stats["total"]["runs"] < entries  # heals and the invalidation are not replays
    figures = _check_page(page, stats)
    password = postgres_url.split("://", 1)[1].split("@", 1)[0].partition(":")[2]
    if password:
        assert password not in page.read_text()
        assert "***" in figures["ledger"]


def test_the_retention_leaves_the_days_as_they_were(tmp_path: Path) -> None:
    ledger = SqliteLedger(tmp_path / "ledger.sqlite3", retention_days=None)
    _fill(ledger)
    stats = stats_json("c", ledger.summaries())
    before = fleet_figures(ledger.summaries(), stats=stats, ledger="l")
    assert ledger.prune(datetime(2027, 1, 1, tzinfo=UTC)) > 0
    assert ledger.records() == []
    after = fleet_figures(ledger.summaries(), stats=stats, ledger="l", now=before.generated_at)
    assert after == before
    assert len(after.days) == 21


def test_the_figures_read_no_runs(tmp_path: Path) -> None:
    """Summaries only: a ledger whose entries table is gone still gives the whole page."""
    ledger = SqliteLedger(tmp_path / "ledger.sqlite3")
    _fill(ledger)
    expected = fleet_figures(
        ledger.summaries(), stats=stats_json("c", ledger.summaries()), ledger="l"
    )
    ledger.close()
    with sqlite3.connect(tmp_path / "ledger.sqlite3") as db:
        db.execute("DROP TABLE entries")
    again = SqliteLedger(tmp_path / "ledger.sqlite3")
    found = fleet_figures(
        again.summaries(),
        stats=stats_json("c", again.summaries()),
        ledger="l",
        now=expected.generated_at,
    )
    assert found == expected


def test_an_empty_ledger_gives_a_page_whose_charts_still_draw(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    page = _dashboard(capsys, "--cache-dir", str(cache), "-o", str(tmp_path / "empty.html"))
    dom = _load(page)
    assert _body(dom)["charts"] == "2"
    assert "no hand-backs" in dom
    assert _embedded(dom)["stats"] == _stats(capsys, "--cache-dir", str(cache))


def test_serve_answers_on_127_0_0_1_and_rebuilds_the_page(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    server = subprocess.Popen(
        [sys.executable, "-m", "askcache.cli", "dashboard", "--serve", "--port", "0",
         "--cache-dir", str(cache)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    try:
        assert server.stdout is not None
        line = server.stdout.readline()  # printed once it listens
        found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert found is not None, line
        url = found.group(0)
        with urllib.request.urlopen(url, timeout=30) as answer:
            assert answer.status == 200
            assert answer.headers["Content-Type"] == "text/html; charset=utf-8"
            first = answer.read().decode()
        assert '"runs":0' in first.replace(" ", "")
        with open_ledger(LocalCacheStorage(cache)) as ledger:
            _fill(ledger)
        with urllib.request.urlopen(url, timeout=30) as answer:
            second = answer.read().decode()
        figures = _embedded(second)
        assert figures["stats"]["total"]["runs"] > 0  # built again from the ledger
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(url + "other", timeout=30)
        assert missing.value.code == 404
        missing.value.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
        if server.stdout is not None:
            server.stdout.close()


def test_the_page_from_the_s3_segment_engine_has_the_stats_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Segments compacted into generations (their summaries merged) give the same page."""
    from askcache.storage.ledger import SegmentLedger
    from askcache.storage.remote import storage_for

    where = f"memory://fleet-page-{tmp_path.name}"
    storage = storage_for(where)
    with open_ledger(storage) as ledger:
        assert isinstance(ledger, SegmentLedger)
        _fill(ledger)
        assert sum(ledger.compact(name, force=True) for name in TRAJECTORIES) > 0
        for number, record in enumerate(fleet_records(days=2, per_day=3, seed=1)):
            ledger.append(record, entry_id=f"late{number:03d}")  # loose, beside the generations
    page = _dashboard(capsys, "--cache-dir", where, "-o", str(tmp_path / "fleet.html"))
    stats = _stats(capsys, "--cache-dir", where)
    figures = _embedded(page.read_text())
    assert figures["stats"] == stats
    assert sum(d["runs"] for d in figures["days"]) == stats["total"]["runs"]
    assert sum(figures["hand_backs_by_code"].values()) == stats["total"]["handed_back"]


def _days_without_floats(figures: Any) -> list[dict[str, Any]]:
    """The per-day figures, their float sums rounded (added up in another order)."""
    shown = []
    for day in figures.days:
        data = day.model_dump()
        for name in ("saved_seconds", "dollars_spent", "dollars_saved"):
            if data[name] is not None:
                data[name] = round(data[name], 6)
        shown.append(data)
    return shown


def test_postgresql_adds_the_days_up_in_the_database_to_the_same_figures(
    tmp_path: Path, postgres_url: str
) -> None:
    """One row per day from the database, the summaries without their days: the same page as
    the summaries' own days added up here, and as a SQLite ledger of the same entries."""
    from askcache.storage.ledger.postgres import PostgresLedger

    with PostgresLedger(postgres_url) as ledger:
        _fill(ledger)
        whole = ledger.summaries()
        summaries, days = ledger.fleet_summaries()
    assert days is not None
    assert len(days) == 21
    assert [s.trajectory for s in summaries] == [s.trajectory for s in whole]
    assert all(s.days == {} for s in summaries)
    assert all(s.days for s in whole)
    stats = stats_json("c", whole)
    assert stats_json("c", summaries) == stats  # the days are not part of stats
    here = fleet_figures(whole, stats=stats, ledger="l")
    there = fleet_figures(
        summaries, stats=stats, ledger="l", now=here.generated_at, days_added=days
    )
    assert _days_without_floats(there) == _days_without_floats(here)
    assert there.model_copy(update={"days": []}) == here.model_copy(update={"days": []})
    with SqliteLedger(tmp_path / "ledger.sqlite3") as sqlite:
        _fill(sqlite)
        alone = fleet_figures(sqlite.summaries(), stats=stats, ledger="l", now=here.generated_at)
    assert _days_without_floats(alone) == _days_without_floats(there)


def test_the_page_command_runs_without_the_replay_or_images(tmp_path: Path) -> None:
    """``askcache dashboard`` imports the ledger and the page, not the replay, the cache file's
    model, numpy or Pillow (its start-up is part of the page's time)."""
    from askcache.cli import fleet_figures as figures_module
    from askcache.storage.versions import VERSIONS_FOLDER

    assert figures_module.VERSIONS_FOLDER == VERSIONS_FOLDER
    cache = _cache_with_a_proposal(tmp_path)
    with open_ledger(LocalCacheStorage(cache)) as ledger:
        _fill(ledger)
    probe = (
        "import sys\n"
        "from askcache.cli.app import main\n"
        f"code = main(['dashboard', '--cache-dir', {str(cache)!r}, '-o', {str(tmp_path / 'p.html')!r}])\n"
        "heavy = {'numpy', 'PIL', 'anthropic', 'askcache.replay', 'askcache.cachefile.format'}\n"
        "print(code, sorted(m for m in sys.modules if m in heavy or m.split('.')[0] in heavy))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
    )
    assert done.stdout.strip().splitlines()[-1] == "0 []", done.stdout
    assert (tmp_path / "p.html").stat().st_size > 0


def test_the_page_lists_the_trajectories_with_most_hand_backs_and_embeds_them_all() -> None:
    from askcache.cli.fleet_page import TRAJECTORY_ROWS, render_fleet_page
    from askcache.storage.ledger import TrajectorySummary

    summaries = [
        TrajectorySummary(trajectory=f"t{n:03d}.json", runs=50, completed=50 - n % 40,
                          handed_back=n % 40)
        for n in range(TRAJECTORY_ROWS + 20)
    ]  # fmt: skip
    stats = stats_json("c", summaries)
    page = render_fleet_page(fleet_figures(summaries, stats=stats, ledger="l"))
    table = re.search(r"<table class='trajectories'>(.*?)</table>", page, re.S)
    assert table is not None
    names = re.findall(r"<tr><td>(t\d+\.json)</td>", table.group(1))
    assert len(names) == TRAJECTORY_ROWS
    assert names[0] == "t039.json"  # 39 hand-backs: the most (with t079 and t119)
    assert "t000.json" not in names  # none
    assert "and 20 more with fewer hand-backs" in page
    assert _embedded(page)["stats"] == stats  # the figures keep them all
