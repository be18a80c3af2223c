"""docs/ARCHITECTURE.md's module map is the package on disk (issue 45: a newcomer's map
that names a module which moved, or leaves one out, sends them the wrong way)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "agent_workspace_mcp"
DOC = ROOT / "docs" / "ARCHITECTURE.md"
# An entry of the map: a module, a template or a package, at the start of its line.
ENTRY = re.compile(r"^( *)([A-Za-z_][\w]*(?:\.py|\.html|/))(?=\s|$)")


def _mapped() -> set[str]:
    text = DOC.read_text(encoding="utf-8")
    block = text.split("```\nsrc/agent_workspace_mcp/\n", 1)[1].split("```", 1)[0]
    found: set[str] = set()
    stack: list[tuple[int, str]] = []  # (indent, package path) of the open packages
    for line in block.splitlines():
        match = ENTRY.match(line)
        if not match:
            continue
        indent, name = len(match.group(1)), match.group(2)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        # A continuation line of a description sits at the description's column, deeper
        # than any entry could be: an entry is exactly one level (2 spaces) below its package.
        if indent != (stack[-1][0] + 2 if stack else 2):
            continue
        path = "/".join([*(p for _, p in stack), name.rstrip("/")])
        if name.endswith("/"):
            stack.append((indent, name.rstrip("/")))
        else:
            found.add(path)
    return found


def _on_disk() -> set[str]:
    return {
        str(path.relative_to(SRC))
        for path in SRC.rglob("*")
        if path.suffix in (".py", ".html")
        and path.name != "__init__.py"
        and "__pycache__" not in path.parts
        and path.name not in ("__main__.py", "_version.py")
    }


def test_every_module_on_disk_is_in_the_map() -> None:
    missing = sorted(_on_disk() - _mapped())
    assert not missing, f"modules ARCHITECTURE.md's map leaves out: {missing}"


def test_every_module_in_the_map_exists() -> None:
    stale = sorted(_mapped() - _on_disk())
    assert not stale, f"ARCHITECTURE.md's map names modules that do not exist: {stale}"
