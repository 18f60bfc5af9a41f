"""``askcache diff``, ``askcache accept`` and ``askcache rollback``: versions of a trajectory
and healed versions proposed for review (:mod:`askcache.storage.versions`).

``diff NAME [A B]`` shows what changed step by step; A and B are ``current``, ``previous``,
``proposed`` (the newest proposal), a version number (``3`` or ``v3``) or a proposal's file
name. Without them: the current version against the newest proposal, or, when there is
none, the previous version against the current one. ``--html FILE`` also writes the steps
side by side, with each step's stored fingerprints drawn as bit images.
"""

from __future__ import annotations

import argparse
import difflib
import html
import io
import json
from base64 import b64encode
from pathlib import Path

from PIL import Image

from askcache.cachefile.format import CacheFile
from askcache.cli.commands.common import EXIT_OK, emit_json, open_storage, resolve_name
from askcache.cli.html_report import write_page
from askcache.fingerprint.masks import StepMask
from askcache.foundation.errors import AskCacheError, InvalidHashError
from askcache.foundation.messages import ToolUseBlockParam
from askcache.storage.versions import TrajectoryVersions

__all__ = ["add_heal_commands", "diff_lines"]


def _key(step: ToolUseBlockParam) -> str:
    return json.dumps([step.toolset_name, step.name, step.input], sort_keys=True)


def _describe(step: ToolUseBlockParam) -> str:
    arguments = {k: v for k, v in step.input.items() if k != "action"}
    action = step.input.get("action", step.name)
    return f"{action} {json.dumps(arguments, sort_keys=True)}" if arguments else str(action)


def _fingerprint(step: ToolUseBlockParam) -> str | None:
    return step.visual_representation


def _mask_note(old: ToolUseBlockParam, new: ToolUseBlockParam) -> str:
    """`` (mask changed: ...)`` when the step's learned mask differs, else ``""``."""
    if old.visual_mask == new.visual_mask:
        return ""
    if new.visual_mask is None:
        return " (mask removed: nothing ignored)"
    try:
        mask = StepMask.decode(new.visual_mask)
    except InvalidHashError:
        return " (mask changed: unreadable)"
    parts = [
        f"{count} {label} ignored"
        for count, label in (
            (mask.main.bit_count(), "main bits"),
            (mask.detail.bit_count(), "detail bits"),
            (mask.ink.bit_count(), "ink columns"),
        )
        if count
    ]
    parts += [
        f"{label} tolerance {value:.0%}"
        for label, value in (("brightness", mask.brightness), ("contrast", mask.contrast))
        if value
    ]
    return f" (mask changed: {', '.join(parts) or 'nothing ignored'})"


def diff_lines(a: CacheFile, b: CacheFile) -> list[str]:
    """What changed from ``a`` to ``b``, one line per step: ``=`` the same step (same action
    and input; ``(fingerprint changed)`` when its stored fingerprint differs, ``(mask changed:
    ...)`` with what the new mask ignores when its learned mask differs), ``-`` only in ``a``,
    ``+`` only in ``b``; then the variants, and each screen profile learned, healed or
    removed (its steps diffed the same way)."""
    lines: list[str] = []
    old, new = a.trajectory, b.trajectory
    matcher = difflib.SequenceMatcher(a=[_key(s) for s in old], b=[_key(s) for s in new])
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                note = (
                    " (fingerprint changed)" if _fingerprint(old[i]) != _fingerprint(new[j]) else ""
                ) + _mask_note(old[i], new[j])
                lines.append(f"= {i:>3} -> {j:<3} {_describe(new[j])}{note}")
            continue
        lines.extend(f"- {i:>3}        {_describe(old[i])}" for i in range(i1, i2))
        lines.extend(f"+        {j:<3} {_describe(new[j])}" for j in range(j1, j2))
    for label, cache_file in (("before", a), ("after", b)):
        for index, variants in sorted(cache_file.variants.items()):
            for variant in variants:
                steps = ", ".join(_describe(s) for s in variant.steps)
                lines.append(
                    f"  variant {label} at step {index} (replaces {variant.replaces}): {steps}"
                )
    for key in sorted(a.profiles.keys() | b.profiles.keys()):
        if key not in b.profiles:
            lines.append(f"- screen profile {key} (learned trajectory removed)")
        elif key not in a.profiles:
            lines.append(f"+ screen profile {key}, learned:")
            lines += [f"    {line}" for line in diff_lines(_empty(b), b.for_profile(key))]
        elif a.profiles[key] != b.profiles[key]:
            lines.append(f"  screen profile {key}, healed:")
            lines += [f"    {line}" for line in diff_lines(a.for_profile(key), b.for_profile(key))]
    return lines


def _empty(cache_file: CacheFile) -> CacheFile:
    """``cache_file`` with no steps, variants or profiles (what a new profile is diffed from)."""
    return cache_file.model_copy(update={"trajectory": [], "variants": {}, "profiles": {}})


def _bits_png(hex_hash: str | None) -> str:
    """A stored fingerprint drawn as a black-and-white square (a data URL), or ``""``."""
    if not hex_hash:
        return ""
    bits = bin(int(hex_hash, 16))[2:].zfill(len(hex_hash) * 4)
    side = int(len(bits) ** 0.5)
    image = Image.new("1", (side, side))
    image.putdata([255 if bit == "1" else 0 for bit in bits[: side * side]])
    buffer = io.BytesIO()
    image.resize((side * 8, side * 8), Image.Resampling.NEAREST).save(buffer, "PNG")
    return "data:image/png;base64," + b64encode(buffer.getvalue()).decode()


