"""How long one accessibility query takes, by client: askcache's AT-SPI source against
Debian's pyatspi, on a GTK, a Qt and a Chromium application.

    bash scripts/bench.sh atspi_query [REPEATS]

Starts Xvfb, a private accessibility session (askcache.testing.accessibility) and, one at a
time, mousepad and FeatherPad (each on a small text file) and Chromium (a local page), at
1x. For each application, three points (a control found in the tree, a text, the middle of
the window) are asked REPEATS times in rounds that alternate the clients (so that each sees
the same load), and one ``elements_like`` of the control:

- ``askcache``: :class:`askcache.tools.atspi.AtspiElements` as shipped (jeepney connects and
  authenticates, askcache.tools.atspi_wire writes and reads, a direct connection to each
  application that offers one);
- ``via bus``: the same through the bus daemon only (no direct connections);
- ``jeepney codec``: the same with jeepney's own message codec;
- ``dbus-fast codec``: the same with dbus-fast's compiled codec (when installed);
- ``pyatspi``: Debian's python3-pyatspi (libatspi through GObject introspection), in
  Debian's own python3, doing the same work (the frame at the point, a descent with each
  answer's extents checked, the leaf's role, name, states and box, its ancestors' roles and
  names, the text offset); pyatspi keeps libatspi's cache, as a user of it would.

Prints a Markdown table of medians and 90th percentiles in milliseconds, the load
(``uptime``) before and after, each client's install size, and each toolkit's text offsets.
Nothing is written to docs/: the numbers are for the issue's report.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from askcache.foundation.screen.elements import Element, element_center
from askcache.parity.evidence import _CHROMIUM_FLAGS, find_chromium
from askcache.testing import VirtualDisplay
from askcache.testing.accessibility import AccessibilitySession
from askcache.tools import atspi_bus, atspi_wire
from askcache.tools.atspi import AtspiElements

PAGE = """<!doctype html><html><head><title>Anchor page</title></head><body>
<h1>Anchors</h1><p>Some text to read here.</p>
<button style="font-size:20px;margin:20px">Send now</button>
<input aria-label="Message" value="hello world" style="font-size:20px">
</body></html>
"""
TEXT = "hello world\nsecond line of the text\n" * 20

APPS: dict[str, dict[str, Any]] = {
    "mousepad (GTK 3)": {"control": ("menu", "File"), "frame": "anchors.txt"},
    "featherpad (Qt 5)": {"control": ("push button", "Open"), "frame": "anchors.txt"},
    "chromium": {"control": ("push button", "Send now"), "frame": "Anchor page"},
}

PYATSPI = r"""
import json, sys, time
import pyatspi
from gi.repository import Atspi

pid, points, repeats, role, name = json.loads(sys.argv[1])
SCREEN = pyatspi.DESKTOP_COORDS

def app_of(pid):
    for app in pyatspi.Registry.getDesktop(0):
        if app is not None and app.get_process_id() == pid:
            return app

def inside(node, x, y):
    e = node.queryComponent().getExtents(SCREEN)
    return e.width > 0 and e.x <= x < e.x + e.width and e.y <= y < e.y + e.height

def element_at(x, y):
    app = app_of(pid)
    frames = [f for f in app if f is not None and f.getState().contains(pyatspi.STATE_SHOWING)]
    frame = next(f for f in frames if inside(f, x, y))
    node, chain = frame, [frame]
    for _ in range(60):
        child = node.queryComponent().getAccessibleAtPoint(x, y, SCREEN)
        if child is None or child in chain or not child.getState().contains(pyatspi.STATE_SHOWING):
            break
        if not inside(child, x, y):
            break
        chain.append(child)
        node = child
    leaf = chain[-1]
    ancestors, parent = [], leaf.parent
    while parent is not None and parent.getRole() != pyatspi.ROLE_APPLICATION:
        ancestors.append((parent.getRoleName(), parent.name))
        parent = parent.parent
    box = leaf.queryComponent().getExtents(SCREEN)
    try:
        offset = leaf.queryText().getOffsetAtPoint(x, y, SCREEN)
    except NotImplementedError:
        offset = None
    return (leaf.getRoleName(), leaf.name, [str(s) for s in leaf.getState().getStates()],
            ancestors, (box.x, box.y, box.width, box.height), offset)

def like(x, y):
    app = app_of(pid)
    frame = next(f for f in app if f is not None and inside(f, x, y))
    found, level = [], [frame]
    while level:
        below = []
        for node in level:
            for child in node:
                if child is None or not child.getState().contains(pyatspi.STATE_SHOWING):
                    continue
                if child.getRoleName() == role and child.name == name:
                    found.append(child.queryComponent().getExtents(SCREEN))
                below.append(child)
        level = below
    return found

