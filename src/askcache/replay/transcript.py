"""What the model's transcript holds of a replayed step: a secret's placeholder, never its value.

A replay fills a trajectory's ``{{secret:name}}`` placeholders with the values its caller gave
(``parameter_values``) and types them. The screen must get the value; the conversation's
history must not, because after a hand-back every later request to the Messages API carries
the whole history, and the model never needed the secret. :func:`shown_call` gives the call
as the history keeps it: a typed text with each secret value put back as its placeholder
(:func:`~askcache.foundation.parameters.parameterize`, longest value first; a value inside other
text is replaced too, fail closed). The executor puts that call in the history and asks whoever runs
tools to run the call with the value instead (``SpeakerResult.run_as``): the
:class:`~askcache.conversation.turns.Conversation` of an ``Agent`` and the user's own loop
(:mod:`askcache.loop`) both take the replay's turns from the executor, so both get it.

A heal rebuilt from that history stores the placeholder again, as the file had it.
"""

from __future__ import annotations

from collections.abc import Mapping

from askcache.cachefile.format import CacheFile
from askcache.foundation.messages import ToolUseBlockParam
from askcache.foundation.parameters import SECRET_PREFIX, parameterize, secret_placeholders_in

__all__ = ["secret_values", "shown_call"]


def secret_values(cache_file: CacheFile, values: Mapping[str, str]) -> dict[str, str]:
    """The values of ``cache_file``'s secret parameters among ``values``: those its steps,
    variants or goal write ``{{secret:name}}``, or its ``cache_parameters`` describe as
    secret."""
    steps = [
        *cache_file.trajectory,
        *(s for vs in cache_file.variants.values() for v in vs for s in v.steps),
    ]
    names = secret_placeholders_in([cache_file.metadata.goal, *(s.input for s in steps)]) | {
        name for name, text in cache_file.cache_parameters.items() if text.startswith(SECRET_PREFIX)
    }
    return {name: value for name, value in values.items() if name in names and value}


def shown_call(call: ToolUseBlockParam, secrets: Mapping[str, str]) -> ToolUseBlockParam:
    """``call`` as the history keeps it: its typed ``text`` with every secret value of
    ``secrets`` as its ``{{secret:name}}`` placeholder; ``call`` itself when it types none."""
    text = call.input.get("text")
    if not secrets or not isinstance(text, str):
        return call
    shown = parameterize(text, {}, secrets)
    if shown == text:
        return call
    return call.model_copy(update={"input": {**call.input, "text": shown}})
