"""Many agents on one workspace (issue 34), as a race: four agents over HTTP against
`--workers 2` (each its own API key, on the sessionless 2026-07-28 protocol) and one over
stdio (another server process on the same root) run read-modify-write loops with
write_file, edit_file and patch on a shared set of files for 30 s.

Every change only adds a line, so a lost update is visible: a line whose write succeeded
and that is missing at the end. Zero are allowed; every refusal must name another agent's
session; `undo(session=X)` must put back exactly X's files and nothing else.
"""

from __future__ import annotations

import json
import os
import random
import re
import sys
import time
from pathlib import Path

import anyio
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
from mcp_types import Implementation

from tests.e2e.http_server import start

pytestmark = pytest.mark.slow

SECONDS = float(os.environ.get("AWM_STRESS_SECONDS", "30"))
HTTP_AGENTS = {
    "ann": "tok-ann-0123456789ab",
    "bob": "tok-bob-0123456789ab",
    "cat": "tok-cat-0123456789ab",
    "dan": "tok-dan-0123456789ab",
}
SHARED = [f"shared/{n}.txt" for n in range(3)]
LOOP_ON_OWN_ONLY = "dan"  # works beside the others on its own files: undone alone at the end


def content_of(answer: str) -> str:
    """The file's text from read_file's numbered answer."""
    lines = answer.split("\n")
    assert lines[-1].startswith("(sha256 "), answer
    return "".join(re.sub(r"^\d+: ", "", line, count=1) + "\n" for line in lines[:-1])


class Agent:
    def __init__(self, name: str, client: Client) -> None:
        self.name = name
        self.client = client
        self.added: list[tuple[str, str]] = []  # (path, line) of every write that succeeded
        self.refusals: list[str] = []
        self.calls = 0

    async def call(self, tool: str, **args) -> tuple[bool, str]:
        self.calls += 1
        result = await self.client.call_tool(tool, args, raise_on_error=False)
        return not result.is_error, result.content[0].text

    async def run(self, deadline: float) -> None:
        rng = random.Random(self.name)
        own = [f"own/{self.name}/{n}.txt" for n in range(2)]
        paths = own if self.name == LOOP_ON_OWN_ONLY else [*SHARED, *SHARED, *own]
        n = 0
        while time.monotonic() < deadline:
            n += 1
            path = rng.choice(paths)
            line = f"<{self.name}:{n}>"
            ok, answer = await self.call("read_file", path=path)
            assert ok, answer
            text = content_of(answer)
            last = text.splitlines()[-1]
            tool = ("write_file", "edit_file", "patch")[n % 3]
            if tool == "write_file":
                ok, answer = await self.call(tool, path=path, content=text + line + "\n")
            elif tool == "edit_file":
                ok, answer = await self.call(
                    tool, path=path, oldString=last, newString=f"{last}\n{line}"
                )
            else:
                edit = {"path": path, "oldString": last, "newString": f"{last}\n{line}"}
                ok, answer = await self.call(tool, edits=[edit])
            if ok:
                self.added.append((path, line))
            else:
                assert "changed since this session last read or wrote it" in answer, answer
                self.refusals.append(answer)


def tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text()
        for p in sorted(root.rglob("*.txt"))
        if ".workspace-mcp" not in p.parts
    }


async def test_many_agents_lose_no_update_and_undo_alone(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    for path in [*SHARED, *(f"own/{a}/{n}.txt" for a in [*HTTP_AGENTS, "sam"] for n in range(2))]:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("base\n")
    keys = [arg for name, key in HTTP_AGENTS.items() for arg in ("--api-key", f"{name}={key}")]
    server = start(root, "--workers", "2", *keys, log_dir=tmp_path)
    try:
        clients = {
            name: Client(
                StreamableHttpTransport(server.url),
                auth=key,
                client_info=Implementation(name=f"{name}-agent", version="1.0"),
            )
            for name, key in HTTP_AGENTS.items()
        }
        clients["sam"] = Client(
            StdioTransport(sys.executable, ["-m", "agent_workspace_mcp", "--root", str(root)]),
            client_info=Implementation(name="sam-agent", version="1.0"),
        )
        agents = {name: Agent(name, client) for name, client in clients.items()}
        for client in clients.values():
            await client.__aenter__()
        try:
            deadline = time.monotonic() + SECONDS
            async with anyio.create_task_group() as group:
                for one in agents.values():
                    group.start_soon(one.run, deadline)
            final = tree(root)

            # Zero lost updates: every line a successful write added is still there.
            lost = [
                (a.name, path, line)
                for a in agents.values()
                for path, line in a.added
                if line not in final[path]
            ]
            assert lost == []
            assert all(a.added for a in agents.values())
            assert sum(len(a.refusals) for a in agents.values()) > 0  # the race really ran

            # Every refusal names another agent's session (never "outside the server").
            journal = [json.loads(x) for x in (root / ".workspace-mcp/journal.jsonl").open()]
            sessions = {
                e["client"].removesuffix("-agent"): e["session"] for e in journal if e.get("client")
            }
            assert len(set(sessions.values())) == 5, sessions
            for one in agents.values():
                for refusal in one.refusals:
                    named = re.search(r"by session (\S+) \((\w+)-agent\)", refusal)
                    assert named, refusal
                    assert named[1] == sessions[named[2]] and named[2] != one.name, refusal

            # An agent whose shared files others changed afterwards: refused, naming one.
            ok, answer = await agents["ann"].call("undo", session=sessions["ann"], dryRun=True)
            assert not ok and "was also changed by #" in answer, answer
            assert re.search(r"\(session (\S+), (bob|cat|sam)-agent\)", answer), answer

            # The agent that worked beside them on its own files: undone alone, exactly.
            ok, answer = await agents["dan"].call("undo", session=sessions["dan"])
            # Every one of dan's calls, however far back other agents' work pushed it.
            assert ok and answer.startswith(f"Undid {len(agents['dan'].added)} calls"), answer
            after = tree(root)
            mine = {p for p in final if p.startswith("own/dan/")}
            assert {p: after[p] for p in mine} == dict.fromkeys(mine, "base\n"), answer
            assert {p: v for p, v in after.items() if p not in mine} == {
                p: v for p, v in final.items() if p not in mine
            }
        finally:
            for client in clients.values():
                await client.__aexit__(None, None, None)
    finally:
        assert server.stop() == 0
    calls = sum(a.calls for a in agents.values())
    print(
        f"{calls} calls, {sum(len(a.refusals) for a in agents.values())} refusals, "
        f"{sum(len(a.added) for a in agents.values())} lines added"
    )
