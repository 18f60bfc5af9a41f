"""Replay a recorded trajectory on your desktop, checking the screen before every step.

    python examples/replay.py dark-mode.json [--param user=bob] [--threshold 12] [--display :0]

No model call is made unless the screen differs from the recording; then Claude takes over
(that needs ANTHROPIC_API_KEY).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

import anthropic

from askcache import CacheExecutionSettings, CacheWritingSettings, CachingSettings, VisionAgent


def main(argv: Sequence[str] | None = None, client: anthropic.Anthropic | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("filename")
    parser.add_argument("--cache-dir", default=".askcache")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--threshold", type=int, default=None, help="override the file's")
    parser.add_argument("--delay", type=float, default=0.1)
    parser.add_argument("--display", default=None)
    args = parser.parse_args(argv)
    if client is None and not os.environ.get("ANTHROPIC_API_KEY"):
        print("note: no ANTHROPIC_API_KEY; if the replay hands back, the model cannot take over")
        client = anthropic.Anthropic(api_key="not-set")
    settings = CachingSettings(
        strategy="execute",
        cache_dir=args.cache_dir,
        writing_settings=CacheWritingSettings(filename=args.filename),
        execution_settings=CacheExecutionSettings(
            delay_time_between_action=args.delay,
            wait_for_settle=True,
            visual_validation_threshold=args.threshold,
            parameter_values=dict(item.split("=", 1) for item in args.param),
        ),
    )
    with VisionAgent(client=client, display=args.display) as agent:
        goal = f"Complete the task recorded in {args.filename}"
        try:
            result = agent.act(goal, caching_settings=settings)
        except anthropic.APIError as exc:
            print(f"the replay handed back and the model could not be reached: {exc}")
            return 2
    replay = result.replay
    assert replay is not None
    for step in replay.steps:
        print(f"  step {step.step_index:>3} {step.action:<12} {step.note}")
    print(f"{replay.status}; {result.model_calls} model calls")
    if replay.stopped_at_step is not None:
        print(f"stopped at step {replay.stopped_at_step}: {replay.reason}")
    return 0 if result.status == "done" else 1


if __name__ == "__main__":
    raise SystemExit(main())
