"""Assemble the FastMCP app: services, tool modules, middleware, lifespan.

`create_server(settings)` is the public entry point for library use; the CLI calls
`build()` to also get the services it needs for shutdown handling.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastmcp import FastMCP

from . import prompts
from .core.audit import AuditLog
from .core.commands import check_bwrap
from .core.jobs import JobRegistry, default_job_dir
from .core.memory import Memory
from .core.search.engine import SearchEngine
from .core.skills import SkillStore
from .core.workspaces import WorkspaceRegistry
from .instructions import INSTRUCTIONS
from .middleware.arguments import ArgumentRepairMiddleware
from .middleware.audit import AuditMiddleware
from .middleware.errors import ErrorShapingMiddleware
from .middleware.journal import JournalMiddleware
from .services import Services
from .settings import Settings
from .tools import changes, editing, files, git, memory, search, shell, skills, workspaces
from .tools.base import READ_TAG

SERVER_NAME = "agent-workspace-mcp"
TOOL_MODULES = (files, editing, search, shell, git, memory, changes, skills, workspaces)


def _version() -> str:
    from .cli import package_version

    return package_version()


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever `sys.stderr` is now (test harnesses and embedders swap it)."""

    @property  # type: ignore[override]
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


def _configure_logging(level: str) -> None:
    logger = logging.getLogger("agent_workspace_mcp")
    if not logger.handlers:
        handler = _StderrHandler()
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
        settings=settings,
        workspaces=registry,
        search=SearchEngine(settings.search_engine),
        jobs=JobRegistry(settings.job_dir or default_job_dir()),
        bwrap=check_bwrap() if settings.sandbox == "bwrap" else None,
        memory=Memory(settings.journal_max_bytes),
        skills=SkillStore(settings.skills_dir),
    )
    audit = AuditLog(settings.audit_log, settings.journal_max_bytes)
    services.shutdown.register("kill running jobs", services.jobs.shutdown)

    # Cleanup is not tied to the FastMCP lifespan: with an in-memory client the
    # lifespan ends whenever the last client disconnects, which would kill background
    # jobs that are meant to outlive a client. The transports run it when the server
    # really stops; `atexit` covers library use (no orphan jobs at interpreter exit).
    atexit.register(services.shutdown.run)

    @asynccontextmanager
    async def lifespan(_: FastMCP) -> AsyncIterator[dict]:
        yield {"services": services}

    app = FastMCP(
        SERVER_NAME,
        instructions=INSTRUCTIONS,
        version=_version(),
        lifespan=lifespan,
        # Outermost first: the audit sees the final outcome; errors are shaped after the
        # journal saw the real failure.
        middleware=[
            *([AuditMiddleware(services, audit)] if settings.audit else []),
            ErrorShapingMiddleware(),
            JournalMiddleware(services),
            ArgumentRepairMiddleware(),
        ],
    )
    for module in TOOL_MODULES:
        module.register(app, services)
    prompts.register(app, services)
    if settings.read_only:
        app.enable(tags={READ_TAG}, only=True)
    return app, services


def create_server(settings: Settings | None = None) -> FastMCP:
    """Build the server for in-process use (tests, embedding): `Client(create_server(s))`."""
    app, _ = build(settings or Settings())
    return app
