"""Skills, resources, prompts and the audit trail through the real client."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from fastmcp.skills import Skill

from agent_workspace_mcp import Settings, create_server
from agent_workspace_mcp.core.audit import AuditLog
from agent_workspace_mcp.core.skills import builtin_skills
from tests.conftest import open_client
from tests.helpers import fails, ok

REPO = Path(__file__).resolve().parents[2]


def write_skill(root: Path, folder: str, frontmatter: str, body: str = "Do the thing.\n") -> Path:
    path = root / ".agents" / "skills" / folder
    path.mkdir(parents=True, exist_ok=True)
    (path / "SKILL.md").write_text(f"---\n{frontmatter}---\n\n{body}")
    return path


@pytest.fixture
def skills_ws(ws: Path) -> Path:
    good = write_skill(
        ws,
        "deploy",
        "name: deploy\ndescription: Ship the app to production.\nallowed-tools: run_command read_file\n",
        "# Deploy\n1. build\n2. ship\n",
    )
    (good / "scripts").mkdir()
    (good / "scripts" / "ship.sh").write_text("echo ship\n")
    (good / "references").mkdir()
    (good / "references" / "checklist.md").write_text("- [ ] tests\n")
    write_skill(
        ws, "review", "name: review\ndescription: |\n  Review a diff for bugs\n  and style.\n"
    )
    write_skill(ws, "Bad-Name", "name: Bad-Name\ndescription: invalid name\n")
    write_skill(ws, "mismatch", "name: other\ndescription: folder differs\n")
    write_skill(ws, "broken-yaml", "name: broken-yaml\ndescription: [unclosed\n")
    (ws / ".agents" / "skills" / "no-frontmatter").mkdir()
    (ws / ".agents" / "skills" / "no-frontmatter" / "SKILL.md").write_text("# just markdown\n")
    huge = write_skill(ws, "huge", "name: huge\ndescription: too big\n", "x" * (300 * 1024))
    assert huge.exists()
    linked = write_skill(ws, "linked", "name: linked\ndescription: has a symlink out\n")
    (linked / "escape").symlink_to("/etc/passwd")
    (ws / ".agents" / "skills" / "not-a-skill").mkdir()
    return ws


async def test_catalog_lists_valid_skills_and_skips_bad_ones(skills_ws: Path, capsys) -> None:
    async with open_client(Settings(root=str(skills_ws), builtin_skills=False)) as client:
        catalog = (await client.read_resource("resource://skills"))[0].text
        assert catalog.splitlines() == [
            "deploy — Ship the app to production.",
            "review — Review a diff for bugs and style.",
        ]
        # The server keeps answering, with one warning per bad folder.
        assert await ok(client, "workspace_list")
    warnings = [line for line in capsys.readouterr().err.splitlines() if "skipping skill" in line]
    for folder in ("Bad-Name", "mismatch", "broken-yaml", "no-frontmatter", "huge", "linked"):
        assert sum(f"skills/{folder}:" in w for w in warnings) == 1, (folder, warnings)
    assert not any("not-a-skill" in w for w in warnings)


async def test_skill_tool_returns_instructions_and_bundled_paths(skills_ws: Path) -> None:
    async with open_client(Settings(root=str(skills_ws), builtin_skills=False)) as client:
        text = await ok(client, "skill", name="deploy")
        assert text.splitlines()[:3] == [
            "# skill: deploy",
            "Ship the app to production.",
            "allowed tools: run_command read_file",
        ]
        assert "# Deploy\n1. build\n2. ship" in text
        assert text.endswith(
            "Bundled files (read them with read_file):\n"
            "- .agents/skills/deploy/references/checklist.md\n"
            "- .agents/skills/deploy/scripts/ship.sh"
        )
        # The listed paths really are readable with read_file.
        assert "echo ship" in await ok(
            client, "read_file", path=".agents/skills/deploy/scripts/ship.sh"
        )
        assert (
            await fails(client, "skill", name="nope")
            == 'unknown skill "nope". Available: deploy, review'
        )
        assert (
            await fails(client, "skill", name="mismatch")
            == 'unknown skill "mismatch". Available: deploy, review'
        )


async def test_a_new_folder_is_seen_on_the_next_call(skills_ws: Path) -> None:
    async with open_client(Settings(root=str(skills_ws))) as client:
        assert "fresh" not in (await client.read_resource("resource://skills"))[0].text
        write_skill(skills_ws, "fresh", "name: fresh\ndescription: Added while running.\n")
        assert (
            "fresh — Added while running."
            in (await client.read_resource("resource://skills"))[0].text
        )
        assert (await ok(client, "skill", name="fresh")).startswith("# skill: fresh")


async def test_skills_dir_override_is_contained(ws: Path, outside: Path) -> None:
    write_skill(outside.parent / "elsewhere", "ext", "name: ext\ndescription: outside the root.\n")
    custom = ws / "my-skills"
    (custom / "local").mkdir(parents=True)
    (custom / "local" / "SKILL.md").write_text(
        "---\nname: local\ndescription: From the override.\n---\nbody\n"
    )
    custom_only = {"builtin_skills": False}
    async with open_client(Settings(root=str(ws), skills_dir="my-skills", **custom_only)) as client:
        assert (await client.read_resource("resource://skills"))[
            0
        ].text == "local — From the override."
    outside_dir = str(outside.parent / "elsewhere" / ".agents" / "skills")
    async with open_client(Settings(root=str(ws), skills_dir=outside_dir, **custom_only)) as client:
        assert (await client.read_resource("resource://skills"))[0].text.startswith(
            "(no skills installed"
        )


async def test_each_server_s_new_skill_prompt_names_its_own_skills_folder(ws: Path) -> None:
    """The prompts are built once per skills folder (prompts._prompts): a server with
    another folder, built after one with the default, must not get the default's text."""
    seen = {}
    for folder in (None, "team-skills", None):
        extra = {"skills_dir": folder} if folder else {}
        async with open_client(Settings(root=str(ws), **extra)) as client:
            got = await client.get_prompt("new_skill", {"goal": "g"})
            seen.setdefault(folder, set()).add(got.messages[0].content.text)
    assert all(len(texts) == 1 for texts in seen.values())
    assert "path: team-skills/<name>/SKILL.md" in seen["team-skills"].pop()
    assert "path: .agents/skills/<name>/SKILL.md" in seen[None].pop()


