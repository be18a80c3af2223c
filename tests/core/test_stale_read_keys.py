"""The stale-read records name a file by its resolved path below the workspace's root,
whichever session (whole workspace or subpath) located it."""

from __future__ import annotations

import posixpath
from pathlib import Path

from agent_workspace_mcp.core.containment import locate
from agent_workspace_mcp.core.state.stale_reads import records_for
from agent_workspace_mcp.core.workspaces import Subpath, WorkspaceRegistry, WorkspaceView


def test_a_files_key_is_its_resolved_path_below_the_root(tmp_path: Path) -> None:
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "mod.py").write_text("x = 1\n")
    (tmp_path / "top.txt").write_text("top\n")
    (tmp_path / "link.txt").symlink_to("src/pkg/mod.py")
    primary = WorkspaceRegistry.confined(str(tmp_path)).primary
    records = records_for(primary)
    sub = tmp_path / "src"
    view = WorkspaceView(
        WorkspaceRegistry.confined(str(tmp_path)),
        Subpath(("src",), (sub.stat().st_dev, sub.stat().st_ino)),
    )
    cases = [
        (primary, "top.txt", "top.txt"),
        (primary, "src/pkg/mod.py", "src/pkg/mod.py"),
        (primary, "link.txt", "src/pkg/mod.py"),  # the file it resolves to, not the spelling
        (primary, "src/pkg/../pkg/./mod.py", "src/pkg/mod.py"),
        (primary, "new/file.txt", "new/file.txt"),
        (primary, ".", "."),
        (view.primary, "pkg/mod.py", "src/pkg/mod.py"),  # a subpath session's, from the root
        (view.primary, ".", "src"),
    ]
    for ws, path, expected in cases:
        with locate(ws, path, defer_parents=True) as loc:
            assert records.key(loc) == expected, path
            assert records.key(loc) == posixpath.relpath(loc.real_abs, primary.root)
