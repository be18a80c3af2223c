"""The former HTTP+SSE transport (`GET /sse` + `POST /messages/?session_id=`), for old
clients, served next to Streamable HTTP on the same port and behind the same layers.

FastMCP builds the SSE app (`http_app(transport="sse")`); this module adds what our
Streamable HTTP sessions have: `LegacySessionGuard` reads the `endpoint` event of each
stream to learn its session id and records it with the subject that opened the stream
and its `x-workspace-subpath` (resolved once, when the stream opens). A message for a
session id we did not record, or from another subject, is answered 404, as on `/mcp`.
Authentication still comes first (FastMCP's 401 with `WWW-Authenticate`).
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs

from fastmcp import FastMCP
from starlette.middleware import Middleware

from ..core.errors import WorkspaceError
from ..core.limits import HTTP_TRACKED_SESSIONS
from ..requestctx import SUBPATH_HEADER
from ..services import Services
from .guards import (
    FrameGuard,
    SessionInfo,
    _headers,
    _plain,
    anonymous,
    repeated_header,
    resolve_subpath,
    session_cap,
    subject_of,
    verified,
)

SSE_PATH = "/sse"
MESSAGE_PATH = "/messages/"
_ENDPOINT = re.compile(rb"event: endpoint\r?\ndata: [^\r\n]*session_id=([0-9a-fA-F-]+)")

# SSE streams are long-lived requests: the subpath a stream was opened with is attached
# to its scope (`state`), where SubpathMiddleware finds it for every call on the stream.
STATE_KEY = "awm_subpath"


class LegacySessionGuard:
    def __init__(self, app, services: Services) -> None:
        self.app, self.services = app, services

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if anonymous(scope):
            await self.app(scope, receive, send)  # FastMCP answers 401 first
            return
        path = scope["path"]
        if path.rstrip("/") == SSE_PATH:
            await self._open_stream(scope, receive, send)
        elif path.startswith(MESSAGE_PATH.rstrip("/")):
            await self._message(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def _open_stream(self, scope, receive, send) -> None:
        twice = repeated_header(scope)
        if twice:
            await _plain(send, 400, f"{twice} is sent more than once; send it once")
            return
        raw = _headers(scope).get(SUBPATH_HEADER)
        subpath = None
        if raw is not None:
            try:
                subpath = resolve_subpath(self.services, raw)
            except WorkspaceError as exc:
                await _plain(send, 400, str(exc))
                return
        _bind(scope, subpath)
        subject = subject_of(scope)
        sessions = self.services.sessions
        # An open stream is a session: the same caps as /mcp (per credential, in all).
        full = session_cap(self.services, subject)
        if full is not None:
            await _plain(send, 503, full)
            return
        recorded: str | None = None

        async def remember(message) -> None:
            nonlocal recorded
            if not recorded and message["type"] == "http.response.body":
                match = _ENDPOINT.search(message.get("body", b""))
                if match:
                    session_id = match.group(1).decode().replace("-", "").lower()
                    recorded = f"sse:{session_id}"
                    sessions[recorded] = SessionInfo(subject, subpath, raw)
                    while len(sessions) > HTTP_TRACKED_SESSIONS:
                        sessions.pop(next(iter(sessions)))
                    verified(scope, f"sse-{session_id}")
            await send(message)

        try:
            await self.app(scope, receive, remember)
        finally:
            if recorded is not None:  # the stream closed: its session is over
                sessions.pop(recorded, None)

    async def _message(self, scope, receive, send) -> None:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        values = query.get("session_id") or [""]
        if len(values) != 1 or repeated_header(scope):
            # Our guard and the SDK must read the same session: one value, or none.
            await _plain(send, 400, "session_id (or a session header) is given more than once")
            return
        session_id = values[0].replace("-", "").lower()
        info = self.services.sessions.get(f"sse:{session_id}")
        if info is None or info.subject != subject_of(scope):
            await _plain(send, 404, "session not found")
            return
        # The calls of this message run with the subpath the stream was opened with,
        # whichever request (the stream's or this POST) the framework hands the tools,
        # and are attributed to the stream's session, never to a header the client chose.
        _bind(scope, info.subpath)
        verified(scope, f"sse-{session_id}")
        await self.app(scope, receive, send)


def _bind(scope, subpath) -> None:
    """Attach a stream's subpath to this request's own state (a copy: never shared)."""
    scope["state"] = {**(scope.get("state") or {}), STATE_KEY: subpath}


def build_legacy_sse_app(app: FastMCP, services: Services):
    return app.http_app(
        transport="sse",
        path=SSE_PATH,
        middleware=[Middleware(LegacySessionGuard, services=services), Middleware(FrameGuard)],
    )


class PathDispatch:
    """`/sse` and `/messages/` (and `GET /mcp` without a session, the fallback old
    clients probe) to the legacy app, everything else (and the lifespan) to Streamable
    HTTP: one port, one lifespan, one set of outer layers."""

    def __init__(self, main, legacy, *, fallback: bool = True) -> None:
        self.main, self.legacy, self.fallback = main, legacy, fallback

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            path = scope["path"]
            if path.rstrip("/") == SSE_PATH or path.startswith(MESSAGE_PATH.rstrip("/")):
                await self.legacy(scope, receive, send)
                return
            if self.fallback and _legacy_fallback(scope):
                # An old client probing `GET /mcp` without a session: the SSE handshake.
                await self.legacy(
                    {**scope, "path": SSE_PATH, "raw_path": SSE_PATH.encode()}, receive, send
                )
                return
        await self.main(scope, receive, send)


def _legacy_fallback(scope) -> bool:
    if scope["method"] != "GET" or scope["path"].rstrip("/") != "/mcp":
        return False
    headers = {k.lower(): v for k, v in scope.get("headers", [])}
    return b"mcp-session-id" not in headers and b"text/event-stream" in headers.get(b"accept", b"")
