"""The recorded calls of a workspace, and which path states an undo restores.

An index line (store.INDEX) is one journaled call:
`{id, ts, tool, change?, cmd?, p: {path: [before, after]} | m: digest, b, trunc?,
reverts?, pruned?}`: `p` inline when small, else the manifest is an object named `m`;
`b` the bytes it added to the store; `cmd` when it ran a command (its side effects are
not recorded); `reverts` the ids an undo reverted; `trunc` when the call touched more
paths than one checkpoint records.

An undo is itself a recorded call, so it can be undone. A call is *undone* when a
later undo that is not itself undone reverted it; `undo(steps)` walks back through
the calls that are neither undone nor undos (like an editor's undo), `to` returns to
the state right after one entry (undos and undone calls included), `change` reverts
the calls of one change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidArgumentError, WorkspaceError
from .states import NONE, State, restorable, same, state_problem, valid_rel
from .store import Store


@dataclass
class Entry:
    id: str
    tool: str
    ts: str
    change: str | None
    cmd: bool
    reverts: list[str] | None  # an undo: the ids it reverted
    pruned: bool
    truncated: bool
    paths: dict[str, tuple[State, State]] | None  # None: its checkpoint is gone
    undone: bool = False
    damaged: str | None = None  # why its line cannot be used (planted or damaged)
    by: str | None = None  # the authenticated subject that made the call (HTTP)
    who: str | None = None  # its session and client, as refusals name them

    @property
    def named(self) -> str:
        """The call and, when recorded, who made it: `#id tool (session S, client)`."""
        return f"{self.label} ({self.who})" if self.who else self.label

    @property
    def is_undo(self) -> bool:
        return self.reverts is not None

    @property
    def effective(self) -> bool:
        """It changed the tree (or may have: a command)."""
        if self.cmd or self.paths is None:
            return True
        return any(not same(after, before) for before, after in self.paths.values())

    @property
    def label(self) -> str:
        return f"#{self.id} {self.tool}"


@dataclass
class Plan:
    """What an undo does: each path to its target state, checked against expectations."""

    entries: list[Entry]
    targets: dict[str, State] = field(default_factory=dict)
    expected: dict[str, State] = field(default_factory=dict)
    blocked: list[str] = field(default_factory=list)  # one sentence each
    lost: list[str] = field(default_factory=list)  # paths that cannot be restored


def line_problem(line: dict[str, Any], manifest: dict[str, Any] | None) -> str | None:
    """What makes an index line unusable, naming the path where it is one, or None."""
    for key in ("tool", "ts", "change", "by"):
        if key in line and not isinstance(line[key], str):
            return f"a bad {key}"
    reverts = line.get("reverts")
    if reverts is not None and not (
        isinstance(reverts, list) and all(isinstance(r, str) for r in reverts)
    ):
        return "a bad list of reverted calls"
    for rel, pair in (manifest or {}).items():
        if not valid_rel(rel):
            return f"an invalid path {str(rel)[:60]!r}"
        if not (isinstance(pair, list) and len(pair) == 2):
            return f"a bad entry for {rel[:60]}"
        for state in pair:
            problem = state_problem(state)
            if problem:
                return f"{problem} for {rel[:60]}"
    return None


class History:
    """`subject`: only that subject's calls can be chosen or named (None: everyone's);
    every call still counts when checking what changed a file since."""

    def __init__(self, store: Store, subject: str | None = None) -> None:
        self.store = store
        self.subject = subject
        self.entries = [self._entry(line) for line in store.lines()]
        self._mark_undone()

    def visible(self, entry: Entry) -> bool:
        return self.subject is None or entry.by == self.subject

    def _entry(self, line: dict[str, Any]) -> Entry:
        manifest = self.store.manifest(line)
        # A planted or damaged line is kept (its id stays findable) but restores nothing:
        # every state is checked here, before an undo changes anything (issue 28).
        problem = line_problem(line, manifest)
        paths = None
        if manifest is not None and problem is None:
            paths = {rel: (pair[0], pair[1]) for rel, pair in manifest.items()}
        reverts = line.get("reverts")
        return Entry(
            id=line["id"],
            tool=str(line.get("tool", "?")),
            ts=str(line.get("ts", "")),
            change=line.get("change") if isinstance(line.get("change"), str) else None,
            cmd=bool(line.get("cmd")),
            reverts=[r for r in reverts if isinstance(r, str)]
            if isinstance(reverts, list)
            else None,
            pruned=bool(line.get("pruned")),
            truncated=bool(line.get("trunc")),
            paths=paths,
            damaged=problem,
            by=line.get("by") if isinstance(line.get("by"), str) else None,
            who=line.get("who") if isinstance(line.get("who"), str) else None,
        )

    def _mark_undone(self) -> None:
        dead: set[str] = set()
        for entry in reversed(self.entries):
            if entry.id in dead:
                entry.undone = True
                continue
            dead.update(entry.reverts or ())

    def find(self, entry_id: str) -> int:
        wanted = entry_id.strip().lstrip("#")
        for index in range(len(self.entries) - 1, -1, -1):
            if self.entries[index].id == wanted and self.visible(self.entries[index]):
                return index
        raise InvalidArgumentError(
            f"no journal entry #{wanted[:40]} in this workspace's checkpoints; "
            "work_log shows each entry's id"
        )

    # --- selecting ---------------------------------------------------------------

    def last_steps(self, steps: int) -> list[Entry]:
        chosen: list[Entry] = []
        for entry in reversed(self.entries):
            if len(chosen) == steps:
                break
            if entry.undone or entry.is_undo or not entry.effective or not self.visible(entry):
                continue
            chosen.append(entry)
        if not chosen:
            raise WorkspaceError(self._nothing_left())
        return chosen[::-1]

    def _nothing_left(self) -> str:
        """Why `steps` found nothing, and how to go on (issue 44: after an undo it said
        "no recorded change" although the undo itself is one)."""
        seen = [e for e in self.entries if e.effective and self.visible(e)]
        if not seen:
            return "nothing to undo: no recorded change in this workspace"
        last = seen[-1]
        if last.is_undo:
            at = self.entries.index(last)
            back = f"undo(to={self.entries[at - 1].id})" if at else "undo(to=<the entry before it>)"
            return (
                f"nothing to undo: the last recorded call, #{last.id}, was an undo and "
                f"every call before it is undone; to take that undo back: {back}"
            )
        return "nothing to undo: every recorded call is undone (work_log lists them)"

    def of_ids(self, ids: set[str], what: str) -> list[Entry]:
        """The calls with these ids (one session's, say), oldest first."""
        chosen = [
            e
            for e in self.entries
            if e.id in ids and not e.undone and not e.is_undo and e.effective and self.visible(e)
        ]
        if not chosen:
            raise WorkspaceError(f"nothing to undo: {what} made no recorded change")
        return chosen

    def only(self, entry_id: str) -> list[Entry]:
        """Exactly one call (the console's "undo this entry")."""
        entry = self.entries[self.find(entry_id)]
        if entry.undone or not entry.effective:
            raise WorkspaceError(f"nothing to undo: #{entry.id} changed nothing still recorded")
        return [entry]

    def after(self, entry_id: str) -> list[Entry]:
        chosen = [
            e for e in self.entries[self.find(entry_id) + 1 :] if e.effective and self.visible(e)
        ]
        if not chosen:
            raise WorkspaceError(f"nothing to undo: no change was recorded after #{entry_id}")
        return chosen

    def of_change(self, change: str) -> list[Entry]:
        chosen = [
            e
            for e in self.entries
            if e.change == change
            and not e.undone
            and not e.is_undo
            and e.effective
            and self.visible(e)
        ]
        if not chosen:
            raise WorkspaceError(f'nothing to undo: no recorded change under change "{change}"')
        return chosen

    # --- planning --------------------------------------------------------------

    def plan(self, chosen: list[Entry], *, under: str | None = None) -> Plan:
        """Each path the chosen calls touched back to its state before the first of them.

        `under`: only that path and what lies below it (restore_file).
        """
        plan = Plan(chosen)
        ids = {e.id for e in chosen}
        position = {id(e): i for i, e in enumerate(self.entries)}  # not list.index: O(n²)
        first_seen: dict[str, int] = {}  # path -> index of the first chosen entry
        for entry in chosen:
            if entry.paths is None:
                why = (
                    f"its checkpoint line is damaged: {entry.damaged}"
                    if entry.damaged
                    else "its checkpoint was pruned"
                )
                plan.blocked.append(
                    f"{entry.label} is no longer undoable ({why}); pass force=true to undo "
                    "the rest without it"
                )
                continue
            if entry.truncated:
                plan.blocked.append(f"{entry.label} touched more paths than a checkpoint records")
            for rel, (before, _after) in entry.paths.items():
                if under is not None and rel != under and not rel.startswith(under + "/"):
                    continue
                if rel not in plan.targets:
                    plan.targets[rel] = before
                    first_seen[rel] = position[id(entry)]
                    if not restorable(before):
                        plan.lost.append(rel)
        # What the recorded calls left at each path: the latest entry touching it.
        for index, entry in enumerate(self.entries):
            for rel, (before, after) in (entry.paths or {}).items():
                if rel in plan.targets:
                    plan.expected[rel] = after
                    if (
                        under is None
                        and entry.id not in ids
                        and index > first_seen[rel]
                        and not entry.undone
                        and not entry.is_undo
                        and not same(after, before)
                    ):
                        plan.blocked.append(
                            f"{rel} was also changed by {entry.named}, which is not in "
                            "this range; undo that first, pass to=, or force=true"
                        )
        return plan


def expected_of(plan: Plan, rel: str) -> State:
    return plan.expected.get(rel, NONE)
