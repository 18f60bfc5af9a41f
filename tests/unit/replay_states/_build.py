"""What the state tests are built from: the form recorded for real, plans, real screens, real
histories, and one step of a state checked for purity and for the transition table.

Each test drives one state of :mod:`askcache.replay.states` directly: it makes the state (or
reaches it from ``Idle``), gives it observations it builds itself (PNG screenshots of the
simulated form, decoded; histories whose tool results come from running each call on that
form), and chooses every instant: the clock is the ``at`` of each observation. No X server, no
sleeping.
"""

from __future__ import annotations

import base64
import dataclasses
import itertools
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

import numpy as np
from PIL import Image
from pydantic import BaseModel

from askcache.cachefile.format import CacheFile
from askcache.foundation.actions import make_tool_use
from askcache.foundation.messages import (
    ImageBlockParam,
    MessageParam,
    TextBlockParam,
    ToolResultBlockParam,
    ToolUseBlockParam,
)
from askcache.foundation.settings import CacheExecutionSettings, CacheWritingSettings
from askcache.record.recording import CacheManager
from askcache.replay.commands import (
    Blind,
    Command,
    Emit,
    HandBack,
    Look,
    Observation,
    Seen,
    Turn,
)
from askcache.replay.plan import CaptureFailedError, Plan, Stopped
from askcache.replay.run_progress import Progress
from askcache.replay.screens import FIRST_POLL_SECONDS, POLL_SECONDS
from askcache.replay.states import TRANSITIONS, Idle, State, Suspended
from askcache.storage.cache_storage import CacheStorage, load_cache_file
from askcache.testing import SimulatedFormApp, WindowedFormApp
from askcache.testing.simulated import Widget
from askcache.tools import ComputerTool, ToolCollection
from tests.helpers import GOAL, record_form, screenshot_in

DEFAULTS = CacheExecutionSettings()
STILL = DEFAULTS.settle_still_period
"""0.025 s: a passing check acts on a look this long after the first one it passed on."""
START_STILL = max(STILL, DEFAULTS.settle_start_still)
"""How long the replay's first checked step waits for a still screen."""
QUIET = DEFAULTS.settle_quiet_period
"""1.5 s: a screen unchanged this long has settled."""
TIMEOUT = DEFAULTS.settle_timeout
"""10 s: the longest wait."""
FIRST = FIRST_POLL_SECONDS
"""2.5 ms: the first pause of a wait."""
POLL = POLL_SECONDS
"""20 ms: the longest pause of a wait."""

# The form's steps, as record_form records them: 0 a screenshot, 1 a click on Name, 2 typing
# "Ada Lovelace", 3 a click on Save.
SCREENSHOT, CLICK_NAME, TYPE_NAME, CLICK_SAVE = range(4)
NAME_AT = list(SimulatedFormApp().widget("name").center)
SAVE_AT = list(SimulatedFormApp().widget("save").center)
CLEAR_AT = list(SimulatedFormApp().widget("clear").center)


def recorded(storage: CacheStorage, **writing: Any) -> CacheFile:
    """The form-filling run, recorded for real on a fresh form (``tests.helpers``)."""
    return record_form(storage, **writing)


def plan_of(
    cache_file: CacheFile,
    *,
    can_look: bool = True,
    lists_windows: bool = False,
    **settings: Any,
) -> Plan:
    """The plan of a replay of ``cache_file`` with ``settings`` (the defaults otherwise)."""
    return Plan.of(
        cache_file,
        "form.json",
        parameter_values={},
        settings=CacheExecutionSettings(**settings),
        tool_shape="tool",
        can_look=can_look,
        lists_windows=lists_windows,
    )


def progress_at(index: int, **fields: Any) -> Progress:
    """A replay at step ``index``, activated at instant 0."""
    return Progress(index=index, started=0.0, **fields)


# -- screens ------------------------------------------------------------------------------


class Relabelled(SimulatedFormApp):
    """The form whose Save button reads another word (an application update that renamed
    it): everything else as the original."""

    def widgets(self) -> list[Widget]:
        return [
            replace(widget, label="Store") if widget.name == "save" else widget
            for widget in super().widgets()
        ]


