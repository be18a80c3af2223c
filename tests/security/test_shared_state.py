"""Replicas on one workspace (issue 49, item 3): the server refuses to start where its
state would not be kept safe by flock: on FUSE (locks held within one machine only)
unless told no other machine mounts it. A real fuse-overlayfs mount stands in for a
gcsfuse or sshfs volume."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from agent_workspace_mcp import Settings, create_server
from agent_workspace_mcp.core.errors import ConfigError
from agent_workspace_mcp.core.state import lockcheck
from tests.helpers import requires

TOKEN = "shared-state-test-token-0123456789"


def _fuse() -> str | None:
    if shutil.which("fuse-overlayfs") is None:
        return "fuse-overlayfs is not installed (Debian package 'fuse-overlayfs')"
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse here"
    return None


@pytest.fixture
def fuse_root(tmp_path: Path):
    lower, upper, work, merged = (tmp_path / n for n in ("lower", "upper", "work", "merged"))
    for d in (lower, upper, work, merged):
        d.mkdir()
    (lower / "a.txt").write_text("a\n")
    options = f"lowerdir={lower},upperdir={upper},workdir={work}"
    subprocess.run(["fuse-overlayfs", "-o", options, str(merged)], check=True)
    try:
        yield merged
    finally:
        subprocess.run(["fusermount3", "-u", str(merged)], check=False)


@requires(_fuse())
def test_a_fuse_workspace_refuses_to_start_unless_not_shared(fuse_root: Path) -> None:
    assert lockcheck.NODE_LOCAL.get(lockcheck.filesystem_type(str(fuse_root)) or 0) == "FUSE"
    served = {"root": str(fuse_root), "audit": False, "http": True, "token": TOKEN}
    with pytest.raises(ConfigError) as error:
        create_server(Settings(**served))
    said = str(error.value)
    assert "on FUSE, whose locks hold within one machine only" in said and "\n" not in said
    assert "--state-not-shared" in said
    create_server(Settings(**served, state_not_shared=True))
    # Over stdio the server is one user's (a VM's or Docker Desktop's FUSE share).
    create_server(Settings(root=str(fuse_root), audit=False))


def test_a_local_disk_starts_and_its_locks_exclude(tmp_path: Path) -> None:
    assert lockcheck.flock_works(str(tmp_path)) is None
    assert lockcheck.filesystem_type(str(tmp_path)) not in lockcheck.NODE_LOCAL
    create_server(Settings(root=str(tmp_path), audit=False))


def test_a_lock_that_excludes_no_one_refuses_to_start(tmp_path: Path, monkeypatch) -> None:
    """What a filesystem with a no-op flock looks like to the probe (no such filesystem
    can be mounted here without privileges the suite does not take)."""
    import fcntl

    monkeypatch.setattr(fcntl, "flock", lambda fd, op: None)
    with pytest.raises(ConfigError, match="locks there exclude no one"):
        lockcheck.check(str(tmp_path), not_shared=True)
