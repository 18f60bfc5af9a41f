"""Tools: the base interface, the computer tool, and the caching tools.

The desktop backend lives in :mod:`askcache.tools.desktop` (needs ``askcache[desktop]``).
"""

from askcache.tools.base import Tool, ToolCollection, ToolOutput
from askcache.tools.caching import ExecuteCachedTrajectory, ListCachedTrajectories
from askcache.tools.computer import ComputerBackend, ComputerTool, ToolVersion, encode_png

__all__ = [
    "ComputerBackend",
    "ComputerTool",
    "ExecuteCachedTrajectory",
    "ListCachedTrajectories",
    "Tool",
    "ToolCollection",
    "ToolOutput",
    "ToolVersion",
    "encode_png",
]
