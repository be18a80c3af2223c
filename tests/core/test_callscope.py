"""core.callscope: the one answer to "which paths does this call touch" (issue 43).

The argument tables are closed: every argument of every registered tool (all settings
that register them, tools/schemas.json) is either a path the module resolves or listed
as not a path, so a new tool cannot take a path the approval gate does not see.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_workspace_mcp.core import callscope
from agent_workspace_mcp.core.workspaces import WorkspaceRegistry

SCHEMAS = Path(callscope.__file__).parents[1] / "tools" / "schemas.json"


def test_every_tool_argument_is_known_to_the_path_tables() -> None:
    known = set(callscope.PATH_ARGUMENTS) | callscope.PLACE_ARGUMENTS | callscope.OTHER_ARGUMENTS
    table = json.loads(SCHEMAS.read_text())
    unknown = {
        f"{key.rsplit('.', 1)[1]}({name})"
        for key, (_digest, schema, _ctx) in table.items()
        for name in schema.get("properties", {})
        if name not in known
    }
    assert not unknown, f"say whether these name paths (core/callscope.py): {sorted(unknown)}"
    both = set(callscope.PATH_ARGUMENTS) & callscope.OTHER_ARGUMENTS
    assert not both


@pytest.fixture
def ws(tmp_path: Path):
    (tmp_path / "migrations").mkdir()
    (tmp_path / "migrations" / "1.sql").write_text("x\n")
    (tmp_path / "mig").symlink_to("migrations")
    (tmp_path / "sub").mkdir()
    return WorkspaceRegistry.confined(str(tmp_path), ()).primary


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("write_file", {"path": "sub/../migrations/1.sql"}),
        ("write_file", {"path": "mig/1.sql"}),
        ("patch", {"edits": [{"path": "mig/1.sql"}]}),
        ("apply_patch", {"patch": "--- a/mig/1.sql\n+++ b/mig/1.sql\n@@ -1 +1 @@\n-x\n+y\n"}),
        ("delete_path", {"path": "migrations"}),
        ("rename_path", {"path": "migrations", "newName": "old"}),
    ],
)
def test_every_spelling_resolves_to_the_real_path(ws, tool: str, args: dict) -> None:
    found = callscope.touched(ws, tool, args)
    assert "migrations/1.sql" in found.paths, found


def test_a_diff_that_deletes_is_a_delete_in_any_spelling(ws) -> None:
    for spelling in ('+++ "/dev/null"', "+++  /dev/null", "+++ /dev/null"):
        text = f"--- a/migrations/1.sql\n{spelling}\n@@ -1 +0,0 @@\n-x\n"
        assert callscope.touched(ws, "apply_patch", {"patch": text}).deletes, spelling


@pytest.mark.parametrize(
    ("tool", "args", "lands"),
    [
        ("move_path", {"source": "migrations", "destination": "sub/db"}, "sub/db/1.sql"),
        ("move_path", {"source": "sub/../migrations", "destination": "new"}, "new/1.sql"),
        ("rename_path", {"path": "migrations", "newName": "old"}, "old/1.sql"),
    ],
)
def test_a_moved_folder_touches_where_its_entries_land(
    ws, tool: str, args: dict, lands: str
) -> None:
    found = callscope.touched(ws, tool, args)
    assert "migrations/1.sql" in found.paths and lands in found.paths, found


def test_a_moved_link_carries_nothing_below_it(ws) -> None:
    """Moving `mig` moves the link, not the folder it points to."""
    found = callscope.touched(ws, "move_path", {"source": "mig", "destination": "sub/m"})
    assert "sub/m" in found.paths and not any(p.startswith("sub/m/") for p in found.paths)


def test_the_folders_a_link_could_give_a_protected_name() -> None:
    globs = [
        ".github/workflows/**",
        "/app/*/migrations/**",
        "Makefile",
        "*.pem",
        "**/requirements/*.txt",
        "docs/",
        "!.github/workflows/ok.yml",
        "# a comment",
        ".github/workflows/*.yml",
    ]
    assert callscope.link_folders(globs) == [".github/workflows", "app", "Makefile", "docs"]


def test_a_file_has_the_names_the_root_links_give_it(ws, tmp_path: Path) -> None:
    """`mig` (a root entry) links to `migrations`, `sub/flows` (an anchored glob's folder)
    to `sub`'s sibling `flows`: each file below a target also goes by the link's name."""
    (tmp_path / "flows").mkdir()
    (tmp_path / "sub" / "flows").symlink_to("../flows")
    (tmp_path / "away").symlink_to("/")  # outside the root: no name inside it
    (tmp_path / "flows" / "deep").mkdir()
    (tmp_path / "flows" / "deep" / "shared.yml").symlink_to("../../sub/s.yml")
    links, complete = callscope.links_held(ws, ["sub/flows", "nowhere/x"])
    assert complete
    assert sorted(links) == [
        ("mig", "migrations"),
        ("sub/flows", "flows"),
        ("sub/flows/deep/shared.yml", "sub/s.yml"),
    ]
    found = callscope.touched(ws, "write_file", {"path": "flows/ci.yml"})
    found.landings.append("migrations")
    callscope.add_linked(found, links)
    assert found.paths == ["flows/ci.yml"] and found.linked == ["sub/flows/ci.yml"], found
    assert found.landings == ["migrations", "mig"]
    assert found.names == ["flows/ci.yml", "sub/flows/ci.yml"]
    assert list(callscope.aliases("migrationsX/1.sql", links)) == []


def test_links_past_the_entry_bound_leave_the_call_incomplete(ws, tmp_path, monkeypatch) -> None:
    """A protected folder with more entries than are looked at: a link may be among the
    rest, so the call is incomplete (the gate asks) rather than decided on a part."""
    for n in range(5):
        (tmp_path / "migrations" / f"{n}.sql").write_text("x\n")
    monkeypatch.setattr(callscope, "TOUCHED_ENTRIES_MAX", 3)
    links, complete = callscope.links_held(ws, ["migrations"])
    assert not complete
    found = callscope.Touched(paths=["notes.txt"])
    callscope.add_linked(found, links, complete)
    assert not found.complete


def test_a_subpath_session_holds_the_roots_links_and_its_own_plain_names(tmp_path: Path) -> None:
    from agent_workspace_mcp.requestctx import parse_subpath

    (tmp_path / "app" / "ci").mkdir(parents=True)
    (tmp_path / "app" / "vault").mkdir()
    (tmp_path / "app" / "secrets").symlink_to("vault")
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "workflows").symlink_to("../app/ci")
    registry = WorkspaceRegistry.confined(str(tmp_path), ())
    view = registry.view(parse_subpath(registry.primary, "app")).primary
    folders = callscope.link_folders([".github/workflows/**", "secrets/"])
    links, complete = callscope.links_held(view, folders)
    assert complete
    assert (".github/workflows", "app/ci") in links  # the root's, outside the session
    assert ("app/secrets", "app/vault") in links  # a plain name at the session's root
    assert list(callscope.aliases("app/vault/k", links)) == ["app/secrets/k"]
    # The whole root's session does not take `app` for a root.
    whole, _ = callscope.links_held(registry.primary, folders)
    assert ("app/secrets", "app/vault") not in whole
