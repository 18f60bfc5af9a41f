"""The labelled screenshot pairs the accuracy benchmark measures, made from real applications.

Every pair is two screenshots of a 1280x800 Xvfb screen and the exact point an action would
target, taken from the application's own geometry (the Tk form's published widget boxes,
xwininfo for the Xaw programs xmessage and xcalc). The label says whether the element under
that point changed between the two screenshots:

- changed: the element's label replaced by a word of similar length (Save -> Open, 8 -> 3,
  sin -> cos), the element removed, disabled, moved, covered by a dialog, another mode,
  another screen, scrolled;
- same: a re-render, a lossy JPEG re-encode, a change far from the point (a status line, the
  calculator's display, a clock), a caret elsewhere, a 1 px scroll, a 3 % brightness change,
  the same application on a screen of another size scaled to this one.

Labels are checked from pixels where the pair carries the element's box: a "changed" pair
must differ inside it, a "same" re-render must not; a change "far from the point" must lie
outside the largest region measured. :func:`build_pairs` builds them (about a minute),
:func:`save_pairs` and :func:`load_pairs` keep them in ``bench/out/pairs/``.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageChops, ImageEnhance

from askcache.fingerprint.step import Box, crop_region
from askcache.testing import TkFormApp, VirtualDisplay, run_on_display
from askcache.tools import ComputerTool
from askcache.tools.desktop import DesktopBackend

SCREEN = (1280, 800)
FAR = 82
"""A change counts as far from the point when it lies outside the largest region measured
(160 px, so 80 px each way) moved by the largest shift tolerance."""


@dataclass
class Pair:
    """Two screenshots and the point an action targets; ``changed`` is the ground truth."""

    app: str
    case: str
    changed: bool
    point: tuple[int, int]
    before: Image.Image
    after: Image.Image
    element: Box | None = None
    """The targeted element's box on ``before``, when the label is checked from pixels."""


class LabelError(AssertionError):
    """A pair whose pixels contradict its label."""


def verify(pair: Pair) -> None:
    """Check the label against the pixels where that is possible.

    Raises:
        LabelError: a "changed" pair identical inside the element's box, or a re-render
            that differs there.
    """
    if pair.element is None:
        return
    differs = pair.before.crop(pair.element).tobytes() != pair.after.crop(pair.element).tobytes()
    if differs != pair.changed:
        raise LabelError(
            f"{pair.app}: {pair.case} at {pair.point} is labelled "
            f"{'changed' if pair.changed else 'same'} but its element "
            f"{'differs' if differs else 'is identical'}"
        )


def is_far(before: Image.Image, after: Image.Image, point: tuple[int, int]) -> bool:
    """True when every pixel that differs lies more than :data:`FAR` px from ``point``."""
    box = ImageChops.difference(before, after).getbbox()
    if box is None:
        return True
    x, y = point
    return (
        box[2] <= x - FAR or box[0] > x + FAR or box[3] <= y - FAR or box[1] > y + FAR
    )  # right/bottom exclusive


def only_scrolled(
    before: Image.Image, after: Image.Image, point: tuple[int, int], side: int = 100
) -> bool:
    """True when every pixel of the ``side`` px square around ``point`` on ``after`` equals
    (within 2 levels) the same pixel of ``before`` or one a pixel above or below: a page
    scrolled by at most 1 px, its fixed parts left where they were. A page whose layout moved
    when scrolled (a header collapsing on the first scroll) is not."""
    x, y = point
    half = side // 2
    box = (x - half - 1, y - half - 1, x + half + 1, y + half + 1)
    old = np.asarray(crop_region(before, box).convert("L"), dtype=np.int16)
    new = np.asarray(crop_region(after, box).convert("L"), dtype=np.int16)[1:-1, 1:-1]
    explained = np.zeros(new.shape, dtype=bool)
    for dy in (-1, 0, 1):
        explained |= np.abs(new - old[1 + dy : old.shape[0] - 1 + dy, 1:-1]) <= 2
    return bool(explained.all())


