"""Agent Skills for every client: the `skill` tool, `resource://skills`, and the MCP
skills extension (via FastMCP's catalog provider, made tolerant of bad folders).

Also the small context resources: `resource://cwd` and `resource://workspaces`.
"""

import logging
from typing import Annotated

from fastmcp import FastMCP
from fastmcp.skills import Skill
from fastmcp.skills.provider import SkillCatalogProvider
from pydantic import Field, ValidationError

from ..core import handoff
from ..core.echo import echo, listing
from ..core.errors import BinaryFileError, NotFoundError
from ..core.limits import SKILL_FILES_LISTED
from ..core.skills import SkillInfo
from ..services import Services
from .base import READ_ONLY, WorkspaceArg, add_tool, bind
from .workspaces import render_workspaces, shown_root

log = logging.getLogger("agent_workspace_mcp")


_warned: set[str] = set()


def _usable(info: SkillInfo) -> Skill | None:
    """FastMCP's own view of a skill we parsed, or None (with one warning) if it refuses it.

    Both views must agree: a skill is offered by the `skill` tool, `resource://skills` and
    the skills extension alike, or by none of them.
    """
    try:
        return Skill.from_files(info.contents)
    except (ValueError, ValidationError) as exc:
        reason = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
        key = f"{info.folder}:{reason}"
        if key not in _warned:
            _warned.add(key)
            log.warning("skipping skill %s: %s", info.folder, reason.splitlines()[0])
        return None


def usable_skills(services: Services, only: str | None = None) -> list[tuple[SkillInfo, Skill]]:
    """The one set of skills every client sees: each workspace's (or only `only`'s), primary
    first, then the built-in ones; a name seen twice keeps the first, so a project's skill
    replaces a built-in one of the same name."""
    seen: set[str] = set()
    found = []
    ordered = sorted(services.workspaces, key=lambda ws: not ws.primary)
    if only is not None:
        ordered = [services.workspaces.get(only)]
    candidates = [
        info for ws in ordered for info in services.skills.discover(ws, with_contents=True)
    ]
    for info in [*candidates, *services.skills.builtins()]:
        if info.name in seen:
            continue
        snapshot = _usable(info)
        if snapshot is not None:
            seen.add(info.name)
            found.append((info, snapshot))
    return found


def all_skills(services: Services) -> list[SkillInfo]:
    return [info for info, _ in usable_skills(services)]


def catalog_text(skills: list[SkillInfo], primary: str) -> str:
    if not skills:
        return "(no skills installed; add .agents/skills/<name>/SKILL.md)"
    lines = []
    for skill in skills:
        if skill.builtin:
            where = " (built-in)"
        elif skill.workspace != primary:
            where = f" (workspace {skill.workspace})"
        else:
            where = ""
        lines.append(f"{skill.name} — {skill.description}{where}")
    return "\n".join(lines)


class TolerantSkillsProvider(SkillCatalogProvider):
    """FastMCP's catalog provider fed from `usable_skills`: an invalid folder is skipped
    with a warning instead of stopping the server, and a new folder appears on the next
    request."""

    def __init__(self, services: Services) -> None:
        super().__init__()
        self._services = services

    def _build(self) -> list[Skill]:
        return [snapshot for _, snapshot in usable_skills(self._services)]

    async def load_skills(self):
        return await handoff.run_sync(self._build)

    async def get_tasks(self) -> list:
        # FastMCP's lifespan lists every provider's components to find background-task
        # tools; skills are resources, never tasks, and loading them there (a thread,
        # every SKILL.md read and parsed) cost ~20 ms of each cold start (issue 15).
        return []


def skill(
    services: Services,
    name: Annotated[str, Field(min_length=1, description="Skill name from resource://skills.")],
    file: Annotated[
        str | None, Field(description="A bundled file to read instead, e.g. references/x.md.")
    ] = None,
    workspace: WorkspaceArg = None,
) -> str:
    """Load an Agent Skill: its instructions and bundled files; pass file to read one.

    The catalog is resource://skills.
    """
    candidates = [info for info, _ in usable_skills(services, workspace)]
    found = next((s for s in candidates if s.name == name), None)
    if found is None:
        available = listing(s.name for s in candidates) if candidates else "none installed"
        raise NotFoundError(f'unknown skill "{echo(name)}". Available: {available}')
    if file is not None:
        return _bundled(found, file)
    parts = [f"# skill: {found.name}", found.description]
    if found.allowed_tools:
        parts.append("allowed tools: " + " ".join(found.allowed_tools))
    parts.append("")
    parts.append(found.body)
    if found.files:
        parts.append("")
        if found.builtin:
            parts.append(f'Bundled files (read one with skill name="{found.name}" file=...):')
            shown = list(found.files)
        else:
            parts.append("Bundled files (read them with read_file):")
            shown = [f"{found.folder}/{rel}" for rel in found.files]
        parts.extend(f"- {path}" for path in shown[:SKILL_FILES_LISTED])
        if len(shown) > SKILL_FILES_LISTED:
            more = len(shown) - SKILL_FILES_LISTED
            parts.append(f"- ... ({more} more; list_files {found.folder})")
    return "\n".join(parts)


def _bundled(found: SkillInfo, file: str) -> str:
    rel = file.removeprefix("./")
    if found.folder and rel.startswith(f"{found.folder}/"):
        rel = rel[len(found.folder) + 1 :]  # the path as the skill listing showed it
    content = found.contents.get(rel)
    if content is None or rel == "SKILL.md":
        choices = ", ".join(found.files[:10]) or "none"
        raise NotFoundError(f'skill "{found.name}" has no bundled file "{file}". Files: {choices}')
    if b"\0" in content[:8192]:
        raise BinaryFileError(f"{rel} is a binary file; skills serve text files only")
    return content.decode("utf-8", "replace")


def register(app: FastMCP, services: Services) -> None:
    primary = services.workspaces.primary

    add_tool(app, bind(skill, services), annotations=READ_ONLY, title="Load skill")

    def skills_catalog() -> str:
        return catalog_text(all_skills(services), primary.name)

    def cwd() -> str:
        current = services.workspaces.get()  # a subpath-bound session sees its own root
        return shown_root(services, current)

    def workspaces() -> str:
        return render_workspaces(services)

    for uri, name, fn, description in (
        (
            "resource://skills",
            "skills",
            skills_catalog,
            "Installed Agent Skills, one per line: name — description.",
        ),
        (
            "resource://cwd",
            "cwd",
            cwd,
            "The primary workspace root (the process cwd in unconfined mode).",
        ),
        (
            "resource://workspaces",
            "workspaces",
            workspaces,
            "The configured workspaces, as workspace_list shows them.",
        ),
    ):
        app.resource(uri, name=name, mime_type="text/plain", description=description)(fn)

    app.add_provider(TolerantSkillsProvider(services))
