"""Read-only git tools: `git_status`, `git_diff`, `git_log` (no shell needed)."""

from typing import Annotated

from fastmcp import FastMCP
from pydantic import Field

from ..core import handoff, limits
from ..core.containment import locate
from ..core.gitread import GitReader, head_tail
from ..services import Services
from .base import READ_ONLY, WorkspaceArg, add_tool, bind, numbers_from_limits

GitPath = Annotated[str | None, Field(description="Limit to this workspace-relative path.")]


def _reader(services: Services) -> GitReader:
    return services.git_reader()


def contained(ws, path: str | None) -> list[str]:
    """A pathspec limited to the workspace (its directory, `.`, when no path is given)."""
    if not path:
        return ["--", "."]
    with locate(ws, path, follow_final=False) as loc:
        return ["--", loc.real_rel if ws.confined else loc.real_abs]


async def git_status(services: Services, workspace: WorkspaceArg = None) -> str:
    """`git status --porcelain=v1 -b`: a `branch:` header plus the porcelain lines."""
    ws = services.workspaces.get(workspace)
    reader = _reader(services)
    branch, body = await handoff.run_sync(
        lambda: reader.status(ws, limits.GIT_STATUS_TIMEOUT_SECONDS)
    )
    return "\n".join([f"branch: {branch}", *(body or ["working tree clean"])])


async def git_diff(
    services: Services,
    path: GitPath = None,
    staged: Annotated[bool, Field(description="Show staged changes (--cached).")] = False,
    stat: Annotated[bool, Field(description="Only the per-file summary (--stat).")] = False,
    workspace: WorkspaceArg = None,
) -> str:
    """`git diff` of the working tree (or staged changes); above {kib} KiB the head and tail."""
    ws = services.workspaces.get(workspace)
    args = ["diff", "--relative", "--no-ext-diff", "--no-textconv", "--no-color"]
    if staged:
        args.append("--cached")
    if stat:
        args.append("--stat")
    args += contained(ws, path)
    reader = _reader(services)
    out = await handoff.run_sync(lambda: reader.run(ws, args, limits.GIT_DIFF_TIMEOUT_SECONDS))
    return head_tail(out.rstrip("\n")) if out.strip() else "(no changes)"


async def git_log(
    services: Services,
    path: GitPath = None,
    limit: Annotated[
        int, Field(ge=1, le=limits.GIT_LOG_MAX, description="Commits to show.")
    ] = limits.GIT_LOG_DEFAULT,
    workspace: WorkspaceArg = None,
) -> str:
    """Recent commits, one per line: `hash date author  subject`."""
    ws = services.workspaces.get(workspace)
    args = [
        "log",
        f"--max-count={limit}",
        "--no-color",
        "--date=short",
        "--format=%h %ad %an  %s",
    ]
    args += contained(ws, path)
    reader = _reader(services)
    out = await handoff.run_sync(lambda: reader.run(ws, args, limits.GIT_LOG_TIMEOUT_SECONDS))
    return out.rstrip("\n") or "(no commits)"


numbers_from_limits(git_diff, kib=limits.GIT_OUTPUT_BYTES // limits.KIB)


def register(app: FastMCP, services: Services) -> None:
    add_tool(app, bind(git_status, services), annotations=READ_ONLY, title="Git status")
    add_tool(app, bind(git_diff, services), annotations=READ_ONLY, title="Git diff")
    add_tool(app, bind(git_log, services), annotations=READ_ONLY, title="Git log")
