"""What a replay reports: per step, and for the whole run."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from askcache.foundation.reasons import HandBackCode
from askcache.foundation.redaction import redact
from askcache.replay.check_policy import Loosening
from askcache.storage.ledger import RejoinDecision

__all__ = ["EndStateVerdict", "ReplayResult", "ReplayStatus", "StepRecord"]

ReplayStatus = Literal["running", "completed", "completed_unverified", "handed_back"]
"""``completed``: every step ran and the screen ended as recorded (or no end state was
recorded, or its check is off); ``completed_unverified``: every step ran but the final screen
differs from the recording's, so success is not confirmed; ``handed_back``: the replay
stopped and the model took over."""


class StepRecord(BaseModel):
    """What happened to one step during a replay."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    step_index: int
    """Index in the trajectory."""
    action: str
    """Action or tool name."""
    validated: bool
    """True when the screen was checked before the step."""
    matched: bool | None = None
    """Outcome of the check (``None``: not checked)."""
    distance: int | None = None
    """Hamming distance found, when checked."""
    threshold: int | None = None
    """Threshold applied, when checked."""
    detail_distance: int | None = None
    """Hamming distance of the detail hash, when the step has one and was checked."""
    detail_threshold: int | None = None
    """The detail hash's threshold applied, when checked."""
    affected_tiles: int | None = None
    """Tiles of the area this action changed when recorded that were compared before it."""
    effect: Literal["seen", "element", "none_recorded", "not_checked"] | None = None
    """After the step: ``seen`` (its recorded effect appeared), ``element`` (on a screen drawn
    otherwise its pixels did not show it, and its element said it happened:
    :func:`~askcache.replay.effects.element_effect`), ``none_recorded`` (it changed nothing
    near its point when recorded), ``not_checked``."""
    waited_seconds: float = 0.0
    """Seconds spent waiting for the screen before the step acted (until its check passed on
    a still screen, or until the replay handed back): what the run ledger keeps per step
    (:attr:`~askcache.storage.ledger.records.RunRecord.step_waits`)."""
    effect_waited_seconds: float = 0.0
    """Seconds spent waiting for the step's recorded effect after it acted."""
    seconds: float | None = None
    """Seconds from the start of the step (looking at the screen) until its result was read
    and its effect verified: what one replayed step costs, action included."""
    note: str | None = None
    """Why the step was not checked, or what the check said."""
    decided_by: str | None = None
    """What decided the step, when it was recorded with its element
    (:mod:`askcache.replay.element_check`): ``pixels`` alone (the tree and the label said
    nothing), ``pixels+element``, ``pixels+label`` or ``pixels+element+label`` (they
    confirmed; the label is read only where the tree gave no named element), ``element`` or
    ``label`` (it refused a step whose pixels passed), ``element+look`` or ``label+look`` (a
    re-drawn screen, acted on by the element's word and its look), ``element+pixels`` (an
    element moved in its window, checked in full at its place). ``None``: the pixels alone,
    no element recorded."""

    def check_summary(self) -> str:
        """Distances against thresholds (``distance 32 vs threshold 2, detail 80 vs 14``),
        or why the step was not checked."""
        if not self.validated:
            return f"not validated ({self.note})"
        text = f"distance {self.distance} vs threshold {self.threshold}"
        if self.detail_distance is not None:
            text += f", detail {self.detail_distance} vs {self.detail_threshold}"
        if self.decided_by is not None:
            text += f"; decided by {self.decided_by}"
        return text


