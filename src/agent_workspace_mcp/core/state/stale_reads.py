"""The stale-read guard (issue 34): what each agent session last read or wrote of each
file, so a write, delete or move cannot silently replace what another session, or
another program, changed since.

A session's record maps a file (its resolved path below the workspace root) to the
sha256 of the content the session last saw: read tools call `saw()` with the bytes they
answered, writes call `wrote()` under the path lock with the bytes they left. `check()`,
under the same path lock and before anything changes, compares the file now with the
session's version. A file the session never saw (or has forgotten: records are bounded)
passes, as before the guard; so does one whose content is unchanged (a touch or a chmod
is no change). Otherwise StaleError says who changed it (the last writer through the
server, remembered per file, or "outside the server") and shows what changed: the
content the session saw is in the checkpoint store whenever a server call replaced it.

Records are logs of JSON lines under `.workspace-mcp/seen/` (core.state.foldlog), one
per session plus `writers.jsonl`, appended to under their own lock (`seen.lock`, never
the journal's) and without fsync, so a change costs one line however much is
remembered; a lost or damaged line only makes a check pass, as before the guard. Every
process serving the root (workers, a stdio server beside an HTTP one) reads the same
files; a process reads only what was appended since it last looked.

Outside `bind()` (library use, the tools called directly in tests) every function here
does nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import posixpath
import stat
import threading
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from .. import limits
from ..checkpoints.store import LostObjectError, Store
from ..containment import Located, locate
from ..echo import bounded, echo
from ..editing import unified_diff
from ..errors import WorkspaceError
from ..osflags import DIR_FLAGS
from ..textio import read_bytes
from ..workspaces import Workspace
from . import foldlog
from .files import existing, locate_state, sibling
from .locks import state_lock

log = logging.getLogger("agent_workspace_mcp")

UNREAD = object()  # check(): the caller has not read the file; read it if needed
DIR = "seen"
SUFFIX = ".jsonl"
WRITERS = "writers" + SUFFIX
LOCK = "seen.lock"


@dataclass(frozen=True)
class Agent:
    """Who a call comes from, as the journal names it."""

    session: str
    client: str | None = None

    @property
    def named(self) -> str:
        # echo: a record written by an older server, or planted, may hold raw controls.
        named = f"session {echo(self.session)}"
        return named + (f" ({echo(self.client)})" if self.client else "")


# The console's actions: the operator's undo or restore is a change like an agent's.
OPERATOR = Agent("operator", "console")


class StaleError(WorkspaceError):
    """The file changed since this session last read or wrote it."""


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _shape(name: str) -> tuple[int, foldlog.Valid]:
    """A record's bound and what its values must be: the writers record, or a session's."""
    if name == WRITERS:
        return limits.SEEN_WRITERS, _is_writer
    return limits.SEEN_PATHS_PER_SESSION, _is_digest


def _when(record: Any) -> float:
    try:
        return float(record.get("t") or 0)
    except (TypeError, ValueError):
        return 0.0


def _record_name(session: str) -> str:
    return hashlib.blake2b(session.encode(), digest_size=10).hexdigest() + SUFFIX


def _is_digest(value: Any) -> bool:
    return isinstance(value, str)


def _is_writer(value: Any) -> bool:
    return isinstance(value, dict)


class Records:
    """One workspace's records (a subpath session shares its workspace's)."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws.anchor or ws
        self._cache: dict[str, foldlog.Folded] = {}  # name: as this process last folded it
        self._guard = threading.Lock()

    def key(self, loc: Located) -> str:
        if loc.workspace.root == self.ws.root:  # the usual case: relpath costs 6 us a call
            return loc.real_rel
        return posixpath.relpath(loc.real_abs, self.ws.root)

    def _load(self, name: str, at: Located | None = None) -> dict[str, Any]:
        """The folded record `name` ({} if there is none); only what was appended since
        this process last read it is read. `at`: the record, located, by a caller holding
        LOCK."""
        bound, valid = _shape(name)
        with self._guard:
            cached = self._cache.get(name)
        try:
            if at is not None:
                folded = foldlog.load(at, cached, bound, valid)
            else:
                with existing(self.ws, DIR, name) as loc:
                    folded = foldlog.load(loc, cached, bound, valid) if loc else foldlog.EMPTY
        except WorkspaceError as exc:
            log.warning("stale-read guard: %s; starting that record afresh", exc)
            return {}
        if folded is not cached:
            with self._guard:
                self._cache[name] = folded
        return folded.entries

    def _append(self, name: str, at: Located, change: dict[str, Any]) -> None:
        """Under LOCK: add one change to the record `name` (what was appended since this
        process last read it is folded in first)."""
        bound, valid = _shape(name)
        with self._guard:
            cached = self._cache.get(name)
        folded = foldlog.append(at, change, cached, bound, valid)
        with self._guard:
            self._cache[name] = folded

    def versions(self, session: str) -> dict[str, str]:
        return self._load(_record_name(session))

    def writer(self, key: str) -> dict[str, Any] | None:
        """The last write through the server of `key`, or removal of a directory above it,
        whichever came last."""
        writers = self._load(WRITERS)
        latest: dict[str, Any] | None = None
        probe = key
        while probe not in (".", ""):
            found = writers.get(probe)
            applies = isinstance(found, dict) and (probe == key or found.get("h") is None)
            if applies and (latest is None or _when(found) > _when(latest)):
                latest = found
            probe = posixpath.dirname(probe)
        return latest

    def update(
        self,
        agent: Agent,
        seen: dict[str, str | None],
        written: dict[str, str | None] | None = None,
        *,
        by: str | None = None,
    ) -> None:
        """Set (or, with None, forget) what `agent` has seen; record it as the last writer
        of `written` (None: it removed the file), through `by` (a command) if given."""
        name = _record_name(agent.session)
        with (
            state_lock(self.ws, LOCK),
            locate_state(self.ws, DIR, name, create_parents=True) as at,
        ):
            new = at.lstat() is None
            self._append(name, at, dict(seen))
            if written:
                now = time.time()
                entries: dict[str, Any] = {}
                for key, value in written.items():
                    entries[key] = {"s": agent.session, "c": agent.client, "t": now, "h": value}
                    if by:
                        entries[key]["x"] = by
                self._append(WRITERS, sibling(at, WRITERS), entries)
        if new:
            self._evict_sessions()

    def _evict_sessions(self) -> None:
        """Keep at most SEEN_SESSIONS session records: the least recently updated go."""
        try:
            with locate_state(self.ws, DIR) as loc:
                fd = os.open(loc.name, DIR_FLAGS, dir_fd=loc.dir_fd)
        except (WorkspaceError, OSError):
            return
        try:
            aged = []
            for name in os.listdir(fd):
                if name.endswith(".json"):  # a whole-record file of before issue 47: unread
                    with contextlib.suppress(OSError):
                        os.unlink(name, dir_fd=fd)
                if name == WRITERS or not name.endswith(SUFFIX):
                    continue
                with contextlib.suppress(OSError):
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    if stat.S_ISREG(st.st_mode):
                        aged.append((st.st_mtime_ns, name))
            aged.sort()
            for _, name in aged[: max(0, len(aged) - limits.SEEN_SESSIONS)]:
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=fd)
                with self._guard:
                    self._cache.pop(name, None)
        finally:
            os.close(fd)


