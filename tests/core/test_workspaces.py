"""The registry's rules for names, primaries and state directories."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_workspace_mcp.core.errors import ConfigError, UnknownWorkspaceError
from agent_workspace_mcp.core.workspaces import WorkspaceRegistry


def test_root_is_default_and_primary(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    reg = WorkspaceRegistry.confined(str(tmp_path / "a"), [("api", str(tmp_path / "b"))])
    assert reg.primary.name == "default"
    assert reg.get().root == str(tmp_path / "a")
    assert reg.get("api").root == str(tmp_path / "b")


def test_first_workspace_is_primary_unless_one_is_named_default(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        (tmp_path / name).mkdir()
    reg = WorkspaceRegistry.confined(
        None, [("web", str(tmp_path / "a")), ("api", str(tmp_path / "b"))]
    )
    assert reg.primary.name == "web"
    reg = WorkspaceRegistry.confined(
        None, [("web", str(tmp_path / "a")), ("default", str(tmp_path / "c"))]
    )
    assert reg.primary.name == "default"


def test_no_flags_means_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    reg = WorkspaceRegistry.confined(None)
    assert (reg.primary.name, reg.primary.root) == ("default", str(tmp_path.resolve()))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([("Bad", "a")], 'invalid workspace name "Bad"'),
        ([("-x", "a")], 'invalid workspace name "-x"'),
        ([("default", "a")], 'duplicate workspace name "default"'),
        ([("api", "a"), ("api", "a")], 'duplicate workspace name "api"'),
        ([("api", "missing")], 'workspace "api" does not exist'),
    ],
)
def test_invalid_configurations_abort(tmp_path: Path, extra, message: str) -> None:
    (tmp_path / "a").mkdir()
    extra = [(name, str(tmp_path / path)) for name, path in extra]
    with pytest.raises(ConfigError, match=message):
        WorkspaceRegistry.confined(str(tmp_path / "a"), extra)


def test_unknown_workspace_lists_the_available_ones(tmp_path: Path) -> None:
    reg = WorkspaceRegistry.confined(str(tmp_path))
    with pytest.raises(
        UnknownWorkspaceError, match=r'unknown workspace "nope"\. Available: default'
    ):
        reg.get("nope")


def test_state_dir_is_lazy_and_ignores_itself(tmp_path: Path) -> None:
    from agent_workspace_mcp.core.state.files import ensure_state_dir

    ws = WorkspaceRegistry.confined(str(tmp_path)).primary
    assert not Path(ws.state_dir).exists()
    ensure_state_dir(ws)
    path = tmp_path / ".workspace-mcp"
    assert (path / ".gitignore").read_text() == "*\n"
    (path / ".gitignore").write_text("*\n# kept\n")
    ensure_state_dir(ws)  # idempotent: an existing file is left alone
    assert (path / ".gitignore").read_text() == "*\n# kept\n"


def test_a_subpath_view_answers_for_one_workspace_everywhere(tmp_path) -> None:
    import pytest as _pytest

    from agent_workspace_mcp.core.containment import resolve_subpath
    from agent_workspace_mcp.core.errors import UnknownWorkspaceError

    (tmp_path / "main" / "sub").mkdir(parents=True)
    (tmp_path / "other").mkdir()
    registry = WorkspaceRegistry.confined(
        str(tmp_path / "main"), [("other", str(tmp_path / "other"))]
    )
    full = registry.view()
    assert len(full) == len(list(full)) == 2 and full.get("other").name == "other"
    view = registry.view(resolve_subpath(registry.primary, "sub"))
    assert len(view) == len(list(view)) == 1
    assert next(iter(view)) is view.primary is view.get() is view.get("default")
    assert view.primary.root == str((tmp_path / "main" / "sub").resolve())
    with _pytest.raises(UnknownWorkspaceError, match="confined to sub"):
        view.get("other")
    assert registry.get("other").name == "other"  # the registry itself never changes
    assert sorted(view.roots()) == sorted(registry.roots())
