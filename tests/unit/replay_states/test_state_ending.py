"""``Ending``: after the last step, watching the final screen until it matches the recorded
end state or settles. ``Seen`` -> ``Ending``, ``Over``, ``Suspended``; ``Blind`` ->
``Suspended``."""

from __future__ import annotations

from typing import Any

import pytest
from PIL import Image

from askcache.cachefile.format import CacheFile
from askcache.replay.commands import Finished, HandBack, Look, Turn
from askcache.replay.states import Ending, Idle, Over, Suspended
from askcache.testing import SimulatedFormApp
from tests.unit.replay_states._build import (
    FIRST,
    POLL,
    History,
    advance,
    blind,
    drive,
    form,
    plan_of,
    progress_at,
    seen,
)

END_AT = 5.0


def _saved(email: str = "") -> Image.Image:
    """The form once saved (with ``email`` in Email: not the recorded end)."""
    app = SimulatedFormApp(focus="name", values={"name": "Ada Lovelace", "email": email})
    app.click(app.widget("save").center, "left", 1, None)
    return form(app)


def _ending(form_file: CacheFile, **settings: Any) -> Ending:
    """Every step ran; the history holds no screenshot since: the end screen is looked at."""
    idle = Idle(plan_of(form_file, **settings), progress_at(4, first_step=False))
    state, look = idle.next(Turn(History().messages, END_AT))
    assert isinstance(state, Ending)
    assert look == Look(END_AT)
    return state


def test_an_end_screen_that_matches_finishes(form_file: CacheFile) -> None:
    image = _saved()
    state, command = advance(_ending(form_file), seen(image, END_AT))
    assert isinstance(state, Over)
    assert isinstance(command, Finished)
    assert command.verdict is not None
    assert command.verdict.matched
    assert command.verdict.differing_tiles == []
    assert not command.hand_back
    assert state.progress.seen.latest is image  # the screen the steps left


def test_a_different_end_screen_is_looked_at_again_and_reported_once_still(
    form_file: CacheFile,
) -> None:
    image = _saved(email="x@y.z")
    ending = _ending(form_file, settle_quiet_period=0.1)
    state, command = advance(ending, seen(image, END_AT))
    assert isinstance(state, Ending)
    assert command == Look(END_AT + FIRST)
    state, command, looks = drive(state, command, lambda at: image)
    assert isinstance(state, Over)
    assert isinstance(command, Finished)
    assert command.verdict is not None
    assert not command.verdict.matched
    assert command.verdict.differing_tiles
    assert len(command.verdict.differing_boxes) == len(command.verdict.differing_tiles)
    assert not command.hand_back  # end_state="report"
    assert 0.1 <= looks[-1].at - END_AT < 0.1 + POLL


def test_with_end_state_hand_back_a_different_end_screen_asks_the_model(
    form_file: CacheFile,
) -> None:
    image = _saved(email="x@y.z")
    ending = _ending(form_file, settle_quiet_period=0.1, end_state="hand_back")
    state, command, _ = drive(ending, Look(END_AT), lambda at: image)
    assert isinstance(state, Over)
    assert isinstance(command, Finished)
    assert command.verdict is not None
    assert not command.verdict.matched
    assert command.hand_back


def test_an_end_screen_drawn_late_finishes_on_the_look_that_shows_it(
    form_file: CacheFile,
) -> None:
    before, after = _saved(email="x@y.z"), _saved()
    ending = _ending(form_file)
    state, command, looks = drive(
        ending, Look(END_AT), lambda at: before if at < END_AT + 0.05 else after
    )
    assert isinstance(state, Over)
    assert isinstance(command, Finished)
    assert command.verdict is not None
    assert command.verdict.matched
    assert looks[-1].at == next(look.at for look in looks if look.at >= END_AT + 0.05)
    assert looks[-1].at == pytest.approx(END_AT + 0.0575)  # 2.5, 5, 10, 20, 20 ms later


def test_a_look_that_failed_hands_back_at_the_end(form_file: CacheFile) -> None:
    observation = blind(END_AT)
    state, command = advance(_ending(form_file), observation)
    assert isinstance(state, Suspended)
    assert command == HandBack(
        4, f"the end state cannot be checked: {observation.error}", code="screen_unreadable"
    )
    assert (state.stopped.step, state.stopped.check) == (4, "end_state")
    assert state.progress.index == 4  # nothing is left to re-join at


def test_a_look_without_an_image_hands_back_at_the_end(form_file: CacheFile) -> None:
    state, command = advance(_ending(form_file), seen(None, END_AT))
    assert isinstance(state, Suspended)
    assert command == HandBack(
        4,
        "the screen could not be read (AskCacheError: a look without a screenshot)",
        code="screen_unreadable",
    )
