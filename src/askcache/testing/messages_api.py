"""A local stand-in of the Anthropic Messages API, for offline tests and demos.

It serves ``POST /v1/messages`` over real HTTP on 127.0.0.1, checks each request the way the
API would (block keys must be keys of the SDK's own request ``TypedDict``\\ s, so askcache's
cache-only fields are rejected, and so are unknown keys of a tool, a system block or a
``cache_control``; tool_use / tool_result pairing, the results first in the next user turn;
at most four blocks with ``cache_control``; beta flags for the single computer tool) and
answers from a script::

    with MessagesApiStandIn([tool_use_reply("computer", {"action": "screenshot"}),
                             text_reply("Done.")]) as api:
        client = api.client()          # a real anthropic.Anthropic(base_url=api.base_url)
        ...
        assert len(api.requests) == 2

A script entry is a reply dict (see :func:`text_reply`, :func:`tool_use_reply`) or a callable
taking the request body and returning one; a single callable instead of a list answers every
request (a scripted policy). A bad request gets the API's 400 error shape.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import threading
import typing
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anthropic
from anthropic.types import (
    Base64ImageSourceParam,
    ImageBlockParam,
    RedactedThinkingBlockParam,
    TextBlockParam,
    ThinkingBlockParam,
    ToolResultBlockParam,
    ToolUseBlockParam,
)
from anthropic.types.beta import BetaCacheControlEphemeralParam, BetaToolUnionParam
from anthropic.types.beta.message_create_params import (
    MessageCreateParamsNonStreaming as BetaCreateParams,
)
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

__all__ = [
    "MessagesApiStandIn",
    "Reply",
    "RequestRejectedError",
    "ScriptEntry",
    "estimate_tokens",
    "text_reply",
    "tool_use_reply",
    "validate_request",
]

Reply = dict[str, Any]
"""A reply: ``content`` blocks, optional ``stop_reason`` and ``usage``."""
ScriptEntry = Reply | Callable[[dict[str, Any]], Reply]
"""A scripted reply, or a function of the request body that makes one."""

_BLOCK_TYPES: dict[str, Any] = {
    "text": TextBlockParam,
    "image": ImageBlockParam,
    "tool_use": ToolUseBlockParam,
    "tool_result": ToolResultBlockParam,
    "thinking": ThinkingBlockParam,
    "redacted_thinking": RedactedThinkingBlockParam,
}
_RESULT_CONTENT = {"text", "image"}
_COMPUTER_BETAS = {
    "computer_20250124": "computer-use-2025-01-24",
    "computer_20251124": "computer-use-2025-11-24",
}
_ids = itertools.count(1)
MAX_CACHE_BREAKPOINTS = 4
"""Blocks with ``cache_control`` the API takes in one request (tools, system and messages
together): "A maximum of 4 blocks with cache_control may be provided" (docs, prompt caching)."""


def _literals(hint: Any) -> list[str]:
    if typing.get_origin(hint) is typing.Literal:
        return [str(arg) for arg in typing.get_args(hint)]
    return [literal for arg in typing.get_args(hint) for literal in _literals(arg)]


_TOOL_TYPES: dict[str, Any] = {
    literal: tool
    for tool in typing.get_args(BetaToolUnionParam)
    for literal in _literals(typing.get_type_hints(tool).get("type"))
}
"""Each tool ``type`` the SDK knows -> its ``TypedDict`` (a tool without ``type`` is custom)."""


def _keys(typed_dict: Any) -> tuple[set[str], set[str]]:
    """All keys and the required keys of an SDK TypedDict."""
    hints = set(typing.get_type_hints(typed_dict))
    return hints, set(typed_dict.__required_keys__)


class RequestRejectedError(ValueError):
    """A request the real API would refuse; the message is the API's error text."""


