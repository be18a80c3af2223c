"""`outline`, `read_symbol`, `find_symbol`: code navigation with tree-sitter (issue 16)."""

from __future__ import annotations

from typing import Annotated

from fastmcp import FastMCP
from pydantic import Field

from ..core.code import navigate
from ..core.code.index import index_for, references_for
from ..core.echo import echo, listing
from ..core.errors import NotFoundError
from ..core.limits import (
    ANSWER_BYTES,
    GREP_DEFAULT_RESULTS,
    GREP_LINE_CHARS,
    GREP_MAX_RESULTS,
    SYMBOL_MATCHES_LISTED,
)
from ..core.nearmiss import closest
from ..core.textio import decode_text
from ..core.workset import short_sha
from ..services import Services
from .base import READ_ONLY, WorkspaceArg, add_tool, bind
from .files import render_numbered, split_lines
from .search import shower

Name = Annotated[
    str,
    Field(min_length=1, description="Definition name; dotted for nested (Parser.parse)."),
]


def outline(
    services: Services,
    path: Annotated[str, Field(description="A source file or directory.")],
    depth: Annotated[int | None, Field(ge=1, description="Levels to show (1: top level).")] = None,
    workspace: WorkspaceArg = None,
) -> str:
    """Definitions in a file or tree: `start-end  signature`, nested by indent.

    Python, JS/TS, Go, Rust, Java, C/C++; trees skip .gitignore'd files. See read_symbol.
    """
    ws = services.workspaces.get(workspace)
    if navigate.is_directory(ws, path):
        return navigate.outline_tree(services.search, ws, path, depth, shower(ws))
    return navigate.outline_file(navigate.read_source(ws, path), depth)


def read_symbol(
    services: Services,
    name: Name,
    path: Annotated[
        str | None, Field(description="Its file (default: search the workspace).")
    ] = None,
    workspace: WorkspaceArg = None,
) -> str:
    """One definition as numbered lines (with decorators, comment above, file sha256).

    Several matches are listed instead.
    """
    ws = services.workspaces.get(workspace)
    if path is None:
        found, _ = navigate.find_symbol(services.search, ws, name)
        if not found:
            raise NotFoundError(f"no definition of {echo(name)} found{_near(services, ws, name)}")
        if len(found) > 1:
            return _several(found, name, shower(ws))
        source, matches = found[0].source, [found[0].definition]
    else:
        source = navigate.read_source(ws, path)
        matches = navigate.find_definitions(source, name)
    if not matches:
        names = navigate.names_in(source)
        close = closest(name, names, n=3)
        hint = f" (did you mean {listing(close)}?)" if close else "; outline lists what it defines"
        raise NotFoundError(f"{source.display}: no definition of {echo(name)}{hint}")
    if len(matches) > 1:
        return _several([navigate.Found(source, d) for d in matches], name, shower(ws))
    definition = matches[0]
    doc = decode_text(source.data, source.display)
    lines = split_lines(doc.text)
    count = definition.end - definition.doc_start + 1
    body, last = render_numbered(lines, definition.doc_start, count, ANSWER_BYTES)
    where = f"{source.display}:{definition.doc_start}-{definition.end}"
    head = f"{where} {definition.kind} {definition.qualified}"
    tail = f"(sha256 {short_sha(source.data)})"
    if last < definition.end:
        tail = f"... (truncated at line {last}; continue with read_file offset={last + 1}) {tail}"
    return f"{head}\n{body}\n{tail}"


def find_symbol(
    services: Services,
    name: Name,
    kind: Annotated[
        str | None, Field(description="Only this kind (class, function, method, ...).")
    ] = None,
    workspace: WorkspaceArg = None,
) -> str:
    """Where a name is defined: `path:start-end  signature`; comments and strings skipped."""
    ws = services.workspaces.get(workspace)
    index = index_for(ws, persist=not services.settings.read_only)
    found, cut = navigate.find_symbol(services.search, ws, name, kind, index)
    if not found:
        raise NotFoundError(f"no definition of {echo(name)} found{_near(services, ws, name)}")
    return _several(found, name, shower(ws), cut=cut, heading=False)


def find_references(
    services: Services,
    name: Name,
    path: Annotated[
        str | None, Field(description="A file or directory (default: the workspace).")
    ] = None,
    maxResults: Annotated[
        int, Field(ge=1, description=f"Maximum references (cap {GREP_MAX_RESULTS}).")
    ] = GREP_DEFAULT_RESULTS,
    workspace: WorkspaceArg = None,
) -> str:
    """Uses of an identifier outside comments and strings, by file: `LINE: text  (in Def)`."""
    ws = services.workspaces.get(workspace)
    index = references_for(ws, persist=not services.settings.read_only)
    grouped, cut = navigate.find_references(services.search, ws, name, path, index)
    if not grouped:
        raise NotFoundError(f"no references to {echo(name)} found{_near(services, ws, name)}")
    limit = min(maxResults, GREP_MAX_RESULTS)
    shown = shower(ws)
    out: list[str] = []
    total = sum(len(refs) for _, refs in grouped)
    listed = 0
    for rel, refs in grouped:
        if listed >= limit:
            break
        out.append(shown(rel))
        for ref in refs[: limit - listed]:
            where = f"  (in {ref.enclosing})" if ref.enclosing else ""
            out.append(f"  {ref.line}: {ref.text[:GREP_LINE_CHARS]}{where}")
            listed += 1
    summary = f"{total} references in {len(grouped)} files"
    if listed < total:
        summary += f" (first {listed} shown; raise maxResults or pass path)"
    if cut:
        summary += "; the name is very common, so some files were not searched"
    return "\n".join([*out, summary])


def _several(found, name: str, shown, *, cut: bool = False, heading: bool = True) -> str:
    lines = [f"{len(found)} definitions of {echo(name)}; pass path to read_symbol to pick one:"]
    if not heading:
        lines = []
    for item in found[:SYMBOL_MATCHES_LISTED]:
        d = item.definition
        lines.append(f"{shown(item.rel)}:{d.start}-{d.end}  {d.line().strip().split('  ', 1)[1]}")
    if len(found) > SYMBOL_MATCHES_LISTED:
        lines.append(f"... and {len(found) - SYMBOL_MATCHES_LISTED} more; narrow with kind")
    if cut:
        lines.append("... (the name is very common: some files were not looked at)")
    return "\n".join(lines)


def _near(services: Services, ws, name: str) -> str:
    close = navigate.near_names(services.search, ws, name)
    return f" (did you mean {listing(close)}?)" if close else ""


def register(app: FastMCP, services: Services) -> None:
    add_tool(app, bind(outline, services), annotations=READ_ONLY, title="Outline code")
    add_tool(app, bind(read_symbol, services), annotations=READ_ONLY, title="Read a definition")
    add_tool(app, bind(find_symbol, services), annotations=READ_ONLY, title="Find a definition")
    add_tool(app, bind(find_references, services), annotations=READ_ONLY, title="Find uses")
