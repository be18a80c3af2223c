"""Streamable HTTP at `/mcp`, safe to expose: the guards (`guards.py`: Origin/Host, API
keys, sessions bound to subjects, an optional per-session workspace subpath, frames) in
front of FastMCP's app and auth, CORS only for explicit `--cors-origin`s, the legacy
HTTP+SSE transport (`/sse`, `legacy_sse.py`) on the same port, served by uvicorn.
"""

from __future__ import annotations

import contextlib
import os
from contextlib import asynccontextmanager
from typing import Any

from fastmcp import FastMCP
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware

from ..configuration import has_jwt
from ..core.operator import say
from ..requestctx import SUBPATH_HEADER
from ..services import Services
from .guards import (
    MCP_PATH,
    ApiKeyHeader,
    FrameGuard,
    OriginHostGuard,
    SessionGuard,
    allowed_hosts,
    allowed_origins,
    refused_why,
)
from .legacy_sse import PathDispatch, build_legacy_sse_app


def build_http_app(app: FastMCP, services: Services):
    """The ASGI application for `--http`, with cleanup on shutdown."""
    settings = services.settings
    inner = app.http_app(
        path=MCP_PATH,
        stateless_http=settings.stateless,
        session_idle_timeout=settings.session_idle_timeout,
        json_response=False,  # progress/log notifications need SSE responses
        middleware=[
            Middleware(SessionGuard, services=services),
            Middleware(FrameGuard, services=services),
        ],
    )
    wrapped_lifespan = inner.router.lifespan_context

    @asynccontextmanager
    async def lifespan(asgi_app):
        try:
            async with wrapped_lifespan(asgi_app):
                yield
        finally:
            services.shutdown.run()
            # With --workers the supervisor's own line ends the log; each worker names itself.
            worker = f"worker {os.getpid()} " if services.settings.workers > 1 else ""
            say(f"{worker}stopped, cleanup done")

    inner.router.lifespan_context = lifespan
    legacy = build_legacy_sse_app(app, services)
    # --stateless keeps the document's behaviour (GET /mcp is 405); the fallback needs sessions.
    refused = services.metrics.auth_failures.inc if services.metrics is not None else None
    asgi: Any = ApiKeyHeader(
        PathDispatch(inner, legacy, fallback=not settings.stateless),
        refused,
        refused_why(settings),
    )
    if settings.operator_token or has_jwt(settings):
        asgi = ConsoleMount(asgi, _console(services))
    if settings.cors_origins:
        asgi = CORSMiddleware(
            asgi,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=[
                "authorization",
                "content-type",
                "mcp-session-id",
                "mcp-protocol-version",
                "last-event-id",
                "x-api-key",
                SUBPATH_HEADER,
            ],
            expose_headers=["mcp-session-id", "www-authenticate"],
        )
    hosts = allowed_hosts(settings.host, settings.port, settings.allowed_hosts)
    origins = allowed_origins(settings.host, settings.port, settings.cors_origins)
    return OriginHostGuard(asgi, hosts, origins)


CONSOLE_PATH = "/console"
OPERATOR_SCOPE = "workspace:operate"  # a JWT scope that opens the console (issue 31)


def _console(services: Services):
    """The operator console at /console, for the operator token only (issue 31)."""
    from starlette.applications import Starlette
    from starlette.routing import Mount

    from ..console.app import Secrets, build_console
    from ..console.state import ConsoleState

    settings = services.settings
    state = ConsoleState(
        services.registry,
        journal_max_bytes=settings.journal_max_bytes,
        checkpoint_max_bytes=settings.checkpoint_max_bytes,
        job_dir=services.jobs.job_dir,
        live_sessions=lambda: [
            {"id": sid, "subject": info.subject, "subpath": info.raw_subpath}
            for sid, info in list(services.sessions.items())
        ],
    )
    signing = None
    if settings.workers > 1:  # a worker: sessions must be good at every worker
        from .workers import shared_key

        signing = shared_key(services.jobs.job_dir, "console sessions")
    keys = Secrets(
        operator=settings.operator_token, operator_jwt=_operator_jwt(settings), signing_key=signing
    )
    console = build_console(state, keys, allowed_hosts=None, base_path=CONSOLE_PATH)
    return Starlette(routes=[Mount(CONSOLE_PATH, app=console)])


def _operator_jwt(settings):
    """With JWT auth, a token whose scopes include OPERATOR_SCOPE opens the console."""
    if not has_jwt(settings):
        return None
    from .auth import JwtVerifier

    verifier = JwtVerifier(
        audience=settings.jwt_audience or "",
        issuer=settings.jwt_issuer,
        secret=settings.jwt_secret,
        public_key=settings.jwt_public_key,
        jwks_url=settings.jwks_url,
        algorithm=settings.jwt_algorithm,
    )

    async def allowed(token: str) -> bool:
        access = await verifier.verify_token(token)
        return access is not None and OPERATOR_SCOPE in (access.scopes or [])

    return allowed


class ConsoleMount:
    """/console goes to the console app, with its own credential (the operator token):
    never through the agents' auth, so an agent's token means nothing there."""

    def __init__(self, app, console) -> None:
        self.app, self.console = app, console

    async def __call__(self, scope, receive, send) -> None:
        path = scope.get("path", "") if scope["type"] in ("http", "websocket") else ""
        if path == CONSOLE_PATH or path.startswith(CONSOLE_PATH + "/"):
            await self.console(scope, receive, send)
        else:
            await self.app(scope, receive, send)


def _server_class(announce):
    import uvicorn

    class Server(uvicorn.Server):
        """Says it serves only once the port is bound (a port in use is one error line,
        not a false "serving" first), and exits 0 after a clean SIGTERM (uvicorn re-raises
        the captured signal after its graceful shutdown, which made the process die -15)."""

        async def startup(self, sockets=None) -> None:
            await super().startup(sockets)
            if self.started:
                announce()

        @contextlib.contextmanager
        def capture_signals(self):
            with super().capture_signals():
                yield
                self._captured_signals.clear()

    return Server


def run_http(
    app: FastMCP, services: Services, ready_line: str, worker: list[str] | None = None
) -> int:
    """Serve until SIGTERM/SIGINT; `worker`: the supervisor's hand-over (workers.py)."""
    import uvicorn

    settings = services.settings
    sockets = None

    def announce() -> None:
        say(ready_line)

    if worker is not None:
        from .workers import as_worker

        sock, ready_fd = as_worker(worker)
        sockets = [sock]

        def announce() -> None:  # the supervisor says it once for all workers
            os.write(ready_fd, ready_line.encode() + b"\n")
            os.close(ready_fd)

    else:
        from .workers import listen, listen_error

        try:  # bound here, so a busy port is one sentence, not uvicorn's traceback line
            sockets = [listen(settings.host, settings.port)]
        except OSError as exc:
            say(listen_error(settings.host, settings.port, exc))
            return 2
    asgi = build_http_app(app, services)
    config = uvicorn.Config(
        asgi,
        host=settings.host,
        port=settings.port,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=3,
        access_log=False,
    )
    server = _server_class(announce)(config)
    server.run(sockets=sockets)
    return 0 if server.started else 2
