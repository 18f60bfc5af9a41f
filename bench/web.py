"""Labelled pairs from real web pages: HTML manuals shipped by Debian packages, rendered by
Debian's ``chromium`` (headless, through Playwright) at 1280x800, edited in place.

Four sites in four visual styles, none designed by us: the Python documentation (Sphinx,
package python3-doc), the Node.js API documentation (its own generator, a dark sidebar;
package nodejs), the Valgrind manual (DocBook, plain; package valgrind) and the Debian
Reference (DocBook with its own stylesheet; package debian-reference-en). Nothing is fetched:
every request that is not a ``file://`` URL is aborted.

On each page a few visible links are the targets (the point is the link's centre, from the
DOM), and a small form is added at the top of the page, styled by the page's own CSS, for the
checkbox, radio and wide-field cases. Each change is a real edit in the page, made with a few
lines of script, then screenshotted:

- changed: a dialog over a dimming backdrop (the point under the backdrop), the element
  faded by ``opacity: 0.4``, a word swapped for another word of the same length from the
  page, one letter (the one drawn nearest the point) replaced by a letter of about the same
  width (c -> e, n -> u, i -> l: a single small glyph relabelled), the element removed,
  moved (80 px), its text swapped with another link's, a modal
  over the point, the page scrolled 150 px, another page, a checkbox or radio toggled,
  text left over at the far (left) end of a 520 px wide field whose middle is the point;
- same: a re-render, a JPEG re-encode, brightness +-3 %, a 1 px scroll, the page rendered at
  device scale 2 and downscaled (HiDPI), the pointer hovering another link, a caret in
  another field, an edit far from the point; and, reported apart, the page rendered at
  device scale 0.8, 1.25 and 1.5 and rescaled to 1280x800 (a same-aspect screen of another
  size); and, as a change, a word swapped on the page rendered at scale 0.8, 1.25, 1.5
  and 2 and rescaled (a relabel on a screen of another pixel density).

Labels are checked from pixels by :func:`bench.dataset.verify` (the element's box from the
DOM must differ for a change, and be identical for a re-render), far edits by
:func:`bench.dataset.is_far`, and a 1 px scroll by :func:`bench.dataset.only_scrolled` (the
region around the point moved by at most 1 px: the Node.js pages collapse their header on
the first scroll, which moves the content under the point by about 40 px; those pairs are
left out).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.dataset import (
    LabelError,
    Pair,
    is_far,
    jpeg,
    load_pairs,
    only_scrolled,
    save_pairs,
    verify,
)
from PIL import Image, ImageEnhance

VIEWPORT = {"width": 1280, "height": 800}
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


@dataclass(frozen=True)
class Site:
    """A manual shipped by a Debian package, and the pages of it used."""

    name: str
    package: str
    folder: str
    pages: tuple[str, ...]


SITES = [
    Site(
        "Python docs (Sphinx)",
        "python3-doc",
        "/usr/share/doc/python3/html",
        (
            "library/json.html",
            "library/glob.html",
            "howto/sorting.html",
        ),
    ),
    Site(
        "Valgrind manual (DocBook)",
        "valgrind",
        "/usr/share/doc/valgrind/html",
        (
            "manual-intro.html",
            "cg-manual.html",
            "bbv-manual.html",
        ),
    ),
    Site(
        "Node.js API docs",
        "nodejs",
        "/usr/share/doc/nodejs/api",
        ("path.html", "os.html", "querystring.html"),
    ),
    Site(
        "Debian Reference",
        "debian-reference-en",
        "/usr/share/debian-reference",
        ("pr01.en.html", "apa.en.html", "index.en.html"),
    ),
]

SCRIPT = r"""
(() => {
  const M = 90;
  const links = () => Array.from(document.querySelectorAll('a'));
  const visible = (a) => {
    const r = a.getBoundingClientRect();
    return a.getClientRects().length === 1 && r.width >= 24 && r.height >= 10 && r.height <= 40
      && r.left >= M && r.top >= M && r.right <= innerWidth - M && r.bottom <= innerHeight - M
      && getComputedStyle(a).visibility === 'visible';
  };
  const box = (el) => { const r = el.getBoundingClientRect();
    return [Math.floor(r.left), Math.floor(r.top), Math.ceil(r.right), Math.ceil(r.bottom)]; };
  const centre = (b) => [Math.floor((b[0] + b[2]) / 2), Math.floor((b[1] + b[3]) / 2)];
  window.__ac = {
    targets(n) {
      const picks = [];
      links().forEach((a, i) => {
        const t = a.textContent.trim();
        if (picks.length >= n || !visible(a) || !/[A-Za-z]{3,}/.test(t) || t.length > 40) return;
        const c = centre(box(a));
        if (picks.some(p => Math.abs(p.point[0] - c[0]) < 220 && Math.abs(p.point[1] - c[1]) < 170)) return;
        picks.push({index: i, point: c, box: box(a), text: t});
      });
      return picks;
    },
    link(i) { return links()[i]; },
    box(i) { return box(links()[i]); },
    form() {
      const div = document.createElement('div');
      div.id = 'ac-form';
      div.style.cssText = 'padding: 14px 0 14px 320px';
      div.innerHTML = '<label><input type="checkbox" id="ac-check"> Email me about releases</label>'
        + ' &nbsp; &nbsp; <label><input type="radio" name="ac-r" id="ac-r1" checked> Daily</label>'
        + ' &nbsp; <label><input type="radio" name="ac-r" id="ac-r2"> Weekly</label>'
        + '<div style="height: 70px"></div>'
        + '<label>Name <input type="text" id="ac-field" style="width: 520px"></label>';
      div.style.position = 'relative';
      div.style.zIndex = '1000';
      document.body.insertBefore(div, document.body.firstChild);
      window.scrollTo(0, 0);
      const ids = ['ac-check', 'ac-r2', 'ac-field'];
      return Object.fromEntries(ids.map(id => [id, box(document.getElementById(id))]));
    },
    wordOfLength(n, not) {
      const words = document.body.innerText.match(/[A-Za-z]+/g) || [];
      return words.find(w => w.length === n && w.toLowerCase() !== not.toLowerCase()) || null;
    },
    edit(kind, i, arg) {
      const a = links()[i];
      const b = box(a), c = centre(b);
      if (kind === 'backdrop') {
        const back = document.createElement('div');
        back.style.cssText = 'position:fixed;inset:0;background:rgba(0,0,0,0.5);z-index:99998';
        const dlg = document.createElement('div');
        const left = c[0] < 640 ? 860 : 100;
        dlg.style.cssText = 'position:fixed;top:60px;width:300px;height:140px;background:#fff;'
          + 'z-index:99999;padding:16px;border-radius:6px;font:15px sans-serif;left:' + left + 'px';
        dlg.textContent = 'Delete the selected files? This cannot be undone.';
        document.body.append(back, dlg);
      } else if (kind === 'opacity') {
        a.style.opacity = '0.4';
      } else if (kind === 'word') {
        const words = a.textContent.match(/[A-Za-z]{3,}/g) || [];
        const longest = words.sort((x, y) => y.length - x.length)[0];
        const other = this.wordOfLength(longest.length, longest)
          || longest.split('').reverse().join('');
        const walker = document.createTreeWalker(a, NodeFilter.SHOW_TEXT);
        while (walker.nextNode()) {
          const node = walker.currentNode;
          if (node.data.includes(longest)) { node.data = node.data.replace(longest, other); break; }
        }
        return other;
      } else if (kind === 'letter') {
        // One letter of the link's text, the one drawn nearest the point, replaced by a
        // letter of about the same width (c -> e, n -> u, i -> l ...): a single small glyph
        // relabelled, as a key 3 -> 8 or Save -> Sale.
        const twin = {a: 'o', o: 'a', c: 'e', e: 'c', n: 'u', u: 'n', b: 'h', h: 'b', i: 'l',
          l: 'i', r: 't', t: 'r', m: 'w', w: 'm', d: 'q', q: 'd', p: 'q', g: 'y', y: 'v',
          v: 'y', s: 'z', z: 's', k: 'h', f: 't', x: 's'};
        const walker = document.createTreeWalker(a, NodeFilter.SHOW_TEXT);
        const range = document.createRange();
        let best = null;
        while (walker.nextNode()) {
          const node = walker.currentNode;
          for (let k = 0; k < node.data.length; k++) {
            if (!(node.data[k] in twin)) continue;
            range.setStart(node, k); range.setEnd(node, k + 1);
            const r = range.getBoundingClientRect();
            const d = Math.abs((r.left + r.right) / 2 - c[0]) + Math.abs((r.top + r.bottom) / 2 - c[1]);
            if (r.width > 0 && (best === null || d < best.d)) best = {node, k, d};
          }
        }
        if (best === null || best.d > 20) return null;
        const old = best.node.data[best.k];
        best.node.data = best.node.data.slice(0, best.k) + twin[old] + best.node.data.slice(best.k + 1);
        return old + ' -> ' + twin[old];
      } else if (kind === 'removed') {
        a.style.visibility = 'hidden';
      } else if (kind === 'moved') {
        a.style.marginLeft = '80px';
      } else if (kind === 'swapped') {
        const t = a.textContent.trim();
        const other = links().find((o, j) => j !== i && visible(o) && o.textContent.trim() !== t
          && /[A-Za-z]{3,}/.test(o.textContent) && o.textContent.trim().length <= 40);
        if (!other) return null;
        const x = a.innerHTML; a.innerHTML = other.innerHTML; other.innerHTML = x;
      } else if (kind === 'modal') {
        const dlg = document.createElement('div');
        dlg.style.cssText = 'position:fixed;width:360px;height:190px;background:#fff;z-index:99999;'
          + 'border:1px solid #888;box-shadow:0 4px 18px rgba(0,0,0,.3);padding:16px;'
          + 'font:15px sans-serif;left:' + (c[0] - 180) + 'px;top:' + (c[1] - 95) + 'px';
        dlg.innerHTML = '<b>Sign in to continue</b><p>Your session has expired.</p>'
          + '<input style="width:300px"><p><button>Sign in</button></p>';
        document.body.append(dlg);
      } else if (kind === 'scrolled') {
        const y = scrollY; window.scrollBy(0, 150); return scrollY !== y;
      } else if (kind === 'scroll1') {
        const y = scrollY; window.scrollBy(0, 1); return scrollY !== y;
      } else if (kind === 'far') {
        const other = links().find(o => { if (!visible(o)) return false; const d = centre(box(o));
          return Math.abs(d[0] - c[0]) > 260 || Math.abs(d[1] - c[1]) > 200; });
        if (!other) return null;
        other.textContent = other.textContent.trim() + ' (new)';
        return true;
      } else if (kind === 'hover') {
        const other = links().find(o => { if (!visible(o)) return false; const d = centre(box(o));
          return Math.abs(d[0] - c[0]) > 260 || Math.abs(d[1] - c[1]) > 200; });
        return other ? centre(box(other)) : null;
      }
      return true;
    },
  };
})();
"""


@contextmanager
def browser() -> Iterator[Any]:
    """Debian's chromium through Playwright; every non-file request aborted."""
    from playwright.sync_api import sync_playwright

    executable = shutil.which("chromium")
    if executable is None:
        raise RuntimeError("chromium is missing (Debian: apt-get install chromium)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=FLAGS)
        try:
            yield launched
        finally:
            launched.close()


class Renderer:
    """Opens a page in a fresh tab at a device scale, runs an edit, takes a screenshot."""

    def __init__(self, chromium: Any) -> None:
        self.chromium = chromium
        self.contexts: dict[float, Any] = {}

    def context(self, scale: float) -> Any:
        if scale not in self.contexts:
            context = self.chromium.new_context(viewport=VIEWPORT, device_scale_factor=scale)
            context.route(
                "**/*",
                lambda route: (
                    route.continue_() if route.request.url.startswith("file:") else route.abort()
                ),
            )
            self.contexts[scale] = context
        return self.contexts[scale]

    def open(self, url: str, *, scale: float = 1.0, form: bool = False) -> Any:
        page = self.context(scale).new_page()
        page.goto(url, wait_until="load")
        page.add_script_tag(content=SCRIPT)
        if form:
            page.evaluate("window.__ac.form()")
        page.wait_for_timeout(120)
        return page

    @staticmethod
    def shot(page: Any, *, caret: bool = False) -> Image.Image:
        import io

        data = page.screenshot(caret="initial" if caret else "hide", animations="disabled")
        image = Image.open(io.BytesIO(data)).convert("RGB")
        if image.size != (VIEWPORT["width"], VIEWPORT["height"]):
            image = image.resize((VIEWPORT["width"], VIEWPORT["height"]), Image.Resampling.LANCZOS)
        return image

    def render(self, url: str, *, scale: float = 1.0, form: bool = False) -> Image.Image:
        page = self.open(url, scale=scale, form=form)
        try:
            return self.shot(page, caret=form)
        finally:
            page.close()


def _noise(base: Image.Image) -> dict[str, Image.Image]:
    """The synthetic "same" screens of one screenshot, made once and shared by its points."""
    return {
        "lossy JPEG re-encode": jpeg(base),
        "3 % brighter": ImageEnhance.Brightness(base).enhance(1.03),
        "3 % darker": ImageEnhance.Brightness(base).enhance(0.97),
    }


def _same_noise(
    app: str, point: tuple[int, int], base: Image.Image, noise: dict[str, Image.Image]
) -> list[Pair]:
    return [Pair(app, case, False, point, base, after) for case, after in noise.items()]


TARGETS = 2
"""Links per page used as targets (spread at least 220 px apart)."""
RESCALES = (0.8, 1.25, 1.5)
RELABEL_SCALES = (0.8, 1.25, 1.5, 2.0)
"""A word swapped on a page rendered at each of these scales and rescaled: a relabel on a
screen of another pixel density (scale 2: a HiDPI display)."""


CHANGES = {
    "dialog over a dimming backdrop": "backdrop",
    "faded (opacity 0.4)": "opacity",
    "word swapped (same length)": "word",
    "one letter changed": "letter",
    "element removed": "removed",
    "moved (80 px)": "moved",
    "swapped with another link": "swapped",
    "modal over the point": "modal",
    "scrolled 150 px": "scrolled",
}
"""Change kinds made by an edit at the target link: case -> the edit's name in SCRIPT."""


def page_pairs(render: Renderer, site: Site, page_name: str, other: Image.Image) -> list[Pair]:
    """Every pair of one page: up to three link targets and the added form."""
    app = site.name
    url = Path(site.folder, page_name).as_uri()
    page = render.open(url)
    try:
        base = render.shot(page)
        targets = page.evaluate(f"window.__ac.targets({TARGETS})")
    finally:
        page.close()
    rerender = render.render(url)
    hidpi = render.render(url, scale=2.0)
    rescaled = {scale: render.render(url, scale=scale) for scale in RESCALES}
    pairs: list[Pair] = []
    noise = _noise(base)

    def edited(kind: str, index: int, scale: float = 1.0) -> tuple[Image.Image | None, Any]:
        tab = render.open(url, scale=scale)
        try:
            result = tab.evaluate("([k, i]) => window.__ac.edit(k, i)", [kind, index])
            if result is None or result is False:
                return None, result
            if kind == "hover":
                tab.mouse.move(*result)
                tab.wait_for_timeout(150)
            else:
                tab.wait_for_timeout(60)
            return render.shot(tab), result
        finally:
            tab.close()

    for target in targets:
        point = tuple(target["point"])
        element = tuple(target["box"])
        for case, kind in CHANGES.items():
            after, _ = edited(kind, target["index"])
            if after is not None:
                pairs.append(Pair(app, case, True, point, base, after, element))  # type: ignore[arg-type]
        pairs.append(Pair(app, "another page", True, point, base, other, element))  # type: ignore[arg-type]
        for scale in RELABEL_SCALES:
            after, _ = edited("word", target["index"], scale)
            if after is not None:
                case = f"word swapped, page at scale {scale:g} rescaled"
                pairs.append(Pair(app, case, True, point, base, after))  # type: ignore[arg-type]
        pairs.append(Pair(app, "re-render", False, point, base, rerender, element))  # type: ignore[arg-type]
        pairs += _same_noise(app, point, base, noise)  # type: ignore[arg-type]
        pairs.append(Pair(app, "HiDPI render (scale 2) downscaled", False, point, base, hidpi))  # type: ignore[arg-type]
        for scale, image in rescaled.items():
            case = f"same page at scale {scale} rescaled"
            pairs.append(Pair(app, case, False, point, base, image))  # type: ignore[arg-type]
        after, _ = edited("scroll1", target["index"])
        if after is not None:
            pairs.append(Pair(app, "1 px scroll", False, point, base, after))  # type: ignore[arg-type]
        for case, kind in (("hover elsewhere", "hover"), ("edit far from the point", "far")):
            after, _ = edited(kind, target["index"])
            if after is not None and is_far(base, after, point):  # type: ignore[arg-type]
                pairs.append(Pair(app, case, False, point, base, after))  # type: ignore[arg-type]
    pairs += form_pairs(render, app, url)
    return pairs


def form_pairs(render: Renderer, app: str, url: str) -> list[Pair]:
    """The added form: checkbox and radio toggled, text left over in the wide field, caret."""
    base = render.render(url, form=True)
    tab = render.open(url, form=True)
    try:
        boxes = tab.evaluate(
            "Object.fromEntries(['ac-check','ac-r2','ac-field'].map(id => { const r ="
            " document.getElementById(id).getBoundingClientRect(); return [id, [Math.floor(r.left),"
            " Math.floor(r.top), Math.ceil(r.right), Math.ceil(r.bottom)]]; }))"
        )
        rerender = render.shot(tab, caret=True)
    finally:
        tab.close()

    def after(script: str) -> Image.Image:
        tab = render.open(url, form=True)
        try:
            tab.evaluate(script)
            tab.wait_for_timeout(60)
            return render.shot(tab, caret=True)
        finally:
            tab.close()

    def centre(box: list[int]) -> tuple[int, int]:
        return ((box[0] + box[2]) // 2, (box[1] + box[3]) // 2)

    check, radio, field = boxes["ac-check"], boxes["ac-r2"], boxes["ac-field"]
    pairs = [
        Pair(
            app,
            "checkbox toggled",
            True,
            centre(check),
            base,
            after("document.getElementById('ac-check').checked = true"),
            tuple(check),  # type: ignore[arg-type]
        ),
        Pair(
            app,
            "radio toggled",
            True,
            centre(radio),
            base,
            after("document.getElementById('ac-r2').checked = true"),
            tuple(radio),  # type: ignore[arg-type]
        ),
        Pair(
            app,
            "text left over in a wide field",
            True,
            centre(field),
            base,
            after("document.getElementById('ac-field').value = 'alice'"),
            tuple(field),  # type: ignore[arg-type]
        ),
    ]
    focused = after("document.getElementById('ac-field').focus()")
    for box in (check, radio):
        point = centre(box)
        pairs.append(Pair(app, "re-render", False, point, base, rerender, tuple(box)))  # type: ignore[arg-type]
        if is_far(base, focused, point):
            pairs.append(Pair(app, "caret in another field", False, point, base, focused))
    pairs.append(Pair(app, "re-render", False, centre(field), base, rerender, tuple(field)))  # type: ignore[arg-type]
    pairs += _same_noise(app, centre(field), base, _noise(base))
    return pairs


def missing_sites() -> list[Site]:
    """Sites whose Debian package is not installed (their folder is absent)."""
    return [site for site in SITES if not Path(site.folder, site.pages[0]).exists()]


def _checked(pairs: list[Pair]) -> list[Pair]:
    """The pairs whose labels the pixels confirm; the others are left out with a message
    (an edit that did not show, e.g. an element under a page's fixed sidebar)."""
    kept = []
    for pair in pairs:
        try:
            verify(pair)
        except LabelError as exc:
            print(f"left out: {exc}", flush=True)
            continue
        if pair.case == "1 px scroll" and not only_scrolled(pair.before, pair.after, pair.point):
            print(
                f"left out: {pair.app}: 1 px scroll at {pair.point} moved more than 1 px "
                "around the point (the page re-laid itself out when scrolled)",
                flush=True,
            )
            continue
        kept.append(pair)
    return kept


def web_pairs(folder: Path, *, reuse: bool = False, sites: list[Site] | None = None) -> list[Pair]:
    """The pairs of every installed site (a missing one is skipped with a message), each
    page's saved in its own folder under ``folder``; ``reuse`` loads pages saved before."""
    chosen = [s for s in (sites or SITES) if s not in missing_sites()]
    for site in missing_sites():
        print(f"skipping {site.name}: install the Debian package {site.package}")
    pairs: list[Pair] = []
    with browser() as chromium:
        render = Renderer(chromium)
        for number, site in enumerate(chosen):
            # "another page": the first page of the next site
            neighbour = chosen[(number + 1) % len(chosen)]
            other = render.render(Path(neighbour.folder, neighbour.pages[0]).as_uri())
            for page_name in site.pages:
                place = folder / f"{site.package}-{Path(page_name).stem}"
                if reuse and (place / "pairs.json").exists():
                    pairs += _checked(load_pairs(place))
                else:
                    made = _checked(page_pairs(render, site, page_name, other))
                    save_pairs(made, place)
                    pairs += made
                print(f"{site.name}, {page_name}: {len(pairs)} pairs so far", flush=True)
    return pairs
