"""A step's visual fingerprint: what recording stores and what replay checks before acting.

The two functions a benchmark (or a curious user) calls directly are
:func:`compute_step_representation` (what recording stores for a step) and
:func:`check_step_representation` (what replay decides before executing it). The parts:

- a coarse perceptual hash of the main region (100 px by default) around the point, which
  sees layout (:mod:`askcache.foundation.screen.hashing`);
- a fine hash of a smaller detail region (48 px), blurred slightly first so that
  re-rendered text hashes more alike, which sees the element's own label;
- a *noise floor* for either hash: recording stores which bits noise decides on the
  recorded screen (DCT coefficient within the floor of the median: the weak bits), and at
  replay a differing bit is forgiven only when it is weak on the current screen too, so JPEG
  noise or 3 % brightness do not add up while a blank screen (all of whose coefficients are
  weak now, not then) still fails (:func:`askcache.foundation.screen.hashing.region_distance`);
- the tone of both regions, their brightness and contrast, which hashes normalise away: it
  sees a dimming backdrop and a faded, disabled element (:mod:`askcache.foundation.screen.tone`);
- the whole target, when the element under the point is larger than the main region (a wide
  text field): its box and where ink lies in it, which sees text left over at the field's
  far end, and for a tall one (an editor's text area) which bands of rows hold a line, which
  sees a line more or less (:mod:`askcache.foundation.screen.target`).

A replayed step matches when every part the file records is within its tolerance. No pixels
are stored: hashes and their weak bits, two statistics per region and one bit per column of
the target.

Decoding screenshots once and finding the latest one in a message history are in
:mod:`askcache.fingerprint.screenshots`, re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from PIL import Image

from askcache.cachefile.format import (
    DetailCheckConfig,
    TargetCheckConfig,
    ToneCheckConfig,
    VisualValidationConfig,
)
from askcache.fingerprint.masks import StepMask
from askcache.fingerprint.screenshots import (
    decode_screenshot,
    find_recent_screenshot,
    find_recent_screenshot_block,
)
from askcache.foundation.actions import parse_action
from askcache.foundation.geometry import Box, Point
from askcache.foundation.messages import ToolUseBlockParam
from askcache.foundation.screen.hashing import (
    check_hash_size,
    compute_hash,
    crop_region,
    hamming_distance,
    region_box,
    region_distance,
    shifted_boxes,
    weak_bits,
)
from askcache.foundation.screen.target import TargetFingerprint, ink_distance, target_fingerprint
from askcache.foundation.screen.tone import decode_tones, encode_tones, tone_change, tone_of
from askcache.foundation.settings import CacheWritingSettings, VisualMethod

__all__ = [
    "Box",
    "StepFingerprint",
    "VisualCheck",
    "check_step_representation",
    "compute_hash",
    "compute_step_representation",
    "crop_region",
    "decode_screenshot",
    "find_recent_screenshot",
    "find_recent_screenshot_block",
    "hamming_distance",
    "region_box",
    "region_distance",
    "shifted_boxes",
    "validation_config",
]


def validation_config(settings: CacheWritingSettings) -> VisualValidationConfig | None:
    """The per-file validation config for these writing settings (``None`` for ``none``)."""
    if settings.visual_verification_method == VisualMethod.NONE:
        return None
    phash = settings.visual_verification_method == VisualMethod.PHASH  # floors: pHash only
    detail = None
    if settings.visual_validation_detail_region_size is not None:
        detail = DetailCheckConfig(
            hash_size=settings.visual_validation_detail_hash_size,
            region_size=settings.visual_validation_detail_region_size,
            threshold=settings.visual_validation_detail_threshold,
            blur=settings.visual_validation_detail_blur,
            noise_floor=settings.visual_validation_detail_noise_floor if phash else 0.0,
        )
    tone = None
    if settings.visual_validation_tone:
        tone = ToneCheckConfig(
            mean_tolerance=settings.visual_validation_tone_mean_tolerance,
            contrast_tolerance=settings.visual_validation_tone_contrast_tolerance,
        )
    target = None
    if settings.visual_validation_target:
        target = TargetCheckConfig(
            columns=settings.visual_validation_target_columns,
            threshold=settings.visual_validation_target_threshold,
        )
    other_density = None
    if detail is not None and settings.visual_validation_other_density_threshold is not None:
        other_density = DetailCheckConfig(
            hash_size=detail.hash_size,
            region_size=settings.visual_validation_other_density_region_size,
            threshold=settings.visual_validation_other_density_threshold,
            blur=settings.visual_validation_other_density_blur,
            noise_floor=settings.visual_validation_other_density_noise_floor if phash else 0.0,
        )
    return VisualValidationConfig(
        method=settings.visual_verification_method.value,
        hash_size=settings.hash_size,
        region_size=settings.visual_validation_region_size,
        threshold=settings.visual_validation_threshold,
        shift_tolerance=settings.visual_validation_shift_tolerance,
        noise_floor=settings.visual_validation_noise_floor if phash else 0.0,
        detail=detail,
        tone=tone,
        target=target,
        other_density=other_density,
    )


def _anchor(step: ToolUseBlockParam, pointer: Point | None) -> Point | None:
    action = parse_action(step)
    if action is not None and action.point is not None:
        return action.point
    return pointer


@dataclass(frozen=True)
class StepFingerprint:
    """What recording stores for a step: the hashes, the tone and the whole target."""

    region: str
    """Hex hash of the main region (``ToolUseBlockParam.visual_representation``)."""
    detail: str | None = None
    """Hex hash of the detail region (``ToolUseBlockParam.visual_detail``), if configured."""
    tone: str | None = None
    """Mean and contrast of the regions (``ToolUseBlockParam.visual_tone``), if configured."""
    target: str | None = None
    """The element's box and ink map (``ToolUseBlockParam.visual_target``), when the
    element under the point is larger than the main region."""
    mask: str | None = None
    """What varied across repeat runs and is ignored (``ToolUseBlockParam.visual_mask``,
    learned by :func:`askcache.record.mask_learning.learn_masks`)."""
    weak: str | None = None
    """The hashes' bits that noise decided on the recorded screen, ``"<main hex>;<detail
    hex>"`` (``ToolUseBlockParam.visual_weak``), when the file's check has noise floors:
    only those may be forgiven at replay
    (:func:`askcache.foundation.screen.hashing.region_distance`)."""
    other_density: str | None = None
    """The hash (of its own region) checked on a screen drawn at another pixel density, and its
    weak bits: ``"<hash hex>;<weak hex>"`` (``ToolUseBlockParam.visual_other_density``)."""

    def weak_parts(self) -> tuple[str | None, str | None]:
        """The main and the detail hash's weak bits (``None`` for a part not stored)."""
        if self.weak is None:
            return None, None
        main, _, detail = self.weak.partition(";")
        return main or None, detail or None

    @classmethod
    def of(cls, step: ToolUseBlockParam) -> StepFingerprint | None:
        """The fingerprint stored on ``step``, or ``None`` when it has none."""
        if step.visual_representation is None:
            return None
        return cls(
            step.visual_representation,
            step.visual_detail,
            step.visual_tone,
            step.visual_target,
            step.visual_mask,
            step.visual_weak,
            step.visual_other_density,
        )

    @property
    def size_bytes(self) -> int:
        """Characters this fingerprint adds to a step in the cache file (its JSON values)."""
        parts = (
            self.region,
            self.detail,
            self.tone,
            self.target,
            self.mask,
            self.weak,
            self.other_density,
        )
        return sum(len(part) for part in parts if part)


