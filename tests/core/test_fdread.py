"""The one capped read by descriptor (issue 30): it was written five times, and the
skills copy read a file whole, however large it had grown since the scan."""

from __future__ import annotations

import os
from pathlib import Path

from agent_workspace_mcp.core.fdread import read_capped, read_regular


def test_reads_at_most_the_limit_of_a_regular_file_and_nothing_else(tmp_path: Path) -> None:
    (tmp_path / "small").write_bytes(b"hello")
    with (tmp_path / "huge").open("wb") as f:  # 1 GiB, sparse: costs no disk
        f.truncate(1 << 30)
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "link").symlink_to(tmp_path / "small")
    (tmp_path / "dir").mkdir()
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert read_regular(fd, "small", 100) == b"hello"
        assert read_regular(fd, "small", 3) == b"hel"
        assert read_regular(fd, "huge", 10) == b"\0" * 10
        assert read_regular(fd, "fifo", 10) is None  # opened without blocking, refused
        assert read_regular(fd, "link", 10) is None  # never through a symlink
        assert read_regular(fd, "dir", 10) is None
        assert read_regular(fd, "missing", 10) is None
    finally:
        os.close(fd)
    assert read_regular(None, str(tmp_path / "small"), 10) == b"hello"


def test_read_capped_stops_on_a_file_that_keeps_growing(tmp_path: Path) -> None:
    path = tmp_path / "growing"
    path.write_bytes(b"x" * 4096)
    reader = os.open(path, os.O_RDONLY)
    writer = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(writer, b"y" * (3 << 20))  # it grew past the bound after it was opened
        assert len(read_capped(reader, 1 << 20)) == 1 << 20
    finally:
        os.close(reader)
        os.close(writer)
