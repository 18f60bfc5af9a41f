"""A Debian HTML manual in Debian's Chromium, for ``bench/rerender.py``: the unseen page.

    python bench/rerender_page.py LOG [--relabel OLD NEW] [--chromium-flag FLAG ...]

Serves libffi's manual (Debian's ``libffi-dev``: ``/usr/share/doc/libffi8/html``, GNU
Texinfo's HTML) on 127.0.0.1 (a free port) and opens its chapter "Using libffi" in a
Chromium app window (no toolbar) at the screen's top left. Every page the browser asks for is appended
to ``LOG``, one path a line: that is how the benchmark knows, from the application's side,
which link was followed. ``--relabel OLD NEW`` serves the pages with the link text ``OLD``
shown as ``NEW`` (the same link, another label). Runs until Chromium exits or the process
group is stopped. Nothing is fetched from the network.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.weblist import with_flags

MANUAL = Path("/usr/share/doc/libffi8/html")
START = "Using-libffi.html"
WINDOW = ["--window-position=0,0", "--window-size=760,560"]


def serve(log: Path, relabel: tuple[str, str] | None) -> ThreadingHTTPServer:
    """A server of :data:`MANUAL`, noting each path asked for in ``log``."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0].lstrip("/") or "index.html"
            with log.open("a") as out:
                out.write(path + "\n")
            target = (MANUAL / path).resolve()
            if MANUAL not in target.parents or not target.is_file():
                self.send_response(404)
                self.end_headers()
                return
            body = target.read_bytes()
            kind = "text/html; charset=utf-8" if target.suffix == ".html" else "text/plain"
            if relabel is not None and target.suffix == ".html":
                old, new = relabel
                body = body.replace(f">{old}</a>".encode(), f">{new}</a>".encode())
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--relabel", nargs=2, metavar=("OLD", "NEW"))
    parser.add_argument("--chromium-flag", action="append", default=[])
    args = parser.parse_args(argv)
    server = serve(args.log, tuple(args.relabel) if args.relabel else None)
    url = f"http://127.0.0.1:{server.server_address[1]}/{START}"
    flags = with_flags([*WINDOW, *args.chromium_flag])
    browser = subprocess.Popen(["chromium", *flags, f"--app={url}"])

    def stop(signum: int, frame: FrameType | None) -> None:
        browser.terminate()

    signal.signal(signal.SIGTERM, stop)
    try:
        return browser.wait()
    finally:
        server.shutdown()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
