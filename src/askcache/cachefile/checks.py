"""Whole-file checks of a parsed cache file, run by the loader before anything may act on it.

:func:`check_cache_file` checks what a field-by-field model cannot: that every step can be
replayed exactly as written and checked as the file says. A computer step names a known
action with arguments of the right type and range, its coordinates lie on the recorded
screen, its hashes have the declared size, placeholders appear only in typed text, and a
hash is never stored where it could not be checked. Thresholds must lie below the hash's
bit count (a threshold at the bit count accepts any screen).

:func:`unchecked_steps` lists the click and keyboard steps that carry no usable check; the
replay refuses a file with any (:func:`askcache.replay.guard.check_replayable`) unless the
caller explicitly allows unchecked steps.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from askcache.foundation import limits
from askcache.foundation.actions import (
    CLICK_ACTIONS,
    COMPUTER_TOOL_NAME,
    KNOWN_ACTIONS,
    TEXT_ENTRY_ACTIONS,
    action_anchors,
    parse_action,
)
from askcache.foundation.errors import CacheFileCorruptError, CacheFileLimitError
from askcache.foundation.messages import ToolUseBlockParam
from askcache.foundation.parameters import PARAMETER_NAME, PLACEHOLDER, text_problem
from askcache.foundation.screen.elsewhere import HASH_SIZE, ChangeElsewhere
from askcache.foundation.screen.thumbnails import ScreenStateConfig, ScreenThumbnail, Thumbnail

if TYPE_CHECKING:
    from askcache.cachefile.format import CacheFile, CoordinateSpace, VisualValidationConfig

__all__ = [
    "CHECKED_ACTIONS",
    "INPUT_KEYS",
    "TOOL_NAME",
    "UncheckedStep",
    "check_cache_file",
    "hash_hex_length",
    "unchecked_steps",
]

CHECKED_ACTIONS = CLICK_ACTIONS | TEXT_ENTRY_ACTIONS
"""Actions that must be checked before they run: the click family and keyboard entry. A
step with one of them and no usable check is refused unless the caller allows it."""

INPUT_KEYS = frozenset(
    {
        "action",
        "coordinate",
        "start_coordinate",
        "text",
        "scroll_direction",
        "scroll_amount",
        "duration",
        "region",
        "repeat",
    }
)
"""The arguments a computer step may have (both tool shapes; ``action`` only in the single
tool's shape)."""

TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""A tool's name, as the Messages API allows it."""

_SCROLL_DIRECTIONS = frozenset({"up", "down", "left", "right"})
_HEX = re.compile(r"^[0-9a-fA-F]+$")
_NEEDS_TEXT = frozenset({"type", "key", "hold_key"})
_NEEDS_POINT = frozenset({"mouse_move", "left_click_drag"})


def hash_hex_length(hash_size: int) -> int:
    """Hex digits of a ``hash_size x hash_size`` hash (imagehash's own format)."""
    return math.ceil(hash_size**2 / 4)


def _is_hash(value: str, hash_size: int) -> bool:
    """True for the hex of a ``hash_size x hash_size`` hash."""
    return bool(_HEX.match(value)) and len(value) == hash_hex_length(hash_size)


class _ProblemError(Exception):
    def __init__(self, field: str, detail: str, *, limit: bool = False) -> None:
        super().__init__(detail)
        self.field = field
        self.detail = detail
        self.limit = limit


def _check_config(config: VisualValidationConfig) -> None:
    floors = [("metadata.visual_validation.noise_floor", config.noise_floor)]
    if config.detail is not None:
        floors.append(("metadata.visual_validation.detail.noise_floor", config.detail.noise_floor))
    other = config.other_density
    if other is not None:
        where = "metadata.visual_validation.other_density"
        if config.detail is None:
            raise _ProblemError(where, "a hash for other densities needs the detail hash")
        if other.hash_size != config.detail.hash_size:
            raise _ProblemError(
                f"{where}.hash_size",
                f"must be the detail hash's ({config.detail.hash_size}), got {other.hash_size}",
            )
        floors.append((f"{where}.noise_floor", other.noise_floor))
    for where, floor in floors:
        if floor and config.method != "phash":
            raise _ProblemError(
                where, f"a noise floor applies to phash only, the file's method is {config.method}"
            )
    sizes = [("metadata.visual_validation", config.hash_size, config.threshold)]
    if config.detail is not None:
        sizes.append(
            ("metadata.visual_validation.detail", config.detail.hash_size, config.detail.threshold)
        )
    if other is not None:
        sizes.append(("metadata.visual_validation.other_density", other.hash_size, other.threshold))
    for where, size, threshold in sizes:
        if size % 2:
            raise _ProblemError(f"{where}.hash_size", f"must be even, got {size}")
        if config.method == "whash" and size & (size - 1):
            raise _ProblemError(f"{where}.hash_size", f"whash needs a power of two, got {size}")
        problem = limits.threshold_problem(threshold, size)
        if problem is not None:
            raise _ProblemError(f"{where}.threshold", problem)


def _integer(value: Any, low: int, high: int, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _ProblemError(field, f"must be a whole number, got {type(value).__name__}")
    if not low <= value <= high:
        raise _ProblemError(field, f"{value} is outside {low}..{high}")
    return value


def _point(value: Any, size: tuple[int, int], field: str) -> None:
    if not isinstance(value, list) or len(value) != 2:
        raise _ProblemError(field, "must be [x, y]")
    _integer(value[0], 0, size[0] - 1, f"{field}[0]")
    _integer(value[1], 0, size[1] - 1, f"{field}[1]")


def _check_computer_input(
    step: ToolUseBlockParam, action: str, where: str, size: tuple[int, int]
) -> None:
    arguments = step.input
    allowed = INPUT_KEYS if step.toolset_name is None else INPUT_KEYS - {"action"}
    for key, value in arguments.items():
        field = f"{where}.input.{key}"
        if key not in allowed:
            close = difflib.get_close_matches(key, sorted(allowed), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise _ProblemError(
                field, f"unknown argument{hint}; known: {', '.join(sorted(allowed))}"
            )
        if key in ("coordinate", "start_coordinate"):
            _point(value, size, field)
        elif key == "region":
            if not isinstance(value, list) or len(value) != 4:
                raise _ProblemError(field, "must be [x1, y1, x2, y2]")
            for index, number in enumerate(value):
                _integer(number, 0, size[index % 2], f"{field}[{index}]")
        elif key == "text":
            if not isinstance(value, str):
                raise _ProblemError(field, f"must be a string, got {type(value).__name__}")
            problem = (
                text_problem(value) if action == "type" else text_problem(value, allow=frozenset())
            )
            if problem:
                raise _ProblemError(field, problem)
            if action != "type" and PLACEHOLDER.search(value):
                raise _ProblemError(
                    field, "a placeholder outside typed text; only 'type' text may hold one"
                )
        elif key == "scroll_direction":
            if value not in _SCROLL_DIRECTIONS:
                raise _ProblemError(
                    field, f"must be one of {', '.join(sorted(_SCROLL_DIRECTIONS))}"
                )
        elif key == "scroll_amount":
            _integer(value, 0, limits.MAX_REPEAT, field)
        elif key == "repeat":
            _integer(value, 1, limits.MAX_REPEAT, field)
        elif key == "duration":
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise _ProblemError(field, f"must be a number, got {type(value).__name__}")
            if not 0 <= value <= limits.MAX_WAIT_SECONDS:
                raise _ProblemError(
                    field, f"{value} s is outside 0..{limits.MAX_WAIT_SECONDS:g} s", limit=True
                )
    if action in _NEEDS_TEXT and "text" not in arguments:
        raise _ProblemError(f"{where}.input.text", f"{action} needs a text")
    if action in _NEEDS_POINT and "coordinate" not in arguments:
        raise _ProblemError(f"{where}.input.coordinate", f"{action} needs a coordinate")
    if action == "left_click_drag" and "start_coordinate" not in arguments:
        raise _ProblemError(
            f"{where}.input.start_coordinate", "left_click_drag needs a start_coordinate"
        )


def _check_hashes(
    step: ToolUseBlockParam,
    where: str,
    config: VisualValidationConfig | None,
    anchor: tuple[int, int] | None,
    computer: bool,
) -> None:
    region, detail = step.visual_representation, step.visual_detail
    if region is None:
        if detail is not None:
            raise _ProblemError(f"{where}.visual_detail", "a detail hash without a main hash")
        if step.visual_weak is not None:
            raise _ProblemError(f"{where}.visual_weak", "weak bits without a main hash")
        if step.visual_other_density is not None:
            raise _ProblemError(
                f"{where}.visual_other_density", "a hash for other densities without a main hash"
            )
        return
    if config is None:
        raise _ProblemError(
            f"{where}.visual_representation",
            "the step carries a hash but metadata.visual_validation is missing, so it could "
            "not be checked",
        )
    expected = hash_hex_length(config.hash_size)
    if not _is_hash(region, config.hash_size):
        raise _ProblemError(
            f"{where}.visual_representation",
            f"must be {expected} hex digits (a {config.hash_size}x{config.hash_size} hash), "
            f"got {region[:80]!r}",
        )
    if detail is not None:
        if config.detail is None:
            raise _ProblemError(
                f"{where}.visual_detail",
                "a detail hash, but metadata.visual_validation.detail is missing",
            )
        size = config.detail.hash_size
        if not _is_hash(detail, size):
            raise _ProblemError(
                f"{where}.visual_detail",
                f"must be {hash_hex_length(size)} hex digits (a {size}x{size} hash), "
                f"got {detail[:80]!r}",
            )
    elif config.detail is not None and anchor is not None and computer:
        raise _ProblemError(
            f"{where}.visual_detail",
            "missing, though the file's validation has a detail hash: the check would be skipped",
        )
    if step.visual_weak is not None:
        _check_weak(step.visual_weak, f"{where}.visual_weak", config, detail is not None)
    if step.visual_other_density is not None:
        _check_other_density(
            step.visual_other_density, f"{where}.visual_other_density", config, detail is not None
        )


def _check_other_density(
    value: str, where: str, config: VisualValidationConfig, has_detail: bool
) -> None:
    other = config.other_density
    if other is None:
        raise _ProblemError(
            where,
            "a hash for other densities, but metadata.visual_validation.other_density is missing",
        )
    if not has_detail:
        raise _ProblemError(where, "a hash for other densities without a detail hash")
    hashed, separator, weak = value.partition(";")
    size = other.hash_size
    expected = f"'<hash hex>;<weak hex>', each {hash_hex_length(size)} hex digits"
    if not separator or not _is_hash(hashed, size) or (weak and not _is_hash(weak, size)):
        raise _ProblemError(where, f"must be {expected}, got {value[:80]!r}")
    if weak and (other.noise_floor <= 0 or config.method != "phash"):
        raise _ProblemError(where, "weak bits, but the hash for other densities has no noise floor")


def _check_weak(weak: str, where: str, config: VisualValidationConfig, has_detail: bool) -> None:
    if not config.has_noise_floor:
        raise _ProblemError(where, "weak bits, but the file's check has no noise floor")
    main, separator, detail = weak.partition(";")
    sizes = [(main, config.hash_size, "main")]
    if detail:
        if not has_detail or config.detail is None:
            raise _ProblemError(where, "weak bits of a detail hash the step does not have")
        sizes.append((detail, config.detail.hash_size, "detail"))
    for part, size, name in sizes:
        if not separator or not _is_hash(part, size):
            raise _ProblemError(
                where,
                f"must be '<main hex>;<detail hex>', the {name} part {hash_hex_length(size)} hex "
                f"digits (a {size}x{size} hash), got {weak[:80]!r}",
            )


def _check_step(
    step: ToolUseBlockParam,
    where: str,
    anchor: tuple[int, int] | None,
    config: VisualValidationConfig | None,
    size: tuple[int, int],
) -> None:
    if not step.id:
        raise _ProblemError(f"{where}.id", "must not be empty")
    if step.toolset_name is not None and step.toolset_name != COMPUTER_TOOL_NAME:
        raise _ProblemError(f"{where}.toolset_name", f"must be {COMPUTER_TOOL_NAME!r} or null")
    computer = COMPUTER_TOOL_NAME in (step.toolset_name, step.name)
    if computer:
        action = parse_action(step)
        field = f"{where}.name" if step.toolset_name else f"{where}.input.action"
        if action is None:
            raise _ProblemError(field, "the computer tool needs an action")
        if action.name not in KNOWN_ACTIONS:
            close = difflib.get_close_matches(action.name, sorted(KNOWN_ACTIONS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise _ProblemError(field, f"unknown computer action {action.name[:80]!r}{hint}")
        _check_computer_input(step, action.name, where, size)
    else:
        if not TOOL_NAME.match(step.name):
            raise _ProblemError(f"{where}.name", f"{step.name[:80]!r} is not a tool name")
        if _has_placeholder(step.input):
            raise _ProblemError(f"{where}.input", "a placeholder outside typed text")
    _check_hashes(step, where, config, anchor, computer)


def _has_placeholder(value: Any) -> bool:
    if isinstance(value, str):
        return PLACEHOLDER.search(value) is not None
    if isinstance(value, dict):
        return any(_has_placeholder(k) or _has_placeholder(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_placeholder(item) for item in value)
    return False


def _check_parameters(cache_file: CacheFile, steps: Sequence[ToolUseBlockParam]) -> None:
    if len(cache_file.cache_parameters) > limits.MAX_PARAMETERS:
        raise _ProblemError(
            "cache_parameters",
            f"{len(cache_file.cache_parameters)} parameters; the limit is {limits.MAX_PARAMETERS}",
            limit=True,
        )
    for name in cache_file.cache_parameters:
        if not PARAMETER_NAME.match(name):
            raise _ProblemError(
                f"cache_parameters.{name[:80]}", "a parameter name must be an identifier"
            )
    kinds: dict[str, bool] = {}
    texts: list[tuple[str, Any]] = [("metadata.goal", cache_file.metadata.goal)]
    texts += [(f"trajectory[{i}].input.text", s.input.get("text")) for i, s in enumerate(steps)]
    for field, text in texts:
        if not isinstance(text, str):
            continue
        for match in PLACEHOLDER.finditer(text):
            secret, name = bool(match.group(1)), match.group(2)
            if kinds.setdefault(name, secret) != secret:
                raise _ProblemError(field, f"parameter {name!r} is used both as a secret and not")


def check_cache_file(cache_file: CacheFile, name: str) -> None:
    """Check a parsed file as a whole; raise the first problem found.

    Raises:
        CacheFileCorruptError: a step or setting could not be replayed or checked as written.
        CacheFileLimitError: a documented limit is exceeded.
    """
    try:
        _check_way(cache_file)
        for key in cache_file.profiles:
            try:
                _check_way(cache_file.for_profile(key))
            except _ProblemError as problem:
                problem.field = f"profiles[{key!r}].{problem.field.removeprefix('metadata.')}"
                raise
    except _ProblemError as problem:
        error = CacheFileLimitError if problem.limit else CacheFileCorruptError
        match = re.match(r"trajectory\[(\d+)\]", problem.field)
        raise error(
            name,
            f"{problem.field}: {problem.detail}",
            field=problem.field,
            step=int(match.group(1)) if match else None,
        ) from None


def _check_way(cache_file: CacheFile) -> None:
    """Check one way through the file: its trajectory or a learned profile's (as seen by a
    replay on that profile, :meth:`~askcache.cachefile.format.CacheFile.for_profile`)."""
    meta = cache_file.metadata
    space = meta.coordinate_space
    size = (
        (space.width, space.height)
        if space is not None
        else (limits.MAX_SCREEN_SIDE, limits.MAX_SCREEN_SIDE)
    )
    steps = cache_file.trajectory
    if space is not None and space.width * space.height > limits.MAX_SCREEN_PIXELS:
        raise _ProblemError(
            "metadata.coordinate_space",
            f"{space} is more than {limits.MAX_SCREEN_PIXELS:,} pixels",
            limit=True,
        )
    if len(steps) > limits.MAX_STEPS:
        raise _ProblemError(
            "trajectory", f"{len(steps)} steps; the limit is {limits.MAX_STEPS}", limit=True
        )
    if meta.visual_validation is not None:
        _check_config(meta.visual_validation)
    for index, (step, anchor) in enumerate(zip(steps, action_anchors(steps), strict=True)):
        _check_step(step, f"trajectory[{index}]", anchor, meta.visual_validation, size)
    _check_parameters(cache_file, steps)
    _check_screen_state(cache_file)


def _check_screen_state(cache_file: CacheFile) -> None:
    """Effects and the end state must fit the thumbnails of the recorded screen."""
    meta = cache_file.metadata
    config, space = meta.screen_state, meta.coordinate_space
    stored = [
        i
        for i, s in enumerate(cache_file.trajectory)
        if s.effect and (s.effect.tiles or s.effect.elsewhere)
    ]
    screens = [name for name in ("start_state", "end_state") if getattr(meta, name) is not None]
    if config is None:
        if stored or screens:
            field = f"trajectory[{stored[0]}].effect" if stored else f"metadata.{screens[0]}"
            raise _ProblemError(field, "stored without metadata.screen_state: cannot be checked")
        return
    if space is None:
        if stored or screens:
            raise _ProblemError("metadata.coordinate_space", "needed by the effects: missing")
        return
    width = -(-space.width // config.block)
    height = -(-space.height // config.block)
    tiles = (-(-width // config.tile)) * (-(-height // config.tile))
    per_tile = config.tile * config.tile
    for index in stored:
        effect = cache_file.trajectory[index].effect
        assert effect is not None
        where = f"trajectory[{index}].effect"
        if sorted(set(effect.tiles)) != effect.tiles or not all(
            0 <= t < tiles for t in effect.tiles
        ):
            raise _ProblemError(f"{where}.tiles", f"must be distinct, ascending, below {tiles}")
        for part in ("before", "after"):
            text = getattr(effect, part)
            if len(text) != 2 * per_tile * len(effect.tiles) or not _is_hex(text):
                raise _ProblemError(
                    f"{where}.{part}",
                    f"must be {2 * per_tile * len(effect.tiles)} hex digits "
                    f"({len(effect.tiles)} tiles of {per_tile} values)",
                )
        for part in ("parameter_before", "parameter_after"):
            if not set(getattr(effect, part)) <= set(effect.tiles):
                raise _ProblemError(f"{where}.{part}", "names tiles the effect does not have")
    for index in stored:
        effect = cache_file.trajectory[index].effect
        assert effect is not None
        _check_elsewhere(effect.elsewhere, f"trajectory[{index}].effect", space)
    if meta.start_state is not None:
        _check_thumbnail(meta.start_state, "metadata.start_state", (width, height), config)
        varying = meta.start_state.varying
        if sorted(set(varying)) != varying or not all(0 <= t < tiles for t in varying):
            raise _ProblemError(
                "metadata.start_state.varying", f"must be distinct, ascending, below {tiles}"
            )
    end = meta.end_state
    if end is not None:
        _check_thumbnail(end, "metadata.end_state", (width, height), config)
        for part in ("volatile", "parameter_tiles"):
            if not all(0 <= t < tiles for t in getattr(end, part)):
                raise _ProblemError(f"metadata.end_state.{part}", f"tiles must be below {tiles}")


def _check_thumbnail(
    state: ScreenThumbnail, field: str, size: tuple[int, int], config: ScreenStateConfig
) -> None:
    """A stored screen must be the recorded screen's thumbnail, in base64."""
    width, height = size
    if (state.width, state.height) != (width, height):
        raise _ProblemError(
            field,
            f"is {state.width}x{state.height}; the recorded screen's thumbnail is {width}x{height}",
        )
    if len(state.data) != 4 * -(-width * height // 3):
        raise _ProblemError(f"{field}.data", f"must be base64 of {width * height} values")
    try:
        Thumbnail.from_end_state(state, config)
    except ValueError as exc:
        raise _ProblemError(f"{field}.data", str(exc)) from None


def _check_elsewhere(places: list[ChangeElsewhere], where: str, space: CoordinateSpace) -> None:
    """Places away from the point must lie on the recorded screen and hold full hashes."""
    digits = HASH_SIZE * HASH_SIZE // 4
    for position, place in enumerate(places):
        field = f"{where}.elsewhere[{position}]"
        left, top, right, bottom = place.box
        if not (0 <= left < right <= space.width and 0 <= top < bottom <= space.height):
            raise _ProblemError(
                f"{field}.box", f"must lie on the {space.width}x{space.height} recorded screen"
            )
        for part in ("before", "after"):
            text = getattr(place, part)
            if len(text) != digits or not _is_hex(text):
                raise _ProblemError(f"{field}.{part}", f"must be {digits} hex digits")


def _is_hex(text: str) -> bool:
    return all(char in "0123456789abcdef" for char in text)


class UncheckedStep(NamedTuple):
    """A click or keyboard step that would run without a check."""

    step: int
    """Its index in the trajectory."""
    action: str
    """Its action."""
    why: str
    """Why it cannot be checked."""


def unchecked_steps(cache_file: CacheFile) -> list[UncheckedStep]:
    """The steps with an action in :data:`CHECKED_ACTIONS` that carry no usable check."""
    config = cache_file.metadata.visual_validation
    found = []
    for index, step in enumerate(cache_file.trajectory):
        action = parse_action(step)
        if action is None or action.name not in CHECKED_ACTIONS:
            continue
        if config is None:
            found.append(UncheckedStep(index, action.name, "the file records no visual validation"))
        elif step.visual_representation is None:
            found.append(UncheckedStep(index, action.name, "the step has no stored hash"))
    return found
