"""The package's layers, enforced: a module that imports across a forbidden edge, or an
import cycle, fails here (docs/ARCHITECTURE.md shows the same rules as a diagram)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

PACKAGE = "agent_workspace_mcp"
SRC = Path(__file__).resolve().parents[1] / "src" / PACKAGE

# layer -> module prefixes it must never import (anywhere in the module, lazily too)
FORBIDDEN = {
    "core": (
        "fastmcp",
        "mcp",
        "mcp_types",
        "starlette",
        "uvicorn",
        f"{PACKAGE}.tools",
        f"{PACKAGE}.middleware",
        f"{PACKAGE}.transports",
        f"{PACKAGE}.cli",
        f"{PACKAGE}.server",
        f"{PACKAGE}.services",
        f"{PACKAGE}.prompts",
        f"{PACKAGE}.requestctx",
        f"{PACKAGE}.configuration",
    ),
    "middleware": (f"{PACKAGE}.tools", f"{PACKAGE}.transports", f"{PACKAGE}.cli"),
    "tools": (
        f"{PACKAGE}.middleware",
        f"{PACKAGE}.transports",
        f"{PACKAGE}.cli",
        f"{PACKAGE}.server",
    ),
    "settings": ("fastmcp", "mcp", f"{PACKAGE}.server", f"{PACKAGE}.cli"),
    "configuration": ("fastmcp", "mcp", f"{PACKAGE}.server", f"{PACKAGE}.cli"),
    "transports": (
        f"{PACKAGE}.tools",
        f"{PACKAGE}.middleware",
        f"{PACKAGE}.cli",
        f"{PACKAGE}.server",
    ),
    "requestctx": (f"{PACKAGE}.tools", f"{PACKAGE}.middleware", f"{PACKAGE}.transports"),
    "profiles": ("fastmcp", "mcp", f"{PACKAGE}.server", f"{PACKAGE}.tools", f"{PACKAGE}.cli"),
    # The console reads core state; it is not a second way around containment or the tools.
    "console": (
        "fastmcp",
        "mcp",
        f"{PACKAGE}.tools",
        f"{PACKAGE}.middleware",
        f"{PACKAGE}.server",
        f"{PACKAGE}.cli",
    ),
    "surface": ("fastmcp", "mcp", f"{PACKAGE}.server", f"{PACKAGE}.tools", f"{PACKAGE}.cli"),
    "": (f"{PACKAGE}.cli",),  # nothing imports the CLI (but __main__)
}


def module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@functools.cache
def parsed(path: Path) -> ast.Module:
    # Each test walks every module; parsing them once per run saves most of this file's time.
    return ast.parse(path.read_text())


@functools.cache
def imports(path: Path, *, top_level_only: bool) -> frozenset[str]:
    """Absolute names of the modules `path` imports."""
    tree = parsed(path)
    package = (
        module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    )
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            found.add(target)
            # `from . import x` imports the submodule x
            for alias in node.names:
                candidate = f"{target}.{alias.name}"
                if (SRC.parent / candidate.replace(".", "/")).with_suffix(".py").exists() or (
                    SRC.parent / candidate.replace(".", "/")
                ).is_dir():
                    found.add(candidate)
    return frozenset(found)


def layer_of(name: str) -> str:
    rest = name.removeprefix(PACKAGE).lstrip(".")
    return rest.split(".")[0] if rest else ""


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def test_no_module_imports_across_a_forbidden_edge() -> None:
    violations = []
    for name, path in all_modules().items():
        rules = FORBIDDEN.get(layer_of(name), ()) + (
            FORBIDDEN[""] if name != f"{PACKAGE}.__main__" else ()
        )
        for target in imports(path, top_level_only=False):
            if any(target == bad or target.startswith(bad + ".") for bad in rules):
                violations.append(f"{name} imports {target}")
    assert violations == []


def test_there_is_no_import_cycle() -> None:
    """None at all, lazy imports included: a lazy import that closes a circle only hides
    it (issue 30 found two inside packages that way)."""
    modules = all_modules()
    graph = {
        name: {t for t in imports(path, top_level_only=False) if t in modules and t != name}
        for name, path in modules.items()
    }
    # A package's __init__ importing its own submodules is not a cycle of layers.
    for name in graph:
        graph[name] = {t for t in graph[name] if not name.startswith(t + ".")}
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert cycles == []


def test_every_import_of_the_package_names_a_module_that_exists() -> None:
    """A lazy import is only run when its branch is: a module moved without its lazy
    importers updated would fail only there (issue 30: `core/exec/` caught one)."""
    modules = all_modules()
    packages = {name.rpartition(".")[0] for name in modules}
    missing = []
    for name, path in modules.items():
        for target in imports(path, top_level_only=False):
            if not target.startswith(PACKAGE):
                continue
            if target not in modules and target not in packages:
                missing.append(f"{name} imports {target}")
    assert missing == []


# Issue 45: core's rule is an allowlist, so a new upward or framework edge fails even if
# no one thought to forbid it: the standard library, core itself, and these dependencies.
CORE_MAY_IMPORT = frozenset(
    {
        "anyio",
        "pathspec",
        "platformdirs",
        "regex",
        "tree_sitter",
        "wcmatch",
        "yaml",
    }
)


def test_core_imports_only_core_the_standard_library_and_its_dependencies() -> None:
    import sys

    wrong = []
    for path in sorted((SRC / "core").rglob("*.py")):
        for node in ast.walk(parsed(path)):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.ImportFrom) and node.level:
                # relative: must stay inside core (core/x: level 1; core/a/x: level 2 ...)
                depth = len(path.relative_to(SRC / "core").parts) - 1
                if node.level > depth + 1:
                    wrong.append(
                        f"{path.relative_to(SRC)}: from {'.' * node.level}{node.module or ''}"
                    )
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in CORE_MAY_IMPORT:
                    wrong.append(f"{path.relative_to(SRC)}: {name}")
    assert not wrong, wrong
