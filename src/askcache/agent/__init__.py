"""The agent: :class:`~askcache.agent.act.Agent` wires recording, replay and healing around
the conversation (:mod:`.act`); :mod:`.run_record` writes the run ledger and heals after a
run.
"""

from askcache import _moved

__all__: list[str] = []

__getattr__ = _moved.forward(__name__)
