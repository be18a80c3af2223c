"""Change tracking (SDD-lite): change records, stage documents, tasks, constraints.

Layout and record shape are the backbone document's, so a workspace used by that
server keeps its changes: `.workspace-mcp/changes/<id>.json`, stage documents in
`.workspace-mcp/changes/<id>/<stage>.md`, the active change in `state.json`. Every
mutation is a read-modify-write under the state lock (threads and processes) with an
atomic write, so parallel `task_add` calls from two servers get sequential ids and no
update is lost. A corrupted record is reported by name and never hides the others.
"""

from __future__ import annotations

import os
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from ..echo import echo, listing
from ..errors import InvalidArgumentError, NotFoundError, WorkspaceError
from ..fileops import make_directory
from ..limits import CHANGE_DOC_MAX_BYTES, SLUG_MAX_CHARS, STATE_DIR_NAME
from ..osflags import DIR_FLAGS
from ..workspaces import Workspace
from .files import locate_state
from .journal.entries import now_iso
from .locks import state_lock
from .records import file_size, read_json, read_text, write_json, write_text

STAGES = ("proposal", "spec", "design", "notes")
STATUSES = ("pending", "in_progress", "done", "blocked")
_ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_TASK_RE = re.compile(r"^T(\d+)$")


def slugify(title: str) -> str:
    text = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii").lower()
    slug = re.sub(r"[^a-z0-9]+", "-", text).strip("-")[:SLUG_MAX_CHARS].strip("-")
    return slug or "change"


@dataclass
class Listing:
    records: list[dict[str, Any]]  # newest first
    problems: list[str]  # one sentence per unreadable record


