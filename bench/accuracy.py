"""Does the visual check catch real changes at the action point and ignore noise?

    .venv/bin/python bench/accuracy.py          (needs Xvfb, xmessage, xcalc; pip install matplotlib)

Builds a labelled set of screenshot pairs from real applications under Xvfb, each with the
exact point an action would target (from the application's own geometry: the Tk form's
published widget boxes, xwininfo for the Xaw programs xmessage and xcalc):

- changed: the element's label replaced by a word of similar length (Save -> Open), the
  element removed, moved, covered by a dialog, disabled, another screen, scrolled;
- same: a re-render, a lossy JPEG re-encode, a change far from the point, a caret elsewhere,
  a 1 px scroll, a 3 % brightness change.

Then, for every method (phash, ahash, dhash, whash), hash size (8, 16), region (64, 100, 160
px) and threshold, it computes the detection rate on "changed", the false hand-back rate on
"same" and the balanced accuracy; and the same for combined checks. Writes the "accuracy"
section of docs/benchmarks.md and docs/benchmarks-roc.png; the pairs go to bench/out/pairs/.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import re
import subprocess
import sys
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageChops, ImageEnhance

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import ROOT, machine, write_section

from askcache.testing import TkFormApp, VirtualDisplay, run_on_display
from askcache.tools import ComputerTool
from askcache.tools.desktop import DesktopBackend
from askcache.visual import compute_hash, hamming_distance, region_box, shifted_boxes

OUT = ROOT / "bench" / "out" / "pairs"
METHODS = ["phash", "ahash", "dhash", "whash"]
HASH_SIZES = [8, 16]
REGIONS = [64, 100, 160]
SHIFTS = [0, 1]
DEFAULTS = {
    "The previous default": ("phash", 8, 100, 0, 10),
    "The shipped default": ("phash", 8, 100, 1, 2),
}


@dataclass
class Pair:
    """Two screenshots and the point an action targets; ``changed`` is the ground truth."""

    app: str
    case: str
    changed: bool
    point: tuple[int, int]
    before: Image.Image
    after: Image.Image


def _shift(image: Image.Image, dy: int) -> Image.Image:
    """The screen scrolled by ``dy`` pixels (content moves up), new rows white."""
    shifted = ImageChops.offset(image, 0, -dy)
    if dy > 0:
        shifted.paste((255, 255, 255), (0, image.height - dy, image.width, image.height))
    return shifted


def _jpeg(image: Image.Image, quality: int = 80) -> Image.Image:
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=quality)
    return Image.open(io.BytesIO(buffer.getvalue())).convert("RGB")


def _noise_cases(app: str, point: tuple[int, int], image: Image.Image) -> list[Pair]:
    """The synthetic "same" cases and the scroll "changed" case for one screenshot."""
    return [
        Pair(app, "lossy JPEG re-encode", False, point, image, _jpeg(image)),
        Pair(app, "1 px scroll", False, point, image, _shift(image, 1)),
        Pair(
            app, "3 % brighter", False, point, image, ImageEnhance.Brightness(image).enhance(1.03)
        ),
        Pair(app, "scrolled 60 px", True, point, image, _shift(image, 60)),
    ]


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

    def windows(self) -> list[tuple[int, int, int, int]]:
        """Leaf-ish X windows as (x, y, width, height), absolute, from xwininfo."""
        text = subprocess.run(
            ["xwininfo", "-root", "-tree"], env=self.env, capture_output=True, text=True, check=True
        ).stdout
        boxes = []
        for match in re.finditer(r"(\d+)x(\d+)\+-?\d+\+-?\d+\s+\+(-?\d+)\+(-?\d+)", text):
            width, height, x, y = (int(v) for v in match.groups())
            boxes.append((x, y, width, height))
        return boxes


def tk_pairs(desk: Desk, folder: Path) -> list[Pair]:
    def shot(*options: str, layout: str = "original") -> tuple[Image.Image, dict[str, list[int]]]:
        with TkFormApp(
            desk.display, folder / "state.json", layout=layout, extra_args=list(options)
        ) as app:  # type: ignore[arg-type]
            image = desk.shot()
            return image, app.state()["widgets"]

    base, widgets = shot()
    center = {name: ((b[0] + b[2]) // 2, (b[1] + b[3]) // 2) for name, b in widgets.items()}
    save, clear, name = center["save"], center["clear"], center["name"]
    rerender, _ = shot()
    variants = {
        "label replaced (Save -> Open)": shot("--save-label", "Open")[0],
        "element removed": shot("--hide-save")[0],
        "moved (a banner pushes the form down)": shot(layout="banner")[0],
        "buttons swapped": shot(layout="swapped")[0],
        "covered by a dialog": shot("--dialog")[0],
        "disabled": shot("--disabled")[0],
    }
    far = shot("--status", "Saved Grace Hopper")[0]
    caret = shot("--focus", "email")[0]
    pairs = [Pair("Tk form", case, True, save, base, after) for case, after in variants.items()]
    pairs += [
        Pair(
            "Tk form",
            "moved (a banner pushes the form down)",
            True,
            name,
            base,
            variants["moved (a banner pushes the form down)"],
        ),
        Pair("Tk form", "covered by a dialog", True, clear, base, variants["covered by a dialog"]),
        Pair("Tk form", "buttons swapped", True, clear, base, variants["buttons swapped"]),
        Pair("Tk form", "re-render", False, save, base, rerender),
        Pair("Tk form", "re-render", False, name, base, rerender),
        Pair("Tk form", "change far from the point (status line)", False, save, base, far),
        Pair("Tk form", "change far from the point (status line)", False, name, base, far),
        Pair("Tk form", "caret elsewhere (Email focused)", False, save, base, caret),
        Pair("Tk form", "caret elsewhere (Email focused)", False, clear, base, caret),
    ]
    for point in (save, clear, name):
        pairs += _noise_cases("Tk form", point, base)
    for width, height, zoom in (
        (1920, 1200, 1.5),
        (1024, 640, 0.8),
    ):  # the same app on another screen size
        with VirtualDisplay(width, height) as other:
            backend = DesktopBackend(other.display)
            try:
                with TkFormApp(other.display, folder / "state.json", zoom=zoom):
                    time.sleep(0.4)
                    scaled = (
                        ComputerTool(backend)
                        .capture()
                        .convert("RGB")
                        .resize(base.size, Image.Resampling.LANCZOS)
                    )
            finally:
                backend.close()
        for point in (save, clear, name):
            pairs.append(
                Pair(
                    "Tk form",
                    f"same app, {width}x{height} screen rescaled",
                    False,
                    point,
                    base,
                    scaled,
                )
            )
    return pairs


def xmessage_pairs(desk: Desk, calculator: Image.Image) -> list[Pair]:
    def shot(
        buttons: str, text: str = "Unsaved changes in report.txt. Save them before closing?"
    ) -> tuple[Image.Image, list[tuple[int, int, int, int]]]:
        with desk.program("xmessage", "-geometry", "+0+0", "-buttons", buttons, text):
            buttons_found = sorted(
                (b for b in desk.windows() if 10 < b[3] < 30 and b[2] < 120 and b[1] > 10),
                key=lambda b: b[0],
            )
            return desk.shot(), buttons_found

    base, buttons = shot("Save,Cancel")
    save = (buttons[0][0] + buttons[0][2] // 2, buttons[0][1] + buttons[0][3] // 2)
    cancel = (buttons[1][0] + buttons[1][2] // 2, buttons[1][1] + buttons[1][3] // 2)
    pairs = [
        Pair("xmessage", "label replaced (Save -> Open)", True, save, base, shot("Open,Cancel")[0]),
        Pair("xmessage", "label replaced (Save -> Stop)", True, save, base, shot("Stop,Cancel")[0]),
        Pair("xmessage", "element removed", True, cancel, base, shot("Save")[0]),
        Pair("xmessage", "buttons swapped", True, save, base, shot("Cancel,Save")[0]),
        Pair("xmessage", "another screen", True, save, base, calculator),
        Pair("xmessage", "re-render", False, save, base, shot("Save,Cancel")[0]),
        Pair("xmessage", "re-render", False, cancel, base, shot("Save,Cancel")[0]),
    ]
    for point in (save, cancel):
        pairs += _noise_cases("xmessage", point, base)
    return pairs


def xcalc_pairs(desk: Desk, form: Image.Image) -> tuple[list[Pair], Image.Image]:
    with desk.program("xcalc", "-geometry", "260x360+0+0"):
        base = desk.shot()
        keys = sorted(
            (b for b in desk.windows() if 20 < b[2] < 60 and 15 < b[3] < 30),
            key=lambda b: (b[1], b[0]),
        )
        desk.backend.move((130, 20))
        desk.backend.type_text("12345")
        typed = desk.shot()
    with desk.program("xcalc", "-geometry", "260x360+0+0"):
        rerender = desk.shot()
    with desk.program("xcalc", "-rpn", "-geometry", "260x360+0+0"):
        rpn = desk.shot()
    points = [
        (k[0] + k[2] // 2, k[1] + k[3] // 2) for k in (keys[len(keys) // 2], keys[-1], keys[-7])
    ]
    pairs = []
    for point in points:
        pairs += [
            Pair("xcalc", "another mode (RPN layout)", True, point, base, rpn),
            Pair("xcalc", "another screen", True, point, base, form),
            Pair("xcalc", "re-render", False, point, base, rerender),
            Pair("xcalc", "change far from the point (display digits)", False, point, base, typed),
            *_noise_cases("xcalc", point, base),
        ]
    return pairs, base


def build_pairs() -> list[Pair]:
    with VirtualDisplay(1280, 800) as screen:
        backend = DesktopBackend(screen.display)
        try:
            desk = Desk(screen.display, backend)
            OUT.mkdir(parents=True, exist_ok=True)
            form_pairs = tk_pairs(desk, OUT)
            calc_pairs, calculator = xcalc_pairs(desk, form_pairs[0].before)
            return form_pairs + xmessage_pairs(desk, calculator) + calc_pairs
        finally:
            backend.close()


def distances(pairs: list[Pair], method: str, size: int, region: int, shift: int = 0) -> list[int]:
    """Per pair, the distance at the point; with ``shift``, the smallest over the current
    region moved by up to ``shift`` pixels each way, as replay checks it (``shifted_boxes``)."""
    found = []
    for pair in pairs:
        box = region_box(pair.before.size, pair.point, region)
        assert box is not None
        stored = compute_hash(pair.before.crop(box), method, size)
        moved = shifted_boxes(box, pair.after.size, shift)
        found.append(
            min(
                hamming_distance(stored, compute_hash(pair.after.crop(b), method, size))
                for b in moved
            )
        )
    return found


def rates(changed: list[int], same: list[int], threshold: int) -> tuple[float, float, float]:
    """Detection on changed, false hand-back on same, balanced accuracy (distance > threshold = hand back)."""
    detection = sum(d > threshold for d in changed) / len(changed)
    false_alarm = sum(d > threshold for d in same) / len(same)
    return detection, false_alarm, (detection + 1 - false_alarm) / 2


def main() -> None:
    pairs = build_pairs()
    labels = [p.changed for p in pairs]
    for index, pair in enumerate(pairs):
        pair.before.save(OUT / f"{index:03d}-before.png")
        pair.after.save(OUT / f"{index:03d}-after.png")
    (OUT / "pairs.json").write_text(
        json.dumps(
            [{"app": p.app, "case": p.case, "changed": p.changed, "point": p.point} for p in pairs],
            indent=1,
        )
    )
    results = {}
    for method, size, region, shift in itertools.product(METHODS, HASH_SIZES, REGIONS, SHIFTS):
        found = distances(pairs, method, size, region, shift)
        changed = [d for d, c in zip(found, labels, strict=True) if c]
        same = [d for d, c in zip(found, labels, strict=True) if not c]
        curve = [(t, *rates(changed, same, t)) for t in range(size * size // 2)]
        best = max(curve, key=lambda row: (row[3], -row[2]))
        results[(method, size, region, shift)] = {
            "found": found,
            "curve": curve,
            "best": best,
            "changed": changed,
            "same": same,
        }
    n_changed, n_same = sum(labels), len(labels) - sum(labels)
    lines = [
        "## Accuracy of the visual check (`bench/accuracy.py`)",
        "",
        machine(),
        "",
        f"{len(pairs)} labelled pairs from real applications under Xvfb 1280x800 ({n_changed} changed, {n_same} same): "
        "the Tk contact form (askcache.testing.tk_form), and two Debian programs nobody on the team wrote, "
        "xmessage and xcalc. The action point is exact: the Tk form's published widget boxes, xwininfo for "
        "xmessage's and xcalc's buttons. A hand-back happens when the distance exceeds the threshold.",
        "",
        "| app | case | label | pairs |",
        "| --- | --- | --- | --- |",
    ]
    counts: dict[tuple[str, str, bool], int] = {}
    for pair in pairs:
        counts[(pair.app, pair.case, pair.changed)] = (
            counts.get((pair.app, pair.case, pair.changed), 0) + 1
        )
    for (app, case, changed), count in counts.items():
        lines.append(f"| {app} | {case} | {'changed' if changed else 'same'} | {count} |")
    lines += [
        "",
        "Best threshold per set-up (highest balanced accuracy, then fewest false hand-backs). *Shift tolerance*: "
        "the current region is also hashed moved by up to that many pixels each way and the smallest distance counts "
        "(not in askcache yet: measured here to decide whether to add it). Bytes per step: the hash's bits / 8; the cache file stores it as hex, twice that.",
        "",
        "| method | hash | region | shift tolerance | best threshold | detection | false hand-backs | balanced accuracy | bytes per step |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    ranked = sorted(results.items(), key=lambda item: (-item[1]["best"][3], item[1]["best"][2]))
    for (method, size, region, shift), r in ranked:
        t, detection, false_alarm, balanced = r["best"]
        tolerance = f"±{shift} px" if shift else "none"
        lines.append(
            f"| {method} | {size}x{size} | {region} | {tolerance} | {t} | {detection:.1%} | {false_alarm:.1%} | {balanced:.1%} | {size * size // 8} |"
        )
    for title, (method, size, region, shift, threshold) in DEFAULTS.items():
        default = results[(method, size, region, shift)]
        detection, false_alarm, balanced = rates(default["changed"], default["same"], threshold)
        missed = [
            f"{pairs[i].app}: {pairs[i].case} (distance {d})"
            for i, d in enumerate(default["found"])
            if labels[i] and d <= threshold
        ]
        alarms = [
            f"{pairs[i].app}: {pairs[i].case} (distance {d})"
            for i, d in enumerate(default["found"])
            if not labels[i] and d > threshold
        ]
        lines += [
            "",
            f"{title} ({method}, {size}x{size}, {region} px, shift tolerance {shift} px, threshold {threshold}): "
            f"detection {detection:.1%}, false hand-backs {false_alarm:.1%}, balanced accuracy {balanced:.1%}. "
            f"Changes it misses: {'; '.join(missed) or 'none'}. False hand-backs: {'; '.join(alarms) or 'none'}.",
        ]
    best_setup, best = max(
        results.items(), key=lambda item: (item[1]["best"][3], -item[1]["best"][2])
    )
    t = best["best"][0]
    alarms = [
        f"{pairs[i].app}: {pairs[i].case} ({d})"
        for i, d in enumerate(best["found"])
        if not labels[i] and d > t
    ]  # type: ignore[arg-type]
    misses = [
        f"{pairs[i].app}: {pairs[i].case} ({d})"
        for i, d in enumerate(best["found"])
        if labels[i] and d <= t
    ]  # type: ignore[arg-type]
    lines += [
        "",
        f"At the best single set-up ({best_setup[0]}, {best_setup[1]}x{best_setup[1]}, {best_setup[2]} px, "
        f"shift tolerance {best_setup[3]} px, threshold {t}) "
        f"the false hand-backs are: {'; '.join(alarms) or 'none'}; the misses: {'; '.join(misses) or 'none'}.",
    ]
    lines += combined(results, labels)
    lines += ["", "![ROC-style plot](benchmarks-roc.png)"]
    plot(results)
    body = "\n".join(lines)
    write_section("accuracy", body)
    print(body)


def combined(
    results: dict[tuple[str, int, int], dict[str, object]], labels: list[bool]
) -> list[str]:
    """Two hashes per step, hand back when either exceeds its threshold."""
    lines = [
        "",
        "Combined checks (two hashes stored per step; hand back when either exceeds its own threshold), best thresholds:",
        "",
        "| first | second | thresholds | detection | false hand-backs | balanced accuracy | bytes per step |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    candidates = [
        (("phash", 8, 100, 0), ("dhash", 16, 100, 0)),
        (("phash", 8, 100, 0), ("phash", 16, 64, 0)),
        (("phash", 8, 100, 1), ("phash", 16, 100, 1)),
    ]
    for first, second in candidates:
        a, b = results[first]["found"], results[second]["found"]  # type: ignore[index]
        best = None
        for ta in range(first[1] ** 2 // 2):
            for tb in range(second[1] ** 2 // 2):
                flags = [da > ta or db > tb for da, db in zip(a, b, strict=True)]  # type: ignore[arg-type]
                detection = sum(f for f, c in zip(flags, labels, strict=True) if c) / sum(labels)
                false_alarm = sum(f for f, c in zip(flags, labels, strict=True) if not c) / (
                    len(labels) - sum(labels)
                )
                score = ((detection + 1 - false_alarm) / 2, -false_alarm)
                if best is None or score > best[0]:
                    best = (score, ta, tb, detection, false_alarm)
        assert best is not None
        (balanced, _), ta, tb, detection, false_alarm = best
        size = first[1] ** 2 // 8 + second[1] ** 2 // 8
        lines.append(
            f"| {first[0]} {first[1]}x{first[1]} @{first[2]} ±{first[3]} | {second[0]} {second[1]}x{second[1]} @{second[2]} ±{second[3]} | {ta}, {tb} | {detection:.1%} | {false_alarm:.1%} | {balanced:.1%} | {size} |"
        )
    return lines


def plot(results: dict[tuple[str, int, int, int], dict[str, object]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(12, 5), sharey=True)
    colors = dict(zip(METHODS, ["tab:blue", "tab:orange", "tab:green", "tab:red"], strict=True))
    styles = dict(zip(REGIONS, [":", "-", "--"], strict=True))
    for axis, size in zip(axes, HASH_SIZES, strict=True):
        for method in METHODS:
            for region in REGIONS:
                curve = results[(method, size, region, 0)]["curve"]
                xs = [row[2] for row in curve]  # type: ignore[union-attr]
                ys = [row[1] for row in curve]  # type: ignore[union-attr]
                axis.plot(
                    xs,
                    ys,
                    marker=".",
                    color=colors[method],
                    linestyle=styles[region],
                    label=f"{method} @{region}px",
                    alpha=0.85,
                )
        axis.set_title(f"{size}x{size} hash, no shift tolerance: each point is a threshold")
        axis.set_xlabel("false hand-back rate (same)")
        axis.grid(True, alpha=0.3)
    axes[0].set_ylabel("detection rate (changed)")
    axes[1].legend(fontsize=7, ncol=2)
    figure.tight_layout()
    figure.savefig(ROOT / "docs" / "benchmarks-roc.png", dpi=90)


if __name__ == "__main__":
    main()
