"""grep and list_files: both engines over the same real tree must answer identically."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest
from fastmcp import Client

from agent_workspace_mcp import Settings
from agent_workspace_mcp.core import limits
from agent_workspace_mcp.core.errors import WorkspaceError
from agent_workspace_mcp.core.fileops import remove_tree
from agent_workspace_mcp.core.search import python_engine
from agent_workspace_mcp.core.search.results import GrepQuery
from agent_workspace_mcp.core.search.rgproc import DirCache, find_rg
from agent_workspace_mcp.core.search.scan import Found
from agent_workspace_mcp.core.workspaces import WorkspaceRegistry
from tests.conftest import open_client
from tests.helpers import fails, fds_under, ok

needs_rg = pytest.mark.skipif(
    find_rg() is None, reason="no ripgrep binary (the ripgrep wheel installs one)"
)


def build_tree(root: Path) -> None:
    """A tree with everything the rules must handle."""

    def w(rel: str, data: str | bytes) -> None:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data if isinstance(data, bytes) else data.encode())

    w("README.md", "# Title\nneedle in readme\n")
    w("src/app.py", "import os\n\ndef needle():\n    return 'Needle'\n# needle again\n")
    w("src/a/b.txt", "needle at depth\n")
    w("src/a.txt", "needle beside dir\n")
    w("src/Zeta.TXT", "NEEDLE upper\n")
    w("src/_under.py", "x = 'needle'\n")
    w("unicode/naïve café.txt", "needle ünïcode line\nzweite Zeile needle\n")
    w("unicode/日本語.md", "needle 日本\n")
    w("crlf.txt", b"first\r\nneedle crlf\r\nlast needle\r\n")
    w("no_newline.txt", b"needle without newline")
    w("bin/image.bin", b"\x89PNG\x00\x00needle\x00")
    w("bin/late_nul.txt", b"needle early\n" + b"x" * 9000 + b"\x00 needle late\n")
    w(
        "big/large.txt",
        b"needle first line\n" + b"y" * (limits.GREP_BYTES_PER_FILE) + b"\nneedle beyond cap\n",
    )
    w("node_modules/pkg/index.js", "needle in node_modules\n")
    w("src/node_modules/deep.js", "needle nested node_modules\n")
    w(".git/config", "needle in git\n")
    w(".cache/x", "needle in cache\n")
    w(".workspace-mcp/notes.jsonl", "needle in state\n")
    w(".hidden/visible.txt", "needle in hidden dir\n")
    w(".gitignore", "*.log\n/build/\nsecret*\n!secret_ok.txt\ndocs/generated/\n")
    w("app.log", "needle in log\n")
    w("sub/app.log", "needle in nested log\n")
    w("build/out.txt", "needle in root build\n")
    w("sub/build/out.txt", "needle in sub build (not anchored)\n")
    w("secret.txt", "needle secret\n")
    w("secret_ok.txt", "needle secret ok\n")
    w("docs/generated/api.md", "needle generated\n")
    w("docs/guide.md", "needle guide\n")
    w("docs/.gitignore", "/private.md\ndrafts/\n")
    w("docs/private.md", "needle private\n")
    w("docs/drafts/d.md", "needle draft\n")
    w("docs/sub/private.md", "needle private but deeper\n")
    w("web/src/comp.tsx", "const needle = 1\n")
    w("web/src/comp.ts", "const needle = 2\n")
    w("web/src/style.css", "needle {}\n")
    (root / "loop").mkdir()
    (root / "loop" / "self").symlink_to("..")
    (root / "loop" / "file.txt").write_text("needle in loop dir\n")
    (root / "link_to_src").symlink_to("src")
    (root / "link_file.txt").symlink_to("README.md")
    os.mkfifo(root / "fifo")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(root / "sock"))
    sock.close()
    (root / "empty_dir").mkdir()


@pytest.fixture
def corpus(ws: Path) -> Path:
    build_tree(ws)
    return ws


QUERIES = [
    ("grep", {"pattern": "needle"}),
    ("grep", {"pattern": "needle", "ignoreCase": True}),
    ("grep", {"pattern": "needle", "noIgnore": True}),
    ("grep", {"pattern": "needle", "include": "*.py"}),
    ("grep", {"pattern": "needle", "include": "web/**/*.{ts,tsx}"}),
    ("grep", {"pattern": "needle", "include": "*.[!t]*"}),
    ("grep", {"pattern": "needle", "path": "docs"}),
    ("grep", {"pattern": "needle", "path": "docs/sub"}),
    ("grep", {"pattern": "needle", "path": "src/app.py"}),
    ("grep", {"pattern": "needle", "maxResults": 3}),
    ("grep", {"pattern": "needle", "maxResults": 1, "contextLines": 2}),
    ("grep", {"pattern": "needle", "contextLines": 1}),
    ("grep", {"pattern": "^needle$|crlf$|newline$"}),
    ("grep", {"pattern": r"\bneedle\b\s+\w+"}),
    ("grep", {"pattern": "ünïcode|日本"}),
    ("grep", {"pattern": "NEEDLE", "ignoreCase": False}),
    ("grep", {"pattern": "no such text anywhere"}),
    ("list_files", {}),
    ("list_files", {"noIgnore": True}),
    ("list_files", {"pattern": "*.md"}),
    ("list_files", {"pattern": "src/**"}),
    ("list_files", {"path": "docs"}),
    ("list_files", {"path": "src", "maxDepth": 1}),
    ("list_files", {"maxDepth": 1}),
    ("list_files", {"limit": 7}),
    ("list_files", {"path": "README.md"}),
    ("list_files", {"path": "src/app.py"}),
]


@needs_rg
@pytest.mark.parametrize(
    ("tool", "args"), QUERIES, ids=[f"{t}-{i}" for i, (t, _) in enumerate(QUERIES)]
)
async def test_both_engines_answer_identically(corpus: Path, tool: str, args: dict) -> None:
    answers = {}
    for engine in ("rg", "python"):
        async with open_client(Settings(root=str(corpus), search_engine=engine)) as client:
            result = await client.call_tool(tool, args, raise_on_error=False)
            answers[engine] = (result.is_error, result.content[0].text)
    assert answers["rg"] == answers["python"]
    assert not answers["rg"][0], answers["rg"][1]


@pytest.fixture(params=["rg", "python"])
async def engine_client(request, corpus: Path):
    if request.param == "rg" and find_rg() is None:
        pytest.skip("no ripgrep binary")
    async with open_client(Settings(root=str(corpus), search_engine=request.param)) as c:
        yield c


async def test_grep_rules(engine_client: Client) -> None:
    text = await ok(engine_client, "grep", pattern="needle")
    lines = text.splitlines()
    paths = {line.split(":", 1)[0] for line in lines[:-1]}
    # The backbone document's format and a count summary.
    assert "src/app.py:3: def needle():" in lines
    assert "crlf.txt:2: needle crlf" in lines  # CR stripped from the shown line
    # The tree has .gitignore'd files, and this search ran out: the summary says so.
    assert (
        lines[-1].endswith(
            "files (.gitignore rules hid some files from this search; noIgnore=true includes them)"
        )
        and " matches in " in lines[-1]
    )
    # Binary (NUL in the first 8 KiB) skipped; a NUL later does not make a file binary.
    assert "bin/image.bin" not in paths and "bin/late_nul.txt" in paths
    # Only the first 1 MiB is searched.
    assert "big/large.txt:1: needle first line" in lines and "needle beyond cap" not in text
    # Ignored directories, symlinks, .gitignore rules (anchored, dir-only, negated, nested).
    for hidden in (
        "node_modules/pkg/index.js",
        "src/node_modules/deep.js",
        ".git/config",
        ".cache/x",
        ".workspace-mcp/notes.jsonl",
        "app.log",
        "sub/app.log",
        "build/out.txt",
        "secret.txt",
        "docs/generated/api.md",
        "docs/private.md",
        "docs/drafts/d.md",
        "link_to_src/app.py",
        "link_file.txt",
        "loop/self/README.md",
    ):
        assert hidden not in paths, hidden
    for shown in (
        ".hidden/visible.txt",
        "sub/build/out.txt",
        "secret_ok.txt",
        "docs/sub/private.md",
        "loop/file.txt",
        "unicode/naïve café.txt",
    ):
        assert shown in paths, shown


async def test_grep_order_is_per_directory_by_name(engine_client: Client) -> None:
    text = await ok(engine_client, "grep", pattern="needle", path="src", ignoreCase=True)
    order = [line.split(":", 1)[0] for line in text.splitlines()[:-1]]
    assert order.index("src/a/b.txt") < order.index("src/a.txt")
    assert order.index("src/Zeta.TXT") < order.index("src/_under.py") < order.index("src/a/b.txt")


async def test_grep_truncation_and_context(engine_client: Client) -> None:
    text = await ok(engine_client, "grep", pattern="needle", maxResults=2)
    assert (
        text.splitlines()[-1]
        == "2 matches in 2 files (stopped at maxResults=2; more matches exist)"
    )
    text = await ok(engine_client, "grep", pattern="needle", path="src/app.py", contextLines=1)
    assert text.splitlines() == [
        "src/app.py-2- ",
        "src/app.py:3: def needle():",
        "src/app.py-4-     return 'Needle'",
        "src/app.py:5: # needle again",
        "2 matches in 1 file",
    ]
    assert await ok(engine_client, "grep", pattern="zzz-not-there") == (
        "no matches (.gitignore rules hid some files from this search; noIgnore=true includes them)"
    )
    unhidden = await ok(engine_client, "grep", pattern="zzz-not-there", noIgnore=True)
    assert unhidden == "no matches"


async def test_grep_errors_are_one_sentence(engine_client: Client) -> None:
    assert await fails(engine_client, "grep", pattern="(unclosed") == (
        "invalid regex: missing ), unterminated subpattern at position 0"
    )
    for pattern, what in [
        ("a(?=b)", "look-around is"),
        ("(a)\\1", "backreferences are"),
        ("(?<!x)y", "look-around is"),
    ]:
        assert await fails(engine_client, "grep", pattern=pattern) == (
            f"invalid regex: {what} not supported (ripgrep syntax); rewrite the pattern without them"
        )
    assert (
        await fails(engine_client, "grep", pattern="x", path="../")
        == "path outside workspace root: ../"
    )
    assert await fails(engine_client, "grep", pattern="x", path="missing") == "not found: missing"
    assert (
        await fails(engine_client, "grep", pattern="x", path="fifo")
        == "fifo: is a FIFO; search a directory or file"
    )
    assert await fails(engine_client, "list_files", path="link_to_src/../../x") == (
        "path outside workspace root: link_to_src/../../x"
    )


async def test_list_files_rules(engine_client: Client) -> None:
    text = await ok(engine_client, "list_files")
    entries = text.splitlines()
    assert entries[:3] == [".gitignore", ".hidden/", ".hidden/visible.txt"]
    assert (
        "src/" in entries
        and "src/a/" in entries
        and entries.index("src/a/b.txt") < entries.index("src/a.txt")
    )
    for absent in (
        "bin/image.bin",
        "link_to_src/",
        "link_file.txt",
        "fifo",
        "sock",
        "node_modules/",
        ".git/",
        "app.log",
        "loop/self/",
    ):
        assert absent not in entries, absent
    assert "bin/late_nul.txt" in entries
    # Directories are entries of their own: empty ones, and top-level folders at depth 1.
    assert "empty_dir/" in entries
    top = (await ok(engine_client, "list_files", maxDepth=1)).splitlines()
    assert "src/" in top and "empty_dir/" in top and "README.md" in top
    assert not any(
        entry.count("/") > 1 or (entry.count("/") == 1 and not entry.endswith("/")) for entry in top
    ), top
    text = await ok(engine_client, "list_files", limit=3)
    last = text.splitlines()[2]
    assert text.splitlines()[-1] == (
        f'... (stopped at limit=3 after 3 entries; more exist: the same call with after="{last}"'
        " continues)"
    )
    hid = "\n(.gitignore rules hid some files from this listing; noIgnore=true includes them)"
    assert await ok(engine_client, "list_files", pattern="*.tsx") == "web/src/comp.tsx" + hid
    assert (
        await ok(engine_client, "list_files", path="docs", maxDepth=1)
        == "docs/.gitignore\ndocs/guide.md\ndocs/sub/" + hid
    )
    # Where no rule hides anything, nothing is said.
    assert await ok(engine_client, "list_files", path="web") == (
        "web/src/\nweb/src/comp.ts\nweb/src/comp.tsx\nweb/src/style.css"
    )


def test_catastrophic_pattern_is_bounded_in_the_python_engine(ws: Path) -> None:
    (ws / "evil.txt").write_text("a" * 5000 + "b\n")
    query = GrepQuery(
        pattern="(a|aa)+$",
        ignore_case=False,
        max_results=10,
        context=0,
        include=None,
        no_ignore=False,
    )
    with pytest.raises(
        WorkspaceError, match=r"took longer than 0.5 s \(catastrophic backtracking\?\)"
    ):
        python_engine.grep(
            WorkspaceRegistry.confined(str(ws)).primary, "", True, query, [], budget=0.5
        )


def test_python_walk_survives_a_tree_deeper_than_the_recursion_limit(ws: Path) -> None:
    depth = sys.getrecursionlimit() + 20
    fd = os.open(ws, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        nxt = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = nxt
    with open(os.open("deep.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as handle:
        handle.write("needle at the bottom\n")
    os.close(fd)
    query = GrepQuery(
        pattern="needle",
        ignore_case=False,
        max_results=10,
        context=0,
        include=None,
        no_ignore=False,
    )
    try:
        result = python_engine.grep(
            WorkspaceRegistry.confined(str(ws)).primary, "", True, query, []
        )
        assert result.matches == 1 and result.hits[0].path.endswith("/deep.txt")
    finally:
        # pytest's own temp cleanup recurses and would fail on this tree.
        root_fd = os.open(ws, os.O_RDONLY)
        try:
            remove_tree(root_fd, "d")
        finally:
            os.close(root_fd)


async def test_unconfined_paths_are_shown_relative_to_the_cwd(tmp_path: Path) -> None:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "f.txt").write_text("needle\n")
    old = os.getcwd()
    os.chdir(tmp_path / "proj")
    try:
        async with open_client(Settings(unconfined=True)) as c:
            assert (await ok(c, "grep", pattern="needle")).splitlines()[0] == "f.txt:1: needle"
            listing = await ok(c, "list_files", path=str(tmp_path / "proj"))
            assert listing == "f.txt"
    finally:
        os.chdir(old)


GREP_QUERIES = [(t, a) for t, a in QUERIES if t == "grep"]


@needs_rg
@pytest.mark.parametrize("probe", [0.0, 0.002])
async def test_the_parallel_scan_answers_like_the_sorted_one(
    corpus: Path, probe: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past its probe, rg scans on every core and the order is restored here: with the
    probe stopped at once (0 s) and a little later, every grep answer equals the Python
    engine's."""
    from agent_workspace_mcp.core.search import ripgrep_engine

    expected = {}
    async with open_client(Settings(root=str(corpus), search_engine="python")) as client:
        for i, (_, args) in enumerate(GREP_QUERIES):
            expected[i] = await ok(client, "grep", **args)
    monkeypatch.setattr(ripgrep_engine, "GREP_PROBE_FIRST_MATCH_SECONDS", probe)
    scans = count_parallel_scans(monkeypatch)
    async with open_client(Settings(root=str(corpus), search_engine="rg")) as client:
        for i, (_, args) in enumerate(GREP_QUERIES):
            assert await ok(client, "grep", **args) == expected[i], args
    assert scans or probe, "the parallel path never ran"


