"""The bare FastMCP server the write bench compares with, and the durable write it does
(bench/writes.py): in process, or spawned over stdio as `python bench/bare_writer.py DIR`.
It imports nothing of ours, so over stdio it is FastMCP alone."""

from __future__ import annotations

import os
import secrets
import sys

from fastmcp import FastMCP


def durable_write(directory: str, name: str, data: bytes) -> None:
    """Write, fsync, rename over `name`, fsync the directory: what no durable write avoids."""
    tmp = os.path.join(directory, f".{name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, os.path.join(directory, name))
    dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def bare_writer(directory: str) -> FastMCP:
    mcp = FastMCP("bare")

    @mcp.tool
    def read(path: str) -> str:
        with open(os.path.join(directory, path), encoding="utf-8") as handle:
            return handle.read()

    @mcp.tool
    def write(content: str) -> str:
        data = content.encode()
        durable_write(directory, "out.txt", data)
        return f"Updated out.txt ({len(data)} bytes)"

    @mcp.tool
    async def write_on_loop(content: str) -> str:  # no worker-thread trip
        data = content.encode()
        durable_write(directory, "out.txt", data)
        return f"Updated out.txt ({len(data)} bytes)"

    return mcp


if __name__ == "__main__":
    bare_writer(sys.argv[1]).run(show_banner=False)
