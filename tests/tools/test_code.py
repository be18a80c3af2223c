"""Code navigation (issue 16): outline, read_symbol, find_symbol on real source in every
supported language, through the real client."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastmcp import Client

from tests.helpers import fails, ok, sha

SOURCES = {
    "src/parser.py": '''\
import re


# Parses things.
@dataclass
class Parser:
    """Doc."""

    class Options:
        strict: bool = False

    def parse(self, text: str,
              strict: bool = False) -> "Doc":
        # mentions parse_args in a comment
        return Doc(text)

    @property
    async def size(self) -> int: ...


def parse_args(argv):
    s = "parse_args in a string"
    return argv
''',
    "web/App.tsx": """\
import React from "react";

export const App = ({ name }: Props) => {
  return <div>{name}</div>;
};

export function pad(s: string): string;
export function pad(s: string, n: number): string;
export function pad(s: string, n = 2): string { return s; }

export class Store<T> {
  get(key: string): T | undefined { return undefined; }
}
interface Props { name: string }
""",
    "web/util.js": "function helper(a) { return a }\nconst twice = function (x) { return 2 * x }\n",
    "go/server.go": """\
package server

type Server struct {
\taddr string
}

// Start starts it.
func (s *Server) Start(port int) error {
\treturn nil
}

func New() *Server { return &Server{} }
""",
    "rs/lib.rs": """\
pub struct Point { x: i32 }

impl std::fmt::Display for Point {
    fn fmt(&self, f: &mut Formatter) -> Result { Ok(()) }
}

impl Point {
    pub fn new() -> Self { Point { x: 0 } }
}

mod inner { fn hidden() {} }
""",
    "java/A.java": """\
public class A {
    public A() {}
    @Override
    public String toString() { return ""; }
    static class Inner { void run() {} }
}
""",
    "c/x.c": "struct pair { int a; };\nstatic int *first(struct pair *p) { return &p->a; }\n",
    "cpp/y.cpp": """\
