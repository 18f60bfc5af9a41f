"""``Checking``: watching the screen until the step's check passes on a still screen, the
screen settles without it, or the timeout passes. ``Seen`` and ``Drawn`` -> ``Checking``,
``AwaitingResult``, ``Suspended``; ``Blind`` -> ``Suspended``.

Its stages: ``step`` (the step's own check, and for the trajectory's first acting step the
recorded start screen), ``start`` (the start screen never came: the step's own checks
decide), ``search`` (the step's region moved and no window is known: the bounded search)."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest
from PIL import Image

from askcache.cachefile.format import CacheFile
from askcache.foundation.screen.damage import FRAME_PERIOD, DamageMark
from askcache.replay.commands import Drawn, Emit, HandBack, Look, Quiet, Seen
from askcache.replay.states import AwaitingResult, Checking, Observing, State, Suspended
from askcache.storage.cache_storage import LocalCacheStorage
from askcache.testing import SimulatedFormApp, WindowedFormApp
from tests.unit.replay_states._build import (
    CLICK_NAME,
    CLICK_SAVE,
    FIRST,
    NAME_AT,
    POLL,
    SAVE_AT,
    START_STILL,
    STILL,
    TYPE_NAME,
    Relabelled,
    advance,
    blind,
    call,
    drive,
    form,
    pauses,
    plan_of,
    progress_at,
    record_windowed,
    seen,
)

FORM_BACKGROUND = (236, 239, 244)
DESKTOP = WindowedFormApp().background


def _checking(
    form_file: CacheFile,
    image: Image.Image,
    *,
    index: int = TYPE_NAME,
    at: float = 2.0,
    starting: bool = False,
    lists_windows: bool = False,
    windows: object = None,
    **settings: object,
) -> tuple[State, object]:
    """Step ``index`` observed on ``image`` at ``at``: the state ``Observing`` goes to."""
    observing = Observing(
        plan_of(form_file, lists_windows=lists_windows, **settings),
        progress_at(index, first_step=False, starting=starting, step_started=at),
        [],
    )
    return advance(observing, seen(image, at, windows))


def _always(image: Image.Image) -> Callable[[float], Image.Image]:
    return lambda at: image


# -- the step stage -------------------------------------------------------------------------


def test_a_passing_check_acts_once_a_look_the_still_period_later_shows_the_same_screen(
    form_file: CacheFile,
) -> None:
    focused = form(focus="name")
    checking, look = _checking(form_file, focused)
    assert isinstance(checking, Checking)
    assert look == Look(2.0 + STILL)
    again = form(focus="name")  # the same screen, another capture
    state, command = advance(checking, seen(again, 2.0 + STILL))
    assert isinstance(state, AwaitingResult)
    assert isinstance(command, Emit)
    assert command.call.input == {"action": "type", "text": "Ada Lovelace"}
    assert command.call.replayed
    assert command.call.id != form_file.trajectory[TYPE_NAME].id
    assert command.call.effect is None  # none of the file's cache-only fields
    assert command.call.visual_representation is None
    record = state.progress.records[-1]
    assert (record.step_index, record.validated, record.matched) == (TYPE_NAME, True, True)
    assert record.waited_seconds == pytest.approx(STILL)
    assert state.pending.step == TYPE_NAME
    assert state.pending.started == 2.0
    assert state.pending.before_image is again  # it acts on the still look
    assert state.progress.seen.before[command.call.id] is again
    assert state.progress.steps_run == 1


def test_a_screen_that_changed_at_the_still_look_is_looked_at_again(
    form_file: CacheFile,
) -> None:
    # the status line is redrawn between the first look and the still look: the check
    # still passes, but the step waits for one more look the still period after the change
    checking, _ = _checking(form_file, form(focus="name"))
    busy = form(focus="name", status="Busy")
    state, command = advance(checking, seen(busy, 2.0 + STILL))
    assert isinstance(state, Checking)
    assert command == Look(2.0 + 2 * STILL)
    state, command = advance(state, seen(busy, 2.0 + 2 * STILL))
    assert isinstance(state, AwaitingResult)
    assert isinstance(command, Emit)
    assert state.progress.records[-1].waited_seconds == pytest.approx(2 * STILL)


def test_a_screen_that_never_stops_changing_is_acted_on_after_the_quiet_period(
    form_file: CacheFile,
) -> None:
    # an animation in the window's corner, away from the step's point, never stops
    screens = [form(focus="name"), form(focus="name")]
    screens[0].paste((40, 40, 40), (560, 330, 620, 380))
    screens[1].paste((200, 200, 200), (560, 330, 620, 380))
    checking, look = _checking(form_file, screens[0], settle_quiet_period=0.1)
    flips = itertools.count(1)
    state, command, looks = drive(checking, look, lambda at: screens[next(flips) % 2])
    assert isinstance(state, AwaitingResult)
    assert isinstance(command, Emit)
    assert all(pause == pytest.approx(STILL) for pause in pauses(2.0, looks))  # each changed
    waited = state.progress.records[-1].waited_seconds
    assert waited == pytest.approx(looks[-1].at - 2.0)
    assert 0.1 - 1e-9 <= waited < 0.1 + STILL


def test_the_quiet_period_bound_forgives_the_clocks_rounding(form_file: CacheFile) -> None:
    screens = [form(focus="name"), form(focus="name")]
    screens[0].paste((40, 40, 40), (560, 330, 620, 380))
    screens[1].paste((200, 200, 200), (560, 330, 620, 380))
    checking, look = _checking(form_file, screens[0], settle_quiet_period=0.1)
    flips = itertools.count(1)
    _, _, looks = drive(checking, look, lambda at: screens[next(flips) % 2])
    assert len(looks) == 4  # 0.1 s of looks 25 ms apart


def test_a_changed_screen_is_looked_at_soon_then_less_often_and_handed_back_once_still(
    form_file: CacheFile,
) -> None:
    # a changed field: "alice" is left in Name; the typing would append to it
    left = form(focus="name", values={"name": "alice", "email": ""})
    checking, look = _checking(form_file, left, settle_quiet_period=0.1)
    assert isinstance(checking, Checking)
    assert look == Look(2.0 + FIRST)
    state, command, looks = drive(checking, look, _always(left))
    assert pauses(2.0, looks) == pytest.approx(
        [FIRST, 2 * FIRST, 4 * FIRST, POLL, POLL, POLL, POLL, POLL]
    )
    assert isinstance(state, Suspended)
    assert isinstance(command, HandBack)
    assert command.step == TYPE_NAME
    assert not command.executed
    assert "no longer matches the recording" in command.problem
    assert "2 ink columns changed > 0" in command.problem  # the whole field's ink
    assert "settle_timeout" not in command.problem
    record = state.progress.records[-1]
    assert (record.step_index, record.matched) == (TYPE_NAME, False)
    assert record.waited_seconds == pytest.approx(looks[-1].at - 2.0)
    assert 0.1 <= record.waited_seconds < 0.1 + POLL
    assert state.progress.steps_run == 0
    assert state.progress.index == TYPE_NAME
    assert (state.stopped.step, state.stopped.check) == (TYPE_NAME, "fingerprint")


def test_a_changed_label_hands_back_before_the_click(form_file: CacheFile) -> None:
    relabelled = form(Relabelled(focus="name", values={"name": "Ada Lovelace", "email": ""}))
    checking, look = _checking(form_file, relabelled, index=CLICK_SAVE, settle_quiet_period=0.1)
    state, command, _ = drive(checking, look, _always(relabelled))
    assert isinstance(state, Suspended)
    assert isinstance(command, HandBack)
    assert command.step == CLICK_SAVE
    assert "no longer matches the recording" in command.problem


def test_the_first_step_waits_for_the_application_up_to_the_timeout(
    form_file: CacheFile,
) -> None:
    # the start-up wait: an unchanged, different screen is no reason to stop after the
    # quiet period (the application may still be starting)
    left = form(values={"name": "alice", "email": ""})
    checking, look = _checking(
        form_file,
        left,
        index=CLICK_NAME,
        starting=True,
        settle_timeout=0.2,
        settle_quiet_period=0.05,
    )
    assert isinstance(checking, Checking)
    assert checking.starting
    state, command, looks = drive(checking, look, _always(left))
    assert isinstance(state, Suspended)
    assert isinstance(command, HandBack)
    assert 0.2 <= looks[-1].at - 2.0 < 0.2 + POLL
    assert command.problem.endswith(
        "; waited 0.2 s (settle_timeout 0.2 s) for the screen the replay's first step "
        "expects: the application may not have started, or shows another screen"
    )


def test_the_first_step_acts_once_the_start_screen_is_drawn(form_file: CacheFile) -> None:
    # the lower part of the window comes 0.1 s late; the Name field is there from the start
    half = form()
    half.paste(FORM_BACKGROUND, (0, 200, 640, 400))
    whole = form()
    checking, look = _checking(form_file, half, index=CLICK_NAME, starting=True)
    assert isinstance(checking, Checking)
    assert look == Look(2.0 + FIRST)  # refused: the start screen is not there yet
    state, command, looks = drive(checking, look, lambda at: half if at < 2.1 else whole)
    assert isinstance(state, AwaitingResult)
    assert isinstance(command, Emit)
    assert command.call.input == {"action": "left_click", "coordinate": NAME_AT}
    first_whole = next(look.at for look in looks if look.at >= 2.1)
    assert looks[-1].at == pytest.approx(first_whole + START_STILL)
    assert "ran on the step's own checks" not in (state.progress.records[-1].note or "")
    assert state.plan.start.step == CLICK_NAME  # the start screen was waited for at this step


def test_a_start_screen_that_never_comes_leaves_the_first_step_to_its_own_checks(
    form_file: CacheFile,
) -> None:
    half = form()
    half.paste(FORM_BACKGROUND, (0, 200, 640, 400))
    checking, look = _checking(form_file, half, index=CLICK_NAME, starting=True, settle_timeout=0.2)
    state, command, looks = drive(checking, look, _always(half))
    assert isinstance(state, AwaitingResult)
    assert isinstance(command, Emit)
    timed_out = looks[-2].at  # the look the wait ran out on; then the still look
    assert 0.2 <= timed_out - 2.0 < 0.2 + POLL
    assert looks[-1].at == pytest.approx(timed_out + START_STILL)
    record = state.progress.records[-1]
    assert record.note is not None
    assert "does not look like the recording's screen before its first action" in record.note
    assert "after waiting 0.5 s for it: ran on the step's own checks" in record.note
    assert record.waited_seconds == pytest.approx(looks[-1].at - 2.0)
    assert state.plan.start.step is None


def test_the_start_stage_is_a_checking_state_of_its_own(form_file: CacheFile) -> None:
    half = form()
    half.paste(FORM_BACKGROUND, (0, 200, 640, 400))
    checking, look = _checking(form_file, half, index=CLICK_NAME, starting=True, settle_timeout=0.2)
    state: State = checking
    while isinstance(state, Checking) and state.stage == "step":
        assert isinstance(look, Look)
        state, look = advance(state, seen(half, look.at))
    assert isinstance(state, Checking)
    assert state.stage == "start"
    assert state.refused is not None
    assert state.refused.own_checks is not None
    assert isinstance(look, Look)
    assert state.waited == pytest.approx(look.at - START_STILL - 2.0)


# -- failures -----------------------------------------------------------------------------


def test_a_look_that_failed_hands_back(form_file: CacheFile) -> None:
    checking, _ = _checking(form_file, form(focus="name"))
    observation = blind(2.0 + STILL)
    state, command = advance(checking, observation)
    assert isinstance(state, Suspended)
    assert command == HandBack(TYPE_NAME, str(observation.error), code="screen_unreadable")
    assert state.progress.steps_run == 0


def test_a_look_without_an_image_hands_back(form_file: CacheFile) -> None:
    checking, _ = _checking(form_file, form(focus="name"))
    state, command = advance(checking, seen(None, 2.0 + STILL))
    assert isinstance(state, Suspended)
    assert isinstance(command, HandBack)
    assert command.problem == (
        "the screen could not be read (AskCacheError: a look without a screenshot)"
    )


# -- where it acts ------------------------------------------------------------------------


def test_a_rescaled_screen_acts_at_the_point_scaled_to_it(form_file: CacheFile) -> None:
    typed = form(width=960, height=600, focus="name", values={"name": "Ada Lovelace", "email": ""})
    checking, look = _checking(form_file, typed, index=CLICK_SAVE)
    assert isinstance(look, Look)
    state, command = advance(checking, seen(typed, look.at))
    assert isinstance(state, AwaitingResult)
    assert isinstance(command, Emit)
    assert command.call.input == {"action": "left_click", "coordinate": [172, 345]}
    assert state.pending.before_image is None  # not the recorded size: no full-size effect
    assert state.progress.other_density_seen


@pytest.fixture(scope="module")
def windowed_file(tmp_path_factory: pytest.TempPathFactory) -> CacheFile:
    """The form filled in as a window at the screen's corner, its window listed."""
    screen = WindowedFormApp(at=(0, 0))
    return record_windowed(
        LocalCacheStorage(tmp_path_factory.mktemp("windowed") / "cache"),
        screen,
        [
            call("screenshot"),
            call("left_click", coordinate=NAME_AT),
            call("type", text="Ada Lovelace"),
            call("left_click", coordinate=SAVE_AT),
        ],
    )


