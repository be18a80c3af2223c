"""Whether the state directory's filesystem honours `flock` (issue 49, item 3).

Every state change and every path lock is an `flock` (core.state.locks), which is what
makes two workers, two servers or two pods on one workspace safe. Some filesystems do
not honour it: a lock that fails outright, or succeeds without excluding anyone; and
FUSE or 9p volumes (gcsfuse, s3fs, sshfs, a VM's shared folder) keep flocks within the
one machine that takes them, so two pods on two nodes would both "hold" the same lock.
At start-up each root is probed (two open file descriptions, the second lock must be
refused) and its filesystem type read; a server refuses to start on the first kind,
and on the second unless `--state-not-shared` says no other machine uses the volume.
NFSv4, CephFS, EFS and local disks hold flock across clients and machines.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import tempfile

from ..errors import ConfigError

# statfs f_type values whose flocks hold on one machine only (linux/magic.h).
NODE_LOCAL = {0x65735546: "FUSE", 0x01021997: "9p"}


class _Statfs(ctypes.Structure):
    _fields_ = [("f_type", ctypes.c_long), ("rest", ctypes.c_byte * 120)]


def filesystem_type(path: str) -> int | None:
    """statfs(2)'s f_type of `path`, or None where it cannot be read (not Linux)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)  # the process's own symbols: no ldconfig
        statfs = libc.statfs
    except (OSError, AttributeError):
        return None
    buf = _Statfs()
    if statfs(os.fsencode(path), ctypes.byref(buf)) != 0:
        return None
    return int(buf.f_type) & 0xFFFFFFFF


def flock_works(directory: str) -> str | None:
    """None when flock excludes a second holder in `directory`, else why not."""
    try:
        fd, path = tempfile.mkstemp(prefix=".awm-lockprobe-", dir=directory)
    except OSError:
        return None  # nothing can be written there: no state, nothing to lock
    other = -1
    try:
        other = os.open(path, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            return f"flock fails there ({errno.errorcode.get(exc.errno or 0, exc.strerror)})"
        try:
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None  # refused, as it must be
        except OSError as exc:
            return f"flock fails there ({errno.errorcode.get(exc.errno or 0, exc.strerror)})"
        return "a second flock on the same file succeeded: locks there exclude no one"
    finally:
        for handle in (fd, other):
            if handle >= 0:
                os.close(handle)
        with contextlib.suppress(OSError):
            os.unlink(path)


def check(root: str, *, not_shared: bool) -> None:
    """Refuse, in one line, a root whose state would not be kept safe by flock."""
    problem = flock_works(root)
    if problem:
        raise ConfigError(
            f"the workspace {root} is on a filesystem whose locks do not hold ({problem}); "
            "two processes could corrupt its state: use a local disk, NFSv4 or CephFS"
        )
    kind = NODE_LOCAL.get(filesystem_type(root) or 0)
    if kind and not not_shared:
        raise ConfigError(
            f"the workspace {root} is on {kind}, whose locks hold within one machine only: "
            "if pods on other machines mount it, they corrupt each other's state; give "
            "--state-not-shared if no other machine uses this volume"
        )
