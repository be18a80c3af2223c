"""One rg process, and what it reports: spawned in the checked directory with its
stderr drained, its process group stopped; its JSON fields decoded and its errors
named; every file it names re-read through the containment walk (DirCache), since
rg walks by name and is never trusted."""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import threading
from typing import Any

from ..containment import locate
from ..errors import WorkspaceError
from ..fdread import read_regular
from ..limits import (
    DIR_FD_CACHE,
    GREP_TIME_BUDGET_SECONDS,
    RG_STDERR_KEPT_BYTES,
)
from ..osflags import DIR_FLAGS
from ..workspaces import Workspace
from .python_engine import SearchTimeout


def find_rg() -> str | None:
    """The `rg` the `ripgrep` wheel installed next to this interpreter, else one on PATH.

    Clients often launch us (via uvx) without the environment's scripts dir on PATH.
    """
    candidates = [
        os.path.join(os.path.dirname(sys.executable), "rg"),
        os.path.join(sysconfig.get_path("scripts"), "rg"),
    ]
    for candidate in candidates:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("rg")


def spawn(args: list[str], cwd: str) -> subprocess.Popen[bytes]:
    # rg is run by absolute path and reads no configuration; it needs no PATH or secrets.
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}
    proc = subprocess.Popen(
        args,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    # A tree full of unreadable entries makes rg write an error per entry; a full stderr
    # pipe would stall it, so a thread drains it and keeps only the start.
    proc._awm_stderr = bytearray()  # type: ignore[attr-defined]
    drain = threading.Thread(target=drain_stderr, args=(proc,), daemon=True)
    drain.start()
    proc._awm_drain = drain  # type: ignore[attr-defined]
    return proc


def drain_stderr(proc: subprocess.Popen[bytes]) -> None:
    assert proc.stderr is not None
    kept: bytearray = proc._awm_stderr  # type: ignore[attr-defined]
    with contextlib.suppress(OSError, ValueError):
        for chunk in iter(lambda: proc.stderr.read1(1 << 16), b""):  # type: ignore[union-attr,attr-defined]
            room = RG_STDERR_KEPT_BYTES - len(kept)
            if room > 0:
                kept += chunk[:room]


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        kill_group(proc)
    proc.wait()
    if proc.stdout:
        proc.stdout.close()
    if proc.stderr:
        proc.stderr.close()


def regex_error(stderr: bytes) -> str | None:
    """The sentence for a pattern rg could not parse, else None.

    Any other message is about one entry (unreadable, vanished mid-walk) and is
    skipped, as the Python engine skips such entries: rg still searched the rest, and
    its messages name what it saw, which mid-swap may be outside the root.
    """
    text = stderr.decode("utf-8", "replace").strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if lines and lines[0].startswith("regex parse error"):
        detail = next((line for line in reversed(lines) if line.startswith("error:")), lines[-1])
        return f"invalid regex: {detail.removeprefix('error:').strip()}"
    return None


def decode(field: dict[str, Any]) -> bytes:
    if "text" in field:
        return str(field["text"]).encode("utf-8", "surrogatepass")
    return base64.b64decode(field.get("bytes", ""))


def timed_out() -> SearchTimeout:
    return SearchTimeout(
        f"the search took longer than {GREP_TIME_BUDGET_SECONDS:g} s; narrow the path or pattern"
    )


class DirCache:
    """Directory fds opened through the containment walk, reused for their files.

    rg lists files grouped by directory, so one `locate()` per directory (instead of
    one per file) keeps re-reading what rg reported cheap without giving up the walk's
    guarantee: each fd is a directory the walk verified inside the root, and a file is
    opened under it by name with O_NOFOLLOW, so a directory swapped for a symlink after
    the walk is never followed (rg reports no symlinks: one there now has changed).
    Used by one thread, which closes it.
    """

    def __init__(self, ws: Workspace, size: int = DIR_FD_CACHE) -> None:
        self._ws = ws
        self._size = size
        self._fds: dict[str, int] = {}

    def head(self, rel: str, size: int) -> bytes | None:
        """Up to `size` bytes of the regular file `rel` (root-relative), else None."""
        directory, _, name = rel.rpartition("/")
        fd = self._fds.get(directory)
        if fd is None:
            try:
                target = directory or "."
                loc = locate(self._ws, target if self._ws.confined else "/" + target)
            except (WorkspaceError, OSError):  # gone, swapped, unreadable, out of fds
                return None
            with loc:
                try:
                    fd = os.open(loc.name or ".", DIR_FLAGS, dir_fd=loc.dir_fd)
                except OSError:
                    return None
            if len(self._fds) >= self._size:
                os.close(self._fds.pop(next(iter(self._fds))))
            self._fds[directory] = fd
        return read_regular(fd, name, size)

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()
