"""Who watches a run: the observer interface, and the instrumentations registered to it.

A run (:meth:`Agent.act <askcache.agent.act.Agent.act>`, or the user's own loop,
:mod:`askcache.loop`) asks :func:`observe` for its :class:`RunObserver` when it starts, and
tells it what happened, each in one place: a replayed step once its record is final
(:class:`~askcache.replay.session.ReplaySession`), a hand-back, a model call
(the ``Agent``'s model speaker, as it begins and when it returns), the ledger entry of each replay
(:func:`~askcache.agent.run_record.record_runs`), and the run's end.

Nothing is registered by default: :func:`observe` then returns :data:`NO_OBSERVER`, which does
nothing, and nothing else is imported. :func:`askcache.telemetry.instrument` registers the
OpenTelemetry instrumentation (the ``otel`` extra); this module never imports it. An
instrumentation that raises never breaks a run: the error is logged and the run goes on.

The events carry codes and numbers, never a step's input or a reason's text: what an
instrumentation exports cannot hold a typed secret from here.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from askcache.foundation.messages import Usage
from askcache.foundation.reasons import HandBackCode
from askcache.replay.result import StepRecord
from askcache.storage.ledger import RunRecord

__all__ = [
    "NO_OBSERVER",
    "HandedBack",
    "Instrumentation",
    "ModelCall",
    "ModelRequest",
    "ReplayedStep",
    "RunKind",
    "RunObserver",
    "RunStart",
    "observe",
    "register",
    "registered",
    "unregister",
]

logger = logging.getLogger(__name__)

RunKind = Literal["act", "loop"]
"""``act``: an :meth:`Agent.act <askcache.agent.act.Agent.act>` call; ``loop``: a run of the
user's own loop (:class:`~askcache.loop.LoopReplay`)."""


@dataclass(frozen=True)
class RunStart:
    """A run begins."""

    kind: RunKind
    trajectory: str | None
    """The trajectory it names (``None``: none named; the model may pick one)."""
    strategy: str
    """The caching strategy asked for (``auto``, ``execute``, ``record``, ``off``)."""
    model: str | None
    """The model the run calls, when askcache knows it."""
    current: bool
    """True when the whole run happens inside the call that started it, in its thread (an
    ``Agent.act``): an instrumentation may make the run its current context, so that what
    the run calls (the HTTP client) nests under it. False for the user's own loop, whose
    code runs between askcache's calls."""


@dataclass(frozen=True)
class ReplayedStep:
    """A replayed step whose record is final: it ran and its effect was read, or the replay
    handed back at it."""

    trajectory: str
    profile: str | None
    """The run's screen profile (``1280x800@2x``), when known."""
    record: StepRecord
    """What the step's check said, its waits and its time."""
    anchor: str | None
    """How the step's window (or region) was found when it had moved (``window``, ``search``
    or ``element``); ``None``: it acted at its recorded point."""
    handback_code: HandBackCode | None
    """The hand-back at this step, when the replay handed back at it."""
    started_ns: int
    """When the step began (nanoseconds since the epoch, as its time says)."""
    ended_ns: int


@dataclass(frozen=True)
class HandedBack:
    """The replay handed the turn back to the model."""

    trajectory: str
    profile: str | None
    step: int
    code: HandBackCode


@dataclass(frozen=True)
class ModelRequest:
    """A call to the model is about to be made (its :class:`ModelCall` follows, in the
    same thread, when it returns or fails)."""

    model: str
    max_tokens: int
    after_handback: bool
    """True when a replay of this run had handed back before the call."""


@dataclass(frozen=True)
class ModelCall:
    """One call to the model, answered or failed."""

    model: str
    max_tokens: int
    started_ns: int
    """Nanoseconds since the epoch."""
    ended_ns: int
    usage: Usage | None
    """The tokens the answer reports (``None``: the call failed)."""
    stop_reason: str | None
    error: str | None
    """The error's type name, when the call failed."""
    after_handback: bool
    """True when a replay of this run had handed back before the call."""


class RunObserver(Protocol):
    """What one run tells (see the module docstring)."""

    def step(self, step: ReplayedStep) -> None: ...

    def handed_back(self, event: HandedBack) -> None: ...

    def calling(self, request: ModelRequest) -> None:
        """A model call begins (what the client does now belongs to it)."""

    def model_call(self, call: ModelCall) -> None:
        """The model call begun last returned, or failed."""

    def recorded(self, record: RunRecord) -> None:
        """The ledger entry of one of the run's replays (told whether or not the ledger
        took it)."""

    def ended(self, status: str, error: BaseException | None) -> None:
        """The run ended: ``status`` as its result says (``done``, ``failed``,
        ``max_turns``), or ``error`` when it raised."""


class Instrumentation(Protocol):
    """Something registered to watch every run (:func:`register`)."""

    def run_started(self, run: RunStart) -> RunObserver: ...


class _NoObserver:
    """Does nothing (no instrumentation registered)."""

    def step(self, step: ReplayedStep) -> None:
        pass

    def handed_back(self, event: HandedBack) -> None:
        pass

    def calling(self, request: ModelRequest) -> None:
        pass

    def model_call(self, call: ModelCall) -> None:
        pass

    def recorded(self, record: RunRecord) -> None:
        pass

    def ended(self, status: str, error: BaseException | None) -> None:
        pass


NO_OBSERVER: RunObserver = _NoObserver()
"""The observer of a run nothing watches."""


class _Observers:
    """Tells each of ``observers``; one that raises is logged and the others are told."""

    def __init__(self, observers: Sequence[RunObserver]) -> None:
        self._observers = tuple(observers)

    def _tell(self, what: str, *args: object) -> None:
        for observer in self._observers:
            try:
                getattr(observer, what)(*args)
            except Exception as exc:
                logger.warning("an instrumentation failed on %s: %r", what, exc)

    def step(self, step: ReplayedStep) -> None:
        self._tell("step", step)

    def handed_back(self, event: HandedBack) -> None:
        self._tell("handed_back", event)

    def calling(self, request: ModelRequest) -> None:
        self._tell("calling", request)

    def model_call(self, call: ModelCall) -> None:
        self._tell("model_call", call)

    def recorded(self, record: RunRecord) -> None:
        self._tell("recorded", record)

    def ended(self, status: str, error: BaseException | None) -> None:
        self._tell("ended", status, error)


_lock = threading.Lock()
_registered: list[Instrumentation] = []


def register(instrumentation: Instrumentation) -> None:
    """Watch every run from now on with ``instrumentation`` (once, however often it is
    registered)."""
    with _lock:
        if not any(item is instrumentation for item in _registered):
            _registered.append(instrumentation)


def unregister(instrumentation: Instrumentation) -> None:
    """Stop watching runs with ``instrumentation`` (runs under way keep their observer)."""
    with _lock:
        _registered[:] = [item for item in _registered if item is not instrumentation]


def registered() -> tuple[Instrumentation, ...]:
    """The instrumentations registered, in order."""
    with _lock:
        return tuple(_registered)


def observe(run: RunStart) -> RunObserver:
    """The observer of a run that starts now: :data:`NO_OBSERVER` when nothing is
    registered, else one that tells every registered instrumentation."""
    if not _registered:
        return NO_OBSERVER
    instrumentations = registered()
    if not instrumentations:
        return NO_OBSERVER
    observers: list[RunObserver] = []
    for instrumentation in instrumentations:
        try:
            observers.append(instrumentation.run_started(run))
        except Exception as exc:
            logger.warning("an instrumentation failed on run_started: %r", exc)
    return _Observers(observers)
