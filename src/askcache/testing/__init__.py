"""Helpers to test agents offline: a local Messages API stand-in, a simulated screen, a
PostgreSQL server of its own (for the run ledger), and a private D-Bus session with the AT-SPI
accessibility bus (for the element anchors).

Nothing here talks to the internet: the stand-in serves the Messages API on 127.0.0.1 to a
real ``anthropic`` client, and the simulated form app renders real PNG screenshots.
"""

from askcache.testing._process import run_on_display
from askcache.testing.accessibility import AccessibilitySession
from askcache.testing.input_log import InputLog
from askcache.testing.messages_api import (
    MessagesApiStandIn,
    Reply,
    RequestRejectedError,
    ScriptEntry,
    estimate_tokens,
    text_reply,
    tool_use_reply,
    validate_request,
)
from askcache.testing.postgres_server import PostgresServer
from askcache.testing.simulated import (
    FormFillingScript,
    FormView,
    Layout,
    SimulatedFormApp,
    Widget,
)
from askcache.testing.tk_form import TkFormApp
from askcache.testing.windowed import WindowedFormApp
from askcache.testing.xvfb import VirtualDisplay

__all__ = [
    "AccessibilitySession",
    "FormFillingScript",
    "FormView",
    "InputLog",
    "Layout",
    "MessagesApiStandIn",
    "PostgresServer",
    "Reply",
    "RequestRejectedError",
    "ScriptEntry",
    "SimulatedFormApp",
    "TkFormApp",
    "VirtualDisplay",
    "Widget",
    "WindowedFormApp",
    "estimate_tokens",
    "run_on_display",
    "text_reply",
    "tool_use_reply",
    "validate_request",
]
