"""One call's checkpoint: what it is about to replace, then what it left.

The journal middleware opens a Recorder around every journaled call; tool bodies
report each path before they change it (through `core.state.journal.activity`): a located path, a
file whose bytes they already hold (the edit tools), or states an undo captured. After
the call, `finish()` records each path's state again and appends the call's index line.

Best effort, like the journal: a failure to record is logged and marks the call as not
restorable; it never changes the tool's own answer.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import stat
from typing import Any

from ..containment import Located
from ..limits import CHECKPOINT_FILE_MAX_BYTES, CHECKPOINT_INLINE_MANIFEST_BYTES
from ..state.records import dumps
from ..workspaces import Workspace
from . import treescan
from .states import NONE, Budget, State, capture, capture_located
from .store import Store

log = logging.getLogger("agent_workspace_mcp")


def new_entry_id() -> str:
    """Seven lowercase letters and digits: short to type, 35 random bits."""
    return base64.b32encode(os.urandom(5)).decode("ascii").lower()[:7]


def created_parents(loc: Located) -> list[str]:
    """The index paths of the directories a deferred-parents write will create."""
    parts = loc.real_parts
    first = len(parts) - 1 - len(loc.missing)
    return ["/".join(parts[: first + k]) for k in range(1, len(loc.missing) + 1)]


class Recorder:
    def __init__(self, ws: Workspace, entry_id: str, store: Store | None = None) -> None:
        self.ws = ws
        self.id = entry_id
        self.store = store or Store(ws)
        self.budget = Budget()
        self.before: dict[str, State] = {}
        self.roots: list[tuple[str, bool]] = []
        self.tool = ""  # the tool being recorded, for what a command's changes are named by
        self.cmd = False  # it ran a command whose changes are not (fully) recorded
        self.ran: str | None = None  # the command it ran, shown
        self.left: dict[str, State] = {}  # what a command left, from its scan
        self.written: dict[str, State] = {}  # what the call's own writes left, known
        self.reverts: list[str] | None = None
        self.failed = False
        self.by: str | None = None  # the subject and session that made the call, known
        self.who: str | None = None  # before it runs (a job records after the call)

    def _root(self, rel: str, recursive: bool) -> None:
        if (rel, recursive) not in self.roots:
            self.roots.append((rel, recursive))

    def _parents(self, loc: Located) -> None:
        for rel in created_parents(loc):
            self.before.setdefault(rel, dict(NONE))
            self._root(rel, False)

    def located(self, loc: Located, *, recursive: bool = False) -> None:
        """`loc` is about to change (with everything under it, if `recursive`)."""
        try:
            self._parents(loc)
            if loc.real_rel in self.before and not recursive:
                return
            if loc.is_root:
                return
            states = capture_located(loc, recursive=recursive, store=self.store, budget=self.budget)
            for rel, state in states.items():
                self.before.setdefault(rel, state)
            self._root(loc.real_rel, recursive)
        except Exception as exc:  # never break the tool; the call is marked not restorable
            self._failed(exc)

    def content(self, loc: Located, data: bytes | None, mode: int | None) -> None:
        """`loc` is about to change and its current bytes are `data` (None: absent)."""
        try:
            self._parents(loc)
            rel = loc.real_rel
            if rel in self.before:
                return
            state: State = dict(NONE)
            if data is not None:
                state = {"t": "f", "m": mode or 0o644, "s": len(data)}
                if len(data) <= min(CHECKPOINT_FILE_MAX_BYTES, self.budget.stored):
                    digest, added = self.store.put(data)
                    self.budget.stored -= added
                    self.budget.added += added
                    state.update(h=digest, o=1)
                else:
                    st = loc.lstat()
                    state["q"] = [st.st_size, st.st_mtime_ns] if st else [len(data), 0]
            if self.budget.take_path():
                self.before[rel] = state
                self._root(rel, False)
        except Exception as exc:
            self._failed(exc)

    def wrote(self, loc: Located, data: bytes) -> None:
        """The call left `data` at `loc` (a regular file it wrote under its path lock)."""
        try:
            st = loc.lstat()
            if st is None or not stat.S_ISREG(st.st_mode):
                self.written.pop(loc.real_rel, None)
                return
            self.written[loc.real_rel] = {
                "t": "f",
                "m": stat.S_IMODE(st.st_mode),
                "s": len(data),
                "h": hashlib.sha256(data).hexdigest(),
            }
        except OSError:
            self.written.pop(loc.real_rel, None)

    def states(self, states: dict[str, State]) -> None:
        """An undo's own before-states (captured with their content stored)."""
        for rel, state in states.items():
            self.before.setdefault(rel, state)
            self._root(rel, False)

    def effect(self, changes: dict[str, tuple[State, State]]) -> None:
        """What a command changed (core.checkpoints.treescan): each path's states."""
        for rel, (before, after) in changes.items():
            self.before.setdefault(rel, before)
            self.left[rel] = after
            self._root(rel, False)

    def _failed(self, exc: Exception) -> None:
        self.failed = True
        log.warning("checkpoint for %s failed in %s: %s", self.id, self.ws.name, exc)

    def finish(
        self,
        tool: str,
        ts: str,
        change: str | None,
        *,
        locked: bool = False,
        by: str | None = None,
        who: str | None = None,
    ) -> dict[str, Any] | None:
        """Record what the call left and append its index line (None if that failed);
        `who` names the session and client, for refusals that name the other agent."""
        try:
            after: dict[str, State] = {}
            for rel, recursive in self.roots:
                if (rel in self.left or rel in self.written) and not recursive:
                    continue
                after.update(
                    capture(self.ws, rel, recursive=recursive, store=None, budget=Budget())
                )
            after.update(self.written)
            treescan.noted(self.ws, after)  # a command running meanwhile did not make these
            after.update(self.left)
            manifest = {
                rel: [self.before.get(rel, dict(NONE)), after.get(rel, dict(NONE))]
                for rel in {**self.before, **after}
            }
            line: dict[str, Any] = {"id": self.id, "ts": ts, "tool": tool}
            if change:
                line["change"] = change
            if by:
                line["by"] = by
            if who:
                line["who"] = who
            if self.cmd:
                line["cmd"] = True
            if self.ran:
                line["ran"] = self.ran
            if self.reverts is not None:
                line["reverts"] = self.reverts
            if self.budget.truncated or self.failed:
                line["trunc"] = True
            encoded = dumps(manifest)
            added = self.budget.added
            if len(encoded) <= CHECKPOINT_INLINE_MANIFEST_BYTES:
                line["p"] = manifest
            else:
                digest, more = self.store.put(encoded.encode("utf-8"))
                line["m"] = digest
                added += more
            line["b"] = added
            self.store.append(line, locked=locked)
            return line
        except Exception as exc:
            log.warning(
                "checkpoint for %s could not be saved in %s: %s", self.id, self.ws.name, exc
            )
            return None