_records: dict[str, Records] = {}
_records_guard = threading.Lock()


def records_for(ws: Workspace) -> Records:
    home = ws.anchor or ws
    with _records_guard:
        found = _records.get(home.state_dir)
        if found is None:
            found = _records[home.state_dir] = Records(home)
        return found


_bound: ContextVar[tuple[Records, Agent] | None] = ContextVar("agent_workspace_seen", default=None)


@contextlib.contextmanager
def bind(ws: Workspace, agent: Agent, *, keep: bool = False) -> Iterator[None]:
    """Calls inside are `agent`'s: what they read and write is remembered, and checked.
    `keep`: what a session reads is also kept in the checkpoint store (bounded), so a
    refusal for a change made outside the server can show the diff (issue 44)."""
    token = _bound.set((records_for(ws), agent))
    kept = _keep.set(keep)
    try:
        yield
    finally:
        _keep.reset(kept)
        _bound.reset(token)


_keep: ContextVar[bool] = ContextVar("awm_seen_keep", default=False)


def _safely(action: str, run: Any) -> None:
    """A record that cannot be kept never fails the call it describes."""
    try:
        run()
    except WorkspaceError as exc:
        log.warning("stale-read guard: could not record a %s: %s", action, exc)


def saw(loc: Located, data: bytes | None = None, *, sha256: str | None = None) -> None:
    """The session was shown this file's content (`data`, or its full `sha256`)."""
    bound = _bound.get()
    if bound is None:
        return
    records, agent = bound
    key = records.key(loc)
    value = sha256 if sha256 is not None else digest(data or b"")
    if records.versions(agent.session).get(key) != value:
        _safely("read", lambda: records.update(agent, {key: value}))
        if data is not None and _keep.get() and len(data) <= limits.SEEN_KEPT_BYTES:
            # Content-addressed by the same sha256 the record names (unreferenced objects
            # are collected after CHECKPOINT_GC_GRACE_SECONDS).
            _safely("read's content", lambda: Store(records.ws).put(data))


