"""Secrets survive a heal on S3 (moto's real S3 API server): the healed trajectory with a
secret loads and replays, and no object under the prefix, nor the read-through copy, holds a
declared secret or typed text that is secret."""

from __future__ import annotations

from pathlib import Path

from askcache.storage.cache_storage import load_cache_file
from askcache.storage.ledger import LEDGER_FOLDER
from askcache.storage.remote import storage_for
from askcache.storage.versions import VERSIONS_FOLDER, TrajectoryVersions
from tests.integration.test_heal_secrets import NOTE, SECRET, _heal, _record, _replay


def test_a_heal_on_s3_keeps_secrets_as_placeholders_and_writes_no_typed_text(
    s3_url: str, tmp_path: Path
) -> None:
    _record(s3_url)
    healed = _heal(s3_url, note=None)  # the model types the secret again: healed
    assert healed.heal is not None
    assert healed.heal.event == "healed"
    storage = storage_for(s3_url)
    cache_file = load_cache_file(storage, "login.json")
    typed = [s.input["text"] for s in cache_file.trajectory if s.input.get("action") == "type"]
    assert typed == ["{{secret:pw}}"]
    again = _replay(s3_url, "banner")
    assert again.model_calls == 0

    # other text typed; no search, which would find Save where it moved: a hand-back
    proposed = _heal(s3_url, note=NOTE, redact="all", layout="swapped", search_radius=0)
    assert proposed.heal is not None
    assert proposed.heal.event == "proposed"
    assert TrajectoryVersions(storage, "login.json").proposals()

    names = [
        *storage.list_names(),
        *storage.list_prefix(VERSIONS_FOLDER),
        *storage.list_prefix(LEDGER_FOLDER),
    ]
    assert any("/proposed-" in name for name in names)
    objects = {name: storage.read(name).decode() for name in names}
    copies = {
        str(path): path.read_text()
        for path in (tmp_path / "local-copy").rglob("*")
        if path.is_file()
    }
    searched = {**objects, **copies}
    assert [(w, v) for w, text in searched.items() for v in (SECRET, NOTE) if v in text] == []
