"""The links a repository ships, read from its index: where a protected name can lie deep
in the tree.

`callscope.links_held` looks for links where protected names start: the root, the
literal folders of the globs, a subpath session's folder. A link deeper in the tree
under a protected name (`services/api/.env -> ../../config/api.env`) gives its target
that name as well. Walking the whole tree for links on every gated call costs too much
(one node_modules holds 100,000 entries). A repository's shipped links are in its
index, though: `git ls-files -s` marks them with mode 120000. The list is read again
only when the index file changes (its device, inode, size and times). A link that was
made and never added is not in it: docs/SECURITY.md says so, with the workaround.

This works only where the primary root is a repository's top with a `.git` directory.
Anywhere else (a worktree's `.git` file, a repository above the root, no git) there is
no index to read, and links are looked for only where `links_held` looks. The index is
only a hint of where to look: what each link reaches is read from the tree itself
(`callscope`).
"""

from __future__ import annotations

import stat
import threading
from collections.abc import Callable

from .containment import locate
from .errors import WorkspaceError
from .gitread import GitReader
from .limits import GIT_STATUS_TIMEOUT_SECONDS, TOUCHED_ENTRIES_MAX
from .workspaces import Workspace

LINK_MODE = "120000"  # a symbolic link's mode in git's index


class ShippedLinks:
    """Per primary root: the links its repository tracks, kept until its index changes."""

    def __init__(self, reader: Callable[[], GitReader]) -> None:
        self._reader = reader
        self._kept: dict[str, tuple[tuple[int, ...], list[str]]] = {}
        self._lock = threading.Lock()

    def of(self, ws: Workspace) -> list[str]:
        """The tracked links below the primary root of `ws`, as paths from that root."""
        home = ws.anchor or ws
        if not home.confined:
            return []
        identity = _index_identity(home)
        if identity is None:
            return []
        with self._lock:
            kept = self._kept.get(home.root)
        if kept is not None and kept[0] == identity:
            return kept[1]
        try:
            listed = self._reader().run(
                home, ["ls-files", "-s", "-z", "--", "."], GIT_STATUS_TIMEOUT_SECONDS
            )
        except WorkspaceError:
            listed = ""  # no git, or a repository we do not trust: nothing shipped to read
        found = tracked_links(listed)
        with self._lock:
            self._kept[home.root] = (identity, found)
        return found


def tracked_links(listed: str) -> list[str]:
    """The link paths in `git ls-files -s -z` output, each once, at most
    TOUCHED_ENTRIES_MAX of them."""
    found: list[str] = []
    for record in listed.split("\0"):
        head, tab, path = record.partition("\t")
        if tab and head.split(" ", 1)[0] == LINK_MODE and path not in found:
            found.append(path)
            if len(found) >= TOUCHED_ENTRIES_MAX:
                break
    return found


def _index_identity(ws: Workspace) -> tuple[int, ...] | None:
    """The index file's identity at the root's `.git` directory, or None without one."""
    try:
        with locate(ws, ".git/index", follow_final=False, defer_parents=True) as loc:
            st = loc.lstat()
    except (WorkspaceError, OSError):
        return None
    if st is None or not stat.S_ISREG(st.st_mode):
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