class Late(SimulatedFormApp):
    """The form, slow to draw: what typing does reaches the screen only at :meth:`catch_up`
    (the typing step's result screenshot, taken the moment the keys were sent, shows the
    field still empty)."""

    due: str = ""

    def type_text(self, text: str) -> None:
        if self.focus is None:
            raise ValueError("no field has the keyboard focus; click a field first")
        self.due += text

    def catch_up(self) -> None:
        """Draw what was typed."""
        assert self.focus is not None
        self.values[self.focus] += self.due
        self.due = ""


def form(app: SimulatedFormApp | None = None, **fields: Any) -> Image.Image:
    """A screenshot of the form (``fields`` set on a fresh one), as the computer tool gives
    it to the model: encoded as PNG and decoded again."""
    app = app or SimulatedFormApp(**fields)
    history = History(app)
    return history.screenshot()


def seen(image: Image.Image | None, at: float, windows: Any = None) -> Seen:
    """A look taken at ``at``."""
    return Seen(image, tuple(windows) if windows is not None else None, at)


def blind(at: float, why: str = "the X server closed the connection") -> Blind:
    """A look that failed every attempt, as the driver reports it."""
    return Blind(CaptureFailedError(OSError(why)), at)


# -- histories ----------------------------------------------------------------------------


class History:
    """A conversation on a real form: each call runs on the app through the computer tool,
    its result (text and a PNG screenshot) appended, as the conversation does."""

    def __init__(self, app: SimulatedFormApp | WindowedFormApp | None = None) -> None:
        self.app = app if app is not None else SimulatedFormApp()
        self.tools = ToolCollection([ComputerTool(self.app)])
        self.messages: list[MessageParam] = [MessageParam(role="user", content=GOAL)]

    def run(self, *calls: ToolUseBlockParam) -> list[MessageParam]:
        """Run ``calls`` (one assistant message); the history so far (a copy)."""
        self.messages.append(MessageParam(role="assistant", content=list(calls)))
        results = [self.tools.run(call)[0] for call in calls]
        self.messages.append(MessageParam(role="user", content=list(results)))
        return list(self.messages)

    def answer(
        self, call: ToolUseBlockParam, text: str, *, is_error: bool = False
    ) -> list[MessageParam]:
        """``call`` answered with ``text`` alone (no screenshot), without running it."""
        self.messages.append(MessageParam(role="assistant", content=[call]))
        result = ToolResultBlockParam(
            tool_use_id=call.id,
            content=[TextBlockParam(text=text)],
            is_error=True if is_error else None,
        )
        self.messages.append(MessageParam(role="user", content=[result]))
        return list(self.messages)

    def say(self, text: str, *calls: ToolUseBlockParam) -> list[MessageParam]:
        """The model says ``text`` and calls ``calls`` (run); or ends its turn (no calls)."""
        blocks: list[Any] = [TextBlockParam(text=text), *calls]
        self.messages.append(
            MessageParam(
                role="assistant", content=blocks, stop_reason="tool_use" if calls else "end_turn"
            )
        )
        if calls:
            results = [self.tools.run(call)[0] for call in calls]
            self.messages.append(MessageParam(role="user", content=list(results)))
        return list(self.messages)

    def corrupt_latest(self) -> list[MessageParam]:
        """The latest screenshot's data replaced by bytes that are no image (a tool result
        from outside); the history so far."""
        for message in reversed(self.messages):
            for result in message.tool_results:
                if isinstance(result.content, list):
                    for block in result.content:
                        if isinstance(block, ImageBlockParam):
                            block.source.data = base64.b64encode(b"not an image").decode()
                            return list(self.messages)
        raise AssertionError("no screenshot in the history")

    def screenshot(self) -> Image.Image:
        """A screenshot call run now; its image, decoded from the result."""
        self.run(make_tool_use("screenshot", "tool"))
        return screenshot_in(self.messages[-1])


def call(action: str, **arguments: Any) -> ToolUseBlockParam:
    """A model's computer call with a fresh id."""
    return make_tool_use(action, "tool", **arguments)


def record_windowed(
    storage: CacheStorage, screen: WindowedFormApp, calls: Iterable[ToolUseBlockParam]
) -> CacheFile:
    """``calls`` recorded on ``screen`` (a form as a window) with its windows listed before
    each acting step, as an ``Agent`` records; the file loaded back."""
    manager = CacheManager(
        storage, CacheWritingSettings(filename="form.json"), windows=screen.windows
    )
    manager.start_recording(GOAL)
    history = History(screen)
    for each in calls:
        manager.before_tool(each, history.messages)
        history.run(each)
    manager.finish_recording(history.messages)
    return load_cache_file(storage, "form.json")


