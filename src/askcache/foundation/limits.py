"""The documented limits of a cache file: what a file may contain before it is refused.

A cache file is input: users share it, commit it, pull it from shared storage. These limits
keep a careless or hostile file from exhausting memory or time, and every one of them is
checked when the file is loaded, before any action runs (docs/cache-format.md lists them).
Breaking one raises :class:`~askcache.foundation.errors.CacheFileLimitError` naming the field.

One rule holds wherever a threshold is given (the writing settings, a file, a replay's
override, the model's request, ``askcache lint``): :func:`threshold_problem`.
"""

from __future__ import annotations

__all__ = [
    "MAX_COUNT",
    "MAX_DETAIL_NOISE_FLOOR",
    "MAX_FILE_BYTES",
    "MAX_HASH_SIZE",
    "MAX_IMAGE_PIXELS",
    "MAX_LIST_ITEMS",
    "MAX_NESTING",
    "MAX_NOISE_FLOOR",
    "MAX_OBJECT_KEYS",
    "MAX_PARAMETERS",
    "MAX_PARAMETER_CHARS",
    "MAX_REGION_SIZE",
    "MAX_REPEAT",
    "MAX_SCREEN_PIXELS",
    "MAX_SCREEN_SIDE",
    "MAX_STEPS",
    "MAX_STRING_CHARS",
    "MAX_TOOL_NAME_CHARS",
    "MAX_WAIT_SECONDS",
    "MIN_DETAIL_REGION_SIZE",
    "MIN_HASH_SIZE",
    "MIN_REGION_SIZE",
    "threshold_problem",
]

MAX_FILE_BYTES = 8 * 1024 * 1024
"""Largest cache file read, in bytes (8 MiB; a recorded step takes about 400 bytes)."""
MAX_NESTING = 16
"""Deepest nesting of JSON arrays and objects (a valid file needs 5)."""
MAX_STEPS = 5_000
"""Most steps in a trajectory."""
MAX_LIST_ITEMS = MAX_STEPS
"""Most items in any JSON array."""
MAX_OBJECT_KEYS = 64
"""Most keys in any JSON object."""
MAX_STRING_CHARS = 262_144
"""Longest string anywhere in the file (goal, typed text, failure reasons; the end state's
thumbnail of a 4K screen is about 173,000 characters of base64)."""
MAX_COUNT = 2**53 - 1
"""Largest whole number anywhere in the file (counters, token counts)."""
MAX_SCREEN_SIDE = 8192
"""Largest width or height of the recorded screen, in pixels."""
MAX_SCREEN_PIXELS = 8192 * 4608
"""Largest recorded screen area (an 8K screen is 7680x4320): a replay may resize the
current screenshot to it."""
MIN_REGION_SIZE = 16
"""Smallest side of the main hashed region, in pixels (as the writing settings allow)."""
MIN_DETAIL_REGION_SIZE = 8
"""Smallest side of the detail region, in pixels (as the writing settings allow)."""
MAX_REGION_SIZE = 4096
"""Largest side of a hashed region, in pixels."""
MAX_NOISE_FLOOR = 400.0
"""Largest noise floor of the main hash (``visual_validation.noise_floor``; the default is
100). On the benchmark's screens half of a 100 px region's pHash
coefficients lie farther than 1,200 from their median, so even this floor leaves most bits
counted."""
MAX_DETAIL_NOISE_FLOOR = 4000.0
"""Largest noise floor of the detail hash (``visual_validation.detail.noise_floor``; the
default is 250, the third pass's larger opt-in choice 3,000). On the benchmark's screens
half of a 48 px region's coefficients lie farther than 4,200 from their median, so even this
floor leaves about half the bits counted."""
MIN_HASH_SIZE = 4
"""Smallest hash side (``hash_size**2`` bits)."""
MAX_HASH_SIZE = 32
"""Largest hash side (1024 bits)."""
MAX_WAIT_SECONDS = 60.0
"""Longest ``wait`` or ``hold_key`` duration a step may ask for, in seconds."""
MAX_REPEAT = 100
"""Largest ``scroll_amount`` or key ``repeat`` of a step."""
MAX_TOOL_NAME_CHARS = 64
"""Longest tool name a step may call (the Messages API's own limit)."""
MAX_PARAMETERS = 64
"""Most cache parameters in a file."""
MAX_PARAMETER_CHARS = 4096
"""Longest parameter value, at recording and at replay."""
MAX_IMAGE_PIXELS = MAX_SCREEN_PIXELS
"""Largest image askcache decodes from outside: a screenshot in a tool result or a message
history (askcache's own loop and the user's), an image file given to the ``askcache``
command. Its header is read first; a larger image is refused, naming it, before a pixel is
decoded (:func:`askcache.foundation.screen.png.open_image`)."""


def threshold_problem(threshold: int, hash_size: int) -> str | None:
    """Why ``threshold`` cannot be the threshold of a ``hash_size`` x ``hash_size`` hash, in
    words that follow the field's name (``64 would accept any screen: a 8x8 hash has 64
    bits``); ``None`` when it can. A Hamming distance never exceeds the hash's bit count, so a
    threshold at or above it accepts any screen. This is the one statement of that rule: the
    writing settings, a file's checks (:mod:`askcache.cachefile.checks`), ``askcache lint``,
    the blind spots a replay reports and the replay's check policy
    (:class:`askcache.replay.check_policy.CheckPolicy`) all call it."""
    bits = hash_size**2
    if threshold >= bits:
        return (
            f"{threshold} would accept any screen: a {hash_size}x{hash_size} hash has {bits} bits"
        )
    return None
