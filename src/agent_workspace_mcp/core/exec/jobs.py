"""Background jobs: detached commands that outlive the call that started them.

The registry belongs to the server process (owned by the lifespan, shut down with it),
not to an MCP session: a client that disconnects, times out or speaks the sessionless
protocol reads the same jobs afterwards. Job ids are random and unguessable, and each
job records its owner (the authenticated subject over HTTP); another owner is told
the job does not exist, because an id is a handle, not a credential.

Output goes through the child's pump into a log file outside the workspace, capped at
64 MiB. A watcher thread enforces `maxRuntimeMs`; `shutdown()` kills every running
job's process group, so a stopped server leaves no orphans.

Shared (`--workers N`, issue 18): every job also has a record on disk (`jobrecords`)
that the other workers read, and its output is handed to a small pump process of its
own, so a job outlives the worker that started it (the supervisor then reaps it).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..echo import echo
from ..errors import NotFoundError, WorkspaceError
from ..limits import (
    JOB_GUARD_SECONDS,
    JOB_LIST_RECENT,
    JOB_LOG_CAP_BYTES,
    JOBS_REMEMBERED,
    OUTPUT_COLLAPSE_BYTES,
    OUTPUT_TAIL_BYTES,
    REMOTE_KILL_WAIT_SECONDS,
)
from .jobrecords import JobRecords, leader_alive, process_start
from .process import (
    CappedLog,
    Child,
    Outcome,
    OutputBuffer,
    describe_exit,
    start_output_pump,
    strip_ansi,
)


def _read_log(log_path: str, job_id: str, spans: list[tuple[int, int]]) -> tuple[int, list[bytes]]:
    """The log's size and the bytes at each (offset, size) span; negative offsets count
    from the end."""
    try:
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        fd = os.open(log_path, flags)
    except OSError as exc:
        raise WorkspaceError(f"the log of {job_id} cannot be read ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        # Logs are made O_EXCL, one link, regular: anything else at the name was
        # planted (a hard link to another file, a FIFO that would hang the read).
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            raise WorkspaceError(f"the log of {job_id} is not the file this server wrote")
        chunks = []
        for offset, size in spans:
            start = max(0, st.st_size + offset if offset < 0 else offset)
            chunks.append(os.pread(fd, size, start))
    finally:
        os.close(fd)
    return st.st_size, chunks


def log_tail(log_path: str, job_id: str, size: int) -> str:
    """The last `size` bytes of a job's log, ANSI stripped (job_status, the console)."""
    _, (data,) = _read_log(log_path, job_id, [(-size, size)])
    return strip_ansi(data.decode("utf-8", "replace"))


def command_answer(command: str, output: str, status: str) -> str:
    """What a command tool answers once its command ended."""
    return f"$ {command}\n{output.rstrip(chr(10)) or '(no output)'}\n[{status}]"


def job_answer(job: JobView) -> str:
    """The answer the call that became `job` would have given had it waited: its whole
    output shortened as a call shortens it, and how it ended (the task's result)."""
    total, (head, tail) = _read_log(
        job.log_path, job.id, [(0, OUTPUT_COLLAPSE_BYTES), (-OUTPUT_TAIL_BYTES, OUTPUT_TAIL_BYTES)]
    )
    output = OutputBuffer.of(head, tail, total).text()
    outcome = Outcome(
        job.exit_code, job.status == "timed-out", job.status == "killed", job.duration_ms
    )
    return command_answer(job.command, output, describe_exit(outcome, job.max_runtime_ms))


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


