"""The one place that decides whether a path is inside a workspace, and opens it.

Checking a path and then using it by name is a race: between the two, a directory
can be swapped for a symlink to `/etc`. So the check *is* the open. `locate()` walks
the path one component at a time from the root's directory fd with
`openat(O_NOFOLLOW | O_DIRECTORY)`; it never asks the kernel to follow a symlink.
When a component is a symlink, its target is read and walked again from the root
(absolute targets must start inside the root, relative ones continue from the link's
directory, `..` can never climb above the root), so links that stay inside keep
working and links that leave are refused. The caller receives the open directory fd
of the final component and does every create, replace, read or delete relative to
that fd, so what was checked is what gets used.

Component-wise `openat` is used rather than Linux `openat2(RESOLVE_BENEATH)` because
RESOLVE_BENEATH refuses absolute symlinks even when they point inside the root, and
real repositories contain those; the walk gives the same guarantee portably.

The walk starts from `open_root()`, which is also what every subprocess (rg, git,
commands) gets as its working directory (`/proc/self/fd/N`), so a subpath session's
root is reached the same checked way everywhere.

Writes (`write=True`) are also where the host-integrity policy lives: nothing under a
`.git` (hooks and config there run later as the user, outside any sandbox) unless the
operator allowed it, and nothing under `.workspace-mcp/` (the server's own journal and
notes, written only through the memory tools).
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import stat
from collections import deque
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from . import features
from .errors import (
    InvalidPathError,
    NotFoundError,
    OutsideWorkspaceError,
    WorkspaceError,
    WrongTypeError,
    describe_os_error,
)
from .limits import PATH_MAX_CHARS, STATE_DIR_NAME, SYMLINK_HOPS
from .nearmiss import closest_entry
from .osflags import DIR_FLAGS
from .workspaces import Subpath, Workspace

GIT_DIR_NAME = ".git"


class ProtectedPathError(WorkspaceError):
    """A write under `.git` or `.workspace-mcp/`, refused by policy."""


class SessionRootGoneError(WorkspaceError):
    """A subpath session's directory is no longer the one it was opened on."""


