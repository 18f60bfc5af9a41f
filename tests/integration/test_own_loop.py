"""askcache inside a loop that is not askcache's own: a loop in the shape of Anthropic's
reference loop, with its own tool runner, calling the real ``anthropic`` client (sync and
async) over HTTP to the local stand-in; the simulated form app is the screen.
"""

from __future__ import annotations

import asyncio
import base64
import io
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anthropic
import pytest
from PIL import Image

from askcache import CacheExecutionSettings, CacheWritingSettings, CachingSettings, open_ledger
from askcache.foundation.errors import CacheNotFoundError
from askcache.loop import (
    AsyncLoopReplay,
    LoopReplay,
    LoopUsageError,
    NotAScreenshotError,
    ReplayOverError,
    ToolResultOrderError,
    UnknownToolResultError,
    record_messages,
)
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.storage.ledger import steps_digest
from askcache.storage.versions import TrajectoryVersions
from askcache.testing import (
    FormFillingScript,
    MessagesApiStandIn,
    SimulatedFormApp,
    tool_use_reply,
)
from askcache.testing.simulated import Layout

pytestmark = pytest.mark.integration

TOOLS = [
    {
        "type": "computer_20251124",
        "name": "computer",
        "display_width_px": 640,
        "display_height_px": 400,
    }
]
BETAS = ["computer-use-2025-11-24"]


def _png(image: Image.Image) -> str:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def run_tool(app: SimulatedFormApp, call: dict[str, Any]) -> dict[str, Any]:
    """The loop's own tool runner (not askcache's): one computer action on the app."""
    arguments = call["input"]
    action = arguments["action"]
    if action == "left_click":
        app.click(tuple(arguments["coordinate"]), "left", 1, None)
    elif action == "type":
        app.type_text(arguments["text"])
    elif action == "key":
        app.key(arguments["text"], 1)
    elif action != "screenshot":
        return {
            "type": "tool_result",
            "tool_use_id": call["id"],
            "is_error": True,
            "content": f"unknown action {action}",
        }
    image = {"type": "base64", "media_type": "image/png", "data": _png(app.screenshot())}
    return {
        "type": "tool_result",
        "tool_use_id": call["id"],
        "content": [{"type": "image", "source": image}],
    }


def sampling_loop(
    client: anthropic.Anthropic,
    app: SimulatedFormApp,
    messages: list[dict[str, Any]],
    replay: LoopReplay,
) -> list[dict[str, Any]]:
    """The reference loop's shape, with askcache's lines added."""
    while True:
        for action in replay.actions(messages):  # askcache
            replay.tool_result(run_tool(app, action))  # askcache
        if replay.finished:  # askcache
            return messages
        response = client.beta.messages.create(
            model="claude-sonnet-5-5",
            max_tokens=1024,
            messages=messages,  # type: ignore[arg-type]
            tools=TOOLS,  # type: ignore[arg-type]
            betas=BETAS,
        )
        content = [block.model_dump(exclude_none=True) for block in response.content]
        messages.append({"role": "assistant", "content": content})
        results = [run_tool(app, block) for block in content if block["type"] == "tool_use"]
        if not results:
            return messages
        messages.append({"role": "user", "content": results})


async def async_sampling_loop(
    client: anthropic.AsyncAnthropic,
    app: SimulatedFormApp,
    messages: list[dict[str, Any]],
    replay: AsyncLoopReplay,
) -> list[dict[str, Any]]:
    """The same loop on the async client."""
    while True:
        async for action in replay.actions(messages):
            replay.tool_result(run_tool(app, action))
        if replay.finished:
            return messages
        response = await client.beta.messages.create(
            model="claude-sonnet-5-5",
            max_tokens=1024,
            messages=messages,  # type: ignore[arg-type]
            tools=TOOLS,  # type: ignore[arg-type]
            betas=BETAS,
        )
        content = [block.model_dump(exclude_none=True) for block in response.content]
        messages.append({"role": "assistant", "content": content})
        results = [run_tool(app, block) for block in content if block["type"] == "tool_use"]
        if not results:
            return messages
        messages.append({"role": "user", "content": results})


def _settings(cache_dir: Path, user: str, **caching: Any) -> CachingSettings:
    return CachingSettings(
        cache_dir=cache_dir,
        writing_settings=CacheWritingSettings(parameters={"user": user}),
        execution_settings=CacheExecutionSettings(
            parameter_values={"user": user}, settle_quiet_period=0.2, settle_timeout=1
        ),
        **caching,
    )


