"""A command's changes are changes (issue 46): real commands, sandboxed and not, change
the tree; the answer says what changed, work_log and review_changes show it, and undo
puts the tree back byte for byte (modes and links included)."""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from fastmcp import Client

from agent_workspace_mcp import Settings
from agent_workspace_mcp.core import limits
from tests.conftest import open_client
from tests.helpers import fails, ok, until
from tests.security.test_sandbox import needs_bwrap

SANDBOXES = [pytest.param("bwrap", marks=needs_bwrap), "none"]
SKIPPED = {".git", ".workspace-mcp"}


def tree(root: Path) -> dict[str, tuple]:
    """Every entry below `root` (but .git and the state directory): kind, mode, bytes."""
    found: dict[str, tuple] = {}
    for here, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED)
        for name in [*dirs, *files]:
            path = Path(here) / name
            st = path.lstat()
            rel = str(path.relative_to(root))
            if stat.S_ISLNK(st.st_mode):
                found[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                found[rel] = ("dir", stat.S_IMODE(st.st_mode))
            else:
                found[rel] = ("file", stat.S_IMODE(st.st_mode), path.read_bytes())
    return found


def git(ws: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(ws), *args], check=True, capture_output=True)


@pytest.fixture(params=SANDBOXES)
async def shell(request, ws: Path) -> AsyncIterator[Client]:
    (ws / "a.txt").write_text("one\ntwo\nthree\n")
    (ws / "run.sh").write_text("#!/bin/sh\necho run\n")
    (ws / "old").mkdir()
    for i in range(12):
        (ws / "old" / f"f{i}.txt").write_text(f"file {i}\n")
    git(ws, "init", "-q")
    git(ws, "add", ".")
    git(ws, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "start")
    settings = Settings(root=str(ws), shell_mode="any", sandbox=request.param)
    async with open_client(settings) as client:
        yield client


GENERATOR = "mkdir gen && i=0; while [ $i -lt 2000 ]; do echo $i > gen/f$i; i=$((i+1)); done"

COMMANDS = {  # argv, the answer's last line, a path work_log and review_changes name
    "sed -i": (["sed", "-i", "s/two/TWO/", "a.txt"], "changed 1 file: a.txt (+1 -1)", "a.txt"),
    "rm -rf dir": (["rm", "-rf", "old"], "changed 12 files: old/ (deleted, 12 files)", "old/f0"),
    "mv a b": (
        ["mv", "a.txt", "b.txt"],
        "changed 2 files: a.txt (deleted), b.txt (new)",
        "b.txt",
    ),
    "chmod +x": (["chmod", "+x", "run.sh"], "changed 1 file: run.sh (mode 644 -> 755)", "run.sh"),
    "ln -s": (["ln", "-s", "a.txt", "link"], "changed 1 file: link (new link -> a.txt)", "link"),
    "generator": (["sh", "-c", GENERATOR], "changed 2000 files: gen/ (new, 2000 files)", "gen/f"),
}


@pytest.mark.parametrize(
    "case",
    # 2,000 files: seconds, not milliseconds; the fast subset leaves it to the full run
    [pytest.param(c, marks=pytest.mark.slow) if c == "generator" else c for c in COMMANDS],
)
async def test_a_commands_changes_are_shown_and_undone_byte_for_byte(
    shell: Client, ws: Path, case: str
) -> None:
    argv, said, path = COMMANDS[case]
    before = tree(ws)
    answer = await ok(shell, "run_command", command=argv)
    assert answer.splitlines()[-1] == said, answer
    assert tree(ws) != before
    assert path in await ok(shell, "work_log")
    review = await ok(shell, "review_changes")
    assert path in review, review
    undone = await ok(shell, "undo")
    assert undone.startswith("Undid 1 call"), undone
    assert tree(ws) == before


@pytest.mark.parametrize("sandbox", SANDBOXES)
async def test_git_checkout_of_a_file_is_undone(ws: Path, sandbox: str) -> None:
    (ws / "a.txt").write_text("one\ntwo\nthree\n")
    git(ws, "init", "-q")
    git(ws, "add", ".")
    git(ws, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "start")
    (ws / "a.txt").write_text("edited by hand\n")
    before = tree(ws)
    # git writes its index: the sandbox keeps .git read-only unless this is on
    settings = Settings(root=str(ws), shell_mode="any", sandbox=sandbox, allow_git_writes=True)
    async with open_client(settings) as shell:
        answer = await ok(shell, "run_command", command=["git", "checkout", "--", "a.txt"])
        assert answer.splitlines()[-1] == "changed 1 file: a.txt (+3 -1)", answer
        assert (ws / "a.txt").read_text() == "one\ntwo\nthree\n"
        await ok(shell, "undo")
    assert tree(ws) == before  # the hand edit the checkout threw away is back


async def test_a_file_past_the_per_file_cap_is_named_not_restorable(ws: Path) -> None:
    big = ws / "big.bin"
    with big.open("wb") as out:
        out.truncate(limits.CHECKPOINT_FILE_MAX_BYTES + 1)
    settings = Settings(root=str(ws), shell_mode="any", sandbox="none")
    async with open_client(settings) as client:
        answer = await ok(client, "run_command", command=["sh", "-c", "echo x >> big.bin"])
        assert answer.splitlines()[-1] == "changed 1 file: big.bin (modified, not restorable)"
        refused = await fails(client, "undo")
    assert refused.startswith("undo refused: big.bin cannot be restored (over the"), refused
    assert big.stat().st_size == limits.CHECKPOINT_FILE_MAX_BYTES + 3


@pytest.mark.slow  # the job writes over 5 s
async def test_a_killed_background_jobs_changes_are_recorded_and_undone(ws: Path) -> None:
    (ws / "kept.txt").write_text("kept\n")
    before = tree(ws)
    script = "for i in 1 2 3 4 5; do echo $i > out$i.txt; sleep 1; done; rm kept.txt; sleep 60"
    settings = Settings(root=str(ws), shell_mode="any", sandbox="none")
    async with open_client(settings) as client:
        started = await ok(client, "start_job", command=["sh", "-c", script])
        job = started.split()[2]
        assert await until(lambda: not (ws / "kept.txt").exists())
        still = await ok(client, "undo", dry_run=True)
        assert f"Still changing files: {job} (`sh -c" in still, still
        await ok(client, "job_kill", jobId=job)

        async def ended() -> str:
            for _ in range(400):
                log = await ok(client, "work_log")
                if "job_end" in log:
                    return log
                await asyncio.sleep(0.05)
            raise AssertionError(log)

        log = await ended()
        assert "out1.txt" in log and "kept.txt" in log, log
        status = await ok(client, "job_status", jobId=job)
        assert "the job changed 6 files" in status, status
        # job_kill is a call of its own (it changed nothing), before or after the job's end
        undone = await ok(client, "undo", steps=2)
        assert undone.startswith("Undid 2 calls: #") and "job_end" in undone, undone
    assert tree(ws) == before