async def test_skills_extension_serves_valid_skills_despite_bad_folders(skills_ws: Path) -> None:
    from fastmcp.skills import SkillsClientExtension

    server = create_server(Settings(root=str(skills_ws), builtin_skills=False))
    async with Client(server, extensions=[SkillsClientExtension()]) as client:
        names = sorted(s.frontmatter.name for s in await client.list_skills())
        assert names == ["deploy", "review"]
        resources = {str(r.uri) for r in await client.list_resources()}
        assert "skill://deploy/SKILL.md" in resources and not any(
            "Bad-Name" in r for r in resources
        )
        write_skill(skills_ws, "later", "name: later\ndescription: Appears without a restart.\n")
        assert "later" in {s.frontmatter.name for s in await client.list_skills()}


async def test_every_client_sees_the_same_skills(ws: Path) -> None:
    """A SKILL.md our reader accepts but FastMCP's refuses (a non-string license) is
    offered nowhere: not by the tool, the catalog resource or the skills extension."""
    from fastmcp.skills import SkillsClientExtension

    write_skill(ws, "fine", "name: fine\ndescription: A valid skill.\n")
    write_skill(ws, "odd", "name: odd\ndescription: Licensed oddly.\nlicense: 3\n")
    server = create_server(Settings(root=str(ws), builtin_skills=False))
    async with Client(server, extensions=[SkillsClientExtension()]) as client:
        extension = sorted(s.frontmatter.name for s in await client.list_skills())
        catalog = (await client.read_resource("resource://skills"))[0].text
        assert extension == ["fine"]
        assert catalog.splitlines() == ["fine — A valid skill."]
        text = await fails(client, "skill", name="odd")
        assert text == 'unknown skill "odd". Available: fine'
        assert "# skill: fine" in await ok(client, "skill", name="fine")


