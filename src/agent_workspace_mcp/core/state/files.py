"""Files under `.workspace-mcp/`: located by identity, opened without following links.

The state directory lives inside the workspace, so the agent can write there too: a
symlink planted as `.workspace-mcp/changes` must not turn a state write into a write
outside the root. Every state path therefore goes through `locate()` like a tool path,
and is then checked to really lie in the state directory (`locate_state`).

Every state file is opened without following a symlink and without blocking, and
must then be a regular file with exactly one link: a FIFO would hang every later call,
a hard link would send journal appends (or `recall` reads) to a file outside the
root. Anything else at a state file's name is reported once on stderr, removed (only
the name in our directory: a hard link's other names are untouched) and recreated.
The file tools cannot write under `.workspace-mcp/` at all (containment's write policy).

Inside `state_scope()` (one tool call that runs no program), a state directory once
located is kept open and reused: a write touches a dozen state files, and walking to
each from the root cost more than the write's own bookkeeping (issue 47, item 4).
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import stat
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any, NamedTuple

from ..containment import Located, is_private, locate, open_root, parts_below
from ..errors import (
    NotFoundError,
    OutsideWorkspaceError,
    TooLargeError,
    WorkspaceError,
)
from ..limits import MAX_FILE_BYTES, MIB, STATE_DIR_NAME
from ..osflags import DIR_FLAGS, NOFOLLOW_NONBLOCK
from ..textio import kind_of
from ..workspaces import Workspace

_warned: set[tuple[str, str]] = set()


def _warn_once(loc: Located, what: str) -> None:
    from ..operator import say

    key = (loc.real_abs, what)
    if key not in _warned:
        _warned.add(key)
        say(f"{loc.real_abs}: was {what}, not a plain state file; replaced it with a new one")


def unsafe(st: os.stat_result) -> str | None:
    """What is wrong with an opened state file, or None for a regular file with one link."""
    if not stat.S_ISREG(st.st_mode):
        return f"a {kind_of(st.st_mode)}"
    if st.st_nlink != 1:
        return f"a hard link ({st.st_nlink} names)"
    return None


def discard(loc: Located, what: str) -> None:
    """Remove whatever sits at a state file's name (never following it) and say so."""
    _warn_once(loc, what)
    try:
        os.unlink(loc.name, dir_fd=loc.dir_fd)
    except FileNotFoundError:
        pass
    except OSError as exc:
        if exc.errno not in (errno.EISDIR, errno.EPERM):  # Linux says EISDIR, POSIX EPERM
            raise
        raise WorkspaceError(
            f"{STATE_DIR_NAME}/{loc.name} is a directory; remove it to let the server use it"
        ) from None


def open_state(loc: Located, flags: int, *, create: bool) -> int | None:
    """An fd on a safe state file: regular, one link, reached without following links.

    Returns None when the file does not exist and `create` is false. A FIFO, socket,
    device, symlink or hard link at the name is discarded (and recreated if `create`).
    """
    for _ in range(3):  # a racing writer may plant something again; give up after that
        try:
            fd = os.open(loc.name, flags | NOFOLLOW_NONBLOCK, 0o600, dir_fd=loc.dir_fd)
        except FileNotFoundError:
            if not create:
                return None
            try:
                create_flags = flags | NOFOLLOW_NONBLOCK | os.O_CREAT | os.O_EXCL
                fd = os.open(loc.name, create_flags, 0o600, dir_fd=loc.dir_fd)
            except FileExistsError:
                continue
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
                what = {errno.ELOOP: "a symlink", errno.ENXIO: "a FIFO or socket"}.get(
                    exc.errno or 0, "a directory"
                )
                discard(loc, what)
                continue
            raise
        st = os.fstat(fd)
        if st.st_nlink == 0 and stat.S_ISREG(st.st_mode):
            # Replaced by a rename since we opened it: no name anywhere, so no file outside
            # the root either. A reader has the previous version whole; a writer tries the
            # new one (discarding here would remove the file that just replaced it).
            if flags & (os.O_WRONLY | os.O_RDWR) == 0:
                return fd
            os.close(fd)
            continue
        problem = unsafe(st)
        if problem is None:
            return fd
        os.close(fd)
        discard(loc, problem)
    raise WorkspaceError(f"{STATE_DIR_NAME}/{loc.name} keeps being replaced; retry")


def _names(parts: tuple[str, ...]) -> tuple[str, ...]:
    """A state path's names, one each (callers may pass "a/b" as one part)."""
    return tuple(p for part in parts for p in part.split("/") if p)


class Held(NamedTuple):
    fd: int  # the state file, opened: the caller closes it
    dir_fd: int  # with `with_dir`, a handle on its folder the caller closes too; else -1


