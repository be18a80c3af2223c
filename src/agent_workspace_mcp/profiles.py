"""Tool surfaces for the users of each source document (`--profile`), as plain data.

A profile names the tools it exposes (after renames), renames some of ours (FastMCP
tool transformations over the same implementation), and sets defaults that explicit
flags and environment variables still override. No FastMCP here: `--list-profiles`
and configuration errors stay fast.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Profile:
    name: str
    source: str  # the document whose users it serves
    tools: tuple[str, ...] | None  # the exposed tool names; None: every enabled tool
    renames: dict[str, str] = field(default_factory=dict)  # our name -> the profile's
    defaults: dict[str, Any] = field(default_factory=dict)  # Settings fields


PROFILES: dict[str, Profile] = {
    "workspace-mcp": Profile("workspace-mcp", "workspace-mcp.md", None),
    "persona": Profile(
        "persona",
        "persona-mcp-workspace.md",
        ("read", "write", "edit", "bash", "skill"),
        renames={"write_file": "write"},
        # persona's only gate is authentication (JWT, required over HTTP): bash included.
        defaults={"unconfined": True, "allow_remote_exec": True},
    ),
    "coding-agent": Profile(
        "coding-agent",
        "coding-agent-mcp.md",
        (
            "list_files",
            "read_file",
            "read_files",
            "read_binary_file",
            "search_text",
            "write_file",
            "write_binary_file",
            "apply_patch",
            "make_directory",
            "delete_path",
            "move_path",
            "rename_path",
            "file_info",
            "run_task",
        ),
        renames={"grep": "search_text"},
        defaults={"tasks": True},
    ),
}
