"""What a path holds, as a checkpoint records it, and how to put it back.

A state is a small dict (it is stored in JSON):
- `{"t": "-"}` nothing there;
- `{"t": "f", "m": mode, "s": size, "h": sha256, "o": 1}` a regular file; `o` when its
  content is in the store (a before-state that can be restored); a file over
  CHECKPOINT_FILE_MAX_BYTES has `q: [size, mtime_ns]` instead of `h` and cannot be;
- `{"t": "d", "m": mode}` a directory; `{"t": "l", "k": target}` a symlink;
- `{"t": "?"}` anything else (FIFO, socket, device): never restorable.

Reading and writing go by directory fd from `locate()`, never following a symlink,
like every file tool. Restored modes keep the permission bits only (no setuid/setgid:
the index lives inside the workspace, where a process could edit it).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import posixpath
import stat
from dataclasses import dataclass, field
from typing import Any

from ..containment import Located, locate
from ..errors import (
    NotFoundError,
    OutsideWorkspaceError,
    WorkspaceError,
    WrongTypeError,
    describe_os_error,
)
from ..fdread import read_regular
from ..limits import (
    CHECKPOINT_CALL_MAX_BYTES,
    CHECKPOINT_FILE_MAX_BYTES,
    CHECKPOINT_MAX_PATHS,
    PATH_MAX_CHARS,
)
from ..osflags import DIR_FLAGS
from ..state import stale_reads
from ..textio import atomic_write
from ..workspaces import Workspace
from .store import Store

State = dict[str, Any]
NONE: State = {"t": "-"}
KINDS = {"-": "nothing", "f": "file", "d": "directory", "l": "symlink", "?": "special file"}


@dataclass
class Budget:
    """What one call may record: paths, and bytes added to the store."""

    paths: int = CHECKPOINT_MAX_PATHS
    stored: int = CHECKPOINT_CALL_MAX_BYTES
    truncated: bool = False
    added: int = 0  # bytes this call added to the store
    seen: set[str] = field(default_factory=set)

    def take_path(self) -> bool:
        if self.paths <= 0:
            self.truncated = True
            return False
        self.paths -= 1
        return True


def restorable(state: State) -> bool:
    kind = state.get("t")
    return kind in ("-", "d", "l") or (kind == "f" and bool(state.get("o")))


def same(current: State, expected: State) -> bool:
    """Whether `current` is what the recorded calls left (content, type, file mode)."""
    kind = current.get("t")
    if kind != expected.get("t"):
        return False
    if kind == "f":
        if current.get("m") != expected.get("m"):
            return False
        if "h" in current and "h" in expected:
            return bool(current["h"] == expected["h"])
        return current.get("q") == expected.get("q")
    if kind == "l":
        return current.get("k") == expected.get("k")
    return True


def valid_rel(rel: object) -> bool:
    """Whether an index path is a plain relative path (no empty, `.` or `..` part)."""
    if not isinstance(rel, str) or not rel or "\x00" in rel or len(rel) > PATH_MAX_CHARS:
        return False
    return not any(p in ("", ".", "..") for p in rel.split("/"))


def absolute(ws: Workspace, rel: str) -> str:
    if not valid_rel(rel):
        raise WorkspaceError(f"checkpoint index names an invalid path: {str(rel)[:120]!r}")
    return posixpath.join(ws.root, rel)


def locate_recorded(ws: Workspace, rel: str, *, write: bool = False) -> Located:
    """`locate()` for an index path (the link itself, never followed). An escape is
    named by the index path, not the host path `absolute()` built (issue 28: an undo's
    error over HTTP showed where the root lives)."""
    try:
        return locate(ws, absolute(ws, rel), follow_final=False, write=write)
    except OutsideWorkspaceError:
        raise OutsideWorkspaceError(rel) from None


def _count(value: object, top: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= top


_HEX = frozenset("0123456789abcdef")


def state_problem(state: object) -> str | None:
    """What makes a recorded state unusable (a planted or damaged line), or None.

    Checked for every state before an undo changes anything, so a bad one refuses the
    line instead of failing halfway through applying it."""
    if not isinstance(state, dict):
        return "a state that is not an object"
    kind = state.get("t")
    if kind not in KINDS:
        return "an unknown kind"
    if kind in ("f", "d") and not _count(state.get("m"), 0o7777):
        return "a bad mode"
    if kind == "f":
        if not _count(state.get("s"), 1 << 62):
            return "a bad size"
        digest = state.get("h")
        if digest is not None and not (
            isinstance(digest, str) and len(digest) == 64 and set(digest) <= _HEX
        ):
            return "a bad digest"
        if state.get("o") and digest is None:
            return "stored content without a digest"
        seen = state.get("q")
        if seen is not None and not (
            isinstance(seen, list) and len(seen) == 2 and all(_count(x, 1 << 63) for x in seen)
        ):
            return "a bad size stamp"
    if kind == "l":
        target = state.get("k")
        if not isinstance(target, str) or not target or "\x00" in target:
            return "a bad link target"
        if len(target) > PATH_MAX_CHARS:
            return "a bad link target"
    return None


def entry_state(
    dir_fd: int, name: str, st: os.stat_result | None, store: Store | None, budget: Budget
) -> State:
    """The state of `name` under `dir_fd` (already lstat-ed); content stored if `store`."""
    if st is None:
        return dict(NONE)
    mode = stat.S_IMODE(st.st_mode)
    if stat.S_ISDIR(st.st_mode):
        return {"t": "d", "m": mode}
    if stat.S_ISLNK(st.st_mode):
        return {"t": "l", "k": os.readlink(name, dir_fd=dir_fd)}
    if not stat.S_ISREG(st.st_mode):
        return {"t": "?"}
    state: State = {"t": "f", "m": mode, "s": st.st_size}
    data = (
        read_regular(dir_fd, name, CHECKPOINT_FILE_MAX_BYTES + 1)
        if st.st_size <= (CHECKPOINT_FILE_MAX_BYTES)
        else None
    )
    if data is None or len(data) > CHECKPOINT_FILE_MAX_BYTES:
        state["q"] = [st.st_size, st.st_mtime_ns]
        return state
    state["s"] = len(data)
    if store is not None and budget.stored >= len(data):
        digest, added = store.put(data)
        budget.stored -= added
        budget.added += added
        state.update(h=digest, o=1)
    else:
        state["h"] = hashlib.sha256(data).hexdigest()
    return state


def capture_located(
    loc: Located, *, recursive: bool, store: Store | None, budget: Budget
) -> dict[str, State]:
    """The located entry's state (and, for a directory when `recursive`, its contents')."""
    found: dict[str, State] = {}
    rel = loc.real_rel
    if not budget.take_path():
        return found
    st = loc.lstat()
    found[rel] = entry_state(loc.dir_fd, loc.name, st, store, budget)
    if recursive and st is not None and stat.S_ISDIR(st.st_mode):
        _capture_tree(loc, rel, store, budget, found)
    return found


def _capture_tree(
    loc: Located, rel: str, store: Store | None, budget: Budget, found: dict[str, State]
) -> None:
    try:
        top = os.open(loc.name, DIR_FLAGS, dir_fd=loc.dir_fd)
    except OSError:
        return
    stack = [(top, rel)]
    try:
        while stack:
            fd, prefix = stack.pop()
            try:
                names = sorted(os.listdir(fd))
                for name in names:
                    if not budget.take_path():
                        return
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    child = f"{prefix}/{name}"
                    found[child] = entry_state(fd, name, st, store, budget)
                    if stat.S_ISDIR(st.st_mode):
                        with contextlib.suppress(OSError):
                            stack.append((os.open(name, DIR_FLAGS, dir_fd=fd), child))
            finally:
                os.close(fd)
    finally:
        for fd, _ in stack:
            os.close(fd)


def capture(
    ws: Workspace, rel: str, *, recursive: bool, store: Store | None, budget: Budget
) -> dict[str, State]:
    """`capture_located` for a recorded path (an index path, relative to the root)."""
    try:
        loc = locate_recorded(ws, rel)
    except (NotFoundError, WrongTypeError):
        return {rel: dict(NONE)} if budget.take_path() else {}
    with loc:
        return capture_located(loc, recursive=recursive, store=store, budget=budget)


def children(ws: Workspace, rel: str) -> list[str]:
    """The entries directly under a directory (for refusing to delete what was not recorded)."""
    try:
        with locate_recorded(ws, rel) as loc:
            fd = os.open(loc.name, DIR_FLAGS, dir_fd=loc.dir_fd)
    except (WorkspaceError, OSError):
        return []
    try:
        return [f"{rel}/{name}" for name in sorted(os.listdir(fd))]
    finally:
        os.close(fd)


def _depth(rel: str) -> int:
    return rel.count("/")


def apply(
    ws: Workspace, targets: dict[str, State], current: dict[str, State], store: Store
) -> list[str]:
    """Put every path in `targets` into its state; returns the paths changed, in order.

    Removals go deepest first, then creations and contents shallowest first, then
    directory modes deepest first (a read-only directory is made so after its contents).
    The first failure raises; the caller rolls back (see `undo.revert`).
    """
    with stale_reads.batched():  # one record update for the whole undo, not one per path
        return _apply(ws, targets, current, store)


def _apply(
    ws: Workspace, targets: dict[str, State], current: dict[str, State], store: Store
) -> list[str]:
    changed: list[str] = []
    todo = {rel: t for rel, t in targets.items() if not _done(current.get(rel, NONE), t)}
    for rel in sorted(todo, key=_depth, reverse=True):
        now, want = current.get(rel, NONE), todo[rel]
        if now["t"] != "-" and (now["t"] != want["t"] or want["t"] == "l"):
            _remove(ws, rel, now)
            current[rel] = dict(NONE)
    for rel in sorted(todo, key=_depth):
        want = todo[rel]
        if want["t"] == "-":
            changed.append(rel)
            continue
        _create(ws, rel, want, current.get(rel, NONE), store)
        changed.append(rel)
    for rel in sorted(todo, key=_depth, reverse=True):
        if todo[rel]["t"] == "d":
            _chmod_dir(ws, rel, todo[rel]["m"])
    return changed


def _done(now: State, want: State) -> bool:
    if want["t"] == "d":
        return now["t"] == "d" and now.get("m") == want.get("m")
    return same(now, want)


def _op_error(exc: OSError, rel: str) -> WorkspaceError:
    return WorkspaceError(describe_os_error(exc, rel))


def _remove(ws: Workspace, rel: str, now: State) -> None:
    with locate_recorded(ws, rel, write=True) as loc:
        try:
            if now["t"] == "d":
                os.rmdir(loc.name, dir_fd=loc.dir_fd)
            else:
                os.unlink(loc.name, dir_fd=loc.dir_fd)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise _op_error(exc, rel) from None
        stale_reads.wrote(loc, None)


def _create(ws: Workspace, rel: str, want: State, now: State, store: Store) -> None:
    with locate_recorded(ws, rel, write=True) as loc:
        try:
            if want["t"] == "d":
                if now["t"] != "d":
                    os.mkdir(loc.name, 0o700, dir_fd=loc.dir_fd)
            elif want["t"] == "l":
                os.symlink(want["k"], loc.name, dir_fd=loc.dir_fd)
            elif want["t"] == "f":
                data = store.get(want["h"], want["s"])
                atomic_write(loc, data, mode=int(want["m"]) & 0o777)
                stale_reads.wrote(loc, data)
            else:
                raise WorkspaceError(f"{rel}: a {KINDS.get(want['t'], 'file')} cannot be restored")
        except OSError as exc:
            raise _op_error(exc, rel) from None


def _chmod_dir(ws: Workspace, rel: str, mode: int) -> None:
    with locate_recorded(ws, rel, write=True) as loc:
        try:
            fd = os.open(loc.name, DIR_FLAGS, dir_fd=loc.dir_fd)
        except OSError as exc:
            raise _op_error(exc, rel) from None
        try:
            os.fchmod(fd, int(mode) & 0o777)
        finally:
            os.close(fd)
