"""`--confirm risky` (issue 48, item 1): the policy's one table drives the gate, `--help`
and the README; a call asks only when a rule matches what it resolves to, and the
request names the rule."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest
from fastmcp import Client

from agent_workspace_mcp import Settings, create_server
from agent_workspace_mcp.core import limits, risk
from tests.helpers import call, ok

README = Path(__file__).resolve().parents[2] / "README.md"


def test_one_table_drives_the_readme_help_and_the_setting() -> None:
    block = re.search(r"<!-- risky:start -->\n(.*?)\n<!-- risky:end -->", README.read_text(), re.S)
    assert block and block.group(1) == risk.markdown_table(), (
        "README's risky table is stale: `python -m agent_workspace_mcp.configuration`"
    )
    assert get_args(risk.RuleName) == risk.NAMES
    shown = subprocess.run(
        [sys.executable, "-m", "agent_workspace_mcp", "--help"], capture_output=True, text=True
    ).stdout
    flat = " ".join(shown.split())
    for rule in risk.RULES:
        assert f"{rule.name}: {rule.why}" in flat


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("x = 1\n")
    (ws / ".github" / "workflows").mkdir(parents=True)
    (ws / ".github" / "workflows" / "ci.yml").write_text("on: push\n")
    (ws / "innocent.yml").symlink_to(".github/workflows/ci.yml")
    for name, count in (("gen", 25), ("few", 5)):
        (ws / name).mkdir()
        for n in range(count):
            (ws / name / f"{n}.txt").write_text("x\n")
    return ws


def server(root: Path, **extra):
    values = {
        "root": str(root),
        "audit": False,
        "confirm": ("risky",),
        "confirm_via": ("console",),
        "confirm_wait": 0.2,
    } | extra
    return create_server(Settings(**values))


def asked(answer: str) -> str | None:
    """The rule named in a pending answer, or None when the call ran."""
    if not answer.startswith("Not run yet"):
        return None
    found = re.search(r"--confirm risky \(([\w-]+)", answer)
    assert found, answer
    return found.group(1)


@pytest.fixture(autouse=True)
def short_polls(monkeypatch) -> None:
    monkeypatch.setattr(limits, "CONFIRM_POLL_SECONDS", 0.05)


async def test_everything_else_runs_and_each_rule_asks(root: Path) -> None:
    async with Client(server(root)) as client:
        assert asked(await ok(client, "write_file", path="src/app.py", content="x = 2\n")) is None
        assert (
            asked(await ok(client, "edit_file", path="src/app.py", oldString="2", newString="3"))
            is None
        )
        assert asked(await ok(client, "delete_path", path="few", recursive=True)) is None
        assert (root / "src" / "app.py").read_text() == "x = 3\n" and not (root / "few").exists()
        cases = {
            "ci": ("write_file", {"path": ".github/workflows/ci.yml", "content": "on: pr\n"}),
            "build": ("write_file", {"path": "sub/Makefile", "content": "all:\n"}),
            "dependencies": ("write_file", {"path": "requirements.txt", "content": "evil\n"}),
            "secrets": ("write_file", {"path": ".env.local", "content": "K=v\n"}),
            "mass-delete": ("delete_path", {"path": "gen", "recursive": True}),
            "forced-undo": ("undo", {"force": True}),
        }
        for rule, (tool, args) in cases.items():
            answer = await ok(client, tool, **args)
            assert asked(answer) == rule, (rule, answer)
    assert (root / ".github" / "workflows" / "ci.yml").read_text() == "on: push\n"
    assert not (root / "requirements.txt").exists() and (root / "gen" / "0.txt").exists()


async def test_the_rule_is_decided_on_the_real_path(root: Path) -> None:
    async with Client(server(root)) as client:
        through_link = await ok(client, "write_file", path="innocent.yml", content="on: pr\n")
        dotted = await ok(
            client, "write_file", path="src/../.github/workflows/ci.yml", content="on: pr\n"
        )
        patched = await ok(
            client,
            "apply_patch",
            patch="--- a/innocent.yml\n+++ b/innocent.yml\n@@ -1 +1 @@\n-on: push\n+on: pr\n",
        )
    assert asked(through_link) == asked(dotted) == asked(patched) == "ci"
    assert ".github/workflows/ci.yml" in through_link
    assert (root / ".github" / "workflows" / "ci.yml").read_text() == "on: push\n"


async def test_a_folder_moved_into_place_is_decided_where_its_files_land(root: Path) -> None:
    """A folder is moved or renamed with everything in it, so the call is decided on
    where each file lands: `stage/workflows/evil.yml` moved as `stage` -> `.github` lands
    at `.github/workflows/evil.yml`, a CI file, though neither name the call gives is one."""
    (root / ".github" / "workflows" / "ci.yml").unlink()
    (root / ".github" / "workflows").rmdir()
    for folder in ("stage/workflows", "docs/flows", ".github/flows"):
        (root / folder).mkdir(parents=True)
        (root / folder / "evil.yml").write_text("on: push\n")
    async with Client(server(root)) as client:
        into = await ok(client, "move_path", source="docs/flows", destination=".github/workflows")
        renamed = await ok(client, "rename_path", path=".github/flows", newName="workflows")
        plain = await ok(client, "move_path", source="docs/flows", destination="docs/other")
        aside = await ok(client, "move_path", source=".github", destination="aside")
        whole = await ok(client, "move_path", source="stage", destination=".github")
        (root / "link").symlink_to("stage/workflows")  # a link the repository ships
        (root / ".gh").mkdir()
        linked = await ok(
            client, "move_path", source="link", destination=".gh/../.github/workflows"
        )
    assert asked(into) == "ci" and ".github/workflows/evil.yml" in into, into
    assert asked(renamed) == "ci" and ".github/workflows/evil.yml" in renamed, renamed
    assert asked(whole) == "ci" and ".github/workflows/evil.yml" in whole, whole
    assert asked(plain) is None and asked(aside) is None, (plain, aside)
    assert asked(linked) == "ci" and "what lands at .github/workflows" in linked, linked
    assert (root / "stage" / "workflows" / "evil.yml").exists()
    assert (root / "aside" / "flows" / "evil.yml").exists()
    assert not (root / ".github").exists()


async def test_a_protected_name_through_a_linked_folder_is_decided_too(root: Path) -> None:
    """A repository whose `.github/workflows` is a link to `ci/workflows`: CI reads
    `.github/workflows/evil.yml` through it, so a write named so asks though the file it
    resolves to is `ci/workflows/evil.yml`."""
    (root / ".github" / "workflows").rename(root / "ci")
    (root / ".github" / "workflows").symlink_to("../ci")
    async with Client(server(root)) as client:
        named = await ok(client, "write_file", path=".github/workflows/evil.yml", content="x\n")
        edited = await ok(
            client, "edit_file", path=".github/workflows/ci.yml", oldString="push", newString="pr"
        )
    assert asked(named) == "ci", named
    assert asked(edited) == "ci", edited
    assert not (root / "ci" / "evil.yml").exists()
    assert (root / "ci" / "ci.yml").read_text() == "on: push\n"


async def test_a_file_a_protected_name_links_to_is_decided_as_that_name(root: Path) -> None:
    """The other way round: `.github/workflows` links to `ci/` (and `Makefile` to
    `build/rules.txt`), and the call names the file itself. CI reads `ci/evil.yml` as
    `.github/workflows/evil.yml`, so it asks as that name would."""
    (root / ".github" / "workflows").rename(root / "ci")
    (root / ".github" / "workflows").symlink_to("../ci")
    (root / "build").mkdir()
    (root / "build" / "rules.txt").write_text("all:\n")
    (root / "Makefile").symlink_to("build/rules.txt")
    async with Client(server(root)) as client:
        wrote = await ok(client, "write_file", path="ci/evil.yml", content="x\n")
        edited = await ok(client, "edit_file", path="ci/ci.yml", oldString="push", newString="pr")
        moved = await ok(client, "move_path", source="few", destination="ci/few")
        built = await ok(client, "write_file", path="build/rules.txt", content="all:\n\tcurl x\n")
        plain = await ok(client, "write_file", path="src/app.py", content="x = 2\n")
    assert [asked(a) for a in (wrote, edited, moved, built)] == ["ci", "ci", "ci", "build"], (
        wrote,
        edited,
        moved,
        built,
    )
    assert ".github/workflows/evil.yml" in wrote, wrote
    assert asked(plain) is None, plain
    assert not (root / "ci" / "evil.yml").exists() and not (root / "ci" / "few").exists()
    assert (root / "ci" / "ci.yml").read_text() == "on: push\n"
    assert (root / "build" / "rules.txt").read_text() == "all:\n"


async def test_a_file_a_workflow_link_reaches_is_decided_as_the_workflow(root: Path) -> None:
    """`.github/workflows/shared.yml` is a link to `shared/ci.yml`: CI runs that file, so
    writing, editing, moving or deleting it by its own name asks."""
    (root / "shared").mkdir()
    (root / "shared" / "ci.yml").write_text("on: push\n")
    (root / ".github" / "workflows" / "shared.yml").symlink_to("../../shared/ci.yml")
    ways = [
        ("write_file", {"path": "shared/ci.yml", "content": "x\n"}),
        ("edit_file", {"path": "shared/ci.yml", "oldString": "push", "newString": "pr"}),
        ("delete_path", {"path": "shared/ci.yml"}),
        ("move_path", {"source": "shared/ci.yml", "destination": "src/ci.yml"}),
        ("delete_path", {"path": "shared", "recursive": True}),
    ]
    async with Client(server(root)) as client:
        answers = [await ok(client, tool, **args) for tool, args in ways]
        beside = await ok(client, "write_file", path="shared/other.yml", content="x\n")
    assert [asked(a) for a in answers] == ["ci"] * len(ways), answers
    assert ".github/workflows/shared.yml" in answers[0]
    from agent_workspace_mcp.console.state import ConsoleState
    from agent_workspace_mcp.core.workspaces import WorkspaceRegistry

    state = ConsoleState(
        WorkspaceRegistry.confined(str(root), ()),
        journal_max_bytes=limits.JOURNAL_MAX_BYTES_DEFAULT,
        checkpoint_max_bytes=limits.CHECKPOINT_STORE_MAX_BYTES,
    )
    shown = next(r["summary"] for r in state.approvals() if r["tool"] == "write_file")
    assert "touches: shared/ci.yml\nthrough a link, also: .github/workflows/shared.yml" in shown
    assert (root / "shared" / "ci.yml").read_text() == "on: push\n"
    assert asked(beside) is None, beside


async def test_commands_ask_only_with_network(root: Path) -> None:
    settings = {"shell_mode": "any", "sandbox": "none"}
    async with Client(server(root, **settings)) as client:
        assert asked(await ok(client, "run_command", command=["true"])) is None
    async with Client(server(root, **settings, sandbox_network=True)) as client:
        assert asked(await ok(client, "run_command", command=["true"])) == "network"


async def test_risky_rules_keeps_only_the_rules_named(root: Path) -> None:
    async with Client(server(root, risky_rules=("ci",))) as client:
        assert asked(await ok(client, "write_file", path="requirements.txt", content="x\n")) is None
        assert asked(await ok(client, "write_file", path="innocent.yml", content="x\n")) == "ci"


def test_an_unknown_rule_names_the_choices() -> None:
    from agent_workspace_mcp.configuration import settings_from_sources
    from agent_workspace_mcp.core.errors import ConfigError

    with pytest.raises(ConfigError) as error:
        settings_from_sources(["--risky-rules", "cii"], environ={}, dotenv_path="")
    assert "cii" in str(error.value) and "dependencies" in str(error.value)


async def test_a_risky_write_is_refused_when_denied(root: Path) -> None:
    from agent_workspace_mcp.console.state import ConsoleState
    from agent_workspace_mcp.core.workspaces import WorkspaceRegistry

    state = ConsoleState(
        WorkspaceRegistry.confined(str(root), ()),
        journal_max_bytes=limits.JOURNAL_MAX_BYTES_DEFAULT,
        checkpoint_max_bytes=limits.CHECKPOINT_STORE_MAX_BYTES,
    )
    async with Client(server(root)) as client:
        first = await ok(client, "write_file", path=".env", content="K=v\n")
        record = next(r for r in state.approvals() if r["status"] == "pending")
        assert "secrets" in first and record["tool"] == "write_file"
        state.decide(None, record["id"], approve=False)
        denied = await call(client, "write_file", path=".env", content="K=v\n")
    assert denied.is_error and "denied" in denied.text and not (root / ".env").exists()


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", "-C", str(root), *args],
        check=True,
        capture_output=True,
    )


async def test_a_link_the_repository_ships_deep_in_the_tree_gives_its_name(root: Path) -> None:
    """`services/api/.env -> ../../config/api.env` and `Dockerfile -> ../../docker/api.txt`,
    committed: the files they reach are read as `.env` and a Dockerfile, so writing them
    asks. Found in the repository's index (no walk of the tree); a link the index does
    not hold yet is found once it is added."""
    (root / "config").mkdir()
    (root / "config" / "api.env").write_text("KEY=1\n")
    (root / "docker").mkdir()
    (root / "docker" / "api.txt").write_text("FROM python\n")
    (root / "services" / "api").mkdir(parents=True)
    (root / "services" / "api" / ".env").symlink_to("../../config/api.env")
    (root / "services" / "api" / "Dockerfile").symlink_to("../../docker/api.txt")
    (root / "services" / "web").mkdir()
    (root / "config" / "web.env").write_text("KEY=2\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "shipped")
    async with Client(server(root)) as client:
        env = await ok(client, "write_file", path="config/api.env", content="KEY=evil\n")
        docker = await ok(
            client, "edit_file", path="docker/api.txt", oldString="python", newString="evil"
        )
        plain = await ok(client, "write_file", path="config/web.env", content="KEY=3\n")
        # added later: found when the index changes
        (root / "services" / "web" / ".env").symlink_to("../../config/web.env")
        _git(root, "add", "services/web/.env")
        later = await ok(client, "write_file", path="config/web.env", content="KEY=4\n")
    assert [asked(env), asked(docker), asked(later)] == ["secrets", "build", "secrets"], (
        env,
        docker,
        later,
    )
    assert "services/api/.env" in env and "services/web/.env" in later
    assert asked(plain) is None, plain
    assert (root / "config" / "api.env").read_text() == "KEY=1\n"
    assert (root / "docker" / "api.txt").read_text() == "FROM python\n"
    assert (root / "config" / "web.env").read_text() == "KEY=3\n"
