"""`workspace_list`: which roots this server serves, and their state at a glance."""

import time
from datetime import datetime

from fastmcp import FastMCP

from ..core import limits
from ..core.echo import echo
from ..core.state.files import has_state_dir
from ..core.workspaces import Workspace
from ..services import Services
from .base import READ_ONLY, add_tool, bind


def shown_root(services: Services, ws: Workspace) -> str:
    """A root as answers show it: its host path over stdio; over HTTP no host path at all
    (`.`, or the session's subpath), since a remote agent cannot use one and should not
    learn the host's layout."""
    if services.settings.http:
        return ws.subpath.rel if ws.subpath else "."
    return ws.base if not ws.confined else ws.root


def render_workspaces(services: Services) -> str:
    rows = []
    for ws in services.workspaces:
        row = f"{ws.name}  {shown_root(services, ws)}"
        if ws.primary:
            row += "  (primary)"
        if not ws.confined:
            row += "  (unconfined)"
        has_state = has_state_dir(ws)
        row += "  state: yes" if has_state else "  state: none"
        change = services.memory.active_change(ws) if has_state else None
        if change:
            row += f"  active change: {change}"
        rows.append(row)
        if has_state:
            rows += _active(services, ws)
    return "\n".join(rows)


def _active(services: Services, ws: Workspace) -> list[str]:
    """The sessions that changed files here in the last minutes, and which files: so an
    agent can keep off a colleague's files."""
    since = time.time() - limits.ACTIVE_SESSION_SECONDS
    recent = services.memory.journal(ws).newest(
        limits.WORK_LOG_MAX,
        lambda r: bool(r.get("session") and r.get("paths") and _epoch(r.get("ts")) >= since),
    )
    sessions: dict[str, tuple[str, list[str]]] = {}
    for record in recent:  # newest first
        sid = str(record["session"])
        # Journal fields are data (an older or planted entry may hold a raw newline).
        named = (record.get("client"), record.get("client_version"))
        who = " ".join(echo(str(x)) for x in named if x)
        by = f", subject {echo(record['by'])}" if record.get("by") else ""
        label, files = sessions.setdefault(echo(sid), (f"{who or 'a client'}{by}", []))
        paths = record["paths"] if isinstance(record["paths"], list) else []
        files += [echo(str(p)) for p in paths if echo(str(p)) not in files]
    minutes = int(limits.ACTIVE_SESSION_SECONDS // 60)
    rows = []
    for sid, (label, files) in list(sessions.items())[: limits.ACTIVE_SESSIONS_SHOWN]:
        shown = ", ".join(files[:5]) + (f" (+{len(files) - 5})" if len(files) > 5 else "")
        rows.append(f"  session {sid} ({label}) changed in the last {minutes} min: {shown}")
    return rows


def _epoch(ts: object) -> float:
    try:
        return datetime.fromisoformat(str(ts).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def workspace_list(services: Services) -> str:
    """List the workspaces: name, root, state, active change, recent sessions."""
    return render_workspaces(services)


def register(app: FastMCP, services: Services) -> None:
    add_tool(
        app,
        bind(workspace_list, services, inline=True),
        annotations=READ_ONLY,
        title="List workspaces",
    )
