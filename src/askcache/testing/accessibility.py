"""A private desktop session with accessibility: a D-Bus session bus and the AT-SPI registry.

:class:`AccessibilitySession` starts Debian's ``dbus-daemon`` as a session bus of its own (in a
temporary folder, which is also the applications' runtime, configuration and cache folder),
whose only activatable service is the AT-SPI bus launcher
(``/usr/libexec/at-spi-bus-launcher --launch-immediately``, Debian's ``at-spi2-core``); the
launcher starts the accessibility bus and the registry (``at-spi2-registryd``) on it.
Applications get :attr:`AccessibilitySession.env`: the session's address, the X display,
``QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1`` (Qt 5 publishes its tree only for a screen reader, or
with it) and no ``NO_AT_BRIDGE`` (which turns GTK's bridge off).

An application may start before or after the accessibility bus:

- GTK asks the session bus for the accessibility bus when it starts, which starts it (D-Bus
  activation of the launcher);
- Qt 5 reads the bus's address from the X root window's ``AT_SPI_BUS`` when it starts (the
  launcher puts it on its display; :meth:`AccessibilitySession.launch` puts it on any other
  display an application is started on) and registers at once; without it, Qt asks the
  session bus asynchronously, which sometimes never registers the application (measured
  here: one FeatherPad of two); an application started before the launcher waits for the
  launcher's name on the session bus and registers when it appears;
- Chromium with ``--force-renderer-accessibility`` does as GTK does.

Whichever it is, :meth:`AccessibilitySession.launch` and :meth:`AccessibilitySession.wait_for`
wait for the registry's and the applications' events (``ChildrenChanged``, ``StateChanged``:
an application registered, a window or a page appeared), re-checking the condition at each,
never for a fixed time. :meth:`AccessibilitySession.stop` ends everything the session started
(the bus daemon and every process it activated, one process group) and removes its folder.

``accessibility=False`` gives a session bus with no accessibility bus on it (a desktop where
AT-SPI is not installed): asking for one fails at once.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from askcache.foundation.errors import AskCacheError
from askcache.testing._process import stop_process
from askcache.tools.atspi_bus import AtspiBus, AtspiError, Call, Ref
from askcache.tools.atspi_nodes import as_ref, describe_all

__all__ = [
    "LAUNCHER",
    "AccessibilitySession",
    "accessibility_available",
    "application_environment",
    "application_on_file",
    "own_home",
]

LAUNCHER = "/usr/libexec/at-spi-bus-launcher"
"""Debian's AT-SPI bus launcher (``at-spi2-core``)."""

_REGISTRY: Ref = ("org.a11y.atspi.Registry", "/org/a11y/atspi/accessible/root")
_DBUS: Ref = ("org.freedesktop.DBus", "/org/freedesktop/DBus")
_EVENTS = ("object:children-changed", "object:state-changed", "object:property-change")
"""The events the session asks applications to send while it waits (through the registry:
toolkits send only the events some listener asked for)."""

_NOT_PASSED = frozenset(
    {
        "NO_AT_BRIDGE",
        "AT_SPI_BUS_ADDRESS",
        "DBUS_SESSION_BUS_PID",
        # set by Python packages that bundle a Qt of their own (opencv, which pyautogui may
        # import): the system's Qt applications would load that Qt's plugins and abort
        "QT_QPA_PLATFORM_PLUGIN_PATH",
        "QT_QPA_FONTDIR",
        "QT_PLUGIN_PATH",
        "LD_LIBRARY_PATH",
    }
)
"""Variables of this process that the session's applications do not get."""


def application_environment() -> dict[str, str]:
    """This process's environment for a desktop application started from it, without what
    would make it fail or act otherwise: a Qt of a Python package's own (opencv sets its
    plugin path when pyautogui imports it; a system Qt application then aborts), and the
    session and accessibility buses of this process (FeatherPad hands its file to an instance
    it finds on the bus, and quits)."""
    return {
        key: value
        for key, value in os.environ.items()
        if key not in _NOT_PASSED and key != "DBUS_SESSION_BUS_ADDRESS"
    }


def own_home(folder: Path) -> dict[str, str]:
    """A home, configuration and runtime folder of its own for one application, made under
    ``folder`` (``home`` and ``home/runtime``, private): the variables that point the
    application there. FeatherPad keeps one instance per user and display, and reads its
    settings from its configuration folder: two runs that share them share one window."""
    home = folder / "home"
    runtime = home / "runtime"
    runtime.mkdir(parents=True, mode=0o700, exist_ok=True)
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home), "XDG_RUNTIME_DIR": str(runtime)}


