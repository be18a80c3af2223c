"""Code navigation over the workspace (issue 16): a file's or a tree's outline, one
definition's source, where a name is defined. Every file is reached through the
containment walk and read like `read_file` reads it (size cap, binary refused); trees
are listed by the search engine, so .gitignore rules and ignored directories apply.
"""

from __future__ import annotations

import posixpath
import re
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .. import limits
from ..containment import locate
from ..echo import echo
from ..errors import BinaryFileError, InvalidArgumentError, NotFoundError
from ..limits import ANSWER_BYTES, GREP_MAX_RESULTS, LIST_MAX_DEPTH, LIST_MAX_ENTRIES
from ..nearmiss import closest
from ..search.engine import SearchEngine
from ..search.results import GrepQuery, ListQuery
from ..textio import is_binary, read_bytes
from ..workspaces import Workspace
from . import shapes
from .index import Lines, ReferenceIndex, SymbolIndex, content_digest, signatures
from .languages import EXTENSIONS, language_of, supported
from .lexing import code_chunks
from .outline import Definition, Enclosing, definitions

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
        d.line()
        for d in definitions(source.language, source.data)
        if depth is None or d.depth < depth
    ]


def _stopped(source: Source) -> str:
    """The note for an outline cut by the time bound ('' when complete)."""
    found = definitions(source.language, source.data)
    if not found.partial:
        return ""
    last = found[-1].start if found else 1
    return (
        f"... (outline of {source.display} stopped after {len(found)} definitions, at line "
        f"{last}: it is too large or nests too deeply to outline in "
        f"{limits.CODE_FILE_SECONDS:g} s; "
        "read_file from there)"
    )


def outline_file(source: Source, depth: int | None, budget: int = ANSWER_BYTES) -> str:
    lines = outline_lines(source, depth)
    stopped = _stopped(source)
    if not lines:
        return stopped or f"(no definitions in {source.display})"
    kept = _within(lines, budget - len(stopped))
    if len(kept) < len(lines):
        last = kept[-1].strip().split("-", 1)[0] if kept else "1"
        kept.append(
            f"... (outline truncated: {len(lines) - len(kept)} more definitions after line "
            f"{last}; pass depth=1, or read_file from there)"
        )
    if stopped:
        kept.append(stopped)
    return "\n".join(kept)


def outline_tree(
    engine: SearchEngine, ws: Workspace, path: str, depth: int | None, shown: Any
) -> str:
    files, cut = source_files(engine, ws, path)
    if not files:
        return f"(no {supported()} source files under {path or '.'})"
    out: list[str] = []
    used = 0
    deadline = time.monotonic() + limits.CODE_CALL_SECONDS
    for index, source in enumerate(readable(ws, files)):
        if time.monotonic() > deadline:
            out.append(
                f"... (outline stopped after {index} of {len(files)} files: over "
                f"{limits.CODE_CALL_SECONDS:g} s; outline a subdirectory)"
            )
            return "\n".join(out)
        rel = source.rel
        lines = outline_lines(source, depth)
        if not lines:
            continue
        stopped = _stopped(source)
        block = [f"==> {shown(rel)} <==", *lines, *([stopped] if stopped else [])]
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


def find_definitions(
    source: Source, name: str, outline: list[Definition] | None = None
) -> list[Definition]:
    """Definitions matching `name`: a plain name, or a dotted tail of the qualified name
    (`Parser.parse` matches `module.Parser.parse`); `outline`: the file's, if at hand."""
    found = []
    if outline is None:
        outline = definitions(source.language, source.data)
    for definition in outline:
        qualified = definition.qualified
        if name == definition.name or qualified == name or qualified.endswith("." + name):
            found.append(definition)
    return found


@dataclass(frozen=True)
class Found:
    source: Source
    definition: Definition

    @property
    def rel(self) -> str:
        return self.source.rel


def find_symbol(
    engine: SearchEngine,
    ws: Workspace,
    name: str,
    kind: str | None = None,
    index: SymbolIndex | None = None,
) -> tuple[list[Found], bool]:
    """Where `name` (plain or dotted) is defined across the workspace: ripgrep narrows the
    files to those holding the word (every file, on every core), the symbol index skips
    the unchanged ones known to define no such name, tree-sitter confirms the rest. The
    flag says some files were not looked at (the prefilter's cap, or the time bound)."""
    word = word_of(name)
    shaped = engine.lines_matching(
        ws, None, shapes.rg_pattern(word), SOURCE_GLOB, limits.SHAPE_LINES_PER_FILE
    )
    cut = False
    if shaped is None:  # no ripgrep: grep's capped prefilter, every file with the word
        rels, cut = files_with(engine, ws, rf"\b{word}\b", None)
    else:  # only files with a line shaped like a definition in their own language
        rels = sorted(
            rel
            for rel, (lines, more) in shaped.items()
            if more or any(shapes.may_define(language_of(rel) or "", line, word) for line in lines)
        )
    signatures = index.signatures(rels) if index is not None else {}
    if index is not None:
        rels = [rel for rel in rels if index.may_define(rel, signatures[rel], word)]
    found: list[Found] = []
    deadline = time.monotonic() + limits.CODE_CALL_SECONDS
    try:
        for source in readable(ws, rels):
            if time.monotonic() > deadline:
                return found, True  # said as "some files were not looked at"
            outline = definitions(source.language, source.data)
            if index is not None and not outline.partial:
                index.learn(source.rel, signatures.get(source.rel), defined_words(outline))
            found.extend(
                Found(source, d)
                for d in find_definitions(source, name, outline)
                if kind in (None, d.kind)
            )
    finally:
        if index is not None:
            index.save()
    return found, cut


