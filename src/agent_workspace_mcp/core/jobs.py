"""Background jobs: detached commands that outlive the call that started them.

The registry belongs to the server process (owned by the lifespan, shut down with it),
not to an MCP session: a client that disconnects, times out or speaks the sessionless
protocol reads the same jobs afterwards. Job ids are random and unguessable, and each
job records its owner (the authenticated subject over HTTP); another owner is told
the job does not exist, because an id is a handle, not a credential.

Output goes through the child's pump into a log file outside the workspace, capped at
64 MiB. A watcher thread enforces `maxRuntimeMs`; `shutdown()` kills every running
job's process group, so a stopped server leaves no orphans.
"""

from __future__ import annotations

import os
import secrets
import stat
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime

from .echo import echo
from .errors import NotFoundError, WorkspaceError
from .limits import JOB_LIST_RECENT, JOB_LOG_CAP_BYTES, JOBS_REMEMBERED
from .process import CappedLog, Child, strip_ansi


def default_job_dir() -> str:
    """The shared temp directory's `workspace-mcp-jobs` (checked before use, see below)."""
    return os.path.join(tempfile.gettempdir(), "workspace-mcp-jobs")


def _private_dir(path: str) -> bool:
    """Create `path` (0700) if missing; True when it is a real directory owned by us, 0700."""
    try:
        parent = os.path.dirname(path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return False
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (
        stat.S_ISDIR(st.st_mode)
        and st.st_uid == os.geteuid()
        and stat.S_IMODE(st.st_mode) & 0o077 == 0
    )


@dataclass
class Job:
    id: str
    owner: str | None
    command: str
    name: str | None
    cwd: str
    child: Child
    log: CappedLog
    started_at: datetime
    max_runtime_ms: int
    status: str = "running"
    ended_at: float | None = None
    _watcher: threading.Thread | None = field(default=None, repr=False)

    @property
    def pid(self) -> int:
        return self.child.pid

    def duration_ms(self) -> int:
        end = self.child.ended if self.child.ended is not None else time.monotonic()
        return int((end - self.child.started) * 1000)

    def refresh(self) -> None:
        if self.status == "running" and not self.child.running:
            if self.child.timed_out:
                self.status = "timed-out"
            elif self.child.killed:
                self.status = "killed"
            else:
                self.status = "exited"
            self.log.close()


class JobRegistry:
    def __init__(self, job_dir: str) -> None:
        self.job_dir = job_dir
        self._checked = False
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._lock = threading.Lock()

    def _ensure_dir(self) -> None:
        """Make sure logs go to a private directory: ours, 0700, not a symlink.

        The default lives in the shared temp directory, where another user (or anything
        that can write there) may have created it first, or planted a symlink at its
        name to collect our logs or redirect them. Such a directory is never used: the
        logs go to a fresh private one instead, and the operator is told once.
        """
        if self._checked:
            return
        if not _private_dir(self.job_dir):
            fresh = tempfile.mkdtemp(prefix="workspace-mcp-jobs-")
            from ..console import say

            say(
                f"job log directory {self.job_dir} is not private to this user (owner, mode "
                f"0700, no symlink); using {fresh} instead"
            )
            self.job_dir = fresh
        self._checked = True

    def adopt(
        self,
        child: Child,
        *,
        command: str,
        cwd: str,
        owner: str | None,
        name: str | None,
        max_runtime_ms: int,
        replay: bool,
    ) -> Job:
        """Register a running child as a job; its output (and, if `replay`, what it has
        printed so far) goes to the job's log from now on."""
        self._ensure_dir()
        job_id = "job-" + secrets.token_hex(6)
        log = CappedLog(os.path.join(self.job_dir, f"{job_id}.log"), JOB_LOG_CAP_BYTES)
        child.add_sink(log, replay=replay)
        job = Job(
            job_id,
            owner,
            command,
            name,
            cwd,
            child,
            log,
            datetime.now(UTC),
            max_runtime_ms,
        )
        job._watcher = threading.Thread(
            target=self._watch, args=(job,), name=f"watch-{job_id}", daemon=True
        )
        with self._lock:
            self._jobs[job_id] = job
            self._forget_old()
        job._watcher.start()
        return job

    def _watch(self, job: Job) -> None:
        remaining = job.max_runtime_ms / 1000 - (time.monotonic() - job.child.started)
        if not job.child.wait(max(remaining, 0)):
            job.child.timed_out = True  # before the kill, so no reader sees "killed"
            job.child.kill()
        job.refresh()

    def _forget_old(self) -> None:
        finished = [j for j in self._jobs.values() if not j.child.running]
        while len(self._jobs) > JOBS_REMEMBERED and finished:
            self._jobs.pop(finished.pop(0).id, None)

    def get(self, job_id: str, owner: str | None) -> Job:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None or job.owner != owner:
            raise NotFoundError(
                f"unknown job: {echo(job_id)} (job_status without jobId lists yours)"
            )
        job.refresh()
        return job

    def recent(self, owner: str | None) -> list[Job]:
        with self._lock:
            jobs = [j for j in self._jobs.values() if j.owner == owner]
        for job in jobs:
            job.refresh()
        return list(reversed(jobs))[:JOB_LIST_RECENT]

    def kill(self, job_id: str, owner: str | None) -> Job:
        job = self.get(job_id, owner)
        if job.child.running:
            job.child.kill()
        job.refresh()
        return job

    def tail(self, job: Job, size: int) -> str:
        try:
            fd = os.open(job.log.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            raise WorkspaceError(f"the log of {job.id} cannot be read ({exc.strerror})") from None
        try:
            end = os.fstat(fd).st_size
            data = os.pread(fd, size, max(0, end - size))
        finally:
            os.close(fd)
        return strip_ansi(data.decode("utf-8", "replace"))

    def running_count(self) -> int:
        """Jobs whose process is still running (the metrics gauge)."""
        with self._lock:
            return sum(1 for job in self._jobs.values() if job.child.running)

    def shutdown(self) -> None:
        with self._lock:
            running = [j for j in self._jobs.values() if j.child.running]
        threads = [threading.Thread(target=j.child.kill, daemon=True) for j in running]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        for job in running:
            job.refresh()
