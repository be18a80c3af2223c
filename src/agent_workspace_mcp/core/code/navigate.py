"""Code navigation over the workspace (issue 16): a file's or a tree's outline, one
definition's source, where a name is defined. Every file is reached through the
containment walk and read like `read_file` reads it (size cap, binary refused); trees
are listed by the search engine, so .gitignore rules and ignored directories apply.
"""

from __future__ import annotations

import posixpath
import stat
from dataclasses import dataclass

from ..containment import locate
from ..echo import echo
from ..errors import BinaryFileError, InvalidArgumentError, NotFoundError
from ..limits import ANSWER_BYTES, LIST_MAX_DEPTH, LIST_MAX_ENTRIES
from ..search.engine import SearchEngine
from ..search.results import ListQuery
from ..textio import is_binary, read_bytes
from ..workspaces import Workspace
from .languages import EXTENSIONS, language_of, supported
from .outline import Definition, definitions

# Every extension we parse, as one glob for the engine's listing.
SOURCE_GLOB = "**/*.{" + ",".join(sorted(ext[1:] for ext in EXTENSIONS)) + "}"


@dataclass(frozen=True)
class Source:
    display: str  # the path as answers show it
    rel: str  # root-relative
    language: str
    data: bytes


def read_source(ws: Workspace, path: str) -> Source:
    """A source file through the containment walk, or one sentence saying why not."""
    with locate(ws, path) as loc:
        st = loc.lstat()
        if st is None:
            raise NotFoundError(f"not found: {loc.display}")
        if stat.S_ISDIR(st.st_mode):
            raise InvalidArgumentError(f"{loc.display}: is a directory")
        language = language_of(loc.name)
        if language is None:
            ext = posixpath.splitext(loc.name)[1] or "(no extension)"
            raise InvalidArgumentError(
                f"{loc.display}: {echo(ext)} files are not parsed (supported: {supported()}); "
                "use grep to search it"
            )
        data, _ = read_bytes(loc)
        display, rel = loc.display, "/".join(loc.real_parts)
    if is_binary(data):
        raise BinaryFileError(f"{display}: binary file; outline reads source text")
    return Source(display, rel, language, data)


def is_directory(ws: Workspace, path: str) -> bool:
    with locate(ws, path) as loc:
        st = loc.lstat()
    return st is not None and stat.S_ISDIR(st.st_mode)


def source_files(engine: SearchEngine, ws: Workspace, path: str) -> tuple[list[str], bool]:
    """Root-relative source files under `path`, sorted, and whether the listing was cut."""
    query = ListQuery(SOURCE_GLOB, LIST_MAX_DEPTH, LIST_MAX_ENTRIES, no_ignore=False)
    result, _ = engine.list_files(ws, path, query)
    return [e.path for e in result.entries if not e.is_dir], result.more


def outline_lines(source: Source, depth: int | None) -> list[str]:
    return [
        d.line() for d in definitions(source.language, source.data)
        if depth is None or d.depth < depth
    ]  # fmt: skip


def outline_file(source: Source, depth: int | None, budget: int = ANSWER_BYTES) -> str:
    lines = outline_lines(source, depth)
    if not lines:
        return f"(no definitions in {source.display})"
    kept = _within(lines, budget)
    if len(kept) < len(lines):
        last = kept[-1].strip().split("-", 1)[0] if kept else "1"
        kept.append(
            f"... (outline truncated: {len(lines) - len(kept)} more definitions after line "
            f"{last}; pass depth=1, or read_file from there)"
        )
    return "\n".join(kept)


def outline_tree(engine: SearchEngine, ws: Workspace, path: str, depth: int | None, shown) -> str:
    files, cut = source_files(engine, ws, path)
    if not files:
        return f"(no {supported()} source files under {path or '.'})"
    out: list[str] = []
    used = 0
    for index, rel in enumerate(files):
        try:
            source = read_source(ws, rel)
            lines = outline_lines(source, depth)
        except (BinaryFileError, InvalidArgumentError, NotFoundError):
            continue  # changed since the listing, or not text: the rest still helps
        if not lines:
            continue
        block = [f"==> {shown(rel)} <==", *lines]
        size = sum(len(line.encode()) + 1 for line in block)
        if out and used + size > ANSWER_BYTES:
            out.append(
                f"... (outline stopped at the answer budget after {index} of {len(files)} "
                "files; outline a subdirectory, or pass depth=1)"
            )
            return "\n".join(out)
        out.extend(block)
        used += size
    if cut:
        out.append(
            f"... (only the first {LIST_MAX_ENTRIES} files were listed; outline a subdirectory)"
        )
    return "\n".join(out) if out else f"(no definitions under {path or '.'})"


def _within(lines: list[str], budget: int) -> list[str]:
    kept: list[str] = []
    used = 0
    for line in lines:
        size = len(line.encode("utf-8", "surrogatepass")) + 1
        if kept and used + size > budget:
            break
        kept.append(line)
        used += size
    return kept


