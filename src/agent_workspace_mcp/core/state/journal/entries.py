"""The workspace-local memory: the automatic journal and deliberate notes.

On-disk format of the backbone document: `.workspace-mcp/journal.jsonl` lines
`{ts, tool, paths?, detail?, result?, change?}` and `.workspace-mcp/notes.jsonl` lines
`{ts, text, tags}`, each rotated to `.1.jsonl` past the size limit. Journaling is best
effort: a failure is logged and never changes the tool's own answer.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from ...echo import echo
from ...errors import InvalidArgumentError, WorkspaceError
from ...limits import (
    JOURNAL_FIELD_CHARS,
    RECALL_MAX,
    REMEMBER_MAX_TAGS,
    REMEMBER_TAG_CHARS,
    REMEMBER_TEXT_CHARS,
    WORK_LOG_MAX,
)
from ...workspaces import Workspace
from ..records import read_json
from ..streams import JsonlStream

log = logging.getLogger("agent_workspace_mcp")


def now_iso() -> str:
    """`2026-09-18T07:50:12.000Z`: UTC, milliseconds, as the backbone document writes it."""
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def _clip(value: str | None) -> str | None:
    if value is None:
        return None
    return value if len(value) <= JOURNAL_FIELD_CHARS else value[: JOURNAL_FIELD_CHARS - 1] + "…"


def parse_since(value: str) -> datetime:
    text = value.strip()
    try:
        parsed = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except ValueError:
        raise InvalidArgumentError(
            f"since must be an ISO 8601 time like 2026-09-18T07:50:12Z, got '{echo(value)}'"
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _ts(record: dict[str, Any]) -> datetime | None:
    try:
        return parse_since(str(record.get("ts", "")))
    except InvalidArgumentError:
        return None


class Memory:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes

    def journal(self, ws: Workspace) -> JsonlStream:
        return JsonlStream(ws, "journal", self.max_bytes)

    def notes(self, ws: Workspace) -> JsonlStream:
        return JsonlStream(ws, "notes", self.max_bytes)

    def active_change(self, ws: Workspace) -> str | None:
        try:
            state = read_json(ws, "state.json")
        except WorkspaceError:
            return None
        value = state.get("activeChange") if isinstance(state, dict) else None
        return value if isinstance(value, str) else None

    def record(
        self,
        ws: Workspace,
        tool: str,
        *,
        paths: Iterable[str] = (),
        detail: str | None = None,
        result: str | None = None,
        change: str | None = None,
        entry_id: str | None = None,
        ts: str | None = None,
        locked: bool = False,
        by: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """Append one journal entry; never raises (best effort, logged).

        `change=""` means the caller already knows there is no active change."""
        try:
            entry: dict[str, Any] = {"ts": ts or now_iso()}
            if entry_id:
                entry["id"] = entry_id
            entry["tool"] = tool
            paths = list(paths)
            if paths:
                entry["paths"] = paths
            if detail:
                entry["detail"] = _clip(detail)
            if result:
                entry["result"] = _clip(result)
            tag = change if change is not None else self.active_change(ws)
            if tag:
                entry["change"] = tag
            if by:
                entry["by"] = by  # the authenticated subject (HTTP)
            for key, value in (extra or {}).items():  # session, client, ms (the console)
                if value is not None:
                    entry[key] = _clip(value) if isinstance(value, str) else value
            self.journal(ws).append(entry, locked=locked)
        except Exception as exc:  # the journal must never break a tool
            log.warning("journal write failed for %s in %s: %s", tool, ws.name, exc)

    def work_log(
        self,
        ws: Workspace,
        *,
        limit: int,
        since: str | None = None,
        path: str | None = None,
        change: str | None = None,
        by: str | None = None,
        session: str | None = None,
    ) -> list[dict[str, Any]]:
        """Newest first; `by`: only that subject's entries (None: everyone's)."""
        after = parse_since(since) if since else None

        def keep(record: dict[str, Any]) -> bool:
            if by is not None and record.get("by") != by:
                return False
            if session and record.get("session") != session:
                return False
            if after is not None:
                stamp = _ts(record)
                if stamp is None or stamp < after:
                    return False
            if path and not any(path in str(p) for p in record.get("paths") or []):
                return False
            return not (change and record.get("change") != change)

        # A filter reads the whole journal: what it asks for may lie past the last window.
        whole = bool(session or change or path)
        return self.journal(ws).newest(min(limit, WORK_LOG_MAX), keep, whole=whole)

    def call_ids(
        self,
        ws: Workspace,
        *,
        session: str | None = None,
        change: str | None = None,
        by: str | None = None,
    ) -> set[str]:
        """The ids of every journaled call of one session or change (`by`: of that subject
        only), however old: what undo and review act on must be complete, never the most
        recent part (the journal itself is bounded: two files of at most max_bytes)."""

        def keep(record: dict[str, Any]) -> bool:
            if by is not None and record.get("by") != by:
                return False
            if session is not None and record.get("session") != session:
                return False
            return change is None or record.get("change") == change

        found = self.journal(ws).newest(sys.maxsize, keep, whole=True)
        return {str(record.get("id")) for record in found}

    def remember(self, ws: Workspace, text: str, tags: list[str]) -> int:
        text = text.strip()
        if not text:
            raise InvalidArgumentError("text must not be empty")
        if len(text) > REMEMBER_TEXT_CHARS:
            raise InvalidArgumentError(
                f"a note is at most {REMEMBER_TEXT_CHARS} characters; "
                "put longer text in a change_doc"
            )
        clean = [t.strip().lstrip("#") for t in tags if t.strip().lstrip("#")]
        if len(clean) > REMEMBER_MAX_TAGS:
            raise InvalidArgumentError(f"at most {REMEMBER_MAX_TAGS} tags")
        if any(_LINE_BREAKING.search(t) or "\t" in t for t in clean):
            raise InvalidArgumentError("tags must not contain line breaks or control characters")
        long = [t for t in clean if len(t) > REMEMBER_TAG_CHARS]
        if long:
            raise InvalidArgumentError(
                f"tags are at most {REMEMBER_TAG_CHARS} characters: {long[0][:60]}"
            )
        from ..locks import state_lock

        stream = self.notes(ws)
        with state_lock(ws):
            stream.append({"ts": now_iso(), "text": text, "tags": clean}, locked=True)
            return stream.count()

    def recall(
        self, ws: Workspace, *, query: str | None, tag: str | None, limit: int
    ) -> list[dict[str, Any]]:
        needle = (query or "").lower()
        wanted = (tag or "").strip().lstrip("#").lower()

        def keep(record: dict[str, Any]) -> bool:
            if needle and needle not in str(record.get("text", "")).lower():
                return False
            tags = [str(t).lower() for t in record.get("tags") or []]
            return not (wanted and wanted not in tags)

        return self.notes(ws).newest(min(limit, RECALL_MAX), keep)


# Characters that end a line somewhere (terminals, editors, models' tokenizers) or
# control the display: rendered as visible escapes so a record is always one line.
_LINE_BREAKING = re.compile("[\x00-\x08\x0a-\x1f\x7f\x85\u2028\u2029]")
_ESCAPES = {"\n": "\\n", "\r": "\\r"}


def one_line(value: object) -> str:
    """A stored field as display text that can never span or fake a second record."""
    return _LINE_BREAKING.sub(
        lambda m: _ESCAPES.get(m.group(), f"\\u{ord(m.group()):04x}"), str(value)
    )


def render_entry(record: dict[str, Any], note: str | None = None) -> str:
    """`2026-09-18T07:50:12.000Z  edit_file  src/x.ts  — 2 replacements  [ok]  by session
    s-1 (claude-code 2.1)  (id k3f9a2q)`

    The seed's line, who made the call, then the entry's id (what undo and restore_file
    take) and `note`."""
    parts = [one_line(record.get("ts", "?")), one_line(record.get("tool", "?"))]
    paths = record.get("paths") or []
    if paths:
        parts.append(
            ", ".join(one_line(p) for p in paths[:5])
            + (f" (+{len(paths) - 5})" if len(paths) > 5 else "")
        )
    line = "  ".join(parts)
    if record.get("detail"):
        line += f"  — {one_line(record['detail'])}"
    if record.get("result"):
        line += f"  [{one_line(record['result'])}]"
    if record.get("change"):
        line += f"  #{one_line(record['change'])}"
    # Who made the call (issue 44): a person reading the log in the chat sees it too.
    who = [one_line(record["by"])] if record.get("by") else []
    if record.get("session"):
        named = [record[k] for k in ("client", "client_version") if record.get(k)]
        client = " ".join(one_line(k) for k in named)
        who.append(f"session {one_line(record['session'])}" + (f" ({client})" if client else ""))
    if who:
        line += f"  by {', '.join(who)}"
    tail = [f"id {one_line(record['id'])}"] if isinstance(record.get("id"), str) else []
    if note:
        tail.append(note)
    if tail:
        line += f"  ({', '.join(tail)})"
    return line


def render_note(record: dict[str, Any]) -> str:
    """`2026-09-18  [#auth #todo]  Refactored auth middleware...`, always one line
    (a line break inside the text shows as a literal backslash-n)."""
    day = one_line(str(record.get("ts", ""))[:10] or "????-??-??")
    tags = [one_line(t) for t in record.get("tags") or []]
    label = f"  [{' '.join('#' + t for t in tags)}]" if tags else ""
    return f"{day}{label}  {one_line(record.get('text', ''))}"
