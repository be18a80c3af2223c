"""Approvals (issue 32): a person decides chosen calls, and what they approve is what runs.

A request records the call's tool and a digest of its exact arguments, what the person
is shown (a diff, argv and directory, the files a delete removes), who asked and when
it expires. A decision (approve or deny) is made once, by the operator in the console
or through the client, and says which. An approval is used once, by the subject that
asked, for arguments with the same digest; other arguments are a different call.

Records live in one JSON file in the workspace's state directory, changed only under
the state lock (threads and processes), so every `--workers` process and the console
see one truth and an approval cannot be used twice.

That file can be written by the agent (a repository ships one, a command of a subpath
session plants one), so a record is proven, not read (issue 43): the server seals each
request it makes, and the decider each decision, with the user's key
(core.proofkey, outside every root and hidden from commands). A record whose seal does
not verify is left out of every view, decides nothing, and is named once in the log.
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import time
from collections.abc import Callable
from typing import Any

from ..errors import InvalidArgumentError, NotFoundError, WorkspaceError
from ..limits import CONFIRM_KEPT, CONFIRM_USE_SECONDS
from ..proofkey import decision_key, seal, verify
from ..workspaces import Workspace
from .locks import state_lock
from .records import read_json, write_json

FILE = "approvals.json"
PENDING, APPROVED, DENIED, EXPIRED, USED = "pending", "approved", "denied", "expired", "used"
log = logging.getLogger("agent_workspace_mcp")
_named: set[tuple[str, str]] = set()  # (state directory, id) of unproven records, logged once
REQUEST_FIELDS = (
    "id",
    "tool",
    "digest",
    "summary",
    "subject",
    "session",
    "client",
    "created",
    "expires",
    "staged",
    "paths",
    "rule",
    "arguments",
)
DECISION_FIELDS = (
    "id",
    "digest",
    "subject",
    "verdict",
    "decided_by",
    "via",
    "decided",
    "use_by",
    "request_proof",
    "edit",
    "note",
)


def digest(tool: str, arguments: dict[str, Any], paths: list[str] | None = None) -> str:
    """The identity of one call: its tool and exact arguments, canonically encoded, and
    (when the decision rests on them) the real paths they resolved to."""
    call: dict[str, Any] = {"tool": tool, "arguments": arguments}
    if paths is not None:
        call["paths"] = paths
    canonical = json.dumps(
        call, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


class ApprovalRefused(WorkspaceError):
    pass


class Approvals:
    def __init__(
        self, timeout: float, clock: Callable[[], float] = time.time, key: bytes | None = None
    ) -> None:
        self.timeout = timeout
        self.clock = clock
        self._key = key

    @property
    def key(self) -> bytes:
        if self._key is None:
            self._key = decision_key()
        return self._key

    def _proven(self, record: dict[str, Any]) -> bool:
        """Whether the server made this request and, once decided, a decider decided it."""
        fields = [record.get(name) for name in REQUEST_FIELDS]
        if not verify(self.key, record.get("request_proof"), *fields):
            return False
        verdict = record.get("verdict")
        status = record.get("status")
        if verdict is None:
            return status in (PENDING, EXPIRED)
        if verdict not in (APPROVED, DENIED) or status not in (verdict, USED, EXPIRED):
            return False
        if status == USED and verdict != APPROVED:
            return False
        fields = [record.get(name) for name in DECISION_FIELDS]
        return verify(self.key, record.get("decision_proof"), *fields)

    # --- storage ---------------------------------------------------------------------

    def _load(self, ws: Workspace) -> dict[str, dict[str, Any]]:
        ws = home(ws)
        try:
            value = read_json(ws, FILE)
        except WorkspaceError:
            value = None  # damaged: treated as empty; every pending call is asked again
        records = value.get("approvals") if isinstance(value, dict) else None
        if not isinstance(records, dict):
            return {}
        kept = {}
        for key, record in records.items():
            if isinstance(record, dict) and record.get("id") == key and self._proven(record):
                kept[key] = record
            elif (ws.state_dir, str(key)) not in _named:
                _named.add((ws.state_dir, str(key)))
                log.warning(
                    "approval record %.40r in %s is not sealed by this server or a "
                    "person's decision (planted or damaged); it decides nothing",
                    key,
                    ws.state_dir,
                )
        return kept

    def _save(self, ws: Workspace, records: dict[str, dict[str, Any]]) -> None:
        if len(records) > CONFIRM_KEPT:  # oldest decided ones go first; pending stay
            done = sorted(
                (r for r in records.values() if r.get("status") != PENDING),
                key=lambda r: _number(r.get("created")),
            )
            for record in done[: len(records) - CONFIRM_KEPT]:
                records.pop(str(record.get("id")), None)
        write_json(home(ws), {"approvals": records}, FILE)

    def _expire(self, records: dict[str, dict[str, Any]]) -> None:
        now = self.clock()
        for record in records.values():
            status = record.get("status")
            deadline = {PENDING: "expires", APPROVED: "use_by"}.get(str(status))
            if deadline and now > _number(record.get(deadline)):
                record["status"] = EXPIRED

    def _read(self, ws: Workspace) -> dict[str, dict[str, Any]]:
        """The records as of now, without writing (state files are replaced atomically)."""
        records = self._load(ws)
        self._expire(records)
        return records

    def _change(self, ws: Workspace, fn: Callable[[dict[str, dict[str, Any]]], Any]) -> Any:
        with state_lock(home(ws)):
            records = self._load(ws)
            self._expire(records)
            result = fn(records)
            self._save(ws, records)
            return result

    # --- the agent's side --------------------------------------------------------------

    def request(
        self,
        ws: Workspace,
        *,
        tool: str,
        call_digest: str,
        summary: str,
        subject: str | None,
        session: str | None,
        client: str | None,
        staged: str | None = None,
        paths: list[str] | None = None,
        rule: str | None = None,
        arguments: str | None = None,
    ) -> dict[str, Any]:
        """A pending request for this call: the one already waiting for the same call by
        the same subject, else a new one. `staged`: the digest of a staged command's
        change set in the checkpoint store (core.exec.staging), sealed with the request:
        what lands is what the person was shown."""

        def make(records: dict[str, dict[str, Any]]) -> dict[str, Any]:
            now = self.clock()
            if (asked := self._asked(records, subject, call_digest, now)) is not None:
                return asked
            record: dict[str, Any] = {
                "id": "ap-" + secrets.token_hex(5),
                "tool": tool,
                "digest": call_digest,
                "summary": summary,
                "subject": subject,
                "session": session,
                "client": client,
                "created": now,
                "expires": now + self.timeout,
                "staged": staged,
                "paths": paths,  # what it resolved to, for a grant (core.state.grants)
                "rule": rule,  # what asked
                "arguments": arguments,  # a write's, for the person to edit (core.edits)
                "status": PENDING,
            }
            record["request_proof"] = seal(self.key, *(record[n] for n in REQUEST_FIELDS))
            records[record["id"]] = record
            return dict(record)

        made: dict[str, Any] = self._change(ws, make)
        return made

    def _asked(
        self, records: dict[str, dict[str, Any]], subject: str | None, call_digest: str, now: float
    ) -> dict[str, Any] | None:
        for record in records.values():
            if record.get("digest") != call_digest or record.get("subject") != subject:
                continue
            if record.get("status") in (PENDING, APPROVED):  # approved: decided meanwhile
                return dict(record)
            # A denial stands for as long as a request would have waited.
            recent = now - _number(record.get("decided")) < self.timeout
            if record.get("status") == DENIED and recent:
                return dict(record)
        return None

    def asked(
        self, ws: Workspace, *, subject: str | None, call_digest: str
    ) -> dict[str, Any] | None:
        """The request already made for this call (waiting, approved and not yet used, or
        recently denied), if any."""
        return self._asked(self._read(ws), subject, call_digest, self.clock())

    def take(
        self, ws: Workspace, *, subject: str | None, call_digest: str
    ) -> dict[str, Any] | None:
        """Use an approval of exactly this call by this subject, once; None if none."""

        def use(records: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
            for record in sorted(records.values(), key=lambda r: _number(r.get("created"))):
                if (
                    record.get("status") == APPROVED
                    and record.get("digest") == call_digest
                    and record.get("subject") == subject
                ):
                    record["status"], record["used"] = USED, self.clock()
                    return dict(record)
            return None

        used: dict[str, Any] | None = self._change(ws, use)
        return used

    def get(
        self, ws: Workspace, approval_id: str, *, subject: str | None = None, operator: bool = False
    ) -> dict[str, Any]:
        """One record; an agent sees only its own subject's (the operator sees all)."""
        record = self._read(ws).get(approval_id)
        if record is None or (not operator and record.get("subject") != subject):
            raise NotFoundError(
                f"no approval {approval_id[:40]} of yours in this workspace (ids look like "
                "ap-1a2b3c4d5e; they are named in the answer of the call that asked)"
            )
        return dict(record)

    # --- the person's side -------------------------------------------------------------

    def pending(self, ws: Workspace) -> list[dict[str, Any]]:
        """Every kept record, newest first (the console shows the pending ones on top)."""
        return sorted(self._read(ws).values(), key=lambda r: -_number(r.get("created")))

    def decide(
        self,
        ws: Workspace,
        approval_id: str,
        *,
        approve: bool,
        by: str,
        via: str,
        call_digest: str | None = None,
        edit: dict[str, Any] | None = None,
        note: str | None = None,
    ) -> dict[str, Any]:
        """Approve or deny a pending request, once. `call_digest`: the call the decider
        saw (a client's answer), which must be the recorded one. `edit`: the arguments the
        person changed before approving (the call runs with them), sealed with the
        decision; `note`: what they tell the agent."""
        if not approval_id.startswith("ap-"):
            raise InvalidArgumentError(f"'{approval_id[:40]}' is not an approval id")

        def settle(records: dict[str, dict[str, Any]]) -> dict[str, Any]:
            record = records.get(approval_id)
            if record is None:
                raise NotFoundError(f"no approval {approval_id[:40]} in this workspace")
            if call_digest is not None and record.get("digest") != call_digest:
                raise ApprovalRefused(
                    f"approval {approval_id} is for other arguments than this call's"
                )
            if record.get("status") != PENDING:
                raise ApprovalRefused(
                    f"approval {approval_id} is already {record.get('status')}; nothing decided"
                )
            now = self.clock()
            verdict = APPROVED if approve else DENIED
            record.update(
                status=verdict,
                verdict=verdict,
                decided_by=by,
                via=via,
                decided=now,
                use_by=now + CONFIRM_USE_SECONDS,
            )
            if edit is not None and approve:
                record.update(
                    edit=json.dumps(edit, sort_keys=True, ensure_ascii=False), note=note or ""
                )
            record["decision_proof"] = seal(self.key, *(record.get(n) for n in DECISION_FIELDS))
            return dict(record)

        settled: dict[str, Any] = self._change(ws, settle)
        return settled


def home(ws: Workspace) -> Workspace:
    """Where a workspace's approvals live: a subpath session's in its primary's state
    directory, which the console reads (issue 43: they only ever timed out) and no
    command of the session can reach."""
    return ws.anchor if ws.anchor is not None else ws


def _number(value: Any) -> float:
    """A record's time as a number; anything else (a damaged field) counts as 0."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0
