"""Bounded flock waits, and who holds a lock: the primitives both the state files
(`statefiles`) and the per-path locks (`locks`) build on."""

from __future__ import annotations

import fcntl
import os
import time

from . import limits


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
