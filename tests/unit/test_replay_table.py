"""The replay's transition table is one table: docs/architecture.md, the docstring of
``askcache.replay.states`` and ``TRANSITIONS`` say the same, and a state held to it refuses a
transition outside it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

import pytest

from askcache import CacheExecutionSettings
from askcache.foundation.errors import AskCacheError
from askcache.replay import states
from askcache.replay.commands import Finished, Turn, Woke
from askcache.replay.plan import Plan
from askcache.replay.run_progress import Progress
from askcache.replay.states import TRANSITIONS, Idle, Over
from askcache.storage.cache_storage import LocalCacheStorage
from tests.helpers import record_form

DOC = (Path(__file__).resolve().parents[2] / "docs" / "architecture.md").read_text()

Table = dict[str, dict[str, frozenset[str]]]


def _names(cell: str) -> list[str]:
    return re.findall(r"``?([A-Za-z]+)``?", cell)


def _from_docs() -> Table:
    block = DOC.split("<!-- transitions -->", 1)[1].split("<!-- /transitions -->", 1)[0]
    table: Table = {}
    for line in block.strip().splitlines()[2:]:  # header and rule
        state, observation, after = (cell.strip() for cell in line.strip("|").split("|"))
        table.setdefault(_names(state)[0], {})[_names(observation)[0]] = frozenset(_names(after))
    return table


def _from_docstring() -> Table:
    doc = states.__doc__ or ""
    rows = doc.split("=====================  ==============", 2)[2]
    rows = rows.split("=====================  ==============", 1)[0].splitlines()[1:]
    table: Table = {}
    state = observation = ""
    for line in rows:
        if not line.strip():
            continue
        head, rest = line[:23].strip(), line[23:]
        kind, after = rest[:16].strip(), rest[16:]
        if head:
            state, observation = _names(head)[0], _names(kind)[0]
        if after.strip().startswith("(as ``Idle``)") or "(as ``Idle``)" in after:
            names = set(_names(after.replace("(as ``Idle``)", ""))) | TRANSITIONS["Idle"]["Turn"]
        else:
            names = set(_names(after))
        before = table.setdefault(state, {}).get(observation, frozenset())
        table[state][observation] = before | names
    return table


def _code() -> Table:
    return {state: dict(moves) for state, moves in TRANSITIONS.items() if moves}


def test_the_docs_table_is_the_codes() -> None:
    assert _from_docs() == _code()


def test_the_modules_docstring_table_is_the_codes() -> None:
    assert _from_docstring() == _code()


def test_every_state_class_is_in_the_table_and_held_to_it() -> None:
    classes = {
        name
        for name, value in vars(states).items()
        if isinstance(value, type) and issubclass(value, states.State) and value is not states.State
    }
    assert classes == set(TRANSITIONS)
    for name in classes:
        assert getattr(states, name).moves is TRANSITIONS[name]


def test_a_state_refuses_an_observation_it_does_not_wait_for(idle: Idle) -> None:
    with pytest.raises(AskCacheError, match="Idle and does not wait for Woke"):
        idle.next(Woke(0.0))
    with pytest.raises(AskCacheError, match="Over and does not wait for Turn"):
        Over(idle.plan, idle.progress).next(Turn([], 0.0))


class _Stray(Idle):
    """A state whose code goes where its table does not say (a bug)."""

    moves: ClassVar[dict[str, frozenset[str]]] = {"Turn": frozenset({"Checking"})}

    def _next(self, observation: Any) -> states.Transition:
        return Over(self.plan, self.progress), Finished(None)


def test_a_transition_outside_the_table_raises(idle: Idle) -> None:
    stray = _Stray(idle.plan, idle.progress)
    with pytest.raises(AskCacheError, match="_Stray --Turn--> Over is not in the replay's"):
        stray.next(Turn([], 0.0))


@pytest.fixture
def idle(storage: LocalCacheStorage) -> Idle:
    plan = Plan.of(
        record_form(storage),
        "form.json",
        parameter_values={},
        settings=CacheExecutionSettings(),
        tool_shape="tool",
        can_look=False,
    )
    return Idle(plan, Progress(index=0, started=0.0))
