"""A realistic run ledger for the fleet page's tests, its screenshot and its benchmark: a few
trajectories replayed over some weeks on two screen profiles, with hand-backs of several
reason codes, heals, a proposal and an invalidation."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from askcache.foundation.messages import Usage
from askcache.storage.ledger import RunRecord

__all__ = ["TRAJECTORIES", "fleet_records"]

TRAJECTORIES = ("checkout.json", "login.json", "invoice-export.json", "settings/profile.json")

_CODES = ("screen_changed", "element_changed", "effect_missing", "label_changed", "end_state")
_PROFILES = ("1280x800@1x", "2560x1600@2x")
_MODELS = ("claude-sonnet-4-5", "claude-opus-4-1")


def fleet_records(
    days: int = 21, per_day: int = 12, *, end: datetime | None = None, seed: int = 7
) -> Iterator[RunRecord]:
    """``days`` days of entries, ``per_day`` replays a day (give or take), oldest first."""
    rng = random.Random(seed)
    last = end or datetime(2026, 11, 27, 18, tzinfo=UTC)
    start = (last - timedelta(days=days - 1)).replace(hour=0, minute=30, second=0, microsecond=0)
    gap = max(2, 1380 // (per_day + 3))  # minutes: a day's replays stay in that day
    for day in range(days):
        moment = start + timedelta(days=day)
        for _ in range(max(1, per_day + rng.randint(-3, 3))):
            moment += timedelta(minutes=rng.randint(1, gap))
            name = rng.choice(TRAJECTORIES)
            profile = _PROFILES[rng.random() < 0.3]
            fails = rng.random() < (0.35 if day < days // 3 else 0.12)
            model = _MODELS[name == "invoice-export.json"]
            if fails:
                step = 3 if name == "checkout.json" else rng.choice((1, 4, 6))
                yield RunRecord(
                    trajectory=name,
                    status="handed_back",
                    started_at=moment,
                    seconds=21.0,
                    steps_total=8,
                    steps_run=step,
                    stopped_at_step=step,
                    reason="the screen around the action point changed",
                    reason_code=rng.choice(_CODES[:3] if name == "checkout.json" else _CODES),  # type: ignore[arg-type]
                    model_calls=4,
                    usage=Usage(input_tokens=9_000, output_tokens=600),
                    saved_model_calls=max(step - 1, 0),
                    saved_tokens=2_500 * step,
                    saved_seconds=2.0 * step,
                    model=model,
                    profile=profile,
                )
                if rng.random() < 0.3:
                    yield RunRecord(
                        trajectory=name,
                        event=(kind := "healed" if rng.random() < 0.7 else "proposed"),
                        status=kind,
                        started_at=moment + timedelta(seconds=30),
                        profile=profile if profile != _PROFILES[0] else None,
                        healed_steps=[step],
                        version=f"v{day + 2:06d}.json",
                        verified_by="end_state",
                    )
            else:
                yield RunRecord(
                    trajectory=name,
                    status="completed" if rng.random() < 0.9 else "completed_unverified",
                    started_at=moment,
                    seconds=6.5,
                    steps_total=8,
                    steps_run=8,
                    saved_model_calls=8,
                    saved_tokens=24_000,
                    saved_seconds=40.0,
                    model=model,
                    profile=profile,
                )
        if day == days // 2:
            yield RunRecord(
                trajectory="settings/profile.json",
                event="invalidated",
                status="refused",
                started_at=moment + timedelta(minutes=5),
            )
