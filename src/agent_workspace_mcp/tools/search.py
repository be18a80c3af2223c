"""`grep` and `list_files`: ripgrep speed when rg is there, the same answers when not."""

from typing import Annotated

from fastmcp import FastMCP
from pydantic import Field

from ..core import limits
from ..core.search.render import render_grep, render_list
from ..core.search.results import GrepQuery, ListQuery
from ..core.workspaces import Workspace
from ..services import Services
from .base import READ_ONLY, WorkspaceArg, add_tool, bind, numbers_from_limits

SearchPath = Annotated[
    str | None,
    Field(description="Directory or file (default: the root)."),
]
NoIgnore = Annotated[bool, Field(description="Include .gitignore'd files too.")]


def shower(ws: Workspace):
    """Root-relative paths as answers show them (relative to the base in unconfined mode)."""
    if ws.confined:
        return lambda rel: rel
    base = ws.base.strip("/")

    def shown(rel: str) -> str:
        if base and rel.startswith(base + "/"):
            return rel[len(base) + 1 :]
        return "/" + rel

    return shown


def unshown(ws: Workspace, shown: str) -> str:
    """The root-relative path `shower` showed as `shown`."""
    if ws.confined:
        return shown
    if shown.startswith("/"):
        return shown[1:]
    base = ws.base.strip("/")
    return f"{base}/{shown}" if base else shown


def grep(
    services: Services,
    pattern: Annotated[
        str,
        Field(
            min_length=1,
            description="Regex per line (ripgrep/Python syntax; no look-around or backreferences).",
        ),
    ],
    path: SearchPath = None,
    include: Annotated[
        str | None,
        Field(description="File glob, e.g. '*.py' or 'src/**/*.{ts,tsx}'."),
    ] = None,
    ignoreCase: Annotated[bool, Field(description="Case-insensitive match.")] = False,
    maxResults: Annotated[
        int,
        Field(ge=1, description=f"Maximum matching lines (cap {limits.GREP_MAX_RESULTS})."),
    ] = limits.GREP_DEFAULT_RESULTS,
    contextLines: Annotated[
        int,
        Field(ge=0, le=limits.GREP_MAX_CONTEXT, description="Context lines around each match."),
    ] = 0,
    noIgnore: NoIgnore = False,
    workspace: WorkspaceArg = None,
) -> str:
    """Search file contents: `path:LINE: text` per matching line, then a count.

    Skips binaries, symlinks, .git, node_modules, .cache and (unless noIgnore)
    .gitignore'd files; reads each file's first {mib} MiB.
    """
    ws = services.workspaces.get(workspace)
    query = GrepQuery(
        pattern=pattern,
        ignore_case=ignoreCase,
        max_results=min(maxResults, limits.GREP_MAX_RESULTS),
        context=contextLines,
        include=include,
        no_ignore=noIgnore,
    )
    result, _ = services.search.grep(ws, path, query)
    return render_grep(result, contextLines, shower(ws), query.max_results)


def list_files(
    services: Services,
    path: SearchPath = None,
    pattern: Annotated[
        str | None,
        Field(description="Glob; without '/' it matches file names at any depth ('*.py')."),
    ] = None,
    maxDepth: Annotated[
        int,
        Field(ge=1, description=f"Levels below path (cap {limits.LIST_MAX_DEPTH})."),
    ] = limits.LIST_DEFAULT_DEPTH,
    limit: Annotated[
        int, Field(ge=1, description=f"Maximum entries (cap {limits.LIST_MAX_ENTRIES}).")
    ] = limits.LIST_DEFAULT_ENTRIES,
    noIgnore: NoIgnore = False,
    after: Annotated[str | None, Field(description="Continue after this entry.")] = None,
    workspace: WorkspaceArg = None,
) -> str:
    """List files and, without a pattern, directories (trailing '/').

    Sorted; skips binaries, symlinks, ignored dirs and (unless noIgnore) .gitignore'd
    files.
    """
    ws = services.workspaces.get(workspace)
    query = ListQuery(
        pattern=pattern,
        max_depth=min(maxDepth, limits.LIST_MAX_DEPTH),
        limit=min(limit, limits.LIST_MAX_ENTRIES),
        no_ignore=noIgnore,
        after=unshown(ws, after.rstrip("/")) if after else None,
    )
    result, _ = services.search.list_files(ws, path, query)
    return render_list(result, query.limit, shower(ws))


numbers_from_limits(grep, mib=limits.GREP_BYTES_PER_FILE // limits.MIB)


def register(app: FastMCP, services: Services) -> None:
    add_tool(app, bind(grep, services), annotations=READ_ONLY, title="Search file contents")
    add_tool(app, bind(list_files, services), annotations=READ_ONLY, title="List files")
