"""How a heal tells a file's secrets from its parameters, which redaction it applies, and
the rule recording shares with it for typed text (the runs themselves:
tests/integration/test_heal_secrets.py)."""

from __future__ import annotations

from typing import Any

from askcache.cachefile.format import CacheFile, dump_cache_file
from askcache.foundation.settings import CacheWritingSettings
from askcache.heal.trajectory import _writing_settings, redact_mode
from askcache.record.recording import CacheManager
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.testing import SimulatedFormApp
from tests.helpers import GOAL, form_calls, record_form, run_history


def _with_secret(cache_file: CacheFile, name: str) -> CacheFile:
    """``cache_file`` whose typed text is the secret ``name``, as a recording with a secret
    writes it (made here without registering a secret: the registry lives as long as the
    process, and other tests type the same text)."""
    step = cache_file.trajectory[2]
    text = "{{secret:" + name + "}}"
    cache_file.trajectory[2] = step.model_copy(update={"input": {**step.input, "text": text}})
    return cache_file


def test_the_rebuild_knows_the_files_secret_parameters_as_secrets(
    storage: LocalCacheStorage,
) -> None:
    cache_file = _with_secret(record_form(storage), "pw")
    settings = _writing_settings(cache_file, {"pw": "Grace Hopper", "other": "x"})
    assert settings.secret_parameters == {"pw": "Grace Hopper"}
    assert settings.parameters == {"other": "x"}


def test_a_file_recorded_with_typed_text_redacted_is_healed_with_it_redacted(
    storage: LocalCacheStorage,
) -> None:
    plain = record_form(storage, "plain.json", parameters={"user": "Ada Lovelace"})
    assert redact_mode(plain, "off") == "off"
    assert redact_mode(plain, "all") == "all"
    typed = _with_secret(record_form(storage, "typed.json"), "typed_2")
    assert redact_mode(typed, "off") == "password_like"
    assert redact_mode(typed, "all") == "all"


def test_recording_stores_typed_text_holding_part_of_a_secret_as_a_secret_of_its_own(
    storage: LocalCacheStorage,
) -> None:
    app = SimulatedFormApp()
    manager = CacheManager(
        storage,
        CacheWritingSettings(filename="f.json", secret_parameters={"pw": "Zq9-Fragment-Pw"}),
    )
    manager.start_recording(GOAL)
    manager.finish_recording(run_history(app, form_calls(app, "Zq9-Frag")))
    cache_file = load_cache_file(storage, "f.json")
    assert cache_file.trajectory[2].input["text"] == "{{secret:typed_2}}"
    assert "typed_2" in cache_file.cache_parameters
    assert "Zq9-Frag" not in storage.read("f.json").decode()


def _record_typing(storage: LocalCacheStorage, name: str, **writing: Any) -> CacheFile:
    """Record the form filled with text no other test types (typed text redaction
    registers it as a secret for the rest of the process)."""
    app = SimulatedFormApp()
    manager = CacheManager(storage, CacheWritingSettings(filename=name, **writing))
    manager.start_recording(GOAL)
    manager.finish_recording(run_history(app, form_calls(app, TYPED)))
    return load_cache_file(storage, name)


TYPED = "Policy-Travels-Text"


def test_the_files_own_policy_is_stored_and_a_heal_applies_the_stricter_of_it_and_the_runs(
    storage: LocalCacheStorage,
) -> None:
    secret = _record_typing(storage, "all.json", redact_typed_text="all")
    assert secret.metadata.redact_typed_text == "all"
    assert secret.trajectory[2].input["text"] == "{{secret:typed_2}}"
    assert redact_mode(secret, "off") == "all"  # the replay's default never loosens it
    assert redact_mode(secret, "password_like") == "all"
    assert record_form(storage, "plain.json").metadata.redact_typed_text == "off"
    older = _with_secret(record_form(storage, "older.json"), "pw")
    older.metadata.redact_typed_text = None  # written before the policy was stored
    assert redact_mode(older, "off") == "off"  # the run's, as before
    assert redact_mode(older, "all") == "all"
    assert CacheFile.model_validate_json(dump_cache_file(older)).metadata.redact_typed_text is None


def test_recording_over_a_trajectory_keeps_its_stricter_policy(
    storage: LocalCacheStorage,
) -> None:
    _record_typing(storage, "f.json", redact_typed_text="all")
    again = _record_typing(storage, "f.json")  # recorded again with the default, "off"
    assert again.metadata.redact_typed_text == "all"
    assert again.trajectory[2].input["text"] == "{{secret:typed_2}}"
    assert TYPED not in storage.read("f.json").decode()