def _boxes(
    size: tuple[int, int], anchor: Point | None, config: VisualValidationConfig
) -> tuple[Box | None, Box | None]:
    box = region_box(size, anchor, config.region_size)
    if box is None or anchor is None or config.detail is None:
        return box, None
    return box, region_box(size, anchor, config.detail.region_size)


def compute_step_representation(
    image: Image.Image,
    step: ToolUseBlockParam,
    config: VisualValidationConfig,
    *,
    pointer: Point | None = None,
) -> StepFingerprint | None:
    """The fingerprint recording stores for ``step``, from the screen before it.

    The regions are centred on the step's coordinate; for an action without one (typing, a
    key press) on ``pointer``, the pointer's last known position; failing both, the whole
    screen (then the detail hash and the target are left out). Returns ``None`` when the
    point lies outside the image.
    """
    anchor = _anchor(step, pointer)
    box, detail_box = _boxes(image.size, anchor, config)
    if box is None:
        return None
    detail = None
    if config.detail is not None and detail_box is not None:
        detail = compute_hash(
            image.crop(detail_box), config.method, config.detail.hash_size, config.detail.blur
        )
    tone = None
    if config.tone is not None:
        regions = [box] if detail_box is None else [box, detail_box]
        tone = encode_tones([tone_of(image.crop(region)) for region in regions])
    target = None
    if config.target is not None and anchor is not None:
        found = target_fingerprint(image, anchor, config.region_size, config.target.columns)
        target = found.encode() if found is not None else None
    weak = None
    if config.method == "phash" and config.has_noise_floor:
        main_weak = weak_bits(image.crop(box), config.hash_size, config.noise_floor)
        detail_weak = ""
        if config.detail is not None and detail_box is not None:
            detail_weak = weak_bits(
                image.crop(detail_box),
                config.detail.hash_size,
                config.detail.noise_floor,
                config.detail.blur,
            )
        weak = f"{main_weak};{detail_weak}"
    other = config.other_density if detail is not None and detail_box is not None else None
    other_density = None
    other_box = region_box(image.size, anchor, other.region_size) if other is not None else None
    if other is not None and other_box is not None:
        region = image.crop(other_box)
        other_weak = ""
        if config.method == "phash" and other.noise_floor > 0:
            other_weak = weak_bits(region, other.hash_size, other.noise_floor, other.blur)
        other_density = (
            f"{compute_hash(region, config.method, other.hash_size, other.blur)};{other_weak}"
        )
    return StepFingerprint(
        compute_hash(image.crop(box), config.method, config.hash_size),
        detail,
        tone,
        target,
        weak=weak,
        other_density=other_density,
    )


