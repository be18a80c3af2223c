"""Property (issue 17): any sequence of mutating calls on any tree, then one undo back to
before them, leaves the tree byte-identical: contents, modes, directories, symlinks.

Hypothesis draws the starting tree and the calls (failing calls included: they must
change nothing and undo nothing). The default run is short and reproducible; before a
release run longer:
    AWM_UNDO_EXAMPLES=300 pytest tests/tools/test_undo_property.py
(AWM_UNDO_SEED=N draws another, still reproducible, sequence.)
"""

from __future__ import annotations

import base64
import os
import shutil
from pathlib import Path

import anyio
import pytest
from fastmcp import Client
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from agent_workspace_mcp import Settings, create_server
from tests.tools.test_undo import entries, snapshot

EXAMPLES = int(os.environ.get("AWM_UNDO_EXAMPLES", "40"))
SEED = int(os.environ.get("AWM_UNDO_SEED", "17"))

FILES = ["a.txt", "b.bin", "d/c.txt", "d/e/f.txt", "g/h.txt", "lnk"]
DIRS = ["d", "d/e", "g", "x/y"]
ANY = FILES + DIRS

text = st.text(alphabet="ab\n\r\u00e9", max_size=40)
data = st.binary(max_size=64)
file_mode = st.sampled_from([0o644, 0o600, 0o755, 0o640])
dir_mode = st.sampled_from([0o755, 0o700, 0o711])

calls = st.one_of(
    st.tuples(
        st.just("write_file"),
        st.fixed_dictionaries({"path": st.sampled_from(FILES), "content": text}),
    ),
    st.tuples(
        st.just("write_binary_file"),
        st.fixed_dictionaries(
            {
                "path": st.sampled_from(FILES),
                "contentBase64": data.map(lambda b: base64.b64encode(b).decode()),
            }
        ),
    ),
    st.tuples(
        st.just("edit_file"),
        st.fixed_dictionaries(
            {
                "path": st.sampled_from(FILES),
                "oldString": st.sampled_from(["a", "b", "\u00e9"]),
                "newString": text,
                "replaceAll": st.just(True),
            }
        ),
    ),
    st.tuples(
        st.just("delete_path"),
        st.fixed_dictionaries({"path": st.sampled_from(ANY), "recursive": st.booleans()}),
    ),
    st.tuples(
        st.just("move_path"),
        st.fixed_dictionaries(
            {
                "source": st.sampled_from(ANY),
                "destination": st.sampled_from([*ANY, "new/z"]),
                "overwrite": st.booleans(),
            }
        ),
    ),
    st.tuples(
        st.just("rename_path"),
        st.fixed_dictionaries(
            {
                "path": st.sampled_from(ANY),
                "newName": st.sampled_from(["r1", "r2.txt"]),
                "overwrite": st.booleans(),
            }
        ),
    ),
    st.tuples(
        st.just("make_directory"),
        st.fixed_dictionaries({"path": st.sampled_from([*DIRS, "m/n/o"])}),
    ),
)

start_tree = st.fixed_dictionaries(
    {
        "files": st.dictionaries(
            st.sampled_from(FILES[:-1]), st.tuples(data, file_mode), max_size=5
        ),
        "dirs": st.dictionaries(st.sampled_from(DIRS), dir_mode, max_size=3),
        "link": st.booleans(),
    }
)


def build(root: Path, spec: dict) -> None:
    for name in os.listdir(root):
        if name != ".workspace-mcp":
            path = root / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
    for rel in spec["dirs"]:
        (root / rel).mkdir(parents=True, exist_ok=True)
    for rel, (content, mode) in spec["files"].items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(content)
        (root / rel).chmod(mode)
    if spec["link"]:
        (root / "lnk").symlink_to("a.txt")  # may dangle: a symlink is restored as a link
    for rel, mode in sorted(spec["dirs"].items(), key=lambda item: -item[0].count("/")):
        (root / rel).chmod(mode)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("undo-property")


@pytest.mark.slow  # a property run, many examples
def test_any_calls_then_undo_leave_the_tree_identical(root: Path) -> None:
    app = create_server(Settings(root=str(root), audit=False))

    @seed(SEED)
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(spec=start_tree, sequence=st.lists(calls, min_size=1, max_size=12))
    def check(spec: dict, sequence: list) -> None:
        build(root, spec)
        before = snapshot(root)

        async def run() -> None:
            async with Client(app) as client:
                await client.call_tool("make_directory", {"path": "."})  # a marker entry
                mark = entries(root)[-1]["id"]
                for tool, arguments in sequence:
                    await client.call_tool(tool, arguments, raise_on_error=False)
                answer = await client.call_tool("undo", {"to": mark}, raise_on_error=False)
                text = answer.content[0].text
                if answer.is_error:
                    # Only acceptable when the calls changed nothing at all.
                    assert text.startswith("nothing to undo"), text
                    assert snapshot(root) == before

        anyio.run(run)
        assert snapshot(root) == before, sequence

    check()
