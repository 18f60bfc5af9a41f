"""A secret with both quote characters, and a backend error that quotes the typed text: never
shown in any form a writer renders it in, end to end (the real anthropic client against the
stand-in over HTTP, the real CLI in its own process, the ledger and the report page)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from askcache import Agent, CacheExecutionSettings, CacheWritingSettings, CachingSettings
from askcache.agent.act import ActResult
from askcache.cli.html_report import ReplaySection, write_html_report
from askcache.storage.cache_storage import LocalCacheStorage
from askcache.storage.ledger import open_ledger
from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp
from askcache.tools import ComputerTool

pytestmark = pytest.mark.integration

SECRET = "Tr0ub4dor&'3\"horse"
"""Both quote characters: Python's repr writes it ``'Tr0ub4dor&\\'3"horse'``."""
GOAL = "Type the password into the Name field and press Save"
MARK = "[secret:password]"


class _FailingOnceApp(SimulatedFormApp):
    """A backend whose first ``type`` fails with an error quoting the text, as input and RPC
    wrappers do (``{text!r}`` or as is)."""

    def __init__(self, quoting: str) -> None:
        super().__init__()
        self.quoting = quoting
        self.failed = False

    def type_text(self, text: str) -> None:
        if not self.failed:
            self.failed = True
            shown = repr(text) if self.quoting == "repr" else text
            raise RuntimeError(f"xdotool: could not type {shown} into the focused window")
        super().type_text(text)


def _leaks(text: str) -> list[str]:
    """The pieces of :data:`SECRET` found in ``text``: its two ends, which every form of it
    holds (no writer escapes them), so any form, or part, of it is found."""
    return [piece for piece in ("Tr0ub4dor", "horse") if piece in text]


def _act(
    api: MessagesApiStandIn,
    app: SimulatedFormApp,
    folder: Path,
    strategy: str,
    **execution: Any,
) -> ActResult:
    agent = Agent(api.client(), [ComputerTool(app)], model="claude-test", sleep=lambda s: None)
    writing = CacheWritingSettings(filename="login.json", secret_parameters={"password": SECRET})
    return agent.act(
        GOAL,
        CachingSettings(
            strategy=strategy,
            cache_dir=folder,
            writing_settings=writing,
            execution_settings=CacheExecutionSettings(delay_time_between_action=0, **execution),
        ),
    )


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The real ``askcache`` command, in a process of its own (it knows no secret unless
    ``--param`` gives it)."""
    return subprocess.run(
        [sys.executable, "-m", "askcache.cli", *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


def _sent_to_the_model(requests: list[dict[str, Any]]) -> list[str]:
    """Every text of the user's side of every request the stand-in received: text blocks
    and tool results (what the tools and the replay told the model)."""
    texts: list[str] = []
    for request in requests:
        for message in request["messages"]:
            if message["role"] != "user" or isinstance(message["content"], str):
                continue
            for block in message["content"]:
                if block["type"] == "text":
                    texts.append(block["text"])
                elif block["type"] == "tool_result":
                    content = block.get("content") or []
                    items = [content] if isinstance(content, str) else content
                    texts += [i if isinstance(i, str) else i.get("text", "") for i in items]
    return texts


@pytest.mark.parametrize("quoting", ["repr", "plain"])
def test_a_secret_with_both_quotes_and_an_error_quoting_it_is_masked_everywhere(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, quoting: str
) -> None:
    caplog.set_level(logging.DEBUG, logger="askcache")
    caplog.set_level(logging.DEBUG, logger="anthropic")  # the SDK logs each request's body
    app = SimulatedFormApp()
    script = FormFillingScript(app, SECRET)
    with MessagesApiStandIn(script) as api:
        _act(api, app, tmp_path, "record")  # a plain recording
        assert app.saved == [{"name": SECRET, "email": ""}]
        sdk = [r for r in caplog.records if r.name.startswith("anthropic")]
        assert any("Request options" in r.getMessage() for r in sdk)
        assert any(MARK in r.getMessage() for r in sdk)  # the model's type call, masked
        caplog.clear()

        failing = _FailingOnceApp(quoting)
        script.app = failing
        seen = len(api.requests)
        result = _act(
            api, failing, tmp_path, "execute", parameter_values={"password": SECRET}, rejoin=False
        )
        after = api.requests[seen:]
    # the model took over after the hand-back and typed it itself
    assert failing.saved == [{"name": SECRET, "email": ""}]
    replay = result.replay
    assert replay is not None
    assert replay.status == "handed_back"
    assert replay.stopped_at_step == 2
    quoted = repr(MARK) if quoting == "repr" else MARK
    assert f"could not type {quoted} into" in (replay.reason or "")
    assert _leaks(replay.reason or "") == []
    assert _leaks(repr(result)) == []
    assert MARK in repr(result)

    # what the model was sent over HTTP: the failed call's tool result and the hand-back
    sent = _sent_to_the_model(after)
    assert any("could not type" in text and MARK in text for text in sent)
    assert [text for text in sent if _leaks(text)] == []

    # the log: askcache's records (the tool's traceback included) and the SDK's bodies
    logged = "\n".join(r.getMessage() + (r.exc_text or "") for r in caplog.records)
    assert "could not type" in logged
    assert _leaks(logged) == []

    # the ledger entry, written and read back
    entry = open_ledger(LocalCacheStorage(tmp_path)).records("login.json")[-1]
    assert "could not type" in (entry.reason or "")
    assert _leaks(entry.reason or "") == []
    stored = "".join(
        path.read_bytes().decode("utf-8", "replace")
        for path in tmp_path.rglob("*")
        if path.is_file()
    )
    assert _leaks(stored) == []

    # askcache show, text and --json, in a process that never learned the secret
    shown = _cli("show", "login", "--cache-dir", str(tmp_path))
    assert shown.returncode == 0, shown.stderr
    assert "could not type" in shown.stdout
    as_json = _cli("show", "login", "--cache-dir", str(tmp_path), "--json")
    assert as_json.returncode == 0, as_json.stderr
    json.loads(as_json.stdout)
    assert "could not type" in as_json.stdout
    for done in (shown, as_json):
        assert _leaks(done.stdout + done.stderr) == []

    # the report page: written here, and by askcache report given the secret by --param
    page = write_html_report(
        tmp_path / "replay.html",
        title="replay",
        recorded={},
        sections=[ReplaySection(title="failed replay", result=replay)],
    ).read_text()
    assert "could not type" in page
    assert _leaks(page) == []
    SimulatedFormApp().screenshot().save(tmp_path / "form.png")
    reported = _cli(
        "report",
        "login",
        "--cache-dir",
        str(tmp_path),
        "--screenshots",
        str(tmp_path / "form.png"),
        "--param",
        f"password={SECRET}",
        "--output",
        str(tmp_path / "login.html"),
    )
    assert reported.returncode == 0, reported.stderr
    page = (tmp_path / "login.html").read_text()
    assert "could not type" in page
    assert _leaks(page + reported.stdout + reported.stderr) == []