def find_definitions(source: Source, name: str) -> list[Definition]:
    """Definitions matching `name`: a plain name, or a dotted tail of the qualified name
    (`Parser.parse` matches `module.Parser.parse`)."""
    found = []
    for definition in definitions(source.language, source.data):
        qualified = definition.qualified
        if name == definition.name or qualified == name or qualified.endswith("." + name):
            found.append(definition)
    return found


@dataclass(frozen=True)
class Found:
    rel: str
    definition: Definition


def find_symbol(
    engine: SearchEngine, ws: Workspace, name: str, kind: str | None = None
) -> tuple[list[Found], bool]:
    """Where `name` (plain or dotted) is defined across the workspace: ripgrep narrows the
    files to those holding the word, tree-sitter confirms. The flag says the prefilter
    stopped at its cap, so some files were not looked at."""
    from ..limits import GREP_MAX_RESULTS
    from ..search.results import GrepQuery

    word = name.rsplit(".", 1)[-1]
    if not word.isidentifier():
        raise InvalidArgumentError(f"'{echo(name)}' is not a name (letters, digits, _ and dots)")
    query = GrepQuery(
        pattern=rf"\b{word}\b", ignore_case=False, max_results=GREP_MAX_RESULTS, context=0,
        include=SOURCE_GLOB, no_ignore=False,
    )  # fmt: skip
    result, _ = engine.grep(ws, None, query)
    found: list[Found] = []
    for rel in sorted({hit.path for hit in result.hits}):
        try:
            source = read_source(ws, rel)
        except (BinaryFileError, InvalidArgumentError, NotFoundError):
            continue
        found.extend(
            Found(rel, d) for d in find_definitions(source, name) if kind in (None, d.kind)
        )
    return found, result.more


def names_like(engine: SearchEngine, ws: Workspace, rels: list[str]) -> list[str]:
    """Definition names in these files, for a did-you-mean."""
    names: set[str] = set()
    for rel in rels[:50]:
        try:
            source = read_source(ws, rel)
        except (BinaryFileError, InvalidArgumentError, NotFoundError):
            continue
        names.update(names_in(source))
    return sorted(names)


def names_in(source: Source) -> list[str]:
    """Every definition's name and dotted name in a file (for a did-you-mean)."""
    names: set[str] = set()
    for definition in definitions(source.language, source.data):
        names.update((definition.name, definition.qualified))
    return sorted(names)


# Leaves that name something; comments and strings are other node types, so a word
# inside them never matches.
_IDENTIFIERS = {
    "identifier", "type_identifier", "field_identifier", "property_identifier",
    "shorthand_property_identifier", "shorthand_property_identifier_pattern",
    "namespace_identifier", "package_identifier", "private_property_identifier",
    "statement_identifier", "constant", "scoped_identifier",
}  # fmt: skip


@dataclass(frozen=True)
class Reference:
    line: int  # 1-based
    text: str  # the line, stripped
    enclosing: str | None  # the innermost definition's dotted name


def references_in(source: Source, word: str) -> list[Reference]:
    """Where the identifier `word` occurs in a file, outside comments and strings."""
    import re

    from .languages import parse

    tree = parse(source.language, source.data)
    defs = definitions(source.language, source.data)
    lines = source.data.split(b"\n")
    pattern = re.compile(rb"(?<![A-Za-z0-9_$])" + re.escape(word.encode()) + rb"(?![A-Za-z0-9_$])")
    found: list[Reference] = []
    seen_rows: set[int] = set()
    for match in pattern.finditer(source.data):
        node = tree.root_node.descendant_for_byte_range(match.start(), match.end())
        if node is None or node.type not in _IDENTIFIERS or node.text != word.encode():
            continue
        row = node.start_point.row
        if row in seen_rows:
            continue
        seen_rows.add(row)
        inside = [d for d in defs if d.start <= row + 1 <= d.end]
        enclosing = max(inside, key=lambda d: d.depth).qualified if inside else None
        text = lines[row].decode("utf-8", "replace").strip()
        found.append(Reference(row + 1, text, enclosing))
    return found


def find_references(
    engine: SearchEngine, ws: Workspace, name: str, path: str | None
) -> tuple[list[tuple[str, list[Reference]]], bool]:
    """Per file (sorted), the references to `name`; the flag says the prefilter was cut."""
    from ..limits import GREP_MAX_RESULTS
    from ..search.results import GrepQuery

    word = name.rsplit(".", 1)[-1]
    if not word.isidentifier():
        raise InvalidArgumentError(f"'{echo(name)}' is not a name (letters, digits, _ and dots)")
    query = GrepQuery(
        pattern=rf"\b{word}\b", ignore_case=False, max_results=GREP_MAX_RESULTS, context=0,
        include=SOURCE_GLOB, no_ignore=False,
    )  # fmt: skip
    result, _ = engine.grep(ws, path, query)
    grouped = []
    for rel in sorted({hit.path for hit in result.hits}):
        try:
            source = read_source(ws, rel)
        except (BinaryFileError, InvalidArgumentError, NotFoundError):
            continue
        refs = references_in(source, word)
        if refs:
            grouped.append((rel, refs))
    return grouped, result.more
