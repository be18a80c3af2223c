"""`--stage-commands` under the path rules (`--confirm risky`, `--confirm-path`): a command
runs against a copy-on-write view, and what it changed is decided by the same rules as a
file tool's call. A change set that meets no rule lands at once, recorded and undoable; one
that meets a rule waits for a person, who is shown it and the rule that asked. Without
this, a command was the one way to change a CI file, a build file or a protected folder
that no person was asked about: `bash "echo ... > .github/workflows/x.yml"` instead of
`write_file`. Real commands under bubblewrap over a real fuse-overlayfs view."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from fastmcp import Client

from agent_workspace_mcp.core import limits
from agent_workspace_mcp.core.errors import ConfigError
from tests.helpers import call, ok, requires
from tests.tools.test_staged_commands import (
    _missing,
    _pending,
    console,
    short_waits,  # noqa: F401  (autouse: applies here)
    tree,
)
from tests.tools.test_staged_commands import server as staged_server

pytestmark = [pytest.mark.slow, requires(_missing())]  # real bwrap and FUSE mounts

EVIL = "mkdir -p .github/workflows && echo 'on: push' > .github/workflows/evil.yml"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "a.py").write_text("x = 1\n")
    (ws / "ci").mkdir()
    (ws / "ci" / "build.yml").write_text("on: push\n")
    (ws / "secrets").mkdir()
    (ws / "secrets" / "token").write_text("t0\n")
    (ws / "many").mkdir()
    for n in range(limits.RISKY_DELETE_ENTRIES + 1):
        (ws / "many" / f"{n}.txt").write_text(f"{n}\n")
    return ws


def server(root: Path, **extra):
    """The staged-command server of test_staged_commands, under `--confirm risky`."""
    return staged_server(root, **({"confirm": ("risky",)} | extra))


async def test_without_staging_a_command_writes_a_workflow_unasked(root: Path) -> None:
    """What the rules cannot see without a view: kept as the reason for `--stage-commands`
    (and said by the README and docs/SECURITY.md)."""
    state = console(root)
    async with Client(server(root, stage_commands=False)) as client:
        await ok(client, "bash", command=EVIL)
    assert (root / ".github" / "workflows" / "evil.yml").exists()
    assert state.approvals() == []


async def test_a_command_writing_a_workflow_waits_and_lands_when_approved(root: Path) -> None:
    before = tree(root)
    state = console(root)
    async with Client(server(root)) as client:
        waiting = asyncio.create_task(call(client, "bash", command=EVIL))
        record = await _pending(state)
        assert tree(root) == before  # it ran against the view: nothing reached the tree
        assert "ci: .github/workflows/evil.yml runs on every push" in record["rule"]
        assert ".github/workflows/evil.yml: new" in record["summary"]
        state.decide(None, record["id"], approve=True)
        answer = await waiting
        assert not answer.is_error, answer.text
        assert "staged changes landed" in answer.text
        assert (root / ".github" / "workflows" / "evil.yml").read_text() == "on: push\n"
        # Recorded like an edit: its undo changes a workflow too, so it is asked about.
        undoing = asyncio.create_task(call(client, "undo"))
        asked = await _pending(state)
        assert "ci: .github/workflows/evil.yml" in asked["rule"]
        state.decide(None, asked["id"], approve=True)
        assert "Undid" in (await undoing).text
    assert tree(root) == before


async def test_a_command_meeting_no_rule_lands_at_once_and_is_undoable(root: Path) -> None:
    before = tree(root)
    state = console(root)
    async with Client(server(root)) as client:
        answer = await ok(client, "bash", command="echo 'y = 2' >> src/a.py && echo hi")
        assert "hi" in answer and "changed 1 file" in answer, answer
        assert (root / "src" / "a.py").read_text() == "x = 1\ny = 2\n"
        assert state.approvals() == []
        log = await ok(client, "work_log")
        assert "bash" in log and "src/a.py" in log
        assert "Undid" in await ok(client, "undo")
    assert tree(root) == before


@pytest.mark.parametrize(
    ("layout", "command", "rule"),
    [
        # the workflows folder is a link to ci/: a write to ci/ is a write to a workflow
        ("link", "echo x > ci/evil.yml", "ci: .github/workflows/evil.yml"),
        # the command makes the link itself, or takes it away
        ("", "mkdir -p .github && ln -s ../ci .github/workflows", "ci: what lands at .github"),
        ("link", "rm .github/workflows", "ci: .github/workflows/build.yml"),
        ("", "echo 'all:' > Makefile", "build: Makefile"),
        ("", "rm -rf many", f"mass-delete: {limits.RISKY_DELETE_ENTRIES + 2} entries"),
    ],
)
async def test_every_way_a_command_meets_a_rule_asks(
    root: Path, layout: str, command: str, rule: str
) -> None:
    if layout == "link":
        (root / ".github").mkdir()
        (root / ".github" / "workflows").symlink_to("../ci")
    before = tree(root)
    state = console(root)
    async with Client(server(root)) as client:
        waiting = asyncio.create_task(call(client, "bash", command=command))
        record = await _pending(state)
        assert rule in record["rule"], record["rule"]
        state.decide(None, record["id"], approve=False)
        answer = await waiting
    assert answer.is_error and "denied" in answer.text
    assert tree(root) == before


async def test_confirm_path_holds_a_command_that_changes_a_protected_folder(root: Path) -> None:
    before = tree(root)
    state = console(root)
    async with Client(server(root, confirm=(), confirm_path=("secrets/",))) as client:
        first = await ok(client, "bash", command="echo t1 > secrets/token")
        assert first.startswith("Not landed yet") and "--confirm-path (secrets/token)" in first
        assert tree(root) == before
        record = await _pending(state)
        state.decide(None, record["id"], approve=True)
        landed = await ok(client, "bash", command="echo t1 > secrets/token")
        assert "staged changes landed" in landed
        # a change outside the protected folder is not asked about
        await ok(client, "bash", command="echo 'y = 2' >> src/a.py")
    assert (root / "secrets" / "token").read_text() == "t1\n"
    assert (root / "src" / "a.py").read_text() == "x = 1\ny = 2\n"
    assert len(state.approvals()) == 1


async def test_a_change_set_that_cannot_land_says_why_and_asks_no_one(root: Path) -> None:
    (root / ".git").mkdir()
    state = console(root)
    async with Client(server(root)) as client:
        command = "mkdir -p sub/.git && echo x > sub/.git/f && echo made it"
        answer = await call(client, "bash", command=command)
    assert answer.is_error and "cannot land" in answer.text and "never changed" in answer.text
    assert "made it" in answer.text  # the command's own output, for the agent to go on
    assert not (root / "sub").exists()
    assert state.approvals() == []


def test_staging_under_rules_starts_and_without_any_rule_still_refuses(root: Path) -> None:
    server(root)  # --confirm risky
    server(root, confirm=(), confirm_path=("secrets/",))
    with pytest.raises(ConfigError) as error:
        server(root, confirm=("write",))
    said = str(error.value)
    assert said.startswith("--stage-commands: ") and "\n" not in said
    assert "--confirm risky" in said and "--confirm-path" in said


async def test_a_link_made_while_a_person_decides_is_not_landed_through(root: Path) -> None:
    """Approved: `secrets/token` and `src/evil.yml`. Before the approval, `.github/workflows`
    came to link to `src/`, so landing would write a workflow no one was shown: refused at
    its open, and what had landed already (`secrets/token`, first in order) is put back."""
    state = console(root)
    policy = {"confirm_path": ("secrets/",)}
    async with Client(server(root, **policy)) as client:
        command = "echo t1 > secrets/token && echo x > src/evil.yml"
        waiting = asyncio.create_task(call(client, "bash", command=command))
        record = await _pending(state)
        assert "secrets/token" in record["rule"]
        (root / ".github").mkdir()
        (root / ".github" / "workflows").symlink_to("../src")
        state.decide(None, record["id"], approve=True)
        answer = await waiting
    assert answer.is_error, answer.text
    assert ".github/workflows/evil.yml" in answer.text and "put back" in answer.text
    assert (root / "secrets" / "token").read_text() == "t0\n"
    assert not (root / "src" / "evil.yml").exists()


@pytest.mark.parametrize(
    ("extra", "warned"),
    [
        ({"stage_commands": False}, True),
        ({"stage_commands": False, "confirm": ("risky", "exec")}, False),
        ({}, False),
    ],
)
def test_rules_that_do_not_hold_commands_are_said_at_start(
    root: Path, caplog, extra, warned: bool
) -> None:
    with caplog.at_level("WARNING", logger="agent_workspace_mcp"):
        server(root, **extra)
    said = [r.getMessage() for r in caplog.records if "--stage-commands" in r.getMessage()]
    assert bool(said) is warned, said


def test_the_start_up_line_says_commands_run_against_a_view(root: Path) -> None:
    import subprocess
    import sys

    argv = ["--root", str(root), "--shell-any", "--sandbox", "bwrap", "--confirm", "risky"]
    out = subprocess.run(
        [sys.executable, "-m", "agent_workspace_mcp", *argv, "--stage-commands"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    line = out.stderr.splitlines()[-2]
    assert "sandbox bwrap; each against a view, landed as --confirm decides)" in line, line
    assert "asks a person before risky" in line and "add --stage-commands" not in out.stderr


async def test_a_grant_lets_later_change_sets_within_its_paths_land(root: Path) -> None:
    """Approve + 30 min on a command that changed `Makefile`: a later command changing
    only `Makefile` lands unasked; one that also changes a workflow is asked."""
    state = console(root)
    async with Client(server(root)) as client:
        waiting = asyncio.create_task(call(client, "bash", command="echo 'all:' > Makefile"))
        record = await _pending(state)
        state.decide(None, record["id"], approve=True, grant={"kind": "minutes", "minutes": 30})
        assert not (await waiting).is_error
        again = await ok(client, "bash", command="echo 'test:' >> Makefile")
        assert "changed 1 file" in again
        assert (root / "Makefile").read_text() == "all:\ntest:\n"
        assert len(state.approvals()) == 1
        both = "echo 'x:' >> Makefile && mkdir -p .github/workflows && echo a > .github/workflows/b.yml"
        waiting = asyncio.create_task(call(client, "bash", command=both))
        asked = await _pending(state)
        assert "ci: .github/workflows/b.yml" in asked["rule"]
        state.decide(None, asked["id"], approve=False)
        assert (await waiting).is_error
    assert (root / "Makefile").read_text() == "all:\ntest:\n"


async def test_a_command_asked_about_by_its_argv_is_never_granted(root: Path) -> None:
    state = console(root)
    async with Client(server(root, confirm=("exec",))) as client:
        waiting = asyncio.create_task(call(client, "bash", command="echo 'y = 2' >> src/a.py"))
        record = await _pending(state)
        with pytest.raises(Exception, match="approved once") as error:
            state.decide(None, record["id"], approve=True, grant={"kind": "session"})
        assert "\n" not in str(error.value)
        state.decide(None, record["id"], approve=True)
        assert not (await waiting).is_error


async def test_a_subpath_session_is_decided_on_the_roots_names(root: Path) -> None:
    """A session confined to `.github` (X-Workspace-Subpath) writes `workflows/evil.yml`:
    the root's `.github/workflows/evil.yml`, which CI runs. Its change set is decided on
    the root's names, as the file tools' calls are."""
    from fastmcp.client.transports import StreamableHttpTransport

    from tests.e2e.http_server import start

    (root / ".github").mkdir()
    state = console(root)
    served = start(
        root,
        "--token",
        "tok-0123456789abcdef",
        "--allow-remote-exec",
        "--shell-any",
        "--sandbox",
        "bwrap",
        "--confirm",
        "risky",
        "--confirm-via",
        "console",
        "--confirm-wait",
        "0.2",
        "--stage-commands",
        "--operator-token",
        "op-0123456789abcdef",
    )
    headers = {"Authorization": "Bearer tok-0123456789abcdef", "X-Workspace-Subpath": ".github"}
    try:
        async with Client(StreamableHttpTransport(served.url, headers=headers)) as client:
            command = "mkdir -p workflows && echo 'on: push' > workflows/evil.yml"
            first = await ok(client, "bash", command=command)
            assert first.startswith("Not landed yet"), first
            assert "ci: .github/workflows/evil.yml" in first
            record = await _pending(state)
            state.decide(None, record["id"], approve=True)
            landed = await ok(client, "bash", command=command)
            assert "staged changes landed" in landed
            assert (root / ".github" / "workflows" / "evil.yml").read_text() == "on: push\n"
    finally:
        assert served.stop() == 0


@pytest.mark.parametrize("mode", ["legacy", "modern"])
async def test_the_client_is_asked_about_a_change_set_and_its_yes_lands_it(
    root: Path, mode: str
) -> None:
    """Answered where the person is: a client that declares elicitation (2025-11-25) or
    answers input_required (2026-07-28) is shown the rule, and its yes lands the set."""
    from fastmcp.client.elicitation import ElicitResult

    asked: list[str] = []

    async def approve(message, response_type, params, context):
        asked.append(message)
        return ElicitResult(action="accept", content={"approve": True})

    chosen = {"mode": "legacy"} if mode == "legacy" else {}
    extra = {"confirm_via": ("client",)}
    async with Client(server(root, **extra), elicitation_handler=approve, **chosen) as client:
        answer = await ok(client, "bash", command="echo 'all:' > Makefile")
    assert len(asked) == 1 and "build: Makefile" in asked[0], asked
    assert "staged changes landed" in answer
    assert (root / "Makefile").read_text() == "all:\n"
