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
from .app import WorkspaceApp
from .configuration import PROG, package_version, preflight
from .core import limits
from .core.audit import AuditLog
from .core.exec.commands import resolve_sandbox, safe_path_dirs
from .core.exec.jobs import JobRegistry, default_job_dir
from .core.search.engine import SearchEngine
from .core.skills import SkillStore
from .core.state.journal.entries import Memory
from .core.state.locks import PathLocks
from .core.sweep import start_sweep
from .instructions import instructions
from .middleware.arguments import ArgumentRepairMiddleware
from .middleware.audit import AuditMiddleware
from .middleware.bounds import ArgumentBoundsMiddleware
from .middleware.budget import AnswerBudgetMiddleware
from .middleware.errors import ErrorShapingMiddleware, quiet_expected_failures
from .middleware.journal import JournalMiddleware
from .middleware.lean_list import LeanToolListMiddleware
from .middleware.pipeline import Pipeline
from .middleware.sessions import SubpathMiddleware
from .middleware.stale_reads import StaleReadMiddleware
from .requestctx import current_subject
from .services import Services
from .settings import Settings
from .surface import Surface
from .surface import compute as compute_surface
from .tools import (
    approvals,
    changes,
    code,
    editing,
    files,
    git,
    memory,
    persona,
    review,
    search,
    shell,
    skills,
    undo,
    workspaces,
)
from .tools.base import REGISTERED
from .tools.schemas import table_names

log = logging.getLogger("agent_workspace_mcp")

TOOL_MODULES = (
    files,
    editing,
    search,
    code,
    shell,
    git,
    memory,
    changes,
    skills,
    undo,
    review,
    approvals,
    workspaces,
    persona,
)


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever `sys.stderr` is now (test harnesses and embedders swap it)."""

    @property
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
    # The log level governs the framework's loggers too (FastMCP's Rich INFO lines, uvicorn).
    for name in ("fastmcp", "mcp", "uvicorn", "uvicorn.error", "sse_starlette"):
        logging.getLogger(name).setLevel(level)


def _warn_exec_off(settings: Settings) -> None:
    if not settings.execution_allowed and (settings.shell_mode is not None or settings.tasks):
        log.warning("command execution is off over HTTP; pass --allow-remote-exec to enable it")


def _warn_commands_unheld(settings: Settings) -> None:
    """The path rules see a command's changes only through a staged view: say so once."""
    from .core.callscope import RUNS_PROGRAMS

    confirm = set(settings.confirm)
    rules = "risky" in confirm or bool(settings.confirm_path)
    every_command_asked = "exec" in confirm or bool(confirm & RUNS_PROGRAMS)
    held = settings.stage_commands or every_command_asked
    if rules and settings.commands_enabled and not held:
        log.warning(
            "--confirm risky/--confirm-path decide the file tools' changes; a command's "
            "are recorded and undoable but not asked about: add --stage-commands"
        )