namespace geo {
class Shape {
 public:
  double area() const { return 0; }
};
}  // namespace geo
double geo::Shape::perimeter() { return 1; }
template <typename T> T clamp(T v) { return v; }
""",
    "broken.py": "def good():\n    return 1\n\ndef bad(:\n    pass\n\nclass After:\n    def m(self): pass\n",
}


@pytest.fixture
async def code(client: Client, ws: Path) -> Client:
    for rel, text in SOURCES.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    return client


async def test_python_nesting_decorators_and_multi_line_signatures(code: Client) -> None:
    assert await ok(code, "outline", path="src/parser.py") == "\n".join(
        [
            "5-18  class Parser",
            "  9-10  class Options",
            '  12-15  def parse(self, text: str, strict: bool = False) -> "Doc"',
            "  17-18  async def size(self) -> int",
            "21-23  def parse_args(argv)",
        ]
    )
    assert await ok(code, "outline", path="src/parser.py", depth=1) == (
        "5-18  class Parser\n21-23  def parse_args(argv)"
    )


async def test_typescript_tsx_components_and_overloads(code: Client) -> None:
    text = await ok(code, "outline", path="web/App.tsx")
    assert text.splitlines() == [
        "3-5  const App = ({ name }: Props) =>",
        "7-7  function pad(s: string): string;",
        "8-8  function pad(s: string, n: number): string;",
        "9-9  function pad(s: string, n = 2): string",
        "11-13  class Store<T>",
        "  12-12  method get(key: string): T | undefined",
        "14-14  interface Props",
    ]
    assert "2-2  const twice = function (x)" in await ok(code, "outline", path="web/util.js")


async def test_go_rust_java_c_and_cpp(code: Client) -> None:
    assert (await ok(code, "outline", path="go/server.go")).splitlines() == [
        "3-5  type Server struct",
        "8-10  func (s *Server) Start(port int) error",
        "12-12  func New() *Server",
    ]
    assert (await ok(code, "outline", path="rs/lib.rs")).splitlines() == [
        "1-1  pub struct Point",
        "3-5  impl std::fmt::Display for Point",
        "  4-4  fn fmt(&self, f: &mut Formatter) -> Result",
        "7-9  impl Point",
        "  8-8  pub fn new() -> Self",
        "11-11  mod inner",
        "  11-11  fn hidden()",
    ]
    java = (await ok(code, "outline", path="java/A.java")).splitlines()
    assert java[0] == "1-6  public class A" and "  2-2  constructor public A()" in java
    assert "  3-4  method @Override public String toString()" in java
    assert "    5-5  method void run()" in java
    assert (await ok(code, "outline", path="c/x.c")).splitlines() == [
        "1-1  struct pair",
        "2-2  function static int *first(struct pair *p)",
    ]
    assert (await ok(code, "outline", path="cpp/y.cpp")).splitlines() == [
        "1-6  namespace geo",
        "  2-5  class Shape",
        "    4-4  method double area() const",
        "7-7  function double geo::Shape::perimeter()",
        "8-8  function T clamp(T v)",
    ]


async def test_syntax_errors_still_outline_what_parses(code: Client) -> None:
    text = await ok(code, "outline", path="broken.py")
    assert "1-2  def good()" in text and "class After" in text and "def m(self)" in text


async def test_read_symbol_returns_numbered_lines_the_edit_tools_accept(code: Client, ws: Path):
    text = await ok(code, "read_symbol", name="Parser.parse", path="src/parser.py")
    data = (ws / "src/parser.py").read_bytes()
    assert text.splitlines()[0] == "src/parser.py:12-15 method Parser.parse"
    assert text.splitlines()[1] == "12:     def parse(self, text: str,"
    assert text.endswith(f"(sha256 {sha(data)})")
    # The sha is the file's: the edit tools take it as expectedSha256.
    await ok(
        code,
        "edit_file",
        path="src/parser.py",
        oldString="return Doc(text)",
        newString="return Doc(text.strip())",
        expectedSha256=sha(data),
    )
    # The class with its decorator and the comment block above it.
    whole = await ok(code, "read_symbol", name="Parser")
    assert whole.splitlines()[1:3] == ["4: # Parses things.", "5: @dataclass"]
    go = await ok(code, "read_symbol", name="Server.Start")
    assert go.splitlines()[1] == "7: // Start starts it."


async def test_several_matches_are_listed_not_guessed(code: Client) -> None:
    text = await ok(code, "read_symbol", name="pad")
    assert text.splitlines()[0] == "3 definitions of pad; pass path to read_symbol to pick one:"
    assert "web/App.tsx:9-9  function pad(s: string, n = 2): string" in text


async def test_find_symbol_ignores_comments_and_strings(code: Client) -> None:
    # "parse_args" also appears in a comment and a string; only the definition counts.
    assert (
        await ok(code, "find_symbol", name="parse_args")
        == "src/parser.py:21-23  def parse_args(argv)"
    )
    assert (await ok(code, "find_symbol", name="new", kind="method")).startswith("rs/lib.rs:8-8")
    message = await fails(code, "find_symbol", name="parse_arg")
    assert message.startswith("no definition of parse_arg found (did you mean parse_args")
    # Issue 29: one letter missing in the middle found nothing to suggest.
    assert "did you mean parse_args" in await fails(code, "find_symbol", name="pars_args")


async def test_refusals_are_one_sentence(code: Client, ws: Path, outside: Path) -> None:
    (ws / "notes.txt").write_text("hello\n")
    assert "use grep to search it" in await fails(code, "outline", path="notes.txt")
    (ws / "blob.py").write_bytes(b"\x00\x01binary")
    assert "binary file" in await fails(code, "outline", path="blob.py")
    assert await fails(code, "outline", path="../outside/x.py") == (
        "path outside workspace root: ../outside/x.py"
    )
    (outside / "secret.py").write_text("def secret(): pass\n")
    (ws / "link.py").symlink_to(outside / "secret.py")
    assert "outside workspace root" in await fails(code, "outline", path="link.py")
    assert "did you mean parse_args" in await fails(
        code, "read_symbol", name="parse_arg", path="src/parser.py"
    )


async def test_a_tree_outline_respects_gitignore_and_the_budget(code: Client, ws: Path) -> None:
    (ws / ".gitignore").write_text("generated/\n")
    (ws / "generated").mkdir()
    (ws / "generated" / "big.py").write_text("def ignored(): pass\n")
    text = await ok(code, "outline", path=".")
    assert "==> src/parser.py <==" in text and "ignored" not in text
    (ws / "many.py").write_text("".join(f"def f{i}(): pass\n" for i in range(6000)))
    big = await ok(code, "outline", path="many.py")
    assert len(big.encode()) < 70_000 and "outline truncated" in big.splitlines()[-1]


async def test_find_references_skips_comments_and_strings(code: Client, ws: Path) -> None:
    (ws / "src" / "main.py").write_text(
        "from parser import parse_args\n\n\ndef main():\n"
        "    # parse_args is called here\n    return parse_args([])\n"
    )
    text = await ok(code, "find_references", name="parse_args")
    assert text.splitlines() == [
        "src/main.py",
        "  1: from parser import parse_args",
        "  6: return parse_args([])  (in main)",
        "src/parser.py",
        "  21: def parse_args(argv):  (in parse_args)",
        "3 references in 2 files",
    ]
    only = await ok(code, "find_references", name="parse_args", path="src/main.py", maxResults=1)
    assert only.endswith("2 references in 1 files (first 1 shown; raise maxResults or pass path)")
    # Go: a method call through a receiver, and the type in a composite literal.
    go = await ok(code, "find_references", name="Server")
    assert "  12: func New() *Server { return &Server{} }  (in New)" in go


async def test_trees_and_names_never_reach_outside(code: Client, ws: Path, outside: Path) -> None:
    (outside / "secret.py").write_text("def top_secret_function(): pass\n")
    (ws / "linked").symlink_to(outside)  # a symlinked directory is not followed
    assert "top_secret" not in await ok(code, "outline", path=".")
    assert "no definition of top_secret_function" in await fails(
        code, "find_symbol", name="top_secret_function"
    )
    assert "outside workspace root" in await fails(
        code, "read_symbol", name="top_secret_function", path="linked/secret.py"
    )


async def test_symbols_and_paths_share_one_near_miss_rule(code: Client, ws: Path) -> None:
    """Issue 29: `find_symbol Sesion` got no hint while a path one letter off did."""
    (ws / "session.py").write_text("class Session:\n    pass\n")
    assert "did you mean Session" in await fails(code, "find_symbol", name="Sesion")
    assert "did you mean Session" in await fails(code, "find_symbol", name="Sessio")
    assert "did you mean session.py" in await fails(code, "read_file", path="sesion.py")
    assert "did you mean Session" in await fails(
        code, "read_symbol", name="Sesion", path="session.py"
    )
    # Too far from anything, for both: no guess.
    assert "did you mean" not in await fails(code, "find_symbol", name="Zebra")
    assert "did you mean" not in await fails(code, "read_file", path="zebra.py")