def kill_the_probe_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sorted probe is stopped as soon as it starts, so the scan path always runs."""
    from agent_workspace_mcp.core.search import scan

    original = scan.Probe.__init__

    def init(self, ws, include, args, *rest, **kwargs):
        original(self, ws, include, args, *rest, **kwargs)
        if "--sort" in args:
            self.expire()

    monkeypatch.setattr(scan.Probe, "__init__", init)


def count_parallel_scans(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    from agent_workspace_mcp.core.search import scan

    calls: list[int] = []
    original = scan.Scan.wait

    def counted(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(scan.Scan, "wait", counted)
    return calls


@needs_rg
async def test_the_parallel_scan_keeps_only_what_the_answer_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many matching files, a small cap: the ordered search of the matching files must
    keep exactly the first ones, with the "more" look-ahead right at the boundary."""

    for d in range(12):
        for f in range(25):
            (tmp_path / f"d{d:02d}").mkdir(exist_ok=True)
            (tmp_path / f"d{d:02d}" / f"f{f:02d}.txt").write_text("hit\nmiss\nhit two\nhit 3\n")
    kill_the_probe_at_once(monkeypatch)
    scans = count_parallel_scans(monkeypatch)
    for cap in (1, 3, 4, 7, 100, 900, 1000):
        answers = []
        for engine in ("python", "rg"):
            async with open_client(Settings(root=str(tmp_path), search_engine=engine)) as c:
                answers.append(await ok(c, "grep", pattern="hit", maxResults=cap))
        assert answers[0] == answers[1], cap
    assert scans  # (a probe killed at once may still have printed enough to win)


