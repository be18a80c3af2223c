"""Read a regular file by descriptor, capped: the one way every walk reads small files
(.gitignore, grep's heads, checkpoint contents, skills, git's alternates).

The file is opened relative to a directory fd the caller already reached, never through
a symlink and never blocking (a FIFO opens at once and is refused by `fstat`), and at
most `limit` bytes are read however large the file is or grows while it is read.
"""

from __future__ import annotations

import os
import stat

from .limits import MIB
from .osflags import READ_FLAGS


def read_capped(fd: int, limit: int) -> bytes:
    """At most `limit` bytes from the open `fd`, however much the file holds or gains."""
    chunks, remaining = [], limit
    while remaining > 0 and (chunk := os.read(fd, min(remaining, MIB))):
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_regular(dir_fd: int | None, name: str, limit: int) -> bytes | None:
    """At most `limit` bytes of the regular file `name` under `dir_fd` (`name` absolute
    when `dir_fd` is None), or None when it is missing, not a regular file or unreadable.
    A caller that must notice a file past its bound asks for one byte more."""
    try:
        fd = os.open(name, READ_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return read_capped(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)
