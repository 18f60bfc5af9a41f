"""Record a task on your desktop: Claude solves it once, askcache writes the trajectory.

    ANTHROPIC_API_KEY=... python examples/record.py "Open the settings and enable dark mode" \
        --filename dark-mode.json [--param user=alice] [--display :0]

Values given with --param are stored as {{name}} placeholders, to be filled in at replay.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

import anthropic

from askcache import CacheWritingSettings, CachingSettings, VisionAgent


def main(argv: Sequence[str] | None = None, client: anthropic.Anthropic | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("goal")
    parser.add_argument("--filename", required=True)
    parser.add_argument("--cache-dir", default=".askcache")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--display", default=None)
    parser.add_argument("--model", default=None)
    args = parser.parse_args(argv)
    if client is None and not os.environ.get("ANTHROPIC_API_KEY"):
        print(
            "record.py: error: Claude needs ANTHROPIC_API_KEY: export ANTHROPIC_API_KEY=..., or "
            "try everything offline: python examples/offline_record_replay.py",
            file=sys.stderr,
        )
        return 3
    parameters = dict(item.split("=", 1) for item in args.param)
    settings = CachingSettings(
        strategy="record",
        cache_dir=args.cache_dir,
        writing_settings=CacheWritingSettings(filename=args.filename, parameters=parameters),
    )
    options = {"model": args.model} if args.model else {}
    with VisionAgent(client=client, display=args.display, **options) as agent:
        result = agent.act(args.goal, caching_settings=settings)
    usage = result.conversation.usage
    print(f"{result.status}: {result.model_calls} model calls, {usage.total_tokens:,} tokens")
    print(f"wrote {result.conversation.recorded_file or 'nothing (the task did not finish)'}")
    return 0 if result.status == "done" else 1


if __name__ == "__main__":
    raise SystemExit(main())
