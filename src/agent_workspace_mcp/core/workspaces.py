"""Named workspace roots, the primary one, and each root's lazily created state directory.

Roots are stored as absolute, symlink-free paths (realpath at start-up) because the
containment walk compares symlink targets against them textually: a root that is
itself a symlink would make every absolute in-root link look like an escape.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from contextvars import ContextVar
from dataclasses import dataclass, field

from .errors import ConfigError, UnknownWorkspaceError
from .limits import STATE_DIR_NAME

# Set per request by the HTTP layer when the session was opened with x-workspace-subpath:
# the root-relative directory that session is confined to.
SESSION_SUBPATH: ContextVar[str | None] = ContextVar("session_subpath", default=None)

WORKSPACE_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*$")  # seed: --workspace name rule
DEFAULT_NAME = "default"


@dataclass(frozen=True)
class Workspace:
    """One root the tools may touch.

    `root` is the containment boundary; `base` is where relative paths start. They are
    the same directory in confined mode. In unconfined mode `root` is `/` (nothing is
    outside) and `base` is the process cwd, so relative paths behave like a shell's.
    """

    name: str
    root: str
    base: str
    primary: bool = False
    confined: bool = True
    aliases: tuple[str, ...] = field(default=())

    @property
    def state_dir(self) -> str:
        return os.path.join(self.base, STATE_DIR_NAME)


def _real_dir(raw: str, what: str) -> tuple[str, str]:
    if "\x00" in raw:
        raise ConfigError(f"{what} contains a NUL byte")
    absolute = os.path.abspath(os.path.expanduser(raw))
    real = os.path.realpath(absolute)
    if not os.path.isdir(real):
        raise ConfigError(f"{what} does not exist or is not a directory: {raw}")
    return real, absolute


class WorkspaceRegistry:
    """The workspaces one server serves, looked up by the tools' `workspace` argument."""

    def __init__(self, workspaces: Iterable[Workspace]) -> None:
        self._by_name: dict[str, Workspace] = {}
        for ws in workspaces:
            self._by_name[ws.name] = ws
        primaries = [ws for ws in self._by_name.values() if ws.primary]
        if len(primaries) != 1:
            raise ConfigError("exactly one workspace must be primary")
        self.primary = primaries[0]

    @classmethod
    def confined(cls, root: str | None, extra: Iterable[tuple[str, str]] = ()) -> WorkspaceRegistry:
        """Build the registry with the backbone document's rules.

        `--root` is the primary named `default`; without it the first `--workspace`
        is primary unless one is literally named `default`; with neither, the cwd is.
        """
        pairs: list[tuple[str, str]] = []
        if root is not None:
            pairs.append((DEFAULT_NAME, root))
        for name, path in extra:
            if not WORKSPACE_NAME_RE.match(name):
                raise ConfigError(
                    f'invalid workspace name "{name}": use lowercase letters, digits, "_" and "-",'
                    " starting with a letter or digit"
                )
            if any(existing == name for existing, _ in pairs):
                raise ConfigError(f'duplicate workspace name "{name}"')
            pairs.append((name, path))
        if not pairs:
            pairs.append((DEFAULT_NAME, os.getcwd()))
        names = [name for name, _ in pairs]
        primary_name = DEFAULT_NAME if DEFAULT_NAME in names else names[0]
        workspaces = []
        for name, raw in pairs:
            real, absolute = _real_dir(raw, f'workspace "{name}"')
            aliases = tuple(p for p in {absolute} if p != real)
            workspaces.append(
                Workspace(name, real, real, primary=name == primary_name, aliases=aliases)
            )
        return cls(workspaces)

    @classmethod
    def unconfined(cls, cwd: str | None = None) -> WorkspaceRegistry:
        """One workspace whose boundary is `/`: paths are used as given."""
        base = os.path.realpath(cwd or os.getcwd())
        return cls([Workspace(DEFAULT_NAME, "/", base, primary=True, confined=False)])

    def get(self, name: str | None = None) -> Workspace:
        subpath = SESSION_SUBPATH.get()
        if subpath is not None:
            return self._confined_to(subpath, name)
        if name is None or name == "":
            return self.primary
        try:
            return self._by_name[name]
        except KeyError:
            available = ", ".join(self._by_name)
            raise UnknownWorkspaceError(
                f'unknown workspace "{name}". Available: {available}'
            ) from None

    def _confined_to(self, subpath: str, name: str | None) -> Workspace:
        """The primary workspace re-rooted at `subpath` (already validated as contained)."""
        if name not in (None, "", self.primary.name):
            raise UnknownWorkspaceError(
                f'unknown workspace "{name}": this session is confined to {subpath} of '
                f'"{self.primary.name}"'
            )
        if subpath in (".", ""):
            return self.primary
        root = os.path.join(self.primary.root, subpath)
        return Workspace(self.primary.name, root, root, primary=True, confined=True)

    def __iter__(self):
        """Every workspace, or only the confined one inside a subpath-bound session."""
        if SESSION_SUBPATH.get() is not None:
            return iter([self.get()])
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name)
