"""The ASGI guards in front of FastMCP, each a small callable with one job (the role of
the MCP SDK's `transport_security.py`), shared by Streamable HTTP (`http.py`) and the
legacy HTTP+SSE transport (`legacy_sse.py`):

1. `OriginHostGuard`: DNS-rebinding protection (MCP spec). A request whose `Origin` is
   not allowed, or whose `Host` is not the bound host (or an `--allowed-host`), gets 403
   before anything else runs. FastMCP 4.2 leaves its own guard off by default and
   answers a bad Host with 421; ours says 403 for both.
2. `ApiKeyHeader`: `x-api-key: T` is accepted as `Authorization: Bearer T`, and a
   refused credential is told what this server accepts.
3. After FastMCP's bearer auth, `SessionGuard`: a session id belongs to the subject that
   opened it (another subject gets 404, as if it did not exist); `x-workspace-subpath`
   is fixed when the session opens. `FrameGuard` answers a malformed JSON-RPC frame
   with a JSON-RPC error.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterable
from typing import Any

from mcp.shared.inbound import validate_mcp_param_headers

from ..configuration import is_loopback, is_wildcard
from ..core.errors import WorkspaceError
from ..core.limits import (
    HTTP_FRAME_MAX_BYTES,
    HTTP_TRACKED_SESSIONS,
)
from ..core.workspaces import Subpath
from ..origins import refusal
from ..requestctx import SUBPATH_HEADER, VERIFIED_SESSION, parse_subpath, subject_of_token
from ..services import Services, SessionInfo
from .frames import FRAME_ID_SCAN_BYTES, BadFrame, check_frame, too_large

log = logging.getLogger("agent_workspace_mcp")


MCP_PATH = "/mcp"


def allowed_hosts(host: str, port: int, extra: Iterable[str]) -> set[str] | None:
    """Host header values we answer; None means any (wildcard bind without --allowed-host)."""
    extra = [h.lower() for h in extra]
    if is_wildcard(host) and not extra:
        return None
    names = {host.lower()}
    if is_loopback(host):
        names |= {"127.0.0.1", "localhost", "[::1]"}
    hosts = set()
    for name in names | set(extra):
        hosts.add(name)
        if ":" not in name.replace("[::1]", ""):
            hosts.add(f"{name}:{port}")
    return hosts


def allowed_origins(host: str, port: int, cors: Iterable[str]) -> set[str]:
    origins = {o.rstrip("/").lower() for o in cors}
    if is_loopback(host):
        for name in ("127.0.0.1", "localhost", "[::1]"):
            origins |= {f"http://{name}:{port}", f"https://{name}:{port}"}
    elif not is_wildcard(host):
        origins |= {f"http://{host}:{port}", f"https://{host}:{port}"}
    return origins


async def _plain(send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _headers(scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


# Headers that name a session or its root: sent twice, one layer could read the first
# value and another the last (the MCP SDK reads the last), so they are refused outright.
SINGLE_HEADERS = (b"mcp-session-id", SUBPATH_HEADER.encode())


def repeated_header(scope) -> str | None:
    """The first of SINGLE_HEADERS the request carries more than once, or None."""
    seen: set[bytes] = set()
    for key, _ in scope.get("headers", []):
        name = key.lower()
        if name in SINGLE_HEADERS:
            if name in seen:
                return name.decode("latin-1")
            seen.add(name)
    return None


class OriginHostGuard:
    def __init__(self, app, hosts: set[str] | None, origins: set[str]) -> None:
        self.app, self.hosts, self.origins = app, hosts, origins

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            headers = _headers(scope)
            what = refusal(
                headers.get("host", ""),
                headers.get("origin"),
                hosts=self.hosts,
                origins=self.origins,
            )
            if what is not None:
                await _plain(send, 403, f"{what} not allowed")
                return
        await self.app(scope, receive, send)


class ApiKeyHeader:
    """`x-api-key: T` counts as `Authorization: Bearer T` (when no Authorization is sent),
    and an empty 401 from the auth layer gets a short JSON body saying what is missing."""

    def __init__(self, app, on_refused=None, refused_why: str | None = None) -> None:
        self.app = app
        self.on_refused = on_refused  # counts auth failures (metrics)
        # What a rejected token means here, in place of FastMCP's OAuth advice ("clear
        # authentication tokens in your MCP client ... re-register"), which a static
        # token or API key never needs (issue 29).
        self.refused_why = refused_why

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw = scope.get("headers", [])
        names = {k.lower() for k, _ in raw}
        authorization = next((v for k, v in raw if k.lower() == b"authorization"), None)
        sent_credentials = authorization is not None or b"x-api-key" in names
        if b"x-api-key" in names and b"authorization" not in names:
            key = next(v for k, v in raw if k.lower() == b"x-api-key")
            scope = {**scope, "headers": [*raw, (b"authorization", b"Bearer " + key)]}
        held: dict | None = None

        async def explained(message) -> None:
            nonlocal held
            if message["type"] == "http.response.start" and message["status"] == 401:
                if self.on_refused is not None:
                    self.on_refused()
                held = message  # wait for the body: an empty one gets an explanation
                return
            if held is not None and message["type"] == "http.response.body":
                start, held = held, None
                if not message.get("body") and not message.get("more_body"):
                    if not sent_credentials:
                        why = "missing credentials: send Authorization: Bearer TOKEN (or x-api-key)"
                    elif authorization and not authorization.lower().startswith(b"bearer "):
                        why = "the Authorization header must be 'Bearer TOKEN'"
                    else:
                        why = "invalid or expired token"
                    body = json.dumps({"error": why}).encode()
                    headers = [
                        (k, v)
                        for k, v in start.get("headers", [])
                        if k.lower() not in (b"content-length", b"content-type")
                    ]
                    headers += [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode()),
                    ]
                    await send({**start, "headers": headers})
                    await send({"type": "http.response.body", "body": body})
                    return
                body = message.get("body", b"")
                if self.refused_why and not message.get("more_body") and b"invalid_token" in body:
                    await _reworded(send, start, self.refused_why)
                    return
                await send(start)
            await send(message)

        await self.app(scope, receive, explained)


async def _reworded(send, start: dict, why: str) -> None:
    """A 401 for a rejected token, with our description in the body and the header."""
    body = json.dumps({"error": "invalid_token", "error_description": why}).encode()
    headers = []
    for key, value in start.get("headers", []):
        name = key.lower()
        if name == b"www-authenticate":
            value = re.sub(
                rb'error_description="[^"]*"', b'error_description="' + why.encode() + b'"', value
            )
        if name != b"content-length":
            headers.append((key, value))
    headers.append((b"content-length", str(len(body)).encode()))
    await send({**start, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def anonymous(scope) -> bool:
    """Whether the auth layer found no valid credentials (it answers 401 itself)."""
    user = scope.get("user")
    return user is not None and not getattr(user, "is_authenticated", False)


class FrameGuard:
    """Every POSTed frame read within HTTP_FRAME_MAX_BYTES and checked before the SDK
    sees it (issue 19): a bad one gets a JSON-RPC error body (400, or 413 when too
    large) instead of the SDK's pydantic dump or plain-text 413. Runs after the auth
    layer, so an anonymous caller's body is never read."""

    def __init__(self, app, services: Services | None = None) -> None:
        self.app = app
        # The workspace argument is advertised (and so mirrored as Mcp-Param-Workspace)
        # only while several workspaces are configured (middleware/lean_list).
        self.routed = services is not None and len(services.registry) > 1

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        if anonymous(scope):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > HTTP_FRAME_MAX_BYTES:
                head = b"".join(chunks)[:FRAME_ID_SCAN_BYTES] or chunk[:FRAME_ID_SCAN_BYTES]
                await _json_rpc_error(send, 413, too_large(HTTP_FRAME_MAX_BYTES, head))
                return
            chunks.append(chunk)
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        checked = check_frame(body)
        if isinstance(checked, BadFrame):
            await _json_rpc_error(send, 400, checked)
            return
        if self.routed and (refused := _param_mismatch(scope, checked)) is not None:
            await _plain_json(send, 400, refused)
            return
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


