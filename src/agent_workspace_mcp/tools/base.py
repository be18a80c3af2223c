"""How every tool module registers a tool: annotations, tags and error shaping.

Tool bodies raise core `WorkspaceError`s; `shaped()` turns them into FastMCP
`ToolError`s carrying the same one sentence, before FastMCP's own handler would log
a traceback for an expected failure. Anything else propagates and is reduced to one
sentence by the error middleware, with the traceback on stderr only.
"""

import functools
import inspect
import logging
from collections.abc import Callable
from typing import Annotated, Any

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from ..core.errors import WorkspaceError, describe_os_error
from ..core.limits import ANSWER_HARD_BYTES
from ..requestctx import JOURNAL_TAG, READ_TAG, WRITE_TAG

log = logging.getLogger("agent_workspace_mcp")

WorkspaceArg = Annotated[
    str | None,
    Field(description="Workspace name from workspace_list; omit for the primary workspace."),
]

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
# Creates or changes workspace data; may overwrite (the seed marks write/edit tools so).
DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)
# Adds without replacing anything (make_directory).
ADDITIVE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)



def _as_tool_error(fn_name: str, exc: Exception) -> ToolError:
    if isinstance(exc, WorkspaceError):
        # An agent's mistake, not a server fault: log it at INFO, not ERROR.
        return ToolError(str(exc), log_level=logging.INFO)
    log.warning("tool %s: %r", fn_name, exc)
    return ToolError(describe_os_error(exc), log_level=logging.INFO)  # type: ignore[arg-type]


def within_budget(text: str, budget: int = ANSWER_HARD_BYTES) -> str:
    """Cut an answer at a line boundary below `budget` bytes and say how much was left out.

    Tools budget their own answers more cleverly (read_file names the next offset); this
    is the backstop that keeps every answer under what clients accept (~25k tokens).
    """
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= budget:
        return text
    head = data[: budget - 200].decode("utf-8", "ignore")
    cut = head.rfind("\n")
    head = head[:cut] if cut > 0 else head
    left = len(data) - len(head.encode("utf-8", "surrogatepass"))
    return f"{head}\n... (answer truncated: {left} more bytes; narrow the request)"


def _budgeted(result: Any) -> Any:
    return within_budget(result) if isinstance(result, str) else result


def shaped(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Re-raise core errors as ToolError with the same sentence (no traceback logged),
    and hold every text answer to the answer budget."""
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return _budgeted(await fn(*args, **kwargs))
            except (WorkspaceError, OSError) as exc:
                raise _as_tool_error(fn.__name__, exc) from None

        return async_wrapper

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return _budgeted(fn(*args, **kwargs))
        except (WorkspaceError, OSError) as exc:
            raise _as_tool_error(fn.__name__, exc) from None

    return wrapper


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
    # output_schema=None: a `-> str` tool would otherwise also send its text as
    # structuredContent, doubling every answer on the wire.
    app.tool(shaped(fn), annotations=annotations, title=title, tags=tags, output_schema=None)