@dataclass(frozen=True)
class VisualCheck:
    """The outcome of checking one step's regions against its stored fingerprint."""

    matched: bool
    """True when every part is within its tolerance."""
    distance: int | None
    """Hamming distance of the main hash in bits; ``None`` when the point lies outside the
    screen."""
    threshold: int
    """The main hash's threshold applied."""
    method: str
    """Hash method."""
    hash_size: int
    """Hash side."""
    region_size: int
    """Region side in pixels."""
    box: Box | None
    """The region compared, or ``None``."""
    shift_tolerance: int = 0
    """Pixels the regions were allowed to move each way."""
    detail_distance: int | None = None
    """Hamming distance of the detail hash; ``None`` when the step has none."""
    detail_threshold: int | None = None
    """The detail hash's threshold applied, when there is one."""
    detail_hash_size: int | None = None
    """Side of the detail hash, when there is one."""
    detail_region_size: int | None = None
    """Side of the detail region in pixels, when there is one."""
    brightness_change: float | None = None
    """Largest relative change of a region's mean grey level; ``None`` without a tone check."""
    contrast_change: float | None = None
    """Largest relative change of a region's contrast; ``None`` without a tone check."""
    tone: ToneCheckConfig | None = None
    """The tone tolerances applied, when the step has a tone."""
    target_distance: int | None = None
    """Ink-map bits of the whole target that differ (columns, and row bands of a tall target);
    ``None`` when the step has no target."""
    target_threshold: int | None = None
    """The target's threshold applied, when there is one."""
    target_box: Box | None = None
    """The target's box on the screen, when there is one."""
    target_rows: bool = False
    """Whether the target is tall, and its row bands were compared too."""
    noise_floor: float = 0.0
    """The main hash's noise floor applied (0: every differing bit counted)."""
    detail_noise_floor: float = 0.0
    """The detail hash's noise floor applied (0: every differing bit counted)."""
    other_density: bool = False
    """True when the screen was drawn at another pixel density and the step's hash for that
    was checked instead of the detail hash (the contrast then not checked)."""

    @property
    def failed_parts(self) -> list[str]:
        """Which parts are out of tolerance: ``main``, ``detail``, ``brightness``,
        ``contrast``, ``target`` (empty when the step matched)."""
        failed = []
        if self.distance is None or self.distance > self.threshold:
            failed.append("main")
        if (
            self.detail_distance is not None
            and self.detail_threshold is not None
            and self.detail_distance > self.detail_threshold
        ):
            failed.append("detail")
        if self.tone is not None:
            if self.brightness_change is not None and (
                self.brightness_change > self.tone.mean_tolerance
            ):
                failed.append("brightness")
            if self.contrast_change is not None and (
                self.contrast_change > self.tone.contrast_tolerance
            ):
                failed.append("contrast")
        if (
            self.target_distance is not None
            and self.target_threshold is not None
            and self.target_distance > self.target_threshold
        ):
            failed.append("target")
        return failed

    def describe(self) -> str:
        """One line for logs and messages: set-up, distances vs tolerances."""
        setup = (
            f"{self.method}, {self.hash_size}x{self.hash_size} hash, {self.region_size} px region"
        )
        if self.shift_tolerance:
            setup += f" ±{self.shift_tolerance} px"
        if self.noise_floor:
            setup += f", noise floor {self.noise_floor:g}"
        if self.distance is None:
            return f"{setup}: the action point is outside the current screen"

        def rel(value: float, limit: float) -> str:
            return "<=" if value <= limit else ">"

        text = f"{setup}: distance {self.distance} {rel(self.distance, self.threshold)} "
        text += f"threshold {self.threshold}"
        if self.detail_distance is not None and self.detail_threshold is not None:
            size = self.detail_hash_size
            text += (
                ("; detail for another pixel density" if self.other_density else "; detail")
                + f" ({size}x{size} hash, {self.detail_region_size} px"
                + (f", noise floor {self.detail_noise_floor:g}" if self.detail_noise_floor else "")
                + "): "
                f"distance {self.detail_distance} "
                f"{rel(self.detail_distance, self.detail_threshold)} "
                f"threshold {self.detail_threshold}"
            )
        if self.tone is not None and self.brightness_change is not None:
            contrast = self.contrast_change or 0.0
            text += (
                f"; brightness change {self.brightness_change:.0%} "
                f"{rel(self.brightness_change, self.tone.mean_tolerance)} "
                f"{self.tone.mean_tolerance:.0%}, "
            )
            if self.other_density:
                text += "contrast not checked (another pixel density)"
            else:
                text += (
                    f"contrast change {contrast:.0%} "
                    f"{rel(contrast, self.tone.contrast_tolerance)} "
                    f"{self.tone.contrast_tolerance:.0%}"
                )
        if self.target_distance is not None and self.target_threshold is not None:
            text += (
                f"; whole target {self.target_box}: {self.target_distance} ink columns "
                f"{'or row bands ' if self.target_rows else ''}"
                f"changed {rel(self.target_distance, self.target_threshold)} "
                f"{self.target_threshold}"
            )
        return text


