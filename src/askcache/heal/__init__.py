"""Healing: a verified hand-back becomes the trajectory (:mod:`.trajectory`), written as a version
or a proposal (:mod:`askcache.storage.versions`).
"""

__all__: list[str] = []
