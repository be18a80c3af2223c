"""`--workers N`: N server processes on one port, under a small supervisor (issue 18).

The supervisor binds the port, then starts N workers (`python -m agent_workspace_mcp
__worker__ FD READY ...` with the user's own arguments) that accept on the inherited
socket; the kernel spreads connections between them. Workers serve **stateless** HTTP:
every request stands alone, so any worker can answer it and no session has to be
routed (sessions held in one worker's memory would break as soon as the next request
reached another). Whatever must be shared is on disk, under the existing locks:
journal, notes, changes and checkpoints in the state directory; background jobs as
records in one private job directory made for this supervisor (`core.exec.jobrecords`);
per-path edit locks as flocks in each workspace's state directory (`core.state.locks`);
metrics through prometheus-client's multiprocess files in the private directory.

The supervisor is the child subreaper: a job whose worker died is re-parented to it, so
it reaps the job and records the exit code, and kills a job that outlives its deadline.
A worker that dies is replaced after a short delay. SIGTERM or SIGINT stops the workers
(each kills its own jobs, as a single server does), then any job left over.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import hmac
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from ..core import limits
from ..core.exec.jobrecords import JobRecords, leader_alive
from ..core.exec.jobs import default_job_dir
from ..core.operator import say

WORKER_COMMAND = "__worker__"
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


def _prctl(option: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def listen_error(host: str, port: int, exc: OSError) -> str:
    """One line for a port that cannot be bound, saying how to pick another."""
    why = exc.strerror or str(exc)
    hint = (
        f"another program is using port {port}; choose another with --port N"
        if exc.errno == errno.EADDRINUSE
        else "check --host and --port"
    )
    return f"error: cannot listen on {host}:{port} ({why}): {hint}"


def shared_directory(job_dir: str | None) -> str:
    """A fresh private directory for this supervisor's jobs, locks and metrics."""
    parent = job_dir or default_job_dir()
    os.makedirs(parent, 0o700, exist_ok=True)
    shared = tempfile.mkdtemp(prefix="workers-", dir=parent)
    os.mkdir(os.path.join(shared, "metrics"), 0o700)
    # One secret for all workers, so what one worker signs or seals another accepts: a
    # console session, a 2026-07-28 request state (shared_key).
    key = os.path.join(shared, SHARED_KEY_FILE)
    fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(os.urandom(limits.CONSOLE_TOKEN_BYTES))
    return shared


SHARED_KEY_FILE = "shared.key"


