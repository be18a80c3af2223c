"""--sandbox bwrap: the workspace is writable, the rest read-only, the network gone."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from agent_workspace_mcp import Settings
from agent_workspace_mcp.core.errors import ConfigError
from agent_workspace_mcp.core.exec.commands import check_bwrap
from tests.conftest import open_client
from tests.helpers import ok, requires


def bwrap_usable() -> str | None:
    try:
        check_bwrap(os.environ["PATH"].split(os.pathsep))
    except ConfigError as exc:
        return str(exc)
    return None


reason = bwrap_usable()
needs_bwrap = requires(reason)


@pytest.fixture
async def boxed(ws: Path):
    async with open_client(Settings(root=str(ws), shell_mode="any", sandbox="bwrap")) as client:
        yield client


@pytest.fixture
def outside_on_disk():
    """A directory outside the workspace that is visible (read-only) in the sandbox.

    Not under /tmp: the sandbox gets a private, empty /tmp.
    """
    import tempfile

    with tempfile.TemporaryDirectory(dir="/var/tmp") as path:
        (Path(path) / "secret.txt").write_text("top secret\n")
        yield Path(path)


@needs_bwrap
async def test_workspace_is_writable_and_everything_else_is_not(
    boxed, ws: Path, outside_on_disk: Path
) -> None:
    text = await ok(boxed, "bash", command="echo inside > made.txt && cat made.txt")
    assert "inside" in text and (ws / "made.txt").read_text() == "inside\n"
    text = await ok(
        boxed,
        "bash",
        command=f"cat {outside_on_disk}/secret.txt; echo pwned > {outside_on_disk}/secret.txt; echo rc=$?",
    )
    assert "top secret" in text  # readable
    assert "Read-only file system" in text and "rc=1" in text
    assert (outside_on_disk / "secret.txt").read_text() == "top secret\n"
    text = await ok(boxed, "bash", command="touch /etc/awm-probe; echo rc=$?")
    assert "rc=1" in text


@needs_bwrap
async def test_network_is_unreachable(boxed) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    try:
        program = (
            "import socket\n"
            "try:\n"
            f"    socket.create_connection(('127.0.0.1', {port}), timeout=3)\n"
            "    print('CONNECTED')\n"
            "except OSError as exc:\n"
            "    print('NO NETWORK', type(exc).__name__)\n"
        )
        text = await ok(boxed, "run_command", command=[sys.executable, "-c", program])
    finally:
        server.close()
    output = text.split("\n'\n", 1)[1]  # after the echoed command
    assert "NO NETWORK" in output and "CONNECTED" not in output


@needs_bwrap
async def test_private_tmp_and_pid_namespace(boxed) -> None:
    text = await ok(boxed, "bash", command="echo $$; touch /tmp/awm-private-probe; ls /tmp")
    lines = text.splitlines()
    assert int(lines[1]) < 10  # its own PID namespace
    assert "awm-private-probe" in lines
    assert not Path("/tmp/awm-private-probe").exists()  # that /tmp was private


@pytest.mark.slow  # spawns the CLI
def test_start_up_fails_in_one_line_without_bwrap(ws: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty-path"
    empty.mkdir()
    python_dir = Path(sys.executable).parent
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent_workspace_mcp",
            "--root",
            str(ws),
            "--shell",
            "--sandbox",
            "bwrap",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env={"PATH": f"{empty}", "HOME": str(tmp_path), "PYTHONPATH": ""},
        cwd=python_dir,
    )
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "agent-workspace-mcp: error: --sandbox bwrap: bubblewrap is not installed (Debian package 'bubblewrap')"
    ]


@pytest.fixture
def home_with_a_key(monkeypatch):
    """A home directory holding an SSH key, as the server's user has (not under /tmp: the
    sandbox's /tmp is private anyway)."""
    import tempfile

    with tempfile.TemporaryDirectory(dir="/var/tmp") as path:
        (Path(path) / ".ssh").mkdir()
        (Path(path) / ".ssh" / "id_ed25519").write_text("PRIVATE-KEY-BYTES\n")
        monkeypatch.setenv("HOME", path)
        yield Path(path)


