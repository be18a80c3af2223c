"""The symbol index (issue 36): find_symbol reads and parses a source file only when it
changed or may define the name; what is kept never outlives a change, never reaches
outside the root, survives a restart, and a damaged copy on disk costs only time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_workspace_mcp import Settings
from agent_workspace_mcp.core.code import index, outline
from tests.conftest import open_client
from tests.helpers import fails, ok


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per tree-sitter parse of a file's definitions (the outline cache off)."""
    counted: list[int] = []
    original = outline._definitions

    def counting(language: str, source: bytes):
        counted.append(1)
        return original(language, source)

    monkeypatch.setattr(outline, "_definitions", counting)
    monkeypatch.setattr(outline, "OUTLINE_CACHE_FILES", 0)
    return counted


def project(ws: Path, users: int = 30) -> None:
    (ws / "pkg").mkdir()
    (ws / "pkg" / "widget.py").write_text("class Widget:\n    def draw(self):\n        pass\n")
    for n in range(users):  # each has a line shaped like a definition of Widget (issue 47)
        (ws / "pkg" / f"use{n}.py").write_text(
            f"from .widget import Widget\n\n\nclass W{n}(Widget):  # not a class Widget\n    pass\n"
        )


def restart() -> None:
    """A new server process: nothing of the index in memory."""
    index._indexes.clear()


async def test_unchanged_files_are_not_parsed_again(ws: Path, parses: list[int]) -> None:
    project(ws)
    async with open_client(Settings(root=str(ws))) as client:
        first = await ok(client, "find_symbol", name="Widget")
        assert first.startswith("pkg/widget.py:1-3  class Widget") and len(parses) == 31
        parses.clear()
        assert await ok(client, "find_symbol", name="Widget") == first
        assert len(parses) == 1  # only the file that defines it
        parses.clear()
        (ws / "pkg" / "use7.py").write_text("class Widget:  # a second one\n    pass\n")
        again = await ok(client, "find_symbol", name="Widget")
        assert "pkg/use7.py:1-2  class Widget" in again and len(parses) == 2
        parses.clear()
        (ws / "pkg" / "widget.py").write_text("class Gadget:\n    pass\n")  # renamed away
        assert "pkg/widget.py" not in await ok(client, "find_symbol", name="Widget")
        assert "class Gadget" in await ok(client, "find_symbol", name="Gadget")


async def test_a_restart_starts_warm_and_a_damaged_index_costs_only_time(
    ws: Path, parses: list[int]
) -> None:
    project(ws)
    async with open_client(Settings(root=str(ws))) as client:
        first = await ok(client, "find_symbol", name="Widget")
    kept = ws / ".workspace-mcp" / "symbols.json"
    assert len(json.loads(kept.read_text())["files"]) == 31
    restart()
    parses.clear()
    async with open_client(Settings(root=str(ws))) as client:
        assert await ok(client, "find_symbol", name="Widget") == first
    assert len(parses) == 1
    for damage in ("not json", '{"version": 1, "files": {"pkg/widget.py": [[1, 2], "x"]}}'):
        kept.write_text(damage)
        restart()
        async with open_client(Settings(root=str(ws))) as client:
            assert await ok(client, "find_symbol", name="Widget") == first


async def test_what_is_kept_never_reaches_outside(ws: Path, outside: Path) -> None:
    """A directory swapped for a link to outside after the index learnt its files: the
    signatures no longer match (another device and inode), and the containment walk
    refuses the read."""
    (ws / "src").mkdir()
    (ws / "src" / "a.py").write_text("def Thing():\n    pass\n")
    (outside / "a.py").write_text("def Thing():\n    return 'top secret'\n")
    async with open_client(Settings(root=str(ws))) as client:
        assert "src/a.py:1-2  def Thing()" in await ok(client, "find_symbol", name="Thing")
        (ws / "src" / "a.py").unlink()
        (ws / "src").rmdir()
        (ws / "src").symlink_to(outside)
        answer = await fails(client, "find_symbol", name="Thing")
    assert "no definition of Thing" in answer and "secret" not in answer


async def test_read_only_keeps_nothing_on_disk(ws: Path) -> None:
    project(ws, users=2)
    async with open_client(Settings(root=str(ws), read_only=True)) as client:
        assert "class Widget" in await ok(client, "find_symbol", name="Widget")
    assert not (ws / ".workspace-mcp" / "symbols.json").exists()


async def test_a_file_renamed_in_with_its_mtime_restored_is_read_again(ws: Path) -> None:
    """Issue 43, mutation test: an index keyed on size and mtime alone missed a definition
    renamed in with the mtime restored (same size): the signature's device, inode and
    ctime must each tell it apart."""
    import os

    (ws / "b.py").write_text("# Zzz\nclass Aaa:\n    pass\n")
    async with open_client(Settings(root=str(ws))) as client:
        before = await call_text(client, "find_symbol", name="Zzz")
        assert "b.py" not in before or "no definition" in before, before
        old = os.stat(ws / "b.py")
        swapped = ws / "b.tmp"
        swapped.write_text("class Zzz:\n    pass\n# Aaa\n")
        assert swapped.stat().st_size == old.st_size
        os.utime(swapped, ns=(old.st_atime_ns, old.st_mtime_ns))
        os.replace(swapped, ws / "b.py")
        after = await ok(client, "find_symbol", name="Zzz")
    assert after.startswith("b.py:1-2  class Zzz"), after


async def call_text(client, tool: str, **args) -> str:
    result = await client.call_tool(tool, args, raise_on_error=False)
    return result.content[0].text