ABSENT = object()  # open_held: the file does not exist (its folder is held and still there)


def open_held(
    ws: Workspace,
    parts: tuple[str, ...],
    flags: int,
    *,
    create: bool = False,
    with_dir: bool = False,
) -> Any:
    """The state file `parts` opened straight in a folder the call's scope already holds:
    no walk from the root (a write opens nine state files). A `Held`;
    ABSENT when it does not exist and `create` is false; None whenever anything is not
    plain (no scope, the folder not held, a link, a FIFO, a hard link, a folder removed
    meanwhile): the caller then goes the full way (`locate_state`, `open_state`), which
    decides and repairs. The same checks as `open_state`: no link followed, never
    blocking, a regular file with exactly one link."""
    scope = _scope.get()
    if scope is None:
        return None
    # Name by name: O_NOFOLLOW guards only the last, so a folder in a name ("a/b") would
    # be followed were it a link. The folders must be held, each reached as itself.
    parts = _names(parts)
    if not parts or any(p in (".", "..") for p in parts):
        return None
    dir_fd = scope.held(ws, parts[:-1])
    if dir_fd is None:
        return None
    extra = os.O_CREAT if create else 0
    try:
        try:
            fd = os.open(parts[-1], flags | extra | NOFOLLOW_NONBLOCK, 0o600, dir_fd=dir_fd)
        except FileNotFoundError:
            # ABSENT only while the folder itself is there (not removed meanwhile).
            return None if create or os.fstat(dir_fd).st_nlink == 0 else ABSENT
        except OSError:
            return None
        if unsafe(os.fstat(fd)) is not None:  # open_state discards it, said once
            os.close(fd)
            return None
        if not with_dir:
            return Held(fd, -1)
        handed, dir_fd = dir_fd, -1  # the caller's to close now
        return Held(fd, handed)
    finally:
        if dir_fd >= 0:
            os.close(dir_fd)


def read_state(loc: Located) -> bytes | None:
    """A whole state file (bounded), or None when it does not exist (or was unsafe)."""
    fd = open_state(loc, os.O_RDONLY, create=False)
    if fd is None:
        return None
    return read_whole(fd, loc.name)


def read_whole(fd: int, name: str) -> bytes:
    """The whole of the open state file `name` (bounded), closing it."""
    try:
        if os.fstat(fd).st_size > MAX_FILE_BYTES:
            raise TooLargeError(f"{STATE_DIR_NAME}/{name} is too large to read")
        chunks, position = [], 0
        while position <= MAX_FILE_BYTES:
            chunk = os.pread(fd, MIB, position)
            if not chunk:
                break
            chunks.append(chunk)
            position += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def state_rel(ws: Workspace, *parts: str) -> str:
    """A state path as `locate()` takes it (relative to the base; absolute when unconfined)."""
    rel = "/".join((STATE_DIR_NAME, *parts))
    return rel if ws.confined else os.path.join(ws.state_dir, *parts)


def _state_prefix(ws: Workspace) -> tuple[str, ...]:
    return parts_below(ws, ws.state_dir)


def locate_state(
    ws: Workspace, *parts: str, create_parents: bool = False, follow_final: bool = False
) -> Located:
    """A state path located like any path, and then checked to really be in the state
    directory: protection follows the directory, not its name, so a `.workspace-mcp`
    (or a folder inside it) planted as a symlink to an ordinary folder is removed (the
    link only, said once) instead of being written through."""
    parts = _names(parts)
    scope = _scope.get() if not follow_final and parts else None
    if scope is not None:
        kept = scope.reuse(ws, parts)
        if kept is None:
            kept = scope.descend(ws, parts, create=create_parents)
        if kept is not None:
            return kept
    prefix = _state_prefix(ws)
    direct = _direct(ws, prefix, parts, scope) if parts and not follow_final else None
    if direct is not None:
        if scope is not None:
            scope.keep(ws, parts, direct)
        return direct
    for _ in range(3):
        try:
            loc = locate(
                ws, state_rel(ws, *parts), create_parents=create_parents, follow_final=follow_final
            )
        except OutsideWorkspaceError:
            _unlink_state_links(ws, parts)  # a link out of the root: replaced the same way
            continue
        if loc.real_parts[: len(prefix)] == prefix and (
            len(parts) <= 1 or _inside(loc.real_parts[len(prefix) :], parts)
        ):
            if scope is not None:
                scope.keep(ws, parts, loc)
            return loc
        loc.close()
        _unlink_state_links(ws, parts)
    raise WorkspaceError(f"{STATE_DIR_NAME} keeps being replaced by a link; remove it and retry")