async def test_context_resources(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    settings = Settings(root=str(tmp_path / "one"), workspaces=(("api", str(tmp_path / "two")),))
    async with open_client(settings) as client:
        uris = {str(r.uri) for r in await client.list_resources()}
        assert {"resource://cwd", "resource://skills", "resource://workspaces"} <= uris
        assert (await client.read_resource("resource://cwd"))[0].text == str(tmp_path / "one")
        workspaces = (await client.read_resource("resource://workspaces"))[0].text
        assert workspaces == await ok(client, "workspace_list")


async def test_prompts_are_listed_and_rendered(client: Client) -> None:
    prompts = {p.name: p for p in await client.list_prompts()}
    assert set(prompts) >= {"resume", "new_skill", "plan_change"}
    text = (
        (await client.get_prompt("resume", {"focus": "the auth refactor"})).messages[0].content.text
    )
    assert "the auth refactor" in text
    assert text.index("work_log") < text.index("recall") < text.index("change_status")
    text = (
        (await client.get_prompt("new_skill", {"goal": "release notes"})).messages[0].content.text
    )
    assert (
        "release notes" in text
        and "write_file" in text
        and ".agents/skills/<name>/SKILL.md" in text
    )
    text = (
        (await client.get_prompt("plan_change", {"goal": "add rate limiting"}))
        .messages[0]
        .content.text
    )
    assert "add rate limiting" in text
    assert text.index("change_create") < text.index("change_doc") < text.index("task_add")


async def test_instructions_carry_the_session_convention(ws: Path) -> None:
    async with open_client(Settings(root=str(ws))) as client:
        instructions = client.instructions or ""
    assert "work_log" in instructions and "recall" in instructions and "remember" in instructions


def test_the_package_ships_valid_builtin_skills() -> None:
    skills = {s.name: s for s in builtin_skills()}
    assert set(skills) == {"workspace-session", "change-workflow"}
    assert skills["change-workflow"].files == ("references/next-actions.md",)
    assert "remember" in skills["workspace-session"].body
    # FastMCP accepts them too, so the skills extension serves them.
    assert all(Skill.from_files(s.contents) for s in skills.values())


async def test_builtin_skills_reach_every_project(ws: Path) -> None:
    from fastmcp.skills import SkillsClientExtension

    server = create_server(Settings(root=str(ws)))
    async with Client(server, extensions=[SkillsClientExtension()]) as client:
        catalog = (await client.read_resource("resource://skills"))[0].text.splitlines()
        assert [line.split(" — ")[0] for line in catalog] == [
            "change-workflow",
            "workspace-session",
        ]
        assert all(line.endswith(" (built-in)") for line in catalog)
        text = await ok(client, "skill", name="change-workflow")
        assert text.startswith("# skill: change-workflow")
        assert text.endswith(
            'Bundled files (read one with skill name="change-workflow" file=...):\n'
            "- references/next-actions.md"
        )
        bundled = await ok(
            client, "skill", name="change-workflow", file="references/next-actions.md"
        )
        assert bundled == (builtin_skills()[0].contents["references/next-actions.md"]).decode()
        assert await fails(
            client, "skill", name="change-workflow", file="../../pyproject.toml"
        ) == (
            'skill "change-workflow" has no bundled file "../../pyproject.toml". '
            "Files: references/next-actions.md"
        )
        names = sorted(s.frontmatter.name for s in await client.list_skills())
        assert names == ["change-workflow", "workspace-session"]
        # Nothing was written into the project to make that work.
        assert not (ws / ".agents").exists()


async def test_a_project_skill_replaces_the_builtin_one(ws: Path) -> None:
    write_skill(
        ws, "workspace-session", "name: workspace-session\ndescription: Ours.\n", "Local.\n"
    )
    (ws / ".agents/skills/workspace-session/notes.md").write_text("local notes\n")
    async with open_client(Settings(root=str(ws))) as client:
        catalog = (await client.read_resource("resource://skills"))[0].text.splitlines()
        # The project's skills come first; the built-in one of the same name is gone.
        assert catalog[0] == "workspace-session — Ours." and len(catalog) == 2
        assert catalog[1].startswith("change-workflow — ") and catalog[1].endswith("(built-in)")
        text = await ok(client, "skill", name="workspace-session")
        assert "Local." in text and "- .agents/skills/workspace-session/notes.md" in text
        # Both ways of naming a workspace skill's file work with file=.
        for path in ("notes.md", ".agents/skills/workspace-session/notes.md"):
            assert await ok(client, "skill", name="workspace-session", file=path) == "local notes\n"


async def test_builtin_skills_can_be_turned_off(ws: Path) -> None:
    async with open_client(Settings(root=str(ws), builtin_skills=False)) as client:
        catalog = (await client.read_resource("resource://skills"))[0].text
        assert catalog == "(no skills installed; add .agents/skills/<name>/SKILL.md)"
        assert (
            await fails(client, "skill", name="workspace-session")
            == 'unknown skill "workspace-session". Available: none installed'
        )


# --- audit -------------------------------------------------------------------------------


async def test_audit_lines_for_success_and_failure_with_meta(ws: Path, tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    (ws / "a.txt").write_text("secret content\n")
    async with open_client(Settings(root=str(ws), audit_log=str(log))) as client:
        meta = {"execution_id": "exec-1", "workspace_id": "ws-9", "project_id": "proj-3"}
        await client.call_tool("read_file", {"path": "a.txt"}, meta=meta)
        await client.call_tool("write_file", {"path": "b.txt", "content": "more secret content"})
        await client.call_tool("read_file", {"path": "../etc/passwd"}, raise_on_error=False)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["tool"], r["outcome"]) for r in lines] == [
        ("read_file", "ok"),
        ("write_file", "ok"),
        ("read_file", "error"),
    ]
    first = lines[0]
    assert (
        first["execution_id"] == "exec-1"
        and first["workspace_id"] == "ws-9"
        and first["project_id"] == "proj-3"
    )
    assert (
        first["paths"] == ["a.txt"]
        and first["workspace"] == "default"
        and first["duration_ms"] >= 0
    )
    assert "subject" not in first  # stdio/in-memory: no authenticated subject
    assert lines[1]["paths"] == ["b.txt"] and "execution_id" not in lines[1]
    assert lines[2]["error"] == "path outside workspace root: ../etc/passwd"
    assert "secret content" not in log.read_text()


