"""askcache in your own async computer-use loop: ``examples/own_loop.py`` on
``anthropic.AsyncAnthropic`` with an async tool runner, as Anthropic's reference loop
(``sampling_loop``) is; the lines askcache adds are marked ``# askcache``.

The first run has nothing to replay: the model does the task and askcache records it. The
second run, for another person, replays it: every step is checked on the screen first, and
not one model call is made.

Offline as it is: the model is a scripted stand-in served over HTTP to the real ``anthropic``
client, and the screen is askcache's simulated form app. With ``ANTHROPIC_API_KEY`` set and
an X display (``$DISPLAY``), Claude fills a real Tk form on that display instead.

Run: python examples/own_loop_async.py [CACHE_DIR]
"""

from __future__ import annotations

import asyncio
import base64
import io
import os
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Protocol

import anthropic
from PIL import Image

from askcache import (
    AsyncLoopReplay,
    CacheExecutionSettings,
    CacheWritingSettings,
    CachingSettings,
)

MODEL = "claude-sonnet-5-5"
BETAS = ["computer-use-2025-11-24"]


class Screen(Protocol):
    """What this loop's tool runner drives: the simulated app offline, the desktop for real."""

    def screenshot(self) -> Image.Image: ...
    def click(self, point: Any, button: str, count: int, modifiers: str | None) -> None: ...
    def type_text(self, text: str) -> None: ...
    def key(self, combo: str, repeat: int) -> None: ...


async def run_tool(screen: Screen, call: dict[str, Any]) -> dict[str, Any]:
    """Your own async tool runner: one computer action, then a tool_result with a screenshot
    (a remote runner would await its network call here)."""
    await asyncio.sleep(0)
    arguments = call["input"]
    action = arguments["action"]
    if action == "left_click":
        screen.click(tuple(arguments["coordinate"]), "left", 1, None)
    elif action == "type":
        screen.type_text(arguments["text"])
    elif action == "key":
        screen.key(arguments["text"], 1)
    elif action != "screenshot":
        error = f"this runner does not do {action!r}"
        return {
            "type": "tool_result",
            "tool_use_id": call["id"],
            "is_error": True,
            "content": error,
        }
    buffer = io.BytesIO()
    screen.screenshot().save(buffer, format="PNG")
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    return {"type": "tool_result", "tool_use_id": call["id"], "content": [image]}


async def sampling_loop(
    client: anthropic.AsyncAnthropic,
    screen: Screen,
    messages: list[dict[str, Any]],
    replay: AsyncLoopReplay,  # askcache
) -> list[dict[str, Any]]:
    """The reference loop's shape: call the model, run its tools, until it stops calling them."""
    width, height = screen.screenshot().size
    size = {"display_width_px": width, "display_height_px": height}
    tools: list[Any] = [{"type": "computer_20251124", "name": "computer", **size}]
    while True:
        async for action in replay.actions(messages):  # askcache: replay what it can
            replay.tool_result(await run_tool(screen, action))  # askcache
        if replay.finished:  # askcache: every step ran, no model call needed
            return messages
        response = await client.beta.messages.create(
            model=MODEL, max_tokens=1024, messages=messages, tools=tools, betas=BETAS
        )
        content = [block.model_dump(exclude_none=True) for block in response.content]
        messages.append({"role": "assistant", "content": content})
        results = [await run_tool(screen, b) for b in content if b["type"] == "tool_use"]
        if not results:
            return messages
        messages.append({"role": "user", "content": results})


async def save_contact(
    client: anthropic.AsyncAnthropic, screen: Screen, person: str, cache_dir: Path
) -> None:
    """One run of the task, with caching: replayed when recorded, else recorded."""
    settings = CachingSettings(
        cache_dir=cache_dir,
        writing_settings=CacheWritingSettings(parameters={"person": person}),
        execution_settings=CacheExecutionSettings(parameter_values={"person": person}),
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": f"Save the contact {person}"}]
    replay = AsyncLoopReplay(
        "save-contact.json", messages, settings=settings, model=MODEL
    )  # askcache
    await sampling_loop(client, screen, messages, replay)
    result = await replay.done(
        messages
    )  # askcache: ledger entry, heal after a hand-back, recording
    if result.conversation.recorded_file:
        print(f"recorded: {result.model_calls} model calls -> {result.conversation.recorded_file}")
    if result.replay is not None:
        run = result.replay
        print(f"replayed: {run.steps_run} steps, {result.model_calls} model calls ({run.status})")
        if run.handbacks:
            print(f"  handed back at step {run.stopped_at_step}: {run.reason}")
        if result.heal is not None:
            print(f"  healed: {result.heal.event}, verified by {result.heal.verified_by}")


async def main(cache_dir: Path) -> None:
    real = bool(os.environ.get("ANTHROPIC_API_KEY") and os.environ.get("DISPLAY"))
    form: Any
    screen: Screen
    for number, person in enumerate(("Ada Lovelace", "Grace Hopper")):
        with ExitStack() as stack:  # a fresh form for each run, closed after it
            if real:
                from askcache.testing import TkFormApp
                from askcache.tools.desktop import DesktopBackend

                state = cache_dir / f"form-{number}.json"
                form = stack.enter_context(TkFormApp(os.environ["DISPLAY"], state))
                client, screen = anthropic.AsyncAnthropic(), DesktopBackend()
                stack.callback(screen.close)
            else:
                from askcache.testing import FormFillingScript, MessagesApiStandIn
                from askcache.testing import SimulatedFormApp as Form

                form = screen = Form()
                api = stack.enter_context(MessagesApiStandIn(FormFillingScript(form, person)))
                client = anthropic.AsyncAnthropic(base_url=api.base_url, api_key="stand-in")
            await save_contact(client, screen, person, cache_dir)
            await client.close()
            print(f"the form saved {form.saved}")


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp())))
