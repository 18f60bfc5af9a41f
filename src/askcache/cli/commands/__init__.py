"""The ``askcache`` command's subcommands, one module each; :mod:`askcache.cli.app` wires them.

Exit codes (docs/cli.md):

==== =========================================================================================
0    success
1    the command ran and found a problem: ``lint`` errors, a ``parity`` FAIL, a demo that did
     not end as expected
2    ``parity`` only: the comparison itself could not be made (an ERROR verdict)
3    an error to fix before running again: a missing key, folder or file, an unreadable file,
     shared storage unreachable
64   usage: an unknown subcommand, option or bad argument value
70   an internal error (a bug: please report it with the ``--debug`` traceback)
130  interrupted (Ctrl-C)
141  the reader of the output went away (``askcache list | head -1``)
==== =========================================================================================
"""

from askcache.cli.commands.common import (
    EXIT_ERROR,
    EXIT_FINDINGS,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PIPE,
    EXIT_USAGE,
)

__all__ = [
    "EXIT_ERROR",
    "EXIT_FINDINGS",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_PIPE",
    "EXIT_USAGE",
]
