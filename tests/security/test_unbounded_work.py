"""Issue 28 item 8: every tool's work is bounded; past the bound it answers with what it
has and says so. Each case did not answer in 60 s before the fix; `fail_after` here is a
hang detector, not a speed measurement (bench/ measures speed)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from agent_workspace_mcp import Settings
from agent_workspace_mcp.core import limits
from tests.conftest import open_client
from tests.helpers import call, ok

HANG = 50  # seconds: "does not answer" in the red team's terms was 60


@pytest.fixture
def big_tree(ws: Path) -> Path:
    n = 24_000
    nested = "".join(f"function f{i}(){{" for i in range(n)) + "}" * n + "\n"
    (ws / "nested.js").write_text(nested)
    (ws / "long.js").write_text(
        "".join(f"function g{i}(a){{return a+{i}}};" for i in range(30_000))
    )
    # Every level uses `x`: finding each use's enclosing function walks down the levels.
    deep = "".join(f"function h{i}(){{x;\n" for i in range(n)) + "}" * n + "\n"
    (ws / "deep_refs.js").write_text(deep)
    (ws / "refs.py").write_text("".join(f"def d{i}():\n    return target\n" for i in range(30_000)))
    return ws


@pytest.mark.slow  # three files run into their per-file bound
async def test_code_navigation_answers_on_pathological_files(big_tree: Path, monkeypatch) -> None:
    shipped = limits.CODE_FILE_SECONDS

    def bound(seconds: float) -> None:
        # Where a call runs into the bound, the bound is under test, not its size: at the
        # shipped 5 s these three calls took 16 s. The others keep the shipped bound.
        monkeypatch.setattr(limits, "CODE_FILE_SECONDS", seconds)

    async with open_client(Settings(root=str(big_tree), audit=False)) as client:
        bound(1.0)
        with anyio.fail_after(HANG):
            nested = await ok(client, "outline", path="nested.js")
        assert "stopped after" in nested and "nests too deeply" in nested
        bound(shipped)
        with anyio.fail_after(HANG):
            long_line = await ok(client, "outline", path="long.js")
        assert "function g0(a)" in long_line and "outline truncated" in long_line
        with anyio.fail_after(HANG):
            refs = await ok(client, "find_references", name="target")
        assert "30000 references in 1 files" in refs and "(in d0)" in refs
        bound(1.0)
        with anyio.fail_after(HANG):
            inside = await call(client, "find_references", name="f23999", path="nested.js")
        assert not inside.is_error or "no references" in inside.text
        with anyio.fail_after(HANG):
            uses = await call(client, "find_references", name="x", path="deep_refs.js")
        assert not uses.is_error, uses.text


@pytest.mark.slow  # a 20,000-line index
async def test_undo_over_a_planted_index_of_20000_lines_answers(ws: Path) -> None:
    async with open_client(Settings(root=str(ws), audit=False)) as client:
        await ok(client, "write_file", path="first.txt", content="x\n")
        index = ws / ".workspace-mcp" / "checkpoints" / "index.jsonl"
        first = json.loads(index.read_text().splitlines()[0])["id"]
        with index.open("a") as handle:
            for i in range(20_000):
                line = {
                    "id": f"p{i}",
                    "ts": "2026-01-01T00:00:00Z",
                    "tool": "write_file",
                    "p": {f"f{i}.txt": [{"t": "-"}, {"t": "d", "m": 0o755}]},
                }
                handle.write(json.dumps(line) + "\n")
        with anyio.fail_after(HANG):
            answer = await call(client, "undo", to=first)
    assert answer.is_error and "20,000 paths" in answer.text, answer.text
    assert (ws / "first.txt").exists()


def test_outline_of_a_huge_one_line_file_is_bounded(monkeypatch) -> None:
    """Issue 43, item 20: a 15 MB one-line file (a function with millions of parameters)
    answered after 92 s; the documented bound is CODE_FILE_SECONDS per file. The parse
    and the search for definitions both look at the clock: with a short bound, the
    outline stops and says so (the old code parsed and queried it whole first)."""
    from agent_workspace_mcp.core import limits as lim
    from agent_workspace_mcp.core.code import outline

    monkeypatch.setattr(lim, "CODE_FILE_SECONDS", 0.2)
    source = ("def f(" + ",".join("a" for _ in range(7_500_000)) + "): pass\n").encode()
    assert outline._definitions("python", source).partial
    small = b"def g(a, b):\n    pass\n"  # an ordinary file is unaffected
    assert [d.name for d in outline._definitions("python", small)] == ["g"]
