"""`review_changes`: a session's (or a change's) changes for the person in the chat
(issue 33). Hosts that render MCP Apps show the panel `ui://agent-workspace-mcp/review`
(diffs, per-file and whole-set undo through the app-only tools below); every other
client gets the same facts as compact text.

The panel is a small hand-written page, not FastMCP's Prefab renderer: that renderer is
a 7 MB bundle (or a CDN fetch, which hosts' CSPs and offline machines refuse), against a
few kilobytes here; the panel speaks the MCP Apps postMessage protocol itself.
"""

import json
from dataclasses import asdict
from importlib import resources
from typing import Annotated

from fastmcp import Context, FastMCP
from pydantic import Field

from ..core import limits
from ..core.checkpoints import undoing
from ..core.checkpoints.diffs import net_diffs
from ..core.checkpoints.history import History
from ..core.errors import InvalidArgumentError
from ..requestctx import current_subject, history_subject, session_and_client
from ..services import Services
from .base import DESTRUCTIVE, READ_ONLY, WorkspaceArg, add_tool, bind

PANEL_URI = "ui://agent-workspace-mcp/review"
PANEL_MIME = "text/html;profile=mcp-app"

Session = Annotated[str | None, Field(description="Default: this one.")]
Change = Annotated[str | None, Field(description="Or a change id.")]
Since = Annotated[str | None, Field(description="Or a start entry id.")]


def _chosen(services: Services, ctx: Context | None, ws, session, change, since):
    """The calls to review (ids) and how to name them."""
    subject = history_subject(services.settings.share_history)
    if since:
        history = History(services.checkpoints(ws), subject)
        start = history.find(since)
        return {e.id for e in history.entries[start:]}, f"the calls since #{since.lstrip('#')}"
    if change:
        return services.memory.call_ids(ws, change=change), f"change {change}"
    if not session:
        session, _ = session_and_client(ctx)
    if not session:
        raise InvalidArgumentError(
            "this connection has no session (the 2026-07-28 protocol): pass since=<entry id> "
            "or change=<id> (work_log lists the ids)"
        )
    what = "this session" if session == session_and_client(ctx)[0] else f"session {session}"
    return services.memory.call_ids(ws, session=session), what


def _reviewed(services: Services, ctx, workspace, session, change, since):
    ws = services.workspaces.get(workspace)
    ids, what = _chosen(services, ctx, ws, session, change, since)
    subject = history_subject(services.settings.share_history)
    diffs, first = net_diffs(ws, services.checkpoints(ws), ids, subject)
    return ws, ids, what, diffs, first


def review_changes(
    services: Services,
    ctx: Context,
    session: Session = None,
    change: Change = None,
    since: Since = None,
    workspace: WorkspaceArg = None,
) -> str:
    """Show the person this session's changes and how to undo them."""
    _ws, ids, what, diffs, first = _reviewed(services, ctx, workspace, session, change, since)
    if not diffs:
        return f"{what.capitalize()} changed no recorded file ({len(ids)} calls looked at)."
    files = sum(1 for d in diffs if d.change in ("created", "deleted", "modified", "mode"))
    others = len(diffs) - files
    also = f" and {others} other path{'s' * (others != 1)} (folders, links)" if others else ""
    rows = [f"{what.capitalize()} changed {files} file{'s' * (files != 1)}{also}:"]
    width = max(len(d.change) for d in diffs[: limits.UNDO_LINES_SHOWN])
    for d in diffs[: limits.UNDO_LINES_SHOWN]:
        dirlike = " " in d.change  # a folder or a link: no line counts
        counts = "" if dirlike and not d.note else f"  {d.note or f'+{d.plus} -{d.minus}'}"
        rows.append(f"  {d.change:<{width}}  {d.path}{counts}  (first #{first[d.path]})")
    if len(diffs) > limits.UNDO_LINES_SHOWN:
        rows.append(f"  ... and {len(diffs) - limits.UNDO_LINES_SHOWN} more")
    rows.append(
        "Undo a file: restore_file(path, before=<its first id>); everything: "
        + (f"undo(change={change})" if change else "undo(to=<the first id>)")
    )
    return "\n".join(rows)


