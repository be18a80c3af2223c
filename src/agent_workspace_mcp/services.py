"""What tool modules share: settings, the workspace registry, and lifespan-owned state.

State that outlives one request lives here, owned by the server process and addressed
by explicit ids, never in MCP session state: on the sessionless 2026-07-28 protocol
every request is its own session.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from .core.changes import Changes
from .core.checkpoints.store import Store
from .core.commands import safe_path_dirs
from .core.jobs import JobRegistry, default_job_dir
from .core.limits import JOURNAL_MAX_BYTES_DEFAULT
from .core.locks import PathLocks
from .core.memory import Memory
from .core.process import scrubbed_env
from .core.search.engine import SearchEngine
from .core.shutdown import Shutdown
from .core.skills import SkillStore
from .core.workspaces import SESSION_SUBPATH, Workspace, WorkspaceRegistry, WorkspaceView
from .settings import Settings


@dataclass
class Services:
    settings: Settings
    registry: WorkspaceRegistry  # every configured root
    shutdown: Shutdown = field(default_factory=Shutdown)
    locks: PathLocks = field(default_factory=PathLocks)
    search: SearchEngine = field(default_factory=SearchEngine)
    jobs: JobRegistry = field(default_factory=lambda: JobRegistry(default_job_dir()))
    bwrap: str | None = None  # the checked bubblewrap binary when commands are sandboxed
    sandbox_said: str = ""  # how commands run, for the start-up line ("" when none is served)
    metrics: Any = None  # middleware.metrics.Metrics when serving HTTP
    memory: Memory = field(default_factory=lambda: Memory(JOURNAL_MAX_BYTES_DEFAULT))
    changes: Changes = field(default_factory=Changes)
    skills: SkillStore = field(default_factory=SkillStore)
    # HTTP sessions: id -> who opened it and its workspace subpath (transports.http)
    sessions: dict = field(default_factory=dict)

    @property
    def workspaces(self) -> WorkspaceView:
        """What the current request may use (a subpath session sees only its directory)."""
        return self.registry.view(SESSION_SUBPATH.get())

    def checkpoints(self, ws: Workspace) -> Store:
        """The workspace's checkpoint store, with the configured cap."""
        return Store(ws, self.settings.checkpoint_max_bytes)

    def child_env(self) -> dict[str, str]:
        """The environment every child process gets: ours, minus secrets, plus NO_COLOR
        (and minus the workers' metrics directory: a job's own prometheus-client must not
        write into our counts)."""
        return scrubbed_env(
            {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"},
            secrets=self.settings.secret_values(),
            patterns=self.settings.scrub_env,
            keep=self.settings.pass_env,
        )

    def child_path_dirs(self) -> list[str]:
        """PATH entries a child's executable may come from: absolute, outside every root."""
        return safe_path_dirs(os.environ.get("PATH", ""), self.workspaces.roots())
