"""Change tracking tools: create/activate a change, stage documents, tasks, constraints."""

from typing import Annotated, Literal

from fastmcp import FastMCP
from pydantic import BaseModel, ConfigDict, Field

from ..core import limits
from ..core.errors import WorkspaceError
from ..core.state.changes import STAGES, suggestion
from ..core.state.journal import activity
from ..core.state.journal.entries import render_entry
from ..services import Services
from .base import READ_ONLY, WorkspaceArg, add_tool, bind, numbers_from_limits
from .memory import STATE_WRITE

Status = Literal["pending", "in_progress", "done", "blocked"]
ChangeId = Annotated[str | None, Field(description="Change id (default: the active one).")]


class TaskUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    taskId: str
    status: Status
    note: str | None = None


def _count(record: dict) -> str:
    tasks = record.get("tasks") or []
    done = sum(1 for t in tasks if t.get("status") == "done")
    return f"{done}/{len(tasks)} done"


def change_create(
    services: Services,
    title: Annotated[
        str, Field(min_length=1, description="What the change is, e.g. 'Add refresh tokens'.")
    ],
    goal: Annotated[str | None, Field(description="The outcome that means it is done.")] = None,
    workspace: WorkspaceArg = None,
) -> str:
    """Create a tracked change (record + documents directory) and make it active."""
    record = services.changes.create(services.workspaces.get(workspace), title, goal)
    activity.record(detail=record["id"])
    return (
        f"Created change {record['id']} at .workspace-mcp/changes/{record['id']}/ "
        "(now active). Next: write the proposal with change_doc"
    )


def change_activate(
    services: Services,
    changeId: Annotated[str, Field(description="The change to make active.")],
    workspace: WorkspaceArg = None,
) -> str:
    """Make an existing change active: journal entries get tagged with it."""
    record = services.changes.activate(services.workspaces.get(workspace), changeId)
    activity.record(detail=changeId)
    return f"Active change: {changeId} ({record.get('title', '')}; {_count(record)})"


def change_doc(
    services: Services,
    stage: Annotated[
        Literal["proposal", "spec", "design", "notes"], Field(description="Which document.")
    ],
    content: Annotated[str, Field(min_length=1, description="Markdown text.")],
    changeId: ChangeId = None,
    append: Annotated[bool, Field(description="Append instead of replacing.")] = False,
    workspace: WorkspaceArg = None,
) -> str:
    """Write a stage document (proposal, spec, design, notes) of a change."""
    ws = services.workspaces.get(workspace)
    change_id = services.changes.write_doc(ws, changeId, stage, content, append)
    activity.record(
        paths=[f".workspace-mcp/changes/{change_id}/{stage}.md"],
        detail=f"{stage} ({'append' if append else 'write'})",
    )
    docs = services.changes.docs(ws, change_id)
    present = ", ".join(s for s in STAGES if docs[s] is not None) or "none"
    return f"Wrote .workspace-mcp/changes/{change_id}/{stage}.md; documents present: {present}"


def change_status(
    services: Services,
    changeId: ChangeId = None,
    all: Annotated[bool, Field(description="List every change instead of one.")] = False,
    workspace: WorkspaceArg = None,
) -> str:
    """The active (or given) change, or all changes: documents, tasks by status,
    constraints, the last {recent} tagged journal entries and a suggested next action."""
    ws = services.workspaces.get(workspace)
    problems: list[str] = []
    try:
        active = services.changes.active(ws)
    except WorkspaceError as exc:
        active, problems = None, [str(exc)]
    if all or (changeId is None and active is None):
        return _list_view(services, ws, active, problems)
    change_id = changeId or active
    assert change_id is not None
    record = services.changes.load(ws, change_id)
    return _full_view(services, ws, record, change_id == active, problems)


def task_add(
    services: Services,
    text: Annotated[str, Field(min_length=1, description="What to do.")],
    changeId: ChangeId = None,
    status: Annotated[Status, Field(description="Initial status.")] = "pending",
    workspace: WorkspaceArg = None,
) -> str:
    """Add a task (ids T1, T2, ...) to a change."""
    task_id, record = services.changes.add_task(
        services.workspaces.get(workspace), changeId, text, status
    )
    activity.record(detail=f"{record['id']} {task_id}")
    return f"Added {task_id} to {record['id']} ({_count(record)})"


