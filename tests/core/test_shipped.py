"""core.shipped: the links a repository tracks, read from its index once per change of
the index. Real repositories, a real git."""

from __future__ import annotations

import subprocess
from pathlib import Path

from agent_workspace_mcp.core.gitread import GitReader
from agent_workspace_mcp.core.shipped import ShippedLinks, tracked_links
from agent_workspace_mcp.core.workspaces import WorkspaceRegistry
from agent_workspace_mcp.requestctx import parse_subpath


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", "-C", str(root), *args],
        check=True,
        capture_output=True,
    )


def _reader() -> GitReader:
    import os

    return GitReader(lambda: dict(os.environ), lambda: os.environ["PATH"].split(os.pathsep))


def test_only_links_are_read_from_the_listing() -> None:
    listed = (
        "100644 e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 0\ta.txt\0"
        "120000 1de565933b05f74c75ff9a6520af5f9f8a5a2f1d 0\tdeep/.env\0"
        "120000 1de565933b05f74c75ff9a6520af5f9f8a5a2f1d 1\tdeep/.env\0"  # a conflict's stages
        "160000 2de565933b05f74c75ff9a6520af5f9f8a5a2f1d 0\tsub\0"  # a submodule
        "120000 3de565933b05f74c75ff9a6520af5f9f8a5a2f1d 0\tname with\ttab\0"
    )
    assert tracked_links(listed) == ["deep/.env", "name with\ttab"]
    assert tracked_links("") == []


def test_the_index_is_read_again_only_when_it_changes(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "a.txt").write_text("a\n")
    (tmp_path / "app" / ".env").symlink_to("a.txt")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    registry = WorkspaceRegistry.confined(str(tmp_path), ())
    shipped = ShippedLinks(_reader)
    first = shipped.of(registry.primary)
    assert first == ["app/.env"]
    (tmp_path / "app" / "Makefile").symlink_to("a.txt")  # made, not added
    assert shipped.of(registry.primary) is first  # the same index: kept
    _git(tmp_path, "add", "app/Makefile")
    assert shipped.of(registry.primary) == ["app/.env", "app/Makefile"]
    # A subpath session gets the primary root's paths.
    view = registry.view(parse_subpath(registry.primary, "app")).primary
    assert shipped.of(view) == ["app/.env", "app/Makefile"]


def test_without_a_git_directory_at_the_root_nothing_is_read(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / ".env").symlink_to("elsewhere")
    _git(tmp_path, "init", "-q")  # the repository is above the root
    _git(tmp_path, "add", "-A")
    registry = WorkspaceRegistry.confined(str(tmp_path / "ws"), ())

    def no_git() -> GitReader:
        raise AssertionError("git ran without an index at the root")

    assert ShippedLinks(no_git).of(registry.primary) == []
