"""`workspace_list`: which roots this server serves, and their state at a glance."""

import os

from fastmcp import FastMCP

from ..services import Services
from .base import READ_ONLY, add_tool


def render_workspaces(services: Services) -> str:
    rows = []
    for ws in services.workspaces:
        row = f"{ws.name}  {ws.base if not ws.confined else ws.root}"
        if ws.primary:
            row += "  (primary)"
        if not ws.confined:
            row += "  (unconfined)"
        has_state = os.path.isdir(ws.state_dir)
        row += "  state: yes" if has_state else "  state: none"
        change = services.memory.active_change(ws) if has_state else None
        if change:
            row += f"  active change: {change}"
        rows.append(row)
    return "\n".join(rows)


def register(app: FastMCP, services: Services) -> None:
    def workspace_list() -> str:
        """List the workspaces: name, root, (primary), whether state exists, active change."""
        return render_workspaces(services)

    add_tool(app, workspace_list, annotations=READ_ONLY, title="List workspaces")
