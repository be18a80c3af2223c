"""The HTTP routes beside `/mcp`: `/health` (liveness), `/ready` (readiness),
`/metrics` (Prometheus) and the RFC 9728 metadata at its bare well-known path."""

from __future__ import annotations

import logging

from fastmcp import FastMCP
from starlette.responses import JSONResponse, Response

from ..configuration import PROG, base_url, package_version
from ..core import handoff
from ..services import Services

log = logging.getLogger("agent_workspace_mcp")


def add_http_routes(app: FastMCP, services: Services, *, authenticated: bool) -> None:
    """Every route an HTTP server adds; `authenticated`: the server checks credentials
    (then /metrics takes them too, unless --metrics-public)."""
    settings = services.settings
    _health_route(app)
    _ready_route(app, services)
    if services.metrics is not None:
        _metrics_route(app, services, protected=authenticated and not settings.metrics_public)
    if settings.auth_server and authenticated:
        _bare_resource_metadata(app, services)


def _health_route(app: FastMCP) -> None:
    @app.custom_route("/health", methods=["GET"])
    async def health(_request) -> JSONResponse:  # never behind auth; reveals nothing
        return JSONResponse({"status": "ok", "server": PROG, "version": package_version()})


def _ready_route(app: FastMCP, services: Services) -> None:
    """`/ready`: every workspace reachable and its state directory writable (a Kubernetes
    readiness probe; /health stays the liveness probe). No auth; says only yes or no."""

    def check() -> str | None:
        from ..core.state.locks import state_lock

        for ws in services.registry:
            try:
                with state_lock(ws):  # reaches the root, creates or opens .workspace-mcp/.lock
                    pass
            except Exception as exc:
                log.warning("not ready: workspace %s: %s", ws.name, exc)
                return f"workspace {ws.name} is not reachable or its state is not writable"
        return None

    @app.custom_route("/ready", methods=["GET"])
    async def ready(_request) -> JSONResponse:
        problem = await handoff.run_sync(check)
        if problem:
            return JSONResponse({"status": "not ready", "error": problem}, status_code=503)
        return JSONResponse({"status": "ready"})


def _metrics_route(app: FastMCP, services: Services, *, protected: bool) -> None:
    from prometheus_client import CONTENT_TYPE_LATEST

    @app.custom_route("/metrics", methods=["GET"])
    async def metrics(request) -> Response:
        # FastMCP's authentication layer runs for every route; only /mcp requires it,
        # so this one checks what it found (same token, API key or JWT as /mcp).
        if protected and not getattr(request.user, "is_authenticated", False):
            return Response(status_code=401, headers={"www-authenticate": "Bearer"})
        assert services.metrics is not None  # the route exists only when metrics do
        return Response(services.metrics.exposition(), media_type=CONTENT_TYPE_LATEST)


def _bare_resource_metadata(app: FastMCP, services: Services) -> None:
    """RFC 9728 metadata at the bare well-known path too.

    FastMCP serves it at `/.well-known/oauth-protected-resource/mcp` (the path-suffixed
    form for a resource with a path, which the 401 challenge points to); clients that
    probe the bare path find the same document here.
    """
    settings = services.settings
    document = {
        "resource": f"{base_url(settings)}/mcp",
        "authorization_servers": [settings.auth_server],
        "scopes_supported": [],
        "bearer_methods_supported": ["header"],
        "resource_name": PROG,
    }

    @app.custom_route("/.well-known/oauth-protected-resource", methods=["GET"])
    async def resource_metadata(_request) -> JSONResponse:
        return JSONResponse(document)
