"""What a protected folder holds never changes without a question, whatever links the
repository ships and whatever tool or spelling the agent uses.

The oracle is what CI (or a migration runner) reads: every file reachable below the
protected folder, links followed, by content. Each call runs on a fresh copy of a
repository laid out one way; a call that changed that view ran unasked is a bypass.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from fastmcp import Client

from agent_workspace_mcp import Settings, create_server
from agent_workspace_mcp.core import limits
from tests.helpers import call, requires
from tests.tools.test_staged_commands import _missing as staging_missing


@pytest.fixture(autouse=True)
def short_polls(monkeypatch) -> None:
    monkeypatch.setattr(limits, "CONFIRM_POLL_SECONDS", 0.02)


def _layouts(folder: str) -> dict[str, tuple[Callable[[Path], None], str]]:
    """name -> (how the repository is laid out, where the protected files really are)."""
    top = folder.rpartition("/")[0]
    first, _, rest = folder.partition("/")

    def plain(r: Path) -> None:
        (r / folder).mkdir(parents=True)
        (r / folder / "one.yml").write_text("on: push\n")

    def folder_link(r: Path) -> None:  # `folder` -> ../real
        (r / "real").mkdir()
        (r / "real" / "one.yml").write_text("on: push\n")
        if top:
            (r / top).mkdir(parents=True)
        (r / folder).symlink_to(os.path.relpath(r / "real", (r / folder).parent))

    def top_link(r: Path) -> None:  # the first component -> meta
        (r / "meta" / rest).mkdir(parents=True)
        (r / "meta" / rest / "one.yml").write_text("on: push\n")
        (r / first).symlink_to("meta")

    def file_link(r: Path) -> None:  # `folder/one.yml` -> shared/one.yml
        (r / folder).mkdir(parents=True)
        (r / "shared").mkdir()
        (r / "shared" / "one.yml").write_text("on: push\n")
        (r / folder / "one.yml").symlink_to(os.path.relpath(r / "shared" / "one.yml", r / folder))

    return {
        "plain": (plain, folder),
        "folder-link": (folder_link, "real"),
        "top-link": (top_link, f"meta/{rest}" if rest else "meta"),
        "file-link": (file_link, "shared"),
    }


def _calls(t: str) -> list[tuple[str, dict]]:
    one = f"{t}/one.yml"
    return [
        ("write_file", {"path": f"{t}/evil.yml", "content": "x\n"}),
        ("write_file", {"path": one, "content": "x\n"}),
        ("edit_file", {"path": one, "oldString": "push", "newString": "pr"}),
        ("patch", {"edits": [{"path": one, "oldString": "push", "newString": "pr"}]}),
        ("apply_patch", {"patch": f"--- a/{one}\n+++ b/{one}\n@@ -1 +1 @@\n-on: push\n+on: pr\n"}),
        ("apply_patch", {"patch": f"--- /dev/null\n+++ b/{t}/new.yml\n@@ -0,0 +1 @@\n+x\n"}),
        ("write_binary_file", {"path": f"{t}/b.yml", "contentBase64": "eAo="}),
        ("delete_path", {"path": one}),
        ("move_path", {"source": "stage/x.yml", "destination": f"{t}/x.yml"}),
        ("move_path", {"source": "stage", "destination": f"{t}/sub"}),
        ("rename_path", {"path": one, "newName": "old.yml"}),
        ("move_path", {"source": one, "destination": "elsewhere.yml"}),
        ("delete_path", {"path": t.split("/")[0], "recursive": True}),
    ]


def _named_calls(folder: str) -> list[tuple[str, dict]]:
    """The protected folder taken away by its own name (it may be a link, or hold one)."""
    first = folder.split("/")[0]
    return [
        ("delete_path", {"path": folder, "recursive": True}),
        ("move_path", {"source": folder, "destination": "moved"}),
        ("move_path", {"source": first, "destination": "moved-top"}),
    ]


def _reads(root: Path, folder: str) -> dict[str, str]:
    """What a reader of `folder` sees: every file below it, links followed."""
    seen = {}
    for where, _dirs, files in os.walk(root / folder, followlinks=True):
        for name in files:
            path = Path(where) / name
            try:
                seen[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
            except OSError:
                seen[str(path.relative_to(root))] = "unreadable"
    return seen


CASES = [
    (".github/workflows", {"confirm": ("risky",)}),
    ("db/migrations", {"confirm_path": ("db/migrations/**",)}),
    ("secrets", {"confirm_path": ("secrets/",)}),  # unanchored: a `secrets` folder anywhere
]
EVERY_LAYOUT = pytest.mark.parametrize("layout", ["plain", "folder-link", "top-link", "file-link"])
EVERY_POLICY = pytest.mark.parametrize(
    ("folder", "policy"), CASES, ids=["ci", "confirm-path", "confirm-path-unanchored"]
)


def _fresh(tmp_path: Path, n: int, make: Callable[[Path], None]) -> Path:
    """A fresh copy of the layout for one call, with `stage/x.yml` to move in."""
    root = tmp_path / f"{n}"
    root.mkdir()
    make(root)
    (root / "stage").mkdir()
    (root / "stage" / "x.yml").write_text("evil\n")
    return root


@EVERY_LAYOUT
@EVERY_POLICY
async def test_no_call_changes_a_protected_folder_unasked(
    tmp_path: Path, folder: str, policy: dict, layout: str
) -> None:
    make, real = _layouts(folder)[layout]
    bypasses = []
    for n, (tool, args) in enumerate(_calls(real) + _named_calls(folder)):
        root = _fresh(tmp_path, n, make)
        before = _reads(root, folder)
        assert before, "the layout holds a protected file"
        settings = Settings(
            root=str(root), audit=False, confirm_via=("console",), confirm_wait=0.02, **policy
        )
        async with Client(create_server(settings)) as client:
            answer = await call(client, tool, **args)
        if not answer.text.startswith("Not run yet") and _reads(root, folder) != before:
            bypasses.append(f"{tool} {args}: {answer.text.splitlines()[0]}")
    assert not bypasses, bypasses


def _ci_link_into_app(root: Path) -> None:
    (root / "app" / "ci").mkdir(parents=True)
    (root / "app" / "ci" / "one.yml").write_text("k=1\n")
    (root / ".github").mkdir()
    (root / ".github" / "workflows").symlink_to("../app/ci")


def _secrets_folder_link(root: Path) -> None:
    (root / "app" / "ci").mkdir(parents=True)
    (root / "app" / "ci" / "one.yml").write_text("k=1\n")
    (root / "app" / "secrets").symlink_to("ci")


def _secrets_file_link(root: Path) -> None:
    (root / "app" / "ci").mkdir(parents=True)
    (root / "app" / "ci" / "one.yml").write_text("k=1\n")
    (root / "app" / "secrets").mkdir()
    (root / "app" / "secrets" / "one.yml").symlink_to("../ci/one.yml")


def _secrets_deep_link(root: Path) -> None:
    (root / "app" / "ci").mkdir(parents=True)
    (root / "app" / "ci" / "one.yml").write_text("k=1\n")
    (root / "app" / "x").mkdir()
    (root / "app" / "x" / "secrets").symlink_to("../ci")


@pytest.mark.slow  # a server over HTTP: subpath sessions come from a header
@pytest.mark.parametrize(
    ("make", "policy", "named", "path"),
    [
        (_ci_link_into_app, ("--confirm", "risky"), ".github/workflows/", "ci/one.yml"),
        (_secrets_folder_link, ("--confirm-path", "secrets/"), "app/secrets/", "ci/one.yml"),
        (_secrets_file_link, ("--confirm-path", "secrets/"), "app/secrets/", "ci/one.yml"),
        (_secrets_deep_link, ("--confirm-path", "secrets/"), "app/x/secrets/", "x/secrets/one.yml"),
    ],
    ids=[
        "root-link-into-the-session",
        "plain-name-folder-link",
        "plain-name-file-link",
        "named-through-a-deep-link",
    ],
)
async def test_a_subpath_session_cannot_reach_a_protected_file_through_a_link(
    tmp_path: Path, make: Callable[[Path], None], policy: tuple[str, str], named: str, path: str
) -> None:
    """A session confined to `app` reaches `app/ci/one.yml` where a protected name does:
    the root's `.github/workflows -> ../app/ci` (CI reads it as a workflow; the link is
    outside the session's folder and decides all the same), or `app/secrets` (a plain
    name, protected at any depth) linking to it, as a folder or file by file (the
    session's folder is where its project starts, so it is looked at as a root is); or
    the session names it through `x/secrets -> ../ci`, a protected name as written."""
    from fastmcp.client.transports import StreamableHttpTransport

    from tests.e2e.http_server import start

    root = tmp_path / "ws"
    make(root)
    (root / "app" / "src").mkdir()
    before = (root / "app" / "ci" / "one.yml").read_text()
    token = "tok-0123456789abcdef"
    served = start(
        root,
        *("--token", token, *policy, "--confirm-via", "console"),
        *("--confirm-wait", "0.2", "--operator-token", "op-0123456789abcdef"),
    )
    headers = {"Authorization": f"Bearer {token}", "X-Workspace-Subpath": "app"}
    try:
        async with Client(StreamableHttpTransport(served.url, headers=headers)) as client:
            ways = [
                ("write_file", {"path": path, "content": "x\n"}),
                ("edit_file", {"path": path, "oldString": "1", "newString": "2"}),
                ("delete_path", {"path": path}),
            ]
            answers = [(await call(client, tool, **args)).text for tool, args in ways]
            plain = (await call(client, "write_file", path="src/a.py", content="x\n")).text
    finally:
        assert served.stop() == 0
    for answer in answers:
        assert answer.startswith("Not run yet") and named in answer, answer
    assert plain.startswith("Created"), plain
    assert (root / "app" / "ci" / "one.yml").read_text() == before


def _commands(real: str, folder: str) -> list[str]:
    """Shell commands that change the protected files in every way a file tool can, and
    a few only a command can (a link placed inside, a copy of a folder, a chmod)."""
    first = folder.split("/")[0]
    return [
        f"echo x > {real}/evil.yml",
        f"echo x > {real}/one.yml",
        f"sed -i s/push/pr/ {real}/one.yml",
        f"rm {real}/one.yml",
        f"rm -rf {real}",
        f"mv stage/x.yml {real}/x.yml",
        f"mv {real}/one.yml elsewhere.yml",
        f"chmod +x {real}/one.yml",
        f"rm -rf {folder}",
        f"rm -rf {first}",
        f"mv {first} moved-top",
        f"echo x > {folder}/evil2.yml",
        f"ln -sf ../stage/x.yml {real}/lnk.yml",
        f"cp -r stage {real}/sub",
        f"mkdir -p {folder}/deep && echo x > {folder}/deep/e.yml",
    ]


@pytest.mark.slow  # real bwrap and FUSE mounts, 15 staged commands a case
@requires(staging_missing())
@EVERY_LAYOUT
@EVERY_POLICY
async def test_no_staged_command_changes_a_protected_folder_unasked(
    tmp_path: Path, folder: str, policy: dict, layout: str
) -> None:
    """The same oracle for commands under `--stage-commands`: what the protected folder
    holds changes only once a person said yes to the change set."""
    make, real = _layouts(folder)[layout]
    bypasses, asked = [], 0
    for n, command in enumerate(_commands(real, folder)):
        root = _fresh(tmp_path, n, make)
        before = _reads(root, folder)
        settings = Settings(
            root=str(root),
            audit=False,
            shell_mode="any",
            sandbox="bwrap",
            stage_commands=True,
            confirm_via=("console",),
            confirm_wait=0.02,
            **policy,
        )
        async with Client(create_server(settings)) as client:
            answer = await call(client, "bash", command=command)
        if answer.text.startswith("Not landed yet"):
            asked += 1
        elif _reads(root, folder) != before:
            bypasses.append(f"{command}: {answer.text.splitlines()[-1]}")
    assert not bypasses, bypasses
    assert asked >= 11  # the oracle is not empty: most of these change the folder
