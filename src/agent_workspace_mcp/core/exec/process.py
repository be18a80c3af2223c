"""Running a child process the way every execution tool needs it.

- argv only, no shell; its own session/process group, so a kill reaches grandchildren;
- stdout and stderr on one pipe, so output arrives merged in the order it was written;
- a pump thread drains the pipe into a bounded buffer (everything up to 256 KiB, then
  the first and last 32 KiB) or, once handed to the job registry, into a capped log;
- the pump stops reading shortly after the child exits even if a grandchild that
  escaped the kill still holds the pipe, so a call can never hang on it;
- SIGTERM to the group, then SIGKILL after a grace period.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..limits import (
    KILL_GRACE_SECONDS,
    OUTPUT_COLLAPSE_BYTES,
    OUTPUT_HEAD_BYTES,
    OUTPUT_SHORTENED_ABOVE_BYTES,
    OUTPUT_TAIL_BYTES,
    PIPE_DRAIN_GRACE_SECONDS,
)

# Always removed from a child's environment (the backbone document's list).
SCRUBBED_ENV = ("MCP_TOKEN", "CONTROL_PLANE_API_KEY", "OPENAI_API_KEY", "OPENAI_ADMIN_KEY")
# issue 11: secrets are removed by the shape of their name, not by a list of known
# names, since every service invents its own (`MY_SERVICE_TOKEN`). Matched against the
# upper-cased name; `--pass-env NAME` lets a named variable through.
SECRET_NAME_PATTERNS = (
    "*TOKEN",
    "*TOKEN_*",
    "*SECRET",
    "*SECRET_*",
    "*SECRETS",
    "*_KEY",
    "*_KEYS",
    "*_KEY_*",
    "*API_KEY*",
    "*APIKEY*",
    "*PRIVATE_KEY*",
    "*PASSWORD*",
    "*PASSWD*",
    "*_PASS",
    "*PASSPHRASE*",
    "*CREDENTIAL",
    "*CREDENTIALS",
    "*CREDENTIALS_*",
    "*_AUTH",
    "*AUTH_TOKEN*",
    "*_PAT",
    "*COOKIE*",
    "*_DSN",
    "*DATABASE_URL*",
    "AWS_*",
    "SSH_AUTH_SOCK",
    "GPG_AGENT_INFO",
    "KRB5CCNAME",
)
# The shapes as one expression: every child's environment is checked name by name, and
# 28 fnmatch calls per name cost a git call ~0.5 ms (issue 36).
_SECRET_SHAPES = re.compile("|".join(fnmatch.translate(glob) for glob in SECRET_NAME_PATTERNS))
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def is_secret_name(name: str, extra: Iterable[str] = ()) -> bool:
    """Whether a variable name looks like a secret (built-in shapes or the `extra` globs)."""
    if name in SCRUBBED_ENV:
        return True
    upper = name.upper()
    if _SECRET_SHAPES.match(upper):
        return True
    return any(fnmatch.fnmatchcase(name, glob) for glob in extra if glob)


def scrubbed_env(
    base: Mapping[str, str],
    *,
    secrets: Iterable[str] = (),
    patterns: Iterable[str] = (),
    keep: Iterable[str] = (),
) -> dict[str, str]:
    """`base` minus secret-shaped names (SECRET_NAME_PATTERNS, the backbone list and
    `patterns`) unless named in `keep`, and minus any variable whose value is one of
    the server's own configured secrets, whatever it is called and even if kept."""
    secret_values = {s for s in secrets if s}
    kept = set(keep)
    env = {}
    for name, value in base.items():
        if value in secret_values:
            continue
        if name not in kept and is_secret_name(name, patterns):
            continue
        env[name] = value
    env["NO_COLOR"] = "1"
    env["FORCE_COLOR"] = "0"
    return env


if TYPE_CHECKING:
    from .effects import Watch
    from .staging import Stage


