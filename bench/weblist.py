"""A list editor as a web page, in Debian's Chromium: the drift benchmark's web application.

    python bench/weblist.py [--save-button LABEL] [--font-size PX] [--chromium-flag FLAG ...]
                            FILE [FILE ...]

Serves the last file in a ``<textarea>`` on 127.0.0.1 (a free port) and opens it in a
Chromium app window (no toolbar) at the screen's top left; ctrl+s in the page sends the
text back and the server writes it to the file. The options are for ``bench/rerender.py``
(without them the page is the drift benchmark's): ``--save-button`` adds a button with
that label under the list that saves as ctrl+s does, ``--font-size`` draws the page's text
at that size (16 px otherwise), ``--chromium-flag`` passes a flag to Chromium (one given
here replaces a default one of the same name). Runs until Chromium exits or the process
group is stopped. Nothing is fetched from the network: the page is self-contained, and
Chromium runs with its background networking off.
"""

from __future__ import annotations

import argparse
import html
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>List editor</title>
<style>
body {{ margin: 16px; background: #f4f4f0; font: {size}px "DejaVu Sans Mono", monospace; }}
textarea {{ width: 560px; height: 300px; font: inherit; padding: 6px;
           border: 1px solid #888; background: white; }}
#status {{ margin-top: 8px; color: #333; }}
button {{ margin-top: 8px; font: inherit; padding: 4px 16px; }}
</style></head>
<body>
<textarea id="text" spellcheck="false">{text}</textarea>{button}
<div id="status">{name}</div>
<script>
const text = document.getElementById("text"), status = document.getElementById("status");
function save() {{
  fetch("/save", {{ method: "POST", body: text.value }})
    .then(() => {{ status.textContent = "Saved"; }});
}}
document.addEventListener("keydown", (event) => {{
  if (event.ctrlKey && event.key === "s") {{
    event.preventDefault();
    save();
  }}
}});
const button = document.getElementById("save");
if (button) button.addEventListener("click", save);
</script>
</body></html>
"""

FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-translate",
    "--disable-features=Translate,MediaRouter",
    "--password-store=basic",
    "--force-device-scale-factor=1",
    "--window-position=0,0",
    "--window-size=640,420",
]


def with_flags(extra: list[str]) -> list[str]:
    """:data:`FLAGS` with ``extra`` added; one of ``extra`` replaces a default of the same
    name (``--force-device-scale-factor=2``)."""
    names = {flag.split("=", 1)[0] for flag in extra}
    return [f for f in FLAGS if f.split("=", 1)[0] not in names] + extra


def serve(path: Path, button: str | None = None, size: int = 16) -> ThreadingHTTPServer:
    """A server of ``path`` as the editor page, saving what the page sends back."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = PAGE.format(
                text=html.escape(path.read_text()),
                name=html.escape(path.name),
                size=size,
                button=""
                if button is None
                else f'\n<br><button id="save">{html.escape(button)}</button>',
            )
            self._answer(body.encode())

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            path.write_text(self.rfile.read(length).decode())
            self._answer(b"saved")

        def _answer(self, body: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
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
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--save-button", metavar="LABEL")
    parser.add_argument("--font-size", type=int, default=16, metavar="PX")
    parser.add_argument("--chromium-flag", action="append", default=[])
    args = parser.parse_args(argv)
    server = serve(args.files[-1], args.save_button, args.font_size)
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    browser = subprocess.Popen(["chromium", *with_flags(args.chromium_flag), f"--app={url}"])

    def stop(signum: int, frame: FrameType | None) -> None:
        browser.terminate()

    signal.signal(signal.SIGTERM, stop)
    try:
        return browser.wait()
    finally:
        server.shutdown()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