def _goal(user: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": f"Log in as {user}"}]


def _run(cache_dir: Path, layout: Layout, user: str, **caching: Any) -> tuple[Any, Any, Any]:
    """One run of the sync loop; returns the result, the app and the stand-in's requests."""
    app = SimulatedFormApp(layout=layout)
    with MessagesApiStandIn(FormFillingScript(app, user)) as api:
        messages = _goal(user)
        replay = LoopReplay("login.json", messages, settings=_settings(cache_dir, user, **caching))
        sampling_loop(api.client(), app, messages, replay)
        result = replay.done(messages)
    return result, app, api.requests


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    """``login.json`` recorded by the sync loop (strategy auto: nothing to replay yet)."""
    result, app, requests = _run(tmp_path, "original", "alice")
    assert result.strategy == "record"
    assert result.conversation.recorded_file == "login.json"
    assert result.model_calls == len(requests) > 0
    assert app.saved == [{"name": "alice", "email": ""}]
    return tmp_path


def test_the_sync_loop_records_then_replays_with_no_model_call(recorded: Path) -> None:
    text = LocalCacheStorage(recorded).read("login.json").decode()
    assert "{{user}}" in text
    assert "alice" not in text
    result, app, requests = _run(recorded, "original", "bob")
    assert requests == []  # not one model call
    assert result.model_calls == 0
    assert result.replay is not None
    assert result.replay.status == "completed"
    assert result.replay.steps_run == result.replay.steps_total > 0
    assert app.saved == [{"name": "bob", "email": ""}]
    entries = open_ledger(LocalCacheStorage(recorded)).records("login.json")
    assert [e.status for e in entries] == ["completed"]
    assert result.ledger_entries != []
    trajectory = load_cache_file(LocalCacheStorage(recorded), "login.json").trajectory
    assert entries[0].steps_digest == steps_digest(trajectory)  # the {{user}} steps, not bob's
    checked = [s.step_index for s in result.replay.steps if s.validated and s.matched]
    assert sorted(entries[0].step_waits) == checked != []


def test_the_async_loop_records_then_replays_with_no_model_call(tmp_path: Path) -> None:
    async def run(user: str) -> tuple[Any, SimulatedFormApp, int]:
        app = SimulatedFormApp()
        with MessagesApiStandIn(FormFillingScript(app, user)) as api:
            client = anthropic.AsyncAnthropic(
                base_url=api.base_url, api_key="stand-in-key", max_retries=0
            )
            messages = _goal(user)
            replay = AsyncLoopReplay("login.json", messages, settings=_settings(tmp_path, user))
            await async_sampling_loop(client, app, messages, replay)
            result = await replay.done(messages)
            await client.close()
        return result, app, len(api.requests)

    first, app, calls = asyncio.run(run("alice"))
    assert (first.strategy, first.conversation.recorded_file) == ("record", "login.json")
    assert calls > 0
    assert app.saved == [{"name": "alice", "email": ""}]
    again, app, calls = asyncio.run(run("bob"))
    assert calls == 0
    assert again.replay is not None
    assert again.replay.status == "completed"
    assert app.saved == [{"name": "bob", "email": ""}]


def test_a_hand_back_in_the_middle_goes_on_with_the_model_and_heals(recorded: Path) -> None:
    storage = LocalCacheStorage(recorded)
    before = storage.read("login.json")
    result, app, requests = _run(recorded, "banner", "bob")
    replay = result.replay
    assert replay is not None
    assert (replay.status, replay.stopped_at_step) == ("handed_back", 1)
    assert app.saved == [{"name": "bob", "email": ""}]  # the model finished the task
    # the model saw the replayed step and the same hand-back message an Agent gives it
    first = requests[0]["messages"]
    told = first[-1]["content"][0]["text"]
    assert "step 1" in told
    assert "Log in as bob" in told
    assert "takes over again by itself" in told
    assert "resume_cached_trajectory" not in told  # a tool the user's loop does not offer
    assert any(
        block.get("type") == "tool_use"
        for m in first
        for block in m["content"]
        if m is not first[0]
    )
    assert result.model_calls == len(requests)
    assert result.heal is not None
    assert (result.heal.event, result.heal.verified_by) == ("healed", "model_completion")
    assert TrajectoryVersions(storage, "login.json").numbers() == [1, 2]
    assert storage.read(TrajectoryVersions(storage, "login.json").version_name(1)) == before
    assert "{{user}}" in storage.read("login.json").decode()
    assert replay.rejoin_decisions  # the loop asked after each model turn; none re-joined
    healed = [r for r in open_ledger(storage).records("login.json") if r.event == "healed"]
    assert len(healed) == 1
    assert healed[0].model_calls == len(requests)
    # the healed trajectory replays on the changed app with no model call
    again, app, requests = _run(recorded, "banner", "carol")
    assert requests == []
    assert again.replay is not None
    assert again.replay.status == "completed"
    assert app.saved == [{"name": "carol", "email": ""}]


def test_record_messages_writes_the_run_a_loop_already_made(tmp_path: Path) -> None:
    app = SimulatedFormApp()
    with MessagesApiStandIn(FormFillingScript(app, "alice")) as api:
        messages = _goal("alice")
        off = LoopReplay("unused.json", messages, settings=CachingSettings(strategy="off"))
        assert off.status == "off"
        sampling_loop(api.client(), app, messages, off)
        calls = len(api.requests)
    name = record_messages(messages, name="login.json", settings=_settings(tmp_path, "alice"))
    assert name == "login.json"
    cache_file = load_cache_file(LocalCacheStorage(tmp_path), "login.json")
    assert cache_file.metadata.recording.model_calls == calls
    assert cache_file.metadata.recording.duration_seconds is None
    assert cache_file.metadata.goal == "Log in as {{user}}"
    _result, app, requests = _run(tmp_path, "original", "bob", strategy="execute")
    assert requests == []
    assert app.saved == [{"name": "bob", "email": ""}]


def _replay(cache_dir: Path, messages: list[Any] | None = None) -> LoopReplay:
    return LoopReplay(
        "login.json",
        _goal("bob") if messages is None else messages,
        settings=_settings(cache_dir, "bob", strategy="execute"),
    )


def test_bad_use_gets_an_error_naming_the_problem(recorded: Path) -> None:
    app = SimulatedFormApp()
    replay = _replay(recorded)
    action = replay.next_action()
    assert action is not None
    with pytest.raises(ToolResultOrderError, match="was not handed to tool_result"):
        replay.next_action()
    other = {**run_tool(app, action), "tool_use_id": "toolu_someone_else"}
    with pytest.raises(UnknownToolResultError, match="toolu_someone_else") as raised:
        replay.tool_result(other)
    assert raised.value.expected == action["id"]
    not_png = {"type": "base64", "media_type": "image/png", "data": "bm90IGFuIGltYWdl"}
    with pytest.raises(NotAScreenshotError, match="not a readable image"):
        replay.tool_result(
            {
                "type": "tool_result",
                "tool_use_id": action["id"],
                "content": [{"type": "image", "source": not_png}],
            }
        )
    result = run_tool(app, action)
    replay.tool_result(result)  # still waiting after each error: the right one is taken
    with pytest.raises(ToolResultOrderError, match="again"):
        replay.tool_result(result)
    # after a step the replay looks at the screen again: a screenshot it asks for
    look = replay.next_action()
    assert look is not None
    assert look["input"] == {"action": "screenshot"}
    with pytest.raises(NotAScreenshotError, match="holds no image"):
        replay.tool_result({"type": "tool_result", "tool_use_id": look["id"]})
    replay.tool_result(run_tool(app, look))
    for action in replay.actions():
        replay.tool_result(run_tool(app, action))
    assert replay.finished
    with pytest.raises(ReplayOverError, match="finished"):
        replay.tool_result(result)
    replay.done()
    with pytest.raises(ReplayOverError, match="done"):
        replay.next_action()


def test_calling_on_after_a_hand_back_is_an_error(recorded: Path) -> None:
    app = SimulatedFormApp(layout="banner")
    messages = _goal("bob")
    replay = _replay(recorded, messages)
    last = None
    for action in replay.actions():
        last = run_tool(app, action)
        replay.tool_result(last)
    assert replay.handed_back
    assert messages is replay.messages
    assert "hand" not in str(messages[0])
    assert messages[-1]["role"] == "user"
    assert "step 1" in messages[-1]["content"][0]["text"]
    assert last is not None
    with pytest.raises(ReplayOverError, match="handed back"):
        replay.tool_result(last)
    assert replay.next_action() is None  # no model turn since: it does not re-join
    assert replay.next_action() is None
    result = replay.done(status="failed")
    assert result.replay is not None
    assert result.replay.rejoin_decisions == []  # no turn of the model: nothing to decide


def test_messages_that_are_not_a_history_and_a_missing_file_are_refused(
    recorded: Path, tmp_path: Path
) -> None:
    with pytest.raises(LoopUsageError, match="user's message"):
        _replay(recorded, [])
    with pytest.raises(LoopUsageError, match="message 0"):
        _replay(recorded, [{"role": "robot", "content": "hi"}])
    with pytest.raises(CacheNotFoundError, match="record it first"):
        LoopReplay(
            "missing.json",
            _goal("bob"),
            settings=CachingSettings(strategy="execute", cache_dir=tmp_path),
        )


def test_a_loop_that_stops_in_the_middle_ends_the_check_under_way(recorded: Path) -> None:
    storage = LocalCacheStorage(recorded)
    before = storage.read("login.json")
    app = SimulatedFormApp()
    replay = _replay(recorded)
    step = replay.next_action()
    assert step is not None
    replay.tool_result(run_tool(app, step))
    look = replay.next_action()  # the replay waits for this screenshot
    assert look is not None
    assert look["input"] == {"action": "screenshot"}
    with pytest.raises(ToolResultOrderError, match="status='failed'"):
        replay.done()
    result = replay.done(status="failed")
    assert result.replay is not None
    assert result.replay.status == "handed_back"  # fail closed: the screen was not read
    assert result.heal is None
    assert storage.read("login.json") == before
    assert [r.status for r in open_ledger(storage).records("login.json")] == ["handed_back"]


@pytest.mark.parametrize("example", ["own_loop.py", "own_loop_async.py"])
def test_the_own_loop_examples_run_offline_as_they_are(tmp_path: Path, example: str) -> None:
    path = Path(__file__).parents[2] / "examples" / example
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    done = subprocess.run(
        [sys.executable, str(path), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,  # guards against a hang only
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("recorded: ")
    assert lines[0].endswith("model calls -> save-contact.json")
    assert re.fullmatch(r"replayed: [1-9]\d* steps, 0 model calls \(completed\)", lines[2])
    assert "'name': 'Grace Hopper'" in lines[3]
    assert (tmp_path / "save-contact.json").exists()


def test_the_docs_page_adds_askcache_to_the_reference_loop_in_at_most_ten_lines() -> None:
    page = (Path(__file__).parents[2] / "docs" / "own-loop.md").read_text()
    loop = page.split("## The reference loop with askcache added", 1)[1].split("```python", 1)[1]
    loop = loop.split("```", 1)[0]
    added = [line for line in loop.splitlines() if line.endswith("# + askcache")]
    assert len(added) == 9  # "at most about ten"
    assert "nine of them" in page
    used = set(re.findall(r"replay\.(\w+)", "\n".join(added)))
    assert used == {"actions", "tool_result", "finished", "done"}
    assert all(hasattr(AsyncLoopReplay, name) for name in used)


def test_after_the_model_acts_the_replay_re_joins_the_loop(recorded: Path) -> None:
    # a notice over the form: the replay hands back before step 1; the model dismisses it
    # (Escape), and at the next turn the re-join rules hold: the replay runs the rest itself
    app = SimulatedFormApp(layout="banner")
    with MessagesApiStandIn(
        [tool_use_reply("computer", {"action": "key", "text": "Escape"})]
    ) as api:
        messages = _goal("bob")
        replay = _replay(recorded, messages)
        sampling_loop(api.client(), app, messages, replay)
        assert replay.finished
        result = replay.done(messages)
    assert len(api.requests) == 1
    assert result.model_calls == 1
    run = result.replay
    assert run is not None
    assert run.handback_steps == [1]
    assert run.rejoins == 1
    assert [(d.step_index, d.rejoined) for d in run.rejoin_decisions] == [(1, True)]
    assert run.status == "completed"
    assert app.saved == [{"name": "bob", "email": ""}]
    assert [r.status for r in open_ledger(LocalCacheStorage(recorded)).records("login.json")] == [
        "completed"
    ]


def test_a_secret_typed_through_the_loop_is_never_written(tmp_path: Path) -> None:
    def run(layout: Layout, secret: str) -> Any:
        app = SimulatedFormApp(layout=layout)
        settings = CachingSettings(
            cache_dir=tmp_path,
            writing_settings=CacheWritingSettings(secret_parameters={"user": secret}),
            execution_settings=CacheExecutionSettings(
                parameter_values={"user": secret}, settle_quiet_period=0.2, settle_timeout=1
            ),
        )
        with MessagesApiStandIn(FormFillingScript(app, secret)) as api:
            messages = _goal(secret)
            replay = LoopReplay("login.json", messages, settings=settings)
            sampling_loop(api.client(), app, messages, replay)
            result = replay.done(messages)
        assert app.saved == [{"name": secret, "email": ""}]
        return result

    recorded = run("original", "alice-s3cret-pw")
    assert recorded.conversation.recorded_file == "login.json"
    healed = run("banner", "bob-s3cret-pw")  # replayed, handed back, the model typed it
    assert healed.replay is not None
    assert healed.replay.handback_steps == [1]
    assert healed.heal is not None
    text = LocalCacheStorage(tmp_path).read("login.json").decode()
    assert "{{secret:user}}" in text
    written = [p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) > 3  # the file, its versions, the ledger
    for secret in (b"alice-s3cret-pw", b"bob-s3cret-pw"):
        assert not any(secret in data for data in written)


def test_the_loop_tells_the_display_size_and_the_screen_profile(tmp_path: Path) -> None:
    def run(user: str) -> Any:
        app = SimulatedFormApp()
        with MessagesApiStandIn(FormFillingScript(app, user)) as api:
            messages = _goal(user)
            replay = LoopReplay(
                "login.json",
                messages,
                settings=_settings(tmp_path, user),
                display_size=(1280, 800),
                screen_size=(640, 400),
            )
            sampling_loop(api.client(), app, messages, replay)
            return replay.done(messages), len(api.requests)

    run("alice")
    metadata = load_cache_file(LocalCacheStorage(tmp_path), "login.json").metadata
    assert metadata.display_size is not None
    assert (metadata.display_size.width, metadata.display_size.height) == (1280, 800)
    again, calls = run("bob")  # the same screen profile: the recorded steps, as recorded
    assert calls == 0
    assert again.replay is not None
    assert again.replay.status == "completed"


def test_the_troubleshooting_page_shows_the_loop_errors_as_printed(recorded: Path) -> None:
    page = (Path(__file__).parents[2] / "docs" / "troubleshooting.md").read_text()
    app = SimulatedFormApp()
    replay = _replay(recorded)
    action = replay.next_action()
    assert action is not None
    printed: list[str] = []

    def catch(call: Any) -> None:
        with pytest.raises(LoopUsageError) as raised:
            call()
        printed.append(f"{type(raised.value).__name__}: {raised.value}")

    catch(lambda: replay.tool_result({**run_tool(app, action), "tool_use_id": "toolu_x"}))
    catch(lambda: replay.tool_result({"type": "text"}))
    result = run_tool(app, action)
    replay.tool_result(result)
    catch(lambda: replay.tool_result(result))
    look = replay.next_action()
    assert look is not None
    catch(lambda: replay.tool_result({"type": "tool_result", "tool_use_id": look["id"]}))
    catch(replay.done)
    replay.done(status="failed")
    catch(replay.next_action)
    catch(lambda: _replay(recorded, []))
    catch(lambda: _replay(recorded, [{"role": "robot", "content": "hi"}]))
    for line in printed:
        assert re.sub(r"'toolu_\w+'", "'toolu_…'", line) in page, line


def test_the_files_redaction_policy_holds_when_the_loop_heals_it(tmp_path: Path) -> None:
    """Recorded with every typed text secret; replayed by a loop with the default setting,
    handed back, and the model types other text: none of it is written."""
    recorded_text, typed_again = "Zebra Quartz Nine", "Mango Pelican Two"

    def run(layout: Layout, name: str, redact: str) -> Any:
        app = SimulatedFormApp(layout=layout)
        settings = CachingSettings(
            cache_dir=tmp_path,
            writing_settings=CacheWritingSettings(redact_typed_text=redact),  # type: ignore[arg-type]
            execution_settings=CacheExecutionSettings(
                parameter_values={"typed_2": recorded_text},
                settle_quiet_period=0.2,
                settle_timeout=1,
            ),
        )
        with MessagesApiStandIn(FormFillingScript(app, name)) as api:
            messages: list[dict[str, Any]] = [{"role": "user", "content": "Add the contact"}]
            replay = LoopReplay("login.json", messages, settings=settings)
            sampling_loop(api.client(), app, messages, replay)
            result = replay.done(messages)
        assert app.saved[-1] == {"name": name, "email": ""}
        return result

    run("original", recorded_text, "all")
    storage = LocalCacheStorage(tmp_path)
    assert load_cache_file(storage, "login.json").metadata.redact_typed_text == "all"
    healed = run("banner", typed_again, "off")  # handed back; the model types other text
    assert healed.replay is not None
    assert healed.replay.handback_steps == [1]
    assert healed.heal is not None
    assert healed.heal.event == "proposed"
    assert "redact_typed_text='all'" in (healed.heal.reason or "")
    written = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert any(".versions" in str(p) for p in written)
    for text in (recorded_text, typed_again):
        assert [p for p, data in written.items() if text.encode() in data] == []