# Inside `batched()`: the writes so far (seen, written), recorded in one update at its end.
_batch: ContextVar[tuple[dict[str, str | None], dict[str, str | None]] | None] = ContextVar(
    "awm_seen_batch", default=None
)


@contextlib.contextmanager
def batched() -> Iterator[None]:
    """The writes inside are recorded once, at the end (an undo of 2,000 files rewrote
    the session's record 2,000 times: 40 s). Held under the caller's path locks."""
    bound = _bound.get()
    if bound is None or _batch.get() is not None:
        yield
        return
    pending: tuple[dict[str, str | None], dict[str, str | None]] = ({}, {})
    token = _batch.set(pending)
    try:
        yield
    finally:
        _batch.reset(token)
        records, agent = bound
        if pending[0]:
            _safely("write", lambda: records.update(agent, *pending))


def wrote(loc: Located, data: bytes | None, *, tree: bool = False) -> None:
    """Under the path lock: the session left `data` here (None: removed it, and with
    `tree` everything under it)."""
    bound = _bound.get()
    if bound is None:
        return
    records, agent = bound
    key = records.key(loc)
    value = None if data is None else digest(data)
    seen: dict[str, str | None] = {key: value}
    if tree:
        prefix = key + "/"
        seen.update({k: None for k in records.versions(agent.session) if k.startswith(prefix)})
    pending = _batch.get()
    if pending is not None:
        pending[0].update(seen)
        pending[1][key] = value
        return
    _safely("write", lambda: records.update(agent, seen, {key: value}))


def current_agent() -> Agent | None:
    """Whose calls these are (a job's end is recorded as the session that started it)."""
    bound = _bound.get()
    return None if bound is None else bound[1]


def command_wrote(ws: Workspace, written: dict[str, str | None], by: str) -> None:
    """A command the session ran left these files (index paths of `ws`: their sha256, or
    None when gone): they are the session's own writes, and `by` names the command to
    another session whose read they made stale."""
    bound = _bound.get()
    if bound is None:
        return
    records, agent = bound
    keys = {
        posixpath.relpath(posixpath.join(ws.root, rel), records.ws.root): value
        for rel, value in written.items()
    }
    _safely("command's writes", lambda: records.update(agent, keys, keys, by=by))


def forget(loc: Located) -> None:
    """The session's view of `loc` and everything under it is gone (a directory moved
    over it), without naming it the writer of anything."""
    bound = _bound.get()
    if bound is None:
        return
    records, agent = bound
    key = records.key(loc)
    prefix = key + "/"
    gone: dict[str, str | None] = {
        k: None for k in records.versions(agent.session) if k == key or k.startswith(prefix)
    }
    if gone:
        _safely("move", lambda: records.update(agent, gone))


