"""Listings that page (issue 36): a listing cut by `limit` or by the answer budget says
how to continue, and continuing yields every entry exactly once, in the listing's order,
on both engines, with and without a pattern. The tree is built to catch an order that is
not the engines' own: names that sort around '/' ('a', 'a.txt', 'a-b', 'a/...'),
non-ASCII names, deep and wide directories, ~10,000 entries in all.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from agent_workspace_mcp import Settings
from agent_workspace_mcp.core.search.rgproc import find_rg
from tests.conftest import open_client
from tests.helpers import ok

CONTINUE = re.compile(
    r"^\.\.\. \((.+) after (\d+) entries; more exist: the same call with after=(\".*\") continues\)$"
)


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("paging")
    names = ["a", "a.txt", "a-b", "a_b", "ab", "A", "z", "é", "ü-dir", "0"]
    for top in names:
        if top == "a.txt":
            (root / top).write_text("file, not a directory\n")
            continue
        for mid in range(25):
            d = root / top / f"m{mid:02d}"
            d.mkdir(parents=True)
            for leaf in range(44):
                # os.open over Path.write_text: 11,000 files, a second less to set up.
                os.close(os.open(d / f"f{leaf}.py", os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    (root / "empty").mkdir()
    return root


def expected(root: Path, pattern: bool) -> list[str]:
    """The listing's order: per directory by name bytes, a directory before its contents."""
    out: list[str] = []

    def walk(directory: Path, rel: str) -> None:
        for name in sorted(os.listdir(directory), key=os.fsencode):
            path, here = directory / name, f"{rel}{name}"
            if path.is_dir():
                if not pattern:
                    out.append(here + "/")
                walk(path, here + "/")
            elif not pattern or name.endswith(".py"):
                out.append(here)

    walk(root, "")
    return out


@pytest.mark.parametrize("engine", ["rg", "python"])
@pytest.mark.parametrize("pattern", [None, "*.py"])
# 5000 pages by the answer budget; 997 pages through 10,000 entries a page at a time
@pytest.mark.parametrize("limit", [pytest.param(997, marks=pytest.mark.slow), 5000])
async def test_continuing_yields_every_entry_once(tree: Path, engine: str, pattern, limit) -> None:
    if engine == "rg" and find_rg() is None:
        pytest.skip("no ripgrep binary")
    want = expected(tree, pattern is not None)
    assert len(want) > 10_000 if pattern is None else len(want) > 9000
    got: list[str] = []
    after = None
    pages = 0
    async with open_client(Settings(root=str(tree), search_engine=engine)) as client:
        while True:
            args = {"maxDepth": 12, "limit": limit}
            if pattern:
                args["pattern"] = pattern
            if after is not None:
                args["after"] = after
            lines = (await ok(client, "list_files", **args)).splitlines()
            pages += 1
            found = CONTINUE.match(lines[-1])
            if found is None:
                got += lines
                break
            assert int(found.group(2)) == len(lines) - 1
            got += lines[:-1]
            after = json.loads(found.group(3))
            assert after == lines[-2].rstrip("/")
            assert pages < 100
    assert got == want
    assert pages >= 2