def open_root(ws: Workspace) -> int:
    """An fd on the workspace root; for a subpath session, the very directory it opened on.

    The subpath is walked from the primary root with O_NOFOLLOW (its components were
    resolved once, so none is a symlink) and its identity compared with the recorded
    one: a directory replaced by a symlink, or moved and recreated, is refused.
    """
    if ws.anchor is None or ws.subpath is None:
        return os.open(ws.root, DIR_FLAGS & ~os.O_NOFOLLOW)
    fd = open_root(ws.anchor)
    try:
        for part in ws.subpath.parts:
            nxt = os.open(part, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise _gone(ws) from None
    if (st.st_dev, st.st_ino) != ws.subpath.ident:
        os.close(fd)
        raise _gone(ws)
    return fd


def _gone(ws: Workspace) -> SessionRootGoneError:
    rel = ws.subpath.rel if ws.subpath else ws.root
    return SessionRootGoneError(
        f"this session's directory {rel} was moved or replaced since the session opened; "
        "open a new session"
    )


def open_dir(ws: Workspace, rel_parts: tuple[str, ...] = ()) -> int:
    """An fd on a directory given by real (symlink-free) components below the root."""
    fd = open_root(ws)
    for part in rel_parts:
        try:
            nxt = os.open(part, DIR_FLAGS, dir_fd=fd)
        except OSError:
            os.close(fd)
            raise WorkspaceError(
                f"{'/'.join(rel_parts)}: changed while being opened; retry"
            ) from None
        os.close(fd)
        fd = nxt
    return fd


@contextlib.contextmanager
def root_cwd(ws: Workspace, rel_parts: tuple[str, ...] = ()) -> Iterator[str]:
    """A working directory for a child process: `/proc/self/fd/N` of the checked directory
    (the checked path where there is no /proc; see core.features).

    The kernel resolves that magic link to the directory object itself, so the child
    starts exactly where the walk ended, whatever is renamed or swapped meanwhile.
    `rel_parts` are real (symlink-free) components below the root.
    """
    fd = open_dir(ws, rel_parts)
    try:
        yield features.fd_path(fd, os.path.join(ws.root, *rel_parts))
    finally:
        os.close(fd)


def _parent_hint(shown: str, missing: str, dir_fd: int) -> str:
    """` (did you mean src/a.py?)` when the missing directory has a close sibling."""
    match = closest_entry(dir_fd, missing)
    if match is None:
        return ""
    segments = shown.split("/")
    if segments.count(missing) == 1:  # name the whole corrected path the caller can reuse
        return f" (did you mean {'/'.join(match if s == missing else s for s in segments)}?)"
    return f" (no directory {missing}; did you mean {match}?)"


def parts_below(ws: Workspace, real_abs: str) -> tuple[str, ...]:
    """The components of a resolved absolute path below the root (inverse of `real_abs`)."""
    inside = _strip_root(ws, real_abs) if ws.confined else _split(real_abs)
    if inside is None:
        raise OutsideWorkspaceError(real_abs)
    return tuple(inside)


def resolve_subpath(ws: Workspace, raw: str) -> Subpath:
    """An existing directory below `ws` as a session's root: its real components and its
    (dev, inode), resolved once through the walk. `open_root()` then reaches it by those
    components, never following a link, and refuses it if its identity changed."""
    with locate(ws, raw) as loc:
        # Rooted inside .git or the state directory, a session's paths have no `.git`
        # component left for the write policy to see (its hooks would run at the user's
        # next commit); real components, so a link to either is caught too.
        for part in loc.real_parts:
            if part.casefold() in (GIT_DIR_NAME, STATE_DIR_NAME):
                raise ProtectedPathError(
                    f"refused: {raw} is inside {part}, which a session cannot be rooted in"
                )
        try:
            fd = os.open(loc.name or ".", DIR_FLAGS, dir_fd=loc.dir_fd)
        except OSError:
            raise WorkspaceError(f"must name an existing directory: {raw}") from None
        try:
            st = os.fstat(fd)
        finally:
            os.close(fd)
        return Subpath(loc.real_parts, (st.st_dev, st.st_ino))


def protected_reason(ws: Workspace, parts: tuple[str, ...], shown: str) -> str | None:
    """Why a write at these real components is refused, or None when it is allowed."""
    for part in parts:
        folded = part.casefold()
        if folded == GIT_DIR_NAME and not ws.allow_git_writes:
            return (
                f"{shown}: writing inside .git is refused (hooks and config there run as the "
                "user); the operator can allow it with --allow-git-writes"
            )
        if folded == STATE_DIR_NAME:
            return (
                f"{shown}: {STATE_DIR_NAME}/ holds the server's own journal and notes and is "
                "read-only to file tools; use remember or the change tools"
            )
    return None


@dataclass
class Located:
    """An open handle on where a path lives: its parent directory fd and final name.

    `name` is empty when the path is the root (or the unconfined `/`) itself; then
    `dir_fd` is the directory. Use as a context manager so the fd is always closed.
    """

    workspace: Workspace
    dir_fd: int
    name: str
    real_parts: tuple[str, ...]  # components from the root after resolving symlinks
    display: str  # the caller's path, normalized, as answers should show it
    # Missing parent directories, created only by `make_parents()` (`defer_parents=True`),
    # so a dry run or a rejected change leaves no directory behind.
    missing: tuple[str, ...] = ()

    @property
    def is_root(self) -> bool:
        return self.name == ""

    @property
    def real_rel(self) -> str:
        """The resolved path relative to the root (`.` for the root)."""
        return "/".join(self.real_parts) or "."

    @property
    def real_abs(self) -> str:
        # posixpath.join's result for names (never empty, never with a slash), built
        # directly: a write asks for it a dozen times, and join cost 2 us a call.
        root, parts = self.workspace.root, self.real_parts
        if not parts:
            return root
        return (root if root.endswith("/") else root + "/") + "/".join(parts)

    def make_parents(self) -> list[tuple[int, str]]:
        """Create the deferred missing directories; returns (parent fd, name) of each created.

        Each is made with `mkdirat` and re-opened with O_NOFOLLOW, so a racing symlink
        is caught. The caller owns the returned fds: `remove_created()` undoes them,
        `forget_created()` keeps them.
        """
        made: list[tuple[int, str]] = []
        while self.missing:
            comp, *rest = self.missing
            try:
                os.mkdir(comp, 0o777, dir_fd=self.dir_fd)
                made.append((os.dup(self.dir_fd), comp))
            except FileExistsError:
                pass
            except OSError as exc:
                remove_created(made)
                raise WorkspaceError(describe_os_error(exc, self.display)) from None
            try:
                fd = os.open(comp, DIR_FLAGS, dir_fd=self.dir_fd)
            except OSError:
                remove_created(made)
                raise WorkspaceError(
                    f"{self.display}: changed while being created; retry"
                ) from None
            os.close(self.dir_fd)
            self.dir_fd = fd
            self.missing = tuple(rest)
        return made

    @contextlib.contextmanager
    def parents_made(self) -> Iterator[None]:
        """Create the deferred parents for the body; remove them again if it fails."""
        made = self.make_parents()
        try:
            yield
        except BaseException:
            remove_created(made)
            raise
        forget_created(made)

    def lstat(self) -> os.stat_result | None:
        """The entry itself (a symlink is not followed), or None when it does not exist."""
        if self.missing:
            return None
        try:
            if self.is_root:
                return os.fstat(self.dir_fd)
            return os.stat(self.name, dir_fd=self.dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def close(self) -> None:
        if self.dir_fd >= 0:
            os.close(self.dir_fd)
            self.dir_fd = -1

    def __enter__(self) -> Located:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def remove_created(made: list[tuple[int, str]]) -> None:
    """Remove directories `make_parents()` created (innermost first), if still empty."""
    for dir_fd, name in reversed(made):
        with contextlib.suppress(OSError):
            os.rmdir(name, dir_fd=dir_fd)
        os.close(dir_fd)
    made.clear()


def forget_created(made: list[tuple[int, str]]) -> None:
    """Keep the directories `make_parents()` created; just release their fds."""
    for dir_fd, _ in made:
        os.close(dir_fd)
    made.clear()


def display_path(ws: Workspace, user_path: str) -> str:
    """The caller's path as answers show it: normalized, relative to the base when inside it.

    Display only: `..` is applied lexically here, which can differ from the walk when a
    symlink precedes it; the walk alone decides containment.
    """
    user_path = _check_input(user_path)
    if user_path.startswith("/"):
        inside = _strip_root(ws, user_path) if ws.confined else None
        if inside is None:
            absolute = posixpath.normpath(user_path)
            if not ws.confined and (absolute == ws.base or absolute.startswith(ws.base + "/")):
                return absolute[len(ws.base) + 1 :] or "."
            return absolute
        return posixpath.normpath("/".join(inside)) if inside else "."
    return posixpath.normpath(user_path) if user_path else "."


def _split(path: str) -> list[str]:
    return [p for p in path.split("/") if p not in ("", ".")]


def _check_input(user_path: object) -> str:
    if not isinstance(user_path, str):
        raise InvalidPathError("path must be a string")
    if "\x00" in user_path:
        raise InvalidPathError("path contains a NUL byte")
    if len(user_path) > PATH_MAX_CHARS:
        raise InvalidPathError(f"path is longer than {PATH_MAX_CHARS} characters")
    return user_path


def _strip_root(ws: Workspace, absolute: str) -> list[str] | None:
    """Components below the root for an absolute path inside it, else None.

    Textual on purpose: roots are symlink-free, so `root + "/"` as a prefix is exact,
    and `/x/ws_evil` never matches the root `/x/ws`.
    """
    if ws.root == "/":
        return _split(absolute)
    for prefix in (ws.root, *ws.aliases):
        if absolute == prefix or absolute.startswith(prefix + "/"):
            return _split(absolute[len(prefix) :])
    return None


def locate(
    ws: Workspace,
    user_path: str,
    *,
    follow_final: bool = True,
    create_parents: bool = False,
    defer_parents: bool = False,
    write: bool = False,
) -> Located:
    """Resolve `user_path` inside `ws` and return an open handle on its parent directory.

    - `follow_final`: resolve a symlink in the last component (reads and writes go to
      the link's target, which must be inside); False acts on the link itself (delete,
      move, info).
    - `create_parents`: create missing intermediate directories (each one created with
      `mkdirat` and re-opened with O_NOFOLLOW, so a racing symlink is caught).
    - `defer_parents`: a missing parent is not an error and is not created yet; the
      handle lists it in `missing` and `make_parents()` creates it when the caller commits.
    - `write`: the caller will modify the path; writes under `.git` (unless allowed) and
      under `.workspace-mcp/` are refused (ProtectedPathError), before anything is created.

    Raises OutsideWorkspaceError with `path outside workspace root: <input>` for any
    escape, InvalidPathError for malformed input, NotFoundError for a missing parent.
    The final component itself need not exist.
    """
    user_path = _check_input(user_path)
    shown = display_path(ws, user_path)
    if ws.confined and _climbs_out(user_path):
        # Refused before touching the disk, so the answer is the same whether or not
        # the intermediate directories exist (no probing of what lies outside).
        raise OutsideWorkspaceError(user_path)
    if user_path.startswith("/"):
        start = _strip_root(ws, user_path)
        if start is None:
            raise OutsideWorkspaceError(user_path)
    else:
        start = (_strip_root(ws, ws.base) or []) + _split(user_path)
    if write:
        reason = protected_reason(ws, tuple(_split(user_path)), shown)
        if reason:
            raise ProtectedPathError(reason)
    located = _walk(ws, start, user_path, shown, follow_final, create_parents, defer_parents, write)
    if is_private(located.real_abs):
        located.close()
        raise ProtectedPathError(
            f"{shown}: the server's private state (its approval key) is out of every tool's reach"
        )
    if write:
        reason = protected_reason(ws, located.real_parts, shown)
        check = _write_check.get()
        try:
            if reason:
                raise ProtectedPathError(reason)
            if check is not None:
                check(located)
        except BaseException:
            located.close()
            raise
    return located


def is_private(real_abs: str) -> bool:
    """Whether a resolved path lies in the user's private state directory (core.proofkey),
    which a root may contain (`--root ~`) when no --confirm refused to start."""
    from .proofkey import private_dir

    where = private_dir()
    return real_abs == where or real_abs.startswith(where + "/")


# The approval gate's check of every write a call opens (issue 43): what the write
# resolves to, at the open itself, against the paths a person approved. Set per call
# (a context variable, so it follows the call into its worker thread).
_write_check: ContextVar[Callable[[Located], None] | None] = ContextVar(
    "awm_write_check", default=None
)


@contextlib.contextmanager
def checking_writes(check: Callable[[Located], None]) -> Iterator[None]:
    token = _write_check.set(check)
    try:
        yield
    finally:
        _write_check.reset(token)


def _climbs_out(user_path: str) -> bool:
    """Whether `..` lexically climbs above where the path starts (the root or the base)."""
    depth = 0
    for part in _split(user_path.lstrip("/")):
        depth += -1 if part == ".." else 1
        if depth < 0:
            return True
    return False


def _walk(
    ws: Workspace,
    parts: list[str],
    user_path: str,
    shown: str,
    follow_final: bool,
    create_parents: bool,
    defer_parents: bool = False,
    write: bool = False,
) -> Located:
    pending: deque[str] = deque(p for p in parts if p not in ("", "."))
    names: list[str] = []  # real components from the root
    fds: list[int] = [open_root(ws)]
    hops = 0

    def restart_at_link(link_dir_fd: int, link_name: str) -> None:
        """Replace the pending path with the link's target, walked from the right place."""
        nonlocal hops
        hops += 1
        if hops > SYMLINK_HOPS:
            raise WorkspaceError(f"{shown}: too many levels of symbolic links")
        try:
            target = os.readlink(link_name, dir_fd=link_dir_fd)
        except OSError:  # no longer a link (or gone): swapped between our two looks
            raise WorkspaceError(f"{shown}: changed while being opened; retry") from None
        if target.startswith("/"):
            inside = _strip_root(ws, target)
            if inside is None:
                raise OutsideWorkspaceError(user_path)
            while len(fds) > 1:
                os.close(fds.pop())
            names.clear()
            pending.extendleft(reversed(inside))
        else:
            pending.extendleft(reversed(_split(target)))

    try:
        while pending:
            comp = pending.popleft()
            if comp == "..":
                if not names:
                    if ws.confined:
                        raise OutsideWorkspaceError(user_path)
                    continue  # "/.." is "/"
                names.pop()
                os.close(fds.pop())
                continue
            while pending and pending[0] == ".":
                pending.popleft()
            if not pending:
                # The final component: it may not exist yet, and is never opened here.
                try:
                    st = os.stat(comp, dir_fd=fds[-1], follow_symlinks=False)
                except FileNotFoundError:
                    st = None
                if follow_final and st is not None and stat.S_ISLNK(st.st_mode):
                    restart_at_link(fds[-1], comp)
                    continue
                located = Located(ws, fds.pop(), comp, (*names, comp), shown)
                return located
            try:
                fd = os.open(comp, DIR_FLAGS, dir_fd=fds[-1])
            except FileNotFoundError:
                if defer_parents and ".." not in pending:
                    missing = (comp, *[p for p in pending if p != "."])
                    name = missing[-1]
                    return Located(
                        ws, fds.pop(), name, (*names, *missing), shown, missing=missing[:-1]
                    )
                if not create_parents:
                    hint = _parent_hint(shown, comp, fds[-1])
                    raise NotFoundError(f"{shown}: parent directory not found{hint}") from None
                # A symlink may have led the walk into .git: nothing is created there.
                reason = protected_reason(ws, (*names, comp), shown) if write else None
                if reason:
                    raise ProtectedPathError(reason) from None
                # A racing creator may win; the O_NOFOLLOW re-open below decides.
                with contextlib.suppress(FileExistsError):
                    os.mkdir(comp, 0o777, dir_fd=fds[-1])
                pending.appendleft(comp)
                continue
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                try:
                    st = os.stat(comp, dir_fd=fds[-1], follow_symlinks=False)
                except FileNotFoundError:  # renamed away since the open
                    raise WorkspaceError(f"{shown}: changed while being opened; retry") from None
                if stat.S_ISLNK(st.st_mode):
                    restart_at_link(fds[-1], comp)
                    continue
                raise WrongTypeError(f"{shown}: a parent of the path is not a directory") from None
            names.append(comp)
            fds.append(fd)
        # Every component consumed: the target is the directory we stand in.
        if not names:
            return Located(ws, fds.pop(), "", (), shown)
        name = names[-1]
        os.close(fds.pop())
        return Located(ws, fds.pop(), name, tuple(names), shown)
    finally:
        for fd in fds:
            os.close(fd)
