"""`workspace_list`: which roots this server serves, and their state at a glance."""

from fastmcp import FastMCP

from ..core.statefiles import has_state_dir
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
    return "\n".join(rows)


def workspace_list(services: Services) -> str:
    """List the workspaces: name, root, (primary), whether state exists, active change."""
    return render_workspaces(services)


def register(app: FastMCP, services: Services) -> None:
    add_tool(
        app,
        bind(workspace_list, services, inline=True),
        annotations=READ_ONLY,
        title="List workspaces",
    )