def check(loc: Located, current: Any = UNREAD, *, retry: str, tree: bool = False) -> None:
    """Under the path lock, before `loc` changes: refuse if the file (with `tree`, any
    file the session saw under it) is no longer what this session last read or wrote.
    `current` is the file's content now if the caller has read it (None: there is none);
    `{sha}` in `retry` becomes the sha256 prefix it has now."""
    bound = _bound.get()
    if bound is None:
        return
    records, agent = bound
    key = records.key(loc)
    versions = records.versions(agent.session)
    prefix = key + "/"
    # Without `tree`, one lookup: a long session has read hundreds of files (issue 47).
    own = [(key, versions[key])] if key in versions else []
    seen = list(versions.items()) if tree else own
    for seen_key, seen_digest in seen:
        if seen_key == key:
            now = current_bytes(loc) if current is UNREAD else current
            shown = loc.display
        elif tree and seen_key.startswith(prefix):
            now = _content(records.ws, seen_key)
            shown = seen_key
        else:
            continue
        now_digest = None if now is None else digest(now)
        if now_digest == seen_digest:
            continue
        last = records.writer(seen_key)
        if last is not None and last.get("s") == agent.session and last.get("h") == now_digest:
            continue  # this session's own change, recorded by another of its processes
        retry = retry.replace("{sha}", (now_digest or digest(b""))[: limits.SHA_SHOWN])
        error = StaleError(_refusal(shown, now, now_digest, last, retry))
        if now is not None:
            error.detail = _what_changed(records, shown, seen_digest, now)
        raise error


def current_bytes(loc: Located) -> bytes | None:
    """The bytes of the regular file at `loc` (None: no file, or not one that is read)."""
    st = loc.lstat()
    if st is None or not stat.S_ISREG(st.st_mode) or st.st_size > limits.MAX_FILE_BYTES:
        return None
    try:
        data, _ = read_bytes(loc)
    except WorkspaceError:
        return None
    return data


def _content(ws: Workspace, key: str) -> bytes | None:
    try:
        with locate(ws, key) as loc:
            return current_bytes(loc)
    except WorkspaceError:
        return None


def _ago(then: float) -> str:
    seconds = max(0, int(time.time() - then))
    if seconds < 120:
        return f"{seconds} s ago"
    if seconds < 7200:
        return f"{seconds // 60} min ago"
    return f"{seconds // 3600} h ago"


def _refusal(
    shown: str, now: bytes | None, now_digest: str | None, last: dict[str, Any] | None, retry: str
) -> str:
    if last is not None and last.get("h") == now_digest:
        if last.get("s") == OPERATOR.session and last.get("c") == OPERATOR.client:
            who = "the operator in the console"
        else:
            who = f"session {echo(str(last.get('s')))}" + (
                f" ({echo(str(last['c']))})" if last.get("c") else ""
            )
            if last.get("x"):
                who += f"'s {echo(str(last['x']))}"
        by = f"by {who}, {_ago(_when(last))}"
    else:
        by = "outside the server (an editor, a command or another program)"
    retry = retry[:1].upper() + retry[1:]
    if now is None:
        return f"{shown} was deleted since this session last read it, {by}. {retry}."
    return f"{shown} changed since this session last read or wrote it, {by}. {retry}."


def _what_changed(records: Records, shown: str, seen_digest: str, now: bytes) -> str:
    """The change as a short diff, when the content the session saw is still kept."""
    if len(now) > limits.CONSOLE_DIFF_MAX_BYTES:
        return ""  # difflib on megabytes takes seconds; the refusal names the file anyway
    try:
        before = Store(records.ws).get(seen_digest, limits.CONSOLE_DIFF_MAX_BYTES)
        old, new = before.decode("utf-8"), now.decode("utf-8")
    except (LostObjectError, WorkspaceError):
        return ""
    except UnicodeDecodeError:
        return f"What changed: binary, {len(before)} -> {len(now)} bytes."
    diff = unified_diff(old, new, shown, max_lines=limits.STALE_DIFF_LINES)
    return bounded(f"What changed:\n{diff}", limits.STALE_DIFF_CHARS)