def _direct(
    ws: Workspace, prefix: tuple[str, ...], parts: tuple[str, ...], scope: _Scope | None = None
) -> Located | None:
    """The usual case, straight down from the root: every folder opened with O_NOFOLLOW
    (so what is reached is the state directory itself, never a link's target). None when
    anything is unusual (a link, a missing folder, not a directory): the general walk
    then decides, and repairs."""
    folders = (*prefix, *parts[:-1])
    fd = open_root(ws)
    reached: list[tuple[int, int]] = []  # (folders reached, a dup of the fd there)
    try:
        for at, part in enumerate(folders, 1):
            nxt = os.open(part, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
            if scope is not None and len(prefix) <= at < len(folders):
                reached.append((at, os.dup(fd)))
    except OSError:
        os.close(fd)
        for _, kept in reached:
            os.close(kept)
        return None
    if scope is not None:  # the state directory and the folders below it, for later
        for at, kept in reached:
            scope.hold(ws, folders[len(prefix) : at], kept, folders[:at])
    loc = Located(ws, fd, parts[-1], (*folders, parts[-1]), "/".join((STATE_DIR_NAME, *parts)))
    if is_private(loc.real_abs):
        loc.close()
        return None  # the walk refuses it in its own words
    return loc


class _Scope:
    """The state directories one call has located, each kept open (an fd on the directory
    itself, so a later rename or link planted at its name is not followed). Shared by the
    threads of the call (its tool, its journal write), which run one after another."""

    def __init__(self) -> None:
        # (root, state dir, folders) -> (fd, the folders' real parts, their display)
        self._dirs: dict[tuple[str, str, tuple[str, ...]], tuple[int, tuple[str, ...], str]] = {}
        self.ensured: set[tuple[str, str]] = set()  # (root, state dir): ensure_state_dir ran
        self._guard = threading.Lock()
        # Ended: a job the call started may still run in its context; it walks afresh and
        # keeps nothing (nobody would close what it kept).
        self._closed = False

    def reuse(self, ws: Workspace, parts: tuple[str, ...]) -> Located | None:
        key = (ws.root, ws.state_dir, parts[:-1])
        with self._guard:
            kept = self._dirs.get(key)
            if kept is None:
                return None
            fd, real, shown = kept
            if os.fstat(fd).st_nlink == 0:  # removed since (a cleared store): walk again
                del self._dirs[key]
                os.close(fd)
                return None
            dir_fd = os.dup(fd)
        name = parts[-1]
        return Located(ws, dir_fd, name, (*real, name), f"{shown}/{name}")

    def descend(
        self, ws: Workspace, parts: tuple[str, ...], *, create: bool = False
    ) -> Located | None:
        """`parts` reached from the nearest folder above it this call has kept (the
        state directory itself, once anything in it was reached), each folder below
        opened with O_NOFOLLOW and kept in turn: no second walk from the root. With
        `create`, a missing folder is made where it is missing (a new checkpoint object's
        fan-out folder: two walks from the root saved). None when no folder above is
        kept, or one below is unusual (a link, a file) or missing without `create`: the
        walk from the root then decides, and repairs."""
        folders = parts[:-1]
        for depth in range(len(folders) - 1, -1, -1):
            with self._guard:
                kept = self._dirs.get((ws.root, ws.state_dir, folders[:depth]))
                if kept is None:
                    continue
                fd = os.dup(kept[0])
            real, shown = kept[1], kept[2]
            try:
                for at in range(depth, len(folders)):
                    try:
                        nxt = os.open(folders[at], DIR_FLAGS, dir_fd=fd)
                    except FileNotFoundError:
                        if not create:
                            raise
                        # Made, then opened as itself: a link planted in between fails
                        # the open (O_NOFOLLOW) and the walk from the root decides.
                        with contextlib.suppress(FileExistsError):
                            os.mkdir(folders[at], 0o777, dir_fd=fd)
                        nxt = os.open(folders[at], DIR_FLAGS, dir_fd=fd)
                    os.close(fd)
                    fd = nxt
                    real, shown = (*real, folders[at]), f"{shown}/{folders[at]}"
                    if at + 1 < len(folders):  # a folder on the way: kept for later too
                        self.hold(ws, folders[: at + 1], os.dup(fd), real, shown)
            except OSError:
                os.close(fd)
                return None
            name = parts[-1]
            loc = Located(ws, fd, name, (*real, name), f"{shown}/{name}")
            if is_private(loc.real_abs):
                loc.close()
                return None  # the walk refuses it in its own words
            self.keep(ws, parts, loc)
            return loc
        return None

    def held(self, ws: Workspace, folders: tuple[str, ...]) -> int | None:
        """A handle of the caller's own (a dup: the caller closes it) on the state folder
        `folders` if this call holds it, else None."""
        with self._guard:
            kept = self._dirs.get((ws.root, ws.state_dir, folders))
            return None if kept is None else os.dup(kept[0])

    def hold(
        self,
        ws: Workspace,
        folders: tuple[str, ...],
        fd: int,
        real: tuple[str, ...],
        shown: str | None = None,
    ) -> None:
        """Keep `fd`, an fd on the state folder `folders` (its real parts from the root);
        closed at once when one is kept already."""
        key = (ws.root, ws.state_dir, folders)
        with self._guard:
            if not self._closed and key not in self._dirs:
                self._dirs[key] = (fd, real, shown or "/".join((STATE_DIR_NAME, *folders)))
                return
        os.close(fd)

    def keep(self, ws: Workspace, parts: tuple[str, ...], loc: Located) -> None:
        if loc.missing or loc.is_root:
            return
        key = (ws.root, ws.state_dir, parts[:-1])
        with self._guard:
            if not self._closed and key not in self._dirs:
                shown = loc.display.rpartition("/")[0]
                self._dirs[key] = (os.dup(loc.dir_fd), loc.real_parts[:-1], shown)

    def close(self) -> None:
        with self._guard:
            self._closed = True
            for fd, _, _ in self._dirs.values():
                os.close(fd)
            self._dirs.clear()


_scope: ContextVar[_Scope | None] = ContextVar("awm_state_scope", default=None)


@contextlib.contextmanager
def state_scope() -> Iterator[None]:
    """State directories located inside are reused until the end (nested: the outer
    scope's): one tool call. A folder moved or replaced meanwhile is not followed (the
    fd is the directory checked); only a process that can already write the state
    directory could move one, and under the sandbox commands cannot."""
    if _scope.get() is not None:
        yield
        return
    scope = _Scope()
    token = _scope.set(scope)
    try:
        yield
    finally:
        _scope.reset(token)
        scope.close()


def _inside(real: tuple[str, ...], parts: tuple[str, ...]) -> bool:
    """Whether the directories of `parts` were walked as themselves (no link among them)."""
    return real[: len(parts) - 1] == parts[:-1]


def _unlink_state_links(ws: Workspace, parts: tuple[str, ...]) -> None:
    """Remove the first symlink among the state directory and its folders on `parts`."""
    for depth in range(len(parts)):
        try:
            loc = locate(ws, state_rel(ws, *parts[:depth]), follow_final=False)
        except WorkspaceError:
            return
        with loc:
            st = loc.lstat()
            if st is not None and stat.S_ISLNK(st.st_mode):
                discard(loc, "a symlink")
                return


def has_state_dir(ws: Workspace) -> bool:
    """Whether `.workspace-mcp/` exists, asked through the containment walk (never by name)."""
    try:
        with locate(ws, state_rel(ws), follow_final=False) as loc:
            st = loc.lstat()
    except WorkspaceError:
        return False
    return st is not None and stat.S_ISDIR(st.st_mode)


def ensure_state_dir(ws: Workspace) -> None:
    """Create `.workspace-mcp/` and its own `.gitignore` (`*`) on first use, contained.

    The repository's own `.gitignore` is never touched; O_EXCL means two servers racing
    on a fresh workspace do not both write the file.
    """
    scope = _scope.get()
    key = (ws.root, ws.state_dir)
    if scope is not None and key in scope.ensured:
        return  # made or found earlier in this call
    with locate_state(ws, ".gitignore", create_parents=True) as loc:
        if loc.lstat() is None:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                fd = os.open(loc.name, flags, 0o644, dir_fd=loc.dir_fd)
            except FileExistsError:
                pass
            else:
                try:
                    os.write(fd, b"*\n")
                finally:
                    os.close(fd)
    if scope is not None:
        scope.ensured.add(key)


def sibling(loc: Located, name: str) -> Located:
    """Another entry of the directory `loc` is in, sharing its fd: never close it (the
    original's context closes the fd for both)."""
    # Built directly: dataclasses.replace costs ten times as much.
    display = posixpath.join(posixpath.dirname(loc.display), name)
    real = (*loc.real_parts[:-1], name)
    return Located(loc.workspace, loc.dir_fd, name, real, display, loc.missing)


@contextlib.contextmanager
def existing(ws: Workspace, *parts: str) -> Iterator[Located | None]:
    """The located state file, or None when it (or its directory) does not exist yet."""
    try:
        loc = locate_state(ws, *parts)
    except NotFoundError:
        yield None
        return
    with loc:
        yield loc if loc.lstat() is not None else None
