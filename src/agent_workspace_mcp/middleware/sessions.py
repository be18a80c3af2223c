"""Apply a session's `x-workspace-subpath` confinement to every call in that session.

The HTTP layer (`transports.guards.SessionGuard`) validates the header when a session
opens and records it; this middleware looks the session up for each MCP request and
sets the context variable the workspace registry honours. A sessionless request (the
2026-07-28 protocol, or `--stateless`) is its own session: its header applies to it.
"""

from fastmcp.server.dependencies import get_http_request
from fastmcp.server.middleware import Middleware, MiddlewareContext

from ..core.workspaces import SESSION_SUBPATH, Subpath
from ..requestctx import SUBPATH_HEADER, parse_subpath
from ..services import Services

# Set by transports.legacy_sse on the scope of each SSE stream (a key, not an import:
# middleware does not import transports).
LEGACY_STREAM_KEY = "awm_subpath"


class SubpathMiddleware(Middleware):
    def __init__(self, services: Services) -> None:
        self.services = services

    def _subpath(self) -> Subpath | None:
        try:
            request = get_http_request()
        except RuntimeError:
            return None  # stdio / in-memory: no HTTP request, no subpath
        state = request.scope.get("state") or {}
        if LEGACY_STREAM_KEY in state:  # a legacy SSE stream: bound when it opened
            return state[LEGACY_STREAM_KEY]
        session_id = request.headers.get("mcp-session-id")
        if session_id:
            info = self.services.sessions.get(session_id)
            return info.subpath if info is not None else None
        raw = request.headers.get(SUBPATH_HEADER)
        if raw is None:
            return None
        return parse_subpath(self.services.registry.primary, raw)

    async def on_request(self, context: MiddlewareContext, call_next):
        token = SESSION_SUBPATH.set(self._subpath())
        try:
            return await call_next(context)
        finally:
            SESSION_SUBPATH.reset(token)
