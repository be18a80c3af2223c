"""`--confirm` (issue 32): a person decides, what they approved is what runs, and every
way it can go wrong refuses. Real in-memory clients in both protocol eras: 2026-07-28
(`input_required`) and 2025-11-25 (elicitation); the console's decisions through its
state object, the same code its page posts to."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.elicitation import ElicitResult

from agent_workspace_mcp import Settings, create_server
from agent_workspace_mcp.console.state import ConsoleState
from agent_workspace_mcp.core import limits
from agent_workspace_mcp.core.errors import ConfigError
from agent_workspace_mcp.core.workspaces import WorkspaceRegistry
from tests.helpers import call, ok

MODES = {"input_required": "auto", "elicitation": "legacy"}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "b.txt").write_text("beta\n")
    return tmp_path


@pytest.fixture(autouse=True)
def short_waits(monkeypatch) -> None:
    # A call waits up to CONFIRM_WAIT_SECONDS (20 s) for a person; tests need not.
    monkeypatch.setattr(limits, "CONFIRM_WAIT_SECONDS", 1.0)
    monkeypatch.setattr(limits, "CONFIRM_POLL_SECONDS", 0.05)


@pytest.fixture
def unanswered(monkeypatch) -> None:
    # For tests where no one answers while a call waits: each such call returns "Not run
    # yet" after the whole wait, which only has to outlast a poll.
    monkeypatch.setattr(limits, "CONFIRM_WAIT_SECONDS", 0.06)


def server(root: Path, **extra):
    values = {"confirm": ("destructive",), "confirm_via": ("console", "client")} | extra
    return create_server(Settings(root=str(root), audit=False, **values))


def console(root: Path) -> ConsoleState:
    registry = WorkspaceRegistry.confined(str(root), ())
    return ConsoleState(
        registry,
        journal_max_bytes=limits.JOURNAL_MAX_BYTES_DEFAULT,
        checkpoint_max_bytes=limits.CHECKPOINT_STORE_MAX_BYTES,
    )


def answering(action: str | None, seen: list[str], approve: bool = True):
    async def handler(message, response_type, params, context):
        seen.append(message)
        if action is None:
            await asyncio.sleep(limits.CONFIRM_WAIT_SECONDS + 1)  # no answer in time
        content = {"approve": approve} if action == "accept" else None
        return ElicitResult(action=action or "cancel", content=content)

    return handler


@pytest.mark.parametrize("era", MODES)
async def test_the_client_is_shown_the_call_and_its_yes_runs_it(root: Path, era: str) -> None:
    seen: list[str] = []
    handler = answering("accept", seen)
    async with Client(server(root), mode=MODES[era], elicitation_handler=handler) as client:
        answer = await ok(client, "delete_path", path="a.txt")
    assert answer.startswith("Deleted a.txt") and not (root / "a.txt").exists()
    assert len(seen) == 1 and "removes a.txt (6 bytes)" in seen[0] and "destructive" in seen[0]
    journal = (root / ".workspace-mcp" / "journal.jsonl").read_text()
    assert f"client:{era}:accept" in journal  # marked as the client's answer


@pytest.mark.parametrize("era", MODES)
@pytest.mark.parametrize("action", ["decline", "cancel", "accept-unticked"])
async def test_a_client_no_refuses(root: Path, era: str, action: str) -> None:
    seen: list[str] = []
    handler = (
        answering("accept", seen, approve=False)
        if action == "accept-unticked"
        else answering(action, seen)
    )
    async with Client(server(root), mode=MODES[era], elicitation_handler=handler) as client:
        answer = await call(client, "delete_path", path="a.txt")
        assert answer.is_error and "denied by the client" in answer.text, answer.text
        again = await call(client, "delete_path", path="a.txt")  # a denial stands
        assert again.is_error and "denied" in again.text
    assert (root / "a.txt").read_text() == "alpha\n"
    assert len(seen) == 1


async def test_a_client_that_does_not_answer_leaves_it_pending(root: Path, unanswered) -> None:
    seen: list[str] = []
    async with Client(server(root), mode="legacy", elicitation_handler=answering(None, seen)) as c:
        answer = await ok(c, "delete_path", path="a.txt")
        assert answer.startswith("Not run yet") and "approval_status('ap-" in answer
        approval = answer.split("approval_status('", 1)[1].split("'", 1)[0]
        assert "waiting for a person" in await ok(c, "approval_status", id=approval)
    assert (root / "a.txt").exists()


async def test_a_client_that_never_retries_is_refused_after_the_timeout(root: Path) -> None:
    """2026-07-28: the client got input_required and never came back with an answer."""
    seen: list[str] = []
    state = console(root)
    async with Client(
        server(root, confirm_timeout=0.5), elicitation_handler=answering(None, seen)
    ) as c:
        asking = asyncio.create_task(c.call_tool("delete_path", {"path": "a.txt"}))
        record = await _pending(state, "delete_path")
        await _until(lambda: seen)  # the client was asked, and it walks away
        asking.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asking
        await _past(record["expires"])
        assert "expired with no answer" in await ok(c, "approval_status", id=record["id"])
    assert (root / "a.txt").exists() and len(seen) == 1


async def test_the_console_approves_one_and_denies_another(root: Path) -> None:
    state = console(root)
    async with Client(server(root, confirm_via=("console",))) as client:
        waiting = asyncio.create_task(call(client, "delete_path", path="a.txt"))
        record = await _pending(state, "delete_path")
        assert "removes a.txt" in record["summary"]
        assert state.decide(None, record["id"], approve=True).endswith("approved")
        assert (await waiting).text.startswith("Deleted a.txt")
        waiting = asyncio.create_task(call(client, "delete_path", path="b.txt"))
        record = await _pending(state, "delete_path")
        state.decide(None, record["id"], approve=False)
        denied = await waiting
        assert denied.is_error and "denied by operator" in denied.text
    assert not (root / "a.txt").exists() and (root / "b.txt").exists()
    journal = (root / ".workspace-mcp" / "journal.jsonl").read_text()
    assert '"tool":"approve"' in journal and '"tool":"deny"' in journal  # the decisions


async def test_an_approval_is_for_those_arguments_once(root: Path, unanswered: None) -> None:
    state = console(root)
    async with Client(server(root, confirm_via=("console",))) as client:
        first = await ok(client, "delete_path", path="a.txt")  # no answer within the wait
        assert first.startswith("Not run yet")
        record = await _pending(state, "delete_path")
        state.decide(None, record["id"], approve=True)
        other = await ok(client, "delete_path", path="b.txt")  # other arguments: asks anew
        assert other.startswith("Not run yet") and (root / "b.txt").exists()
        assert (await ok(client, "delete_path", path="a.txt")).startswith("Deleted a.txt")
        (root / "a.txt").write_text("again\n")
        reused = await ok(client, "delete_path", path="a.txt")  # used once: asks again
        assert reused.startswith("Not run yet") and (root / "a.txt").exists()
        with pytest.raises(Exception, match="already used"):
            state.decide(None, record["id"], approve=True)


async def test_no_answer_within_the_timeout_refuses(root: Path, unanswered: None) -> None:
    state = console(root)
    async with Client(server(root, confirm_via=("console",), confirm_timeout=0.4)) as client:
        first = await ok(client, "delete_path", path="a.txt")
        approval = first.split("approval_status('", 1)[1].split("'", 1)[0]
        await _past(next(r for r in state.approvals() if r["id"] == approval)["expires"])
        assert "expired with no answer" in await ok(client, "approval_status", id=approval)
        with pytest.raises(Exception, match="already expired"):
            state.decide(None, approval, approve=True)
    assert (root / "a.txt").exists()


async def test_no_one_to_ask_refuses_in_one_sentence(root: Path) -> None:
    async with Client(server(root, confirm_via=("client",))) as client:  # no elicitation
        answer = await call(client, "delete_path", path="a.txt")
    assert answer.is_error and "no one can be asked" in answer.text and "\n" not in answer.text
    assert (root / "a.txt").exists()


async def test_what_the_person_sees_is_the_diff_or_the_command(
    root: Path, unanswered: None
) -> None:
    state = console(root)
    settings = {
        "confirm": ("write", "exec"),
        "confirm_via": ("console",),
        "shell_mode": "allowlist",
        "sandbox": "none",
    }
    async with Client(server(root, **settings)) as client:
        await ok(client, "edit_file", path="a.txt", old_string="alpha", new_string="omega")
        await ok(client, "write_file", path="b.txt", content="gamma\n")
        await ok(client, "run_command", command=["ls", "-l"])
        shown = {r["tool"]: r["summary"] for r in state.approvals()}
    assert "-alpha" in shown["edit_file"] and "+omega" in shown["edit_file"]
    assert "-beta" in shown["write_file"] and "+gamma" in shown["write_file"]
    assert '["ls", "-l"]' in shown["run_command"]
    assert (root / "a.txt").read_text() == "alpha\n"  # previews wrote nothing


async def test_confirm_paths_and_other_subjects(root: Path, unanswered: None) -> None:
    (root / "migrations").mkdir()
    state = console(root)
    async with Client(
        server(root, confirm=(), confirm_path=("migrations/**",), confirm_via=("console",))
    ) as client:
        assert (await ok(client, "write_file", path="c.txt", content="x")).startswith("Created")
        held = await ok(client, "write_file", path="migrations/1.sql", content="drop;")
        assert held.startswith("Not run yet") and "migrations/1.sql" in held
        assert "no approval ap-" in (await call(client, "approval_status", id="ap-0000000000")).text
    assert [r["tool"] for r in state.approvals()] == ["write_file"]


@pytest.mark.parametrize(
    ("values", "says"),
    [
        ({"confirm": ("delet_path",)}, "did you mean delete_path"),
        ({"confirm": ("exec",), "confirm_via": ()}, "needs someone to answer"),
        ({"confirm": ("exec",), "http": True, "token": "t" * 20}, "needs the console"),
    ],
)
def test_a_confirm_no_one_can_answer_is_a_configuration_error(root, values, says) -> None:
    from agent_workspace_mcp.configuration import preflight

    settings = Settings(root=str(root), **values)
    with pytest.raises(ConfigError, match=says):
        preflight(settings)
        create_server(settings)


async def _until(condition, timeout: float = 10.0) -> None:
    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.01)

    await asyncio.wait_for(poll(), timeout)


async def _past(expires: float) -> None:
    """Sleep until an approval's expiry has passed: the behaviour under test."""
    await asyncio.sleep(max(0.0, float(expires) - time.time()) + 0.05)


async def _pending(state: ConsoleState, tool: str) -> dict:
    for _ in range(200):
        found = [r for r in state.approvals() if r["tool"] == tool and r["status"] == "pending"]
        if found:
            return found[0]
        await asyncio.sleep(0.02)
    raise AssertionError(f"no pending approval for {tool}")


async def test_an_unanswered_client_prompt_is_said_so(root: Path, unanswered: None) -> None:
    """Issue 43, item 24: after a client's elicitation went unanswered under
    `--confirm-via client`, the refusal said "this client declares no elicitation"."""
    seen: list[str] = []
    settings = {"confirm_via": ("client",)}
    async with Client(
        server(root, **settings), mode="legacy", elicitation_handler=answering(None, seen)
    ) as client:
        answer = await call(client, "delete_path", path="a.txt")
    assert answer.is_error and "got no answer within" in answer.text, answer.text
    assert "declares no elicitation" not in answer.text and len(seen) == 1
    assert (root / "a.txt").exists()
