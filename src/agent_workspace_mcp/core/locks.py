"""Per-path locks so parallel tool calls never interleave a read-modify-write.

Keyed by the resolved absolute path, so two spellings of one file (a symlink and its
target) share a lock. Several paths are always taken in sorted order, so two
multi-file patches cannot deadlock. Entries are dropped when nobody holds them.
Tool bodies run on worker threads, hence threading locks.

With `--workers N` the processes share files, so each path also takes an flock on one
of LOCK_STRIPES lock files in the shared private directory (striped, not one file per
path: lock files are never unlinked, which is what keeps flock race-free, so their
number must be bounded). Stripes are taken in sorted order too.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from . import limits
from .limits import LOCK_STRIPES


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


class PathLocks:
    def __init__(self, shared_dir: str | None = None) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, tuple[threading.Lock, int]] = {}
        self.shared_dir = shared_dir

    @contextmanager
    def _across_processes(self, keys: list[str]) -> Iterator[None]:
        if self.shared_dir is None:
            yield
            return
        stripes = sorted(
            {int.from_bytes(hashlib.blake2b(k.encode(), digest_size=4).digest()) % LOCK_STRIPES
             for k in keys}
        )  # fmt: skip
        fds: list[int] = []
        try:
            for stripe in stripes:
                path = os.path.join(self.shared_dir, f"path-{stripe:03d}.lock")
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
                fds.append(fd)
                fcntl.flock(fd, fcntl.LOCK_EX)
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
    def hold(self, keys: Iterable[str]) -> Iterator[None]:
        ordered = sorted(set(keys))
        taken: list[str] = []
        try:
            for key in ordered:
                lock = self._ref(key)
                taken.append(key)
                lock.acquire()
            with self._across_processes(ordered):
                yield
        finally:
            for key in reversed(taken):
                self._locks[key][0].release()
                self._unref(key)

    def __len__(self) -> int:
        return len(self._locks)
