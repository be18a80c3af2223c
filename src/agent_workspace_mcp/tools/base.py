"""How every tool module registers a tool: annotations and tags.

Tool bodies just raise core `WorkspaceError`s: the error middleware is the one place
that turns any failure into the sentence a model reads, and the budget middleware holds
every text answer to the answer budget.
"""

import functools
import inspect
import logging
import weakref
from collections.abc import Callable
from typing import Annotated, Any

from fastmcp import FastMCP
from mcp_types import ToolAnnotations
from pydantic import Field

from ..core import handoff
from ..core.callscope import RUNS_PROGRAMS
from ..core.state.journal.calls import run_in_thread
from ..requestctx import JOURNAL_TAG, READ_TAG, WRITE_TAG
from .schemas import function_tool

log = logging.getLogger("agent_workspace_mcp")

# `x-mcp-header` (SEP-2243, 2026-07-28): clients mirror the argument into an
# `Mcp-Param-Workspace` header, so a gateway can route by workspace without reading
# bodies (one StatefulSet per workspace); the SDK refuses a header that disagrees with
# the body (400) before the call runs.
WorkspaceArg = Annotated[
    str | None,
    Field(
        description="Workspace name from workspace_list; omit for the primary workspace.",
        json_schema_extra={"x-mcp-header": "Workspace"},
    ),
]
ExpectedSha = Annotated[
    str | None,
    Field(description="Refuse unless the file's sha256 starts with this."),
]

# Annotations state only what differs from the MCP spec's defaults (readOnlyHint false,
# destructiveHint true, idempotentHint false, openWorldHint true), since each byte is paid
# for in context; destructiveHint and idempotentHint mean nothing on a read-only tool.
# destructiveHint=true is still stated: clients gate confirmations on it.
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
# Creates or changes workspace data; may overwrite (the seed marks write/edit tools so).
DESTRUCTIVE = ToolAnnotations(destructive_hint=True, open_world_hint=False)
# Adds without replacing anything (make_directory).
ADDITIVE = ToolAnnotations(destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def numbers_from_limits(fn: Callable[..., Any], **numbers: object) -> None:
    """Fill the `{name}` placeholders of a tool's docstring (its description): every
    number a model reads comes from the limits module, never typed by hand."""
    fn.__doc__ = (fn.__doc__ or "").format(**numbers)


def bind(fn: Callable[..., Any], dependency: Any, *, inline: bool = False) -> Callable[..., Any]:
    """`fn` with its first parameter (the services it needs) supplied.

    Tools are module-level functions `tool(services, *arguments)` that can be imported,
    read and tested alone; the bound function's signature is the tool's arguments only,
    which is what FastMCP builds the schema from.

    `inline`: a bounded read of regular files (no pipe, no subprocess, no lock) runs on
    the event loop over stdio, where the loop serves one client that is waiting for this
    very answer, sparing the worker-thread hop every synchronous tool pays (issue 15:
    ~0.1 ms, a tenth of a small read). Over HTTP the loop is shared by every session,
    so a slow disk must not stall the others: there it runs in a worker thread.
    """
    if inline:
        threaded = bool(dependency.settings.http)

        @functools.wraps(fn)
        async def bound_inline(*args: Any, **kwargs: Any) -> Any:
            if threaded:
                return await handoff.run_sync(functools.partial(fn, dependency, *args, **kwargs))
            return fn(dependency, *args, **kwargs)

        bound: Callable[..., Any] = bound_inline
    elif inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def bound_async(*args: Any, **kwargs: Any) -> Any:
            return await fn(dependency, *args, **kwargs)

        bound = bound_async
    else:
        # Registered as a coroutine that hands the body to a worker thread itself, not as
        # a plain function FastMCP would hand over through anyio (core/handoff.py: the trip
        # costs half as much).
        @functools.wraps(fn)
        async def bound_sync(*args: Any, **kwargs: Any) -> Any:
            def body() -> Any:
                return fn(dependency, *args, **kwargs)

            dry_run = bool(kwargs.get("dryRun"))
            return await handoff.run_sync(lambda: run_in_thread(body, dry_run=dry_run))

        bound = handoff.threaded(bound_sync)
    bound.__signature__ = _arguments(fn)  # type: ignore[attr-defined]
    return bound


# A tool function's arguments by function, worked out once per process rather than once
# per server: `inspect` takes ~0.1 ms a tool, and test suites build hundreds of servers.
# A signature is immutable, so every server's wrapper can share it (FastMCP replaces,
# never edits, a wrapper's signature); a function defined per server is a new key.
_ARGUMENTS: weakref.WeakKeyDictionary[Callable[..., Any], inspect.Signature] = (
    weakref.WeakKeyDictionary()
)


def _arguments(fn: Callable[..., Any]) -> inspect.Signature:
    found = _ARGUMENTS.get(fn)
    if found is None:
        signature = inspect.signature(fn)
        # No return annotation: every tool is registered with output_schema=None, and
        # FastMCP would still build (and drop) two output schemas per tool from it.
        found = _ARGUMENTS[fn] = signature.replace(
            parameters=list(signature.parameters.values())[1:],
            return_annotation=inspect.Signature.empty,
        )
    return found


def one_line_paragraphs(doc: str | None) -> str | None:
    """A docstring's paragraphs unwrapped, one per line: the line breaks of source code
    would cost a byte each on the wire and mean nothing to a model."""
    if not doc:
        return doc
    paragraphs = [" ".join(p.split()) for p in doc.split("\n\n")]
    return "\n".join(p for p in paragraphs if p)


# The tools each app registered (our names, before a profile renames any) -> whether the
# tool writes: the input of the served surface (surface.compute, via server.build).
REGISTERED: weakref.WeakKeyDictionary[FastMCP, dict[str, bool]] = weakref.WeakKeyDictionary()


def add_tool(
    app: FastMCP,
    fn: Callable[..., Any],
    *,
    annotations: ToolAnnotations,
    title: str | None = None,
    journal: bool | None = None,
    meta: dict[str, Any] | None = None,
    executes: bool = False,
) -> None:
    """Register `fn`. Mutating tools are journaled unless `journal=False`. `executes`:
    the tool runs a program, and must then be in core.callscope.RUNS_PROGRAMS, the one
    list `--confirm exec` and the runner's clearance read (a new command tool that is
    not listed fails here, at start-up, instead of escaping the gate)."""
    tags = {READ_TAG if annotations.read_only_hint else WRITE_TAG}
    if journal if journal is not None else not annotations.read_only_hint:
        tags.add(JOURNAL_TAG)
    # The docstring becomes an explicit description: FastMCP would otherwise parse it
    # with griffe (the largest part of building the server). `fn` is bind()'s wrapper,
    # so the tool function itself keeps its docstring.
    description = one_line_paragraphs(inspect.getdoc(fn))
    fn.__doc__ = None
    # output_schema=None: a `-> str` tool would otherwise also send its text as
    # structuredContent, doubling every answer on the wire.
    # The input schema comes ready-made when schemas.json has it (see schemas.py).
    tool = function_tool(
        fn, title=title, description=description, annotations=annotations, tags=tags
    )
    if executes != (tool.name in RUNS_PROGRAMS):
        raise RuntimeError(
            f"tool {tool.name}: executes={executes} disagrees with core.callscope.RUNS_PROGRAMS"
        )
    if meta is not None:  # e.g. an MCP App's {"ui": {"resourceUri": ...}} (issue 33)
        tool = tool.model_copy(update={"meta": {**(tool.meta or {}), **meta}})
    app.add_tool(tool)
    REGISTERED.setdefault(app, {})[tool.name] = not annotations.read_only_hint
