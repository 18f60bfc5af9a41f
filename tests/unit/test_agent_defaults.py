"""Defaults that age: the model name must not be one the SDK calls deprecated."""

from __future__ import annotations

from anthropic.resources.messages.messages import DEPRECATED_MODELS

from askcache.agent.act import DEFAULT_MODEL


def test_default_model_is_not_deprecated() -> None:
    assert DEFAULT_MODEL not in DEPRECATED_MODELS