def _typed_at(at: tuple[int, int]) -> WindowedFormApp:
    app = SimulatedFormApp(focus="name", values={"name": "Ada Lovelace", "email": ""})
    return WindowedFormApp(app=app, at=at)


def test_a_step_is_checked_and_acted_on_where_its_window_is_now(windowed_file: CacheFile) -> None:
    screen = _typed_at((200, 150))
    image, windows = form(screen), screen.windows()
    checking, look = _checking(
        windowed_file, image, index=CLICK_SAVE, lists_windows=True, windows=windows
    )
    assert isinstance(checking, Checking)
    assert isinstance(look, Look)
    # a window drawn on the desktop, away from the form, at the still look: no reason to wait
    elsewhere = image.copy()
    elsewhere.paste((200, 40, 40), (880, 620, 1010, 760))
    state, command = advance(checking, seen(elsewhere, look.at, windows))
    assert isinstance(state, AwaitingResult)
    assert isinstance(command, Emit)
    assert command.call.input == {
        "action": "left_click",
        "coordinate": [SAVE_AT[0] + 200, SAVE_AT[1] + 150],
    }
    assert state.pending.anchor is not None
    assert state.pending.anchor.offset == (200, 150)
    assert state.progress.last_anchor == state.pending.anchor
    assert state.progress.moved_seen


