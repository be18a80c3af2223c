"""`undo` and `restore_file`: any recorded change back, byte for byte (issue 17).

Every mutating call records what it replaced (core.checkpoints); these tools put it
back through the same containment walk as every write, all or nothing, and are
recorded themselves, so an undo can be undone.
"""

from __future__ import annotations

from typing import Annotated

from fastmcp import FastMCP
from pydantic import Field

from ..core.checkpoints import undoing
from ..core.echo import listing
from ..core.workspaces import Workspace
from ..requestctx import history_subject
from ..services import Services
from .base import DESTRUCTIVE, WorkspaceArg, add_tool, bind

EntryId = Annotated[str, Field(description="Entry id from work_log.")]


def undo(
    services: Services,
    steps: Annotated[int | None, Field(ge=1, description="Last N calls (default 1).")] = None,
    to: Annotated[str | None, Field(description="Entry id: undo every call after it.")] = None,
    change: Annotated[str | None, Field(description="Change id: undo its calls.")] = None,
    session: Annotated[str | None, Field(description="Or a session id.")] = None,
    dryRun: Annotated[bool, Field(description="Preview; change nothing.")] = False,
    force: Annotated[bool, Field(description="Also undo files changed since by others.")] = False,
    workspace: WorkspaceArg = None,
) -> str:
    """Undo file changes recorded in work_log: the last `steps` calls, all after entry
    `to`, or a change's or session's. All or nothing; refuses files others
    changed since, unless force. Commands are not reverted."""
    ws = services.workspaces.get(workspace)
    subject = history_subject(services.settings.share_history)
    ids = None
    if session:
        made = services.memory.call_ids(ws, session=session, by=subject)
        ids = (made, f"session {session[:40]}")
    result = undoing.undo(
        ws,
        services.checkpoints(ws),
        services.locks,
        subject=subject,
        steps=steps,
        to=to,
        change=change,
        ids=ids,
        dry_run=dryRun,
        force=force,
    )
    answer = undoing.render(result, dry_run=dryRun, head="undo")
    return answer + still_changing(services, ws)


def still_changing(services: Services, ws: Workspace) -> str:
    """A job running in the workspace has changes no undo sees yet: said, not hidden."""
    jobs = services.jobs.still_changing(ws.root)
    if not jobs:
        return ""
    return (
        f"\nStill changing files: {listing(jobs)}; a job's changes are recorded when it ends "
        "(job_kill to stop it), then undo can revert them."
    )


def restore_file(
    services: Services,
    path: Annotated[str, Field(description="File or directory.")],
    before: EntryId,
    workspace: WorkspaceArg = None,
) -> str:
    """Put a path (a directory: all recorded under it) back as before entry `before`,
    whatever changed it since. Undoable."""
    ws = services.workspaces.get(workspace)
    result = undoing.restore(
        ws,
        services.checkpoints(ws),
        services.locks,
        path,
        before,
        subject=history_subject(services.settings.share_history),
    )
    return undoing.render(result, dry_run=False, head="restore") + still_changing(services, ws)


def register(app: FastMCP, services: Services) -> None:
    if not services.settings.checkpoints:
        return  # --no-checkpoints: nothing would be recorded to undo
    add_tool(app, bind(undo, services), annotations=DESTRUCTIVE, title="Undo changes")
    add_tool(app, bind(restore_file, services), annotations=DESTRUCTIVE, title="Restore a path")
