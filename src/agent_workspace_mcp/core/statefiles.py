"""Files under `.workspace-mcp/`: locked, atomic, contained, bounded.

The state directory lives inside the workspace, so the agent can write there too: a
symlink planted as `.workspace-mcp/changes` must not turn a state write into a write
outside the root. Every state path therefore goes through `locate()` like a tool path.

Several server processes may serve one workspace at once (a desktop client's stdio
server and an HTTP server). Read-modify-write sequences and appends hold an exclusive
`flock` on `.workspace-mcp/.lock` (plus a thread lock, since flock between threads of
one process is only reliable across separate open file descriptions), so no update
is lost and no JSON line interleaves.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

from .containment import Located, locate
from .errors import NotFoundError, WorkspaceError
from .limits import STATE_DIR_NAME, STATE_READ_BYTES
from .textio import atomic_write, read_bytes, read_range
from .workspaces import Workspace

_thread_locks: dict[str, threading.RLock] = {}
_thread_locks_guard = threading.Lock()


def state_rel(ws: Workspace, *parts: str) -> str:
    """A state path as `locate()` takes it (relative to the base; absolute when unconfined)."""
    rel = "/".join((STATE_DIR_NAME, *parts))
    return rel if ws.confined else os.path.join(ws.state_dir, *parts)


def ensure_state_dir(ws: Workspace) -> None:
    """Create `.workspace-mcp/` and its own `.gitignore` (`*`) on first use, contained.

    The repository's own `.gitignore` is never touched; O_EXCL means two servers racing
    on a fresh workspace do not both write the file.
    """
    with locate(ws, state_rel(ws, ".gitignore"), create_parents=True) as loc:
        if loc.lstat() is not None:
            return
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(loc.name, flags, 0o644, dir_fd=loc.dir_fd)
        except FileExistsError:
            return
        try:
            os.write(fd, b"*\n")
        finally:
            os.close(fd)


def _thread_lock(key: str) -> threading.RLock:
    with _thread_locks_guard:
        lock = _thread_locks.get(key)
        if lock is None:
            lock = _thread_locks[key] = threading.RLock()
        return lock


@contextlib.contextmanager
def state_lock(ws: Workspace) -> Iterator[None]:
    """Exclusive across threads and processes for this workspace's state."""
    ensure_state_dir(ws)
    with _thread_lock(ws.state_dir), locate(ws, state_rel(ws, ".lock"), create_parents=True) as loc:
        fd = os.open(
            loc.name,
            os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
            dir_fd=loc.dir_fd,
        )
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the flock


@contextlib.contextmanager
def _existing(ws: Workspace, *parts: str) -> Iterator[Located | None]:
    """The located state file, or None when it (or its directory) does not exist yet."""
    try:
        loc = locate(ws, state_rel(ws, *parts))
    except NotFoundError:
        yield None
        return
    with loc:
        yield loc if loc.lstat() is not None else None


def read_json(ws: Workspace, *parts: str) -> Any:
    """Parsed JSON, None if the file is missing; a one-sentence error naming it if corrupt."""
    with _existing(ws, *parts) as loc:
        if loc is None:
            return None
        data, _ = read_bytes(loc)
    try:
        return json.loads(data)
    except ValueError:
        raise WorkspaceError(
            f"{STATE_DIR_NAME}/{'/'.join(parts)} is corrupted (not valid JSON)"
        ) from None


def write_json(ws: Workspace, value: Any, *parts: str) -> None:
    data = (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    with locate(ws, state_rel(ws, *parts), create_parents=True) as loc:
        atomic_write(loc, data)


def write_text(ws: Workspace, text: str, *parts: str) -> None:
    with locate(ws, state_rel(ws, *parts), create_parents=True) as loc:
        atomic_write(loc, text.encode("utf-8"))


def file_size(ws: Workspace, *parts: str) -> int | None:
    with _existing(ws, *parts) as loc:
        return None if loc is None else loc.lstat().st_size  # type: ignore[union-attr]


def read_text(ws: Workspace, *parts: str) -> str | None:
    with _existing(ws, *parts) as loc:
        if loc is None:
            return None
        data, _ = read_bytes(loc)
    return data.decode("utf-8", "replace")


class JsonlStream:
    """An append-only JSON-lines file with one rotated predecessor (`<name>.1.jsonl`)."""

    def __init__(self, ws: Workspace, name: str, max_bytes: int) -> None:
        self.ws = ws
        self.current = f"{name}.jsonl"
        self.rotated = f"{name}.1.jsonl"
        self.max_bytes = max_bytes

    def append(self, record: dict[str, Any], *, locked: bool = False) -> None:
        line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode(
            "utf-8"
        )
        lock = contextlib.nullcontext() if locked else state_lock(self.ws)
        with lock, locate(self.ws, state_rel(self.ws, self.current), create_parents=True) as loc:
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(loc.name, flags, 0o600, dir_fd=loc.dir_fd)
            try:
                os.write(fd, line)
                size = os.fstat(fd).st_size
            finally:
                os.close(fd)
            if size > self.max_bytes:
                os.rename(loc.name, self.rotated, src_dir_fd=loc.dir_fd, dst_dir_fd=loc.dir_fd)

    def _tail_records(self, name: str) -> list[dict[str, Any]]:
        """Records in the last STATE_READ_BYTES of a file, oldest first; bad lines skipped."""
        try:
            with _existing(self.ws, name) as loc:
                if loc is None:
                    return []
                st = loc.lstat()
                assert st is not None
                start = max(0, st.st_size - STATE_READ_BYTES)
                data, _ = read_range(loc, start, STATE_READ_BYTES)
        except WorkspaceError:
            return []
        lines = data.split(b"\n")
        if start > 0 and lines:
            lines = lines[1:]  # the first line was cut by the read window
        records = []
        for raw in lines:
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except ValueError:
                continue
            if isinstance(record, dict):
                records.append(record)
        return records

    def newest(
        self, limit: int, keep: Callable[[dict[str, Any]], bool] = lambda r: True
    ) -> list[dict[str, Any]]:
        """Up to `limit` matching records, newest first: current file, then the rotated one."""
        found: list[dict[str, Any]] = []
        for name in (self.current, self.rotated):
            for record in reversed(self._tail_records(name)):
                if keep(record):
                    found.append(record)
                    if len(found) >= limit:
                        return found
        return found

    def count(self) -> int:
        """Lines in both files (what `remember` reports as the running total)."""
        total = 0
        for name in (self.current, self.rotated):
            with _existing(self.ws, name) as loc:
                if loc is None:
                    continue
                data, _ = read_bytes(loc)
            total += sum(1 for line in data.split(b"\n") if line.strip())
        return total