# The one x-mcp-header our tools declare (tools/base.WorkspaceArg), as listed.
_ROUTED_SCHEMA = {
    "type": "object",
    "properties": {"workspace": {"type": "string", "x-mcp-header": "Workspace"}},
}


def _param_mismatch(scope, message: Any) -> bytes | None:
    """A 2026-07-28 tools/call whose Mcp-Param-Workspace disagrees with (or is missing
    for) its body's workspace: the JSON-RPC error to answer. The SDK checks this only
    against schemas it has cached from a tools/list, so on a fresh process (every start,
    every worker) it let any header through until some client listed the tools."""
    root = getattr(message, "root", message)
    if getattr(root, "method", None) != "tools/call":
        return None
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
    if headers.get("mcp-protocol-version", "") < "2026-07-28":
        return None  # the handshake protocols have no Mcp-Param-* headers
    params = getattr(root, "params", None) or {}
    arguments = params.get("arguments") if isinstance(params, dict) else None
    if arguments is not None and not isinstance(arguments, dict):
        return None  # the SDK answers a malformed call itself
    rejection = validate_mcp_param_headers(_ROUTED_SCHEMA, arguments or {}, headers)
    if rejection is None:
        return None
    error = {"code": rejection.code, "message": rejection.message}
    if rejection.data is not None:
        error["data"] = rejection.data
    return json.dumps({"jsonrpc": "2.0", "id": getattr(root, "id", None), "error": error}).encode()


