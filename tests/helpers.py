"""Helpers for talking to the server the way a model does."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import os
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:  # FastMCP's client costs pytest's controller 2 s it does not need
    from fastmcp import Client

T = TypeVar("T")


class Answer:
    """A tool result reduced to what a model sees: error flag and the text."""

    def __init__(self, result) -> None:
        self.is_error = bool(result.is_error)
        self.content = result.content
        self.text = "\n".join(
            getattr(block, "text", "") for block in result.content if getattr(block, "text", None)
        )

    def __repr__(self) -> str:
        return f"Answer(is_error={self.is_error}, text={self.text!r})"


async def call(client: Client, tool: str, **arguments) -> Answer:
    return Answer(await client.call_tool(tool, arguments, raise_on_error=False))


async def ok(client: Client, tool: str, **arguments) -> str:
    answer = await call(client, tool, **arguments)
    assert not answer.is_error, answer.text
    return answer.text


async def fails(client: Client, tool: str, **arguments) -> str:
    """Assert the call fails with exactly one line and that the server still answers."""
    answer = await call(client, tool, **arguments)
    assert answer.is_error, f"expected an error, got: {answer.text}"
    assert "\n" not in answer.text, f"error is not one line: {answer.text!r}"
    assert "Traceback" not in answer.text and answer.text.strip(), answer.text
    assert len(answer.text) < 400, answer.text
    assert await client.list_tools()  # the server still answers (any profile)
    return answer.text


def tree(root: Path) -> dict[str, bytes]:
    """Every file below root with its bytes, for "nothing changed" assertions.

    The server's own `.workspace-mcp/` state (journal, notes) is not workspace data.
    """
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if ".workspace-mcp" in dirnames:
            dirnames.remove(".workspace-mcp")
        for name in filenames:
            path = Path(dirpath) / name
            if not path.is_symlink():
                out[str(path.relative_to(root))] = path.read_bytes()
    return out


def sha(data: bytes | str) -> str:
    """The sha256 prefix that answers show."""
    raw = data.encode() if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()[:16]


def lines_of(text: str) -> str:
    """A read_file answer without its trailing `(sha256 ...)` line."""
    head, _, last = text.rpartition("\n")
    return head if last.startswith("(sha256 ") else text


# A 2025-11-25 `initialize` request, for raw JSON-RPC over stdio or HTTP.
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}


def raw_stdio_session(
    argv: list[str], requests: list[tuple[str, dict]], **popen: object
) -> dict[int, dict]:
    """A stdio server driven as a fast client drives it: `initialize`, then `requests`
    (method and params, ids 2, 3, ...) written at once, stdin kept open until each is
    answered, then closed; the server must exit 0. The answers, by id."""
    frames = [INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"}] + [
        {"jsonrpc": "2.0", "id": n, "method": method, "params": params}
        for n, (method, params) in enumerate(requests, start=2)
    ]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, **popen)  # type: ignore[call-overload]
    assert proc.stdin and proc.stdout
    proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in frames))
    proc.stdin.flush()
    answered: dict[int, dict] = {}
    while len(answered) < len(requests) + 1 and (line := proc.stdout.readline()):
        answer = json.loads(line)
        answered[answer.get("id")] = answer
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0
    return answered


def wait_for(predicate: Callable[[], object], timeout: float = 20, what: str = "it") -> None:
    """Poll `predicate` until it holds (never a fixed wait: a slow machine only waits
    longer, a fast one not at all); failing after `timeout` seconds names `what`."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


async def until(
    probe: Callable[[], T | Awaitable[T]], done: Callable[[T], object] = bool, timeout: float = 20
) -> T:
    """Poll `probe()` (awaited when it is a coroutine) until `done` holds for its value or
    `timeout` seconds passed, yielding to the loop between tries (an in-memory server
    runs on it); the last value either way, for the caller's assertion to show."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if inspect.isawaitable(value):
            value = await value
        if done(value) or time.monotonic() > deadline:
            return value  # type: ignore[return-value]
        await asyncio.sleep(0.05)


def fds_under(path: Path | str) -> int:
    """How many of this process's fds are on `path` or below it: what a test's own code
    holds, whatever other threads of the worker (an earlier test's job, a server) open
    or close meanwhile."""
    top = os.path.realpath(path)
    count = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:  # closed since the listing (the listing's own fd among them)
            continue
        count += target == top or target.startswith(top + os.sep)
    return count


def pid_alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie (a zombie holds nothing but its entry)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def pids_running(marker: str) -> list[int]:
    """Host pids whose command line holds `marker` (zombies excluded)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if marker.encode() in handle.read() and pid_alive(int(entry)):
                    found.append(int(entry))
        except OSError:
            continue
    return found


CI_REQUIRED = "[CI installs it]"


def requires(missing: str | None):
    """Skip with one line when the machine lacks a program a test needs (bubblewrap,
    podman, Node); under CI, which installs them all, the skip is a failure (conftest)."""
    import pytest

    return pytest.mark.skipif(missing is not None, reason=f"{missing} {CI_REQUIRED}")


def missing(reason: str):
    """The same, from inside a test or fixture."""
    import pytest

    pytest.skip(f"{reason} {CI_REQUIRED}")
