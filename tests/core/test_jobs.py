"""Job ids are handles, not credentials: another owner cannot see or kill a job."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from agent_workspace_mcp.core.errors import NotFoundError
from agent_workspace_mcp.core.exec.jobs import JobRegistry
from agent_workspace_mcp.core.exec.process import CappedLog, Child


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
        seen = registry.get(job.id, "alice")
        assert (seen.id, seen.status, seen.command) == (job.id, "running", "sleep 30")
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


def adopt_sleep(registry: JobRegistry, tmp_path: Path):
    child = Child(
        ["sleep", "30"], executable=shutil.which("sleep"), cwd=str(tmp_path), env=os.environ
    )
    return registry.adopt(
        child,
        command="sleep 30",
        cwd=str(tmp_path),
        owner=None,
        name=None,
        max_runtime_ms=60_000,
        replay=True,
    )


@pytest.mark.parametrize("plant", ["symlink", "world-writable", "other-owner"])
def test_an_untrusted_job_directory_is_never_used(tmp_path: Path, plant: str, capfd) -> None:
    """Someone else created the shared job directory first, or made it a symlink."""
    wanted = tmp_path / "workspace-mcp-jobs"
    collected = tmp_path / "attacker"
    collected.mkdir(mode=0o777)
    if plant == "symlink":
        wanted.symlink_to(collected, target_is_directory=True)
    elif plant == "world-writable":
        wanted.mkdir()
        wanted.chmod(0o777)
    else:
        if os.geteuid() != 0:
            pytest.skip("giving a directory to another owner needs root")
        wanted.mkdir(mode=0o700)
        os.chown(wanted, 12345, 12345)
    registry = JobRegistry(str(wanted))
    job = adopt_sleep(registry, tmp_path)
    try:
        log_dir = Path(job.log.path).parent
        assert log_dir != wanted and not log_dir.is_symlink()
        assert log_dir.stat().st_mode & 0o777 == 0o700 and log_dir.stat().st_uid == os.geteuid()
        assert list(collected.iterdir()) == []
        assert "is not private to this user" in capfd.readouterr().err
    finally:
        registry.shutdown()


def test_a_planted_log_file_is_not_appended_to(tmp_path: Path) -> None:
    registry = JobRegistry(str(tmp_path / "jobs"))
    job = adopt_sleep(registry, tmp_path)
    registry.shutdown()
    with pytest.raises(FileExistsError):
        CappedLog(job.log.path, 10)