# -- one step -----------------------------------------------------------------------------


def plain(value: Any) -> Any:
    """``value`` as nested tuples of comparable parts (images as their bytes, arrays as
    theirs, models as their dumps, callables by name): two equal plains are equal values."""
    if isinstance(value, Image.Image):
        return ("image", value.mode, value.size, value.tobytes())
    if isinstance(value, np.ndarray):
        return ("array", value.shape, value.tobytes())
    if isinstance(value, BaseModel):
        return ("model", type(value).__name__, plain(value.model_dump()))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (
            type(value).__name__,
            tuple(
                plain(getattr(value, f.name))
                for f in dataclasses.fields(value)
                if not f.name.startswith("_")  # a cache (a screen's thumbnail)
            ),
        )
    if isinstance(value, dict):
        return ("dict", tuple((plain(k), plain(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(plain(v) for v in value)
    if callable(value):
        return ("callable", getattr(value, "__qualname__", repr(value)))
    return value


def without_ids(command: Command) -> Any:
    """``command`` with an emitted call's fresh id blanked (each ``next`` makes a new one)."""
    if isinstance(command, Emit):
        return Emit(command.call.model_copy(update={"id": ""}))
    return command


def advance(state: State, observation: Observation) -> tuple[Any, Any]:
    """``state.next(observation)``, checked: the transition is in the table (``next`` raises
    otherwise, and it is asserted here too); a second call gives the same next state's type
    and an equal command (apart from a fresh call id); the state's progress and fields are
    as before (it is a value)."""
    before = plain(state)
    after, command = state.next(observation)
    again, command_again = state.next(observation)
    kind = type(observation).__name__
    assert type(after).__name__ in TRANSITIONS[type(state).__name__][kind]
    assert type(again) is type(after)
    assert without_ids(command_again) == without_ids(command)
    assert plain(state) == before, "next() changed the state it was called on"
    return after, command


def drive(
    state: State,
    command: Command,
    screen: Callable[[float], Image.Image],
    *,
    windows: Callable[[float], Any] | None = None,
    limit: int = 1000,
) -> tuple[State, Command, list[Look]]:
    """Answer each :class:`Look` with the look ``screen(at)`` at its very instant (and
    ``windows(at)``, when given), until a command that is no look; the state, that command
    and the looks asked for. ``state.next`` holds each transition to the table."""
    looks: list[Look] = []
    while isinstance(command, Look):
        assert len(looks) < limit, "the state keeps looking"
        looks.append(command)
        listed = windows(command.at) if windows is not None else None
        state, command = state.next(seen(screen(command.at), command.at, listed))
    return state, command, looks


def pauses(start: float, looks: list[Look]) -> list[float]:
    """The pauses before each look, from ``start``."""
    return [b - a for a, b in itertools.pairwise([start, *(look.at for look in looks)])]


def emitted(plan: Plan, index: int, history: History, at: float) -> tuple[State, Emit]:
    """Step ``index``'s turn at ``at`` on ``history`` (a screenshot of its form taken
    first), its looks answered with its form as it is, until the step is emitted."""
    history.screenshot()
    idle = Idle(plan, progress_at(index, starting=False))
    state, command = idle.next(Turn(list(history.messages), at))
    state, command, _ = drive(state, command, lambda _: form(history.app))
    assert isinstance(command, Emit), command
    return state, command


def suspended(
    form_file: CacheFile, *, can_look: bool = True, **settings: Any
) -> tuple[Suspended, History]:
    """A replay handed back before step 1 ("alice" was left in the Name field), with the
    quiet period 0.05 s; its history."""
    history = History(SimulatedFormApp(values={"name": "alice", "email": ""}))
    history.screenshot()
    plan = plan_of(form_file, can_look=can_look, settle_quiet_period=0.05, **settings)
    idle = Idle(plan, progress_at(CLICK_NAME, starting=False))
    state, command = idle.next(Turn(list(history.messages), 1.0))
    state, command, _ = drive(state, command, lambda at: form(history.app))
    assert isinstance(state, Suspended)
    assert isinstance(command, HandBack)
    assert state.stopped == Stopped(CLICK_NAME, "fingerprint", len(history.messages))
    return state, history