def _check_block(block: Any, where: str, allowed: set[str]) -> None:
    if not isinstance(block, dict) or block.get("type") not in allowed:
        kind = block.get("type") if isinstance(block, dict) else type(block).__name__
        raise RequestRejectedError(f"{where}: unexpected block type {kind!r}")
    keys, required = _keys(_BLOCK_TYPES[block["type"]])
    extra, missing = set(block) - keys, required - set(block)
    if extra:
        raise RequestRejectedError(f"{where}.{sorted(extra)[0]}: Extra inputs are not permitted")
    if missing:
        raise RequestRejectedError(f"{where}.{sorted(missing)[0]}: Field required")
    _check_cache_control(block, where)
    if block["type"] == "image":
        source = block["source"]
        source_keys, source_required = _keys(Base64ImageSourceParam)
        if (
            not isinstance(source, dict)
            or set(source) - source_keys
            or source_required - set(source)
        ):
            raise RequestRejectedError(f"{where}.source: expected a base64 image source")
        try:
            base64.b64decode(source["data"], validate=True)
        except (binascii.Error, ValueError, TypeError) as exc:
            raise RequestRejectedError(f"{where}.source.data: invalid base64") from exc
    if block["type"] == "tool_result" and isinstance(block.get("content"), list):
        for j, item in enumerate(block["content"]):
            _check_block(item, f"{where}.content.{j}", _RESULT_CONTENT)


def _check_cache_control(item: dict[str, Any], where: str) -> None:
    """A ``cache_control`` is ``{"type": "ephemeral"}``, with an optional ``ttl``."""
    control = item.get("cache_control")
    if control is None:
        return
    if not isinstance(control, dict) or control.get("type") != "ephemeral":
        raise RequestRejectedError(f"{where}.cache_control.type: Input should be 'ephemeral'")
    extra = sorted(set(control) - set(typing.get_type_hints(BetaCacheControlEphemeralParam)))
    if extra:
        raise RequestRejectedError(
            f"{where}.cache_control.{extra[0]}: Extra inputs are not permitted"
        )


def _check_tools(tools: Any) -> None:
    """Each tool's keys are keys of the SDK's ``TypedDict`` of its ``type``."""
    if tools is None:
        return
    if not isinstance(tools, list):
        raise RequestRejectedError("tools: Input should be a valid list")
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise RequestRejectedError(f"tools.{i}: Input should be a valid dictionary")
        kind = tool.get("type", "custom")
        typed = _TOOL_TYPES.get(kind)
        if typed is None:
            raise RequestRejectedError(f"tools.{i}.type: unknown tool type {kind!r}")
        extra = sorted(set(tool) - set(typing.get_type_hints(typed)))
        if extra:
            raise RequestRejectedError(f"tools.{i}.{extra[0]}: Extra inputs are not permitted")
        _check_cache_control(tool, f"tools.{i}")


def _check_system(system: Any) -> None:
    """``system`` is a string or a list of text blocks."""
    if system is None or isinstance(system, str):
        return
    if not isinstance(system, list):
        raise RequestRejectedError("system: Input should be a valid string or list")
    for i, block in enumerate(system):
        _check_block(block, f"system.{i}", {"text"})


def _cache_breakpoints(body: dict[str, Any]) -> int:
    """Blocks carrying ``cache_control``: tools, system blocks, message blocks and the
    blocks inside tool results."""
    system = body.get("system")
    items: list[Any] = [*(body.get("tools") or []), *(system if isinstance(system, list) else [])]
    for message in body["messages"]:
        content = message["content"]
        for block in content if isinstance(content, list) else []:
            items.append(block)
            inner = block.get("content") if block.get("type") == "tool_result" else None
            items.extend(inner if isinstance(inner, list) else [])
    return sum(1 for item in items if isinstance(item, dict) and item.get("cache_control"))


