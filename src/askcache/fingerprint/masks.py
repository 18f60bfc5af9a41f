"""What a step's check ignores: the :class:`StepMask` stored on a step.

A mask is learned from repeat runs (:mod:`askcache.record.mask_learning`) and read by the
step's check (:func:`askcache.fingerprint.step.check_step_representation`). Masks only ever
loosen a check where a repeat run showed variation, within :func:`mask_bound` (a quarter of a
hash's bits, :data:`MASK_BIT_FRACTION`) and :data:`MASK_TONE_FACTOR` times a tone tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass

from askcache.foundation.errors import InvalidHashError

__all__ = [
    "MASK_BIT_FRACTION",
    "MASK_MARGIN",
    "MASK_TONE_FACTOR",
    "StepMask",
    "mask_bound",
]

MASK_MARGIN = 0.03
"""Added to the largest tone change seen in repeat runs to make the step's tolerance."""

MASK_BIT_FRACTION = 4
"""A run whose screen differs in more than ``bits // MASK_BIT_FRACTION`` bits of a hash (or of
the whole target's ink columns) is not learned from, and a step's mask never ignores more
than that many, however many runs it is learned from. Measured on the simulated form
(8x8 main hash, 16x16 detail hash): a small counter beside the Save button varies 6 to 12 of
the 64 main-hash bits and none of the 256 detail bits, while the same form with a banner
pushed in above it (a wrong screen) differs in 32-36 main and 128 detail bits (half: an
unrelated picture), an all-black screen in 32 and 128 at the button (but only 4 and 8 over
the flat Name field: :data:`MASK_TONE_FACTOR` refuses that one). A quarter (16 and 64) lies
between, and is the limit ``askcache lint`` already calls a loose threshold: past it a check
accepts large changes."""

MASK_TONE_FACTOR = 2.0
"""A step's tone tolerance is raised to at most this many times the file's tolerance; a run
whose brightness or contrast change (plus :data:`MASK_MARGIN`) would need more is not learned
from. The counter above changes contrast by about 1 %; the banner screen by 17-61 % and an
all-black screen by 100 %, against the default tolerances of 6 % (brightness) and 15 %
(contrast)."""


def mask_bound(bits: int) -> int:
    """The most bits of a hash of ``bits`` bits (or ink columns) a mask may ignore."""
    return bits // MASK_BIT_FRACTION


@dataclass(frozen=True)
class StepMask:
    """What varied at one step across repeat runs."""

    main: int = 0
    """Bits of the main hash to ignore."""
    detail: int = 0
    """Bits of the detail hash to ignore."""
    ink: int = 0
    """Columns of the whole target's ink map to ignore."""
    brightness: float = 0.0
    """The step's brightness tolerance (0: the file's)."""
    contrast: float = 0.0
    """The step's contrast tolerance (0: the file's)."""

    def encode(self) -> str:
        """``main;detail;ink;brightness;contrast``, the masks in hex."""
        return (
            f"{self.main:x};{self.detail:x};{self.ink:x};{self.brightness:.3f};{self.contrast:.3f}"
        )

    @classmethod
    def decode(cls, text: str) -> StepMask:
        """Parse :meth:`encode`'s text.

        Raises:
            InvalidHashError: not in that shape.
        """
        try:
            main, detail, ink, brightness, contrast = text.split(";")
            mask = cls(
                int(main, 16), int(detail, 16), int(ink, 16), float(brightness), float(contrast)
            )
        except (AttributeError, TypeError, ValueError):
            raise InvalidHashError(
                f"visual mask {text!r} is not 'main;detail;ink;brightness;contrast'"
            ) from None
        if min(mask.main, mask.detail, mask.ink) < 0 or not (
            0 <= mask.brightness <= 1 and 0 <= mask.contrast <= 1
        ):
            raise InvalidHashError(f"visual mask {text!r} has a value out of range")
        return mask
