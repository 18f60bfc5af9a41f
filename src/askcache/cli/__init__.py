"""The ``askcache`` command (:mod:`.app`), one module per subcommand (:mod:`.commands`), the
HTML reports (:mod:`.html_report`), the lint rules (:mod:`.lint_rules`), the price table
(:mod:`.prices`) and the demo (:mod:`.demo`).
"""

__all__: list[str] = []
