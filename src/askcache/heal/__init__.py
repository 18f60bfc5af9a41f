"""Healing: a verified hand-back becomes the trajectory (:mod:`.trajectory`), written as a version
or a proposal (:mod:`askcache.storage.versions`).
"""

from askcache import _moved

__all__: list[str] = []

__getattr__ = _moved.forward(__name__)
