"""Background jobs on disk, so every worker of `--workers N` sees every job (issue 18).

One JSON record per job in the private job directory, next to its log: who owns it,
its command, its process (pid and the kernel's start time of that pid, so a reused pid
is never mistaken for the job), its deadline and, once known, how it ended. The worker
that started a job writes the record when it starts and when it ends; another worker
reads it to list, poll, tail or kill the job; the supervisor, which inherits a job whose
worker died (it is the child subreaper), records the exit code when it reaps it.

A record is trusted only if it is a regular file of ours with one link and a valid
shape, read without following symlinks: the directory is private (0700), but jobs run
as the same user, and a planted record must not make a worker signal someone else's
process group. Updates take one flock on the directory's lock file.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import secrets
import signal
import stat
import time
from collections.abc import Iterator
from typing import Any

from .. import safejson
from ..fdread import read_capped
from ..limits import JOB_RECORD_MAX_BYTES, KILL_GRACE_SECONDS
from .process import group_alive

JOB_ID = re.compile(r"^job-[0-9a-f]{12}$")
FINISHED = ("exited", "killed", "timed-out")
_FIELDS: dict[str, tuple[type, ...]] = {
    "id": (str,),
    "owner": (str, type(None)),
    "command": (str,),
    "name": (str, type(None)),
    "cwd": (str,),
    "pid": (int,),
    "pid_start": (int,),
    "started_at": (str,),
    "started_wall": (float, int),
    "max_runtime_ms": (int,),
    "status": (str,),
    "exit_code": (int, type(None)),
    "ended_wall": (float, int, type(None)),
    "kill_requested": (bool,),
    "timed_out": (bool,),
    "log_cap": (int,),
}


def process_start(pid: int) -> tuple[int, str, int] | None:
    """The pid's start time (clock ticks since boot), state letter and parent pid, or
    None if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    # The command name may contain spaces and parentheses: fields follow the last ')'.
    rest = raw[raw.rfind(b")") + 2 :].split()
    try:
        return int(rest[19]), rest[0].decode(), int(rest[1])
    except (IndexError, ValueError):
        return None


def leader_alive(record: dict[str, Any]) -> bool:
    """The job's own process still runs (not reaped, not a zombie, not a reused pid)."""
    found = process_start(record["pid"])
    return found is not None and found[0] == record["pid_start"] and found[1] != "Z"


class JobRecords:
    def __init__(self, directory: str) -> None:
        self.directory = directory

    def _path(self, job_id: str) -> str | None:
        return os.path.join(self.directory, f"{job_id}.json") if JOB_ID.match(job_id) else None

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(os.path.join(self.directory, ".records.lock"), flags, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def write(self, record: dict[str, Any]) -> None:
        """Replace the record atomically (a reader sees the old one or the new one)."""
        path = self._path(record["id"])
        if path is None:
            raise ValueError(f"bad job id {record['id']!r}")
        tmp = os.path.join(self.directory, f".{record['id']}.{secrets.token_hex(4)}.tmp")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(tmp, flags, 0o600)
        try:
            os.write(fd, json.dumps(record, separators=(",", ":")).encode())
        finally:
            os.close(fd)
        os.rename(tmp, path)

    def read(self, job_id: str) -> dict[str, Any] | None:
        path = self._path(job_id)
        if path is None:
            return None
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if (
                not stat.S_ISREG(st.st_mode)
                or st.st_uid != os.geteuid()
                or st.st_nlink != 1
                or st.st_size > JOB_RECORD_MAX_BYTES
            ):
                return None
            raw = read_capped(fd, JOB_RECORD_MAX_BYTES + 1)
        finally:
            os.close(fd)
        try:
            record = safejson.loads(raw)
        except ValueError:
            return None
        if not isinstance(record, dict) or set(record) != set(_FIELDS):
            return None
        for key, types in _FIELDS.items():
            value = record[key]
            if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
                return None
        if (
            record["id"] != job_id
            or record["pid"] <= 1
            or record["status"] not in ("running", *FINISHED)
        ):
            return None
        return record

    def all(self) -> list[dict[str, Any]]:
        try:
            names = os.listdir(self.directory)
        except OSError:
            return []
        found = []
        for name in names:
            if name.endswith(".json"):
                record = self.read(name[: -len(".json")])
                if record is not None:
                    found.append(record)
        return found

    def update(self, job_id: str, **changes: Any) -> dict[str, Any] | None:
        with self.locked():
            record = self.read(job_id)
            if record is None:
                return None
            record.update(changes)
            self.write(record)
            return record

    def finish(self, job_id: str, *, exit_code: int | None, timed_out: bool, killed: bool) -> None:
        """Record how a job ended; a kill asked for through another worker says `killed`."""
        with self.locked():
            record = self.read(job_id)
            if record is None or record["status"] != "running":
                return
            if timed_out or record["timed_out"]:
                status = "timed-out"
            elif killed or record["kill_requested"]:
                status = "killed"
            else:
                status = "exited"
            record.update(status=status, exit_code=exit_code, ended_wall=time.time())
            self.write(record)

    def reaped(self, pid: int, wait_status: int) -> None:
        """The supervisor reaped `pid`: if it was a job whose worker died, record its end."""
        for record in self.all():
            if record["pid"] == pid and record["status"] == "running":
                code = os.waitstatus_to_exitcode(wait_status)
                self.finish(record["id"], exit_code=code, timed_out=False, killed=False)

    def signal_job(self, record: dict[str, Any], *, grace: float = KILL_GRACE_SECONDS) -> None:
        """SIGTERM to the job's process group, SIGKILL after `grace`, like a local kill.
        The pid must still be the job's (start time) and lead its own group."""
        pid = record["pid"]
        if not leader_alive(record):
            return
        with contextlib.suppress(OSError):
            if os.getpgid(pid) != pid:
                return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if not leader_alive(record) and not group_alive(pid):
                break
            time.sleep(0.02)
        if leader_alive(record) or group_alive(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)

    def overdue(self, slack: float, parent: int) -> list[dict[str, Any]]:
        """Running jobs of `parent` (the supervisor, which inherits a job whose worker is
        gone; a live worker enforces its own deadlines) past their maxRuntimeMs by more
        than `slack` seconds, not already being stopped."""
        now = time.time()
        found = []
        for r in self.all():
            if r["status"] != "running" or r["timed_out"] or not leader_alive(r):
                continue
            if now > r["started_wall"] + r["max_runtime_ms"] / 1000 + slack:
                proc = process_start(r["pid"])
                if proc is not None and proc[2] == parent:
                    found.append(r)
        return found

    def prune(self, keep: int) -> None:
        """Forget the oldest finished records past `keep` (their logs stay, as before)."""
        records = sorted(self.all(), key=lambda r: r["started_wall"])
        finished = [r for r in records if r["status"] != "running"]
        for record in finished[: max(0, len(records) - keep)]:
            path = self._path(record["id"])
            if path is not None:
                with contextlib.suppress(OSError):
                    os.unlink(path)
