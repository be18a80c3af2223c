"""What tool modules share: settings, the workspace registry, and lifespan-owned state.

State that outlives one request lives here, owned by the server process and addressed
by explicit ids, never in MCP session state: on the sessionless 2026-07-28 protocol
every request is its own session.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Protocol

from .core.checkpoints.store import Store
from .core.exec.commands import safe_path_dirs
from .core.exec.jobs import JobRegistry
from .core.exec.process import scrubbed_env
from .core.gitread import GitReader
from .core.search.engine import SearchEngine
from .core.shutdown import Shutdown
from .core.skills import SkillStore
from .core.state.approvals import Approvals
from .core.state.changes import Changes
from .core.state.journal.entries import Memory
from .core.state.locks import PathLocks
from .core.workspaces import SESSION_SUBPATH, Subpath, Workspace, WorkspaceRegistry, WorkspaceView
from .settings import Settings
from .surface import Surface


@dataclass
class SessionInfo:
    """One open HTTP session (or legacy SSE stream): who opened it, and where it is confined."""

    subject: str | None
    subpath: Subpath | None  # resolved once by the containment walk; None: the whole workspace
    raw_subpath: str | None = None  # the header as sent when the session opened
    used: float = field(default_factory=time.monotonic)  # last request, for idle expiry


class Counter(Protocol):
    def inc(self, amount: float = 1) -> None: ...


class MetricsSink(Protocol):
    """What of middleware.metrics.Metrics the transports use (/metrics, auth failures)."""

    @property
    def auth_failures(self) -> Counter: ...

    def exposition(self) -> bytes: ...


@dataclass
class Services:
    # Built from the settings by server.build, the one place that does (no defaults here).
    settings: Settings
    registry: WorkspaceRegistry  # every configured root
    search: SearchEngine
    jobs: JobRegistry
    locks: PathLocks
    memory: Memory
    skills: SkillStore
    bwrap: str | None  # the checked bubblewrap binary when commands are sandboxed
    sandbox_said: str  # how commands run, for the start-up line ("" when none is served)
    stage: str | None = None  # --stage-commands: the checked fuse-overlayfs binary
    shutdown: Shutdown = field(default_factory=Shutdown)
    metrics: MetricsSink | None = None  # middleware.metrics.Metrics when serving HTTP
    changes: Changes = field(default_factory=Changes)
    # HTTP sessions: id -> who opened it and its workspace subpath (transports.http)
    sessions: dict[str, SessionInfo] = field(default_factory=dict)
    surface: Surface | None = None  # what is served (surface.compute), once registered
    approvals: Approvals | None = None  # with --confirm/--confirm-path (issue 32)
    git: GitReader | None = None  # see git_reader
    # (os.environ's items, the child environment made from them): see child_env
    _child_env: tuple[tuple[tuple[str, str], ...], dict[str, str]] | None = field(
        default=None, repr=False
    )

    @property
    def workspaces(self) -> WorkspaceView:
        """What the current request may use (a subpath session sees only its directory)."""
        return self.registry.view(SESSION_SUBPATH.get())

    def git_reader(self) -> GitReader:
        """One reader per server: it keeps each repository's checks between calls."""
        if self.git is None:
            self.git = GitReader(self.child_env, self.child_path_dirs)
        return self.git

    def checkpoints(self, ws: Workspace) -> Store:
        """The workspace's checkpoint store, with the configured cap."""
        return Store(ws, self.settings.checkpoint_max_bytes)

    def child_env(self) -> dict[str, str]:
        """The environment every child process gets: ours, minus secrets, plus NO_COLOR
        (and minus the workers' metrics directory: a job's own prometheus-client must not
        write into our counts). Worked out again only when our environment changed (it
        cost 0.4 ms, on every git call and command)."""
        current = tuple(os.environ.items())
        if self._child_env is None or self._child_env[0] != current:
            env = scrubbed_env(
                {k: v for k, v in current if k != "PROMETHEUS_MULTIPROC_DIR"},
                secrets=self.settings.secret_values(),
                patterns=self.settings.scrub_env,
                keep=self.settings.pass_env,
            )
            self._child_env = (current, env)
        return dict(self._child_env[1])

    def child_path_dirs(self) -> list[str]:
        """PATH entries a child's executable may come from: absolute, outside every root."""
        return safe_path_dirs(os.environ.get("PATH", ""), self.workspaces.roots())
