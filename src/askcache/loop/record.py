"""Record a run your own loop already made: its messages become a trajectory.

The message history is the source of truth, as for an ``Agent``'s recording
(:class:`~askcache.record.recording.CacheManager` reads the screenshots already in it): each
acting step gets the fingerprint of the screen before it, typed values given as parameters
become ``{{name}}``, and secrets are never written.
"""

from __future__ import annotations

from collections.abc import Sequence

from askcache.foundation.settings import CachingSettings
from askcache.loop.history import MessageLike, parse_messages
from askcache.loop.run import register_typing
from askcache.record.recording import CacheManager
from askcache.replay.executor import goal_of
from askcache.storage.cache_storage import CacheStorage
from askcache.storage.outbox import Outbox
from askcache.storage.remote import storage_for

__all__ = ["record_messages"]


def record_messages(
    messages: Sequence[MessageLike],
    *,
    name: str,
    settings: CachingSettings | None = None,
    storage: CacheStorage | None = None,
    model: str | None = None,
) -> str:
    """Write the run in ``messages`` (your loop's history, dicts in the Messages API's shape
    or :class:`~askcache.foundation.messages.MessageParam`, the first stating the task) as the
    trajectory ``name``; returns the name. A trajectory already stored under it is kept as
    the version before (``settings.keep_versions``). Each model message counts as one model
    call; the run's duration is not known, so none is stored.

    Args:
        settings: The writing settings (``writing_settings``: parameters, secrets, checks),
            the storage (``cache_dir``) and ``keep_versions``; default ``CachingSettings()``.
        storage: Where to write; default ``settings.cache_dir``.
        model: The model your loop called, stored with the recording.

    Raises:
        LoopUsageError: a message is not in the Messages API's shape (says which).
        CacheOverwriteRefusedError: ``name`` holds a trajectory and versions are off.
        CachePathError, CacheStorageError: the name or the place cannot be written.
        RecordingNotStoredError: the storage failed while writing it: the recording is kept
            in the outbox (``settings.outbox_dir``; ``askcache sync`` sends it), or, when
            that failed too, only on the error.
    """
    settings = settings or CachingSettings()
    history = parse_messages(messages)
    register_typing(
        (call for message in history for call in message.tool_uses),
        settings.writing_settings.redact_typed_text,
    )
    writing = settings.writing_settings.model_copy(update={"filename": name})
    storage = storage or storage_for(settings.cache_dir)
    recorder = CacheManager(
        storage,
        writing,
        model=model,
        keep_versions=settings.keep_versions,
        outbox=Outbox(settings.outbox_dir, storage.destination()),
    )
    recorder.start_recording(goal_of(history), timed=False)
    return recorder.finish_recording(history)