@dataclass(frozen=True)
class JobView:
    """What the job tools say about a job, from this process or from its record."""

    id: str
    name: str | None
    command: str
    status: str
    exit_code: int | None
    duration_ms: int
    log_path: str
    log_size: int
    log_capped: bool
    max_runtime_ms: int
    started: float  # wall-clock seconds


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
    handed_off: bool = False  # its output goes through a pump process (shared mode)
    _watcher: threading.Thread | None = field(default=None, repr=False)
    _settle_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _settled: bool = False

    @property
    def pid(self) -> int:
        return self.child.pid

    def duration_ms(self) -> int:
        end = self.child.ended if self.child.ended is not None else time.monotonic()
        return int((end - self.child.started) * 1000)

    def settle(self) -> None:
        """Once the job ended: what it did to .git / .workspace-mcp, into its log (once,
        whoever sees the end first: the watcher, or a job_status that closes the log)."""
        with self._settle_lock:
            if self._settled:
                return
            self._settled = True
            notes = self.child.settle()
            record = self.child.on_job_end
            if record is not None:
                child = self.child
                how = (
                    "timed out"
                    if child.timed_out
                    else "killed"
                    if child.killed
                    else f"exit {child.proc.returncode}"
                )
                try:
                    line = record(self.id, how)
                except Exception as exc:  # never the watcher's end: the log says so
                    line = f"changes could not be recorded ({exc})"
                if line:
                    notes = [*notes, line]
            for note in notes:
                with contextlib.suppress(OSError):
                    self.log.write(f"\n[agent-workspace-mcp: the job {note}]\n".encode())

    def refresh(self) -> None:
        if self.status != "running" or self.child.running:
            return
        self.settle()
        # Every poller that saw the end waited in settle(): one of them takes it.
        with self._settle_lock:
            if self.status != "running":
                return
            self.log.close()
            if self.child.timed_out:
                self.status = "timed-out"
            elif self.child.killed:
                self.status = "killed"
            else:
                self.status = "exited"

    def view(self) -> JobView:
        size, capped = self.log.size, self.log.capped
        if self.handed_off:
            try:
                size = os.lstat(self.log.path).st_size
            except OSError:
                size = 0
            capped = size >= self.log.cap
        code = self.child.proc.returncode if self.status != "running" else None
        return JobView(
            self.id,
            self.name,
            self.command,
            self.status,
            code,
            self.duration_ms(),
            self.log.path,
            size,
            capped,
            self.max_runtime_ms,
            self.started_at.timestamp(),
        )


def _record_view(record: dict[str, Any], log_path: str) -> JobView:
    status = record["status"]
    if status == "running" and not leader_alive(record):
        status = "exited"  # its reaper is about to record the exit code
    end = record["ended_wall"] if record["ended_wall"] is not None else time.time()
    try:
        size = os.lstat(log_path).st_size
    except OSError:
        size = 0
    return JobView(
        record["id"],
        record["name"],
        record["command"],
        status,
        record["exit_code"],
        int((end - record["started_wall"]) * 1000),
        log_path,
        size,
        size >= record["log_cap"],
        record["max_runtime_ms"],
        record["started_wall"],
    )


