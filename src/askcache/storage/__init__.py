"""Where cache files and runs live: the storage interface and a folder (:mod:`.cache_storage`),
fsspec and S3 (:mod:`.remote`), a trajectory's versions (:mod:`.versions`) and the lock a change of
them holds (:mod:`.lock`), the run ledger (:mod:`.ledger`).
"""

__all__: list[str] = []
