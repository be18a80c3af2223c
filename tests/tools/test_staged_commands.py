"""`--stage-commands` (issue 46, item 6): with `--confirm exec`, a command runs in the
sandbox against a copy-on-write view of the workspace; the person is shown what it
changed, and exactly that lands on approval; a denial or no answer lands nothing.
Real commands under a real bubblewrap over a real fuse-overlayfs view; the console's
decisions through its state object, the same code its page posts to."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import pytest
from fastmcp import Client

from agent_workspace_mcp import Settings, create_server
from agent_workspace_mcp.console.state import ConsoleState
from agent_workspace_mcp.core import limits
from agent_workspace_mcp.core.errors import ConfigError
from agent_workspace_mcp.core.exec.commands import check_bwrap
from agent_workspace_mcp.core.exec.staging import find_overlay
from agent_workspace_mcp.core.workspaces import WorkspaceRegistry
from tests.helpers import call, ok, requires, until


def _missing() -> str | None:
    dirs = os.environ["PATH"].split(os.pathsep)
    try:
        check_bwrap(dirs)
        find_overlay(dirs)
    except ConfigError as exc:
        return str(exc)
    return None


pytestmark = [pytest.mark.slow, requires(_missing())]  # real bwrap and FUSE mounts


@pytest.fixture(autouse=True)
def short_waits(monkeypatch) -> None:
    monkeypatch.setattr(limits, "CONFIRM_POLL_SECONDS", 0.05)


def tree(root: Path) -> dict[str, tuple[str, int, str]]:
    """Every entry below `root` (state directory aside): kind, mode, content or target."""
    found = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel.split("/")[0] == ".workspace-mcp":
            continue
        st = path.lstat()
        if stat.S_ISLNK(st.st_mode):
            found[rel] = ("l", 0, os.readlink(path))
        elif stat.S_ISDIR(st.st_mode):
            found[rel] = ("d", stat.S_IMODE(st.st_mode), "")
        else:
            found[rel] = ("f", stat.S_IMODE(st.st_mode), path.read_text())
    return found


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "a.py").write_text("x = 1\ny = 2\n")
    (ws / "old").mkdir()
    for n in range(3):
        (ws / "old" / f"{n}.txt").write_text(f"{n}\n")
    (ws / "run.sh").write_text("echo hi\n")
    return ws


def server(root: Path, **extra):
    values = {
        "root": str(root),
        "audit": False,
        "shell_mode": "any",
        "sandbox": "bwrap",
        "confirm": ("exec",),
        "confirm_via": ("console",),
        "confirm_wait": 1.0,
        "stage_commands": True,
    } | extra
    return create_server(Settings(**values))


def console(root: Path) -> ConsoleState:
    return ConsoleState(
        WorkspaceRegistry.confined(str(root), ()),
        journal_max_bytes=limits.JOURNAL_MAX_BYTES_DEFAULT,
        checkpoint_max_bytes=limits.CHECKPOINT_STORE_MAX_BYTES,
    )


async def _pending(state: ConsoleState) -> dict:
    for _ in range(400):
        waiting = [r for r in state.approvals() if r.get("status") == "pending"]
        if waiting:
            return waiting[0]
        await asyncio.sleep(0.05)
    raise AssertionError("no approval was asked")


SCRIPT = (
    "sed -i s/y/z/ src/a.py && rm -rf old && mv run.sh go.sh && chmod +x go.sh "
    "&& ln -s src/a.py link && mkdir -p gen && echo made > gen/new.txt"
)


async def test_approve_lands_exactly_the_diff_shown(root: Path) -> None:
    before = tree(root)
    state = console(root)
    async with Client(server(root)) as client:
        waiting = asyncio.create_task(call(client, "bash", command=SCRIPT))
        record = await _pending(state)
        assert tree(root) == before  # it ran, but nothing reached the workspace
        shown = record["summary"]
        for line in (
            "src/a.py: modified",
            "-y = 2",
            "+z = 2",
            "old/0.txt: deleted",
            "old: deleted",
            "run.sh: deleted",
            "go.sh: new, executable",
            "link: new link -> src/a.py",
            "gen/new.txt: new",
        ):
            assert line in shown, (line, shown)
        state.decide(None, record["id"], approve=True)
        answer = await waiting
        assert not answer.is_error, answer.text
        assert "staged changes landed" in answer.text and "changed " in answer.text
        after = tree(root)
        assert after["src/a.py"][2] == "x = 1\nz = 2\n"
        assert "old" not in after and "run.sh" not in after
        assert after["go.sh"] == ("f", 0o755, "echo hi\n")
        assert after["link"] == ("l", 0, "src/a.py")
        assert after["gen/new.txt"][2] == "made\n"
        # Landed like any change: undone byte for byte, modes and links included.
        assert "Undid" in await ok(client, "undo")
        assert tree(root) == before
        log = await ok(client, "work_log")
        assert "bash" in log and "src/a.py" in log


async def test_deny_lands_nothing(root: Path) -> None:
    before = tree(root)
    state = console(root)
    async with Client(server(root)) as client:
        waiting = asyncio.create_task(call(client, "bash", command=SCRIPT))
        record = await _pending(state)
        state.decide(None, record["id"], approve=False)
        answer = await waiting
    assert answer.is_error and "not landed" in answer.text and "denied" in answer.text
    assert tree(root) == before


async def test_no_answer_lands_nothing_and_a_late_approval_lands_the_shown_set(
    root: Path,
) -> None:
    before = tree(root)
    state = console(root)
    async with Client(server(root, confirm_timeout=60)) as client:
        first = await ok(client, "bash", command="echo one >> src/a.py")
        assert first.startswith("Not landed yet") and "does not run again" in first
        assert tree(root) == before
        record = await _pending(state)
        state.decide(None, record["id"], approve=True)
        landed = await ok(client, "bash", command="echo one >> src/a.py")
        assert "staged changes landed" in landed
        # Landed once: the command did not run again on the repeat.
        assert (root / "src" / "a.py").read_text() == "x = 1\ny = 2\none\n"


async def test_a_request_no_one_answers_expires_and_lands_nothing(root: Path) -> None:
    before = tree(root)
    state = console(root)
    async with Client(server(root, confirm_timeout=1.2)) as client:
        first = await ok(client, "bash", command="rm -rf src")
        assert first.startswith("Not landed yet")
        approval = first.split("approval_status('", 1)[1].split("'", 1)[0]
        status = await until(
            lambda: ok(client, "approval_status", id=approval),
            lambda s: "waiting for a person" not in s,
        )
        assert "expired" in status
        with pytest.raises(Exception, match="already expired"):
            state.decide(None, approval, approve=True)
    assert tree(root) == before


async def test_a_path_changed_since_the_run_is_named_and_nothing_lands(root: Path) -> None:
    state = console(root)
    async with Client(server(root)) as client:
        waiting = asyncio.create_task(call(client, "bash", command="sed -i s/x/w/ src/a.py"))
        record = await _pending(state)
        (root / "src" / "a.py").write_text("edited meanwhile\n")
        state.decide(None, record["id"], approve=True)
        answer = await waiting
    assert answer.is_error and "src/a.py changed since the command ran" in answer.text
    assert (root / "src" / "a.py").read_text() == "edited meanwhile\n"


async def test_a_command_that_changes_nothing_asks_nothing(root: Path) -> None:
    state = console(root)
    async with Client(server(root)) as client:
        answer = await ok(client, "run_command", command=["cat", "src/a.py"])
    assert "y = 2" in answer and "changed nothing" in answer
    assert state.approvals() == []


async def test_background_runs_are_refused_in_one_sentence(root: Path) -> None:
    async with Client(server(root)) as client:
        answer = await call(client, "run_command", command=["sleep", "1"], background=True)
    assert answer.is_error and "no background jobs" in answer.text and "\n" not in answer.text


async def test_git_changes_are_never_landed(root: Path) -> None:
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    state = console(root)
    async with Client(server(root)) as client:
        waiting = asyncio.create_task(
            call(
                client, "bash", command="mkdir -p sub/.git && echo x > sub/.git/hooks; echo ok > f"
            )
        )
        record = await _pending(state)
        assert "sub/.git" in record["summary"] and "never changed by a command" in record["summary"]
        state.decide(None, record["id"], approve=True)
        answer = await waiting
    assert answer.is_error and "cannot land" in answer.text
    assert not (root / "sub").exists() and not (root / "f").exists()


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ({"confirm": ("write",)}, "add --confirm exec"),
        ({"sandbox_network": True}, "leave out --sandbox-network"),
        ({"sandbox": "none"}, "needs the bwrap sandbox"),
        ({"checkpoints": False}, "leave out --no-checkpoints"),
    ],
)
def test_what_cannot_stage_refuses_to_start_in_one_line(root: Path, extra, says) -> None:
    with pytest.raises(ConfigError) as error:
        server(root, **extra)
    assert says in str(error.value) and "\n" not in str(error.value)
    assert str(error.value).startswith("--stage-commands: ")
