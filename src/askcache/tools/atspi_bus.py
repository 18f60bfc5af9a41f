"""The AT-SPI accessibility bus, reached over D-Bus with a deadline on every exchange.

Linux applications publish their accessibility trees on a bus of their own, the AT-SPI bus,
whose address the session bus gives (``org.a11y.Bus.GetAddress``). :class:`AtspiBus` finds it
and sends method calls there: ``jeepney`` (pure Python, an optional dependency imported at the
first connection: ``pip install 'askcache[anchors]'``) connects and authenticates, and the
messages are written and read by :mod:`askcache.tools.atspi_wire` (ten times faster than a
general library's codec). Written for this use only:

- every exchange has a deadline, the connection and authentication too (``jeepney``'s own
  blocking connection waits without one for the bus's ``Hello``): a slow or stopped
  application costs at most the deadline, then :class:`AtspiTimeoutError`;
- several calls go out at once and their replies are matched by serial as they come
  (:meth:`AtspiBus.exchange`): a node's role, name, states and extents cost one round trip,
  not four; calls to several applications are all sent before any reply is read, so they
  answer at the same time; a reply that comes after its deadline is dropped when it arrives;
- an application that offers a connection of its own (GTK's and Chromium's bridges) is
  asked there, not through the bus daemon: one process fewer on every round trip;
- a connection that broke (the bus or the session went away) is closed and opened again at
  the next exchange; until then every exchange raises :class:`AtspiUnavailableError`.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import selectors
import socket
import threading
import time
from collections.abc import Sequence
from typing import Any, NamedTuple

from askcache.foundation.errors import AskCacheError, MissingDependencyError
from askcache.tools.atspi_wire import ERROR, Message, decode, encode_call, message_length

__all__ = [
    "NULL_PATH",
    "AtspiBus",
    "AtspiCallError",
    "AtspiError",
    "AtspiTimeoutError",
    "AtspiUnavailableError",
    "Call",
    "Ref",
    "session_bus_address",
]

Ref = tuple[str, str]
"""An accessible object: the bus name of its application and its object path."""

NULL_PATH = "/org/a11y/atspi/null"
"""The path AT-SPI answers with for "no object"."""

_A11Y_BUS: Ref = ("org.a11y.Bus", "/org/a11y/bus")
_DBUS: Ref = ("org.freedesktop.DBus", "/org/freedesktop/DBus")


class AtspiError(AskCacheError):
    """The accessibility bus gave no answer."""


class AtspiUnavailableError(AtspiError, ConnectionError):
    """There is no accessibility bus to ask (no session bus, no AT-SPI bus on it, or the
    connection broke)."""


class AtspiTimeoutError(AtspiError, TimeoutError):
    """An answer did not come before its deadline."""


class AtspiCallError(AtspiError):
    """The bus or an application answered a call with an error (the object is gone, the
    interface is not implemented).

    Attributes:
        name: The D-Bus error name (``org.freedesktop.DBus.Error.UnknownMethod``).
    """

    def __init__(self, name: str, message: str) -> None:
        self.name = name
        super().__init__(f"{name}: {message}" if message else name)


class Call(NamedTuple):
    """One D-Bus method call: to ``ref``'s object, ``interface.method(args)`` (a named tuple:
    a query makes and looks up a hundred or more, four times faster than a frozen
    dataclass's)."""

    ref: Ref
    interface: str
    method: str
    signature: str | None = None
    args: tuple[Any, ...] = ()


def session_bus_address(environ: dict[str, str] | None = None) -> str | None:
    """The session bus's address from the environment (``DBUS_SESSION_BUS_ADDRESS``), else
    the systemd user bus's socket when it exists; ``None``: no session bus known."""
    env = os.environ if environ is None else environ
    address = env.get("DBUS_SESSION_BUS_ADDRESS")
    if address:
        return address
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime and os.path.exists(os.path.join(runtime, "bus")):
        return f"unix:path={os.path.join(runtime, 'bus')}"
    return None


def _jeepney() -> Any:
    try:
        import jeepney.bus
        import jeepney.io.blocking
    except ImportError as exc:
        raise MissingDependencyError(
            "the accessibility tree (AT-SPI)", "jeepney", "pip install 'askcache[anchors]'"
        ) from exc
    return jeepney


