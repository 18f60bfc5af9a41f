"""``askcache tune NAME --run DIR ...``: learn per-step masks from repeat runs.

Each ``--run DIR`` is a folder of another run of the same trajectory whose screens were right:
``step-N.png`` is the screen just before step ``N`` (write such a folder from a run's messages
with :func:`askcache.record.mask_learning.save_run_screens`). What varied at a step across those
runs (a clock, a counter, a caret inside its region) is stored on the step as its mask
(:mod:`askcache.fingerprint.masks`) and ignored from then on; one line per step says what and why. A
run whose screen at a step differs by more than a run of the same screen plausibly varies (a
wrong screen: more than a quarter of a hash's bits, or a tone change needing more than twice
the file's tolerance), or that would push the step's mask past that bound, is left out at that
step, and a line says so (``left_out`` in ``--json``).

The tuned file is a new version of the trajectory (:mod:`askcache.storage.versions`:
``askcache rollback NAME`` undoes it), signed again when a signing key is set. ``--check``
says what would be learned and writes nothing. Exit 0: learned (or nothing to learn).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from PIL import Image

from askcache.cachefile.signing import parse_verified
from askcache.cli.commands.common import EXIT_OK, emit_json, open_storage, resolve_name
from askcache.cli.commands.replay import read_screen
from askcache.foundation.errors import AskCacheError
from askcache.heal.trajectory import healed_bytes
from askcache.record.mask_learning import learn_mask_report
from askcache.storage.versions import TrajectoryVersions

__all__ = ["add_tune_command", "read_run_folder"]

_STEP_FILE = re.compile(r"^step-(\d{1,6})\.png$")


def add_tune_command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    parents: list[argparse.ArgumentParser],
) -> None:
    """Register ``tune``."""
    parser = commands.add_parser(
        "tune",
        parents=parents,
        help="learn per-step masks from repeat runs (a clock, a counter, a caret)",
        description="Compare each checked step's fingerprint with the screens of other runs "
        "of the same trajectory whose screens were right, and store on each step what varied "
        "there (ignored from then on). The tuned file is a new version (askcache rollback "
        "undoes it). A run that differs at a step by more than a run of the same screen "
        "plausibly varies (a wrong screen) is left out there, and a line says why. Exit 0: "
        "learned, or nothing to learn.",
    )
    parser.add_argument("name", help="cache file name, with or without .json")
    parser.add_argument(
        "--run",
        dest="runs",
        action="append",
        default=[],
        required=True,
        metavar="DIR",
        help="a folder of another run's screens, step-N.png the screen before step N "
        "(repeatable; askcache.record.mask_learning.save_run_screens writes one)",
    )
    parser.add_argument(
        "--check", action="store_true", help="say what would be learned; write nothing"
    )
    parser.add_argument(
        "--keep-versions",
        type=_at_least_one,
        default=10,
        metavar="N",
        help="versions of the trajectory kept (default 10, as CachingSettings.keep_versions)",
    )
    parser.set_defaults(run=run_tune)


def _at_least_one(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"keep at least 1 version, got {value}")
    return value


def read_run_folder(folder: str) -> dict[int, Image.Image]:
    """The screens of one run: ``step-N.png`` in ``folder``, keyed by ``N``.

    Raises:
        AskCacheError: the folder does not exist or holds no ``step-N.png``, or a file is
            not an image (the message names it).
    """
    path = Path(folder)
    if not path.is_dir():
        raise AskCacheError(f"--run {folder!r}: no such folder")
    screens: dict[int, Image.Image] = {}
    for entry in sorted(path.iterdir()):
        found = _STEP_FILE.match(entry.name)
        if found is None or not entry.is_file():
            continue
        screens[int(found.group(1))] = read_screen(entry, "--run")
    if not screens:
        raise AskCacheError(f"--run {folder!r}: no step-N.png in it (N: the step's index)")
    return screens


def run_tune(args: argparse.Namespace) -> int:
    """Run ``tune``."""
    storage = open_storage(args.cache_dir)
    name = resolve_name(storage, args.name)
    runs = [read_run_folder(folder) for folder in args.runs]
    base = storage.read(name)
    cache_file = parse_verified(base, storage.describe(name), resign=True)
    before = [step.visual_mask for step in cache_file.trajectory]
    learning = learn_mask_report(cache_file, runs)
    lines = learning.lines
    after = [step.visual_mask for step in cache_file.trajectory]
    masked = [index for index, mask in enumerate(after) if mask is not None]
    version = None
    if not args.check and after != before:
        versions = TrajectoryVersions(storage, name, keep=args.keep_versions)
        version = versions.commit(base, healed_bytes(cache_file, base, storage.describe(name)))
        if version is None:
            why = versions.refused or f"{name} changed while it was tuned"
            raise AskCacheError(f"{why}; run askcache tune again")
    if args.json:
        left_out = [
            {"step": run.step, "run": run.run, "folder": args.runs[run.run], "reason": run.reason}
            for run in learning.left_out
        ]
        emit_json(
            {
                "name": name,
                "lines": lines,
                "masked_steps": masked,
                "left_out": left_out,
                "version": version,
            }
        )
        return EXIT_OK
    for line in lines:
        print(f"  {line}")
    if learning.left_out:
        steps = len({run.step for run in learning.left_out})
        print(
            f"{name}: {len(learning.left_out)} run(s) left out at {steps} step(s): their screens "
            "differ more than a run of the same screen varies (was the screen right?)"
        )
    if args.check:
        print(f"{name}: --check, nothing written ({len(masked)} steps would be masked)")
    elif version is None:
        print(f"{name}: the masks are as they were, nothing written")
    else:
        print(
            f"{name}: {len(masked)} steps masked; version {version} "
            f"(askcache rollback {name} undoes it)"
        )
    return EXIT_OK