@pytest.mark.parametrize("engine", ["python", "rg"])
async def test_rules_note_follows_a_gitignore_written_mid_session(tmp_path: Path, engine) -> None:
    """Issue 29: a .gitignore created during a session hid files while the answer said
    only `no matches` (the note was cached from before the file existed)."""
    if engine == "rg" and find_rg() is None:
        pytest.skip("no ripgrep binary")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "out.log").write_text("the needle\n")
    async with open_client(Settings(root=str(tmp_path), search_engine=engine)) as client:
        assert "1 match in 1 file" in await ok(client, "grep", pattern="needle")
        assert await ok(client, "grep", pattern="absent") == "no matches"
        await ok(client, "write_file", path=".gitignore", content="build/\n")
        hidden = "no matches (.gitignore rules hid some files from this search; noIgnore=true includes them)"
        assert await ok(client, "grep", pattern="needle") == hidden
        listing = await ok(client, "list_files")
        assert "build/" not in listing and "rules hid some files from this listing" in listing
        await ok(client, "delete_path", path=".gitignore")
        assert "1 match in 1 file" in await ok(client, "grep", pattern="needle")
        assert await ok(client, "grep", pattern="absent") == "no matches"


@needs_rg
async def test_the_recheck_reads_only_up_to_the_last_match_and_agrees(tmp_path: Path) -> None:
    """Without context lines a matching file is re-read only up to its last match (at
    least 8 KiB, for the binary sniff): multibyte text across that cut, CRLF lines, a NUL
    after 8 KiB (text) or before it (binary), a match past 1 MiB: both engines agree,
    with and without context, on the sparse full-scan path and the probe's."""
    tail = ("é" * 5000 + "\n") * 3
    (tmp_path / "a.txt").write_text("needle one\r\n" + tail + "needle two\n" + tail)
    (tmp_path / "b.txt").write_bytes(b"x" * 9000 + b"\x00\nneedle three\n")
    (tmp_path / "c.bin").write_bytes(b"\x00needle binary\n")
    (tmp_path / "d.txt").write_bytes(b"needle four\n" + b"y" * (1 << 20) + b"\nneedle five\n")
    (tmp_path / "e.txt").write_text("no trailing newline needle")
    for context in (0, 2):
        answers = []
        for engine in ("python", "rg"):
            async with open_client(Settings(root=str(tmp_path), search_engine=engine)) as c:
                answers.append(await ok(c, "grep", pattern="needle", contextLines=context))
        assert answers[0] == answers[1], context
        assert "needle three" in answers[0] and "needle binary" not in answers[0]
        assert "needle five" not in answers[0] and "needle two" in answers[0]


