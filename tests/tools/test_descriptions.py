"""Numbers a model reads in a tool description come from the limits module (issues 29
and 30): the `run_command` description once said 256 KiB while the code cut at 64 KiB.
This reads the tool modules' source, so a number typed by hand into a docstring or a
`Field(description=...)` fails here; an f-string or a `numbers_from_limits` placeholder
is how a number gets in."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import agent_workspace_mcp.tools as tools_package

TOOLS = Path(tools_package.__file__).parent
# A size, a duration, or a count that bounds something ("cap 2000", "last 10").
HAND_TYPED = re.compile(
    r"\b\d[\d,.]*\s*(?:KiB|MiB|GiB|ms|s|seconds|minutes)\b"
    r"|\b(?:cap|last|first|after|above|below|at most|up to)\s+\d"
    r"|\b\d+\s+most\b"
)


def descriptions(path: Path):
    """(where, text) of every tool docstring (functions the module passes to `bind`) and
    every literal `description=` string."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    tools = {
        node.args[0].id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and getattr(node.func, "id", None) == "bind"
        and node.args
        and isinstance(node.args[0], ast.Name)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in tools:
            doc = ast.get_docstring(node)
            if doc:
                yield f"{path.name}:{node.lineno} {node.name} docstring", doc
        literal = isinstance(node, ast.keyword) and isinstance(node.value, ast.Constant)
        if literal and node.arg == "description" and isinstance(node.value.value, str):
            yield f"{path.name}:{node.value.lineno} description", node.value.value


def test_no_tool_description_types_a_limit_by_hand() -> None:
    found = [
        f"{where}: {match.group(0)!r}"
        for path in sorted(TOOLS.glob("*.py"))
        for where, text in descriptions(path)
        for match in HAND_TYPED.finditer(text)
    ]
    assert found == []


def test_the_check_sees_a_hand_typed_number(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        'def t():\n    """Output past 256 KiB is cut."""\n\n'
        "def register(app, services):\n    add_tool(app, bind(t, services))\n"
        'Arg = Field(description="Lines to return (cap 2000).")\n'
    )
    found = [m.group(0) for _, text in descriptions(sample) for m in HAND_TYPED.finditer(text)]
    assert found == ["256 KiB", "cap 2"]
