"""Every `.git` and `.workspace-mcp` in the tree, out of a command's reach (issue 43).

A hook in any `.git` runs as the user, outside every sandbox, at their next `git
commit`; a record in any `.workspace-mcp` is read by the server as its own. Binding
only the top-level `.git` read-only left two ways in: a command in a workspace without
`.git` created one with `hooks/pre-commit`, and a command wrote the hooks of a nested
repository (`sub/.git`).

So before a command runs, one bounded walk by fd (no link followed, never into a
`.git` or `.workspace-mcp`) finds every such entry below the bound root; the sandbox
binds each one read-only. After the command (or a job) ends, the same walk runs again:
an entry of that name that was not there before (or is another file now) was made by
the command, is removed, and the answer says so. Without a sandbox nothing can be
bound, so the second look is all there is, and it also names the hooks and config of
existing repositories the command changed (they are left as they are, for the person).
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass, field

from .. import features
from ..checkpoints.store import Store
from ..checkpoints.treescan import TreeIndex
from ..containment import GIT_DIR_NAME, open_dir
from ..fileops import remove_tree
from ..limits import REPO_GUARD_ENTRIES_MAX, STATE_DIR_NAME
from ..osflags import DIR_FLAGS
from ..workspaces import Workspace

NAMES = (GIT_DIR_NAME, STATE_DIR_NAME)
Indexed = tuple[TreeIndex, Store]  # the root's tree index, and the store it keeps content in
# What in a repository runs later as the user: a change here by an unsandboxed command
# is named in its answer.
RUNS_LATER = ("hooks", "config", "info/attributes")


@dataclass
class Found:
    """The protected entries below one root: relative path -> (dev, inode, kind)."""

    entries: dict[str, tuple[int, int, str]] = field(default_factory=dict)
    complete: bool = True
    names: tuple[str, ...] = NAMES
    marks: dict[str, tuple[object, ...]] = field(default_factory=dict)  # what RUNS_LATER holds


def survey(
    ws: Workspace,
    top: tuple[str, ...],
    *,
    marks: bool = False,
    names: tuple[str, ...] = NAMES,
    index: Indexed | None = None,
) -> Found:
    """Every `.git` and `.workspace-mcp` below `top` (components below the root); with
    `--allow-git-writes`, `names` is the state directory's alone. With the root's tree
    index (a recorded command, core.checkpoints.treescan), the index answers: it reads
    again only the directories that changed, where this walk reads the whole tree."""
    if index is not None and not top:
        return _from_index(ws, index, marks=marks, names=names)
    found = Found(names=names)
    seen = 0
    root = open_dir(ws, top)
    stack: list[tuple[int, str]] = [(root, "")]
    try:
        while stack:
            fd, prefix = stack.pop()
            try:
                try:
                    with os.scandir(fd) as it:
                        children = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
                except OSError:
                    continue
                for name, is_dir in children:
                    seen += 1
                    if seen > REPO_GUARD_ENTRIES_MAX:
                        found.complete = False
                        return found
                    rel = f"{prefix}{name}"
                    if name.casefold() in names:
                        with contextlib.suppress(OSError):
                            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                            kind = "dir" if stat.S_ISDIR(st.st_mode) else "other"
                            found.entries[rel] = (st.st_dev, st.st_ino, kind)
                            if marks and kind == "dir" and name.casefold() == GIT_DIR_NAME:
                                found.marks[rel] = _marks(fd, name)
                        continue
                    if is_dir:
                        with contextlib.suppress(OSError):
                            stack.append((os.open(name, DIR_FLAGS, dir_fd=fd), rel + "/"))
            finally:
                os.close(fd)
    finally:
        for fd, _ in stack:
            os.close(fd)
    return found


def _from_index(ws: Workspace, index: Indexed, *, marks: bool, names: tuple[str, ...]) -> Found:
    tree, store = index
    entries, complete = tree.protected(store)
    found = Found(names=names, complete=complete)
    for rel, ident in entries.items():
        parent, _, name = rel.rpartition("/")
        if name.casefold() not in names:
            continue
        found.entries[rel] = ident
        if marks and ident[2] == "dir" and name.casefold() == GIT_DIR_NAME:
            with contextlib.suppress(Exception):
                pfd = open_dir(ws, tuple(parent.split("/")) if parent else ())
                try:
                    found.marks[rel] = _marks(pfd, name)
                finally:
                    os.close(pfd)
    return found


def _marks(parent: int, name: str) -> tuple[object, ...]:
    """A signature of what in one `.git` runs later (names, sizes, times, modes)."""
    out: list[object] = []
    with contextlib.suppress(OSError):
        git = os.open(name, DIR_FLAGS, dir_fd=parent)
        try:
            for part in RUNS_LATER:
                try:
                    st = os.stat(part, dir_fd=git, follow_symlinks=False)
                except OSError:
                    out.append((part, None))
                    continue
                out.append((part, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino))
                if stat.S_ISDIR(st.st_mode):
                    sub = os.open(part, DIR_FLAGS, dir_fd=git)
                    try:
                        with os.scandir(sub) as it:
                            for e in sorted(it, key=lambda e: e.name):
                                s = e.stat(follow_symlinks=False)
                                out.append((e.name, s.st_mode, s.st_size, s.st_mtime_ns))
                    finally:
                        os.close(sub)
        finally:
            os.close(git)
    return tuple(out)


def protected_fds(
    ws: Workspace, top: tuple[str, ...], found: Found, sandbox_top: str
) -> list[tuple[int, str]]:
    """O_PATH fds on each found entry, with its path inside the sandbox, to bind
    read-only (the caller closes them)."""
    out: list[tuple[int, str]] = []
    root = open_dir(ws, top)
    try:
        for rel in sorted(found.entries):
            parent, _, name = rel.rpartition("/")
            try:
                pfd = open_dir(ws, (*top, *parent.split("/"))) if parent else os.dup(root)
            except Exception:
                continue
            try:
                flags = features.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC
                fd = os.open(name, flags, dir_fd=pfd)
            except OSError:
                continue
            finally:
                os.close(pfd)
            out.append((fd, os.path.join(sandbox_top, rel)))
    finally:
        os.close(root)
    return out


def settle(
    ws: Workspace, top: tuple[str, ...], before: Found, index: Indexed | None = None
) -> list[str]:
    """After a command: remove every protected entry it created; say what it did (one
    short clause per entry, for the answer and the journal)."""
    after = survey(ws, top, marks=bool(before.marks), names=before.names, index=index)
    said: list[str] = []
    for rel, ident in sorted(after.entries.items()):
        if before.entries.get(rel) == ident:
            if before.marks.get(rel, ()) != after.marks.get(rel, ()) and rel in before.marks:
                said.append(
                    f"changed what runs later in {rel} (hooks or config): review it "
                    "before your next git command there"
                )
            continue
        parent, _, name = rel.rpartition("/")
        try:
            pfd = open_dir(ws, (*top, *parent.split("/"))) if parent else open_dir(ws, top)
        except Exception:
            said.append(f"created {rel}, which could not be removed: remove it yourself")
            continue
        try:
            if ident[2] == "dir":
                remove_tree(pfd, name)
            else:
                os.unlink(name, dir_fd=pfd)
            said.append(
                f"created {rel}, which the server removed (hooks or records there "
                "would act as you or as the server)"
            )
        except OSError:
            said.append(f"created {rel}, which could not be removed: remove it yourself")
        finally:
            os.close(pfd)
    if not after.complete:
        said.append(
            f"the tree has more than {REPO_GUARD_ENTRIES_MAX} entries: .git and "
            f"{STATE_DIR_NAME} beyond them were not checked"
        )
    return said