class OutputBuffer:
    """Keeps all output up to OUTPUT_COLLAPSE_BYTES, else the head and the tail."""

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self._lock = threading.Lock()

    def write(self, data: bytes) -> None:
        with self._lock:
            self.total += len(data)
            room = OUTPUT_COLLAPSE_BYTES - len(self.head)
            if room > 0:
                self.head += data[:room]
            self.tail += data
            if len(self.tail) > OUTPUT_TAIL_BYTES:
                del self.tail[: len(self.tail) - OUTPUT_TAIL_BYTES]

    @classmethod
    def of(cls, head: bytes, tail: bytes, total: int) -> OutputBuffer:
        """The buffer a run would have kept, from the start and end of its whole output
        (a job's log): the same shortening, so a task's result reads like a call's."""
        buffer = cls()
        buffer.head, buffer.tail, buffer.total = bytearray(head), bytearray(tail), total
        return buffer

    def text(self) -> str:
        """All output, or the head and the tail with a count of what was left out.

        The backbone document collapses above 256 KiB; the answer budget (issue 2: every
        answer under ~25k tokens, which clients enforce) collapses the same way above
        64 KiB, so the first 32 KiB and the last 32 KiB are what a model sees either way.
        """
        with self._lock:
            if self.total <= OUTPUT_SHORTENED_ABOVE_BYTES:
                raw = bytes(self.head)
                return strip_ansi(raw.decode("utf-8", "replace"))
            omitted = self.total - OUTPUT_HEAD_BYTES - len(self.tail)
            head = bytes(self.head[:OUTPUT_HEAD_BYTES]).decode("utf-8", "replace")
            tail = bytes(self.tail).decode("utf-8", "replace")
            return strip_ansi(f"{head}\n... [{omitted} bytes omitted] ...\n{tail}")


class CappedLog:
    """A job's log file: appends until the cap, then discards and remembers it did."""

    def __init__(self, path: str, cap: int) -> None:
        self.path = path
        self.cap = cap
        self.size = 0
        self.capped = False
        # O_EXCL: a job id is new, so an existing file at its name was planted.
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW
        self.fd = os.open(path, flags, 0o600)
        # Closed once, then -1: the number may already be another file's (a job record,
        # a client's socket), and a late write or second close would reach that.
        self._lock = threading.Lock()

    def write(self, data: bytes) -> None:
        with self._lock:
            if self.fd < 0:
                return  # the job ended: nothing more belongs in its log
            room = self.cap - self.size
            if room <= 0:
                self.capped = True
                return
            chunk = data[:room]
            if len(chunk) < len(data):
                self.capped = True
            os.write(self.fd, chunk)
            self.size += len(chunk)

    def close(self) -> None:
        with self._lock:
            fd, self.fd = self.fd, -1
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)


@dataclass
class Outcome:
    exit_code: int | None
    timed_out: bool
    killed: bool
    duration_ms: int


