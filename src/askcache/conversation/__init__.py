"""The conversation: the loop that runs speakers and tools (:mod:`.loop`) and the model speaker
(:mod:`.speakers`). It knows nothing of caching.
"""

from askcache import _moved

__all__: list[str] = []

__getattr__ = _moved.forward(__name__)
