"""The checks a replay makes before its first action: can this file run, here, now?

The loader already guarantees a well-formed file
(:func:`askcache.cachefile.parse.parse_cache_file`).
:func:`check_replayable` adds what depends on the run: the tools it offers, the caller's
settings, the signing keys in the environment and the parameter values given. The replay
calls it when it is activated; a refused file raises before anything is executed.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping

from askcache.cachefile.checks import unchecked_steps
from askcache.cachefile.format import CacheFile
from askcache.cachefile.signing import check_signature
from askcache.foundation.actions import COMPUTER_TOOL_NAME
from askcache.foundation.errors import CacheFileRefusedError
from askcache.foundation.messages import ToolUseBlockParam
from askcache.foundation.parameters import parameter_value_problem, secret_placeholders_in
from askcache.foundation.redaction import register_secrets
from askcache.foundation.settings import CacheExecutionSettings

__all__ = ["DEFAULT_OFFERED_TOOLS", "check_replayable"]

DEFAULT_OFFERED_TOOLS = frozenset({COMPUTER_TOOL_NAME})
"""What a replay may call when the caller does not say: the computer tool's actions."""


def _steps(cache_file: CacheFile) -> Iterator[tuple[int, str, str, ToolUseBlockParam]]:
    """Every step a replay of ``cache_file`` may run: the trajectory's and its variants'
    (the trajectory step index, how a message names it, its field path, the step)."""
    for index, step in enumerate(cache_file.trajectory):
        yield index, f"step {index}", f"trajectory[{index}]", step
    for at, variants in sorted(cache_file.variants.items()):
        for number, variant in enumerate(variants):
            for position, step in enumerate(variant.steps):
                yield (
                    at,
                    f"step {position} of variant {number} at step {at}",
                    f"variants[{at}][{number}].steps[{position}]",
                    step,
                )


def _check_tools(
    cache_file: CacheFile,
    name: str,
    offered: Collection[str],
    settings: CacheExecutionSettings,
    key: str | None = None,
) -> None:
    where = _where(key)
    allowed_others = set(settings.replay_tools) & set(offered)
    for index, label, field, step in _steps(cache_file):
        computer = COMPUTER_TOOL_NAME in (step.toolset_name, step.name)
        if computer:
            if COMPUTER_TOOL_NAME not in offered:
                raise CacheFileRefusedError(
                    name,
                    f"{where}{label} uses the computer tool, which this run does not offer",
                    field=f"{_prefix(key)}{field}.name",
                    step=index,
                )
            continue
        if step.name not in allowed_others:
            why = (
                "add it to CacheExecutionSettings.replay_tools to allow it"
                if step.name in offered
                else "this run does not offer it"
            )
            raise CacheFileRefusedError(
                name,
                f"{where}{label} calls the tool {step.name!r}; a replay runs only the "
                f"computer tool unless told otherwise ({why})",
                field=f"{_prefix(key)}{field}.name",
                step=index,
            )


def _ways(cache_file: CacheFile) -> list[tuple[str | None, CacheFile]]:
    """The recorded trajectory (key ``None``) and each learned profile's (its key)."""
    return [
        (None, cache_file),
        *((key, cache_file.for_profile(key)) for key in cache_file.profiles),
    ]


def _where(key: str | None) -> str:
    """How a message names a step's trajectory (nothing for the recorded one)."""
    return f"profile {key}: " if key is not None else ""


def _prefix(key: str | None) -> str:
    """The field path of a learned profile's trajectory (nothing for the recorded one)."""
    return f"profiles[{key!r}]." if key is not None else ""


def check_replayable(
    cache_file: CacheFile,
    name: str,
    *,
    offered_tools: Collection[str] | None = None,
    settings: CacheExecutionSettings | None = None,
    parameter_values: Mapping[str, str] | None = None,
) -> None:
    """Refuse ``cache_file`` unless every step may run in this replay, checked as recorded.

    * every step (of the recorded trajectory, of each learned screen profile's, and of
      their variants) calls a tool this run offers and allows: the computer tool's actions, and
      others only when listed in ``settings.replay_tools``;
    * no step stores a hash the file cannot check (no validation set-up); with
      ``settings.unchecked_steps="refuse"``, every acting step can be checked (otherwise
      the replay hands back before such a step, or runs it with ``"run"``);
    * the signature is valid when one is required (``settings.require_signature``, by
      default whenever a signing key is set);
    * parameter values are plain text (no control characters, at most 4096 characters).
      The values of secret parameters are registered for redaction.

    Raises:
        CacheFileRefusedError: the file may not run here; names the step and the field.
        CacheSignatureError: a required signature is missing, unknown or wrong.
        InvalidSettingsError: the signing keys in the environment are malformed.
    """
    settings = settings or CacheExecutionSettings()
    offered = DEFAULT_OFFERED_TOOLS if offered_tools is None else offered_tools
    values = dict(parameter_values or {})
    for key, value in values.items():
        problem = parameter_value_problem(value)
        if problem:
            raise CacheFileRefusedError(
                name, f"the value of parameter {key!r} {problem}", field=f"parameter_values.{key}"
            )
    secrets = secret_placeholders_in(
        [cache_file.metadata.goal, *(step.input for step in cache_file.trajectory)]
    )
    register_secrets({key: values[key] for key in secrets if key in values})
    check_signature(cache_file, name, required=settings.require_signature)
    for profile, way in _ways(cache_file):
        _check_tools(way, name, offered, settings, profile)
        if not settings.skip_visual_validation:
            _check_checkable(way, name, settings, profile)


def _check_checkable(
    cache_file: CacheFile, name: str, settings: CacheExecutionSettings, key: str | None
) -> None:
    where = _where(key)
    config = cache_file.metadata.visual_validation
    hashed = [i for i, step in enumerate(cache_file.trajectory) if step.visual_representation]
    if config is None and hashed:
        raise CacheFileRefusedError(
            name,
            f"{where}step {hashed[0]} stores a hash but the file has no visual validation "
            "set-up (metadata.visual_validation), so it cannot be checked",
            field="metadata.visual_validation",
            step=hashed[0],
        )
    if settings.unchecked_steps != "refuse":
        return  # "hand_back": the replay stops before such a step; "run": it runs unchecked
    unchecked = unchecked_steps(cache_file)
    if unchecked:
        first = unchecked[0]
        more = f" (and {len(unchecked) - 1} more)" if len(unchecked) > 1 else ""
        raise CacheFileRefusedError(
            name,
            f"{where}step {first.step} ({first.action}) cannot be checked before it runs: "
            f"{first.why}{more}. Replay it with CacheExecutionSettings(unchecked_steps="
            "'hand_back') to stop before it, or 'run' to run it unchecked",
            field=f"{_prefix(key)}trajectory[{first.step}].visual_representation",
            step=first.step,
        )
