"""The before/after scan of a command (issue 46) under attack: a thread swaps a directory
for a link to outside the root while the server scans; nothing outside is ever recorded
or read, in many iterations."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from agent_workspace_mcp.core.checkpoints.states import Budget
from agent_workspace_mcp.core.checkpoints.store import Store
from agent_workspace_mcp.core.checkpoints.treescan import TreeIndex, scan
from agent_workspace_mcp.core.workspaces import Workspace


def workspace(root: Path) -> Workspace:
    return Workspace(name="default", root=str(root), base=str(root))


def test_a_directory_swapped_for_a_link_mid_scan_is_never_followed(ws: Path, outside: Path) -> None:
    (ws / "d").mkdir()
    (ws / "d" / "inner.txt").write_text("inside\n")
    stop = threading.Event()
    swaps = 0

    def swapper() -> None:
        nonlocal swaps
        while not stop.is_set():
            os.rename(ws / "d", ws / "d.real")
            os.symlink(outside, ws / "d")
            os.unlink(ws / "d")
            os.rename(ws / "d.real", ws / "d")
            swaps += 1

    workspace_ = workspace(ws)
    store = Store(workspace_)
    index = TreeIndex(workspace_)
    thread = threading.Thread(target=swapper)
    thread.start()
    seen: set[str] = set()
    scans = 0
    deadline = time.monotonic() + 120  # a bound on a loaded machine, not a wait
    try:
        # At least 300 scans, and at least 100 swaps while they ran (a loaded machine
        # gives the swapping thread fewer turns).
        while (scans < 300 or swaps < 100) and time.monotonic() < deadline:
            scans += 1
            baseline = index.before(store)
            seen.update(baseline.known)
            effect = index.after(baseline, store)
            seen.update(effect.changes)
            seen.update(scan(workspace_, lambda rel, sig: True, store, Budget()).states)
    finally:
        stop.set()
        thread.join()
    assert scans >= 300 and swaps >= 100, (scans, swaps)
    # the scan did run through the real directory, under either name
    assert {"d/inner.txt", "d.real/inner.txt"} & seen
    assert not any(rel.endswith("secret.txt") for rel in seen), sorted(seen)
    objects = ws / ".workspace-mcp" / "checkpoints" / "objects"
    for blob in objects.rglob("*") if objects.exists() else ():
        if blob.is_file():
            assert b"top secret" not in blob.read_bytes()


def test_the_scan_stops_at_its_bound_and_says_so(ws: Path) -> None:
    for i in range(30):
        (ws / f"f{i}").write_text("x")
    found = scan(workspace(ws), lambda rel, sig: False, None, Budget(), limit=10)
    assert (len(found.sigs), found.complete) == (10, False)
    assert scan(workspace(ws), lambda rel, sig: False, None, Budget()).complete


def test_the_index_finds_every_git_and_state_dir_a_walk_finds(ws: Path) -> None:
    """core.exec.repoguard's survey answered from the index (rescanning what changed)
    finds exactly what its own full walk finds, after each change to the tree."""
    from agent_workspace_mcp.core.exec import repoguard

    workspace_ = workspace(ws)
    index = (TreeIndex(workspace_), Store(workspace_))
    (ws / "a" / "b").mkdir(parents=True)
    (ws / ".git").mkdir()
    steps = [
        lambda: (ws / "a" / ".git").mkdir(),
        lambda: (ws / "a" / "b" / ".GIT").write_text("gitdir: elsewhere\n"),
        lambda: os.rename(ws / "a", ws / "moved"),
        lambda: (ws / "moved" / "b" / ".GIT").unlink(),
        lambda: (ws / "new" / "deep" / ".workspace-mcp").mkdir(parents=True),
        lambda: os.rename(ws / "new", ws / "moved" / "new"),
    ]
    for step in [lambda: None, *steps]:
        step()
        walked = repoguard.survey(workspace_, ())
        indexed = repoguard.survey(workspace_, (), index=index)
        assert indexed.entries == walked.entries and indexed.complete
    assert "moved/new/deep/.workspace-mcp" in indexed.entries