def task_update(
    services: Services,
    updates: Annotated[
        list[TaskUpdate], Field(min_length=1, description="Status changes to apply.")
    ],
    changeId: ChangeId = None,
    workspace: WorkspaceArg = None,
) -> str:
    """Set task statuses (with optional notes), all or nothing."""
    change_id, moves = services.changes.update_tasks(
        services.workspaces.get(workspace), changeId, [u.model_dump() for u in updates]
    )
    activity.record(detail=f"{change_id}: {', '.join(moves)}")
    return f"Updated {change_id}: {', '.join(moves)}"


def constraint_add(
    services: Services,
    text: Annotated[str, Field(min_length=1, description="A rule the work must respect.")],
    changeId: ChangeId = None,
    workspace: WorkspaceArg = None,
) -> str:
    """Add a constraint to a change; returns the full list."""
    change_id, constraints = services.changes.add_constraint(
        services.workspaces.get(workspace), changeId, text
    )
    activity.record(detail=change_id)
    listing = "\n".join(f"- {c}" for c in constraints)
    return f"{change_id} has {len(constraints)} constraint(s):\n{listing}"


numbers_from_limits(change_status, recent=limits.CHANGE_RECENT_ENTRIES)


def register(app: FastMCP, services: Services) -> None:
    add_tool(app, bind(change_create, services), annotations=STATE_WRITE, title="Create change")
    add_tool(app, bind(change_activate, services), annotations=STATE_WRITE, title="Activate change")
    add_tool(
        app, bind(change_doc, services), annotations=STATE_WRITE, title="Write change document"
    )
    add_tool(app, bind(change_status, services), annotations=READ_ONLY, title="Change status")
    add_tool(app, bind(task_add, services), annotations=STATE_WRITE, title="Add task")
    add_tool(app, bind(task_update, services), annotations=STATE_WRITE, title="Update tasks")
    add_tool(app, bind(constraint_add, services), annotations=STATE_WRITE, title="Add constraint")


def _list_view(services: Services, ws, active: str | None, problems: list[str]) -> str:
    listing = services.changes.listing(ws)
    rows = []
    for record in listing.records:
        marker = "  (active)" if record.get("id") == active else ""
        rows.append(f"{record.get('id')}  {_count(record)}  {record.get('title', '')}{marker}")
    if not rows:
        rows.append("no changes yet; start one with change_create")
    return "\n".join(rows + [f"skipped: {p}" for p in problems + listing.problems])


def _full_view(services: Services, ws, record: dict, is_active: bool, problems: list[str]) -> str:
    change_id = record["id"]
    docs = services.changes.docs(ws, change_id)
    lines = [f"change {change_id}: {record.get('title', '')}" + (" (active)" if is_active else "")]
    if record.get("goal"):
        lines.append(f"goal: {record['goal']}")
    lines.append(
        "docs: "
        + ", ".join(
            f"{s}.md ({docs[s]} bytes)" if docs[s] is not None else f"{s}.md (missing)"
            for s in STAGES
        )
    )
    tasks = record.get("tasks") or []
    lines.append(f"tasks ({_count(record)}):" if tasks else "tasks: none")
    for status in ("in_progress", "blocked", "pending", "done"):
        for task in tasks:
            if task.get("status") == status:
                notes = task.get("notes") or []
                suffix = f" (note: {notes[-1]})" if notes else ""
                lines.append(f"  {task.get('id')} [{status}] {task.get('text')}{suffix}")
    constraints = record.get("constraints") or []
    if constraints:
        lines.append("constraints:")
        lines.extend(f"  - {c}" for c in constraints)
    recent = services.memory.work_log(ws, limit=limits.CHANGE_RECENT_ENTRIES, change=change_id)
    if recent:
        lines.append("recent activity:")
        lines.extend(f"  {render_entry(e)}" for e in recent)
    lines.extend(f"skipped: {p}" for p in problems)
    lines.append(f"next: {suggestion(record, docs)}")
    return "\n".join(lines)
