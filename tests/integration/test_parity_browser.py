"""Parity on real pages: two local sites on 127.0.0.1, rendered by headless Chromium."""

from __future__ import annotations

import argparse
import functools
import json
import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from askcache.cli.app import main
from askcache.foundation.errors import AskCacheError
from askcache.parity import BrowserCapture, EvidenceFolder, ParityConfig, capture_desktop
from askcache.parity.command import run_parity
from askcache.testing import VirtualDisplay

pytestmark = pytest.mark.integration

PAGE = """<!doctype html><html><head><style>
body {{ margin: 0; font-family: sans-serif; background: #fafafa; }}
header {{ background: #234; color: white; padding: 24px; font-size: 28px; }}
.cta {{ margin: 40px; padding: 16px 24px; background: {button}; color: white; display: inline-block; }}
.tall {{ height: 1400px; }}
</style></head><body><header>Acme parity</header>
<p style="margin: 40px">A paragraph that stays the same.</p>
<div class="cta">{label}</div><div class="tall"></div></body></html>"""


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def site(tmp_path: Path) -> Iterator[str]:
    root = tmp_path / "site"
    root.mkdir()
    (root / "rebuild.html").write_text(PAGE.format(button="#c62828", label="Buy now"))
    (root / "source.html").write_text(PAGE.format(button="#2e7d32", label="Sign up"))
    (root / "same.html").write_text(PAGE.format(button="#2e7d32", label="Sign up"))
    (root / "changed.html").write_text(PAGE.format(button="#c62828", label="Buy now"))
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _args(out: Path, source: str, candidate: str, **extra: object) -> argparse.Namespace:
    options = {
        "output": str(out),
        "judge": "deterministic",
        "device": "desktop",
        "full_page": False,
        "model": None,
    }
    return argparse.Namespace(source=source, candidate=candidate, **{**options, **extra})


def test_identical_pages_pass_and_a_visible_change_fails_with_evidence(
    site: str, tmp_path: Path
) -> None:
    assert run_parity(_args(tmp_path / "same", f"{site}/source.html", f"{site}/same.html")) == 0
    same = json.loads((tmp_path / "same" / "report.json").read_text())
    assert same["report"]["parityScore"] == 100.0
    assert (
        run_parity(_args(tmp_path / "changed", f"{site}/source.html", f"{site}/changed.html")) == 1
    )
    changed = json.loads((tmp_path / "changed" / "report.json").read_text())
    assert changed["verdict"]["verdict"] == "FAIL"
    assert changed["report"]["parityScore"] < 100
    areas = [gap["area"] for gap in changed["report"]["gaps"]]
    assert len(areas) == 1
    assert areas[0].startswith("top left")  # the button, under the header on the left
    shots = changed["verdict"]["screenshots"]
    assert set(shots) == {"source", "candidate", "diff"}
    assert all(Path(path).is_file() and Path(path).stat().st_size > 1000 for path in shots.values())
    assert all(Path(path).parent == tmp_path / "changed" / "evidence" for path in shots.values())


def test_verify_loop_on_pages_runs_the_fix_command_until_parity(site: str, tmp_path: Path) -> None:
    rebuild = tmp_path / "site" / "rebuild.html"
    fix = f"cp {tmp_path / 'site' / 'source.html'} {rebuild}"  # the "fix": rebuild it right
    out = tmp_path / "verify"
    source, rebuilt = f"{site}/source.html", f"{site}/rebuild.html"
    code = main(["verify", source, rebuilt, "--fix-command", fix, "--output", str(out)])
    assert code == 0
    history = out / "screenshots" / "verify-iterations"
    summary = json.loads((history / "summary.json").read_text())
    assert summary["exit"] == "success"
    assert [i["verdict"] for i in summary["iterations"]] == ["FAIL", "PASS"]
    assert summary["iterations"][0]["parity_score"] >= 99  # a high gap blocks success
    first = json.loads((history / "iteration-001" / "report.json").read_text())
    assert first["recommendations"][0].startswith("Make the top left")
    assert (history / "iteration-001" / "diff.png").is_file()
    assert rebuild.read_text() == (tmp_path / "site" / "source.html").read_text()


def test_a_page_that_does_not_load_is_an_error(site: str, tmp_path: Path) -> None:
    assert run_parity(_args(tmp_path, f"{site}/source.html", f"{site}/missing.html")) == 2
    report = json.loads((tmp_path / "report.json").read_text())
    assert "HTTP 404" in report["verdict"]["visual_differences"][0]["description"]


def test_mobile_and_full_page_sizes(site: str) -> None:
    with BrowserCapture(ParityConfig(settle_seconds=0)) as browser:
        desktop = browser.screenshot(f"{site}/source.html")
        mobile = browser.screenshot(f"{site}/source.html", device="mobile")
        full = browser.screenshot(f"{site}/source.html", full_page=True)
    assert desktop.size == (1280, 800)
    assert mobile.width == 390
    assert full.width == 1280
    assert full.height > 1400


class _Slow(SimpleHTTPRequestHandler):
    def do_GET(self) -> None:
        time.sleep(5)

    def log_message(self, format: str, *args: object) -> None:
        return


def test_page_load_timeout_comes_from_the_config(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with (
            BrowserCapture(ParityConfig(page_load_timeout_seconds=1)) as browser,
            pytest.raises(AskCacheError, match=r"did not load: .*Timeout 1000ms exceeded"),
        ):
            browser.screenshot(f"http://127.0.0.1:{server.server_address[1]}/")
    finally:
        server.shutdown()
        server.server_close()


def test_desktop_evidence_through_mss(tmp_path: Path) -> None:
    with VirtualDisplay(800, 600) as screen:
        image = capture_desktop(screen.display)
    assert image.size == (800, 600)
    path = EvidenceFolder(tmp_path).save(image, "desktop")
    assert path.parent == tmp_path / "evidence"
    assert path.name.endswith("_desktop.png")
    assert path.stat().st_size > 0
