"""Tools: the base interface and the computer tool (the caching tools live beside the replay,
in :mod:`askcache.replay.tools`).

The desktop backend lives in :mod:`askcache.tools.desktop` (needs ``askcache[desktop]``).
"""

from askcache.tools.computer import ComputerBackend, ComputerTool, ToolVersion, encode_png
from askcache.tools.tool import Tool, ToolCollection, ToolOutput

__all__ = [
    "ComputerBackend",
    "ComputerTool",
    "Tool",
    "ToolCollection",
    "ToolOutput",
    "ToolVersion",
    "encode_png",
]
