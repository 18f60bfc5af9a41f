"""The agent: :class:`~askcache.agent.act.Agent` wires recording, replay and healing around
the conversation (:mod:`.act`); :mod:`.run_record` writes the run ledger and heals after a
run.
"""

__all__: list[str] = []