class EndStateVerdict(BaseModel):
    """The final screen compared with the recording's."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    matched: bool
    """True when no compared tile differs."""
    compared_tiles: int
    """Tiles compared (parameter and volatile tiles are left out)."""
    differing_tiles: list[int] = Field(default_factory=list)
    """Tiles that differ."""
    differing_boxes: list[tuple[int, int, int, int]] = Field(default_factory=list)
    """Their boxes in recorded screen pixels (``left, top, right, bottom``)."""

    def describe(self) -> str:
        """One line for logs, results and the model."""
        if self.matched:
            return f"the final screen matches the recording ({self.compared_tiles} tiles compared)"
        boxes = ", ".join(str(list(box)) for box in self.differing_boxes[:4])
        more = len(self.differing_boxes) - 4
        if more > 0:
            boxes += f" and {more} more"
        return (
            f"{len(self.differing_tiles)} of {self.compared_tiles} compared areas of the final "
            f"screen differ from the recording (at {boxes})"
        )


class ReplayResult(BaseModel):
    """The readable outcome of one replay."""

    model_config = ConfigDict(use_attribute_docstrings=True, validate_assignment=True)

    cache_file: str
    """Name of the replayed cache file."""
    status: ReplayStatus = "running"
    """See :data:`ReplayStatus`."""
    steps_total: int
    """Steps in the trajectory."""
    start_step: int = 0
    """Index of the first replayed step."""
    profile: str | None = None
    """This run's screen profile (``1280x800@2x``), when the computer tool reports its
    sizes (docs/fleet.md, "Screens")."""
    learning: bool = False
    """True when the file had no trajectory for this screen profile: the recorded steps ran
    scaled, and a verified heal is kept as this profile's trajectory."""
    steps_run: int = 0
    """Steps emitted for execution."""
    validated: int = 0
    """Steps whose screen was checked and matched."""
    unvalidated: int = 0
    """Steps executed without a check (no fingerprint and ``unchecked_steps="run"``,
    non-acting steps such as a wait, or checks skipped by settings)."""
    screenshots_taken: int = 0
    """Extra screenshots requested because the history had none after the last action."""
    steps: list[StepRecord] = Field(default_factory=list)
    """Per step: checked or not, distance vs threshold, effect."""
    stopped_at_step: int | None = None
    """Index of the step that was not executed (or whose effect did not appear), when
    handed back."""
    reason: str | None = None
    """Why the replay stopped early, or why its end state is not confirmed. Registered
    secrets are masked from it whenever it is set (:func:`~askcache.foundation.redaction.redact`: a
    backend's error may quote the text it failed to type)."""
    reason_code: HandBackCode | None = None
    """The kind of :attr:`reason`, one of a closed set
    (:data:`~askcache.foundation.reasons.HandBackCode`): set with every hand-back, and
    ``end_state`` when the end state is not confirmed; ``None`` otherwise."""
    end_state: EndStateVerdict | None = None
    """The final screen against the recording's, when both exist and the check is on."""
    handbacks: int = 0
    """Times the replay handed the turn to the model."""
    handback_steps: list[int] = Field(default_factory=list)
    """The step of each hand-back, in order (kept after a re-join)."""
    variants_used: list[int] = Field(default_factory=list)
    """Steps at which a variant of the trajectory was taken (see
    :class:`~askcache.cachefile.format.TrajectoryVariant`)."""
    rejoins: int = 0
    """Times it took over again after the model had put the screen back."""
    rejoin_decisions: list[RejoinDecision] = Field(default_factory=list)
    """Each time, after a hand-back, it considered taking over again: re-joined or refused,
    and why (:mod:`askcache.replay.rejoin`)."""
    seconds: float = 0.0
    """Wall time from activation to the end of the replay (model turns after a hand-back
    included until the replay ended)."""
    warnings: list[str] = Field(default_factory=list)
    """What this replay's checks could not see because of how the file was recorded, one
    sentence each (:func:`askcache.cachefile.blind_spots.blind_spots`: a file without the
    detail hash does not see a relabelled small control), or because this replay's own
    threshold overrides accept any screen
    (:func:`askcache.cachefile.blind_spots.override_blind_spots`). Empty: nothing known."""
    loosened: list[Loosening] = Field(default_factory=list)
    """Every way this replay checked less than its file asks, and who asked for it: a
    threshold raised above the file's (by the settings or the model), checks skipped,
    unchecked steps run, effects or the end state not checked
    (:class:`~askcache.replay.check_policy.CheckPolicy`, which decides them; the run ledger
    keeps them, :attr:`~askcache.storage.ledger.RunRecord.loosened`). Empty: none."""

    @field_validator("reason")
    @classmethod
    def _masked_reason(cls, reason: str | None) -> str | None:
        return None if reason is None else redact(reason)
