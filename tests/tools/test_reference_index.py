"""find_references at grep's speed (issue 47): the Python lexer dismisses a file only
when tree-sitter would find no reference in it either; the reference index answers an
unchanged file without a parse, never past a changed signature, never outside the root,
survives a restart, and a damaged copy on disk costs only time."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agent_workspace_mcp import Settings
from agent_workspace_mcp.core.code import index, languages, lexing, outline
from agent_workspace_mcp.core.code.navigate import Source, references_in, word_pattern
from tests.conftest import open_client
from tests.helpers import fails, ok

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "agent_workspace_mcp"

TRICKY = b'''\
"""Module doc naming Thing."""
import thing  # Thing in a comment
s = 'it\\'s Thing'
t = "a # not a comment " + Thing.name
u = f"{Thing!r} and {d['Thing']} and {{Thing}}"
v = rb"\\d+ Thing"
w = """multi
Thing line
"""
x = f"""
{Thing}
"""
'''


def test_the_lexer_agrees_with_tree_sitter_on_tricky_source() -> None:
    spans = lexing.python_literals(TRICKY)
    assert spans is not None
    pattern = word_pattern("Thing")
    refs, _ = references_in(Source("t.py", "t.py", "python", TRICKY), "Thing")
    code_lines = {r.line for r in refs}
    assert code_lines == {4, 5, 11}  # `+ Thing.name`, `{Thing!r}`, `{Thing}` in the f"""
    starts = [a for a, _ in spans]
    import bisect

    inside = []
    for match in pattern.finditer(TRICKY):
        k = bisect.bisect_right(starts, match.start()) - 1
        inside.append(k >= 0 and match.end() <= spans[k][1])
    # docstring, comment, escaped quote, code, f-field, string in a field, {{ }}, rb"",
    # triple-quoted, a field of an f"""
    assert inside == [True, True, True, False, False, True, True, True, True, False]


@pytest.mark.parametrize("word", ["Thing", "x", "_", "$el", "a1"])
def test_the_word_pattern_finds_the_word_only_where_it_stands_alone(word: str) -> None:
    """The word first, its left edge checked after (the fast form): the same matches as
    asking of every occurrence whether a name character touches either side."""
    data = f"{word} {word}{word} x{word} {word}_ 9{word} ${word} é{word} ({word}) {word}".encode()
    name = re.compile(rb"[A-Za-z0-9_$]")
    w = word.encode()
    expected = [
        (i, i + len(w))
        for i in range(len(data))
        if data.startswith(w, i)
        and not (i and name.match(data, i - 1))
        and not name.match(data, i + len(w))
    ]
    assert [m.span() for m in word_pattern(word).finditer(data)] == expected
    assert expected  # the first and the last occurrence stand alone


