"""``askcache dashboard --serve``: the fleet page over HTTP, on 127.0.0.1 only.

A GET of ``/`` builds the page again from the ledger (so a reload shows the latest runs) and
answers it; any other path is 404, any other method 405. The server listens on the loopback
address alone: to show it elsewhere, write the page (``-o``) and publish the file, or put an
authenticating proxy in front. It runs until interrupted (Ctrl-C).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["LOOPBACK", "fleet_server", "serve_fleet_page"]

logger = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
"""The only address the page is served on."""


def fleet_server(page: Callable[[], str], *, port: int) -> ThreadingHTTPServer:
    """A server (not started) answering ``GET /`` with ``page()`` on ``127.0.0.1:port``
    (``port`` 0: any free one; the server's ``server_address`` says which)."""

    class _Handler(BaseHTTPRequestHandler):
        server_version = "askcache-dashboard"

        def do_GET(self) -> None:
            if self.path.split("?", 1)[0] not in ("/", "/index.html"):
                self.send_error(HTTPStatus.NOT_FOUND, "the fleet page is at /")
                return
            try:
                body = page().encode("utf-8")
            except Exception as exc:  # the ledger is down: say so, keep serving
                logger.warning("could not build the fleet page: %s", exc)
                self.send_error(HTTPStatus.SERVICE_UNAVAILABLE, str(exc)[:300])
                return
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            logger.info("%s %s", self.address_string(), format % args)

    server = ThreadingHTTPServer((LOOPBACK, port), _Handler)
    server.daemon_threads = True
    return server


def serve_fleet_page(page: Callable[[], str], *, port: int) -> None:
    """Serve ``page()`` on ``http://127.0.0.1:port/`` until interrupted; the address is
    printed on standard output first."""
    server = fleet_server(page, port=port)
    host, bound = server.server_address[:2]
    print(f"serving the fleet page on http://{host!s}:{bound}/ (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
    finally:
        server.server_close()