def build(settings: Settings) -> tuple[FastMCP, Services]:
    """The app and the services behind it (for callers that manage shutdown themselves)."""
    _configure_logging(settings.log_level)
    quiet_expected_failures()
    registry = preflight(settings)
    _warn_exec_off(settings)
    _warn_commands_unheld(settings)
    auth = None
    if settings.http and not settings.no_auth:  # lazily: a stdio start imports no HTTP code
        from .transports.auth import build_auth

        auth = build_auth(settings)
    job_dir = settings.job_dir or default_job_dir()
    shared = settings.workers > 1  # a worker of `--workers N` (transports.workers)
    if not settings.unconfined and not settings.read_only:
        from .core.state import lockcheck

        # Issue 49: state safe across processes and pods. Node-local locks (FUSE, 9p) are
        # refused only where pods can share a volume: served over HTTP (a stdio server is
        # one user's, often on a VM's or Docker Desktop's FUSE share of their project).
        for root in registry.roots():
            lockcheck.check(root, not_shared=settings.state_not_shared or not settings.http)
    path_dirs = safe_path_dirs(os.environ.get("PATH", ""), registry.roots())
    bwrap, sandbox_said = resolve_sandbox(
        settings.sandbox, settings.commands_enabled, settings.unconfined, path_dirs
    )
    stage = None
    if settings.stage_commands:
        from .core.callscope import RUNS_PROGRAMS
        from .core.exec import staging

        stage = staging.check(
            confirm=settings.confirm,
            confirm_path=settings.confirm_path,
            runs_programs=RUNS_PROGRAMS,
            commands=settings.commands_enabled,
            unconfined=settings.unconfined,
            network=settings.sandbox_network,
            checkpoints=settings.checkpoints,
            bwrap=bwrap,
            sandbox_said=sandbox_said,
            path_dirs=path_dirs,
        )
    services = Services(
        settings=settings,
        registry=registry,
        search=SearchEngine(settings.search_engine),
        jobs=JobRegistry(job_dir, shared=shared),
        locks=PathLocks(),
        bwrap=bwrap,
        sandbox_said=sandbox_said,
        stage=stage,
        memory=Memory(settings.journal_max_bytes),
        skills=SkillStore(settings.skills_dir, builtin=settings.builtin_skills),
    )
    audit = AuditLog(settings.audit_log, settings.journal_max_bytes)
    services.shutdown.register("kill running jobs", services.jobs.shutdown)

    # Cleanup is not tied to the FastMCP lifespan: with an in-memory client the
    # lifespan ends whenever the last client disconnects, which would kill background
    # jobs that are meant to outlive a client. The transports run it when the server
    # really stops; `atexit` covers library use (no orphan jobs at interpreter exit).
    atexit.register(services.shutdown.run)
    swept = False

    @asynccontextmanager
    async def lifespan(_: FastMCP) -> AsyncIterator[dict]:
        nonlocal swept
        if not swept:  # once, when it first serves: a server only built walks nothing
            swept = True
            start_sweep(list(registry))  # temp files an interrupted write left (core.sweep)
        yield {"services": services}

    metrics = None
    if settings.http:
        from .middleware.metrics import Metrics, MetricsMiddleware

        metrics = Metrics(services)
        services.metrics = metrics
    from . import telemetry

    if telemetry.active():
        from .middleware.tracing import TracingMiddleware

        tracing = [TracingMiddleware()]
    else:
        tracing = []
    middleware = [
        *tracing,
        *([AuditMiddleware(services, audit)] if settings.audit else []),
        *([MetricsMiddleware(metrics)] if metrics is not None else []),
        SubpathMiddleware(services),
    ]
    if settings.rate_limit:
        from fastmcp.server.middleware.rate_limiting import RateLimitingMiddleware

        middleware.append(
            RateLimitingMiddleware(
                max_requests_per_second=settings.rate_limit,
                burst_capacity=max(1, int(settings.rate_limit * 2)),
                get_client_id=lambda _ctx: current_subject() or "anonymous",
            )
        )
    errors = ErrorShapingMiddleware()
    gate = None
    if settings.confirm or settings.confirm_path:
        from .middleware.approvals import ApprovalGate

        gate = ApprovalGate(services)
        services.approvals = gate.approvals
    app = WorkspaceApp(
        PROG,
        auth=auth,
        request_state_security=_request_state_security(settings, services),
        instructions=instructions(
            undo=settings.checkpoints
            and not settings.read_only
            and settings.profile == "workspace-mcp"
        ),
        version=package_version(),
        lifespan=lifespan,
        # Our schemas come with every $ref inlined already (tools/schemas.py), so FastMCP
        # need not walk and rewrite them on every tools/list.
        dereference_schemas=False,
        # Outermost first: the audit and the journal see the final outcome, including the
        # one sentence the error layer made of a failure (what the agent saw). One
        # FastMCP layer for all of them (see middleware/pipeline.py).
        middleware=[
            Pipeline(
                [
                    *middleware,
                    ArgumentBoundsMiddleware(),
                    JournalMiddleware(services),
                    StaleReadMiddleware(services),
                    AnswerBudgetMiddleware(),
                    errors,
                    ArgumentRepairMiddleware(),
                    LeanToolListMiddleware(single_workspace=len(registry) == 1),
                    # Last: it sees the repaired arguments that will run, and its own
                    # answers go through the error layer and into the journal.
                    *([gate] if gate is not None else []),
                ]
            )
        ],
    )
    if settings.commands_enabled:
        from .transports.tasks import TasksExtension

        app.add_extension(TasksExtension(services.jobs))
    for module in TOOL_MODULES:
        module.register(app, services)
    prompts.register(app, services)
    if settings.http:
        from .transports.routes import add_http_routes

        add_http_routes(app, services, authenticated=auth is not None)
    services.surface = _apply_surface(app, settings)
    if gate is not None:
        gate.configure(REGISTERED.get(app, {}), services.surface.profile.renames)
    errors.why_not = services.surface.why_not
    if settings.tool_search:
        _tool_search(app, settings)
    return app, services


