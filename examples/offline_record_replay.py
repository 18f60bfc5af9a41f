"""Record a run, replay it, and tune validation, all offline.

The model is a scripted stand-in served over HTTP on 127.0.0.1 to the real anthropic client,
and the screen is askcache's simulated form app. With a real desktop and a real key you
would pass ``anthropic.Anthropic()`` and a ComputerTool on your screen instead; the caching
code is the same.

Run: .venv/bin/python examples/offline_record_replay.py [CACHE_DIR]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from askcache import (
    Agent,
    CacheExecutionSettings,
    CacheWritingSettings,
    CachingSettings,
    ComputerTool,
)
from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp

GOAL = "Save the contact {name}"


def main(cache_dir: Path) -> None:
    app = SimulatedFormApp()
    script = FormFillingScript(app, "Ada Lovelace")
    with MessagesApiStandIn(script) as api:
        client = api.client()  # anthropic.Anthropic(base_url=<the stand-in>)

        # 1. Record. "Ada Lovelace" becomes the parameter {{person}} in the cache file.
        record = CachingSettings(
            strategy="record",
            cache_dir=cache_dir,
            writing_settings=CacheWritingSettings(
                filename="save-contact.json",
                visual_verification_method="phash",
                visual_validation_region_size=100,
                visual_validation_threshold=2,
                visual_validation_shift_tolerance=1,
                parameters={"person": "Ada Lovelace"},
            ),
        )
        result = Agent(client, [ComputerTool(app)]).act(GOAL.format(name="Ada Lovelace"), record)
        print(
            f"recorded with {result.model_calls} model calls -> {result.conversation.recorded_file}"
        )

        # 2. Replay for another person: no model call, each click checked first.
        other = SimulatedFormApp()
        script.app = other
        replay = CachingSettings(
            strategy="execute",
            cache_dir=cache_dir,
            writing_settings=CacheWritingSettings(filename="save-contact.json"),
            execution_settings=CacheExecutionSettings(
                delay_time_between_action=0.2,
                visual_validation_threshold=None,  # use the file's threshold
                parameter_values={"person": "Grace Hopper"},
            ),
        )
        result = Agent(client, [ComputerTool(other)]).act(GOAL.format(name="Grace Hopper"), replay)
        assert result.replay is not None
        print(f"replayed with {result.model_calls} model calls: {result.replay.status}")
        for step in result.replay.steps:
            print(f"  step {step.step_index} {step.action}: {step.note}")
        print(f"the app saved {other.saved}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()))
