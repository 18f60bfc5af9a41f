"""``askcache parity SOURCE CANDIDATE``: compare two renderings, write the evidence.

SOURCE and CANDIDATE are image files or URLs (rendered in headless Chromium). Prints the
verdict, writes ``report.json`` and the screenshots (and a diff image) under ``--output``, and
exits 0 on PASS, 1 on FAIL, 2 on ERROR.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from PIL import Image

from askcache.foundation.errors import AskCacheError, MissingApiKeyError
from askcache.foundation.screen.png import open_image
from askcache.parity.config import ParityConfig
from askcache.parity.evidence import BrowserCapture, EvidenceFolder
from askcache.parity.judges import DeterministicJudge, Judge, Judgement
from askcache.parity.models import ValidationVerdict
from askcache.parity.retry import judge_with_retry

__all__ = ["EXIT_CODES", "add_parity_command", "is_url", "make_judge", "run_parity"]

EXIT_CODES = {"PASS": 0, "FAIL": 1, "ERROR": 2}
"""Process exit code per verdict."""


def add_parity_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``parity`` sub-command."""
    parser = commands.add_parser("parity", help="compare two renderings (images or URLs)")
    parser.add_argument("source", help="baseline: an image file or a URL")
    parser.add_argument("candidate", help="the rendering to check: an image file or a URL")
    parser.add_argument("--output", default="askcache-parity-output", help="folder for evidence")
    parser.add_argument("--judge", choices=["deterministic", "vision"], default="deterministic")
    parser.add_argument("--device", choices=["desktop", "mobile"], default="desktop")
    parser.add_argument(
        "--full-page", action="store_true", help="capture whole pages, not the viewport"
    )
    parser.add_argument("--model", default=None, help="model for --judge vision")
    parser.set_defaults(run=run_parity)


def is_url(value: str) -> bool:
    """True for the addresses rendered in the browser (http, https, file)."""
    return value.startswith(("http://", "https://", "file://"))


def make_judge(name: str, model: str | None, config: ParityConfig) -> Judge:
    """The judge ``--judge`` names; ``vision`` needs ``ANTHROPIC_API_KEY`` (and honours
    ``ANTHROPIC_BASE_URL``, like the ``anthropic`` client itself)."""
    if name != "vision":
        return DeterministicJudge(config)
    import anthropic

    from askcache.parity.judges import VisionJudge

    if not os.environ.get("ANTHROPIC_API_KEY"):
        raise MissingApiKeyError("--judge vision", "--judge deterministic (the default)")
    return VisionJudge(anthropic.Anthropic(), model=model, config=config)


def run_parity(args: argparse.Namespace, *, sleep: Callable[[float], None] = time.sleep) -> int:
    """Run the command; return its exit code."""
    config = ParityConfig()
    output = Path(args.output)
    evidence = EvidenceFolder(output)
    judge = make_judge(args.judge, args.model, config)
    images: dict[str, Image.Image] = {}
    judgement: Judgement | None = None
    with ExitStack() as stack:
        browser: BrowserCapture | None = None
        for label, where in (("source", args.source), ("candidate", args.candidate)):
            try:
                if is_url(where):
                    if browser is None:
                        browser = stack.enter_context(BrowserCapture(config))
                    images[label] = browser.screenshot(
                        where, device=args.device, full_page=args.full_page
                    )
                else:  # askcache's pixel limit, naming the file
                    with open_image(Path(where).read_bytes(), where) as opened:
                        images[label] = opened.convert("RGB")
            except (AskCacheError, OSError) as exc:
                judgement = Judgement(ValidationVerdict.error(f"{label} {where}: {exc}"))
                break
    if judgement is None:
        judgement = judge_with_retry(
            judge, images["source"], images["candidate"], config, evidence=evidence, sleep=sleep
        )
    verdict = judgement.verdict
    if not verdict.screenshots:  # a capture failed: keep the screenshot that was taken
        taken = {label: str(evidence.save(image, label)) for label, image in images.items()}
        verdict = verdict.model_copy(update={"screenshots": taken})
    paths = verdict.screenshots
    report = {
        "source": args.source,
        "candidate": args.candidate,
        "judge": judge.name,
        "verdict": verdict.model_dump(mode="json"),
        "report": judgement.report.model_dump(mode="json", by_alias=True)
        if judgement.report
        else None,
    }
    output.mkdir(parents=True, exist_ok=True)
    (output / "report.json").write_text(json.dumps(report, indent=2))
    print(f"{verdict.verdict} (confidence {verdict.confidence}%): {verdict.summary}")
    if judgement.report is not None:
        print(f"parity score: {judgement.report.parity_score:.2f}")
    for difference in verdict.visual_differences:
        print(f"  [{difference.severity}] {difference.type}: {difference.description}")
    if judgement.report is not None and judgement.report.recommendations:
        print("recommendations:")
        for recommendation in judgement.report.recommendations:
            print(f"  - {recommendation}")
    for label, path in paths.items():
        print(f"  {label}: {path}")
    print(f"report: {output / 'report.json'}")
    return EXIT_CODES[verdict.verdict]