def review_changes_data(
    services: Services,
    ctx: Context,
    session: Session = None,
    change: Change = None,
    since: Since = None,
    after: Annotated[int, Field(ge=0, description="Next page: the answer's next.")] = 0,
    workspace: WorkspaceArg = None,
) -> str:
    """The review panel's data, a page at a time (`next` continues)."""
    ws, ids, what, diffs, first = _reviewed(services, ctx, workspace, session, change, since)
    # Paged under the answer budget, always whole JSON: cut by the budget's backstop, a
    # session that changed 120 files came back as invalid JSON and the panel showed
    # nothing, exactly when a person most needs it (issue 43).
    files: list[dict] = []
    used = 0
    index = after
    while index < len(diffs):
        d = diffs[index]
        item = {**asdict(d), "first": first[d.path]}
        size = len(json.dumps(item, ensure_ascii=False))
        if size > limits.REVIEW_PAGE_BYTES:  # one huge diff: its head, and how much more
            keep = item["lines"][: limits.REVIEW_FILE_LINES]
            item = {**item, "lines": keep, "more": d.more + len(d.lines) - len(keep)}
            size = len(json.dumps(item, ensure_ascii=False))
        if files and used + size > limits.REVIEW_PAGE_BYTES:
            break
        files.append(item)
        used += size
        index += 1
    waiting = []
    if services.approvals is not None and after == 0:  # shown only: answered in the console
        subject = current_subject()
        waiting = [
            {"id": r["id"], "tool": r.get("tool"), "summary": r.get("summary")}
            for r in services.approvals.pending(ws)
            if r.get("status") == "pending" and r.get("subject") == subject
        ]
    return json.dumps(
        {
            "workspace": ws.name,
            "what": what,
            "ids": sorted(ids)[: limits.REVIEW_IDS],
            "files": files,
            "total": len(diffs),
            "next": index if index < len(diffs) else None,
            "approvals": waiting,
            "canUndo": not services.settings.read_only,
        }
    )


def review_undo(
    services: Services,
    ids: Annotated[list[str], Field(description="Entry ids.")],
    path: Annotated[str | None, Field(description="Only this file.")] = None,
    dryRun: Annotated[bool, Field(description="Preview.")] = False,
    force: Annotated[bool, Field(description="Also if changed since.")] = False,
    workspace: WorkspaceArg = None,
) -> str:
    """The review panel's undo (as `undo`)."""
    ws = services.workspaces.get(workspace)
    result = undoing.undo(
        ws,
        services.checkpoints(ws),
        services.locks,
        subject=history_subject(services.settings.share_history),
        ids=({str(i) for i in ids}, "the reviewed calls"),
        under=path,
        dry_run=dryRun,
        force=force,
    )
    return undoing.render(result, dry_run=dryRun, head="undo")


def panel() -> str:
    return (resources.files(__package__) / "review_panel.html").read_text(encoding="utf-8")


def register(app: FastMCP, services: Services) -> None:
    if not services.settings.checkpoints:
        return  # nothing recorded to review or undo
    app_only = {"ui": {"visibility": ["app"]}}  # the panel calls them; hosts hide them
    add_tool(
        app,
        bind(review_changes, services),
        annotations=READ_ONLY,
        title="Review changes",
        meta={"ui": {"resourceUri": PANEL_URI}},
    )
    add_tool(
        app,
        bind(review_changes_data, services),
        annotations=READ_ONLY,
        title="Review data",
        meta=app_only,
    )
    if not services.settings.read_only:
        add_tool(
            app,
            bind(review_undo, services),
            annotations=DESTRUCTIVE,
            title="Review undo",
            meta=app_only,
        )
    app.resource(
        PANEL_URI,
        name="review_panel",
        mime_type=PANEL_MIME,
        description="The review_changes panel (MCP Apps)",
    )(panel)
