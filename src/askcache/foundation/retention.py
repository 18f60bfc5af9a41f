"""How long the run ledger keeps raw entries by default: :data:`DEFAULT_LEDGER_RETENTION_DAYS`
(a module of its own, re-exported by :mod:`askcache.foundation.settings`, so that the ledger's
engines and the commands that read the ledger alone need not import the settings' models)."""

from __future__ import annotations

__all__ = ["DEFAULT_LEDGER_RETENTION_DAYS"]

DEFAULT_LEDGER_RETENTION_DAYS = 90
"""Days raw run-ledger entries are kept (summaries are kept for ever)."""