class Child:
    """A running command, its pump thread and its process group."""

    def __init__(
        self,
        argv: list[str],
        *,
        executable: str | None,
        cwd: str,
        env: Mapping[str, str],
        pass_fds: tuple[int, ...] = (),
    ) -> None:
        self.argv = argv
        self.started = time.monotonic()
        self.buffer = OutputBuffer()
        self._sinks: list[Any] = [self.buffer]
        self._sink_lock = threading.Lock()
        self.proc = subprocess.Popen(
            argv,
            executable=executable,
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            pass_fds=pass_fds,
        )
        self.pid = self.proc.pid
        self._handoff: tuple[Any, ...] | None = None  # (start_pump, done): see hand_off
        self._reading = True
        self._wake_r, self._wake_w = os.pipe2(os.O_CLOEXEC)
        self.finished = threading.Event()  # the pump is done: output complete, child reaped
        self.timed_out = False
        self.killed = False
        self.ended: float | None = None
        # What to look at once the command ended (core.exec.repoguard), run once by
        # whoever sees the end first (the run loop, or a job's watcher): notes for people.
        self.after: Callable[[], list[str]] | None = None
        # Its changes to the workspace, recorded (core.exec.effects): read by the run
        # loop when it ends in the call; as a job, `on_job_end(job_id, how)` records them.
        self.watch: Watch | None = None
        self.on_job_end: Callable[[str, str], str] | None = None
        # --stage-commands: the copy-on-write view it runs against (core.exec.staging).
        self.stage: Stage | None = None
        self._settled: list[str] | None = None
        self._settle_lock = threading.Lock()
        self._pump = threading.Thread(target=self._run_pump, name=f"pump-{self.pid}", daemon=True)
        self._pump.start()

    def add_sink(self, sink: Any, replay: bool = True) -> None:
        """Send further output to `sink` too (a job log), after what was captured so far."""
        with self._sink_lock:
            if replay:
                sink.write(self.buffer.text().encode("utf-8", "replace"))
            self._sinks.append(sink)

    def hand_off(self, start_pump: Any) -> None:
        """Stop reading the output here: the pump thread calls `start_pump(fd)` with the
        pipe (to give it to a process that outlives this one), then only waits for the
        child. Nothing to do if the output is already complete."""
        done = threading.Event()
        with self._sink_lock:
            if not self._reading:
                return
            self._handoff = (start_pump, done)
            with contextlib.suppress(OSError):  # under the lock: the pipe is still open
                os.write(self._wake_w, b"x")
        done.wait()

    def _run_pump(self) -> None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        exited_at: float | None = None
        try:
            while True:
                ready, _, _ = select.select([fd, self._wake_r], [], [], 0.1)
                if self._handoff is not None:
                    start_pump, done = self._handoff
                    try:
                        start_pump(fd)
                    finally:
                        done.set()
                    break
                if fd in ready:
                    data = os.read(fd, 65536)
                    if not data:
                        break
                    with self._sink_lock:
                        for sink in self._sinks:
                            sink.write(data)
                    continue
                if self.proc.poll() is not None:
                    exited_at = exited_at or time.monotonic()
                    # A grandchild may keep the pipe open forever; do not wait for it.
                    if time.monotonic() - exited_at > PIPE_DRAIN_GRACE_SECONDS:
                        break
        except OSError:
            pass
        finally:
            with self._sink_lock:
                self._reading = False
                for end in (self._wake_r, self._wake_w):
                    with contextlib.suppress(OSError):
                        os.close(end)
                if self._handoff is not None:
                    self._handoff[1].set()  # the output ended first: nothing to hand off
            self.proc.wait()
            self.ended = time.monotonic()
            self.proc.stdout.close()
            # Leftovers of the group (background helpers) must not outlive the command.
            self._signal_group(signal.SIGKILL)
            self.finished.set()

    def _signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signum)

    def kill(self, grace: float = KILL_GRACE_SECONDS) -> None:
        """SIGTERM to the whole group, SIGKILL after `grace` seconds if it is still there."""
        if self.finished.is_set():
            return
        self.killed = True
        self._signal_group(signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if self.proc.poll() is not None and not group_alive(self.pid):
                break
            time.sleep(0.02)
        self._signal_group(signal.SIGKILL)
        self.finished.wait(PIPE_DRAIN_GRACE_SECONDS + 5)

    def settle(self) -> list[str]:
        """Run `after` once the command ended (once, whoever asks); its notes."""
        with self._settle_lock:
            if self._settled is None:
                self._settled = []
                if self.after is not None:
                    try:
                        self._settled = self.after()
                    except Exception as exc:
                        self._settled = [f"what it did to .git could not be checked ({exc})"]
            return self._settled

    def look(self) -> list[str]:
        """While it runs: the same look as `settle` (a `.git` it created so far is removed
        now, not when it ends), without ending it; its notes."""
        with self._settle_lock:
            if self._settled is not None or self.after is None:
                return []
            try:
                return self.after()
            except Exception as exc:
                return [f"what it did to .git could not be checked ({exc})"]

    def wait(self, timeout: float | None) -> bool:
        """Wait for completion; True if finished within `timeout`."""
        return self.finished.wait(timeout)

    @property
    def running(self) -> bool:
        return not self.finished.is_set()

    def outcome(self) -> Outcome:
        end = self.ended or time.monotonic()
        code = self.proc.returncode
        return Outcome(code, self.timed_out, self.killed, int((end - self.started) * 1000))


# The pump that takes over a job's output when it must outlive the worker (issue 18):
# stdin is the job's pipe, stdout its log; it copies until EOF and drops what passes the
# cap. -I -S: no site, no environment, no user code; a few milliseconds to start.
_PUMP = (
    "import os,sys\nroom=int(sys.argv[1])\nwhile True:\n b=os.read(0,65536)\n"
    " if not b:break\n if room>0:\n  c=b[:room];os.write(1,c);room-=len(c)\n"
)


def start_output_pump(pipe_fd: int, log_fd: int, room: int) -> subprocess.Popen[bytes]:
    """A process of its own session (a kill of the job's group leaves it draining)."""
    return subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", _PUMP, str(max(room, 0))],
        stdin=pipe_fd,
        stdout=log_fd,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
        env={},
    )


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def describe_exit(outcome: Outcome, timeout_ms: int | None = None) -> str:
    if outcome.timed_out:
        return f"timed out after {timeout_ms} ms; process group killed ({outcome.duration_ms} ms)"
    code = outcome.exit_code
    if code is not None and code < 0:
        name = (
            signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
        )
        return f"killed by {name} ({outcome.duration_ms} ms)"
    return f"exit code {code} ({outcome.duration_ms} ms)"
