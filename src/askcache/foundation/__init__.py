"""The foundation: what every other part of askcache stands on, with nothing of
askcache below it. Its floors, lowest first (the ``foundation`` import contract keeps them so):
:mod:`.limits` and :mod:`.geometry`, :mod:`.parameters`, :mod:`.redaction`, :mod:`.errors`,
:mod:`.screen` (measures of pixels), :mod:`.messages`, :mod:`.actions` and :mod:`.scaling`,
:mod:`.settings`.
"""

__all__: list[str] = []