@needs_bwrap
@requires(None if shutil.which("node") else "node is not installed")
async def test_allowlisted_interpreters_are_sandboxed_by_default(
    ws: Path, home_with_a_key: Path
) -> None:
    """Issue 28: with --shell, `node -e` read files outside the root (an allowlist of
    interpreters is code execution); by default commands now run sandboxed, homes hidden."""
    key = home_with_a_key / ".ssh" / "id_ed25519"
    program = (
        f"try {{ console.log(require('fs').readFileSync({str(key)!r}, 'utf8')) }} "
        "catch (e) { console.log('HIDDEN', e.code) }"
    )
    async with open_client(Settings(root=str(ws), shell_mode="allowlist", sandbox="none")) as bare:
        assert "PRIVATE-KEY-BYTES" in await ok(bare, "run_command", command=["node", "-e", program])
    async with open_client(Settings(root=str(ws), shell_mode="allowlist")) as default:
        text = await ok(default, "run_command", command=["node", "-e", program])
        assert "PRIVATE-KEY-BYTES" not in text and "HIDDEN ENOENT" in text, text
        wrote = await ok(
            default,
            "run_command",
            command=["node", "-e", "require('fs').writeFileSync('in.txt', 'ok')"],
        )
        assert "[exit code 0" in wrote and (ws / "in.txt").read_text() == "ok"


