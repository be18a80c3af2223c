"""Per-path locks (core/state/locks.PathLocks): a call that cannot get every path lets go
of the ones it got, and nothing is left referenced after any call."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from agent_workspace_mcp.core import limits
from agent_workspace_mcp.core.state.locks import PathBusyError, PathLocks
from agent_workspace_mcp.core.workspaces import WorkspaceRegistry


def test_a_busy_path_gives_back_every_lock_taken_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "STATE_LOCK_WAIT_SECONDS", 0.2)
    ws = WorkspaceRegistry.confined(str(tmp_path), (), allow_git_writes=False).primary
    locks = PathLocks()
    paths = [str(tmp_path / name) for name in ("a", "b", "c", "d")]
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
            pass  # a and b are taken (sorted order), c is busy, d is never reached
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
