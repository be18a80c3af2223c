"""Agent Skills on disk: `<skills dir>/<name>/SKILL.md` plus bundled files.

Read on every call (a folder dropped in is seen at once, no restart), through the
containment walk (the skills directory is inside the workspace in confined mode, and
symlinks are never followed out of a skill folder). Frontmatter is YAML parsed with
PyYAML's safe loader and validated with the Agent Skills rules (agentskills.io): a
`name` of 1-64 lowercase letters, digits and hyphens equal to the folder name, a
`description` of 1-1024 characters, optional `allowed-tools`. A malformed or oversized
skill is skipped with one warning on stderr (once per version of the folder) and
never hides the valid ones or stops the server.

Built-in skills ship inside the package (`agent_workspace_mcp/builtin_skills/`), so every
user has them without copying anything; they are read once, validated by the same rules,
and a workspace skill of the same name replaces one.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import stat
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files as package_files
from importlib.resources.abc import Traversable
from typing import Any

from .containment import locate
from .errors import WorkspaceError
from .fdread import read_regular
from .limits import SKILL_FILES_MAX, SKILL_MD_MAX_BYTES, SKILL_TOTAL_MAX_BYTES
from .osflags import DIR_FLAGS
from .workspaces import Workspace

log = logging.getLogger("agent_workspace_mcp")

DEFAULT_SKILLS_DIR = ".agents/skills"
NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


class SkillProblem(ValueError):
    pass


@dataclass(frozen=True)
class SkillInfo:
    name: str
    description: str
    body: str
    folder: str  # as answers show it (workspace-relative in confined mode)
    files: tuple[str, ...]  # bundled files relative to the folder (SKILL.md excluded)
    allowed_tools: tuple[str, ...] = ()
    workspace: str = "default"
    builtin: bool = False
    contents: dict[str, bytes] = field(default_factory=dict, compare=False, repr=False)


def parse_skill_md(text: str, folder_name: str) -> tuple[dict[str, Any], str]:
    """Frontmatter mapping and body; raises SkillProblem with the reason."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        raise SkillProblem("SKILL.md must start with a '---' YAML frontmatter block")
    import yaml  # lazily: start-up does not read skills

    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise SkillProblem("the frontmatter block is not closed with '---'")
    try:
        meta = yaml.safe_load("\n".join(lines[1:end])) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        raise SkillProblem(f"the frontmatter is not valid YAML{where}") from None
    if not isinstance(meta, dict):
        raise SkillProblem("the frontmatter must be a mapping of keys to values")
    name = meta.get("name")
    if not isinstance(name, str) or not NAME_RE.match(name) or len(name) > 64:
        raise SkillProblem("'name' must be 1-64 lowercase letters, digits and single hyphens")
    if name != folder_name:
        raise SkillProblem(f"'name' ({name}) must equal the folder name ({folder_name})")
    description = meta.get("description")
    if not isinstance(description, str) or not description.strip() or len(description) > 1024:
        raise SkillProblem("'description' must be 1-1024 characters")
    tools = meta.get("allowed-tools")
    if tools is not None and not isinstance(tools, (str, list)):
        raise SkillProblem("'allowed-tools' must be a list or a space-separated string")
    body = "\n".join(lines[end + 1 :]).strip("\n")
    return meta, body


class SkillStore:
    """Discovers skills per call; remembers which broken folders it already warned about."""

    def __init__(self, skills_dir: str = DEFAULT_SKILLS_DIR, *, builtin: bool = True) -> None:
        self.skills_dir = skills_dir
        self.builtin = builtin
        self._warned: set[tuple[str, float, str]] = set()

    def _warn(self, folder: str, mtime: float, reason: str) -> None:
        key = (folder, mtime, reason)
        if key not in self._warned:
            self._warned.add(key)
            log.warning("skipping skill %s: %s", folder, reason)

    def builtins(self) -> tuple[SkillInfo, ...]:
        return builtin_skills() if self.builtin else ()

    def location(self, ws: Workspace) -> str:
        """The skills directory for `ws` as `locate()` takes it."""
        path = self.skills_dir
        if os.path.isabs(path) or ws.confined:
            return path
        return os.path.join(ws.base, path)

    def discover(self, ws: Workspace, *, with_contents: bool = False) -> list[SkillInfo]:
        try:
            loc = locate(ws, self.location(ws))
        except WorkspaceError:
            return []
        with loc:
            st = loc.lstat()
            if st is None or not stat.S_ISDIR(st.st_mode):
                return []
            try:
                root_fd = os.open(loc.name or ".", DIR_FLAGS, dir_fd=loc.dir_fd)
            except OSError:
                return []
            shown_root = loc.display
        try:
            skills = []
            with os.scandir(root_fd) as entries:
                folders = sorted(e.name for e in entries if e.is_dir(follow_symlinks=False))
            for name in folders:
                if name.startswith("."):
                    continue
                shown = f"{shown_root}/{name}" if shown_root != "." else name
                skill = self._load(ws, root_fd, name, shown, with_contents)
                if skill is not None:
                    skills.append(skill)
            return skills
        finally:
            os.close(root_fd)

    def _load(
        self, ws: Workspace, root_fd: int, name: str, shown: str, with_contents: bool
    ) -> SkillInfo | None:
        try:
            folder_fd = os.open(name, DIR_FLAGS, dir_fd=root_fd)
        except OSError:
            return None
        try:
            mtime = os.fstat(folder_fd).st_mtime
            try:
                files = _scan(folder_fd)
            except SkillProblem as exc:
                self._warn(shown, mtime, str(exc))
                return None
            if "SKILL.md" not in files:
                return None  # not a skill folder (no warning: could be anything)
            size = files["SKILL.md"]
            mtime = max(mtime, size[1])
            if size[0] > SKILL_MD_MAX_BYTES:
                self._warn(
                    shown, mtime, f"SKILL.md is larger than {SKILL_MD_MAX_BYTES // 1024} KiB"
                )
                return None
            total = sum(s for s, _ in files.values())
            if len(files) > SKILL_FILES_MAX or total > SKILL_TOTAL_MAX_BYTES:
                self._warn(
                    shown,
                    mtime,
                    f"more than {SKILL_FILES_MAX} files or {SKILL_TOTAL_MAX_BYTES >> 20} MiB",
                )
                return None
            text = _read(folder_fd, "SKILL.md").decode("utf-8", "replace")
            contents = {rel: _read(folder_fd, rel) for rel in files} if with_contents else {}
            try:
                return _info(name, text, shown, files, contents, workspace=ws.name)
            except SkillProblem as exc:
                self._warn(shown, mtime, str(exc))
                return None
        except OSError as exc:
            self._warn(shown, 0.0, f"unreadable ({exc.strerror})")
            return None
        finally:
            os.close(folder_fd)


