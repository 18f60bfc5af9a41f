"""Secrets survive a heal, and no typed text that is secret is written anywhere: end to end,
through the real anthropic client and the local Messages API stand-in, on the simulated form.

The run: record a login that types a declared secret; replay on a changed screen, where the
replay hands back and the model types the secret again, and other text; heal. Then every
file under the cache folder, every output of the ``askcache`` command (in a fresh process,
with and without ``--json``), the HTML report and the DEBUG logs are searched for the
secret and the typed text.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from askcache import (
    ActResult,
    Agent,
    CacheExecutionSettings,
    CacheWritingSettings,
    CachingSettings,
    ComputerTool,
    open_ledger,
)
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.storage.versions import TrajectoryVersions
from askcache.testing import (
    FormFillingScript,
    MessagesApiStandIn,
    SimulatedFormApp,
    text_reply,
    tool_use_reply,
)
from askcache.testing.messages_api import Reply
from askcache.testing.simulated import Layout

pytestmark = pytest.mark.integration

SECRET = "hunter2-Secret!"
NOTE = "Lovelace-Analytical-Engine"
"""Other text the model types after the hand-back (into the Email field)."""
GOAL = "Log in to the contacts form"


class _TypesSecretAndNote:
    """A scripted model that types ``name`` into Name (``chunk`` characters at a time, when
    given) and, when ``note`` is given, ``note`` into Email, then saves (the form-filling
    script's moves, one more field)."""

    def __init__(
        self, app: SimulatedFormApp, name: str, note: str | None, chunk: int | None = None
    ) -> None:
        self.app, self.name, self.note, self.chunk = app, name, note, chunk

    def _act(self, action: str, **arguments: Any) -> Reply:
        return tool_use_reply("computer", {"action": action, **arguments})

    def _fill(self, field: str, text: str) -> Reply:
        if self.app.focus != field:
            return self._act("left_click", coordinate=list(self.app.widget(field).center))
        return self._act("type", text=text)

    def __call__(self, request: dict[str, Any]) -> Reply:
        app = self.app
        last = request["messages"][-1]
        if not (
            isinstance(last.get("content"), list)
            and any(block.get("type") == "tool_result" for block in last["content"])
        ):
            return self._act("screenshot")
        if app.saved and app.saved[-1]["name"] == self.name:
            return text_reply("Saved.")
        if app.values["name"] != self.name:
            if not self.name.startswith(app.values["name"]):
                return self._act("left_click", coordinate=list(app.widget("clear").center))
            rest = self.name[len(app.values["name"]) :]
            return self._fill("name", rest[: self.chunk or len(rest)])
        if self.note is not None and app.values["email"] != self.note:
            return self._fill("email", self.note)
        return self._act("left_click", coordinate=list(app.widget("save").center))


def _settings(
    folder: Path | str, redact: str = "off", search_radius: int = 320, **caching: Any
) -> CachingSettings:
    return CachingSettings(
        cache_dir=folder,
        writing_settings=CacheWritingSettings(
            filename="login.json",
            secret_parameters={"pw": SECRET},
            redact_typed_text=redact,  # type: ignore[arg-type]
        ),
        execution_settings=CacheExecutionSettings(
            parameter_values={"pw": SECRET},
            settle_quiet_period=0.2,
            settle_timeout=1,
            search_radius=search_radius,
        ),
        **caching,
    )


def _act(script: Any, app: SimulatedFormApp, settings: CachingSettings) -> ActResult:
    with MessagesApiStandIn(script) as api:
        return Agent(api.client(), [ComputerTool(app)], sleep=lambda s: None).act(GOAL, settings)


def _record(folder: Path | str, redact: str = "off") -> None:
    app = SimulatedFormApp()
    settings = _settings(folder, redact, strategy="record")
    result = _act(FormFillingScript(app, SECRET), app, settings)
    assert result.conversation.recorded_file == "login.json"


def _heal(
    folder: Path | str,
    note: str | None,
    redact: str = "off",
    chunk: int | None = None,
    layout: Layout = "banner",
    *,
    search_radius: int = 320,
) -> ActResult:
    app = SimulatedFormApp(layout=layout)
    script = _TypesSecretAndNote(app, SECRET, note, chunk)
    result = _act(script, app, _settings(folder, redact, search_radius))
    assert app.saved[-1]["name"] == SECRET
    assert result.replay is not None
    assert result.replay.status == "handed_back"
    return result


def _replay(folder: Path | str, layout: Layout) -> ActResult:
    app = SimulatedFormApp(layout=layout)
    result = _act(FormFillingScript(app, SECRET), app, _settings(folder))
    assert app.saved == [{"name": SECRET, "email": ""}]
    return result


def test_a_heal_stores_a_retyped_secret_as_its_placeholder_and_the_file_loads_and_replays(
    tmp_path: Path,
) -> None:
    _record(tmp_path)
    healed = _heal(tmp_path, note=None)
    assert healed.heal is not None
    assert (healed.heal.event, healed.heal.reason) == ("healed", None)
    storage = LocalCacheStorage(tmp_path)
    cache_file = load_cache_file(storage, "login.json")  # loads
    typed = [s.input["text"] for s in cache_file.trajectory if s.input.get("action") == "type"]
    assert typed == ["{{secret:pw}}"]
    assert "{{pw}}" not in storage.read("login.json").decode()
    again = _replay(tmp_path, "banner")  # replays the healed way, with no model call
    assert again.model_calls == 0
    assert again.replay is not None
    assert again.replay.status == "completed"


@pytest.mark.parametrize(
    "case",
    [
        # the secret, then other text that is no parameter while all typed text is secret
        ("off", "all", None, ["{{secret:pw}}", "{{secret:typed_"], "with redact_typed_text='all'"),
        # the same, all typed text secret by the file's own policy (recorded so), the replay
        # run with the default setting: the file's policy holds
        ("all", "off", None, ["{{secret:pw}}", "{{secret:typed_"], "with redact_typed_text='all'"),
        # the secret typed in two pieces, neither of which is its value
        ("off", "off", 8, ["{{secret:typed_"] * 2, "part of the value of the secret"),
    ],
    ids=["other-text-redacted", "file-policy-all", "secret-in-pieces"],
)
def test_typed_text_that_cannot_be_stored_is_a_proposal_without_it_and_written_nowhere(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    case: tuple[str, str, int | None, list[str], str],
) -> None:
    recorded_with, redact, chunk, typed, why = case
    caplog.set_level(logging.DEBUG)  # every logger: askcache's and the SDK's request bodies
    _record(tmp_path, recorded_with)
    storage = LocalCacheStorage(tmp_path)
    recorded = storage.read("login.json")
    assert load_cache_file(storage, "login.json").metadata.redact_typed_text == recorded_with
    note = NOTE if "all" in (recorded_with, redact) else None
    result = _heal(tmp_path, note=note, redact=redact, chunk=chunk)
    assert result.heal is not None
    assert result.heal.event == "proposed"  # a replay would need a value nobody has
    assert result.heal.reason is not None
    assert why in result.heal.reason
    assert storage.read("login.json") == recorded
    versions = TrajectoryVersions(storage, "login.json")
    proposal = load_cache_file(storage, versions.proposals()[0])  # loads
    stored = [s.input["text"] for s in proposal.trajectory if s.input.get("action") == "type"]
    assert [text[: len(start)] for text, start in zip(stored, typed, strict=True)] == typed
    assert proposal.metadata.redact_typed_text == ("all" if note else "off")  # travels on
    entries = open_ledger(storage).records("login.json")
    assert [e.reason for e in entries if e.event == "proposed"] == [result.heal.reason]

    # the HTML report and every command's output, in a process that knows no secret but
    # the one given with --param (the command line of report and replay --dry-run)
    SimulatedFormApp().screenshot().save(tmp_path / "form.png")
    outputs = _run_commands(tmp_path)
    assert set(outputs) == set(_COMMANDS)
    assert "{{secret:pw}}" in outputs["show"]  # the outputs show the stored placeholders
    assert "+" in outputs["diff"]

    written = {
        str(path.relative_to(tmp_path)): path.read_bytes().decode("utf-8", "replace")
        for path in tmp_path.rglob("*")
        if path.is_file() and path.suffix != ".png"
    }
    assert any(name.startswith(".versions/login.json/proposed-") for name in written)
    assert ".ledger/ledger.sqlite3" in written  # searched for the secret like every file
    assert "report.html" in written
    logged = "\n".join(caplog.text.splitlines())
    assert "Request options" in logged  # the SDK's DEBUG records were captured
    searched = {**written, **{f"askcache {k}": v for k, v in outputs.items()}, "logs": logged}
    values = (SECRET, NOTE, SECRET[:8], SECRET[8:])  # the typed texts
    hits = [(where, value) for where, text in searched.items() for value in values]
    assert [(where, value) for where, value in hits if value in searched[where]] == []


_COMMANDS = {
    "show": ["show", "login"],
    "diff": ["diff", "login"],
    "list": ["list"],
    "stats": ["stats"],
    "lint": ["lint"],
    "report": ["report", "login", "--screenshots", "{form}", "--output", "{report}"],
    "replay --dry-run": ["replay", "login", "--dry-run", "--screenshot", "{form}"],
}


def _run_commands(folder: Path) -> dict[str, str]:
    """Every command's output (stdout and stderr, with and without ``--json``), run in one
    fresh process."""
    script = textwrap.dedent(
        """
        import contextlib, io, json, sys
        from askcache.cli.app import main
        outputs = {}
        for label, argv in json.loads(sys.argv[1]).items():
            for extra in ([], ["--json"]):
                out, err = io.StringIO(), io.StringIO()
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    code = main([*argv, *extra])
                outputs.setdefault(label, "")
                outputs[label] += f"exit {code}\\n" + out.getvalue() + err.getvalue()
        print(json.dumps(outputs))
        """
    )
    commands = {
        label: [arg.format(form=folder / "form.png", report=folder / "report.html") for arg in argv]
        + ["--cache-dir", str(folder)]
        + (["--param", f"pw={SECRET}"] if label in ("report", "replay --dry-run") else [])
        for label, argv in _COMMANDS.items()
    }
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(commands)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.returncode == 0, done.stderr
    outputs: dict[str, str] = json.loads(done.stdout)
    for label, text in outputs.items():
        assert "exit 70" not in text, (label, text)  # no internal error
    return {label: text + done.stderr for label, text in outputs.items()}
