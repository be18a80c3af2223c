"""Which tree-sitter grammar parses which file (issue 16): one table from file extension
to language, and the parsers, imported on first use so cold start does not grow.

Grammars ship as prebuilt wheels (`tree-sitter-python`, ...); nothing is downloaded at
run time.
"""

from __future__ import annotations

import importlib
import posixpath
import threading
from typing import Any

# extension -> language
EXTENSIONS = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    # A header is parsed as C++: its grammar reads C declarations too.
    ".h": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".hxx": "cpp",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".c++": "cpp",
}

# language -> (module, function returning the grammar)
GRAMMARS = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
}

_lock = threading.Lock()
_languages: dict[str, Any] = {}


def language_of(path: str) -> str | None:
    """The language of a file by its extension, or None."""
    _, ext = posixpath.splitext(path.lower())
    return EXTENSIONS.get(ext)


def supported() -> str:
    """The languages, for the one sentence an unsupported file gets."""
    return "Python, JavaScript, TypeScript/TSX, Go, Rust, Java, C and C++"


def grammar(language: str) -> Any:
    """The tree-sitter Language, its wheel imported on first use."""
    import tree_sitter

    with _lock:
        found = _languages.get(language)
        if found is None:
            module, function = GRAMMARS[language]
            found = tree_sitter.Language(getattr(importlib.import_module(module), function)())
            _languages[language] = found
    return found


class ParseTimeout(Exception):
    """The parse ran past its deadline and was stopped."""


def parse(language: str, source: bytes, deadline: float | None = None) -> Any:
    """The syntax tree of `source` (tree-sitter recovers from syntax errors); stopped
    at `deadline` (time.monotonic()) with ParseTimeout: a 15 MB one-line file takes
    tens of seconds to parse (issue 43)."""
    import time

    import tree_sitter

    # A Parser is cheap and not safe to share between threads: one per parse.
    from ..limits import OUTLINE_QUERY_MAX_BYTES

    parser = tree_sitter.Parser(grammar(language))
    # A tree parsed through a read callback holds no copy of the source, so every
    # `node.text` after it is slow (5x on 30,000 definitions): only a file big enough for
    # the parse itself to run past the deadline is parsed that way.
    if deadline is None or len(source) <= OUTLINE_QUERY_MAX_BYTES:
        return parser.parse(source)
    view = memoryview(source)

    def read(offset: int, _point: Any) -> bytes:
        return bytes(view[offset : offset + 65_536])

    try:
        return parser.parse(read, progress_callback=lambda _o, _e: time.monotonic() > deadline)
    except ValueError:  # "Parsing failed": the callback stopped it
        raise ParseTimeout from None
