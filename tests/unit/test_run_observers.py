"""The run observers' registry (askcache.replay.observers): nothing registered costs nothing,
every registered instrumentation is told, one that raises breaks neither the run nor the
others."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from askcache.foundation.messages import Usage
from askcache.replay import observers
from askcache.replay.observers import (
    NO_OBSERVER,
    HandedBack,
    ModelCall,
    ModelRequest,
    ReplayedStep,
    RunObserver,
    RunStart,
    observe,
    register,
    registered,
    unregister,
)
from askcache.replay.result import StepRecord
from askcache.storage.ledger import RunRecord

RUN = RunStart(kind="act", trajectory="form.json", strategy="auto", model="m", current=True)


class _Told:
    """An instrumentation that keeps what each run tells it."""

    def __init__(self) -> None:
        self.told: list[tuple[str, object]] = []

    def run_started(self, run: RunStart) -> RunObserver:
        self.told.append(("run_started", run))
        return self  # type: ignore[return-value]

    def step(self, step: ReplayedStep) -> None:
        self.told.append(("step", step))

    def handed_back(self, event: HandedBack) -> None:
        self.told.append(("handed_back", event))

    def calling(self, request: ModelRequest) -> None:
        self.told.append(("calling", request))

    def model_call(self, call: ModelCall) -> None:
        self.told.append(("model_call", call))

    def recorded(self, record: RunRecord) -> None:
        self.told.append(("recorded", record))

    def ended(self, status: str, error: BaseException | None) -> None:
        self.told.append(("ended", status))


class _Broken(_Told):
    def step(self, step: ReplayedStep) -> None:
        raise RuntimeError("exporter down")

    def ended(self, status: str, error: BaseException | None) -> None:
        raise RuntimeError("exporter down")


class _BrokenAtStart(_Told):
    def run_started(self, run: RunStart) -> RunObserver:
        raise RuntimeError("no tracer")


@pytest.fixture(autouse=True)
def _nothing_registered() -> Iterator[None]:
    assert registered() == ()
    yield
    for instrumentation in registered():
        unregister(instrumentation)


def _tell_everything(observer: RunObserver) -> None:
    record = StepRecord(step_index=1, action="left_click", validated=True, matched=False)
    observer.step(ReplayedStep("form.json", None, record, None, "screen_changed", 1, 2))
    observer.handed_back(HandedBack("form.json", None, 1, "screen_changed"))
    observer.calling(ModelRequest("m", 10, after_handback=True))
    observer.model_call(ModelCall("m", 10, 3, 4, Usage(input_tokens=5), "end_turn", None, True))
    observer.recorded(RunRecord(trajectory="form.json", status="handed_back"))
    observer.ended("done", None)


def test_with_nothing_registered_a_run_gets_the_observer_that_does_nothing() -> None:
    assert observe(RUN) is NO_OBSERVER
    _tell_everything(NO_OBSERVER)


def test_every_registered_instrumentation_is_told_everything_once() -> None:
    first, second = _Told(), _Told()
    register(first)
    register(second)
    register(first)  # once, however often
    assert registered() == (first, second)
    _tell_everything(observe(RUN))
    kinds = [kind for kind, _ in first.told]
    assert kinds == [
        "run_started",
        "step",
        "handed_back",
        "calling",
        "model_call",
        "recorded",
        "ended",
    ]
    assert [kind for kind, _ in second.told] == kinds
    assert first.told[0] == ("run_started", RUN)
    unregister(first)
    assert registered() == (second,)
    unregister(second)
    assert observe(RUN) is NO_OBSERVER


def test_an_instrumentation_that_raises_is_logged_and_the_others_are_told(
    caplog: pytest.LogCaptureFixture,
) -> None:
    broken, at_start, working = _Broken(), _BrokenAtStart(), _Told()
    for instrumentation in (broken, at_start, working):
        register(instrumentation)
    with caplog.at_level(logging.WARNING, logger=observers.__name__):
        _tell_everything(observe(RUN))
    assert [kind for kind, _ in working.told][-1] == "ended"
    assert len(working.told) == 7
    failures = [r.getMessage() for r in caplog.records]
    assert any("run_started" in text and "no tracer" in text for text in failures)
    assert any("on step" in text and "exporter down" in text for text in failures)
    assert any("on ended" in text for text in failures)