def _info(
    name: str,
    text: str,
    shown: str,
    files: Collection[str],
    contents: dict[str, bytes],
    *,
    workspace: str,
    builtin: bool = False,
) -> SkillInfo:
    meta, body = parse_skill_md(text, name)
    tools = meta.get("allowed-tools") or ()
    if isinstance(tools, str):
        tools = tools.split()
    return SkillInfo(
        name=name,
        description=" ".join(str(meta["description"]).split()),
        body=body,
        folder=shown,
        files=tuple(sorted(rel for rel in files if rel != "SKILL.md")),
        allowed_tools=tuple(str(t) for t in tools),
        workspace=workspace,
        builtin=builtin,
        contents=contents,
    )


@cache
def builtin_skills() -> tuple[SkillInfo, ...]:
    """The skills shipped in the package, read once (they change only with the package).

    A broken one is a packaging bug: it is skipped with a warning like any other, and the
    test suite fails on it.
    """
    found = []
    root = package_files("agent_workspace_mcp") / "builtin_skills"
    for folder in sorted(root.iterdir(), key=lambda t: t.name):
        if not folder.is_dir() or not (folder / "SKILL.md").is_file():
            continue
        contents = dict(_walk_package(folder, ""))
        text = contents["SKILL.md"].decode("utf-8", "replace")
        try:
            found.append(
                _info(
                    folder.name,
                    text,
                    f"skill://{folder.name}",
                    contents,
                    contents,
                    workspace="",
                    builtin=True,
                )
            )
        except SkillProblem as exc:
            log.warning("skipping built-in skill %s: %s", folder.name, exc)
    return tuple(found)


def _walk_package(folder: Traversable, prefix: str) -> Iterator[tuple[str, bytes]]:
    for entry in folder.iterdir():
        if entry.name == "__pycache__":
            continue
        if entry.is_dir():
            yield from _walk_package(entry, f"{prefix}{entry.name}/")
        elif entry.is_file():
            yield f"{prefix}{entry.name}", entry.read_bytes()


def _scan(folder_fd: int) -> dict[str, tuple[int, float]]:
    """Regular files below a skill folder: relative path -> (size, mtime). No symlinks."""
    found: dict[str, tuple[int, float]] = {}
    stack: list[tuple[int, str]] = [(os.dup(folder_fd), "")]
    try:
        while stack:
            fd, prefix = stack.pop()
            try:
                with os.scandir(fd) as entries:
                    for entry in entries:
                        st = entry.stat(follow_symlinks=False)
                        rel = f"{prefix}{entry.name}"
                        if stat.S_ISDIR(st.st_mode):
                            stack.append((os.open(entry.name, DIR_FLAGS, dir_fd=fd), f"{rel}/"))
                        elif stat.S_ISREG(st.st_mode):
                            found[rel] = (st.st_size, st.st_mtime)
                            if len(found) > SKILL_FILES_MAX:
                                raise SkillProblem(f"more than {SKILL_FILES_MAX} files")
                        elif stat.S_ISLNK(st.st_mode):
                            raise SkillProblem(
                                f"{rel} is a symlink (skills must be self-contained)"
                            )
            finally:
                os.close(fd)
    finally:
        for fd, _ in stack:
            os.close(fd)
    return found


def _read(folder_fd: int, rel: str) -> bytes:
    """A file of a skill folder, at most the whole skill's bound (SKILL_TOTAL_MAX_BYTES,
    checked by the scan; the file may have grown since): an OSError if it is gone or no
    longer a regular file."""
    parts = rel.split("/")
    fd = folder_fd
    opened: list[int] = []
    try:
        for part in parts[:-1]:
            fd = os.open(part, DIR_FLAGS, dir_fd=fd)
            opened.append(fd)
        data = read_regular(fd, parts[-1], SKILL_TOTAL_MAX_BYTES)
        if data is None:
            raise OSError(errno.ENOENT, "no longer a readable regular file")
        return data
    finally:
        for opened_fd in opened:
            os.close(opened_fd)