@dataclass(frozen=True)
class _DetailPart:
    """The finer hash a check compares: the detail hash, or on a screen drawn at another
    pixel density the step's hash for that."""

    config: DetailCheckConfig | None
    threshold: int | None
    stored: str | None
    weak: str | None
    mask: int
    other_density: bool

    @classmethod
    def of(
        cls,
        config: VisualValidationConfig,
        stored: StepFingerprint,
        mask: StepMask,
        detail_threshold: int | None,
        other_density: bool,
    ) -> _DetailPart:
        if config.detail is None or stored.detail is None:
            return cls(None, None, None, None, 0, False)
        other = config.other_density
        if other_density and other is not None and stored.other_density is not None:
            hashed, _, weak = stored.other_density.partition(";")
            # the learned mask's bits are the detail hash's, not this one's
            return cls(other, other.threshold, hashed, weak or None, 0, True)
        threshold = config.detail.threshold if detail_threshold is None else detail_threshold
        return cls(
            config.detail, threshold, stored.detail, stored.weak_parts()[1], mask.detail, False
        )


def _tone_changes(image: Image.Image, stored: str, boxes: list[Box]) -> tuple[float, float]:
    recorded = decode_tones(stored)
    brightness = contrast = 0.0
    for before, region in zip(recorded, boxes, strict=False):
        mean, spread = tone_change(before, tone_of(image.crop(region)))
        brightness, contrast = max(brightness, mean), max(contrast, spread)
    return brightness, contrast


