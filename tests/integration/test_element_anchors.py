"""Element anchors on the simulated form: the element under each click is recorded beside its
pixels and checked with them (:mod:`askcache.replay.element_check`).

The form answers what element is where as an accessibility tree would
(:meth:`~askcache.testing.SimulatedFormApp.elements`); the real ``anthropic`` client speaks
over HTTP to the local stand-in. What the form received is read from the form itself (its
events, its saved contacts). The real trees (AT-SPI on GTK, Qt and Chromium) are tested in
``test_atspi_elements.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from askcache import ActResult, Agent, CacheExecutionSettings, CacheWritingSettings, CachingSettings
from askcache.cli.app import main
from askcache.storage.cache_storage import LocalCacheStorage, load_cache_file
from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp, text_reply
from askcache.tools.computer import ComputerTool

pytestmark = pytest.mark.integration

GOAL = "Type Ada Lovelace into the Name field and press Save"
ADA = [{"name": "Ada Lovelace", "email": ""}]
CLICK_NAME, CLICK_SAVE = 1, 3


def _settings(cache: Path, strategy: str, **execution: Any) -> CachingSettings:
    return CachingSettings(
        strategy=strategy,  # type: ignore[arg-type]
        cache_dir=cache,
        writing_settings=CacheWritingSettings(filename="form.json"),
        execution_settings=CacheExecutionSettings(delay_time_between_action=0, **execution),
    )


def _record(cache: Path, app: SimulatedFormApp | None = None) -> None:
    app = app or SimulatedFormApp(accessible=True)
    script = FormFillingScript(app, "Ada Lovelace")
    with MessagesApiStandIn(script) as api:
        agent = Agent(api.client(), [ComputerTool(app)], model="claude-test", sleep=lambda s: None)
        assert agent.act(GOAL, _settings(cache, "record")).status == "done"
    assert app.saved == ADA


def _replay(cache: Path, app: SimulatedFormApp, **execution: Any) -> ActResult:
    stop = text_reply("The form does not look as expected; I stop here.")
    with MessagesApiStandIn([stop]) as api:
        agent = Agent(api.client(), [ComputerTool(app)], model="claude-test", sleep=lambda s: None)
        result = agent.act(GOAL, _settings(cache, "execute", **execution))
    assert result.replay is not None
    return result


def _decided(result: ActResult) -> dict[int, str | None]:
    assert result.replay is not None
    return {r.step_index: r.decided_by for r in result.replay.steps if r.action == "left_click"}


def _clicked(app: SimulatedFormApp) -> list[str]:
    return [event.rsplit(" -> ", 1)[1] for event in app.events if "_click" in event]


def _handed_back_before(result: ActResult, app: SimulatedFormApp, step: int, control: str) -> None:
    """The replay handed back at ``step``, before ``control`` was clicked: nothing saved."""
    assert result.replay is not None
    assert result.replay.status == "handed_back", result.replay.reason
    assert result.replay.handback_steps[0] == step
    assert control not in _clicked(app)
    assert app.saved == []


def test_recording_stores_the_element_under_each_click(tmp_path: Path) -> None:
    _record(tmp_path)
    steps = load_cache_file(LocalCacheStorage(tmp_path), "form.json").trajectory
    save = steps[CLICK_SAVE].element
    assert save is not None
    assert save.tree is not None
    assert (save.tree.role, save.tree.name, save.tree.states) == (
        "push button",
        "Save",
        ("enabled",),
    )
    assert [a.role for a in save.tree.ancestors] == ["panel", "frame"]
    assert save.look is not None
    assert save.look_box == save.tree.box
    name = steps[CLICK_NAME].element
    assert name is not None
    assert name.tree is not None
    assert name.tree.role == "text"
    assert name.label is None  # a field's text is its content, not a label: never read
    typed = steps[CLICK_NAME + 1].element  # no point: the element at the pointer, the field
    assert typed is not None
    assert typed.tree is not None
    assert typed.tree.model_copy(update={"caret_offset": None}) == name.tree
    assert name.tree.caret_offset is None  # before the click, the field had no focus
    assert typed.tree.caret_offset == 0  # after it, its caret where the typing acts
    assert steps[0].element is None  # a screenshot does not act


def test_an_unchanged_form_replays_with_the_element_confirming_each_click(tmp_path: Path) -> None:
    _record(tmp_path)
    app = SimulatedFormApp(accessible=True)
    result = _replay(tmp_path, app)
    assert (result.model_calls, result.replay and result.replay.status) == (0, "completed")
    # the Name field's text is content (no label read); Save's name says its label's words
    # (the label is not read again where the tree confirmed a named element)
    assert _decided(result) == {CLICK_NAME: "pixels+element", CLICK_SAVE: "pixels+element"}
    assert result.replay is not None
    assert result.replay.steps[CLICK_NAME + 1].decided_by == "pixels+element"  # typing
    assert app.saved == ADA


def test_a_control_renamed_under_the_same_pixels_is_handed_back_before_it_is_clicked(
    tmp_path: Path,
) -> None:
    _record(tmp_path)
    app = SimulatedFormApp(accessible=True, names={"save": "Delete contact"})
    result = _replay(tmp_path, app)
    assert result.replay is not None
    assert result.replay.stopped_at_step == CLICK_SAVE
    assert _decided(result)[CLICK_SAVE] == "element"
    assert result.replay.reason_code == "element_changed"
    assert "push button 'Delete contact'" in (result.replay.reason or "")
    assert _clicked(app) == ["name"]
    assert app.saved == []


def test_without_element_checks_the_same_rename_is_clicked_and_the_loosening_said(
    tmp_path: Path,
) -> None:
    _record(tmp_path)
    app = SimulatedFormApp(accessible=True, names={"save": "Delete contact"})
    result = _replay(tmp_path, app, check_elements=False)
    assert result.replay is not None
    assert result.replay.status == "completed"
    assert [item.what for item in result.replay.loosened] == ["check_elements"]
    assert _clicked(app) == ["name", "save"]


def test_a_button_moved_in_its_window_is_found_by_identity_and_checked_in_full_there(
    tmp_path: Path,
) -> None:
    _record(tmp_path)
    app = SimulatedFormApp(accessible=True, layout="swapped")
    result = _replay(tmp_path, app, search_radius=0)
    # the end screen shows the buttons swapped: not the recorded one, so not verified
    assert (result.model_calls, result.replay and result.replay.status) == (
        0,
        "completed_unverified",
    )
    assert _decided(result)[CLICK_SAVE] == "element+pixels"
    assert _clicked(app) == ["name", "save"]
    assert app.saved == ADA


def test_a_relabelled_and_moved_button_is_not_clicked(tmp_path: Path) -> None:
    _record(tmp_path)
    app = SimulatedFormApp(accessible=True, layout="swapped", labels={"save": "Store"})
    result = _replay(tmp_path, app, search_radius=0)
    assert result.replay is not None
    assert result.replay.stopped_at_step == CLICK_SAVE
    assert result.replay.reason_code in ("label_changed", "screen_changed")
    assert "save" not in _clicked(app)
    assert app.saved == []


def test_the_form_at_twice_the_density_replays_on_first_sight_by_its_elements(
    tmp_path: Path,
) -> None:
    _record(tmp_path)
    app = SimulatedFormApp(accessible=True, width=1280, height=800)
    result = _replay(tmp_path, app)
    assert result.replay is not None
    assert result.model_calls == 0, result.replay.reason
    assert _decided(result)[CLICK_SAVE] in (
        "element+look",
        "pixels+element",
        "pixels+element+label",
    )
    assert app.saved == ADA


def test_a_dark_form_whose_fields_give_only_their_caret_replays_on_first_sight(
    tmp_path: Path,
) -> None:
    """Qt's fields say no character at a point, only their caret: on a screen drawn otherwise
    at the same density, the click into Name runs because the typing after it checks the
    caret, and the typing runs because its field has the focus and the caret where recorded."""
    _record(tmp_path, SimulatedFormApp(accessible=True, offsets=False))
    steps = load_cache_file(LocalCacheStorage(tmp_path), "form.json").trajectory
    typing = steps[CLICK_NAME + 1].element
    assert typing is not None
    assert typing.tree is not None
    assert typing.tree.text_offset is None
    assert typing.tree.caret_offset == 0  # described after the click, before the typing
    app = SimulatedFormApp(accessible=True, offsets=False, dark=True)
    result = _replay(tmp_path, app)
    assert result.replay is not None
    assert result.model_calls == 0, result.replay.reason
    deciders = {r.step_index: r.decided_by for r in result.replay.steps}
    assert deciders[CLICK_NAME] == "element+look"
    assert deciders[CLICK_NAME + 1] == "element+look"
    assert app.saved == ADA


def test_a_field_already_filled_on_a_dark_form_is_handed_back_before_typing(
    tmp_path: Path,
) -> None:
    """The same replay on a Name field that already holds text (the fault table's pre-filled
    field): it holds other characters than recorded, so it is not the same text drawn
    otherwise, and the pixels' verdict stands: handed back before the click, nothing typed or
    saved."""
    _record(tmp_path, SimulatedFormApp(accessible=True, offsets=False))
    app = SimulatedFormApp(accessible=True, offsets=False, dark=True)
    app.values["name"] = "Bob"
    result = _replay(tmp_path, app)
    _handed_back_before(result, app, CLICK_NAME, "name")
    assert app.values["name"] == "Bob"


def _save_undescribed(**drawn: Any) -> SimulatedFormApp:
    """The Qt-like form whose Save button the tree leaves out, as an open menu's item."""
    return SimulatedFormApp(
        accessible=True, offsets=False, undescribed=frozenset({"save"}), **drawn
    )


