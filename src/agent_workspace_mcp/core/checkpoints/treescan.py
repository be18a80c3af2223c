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
from ..errors import WorkspaceError
from ..limits import (
    CHECKPOINT_MAX_PATHS,
    STATE_DIR_NAME,
    TREE_BASELINE_MAX_BYTES,
    TREE_INDEXES_KEPT,
    TREE_SCAN_MAX_ENTRIES,
)
from ..osflags import DIR_FLAGS
from ..workspaces import Workspace
from .dirwatch import DirWatch
from .states import NONE, Budget, State, entry_state, same
from .store import Store

# (type and mode, size, mtime, ctime, inode); a directory's is its mode and inode only
# (its times change with every entry added or removed below it, which is not a change
# of the directory itself).
Sig = tuple[int, int, int, int, int]
# Never recorded, and never entered; named by case-folded name, like core.exec.repoguard
# (which the index also answers: where each one is, by identity).
GUARDED = frozenset({".git", STATE_DIR_NAME.casefold()})
Ident = tuple[int, int, str]  # (dev, inode, "dir" or "other")


def signature(st: os.stat_result) -> Sig:
    if stat.S_ISDIR(st.st_mode):
        return (st.st_mode, 0, 0, 0, st.st_ino)
    return (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


@dataclass
class Scanned:
    sigs: dict[str, Sig]
    states: dict[str, State]  # the entries `want` asked for, captured during the walk
    complete: bool
    guarded: dict[str, Ident] = field(default_factory=dict)  # every `.git` and state dir


def scan(
    ws: Workspace,
    want: Callable[[str, Sig], bool],
    store: Store | None,
    budget: Budget,
    limit: int = TREE_SCAN_MAX_ENTRIES,
    *,
    top: str = "",
    on_dir: Callable[[int, str], None] | None = None,
) -> Scanned:
    """Every entry below `top` (the root; but `.git` and state directories), by fd; the
    state of each one `want(rel, sig)` asks for, with content stored while `budget`
    allows. `on_dir(fd, rel)` hears of each directory before it is read (a watch)."""
    sigs: dict[str, Sig] = {}
    states: dict[str, State] = {}
    guarded: dict[str, Ident] = {}
    complete = True
    stack = [(open_dir(ws, tuple(top.split("/")) if top else ()), top + "/" if top else "")]
    try:
        while stack:
            fd, prefix = stack.pop()
            if on_dir is not None:
                on_dir(fd, prefix[:-1])
            try:
                with os.scandir(fd) as entries:
                    for entry in entries:
                        name = entry.name
                        if name.casefold() in GUARDED:
                            with contextlib.suppress(OSError):
                                guarded[prefix + name] = ident(entry.stat(follow_symlinks=False))
                            continue
                        if len(sigs) >= limit:
                            complete = False
                            stack_close(stack)
                            return Scanned(sigs, states, complete, guarded)
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
    return Scanned(sigs, states, complete, guarded)


def ident(st: os.stat_result) -> Ident:
    return (st.st_dev, st.st_ino, "dir" if stat.S_ISDIR(st.st_mode) else "other")


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
    gen: int = 0  # the index's generation when it was taken


@dataclass
class Effect:
    """What a command changed: each path's state before and after, deepest paths last."""

    changes: dict[str, tuple[State, State]]
    complete: bool
    overlapped: bool


class TreeIndex:
    """One workspace's entries as last seen (process-local), kept current by rescanning
    only the directories core.checkpoints.dirwatch says changed (everything when it
    cannot say). Every entry that changes gets the next generation number, so a run's
    changes are the entries touched since its baseline."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.known: dict[str, tuple[Sig, State]] = {}
        self.kids: dict[str, set[str]] = {}  # a directory's index path ('' the root): names
        self.guarded: dict[str, Ident] = {}  # every `.git` and state directory, by identity
        self.touched: dict[str, int] = {}  # index path: the generation that last changed it
        self.gen = 0
        self.complete = True
        self.scanned = False
        self.watch = DirWatch()
        self.noted: dict[str, tuple[float, State]] = {}  # what recorded calls left
        self.running: dict[int, int] = {}  # id(baseline): its generation
        self._guard = threading.Lock()

    def before(self, store: Store) -> Baseline:
        """The tree now, what changed since the last look stored: a run's baseline."""
        with self._guard:
            self._refresh(
                store, Budget(paths=TREE_SCAN_MAX_ENTRIES, stored=TREE_BASELINE_MAX_BYTES)
            )
            baseline = Baseline(
                dict(self.known), self.complete, overlapped=bool(self.running), gen=self.gen
            )
            self.running[id(baseline)] = self.gen
            return baseline

    def after(self, baseline: Baseline, store: Store) -> Effect:
        """What changed since `baseline`, with what it left stored."""
        with self._guard:
            budget = Budget()
            self._refresh(store, budget)
            self.running.pop(id(baseline), None)
            overlapped = baseline.overlapped or bool(self.running)
            before = baseline.known
            changes: dict[str, tuple[State, State]] = {}
            for rel, gen in self.touched.items():
                if gen <= baseline.gen:
                    continue
                was, now = before.get(rel), self.known.get(rel)
                prior = was[1] if was is not None else dict(NONE)
                after = now[1] if now is not None else dict(NONE)
                if not _changed(prior, after) or self._made_by_a_call(rel, after, baseline):
                    continue
                changes[rel] = (_still_stored(prior, store), after)
            oldest = min(self.running.values(), default=self.gen)
            self.touched = {rel: g for rel, g in self.touched.items() if g > oldest}
            if len(changes) > CHECKPOINT_MAX_PATHS:
                changes = dict(sorted(changes.items())[:CHECKPOINT_MAX_PATHS])
                budget.truncated = True
            complete = self.complete and baseline.complete and not budget.truncated
            return Effect(dict(sorted(changes.items())), complete, overlapped)

    def protected(self, store: Store) -> tuple[dict[str, Ident], bool]:
        """Every `.git` and state directory in the tree now (core.exec.repoguard's survey,
        without walking the tree again), and whether the index covers the whole tree."""
        with self._guard:
            self._refresh(
                store, Budget(paths=TREE_SCAN_MAX_ENTRIES, stored=TREE_BASELINE_MAX_BYTES)
            )
            return dict(self.guarded), self.complete

    # --- keeping `known` current ------------------------------------------------------

    def _refresh(self, store: Store, budget: Budget) -> None:
        dirty = self.watch.changed() if self.scanned else None
        if dirty is None:
            self._scan_below("", store, budget)
            self.scanned = True
            return
        for rel in sorted(dirty, key=lambda r: r.count("/")):
            self._rescan(rel, store, budget)

    def _set(self, rel: str, sig: Sig, state: State) -> None:
        self.known[rel] = (sig, state)
        self.gen += 1
        self.touched[rel] = self.gen
        parent, _, name = rel.rpartition("/")
        self.kids.setdefault(parent, set()).add(name)

    def _drop(self, rel: str) -> None:
        """`rel` and everything below it are gone."""
        for name in list(self.kids.pop(rel, ())):
            self._drop(f"{rel}/{name}")
        for below in [g for g in self.guarded if g.startswith(rel + "/")]:
            del self.guarded[below]
        if self.known.pop(rel, None) is not None:
            self.gen += 1
            self.touched[rel] = self.gen
        parent, _, name = rel.rpartition("/")
        self.kids.get(parent, set()).discard(name)

    def _want(self, rel: str, sig: Sig) -> bool:
        have = self.known.get(rel)
        return have is None or have[0] != sig

    def _scan_below(self, top: str, store: Store, budget: Budget) -> None:
        """Everything below `top` ('' the whole tree), watched from now on."""
        # The whole tree: the bound itself; below a directory: what is left of it.
        room = TREE_SCAN_MAX_ENTRIES - (len(self.known) if top else 0)
        try:
            found = scan(
                self.ws, self._want, store, budget, max(room, 0), top=top, on_dir=self.watch.add
            )
        except (WorkspaceError, OSError):
            if top:
                self._drop(top)
            return
        for rel, sig in found.sigs.items():
            if rel in found.states:
                self._set(rel, sig, found.states[rel])
        prefix = top + "/" if top else ""
        if found.complete:
            for rel in [g for g in self.guarded if g.startswith(prefix)]:
                if rel not in found.guarded:
                    del self.guarded[rel]
        self.guarded.update(found.guarded)
        if found.complete:
            for rel in [r for r in self.known if r.startswith(prefix) and r not in found.sigs]:
                if rel in self.known:
                    self._drop(rel)
        if not top:
            self.complete = found.complete
        elif not found.complete:
            self.complete = False

    def _rescan(self, rel: str, store: Store, budget: Budget) -> None:
        """One directory's entries again (a new directory below it: all of it)."""
        if rel and rel not in self.known:
            return  # gone, or not yet known: its parent's rescan sees to it
        try:
            fd = open_dir(self.ws, tuple(rel.split("/")) if rel else ())
        except (WorkspaceError, OSError):
            if rel:
                self._drop(rel)
            return
        prefix = rel + "/" if rel else ""
        present: set[str] = set()
        try:
            if rel and self.known[rel][0][4] != os.fstat(fd).st_ino:
                self._scan_below(rel, store, budget)  # another directory by the same name
                return
            with os.scandir(fd) as entries:
                for entry in entries:
                    name = entry.name
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    present.add(name)
                    if name.casefold() in GUARDED:
                        self.guarded[prefix + name] = ident(st)
                        continue
                    child, sig = prefix + name, signature(st)
                    if not self._want(child, sig):
                        continue
                    was = self.known.get(child)
                    with contextlib.suppress(OSError):
                        self._set(child, sig, entry_state(fd, name, st, store, budget))
                    if stat.S_ISDIR(st.st_mode) and (was is None or was[0] != sig):
                        for name_below in list(self.kids.get(child, ())):
                            self._drop(f"{child}/{name_below}")
                        self._scan_below(child, store, budget)
                    elif was is not None and stat.S_ISDIR(was[0][0]):
                        for name_below in list(self.kids.get(child, ())):
                            self._drop(f"{child}/{name_below}")
                        self.kids.pop(child, None)
        except OSError:
            return
        finally:
            os.close(fd)
        for name in list(self.kids.get(rel, ())):
            if name not in present:
                self._drop(prefix + name)
        for guarded in [g for g in self.guarded if g.rpartition("/")[0] == rel]:
            if guarded.rpartition("/")[2] not in present:
                del self.guarded[guarded]

    def note(self, rel: str, state: State) -> None:
        """A recorded call (a file tool, an undo) left `rel` in `state`."""
        with self._guard:
            self.noted[rel] = (time.monotonic(), state)
            if len(self.noted) > TREE_SCAN_MAX_ENTRIES:
                self.noted.pop(next(iter(self.noted)))

    def _made_by_a_call(self, rel: str, now: State, baseline: Baseline) -> bool:
        noted = self.noted.get(rel)
        return noted is not None and noted[0] >= baseline.started and same(now, noted[1])


def _still_stored(state: State, store: Store) -> State:
    """A before-state whose content was collected since (a pruned store) is recorded as
    what it is: not restorable. Checked for the changed paths only."""
    if state.get("o") and not store.has(str(state["h"])):
        return {k: v for k, v in state.items() if k != "o"}
    return state


def _changed(before: State, after: State) -> bool:
    if before.get("t") == "d" and after.get("t") == "d":
        return before.get("m") != after.get("m")
    return not same(after, before)


_indexes: dict[str, TreeIndex] = {}
_indexes_guard = threading.Lock()


def index_for(ws: Workspace) -> TreeIndex:
    """The index of `ws`'s root, where its checkpoints are recorded; the least recently
    used beyond TREE_INDEXES_KEPT are dropped (their watches closed)."""
    with _indexes_guard:
        found = _indexes.pop(ws.root, None)
        if found is None:
            found = TreeIndex(ws)
        _indexes[ws.root] = found  # last: the dict's order is recency
        while len(_indexes) > TREE_INDEXES_KEPT:
            _indexes.pop(next(iter(_indexes))).watch.close()
        return found


def noted(ws: Workspace, states: dict[str, State]) -> None:
    """What a recorded call left (Recorder.finish): never counted as a command's change."""
    with _indexes_guard:
        found = _indexes.get(ws.root)
    if found is not None:
        for rel, state in states.items():
            found.note(rel, state)