def rg_saw(rel: str, data: bytes, pattern: bytes) -> Found:
    """What rg reports for `data`: each line holding `pattern`, its bytes and offset."""
    matched, lines, offsets, at = [], {}, {}, 0
    for index, line in enumerate(data.splitlines(keepends=True)):
        if pattern in line:
            matched.append(index)
            lines[index], offsets[index] = line, at
        at += len(line)
    return Found(rel, matched, lines, offsets)


def recheck_by_lines(data: bytes, found: Found) -> list[int]:
    """The re-check as it was before offsets: every searched line decoded, compared."""
    searched = python_engine.lines_searched_in(data) or []
    return [i for i in found.matched if i < len(searched) and searched[i] == found.text(i)]


def test_the_recheck_decodes_only_the_matched_lines_and_agrees_with_a_full_decode() -> None:
    """Without context lines a file rg read as it still is is re-checked by offset, and
    only its matched lines are decoded; a file changed since falls back to comparing
    every line, so the answer is always what comparing every line gives."""
    seen = "é\nneedle one\r\nplain\n".encode() + b"\xff needle two\nlast needle"
    found = rg_saw("f.txt", seen, b"needle")
    assert found.matched == [1, 3, 4]
    kept, lines = found.check(seen, 0) or ([], [])
    assert kept == [1, 3, 4] and isinstance(lines, dict) and sorted(lines) == [1, 3, 4]
    assert lines[1] == "needle one\r" and lines[3] == "\ufffd needle two"
    assert lines[4] == "last needle"
    changed = {
        "a line before a match grew": (seen.replace(b"plain", b"plainer"), [1, 3, 4]),
        "a match edited": (seen.replace(b"needle one", b"needle 1"), [3, 4]),
        "a match edited, same length": (seen.replace(b"needle one", b"needle ONE"), [3, 4]),
        "the last line grew": (seen + b" more", [1, 3]),
        "a line inserted": (b"new\n" + seen, []),
        "newlines moved, offsets kept": (seen.replace("é\n".encode(), b"\n\n\n"), []),
        "a match now ends a line": (seen.replace("é\n".encode(), b"\nxx"), [3, 4]),
    }
    for what, (now, expected) in changed.items():
        checked = found.check(now, 0)
        assert checked is not None, what
        assert checked[0] == expected == recheck_by_lines(now, found), what
        assert checked[1] == python_engine.lines_searched_in(now), what  # every line
    assert found.check(b"\0" + seen[1:], 0) is None  # binary now: not shown at all
    assert found.check(None, 0) is None  # unreadable (gone, or not a regular file)
    assert found.check(seen, 2) == ([1, 3, 4], python_engine.lines_searched_in(seen))