class Changes:
    def _check_id(self, change_id: str) -> None:
        if not _ID_RE.match(change_id or ""):
            raise InvalidArgumentError(
                f"invalid change id '{echo(change_id)}': ids are kebab-case slugs"
            )

    def ids(self, ws: Workspace) -> list[str]:
        try:
            with locate_state(ws, "changes") as loc:  # NotFoundError: no state yet
                if loc.lstat() is None:
                    return []
                fd = os.open(loc.name, DIR_FLAGS, dir_fd=loc.dir_fd)
                try:
                    names = os.listdir(fd)
                finally:
                    os.close(fd)
        except (WorkspaceError, OSError):
            return []
        return sorted(n[:-5] for n in names if n.endswith(".json") and _ID_RE.match(n[:-5]))

    def active(self, ws: Workspace) -> str | None:
        state = read_json(ws, "state.json")
        value = state.get("activeChange") if isinstance(state, dict) else None
        return value if isinstance(value, str) else None

    def resolve(self, ws: Workspace, change_id: str | None) -> str:
        if change_id:
            self._check_id(change_id)
            return change_id
        active = self.active(ws)
        if not active:
            raise InvalidArgumentError(
                "no active change; pass changeId or start one with change_create"
            )
        return active

    def load(self, ws: Workspace, change_id: str) -> dict[str, Any]:
        self._check_id(change_id)
        record = read_json(ws, "changes", f"{change_id}.json")
        if record is None:
            ids = self.ids(ws)
            available = listing(ids) if ids else "none yet"
            raise NotFoundError(f'unknown change "{echo(change_id)}". Available: {available}')
        if not isinstance(record, dict) or not isinstance(record.get("tasks", []), list):
            raise WorkspaceError(
                f"{STATE_DIR_NAME}/changes/{change_id}.json is corrupted (not a change record)"
            )
        record.setdefault("tasks", [])
        record.setdefault("constraints", [])
        return record

    def _save(self, ws: Workspace, record: dict[str, Any]) -> None:
        record["updatedAt"] = now_iso()
        write_json(ws, record, "changes", f"{record['id']}.json")

    def create(self, ws: Workspace, title: str, goal: str | None) -> dict[str, Any]:
        title = title.strip()
        if not title:
            raise InvalidArgumentError("title must not be empty")
        base = slugify(title)
        with state_lock(ws):
            existing = set(self.ids(ws))
            change_id, n = base, 2
            while change_id in existing:
                change_id, n = f"{base}-{n}", n + 1
            stamp = now_iso()
            record: dict[str, Any] = {"id": change_id, "title": title}
            if goal:
                record["goal"] = goal.strip()
            record.update({"constraints": [], "tasks": [], "createdAt": stamp, "updatedAt": stamp})
            write_json(ws, record, "changes", f"{change_id}.json")
            with locate_state(ws, "changes", change_id, create_parents=True) as loc:
                make_directory(loc)
            write_json(ws, {"activeChange": change_id}, "state.json")
        return record

    def activate(self, ws: Workspace, change_id: str) -> dict[str, Any]:
        with state_lock(ws):
            record = self.load(ws, change_id)
            write_json(ws, {"activeChange": change_id}, "state.json")
        return record

    def docs(self, ws: Workspace, change_id: str) -> dict[str, int | None]:
        return {stage: file_size(ws, "changes", change_id, f"{stage}.md") for stage in STAGES}

    def write_doc(
        self, ws: Workspace, change_id: str | None, stage: str, content: str, append: bool
    ) -> str:
        if stage not in STAGES:
            raise InvalidArgumentError(f"stage must be one of {', '.join(STAGES)}")
        if not content.strip():
            raise InvalidArgumentError("content must not be empty")
        if len(content.encode("utf-8")) > CHANGE_DOC_MAX_BYTES:
            raise InvalidArgumentError("content is larger than 1 MiB")
        with state_lock(ws):
            change_id = self.resolve(ws, change_id)
            record = self.load(ws, change_id)
            text = content
            if append:
                previous = read_text(ws, "changes", change_id, f"{stage}.md")
                if previous:
                    text = previous.rstrip("\n") + "\n\n" + content
            if not text.endswith("\n"):
                text += "\n"
            write_text(ws, text, "changes", change_id, f"{stage}.md")
            self._save(ws, record)
        return change_id

    def add_task(
        self, ws: Workspace, change_id: str | None, text: str, status: str
    ) -> tuple[str, dict[str, Any]]:
        if status not in STATUSES:
            raise InvalidArgumentError(f"status must be one of {', '.join(STATUSES)}")
        if not text.strip():
            raise InvalidArgumentError("text must not be empty")
        with state_lock(ws):
            change_id = self.resolve(ws, change_id)
            record = self.load(ws, change_id)
            numbers = [
                int(m.group(1))
                for t in record["tasks"]
                if (m := _TASK_RE.match(str(t.get("id", ""))))
            ]
            task_id = f"T{max(numbers, default=0) + 1}"
            stamp = now_iso()
            record["tasks"].append(
                {
                    "id": task_id,
                    "text": text.strip(),
                    "status": status,
                    "notes": [],
                    "createdAt": stamp,
                    "updatedAt": stamp,
                }
            )
            self._save(ws, record)
        return task_id, record

    def update_tasks(
        self, ws: Workspace, change_id: str | None, updates: list[dict[str, Any]]
    ) -> tuple[str, list[str]]:
        with state_lock(ws):
            change_id = self.resolve(ws, change_id)
            record = self.load(ws, change_id)
            by_id = {str(t.get("id")): t for t in record["tasks"]}
            bad = [str(u["taskId"]) for u in updates if str(u["taskId"]) not in by_id]
            bad_status = [
                f"{u['taskId']}={u['status']}" for u in updates if u["status"] not in STATUSES
            ]
            if bad or bad_status:
                parts = []
                if bad:
                    parts.append(f"unknown task ids: {listing(bad)}")
                if bad_status:
                    parts.append(
                        f"invalid statuses: {listing(bad_status)} (use {', '.join(STATUSES)})"
                    )
                raise InvalidArgumentError("nothing was changed; " + "; ".join(parts))
            stamp = now_iso()
            moves = []
            for update in updates:
                task = by_id[str(update["taskId"])]
                moves.append(f"{task['id']} {task.get('status')}->{update['status']}")
                task["status"] = update["status"]
                if update.get("note"):
                    task.setdefault("notes", []).append(str(update["note"]))
                task["updatedAt"] = stamp
            self._save(ws, record)
        return change_id, moves

    def add_constraint(
        self, ws: Workspace, change_id: str | None, text: str
    ) -> tuple[str, list[str]]:
        if not text.strip():
            raise InvalidArgumentError("text must not be empty")
        with state_lock(ws):
            change_id = self.resolve(ws, change_id)
            record = self.load(ws, change_id)
            record["constraints"].append(text.strip())
            self._save(ws, record)
        return change_id, list(record["constraints"])

    def listing(self, ws: Workspace) -> Listing:
        records, problems = [], []
        for change_id in self.ids(ws):
            try:
                records.append(self.load(ws, change_id))
            except WorkspaceError as exc:
                problems.append(str(exc))
        records.sort(key=lambda r: str(r.get("createdAt", "")), reverse=True)
        return Listing(records, problems)


def suggestion(record: dict[str, Any], docs: dict[str, int | None]) -> str:
    """The derived next action, in the backbone document's priority order."""
    tasks = record.get("tasks") or []

    def first(status: str) -> str | None:
        return next((str(t.get("id")) for t in tasks if t.get("status") == status), None)

    if not tasks and not docs.get("proposal"):
        return "write the proposal with change_doc"
    if tasks and all(t.get("status") == "done" for t in tasks):
        return "run the tests and save a summary with remember"
    for status, verb in (("blocked", "unblock"), ("in_progress", "continue"), ("pending", "start")):
        task_id = first(status)
        if task_id:
            return f"{verb} {task_id}"
    return "break the work into tasks with task_add"