@pytest.mark.slow  # lexes and parses every module of the package, for many words
def test_the_lexer_agrees_with_tree_sitter_on_real_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every word of every comment and docstring of this package's source, and every
    name it defines: where the lexer dismisses the file for it, tree-sitter finds no
    reference either; where it hands over top-level statements, parsing them alone
    finds what parsing the whole file finds, lines and enclosing names alike."""
    # A parse depends only on the bytes: each file (and chunk) is parsed once, not once a
    # word (what is compared is where the references are, not how long it takes).
    parses: dict[tuple[str, bytes], object] = {}
    parse = languages.parse

    def parse_once(language: str, data: bytes, deadline: float | None = None) -> object:
        key = (language, bytes(data))
        if key not in parses:
            parses[key] = parse(language, data, deadline)
        return parses[key]

    monkeypatch.setattr(languages, "parse", parse_once)
    dismissed = chunked = 0
    for path in sorted(PACKAGE.rglob("*.py")):
        parses.clear()
        data = path.read_bytes()
        words = set(re.findall(rb"#\s*([A-Za-z_]\w{3,})", data)[:20])
        words |= set(re.findall(rb"(?m)^\s*(?:def|class)\s+(\w+)", data)[:20])
        source = Source(str(path), str(path), "python", data)
        for word in sorted(words):
            whole, _ = references_in(source, word.decode())
            chunks = lexing.code_chunks(data, word_pattern(word.decode()))
            if chunks == []:
                dismissed += 1
                assert whole == [], (path, word)
            else:
                chunked += chunks is not None
                assert references_in(source, word.decode(), None, chunks)[0] == whole, (path, word)
    assert dismissed > 200 and chunked > 200


@pytest.mark.parametrize(
    "source",
    [
        b'def f():\n    return"""x."""\nThing()\ndef g():\n    """doc"""\n',
        b'def f(a):\n    return a if"x."else"""y"""\nThing()\n"""z"""\n',
    ],
)
def test_a_string_right_after_a_keyword_never_hides_a_reference(source: bytes) -> None:
    """The lexer skipped a quote right after a name (`return` then three quotes), so the string's
    closing quotes opened a string that ran to the next docstring, and the reference in
    between was taken for string text: the file was dismissed though tree-sitter finds
    the reference."""
    refs, _ = references_in(Source("k.py", "k.py", "python", source), "Thing")
    assert [r.line for r in refs] == [3]
    assert lexing.code_chunks(source, word_pattern("Thing")) != []


@pytest.mark.parametrize(
    ("source", "spans"),
    [
        (b"x = b\"T\" + BR'T'", [(4, 8), (11, 16)]),  # the prefix is part of the string
        (b'x = Rf"{T}!"', [(7, 7), (10, 12)]),  # only an f-string's text, not its field
        (b'x = (rb"T")#c', [(5, 10), (11, 13)]),
        (b'x = rbu"T"', None),  # three letters and no f: no prefix Python has
        (b'if x:pass\nelif"T":pass', None),  # a quote right after a name
    ],
)
def test_a_strings_prefix_is_read_back_from_its_quote(
    source: bytes, spans: list[tuple[int, int]] | None
) -> None:
    assert lexing.python_literals(source) == spans


def test_an_unterminated_string_is_unsure() -> None:
    assert lexing.python_literals(b"x = 'open\nThing\n") is None
    assert lexing.code_chunks(b"x = 'open\nThing\n", word_pattern("Thing")) is None


CHUNKED = b'''\
"""Doc: a Thing at column 0 of a docstring:
def Thing(): pass
"""
import os, Thing


@decorate(
    Thing,
)
def first():
    return 1


def second():
    return os.sep


class Holder:
    """Not Thing."""

    def method(self):
        return Thing(self)
'''


def test_only_the_statements_holding_a_reference_are_parsed(parses: list[int]) -> None:
    """A decorator stays with what it decorates and a column-0 `def` inside a string is
    no statement; parsed alone, the statements give what the whole file gives."""
    chunks = lexing.code_chunks(CHUNKED, word_pattern("Thing"))
    assert chunks is not None
    firsts = [CHUNKED[a:b].split(b"\n", 1)[0] for a, b in chunks]
    assert firsts == [b'"""Doc: a Thing at column 0 of a docstring:', b"class Holder:"]
    source = Source("c.py", "c.py", "python", CHUNKED)
    refs, _ = references_in(source, "Thing", None, chunks)
    assert parses == [b - a for a, b in chunks]  # `second` was not parsed
    assert [(r.line, r.enclosing) for r in refs] == [(4, None), (8, None), (22, "Holder.method")]
    assert references_in(source, "Thing")[0] == refs


def test_a_cut_inside_an_expression_parses_the_whole_file(parses: list[int]) -> None:
    """`@` at column 0 continuing an expression (matrix product) is no statement: the
    piece after it fails to parse, so the file is parsed whole and the answer is its."""
    data = b"def a():\n    pass\n\n\nx = (1\n@ Thing)\n"
    chunks = lexing.code_chunks(data, word_pattern("Thing"))
    assert chunks == [(data.index(b"@"), len(data))]
    refs, _ = references_in(Source("m.py", "m.py", "python", data), "Thing", None, chunks)
    assert [(r.line, r.enclosing) for r in refs] == [(6, None)]
    assert parses == [len(data) - data.index(b"@"), len(data)]


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    counted: list[int] = []  # the size of each piece of source asked for
    from agent_workspace_mcp.core.code import languages

    real = languages.parse

    def counting(language: str, data: bytes, *args, **kwargs):
        counted.append(len(data))
        return real(language, data, *args, **kwargs)

    monkeypatch.setattr(languages, "parse", counting)
    monkeypatch.setattr(outline, "OUTLINE_CACHE_FILES", 0)
    return counted


def project(ws: Path) -> None:
    (ws / "pkg").mkdir()
    (ws / "pkg" / "widget.py").write_text("class Widget:\n    pass\n")
    (ws / "pkg" / "use.py").write_text("from .widget import Widget\n\nw = Widget()\n")
    for n in range(20):  # mentions only in docstrings and comments
        (ws / "pkg" / f"doc{n}.py").write_text(f'"""About Widget {n}."""\n# Widget\nx = {n}\n')
    (ws / "web").mkdir()
    (ws / "web" / "app.js").write_text("// Widget\nconst w = new Widget();\n")


