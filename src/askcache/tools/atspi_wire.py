"""D-Bus's wire format, for the messages an AT-SPI client sends and reads: fast enough to
ask a tree on every step.

A general D-Bus library in pure Python spends 70 to 150 µs encoding or decoding one message
(``jeepney``, measured here); one element costs some sixty calls and replies, so that alone
would be several milliseconds. :func:`encode_call` writes a method call whose arguments are
basic types (all AT-SPI's queries take only those) and :func:`decode` reads any message, each
in a few microseconds, with ``struct`` (the D-Bus specification's marshalling, little- or
big-endian). A call's bytes are written once: a query sends the calls of the last again, so
at a send only its serial is packed (about 1 µs a call). ``jeepney`` still connects and
authenticates (:mod:`askcache.tools.atspi_bus`).
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ERROR",
    "METHOD_CALL",
    "METHOD_RETURN",
    "SIGNAL",
    "Message",
    "decode",
    "encode_call",
    "message_length",
]

METHOD_CALL, METHOD_RETURN, ERROR, SIGNAL = 1, 2, 3, 4

_PATH, _INTERFACE, _MEMBER, _ERROR_NAME, _REPLY_SERIAL = 1, 2, 3, 4, 5
_DESTINATION, _SENDER, _SIGNATURE = 6, 7, 8

_FIXED = {
    "y": ("B", 1),
    "b": ("I", 4),
    "n": ("h", 2),
    "q": ("H", 2),
    "i": ("i", 4),
    "u": ("I", 4),
    "x": ("q", 8),
    "t": ("Q", 8),
    "d": ("d", 8),
    "h": ("I", 4),
}
_ALIGN = {**{code: size for code, (_, size) in _FIXED.items()}, "s": 4, "o": 4, "g": 1}
_ALIGN.update({"a": 4, "(": 8, "{": 8, "v": 1})


@dataclass(frozen=True)
class Message:
    """A message as read: its type, serials, error name and body."""

    kind: int
    serial: int
    reply_serial: int | None
    error_name: str | None
    body: tuple[Any, ...]


class _Writer:
    def __init__(self) -> None:
        self.data = bytearray()

    def align(self, size: int) -> None:
        self.data.extend(b"\0" * (-len(self.data) % size))

    def basic(self, code: str, value: Any) -> None:
        if code in ("s", "o"):
            raw = value.encode()
            self.align(4)
            self.data.extend(struct.pack("<I", len(raw)))
            self.data.extend(raw + b"\0")
        elif code == "g":
            raw = value.encode()
            self.data.extend(bytes((len(raw),)) + raw + b"\0")
        elif code in _FIXED:
            fmt, size = _FIXED[code]
            self.align(size)
            self.data.extend(struct.pack("<" + fmt, int(value) if code != "d" else value))
        else:
            raise ValueError(f"only basic types are written, not {code!r}")

    def field(self, code: int, signature: str, value: Any) -> None:
        self.align(8)
        self.data.append(code)
        self.basic("g", signature)
        self.basic(signature, value)


def encode_call(
    serial: int,
    *,
    destination: str,
    path: str,
    interface: str | None,
    member: str,
    signature: str = "",
    args: tuple[Any, ...] = (),
) -> bytes:
    """A method call, little-endian, whose arguments are basic types (``s``, ``u``,
    ``i``...)."""
    if len(signature) != len(args):
        raise ValueError(f"signature {signature!r} does not fit {len(args)} arguments")
    key = (destination, path, interface, member, signature, args)
    try:
        body_length, length, rest = _call_of(key)
    except TypeError:  # an argument that cannot be a cache's key: written the long way
        body_length, length, rest = _call_of.__wrapped__(key)
    return _FIXED_CALL.pack(b"l", METHOD_CALL, 0, 1, body_length, serial, length) + rest


_FIXED_CALL = struct.Struct("<cBBBIII")
"""A method call's fixed header (its serial the only part that differs between two sends)."""


@functools.lru_cache(maxsize=8192)
def _call_of(
    key: tuple[str, str, str | None, str, str, tuple[Any, ...]],
) -> tuple[int, int, bytes]:
    """A call's (destination, path, interface, member, signature, arguments) body length,
    header fields' length, and its header fields and body: the same at every send of the same
    call (a query sends the calls of the last again), so written once."""
    destination, path, interface, member, signature, args = key
    body = _Writer()
    for code, value in zip(signature, args, strict=True):
        body.basic(code, value)
    fields, length = _header_fields_of(destination, path, interface, member, signature)
    return len(body.data), length, fields + bytes(body.data)


@functools.lru_cache(maxsize=4096)
def _header_fields_of(
    destination: str, path: str, interface: str | None, member: str, signature: str
) -> tuple[bytes, int]:
    """A call's header fields (padded to 8) and their unpadded length: the same for every
    call of one method on one object, so written once."""
    fields = _Writer()
    fields.data.extend(b"\0" * 16)  # the fixed part: alignment counts from the start
    fields.field(_PATH, "o", path)
    if interface:
        fields.field(_INTERFACE, "s", interface)
    fields.field(_MEMBER, "s", member)
    fields.field(_DESTINATION, "s", destination)
    if signature:
        fields.field(_SIGNATURE, "g", signature)
    length = len(fields.data) - 16
    fields.align(8)
    return bytes(fields.data[16:]), length


def message_length(data: bytes | bytearray | memoryview) -> int | None:
    """The length of the message at the start of ``data``; ``None``: its first 16 bytes
    have not come yet."""
    if len(data) < 16:
        return None
    order = "<" if data[0] == ord("l") else ">"
    body, _, fields = struct.unpack_from(order + "III", data, 4)
    header = 16 + fields + (-(16 + fields) % 8)
    return int(header + body)


