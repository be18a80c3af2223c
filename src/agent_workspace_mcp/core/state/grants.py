"""Grants (issue 48, item 2): the person answers "approve this, and the same kind" once,
for this session, for some minutes, or for paths under a folder.

A grant is made only from an approval the person decided, and never reaches past what
they saw: the same subject, the same tool, the same rule that asked, and either exactly
the call's paths or fewer (session and minutes grants), or paths under the folder the
person chose, which holds every path they saw (path grants). A command's grant covers
the same command only (its arguments are its "paths"). Every grant expires (at most
GRANT_MAX_SECONDS), is listed and revocable in the console, and is journaled with who
made it.

Grants live in `grants.json` beside the approvals, changed only under the state lock,
each sealed with the user's key like a decision (core.proofkey): a record the agent
could write decides nothing. Revoking removes the record.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable
from typing import Any

from ..errors import InvalidArgumentError, NotFoundError, WorkspaceError
from ..limits import GRANT_MAX_SECONDS
from ..proofkey import decision_key, seal, verify
from ..workspaces import Workspace
from .approvals import APPROVED, USED, home
from .locks import state_lock
from .records import read_json, write_json

FILE = "grants.json"
KINDS = ("session", "minutes", "paths")
FIELDS = (
    "id",
    "subject",
    "session",
    "tool",
    "rule",
    "kind",
    "paths",
    "under",
    "call",
    "granted_by",
    "created",
    "expires",
    "from",
)
log = logging.getLogger("agent_workspace_mcp")


def rule_key(why: str) -> str:
    """The kind of reason a call asked, without its particulars: `--confirm write`,
    `--confirm risky (ci`, `--confirm-path`; a grant covers calls asked for the same one."""
    if why.startswith("--confirm-path"):
        return "--confirm-path"
    return why.split(":", 1)[0].split(";", 1)[0]


def grantable(approval: dict[str, Any]) -> bool:
    """Whether a grant may come from this request: not from a staged command asked about
    by its argv (`--confirm exec`), whose later runs' changes no one would see; a staged
    command asked about by a path rule is granted by what it changed."""
    rule = rule_key(str(approval.get("rule") or ""))
    return not approval.get("staged") or rule.startswith(("--confirm risky", "--confirm-path"))


def _under(path: str, folder: str) -> bool:
    """Whether `path` is inside `folder`: never the folder itself, whose delete or move
    takes everything in it, seen or not (the workspace root is not a path a tool takes)."""
    folder = folder.strip("/")
    return folder in ("", ".") or path.startswith(folder + "/")


class Grants:
    def __init__(self, clock: Callable[[], float] = time.time, key: bytes | None = None) -> None:
        self.clock = clock
        self._key = key

    @property
    def key(self) -> bytes:
        if self._key is None:
            self._key = decision_key()
        return self._key

    def _load(self, ws: Workspace) -> dict[str, dict[str, Any]]:
        try:
            value = read_json(home(ws), FILE)
        except WorkspaceError:
            value = None
        records = value.get("grants") if isinstance(value, dict) else None
        if not isinstance(records, dict):
            return {}
        now = self.clock()
        return {
            key: record
            for key, record in records.items()
            if isinstance(record, dict)
            and record.get("id") == key
            and verify(self.key, record.get("proof"), *(record.get(f) for f in FIELDS))
            and isinstance(record.get("expires"), int | float)
            and now < float(record["expires"])
        }

    def _change(self, ws: Workspace, fn: Callable[[dict[str, dict[str, Any]]], Any]) -> Any:
        with state_lock(home(ws)):
            records = self._load(ws)
            result = fn(records)
            write_json(home(ws), {"grants": records}, FILE)
            return result

    def make(
        self,
        ws: Workspace,
        approval: dict[str, Any],
        *,
        kind: str,
        minutes: float,
        under: str | None,
        by: str,
    ) -> dict[str, Any]:
        """A grant from an approval the person decided (approved, used or not)."""
        if approval.get("status") not in (APPROVED, USED) or approval.get("decided_by") != by:
            raise InvalidArgumentError(
                f"approval {approval.get('id')} was not approved by {by}; only what a person "
                "approved can be granted again"
            )
        self.check(approval, kind=kind, minutes=minutes, under=under)
        seconds = minutes * 60
        paths = [str(p) for p in approval.get("paths") or []]
        now = self.clock()
        record: dict[str, Any] = {
            "id": "gr-" + secrets.token_hex(5),
            "subject": approval.get("subject"),
            "session": approval.get("session") if kind == "session" else None,
            "tool": approval.get("tool"),
            "rule": rule_key(str(approval.get("rule") or "")),
            "kind": kind,
            "paths": paths,
            "under": under.strip("/") if kind == "paths" and under is not None else None,
            "call": None if paths else approval.get("digest"),
            "granted_by": by,
            "created": now,
            "expires": now + seconds,
            "from": approval.get("id"),
        }
        record["proof"] = seal(self.key, *(record[f] for f in FIELDS))

        def add(records: dict[str, dict[str, Any]]) -> None:
            records[record["id"]] = record

        self._change(ws, add)
        return dict(record)

    def check(
        self, approval: dict[str, Any], *, kind: str, minutes: float, under: str | None
    ) -> None:
        """Refuse, in one sentence, a grant that would reach past what the person saw (so
        the console refuses it before the approval is decided)."""
        if kind not in KINDS:
            raise InvalidArgumentError(
                f"a grant is for a session, for minutes or for paths, not {kind!r}"
            )
        seconds = minutes * 60
        if not 0 < seconds <= GRANT_MAX_SECONDS:
            raise InvalidArgumentError(
                f"a grant lasts between 1 minute and {GRANT_MAX_SECONDS // 3600} hours"
            )
        if not grantable(approval):
            raise InvalidArgumentError(
                "a command asked about by its argv is approved once: a grant would land the "
                "changes of later runs no one saw"
            )
        paths = approval.get("paths") or []
        if kind == "paths":
            if not paths or under is None:
                raise InvalidArgumentError("a path grant needs the folder, and a call with paths")
            if not all(_under(p, under) for p in paths):
                raise InvalidArgumentError(
                    f"{under!r} does not hold every path of the approved call; a grant never "
                    "reaches past what was shown"
                )

    def covering(
        self,
        ws: Workspace,
        *,
        subject: str | None,
        session: str | None,
        tool: str,
        why: str,
        paths: list[str] | None,
        call_digest: str,
    ) -> dict[str, Any] | None:
        """A live grant that covers this call, or None."""
        key = rule_key(why)
        for record in self._load(ws).values():
            if record.get("subject") != subject or record.get("tool") != tool:
                continue
            if record.get("rule") != key:
                continue
            if record.get("kind") == "session" and record.get("session") != session:
                continue
            if record.get("kind") == "paths":
                folder = str(record.get("under"))
                if paths and all(_under(p, folder) for p in paths):
                    return dict(record)
                continue
            granted = record.get("paths") or []
            if granted:
                if paths and set(paths) <= set(granted):
                    return dict(record)
            elif record.get("call") == call_digest:
                return dict(record)
        return None

    def live(self, ws: Workspace) -> list[dict[str, Any]]:
        return sorted(self._load(ws).values(), key=lambda r: -float(r.get("created", 0)))

    def revoke(self, ws: Workspace, grant_id: str) -> dict[str, Any]:
        def drop(records: dict[str, dict[str, Any]]) -> dict[str, Any]:
            record = records.pop(grant_id, None)
            if record is None:
                raise NotFoundError(f"no live grant {grant_id[:40]} in this workspace")
            return record

        gone: dict[str, Any] = self._change(ws, drop)
        return gone
