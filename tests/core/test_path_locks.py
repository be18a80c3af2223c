"""Per-path locks (core/state/locks.PathLocks): a call that cannot get every path lets go
of the ones it got, and nothing is left referenced after any call."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from agent_workspace_mcp.core import limits
from agent_workspace_mcp.core.state.locks import PathBusyError, PathLocks, stripe
from agent_workspace_mcp.core.workspaces import WorkspaceRegistry


def test_a_busy_path_gives_back_every_lock_taken_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "STATE_LOCK_WAIT_SECONDS", 0.2)
    ws = WorkspaceRegistry.confined(str(tmp_path), (), allow_git_writes=False).primary
    locks = PathLocks()
    # Four paths on four lock stripes (paths sharing one wait for each other across
    # processes, by design): with "a".."d" under some temp folders, b and c shared one.
    paths: list[str] = []
    for n in range(100):
        path = str(tmp_path / f"{len(paths)}-{n}")
        if stripe(path) not in {stripe(p) for p in paths}:
            paths.append(path)
        if len(paths) == 4:
            break
    holding, release = threading.Event(), threading.Event()

    def hold_c() -> None:
        with locks.hold(ws, [paths[2]]):
            holding.set()
            release.wait(10)

    other = threading.Thread(target=hold_c)
    other.start()
    try:
        assert holding.wait(10)
        with pytest.raises(PathBusyError), locks.hold(ws, reversed(paths)):
            pass  # the first two are taken (sorted order), the third is busy
        assert len(locks) == 1  # only the other call's c is still referenced
        with locks.hold(ws, paths[:2] + paths[3:]):  # a, b and d are free again at once
            assert len(locks) == 4
    finally:
        release.set()
        other.join()
    assert len(locks) == 0


def test_many_paths_are_held_and_all_let_go(tmp_path: Path) -> None:
    ws = WorkspaceRegistry.confined(str(tmp_path), (), allow_git_writes=False).primary
    locks = PathLocks()
    paths = [str(tmp_path / f"f{n}.txt") for n in range(5_000)]
    with locks.hold(ws, paths + paths[:10]):  # repeats are held once
        assert len(locks) == 5_000
    assert len(locks) == 0
    with locks.hold(ws, paths[:1]):  # and each can be taken again
        pass
