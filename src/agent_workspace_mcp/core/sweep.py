"""Temp files an interrupted write left behind, removed once at start-up (issue 28).

`textio.atomic_write` writes `.NAME.XXXXXXXX.awm-tmp` beside its target and renames it
over the target; a process killed between the two (SIGKILL, OOM, power loss) leaves the
temp file. The next server start removes them: only names of exactly that pattern,
regular files with one link owned by this user, older than TMP_STALE_SECONDS (another
live server may be writing one right now), in the tree and the state directory, never
inside `.git`.
The walk goes by directory fd (`os.fwalk`, no symlink followed) and is bounded, and it
runs on a daemon thread after a short delay, so start-up never waits for it. It starts
when the server first serves (its lifespan), so a server that is only built (a library
user listing tools, a test) walks nothing.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import stat
import threading
import time
from collections.abc import Iterable

from .limits import (
    TMP_STALE_SECONDS,
    TMP_SWEEP_DELAY_SECONDS,
    TMP_SWEEP_MAX_ENTRIES,
)
from .workspaces import Workspace

log = logging.getLogger("agent_workspace_mcp")

TEMP_NAME = re.compile(r"\A\..+\.[0-9a-f]{8}\.awm-tmp\Z", re.DOTALL)
SKIPPED_DIRS = frozenset({".git"})


def sweep_temp_files(ws: Workspace, now: float | None = None) -> int:
    """Remove this workspace's stale temp files; returns how many were removed."""
    if not ws.confined:
        return 0  # an unconfined server serves `/`: not ours to walk
    now = time.time() if now is None else now
    uid = os.geteuid()
    removed = seen = 0
    try:
        walker = os.fwalk(ws.root, follow_symlinks=False)
        for _dirpath, dirnames, filenames, dir_fd in walker:
            dirnames[:] = [d for d in dirnames if d.casefold() not in SKIPPED_DIRS]
            seen += len(dirnames) + len(filenames)
            if seen > TMP_SWEEP_MAX_ENTRIES:
                log.info("temp-file sweep of %s stopped after %d entries", ws.name, seen)
                break
            for name in filenames:
                if not name.endswith(".awm-tmp") or not TEMP_NAME.match(name):
                    continue
                try:
                    st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                except OSError:
                    continue
                if (
                    stat.S_ISREG(st.st_mode)
                    and st.st_nlink == 1
                    and st.st_uid == uid
                    and now - st.st_mtime > TMP_STALE_SECONDS
                ):
                    with contextlib.suppress(OSError):
                        os.unlink(name, dir_fd=dir_fd)
                        removed += 1
    except OSError as exc:
        log.info("temp-file sweep of %s failed: %s", ws.name, exc)
    if removed:
        log.warning("removed %d temp file(s) an interrupted write left in %s", removed, ws.name)
    return removed


def start_sweep(workspaces: Iterable[Workspace]) -> threading.Thread:
    """Sweep every workspace on a daemon thread, after TMP_SWEEP_DELAY_SECONDS."""

    def run() -> None:
        time.sleep(TMP_SWEEP_DELAY_SECONDS)
        for ws in workspaces:
            sweep_temp_files(ws)

    thread = threading.Thread(target=run, name="awm-temp-sweep", daemon=True)
    thread.start()
    return thread
