"""Every timeout, retry count and threshold of parity verification, in one place.

All parity code reads these from a :class:`ParityConfig`; pass one to change them.
"""

from __future__ import annotations

from pydantic import AliasChoices, Field

from askcache.foundation.settings import SettingsModel

__all__ = ["DEFAULT_CONFIG", "ParityConfig", "Viewport"]


class Viewport(SettingsModel):
    """A browser window size."""

    width: int = Field(ge=200, le=8000)
    """Width in CSS pixels."""
    height: int = Field(ge=200, le=8000)
    """Height in CSS pixels."""


class ParityConfig(SettingsModel):
    """Timeouts, retries and thresholds for parity verification."""

    min_confidence: int = Field(80, ge=0, le=100)
    """A PASS verdict below this confidence becomes ERROR."""
    max_attempts: int = Field(
        3, ge=1, le=10, validation_alias=AliasChoices("max_attempts", "max_retries")
    )
    """Attempts at a judgement that gives ERROR or raises, the first included (seed 001's
    ``VALIDATION_MAX_RETRIES = 3``, which its code counts as attempts; ``max_retries`` is
    accepted as that name)."""
    backoff_base_seconds: float = Field(2.0, ge=0, le=60)
    """Wait after failed attempt n is ``backoff_base_seconds ** n``: 2 s, then 4 s (seed 001's
    ``2 ** attempt``; its "8 s" would follow a third attempt, which has no successor)."""
    judge_timeout_seconds: float = Field(600.0, gt=0, le=3600)
    """Longest one judgement attempt (one model call) may take (seed 001's
    ``BROWSER_CLAUDE_TIMEOUT``)."""
    total_timeout_seconds: float = Field(660.0, gt=0, le=36000)
    """Longest a judgement may take over all its attempts and waits (seed 001's
    ``VALIDATION_TOTAL_TIMEOUT``): no wait or attempt starts after it, and an attempt's own
    timeout is cut to the time left."""
    page_load_timeout_seconds: float = Field(30.0, gt=0, le=600)
    """Longest a page may take to load in the browser."""
    settle_seconds: float = Field(0.5, ge=0, le=30)
    """Wait after a page loaded before its screenshot (fonts, animations)."""
    parity_threshold: float = Field(99.0, ge=0, le=100)
    """The auto-verify loop succeeds at this parity score or more."""
    high_gaps_block_success: bool = True
    """The loop's success also needs no ``high``-severity gap. Seed 000's table names only
    the score, but its reason for 99 is "minor pixel differences" while "ensuring visual
    fidelity": a relabelled button is a high gap on well under 1 % of a page's pixels (99.47
    on a 1280x800 page). ``False``: the score alone decides, as in the table."""
    max_iterations: int = Field(10, ge=1, le=100)
    """The auto-verify loop stops after this many iterations."""
    diminishing_window: int = Field(3, ge=1, le=20)
    """Consecutive iterations that must each improve by ``min_improvement``..."""
    min_improvement: float = Field(1.0, ge=0, le=100)
    """...or the loop stops for diminishing returns (points of parity score)."""
    grid_size: int = Field(16, ge=2, le=128)
    """The deterministic judge divides the image into ``grid_size`` x ``grid_size`` cells."""
    pixel_tolerance: int = Field(24, ge=0, le=255)
    """A pixel counts as changed when a channel differs by more than this (0-255)."""
    cell_tolerance: float = Field(0.002, ge=0, le=1)
    """A cell is a gap when more than this fraction of its pixels changed."""
    desktop: Viewport = Viewport(width=1280, height=800)
    """Desktop browser viewport."""
    mobile: Viewport = Viewport(width=390, height=844)
    """Mobile browser viewport."""


DEFAULT_CONFIG = ParityConfig()
"""The defaults the seeds describe (99 % parity; 3 attempts, waiting 2 and 4 s, within 660 s
in all; confidence 80)."""