class _Connection:
    """One authenticated D-Bus connection: calls out, replies matched by serial."""

    def __init__(self, address: str, deadline: float, *, hello: bool = True) -> None:
        jeepney = _jeepney()
        try:
            path = jeepney.bus.get_bus(address)
            self._sock: socket.socket = jeepney.io.blocking.prep_socket(
                path, timeout=_left(deadline)
            )
        except TimeoutError as exc:
            raise AtspiTimeoutError(f"the bus at {address!r} did not answer in time") from exc
        except (OSError, ValueError, RuntimeError) as exc:
            raise AtspiUnavailableError(f"cannot connect to the bus at {address!r}: {exc}") from exc
        self._buffer = bytearray()
        self._serials = itertools.count(1)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._sock, selectors.EVENT_READ)
        self.broken = False
        if not hello:
            return  # a peer: no bus daemon to greet
        try:
            (reply,) = self.exchange([Call(_DBUS, "org.freedesktop.DBus", "Hello")], deadline)
        except AtspiError:
            self.close()
            raise
        if isinstance(reply, AtspiError):
            self.close()
            raise AtspiUnavailableError(f"the bus at {address!r} refused us: {reply}")

    def exchange(
        self, calls: Sequence[Call], deadline: float
    ) -> list[tuple[Any, ...] | AtspiError]:
        """Send ``calls`` at once; their reply bodies (or errors) in their order."""
        return self.receive(self.send(calls, deadline), len(calls), deadline)

    def send(self, calls: Sequence[Call], deadline: float) -> dict[int, int]:
        """Send ``calls`` at once, not waiting for their replies (:meth:`receive` reads
        them); the serial of each, with its index in ``calls``."""
        waiting: dict[int, int] = {}
        out = bytearray()
        for index, call in enumerate(calls):
            serial = next(self._serials)
            out += encode_call(
                serial,
                destination=call.ref[0],
                path=call.ref[1],
                interface=call.interface,
                member=call.method,
                signature=call.signature or "",
                args=call.args,
            )
            waiting[serial] = index
        try:
            self._sock.settimeout(_left(deadline))
            self._sock.sendall(out)
        except TimeoutError as exc:
            self.broken = True  # a message may be half sent
            raise AtspiTimeoutError("the bus took no more messages in time") from exc
        except OSError as exc:
            self.broken = True
            raise AtspiUnavailableError(f"the bus went away: {exc}") from exc
        return waiting

    def receive(
        self, waiting: dict[int, int], count: int, deadline: float
    ) -> list[tuple[Any, ...] | AtspiError]:
        """The replies to the ``count`` calls sent as ``waiting`` (:meth:`send`), in their
        order; a call whose reply did not come by ``deadline`` is an
        :class:`AtspiTimeoutError` in the list."""
        results: list[tuple[Any, ...] | AtspiError] = [
            AtspiTimeoutError("no answer in time") for _ in range(count)
        ]
        waiting = dict(waiting)
        while waiting:
            message = self._next_message(deadline)
            index = waiting.pop(message.reply_serial or -1, -1)
            if index < 0:
                continue  # a signal, or the late reply to an exchange that gave up
            if message.kind == ERROR:
                text = message.body[0] if message.body and isinstance(message.body[0], str) else ""
                results[index] = AtspiCallError(message.error_name or "error", text)
            else:
                results[index] = message.body
        return results

    def _next_message(self, deadline: float) -> Message:
        while True:
            length = message_length(self._buffer)
            if length is not None and len(self._buffer) >= length:
                message = decode(memoryview(self._buffer)[:length])
                del self._buffer[:length]
                return message
            if not self._selector.select(_left(deadline)):
                raise AtspiTimeoutError("no answer in time")
            try:
                data = self._sock.recv(1 << 16)
            except OSError as exc:
                self.broken = True
                raise AtspiUnavailableError(f"the bus went away: {exc}") from exc
            if not data:
                self.broken = True
                raise AtspiUnavailableError("the bus closed the connection")
            self._buffer += data

    def close(self) -> None:
        self.broken = True
        self._selector.close()
        self._sock.close()


def _left(deadline: float) -> float:
    """Seconds until ``deadline`` (a small positive number once it passed: one last look)."""
    return max(0.0005, deadline - time.monotonic())


