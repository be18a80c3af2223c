"""What a command changed in the workspace: a stat scan before it runs and after it ends.

The file tools report each path before they change it; a command cannot, so its effect
is found by comparing the tree before and after (issue 46). `TreeIndex` keeps, per
workspace and per process, every entry's stat signature and its state (core.checkpoints
.states) with the content already in the checkpoint store. Before a command only the
entries whose signature changed since the last scan are read and stored (the first
command on a never-seen tree stores the tree once, within TREE_BASELINE_MAX_BYTES);
after it, only the entries whose signature changed during the run are read.

The scan walks by directory fd from the root, never following a link (a directory
swapped for a link mid-scan is seen as the link), skips every `.git` and state directory
(the sandbox keeps them read-only, core.exec.repoguard watches them), and stops at
TREE_SCAN_MAX_ENTRIES: a tree past it is recorded as far as the scan went, and said so.
No path lock is held: the command runs for as long as it runs.

A file whose content a file tool (this process) wrote during the run is the tool's
change, not the command's: `noted` carries what each recorded call left, and a path
whose state is exactly that is left out of the command's effect.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..containment import open_dir
from ..limits import (
    CHECKPOINT_MAX_PATHS,
    STATE_DIR_NAME,
    TREE_BASELINE_MAX_BYTES,
    TREE_SCAN_MAX_ENTRIES,
)
from ..osflags import DIR_FLAGS
from ..workspaces import Workspace
from .states import NONE, Budget, State, entry_state, same
from .store import Store

# (type and mode, size, mtime, ctime, inode); a directory's is its mode and inode only
# (its times change with every entry added or removed below it, which is not a change
# of the directory itself).
Sig = tuple[int, int, int, int, int]
SKIPPED = frozenset({".git", STATE_DIR_NAME})


def signature(st: os.stat_result) -> Sig:
    if stat.S_ISDIR(st.st_mode):
        return (st.st_mode, 0, 0, 0, st.st_ino)
    return (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


@dataclass
class Scanned:
    sigs: dict[str, Sig]
    states: dict[str, State]  # the entries `want` asked for, captured during the walk
    complete: bool


def scan(
    ws: Workspace,
    want: Callable[[str, Sig], bool],
    store: Store | None,
    budget: Budget,
    limit: int = TREE_SCAN_MAX_ENTRIES,
) -> Scanned:
    """Every entry below the root (but `.git` and state directories), by fd; the state of
    each one `want(rel, sig)` asks for, with content stored while `budget` allows."""
    sigs: dict[str, Sig] = {}
    states: dict[str, State] = {}
    complete = True
    stack = [(open_dir(ws), "")]
    try:
        while stack:
            fd, prefix = stack.pop()
            try:
                with os.scandir(fd) as entries:
                    for entry in entries:
                        name = entry.name
                        if name in SKIPPED:
                            continue
                        if len(sigs) >= limit:
                            complete = False
                            stack_close(stack)
                            return Scanned(sigs, states, complete)
                        try:
                            st = entry.stat(follow_symlinks=False)
                        except OSError:
                            continue  # gone since the directory was read
                        rel = prefix + name
                        sig = signature(st)
                        sigs[rel] = sig
                        if want(rel, sig):
                            with contextlib.suppress(OSError):
                                states[rel] = entry_state(fd, name, st, store, budget)
                        if stat.S_ISDIR(st.st_mode):
                            with contextlib.suppress(OSError):  # swapped for a link: not followed
                                stack.append((os.open(name, DIR_FLAGS, dir_fd=fd), rel + "/"))
            except OSError:
                pass
            finally:
                os.close(fd)
    finally:
        stack_close(stack)
    return Scanned(sigs, states, complete)


def stack_close(stack: list[tuple[int, str]]) -> None:
    while stack:
        with contextlib.suppress(OSError):
            os.close(stack.pop()[0])


@dataclass
class Baseline:
    """The tree as a command found it: each entry's signature and restorable state."""

    known: dict[str, tuple[Sig, State]]
    complete: bool
    started: float = field(default_factory=time.monotonic)
    overlapped: bool = False  # another command ran in this workspace meanwhile


@dataclass
class Effect:
    """What a command changed: each path's state before and after, deepest paths last."""

    changes: dict[str, tuple[State, State]]
    complete: bool
    overlapped: bool


