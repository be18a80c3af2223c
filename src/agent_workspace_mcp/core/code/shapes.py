"""Lines shaped like a definition of a name (issue 47): `find_symbol`'s prefilter.

A file can define `W` only if some line of it has W where a definition puts its name:
after a defining keyword (`class W`, `def W`, `fn W`, `impl Trait for W`), before a
parameter list (`W(` of a method, a constructor, a C function), before `=` (`const W =
() =>`), or first on its line (a Go type in a `type (...)` group). ripgrep finds those
lines across the tree on every core with one union pattern; each file's lines are then
checked against its own language's shapes (a Python call `W(` or a parameter's type
`qs: W` defines nothing), and tree-sitter still judges every file that passes. The
shapes are deliberately loose: a false candidate costs one parse, a missed one a wrong
answer, and tests/tools/test_symbol_shapes.py checks every definition the outline finds
in the fixtures of every language against them.
"""

from __future__ import annotations

import functools
import re

# Keywords that put a definition's name later on the same line, per language.
_KEYWORDS = {
    "python": ("class", "def"),
    "javascript": ("class", "function"),
    "typescript": ("class", "function", "interface", "type", "enum", "namespace", "module"),
    "go": ("func", "type"),
    "rust": ("fn", "struct", "enum", "union", "trait", "impl", "mod", "type", "macro_rules"),
    "java": ("class", "interface", "enum", "record"),
    "c": ("struct", "enum", "union"),
    "cpp": ("struct", "enum", "union", "class", "namespace"),
}
_KEYWORDS["tsx"] = _KEYWORDS["typescript"]
# Which other shapes define in each language.
_CALL_SHAPED = {"javascript", "typescript", "tsx", "java", "c", "cpp"}  # W( : methods, C functions
_ASSIGNED = {"javascript", "typescript", "tsx"}  # const W = () => ...
_LINE_FIRST = {"go"}  # type ( W struct{...} )
_NAME_NEXT = {"python"}  # the keyword, then the name (elsewhere: `impl T for W`, `func (r) W`)


def _keyword(words: tuple[str, ...], w: str) -> str:
    return rf"\b(?:{'|'.join(words)})\b.*\b{w}\b"


def _named(words: tuple[str, ...], w: str) -> str:
    # Python's grammar puts the name right after `class` or `def`: a parameter's type
    # (`def f(qs: QuerySet)`) is not a definition of it (QuerySet's 10 files become 1).
    return rf"\b(?:{'|'.join(words)})\s+{w}\b"


def _call(w: str) -> str:
    # Not after `.`, `->` or a word character: `obj.W(` and `p->W(` are uses.
    return rf"(?:^|[^.\w$>]){w}\s*(?:<[^>\n]*>)?\s*\("


def _assigned(w: str) -> str:
    return rf"(?:^|[^.\w$]){w}\s*="


def _line_first(w: str) -> str:
    return rf"^\s*{w}\b"


def rg_pattern(word: str) -> str:
    """One pattern for ripgrep: any line of any language shaped like a definition of
    `word` (an identifier: no regex metacharacters)."""
    everything = tuple(sorted({k for words in _KEYWORDS.values() for k in words}))
    return "|".join([_keyword(everything, word), _call(word), _assigned(word), _line_first(word)])


@functools.lru_cache(maxsize=256)
def _compiled(language: str, word: str) -> re.Pattern[str]:
    shapes = []
    if language in _KEYWORDS:
        shaped = _named if language in _NAME_NEXT else _keyword
        shapes.append(shaped(_KEYWORDS[language], word))
    if language in _CALL_SHAPED:
        shapes.append(_call(word))
    if language in _ASSIGNED:
        shapes.append(_assigned(word))
    if language in _LINE_FIRST:
        shapes.append(_line_first(word))
    if not shapes:  # a language without a table here: every line ripgrep found counts
        shapes = [r"."]
    return re.compile("|".join(shapes))


def may_define(language: str, line: str, word: str) -> bool:
    """Whether this line, in a file of `language`, is shaped like a definition of `word`."""
    return _compiled(language, word).search(line) is not None