class AtspiBus:
    """The AT-SPI bus of a session (see the module docstring).

    Args:
        session_address: The session bus's address; default: the environment's
            (:func:`session_bus_address`), read at each connection.
        bus_address: The AT-SPI bus's address, when known (``AT_SPI_BUS_ADDRESS``); default:
            asked of the session bus.
        direct: Talk to each application that offers it on a connection of its own
            (``Application.GetApplicationBusAddress``: GTK's and Chromium's bridges do, Qt's
            does not), not through the bus: a round trip costs a third less.
    """

    def __init__(
        self,
        session_address: str | None = None,
        *,
        bus_address: str | None = None,
        direct: bool = True,
    ) -> None:
        self.session_address = session_address
        self.bus_address = bus_address or os.environ.get("AT_SPI_BUS_ADDRESS") or None
        self.direct = direct
        self._connection: _Connection | None = None
        self._peers: dict[str, _Connection | None] = {}
        self._lock = threading.Lock()

    def exchange(
        self, calls: Sequence[Call], deadline: float
    ) -> list[tuple[Any, ...] | AtspiError]:
        """Send ``calls`` together (connecting first when needed) and return each one's reply
        body or error, in order. A call whose reply did not come by ``deadline``
        (``time.monotonic()``) is an :class:`AtspiTimeoutError` in the list; a bus
        connection that broke raises :class:`AtspiUnavailableError`."""
        if not calls:
            return []
        with self._lock:
            bus = self._connect(deadline)
            self._find_peers({call.ref[0] for call in calls}, bus, deadline)
            routes: dict[int, tuple[_Connection, list[int]]] = {}
            for index, call in enumerate(calls):
                connection = self._peers.get(call.ref[0]) or bus
                routes.setdefault(id(connection), (connection, []))[1].append(index)
            results: list[tuple[Any, ...] | AtspiError] = [
                AtspiTimeoutError("no answer in time") for _ in calls
            ]
            # all sent first, then all read: applications answer at the same time
            sent: list[tuple[_Connection, list[int], dict[int, int] | None]] = []
            for connection, indices in routes.values():
                sent.append(
                    (connection, indices, self._send(connection, bus, calls, indices, deadline))
                )
            for connection, indices, waiting in sent:
                if waiting is None:
                    replies: list[tuple[Any, ...] | AtspiError] = [
                        AtspiUnavailableError("the application went away")
                    ] * len(indices)
                else:
                    try:
                        replies = connection.receive(waiting, len(indices), deadline)
                    except AtspiUnavailableError:
                        if connection is bus:
                            self._drop_all()
                            raise
                        replies = [AtspiUnavailableError("the application went away")] * len(
                            indices
                        )
                    finally:
                        if connection.broken:
                            self._drop(connection)
                for index, reply in zip(indices, replies, strict=True):
                    results[index] = reply
            return results

    def _send(
        self,
        connection: _Connection,
        bus: _Connection,
        calls: Sequence[Call],
        indices: list[int],
        deadline: float,
    ) -> dict[int, int] | None:
        """Send the ``indices`` of ``calls`` on ``connection`` (``None``: an application's
        own connection went away; the bus's going away raises)."""
        try:
            return connection.send([calls[i] for i in indices], deadline)
        except AtspiUnavailableError:
            if connection is bus:
                self._drop_all()
                raise
            return None
        finally:
            if connection.broken and connection is not bus:
                self._drop(connection)

    def call(self, call: Call, deadline: float) -> tuple[Any, ...]:
        """One call's reply body; its error raised."""
        (result,) = self.exchange([call], deadline)
        if isinstance(result, AtspiError):
            raise result
        return result

    def _find_peers(self, names: set[str], bus: _Connection, deadline: float) -> None:
        """Learn which of ``names`` (applications not asked before) offer a connection of
        their own, all asked in one exchange, and connect to those that do."""
        if not self.direct:
            return
        unknown = sorted(name for name in names if name.startswith(":") and name not in self._peers)
        if not unknown:
            return
        for name in unknown:
            self._peers[name] = None
        asks = [
            Call(
                (name, "/org/a11y/atspi/accessible/root"),
                "org.a11y.atspi.Application",
                "GetApplicationBusAddress",
            )
            for name in unknown
        ]
        for name, reply in zip(unknown, bus.exchange(asks, deadline), strict=True):
            address = reply[0] if not isinstance(reply, AtspiError) and reply else None
            if isinstance(address, str) and address:
                with contextlib.suppress(AtspiError):
                    self._peers[name] = _Connection(address, deadline, hello=False)

    def _drop(self, connection: _Connection) -> None:
        connection.close()
        if connection is self._connection:
            self._drop_all()
            return
        for name, peer in self._peers.items():
            if peer is connection:
                self._peers[name] = None  # not asked again: a unique name is never reused

    def _drop_all(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        for peer in self._peers.values():
            if peer is not None:
                peer.close()
        self._peers.clear()

    def _connect(self, deadline: float) -> _Connection:
        if self._connection is not None:
            return self._connection
        address = self.bus_address or self._ask_address(deadline)
        self._connection = _Connection(address, deadline)
        return self._connection

    def _ask_address(self, deadline: float) -> str:
        session = self.session_address or session_bus_address()
        if session is None:
            raise AtspiUnavailableError("no session bus (DBUS_SESSION_BUS_ADDRESS is not set)")
        connection = _Connection(session, deadline)
        try:
            (reply,) = connection.exchange(
                [Call(_A11Y_BUS, "org.a11y.Bus", "GetAddress")], deadline
            )
        finally:
            connection.close()
        if isinstance(reply, AtspiCallError):
            raise AtspiUnavailableError(f"the session bus has no accessibility bus ({reply})")
        if isinstance(reply, AtspiError):
            raise reply
        address = reply[0] if reply else ""
        if not isinstance(address, str) or not address:
            raise AtspiUnavailableError("the session bus gave no accessibility bus address")
        return address

    def close(self) -> None:
        """Close the connections (the next exchange opens new ones)."""
        with self._lock:
            self._drop_all()