times = {"element_at": [], "elements_like": []}
answers = []
for _ in range(repeats):
    for x, y in points:
        start = time.perf_counter()
        answers.append(element_at(x, y))
        times["element_at"].append(time.perf_counter() - start)
    start = time.perf_counter()
    like(*points[0])
    times["elements_like"].append(time.perf_counter() - start)
print(json.dumps({"times": times, "answers": answers[: len(points)]}))
"""


def _uptime() -> str:
    return "load average " + " ".join(Path("/proc/loadavg").read_text().split()[:3])


@contextmanager
def _codec(name: str) -> Iterator[None]:
    """askcache's bus with another library's message codec."""
    if name == "askcache":
        yield
        return
    original = (atspi_bus.encode_call, atspi_bus.decode, atspi_bus.message_length)
    if name == "jeepney":
        from jeepney import DBusAddress, new_method_call
        from jeepney.low_level import HeaderFields, Parser

        def encode(serial: int, **call: Any) -> bytes:
            address = DBusAddress(call["path"], call["destination"], call["interface"])
            message = new_method_call(
                address, call["member"], call["signature"] or None, call["args"]
            )
            return bytes(message.serialise(serial=serial))

        def decode(data: Any) -> atspi_wire.Message:
            parser = Parser()
            parser.add_data(bytes(data))
            message = parser.get_next_message()
            fields = message.header.fields
            return atspi_wire.Message(
                kind=int(message.header.message_type.value),
                serial=message.header.serial,
                reply_serial=fields.get(HeaderFields.reply_serial),
                error_name=fields.get(HeaderFields.error_name),
                body=tuple(message.body),
            )
    else:
        import io

        from dbus_fast import Message
        from dbus_fast._private.unmarshaller import Unmarshaller

        def encode(serial: int, **call: Any) -> bytes:
            message = Message(
                destination=call["destination"],
                path=call["path"],
                interface=call["interface"],
                member=call["member"],
                signature=call["signature"],
                body=list(call["args"]),
                serial=serial,
            )
            return bytes(message._marshall(False))

        def decode(data: Any) -> atspi_wire.Message:
            message = Unmarshaller(io.BytesIO(bytes(data))).unmarshall()
            body = tuple(_plain(v) for v in message.body)
            return atspi_wire.Message(
                kind=int(message.message_type.value),
                serial=message.serial,
                reply_serial=message.reply_serial or None,
                error_name=message.error_name,
                body=body,
            )

    atspi_bus.encode_call, atspi_bus.decode = encode, decode  # type: ignore[assignment]
    try:
        yield
    finally:
        atspi_bus.encode_call, atspi_bus.decode, atspi_bus.message_length = original


def _plain(value: Any) -> Any:
    """dbus-fast's values as jeepney's (variants as (signature, value), lists as lists)."""
    from dbus_fast import Variant

    if isinstance(value, Variant):
        return (value.signature, _plain(value.value))
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _command(name: str, folder: Path) -> list[str]:
    if name.startswith("mousepad"):
        return ["mousepad", str(folder / "anchors.txt")]
    if name.startswith("featherpad"):
        return ["featherpad", str(folder / "anchors.txt")]
    return [
        find_chromium(),
        *_CHROMIUM_FLAGS,
        "--force-renderer-accessibility",
        "--no-default-browser-check",
        f"--user-data-dir={folder / 'profile'}",
        "--window-position=0,0",
        "--window-size=900,600",
        (folder / "page.html").as_uri(),
    ]


def _measure(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def _stats(values: list[float]) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    return f"{statistics.median(values) * 1000:.1f} / {p90 * 1000:.1f}"


def _bench_app(name: str, repeats: int, folder: Path) -> dict[str, Any]:
    codecs = ["askcache", "via bus", "jeepney"]
    try:
        import dbus_fast  # noqa: F401

        codecs.append("dbus-fast")
    except ImportError:
        pass
    result: dict[str, Any] = {}
    with VirtualDisplay(1280, 800) as display, AccessibilitySession(display.display) as session:
        frame = APPS[name]["frame"]
        command = _command(name, folder)
        with session.launch(
            *command, ready=lambda frames: any(frame in title for _, title in frames)
        ) as process:
            sources = {
                codec: AtspiElements(display.display, session_address=session.address, timeout=10)
                for codec in codecs
            }
            sources["via bus"]._bus.direct = False
            askcache = sources["askcache"]
            role, control_name = APPS[name]["control"]
            control = askcache.elements_like(
                Element(role=role, name=control_name, box=(0, 0, 1, 1)), (450, 300)
            )
            assert control is not None, name
            assert len(control) == 1, control
            centre = element_center(control[0])
            text = (60, 115) if not name.startswith("chromium") else (175, 291)
            middle = (320, 300)
            points = [centre, text, middle]
            result["answers"] = [askcache.element_at(p) for p in points]
            for source in sources.values():  # warm: connections, the toolkit's own caches
                for p in points:
                    source.element_at(p)
            at: dict[str, list[float]] = {c: [] for c in codecs}
            like: dict[str, list[float]] = {c: [] for c in codecs}
            for _ in range(repeats):
                for codec in codecs:
                    source = sources[codec]
                    with _codec(codec if codec in ("jeepney", "dbus-fast") else "askcache"):
                        for p in points:
                            at[codec].append(_measure(partial(source.element_at, p)))
                        like[codec].append(
                            _measure(partial(source.elements_like, control[0], centre))
                        )
            for source in sources.values():
                source.close()
            result["element_at"], result["elements_like"] = at, like
            debian = "/usr/bin/python3"
            probe = subprocess.run(
                [debian, "-c", "import pyatspi"], capture_output=True, check=False
            )
            if probe.returncode == 0:
                run = subprocess.run(
                    [
                        debian,
                        "-c",
                        PYATSPI,
                        json.dumps([process.pid, points, repeats, role, control_name]),
                    ],
                    env=session.env,
                    capture_output=True,
                    text=True,
                    check=False,
                    timeout=600,
                )
                if run.returncode == 0:
                    found = json.loads(run.stdout.strip().splitlines()[-1])
                    at["pyatspi"] = found["times"]["element_at"]
                    like["pyatspi"] = found["times"]["elements_like"]
                    result["pyatspi answers"] = found["answers"]
                else:
                    result["pyatspi error"] = run.stderr[-500:]
    return result


def _installed_sizes() -> dict[str, str]:
    sizes = {}
    for package in ("jeepney", "dbus_fast"):
        try:
            module = __import__(package)
        except ImportError:
            continue
        folder = Path(module.__file__).parent  # type: ignore[arg-type]
        total = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        sizes[package] = f"{total / 1024:.0f} KiB (site-packages)"
    debian = ["python3-pyatspi", "gir1.2-atspi-2.0", "python3-gi", "libgirepository-1.0-1"]
    found = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Package} ${Installed-Size}\n", *debian],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    if found:
        kib = sum(int(v) for v in found[1::2])
        sizes["pyatspi"] = f"{kib} KiB ({', '.join(found[0::2])}; libatspi itself comes with GTK)"
    return sizes


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    folder = Path(tempfile.mkdtemp(prefix="atspi-bench-"))
    try:
        (folder / "anchors.txt").write_text(TEXT)
        (folder / "page.html").write_text(PAGE)
        print(f"load before: {_uptime()}  repeats: {repeats} rounds x 3 points")
        results = {name: _bench_app(name, repeats, folder) for name in APPS}
        print(f"load after: {_uptime()}\n")
        clients = ["askcache", "via bus", "jeepney", "dbus-fast", "pyatspi"]
        print("element_at, ms (median / p90):\n")
        print("| application | " + " | ".join(clients) + " |")
        print("|---|" + "---|" * len(clients))
        for name, result in results.items():
            row = [_stats(result["element_at"].get(c, [])) for c in clients]
            print(f"| {name} | " + " | ".join(row) + " |")
        print("\nelements_like, ms (median / p90):\n")
        print("| application | " + " | ".join(clients) + " |")
        print("|---|" + "---|" * len(clients))
        for name, result in results.items():
            row = [_stats(result["elements_like"].get(c, [])) for c in clients]
            print(f"| {name} | " + " | ".join(row) + " |")
        print("\nanswers (askcache; pyatspi's leaf):")
        for name, result in results.items():
            for element in result["answers"]:
                print(f"  {name}: {element!r}")
            for answer in result.get("pyatspi answers", []):
                print(f"  {name} pyatspi: {answer!r}")
            if "pyatspi error" in result:
                print(f"  {name} pyatspi failed: {result['pyatspi error']}")
        print("\ninstall size:")
        for package, size in _installed_sizes().items():
            print(f"  {package}: {size}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("NO_AT_BRIDGE", "1")  # this process publishes no tree of its own
    main()
