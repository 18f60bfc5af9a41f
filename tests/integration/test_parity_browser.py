"""Parity on real pages: two local sites on 127.0.0.1, rendered by headless Chromium."""

from __future__ import annotations

import argparse
import functools
import json
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from askcache.parity import BrowserCapture, ParityConfig
from askcache.parity.command import run_parity

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
