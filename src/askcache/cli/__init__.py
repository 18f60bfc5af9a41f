"""The ``askcache`` command (:mod:`.app`), one module per subcommand (:mod:`.commands`), the
HTML reports (:mod:`.report`), the lint rules (:mod:`.lint`), the price table (:mod:`.prices`)
and the demo (:mod:`.demo`).
"""

__all__: list[str] = []
