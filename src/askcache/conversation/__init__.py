"""The conversation: the loop that runs speakers and tools (:mod:`.turns`) and the model speaker
(:mod:`.speakers`). It knows nothing of caching.
"""

__all__: list[str] = []
