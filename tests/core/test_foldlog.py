"""Records kept as logs of JSON lines (core.state.foldlog): folded in order, read only
from where a reader left off, safe against torn appends, rewritten past their bound,
and consistent for readers that take no lock while another thread appends."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from agent_workspace_mcp.core.state import foldlog
from agent_workspace_mcp.core.state.files import ensure_state_dir, locate_state
from agent_workspace_mcp.core.workspaces import Workspace


def anything(_value: Any) -> bool:
    return True


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace("w", str(tmp_path), str(tmp_path), primary=True)
    ensure_state_dir(workspace)
    return workspace


def load(ws: Workspace, cached: foldlog.Folded | None = None, bound: int = 100):
    with locate_state(ws, "rec.jsonl") as loc:
        return foldlog.load(loc, cached, bound, anything)


def add(ws: Workspace, change: dict, bound: int = 100) -> foldlog.Folded:
    with locate_state(ws, "rec.jsonl") as loc:
        return foldlog.append(
            loc, change, foldlog.load(loc, None, bound, anything), bound, anything
        )


def test_later_wins_null_forgets_and_order_is_recency(ws: Workspace) -> None:
    add(ws, {"a": 1, "b": 2})
    add(ws, {"c": 3})
    add(ws, {"a": 4, "b": None})
    assert list(load(ws).entries.items()) == [("c", 3), ("a", 4)]


def test_past_the_bound_the_oldest_go(ws: Workspace) -> None:
    for n in range(5):
        add(ws, {f"k{n}": n}, bound=3)
    assert list(load(ws, bound=3).entries) == ["k2", "k3", "k4"]


def test_a_reader_reads_only_what_was_appended_since(ws: Workspace, tmp_path: Path) -> None:
    add(ws, {"a": 1})
    first = load(ws)
    record = tmp_path / ".workspace-mcp" / "rec.jsonl"
    size = record.stat().st_size
    assert first.offset == size
    add(ws, {"b": 2})
    # Damage what the reader already folded: a reader that re-read it would lose "a".
    record.write_bytes(b"#" * (size - 1) + b"\n" + record.read_bytes()[size:])
    again = load(ws, first)
    assert again.entries == {"a": 1, "b": 2}
    assert load(ws).entries == {"b": 2}  # a fresh reader sees the damage: that line is lost


def test_an_append_in_progress_is_not_taken_and_a_torn_one_is_skipped(
    ws: Workspace, tmp_path: Path
) -> None:
    before = add(ws, {"a": 1})
    record = tmp_path / ".workspace-mcp" / "rec.jsonl"
    with record.open("ab") as handle:
        handle.write(b'{"b": 2')  # no newline yet: still being written
    half = load(ws)
    assert half.entries == {"a": 1} and half.offset < record.stat().st_size
    add(ws, {"c": 3})  # the writer crashed: the next append starts on its own line
    assert load(ws).entries == {"a": 1, "c": 3}
    assert load(ws, half).entries == {"a": 1, "c": 3}
    # An appender whose fold predates the torn line and the append after it catches up
    # through the same descriptor it appends with.
    with locate_state(ws, "rec.jsonl") as loc:
        now = foldlog.append(loc, {"d": 4}, before, 100, anything)
    assert now.entries == {"a": 1, "c": 3, "d": 4} == load(ws).entries
    assert now.offset == record.stat().st_size


def test_past_twice_the_bound_the_record_is_rewritten_folded(ws: Workspace, tmp_path: Path) -> None:
    record = tmp_path / ".workspace-mcp" / "rec.jsonl"
    add(ws, {"k0": 0}, bound=3)
    old_reader = load(ws, bound=3)
    for n in range(1, 8):
        add(ws, {f"k{n}": n}, bound=3)
    lines = record.read_text().splitlines()
    assert len(lines) <= 6, lines
    assert load(ws, bound=3).entries == {"k5": 5, "k6": 6, "k7": 7}
    assert load(ws, old_reader, bound=3).entries == {"k5": 5, "k6": 6, "k7": 7}


def test_values_of_the_wrong_shape_and_lines_that_are_not_records_are_skipped(
    ws: Workspace, tmp_path: Path
) -> None:
    record = tmp_path / ".workspace-mcp" / "rec.jsonl"
    record.write_text('[1, 2]\n{"a": "x", "b": 7}\nnot json\n' + "[" * 50_000 + "\n")
    with locate_state(ws, "rec.jsonl") as loc:
        folded = foldlog.load(loc, None, 10, lambda value: isinstance(value, str))
    assert folded.entries == {"a": "x"}


@pytest.mark.slow  # a race, many rounds
def test_readers_without_the_lock_never_see_a_torn_or_older_record(ws: Workspace) -> None:
    """One thread appends (and, with a bound of 8, rewrites the record every few appends)
    while others read without a lock: each read is a whole record, never older than the
    last one that reader saw."""
    lock = threading.Lock()
    done = threading.Event()
    problems: list[str] = []

    def writer() -> None:
        for n in range(1, 1500):
            with lock:
                add(ws, {f"k{n % 11}": n, "last": n}, bound=8)
        done.set()

    def reader() -> None:
        cached: foldlog.Folded | None = None
        seen = 0
        while not done.is_set():
            cached = load(ws, cached, bound=8)
            last = cached.entries.get("last", 0)
            if last < seen:
                problems.append(f"went back from {seen} to {last}")
            if any(value > last for value in cached.entries.values()):
                problems.append(f"a value newer than last={last}: {cached.entries}")
            seen = last

    threads = [threading.Thread(target=writer)] + [
        threading.Thread(target=reader) for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert problems == []
    assert load(ws, bound=8).entries["last"] == 1499