class TreeIndex:
    """One workspace's entries as the last scan saw them (process-local)."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.known: dict[str, tuple[Sig, State]] = {}
        self.noted: dict[str, tuple[float, State]] = {}  # what recorded calls left
        self.running: set[int] = set()
        self._guard = threading.Lock()

    def before(self, store: Store) -> Baseline:
        """Scan, storing what changed since the last scan; the baseline for one run."""
        with self._guard:
            known = self.known
            budget = Budget(paths=TREE_SCAN_MAX_ENTRIES, stored=TREE_BASELINE_MAX_BYTES)

            def want(rel: str, sig: Sig) -> bool:
                have = known.get(rel)
                if have is None or have[0] != sig:
                    return True
                # its object may have been collected since (a pruned store)
                state = have[1]
                return bool(state.get("o")) and not store.has(state["h"])

            found = scan(self.ws, want, store, budget)
            fresh = {
                rel: (sig, found.states[rel] if rel in found.states else known[rel][1])
                for rel, sig in found.sigs.items()
                if rel in found.states or rel in known
            }
            self.known = fresh
            baseline = Baseline(dict(fresh), found.complete, overlapped=bool(self.running))
            self.running.add(id(baseline))
            return baseline

    def after(self, baseline: Baseline, store: Store) -> Effect:
        """Scan again: what changed since `baseline`, with what it left stored."""
        with self._guard:
            self.running.discard(id(baseline))
            overlapped = baseline.overlapped or bool(self.running)
            before = baseline.known
            budget = Budget()

            def want(rel: str, sig: Sig) -> bool:
                was = before.get(rel)
                return was is None or was[0] != sig

            found = scan(self.ws, want, store, budget)
            changes: dict[str, tuple[State, State]] = {}
            for rel, after in found.states.items():
                was = before.get(rel)
                prior = was[1] if was is not None else dict(NONE)
                if not _changed(prior, after) or self._made_by_a_call(rel, after, baseline):
                    continue
                changes[rel] = (prior, after)
            if found.complete and baseline.complete:
                for rel, (_, prior) in before.items():
                    if rel not in found.sigs and not self._made_by_a_call(rel, NONE, baseline):
                        changes[rel] = (prior, dict(NONE))
            if len(changes) > CHECKPOINT_MAX_PATHS:
                changes = dict(list(sorted(changes.items()))[:CHECKPOINT_MAX_PATHS])
                budget.truncated = True
            for rel, sig in found.sigs.items():
                if rel in found.states:
                    self.known[rel] = (sig, found.states[rel])
            for rel in [r for r in self.known if r not in found.sigs]:
                del self.known[rel]
            complete = found.complete and baseline.complete and not budget.truncated
            return Effect(dict(sorted(changes.items())), complete, overlapped)

    def note(self, rel: str, state: State) -> None:
        """A recorded call (a file tool, an undo) left `rel` in `state`."""
        with self._guard:
            self.noted[rel] = (time.monotonic(), state)
            if len(self.noted) > TREE_SCAN_MAX_ENTRIES:
                self.noted.pop(next(iter(self.noted)))

    def _made_by_a_call(self, rel: str, now: State, baseline: Baseline) -> bool:
        noted = self.noted.get(rel)
        return noted is not None and noted[0] >= baseline.started and same(now, noted[1])


def _changed(before: State, after: State) -> bool:
    if before.get("t") == "d" and after.get("t") == "d":
        return before.get("m") != after.get("m")
    return not same(after, before)


_indexes: dict[str, TreeIndex] = {}
_indexes_guard = threading.Lock()


def index_for(ws: Workspace) -> TreeIndex:
    """The index of `ws`'s root, where its checkpoints are recorded."""
    with _indexes_guard:
        found = _indexes.get(ws.root)
        if found is None:
            found = _indexes[ws.root] = TreeIndex(ws)
        return found


def noted(ws: Workspace, states: dict[str, State]) -> None:
    """What a recorded call left (Recorder.finish): never counted as a command's change."""
    with _indexes_guard:
        found = _indexes.get(ws.root)
    if found is not None:
        for rel, state in states.items():
            found.note(rel, state)