def check_step_representation(
    image: Image.Image,
    step: ToolUseBlockParam,
    stored: StepFingerprint,
    config: VisualValidationConfig,
    *,
    threshold: int | None = None,
    detail_threshold: int | None = None,
    pointer: Point | None = None,
    other_density: bool = False,
) -> VisualCheck:
    """Decide whether the screen in ``image`` still matches ``stored`` around ``step``'s point.

    ``threshold`` and ``detail_threshold`` override the config's. A distance equal to its
    threshold matches; the step matches when every part both the config and ``stored`` have
    is within its tolerance: the main hash, the detail hash, the tone (brightness and
    contrast of the main and detail regions) and the whole target. With
    ``config.shift_tolerance`` each hashed region is also tried moved by up to that many
    pixels each way until a move is within its threshold (else the smallest distance
    counts). Once a part has failed, the remaining hashes are measured at the recorded
    position only: the outcome cannot change, and a changed screen stays cheap.

    ``other_density``: ``image`` is drawn at another pixel density than the recorded screen
    (rescaled, or from a display of another size). When the file and the step have a hash
    for that (``config.other_density``), it is checked instead of the detail hash
    (``detail_threshold`` then does not apply) and the tone's contrast is not checked, its
    brightness is; otherwise the step is checked as on any screen.

    Raises:
        InvalidHashError: a stored hash, tone or target is malformed or of another size.
    """
    limit = config.threshold if threshold is None else threshold
    anchor = _anchor(step, pointer)
    box, detail_box = _boxes(image.size, anchor, config)
    mask = StepMask.decode(stored.mask) if stored.mask is not None else StepMask()
    main_weak, _ = stored.weak_parts()
    part = _DetailPart.of(config, stored, mask, detail_threshold, other_density)
    detail, detail_limit, detail_hash = part.config, part.threshold, part.stored
    rescaled = part.other_density
    part_box = detail_box  # the region the finer hash covers: its own on another density
    if rescaled and detail is not None and detail_box is not None:
        part_box = region_box(image.size, anchor, detail.region_size)
    tone_config = config.tone if stored.tone is not None else None
    if tone_config is not None and rescaled:
        tone_config = tone_config.model_copy(update={"contrast_tolerance": 1.0})
    if tone_config is not None and (mask.brightness or mask.contrast):
        tone_config = tone_config.model_copy(
            update={
                "mean_tolerance": max(tone_config.mean_tolerance, mask.brightness),
                "contrast_tolerance": max(tone_config.contrast_tolerance, mask.contrast),
            }
        )
    target = None
    if config.target is not None and stored.target is not None:
        target = TargetFingerprint.decode(stored.target)
    distance: int | None = None
    detail_distance: int | None = None
    brightness: float | None = None
    contrast: float | None = None
    target_distance: int | None = None
    target_box: Box | None = None
    if box is None:  # nothing to compare; still reject malformed stored data
        check_hash_size(stored.region, config.hash_size)
        for hashed, part_config in ((stored.detail, config.detail), (detail_hash, detail)):
            if hashed is not None and part_config is not None:
                check_hash_size(hashed, part_config.hash_size)
            elif hashed is not None:
                hamming_distance(hashed, hashed)
        if stored.tone is not None:
            decode_tones(stored.tone)
    else:
        # Cheap parts first. Once one part fails the step hands back whatever the others
        # say, so the others are then measured at the recorded position only (no shifted
        # search): the message still shows their distances, and a changed screen costs
        # little more than an unchanged one.
        failed = False
        if tone_config is not None and stored.tone is not None:
            regions = [box] if detail_box is None else [box, detail_box]
            brightness, contrast = _tone_changes(image, stored.tone, regions)
            failed = (
                brightness > tone_config.mean_tolerance or contrast > tone_config.contrast_tolerance
            )
        if target is not None and anchor is not None and config.target is not None:
            target_distance = ink_distance(
                image, anchor, target, ignore=mask.ink, other_density=other_density
            )
            target_box = target.absolute(anchor)
            failed = failed or target_distance > config.target.threshold
        distance = region_distance(
            image,
            box,
            stored.region,
            config.method,
            config.hash_size,
            shift_tolerance=0 if failed else config.shift_tolerance,
            good_enough=limit,
            mask=mask.main,
            noise_floor=config.noise_floor,
            weak=main_weak,
        )
        failed = failed or distance > limit
        if detail is not None and detail_hash is not None and part_box is not None:
            detail_distance = region_distance(
                image,
                part_box,
                detail_hash,
                config.method,
                detail.hash_size,
                shift_tolerance=0 if failed else config.shift_tolerance,
                blur=detail.blur,
                good_enough=detail_limit if detail_limit is not None else 0,
                mask=part.mask,
                noise_floor=detail.noise_floor,
                weak=part.weak,
            )
    check = VisualCheck(
        matched=False,
        distance=distance,
        threshold=limit,
        method=config.method,
        hash_size=config.hash_size,
        region_size=config.region_size,
        box=box,
        shift_tolerance=config.shift_tolerance,
        detail_distance=detail_distance,
        detail_threshold=detail_limit,
        detail_hash_size=detail.hash_size if detail is not None else None,
        detail_region_size=detail.region_size if detail is not None else None,
        brightness_change=brightness,
        contrast_change=contrast,
        tone=tone_config,
        target_distance=target_distance,
        target_threshold=config.target.threshold if target is not None and config.target else None,
        target_box=target_box,
        target_rows=target is not None and target.rows > 0,
        noise_floor=config.noise_floor,
        detail_noise_floor=detail.noise_floor if detail is not None else 0.0,
        other_density=rescaled,
    )
    return replace(check, matched=not check.failed_parts)
