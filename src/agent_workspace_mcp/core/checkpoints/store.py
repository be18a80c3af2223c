"""The checkpoint store under `.workspace-mcp/checkpoints/`: objects and the call index.

- `objects/ab/cdef…`: file contents named by their sha256, zlib-compressed when that
  saves a tenth or more (first byte `z`, else `r` for raw). Written without fsync: an
  object checks itself against its name when read back, so a torn one is reported as
  lost, never restored.
- `index.jsonl`: one line per journaled call, oldest first (see `history.Entry`).

Every path goes through `locate()` like any state file (core.state.files), appends and
rewrites hold the state lock, so several server processes share one store. Pruning
drops the oldest calls first, keeping their lines as `{"id", "pruned": true}` so the
work log can say which entries are no longer undoable; an object is deleted only when
no kept call names it and it is older than a grace period (a call in flight in another
process may have just found it).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import threading
import time
import zlib
from collections.abc import Iterator
from typing import Any

from .. import safejson
from ..errors import NotFoundError, WorkspaceError
from ..fdread import read_capped
from ..limits import (
    CHECKPOINT_GC_GRACE_SECONDS,
    CHECKPOINT_INDEX_MAX_LINES,
    CHECKPOINT_PRUNE_TO,
    CHECKPOINT_STORE_MAX_BYTES,
    MAX_FILE_BYTES,
)
from ..osflags import DIR_FLAGS, READ_FLAGS
from ..state.files import locate_state
from ..state.locks import state_lock
from ..state.records import dumps, read_text, write_text
from ..state.streams import JsonlStream
from ..textio import atomic_write
from ..workspaces import Workspace

DIR = "checkpoints"
INDEX = "index.jsonl"
OBJECTS = "objects"


class LostObjectError(WorkspaceError):
    pass


def digest_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# Per workspace state dir: (index size we last saw, bytes the kept calls added, lines),
# so a call does not re-read the whole index to know whether the store is over its cap.
_usage: dict[str, tuple[int, int, int]] = {}
_usage_guard = threading.Lock()


class Store:
    def __init__(self, ws: Workspace, cap: int = CHECKPOINT_STORE_MAX_BYTES) -> None:
        self.ws = ws
        self.cap = cap

    # --- objects -------------------------------------------------------------------

    @staticmethod
    def _object_parts(digest: str) -> tuple[str, ...]:
        return (DIR, OBJECTS, digest[:2], digest[2:])

    def put(self, data: bytes) -> tuple[str, int]:
        """Store `data`; returns its digest and the bytes it added (0 if already there)."""
        digest = digest_of(data)
        with locate_state(self.ws, *self._object_parts(digest), create_parents=True) as loc:
            st = loc.lstat()
            if st is not None and stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
                with contextlib.suppress(OSError):  # fresh again for the collector's grace
                    os.utime(loc.name, dir_fd=loc.dir_fd, follow_symlinks=False)
                return digest, 0
            packed = zlib.compress(data, 1)
            blob = b"z" + packed if len(packed) < len(data) * 0.9 else b"r" + data
            atomic_write(loc, blob, mode=0o600, durable=False)
        return digest, len(blob)

    def has(self, digest: str) -> bool:
        """Whether the content named `digest` is still stored (not collected)."""
        try:
            with locate_state(self.ws, *self._object_parts(digest)) as loc:
                st = loc.lstat()
        except (NotFoundError, WorkspaceError):
            return False
        return st is not None and stat.S_ISREG(st.st_mode) and st.st_nlink == 1

    def get(self, digest: str, size: int | None = None) -> bytes:
        """The content named `digest`; LostObjectError if it is missing or damaged.

        Inflation stops at `size` (what the index records), or MAX_FILE_BYTES: a planted
        object of a megabyte can inflate to gigabytes (a zlib bomb)."""
        try:
            with locate_state(self.ws, *self._object_parts(digest)) as loc:
                fd = os.open(loc.name, READ_FLAGS, dir_fd=loc.dir_fd)
        except (NotFoundError, OSError):
            raise LostObjectError(f"checkpoint data {digest[:12]} is missing") from None
        try:
            st = os.fstat(fd)
            # One link only, like every state file: a hard link planted at an object's
            # name would otherwise bring a file from outside the root into a restore.
            if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
                raise LostObjectError(f"checkpoint data {digest[:12]} is not a plain file")
            blob = read_capped(fd, MAX_FILE_BYTES + 2)  # a marker byte, then the content
        finally:
            os.close(fd)
        bound = MAX_FILE_BYTES if size is None else min(size, MAX_FILE_BYTES)
        try:
            if blob[:1] == b"z":
                inflater = zlib.decompressobj()
                data = inflater.decompress(blob[1:], bound + 1)
                if len(data) > bound or inflater.unconsumed_tail:
                    raise LostObjectError(f"checkpoint data {digest[:12]} is damaged")
            else:
                data = blob[1:]
        except zlib.error:
            data = b""
        if blob[:1] not in (b"z", b"r") or digest_of(data) != digest:
            raise LostObjectError(f"checkpoint data {digest[:12]} is damaged")
        return data

    # --- the index ------------------------------------------------------------------

    def _stream(self) -> JsonlStream:
        # Never rotated: pruning bounds it (CHECKPOINT_INDEX_MAX_LINES short lines).
        return JsonlStream(self.ws, f"{DIR}/index", MAX_FILE_BYTES)

    def pruned_ids(self) -> set[str]:
        """The ids of pruned calls (what work_log marks), without parsing every line."""
        try:
            text = read_text(self.ws, DIR, INDEX) or ""
        except WorkspaceError:
            return set()
        found = set()
        for raw in text.splitlines():
            if '"pruned"' in raw:
                with contextlib.suppress(ValueError, AttributeError, TypeError):
                    record = safejson.loads(raw)
                    if record.get("pruned") and isinstance(record.get("id"), str):
                        found.add(record["id"])
        return found

    def lines(self) -> list[dict[str, Any]]:
        """Every index line, oldest first (unreadable lines skipped)."""
        try:
            text = read_text(self.ws, DIR, INDEX)
        except WorkspaceError:
            return []
        found = []
        for raw in (text or "").splitlines():
            try:
                record = safejson.loads(raw)
            except ValueError:
                continue
            if isinstance(record, dict) and isinstance(record.get("id"), str) and record["id"]:
                size = record.get("b", 0)
                if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                    record["b"] = 0  # a planted size must not break the cap's arithmetic
                found.append(record)
        return found

    def append(self, line: dict[str, Any], *, locked: bool = False) -> None:
        """Add one call's line, then prune if the store went over its cap.

        `locked`: the caller holds the state lock (it is not re-entrant across flock)."""
        encoded = (dumps(line) + "\n").encode("utf-8")
        with contextlib.nullcontext() if locked else state_lock(self.ws):
            after = self._stream().append_line(encoded, locked=True)
            key = self.ws.state_dir
            with _usage_guard:
                seen = _usage.get(key)
            if seen is not None and seen[0] == after - len(encoded):
                total, count = seen[1] + int(line.get("b", 0)), seen[2] + 1
            else:  # first use, or another process wrote: count again
                lines = self.lines()
                total = sum(int(x.get("b", 0)) for x in lines if not x.get("pruned"))
                count = len(lines)
            if total > self.cap or count > CHECKPOINT_INDEX_MAX_LINES:
                total, count = self._prune()
                after = self._index_size()
            with _usage_guard:
                _usage[key] = (after, total, count)

    def _index_size(self) -> int:
        try:
            with locate_state(self.ws, DIR, INDEX) as loc:
                st = loc.lstat()
        except WorkspaceError:
            return 0
        return st.st_size if st is not None else 0

    def _prune(self) -> tuple[int, int]:
        """Drop the oldest calls until the store is under its cap (held: the state lock);
        returns the bytes and lines kept."""
        lines = self.lines()
        if len(lines) > CHECKPOINT_INDEX_MAX_LINES:
            keep_lines = int(CHECKPOINT_INDEX_MAX_LINES * CHECKPOINT_PRUNE_TO)
            lines = lines[-keep_lines:]
        total = sum(int(x.get("b", 0)) for x in lines if not x.get("pruned"))
        target = self.cap * CHECKPOINT_PRUNE_TO
        for index, line in enumerate(lines):
            if total <= target:
                break
            if not line.get("pruned"):
                total -= int(line.get("b", 0))
                lines[index] = {"id": line["id"], "ts": line.get("ts"), "pruned": True}
        total = self._collect(lines)
        write_text(self.ws, "".join(dumps(x) + "\n" for x in lines), DIR, INDEX)
        return total, len(lines)

    def manifest(self, line: dict[str, Any]) -> dict[str, Any] | None:
        """`{path: [before, after]}` of an index line (inline, or an object it names);
        None when pruned or lost."""
        if line.get("pruned"):
            return None
        inline = line.get("p")
        if isinstance(inline, dict):
            return inline
        digest = line.get("m")
        if not isinstance(digest, str):
            return {}
        try:
            loaded = safejson.loads(self.get(digest))
        except (LostObjectError, ValueError):
            return None
        return loaded if isinstance(loaded, dict) else None

    def _collect(self, lines: list[dict[str, Any]]) -> int:
        """Delete objects no kept call names; re-attribute sizes; return the kept total."""
        referenced: dict[str, int] = {}
        for line in lines:
            if line.get("pruned"):
                continue
            owned = 0
            for digest in _digests(line, self.manifest(line)):
                if digest not in referenced:
                    referenced[digest] = 0
                    owned += 1
            line["_owned"] = owned
        kept = 0
        now = time.time()
        for digest, size, mtime, remove in self._objects():
            if digest in referenced:
                referenced[digest] = size
                kept += size
            elif now - mtime > CHECKPOINT_GC_GRACE_SECONDS:
                remove()
        # Sizes are charged to the oldest kept call naming each object.
        seen: set[str] = set()
        for line in lines:
            if line.pop("_owned", None) is None:
                continue
            charged = 0
            for digest in _digests(line, self.manifest(line)):
                if digest not in seen:
                    seen.add(digest)
                    charged += referenced.get(digest, 0)
            line["b"] = charged
        return kept

    def _objects(self) -> Iterator[tuple[str, int, float, Any]]:
        """(digest, size, mtime, remove) of every stored object."""
        try:
            top = locate_state(self.ws, DIR, OBJECTS)
        except WorkspaceError:
            return
        with top:
            try:
                objects_fd = os.open(top.name, DIR_FLAGS, dir_fd=top.dir_fd)
            except OSError:
                return
            try:
                for bucket in os.listdir(objects_fd):
                    try:
                        bucket_fd = os.open(bucket, DIR_FLAGS, dir_fd=objects_fd)
                    except OSError:
                        continue
                    try:
                        for name in os.listdir(bucket_fd):
                            st = os.stat(name, dir_fd=bucket_fd, follow_symlinks=False)

                            def remove(fd: int = bucket_fd, name: str = name) -> None:
                                with contextlib.suppress(OSError):
                                    os.unlink(name, dir_fd=fd)

                            yield bucket + name, st.st_size, st.st_mtime, remove
                    finally:
                        os.close(bucket_fd)
            finally:
                os.close(objects_fd)


def _digests(line: dict[str, Any], manifest: dict[str, Any] | None) -> Iterator[str]:
    if isinstance(line.get("m"), str):
        yield line["m"]
    for before, _after in (manifest or {}).values():
        digest = before.get("h") if before.get("o") else None
        if digest:
            yield digest