def test_a_change_inside_the_steps_window_at_the_still_look_waits_again(
    windowed_file: CacheFile,
) -> None:
    screen = _typed_at((200, 150))
    image, windows = form(screen), screen.windows()
    checking, look = _checking(
        windowed_file, image, index=CLICK_SAVE, lists_windows=True, windows=windows
    )
    assert isinstance(look, Look)
    inside = form(WindowedFormApp(app=SimulatedFormApp(**_typed(), status="Busy"), at=(200, 150)))
    state, command = advance(checking, seen(inside, look.at, windows))
    assert isinstance(state, Checking)
    assert command == Look(look.at + STILL)


def _typed() -> dict[str, object]:
    return {"focus": "name", "values": {"name": "Ada Lovelace", "email": ""}}


@pytest.fixture(scope="module")
def unanchored_file(tmp_path_factory: pytest.TempPathFactory) -> CacheFile:
    """A click on Save, recorded with the form at (100, 100) on a screen that names no
    window class: nothing to anchor to."""
    screen = WindowedFormApp(at=(100, 100), wm_class=None)
    save = list(screen.to_screen(screen.app.widget("save").center))
    return record_windowed(
        LocalCacheStorage(tmp_path_factory.mktemp("unanchored") / "cache"),
        screen,
        [call("screenshot"), call("left_click", coordinate=save)],
    )