def test_a_control_without_a_tree_is_clicked_by_its_label_once_the_screen_is_known_redrawn(
    tmp_path: Path,
) -> None:
    """Another theme at the same density: the Name field and the typing are allowed by their
    elements (the screen is then known to be drawn otherwise), and Save, which the tree does
    not describe, by its label read as recorded and its look."""
    _record(tmp_path, _save_undescribed())
    save = load_cache_file(LocalCacheStorage(tmp_path), "form.json").trajectory[CLICK_SAVE]
    assert save.element is not None
    assert save.element.tree is None
    assert save.element.label == "Save"
    app = _save_undescribed(dark=True)
    result = _replay(tmp_path, app)
    assert result.model_calls == 0, result.replay.reason if result.replay else None
    assert _decided(result) == {CLICK_NAME: "element+look", CLICK_SAVE: "label+look"}
    assert app.saved == ADA


def test_a_relabelled_control_without_a_tree_is_not_clicked_on_a_redrawn_screen(
    tmp_path: Path,
) -> None:
    _record(tmp_path, _save_undescribed())
    app = _save_undescribed(dark=True)
    app.labels["save"] = "Send"
    result = _replay(tmp_path, app)
    _handed_back_before(result, app, CLICK_SAVE, "save")


def test_an_inaccessible_form_at_twice_the_density_is_left_to_its_pixels(tmp_path: Path) -> None:
    _record(tmp_path)
    app = SimulatedFormApp(width=1280, height=800)
    result = _replay(tmp_path, app)
    assert result.replay is not None
    # the pixels decide; the label read by OCR may only confirm them
    assert all(d in (None, "pixels", "pixels+label") for d in _decided(result).values())


def test_show_and_the_ledger_say_what_decided_each_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _record(tmp_path)
    _replay(tmp_path, SimulatedFormApp(accessible=True, names={"save": "Delete contact"}))
    capsys.readouterr()
    assert main(["show", "form", "--cache-dir", str(tmp_path), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["replays"][-1]["step_deciders"] == {
        str(CLICK_NAME): "pixels+element",
        str(CLICK_NAME + 1): "pixels+element",
        str(CLICK_SAVE): "element",
    }
    assert shown["replays"][-1]["reason_code"] == "element_changed"
    assert main(["show", "form", "--cache-dir", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    save = next(line for line in lines if line.strip().startswith(f"{CLICK_SAVE} "))
    assert "element push button 'Save'" in save
    assert "last replay decided by element" in save