def restart() -> None:
    index._ref_indexes.clear()


async def test_unchanged_files_are_answered_without_a_parse(ws: Path, parses: list[int]) -> None:
    project(ws)
    async with open_client(Settings(root=str(ws))) as client:
        first = await ok(client, "find_references", name="Widget")
        assert "pkg/use.py" in first and "web/app.js" in first and "doc0" not in first
        assert len(parses) == 3  # widget.py, use.py and app.js: the 20 docs are lexed only
        parses.clear()
        assert await ok(client, "find_references", name="Widget") == first
        assert parses == []
        (ws / "pkg" / "doc3.py").write_text("from .widget import Widget\nWidget()\n")
        again = await ok(client, "find_references", name="Widget")
        assert "pkg/doc3.py" in again and len(parses) == 1
        (ws / "pkg" / "use.py").write_text("w = 1\n")  # no longer refers to it
        assert "pkg/use.py" not in await ok(client, "find_references", name="Widget")


async def test_the_same_content_is_judged_once_whatever_its_name(
    ws: Path, parses: list[int]
) -> None:
    """By content digest: copies are parsed once, and a file rewritten with the same
    bytes (a branch switch, a formatter: a new signature) is not parsed again."""
    project(ws)
    for n in range(3):
        (ws / "pkg" / f"copy{n}.py").write_text("from .widget import Widget\n\nw = Widget()\n")
    async with open_client(Settings(root=str(ws))) as client:
        first = await ok(client, "find_references", name="Widget")
        assert all(f"pkg/copy{n}.py" in first for n in range(3))
        assert len(parses) == 3  # widget.py, use.py (its copies share it) and app.js
        parses.clear()
        use = ws / "pkg" / "use.py"
        use.write_text(use.read_text())  # same bytes, new signature
        assert await ok(client, "find_references", name="Widget") == first
        assert parses == []
        use.write_text("w = Widget\n")  # new bytes: judged again
        assert "pkg/use.py\n  1: w = Widget\n" in await ok(client, "find_references", name="Widget")
        assert len(parses) == 1


async def test_a_restart_starts_warm_and_damage_costs_only_time(
    ws: Path, parses: list[int]
) -> None:
    project(ws)
    async with open_client(Settings(root=str(ws))) as client:
        first = await ok(client, "find_references", name="Widget")
    kept = ws / ".workspace-mcp" / index.REFERENCES_FILE
    assert "pkg/use.py" in json.loads(kept.read_text())["files"]
    restart()
    parses.clear()
    async with open_client(Settings(root=str(ws))) as client:
        assert await ok(client, "find_references", name="Widget") == first
    assert parses == []
    for damage in (
        "not json",
        '{"version": 2, "files": {"pkg/use.py": [[1], 5]}, "contents": []}',
        '{"version": 2, "files": {"pkg/use.py": [[1,2,3,4,5], "d"]}, "contents": {"d": 5}}',
    ):
        kept.write_text(damage)
        restart()
        async with open_client(Settings(root=str(ws))) as client:
            assert await ok(client, "find_references", name="Widget") == first


async def test_a_planted_index_shows_no_line_the_file_does_not_hold(ws: Path) -> None:
    project(ws)
    async with open_client(Settings(root=str(ws))) as client:
        first = await ok(client, "find_references", name="Widget")
    kept = ws / ".workspace-mcp" / index.REFERENCES_FILE
    data = json.loads(kept.read_text())
    _, digest = data["files"]["pkg/use.py"]
    data["contents"][digest] = {"Widget": [[1, "forged"], [2, None]]}
    kept.write_text(json.dumps(data))
    restart()
    async with open_client(Settings(root=str(ws))) as client:
        answer = await ok(client, "find_references", name="Widget")
    assert answer == first and "forged" not in answer


async def test_what_is_kept_never_reaches_outside(ws: Path, outside: Path) -> None:
    (ws / "src").mkdir()
    (ws / "src" / "a.py").write_text("Thing()\n")
    (outside / "a.py").write_text("Thing()  # top secret\n")
    async with open_client(Settings(root=str(ws))) as client:
        assert "src/a.py" in await ok(client, "find_references", name="Thing")
        (ws / "src" / "a.py").unlink()
        (ws / "src").rmdir()
        (ws / "src").symlink_to(outside)
        answer = await fails(client, "find_references", name="Thing")
    assert "no references" in answer and "secret" not in answer
