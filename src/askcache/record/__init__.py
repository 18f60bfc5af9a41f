"""Recording: a finished conversation becomes a cache file (:mod:`.recording`); masks learned
from repeat runs (:mod:`.mask_learning`).
"""