async def _plain_json(send, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _json_rpc_error(send, status: int, bad: BadFrame) -> None:
    body = bad.reply()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def expire_idle(sessions: dict[str, SessionInfo], idle: float) -> None:
    """Forget sessions idle longer than `idle` seconds (the SDK closes its own then too);
    their ids get 404, so the client opens a new one."""
    cutoff = time.monotonic() - idle
    # A legacy SSE stream's entry lives as long as the stream (legacy_sse drops it).
    stale = [k for k, v in sessions.items() if v.used < cutoff and not k.startswith("sse:")]
    for session_id in stale:
        sessions.pop(session_id, None)


def session_cap(services: Services, subject: str | None) -> str | None:
    """Why a new session (or legacy SSE stream) would be one too many, or None."""
    sessions, settings = services.sessions, services.settings
    if len(sessions) >= settings.sessions_max:
        return (
            f"this server has {settings.sessions_max} open sessions, its limit "
            "(--sessions-max); retry when idle ones expire"
        )
    mine = sum(1 for info in sessions.values() if info.subject == subject)
    if mine >= settings.sessions_per_credential:
        return (
            f"this credential has {settings.sessions_per_credential} open sessions, its limit "
            "(--sessions-per-credential); close one (DELETE /mcp with its mcp-session-id, "
            "or end an SSE stream) or wait for idle ones to expire"
        )
    return None


def subject_of(scope) -> str | None:
    """The subject of the request's verified token (set by FastMCP's auth middleware)."""
    return subject_of_token(getattr(scope.get("user"), "access_token", None))


def resolve_subpath(services: Services, raw: str) -> Subpath:
    return parse_subpath(services.registry.primary, raw)


def verified(scope, session_id: str) -> None:
    """Attach the session this guard checked to the request (requestctx.VERIFIED_SESSION);
    the scope's state is copied, never shared with another request."""
    scope["state"] = {**(scope.get("state") or {}), VERIFIED_SESSION: session_id}


class SessionGuard:
    def __init__(self, app, services: Services) -> None:
        self.app, self.services = app, services
        self._swept = 0.0  # when idle sessions were last swept (for the caps' counts)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or not scope["path"].rstrip("/").endswith(MCP_PATH):
            await self.app(scope, receive, send)
            return
        if anonymous(scope):
            # Authentication answers first (401 + WWW-Authenticate from FastMCP's auth
            # layer), so a session id is never checked, or confirmed, for an anonymous caller.
            await self.app(scope, receive, send)
            return
        twice = repeated_header(scope)
        if twice:
            await _plain(send, 400, f"{twice} is sent more than once; send it once")
            return
        headers = _headers(scope)
        sessions = self.services.sessions
        idle = self.services.settings.session_idle_timeout
        if time.monotonic() - self._swept >= 1.0:  # a request checks its own session's age
            self._swept = time.monotonic()
            expire_idle(sessions, idle)
        subject = subject_of(scope)
        session_id = headers.get("mcp-session-id")
        raw_subpath = headers.get(SUBPATH_HEADER)
        if session_id:
            info = sessions.get(session_id)
            # Every session is recorded when it opens; an id we do not know (forged, ended,
            # expired, or forgotten past the bound) must not fall back to the whole workspace.
            if info is not None and time.monotonic() - info.used > idle:
                sessions.pop(session_id, None)
                info = None
            if info is None or info.subject != subject:
                await _plain(send, 404, "session not found")
                return
            info.used = time.monotonic()
            if raw_subpath is not None and raw_subpath != info.raw_subpath:
                try:
                    wanted = resolve_subpath(self.services, raw_subpath)
                except WorkspaceError:
                    wanted = None
                if wanted != info.subpath:
                    await _plain(send, 400, f"{SUBPATH_HEADER} is fixed when the session opens")
                    return
            if scope["method"] == "DELETE":
                sessions.pop(session_id, None)
            verified(scope, session_id)
            await self.app(scope, receive, send)
            return
        subpath = None
        if raw_subpath is not None:
            try:
                subpath = resolve_subpath(self.services, raw_subpath)
            except WorkspaceError as exc:
                await _plain(send, 400, str(exc))
                return
        # A POST without a session id opens one only on the handshake protocols (it is
        # their `initialize`); a 2026-07-28 request names its version and stays sessionless.
        opens = headers.get("mcp-protocol-version", "") < "2026-07-28"
        if not self.services.settings.stateless and scope["method"] == "POST" and opens:
            full = session_cap(self.services, subject)
            if full is not None:
                await _plain(send, 503, full)
                return

        async def remember_session(message) -> None:
            if message["type"] == "http.response.start":
                for key, value in message.get("headers", []):
                    if key.lower() == b"mcp-session-id":
                        sessions[value.decode("latin-1")] = SessionInfo(
                            subject, subpath, raw_subpath
                        )
                        while len(sessions) > HTTP_TRACKED_SESSIONS:
                            sessions.pop(next(iter(sessions)))  # dicts keep insertion order
            await send(message)

        await self.app(scope, receive, remember_session)


def refused_why(settings) -> str | None:
    """What a rejected token means for this server's kind of credentials."""
    if settings.jwt_secret or settings.jwt_public_key or settings.jwks_url:
        return (
            "the JWT was not accepted (its signature, issuer, audience or expiry did not "
            "match what the server was given); ask the operator for a current token"
        )
    if settings.token or settings.api_keys:
        return (
            "the bearer token was not accepted: the server takes the token it was started "
            "with (--token or MCP_TOKEN) or one of its --api-key values"
        )
    return None