def _request_state_security(settings: Settings, services: Services):
    """With --workers, one sealing key for 2026-07-28 request states (an approval asked
    through `input_required` is answered in a retry that may reach another worker);
    otherwise FastMCP's own process-local key."""
    if settings.workers <= 1:
        return None
    from mcp.server.request_state import RequestStateSecurity

    from .transports.workers import shared_key

    return RequestStateSecurity(keys=[shared_key(services.jobs.job_dir, "request state")])


# Always listed under --tool-search: what nearly every session uses.
CORE_TOOLS = ("read_file", "write_file", "edit_file", "grep", "list_files")


def _tool_search(app: FastMCP, settings: Settings) -> None:
    """FastMCP's BM25 search in front of the catalogue; the core tools stay listed (under
    the profile's names). Hidden tools stay callable, directly or through call_tool."""
    from fastmcp.server.transforms.search import BM25SearchTransform

    from .profiles import PROFILES

    renames = PROFILES[settings.profile].renames
    app.add_transform(
        BM25SearchTransform(
            max_results=limits.TOOL_SEARCH_RESULTS,
            always_visible=[renames.get(name, name) for name in CORE_TOOLS],
        )
    )


def _apply_surface(app: FastMCP, settings: Settings) -> Surface:
    """The served surface (surface.compute: profile, --tools, --disable-tools,
    --read-only, features) applied to the registered tools: the profile's renames as tool
    transformations over the same implementation, then exactly the served names enabled.
    Resources and prompts are untouched."""
    from .tools.shell import ENABLED_BY

    registered = REGISTERED.get(app, {})
    surface = compute_surface(settings, registered, ENABLED_BY, table_names)
    renames = surface.profile.renames
    if renames:
        from fastmcp.server.transforms.tool_transform import ToolTransform
        from fastmcp.tools.tool_transform import ToolTransformConfig

        app.add_transform(
            ToolTransform({old: ToolTransformConfig(name=new) for old, new in renames.items()})
        )
    if len(surface.served) < len(registered):
        app.disable(components={"tool"})
        app.enable(names=set(surface.served), components={"tool"})
    return surface


def describe_surfaces() -> str:
    """`--list-profiles`: each profile's served tools, one line each, from the same
    surface a server of that profile serves (a server is built per profile, in a
    throw-away directory; nothing is run)."""
    import os
    import tempfile

    from .configuration import settings_from_sources
    from .profiles import PROFILES

    lines = []
    with tempfile.TemporaryDirectory() as root:
        for name, profile in PROFILES.items():
            where = [] if profile.defaults.get("unconfined") else ["--root", root]
            settings = settings_from_sources(
                ["--profile", name, "--no-audit", *where], environ={}, dotenv_path=os.devnull
            )
            _, services = build(settings)
            served = services.surface.served if services.surface else ()
            lines.append(f"{name} ({profile.source}): {', '.join(served)}")
    return "\n".join(lines)


def create_server(settings: Settings | None = None) -> FastMCP:
    """Build the server for in-process use (tests, embedding): `Client(create_server(s))`."""
    app, _ = build(settings or Settings())
    return app
