"""Which directories changed since we last looked: Linux inotify, one watch per directory.

The tree index (core.checkpoints.treescan) rescans only the directories named here,
instead of the whole tree around every command (a full scan of the Django corpus costs
~150 ms on our machines; a command's recording must cost under 50). inotify reports
what any process did to the watched inodes, inside the sandbox's mount namespace too,
and synchronously with the change: once a command has exited, its changes are queued.

When it cannot be trusted, `changed()` returns None and the caller scans everything:
no inotify (not Linux), the watch limit reached (fs.inotify.max_user_watches), or the
event queue overflowed. Writes through a shared memory map raise no event; neither do
they change a file's size or times, which the full scan compares.

ctypes rather than a package: the three calls are all it takes, and the packages that
wrap them (inotify_simple, watchdog) add a dependency for ten lines.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import struct
import threading

IN_MODIFY = 0x002
IN_ATTRIB = 0x004
IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC
MASK = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
    | IN_ONLYDIR
)
_EVENT = struct.Struct("iIII")


def _libc() -> ctypes.CDLL | None:
    """libc, loaded on the first watch (not at import: every CLI start imports this), and
    by the process's own symbols (ctypes.util.find_library spawns ldconfig: 46 ms)."""
    global _LIBC, _LOADED
    if not _LOADED:
        _LOADED = True
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.inotify_init1  # noqa: B018 - present on Linux only
            _LIBC = libc
    return _LIBC


_LIBC: ctypes.CDLL | None = None
_LOADED = False


class DirWatch:
    """Watches on directories (opened by fd), and which of them changed since last asked."""

    def __init__(self) -> None:
        self.fd = -1
        libc = _libc()
        self.broken = libc is None
        self.paths: dict[int, str] = {}  # watch descriptor: the directory's index path
        self._guard = threading.Lock()
        if libc is not None:
            fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
            if fd < 0:
                self.broken = True
            else:
                self.fd = fd

    def add(self, dir_fd: int, rel: str) -> None:
        """Watch the directory open as `dir_fd` (by its fd: no path is resolved again)."""
        if self.broken or _LIBC is None:
            return
        wd = _LIBC.inotify_add_watch(self.fd, f"/proc/self/fd/{dir_fd}".encode(), MASK)
        if wd < 0:  # an unwatched directory would hide its changes: scan everything
            self.broken = True
            return
        self.paths[wd] = rel

    def changed(self) -> set[str] | None:
        """The index paths of the directories with events since the last call ('' is the
        root); None when the events cannot be trusted and everything must be scanned."""
        if self.broken:
            return None
        with self._guard:
            dirty: set[str] = set()
            while True:
                try:
                    data = os.read(self.fd, 65536)
                except BlockingIOError:
                    return dirty
                except OSError:
                    self.broken = True
                    return None
                at = 0
                while at + _EVENT.size <= len(data):
                    wd, mask, _, length = _EVENT.unpack_from(data, at)
                    at += _EVENT.size + length
                    if mask & IN_Q_OVERFLOW:
                        self.reset()
                        return None
                    rel = self.paths.get(wd)
                    if rel is None:
                        continue
                    dirty.add(rel)
                    if mask & (IN_DELETE_SELF | IN_MOVE_SELF):
                        dirty.add(rel.rpartition("/")[0])  # its parent lists it anew
                    if mask & IN_IGNORED:
                        self.paths.pop(wd, None)

    def reset(self) -> None:
        """Forget every watch (after an overflow): the next full scan adds them again."""
        if _LIBC is None or self.fd < 0:
            return
        for wd in list(self.paths):
            _LIBC.inotify_rm_watch(self.fd, wd)
        self.paths.clear()
        with contextlib.suppress(BlockingIOError, OSError):
            while os.read(self.fd, 65536):
                pass

    def close(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1
        self.broken = True
