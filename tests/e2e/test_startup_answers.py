"""Answers before FastMCP has loaded (issue 36): initialize and tools/list come from what
the server wrote on an earlier start with the same key, byte for byte what it writes
itself; nothing an agent can write is ever served, and a kept answer that differs from
the server's own is caught, replaced and (for tools/list) announced as changed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "startup-test", "version": "1"},
    },
}
AFTER = [
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": "list", "method": "tools/list"},
    {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "read_file", "arguments": {"path": "a.txt"}},
    },
]


def session(ws: Path, cache: Path, *extra: str) -> tuple[list[bytes], str]:
    """One client session sent in a single write, as a fast client does; stdin stays open
    until the tools/call is answered. The raw answer lines and stderr."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    frames = b"".join(json.dumps(m).encode() + b"\n" for m in [INIT, *AFTER])
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent_workspace_mcp", "--root", str(ws), *extra],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin and proc.stdout and proc.stderr
    proc.stdin.write(frames)
    proc.stdin.flush()
    lines = []
    while line := proc.stdout.readline():
        lines.append(line.rstrip(b"\n"))
        if json.loads(line).get("id") == 3:
            break
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    lines += proc.stdout.read().splitlines()
    return lines, proc.stderr.read().decode()


def by_id(lines: list[bytes]) -> dict:
    return {json.loads(line).get("id", json.loads(line).get("method")): line for line in lines}


def kept(cache: Path) -> list[Path]:
    folder = cache / "agent-workspace-mcp" / "answers"
    return sorted(folder.glob("*.json")) if folder.exists() else []


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("startup") / "ws"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    return root


@pytest.fixture(scope="module")
def first_start(ws: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[list[bytes], Path]:
    """The answers of a first start (nothing kept yet: the server answers and keeps), and
    the cache it left: started once for the module, each test gets a copy to spoil."""
    cache = tmp_path_factory.mktemp("first") / "cache"
    answers, _ = session(ws, cache)
    return answers, cache


@pytest.fixture
def cache(first_start: tuple[list[bytes], Path], tmp_path: Path) -> Path:
    copy = tmp_path / "cache"
    shutil.copytree(first_start[1], copy)
    return copy


@pytest.fixture
def first(first_start: tuple[list[bytes], Path]) -> list[bytes]:
    return first_start[0]


def test_early_answers_are_the_servers_own_byte_for_byte(
    ws: Path, cache: Path, first: list[bytes]
) -> None:
    assert len(kept(cache)) == 2  # initialize and tools/list
    early, log = session(ws, cache)  # answered from what was kept, then checked
    plain, _ = session(ws, cache, "--no-startup-cache")
    assert "differed" not in log
    for answers in (early, plain):
        assert len(answers) == 3, answers  # nothing sent twice
        assert by_id(answers)[1] == by_id(first)[1]
        assert by_id(answers)["list"] == by_id(first)["list"]
        assert b"alpha" in by_id(answers)[3]  # the call after them reached the server
    assert len(json.loads(by_id(early)["list"])["result"]["tools"]) > 20


def test_a_kept_answer_that_differs_is_caught_and_replaced(
    ws: Path, cache: Path, first: list[bytes]
) -> None:
    """Something the key missed (here: the files edited by hand): the client gets what
    was kept, the server says so, keeps its own, and tells the client the tools changed."""
    for path in kept(cache):
        path.write_bytes(path.read_bytes().replace(b"read_file", b"read_fil3"))
    early, log = session(ws, cache)
    assert b"read_fil3" in by_id(early)["list"]  # proof it was answered from the cache
    assert "differed from the server's own" in log
    assert by_id(early)["notifications/tools/list_changed"]
    assert b"alpha" in by_id(early)[3]
    again, log = session(ws, cache)
    assert by_id(again)["list"] == by_id(first)["list"] and "differed" not in log


def test_an_agent_cannot_plant_answers(
    ws: Path, cache: Path, first: list[bytes], tmp_path: Path
) -> None:
    """Inside a root (where file tools write) the cache is never used; elsewhere a file
    others may write, or a link, is never read."""
    inside = ws / ".cache"
    session(ws, inside)
    session(ws, inside)
    assert kept(inside) == []

    files = kept(cache)
    for path in files:
        path.write_bytes(path.read_bytes().replace(b"read_file", b"read_fil3"))
    files[0].chmod(0o664)
    target = tmp_path / "planted.json"
    target.write_bytes(files[1].read_bytes())
    files[1].unlink()
    files[1].symlink_to(target)
    answers, log = session(ws, cache)
    assert b"read_fil3" not in b"".join(answers) and "differed" not in log
    assert by_id(answers)[1] == by_id(first)[1]
    assert not files[1].is_symlink()  # replaced by the server's own answer
    assert b"read_fil3" in target.read_bytes()  # and the link's target never written


def test_a_fifo_planted_as_an_entry_never_blocks_the_start(
    ws: Path, cache: Path, first: list[bytes]
) -> None:
    """Issue 43, item 19: a FIFO in place of a kept answer: the open blocked before the
    type check, so the server printed its ready line and never answered initialize."""
    import selectors

    for path in kept(cache):
        path.unlink()
        os.mkfifo(path, 0o600)
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent_workspace_mcp", "--root", str(ws)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert proc.stdin and proc.stdout
    try:
        proc.stdin.write(json.dumps(INIT).encode() + b"\n")
        proc.stdin.flush()
        with selectors.DefaultSelector() as waiting:
            waiting.register(proc.stdout, selectors.EVENT_READ)
            assert waiting.select(timeout=30), "initialize was never answered"
        line = proc.stdout.readline().rstrip(b"\n")
    finally:
        proc.kill()
        proc.wait()
    assert line == by_id(first)[1]