def shared_key(shared: str, purpose: str) -> bytes:
    """In a worker: the supervisor's secret (see shared_directory), derived for one use."""
    fd = os.open(os.path.join(shared, SHARED_KEY_FILE), os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as key:
        secret = key.read(limits.CONSOLE_TOKEN_BYTES)
    return hmac.new(secret, purpose.encode(), hashlib.sha256).digest()


class Supervisor:
    def __init__(self, settings, argv: list[str]) -> None:
        self.settings = settings
        self.argv = argv
        self.workers: dict[int, subprocess.Popen] = {}
        self.spawned: dict[int, float] = {}
        # Set by the signal handler: a plain flag, because Event.set() takes the lock that
        # Event.wait() may hold in the interrupted main thread (a deadlock, seen in CI).
        self.stopping = False
        self.sock: socket.socket | None = None
        self.shared = ""
        self.records: JobRecords | None = None

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["WORKSPACE_MCP_JOB_DIR"] = self.shared
        env["PROMETHEUS_MULTIPROC_DIR"] = os.path.join(self.shared, "metrics")
        return env

    def _spawn(self) -> tuple[subprocess.Popen, int]:
        assert self.sock is not None
        ready_r, ready_w = os.pipe()
        command = [
            sys.executable,
            "-m",
            "agent_workspace_mcp",
            WORKER_COMMAND,
            str(self.sock.fileno()),
            str(ready_w),
            str(os.getpid()),
            *self.argv,
        ]
        try:
            # Its own process group: a Ctrl-C reaches the supervisor only, which then
            # stops the workers once (a second signal would make uvicorn skip cleanup).
            proc = subprocess.Popen(
                command,
                env=self._env(),
                pass_fds=(self.sock.fileno(), ready_w),
                process_group=0,
            )
        finally:
            os.close(ready_w)
        self.workers[proc.pid] = proc
        self.spawned[proc.pid] = time.monotonic()
        return proc, ready_r

    def _wait_ready(self, pending: dict[int, int]) -> str | None:
        """Each worker writes its ready line when it listens; None if one failed first."""
        line = None
        deadline = time.monotonic() + limits.WORKER_READY_SECONDS
        while pending:
            left = deadline - time.monotonic()
            if left <= 0 or self.stopping:
                return None
            ready, _, _ = select.select(list(pending), [], [], min(left, 0.25))
            for fd in ready:
                data = os.read(fd, 4096)
                os.close(fd)
                pending.pop(fd)
                if not data:
                    return None  # it exited before listening (it said why on stderr)
                line = line or data.decode().strip()
        return line

    def run(self) -> int:
        settings = self.settings
        if not _prctl(_PR_SET_CHILD_SUBREAPER, 1):
            say("error: --workers needs Linux (the supervisor must reap orphaned jobs)")
            return 2
        try:
            self.sock = listen(settings.host, settings.port)
        except OSError as exc:
            say(listen_error(settings.host, settings.port, exc))
            return 2
        self.shared = shared_directory(settings.job_dir)
        self.records = JobRecords(self.shared)
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._on_signal)
        pending = {}
        for _ in range(settings.workers):
            _, ready_r = self._spawn()
            pending[ready_r] = ready_r
        line = self._wait_ready(pending)
        if line is None:
            for fd in pending:
                os.close(fd)
            self._stop()
            return 0 if self.stopping else 2
        say(line.replace("; serving", f", {settings.workers} workers (stateless); serving", 1))
        self._supervise()
        self._stop()
        say("stopped, cleanup done")
        return 0

    def _on_signal(self, *_: object) -> None:
        self.stopping = True

    def _supervise(self) -> None:
        restart_at: list[float] = []
        quick_deaths = 0  # in a row: a worker that keeps dying is restarted ever more slowly
        next_sweep = 0.0
        while not self.stopping:
            for pid, code in self._reap():
                if pid in self.workers:
                    self.workers.pop(pid).returncode = code
                    lived = time.monotonic() - self.spawned.pop(pid, 0.0)
                    quick_deaths = quick_deaths + 1 if lived < limits.WORKER_STABLE_SECONDS else 0
                    delay = min(
                        limits.WORKER_RESTART_DELAY_SECONDS * 2 ** max(quick_deaths - 1, 0),
                        limits.WORKER_RESTART_MAX_DELAY_SECONDS,
                    )
                    say(f"worker {pid} exited ({code}); starting another in {delay:g} s")
                    restart_at.append(time.monotonic() + delay)
            now = time.monotonic()
            for when in [w for w in restart_at if w <= now]:
                restart_at.remove(when)
                _, ready_r = self._spawn()
                threading.Thread(target=_drain, args=(ready_r,), daemon=True).start()
            if now >= next_sweep:
                next_sweep = now + limits.ORPHAN_SWEEP_SECONDS
                self._kill_overdue()
            time.sleep(limits.SUPERVISOR_TICK_SECONDS)

    def _reap(self) -> list[tuple[int, int]]:
        """Every child that ended: workers, and jobs (or their output pumps) inherited
        from a worker that died, whose end goes into the job's record."""
        ended = []
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if pid in self.workers:
                ended.append((pid, os.waitstatus_to_exitcode(status)))
            elif self.records is not None:
                self.records.reaped(pid, status)
        return ended

    def _kill_overdue(self) -> None:
        """A job past its deadline whose worker is gone (the worker kills its own)."""
        assert self.records is not None
        for record in self.records.overdue(
            limits.ORPHAN_DEADLINE_SLACK_SECONDS, parent=os.getpid()
        ):
            self.records.update(record["id"], timed_out=True)
            threading.Thread(target=self.records.signal_job, args=(record,), daemon=True).start()

    def _stop(self) -> None:
        for proc in self.workers.values():
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + limits.WORKER_STOP_SECONDS
        while self.workers and time.monotonic() < deadline:
            for pid, code in self._reap():
                if pid in self.workers:
                    self.workers.pop(pid).returncode = code
            time.sleep(0.05)
        for proc in self.workers.values():
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        if self.records is not None:
            # Jobs whose worker died earlier have no one else to stop them.
            leftovers = [
                r for r in self.records.all() if r["status"] == "running" and leader_alive(r)
            ]
            threads = [
                threading.Thread(target=self.records.signal_job, args=(r,), daemon=True)
                for r in leftovers
            ]
            for thread in threads:
                thread.start()
            # Reap meanwhile: a killed orphan is our child, and its zombie would keep its
            # process group "alive" to the killer until the grace ran out.
            deadline = time.monotonic() + limits.KILL_GRACE_SECONDS + 2
            while any(t.is_alive() for t in threads) and time.monotonic() < deadline:
                self._reap()
                time.sleep(0.02)
        time.sleep(0.05)
        self._reap()
        if self.sock is not None:
            self.sock.close()
        if self.shared:
            # Metrics live as long as the run; job records and logs stay, as a single
            # server's logs do.
            shutil.rmtree(os.path.join(self.shared, "metrics"), ignore_errors=True)


def _drain(fd: int) -> None:
    with contextlib.suppress(OSError):
        while os.read(fd, 4096):
            pass
        os.close(fd)


def as_worker(handoff: list[str]) -> tuple[socket.socket, int]:
    """In a worker (`handoff`: socket fd, ready fd, supervisor pid): die with the
    supervisor, and take the listening socket."""
    socket_fd, ready_fd, supervisor = (int(x) for x in handoff)
    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != supervisor:
        sys.exit(0)  # the supervisor was gone before the line above took effect
    return socket.socket(fileno=socket_fd), ready_fd
