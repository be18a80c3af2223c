"""How every tool module registers a tool: annotations and tags.

Tool bodies just raise core `WorkspaceError`s: the error middleware is the one place
that turns any failure into the sentence a model reads, and the budget middleware holds
every text answer to the answer budget.
"""

import functools
import inspect
import logging
from collections.abc import Callable
from typing import Annotated, Any

from fastmcp import FastMCP
from mcp_types import ToolAnnotations
from pydantic import Field

from ..requestctx import JOURNAL_TAG, READ_TAG, WRITE_TAG

log = logging.getLogger("agent_workspace_mcp")

WorkspaceArg = Annotated[
    str | None,
    Field(description="Workspace name from workspace_list; omit for the primary workspace."),
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


def bind(fn: Callable[..., Any], dependency: Any) -> Callable[..., Any]:
    """`fn` with its first parameter (the services it needs) supplied.

    Tools are module-level functions `tool(services, *arguments)` that can be imported,
    read and tested alone; the bound function's signature is the tool's arguments only,
    which is what FastMCP builds the schema from.
    """
    signature = inspect.signature(fn)
    arguments = list(signature.parameters.values())[1:]
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def bound_async(*args: Any, **kwargs: Any) -> Any:
            return await fn(dependency, *args, **kwargs)

        bound: Callable[..., Any] = bound_async
    else:

        @functools.wraps(fn)
        def bound_sync(*args: Any, **kwargs: Any) -> Any:
            return fn(dependency, *args, **kwargs)

        bound = bound_sync
    bound.__signature__ = signature.replace(parameters=arguments)  # type: ignore[attr-defined]
    return bound


def one_line_paragraphs(doc: str | None) -> str | None:
    """A docstring's paragraphs unwrapped, one per line: the line breaks of source code
    would cost a byte each on the wire and mean nothing to a model."""
    if not doc:
        return doc
    paragraphs = [" ".join(p.split()) for p in doc.split("\n\n")]
    return "\n".join(p for p in paragraphs if p)


def add_tool(
    app: FastMCP,
    fn: Callable[..., Any],
    *,
    annotations: ToolAnnotations,
    title: str | None = None,
    journal: bool | None = None,
) -> None:
    """Register `fn`. Mutating tools are journaled unless `journal=False`."""
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
    app.tool(
        fn,
        annotations=annotations,
        title=title,
        tags=tags,
        output_schema=None,
        description=description,
    )