def _html(labels: tuple[str, str], a: CacheFile, b: CacheFile) -> list[str]:
    """The body of the side-by-side page (:func:`askcache.cli.html_report.write_page` writes it)."""

    def cell(step: ToolUseBlockParam | None) -> str:
        if step is None:
            return "<td></td>"
        image = _bits_png(step.visual_representation)
        tag = f'<img alt="fingerprint" src="{image}">' if image else ""
        return f"<td><code>{html.escape(_describe(step))}</code><br>{tag}</td>"

    rows = []
    matcher = difflib.SequenceMatcher(
        a=[_key(s) for s in a.trajectory], b=[_key(s) for s in b.trajectory]
    )
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for k in range(max(i2 - i1, j2 - j1)):
            left = a.trajectory[i1 + k] if i1 + k < i2 else None
            right = b.trajectory[j1 + k] if j1 + k < j2 else None
            rows.append(f'<tr class="{tag}">{cell(left)}{cell(right)}</tr>')
    head = "".join(f"<th>{html.escape(label)}</th>" for label in labels)
    return [
        "<style>.replace td,.delete td,.insert td{background:#fff3cd}</style>",
        f"<table><tr>{head}</tr>",
        *rows,
        "</table>",
    ]


def _versions(args: argparse.Namespace) -> TrajectoryVersions:
    storage = open_storage(args.cache_dir)
    args.name = resolve_name(storage, args.name)
    return TrajectoryVersions(storage, args.name, lock_wait=getattr(args, "wait", 10.0))


def _diff(args: argparse.Namespace) -> int:
    versions = _versions(args)
    if args.a is not None and args.b is None:
        raise AskCacheError("give two versions (A B) or none")
    if args.a is not None:
        refs = (args.a, args.b)
    elif versions.proposals():
        refs = ("current", "proposed")
    else:
        refs = ("previous", "current")
    (label_a, a), (label_b, b) = (versions.load(ref) for ref in refs)
    lines = diff_lines(a, b)
    if args.html:
        page = Path(args.html)
        if not page.parent.is_dir():
            raise AskCacheError(f"--html {args.html!r}: no folder {str(page.parent)!r}")
        write_page(page, f"askcache diff: {label_a} -> {label_b}", _html((label_a, label_b), a, b))
    if args.json:
        emit_json(
            {"name": args.name, "a": label_a, "b": label_b, "lines": lines, "html": args.html}
        )
        return EXIT_OK
    print(f"{label_a} -> {label_b}")
    for line in lines:
        print(line)
    if args.html:
        print(f"wrote {args.html}")
    return EXIT_OK


def _accept(args: argparse.Namespace) -> int:
    versions = _versions(args)
    number = versions.accept(args.proposal)
    if args.json:
        emit_json({"name": args.name, "version": number})
    else:
        print(f"accepted: {args.name} is now version {number}")
    return EXIT_OK


def _rollback(args: argparse.Namespace) -> int:
    versions = _versions(args)
    number = versions.rollback(args.version)
    if args.json:
        emit_json({"name": args.name, "version": number})
        return EXIT_OK
    source = f"version {args.version}" if args.version else "the previous version"
    print(f"rolled back: {args.name} is now version {number} (the content of {source})")
    return EXIT_OK


def add_heal_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    parents: list[argparse.ArgumentParser],
) -> None:
    """Register ``diff``, ``accept`` and ``rollback`` on the ``askcache`` command's
    sub-parsers (``parents``: the cache commands' common options)."""
    diff = commands.add_parser(
        "diff",
        parents=parents,
        help="what changed between versions of a trajectory",
        description="What changed step by step between two versions of a trajectory (or its "
        "newest healing proposal). Exit 0; 3 when the trajectory or a version does not exist "
        "or is refused as loading refuses it (its signature).",
    )
    diff.add_argument("name", help="cache file name, with or without .json")
    diff.add_argument(
        "a", nargs="?", help="current, previous, proposed, a version number or a proposal"
    )
    diff.add_argument("b", nargs="?", help="the version to compare A with (same forms)")
    diff.add_argument("--html", metavar="FILE", help="also write the steps side by side")
    diff.set_defaults(run=_diff)
    accept = commands.add_parser(
        "accept",
        parents=parents,
        help="make a proposed (healed) version current",
        description="Make a healing proposal the current version (it is added as the newest "
        "version; nothing is lost). Exit 0; 3 when there is no such proposal or it is refused "
        "as loading refuses it (its signature does not verify).",
    )
    accept.add_argument("name", help="cache file name, with or without .json")
    accept.add_argument("proposal", nargs="?", help="a proposal's file name; default: newest")
    _add_wait(accept)
    accept.set_defaults(run=_accept)
    rollback = commands.add_parser(
        "rollback",
        parents=parents,
        help="make an older version current again",
        description="Make an older version current again (added as the newest version; "
        "nothing is lost). Exit 0; 3 when there is no such version or it is refused as "
        "loading refuses it (its signature does not verify).",
    )
    rollback.add_argument("name", help="cache file name, with or without .json")
    rollback.add_argument("version", nargs="?", help="a number; default: the previous one")
    _add_wait(rollback)
    rollback.set_defaults(run=_rollback)


def _add_wait(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--wait",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="how long to wait while another process changes the trajectory (it holds the "
        "lock; default 10); then exit 3 naming it",
    )
