"""Job ids are handles, not credentials: another owner cannot see or kill a job."""

from __future__ import annotations

import os
import shutil
import threading
import time
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


def adopt(registry: JobRegistry, cwd: Path, child: Child, command: str):
    return registry.adopt(
        child,
        command=command,
        cwd=str(cwd),
        owner=None,
        name=None,
        max_runtime_ms=60_000,
        replay=True,
    )


def adopt_sleep(registry: JobRegistry, tmp_path: Path):
    child = Child(
        ["sleep", "30"], executable=shutil.which("sleep"), cwd=str(tmp_path), env=os.environ
    )
    return adopt(registry, tmp_path, child, "sleep 30")


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


def test_a_closed_log_never_touches_the_descriptor_its_number_went_to(tmp_path: Path) -> None:
    """A job's log is closed by whoever sees the end first (its watcher, a job_status, a
    task poll); a second close, or a late note, must not reach the file that reused the
    number meanwhile (another job's record, a state file, a client's socket)."""
    log = CappedLog(str(tmp_path / "job.log"), 100)
    number = log.fd
    log.close()
    other = tmp_path / "someone-else"
    other.write_bytes(b"theirs")
    reused = os.open(other, os.O_RDWR | os.O_APPEND)
    if reused != number:
        os.dup2(reused, number)
        os.close(reused)
    try:
        log.close()
        log.write(b"a late note")
        os.fstat(number)  # still open: the second close did not take it
        assert other.read_bytes() == b"theirs"
    finally:
        os.close(number)
    assert (tmp_path / "job.log").read_bytes() == b""


def _end_while_polled(registry: JobRegistry, cwd: Path, bystander: Path) -> list[int]:
    """One job ending under three pollers and a thread opening files: the numbers of the
    files that were closed under that thread."""
    child = Child(["true"], executable=shutil.which("true"), cwd=str(cwd), env=os.environ)
    # What a command's end does when its changes are recorded takes a while.
    child.after = lambda: (time.sleep(0.01), [])[1]
    job = adopt(registry, cwd, child, "true")
    stop = threading.Event()
    lost: list[int] = []

    def poll() -> None:
        while not stop.is_set():
            registry.get(job.id, None)

    def open_and_check() -> None:
        while not stop.is_set():
            fd = os.open(bystander, os.O_RDONLY)
            try:
                os.fstat(fd)
                os.close(fd)
            except OSError:
                lost.append(fd)

    threads = [threading.Thread(target=poll) for _ in range(3)]
    threads.append(threading.Thread(target=open_and_check))
    for thread in threads:
        thread.start()
    assert child.wait(10)
    assert job._watcher is not None
    job._watcher.join(10)
    stop.set()
    for thread in threads:
        thread.join()
    assert registry.get(job.id, None).status == "exited"
    return lost


def test_the_end_of_a_job_is_taken_once_whoever_polls(tmp_path: Path) -> None:
    """The watcher and any number of pollers (job_status, tasks/get) see a job end while
    its end is being settled (its changes recorded, its .git looked at): its log is
    closed once, so no descriptor opened meanwhile is closed under its owner."""
    registry = JobRegistry(str(tmp_path / "jobs"))
    bystander = tmp_path / "bystander"
    bystander.write_bytes(b"")
    lost: list[int] = []
    try:
        for _ in range(20):
            lost += _end_while_polled(registry, tmp_path, bystander)
    finally:
        registry.shutdown()
    assert lost == [], f"{len(lost)} descriptors were closed under their owner"