def decode(data: bytes | bytearray | memoryview) -> Message:
    """The whole message in ``data`` (:func:`message_length` bytes)."""
    buffer = bytes(data)
    order = "<" if buffer[0] == ord("l") else ">"
    kind = buffer[1]
    serial, fields_length = struct.unpack_from(order + "II", buffer, 8)
    values = _header_fields(buffer, order, 16, 16 + fields_length)
    reader = _Reader(buffer, order)
    reader.pos = 16 + fields_length + (-(16 + fields_length) % 8)
    signature = values.get(_SIGNATURE, "")
    body = reader.read_all(str(signature)) if signature else ()
    reply = values.get(_REPLY_SERIAL)
    error = values.get(_ERROR_NAME)
    return Message(
        kind=kind,
        serial=serial,
        reply_serial=int(reply) if reply is not None else None,
        error_name=str(error) if error is not None else None,
        body=body,
    )


def _header_fields(data: bytes, order: str, pos: int, end: int) -> dict[int, str | int]:
    """The header's fields (``a(yv)`` whose values are strings, paths, signatures or
    ``u``), read directly: they are in every message."""
    found: dict[int, str | int] = {}
    unsigned = struct.Struct(order + "I")
    while pos < end:
        pos += -pos % 8
        code, length = data[pos], data[pos + 1]
        kind = data[pos + 2 : pos + 2 + length]
        pos += 3 + length
        if kind in (b"s", b"o"):
            pos += -pos % 4
            (size,) = unsigned.unpack_from(data, pos)
            found[code] = data[pos + 4 : pos + 4 + size].decode("utf-8", "replace")
            pos += 5 + size
        elif kind == b"g":
            size = data[pos]
            found[code] = data[pos + 1 : pos + 1 + size].decode("ascii", "replace")
            pos += 2 + size
        elif kind == b"u":
            pos += -pos % 4
            (found[code],) = unsigned.unpack_from(data, pos)
            pos += 4
        else:  # a field of another type: read it the long way
            reader = _Reader(data, order)
            reader.pos = pos
            reader.read(kind.decode("ascii"))
            pos = reader.pos
    return found


@functools.lru_cache(maxsize=256)
def _split(signature: str) -> tuple[str, ...]:
    """The complete types of ``signature`` (``a(so)u`` -> ``["a(so)", "u"]``)."""
    types, index = [], 0
    while index < len(signature):
        end = _type_end(signature, index)
        types.append(signature[index:end])
        index = end
    return tuple(types)


@functools.lru_cache(maxsize=256)
def _fixed_struct(single: str) -> tuple[str, int] | None:
    """For a struct of fixed-size types of one alignment (``(iiii)``): its ``struct`` format
    and size; ``None`` for any other type."""
    inner = single[1:-1]
    if not single.startswith("(") or not inner or any(c not in _FIXED for c in inner):
        return None
    sizes = {_FIXED[c][1] for c in inner}
    if len(sizes) != 1:
        return None
    return "".join(_FIXED[c][0] for c in inner), sizes.pop() * len(inner)


def _type_end(signature: str, index: int) -> int:
    code = signature[index]
    if code == "a":
        return _type_end(signature, index + 1)
    if code in "({":
        closing = ")" if code == "(" else "}"
        depth = 0
        while True:
            if signature[index] in "({":
                depth += 1
            elif signature[index] in ")}":
                depth -= 1
                if depth == 0 and signature[index] == closing:
                    return index + 1
            index += 1
    return index + 1


class _Reader:
    def __init__(self, data: bytes, order: str) -> None:
        self.data = data
        self.order = order
        self.pos = 0

    def read_all(self, signature: str) -> tuple[Any, ...]:
        return tuple(self.read(single) for single in _split(signature))

    def read(self, single: str) -> Any:
        code = single[0]
        data = self.data
        if code in _FIXED:
            fmt, size = _FIXED[code]
            self.pos += -self.pos % size
            (value,) = struct.unpack_from(self.order + fmt, data, self.pos)
            self.pos += size
            return bool(value) if code == "b" else value
        if code in "so":
            self.pos += -self.pos % 4
            (length,) = struct.unpack_from(self.order + "I", data, self.pos)
            start = self.pos + 4
            self.pos = start + length + 1
            return data[start : start + length].decode("utf-8", "replace")
        if code == "g":
            length = data[self.pos]
            start = self.pos + 1
            self.pos = start + length + 1
            return data[start : start + length].decode("ascii", "replace")
        if code == "v":
            inner = self.read("g")
            return (inner, self.read(inner))
        if code == "(":
            self.pos += -self.pos % 8
            fixed = _fixed_struct(single)
            if fixed is not None:
                values = struct.unpack_from(self.order + fixed[0], data, self.pos)
                self.pos += fixed[1]
                return values
            return tuple(self.read(part) for part in _split(single[1:-1]))
        if code == "a":
            return self._array(single[1:])
        raise ValueError(f"cannot read D-Bus type {single!r}")

    def _array(self, element: str) -> Any:
        self.pos += -self.pos % 4
        (length,) = struct.unpack_from(self.order + "I", self.data, self.pos)
        self.pos += 4
        self.pos += -self.pos % _ALIGN[element[0]]
        end = self.pos + length
        if element[0] == "{":
            key, value = _split(element[1:-1])
            found: dict[Any, Any] = {}
            while self.pos < end:
                self.pos += -self.pos % 8
                entry_key = self.read(key)
                found[entry_key] = self.read(value)
            return found
        items = []
        while self.pos < end:
            items.append(self.read(element))
        return items
