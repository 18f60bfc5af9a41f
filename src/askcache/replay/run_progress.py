"""Where one replay is, and what it has done: a value each state carries and replaces.

:class:`Progress` holds the step the replay is at, the record of every step it checked, the
calls it emitted and what it saw; every change makes a new value
(:func:`dataclasses.replace`), so a state never shares a changing object with the next one.
:class:`SeenLog` is the screens each replayed call was checked on and left (what a trajectory
built from the run fingerprints it on, :class:`~askcache.foundation.screen.seen.SeenScreens`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from PIL import Image

from askcache.foundation.messages import ToolUseBlockParam
from askcache.foundation.screen.seen import SeenScreens
from askcache.replay.plan import Anchor, Pending
from askcache.replay.result import StepRecord
from askcache.replay.step_view import StepView
from askcache.storage.ledger import RejoinDecision

__all__ = ["Progress", "SeenLog"]


@dataclass(frozen=True)
class SeenLog:
    """Per tool call id: the screen before the call and the screen once it had acted, as the
    run looked at them (see :class:`~askcache.foundation.screen.seen.SeenScreens`, which
    :meth:`screens` builds)."""

    keep: bool = True
    """Keep the looks; ``False``: nothing is kept (its memory stays flat)."""
    before: Mapping[str, Image.Image] = field(default_factory=dict)
    after: Mapping[str, Image.Image] = field(default_factory=dict)
    latest: Image.Image | None = None
    open: tuple[str, ...] = ()
    """The calls emitted since the last one that was checked on a look: the next look is the
    screen they left."""

    def looked(self, image: Image.Image) -> SeenLog:
        """The latest look at the screen, the one a state decided on: the screen the calls
        emitted since the last checked one left, and the one the next call is checked on."""
        if not self.keep:
            return self
        after = dict(self.after)
        after.update(dict.fromkeys(self.open, image))
        return replace(self, latest=image, after=after)

    def emitted(self, call_id: str, *, on_look: bool) -> SeenLog:
        """The call ``call_id`` runs; ``on_look``: it was checked on the latest look, which
        is then the screen it acted on."""
        if not self.keep:
            return self
        if on_look and self.latest is not None:
            return replace(self, before={**self.before, call_id: self.latest}, open=(call_id,))
        return replace(self, open=(*self.open, call_id))

    def handed_back(self) -> SeenLog:
        """The run handed back: the screens looked at from now on follow the model's
        actions, not the calls emitted so far."""
        return replace(self, open=(), latest=None)

    def screens(self) -> SeenScreens:
        """The looks, as a heal or a learned profile reads them."""
        return SeenScreens(before=dict(self.before), after=dict(self.after), keep=self.keep)


@dataclass(frozen=True)
class Progress:
    """Where one replay is, and what it has done (see the module docstring)."""

    index: int
    """The step the replay is at (the next to check, or the one it stopped at)."""
    started: float
    """When the replay was activated (the replay's clock)."""
    records: tuple[StepRecord, ...] = ()
    """Every step checked, in order: those that ran and the one a hand-back refused."""
    validated: int = 0
    unvalidated: int = 0
    steps_run: int = 0
    screenshots_taken: int = 0
    """Screenshots the replay asked the conversation for."""
    variants_used: tuple[int, ...] = ()
    rejoin_decisions: tuple[RejoinDecision, ...] = ()
    rejoins: int = 0
    views: Mapping[int, StepView] = field(default_factory=dict)
    """Per checked step: what it was checked on (only with ``keep_step_views``)."""
    emitted: Mapping[str, ToolUseBlockParam] = field(default_factory=dict)
    """Per tool call id the replay emitted: the step it replayed (with its fingerprint and
    effect; healing keeps those for the replayed part of a run)."""
    seen: SeenLog = field(default_factory=SeenLog)
    first_step: bool = True
    """True until a step was taken since activation (or a re-join): no delay before it."""
    starting: bool = True
    """True until the first step that needs a screen was checked: its wait is the start-up
    wait."""
    step_started: float = 0.0
    screenshot_asked_for: int | None = None
    """The step for which a screenshot was asked of the conversation (asked once per step)."""
    ran: Pending | None = None
    """The call whose result was read last (a step's: the screen before it)."""
    moved_seen: bool = False
    """True once a step ran where its window (or its region) had moved from the recorded
    place (:mod:`askcache.replay.anchor`): a heal then writes nothing."""
    redrawn_seen: bool = False
    """True once a step was allowed by its element's identity and look on a screen drawn
    otherwise (another theme or font): a click whose label reads as recorded and whose look
    passes may then act where its element has no tree (:mod:`askcache.replay.element_check`)."""
    other_density_seen: bool = False
    """True once a step was checked as on a screen drawn at another pixel density (a heal
    then writes nothing: its fingerprints would mix two densities)."""
    last_anchor: Anchor | None = None
    """Where the last step that ran was anchored, when its window had moved: the end state
    is compared there."""

    def record(self, record: StepRecord) -> Progress:
        """This progress with ``record`` appended."""
        return replace(self, records=(*self.records, record))

    def amend_last(self, **fields: Any) -> Progress:
        """This progress with the last record's ``fields`` changed (a copy of it)."""
        last = self.records[-1].model_copy(update=fields)
        return replace(self, records=(*self.records[:-1], last))

    def forget(self, call_id: str) -> Progress:
        """This progress without the emitted call ``call_id`` (it did not work as
        recorded)."""
        return replace(self, emitted={k: v for k, v in self.emitted.items() if k != call_id})

    def looked(self, image: Image.Image) -> Progress:
        """This progress after a state decided on the look ``image`` (:meth:`SeenLog.looked`)."""
        return replace(self, seen=self.seen.looked(image))

    def with_view(self, index: int, view: StepView | None) -> Progress:
        """This progress keeping ``view`` as what step ``index`` was checked on."""
        if view is None:
            return self
        return replace(self, views={**self.views, index: view})
