"""Locks: the state lock, per-path locks, and the bounded flock both build on.

- `state_lock`: exclusive across threads and processes for one workspace's state (the
  journal, the checkpoint index, approvals); waited for at most STATE_LOCK_WAIT_SECONDS.
  Several server processes may serve one workspace (a desktop client's stdio server and
  an HTTP server), so a read-modify-write holds an `flock` on `.workspace-mcp/.lock`
  (plus a thread lock: flock between threads of one process is only reliable across
  separate open file descriptions), and no update is lost or JSON line interleaved.
- `PathLocks`: per-path locks so parallel tool calls never interleave a read-modify-write.
  Keyed by the resolved absolute path, so two spellings of one file (a symlink and its
  target) share a lock; several paths are taken in sorted order, so two multi-file
  patches cannot deadlock. Processes share files (`--workers N`, two servers on one
  root), so each path also takes an flock on one of LOCK_STRIPES lock files in the
  workspace's state directory (striped: lock files are never unlinked, which keeps flock
  race-free, so their number must be bounded).
- `flock_bounded` / `lock_holder`: a bounded flock wait, and who holds a lock
  (/proc/locks), for the one-sentence "held by ..." answers.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from .. import limits
from ..errors import (
    WorkspaceError,
)
from ..limits import LOCK_STRIPES, STATE_DIR_NAME
from ..workspaces import Workspace
from .files import Held, ensure_state_dir, locate_state, open_held, open_state


class LockBusyError(TimeoutError):
    """A lock stayed held past its bound; `holder` says by whom, as far as we can tell."""

    def __init__(self, holder: str) -> None:
        super().__init__(holder)
        self.holder = holder


def lock_holder(fd: int) -> str:
    """Who holds an flock on this file: `pid N (name)` from /proc/locks, else a phrase."""
    st = os.fstat(fd)
    try:
        with open("/proc/locks") as handle:
            rows = handle.read().splitlines()
    except OSError:
        return "another process"
    for row in rows:
        fields = row.split()
        # `1: FLOCK  ADVISORY  WRITE 4242 08:01:1234 0 EOF` (a waiter's row has `->`)
        if len(fields) < 6 or fields[1] != "FLOCK" or "->" in fields:
            continue
        pid, ident = fields[4], fields[5]
        if ident.rsplit(":", 1)[-1] == str(st.st_ino) and pid.isdigit():
            if int(pid) == os.getpid():
                return f"this server (pid {pid})"
            try:
                with open(f"/proc/{pid}/comm") as handle:
                    name = handle.read().strip()
            except OSError:
                return f"pid {pid}"
            return f"pid {pid} ({name})"
    return "another process"


def flock_bounded(fd: int, seconds: float | None = None) -> None:
    """An exclusive flock, waited for at most `seconds` (default STATE_LOCK_WAIT_SECONDS);
    LockBusyError naming the holder past that."""
    limit = limits.STATE_LOCK_WAIT_SECONDS if seconds is None else seconds
    deadline = time.monotonic() + limit
    pause = limits.STATE_LOCK_POLL_SECONDS
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        if time.monotonic() >= deadline:
            raise LockBusyError(lock_holder(fd))
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


_thread_locks: dict[str, threading.RLock] = {}


_thread_locks_guard = threading.Lock()


def _thread_lock(key: str) -> threading.RLock:
    with _thread_locks_guard:
        lock = _thread_locks.get(key)
        if lock is None:
            lock = _thread_locks[key] = threading.RLock()
        return lock


class StateBusyError(WorkspaceError):
    """The state lock stayed held past STATE_LOCK_WAIT_SECONDS."""


def _busy(holder: str, name: str = ".lock") -> StateBusyError:
    return StateBusyError(
        f"the workspace state ({STATE_DIR_NAME}/{name}) has been held by {holder} for over "
        f"{limits.STATE_LOCK_WAIT_SECONDS:g} s; retry when it is done"
    )


@contextlib.contextmanager
def state_lock(ws: Workspace, name: str = ".lock") -> Iterator[None]:
    """Exclusive across threads and processes for this workspace's state; waited for at
    most STATE_LOCK_WAIT_SECONDS (StateBusyError naming the holder past that). Another
    `name` is a separate lock for one small record that is updated on reads too (what
    each session has seen), so those never wait behind the journal.

    The lock file is a state file like any other: a symlink or hard link planted at its
    name is replaced, never followed (a followed one truncated or locked a workspace
    file, or left the root and so turned the journal off)."""
    ensure_state_dir(ws)
    thread_lock = _thread_lock(ws.state_dir if name == ".lock" else f"{ws.state_dir}/{name}")
    if not thread_lock.acquire(timeout=limits.STATE_LOCK_WAIT_SECONDS):
        raise _busy("another call of this server", name)
    try:
        fd = _lock_file(ws, name)
        try:
            try:
                flock_bounded(fd)
            except LockBusyError as exc:
                raise _busy(exc.holder, name) from None
            yield
        finally:
            os.close(fd)
    finally:
        thread_lock.release()


def _lock_file(ws: Workspace, *parts: str) -> int:
    """An fd on the lock file `.workspace-mcp/<parts>`, opened like every state file;
    closing it releases any flock taken on it. (A function, not a context manager: a
    write takes four locks.)"""
    held = open_held(ws, parts, os.O_RDWR, create=True)
    if isinstance(held, Held):
        return held.fd
    with locate_state(ws, *parts, create_parents=True) as loc:
        fd = open_state(loc, os.O_RDWR, create=True)
    assert fd is not None
    return fd


def try_state_lock(ws: Workspace) -> bool:
    """Whether the state lock can be taken right now (it is released at once); a state
    that cannot be used at all raises its one-sentence WorkspaceError. Never blocks:
    callers on an event loop wait for a busy lock with `state_lock` in a thread."""
    ensure_state_dir(ws)
    thread_lock = _thread_lock(ws.state_dir)
    if not thread_lock.acquire(blocking=False):
        return False
    try:
        fd = _lock_file(ws, ".lock")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        finally:
            os.close(fd)
        return True
    finally:
        thread_lock.release()


class PathBusyError(WorkspaceError):
    """A path lock stayed held past its bound."""


def stripe(key: str) -> int:
    """Which of the LOCK_STRIPES lock files a path's cross-process lock takes (paths that
    share one wait for each other, as two calls on one path do)."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=4).digest()) % LOCK_STRIPES


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
        home = ws.anchor or ws  # a subpath session shares its workspace's stripes
        stripes = sorted({stripe(k) for k in keys})
        fds: list[int] = []
        try:
            ensure_state_dir(home)
            for number in stripes:
                fd = _lock_file(home, "locks", f"path-{number:03d}.lock")
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
        taken = acquired = 0  # the first `taken` keys are referenced, `acquired` locked
        try:
            for key in ordered:
                lock = self._ref(key)
                taken += 1
                if not lock.acquire(timeout=limits.STATE_LOCK_WAIT_SECONDS):
                    raise PathBusyError(
                        f"another call of this server has been changing this file for over "
                        f"{limits.STATE_LOCK_WAIT_SECONDS:g} s; retry when it is done"
                    )
                acquired += 1
            with self._across_processes(ws, ordered):
                yield
        finally:
            # Counts, not a list searched per key: an undo of 20,000 paths spent 4.2 s here.
            for at in range(taken - 1, -1, -1):
                key = ordered[at]
                if at < acquired:
                    self._locks[key][0].release()
                self._unref(key)

    def __len__(self) -> int:
        return len(self._locks)
