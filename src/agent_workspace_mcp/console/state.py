"""What the console shows, read from the workspaces' state on disk: the journal, the
checkpoints (for diffs), notes, changes and job records. It works whatever served the
agent (stdio, HTTP, several workers) and after the server stopped, because it reads
only files, through the same containment walk as every tool. Nothing here renders
HTML: the page puts every agent-provided string in as text.
"""

from __future__ import annotations

import json
import math
import os
import posixpath
import time
from collections.abc import Callable
from dataclasses import asdict, replace
from typing import Any

from ..core import edits, limits
from ..core.checkpoints import undoing
from ..core.checkpoints.diffs import FileDiff, entry_diffs
from ..core.checkpoints.store import Store
from ..core.containment import resolve_subpath
from ..core.errors import InvalidArgumentError, UnknownWorkspaceError, WorkspaceError
from ..core.exec import repoguard
from ..core.exec.jobrecords import JobRecords
from ..core.exec.jobs import default_job_dir, log_tail
from ..core.state.approvals import Approvals
from ..core.state.changes import Changes
from ..core.state.files import has_state_dir
from ..core.state.grants import Grants, grantable
from ..core.state.journal import activity
from ..core.state.journal.calls import journaled
from ..core.state.journal.entries import Memory
from ..core.state.locks import PathLocks
from ..core.workspaces import Workspace, WorkspaceRegistry

OPERATOR = "operator"  # the subject the console's actions are journaled as


