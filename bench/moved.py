"""The accuracy benchmark's change kinds, rerun with the window moved.

    bash scripts/bench.sh moved [--reuse]   (the X programs of bench/dataset.py under Xvfb;
                                             ``--reuse``: the pairs bench/out/pairs/desktop
                                             holds from an earlier run)

Every labelled pair of :func:`bench.dataset.desktop_pairs` (the Tk form, xmessage, xcalc: two
screenshots and the point an action targets, labelled changed or the same) is replayed with
the second screenshot moved by each offset of :data:`OFFSETS` (the screen's content shifted,
as a window the window manager put elsewhere on an empty desktop; offsets that would push
the point off the screen are left out). A one-step trajectory is recorded on the first
screenshot with the shipped defaults, and the library decides, as a replay does:

- **window**: the screen lists the window, recorded where it was and found moved
  (:mod:`askcache.replay.anchor`): the full check runs where the window is now;
- **search**: the screen lists no window: the full check at the recorded point, then, when
  the region does not match there, the bounded search (:mod:`askcache.replay.search`).

Counted per kind: on a changed pair, acting at all is a dangerous failure (acting on a changed
screen); on an unchanged pair, a hand-back is needless, and acting anywhere but where the
content moved is dangerous too. The held-out split is the accuracy benchmark's (xcalc);
nothing here was tuned on any of these pairs (the search's margins were set on the simulated
form of askcache.testing). Writes the "moved" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import ROOT, machine, write_section
from bench.accuracy import split
from bench.dataset import Pair, desktop_pairs
from PIL import Image

from askcache.cachefile.format import CacheFile, CacheMetadata, CoordinateSpace
from askcache.fingerprint.step import compute_step_representation, validation_config
from askcache.foundation.actions import make_tool_use, parse_action
from askcache.foundation.screen.windows import WindowFrame
from askcache.foundation.settings import CacheExecutionSettings, CacheWritingSettings
from askcache.replay.check import Checked, check
from askcache.replay.screens import screen_of
from askcache.replay.search import search
from askcache.replay.session import ReplaySession

OFFSETS = [(300, 50), (-180, 120)]
"""Where the window moved, in pixels."""
CONFIG = validation_config(CacheWritingSettings())


def _moved(image: Image.Image, offset: tuple[int, int]) -> Image.Image:
    """``image`` with its content moved by ``offset`` on a desktop of its corner's colour."""
    moved = Image.new("RGB", image.size, image.getpixel((image.width - 1, image.height - 1)))
    moved.paste(image, offset)
    return moved


def _session(
    pair: Pair, window: bool, offset: tuple[int, int]
) -> tuple[ReplaySession, tuple[WindowFrame, ...] | None]:
    """A replay of the pair's one step, and the windows a look lists (``None``: none)."""
    click = make_tool_use("left_click", "tool", coordinate=list(pair.point))
    assert CONFIG is not None
    stored = compute_step_representation(pair.before, click, CONFIG)
    assert stored is not None
    width, height = pair.before.size
    frame = WindowFrame(x=0, y=0, width=width, height=height, wm_class="App", title="app")
    step = click.model_copy(
        update={
            "visual_representation": stored.region,
            "visual_detail": stored.detail,
            "visual_tone": stored.tone,
            "visual_target": stored.target,
            "visual_weak": stored.weak,
            "visual_other_density": stored.other_density,
            "window": frame if window else None,
        }
    )
    cache_file = CacheFile(
        metadata=CacheMetadata(
            goal="bench",
            coordinate_space=CoordinateSpace(width=width, height=height),
            visual_validation=CONFIG,
        ),
        trajectory=[step],
    )
    now = frame.model_copy(update={"x": offset[0], "y": offset[1]})
    return ReplaySession(
        cache_file,
        "bench",
        parameter_values={},
        start_step=0,
        settings=CacheExecutionSettings(auto_wait=False),
        tool_shape="tool",
        capture=None,
        windows=(lambda: [now]) if window else None,
    ), ((now,) if window else None)


