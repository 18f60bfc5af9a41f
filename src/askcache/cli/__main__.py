"""``python -m askcache.cli``: the ``askcache`` command."""

import sys

from askcache.cli.app import main

sys.exit(main())