def defined_words(outline: list[Definition]) -> frozenset[str]:
    """Every word a `find_symbol` name can end with and match in this file: each
    definition's name and the last part of its dotted name (see find_definitions)."""
    return frozenset(w for d in outline for w in (d.name, d.qualified.rsplit(".", 1)[-1]))


def names_like(ws: Workspace, rels: list[str]) -> list[str]:
    """Definition names in these files, for a did-you-mean."""
    names: set[str] = set()
    for source in readable(ws, rels[:50]):
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
    "identifier",
    "type_identifier",
    "field_identifier",
    "property_identifier",
    "shorthand_property_identifier",
    "shorthand_property_identifier_pattern",
    "namespace_identifier",
    "package_identifier",
    "private_property_identifier",
    "statement_identifier",
    "constant",
    "scoped_identifier",
}


@dataclass(frozen=True)
class Reference:
    line: int  # 1-based
    text: str  # the line, stripped
    enclosing: str | None  # the innermost definition's dotted name


def references_in(
    source: Source,
    word: str,
    deadline: float | None = None,
    chunks: list[tuple[int, int]] | None = None,
) -> tuple[list[Reference], bool]:
    """Where the identifier `word` occurs in a file, outside comments and strings, and
    whether the search stopped at `deadline` (or CODE_FILE_SECONDS) before the end.
    `chunks` (lexing.code_chunks): byte ranges of whole top-level statements holding
    every match in code, each parsed alone; the whole file is parsed instead when any
    of them does not parse cleanly."""
    from .languages import ParseTimeout

    until = time.monotonic() + limits.CODE_FILE_SECONDS
    if deadline is not None:
        until = min(until, deadline)
    try:
        pieces = _parsed(source, chunks, until)
    except ParseTimeout:
        return [], True
    lines = source.data.split(b"\n")
    pattern = word_pattern(word)
    found: list[Reference] = []
    seen_rows: set[int] = set()
    row, counted, count = 0, 0, 0  # the row of byte `counted`
    for offset, around in pieces:
        end = offset + len(around.source)
        for match in pattern.finditer(source.data, offset, end):
            count += 1
            if count % 64 == 0 and time.monotonic() > until:
                return found, True
            row += source.data.count(b"\n", counted, match.start())
            counted = match.start()
            if row in seen_rows:
                continue  # one reference a line: the walk down is not needed
            node, enclosing = around.at(match.start() - offset, match.end() - offset, until)
            if node is None:
                return found, True
            if node.type not in _IDENTIFIERS or node.text != word.encode():
                continue
            seen_rows.add(row)
            text = lines[row].decode("utf-8", "replace").strip()
            found.append(Reference(row + 1, text, enclosing))
    return found, False


def _parsed(
    source: Source, chunks: list[tuple[int, int]] | None, until: float
) -> list[tuple[int, Enclosing]]:
    """(offset, its parse) for each chunk when all parse cleanly, else for the whole file.
    A chunk of whole top-level statements parses as it does inside the file (same
    nodes, same enclosing names); a syntax error means a cut was not a statement's
    start (or the file has one), so the file is parsed whole (ParseTimeout past
    `until`)."""
    from .languages import parse

    if chunks:
        pieces = []
        for start, end in chunks:
            piece = source.data[start:end]
            tree = parse(source.language, piece, until)
            if tree.root_node.has_error:
                break
            pieces.append((start, Enclosing(source.language, piece, tree)))
        else:
            return pieces
    tree = parse(source.language, source.data, until)
    return [(0, Enclosing(source.language, source.data, tree))]


def word_pattern(word: str) -> re.Pattern[bytes]:
    """The identifier `word` in source bytes (not inside a longer name).

    The word comes first and the name character before it is ruled out after it (a
    lookbehind over the word and one byte): a pattern that starts with a lookbehind
    loses the engine's literal-prefix search and tries every byte (measured: 2.6 ms
    against 0.06 ms on a 92 KB file, most of a cold `find_references`)."""
    literal = re.escape(word.encode())
    return re.compile(literal + rb"(?<![A-Za-z0-9_$]" + literal + rb")(?![A-Za-z0-9_$])")