def decide(pair: Pair, offset: tuple[int, int], mode: str) -> tuple[bool, tuple[int, int] | None]:
    """Whether the replay acts on the moved screen, and at which offset from the point."""
    session, windows = _session(pair, mode == "window", offset)
    image = _moved(pair.after, offset)
    screen = screen_of(session.plan.space, image, windows)
    step = session.steps[0]
    action = parse_action(step)
    outcome = check(session.plan, 0, step, action, screen, keep_view=False)
    if isinstance(outcome, Checked):
        return True, outcome.anchor.offset if outcome.anchor else (0, 0)
    if mode == "search":
        found = search(session.plan, 0, step, action, screen)
        if found is not None:
            return True, found.anchor.offset if found.anchor else (0, 0)
    return False, None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reuse", action="store_true", help="reuse the saved desktop pairs")
    args = parser.parse_args()
    pairs = desktop_pairs(ROOT / "bench" / "out" / "pairs" / "desktop", reuse=args.reuse)
    rows: Counter[tuple[str, str, str, bool, str]] = Counter()
    seconds: list[float] = []
    for number, pair in enumerate(pairs):
        print(f"pair {number + 1} of {len(pairs)}", flush=True)
        for offset in OFFSETS:
            x, y = pair.point[0] + offset[0], pair.point[1] + offset[1]
            if not (50 <= x < pair.before.width - 50 and 50 <= y < pair.before.height - 50):
                continue
            for mode in ("window", "search"):
                started = time.perf_counter()
                acted, at = decide(pair, offset, mode)
                if mode == "search":
                    seconds.append(time.perf_counter() - started)
                if not acted:
                    outcome = "handed back"
                elif pair.changed and _moves(pair.case):
                    outcome = "acted on the moved element"
                elif pair.changed:
                    outcome = "acted (dangerous)"
                elif at is not None and max(abs(at[0] - offset[0]), abs(at[1] - offset[1])) <= 1:
                    outcome = "acted where it moved"
                else:
                    outcome = f"acted elsewhere (dangerous, {at})"
                rows[split(pair), mode, _kind(pair.case), pair.changed, outcome] += 1
    write_section("moved", _section(rows, seconds))


MOVES = ("moved", "scrolled", "swapped")
"""Change kinds that move the element itself (labelled changed at the point): the search may
find it where it moved, under its full check."""


def _moves(case: str) -> bool:
    return any(word in case for word in MOVES)


def _kind(case: str) -> str:
    return case.split(":", maxsplit=1)[0].split(" (", maxsplit=1)[0]


def _section(rows: Counter[tuple[str, str, str, bool, str]], seconds: list[float]) -> str:
    lines = [
        "## Moved windows: the accuracy pairs with the window elsewhere",
        "",
        machine() + " Shared machine: other benchmarks and test runs were going on.",
        "",
        "`bash scripts/bench.sh moved` (bench/moved.py): every labelled pair of the accuracy"
        " benchmark's X programs (the Tk form, xmessage, xcalc; the web pages are not part of"
        " it), its second screenshot moved by "
        + ", ".join(f"{o[0]:+d},{o[1]:+d}" for o in OFFSETS)
        + " px (offsets that push the point within 50 px of the edge left out), decided by the"
        " library as a replay decides: **window**, the screen lists the window, found moved;"
        " **search**, no window information, the check at the recorded point and then the"
        " bounded search. On a changed pair any action is dangerous; on an unchanged one a"
        " hand-back is needless and an action anywhere but where the content moved is"
        " dangerous. Changes that move the element itself (moved, scrolled, buttons swapped)"
        " are labelled changed at the point; where the search finds the element where it"
        " moved and its full check passes there, the action is counted apart (the element"
        " recorded, at its new place), not as dangerous. Held-out is the accuracy benchmark's held-out split (xcalc); nothing"
        " was tuned on these pairs.",
        "",
    ]
    for part in ("held-out", "tuning"):
        lines += [
            f"### {part}",
            "",
            "| mode | pairs changed | acted on a change (dangerous) | a move: acted on the"
            " moved element | pairs unchanged | acted where it moved | needless hand-backs |"
            " acted elsewhere (dangerous) |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for mode in ("window", "search"):
            mine = {k: v for k, v in rows.items() if k[0] == part and k[1] == mode}
            changed = sum(v for k, v in mine.items() if k[3])
            danger = sum(v for k, v in mine.items() if k[3] and k[4] == "acted (dangerous)")
            followed = sum(v for k, v in mine.items() if k[4] == "acted on the moved element")
            same = sum(v for k, v in mine.items() if not k[3])
            moved = sum(v for k, v in mine.items() if not k[3] and k[4] == "acted where it moved")
            needless = sum(v for k, v in mine.items() if not k[3] and k[4] == "handed back")
            elsewhere = same - moved - needless
            lines.append(
                f"| {mode} | {changed} | {danger} | {followed} | {same} | {moved} | {needless} "
                f"| {elsewhere} |"
            )
        lines.append("")
        lines += ["Unchanged pairs by kind (acted where it moved / all), window | search:", ""]
        kinds = sorted({k[2] for k in rows if k[0] == part and not k[3]})
        for kind in kinds:
            cells = []
            for mode in ("window", "search"):
                mine = {k: v for k, v in rows.items() if k[:3] == (part, mode, kind) and not k[3]}
                good = sum(v for k, v in mine.items() if k[4] == "acted where it moved")
                cells.append(f"{good}/{sum(mine.values())}")
            lines.append(f"- {kind}: {' | '.join(cells)}")
        lines.append("")
    if seconds:
        lines.append(
            f"Search mode, one decision (the check, and the search when it runs): median "
            f"{statistics.median(seconds) * 1000:.0f} ms, slowest {max(seconds) * 1000:.0f} ms"
            " (a loaded machine)."
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
