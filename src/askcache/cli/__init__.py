"""The ``askcache`` command (:mod:`.app`), one module per subcommand (:mod:`.commands`), the
HTML reports (:mod:`.report`), the lint rules (:mod:`.lint`), the price table (:mod:`.prices`)
and the demo (:mod:`.demo`).
"""

from askcache import _moved

__all__: list[str] = []

__getattr__ = _moved.forward(__name__)
