"""The README's tool tables, generated from the tools a full server registers: each
tool's name, its arguments as its schema states them (optional ones marked `?`, with
default and ceiling), and the first sentence of the description the model reads. A test
fails when the README drifts (tests/test_readme_tools.py).

Maintainer command: `python -m agent_workspace_mcp.toolsdoc` rewrites the tables in
README.md in place (each between `<!-- tools:SECTION:start -->` and `:end -->`).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

# README section -> the tool modules it documents, in order.
SECTIONS = {
    "files": ("files", "editing", "search", "code", "workspaces", "skills"),
    "commands": ("shell",),
    "memory": ("memory", "changes", "undo", "review", "approvals", "git"),
}
IMPLIED = {"workspace"}  # every workspace tool takes it; the README says so once


def _tools() -> list:
    import tempfile

    import anyio

    from . import Settings, create_server

    with tempfile.TemporaryDirectory() as root:
        # Every capability on, so every tool is registered (nothing is run).
        app = create_server(
            Settings(root=root, shell_mode="any", tasks=True, audit=False, confirm=("exec",))
        )
        return anyio.run(lambda: app.list_tools(run_middleware=False))


def _number(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def _argument(name: str, schema: dict, required: bool) -> str:
    variants = schema.get("anyOf", [schema])
    main = next((v for v in variants if v.get("type") != "null"), schema)
    shown = f"`{name}{'[]' if main.get('type') == 'array' else ''}{'' if required else '?'}`"
    facts = []
    if main.get("enum"):
        facts.append("/".join(f"`{v}`" for v in main["enum"]))
    default = schema.get("default")
    if default not in (None, False, "", [], {}):
        facts.append(_number(default))
    for key in ("maximum", "maxItems"):
        if key in main:
            facts.append(f"≤ {_number(main[key])}")
    return shown + (f" ({', '.join(facts)})" if facts else "")


def first_sentence(text: str) -> str:
    text = " ".join((text or "").split())
    match = re.match(r"(.+?[.!?])(\s|$)", text)
    return (match.group(1) if match else text).replace("|", "\\|")


def tables() -> dict[str, str]:
    from .tools.shell import ENABLED_BY

    by_module: dict[str, list] = {}
    for tool in _tools():
        module = getattr(getattr(tool, "fn", None), "__module__", "").rsplit(".", 1)[-1]
        by_module.setdefault(module, []).append(tool)
    out = {}
    for section, modules in SECTIONS.items():
        commands = section == "commands"
        head = (
            "| Tool | Registered with | Arguments | What it does |"
            if commands
            else ("| Tool | Arguments | What it does |")
        )
        rows = [head, "| --- | --- | --- | --- |" if commands else "| --- | --- | --- |"]
        for module in modules:
            for tool in by_module.get(module, []):
                props = tool.parameters.get("properties", {})
                required = set(tool.parameters.get("required", []))
                args = ", ".join(
                    _argument(n, s, n in required) for n, s in props.items() if n not in IMPLIED
                )
                cells = [f"`{tool.name}`", args, first_sentence(tool.description)]
                if commands:
                    cells.insert(1, ENABLED_BY.get(tool.name, ""))
                rows.append("| " + " | ".join(cells) + " |")
        out[section] = "\n".join(rows)
    return out


def _keep_markers(table: str) -> Callable[[re.Match[str]], str]:
    return lambda match: match.group(1) + table + match.group(2)


def replace_block(readme: str, marker: str, table: str) -> str:
    """`readme` with `table` between its `<!-- MARKER:start -->` and `:end -->` lines."""
    pattern = re.compile(rf"(<!-- {marker}:start -->\n).*?(\n<!-- {marker}:end -->)", re.S)
    if not pattern.search(readme):
        raise SystemExit(f"README.md lacks the <!-- {marker}:start --> markers")
    return pattern.sub(_keep_markers(table), readme)


def rewrite(readme: str, generated: dict[str, str]) -> str:
    for section, table in generated.items():
        readme = replace_block(readme, f"tools:{section}", table)
    return readme


if __name__ == "__main__":  # pragma: no cover - maintainer command
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "README.md")
    path.write_text(rewrite(path.read_text(encoding="utf-8"), tables()), encoding="utf-8")