def shift(image: Image.Image, dy: int) -> Image.Image:
    """The screen scrolled by ``dy`` pixels (content moves up), new rows white."""
    shifted = ImageChops.offset(image, 0, -dy)
    if dy > 0:
        shifted.paste((255, 255, 255), (0, image.height - dy, image.width, image.height))
    return shifted


def jpeg(image: Image.Image, quality: int = 80) -> Image.Image:
    """``image`` re-encoded as a lossy JPEG."""
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=quality)
    return Image.open(io.BytesIO(buffer.getvalue())).convert("RGB")


def noise_cases(app: str, point: tuple[int, int], image: Image.Image) -> list[Pair]:
    """The synthetic "same" cases and the scroll "changed" case for one screenshot."""
    return [
        Pair(app, "lossy JPEG re-encode", False, point, image, jpeg(image)),
        Pair(app, "1 px scroll", False, point, image, shift(image, 1)),
        Pair(
            app, "3 % brighter", False, point, image, ImageEnhance.Brightness(image).enhance(1.03)
        ),
        Pair(app, "scrolled 60 px", True, point, image, shift(image, 60)),
    ]


def _center(box: Box) -> tuple[int, int]:
    return ((box[0] + box[2]) // 2, (box[1] + box[3]) // 2)


class Desk:
    """One Xvfb with a screenshot function and helpers to run programs on it."""

    def __init__(self, display: str, backend: DesktopBackend) -> None:
        self.display, self.backend = display, backend
        self.env = {**os.environ, "DISPLAY": display}

    def shot(self) -> Image.Image:
        time.sleep(0.4)
        return self.backend.screenshot().convert("RGB")

    def program(self, *command: str) -> AbstractContextManager[None]:
        return run_on_display(self.display, *command)

    def windows(self) -> list[Box]:
        """X windows as absolute boxes (left, top, right, bottom), from xwininfo."""
        text = subprocess.run(
            ["xwininfo", "-root", "-tree"], env=self.env, capture_output=True, text=True, check=True
        ).stdout
        boxes = []
        for match in re.finditer(r"(\d+)x(\d+)\+-?\d+\+-?\d+\s+\+(-?\d+)\+(-?\d+)", text):
            width, height, x, y = (int(v) for v in match.groups())
            boxes.append((x, y, x + width, y + height))
        return boxes


def tk_pairs(desk: Desk, folder: Path) -> list[Pair]:
    """The Tk contact form: variants of its Save and Clear buttons and its Name field."""

    def shot(*options: str, layout: str = "original") -> tuple[Image.Image, dict[str, Box]]:
        with TkFormApp(
            desk.display, folder / "state.json", layout=layout, extra_args=list(options)
        ) as app:  # type: ignore[arg-type]
            image = desk.shot()
            widgets = app.state()["widgets"]
            return image, {name: tuple(box) for name, box in widgets.items()}  # type: ignore[misc]

    app = "Tk form"
    base, widgets = shot()
    save, clear, name = widgets["save"], widgets["clear"], widgets["name"]
    rerender, _ = shot()
    banner = shot(layout="banner")[0]
    dialog = shot("--dialog")[0]
    swapped = shot(layout="swapped")[0]
    pairs = [
        Pair(
            app,
            "label replaced (Save -> Open)",
            True,
            _center(save),
            base,
            shot("--save-label", "Open")[0],
            save,
        ),
        Pair(app, "element removed", True, _center(save), base, shot("--hide-save")[0], save),
        Pair(app, "disabled", True, _center(save), base, shot("--disabled")[0], save),
        Pair(app, "moved (a banner pushes the form down)", True, _center(save), base, banner, save),
        Pair(app, "moved (a banner pushes the form down)", True, _center(name), base, banner, name),
        Pair(app, "covered by a dialog", True, _center(save), base, dialog, save),
        Pair(app, "covered by a dialog", True, _center(clear), base, dialog, clear),
        Pair(app, "buttons swapped", True, _center(save), base, swapped, save),
        Pair(app, "buttons swapped", True, _center(clear), base, swapped, clear),
    ]
    status = shot("--status", "Saved Grace Hopper")[0]
    caret = shot("--focus", "email")[0]
    for element in (save, clear, name):
        pairs.append(Pair(app, "re-render", False, _center(element), base, rerender, element))
        pairs += noise_cases(app, _center(element), base)
        if is_far(base, status, _center(element)):
            pairs.append(
                Pair(
                    app,
                    "change far from the point (status line)",
                    False,
                    _center(element),
                    base,
                    status,
                    element,
                )
            )
        if element != name:
            pairs.append(
                Pair(
                    app,
                    "caret elsewhere (Email focused)",
                    False,
                    _center(element),
                    base,
                    caret,
                    element,
                )
            )
    for width, height, zoom in ((1920, 1200, 1.5), (1024, 640, 0.8)):
        with VirtualDisplay(width, height) as other:
            backend = DesktopBackend(other.display)
            try:
                with TkFormApp(other.display, folder / "state.json", zoom=zoom):
                    time.sleep(0.4)
                    capture = ComputerTool(backend).capture().convert("RGB")
            finally:
                backend.close()
        scaled = capture.resize(base.size, Image.Resampling.LANCZOS)
        for element in (save, clear, name):
            case = f"same app, {width}x{height} screen rescaled"
            pairs.append(Pair(app, case, False, _center(element), base, scaled))
        with VirtualDisplay(width, height) as other:
            backend = DesktopBackend(other.display)
            try:
                with TkFormApp(
                    other.display,
                    folder / "state.json",
                    zoom=zoom,
                    extra_args=["--save-label", "Open"],
                ):
                    time.sleep(0.4)
                    relabelled = ComputerTool(backend).capture().convert("RGB")
            finally:
                backend.close()
        case = f"label replaced (Save -> Open), {width}x{height} screen rescaled"
        relabelled = relabelled.resize(base.size, Image.Resampling.LANCZOS)
        pairs.append(Pair(app, case, True, _center(save), base, relabelled))
    return pairs


XMESSAGE_TEXT = "Unsaved changes in report.txt. Save them before closing?"


def xmessage_pairs(desk: Desk, other_screen: Image.Image, position: tuple[int, int]) -> list[Pair]:
    """xmessage's dialog at ``position``: its Save and Cancel buttons relabelled, removed, swapped."""
    app = "xmessage" if position != (0, 0) else "xmessage at the screen corner"
    geometry = f"+{position[0]}+{position[1]}"

    def shot(buttons: str) -> tuple[Image.Image, list[Box]]:
        with desk.program("xmessage", "-geometry", geometry, "-buttons", buttons, XMESSAGE_TEXT):
            found = sorted(
                (
                    b
                    for b in desk.windows()
                    if 10 < b[3] - b[1] < 30 and b[2] - b[0] < 120 and b[1] > position[1] + 10
                ),
                key=lambda b: b[0],
            )
            return desk.shot(), found

    base, (save, cancel) = shot("Save,Cancel")
    rerender = shot("Save,Cancel")[0]
    pairs = [
        Pair(
            app,
            "label replaced (Save -> Open)",
            True,
            _center(save),
            base,
            shot("Open,Cancel")[0],
            save,
        ),
        Pair(
            app,
            "label replaced (Save -> Stop)",
            True,
            _center(save),
            base,
            shot("Stop,Cancel")[0],
            save,
        ),
        Pair(
            app,
            "label replaced (Cancel -> Delete)",
            True,
            _center(cancel),
            base,
            shot("Save,Delete")[0],
            cancel,
        ),
        Pair(app, "element removed", True, _center(cancel), base, shot("Save")[0], cancel),
        Pair(app, "buttons swapped", True, _center(save), base, shot("Cancel,Save")[0], save),
        Pair(app, "another screen", True, _center(save), base, other_screen, save),
    ]
    for element in (save, cancel):
        pairs.append(Pair(app, "re-render", False, _center(element), base, rerender, element))
        pairs += noise_cases(app, _center(element), base)
    return pairs


XCALC_SIZE = "260x360"
XCALC_RELABEL = {
    4: "AC/C",
    7: "cos",
    13: "exp",
    17: "not",
    20: "round",
    30: "shl",
    36: "RCL",
    38: "3",
    43: "6",
    50: "-",
    52: "8",
    55: "+",
}
"""Buttons of xcalc's TI layout (numbered as in its app-defaults, row by row) and a label of
similar length to give each: most are another key's label."""
XCALC_CORNER_RELABEL = {1: "x^2", 2: "1/x", 6: "DRG", 11: "p"}


class XCalc:
    """xcalc at one position, optionally with X resources changing its buttons."""

    def __init__(self, desk: Desk, position: tuple[int, int]) -> None:
        self.desk, self.position = desk, position

    def geometry(self, dx: int = 0) -> str:
        return f"{XCALC_SIZE}+{self.position[0] + dx}+{self.position[1]}"

    @contextmanager
    def running(self, *resources: str, dx: int = 0, rpn: bool = False) -> Iterator[None]:
        command = ["xcalc", "-geometry", self.geometry(dx)]
        command += ["-rpn"] if rpn else []
        for resource in resources:
            command += ["-xrm", f"XCalc*ti.{resource}"]
        with self.desk.program(*command):
            yield

    def shot(self, *resources: str, dx: int = 0, rpn: bool = False) -> Image.Image:
        with self.running(*resources, dx=dx, rpn=rpn):
            return self.desk.shot()

    def buttons(self) -> list[Box]:
        """The 55 buttons of the TI layout, in app-defaults order (row by row)."""
        left, top = self.position
        with self.running():
            time.sleep(0.4)
            found = [
                b
                for b in self.desk.windows()
                if 40 < b[2] - b[0] < 60 and 15 < b[3] - b[1] < 30 and b[0] >= left and b[1] >= top
            ]
        found.sort(key=lambda b: (b[1], b[0]))
        if len(found) != 55:
            raise LabelError(f"expected xcalc's 55 buttons, found {len(found)}")
        return found


def _key_cases(
    app: str,
    calc: XCalc,
    *,
    base: Image.Image,
    rerender: Image.Image,
    number: int,
    label: str,
    key: Box,
) -> list[Pair]:
    """One key: relabelled (changed), re-rendered, and the synthetic noise cases."""
    point = _center(key)
    relabelled = calc.shot(f"button{number}.label: {label}")
    return [
        Pair(app, "label replaced", True, point, base, relabelled, key),
        Pair(app, "re-render", False, point, base, rerender, key),
        *noise_cases(app, point, base),
    ]


def xcalc_pairs(desk: Desk, other_screen: Image.Image) -> tuple[list[Pair], Image.Image]:
    """xcalc in the middle of the screen (12 keys, every case) and at the corner (4 keys)."""
    app = "xcalc"
    calc = XCalc(desk, (300, 200))
    buttons = calc.buttons()
    base = calc.shot()
    rerender = calc.shot()
    moved = calc.shot(dx=51)  # one column to the right: another key under each point
    rpn = calc.shot(rpn=True)
    with calc.running():
        desk.backend.move(_center(buttons[0]))
        desk.backend.type_text("12345")
        typed = desk.shot()
    with (
        calc.running(),
        desk.program(
            "xclock", "-digital", "-update", "1", "-strftime", "%H:%M:%S", "-geometry", "+900+60"
        ),
    ):
        clock_before = desk.shot()
        time.sleep(1.2)
        clock_after = desk.shot()
    pairs = []
    for number, label in XCALC_RELABEL.items():
        key = buttons[number - 1]
        point = _center(key)

        pairs += [
            *_key_cases(
                app, calc, base=base, rerender=rerender, number=number, label=label, key=key
            ),
            Pair(
                app,
                "disabled",
                True,
                point,
                base,
                calc.shot(f"button{number}.sensitive: false"),
                key,
            ),
            Pair(
                app,
                "element removed",
                True,
                point,
                base,
                calc.shot(f"button{number}.mappedWhenManaged: false"),
                key,
            ),
            Pair(app, "moved (window one key to the right)", True, point, base, moved, key),
            Pair(app, "another screen", True, point, base, other_screen, key),
            Pair(app, "clock changed elsewhere", False, point, clock_before, clock_after, key),
        ]
        if base.crop(key).tobytes() != rpn.crop(key).tobytes():
            pairs.append(Pair(app, "another mode (RPN layout)", True, point, base, rpn, key))
        if is_far(base, typed, point):
            case = "change far from the point (display digits)"
            pairs.append(Pair(app, case, False, point, base, typed, key))
    corner = XCalc(desk, (0, 0))
    corner_buttons = corner.buttons()
    corner_base, corner_rerender = corner.shot(), corner.shot()
    for number, label in XCALC_CORNER_RELABEL.items():
        pairs += _key_cases(
            "xcalc at the screen corner",
            corner,
            base=corner_base,
            rerender=corner_rerender,
            number=number,
            label=label,
            key=corner_buttons[number - 1],
        )
    return pairs, base


def build_pairs(folder: Path, *, web: bool = True, reuse: bool = False) -> list[Pair]:
    """All pairs, from the Tk form, xmessage (twice), xcalc (twice) and, with ``web``, the
    real web pages of :mod:`bench.web`; labels verified. Each part is saved under
    ``folder`` as it is made; ``reuse`` loads the parts an earlier run saved instead of
    making them again (a run stopped halfway resumes where it stopped)."""
    pairs = desktop_pairs(folder / "desktop", reuse=reuse)
    if web:
        from bench.web import web_pairs

        pairs += web_pairs(folder / "web", reuse=reuse)
    return pairs


def desktop_pairs(folder: Path, *, reuse: bool = False) -> list[Pair]:
    """The X programs' pairs, labels verified, saved in ``folder``."""
    if reuse and (folder / "pairs.json").exists():
        return load_pairs(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with VirtualDisplay(*SCREEN) as screen:
        backend = DesktopBackend(screen.display)
        try:
            desk = Desk(screen.display, backend)
            form = tk_pairs(desk, folder)
            calculator, calculator_screen = xcalc_pairs(desk, form[0].before)
            dialogs = [
                *xmessage_pairs(desk, calculator_screen, (0, 0)),
                *xmessage_pairs(desk, calculator_screen, (480, 320)),
            ]
        finally:
            backend.close()
    pairs = form + dialogs + calculator
    for pair in pairs:
        verify(pair)
    save_pairs(pairs, folder)
    return pairs


def save_pairs(pairs: list[Pair], folder: Path) -> None:
    """Write the pairs as PNGs plus ``pairs.json`` (screens shared between pairs saved once)."""
    folder.mkdir(parents=True, exist_ok=True)
    names: dict[int, str] = {}
    records = []
    for pair in pairs:
        files = []
        for image in (pair.before, pair.after):
            if id(image) not in names:
                names[id(image)] = f"screen-{len(names):03d}.png"
                image.save(folder / names[id(image)])
            files.append(names[id(image)])
        records.append(
            {
                "app": pair.app,
                "case": pair.case,
                "changed": pair.changed,
                "point": pair.point,
                "before": files[0],
                "after": files[1],
                "element": pair.element,
            }
        )
    (folder / "pairs.json").write_text(json.dumps(records, indent=1))


def load_pairs(folder: Path) -> list[Pair]:
    """The pairs :func:`save_pairs` wrote."""
    screens: dict[str, Image.Image] = {}

    def screen(name: str) -> Image.Image:
        if name not in screens:
            with Image.open(folder / name) as image:
                screens[name] = image.convert("RGB")
        return screens[name]

    return [
        Pair(
            record["app"],
            record["case"],
            record["changed"],
            tuple(record["point"]),  # type: ignore[arg-type]
            screen(record["before"]),
            screen(record["after"]),
            tuple(record["element"]) if record["element"] else None,  # type: ignore[arg-type]
        )
        for record in json.loads((folder / "pairs.json").read_text())
    ]
