"""A file written whole: :func:`write_whole`, the pages' (the reports' and the fleet page's)
one way to write, kept apart from the report's renderer so that writing the fleet page
imports nothing of the replay."""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path

__all__ = ["write_whole"]


def write_whole(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file beside it, renamed over it: a
    reader never sees it half written, and a failure leaves no temporary file behind."""
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        with temporary.open("xb") as file:  # the umask's permissions, as any new file
            file.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    return path
