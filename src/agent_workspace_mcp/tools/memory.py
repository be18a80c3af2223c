"""Memory tools: `work_log` (the automatic journal), `remember` and `recall` (notes)."""

from typing import Annotated

from fastmcp import FastMCP
from mcp_types import ToolAnnotations
from pydantic import Field

from ..core import limits
from ..core.state.journal.entries import render_entry, render_note
from ..requestctx import history_subject
from ..services import Services
from .base import READ_ONLY, WorkspaceArg, add_tool, bind

# Appends to state under .workspace-mcp/ and changes no workspace data (seed).
STATE_WRITE = ToolAnnotations(destructive_hint=False, open_world_hint=False)


def work_log(
    services: Services,
    limit: Annotated[
        int, Field(ge=1, description=f"Entries to return (cap {limits.WORK_LOG_MAX}).")
    ] = limits.WORK_LOG_DEFAULT,
    since: Annotated[
        str | None, Field(description="Only entries at or after this ISO 8601 time.")
    ] = None,
    path: Annotated[
        str | None, Field(description="Only entries whose paths contain this text.")
    ] = None,
    change: Annotated[
        str | None, Field(description="Only entries tagged with this change id.")
    ] = None,
    session: Annotated[str | None, Field(description="Only this session's.")] = None,
    workspace: WorkspaceArg = None,
) -> str:
    """Recent activity, newest first: every mutating call's paths, detail, outcome, id."""
    ws = services.workspaces.get(workspace)
    entries = services.memory.work_log(
        ws,
        limit=limit,
        since=since,
        path=path,
        change=change,
        by=history_subject(services.settings.share_history),
        session=session,
    )
    if not entries:
        asked = since or path or change or session
        return "no activity matches" if asked else "no activity recorded yet"
    gone = services.checkpoints(ws).pruned_ids()
    return "\n".join(
        render_entry(e, "no longer undoable" if e.get("id") in gone else None) for e in entries
    )


def remember(
    services: Services,
    text: Annotated[
        str, Field(min_length=1, description="What changed and what should happen next.")
    ],
    tags: Annotated[
        list[str] | None,
        Field(
            max_length=limits.REMEMBER_MAX_TAGS,
            description="Short labels, e.g. ['auth', 'todo'].",
        ),
    ] = None,
    workspace: WorkspaceArg = None,
) -> str:
    """Save a persistent note in the workspace (append-only; recall finds it)."""
    total = services.memory.remember(services.workspaces.get(workspace), text, tags or [])
    return f"noted (#{total} total)"


def recall(
    services: Services,
    query: Annotated[str | None, Field(description="Case-insensitive text to look for.")] = None,
    tag: Annotated[
        str | None, Field(description="Only notes with this tag (case-insensitive).")
    ] = None,
    limit: Annotated[
        int, Field(ge=1, description=f"Notes to return (cap {limits.RECALL_MAX}).")
    ] = limits.RECALL_DEFAULT,
    workspace: WorkspaceArg = None,
) -> str:
    """Saved notes, newest first, as `YYYY-MM-DD  [#tag]  text`."""
    notes = services.memory.recall(
        services.workspaces.get(workspace), query=query, tag=tag, limit=limit
    )
    return "\n".join(render_note(n) for n in notes) if notes else "no notes match"


def register(app: FastMCP, services: Services) -> None:
    add_tool(app, bind(work_log, services), annotations=READ_ONLY, title="Work log")
    add_tool(
        app, bind(remember, services), annotations=STATE_WRITE, title="Remember", journal=False
    )
    add_tool(app, bind(recall, services), annotations=READ_ONLY, title="Recall notes")
