"""Assemble the FastMCP app: services, tool modules, middleware, lifespan.

`create_server(settings)` is the public entry point for library use; the CLI calls
`build()` to also get the services it needs for shutdown handling.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastmcp import FastMCP

from .core.search.engine import SearchEngine
from .core.workspaces import WorkspaceRegistry
from .instructions import INSTRUCTIONS
from .middleware.arguments import ArgumentRepairMiddleware
from .middleware.errors import ErrorShapingMiddleware
from .services import Services
from .settings import Settings
from .tools import editing, files, search, workspaces
from .tools.base import READ_TAG

SERVER_NAME = "agent-workspace-mcp"
TOOL_MODULES = (files, editing, search, workspaces)


def _version() -> str:
    from .cli import package_version

    return package_version()


def _configure_logging(level: str) -> None:
    logger = logging.getLogger("agent_workspace_mcp")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("agent-workspace-mcp: %(levelname)s: %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False
    logger.setLevel(level)


def build(settings: Settings) -> tuple[FastMCP, Services]:
    """The app and the services behind it (for callers that manage shutdown themselves)."""
    _configure_logging(settings.log_level)
    if settings.unconfined:
        registry = WorkspaceRegistry.unconfined(os.getcwd())
    else:
        registry = WorkspaceRegistry.confined(settings.root, settings.workspaces)
    services = Services(
        settings=settings, workspaces=registry, search=SearchEngine(settings.search_engine)
    )

    @asynccontextmanager
    async def lifespan(_: FastMCP) -> AsyncIterator[dict]:
        try:
            yield {"services": services}
        finally:
            services.shutdown.run()

    app = FastMCP(
        SERVER_NAME,
        instructions=INSTRUCTIONS,
        version=_version(),
        lifespan=lifespan,
        middleware=[ErrorShapingMiddleware(), ArgumentRepairMiddleware()],
    )
    for module in TOOL_MODULES:
        module.register(app, services)
    if settings.read_only:
        app.enable(tags={READ_TAG}, only=True)
    return app, services


def create_server(settings: Settings | None = None) -> FastMCP:
    """Build the server for in-process use (tests, embedding): `Client(create_server(s))`."""
    app, _ = build(settings or Settings())
    return app
