"""Bytes in and out: sniffing, decoding, conventions, atomic replacement."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from agent_workspace_mcp.core.containment import locate
from agent_workspace_mcp.core.errors import (
    BinaryFileError,
    EncodingError,
    TooLargeError,
    WrongTypeError,
)
from agent_workspace_mcp.core.textio import (
    atomic_write,
    decode_text,
    is_binary,
    read_bytes,
)
from agent_workspace_mcp.core.workspaces import WorkspaceRegistry


def loc_of(root: Path, path: str, **kw):
    return locate(WorkspaceRegistry.confined(str(root)).primary, path, **kw)


def test_binary_sniff_window() -> None:
    assert is_binary(b"abc\x00def")
    assert not is_binary(b"a" * 8192 + b"\x00")  # NUL after the 8 KiB window
    assert not is_binary("héllo".encode())


def test_decode_keeps_conventions() -> None:
    doc = decode_text(b"\xef\xbb\xbfa\r\nb\r\n", "f")
    assert (doc.text, doc.newline, doc.bom, doc.trailing_newline) == ("a\nb\n", "\r\n", True, True)
    assert doc.encode() == b"\xef\xbb\xbfa\r\nb\r\n"
    assert doc.encode("x\ny") == b"\xef\xbb\xbfx\r\ny"
    assert doc.encode("\ufeffx\r\n") == b"\xef\xbb\xbfx\r\n"  # echoed BOM written once
    plain = decode_text(b"a\nb", "f")
    assert (plain.newline, plain.bom, plain.trailing_newline) == ("\n", False, False)


def test_decode_errors_name_the_fix() -> None:
    with pytest.raises(BinaryFileError, match="use read_binary_file"):
        decode_text(b"\x00\x01", "img.bin")
    with pytest.raises(EncodingError, match=r"not valid UTF-8 text \(bad byte at offset 1\)"):
        decode_text(b"a\xff", "latin.txt")


def test_atomic_write_creates_and_replaces_keeping_mode(ws: Path) -> None:
    target = ws / "script.sh"
    with loc_of(ws, "script.sh") as loc:
        assert atomic_write(loc, b"v1") is False
    target.chmod(0o751)
    with loc_of(ws, "script.sh") as loc:
        assert atomic_write(loc, b"v2") is True
    assert target.read_bytes() == b"v2"
    assert stat.S_IMODE(target.stat().st_mode) == 0o751
    assert [p.name for p in ws.iterdir()] == ["script.sh"]  # no temp file left


FAILING_WRITE = """
import resource, signal, sys
from agent_workspace_mcp.core.containment import locate
from agent_workspace_mcp.core.errors import WorkspaceError
from agent_workspace_mcp.core.textio import atomic_write
from agent_workspace_mcp.core.workspaces import WorkspaceRegistry
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))
with locate(WorkspaceRegistry.confined(sys.argv[1]).primary, "f.txt") as loc:
    try:
        atomic_write(loc, b"n" * 4096)
    except WorkspaceError as exc:
        print(exc)
"""


def test_failed_write_leaves_old_file_whole(ws: Path) -> None:
    """A real mid-write failure (file size limit, works as root too): old bytes survive."""
    import subprocess
    import sys

    (ws / "f.txt").write_text("old content")
    out = subprocess.run(
        [sys.executable, "-c", FAILING_WRITE, str(ws)], capture_output=True, text=True, timeout=60
    )
    assert out.stdout.strip() == "f.txt: file too large", out.stderr
    assert (ws / "f.txt").read_text() == "old content"
    assert [p.name for p in ws.iterdir()] == ["f.txt"]  # the temp file was removed


def test_write_into_a_directory_is_refused(ws: Path) -> None:
    (ws / "d").mkdir()
    with loc_of(ws, "d") as loc, pytest.raises(WrongTypeError, match="is a directory"):
        atomic_write(loc, b"x")


def test_fifo_is_refused_without_hanging(ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    result: list[BaseException] = []

    def reader() -> None:
        try:
            with loc_of(ws, "pipe") as loc:
                read_bytes(loc)
        except BaseException as exc:
            result.append(exc)

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    thread.join(5)
    assert not thread.is_alive(), "reading a FIFO blocked"
    assert isinstance(result[0], WrongTypeError)
    assert "FIFO" in str(result[0])


def test_device_is_refused() -> None:
    ws = WorkspaceRegistry.unconfined("/").primary
    with locate(ws, "/dev/zero") as loc, pytest.raises(WrongTypeError, match="device"):
        read_bytes(loc)


def test_size_cap_is_checked_on_the_open_file(ws: Path) -> None:
    (ws / "big").write_bytes(b"x" * 2048)
    with loc_of(ws, "big") as loc, pytest.raises(TooLargeError, match="too large"):
        read_bytes(loc, max_bytes=1024)
