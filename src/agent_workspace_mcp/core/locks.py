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
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from .limits import LOCK_STRIPES


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
