"""What this OS offers beyond POSIX, checked once at import. Every user of a feature has a
portable fallback, so the server runs on macOS; callers read these attributes at call
time (`features.X`), which lets the test suite force them off on Linux and run the
containment and process tests through the fallbacks (tests/test_portable.py).

- PROC_FD_CWD (Linux): a child process can start in a checked directory by its fd, through
  the `/proc/self/fd/N` magic link, so a swap after the check cannot move it. Fallback:
  the checked path (a swap in between could move the child; every result it reports is
  still re-checked through the containment walk).
- NAMESPACES (Linux): bubblewrap can sandbox commands. Fallback: `--sandbox bwrap` is
  refused at start with one line.
- O_PATH (Linux): an fd that names a file without opening it, used to bind `.git` and the
  state directory read-only into the sandbox (so only needed where NAMESPACES is).
"""

import os
import sys

PROC_FD_CWD: bool = os.path.isdir("/proc/self/fd")
NAMESPACES: bool = sys.platform.startswith("linux")
O_PATH: int = getattr(os, "O_PATH", 0)


def fd_path(fd: int, checked_path: str) -> str:
    """A path a child process can use as its working directory for the directory `fd`."""
    return f"/proc/self/fd/{fd}" if PROC_FD_CWD else checked_path