class ConsoleState:
    def __init__(
        self,
        registry: WorkspaceRegistry,
        *,
        journal_max_bytes: int,
        checkpoint_max_bytes: int,
        job_dir: str | None = None,
        live_sessions: Callable[[], list[dict[str, Any]]] | None = None,
    ) -> None:
        self.registry = registry
        self.memory = Memory(journal_max_bytes)
        self.checkpoint_max_bytes = checkpoint_max_bytes
        self.locks = PathLocks()
        self.changes_store = Changes()
        # The HTTP server's connected sessions (subject, subpath), when it serves us.
        self.live_sessions = live_sessions or (lambda: [])
        self.job_dir = job_dir or default_job_dir()
        self.approval_store = Approvals(limits.CONFIRM_TIMEOUT_DEFAULT)
        self.grant_store = Grants()
        self._views: tuple[float, list[Workspace]] | None = None

    def workspace(self, name: str | None) -> Workspace:
        if name and SUBVIEW in name:  # a subpath session's own state: `default:sub`
            for view in self.views():
                if view.name == name:
                    return view
            raise UnknownWorkspaceError(f"no workspace {name[:80]} with recorded work")
        return self.registry.get(name)

    def views(self) -> list[Workspace]:
        """Every workspace, then each subpath session's state below the primary: a session
        confined to `sub` journals and records its checkpoints in `sub/.workspace-mcp`
        (its paths relative to `sub`), shown here as the workspace `<primary>:sub` so its
        diffs and undo work as the session's did (issue 43: the console showed none of
        it). Found by one bounded walk, kept CONSOLE_VIEWS_SECONDS."""
        now = time.monotonic()
        if self._views is not None and now - self._views[0] < limits.CONSOLE_VIEWS_SECONDS:
            return self._views[1]
        found = list(self.registry)
        primary = self.registry.primary
        if primary.confined:
            try:
                seen = repoguard.survey(primary, (), names=(limits.STATE_DIR_NAME,))
            except WorkspaceError:
                seen = None
            for rel, (_dev, _ino, kind) in sorted(seen.entries.items() if seen else ()):
                sub = posixpath.dirname(rel)
                if not sub or kind != "dir":
                    continue
                try:
                    view = self.registry.view(resolve_subpath(primary, sub)).primary
                except WorkspaceError:
                    continue
                found.append(replace(view, name=f"{primary.name}{SUBVIEW}{sub}"))
        self._views = (now, found)
        return found

    def store(self, ws: Workspace) -> Store:
        return Store(ws, self.checkpoint_max_bytes)

    # --- the timeline ------------------------------------------------------------

    def entries(
        self,
        name: str | None = None,
        *,
        limit: int = 200,
        tool: str | None = None,
        path: str | None = None,
        outcome: str | None = None,
        by: str | None = None,
        session: str | None = None,
        since: str | None = None,
    ) -> list[dict[str, Any]]:
        """Journal entries, newest first, across the workspaces (or one), filtered."""
        found: list[dict[str, Any]] = []
        keep = _keep(
            {
                "tool": tool,
                "path": path,
                "outcome": outcome,
                "by": by,
                "session": session,
                "since": since,
            }
        )
        for ws in [self.workspace(name)] if name else self.views():
            for record in self.memory.journal(ws).newest(limit, lambda r: keep(shaped(r))):
                found.append({**shaped(record), "workspace": ws.name})
        found.sort(key=lambda r: str(r.get("ts", "")), reverse=True)
        return found[:limit]

    def marks(self) -> tuple:
        """Changes whenever any workspace's journal gets an entry (cheap: one stat each)."""
        return tuple(self.memory.journal(ws).mark() for ws in self.views())

    def older(
        self, name: str | None, before: int | None, *, limit: int = 200, **filters: str | None
    ) -> tuple[list[dict[str, Any]], int | None]:
        """One workspace's entries older than journal offset `before`, newest first, and
        the cursor of the page after (None: the start of the current journal file)."""
        ws = self.workspace(name)
        keep = _keep(filters)
        records, cursor = self.memory.journal(ws).page(before, limit, lambda r: keep(shaped(r)))
        return [{**shaped(r), "workspace": ws.name} for r in records], cursor

    def file_history(
        self,
        name: str | None,
        path: str,
        before: int | None = None,
    ) -> tuple[list[dict[str, Any]], int | None]:
        """What happened to one file: the calls that named it (or a path under it),
        newest first, each with the +/- lines it made to that file, and the cursor of the
        next page (as `older`)."""
        ws = self.workspace(name)
        path = path.strip().strip("/")

        def touches(record: dict[str, Any]) -> bool:
            named = (p.strip("/") for p in shaped(record)["paths"])
            return any(p == path or p.startswith(path + "/") for p in named)

        records, cursor = self.memory.journal(ws).page(
            before, limits.CONSOLE_HISTORY_ENTRIES, touches
        )
        found = []
        for record in map(shaped, records):
            row: dict[str, Any] = {**record, "workspace": ws.name}
            try:
                diffs = self.diff(ws.name, str(record.get("id", "")))
            except WorkspaceError:
                diffs = []  # a read, a command, or a pruned checkpoint: no counts
            mine = [d for d in diffs if d.path == path or d.path.startswith(path + "/")]
            if mine:
                row["plus"] = sum(d.plus for d in mine)
                row["minus"] = sum(d.minus for d in mine)
                row["what"] = ", ".join(sorted({d.change for d in mine}))
            found.append(row)
        return found, cursor

    # --- diffs -------------------------------------------------------------------

    def diff(
        self, name: str | None, entry_id: str, *, path: str | None = None, offset: int = 0
    ) -> list[FileDiff]:
        """What one call changed, per path (core/checkpoints/diffs)."""
        ws = self.workspace(name)
        return entry_diffs(ws, self.store(ws), entry_id, path=path, offset=offset)

    # --- human actions -------------------------------------------------------------

    def undo(
        self,
        name: str | None,
        *,
        entry: str | None = None,
        to: str | None = None,
        change: str | None = None,
        session: str | None = None,
        dry_run: bool,
        force: bool = False,
    ) -> str:
        """Undo as the operator (everyone's history), journaled like the tool, so it can be
        undone in turn; a dry run is not journaled. `session`: every call that connection
        made (from the journal)."""
        ws = self.workspace(name)
        store = self.store(ws)
        ids = None
        if session:
            ids = (self.memory.call_ids(ws, session=session), f"session {session[:40]}")

        def run() -> str:
            result = undoing.undo(
                ws,
                store,
                self.locks,
                subject=None,
                entry=entry,
                to=to,
                change=change,
                ids=ids,
                dry_run=dry_run,
                force=force,
            )
            return undoing.render(result, dry_run=dry_run, head="undo")

        if dry_run:
            return run()
        with journaled(ws, "undo", store=store, memory=self.memory, subject=OPERATOR):
            return run()

    def restore(self, name: str | None, path: str, before: str, *, dry_run: bool = False) -> str:
        """A file (or folder) as before entry `before`; a dry run says what would change
        (files and line counts) and is not journaled."""
        ws = self.workspace(name)
        store = self.store(ws)
        if dry_run:
            result = undoing.restore(
                ws, store, self.locks, path, before, subject=None, dry_run=True
            )
            return undoing.render(result, dry_run=True, head="restore")
        with journaled(ws, "restore_file", store=store, memory=self.memory, subject=OPERATOR):
            result = undoing.restore(ws, store, self.locks, path, before, subject=None)
        return undoing.render(result, dry_run=False, head="restore")

    # --- approvals (issue 32) ----------------------------------------------------------

    def approvals(self) -> list[dict[str, Any]]:
        """Every workspace's kept approval records, pending first, then newest first."""
        found = []
        for ws in self.registry:
            if not has_state_dir(ws):
                continue
            for record in self.approval_store.pending(ws):
                left = max(0, int(float(record.get("expires", 0)) - time.time()))
                grants = grantable(record)  # the page offers a grant only where it may be
                found.append({**record, "workspace": ws.name, "left": left, "grantable": grants})
        return sorted(
            found, key=lambda r: (r.get("status") != "pending", -float(r.get("created", 0)))
        )

    def decide(
        self,
        name: str | None,
        approval_id: str,
        *,
        approve: bool,
        grant: dict[str, Any] | None = None,
        edit: dict[str, Any] | None = None,
        note: str | None = None,
    ) -> str:
        """The operator's decision, journaled as theirs (who, how, when, the digest); with
        `grant` ({"kind": session|minutes|paths, "minutes": N, "under": folder}) the same
        kind of call is approved from now on within its bounds (core.state.grants)."""
        ws = self.workspace(name)
        if grant is not None and not approve:
            raise InvalidArgumentError("only an approval can be granted again")
        if edit is not None:  # the person's version: checked before anything is decided
            if not approve or grant is not None:
                raise InvalidArgumentError("an edited call is approved once, without a grant")
            asked = self.approval_store.get(ws, approval_id, operator=True)
            try:
                proposed = json.loads(str(asked.get("arguments")))
            except ValueError:
                proposed = None
            if not isinstance(proposed, dict) or not isinstance(proposed.get("arguments"), dict):
                raise InvalidArgumentError(
                    f"{approval_id} cannot be edited here (not a write, or too large)"
                )
            edits.merged(str(proposed.get("tool")), proposed["arguments"], edit)
        if grant is not None:  # refused before anything is decided
            asked = self.approval_store.get(ws, approval_id, operator=True)
            self.grant_store.check(
                asked,
                kind=str(grant.get("kind")),
                minutes=_minutes(grant.get("minutes")),
                under=grant.get("under") if isinstance(grant.get("under"), str) else None,
            )
        verb = "approve" if approve else "deny"
        with journaled(
            ws, verb, store=self.store(ws), memory=self.memory, subject=OPERATOR, checkpoints=False
        ):
            record = self.approval_store.decide(
                ws,
                approval_id,
                approve=approve,
                by=OPERATOR,
                via="console (edited)" if edit is not None else "console",
                edit=edit,
                note=note,
            )
            activity.record(
                detail=f"{record['id']} {record.get('tool')} asked by "
                f"{record.get('subject') or 'the agent'} "
                f"(digest {str(record.get('digest'))[:12]})",
                result=record["status"],
            )
        said = f"{record['id']} ({record.get('tool')}): {record['status']}"
        if grant is None:
            return said
        with journaled(
            ws,
            "grant",
            store=self.store(ws),
            memory=self.memory,
            subject=OPERATOR,
            checkpoints=False,
        ):
            made = self.grant_store.make(
                ws,
                record,
                kind=str(grant.get("kind")),
                minutes=_minutes(grant.get("minutes")),
                under=grant.get("under") if isinstance(grant.get("under"), str) else None,
                by=OPERATOR,
            )
            scope = made["under"] + "/" if made["kind"] == "paths" else made["kind"]
            activity.record(
                detail=f"{made['id']} {made['tool']} for {made.get('subject') or 'the agent'} "
                f"({scope}; {made['rule']}) from {record['id']}",
                result=f"until {_clock(made['expires'])}",
            )
        return f"{said}; granted as {made['id']} until {_clock(made['expires'])}"

    def oversight(self, limit: int = 2000) -> list[dict[str, Any]]:
        """Per session (issue 48, item 6): how many calls ran, how many a person (or the
        reviewer program) was asked about, how long they waited for an answer, how many
        were denied. From the newest `limit` journal entries and the approval records."""
        rows: dict[str, dict[str, Any]] = {}

        def row(session: str) -> dict[str, Any]:
            return rows.setdefault(
                session,
                {"session": session, "calls": 0, "asked": 0, "denied": 0, "waits": []},
            )

        for entry in self.entries(limit=limit):
            if entry.get("by") == OPERATOR or not entry.get("session"):
                continue  # the operator's own decisions, undos and grants are not calls
            row(str(entry["session"]))["calls"] += 1
        for record in self.approvals():
            found = row(str(record.get("session") or "?"))
            found["asked"] += 1
            found["denied"] += record.get("verdict") == "denied"
            decided = record.get("decided")
            if isinstance(decided, int | float):
                found["waits"].append(max(0.0, float(decided) - float(record.get("created", 0))))
        shown = []
        for found in rows.values():
            waits = sorted(found.pop("waits"))
            found["waited_median_s"] = round(waits[len(waits) // 2], 1) if waits else None
            found["waited_max_s"] = round(waits[-1], 1) if waits else None
            shown.append(found)
        return sorted(shown, key=lambda r: (-r["calls"], r["session"]))

    def grants(self) -> list[dict[str, Any]]:
        """Every workspace's live grants, newest first."""
        found = []
        for ws in self.registry:
            if has_state_dir(ws):
                found += [{**g, "workspace": ws.name} for g in self.grant_store.live(ws)]
        return sorted(found, key=lambda g: -float(g.get("created", 0)))

    def revoke(self, name: str | None, grant_id: str) -> str:
        ws = self.workspace(name)
        with journaled(
            ws,
            "revoke",
            store=self.store(ws),
            memory=self.memory,
            subject=OPERATOR,
            checkpoints=False,
        ):
            gone = self.grant_store.revoke(ws, grant_id)
            activity.record(detail=f"{gone['id']} {gone.get('tool')}", result="revoked")
        return f"{gone['id']} ({gone.get('tool')}): revoked"

    # --- notes, changes, jobs ------------------------------------------------------

    def notes(self, name: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        found = []
        for ws in [self.workspace(name)] if name else self.views():
            found += [{**r, "workspace": ws.name} for r in self.memory.notes(ws).newest(limit)]
        return sorted(found, key=lambda r: str(r.get("ts", "")), reverse=True)[:limit]

    def changes(self) -> list[dict[str, Any]]:
        found = []
        for ws in self.registry:
            active = self.changes_store.active(ws)
            for change_id in self.changes_store.ids(ws):
                try:
                    record = self.changes_store.load(ws, change_id)
                except WorkspaceError:
                    continue  # a damaged record is named by change_status, not here
                tasks = [
                    {
                        "id": str(t.get("id", "")),
                        "text": str(t.get("text", "")),
                        "status": str(t.get("status", "")),
                    }
                    for t in record.get("tasks", [])
                    if isinstance(t, dict)
                ]
                found.append(
                    {
                        "workspace": ws.name,
                        "id": change_id,
                        "title": str(record.get("title", "")),
                        "active": change_id == active,
                        "tasks": tasks,
                    }
                )
        return found

    def jobs(self) -> list[dict[str, Any]]:
        """The jobs run in this console's workspaces (newest first). The job directory is
        shared by every server of the user (the default one, or one named by several): a
        job of another project, its host directory and output, is not this console's."""
        mine = [r for r in JobRecords(self.job_dir).all() if self._owning(str(r.get("cwd", "")))]
        return sorted(mine, key=lambda r: str(r.get("started_at", "")), reverse=True)

    def _job(self, job_id: str) -> dict[str, Any]:
        record = JobRecords(self.job_dir).read(job_id)
        if record is None or self._owning(str(record.get("cwd", ""))) is None:
            raise WorkspaceError(f"no job {job_id[:40]} in this console's workspaces")
        return record

    def job_log(self, job_id: str) -> str:
        """The tail of a job's log (the records name only ids: the path is ours)."""
        record = self._job(job_id)
        path = os.path.join(self.job_dir, f"{record['id']}.log")
        return log_tail(path, record["id"], limits.JOB_TAIL_DEFAULT_BYTES)

    def kill(self, job_id: str) -> str:
        records = JobRecords(self.job_dir)
        record = self._job(job_id)
        if record.get("status") != "running":
            return f"job {record['id']} is not running ({record.get('status')})"
        ws = self._workspace_of(str(record.get("cwd", "")))
        with journaled(
            ws,
            "job_kill",
            store=self.store(ws),
            memory=self.memory,
            subject=OPERATOR,
            checkpoints=False,
        ):
            activity.record(detail=record["id"])
            records.update(record["id"], kill_requested=True)
            records.signal_job(record)
            activity.record(result="killed")
        return f"job {record['id']}: stopped"

    def _owning(self, cwd: str) -> Workspace | None:
        """The workspace a job ran in, by its recorded (real) directory, or None."""
        for ws in self.registry:
            top = ws.root if ws.confined else ws.base
            if cwd == top or cwd.startswith(top.rstrip("/") + "/"):
                return ws
        return None

    def _workspace_of(self, cwd: str) -> Workspace:
        """The workspace a job ran in (its journal records the kill), else the primary."""
        return self._owning(cwd) or self.registry.primary


SUBVIEW = ":"  # `default:sub`: a subpath session's state, as the console names it
_NUMBERS = frozenset({"ms"})


def shaped(record: dict[str, Any]) -> dict[str, Any]:
    """A journal line in the shape the page reads: `paths` a list of strings, numbers as
    numbers, every other field a string or null. The journal is a file in the workspace:
    one line with a numeric `ts` or a string `paths` blanked the whole timeline."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        if key == "paths":
            items = value if isinstance(value, list) else [] if value is None else [value]
            out[key] = [v if isinstance(v, str) else json.dumps(v) for v in items]
        elif key in _NUMBERS:
            fine = isinstance(value, int | float) and not isinstance(value, bool)
            out[key] = value if fine and math.isfinite(value) else None
        elif value is None or isinstance(value, str):
            out[key] = value
        else:
            out[key] = json.dumps(value, ensure_ascii=False, default=str)
    out.setdefault("paths", [])
    return out


def _keep(filters: dict[str, str | None]) -> Callable[[dict[str, Any]], bool]:
    """The timeline's filters as one predicate over journal records."""
    tool, path, by = filters.get("tool"), filters.get("path"), filters.get("by")
    outcome, session = filters.get("outcome"), filters.get("session")
    since = filters.get("since")  # an ISO time: entries at or after it (ISO sorts as text)

    def keep(record: dict[str, Any]) -> bool:
        if since and str(record.get("ts", "")) < since:
            return False
        if tool and record.get("tool") != tool:
            return False
        if path and not any(path in str(p) for p in record.get("paths") or []):
            return False
        if by and record.get("by") != by:
            return False
        if session and record.get("session") != session:
            return False
        failed = str(record.get("result", "")).startswith("error")
        return not (outcome and (outcome == "error") != failed)

    return keep


def as_dicts(diffs: list[FileDiff]) -> list[dict[str, Any]]:
    return [asdict(d) for d in diffs]


def _minutes(value: object) -> float:
    if value is None:
        return float(limits.GRANT_MINUTES_DEFAULT)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise InvalidArgumentError("a grant's minutes are a number")


def _clock(when: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(when))
