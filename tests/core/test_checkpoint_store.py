"""The checkpoint store on its own: objects check themselves, the index is bounded."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agent_workspace_mcp import Settings
from agent_workspace_mcp.configuration import preflight
from agent_workspace_mcp.core.checkpoints.store import LostObjectError, Store, digest_of
from agent_workspace_mcp.core.limits import CHECKPOINT_INDEX_MAX_LINES, CHECKPOINT_PRUNE_TO


def store(ws: Path) -> Store:
    return Store(preflight(Settings(root=str(ws))).primary)


def test_objects_are_deduplicated_compressed_when_it_pays_and_checked(ws: Path) -> None:
    s = store(ws)
    text = b"the same line\n" * 1000
    digest, added = s.put(text)
    assert digest == digest_of(text) and 0 < added < len(text) // 10  # compressed
    assert s.put(text) == (digest, 0)  # stored once
    noise = os.urandom(768)
    _, raw = s.put(noise)
    assert raw == len(noise) + 1  # does not compress: stored raw
    assert s.get(digest) == text
    path = ws / ".workspace-mcp" / "checkpoints" / "objects" / digest[:2] / digest[2:]
    path.write_bytes(b"r" + b"tampered")
    with pytest.raises(LostObjectError, match="is damaged"):
        s.get(digest)
    with pytest.raises(LostObjectError, match="is missing"):
        s.get("0" * 64)


@pytest.mark.slow  # 5,001 locked appends: ~5 s
def test_the_index_keeps_a_bounded_number_of_calls(ws: Path) -> None:
    s = store(ws)
    for i in range(CHECKPOINT_INDEX_MAX_LINES + 1):
        s.append({"id": f"c{i}", "ts": "t", "tool": "write_file", "p": {}, "b": 0})
    lines = s.lines()
    assert len(lines) == int(CHECKPOINT_INDEX_MAX_LINES * CHECKPOINT_PRUNE_TO)
    assert lines[-1]["id"] == f"c{CHECKPOINT_INDEX_MAX_LINES}"  # the newest are kept
    index = ws / ".workspace-mcp" / "checkpoints" / "index.jsonl"
    assert all(json.loads(line)["id"] for line in index.read_text().splitlines())
