"""Undo and restore_file (issue 17): every mutating call can be reverted, byte for byte."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

from fastmcp import Client

from agent_workspace_mcp import Settings
from tests.conftest import open_client
from tests.helpers import fails, ok


def snapshot(root: Path) -> dict[str, tuple]:
    """Every entry below root: type, permission bits, bytes or link target."""
    out: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if ".workspace-mcp" in dirnames:
            dirnames.remove(".workspace-mcp")
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            st = path.lstat()
            if path.is_symlink():
                out[rel] = ("l", os.readlink(path))
            elif path.is_dir():
                out[rel] = ("d", st.st_mode & 0o7777)
            else:
                out[rel] = ("f", st.st_mode & 0o7777, path.read_bytes())
    return out


def entries(ws: Path) -> list[dict]:
    journal = ws / ".workspace-mcp" / "journal.jsonl"
    return [json.loads(line) for line in journal.read_text().splitlines()]


def seed_tree(ws: Path) -> None:
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_text("print('app')\n")
    (ws / "src" / "tool.sh").write_text("#!/bin/sh\necho hi\n")
    (ws / "src" / "tool.sh").chmod(0o750)
    (ws / "src" / "blob.bin").write_bytes(bytes(range(256)) * 4)
    (ws / "src" / "link").symlink_to("app.py")
    (ws / "src" / "deep" / "er").mkdir(parents=True)
    (ws / "src" / "deep").chmod(0o711)
    (ws / "src" / "deep" / "er" / "x.txt").write_text("x\r\ny\r\n")
    (ws / "README.md").write_text("# readme\n")


async def test_every_mutating_tool_is_undone_exactly(client: Client, ws: Path) -> None:
    seed_tree(ws)
    before = snapshot(ws)
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(300)).decode()
    await ok(client, "write_file", path="README.md", content="# changed\n")
    await ok(client, "write_file", path="new/dir/file.txt", content="new\n")
    await ok(client, "write_binary_file", path="src/blob.bin", contentBase64=png)
    await ok(client, "edit_file", path="src/app.py", oldString="app", newString="APP")
    await ok(
        client,
        "patch",
        edits=[
            {"path": "src/tool.sh", "oldString": "hi", "newString": "bye"},
            {"path": "src/deep/er/x.txt", "oldString": "x", "newString": "z"},
        ],
    )
    diff = "--- a/README.md\n+++ /dev/null\n@@ -1 +0,0 @@\n-# changed\n"
    await ok(client, "apply_patch", patch=diff)
    await ok(client, "make_directory", path="made/a/b")
    await ok(client, "move_path", source="src/deep", destination="moved/deep")
    await ok(client, "rename_path", path="src/app.py", newName="main.py")
    await ok(client, "delete_path", path="src", recursive=True)
    assert not (ws / "src").exists()

    answer = await ok(client, "undo", steps=10)
    assert answer.startswith("Undid 10 calls: #")
    assert snapshot(ws) == before  # bytes, modes, directories, the symlink

    # The undo is recorded too: undoing it (to= the entry before it) redoes all ten.
    last_change = entries(ws)[-2]["id"]
    await ok(client, "undo", to=last_change)
    assert not (ws / "src").exists() and (ws / "moved" / "deep" / "er" / "x.txt").exists()
    assert (ws / "made" / "a" / "b").is_dir() and (ws / "new" / "dir" / "file.txt").exists()


async def test_steps_walk_back_like_an_editor(client: Client, ws: Path) -> None:
    await ok(client, "write_file", path="a.txt", content="1\n")
    await ok(client, "write_file", path="a.txt", content="2\n")
    await ok(client, "write_file", path="a.txt", content="3\n")
    answer = await ok(client, "undo")
    assert answer.splitlines()[1:] == ["restored  a.txt  (+1 -1 lines)"]
    assert (ws / "a.txt").read_text() == "2\n"
    await ok(client, "undo")
    assert (ws / "a.txt").read_text() == "1\n"
    await ok(client, "undo")
    assert not (ws / "a.txt").exists()
    assert "nothing to undo" in await fails(client, "undo")


async def test_dry_run_changes_nothing(client: Client, ws: Path) -> None:
    await ok(client, "write_file", path="a.txt", content="one\n")
    await ok(client, "delete_path", path="a.txt")
    answer = await ok(client, "undo", dryRun=True)
    assert answer.startswith("Would undo 1 call: #") and "(dry run, nothing changed)" in answer
    assert "created  a.txt" in answer
    assert not (ws / "a.txt").exists()
    await ok(client, "undo")
    assert (ws / "a.txt").read_text() == "one\n"


async def test_an_outside_change_is_refused_then_forced_and_the_undo_undone(
    client: Client, ws: Path
) -> None:
    await ok(client, "write_file", path="a.txt", content="agent\n")
    await ok(client, "write_file", path="b.txt", content="agent b\n")
    (ws / "a.txt").write_text("my editor\n")  # not through the server
    refusal = await fails(client, "undo", steps=2)
    assert refusal.startswith("undo refused: a.txt changed since those calls by something else")
    assert "force=true" in refusal
    assert (ws / "a.txt").read_text() == "my editor\n" and (ws / "b.txt").exists()

    await ok(client, "undo", steps=2, force=True)
    assert not (ws / "a.txt").exists() and not (ws / "b.txt").exists()
    # The editor's content was recorded before the forced undo: it comes back.
    forced = entries(ws)[-1]["id"]
    before_forced = entries(ws)[-2]["id"]
    assert entries(ws)[-1]["tool"] == "undo" and forced != before_forced
    await ok(client, "undo", to=before_forced)
    assert (ws / "a.txt").read_text() == "my editor\n"
    assert (ws / "b.txt").read_text() == "agent b\n"


async def test_a_file_added_outside_a_created_directory_is_not_deleted(
    client: Client, ws: Path
) -> None:
    await ok(client, "make_directory", path="d")
    (ws / "d" / "mine.txt").write_text("keep me\n")
    assert "d/mine.txt changed since" in await fails(client, "undo")
    assert (ws / "d" / "mine.txt").exists()


async def test_a_commands_changes_are_reverted_with_the_range(ws: Path) -> None:
    settings = Settings(root=str(ws), shell_mode="allowlist", shell_allow=("touch",))
    async with open_client(settings) as client:
        await ok(client, "write_file", path="a.txt", content="a\n")
        await ok(client, "run_command", command=["touch", "made-by-command"])
        answer = await ok(client, "undo", steps=2)
    assert "Not reverted" not in answer and "deleted  made-by-command" in answer, answer
    assert not (ws / "a.txt").exists()
    assert not (ws / "made-by-command").exists()  # what the command did is undone too


async def test_undo_a_change_leaves_other_work_alone(client: Client, ws: Path) -> None:
    await ok(client, "write_file", path="before.txt", content="before\n")
    await ok(client, "change_create", title="Fix auth", goal="g")
    await ok(client, "write_file", path="auth.py", content="fixed\n")
    await ok(client, "edit_file", path="before.txt", oldString="before", newString="during")
    await ok(client, "change_create", title="Other", goal="g")  # and makes it active
    await ok(client, "write_file", path="after.txt", content="after\n")
    answer = await ok(client, "undo", change="fix-auth")
    assert answer.startswith("Undid 2 calls")
    assert not (ws / "auth.py").exists()
    assert (ws / "before.txt").read_text() == "before\n"
    assert (ws / "after.txt").read_text() == "after\n"


async def test_a_change_interleaved_with_other_work_on_one_file_is_refused(
    client: Client, ws: Path
) -> None:
    await ok(client, "change_create", title="One", goal="g")
    await ok(client, "write_file", path="a.txt", content="one\n")
    await ok(client, "change_create", title="Two", goal="g")
    await ok(client, "write_file", path="a.txt", content="other\n")
    await ok(client, "change_activate", changeId="one")
    await ok(client, "write_file", path="a.txt", content="one again\n")
    refusal = await fails(client, "undo", change="one")
    assert "a.txt was also changed by #" in refusal and "not in this range" in refusal


async def test_restore_file_puts_one_path_back(client: Client, ws: Path) -> None:
    await ok(client, "write_file", path="a.txt", content="v1\n")
    await ok(client, "write_file", path="b.txt", content="b1\n")
    mark = entries(ws)[-1]["id"]
    await ok(client, "write_file", path="a.txt", content="v2\n")
    await ok(client, "write_file", path="b.txt", content="b2\n")
    (ws / "a.txt").write_text("v3 from an editor\n")
    answer = await ok(client, "restore_file", path="a.txt", before=mark)
    assert answer.startswith("Restored as before #") and "restored  a.txt" in answer
    assert (ws / "a.txt").read_text() == "v1\n" and (ws / "b.txt").read_text() == "b2\n"
    # Recorded like any change: undo brings the editor's version back.
    await ok(client, "undo")
    assert (ws / "a.txt").read_text() == "v3 from an editor\n"
    assert "was not changed by" in await fails(client, "restore_file", path="zz", before=mark)
    assert "no journal entry #nope" in await fails(
        client, "restore_file", path="a.txt", before="nope"
    )


async def test_bad_arguments_get_one_sentence(client: Client) -> None:
    assert "pass one of steps, to or change" in await fails(client, "undo", steps=1, to="x")
    assert "steps is at most 100" in await fails(client, "undo", steps=101)
    assert "no journal entry #zzz" in await fails(client, "undo", to="zzz")


async def test_a_file_over_the_checkpoint_limit_is_not_pretended(client: Client, ws: Path) -> None:
    big = ws / "big.bin"
    with big.open("wb") as handle:  # made outside (write tools refuse over 16 MiB)
        handle.truncate(17 * 1024 * 1024)
    await ok(client, "write_file", path="small.txt", content="s\n")
    await ok(client, "delete_path", path="big.bin")
    await ok(client, "delete_path", path="small.txt")
    refusal = await fails(client, "undo", steps=2)
    assert "big.bin cannot be restored" in refusal and "force=true" in refusal
    answer = await ok(client, "undo", steps=2, force=True)
    assert "Left as they are (not restorable): big.bin." in answer
    assert (ws / "small.txt").read_text() == "s\n" and not big.exists()


async def test_the_store_is_capped_and_work_log_says_what_is_gone(ws: Path) -> None:
    cap = 64 * 1024
    objects = ws / ".workspace-mcp" / "checkpoints" / "objects"

    def stored() -> int:
        return sum(f.stat().st_size for f in objects.rglob("*") if f.is_file())

    async def churn(client: Client, rounds: int) -> None:
        for i in range(rounds):  # incompressible: each checkpoint stores ~10 KiB
            await ok(client, "write_file", path="f.txt", content=os.urandom(5000).hex())
            await ok(client, "write_file", path="f.txt", content=f"{i}\n")

    async with open_client(Settings(root=str(ws), checkpoint_max_bytes=cap)) as client:
        await churn(client, 12)
        log = (await ok(client, "work_log", limit=30)).splitlines()
        assert "no longer undoable" in log[-1] and "no longer undoable" not in log[0]
        await ok(client, "undo", steps=2)  # the newest are still undoable
        refusal = await fails(client, "undo", steps=30)
        assert "is no longer undoable (its checkpoint was pruned)" in refusal
        # Pruned data younger than the grace period stays (another server process may
        # have just found it); once older, the next pruning deletes it.
        old = 2 * 3600
        for f in objects.rglob("*"):
            st = f.stat()
            os.utime(f, (st.st_atime - old, st.st_mtime - old))
        await churn(client, 4)
        assert stored() <= cap


async def test_no_checkpoints_setting_records_nothing_and_hides_undo(ws: Path) -> None:
    async with open_client(Settings(root=str(ws), checkpoints=False)) as client:
        await ok(client, "write_file", path="a.txt", content="a\n")
        names = {t.name for t in await client.list_tools()}
    assert "undo" not in names and "restore_file" not in names
    assert not (ws / ".workspace-mcp" / "checkpoints").exists()


async def test_the_instructions_mention_undo_only_where_it_is_served(ws: Path) -> None:
    async with open_client(Settings(root=str(ws))) as client:
        assert "undo reverts" in (client.instructions or "")
    for settings in (
        Settings(root=str(ws), checkpoints=False),
        Settings(root=str(ws), read_only=True),
        Settings(root=str(ws), profile="persona"),
    ):
        async with open_client(settings) as client:
            assert "undo" not in (client.instructions or "")
            assert "undo" not in {t.name for t in await client.list_tools()}


async def test_undo_never_replaces_what_it_could_not_put_back(client: Client, ws: Path) -> None:
    await ok(client, "write_file", path="a.bin", content="small\n")
    with (ws / "a.bin").open("wb") as handle:  # then grown past the checkpoint limit outside
        handle.truncate(17 * 1024 * 1024)
    refusal = await fails(client, "undo", force=True)
    assert refusal.startswith("undo refused: a.bin cannot be recorded first")
    assert (ws / "a.bin").stat().st_size == 17 * 1024 * 1024


async def test_undo_session_reaches_calls_older_than_the_journal_window(
    client: Client, ws: Path
) -> None:
    """Other agents' work can push a session's first calls out of the newest window the
    journal is read in (1 MiB): undo(session=) must still revert every call of it, and
    work_log(session=) still list them (the many-agents race found this)."""
    from agent_workspace_mcp.core.limits import STATE_READ_BYTES

    await ok(client, "write_file", path="mine.txt", content="one\n")
    await ok(client, "write_file", path="mine.txt", content="two\n")
    session = entries(ws)[-1]["session"]
    other = {
        "ts": entries(ws)[-1]["ts"],
        "tool": "write_file",
        "session": "a-0ther",
        "client": "other-agent",
        "paths": ["other.txt"],
        "result": "ok " + "x" * 400,
    }
    with (ws / ".workspace-mcp" / "journal.jsonl").open("a") as journal:
        for n in range(STATE_READ_BYTES // 400 + 50):
            journal.write(json.dumps({**other, "id": f"pad{n}"}) + "\n")
    await ok(client, "write_file", path="mine.txt", content="three\n")

    listed = await ok(client, "work_log", session=session)
    assert listed.count("write_file") == 3, listed
    answer = await ok(client, "undo", session=session)
    assert answer.startswith("Undid 3 calls"), answer
    assert not (ws / "mine.txt").exists()


async def test_after_an_undo_steps_says_how_to_take_it_back(ws) -> None:
    """Issue 44, item 3: after an undo, undo(steps=1) said "no recorded change in this
    workspace" although the undo itself is one."""
    from agent_workspace_mcp import Settings
    from tests.conftest import open_client
    from tests.helpers import fails, ok

    (ws / "f.txt").write_text("one\n")
    async with open_client(Settings(root=str(ws), audit=False)) as client:
        await ok(client, "write_file", path="f.txt", content="two\n")
        await ok(client, "undo")
        said = await fails(client, "undo", steps=1)
        assert "was an undo" in said and "undo(to=" in said, said
        back = said.rsplit("undo(to=", 1)[1].rstrip(")")
        await ok(client, "undo", to=back)
    assert (ws / "f.txt").read_text() == "two\n"
