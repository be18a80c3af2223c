"""agent-workspace-mcp: a safe, fast MCP workspace for coding agents.

Library use::

    from fastmcp import Client
    from agent_workspace_mcp import Settings, create_server

    async with Client(create_server(Settings(root="/path/to/project"))) as client:
        await client.call_tool("read_file", {"path": "README.md"})
"""

from .core.errors import ConfigError, WorkspaceError
from .settings import Settings


def create_server(settings: Settings | None = None):  # -> fastmcp.FastMCP
    """Build the FastMCP server for `settings` (imports FastMCP on first use)."""
    from .server import create_server as _create

    return _create(settings)


__all__ = ["ConfigError", "Settings", "WorkspaceError", "create_server"]
