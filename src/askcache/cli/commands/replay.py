"""``askcache replay NAME --dry-run``: what a replay would decide, without acting.

Each acting step's check phase runs on the screenshots given (``--screenshot STEP=PNG``, the
screen before that step; a step without one is checked on the closest earlier one) or on
the live screen (``--display :N``: the screen as it is now is the screen before the first
acting step; a later step's screen appears only once the steps before it have acted, so it
is not checked). Nothing is clicked or typed. Exit 0 when every acting step was checked and
would run; 1 when the replay would stop, or a step had no screen to be checked on (not
confirmed).
"""

from __future__ import annotations

import argparse
import base64
from pathlib import Path

from PIL import Image

from askcache.cachefile.blind_spots import blind_spots
from askcache.cli.commands.common import (
    EXIT_FINDINGS,
    EXIT_OK,
    emit_json,
    open_storage,
    parameter_argument,
    register_given_secrets,
    resolve_name,
)
from askcache.fingerprint.step import decode_screenshot
from askcache.foundation.errors import AskCacheError
from askcache.replay.dry_run import dry_run
from askcache.storage.cache_storage import load_cache_file

__all__ = ["add_replay_command", "read_screen"]


def add_replay_command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    parents: list[argparse.ArgumentParser],
) -> None:
    """Register ``replay``."""
    parser = commands.add_parser(
        "replay",
        parents=parents,
        help="check a trajectory step by step without acting (--dry-run)",
        description="Run the check phase of each acting step on screenshots or the live "
        "screen, without clicking or typing: would a replay run, and where would it stop? "
        "The live screen is the screen before the first acting step only: later steps are "
        "not checked on it (their screens appear once earlier steps act). "
        "Exit 0: every acting step was checked and would run; 1: the replay would stop, or "
        "a step had no screen to be checked on.",
    )
    parser.add_argument("name", help="cache file name, with or without .json")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        required=True,
        help="required: this command never acts (a real replay goes through Agent.act)",
    )
    screens = parser.add_mutually_exclusive_group(required=True)
    screens.add_argument(
        "--screenshot",
        action="append",
        default=[],
        type=_screenshot_argument,
        metavar="STEP=PNG",
        help="the screen before step STEP (repeatable); PNG alone means step 0",
    )
    screens.add_argument(
        "--display", help="check the first acting step on the live screen of this X display"
    )
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        type=parameter_argument,
        metavar="NAME=VALUE",
        help="a parameter value (repeatable; a secret's value never appears in the output)",
    )
    parser.set_defaults(run=run_replay)


def _screenshot_argument(text: str) -> tuple[int, str]:
    """``--screenshot STEP=PNG`` (or ``PNG``: step 0) as ``(STEP, PNG)``; a usage error when
    STEP is not a step number."""
    step, _, path = text.rpartition("=")
    if step and not step.isdigit():
        raise argparse.ArgumentTypeError(f"expected STEP=PNG with a step number, got {text!r}")
    return (int(step) if step else 0), path


def _screens(specs: list[tuple[int, str]]) -> dict[int, Image.Image]:
    screens: dict[int, Image.Image] = {}
    for index, path in specs:
        screens[index] = read_screen(Path(path), "--screenshot")
    return screens


def read_screen(path: Path, option: str) -> Image.Image:
    """The screenshot in the PNG (or JPEG) file ``path``, named by ``option`` in errors.

    Raises:
        AskCacheError: the file cannot be read or is not an image askcache can check on.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise AskCacheError(f"{option} {str(path)!r}: {exc.strerror or exc}") from exc
    return decode_screenshot(base64.b64encode(data).decode("ascii"), str(path))


def run_replay(args: argparse.Namespace) -> int:
    """Run ``replay --dry-run``."""
    storage = open_storage(args.cache_dir)
    name = resolve_name(storage, args.name)
    cache_file = load_cache_file(storage, name)
    values = dict(args.param)
    register_given_secrets(cache_file, values)
    if args.display:
        from askcache.tools.desktop import DesktopBackend

        backend = DesktopBackend(args.display)
        try:
            steps = dry_run(cache_file, name, backend.screenshot, parameter_values=values)
        finally:
            backend.close()
        where = f"the live screen of {args.display}"
    else:
        screens = _screens(args.screenshot)  # argparse requires --screenshot or --display
        steps = dry_run(cache_file, name, screens, parameter_values=values)
        where = "the screenshots given"
    stops = [s for s in steps if s.problem is not None]
    unchecked = [s.step_index for s in steps if s.checked_on is None]
    checked = [s.step_index for s in steps if s.checked_on is not None]
    if args.json:
        emit_json(
            {
                "name": name,
                "checked_on": where,
                "steps": [s.model_dump(mode="json") for s in steps],
                "would_stop_at": stops[0].step_index if stops else None,
                "checked_steps": checked,
                "unchecked_steps": unchecked,
                "cannot_see": blind_spots(cache_file.metadata.visual_validation),
            }
        )
    else:
        for step in steps:
            on = "the live screen" if args.display else f"screen {step.checked_on}"
            if step.checked_on is None:
                verdict = f"NOT CHECKED: {step.note or 'no screen'}"
            elif step.problem is None:
                verdict = f"would run (checked on {on})"
            else:
                verdict = f"STOP: {step.problem} (checked on {on})"
            print(f"  {step.step_index:>3}  {step.action:<12} {verdict}")
        summary = f"{name}: {len(checked)} of {len(steps)} acting steps checked on {where}"
        if stops:
            summary += f"; the replay would stop at step {stops[0].step_index}"
        elif unchecked:
            listed = ", ".join(map(str, unchecked))
            summary += f"; not confirmed: step(s) {listed} not checked (no screen for them"
            summary += ": give --screenshot STEP=PNG)" if args.display else ")"
        print(summary)
        for gap in blind_spots(cache_file.metadata.visual_validation):
            print(f"  cannot see: {gap}")
    return EXIT_FINDINGS if stops or unchecked else EXIT_OK