@needs_bwrap
async def test_a_bwrap_the_agent_wrote_on_path_never_runs(
    ws: Path, tmp_path: Path, monkeypatch
) -> None:
    """Issue 43, item 1: with an activated `.venv/bin` inside the root on PATH, an agent
    turned `.venv/bin/pip` into `bwrap`; the next start ran it as the user for the probe
    and every command, and the ready line still said "sandbox bwrap"."""
    from agent_workspace_mcp.core.exec import commands
    from agent_workspace_mcp.server import build

    bin_dir = ws / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    marker = tmp_path / "planted-bwrap-ran"
    fake = bin_dir / "bwrap"
    fake.write_text(f'#!/bin/sh\ntouch {marker}\nexec /usr/bin/bwrap "$@"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    commands._probe.cache_clear()
    _app, services = build(Settings(root=str(ws), shell_mode="any"))
    assert services.bwrap is not None and not services.bwrap.startswith(str(ws))
    async with open_client(Settings(root=str(ws), shell_mode="any")) as client:
        await ok(client, "bash", command="true")
    assert not marker.exists(), "the planted bwrap ran"


@needs_bwrap
async def test_the_servers_own_directories_are_hidden_from_commands(ws: Path) -> None:
    """Item 4: with the job directory on a volume outside /tmp (a documented setting), a
    sandboxed command read workers-*/shared.key and forged a console session; the
    approval key's directory is hidden the same way."""
    import tempfile

    from agent_workspace_mcp.core import proofkey

    with tempfile.TemporaryDirectory(dir="/var/tmp") as jobs:
        (Path(jobs) / "workers-1").mkdir()
        (Path(jobs) / "workers-1" / "shared.key").write_text("SHARED-SECRET\n")
        proofkey.decision_key()  # made as the server makes it: private, mode 0700
        key_dir = proofkey.key_dir()
        settings = Settings(root=str(ws), shell_mode="any", sandbox="bwrap", job_dir=jobs)
        async with open_client(settings) as client:
            text = await ok(
                client, "bash", command=f"cat {jobs}/workers-1/shared.key; ls {key_dir}"
            )
        assert "SHARED-SECRET" not in text and "No such file" in text, text
        assert proofkey.FILE not in text


HOOK = "mkdir -p {d}/.git/hooks && printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > {d}/.git/hooks/pre-commit && chmod +x {d}/.git/hooks/pre-commit; echo made=$?"


def _commit_runs_no_planted_hook(repo: Path) -> None:
    """The user's own `git commit` there: a planted hook would run it as them."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "u",
        "GIT_AUTHOR_EMAIL": "u@x",
        "GIT_COMMITTER_NAME": "u",
        "GIT_COMMITTER_EMAIL": "u@x",
    }
    hook = repo / ".git" / "hooks" / "pre-commit"
    assert not hook.exists() or "pwned" not in hook.read_text()
    if (repo / ".git").is_dir():
        subprocess.run(["git", "add", "-A"], cwd=repo, env=env, check=True)
        out = subprocess.run(
            ["git", "commit", "-qm", "x", "--allow-empty"],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
        )
        assert out.returncode == 0, out.stderr


@pytest.mark.parametrize("sandbox", ["bwrap", "none"])
async def test_a_command_cannot_create_a_git_with_hooks(ws: Path, sandbox: str) -> None:
    """Issue 43, item 2: in a workspace with no .git a sandboxed command created one with
    an executable hooks/pre-commit; the user's next `git commit` ran it unsandboxed."""
    if sandbox == "bwrap" and reason:
        pytest.skip(f"{reason} [CI installs it]")
    settings = Settings(root=str(ws), shell_mode="any", sandbox=sandbox)
    async with open_client(settings) as client:
        text = await ok(client, "bash", command=HOOK.format(d="."))
    assert "created .git, which the server removed" in text, text
    assert not (ws / ".git").exists()


@needs_bwrap
async def test_a_nested_repositorys_hooks_are_read_only(ws: Path) -> None:
    """Item 3: only the top-level .git was bound read-only; a command wrote
    sub/.git/hooks/pre-commit and `git commit` in sub/ ran it."""
    sub = ws / "sub"
    sub.mkdir()
    subprocess.run(["git", "init", "-q", str(sub)], check=True)
    (sub / ".git" / "hooks").mkdir(exist_ok=True)
    settings = Settings(root=str(ws), shell_mode="any", sandbox="bwrap")
    async with open_client(settings) as client:
        text = await ok(client, "bash", command=HOOK.format(d="sub"))
        assert "Read-only file system" in text and "made=1" in text, text
        deep = await ok(client, "bash", command=HOOK.format(d="sub/deeper"))
    assert "created sub/deeper/.git, which the server removed" in deep, deep
    _commit_runs_no_planted_hook(sub)
    assert not (sub / "deeper" / ".git").exists()


async def test_an_unsandboxed_commands_hook_change_is_named(ws: Path) -> None:
    """--sandbox none cannot bind anything: a changed hook of an existing repository is
    named in the answer (left for the person), a new repository is removed."""
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    settings = Settings(root=str(ws), shell_mode="any", sandbox="none", allow_git_writes=False)
    async with open_client(settings) as client:
        text = await ok(client, "bash", command=HOOK.format(d="."))
    assert "changed what runs later in .git" in text, text


@needs_bwrap
async def test_a_jobs_new_git_is_removed_when_it_ends(ws: Path) -> None:
    import asyncio

    settings = Settings(root=str(ws), shell_mode="any", sandbox="bwrap")
    async with open_client(settings) as client:
        started = await ok(client, "bash", command=HOOK.format(d="."), background=True)
        job = started.split("Started job ", 1)[1].split()[0]
        for _ in range(600):  # up to 30 s: a loaded machine is slow to end a job
            status = await ok(client, "job_status", jobId=job)
            if "created .git, which the server removed" in status:
                break
            await asyncio.sleep(0.05)
    assert "created .git, which the server removed" in status, status
    assert not (ws / ".git").exists()


@needs_bwrap
@pytest.mark.slow  # a sandboxed job runs to its end (6 s)
async def test_a_running_jobs_new_git_is_removed_before_it_ends(ws: Path) -> None:
    """The user may commit while a long job runs: a .git with hooks it creates is found
    by the watcher's look every JOB_GUARD_SECONDS, not only at its end."""
    import asyncio

    settings = Settings(root=str(ws), shell_mode="any", sandbox="bwrap")
    async with open_client(settings) as client:
        started = await ok(
            client, "bash", command=HOOK.format(d=".") + "; sleep 60", background=True
        )
        job = started.split("Started job ", 1)[1].split()[0]
        status = ""
        for _ in range(400):  # at most 20 s: the look comes every 5 s
            if not (ws / ".git").exists() and (ws / ".git").parent.exists():
                status = await ok(client, "job_status", jobId=job)
                if "which the server removed" in status:
                    break
            await asyncio.sleep(0.05)
        assert "running" in status and "which the server removed" in status, status
        await ok(client, "job_kill", jobId=job)
    assert not (ws / ".git").exists()
