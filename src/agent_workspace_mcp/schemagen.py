"""Generates tools/schemas.json, the tool input schemas start-up reads instead of
building them (see tools/schemas.py).

    python -m agent_workspace_mcp.schemagen [--write]
"""

from __future__ import annotations

import json
import sys
import tempfile
from typing import Any

from .configuration import settings_from_sources
from .server import build
from .tools import schemas

# Settings that together register every tool function (profiles, command tools); the
# persona profile is unconfined (the process's directory is its workspace).
GENERATED_FROM = (
    ["--root", "{root}"],
    ["--root", "{root}", "--shell-any", "--tasks", "--confirm", "exec"],
    ["--profile", "persona"],
    ["--root", "{root}", "--profile", "coding-agent", "--tasks"],
)


def generate() -> dict[str, list[Any]]:
    """The table as FastMCP builds it from today's tool functions."""
    with schemas.recording() as table, tempfile.TemporaryDirectory() as root:
        for argv in GENERATED_FROM:
            args = [arg.format(root=root) for arg in argv]
            build(settings_from_sources(args, environ={}, dotenv_path=""))
        return dict(sorted(table.items()))


def render(table: dict[str, list[Any]]) -> str:
    """One tool per line, so a diff shows which tools changed; properties keep their
    order (the order a model reads them in)."""
    lines = [
        f"{json.dumps(key)}: {json.dumps(entry, separators=(',', ':'))}"
        for key, entry in sorted(table.items())
    ]
    return "{\n" + ",\n".join(lines) + "\n}\n"


if __name__ == "__main__":
    text = render(generate())
    if "--write" in sys.argv[1:]:
        schemas.TABLE.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