def _merged_turns(messages: list[Any]) -> list[tuple[str, list[Any]]]:
    """Consecutive messages of one role merged into one turn, as the API does.

    The API takes two messages of one role in a row: the SDK's documentation of ``messages``
    (``MessageCreateParams``, from the API reference) says "Consecutive ``user`` or
    ``assistant`` turns in your request will be combined into a single turn". So they are
    not refused here; the rules on tool results below apply to the merged turns."""
    turns: list[tuple[str, list[Any]]] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or set(message) - {"role", "content"}:
            extra = sorted(set(message) - {"role", "content"}) if isinstance(message, dict) else []
            raise RequestRejectedError(
                f"messages.{i}.{extra[0] if extra else ''}: Extra inputs are not permitted"
            )
        role, content = message.get("role"), message.get("content")
        if role not in ("user", "assistant"):
            raise RequestRejectedError(f"messages.{i}.role: must be 'user' or 'assistant'")
        if isinstance(content, str):
            blocks: list[Any] = [{"type": "text", "text": content}]
        elif isinstance(content, list):
            for j, block in enumerate(content):
                _check_block(block, f"messages.{i}.content.{j}", set(_BLOCK_TYPES))
            blocks = content
        else:
            raise RequestRejectedError(
                f"messages.{i}.content: must be a string or a list of blocks"
            )
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, list(blocks)))
    return turns


def validate_request(body: Any, *, betas: Iterable[str] = ()) -> None:
    """Raise :class:`RequestRejectedError` where the real Messages API would answer 400."""
    if not isinstance(body, dict):
        raise RequestRejectedError("body must be a JSON object")
    betas = set(betas)
    allowed = set(
        typing.get_type_hints(BetaCreateParams if betas else MessageCreateParamsNonStreaming)
    )
    extra = sorted(set(body) - allowed)
    if extra:
        raise RequestRejectedError(f"{extra[0]}: Extra inputs are not permitted")
    if not isinstance(body.get("model"), str) or not isinstance(body.get("max_tokens"), int):
        raise RequestRejectedError("model and max_tokens are required")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestRejectedError("messages: at least one message is required")
    turns = _merged_turns(messages)
    if turns[0][0] != "user":
        raise RequestRejectedError("messages: the first message must use the user role")
    for index, (role, blocks) in enumerate(turns):
        if role != "assistant":
            continue
        calls = {b["id"] for b in blocks if b.get("type") == "tool_use"}
        if not calls:
            continue
        answers = turns[index + 1][1] if index + 1 < len(turns) else []
        answered = {b["tool_use_id"] for b in answers if b.get("type") == "tool_result"}
        if index + 1 < len(turns) and calls - answered:
            raise RequestRejectedError(
                f"tool_use ids were found without tool_result blocks immediately after: "
                f"{', '.join(sorted(calls - answered))}"
            )
        leading = list(itertools.takewhile(lambda b: b.get("type") == "tool_result", answers))
        if index + 1 < len(turns) and len(leading) < len(calls):
            # the API's own words (a 400 quoted in public bug reports)
            raise RequestRejectedError(
                f"messages: Did not find {len(calls)} tool_result block(s) at the beginning "
                "of this message. Messages following tool_use blocks must begin with a "
                "matching number of tool_result blocks."
            )
    for index, (_, blocks) in enumerate(turns):
        previous = turns[index - 1][1] if index else []
        calls = {b["id"] for b in previous if b.get("type") == "tool_use"}
        for block in blocks:
            if block.get("type") == "tool_result" and block["tool_use_id"] not in calls:
                raise RequestRejectedError(
                    f"unexpected tool_use_id found in tool_result blocks: {block['tool_use_id']}"
                )
    _check_system(body.get("system"))
    _check_tools(body.get("tools"))
    breakpoints = _cache_breakpoints(body)
    if breakpoints > MAX_CACHE_BREAKPOINTS:
        raise RequestRejectedError(
            f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {breakpoints}."
        )
    for tool in body.get("tools") or []:
        needed = _COMPUTER_BETAS.get(tool.get("type", "")) if isinstance(tool, dict) else None
        if needed and needed not in betas:
            raise RequestRejectedError(f"tool type {tool['type']!r} requires the {needed!r} beta")


def text_reply(text: str, **usage: int) -> Reply:
    """A reply that ends the turn with ``text``."""
    return {"content": [{"type": "text", "text": text}], "usage": usage}


def tool_use_reply(
    name: str,
    tool_input: dict[str, Any],
    *,
    toolset_name: str | None = None,
    text: str | None = None,
) -> Reply:
    """A reply calling one tool (``toolset_name="computer"`` for the toolset shape)."""
    block: dict[str, Any] = {
        "type": "tool_use",
        "id": f"toolu_standin{next(_ids):06d}",
        "name": name,
        "input": tool_input,
    }
    if toolset_name is not None:
        block["toolset_name"] = toolset_name
    content = [{"type": "text", "text": text}] if text else []
    return {"content": [*content, block]}