def find_references(
    engine: SearchEngine,
    ws: Workspace,
    name: str,
    path: str | None,
    index: ReferenceIndex | None = None,
) -> tuple[list[tuple[str, list[Reference]]], bool]:
    """Per file (sorted), the references to `name`; the flag says some files were not
    looked at. ripgrep lists the files holding the word (every file, every core); the
    reference index answers for unchanged files it knows and for contents it has judged
    (by digest, whatever the file's name); a Python file whose every mention is in a
    comment or a string literal is dismissed by the lexer; the rest are parsed and
    judged by tree-sitter (issue 47), a Python file only in the top-level statements
    that hold a mention in code."""
    word = word_of(name)
    rels = engine.files_matching(ws, path, rf"\b{word}\b", SOURCE_GLOB)
    cut = False
    if rels is None:  # no ripgrep: grep's capped prefilter
        rels, cut = files_with(engine, ws, rf"\b{word}\b", path)
    pattern = word_pattern(word)
    sigs = signatures(ws, rels) if index is not None else {}
    grouped: list[tuple[str, list[Reference]]] = []
    deadline = time.monotonic() + limits.CODE_CALL_SECONDS
    try:
        for rel in rels:
            if time.monotonic() > deadline:
                return grouped, True
            known = index.known(rel, sigs.get(rel), word) if index is not None else None
            if known == ():
                continue  # unchanged, and no reference in it
            try:
                source = read_source(ws, rel)
            except (BinaryFileError, InvalidArgumentError, NotFoundError):
                continue
            digest = None
            if index is not None and known is None:  # changed or new: judged by content?
                digest = content_digest(source.data)
                known = index.by_content(digest, word)
            refs = None if known is None else _recalled(source, known, pattern)
            if refs is None:
                partial = False
                chunks = None
                if source.language == "python":
                    chunks = code_chunks(source.data, pattern, deadline)
                if chunks == []:
                    refs = []  # every mention in a comment or a string: nothing to parse
                else:
                    refs, partial = references_in(source, word, deadline, chunks)
                cut = cut or partial
                if partial:
                    digest = None  # nothing to learn from a file not looked at to its end
                elif index is not None and digest is None:  # the index was wrong: relearn
                    digest = content_digest(source.data)
            if index is not None and digest is not None:
                lines = tuple((r.line, r.enclosing) for r in refs)
                index.learn(rel, sigs.get(rel), digest, word, lines)
            if refs:
                grouped.append((source.rel, refs))
    finally:
        if index is not None:
            index.save()
    return grouped, cut


def _recalled(source: Source, known: Lines, pattern: re.Pattern[bytes]) -> list[Reference] | None:
    """The index's lines, read again: None if any no longer holds the word (look again)."""
    lines = source.data.split(b"\n")
    found = []
    for line, holder in known:
        if not (0 < line <= len(lines)) or pattern.search(lines[line - 1]) is None:
            return None
        found.append(Reference(line, lines[line - 1].decode("utf-8", "replace").strip(), holder))
    return found


def word_of(name: str) -> str:
    """The identifier a plain or dotted name ends with, or one sentence refusing it."""
    word = name.rsplit(".", 1)[-1]
    if not word.isidentifier():
        raise InvalidArgumentError(f"'{echo(name)}' is not a name (letters, digits, _ and dots)")
    return word


def files_with(
    engine: SearchEngine, ws: Workspace, pattern: str, path: str | None, *, ignore_case: Any = False
) -> tuple[list[str], bool]:
    """The ripgrep prefilter: sorted source files with a line matching `pattern`, and
    whether it stopped at its cap (so some files were not looked at)."""
    query = GrepQuery(
        pattern=pattern,
        ignore_case=ignore_case,
        max_results=GREP_MAX_RESULTS,
        context=0,
        include=SOURCE_GLOB,
        no_ignore=False,
    )
    result, _ = engine.grep(ws, path, query)
    return sorted({hit.path for hit in result.hits}), result.more


def readable(ws: Workspace, rels: list[str]) -> Iterator[Source]:
    """The sources among `rels`, skipping any that changed since the listing or is not
    text: the rest of a multi-file answer still helps."""
    for rel in rels:
        try:
            yield read_source(ws, rel)
        except (BinaryFileError, InvalidArgumentError, NotFoundError):
            continue


def near_names(engine: SearchEngine, ws: Workspace, name: str) -> list[str]:
    """Up to three defined names close to `name`, from files holding a similar word."""
    word = name.rsplit(".", 1)[-1]
    if not word.isidentifier():
        return []
    # A short prefix, so one wrong letter anywhere past it still finds the name
    # (`Sesion` -> `Session`); difflib's ratio then picks, as for paths.
    stem = word[:3]
    rels, _ = files_with(engine, ws, rf"\b{stem}", None, ignore_case=True)
    return closest(word, names_like(ws, rels), n=3)
