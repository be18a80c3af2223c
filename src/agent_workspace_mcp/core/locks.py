"""Per-path locks so parallel tool calls never interleave a read-modify-write.

Keyed by the resolved absolute path, so two spellings of one file (a symlink and its
target) share a lock. Several paths are always taken in sorted order, so two
multi-file patches cannot deadlock. Entries are dropped when nobody holds them.
Tool bodies run on worker threads, hence threading locks.

Processes share files (`--workers N`, or two servers on one root), so each path also
takes an flock on one of LOCK_STRIPES lock files in the workspace's state directory
(striped, not one file per path: lock files are never unlinked, which is what keeps
flock race-free, so their number must be bounded). Stripes are taken in sorted order too.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from . import limits
from .errors import WorkspaceError
from .flock import LockBusyError, flock_bounded
from .limits import LOCK_STRIPES
from .workspaces import Workspace


class PathBusyError(WorkspaceError):
    """A path lock stayed held past its bound."""


class PathLocks:
    """Per-path locks for one server: a thread lock per resolved path, and an flock on one
    of LOCK_STRIPES files in the workspace's own state directory, so every process that
    serves the root (another worker, another server, a stdio server beside an HTTP one)
    serialises a write and an undo of the same file (issue 28: without it an undo in
    another process replaced acknowledged writes it had not recorded).

    Stripes are never unlinked (what keeps flock race-free), so their number is bounded;
    they are opened like every state file (no link followed, one link, regular). Every
    wait is bounded: past STATE_LOCK_WAIT_SECONDS a call fails naming the holder."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, tuple[threading.Lock, int]] = {}

    @contextmanager
    def _across_processes(self, ws: Workspace, keys: list[str]) -> Iterator[None]:
        from .statefiles import ensure_state_dir, locate_state, open_state

        home = ws.anchor or ws  # a subpath session shares its workspace's stripes
        stripes = sorted(
            {
                int.from_bytes(hashlib.blake2b(k.encode(), digest_size=4).digest()) % LOCK_STRIPES
                for k in keys
            }
        )
        fds: list[int] = []
        try:
            ensure_state_dir(home)
            for stripe in stripes:
                name = f"path-{stripe:03d}.lock"
                with locate_state(home, "locks", name, create_parents=True) as loc:
                    fd = open_state(loc, os.O_RDWR, create=True)
                assert fd is not None
                fds.append(fd)
                try:
                    flock_bounded(fd)
                except LockBusyError as exc:
                    raise PathBusyError(
                        f"another call ({exc.holder}) has been changing this file for over "
                        f"{limits.STATE_LOCK_WAIT_SECONDS:g} s; retry when it is done"
                    ) from None
            yield
        finally:
            for fd in reversed(fds):
                os.close(fd)  # closing releases the flock

    def _ref(self, key: str) -> threading.Lock:
        with self._guard:
            lock, users = self._locks.get(key, (None, 0))
            if lock is None:
                lock = threading.Lock()
            self._locks[key] = (lock, users + 1)
            return lock

    def _unref(self, key: str) -> None:
        with self._guard:
            lock, users = self._locks[key]
            if users <= 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)

    @contextmanager
    def hold(self, ws: Workspace, keys: Iterable[str]) -> Iterator[None]:
        """Hold every path of `keys` (resolved absolute paths) in `ws`, in sorted order."""
        ordered = sorted(set(keys))
        taken: list[str] = []
        acquired: list[str] = []
        try:
            for key in ordered:
                lock = self._ref(key)
                taken.append(key)
                if not lock.acquire(timeout=limits.STATE_LOCK_WAIT_SECONDS):
                    raise PathBusyError(
                        f"another call of this server has been changing this file for over "
                        f"{limits.STATE_LOCK_WAIT_SECONDS:g} s; retry when it is done"
                    )
                acquired.append(key)
            with self._across_processes(ws, ordered):
                yield
        finally:
            for key in reversed(taken):
                if key in acquired:
                    self._locks[key][0].release()
                self._unref(key)

    def __len__(self) -> int:
        return len(self._locks)