def _until_searched(state: State, look: object, screen: Image.Image) -> tuple[State, object]:
    """Feed looks of ``screen`` while the step stage goes on (the last one, which begins
    the search, held to purity)."""
    while True:
        assert isinstance(state, Checking)
        assert isinstance(look, Look)
        after, command = state.next(seen(screen, look.at))
        if not (isinstance(after, Checking) and after.stage == "step"):
            return advance(state, seen(screen, look.at))
        state, look = after, command


def test_a_region_that_moved_is_searched_for_once_the_screen_settled(
    unanchored_file: CacheFile,
) -> None:
    moved = form(WindowedFormApp(at=(150, 130), wm_class=None))
    checking, look = _checking(
        unanchored_file,
        moved,
        index=1,
        settle_quiet_period=0.01,
        wait_for_start_screen=False,
        search_radius=80,
    )
    assert isinstance(checking, Checking)
    state, look = _until_searched(checking, look, moved)
    assert isinstance(state, Checking)
    assert state.stage == "search"
    assert state.found is not None
    assert state.searched is not None
    assert isinstance(look, Look)
    searched_at = look.at - STILL
    assert searched_at - 2.0 >= 0.01  # the step stage ended on a settled screen
    state, command = advance(state, seen(moved, look.at))
    assert isinstance(state, AwaitingResult)
    assert isinstance(command, Emit)
    assert command.call.input == {"action": "left_click", "coordinate": [265, 360]}
    assert state.pending.anchor is not None
    assert state.pending.anchor.how == "search"
    assert state.progress.records[-1].waited_seconds == pytest.approx(look.at - 2.0)