class MessagesApiStandIn:
    """An HTTP server on 127.0.0.1 answering the Messages API from a script."""

    def __init__(
        self, script: Iterable[ScriptEntry] | Callable[[dict[str, Any]], Reply] = ()
    ) -> None:
        self._policy = script if callable(script) else None
        self._script: list[ScriptEntry] = [] if callable(script) else list(script)
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        """Every valid request body received, in order."""
        self.rejected: list[str] = []
        """The error text of every rejected request."""
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def add(self, *entries: ScriptEntry) -> None:
        """Append replies to the script."""
        with self._lock:
            self._script.extend(entries)

    @property
    def remaining(self) -> int:
        """Scripted replies not used yet."""
        return len(self._script)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``: pass it to ``anthropic.Anthropic(base_url=...)``."""
        if self._server is None:
            raise RuntimeError("the stand-in is not running; use it as a context manager")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def client(self, **options: Any) -> anthropic.Anthropic:
        """A real ``anthropic.Anthropic`` client pointed at this server (no retries)."""
        options.setdefault("max_retries", 0)
        return anthropic.Anthropic(base_url=self.base_url, api_key="stand-in-key", **options)

    def __enter__(self) -> MessagesApiStandIn:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Listen on a free port of 127.0.0.1 in a background thread."""
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                betas = [
                    b.strip() for b in (self.headers.get("anthropic-beta") or "").split(",") if b
                ]
                try:
                    status, payload = stand_in._answer(self.path, raw, betas)
                except Exception as exc:  # a bug in a scripted reply: answer, don't hang up
                    status, payload = 500, _error("api_error", f"{type(exc).__name__}: {exc}")
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Shut the server down."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def _answer(self, path: str, raw: bytes, betas: list[str]) -> tuple[int, dict[str, Any]]:
        if not path.startswith("/v1/messages"):
            return 404, _error("not_found_error", f"no route {path}")
        try:
            body = json.loads(raw)
            validate_request(body, betas=betas)
        except (json.JSONDecodeError, RequestRejectedError) as exc:
            with self._lock:
                self.rejected.append(str(exc))
            return 400, _error("invalid_request_error", str(exc))
        with self._lock:
            self.requests.append(body)
            entry = self._script.pop(0) if self._script else self._policy
        if entry is None:
            return 500, _error("api_error", "the stand-in's script has no reply left")
        reply = entry(body) if callable(entry) else entry
        return 200, _message(body, reply)


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def _png_tokens(data: str) -> int:
    """Tokens of a base64 PNG as the API prices images: about width * height / 750."""
    try:
        header = base64.b64decode(data[:44])
        width, height = int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")
    except (binascii.Error, ValueError):
        return 1000
    return max(1, width * height // 750) if header[:8] == b"\x89PNG\r\n\x1a\n" else 1000


def estimate_tokens(value: Any) -> int:
    """A rough token count: text at four characters a token, images by their pixel area."""
    if isinstance(value, str):
        return len(value) // 4
    if isinstance(value, list):
        return sum(estimate_tokens(item) for item in value)
    if isinstance(value, dict):
        source = value.get("source")
        if value.get("type") == "image" and isinstance(source, dict):
            return _png_tokens(str(source.get("data", "")))
        return sum(estimate_tokens(item) for item in value.values())
    return 1


def _message(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    content = reply["content"]
    calls = any(block.get("type") == "tool_use" for block in content)
    request = {key: body.get(key) for key in ("system", "messages", "tools")}
    usage = {
        "input_tokens": max(1, estimate_tokens(request)),
        "output_tokens": max(1, estimate_tokens(content)),
        **(reply.get("usage") or {}),
    }
    return {
        "id": f"msg_standin{next(_ids):06d}",
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "content": content,
        "stop_reason": reply.get("stop_reason", "tool_use" if calls else "end_turn"),
        "stop_sequence": None,
        "usage": usage,
    }
