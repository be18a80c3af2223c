"""Every client snippet in README.md and docs/ names the server as `config` prints it
(issue 44, item 1): Claude Code reserves `workspace`, so a snippet with that name fails
when pasted. Fenced blocks and inline code are both read."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from agent_workspace_mcp.config import DEFAULT_NAME

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# Options of `claude mcp add` that take a value (the rest are flags).
VALUED = {"--transport", "-t", "--scope", "-s", "--header", "-H", "--env", "-e"}


def code_of(text: str) -> list[str]:
    fenced = re.findall(r"```[^\n]*\n(.*?)```", text, re.S)
    rest = re.sub(r"```[^\n]*\n.*?```", "", text, flags=re.S)
    return fenced + re.findall(r"`([^`\n]+)`", rest)


def claude_names(code: str) -> list[str]:
    names = []
    for match in re.finditer(r"claude mcp add(?: |-json )(.*)", code):
        try:
            words = shlex.split(match.group(1))
        except ValueError:
            words = match.group(1).split()
        skip = False
        for word in words:
            if skip:
                skip = False
            elif word in VALUED:
                skip = True
            elif word.startswith("-"):
                continue
            else:
                if word not in ("...", "…"):
                    names.append(word)
                break
    return names


def config_names(code: str) -> list[str]:
    names = re.findall(r'"(?:mcpServers|servers|mcp)"\s*:\s*\{\s*"([^"]+)"', code)
    return names + re.findall(r"\[mcp_servers\.([A-Za-z0-9_-]+)\]", code)


def test_every_snippet_uses_the_name_config_prints() -> None:
    wrong = []
    for doc in DOCS:
        for code in code_of(doc.read_text(encoding="utf-8")):
            for name in claude_names(code) + config_names(code):
                if name != DEFAULT_NAME:
                    wrong.append(f"{doc.relative_to(ROOT)}: {name!r} in {code[:80]!r}")
    assert not wrong, "\n".join(wrong)


def test_the_reader_finds_the_names() -> None:
    """The reader itself: a snippet with the reserved name is caught."""
    assert claude_names('claude mcp add --transport http workspace http://x --header "A: b"') == [
        "workspace"
    ]
    assert config_names('{"mcpServers": {"workspace": {}}}') == ["workspace"]
    assert config_names("[mcp_servers.workspace]\ncommand = 'x'") == ["workspace"]


def test_every_expected_failure_carries_its_reason() -> None:
    """Issue 44, item 7: every entry of the conformance expected-failures files has its
    own reason (a comment right above it, or on its line)."""
    bare = []
    for path in sorted((ROOT / "tests" / "conformance").glob("expected-failures-*.yml")):
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            item = line.lstrip().startswith("- ") and "#" not in line
            if item and (i == 0 or not lines[i - 1].lstrip().startswith("#")):
                bare.append(f"{path.name}: {line.strip()}")
    assert not bare, bare


def test_the_panel_size_quoted_is_the_panels() -> None:
    """Issue 44, item 7: PERFORMANCE.md gives the review panel's size the README quotes."""
    panel = ROOT / "src" / "agent_workspace_mcp" / "tools" / "review_panel.html"
    size = len(panel.read_bytes())
    readme = (ROOT / "README.md").read_text()
    performance = (ROOT / "docs" / "PERFORMANCE.md").read_text()
    quoted = re.search(r"`ui://agent-workspace-mcp/review`, (\d+) KB", readme)
    assert quoted and int(quoted.group(1)) == round(size / 1000), (quoted, size)
    assert f"**{size:,} bytes** ({quoted.group(1)} KB" in performance
