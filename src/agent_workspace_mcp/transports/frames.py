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


def too_large(limit: int) -> BadFrame:
    return BadFrame(INVALID_REQUEST, f"invalid request: the frame is larger than {limit:,} bytes")


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
        return BadFrame(PARSE_ERROR, f"parse error: the frame is not UTF-8 ({where})")
    # pydantic's parser refuses what Python's accepts (lone surrogates, deep nesting);
    # reading the id with the lenient parser lets the client match the reply.
    try:
        lenient = json.loads(raw)
    except (ValueError, RecursionError):
        return BadFrame(PARSE_ERROR, f"parse error: {echo(str(exc))}")
    if "recursion limit" in str(exc):
        why = "the frame nests deeper than the server reads"
    else:
        why = "a string holds a lone UTF-16 surrogate escape (like \\ud800 without its pair)"
    return BadFrame(PARSE_ERROR, f"parse error: {why}", _readable_id(lenient))


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
