"""Issue 28 item 14: temp files an interrupted write left are removed at the next start:
only ours (pattern, regular, one link, our uid, stale), never in .git."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from agent_workspace_mcp import Settings
from agent_workspace_mcp.configuration import preflight
from agent_workspace_mcp.core.sweep import sweep_temp_files
from tests.helpers import ok

OLD = time.time() - 3600


def plant(path: Path, data: bytes = b"half a write") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.utime(path, (OLD, OLD))
    return path


def test_only_our_stale_temp_files_are_removed(ws: Path, outside: Path) -> None:
    stale = [
        plant(ws / ".a.txt.0123abcd.awm-tmp"),
        plant(ws / "deep" / "er" / ".b.py.deadbeef.awm-tmp"),
        plant(ws / ".workspace-mcp" / "checkpoints" / ".x.0123abcd.awm-tmp"),  # ours too
    ]
    kept = [
        plant(ws / ".a.txt.awm-tmp"),  # not our pattern
        plant(ws / "a.txt.0123abcd.awm-tmp"),  # no leading dot
        plant(ws / ".git" / ".config.0123abcd.awm-tmp"),  # never inside .git
        ws / ".fresh.0123abcd.awm-tmp",  # may be another server's write in flight
    ]
    kept[-1].write_bytes(b"in flight")
    linked = plant(ws / ".hard.0123abcd.awm-tmp")
    os.link(linked, outside / "other-name")  # a hard link: its other name is someone's file
    kept.append(linked)
    (ws / ".link.0123abcd.awm-tmp").symlink_to(outside / "secret.txt")
    ws_obj = preflight(Settings(root=str(ws))).primary
    assert sweep_temp_files(ws_obj) == 3
    assert not any(p.exists() for p in stale)
    assert all(p.exists() for p in kept)
    assert (ws / ".link.0123abcd.awm-tmp").is_symlink()
    assert (outside / "secret.txt").read_text() == "top secret\n"


@pytest.mark.slow  # spawns and kills servers
def test_a_killed_write_leaves_nothing_after_the_next_start(ws: Path) -> None:
    """A real server SIGKILLed while writing a large file over and over, then started again."""
    script = (
        "import asyncio, sys\n"
        "from fastmcp import Client\n"
        "from agent_workspace_mcp import Settings, create_server\n"
        "async def main():\n"
        f"    async with Client(create_server(Settings(root={str(ws)!r}, audit=False))) as c:\n"
        "        print('ready', flush=True)\n"
        "        while True:\n"
        "            await c.call_tool('write_file', {'path': 'big.txt', 'content': 'x' * 8_000_000})\n"
        "asyncio.run(main())\n"
    )
    left: list[Path] = []
    for _ in range(20):  # until a kill lands between the temp file and its rename
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        # Kill the moment a temp file is seen (not after a fixed sleep: on a loaded
        # machine that rarely fell inside the write).
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not any(
            entry.name.endswith(".awm-tmp") for entry in os.scandir(ws)
        ):
            pass
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        left = [*ws.glob(".big.txt.*.awm-tmp"), *ws.glob(".workspace-mcp/**/.*.awm-tmp")]
        if left:
            break
    assert left, "no kill landed mid-write in 20 tries"
    for path in left:
        os.utime(path, (OLD, OLD))  # as after a restart past TMP_STALE_SECONDS
    ws_obj = preflight(Settings(root=str(ws))).primary
    assert sweep_temp_files(ws_obj) == len(left)
    assert not list(ws.glob("**/.*.awm-tmp"))


def gone_within(path: Path, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return not path.exists()


async def test_a_server_sweeps_when_it_first_serves_not_when_built(ws: Path) -> None:
    """Library use: a server only built (to list its tools, to check a configuration)
    walks nothing; the first client makes it sweep, once."""
    from fastmcp import Client

    from agent_workspace_mcp import create_server

    def sweeps() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name == "awm-temp-sweep"}

    stale = plant(ws / ".c.txt.0123abcd.awm-tmp")
    before = sweeps()
    server = create_server(Settings(root=str(ws)))
    assert sweeps() <= before  # built: no sweep started
    async with Client(server) as client:
        await ok(client, "workspace_list")
    async with Client(server) as client:  # a second client starts no second sweep
        await ok(client, "workspace_list")
    assert len(sweeps() - before) <= 1
    assert gone_within(stale)


@pytest.mark.slow  # spawns the CLI
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_cli_sweeps_at_start_before_any_client(ws: Path, transport: str) -> None:
    stale = plant(ws / ".c.txt.0123abcd.awm-tmp")
    if transport == "http":
        from tests.e2e.http_server import start

        server = start(ws, "--no-auth", log_dir=ws.parent)
        try:
            assert gone_within(stale), server.stderr()
        finally:
            assert server.stop() == 0
        return
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent_workspace_mcp", "--root", str(ws)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert gone_within(stale)
    finally:
        assert proc.stdin
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
        assert proc.stderr and b"removed 1 temp file(s)" in proc.stderr.read()
