"""Jobs shared between the workers of `--workers N` (issue 18): two registries on one
directory stand for two workers; planted records never make a worker signal anything."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from agent_workspace_mcp.core.errors import NotFoundError, WorkspaceError
from agent_workspace_mcp.core.exec.jobrecords import JobRecords, leader_alive, process_start
from agent_workspace_mcp.core.exec.jobs import JobRegistry
from agent_workspace_mcp.core.exec.process import Child, start_output_pump
from tests.helpers import wait_for


@pytest.fixture
def job_dir(tmp_path: Path) -> Path:
    path = tmp_path / "jobs"
    path.mkdir(mode=0o700)
    return path


def adopt(registry: JobRegistry, tmp_path: Path, script: str, owner: str | None = "alice"):
    child = Child(
        ["sh", "-c", script], executable=shutil.which("sh"), cwd=str(tmp_path), env=os.environ
    )
    return registry.adopt(
        child,
        command=script,
        cwd=str(tmp_path),
        owner=owner,
        name="demo",
        max_runtime_ms=60_000,
        replay=True,
    )


def test_a_job_is_seen_and_killed_through_another_worker(job_dir: Path, tmp_path: Path) -> None:
    one, two = JobRegistry(str(job_dir), shared=True), JobRegistry(str(job_dir), shared=True)
    job = adopt(one, tmp_path, "echo started; exec sleep 30")
    try:
        wait_for(lambda: two.tail(two.get(job.id, "alice"), 100) == "started\n")
        seen = two.get(job.id, "alice")
        assert (seen.name, seen.status, seen.exit_code) == ("demo", "running", None)
        assert [v.id for v in two.recent("alice")] == [job.id]
        for other in ("bob", None):
            with pytest.raises(NotFoundError, match=f"unknown job: {job.id}"):
                two.get(job.id, other)
            with pytest.raises(NotFoundError):
                two.kill(job.id, other)
            assert two.recent(other) == []
        assert job.child.running and two.running_count() == 1
        assert two.kill(job.id, "alice").status == "killed"
        wait_for(lambda: not job.child.running)
        # The worker that started it reaps it and keeps the kill in the record.
        wait_for(lambda: JobRecords(str(job_dir)).read(job.id)["status"] == "killed")
        assert one.get(job.id, "alice").status == "killed"
        assert two.get(job.id, "alice").exit_code == -signal.SIGTERM
        assert two.running_count() == 0
    finally:
        one.shutdown()


def test_handed_off_output_is_complete_and_in_order(job_dir: Path, tmp_path: Path) -> None:
    """The pump thread hands the pipe to a process mid-stream: nothing lost or reordered,
    including what was printed before the job was adopted (the replay)."""
    registry = JobRegistry(str(job_dir), shared=True)
    script = "i=0; while [ $i -lt 3000 ]; do echo line-$i; i=$((i+1)); done"
    job = adopt(registry, tmp_path, script)
    try:
        wait_for(lambda: registry.get(job.id, "alice").status == "exited")
        expected = "".join(f"line-{i}\n" for i in range(3000))
        wait_for(lambda: Path(job.log.path).read_text() == expected)
        view = registry.get(job.id, "alice")
        assert (view.exit_code, view.log_size) == (0, len(expected))
    finally:
        registry.shutdown()


def test_the_output_pump_keeps_draining_past_its_cap(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    log = tmp_path / "log"
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    pump = start_output_pump(read_end, fd, 100)
    os.close(read_end)
    os.close(fd)
    for _ in range(64):  # 4 MiB: a pump that stopped reading would block this writer
        os.write(write_end, b"x" * 65536)
    os.close(write_end)
    assert pump.wait(timeout=10) == 0
    assert log.read_bytes() == b"x" * 100


@pytest.fixture
def victim():
    """A process that is not a job of ours, leading its own group."""
    proc = subprocess.Popen(["sleep", "30"], start_new_session=True)
    yield proc
    proc.kill()
    proc.wait()


def planted(records: JobRecords, pid: int, **changes) -> dict:
    record = {
        "id": "job-0123456789ab",
        "owner": "alice",
        "command": "sleep 30",
        "name": None,
        "cwd": "/",
        "pid": pid,
        "pid_start": process_start(pid)[0],
        "started_at": "x",
        "started_wall": time.time() - 3600,
        "max_runtime_ms": 1000,
        "status": "running",
        "exit_code": None,
        "ended_wall": None,
        "kill_requested": False,
        "timed_out": False,
        "log_cap": 100,
    }
    record.update(changes)
    records.write(record)
    return record


def test_a_record_must_name_the_very_process_it_started(job_dir: Path, victim) -> None:
    """A pid reused by another process has another start time: never signalled, even
    when the record is overdue (the supervisor's sweep) or killed through a worker."""
    records = JobRecords(str(job_dir))
    record = planted(records, victim.pid, pid_start=process_start(victim.pid)[0] - 1)
    assert records.read(record["id"]) == record and not leader_alive(record)
    assert records.overdue(0, parent=os.getpid()) == []
    records.signal_job(record, grace=0.1)
    JobRegistry(str(job_dir), shared=True).kill(record["id"], "alice")
    time.sleep(0.2)
    assert victim.poll() is None


def test_a_process_not_leading_its_group_is_never_signalled(job_dir: Path) -> None:
    records = JobRecords(str(job_dir))
    proc = subprocess.Popen(["sleep", "30"])  # in our own process group
    try:
        record = planted(records, proc.pid)
        assert leader_alive(record)
        records.signal_job(record, grace=0.1)
        time.sleep(0.2)
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("plant", ["symlink", "hard-link", "pid-1", "bad-shape", "other-uid"])
def test_untrusted_records_are_ignored(job_dir: Path, tmp_path: Path, victim, plant: str) -> None:
    records = JobRecords(str(job_dir))
    name = job_dir / "job-0123456789ab.json"
    if plant in ("symlink", "hard-link"):
        real = tmp_path / "real.json"
        good = JobRecords(str(tmp_path))
        planted(good, victim.pid, id="job-0123456789ab")
        (tmp_path / "job-0123456789ab.json").rename(real)
        if plant == "symlink":
            name.symlink_to(real)
        else:
            os.link(real, name)
    elif plant == "pid-1":
        planted(records, victim.pid)
        name.write_text(name.read_text().replace(f'"pid":{victim.pid}', '"pid":1'))
    elif plant == "bad-shape":
        planted(records, victim.pid)
        name.write_text(name.read_text().replace('"status":"running"', '"status":"run","x":1'))
    else:
        if os.geteuid() != 0:
            pytest.skip("chown to another uid needs root")
        planted(records, victim.pid)
        os.chown(name, 65534, 65534)
    assert records.read("job-0123456789ab") is None and records.all() == []
    assert records.overdue(0, parent=os.getpid()) == []
    registry = JobRegistry(str(job_dir), shared=True)
    with pytest.raises(NotFoundError):
        registry.kill("job-0123456789ab", "alice")
    assert registry.recent("alice") == [] and victim.poll() is None


def test_ids_that_are_not_job_ids_name_no_file(job_dir: Path) -> None:
    records = JobRecords(str(job_dir))
    for bad in ("../x", "job-0123456789ab/../../x", "job-XYZ", "", "job-0123456789abc"):
        assert records.read(bad) is None
    with pytest.raises(ValueError):
        records.write({"id": "../escape"})
    assert not (job_dir.parent / "escape.json").exists()


def test_the_supervisor_records_an_orphans_exit(job_dir: Path) -> None:
    """What `reaped` writes when the worker that started a job is gone."""
    records = JobRecords(str(job_dir))
    proc = subprocess.Popen(["sh", "-c", "sleep 0.3; exit 3"], start_new_session=True)
    record = planted(records, proc.pid)
    _, status = os.waitpid(proc.pid, 0)
    proc.returncode = 3  # keep Popen from waiting on a reaped pid
    records.reaped(proc.pid, status)
    after = records.read(record["id"])
    assert (after["status"], after["exit_code"]) == ("exited", 3)
    assert after["ended_wall"] is not None


def test_only_the_supervisors_own_overdue_orphans_are_swept(job_dir: Path, victim) -> None:
    """A live worker enforces its jobs' deadlines; the supervisor stops only the jobs it
    inherited (their parent is now itself), and each once."""
    records = JobRecords(str(job_dir))
    record = planted(records, victim.pid)  # an hour old, 1 s allowed
    assert records.overdue(0, parent=os.getpid()) == [record]
    someone_else = 1 if os.getpid() != 1 else 2  # pytest is pid 1 in a bare container
    assert records.overdue(0, parent=someone_else) == []  # someone else's child
    records.update(record["id"], timed_out=True)
    assert records.overdue(0, parent=os.getpid()) == []  # already being stopped


@pytest.mark.parametrize("plant", ["hard-link", "fifo"])
def test_a_planted_log_is_never_read(job_dir: Path, tmp_path: Path, plant: str) -> None:
    registry = JobRegistry(str(job_dir), shared=True)
    job = adopt(registry, tmp_path, "echo mine")
    try:
        wait_for(lambda: registry.get(job.id, "alice").status == "exited")
        log = Path(job.log.path)
        log.unlink()
        if plant == "hard-link":
            secret = tmp_path / "secret.txt"
            secret.write_text("host secret\n")
            os.link(secret, log)
        else:
            os.mkfifo(log)
        with pytest.raises(WorkspaceError, match="not the file this server wrote"):
            registry.tail(registry.get(job.id, "alice"), 100)
    finally:
        registry.shutdown()