class JobRegistry:
    def __init__(self, job_dir: str, *, shared: bool = False) -> None:
        self.job_dir = job_dir
        self.shared = shared  # other workers read and kill our jobs through their records
        # Moved with job_dir when that is not private (_ensure_dir); shared mode refuses.
        self.records = JobRecords(job_dir)
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
        if self.shared and not _private_dir(self.job_dir):
            # Workers must agree on one directory: a substitute would hide jobs.
            raise WorkspaceError(f"the shared job directory {self.job_dir} is not private")
        if not _private_dir(self.job_dir):
            fresh = tempfile.mkdtemp(prefix="workspace-mcp-jobs-")
            from ..operator import say

            say(
                f"job log directory {self.job_dir} is not private to this user (owner, mode "
                f"0700, no symlink); using {fresh} instead"
            )
            self.job_dir = fresh
            self.records = JobRecords(fresh)  # never the untrusted directory's records
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
        if self.shared:
            self._write_record(job)
            self._share(job)
        else:
            with contextlib.suppress(OSError, WorkspaceError):  # only the console reads it
                self._write_record(job)
        with self._lock:
            self._jobs[job_id] = job
            self._forget_old()
        job._watcher.start()
        return job

    def _write_record(self, job: Job) -> None:
        """Write the job's record: other workers (shared mode) and the operator console
        (any mode) see and stop the job through it."""
        found = process_start(job.pid)
        started = job.started_at.timestamp() - (time.monotonic() - job.child.started)
        record = {
            "id": job.id,
            "owner": job.owner,
            "command": job.command,
            "name": job.name,
            "cwd": job.cwd,
            "pid": job.pid,
            "pid_start": found[0] if found else 0,
            "started_at": job.started_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "started_wall": started,
            "max_runtime_ms": job.max_runtime_ms,
            "status": "running",
            "exit_code": None,
            "ended_wall": None,
            "kill_requested": False,
            "timed_out": False,
            "log_cap": job.log.cap,
        }
        self.records.write(record)
        self.records.prune(JOBS_REMEMBERED)

    def _share(self, job: Job) -> None:
        """Move the job's output to a pump process of its own (it outlives this worker)."""

        def start_pump(pipe_fd: int) -> None:
            pump = start_output_pump(pipe_fd, job.log.fd, job.log.cap - job.log.size)
            job.handed_off = True
            threading.Thread(target=pump.wait, name=f"reap-pump-{job.id}", daemon=True).start()

        job.child.hand_off(start_pump)

    def _watch(self, job: Job) -> None:
        deadline = job.child.started + job.max_runtime_ms / 1000
        # A long job is looked at while it runs too: a `.git` with hooks it creates must
        # not wait for its end, when the user may have committed meanwhile (issue 43).
        while not job.child.wait(max(0.0, min(JOB_GUARD_SECONDS, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                job.child.timed_out = True  # before the kill, so no reader sees "killed"
                job.child.kill()
                break
            for note in job.child.look():
                with contextlib.suppress(OSError):
                    job.log.write(f"\n[agent-workspace-mcp: the job {note}]\n".encode())
        job.settle()
        job.refresh()
        with contextlib.suppress(OSError, WorkspaceError):
            child = job.child
            self.records.finish(
                job.id,
                exit_code=child.proc.returncode,
                timed_out=child.timed_out,
                killed=child.killed,
            )

    def _forget_old(self) -> None:
        finished = [j for j in self._jobs.values() if not j.child.running]
        while len(self._jobs) > JOBS_REMEMBERED and finished:
            self._jobs.pop(finished.pop(0).id, None)

    def _local(self, job_id: str, owner: str | None) -> Job | None:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None or job.owner != owner:
            return None
        job.refresh()
        return job

    def _record(self, job_id: str, owner: str | None) -> dict[str, Any] | None:
        """The job's record on disk: a worker's job (shared mode), or one this server's
        earlier run started (issue 43: after a restart, tasks/get said "unknown taskId"
        for finished jobs whose records were still there)."""
        record = self.records.read(job_id)
        return record if record is not None and record["owner"] == owner else None

    def _view(self, record: dict[str, Any]) -> JobView:
        return _record_view(record, os.path.join(self.job_dir, f"{record['id']}.log"))

    def _local_view(self, job: Job) -> JobView:
        view = job.view()
        if self.shared and view.status != "running":
            record = self.records.read(job.id)  # a kill through another worker says so there
            if record is not None and record["status"] not in ("running", view.status):
                view = JobView(**{**view.__dict__, "status": record["status"]})
        return view

    def get(self, job_id: str, owner: str | None) -> JobView:
        job = self._local(job_id, owner)
        if job is not None:
            return self._local_view(job)
        record = self._record(job_id, owner)
        if record is None:
            raise NotFoundError(
                f"unknown job: {echo(job_id)} (job_status without jobId lists yours)"
            )
        return self._view(record)

    def recent(self, owner: str | None) -> list[JobView]:
        with self._lock:
            jobs = [j for j in self._jobs.values() if j.owner == owner]
        for job in jobs:
            job.refresh()
        if not self.shared:
            return [self._local_view(j) for j in reversed(jobs)][:JOB_LIST_RECENT]
        records = [r for r in self.records.all() if r["owner"] == owner]
        records.sort(key=lambda r: r["started_wall"], reverse=True)
        return [self._view(r) for r in records[:JOB_LIST_RECENT]]

    def kill(self, job_id: str, owner: str | None) -> JobView:
        job = self._local(job_id, owner)
        if job is not None:
            if job.child.running:
                job.child.kill()
            job.refresh()
            return self._local_view(job)
        record = self._record(job_id, owner)
        if record is None:
            return self.get(job_id, owner)  # the one "unknown job" answer
        if record["status"] == "running" and leader_alive(record):
            # Another worker (or the supervisor) reaps it and records `killed`.
            self.records.update(job_id, kill_requested=True)
            self.records.signal_job(record)
            deadline = time.monotonic() + REMOTE_KILL_WAIT_SECONDS
            while time.monotonic() < deadline:
                record = self.records.read(job_id) or record
                if record["status"] != "running":
                    break
                time.sleep(0.02)
        view = self._view(record)
        if view.status == "exited" and record["status"] == "running":
            view = JobView(**{**view.__dict__, "status": "killed"})
        return view

    def tail(self, job: JobView, size: int) -> str:
        return log_tail(job.log_path, job.id, size)

    def still_changing(self, root: str) -> list[str]:
        """The running jobs (of this process) whose changes to the workspace at `root`
        are recorded when they end, as `job-… (`command`)`."""
        with self._lock:
            jobs = list(self._jobs.values())
        return [
            f"{job.id} (`{job.command}`)"
            for job in jobs
            if job.child.running and job.child.watch is not None and job.child.watch.ws.root == root
        ]

    def running_count(self) -> int:
        """Jobs whose process is still running (the metrics gauge): every worker's when
        shared."""
        if self.shared:
            return sum(
                1 for r in self.records.all() if r["status"] == "running" and leader_alive(r)
            )
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
