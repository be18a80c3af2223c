"""JSON-lines streams read back newest first (core/state/streams.py) and the parser every
state reader goes through (core/safejson.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_workspace_mcp.core import safejson
from agent_workspace_mcp.core.state import streams
from agent_workspace_mcp.core.state.streams import JsonlStream
from agent_workspace_mcp.core.workspaces import WorkspaceRegistry

ENTRIES = 20_000  # about 1 MiB of short records: one read window


@pytest.fixture
def journal(tmp_path: Path) -> JsonlStream:
    (tmp_path / ".workspace-mcp").mkdir()
    with (tmp_path / ".workspace-mcp" / "journal.jsonl").open("w") as f:
        for i in range(ENTRIES):
            f.write(json.dumps({"id": f"e{i:05d}", "tool": "write_file"}) + "\n")
        f.write("not json\n[1, 2]\n")  # damaged lines are skipped, not counted
    ws = WorkspaceRegistry.confined(str(tmp_path), (), allow_git_writes=False).primary
    return JsonlStream(ws, "journal", 10**9)


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Every line the stream parses."""
    seen: list[bytes] = []
    loads = safejson.loads

    def counted(data: str | bytes) -> object:
        seen.append(bytes(data) if isinstance(data, bytes) else data.encode())
        return loads(data)

    monkeypatch.setattr(streams.safejson, "loads", counted)
    return seen


def test_a_short_read_parses_only_what_it_returns(
    journal: JsonlStream, parsed: list[bytes]
) -> None:
    """The console's first page and the recent view read a window of thousands of lines and
    used to parse every one of them to show 50."""
    page, cursor = journal.page(None, 50)
    assert [r["id"] for r in page] == [f"e{i:05d}" for i in range(ENTRIES - 1, ENTRIES - 51, -1)]
    assert cursor is not None
    assert len(parsed) == 52  # the 50 shown and the two damaged lines after them
    parsed.clear()
    assert [r["id"] for r in journal.newest(3)] == ["e19999", "e19998", "e19997"]
    assert len(parsed) == 5


def test_paging_reaches_every_entry_once(journal: JsonlStream) -> None:
    seen, cursor = [], None
    while True:
        page, cursor = journal.page(cursor, 3_000)
        seen += [r["id"] for r in page]
        if cursor is None:
            break
    assert seen == [f"e{i:05d}" for i in reversed(range(ENTRIES))]


@pytest.mark.parametrize(
    "text",
    [
        b'{"a": 1, "b": [1.5, "\\u00e9"], "c": null}',
        '{"name": "caf\u00e9"}'.encode(),
        b'{"lone": "\\ud800"}',  # an escaped lone surrogate, as json.loads takes it
        '{"raw": "\ud800"}'.encode("utf-8", "surrogatepass"),
        b"  [1, 2]  ",
    ],
)
def test_loads_reads_what_json_loads_reads(text: bytes) -> None:
    assert safejson.loads(text) == json.loads(text)
    assert safejson.loads(text.decode("utf-8", "surrogatepass")) == json.loads(text)


@pytest.mark.parametrize(
    "text",
    [b"[" * 100_000, b'{"n": 1e400}', b"NaN", b"Infinity", b'{"a": 1} x', b"\xff{}", b""],
)
def test_loads_refuses_with_a_value_error(text: bytes) -> None:
    with pytest.raises(ValueError):
        safejson.loads(text)
