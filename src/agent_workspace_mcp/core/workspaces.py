"""Named workspace roots, the primary one, and each root's lazily created state directory.

Roots are stored as absolute, symlink-free paths (realpath at start-up) because the
containment walk compares symlink targets against them textually: a root that is
itself a symlink would make every absolute in-root link look like an escape.

A session confined to a subpath (HTTP `x-workspace-subpath`) gets a `Workspace` whose
root is a directory *inside* the primary one. Its path string is for display only:
the directory is reached by walking `sub_parts` from the primary root without
following any symlink, and its (device, inode) must still be the one recorded when
the session opened (`containment.open_root`). Replacing `sub` by a symlink to `/etc`
therefore cannot move the session, whoever does it.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field, replace

from .echo import echo, listing
from .errors import ConfigError, UnknownWorkspaceError
from .limits import STATE_DIR_NAME
from .nearmiss import closest


@dataclass(frozen=True)
class Subpath:
    """A directory below the primary root, as resolved once by the containment walk."""

    parts: tuple[str, ...]  # real components from the primary root (no symlinks)
    ident: tuple[int, int]  # (st_dev, st_ino) when it was resolved

    @property
    def rel(self) -> str:
        return "/".join(self.parts) or "."


# Set per request by the HTTP layer when the session was opened with x-workspace-subpath.
SESSION_SUBPATH: ContextVar[Subpath | None] = ContextVar("session_subpath", default=None)

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
    # Writes under any `.git` are refused unless the operator passed --allow-git-writes.
    allow_git_writes: bool = False
    # Set for a subpath-bound session's view: the primary workspace and where below it.
    anchor: Workspace | None = field(default=None, compare=False)
    subpath: Subpath | None = None

    @functools.cached_property  # asked a few dozen times per write (frozen: never changes)
    def state_dir(self) -> str:
        return os.path.join(self.base, STATE_DIR_NAME)


def _real_dir(raw: str, what: str) -> tuple[str, str]:
    if "\x00" in raw:
        raise ConfigError(f"{what} contains a NUL byte")
    if not raw.strip():
        # An unset variable in a client config (`--root "$PROJECT"`) would otherwise
        # serve whatever directory the client started the server in.
        raise ConfigError(
            f"{what} is empty (an unset variable in a client config?); name the project directory"
        )
    absolute = os.path.abspath(os.path.expanduser(raw))
    real = os.path.realpath(absolute)
    if not os.path.isdir(real):
        shown = raw if raw == absolute else f"{raw} (resolved to {absolute})"
        raise ConfigError(
            f"{what} does not exist or is not a directory: {shown}{_near_dir(absolute)}"
        )
    return real, absolute


def _near_dir(absolute: str) -> str:
    """`; did you mean /x/project?` for a mistyped directory, from its parent's entries."""

    parent, name = os.path.split(absolute)
    try:
        siblings = [e.name for e in os.scandir(parent) if e.is_dir()]
    except OSError:
        return ""
    close = closest(name, siblings)
    return f"; did you mean {os.path.join(parent, close[0])}?" if close else ""


class WorkspaceRegistry:
    """The workspaces one server serves, looked up by the tools' `workspace` argument."""

    def __init__(self, workspaces: Iterable[Workspace], *, allow_git_writes: bool = False) -> None:
        self._by_name: dict[str, Workspace] = {}
        for ws in workspaces:
            self._by_name[ws.name] = replace(ws, allow_git_writes=allow_git_writes)
        primaries = [ws for ws in self._by_name.values() if ws.primary]
        if len(primaries) != 1:
            raise ConfigError("exactly one workspace must be primary")
        self.primary = primaries[0]

    @classmethod
    def confined(
        cls,
        root: str | None,
        extra: Iterable[tuple[str, str]] = (),
        *,
        allow_git_writes: bool = False,
    ) -> WorkspaceRegistry:
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
                    f'invalid workspace name "{echo(name)}": use lowercase letters, digits, "_" '
                    'and "-", starting with a letter or digit'
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
        return cls(workspaces, allow_git_writes=allow_git_writes)

    @classmethod
    def unconfined(
        cls, cwd: str | None = None, *, allow_git_writes: bool = False
    ) -> WorkspaceRegistry:
        """One workspace whose boundary is `/`: paths are used as given."""
        base = os.path.realpath(cwd or os.getcwd())
        return cls(
            [Workspace(DEFAULT_NAME, "/", base, primary=True, confined=False)],
            allow_git_writes=allow_git_writes,
        )

    def get(self, name: str | None = None) -> Workspace:
        """A configured workspace by name (the primary for None); ignores any session."""
        if name is None or name == "":
            return self.primary
        if not isinstance(name, str):
            raise UnknownWorkspaceError("workspace must be a workspace name (a string)")
        try:
            return self._by_name[name]
        except KeyError:
            raise UnknownWorkspaceError(
                f'unknown workspace "{echo(name)}". Available: {listing(self._by_name)}'
            ) from None

    def roots(self) -> list[str]:
        """Every configured root."""
        return [ws.root for ws in self._by_name.values()]

    def view(self, subpath: Subpath | None = None) -> WorkspaceView:
        """What one request may use: everything, or one subpath of the primary."""
        return WorkspaceView(self, subpath)

    def __iter__(self) -> Iterator[Workspace]:
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name)


class WorkspaceView:
    """The workspaces one request may use: all of them, or, for a session confined to a
    subpath, only the primary re-rooted there. Iteration, length, `primary` and `get()`
    all answer for the same set."""

    def __init__(self, registry: WorkspaceRegistry, subpath: Subpath | None) -> None:
        self.registry = registry
        self.subpath = subpath
        self._confined = None if subpath is None else self._confine(subpath)

    def _confine(self, subpath: Subpath) -> Workspace:
        primary = self.registry.primary
        if not subpath.parts:
            return primary
        root = os.path.join(primary.root, *subpath.parts)
        return Workspace(
            primary.name,
            root,
            root,
            primary=True,
            confined=True,
            allow_git_writes=primary.allow_git_writes,
            anchor=primary,
            subpath=subpath,
        )

    @property
    def primary(self) -> Workspace:
        return self._confined or self.registry.primary

    def get(self, name: str | None = None) -> Workspace:
        if self._confined is None:
            return self.registry.get(name)
        if name not in (None, "", self._confined.name):
            assert self.subpath is not None
            raise UnknownWorkspaceError(
                f'unknown workspace "{echo(name)}": this session is confined to {self.subpath.rel} '
                f'of "{self._confined.name}"'
            )
        return self._confined

    def roots(self) -> list[str]:
        """Every configured root (PATH rules keep all of them out, whatever the view)."""
        return self.registry.roots()

    def __iter__(self) -> Iterator[Workspace]:
        return iter([self._confined] if self._confined is not None else self.registry)

    def __len__(self) -> int:
        return 1 if self._confined is not None else len(self.registry)
