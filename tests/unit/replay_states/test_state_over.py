"""``Over``: every step ran and the end state was judged; it waits for nothing (no row of
the table starts from it)."""

from __future__ import annotations

import pytest

from askcache.cachefile.format import CacheFile
from askcache.foundation.errors import AskCacheError
from askcache.replay.commands import Ask, Finished, Observation, Turn, Woke
from askcache.replay.states import TRANSITIONS, Idle, Over
from tests.unit.replay_states._build import History, blind, form, plan_of, progress_at, seen


def _over(form_file: CacheFile) -> Over:
    idle = Idle(plan_of(form_file, end_state="off"), progress_at(4))
    state, command = idle.next(Turn(History().messages, 1.0))
    assert isinstance(state, Over)
    assert command == Finished(None)
    return state


def test_over_has_no_transition() -> None:
    assert TRANSITIONS["Over"] == {}
    assert Over.moves == {}


@pytest.mark.parametrize(
    "observation",
    [
        Turn([], 2.0),
        Ask([], 2.0, requested=True),
        Woke(2.0),
        blind(2.0),
        seen(form(), 2.0),
    ],
    ids=["Turn", "Ask", "Woke", "Blind", "Seen"],
)
def test_over_refuses_every_observation_and_stays_as_it_was(
    form_file: CacheFile, observation: Observation
) -> None:
    over = _over(form_file)
    progress = over.progress
    kind = type(observation).__name__
    with pytest.raises(AskCacheError, match=f"the replay is Over and does not wait for {kind}"):
        over.next(observation)
    assert over.progress is progress
