"""``CachingSettings.ledger_thumbnails``: a replay that hands back on a step's pixel check keeps
the failing region, as recorded and as it was, beside its ledger entry; never one that could
show a secret (a real secret, typed and drawn on the simulated form's real screen). End to
end: the real anthropic client against the stand-in over HTTP, the real SQLite ledger."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from askcache import Agent, CacheExecutionSettings, CacheWritingSettings, CachingSettings
from askcache.agent.act import ActResult
from askcache.agent.failure_regions import secret_refusal
from askcache.foundation.errors import InvalidSettingsError
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.storage.ledger import RunLedger, open_ledger
from askcache.storage.ledger.day_totals import spot_key
from askcache.storage.ledger.spot_images import THUMBNAIL_SIDE, SpotImages, decode_thumbnail
from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp
from askcache.tools import ComputerTool

pytestmark = pytest.mark.integration

SECRET = "Tr0ub4dor&3horse"
NAME = "Ada Lovelace"
BANNER = (255, 243, 205)
"""The update notice's fill: it covers the Name field's recorded place."""


class _SwappedAfterTyping(SimulatedFormApp):
    """The form swaps its Save and Clear buttons once text is typed (an update that moved
    them): the replay's last step, the click on Save, hands back, with the typed text on
    the screen."""

    def type_text(self, text: str) -> None:
        super().type_text(text)
        self.layout = "swapped"


def _act(
    api: MessagesApiStandIn,
    app: SimulatedFormApp,
    folder: Path,
    strategy: str,
    *,
    secret: str | None = None,
    thumbnails: bool = True,
    region: int | None = None,
    **execution: Any,
) -> ActResult:
    agent = Agent(api.client(), [ComputerTool(app)], model="claude-test", sleep=lambda s: None)
    writing: dict[str, Any] = {"filename": "form.json"}
    if secret is not None:
        writing["secret_parameters"] = {"password": secret}
    if region is not None:
        writing["visual_validation_region_size"] = region
    return agent.act(
        "Type the name into the Name field and press Save",
        CachingSettings(
            strategy=strategy,  # type: ignore[arg-type]
            cache_dir=folder,
            writing_settings=CacheWritingSettings(**writing),
            execution_settings=CacheExecutionSettings(
                settle_timeout=2, model_after_hand_back=False, **execution
            ),
            ledger_thumbnails=thumbnails,
        ),
    )


def _kept(folder: Path, step: int) -> tuple[SpotImages | None, str]:
    with open_ledger(LocalCacheStorage(folder)) as ledger:
        (entry,) = (r for r in ledger.records("form.json") if r.status == "handed_back")
        key = ("form.json", spot_key(step, entry.reason_code, entry.profile))
        return _images(ledger, key), str(entry.reason_code)


def _images(ledger: RunLedger, key: tuple[str, str]) -> SpotImages | None:
    return ledger.spot_images([key]).get(key)


def test_a_hand_back_on_a_changed_screen_keeps_the_region_as_recorded_and_as_it_was(
    tmp_path: Path,
) -> None:
    app = SimulatedFormApp()
    script = FormFillingScript(app, NAME)
    with MessagesApiStandIn(script) as api:
        assert _act(api, app, tmp_path, "record").status == "done"
        changed = SimulatedFormApp(layout="banner")
        script.app = changed
        result = _act(api, changed, tmp_path, "execute")
    assert result.replay is not None
    assert (result.replay.stopped_at_step, result.replay.reason_code) == (1, "screen_changed")
    images, code = _kept(tmp_path, 1)
    assert code == "screen_changed"
    assert images is not None
    assert images.latest is not None
    assert images.recorded is not None
    latest = decode_thumbnail(images.latest, entry=images.entry_id, which="latest")
    recorded = decode_thumbnail(images.recorded, entry=images.entry_id, which="recorded")
    assert max(latest.size) <= THUMBNAIL_SIDE
    assert max(recorded.size) <= THUMBNAIL_SIDE
    colours = {c for _, c in latest.convert("RGB").getcolors(THUMBNAIL_SIDE**2) or []}
    assert any(_near(c, BANNER) for c in colours)  # the notice that made it hand back
    grey = recorded.convert("RGB").getcolors(THUMBNAIL_SIDE**2) or []
    assert not any(_near(c, BANNER) for _, c in grey)  # recorded before the notice
    assert "1/8-scale grey" in (images.recorded_note or "")
    assert images.entry_id in result.ledger_entries  # beside this hand-back's entry


def test_without_the_setting_no_image_is_kept(tmp_path: Path) -> None:
    app = SimulatedFormApp()
    script = FormFillingScript(app, NAME)
    with MessagesApiStandIn(script) as api:
        assert _act(api, app, tmp_path, "record", thumbnails=False).status == "done"
        changed = SimulatedFormApp(layout="banner")
        script.app = changed
        _act(api, changed, tmp_path, "execute", thumbnails=False)
    images, code = _kept(tmp_path, 1)
    assert code == "screen_changed"
    assert images is None


def _typed_and_swapped(tmp_path: Path, *, secret: bool) -> tuple[SpotImages | None, ActResult]:
    """Record typing a value (a declared secret, or a plain name) with a check region large
    enough to hold the Name field from the Save button's point; replay on a form that moves
    Save once the value is typed."""
    value = SECRET if secret else NAME
    app = SimulatedFormApp()
    script = FormFillingScript(app, value)
    extra: dict[str, Any] = {"parameter_values": {"password": SECRET}} if secret else {}
    with MessagesApiStandIn(script) as api:
        recorded = _act(api, app, tmp_path, "record", secret=SECRET if secret else None, region=300)
        assert recorded.status == "done"
        changed = _SwappedAfterTyping()
        script.app = changed
        result = _act(api, changed, tmp_path, "execute", **extra)
        assert changed.values["name"] == value  # typed by the replay: on the screen now
    assert result.replay is not None
    assert result.replay.reason_code == "screen_changed"
    step = result.replay.stopped_at_step
    assert step is not None
    images, _ = _kept(tmp_path, step)
    return images, result


def test_no_image_of_a_region_over_the_field_a_secret_was_typed_into(tmp_path: Path) -> None:
    images, result = _typed_and_swapped(tmp_path, secret=True)
    assert images is not None  # the spot is noted, with why nothing is kept
    assert images.latest is None
    assert images.recorded is None
    assert "typed a secret into" in (images.latest_note or "")
    assert SECRET not in images.model_dump_json()
    database = (tmp_path / ".ledger" / "ledger.sqlite3").read_bytes()
    assert b"\x89PNG" not in database
    assert b"iVBORw0KGgo" not in database  # no PNG, base64 either
    # the same run with a plain name in place of the secret keeps both pictures: the secret
    # alone made the difference
    plain, _ = _typed_and_swapped(tmp_path / "plain", secret=False)
    assert plain is not None
    assert plain.latest is not None
    with Image.open(io.BytesIO(plain.latest)) as shown:
        assert shown.format == "PNG"
    # and the step that types the secret is never pictured either
    cache_file = load_cache_file(LocalCacheStorage(tmp_path), "form.json")
    typing = next(i for i, s in enumerate(cache_file.trajectory) if s.input.get("action") == "type")
    steps = len(cache_file.trajectory)

    def refusal(index: int, box: tuple[int, int, int, int], *, placed: bool = True) -> str | None:
        """Why step ``index``'s region ``box`` may not be pictured (``placed``: every step's
        point is known; else none is)."""
        anchors = [(360, 88) if placed else None] * steps
        return secret_refusal(
            cache_file,
            cache_file.trajectory,
            anchors,
            index=index,
            box=box,
            values={"password": SECRET},
        )

    assert "types a secret" in (refusal(typing, (0, 0, 10, 10)) or "")
    # a secret typed where askcache cannot place it (no anchor): no later step is pictured
    last = steps - 1
    assert "cannot place it" in (refusal(last, (600, 380, 640, 400), placed=False) or "")
    # and far from where it was typed, a later step's region may be pictured
    assert refusal(last, (0, 330, 40, 400)) is None
    assert result.replay is not None


def test_the_setting_is_validated() -> None:
    with pytest.raises(InvalidSettingsError, match="ledger_thumbnails"):
        CachingSettings(ledger_thumbnails="sometimes")  # type: ignore[arg-type]
    with pytest.raises(InvalidSettingsError, match="ledger_thumbnail"):
        CachingSettings(ledger_thumbnail=True)  # type: ignore[call-arg]
    assert CachingSettings().ledger_thumbnails is False


def _near(colour: Any, target: tuple[int, int, int]) -> bool:
    return all(abs(int(a) - b) <= 12 for a, b in zip(colour, target, strict=False))


def test_the_own_loop_keeps_them_too(tmp_path: Path) -> None:
    from tests.integration.test_own_loop import _run

    first, _, _ = _run(tmp_path, "original", "alice", ledger_thumbnails=True)
    assert first.strategy == "record"
    result, _, _ = _run(tmp_path, "banner", "bob", ledger_thumbnails=True)
    assert result.replay is not None
    assert (result.replay.stopped_at_step, result.replay.reason_code) == (1, "screen_changed")
    with open_ledger(LocalCacheStorage(tmp_path)) as ledger:
        (entry,) = (r for r in ledger.records("login.json") if r.status == "handed_back")
        key = ("login.json", spot_key(1, entry.reason_code, entry.profile))
        images = _images(ledger, key)
    assert images is not None
    assert images.latest is not None
    latest = decode_thumbnail(images.latest, entry=images.entry_id, which="latest")
    colours = {c for _, c in latest.convert("RGB").getcolors(THUMBNAIL_SIDE**2) or []}
    assert any(_near(c, BANNER) for c in colours)
