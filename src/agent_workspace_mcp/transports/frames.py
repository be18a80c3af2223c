"""What a JSON-RPC frame must be before the MCP SDK sees it, and the reply when it is not.

The SDK's stdio reader drops a frame it cannot parse without a word, and its HTTP
handler answers with a multi-line pydantic dump; either way a client waiting on its
request id learns nothing. JSON-RPC 2.0 asks for an error reply: -32700 when the text
is not JSON we accept, -32600 when it is JSON but not a message, with the request's id
when it can be read and null otherwise (issue 19). Every check here is bounded: the
transport caps the frame's size before we see it, and the parsers cap nesting.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import pydantic_core
from mcp_types import jsonrpc_message_adapter

from ..core.echo import echo
from ..core.limits import FRAME_ID_MAX_CHARS, FRAME_METHOD_MAX_CHARS

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


@dataclass(frozen=True)
class BadFrame:
    code: int
    message: str
    id: str | int | None = None

    def reply(self) -> bytes:
        error = {"code": self.code, "message": self.message}
        body = {"jsonrpc": "2.0", "id": self.id, "error": error}
        return json.dumps(body, separators=(",", ":")).encode()


def too_large(limit: int, head: bytes = b"", tail: bytes = b"") -> BadFrame:
    return BadFrame(
        INVALID_REQUEST,
        f"invalid request: the frame is larger than {limit:,} bytes",
        frame_id(head, tail),
    )


# A frame's `id` where no parser can read the frame (too large, nested too deep, not
# UTF-8): clients put it near the start (`{"jsonrpc":"2.0","id":7,...`) or last, and a
# reply carrying it ends the client's wait at once instead of at its own timeout.
FRAME_ID_SCAN_BYTES = 64 * 1024
_ID_VALUE = re.compile(rb'\s*:\s*("(?:[^"\\]|\\.){0,%d}"|-?[0-9]{1,19})' % FRAME_ID_MAX_CHARS)
_TAIL_ID = re.compile(
    rb'[,{]\s*"id"\s*:\s*("(?:[^"\\]|\\.){0,%d}"|-?[0-9]{1,19})\s*\}\s*\Z' % FRAME_ID_MAX_CHARS
)


def frame_id(head: bytes, tail: bytes = b"") -> str | int | None:
    """The top-level `id` of a frame seen only in part: read from its head, where a
    scanner tracks nesting so an `id` inside params never counts, or else from its last
    member (`..., "id": 7}` at the very end)."""
    found = _head_id(head[:FRAME_ID_SCAN_BYTES])
    if found is None and tail:
        match = _TAIL_ID.search(tail[-FRAME_ID_SCAN_BYTES:])
        found = _id_token(match.group(1)) if match else None
    return found


def _head_id(head: bytes) -> str | int | None:
    depth, i, n = 0, 0, len(head)
    while i < n:
        byte = head[i]
        if byte == 0x22:  # a string: skip it whole, escapes included
            j = i + 1
            while j < n and head[j] != 0x22:
                j += 2 if head[j] == 0x5C else 1
            if j >= n:
                return None
            if depth == 1 and head[i + 1 : j] == b"id":
                match = _ID_VALUE.match(head, j + 1)
                if match:
                    return _id_token(match.group(1))
            i = j + 1
            continue
        if byte in b"{[":
            depth += 1
        elif byte in b"}]":
            depth -= 1
        i += 1
    return None


def _id_token(token: bytes) -> str | int | None:
    try:
        return _readable_id({"id": json.loads(token)})
    except ValueError:
        return None


def check_frame(raw: bytes) -> BadFrame | Any:
    """The parsed JSON-RPC message, or what to answer when the frame is not one."""
    try:
        value = pydantic_core.from_json(raw)
    except ValueError as exc:
        return _unparsable(raw, exc)
    problem = _shape_problem(value)
    if problem is not None:
        return problem
    try:
        return jsonrpc_message_adapter.validate_python(value, by_name=False)
    except ValueError:
        return BadFrame(
            INVALID_REQUEST,
            "invalid request: not a JSON-RPC 2.0 request, notification or response",
            _readable_id(value),
        )


def _unparsable(raw: bytes, exc: ValueError) -> BadFrame:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as bad:
        where = f"byte 0x{raw[bad.start]:02x} at offset {bad.start}"
        return BadFrame(
            PARSE_ERROR, f"parse error: the frame is not UTF-8 ({where})", frame_id(raw, raw)
        )
    if "recursion limit" in str(exc):
        why = "the frame nests deeper than the server reads"
    elif "surrogate" in str(exc):
        why = "a string holds a lone UTF-16 surrogate escape (like \\ud800 without its pair)"
    else:
        why = echo(str(exc))
    # pydantic's parser refuses what Python's accepts (lone surrogates, some nesting);
    # reading the id with the lenient parser lets the client match the reply, and past
    # its limits the id is read from the frame's head or tail.
    try:
        request_id = _readable_id(json.loads(raw))
    except (ValueError, RecursionError):
        request_id = frame_id(raw, raw)
    return BadFrame(PARSE_ERROR, f"parse error: {why}", request_id)


def _readable_id(value: Any) -> str | int | None:
    if not isinstance(value, dict):
        return None
    found = value.get("id")
    if isinstance(found, bool) or not isinstance(found, str | int):
        return None
    if isinstance(found, str) and len(found) > FRAME_ID_MAX_CHARS:
        return None
    return found


def _shape_problem(value: Any) -> BadFrame | None:
    """The usual ways a JSON value fails to be a message, each in its own sentence."""
    if isinstance(value, list):
        return BadFrame(
            INVALID_REQUEST,
            "invalid request: batches are not supported (MCP removed them in 2025-06-18); "
            "send one message per frame",
        )
    if not isinstance(value, dict):
        return BadFrame(INVALID_REQUEST, "invalid request: a frame must be a JSON object")
    found_id = value.get("id")
    bad_type = isinstance(found_id, bool) or not isinstance(found_id, str | int)
    null_in_error = found_id is None and "error" in value  # an error reply may carry id null
    if "id" in value and bad_type and not null_in_error:
        return BadFrame(INVALID_REQUEST, "invalid request: 'id' must be a string or an integer")
    if isinstance(found_id, str) and len(found_id) > FRAME_ID_MAX_CHARS:
        return BadFrame(
            INVALID_REQUEST, f"invalid request: 'id' is longer than {FRAME_ID_MAX_CHARS} characters"
        )
    request_id = _readable_id(value)
    if value.get("jsonrpc") != "2.0":
        return BadFrame(INVALID_REQUEST, "invalid request: 'jsonrpc' must be \"2.0\"", request_id)
    method = value.get("method")
    if "method" in value and not isinstance(method, str):
        return BadFrame(INVALID_REQUEST, "invalid request: 'method' must be a string", request_id)
    if isinstance(method, str) and len(method) > FRAME_METHOD_MAX_CHARS:
        return BadFrame(
            INVALID_REQUEST,
            f"invalid request: 'method' is longer than {FRAME_METHOD_MAX_CHARS} characters",
            request_id,
        )
    if sum(key in value for key in ("method", "result", "error")) != 1:
        return BadFrame(
            INVALID_REQUEST,
            "invalid request: a message has exactly one of 'method', 'result' and 'error'",
            request_id,
        )
    if value.get("params") is not None and not isinstance(value["params"], dict):
        return BadFrame(INVALID_REQUEST, "invalid request: 'params' must be an object", request_id)
    return None
