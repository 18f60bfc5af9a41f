"""Secrets are never stored, and signed files are refused when changed: end to end, through
the real anthropic client and the local Messages API stand-in."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from askcache import Agent, CacheExecutionSettings, CacheWritingSettings, CachingSettings
from askcache.cachefile.signing import SigningKeys
from askcache.cli.app import main
from askcache.cli.html_report import ReplaySection, write_html_report
from askcache.foundation.errors import CacheSignatureError, InvalidSettingsError
from askcache.storage.cache_storage import LocalCacheStorage
from askcache.storage.ledger import open_ledger
from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp
from askcache.tools import ComputerTool

pytestmark = pytest.mark.integration

SECRET = "hunter2-Secret!"
GOAL = f"Type the password {SECRET} into the Name field and press Save"
KEY = "team-2026q4:0123456789abcdef0123456789abcdef"
NEW_KEY = "team-2027q1:fedcba9876543210fedcba9876543210"


class _EchoingApp(SimulatedFormApp):
    """A backend whose error message echoes what was typed, as some do."""

    def type_text(self, text: str) -> None:
        raise ValueError(f"the field rejected {text!r}")


def _act(
    api: MessagesApiStandIn,
    app: SimulatedFormApp,
    folder: Path,
    strategy: str,
    writing: CacheWritingSettings | None = None,
    **execution: object,
) -> object:
    agent = Agent(api.client(), [ComputerTool(app)], model="claude-test", sleep=lambda s: None)
    return agent.act(
        GOAL,
        CachingSettings(
            strategy=strategy,  # type: ignore[arg-type]
            cache_dir=folder,
            writing_settings=writing or CacheWritingSettings(filename="login.json"),
            execution_settings=CacheExecutionSettings(delay_time_between_action=0, **execution),  # type: ignore[arg-type]
        ),
    )


def test_a_secret_is_never_written_to_files_failures_logs_or_reports(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="askcache")
    app = SimulatedFormApp()
    script = FormFillingScript(app, SECRET)
    writing = CacheWritingSettings(filename="login.json", secret_parameters={"password": SECRET})
    assert SECRET not in repr(writing)
    with MessagesApiStandIn(script) as api:
        _act(api, app, tmp_path, "record", writing)
        assert app.saved == [{"name": SECRET, "email": ""}]
        text = (tmp_path / "login.json").read_text()
        assert SECRET not in text
        data = json.loads(text)
        assert data["metadata"]["goal"] == (
            "Type the password {{secret:password}} into the Name field and press Save"
        )
        assert data["trajectory"][2]["input"]["text"] == "{{secret:password}}"

        replay_app = SimulatedFormApp()
        script.app = replay_app
        replayed = _act(api, replay_app, tmp_path, "execute", parameter_values={"password": SECRET})
        assert replay_app.saved == [{"name": SECRET, "email": ""}]  # typed from the caller
        assert replayed.model_calls == 0  # type: ignore[attr-defined]

        echoing = _EchoingApp()
        script.app = echoing
        failed = _act(
            api,
            echoing,
            tmp_path,
            "execute",
            parameter_values={"password": SECRET},
            rejoin=False,
        )
        result = failed.replay  # type: ignore[attr-defined]
        assert result.status == "handed_back"
        assert result.stopped_at_step == 2
    entry = open_ledger(LocalCacheStorage(tmp_path)).records("login.json")[-1]
    assert "the field rejected '[secret:password]'" in (entry.reason or "")
    assert SECRET not in "".join(
        (tmp_path / name).read_bytes().decode("utf-8", "replace")
        for name in LocalCacheStorage(tmp_path).list_prefix(".ledger")
    )
    assert SECRET not in (tmp_path / "login.json").read_text()
    ours = [r for r in caplog.records if r.name.startswith("askcache")]
    logged = "\n".join(r.getMessage() + (r.exc_text or "") for r in ours)
    assert "[secret:password]" in logged
    assert SECRET not in logged  # (the goal itself goes to the model: the SDK's own debug log)
    report = write_html_report(
        tmp_path / "report.html",
        title="replay",
        recorded={},
        sections=[ReplaySection(title="failed replay", result=result)],
    )
    assert SECRET not in report.read_text()
    # askcache report, in a process that learns the secret only from --param
    SimulatedFormApp().screenshot().save(tmp_path / "form.png")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "askcache.cli",
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
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "login.html").read_text()
    assert "the field rejected &#x27;[secret:password]&#x27;" in page  # the ledger's reason
    assert "{{secret:password}}" in page  # the typed text as the file stores it
    assert SECRET not in page
    assert SECRET not in done.stdout + done.stderr


def test_password_like_typed_text_can_be_redacted_without_declaring_it(tmp_path: Path) -> None:
    app = SimulatedFormApp()
    with MessagesApiStandIn(FormFillingScript(app, SECRET)) as api:
        _act(
            api,
            app,
            tmp_path,
            "record",
            CacheWritingSettings(filename="login.json", redact_typed_text="password_like"),
        )
    text = (tmp_path / "login.json").read_text()
    assert SECRET not in text
    assert "{{secret:typed_2}}" in text


def test_signed_files_verify_and_changed_or_unsigned_ones_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ASKCACHE_SIGNING_KEY", KEY)
    app = SimulatedFormApp()
    script = FormFillingScript(app, "Ada Lovelace")
    with MessagesApiStandIn(script) as api:
        _act(api, app, tmp_path, "record")
        path = tmp_path / "login.json"
        data = json.loads(path.read_text())
        assert data["signature"]["key_id"] == "team-2026q4"
        assert KEY.split(":")[1] not in path.read_text()

        for _ in range(2):  # the bookkeeping a replay saves is not signed: still valid
            fresh = SimulatedFormApp()
            script.app = fresh
            assert _act(api, fresh, tmp_path, "execute").model_calls == 0  # type: ignore[attr-defined]
            assert fresh.saved == [{"name": "Ada Lovelace", "email": ""}]

        tampered = json.loads(path.read_text())
        tampered["trajectory"][2]["input"]["text"] = "Ada Lovemace"
        path.write_text(json.dumps(tampered))
        untouched = SimulatedFormApp()
        with pytest.raises(CacheSignatureError, match="does not match the content"):
            _act(api, untouched, tmp_path, "execute")
        assert untouched.events == []

        del tampered["signature"]
        path.write_text(json.dumps(tampered))
        with pytest.raises(CacheSignatureError, match="not signed"):
            _act(api, untouched, tmp_path, "execute")

        # rotation: a new signing key, the old one kept for verifying only
        path.write_text(json.dumps(data))
        monkeypatch.setenv("ASKCACHE_SIGNING_KEY", NEW_KEY)
        with pytest.raises(CacheSignatureError, match="key 'team-2026q4', which is not among"):
            _act(api, untouched, tmp_path, "execute")
        monkeypatch.setenv("ASKCACHE_SIGNING_VERIFY_KEYS", KEY)
        assert main(["check-signature", "login.json", "--cache-dir", str(tmp_path)]) == 0
        assert main(["sign", "login.json", "--cache-dir", str(tmp_path)]) == 0
        assert json.loads(path.read_text())["signature"]["key_id"] == "team-2027q1"
        monkeypatch.delenv("ASKCACHE_SIGNING_VERIFY_KEYS")
        assert main(["check-signature", "login.json", "--cache-dir", str(tmp_path)]) == 0
        assert KEY.split(":")[1] not in capsys.readouterr().out

        monkeypatch.delenv("ASKCACHE_SIGNING_KEY")
        with pytest.raises(CacheSignatureError, match="no key is set"):
            _act(api, untouched, tmp_path, "execute", require_signature=True)
        script.app = untouched
        assert _act(api, untouched, tmp_path, "execute").model_calls == 0  # type: ignore[attr-defined]


def test_a_malformed_key_is_a_settings_error_that_does_not_show_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ASKCACHE_SIGNING_KEY", "no-colon-0123456789abcdef")
    with pytest.raises(InvalidSettingsError) as info:
        SigningKeys.from_env()
    assert "0123456789abcdef" not in str(info.value)
    monkeypatch.setenv("ASKCACHE_SIGNING_KEY", "short:abc")
    assert main(["sign", "x.json", "--cache-dir", str(tmp_path)]) == 3
    err = capsys.readouterr().err
    assert "shorter than 16" in err
    assert "abc" not in err.replace("abcdef", "")