async def test_audit_goes_to_stderr_by_default_and_can_be_disabled(ws: Path, capsys) -> None:
    async with open_client(Settings(root=str(ws))) as client:
        await ok(client, "workspace_list")
    err = capsys.readouterr().err
    line = next(line for line in err.splitlines() if line.startswith("audit: "))
    assert json.loads(line[len("audit: ") :])["tool"] == "workspace_list"
    async with open_client(Settings(root=str(ws), audit=False)) as client:
        await ok(client, "workspace_list")
    assert "audit: " not in capsys.readouterr().err


def test_audit_file_rotates(tmp_path: Path) -> None:
    log = AuditLog(str(tmp_path / "audit.jsonl"), max_bytes=100)
    for i in range(10):
        log.write({"tool": "t", "n": i})
    assert (tmp_path / "audit.jsonl.1").exists()
    assert (tmp_path / "audit.jsonl").stat().st_size <= 130
    stream = io.StringIO()
    AuditLog(None, 100, stream=stream).write({"tool": "x", "error": "e" * 1000})
    assert len(json.loads(stream.getvalue()[len("audit: ") :])["error"]) == 300


@pytest.mark.slow  # spawns the CLI over stdio
async def test_skills_resources_and_prompts_over_stdio(skills_ws: Path) -> None:
    """The official SDK client against the real CLI process."""
    transport = StdioTransport(
        sys.executable, ["-m", "agent_workspace_mcp", "--root", str(skills_ws)], keep_alive=False
    )
    async with Client(transport) as client:
        catalog = (await client.read_resource("resource://skills"))[0].text
        assert "workspace-session — Start and end a working session" in catalog
        text = (await client.call_tool("skill", {"name": "workspace-session"})).content[0].text
        assert text.startswith("# skill: workspace-session")
        prompts = {p.name for p in await client.list_prompts()}
        assert {"resume", "new_skill", "plan_change"} <= prompts
        rendered = await client.get_prompt("plan_change", {"goal": "x"})
        assert "change_create" in rendered.messages[0].content.text


async def test_prompt_workspace_argument_completes(tmp_path: Path) -> None:
    import mcp_types

    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    settings = Settings(root=str(tmp_path / "one"), workspaces=(("api", str(tmp_path / "two")),))
    async with open_client(settings) as client:
        ref = mcp_types.PromptReference(type="ref/prompt", name="resume")
        assert (await client.complete(ref, {"name": "workspace", "value": ""})).values == [
            "default",
            "api",
        ]
        assert (await client.complete(ref, {"name": "workspace", "value": "a"})).values == ["api"]