@contextlib.contextmanager
def application_on_file(
    command: Sequence[str],
    folder: Path,
    text: str,
    env: Mapping[str, str] | None = None,
    size: tuple[int, int] = (1024, 768),
) -> Iterator[tuple[str, Path]]:
    """``command`` started on a file holding ``text`` (``folder/list.txt``, ``folder`` made
    here), with ``env`` over :func:`application_environment`, in a home of its own
    (:func:`own_home`), on an X server of its own of ``size``: the display's name and the
    file. The application is stopped when the block ends (an editor such as FeatherPad hands
    a file to an instance it finds for the same user and display, and quits)."""
    from askcache.testing.xvfb import VirtualDisplay

    folder.mkdir()
    path = folder / "list.txt"
    path.write_text(text)
    with VirtualDisplay(*size) as screen:
        process = subprocess.Popen(
            [*command, str(path)],
            env={
                **application_environment(),
                **(env or {}),
                **own_home(folder),
                "DISPLAY": screen.display,
            },
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            yield screen.display, path
        finally:
            stop_process(process)


T = TypeVar("T")

_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <keep_umask/>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  {servicedir}
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""

_SERVICE = """[D-BUS Service]
Name=org.a11y.Bus
Exec={launcher} --launch-immediately --a11y=1
"""


def accessibility_available() -> bool:
    """True when this machine has what a session needs: ``dbus-daemon`` and Debian's
    ``at-spi2-core`` (its launcher), and ``jeepney`` to talk to them."""
    try:
        import jeepney  # noqa: F401
    except ImportError:
        return False
    return shutil.which("dbus-daemon") is not None and os.access(LAUNCHER, os.X_OK)


class AccessibilitySession:
    """A session bus with the AT-SPI bus for the X display ``display`` (see the module
    docstring). Use it as a context manager, or :meth:`start` and :meth:`stop`.

    Args:
        display: The X display the applications draw on (``":3"``).
        accessibility: False: no accessibility bus on the session bus.
        start_bus: Start the accessibility bus with the session (False: the first
            application or :meth:`start_bus` starts it).
    """

    def __init__(self, display: str, *, accessibility: bool = True, start_bus: bool = True) -> None:
        self.display = display
        self.accessibility = accessibility
        self.start_bus_at_once = start_bus and accessibility
        self.address = ""
        self.folder: Path | None = None
        self._daemon: subprocess.Popen[bytes] | None = None
        self._bus: AtspiBus | None = None

    def __enter__(self) -> AccessibilitySession:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def env(self) -> dict[str, str]:
        """The environment for an application of this session."""
        assert self.folder is not None, "the session is not started"
        env = application_environment()
        env.update(
            DISPLAY=self.display,
            DBUS_SESSION_BUS_ADDRESS=self.address,
            XDG_RUNTIME_DIR=str(self.folder / "runtime"),
            XDG_CONFIG_HOME=str(self.folder / "config"),
            XDG_CACHE_HOME=str(self.folder / "cache"),
            XDG_DATA_HOME=str(self.folder / "data"),
            QT_LINUX_ACCESSIBILITY_ALWAYS_ON="1",
            GSETTINGS_BACKEND="memory",  # no dconf service to start, nothing kept
        )
        return env

    def start(self, timeout: float = 30.0) -> None:
        """Start the session bus (and the accessibility bus, unless ``start_bus=False``)."""
        binary = shutil.which("dbus-daemon")
        if binary is None:
            raise AskCacheError("dbus-daemon is not installed (Debian: apt-get install dbus)")
        if self.accessibility and not os.access(LAUNCHER, os.X_OK):
            raise AskCacheError(f"{LAUNCHER} is missing (Debian: apt-get install at-spi2-core)")
        self.folder = Path(tempfile.mkdtemp(prefix="askcache-a11y-"))
        for name in ("runtime", "config", "cache", "data", "services"):
            (self.folder / name).mkdir(mode=0o700)
        servicedir = ""
        if self.accessibility:
            service = self.folder / "services" / "org.a11y.Bus.service"
            service.write_text(_SERVICE.format(launcher=LAUNCHER))
            servicedir = f"<servicedir>{self.folder / 'services'}</servicedir>"
        config = self.folder / "session.conf"
        config.write_text(_CONFIG.format(socket=self.folder / "bus", servicedir=servicedir))
        read_end, write_end = os.pipe()
        env = self.env  # what the activated launcher inherits: the display, the runtime folder
        env.pop("DBUS_SESSION_BUS_ADDRESS")
        try:
            self._daemon = subprocess.Popen(
                [binary, f"--config-file={config}", "--nofork", f"--print-address={write_end}"],
                pass_fds=(write_end,),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # it and all it activates: one group, ended together
            )
        finally:
            os.close(write_end)
        try:
            address = _read_line(read_end, timeout)
        finally:
            os.close(read_end)
        if not address:
            self.stop()
            raise AskCacheError(f"dbus-daemon did not start within {timeout} s")
        self.address = address
        if self.start_bus_at_once:
            self.start_bus(timeout)

    def start_bus(self, timeout: float = 30.0) -> None:
        """Start the accessibility bus and its registry (when no application did yet) and
        wait until the registry answers."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._atspi().call(
                    Call(_REGISTRY, "org.a11y.atspi.Accessible", "GetChildren"), deadline
                )
                return
            except AtspiError as exc:
                if time.monotonic() >= deadline:
                    raise AskCacheError(f"the accessibility bus did not start: {exc}") from exc
                self._atspi().close()  # activation under way: ask again on a new connection
                time.sleep(0.05)

    def stop_bus(self, timeout: float = 10.0) -> None:
        """Stop the accessibility bus (its launcher, which takes the bus with it), as a
        desktop whose accessibility service crashed; the next question for it starts a new
        one. Returns once the launcher is gone."""
        from jeepney import DBusAddress, new_method_call
        from jeepney.io.blocking import open_dbus_connection

        with open_dbus_connection(self.address, auth_timeout=5.0) as session:
            bus = DBusAddress(
                "/org/freedesktop/DBus", "org.freedesktop.DBus", "org.freedesktop.DBus"
            )
            reply = session.send_and_get_reply(
                new_method_call(bus, "GetConnectionUnixProcessID", "s", ("org.a11y.Bus",)),
                timeout=5.0,
            )
        if not reply.body or not isinstance(reply.body[0], int):
            return  # not running
        pid = int(reply.body[0])
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while _running(pid):
            if time.monotonic() > deadline:
                raise AskCacheError(f"the accessibility bus launcher ({pid}) did not stop")
            time.sleep(0.02)
        if self._bus is not None:
            self._bus.close()

    def _atspi(self) -> AtspiBus:
        if self._bus is None:
            self._bus = AtspiBus(self.address)
        return self._bus

    def applications(self, timeout: float = 5.0) -> dict[Ref, int | None]:
        """The applications registered now, with their process ids."""
        deadline = time.monotonic() + timeout
        bus = self._atspi()
        reply = bus.call(Call(_REGISTRY, "org.a11y.atspi.Accessible", "GetChildren"), deadline)
        refs = [ref for ref in (as_ref(r) for r in reply[0]) if ref is not None]
        pids = bus.exchange(
            [
                Call(_DBUS, "org.freedesktop.DBus", "GetConnectionUnixProcessID", "s", (ref[0],))
                for ref in refs
            ],
            deadline,
        )
        return {
            ref: None if isinstance(pid, AtspiError) or not pid else int(pid[0])
            for ref, pid in zip(refs, pids, strict=True)
        }

    def frames(self, pid: int, timeout: float = 5.0) -> list[tuple[str, str]]:
        """The showing top-level windows of process ``pid``'s applications: role and name."""
        deadline = time.monotonic() + timeout
        bus = self._atspi()
        apps = [ref for ref, owner in self.applications(timeout).items() if owner == pid]
        replies = bus.exchange(
            [Call(ref, "org.a11y.atspi.Accessible", "GetChildren") for ref in apps], deadline
        )
        refs = [
            ref
            for reply in replies
            if not isinstance(reply, AtspiError) and reply
            for ref in (as_ref(r) for r in reply[0])
            if ref is not None
        ]
        nodes, _ = describe_all(bus, refs, deadline)
        return [(n.role, n.name) for n in nodes if n is not None and n.visible]

    def wait_for(self, probe: Callable[[], T | None], timeout: float = 60.0, what: str = "") -> T:
        """``probe()``'s first answer that is not ``None`` (nor false, nor an
        :class:`AtspiError`), asked again after each accessibility event; an error after
        ``timeout`` (which only guards against one that never comes)."""
        with self._events() as events:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    answer = probe()
                except AtspiError:
                    answer = None
                if answer:
                    return answer
                if time.monotonic() > deadline:
                    raise AskCacheError(
                        f"{what or 'the accessibility tree'} did not come within {timeout} s"
                    )
                events(min(0.5, max(0.01, deadline - time.monotonic())))

    @contextlib.contextmanager
    def _events(self) -> Iterator[Callable[[float], None]]:
        """A function that waits for the next accessibility event (at most the given seconds:
        a toolkit that sends none is asked again all the same)."""
        from jeepney import DBusAddress, MatchRule, new_method_call
        from jeepney.bus_messages import message_bus
        from jeepney.io.blocking import open_dbus_connection

        address = self._atspi_address()
        connection: Any = open_dbus_connection(address, auth_timeout=5.0)
        try:
            for interface in ("org.a11y.atspi.Event.Object", "org.a11y.atspi.Event.Window"):
                rule = MatchRule(type="signal", interface=interface)
                connection.send_and_get_reply(message_bus.AddMatch(rule), timeout=5.0)
            registry = DBusAddress(_REGISTRY[1], _REGISTRY[0], "org.a11y.atspi.Registry")
            for event in _EVENTS:
                connection.send_and_get_reply(
                    new_method_call(registry, "RegisterEvent", "s", (event,)), timeout=5.0
                )

            def wait(seconds: float) -> None:
                with contextlib.suppress(TimeoutError):
                    connection.receive(timeout=seconds)
                    while True:  # the rest of a burst at once
                        connection.receive(timeout=0.0)

            yield wait
        finally:
            connection.close()

    def _atspi_address(self) -> str:
        from jeepney import DBusAddress, new_method_call
        from jeepney.io.blocking import open_dbus_connection

        with open_dbus_connection(self.address, auth_timeout=5.0) as session:
            reply = session.send_and_get_reply(
                new_method_call(
                    DBusAddress("/org/a11y/bus", "org.a11y.Bus", "org.a11y.Bus"), "GetAddress"
                ),
                timeout=30.0,
            )
        return str(reply.body[0])

    @contextlib.contextmanager
    def launch(
        self,
        *command: str,
        env: Mapping[str, str] | None = None,
        timeout: float = 120.0,
        ready: Callable[[list[tuple[str, str]]], bool] | None = None,
    ) -> Iterator[subprocess.Popen[bytes]]:
        """Run ``command`` in this session and wait until its application registered and
        shows a window (``ready``: until its showing windows, as ``(role, name)`` pairs,
        satisfy it); stop it when the block ends."""
        assert self.folder is not None, "the session is not started"
        display = (env or {}).get("DISPLAY", self.display)
        if display != self.display and self.accessibility:
            self._publish_bus(display)
        log = self.folder / f"{Path(command[0]).name}-{time.monotonic_ns()}.log"
        with log.open("wb") as output:
            process = subprocess.Popen(
                list(command),
                env={**self.env, **(env or {})},
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        try:
            check = ready or bool

            def registered() -> list[tuple[str, str]] | None:
                if process.poll() is not None:
                    said = log.read_text(errors="replace")[-2000:]
                    raise AskCacheError(
                        f"{command[0]} exited at start ({process.returncode}): {said}"
                    )
                frames = self.frames(process.pid) if self.accessibility else []
                return frames if check(frames) else None

            if self.accessibility:
                try:
                    self.wait_for(registered, timeout, f"{command[0]}'s window")
                except AskCacheError as exc:
                    try:
                        shown: object = self.frames(process.pid)
                    except AtspiError as error:
                        shown = error
                    said = log.read_text(errors="replace")[-2000:]
                    raise AskCacheError(f"{exc}; its windows: {shown!r}; it said: {said}") from exc
            yield process
        finally:
            stop_process(process)

    def _publish_bus(self, display: str) -> None:
        """Put the accessibility bus's address on ``display``'s root window (``AT_SPI_BUS``),
        as the launcher does on the session's own display: Qt 5 connects through it at once,
        where its other way (asking the session bus, asynchronously) sometimes never
        registers the application."""
        from Xlib import Xatom

        from askcache.foundation.screen.xserver import connect

        address = self._atspi_address().encode()
        connection = connect(display)
        try:
            root = connection.screen().root
            root.change_property(connection.intern_atom("AT_SPI_BUS"), Xatom.STRING, 8, address)
            connection.sync()
        finally:
            connection.close()

    def stop(self, timeout: float = 10.0) -> None:
        """End every process of the session (the bus daemon, the launcher, the accessibility
        bus, the registry) and remove its folder."""
        if self._bus is not None:
            self._bus.close()
            self._bus = None
        daemon, self._daemon = self._daemon, None
        if daemon is not None:
            group = daemon.pid
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGTERM)
            stop_process(daemon, timeout)
            deadline = time.monotonic() + timeout
            while _group_alive(group):
                if time.monotonic() > deadline:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(group, signal.SIGKILL)
                    break
                time.sleep(0.02)
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None


def _running(pid: int) -> bool:
    """True while process ``pid`` runs (a zombie does not)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return False
    return fields[0] not in ("Z", "X")


def _group_alive(group: int) -> bool:
    """True while a process of ``group`` runs (a zombie, which nobody may reap here, does
    not count)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[2] == str(group) and fields[0] not in ("Z", "X"):
            return True
    return False


def _read_line(fd: int, timeout: float) -> str:
    """What the daemon writes to its ``--print-address`` descriptor, up to the newline."""
    data = b""
    deadline = time.monotonic() + timeout
    while not data.endswith(b"\n"):
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        chunk = os.read(fd, 256) if ready else b""
        if not chunk:
            return ""
        data += chunk
    return data.decode().strip()
