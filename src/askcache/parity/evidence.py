"""Evidence: screenshots of pages (headless Chromium) and of the desktop, saved with timestamps.

Pages are rendered by Debian's ``chromium`` driven from Python through Playwright (its pip
package brings only the driver; the browser is the system's, nothing is downloaded):
``pip install 'askcache[parity]'``.
"""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from PIL import Image

from askcache.foundation.errors import AskCacheError
from askcache.foundation.screen.png import open_image
from askcache.parity.config import DEFAULT_CONFIG, ParityConfig

__all__ = ["BrowserCapture", "EvidenceFolder", "capture_desktop", "find_chromium"]

_CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


def find_chromium() -> str:
    """The system Chromium's path, or an error saying how to install it."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise AskCacheError("no Chromium found (Debian: apt-get install chromium)")


class EvidenceFolder:
    """Saves screenshots under ``root/evidence`` as ``YYYYmmdd-HHMMSS-ffffff_label.png``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root) / "evidence"

    def save(self, image: Image.Image, label: str) -> Path:
        """Write ``image`` and return its path."""
        self.root.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S-%f")
        path = self.root / f"{stamp}_{label}.png"
        image.save(path)
        return path


class BrowserCapture:
    """Screenshots of URLs in headless Chromium. Use as a context manager."""

    def __init__(
        self, config: ParityConfig = DEFAULT_CONFIG, *, executable: str | None = None
    ) -> None:
        self.config = config
        self.executable = executable or find_chromium()
        self._playwright: Any = None
        self._browser: Any = None

    def __enter__(self) -> BrowserCapture:
        try:
            from playwright.sync_api import sync_playwright
        except ImportError as exc:
            raise AskCacheError(
                "page screenshots need Playwright: pip install 'askcache[parity]'"
            ) from exc
        self._playwright = sync_playwright().start()
        self._browser = self._playwright.chromium.launch(
            executable_path=self.executable, args=_CHROMIUM_FLAGS
        )
        return self

    def __exit__(self, *exc: object) -> None:
        if self._browser is not None:
            self._browser.close()
        if self._playwright is not None:
            self._playwright.stop()

    def screenshot(
        self, url: str, *, device: Literal["desktop", "mobile"] = "desktop", full_page: bool = False
    ) -> Image.Image:
        """The page at ``url`` as an image.

        Raises:
            AskCacheError: the page did not load (HTTP error, timeout, unreachable), or its
                screenshot has more pixels than askcache decodes
                (:func:`askcache.foundation.screen.png.open_image`).
        """
        if self._browser is None:
            raise AskCacheError("BrowserCapture is not open; use it in a with block")
        viewport = self.config.desktop if device == "desktop" else self.config.mobile
        page = self._browser.new_page(
            viewport={"width": viewport.width, "height": viewport.height},
            is_mobile=device == "mobile",
        )
        try:
            try:
                response = page.goto(
                    url, timeout=self.config.page_load_timeout_seconds * 1000, wait_until="load"
                )
            except Exception as exc:
                raise AskCacheError(f"{url} did not load: {exc}".splitlines()[0]) from exc
            if response is not None and response.status >= 400:
                raise AskCacheError(f"{url} answered HTTP {response.status}")
            page.wait_for_timeout(self.config.settle_seconds * 1000)
            data = page.screenshot(full_page=full_page)
        finally:
            page.close()
        with open_image(data, f"the screenshot of {url}") as opened:
            return opened.convert("RGB")


def capture_desktop(display: str | None = None) -> Image.Image:
    """A screenshot of the whole desktop through mss (needs ``askcache[desktop]``)."""
    from askcache.tools.desktop import DesktopBackend

    backend = DesktopBackend(display)
    try:
        return backend.screenshot()
    finally:
        backend.close()
