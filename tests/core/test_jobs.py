"""Job ids are handles, not credentials: another owner cannot see or kill a job."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from agent_workspace_mcp.core.errors import NotFoundError
from agent_workspace_mcp.core.jobs import JobRegistry
from agent_workspace_mcp.core.process import Child


def test_jobs_belong_to_their_owner(tmp_path: Path) -> None:
    registry = JobRegistry(str(tmp_path / "jobs"))
    child = Child(
        ["sleep", "30"], executable=shutil.which("sleep"), cwd=str(tmp_path), env=os.environ
    )
    job = registry.adopt(
        child,
        command="sleep 30",
        cwd=str(tmp_path),
        owner="alice",
        name=None,
        max_runtime_ms=60_000,
        replay=True,
    )
    try:
        assert registry.get(job.id, "alice") is job
        for other in ("bob", None):
            with pytest.raises(NotFoundError, match=f"unknown job: {job.id}"):
                registry.get(job.id, other)
            with pytest.raises(NotFoundError):
                registry.kill(job.id, other)
            assert registry.recent(other) == []
        assert child.running
        assert (tmp_path / "jobs").stat().st_mode & 0o777 == 0o700
        assert oct(os.stat(job.log.path).st_mode & 0o777) == "0o600"
    finally:
        registry.shutdown()
    assert not child.running and job.status == "killed"