def test_the_recheck_keeps_a_few_folders_open_and_closes_them(tmp_path: Path) -> None:
    """grep's re-check walks each folder once and keeps at most GREP_DIR_FD_CACHE of them
    open (many greps at once must stay far below the process's fd limit), reads a file
    only as a regular file in its verified folder, and closes every fd it opened."""
    for d in range(20):
        (tmp_path / f"d{d:02d}").mkdir()
        (tmp_path / f"d{d:02d}" / "f.txt").write_text(f"needle {d}\n")
    os.symlink(tmp_path / "d00" / "f.txt", tmp_path / "d01" / "link.txt")
    ws = WorkspaceRegistry.confined(str(tmp_path)).primary
    before = fds_under(tmp_path)
    dirs = DirCache(ws, limits.GREP_DIR_FD_CACHE)
    try:
        for d in range(20):
            assert dirs.head(f"d{d:02d}/f.txt", 100) == f"needle {d}\n".encode()
            assert fds_under(tmp_path) - before <= limits.GREP_DIR_FD_CACHE
        assert dirs.head("d01/link.txt", 100) is None  # a link is never followed
        assert dirs.head("d01", 100) is None and dirs.head("gone/f.txt", 100) is None
    finally:
        dirs.close()
    assert fds_under(tmp_path) == before
