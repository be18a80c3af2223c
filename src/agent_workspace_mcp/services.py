"""What tool modules share: settings, the workspace registry, and lifespan-owned state.

State that outlives one request lives here, owned by the server process and addressed
by explicit ids, never in MCP session state: on the sessionless 2026-07-28 protocol
every request is its own session.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .core.locks import PathLocks
from .core.search.engine import SearchEngine
from .core.shutdown import Shutdown
from .core.workspaces import WorkspaceRegistry
from .settings import Settings


@dataclass
class Services:
    settings: Settings
    workspaces: WorkspaceRegistry
    shutdown: Shutdown = field(default_factory=Shutdown)
    locks: PathLocks = field(default_factory=PathLocks)
    search: SearchEngine = field(default_factory=SearchEngine)