def test_a_search_not_found_again_on_a_still_screen_hands_back_with_the_first_refusal(
    unanchored_file: CacheFile,
) -> None:
    moved = form(WindowedFormApp(at=(150, 130), wm_class=None))
    gone = Image.new("RGB", moved.size, DESKTOP)  # the window closed
    checking, look = _checking(
        unanchored_file,
        moved,
        index=1,
        settle_quiet_period=0.01,
        wait_for_start_screen=False,
        search_radius=80,
    )
    state, look = _until_searched(checking, look, moved)
    assert isinstance(state, Checking)
    assert state.stage == "search"
    refused, waited = state.refused, state.waited
    assert refused is not None
    state, command, _ = drive(state, look, _always(gone))
    assert isinstance(state, Suspended)
    assert isinstance(command, HandBack)
    assert command.problem == refused.problem
    assert state.progress.records[-1].waited_seconds == waited  # the search's wait not counted


# -- where the platform reports drawing --------------------------------------------------------


def _seen_marked(image: Image.Image, at: float, mark: object) -> Seen:
    return Seen(image, None, at, mark)


def test_with_drawing_reports_a_passing_look_waits_one_frame_without_drawing_then_acts(
    form_file: CacheFile,
) -> None:
    # the look carries its place in the X server's drawing reports: instead of a second look
    # settle_still_period later, the state asks whether anything was drawn in the frame after
    # it; nothing was: it acts on that very look
    focused, mark = form(focus="name"), DamageMark(index=3, at=100.0)
    observing = Observing(
        plan_of(form_file),
        progress_at(TYPE_NAME, first_step=False, starting=False, step_started=2.0),
        [],
    )
    checking, command = advance(observing, _seen_marked(focused, 2.0, mark))
    assert isinstance(checking, Checking)
    assert command == Quiet(mark, FRAME_PERIOD)
    state, command = advance(checking, Drawn(drawn=False, at=2.0 + FRAME_PERIOD))
    assert isinstance(state, AwaitingResult)
    assert isinstance(command, Emit)
    assert state.pending.before_image is focused
    assert state.progress.records[-1].waited_seconds == pytest.approx(FRAME_PERIOD)


def test_with_drawing_reports_a_look_drawn_over_is_looked_at_again(form_file: CacheFile) -> None:
    # something was drawn after the passing look: it may be a frame still being drawn, so the
    # screen is looked at again, and the next passing look waits for its own quiet frame
    focused = form(focus="name")
    observing = Observing(
        plan_of(form_file),
        progress_at(TYPE_NAME, first_step=False, starting=False, step_started=2.0),
        [],
    )
    checking, _ = advance(observing, _seen_marked(focused, 2.0, DamageMark(1, 50.0)))
    again, command = advance(checking, Drawn(drawn=True, at=2.018))
    assert isinstance(again, Checking)
    assert command == Look(2.018)
    later = DamageMark(2, 50.02)
    state, command = advance(again, _seen_marked(form(focus="name"), 2.02, later))
    assert isinstance(state, Checking)
    assert command == Quiet(later, FRAME_PERIOD)
    # (a look settle_still_period after the first passing one, showing the same screen,
    # still counts as the sampled rule has it)
