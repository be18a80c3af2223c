"""find_symbol's definition-shaped prefilter (issue 47) never hides a definition: every
definition tree-sitter finds, in every language's fixtures and in real Python (this
package's own source), sits on a line both the ripgrep pattern and the file's language
shapes accept; and find_symbol answers what the word prefilter answered."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastmcp import Client

from agent_workspace_mcp.core.code import outline, shapes
from agent_workspace_mcp.core.code.languages import language_of
from agent_workspace_mcp.core.code.outline import definitions
from tests.helpers import ok
from tests.tools.test_code import SOURCES

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "agent_workspace_mcp"


def _misses(language: str, text: str) -> list[str]:
    lines = text.splitlines()
    missed = []
    for d in definitions(language, text.encode()):
        for word in {d.name, d.qualified.rsplit(".", 1)[-1]}:
            if not word.isidentifier():
                continue  # C++ `geo::Shape::perimeter`, an operator: no plain word to ask for
            union = re.compile(shapes.rg_pattern(word))
            if not any(
                union.search(line) and shapes.may_define(language, line, word) for line in lines
            ):
                missed.append(f"{d.kind} {word} (line {d.start})")
    return missed


@pytest.mark.parametrize("rel", sorted(SOURCES))
def test_every_fixture_definition_has_a_shaped_line(rel: str) -> None:
    language = language_of(rel)
    assert language is not None
    assert _misses(language, SOURCES[rel]) == []


@pytest.mark.slow  # parses every module of the package
def test_every_definition_of_real_python_has_a_shaped_line() -> None:
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 100
    missed = {str(p): m for p in files if (m := _misses("python", p.read_text()))}
    assert missed == {}


def test_calls_and_uses_are_not_python_definitions() -> None:
    for line in ("x = QuerySet(model)", "QuerySet = other", "qs: QuerySet", "# class QuerySet"):
        assert shapes.may_define("python", line, "QuerySet") is (line == "# class QuerySet")
    # The name right after the keyword: a parameter's type or a base class is a use.
    for line in ("def f(qs: QuerySet):", "class Manager(QuerySet):", "def g() -> QuerySet:"):
        assert not shapes.may_define("python", line, "QuerySet")
    for line in ("async def QuerySet(x):", "class QuerySet[T]:", "class A: def QuerySet(s): pass"):
        assert shapes.may_define("python", line, "QuerySet")
    assert shapes.may_define("java", "    public QuerySet(Model m) {", "QuerySet")
    assert not shapes.may_define("java", "    x = other.QuerySet(m);", "QuerySet")


async def test_find_symbol_parses_only_files_that_can_define_it(
    client: Client, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (ws / "defs.py").write_text("class Thing:\n    pass\n")
    for n in range(30):  # uses only: none of these is read by tree-sitter
        (ws / f"use{n}.py").write_text(f"from defs import Thing\nt{n} = Thing()\n")
    parsed: list[int] = []
    real = outline._definitions
    monkeypatch.setattr(outline, "_definitions", lambda *a: parsed.append(1) or real(*a))
    monkeypatch.setattr(outline, "OUTLINE_CACHE_FILES", 0)
    answer = await ok(client, "find_symbol", name="Thing")
    assert answer.startswith("defs.py:1-2  class Thing") and "use0.py" not in answer
    assert len(parsed) == 1  # defs.py alone
