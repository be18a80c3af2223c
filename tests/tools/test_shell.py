"""Execution tools with real subprocesses: registration, output, timeouts, jobs, tasks.

Process mechanics are checked with host pids, so these servers run commands unsandboxed
(`sandbox="none"`); the default sandbox has its own tests in tests/security/test_sandbox.py.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import time
from pathlib import Path

import pytest
from fastmcp import Client

from agent_workspace_mcp import Settings
from agent_workspace_mcp.cli import settings_from_sources
from tests.conftest import open_client
from tests.helpers import fails, ok, pid_alive, until

EXEC_TOOLS = {"run_command", "start_job", "job_status", "job_kill", "run_task", "bash"}


async def tool_names(settings: Settings) -> set[str]:
    async with open_client(settings) as client:
        return {t.name for t in await client.list_tools()} & EXEC_TOOLS


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({}, set()),
        (
            {"shell_mode": "allowlist"},
            {"run_command", "start_job", "job_status", "job_kill", "run_task"},
        ),
        ({"shell_mode": "any"}, EXEC_TOOLS),
        ({"tasks": True}, {"run_task", "job_status", "job_kill"}),
    ],
)
async def test_registration_follows_the_flags(
    ws: Path, overrides: dict, expected: set[str]
) -> None:
    assert await tool_names(Settings(root=str(ws), **overrides)) == expected


async def test_unconfined_mode_registers_bash(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert await tool_names(Settings(unconfined=True)) == {"bash", "job_status", "job_kill"}


def test_environment_fallbacks_enable_the_shell() -> None:
    assert settings_from_sources([], environ={"WORKSPACE_MCP_SHELL": "1"}).shell_mode == "allowlist"
    env = {"WORKSPACE_MCP_SHELL_MODE": "any", "WORKSPACE_MCP_SHELL_ALLOW": "git,docker"}
    settings = settings_from_sources([], environ=env)
    assert (settings.shell_mode, settings.shell_allow) == ("any", ("git", "docker"))
    settings = settings_from_sources(
        ["--shell", "--shell-allow", "a,b", "--shell-allow", "c"], environ=env
    )
    assert (settings.shell_mode, settings.shell_allow) == ("allowlist", ("a", "b", "c"))


@pytest.fixture
async def sh(ws: Path):
    settings = Settings(
        root=str(ws),
        shell_mode="allowlist",
        sandbox="none",
        shell_allow=("echo", "sh", "sleep", "pwd", "env", "cat"),
    )
    async with open_client(settings) as client:
        yield client


@pytest.fixture
async def anyshell(ws: Path):
    async with open_client(
        Settings(root=str(ws), shell_mode="any", sandbox="none", promote_after_ms=60_000)
    ) as client:
        yield client


async def test_argv_runs_without_a_shell(sh: Client) -> None:
    text = await ok(
        sh, "run_command", command=["echo", "a", "|", "b", "&&", "$HOME", "*", ">", "out"]
    )
    lines = text.splitlines()
    assert lines[0] == "$ echo a '|' b '&&' '$HOME' '*' '>' out"
    assert lines[1] == "a | b && $HOME * > out"
    assert lines[2].startswith("[exit code 0 (")


async def test_non_zero_exit_and_merged_output_order(sh: Client) -> None:
    text = await ok(
        sh, "run_command", command=["sh", "-c", "echo one; echo two >&2; echo three; exit 7"]
    )
    assert text.splitlines()[1:4] == ["one", "two", "three"]
    assert text.splitlines()[-1].startswith("[exit code 7 (")


async def test_allowlist_rejects_and_extends(ws: Path, sh: Client) -> None:
    message = await fails(sh, "run_command", command=["ls"])
    assert message.startswith(
        "command not allowed: ls (allowlist: cat, echo, env, node, npm, npx, pnpm, pwd, sh, sleep;"
    )
    assert (await fails(sh, "run_command", command=["definitely-not-a-program-xyz"])).startswith(
        "command not allowed: definitely-not-a-program-xyz"
    )
    # Extension: `cat` was added with shell_allow and runs.
    assert "[exit code 0" in await ok(sh, "run_command", command=["cat", "/dev/null"])


async def test_a_workspace_file_named_like_an_allowlisted_program_never_runs(
    ws: Path, sh: Client
) -> None:
    fake = ws / "node"
    fake.write_text("#!/bin/sh\necho PWNED > pwned.txt\n")
    fake.chmod(0o755)
    (ws / "bin").mkdir()
    shutil.copy(fake, ws / "bin" / "echo")
    for argv0 in ("./node", str(fake), "bin/echo", "./bin/../node"):
        message = await fails(sh, "run_command", command=[argv0])
        assert "is not the" in message and "found on PATH" in message, message
    assert not (ws / "pwned.txt").exists()
    # The real program, by name or by its real path, still runs.
    real_echo = shutil.which("echo")
    text = await ok(sh, "run_command", command=[real_echo, "real"])
    assert text.splitlines()[1] == "real"


async def test_cwd_is_contained(ws: Path, sh: Client) -> None:
    (ws / "sub").mkdir()
    text = await ok(sh, "run_command", command=["pwd"], cwd="sub")
    assert text.splitlines()[1] == str(ws / "sub")
    assert (
        await fails(sh, "run_command", command=["pwd"], cwd="..")
        == "path outside workspace root: .."
    )
    assert (
        await fails(sh, "run_command", command=["pwd"], cwd="nope")
        == "cwd is not a directory: nope"
    )


async def test_environment_is_scrubbed(ws: Path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")
    monkeypatch.setenv("MCP_TOKEN", "mcp-should-not-leak")
    monkeypatch.setenv("INNOCENT_NAME", "server-token-value")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-should-not-leak")
    monkeypatch.setenv("KEEP_ME", "visible")
    settings = Settings(
        root=str(ws),
        shell_mode="allowlist",
        sandbox="none",
        shell_allow=("env",),
        token="server-token-value",
        scrub_env=("AWS_*",),
    )
    async with open_client(settings) as client:
        text = await ok(client, "run_command", command=["env"])
    assert "should-not-leak" not in text and "server-token-value" not in text
    assert "KEEP_ME=visible" in text and "NO_COLOR=1" in text and "FORCE_COLOR=0" in text


async def test_secret_shaped_names_are_scrubbed_and_pass_env_lets_one_through(
    ws: Path, monkeypatch
) -> None:
    secrets = {
        "ANTHROPIC_API_KEY": "sk-ant-leak",
        "GITHUB_TOKEN": "ghp-leak",
        "AWS_SECRET_ACCESS_KEY": "aws-leak",
        "AWS_PROFILE": "aws-profile-leak",
        "MY_SERVICE_TOKEN": "svc-leak",
        "DB_PASSWORD": "pw-leak",
        "GOOGLE_APPLICATION_CREDENTIALS": "gcp-leak",
        "STRIPE_SECRET": "stripe-leak",
        "npm_config__authToken": "npm-leak",
        "SSH_AUTH_SOCK": "/tmp/agent-leak",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("NPM_TOKEN", "passed-on-purpose")
    monkeypatch.setenv("EDITOR", "vim")
    settings = Settings(
        root=str(ws),
        shell_mode="allowlist",
        sandbox="none",
        shell_allow=("env",),
        pass_env=("NPM_TOKEN",),
    )
    async with open_client(settings) as client:
        text = await ok(client, "run_command", command=["env"])
    assert "leak" not in text, text
    assert "NPM_TOKEN=passed-on-purpose" in text and "EDITOR=vim" in text


@pytest.mark.slow  # waits for a timeout
async def test_timeout_kills_the_whole_group_including_grandchildren(ws: Path, sh: Client) -> None:
    script = "sleep 60 & echo $! > grandchild.pid; wait"
    started = time.monotonic()
    text = await ok(sh, "run_command", command=["sh", "-c", script], timeoutMs=1000)
    assert time.monotonic() - started < 8
    assert text.splitlines()[-2].startswith("[timed out after 1000 ms; process group killed")
    assert text.splitlines()[-1] == "changed 1 file: grandchild.pid (new)"
    pid = int((ws / "grandchild.pid").read_text())
    assert not pid_alive(pid)


async def test_a_grandchild_holding_the_pipe_does_not_hang_the_call(
    ws: Path, anyshell: Client
) -> None:
    # setsid puts the grandchild outside our process group: the kill cannot reach it,
    # and it keeps stdout open. The call must still return promptly.
    script = "setsid sleep 30 & echo $! > escaped.pid; echo parent done"
    started = time.monotonic()
    text = await ok(anyshell, "run_command", command=["sh", "-c", script])
    assert time.monotonic() - started < 5
    assert "parent done" in text and "[exit code 0" in text
    os.kill(int((ws / "escaped.pid").read_text()), 9)


async def test_output_is_bounded_and_ansi_free(anyshell: Client) -> None:
    program = (
        "import sys\n"
        "sys.stdout.write('\\x1b[31mHEAD-MARKER\\x1b[0m\\n')\n"
        "sys.stdout.write(('x' * 99 + '\\n') * 4000)\n"
        "sys.stdout.write('\\x1b[1mTAIL-MARKER\\x1b[0m\\n')\n"
    )
    text = await ok(anyshell, "run_command", command=[sys.executable, "-c", program])
    assert "\x1b" not in text
    assert "HEAD-MARKER" in text and "TAIL-MARKER" in text
    assert "bytes omitted] ..." in text
    assert len(text.encode()) < 70 * 1024


async def test_cancellation_kills_the_process(ws: Path, anyshell: Client) -> None:
    script = f"echo $$ > {ws}/cancel.pid; exec sleep 60"
    task = asyncio.create_task(anyshell.call_tool("run_command", {"command": ["sh", "-c", script]}))
    pid = await wait_for_pid(ws / "cancel.pid")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await gone_within(pid, 5)


@pytest.mark.slow  # a command that runs for seconds
async def test_progress_notifications_for_long_commands(ws: Path, anyshell: Client) -> None:
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    result = await anyshell.call_tool(
        "run_command", {"command": ["sleep", "2.5"]}, progress_handler=on_progress
    )
    assert not result.is_error
    assert seen and seen[0] >= 1.9


def ended(status: str) -> bool:
    """A job_status answer says the job is no longer running."""
    return ": running," not in status.splitlines()[0]


@pytest.mark.slow
async def test_promotion_to_a_background_job(ws: Path) -> None:
    settings = Settings(root=str(ws), shell_mode="any", sandbox="none", promote_after_ms=500)
    async with open_client(settings) as client:
        text = await ok(
            client, "run_command", command=["sh", "-c", "echo early; sleep 1.5; echo late"]
        )
        assert text.splitlines()[1] == "early"
        last = text.splitlines()[-1]
        assert last.startswith("[still running after 500 ms: moved to background job job-")
        job_id = last.split("background job ")[1].split(";")[0]
        status = await until(lambda: ok(client, "job_status", jobId=job_id), ended)
        assert status.splitlines()[0].startswith(f"job {job_id}: exited, exit code 0")
        assert "early" in status and "late" in status
        # The original timeout still applies to the promoted job.
        text = await ok(client, "run_command", command=["sleep", "10"], timeoutMs=1500)
        job_id = text.splitlines()[-1].split("background job ")[1].split(";")[0]
        status = await until(lambda: ok(client, "job_status", jobId=job_id), ended)
        assert status.splitlines()[0].startswith(f"job {job_id}: timed-out")


async def test_background_true_returns_a_job_at_once(anyshell: Client) -> None:
    started = time.monotonic()
    text = await ok(anyshell, "run_command", command=["sleep", "5"], background=True)
    assert time.monotonic() - started < 2
    assert text.startswith("Started job job-")


async def test_jobs_survive_the_client_and_can_be_killed(ws: Path) -> None:
    from agent_workspace_mcp import create_server

    server = create_server(Settings(root=str(ws), shell_mode="any", sandbox="none"))
    async with Client(server) as first:
        text = await ok(
            first,
            "start_job",
            command=["sh", "-c", "echo $$ > job.pid; echo hello; exec sleep 60"],
            name="sleeper",
        )
        job_id = text.split()[2]
    pid = await wait_for_pid(ws / "job.pid")
    async with Client(server) as second:  # a fresh client reads the same job
        status = await ok(second, "job_status", jobId=job_id)
        assert status.splitlines()[0].startswith(f"job {job_id} (sleeper): running")
        assert "hello" in status
        listing = await ok(second, "job_status")
        assert listing.splitlines()[0].startswith(f"{job_id}  running")
        killed = await ok(second, "job_kill", jobId=job_id)
        assert killed.splitlines()[0].startswith(f"job {job_id} (sleeper): killed")
        assert await gone_within(pid, 5)
        # Killing a finished job is not an error.
        assert "killed" in await ok(second, "job_kill", jobId=job_id)
        assert await fails(second, "job_status", jobId="job-000000000000") == (
            "unknown job: job-000000000000 (job_status without jobId lists yours)"
        )


@pytest.mark.slow  # waits for a job's max runtime
async def test_job_max_runtime_tail_and_validation(ws: Path, anyshell: Client) -> None:
    text = await ok(
        anyshell, "start_job", command=["sh", "-c", "echo tick; sleep 30"], maxRuntimeMs=1000
    )
    job_id = text.split()[2]
    status = await until(
        lambda: ok(anyshell, "job_status", jobId=job_id, tailBytes=3),
        ended,
    )
    assert status.splitlines()[0].startswith(f"job {job_id}: timed-out")
    assert status.splitlines()[-1] == "ck"
    # Too much asked is clamped and said, not refused.
    big = await ok(anyshell, "job_status", jobId=job_id, tailBytes=10_000_000)
    assert big.splitlines()[-1] == "(tailBytes clamped to 262144; the whole log stays on disk)"
    assert "tick" in big and "\n--- the whole log ---\n" in big  # 5 bytes, not "last 262144"
    message = await fails(anyshell, "start_job", command=["sleep", "1"], cwd="../")
    assert message == "path outside workspace root: ../"
    assert "no jobs" not in await ok(anyshell, "job_status")


async def test_job_log_is_capped(ws: Path, anyshell: Client) -> None:
    program = (
        "import sys\nchunk = 'a' * (1 << 20)\nfor _ in range(70):\n    sys.stdout.write(chunk)\n"
    )
    text = await ok(anyshell, "start_job", command=[sys.executable, "-c", program])
    job_id = text.split()[2]
    for _ in range(100):
        status = await ok(anyshell, "job_status", jobId=job_id, tailBytes=0)
        if ": exited" in status:
            break
        await asyncio.sleep(0.1)
    assert "log 67108864 bytes (log capped at 64 MiB)" in status


@pytest.mark.slow
async def test_run_task(ws: Path, monkeypatch) -> None:
    # Put this interpreter's scripts first so `python3 -m pytest` finds pytest.
    bindir = Path(sys.executable).parent
    if not (bindir / "python3").exists():
        pytest.skip("no python3 next to the interpreter")
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    (ws / "tests").mkdir()
    (ws / "tests" / "test_ok.py").write_text("def test_ok():\n    assert 1 + 1 == 2\n")
    (ws / "tests" / "test_bad.py").write_text("def test_bad():\n    assert False\n")
    async with open_client(Settings(root=str(ws), tasks=True, sandbox="none")) as client:
        text = await ok(
            client, "run_task", runner="pytest", task="test", paths=["tests/test_ok.py"]
        )
        assert (
            "1 passed" in text
            and text.splitlines()[0] == "$ python3 -m pytest -q ./tests/test_ok.py"
        )
        # pytest's cache is a change like any other: recorded, and said so
        assert text.splitlines()[-2].startswith("[exit code 0")
        # (and where bytecode is written, tests/__pycache__/ too: it depends on the host)
        changed = text.splitlines()[-1]
        assert changed.startswith("changed ") and ".pytest_cache/ (new, 4 files)" in changed
        text = await ok(client, "run_task", runner="pytest", task="test", paths=["tests"])
        assert "1 failed, 1 passed" in text and text.splitlines()[-2].startswith("[exit code 1")
        assert await fails(client, "run_task", runner="pytest", task="lint") == (
            "runner 'pytest' has no task 'lint'; valid tasks: test"
        )
        assert await fails(client, "run_task", runner="make", task="test") == (
            "unknown runner 'make'; valid runners: pytest, npm, pnpm, yarn, maven, gradle, go, cargo"
        )
        assert await fails(client, "run_task", runner="pytest", task="test", paths=["../x"]) == (
            "path outside workspace root: ../x"
        )
        assert await fails(client, "run_task", runner="maven", task="test", paths=["tests"]) == (
            "maven test does not take paths"
        )
        tools = {t.name: t for t in await client.list_tools()}
        assert (
            "run_command" not in tools and "runner" in tools["run_task"].input_schema["properties"]
        )


async def test_bash_runs_a_real_shell_with_a_capped_timeout(ws: Path) -> None:
    settings = Settings(root=str(ws), shell_mode="any", sandbox="none", shell_max_timeout_seconds=1)
    async with open_client(settings) as client:
        text = await ok(client, "bash", command="echo a b | tr ' ' '\\n' | sort -r; echo $((6*7))")
        assert text.splitlines()[1:4] == ["b", "a", "42"]
        text = await ok(client, "bash", command="sleep 5", timeoutMs=60_000)
        assert text.splitlines()[-1].startswith("[timed out after 1000 ms")


async def wait_for_pid(path: Path) -> int:
    for _ in range(200):
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


async def gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        await asyncio.sleep(0.05)
    return False


async def test_mid_sized_output_is_held_to_the_answer_budget(anyshell: Client) -> None:
    """Between 64 and 256 KiB the backbone would return everything; clients reject that."""
    program = "import sys\nsys.stdout.write('FIRST\\n' + ('y' * 99 + '\\n') * 1500 + 'LAST\\n')\n"
    text = await ok(anyshell, "run_command", command=[sys.executable, "-c", program])
    assert "FIRST" in text and "LAST" in text and "bytes omitted] ..." in text
    assert len(text.encode()) < 70 * 1024


async def test_the_description_states_where_output_is_shortened(anyshell: Client) -> None:
    """Issue 29: the description said 256 KiB; output was shortened above 64 KiB."""
    from agent_workspace_mcp.core import limits

    (tool,) = [t for t in await anyshell.list_tools() if t.name == "run_command"]
    shown = limits.OUTPUT_SHORTENED_ABOVE_BYTES // limits.KIB
    assert f"output above {shown} KiB keeps" in (tool.description or "")
    size = limits.OUTPUT_SHORTENED_ABOVE_BYTES * 2
    program = f"import sys; sys.stdout.write('x' * {size})"
    whole = await ok(anyshell, "run_command", command=[sys.executable, "-c", program])
    assert "x" * size not in whole and len(whole) < size  # shortened
    fits = await ok(
        anyshell,
        "run_command",
        command=[
            sys.executable,
            "-c",
            program.replace(str(size), str(limits.OUTPUT_SHORTENED_ABOVE_BYTES - 100)),
        ],
    )
    assert "x" * (limits.OUTPUT_SHORTENED_ABOVE_BYTES - 100) in fits
