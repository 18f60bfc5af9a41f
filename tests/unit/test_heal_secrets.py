"""How a heal tells a file's secrets from its parameters, and which redaction it applies
(the runs themselves: tests/integration/test_heal_secrets.py)."""

from __future__ import annotations

from askcache.heal import _writing_settings, redact_mode
from askcache.storage import LocalCacheStorage
from tests.helpers import record_form


def test_the_rebuild_knows_the_files_secret_parameters_as_secrets(
    storage: LocalCacheStorage,
) -> None:
    cache_file = record_form(storage, secret_parameters={"pw": "Ada Lovelace"})
    settings = _writing_settings(cache_file, {"pw": "Grace Hopper", "other": "x"})
    assert settings.secret_parameters == {"pw": "Grace Hopper"}
    assert settings.parameters == {"other": "x"}


def test_a_file_recorded_with_typed_text_redacted_is_healed_with_it_redacted(
    storage: LocalCacheStorage,
) -> None:
    plain = record_form(storage, "plain.json", parameters={"user": "Ada Lovelace"})
    assert redact_mode(plain, "off") == "off"
    assert redact_mode(plain, "all") == "all"
    typed = record_form(storage, "typed.json", redact_typed_text="all")
    assert "{{secret:typed_2}}" in typed.trajectory[2].input["text"]
    assert redact_mode(typed, "off") == "password_like"
    assert redact_mode(typed, "all") == "all"
