"""Per-path locks so parallel tool calls never interleave a read-modify-write.

Keyed by the resolved absolute path, so two spellings of one file (a symlink and its
target) share a lock. Several paths are always taken in sorted order, so two
multi-file patches cannot deadlock. Entries are dropped when nobody holds them.
Tool bodies run on worker threads, hence threading locks.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager


class PathLocks:
    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, tuple[threading.Lock, int]] = {}

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
            yield
        finally:
            for key in reversed(taken):
                self._locks[key][0].release()
                self._unref(key)

    def __len__(self) -> int:
        return len(self._locks)
